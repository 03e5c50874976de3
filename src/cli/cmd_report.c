/*
 * cmd_report.c - the meter's commands:
 *   sluice report [--by K] [--from D] [--to D] [--period P] [--team T]
 *                 [--chargeback]             usage per key (GET /v1/report)
 *   sluice report --utilisation [--from D] [--to D]
 *                                            allocated vs idle per node/model
 *   sluice budgets                           budgets, use and events
 *   sluice carbon import --site S FILE       hourly carbon intensity (CSV)
 *
 * -o json prints the server's rows (report: the array of row objects, as
 * SPEC.md section 5 asks), -o csv every figure at full precision (the
 * reports' CSV is meter.h's sl_report_csv and sl_util_report_csv, which
 * the daemon's format=csv answers use too), the table rounds for reading.
 */
#include "cli.h"

#include "../meter/meter.h"
#include "../util/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { O_BY = 1, O_FROM, O_TO, O_PERIOD, O_TEAM, O_CHARGEBACK, O_UTIL, O_SITE };

/* clang-format off */
static const struct sl_cli_opt report_opts[] = {
    /* long name, short, takes a value, id */
    {"by", 'b', true, O_BY},
    {"from", '\0', true, O_FROM},
    {"to", '\0', true, O_TO},
    {"period", '\0', true, O_PERIOD},
    {"team", 't', true, O_TEAM},
    {"chargeback", '\0', false, O_CHARGEBACK},
    {"utilisation", 'u', false, O_UTIL},
    {"utilization", '\0', false, O_UTIL},
    {NULL, '\0', false, 0},
};
static const struct sl_cli_opt carbon_opts[] = {
    {"site", 's', true, O_SITE},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* Append "&key=value" with the value percent-encoded. */
static void query_add(char *q, size_t size, const char *key, const char *val)
{
    size_t o = strlen(q);
    int n = snprintf(q + o, size - o, "%s%s=", o ? "&" : "?", key);

    if (n < 0 || (size_t)n >= size - o)
        return;
    o += (size_t)n;
    for (const unsigned char *c = (const unsigned char *)val; *c && o + 4 < size; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
            (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.' ||
            *c == ':')
            q[o++] = (char)*c;
        else
            o += (size_t)snprintf(q + o, size - o, "%%%02X", *c);
    }
    q[o] = '\0';
}

/* A number member with 'dec' decimals, or in full (sl_fmt_decimal, never an
 * exponent) when dec < 0; NULL when absent. */
static const char *num_cell(const json_t *o, const char *key, int dec, char *buf,
                            size_t size)
{
    const json_t *v = json_object_get(o, key);

    if (!json_is_number(v))
        return NULL;
    if (dec < 0)
        sl_csv_number(v, buf, size);
    else
        snprintf(buf, size, "%.*f", dec, json_number_value(v));
    return buf;
}

static const char *bool_cell(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_true(v) ? "yes" : json_is_false(v) ? "no" : NULL;
}

/* ---- usage ---- */

/* The report 'ans' as CSV on stdout (meter.h: the daemon's format=csv
 * answers are written by the same functions). */
static int print_csv(int (*csv)(const json_t *, struct sl_buf *), const json_t *ans)
{
    struct sl_buf b;
    int rc;

    sl_buf_init(&b);
    if ((rc = csv(ans, &b)) == 0 && b.len)
        fwrite(b.data, 1, b.len, stdout);
    sl_buf_fini(&b);
    if (rc == 0)
        return SL_CLI_OK;
    sl_cli_errorf(rc == -ENOMEM ? "out of memory" : "the server's answer has no \"rows\" list");
    return SL_CLI_FAILED;
}

/* The usage rows as a table for people: the period column with
 * 'period', the idle share and chargeback with 'chargeback', money in
 * currency 'cur'. Returns the table (NULL without memory); *rc is
 * -ENOMEM when a row was lost. */
static struct sl_cli_table *usage_text_table(const json_t *rows, const char *cur, bool period,
                                             bool chargeback, int *rc)
{
    struct sl_cli_table *t;
    char cost_h[32], share_h[40], charge_h[40];
    const char *head[12];
    const json_t *r;
    size_t i, nh = 0;

    snprintf(cost_h, sizeof(cost_h), "COST-%s", cur ? cur : "");
    snprintf(share_h, sizeof(share_h), "IDLE-SHARE-%s", cur ? cur : "");
    snprintf(charge_h, sizeof(charge_h), "CHARGEBACK-%s", cur ? cur : "");
    head[nh++] = "KEY";
    if (period)
        head[nh++] = "PERIOD";
    head[nh++] = "JOBS";
    head[nh++] = "GPU-HOURS";
    head[nh++] = "UNUSED-GPU-H";
    head[nh++] = "CU";
    head[nh++] = "ENERGY-KWH";
    head[nh++] = "MEASURED";
    head[nh++] = cost_h;
    if (chargeback) {
        head[nh++] = share_h;
        head[nh++] = charge_h;
    }
    head[nh++] = "CO2-KG";
    if (!(t = sl_cli_table_create(nh, head)))
        return NULL;
    json_array_foreach(rows, i, r)
    {
        char c[10][40];
        const char *row[12];
        size_t k = 0;
        int64_t jobs = 0;
        const char *p = sl_cli_jstr(r, "period");
        row[k++] = sl_cli_jstr(r, "key");
        if (period) {
            snprintf(c[0], sizeof(c[0]), "%.10s", p ? p : "");
            row[k++] = c[0];
        }
        sl_cli_jint(r, "jobs", &jobs);
        snprintf(c[1], sizeof(c[1]), "%lld", (long long)jobs);
        row[k++] = c[1];
        row[k++] = num_cell(r, "gpu_hours", 3, c[2], sizeof(c[2]));
        row[k++] = num_cell(r, "unused_gpu_hours", 3, c[9], sizeof(c[9]));
        row[k++] = num_cell(r, "cu", 3, c[3], sizeof(c[3]));
        row[k++] = num_cell(r, "energy_kwh", 3, c[4], sizeof(c[4]));
        row[k++] = json_is_true(json_object_get(r, "energy_measured")) ? "measured"
                                                                       : "estimated";
        row[k++] = num_cell(r, "cost", 2, c[5], sizeof(c[5]));
        if (chargeback) {
            row[k++] = num_cell(r, "idle_cost_share", 2, c[6], sizeof(c[6]));
            row[k++] = num_cell(r, "chargeback", 2, c[7], sizeof(c[7]));
        }
        row[k++] = num_cell(r, "co2_kg", 3, c[8], sizeof(c[8]));
        if (sl_cli_table_add(t, row) < 0)
            *rc = -ENOMEM;
    }
    return t;
}

static int usage_rows(struct sl_cli_ctx *ctx, const json_t *ans, bool period,
                      bool chargeback)
{
    const json_t *rows = json_object_get(ans, "rows");
    struct sl_cli_table *t;
    int rc = 0;

    if (!json_is_array(rows)) {
        sl_cli_errorf("the server's answer has no \"rows\" list");
        return SL_CLI_FAILED;
    }
    if (ctx->output == SL_CLI_OUT_JSON)
        return sl_cli_print_json(rows) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    if (ctx->output == SL_CLI_OUT_CSV)
        return print_csv(sl_report_csv, ans);
    t = usage_text_table(rows, sl_cli_jstr(ans, "currency"), period, chargeback, &rc);
    if (!t)
        goto nomem;
    if (rc == 0)
        sl_cli_table_print(t, stdout, ctx->output, 0);
    sl_cli_table_destroy(t);
    if (rc == 0)
        return SL_CLI_OK;
nomem:
    sl_cli_errorf("out of memory");
    return SL_CLI_FAILED;
}

/* ---- utilisation ---- */

/* One row of the utilisation table: 'name' of 'model', figures 'o'. */
static int util_add(struct sl_cli_table *t, bool node, const char *name, const char *model,
                    const json_t *o)
{
    char c[8][48];
    const char *row[10];
    size_t k = 0;
    int64_t gpus;

    row[k++] = name;
    row[k++] = model;
    snprintf(c[0], sizeof(c[0]), "%lld",
             sl_cli_jint(o, "gpus", &gpus) ? (long long)gpus : 0LL);
    row[k++] = node ? c[0] : NULL;
    row[k++] = num_cell(o, "capacity_gpu_hours", 3, c[1], sizeof(c[1]));
    row[k++] = num_cell(o, "allocated_gpu_hours", 3, c[2], sizeof(c[2]));
    row[k++] = num_cell(o, "idle_gpu_hours", 3, c[3], sizeof(c[3]));
    row[k] = NULL; /* "-" as every absent figure */
    if (json_is_number(json_object_get(o, "utilisation"))) {
        snprintf(c[4], sizeof(c[4]), "%.1f%%",
                 json_number_value(json_object_get(o, "utilisation")) * 100);
        row[k] = c[4];
    }
    k++;
    row[k++] = num_cell(o, "allocated_unused_gpu_hours", 3, c[5], sizeof(c[5]));
    row[k++] = num_cell(o, "idle_cost", 2, c[6], sizeof(c[6]));
    row[k++] = bool_cell(o, "conserved");
    return sl_cli_table_add(t, row);
}

static int util_print(struct sl_cli_ctx *ctx, const json_t *ans)
{
    static const char *const head[] = {"NODE",      "MODEL", "GPUS", "CAPACITY-GPUH",
                                       "ALLOC-GPUH", "IDLE-GPUH", "UTIL",
                                       "UNUSED-GPUH", "IDLE-COST", "CONSERVED"};
    const json_t *nodes = json_object_get(ans, "nodes"), *n;
    json_t *models = json_object_get(ans, "gpu_models"), *m;
    struct sl_cli_table *t;
    const char *model;
    size_t i;
    int rc = 0;

    if (ctx->output == SL_CLI_OUT_JSON)
        return sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    if (ctx->output == SL_CLI_OUT_CSV)
        return print_csv(sl_util_report_csv, ans);
    if (!(t = sl_cli_table_create(SL_ARRAY_LEN(head), head))) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    json_array_foreach(nodes, i, n)
        rc |= util_add(t, true, sl_cli_jstr(n, "node"), sl_cli_jstr(n, "gpu_model"), n);
    json_object_foreach(models, model, m)
        rc |= util_add(t, false, "(model)", model, m);
    rc |= util_add(t, false, "(total)", NULL, json_object_get(ans, "total"));
    if (rc == 0)
        sl_cli_table_print(t, stdout, ctx->output, 0);
    sl_cli_table_destroy(t);
    if (rc) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    return SL_CLI_OK;
}

/* --from, --to: into buf as epoch ms (what the server takes). */
static bool time_arg(const char *flag, const char *v, char *buf, size_t size)
{
    int64_t ms;

    if (sl_cli_parse_when_rel(v, sl_now_ms(), &ms) == 0 && ms >= 0) {
        snprintf(buf, size, "%lld", (long long)ms);
        return true;
    }
    sl_cli_errorf("%s: must be a date (2026-12-01), an RFC 3339 time "
                  "(2026-12-01T08:00:00Z), epoch ms, now, today, yesterday or a "
                  "duration ago (-7d, -12h), got '%.64s'",
                  flag, v);
    return false;
}

int sl_cli_cmd_report(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *by = NULL, *from = NULL, *to = NULL, *period = NULL, *team = NULL;
    char from_ms[24], to_ms[24];
    bool chargeback = false, util = false;
    char path[1024] = "";
    json_t *ans = NULL;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, report_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        switch (id) {
        case SL_CLI_ARG_POS:
            sl_cli_errorf("report: unexpected argument '%.64s' (see 'sluice help "
                          "report')",
                          v);
            return SL_CLI_USAGE;
        case O_BY:
            if (strcmp(v, "team") && strcmp(v, "project") && strcmp(v, "user") &&
                strcmp(v, "queue") && strcmp(v, "gpu-model") && strcmp(v, "node") &&
                strcmp(v, "job")) {
                sl_cli_errorf("--by: must be team, project, user, queue, gpu-model, "
                              "node or job, got '%.64s'",
                              v);
                return SL_CLI_USAGE;
            }
            by = v;
            break;
        case O_FROM:
            if (!time_arg("--from", v, from_ms, sizeof(from_ms)))
                return SL_CLI_USAGE;
            from = from_ms;
            break;
        case O_TO:
            if (!time_arg("--to", v, to_ms, sizeof(to_ms)))
                return SL_CLI_USAGE;
            to = to_ms;
            break;
        case O_PERIOD:
            if (strcmp(v, "day") && strcmp(v, "week") && strcmp(v, "month")) {
                sl_cli_errorf("--period: must be day, week or month, got '%.64s'", v);
                return SL_CLI_USAGE;
            }
            period = v;
            break;
        case O_TEAM:
            if (!*v || strlen(v) > 63) {
                sl_cli_errorf("--team: must be a team name, got '%.64s'", v);
                return SL_CLI_USAGE;
            }
            team = v;
            break;
        case O_CHARGEBACK:
            chargeback = true;
            break;
        case O_UTIL:
            util = true;
            break;
        }
    }
    if (util && (by || period || team || chargeback)) {
        sl_cli_errorf("--utilisation takes only --from and --to");
        return SL_CLI_USAGE;
    }
    if (!util)
        query_add(path, sizeof(path), "by", by ? by : "team");
    if (from)
        query_add(path, sizeof(path), "from", from);
    if (to)
        query_add(path, sizeof(path), "to", to);
    if (period)
        query_add(path, sizeof(path), "period", period);
    if (team)
        query_add(path, sizeof(path), "team", team);
    if (chargeback)
        query_add(path, sizeof(path), "share_idle", "true");
    {
        char full[1100];
        snprintf(full, sizeof(full), "%s%s", util ? "/v1/report/utilisation" : "/v1/report",
                 path);
        if ((code = sl_cli_call_json(ctx, "GET", full, NULL, NULL, 0, NULL, &ans)) !=
            SL_CLI_OK)
            return code;
    }
    code = util ? util_print(ctx, ans) : usage_rows(ctx, ans, period != NULL, chargeback);
    json_decref(ans);
    return code;
}

/* ---- budgets ---- */

int sl_cli_cmd_budgets(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const char *const head[] = {"BUDGET", "TEAM", "PERIOD", "UNIT", "LIMIT",
                                       "USED", "PERCENT", "ACTION", "EXCEEDED"};
    static const char *const csv[] = {"name", "team", "period", "unit", "limit", "used",
                                      "percent", "action", "exceeded", "period_start",
                                      "period_end"};
    const char *pos[1];
    int npos, code;
    json_t *ans = NULL, *b;
    const json_t *list;
    struct sl_cli_table *t;
    size_t i;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 0, &npos)) != SL_CLI_OK)
        return code == SL_CLI_DONE ? SL_CLI_OK : code;
    if ((code = sl_cli_call_json(ctx, "GET", "/v1/budgets", NULL, NULL, 0, NULL, &ans)) !=
        SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        json_decref(ans);
        return code;
    }
    list = json_object_get(ans, "budgets");
    t = ctx->output == SL_CLI_OUT_CSV ? sl_cli_table_create(SL_ARRAY_LEN(csv), csv)
                                      : sl_cli_table_create(SL_ARRAY_LEN(head), head);
    if (!t) {
        json_decref(ans);
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    json_array_foreach(list, i, b)
    {
        char lim[48], used[48], pct[48];
        int dec = ctx->output == SL_CLI_OUT_CSV ? -1 : 2;
        const char *row[] = {
            sl_cli_jstr(b, "name"),         sl_cli_jstr(b, "team"),
            sl_cli_jstr(b, "period"),       sl_cli_jstr(b, "unit"),
            num_cell(b, "limit", dec, lim, sizeof(lim)),
            num_cell(b, "used", dec, used, sizeof(used)),
            num_cell(b, "percent", ctx->output == SL_CLI_OUT_CSV ? -1 : 1, pct,
                     sizeof(pct)),
            sl_cli_jstr(b, "action"),
            ctx->output == SL_CLI_OUT_CSV
                ? (json_is_true(json_object_get(b, "exceeded")) ? "true" : "false")
                : bool_cell(b, "exceeded"),
            sl_cli_jstr(b, "period_start"), sl_cli_jstr(b, "period_end"),
        };
        if (sl_cli_table_add(t, row) < 0)
            code = SL_CLI_FAILED;
    }
    sl_cli_table_print(t, stdout, ctx->output, 0);
    sl_cli_table_destroy(t);
    json_decref(ans);
    return code;
}

/* ---- carbon ---- */

int sl_cli_cmd_carbon(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *site = NULL, *file = NULL, *verb = NULL;
    char path[128], *text = NULL;
    size_t len = 0;
    json_t *ans = NULL;
    int id, code, rc;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, carbon_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == O_SITE) {
            site = v;
        } else if (id == SL_CLI_ARG_POS && !verb) {
            verb = v;
        } else if (id == SL_CLI_ARG_POS && !file) {
            file = v;
        } else {
            sl_cli_errorf("carbon: unexpected argument '%.64s'", v);
            return SL_CLI_USAGE;
        }
    }
    if (!verb || strcmp(verb, "import") != 0 || !file || !site) {
        sl_cli_errorf("usage: sluice carbon import --site SITE FILE.csv");
        return SL_CLI_USAGE;
    }
    for (const char *c = site; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-') ||
            strlen(site) > 63) {
            sl_cli_errorf("--site: must be a site name (a-z, 0-9, '-'), got '%.64s'", site);
            return SL_CLI_USAGE;
        }
    if ((rc = sl_read_file(strcmp(file, "-") == 0 ? "/dev/stdin" : file, SL_CLI_MAX_INPUT,
                           &text, &len)) < 0) {
        sl_cli_errorf("%.200s: %s", file,
                      rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
        return SL_CLI_USAGE;
    }
    snprintf(path, sizeof(path), "/v1/carbon/%s", site);
    code = sl_cli_call_json(ctx, "POST", path, "text/csv", text, len, NULL, &ans);
    free(text);
    if (code != SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    } else {
        int64_t n = 0;
        sl_cli_jint(ans, "hours", &n);
        printf("carbon/%s: %lld hours\n", site, (long long)n);
    }
    json_decref(ans);
    return code;
}
