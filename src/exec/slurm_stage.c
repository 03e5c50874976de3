/*
 * slurm_stage.c - staged successors for the Slurm executor (executor.h
 * sl_executor_stage, docs/decisions/0010): a job submitted behind a
 * running one, pinned to its node and GPUs with --dependency=afterok on
 * its Slurm id, that slurmctld starts the moment that one completes. What
 * happens to it at its predecessor's end (handed over, or withdrawn and
 * said so first), holding it before its predecessor is signalled, revoking
 * it, withdrawing it. Locking as at the top of slurm.c.
 */
#include "slurm_int.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sl_slx_is_staged(const struct sjob *j)
{
    return j->staged;
}

/* The job that staged 'b' is behind loses it (caller holds mu). */
static void unlink_pred(struct slurm *s, const struct sjob *b)
{
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i]->succ_id == b->id && s->jobs[i]->succ_attempt == b->attempt)
            s->jobs[i]->succ_id = 0;
}

/* Withdraw staged (or just handed over) job 'b' (caller holds mu): the
 * engine may start the same attempt anew, so the record is out of reach
 * at once; its Slurm job is cancelled (once it has an id). */
static void withdraw(struct slurm *s, struct sjob *b)
{
    unlink_pred(s, b);
    b->staged = b->handed = false;
    b->released = true;
    b->st = SJ_DONE;
    if (b->submitting)
        b->cancel_after = true;
    else if (b->slurm_id && sl_slx_queue_cmd(s, C_CANCEL, b, 0) < 0)
        sl_warn("msg=\"slurm executor: out of memory; a withdrawn staged job is not "
                "cancelled\" slurm_job=%llu", (unsigned long long)b->slurm_id);
}

/* Tell the engine that staged job 'b' will not start, and withdraw it
 * (caller holds mu). */
void sl_slx_push_unstaged(struct slurm *s, struct sjob *b)
{
    if (sl_slx_vec_grow((void **)&s->events, &s->events_cap, s->nevents,
                        sizeof(*s->events)) == 0)
        s->events[s->nevents++] = (struct sl_exec_event){
            .kind = SL_EXEC_EV_UNSTAGED, .job_id = b->id, .attempt = b->attempt};
    else
        sl_error("msg=\"slurm executor: out of memory; a staged job's withdrawal is not "
                 "told\" job=%lld", (long long)b->id);
    withdraw(s, b);
    sl_slx_wake(s);
}

/* Predecessor 'j' ends (caller holds mu, before its own end is queued):
 * Slurm starts its staged successor when it completed (afterok: every
 * task's code 0) and the successor was not held; the successor is then
 * handed over. Otherwise the successor is withdrawn, and said so first. */
void sl_slx_successor_end(struct slurm *s, struct sjob *j, enum sl_exec_event_kind kind,
                          const int *codes)
{
    struct sjob *b;
    bool clean = kind == SL_EXEC_EV_EXITED;

    if (!j->succ_id)
        return;
    b = sl_slx_job_find(s, j->succ_id, j->succ_attempt);
    j->succ_id = 0;
    if (!b || !b->staged)
        return;
    for (int t = 0; t < j->ntasks && clean; t++)
        clean = !codes || codes[t] == 0;
    /* one still in sbatch starts once Slurm has it: its predecessor has
     * completed */
    if (clean && !b->held && b->st != SJ_DONE && !b->cancel_after) {
        b->staged = false;
        b->handed = true;
        return;
    }
    sl_slx_push_unstaged(s, b);
}

/* scontrol hold of Slurm job 'sid', kept only when the job is still
 * pending (Slurm 22.05 takes a hold on a running job too, meaning
 * nothing): true when it is held and will not start. */
bool sl_slx_hold_pending(struct slurm *s, uint64_t sid)
{
    char scontrol[PATH_MAX + 16], squeue[PATH_MAX + 16], id[32];
    char *hold[] = {scontrol, "hold", id, NULL};
    char *ask[] = {squeue, "-h", "-t", "all", "-j", id, "-o", "%T", NULL};
    struct sl_run_result res;
    bool pending;

    sl_slx_tool(s, "scontrol", scontrol, sizeof(scontrol));
    sl_slx_tool(s, "squeue", squeue, sizeof(squeue));
    snprintf(id, sizeof(id), "%llu", (unsigned long long)sid);
    if (sl_slx_call(s, hold, NULL, &res, NULL, 0) != 0) {
        sl_run_result_fini(&res);
        return false;
    }
    sl_run_result_fini(&res);
    /* held now: a pending job stays so; one that had started goes on */
    pending = sl_slx_call(s, ask, NULL, &res, NULL, 0) == 0 && res.out.data &&
              strncmp(res.out.data, "PENDING", 7) == 0;
    sl_run_result_fini(&res);
    if (!pending) {
        hold[1] = "release";
        sl_slx_call(s, hold, NULL, &res, NULL, 0);
        sl_run_result_fini(&res);
    }
    return pending;
}

/* scontrol hold of staged job 'b' (pinned by the caller): true when it
 * took and 'b' will not start. One still being submitted is cancelled once
 * submitted. One handed over meanwhile (its predecessor's end came during
 * the call) is released again: it must start. */
static bool hold_staged_job(struct slurm *s, struct sjob *b)
{
    char scontrol[PATH_MAX + 16], id[32], say[160] = "";
    char *argv[] = {scontrol, "release", id, NULL};
    struct sl_run_result res;
    uint64_t sid;
    bool held;

    pthread_mutex_lock(&s->mu);
    if (!b->staged || b->held) {
        held = b->held;
        pthread_mutex_unlock(&s->mu);
        return held;
    }
    if (b->submitting || !b->slurm_id) {
        b->held = b->cancel_after = true;
        pthread_mutex_unlock(&s->mu);
        return true;
    }
    sid = b->slurm_id;
    pthread_mutex_unlock(&s->mu);
    held = sl_slx_hold_pending(s, sid);
    pthread_mutex_lock(&s->mu);
    if (held && b->staged) {
        b->held = true;
    } else if (held && b->handed) {
        /* handed over during the call: it must start after all */
        pthread_mutex_unlock(&s->mu);
        sl_slx_tool(s, "scontrol", scontrol, sizeof(scontrol));
        snprintf(id, sizeof(id), "%llu", (unsigned long long)sid);
        if (sl_slx_call(s, argv, NULL, &res, say, sizeof(say)) != 0)
            sl_warn("msg=\"slurm executor: a job handed over as it was held is not "
                    "released\" slurm_job=%s error=\"%s\"", id, say);
        sl_run_result_fini(&res);
        return false;
    } else {
        held = false;
    }
    pthread_mutex_unlock(&s->mu);
    return held;
}

/* Before a job is signalled: hold its staged successor, so that Slurm
 * does not start it should the job exit 0 on this signal (afterok). A
 * hold that fails means it has started (the job completed first) or
 * will never start; the job's end says which. One still being submitted
 * is cancelled once submitted. */
void sl_slx_hold_successor(struct slurm *s, struct sjob *j)
{
    struct sjob *b;

    pthread_mutex_lock(&s->mu);
    b = j->succ_id ? sl_slx_job_find(s, j->succ_id, j->succ_attempt) : NULL;
    if (b)
        b->ncmds++;
    pthread_mutex_unlock(&s->mu);
    if (b) {
        hold_staged_job(s, b);
        pthread_mutex_lock(&s->mu);
        b->ncmds--;
        pthread_mutex_unlock(&s->mu);
    }
}

/* Revoke staged job 'b' (pinned by the caller): held, it will not start,
 * and is withdrawn; one that started stays (handed over at its
 * predecessor's end). */
void sl_slx_revoke_one(struct slurm *s, struct sjob *b)
{
    if (!hold_staged_job(s, b))
        return;
    pthread_mutex_lock(&s->mu);
    if (b->staged && b->held)
        sl_slx_push_unstaged(s, b);
    pthread_mutex_unlock(&s->mu);
}

int sl_slx_stage(struct sl_executor *x, const struct sl_exec_job *job)
{
    struct slurm *s = (struct slurm *)x;
    struct passwd pwbuf, *pw = NULL;
    char *pwtext = NULL;
    struct sl_error acct = {0};
    struct sjob *p, *j = NULL;
    const char *why = NULL;
    int rc = 0;

    if (sl_exec_account(job->unix_user && job->unix_user[0] ? job->unix_user : NULL,
                        job->allow_daemon_user, &pwbuf, &pwtext, &acct) < 0)
        return -EINVAL;
    pw = &pwbuf;
    pthread_mutex_lock(&s->mu);
    p = sl_slx_job_find(s, job->after_job, job->after_attempt);
    /* a predecessor that is submitted, not told anything, with no
     * successor, in one piece (afterok waits for all of a job) */
    if (!p || p->st == SJ_DONE || (!p->slurm_id && !p->submitting) || p->signalled ||
        p->succ_id || p->staged || p->handed || sl_slx_job_find(s, job->job_id, job->attempt))
        rc = -EAGAIN;
    else if ((why = sl_slx_job_submit(s, job, pw, true, p->submitting ? 0 : p->slurm_id, &j)))
        rc = strcmp(why, "out of memory") == 0 ? -ENOMEM : -EINVAL;
    else {
        p->succ_id = j->id;
        p->succ_attempt = j->attempt;
    }
    pthread_mutex_unlock(&s->mu);
    free(pwtext);
    return rc;
}

void sl_slx_revoke(struct sl_executor *x, int64_t job_id, int attempt)
{
    struct slurm *s = (struct slurm *)x;
    struct sjob *j;

    pthread_mutex_lock(&s->mu);
    if ((j = sl_slx_job_find(s, job_id, attempt)) && j->staged && !j->held &&
        sl_slx_queue_cmd(s, C_REVOKE, j, 0) < 0)
        sl_warn("msg=\"slurm executor: out of memory; a staged job is not revoked\" job=%lld",
                (long long)job_id);
    pthread_mutex_unlock(&s->mu);
}

void sl_slx_unstage(struct sl_executor *x, int64_t job_id, int attempt)
{
    struct slurm *s = (struct slurm *)x;
    struct sjob *j;

    pthread_mutex_lock(&s->mu);
    if ((j = sl_slx_job_find(s, job_id, attempt)) && (j->staged || j->handed))
        withdraw(s, j);
    pthread_mutex_unlock(&s->mu);
}

/* Staged job 'b' waited for its predecessor 'p' to be submitted (caller
 * holds mu): returns it, its dependency now on p's Slurm id, to submit
 * next; NULL when p was refused or b withdrawn meanwhile. */
struct sjob *sl_slx_chained(struct slurm *s, struct sjob *b, const struct sjob *p)
{
    b->after_pending = false;
    if (b->st == SJ_DONE || b->cancel_after || !p->slurm_id || p->st == SJ_DONE) {
        if (b->st != SJ_DONE && !b->released)
            sl_slx_push_unstaged(s, b);
        sl_slx_submitted(s, b);
        return NULL;
    }
    b->after_sid = p->slurm_id;
    return b;
}
