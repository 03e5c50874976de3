/*
 * quota.c - admission by quota: a queue's nominal quota, what it may
 * borrow from its cohort (bounded by its borrowing limit and the other
 * queues' lending limits), the per-user limit of its queue, and the
 * per-GPU-model quotas that narrow the models a job may use.
 *
 * Nothing here changes state: the pass and the explanations ask the same
 * questions and get the same answers.
 */
#include "sched_int.h"

#include <string.h>

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

int sl_sch_quota_blockers(const struct sl_sched *s, const struct job *j,
                          struct quota_why *out, int max)
{
    const struct queue *q = &s->queues[j->queue];
    const struct qu *u = &s->qus[j->qu];
    int64_t req[NDIMS];
    uint32_t models;
    struct quota_why w;
    int n = 0;

    job_request(j, req);
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
    if (n == 0 && !sl_sch_quota_ok(s, j, &models, &w))
        out[n++] = w;
    return n;
}

bool sl_sch_quota_ok(const struct sl_sched *s, const struct job *j, uint32_t *models,
                     struct quota_why *why)
{
    const struct queue *q = &s->queues[j->queue];
    const struct qu *u = &s->qus[j->qu];
    int64_t req[NDIMS];
    uint32_t ok = 0, want;
    struct quota_why tmp;

    job_request(j, req);
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
