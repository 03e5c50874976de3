/*
 * meter.h - metering: the settings of kind: Pricing and kind: Budget, the
 * rates they give, and the reports computed from the usage ledger.
 *
 * The ledger (the store's usage table) records raw quantities only: for
 * every interval in which a task held resources, what it held, where and
 * from when to when, and the energy measured while it ran, when something
 * measured it. Units, estimates, money and carbon are derived here, at
 * report time, from the Pricing in force (docs/metering.md):
 *
 *   gpu_hours  = GPUs x (milli / 1000) x hours
 *   cu         = gpu_hours x cu(model) + core_hours x cpu.cu + GiB_hours x memory.cu
 *   energy     = measured GPU joules, or the estimate
 *                GPUs x share x (idleW + (tdpW - idleW) x util) x hours,
 *                plus CPU (RAPL share or cores x wattsPerCore) and memory
 *                (GiB x wattsPerGiB) x hours
 *   cost       = gpu_hours x price(model) x overhead / (lifetime x 8760 h)
 *                + core_hours x cpu.pricePerCoreHour
 *                + GiB_hours x memory.pricePerGiBHour
 *                + kWh x PUE x electricity.pricePerKWh
 *   co2_kg     = kWh x PUE x intensity(site, hour) / 1000
 *
 * Nothing here does I/O or keeps global state.
 */
#ifndef SL_METER_H
#define SL_METER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../util/util.h"

struct sl_buf;

#define SL_PRICING_MODELS 32      /* GPU models priced in one Pricing */
#define SL_PRICING_SITES 16       /* carbon sites */
#define SL_SITE_PATTERNS 16       /* node name patterns per site */

struct sl_pricing_model {
    char model[48];               /* as written; matched ignoring case */
    double cu;                    /* compute units per GPU-hour */
    double price;                 /* purchase price of one GPU */
    double lifetime_years;        /* amortisation; 0 = Pricing's */
    double idle_w, tdp_w;         /* power at idle and at full load */
    bool has_cu, has_price, has_lifetime, has_idle, has_tdp;
};

struct sl_pricing_site {
    char name[64];
    double intensity;             /* gCO2e per kWh, when no hourly figure */
    int npatterns;
    char nodes[SL_SITE_PATTERNS][64]; /* fnmatch patterns of node names */
};

/* kind: Pricing, name "default". Plain data: copy with memcpy. */
struct sl_pricing {
    char currency[8];             /* ISO 4217 style code, default "USD" */
    double default_cu;            /* CU per GPU-hour of an unlisted model (1) */
    double overhead;              /* TCO factor on hardware (default 1) */
    double lifetime_years;        /* default 4 */
    double electricity;           /* currency per kWh (default 0) */
    double pue;                   /* power usage effectiveness (default 1) */
    double cpu_cu, cpu_price, cpu_w; /* per core-hour; W per core (10) */
    double mem_cu, mem_price, mem_w; /* per GiB-hour; W per GiB (0.392) */
    double assumed_util;          /* GPU utilisation of estimates when the
                                     job's is not known (1 = TDP) */
    double intensity;             /* gCO2e/kWh of nodes in no site (0) */
    double idle_util;             /* idle-but-allocated threshold (0.05) */
    int64_t idle_after_ms;        /* for this long (10 min) */
    int nmodels;
    struct sl_pricing_model models[SL_PRICING_MODELS];
    int nsites;
    struct sl_pricing_site sites[SL_PRICING_SITES];
};

/* The defaults: what is in force before any Pricing is applied. */
void sl_pricing_init(struct sl_pricing *p);
/* Parse spec (may be NULL: every default) at path P ("spec" or
 * "[1].spec"); the error names the field. */
int sl_pricing_parse(const json_t *spec, const char *P, struct sl_pricing *p,
                     struct sl_error *err);
/* The normalised spec, every default filled in; parses back equal.
 * New reference or NULL (ENOMEM). */
json_t *sl_pricing_json(const struct sl_pricing *p);

/* The built-in GPU model table used where Pricing names no power figures:
 * idle and TDP watts from vendor data sheets (idle is typical, not a
 * specification). Unknown models get 40 W / 300 W. */
void sl_gpu_power_default(const char *model, double *idle_w, double *tdp_w);

/* Rates of one GPU model under 'p'. */
struct sl_model_rates {
    double cu;                    /* per GPU-hour */
    double hw_per_hour;           /* amortised hardware x overhead */
    double idle_w, tdp_w;
};
void sl_pricing_model_rates(const struct sl_pricing *p, const char *model,
                            struct sl_model_rates *out);
/* The site of node 'node' ("" when none matches) and its fixed intensity. */
const char *sl_pricing_site(const struct sl_pricing *p, const char *node,
                            double *intensity);

/* kind: Budget. */
enum sl_budget_period { SL_PERIOD_DAY, SL_PERIOD_WEEK, SL_PERIOD_MONTH };
enum sl_budget_unit { SL_BUDGET_GPU_HOURS, SL_BUDGET_CU, SL_BUDGET_COST };
enum sl_budget_action { SL_BUDGET_BLOCK, SL_BUDGET_DEMOTE };

struct sl_budget {
    char name[64];
    char team[64];
    int period;                   /* enum sl_budget_period */
    int unit;                     /* enum sl_budget_unit */
    double limit;                 /* > 0 */
    int action;                   /* enum sl_budget_action */
};
int sl_budget_parse(const json_t *spec, const char *P, struct sl_budget *b,
                    struct sl_error *err);
json_t *sl_budget_json(const struct sl_budget *b);
const char *sl_budget_unit_name(int unit);     /* "gpuHours" | "cu" | "cost" */
const char *sl_budget_period_name(int period); /* "day" | "week" | "month" */
const char *sl_budget_action_name(int action); /* "block" | "demote" */

/* Periods in UTC: the start of the one holding 'ms' (weeks start on
 * Monday) and the start of the next. */
int64_t sl_period_start(int period, int64_t ms);
int64_t sl_period_next(int period, int64_t start_ms);

/* ---- the ledger and reports ------------------------------------------- */

/* One ledger interval, as stored. end_ms 0 = still open. */
struct sl_usage_row {
    int64_t id, job_id;
    int attempt, task;
    const char *team, *project, *user, *queue, *node, *gpu_model; /* "" = none */
    int ngpus, gpu_milli;         /* GPUs held and milli on each */
    const char *gpus;             /* indices, "0;1" */
    int64_t cpu_milli, mem_bytes;
    int64_t start_ms, end_ms;
    bool gpu_energy_measured;     /* gpu_energy_j is from NVML */
    double gpu_energy_j;
    bool cpu_energy_measured;     /* cpu_energy_j is a RAPL share */
    double cpu_energy_j;
    bool has_util;                /* util: the mean of its GPUs (NVML) */
    double util;
    bool idle;                    /* flagged idle-but-allocated */
    int64_t idle_ms;              /* of it under the threshold, in stretches
                                     at least the Pricing's idle.after */
};

/* Figures of one interval clipped to [from, to): 'frac' of it lies there. */
struct sl_usage_fig {
    double hours;                 /* wall hours inside the window */
    double gpu_hours, core_hours, gib_hours;
    double cu, energy_kwh, energy_measured_kwh, cost, co2_kg;
    bool measured;                /* its dominant energy was measured */
    double unused_gpu_hours;      /* allocated, under the idle threshold
                                     (its share of the interval's idle_ms) */
};

/* Hourly carbon intensity of one site: figures for the hours starting at
 * start_ms + i * 3600000 (NaN = none), else the site's fixed intensity. */
struct sl_carbon_hours {
    char site[64];
    int64_t start_ms;
    size_t n;
    double *g;                    /* owned */
};

/* Figures of row 'r' within [from_ms, to_ms) at 'now_ms' (open rows are
 * counted up to now). 'hourly' may be NULL. */
void sl_usage_figures(const struct sl_pricing *p, const struct sl_usage_row *r,
                      int64_t from_ms, int64_t to_ms, int64_t now_ms,
                      const struct sl_carbon_hours *hourly, size_t nhourly,
                      struct sl_usage_fig *out);

enum sl_report_by {
    SL_BY_TEAM, SL_BY_PROJECT, SL_BY_USER, SL_BY_QUEUE, SL_BY_GPU_MODEL,
    SL_BY_NODE, SL_BY_JOB
};
/* "team", "project", "user", "queue", "gpu-model", "node", "job". */
int sl_report_by_parse(const char *s);
const char *sl_report_by_name(int by);

struct sl_report;
/* A report grouped by 'by' over [from_ms, to_ms), by period when
 * 'period' >= 0. */
struct sl_report *sl_report_new(const struct sl_pricing *p, int by, int period,
                                int64_t from_ms, int64_t to_ms, int64_t now_ms);
/* Add one ledger row (the row's strings are copied). 0 or -ENOMEM. */
int sl_report_add(struct sl_report *r, const struct sl_usage_row *row,
                  const struct sl_carbon_hours *hourly, size_t nhourly);
/* Chargeback: spread the cost of unallocated capacity over the keys in
 * proportion to their cost ('idle_cost', from the utilisation report). */
void sl_report_share_idle(struct sl_report *r, double idle_cost);
/* The rows, sorted by period then key: a JSON array of objects with key,
 * period (when by period), jobs, gpu_hours, cu, core_hours, gib_hours,
 * energy_kwh, energy_measured, energy_measured_kwh, cost, idle_cost_share
 * (chargeback only), co2_kg, currency. New reference or NULL. */
json_t *sl_report_json(const struct sl_report *r);
void sl_report_free(struct sl_report *r);

/* Utilisation: allocated against capacity per node, GPU model and the
 * whole cluster. Capacity comes from the GPUs declared: those of the
 * cluster now, taken to have been there over the whole window. */
struct sl_util_report;
struct sl_util_report *sl_util_report_new(const struct sl_pricing *p,
                                          int64_t from_ms, int64_t to_ms,
                                          int64_t now_ms);
/* Declare GPU 'index' (0..63) of 'node', of 'model'; before any row. A
 * node with two models is reported as two entries. Rows on GPUs never
 * declared (a node no longer in the cluster) are reported with the GPUs
 * they used, "declared": false. */
int sl_util_report_gpu(struct sl_util_report *u, const char *node,
                       const char *model, int index);
int sl_util_report_add(struct sl_util_report *u, const struct sl_usage_row *row);
/* Idle and allocated figures: per node, per model and in total, each with
 * capacity_gpu_hours, allocated_gpu_hours, idle_gpu_hours (from a sweep of
 * each GPU's free time, independent of the allocated sum: the two add up
 * to capacity exactly when no GPU was ever given out beyond its capacity),
 * allocated_unused_gpu_hours (intervals flagged idle), utilisation
 * (allocated/capacity), idle_cost and allocated_unused_cost. */
json_t *sl_util_report_json(struct sl_util_report *u);
/* The cost of the unallocated GPU-hours (for sl_report_share_idle). */
double sl_util_report_idle_cost(struct sl_util_report *u);
void sl_util_report_free(struct sl_util_report *u);

/* ---- the reports as CSV (report_csv.c) ----------------------------------
 *
 * `sluice report -o csv` and GET /v1/report?format=csv write their CSV
 * here, from the report's JSON as a client reads it from the wire (reals
 * as the answer carries them: 15 significant digits). Fields are
 * util/csv.h's: quoted only when they hold ',', '"', CR or LF or begin or
 * end with a space (a '"' doubled), each line ending in LF, a header line
 * first; an integer as is, a real in fixed notation with the fewest
 * decimals (at most 9) that read back as it, a boolean true or false, an
 * absent member (or a null, an object, an array) empty. */

/* The usage report 'report' (GET /v1/report's object) appended to 'out':
 * the header key,period,jobs,gpu_hours,cu,core_hours,gib_hours,
 * energy_kwh,energy_measured,energy_measured_kwh,cost,idle_cost_share,
 * chargeback,co2_kg,unused_gpu_hours,idle_jobs,currency, then a line per
 * element of report.rows in their order, each column its member of that
 * name (a string as it is). Returns 0; -EINVAL when report.rows is not an
 * array (nothing appended); -ENOMEM when 'out' failed (buf.h). */
int sl_report_csv(const json_t *report, struct sl_buf *out);
/* The utilisation report 'report' (GET /v1/report/utilisation's object)
 * appended to 'out': the header scope,name,gpu_model,gpus,
 * capacity_gpu_hours,allocated_gpu_hours,idle_gpu_hours,
 * allocated_unused_gpu_hours,utilisation,idle_cost,allocated_unused_cost,
 * overcommitted_gpu_hours,conserved, then a line per element of
 * report.nodes (scope node, name its node, gpu_model its gpu_model, gpus
 * its integer gpus or 0), one per member of report.gpu_models in their
 * order (scope gpu-model, name and gpu_model the member's name, gpus
 * empty) and one of report.total (scope and name total, gpu_model and gpus
 * empty). The figures are numbers or booleans; anything else is empty.
 * Returns 0 or -ENOMEM when 'out' failed. */
int sl_util_report_csv(const json_t *report, struct sl_buf *out);

/* ---- a site's hourly carbon intensity, as uploaded ------------------- */

#define SL_CARBON_HOURS_MAX (24 * 366 * 5) /* five years of hours per upload */

/* The hours of one upload, in the order given. */
struct sl_carbon_csv {
    int64_t *hour_ms;             /* each on the hour from 1970 to 9999,
                                     no two equal */
    double *g;                    /* gCO2 per kWh, 0 to 100000 */
    size_t n;                     /* 1..SL_CARBON_HOURS_MAX */
};

/* What is wrong with an upload: the field ("line N" or "body") and why. */
struct sl_carbon_error {
    char field[32];
    char text[160];               /* printable; quotes at most 40 bytes */
};

/* Parse body[0..len) as CSV lines "hour,gco2_per_kwh": the hour RFC 3339
 * or epoch ms (sl_parse_when_ms), on the hour and from 1970 to 9999, the
 * intensity a decimal
 * number ("123", "123.5") from 0 to 100000; SP and HTAB around a field,
 * CRLF or LF line ends, empty lines and one header line first (a first
 * line whose hour does not parse) are allowed. Every line is checked
 * before any is kept.
 *
 * Returns 0 with *out filled (free with sl_carbon_csv_free); -EINVAL with
 * *err for a bad line, an hour given twice or no hours; -E2BIG for more
 * than SL_CARBON_HOURS_MAX hours; -ENOMEM. Nothing is kept on an error. */
int sl_carbon_parse_csv(const char *body, size_t len, struct sl_carbon_csv *out,
                        struct sl_carbon_error *err);
void sl_carbon_csv_free(struct sl_carbon_csv *c);

#endif
