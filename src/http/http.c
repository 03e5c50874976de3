/*
 * http.c - the HTTP/1.1 server: one epoll thread, keep-alive, bounded
 * requests, and answers that may come later from another thread.
 *
 * Each connection holds at most one request in flight. The server reads a
 * request (its head judged by sl_http_parse_head, parse.c, each time a line
 * of it ends; a Content-Length body up to SL_HTTP_MAX_BODY), runs the
 * handler, and either sends the answer at once or leaves the request
 * suspended; another thread then fills the answer and calls
 * sl_http_resume, which queues the request for the server thread and wakes
 * it once per batch (an eventfd written only when the queue was empty). A suspended request costs no system call until its answer goes
 * out, which is why this server does not use libmicrohttpd: there every
 * suspend and resume costs three (see bench/README.md).
 *
 * Invariants:
 *  - Only the server thread touches connections and the sockets.
 *  - A suspended request is touched only by the thread that will answer
 *    it, until sl_http_resume hands it back.
 *  - A connection whose peer went away while its request was suspended is
 *    kept until the answer arrives, then freed.
 */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../util/util.h"

#define MAX_EXTRA_HEADERS 4
#define MAX_CONNS 1000
#define IDLE_TIMEOUT_MS 300000

enum phase { PH_HANDLING, PH_SUSPENDED, PH_ANSWERED };

struct conn;

struct sl_http_req {
    struct conn *c;
    char method[16];
    char path[1024];
    char *head;                   /* owned copy of the header block */
    const char *hname[SL_HTTP_MAX_FIELDS], *hvalue[SL_HTTP_MAX_FIELDS];
    int nheaders;
    char *query;                  /* owned, raw, without '?'; may be NULL */
    char **decoded;               /* owned decoded query values */
    int ndecoded;
    char *body;                   /* owned, NUL-terminated */
    size_t body_len;
    bool keep_alive;
    bool head_only;               /* HEAD: the answer goes without its body */
    enum phase phase;
    bool suspend_now;
    int status;
    char *resp;                   /* owned */
    size_t resp_len;
    const char *ctype;
    char xname[MAX_EXTRA_HEADERS][32];
    char xval[MAX_EXTRA_HEADERS][128];
    int nx;
    void *state;
    void (*state_free)(void *);
    struct sl_http_req *next;     /* resumed queue */
};

struct conn {
    struct sl_http *s;
    int fd;
    char *in;                     /* owned read buffer */
    size_t in_len, in_cap;
    size_t scan_off;              /* bytes of 'in' looked at for a line end */
    struct sl_http_req *rx;       /* owned: head parsed, body still coming */
    size_t rx_head, rx_need;      /* bytes of its head, of head and body */
    bool rx_continue;             /* it asked for 100 Continue */
    bool continue_sent;           /* 100 Continue sent for the current request */
    struct sl_http_req *req;      /* in flight (suspended), or NULL */
    char *out;                    /* owned unsent answer bytes */
    size_t out_len, out_off;
    bool close_after;             /* close once 'out' is sent */
    bool peer_gone;               /* the peer closed or failed */
    bool reading;                 /* EPOLLIN is in the interest set */
    bool lingering;               /* refused: write side shut, input drained
                                     until EOF so the peer reads the answer */
    int64_t active_ms;
    struct conn *prev, *next;     /* all connections */
};

struct sl_http {
    int lfd, epfd, wake_fd;
    sl_http_handler handler;
    void *arg;
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;           /* guards the resumed queue and the flags */
    struct sl_http_req *rhead, *rtail;
    bool stop, quiesce;
    struct conn *conns;
    int nconns;
};

/* epoll tags for the two non-connection descriptors */
static char tag_listen, tag_wake;

/* ---- request accessors ------------------------------------------------ */

const char *sl_http_method(const struct sl_http_req *r) { return r->method; }
const char *sl_http_path(const struct sl_http_req *r) { return r->path; }

const char *sl_http_header(const struct sl_http_req *r, const char *name)
{
    for (int i = 0; i < r->nheaders; i++)
        if (strcasecmp(r->hname[i], name) == 0)
            return r->hvalue[i];
    return NULL;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode s[0..n) ('+' is a space) into a new string. */
static char *url_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1), *o = out;

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
            hexval((unsigned char)s[i + 2]) >= 0) {
            *o++ = (char)(hexval((unsigned char)s[i + 1]) * 16 +
                          hexval((unsigned char)s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i] == '+' ? ' ' : s[i];
        }
    }
    *o = '\0';
    return out;
}

const char *sl_http_query(const struct sl_http_req *r, const char *name)
{
    struct sl_http_req *w = (struct sl_http_req *)r;
    size_t nlen = strlen(name);
    const char *p = r->query;

    while (p && *p) {
        const char *amp = strchr(p, '&'), *eq;
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        eq = memchr(p, '=', len);
        if ((size_t)((eq ? eq : p + len) - p) == nlen && strncmp(p, name, nlen) == 0) {
            char **nd;
            char *v = eq ? url_decode(eq + 1, len - (size_t)(eq + 1 - p))
                         : url_decode("", 0);
            if (!v || !(nd = realloc(w->decoded, (size_t)(w->ndecoded + 1) *
                                                     sizeof(*nd)))) {
                free(v);
                return NULL;
            }
            w->decoded = nd;
            w->decoded[w->ndecoded++] = v;
            return v;
        }
        p = amp ? amp + 1 : NULL;
    }
    return NULL;
}

const char *sl_http_body(const struct sl_http_req *r, size_t *len)
{
    *len = r->body_len;
    return r->body ? r->body : "";
}

void sl_http_set_state(struct sl_http_req *r, void *state, void (*free_fn)(void *))
{
    r->state = state;
    r->state_free = free_fn;
}

/* ---- answers ---------------------------------------------------------- */

void sl_http_add_header(struct sl_http_req *r, const char *name, const char *value)
{
    if (r->nx == MAX_EXTRA_HEADERS)
        return;
    sl_strlcpy(r->xname[r->nx], name, sizeof(r->xname[0]));
    sl_strlcpy(r->xval[r->nx], value, sizeof(r->xval[0]));
    r->nx++;
}

void sl_http_reply(struct sl_http_req *r, int status, const char *ctype,
                   const void *body, size_t len)
{
    free(r->resp);
    r->resp = malloc(len ? len : 1);
    if (r->resp) {
        memcpy(r->resp, body, len);
        r->resp_len = len;
        r->status = status;
        r->ctype = ctype;
    } else {
        r->resp_len = 0;
        r->status = 503;
        r->ctype = "application/json";
    }
    r->phase = PH_ANSWERED;
}

int sl_http_status(const struct sl_http_req *r)
{
    return r->phase == PH_ANSWERED ? r->status : 0;
}

void sl_http_reply_json(struct sl_http_req *r, int status, json_t *json)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    size_t len;

    json_decref(json);
    if (!text) {
        static const char oom[] =
            "{\"error\":{\"code\":\"unavailable\",\"message\":\"out of memory\"}}";
        sl_http_reply(r, 503, "application/json", oom, sizeof(oom) - 1);
        return;
    }
    len = strlen(text);
    text[len] = '\n'; /* replaces the NUL; we pass the length */
    sl_http_reply(r, status, "application/json", text, len + 1);
    free(text);
}

void sl_http_reply_error(struct sl_http_req *r, int status, const char *code,
                         const char *field, const char *fmt, ...)
{
    char msg[512], shown[512];
    va_list ap;
    json_t *err;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* A message may quote the request (a decoded query value): JSON wants
     * valid UTF-8, and an invalid byte must not turn a 400 into a 503. */
    sl_text_show(shown, sizeof(shown), msg, strlen(msg), sizeof(shown) - 1);
    err = json_pack("{s:s, s:s}", "code", code, "message", shown);
    if (err && field && *field)
        json_object_set_new(err, "field", json_string(field));
    sl_http_reply_json(r, status, err ? json_pack("{s:o}", "error", err) : NULL);
}

void sl_http_suspend(struct sl_http_req *r)
{
    r->phase = PH_SUSPENDED;
    r->suspend_now = true;
}

static void wake(struct sl_http *s);

void sl_http_resume(struct sl_http_req *r)
{
    struct sl_http *s = r->c->s;
    bool first;

    r->next = NULL;
    pthread_mutex_lock(&s->mu);
    first = !s->rhead; /* one wake-up per batch of answers */
    if (s->rtail)
        s->rtail->next = r;
    else
        s->rhead = r;
    s->rtail = r;
    pthread_mutex_unlock(&s->mu);
    if (first)
        wake(s);
}

/* ---- connections ------------------------------------------------------ */

static void req_free(struct sl_http_req *r)
{
    if (!r)
        return;
    if (r->state_free)
        r->state_free(r->state);
    for (int i = 0; i < r->ndecoded; i++)
        free(r->decoded[i]);
    free(r->decoded);
    free(r->head);
    free(r->query);
    free(r->body);
    free(r->resp);
    free(r);
}

static void conn_close(struct sl_http *s, struct conn *c)
{
    if (c->req) {
        /* Suspended: its answer is still to come; free the connection when
         * it does (see resumed()). */
        c->peer_gone = true;
        if (c->fd >= 0) {
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
            c->fd = -1;
        }
        return;
    }
    if (c->fd >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    req_free(c->rx);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    free(c->in);
    free(c->out);
    free(c);
}

static void conn_events(struct sl_http *s, struct conn *c, bool reading, bool writing)
{
    struct epoll_event ev = {.events = (reading ? EPOLLIN | EPOLLRDHUP : 0) |
                                       (writing ? EPOLLOUT : 0),
                             .data.ptr = c};
    c->reading = reading;
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Send what is pending; false when the connection had to be closed. */
static bool conn_flush(struct sl_http *s, struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                conn_events(s, c, false, true);
                return true;
            }
            conn_close(s, c);
            return false;
        }
        c->out_off += (size_t)n;
    }
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
    if (c->close_after && c->lingering) {
        /* Let the peer finish sending and read our answer before the
         * close, rather than meet a reset. */
        shutdown(c->fd, SHUT_WR);
        c->active_ms = sl_mono_ms();
        conn_events(s, c, true, false);
        return false;
    }
    if (c->close_after) {
        conn_close(s, c);
        return false;
    }
    if (!c->reading)
        conn_events(s, c, true, false);
    return true;
}

static const char *reason_phrase(int status)
{
    static const struct {
        int status;
        const char *text;
    } phrases[] = {
        /* status, reason phrase */
        {200, "OK"}, {201, "Created"}, {202, "Accepted"}, {204, "No Content"},
        {400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"},
        {404, "Not Found"}, {405, "Method Not Allowed"}, {408, "Request Timeout"},
        {409, "Conflict"}, {411, "Length Required"}, {413, "Content Too Large"},
        {414, "URI Too Long"}, {415, "Unsupported Media Type"}, {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"}, {500, "Internal Server Error"},
        {501, "Not Implemented"}, {503, "Service Unavailable"},
        {505, "HTTP Version Not Supported"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(phrases); i++)
        if (phrases[i].status == status)
            return phrases[i].text;
    return "Status";
}

/* Queue r's answer on c (frees r) and try to send it. */
static bool conn_answer(struct sl_http *s, struct conn *c, struct sl_http_req *r)
{
    char head[1024];
    size_t n, total;
    char *out;

    if (!r->keep_alive)
        c->close_after = true;
    n = (size_t)snprintf(head, sizeof(head),
                         "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s",
                         r->status, reason_phrase(r->status),
                         r->ctype ? r->ctype : "application/json", r->resp_len,
                         c->close_after ? "Connection: close\r\n" : "");
    for (int i = 0; i < r->nx && n < sizeof(head); i++)
        n += (size_t)snprintf(head + n, sizeof(head) - n, "%s: %s\r\n", r->xname[i],
                              r->xval[i]);
    if (n + 2 >= sizeof(head)) {
        req_free(r);
        conn_close(s, c);
        return false;
    }
    memcpy(head + n, "\r\n", 2);
    n += 2;
    if (r->head_only)
        r->resp_len = 0; /* RFC 9110 9.3.2: the headers of a GET, no body */
    total = n + r->resp_len;
    /* A 100 Continue may still be unsent ahead of this; append. */
    if (!(out = realloc(c->out, c->out_len + total))) {
        req_free(r);
        conn_close(s, c);
        return false;
    }
    c->out = out;
    memcpy(c->out + c->out_len, head, n);
    if (r->resp_len)
        memcpy(c->out + c->out_len + n, r->resp, r->resp_len);
    c->out_len += total;
    req_free(r);
    return conn_flush(s, c);
}

/* Answer a request that never reached the handler, then close. */
static void conn_refuse(struct sl_http *s, struct conn *c, int status,
                        const char *code, const char *msg)
{
    struct sl_http_req *r = calloc(1, sizeof(*r));
    if (!r) {
        conn_close(s, c);
        return;
    }
    r->keep_alive = false;
    sl_http_reply_error(r, status, code, NULL, "%s", msg);
    req_free(c->rx);
    c->rx = NULL;
    c->in_len = 0;
    c->lingering = true;
    conn_answer(s, c, r);
}

/* The error code of a refusal by the server itself. */
static const char *refusal_code(int status)
{
    return status == 413 || status == 414 || status == 431 ? "too_large" : "invalid";
}

/* The request of a parsed head at the start of c->in: its own copy of the
 * head, with names and values NUL-terminated in place. NULL on ENOMEM. */
static struct sl_http_req *req_from_head(struct conn *c, const struct sl_http_head *h)
{
    struct sl_http_req *r = calloc(1, sizeof(*r));
    const char *t, *q;
    size_t plen;

    if (!r || !(r->head = malloc(h->head_len + 1))) {
        free(r);
        return NULL;
    }
    r->c = c;
    memcpy(r->head, c->in, h->head_len);
    r->head[h->head_len] = '\0';
    /* The parser bounds the method and the target by these buffers. */
    memcpy(r->method, r->head + h->method.off, h->method.len);
    r->method[h->method.len] = '\0';
    t = r->head + h->target.off;
    q = memchr(t, '?', h->target.len);
    plen = q ? (size_t)(q - t) : h->target.len;
    memcpy(r->path, t, plen);
    r->path[plen] = '\0';
    if (q && !(r->query = strndup(q + 1, h->target.len - plen - 1))) {
        req_free(r);
        return NULL;
    }
    for (int i = 0; i < h->nfields; i++) {
        /* Each name ends at its colon, each value at OWS or CR: writing
         * the terminators never touches another field. */
        r->head[h->name[i].off + h->name[i].len] = '\0';
        r->head[h->value[i].off + h->value[i].len] = '\0';
        r->hname[i] = r->head + h->name[i].off;
        r->hvalue[i] = r->head + h->value[i].off;
    }
    r->nheaders = h->nfields;
    r->keep_alive = h->keep_alive;
    r->head_only = strcmp(r->method, "HEAD") == 0;
    return r;
}

/* Parse and run every complete request in c->in. Returns false when the
 * connection was closed. */
static bool conn_process(struct sl_http *s, struct conn *c)
{
    _Static_assert(SL_HTTP_MAX_METHOD < sizeof(((struct sl_http_req *)0)->method) &&
                       SL_HTTP_MAX_TARGET < sizeof(((struct sl_http_req *)0)->path),
                   "a parsed method and target fit the request's buffers");
    while (!c->req && c->in_len > 0) {
        struct sl_http_req *r;
        size_t clen;

        if (!c->rx) {
            struct sl_http_head h;
            struct sl_http_refusal why;
            int rc;

            /* The parser judges whole lines: try again only once one has
             * ended (or the cap is reached), so a head that trickles in
             * costs one parse per line, not one per byte. */
            if (c->in_len < SL_HTTP_MAX_HEAD &&
                !memchr(c->in + c->scan_off, '\n', c->in_len - c->scan_off)) {
                c->scan_off = c->in_len;
                return true;
            }
            rc = sl_http_parse_head(c->in, c->in_len, &h, &why);
            if (rc == -EAGAIN) {
                c->scan_off = c->in_len;
                return true;
            }
            if (rc < 0) {
                conn_refuse(s, c, why.status, refusal_code(why.status), why.text);
                return false;
            }
            if (!(c->rx = req_from_head(c, &h))) {
                conn_close(s, c);
                return false;
            }
            c->rx_head = h.head_len;
            c->rx_need = h.head_len + (size_t)(h.content_length > 0 ? h.content_length : 0);
            c->rx_continue = h.expect_continue;
        }
        r = c->rx;
        if (c->in_len < c->rx_need) {
            /* The body is still coming. */
            if (c->rx_continue && !c->continue_sent) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                char *out = realloc(c->out, c->out_len + sizeof(cont) - 1);
                if (out) {
                    c->out = out;
                    memcpy(c->out + c->out_len, cont, sizeof(cont) - 1);
                    c->out_len += sizeof(cont) - 1;
                    c->continue_sent = true;
                    return conn_flush(s, c);
                }
            }
            return true;
        }
        clen = c->rx_need - c->rx_head;
        if (!(r->body = malloc(clen + 1))) {
            conn_close(s, c);
            return false;
        }
        memcpy(r->body, c->in + c->rx_head, clen);
        r->body[clen] = '\0';
        r->body_len = clen;
        /* the head stays in r->head; drop the request from c->in */
        memmove(c->in, c->in + c->rx_need, c->in_len - c->rx_need);
        c->in_len -= c->rx_need;
        c->rx = NULL;
        c->scan_off = 0;
        c->continue_sent = false;

        r->phase = PH_HANDLING;
        s->handler(r, s->arg);
        if (r->suspend_now) {
            c->req = r;
            return true;
        }
        if (r->phase != PH_ANSWERED)
            sl_http_reply_error(r, 500, "internal", NULL, "no answer");
        if (!conn_answer(s, c, r))
            return false;
    }
    return true;
}

static void conn_read(struct sl_http *s, struct conn *c)
{
    if (c->lingering) {
        char sink[4096];
        ssize_t n;
        while ((n = recv(c->fd, sink, sizeof(sink), 0)) > 0)
            ;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            conn_close(s, c);
        return;
    }
    for (;;) {
        size_t room;
        ssize_t n;
        if (c->in_len + 1 >= c->in_cap) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 4096;
            char *ni;
            if (c->in_cap >= SL_HTTP_MAX_HEAD + SL_HTTP_MAX_BODY + 2) {
                if (c->req) {
                    conn_events(s, c, false, c->out_len > 0); /* pause */
                    return;
                }
                conn_refuse(s, c, 413, "too_large", "request too large");
                return;
            }
            if (!(ni = realloc(c->in, cap))) {
                conn_close(s, c);
                return;
            }
            c->in = ni;
            c->in_cap = cap;
        }
        room = c->in_cap - c->in_len - 1;
        n = recv(c->fd, c->in + c->in_len, room, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            conn_close(s, c);
            return;
        }
        c->in_len += (size_t)n;
        c->active_ms = sl_mono_ms();
        if ((size_t)n < room)
            break; /* a short read: the socket is drained for now */
    }
    if (c->req) {
        /* A request is in flight: keep what came, read no more for now. */
        conn_events(s, c, false, c->out_len > c->out_off);
        return;
    }
    conn_process(s, c);
}

static void conn_accept(struct sl_http *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
        struct conn *c;
        struct epoll_event ev;

        if (fd < 0)
            return;
        if (s->nconns >= MAX_CONNS || !(c = calloc(1, sizeof(*c)))) {
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->s = s;
        c->fd = fd;
        c->reading = true;
        c->active_ms = sl_mono_ms();
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.ptr = c;
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            free(c);
            continue;
        }
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
    }
}

/* Answers that other threads finished: send them. */
static void resumed(struct sl_http *s)
{
    struct sl_http_req *r;
    uint64_t cnt;

    if (read(s->wake_fd, &cnt, sizeof(cnt)) < 0) {
        /* nothing to drain */
    }
    pthread_mutex_lock(&s->mu);
    r = s->rhead;
    s->rhead = s->rtail = NULL;
    pthread_mutex_unlock(&s->mu);
    while (r) {
        struct sl_http_req *next = r->next;
        struct conn *c = r->c;
        c->req = NULL;
        if (c->peer_gone) {
            req_free(r);
            conn_close(s, c);
        } else if (conn_answer(s, c, r) && c->in_len) {
            conn_process(s, c); /* a request arrived meanwhile */
        }
        r = next;
    }
}

static void sweep_idle(struct sl_http *s)
{
    int64_t now = sl_mono_ms();
    struct conn *c = s->conns;
    while (c) {
        struct conn *next = c->next;
        if (!c->req && now - c->active_ms > (c->lingering ? 5000 : IDLE_TIMEOUT_MS))
            conn_close(s, c);
        c = next;
    }
}

static void *server_main(void *arg)
{
    struct sl_http *s = arg;
    struct epoll_event ev[64];
    int64_t last_sweep = sl_mono_ms();

    pthread_setname_np(pthread_self(), "http");
    for (;;) {
        bool stop, quiesce;
        int n = epoll_wait(s->epfd, ev, (int)SL_ARRAY_LEN(ev), 1000);

        for (int i = 0; i < n; i++) {
            void *p = ev[i].data.ptr;
            if (p == &tag_listen) {
                conn_accept(s);
            } else if (p == &tag_wake) {
                resumed(s);
            } else {
                struct conn *c = p;
                if (ev[i].events & EPOLLOUT) {
                    if (!conn_flush(s, c))
                        continue;
                }
                if (ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    conn_read(s, c);
            }
        }
        pthread_mutex_lock(&s->mu);
        stop = s->stop;
        quiesce = s->quiesce;
        pthread_mutex_unlock(&s->mu);
        if (quiesce && s->lfd >= 0) {
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
            close(s->lfd);
            s->lfd = -1;
        }
        if (stop) {
            resumed(s); /* the last answers, best effort */
            break;
        }
        if (sl_mono_ms() - last_sweep > 1000) {
            sweep_idle(s);
            last_sweep = sl_mono_ms();
        }
    }
    return NULL;
}

/* ---- lifecycle -------------------------------------------------------- */

static int parse_listen(const char *listen, struct sockaddr_storage *ss,
                        socklen_t *sslen, char *why, size_t why_size)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    int64_t port;

    memset(ss, 0, sizeof(*ss));
    if (!colon || (size_t)(colon - listen) >= sizeof(host) ||
        sl_parse_int64(colon + 1, 1, 65535, &port) < 0) {
        snprintf(why, why_size, "--listen: expected HOST:PORT, got '%s'", listen);
        return -EINVAL;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    if (host[0] == '[') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        size_t n = strlen(host);
        if (n < 2 || host[n - 1] != ']') {
            snprintf(why, why_size, "--listen: bad IPv6 address in '%s'", listen);
            return -EINVAL;
        }
        host[n - 1] = '\0';
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1) {
            snprintf(why, why_size, "--listen: bad IPv6 address in '%s'", listen);
            return -EINVAL;
        }
        *sslen = sizeof(*a6);
        return AF_INET6;
    }
    {
        struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0)
            a4->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (strcmp(host, "localhost") == 0)
            a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) {
            snprintf(why, why_size, "--listen: bad IPv4 address in '%s'", listen);
            return -EINVAL;
        }
        *sslen = sizeof(*a4);
    }
    return AF_INET;
}

struct sl_http *sl_http_start(const char *addr, sl_http_handler h, void *arg,
                              char *why, size_t why_size)
{
    struct sl_http *s = NULL;
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    struct epoll_event ev;
    int family = parse_listen(addr, &ss, &sslen, why, why_size), one = 1, saved;

    if (family < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    s->handler = h;
    s->arg = arg;
    s->lfd = s->epfd = s->wake_fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    if ((s->lfd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
        setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(s->lfd, (struct sockaddr *)&ss, sslen) < 0 || listen(s->lfd, 1024) < 0) {
        saved = errno;
        snprintf(why, why_size, "cannot listen on %s: %s", addr, strerror(saved));
        goto fail;
    }
    if ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        saved = errno;
        snprintf(why, why_size, "epoll: %s", strerror(saved));
        goto fail;
    }
    ev.events = EPOLLIN;
    ev.data.ptr = &tag_listen;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev);
    ev.data.ptr = &tag_wake;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake_fd, &ev);
    if ((saved = pthread_create(&s->thread, NULL, server_main, s)) != 0) {
        snprintf(why, why_size, "cannot start the HTTP thread: %s", strerror(saved));
        goto fail;
    }
    s->running = true;
    return s;
fail:
    sl_http_stop(s);
    errno = saved;
    return NULL;
}

static void wake(struct sl_http *s)
{
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof(one)) < 0) {
        /* saturated: a wake-up is pending */
    }
}

void sl_http_quiesce(struct sl_http *s)
{
    if (!s || !s->running)
        return;
    pthread_mutex_lock(&s->mu);
    s->quiesce = true;
    pthread_mutex_unlock(&s->mu);
    wake(s);
}

void sl_http_stop(struct sl_http *s)
{
    if (!s)
        return;
    if (s->running) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_mutex_unlock(&s->mu);
        wake(s);
        pthread_join(s->thread, NULL);
    }
    while (s->conns) {
        struct conn *c = s->conns;
        req_free(c->req);
        c->req = NULL;
        conn_close(s, c);
    }
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
