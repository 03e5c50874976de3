/*
 * jobctl.c - job control after submission: hold and release a pending
 * job, requeue a running one. Who may: the job's user, a team-admin of
 * its team, an admin (a stricter rule than cancel's, which any writer of
 * the team may do). A held job keeps its place in line (its submit time)
 * and no pass, backfill or staging considers it (sl_sched_job_hold); the
 * hold is in the job's row (intent "held") and so outlives a restart. A
 * requeue takes the preemption's path with no preemptor (intent
 * "requeue", or "requeue-hold"). A hold by an admin, or by a team-admin
 * of the job's team, of another user's job is an admin's hold (intent
 * "held-admin", as Slurm's operators' holds): its user may not release
 * it. Updates are in jobupdate.c. docs/cli.md (hold, release, requeue)
 * and docs/api-contract.md say what is refused.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct job *sl_eng_ctl_job(struct sl_engine *e, struct sl_op *op, int64_t id,
                           const char *verb)
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

void sl_eng_job_msg_restore(struct sl_engine *e, struct job *j, char *saved)
{
    if (saved)
        sl_eng_job_msg(e, j, "%s", saved);
    else
        sl_eng_job_msg(e, j, NULL);
    free(saved);
}

int sl_eng_ctl_answer(struct sl_op *op, const struct job *j)
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

/* Whether 'who' holding job 'j' makes an admin's hold, as Slurm's
 * operators and coordinators do: an admin, or a team-admin of its team
 * (sl_eng_ctl_job lets no other team's through), holding another user's
 * job. */
static bool admin_kind(const struct sl_principal *who, const struct job *j)
{
    return (sl_eng_is_admin(who) || strcmp(who->role, "team-admin") == 0) &&
           strcmp(j->user, who->user) != 0;
}

void sl_eng_hold_note(struct sl_engine *e, const struct job *j)
{
    char note[256];

    if (!j->held)
        return;
    snprintf(note, sizeof(note),
             "held by %s (an admin hold): not scheduled until an admin or a team-admin of "
             "team %s releases it",
             j->hold_by ? j->hold_by : "an admin", j->team);
    pthread_mutex_lock(&e->mu);
    if (sl_sched_job_hold_note(e->sched, j->id, j->hold_admin ? note : NULL) < 0)
        sl_error("msg=\"out of memory: a held job's reason is the default one\" job=%lld",
                 (long long)j->id);
    pthread_mutex_unlock(&e->mu);
}

/* Set the hold of 'j' to 'on' (of kind 'admin', by 'by'; interned) with
 * its row and one event of 'type', the job's message 'msg'; on a failed
 * write nothing stays changed. */
static int hold_write(struct sl_engine *e, struct sl_op *op, struct job *j, bool on,
                      bool admin, const char *by, const char *type, const char *msg)
{
    char *old = j->message ? strdup(j->message) : NULL;
    bool was = j->held, was_admin = j->hold_admin;
    const char *was_by = j->hold_by;
    int rc;

    if (j->message && !old) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    j->held = on;
    j->hold_admin = on && admin;
    j->hold_by = on ? by : NULL;
    sl_eng_job_msg(e, j, "%s", msg);
    if ((rc = sl_eng_job_persist(e, j, type, "Pending", -1, 0)) < 0 || !sched_hold(e, j, on)) {
        j->held = was;
        j->hold_admin = was_admin;
        j->hold_by = was_by;
        sl_eng_job_msg_restore(e, j, old);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc < 0 ? rc : -ENOMEM,
                         rc < 0 ? "store: write failed" : "out of memory");
    }
    free(old);
    sl_eng_hold_note(e, j);
    e->sched_full = true; /* what it held or reserved is free for others */
    return 0;
}

int sl_eng_do_hold(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = sl_eng_ctl_job(e, op, op->u.jobctl.job_id, "hold");
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
    /* held again: an admin's hold replaces a user's, never the reverse */
    if (!j->held || (admin_kind(&op->who, j) && !j->hold_admin)) {
        bool admin = admin_kind(&op->who, j);
        const char *by = sl_eng_intern(&e->strs, op->who.user);
        if (!by) {
            sl_eng_op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, -ENOMEM, "out of memory");
        }
        snprintf(msg, sizeof(msg), "held by %s%s", op->who.user,
                 admin ? " (an admin hold)" : "");
        if ((rc = hold_write(e, op, j, true, admin, by, "hold", msg)) < 0)
            return rc;
        op->audit_details = json_pack("{s:s}", "kind", admin ? "admin" : "user");
    }
    return sl_eng_ctl_answer(op, j);
}

int sl_eng_do_release(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = sl_eng_ctl_job(e, op, op->u.jobctl.job_id, "release");
    char msg[160];
    int rc;

    if (!j)
        return -EPERM;
    if (j->state != SL_JOB_PENDING || !j->held) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EINVAL, "state", "job %lld is %s and not held",
                               (long long)j->id, sl_job_state_name(j->state));
    }
    if (j->hold_admin && !sl_eng_is_admin(&op->who) && strcmp(op->who.role, "team-admin")) {
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "hold",
                               "job %lld is held by %s, an admin hold: only an admin or a "
                               "team-admin of team %s may release it",
                               (long long)j->id, j->hold_by ? j->hold_by : "an admin",
                               j->team);
    }
    op->audit_details = json_pack("{s:s, s:s?}", "kind", j->hold_admin ? "admin" : "user",
                                  "held_by", j->hold_by);
    snprintf(msg, sizeof(msg), "released by %s", op->who.user);
    if ((rc = hold_write(e, op, j, false, false, NULL, "release", msg)) < 0)
        return rc;
    return sl_eng_ctl_answer(op, j);
}

int sl_eng_do_requeue(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = sl_eng_ctl_job(e, op, op->u.jobctl.job_id, "requeue");
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
    if (op->u.jobctl.hold && !(j->hold_by = sl_eng_intern(&e->strs, op->who.user))) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    j->preempting = j->requeuing = true;
    j->requeue_hold = op->u.jobctl.hold;
    j->hold_admin = op->u.jobctl.hold && admin_kind(&op->who, j);
    j->preempted_for = 0;
    j->intent_at_ms = sl_eng_now_ms(e);
    sl_eng_job_msg(e, j, "requeued by %s%s: %s, SIGKILL in %llds", op->who.user,
                   !j->requeue_hold ? ""
                   : j->hold_admin  ? " (and held: an admin hold)"
                                    : " (and held)",
                   sl_signal_name(j->spec->ckpt_signal),
                   (long long)(j->spec->ckpt_grace_ms / 1000));
    /* in the row, so that a restart before it stops finishes the requeue */
    if ((rc = sl_eng_job_intent_write(e, j, "requeue")) < 0) {
        j->preempting = j->requeuing = j->requeue_hold = j->hold_admin = false;
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
    if ((rc = sl_eng_ctl_answer(op, j)) < 0)
        return rc;
    op->status = 202; /* it stops after its grace */
    return 0;
}

void sl_eng_requeue_done(struct sl_engine *e, struct job *j)
{
    if (j->requeuing && j->requeue_hold && j->state == SL_JOB_PENDING && sched_hold(e, j, true)) {
        j->held = true;
        sl_eng_hold_note(e, j);
        sl_eng_job_msg(e, j, "%s; held until released", j->message ? j->message : "requeued");
    }
    if (!j->held)
        j->hold_admin = false;
    j->requeuing = j->requeue_hold = false;
}
