/*
 * queues.c - the scheduler's catalog: priority classes, cohorts, queues,
 * users, and the manifests that set them. See sched.h.
 *
 * Invariants: names are unique within their kind; a queue is in the
 * member list of exactly the cohort it names; nothing is ever removed, so
 * indexes held by jobs stay valid.
 */
#include "sched_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
