/*
 * test_lifecycle.c - how an attempt ends (src/core/lifecycle.h): every
 * transition from Running, the precedence of causes, retries and their
 * doubling backoff with its cap, preemption requeues, Lost with and
 * without retries left.
 */
#include <string.h>

#include "../../src/core/lifecycle.h"
#include "../tap.h"

#define NOW 1700000000000LL

static struct sl_attempt_end base(void)
{
    struct sl_attempt_end in;

    memset(&in, 0, sizeof(in));
    in.retry_backoff_ms = 5000;
    in.now_ms = NOW;
    return in;
}

static void succeeded(void)
{
    struct sl_attempt_end in = base();
    struct sl_attempt_outcome out;

    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_SUCCEEDED && out.exit_code == 0 && out.finished &&
           out.next == SL_NEXT_NONE,
       "every task exited 0: Succeeded, code 0, finished, nothing next");
    ok(out.keep_message, "a success keeps the job's message (the launch note)");
}

static void failed(void)
{
    struct sl_attempt_end in = base();
    struct sl_attempt_outcome out;

    in.exit_code = 3;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_FAILED && out.exit_code == 3 && out.finished &&
           out.next == SL_NEXT_NONE,
       "a task exited 3 without retries: Failed with code 3");
    is_str(out.message, "exited with code 3", "saying its code");
    in.gang_failed = true;
    sl_attempt_outcome(&in, &out);
    is_str(out.message, "exited with code 3", "a job of one task is no gang to stop");
    in.tasks = 2;
    sl_attempt_outcome(&in, &out);
    is_str(out.message, "exited with code 3 (gang stopped)", "a gang says it was stopped");
}

static void retried(void)
{
    struct sl_attempt_end in = base();
    struct sl_attempt_outcome out;

    in.exit_code = 1;
    in.retries = 2;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_NSTATES && out.next == SL_NEXT_RETRY,
       "a failure with retries left records no final state and is retried");
    ok(out.attempt == 1 && out.preemptions == 0 && out.not_before_ms == NOW + 5000,
       "as attempt 1, not before the base backoff of 5 s");
    ok(strcmp(out.event, "retry") == 0 && strcmp(out.from, "Running") == 0,
       "with a retry event from Running");
    is_str(out.next_message, "attempt 1 failed with exit code 1; retry 1 of 2 in 5s",
           "saying which attempt failed and which retry comes when");
    in.attempt = 1;
    sl_attempt_outcome(&in, &out);
    ok(out.next == SL_NEXT_RETRY && out.attempt == 2 && out.not_before_ms == NOW + 10000,
       "the second failure waits twice as long (10 s)");
    in.attempt = 2;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_FAILED && out.next == SL_NEXT_NONE,
       "the third failure of a job with 2 retries is final");
    in.attempt = 3;
    in.preemptions = 2;
    sl_attempt_outcome(&in, &out);
    ok(out.next == SL_NEXT_RETRY && out.not_before_ms == NOW + 10000,
       "preemptions do not count as failures (attempt 3 after 2 preemptions: failure 1)");
}

static void backoff(void)
{
    is_int(sl_retry_backoff_ms(5000, 0), 5000, "backoff after no failure: the base");
    is_int(sl_retry_backoff_ms(5000, 3), 40000, "after 3 failures: 8 times the base");
    is_int(sl_retry_backoff_ms(5000, 7), 600000, "capped at 10 minutes");
    is_int(sl_retry_backoff_ms(1, 30), 1024, "the doubling stops after 10");
    is_int(sl_retry_backoff_ms(INT64_MAX / 2, 10), 600000, "a huge base cannot overflow");
    is_int(sl_retry_backoff_ms(0, 5), 0, "a zero base is no backoff");
    is_int(sl_retry_backoff_ms(5000, -1), 5000, "a negative count is none");
}

static void cancelled(void)
{
    struct sl_attempt_end in = base();
    struct sl_attempt_outcome out;

    in.cancel_requested = true;
    in.exit_code = 143;
    in.preempting = in.timed_out = in.lost = true; /* a cancel wins over all */
    in.retries = 5;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_CANCELLED && out.exit_code == 143 && out.finished &&
           out.next == SL_NEXT_NONE,
       "an acknowledged cancel ends Cancelled, whatever else happened, retries or not");
    is_str(out.message, "cancelled while running", "saying so");
    in.exit_code = 0;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_CANCELLED && out.exit_code == 0,
       "a cancelled job whose tasks exited 0 is still Cancelled, never Succeeded");
}

static void preempted(void)
{
    struct sl_attempt_end in = base();
    struct sl_attempt_outcome out;

    in.preempting = true;
    in.preempted_for = 42;
    in.exit_code = 138;
    in.timed_out = in.lost = true; /* a preemption wins over both */
    in.attempt = 1;
    in.preemptions = 1;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_PREEMPTED && out.exit_code == -1 && !out.finished &&
           out.keep_message,
       "a preempted attempt is recorded Preempted, no code, not finished, its message kept");
    ok(out.next == SL_NEXT_REQUEUE && out.not_before_ms == 0 && out.attempt == 2 &&
           out.preemptions == 2,
       "then requeued at once, as attempt 2, with 2 preemptions");
    ok(strcmp(out.event, "requeue") == 0 && strcmp(out.from, "Preempted") == 0,
       "with a requeue event from Preempted");
    is_str(out.next_message, "preempted for job 42 and requeued (2 times)",
           "saying for whom and how often");
    in.preemptions = 0;
    sl_attempt_outcome(&in, &out);
    is_str(out.next_message, "preempted for job 42 and requeued (1 time)", "once: singular");
    /* sluice requeue: the same path, not a failure either */
    in.requeued = true;
    in.preempted_for = 0;
    in.retries = 0;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_PREEMPTED && out.next == SL_NEXT_REQUEUE && out.attempt == 2 &&
           out.preemptions == 1 && out.not_before_ms == 0,
       "a requeued attempt goes back in line at once as the next attempt, retries or not");
    is_str(out.next_message, "requeued on request; attempt 2 next", "saying it was asked for");
}

static void timed_out(void)
{
    struct sl_attempt_end in = base();
    struct sl_attempt_outcome out;

    in.timed_out = true;
    in.max_runtime_ms = 90000;
    in.retries = 3;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_TIMEOUT && out.exit_code == 137 && out.finished &&
           out.next == SL_NEXT_NONE,
       "maxRuntime reached: Timeout with 137 when the tasks exited 0, and not retried "
       "though retries are left");
    ok(sl_job_state_final(SL_JOB_TIMEOUT), "Timeout is final");
    is_str(sl_job_state_name(SL_JOB_TIMEOUT), "Timeout", "named Timeout");
    ok(sl_job_state_parse("timeout") == SL_JOB_TIMEOUT, "and parsed in any case");
    ok(SL_JOB_LOST == 6 && SL_JOB_TIMEOUT == 7,
       "stored numbers: the states before it keep theirs, Timeout is 7");
    is_str(out.message, "exceeded maxRuntime of 90s; killed", "saying its limit");
    in.exit_code = 143;
    in.lost = true; /* a timeout wins over a lost task */
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_TIMEOUT && out.exit_code == 143,
       "or with the tasks' own code (SIGTERM's 143 kept)");
    in.note = "Slurm ended it at its time limit";
    in.lost = false;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_TIMEOUT, "the executor's own limit (Slurm's TIMEOUT) is a Timeout too");
    is_str(out.message, "exceeded maxRuntime of 90s; killed (Slurm ended it at its time limit)",
           "saying which limit ended it");
    in.max_runtime_ms = 0;
    sl_attempt_outcome(&in, &out);
    is_str(out.message, "reached its time limit; killed (Slurm ended it at its time limit)",
           "without a maxRuntime, the executor's limit alone");
}

static void lost(void)
{
    struct sl_attempt_end in = base();
    struct sl_attempt_outcome out;

    in.lost = true;
    in.exit_code = 255;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_LOST && out.exit_code == -1 && out.finished &&
           out.next == SL_NEXT_NONE,
       "a lost task without retries: Lost, no code, finished");
    is_str(out.message, "task process vanished while sluiced was down", "saying so");
    in.retries = 1;
    sl_attempt_outcome(&in, &out);
    ok(out.state == SL_JOB_LOST && out.next == SL_NEXT_RETRY && out.attempt == 1 &&
           out.not_before_ms == NOW + 5000 && strcmp(out.from, "Lost") == 0,
       "with a retry left: recorded Lost, then retried from Lost after the backoff");
    is_str(out.next_message, "lost on attempt 1; retry 1 of 1 in 5s", "saying so");
    in.note = "Slurm job 7 ended NODE_FAIL";
    sl_attempt_outcome(&in, &out);
    is_str(out.message, "lost: Slurm job 7 ended NODE_FAIL", "the executor's note says how");
    is_str(out.next_message, "lost on attempt 1 (Slurm job 7 ended NODE_FAIL); retry 1 of 1 in 5s",
           "and the retry says it too");
    in = base();
    in.exit_code = 127;
    in.note = "Slurm refused the job: sbatch: error: Invalid partition";
    sl_attempt_outcome(&in, &out);
    is_str(out.message, "exited with code 127: Slurm refused the job: sbatch: error: Invalid partition",
           "a failure says the executor's note after its code");
}

int main(void)
{
    succeeded();
    failed();
    retried();
    backoff();
    cancelled();
    preempted();
    timed_out();
    lost();
    return done_testing();
}
