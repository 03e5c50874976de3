/*
 * sched.c - the scheduler's state and its passes. See sched.h for the
 * contract, schedint.h for the data structures, docs/scheduler.md for the
 * policies.
 *
 * A full pass:
 *   1. jobs that preempted others and whose victims have all stopped go
 *      first, so that what the victims freed goes to them; what the
 *      victims of those still waiting have freed is held for them;
 *   2. the queues are taken from a heap, best first: the priority of their
 *      next job, then their weighted dominant share (usage with decayed
 *      history over nominal quota), then submit time. Each time a queue is
 *      taken, its next job is considered and the queue goes back in with
 *      its new head and share;
 *   3. a job is admitted by quota (its queue's nominal quota plus what it
 *      may borrow from the cohort; its user's limit; the per-model quotas
 *      narrow the GPU models it may use), then placed, all tasks or none,
 *      by the placement policy (cluster.c); resources held for backfill
 *      reservations are not available to it unless it ends before they are
 *      needed;
 *   4. a job that cannot be placed may preempt: opportunistic jobs, lower
 *      priority jobs of its own queue, or, when its queue stays within its
 *      nominal quota with it and with what its other preemptors claimed,
 *      jobs of queues that borrow in the cohort, while they still borrow.
 *      Victims are taken in order (opportunistic, lowest priority, youngest
 *      first; a preemptor's age counts from when it was granted its
 *      victims), the shortest prefix after which the preemptor fits, then
 *      given back where it still fits without them; a preemption is made
 *      only when the preemptor fits once the victims are gone, and
 *      protected jobs (non-preemptible classes, minimum run time) are never
 *      chosen. These rules are what keep two queues from reclaiming from
 *      each other for ever (docs/scheduler.md);
 *   5. otherwise the first 'reservations' blocked jobs get a reservation:
 *      the earliest time the running jobs' maxRuntime says enough will be
 *      free, and the nodes it would use then. What of those is free now is
 *      held for it, so later jobs cannot delay it (EASY backfill).
 *
 * Invariants:
 *  - a job is in s->jobs exactly while pending, running or terminating;
 *    pending jobs are in exactly one bucket, others in s->run;
 *  - queue and user usage equal the sum of the charges of their running and
 *    terminating jobs; node free amounts equal capacity minus the places of
 *    those jobs, minus holds during a pass only.
 */
#include "schedint.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TYPICAL_COVER 0.95
#define TYPICAL_EVERY 512          /* submissions between model updates */
#define TYPICAL_DRIFT 0.05         /* ... which replace it past this change */
#define TSHAPES_MAX 4096
#define PREEMPT_ATTEMPTS 16        /* victim searches per pass */
#define PREEMPT_CANDIDATES 4096
#define FAILED_MEMO 64
#define GANG_COUNT_MAX (1 << 20)   /* tasks counted per node, at most */
/* Shares closer than this are equal: submit order decides between them
 * (decayed history never reaches exactly zero). */
#define SHARE_EPS 1e-4

static const double LN2 = 0.69314718055994530942;

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

static void job_free(struct job *j)
{
    if (j) {
        free(j->places);
        free(j);
    }
}

/* Forget the reservations (a full pass makes them anew): their jobs no
 * longer have one, or none would get one again. */
static void resv_clear(struct sl_sched *s)
{
    for (int i = 0; i < s->nresv; i++) {
        struct job *j = sl_imap_get(&s->jobs, s->resv[i].job_id);
        if (j && j->state == J_PENDING)
            j->resv_at_ms = 0;
        free(s->resv[i].places);
    }
    s->nresv = 0;
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
        job_free(v);
    sl_imap_fini(&s->jobs);
    sl_imap_fini(&s->node_names);
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
    resv_clear(s);
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

/* ---- classes, cohorts, queues, users ----------------------------------- */

int sl_sched_class_find(const struct sl_sched *s, const char *name)
{
    for (int i = 0; i < s->nclasses; i++)
        if (strcmp(s->classes[i].name, name) == 0)
            return i;
    return -ENOENT;
}

int sl_sched_class_set(struct sl_sched *s, const struct sl_sched_class_spec *c)
{
    int i;

    if (!c->name || !*c->name || strlen(c->name) >= sizeof(s->classes[0].name) ||
        c->min_runtime_ms < 0)
        return -EINVAL;
    if ((i = sl_sched_class_find(s, c->name)) < 0) {
        if (s->nclasses == SL_SCHED_MAX_CLASSES)
            return -ENOSPC;
        i = s->nclasses++;
        sl_strlcpy(s->classes[i].name, c->name, sizeof(s->classes[i].name));
    }
    s->classes[i].value = c->value;
    s->classes[i].preemptible = c->preemptible || c->opportunistic;
    s->classes[i].opportunistic = c->opportunistic;
    s->classes[i].min_runtime_ms = c->min_runtime_ms;
    return i;
}

static int cohort_get(struct sl_sched *s, const char *name)
{
    for (int i = 0; i < s->ncohorts; i++)
        if (strcmp(s->cohorts[i].name, name) == 0)
            return i;
    if (s->ncohorts == SL_SCHED_MAX_COHORTS)
        return -ENOSPC;
    if (sl_grow((void **)&s->cohorts, &s->cohorts_cap, s->ncohorts + 1,
             sizeof(*s->cohorts)) < 0)
        return -ENOMEM;
    memset(&s->cohorts[s->ncohorts], 0, sizeof(s->cohorts[0]));
    sl_strlcpy(s->cohorts[s->ncohorts].name, name, sizeof(s->cohorts[0].name));
    return s->ncohorts++;
}

static void cohort_drop_queue(struct sl_sched *s, int c, int q)
{
    struct cohort *co = &s->cohorts[c];

    for (int i = 0; i < co->nqueues; i++)
        if (co->queues[i] == q) {
            co->queues[i] = co->queues[--co->nqueues];
            return;
        }
}

int sl_sched_queue_find(const struct sl_sched *s, const char *name)
{
    for (int i = 0; i < s->nqueues; i++)
        if (strcmp(s->queues[i].name, name) == 0)
            return i;
    return -ENOENT;
}

int sl_sched_queue_count(const struct sl_sched *s) { return s->nqueues; }

int sl_sched_queue_set(struct sl_sched *s, const struct sl_sched_queue_spec *qs)
{
    int i, cohort = -1;
    struct queue *q;

    if (!qs->name || !*qs->name || strlen(qs->name) >= sizeof(q->name) ||
        (qs->team && strlen(qs->team) >= sizeof(q->team)) ||
        !(qs->weight > 0) || !isfinite(qs->weight))
        return -EINVAL;
    if (qs->cohort && *qs->cohort) {
        if (strlen(qs->cohort) >= sizeof(s->cohorts[0].name))
            return -EINVAL;
        if ((cohort = cohort_get(s, qs->cohort)) < 0)
            return cohort;
    }
    if ((i = sl_sched_queue_find(s, qs->name)) < 0) {
        if (s->nqueues == SL_SCHED_MAX_QUEUES)
            return -ENOSPC;
        if (sl_grow((void **)&s->queues, &s->queues_cap, s->nqueues + 1,
                 sizeof(*s->queues)) < 0)
            return -ENOMEM;
        i = s->nqueues;
        q = &s->queues[i];
        memset(q, 0, sizeof(*q));
        sl_strlcpy(q->name, qs->name, sizeof(q->name));
        q->cohort = -1;
        q->heap_pos = -1;
        s->nqueues++;
    }
    q = &s->queues[i];
    if (q->cohort != cohort) {
        if (cohort >= 0) {
            struct cohort *co = &s->cohorts[cohort];
            if (sl_grow((void **)&co->queues, &co->cap, co->nqueues + 1, sizeof(int)) < 0)
                return -ENOMEM;
            co->queues[co->nqueues++] = i;
        }
        if (q->cohort >= 0)
            cohort_drop_queue(s, q->cohort, i);
        q->cohort = cohort;
    }
    sl_strlcpy(q->team, qs->team ? qs->team : "", sizeof(q->team));
    q->weight = qs->weight;
    q->nominal = qs->nominal;
    q->borrow = qs->borrowing_limit;
    q->lend = qs->lending_limit;
    q->ulimit = qs->user_limit;
    q->preempt_within = qs->preempt_within;
    q->reclaim = qs->reclaim;
    return i;
}

/* A manifest's resource list as scheduler amounts. */
static void res_from_list(struct sl_sched *s, const struct sl_res_list *l,
                          struct sl_sched_res *r)
{
    sl_sched_res_unset(r);
    r->v[SL_DIM_GPU] = l->gpu_milli;
    r->v[SL_DIM_CPU] = l->cpu_milli;
    r->v[SL_DIM_MEM] = l->mem_bytes;
    for (int i = 0; i < l->nmodels; i++) {
        int m = sl_sched_model(s, l->model[i]);
        if (m >= 0)
            r->v[SL_DIM_MODEL0 + m] = l->model_milli[i];
    }
}

int sl_sched_apply_manifest(struct sl_sched *s, const struct sl_manifest *m)
{
    switch (m->kind) {
    case SL_KIND_QUEUE: {
        struct sl_sched_queue_spec qs = {0};
        qs.name = m->name;
        qs.team = m->u.queue.team;
        qs.cohort = m->u.queue.cohort;
        qs.weight = m->u.queue.weight_milli > 0 ? (double)m->u.queue.weight_milli / 1000 : 1;
        res_from_list(s, &m->u.queue.nominal, &qs.nominal);
        res_from_list(s, &m->u.queue.borrowing_limit, &qs.borrowing_limit);
        res_from_list(s, &m->u.queue.lending_limit, &qs.lending_limit);
        res_from_list(s, &m->u.queue.user_limit, &qs.user_limit);
        qs.preempt_within = (enum sl_preempt_within)m->u.queue.preempt_within;
        qs.reclaim = (enum sl_reclaim)m->u.queue.reclaim;
        return sl_sched_queue_set(s, &qs);
    }
    case SL_KIND_PRIORITY_CLASS: {
        struct sl_sched_class_spec cs = {m->name, m->u.pclass.value, m->u.pclass.preemptible,
                                         m->u.pclass.opportunistic,
                                         m->u.pclass.min_runtime_ms};
        return sl_sched_class_set(s, &cs);
    }
    case SL_KIND_SCHEDULER: {
        struct sl_sched_config cfg = s->cfg;
        cfg.placement = (enum sl_placement)m->u.sched.placement;
        cfg.backfill = m->u.sched.backfill;
        cfg.reservations = m->u.sched.reservations;
        cfg.half_life_ms = m->u.sched.half_life_ms;
        cfg.preemption = m->u.sched.preemption;
        cfg.min_runtime_ms = m->u.sched.min_runtime_ms;
        sl_sched_configure(s, &cfg);
        for (int i = 0; i < m->u.sched.nweights; i++) {
            int md = sl_sched_model(s, m->u.sched.weight_model[i]);
            if (md >= 0)
                sl_sched_model_weight(s, md, (double)m->u.sched.weight_milli[i] / 1000);
        }
        return 0;
    }
    default:
        return 0;
    }
}

int sl_sched_user(struct sl_sched *s, const char *name)
{
    for (int i = 0; i < s->nusers; i++)
        if (strcmp(s->users[i], name) == 0)
            return i;
    if (s->nusers == INT32_MAX - 1)
        return -ENOSPC;
    if (sl_grow((void **)&s->users, &s->users_cap, s->nusers + 1, sizeof(char *)) < 0 ||
        !(s->users[s->nusers] = strdup(name)))
        return -ENOMEM;
    return s->nusers++;
}

/* The (queue, user) record, made when missing. Returns its index or -ENOMEM. */
static int qu_get(struct sl_sched *s, int queue, int user)
{
    int64_t key = ((int64_t)(queue + 1) << 32) | (int64_t)(user + 1);
    uintptr_t v = (uintptr_t)sl_imap_get(&s->qu_index, key);

    if (v)
        return (int)(v - 1);
    if (sl_grow((void **)&s->qus, &s->qus_cap, s->nqus + 1, sizeof(*s->qus)) < 0)
        return -ENOMEM;
    memset(&s->qus[s->nqus], 0, sizeof(s->qus[0]));
    s->qus[s->nqus].queue = queue;
    s->qus[s->nqus].user = user;
    if (sl_imap_put(&s->qu_index, key, (void *)(uintptr_t)(s->nqus + 1)) < 0)
        return -ENOMEM;
    return s->nqus++;
}

/* ---- usage, history, shares -------------------------------------------- */

void sched_job_request(const struct job *j, int64_t req[NDIMS])
{
    memset(req, 0, sizeof(int64_t) * NDIMS);
    req[SL_DIM_CPU] = j->tasks * j->shape.cpu_milli;
    req[SL_DIM_MEM] = j->tasks * j->shape.mem_bytes;
    req[SL_DIM_GPU] = (int64_t)j->tasks * j->shape.num_gpu * j->shape.gpu_milli;
}

/* A preemptor's claim on its queue's nominal quota, from the moment it
 * is granted victims until it starts (or gives up): two preemptors of one
 * queue, each within nominal alone, must not both count on the same room,
 * or the queue goes over nominal when they start and is reclaimed from. */
static void claim(struct sl_sched *s, struct job *j, bool on)
{
    struct queue *q = &s->queues[j->queue];
    int64_t req[NDIMS];

    if ((bool)j->claimed == on)
        return;
    sched_job_request(j, req);
    for (int d = 0; d < NDIMS; d++)
        q->claimed[d] += on ? req[d] : -req[d];
    j->claimed = on;
}

/* What a running job holds, per dimension (models from its places). */
static void job_charge(const struct sl_sched *s, const struct job *j,
                       int64_t ch[NDIMS])
{
    sched_job_request(j, ch);
    for (int t = 0; t < j->tasks; t++) {
        const struct sl_sched_task_place *p = &j->places[t];
        const struct cl_node *n = &s->cl.nodes[p->node];
        for (int g = 0; g < p->ngpus; g++)
            ch[SL_DIM_MODEL0 + s->cl.gpu_model[n->gpu0 + p->gpus[g]]] += p->gpu_milli;
    }
}

/* The fair-share view of a usage vector: CPU, memory, weighted GPU. */
static void share_vec(const struct sl_sched *s, const int64_t *a, const int64_t *b,
                      double out[NSHARE])
{
    out[0] = (double)a[SL_DIM_CPU] + (b ? (double)b[SL_DIM_CPU] : 0);
    out[1] = (double)a[SL_DIM_MEM] + (b ? (double)b[SL_DIM_MEM] : 0);
    out[2] = 0;
    for (int m = 0; m < s->cl.nmodels; m++)
        out[2] += ((double)a[SL_DIM_MODEL0 + m] + (b ? (double)b[SL_DIM_MODEL0 + m] : 0)) *
                  s->model_weight[m];
}

/* History brought to 'now' under the allocation 'cur' (held since h->t_ms). */
static void hist_advance(const struct sl_sched *s, const struct hist *h,
                         const double cur[NSHARE], int64_t now, double out[NSHARE])
{
    double tau = (double)s->cfg.half_life_ms / LN2, f;

    if (s->cfg.half_life_ms <= 0) {
        for (int d = 0; d < NSHARE; d++)
            out[d] = 0;
        return;
    }
    f = now > h->t_ms ? exp(-(double)(now - h->t_ms) / tau) : 1.0;
    for (int d = 0; d < NSHARE; d++)
        out[d] = cur[d] + (h->h[d] - cur[d]) * f;
}

void sched_hist_now(const struct sl_sched *s, struct hist *h, const int64_t *used,
                    int64_t now_ms, double out[NSHARE])
{
    double cur[NSHARE];

    share_vec(s, used, NULL, cur);
    hist_advance(s, h, cur, now_ms, out);
}

/* Denominators of a queue's shares: its nominal quota where set, else the
 * cluster's capacity. */
static void share_denoms(const struct sl_sched *s, const struct queue *q,
                         double den[NSHARE])
{
    double capw = 0, nomw = 0;
    bool per_model = false;

    for (int m = 0; m < s->cl.nmodels; m++) {
        capw += (double)s->cap[SL_DIM_MODEL0 + m] * s->model_weight[m];
        if (q->nominal.v[SL_DIM_MODEL0 + m] >= 0) {
            per_model = true;
            nomw += (double)q->nominal.v[SL_DIM_MODEL0 + m] * s->model_weight[m];
        }
    }
    den[0] = q->nominal.v[SL_DIM_CPU] > 0 ? (double)q->nominal.v[SL_DIM_CPU]
                                          : (double)s->cap[SL_DIM_CPU];
    den[1] = q->nominal.v[SL_DIM_MEM] > 0 ? (double)q->nominal.v[SL_DIM_MEM]
                                          : (double)s->cap[SL_DIM_MEM];
    if (q->nominal.v[SL_DIM_GPU] > 0 && s->cap[SL_DIM_GPU] > 0)
        den[2] = (double)q->nominal.v[SL_DIM_GPU] * capw / (double)s->cap[SL_DIM_GPU];
    else if (per_model && nomw > 0)
        den[2] = nomw;
    else
        den[2] = capw;
}

static double dominant(const double use[NSHARE], const double den[NSHARE], double w)
{
    double best = 0;

    for (int d = 0; d < NSHARE; d++)
        if (den[d] > 0 && use[d] / (w * den[d]) > best)
            best = use[d] / (w * den[d]);
    return best;
}

double sched_queue_share(const struct sl_sched *s, const struct queue *q,
                         int64_t now_ms)
{
    double cur[NSHARE], h[NSHARE], den[NSHARE], use[NSHARE];

    share_vec(s, q->used, q->opp, cur);
    hist_advance(s, &q->hist, cur, now_ms, h);
    share_denoms(s, q, den);
    for (int d = 0; d < NSHARE; d++)
        use[d] = cur[d] + h[d];
    return dominant(use, den, q->weight);
}

double sched_user_share(const struct sl_sched *s, const struct qu *u, int64_t now_ms)
{
    const struct queue *q = &s->queues[u->queue];
    double cur[NSHARE], h[NSHARE], den[NSHARE], use[NSHARE];

    share_vec(s, u->used, NULL, cur);
    hist_advance(s, &u->hist, cur, now_ms, h);
    share_denoms(s, q, den);
    for (int d = 0; d < NSHARE; d++)
        use[d] = cur[d] + h[d];
    return dominant(use, den, 1.0);
}

/* Bring a queue's and a user's history up to 'now' before their usage
 * changes. */
static void hist_touch(struct sl_sched *s, struct queue *q, struct qu *u, int64_t now)
{
    double cur[NSHARE];

    share_vec(s, q->used, q->opp, cur);
    hist_advance(s, &q->hist, cur, now, q->hist.h);
    q->hist.t_ms = now;
    share_vec(s, u->used, NULL, cur);
    hist_advance(s, &u->hist, cur, now, u->hist.h);
    u->hist.t_ms = now;
}

/* Add (sign 1) or remove (-1) a running job's charge, without history. */
static void charge_raw(struct sl_sched *s, const struct job *j, int sign)
{
    struct queue *q = &s->queues[j->queue];
    struct qu *u = &s->qus[j->qu];
    int64_t ch[NDIMS];

    job_charge(s, j, ch);
    u->share_pass = 0;
    if (j->opportunistic)
        s->nrun_opp += sign;
    for (int d = 0; d < SL_DIM_MODEL0 + s->cl.nmodels; d++) { /* the rest are 0 */
        if (j->opportunistic) {
            q->opp[d] += sign * ch[d];
        } else {
            q->used[d] += sign * ch[d];
            u->used[d] += sign * ch[d];
        }
    }
}

static void charge(struct sl_sched *s, struct job *j, int sign, int64_t now)
{
    hist_touch(s, &s->queues[j->queue], &s->qus[j->qu], now);
    charge_raw(s, j, sign);
}

/* ---- quota ------------------------------------------------------------- */

static bool quota_set(const struct sl_sched_res *r, int d) { return r->v[d] >= 0; }

/* Whether queue 'q' may hold 'need' of dimension d (its usage with the job
 * added), counting the cohort; fills *why when not. */
static bool dim_ok(const struct sl_sched *s, int qi, int d, int64_t need,
                   struct quota_why *why)
{
    const struct queue *q = &s->queues[qi];
    int64_t nom = q->nominal.v[d];

    if (!quota_set(&q->nominal, d))
        return true;
    if (q->cohort < 0) {
        if (need <= nom)
            return true;
        why->what = B_QUOTA;
        why->limit = nom;
        goto short_of;
    }
    if (quota_set(&q->borrow, d) && need > nom + q->borrow.v[d]) {
        why->what = B_QUOTA;
        why->limit = nom + q->borrow.v[d];
        goto short_of;
    }
    {
        /* The cohort lends what its queues do not guarantee themselves. */
        const struct cohort *co = &s->cohorts[q->cohort];
        int64_t lendable = 0, borrowed = 0;
        for (int k = 0; k < co->nqueues; k++) {
            const struct queue *o = &s->queues[co->queues[k]];
            int64_t onom = o->nominal.v[d], olend, guaranteed, used;
            if (onom < 0)
                continue;
            olend = quota_set(&o->lend, d) && o->lend.v[d] < onom ? o->lend.v[d] : onom;
            guaranteed = onom - olend;
            used = co->queues[k] == qi ? need : o->used[d];
            lendable += olend;
            if (used > guaranteed)
                borrowed += used - guaranteed;
        }
        if (borrowed <= lendable)
            return true;
        why->what = B_COHORT;
        why->limit = lendable;
        why->dim = d;
        why->need = borrowed;
        why->used = borrowed - (need - q->used[d]);
        return false;
    }
short_of:
    why->dim = d;
    why->need = need;
    why->used = q->used[d];
    return false;
}

int sched_quota_blockers(const struct sl_sched *s, const struct job *j,
                         struct quota_why *out, int max)
{
    const struct queue *q = &s->queues[j->queue];
    const struct qu *u = &s->qus[j->qu];
    int64_t req[NDIMS];
    uint32_t models;
    struct quota_why w;
    int n = 0;

    sched_job_request(j, req);
    for (int d = SL_DIM_CPU; d <= SL_DIM_GPU && n < max; d++) {
        if (req[d] == 0)
            continue;
        memset(&w, 0, sizeof(w));
        if (!dim_ok(s, j->queue, d, q->used[d] + req[d], &w))
            out[n++] = w;
        if (n < max && quota_set(&q->ulimit, d) && u->used[d] + req[d] > q->ulimit.v[d]) {
            out[n].what = B_USER;
            out[n].dim = d;
            out[n].need = u->used[d] + req[d];
            out[n].used = u->used[d];
            out[n].limit = q->ulimit.v[d];
            n++;
        }
    }
    /* the per-model quotas, when nothing above blocks: they only narrow */
    if (n == 0 && !sched_quota_ok(s, j, &models, &w))
        out[n++] = w;
    return n;
}

bool sched_quota_ok(const struct sl_sched *s, const struct job *j, uint32_t *models,
                    struct quota_why *why)
{
    const struct queue *q = &s->queues[j->queue];
    const struct qu *u = &s->qus[j->qu];
    int64_t req[NDIMS];
    uint32_t ok = 0, want;
    struct quota_why tmp;

    sched_job_request(j, req);
    memset(why, 0, sizeof(*why));
    for (int d = SL_DIM_CPU; d <= SL_DIM_GPU; d++) {
        if (req[d] == 0)
            continue;
        if (!dim_ok(s, j->queue, d, q->used[d] + req[d], why))
            return false;
        if (quota_set(&q->ulimit, d) && u->used[d] + req[d] > q->ulimit.v[d]) {
            why->what = B_USER;
            why->dim = d;
            why->need = u->used[d] + req[d];
            why->used = u->used[d];
            why->limit = q->ulimit.v[d];
            return false;
        }
    }
    want = j->shape.models ? j->shape.models
                           : (s->cl.nmodels >= 32 ? UINT32_MAX
                                                  : ((1u << s->cl.nmodels) - 1));
    *models = want;
    if (req[SL_DIM_GPU] == 0)
        return true;
    /* A model is allowed when the whole GPU demand fits its quota (the
     * job's GPUs may all land on it). */
    for (int m = 0; m < s->cl.nmodels; m++) {
        int d = SL_DIM_MODEL0 + m;
        if (!(want & (1u << m)))
            continue;
        if (!dim_ok(s, j->queue, d, q->used[d] + req[SL_DIM_GPU], &tmp)) {
            if (!why->what)
                *why = tmp;
            continue;
        }
        if (quota_set(&q->ulimit, d) && u->used[d] + req[SL_DIM_GPU] > q->ulimit.v[d]) {
            if (!why->what) {
                why->what = B_USER;
                why->dim = d;
                why->need = u->used[d] + req[SL_DIM_GPU];
                why->used = u->used[d];
                why->limit = q->ulimit.v[d];
            }
            continue;
        }
        ok |= 1u << m;
    }
    if (!ok) {
        if (why->what == B_QUOTA || why->what == B_COHORT)
            why->what = why->what == B_QUOTA ? B_MODEL_QUOTA : B_COHORT;
        if (!why->what)
            why->what = B_MODEL_QUOTA;
        return false;
    }
    memset(why, 0, sizeof(*why));
    *models = ok;
    return true;
}

/* ---- buckets ----------------------------------------------------------- */

static struct bucket *bucket_get(struct sl_sched *s, struct queue *q, int qi,
                                 int user, int pclass)
{
    struct bucket *b;

    for (int i = 0; i < q->nbuckets; i++)
        if (q->buckets[i]->user == user && q->buckets[i]->pclass == pclass)
            return q->buckets[i];
    if (sl_grow((void **)&q->buckets, &q->buckets_cap, q->nbuckets + 1,
             sizeof(*q->buckets)) < 0 ||
        !(b = calloc(1, sizeof(*b))))
        return NULL;
    b->queue = qi;
    b->user = user;
    b->pclass = pclass;
    q->buckets[q->nbuckets++] = b;
    (void)s;
    return b;
}

static bool before(const struct job *a, const struct job *b)
{
    return a->submit_ms < b->submit_ms || (a->submit_ms == b->submit_ms && a->id < b->id);
}

static void bucket_insert(struct bucket *b, struct job *j)
{
    struct job *at = b->tail;

    while (at && before(j, at))
        at = at->prev;
    j->prev = at;
    j->next = at ? at->next : b->head;
    if (j->next)
        j->next->prev = j;
    else
        b->tail = j;
    if (at)
        at->next = j;
    else
        b->head = j;
    j->bucket = b;
    b->count++;
}

static void bucket_remove(struct job *j)
{
    struct bucket *b = j->bucket;

    if (b->cursor == j)
        b->cursor = j->next;
    if (j->prev)
        j->prev->next = j->next;
    else
        b->head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        b->tail = j->prev;
    b->count--;
    j->prev = j->next = NULL;
    j->bucket = NULL;
}

/* ---- typical tasks (FGD's model) --------------------------------------- */

static bool shape_same(const struct cl_shape *a, const struct cl_shape *b)
{
    return a->cpu_milli == b->cpu_milli && a->num_gpu == b->num_gpu &&
           a->gpu_milli == b->gpu_milli && a->models == b->models;
}

static int tshape_cmp(const void *a, const void *b)
{
    const struct tshape *x = a, *y = b;

    return (x->weight < y->weight) - (x->weight > y->weight);
}

/* Whether the model 't' (weights not normalised) is the cluster's with
 * the same tasks and weights within TYPICAL_DRIFT in total variation. */
static bool typical_close(const struct cl_cluster *c, const struct cl_typical *t, int n)
{
    double total = 0, tv = 0;

    if (n != c->ntypical || n == 0)
        return false;
    for (int i = 0; i < n; i++)
        total += t[i].weight > 0 ? t[i].weight : 0;
    if (!(total > 0))
        return false;
    for (int i = 0; i < n; i++) {
        int k;
        for (k = 0; k < n; k++)
            if (c->typical[k].cpu_milli == t[i].cpu_milli &&
                c->typical[k].num_gpu == t[i].num_gpu &&
                c->typical[k].gpu_milli == t[i].gpu_milli &&
                c->typical[k].models == t[i].models)
                break;
        if (k == n)
            return false;
        tv += fabs(c->typical[k].weight - (t[i].weight > 0 ? t[i].weight : 0) / total);
    }
    return tv / 2 < TYPICAL_DRIFT;
}

/* Recompute the typical tasks from the shapes seen: the most common ones
 * covering 95 % of the (decayed) submissions. A model that barely moved
 * is kept, since a new one rescores every node for every shape. */
static void typical_update(struct sl_sched *s)
{
    struct cl_typical t[256];
    double cum = 0;
    int n = 0;

    if (s->ntshapes == 0)
        return;
    qsort(s->tshapes, (size_t)s->ntshapes, sizeof(*s->tshapes), tshape_cmp);
    for (int i = 0; i < s->ntshapes && n < (int)SL_ARRAY_LEN(t) &&
                    cum < TYPICAL_COVER * s->tshape_total;
         i++) {
        t[n].cpu_milli = s->tshapes[i].shape.cpu_milli;
        t[n].num_gpu = s->tshapes[i].shape.num_gpu;
        t[n].gpu_milli = s->tshapes[i].shape.gpu_milli;
        t[n].models = s->tshapes[i].shape.models;
        t[n].weight = s->tshapes[i].weight;
        cum += s->tshapes[i].weight;
        n++;
    }
    s->since_typical = 0;
    if (typical_close(&s->cl, t, n))
        return; /* the indexes stay: rescoring every node is not worth it */
    cl_set_typical(&s->cl, t, n); /* on -ENOMEM the old model stays */
}

static void typical_learn(struct sl_sched *s, const struct cl_shape *sh, int tasks)
{
    int i;

    if (s->typical_fixed)
        return;
    for (i = 0; i < s->ntshapes; i++)
        if (shape_same(&s->tshapes[i].shape, sh))
            break;
    if (i == s->ntshapes) {
        if (s->ntshapes == TSHAPES_MAX ||
            sl_grow((void **)&s->tshapes, &s->tshapes_cap, s->ntshapes + 1,
                 sizeof(*s->tshapes)) < 0)
            return;
        s->tshapes[i].shape = *sh;
        s->tshapes[i].weight = 0;
        s->ntshapes++;
    }
    s->tshapes[i].weight += tasks;
    s->tshape_total += tasks;
    if (s->tshape_total > 1e6) {
        /* decay: halve, and forget shapes that fell to nothing */
        int keep = 0;
        s->tshape_total = 0;
        for (int k = 0; k < s->ntshapes; k++) {
            s->tshapes[k].weight /= 2;
            if (s->tshapes[k].weight >= 0.5) {
                s->tshapes[keep++] = s->tshapes[k];
                s->tshape_total += s->tshapes[k].weight;
            }
        }
        s->ntshapes = keep;
    }
    if (s->cl.ntypical == 0 || ++s->since_typical >= TYPICAL_EVERY)
        typical_update(s);
}

int sl_sched_set_typical(struct sl_sched *s, const struct sl_sched_typical *t, int n)
{
    struct cl_typical *ct = n > 0 ? calloc((size_t)n, sizeof(*ct)) : NULL;
    int rc;

    if (n > 0 && !ct)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        ct[i].cpu_milli = t[i].cpu_milli;
        ct[i].num_gpu = t[i].gpus;
        ct[i].gpu_milli = t[i].gpus ? t[i].gpu_milli : 0;
        ct[i].models = t[i].models;
        ct[i].weight = t[i].weight;
    }
    rc = cl_set_typical(&s->cl, ct, n);
    free(ct);
    if (rc == 0)
        s->typical_fixed = true;
    return rc;
}

void sl_sched_frag(const struct sl_sched *s, double *frag, double *idle)
{
    *frag = *idle = 0;
    for (int i = 0; i < s->cl.nnodes; i++) {
        *frag += cl_node_frag(&s->cl, i);
        *idle += s->cl.nodes[i].gpu_free_sum;
    }
}

/* ---- jobs -------------------------------------------------------------- */

/* Validate and build a job from its spec. */
static int job_make(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                    struct job **out, struct sl_error *why)
{
    struct job *j;
    int qu;

    if (sp->id <= 0)
        return sl_errorf_field(why, -EINVAL, "id", "job id must be positive");
    if (sl_imap_get(&s->jobs, sp->id))
        return sl_errorf_field(why, -EEXIST, "id", "job %lld is already known",
                               (long long)sp->id);
    if (sp->queue < 0 || sp->queue >= s->nqueues)
        return sl_errorf_field(why, -EINVAL, "spec.queue", "unknown queue");
    if (sp->pclass < 0 || sp->pclass >= s->nclasses)
        return sl_errorf_field(why, -EINVAL, "spec.priorityClass", "unknown class");
    if (sp->user < 0 || sp->user >= s->nusers)
        return sl_errorf_field(why, -EINVAL, "user", "unknown user");
    if (sp->tasks < 1 || sp->tasks > SL_MAX_TASKS)
        return sl_errorf_field(why, -EINVAL, "spec.tasks", "must be 1..%d", SL_MAX_TASKS);
    if (sp->gpus < 0 || sp->gpus > SL_SCHED_MAX_GPUS)
        return sl_errorf_field(why, -EINVAL, "spec.resources.gpus", "must be 0..%d",
                               SL_SCHED_MAX_GPUS);
    if (sp->gpu_milli < 0 || sp->gpu_milli > CL_WHOLE || (sp->gpus && sp->gpu_milli))
        return sl_errorf_field(why, -EINVAL, "spec.resources.gpuMilli",
                               "must be 1..1000 and only without gpus");
    if (sp->cpu_milli < 0 || sp->cpu_milli > INT64_MAX / SL_MAX_TASKS ||
        sp->mem_bytes < 0 || sp->mem_bytes > INT64_MAX / SL_MAX_TASKS)
        return sl_errorf_field(why, -EINVAL, "spec.resources", "out of range");
    if (sp->topology < SL_TOPO_ANY || sp->topology > SL_TOPO_SAME_DOMAIN)
        return sl_errorf_field(why, -EINVAL, "spec.topology", "unknown topology");
    if (sp->max_runtime_ms < 0)
        return sl_errorf_field(why, -EINVAL, "spec.maxRuntime", "negative");
    if (!(j = calloc(1, sizeof(*j))))
        return sl_errorf(why, -ENOMEM, "out of memory");
    j->id = sp->id;
    j->submit_ms = sp->submit_ms;
    j->not_before_ms = sp->not_before_ms;
    j->max_runtime_ms = sp->max_runtime_ms;
    j->tasks = sp->tasks;
    j->queue = (int16_t)sp->queue;
    j->pclass = (int16_t)sp->pclass;
    j->user = sp->user;
    j->topology = (uint8_t)sp->topology;
    j->shape.cpu_milli = sp->cpu_milli;
    j->shape.mem_bytes = sp->mem_bytes;
    if (sp->gpus > 0) {
        j->shape.num_gpu = sp->gpus;
        j->shape.gpu_milli = CL_WHOLE;
    } else if (sp->gpu_milli > 0) {
        j->shape.num_gpu = 1;
        j->shape.gpu_milli = sp->gpu_milli;
    }
    j->shape.models = sp->models;
    for (int i = 0; sp->gpu_models && sp->gpu_models[i]; i++) {
        int m = sl_sched_model(s, sp->gpu_models[i]);
        if (m < 0) {
            free(j);
            return sl_errorf_field(why, m == -ENOSPC ? -ENOSPC : -EINVAL,
                                   "spec.resources.gpuModels",
                                   m == -ENOSPC ? "more than %d GPU models"
                                                : "bad GPU model",
                                   SL_SCHED_MAX_MODELS);
        }
        j->shape.models |= 1u << m;
    }
    if ((qu = qu_get(s, sp->queue, sp->user)) < 0) {
        free(j);
        return sl_errorf(why, -ENOMEM, "out of memory");
    }
    j->qu = qu;
    j->run_idx = -1;
    *out = j;
    return 0;
}

static int fresh_add(struct sl_sched *s, int64_t id)
{
    if (sl_grow((void **)&s->fresh, &s->fresh_cap, s->nfresh + 1, sizeof(*s->fresh)) < 0)
        return -ENOMEM;
    s->fresh[s->nfresh++] = (struct job *)(intptr_t)id;
    return 0;
}

/* Put pending job 'j' in its bucket. */
static int job_enqueue(struct sl_sched *s, struct job *j)
{
    struct queue *q = &s->queues[j->queue];
    struct bucket *b = bucket_get(s, q, j->queue, j->user, j->pclass);

    if (!b || fresh_add(s, j->id) < 0)
        return -ENOMEM;
    j->state = J_PENDING;
    j->blocker = B_NEW;
    j->gen = s->passes;
    bucket_insert(b, j);
    q->npending++;
    s->npending++;
    return 0;
}

int sl_sched_job_add(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                     struct sl_error *why)
{
    struct job *j = NULL;
    int rc;

    if ((rc = job_make(s, sp, &j, why)) < 0)
        return rc;
    if ((rc = sl_imap_put(&s->jobs, j->id, j)) < 0) {
        job_free(j);
        return sl_errorf(why, rc, "out of memory");
    }
    if ((rc = job_enqueue(s, j)) < 0) {
        sl_imap_del(&s->jobs, j->id);
        job_free(j);
        return sl_errorf(why, rc, "out of memory");
    }
    typical_learn(s, &j->shape, j->tasks);
    return 0;
}

/* The running jobs with a maxRuntime, by expected end then id: what the
 * reservations read, kept in order so that no pass sorts them. */
static bool ends_before(const struct job *a, const struct job *b)
{
    int64_t ea = a->start_ms + a->max_runtime_ms, eb = b->start_ms + b->max_runtime_ms;

    return ea != eb ? ea < eb : a->id < b->id;
}

static int byend_pos(const struct sl_sched *s, const struct job *j)
{
    int lo = 0, hi = s->nbyend;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ends_before(s->byend[mid], j))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* 'j' runs from 'start_ms' (its start_ms is set here). */
static int run_add(struct sl_sched *s, struct job *j, int64_t start_ms)
{
    int pos;

    if (sl_grow((void **)&s->run, &s->run_cap, s->nrun + 1, sizeof(*s->run)) < 0 ||
        sl_grow((void **)&s->byend, &s->byend_cap, s->nbyend + 1, sizeof(*s->byend)) < 0)
        return -ENOMEM;
    j->start_ms = start_ms;
    j->run_idx = s->nrun;
    s->run[s->nrun++] = j;
    if (j->max_runtime_ms > 0) {
        pos = byend_pos(s, j);
        memmove(&s->byend[pos + 1], &s->byend[pos],
                sizeof(*s->byend) * (size_t)(s->nbyend - pos));
        s->byend[pos] = j;
        s->nbyend++;
    }
    return 0;
}

static void run_del(struct sl_sched *s, struct job *j)
{
    int i = j->run_idx;

    if (i < 0 || i >= s->nrun || s->run[i] != j)
        return;
    s->run[i] = s->run[--s->nrun];
    s->run[i]->run_idx = i;
    j->run_idx = -1;
    if (j->max_runtime_ms > 0) {
        int pos = byend_pos(s, j);
        if (pos < s->nbyend && s->byend[pos] == j) {
            memmove(&s->byend[pos], &s->byend[pos + 1],
                    sizeof(*s->byend) * (size_t)(s->nbyend - pos - 1));
            s->nbyend--;
        }
    }
}

int sl_sched_job_add_running(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                             const struct sl_sched_task_place *tasks,
                             int64_t started_ms, struct sl_error *why)
{
    struct job *j = NULL;
    int rc, t;

    if ((rc = job_make(s, sp, &j, why)) < 0)
        return rc;
    if (!(j->places = calloc((size_t)j->tasks, sizeof(*j->places)))) {
        job_free(j);
        return sl_errorf(why, -ENOMEM, "out of memory");
    }
    memcpy(j->places, tasks, sizeof(*tasks) * (size_t)j->tasks);
    for (t = 0; t < j->tasks; t++)
        if (cl_take_exact(&s->cl, &j->shape, &j->places[t]) < 0)
            break;
    if (t < j->tasks) {
        for (int u = t - 1; u >= 0; u--)
            cl_give(&s->cl, &j->shape, &j->places[u]);
        job_free(j);
        return sl_errorf_field(why, -EINVAL, "placement",
                               "task %d's placement does not fit its node", t);
    }
    if ((rc = sl_imap_put(&s->jobs, j->id, j)) < 0 || (rc = run_add(s, j, started_ms)) < 0) {
        sl_imap_del(&s->jobs, j->id);
        for (t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &j->places[t]);
        job_free(j);
        return sl_errorf(why, -ENOMEM, "out of memory");
    }
    j->state = J_RUNNING;
    j->order_ms = started_ms;
    j->opportunistic = s->classes[j->pclass].opportunistic;
    charge(s, j, 1, started_ms);
    s->queues[j->queue].nrunning++;
    typical_learn(s, &j->shape, j->tasks);
    return 0;
}

/* A terminating job stopped: its preemptor has one victim fewer. */
static void victim_gone(struct sl_sched *s, struct job *j)
{
    struct job *p;

    if (j->state != J_TERMINATING || !j->for_job)
        return;
    if ((p = sl_imap_get(&s->jobs, j->for_job)) && p->nvictims > 0)
        p->nvictims--;
    j->for_job = 0;
}

/* Stop a running or terminating job: resources and charges back. */
static void job_stop(struct sl_sched *s, struct job *j, int64_t now)
{
    victim_gone(s, j);
    charge(s, j, -1, now);
    for (int t = j->tasks - 1; t >= 0; t--)
        cl_give(&s->cl, &j->shape, &j->places[t]);
    free(j->places);
    j->places = NULL;
    run_del(s, j);
    s->queues[j->queue].nrunning--;
}

int sl_sched_job_remove(struct sl_sched *s, int64_t id, int64_t now_ms)
{
    struct job *j = sl_imap_get(&s->jobs, id);

    if (!j)
        return -ENOENT;
    if (j->state == J_PENDING) {
        claim(s, j, false);
        bucket_remove(j);
        s->queues[j->queue].npending--;
        s->npending--;
        if (j->nvictims > 0) {
            /* its victims stop anyway; they no longer owe it anything */
            for (int i = 0; i < s->nrun; i++)
                if (s->run[i]->for_job == j->id)
                    s->run[i]->for_job = 0;
        }
    } else {
        job_stop(s, j, now_ms);
    }
    sl_imap_del(&s->jobs, id);
    job_free(j);
    return 0;
}

int sl_sched_job_requeue(struct sl_sched *s, int64_t id, int64_t now_ms,
                         int64_t not_before_ms)
{
    struct job *j = sl_imap_get(&s->jobs, id);

    if (!j)
        return -ENOENT;
    if (j->state == J_PENDING)
        return sl_sched_job_backoff(s, id, not_before_ms);
    job_stop(s, j, now_ms);
    j->not_before_ms = not_before_ms;
    j->start_ms = 0;
    j->order_ms = 0;
    j->nvictims = 0;
    j->resv_at_ms = 0;
    if (job_enqueue(s, j) < 0) {
        /* cannot happen without memory; keep the job known as pending in
         * no bucket rather than lose it */
        j->state = J_PENDING;
        return -ENOMEM;
    }
    return 0;
}

int sl_sched_job_terminating(struct sl_sched *s, int64_t id, int64_t for_job)
{
    struct job *j = sl_imap_get(&s->jobs, id), *p;

    if (!j)
        return -ENOENT;
    if (j->state == J_TERMINATING)
        return 0;
    if (j->state != J_RUNNING)
        return -EINVAL;
    j->state = J_TERMINATING;
    j->for_job = 0;
    if (for_job > 0 && (p = sl_imap_get(&s->jobs, for_job)) && p->state == J_PENDING) {
        j->for_job = for_job;
        p->nvictims++;
    }
    return 0;
}

int sl_sched_job_backoff(struct sl_sched *s, int64_t id, int64_t not_before_ms)
{
    struct job *j = sl_imap_get(&s->jobs, id);

    if (!j)
        return -ENOENT;
    if (j->state != J_PENDING)
        return -EINVAL;
    j->not_before_ms = not_before_ms;
    return 0;
}

enum sl_sched_job_state sl_sched_job_state(const struct sl_sched *s, int64_t id)
{
    const struct job *j = sl_imap_get(&s->jobs, id);

    if (!j)
        return SL_SCHED_UNKNOWN;
    return j->state == J_PENDING   ? SL_SCHED_PENDING
           : j->state == J_RUNNING ? SL_SCHED_RUNNING
                                   : SL_SCHED_TERMINATING;
}

int sl_sched_pending_count(const struct sl_sched *s) { return s->npending; }
int sl_sched_running_count(const struct sl_sched *s) { return s->nrun; }

/* ---- placement of a whole job ------------------------------------------ */

/* Domains and their nodes, for same-domain gangs. */

/* Place every task of 'j' (shape with 'models') on cluster 'c': all tasks
 * or none. 'scan' uses no index (a scratch cluster). Returns true with the
 * places taken; else c is unchanged and *fit says how many tasks fitted. */
static bool place_on(struct cl_cluster *c, const struct job *j,
                     uint32_t models, bool scan, struct sl_sched_task_place *pl,
                     int *fit)
{
    struct cl_shape sh = j->shape;
    int t = 0;

    sh.models = models;
    *fit = 0;
    /* A gang bound to a node or a domain: how many of its tasks each node
     * could take is counted without placing anything (cl_capacity), and
     * the tasks are placed only where they all fit. */
    if (j->topology == SL_TOPO_SAME_NODE && j->tasks > 1) {
        /* the best node (by one task's score) that takes them all */
        double best_sc = -INFINITY;
        int best = -1;
        for (int n = 0; n < c->nnodes; n++) {
            double sc;
            int gpu, k = cl_capacity(c, n, &sh, j->tasks);
            if (k > *fit)
                *fit = k;
            if (k < j->tasks || !cl_score(c, n, &sh, &sc, &gpu))
                continue;
            if (best < 0 || sc > best_sc) {
                best = n;
                best_sc = sc;
            }
        }
        if (best < 0)
            return false;
        for (t = 0; t < j->tasks; t++)
            cl_take(c, best, &sh, -1, &pl[t]);
        *fit = j->tasks;
        return true;
    }
    if (j->topology == SL_TOPO_SAME_DOMAIN && j->tasks > 1) {
        /* the fullest domain that holds the gang, so that empty domains
         * stay whole for the big gangs */
        int64_t best_free = INT64_MAX;
        int best = -1;
        for (int d = 0; d < c->ndomains; d++) {
            const struct cl_domain *dm = &c->domains[d];
            int64_t freeg = 0;
            int k = 0;
            for (int i = 0; i < dm->nnodes && k < j->tasks; i++)
                k += cl_capacity(c, dm->nodes[i], &sh, j->tasks - k);
            if (k > *fit)
                *fit = k;
            if (k < j->tasks)
                continue;
            for (int i = 0; i < dm->nnodes; i++)
                freeg += c->nodes[dm->nodes[i]].gpu_free_sum;
            if (freeg < best_free) {
                best = d;
                best_free = freeg;
            }
        }
        if (best < 0)
            return false;
        for (t = 0; t < j->tasks; t++) {
            const struct cl_domain *dm = &c->domains[best];
            int gpu, n = cl_best_among(c, &sh, dm->nodes, dm->nnodes, &gpu);
            cl_take(c, n, &sh, gpu, &pl[t]); /* n >= 0: the count says so */
        }
        *fit = j->tasks;
        return true;
    }
    for (t = 0; t < j->tasks; t++) {
        int gpu, n = scan ? cl_best_among(c, &sh, NULL, c->nnodes, &gpu)
                          : cl_best(c, &sh, &gpu);
        if (n < 0)
            break;
        cl_take(c, n, &sh, gpu, &pl[t]);
    }
    *fit = t;
    if (t == j->tasks)
        return true;
    for (int u = t - 1; u >= 0; u--)
        cl_give(c, &sh, &pl[u]);
    return false;
}

bool sched_place_try(struct sl_sched *s, const struct job *j, uint32_t models, int *fit)
{
    struct sl_sched_task_place *pl = malloc(sizeof(*pl) * (size_t)j->tasks);
    bool placed;

    *fit = 0;
    if (!pl)
        return false;
    placed = place_on(&s->cl, j, models, false, pl, fit);
    if (placed)
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &pl[t]);
    free(pl);
    return placed;
}

/* ---- holds (backfill reservations) ------------------------------------ */

static int hold_add(struct sl_sched *s, bool claim, const struct cl_shape *sh,
                    const struct sl_sched_task_place *p)
{
    struct hold **v = claim ? &s->cholds : &s->holds;
    int *n_ = claim ? &s->ncholds : &s->nholds, *cap = claim ? &s->cholds_cap : &s->holds_cap;
    struct cl_node *n = &s->cl.nodes[p->node];
    struct hold h;

    memset(&h, 0, sizeof(h));
    h.place.node = p->node;
    h.place.gpu_milli = p->gpu_milli;
    for (int g = 0; g < p->ngpus; g++)
        if (s->cl.gpu_free[n->gpu0 + p->gpus[g]] >= p->gpu_milli)
            h.place.gpus[h.place.ngpus++] = p->gpus[g];
    h.shape.cpu_milli = sh->cpu_milli < n->cpu_free ? sh->cpu_milli : n->cpu_free;
    h.shape.mem_bytes = sh->mem_bytes < n->mem_free ? sh->mem_bytes : n->mem_free;
    if (h.shape.cpu_milli < 0)
        h.shape.cpu_milli = 0;
    if (h.shape.mem_bytes < 0)
        h.shape.mem_bytes = 0;
    if (!h.place.ngpus && !h.shape.cpu_milli && !h.shape.mem_bytes)
        return 0;
    if (sl_grow((void **)v, cap, *n_ + 1, sizeof(**v)) < 0)
        return -ENOMEM;
    if (cl_take_exact(&s->cl, &h.shape, &h.place) < 0)
        return 0;
    (*v)[(*n_)++] = h;
    return 0;
}

static void holds_release(struct sl_sched *s)
{
    while (s->nholds > 0) {
        struct hold *h = &s->holds[--s->nholds];
        cl_give(&s->cl, &h->shape, &h->place);
    }
}

static void cholds_release(struct sl_sched *s)
{
    while (s->ncholds > 0) {
        struct hold *h = &s->cholds[--s->ncholds];
        cl_give(&s->cl, &h->shape, &h->place);
    }
}

/* Hold, for each preemptor still waiting for its victims, what they have
 * freed already, so that no other job takes it meanwhile (else the
 * preemptor would find its room gone when the last victim stops, and
 * preempt again: a preemption must make its preemptor run). */
static void cholds_apply(struct sl_sched *s)
{
    for (int i = 0; i < s->nnominees; i++) {
        const struct resv *r = &s->nominees[i];
        const struct job *j = sl_imap_get(&s->jobs, r->job_id);
        if (!j || j->state != J_PENDING || j->nvictims <= 0 || !r->places)
            continue;
        for (int t = 0; t < r->ntasks; t++)
            hold_add(s, true, &j->shape, &r->places[t]);
    }
}

/* Hold what reservation 'r' needs that is free now. */
static void holds_apply(struct sl_sched *s, const struct resv *r)
{
    const struct job *j = sl_imap_get(&s->jobs, r->job_id);

    if (!j || j->state != J_PENDING)
        return;
    for (int t = 0; t < r->ntasks; t++)
        hold_add(s, false, &j->shape, &r->places[t]);
}

/* ---- the pass ---------------------------------------------------------- */

struct pass {
    struct sl_sched *s;
    int64_t now;
    struct sl_sched_result *out;
    int starts_cap, preempts_cap;
    int pool_len, pool_cap;       /* out->task_pool */
    int *heap;                    /* queue indices */
    int nheap;
    struct job **head;            /* per queue: its next job this pass */
    struct nofit {                /* requests that fit nowhere now */
        struct cl_shape shape;    /* models: the allowed set, 0 = any */
        int tasks, topology;
    } failed[FAILED_MEMO];
    int nfailed;
    struct pfail {                /* preemption searches that failed */
        struct cl_shape shape;
        int tasks, queue, pclass;
        bool entitled;
    } pfailed[PREEMPT_ATTEMPTS];
    int npfailed;
    struct release *rel;          /* running jobs by expected end */
    int nrel;
    bool rel_ready;               /* until a start changes them */
    struct cl_shape rfailed[FAILED_MEMO]; /* fit after no release */
    int nrfailed;
    /* a preemption trial's state (trial_begin) */
    uint32_t *touch_mark;         /* per node: touch_gen when touched */
    int *touched;                 /* the nodes the released victims ran on */
    int ntouched, touch_cap;
    uint32_t touch_gen;
    bool fits_now;                /* the preemptor fits the cluster as it is */
    const struct job *tjob;       /* the preemptor */
    struct cl_shape tshape;       /* its task, with the models it may use */
    int64_t troom;                /* its tasks the cluster could take */
    int *touched_cap;             /* ... each touched node, as it is now */
    int *touch_idx;               /* per node: its index in touched[] */
    uint32_t *dom_mark;           /* per domain: touch_gen when counted */
    int64_t *dom_room;            /* per domain: the preemptor's tasks it takes */
    int *doms, ndoms, dom_cap;    /* the domains counted */
    int nresv;                    /* reservations made this pass */
    int64_t resv_min_ms;          /* the earliest reservation's start */
    int preempts_left;
    struct cl_cluster scratch;    /* for reservations; nodes owned */
    bool scratch_ready;
    struct sl_sched_task_place *pl; /* scratch places, SL_MAX_TASKS */
    int rc;                       /* -ENOMEM seen */
};

static void wake_at(struct pass *p, int64_t t)
{
    if (t > p->now && (!p->out->wake_ms || t < p->out->wake_ms))
        p->out->wake_ms = t;
}

/* The best bucket head of queue 'q' for this pass, or NULL. */
static struct job *queue_next(struct pass *p, struct queue *q)
{
    struct sl_sched *s = p->s;
    struct job *best = NULL;
    double best_share = 0;

    for (int i = 0; i < q->nbuckets; i++) {
        struct bucket *b = q->buckets[i];
        struct job *j = b->cursor;
        double sh;
        int pv;
        if (!j)
            continue;
        pv = s->classes[j->pclass].value;
        {
            /* a user's share changes in a pass only when its usage does */
            struct qu *u = &s->qus[j->qu];
            if (u->share_pass != s->passes + 1) {
                u->share = sched_user_share(s, u, p->now);
                u->share_pass = s->passes + 1;
            }
            sh = u->share;
        }
        if (!best || pv > s->classes[best->pclass].value ||
            (pv == s->classes[best->pclass].value &&
             (sh < best_share - SHARE_EPS ||
              (sh <= best_share + SHARE_EPS && before(j, best))))) {
            best = j;
            best_share = sh;
        }
    }
    return best;
}

/* Heap order: better queue first. */
static bool heap_less(const struct pass *p, int a, int b)
{
    const struct sl_sched *s = p->s;
    const struct job *ja = p->head[a], *jb = p->head[b];
    int va = s->classes[ja->pclass].value, vb = s->classes[jb->pclass].value;

    if (va != vb)
        return va > vb;
    if (fabs(s->queues[a].share - s->queues[b].share) > SHARE_EPS)
        return s->queues[a].share < s->queues[b].share;
    if (before(ja, jb))
        return true;
    if (before(jb, ja))
        return false;
    return a < b;
}

static void heap_push(struct pass *p, int q)
{
    int i = p->nheap++;

    p->heap[i] = q;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!heap_less(p, p->heap[i], p->heap[up]))
            break;
        int t = p->heap[i];
        p->heap[i] = p->heap[up];
        p->heap[up] = t;
        i = up;
    }
}

static int heap_pop(struct pass *p)
{
    int top = p->heap[0], i = 0;

    p->heap[0] = p->heap[--p->nheap];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < p->nheap && heap_less(p, p->heap[l], p->heap[m]))
            m = l;
        if (r < p->nheap && heap_less(p, p->heap[r], p->heap[m]))
            m = r;
        if (m == i)
            break;
        int t = p->heap[i];
        p->heap[i] = p->heap[m];
        p->heap[m] = t;
        i = m;
    }
    return top;
}

/* The memo of requests that could not be placed in this pass (capacity
 * only shrinks during a pass): a request no smaller in any way, allowed no
 * more GPU models, with no fewer tasks under the same topology, cannot be
 * placed either; nor can any gang whose one task could not. */
static bool failed_has(const struct pass *p, const struct job *j, uint32_t models)
{
    uint32_t all = p->s->cl.nmodels >= 32 ? UINT32_MAX : ((1u << p->s->cl.nmodels) - 1);
    uint32_t want = models ? models : all;
    const struct cl_shape *sh = &j->shape;

    for (int i = 0; i < p->nfailed; i++) {
        const struct nofit *f = &p->failed[i];
        uint32_t had = f->shape.models ? f->shape.models : all;
        if (sh->cpu_milli >= f->shape.cpu_milli && sh->mem_bytes >= f->shape.mem_bytes &&
            sh->num_gpu >= f->shape.num_gpu && sh->gpu_milli >= f->shape.gpu_milli &&
            (f->shape.num_gpu > 0 || sh->num_gpu == 0) &&
            (sh->num_gpu == 0 || (want & ~had) == 0) && j->tasks >= f->tasks &&
            (f->tasks == 1 || f->topology == j->topology))
            return true;
    }
    return false;
}

static void failed_add(struct pass *p, const struct job *j, uint32_t models)
{
    struct nofit *f;

    if (p->nfailed == FAILED_MEMO)
        return;
    f = &p->failed[p->nfailed++];
    f->shape = j->shape;
    f->shape.models = models;
    f->tasks = j->tasks;
    f->topology = j->tasks > 1 ? j->topology : SL_TOPO_ANY;
}

static int out_start(struct pass *p, struct job *j)
{
    struct sl_sched_result *o = p->out;
    struct sl_sched_start *st;

    if (sl_grow((void **)&o->starts, &p->starts_cap, o->nstarts + 1, sizeof(*o->starts)) < 0)
        return -ENOMEM;
    if (sl_grow((void **)&o->task_pool, &p->pool_cap, p->pool_len + j->tasks,
                sizeof(*o->task_pool)) < 0)
        return -ENOMEM;
    st = &o->starts[o->nstarts];
    memcpy(o->task_pool + p->pool_len, j->places, sizeof(*st->tasks) * (size_t)j->tasks);
    p->pool_len += j->tasks;
    st->tasks = NULL; /* the pool may still move: pointed at by pass_fini */
    st->job_id = j->id;
    st->ntasks = j->tasks;
    o->nstarts++;
    return 0;
}

/* Start pending job 'j' on the places in p->pl (already taken). */
static int start(struct pass *p, struct job *j)
{
    struct sl_sched *s = p->s;
    struct queue *q = &s->queues[j->queue];

    if (!(j->places = malloc(sizeof(*j->places) * (size_t)j->tasks)) ||
        run_add(s, j, p->now) < 0) {
        j->start_ms = 0;
        free(j->places);
        j->places = NULL;
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &p->pl[t]);
        return -ENOMEM;
    }
    memcpy(j->places, p->pl, sizeof(*j->places) * (size_t)j->tasks);
    bucket_remove(j);
    q->npending--;
    s->npending--;
    claim(s, j, false);
    p->rel_ready = false;
    j->state = J_RUNNING;
    if (!j->order_ms)
        j->order_ms = p->now;
    j->resv_at_ms = 0;
    j->nvictims = 0;
    j->opportunistic = s->classes[j->pclass].opportunistic;
    charge(s, j, 1, p->now);
    q->nrunning++;
    q->share = sched_queue_share(s, q, p->now);
    if (out_start(p, j) < 0)
        return -ENOMEM; /* the job runs; the caller learns it from the state */
    return 0;
}

/* The model mask to place with: quota's allowed models, or 0 (any) when
 * that is no restriction, or the job needs no GPU. */
static uint32_t placement_models(const struct sl_sched *s, const struct job *j,
                                 uint32_t quota_models)
{
    uint32_t all = s->cl.nmodels >= 32 ? UINT32_MAX : ((1u << s->cl.nmodels) - 1);

    if (j->shape.num_gpu == 0)
        return j->shape.models;
    if (!j->shape.models && (quota_models & all) == all)
        return 0;
    return quota_models;
}

/* Whether queue 'q' stays within its nominal quota with job 'j' added to
 * what it uses and what its other preemptors have claimed. */
static bool within_nominal(const struct queue *q, const struct job *j,
                           const int64_t req[NDIMS])
{
    for (int d = SL_DIM_CPU; d <= SL_DIM_GPU; d++) {
        int64_t others = q->claimed[d] - (j->claimed ? req[d] : 0);
        if (req[d] && q->nominal.v[d] >= 0 &&
            q->used[d] + others + req[d] > q->nominal.v[d])
            return false;
    }
    return true;
}

/* Whether queue 'q' uses more than its nominal quota of a resource that
 * 'req' asks for (borrowing CPU is no reason to lose GPUs). */
static bool borrowing(const struct queue *q, const int64_t req[NDIMS])
{
    for (int d = 0; d < NDIMS; d++)
        if (req[d] && q->nominal.v[d] >= 0 && q->used[d] > q->nominal.v[d])
            return true;
    return false;
}

struct cand {
    struct job *j;
    enum sl_preempt_why why;
    int value;                    /* the victim's priority */
};

/* Victims in the order they are taken: opportunistic first, then the
 * lowest priority, then the youngest, then the highest id. A preemptor's
 * age counts from when it was granted its victims, not from its start
 * after they stopped: else, being the youngest, it would be the first
 * taken back when its queue goes over nominal through jobs that borrowed
 * meanwhile, and two queues would reclaim from each other for ever. */
static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    int ox = x->why == SL_PREEMPT_OPPORTUNISTIC, oy = y->why == SL_PREEMPT_OPPORTUNISTIC;

    if (ox != oy)
        return oy - ox;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->j->order_ms != y->j->order_ms)
        return x->j->order_ms > y->j->order_ms ? -1 : 1;
    return (x->j->id < y->j->id) - (x->j->id > y->j->id);
}

/* ---- preemption trials -------------------------------------------------
 *
 * A victim search releases candidates from the live cluster and its
 * quotas, tests whether the preemptor fits, and restores them. The trial
 * writes no change log: every change is undone before the search ends, so
 * the placement indexes stay valid, where logging thousands of releases
 * and restores would make every index rebuild. The indexes are therefore
 * not consulted during a trial: trial_fits() tests the nodes the released
 * victims ran on, or counts capacity, without them. */

static void trial_begin(struct pass *p, const struct job *j, bool placement_failed)
{
    struct sl_sched *s = p->s;
    uint32_t all = s->cl.nmodels >= 32 ? UINT32_MAX : ((1u << s->cl.nmodels) - 1);
    int fit;

    p->ntouched = 0;
    p->ndoms = 0;
    p->touch_gen++;
    p->tjob = j;
    p->tshape = j->shape;
    p->tshape.models = placement_models(s, j, j->shape.models ? j->shape.models : all);
    /* A job held back by quota alone may fit as the cluster is: then only
     * its quota has to be freed. */
    p->fits_now = false;
    if (!placement_failed && place_on(&s->cl, j, p->tshape.models, false, p->pl, &fit)) {
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &p->pl[t]);
        p->fits_now = true;
    }
    /* How many of its tasks the cluster takes now: nothing outside the
     * touched nodes changes during the trial, so a test need only recount
     * those (trial_touch). A job that was not placed fits nowhere now. */
    p->troom = 0;
    if (!p->fits_now && !placement_failed)
        for (int n = 0; n < s->cl.nnodes; n++)
            p->troom += cl_capacity(&s->cl, n, &p->tshape, GANG_COUNT_MAX);
    s->cl.no_log = true;
}

static void trial_end(struct pass *p)
{
    p->s->cl.no_log = false;
}

/* Node 'n' is about to change in the trial: note it; after, recount. */
static void trial_touch(struct pass *p, int n, bool after)
{
    const struct cl_cluster *c = &p->s->cl;
    int i;

    if (p->touch_mark[n] != p->touch_gen) {
        int d = c->nodes[n].domain;
        p->touch_mark[n] = p->touch_gen;
        i = p->touch_idx[n] = p->ntouched++;
        p->touched[i] = n;
        p->touched_cap[i] = cl_capacity(c, n, &p->tshape, GANG_COUNT_MAX);
        if (p->tjob->topology == SL_TOPO_SAME_DOMAIN && d >= 0 &&
            p->dom_mark[d] != p->touch_gen) {
            /* its domain's room, counted before anything in it changed */
            const struct cl_domain *dm = &c->domains[d];
            p->dom_mark[d] = p->touch_gen;
            p->dom_room[d] = 0;
            for (int m = 0; m < dm->nnodes; m++)
                p->dom_room[d] += cl_capacity(c, dm->nodes[m], &p->tshape, GANG_COUNT_MAX);
            p->doms[p->ndoms++] = d;
        }
    }
    if (after) {
        int k = cl_capacity(c, n, &p->tshape, GANG_COUNT_MAX), d = c->nodes[n].domain;
        i = p->touch_idx[n];
        p->troom += k - p->touched_cap[i];
        if (p->tjob->topology == SL_TOPO_SAME_DOMAIN && d >= 0)
            p->dom_room[d] += k - p->touched_cap[i];
        p->touched_cap[i] = k;
    }
}

/* Take a victim's resources away for a trial. */
static void trial_release(struct pass *p, struct job *v)
{
    struct sl_sched *s = p->s;

    charge_raw(s, v, -1);
    for (int t = v->tasks - 1; t >= 0; t--) {
        trial_touch(p, v->places[t].node, false);
        cl_give(&s->cl, &v->shape, &v->places[t]);
        trial_touch(p, v->places[t].node, true);
    }
}

static void trial_restore(struct pass *p, struct job *v)
{
    struct sl_sched *s = p->s;

    for (int t = 0; t < v->tasks; t++) {
        cl_take_exact(&s->cl, &v->shape, &v->places[t]);
        trial_touch(p, v->places[t].node, true);
    }
    charge_raw(s, v, 1);
}

/* Would 'j' be admitted and placed with the released victims gone? With
 * 'places', leaves a placement in p->pl (unless it fitted before the
 * trial: then the caller places it after). Takes nothing. */
static bool trial_fits(struct pass *p, struct job *j, bool places)
{
    struct sl_sched *s = p->s;
    struct cl_cluster *c = &s->cl;
    struct quota_why qw;
    struct cl_shape sh = j->shape;
    uint32_t models;
    int fit, k = 0;

    if (!s->classes[j->pclass].opportunistic && !sched_quota_ok(s, j, &models, &qw))
        return false;
    if (s->classes[j->pclass].opportunistic)
        models = j->shape.models;
    models = placement_models(s, j, models);
    if (p->fits_now && models == p->tshape.models)
        return true;
    sh.models = models;
    if (models != p->tshape.models) {
        /* the quota narrowed the models: no counts for these, place */
        if (!place_on(c, j, models, true, p->pl, &fit))
            return false;
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(c, &j->shape, &p->pl[t]);
        return true;
    }
    if (j->tasks > 1 && j->topology == SL_TOPO_SAME_NODE) {
        /* only a touched node can take them all now */
        for (int i = 0; i < p->ntouched && k < j->tasks; i++)
            if (p->touched_cap[i] >= j->tasks)
                k = j->tasks;
        if (k < j->tasks)
            return false;
    } else if (j->tasks > 1 && j->topology == SL_TOPO_SAME_DOMAIN) {
        /* only a domain with a touched node can hold them now */
        bool any = false;
        for (int i = 0; i < p->ndoms && !any; i++)
            any = p->dom_room[p->doms[i]] >= j->tasks;
        if (!any)
            return false;
    } else if (p->troom < j->tasks) {
        return false;
    }
    if (!places)
        return true;
    if (j->tasks > 1 && j->topology != SL_TOPO_ANY) {
        /* place_on counts capacity for these and uses no index */
        if (!place_on(c, j, models, true, p->pl, &fit))
            return false;
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(c, &j->shape, &p->pl[t]);
        return true;
    }
    if (j->tasks == 1) {
        /* the best touched node by the policy (ties to the lowest index,
         * as everywhere) */
        int gpu = -1, best = -1;
        double best_sc = -INFINITY;
        for (int i = 0; i < p->ntouched; i++) {
            int n = p->touched[i], g;
            double sc;
            if (p->touched_cap[i] > 0 && cl_score(c, n, &sh, &sc, &g) &&
                (best < 0 || sc > best_sc || (sc == best_sc && n < best))) {
                best = n;
                best_sc = sc;
                gpu = g;
            }
        }
        if (best < 0)
            return false;
        cl_take(c, best, &sh, gpu, &p->pl[0]);
        cl_give(c, &sh, &p->pl[0]);
        return true;
    }
    /* a gang that may go anywhere: first where the victims ran (the room
     * to hold for it), then wherever else there is room */
    k = 0;
    for (int i = 0; i < p->ntouched && k < j->tasks; i++)
        while (k < j->tasks && cl_fit(c, p->touched[i], &sh) == CL_FITS)
            cl_take(c, p->touched[i], &sh, -1, &p->pl[k++]);
    for (int n = 0; n < c->nnodes && k < j->tasks; n++)
        while (k < j->tasks && cl_fit(c, n, &sh) == CL_FITS)
            cl_take(c, n, &sh, -1, &p->pl[k++]);
    for (int t = k - 1; t >= 0; t--)
        cl_give(c, &sh, &p->pl[t]);
    return k == j->tasks;
}

static int out_preempt(struct pass *p, struct job *v, struct job *j,
                       enum sl_preempt_why why)
{
    struct sl_sched_result *o = p->out;

    if (sl_grow((void **)&o->preempts, &p->preempts_cap, o->npreempts + 1,
             sizeof(*o->preempts)) < 0)
        return -ENOMEM;
    o->preempts[o->npreempts].job_id = v->id;
    o->preempts[o->npreempts].for_job = j->id;
    o->preempts[o->npreempts].why = why;
    o->npreempts++;
    return 0;
}

/* Record 'j' as a preemptor that will run at 'pl' once its victims stop
 * (one entry per job: a preemptor that preempts again is updated). Without
 * memory it still goes first, only without its room held. */
static void nominee_set(struct sl_sched *s, const struct job *j,
                        const struct sl_sched_task_place *pl)
{
    struct resv *r = NULL;

    for (int i = 0; i < s->nnominees && !r; i++)
        if (s->nominees[i].job_id == j->id)
            r = &s->nominees[i];
    if (!r) {
        if (sl_grow((void **)&s->nominees, &s->nominees_cap, s->nnominees + 1,
                 sizeof(*s->nominees)) < 0)
            return;
        r = &s->nominees[s->nnominees++];
        memset(r, 0, sizeof(*r));
        r->job_id = j->id;
    }
    free(r->places);
    r->ntasks = j->tasks;
    if ((r->places = malloc(sizeof(*r->places) * (size_t)j->tasks)))
        memcpy(r->places, pl, sizeof(*r->places) * (size_t)j->tasks);
    /* what is free of it already is held from now on, in this pass too */
    for (int t = 0; r->places && t < r->ntasks; t++)
        hold_add(s, true, &j->shape, &r->places[t]);
}

/* Room for a trial's notes of touched nodes (one mark per cluster node). */
static int trial_room(struct pass *p)
{
    int n = p->s->cl.nnodes, nd = p->s->cl.ndomains;

    if (p->dom_cap < nd) {
        uint32_t *m = realloc(p->dom_mark, sizeof(*m) * (size_t)nd);
        int64_t *r;
        int *d;
        if (!m)
            return -ENOMEM;
        p->dom_mark = m;
        memset(p->dom_mark + p->dom_cap, 0, sizeof(*m) * (size_t)(nd - p->dom_cap));
        if (!(r = realloc(p->dom_room, sizeof(*r) * (size_t)nd)))
            return -ENOMEM;
        p->dom_room = r;
        if (!(d = realloc(p->doms, sizeof(*d) * (size_t)nd)))
            return -ENOMEM;
        p->doms = d;
        p->dom_cap = nd;
    }

    if (p->touch_cap < n) {
        uint32_t *m = realloc(p->touch_mark, sizeof(*m) * (size_t)n);
        int *t;
        if (!m)
            return -ENOMEM;
        p->touch_mark = m;
        if (!(t = realloc(p->touched, sizeof(*t) * (size_t)n)))
            return -ENOMEM;
        p->touched = t;
        if (!(t = realloc(p->touched_cap, sizeof(*t) * (size_t)n)))
            return -ENOMEM;
        p->touched_cap = t;
        if (!(t = realloc(p->touch_idx, sizeof(*t) * (size_t)n)))
            return -ENOMEM;
        p->touch_idx = t;
        memset(p->touch_mark + p->touch_cap, 0, sizeof(*m) * (size_t)(n - p->touch_cap));
        p->touch_cap = n;
    }
    return 0;
}

/* A cheap test before the scan of the running jobs: false when none of
 * them can be a victim of 'j' (most blocked jobs of a busy cluster). */
static bool may_have_victims(const struct sl_sched *s, const struct job *j,
                             const int64_t req[NDIMS], bool entitled)
{
    const struct queue *q = &s->queues[j->queue];

    if (s->nrun_opp > 0)
        return true;
    if (q->preempt_within == SL_PREEMPT_LOWER_PRIORITY && q->nrunning > 0)
        for (int c = 0; c < s->nclasses; c++)
            if (s->classes[c].value < s->classes[j->pclass].value)
                return true;
    if (entitled) {
        const struct cohort *co = &s->cohorts[q->cohort];
        for (int i = 0; i < co->nqueues; i++)
            if (co->queues[i] != j->queue && borrowing(&s->queues[co->queues[i]], req))
                return true;
    }
    return false;
}

/* Whether a search for 'j' is bound to fail as one for a job no bigger
 * of the same queue and class did in this pass: the candidates are the
 * same, and what did not make room for less makes none for more. */
static bool pfailed_has(const struct pass *p, const struct job *j, bool entitled)
{
    for (int i = 0; i < p->npfailed; i++) {
        const struct pfail *f = &p->pfailed[i];
        const struct cl_shape *sh = &j->shape;
        if (f->queue == j->queue && f->pclass == j->pclass && f->tasks == j->tasks &&
            f->entitled == entitled && sh->cpu_milli >= f->shape.cpu_milli &&
            sh->mem_bytes >= f->shape.mem_bytes && sh->num_gpu >= f->shape.num_gpu &&
            sh->gpu_milli >= f->shape.gpu_milli && sh->models == f->shape.models &&
            j->topology == SL_TOPO_ANY)
            return true;
    }
    return false;
}

static void pfailed_add(struct pass *p, const struct job *j, bool entitled)
{
    struct pfail *f;

    if (p->npfailed == PREEMPT_ATTEMPTS || j->topology != SL_TOPO_ANY)
        return;
    f = &p->pfailed[p->npfailed++];
    f->shape = j->shape;
    f->tasks = j->tasks;
    f->queue = j->queue;
    f->pclass = j->pclass;
    f->entitled = entitled;
}

static int scratch_load(struct pass *p);

/* Would 'j' fit with every candidate gone? Tried on the scratch copy of
 * the cluster (no indexes to update), before any trial on the live one:
 * most searches in a busy cluster fail, and this finds it in one scan. */
static bool fits_without_all(struct pass *p, const struct job *j, const struct cand *c,
                             int nc)
{
    struct sl_sched *s = p->s;
    uint32_t all = s->cl.nmodels >= 32 ? UINT32_MAX : ((1u << s->cl.nmodels) - 1);
    int fit;

    if (scratch_load(p) < 0)
        return true; /* no memory: let the live trial decide */
    for (int i = 0; i < nc; i++)
        for (int t = c[i].j->tasks - 1; t >= 0; t--)
            cl_give(&p->scratch, &c[i].j->shape, &c[i].j->places[t]);
    if (j->tasks == 1) {
        /* any node will do: no scores */
        struct cl_shape sh = j->shape;
        sh.models = placement_models(s, j, j->shape.models ? j->shape.models : all);
        for (int n = 0; n < p->scratch.nnodes; n++)
            if (cl_fit(&p->scratch, n, &sh) == CL_FITS)
                return true;
        return false;
    }
    return place_on(&p->scratch, j,
                    placement_models(s, j, j->shape.models ? j->shape.models : all), true,
                    p->pl, &fit);
}

/* Find victims whose going would let 'j' run, and preempt them. */
static bool try_preempt(struct pass *p, struct job *j, bool placement_failed)
{
    struct sl_sched *s = p->s;
    const struct pclass *jc = &s->classes[j->pclass];
    struct queue *q = &s->queues[j->queue];
    struct cand *c = NULL;
    uint8_t *borrows = NULL;      /* per queue: it borrows in the cohort */
    int nc = 0, chosen = 0, nv = 0;
    int64_t req[NDIMS];
    bool entitled, ok = false;

    if (!s->cfg.preemption || p->preempts_left <= 0 || jc->opportunistic || !s->nrun)
        return false;
    sched_job_request(j, req);
    entitled = q->cohort >= 0 && q->reclaim != SL_RECLAIM_NEVER && within_nominal(q, j, req);
    if (!may_have_victims(s, j, req, entitled) || pfailed_has(p, j, entitled))
        return false;
    if (!(c = malloc(sizeof(*c) * (size_t)(s->nrun < PREEMPT_CANDIDATES ? s->nrun
                                                                       : PREEMPT_CANDIDATES))))
        return false;
    /* which queues of the cohort borrow, once, not once per running job */
    if (entitled && !(borrows = calloc((size_t)s->nqueues, 1))) {
        free(c);
        return false;
    }
    if (entitled) {
        const struct cohort *co = &s->cohorts[q->cohort];
        for (int i = 0; i < co->nqueues; i++) {
            int k = co->queues[i];
            borrows[k] = k != j->queue && borrowing(&s->queues[k], req) &&
                       s->queues[k].cohort == q->cohort;
        }
    }
    for (int i = 0; i < s->nrun && nc < PREEMPT_CANDIDATES; i++) {
        struct job *v = s->run[i];
        const struct pclass *vc = &s->classes[v->pclass];
        int64_t minrt = vc->min_runtime_ms ? vc->min_runtime_ms : s->cfg.min_runtime_ms;
        enum sl_preempt_why why;

        if (v->state != J_RUNNING || !vc->preemptible)
            continue;
        if (v->opportunistic)
            why = SL_PREEMPT_OPPORTUNISTIC;
        else if (v->queue == j->queue && q->preempt_within == SL_PREEMPT_LOWER_PRIORITY &&
                 vc->value < jc->value)
            why = SL_PREEMPT_PRIORITY;
        else if (entitled && borrows[v->queue] &&
                 (q->reclaim == SL_RECLAIM_ANY || vc->value < jc->value))
            why = SL_PREEMPT_RECLAIM;
        else
            continue;
        if (p->now - v->start_ms < minrt) {
            wake_at(p, v->start_ms + minrt); /* may become a victim then */
            continue;
        }
        c[nc].j = v;
        c[nc].why = why;
        c[nc].value = vc->value;
        nc++;
    }
    if (nc == 0)
        goto out;
    p->preempts_left--;
    if (!fits_without_all(p, j, c, nc)) {
        pfailed_add(p, j, entitled);
        goto out;
    }
    qsort(c, (size_t)nc, sizeof(*c), cand_cmp);
    if (trial_room(p) < 0)
        goto out;
    trial_begin(p, j, placement_failed);
    /* Release candidates in order until j fits: the shortest such prefix,
     * found by doubling then bisection (whether j fits only grows with the
     * prefix), so that a search costs a few dozen fit tests, not one per
     * candidate. A reclaim takes from a queue only while it still borrows
     * (Kueue's rule): once it is back within nominal its other jobs are
     * spared. */
    {
        int lo = 0, hi = -1, r = 0;

        for (int next = 1;; next = r * 2 < nc ? r * 2 : nc) {
            for (; r < next; r++) {
                if (c[r].why == SL_PREEMPT_RECLAIM &&
                    !borrowing(&s->queues[c[r].j->queue], req)) {
                    c[r].j = NULL;
                    continue;
                }
                trial_release(p, c[r].j);
            }
            if (trial_fits(p, j, false)) {
                hi = r;
                break;
            }
            lo = r;
            if (r == nc)
                break;
        }
        chosen = r;
        if (hi < 0) {
            pfailed_add(p, j, entitled);
            for (int i = chosen - 1; i >= 0; i--)
                if (c[i].j)
                    trial_restore(p, c[i].j);
            trial_end(p);
            goto out;
        }
        while (hi - lo > 1) {
            int mid = lo + (hi - lo) / 2;
            for (int i = hi - 1; i >= mid; i--)
                if (c[i].j)
                    trial_restore(p, c[i].j);
            if (trial_fits(p, j, false)) {
                hi = mid;
                continue;
            }
            for (int i = mid; i < hi; i++)
                if (c[i].j)
                    trial_release(p, c[i].j);
            lo = mid;
        }
        chosen = hi;
        ok = true;
    }
    /* Reprieve: give back, most valuable first, whom j does not need. */
    for (int i = chosen - 1; i >= 0; i--) {
        if (!c[i].j)
            continue;
        trial_restore(p, c[i].j);
        if (trial_fits(p, j, false)) {
            c[i].j = NULL; /* spared */
            continue;
        }
        trial_release(p, c[i].j);
    }
    trial_fits(p, j, true); /* the places it will take, into p->pl */
    for (int i = 0; i < chosen; i++)
        if (c[i].j)
            trial_restore(p, c[i].j);
    trial_end(p);
    if (p->fits_now) {
        /* it needs no victim's room: where it would go, by the policy */
        int fit;
        uint32_t models = p->tshape.models;
        if (place_on(&s->cl, j, models, false, p->pl, &fit))
            for (int t = j->tasks - 1; t >= 0; t--)
                cl_give(&s->cl, &j->shape, &p->pl[t]);
    }
    for (int i = 0; i < chosen; i++) {
        struct job *v = c[i].j;
        if (!v)
            continue;
        v->state = J_TERMINATING;
        v->for_job = j->id;
        p->rel_ready = false; /* it ends now */
        nv++;
        if (out_preempt(p, v, j, c[i].why) < 0)
            p->rc = -ENOMEM;
    }
    j->nvictims = (int16_t)nv;
    ok = nv > 0;
    if (ok && !j->order_ms)
        j->order_ms = p->now;
    if (ok && entitled)
        claim(s, j, true);
    if (ok)
        nominee_set(s, j, p->pl);
out:
    free(c);
    free(borrows);
    return ok;
}

/* The scratch copy of the cluster for reservations: nodes and GPUs copied
 * from the live cluster (with its holds), no indexes, no change log. */
static int scratch_load(struct pass *p)
{
    struct cl_cluster *live = &p->s->cl, *sc = &p->scratch;

    if (!p->scratch_ready) {
        memset(sc, 0, sizeof(*sc));
        if (!(sc->nodes = malloc(sizeof(*sc->nodes) * (size_t)(live->nnodes + 1))) ||
            !(sc->gpu_free = malloc(sizeof(*sc->gpu_free) * (size_t)(live->ngpus + 1)))) {
            free(sc->nodes);
            sc->nodes = NULL;
            return -ENOMEM;
        }
        p->scratch_ready = true;
    }
    {
        struct cl_node *nodes = sc->nodes;
        int16_t *gf = sc->gpu_free;
        *sc = *live;
        sc->nodes = nodes;
        sc->gpu_free = gf;
        sc->no_log = true;
        sc->trees = NULL;
        sc->ntrees = sc->trees_cap = sc->trees_max = 0;
        memcpy(sc->nodes, live->nodes, sizeof(*sc->nodes) * (size_t)live->nnodes);
        memcpy(sc->gpu_free, live->gpu_free, sizeof(*sc->gpu_free) * (size_t)live->ngpus);
    }
    return 0;
}

struct release {
    int64_t at_ms;
    struct job *j;
};

/* Bring the scratch cluster from the first *at releases done to the
 * first k, noting the nodes that change (p->touched). */
static void rel_move(struct pass *p, const struct release *r, int *at, int k)
{
    struct cl_cluster *sc = &p->scratch;

    for (; *at < k; (*at)++)
        for (int t = r[*at].j->tasks - 1; t >= 0; t--) {
            int n = r[*at].j->places[t].node;
            if (p->touch_mark[n] != p->touch_gen) {
                p->touch_mark[n] = p->touch_gen;
                p->touched[p->ntouched++] = n;
            }
            cl_give(sc, &r[*at].j->shape, &r[*at].j->places[t]);
        }
    while (*at > k) {
        (*at)--;
        for (int t = 0; t < r[*at].j->tasks; t++)
            cl_take_exact(sc, &r[*at].j->shape, &r[*at].j->places[t]);
    }
}

/* Would 'j' (placed nowhere now) fit the scratch cluster as it is? With
 * 'places', where (p->pl). A single task can only fit where a release
 * changed something, the best of those by the policy. */
static bool rel_fits(struct pass *p, struct job *j, uint32_t models, bool places)
{
    struct cl_cluster *sc = &p->scratch;
    struct cl_shape sh = j->shape;
    int fit;

    sh.models = models;
    if (j->tasks == 1) {
        int best = -1, gpu = -1;
        double best_sc = -INFINITY;
        for (int i = 0; i < p->ntouched; i++) {
            int n = p->touched[i], g;
            double score;
            if (!places) {
                if (cl_fit(sc, n, &sh) == CL_FITS)
                    return true;
                continue;
            }
            if (cl_score(sc, n, &sh, &score, &g) &&
                (best < 0 || score > best_sc || (score == best_sc && n < best))) {
                best = n;
                best_sc = score;
                gpu = g;
            }
        }
        if (best < 0)
            return false;
        cl_take(sc, best, &sh, gpu, &p->pl[0]);
        cl_give(sc, &sh, &p->pl[0]);
        return true;
    }
    if (!place_on(sc, j, models, true, p->pl, &fit))
        return false;
    for (int t = j->tasks - 1; t >= 0; t--)
        cl_give(sc, &j->shape, &p->pl[t]);
    return true;
}

/* Give 'j' a reservation: when, by the running jobs' maxRuntime, it could
 * start, and hold now what it will need then. */
static void reserve(struct pass *p, struct job *j, uint32_t models)
{
    struct sl_sched *s = p->s;
    struct release *r;
    struct resv *rv;
    int nr = 0, lo, hi, at = 0;

    if (!s->cfg.backfill || p->nresv >= s->cfg.reservations || !s->nrun)
        return;
    /* The running jobs by expected end, kept through the pass until a
     * start changes them. */
    if (!p->rel_ready) {
        if (!(r = realloc(p->rel, sizeof(*r) * (size_t)s->nrun)))
            return;
        p->rel = r;
        /* the terminating ones end now; then the others with an estimate,
         * in the order s->byend keeps; a job with none may run for ever */
        for (int i = 0; i < s->nrun; i++)
            if (s->run[i]->state == J_TERMINATING) {
                r[nr].at_ms = p->now;
                r[nr++].j = s->run[i];
            }
        for (int i = 0; i < s->nbyend; i++) {
            struct job *x = s->byend[i];
            int64_t end = x->start_ms + x->max_runtime_ms;
            if (x->state == J_TERMINATING)
                continue;
            r[nr].at_ms = end < p->now ? p->now : end;
            r[nr++].j = x;
        }
        p->nrel = nr;
        p->nrfailed = 0;
        p->rel_ready = true;
    }
    r = p->rel;
    nr = p->nrel;
    for (int i = 0; i < p->nrfailed; i++) {
        const struct cl_shape *f = &p->rfailed[i];
        if (j->tasks == 1 && j->shape.cpu_milli >= f->cpu_milli &&
            j->shape.mem_bytes >= f->mem_bytes && j->shape.num_gpu >= f->num_gpu &&
            j->shape.gpu_milli >= f->gpu_milli && models == f->models)
            return; /* no smaller job fitted even after every release */
    }
    /* The fewest releases after which it fits (feasibility only grows):
     * doubling, then bisection, moving the scratch cluster by the
     * difference each time, so that a search costs about as many
     * releases as its answer. */
    if (nr == 0 || scratch_load(p) < 0 || trial_room(p) < 0)
        return;
    p->ntouched = 0;
    p->touch_gen++;
    lo = 0;
    hi = -1;
    for (int next = 1;; next = 2 * next < nr ? 2 * next : nr) {
        rel_move(p, r, &at, next);
        if (rel_fits(p, j, models, false)) {
            hi = next;
            break;
        }
        lo = next;
        if (next == nr)
            break;
    }
    if (hi < 0) {
        if (j->tasks == 1 && p->nrfailed < FAILED_MEMO) {
            p->rfailed[p->nrfailed] = j->shape;
            p->rfailed[p->nrfailed++].models = models;
        }
        return;
    }
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        rel_move(p, r, &at, mid);
        if (rel_fits(p, j, models, false))
            hi = mid;
        else
            lo = mid;
    }
    rel_move(p, r, &at, hi);
    if (!rel_fits(p, j, models, true)) /* the places for hi */
        return;
    lo = hi;
    p->nresv++;
    j->resv_at_ms = r[lo - 1].at_ms;
    if (j->resv_at_ms < p->resv_min_ms)
        p->resv_min_ms = j->resv_at_ms;
    if (sl_grow((void **)&s->resv, &s->resv_cap, s->nresv + 1, sizeof(*s->resv)) < 0)
        return;
    rv = &s->resv[s->nresv];
    if (!(rv->places = malloc(sizeof(*rv->places) * (size_t)j->tasks)))
        return;
    memcpy(rv->places, p->pl, sizeof(*rv->places) * (size_t)j->tasks);
    rv->job_id = j->id;
    rv->at_ms = j->resv_at_ms;
    rv->ntasks = j->tasks;
    s->nresv++;
    holds_apply(s, rv);
}

/* Consider pending job 'j' once. */
static void consider(struct pass *p, struct job *j)
{
    struct sl_sched *s = p->s;
    const struct pclass *jc = &s->classes[j->pclass];
    struct quota_why qw;
    uint32_t models;
    int fit = 0;

    p->out->examined++;
    j->seen = s->passes + 1;
    if (j->not_before_ms > p->now) {
        j->blocker = B_BACKOFF;
        wake_at(p, j->not_before_ms);
        return;
    }
    if (j->nvictims > 0) {
        j->blocker = B_PREEMPTING;
        return;
    }
    if (jc->opportunistic) {
        models = j->shape.models;
    } else if (!sched_quota_ok(s, j, &models, &qw)) {
        j->blocker = qw.what;
        /* within-queue priority or reclaim may free quota */
        if (try_preempt(p, j, false))
            j->blocker = B_PREEMPTING;
        return;
    }
    models = placement_models(s, j, models);
    if (!failed_has(p, j, models)) {
        if (place_on(&s->cl, j, models, false, p->pl, &fit)) {
            if (start(p, j) < 0)
                p->rc = -ENOMEM;
            return;
        }
        if (s->nholds > 0) {
            /* backfill: reserved resources are free again before they are
             * needed if this job ends first */
            bool ends_first = j->max_runtime_ms > 0 &&
                              p->now + j->max_runtime_ms <= p->resv_min_ms;
            bool placed;
            int nh = s->nholds;
            struct hold *saved = malloc(sizeof(*saved) * (size_t)nh);
            if (saved) {
                memcpy(saved, s->holds, sizeof(*saved) * (size_t)nh);
                holds_release(s);
                placed = place_on(&s->cl, j, models, false, p->pl, &fit);
                if (placed && !ends_first) {
                    for (int t = j->tasks - 1; t >= 0; t--)
                        cl_give(&s->cl, &j->shape, &p->pl[t]);
                    j->blocker = B_RESERVED;
                }
                for (int i = 0; i < nh; i++)
                    hold_add(s, false, &saved[i].shape, &saved[i].place);
                free(saved);
                if (placed && ends_first) {
                    if (start(p, j) < 0)
                        p->rc = -ENOMEM;
                    return;
                }
                if (placed)
                    goto blocked; /* B_RESERVED */
            }
        }
        failed_add(p, j, models);
    }
    j->blocker = B_NODES;
blocked:
    j->tasks_fit = (int16_t)fit;
    if (try_preempt(p, j, true)) {
        j->blocker = B_PREEMPTING;
        return;
    }
    if (j->blocker == B_NODES && !j->resv_at_ms)
        reserve(p, j, models);
}

static int pass_init(struct pass *p, struct sl_sched *s, int64_t now,
                     struct sl_sched_result *out)
{
    memset(p, 0, sizeof(*p));
    memset(out, 0, sizeof(*out));
    p->s = s;
    p->now = now;
    p->out = out;
    p->resv_min_ms = INF_MS;
    p->preempts_left = PREEMPT_ATTEMPTS;
    if (!(p->pl = malloc(sizeof(*p->pl) * SL_MAX_TASKS)))
        return -ENOMEM;
    return 0;
}

static void pass_fini(struct pass *p)
{
    struct sl_sched_result *o = p->out;

    for (int i = 0, off = 0; i < o->nstarts; off += o->starts[i++].ntasks)
        o->starts[i].tasks = o->task_pool + off;
    holds_release(p->s);
    cholds_release(p->s);
    if (p->scratch_ready) {
        free(p->scratch.nodes);
        free(p->scratch.gpu_free);
    }
    free(p->pl);
    free(p->heap);
    free(p->head);
    free(p->rel);
    free(p->touch_mark);
    free(p->touched);
    free(p->touched_cap);
    free(p->touch_idx);
    free(p->dom_mark);
    free(p->dom_room);
    free(p->doms);
}

struct fresh_key {
    int value;                    /* priority */
    struct job *j;
};

static int fresh_cmp(const void *a, const void *b)
{
    const struct fresh_key *x = a, *y = b;

    if (x->value != y->value)
        return x->value > y->value ? -1 : 1;
    return before(x->j, y->j) ? -1 : before(y->j, x->j) ? 1 : 0;
}

/* Only the jobs added since the last pass, by priority then submit time,
 * with the last full pass's reservations held. */
static void pass_new(struct pass *p)
{
    struct sl_sched *s = p->s;
    struct fresh_key *k;
    int n = 0;

    cholds_apply(s);
    for (int i = 0; i < s->nresv; i++) {
        holds_apply(s, &s->resv[i]);
        if (s->resv[i].at_ms < p->resv_min_ms)
            p->resv_min_ms = s->resv[i].at_ms;
    }
    p->nresv = s->nresv;
    if (!(k = malloc(sizeof(*k) * (size_t)(s->nfresh + 1)))) {
        p->rc = -ENOMEM;
        return;
    }
    for (int i = 0; i < s->nfresh; i++) {
        struct job *j = sl_imap_get(&s->jobs, (int64_t)(intptr_t)s->fresh[i]);
        if (j && j->state == J_PENDING && j->seen != s->passes + 1) {
            j->seen = s->passes + 1; /* listed once even if requeued twice */
            k[n].value = s->classes[j->pclass].value;
            k[n].j = j;
            n++;
        }
    }
    qsort(k, (size_t)n, sizeof(*k), fresh_cmp);
    for (int i = 0; i < n && p->rc == 0; i++)
        if (k[i].j->state == J_PENDING)
            consider(p, k[i].j);
    free(k);
}

/* Strict FIFO: the rest of queue 'q' waits behind its blocked head. */
static void fifo_block(struct pass *p, struct queue *q)
{
    for (int b = 0; b < q->nbuckets; b++)
        for (struct job *k = q->buckets[b]->cursor; k; k = k->next)
            if (k->seen != p->s->passes + 1) {
                k->blocker = B_FIFO;
                k->seen = p->s->passes + 1;
            }
}

/* Jobs that preempted others go first once their victims have stopped,
 * so that what the victims freed is theirs; what the victims of those
 * still waiting have freed is held for them through the pass. */
static void pass_nominees(struct pass *p)
{
    struct sl_sched *s = p->s;
    int keep = 0;

    cholds_apply(s);
    /* s->nominees may grow (a nominee that preempts again is updated in
     * place) but does not move entries below i */
    for (int i = 0; i < s->nnominees; i++) {
        struct resv r = s->nominees[i];
        struct job *j = sl_imap_get(&s->jobs, r.job_id);
        if (j && j->state == J_PENDING && j->nvictims > 0) {
            j->blocker = B_PREEMPTING;
            j->seen = s->passes + 1;
        } else if (j && j->state == J_PENDING) {
            consider(p, j);
            if (j->state == J_PENDING && j->nvictims == 0) {
                claim(s, j, false); /* what its victims freed went elsewhere */
                j->order_ms = 0;
            }
        }
        r = s->nominees[i]; /* consider() may have updated it */
        if (j && j->state == J_PENDING && j->nvictims > 0)
            s->nominees[keep++] = r;
        else
            free(r.places);
    }
    s->nnominees = keep;
}

static void pass_full(struct pass *p)
{
    struct sl_sched *s = p->s;

    resv_clear(s);
    if (!(p->heap = malloc(sizeof(int) * (size_t)(s->nqueues + 1))) ||
        !(p->head = calloc((size_t)s->nqueues + 1, sizeof(*p->head)))) {
        p->rc = -ENOMEM;
        return;
    }
    for (int qi = 0; qi < s->nqueues; qi++) {
        struct queue *q = &s->queues[qi];
        for (int b = 0; b < q->nbuckets; b++)
            q->buckets[b]->cursor = q->buckets[b]->head;
        q->share = sched_queue_share(s, q, p->now);
    }
    pass_nominees(p);
    for (int qi = 0; qi < s->nqueues; qi++) {
        struct queue *q = &s->queues[qi];
        if (q->npending && (p->head[qi] = queue_next(p, q)))
            heap_push(p, qi);
    }
    while (p->nheap > 0 && p->rc == 0) {
        int qi = heap_pop(p);
        struct job *j = p->head[qi];
        j->bucket->cursor = j->next;
        if (j->seen != s->passes + 1)
            consider(p, j);
        if (s->cfg.strict_fifo && j->state == J_PENDING && j->blocker != B_BACKOFF) {
            fifo_block(p, &s->queues[qi]);
            continue; /* nothing behind it may pass */
        }
        if ((p->head[qi] = queue_next(p, &s->queues[qi])))
            heap_push(p, qi);
    }
}

int sl_sched_pass(struct sl_sched *s, int64_t now_ms, bool new_only,
                  struct sl_sched_result *out)
{
    struct pass p;
    int rc;

    if ((rc = pass_init(&p, s, now_ms, out)) < 0)
        return rc;
    if (new_only && !s->cfg.strict_fifo) /* strict order needs every job */
        pass_new(&p);
    else
        pass_full(&p);
    pass_fini(&p);
    s->nfresh = 0;
    s->passes++;
    return p.rc;
}

void sl_sched_result_fini(struct sl_sched_result *out)
{
    int saved = errno;

    if (!out)
        return;
    free(out->task_pool);
    free(out->starts);
    free(out->preempts);
    memset(out, 0, sizeof(*out));
    errno = saved;
}

/* ---- fill mode --------------------------------------------------------- */

int sl_sched_place_now(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                       struct sl_sched_task_place *tasks)
{
    struct job tmp;
    int fit;

    memset(&tmp, 0, sizeof(tmp));
    tmp.tasks = sp->tasks < 1 ? 1 : sp->tasks;
    tmp.topology = (uint8_t)sp->topology;
    tmp.shape.cpu_milli = sp->cpu_milli;
    tmp.shape.mem_bytes = sp->mem_bytes;
    if (sp->gpus > 0) {
        tmp.shape.num_gpu = sp->gpus;
        tmp.shape.gpu_milli = CL_WHOLE;
    } else if (sp->gpu_milli > 0) {
        tmp.shape.num_gpu = 1;
        tmp.shape.gpu_milli = sp->gpu_milli;
    }
    tmp.shape.models = sp->models;
    for (int i = 0; sp->gpu_models && sp->gpu_models[i]; i++) {
        int m = sl_sched_model(s, sp->gpu_models[i]);
        if (m >= 0)
            tmp.shape.models |= 1u << m;
    }
    return place_on(&s->cl, &tmp, tmp.shape.models, false, tasks, &fit) ? 1 : 0;
}
