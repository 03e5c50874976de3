/*
 * jobs.c - the jobs the scheduler knows: their buckets, adding a pending
 * or running job (and the record of its queue and user, made with the
 * first such job), the lists of running jobs, and the changes the caller
 * reports (a job ended, was requeued, is terminating, backs off, is held,
 * takes a new spec while pending).
 *
 * Invariants: a pending job is in exactly one bucket, in submit order; a
 * running or terminating job is in s->run at j->run_idx and, with a
 * maxRuntime, in s->byend in order of expected end.
 */
#include "sched_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sl_sch_job_free(struct job *j)
{
    if (j) {
        free(j->places);
        free(j->wait);
        free(j->hold_note);
        free(j);
    }
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

static void bucket_insert(struct bucket *b, struct job *j)
{
    struct job *at = b->tail;

    while (at && job_before(j, at))
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

void sl_sch_bucket_remove(struct job *j)
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

/* ---- jobs -------------------------------------------------------------- */

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

/* The GPU models of spec 'sp' as the scheduler's model bits (a model
 * named for the first time gets an id). */
static int spec_models(struct sl_sched *s, const struct sl_sched_job_spec *sp, uint32_t *bits,
                       struct sl_error *why)
{
    *bits = 0;
    for (int i = 0; sp->gpu_models && sp->gpu_models[i]; i++) {
        int m = sl_sched_model(s, sp->gpu_models[i]);
        if (m < 0)
            return sl_errorf_field(why, m == -ENOSPC ? -ENOSPC : -EINVAL,
                                   "spec.resources.gpuModels",
                                   m == -ENOSPC ? "more than %d GPU models" : "bad GPU model",
                                   SL_SCHED_MAX_MODELS);
        *bits |= 1u << m;
    }
    return 0;
}

/* Whether spec 'sp' is in range (its id and whether it is known aside). */
static int spec_check(const struct sl_sched *s, const struct sl_sched_job_spec *sp,
                      struct sl_error *why)
{
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
    return 0;
}

/* Validate and build a job from its spec. */
static int job_make(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                    struct job **out, struct sl_error *why)
{
    struct job *j;
    uint32_t models;
    int qu, rc;

    if (sp->id <= 0)
        return sl_errorf_field(why, -EINVAL, "id", "job id must be positive");
    if (sl_imap_get(&s->jobs, sp->id))
        return sl_errorf_field(why, -EEXIST, "id", "job %lld is already known",
                               (long long)sp->id);
    if ((rc = spec_check(s, sp, why)) < 0 || (rc = spec_models(s, sp, &models, why)) < 0)
        return rc;
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
    shape_of_spec(sp, &j->shape);
    j->shape.models |= models;
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
        sl_sch_job_free(j);
        return sl_errorf(why, rc, "out of memory");
    }
    if ((rc = job_enqueue(s, j)) < 0) {
        sl_imap_del(&s->jobs, j->id);
        sl_sch_job_free(j);
        return sl_errorf(why, rc, "out of memory");
    }
    sl_sch_typical_learn(s, &j->shape, j->tasks);
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

/* Running job 'j' into s->byend when it has a maxRuntime (room for one
 * more is the caller's). */
static void byend_insert(struct sl_sched *s, struct job *j)
{
    int pos;

    if (j->max_runtime_ms <= 0)
        return;
    pos = byend_pos(s, j);
    memmove(&s->byend[pos + 1], &s->byend[pos], sizeof(*s->byend) * (size_t)(s->nbyend - pos));
    s->byend[pos] = j;
    s->nbyend++;
}

/* Running job 'j' out of s->byend, where its maxRuntime put it. */
static void byend_remove(struct sl_sched *s, struct job *j)
{
    int pos;

    if (j->max_runtime_ms <= 0 || (pos = byend_pos(s, j)) >= s->nbyend || s->byend[pos] != j)
        return;
    memmove(&s->byend[pos], &s->byend[pos + 1],
            sizeof(*s->byend) * (size_t)(s->nbyend - pos - 1));
    s->nbyend--;
}

/* 'j' runs from 'start_ms' (its start_ms is set here). */
int sl_sch_run_add(struct sl_sched *s, struct job *j, int64_t start_ms)
{
    if (sl_grow((void **)&s->run, &s->run_cap, s->nrun + 1, sizeof(*s->run)) < 0 ||
        sl_grow((void **)&s->byend, &s->byend_cap, s->nbyend + 1, sizeof(*s->byend)) < 0)
        return -ENOMEM;
    j->start_ms = start_ms;
    j->run_idx = s->nrun;
    s->run[s->nrun++] = j;
    byend_insert(s, j);
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
    byend_remove(s, j);
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
        sl_sch_job_free(j);
        return sl_errorf(why, -ENOMEM, "out of memory");
    }
    memcpy(j->places, tasks, sizeof(*tasks) * (size_t)j->tasks);
    for (t = 0; t < j->tasks; t++)
        if (cl_take_exact(&s->cl, &j->shape, &j->places[t]) < 0)
            break;
    if (t < j->tasks) {
        for (int u = t - 1; u >= 0; u--)
            cl_give(&s->cl, &j->shape, &j->places[u]);
        sl_sch_job_free(j);
        return sl_errorf_field(why, -EINVAL, "placement",
                               "task %d's placement does not fit its node", t);
    }
    if ((rc = sl_imap_put(&s->jobs, j->id, j)) < 0 || (rc = sl_sch_run_add(s, j, started_ms)) < 0) {
        sl_imap_del(&s->jobs, j->id);
        for (t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &j->places[t]);
        sl_sch_job_free(j);
        return sl_errorf(why, -ENOMEM, "out of memory");
    }
    j->state = J_RUNNING;
    j->order_ms = started_ms;
    j->opportunistic = s->classes[j->pclass].opportunistic;
    sl_sch_charge(s, j, 1, started_ms);
    s->queues[j->queue].nrunning++;
    sl_sch_typical_learn(s, &j->shape, j->tasks);
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

/* A staged job leaves its predecessor (removed while staged). */
static void unlink_staged(struct sl_sched *s, struct job *j)
{
    struct job *p = sl_imap_get(&s->jobs, j->staged_after);

    if (p && p->successor == j->id)
        p->successor = 0;
    j->staged_after = 0;
    s->nstaged--;
}

/* Stop a running or terminating job: resources and charges back; a job
 * staged behind it goes back in line. */
static void job_stop(struct sl_sched *s, struct job *j, int64_t now)
{
    if (j->successor) {
        if (sl_sched_job_unstage(s, j->successor) < 0)
            j->successor = 0;
    }
    victim_gone(s, j);
    sl_sch_charge(s, j, -1, now);
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
        sl_sch_claim(s, j, false);
        if (j->staged_after)
            unlink_staged(s, j);
        else if (j->on_hold)
            s->nheld--;
        else
            sl_sch_bucket_remove(j);
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
    sl_sch_job_free(j);
    return 0;
}

/* ---- staging ------------------------------------------------------------- */

int sl_sched_job_unstage(struct sl_sched *s, int64_t id)
{
    struct job *j = sl_imap_get(&s->jobs, id), *p;
    struct bucket *b;

    if (!j)
        return -ENOENT;
    if (j->state != J_PENDING || !j->staged_after)
        return -EINVAL;
    if ((p = sl_imap_get(&s->jobs, j->staged_after)) && p->successor == id)
        p->successor = 0;
    j->staged_after = 0;
    s->nstaged--;
    if (!(b = bucket_get(s, &s->queues[j->queue], j->queue, j->user, j->pclass)))
        return -ENOMEM; /* known as pending in no bucket, as job_enqueue leaves it */
    bucket_insert(b, j);
    j->blocker = B_NEW;
    return fresh_add(s, j->id);
}

int64_t sl_sched_job_handover(struct sl_sched *s, int64_t id, int64_t now_ms)
{
    struct job *a = sl_imap_get(&s->jobs, id), *b;
    struct sl_sched_task_place *pl;
    struct queue *q;
    int t;

    if (!a || !a->successor || !(b = sl_imap_get(&s->jobs, a->successor)) ||
        b->staged_after != id)
        return -ENOENT;
    if (a->state == J_PENDING || b->tasks > a->tasks)
        return -EINVAL;
    if (!(pl = malloc(sizeof(*pl) * (size_t)b->tasks)))
        return -ENOMEM;
    memcpy(pl, a->places, sizeof(*pl) * (size_t)b->tasks);
    a->successor = 0;
    job_stop(s, a, now_ms);
    sl_imap_del(&s->jobs, id);
    sl_sch_job_free(a);
    for (t = 0; t < b->tasks; t++)
        if (cl_take_exact(&s->cl, &b->shape, &pl[t]) < 0)
            break;
    b->staged_after = 0;
    if (t < b->tasks || sl_sch_run_add(s, b, now_ms) < 0) {
        for (int u = t - 1; u >= 0; u--)
            cl_give(&s->cl, &b->shape, &pl[u]);
        free(pl);
        b->staged_after = id; /* for unstage: its predecessor is gone */
        sl_sched_job_unstage(s, b->id);
        return t < b->tasks ? -EINVAL : -ENOMEM;
    }
    q = &s->queues[b->queue];
    b->places = pl;
    q->npending--;
    s->npending--;
    s->nstaged--;
    b->state = J_RUNNING;
    b->order_ms = now_ms;
    b->resv_at_ms = 0;
    b->opportunistic = s->classes[b->pclass].opportunistic;
    sl_sch_charge(s, b, 1, now_ms);
    q->nrunning++;
    return b->id;
}

int64_t sl_sched_job_successor(const struct sl_sched *s, int64_t id)
{
    const struct job *j = sl_imap_get(&s->jobs, id);

    return j && j->state != J_PENDING ? j->successor : 0;
}

int64_t sl_sched_job_staged_after(const struct sl_sched *s, int64_t id)
{
    const struct job *j = sl_imap_get(&s->jobs, id);

    return j && j->state == J_PENDING ? j->staged_after : 0;
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

/* ---- hold --------------------------------------------------------------- */

/* Held job 'j' lets go of what it claimed as a preemptor. */
static void hold_unclaim(struct sl_sched *s, struct job *j)
{
    sl_sch_claim(s, j, false);
    if (j->nvictims > 0) {
        for (int i = 0; i < s->nrun; i++)
            if (s->run[i]->for_job == j->id)
                s->run[i]->for_job = 0;
        j->nvictims = 0;
    }
    j->order_ms = 0;
    j->resv_at_ms = 0;
}

int sl_sched_job_hold(struct sl_sched *s, int64_t id, bool on)
{
    struct job *j = sl_imap_get(&s->jobs, id);
    struct bucket *b;

    if (!j)
        return -ENOENT;
    if (j->state != J_PENDING)
        return -EINVAL;
    if (on == (j->on_hold != 0))
        return 0;
    if (on) {
        if (j->staged_after)
            unlink_staged(s, j);
        else if (j->bucket)
            sl_sch_bucket_remove(j);
        hold_unclaim(s, j);
        j->on_hold = 1;
        s->nheld++;
        return 0;
    }
    if (fresh_add(s, j->id) < 0 ||
        !(b = bucket_get(s, &s->queues[j->queue], j->queue, j->user, j->pclass)))
        return -ENOMEM;
    j->on_hold = 0;
    s->nheld--;
    free(j->hold_note);
    j->hold_note = NULL;
    bucket_insert(b, j);
    j->blocker = B_NEW;
    return 0;
}

/* *slot becomes a copy of 'text' (NULL: none). Returns 0 or -ENOMEM
 * (unchanged). */
static int text_set(char **slot, const char *text)
{
    char *t = NULL;

    if (text && !(t = strdup(text)))
        return -ENOMEM;
    free(*slot);
    *slot = t;
    return 0;
}

int sl_sched_job_hold_note(struct sl_sched *s, int64_t id, const char *why)
{
    struct job *j = sl_imap_get(&s->jobs, id);

    if (!j)
        return -ENOENT;
    if (j->state != J_PENDING || !j->on_hold)
        return -EINVAL;
    return text_set(&j->hold_note, why);
}

/* ---- respec ------------------------------------------------------------- */

int sl_sched_job_respec(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                        struct sl_error *why)
{
    struct job *j = sl_imap_get(&s->jobs, sp->id);
    struct bucket *b = NULL;
    uint32_t models;
    int qu, rc;

    if (!j)
        return sl_errorf_field(why, -ENOENT, "id", "job %lld is not known", (long long)sp->id);
    if (j->state != J_PENDING || j->staged_after)
        return sl_errorf_field(why, -EINVAL, "state", "job %lld is %s", (long long)sp->id,
                               j->state != J_PENDING ? "not pending" : "staged");
    if ((rc = spec_check(s, sp, why)) < 0 || (rc = spec_models(s, sp, &models, why)) < 0)
        return rc;
    /* everything that can fail first: an empty bucket or (queue, user)
     * record left behind is harmless */
    if ((qu = qu_get(s, sp->queue, sp->user)) < 0 ||
        (!j->on_hold &&
         (!(b = bucket_get(s, &s->queues[sp->queue], sp->queue, sp->user, sp->pclass)) ||
          fresh_add(s, j->id) < 0)))
        return sl_errorf(why, -ENOMEM, "out of memory");
    /* what it claimed or was promised was for its old request */
    hold_unclaim(s, j);
    if (j->bucket)
        sl_sch_bucket_remove(j);
    s->queues[j->queue].npending--;
    s->queues[sp->queue].npending++;
    j->queue = (int16_t)sp->queue;
    j->pclass = (int16_t)sp->pclass;
    j->user = sp->user;
    j->qu = qu;
    j->tasks = sp->tasks;
    j->topology = (uint8_t)sp->topology;
    j->max_runtime_ms = sp->max_runtime_ms;
    shape_of_spec(sp, &j->shape);
    j->shape.models |= models;
    j->tasks_fit = 0;
    if (b) {
        bucket_insert(b, j); /* by its submit time: its place in line */
        j->blocker = B_NEW;
    }
    return 0;
}

int sl_sched_job_max_runtime(struct sl_sched *s, int64_t id, int64_t ms)
{
    struct job *j = sl_imap_get(&s->jobs, id);

    if (!j)
        return -ENOENT;
    if (ms < 0)
        return -EINVAL;
    if (j->state == J_PENDING) {
        j->max_runtime_ms = ms;
        return 0;
    }
    if (sl_grow((void **)&s->byend, &s->byend_cap, s->nbyend + 1, sizeof(*s->byend)) < 0)
        return -ENOMEM;
    byend_remove(s, j);
    j->max_runtime_ms = ms;
    byend_insert(s, j);
    return 0;
}

bool sl_sched_job_held(const struct sl_sched *s, int64_t id)
{
    const struct job *j = sl_imap_get(&s->jobs, id);

    return j && j->state == J_PENDING && j->on_hold;
}

int sl_sched_job_wait(struct sl_sched *s, int64_t id, const char *why)
{
    struct job *j = sl_imap_get(&s->jobs, id);

    if (!j)
        return -ENOENT;
    if (j->state != J_PENDING || j->staged_after)
        return -EINVAL;
    return text_set(&j->wait, why);
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
