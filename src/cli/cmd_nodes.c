/*
 * cmd_nodes.c - `sluice nodes`: nodes with their state (the admin's
 * cordon or drain, with its reason, who and since when, over the
 * executor's), CPUs, memory and GPUs as allocated/total, and under each
 * node one line per GPU.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Columns: node lines (table), GPU lines (table, indented), CSV rows. */
static const char *const node_cols[] = {"NODE", "STATE", "CPUS", "MEMORY", "GPUS",
                                        "SOURCE", "REASON"};
static const char *const gpu_cols[] = {"GPU", "MODEL", "MEMORY", "MILLI",
                                       "JOBS"};
static const char *const csv_cols[] = {
    "node",
    "state",
    "domain",
    "gpu_source",
    "cpu_milli",
    "cpu_milli_allocated",
    "mem_bytes",
    "mem_bytes_allocated",
    "gpus",
    "gpu_milli_allocated",
    "admin_state",
    "admin_reason",
    "admin_by",
    "admin_at",
};

static int64_t jint0(const json_t *o, const char *key)
{
    int64_t v = 0;

    sl_cli_jint(o, key, &v);
    return v;
}

/* Milli-GPUs allocated over all the node's GPUs. */
static int64_t gpu_milli_allocated(const json_t *gpus)
{
    const json_t *g;
    int64_t sum = 0;
    size_t i;

    json_array_foreach (gpus, i, g)
        sum += jint0(g, "milli_allocated");
    return sum;
}

/* STATE: the admin's state when it is not active (and the executor's
 * after it when that is not up), else the executor's. */
static const char *state_cell(const json_t *node, char *buf, size_t size)
{
    const json_t *adm = json_object_get(node, "admin");
    const char *a = sl_cli_jstr(adm, "state"), *x = sl_cli_jstr(node, "state");

    if (!a || strcmp(a, "active") == 0)
        return x;
    if (x && strcmp(x, "up") != 0)
        snprintf(buf, size, "%s,%s", a, x);
    else
        snprintf(buf, size, "%s", a);
    return buf;
}

/* REASON: the admin's reason, who and since when, then the executor's. */
static const char *reason_cell(const json_t *node, char *buf, size_t size)
{
    const json_t *adm = json_object_get(node, "admin");
    const char *a = sl_cli_jstr(adm, "state"), *x = sl_cli_jstr(node, "reason");
    const char *why = sl_cli_jstr(adm, "reason");

    if (!a || strcmp(a, "active") == 0)
        return x;
    snprintf(buf, size, "%s%s(by %s since %s)%s%s", why ? why : "", why && *why ? " " : "",
             sl_cli_jstr(adm, "by") ? sl_cli_jstr(adm, "by") : "?",
             sl_cli_jstr(adm, "at") ? sl_cli_jstr(adm, "at") : "?", x && *x ? "; " : "",
             x ? x : "");
    return buf;
}

/* Job ids on one GPU, "42,43", or "-". */
static void job_list(const json_t *jobs, char *buf, size_t size)
{
    const json_t *j;
    size_t i, o = 0;

    snprintf(buf, size, "-");
    json_array_foreach (jobs, i, j) {
        int n;
        if (!json_is_integer(j))
            continue;
        n = snprintf(buf + o, size - o, "%s%lld", o ? "," : "",
                     (long long)json_integer_value(j));
        if (n < 0 || (size_t)n >= size - o)
            break;
        o += (size_t)n;
    }
}

static int add_node(struct sl_cli_table *nt, struct sl_cli_table *gt,
                    enum sl_cli_output fmt, const json_t *node)
{
    const json_t *gpus = json_object_get(node, "gpus"), *g;
    char a[32], b[32], cpus[72], mem[72], gpu[72], st[64], why[640];
    const json_t *adm = json_object_get(node, "admin");
    size_t i, ngpus = json_array_size(gpus);
    int64_t galloc = gpu_milli_allocated(gpus);

    if (fmt == SL_CLI_OUT_CSV) {
        char c1[24], c2[24], m1[24], m2[24], n1[24], g1[24];
        const char *row[] = {
            sl_cli_jstr(node, "name"),
            sl_cli_jstr(node, "state"),
            sl_cli_jstr(node, "domain"),
            sl_cli_jstr(node, "gpu_source"),
            c1,
            c2,
            m1,
            m2,
            n1,
            g1,
            sl_cli_jstr(adm, "state"),
            sl_cli_jstr(adm, "reason"),
            sl_cli_jstr(adm, "by"),
            sl_cli_jstr(adm, "at"),
        };
        snprintf(c1, sizeof(c1), "%lld", (long long)jint0(node, "cpu_milli"));
        snprintf(c2, sizeof(c2), "%lld",
                 (long long)jint0(node, "cpu_milli_allocated"));
        snprintf(m1, sizeof(m1), "%lld", (long long)jint0(node, "mem_bytes"));
        snprintf(m2, sizeof(m2), "%lld",
                 (long long)jint0(node, "mem_bytes_allocated"));
        snprintf(n1, sizeof(n1), "%zu", ngpus);
        snprintf(g1, sizeof(g1), "%lld", (long long)galloc);
        return sl_cli_table_add(nt, row);
    }
    snprintf(cpus, sizeof(cpus), "%s/%s",
             sl_cli_fmt_milli(jint0(node, "cpu_milli_allocated"), a, sizeof(a)),
             sl_cli_fmt_milli(jint0(node, "cpu_milli"), b, sizeof(b)));
    snprintf(mem, sizeof(mem), "%s/%s",
             sl_cli_fmt_bytes(jint0(node, "mem_bytes_allocated"), a, sizeof(a)),
             sl_cli_fmt_bytes(jint0(node, "mem_bytes"), b, sizeof(b)));
    snprintf(gpu, sizeof(gpu), "%s/%zu", sl_cli_fmt_milli(galloc, a, sizeof(a)),
             ngpus);
    {
        const char *row[] = {sl_cli_jstr(node, "name"), state_cell(node, st, sizeof(st)), cpus,
                             mem, gpu, sl_cli_jstr(node, "gpu_source"),
                             reason_cell(node, why, sizeof(why))};
        if (sl_cli_table_add(nt, row) < 0)
            return -ENOMEM;
    }
    json_array_foreach (gpus, i, g) {
        char idx[24], gmem[32], milli[48], jobs[256];
        const char *row[] = {idx, sl_cli_jstr(g, "model"), gmem, milli, jobs};
        snprintf(idx, sizeof(idx), "%lld", (long long)jint0(g, "index"));
        sl_cli_fmt_bytes(jint0(g, "mem_bytes"), gmem, sizeof(gmem));
        snprintf(milli, sizeof(milli), "%lld/1000",
                 (long long)jint0(g, "milli_allocated"));
        job_list(json_object_get(g, "jobs"), jobs, sizeof(jobs));
        if (sl_cli_table_add(gt, row) < 0)
            return -ENOMEM;
    }
    return 0;
}

int sl_cli_cmd_nodes(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_cli_table *nt = NULL, *gt = NULL;
    const char *pos[1];
    json_t *ans = NULL, *nodes, *node;
    size_t i, gpu_row = 0;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 0, &n)) != SL_CLI_OK)
        return code;
    if ((code = sl_cli_call_json(ctx, "GET", "/v1/nodes", NULL, NULL, 0, NULL,
                                 &ans)) != SL_CLI_OK)
        return code;
    if (!json_is_array(nodes = json_object_get(ans, "nodes"))) {
        sl_cli_errorf("the server's answer has no \"nodes\" list");
        code = SL_CLI_FAILED;
        goto out;
    }
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(nodes) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        goto out;
    }
    if (ctx->output == SL_CLI_OUT_CSV)
        nt = sl_cli_table_create(SL_ARRAY_LEN(csv_cols), csv_cols);
    else
        nt = sl_cli_table_create(SL_ARRAY_LEN(node_cols), node_cols);
    gt = sl_cli_table_create(SL_ARRAY_LEN(gpu_cols), gpu_cols);
    if (!nt || !gt)
        goto nomem;
    json_array_foreach (nodes, i, node)
        if (add_node(nt, gt, ctx->output, node) < 0)
            goto nomem;
    if (ctx->output == SL_CLI_OUT_CSV) {
        sl_cli_table_print(nt, stdout, SL_CLI_OUT_CSV, 0);
        goto out;
    }
    /* Node line, then its GPUs indented; GPU columns align across nodes. */
    sl_cli_table_print_row(nt, stdout, SIZE_MAX, 0);
    json_array_foreach (nodes, i, node) {
        size_t ng = json_array_size(json_object_get(node, "gpus"));
        sl_cli_table_print_row(nt, stdout, i, 0);
        if (ng)
            sl_cli_table_print_row(gt, stdout, SIZE_MAX, 2);
        for (size_t k = 0; k < ng; k++)
            sl_cli_table_print_row(gt, stdout, gpu_row++, 2);
    }
    goto out;
nomem:
    sl_cli_errorf("out of memory");
    code = SL_CLI_FAILED;
out:
    sl_cli_table_destroy(nt);
    sl_cli_table_destroy(gt);
    json_decref(ans);
    return code;
}
