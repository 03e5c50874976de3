/*
 * metrics.c - the /metrics exposition and the API's request counters.
 * See metrics.h and docs/api-contract.md for the families.
 *
 * Invariants:
 *  - Label sets are bounded: a route is a pattern of the route table (or
 *    "other"), a method one of a fixed list (or "other"), a code a status
 *    from 100 to 599 (or "other"); the counter table never grows.
 *  - A scrape copies the counters under 'mu' and formats without it; the
 *    engine's figures come from one short copy under the engine's lock.
 */
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../http/tls.h"
#include "../util/prom.h"

#define MAX_SLOTS 64        /* distinct route patterns, plus "other" */
#define COUNTER_SLOTS 1024  /* (route, method, code) label sets; power of two */

/* Upper bounds, in seconds, of the request duration histogram. */
static const double http_bounds_s[] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10,
};
#define HTTP_BUCKETS ((int)SL_ARRAY_LEN(http_bounds_s))

/* Methods counted by name; any other is "other" (the last entry). */
static const char *const methods[] = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other",
};
#define METHOD_OTHER ((int)SL_ARRAY_LEN(methods) - 1)

struct counter {
    uint32_t key;           /* 0 = empty, else pack() + 1 */
    uint64_t n;
};

struct route_hist {
    uint64_t buckets[HTTP_BUCKETS + 1];
    uint64_t sum_ns;
};

struct sl_api_metrics {
    const char *version;                /* borrowed */
    int64_t start_ms;                   /* wall clock at creation */
    int nrows;
    int *slot_of_row;                   /* owned, nrows: row -> slot */
    const char *slot_name[MAX_SLOTS];   /* borrowed patterns; last used
                                           one is "other" */
    int nslots;                         /* including "other" */
    pthread_mutex_t mu;                 /* guards what follows */
    struct counter counters[COUNTER_SLOTS];
    uint64_t overflow;                  /* label sets past the table */
    struct route_hist hist[MAX_SLOTS];
};

struct sl_api_metrics *sl_api_metrics_create(const char *const *patterns, int n,
                                             const char *version)
{
    struct sl_api_metrics *m = calloc(1, sizeof(*m));

    if (!m || n < 0 || !(m->slot_of_row = calloc(n > 0 ? (size_t)n : 1, sizeof(int)))) {
        free(m);
        errno = ENOMEM;
        return NULL;
    }
    m->version = version;
    m->start_ms = sl_now_ms();
    m->nrows = n;
    for (int r = 0; r < n; r++) {
        int s = 0;
        while (s < m->nslots && strcmp(m->slot_name[s], patterns[r]) != 0)
            s++;
        if (s == m->nslots && m->nslots < MAX_SLOTS - 1)
            m->slot_name[m->nslots++] = patterns[r];
        /* A table with more patterns than MAX_SLOTS - 1 counts the rest
         * as "other"; it is set once all rows are seen. */
        m->slot_of_row[r] = s < m->nslots ? s : -1;
    }
    m->slot_name[m->nslots++] = "other";
    for (int r = 0; r < n; r++)
        if (m->slot_of_row[r] < 0)
            m->slot_of_row[r] = m->nslots - 1;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void sl_api_metrics_destroy(struct sl_api_metrics *m)
{
    int saved = errno;

    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m->slot_of_row);
    free(m);
    errno = saved;
}

static int method_index(const char *method)
{
    for (int i = 0; i < METHOD_OTHER; i++)
        if (method && strcmp(method, methods[i]) == 0)
            return i;
    return METHOD_OTHER;
}

/* (slot, method, code) in one word; code 0 = "other". */
static uint32_t pack(int slot, int method, int status)
{
    int code = status >= 100 && status <= 599 ? status : 0;
    return ((uint32_t)slot << 16) | ((uint32_t)method << 10) | (uint32_t)code;
}

void sl_api_metrics_count(struct sl_api_metrics *m, int row, const char *method,
                          int status, int64_t ns)
{
    int slot = row >= 0 && row < m->nrows ? m->slot_of_row[row] : m->nslots - 1;
    uint32_t key = pack(slot, method_index(method), status) + 1;
    uint32_t h = (key * 2654435761u) & (COUNTER_SLOTS - 1);
    struct route_hist *rh = &m->hist[slot];
    bool counted = false;

    if (ns < 0)
        ns = 0;
    pthread_mutex_lock(&m->mu);
    for (int probe = 0; probe < COUNTER_SLOTS; probe++) {
        struct counter *c = &m->counters[(h + (uint32_t)probe) & (COUNTER_SLOTS - 1)];
        if (c->key == 0)
            c->key = key;
        if (c->key == key) {
            c->n++;
            counted = true;
            break;
        }
    }
    if (!counted)
        m->overflow++;
    rh->buckets[sl_prom_bucket(http_bounds_s, HTTP_BUCKETS, (double)ns / 1e9)]++;
    rh->sum_ns += (uint64_t)ns;
    pthread_mutex_unlock(&m->mu);
}

/* ---- the exposition --------------------------------------------------- */

/* One sample line: name{labels} value, the value written by the caller's
 * choice of formatter. */
static void sample_u64(struct sl_buf *b, const char *name, int nkv,
                       const char *const *kv, uint64_t v)
{
    sl_buf_adds(b, name);
    sl_prom_labels(b, nkv, kv, NULL, NULL);
    sl_buf_printf(b, " %llu\n", (unsigned long long)v);
}

static void sample_i64(struct sl_buf *b, const char *name, int nkv,
                       const char *const *kv, int64_t v)
{
    sl_buf_adds(b, name);
    sl_prom_labels(b, nkv, kv, NULL, NULL);
    sl_buf_printf(b, " %lld\n", (long long)v);
}

static void sample_milli(struct sl_buf *b, const char *name, int nkv,
                         const char *const *kv, int64_t milli)
{
    sl_buf_adds(b, name);
    sl_prom_labels(b, nkv, kv, NULL, NULL);
    sl_buf_add(b, " ", 1);
    sl_prom_milli(b, milli);
    sl_buf_add(b, "\n", 1);
}

static void sample_double(struct sl_buf *b, const char *name, int nkv,
                          const char *const *kv, double v)
{
    sl_buf_adds(b, name);
    sl_prom_labels(b, nkv, kv, NULL, NULL);
    sl_buf_add(b, " ", 1);
    sl_prom_double(b, v);
    sl_buf_add(b, "\n", 1);
}

static void render_process(struct sl_api_metrics *m, struct sl_buf *b)
{
    const char *kv[] = {"version", m->version};

    sl_prom_family(b, "sluice_up", "gauge", "1 while sluiced answers scrapes.");
    sample_u64(b, "sluice_up", 0, NULL, 1);
    sl_prom_family(b, "sluice_build_info", "gauge",
                   "Always 1; the version of sluiced in a label.");
    sample_u64(b, "sluice_build_info", 1, kv, 1);
    sl_prom_family(b, "sluice_start_time_seconds", "gauge",
                   "When this sluiced started, in seconds since the epoch.");
    sample_milli(b, "sluice_start_time_seconds", 0, NULL, m->start_ms);
}

static void render_cluster(const struct sl_engine_metrics *em, struct sl_buf *b)
{
    int64_t gpus = 0, gpu_alloc = 0, cpu = 0, cpu_alloc = 0, mem = 0, mem_alloc = 0;
    static const enum sl_job_state finals[] = {SL_JOB_SUCCEEDED, SL_JOB_FAILED,
                                               SL_JOB_CANCELLED, SL_JOB_LOST,
                                               SL_JOB_TIMEOUT};

    for (int n = 0; n < em->nnodes; n++) {
        gpus += em->nodes[n].ngpus;
        gpu_alloc += em->nodes[n].gpu_milli_allocated;
        cpu += em->nodes[n].cpu_milli;
        cpu_alloc += em->nodes[n].cpu_milli_allocated;
        mem += em->nodes[n].mem_bytes;
        mem_alloc += em->nodes[n].mem_bytes_allocated;
    }
    sl_prom_family(b, "sluice_cluster_nodes", "gauge", "Nodes in the cluster.");
    sample_i64(b, "sluice_cluster_nodes", 0, NULL, em->nnodes);
    sl_prom_family(b, "sluice_cluster_gpus", "gauge", "GPUs in the cluster.");
    sample_i64(b, "sluice_cluster_gpus", 0, NULL, gpus);
    sl_prom_family(b, "sluice_cluster_gpus_allocated", "gauge",
                   "GPUs allocated to running jobs (fractions of GPUs count, to 0.001).");
    sample_milli(b, "sluice_cluster_gpus_allocated", 0, NULL, gpu_alloc);
    sl_prom_family(b, "sluice_cluster_cpus", "gauge", "CPUs in the cluster.");
    sample_milli(b, "sluice_cluster_cpus", 0, NULL, cpu);
    sl_prom_family(b, "sluice_cluster_cpus_allocated", "gauge",
                   "CPUs allocated to running jobs.");
    sample_milli(b, "sluice_cluster_cpus_allocated", 0, NULL, cpu_alloc);
    sl_prom_family(b, "sluice_cluster_memory_bytes", "gauge", "Memory in the cluster.");
    sample_i64(b, "sluice_cluster_memory_bytes", 0, NULL, mem);
    sl_prom_family(b, "sluice_cluster_memory_allocated_bytes", "gauge",
                   "Memory allocated to running jobs.");
    sample_i64(b, "sluice_cluster_memory_allocated_bytes", 0, NULL, mem_alloc);

    sl_prom_family(b, "sluice_jobs", "gauge", "Jobs the scheduler holds, by state.");
    {
        const char *kv[] = {"state", "Pending"};
        sample_i64(b, "sluice_jobs", 1, kv, em->jobs_pending);
        kv[1] = "Running";
        sample_i64(b, "sluice_jobs", 1, kv, em->jobs_running);
    }
    sl_prom_family(b, "sluice_jobs_finished_total", "counter",
                   "Jobs that reached a final state since sluiced started, by that state.");
    for (size_t i = 0; i < SL_ARRAY_LEN(finals); i++) {
        const char *kv[] = {"state", sl_job_state_name(finals[i])};
        sample_u64(b, "sluice_jobs_finished_total", 1, kv, em->finished[finals[i]]);
    }
}

/* Interactive sessions (docs/metering.md, "Idle but allocated"). */
static void render_sessions(const struct sl_engine_metrics *em, int attached, struct sl_buf *b)
{
    const char *kv[] = {"state", "active"};

    sl_prom_family(b, "sluice_interactive_sessions", "gauge",
                   "Running interactive jobs, by whether their GPUs are idle-but-allocated.");
    sample_i64(b, "sluice_interactive_sessions", 1, kv, em->sessions_active);
    kv[1] = "idle";
    sample_i64(b, "sluice_interactive_sessions", 1, kv, em->sessions_idle);
    sl_prom_family(b, "sluice_interactive_sessions_attached", "gauge",
                   "Interactive sessions with a client attached to their terminal.");
    sample_i64(b, "sluice_interactive_sessions_attached", 0, NULL, attached);
}

static void render_nodes(const struct sl_engine_metrics *em, struct sl_buf *b)
{
    static const struct {
        const char *name, *help;
        bool milli;
        size_t off;
    } fams[] = {
        /* family, help, value in thousandths, field */
        {"sluice_node_gpus", "GPUs of the node.", false,
         offsetof(struct sl_metrics_node, ngpus)},
        {"sluice_node_gpus_allocated", "GPUs of the node allocated to running jobs.",
         true, offsetof(struct sl_metrics_node, gpu_milli_allocated)},
        {"sluice_node_cpus", "CPUs of the node.", true,
         offsetof(struct sl_metrics_node, cpu_milli)},
        {"sluice_node_cpus_allocated", "CPUs of the node allocated to running jobs.",
         true, offsetof(struct sl_metrics_node, cpu_milli_allocated)},
        {"sluice_node_memory_bytes", "Memory of the node.", false,
         offsetof(struct sl_metrics_node, mem_bytes)},
        {"sluice_node_memory_allocated_bytes",
         "Memory of the node allocated to running jobs.", false,
         offsetof(struct sl_metrics_node, mem_bytes_allocated)},
    };

    for (size_t f = 0; f < SL_ARRAY_LEN(fams); f++) {
        sl_prom_family(b, fams[f].name, "gauge", fams[f].help);
        for (int n = 0; n < em->nnodes; n++) {
            const struct sl_metrics_node *mn = &em->nodes[n];
            const char *kv[] = {"node", mn->name, "model", mn->model};
            const char *field = (const char *)mn + fams[f].off;
            int64_t v;
            if (fams[f].off == offsetof(struct sl_metrics_node, ngpus))
                v = mn->ngpus;
            else
                memcpy(&v, field, sizeof(v));
            if (fams[f].milli)
                sample_milli(b, fams[f].name, 2, kv, v);
            else
                sample_i64(b, fams[f].name, 2, kv, v);
        }
    }
    sl_prom_family(b, "sluice_node_schedulable", "gauge",
                   "1 when the scheduler may place jobs on the node, else 0.");
    for (int n = 0; n < em->nnodes; n++) {
        const char *kv[] = {"node", em->nodes[n].name, "model", em->nodes[n].model};
        sample_u64(b, "sluice_node_schedulable", 2, kv, em->nodes[n].schedulable);
    }
}

/* The GPU sample families, each written only where some GPU has it. */
enum gpu_field { GF_UTIL, GF_MEM, GF_POWER, GF_TEMP, GF_ENERGY };

static bool gpu_has(const struct sl_gpu_sample *s, enum gpu_field f)
{
    return f == GF_UTIL ? s->has_util : f == GF_MEM ? s->has_mem
                                    : f == GF_POWER ? s->has_power
                                    : f == GF_TEMP  ? s->has_temp
                                                    : s->has_energy;
}

static double gpu_value(const struct sl_gpu_sample *s, enum gpu_field f)
{
    return f == GF_UTIL ? s->util : f == GF_MEM ? (double)s->mem_used_bytes
                                  : f == GF_POWER ? s->power_w
                                  : f == GF_TEMP  ? s->temp_c
                                                  : s->energy_j;
}

static void render_gpus(const struct sl_engine_metrics *em, struct sl_buf *b)
{
    static const struct {
        const char *name, *type, *help;
        enum gpu_field f;
    } measured[] = {
        /* family, type, help, sample field */
        {"sluice_gpu_utilization_ratio", "gauge", "Busy fraction of the GPU, 0 to 1.",
         GF_UTIL},
        {"sluice_gpu_memory_used_bytes", "gauge", "GPU memory in use.", GF_MEM},
        {"sluice_gpu_power_watts", "gauge", "Power the GPU draws.", GF_POWER},
        {"sluice_gpu_temperature_celsius", "gauge", "Temperature of the GPU.", GF_TEMP},
        {"sluice_gpu_energy_joules_total", "counter",
         "Energy the GPU used since its driver loaded (NVML's counter).", GF_ENERGY},
    };
    bool any_mem = false;

    sl_prom_family(b, "sluice_gpu_allocated_ratio", "gauge",
                   "Fraction of the GPU allocated to running jobs, 0 to 1.");
    for (int g = 0; g < em->ngpus; g++) {
        const struct sl_metrics_gpu *mg = &em->gpus[g];
        char idx[16];
        const char *kv[] = {"node", em->nodes[mg->node].name, "gpu", idx,
                            "model", mg->model, "uuid", mg->uuid};
        snprintf(idx, sizeof(idx), "%d", mg->index);
        sample_milli(b, "sluice_gpu_allocated_ratio", 4, kv, mg->milli_allocated);
        any_mem |= mg->mem_bytes > 0;
    }
    if (any_mem) {
        sl_prom_family(b, "sluice_gpu_memory_bytes", "gauge", "Memory of the GPU.");
        for (int g = 0; g < em->ngpus; g++) {
            const struct sl_metrics_gpu *mg = &em->gpus[g];
            char idx[16];
            const char *kv[] = {"node", em->nodes[mg->node].name, "gpu", idx,
                                "model", mg->model, "uuid", mg->uuid};
            if (mg->mem_bytes <= 0)
                continue;
            snprintf(idx, sizeof(idx), "%d", mg->index);
            sample_i64(b, "sluice_gpu_memory_bytes", 4, kv, mg->mem_bytes);
        }
    }
    for (size_t f = 0; f < SL_ARRAY_LEN(measured); f++) {
        bool header = false;
        for (int g = 0; g < em->ngpus; g++) {
            const struct sl_metrics_gpu *mg = &em->gpus[g];
            char idx[16];
            const char *kv[] = {"node", em->nodes[mg->node].name, "gpu", idx,
                                "model", mg->model, "uuid", mg->uuid};
            if (!gpu_has(&mg->sample, measured[f].f))
                continue;
            if (!header)
                sl_prom_family(b, measured[f].name, measured[f].type, measured[f].help);
            header = true;
            snprintf(idx, sizeof(idx), "%d", mg->index);
            sample_double(b, measured[f].name, 4, kv, gpu_value(&mg->sample, measured[f].f));
        }
    }
}

static void render_queues(const struct sl_engine_metrics *em, struct sl_buf *b)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } fams[] = {
        /* family, help, field (gpu_milli) */
        {"sluice_queue_nominal_gpus", "GPU quota of the queue (queues with one).",
         offsetof(struct sl_metrics_queue, nominal_gpu_milli)},
        {"sluice_queue_used_gpus", "GPUs held by the queue's running jobs "
         "(opportunistic ones not counted).", offsetof(struct sl_metrics_queue, used_gpu_milli)},
        {"sluice_queue_borrowed_gpus", "GPUs the queue uses beyond its quota.",
         offsetof(struct sl_metrics_queue, borrowed_gpu_milli)},
        {"sluice_queue_lent_gpus", "GPUs of the queue's unused quota in use by others.",
         offsetof(struct sl_metrics_queue, lent_gpu_milli)},
    };

    for (size_t f = 0; f < SL_ARRAY_LEN(fams); f++) {
        sl_prom_family(b, fams[f].name, "gauge", fams[f].help);
        for (int i = 0; i < em->nqueues; i++) {
            const struct sl_metrics_queue *q = &em->queues[i];
            const char *kv[] = {"queue", q->name, "team", q->team, "cohort", q->cohort};
            int64_t v;
            memcpy(&v, (const char *)q + fams[f].off, sizeof(v));
            if (v >= 0)
                sample_milli(b, fams[f].name, 3, kv, v);
        }
    }
    sl_prom_family(b, "sluice_queue_jobs", "gauge", "Jobs of the queue, by state.");
    for (int i = 0; i < em->nqueues; i++) {
        const struct sl_metrics_queue *q = &em->queues[i];
        const char *kv[] = {"queue", q->name, "team", q->team, "cohort", q->cohort,
                            "state", "Pending"};
        sample_i64(b, "sluice_queue_jobs", 4, kv, q->pending);
        kv[7] = "Running";
        sample_i64(b, "sluice_queue_jobs", 4, kv, q->running);
    }
}

static void render_meter(const struct sl_engine_metrics *em, struct sl_buf *b)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } fams[] = {
        /* family, help, field (double) */
        {"sluice_team_gpu_seconds_total",
         "GPU-seconds held by the team's jobs since sluiced started (fractions "
         "weighted by milli).", offsetof(struct sl_metrics_team, gpu_seconds)},
        {"sluice_team_cu_total", "Compute units (kind: Pricing) used by the team since "
         "sluiced started.", offsetof(struct sl_metrics_team, cu)},
        {"sluice_team_cost_total", "Cost of the team's jobs since sluiced started, in "
         "the Pricing's currency, at the estimate (reports use measured energy).",
         offsetof(struct sl_metrics_team, cost)},
        {"sluice_team_energy_joules_total", "Energy of the team's jobs since sluiced "
         "started, at the estimate.", offsetof(struct sl_metrics_team, energy_j)},
    };

    for (size_t f = 0; f < SL_ARRAY_LEN(fams); f++) {
        sl_prom_family(b, fams[f].name, "counter", fams[f].help);
        for (int i = 0; i < em->nteams; i++) {
            const char *kv[] = {"team", em->teams[i].name};
            double v;
            memcpy(&v, (const char *)&em->teams[i] + fams[f].off, sizeof(v));
            sample_double(b, fams[f].name, 1, kv, v);
        }
    }
    sl_prom_family(b, "sluice_budget_used", "gauge",
                   "Use of each budget this period, in its unit.");
    for (int i = 0; i < em->nbudgets; i++) {
        const char *kv[] = {"budget", em->budgets[i].name, "team", em->budgets[i].team,
                            "unit", em->budgets[i].unit};
        sample_double(b, "sluice_budget_used", 3, kv, em->budgets[i].used);
    }
    sl_prom_family(b, "sluice_budget_limit", "gauge", "Each budget's limit, in its unit.");
    for (int i = 0; i < em->nbudgets; i++) {
        const char *kv[] = {"budget", em->budgets[i].name, "team", em->budgets[i].team,
                            "unit", em->budgets[i].unit};
        sample_double(b, "sluice_budget_limit", 3, kv, em->budgets[i].limit);
    }
}

static void render_scheduler(const struct sl_engine_metrics *em, struct sl_buf *b)
{
    sl_prom_family(b, "sluice_scheduler_pass_seconds", "histogram",
                   "Duration of each scheduling pass.");
    sl_prom_histogram(b, "sluice_scheduler_pass_seconds", 0, NULL, sl_engine_pass_bounds_s,
                      SL_ENGINE_PASS_BUCKETS, em->pass, (double)em->pass_ns / 1e9);
    sl_prom_family(b, "sluice_scheduler_placements_total", "counter",
                   "Jobs the scheduler placed (started).");
    sample_u64(b, "sluice_scheduler_placements_total", 0, NULL, em->placements);
    sl_prom_family(b, "sluice_scheduler_preemptions_total", "counter",
                   "Running jobs the scheduler preempted.");
    sample_u64(b, "sluice_scheduler_preemptions_total", 0, NULL, em->preemptions);
}

static void render_http(struct sl_api_metrics *m, struct sl_buf *b)
{
    struct counter *counters = malloc(sizeof(m->counters));
    struct route_hist *hist = malloc(sizeof(m->hist));
    uint64_t overflow;

    if (!counters || !hist) {
        free(counters);
        free(hist);
        b->failed = true;
        return;
    }
    pthread_mutex_lock(&m->mu);
    memcpy(counters, m->counters, sizeof(m->counters));
    memcpy(hist, m->hist, sizeof(m->hist));
    overflow = m->overflow;
    pthread_mutex_unlock(&m->mu);

    sl_prom_family(b, "sluice_http_requests_total", "counter",
                   "HTTP requests answered, by route pattern, method and status.");
    for (int i = 0; i < COUNTER_SLOTS; i++) {
        uint32_t key = counters[i].key - 1;
        int slot = (int)(key >> 16), method = (int)((key >> 10) & 63), code = (int)(key & 1023);
        char code_s[8];
        const char *kv[6];
        if (!counters[i].key || slot >= m->nslots || method > METHOD_OTHER)
            continue;
        kv[0] = "method";
        kv[1] = methods[method];
        kv[2] = "route";
        kv[3] = m->slot_name[slot];
        kv[4] = "code";
        kv[5] = code_s;
        if (code)
            snprintf(code_s, sizeof(code_s), "%d", code);
        else
            snprintf(code_s, sizeof(code_s), "other");
        sample_u64(b, "sluice_http_requests_total", 3, kv, counters[i].n);
    }
    if (overflow) {
        const char *kv[] = {"method", "other", "route", "other", "code", "other"};
        sample_u64(b, "sluice_http_requests_total", 3, kv, overflow);
    }
    sl_prom_family(b, "sluice_http_request_duration_seconds", "histogram",
                   "Time from a complete request to its answer, by route pattern.");
    for (int s = 0; s < m->nslots; s++) {
        const char *kv[] = {"route", m->slot_name[s]};
        uint64_t total = 0;
        for (int k = 0; k <= HTTP_BUCKETS; k++)
            total += hist[s].buckets[k];
        if (total)
            sl_prom_histogram(b, "sluice_http_request_duration_seconds", 1, kv,
                              http_bounds_s, HTTP_BUCKETS, hist[s].buckets,
                              (double)hist[s].sum_ns / 1e9);
    }
    free(counters);
    free(hist);
}

/* TLS handshakes of the API server (src/http/tls.c; 0 without TLS). */
static void render_tls(struct sl_buf *b)
{
    uint64_t done, failed;

    sl_tls_counts(&done, &failed);
    sl_prom_family(b, "sluice_tls_handshakes_total", "counter",
                   "TLS handshakes the API server completed.");
    sample_u64(b, "sluice_tls_handshakes_total", 0, NULL, done);
    sl_prom_family(b, "sluice_tls_handshake_failures_total", "counter",
                   "TLS handshakes that failed (a protocol, cipher or client "
                   "certificate refused, a peer that was not speaking TLS).");
    sample_u64(b, "sluice_tls_handshake_failures_total", 0, NULL, failed);
}

int sl_api_metrics_render(struct sl_api_metrics *m, struct sl_engine *e, int attached,
                          struct sl_buf *b)
{
    struct sl_engine_metrics em;
    int rc = sl_engine_metrics(e, &em);

    if (rc == 0) {
        render_process(m, b);
        render_cluster(&em, b);
        render_sessions(&em, attached, b);
        render_nodes(&em, b);
        render_gpus(&em, b);
        render_queues(&em, b);
        render_meter(&em, b);
        render_scheduler(&em, b);
        render_http(m, b);
        render_tls(b);
    }
    sl_engine_metrics_fini(&em);
    return rc < 0 ? rc : b->failed ? -ENOMEM : 0;
}
