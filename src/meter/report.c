/*
 * report.c - figures of ledger intervals, usage reports grouped by a key
 * and period, and the utilisation report with its conservation check.
 * See meter.h.
 */
#include "meter.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_PER_HOUR 3600000.0
#define J_PER_KWH 3600000.0
#define GIB (1024.0 * 1024.0 * 1024.0)

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static const struct sl_carbon_hours *hours_of(const struct sl_carbon_hours *h, size_t n,
                                              const char *site)
{
    for (size_t i = 0; h && i < n; i++)
        if (strcmp(h[i].site, site) == 0)
            return &h[i];
    return NULL;
}

/* kg CO2e of 'kwh' spread evenly over [s, e) at 'site'. */
static double carbon_kg(double kwh, int64_t s, int64_t e, double fixed,
                        const struct sl_carbon_hours *h)
{
    double g = 0;

    if (e <= s)
        return 0;
    if (!h || h->n == 0)
        return kwh * fixed / 1000;
    for (int64_t t = s; t < e;) {
        int64_t idx = (t - h->start_ms) >= 0 ? (t - h->start_ms) / 3600000
                                             : -1 - (h->start_ms - t - 1) / 3600000;
        int64_t hour_end = h->start_ms + (idx + 1) * 3600000;
        int64_t seg_end = min64(hour_end, e);
        double gi = fixed;
        if (idx >= 0 && (size_t)idx < h->n && !isnan(h->g[idx]))
            gi = h->g[idx];
        g += (double)(seg_end - t) / (double)(e - s) * gi;
        t = seg_end;
    }
    return kwh * g / 1000;
}

void sl_usage_figures(const struct sl_pricing *p, const struct sl_usage_row *r,
                      int64_t from_ms, int64_t to_ms, int64_t now_ms,
                      const struct sl_carbon_hours *hourly, size_t nhourly,
                      struct sl_usage_fig *out)
{
    int64_t end = r->end_ms ? r->end_ms : max64(now_ms, r->start_ms);
    int64_t s = max64(r->start_ms, from_ms), e = min64(end, to_ms);
    double frac, share, gpu_kwh, cpu_kwh, mem_kwh, intensity, pue = p->pue;
    struct sl_model_rates mr;
    const char *site;

    memset(out, 0, sizeof(*out));
    if (e <= s)
        return;
    frac = end > r->start_ms ? (double)(e - s) / (double)(end - r->start_ms) : 0;
    out->hours = (double)(e - s) / MS_PER_HOUR;
    share = r->ngpus > 0 ? (double)r->gpu_milli / 1000.0 : 0;
    out->gpu_hours = r->ngpus * share * out->hours;
    out->core_hours = (double)r->cpu_milli / 1000.0 * out->hours;
    out->gib_hours = (double)r->mem_bytes / GIB * out->hours;
    if (r->idle_ms > 0 && end > r->start_ms) {
        double idle = (double)min64(r->idle_ms, end - r->start_ms);
        out->unused_gpu_hours = r->ngpus * share * idle * frac / MS_PER_HOUR;
    }
    sl_pricing_model_rates(p, r->gpu_model, &mr);
    out->cu = out->gpu_hours * mr.cu + out->core_hours * p->cpu_cu +
              out->gib_hours * p->mem_cu;
    if (r->gpu_energy_measured) {
        gpu_kwh = r->gpu_energy_j * frac / J_PER_KWH;
    } else {
        double u = r->has_util ? r->util : p->assumed_util;
        gpu_kwh = out->gpu_hours * (mr.idle_w + (mr.tdp_w - mr.idle_w) * u) / 1000;
    }
    if (r->cpu_energy_measured)
        cpu_kwh = r->cpu_energy_j * frac / J_PER_KWH;
    else
        cpu_kwh = out->core_hours * p->cpu_w / 1000;
    mem_kwh = out->gib_hours * p->mem_w / 1000;
    out->energy_kwh = gpu_kwh + cpu_kwh + mem_kwh;
    out->energy_measured_kwh = (r->gpu_energy_measured ? gpu_kwh : 0) +
                               (r->cpu_energy_measured ? cpu_kwh : 0);
    out->measured = r->ngpus > 0 ? r->gpu_energy_measured : r->cpu_energy_measured;
    out->cost = out->gpu_hours * mr.hw_per_hour + out->core_hours * p->cpu_price +
                out->gib_hours * p->mem_price + out->energy_kwh * pue * p->electricity;
    site = sl_pricing_site(p, r->node, &intensity);
    out->co2_kg = carbon_kg(out->energy_kwh * pue, s, e, intensity,
                            hours_of(hourly, nhourly, site));
}

/* ---- grouped reports --------------------------------------------------- */

static const char *const by_names[] = {"team", "project", "user", "queue",
                                       "gpu-model", "node", "job"};

int sl_report_by_parse(const char *s)
{
    for (size_t i = 0; s && i < SL_ARRAY_LEN(by_names); i++)
        if (strcmp(s, by_names[i]) == 0)
            return (int)i;
    return -EINVAL;
}

const char *sl_report_by_name(int by)
{
    return by >= 0 && (size_t)by < SL_ARRAY_LEN(by_names) ? by_names[by] : "?";
}

struct group {
    char *key;
    int64_t period;               /* start ms, or 0 */
    int64_t jobs, last_job;
    int64_t idle_jobs, last_idle_job; /* flagged idle-but-allocated */
    struct sl_usage_fig sum;
    bool all_measured;
    double idle_share;
};

struct sl_report {
    struct sl_pricing p;
    int by, period;
    int64_t from_ms, to_ms, now_ms;
    bool shared;
    struct group *g;
    size_t n, cap;
    size_t *slot;                 /* open addressing: index + 1; 0 = empty */
    size_t nslot;
};

struct sl_report *sl_report_new(const struct sl_pricing *p, int by, int period,
                                int64_t from_ms, int64_t to_ms, int64_t now_ms)
{
    struct sl_report *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->p = *p;
    r->by = by;
    r->period = period;
    r->from_ms = from_ms;
    r->to_ms = to_ms;
    r->now_ms = now_ms;
    return r;
}

static uint64_t hash_key(const char *k, int64_t period)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)period;

    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ULL;
    return h;
}

static int grow(struct sl_report *r)
{
    size_t ns = r->nslot ? r->nslot * 2 : 64;
    size_t *slot = calloc(ns, sizeof(*slot));

    if (!slot)
        return -ENOMEM;
    for (size_t i = 0; i < r->n; i++) {
        size_t h = hash_key(r->g[i].key, r->g[i].period) & (ns - 1);
        while (slot[h])
            h = (h + 1) & (ns - 1);
        slot[h] = i + 1;
    }
    free(r->slot);
    r->slot = slot;
    r->nslot = ns;
    return 0;
}

static struct group *group_get(struct sl_report *r, const char *key, int64_t period)
{
    size_t h;

    if ((r->n + 1) * 2 > r->nslot && grow(r) < 0)
        return NULL;
    h = hash_key(key, period) & (r->nslot - 1);
    for (; r->slot[h]; h = (h + 1) & (r->nslot - 1)) {
        struct group *g = &r->g[r->slot[h] - 1];
        if (g->period == period && strcmp(g->key, key) == 0)
            return g;
    }
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 32;
        struct group *ng = realloc(r->g, nc * sizeof(*ng));
        if (!ng)
            return NULL;
        r->g = ng;
        r->cap = nc;
    }
    memset(&r->g[r->n], 0, sizeof(r->g[r->n]));
    if (!(r->g[r->n].key = strdup(key)))
        return NULL;
    r->g[r->n].period = period;
    r->g[r->n].last_job = -1;
    r->g[r->n].last_idle_job = -1;
    r->g[r->n].all_measured = true;
    r->slot[h] = ++r->n;
    return &r->g[r->n - 1];
}

static void fig_add(struct sl_usage_fig *a, const struct sl_usage_fig *b)
{
    a->hours += b->hours;
    a->gpu_hours += b->gpu_hours;
    a->core_hours += b->core_hours;
    a->gib_hours += b->gib_hours;
    a->cu += b->cu;
    a->energy_kwh += b->energy_kwh;
    a->energy_measured_kwh += b->energy_measured_kwh;
    a->cost += b->cost;
    a->co2_kg += b->co2_kg;
    a->unused_gpu_hours += b->unused_gpu_hours;
}

int sl_report_add(struct sl_report *r, const struct sl_usage_row *row,
                  const struct sl_carbon_hours *hourly, size_t nhourly)
{
    int64_t end = row->end_ms ? row->end_ms : max64(r->now_ms, row->start_ms);
    int64_t s = max64(row->start_ms, r->from_ms), e = min64(end, r->to_ms);
    char jobkey[24];
    const char *key;

    if (e <= s)
        return 0;
    switch (r->by) {
    case SL_BY_TEAM: key = row->team; break;
    case SL_BY_PROJECT: key = row->project; break;
    case SL_BY_USER: key = row->user; break;
    case SL_BY_QUEUE: key = row->queue; break;
    case SL_BY_GPU_MODEL: key = row->gpu_model[0] ? row->gpu_model : "cpu"; break;
    case SL_BY_NODE: key = row->node; break;
    default:
        snprintf(jobkey, sizeof(jobkey), "%lld", (long long)row->job_id);
        key = jobkey;
        break;
    }
    if (!key)
        key = "";
    for (int64_t ps = r->period >= 0 ? sl_period_start(r->period, s) : 0; ps < e;) {
        int64_t pe = r->period >= 0 ? sl_period_next(r->period, ps) : INT64_MAX;
        struct group *g = group_get(r, key, r->period >= 0 ? ps : 0);
        struct sl_usage_fig f;
        if (!g)
            return -ENOMEM;
        sl_usage_figures(&r->p, row, max64(s, ps), min64(e, pe), r->now_ms, hourly,
                         nhourly, &f);
        fig_add(&g->sum, &f);
        if (!f.measured)
            g->all_measured = false;
        if (g->last_job != row->job_id) {
            g->last_job = row->job_id;
            g->jobs++;
        }
        if (row->idle && g->last_idle_job != row->job_id) {
            g->last_idle_job = row->job_id;
            g->idle_jobs++;
        }
        if (r->period < 0)
            break;
        ps = pe;
    }
    return 0;
}

void sl_report_share_idle(struct sl_report *r, double idle_cost)
{
    double total = 0;

    for (size_t i = 0; i < r->n; i++)
        total += r->g[i].sum.cost;
    r->shared = true;
    for (size_t i = 0; i < r->n; i++)
        r->g[i].idle_share = total > 0 ? idle_cost * r->g[i].sum.cost / total : 0;
}

static int group_cmp(const void *a, const void *b)
{
    const struct group *x = a, *y = b;

    if (x->period != y->period)
        return x->period < y->period ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Figures go out at full precision: display rounds, sums stay exact. */
static json_t *num(double v, int d)
{
    (void)d;
    return json_real(v);
}

json_t *sl_report_json(const struct sl_report *r)
{
    json_t *arr = json_array();

    if (!arr)
        return NULL;
    if (r->n) /* an empty report has no array at all */
        qsort(r->g, r->n, sizeof(*r->g), group_cmp);
    for (size_t i = 0; i < r->n; i++) {
        const struct group *g = &r->g[i];
        const struct sl_usage_fig *f = &g->sum;
        json_t *o = json_object();
        char ts[40];
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
        json_object_set_new(o, "key", json_string(g->key));
        if (r->period >= 0) {
            sl_time_rfc3339(g->period, ts, sizeof(ts));
            json_object_set_new(o, "period", json_string(ts));
        }
        json_object_set_new(o, "jobs", json_integer(g->jobs));
        json_object_set_new(o, "gpu_hours", num(f->gpu_hours, 6));
        json_object_set_new(o, "cu", num(f->cu, 6));
        json_object_set_new(o, "core_hours", num(f->core_hours, 6));
        json_object_set_new(o, "gib_hours", num(f->gib_hours, 6));
        json_object_set_new(o, "energy_kwh", num(f->energy_kwh, 6));
        json_object_set_new(o, "energy_measured", json_boolean(g->all_measured));
        json_object_set_new(o, "energy_measured_kwh", num(f->energy_measured_kwh, 6));
        json_object_set_new(o, "cost", num(f->cost, 6));
        if (r->shared) {
            json_object_set_new(o, "idle_cost_share", num(g->idle_share, 6));
            json_object_set_new(o, "chargeback", num(f->cost + g->idle_share, 6));
        }
        json_object_set_new(o, "co2_kg", num(f->co2_kg, 6));
        json_object_set_new(o, "unused_gpu_hours", num(f->unused_gpu_hours, 6));
        json_object_set_new(o, "idle_jobs", json_integer(g->idle_jobs));
        json_object_set_new(o, "currency", json_string(r->p.currency));
    }
    return arr;
}

void sl_report_free(struct sl_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->g[i].key);
    free(r->g);
    free(r->slot);
    free(r);
}

/* ---- utilisation -------------------------------------------------------- */

struct seg { int64_t s, e; int milli; };

struct ugpu {
    struct seg *seg;
    size_t n, cap;
};

/* The GPUs of one model on one node (a node with two models has two). */
struct unode {
    char name[64], model[48];
    int ngpus;
    uint64_t mask;                /* the node's GPU indices of this model */
    bool declared;
    struct ugpu gpu[64];
    double alloc_ms_milli;        /* sum of milli x ms */
    double unused_ms_milli;       /* flagged idle-but-allocated */
};

struct sl_util_report {
    struct sl_pricing p;
    int64_t from_ms, to_ms, now_ms;
    struct unode *nodes;
    size_t n, cap;
    bool swept;
};

struct sl_util_report *sl_util_report_new(const struct sl_pricing *p, int64_t from_ms,
                                          int64_t to_ms, int64_t now_ms)
{
    struct sl_util_report *u = calloc(1, sizeof(*u));

    if (!u)
        return NULL;
    u->p = *p;
    u->from_ms = from_ms;
    u->to_ms = to_ms > from_ms ? to_ms : from_ms;
    u->now_ms = now_ms;
    return u;
}

static struct unode *unode_find(struct sl_util_report *u, const char *name,
                                const char *model)
{
    for (size_t i = 0; i < u->n; i++)
        if (strcmp(u->nodes[i].name, name) == 0 &&
            strcmp(u->nodes[i].model, model ? model : "") == 0)
            return &u->nodes[i];
    return NULL;
}

static struct unode *unode_add(struct sl_util_report *u, const char *name,
                               const char *model, bool declared)
{
    struct unode *n;

    if (u->n == u->cap) {
        size_t nc = u->cap ? u->cap * 2 : 16;
        struct unode *nn = realloc(u->nodes, nc * sizeof(*nn));
        if (!nn)
            return NULL;
        u->nodes = nn;
        u->cap = nc;
    }
    n = &u->nodes[u->n++];
    memset(n, 0, sizeof(*n));
    sl_strlcpy(n->name, name, sizeof(n->name));
    sl_strlcpy(n->model, model ? model : "", sizeof(n->model));
    n->declared = declared;
    return n;
}

int sl_util_report_gpu(struct sl_util_report *u, const char *node, const char *model,
                       int index)
{
    struct unode *n = unode_find(u, node, model);

    if (index < 0 || index >= 64)
        return -EINVAL;
    if (!n && !(n = unode_add(u, node, model, true)))
        return -ENOMEM;
    if (!(n->mask & (1ULL << index))) {
        n->mask |= 1ULL << index;
        n->ngpus++;
    }
    return 0;
}

int sl_util_report_add(struct sl_util_report *u, const struct sl_usage_row *row)
{
    int64_t end = row->end_ms ? row->end_ms : max64(u->now_ms, row->start_ms);
    int64_t s = max64(row->start_ms, u->from_ms), e = min64(end, u->to_ms);
    struct unode *n;
    const char *c;

    if (e <= s || row->ngpus <= 0)
        return 0;
    if (!(n = unode_find(u, row->node, row->gpu_model)) &&
        !(n = unode_add(u, row->node, row->gpu_model, false)))
        return -ENOMEM;
    /* Each listed GPU index holds 'gpu_milli' over [s, e). */
    c = row->gpus ? row->gpus : "";
    while (*c) {
        char *endp;
        long idx = strtol(c, &endp, 10);
        struct ugpu *g;
        if (endp == c)
            break;
        c = *endp == ';' ? endp + 1 : endp;
        if (idx < 0 || idx >= 64)
            continue;
        if (!n->declared && !(n->mask & (1ULL << idx))) {
            n->mask |= 1ULL << idx; /* a node gone: its GPUs as seen used */
            n->ngpus++;
        }
        g = &n->gpu[idx];
        if (g->n == g->cap) {
            size_t nc = g->cap ? g->cap * 2 : 8;
            struct seg *ns = realloc(g->seg, nc * sizeof(*ns));
            if (!ns)
                return -ENOMEM;
            g->seg = ns;
            g->cap = nc;
        }
        g->seg[g->n++] = (struct seg){s, e, row->gpu_milli};
        n->alloc_ms_milli += (double)(e - s) * row->gpu_milli;
        if (row->idle_ms > 0 && end > row->start_ms)
            n->unused_ms_milli += (double)min64(row->idle_ms, end - row->start_ms) *
                                  (double)(e - s) / (double)(end - row->start_ms) *
                                  row->gpu_milli;
    }
    return 0;
}

struct edge { int64_t t; int d; };

static int edge_cmp(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : 0;
}

/* Free and over-committed milli-ms of one GPU over [from, to), from a
 * sweep of its segments. */
static int sweep(const struct ugpu *g, int64_t from, int64_t to, double *idle,
                 double *over)
{
    struct edge *ev = malloc((2 * g->n + 1) * sizeof(*ev));
    int64_t t = from;
    int used = 0;

    *idle = *over = 0;
    if (!ev)
        return -ENOMEM;
    for (size_t i = 0; i < g->n; i++) {
        ev[2 * i] = (struct edge){g->seg[i].s, g->seg[i].milli};
        ev[2 * i + 1] = (struct edge){g->seg[i].e, -g->seg[i].milli};
    }
    qsort(ev, 2 * g->n, sizeof(*ev), edge_cmp);
    for (size_t i = 0; i < 2 * g->n; i++) {
        double len = (double)(ev[i].t - t);
        if (used < 1000)
            *idle += len * (1000 - used);
        else
            *over += len * (used - 1000);
        t = ev[i].t;
        used += ev[i].d;
    }
    *idle += (double)(to - t) * (1000 - used);
    free(ev);
    return 0;
}

struct ufig {
    double cap, alloc, idle, over, unused, idle_cost, unused_cost;
};

static json_t *ufig_json(const struct ufig *f)
{
    const double h = MS_PER_HOUR * 1000; /* milli-ms per GPU-hour */
    double cap = f->cap / h, alloc = f->alloc / h, idle = f->idle / h;
    double diff = fabs(alloc + idle - cap);

    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}",
                     "capacity_gpu_hours", num(cap, 6), "allocated_gpu_hours",
                     num(alloc, 6), "idle_gpu_hours", num(idle, 6),
                     "overcommitted_gpu_hours", num(f->over / h, 6),
                     "allocated_unused_gpu_hours", num(f->unused / h, 6), "utilisation",
                     num(cap > 0 ? alloc / cap : 0, 6), "idle_cost", num(f->idle_cost, 6),
                     "allocated_unused_cost", num(f->unused_cost, 6), "conserved",
                     diff <= 1e-9 * (cap > 1 ? cap : 1) && f->over == 0);
}

static void ufig_add(struct ufig *a, const struct ufig *b)
{
    a->cap += b->cap;
    a->alloc += b->alloc;
    a->idle += b->idle;
    a->over += b->over;
    a->unused += b->unused;
    a->idle_cost += b->idle_cost;
    a->unused_cost += b->unused_cost;
}

/* Figures of every node, in declaration order; 'out' has u->n entries. */
static int util_figures(struct sl_util_report *u, struct ufig *out)
{
    const double h = MS_PER_HOUR * 1000;

    for (size_t i = 0; i < u->n; i++) {
        struct unode *n = &u->nodes[i];
        struct ufig *f = &out[i];
        struct sl_model_rates mr;
        double idle_rate;
        memset(f, 0, sizeof(*f));
        sl_pricing_model_rates(&u->p, n->model, &mr);
        idle_rate = mr.hw_per_hour + mr.idle_w / 1000 * u->p.pue * u->p.electricity;
        f->cap = (double)n->ngpus * 1000 * (double)(u->to_ms - u->from_ms);
        f->alloc = n->alloc_ms_milli;
        f->unused = n->unused_ms_milli;
        for (int g = 0; g < 64; g++) {
            double idle, over;
            if (!(n->mask & (1ULL << g)))
                continue;
            if (sweep(&n->gpu[g], u->from_ms, u->to_ms, &idle, &over) < 0)
                return -ENOMEM;
            f->idle += idle;
            f->over += over;
        }
        f->idle_cost = f->idle / h * idle_rate;
        f->unused_cost = f->unused / h * idle_rate;
    }
    return 0;
}

json_t *sl_util_report_json(struct sl_util_report *u)
{
    struct ufig *f = calloc(u->n ? u->n : 1, sizeof(*f)), total = {0};
    json_t *nodes = json_array(), *models = json_object(), *o = NULL;
    struct ufig *mf = calloc(u->n ? u->n : 1, sizeof(*mf));
    const char **mname = calloc(u->n ? u->n : 1, sizeof(*mname));
    size_t nm = 0;

    if (!f || !mf || !mname || !nodes || !models || util_figures(u, f) < 0)
        goto out;
    for (size_t i = 0; i < u->n; i++) {
        json_t *no = ufig_json(&f[i]);
        size_t m;
        if (!no)
            goto out;
        json_object_set_new(no, "node", json_string(u->nodes[i].name));
        json_object_set_new(no, "gpu_model", json_string(u->nodes[i].model));
        json_object_set_new(no, "gpus", json_integer(u->nodes[i].ngpus));
        json_object_set_new(no, "declared", json_boolean(u->nodes[i].declared));
        json_array_append_new(nodes, no);
        for (m = 0; m < nm; m++)
            if (strcmp(mname[m], u->nodes[i].model) == 0)
                break;
        if (m == nm)
            mname[nm++] = u->nodes[i].model;
        ufig_add(&mf[m], &f[i]);
        ufig_add(&total, &f[i]);
    }
    for (size_t m = 0; m < nm; m++)
        json_object_set_new(models, mname[m][0] ? mname[m] : "none", ufig_json(&mf[m]));
    o = json_pack("{s:O, s:O, s:o, s:s}", "nodes", nodes, "gpu_models", models,
                  "total", ufig_json(&total), "currency", u->p.currency);
out:
    free(f);
    free(mf);
    free(mname);
    json_decref(nodes);
    json_decref(models);
    return o;
}

double sl_util_report_idle_cost(struct sl_util_report *u)
{
    struct ufig *f = calloc(u->n ? u->n : 1, sizeof(*f));
    double cost = 0;

    if (f && util_figures(u, f) == 0)
        for (size_t i = 0; i < u->n; i++)
            cost += f[i].idle_cost;
    free(f);
    return cost;
}

void sl_util_report_free(struct sl_util_report *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++)
        for (int g = 0; g < 64; g++)
            free(u->nodes[i].gpu[g].seg);
    free(u->nodes);
    free(u);
}
