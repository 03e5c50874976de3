/*
 * backfill.c - reservations for blocked jobs (EASY backfill) and the holds
 * that keep resources for them and for preemptors.
 *
 * A reservation is the earliest time the running jobs' maxRuntime says
 * enough will be free for a blocked job, and the nodes it would use then;
 * it is found on a scratch copy of the cluster (no indexes, no change log)
 * by releasing the running jobs in order of expected end. What of it is
 * free now is held during a pass, so that later jobs cannot delay it
 * unless they end first. A preemptor waiting for its victims holds what
 * they have freed already (its claim).
 *
 * Invariant: holds are taken only during a pass and all given back at its
 * end (pass.c, pass_fini).
 */
#include "sched_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- holds ----------------------------------------------------------- */

int sl_sch_hold_add(struct sl_sched *s, bool claim, const struct cl_shape *sh,
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

void sl_sch_holds_release(struct sl_sched *s)
{
    while (s->nholds > 0) {
        struct hold *h = &s->holds[--s->nholds];
        cl_give(&s->cl, &h->shape, &h->place);
    }
}

void sl_sch_cholds_release(struct sl_sched *s)
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
void sl_sch_cholds_apply(struct sl_sched *s)
{
    for (int i = 0; i < s->nnominees; i++) {
        const struct resv *r = &s->nominees[i];
        const struct job *j = sl_imap_get(&s->jobs, r->job_id);
        if (!j || j->state != J_PENDING || j->nvictims <= 0 || !r->places)
            continue;
        for (int t = 0; t < r->ntasks; t++)
            sl_sch_hold_add(s, true, &j->shape, &r->places[t]);
    }
}

/* Hold what reservation 'r' needs that is free now. */
void sl_sch_holds_apply(struct sl_sched *s, const struct resv *r)
{
    const struct job *j = sl_imap_get(&s->jobs, r->job_id);

    if (!j || j->state != J_PENDING || j->staged_after || j->on_hold)
        return; /* a staged job waits on its predecessor's resources; a
                   held one waits for nothing */
    for (int t = 0; t < r->ntasks; t++)
        sl_sch_hold_add(s, false, &j->shape, &r->places[t]);
}

/* ---- reservations ---------------------------------------------------- */

/* Forget the reservations (a full pass makes them anew): their jobs no
 * longer have one, or none would get one again. */
void sl_sch_resv_clear(struct sl_sched *s)
{
    for (int i = 0; i < s->nresv; i++) {
        struct job *j = sl_imap_get(&s->jobs, s->resv[i].job_id);
        if (j && j->state == J_PENDING)
            j->resv_at_ms = 0;
        free(s->resv[i].places);
    }
    s->nresv = 0;
}

/* The scratch copy of the cluster for reservations: nodes and GPUs copied
 * from the live cluster (with its holds), no indexes, no change log. */
int sl_sch_scratch_load(struct pass *p)
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
    if (!sl_sch_place_on(sc, j, models, true, p->pl, &fit))
        return false;
    for (int t = j->tasks - 1; t >= 0; t--)
        cl_give(sc, &j->shape, &p->pl[t]);
    return true;
}

/* The running jobs by expected end (p->rel), kept through the pass until
 * a start changes them: the terminating ones end now; then the others
 * with an estimate, in the order s->byend keeps; a job with none may run
 * for ever. Returns 0 or -ENOMEM. */
static int releases_load(struct pass *p)
{
    struct sl_sched *s = p->s;
    struct release *r;
    int nr = 0;

    if (p->rel_ready)
        return 0;
    if (!(r = realloc(p->rel, sizeof(*r) * (size_t)s->nrun)))
        return -ENOMEM;
    p->rel = r;
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
    return 0;
}

/* Whether a single task no smaller than j's, allowed the same models, did
 * not fit even after every release (the memo lasts as long as p->rel). */
static bool rfailed_has(const struct pass *p, const struct job *j, uint32_t models)
{
    for (int i = 0; i < p->nrfailed; i++) {
        const struct cl_shape *f = &p->rfailed[i];
        if (j->tasks == 1 && j->shape.cpu_milli >= f->cpu_milli &&
            j->shape.mem_bytes >= f->mem_bytes && j->shape.num_gpu >= f->num_gpu &&
            j->shape.gpu_milli >= f->gpu_milli && models == f->models)
            return true;
    }
    return false;
}

/* The fewest releases of p->rel after which 'j' fits the scratch cluster
 * (feasibility only grows): doubling, then bisection, moving the scratch
 * cluster by the difference each time, so that a search costs about as
 * many releases as its answer. Returns that count, with j's places then
 * in p->pl; or -1 when it does not fit (a single task that fits after no
 * release is remembered). */
static int fewest_releases(struct pass *p, struct job *j, uint32_t models)
{
    const struct release *r = p->rel;
    int nr = p->nrel, lo = 0, hi = -1, at = 0;

    p->ntouched = 0;
    p->touch_gen++;
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
        return -1;
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
        return -1;
    return hi;
}

/* Record j's reservation: it starts at the n-th release, on the places
 * in p->pl, and what of them is free now is held from now on. Without
 * memory it keeps its start time but holds nothing. */
static void resv_record(struct pass *p, struct job *j, int n)
{
    struct sl_sched *s = p->s;
    struct resv *rv;

    p->nresv++;
    j->resv_at_ms = p->rel[n - 1].at_ms;
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
    sl_sch_holds_apply(s, rv);
}

void sl_sch_reserve(struct pass *p, struct job *j, uint32_t models)
{
    int n;

    if (!reservations_open(p))
        return;
    if (releases_load(p) < 0 || rfailed_has(p, j, models))
        return; /* no smaller job fitted even after every release */
    if (p->nrel == 0 || sl_sch_scratch_load(p) < 0 || sl_sch_trial_room(p) < 0)
        return;
    if ((n = fewest_releases(p, j, models)) > 0)
        resv_record(p, j, n);
}

int sl_sch_eta(struct sl_sched *s, struct job *j, uint32_t models, int64_t now_ms,
               int64_t *at_ms)
{
    struct pass p;
    int n, rc = 0;

    memset(&p, 0, sizeof(p));
    p.s = s;
    p.now = now_ms;
    *at_ms = 0;
    if (!(p.pl = malloc(sizeof(*p.pl) * SL_MAX_TASKS)) || releases_load(&p) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    if (p.nrel == 0)
        goto out;
    if (sl_sch_scratch_load(&p) < 0 || sl_sch_trial_room(&p) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    if ((n = fewest_releases(&p, j, models)) > 0)
        *at_ms = p.rel[n - 1].at_ms;
out:
    sl_sch_pass_free(&p);
    return rc;
}
