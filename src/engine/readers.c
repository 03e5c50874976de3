/*
 * readers.c - readers on the HTTP thread: nodes, queues, reasons and
 * explanations as JSON, and the /metrics snapshot.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../policy/policy.h"
#include "../sched/sched.h"
#include "../sim/trace.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/heap.h"
#include "../util/imap.h"

/* What is known of GPU 'g' of node 'n' beyond the scheduler's view: its
 * UUID and, where this host's meters measure it, their last sample. */
static void node_gpu_measured(struct sl_engine *e, int n, int g, json_t *o)
{
    const struct sl_node_info *ni = &e->nodes.nodes[n];
    struct sl_gpu_sample smp;

    if (ni->gpus[g].uuid[0])
        json_object_set_new(o, "uuid", json_string(ni->gpus[g].uuid));
    if (!sl_eng_node_metered(e, n) || !sl_gpumon_last(e->mon, ni->gpus[g].index, &smp))
        return;
    if (smp.has_util)
        json_object_set_new(o, "utilisation", json_real(smp.util));
    if (smp.has_mem)
        json_object_set_new(o, "mem_used_bytes", json_integer(smp.mem_used_bytes));
    if (smp.has_power)
        json_object_set_new(o, "power_w", json_real(smp.power_w));
    if (smp.has_temp)
        json_object_set_new(o, "temperature_c", json_real(smp.temp_c));
}

json_t *sl_engine_nodes_json(struct sl_engine *e)
{
    json_t *nodes = json_array();

    pthread_mutex_lock(&e->mu);
    for (int n = 0; n < sl_sched_node_count(e->sched); n++) {
        struct sl_sched_node_view v;
        json_t *gpus = json_array(), *node;
        int64_t cpu_alloc, mem_alloc;
        const struct sl_node_info *ni = n < e->nodes.n ? &e->nodes.nodes[n] : NULL;

        sl_sched_node_view(e->sched, n, &v);
        for (int g = 0; g < v.ngpus; g++) {
            json_t *jobs = json_array();
            for (size_t i = 0; i < e->nrun; i++) {
                struct job *j = e->run[i];
                bool on = false;
                for (int t = 0; j->tasks && t < j->spec->tasks && !on; t++)
                    for (int k = 0; k < j->tasks[t].ngpus; k++)
                        on |= j->tasks[t].node == n && j->tasks[t].gpus[k] == g;
                if (on)
                    json_array_append_new(jobs, json_integer(j->id));
            }
            json_t *o = json_pack("{s:i, s:s, s:I, s:i, s:o}", "index", g, "model",
                                  sl_sched_model_name(e->sched, v.gpu_model[g]), "mem_bytes",
                                  (json_int_t)(ni && g < ni->ngpus ? ni->gpus[g].mem_bytes : 0),
                                  "milli_allocated", 1000 - v.gpu_free_milli[g], "jobs",
                                  jobs);
            if (o && ni && g < ni->ngpus)
                node_gpu_measured(e, n, g, o);
            json_array_append_new(gpus, o);
        }
        cpu_alloc = v.cpu_total - v.cpu_free;
        mem_alloc = v.mem_total - v.mem_free;
        node = json_pack("{s:s, s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:s, s:o}", "name",
                         v.name, "state", ni ? sl_node_state_name(ni->state) : "up", "reason",
                         ni ? ni->reason : "", "domain", v.domain, "schedulable",
                         v.schedulable, "cpu_milli",
                         (json_int_t)v.cpu_total, "cpu_milli_allocated",
                         (json_int_t)cpu_alloc, "mem_bytes", (json_int_t)v.mem_total,
                         "mem_bytes_allocated", (json_int_t)mem_alloc, "gpu_source",
                         ni ? ni->gpu_source : "fake", "gpus", gpus);
        json_object_set_new(node, "admin", sl_eng_nodeadmin_json(e, n, v.name));
        json_array_append_new(nodes, node);
    }
    pthread_mutex_unlock(&e->mu);
    return json_pack("{s:o}", "nodes", nodes);
}

/* A resource vector as the API's resource object: gpus and cpus as numbers
 * of units, memory in bytes, gpusByModel per model; unset entries left out
 * (all of them, with 'all', shown as 0). */
static json_t *res_json(struct sl_sched *s, const struct sl_sched_res *r, bool all)
{
    json_t *o = json_object(), *by = json_object();

    if (!o || !by) {
        json_decref(o);
        json_decref(by);
        return NULL;
    }
    if (all || r->v[SL_DIM_GPU] >= 0)
        json_object_set_new(o, "gpus", json_real((double)(r->v[SL_DIM_GPU] > 0
                                                              ? r->v[SL_DIM_GPU]
                                                              : 0) / 1000));
    if (all || r->v[SL_DIM_CPU] >= 0)
        json_object_set_new(o, "cpus", json_real((double)(r->v[SL_DIM_CPU] > 0
                                                              ? r->v[SL_DIM_CPU]
                                                              : 0) / 1000));
    if (all || r->v[SL_DIM_MEM] >= 0)
        json_object_set_new(o, "memory",
                            json_integer(r->v[SL_DIM_MEM] > 0 ? r->v[SL_DIM_MEM] : 0));
    for (int m = 0; m < sl_sched_model_count(s); m++) {
        int64_t v = r->v[SL_DIM_MODEL0 + m];
        if (v > 0 || (!all && v >= 0))
            json_object_set_new(by, sl_sched_model_name(s, m), json_real((double)v / 1000));
    }
    if (json_object_size(by))
        json_object_set_new(o, "gpusByModel", by);
    else
        json_decref(by);
    return o;
}

json_t *sl_engine_queues_json(struct sl_engine *e)
{
    json_t *arr = json_array();
    int64_t now = sl_eng_now_ms(e);

    if (!arr)
        return NULL;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->nqueues; i++) {
        struct sl_sched_queue_stats st;
        if (sl_sched_queue_stats(e->sched, e->queues[i].sq, now, &st) < 0)
            continue;
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:i, s:f}",
                           "name", e->queues[i].name, "team", e->queues[i].team,
                           "cohort", e->queues[i].cohort[0] ? json_string(e->queues[i].cohort)
                                                             : json_null(),
                           "nominal", res_json(e->sched, &st.nominal, false), "used",
                           res_json(e->sched, &st.used, true), "borrowed",
                           res_json(e->sched, &st.borrowed, true), "lent",
                           res_json(e->sched, &st.lent, true), "opportunistic",
                           res_json(e->sched, &st.opportunistic, true), "pending",
                           st.pending, "running", st.running, "share", st.share));
    }
    pthread_mutex_unlock(&e->mu);
    return arr;
}

int sl_engine_job_live(struct sl_engine *e, int64_t id, struct sl_job_live *out)
{
    int64_t limit = e->cfg.interactive_idle_timeout_ms;
    const struct job *j;
    int rc = -ENOENT;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&e->mu);
    /* on the run list, which changes under e->mu (its state does not) */
    if ((j = sl_imap_get(&e->jobs, id)) && j->run_idx < e->nrun && e->run[j->run_idx] == j) {
        out->interactive = j->spec->interactive;
        if ((out->idle = j->idle_counting)) {
            out->idle_since_ms = j->idle_since_ms;
            out->idle_ms = j->idle_ms;
            /* the first tick at once idle.after and the timeout long */
            if (out->interactive && limit > 0)
                out->idle_ends_ms = j->idle_since_ms + (limit > e->pricing.idle_after_ms
                                                            ? limit
                                                            : e->pricing.idle_after_ms);
        }
        rc = 0;
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sl_engine_reason(struct sl_engine *e, int64_t id, char *buf, size_t size)
{
    int rc;

    pthread_mutex_lock(&e->mu);
    rc = sl_sched_reason(e->sched, id, sl_eng_now_ms(e), buf, size);
    pthread_mutex_unlock(&e->mu);
    if (rc == 0 && !buf[0])
        rc = -ENOENT;
    return rc;
}

int sl_engine_explain(struct sl_engine *e, int64_t id, struct sl_buf *b)
{
    int rc;

    pthread_mutex_lock(&e->mu);
    rc = sl_sched_explain(e->sched, id, sl_eng_now_ms(e), b);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sl_engine_log_path(struct sl_engine *e, int64_t id, int task, char *buf,
                       size_t size)
{
    return sl_executor_log_path(e->x, id, task, buf, size);
}

int sl_engine_attach_path(struct sl_engine *e, int64_t id, int task, int attempt, char *buf,
                          size_t size)
{
    return sl_executor_attach_path(e->x, id, task, attempt, buf, size);
}

const double sl_engine_pass_bounds_s[SL_ENGINE_PASS_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,  0.5,    1,     2.5,  5,     10,
};

void sl_engine_count_pass(struct sl_engine *e, int64_t ns)
{
    int b = SL_ENGINE_PASS_BUCKETS;

    if (ns < 0)
        ns = 0;
    for (int i = 0; i < SL_ENGINE_PASS_BUCKETS; i++)
        if ((double)ns <= sl_engine_pass_bounds_s[i] * 1e9) {
            b = i;
            break;
        }
    atomic_fetch_add_explicit(&e->counters.pass[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->counters.pass_ns, (uint64_t)ns, memory_order_relaxed);
}

void sl_engine_count_finished(struct sl_engine *e, enum sl_job_state s)
{
    if ((int)s >= 0 && s < SL_JOB_NSTATES && sl_job_state_final(s))
        atomic_fetch_add_explicit(&e->counters.finished[s], 1, memory_order_relaxed);
}

void sl_engine_metrics_fini(struct sl_engine_metrics *m)
{
    if (!m)
        return;
    free(m->nodes);
    free(m->gpus);
    free(m->queues);
    free(m->teams);
    free(m->budgets);
    memset(m, 0, sizeof(*m));
}

/* Under e->mu: the nodes and their GPUs. */
static int metrics_nodes(struct sl_engine *e, struct sl_engine_metrics *m)
{
    int nnodes = sl_sched_node_count(e->sched), ngpus = 0;
    struct sl_sched_node_view v;

    for (int n = 0; n < nnodes; n++) {
        sl_sched_node_view(e->sched, n, &v);
        ngpus += v.ngpus;
    }
    m->nodes = calloc(nnodes > 0 ? (size_t)nnodes : 1, sizeof(*m->nodes));
    m->gpus = calloc(ngpus > 0 ? (size_t)ngpus : 1, sizeof(*m->gpus));
    if (!m->nodes || !m->gpus)
        return -ENOMEM;
    for (int n = 0; n < nnodes; n++) {
        struct sl_metrics_node *mn = &m->nodes[n];
        const struct sl_node_info *ni = n < e->nodes.n ? &e->nodes.nodes[n] : NULL;

        sl_sched_node_view(e->sched, n, &v);
        sl_strlcpy(mn->name, v.name, sizeof(mn->name));
        if (v.ngpus > 0)
            sl_strlcpy(mn->model, sl_sched_model_name(e->sched, v.gpu_model[0]),
                       sizeof(mn->model));
        mn->schedulable = v.schedulable;
        mn->ngpus = v.ngpus;
        mn->cpu_milli = v.cpu_total;
        mn->cpu_milli_allocated = v.cpu_total - v.cpu_free;
        mn->mem_bytes = v.mem_total;
        mn->mem_bytes_allocated = v.mem_total - v.mem_free;
        for (int g = 0; g < v.ngpus && m->ngpus < ngpus; g++) {
            struct sl_metrics_gpu *mg = &m->gpus[m->ngpus++];
            mg->node = n;
            mg->index = g;
            sl_strlcpy(mg->model, sl_sched_model_name(e->sched, v.gpu_model[g]),
                       sizeof(mg->model));
            if (ni && g < ni->ngpus) {
                sl_strlcpy(mg->uuid, ni->gpus[g].uuid, sizeof(mg->uuid));
                mg->mem_bytes = ni->gpus[g].mem_bytes;
            }
            mg->milli_allocated = 1000 - v.gpu_free_milli[g];
            mn->gpu_milli_allocated += mg->milli_allocated;
            if (ni && g < ni->ngpus && sl_eng_node_metered(e, n))
                sl_gpumon_last(e->mon, ni->gpus[g].index, &mg->sample);
        }
        m->nnodes++;
    }
    return 0;
}

/* Under e->mu: the queues' GPU figures. */
static int metrics_queues(struct sl_engine *e, struct sl_engine_metrics *m, int64_t now)
{
    m->queues = calloc(e->nqueues > 0 ? (size_t)e->nqueues : 1, sizeof(*m->queues));
    if (!m->queues)
        return -ENOMEM;
    for (int i = 0; i < e->nqueues; i++) {
        struct sl_sched_queue_stats st;
        struct sl_metrics_queue *q = &m->queues[m->nqueues];
        if (sl_sched_queue_stats(e->sched, e->queues[i].sq, now, &st) < 0)
            continue;
        sl_strlcpy(q->name, e->queues[i].name, sizeof(q->name));
        sl_strlcpy(q->team, e->queues[i].team, sizeof(q->team));
        sl_strlcpy(q->cohort, e->queues[i].cohort, sizeof(q->cohort));
        q->nominal_gpu_milli = st.nominal.v[SL_DIM_GPU] >= 0 ? st.nominal.v[SL_DIM_GPU] : -1;
        q->used_gpu_milli = st.used.v[SL_DIM_GPU] > 0 ? st.used.v[SL_DIM_GPU] : 0;
        q->borrowed_gpu_milli = st.borrowed.v[SL_DIM_GPU] > 0 ? st.borrowed.v[SL_DIM_GPU] : 0;
        q->lent_gpu_milli = st.lent.v[SL_DIM_GPU] > 0 ? st.lent.v[SL_DIM_GPU] : 0;
        q->pending = st.pending;
        q->running = st.running;
        m->nqueues++;
    }
    return 0;
}

/* Under e->mu: each team's use since start (closed + running up to now)
 * and each budget's use this period. */
static int metrics_meter(struct sl_engine *e, struct sl_engine_metrics *m, int64_t now)
{
    m->teams = calloc(e->nteams > 0 ? (size_t)e->nteams : 1, sizeof(*m->teams));
    m->budgets = calloc(e->nbudgets > 0 ? (size_t)e->nbudgets : 1, sizeof(*m->budgets));
    if (!m->teams || !m->budgets)
        return -ENOMEM;
    for (int i = 0; i < e->nteams; i++) {
        struct sl_metrics_team *t = &m->teams[i];
        sl_strlcpy(t->name, e->teams[i].name, sizeof(t->name));
        t->gpu_seconds = e->team_use[i].gpu_hours * 3600;
        t->cu = e->team_use[i].cu;
        t->cost = e->team_use[i].cost;
        t->energy_j = e->team_use[i].kwh * 3.6e6;
    }
    m->nteams = e->nteams;
    for (size_t r = 0; r < e->nrun; r++) {
        const struct job *j = e->run[r];
        struct team *tm = sl_eng_team_find(e, j->team);
        double ms = now > j->started_ms ? (double)(now - j->started_ms) : 0;
        struct sl_metrics_team *t;
        if (!tm)
            continue;
        t = &m->teams[tm - e->teams];
        t->gpu_seconds += j->rate[SL_BUDGET_GPU_HOURS] * ms * 3600;
        t->cu += j->rate[SL_BUDGET_CU] * ms;
        t->cost += j->rate[SL_BUDGET_COST] * ms;
        t->energy_j += j->rate_kwh * ms * 3.6e6;
    }
    for (int i = 0; i < e->nbudgets; i++) {
        const struct budget *b = &e->budgets[i];
        struct sl_metrics_budget *o = &m->budgets[i];
        sl_strlcpy(o->name, b->b.name, sizeof(o->name));
        sl_strlcpy(o->team, b->b.team, sizeof(o->team));
        o->unit = sl_budget_unit_name(b->b.unit);
        o->limit = b->b.limit;
        o->used = b->period_start == sl_period_start(b->b.period, now) ? sl_eng_budget_used(b, now)
                                                                       : 0;
    }
    m->nbudgets = e->nbudgets;
    sl_strlcpy(m->currency, e->pricing.currency, sizeof(m->currency));
    return 0;
}

int sl_engine_metrics(struct sl_engine *e, struct sl_engine_metrics *m)
{
    int64_t now = sl_eng_now_ms(e);
    int rc;

    memset(m, 0, sizeof(*m));
    pthread_mutex_lock(&e->mu);
    rc = metrics_nodes(e, m);
    if (rc == 0)
        rc = metrics_queues(e, m, now);
    if (rc == 0)
        rc = metrics_meter(e, m, now);
    m->jobs_running = (int64_t)e->nrun;
    for (size_t i = 0; i < e->nrun; i++)
        if (e->run[i]->spec->interactive) {
            if (e->run[i]->idle_counting)
                m->sessions_idle++;
            else
                m->sessions_active++;
        }
    m->jobs_pending = (int64_t)e->jobs.len - (int64_t)e->nrun;
    pthread_mutex_unlock(&e->mu);
    if (rc < 0) {
        sl_engine_metrics_fini(m);
        return rc;
    }
    for (int s = 0; s < SL_JOB_NSTATES; s++)
        m->finished[s] = atomic_load_explicit(&e->counters.finished[s], memory_order_relaxed);
    m->placements = atomic_load_explicit(&e->counters.placements, memory_order_relaxed);
    m->preemptions = atomic_load_explicit(&e->counters.preemptions, memory_order_relaxed);
    for (int b = 0; b <= SL_ENGINE_PASS_BUCKETS; b++)
        m->pass[b] = atomic_load_explicit(&e->counters.pass[b], memory_order_relaxed);
    m->pass_ns = atomic_load_explicit(&e->counters.pass_ns, memory_order_relaxed);
    return 0;
}
