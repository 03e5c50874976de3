/*
 * cmd_why.c - `sluice why JOB`: why a job is pending, from
 * GET /v1/jobs/{id}/explain.
 *
 * Table mode is a short report for people: the summary, the place in the
 * queue, each blocker in words with its numbers, the estimated start and
 * what would let the job run. -o json prints the server's object; -o csv
 * one row per blocker. Every line that carries server text is sanitised
 * before it reaches the terminal.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define WHY_LINE 2048 /* bytes of one printed line; longer is cut */

static const char *const csv_cols[] = {
    "job", "kind", "resource", "used", "limit", "short", "detail",
};

/* Print one line: formatted, cut at WHY_LINE, sanitised, then "\n". */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char raw[WHY_LINE], clean[WHY_LINE];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    printf("%s\n", sl_cli_sanitize(raw, clean, sizeof(clean)));
}

/* "alice, queue research, batch": the parts the answer has. */
static void who(const json_t *ex, char *buf, size_t size)
{
    const char *parts[3] = {sl_cli_jstr(ex, "user"), sl_cli_jstr(ex, "queue"),
                            sl_cli_jstr(ex, "priority_class")};
    size_t o = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < SL_ARRAY_LEN(parts); i++) {
        int n;
        if (!parts[i] || o + 1 >= size)
            continue;
        n = snprintf(buf + o, size - o, "%s%s%s", o ? ", " : "",
                     i == 1 ? "queue " : "", parts[i]);
        if (n < 0)
            break;
        o = (size_t)n >= size - o ? size - 1 : o + (size_t)n;
    }
}

/* "Estimated start: ..." for a pending job. */
static void say_eta(const json_t *ex, int64_t now_ms)
{
    const char *eta = sl_cli_jstr(ex, "eta");
    const char *basis = sl_cli_jstr(ex, "eta_basis");
    const json_t *nodes = json_object_get(ex, "reserved_nodes"), *n;
    char in[48] = "", on[512] = "";
    size_t i, o = 0;
    int64_t at;

    if (!eta) {
        say("Estimated start: unknown (no reservation)");
        return;
    }
    if (sl_cli_parse_time(eta, &at) == 0 && at > now_ms) {
        char d[32];
        snprintf(in, sizeof(in), "in %s; ",
                 sl_cli_fmt_duration(at - now_ms, d, sizeof(d)));
    }
    json_array_foreach (nodes, i, n) {
        int k;
        if (!json_is_string(n) || o + 1 >= sizeof(on))
            continue;
        k = snprintf(on + o, sizeof(on) - o, "%s%s", o ? ", " : " on ",
                     json_string_value(n));
        if (k < 0)
            break;
        o = (size_t)k >= sizeof(on) - o ? sizeof(on) - 1 : o + (size_t)k;
    }
    if (!basis || strcmp(basis, "reservation") == 0)
        say("Estimated start: %s (%sbackfill reservation%s)", eta, in, on);
    else if (strcmp(basis, "max_runtime") == 0)
        say("Estimated start: %s (%sthe earliest its request fits as running jobs end by "
            "their maxRuntime; jobs ahead of it may start first)",
            eta, in);
    else
        say("Estimated start: %s (%sestimated from %s%s)", eta, in, basis, on);
}

static void print_pending(const json_t *ex, int64_t id, int64_t now_ms)
{
    const json_t *blockers = json_object_get(ex, "blockers"), *b;
    const json_t *ifs = json_object_get(ex, "would_run_if"), *w;
    const json_t *req = json_object_get(ex, "request");
    const char *summary = sl_cli_jstr(ex, "summary");
    const char *queue = sl_cli_jstr(ex, "queue");
    const char *per_task = sl_cli_jstr(req, "per_task");
    char line[WHY_LINE], people[384];
    int64_t pos, pending, tasks;
    size_t i;

    who(ex, people, sizeof(people));
    say("job %lld%s%s%s is Pending%s%s", (long long)id, people[0] ? " (" : "",
        people, people[0] ? ")" : "", summary && *summary ? ": " : "",
        summary ? summary : "");
    if (per_task && sl_cli_jint(req, "tasks", &tasks))
        say("Request: %lld task%s; %s", (long long)tasks, tasks == 1 ? "" : "s",
            per_task);
    if (sl_cli_jint(ex, "position", &pos) &&
        sl_cli_jint(ex, "queue_pending", &pending)) {
        const json_t *qs = json_object_get(ex, "queue_share");
        const json_t *us = json_object_get(ex, "user_share");
        char shares[96] = "";
        if (json_is_number(qs) && json_is_number(us))
            snprintf(shares, sizeof(shares),
                     " (fair share: queue %.2f, user %.2f; lower goes first)",
                     json_number_value(qs), json_number_value(us));
        say("Position: %lld of %lld in queue %s%s", (long long)pos,
            (long long)pending, queue ? queue : "?", shares);
    }
    if (json_array_size(blockers) == 0) {
        say("Blocked by: nothing found (it waits for the next scheduling "
            "pass)");
    } else {
        say("Blocked by:");
        json_array_foreach (blockers, i, b)
            say("  %s", sl_cli_why_blocker(b, true, line, sizeof(line)));
    }
    say_eta(ex, now_ms);
    if (json_array_size(ifs) > 0) {
        say("Would run if:");
        json_array_foreach (ifs, i, w)
            if (json_is_string(w))
                say("  %s", json_string_value(w));
    }
}

/* A job that is not pending: one line; a running one idle-but-allocated
 * (its job object, 'job', says so), a second. */
static void print_other(const json_t *ex, const json_t *job, int64_t id, const char *state,
                        int64_t now_ms)
{
    const char *started = sl_cli_jstr(ex, "started_at");
    const char *summary = sl_cli_jstr(ex, "summary");
    char idle[256];
    int64_t at, for_job;

    if (strcmp(state, "Running") == 0) {
        if (started && sl_cli_parse_time(started, &at) == 0) {
            char dur[24];
            say("job %lld is Running (since %s, %s ago): nothing blocks it",
                (long long)id, started,
                sl_cli_fmt_duration(now_ms - at, dur, sizeof(dur)));
        } else {
            say("job %lld is Running: nothing blocks it", (long long)id);
        }
        if (sl_cli_job_idle_text(job, now_ms, idle, sizeof(idle)))
            say("%s", idle);
        return;
    }
    if (strcmp(state, "Terminating") == 0) {
        if (sl_cli_jint(ex, "preempted_for", &for_job))
            say("job %lld is Terminating (preempted for job %lld): not "
                "pending, it is being stopped",
                (long long)id, (long long)for_job);
        else
            say("job %lld is Terminating: not pending, it is being stopped",
                (long long)id);
        return;
    }
    if (sl_cli_state_finished(state)) {
        say("job %lld is not pending: it has finished (%s)", (long long)id,
            state);
        return;
    }
    say("job %lld is %s: %s", (long long)id, state,
        summary && *summary ? summary : "not pending, nothing blocks it");
}

/* An amount of a blocker for CSV: GPUs and CPUs as decimals ("0.5"),
 * memory in bytes; NULL when the blocker has none. */
static const char *csv_amount(const json_t *b, const char *key, char *buf,
                              size_t size)
{
    const char *res = sl_cli_jstr(b, "resource");
    int64_t v;

    if (res && strcmp(res, "memory") == 0) {
        if (!sl_cli_jbytes(b, key, &v))
            return NULL;
        snprintf(buf, size, "%lld", (long long)v);
        return buf;
    }
    if (!sl_cli_jmilli(b, key, &v))
        return NULL;
    return sl_cli_fmt_milli(v, buf, size);
}

static int print_csv(const json_t *ex, int64_t id)
{
    const json_t *blockers = json_object_get(ex, "blockers"), *b;
    struct sl_cli_table *t;
    char job[24];
    size_t i;
    int rc = 0;

    if (!(t = sl_cli_table_create(SL_ARRAY_LEN(csv_cols), csv_cols)))
        return -ENOMEM;
    snprintf(job, sizeof(job), "%lld", (long long)id);
    json_array_foreach (blockers, i, b) {
        char used[32], limit[32], shortby[32], detail[WHY_LINE];
        const char *row[] = {
            job,
            sl_cli_jstr(b, "kind"),
            sl_cli_jstr(b, "resource"),
            csv_amount(b, "used", used, sizeof(used)),
            csv_amount(b, "limit", limit, sizeof(limit)),
            csv_amount(b, "short", shortby, sizeof(shortby)),
            sl_cli_why_blocker(b, false, detail, sizeof(detail)),
        };
        if ((rc = sl_cli_table_add(t, row)) < 0)
            break;
    }
    if (rc == 0)
        sl_cli_table_print(t, stdout, SL_CLI_OUT_CSV, 0);
    sl_cli_table_destroy(t);
    return rc;
}

int sl_cli_cmd_why(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    const char *pos[1], *state;
    char path[64], what[40];
    json_t *ex = NULL, *job = NULL;
    int64_t id, shown;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 1, &n)) != SL_CLI_OK)
        return code;
    if (n == 0) {
        sl_cli_errorf("why: JOB is required (sluice why JOB)");
        return SL_CLI_USAGE;
    }
    if (sl_cli_job_id(pos[0], &id, &err) < 0)
        return sl_cli_usage_error(&err);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/explain", (long long)id);
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, what,
                                 &ex)) != SL_CLI_OK)
        return code;
    if (!json_is_object(ex) || !(state = sl_cli_jstr(ex, "state")) ||
        (json_object_get(ex, "blockers") &&
         !json_is_array(json_object_get(ex, "blockers")))) {
        sl_cli_errorf("%s: the server's explanation is malformed (it needs a "
                      "\"state\" and a \"blockers\" list)",
                      what);
        code = SL_CLI_FAILED;
        goto out;
    }
    /* The server names the job; trust our own id when it does not. */
    if (!sl_cli_jint(ex, "job", &shown))
        shown = id;
    switch (ctx->output) {
    case SL_CLI_OUT_JSON:
        code = sl_cli_print_json(ex) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        break;
    case SL_CLI_OUT_CSV:
        if (print_csv(ex, shown) < 0) {
            sl_cli_errorf("out of memory");
            code = SL_CLI_FAILED;
        }
        break;
    case SL_CLI_OUT_TABLE:
        if (strcmp(state, "Pending") == 0) {
            print_pending(ex, shown, sl_now_ms());
            break;
        }
        /* whether a running job sits idle is the job object's */
        snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
        if (strcmp(state, "Running") == 0 &&
            (code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, what, &job)) !=
                SL_CLI_OK)
            break;
        print_other(ex, job, shown, state, sl_now_ms());
        break;
    }
out:
    json_decref(ex);
    json_decref(job);
    return code;
}
