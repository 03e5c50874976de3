/*
 * cmd_jobctl.c - `sluice hold|release JOB [JOB...]` and `sluice requeue
 * JOB [JOB...] [--hold]`: POST /v1/jobs/JOB/hold, /release or
 * /requeue[?hold=true] for each job (the command's name is the route's
 * last segment) and say what became of it. Every id is checked
 * before anything is sent; a refusal (e.g. 409, a running job cannot be
 * held) is reported and the next job still tried. The exit code is the
 * worst seen; a transport failure stops the run. -o json prints the array
 * of job objects, -o csv rows of id, state, held.
 * And `sluice update JOB [--priority-class C] [--queue Q] [--gpus N]
 * [--max-runtime D]`: PATCH /v1/jobs/JOB with the fields given.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "../core/spec.h"

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
            const char *kind = sl_cli_jstr(json_object_get(job, "hold"), "kind");
            printf("%s %s%s\n", held ? "held" : "released", id,
                   held && kind && !strcmp(kind, "admin") ? " (an admin hold)" : "");
        }
        json_decref(job);
    }
    sl_cli_print_collected(ctx, all, t);
out:
    sl_cli_table_destroy(t);
    json_decref(all);
    free(ids);
    free(pos);
    return worst;
}

enum { O_MAX_RUNTIME = 1, O_PRIORITY_CLASS, O_QUEUE, O_GPUS };

/* clang-format off */
static const struct sl_cli_opt update_opts[] = {
    /* long name, short, takes a value, id */
    {"max-runtime", '\0', true, O_MAX_RUNTIME},
    {"priority-class", '\0', true, O_PRIORITY_CLASS},
    {"priority", '\0', true, O_PRIORITY_CLASS},    /* as sluice run names it */
    {"queue", '\0', true, O_QUEUE},
    {"gpus", '\0', true, O_GPUS},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* An update's option 'opt' with value 'v' into the request 'req'. */
static int update_opt(int opt, const char *v, json_t *req)
{
    int64_t n;
    const char *key = opt == O_MAX_RUNTIME ? "maxRuntime" : opt == O_QUEUE ? "queue"
                                                                            : "priorityClass";

    if (opt == O_GPUS) {
        if (sl_parse_int64(v, 0, SL_MAX_GPUS_PER_TASK, &n) < 0) {
            sl_cli_errorf("--gpus: whole GPUs per task, 0 to %d, got '%.64s'",
                          SL_MAX_GPUS_PER_TASK, v);
            return SL_CLI_USAGE;
        }
        return json_object_set_new(req, "resources", json_pack("{s:I}", "gpus", (json_int_t)n))
                   ? SL_CLI_FAILED
                   : SL_CLI_OK;
    }
    if (opt == O_MAX_RUNTIME && (sl_parse_duration_ms(v, &n) < 0 || n <= 0)) {
        sl_cli_errorf("--max-runtime: a positive duration such as 2h, got '%.64s'", v);
        return SL_CLI_USAGE;
    }
    if (opt != O_MAX_RUNTIME && !sl_name_valid(v)) {
        sl_cli_errorf("--%s: a name (1..63 of a-z, 0-9 and '-'), got '%.64s'",
                      opt == O_QUEUE ? "queue" : "priority-class", v);
        return SL_CLI_USAGE;
    }
    return json_object_set_new(req, key, json_string(v)) ? SL_CLI_FAILED : SL_CLI_OK;
}

/* "updated ID (STATE): FIELD VALUE, ..." for the fields asked, as the
 * answer has them now. */
static void update_print(int64_t id, const json_t *req, const json_t *ans)
{
    const json_t *spec = json_object_get(json_object_get(ans, "spec"), "spec");
    const char *st = sl_cli_jstr(ans, "state"), *mr = sl_cli_jstr(spec, "maxRuntime");
    char b1[64], b2[200], b3[200], gpus[32];
    int64_t n;

    if (sl_cli_jint(json_object_get(spec, "resources"), "gpus", &n))
        snprintf(gpus, sizeof(gpus), "%lld", (long long)n);
    else
        snprintf(gpus, sizeof(gpus), "?");
    printf("updated %lld (%s):", (long long)id, sl_cli_sanitize(st ? st : "?", b1, sizeof(b1)));
    {
        const char *parts[][2] = {
            {"priorityClass", json_object_get(req, "priorityClass")
                                  ? sl_cli_sanitize(sl_cli_jstr(ans, "priority_class"), b2,
                                                    sizeof(b2))
                                  : NULL},
            {"queue", json_object_get(req, "queue")
                          ? sl_cli_sanitize(sl_cli_jstr(ans, "queue"), b3, sizeof(b3))
                          : NULL},
            {"gpus", json_object_get(req, "resources") ? gpus : NULL},
            {"maxRuntime", json_object_get(req, "maxRuntime") ? (mr ? mr : "none") : NULL},
        };
        const char *sep = " ";
        for (size_t i = 0; i < SL_ARRAY_LEN(parts); i++)
            if (parts[i][1]) {
                printf("%s%s %s", sep, parts[i][0], parts[i][1]);
                sep = ", ";
            }
    }
    printf("\n");
}

int sl_cli_cmd_update(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *job = NULL;
    char path[80], what[40], *body = NULL;
    json_t *req = json_object(), *ans = NULL;
    int64_t id;
    int opt, code = SL_CLI_OK;

    if (!req) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((opt = sl_cli_next(&p, update_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, opt, &err)))
            goto out;
        if (opt != SL_CLI_ARG_POS) {
            if ((code = update_opt(opt, v, req)) != SL_CLI_OK)
                goto out;
        } else if (job) {
            sl_cli_errorf("update: one JOB only, got '%.64s' too (see 'sluice help update')",
                          v);
            code = SL_CLI_USAGE;
            goto out;
        } else {
            job = v;
        }
    }
    if (!job) {
        sl_cli_errorf("update: JOB is required (sluice update JOB [--priority-class C] "
                      "[--queue Q] [--gpus N] [--max-runtime D])");
        code = SL_CLI_USAGE;
        goto out;
    }
    if (sl_cli_job_id(job, &id, &err) < 0) {
        code = sl_cli_usage_error(&err);
        goto out;
    }
    if (!json_object_size(req)) {
        sl_cli_errorf("update: nothing to change (--priority-class C, --queue Q, --gpus N, "
                      "--max-runtime D)");
        code = SL_CLI_USAGE;
        goto out;
    }
    if (!(body = json_dumps(req, JSON_COMPACT))) {
        sl_cli_errorf("out of memory");
        code = SL_CLI_FAILED;
        goto out;
    }
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    code = sl_cli_call_json(ctx, "PATCH", path, "application/json", body, strlen(body), what,
                            &ans);
    if (code == SL_CLI_OK) {
        if (ctx->output == SL_CLI_OUT_JSON)
            sl_cli_print_json(ans);
        else
            update_print(id, req, ans);
    }
out:
    json_decref(ans);
    json_decref(req);
    free(body);
    return code;
}
