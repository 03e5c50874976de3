/*
 * attach.c - `sluice run -i/-t` and `sluice shell` once the job is
 * submitted: wait for it to start, saying why it waits (on stderr), then
 * be its terminal over GET /v1/jobs/{id}/attach (docs/api-contract.md,
 * "Interactive sessions"): stdin to channel 0, channel 1 to stdout, the
 * local size to channel 4 at once and on each SIGWINCH (-t), and the exit
 * code of channel 3 as sluice's own.
 *
 * With -t on a terminal, the local terminal is in raw mode for the whole
 * session (Ctrl-C, Ctrl-Z and Ctrl-D go to the job), and is restored on
 * every way out: the session's end, an error, SIGINT, SIGTERM or SIGHUP
 * (caught; they end the session), and exit() (atexit). A connection lost
 * without a status (sluiced restarting) is attached again while the job
 * runs, for up to REATTACH_MS. Over https the session's bytes go through
 * its TLS stream (sl_stream_*): bytes it holds decrypted are read before
 * each wait, since poll does not see them.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <termios.h>
#include <unistd.h>

#include "../client/client.h"
#include "../util/ws.h"

#define ATTACH_PROTOCOL "v1.attach.sluice"
#define WAIT_POLL_MS 500          /* a pending job is asked again */
#define REATTACH_MS 30000         /* a lost connection, attached again */
#define IN_CHUNK 16384            /* stdin bytes per frame */
#define FRAME_BUF 65536           /* the biggest server frame taken */

static int g_sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t g_stop;  /* SIGINT, SIGTERM, SIGHUP */
static struct termios g_saved;
static bool g_raw;

static void restore_tty(void)
{
    if (g_raw) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved);
        g_raw = false;
    }
}

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;

    if (sig != SIGWINCH)
        g_stop = 1;
    if (write(g_sig_pipe[1], &c, 1) < 0) {
        /* the pipe is full: a wake-up is pending */
    }
    errno = saved;
}

static int signals_setup(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
    struct sigaction sa;

    if (g_sig_pipe[0] < 0 && pipe2(g_sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < SL_ARRAY_LEN(sigs); i++)
        sigaction(sigs[i], &sa, NULL);
    return 0;
}

static void signals_drain(void)
{
    char buf[64];

    while (read(g_sig_pipe[0], buf, sizeof(buf)) > 0)
        ;
}

static int raw_mode(void)
{
    struct termios t;

    if (tcgetattr(STDIN_FILENO, &g_saved) < 0)
        return -errno;
    t = g_saved;
    cfmakeraw(&t);
    atexit(restore_tty);
    /* TCSADRAIN, not FLUSH: what was typed while the job started is the
     * job's input. */
    if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) < 0)
        return -errno;
    g_raw = true;
    return 0;
}

/* ---- one connection ------------------------------------------------------ */

struct session {
    struct sl_stream *st;         /* the connection, or NULL */
    bool tty;
    bool stdin_open;
    bool last_nl;                 /* the last stdin byte sent was a newline */
    uint8_t in[FRAME_BUF + SL_WS_HEAD_MAX];
    size_t in_len;
    int exit_code;                /* from the status message; -1 none */
    bool closed;                  /* the server's close frame came */
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            poll(&pfd, 1, 1000);
        } else if (w < 0 && errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

/* Write all of p[0..n) to the server, waiting as the stream asks. */
static int send_all(struct session *s, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = sl_stream_write(s->st, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w == -EAGAIN) {
            struct pollfd pfd = {sl_stream_fd(s->st), sl_stream_write_events(s->st), 0};
            poll(&pfd, 1, 1000);
        } else {
            return w < 0 ? (int)w : -EPIPE;
        }
    }
    return 0;
}

/* A masked client frame of 'opcode': 'chan' (>= 0) then p[0..n). */
static int send_frame(struct session *s, int opcode, int chan, const void *p, size_t n)
{
    uint8_t head[SL_WS_HEAD_MAX], mask[4], *buf;
    size_t total = n + (chan >= 0), h;
    int rc;

    if (getrandom(mask, sizeof(mask), 0) != (ssize_t)sizeof(mask))
        return -EIO;
    h = sl_ws_frame_head(head, opcode, true, total, mask);
    if (!(buf = malloc(h + total)))
        return -ENOMEM;
    memcpy(buf, head, h);
    if (chan >= 0)
        buf[h] = (uint8_t)chan;
    if (n)
        memcpy(buf + h + (chan >= 0), p, n);
    sl_ws_mask(buf + h, total, mask, 0);
    rc = send_all(s, buf, h + total);
    free(buf);
    return rc;
}

static int send_size(struct session *s)
{
    struct winsize ws;
    char json[64];

    if (!s->tty || ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col)
        return 0;
    snprintf(json, sizeof(json), "{\"Width\":%u,\"Height\":%u}", ws.ws_col, ws.ws_row);
    return send_frame(s, SL_WS_BINARY, 4, json, strlen(json));
}

/* stdin: one read, one frame; at its end (a pipe), the terminal's EOF. */
static int from_stdin(struct session *s)
{
    uint8_t buf[IN_CHUNK];
    ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    if (n == 0) {
        /* Ctrl-D at the start of a line is the end of input; a line in
         * progress takes one to be sent first. */
        s->stdin_open = false;
        return send_frame(s, SL_WS_BINARY, 0, "\x04\x04", s->last_nl ? 1 : 2);
    }
    s->last_nl = buf[n - 1] == '\n';
    return send_frame(s, SL_WS_BINARY, 0, buf, (size_t)n);
}

/* A status message: {"exit_code": N}. */
static void status_message(struct session *s, const uint8_t *p, size_t n)
{
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)p, n, 0, &jerr);
    json_t *code = json_object_get(doc, "exit_code");

    if (json_is_integer(code) && json_integer_value(code) >= 0 &&
        json_integer_value(code) <= 255)
        s->exit_code = (int)json_integer_value(code);
    json_decref(doc);
}

/* The whole server frames in s->in. Returns 0, 1 at its close, or
 * -errno. */
static int frames(struct session *s, char *why, size_t size)
{
    size_t off = 0;
    int rc = 0;

    while (rc == 0) {
        struct sl_ws_frame f;
        struct sl_ws_refusal ref;
        const uint8_t *p;
        int r = sl_ws_frame_parse(s->in + off, s->in_len - off, false, FRAME_BUF, &f, &ref);
        if (r < 0) {
            snprintf(why, size, "the server broke the WebSocket protocol: %s", ref.text);
            return -EPROTO;
        }
        if (r == 0 || s->in_len - off < f.head_len + f.payload_len)
            break;
        p = s->in + off + f.head_len;
        if (f.opcode == SL_WS_BINARY && f.payload_len > 0 && p[0] == 1)
            rc = write_all(STDOUT_FILENO, p + 1, (size_t)f.payload_len - 1);
        else if (f.opcode == SL_WS_BINARY && f.payload_len > 0 && p[0] == 3)
            status_message(s, p + 1, (size_t)f.payload_len - 1);
        else if (f.opcode == SL_WS_PING)
            rc = send_frame(s, SL_WS_PONG, -1, p, (size_t)f.payload_len);
        else if (f.opcode == SL_WS_CLOSE) {
            int code = f.payload_len >= 2 ? p[0] << 8 | p[1] : 1005;
            s->closed = true;
            send_frame(s, SL_WS_CLOSE, -1, p, f.payload_len >= 2 ? 2 : 0);
            if (code != SL_WS_CLOSE_NORMAL && code != 1005 && s->exit_code < 0)
                snprintf(why, size, "the session closed (%d %.*s)", code,
                         (int)(f.payload_len > 2 ? f.payload_len - 2 : 0), p + 2);
            rc = 1;
        }
        off += f.head_len + (size_t)f.payload_len;
    }
    memmove(s->in, s->in + off, s->in_len - off);
    s->in_len -= off;
    return rc;
}

/* Read from the server, then its frames. */
static int from_server(struct session *s, char *why, size_t size)
{
    ssize_t n = sl_stream_read(s->st, s->in + s->in_len, sizeof(s->in) - s->in_len);

    if (n == 0)
        return -ECONNRESET;
    if (n < 0)
        return n == -EAGAIN ? 0 : (int)n;
    s->in_len += (size_t)n;
    return frames(s, why, size);
}

/* Carry one connection until its close, its loss, or a stop signal.
 * Returns 1 (closed by the server), 0 (lost: attach again), or -errno. */
static int session_run(struct session *s, char *why, size_t size)
{
    /* what came with the 101 first */
    int rc = frames(s, why, size);

    if (rc == 0)
        rc = send_size(s);
    while (rc == 0 && !g_stop) {
        /* decrypted already: read without waiting (poll cannot see it) */
        bool ready = sl_stream_pending(s->st);
        struct pollfd fds[3] = {{sl_stream_fd(s->st), sl_stream_read_events(s->st), 0},
                                {s->stdin_open ? STDIN_FILENO : -1, POLLIN, 0},
                                {g_sig_pipe[0], POLLIN, 0}};
        if (poll(fds, 3, ready ? 0 : -1) < 0 && errno != EINTR)
            return -errno;
        if (fds[2].revents) {
            signals_drain();
            rc = send_size(s); /* a SIGWINCH; the others set g_stop */
        }
        if (rc == 0 && (fds[1].revents & (POLLIN | POLLHUP)))
            rc = from_stdin(s);
        if (rc == 0 && (ready || fds[0].revents))
            rc = from_server(s, why, size);
    }
    if (rc == -ECONNRESET || rc == -EPIPE)
        return 0;
    return rc;
}

/* ---- the job ----------------------------------------------------------------- */

/* The job's state, exit code and pending reason. Returns 0 (with *job a
 * new reference), 1 when the server could not be asked (try again), or an
 * exit code after saying why. */
static int job_get(struct sl_cli_ctx *ctx, int64_t id, json_t **job)
{
    struct sl_response r;
    char path[64], what[32], why[256];
    json_error_t jerr;
    bool transient;
    int code;

    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    code = sl_cli_get_transient(ctx, path, what, &r, &transient, why, sizeof(why));
    if (transient)
        return 1;
    if (code != SL_CLI_OK)
        return code;
    *job = json_loadb(r.body, r.len, 0, &jerr);
    sl_response_fini(&r);
    if (!json_is_object(*job)) {
        json_decref(*job);
        sl_cli_errorf("job %lld: the server's answer is not a job object", (long long)id);
        return SL_CLI_FAILED;
    }
    return 0;
}

static bool jstr_is(const json_t *o, const char *key, const char *want)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && strcmp(v, want) == 0;
}

/* The exit code sluice gives for a job that ended without a session. */
static int ended(const json_t *job, int64_t id)
{
    const json_t *code = json_object_get(job, "exit_code");
    const char *state = json_string_value(json_object_get(job, "state"));
    char shown[200];
    const char *msg = json_string_value(json_object_get(job, "message"));

    sl_text_show(shown, sizeof(shown), msg ? msg : "", msg ? strlen(msg) : 0,
                 sizeof(shown) - 1);
    sl_cli_errorf("job %lld ended %s%s%s", (long long)id, state ? state : "?",
                  shown[0] ? ": " : "", shown);
    return json_is_integer(code) ? (int)json_integer_value(code) : SL_CLI_FAILED;
}

/* Wait until job 'id' runs, saying why it waits when that changes.
 * Returns 0 once it runs, or an exit code (it ended, a stop signal came:
 * the job cancelled when 'owned', the server refused). */
static int wait_running(struct sl_cli_ctx *ctx, int64_t id, bool owned)
{
    char last[256] = "";

    for (;;) {
        json_t *job = NULL;
        int rc = job_get(ctx, id, &job);
        const char *state, *reason;

        if (rc > 1)
            return rc;
        if (rc == 0) {
            state = json_string_value(json_object_get(job, "state"));
            reason = json_string_value(json_object_get(job, "reason"));
            if (state && strcmp(state, "Running") == 0) {
                json_decref(job);
                return 0;
            }
            if (state && strcmp(state, "Pending") != 0) {
                rc = ended(job, id);
                json_decref(job);
                return rc;
            }
            if (reason && strcmp(reason, last) != 0) {
                char shown[256];
                sl_text_show(shown, sizeof(shown), reason, strlen(reason), sizeof(shown) - 1);
                fprintf(stderr, "sluice: job %lld is pending: %s\n", (long long)id, shown);
                sl_strlcpy(last, reason, sizeof(last));
            }
            json_decref(job);
        }
        if (g_stop && !owned) {
            /* someone's job (sluice attach): only the wait ends */
            sl_cli_errorf("interrupted: stopped waiting for job %lld, which is still "
                          "pending", (long long)id);
            return 130;
        }
        if (g_stop) {
            struct sl_response r;
            char path[64];
            snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
            if (sl_cli_request(ctx, "DELETE", path, NULL, NULL, 0, NULL, &r) == SL_CLI_OK)
                sl_response_fini(&r);
            sl_cli_errorf("interrupted: job %lld cancelled", (long long)id);
            return 130;
        }
        {
            struct pollfd pfd = {g_sig_pipe[0], POLLIN, 0};
            if (poll(&pfd, 1, WAIT_POLL_MS) > 0)
                signals_drain();
        }
    }
}

/* Attach once: 0 with s->st, 1 to try again (starting, unreachable), or an
 * exit code after saying why. */
static int attach_once(struct sl_cli_ctx *ctx, int64_t id, struct session *s, char *why,
                       size_t size)
{
    struct sl_client *c;
    struct sl_response r;
    char path[64], *early = NULL;
    size_t nearly = 0;
    int code, rc;

    if ((code = sl_cli_client(ctx, &c)) != SL_CLI_OK)
        return code;
    snprintf(path, sizeof(path), "/v1/jobs/%lld/attach", (long long)id);
    rc = sl_client_upgrade(c, path, ATTACH_PROTOCOL, &s->st, &early, &nearly, &r);
    if (rc < 0 || r.status == 503) {
        snprintf(why, size, "%s", r.error.message[0] ? r.error.message : strerror(-rc));
        sl_response_fini(&r);
        return 1;
    }
    if (r.status != 101) {
        sl_cli_errorf("job %lld: %s%s%s (%s)", (long long)id, r.error.field,
                      r.error.field[0] ? ": " : "", r.error.message, r.error.code);
        code = sl_cli_exit_code(0, r.status);
        sl_response_fini(&r);
        return code;
    }
    sl_response_fini(&r);
    if (nearly > sizeof(s->in))
        nearly = sizeof(s->in);
    if (nearly)
        memcpy(s->in, early, nearly);
    s->in_len = nearly;
    free(early);
    return 0;
}

int sl_cli_attach_job(struct sl_cli_ctx *ctx, int64_t id, bool tty, bool owned)
{
    static struct session s;
    char why[256] = "";
    int64_t give_up = 0;
    int rc;

    memset(&s, 0, sizeof(s));
    s.st = NULL;
    s.tty = tty;
    s.stdin_open = true;
    s.last_nl = true;
    s.exit_code = -1;
    if (signals_setup() < 0) {
        sl_cli_errorf("cannot catch signals: %s", strerror(errno));
        return SL_CLI_FAILED;
    }
    if ((rc = wait_running(ctx, id, owned)) != 0)
        return rc;
    if (tty && raw_mode() < 0) {
        sl_cli_errorf("cannot put the terminal in raw mode: %s", strerror(errno));
        return SL_CLI_FAILED;
    }
    for (;;) {
        json_t *job = NULL;

        if (g_stop)
            break;
        rc = attach_once(ctx, id, &s, why, sizeof(why));
        if (rc == 0) {
            give_up = 0;
            rc = session_run(&s, why, sizeof(why));
            sl_stream_close(s.st);
            s.st = NULL;
            s.in_len = 0;
            if (rc < 0 || s.exit_code >= 0)
                break; /* closed without a status (sluiced going away): again */
        } else if (rc > 1) {
            restore_tty();
            return rc;
        }
        /* Lost, or not attachable now: while the job runs, again. */
        if (!give_up)
            give_up = sl_mono_ms() + REATTACH_MS;
        if (sl_mono_ms() >= give_up || job_get(ctx, id, &job) > 1)
            break;
        if (job && !jstr_is(job, "state", "Running")) {
            restore_tty();
            rc = ended(job, id);
            json_decref(job);
            return rc;
        }
        json_decref(job);
        poll(NULL, 0, 300);
    }
    restore_tty();
    if (s.exit_code >= 0)
        return s.exit_code;
    if (g_stop) {
        sl_cli_errorf("interrupted: detached from job %lld (sluice attach %lld takes it "
                      "up again; it ends after sluiced's --interactive-detach-grace)",
                      (long long)id, (long long)id);
        return 130;
    }
    sl_cli_errorf("job %lld: lost its terminal%s%s", (long long)id, why[0] ? ": " : "", why);
    return SL_CLI_FAILED;
}
