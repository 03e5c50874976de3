/*
 * lifecycle.h - how an attempt of a job ends: a pure function of what
 * ended it (a cancel, a preemption, maxRuntime, a lost task, its tasks'
 * exit codes), the job's retry policy and the time.
 *
 * The engine calls it once every task of a Running job has ended and
 * carries out what it says: the state the attempt is recorded in (with
 * its exit code, message and finish time), then, for a preemption or a
 * retry, the job back in line as Pending. docs/daemon.md has the table of
 * transitions; tests/unit/test_lifecycle.c checks each one.
 *
 * No I/O, no clock: the time comes in. Thread-safe.
 */
#ifndef SL_LIFECYCLE_H
#define SL_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "job.h"

#define SL_RETRY_BACKOFF_MAX_MS 600000 /* the doubling backoff's cap */

/* What the engine knows of an attempt when its last task has ended. */
struct sl_attempt_end {
    bool cancel_requested;        /* an acknowledged cancel */
    bool preempting;              /* the scheduler preempted it, or a user
                                     requeued it (requeued) */
    bool requeued;                /* preempting: by sluice requeue; not a
                                     failure either */
    bool timed_out;               /* its maxRuntime was reached (Sluice's
                                     timer, or the executor's own limit,
                                     e.g. Slurm's TIMEOUT) */
    bool lost;                    /* a task is gone without an exit code */
    bool gang_failed;             /* a task failed and the others were
                                     stopped */
    int tasks;                    /* spec.tasks: a gang when > 1 */
    const char *note;             /* what the executor said of the end
                                     (e.g. Slurm failed the node); NULL or
                                     "" = nothing */
    int exit_code;                /* the first non-zero exit code of its
                                     tasks, else 0 */
    int attempt;                  /* 0-based, the attempt that ended */
    int preemptions;              /* times preempted so far */
    int retries;                  /* spec.retries */
    int64_t max_runtime_ms;       /* spec.maxRuntime; 0 = none */
    int64_t preempted_for;        /* preempting: the job it made room for */
    int64_t retry_backoff_ms;     /* the base of the doubling backoff */
    int64_t now_ms;               /* wall clock */
};

enum sl_attempt_next {
    SL_NEXT_NONE,                 /* the job has ended */
    SL_NEXT_REQUEUE,              /* preempted: back in line, its submit
                                     time kept, at once */
    SL_NEXT_RETRY,                /* failed or lost with retries left:
                                     back in line after the backoff */
};

struct sl_attempt_outcome {
    /* The attempt's record: 'state' (SL_JOB_NSTATES when a failed attempt
     * that is retried records nothing), its exit code (-1 = none), whether
     * it finished now (finished_at), its message (keep_message: the job's
     * message stays as it is). */
    enum sl_job_state state;
    int exit_code;
    bool finished;
    bool keep_message;
    char message[256];
    /* Then, unless next is NONE: the job is Pending again with attempt
     * and preemptions as below, not before not_before_ms (0 = at once);
     * the event 'event' ("requeue", "retry") goes from 'from' (a state
     * name) to Pending, with next_message as the job's message. */
    enum sl_attempt_next next;
    int attempt;
    int preemptions;
    int64_t not_before_ms;
    const char *event;
    const char *from;
    char next_message[256];
};

/* The retry backoff after 'failures' failed attempts: the base doubled per
 * failure (at most 2^10 times), at most SL_RETRY_BACKOFF_MAX_MS. */
int64_t sl_retry_backoff_ms(int64_t base_ms, int failures);

/* How the attempt described by 'in' ends. Precedence: a cancel, then a
 * preemption, then maxRuntime (Timeout, with the tasks' exit code or 137,
 * never retried), then a lost task, then the exit code (failures count
 * attempts that were not preemptions). */
void sl_attempt_outcome(const struct sl_attempt_end *in, struct sl_attempt_outcome *out);

#endif
