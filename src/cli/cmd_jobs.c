/*
 * cmd_jobs.c - `sluice jobs [--team T] [--state S]`: list jobs, following
 * the server's pages ("next") until the end.
 *
 * Pages must move forward (each "next" greater than the last), so a
 * misbehaving server cannot keep us looping.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { O_TEAM = 1, O_STATE };

/* clang-format off */
static const struct sl_cli_opt jobs_opts[] = {
    /* long name, short, takes a value, id */
    {"team", 't', true, O_TEAM},
    {"state", 's', true, O_STATE},
    {NULL, '\0', false, 0},
};
/* clang-format on */

#define JOBS_PAGE 1000 /* jobs asked for per request */

/* The "next" of a page: an id (number or digit string) or null. */
static int page_next(const json_t *page, int64_t *next, bool *more)
{
    const json_t *v = json_object_get(page, "next");

    *more = false;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *next = (int64_t)json_integer_value(v);
        *more = true;
        return 0;
    }
    if (json_is_string(v) &&
        sl_parse_int64(json_string_value(v), 1, INT64_MAX, next) == 0) {
        *more = true;
        return 0;
    }
    return -EPROTO;
}

/* Fetch every page into 'all'. Returns an exit code. */
static int fetch_all(struct sl_cli_ctx *ctx, const char *states,
                     const char *team, json_t *all)
{
    char *team_esc = NULL;
    int64_t after = 0;
    bool more = true;
    int code = SL_CLI_OK;

    if (team && !(team_esc = sl_client_escape(team))) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    while (more) {
        char path[SL_CLI_PATH_MAX];
        json_t *page = NULL, *jobs;
        int64_t next = 0;
        size_t n;

        n = (size_t)snprintf(
            path, sizeof(path), "/v1/jobs?state=%s&limit=%d%s%s", states,
            JOBS_PAGE, team_esc ? "&team=" : "", team_esc ? team_esc : "");
        if (after && n < sizeof(path))
            n += (size_t)snprintf(path + n, sizeof(path) - n, "&after=%lld",
                                  (long long)after);
        if (n >= sizeof(path)) {
            sl_cli_errorf("--team: too long");
            code = SL_CLI_USAGE;
            break;
        }
        if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, NULL,
                                     &page)) != SL_CLI_OK)
            break;
        if (!json_is_array(jobs = json_object_get(page, "jobs")) ||
            page_next(page, &next, &more) < 0 || (more && next <= after)) {
            sl_cli_errorf(
                "the server's job list is malformed (\"jobs\" must be a "
                "list and \"next\" an id past the last page)");
            json_decref(page);
            code = SL_CLI_FAILED;
            break;
        }
        if (json_array_extend(all, jobs) < 0) {
            sl_cli_errorf("out of memory");
            json_decref(page);
            code = SL_CLI_FAILED;
            break;
        }
        after = next;
        json_decref(page);
    }
    free(team_esc);
    return code;
}

int sl_cli_cmd_jobs(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    struct sl_cli_table *t = NULL;
    const char *v, *team = NULL;
    char states[128] = "Pending,Running";
    json_t *all = NULL, *job;
    int64_t now = sl_now_ms();
    size_t i;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, jobs_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == SL_CLI_ARG_POS) {
            sl_cli_errorf("jobs: unexpected argument '%.64s' (see 'sluice help "
                          "jobs')",
                          v);
            return SL_CLI_USAGE;
        }
        if (id == O_TEAM) {
            if (!*v || strlen(v) > 256) {
                sl_cli_errorf("--team: must be a team name, got '%.64s'", v);
                return SL_CLI_USAGE;
            }
            team = v;
        } else if (id == O_STATE &&
                   sl_cli_states_parse(v, states, sizeof(states), &err) < 0) {
            return sl_cli_usage_error(&err);
        }
    }
    if (!(all = json_array())) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    if ((code = fetch_all(ctx, states, team, all)) != SL_CLI_OK)
        goto out;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(all) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        goto out;
    }
    if (!(t = sl_cli_jobs_table(ctx->output))) {
        sl_cli_errorf("out of memory");
        code = SL_CLI_FAILED;
        goto out;
    }
    json_array_foreach (all, i, job) {
        if (sl_cli_jobs_table_add(t, ctx->output, job, now) < 0) {
            sl_cli_errorf("out of memory");
            code = SL_CLI_FAILED;
            goto out;
        }
    }
    sl_cli_table_print(t, stdout, ctx->output, 0);
out:
    sl_cli_table_destroy(t);
    json_decref(all);
    return code;
}
