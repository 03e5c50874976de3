/*
 * job.c - jobs: the API view of a job, its rows and events, the run list
 * and timers, and the transitions to an end (finish, requeue, forget).
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../core/lifecycle.h"
#include "../policy/policy.h"
#include "../sched/sched.h"
#include "../sim/trace.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/heap.h"
#include "../util/imap.h"

void sl_eng_job_msg(struct sl_engine *e, struct job *j, const char *fmt, ...)
{
    char buf[256];
    char *m = NULL;
    va_list ap;

    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        m = strdup(buf); /* on -ENOMEM the job just loses its message */
    }
    pthread_mutex_lock(&e->mu);
    free(j->message);
    j->message = m;
    pthread_mutex_unlock(&e->mu);
}

/* Append the decimal form of 'v'. */
static void buf_int(struct sl_buf *b, int v)
{
    char t[16];
    int n = snprintf(t, sizeof(t), "%d", v);

    sl_buf_add(b, t, (size_t)n);
}

char *sl_eng_placement_text(struct sl_engine *e, const struct job *j)
{
    struct sl_buf b;

    sl_buf_init(&b);
    sl_buf_adds(&b, "[");
    pthread_mutex_lock(&e->mu); /* node names live in the scheduler */
    for (int t = 0; j->tasks && t < j->spec->tasks; t++) {
        const struct task *tk = &j->tasks[t];
        struct sl_sched_node_view nv;
        sl_sched_node_view(e->sched, tk->node, &nv);
        sl_buf_adds(&b, t ? ",{\"node\":" : "{\"node\":");
        sl_buf_json_str(&b, nv.name);
        sl_buf_adds(&b, ",\"task\":");
        buf_int(&b, t);
        sl_buf_adds(&b, ",\"gpus\":[");
        for (int g = 0; g < tk->ngpus; g++) {
            if (g)
                sl_buf_add(&b, ",", 1);
            buf_int(&b, tk->gpus[g]);
        }
        sl_buf_adds(&b, "],\"gpu_milli\":");
        buf_int(&b, tk->gpu_milli);
        sl_buf_add(&b, "}", 1);
    }
    pthread_mutex_unlock(&e->mu);
    sl_buf_add(&b, "]", 1);
    if (b.failed) {
        sl_buf_fini(&b);
        return NULL;
    }
    return b.data;
}

void sl_eng_job_view(const struct job *j, struct sl_job_view *v,
                     const char *placement, const char *spec_json)
{
    memset(v, 0, sizeof(*v));
    v->id = j->id;
    v->name = j->name;
    v->team = j->team;
    v->project = j->project;
    v->user = j->user;
    v->queue = j->queue;
    v->priority_class = j->pclass;
    v->priority = j->priority;
    v->state = j->state;
    v->attempt = j->attempt;
    v->retries = j->spec->retries;
    v->preemptions = j->preemptions;
    v->submitted_ms = j->submitted_ms;
    v->started_ms = j->started_ms;
    v->placement_json = placement;
    v->message = j->message;
    v->limits_enforced = j->limits_enforced;
    v->gpus_enforced = j->gpus_enforced;
    v->array_job_id = j->array_id;
    v->array_index = j->array_index;
    if (j->state == SL_JOB_RUNNING) {
        v->intent = j->cancel_requested ? "cancel"
                    : j->requeuing      ? (!j->requeue_hold  ? "requeue"
                                           : j->hold_admin ? "requeue-hold-admin"
                                                           : "requeue-hold")
                    : j->preempting     ? "preempt"
                    : j->timed_out      ? "timeout"
                                        : NULL;
        v->intent_at_ms = v->intent ? j->intent_at_ms : 0;
        v->intent_for = j->preempting ? j->preempted_for : 0;
    } else if (j->state == SL_JOB_PENDING && j->staged_after) {
        v->intent = "staged";
        v->intent_for = j->staged_after;
    } else if (j->state == SL_JOB_PENDING && j->held) {
        /* sluice hold: outlives a restart */
        v->intent = j->hold_admin ? "held-admin" : "held";
    }
    v->hold_by = j->held || j->requeue_hold ? j->hold_by : NULL;
    v->spec_json = spec_json;
}

int sl_eng_job_row(struct sl_engine *e, struct job *j, int exit_code, int64_t finished_ms)
{
    struct sl_job_view v;
    int rc;

    sl_eng_job_view(j, &v, j->fresh ? j->placement : j->placement ? j->placement : "[]",
             j->spec_json);
    if (exit_code >= 0) {
        v.has_exit_code = true;
        v.exit_code = exit_code;
    }
    v.finished_ms = finished_ms;
    if (!j->fresh)
        return sl_store_job_update(e->st, &v, j->not_before_ms);
    if ((rc = sl_store_job_insert(e->st, &v, j->not_before_ms)) == 0 &&
        (!j->lineage || (rc = sl_store_job_lineage(e->st, j->id, j->lineage)) == 0) &&
        (rc = sl_store_event_add(e->st, j->id, j->submitted_ms, "state", NULL, "Pending",
                                 NULL)) == 0 &&
        (!j->demoted || (rc = sl_store_event_add(e->st, j->id, j->submitted_ms, "budget",
                                                 "Pending", "Pending", j->demoted)) == 0))
        j->fresh = false;
    return rc;
}

void sl_eng_job_store_fresh(struct sl_engine *e, int64_t id)
{
    struct job *j = sl_imap_get(&e->jobs, id);

    if (!j || !j->fresh)
        return;
    if (sl_eng_job_row(e, j, -1, 0) < 0) {
        sl_error("msg=\"store: cannot write a new job; the group fails\" job=%lld",
                 (long long)id);
        e->write_failed = true;
    } else {
        free(j->spec_json);
        j->spec_json = NULL;
        free(j->demoted);
        j->demoted = NULL;
        free(j->lineage);
        j->lineage = NULL;
    }
}

int sl_eng_job_persist(struct sl_engine *e, struct job *j, const char *type,
                       const char *from, int exit_code, int64_t finished_ms)
{
    int rc = sl_eng_job_row(e, j, exit_code, finished_ms);

    if (rc == 0)
        rc = sl_store_event_add(e->st, j->id, sl_eng_now_ms(e), type, from,
                                sl_job_state_name(j->state), j->message);
    return rc;
}

int sl_eng_job_intent_write(struct sl_engine *e, struct job *j, const char *type)
{
    int rc = sl_eng_job_row(e, j, -1, 0);

    if (rc == 0)
        rc = sl_store_event_add(e->st, j->id, j->intent_at_ms, type, NULL, NULL,
                                j->message);
    return rc;
}

void sl_eng_job_token_drop(struct job *j)
{
    if (j->token) {
        sodium_memzero(j->token, strlen(j->token));
        free(j->token);
        j->token = NULL;
    }
}

void sl_eng_job_free(struct job *j)
{
    if (!j)
        return;
    sl_job_spec_destroy(j->spec);
    free(j->tasks);
    free(j->placement);
    free(j->spec_json);
    free(j->name);
    free(j->message);
    free(j->end_note);
    free(j->demoted);
    free(j->lineage);
    free(j->dep);
    sl_eng_job_token_drop(j);
    free(j);
}

int sl_eng_vec_push(void **vec, size_t *n, size_t *cap, size_t elem, const void *v)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        void *nv = realloc(*vec, ncap * elem);
        if (!nv)
            return -ENOMEM;
        *vec = nv;
        *cap = ncap;
    }
    memcpy((char *)*vec + *n * elem, v, elem);
    (*n)++;
    return 0;
}

int sl_eng_run_add(struct sl_engine *e, struct job *j)
{
    int rc = sl_heap_reserve(&e->timers, e->nrun + 1);

    if (rc == 0 && (rc = sl_eng_vec_push((void **)&e->run, &e->nrun, &e->run_cap,
                                  sizeof(j), &j)) == 0)
        j->run_idx = e->nrun - 1;
    return rc;
}

void sl_eng_run_del(struct sl_engine *e, struct job *j)
{
    size_t i = j->run_idx;

    sl_heap_del(&e->timers, &j->due);
    if (i >= e->nrun || e->run[i] != j)
        return; /* not on the list */
    e->run[i] = e->run[--e->nrun];
    e->run[i]->run_idx = i;
}

/* When the job's next timer is due (mono ms), or INT64_MAX for none: the
 * maxRuntime checkpoint and the SIGKILL after a grace period. */
static int64_t job_due_ms(const struct job *j)
{
    int64_t due = INT64_MAX;

    if (j->ckpt_at_ms && !j->timed_out && !j->cancel_requested && !j->preempting)
        due = j->ckpt_at_ms;
    if (j->kill_at_ms && j->kill_at_ms < due)
        due = j->kill_at_ms;
    return due;
}

void sl_eng_job_timer(struct sl_engine *e, struct job *j)
{
    int64_t due = j->tasks ? job_due_ms(j) : INT64_MAX;

    if (due == INT64_MAX)
        sl_heap_del(&e->timers, &j->due);
    else if (sl_heap_set(&e->timers, &j->due, due) < 0)
        sl_warn("msg=\"timer heap without room\" job=%lld", (long long)j->id);
}

/* A Running job stops: off the run list; the executor forgets it once
 * the transaction that records its end has committed (a crash before
 * then must still find its exit records). The scheduler is told by the
 * caller (remove or requeue), which gives the resources back. */
static void job_release(struct sl_engine *e, struct job *j)
{
    struct gone g = {j->id, j->attempt};

    pthread_mutex_lock(&e->mu);
    sl_eng_run_del(e, j);
    pthread_mutex_unlock(&e->mu);
    if (sl_eng_vec_push((void **)&e->gone, &e->ngone, &e->gone_cap, sizeof(g), &g) < 0)
        sl_warn("msg=\"out of memory: the executor keeps job %lld's records\"",
                (long long)j->id);
    free(j->tasks);
    j->tasks = NULL;
    free(j->placement);
    j->placement = NULL;
    e->sched_full = true;
}

void sl_eng_job_forget(struct sl_engine *e, struct job *j)
{
    if (j->staged_after) /* cancelled while staged: it must not start */
        sl_executor_unstage(e->x, j->id, j->attempt);
    sl_engine_count_finished(e, j->state);
    if (j->dep)
        e->ndepwait--;
    if (j->array_held)
        e->narray_held--;
    e->dep_dirty = true; /* its dependents: depwait.c */
    pthread_mutex_lock(&e->mu);
    sl_imap_del(&e->jobs, j->id);
    sl_sched_job_remove(e->sched, j->id, sl_eng_now_ms(e));
    pthread_mutex_unlock(&e->mu);
    sl_eng_job_free(j);
}

void sl_eng_job_requeue_sched(struct sl_engine *e, struct job *j, int64_t not_before)
{
    pthread_mutex_lock(&e->mu);
    sl_sched_job_requeue(e->sched, j->id, sl_eng_now_ms(e), not_before);
    pthread_mutex_unlock(&e->mu);
}

int sl_eng_job_finish(struct sl_engine *e, struct job *j, bool lost)
{
    struct sl_attempt_end in = {
        .cancel_requested = j->cancel_requested,
        .preempting = j->preempting,
        .requeued = j->requeuing,
        .timed_out = j->timed_out,
        .lost = lost,
        .gang_failed = j->gang_failed,
        .tasks = j->spec->tasks,
        .note = j->end_note,
        .attempt = j->attempt,
        .preemptions = j->preemptions,
        .retries = j->spec->retries,
        .max_runtime_ms = j->spec->max_runtime_ms,
        .preempted_for = j->preempted_for,
        .retry_backoff_ms = e->cfg.retry_backoff_ms,
        .now_ms = sl_eng_now_ms(e),
    };
    struct sl_attempt_outcome out;
    int rc = 0;

    sl_eng_ledger_close(e, j, in.now_ms);
    sl_eng_job_token_drop(j);
    if (e->caps.job_tokens && e->api_url[0]) {
        int n = sl_store_tokens_revoke_job(e->st, j->id, in.now_ms);
        if (n < 0)
            e->write_failed = true;
        e->tokens_revoked |= n > 0;
    }
    for (int t = 0; t < j->spec->tasks && in.exit_code == 0; t++)
        in.exit_code = j->tasks[t].exit_code;
    sl_attempt_outcome(&in, &out);
    if (out.state == SL_JOB_CANCELLED && j->idle_ended) {
        char d[48];
        snprintf(out.message, sizeof(out.message), "interactive session idle for %s: ended",
                 sl_fmt_duration(e->cfg.interactive_idle_timeout_ms, d, sizeof(d)));
    }
    if (out.state != SL_JOB_NSTATES) {
        j->state = out.state;
        if (!out.keep_message)
            sl_eng_job_msg(e, j, "%s", out.message);
        rc = sl_eng_job_persist(e, j, "state", "Running", out.exit_code,
                                out.finished ? in.now_ms : 0);
    }
    sl_eng_stage_end(e, j, out.state == SL_JOB_SUCCEEDED && out.next == SL_NEXT_NONE);
    job_release(e, j);
    if (out.next == SL_NEXT_NONE || (rc < 0 && out.next == SL_NEXT_RETRY)) {
        sl_eng_job_forget(e, j);
        return rc;
    }
    /* Back in line: preempted (its submit time kept), or retried after the
     * backoff. */
    j->attempt = out.attempt;
    j->preemptions = out.preemptions;
    j->state = SL_JOB_PENDING;
    j->started_ms = 0;
    j->not_before_ms = out.not_before_ms;
    j->limits_enforced = j->gpus_enforced = -1;
    j->preempting = j->lost = j->gang_failed = j->timed_out = false;
    j->kill_at_ms = j->ckpt_at_ms = 0;
    j->preempted_for = 0;
    free(j->end_note);
    j->end_note = NULL;
    sl_eng_job_msg(e, j, "%s", out.next_message);
    sl_eng_job_requeue_sched(e, j, out.not_before_ms);
    sl_eng_requeue_done(e, j);
    if (rc == 0)
        rc = sl_eng_job_persist(e, j, out.event, out.from, -1, 0);
    if (rc == 0) /* what its next attempt comes after, for its logs */
        rc = sl_store_attempt_put(e->st, j->id, j->attempt, 0,
                                  in.requeued     ? SL_ATTEMPT_AFTER_REQUEUE
                                  : in.preempting ? SL_ATTEMPT_AFTER_PREEMPTION
                                  : in.lost       ? SL_ATTEMPT_AFTER_LOSS
                                                  : SL_ATTEMPT_AFTER_FAILURE,
                                  NULL);
    return rc;
}

int sl_eng_attempt_start(struct sl_engine *e, struct job *j)
{
    struct sl_buf b;
    int rc;

    sl_buf_init(&b);
    sl_buf_adds(&b, "[");
    for (int t = 0; t < j->spec->tasks; t++) {
        char path[1200];
        struct stat sb;
        /* no log yet, or an executor that keeps none: it begins at 0 */
        long long size = sl_executor_log_path(e->x, j->id, t, path, sizeof(path)) == 0 &&
                                 stat(path, &sb) == 0
                             ? (long long)sb.st_size
                             : 0;
        sl_buf_printf(&b, "%s%lld", t ? "," : "", size);
    }
    sl_buf_adds(&b, "]");
    rc = b.failed ? -ENOMEM
                  : sl_store_attempt_put(e->st, j->id, j->attempt, j->started_ms, NULL, b.data);
    sl_buf_fini(&b);
    return rc;
}

void sl_eng_job_signal_all(struct sl_engine *e, struct job *j, int sig)
{
    sl_executor_signal(e->x, j->id, j->attempt, sig);
}
