/*
 * jobctl.c - job control after submission: hold and release a pending
 * job, requeue a running one. Who may: the job's user, a team-admin of
 * its team, an admin (a stricter rule than cancel's, which any writer of
 * the team may do). A held job keeps its place in line (its submit time)
 * and no pass, backfill or staging considers it (sl_sched_job_hold); the
 * hold is in the job's row (intent "held") and so outlives a restart. A
 * requeue takes the preemption's path with no preemptor (intent
 * "requeue", or "requeue-hold"). An update changes a job's maxRuntime
 * (lower only, but for an admin), in the scheduler, its timer and its
 * stored spec. docs/cli.md (hold, release, requeue, update) and
 * docs/api-contract.md say what is refused.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job an operation on 'id' names, when the caller may 'verb' it: 404
 * when unknown or of another team (as cancel), 409 when finished, 403
 * when it is another user's and the caller is neither a team-admin of its
 * team nor an admin. NULL with op set on refusal. */
static struct job *ctl_job(struct sl_engine *e, struct sl_op *op, int64_t id, const char *verb)
{
    struct job *j = sl_imap_get(&e->jobs, id);
    const struct sl_principal *who = &op->who;

    if (!j) {
        json_t *row = NULL;
        const char *team;
        sl_store_job_read(e->st, id, sl_job_view_json_fn, &row);
        team = json_string_value(json_object_get(row, "team"));
        if (!row || (!sl_eng_is_admin(who) && team && strcmp(team, who->team))) {
            json_decref(row);
            sl_eng_op_fail(op, 404, "not_found");
            sl_errorf(&op->err, -ENOENT, "job %lld not found", (long long)id);
            return NULL;
        }
        sl_eng_op_fail(op, 409, "conflict");
        sl_errorf_field(&op->err, -EALREADY, "state", "job %lld has already finished (%s)",
                        (long long)id, json_string_value(json_object_get(row, "state")));
        json_decref(row);
        return NULL;
    }
    if (!sl_eng_is_admin(who) && strcmp(j->team, who->team) != 0) {
        sl_eng_op_fail(op, 404, "not_found");
        sl_errorf(&op->err, -ENOENT, "job %lld not found", (long long)id);
        return NULL;
    }
    if (!sl_eng_is_admin(who) && strcmp(who->role, "team-admin") != 0 &&
        strcmp(j->user, who->user) != 0) {
        sl_eng_op_fail(op, 403, "forbidden");
        sl_errorf_field(&op->err, -EPERM, "user",
                        "job %lld is %s's: only its user, a team-admin of team %s or an "
                        "admin may %s it",
                        (long long)id, j->user, j->team, verb);
        return NULL;
    }
    return j;
}

/* The job's object as the operation's answer (200). */
static int ctl_answer(struct sl_op *op, const struct job *j)
{
    struct sl_job_view v;
    int rc;

    sl_eng_job_view(j, &v, j->placement, NULL);
    v.spec_doc = sl_job_spec_to_json(j->spec);
    rc = sl_eng_op_job_body(op, &v);
    json_decref(v.spec_doc);
    if (rc == 0)
        op->status = 200;
    return rc;
}

/* Hold or release 'j' in the scheduler; false when it could not (only
 * -ENOMEM on release). */
static bool sched_hold(struct sl_engine *e, struct job *j, bool on)
{
    int rc;

    pthread_mutex_lock(&e->mu);
    rc = sl_sched_job_hold(e->sched, j->id, on);
    pthread_mutex_unlock(&e->mu);
    return rc == 0;
}

/* Set the hold of 'j' to 'on' with its row and one event of 'type', the
 * job's message 'msg'; on a failed write nothing stays changed. */
static int hold_write(struct sl_engine *e, struct sl_op *op, struct job *j, bool on,
                      const char *type, const char *msg)
{
    char *old = j->message ? strdup(j->message) : NULL;
    int rc;

    if (j->message && !old) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    j->held = on;
    sl_eng_job_msg(e, j, "%s", msg);
    if ((rc = sl_eng_job_persist(e, j, type, "Pending", -1, 0)) < 0 || !sched_hold(e, j, on)) {
        j->held = !on;
        if (old)
            sl_eng_job_msg(e, j, "%s", old);
        else
            sl_eng_job_msg(e, j, NULL);
        free(old);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc < 0 ? rc : -ENOMEM,
                         rc < 0 ? "store: write failed" : "out of memory");
    }
    free(old);
    e->sched_full = true; /* what it held or reserved is free for others */
    return 0;
}

int sl_eng_do_hold(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = ctl_job(e, op, op->u.jobctl.job_id, "hold");
    char msg[160];
    int rc;

    if (!j)
        return -EPERM;
    if (j->state != SL_JOB_PENDING) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state",
                               "job %lld is %s: only a pending job can be held "
                               "(sluice requeue --hold stops a running one and holds it)",
                               (long long)j->id, sl_job_state_name(j->state));
    }
    if (j->staged_after) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state",
                               "job %lld is staged in the executor behind job %lld and "
                               "starts when it ends: cancel it instead",
                               (long long)j->id, (long long)j->staged_after);
    }
    if (!j->held) {
        snprintf(msg, sizeof(msg), "held by %s", op->who.user);
        if ((rc = hold_write(e, op, j, true, "hold", msg)) < 0)
            return rc;
    }
    return ctl_answer(op, j);
}

int sl_eng_do_release(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = ctl_job(e, op, op->u.jobctl.job_id, "release");
    char msg[160];
    int rc;

    if (!j)
        return -EPERM;
    if (j->state != SL_JOB_PENDING || !j->held) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EINVAL, "state", "job %lld is %s and not held",
                               (long long)j->id, sl_job_state_name(j->state));
    }
    snprintf(msg, sizeof(msg), "released by %s", op->who.user);
    if ((rc = hold_write(e, op, j, false, "release", msg)) < 0)
        return rc;
    return ctl_answer(op, j);
}

int sl_eng_do_requeue(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = ctl_job(e, op, op->u.jobctl.job_id, "requeue");
    int rc;

    if (!j)
        return -EPERM;
    if (j->state != SL_JOB_RUNNING) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state",
                               "job %lld is %s: only a running job can be requeued",
                               (long long)j->id, sl_job_state_name(j->state));
    }
    if (j->cancel_requested || j->preempting || j->timed_out || j->gang_failed) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state",
                               "job %lld is already being stopped (%s)", (long long)j->id,
                               j->cancel_requested ? "cancelled"
                               : j->requeuing      ? "requeued"
                               : j->preempting     ? "preempted"
                               : j->timed_out      ? "maxRuntime"
                                                   : "a task failed");
    }
    j->preempting = j->requeuing = true;
    j->requeue_hold = op->u.jobctl.hold;
    j->preempted_for = 0;
    j->intent_at_ms = sl_eng_now_ms(e);
    sl_eng_job_msg(e, j, "requeued by %s%s: %s, SIGKILL in %llds", op->who.user,
                   j->requeue_hold ? " (and held)" : "", sl_signal_name(j->spec->ckpt_signal),
                   (long long)(j->spec->ckpt_grace_ms / 1000));
    /* in the row, so that a restart before it stops finishes the requeue */
    if ((rc = sl_eng_job_intent_write(e, j, "requeue")) < 0) {
        j->preempting = j->requeuing = j->requeue_hold = false;
        j->intent_at_ms = 0;
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    pthread_mutex_lock(&e->mu);
    sl_sched_job_terminating(e->sched, j->id, 0); /* no victim again */
    pthread_mutex_unlock(&e->mu);
    sl_eng_job_signal_all(e, j, j->spec->ckpt_signal);
    j->kill_at_ms = sl_eng_mono_ms(e) + j->spec->ckpt_grace_ms;
    sl_eng_job_timer(e, j);
    if ((rc = ctl_answer(op, j)) < 0)
        return rc;
    op->status = 202; /* it stops after its grace */
    return 0;
}

void sl_eng_requeue_done(struct sl_engine *e, struct job *j)
{
    if (j->requeuing && j->requeue_hold && j->state == SL_JOB_PENDING && sched_hold(e, j, true)) {
        j->held = true;
        sl_eng_job_msg(e, j, "%s; held until released", j->message ? j->message : "requeued");
    }
    j->requeuing = j->requeue_hold = false;
}

/* A maxRuntime for people: "none" or sl_fmt_duration's ("90s", "1h30m"). */
static void fmt_duration(int64_t ms, char *buf, size_t size)
{
    if (ms <= 0)
        snprintf(buf, size, "none");
    else
        sl_fmt_duration(ms, buf, size);
}

/* Store 'j''s spec as it is now. */
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

int sl_eng_do_update(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = ctl_job(e, op, op->u.update.job_id, "update");
    int64_t old, want = op->u.update.max_runtime_ms, now = sl_eng_now_ms(e);
    char a[32], b[32];
    int rc;

    if (!j)
        return -EPERM;
    old = j->spec->max_runtime_ms;
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
    fmt_duration(old, a, sizeof(a));
    fmt_duration(want, b, sizeof(b));
    if (old > 0 && want > old && !sl_eng_is_admin(&op->who)) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EPERM, "maxRuntime",
                               "only an admin may raise it (from %s to %s): it may only be "
                               "lowered",
                               a, b);
    }
    j->spec->max_runtime_ms = want;
    sl_eng_job_msg(e, j, "maxRuntime %s -> %s by %s", a, b, op->who.user);
    if ((rc = respec_write(e, j)) < 0 ||
        (rc = sl_eng_job_persist(e, j, "update", sl_job_state_name(j->state), -1, 0)) < 0) {
        j->spec->max_runtime_ms = old;
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    pthread_mutex_lock(&e->mu);
    rc = sl_sched_job_max_runtime(e->sched, j->id, want);
    pthread_mutex_unlock(&e->mu);
    if (rc < 0) {
        j->spec->max_runtime_ms = old;
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "out of memory");
    }
    if (j->state == SL_JOB_RUNNING) {
        /* its checkpoint timer from its start: at once when past */
        int64_t left = j->started_ms + want - now;
        j->ckpt_at_ms = sl_eng_mono_ms(e) + (left > 0 ? left : 0);
        sl_eng_job_timer(e, j);
    }
    e->sched_full = true; /* reservations and backfill see the new end */
    op->audit_details = json_pack("{s:{s:s, s:s}}", "maxRuntime", "old", a, "new", b);
    return ctl_answer(op, j);
}
