/*
 * cmd_queues.c - `sluice queues [--team T]`: each queue's quota and use,
 * from GET /v1/queues.
 *
 * The table is about GPUs (used/nominal, borrowed, lent) with the queue's
 * pending and running jobs and its fair share; -o csv carries every
 * resource of every figure in full, -o json the server's queue objects.
 * --team filters here, on the client, in every format.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { O_TEAM = 1 };

/* clang-format off */
static const struct sl_cli_opt queues_opts[] = {
    /* long name, short, takes a value, id */
    {"team", 't', true, O_TEAM},
    {NULL, '\0', false, 0},
};
/* clang-format on */

static const char *const table_cols[] = {
    "QUEUE",   "TEAM",    "COHORT", "GPUS",  "BORROWED",
    "LENT",    "PENDING", "RUNNING", "SHARE",
};

/* The figures of a queue object, in CSV column order. */
static const char *const figures[] = {"nominal", "used", "borrowed", "lent",
                                      "opportunistic"};
#define FIG_COLS 4 /* per figure: gpus, cpus, memory, gpus_by_model */
#define CSV_COLS (3 + SL_ARRAY_LEN(figures) * FIG_COLS + 3)
#define CELL     64 /* bytes of one number cell */
#define BY_MODEL 512 /* bytes of one gpus_by_model cell */

static const char *const csv_head[CSV_COLS] = {
    "name", "team", "cohort",
    "nominal_gpus", "nominal_cpus", "nominal_memory", "nominal_gpus_by_model",
    "used_gpus", "used_cpus", "used_memory", "used_gpus_by_model",
    "borrowed_gpus", "borrowed_cpus", "borrowed_memory",
    "borrowed_gpus_by_model",
    "lent_gpus", "lent_cpus", "lent_memory", "lent_gpus_by_model",
    "opportunistic_gpus", "opportunistic_cpus", "opportunistic_memory",
    "opportunistic_gpus_by_model",
    "pending", "running", "share",
};

static bool team_ok(const json_t *q, const char *team)
{
    const char *t = sl_cli_jstr(q, "team");

    return !team || (t && strcmp(t, team) == 0);
}

/* A GPU amount member as a decimal ("0.5"); NULL when absent. */
static const char *milli_cell(const json_t *obj, const char *key, char *buf,
                              size_t size)
{
    int64_t v;

    return sl_cli_jmilli(obj, key, &v) ? sl_cli_fmt_milli(v, buf, size) : NULL;
}

/* "A100=8 H100=0.5" from gpusByModel; NULL when there is none. */
static const char *by_model_cell(const json_t *res, char *buf, size_t size)
{
    const json_t *by = json_object_get(res, "gpusByModel");
    const char *model;
    json_t *v;
    size_t o = 0;

    if (!json_is_object(by) || json_object_size(by) == 0)
        return NULL;
    buf[0] = '\0';
    json_object_foreach ((json_t *)by, model, v) {
        char num[32];
        int64_t m;
        int n;
        (void)v;
        if (!sl_cli_jmilli(by, model, &m) || o + 1 >= size)
            continue;
        n = snprintf(buf + o, size - o, "%s%s=%s", o ? " " : "", model,
                     sl_cli_fmt_milli(m, num, sizeof(num)));
        if (n < 0)
            break;
        o = (size_t)n >= size - o ? size - 1 : o + (size_t)n;
    }
    return buf;
}

/* An integer member as text; NULL when absent. */
static const char *int_cell(const json_t *obj, const char *key, char *buf,
                            size_t size)
{
    int64_t v;

    if (!sl_cli_jint(obj, key, &v))
        return NULL;
    snprintf(buf, size, "%lld", (long long)v);
    return buf;
}

/* A byte count member as an integer ("1073741824"); NULL when absent. */
static const char *bytes_cell(const json_t *obj, const char *key, char *buf,
                              size_t size)
{
    int64_t v;

    if (!sl_cli_jbytes(obj, key, &v))
        return NULL;
    snprintf(buf, size, "%lld", (long long)v);
    return buf;
}

static int add_csv(struct sl_cli_table *t, const json_t *q)
{
    char nums[SL_ARRAY_LEN(figures) * 3 + 3][CELL];
    char models[SL_ARRAY_LEN(figures)][BY_MODEL];
    const json_t *share = json_object_get(q, "share");
    const char *row[CSV_COLS];
    size_t c = 0, k = 0;

    row[c++] = sl_cli_jstr(q, "name");
    row[c++] = sl_cli_jstr(q, "team");
    row[c++] = sl_cli_jstr(q, "cohort");
    for (size_t f = 0; f < SL_ARRAY_LEN(figures); f++) {
        const json_t *res = json_object_get(q, figures[f]);
        row[c++] = milli_cell(res, "gpus", nums[k++], CELL);
        row[c++] = milli_cell(res, "cpus", nums[k++], CELL);
        row[c++] = bytes_cell(res, "memory", nums[k++], CELL);
        row[c++] = by_model_cell(res, models[f], BY_MODEL);
    }
    row[c++] = int_cell(q, "pending", nums[k++], CELL);
    row[c++] = int_cell(q, "running", nums[k++], CELL);
    row[c] = NULL;
    if (json_is_number(share)) {
        snprintf(nums[k], CELL, "%.4f", json_number_value(share));
        row[c] = nums[k];
    }
    return sl_cli_table_add(t, row);
}

static int add_table(struct sl_cli_table *t, const json_t *q)
{
    char gpus[72], borrowed[CELL], lent[CELL], pending[24], running[24];
    char share[CELL] = "-";
    const json_t *sh = json_object_get(q, "share");
    int64_t v;
    const char *row[] = {
        sl_cli_jstr(q, "name"),
        sl_cli_jstr(q, "team"),
        sl_cli_jstr(q, "cohort"),
        sl_cli_queue_gpus(q, gpus, sizeof(gpus)),
        milli_cell(json_object_get(q, "borrowed"), "gpus", borrowed, CELL),
        milli_cell(json_object_get(q, "lent"), "gpus", lent, CELL),
        pending,
        running,
        share,
    };

    snprintf(pending, sizeof(pending), "%lld",
             sl_cli_jint(q, "pending", &v) ? (long long)v : 0LL);
    snprintf(running, sizeof(running), "%lld",
             sl_cli_jint(q, "running", &v) ? (long long)v : 0LL);
    if (json_is_number(sh))
        snprintf(share, sizeof(share), "%.2f", json_number_value(sh));
    return sl_cli_table_add(t, row);
}

int sl_cli_cmd_queues(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    struct sl_cli_table *t = NULL;
    const char *v, *team = NULL;
    json_t *ans = NULL, *queues, *q, *shown = NULL;
    size_t i;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, queues_opts, ctx, &v, &err)) !=
           SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == SL_CLI_ARG_POS) {
            sl_cli_errorf("queues: unexpected argument '%.64s' (see 'sluice "
                          "help queues')",
                          v);
            return SL_CLI_USAGE;
        }
        if (id == O_TEAM) {
            if (!*v || strlen(v) > 256) {
                sl_cli_errorf("--team: must be a team name, got '%.64s'", v);
                return SL_CLI_USAGE;
            }
            team = v;
        }
    }
    if ((code = sl_cli_call_json(ctx, "GET", "/v1/queues", NULL, NULL, 0, NULL,
                                 &ans)) != SL_CLI_OK)
        return code;
    if (!json_is_array(queues = json_object_get(ans, "queues"))) {
        sl_cli_errorf("the server's answer has no \"queues\" list");
        code = SL_CLI_FAILED;
        goto out;
    }
    if (!(shown = json_array()))
        goto nomem;
    json_array_foreach (queues, i, q)
        if (json_is_object(q) && team_ok(q, team) &&
            json_array_append(shown, q) < 0)
            goto nomem;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(shown) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        goto out;
    }
    if (ctx->output == SL_CLI_OUT_CSV)
        t = sl_cli_table_create(CSV_COLS, csv_head);
    else
        t = sl_cli_table_create(SL_ARRAY_LEN(table_cols), table_cols);
    if (!t)
        goto nomem;
    json_array_foreach (shown, i, q)
        if ((ctx->output == SL_CLI_OUT_CSV ? add_csv(t, q) : add_table(t, q)) <
            0)
            goto nomem;
    sl_cli_table_print(t, stdout, ctx->output, 0);
    goto out;
nomem:
    sl_cli_errorf("out of memory");
    code = SL_CLI_FAILED;
out:
    sl_cli_table_destroy(t);
    json_decref(shown);
    json_decref(ans);
    return code;
}
