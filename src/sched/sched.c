/*
 * sched.c - the scheduler's lifecycle and settings, and the cluster it
 * places on: GPU models and nodes. See sched.h for the contract and
 * sched_int.h for the data structures and the other modules.
 *
 * Invariant: s->cap and the largest node's amounts are the sums and
 * maxima over the nodes added (nodes are never removed).
 */
#include "sched_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ----------------------------------------------------- */

void sl_sched_res_unset(struct sl_sched_res *r)
{
    for (int i = 0; i < NDIMS; i++)
        r->v[i] = -1;
}

void sl_sched_queue_spec_init(struct sl_sched_queue_spec *q, const char *name)
{
    memset(q, 0, sizeof(*q));
    q->name = name;
    q->team = name;
    q->weight = 1;
    sl_sched_res_unset(&q->nominal);
    sl_sched_res_unset(&q->borrowing_limit);
    sl_sched_res_unset(&q->lending_limit);
    sl_sched_res_unset(&q->user_limit);
    q->preempt_within = SL_PREEMPT_LOWER_PRIORITY;
    q->reclaim = SL_RECLAIM_ANY;
}

void sl_sched_config_init(struct sl_sched_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->placement = SL_PLACE_FGD;
    cfg->backfill = true;
    cfg->reservations = 1;
    cfg->half_life_ms = 7LL * 86400 * 1000;
    cfg->preemption = true;
    cfg->auto_typical = true;
}

/* ---- lifecycle --------------------------------------------------------- */

struct sl_sched *sl_sched_create(const struct sl_sched_config *cfg)
{
    struct sl_sched *s = calloc(1, sizeof(*s));

    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    s->cfg = *cfg;
    if (s->cfg.reservations < 0)
        s->cfg.reservations = 0;
    if (cl_init(&s->cl, cfg->placement, cfg->seed) < 0) {
        free(s);
        errno = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < SL_SCHED_MAX_MODELS; i++)
        s->model_weight[i] = 1.0;
    sl_imap_init(&s->jobs);
    sl_imap_init(&s->node_names);
    sl_imap_init(&s->qu_index);
    s->typical_fixed = !cfg->auto_typical;
    return s;
}

void sl_sched_destroy(struct sl_sched *s)
{
    int saved = errno;
    size_t pos = 0;
    int64_t id;
    void *v;

    if (!s)
        return;
    while (sl_imap_next(&s->jobs, &pos, &id, &v))
        sl_sch_job_free(v);
    sl_imap_fini(&s->jobs);
    sl_imap_fini(&s->node_names);
    for (int i = 0; i < s->nnode_notes; i++)
        free(s->node_notes[i]);
    free(s->node_notes);
    sl_imap_fini(&s->qu_index);
    for (int i = 0; i < s->nqueues; i++) {
        for (int b = 0; b < s->queues[i].nbuckets; b++)
            free(s->queues[i].buckets[b]);
        free(s->queues[i].buckets);
    }
    free(s->queues);
    for (int i = 0; i < s->ncohorts; i++)
        free(s->cohorts[i].queues);
    free(s->cohorts);
    for (int i = 0; i < s->nusers; i++)
        free(s->users[i]);
    free(s->users);
    free(s->qus);
    free(s->run);
    free(s->byend);
    free(s->fresh);
    sl_sch_resv_clear(s);
    free(s->resv);
    for (int i = 0; i < s->nnominees; i++)
        free(s->nominees[i].places);
    free(s->nominees);
    free(s->cholds);
    free(s->holds);
    free(s->tshapes);
    cl_fini(&s->cl);
    free(s);
    errno = saved;
}

void sl_sched_configure(struct sl_sched *s, const struct sl_sched_config *cfg)
{
    bool fixed = s->typical_fixed && !s->cfg.auto_typical;

    s->cfg = *cfg;
    if (s->cfg.reservations < 0)
        s->cfg.reservations = 0;
    s->typical_fixed = fixed || !cfg->auto_typical;
    cl_set_policy(&s->cl, cfg->placement);
}

const struct sl_sched_config *sl_sched_get_config(const struct sl_sched *s)
{
    return &s->cfg;
}

/* ---- models and nodes ------------------------------------------------- */

int sl_sched_model(struct sl_sched *s, const char *name)
{
    if (!name || !*name)
        return -EINVAL;
    return cl_model(&s->cl, name, true);
}

const char *sl_sched_model_name(const struct sl_sched *s, int model)
{
    return model >= 0 && model < s->cl.nmodels ? s->cl.models[model] : "";
}

int sl_sched_model_count(const struct sl_sched *s) { return s->cl.nmodels; }

void sl_sched_model_weight(struct sl_sched *s, int model, double weight)
{
    if (model >= 0 && model < SL_SCHED_MAX_MODELS && weight > 0 && isfinite(weight))
        s->model_weight[model] = weight;
}

/* A positive 64-bit FNV-1a hash of a node name (the map's key). */
static int64_t name_key(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    h &= (uint64_t)INT64_MAX;
    return h ? (int64_t)h : 1;
}

int sl_sched_node_add(struct sl_sched *s, const struct sl_sched_node_spec *n)
{
    int models[SL_SCHED_MAX_GPUS], rc;
    int64_t key;
    intptr_t hit;

    if (!n->name || !*n->name || n->ngpus < 0 || n->ngpus > SL_SCHED_MAX_GPUS ||
        n->cpu_milli < 0 || n->mem_bytes < 0)
        return -EINVAL;
    key = name_key(n->name);
    if ((hit = (intptr_t)sl_imap_get(&s->node_names, key)) > 0) {
        if (strcmp(cl_node_name(&s->cl, (int)hit - 1), n->name) == 0)
            return -EEXIST;
        for (int i = 0; i < s->cl.nnodes; i++) /* two names, one hash */
            if (strcmp(cl_node_name(&s->cl, i), n->name) == 0)
                return -EEXIST;
    }
    for (int g = 0; g < n->ngpus; g++)
        if ((models[g] = sl_sched_model(s, n->gpu_model[g])) < 0)
            return models[g];
    if (!hit && sl_imap_put(&s->node_names, key, (void *)(intptr_t)(s->cl.nnodes + 1)) < 0)
        return -ENOMEM;
    if ((rc = cl_node_add(&s->cl, n->name, n->domain, n->cpu_milli, n->mem_bytes,
                          n->ngpus, models)) < 0) {
        if (!hit)
            sl_imap_del(&s->node_names, key);
        return rc;
    }
    if (n->ngpus > s->max_node_gpus)
        s->max_node_gpus = n->ngpus;
    if (n->cpu_milli > s->max_node_cpu)
        s->max_node_cpu = n->cpu_milli;
    if (n->mem_bytes > s->max_node_mem)
        s->max_node_mem = n->mem_bytes;
    s->cap[SL_DIM_CPU] += n->cpu_milli;
    s->cap[SL_DIM_MEM] += n->mem_bytes;
    s->cap[SL_DIM_GPU] += (int64_t)n->ngpus * CL_WHOLE;
    for (int g = 0; g < n->ngpus; g++)
        s->cap[SL_DIM_MODEL0 + models[g]] += CL_WHOLE;
    return rc;
}

int sl_sched_node_count(const struct sl_sched *s) { return s->cl.nnodes; }

void sl_sched_node_schedulable(struct sl_sched *s, int node, bool on)
{
    if (node >= 0 && node < s->cl.nnodes)
        cl_node_schedulable(&s->cl, node, on);
}

int sl_sched_node_note(struct sl_sched *s, int node, const char *why)
{
    char *copy = NULL;

    if (node < 0 || node >= s->cl.nnodes)
        return -ENOENT;
    if (node >= s->nnode_notes) {
        char **n;
        if (!why)
            return 0;
        if (!(n = realloc(s->node_notes, (size_t)s->cl.nnodes * sizeof(*n))))
            return -ENOMEM;
        memset(n + s->nnode_notes, 0, (size_t)(s->cl.nnodes - s->nnode_notes) * sizeof(*n));
        s->node_notes = n;
        s->nnode_notes = s->cl.nnodes;
    }
    if (why && !(copy = strndup(why, 480)))
        return -ENOMEM;
    free(s->node_notes[node]);
    s->node_notes[node] = copy;
    return 0;
}

int sl_sched_node_view(const struct sl_sched *s, int node,
                       struct sl_sched_node_view *v)
{
    const struct cl_node *n;

    if (node < 0 || node >= s->cl.nnodes)
        return -ENOENT;
    n = &s->cl.nodes[node];
    memset(v, 0, sizeof(*v));
    v->name = cl_node_name(&s->cl, node);
    v->domain = cl_node_domain(&s->cl, node);
    v->schedulable = n->schedulable;
    v->cpu_total = n->cpu_total;
    v->cpu_free = n->cpu_free;
    v->mem_total = n->mem_total;
    v->mem_free = n->mem_free;
    v->ngpus = n->ngpus;
    for (int g = 0; g < n->ngpus; g++) {
        v->gpu_model[g] = s->cl.gpu_model[n->gpu0 + g];
        v->gpu_free_milli[g] = s->cl.gpu_free[n->gpu0 + g];
    }
    return 0;
}
