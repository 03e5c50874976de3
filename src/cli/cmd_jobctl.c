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
