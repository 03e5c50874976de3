/*
 * cmd_logs.c - `sluice logs JOB [-f] [--task N]`: copy a task's log to
 * standard output, byte for byte.
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

enum { O_FOLLOW = 1, O_TASK };

/* clang-format off */
static const struct sl_cli_opt logs_opts[] = {
    /* long name, short, takes a value, id */
    {"follow", 'f', false, O_FOLLOW},
    {"task", '\0', true, O_TASK},
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

int sl_cli_cmd_logs(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *job = NULL;
    char what[40];
    int64_t id = 0, task = 0, offset = 0, lost_since = 0;
    long backoff = SL_CLI_LOG_POLL_MS;
    bool follow = false, said_pending = false;
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
        } else if (job) {
            sl_cli_errorf("logs: unexpected argument '%.64s' (one JOB)", v);
            return SL_CLI_USAGE;
        } else {
            job = v;
        }
    }
    if (!job) {
        sl_cli_errorf(
            "logs: JOB is required (sluice logs JOB [-f] [--task N])");
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

        snprintf(path, sizeof(path), "/v1/jobs/%lld/logs?task=%lld&offset=%lld",
                 (long long)id, (long long)task, (long long)offset);
        if ((code = sl_cli_get_transient(ctx, path, what, &r, &transient, why,
                                         sizeof(why))) != SL_CLI_OK) {
            if (!transient)
                return code;
            if (!follow) {
                sl_cli_errorf("%s: %s", what, why);
                return code;
            }
            if ((code = reconnect_wait(what, why, offset, &lost_since, &backoff)))
                return code;
            continue;
        }
        if (lost_since) {
            sl_cli_errorf("%s: reconnected; following from byte %lld", what,
                          (long long)offset);
            lost_since = 0;
        }
        if (!r.len && offset == 0 && !said_pending && strcmp(r.job_state, "Pending") == 0) {
            sl_cli_errorf("%s has not started yet (Pending; sluice why %lld says why)%s", what,
                          (long long)id, follow ? ": waiting for its output" : "");
            said_pending = true;
        }
        if (r.len && (rc = write_all(r.body, r.len)) < 0) {
            sl_response_fini(&r);
            if (rc == -EPIPE)
                return SL_CLI_OK; /* the reader went away: nothing more to do */
            sl_cli_errorf("writing standard output: %s", strerror(-rc));
            return SL_CLI_FAILED;
        }
        /* Trust the server's offset; without one, count the bytes. */
        if (r.log_offset >= 0 && r.len && r.log_offset <= offset) {
            sl_response_fini(&r);
            sl_cli_errorf("%s: the server's log offset did not advance", what);
            return SL_CLI_FAILED;
        }
        offset = r.log_offset >= 0 ? r.log_offset : offset + (int64_t)r.len;
        finished = sl_cli_state_finished(r.job_state);
        if (r.len) {
            empty_finished = 0;
            sl_response_fini(&r);
            continue;
        }
        sl_response_fini(&r);
        if (!follow)
            return SL_CLI_OK;
        if (finished && ++empty_finished >= 2)
            return SL_CLI_OK;
        if (!finished)
            sleep_ms(SL_CLI_LOG_POLL_MS);
    }
}
