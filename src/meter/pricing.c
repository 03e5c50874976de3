/*
 * pricing.c - kind: Pricing and kind: Budget: parse, defaults, canonical
 * JSON, and the rates they give. See meter.h and docs/metering.md.
 */
#include "meter.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../util/jfield.h"

#define HOURS_PER_YEAR 8760.0
#define AMOUNT_MAX 1e12           /* prices, weights and watts */


/* obj[key], when present, as a finite number in [min, max]. */
static int get_num(const json_t *obj, const char *key, const char *parent,
                   double min, double max, double *out, bool *present,
                   struct sl_error *err)
{
    const json_t *v = sl_jf_member(obj, key);
    char p[SL_JF_PATH];
    double d;

    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    sl_jf_path(p, parent, key);
    if (!json_is_number(v))
        return sl_jf_fail(err, p, "must be a number from %g to %g", min, max);
    d = json_number_value(v);
    if (!isfinite(d) || d < min || d > max)
        return sl_jf_fail(err, p, "must be a number from %g to %g, got %g", min, max, d);
    *out = d;
    return 0;
}

static bool model_valid(const char *s)
{
    size_t n = strlen(s);

    if (n < 1 || n > 47)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
            return false;
    return true;
}

static bool name_valid(const char *s)
{
    size_t n = strlen(s);

    if (n < 1 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && i < n - 1))
            return false;
    }
    return true;
}

/* ---- the GPU power table ---------------------------------------------- */

static const struct {
    const char *model;
    double idle_w, tdp_w;
} power_table[] = {
    /* TDP from NVIDIA data sheets (SXM where there are two forms);
     * idle is a typical reading of an unloaded board. */
    {"B200", 140, 1000}, {"H200", 75, 700},     {"H100", 70, 700},
    {"H800", 70, 700},   {"H20", 60, 400},      {"A100-80GB", 50, 400},
    {"A100", 50, 400},   {"A800", 50, 400},     {"A30", 30, 165},
    {"A10", 20, 150},    {"A10G", 20, 150},     {"L40S", 35, 350},
    {"L40", 35, 300},    {"L4", 15, 72},        {"V100", 40, 300},
    {"V100M32", 40, 300}, {"P100", 30, 250},    {"T4", 10, 70},
    {"G1", 40, 300},     {"G2", 40, 300},       {"G3", 40, 300},
};

void sl_gpu_power_default(const char *model, double *idle_w, double *tdp_w)
{
    *idle_w = 40;
    *tdp_w = 300;
    for (size_t i = 0; model && i < SL_ARRAY_LEN(power_table); i++)
        if (strcasecmp(power_table[i].model, model) == 0) {
            *idle_w = power_table[i].idle_w;
            *tdp_w = power_table[i].tdp_w;
            return;
        }
}

/* ---- Pricing ---------------------------------------------------------- */

void sl_pricing_init(struct sl_pricing *p)
{
    memset(p, 0, sizeof(*p));
    sl_strlcpy(p->currency, "USD", sizeof(p->currency));
    p->default_cu = 1;
    p->overhead = 1;
    p->lifetime_years = 4;
    p->pue = 1;
    p->cpu_w = 10;
    p->mem_w = 0.392;
    p->assumed_util = 1;
    p->idle_util = 0.05;
    p->idle_after_ms = 10 * 60 * 1000;
}

static const char *const pricing_keys[] = {
    "currency", "defaultCu", "overhead", "lifetimeYears", "electricity",
    "gpuModels", "cpu", "memory", "energy", "carbon", "idle", NULL};
static const char *const elec_keys[] = {"pricePerKWh", "pue", NULL};
static const char *const model_keys[] = {"cu", "price", "lifetimeYears",
                                         "idleWatts", "tdpWatts", NULL};
static const char *const cpu_keys[] = {"cu", "pricePerCoreHour", "wattsPerCore", NULL};
static const char *const mem_keys[] = {"cu", "pricePerGiBHour", "wattsPerGiB", NULL};
static const char *const energy_keys[] = {"assumedUtilisation", NULL};
static const char *const carbon_keys[] = {"intensity", "sites", NULL};
static const char *const site_keys[] = {"intensity", "nodes", NULL};
static const char *const idle_keys[] = {"utilisation", "after", NULL};

static int parse_model(const json_t *v, const char *p, struct sl_pricing_model *m,
                       struct sl_error *err)
{
    int rc;

    if ((rc = sl_jf_check_keys(v, p, model_keys, err)) < 0 ||
        (rc = get_num(v, "cu", p, 0, 1e6, &m->cu, &m->has_cu, err)) < 0 ||
        (rc = get_num(v, "price", p, 0, AMOUNT_MAX, &m->price, &m->has_price, err)) < 0 ||
        (rc = get_num(v, "lifetimeYears", p, 0.1, 100, &m->lifetime_years,
                      &m->has_lifetime, err)) < 0 ||
        (rc = get_num(v, "idleWatts", p, 0, 1e5, &m->idle_w, &m->has_idle, err)) < 0 ||
        (rc = get_num(v, "tdpWatts", p, 0, 1e5, &m->tdp_w, &m->has_tdp, err)) < 0)
        return rc;
    if (m->has_idle && m->has_tdp && m->idle_w > m->tdp_w)
        return sl_jf_fail(err, p, "idleWatts (%g) must not exceed tdpWatts (%g)", m->idle_w,
                    m->tdp_w);
    return 0;
}

static int parse_site(const json_t *v, const char *p, struct sl_pricing_site *s,
                      struct sl_error *err)
{
    const json_t *nodes, *e;
    char q[SL_JF_PATH];
    bool has = false;
    size_t i;
    int rc;

    if ((rc = sl_jf_check_keys(v, p, site_keys, err)) < 0 ||
        (rc = get_num(v, "intensity", p, 0, 1e5, &s->intensity, &has, err)) < 0)
        return rc;
    if (!has) {
        sl_jf_path(q, p, "intensity");
        return sl_jf_fail(err, q, "is required (gCO2e per kWh; an hourly CSV refines it)");
    }
    sl_jf_path(q, p, "nodes");
    if (!(nodes = sl_jf_member(v, "nodes")))
        return sl_jf_fail(err, q, "is required (node name patterns, e.g. [\"eu-*\"])");
    if (!json_is_array(nodes) || json_array_size(nodes) == 0 ||
        json_array_size(nodes) > SL_SITE_PATTERNS)
        return sl_jf_fail(err, q, "must be a list of 1 to %d node name patterns",
                    SL_SITE_PATTERNS);
    json_array_foreach(nodes, i, e)
    {
        char r[SL_JF_PATH];
        snprintf(r, sizeof(r), "%s[%zu]", q, i);
        if (!json_is_string(e) || json_string_length(e) == 0 ||
            json_string_length(e) >= sizeof(s->nodes[0]) ||
            strlen(json_string_value(e)) != json_string_length(e))
            return sl_jf_fail(err, r, "must be a pattern of 1 to 63 characters");
        sl_strlcpy(s->nodes[i], json_string_value(e), sizeof(s->nodes[i]));
    }
    s->npatterns = (int)json_array_size(nodes);
    return 0;
}

/* spec.gpuModels 'v' at path 'q': each model's units and prices. */
static int parse_models(const json_t *v, const char *q, struct sl_pricing *p,
                        struct sl_error *err)
{
    char r[SL_JF_PATH];
    const char *k;
    const json_t *e;
    int rc;

    if (!json_is_object(v))
        return sl_jf_fail(err, q, "must be an object of GPU model: {cu, price, ...}");
    if (json_object_size(v) > SL_PRICING_MODELS)
        return sl_jf_fail(err, q, "must have at most %d models", SL_PRICING_MODELS);
    json_object_foreach((json_t *)v, k, e)
    {
        struct sl_pricing_model *m = &p->models[p->nmodels];
        sl_jf_path(r, q, k);
        if (!model_valid(k))
            return sl_jf_fail(err, r, "GPU model names must be 1 to 47 characters of "
                                      "A-Z, a-z, 0-9, '.', '_' and '-'");
        for (int i = 0; i < p->nmodels; i++)
            if (strcasecmp(p->models[i].model, k) == 0)
                return sl_jf_fail(err, r, "names the GPU model \"%s\" again (model "
                                          "names are case-insensitive)",
                                  p->models[i].model);
        memset(m, 0, sizeof(*m));
        sl_strlcpy(m->model, k, sizeof(m->model));
        if ((rc = parse_model(e, r, m, err)) < 0)
            return rc;
        p->nmodels++;
    }
    return 0;
}

/* spec.carbon 'v' at path 'q': the default intensity and the sites. */
static int parse_carbon(const json_t *v, const char *q, struct sl_pricing *p,
                        struct sl_error *err)
{
    const json_t *sites, *e;
    char r[SL_JF_PATH];
    const char *k;
    int rc;

    if ((rc = sl_jf_check_keys(v, q, carbon_keys, err)) < 0 ||
        (rc = get_num(v, "intensity", q, 0, 1e5, &p->intensity, NULL, err)) < 0)
        return rc;
    if (!(sites = sl_jf_member(v, "sites")))
        return 0;
    sl_jf_path(r, q, "sites");
    if (!json_is_object(sites))
        return sl_jf_fail(err, r, "must be an object of site: {intensity, nodes}");
    if (json_object_size(sites) > SL_PRICING_SITES)
        return sl_jf_fail(err, r, "must have at most %d sites", SL_PRICING_SITES);
    json_object_foreach((json_t *)sites, k, e)
    {
        char s[SL_JF_PATH];
        struct sl_pricing_site *site = &p->sites[p->nsites];
        sl_jf_path(s, r, k);
        if (!name_valid(k))
            return sl_jf_fail(err, s, "site names must be 1 to 63 of a-z, 0-9 and "
                                      "'-', alphanumeric at both ends");
        memset(site, 0, sizeof(*site));
        sl_strlcpy(site->name, k, sizeof(site->name));
        if ((rc = parse_site(e, s, site, err)) < 0)
            return rc;
        p->nsites++;
    }
    return 0;
}

/* spec.idle 'v' at path 'q': the utilisation below which a job is idle,
 * and for how long. */
static int parse_idle(const json_t *v, const char *q, struct sl_pricing *p,
                      struct sl_error *err)
{
    const json_t *a;
    char r[SL_JF_PATH];
    int64_t ms = -1;
    int rc;

    if ((rc = sl_jf_check_keys(v, q, idle_keys, err)) < 0 ||
        (rc = get_num(v, "utilisation", q, 0, 1, &p->idle_util, NULL, err)) < 0)
        return rc;
    if (!(a = sl_jf_member(v, "after")))
        return 0;
    sl_jf_path(r, q, "after");
    if (json_is_string(a))
        (void)sl_parse_duration_ms(json_string_value(a), &ms);
    else if (json_is_integer(a))
        ms = json_integer_value(a) * 1000;
    if (ms < 1000 || ms > 7LL * 86400000)
        return sl_jf_fail(err, r, "must be a duration from 1s to 7d (e.g. 10m)");
    p->idle_after_ms = ms;
    return 0;
}

int sl_pricing_parse(const json_t *spec, const char *P, struct sl_pricing *p,
                     struct sl_error *err)
{
    const json_t *v;
    char q[SL_JF_PATH];
    int rc;

    sl_pricing_init(p);
    if (!spec)
        return 0;
    if ((rc = sl_jf_check_keys(spec, P, pricing_keys, err)) < 0 ||
        (rc = sl_jf_get_str(spec, "currency", P, p->currency, sizeof(p->currency), false,
                      err)) < 0 ||
        (rc = get_num(spec, "defaultCu", P, 0, 1e6, &p->default_cu, NULL, err)) < 0 ||
        (rc = get_num(spec, "overhead", P, 0, 100, &p->overhead, NULL, err)) < 0 ||
        (rc = get_num(spec, "lifetimeYears", P, 0.1, 100, &p->lifetime_years, NULL,
                      err)) < 0)
        return rc;
    for (const char *c = p->currency; *c; c++)
        if (*c < 'A' || *c > 'Z') {
            sl_jf_path(q, P, "currency");
            return sl_jf_fail(err, q, "must be 1 to 7 capital letters (e.g. USD, EUR)");
        }
    if ((v = sl_jf_member(spec, "electricity"))) {
        sl_jf_path(q, P, "electricity");
        if ((rc = sl_jf_check_keys(v, q, elec_keys, err)) < 0 ||
            (rc = get_num(v, "pricePerKWh", q, 0, 1e6, &p->electricity, NULL, err)) < 0 ||
            (rc = get_num(v, "pue", q, 1, 10, &p->pue, NULL, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "gpuModels"))) {
        sl_jf_path(q, P, "gpuModels");
        if ((rc = parse_models(v, q, p, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "cpu"))) {
        sl_jf_path(q, P, "cpu");
        if ((rc = sl_jf_check_keys(v, q, cpu_keys, err)) < 0 ||
            (rc = get_num(v, "cu", q, 0, 1e6, &p->cpu_cu, NULL, err)) < 0 ||
            (rc = get_num(v, "pricePerCoreHour", q, 0, AMOUNT_MAX, &p->cpu_price, NULL,
                          err)) < 0 ||
            (rc = get_num(v, "wattsPerCore", q, 0, 1e4, &p->cpu_w, NULL, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "memory"))) {
        sl_jf_path(q, P, "memory");
        if ((rc = sl_jf_check_keys(v, q, mem_keys, err)) < 0 ||
            (rc = get_num(v, "cu", q, 0, 1e6, &p->mem_cu, NULL, err)) < 0 ||
            (rc = get_num(v, "pricePerGiBHour", q, 0, AMOUNT_MAX, &p->mem_price, NULL,
                          err)) < 0 ||
            (rc = get_num(v, "wattsPerGiB", q, 0, 1e3, &p->mem_w, NULL, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "energy"))) {
        sl_jf_path(q, P, "energy");
        if ((rc = sl_jf_check_keys(v, q, energy_keys, err)) < 0 ||
            (rc = get_num(v, "assumedUtilisation", q, 0, 1, &p->assumed_util, NULL,
                          err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "carbon"))) {
        sl_jf_path(q, P, "carbon");
        if ((rc = parse_carbon(v, q, p, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "idle"))) {
        sl_jf_path(q, P, "idle");
        if ((rc = parse_idle(v, q, p, err)) < 0)
            return rc;
    }
    return 0;
}

static bool put(json_t *o, const char *k, json_t *v)
{
    return v && json_object_set_new(o, k, v) == 0;
}

json_t *sl_pricing_json(const struct sl_pricing *p)
{
    json_t *o = json_object(), *models = json_object(), *sites = json_object();
    char after[48];
    bool good = o && models && sites;

    for (int i = 0; good && i < p->nmodels; i++) {
        const struct sl_pricing_model *m = &p->models[i];
        json_t *mo = json_object();
        good = mo && (!m->has_cu || put(mo, "cu", json_real(m->cu))) &&
               (!m->has_price || put(mo, "price", json_real(m->price))) &&
               (!m->has_lifetime ||
                put(mo, "lifetimeYears", json_real(m->lifetime_years))) &&
               (!m->has_idle || put(mo, "idleWatts", json_real(m->idle_w))) &&
               (!m->has_tdp || put(mo, "tdpWatts", json_real(m->tdp_w))) &&
               put(models, m->model, mo);
        if (!good)
            json_decref(mo);
    }
    for (int i = 0; good && i < p->nsites; i++) {
        const struct sl_pricing_site *s = &p->sites[i];
        json_t *nodes = json_array();
        for (int k = 0; nodes && k < s->npatterns; k++)
            json_array_append_new(nodes, json_string(s->nodes[k]));
        good = put(sites, s->name,
                   json_pack("{s:f, s:o}", "intensity", s->intensity, "nodes", nodes));
    }
    sl_fmt_duration(p->idle_after_ms, after, sizeof(after));
    good = good && put(o, "currency", json_string(p->currency)) &&
           put(o, "defaultCu", json_real(p->default_cu)) &&
           put(o, "overhead", json_real(p->overhead)) &&
           put(o, "lifetimeYears", json_real(p->lifetime_years)) &&
           put(o, "electricity", json_pack("{s:f, s:f}", "pricePerKWh", p->electricity,
                                           "pue", p->pue)) &&
           put(o, "gpuModels", json_incref(models)) &&
           put(o, "cpu", json_pack("{s:f, s:f, s:f}", "cu", p->cpu_cu,
                                   "pricePerCoreHour", p->cpu_price, "wattsPerCore",
                                   p->cpu_w)) &&
           put(o, "memory", json_pack("{s:f, s:f, s:f}", "cu", p->mem_cu,
                                      "pricePerGiBHour", p->mem_price, "wattsPerGiB",
                                      p->mem_w)) &&
           put(o, "energy", json_pack("{s:f}", "assumedUtilisation", p->assumed_util)) &&
           put(o, "carbon", json_pack("{s:f, s:O}", "intensity", p->intensity, "sites",
                                      sites)) &&
           put(o, "idle", json_pack("{s:f, s:s}", "utilisation", p->idle_util, "after",
                                    after));
    json_decref(models);
    json_decref(sites);
    if (!good) {
        json_decref(o);
        errno = ENOMEM;
        return NULL;
    }
    return o;
}

void sl_pricing_model_rates(const struct sl_pricing *p, const char *model,
                            struct sl_model_rates *out)
{
    const struct sl_pricing_model *m = NULL;
    double life = p->lifetime_years, price = 0;

    for (int i = 0; model && i < p->nmodels; i++)
        if (strcasecmp(p->models[i].model, model) == 0)
            m = &p->models[i];
    sl_gpu_power_default(model, &out->idle_w, &out->tdp_w);
    out->cu = p->default_cu;
    if (m) {
        if (m->has_cu)
            out->cu = m->cu;
        if (m->has_price)
            price = m->price;
        if (m->has_lifetime)
            life = m->lifetime_years;
        if (m->has_idle)
            out->idle_w = m->idle_w;
        if (m->has_tdp)
            out->tdp_w = m->tdp_w;
        if (out->idle_w > out->tdp_w)
            out->idle_w = out->tdp_w;
    }
    out->hw_per_hour = price * p->overhead / (life * HOURS_PER_YEAR);
}

const char *sl_pricing_site(const struct sl_pricing *p, const char *node,
                            double *intensity)
{
    for (int i = 0; node && i < p->nsites; i++)
        for (int k = 0; k < p->sites[i].npatterns; k++)
            if (fnmatch(p->sites[i].nodes[k], node, 0) == 0) {
                *intensity = p->sites[i].intensity;
                return p->sites[i].name;
            }
    *intensity = p->intensity;
    return "";
}

/* ---- Budget ----------------------------------------------------------- */

static const char *const budget_keys[] = {"team", "period", "gpuHours", "cu",
                                          "cost", "action", NULL};
static const char *const period_names[] = {"day", "week", "month"};
static const char *const unit_names[] = {"gpuHours", "cu", "cost"};
static const char *const action_names[] = {"block", "demote"};

const char *sl_budget_unit_name(int u)
{
    return u >= 0 && u < 3 ? unit_names[u] : "?";
}
const char *sl_budget_period_name(int p)
{
    return p >= 0 && p < 3 ? period_names[p] : "?";
}
const char *sl_budget_action_name(int a)
{
    return a >= 0 && a < 2 ? action_names[a] : "?";
}

static int get_choice(const json_t *obj, const char *key, const char *parent,
                      const char *const *names, int n, int *out,
                      struct sl_error *err)
{
    const json_t *v = sl_jf_member(obj, key);
    char p[SL_JF_PATH], list[96] = "";

    if (!v)
        return 0;
    for (int i = 0; i < n; i++)
        if (json_is_string(v) && strcmp(json_string_value(v), names[i]) == 0) {
            *out = i;
            return 0;
        }
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", names[i]);
    }
    sl_jf_path(p, parent, key);
    return sl_jf_fail(err, p, "must be one of %s", list);
}

int sl_budget_parse(const json_t *spec, const char *P, struct sl_budget *b,
                    struct sl_error *err)
{
    char q[SL_JF_PATH];
    int given = 0, rc;

    b->team[0] = '\0';
    b->period = SL_PERIOD_MONTH;
    b->unit = -1;
    b->limit = 0;
    b->action = SL_BUDGET_BLOCK;
    if (!spec)
        return sl_jf_fail(err, P, "is required: {team, period, gpuHours | cu | cost, action}");
    if ((rc = sl_jf_check_keys(spec, P, budget_keys, err)) < 0 ||
        (rc = sl_jf_get_str(spec, "team", P, b->team, sizeof(b->team), true, err)) < 0 ||
        (rc = get_choice(spec, "period", P, period_names, 3, &b->period, err)) < 0 ||
        (rc = get_choice(spec, "action", P, action_names, 2, &b->action, err)) < 0)
        return rc;
    if (!name_valid(b->team)) {
        sl_jf_path(q, P, "team");
        return sl_jf_fail(err, q, "must be a team name");
    }
    for (int u = 0; u < 3; u++) {
        bool has = false;
        double v = 0;
        if ((rc = get_num(spec, unit_names[u], P, 0, AMOUNT_MAX, &v, &has, err)) < 0)
            return rc;
        if (!has)
            continue;
        sl_jf_path(q, P, unit_names[u]);
        if (v <= 0)
            return sl_jf_fail(err, q, "must be more than 0");
        given++;
        b->unit = u;
        b->limit = v;
    }
    if (given != 1)
        return sl_jf_fail(err, P, "must give exactly one limit: gpuHours, cu or cost");
    return 0;
}

json_t *sl_budget_json(const struct sl_budget *b)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "team", b->team, "period",
                          sl_budget_period_name(b->period), "action",
                          sl_budget_action_name(b->action));

    if (o && json_object_set_new(o, sl_budget_unit_name(b->unit), json_real(b->limit)) < 0) {
        json_decref(o);
        o = NULL;
    }
    if (!o)
        errno = ENOMEM;
    return o;
}

/* ---- periods ---------------------------------------------------------- */

int64_t sl_period_start(int period, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    if (period == SL_PERIOD_WEEK)
        tm.tm_mday -= (tm.tm_wday + 6) % 7; /* back to Monday */
    else if (period == SL_PERIOD_MONTH)
        tm.tm_mday = 1;
    return (int64_t)timegm(&tm) * 1000;
}

int64_t sl_period_next(int period, int64_t start_ms)
{
    time_t t = (time_t)(start_ms / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    if (period == SL_PERIOD_DAY)
        tm.tm_mday += 1;
    else if (period == SL_PERIOD_WEEK)
        tm.tm_mday += 7;
    else
        tm.tm_mon += 1;
    return (int64_t)timegm(&tm) * 1000;
}
