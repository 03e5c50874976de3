/*
 * cmd_jobs.c - `sluice jobs [--team T] [--state S] [--user U] [--queue Q]
 * [--priority P] [--since T] [--limit N]`: list jobs, following the
 * server's pages ("next") until the end; --user, --queue, --priority,
 * --since and --limit filter here, on the client, in every format. With
 * -o wide the table has the user, priority class, submission time and
 * nodes too. A job idle-but-allocated is marked in STATE ("Running
 * (idle)", "(idle session)" when interactive) and says since when in
 * REASON.
 *
 * Pages must move forward (each "next" greater than the last), so a
 * misbehaving server cannot keep us looping.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { O_TEAM = 1, O_STATE, O_USER, O_QUEUE, O_PRIORITY, O_SINCE, O_LIMIT, O_EXPAND };

/* clang-format off */
static const struct sl_cli_opt jobs_opts[] = {
    /* long name, short, takes a value, id */
    {"team", 't', true, O_TEAM},
    {"state", 's', true, O_STATE},
    {"user", 'u', true, O_USER},
    {"queue", 'q', true, O_QUEUE},
    {"priority", 'p', true, O_PRIORITY},
    {"since", '\0', true, O_SINCE},
    {"limit", 'n', true, O_LIMIT},
    {"expand", 'r', false, O_EXPAND},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* The client-side filters: a job is shown when it matches every one set. */
struct filter {
    const char *user, *queue, *priority; /* NULL = any */
    int64_t since_ms;                    /* submitted at or after; 0 = any */
    int64_t limit;                       /* the newest N; 0 = all */
};

/* -o wide: the table's columns. */
static const char *const wide_cols[] = {"ID",   "NAME", "TEAM",      "USER",  "QUEUE",
                                        "PRIORITY", "STATE", "GPUS", "SUBMITTED", "TIME",
                                        "NODES", "EXIT", "REASON"};

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

static bool str_is(const json_t *job, const char *key, const char *want)
{
    const char *v = sl_cli_jstr(job, key);

    return !want || (v && strcmp(v, want) == 0);
}

/* 'all' reduced to the jobs that pass 'f' (the newest f->limit of them). */
static int filter_jobs(json_t *all, const struct filter *f)
{
    json_t *kept = json_array(), *job;
    size_t i, n;

    if (!kept)
        return -ENOMEM;
    json_array_foreach (all, i, job) {
        const char *sub = sl_cli_jstr(job, "submitted_at");
        int64_t at = 0;
        if (!str_is(job, "user", f->user) || !str_is(job, "queue", f->queue) ||
            !str_is(job, "priority_class", f->priority))
            continue;
        if (f->since_ms && (!sub || sl_parse_when_ms(sub, &at) < 0 || at < f->since_ms))
            continue;
        if (json_array_append(kept, job) < 0) {
            json_decref(kept);
            return -ENOMEM;
        }
    }
    /* the pages come by id, oldest first: the newest are the last */
    n = json_array_size(kept);
    json_array_clear(all);
    for (i = f->limit && (size_t)f->limit < n ? n - (size_t)f->limit : 0; i < n; i++)
        if (json_array_append(all, json_array_get(kept, i)) < 0) {
            json_decref(kept);
            return -ENOMEM;
        }
    json_decref(kept);
    return 0;
}

/* Whether 'name' is an item of the comma list 'list'. */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* The nodes of a job's placement, "n1,n2" (each once), or "-". */
static void job_nodes(const json_t *job, char *buf, size_t size)
{
    const json_t *p;
    size_t i, o = 0;

    buf[0] = '\0';
    json_array_foreach (json_object_get(job, "placement"), i, p) {
        const char *n = sl_cli_jstr(p, "node");
        int w;
        if (!n || !*n || listed(buf, n))
            continue;
        w = snprintf(buf + o, size - o, "%s%s", o ? "," : "", n);
        if (w < 0 || (size_t)w >= size - o) {
            buf[o] = '\0';
            break;
        }
        o += (size_t)w;
    }
    if (!o)
        snprintf(buf, size, "-");
}

static int wide_add(struct sl_cli_table *t, const json_t *job, int64_t now_ms)
{
    char id[64] = "-", exit_code[24] = "", gpus[32], time_s[32], nodes[256], state[48],
        idle[256];
    const char *reason = sl_cli_jstr(job, "reason");
    int64_t v;

    if (sl_cli_jstr(job, "display_id"))
        snprintf(id, sizeof(id), "%s", sl_cli_jstr(job, "display_id"));
    else if (sl_cli_jint(job, "id", &v))
        snprintf(id, sizeof(id), "%lld", (long long)v);
    if (sl_cli_jint(job, "exit_code", &v))
        snprintf(exit_code, sizeof(exit_code), "%lld", (long long)v);
    if (!reason && sl_cli_state_finished(sl_cli_jstr(job, "state")))
        reason = sl_cli_jstr(job, "message");
    if (!reason)
        reason = sl_cli_job_idle_text(job, now_ms, idle, sizeof(idle));
    sl_cli_job_gpus(job, gpus, sizeof(gpus));
    sl_cli_job_time(job, now_ms, time_s, sizeof(time_s));
    job_nodes(job, nodes, sizeof(nodes));
    {
        const char *cells[] = {id,
                               sl_cli_jstr(job, "name"),
                               sl_cli_jstr(job, "team"),
                               sl_cli_jstr(job, "user"),
                               sl_cli_jstr(job, "queue"),
                               sl_cli_jstr(job, "priority_class"),
                               sl_cli_job_state_cell(job, state, sizeof(state)),
                               gpus,
                               sl_cli_jstr(job, "submitted_at"),
                               time_s,
                               nodes,
                               exit_code,
                               reason};
        return sl_cli_table_add(t, cells);
    }
}

/* A name option's value: non-empty, at most 256 bytes. */
static int name_arg(const char *flag, const char *v, const char **out)
{
    if (!*v || strlen(v) > 256) {
        sl_cli_errorf("%s: must be a name, got '%.64s'", flag, v);
        return SL_CLI_USAGE;
    }
    *out = v;
    return SL_CLI_OK;
}

int sl_cli_cmd_jobs(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct filter f = {0};
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    struct sl_cli_table *t = NULL;
    const char *v, *team = NULL;
    char states[128] = "Pending,Running";
    json_t *all = NULL, *job;
    int64_t now = sl_now_ms();
    size_t i;
    int id, code;
    bool expand = false;

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
        if (id == O_EXPAND) {
            expand = true;
        } else if (id == O_TEAM) {
            if (!*v || strlen(v) > 256) {
                sl_cli_errorf("--team: must be a team name, got '%.64s'", v);
                return SL_CLI_USAGE;
            }
            team = v;
        } else if (id == O_STATE &&
                   sl_cli_states_parse(v, states, sizeof(states), &err) < 0) {
            return sl_cli_usage_error(&err);
        } else if ((id == O_USER && (code = name_arg("--user", v, &f.user))) ||
                   (id == O_QUEUE && (code = name_arg("--queue", v, &f.queue))) ||
                   (id == O_PRIORITY && (code = name_arg("--priority", v, &f.priority)))) {
            return code;
        } else if (id == O_LIMIT &&
                   sl_cli_int_arg("--limit", v, 1, 1000000, &f.limit, &err) < 0) {
            return sl_cli_usage_error(&err);
        } else if (id == O_SINCE) {
            int64_t ago;
            if (sl_parse_when_ms(v, &f.since_ms) == 0 && f.since_ms > 0) {
                /* a time */
            } else if (sl_parse_duration_ms(v, &ago) == 0 && ago > 0 && ago < now) {
                f.since_ms = now - ago;
            } else {
                sl_cli_errorf("--since: must be a time (2026-12-01, RFC 3339) or a "
                              "duration ago (90m, 2h, 1d), got '%.64s'",
                              v);
                return SL_CLI_USAGE;
            }
        }
    }
    if (!(all = json_array())) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    if ((code = fetch_all(ctx, states, team, all)) != SL_CLI_OK)
        goto out;
    if (filter_jobs(all, &f) < 0) {
        sl_cli_errorf("out of memory");
        code = SL_CLI_FAILED;
        goto out;
    }
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(all) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        goto out;
    }
    /* the tables: an array is one line unless --expand */
    if (ctx->output == SL_CLI_OUT_TABLE && sl_cli_jobs_group(all, expand) < 0)
        goto nomem;
    if (ctx->wide && ctx->output == SL_CLI_OUT_TABLE) {
        if (!(t = sl_cli_table_create(SL_ARRAY_LEN(wide_cols), wide_cols)))
            goto nomem;
        json_array_foreach (all, i, job)
            if (wide_add(t, job, now) < 0)
                goto nomem;
        sl_cli_table_print(t, stdout, ctx->output, 0);
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
    goto out;
nomem:
    sl_cli_errorf("out of memory");
    code = SL_CLI_FAILED;
out:
    sl_cli_table_destroy(t);
    json_decref(all);
    return code;
}
