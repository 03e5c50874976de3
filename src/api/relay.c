/*
 * relay.c - the attach relay (relay.h): one epoll thread, level-triggered,
 * carrying each interactive session between its WebSocket client and its
 * task's shim.
 *
 * A session has four bounded buffers:
 *
 *   ws_in   client bytes: at most one whole frame (header + 32 KiB)
 *   sh_out  STDIN and RESIZE messages for the shim
 *   sh_in   shim bytes: at most one whole message (header + 16 KiB)
 *   ws_out  frames for the client (OUTPUT, status, pong, close)
 *
 * A frame (a message) is taken from ws_in (sh_in) only once the buffer it
 * goes to has room for all it becomes; until then its side is not read
 * ("blocked"), which pushes back on the sender through TCP (the socket
 * pair). So a session never holds more than its buffers, whatever either
 * side does.
 *
 * The end: the shim's STATUS becomes a status message and a close frame
 * (1000); the client's close frame is answered and ends the session (the
 * shim sees its client leave and starts its grace); a protocol error of
 * the client closes with 1002, 1003, 1007 or 1009; a client silent for
 * SL_RELAY_DEAD_MS is dropped (a ping goes every SL_RELAY_PING_MS). After
 * its close frame the relay shuts its side and drains the client's bytes
 * for at most LINGER_MS, so that the client reads the last frames rather
 * than a reset.
 *
 * Over HTTPS the client's side is its TLS session, handed over with the
 * socket (sl_http_takeover): every read and write of that side goes
 * through it. A read that needs the socket writable, or a write that
 * needs it readable, turns the interest into what the record layer waits
 * for (interest). Bytes OpenSSL has decrypted already wake no epoll: a
 * session that wants to read and has some is stepped again after the
 * batch (kick). Our close_notify goes where plain HTTP shuts the write
 * side (waiting for the socket if it must), then the linger drains raw
 * bytes; the session frees its SSL when it ends.
 *
 * Invariants: only the relay thread touches sessions, their sockets and
 * their SSLs; the claims (job ids) are under 'mu', shared with the HTTP
 * thread; the list of kicked sessions is empty whenever sessions are
 * freed.
 */
#include "relay.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../exec/attach.h"
#include "../http/tls.h"
#include "../util/imap.h"
#include "../util/util.h"
#include "../util/ws.h"

#define WS_IN_CAP (SL_WS_HEAD_MAX + SL_RELAY_FRAME_MAX)
/* a whole client frame of stdin, cut into shim messages */
#define SH_OUT_CAP (SL_RELAY_FRAME_MAX + SL_ATTACH_HEAD * (SL_RELAY_FRAME_MAX / SL_ATTACH_MSG_MAX + 2))
#define SH_IN_CAP (SL_ATTACH_HEAD + SL_ATTACH_MSG_MAX)
/* a whole OUTPUT message as a frame, and room for control frames */
#define WS_OUT_CAP (4 * (SL_WS_HEAD_MAX + 1 + SL_ATTACH_MSG_MAX))
#define CONTROL_ROOM 256          /* ws_out kept for pong, status, close */
#define RESIZE_MAX 128            /* a resize message's JSON */
#define LINGER_MS 2000
#define TICK_MS 1000

struct sess;

/* What an epoll event names: a side of a session. */
struct end {
    struct sess *s;
    bool shim;
};

struct sess {
    int64_t job;
    int ws, sh;                   /* -1 once closed */
    struct ssl_st *ssl;           /* owned: the client's TLS, NULL on plain
                                     HTTP (and once freed) */
    bool rd_wants_write;          /* the last TLS read needs the socket
                                     writable */
    bool wr_wants_read;           /* the last TLS write needs it readable */
    bool shut_waits;              /* close_notify waits for the socket to
                                     be writable */
    bool kicked;                  /* on the relay's kick list */
    struct sess *kick_next;
    struct end ends[2];
    uint32_t ws_ev, sh_ev;        /* interest sets in force; 0: the side
                                     is out of epoll (a hang-up would
                                     otherwise wake it while it waits) */
    uint8_t ws_in[WS_IN_CAP];
    size_t ws_in_len;
    uint8_t sh_out[SH_OUT_CAP];
    size_t sh_out_len, sh_out_off;
    uint8_t sh_in[SH_IN_CAP];
    size_t sh_in_len;
    uint8_t ws_out[WS_OUT_CAP];
    size_t ws_out_len, ws_out_off;
    bool ws_blocked, sh_blocked;  /* a whole frame/message waits for room */
    bool sh_eof;                  /* the shim closed; sh_in holds its last */
    /* the client's message in progress (it may come in fragments) */
    bool in_msg;
    int chan;                     /* its channel; -1 until its first byte */
    uint8_t resize[RESIZE_MAX];
    size_t resize_len;
    /* the end */
    bool closing;                 /* our close frame is queued */
    bool lingering;               /* sent: draining the client until EOF */
    int64_t linger_ms;
    int64_t rx_ms, ping_ms;       /* the client's last bytes, our last ping */
    bool dead;                    /* ended; freed after the batch of events */
    struct sess *prev, *next;
};

struct sl_relay {
    int epfd, wake_fd;
    pthread_t thread;
    pthread_mutex_t mu;           /* claims, the queue of new sessions, stop */
    struct sl_imap claims;        /* job id -> (void *)1 */
    int nclaims;
    struct sess *queue;           /* added, not yet the thread's */
    bool stop;
    struct sess *list;            /* the thread's sessions */
    struct sess *dead;            /* ended during this batch of events */
    struct sess *kick;            /* TLS sessions with decrypted bytes to
                                     read, stepped again after the batch */
};

static char tag_wake;

/* ---- claims ---------------------------------------------------------------- */

int sl_relay_reserve(struct sl_relay *rl, int64_t job_id)
{
    int rc = 0;

    pthread_mutex_lock(&rl->mu);
    if (sl_imap_get(&rl->claims, job_id))
        rc = -EBUSY;
    else if (rl->nclaims >= SL_RELAY_MAX_SESSIONS)
        rc = -EAGAIN;
    else if (sl_imap_put(&rl->claims, job_id, (void *)1) < 0)
        rc = -EAGAIN;
    else
        rl->nclaims++;
    pthread_mutex_unlock(&rl->mu);
    return rc;
}

bool sl_relay_claimed(struct sl_relay *rl, int64_t job_id)
{
    bool held;

    pthread_mutex_lock(&rl->mu);
    held = sl_imap_get(&rl->claims, job_id) != NULL;
    pthread_mutex_unlock(&rl->mu);
    return held;
}

int sl_relay_claims(struct sl_relay *rl)
{
    int n;

    pthread_mutex_lock(&rl->mu);
    n = rl->nclaims;
    pthread_mutex_unlock(&rl->mu);
    return n;
}

void sl_relay_unreserve(struct sl_relay *rl, int64_t job_id)
{
    pthread_mutex_lock(&rl->mu);
    if (sl_imap_get(&rl->claims, job_id)) {
        sl_imap_del(&rl->claims, job_id);
        rl->nclaims--;
    }
    pthread_mutex_unlock(&rl->mu);
}

/* ---- one session ------------------------------------------------------------ */

/* A session the thread never had (or has no more). */
static void sess_free(struct sl_relay *rl, struct sess *s)
{
    sl_tls_conn_free(s->ssl); /* close_notify if not sent, as it goes */
    if (s->ws >= 0)
        close(s->ws);
    if (s->sh >= 0)
        close(s->sh);
    sl_relay_unreserve(rl, s->job);
    free(s);
}

/* Room left in ws_out for data frames (control frames keep CONTROL_ROOM). */
static size_t ws_room(const struct sess *s)
{
    size_t used = s->ws_out_len;
    return WS_OUT_CAP - CONTROL_ROOM > used ? WS_OUT_CAP - CONTROL_ROOM - used : 0;
}

static void ws_compact(struct sess *s)
{
    if (s->ws_out_off == 0)
        return;
    memmove(s->ws_out, s->ws_out + s->ws_out_off, s->ws_out_len - s->ws_out_off);
    s->ws_out_len -= s->ws_out_off;
    s->ws_out_off = 0;
}

/* Queue a frame for the client: 'chan' >= 0 prefixes the payload with
 * that channel byte. The caller checked the room (data) or it is a control
 * frame (at most 125 bytes, within CONTROL_ROOM). */
static void ws_queue(struct sess *s, int opcode, int chan, const void *p, size_t n)
{
    uint8_t head[SL_WS_HEAD_MAX];
    size_t total = n + (chan >= 0), h = sl_ws_frame_head(head, opcode, true, total, NULL);

    ws_compact(s);
    if (WS_OUT_CAP - s->ws_out_len < h + total)
        return; /* cannot happen: the callers keep the room */
    memcpy(s->ws_out + s->ws_out_len, head, h);
    s->ws_out_len += h;
    if (chan >= 0)
        s->ws_out[s->ws_out_len++] = (uint8_t)chan;
    if (n)
        memcpy(s->ws_out + s->ws_out_len, p, n);
    s->ws_out_len += n;
}

/* Queue our close frame (once) and stop taking anything else. */
static void ws_close(struct sess *s, int code, const char *reason)
{
    uint8_t p[2 + 64];
    size_t n = strlen(reason);

    if (s->closing)
        return;
    if (n > sizeof(p) - 2)
        n = sizeof(p) - 2;
    p[0] = (uint8_t)(code >> 8);
    p[1] = (uint8_t)code;
    memcpy(p + 2, reason, n);
    ws_queue(s, SL_WS_CLOSE, -1, p, 2 + n);
    s->closing = true;
    /* The shim's side ends with the client's: it starts its grace. */
    if (s->sh >= 0) {
        close(s->sh); /* which takes it out of epoll */
        s->sh = -1;
    }
}

static void ws_status(struct sess *s, const char *json)
{
    ws_queue(s, SL_WS_BINARY, SL_ATTACH_STATUS, json, strlen(json));
}

/* Queue 'n' bytes of 'chan' for the shim, in messages of at most
 * SL_ATTACH_MSG_MAX; the caller checked the room. */
static void sh_queue(struct sess *s, int chan, const uint8_t *p, size_t n)
{
    if (s->sh_out_off) {
        memmove(s->sh_out, s->sh_out + s->sh_out_off, s->sh_out_len - s->sh_out_off);
        s->sh_out_len -= s->sh_out_off;
        s->sh_out_off = 0;
    }
    do {
        size_t take = n < SL_ATTACH_MSG_MAX ? n : SL_ATTACH_MSG_MAX;
        sl_attach_head(s->sh_out + s->sh_out_len, chan, take);
        memcpy(s->sh_out + s->sh_out_len + SL_ATTACH_HEAD, p, take);
        s->sh_out_len += SL_ATTACH_HEAD + take;
        p += take;
        n -= take;
    } while (n > 0);
}

static size_t sh_need(size_t n)
{
    return n + SL_ATTACH_HEAD * (n / SL_ATTACH_MSG_MAX + 1);
}

/* A resize message: exactly {"Width": W, "Height": H}, 1..SL_ATTACH_DIM_MAX
 * each. Returns 0 with the shim's payload in out, or -1. */
static int resize_parse(const uint8_t *p, size_t n, uint8_t out[4])
{
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, &jerr);
    json_t *w = json_object_get(doc, "Width"), *h = json_object_get(doc, "Height");
    int rc = -1;

    if (json_is_object(doc) && json_object_size(doc) == 2 && json_is_integer(w) &&
        json_is_integer(h) && json_integer_value(w) >= 1 &&
        json_integer_value(w) <= SL_ATTACH_DIM_MAX && json_integer_value(h) >= 1 &&
        json_integer_value(h) <= SL_ATTACH_DIM_MAX) {
        out[0] = (uint8_t)(json_integer_value(h) >> 8);
        out[1] = (uint8_t)json_integer_value(h);
        out[2] = (uint8_t)(json_integer_value(w) >> 8);
        out[3] = (uint8_t)json_integer_value(w);
        rc = 0;
    }
    json_decref(doc);
    return rc;
}

/* The payload of one data frame of the client's message (unmasked). */
static void client_data(struct sess *s, const uint8_t *p, size_t n, bool fin)
{
    if (s->chan < 0 && n > 0) {
        s->chan = p[0];
        p++;
        n--;
        if (s->chan != SL_ATTACH_STDIN && s->chan != SL_ATTACH_RESIZE) {
            ws_close(s, SL_WS_CLOSE_INVALID, "unknown channel");
            return;
        }
    }
    if (s->chan == SL_ATTACH_STDIN && n > 0)
        sh_queue(s, SL_ATTACH_STDIN, p, n);
    if (s->chan == SL_ATTACH_RESIZE) {
        if (s->resize_len + n > RESIZE_MAX) {
            ws_close(s, SL_WS_CLOSE_TOO_BIG, "resize message too long");
            return;
        }
        memcpy(s->resize + s->resize_len, p, n);
        s->resize_len += n;
    }
    if (!fin)
        return;
    if (s->chan < 0) {
        ws_close(s, SL_WS_CLOSE_INVALID, "a message without a channel");
        return;
    }
    if (s->chan == SL_ATTACH_RESIZE) {
        uint8_t dims[4];
        if (resize_parse(s->resize, s->resize_len, dims) < 0) {
            ws_close(s, SL_WS_CLOSE_INVALID,
                     "resize must be {\"Width\":1..10000,\"Height\":1..10000}");
            return;
        }
        sh_queue(s, SL_ATTACH_RESIZE, dims, sizeof(dims));
    }
    s->in_msg = false;
}

/* Take whole client frames from ws_in while their results fit. */
static void client_frames(struct sess *s)
{
    size_t off = 0;

    s->ws_blocked = false;
    /* Once the shim is gone nothing the client sends has anywhere to go:
     * its bytes wait (unread past ws_in) until the session closes. */
    while (!s->closing && s->sh >= 0) {
        struct sl_ws_frame f;
        struct sl_ws_refusal why;
        uint8_t *payload;
        int rc = sl_ws_frame_parse(s->ws_in + off, s->ws_in_len - off, true,
                                   SL_RELAY_FRAME_MAX, &f, &why);
        if (rc < 0) {
            ws_close(s, why.close_code, why.text);
            break;
        }
        if (rc == 0 || s->ws_in_len - off < f.head_len + f.payload_len)
            break;
        payload = s->ws_in + off + f.head_len;
        if (f.opcode >= SL_WS_CLOSE) {
            if (f.opcode == SL_WS_PING && WS_OUT_CAP - s->ws_out_len < SL_WS_HEAD_MAX + 125) {
                s->ws_blocked = true; /* a pong waits for room */
                break;
            }
            sl_ws_mask(payload, (size_t)f.payload_len, f.mask, 0);
            if (f.opcode == SL_WS_PING) {
                ws_queue(s, SL_WS_PONG, -1, payload, (size_t)f.payload_len);
            } else if (f.opcode == SL_WS_CLOSE) {
                int code = sl_ws_close_parse(payload, (size_t)f.payload_len, &why);
                if (code < 0)
                    ws_close(s, why.close_code, why.text);
                else
                    ws_close(s, SL_WS_CLOSE_NORMAL, "detached");
            }
        } else if (f.opcode == SL_WS_TEXT || (f.opcode == SL_WS_CONT && !s->in_msg) ||
                   (f.opcode == SL_WS_BINARY && s->in_msg)) {
            ws_close(s, f.opcode == SL_WS_TEXT ? SL_WS_CLOSE_UNSUPPORTED : SL_WS_CLOSE_PROTOCOL,
                     f.opcode == SL_WS_TEXT ? "binary messages only"
                                            : "a fragment out of order");
        } else {
            if (SH_OUT_CAP - (s->sh_out_len - s->sh_out_off) < sh_need((size_t)f.payload_len)) {
                s->ws_blocked = true; /* the shim is slow: stop reading */
                break;
            }
            if (f.opcode == SL_WS_BINARY) {
                s->in_msg = true;
                s->chan = -1;
                s->resize_len = 0;
            }
            sl_ws_mask(payload, (size_t)f.payload_len, f.mask, 0);
            client_data(s, payload, (size_t)f.payload_len, f.fin);
        }
        off += f.head_len + (size_t)f.payload_len;
    }
    memmove(s->ws_in, s->ws_in + off, s->ws_in_len - off);
    s->ws_in_len -= off;
}

/* Take whole shim messages from sh_in while their frames fit. */
static void shim_messages(struct sess *s)
{
    size_t off = 0;

    s->sh_blocked = false;
    while (!s->closing && s->sh_in_len - off >= SL_ATTACH_HEAD) {
        const uint8_t *m = s->sh_in + off;
        size_t len = (size_t)m[1] << 8 | m[2];
        if (len > SL_ATTACH_MSG_MAX) {
            ws_close(s, SL_WS_CLOSE_INTERNAL, "the task's terminal broke the protocol");
            break;
        }
        if (s->sh_in_len - off < SL_ATTACH_HEAD + len)
            break;
        if (m[0] == SL_ATTACH_OUTPUT) {
            if (ws_room(s) < SL_WS_HEAD_MAX + 1 + len) {
                s->sh_blocked = true; /* the client is slow: stop reading */
                break;
            }
            ws_queue(s, SL_WS_BINARY, SL_ATTACH_OUTPUT, m + SL_ATTACH_HEAD, len);
        } else if (m[0] == SL_ATTACH_STATUS && len == 1) {
            char json[40];
            snprintf(json, sizeof(json), "{\"exit_code\":%d}", m[SL_ATTACH_HEAD]);
            ws_status(s, json);
            ws_close(s, SL_WS_CLOSE_NORMAL, "exited");
        } else {
            ws_close(s, SL_WS_CLOSE_INTERNAL, "the task's terminal broke the protocol");
            break;
        }
        off += SL_ATTACH_HEAD + len;
    }
    if (s->closing)
        off = s->sh_in_len;
    memmove(s->sh_in, s->sh_in + off, s->sh_in_len - off);
    s->sh_in_len -= off;
}

/* ---- I/O ---------------------------------------------------------------------- */

/* Returns false when the side failed or reached its end. */
static bool fill(int fd, uint8_t *buf, size_t cap, size_t *len)
{
    ssize_t n;

    if (*len >= cap)
        return true;
    n = recv(fd, buf + *len, cap - *len, 0);
    if (n > 0) {
        *len += (size_t)n;
        return true;
    }
    return n < 0 && (errno == EAGAIN || errno == EINTR);
}

static bool flush(int fd, const uint8_t *buf, size_t len, size_t *off)
{
    while (*off < len) {
        ssize_t n = send(fd, buf + *off, len - *off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN;
        *off += (size_t)n;
    }
    return true;
}

/* The client's side: through its TLS session when it has one, as fill
 * and flush. A WANT_* of the other direction is noted for interest. */
static bool ws_fill(struct sess *s)
{
    ssize_t n;

    if (!s->ssl)
        return fill(s->ws, s->ws_in, WS_IN_CAP, &s->ws_in_len);
    s->rd_wants_write = false;
    if (s->ws_in_len >= WS_IN_CAP)
        return true;
    n = sl_tls_read(s->ssl, s->ws_in + s->ws_in_len, WS_IN_CAP - s->ws_in_len);
    if (n > 0) {
        s->ws_in_len += (size_t)n;
        return true;
    }
    s->rd_wants_write = n == SL_TLS_WANT_WRITE;
    /* 0: close_notify, as a plain EOF */
    return n == SL_TLS_WANT_READ || n == SL_TLS_WANT_WRITE;
}

static bool ws_flush(struct sess *s)
{
    if (!s->ssl)
        return flush(s->ws, s->ws_out, s->ws_out_len, &s->ws_out_off);
    s->wr_wants_read = false;
    while (s->ws_out_off < s->ws_out_len) {
        /* ws_out may move (ws_compact) or grow before a retry: the
         * context allows both (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER) */
        ssize_t n = sl_tls_write(s->ssl, s->ws_out + s->ws_out_off,
                                 s->ws_out_len - s->ws_out_off);
        if (n > 0) {
            s->ws_out_off += (size_t)n;
            continue;
        }
        s->wr_wants_read = n == SL_TLS_WANT_READ;
        return n == SL_TLS_WANT_READ || n == SL_TLS_WANT_WRITE;
    }
    return true;
}

/* Put 'fd' in epoll for 'want' (0: out of it), from 'had'. */
static void watch(struct sl_relay *rl, int fd, struct end *e, uint32_t want, uint32_t *had)
{
    struct epoll_event ev = {.events = want, .data.ptr = e};

    if (want == *had)
        return;
    epoll_ctl(rl->epfd, !want ? EPOLL_CTL_DEL : !*had ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd,
              &ev);
    *had = want;
}

static void interest(struct sl_relay *rl, struct sess *s)
{
    uint32_t ws = 0, sh = 0;

    if (s->ws >= 0) {
        bool rd = s->lingering || (!s->closing && !s->ws_blocked && s->ws_in_len < WS_IN_CAP);
        bool wr = s->ws_out_off < s->ws_out_len;
        /* Over TLS, what the record layer waits for in place of what the
         * session would: level-triggered, the other would spin. */
        if (rd)
            ws |= s->ssl && !s->lingering && s->rd_wants_write ? EPOLLOUT : EPOLLIN;
        if (wr)
            ws |= s->ssl && s->wr_wants_read ? EPOLLIN : EPOLLOUT;
        if (s->shut_waits)
            ws |= EPOLLOUT;
        watch(rl, s->ws, &s->ends[0], ws, &s->ws_ev);
        if (rd && s->ssl && !s->lingering && !s->kicked && sl_tls_readable(s->ssl) > 0) {
            s->kicked = true;
            s->kick_next = rl->kick;
            rl->kick = s;
        }
    }
    if (s->sh >= 0) {
        if (!s->sh_blocked && s->sh_in_len < SH_IN_CAP)
            sh |= EPOLLIN;
        if (s->sh_out_off < s->sh_out_len)
            sh |= EPOLLOUT;
        watch(rl, s->sh, &s->ends[1], sh, &s->sh_ev);
    }
}

/* End a session: its sockets close now (the shim sees its client leave),
 * its memory goes after the batch of events, which may still name it. */
static void sess_end(struct sl_relay *rl, struct sess *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        rl->list = s->next;
    if (s->next)
        s->next->prev = s->prev;
    sl_tls_conn_free(s->ssl); /* close_notify if not sent, as it goes */
    s->ssl = NULL;
    if (s->ws >= 0)
        close(s->ws);
    if (s->sh >= 0)
        close(s->sh);
    s->ws = s->sh = -1;
    sl_relay_unreserve(rl, s->job);
    s->dead = true;
    s->next = rl->dead;
    rl->dead = s;
}

/* Move the session as far as it goes; false when it ended (freed). */
static bool sess_step(struct sl_relay *rl, struct sess *s, uint32_t ev, bool shim)
{
    int64_t now = sl_mono_ms();

    if (!shim && s->lingering) {
        uint8_t sink[4096];
        ssize_t n;
        while ((n = recv(s->ws, sink, sizeof(sink), 0)) > 0)
            ;
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            sess_end(rl, s);
            return false;
        }
        return true;
    }
    if (!shim && ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) ||
                  (s->rd_wants_write && (ev & EPOLLOUT)))) {
        size_t was = s->ws_in_len;
        if (!ws_fill(s)) {
            sess_end(rl, s); /* the client left without a close frame */
            return false;
        }
        if (s->ws_in_len > was)
            s->rx_ms = now;
    }
    if (shim && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && s->sh >= 0 &&
        (!fill(s->sh, s->sh_in, SH_IN_CAP, &s->sh_in_len) ||
         !flush(s->sh, s->sh_out, s->sh_out_len, &s->sh_out_off))) {
        /* Its last messages (the status among them) still go out, as the
         * client takes them. */
        close(s->sh);
        s->sh = -1;
        s->sh_eof = true;
    }
    if (s->sh >= 0 && !flush(s->sh, s->sh_out, s->sh_out_len, &s->sh_out_off)) {
        close(s->sh);
        s->sh = -1;
        s->sh_eof = true;
    }
    if (s->sh_out_off == s->sh_out_len)
        s->sh_out_off = s->sh_out_len = 0;
    /* Messages, both ways, as far as the room allows. */
    shim_messages(s);
    client_frames(s);
    if (s->sh_eof && !s->closing && !s->sh_blocked)
        ws_close(s, SL_WS_CLOSE_INTERNAL, "the task's terminal closed");
    if (!ws_flush(s)) {
        sess_end(rl, s);
        return false;
    }
    if (s->ws_out_off == s->ws_out_len) {
        s->ws_out_off = s->ws_out_len = 0;
        if (s->closing && !s->lingering) {
            /* Over TLS our close_notify first, once the socket takes it
             * (it is tried again on each step until then). */
            int rc = s->ssl ? sl_tls_shutdown(s->ssl) : 0;
            s->shut_waits = rc == SL_TLS_WANT_WRITE;
            if (rc == SL_TLS_FAILED) {
                sess_end(rl, s);
                return false;
            }
            if (!s->shut_waits) {
                shutdown(s->ws, SHUT_WR);
                s->lingering = true;
                s->linger_ms = now;
            }
        }
    }
    /* What was sent may have made room for what waited. */
    if (s->sh_blocked || s->ws_blocked) {
        shim_messages(s);
        client_frames(s);
    }
    interest(rl, s);
    return true;
}

/* Pings, and the end of the silent and of the lingering. */
static void sweep(struct sl_relay *rl)
{
    int64_t now = sl_mono_ms();

    for (struct sess *s = rl->list, *next; s; s = next) {
        next = s->next;
        if ((s->lingering && now - s->linger_ms >= LINGER_MS) ||
            (!s->lingering && now - s->rx_ms >= SL_RELAY_DEAD_MS)) {
            sess_end(rl, s);
            continue;
        }
        if (!s->closing && now - s->ping_ms >= SL_RELAY_PING_MS &&
            now - s->rx_ms >= SL_RELAY_PING_MS) {
            ws_queue(s, SL_WS_PING, -1, "sluice", 6);
            s->ping_ms = now;
            sess_step(rl, s, 0, false);
        }
    }
}

/* Sessions added since the last look: the thread's from now. */
static bool take_new(struct sl_relay *rl)
{
    struct sess *q;
    bool stop;
    uint64_t cnt;

    if (read(rl->wake_fd, &cnt, sizeof(cnt)) < 0) {
        /* nothing to drain */
    }
    pthread_mutex_lock(&rl->mu);
    q = rl->queue;
    rl->queue = NULL;
    stop = rl->stop;
    pthread_mutex_unlock(&rl->mu);
    while (q) {
        struct sess *s = q;
        q = q->next;
        s->prev = NULL;
        s->next = rl->list;
        if (rl->list)
            rl->list->prev = s;
        rl->list = s;
        sess_step(rl, s, 0, false); /* the early bytes, and the interest */
    }
    return stop;
}

static void *relay_main(void *arg)
{
    struct sl_relay *rl = arg;
    struct epoll_event ev[64];
    int64_t last = sl_mono_ms();

    pthread_setname_np(pthread_self(), "relay");
    for (;;) {
        int n = epoll_wait(rl->epfd, ev, (int)SL_ARRAY_LEN(ev), TICK_MS);
        bool stop = false;

        for (int i = 0; i < n; i++) {
            struct end *e = ev[i].data.ptr;
            if ((void *)e == &tag_wake) {
                stop = take_new(rl);
                continue;
            }
            if (!e->s->dead)
                sess_step(rl, e->s, ev[i].events, e->shim);
        }
        if (!stop && sl_mono_ms() - last >= TICK_MS) {
            sweep(rl);
            last = sl_mono_ms();
        }
        /* Decrypted bytes no event announces: each step reads some (a
         * session is kicked only when a read returns at once), so this
         * ends; and it empties the list before the dead are freed. */
        while (rl->kick) {
            struct sess *s = rl->kick;
            rl->kick = s->kick_next;
            s->kicked = false;
            if (!s->dead)
                sess_step(rl, s, EPOLLIN, false);
        }
        while (rl->dead) {
            struct sess *s = rl->dead;
            rl->dead = s->next;
            free(s);
        }
        if (stop)
            break;
    }
    /* sluiced stops: each client is told, as far as its socket takes it
     * now; the shims see their clients leave and keep the sessions for
     * their grace (a client may attach again to the next sluiced). */
    for (struct sess *s = rl->list; s; s = s->next) {
        ws_close(s, SL_WS_CLOSE_GOING_AWAY, "sluiced is stopping");
        if (!s->lingering)
            ws_flush(s);
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------ */

struct sl_relay *sl_relay_create(void)
{
    struct sl_relay *rl = calloc(1, sizeof(*rl));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_wake};
    int e;

    if (!rl)
        return NULL;
    rl->epfd = rl->wake_fd = -1;
    pthread_mutex_init(&rl->mu, NULL);
    sl_imap_init(&rl->claims);
    if ((rl->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (rl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
        epoll_ctl(rl->epfd, EPOLL_CTL_ADD, rl->wake_fd, &ev) < 0 ||
        (errno = pthread_create(&rl->thread, NULL, relay_main, rl)) != 0) {
        e = errno;
        if (rl->epfd >= 0)
            close(rl->epfd);
        if (rl->wake_fd >= 0)
            close(rl->wake_fd);
        sl_imap_fini(&rl->claims);
        pthread_mutex_destroy(&rl->mu);
        free(rl);
        errno = e;
        return NULL;
    }
    return rl;
}

static void wake(struct sl_relay *rl)
{
    uint64_t one = 1;

    if (write(rl->wake_fd, &one, sizeof(one)) < 0) {
        /* saturated: a wake-up is pending */
    }
}

void sl_relay_destroy(struct sl_relay *rl)
{
    int saved = errno;

    if (!rl)
        return;
    pthread_mutex_lock(&rl->mu);
    rl->stop = true;
    pthread_mutex_unlock(&rl->mu);
    wake(rl);
    pthread_join(rl->thread, NULL);
    while (rl->queue) {
        struct sess *s = rl->queue;
        rl->queue = s->next;
        sess_free(rl, s);
    }
    while (rl->list) {
        struct sess *s = rl->list;
        rl->list = s->next;
        sess_free(rl, s);
    }
    close(rl->epfd);
    close(rl->wake_fd);
    sl_imap_fini(&rl->claims);
    pthread_mutex_destroy(&rl->mu);
    free(rl);
    errno = saved;
}

int sl_relay_add(struct sl_relay *rl, int64_t job_id, int ws_fd, struct ssl_st *ssl,
                 int shim_fd, const char *early, size_t nearly)
{
    struct sess *s = calloc(1, sizeof(*s));

    if (!s || nearly > WS_IN_CAP) {
        free(s);
        sl_tls_conn_free(ssl);
        close(ws_fd);
        close(shim_fd);
        sl_relay_unreserve(rl, job_id);
        return -ENOMEM;
    }
    s->job = job_id;
    s->ws = ws_fd;
    s->ssl = ssl;
    s->sh = shim_fd;
    s->ends[0] = (struct end){s, false};
    s->ends[1] = (struct end){s, true};
    s->chan = -1;
    s->rx_ms = s->ping_ms = sl_mono_ms();
    memcpy(s->ws_in, early, nearly);
    s->ws_in_len = nearly;
    pthread_mutex_lock(&rl->mu);
    s->next = rl->queue;
    rl->queue = s;
    pthread_mutex_unlock(&rl->mu);
    wake(rl);
    return 0;
}
