/*
 * attach.c - the engine's part of attaching to an interactive job
 * (GET /v1/jobs/{id}/attach): who may, when, and the record of it. The
 * session itself is the API's relay (src/api/relay.c) and the task's shim
 * (src/exec/pty.c); the engine never carries a byte of it.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The job for op, or NULL with op refused: 404 when unknown or of another
 * team (as cancel), 409 when it has finished. */
static struct job *attach_job(struct sl_engine *e, struct sl_op *op, int64_t id)
{
    struct job *j = sl_imap_get(&e->jobs, id);
    const char *team = NULL;
    json_t *row = NULL;

    if (j && (sl_eng_is_admin(&op->who) || strcmp(j->team, op->who.team) == 0))
        return j;
    if (!j) {
        sl_store_job_read(e->st, id, sl_job_view_json_fn, &row);
        team = json_string_value(json_object_get(row, "team"));
    }
    if (!row || !team || (!sl_eng_is_admin(&op->who) && strcmp(team, op->who.team) != 0)) {
        json_decref(row);
        sl_eng_op_fail(op, 404, "not_found");
        sl_errorf(&op->err, -ENOENT, "job %lld not found", (long long)id);
        return NULL;
    }
    sl_eng_op_fail(op, 409, "conflict");
    sl_errorf_field(&op->err, -EALREADY, "state", "job %lld has finished (%s)", (long long)id,
                    json_string_value(json_object_get(row, "state")));
    json_decref(row);
    return NULL;
}

int sl_eng_do_attach(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = attach_job(e, op, op->u.jobctl.job_id);
    char msg[160];
    int rc;

    if (!j)
        return -EPERM;
    /* A terminal is a shell as the job's account: its user's alone (and
     * an admin's), not its team's. */
    if (!sl_eng_is_admin(&op->who) && strcmp(j->user, op->who.user) != 0) {
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "user",
                               "job %lld is %s's: only its user or an admin may attach to it",
                               (long long)j->id, j->user);
    }
    if (!j->spec->interactive) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EINVAL, "spec.interactive",
                               "job %lld is not interactive: it has no terminal to attach to "
                               "(sluice logs shows its output)",
                               (long long)j->id);
    }
    if (j->state != SL_JOB_RUNNING) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EBUSY, "state",
                               "job %lld is %s: attach once it runs (sluice why %lld)",
                               (long long)j->id, sl_job_state_name(j->state),
                               (long long)j->id);
    }
    if (!j->tasks || !j->tasks[0].started || j->tasks[0].done) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -EAGAIN, "job %lld is %s; try again", (long long)j->id,
                         j->tasks && j->tasks[0].done ? "ending" : "starting");
    }
    snprintf(msg, sizeof(msg), "attached by %s", op->who.user);
    if ((rc = sl_store_event_add(e->st, j->id, sl_eng_now_ms(e), "attach", NULL, NULL, msg)) <
        0) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    if (!(op->result = json_pack("{s:I, s:i, s:i}", "job", (json_int_t)j->id, "attempt",
                                 j->attempt, "task", 0))) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    op->status = 200;
    return 0;
}
