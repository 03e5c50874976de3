/*
 * pass.c - the scheduling pass. See sched.h for the contract, sched_int.h
 * for the data structures, docs/scheduler.md for the policies.
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
 *   3. a job is admitted by quota (quota.c), then placed, all tasks or
 *      none, by the placement policy (place.c, cluster.c); resources held
 *      for backfill reservations are not available to it unless it ends
 *      before they are needed;
 *   4. a job that cannot be placed may preempt (preempt.c);
 *   5. otherwise the first 'reservations' blocked jobs get a reservation
 *      (backfill.c): the earliest time the running jobs' maxRuntime says
 *      enough will be free, and the nodes it would use then. What of those
 *      is free now is held for it, so later jobs cannot delay it (EASY
 *      backfill).
 * A pass over new jobs only considers the jobs added since the last pass,
 * with the last full pass's reservations held.
 *
 * Invariant: what a pass takes in holds it gives back before it returns;
 * the jobs it starts and the victims it preempts are in its result.
 */
#include "sched_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Shares closer than this are equal: submit order decides between them
 * (decayed history never reaches exactly zero). */
#define SHARE_EPS 1e-4

/* The best bucket head of queue 'q' for this pass, or NULL. */
static struct job *queue_next(struct pass *p, struct queue *q)
{
    struct sl_sched *s = p->s;
    /* Held in locals: the compiler cannot see that sl_sch_user_share()
     * leaves them alone, and would load them again in every turn. */
    struct bucket *const *buckets = q->buckets;
    int nbuckets = q->nbuckets;
    uint64_t pass = s->passes + 1;
    struct job *best = NULL;
    double best_share = 0;

    for (int i = 0; i < nbuckets; i++) {
        struct bucket *b = buckets[i];
        struct job *j = b->cursor;
        double sh;
        int pv;
        if (!j)
            continue;
        pv = s->classes[j->pclass].value;
        {
            /* a user's share changes in a pass only when its usage does */
            struct qu *u = &s->qus[j->qu];
            if (u->share_pass != pass) {
                u->share = sl_sch_user_share(s, u, p->now);
                u->share_pass = pass;
            }
            sh = u->share;
        }
        if (!best || pv > s->classes[best->pclass].value ||
            (pv == s->classes[best->pclass].value &&
             (sh < best_share - SHARE_EPS ||
              (sh <= best_share + SHARE_EPS && job_before(j, best))))) {
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
    if (job_before(ja, jb))
        return true;
    if (job_before(jb, ja))
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
        sl_sch_run_add(s, j, p->now) < 0) {
        j->start_ms = 0;
        free(j->places);
        j->places = NULL;
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &p->pl[t]);
        return -ENOMEM;
    }
    memcpy(j->places, p->pl, sizeof(*j->places) * (size_t)j->tasks);
    sl_sch_bucket_remove(j);
    q->npending--;
    s->npending--;
    sl_sch_claim(s, j, false);
    p->rel_ready = false;
    j->state = J_RUNNING;
    if (!j->order_ms)
        j->order_ms = p->now;
    j->resv_at_ms = 0;
    j->nvictims = 0;
    j->opportunistic = s->classes[j->pclass].opportunistic;
    sl_sch_charge(s, j, 1, p->now);
    q->nrunning++;
    q->share = sl_sch_queue_share(s, q, p->now);
    if (out_start(p, j) < 0)
        return -ENOMEM; /* the job runs; the caller learns it from the state */
    return 0;
}

/* What a job that fits nowhere free finds on the resources held for
 * reservations. */
enum held { HELD_NO_FIT, HELD_STARTED, HELD_RESERVED };

/* Backfill: resources held for reservations are free again before they
 * are needed if 'j' ends first. Tries 'j' with the holds released (*fit:
 * how many of its tasks fitted); starts it there when it ends first,
 * else gives the places back. The holds are taken again either way.
 * Without memory, it does not fit. */
static enum held try_held(struct pass *p, struct job *j, uint32_t models, int *fit)
{
    struct sl_sched *s = p->s;
    bool ends_first = j->max_runtime_ms > 0 && p->now + j->max_runtime_ms <= p->resv_min_ms;
    bool placed;
    int nh = s->nholds;
    struct hold *saved = malloc(sizeof(*saved) * (size_t)nh);

    if (!saved)
        return HELD_NO_FIT;
    memcpy(saved, s->holds, sizeof(*saved) * (size_t)nh);
    sl_sch_holds_release(s);
    placed = sl_sch_place_on(&s->cl, j, models, false, p->pl, fit);
    if (placed && !ends_first)
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &p->pl[t]);
    for (int i = 0; i < nh; i++)
        sl_sch_hold_add(s, false, &saved[i].shape, &saved[i].place);
    free(saved);
    if (!placed)
        return HELD_NO_FIT;
    if (!ends_first)
        return HELD_RESERVED;
    if (start(p, j) < 0)
        p->rc = -ENOMEM;
    return HELD_STARTED;
}

/* Consider pending job 'j' once: admit it by quota and place it, or
 * note what blocks it and let it preempt or get a reservation. */
static void consider(struct pass *p, struct job *j)
{
    struct sl_sched *s = p->s;
    const struct pclass *jc = &s->classes[j->pclass];
    struct quota_why qw;
    enum held held = HELD_NO_FIT;
    uint32_t models;
    int fit = 0;

    if (j->on_hold)
        return; /* a held job is considered by nothing */
    p->out->examined++;
    j->seen = s->passes + 1;
    if (j->wait) {
        j->blocker = B_WAIT;
        return;
    }
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
    } else if (!sl_sch_quota_ok(s, j, &models, &qw)) {
        j->blocker = qw.what;
        /* within-queue priority or reclaim may free quota */
        if (sl_sch_try_preempt(p, j, false))
            j->blocker = B_PREEMPTING;
        return;
    }
    models = placement_models(s, j, models);
    if (!failed_has(p, j, models)) {
        if (sl_sch_place_on(&s->cl, j, models, false, p->pl, &fit)) {
            if (start(p, j) < 0)
                p->rc = -ENOMEM;
            return;
        }
        if (s->nholds > 0 && (held = try_held(p, j, models, &fit)) == HELD_STARTED)
            return;
        if (held == HELD_NO_FIT)
            failed_add(p, j, models);
    }
    j->blocker = held == HELD_RESERVED ? B_RESERVED : B_NODES;
    j->tasks_fit = (int16_t)fit;
    if (sl_sch_try_preempt(p, j, true)) {
        j->blocker = B_PREEMPTING;
        return;
    }
    if (j->blocker == B_NODES && !j->resv_at_ms && reservations_open(p))
        sl_sch_reserve(p, j, models);
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
    sl_sch_holds_release(p->s);
    sl_sch_cholds_release(p->s);
    sl_sch_pass_free(p);
}

void sl_sch_pass_free(struct pass *p)
{
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
    return job_before(x->j, y->j) ? -1 : job_before(y->j, x->j) ? 1 : 0;
}

/* Only the jobs added since the last pass, by priority then submit time,
 * with the last full pass's reservations held. */
static void pass_new(struct pass *p)
{
    struct sl_sched *s = p->s;
    struct fresh_key *k;
    int n = 0;

    sl_sch_cholds_apply(s);
    for (int i = 0; i < s->nresv; i++) {
        sl_sch_holds_apply(s, &s->resv[i]);
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
        if (j && j->state == J_PENDING && !j->staged_after && !j->on_hold &&
            j->seen != s->passes + 1) {
            j->seen = s->passes + 1; /* listed once even if requeued twice */
            k[n].value = s->classes[j->pclass].value;
            k[n].j = j;
            n++;
        }
    }
    qsort(k, (size_t)n, sizeof(*k), fresh_cmp);
    for (int i = 0; i < n && p->rc == 0; i++)
        if (k[i].j->state == J_PENDING && !k[i].j->staged_after)
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

    sl_sch_cholds_apply(s);
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
                sl_sch_claim(s, j, false); /* what its victims freed went elsewhere */
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

    sl_sch_resv_clear(s);
    if (!(p->heap = malloc(sizeof(int) * (size_t)(s->nqueues + 1))) ||
        !(p->head = calloc((size_t)s->nqueues + 1, sizeof(*p->head)))) {
        p->rc = -ENOMEM;
        return;
    }
    for (int qi = 0; qi < s->nqueues; qi++) {
        struct queue *q = &s->queues[qi];
        for (int b = 0; b < q->nbuckets; b++)
            q->buckets[b]->cursor = q->buckets[b]->head;
        q->share = sl_sch_queue_share(s, q, p->now);
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
        if (s->cfg.strict_fifo && j->state == J_PENDING && j->blocker != B_BACKOFF &&
            j->blocker != B_WAIT) {
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
