/*
 * cmd_logs.c - `sluice logs JOB [-f] [--task N] [--attempt N]`: copy a
 * task's log to standard output, byte for byte.
 *
 * A job that has had more than one attempt (requeued, preempted, retried)
 * gets a line before each attempt's output, "==> attempt 1 (started
 * 2026-12-06 10:02:03 UTC, after preemption) <==". Where each attempt
 * begins in the log, when it started and what it came after are GET
 * /v1/jobs/ID/attempts, read again whenever an answer says more attempts
 * have started (X-Sluice-Log-Attempts) than it lists; an answer that runs
 * past the start of the next attempt is cut there, its header written,
 * and the rest read again. A job of one attempt gets no header (its output
 * is the log, byte for byte); following it, the header of a second
 * attempt comes as that attempt starts. --attempt N prints that attempt's
 * output alone (?attempt=N), without a header; with -f it stops once a
 * later attempt has begun.
 *
 * The log is read in chunks from an offset the server advances
 * (X-Sluice-Log-Offset). Without -f we stop at the first empty chunk. With
 * -f we poll every SL_CLI_LOG_POLL_MS until the job is finished
 * (X-Sluice-Job-State) and two chunks in a row come back empty: the second
 * one is read after the server said "finished", so it sees the last bytes
 * even if the server looked at the state before the log.
 *
 * A job with no output that is pending gets a line on stderr saying it
 * has not started yet. With -f, a server that goes away (a restart) is
 * asked again with a growing pause (SL_CLI_LOG_POLL_MS doubling up to
 * SL_CLI_LOG_BACKOFF_MAX_MS) for up to SL_CLI_LOG_RECONNECT_MS, and the
 * log resumes from the offset reached: nothing is printed twice.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include "../core/spec.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SL_CLI_LOG_POLL_MS 250
#define SL_CLI_LOG_BACKOFF_MAX_MS 5000
#define SL_CLI_LOG_RECONNECT_MS 120000

enum { O_FOLLOW = 1, O_TASK, O_ATTEMPT };

/* clang-format off */
static const struct sl_cli_opt logs_opts[] = {
    /* long name, short, takes a value, id */
    {"follow", 'f', false, O_FOLLOW},
    {"task", '\0', true, O_TASK},
    {"attempt", '\0', true, O_ATTEMPT},
    {NULL, '\0', false, 0},
};
/* clang-format on */

static int write_all(const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(STDOUT_FILENO, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* -f and the server is gone: wait and say so once. 0 to try again, or
 * SL_CLI_FAILED once SL_CLI_LOG_RECONNECT_MS have passed. */
static int reconnect_wait(const char *what, const char *why, int64_t offset,
                          int64_t *lost_since, long *backoff)
{
    int64_t now = sl_mono_ms();

    if (!*lost_since) {
        *lost_since = now;
        *backoff = SL_CLI_LOG_POLL_MS;
        sl_cli_errorf("%s: lost the server (%s); reconnecting, from byte %lld", what, why,
                      (long long)offset);
    } else if (now - *lost_since > SL_CLI_LOG_RECONNECT_MS) {
        sl_cli_errorf("%s: the server has not answered for %d s (%s)", what,
                      SL_CLI_LOG_RECONNECT_MS / 1000, why);
        return SL_CLI_FAILED;
    }
    sleep_ms(*backoff);
    *backoff = *backoff * 2 > SL_CLI_LOG_BACKOFF_MAX_MS ? SL_CLI_LOG_BACKOFF_MAX_MS
                                                        : *backoff * 2;
    return 0;
}

/* The header of attempt 'n', 'a' (an object of GET /v1/jobs/ID/attempts). */
static int attempt_header(const json_t *a, int n)
{
    const char *at = sl_cli_jstr(a, "started_at"), *after = sl_cli_jstr(a, "after");
    char line[200], when[40] = "", after_buf[64];

    /* RFC 3339 UTC as people read it: 2026-12-06 10:02:03 UTC */
    if (at && strlen(at) >= 19)
        snprintf(when, sizeof(when), "started %.10s %.8s UTC", at, at + 11);
    snprintf(line, sizeof(line), "==> attempt %d%s%s%s%s%s <==\n", n, when[0] ? " (" : "", when,
             after ? ", after " : "",
             after ? sl_cli_sanitize(after, after_buf, sizeof(after_buf)) : "",
             when[0] ? ")" : "");
    return write_all(line, strlen(line));
}

/* The attempts of job 'id' a log is read with: GET /v1/jobs/ID/attempts,
 * and the next one whose header is due. */
struct attempts {
    json_t *list;                 /* the "attempts" array; NULL until read */
    size_t next;                  /* index in list of the next header */
};

/* Where attempt i of 'a' begins in task 'task''s log. */
static int64_t start_of(const struct attempts *a, size_t i, int64_t task)
{
    json_t *o = json_array_get(json_object_get(json_array_get(a->list, i), "log_offsets"),
                               (size_t)task);
    return json_is_integer(o) ? json_integer_value(o) : 0;
}

/* Read the list again when 'started' attempts have begun and it holds
 * fewer (an answer without the header: never). Quiet: without the list the
 * log is printed without headers. */
static void attempts_refresh(struct sl_cli_ctx *ctx, int64_t id, struct attempts *a,
                             int started)
{
    char path[64];
    json_t *ans;

    if (started < 0 || (size_t)started <= json_array_size(a->list))
        return;
    snprintf(path, sizeof(path), "/v1/jobs/%lld/attempts", (long long)id);
    if ((ans = sl_cli_get_quiet(ctx, path)) && json_is_array(json_object_get(ans, "attempts"))) {
        json_decref(a->list);
        a->list = json_incref(json_object_get(ans, "attempts"));
    }
    json_decref(ans);
}

/* Before the bytes at 'offset': the headers of the attempts that begin at
 * or before it, when the job has more than one (with one, its header is
 * passed over). Returns 0 or a negated errno of standard output. */
static int headers_upto(struct attempts *a, int64_t task, int64_t offset)
{
    size_t n = json_array_size(a->list);
    int64_t num;
    int rc = 0;

    for (; a->next < n && start_of(a, a->next, task) <= offset && rc == 0; a->next++)
        if (n > 1 && sl_cli_jint(json_array_get(a->list, a->next), "attempt", &num))
            rc = attempt_header(json_array_get(a->list, a->next), (int)num);
    return rc;
}

/* How many of the 'len' bytes read at 'offset' are the attempt's that
 * 'offset' is in: up to where the next one begins. */
static size_t upto_next(const struct attempts *a, int64_t task, int64_t offset, size_t len)
{
    for (size_t i = a->next; i < json_array_size(a->list); i++) {
        int64_t s = start_of(a, i, task);
        if (s > offset && s - offset < (int64_t)len)
            return (size_t)(s - offset);
    }
    return len;
}

int sl_cli_cmd_logs(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *job = NULL;
    char what[40];
    int64_t id = 0, task = 0, offset = 0, lost_since = 0, attempt = -1;
    long backoff = SL_CLI_LOG_POLL_MS;
    bool follow = false, said_pending = false;
    struct attempts at = {NULL, 0};
    int empty_finished = 0;
    int opt, code, rc;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((opt = sl_cli_next(&p, logs_opts, ctx, &v, &err)) !=
           SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, opt, &err)))
            return code;
        if (opt == O_FOLLOW) {
            follow = true;
        } else if (opt == O_TASK) {
            if (sl_cli_int_arg("--task", v, 0, SL_MAX_TASKS - 1, &task, &err) <
                0)
                return sl_cli_usage_error(&err);
        } else if (opt == O_ATTEMPT) {
            if (sl_cli_int_arg("--attempt", v, 0, INT32_MAX, &attempt, &err) < 0)
                return sl_cli_usage_error(&err);
        } else if (job) {
            sl_cli_errorf("logs: unexpected argument '%.64s' (one JOB)", v);
            return SL_CLI_USAGE;
        } else {
            job = v;
        }
    }
    if (!job) {
        sl_cli_errorf(
            "logs: JOB is required (sluice logs JOB [-f] [--task N] [--attempt N])");
        return SL_CLI_USAGE;
    }
    if (sl_cli_job_id(job, &id, &err) < 0)
        return sl_cli_usage_error(&err);
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    fflush(stdout);

    for (;;) {
        struct sl_response r;
        char path[128], why[256];
        bool finished, transient;
        size_t len;

        int n = snprintf(path, sizeof(path), "/v1/jobs/%lld/logs?task=%lld&offset=%lld",
                         (long long)id, (long long)task, (long long)offset);
        if (attempt >= 0)
            snprintf(path + n, sizeof(path) - (size_t)n, "&attempt=%lld", (long long)attempt);
        if ((code = sl_cli_get_transient(ctx, path, what, &r, &transient, why,
                                         sizeof(why))) != SL_CLI_OK) {
            if (!transient)
                goto out;
            if (!follow) {
                sl_cli_errorf("%s: %s", what, why);
                goto out;
            }
            if ((code = reconnect_wait(what, why, offset, &lost_since, &backoff)))
                goto out;
            continue;
        }
        if (lost_since) {
            sl_cli_errorf("%s: reconnected; following from byte %lld", what,
                          (long long)offset);
            lost_since = 0;
        }
        if (!r.len && offset == 0 && !said_pending && r.log_attempts <= 0 &&
            strcmp(r.job_state, "Pending") == 0) {
            sl_cli_errorf("%s has not started yet (Pending; sluice why %lld says why)%s", what,
                          (long long)id, follow ? ": waiting for its output" : "");
            said_pending = true;
        }
        len = r.len;
        rc = 0;
        if (attempt < 0) { /* an attempt's header before its first byte, or as it starts */
            attempts_refresh(ctx, id, &at, r.log_attempts);
            len = upto_next(&at, task, offset, r.len);
            rc = headers_upto(&at, task, offset);
        }
        if (rc < 0 || (len && (rc = write_all(r.body, len)) < 0)) {
            sl_response_fini(&r);
            code = SL_CLI_OK; /* EPIPE: the reader went away, nothing more to do */
            if (rc != -EPIPE) {
                sl_cli_errorf("writing standard output: %s", strerror(-rc));
                code = SL_CLI_FAILED;
            }
            goto out;
        }
        /* Trust the server's offset; without one, count the bytes. */
        if (r.log_offset >= 0 && r.len && r.log_offset <= offset) {
            sl_response_fini(&r);
            sl_cli_errorf("%s: the server's log offset did not advance", what);
            code = SL_CLI_FAILED;
            goto out;
        }
        offset = r.log_offset >= 0 && len == r.len ? r.log_offset : offset + (int64_t)len;
        /* --attempt N is over once a later attempt has begun */
        finished = sl_cli_state_finished(r.job_state) ||
                   (attempt >= 0 && r.log_attempts > attempt + 1);
        if (r.len) {
            empty_finished = 0;
            sl_response_fini(&r);
            continue;
        }
        sl_response_fini(&r);
        code = SL_CLI_OK;
        if (!follow || (finished && ++empty_finished >= 2))
            goto out;
        if (!finished)
            sleep_ms(SL_CLI_LOG_POLL_MS);
    }
out:
    json_decref(at.list);
    return code;
}
