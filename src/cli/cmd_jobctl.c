/*
 * cmd_jobctl.c - `sluice hold|release JOB [JOB...]` and `sluice requeue
 * JOB [JOB...] [--hold]`: POST /v1/jobs/JOB/hold, /release or
 * /requeue[?hold=true] for each job (the command's name is the route's
 * last segment) and say what became of it. Every id is checked
 * before anything is sent; a refusal (e.g. 409, a running job cannot be
 * held) is reported and the next job still tried. The exit code is the
 * worst seen; a transport failure stops the run. -o json prints the array
 * of job objects, -o csv rows of id, state, held.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum { O_HOLD = 1 };

/* clang-format off */
static const struct sl_cli_opt requeue_opts[] = {
    /* long name, short, takes a value, id */
    {"hold", '\0', false, O_HOLD},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* JOB arguments into pos[] (at most 'max'), and --hold for requeue. */
static int parse(struct sl_cli_ctx *ctx, int argc, char **argv, const char **pos, int max,
                 int *npos, bool *hold)
{
    struct sl_cli_parser p;
    struct sl_error err = {{0}, {0}};
    bool requeue = strcmp(argv[0], "requeue") == 0;
    const char *v;
    int id, code;

    *npos = 0;
    *hold = false;
    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, requeue ? requeue_opts : NULL, ctx, &v, &err)) !=
           SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == O_HOLD) {
            *hold = true;
        } else if (*npos < max) {
            pos[(*npos)++] = v;
        }
    }
    return SL_CLI_OK;
}

int sl_cli_cmd_jobctl(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const char *const cols[] = {"id", "state", "held"};
    const char *what = argv[0];
    struct sl_error err = {{0}, {0}};
    struct sl_cli_table *t = NULL;
    const char **pos = NULL;
    int64_t *ids = NULL;
    json_t *all = NULL;
    int n, code, worst = SL_CLI_OK;
    bool hold;

    if (!(pos = calloc((size_t)argc + 1, sizeof(*pos))) ||
        !(ids = calloc((size_t)argc + 1, sizeof(*ids))) || !(all = json_array()) ||
        !(t = sl_cli_table_create(SL_ARRAY_LEN(cols), cols))) {
        sl_cli_errorf("out of memory");
        worst = SL_CLI_FAILED;
        goto out;
    }
    if ((worst = parse(ctx, argc, argv, pos, argc, &n, &hold)) != SL_CLI_OK)
        goto out;
    if (n == 0) {
        sl_cli_errorf("%s: JOB is required (sluice %s JOB [JOB...]%s)", what, what,
                      strcmp(what, "requeue") == 0 ? " [--hold]" : "");
        worst = SL_CLI_USAGE;
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (sl_cli_job_id(pos[i], &ids[i], &err) < 0) {
            worst = sl_cli_usage_error(&err);
            goto out;
        }
    for (int i = 0; i < n; i++) {
        char path[80], desc[40], id[24];
        json_t *job = NULL;
        bool held;

        snprintf(path, sizeof(path), "/v1/jobs/%lld/%s%s", (long long)ids[i], what,
                 hold ? "?hold=true" : "");
        snprintf(desc, sizeof(desc), "job %lld", (long long)ids[i]);
        snprintf(id, sizeof(id), "%lld", (long long)ids[i]);
        code = sl_cli_call_json(ctx, "POST", path, NULL, NULL, 0, desc, &job);
        if (code > worst)
            worst = code;
        if (code == SL_CLI_FAILED)
            break; /* the server is gone or failing: do not hammer it */
        if (code != SL_CLI_OK)
            continue;
        held = json_is_true(json_object_get(job, "held"));
        if (ctx->output == SL_CLI_OUT_JSON) {
            json_array_append(all, job);
        } else if (ctx->output == SL_CLI_OUT_CSV) {
            const char *st = sl_cli_jstr(job, "state");
            const char *row[] = {id, st ? st : "", held ? "true" : "false"};
            sl_cli_table_add(t, row);
        } else if (strcmp(what, "requeue") == 0) {
            /* it stops with its checkpoint signal, then is Pending again */
            printf("requeueing %s%s\n", id, hold ? " (then held)" : "");
        } else {
            printf("%s %s\n", held ? "held" : "released", id);
        }
        json_decref(job);
    }
    if (ctx->output == SL_CLI_OUT_JSON && json_array_size(all))
        sl_cli_print_json(all);
    else if (ctx->output == SL_CLI_OUT_CSV && sl_cli_table_rows(t))
        sl_cli_table_print(t, stdout, SL_CLI_OUT_CSV, 0);
out:
    sl_cli_table_destroy(t);
    json_decref(all);
    free(ids);
    free(pos);
    return worst;
}

enum { O_MAX_RUNTIME = 1 };

/* clang-format off */
static const struct sl_cli_opt update_opts[] = {
    /* long name, short, takes a value, id */
    {"max-runtime", '\0', true, O_MAX_RUNTIME},
    {NULL, '\0', false, 0},
};
/* clang-format on */

int sl_cli_cmd_update(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *job = NULL, *max_runtime = NULL, *st;
    char path[80], what[40], b1[64], b2[200], *body = NULL;
    json_t *req = NULL, *ans = NULL, *spec;
    int64_t id, ms;
    int opt, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((opt = sl_cli_next(&p, update_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, opt, &err)))
            return code;
        if (opt == SL_CLI_ARG_POS) {
            if (job) {
                sl_cli_errorf("update: one JOB only, got '%.64s' too (see 'sluice help "
                              "update')",
                              v);
                return SL_CLI_USAGE;
            }
            job = v;
        } else if (opt == O_MAX_RUNTIME) {
            if (sl_parse_duration_ms(v, &ms) < 0 || ms <= 0) {
                sl_cli_errorf("--max-runtime: a positive duration such as 2h, got '%.64s'",
                              v);
                return SL_CLI_USAGE;
            }
            max_runtime = v;
        }
    }
    if (!job) {
        sl_cli_errorf("update: JOB is required (sluice update JOB --max-runtime D)");
        return SL_CLI_USAGE;
    }
    if (sl_cli_job_id(job, &id, &err) < 0)
        return sl_cli_usage_error(&err);
    if (!max_runtime) {
        sl_cli_errorf("update: nothing to change (--max-runtime D)");
        return SL_CLI_USAGE;
    }
    if (!(req = json_pack("{s:s}", "maxRuntime", max_runtime)) ||
        !(body = json_dumps(req, JSON_COMPACT))) {
        json_decref(req);
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    code = sl_cli_call_json(ctx, "PATCH", path, "application/json", body, strlen(body), what,
                            &ans);
    if (code == SL_CLI_OK) {
        if (ctx->output == SL_CLI_OUT_JSON) {
            sl_cli_print_json(ans);
        } else {
            spec = json_object_get(json_object_get(ans, "spec"), "spec");
            st = sl_cli_jstr(ans, "state");
            printf("updated %lld (%s): maxRuntime %s\n", (long long)id,
                   sl_cli_sanitize(st ? st : "?", b1, sizeof(b1)),
                   sl_cli_sanitize(sl_cli_jstr(spec, "maxRuntime") ? sl_cli_jstr(spec,
                                                                               "maxRuntime")
                                                                   : max_runtime,
                                   b2, sizeof(b2)));
        }
    }
    json_decref(ans);
    json_decref(req);
    free(body);
    return code;
}
