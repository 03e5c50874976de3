/*
 * history.h - the time series of GET /v1/history: GPUs allocated and idle,
 * measured utilisation, jobs pending, waits, starts and preemptions per
 * time bucket, from the usage ledger and the jobs' stored transitions.
 *
 * A history is n buckets of step_ms from from_ms: bucket i is
 * [from + i x step, from + (i + 1) x step). Usage intervals are spread over
 * the buckets they overlap, in proportion to the overlap (an open interval
 * ends at now); their idle time and measured utilisation are spread evenly
 * over them, as the reports do (docs/metering.md). Pending counts are
 * walked back from the count of now through every transition since from:
 * each state change into Pending adds one, each out of it takes one away,
 * so a count at any past moment is exact as far as the transitions are.
 *
 * The part of a bucket after now has not happened: a bucket's means are
 * over its part up to now (the last, partial bucket included), and every
 * figure of a bucket that starts at or after now is null.
 *
 * No I/O, no clock (now comes in). Not thread-safe: one struct sl_history
 * per request.
 */
#ifndef SL_HISTORY_H
#define SL_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meter.h"

#define SL_HISTORY_MAX_BUCKETS 2000 /* per answer */
#define SL_HISTORY_MIN_STEP_MS 1000 /* one second */
#define SL_HISTORY_MAX_STEP_MS 31622400000 /* 366 days */
#define SL_HISTORY_MAX_MS 253402300800000 /* 10000-01-01: times are before it */

/* One named range: the last 'n' buckets of 'step_ms', ending with the
 * bucket that holds now. */
struct sl_history_range {
    const char *name;             /* "hour", "day", "week", "month" */
    int64_t step_ms;
    int n;
};

/* The range named 'name', or NULL when there is none of that name. */
const struct sl_history_range *sl_history_range_find(const char *name);

/* The buckets of an answer. */
struct sl_history_window {
    int64_t from_ms;              /* the first bucket's start */
    int64_t to_ms;                /* the last bucket's end: from + n x step */
    int64_t step_ms;
    int n;
};

/* The window of a request. 'range' (NULL = "day") gives the step and the
 * span; 'step_ms' (0 = the range's) replaces the step. Without 'from' and
 * 'to' (has_from, has_to false), the buckets are aligned on multiples of
 * the step since the epoch (UTC) and the last one holds now: to = now
 * rounded up to the step, from = to - span (the range's span, in as many
 * buckets of the step as it takes, rounded up). With either, to defaults
 * to now and from to to - span; the buckets start at from, and the last
 * one ends at or after to (to is rounded up to a whole number of steps
 * from from). Returns 0 with *w filled, or -EINVAL with err's field naming
 * the parameter at fault and its text saying why: "range" (no such
 * range), "from" or "to" (before 1970 or from the year 10000 on), "step"
 * (outside SL_HISTORY_MIN_STEP_MS..SL_HISTORY_MAX_STEP_MS, or more than
 * SL_HISTORY_MAX_BUCKETS buckets), "to" (not after from); *w is then
 * unchanged. */
int sl_history_window(const char *range, bool has_from, int64_t from_ms, bool has_to,
                      int64_t to_ms, int64_t step_ms, int64_t now_ms,
                      struct sl_history_window *w, struct sl_error *err);

/* What changed in the job-state record (the store's history scan). */
enum sl_history_kind {
    SL_HIST_PENDING_NOW,          /* 'count' jobs are Pending in the store
                                     now (in the snapshot the transitions
                                     come from) */
    SL_HIST_ENTER,                /* a job became Pending: submitted,
                                     requeued after a preemption, retried */
    SL_HIST_LEAVE,                /* a job left Pending without starting
                                     (cancelled, its dependency failed) */
    SL_HIST_START,                /* a job left Pending to run: an attempt
                                     started; 'since_ms' is when it became
                                     Pending (0 = not known) */
    SL_HIST_PREEMPT,              /* the scheduler preempted a running job
                                     (told its tasks to stop) */
};

struct sl_history_event {
    enum sl_history_kind kind;
    int64_t at_ms;                /* when; not used by SL_HIST_PENDING_NOW */
    int64_t count;                /* SL_HIST_PENDING_NOW: jobs Pending */
    int64_t since_ms;             /* SL_HIST_START: when the job became
                                     Pending before it (0 = not known) */
};

struct sl_history;

/* A history of w's buckets, as seen at 'now_ms'. Returns NULL with errno
 * EINVAL (w->n outside 1..SL_HISTORY_MAX_BUCKETS or w->step_ms < 1) or
 * ENOMEM. Free with sl_history_free. */
struct sl_history *sl_history_new(const struct sl_history_window *w, int64_t now_ms);
/* NULL-safe; keeps errno. */
void sl_history_free(struct sl_history *h);

/* Count usage interval 'r' (its start_ms, end_ms (0 = open: up to now),
 * ngpus, gpu_milli, has_util, util and idle_ms; nothing else is read):
 * GPUs held (ngpus x gpu_milli / 1000) x its time in each bucket; idle
 * GPU time as its idle_ms (at most its length) spread evenly over it;
 * utilisation weighted by GPU time, where it was measured. An interval
 * outside the window or of no GPU counts nothing. */
void sl_history_add_usage(struct sl_history *h, const struct sl_usage_row *r);

/* Count one event of the job-state record. Transitions before from_ms are
 * ignored (the walk starts at now); those at or after it are all needed,
 * including any after the window's end or now, with the SL_HIST_PENDING_NOW
 * of the same snapshot (a second one replaces the first). Returns 0, or
 * -ENOMEM when a start's wait could not be kept (h is then unchanged). */
int sl_history_add_event(struct sl_history *h, const struct sl_history_event *ev);

/* The series, as an object of arrays of n values, one per bucket:
 * t (start ms), gpus_allocated, gpus_idle (mean GPUs), utilisation (0..1,
 * null where nothing was measured), pending (at the bucket's end, or at
 * now for the bucket that holds it), pending_mean (its mean over the
 * bucket), wait_p50_s, wait_p90_s, wait_p99_s (seconds, nearest rank,
 * over the attempts started in the bucket; null when none started),
 * started, preemptions. New reference, or NULL (out of memory). Sorts the
 * kept waits: call it once. */
json_t *sl_history_series(struct sl_history *h);

/* The p-th percentile (1 <= p <= 100) by nearest rank of v[0..n), sorted
 * ascending: the smallest value with at least p % of v at or below it
 * (v[ceil(p x n / 100) - 1]). n must be > 0. */
int64_t sl_history_percentile(const int64_t *v, size_t n, int p);

#endif
