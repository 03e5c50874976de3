/*
 * preempt.c - preemption: finding victims whose going lets a blocked job
 * run, and choosing the fewest.
 *
 * A job that cannot be placed may preempt: opportunistic jobs, lower
 * priority jobs of its own queue, or, when its queue stays within its
 * nominal quota with it and with what its other preemptors claimed, jobs
 * of queues that borrow in the cohort, while they still borrow. Victims
 * are taken in order (opportunistic, lowest priority, youngest first; a
 * preemptor's age counts from when it was granted its victims), the
 * shortest prefix after which the preemptor fits, then given back where
 * it still fits without them; a preemption is made only when the
 * preemptor fits once the victims are gone, and protected jobs
 * (non-preemptible classes, minimum run time) are never chosen. These
 * rules are what keep two queues from reclaiming from each other for ever
 * (docs/scheduler.md).
 *
 * A victim search releases candidates from the live cluster and its
 * quotas, tests whether the preemptor fits, and restores them. The trial
 * writes no change log: every change is undone before the search ends, so
 * the placement indexes stay valid, where logging thousands of releases
 * and restores would make every index rebuild. The indexes are therefore
 * not consulted during a trial: trial_fits() tests the nodes the released
 * victims ran on, or counts capacity, without them.
 */
#include "sched_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PREEMPT_CANDIDATES 4096
#define GANG_COUNT_MAX (1 << 20)   /* tasks counted per node, at most */

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
    if (!placement_failed && sl_sch_place_on(&s->cl, j, p->tshape.models, false, p->pl, &fit)) {
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

    sl_sch_charge_raw(s, v, -1);
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
    sl_sch_charge_raw(s, v, 1);
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

    if (!s->classes[j->pclass].opportunistic && !sl_sch_quota_ok(s, j, &models, &qw))
        return false;
    if (s->classes[j->pclass].opportunistic)
        models = j->shape.models;
    models = placement_models(s, j, models);
    if (p->fits_now && models == p->tshape.models)
        return true;
    sh.models = models;
    if (models != p->tshape.models) {
        /* the quota narrowed the models: no counts for these, place */
        if (!sl_sch_place_on(c, j, models, true, p->pl, &fit))
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
        if (!sl_sch_place_on(c, j, models, true, p->pl, &fit))
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

static int out_preempt(struct pass *p, const struct job *v, const struct job *j,
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
        sl_sch_hold_add(s, true, &j->shape, &r->places[t]);
}

/* Room for a trial's notes of touched nodes (one mark per cluster node). */
int sl_sch_trial_room(struct pass *p)
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

/* Would 'j' fit with every candidate gone? Tried on the scratch copy of
 * the cluster (no indexes to update), before any trial on the live one:
 * most searches in a busy cluster fail, and this finds it in one scan. */
static bool fits_without_all(struct pass *p, const struct job *j, const struct cand *c,
                             int nc)
{
    struct sl_sched *s = p->s;
    uint32_t all = s->cl.nmodels >= 32 ? UINT32_MAX : ((1u << s->cl.nmodels) - 1);
    int fit;

    if (sl_sch_scratch_load(p) < 0)
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
    return sl_sch_place_on(&p->scratch, j,
                           placement_models(s, j, j->shape.models ? j->shape.models : all),
                           true, p->pl, &fit);
}

/* The queues of j's cohort that borrow what 'req' asks for (1 per such
 * queue), found once per search rather than once per running job. Returns
 * a new array of s->nqueues entries, or NULL without memory. */
static uint8_t *cohort_borrowers(const struct sl_sched *s, const struct job *j,
                                 const int64_t req[NDIMS])
{
    const struct queue *q = &s->queues[j->queue];
    const struct cohort *co = &s->cohorts[q->cohort];
    uint8_t *borrows = calloc((size_t)s->nqueues, 1);

    if (!borrows)
        return NULL;
    for (int i = 0; i < co->nqueues; i++) {
        int k = co->queues[i];
        borrows[k] = k != j->queue && borrowing(&s->queues[k], req) &&
                     s->queues[k].cohort == q->cohort;
    }
    return borrows;
}

/* The running jobs 'j' may preempt now, at most PREEMPT_CANDIDATES, into
 * 'c' in run-list order: opportunistic jobs, lower priority jobs of its
 * own queue, and, when 'entitled', jobs of the queues 'borrows' marks. A
 * job protected by its minimum run time only tells the pass when to look
 * again. Returns how many. */
static int victim_candidates(struct pass *p, const struct job *j, bool entitled,
                             const uint8_t *borrows, struct cand *c)
{
    struct sl_sched *s = p->s;
    const struct pclass *jc = &s->classes[j->pclass];
    const struct queue *q = &s->queues[j->queue];
    int nc = 0;

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
    return nc;
}

/* Release candidates in order until j fits: the shortest such prefix,
 * found by doubling then bisection (whether j fits only grows with the
 * prefix), so that a search costs a few dozen fit tests, not one per
 * candidate. A reclaim takes from a queue only while it still borrows
 * (Kueue's rule): once it is back within nominal its other jobs are
 * spared (set to NULL in 'c'). Returns the prefix's length, its victims
 * released in the trial; or -1 when all 'nc' do not make room, every
 * candidate restored. */
static int shortest_prefix(struct pass *p, struct job *j, struct cand *c, int nc,
                           const int64_t req[NDIMS])
{
    struct sl_sched *s = p->s;
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
    if (hi < 0) {
        for (int i = r - 1; i >= 0; i--)
            if (c[i].j)
                trial_restore(p, c[i].j);
        return -1;
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
    return hi;
}

/* Reprieve: give back, most valuable first, the victims of the prefix
 * c[0..chosen) that j does not need (set to NULL), note where j will run
 * (p->pl), then restore every victim: the trial leaves nothing changed. */
static void reprieve(struct pass *p, struct job *j, struct cand *c, int chosen)
{
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
}

/* Preempt the victims left in c[0..chosen) for 'j': they are terminating
 * from now, and the result says so. Returns how many. */
static int preempt_victims(struct pass *p, const struct job *j, const struct cand *c,
                           int chosen)
{
    int nv = 0;

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
    return nv;
}

bool sl_sch_try_preempt(struct pass *p, struct job *j, bool placement_failed)
{
    struct sl_sched *s = p->s;
    struct queue *q = &s->queues[j->queue];
    struct cand *c = NULL;
    uint8_t *borrows = NULL;      /* per queue: it borrows in the cohort */
    int nc, chosen, nv;
    int64_t req[NDIMS];
    bool entitled, ok = false;

    if (!s->cfg.preemption || p->preempts_left <= 0 ||
        s->classes[j->pclass].opportunistic || !s->nrun)
        return false;
    job_request(j, req);
    entitled = q->cohort >= 0 && q->reclaim != SL_RECLAIM_NEVER && within_nominal(q, j, req);
    if (!may_have_victims(s, j, req, entitled) || pfailed_has(p, j, entitled))
        return false;
    if (!(c = malloc(sizeof(*c) * (size_t)(s->nrun < PREEMPT_CANDIDATES ? s->nrun
                                                                       : PREEMPT_CANDIDATES))))
        return false;
    if (entitled && !(borrows = cohort_borrowers(s, j, req)))
        goto out;
    if ((nc = victim_candidates(p, j, entitled, borrows, c)) == 0)
        goto out;
    p->preempts_left--;
    if (!fits_without_all(p, j, c, nc)) {
        pfailed_add(p, j, entitled);
        goto out;
    }
    qsort(c, (size_t)nc, sizeof(*c), cand_cmp);
    if (sl_sch_trial_room(p) < 0)
        goto out;
    trial_begin(p, j, placement_failed);
    if ((chosen = shortest_prefix(p, j, c, nc, req)) < 0) {
        pfailed_add(p, j, entitled);
        trial_end(p);
        goto out;
    }
    reprieve(p, j, c, chosen);
    trial_end(p);
    if (p->fits_now) {
        /* it needs no victim's room: where it would go, by the policy */
        int fit;
        uint32_t models = p->tshape.models;
        if (sl_sch_place_on(&s->cl, j, models, false, p->pl, &fit))
            for (int t = j->tasks - 1; t >= 0; t--)
                cl_give(&s->cl, &j->shape, &p->pl[t]);
    }
    nv = preempt_victims(p, j, c, chosen);
    j->nvictims = (int16_t)nv;
    ok = nv > 0;
    if (ok && !j->order_ms)
        j->order_ms = p->now;
    if (ok && entitled)
        sl_sch_claim(s, j, true);
    if (ok)
        nominee_set(s, j, p->pl);
out:
    free(c);
    free(borrows);
    return ok;
}
