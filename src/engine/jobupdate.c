/*
 * jobupdate.c - sluice update: a job's fields changed after submission,
 * as scontrol update does. While Pending: priorityClass, queue, GPUs per
 * task and maxRuntime; while Running: maxRuntime (lower only, but for an
 * admin). A pending job's new class, queue or GPU count passes what a
 * submission of it would pass (admission.c) and its team's spent budget;
 * the scheduler takes the new request in place, the job keeping its
 * place in line (sl_sched_job_respec). A job staged in the executor (the
 * Slurm executor's stage) is refused: every other pending job is in no
 * executor yet, so nothing but the engine and the store changes. One
 * "update" event and one audit record name each field changed, old and
 * new; a refusal changes nothing.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What an update asks, resolved against the job. */
struct update {
    struct job *j;
    const struct queue *q, *q0;   /* the job's queue, new and old */
    const struct pclass *pc, *pc0; /* its class, new and old */
    int gpus;                     /* per task, new; -1 = unchanged */
    int64_t max_runtime_ms;       /* new; 0 = unchanged */
    struct sl_job_spec *spec;     /* owned: the job's spec as it would be,
                                     when the class, queue or GPUs change;
                                     NULL = only maxRuntime */
};

/* A maxRuntime for people: "none" or sl_fmt_duration's ("90s", "1h30m"). */
static void fmt_duration(int64_t ms, char *buf, size_t size)
{
    if (ms <= 0)
        snprintf(buf, size, "none");
    else
        sl_fmt_duration(ms, buf, size);
}

/* A job's GPUs per task for people: "2", "0.5" (a fraction), "0". */
static void fmt_gpus(const struct sl_job_spec *s, char *buf, size_t size)
{
    size_t n;

    if (s->gpus > 0 || s->gpu_milli == 0) {
        snprintf(buf, size, "%d", s->gpus);
        return;
    }
    snprintf(buf, size, "%d.%03d", s->gpu_milli / 1000, s->gpu_milli % 1000);
    n = strlen(buf); /* a '.' comes before the zeros cut: "0.500" -> "0.5" */
    while (buf[n - 1] == '0')
        buf[--n] = '\0';
    if (buf[n - 1] == '.')
        buf[n - 1] = '\0';
}

/* The first field of the request that a running job cannot change. */
static const char *pending_field(const struct sl_op_update *u)
{
    return u->pclass[0] ? "priorityClass" : u->queue[0] ? "queue" : "resources.gpus";
}

/* The job's state allows the update. */
static int check_state(struct sl_op *op, const struct job *j, bool respec)
{
    if (j->state != SL_JOB_PENDING && j->state != SL_JOB_RUNNING) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state", "job %lld is %s", (long long)j->id,
                               sl_job_state_name(j->state));
    }
    if (j->state == SL_JOB_RUNNING &&
        (j->cancel_requested || j->preempting || j->timed_out || j->gang_failed)) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state", "job %lld is already being stopped",
                               (long long)j->id);
    }
    if (respec && j->state != SL_JOB_PENDING) {
        const char *f = pending_field(&op->u.update);
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, f,
                               "job %lld is %s: its %s can change only while it is pending "
                               "(a running job's maxRuntime can be lowered)",
                               (long long)j->id, sl_job_state_name(j->state), f);
    }
    if (respec && j->staged_after) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state",
                               "job %lld is staged in the executor behind job %lld and "
                               "starts when it ends: cancel it instead",
                               (long long)j->id, (long long)j->staged_after);
    }
    return 0;
}

/* The new queue and class: the queue one of the job's team, as a
 * submission's must be; the class one that exists. */
static int resolve(struct sl_engine *e, struct sl_op *op, struct update *x)
{
    const struct sl_op_update *u = &op->u.update;
    struct job *j = x->j;

    x->q0 = sl_eng_queue_find(e, j->queue);
    x->pc0 = sl_eng_pclass_find(e, j->pclass);
    if (!x->q0 || !x->pc0) { /* deleting a queue or class in use is refused */
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOENT, "job %lld's queue or class is gone",
                         (long long)j->id);
    }
    x->q = u->queue[0] ? sl_eng_queue_find(e, u->queue) : x->q0;
    if (!x->q || strcmp(x->q->team, j->team) != 0) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "queue",
                               "queue '%s' does not exist in team '%s' (job %lld's team)",
                               u->queue, j->team, (long long)j->id);
    }
    x->pc = u->pclass[0] ? sl_eng_pclass_find(e, u->pclass) : x->pc0;
    if (!x->pc) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "priorityClass",
                               "priority class '%s' does not exist", u->pclass);
    }
    x->gpus = u->has_gpus ? u->gpus : -1;
    x->max_runtime_ms = u->max_runtime_ms;
    return 0;
}

/* maxRuntime: lower only, but for an admin. */
static int check_max_runtime(struct sl_op *op, const struct update *x)
{
    int64_t old = x->j->spec->max_runtime_ms, want = x->max_runtime_ms;
    char a[32], b[32];

    if (want <= 0 || old <= 0 || want <= old || sl_eng_is_admin(&op->who))
        return 0;
    fmt_duration(old, a, sizeof(a));
    fmt_duration(want, b, sizeof(b));
    sl_eng_op_fail(op, 409, "conflict");
    return sl_errorf_field(&op->err, -EPERM, "maxRuntime",
                           "only an admin may raise it (from %s to %s): it may only be "
                           "lowered",
                           a, b);
}

/* x->spec: the job's spec with the new class, queue, GPUs and maxRuntime. */
static int candidate(struct sl_op *op, struct update *x)
{
    json_t *doc = sl_job_spec_to_json(x->j->spec);
    struct sl_error err = {0};
    int rc = doc ? sl_job_spec_from_json(doc, &x->spec, &err)
                 : sl_errorf(&err, -ENOMEM, "out of memory");

    json_decref(doc);
    if (rc < 0) {
        /* the job's own spec, read back: only memory can fail it */
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "the job's spec: %s", err.text);
    }
    sl_strlcpy(x->spec->queue, x->q->name, sizeof(x->spec->queue));
    sl_strlcpy(x->spec->priority_class, x->pc->name, sizeof(x->spec->priority_class));
    if (x->gpus >= 0) {
        x->spec->gpus = x->gpus;
        x->spec->gpu_milli = 0; /* whole GPUs now, or none */
    }
    if (x->max_runtime_ms > 0)
        x->spec->max_runtime_ms = x->max_runtime_ms;
    return 0;
}

/* GPU milli per task of a spec, to compare what two ask. */
static int64_t gpu_milli_of(const struct sl_job_spec *s)
{
    return s->gpus > 0 ? (int64_t)s->gpus * 1000 : s->gpu_milli;
}

/* A spent budget of the team: a submission would be blocked, or demoted
 * to the lowest preemptible class. The job may still ask for less; it may
 * not ask for more (a higher class, more GPUs) while the budget blocks,
 * nor be moved above the class the budget demotes to. */
static int check_budget(struct sl_engine *e, struct sl_op *op, const struct update *x)
{
    int64_t now = sl_eng_now_ms(e);
    const struct budget *spent = sl_eng_budget_spent(e, x->j->team, now);
    bool higher = x->pc->value > x->pc0->value;
    bool more = gpu_milli_of(x->spec) > gpu_milli_of(x->j->spec);
    const struct pclass *low;
    char text[256];

    if (!spent || (!higher && !more))
        return 0;
    low = sl_eng_demote_class(e);
    sl_eng_budget_text(e, spent, now, text, sizeof(text));
    if (spent->b.action == SL_BUDGET_BLOCK || !low) {
        sl_eng_op_fail(op, 403, "budget_exceeded");
        return sl_errorf_field(&op->err, -EPERM, higher ? "priorityClass" : "resources.gpus",
                               "%s; new jobs are blocked, and a pending job may not ask for "
                               "more (%s)",
                               text, higher ? "a higher priority class" : "more GPUs");
    }
    if (x->pc->value > low->value) {
        sl_eng_op_fail(op, 403, "budget_exceeded");
        return sl_errorf_field(&op->err, -EPERM, "priorityClass",
                               "%s; new jobs are demoted to %s, and a pending job may not be "
                               "%s above it",
                               text, low->name, higher ? "moved" : "given more GPUs");
    }
    return 0;
}

/* What a submission of the new values would pass: the admission policies
 * (whose network the job takes), the team's budget, never-runnable. */
static int check_submission(struct sl_engine *e, struct sl_op *op, struct update *x)
{
    struct sl_verdict *v = NULL;
    int rc;

    if ((rc = sl_eng_admit(e, op, x->spec, x->j->team, x->q->name, x->pc->name, &v)) < 0)
        return rc;
    x->spec->network = (enum sl_network)v->network;
    free(v);
    if ((rc = check_budget(e, op, x)) < 0 || (rc = sl_eng_runnable(e, op, x->spec, x->q, x->pc)) < 0)
        return rc;
    return 0;
}

/* Append "FIELD OLD -> NEW" to the event's words and {FIELD: {old, new}}
 * to the audit details, when OLD and NEW differ. Returns 0 or -ENOMEM. */
static int change(struct sl_buf *words, json_t *details, const char *field, const char *old,
                  const char *new_)
{
    if (!strcmp(old, new_))
        return 0;
    sl_buf_printf(words, "%s%s %s -> %s", words->len ? ", " : "", field, old, new_);
    if (words->failed ||
        json_object_set_new(details, field, json_pack("{s:s, s:s}", "old", old, "new", new_)))
        return -ENOMEM;
    return 0;
}

/* The event's words and the audit details of update 'x'. */
static int describe(const struct update *x, struct sl_buf *words, json_t **details)
{
    const struct sl_job_spec *s0 = x->j->spec, *s1 = x->spec ? x->spec : x->j->spec;
    char a[32], b[32];
    int rc;

    if (!(*details = json_object()))
        return -ENOMEM;
    if ((rc = change(words, *details, "priorityClass", x->pc0->name, x->pc->name)) < 0 ||
        (rc = change(words, *details, "queue", x->q0->name, x->q->name)) < 0)
        return rc;
    if (x->gpus >= 0) {
        fmt_gpus(s0, a, sizeof(a));
        fmt_gpus(s1, b, sizeof(b));
        if ((rc = change(words, *details, "resources.gpus", a, b)) < 0)
            return rc;
    }
    if (x->max_runtime_ms > 0) {
        fmt_duration(s0->max_runtime_ms, a, sizeof(a));
        fmt_duration(x->max_runtime_ms, b, sizeof(b));
        return change(words, *details, "maxRuntime", a, b);
    }
    return 0;
}

/* Store 'j''s spec, queue, class and priority as they are now. */
static int respec_write(struct sl_engine *e, struct job *j)
{
    json_t *doc = sl_job_spec_to_json(j->spec);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    int rc = text ? sl_store_job_respec(e->st, j->id, j->queue, j->pclass, j->priority, text)
                  : -ENOMEM;

    free(text);
    json_decref(doc);
    return rc;
}

/* The scheduler takes the job's new spec: a pending job's whole request in
 * place, or its maxRuntime alone. */
static int sched_take(struct sl_engine *e, struct job *j, const struct update *x)
{
    struct sl_sched_job_spec sj;
    int rc, user;

    pthread_mutex_lock(&e->mu);
    if (!x->spec) {
        rc = sl_sched_job_max_runtime(e->sched, j->id, j->spec->max_runtime_ms);
    } else if ((rc = user = sl_sched_user(e->sched, j->user)) >= 0) {
        sl_eng_sched_spec(e, j, x->q, x->pc, user, &sj);
        rc = sl_sched_job_respec(e->sched, &sj, NULL);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Carry update 'x' out: the job, its row and event, the scheduler, a
 * running job's timer. On failure nothing stays changed (the store's
 * writes go with the op's savepoint). */
static int apply(struct sl_engine *e, struct sl_op *op, struct update *x, const char *words)
{
    struct job *j = x->j;
    struct sl_job_spec *spec0 = j->spec;
    int64_t max_runtime0 = spec0->max_runtime_ms;
    const char *queue0 = j->queue, *pclass0 = j->pclass, *queue, *pclass;
    int priority0 = j->priority;
    char *msg0 = j->message ? strdup(j->message) : NULL;
    int rc;

    if ((j->message && !msg0) || !(queue = sl_eng_intern(&e->strs, x->q->name)) ||
        !(pclass = sl_eng_intern(&e->strs, x->pc->name))) {
        free(msg0);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    if (x->spec) {
        j->spec = x->spec;
    } else {
        /* maxRuntime only: the spec is changed where it is */
        j->spec->max_runtime_ms = x->max_runtime_ms;
    }
    j->queue = queue;
    j->pclass = pclass;
    j->priority = x->pc->value;
    sl_eng_job_msg(e, j, "%s by %s", words, op->who.user);
    if ((rc = respec_write(e, j)) < 0 ||
        (rc = sl_eng_job_persist(e, j, "update", sl_job_state_name(j->state), -1, 0)) < 0 ||
        (rc = sched_take(e, j, x)) < 0) {
        spec0->max_runtime_ms = max_runtime0;
        j->spec = spec0;
        j->queue = queue0;
        j->pclass = pclass0;
        j->priority = priority0;
        sl_eng_job_msg_restore(e, j, msg0);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, rc == -ENOMEM ? "out of memory" : "store: write failed");
    }
    free(msg0);
    if (x->spec) {
        sl_job_spec_destroy(spec0);
        x->spec = NULL;
    }
    if (j->state == SL_JOB_RUNNING) {
        /* its checkpoint timer from its start: at once when past */
        int64_t left = j->started_ms + j->spec->max_runtime_ms - sl_eng_now_ms(e);
        j->ckpt_at_ms = sl_eng_mono_ms(e) + (left > 0 ? left : 0);
        sl_eng_job_timer(e, j);
    }
    e->sched_full = true; /* reservations, backfill and the order see it */
    return 0;
}

int sl_eng_do_update(struct sl_engine *e, struct sl_op *op)
{
    const struct sl_op_update *u = &op->u.update;
    bool respec = u->pclass[0] || u->queue[0] || u->has_gpus;
    struct update x = {.j = sl_eng_ctl_job(e, op, u->job_id, "update")};
    json_t *details = NULL;
    struct sl_buf words;
    int rc;

    sl_buf_init(&words);
    if (!x.j) {
        rc = -EPERM;
        goto out;
    }
    if ((rc = check_state(op, x.j, respec)) < 0 || (rc = resolve(e, op, &x)) < 0 ||
        (rc = check_max_runtime(op, &x)) < 0 ||
        (respec && ((rc = candidate(op, &x)) < 0 || (rc = check_submission(e, op, &x)) < 0)))
        goto out;
    if ((rc = describe(&x, &words, &details)) < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
        goto out;
    }
    /* values equal to the job's change nothing: no event, no write */
    if (words.len && (rc = apply(e, op, &x, words.data)) < 0)
        goto out;
    op->audit_details = details;
    details = NULL;
    rc = sl_eng_ctl_answer(op, x.j);
out:
    sl_job_spec_destroy(x.spec);
    json_decref(details);
    sl_buf_fini(&words);
    return rc;
}
