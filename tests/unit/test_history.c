/*
 * test_history.c - the series of GET /v1/history (src/meter/history.c):
 * the windows of the named ranges and of from/to/step, usage intervals
 * spread over buckets (edges, an open interval, a partial last bucket,
 * fractions of GPUs, idle time, utilisation weighted by GPU time), the
 * nearest-rank percentiles of waits, and pending counts walked back from
 * now, against a forward count of random job lives with requeues.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/meter/history.h"
#include "../tap.h"

#define MIN 60000LL

/* Value i of series 'name'. */
static json_t *at(json_t *s, const char *name, int i)
{
    return json_array_get(json_object_get(s, name), (size_t)i);
}

static double num(json_t *s, const char *name, int i)
{
    json_t *v = at(s, name, i);
    return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static bool null_at(json_t *s, const char *name, int i)
{
    return json_is_null(at(s, name, i));
}

/* A history of n one-minute buckets from 0, seen at now_ms. */
static struct sl_history *minutes(int n, int64_t now_ms)
{
    struct sl_history_window w = {0, n * MIN, MIN, n};
    return sl_history_new(&w, now_ms);
}

static struct sl_usage_row usage(int64_t start, int64_t end, int ngpus, int milli)
{
    return (struct sl_usage_row){
        .start_ms = start, .end_ms = end, .ngpus = ngpus, .gpu_milli = milli};
}

static void windows(void)
{
    struct sl_history_window w;
    struct sl_error err;
    /* 2026-12-02T10:07:30Z */
    int64_t now = 1796206050000LL;

    ok(sl_history_range_find("hour") && sl_history_range_find("day") &&
           sl_history_range_find("week") && sl_history_range_find("month") &&
           !sl_history_range_find("year") && !sl_history_range_find("Hour"),
       "the ranges are hour, day, week and month, by exact name");
    is_int(sl_history_window("hour", false, 0, false, 0, 0, now, &w, &err), 0,
           "range=hour is a window");
    ok(w.step_ms == MIN && w.n == 60 && w.to_ms == now + 30000 &&
           w.from_ms == w.to_ms - 60 * MIN,
       "hour: 60 buckets of a minute, the last one holding now, ending on the minute");
    is_int(w.to_ms % MIN, 0, "hour: the buckets are aligned on minutes");
    sl_history_window("day", false, 0, false, 0, 0, now, &w, &err);
    ok(w.step_ms == 15 * MIN && w.n == 96 && w.to_ms == 1796206500000LL &&
           w.to_ms - w.from_ms == 24 * 60 * MIN,
       "day: 96 buckets of 15 minutes up to 10:15");
    sl_history_window("week", false, 0, false, 0, 0, now, &w, &err);
    ok(w.step_ms == 60 * MIN && w.n == 168 && w.to_ms == 1796209200000LL,
       "week: 168 hours up to 11:00");
    sl_history_window("month", false, 0, false, 0, 0, now, &w, &err);
    ok(w.step_ms == 360 * MIN && w.n == 120 && w.to_ms == 1796212800000LL &&
           w.to_ms - w.from_ms == 30 * 24 * 60 * MIN,
       "month: 120 buckets of 6 hours (30 days) up to 12:00 UTC");
    sl_history_window(NULL, false, 0, false, 0, 0, now, &w, &err);
    is_int(w.n, 96, "no range is a day");
    sl_history_window("hour", false, 0, false, 0, 0, 1796205600000LL, &w, &err);
    is_int(w.to_ms, 1796205600000LL, "now on a bucket's edge: the last bucket ends at now");
    sl_history_window("day", false, 0, false, 0, 5 * MIN, now, &w, &err);
    ok(w.step_ms == 5 * MIN && w.n == 288 && w.to_ms == 1796206200000LL,
       "range=day&step=5m: 288 buckets of 5 minutes");

    sl_history_window("hour", true, 1000, true, 1000 + 90 * MIN + 1, 10 * MIN, now, &w, &err);
    ok(w.from_ms == 1000 && w.n == 10 && w.to_ms == 1000 + 100 * MIN,
       "from/to: the buckets start at from; to is rounded up to whole steps");
    sl_history_window("hour", true, 1000, false, 0, 0, 1000 + 30 * MIN, &w, &err);
    ok(w.from_ms == 1000 && w.n == 30 && w.to_ms == 1000 + 30 * MIN,
       "from alone: up to now");
    sl_history_window("hour", false, 0, true, 100 * MIN, 0, now, &w, &err);
    ok(w.from_ms == 40 * MIN && w.n == 60, "to alone: the range's span before it");

    w.n = -1;
    is_int(sl_history_window("year", false, 0, false, 0, 0, now, &w, &err), -EINVAL,
           "an unknown range is refused");
    ok(strcmp(err.field, "range") == 0 && w.n == -1, "naming range, the window unchanged");
    ok(strstr(err.text, "hour, day, week or month") != NULL, "saying which there are");
    sl_history_window("hour", false, 0, false, 0, 999, now, &w, &err);
    is_str(err.field, "step", "a step under a second is refused, naming step");
    sl_history_window("month", false, 0, false, 0, 1000, now, &w, &err);
    is_str(err.field, "step", "more than 2000 buckets are refused, naming step");
    sl_history_window("hour", true, 0, true, 1000000000000LL, 1000, now, &w, &err);
    is_str(err.field, "step", "from/to with more than 2000 buckets too");
    sl_history_window("hour", false, 0, false, 0, 400LL * 86400000, now, &w, &err);
    is_str(err.field, "step", "a step over 366 days is refused");
    sl_history_window("hour", true, 5000, true, 5000, 0, now, &w, &err);
    is_str(err.field, "to", "to not after from is refused, naming to");
    sl_history_window("hour", true, SL_HISTORY_MAX_MS, false, 0, 0, now, &w, &err);
    is_str(err.field, "from", "from in the year 10000 is refused, naming from");
    sl_history_window("hour", false, 0, true, INT64_MAX, 0, now, &w, &err);
    is_str(err.field, "to", "to at the end of int64 is refused, naming to");

    w = (struct sl_history_window){0, 0, MIN, 0};
    errno = 0;
    ok(!sl_history_new(&w, 0) && errno == EINVAL, "a history of no bucket is EINVAL");
    w.n = SL_HISTORY_MAX_BUCKETS + 1;
    ok(!sl_history_new(&w, 0) && errno == EINVAL, "nor of more than the most");
}

static void intervals(void)
{
    struct sl_history *h = minutes(4, 4 * MIN);
    struct sl_usage_row r;
    json_t *s;

    r = usage(MIN, 2 * MIN, 2, 1000); /* exactly bucket 1 */
    sl_history_add_usage(h, &r);
    r = usage(2 * MIN + 30000, 3 * MIN + 30000, 1, 1000); /* half of 2, half of 3 */
    sl_history_add_usage(h, &r);
    r = usage(-10 * MIN, 15000, 4, 500); /* from before the window: 2 GPUs, 1/4 of 0 */
    sl_history_add_usage(h, &r);
    r = usage(3 * MIN, 3 * MIN, 8, 1000); /* empty */
    sl_history_add_usage(h, &r);
    r = usage(0, MIN, 0, 0); /* no GPU */
    sl_history_add_usage(h, &r);
    r = usage(4 * MIN, 9 * MIN, 1, 1000); /* after the window */
    sl_history_add_usage(h, &r);
    s = sl_history_series(h);
    ok(s != NULL, "the series are made");
    is_num(num(s, "gpus_allocated", 0), 0.5, "bucket 0: 2 GPUs for a quarter of it");
    is_num(num(s, "gpus_allocated", 1), 2, "bucket 1: an interval of exactly its span");
    is_num(num(s, "gpus_allocated", 2), 0.5,
           "bucket 2: an interval ending on its end spills nothing into it from bucket 1");
    is_num(num(s, "gpus_allocated", 3), 0.5, "bucket 3: the other half of the straddler");
    is_int(json_integer_value(at(s, "t", 2)), 2 * MIN, "t holds the buckets' starts");
    ok(null_at(s, "utilisation", 1), "utilisation is null where nothing was measured");
    is_num(num(s, "gpus_idle", 1), 0, "nothing idle");
    json_decref(s);
    sl_history_free(h);

    /* an open interval, seen at now = 2.25 minutes */
    h = minutes(4, 2 * MIN + 15000);
    r = usage(MIN + 30000, 0, 1, 1000);
    sl_history_add_usage(h, &r);
    r = usage(0, MIN, 2, 250);
    sl_history_add_usage(h, &r);
    s = sl_history_series(h);
    is_num(num(s, "gpus_allocated", 0), 0.5, "two quarter GPUs are half a GPU");
    is_num(num(s, "gpus_allocated", 1), 0.5, "an open interval from half-way through");
    is_num(num(s, "gpus_allocated", 2), 1,
           "and held up to now: the partial bucket's mean is over its part up to now");
    ok(null_at(s, "gpus_allocated", 3) && null_at(s, "pending", 3) &&
           null_at(s, "started", 3) && null_at(s, "pending_mean", 3) &&
           !null_at(s, "t", 3),
       "a bucket after now has nulls but its start");
    json_decref(s);
    sl_history_free(h);

    /* idle time and measured utilisation */
    h = minutes(4, 4 * MIN);
    r = usage(0, 4 * MIN, 2, 1000);
    r.idle_ms = 2 * MIN;
    sl_history_add_usage(h, &r);
    r = usage(0, MIN, 1, 1000);
    r.has_util = true;
    r.util = 0.2;
    sl_history_add_usage(h, &r);
    r = usage(0, MIN, 3, 1000);
    r.has_util = true;
    r.util = 0.6;
    sl_history_add_usage(h, &r);
    r = usage(MIN, 2 * MIN, 1, 1000);
    r.idle_ms = 10 * MIN; /* more than its length: all of it */
    sl_history_add_usage(h, &r);
    s = sl_history_series(h);
    is_num(num(s, "gpus_idle", 0), 1, "idle time is spread evenly: half of 2 GPUs");
    is_num(num(s, "gpus_idle", 3), 1, "in every bucket of the interval");
    is_num(num(s, "gpus_idle", 1), 2, "idle_ms over the length counts as all of it");
    is_num(num(s, "utilisation", 0), (0.2 + 3 * 0.6) / 4,
           "utilisation is weighted by GPU time, over the measured GPUs only");
    is_num(num(s, "gpus_allocated", 0), 6, "every interval counts as allocated");
    ok(null_at(s, "utilisation", 2), "null in a bucket with nothing measured");
    json_decref(s);
    sl_history_free(h);
}

static void percentiles(void)
{
    int64_t v[100];
    struct sl_history *h = minutes(3, 3 * MIN);
    json_t *s;

    for (int i = 0; i < 100; i++)
        v[i] = i + 1;
    ok(sl_history_percentile(v, 100, 50) == 50 && sl_history_percentile(v, 100, 90) == 90 &&
           sl_history_percentile(v, 100, 99) == 99 && sl_history_percentile(v, 100, 100) == 100,
       "nearest rank of 1..100: p50 50, p90 90, p99 99, p100 100");
    ok(sl_history_percentile(v, 10, 50) == 5 && sl_history_percentile(v, 10, 90) == 9 &&
           sl_history_percentile(v, 10, 99) == 10,
       "of 1..10: p50 5, p90 9, p99 10");
    ok(sl_history_percentile(v, 1, 1) == 1 && sl_history_percentile(v, 1, 99) == 1,
       "of one value: that value");

    /* starts in bucket 1 waiting 4 s, 1 s, 3 s, 2 s; one whose entry is
     * not known; one in bucket 2 */
    for (int i = 0; i < 4; i++) {
        int64_t wait = (int64_t[]){4000, 1000, 3000, 2000}[i];
        struct sl_history_event ev = {SL_HIST_START, MIN + 1000 * i + 5000, 0,
                                      MIN + 1000 * i + 5000 - wait};
        is_int(sl_history_add_event(h, &ev), 0, "start %d counted", i);
    }
    sl_history_add_event(h, &(struct sl_history_event){SL_HIST_START, MIN + 100, 0, 0});
    sl_history_add_event(h, &(struct sl_history_event){SL_HIST_START, 2 * MIN, 0, 1});
    sl_history_add_event(h, &(struct sl_history_event){SL_HIST_START, 3 * MIN, 0, 1});
    sl_history_add_event(h, &(struct sl_history_event){SL_HIST_PREEMPT, 2 * MIN + 1, 0, 0});
    sl_history_add_event(h, &(struct sl_history_event){SL_HIST_PREEMPT, -1, 0, 0});
    s = sl_history_series(h);
    ok(null_at(s, "wait_p50_s", 0) && null_at(s, "wait_p99_s", 0) &&
           json_integer_value(at(s, "started", 0)) == 0,
       "no start: null waits, 0 started");
    is_num(num(s, "wait_p50_s", 1), 2, "p50 of 1, 2, 3, 4 s is 2 s");
    is_num(num(s, "wait_p90_s", 1), 4, "p90 is 4 s");
    is_num(num(s, "wait_p99_s", 1), 4, "p99 is 4 s");
    is_int(json_integer_value(at(s, "started", 1)), 5,
           "a start whose entry is not known is counted as started");
    is_num(num(s, "wait_p50_s", 2), (2 * MIN - 1) / 1000.0,
           "a start on a bucket's start is in that bucket");
    is_int(json_integer_value(at(s, "started", 2)), 1, "one start there; none past the end");
    is_int(json_integer_value(at(s, "preemptions", 2)), 1,
           "preemptions counted in their bucket, none before the window");
    json_decref(s);
    sl_history_free(h);
}

/* A job's life for the forward count: it is Pending in [enter[k], leave[k]). */
struct life {
    int n;
    int64_t enter[4], leave[4];   /* leave 0 = still Pending */
};

static uint64_t rnd_state = 42;
static int64_t rnd(int64_t n)
{
    rnd_state = rnd_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)((rnd_state >> 33) % (uint64_t)n);
}

static void pending(void)
{
    /* a hand-made requeue: A submitted at 0:30, started at 1:10,
     * preempted at 1:40 and requeued at 1:50, started again at 2:20; B
     * submitted at 0:30, cancelled while pending at 2:00; C submitted
     * before the window and pending since */
    struct sl_history *h = minutes(4, 4 * MIN);
    static const struct sl_history_event evs[] = {
        {SL_HIST_ENTER, -MIN, 0, 0},        /* C: before the window */
        {SL_HIST_ENTER, 30000, 0, 0},       /* A */
        {SL_HIST_ENTER, 30000, 0, 0},       /* B */
        {SL_HIST_START, 70000, 0, 30000},   /* A */
        {SL_HIST_PREEMPT, 100000, 0, 0},    /* A */
        {SL_HIST_ENTER, 110000, 0, 0},      /* A requeued */
        {SL_HIST_LEAVE, 120000, 0, 0},      /* B cancelled, on a bucket's edge */
        {SL_HIST_START, 140000, 0, 110000}, /* A again */
        {SL_HIST_PENDING_NOW, 0, 1, 0},     /* C */
    };
    json_t *s;

    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
        sl_history_add_event(h, &evs[i]);
    s = sl_history_series(h);
    is_int(json_integer_value(at(s, "pending", 0)), 3, "0:00-1:00 ends with A, B and C pending");
    is_int(json_integer_value(at(s, "pending", 1)), 3,
           "1:00-2:00 ends with A requeued, B and C (B leaves at 2:00, in the next)");
    is_int(json_integer_value(at(s, "pending", 2)), 1, "2:00-3:00 ends with C alone");
    is_int(json_integer_value(at(s, "pending", 3)), 1, "and so it is now");
    is_num(num(s, "pending_mean", 0), 1 + 2 * 0.5, "bucket 0's mean: C, A and B half of it");
    is_num(num(s, "pending_mean", 1), 1 + 1 + (10.0 + 10.0) / 60,
           "bucket 1's mean: C and B, A for 10 s and 10 s");
    is_num(num(s, "pending_mean", 2), 1 + 20.0 / 60, "bucket 2's mean: C, A for 20 s");
    is_num(num(s, "wait_p50_s", 2), 30, "A's second wait counts from its requeue");
    is_num(num(s, "wait_p50_s", 1), 40, "its first from its submission");
    json_decref(s);
    sl_history_free(h);

    /* Random lives against a forward count: the history gets only the
     * transitions from the window's start on and the count of now. */
    enum { JOBS = 300, BUCKETS = 24 };
    const int64_t step = 10 * MIN, from = 50 * step, now = from + BUCKETS * step - step / 3;
    struct sl_history_window w = {from, from + BUCKETS * step, step, BUCKETS};
    struct life *lives = calloc(JOBS, sizeof(*lives));
    int64_t pending_now = 0;
    bool ends_ok = true, means_ok = true;

    h = sl_history_new(&w, now);
    for (int j = 0; j < JOBS && lives; j++) {
        struct life *l = &lives[j];
        int64_t t = rnd(now);
        for (l->n = 0; l->n < 4;) {
            int how = (int)rnd(4); /* 0 still pending, 1 cancelled, 2 ran, 3 ran, requeued */
            int64_t left = t + 1 + rnd(3 * step);
            l->enter[l->n] = t;
            sl_history_add_event(h, &(struct sl_history_event){SL_HIST_ENTER, t, 0, 0});
            if (how == 0 || left >= now) {
                l->leave[l->n++] = 0;
                pending_now++;
                break;
            }
            l->leave[l->n++] = left;
            sl_history_add_event(h, &(struct sl_history_event){
                                        how == 1 ? SL_HIST_LEAVE : SL_HIST_START, left, 0, t});
            if (how != 3)
                break;
            t = left + 1 + rnd(step); /* preempted and requeued */
            if (t >= now)
                break;
        }
    }
    sl_history_add_event(h, &(struct sl_history_event){SL_HIST_PENDING_NOW, 0, pending_now, 0});
    s = sl_history_series(h);
    for (int i = 0; i < BUCKETS && lives; i++) {
        int64_t bs = from + i * step, be = bs + step, cut = be < now ? be : now;
        int64_t count = 0;
        double area = 0;
        for (int j = 0; j < JOBS; j++)
            for (int k = 0; k < lives[j].n; k++) {
                int64_t a = lives[j].enter[k], b = lives[j].leave[k] ? lives[j].leave[k] : now;
                if (a < cut && cut <= b)
                    count++;
                if (a < cut && b > bs)
                    area += (double)((b < cut ? b : cut) - (a > bs ? a : bs));
            }
        if (json_integer_value(at(s, "pending", i)) != count) {
            ends_ok = false;
            diag("bucket %d: pending %lld, counted %lld", i,
                 (long long)json_integer_value(at(s, "pending", i)), (long long)count);
        }
        if (!tap_near(num(s, "pending_mean", i), area / (double)(cut - bs))) {
            means_ok = false;
            diag("bucket %d: pending_mean %.9g, counted %.9g", i, num(s, "pending_mean", i),
                 area / (double)(cut - bs));
        }
    }
    ok(lives && ends_ok,
       "300 random lives with requeues: the count at every bucket's end (and now) is the "
       "forward count");
    ok(lives && means_ok, "and every bucket's mean is the forward count's");
    json_decref(s);
    sl_history_free(h);
    free(lives);
}

int main(void)
{
    windows();
    intervals();
    percentiles();
    pending();
    return done_testing();
}
