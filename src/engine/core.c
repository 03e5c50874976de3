/*
 * core.c - the engine thread's loop: the op queue, group commit and the
 * syncer, timers, and start, stop and shutdown.
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
#include <unistd.h>

#include "../audit/audit.h"
#include "../policy/policy.h"
#include "../sched/sched.h"
#include "../sim/trace.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/heap.h"
#include "../util/imap.h"

void sl_eng_op_fail(struct sl_op *op, int status, const char *code)
{
    op->status = status;
    op->code = code;
}

int sl_eng_op_job_body(struct sl_op *op, const struct sl_job_view *v)
{
    struct sl_buf b;

    sl_buf_init(&b);
    if (sl_job_view_render(v, &b) < 0) {
        sl_buf_fini(&b);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    op->body = b.data;
    op->body_len = b.len;
    return 0;
}

static void apply_op(struct sl_engine *e, struct sl_op *op)
{
    int rc;

    /* A cancel of a job submitted in this very group (its id guessed, as
     * it is not answered yet) must not hold the job's only insert in a
     * savepoint that a refusal would undo. */
    if (op->kind == SL_OP_CANCEL)
        sl_eng_job_store_fresh(e, op->u.cancel.job_id);
    else if (op->kind == SL_OP_ARRAY_CANCEL)
        sl_eng_array_store_fresh(e, op->u.cancel.job_id);
    else if (op->kind == SL_OP_HOLD || op->kind == SL_OP_RELEASE || op->kind == SL_OP_REQUEUE)
        sl_eng_job_store_fresh(e, op->u.jobctl.job_id);
    else if (op->kind == SL_OP_UPDATE)
        sl_eng_job_store_fresh(e, op->u.update.job_id);
    if (sl_store_savepoint(e->st) < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, -EIO, "store: cannot start a savepoint");
        return;
    }
    rc = sl_eng_op_apply(e, op);
    if (rc < 0) {
        if (!op->status) {
            /* every refusal names its status; one that did not is a bug,
             * never a status 0 on the wire */
            sl_eng_op_fail(op, 500, "internal");
            if (!op->err.text[0])
                sl_errorf(&op->err, rc, "%s", strerror(-rc));
        }
        json_decref(op->result);
        op->result = NULL;
        free(op->body);
        op->body = NULL;
        sl_store_rollback_to(e->st);
    } else {
        sl_store_release(e->st);
    }
    sl_eng_audit_op(e, op, rc);
}

/* Fire one job's maxRuntime and grace timers that are due at 'now' (mono). */
static void fire_timers(struct sl_engine *e, struct job *j, int64_t now)
{
    if (j->ckpt_at_ms && now >= j->ckpt_at_ms && !j->timed_out &&
        !j->cancel_requested && !j->preempting) {
        j->timed_out = true;
        j->intent_at_ms = sl_eng_now_ms(e);
        sl_eng_job_msg(e, j, "maxRuntime reached: sent %s, SIGKILL in %llds",
                sl_signal_name(j->spec->ckpt_signal),
                (long long)(j->spec->ckpt_grace_ms / 1000));
        if (sl_eng_job_intent_write(e, j, "timeout") < 0) {
            sl_error("msg=\"cannot record a timeout; the group fails\" job=%lld",
                     (long long)j->id);
            e->write_failed = true;
        }
        sl_eng_job_signal_all(e, j, j->spec->ckpt_signal);
        j->kill_at_ms = now + j->spec->ckpt_grace_ms;
    }
    if (j->kill_at_ms && now >= j->kill_at_ms) {
        sl_eng_job_signal_all(e, j, SIGKILL);
        j->kill_at_ms = 0;
    }
}

/* Everything due by now, and only that: the jobs at the top of the timer
 * heap. Each firing moves its job on (a timer fired is cleared or made
 * later), so the loop ends. */
static void run_due(struct sl_engine *e)
{
    int64_t now = sl_eng_mono_ms(e);
    struct sl_heap_item *it;

    while ((it = sl_heap_top(&e->timers)) && it->key <= now) {
        struct job *j = SL_CONTAINER_OF(it, struct job, due);
        fire_timers(e, j, now);
        sl_eng_job_timer(e, j);
    }
}

/* How long the loop may sleep (ms): until the next timer, the
 * scheduler's wake-up or the executor's next event, at most a second; 0
 * when one is due. */
static int64_t next_wait_ms(struct sl_engine *e)
{
    int64_t next = 1000, wall = sl_eng_now_ms(e), ev = sl_executor_next_event_ms(e->x);
    const struct sl_heap_item *it = sl_heap_top(&e->timers);

    if (e->sched_wake_ms && e->sched_wake_ms - wall < next)
        next = e->sched_wake_ms - wall;
    if (ev != INT64_MAX && ev - wall < next)
        next = ev - wall;
    if (it && it->key - sl_eng_mono_ms(e) < next)
        next = it->key - sl_eng_mono_ms(e);
    return next < 0 ? 0 : next;
}

/* Jobs re-adopted with every task ended while sluiced was down finish
 * (in the open transaction). */
static void finish_ended(struct sl_engine *e)
{
    for (size_t i = 0; i < e->nended; i++) {
        struct job *j = sl_imap_get(&e->jobs, e->ended[i]);
        if (j && j->state == SL_JOB_RUNNING && j->tasks)
            sl_eng_job_finish(e, j, j->lost);
    }
    e->nended = 0;
}

/* The executor forgets the jobs whose end the last commit recorded. */
static void release_gone(struct sl_engine *e)
{
    for (size_t i = 0; i < e->ngone; i++)
        sl_executor_release(e->x, e->gone[i].job_id, e->gone[i].attempt);
    e->ngone = 0;
}

/* After the commit that made them Running: start the placed jobs' tasks,
 * then record that they were launched (and how: the executor's notes) in
 * a small transaction of their own. A job none of whose tasks started
 * ends there. Returns whether some start failed. */
static bool launch(struct sl_engine *e, struct job **started, size_t n)
{
    bool failures = false;

    for (size_t i = 0; i < n; i++) {
        sl_eng_job_start_tasks(e, started[i]);
        sl_eng_job_timer(e, started[i]);
        failures |= started[i]->gang_failed;
    }
    if (sl_store_begin(e->st) < 0)
        return failures;
    for (size_t i = 0; i < n; i++) {
        struct job *j = started[i];
        bool none = true;
        sl_eng_job_persist(e, j, "launched", "Running", -1, 0);
        for (int t = 0; t < j->spec->tasks; t++)
            none &= !j->tasks[t].started;
        if (none)
            sl_eng_job_finish(e, j, false); /* may free j */
    }
    if (sl_store_commit(e->st, NULL) == 0)
        release_gone(e);
    else
        sl_store_rollback(e->st);
    return failures;
}

static struct sl_op *take_ops(struct sl_engine *e, bool *stopping)
{
    struct sl_op *ops;
    pthread_mutex_lock(&e->qmu);
    ops = e->qhead;
    e->qhead = e->qtail = NULL;
    *stopping = e->stopping;
    pthread_mutex_unlock(&e->qmu);
    return ops;
}

/* Engine thread: hand a committed group, and its commit token, to the
 * syncer. */
static void sync_enqueue(struct sl_engine *e, struct sl_op *ops, uint64_t token)
{
    struct sl_op *last = ops;

    if (!ops)
        return;
    while (last->next)
        last = last->next;
    pthread_mutex_lock(&e->smu);
    if (e->stail)
        e->stail->next = ops;
    else
        e->shead = ops;
    e->stail = last;
    e->stoken = token; /* tokens grow: the last covers every group queued */
    pthread_cond_signal(&e->scond);
    pthread_mutex_unlock(&e->smu);
}

static void complete_ops(struct sl_op *ops, bool committed);

/* The syncer thread: one sync of the store (SQLite: an fdatasync of the
 * WAL) covers every group committed up to the last one taken; then those
 * requests are answered. */
static void *syncer_main(void *arg)
{
    struct sl_engine *e = arg;

    pthread_setname_np(pthread_self(), "syncer");
    for (;;) {
        struct sl_op *ops;
        uint64_t token;
        bool stop;
        int rc;
        pthread_mutex_lock(&e->smu);
        while (!e->shead && !e->sstop)
            pthread_cond_wait(&e->scond, &e->smu);
        ops = e->shead;
        token = e->stoken;
        e->shead = e->stail = NULL;
        stop = e->sstop;
        pthread_mutex_unlock(&e->smu);
        if (ops) {
            bool durable = true;
            if (e->cfg.sync_full && (rc = sl_store_sync(e->st, token)) < 0) {
                /* The rows are committed but maybe not on disk: say so
                 * rather than acknowledge what a power loss could undo. */
                sl_error("msg=\"store sync failed\" err=\"%s\"", strerror(-rc));
                durable = false;
            }
            complete_ops(ops, durable);
        }
        if (stop && !ops)
            break;
    }
    return NULL;
}

static void complete_ops(struct sl_op *ops, bool committed)
{
    while (ops) {
        struct sl_op *next = ops->next;
        if (!committed && ops->status < 300) {
            json_decref(ops->result);
            ops->result = NULL;
            free(ops->body);
            ops->body = NULL;
            sl_eng_op_fail(ops, 503, "unavailable");
            sl_errorf(&ops->err, -EIO, "store: commit failed; nothing was changed");
        }
        ops->done(ops, ops->arg);
        ops = next;
    }
}

void sl_engine_lose(struct sl_engine *e)
{
    uint64_t one = 1;

    if (atomic_exchange_explicit(&e->lost, true, memory_order_acq_rel))
        return;
    sl_error("msg=\"this daemon no longer leads: it changes nothing more and stops\"");
    if (write(e->wake_fd, &one, sizeof(one)) < 0) {
        /* the engine polls at least once a second anyway */
    }
}

bool sl_engine_lost(struct sl_engine *e)
{
    return atomic_load_explicit(&e->lost, memory_order_acquire);
}

/* Engine thread, once after sl_engine_lose: change nothing more; kill the
 * tasks no other daemon could adopt (the local executor's processes on
 * this host: the next leader marks them lost and retries them as their
 * jobs say), and have sluiced stop. A Slurm cluster's jobs go on running
 * for the next leader to adopt. */
static void step_down(struct sl_engine *e)
{
    e->lost_done = true;
    e->broken = true;
    if (!e->cfg.executor || strcmp(e->cfg.executor, "slurm") != 0) {
        int64_t id;
        void *v;
        for (size_t i = 0; sl_imap_next(&e->jobs, &i, &id, &v);) {
            struct job *j = v;
            if (j->state == SL_JOB_RUNNING)
                sl_eng_job_signal_all(e, j, SIGKILL);
        }
    }
    kill(getpid(), SIGTERM);
}

static void *engine_main(void *arg)
{
    struct sl_engine *e = arg;
    int64_t wait_ms = 0;

    pthread_setname_np(pthread_self(), "engine");
    for (;;) {
        struct pollfd pfd[2] = {{.fd = e->wake_fd, .events = POLLIN},
                                {.fd = sl_executor_wake_fd(e->x), .events = POLLIN}};
        struct sl_op *ops;
        struct job **started = NULL;
        size_t nstarted = 0;
        bool stopping, committed = true, failures = false;
        uint64_t cnt, token = 0;
        int begin_rc = 0;

        if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1, (int)(wait_ms > 1000 ? 1000 : wait_ms)) > 0 &&
            (pfd[0].revents & POLLIN) && read(e->wake_fd, &cnt, sizeof(cnt)) < 0) {
            /* spurious; nothing to drain */
        }
        ops = take_ops(e, &stopping);
        if (atomic_load_explicit(&e->lost, memory_order_acquire) && !e->lost_done)
            step_down(e);
        if (e->broken || (begin_rc = sl_store_begin(e->st)) < 0) {
            /* The epoch moved on, or (several daemons on the store) the
             * store cannot be reached: step down, acted on at the top of
             * the next turn; a follower, or this one restarted, leads on. */
            if (begin_rc == -ESTALE || (begin_rc < 0 && e->cfg.ha_epoch))
                sl_engine_lose(e);
            /* Nothing can be changed: refuse, and wait to be stopped. */
            complete_ops(ops, false);
            wait_ms = 100;
            if (stopping)
                break;
            continue;
        }
        for (struct sl_op *op = ops; op; op = op->next)
            apply_op(e, op);
        sl_eng_exec_events(e);
        finish_ended(e);
        sl_eng_restage_resolve(e);
        run_due(e);
        sl_eng_depend_update(e);
        if (sl_eng_mono_ms(e) >= e->next_meter_ms) {
            sl_eng_meter_tick(e);
            e->next_meter_ms = sl_eng_mono_ms(e) + METER_TICK_MS;
        }
        if (!stopping && (e->nfresh || e->sched_full ||
                          (e->sched_wake_ms && sl_eng_now_ms(e) >= e->sched_wake_ms))) {
            int64_t pass_start_ns = sl_mono_ns();
            sl_eng_nodeadmin_refresh(e); /* draining -> drained */
            sl_eng_schedule(e, &started, &nstarted);
            sl_engine_count_pass(e, sl_mono_ns() - pass_start_ns);
        }
        /* The jobs of this group that nothing has written yet. */
        for (size_t i = 0; i < e->nunstored; i++)
            sl_eng_job_store_fresh(e, e->unstored[i]);
        e->nunstored = 0;
        sl_eng_audit_checkpoint(e, stopping);
        if (e->write_failed || sl_store_commit(e->st, &token) < 0) {
            /* Memory now holds changes the store does not: stop changing
             * anything and have sluiced shut down; the next start loads
             * the last committed state. Nothing of this group was
             * acknowledged. */
            sl_error("msg=\"store %s failed; refusing changes and shutting down\"",
                     e->write_failed ? "write" : "commit");
            sl_store_rollback(e->st);
            sl_eng_audit_rollback(e);
            e->tokens_revoked = false;
            committed = false;
            e->broken = true;
            /* Several daemons: one that cannot commit cannot know it still
             * leads; it steps down and another takes over. */
            if (e->cfg.ha_epoch)
                sl_engine_lose(e);
            kill(getpid(), SIGTERM);
        }
        if (committed) {
            sl_eng_audit_committed(e);
            if (e->tokens_revoked)
                atomic_fetch_add_explicit(&e->token_epoch, 1, memory_order_release);
            e->tokens_revoked = false;
            release_gone(e);
            sync_enqueue(e, ops, token);
        } else {
            complete_ops(ops, false);
        }
        if (nstarted && committed)
            failures = launch(e, started, nstarted);
        if (committed)
            sl_eng_stage_submit(e);
        else
            e->nstaging = 0;
        free(started);
        wait_ms = next_wait_ms(e);
        if (failures || e->sched_full || e->nfresh)
            wait_ms = 0;
        if (stopping) {
            bool more;
            pthread_mutex_lock(&e->qmu);
            more = e->qhead != NULL;
            pthread_mutex_unlock(&e->qmu);
            if (!more)
                break;
            wait_ms = 0;
        }
    }
    return NULL;
}

int sl_engine_start(struct sl_engine *e)
{
    int rc = pthread_create(&e->sthread, NULL, syncer_main, e);
    if (rc)
        return -rc;
    e->srunning = true;
    if ((rc = pthread_create(&e->thread, NULL, engine_main, e)))
        return -rc;
    e->running = true;
    return 0;
}

void sl_engine_stop(struct sl_engine *e)
{
    uint64_t one = 1;

    if (!e)
        return;
    if (e->running) {
        pthread_mutex_lock(&e->qmu);
        e->stopping = true;
        pthread_mutex_unlock(&e->qmu);
        if (write(e->wake_fd, &one, sizeof(one)) < 0) {
            /* the engine polls at least once a second anyway */
        }
        pthread_join(e->thread, NULL);
        e->running = false;
    }
    if (e->srunning) {
        /* The engine has handed over its last group; the syncer answers it
         * and ends. */
        pthread_mutex_lock(&e->smu);
        e->sstop = true;
        pthread_cond_signal(&e->scond);
        pthread_mutex_unlock(&e->smu);
        pthread_join(e->sthread, NULL);
        e->srunning = false;
    }
}

void sl_engine_destroy(struct sl_engine *e)
{
    size_t pos = 0;
    int64_t id;
    void *v;
    int saved = errno;

    if (!e)
        return;
    sl_engine_stop(e);
    while (sl_imap_next(&e->jobs, &pos, &id, &v))
        sl_eng_job_free(v);
    sl_imap_fini(&e->jobs);
    for (int i = 0; i < e->nqueues; i++)
        free(e->queues[i].spec_json);
    free(e->run);
    free(e->unstored);
    sl_heap_fini(&e->timers);
    free(e->gone);
    free(e->ended);
    free(e->staging);
    free(e->restaged);
    if (e->wake_fd >= 0)
        close(e->wake_fd);
    sl_gpumon_stop(e->mon);
    sl_executor_destroy(e->x);
    sl_inventory_fini(&e->nodes);
    sl_store_close(e->st);
    sl_sched_destroy(e->sched);
    sl_eng_strtab_fini(&e->strs);
    sl_buf_fini(&e->audit_line);
    free(e->audit_ckpt_text);
    sl_audit_key_fini(&e->audit_key);
    free(e->policies);
    free(e->nadm);
    pthread_mutex_destroy(&e->smu);
    pthread_cond_destroy(&e->scond);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->qmu);
    free(e);
    errno = saved;
}

void sl_engine_submit(struct sl_engine *e, struct sl_op *op)
{
    uint64_t one = 1;
    bool refused, wake = false;

    op->next = NULL;
    pthread_mutex_lock(&e->qmu);
    refused = e->stopping && !e->running;
    if (!refused) {
        /* Only the first op of a group wakes the engine: it takes the
         * whole queue at once, so later ones ride along (one syscall per
         * group rather than per request). */
        wake = !e->qhead;
        if (e->qtail)
            e->qtail->next = op;
        else
            e->qhead = op;
        e->qtail = op;
    }
    pthread_mutex_unlock(&e->qmu);
    if (refused) {
        sl_eng_op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, -ESHUTDOWN, "sluiced is shutting down");
        op->done(op, op->arg);
        return;
    }
    if (wake && write(e->wake_fd, &one, sizeof(one)) < 0) {
        /* counter saturated: a wake-up is already pending */
    }
}

const char *sl_engine_store_path(struct sl_engine *e) { return e->store_path; }

bool sl_engine_sync_full(struct sl_engine *e) { return e->cfg.sync_full; }
