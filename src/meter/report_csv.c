/*
 * report_csv.c - the usage and utilisation reports as CSV, from their JSON
 * as GET /v1/report and GET /v1/report/utilisation answer it: what `sluice
 * report -o csv` prints and what those routes give with format=csv, the
 * same bytes from the same function. See meter.h.
 */
#include "meter.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../util/csv.h"

/* The usage report's columns: each is the member of a row of that name. */
static const char *const usage_cols[] = {
    "key", "period", "jobs", "gpu_hours", "cu", "core_hours", "gib_hours",
    "energy_kwh", "energy_measured", "energy_measured_kwh", "cost",
    "idle_cost_share", "chargeback", "co2_kg", "unused_gpu_hours", "idle_jobs",
    "currency",
};

/* The utilisation report's figures, after scope, name, gpu_model and gpus. */
static const char *const util_figs[] = {
    "capacity_gpu_hours", "allocated_gpu_hours", "idle_gpu_hours",
    "allocated_unused_gpu_hours", "utilisation", "idle_cost",
    "allocated_unused_cost", "overcommitted_gpu_hours", "conserved",
};
#define UTIL_NCOLS (4 + SL_ARRAY_LEN(util_figs))

/* A member as a cell: a number in full (into buf), a boolean as true or
 * false, a string as it is when 'strings', else empty (NULL). */
static const char *cell(const json_t *v, bool strings, char buf[SL_CSV_CELL])
{
    if (json_is_string(v))
        return strings ? json_string_value(v) : NULL;
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    if (json_is_number(v))
        return sl_csv_number(v, buf, SL_CSV_CELL);
    return NULL;
}

int sl_report_csv(const json_t *report, struct sl_buf *out)
{
    const json_t *rows = json_object_get(report, "rows"), *r;
    size_t i;

    if (!json_is_array(rows))
        return -EINVAL;
    sl_csv_row(out, usage_cols, SL_ARRAY_LEN(usage_cols));
    json_array_foreach(rows, i, r)
    {
        char cells[SL_ARRAY_LEN(usage_cols)][SL_CSV_CELL];
        const char *row[SL_ARRAY_LEN(usage_cols)];
        for (size_t c = 0; c < SL_ARRAY_LEN(usage_cols); c++)
            row[c] = cell(json_object_get(r, usage_cols[c]), true, cells[c]);
        sl_csv_row(out, row, SL_ARRAY_LEN(usage_cols));
    }
    return out->failed ? -ENOMEM : 0;
}

/* One line of the utilisation CSV: figures 'o' (may be NULL) of 'name'. */
static void util_line(struct sl_buf *out, const char *scope, const char *name,
                      const char *model, const json_t *o)
{
    char cells[UTIL_NCOLS][SL_CSV_CELL];
    const char *row[UTIL_NCOLS];
    size_t k = 0;
    int64_t gpus;

    row[k++] = scope;
    row[k++] = name;
    row[k++] = model;
    snprintf(cells[k], sizeof(cells[k]), "%lld",
             sl_csv_integer(o, "gpus", &gpus) ? (long long)gpus : 0LL);
    row[k] = strcmp(scope, "node") == 0 ? cells[k] : NULL;
    k++;
    for (size_t i = 0; i < SL_ARRAY_LEN(util_figs); i++, k++)
        row[k] = cell(json_object_get(o, util_figs[i]), false, cells[k]);
    sl_csv_row(out, row, UTIL_NCOLS);
}

int sl_util_report_csv(const json_t *report, struct sl_buf *out)
{
    const char *head[UTIL_NCOLS] = {"scope", "name", "gpu_model", "gpus"};
    const json_t *nodes = json_object_get(report, "nodes"), *n;
    json_t *models = json_object_get(report, "gpu_models"), *m;
    const char *model;
    size_t i;

    memcpy(head + 4, util_figs, sizeof(util_figs));
    sl_csv_row(out, head, UTIL_NCOLS);
    json_array_foreach(nodes, i, n)
        util_line(out, "node", json_string_value(json_object_get(n, "node")),
                  json_string_value(json_object_get(n, "gpu_model")), n);
    json_object_foreach(models, model, m)
        util_line(out, "gpu-model", model, model, m);
    util_line(out, "total", "total", NULL, json_object_get(report, "total"));
    return out->failed ? -ENOMEM : 0;
}
