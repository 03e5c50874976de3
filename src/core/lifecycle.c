/*
 * lifecycle.c - how an attempt ends (lifecycle.h): one decision per
 * cause, in order of precedence.
 */
#include "lifecycle.h"

#include "../util/util.h"

#include <stdio.h>
#include <string.h>

int64_t sl_retry_backoff_ms(int64_t base_ms, int failures)
{
    int shift = failures < 0 ? 0 : failures < 10 ? failures : 10;
    int64_t ms;

    if (base_ms <= 0)
        return 0;
    if (base_ms > SL_RETRY_BACKOFF_MAX_MS >> shift)
        return SL_RETRY_BACKOFF_MAX_MS;
    ms = base_ms << shift;
    return ms > SL_RETRY_BACKOFF_MAX_MS ? SL_RETRY_BACKOFF_MAX_MS : ms;
}

/* Back in line after a failed or lost attempt, when retries are left. */
static void retry(const struct sl_attempt_end *in, struct sl_attempt_outcome *out,
                  const char *from, int failures)
{
    int64_t backoff = sl_retry_backoff_ms(in->retry_backoff_ms, failures);

    out->next = SL_NEXT_RETRY;
    out->attempt = in->attempt + 1;
    out->not_before_ms = in->now_ms + backoff;
    out->event = "retry";
    out->from = from;
    const char *sep = in->note && in->note[0] ? " (" : "", *end = *sep ? ")" : "";

    if (in->lost)
        snprintf(out->next_message, sizeof(out->next_message),
                 "lost on attempt %d%s%s%s; retry %d of %d in %llds", in->attempt + 1, sep,
                 *sep ? in->note : "", end, failures + 1, in->retries,
                 (long long)(backoff / 1000));
    else
        snprintf(out->next_message, sizeof(out->next_message),
                 "attempt %d failed with exit code %d%s%s%s; retry %d of %d in %llds",
                 in->attempt + 1, in->exit_code, sep, *sep ? in->note : "", end, failures + 1,
                 in->retries, (long long)(backoff / 1000));
}

void sl_attempt_outcome(const struct sl_attempt_end *in, struct sl_attempt_outcome *out)
{
    int failures = in->attempt - in->preemptions;

    memset(out, 0, sizeof(*out));
    out->exit_code = -1;
    out->attempt = in->attempt;
    out->preemptions = in->preemptions;
    out->next = SL_NEXT_NONE;
    if (in->cancel_requested) {
        out->state = SL_JOB_CANCELLED;
        out->exit_code = in->exit_code;
        out->finished = true;
        snprintf(out->message, sizeof(out->message), "cancelled while running");
    } else if (in->preempting) {
        /* recorded Preempted with the message of its preemption, then back
         * in line with its submit time */
        out->state = SL_JOB_PREEMPTED;
        out->keep_message = true;
        out->next = SL_NEXT_REQUEUE;
        out->attempt = in->attempt + 1;
        out->preemptions = in->preemptions + 1;
        out->event = "requeue";
        out->from = "Preempted";
        if (in->requeued)
            snprintf(out->next_message, sizeof(out->next_message),
                     "requeued on request; attempt %d next", out->attempt);
        else
            snprintf(out->next_message, sizeof(out->next_message),
                     "preempted for job %lld and requeued (%d time%s)",
                     (long long)in->preempted_for, out->preemptions,
                     out->preemptions > 1 ? "s" : "");
    } else if (in->timed_out) {
        /* its own state, as Slurm's TIMEOUT, and not retried (Slurm does
         * not requeue a TIMEOUT either): the same limit would end it
         * again */
        out->state = SL_JOB_TIMEOUT;
        out->exit_code = in->exit_code ? in->exit_code : 137;
        out->finished = true;
        const char *sep = in->note && in->note[0] ? " (" : "", *end = *sep ? ")" : "";
        char limit[64] = "its time limit"; /* the executor's, without one */

        char d[48];

        if (in->max_runtime_ms > 0)
            snprintf(limit, sizeof(limit), "maxRuntime of %s",
                     sl_fmt_duration(in->max_runtime_ms, d, sizeof(d)));
        snprintf(out->message, sizeof(out->message), "%s %s; killed%s%s%s",
                 in->max_runtime_ms > 0 ? "exceeded" : "reached", limit, sep,
                 *sep ? in->note : "", end);
    } else if (in->lost) {
        out->state = SL_JOB_LOST;
        out->finished = true;
        if (in->note && in->note[0])
            snprintf(out->message, sizeof(out->message), "lost: %s", in->note);
        else
            snprintf(out->message, sizeof(out->message),
                     "task process vanished while sluiced was down");
        if (failures < in->retries)
            retry(in, out, "Lost", failures);
    } else if (in->exit_code != 0 && failures >= in->retries) {
        out->state = SL_JOB_FAILED;
        out->exit_code = in->exit_code;
        out->finished = true;
        snprintf(out->message, sizeof(out->message), "exited with code %d%s%s%s", in->exit_code,
                 in->gang_failed && in->tasks > 1 ? " (gang stopped)" : "",
                 in->note && in->note[0] ? ": " : "", in->note ? in->note : "");
    } else if (in->exit_code == 0) {
        out->state = SL_JOB_SUCCEEDED;
        out->exit_code = 0;
        out->finished = true;
        out->keep_message = true; /* the launch note, if any */
    } else {
        /* a failed attempt with retries left: nothing recorded, retried */
        out->state = SL_JOB_NSTATES;
        out->keep_message = true;
        retry(in, out, "Running", failures);
    }
}
