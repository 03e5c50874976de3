/*
 * test_meter.c - the meter: Pricing and Budget manifests (defaults,
 * refusals naming the field, canonical form), the figures of a ledger
 * interval against hand-computed values, periods, grouped reports (clipping,
 * periods, job counts, chargeback), the utilisation sweep and its
 * conservation check, hourly carbon, and the carbon CSV upload's parser.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/spec.h"
#include "../../src/meter/meter.h"
#include "../tap.h"

#define H 3600000LL

static int parse(const char *yaml, struct sl_manifest **m, size_t *n, struct sl_error *err)
{
    return sl_manifests_parse(yaml, strlen(yaml), m, n, err);
}

static void pricing_manifests(void)
{
    static const char good[] =
        "apiVersion: sluice/v1\nkind: Pricing\nmetadata: {name: default}\n"
        "spec:\n  currency: EUR\n  overhead: 2.5\n  lifetimeYears: 5\n"
        "  electricity: {pricePerKWh: 0.2, pue: 1.4}\n"
        "  gpuModels:\n    H100: {cu: 4, price: 30000, idleWatts: 60, tdpWatts: 700}\n"
        "    T4: {cu: 0.25}\n"
        "  cpu: {cu: 0.02, pricePerCoreHour: 0.03, wattsPerCore: 8}\n"
        "  memory: {cu: 0.001, pricePerGiBHour: 0.004, wattsPerGiB: 0.4}\n"
        "  energy: {assumedUtilisation: 0.7}\n"
        "  carbon: {intensity: 300, sites: {eu: {intensity: 50, nodes: [\"eu-*\"]}}}\n"
        "  idle: {utilisation: 0.1, after: 5m}\n";
    static const struct {
        const char *spec, *field;
    } bad[] = {
        /* spec body (after "spec:"), the field the error must name */
        {" {currency: usd}", "spec.currency"},
        {" {overhead: -1}", "spec.overhead"},
        {" {electricity: {pue: 0.5}}", "spec.electricity.pue"},
        {" {electricity: {price: 1}}", "spec.electricity.price"},
        {" {gpuModels: {H100: {cu: \"4\"}}}", "spec.gpuModels.H100.cu"},
        {" {gpuModels: {H100: {idleWatts: 800, tdpWatts: 700}}}", "spec.gpuModels.H100"},
        {" {gpuModels: {H100: {}, h100: {}}}", "spec.gpuModels.h100"},
        {" {gpuModels: {\"A 100\": {}}}", "spec.gpuModels.A 100"},
        {" {carbon: {sites: {eu: {intensity: 50}}}}", "spec.carbon.sites.eu.nodes"},
        {" {carbon: {sites: {eu: {nodes: [x]}}}}", "spec.carbon.sites.eu.intensity"},
        {" {carbon: {sites: {EU: {intensity: 1, nodes: [x]}}}}", "spec.carbon.sites.EU"},
        {" {idle: {after: 0s}}", "spec.idle.after"},
        {" {idle: {utilisation: 2}}", "spec.idle.utilisation"},
        {" {energy: {assumedUtilisation: 1.5}}", "spec.energy.assumedUtilisation"},
        {" {bogus: 1}", "spec.bogus"},
    };
    struct sl_manifest *m = NULL, *m2 = NULL;
    struct sl_error err = {{0}, {0}};
    struct sl_model_rates r;
    size_t n = 0, n2 = 0;
    json_t *spec, *doc;
    char *text;
    double g;

    is_int(parse(good, &m, &n, &err), 0, "a full Pricing parses (%s: %s)", err.field,
           err.text);
    if (!m)
        return;
    is_int(m->kind, SL_KIND_PRICING, "as kind Pricing");
    is_str(m->u.pricing.currency, "EUR", "currency");
    sl_pricing_model_rates(&m->u.pricing, "h100", &r);
    is_num(r.cu, 4, "H100 weighs 4 CU per GPU-hour (matched ignoring case)");
    is_num(r.hw_per_hour, 30000 * 2.5 / (5 * 8760.0), "H100 hardware per hour");
    is_num(r.idle_w, 60, "H100 idle watts from the Pricing");
    sl_pricing_model_rates(&m->u.pricing, "T4", &r);
    is_num(r.tdp_w, 70, "T4 TDP from the built-in table");
    is_num(r.hw_per_hour, 0, "T4 has no price");
    sl_pricing_model_rates(&m->u.pricing, "B999", &r);
    is_num(r.cu, 1, "an unlisted model weighs defaultCu");
    is_str(sl_pricing_site(&m->u.pricing, "eu-gpu-3", &g), "eu", "eu-* is in site eu");
    is_num(g, 50, "at its intensity");
    is_str(sl_pricing_site(&m->u.pricing, "us-1", &g), "", "other nodes are in no site");
    is_num(g, 300, "at the default intensity");
    is_int(m->u.pricing.idle_after_ms, 300000, "idle after 5m");

    /* The canonical form parses back equal. */
    spec = sl_manifest_spec_json(m);
    doc = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "sluice/v1", "kind",
                    "Pricing", "metadata", "name", "default", "spec", spec);
    text = json_dumps(doc, JSON_COMPACT);
    is_int(sl_manifests_parse(text, strlen(text), &m2, &n2, &err), 0,
           "the canonical Pricing parses");
    ok(m2 && memcmp(&m->u.pricing, &m2->u.pricing, sizeof(m->u.pricing)) == 0,
       "and equals the original");
    free(text);
    json_decref(doc);
    free(m);
    free(m2);

    is_int(parse("apiVersion: sluice/v1\nkind: Pricing\nmetadata: {name: other}\n", &m,
                 &n, &err),
           -EINVAL, "a Pricing not named default is refused");
    is_str(err.field, "metadata.name", "naming metadata.name");
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        char y[512];
        memset(&err, 0, sizeof(err));
        snprintf(y, sizeof(y),
                 "apiVersion: sluice/v1\nkind: Pricing\nmetadata: {name: default}\n"
                 "spec:%s\n",
                 bad[i].spec);
        m = NULL;
        is_int(parse(y, &m, &n, &err), -EINVAL, "refused:%s", bad[i].spec);
        is_str(err.field, bad[i].field, "and names the field (%s)", err.text);
        free(m);
    }
}

static void budget_manifests(void)
{
    static const struct {
        const char *spec, *field;
    } bad[] = {
        {" {period: month, gpuHours: 1}", "spec.team"},
        {" {team: a, gpuHours: 1, cu: 2}", "spec"},
        {" {team: a}", "spec"},
        {" {team: a, gpuHours: 0}", "spec.gpuHours"},
        {" {team: a, cost: -3}", "spec.cost"},
        {" {team: a, cu: 1, period: year}", "spec.period"},
        {" {team: a, cu: 1, action: kill}", "spec.action"},
        {" {team: a, cu: 1, extra: 1}", "spec.extra"},
    };
    struct sl_manifest *m = NULL;
    struct sl_error err = {{0}, {0}};
    size_t n;

    is_int(parse("apiVersion: sluice/v1\nkind: Budget\nmetadata: {name: vision-month}\n"
                 "spec: {team: vision, period: week, cost: 1500, action: demote}\n",
                 &m, &n, &err),
           0, "a Budget parses (%s)", err.text);
    if (m) {
        is_str(m->u.budget.name, "vision-month", "named");
        is_str(m->u.budget.team, "vision", "of team vision");
        is_int(m->u.budget.period, SL_PERIOD_WEEK, "weekly");
        is_int(m->u.budget.unit, SL_BUDGET_COST, "in money");
        is_num(m->u.budget.limit, 1500, "of 1500");
        is_int(m->u.budget.action, SL_BUDGET_DEMOTE, "demoting");
    }
    free(m);
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        char y[512];
        memset(&err, 0, sizeof(err));
        snprintf(y, sizeof(y),
                 "apiVersion: sluice/v1\nkind: Budget\nmetadata: {name: b}\nspec:%s\n",
                 bad[i].spec);
        m = NULL;
        is_int(parse(y, &m, &n, &err), -EINVAL, "refused:%s", bad[i].spec);
        is_str(err.field, bad[i].field, "and names the field (%s)", err.text);
        free(m);
    }
}

static void periods(void)
{
    int64_t t, ms;

    sl_parse_when_ms("2026-12-02T21:43:00Z", &t); /* a Wednesday */
    sl_parse_when_ms("2026-12-02", &ms);
    is_int(sl_period_start(SL_PERIOD_DAY, t), ms, "the day starts at midnight UTC");
    sl_parse_when_ms("2026-11-30", &ms);
    is_int(sl_period_start(SL_PERIOD_WEEK, t), ms, "the week starts on Monday");
    sl_parse_when_ms("2026-12-01", &ms);
    is_int(sl_period_start(SL_PERIOD_MONTH, t), ms, "the month on the 1st");
    sl_parse_when_ms("2027-01-01", &ms);
    is_int(sl_period_next(SL_PERIOD_MONTH, sl_period_start(SL_PERIOD_MONTH, t)), ms,
           "and the next month on 1 January");
    sl_parse_when_ms("2026-12-07", &ms);
    is_int(sl_period_next(SL_PERIOD_WEEK, sl_period_start(SL_PERIOD_WEEK, t)), ms,
           "the next week on Monday 7 December");
    ok(sl_parse_when_ms("1796248723901", &ms) == 0 && ms == 1796248723901LL,
       "epoch ms are taken as they are");
    ok(sl_parse_when_ms("2026-13-01", &ms) < 0, "a 13th month is refused");
    ok(sl_parse_when_ms("yesterday", &ms) < 0, "words are refused");
}

static struct sl_usage_row row(int64_t job, const char *team, const char *node,
                               const char *model, int ngpus, int milli, const char *gpus,
                               int64_t start, int64_t end)
{
    struct sl_usage_row r;

    memset(&r, 0, sizeof(r));
    r.job_id = job;
    r.team = team;
    r.project = "";
    r.user = "u";
    r.queue = "q";
    r.node = node;
    r.gpu_model = model;
    r.ngpus = ngpus;
    r.gpu_milli = milli;
    r.gpus = gpus;
    r.cpu_milli = 4000;
    r.mem_bytes = 16LL << 30;
    r.start_ms = start;
    r.end_ms = end;
    return r;
}

static void figures(void)
{
    struct sl_pricing p;
    struct sl_usage_row r;
    struct sl_usage_fig f;
    struct sl_carbon_hours ch;
    double g[2] = {100, NAN};
    double gpu_kwh, cpu_kwh, mem_kwh, kwh;

    sl_pricing_init(&p);
    p.overhead = 2;
    p.electricity = 0.1;
    p.pue = 1.5;
    p.cpu_cu = 0.01;
    p.cpu_price = 0.02;
    p.mem_cu = 0.001;
    p.mem_price = 0.003;
    p.intensity = 400;
    p.nmodels = 1;
    sl_strlcpy(p.models[0].model, "H100", sizeof(p.models[0].model));
    p.models[0].cu = 4;
    p.models[0].has_cu = true;
    p.models[0].price = 35040;
    p.models[0].has_price = true;

    /* 2 H100 for 3 hours, 4 CPUs, 16 GiB, estimated at TDP. */
    r = row(1, "a", "n1", "H100", 2, 1000, "0;1", 0, 3 * H);
    sl_usage_figures(&p, &r, 0, 10 * H, 10 * H, NULL, 0, &f);
    is_num(f.gpu_hours, 6, "2 GPUs x 3 h = 6 GPU-hours");
    is_num(f.core_hours, 12, "4 cores x 3 h");
    is_num(f.gib_hours, 48, "16 GiB x 3 h");
    is_num(f.cu, 6 * 4 + 12 * 0.01 + 48 * 0.001, "CU: GPU, CPU and memory weights");
    gpu_kwh = 6 * 700 / 1000.0;
    cpu_kwh = 12 * 10 / 1000.0;
    mem_kwh = 48 * 0.392 / 1000.0;
    kwh = gpu_kwh + cpu_kwh + mem_kwh;
    is_num(f.energy_kwh, kwh, "energy: TDP x GPU-hours + CPU + memory estimates");
    ok(!f.measured && f.energy_measured_kwh == 0, "and it says it is estimated");
    is_num(f.cost, 6 * (35040 * 2 / (4 * 8760.0)) + 12 * 0.02 + 48 * 0.003 +
                       kwh * 1.5 * 0.1,
           "cost: amortised hardware x overhead + CPU + memory + energy x PUE");
    is_num(f.co2_kg, kwh * 1.5 * 400 / 1000, "carbon: kWh x PUE x intensity");

    /* Half of it inside the window: half of everything. */
    sl_usage_figures(&p, &r, 90 * 60000, 10 * H, 10 * H, NULL, 0, &f);
    is_num(f.gpu_hours, 3, "clipped to the window from 1h30: 3 GPU-hours");

    /* Measured energy is spread over the interval and clipped with it. */
    r.gpu_energy_measured = true;
    r.gpu_energy_j = 3.6e6 * 2; /* 2 kWh */
    sl_usage_figures(&p, &r, 0, 10 * H, 10 * H, NULL, 0, &f);
    is_num(f.energy_kwh, 2 + cpu_kwh + mem_kwh, "measured GPU energy is taken as it is");
    ok(f.measured, "and the figure says measured");
    is_num(f.energy_measured_kwh, 2, "the measured part is 2 kWh");
    sl_usage_figures(&p, &r, 0, 90 * 60000, 10 * H, NULL, 0, &f);
    is_num(f.energy_measured_kwh, 1, "half the interval: half the measured energy");

    /* A measured utilisation lowers the estimate. */
    r.gpu_energy_measured = false;
    r.has_util = true;
    r.util = 0.5;
    sl_usage_figures(&p, &r, 0, 10 * H, 10 * H, NULL, 0, &f);
    is_num(f.energy_kwh, 6 * (70 + 630 * 0.5) / 1000 + cpu_kwh + mem_kwh,
           "utilisation 0.5: idle + (TDP - idle) x 0.5");

    /* A fraction of a GPU: milli / 1000 of one. */
    r = row(2, "a", "n1", "H100", 1, 250, "3", 0, 4 * H);
    sl_usage_figures(&p, &r, 0, 10 * H, 10 * H, NULL, 0, &f);
    is_num(f.gpu_hours, 1, "250 milli for 4 h = 1 GPU-hour");

    /* Running: counted up to now. */
    r = row(3, "a", "n1", "H100", 1, 1000, "0", 0, 0);
    sl_usage_figures(&p, &r, 0, 10 * H, 2 * H, NULL, 0, &f);
    is_num(f.gpu_hours, 2, "an open interval counts up to now");

    /* Hourly carbon: hour 0 at 100 g, hour 1 unknown (the fixed 400). */
    r = row(4, "a", "n1", "H100", 1, 1000, "0", 0, 2 * H);
    r.cpu_milli = 0;
    r.mem_bytes = 0;
    memset(&ch, 0, sizeof(ch));
    ch.start_ms = 0;
    ch.n = 2;
    ch.g = g;
    sl_usage_figures(&p, &r, 0, 10 * H, 10 * H, &ch, 1, &f);
    is_num(f.co2_kg, 1.4 * 1.5 * (100 + 400) / 2 / 1000,
           "hourly intensity where known, the fixed one elsewhere");
}

static void reports(void)
{
    struct sl_pricing p;
    struct sl_report *r;
    struct sl_usage_row rows[4];
    json_t *out;
    int64_t day;

    sl_pricing_init(&p);
    sl_parse_when_ms("2026-12-01", &day);
    rows[0] = row(1, "vision", "n1", "H100", 1, 1000, "0", day + 20 * H, day + 26 * H);
    rows[1] = row(1, "vision", "n1", "H100", 1, 1000, "1", day + 20 * H, day + 26 * H);
    rows[2] = row(2, "nlp", "n2", "A100", 2, 1000, "0;1", day + 2 * H, day + 3 * H);
    rows[3] = row(3, "vision", "n1", "H100", 1, 500, "2", day + 30 * H, day + 32 * H);
    rows[3].idle = true;
    rows[3].idle_ms = 1 * H;       /* half of it under the idle threshold */

    r = sl_report_new(&p, SL_BY_TEAM, -1, day, day + 48 * H, day + 48 * H);
    for (int i = 0; i < 4; i++)
        sl_report_add(r, &rows[i], NULL, 0);
    out = sl_report_json(r);
    is_int(json_array_size(out), 2, "two teams");
    is_str(json_string_value(json_object_get(json_array_get(out, 0), "key")), "nlp",
           "sorted by key: nlp first");
    is_num(json_number_value(json_object_get(json_array_get(out, 1), "gpu_hours")),
           6 + 6 + 1, "vision: two tasks of 6 h and 0.5 GPU for 2 h");
    is_int(json_integer_value(json_object_get(json_array_get(out, 1), "jobs")), 2,
           "vision ran 2 jobs (a job's tasks count once)");
    is_int(json_integer_value(json_object_get(json_array_get(out, 1), "idle_jobs")), 1,
           "one of them flagged idle-but-allocated");
    is_num(json_number_value(json_object_get(json_array_get(out, 1), "unused_gpu_hours")),
           0.5, "its unused GPU-hours: half a GPU for its 1 h idle");
    is_num(json_number_value(json_object_get(json_array_get(out, 0), "unused_gpu_hours")),
           0, "nlp: none");
    json_decref(out);
    sl_report_share_idle(r, 28);
    out = sl_report_json(r);
    is_num(json_number_value(json_object_get(json_array_get(out, 1), "idle_cost_share")),
           0, "with no prices there is no cost to share");
    json_decref(out);
    sl_report_free(r);

    /* By day: job 1 spans midnight and is split 4 h + 2 h per task. */
    r = sl_report_new(&p, SL_BY_TEAM, SL_PERIOD_DAY, day, day + 48 * H, day + 48 * H);
    for (int i = 0; i < 4; i++)
        sl_report_add(r, &rows[i], NULL, 0);
    out = sl_report_json(r);
    is_int(json_array_size(out), 3, "nlp day 1, vision day 1, vision day 2");
    is_num(json_number_value(json_object_get(json_array_get(out, 1), "gpu_hours")), 8,
           "vision on 1 December: 2 x 4 h");
    is_num(json_number_value(json_object_get(json_array_get(out, 2), "gpu_hours")),
           4 + 1, "vision on 2 December: 2 x 2 h + 1");
    is_int(json_integer_value(json_object_get(json_array_get(out, 2), "jobs")), 2,
           "jobs 1 and 3 ran on 2 December");
    json_decref(out);
    sl_report_free(r);

    /* Window clipping: only [day + 25h, day + 31h). */
    r = sl_report_new(&p, SL_BY_GPU_MODEL, -1, day + 25 * H, day + 31 * H, day + 48 * H);
    for (int i = 0; i < 4; i++)
        sl_report_add(r, &rows[i], NULL, 0);
    out = sl_report_json(r);
    is_int(json_array_size(out), 1, "only H100 inside the window");
    is_num(json_number_value(json_object_get(json_array_get(out, 0), "gpu_hours")),
           2 * 1 + 0.5, "1 h of two tasks and 1 h of half a GPU");
    is_num(json_number_value(json_object_get(json_array_get(out, 0), "unused_gpu_hours")),
           0.25, "the idle time is clipped in proportion: half of its hour inside");
    json_decref(out);
    sl_report_free(r);
}

static void utilisation(void)
{
    struct sl_pricing p;
    struct sl_util_report *u;
    struct sl_usage_row r;
    json_t *out, *tot;

    sl_pricing_init(&p);
    p.nmodels = 1;
    sl_strlcpy(p.models[0].model, "H100", sizeof(p.models[0].model));
    p.models[0].price = 8760 * 4; /* 1 per hour over 4 years */
    p.models[0].has_price = true;

    u = sl_util_report_new(&p, 0, 10 * H, 10 * H);
    sl_util_report_gpu(u, "n1", "H100", 0);
    sl_util_report_gpu(u, "n1", "H100", 1);
    sl_util_report_gpu(u, "n1", "T4", 2); /* another model: its own entry */
    r = row(1, "a", "n1", "H100", 2, 1000, "0;1", 1 * H, 3 * H); /* 4 GPU-h */
    sl_util_report_add(u, &r);
    r = row(2, "a", "n1", "H100", 1, 500, "0", 5 * H, 9 * H); /* 2 GPU-h */
    sl_util_report_add(u, &r);
    r = row(3, "a", "n1", "H100", 1, 500, "0", 6 * H, 8 * H); /* 1 GPU-h */
    r.idle = true;
    r.idle_ms = 2 * H;             /* idle throughout: half a GPU for 2 h */
    sl_util_report_add(u, &r);
    out = sl_util_report_json(u);
    tot = json_object_get(out, "total");
    is_int(json_array_size(json_object_get(out, "nodes")), 2,
           "a node with two models has two entries");
    tot = json_object_get(json_object_get(out, "gpu_models"), "H100");
    is_num(json_number_value(json_object_get(tot, "capacity_gpu_hours")), 20,
           "H100 capacity: 2 GPUs x 10 h");
    is_num(json_number_value(json_object_get(tot, "allocated_gpu_hours")), 7,
           "allocated: 4 + 2 + 1");
    is_num(json_number_value(json_object_get(tot, "idle_gpu_hours")), 13,
           "idle from the sweep: 13");
    ok(json_is_true(json_object_get(tot, "conserved")), "allocated + idle = capacity");
    is_num(json_number_value(json_object_get(tot, "allocated_unused_gpu_hours")), 1,
           "the flagged job's GPU-hour is allocated but unused");
    is_num(json_number_value(json_object_get(tot, "idle_cost")),
           13 * (1 + 70 / 1000.0 * 1 * 0), "idle cost: the hardware's hours");
    is_num(sl_util_report_idle_cost(u), 13, "and the same for chargeback (T4 has no price)");
    is_num(json_number_value(json_object_get(json_object_get(out, "total"),
                                             "capacity_gpu_hours")),
           30, "total capacity: 3 GPUs x 10 h");
    json_decref(out);
    sl_util_report_free(u);

    /* A GPU given out twice over at once breaks conservation, and shows. */
    u = sl_util_report_new(&p, 0, 10 * H, 10 * H);
    sl_util_report_gpu(u, "n1", "H100", 0);
    r = row(1, "a", "n1", "H100", 1, 1000, "0", 0, 4 * H);
    sl_util_report_add(u, &r);
    r = row(2, "a", "n1", "H100", 1, 1000, "0", 2 * H, 6 * H);
    sl_util_report_add(u, &r);
    out = sl_util_report_json(u);
    tot = json_object_get(out, "total");
    ok(json_is_false(json_object_get(tot, "conserved")),
       "overlapping whole-GPU intervals are not conserved");
    is_num(json_number_value(json_object_get(tot, "overcommitted_gpu_hours")), 2,
           "and the 2 GPU-hours given twice are counted");
    json_decref(out);
    sl_util_report_free(u);
}

/* The status an upload gets: hours parsed, or the error negated. */
static int csv(const char *body, struct sl_carbon_csv *c, struct sl_carbon_error *err)
{
    size_t len = strlen(body);
    char *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees overruns */
    int rc;

    memcpy(copy, body, len);
    rc = sl_carbon_parse_csv(copy, len, c, err);
    free(copy);
    return rc < 0 ? rc : (int)c->n;
}

static void carbon_csv(void)
{
    struct sl_carbon_csv c;
    struct sl_carbon_error err;
    char *big;
    size_t o = 0;
    static const struct {
        const char *body, *field, *says;
    } bad[] = {
        /* body, field named, what the message holds */
        {"", "body", "no hours"},
        {"hour,g\n\n", "body", "no hours"},
        {"2026-12-02T10:30:00Z,100\n", "line 1", "on the hour"},
        {"2026-12-02T10:00:00Z,100\nyesterday,5\n", "line 2", "RFC 3339"},
        {"2026-12-02T10:00:00Z\n", "line 1", "hour,gco2_per_kwh"},
        {"2026-12-02T10:00:00Z,1,2\n", "line 1", "hour,gco2_per_kwh"},
        {"2026-12-02T10:00:00Z,-1\n", "line 1", "from 0 to 100000"},
        {"2026-12-02T10:00:00Z,100001\n", "line 1", "from 0 to 100000"},
        {"2026-12-02T10:00:00Z,nan\n", "line 1", "number"},
        {"2026-12-02T10:00:00Z,0x10\n", "line 1", "number"},
        {"2026-12-02T10:00:00Z,1e3\n", "line 1", "number"},
        {"2026-12-02T10:00:00Z,1.\n", "line 1", "number"},
        {"2026-12-02T10:00:00Z,\n", "line 1", "number"},
        {"2026-12-02T10:00:00Z,1\r5\n", "line 1", "bare CR"},
        {"2026-12-02T10:00:00Z,100\n2026-12-02T11:00:00Z,1\n2026-12-02T10:00:00Z,5\n",
         "line 3", "same hour as line 1"},
        {"1796205600000,1\n2026-12-02T10:00:00Z,2\n", "line 2", "same hour as line 1"},
        {"hour,g\n1969-12-31T23:00:00Z,1\n", "line 2", "from 1970 to 9999"},
        {"9999-12-31T23:00:00-01:00,1\n", "line 1", "from 1970 to 9999"},
        {"2026-02-29T10:00:00Z,1\n2026-02-30T10:00:00Z,1\n", "line 2", "RFC 3339"},
    };

    ok(csv("hour,gco2_per_kwh\r\n2026-12-02T10:00:00Z,100\r\n\r\n"
           " 2026-12-02T11:00:00Z ,\t250.5 \n1796220000000,0", &c, &err) == 3 &&
           c.hour_ms[0] == 1796205600000 && c.g[0] == 100 &&
           c.hour_ms[1] == 1796209200000 && c.g[1] == 250.5 &&
           c.hour_ms[2] == 1796220000000 && c.g[2] == 0,
       "a header, CRLF, blanks around fields, epoch ms and no final newline parse in order");
    sl_carbon_csv_free(&c);
    ok(csv("2026-12-02T10:00:00Z,100\n", &c, &err) == 1 && c.g[0] == 100,
       "no header: the first line is an hour");
    sl_carbon_csv_free(&c);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = csv(bad[i].body, &c, &err);
        ok(rc == -EINVAL && strcmp(err.field, bad[i].field) == 0 && strstr(err.text, bad[i].says),
           "refused naming %s: %s", bad[i].field, rc == -EINVAL ? err.text : "(accepted)");
    }
    ok(csv("2026-12-02T10:00:00Z,\x01\xff\n", &c, &err) == -EINVAL &&
           !strpbrk(err.text, "\x01\xff"),
       "a message quoting the line is printable: %s", err.text);
    big = malloc((size_t)(SL_CARBON_HOURS_MAX + 1) * 24);
    for (int64_t i = 0; i < SL_CARBON_HOURS_MAX; i++)
        o += (size_t)sprintf(big + o, "%lld,1\n", (long long)((i + 400000) * H));
    ok(csv(big, &c, &err) == SL_CARBON_HOURS_MAX, "%d hours are taken", SL_CARBON_HOURS_MAX);
    sl_carbon_csv_free(&c);
    sprintf(big + o, "%lld,1\n", (long long)(399999 * H));
    ok(csv(big, &c, &err) == -E2BIG && strstr(err.text, "at most"),
       "one hour more is too many: %s", err.text);
    free(big);
}

int main(void)
{

    pricing_manifests();
    budget_manifests();
    periods();
    figures();
    reports();
    utilisation();
    carbon_csv();
    return done_testing();
}
