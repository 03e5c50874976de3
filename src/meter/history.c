/*
 * history.c - the series of GET /v1/history, bucket by bucket (history.h).
 *
 * Sums are kept per bucket as the rows come, in any order: GPU time in
 * milli-GPU x ms, the transitions' net change of the pending count and its
 * time-weighted part, and the waits of the attempts started, as (bucket,
 * wait) pairs sorted once at the end. Pending counts need every transition
 * from the window's start on, and the count of now: the value at a bucket's
 * end is the count of now less the net change of every transition at or
 * after that end.
 */
#include "history.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The named ranges. Columns: name, step, buckets (span = step x buckets;
 * a month is 30 days). */
static const struct sl_history_range ranges[] = {
    {"hour", 60000, 60},          /* 1 min */
    {"day", 900000, 96},          /* 15 min */
    {"week", 3600000, 168},       /* 1 h */
    {"month", 21600000, 120},     /* 6 h */
};

/* One kept wait: of an attempt started in bucket 'bucket'. */
struct wait {
    int bucket;
    int64_t wait_ms;
};

struct bucket {
    double gpu_ms;                /* milli-GPU x ms held */
    double idle_ms;               /* milli-GPU x ms held but idle */
    double util_num, util_den;    /* utilisation x milli-GPU x ms, and the
                                     milli-GPU x ms it was measured over */
    int64_t pending_delta;        /* net change of the pending count by the
                                     transitions in the bucket */
    double pending_weight;        /* sum of each change x the time from it
                                     to the bucket's end (or now) */
    int64_t started, preemptions;
};

struct sl_history {
    struct sl_history_window w;
    int64_t now_ms;
    struct bucket *b;             /* w.n */
    int64_t pending_now;
    int64_t pending_after;        /* net change at or after w.to_ms */
    struct wait *waits;           /* nwaits, room for cap (sl_grow) */
    int nwaits, cap;
};

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ceil(a / b) for a >= 0, b > 0 */
static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

const struct sl_history_range *sl_history_range_find(const char *name)
{
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
        if (strcmp(ranges[i].name, name) == 0)
            return &ranges[i];
    return NULL;
}

int sl_history_window(const char *range, bool has_from, int64_t from_ms, bool has_to,
                      int64_t to_ms, int64_t step_ms, int64_t now_ms,
                      struct sl_history_window *w, struct sl_error *err)
{
    const struct sl_history_range *r = sl_history_range_find(range ? range : "day");
    int64_t span, step, from, to, n;

    if (!r)
        return sl_errorf_field(err, -EINVAL, "range",
                               "must be hour, day, week or month, got '%.20s'", range);
    if (has_from && (from_ms < 0 || from_ms >= SL_HISTORY_MAX_MS))
        return sl_errorf_field(err, -EINVAL, "from", "must be from 1970 to 9999");
    if (has_to && (to_ms < 0 || to_ms >= SL_HISTORY_MAX_MS))
        return sl_errorf_field(err, -EINVAL, "to", "must be from 1970 to 9999");
    span = r->step_ms * r->n;
    step = step_ms ? step_ms : r->step_ms;
    if (step < SL_HISTORY_MIN_STEP_MS || step > SL_HISTORY_MAX_STEP_MS)
        return sl_errorf_field(err, -EINVAL, "step", "must be 1s to 366d");
    if (!has_from && !has_to) {
        n = ceil_div(span, step);
        to = ceil_div(max64(now_ms, 0), step) * step;
        from = to - n * step;
    } else {
        to = has_to ? to_ms : now_ms;
        from = has_from ? from_ms : to - span;
        if (to <= from)
            return sl_errorf_field(err, -EINVAL, "to", "must be after from");
        n = ceil_div(to - from, step);
        to = from + n * step;
    }
    if (n > SL_HISTORY_MAX_BUCKETS)
        return sl_errorf_field(err, -EINVAL, "step",
                               "makes %lld buckets of the window; at most %d",
                               (long long)n, SL_HISTORY_MAX_BUCKETS);
    w->from_ms = from;
    w->to_ms = to;
    w->step_ms = step;
    w->n = (int)n;
    return 0;
}

struct sl_history *sl_history_new(const struct sl_history_window *w, int64_t now_ms)
{
    struct sl_history *h;

    if (w->n < 1 || w->n > SL_HISTORY_MAX_BUCKETS || w->step_ms < 1) {
        errno = EINVAL;
        return NULL;
    }
    if (!(h = calloc(1, sizeof(*h))))
        return NULL;
    if (!(h->b = calloc((size_t)w->n, sizeof(*h->b)))) {
        free(h);
        errno = ENOMEM;
        return NULL;
    }
    h->w = *w;
    h->now_ms = now_ms;
    return h;
}

void sl_history_free(struct sl_history *h)
{
    int saved = errno;

    if (h) {
        free(h->b);
        free(h->waits);
        free(h);
    }
    errno = saved;
}

static int64_t bucket_start(const struct sl_history *h, int i)
{
    return h->w.from_ms + (int64_t)i * h->w.step_ms;
}

/* Where a bucket's figures end: its end, or now within it. */
static int64_t bucket_cut(const struct sl_history *h, int i)
{
    return min64(bucket_start(h, i) + h->w.step_ms, h->now_ms);
}

/* The bucket of time t, from_ms <= t < to_ms. */
static int bucket_of(const struct sl_history *h, int64_t t)
{
    return (int)((t - h->w.from_ms) / h->w.step_ms);
}

void sl_history_add_usage(struct sl_history *h, const struct sl_usage_row *r)
{
    double milli = r->ngpus > 0 ? (double)r->ngpus * r->gpu_milli : 0;
    int64_t end = r->end_ms ? r->end_ms : h->now_ms;
    int64_t len = end - r->start_ms;
    /* what happened after now is not counted (it cannot have, but for a
     * clock set back) */
    int64_t s = max64(r->start_ms, h->w.from_ms), e = min64(min64(end, h->now_ms), h->w.to_ms);
    double idle_frac;

    if (milli <= 0 || len <= 0 || e <= s)
        return;
    idle_frac = r->idle_ms > 0 ? (double)min64(r->idle_ms, len) / (double)len : 0;
    for (int i = bucket_of(h, s); i < h->w.n && bucket_start(h, i) < e; i++) {
        struct bucket *b = &h->b[i];
        int64_t bs = bucket_start(h, i);
        double part = milli * (double)(min64(e, bs + h->w.step_ms) - max64(s, bs));

        b->gpu_ms += part;
        b->idle_ms += part * idle_frac;
        if (r->has_util) {
            b->util_num += part * r->util;
            b->util_den += part;
        }
    }
}

/* A transition at t changing the pending count by d. */
static void pending_change(struct sl_history *h, int64_t t, int d)
{
    int i;

    if (t >= h->w.to_ms) {
        h->pending_after += d;
        return;
    }
    i = bucket_of(h, t);
    h->b[i].pending_delta += d;
    h->b[i].pending_weight += (double)d * (double)max64(0, bucket_cut(h, i) - t);
}

int sl_history_add_event(struct sl_history *h, const struct sl_history_event *ev)
{
    bool inside = ev->at_ms >= h->w.from_ms && ev->at_ms < h->w.to_ms;

    if (ev->kind == SL_HIST_PENDING_NOW) {
        h->pending_now = ev->count;
        return 0;
    }
    if (ev->at_ms < h->w.from_ms)
        return 0;
    switch (ev->kind) {
    case SL_HIST_ENTER:
        pending_change(h, ev->at_ms, +1);
        break;
    case SL_HIST_LEAVE:
        pending_change(h, ev->at_ms, -1);
        break;
    case SL_HIST_START:
        if (inside && ev->since_ms > 0) {
            if (sl_grow((void **)&h->waits, &h->cap, h->nwaits + 1, sizeof(*h->waits)) < 0)
                return -ENOMEM;
            h->waits[h->nwaits++] = (struct wait){
                bucket_of(h, ev->at_ms), max64(0, ev->at_ms - ev->since_ms)};
        }
        if (inside)
            h->b[bucket_of(h, ev->at_ms)].started++;
        pending_change(h, ev->at_ms, -1);
        break;
    case SL_HIST_PREEMPT:
        if (inside)
            h->b[bucket_of(h, ev->at_ms)].preemptions++;
        break;
    case SL_HIST_PENDING_NOW:
        break;
    }
    return 0;
}

int64_t sl_history_percentile(const int64_t *v, size_t n, int p)
{
    size_t k = ((size_t)p * n + 99) / 100;

    return v[k > 0 ? (k <= n ? k - 1 : n - 1) : 0];
}

static int wait_cmp(const void *a, const void *b)
{
    const struct wait *x = a, *y = b;

    if (x->bucket != y->bucket)
        return x->bucket < y->bucket ? -1 : 1;
    return (x->wait_ms > y->wait_ms) - (x->wait_ms < y->wait_ms);
}

/* Append v to arr, or null when the bucket has no such figure. */
static int push(json_t *arr, json_t *v)
{
    return json_array_append_new(arr, v ? v : json_null());
}

enum series {
    S_T, S_ALLOC, S_IDLE, S_UTIL, S_PENDING, S_PENDING_MEAN, S_P50, S_P90, S_P99,
    S_STARTED, S_PREEMPT, S_N
};

/* The series' names, in the order of enum series. */
static const char *const series_names[S_N] = {
    "t", "gpus_allocated", "gpus_idle", "utilisation", "pending", "pending_mean",
    "wait_p50_s", "wait_p90_s", "wait_p99_s", "started", "preemptions",
};

json_t *sl_history_series(struct sl_history *h)
{
    json_t *arr[S_N] = {0}, *out = NULL;
    int64_t *pending_end = NULL, *sorted = NULL;
    int wi = 0;
    int rc = 0;

    if (!(pending_end = malloc((size_t)h->w.n * sizeof(*pending_end))) ||
        (h->nwaits && !(sorted = malloc((size_t)h->nwaits * sizeof(*sorted)))))
        goto out;
    /* walked back from now: the count at a bucket's end is the one after
     * it less what changed from there on */
    pending_end[h->w.n - 1] = h->pending_now - h->pending_after;
    for (int i = h->w.n - 1; i > 0; i--)
        pending_end[i - 1] = pending_end[i] - h->b[i].pending_delta;
    if (h->nwaits)
        qsort(h->waits, (size_t)h->nwaits, sizeof(*h->waits), wait_cmp);
    for (int k = 0; k < S_N; k++)
        if (!(arr[k] = json_array()))
            goto out;
    for (int i = 0; i < h->w.n && rc == 0; i++) {
        const struct bucket *b = &h->b[i];
        int64_t bs = bucket_start(h, i);
        double len = (double)(bucket_cut(h, i) - bs);
        bool past = bs < h->now_ms;
        int64_t at_start = pending_end[i] - b->pending_delta;
        size_t nw = 0;

        while (wi < h->nwaits && h->waits[wi].bucket == i)
            sorted[nw++] = h->waits[wi++].wait_ms;
        rc |= push(arr[S_T], json_integer(bs));
        rc |= push(arr[S_ALLOC], past ? json_real(b->gpu_ms / 1000.0 / len) : NULL);
        rc |= push(arr[S_IDLE], past ? json_real(b->idle_ms / 1000.0 / len) : NULL);
        rc |= push(arr[S_UTIL],
                   past && b->util_den > 0 ? json_real(b->util_num / b->util_den) : NULL);
        rc |= push(arr[S_PENDING], past ? json_integer(pending_end[i]) : NULL);
        rc |= push(arr[S_PENDING_MEAN],
                   past ? json_real((double)at_start + b->pending_weight / len) : NULL);
        rc |= push(arr[S_P50],
                   nw ? json_real((double)sl_history_percentile(sorted, nw, 50) / 1000.0)
                      : NULL);
        rc |= push(arr[S_P90],
                   nw ? json_real((double)sl_history_percentile(sorted, nw, 90) / 1000.0)
                      : NULL);
        rc |= push(arr[S_P99],
                   nw ? json_real((double)sl_history_percentile(sorted, nw, 99) / 1000.0)
                      : NULL);
        rc |= push(arr[S_STARTED], past ? json_integer(b->started) : NULL);
        rc |= push(arr[S_PREEMPT], past ? json_integer(b->preemptions) : NULL);
    }
    if (rc != 0 || !(out = json_object()))
        goto out;
    for (int k = 0; k < S_N; k++) {
        if (json_object_set_new(out, series_names[k], arr[k]) < 0) {
            arr[k] = NULL; /* set_new took it, even on failure */
            json_decref(out);
            out = NULL;
            goto out;
        }
        arr[k] = NULL;
    }
out:
    for (int k = 0; k < S_N; k++)
        json_decref(arr[k]);
    free(pending_end);
    free(sorted);
    return out;
}
