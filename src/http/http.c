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
 * Limits (struct sl_http_config): each connection has one deadline at a
 * time, from the state it is in - a new connection's first head from the
 * accept, a later head from its first byte, a body from the end of its
 * head, an answer from the last byte the peer took, a kept-alive
 * connection from its last answer; a byte that arrives never moves a
 * deadline. A sweep every SWEEP_MS closes what is past its deadline (408
 * where a request was under way). Connections are counted per peer (an
 * IPv4 address, an IPv6 /64) in an open-addressing table sized for the
 * table of connections, so it never fills; a peer at its limit gets 429
 * at the accept. When the table of connections is full, or the process is
 * out of descriptors, the least recently active idle connection (no
 * request at the handler, nothing left to send; a request still arriving
 * counts as idle since its last byte) is closed to make room: an LRU list
 * of exactly those makes it O(1). With none idle the new one gets 503.
 * Out of descriptors with none to close, a spare descriptor is given up
 * to accept and shed the connection, and accepting pauses briefly rather
 * than spin on a listening socket that stays readable.
 *
 * TLS (cfg.tls; tls.c): each accepted socket gets a non-blocking SSL and
 * every read and write goes through conn_recv and conn_send. A read that
 * needs the socket writable (the handshake) or a write that needs it
 * readable sets the connection's epoll interest to what it waits for
 * (conn_events); decrypted bytes epoll cannot report are read after the
 * batch (kick). The handshake runs under the header deadline of a new
 * connection; refusals at the accept close without an answer (there is no
 * session to carry one). A 101 hands the socket over with its SSL (and
 * the SSL's reference to its context, which a reload leaves alone): the
 * taker frees it, this file no longer touches it.
 *
 * Validators: a request the handler marked (sl_http_use_etag) whose answer
 * is a 200 to a GET or HEAD gets an ETag of its body, computed where the
 * answer is set (sl_http_reply, on whichever thread answers), and becomes
 * a 304 without a body when its If-None-Match (parse.c) matches.
 *
 * Invariants:
 *  - Only the server thread touches connections and the sockets.
 *  - A suspended request is touched only by the thread that will answer
 *    it, until sl_http_resume hands it back.
 *  - A connection whose peer went away while its request was suspended is
 *    kept until the answer arrives, then freed.
 *  - A closed connection is freed only after the batch of events in hand,
 *    which may still name it (conns_reap).
 *  - A connection is on the LRU list exactly when it is idle (lru_set).
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <sodium.h>

#include "../util/jfield.h"
#include "../util/util.h"
#include "tls.h"

#define MAX_EXTRA_HEADERS 4
#define LINGER_MS 5000        /* a refused connection drains its input so long */
#define SWEEP_MS 500          /* deadlines are checked this often */
#define ACCEPT_PAUSE_MS 100   /* out of descriptors: accept again after this */

enum phase { PH_HANDLING, PH_SUSPENDED, PH_ANSWERED };

struct conn;

struct sl_http_req {
    struct conn *c;
    char method[16];
    char path[1024];
    char *head;                   /* owned copy of the header block */
    size_t head_len;              /* its bytes (NULs inside, see req_from_head) */
    const char *hname[SL_HTTP_MAX_FIELDS], *hvalue[SL_HTTP_MAX_FIELDS];
    int nheaders;
    char *query;                  /* owned, decoded in place; may be NULL */
    size_t target_off, target_len; /* the target as sent, in 'head' */
    struct sl_http_param params[SL_HTTP_MAX_PARAMS]; /* into query */
    int nparams;
    char *body;                   /* owned, NUL-terminated */
    size_t body_len;
    bool keep_alive;
    bool head_only;               /* HEAD: the answer goes without its body */
    bool use_etag;                /* sl_http_use_etag */
    char etag[40];                /* the answer's ETag ("\"hex\""), or "" */
    enum phase phase;
    bool suspend_now;
    int status;
    char *resp;                   /* owned */
    size_t resp_len;
    const char *ctype;
    char xname[MAX_EXTRA_HEADERS][32];
    char xval[MAX_EXTRA_HEADERS][128];
    int nx;
    const char *xlines;           /* static header lines, sent after those */
    void *state;
    void (*state_free)(void *);
    sl_http_takeover takeover;    /* a 101: who gets the connection */
    void *takeover_arg;
    char upgrade[32];             /* its Upgrade header */
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
    bool served;                  /* has had an answer: no longer new */
    bool dead;                    /* closed; freed after this batch */
    bool in_lru;                  /* on the idle list */
    sl_http_takeover takeover;    /* a 101 is being sent: hand over once
                                     it is, read nothing more as HTTP */
    void *takeover_arg;
    bool counted;                 /* counted in s->peers under peer_key */
    bool peer_v6;
    uint64_t peer_key;            /* see peer_key() */
    int64_t head_ms;              /* the pending head began (the accept, for
                                     a new connection); sl_mono_ms() */
    int64_t body_ms;              /* rx's head was complete */
    int64_t sent_ms;              /* the peer last took answer bytes */
    int64_t idle_ms;              /* the last answer was queued */
    int64_t linger_ms;            /* the refusal that started lingering */
    struct conn *prev, *next;     /* all connections; 'next' links the dead */
    struct conn *lru_prev, *lru_next; /* idle ones, least recently active first */
    struct ssl_st *ssl;           /* owned; NULL on plain HTTP */
    bool tls_known;               /* handshake done, peer_user looked at */
    bool tls_rd_wants_write;      /* the last SSL_read needs the socket
                                     writable (handshake) */
    bool tls_wr_wants_read;       /* the last SSL_write needs it readable */
    bool kicked;                  /* on s->kick */
    struct conn *kick_next;
    char peer_user[64];           /* a verified client certificate's CN */
};

/* Connections of one peer. n == 0 marks a free slot. */
struct peer {
    uint64_t key;                 /* IPv4 address, or the IPv6 /64 prefix */
    uint32_t n;                   /* its connections */
    bool v6;
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
    struct sl_http_config cfg;    /* limits in force (max_conns fitted) */
    struct conn *conns;
    int nconns;
    struct conn *dead;            /* closed, freed at the end of the batch */
    struct conn *lru_head, *lru_tail; /* idle connections, oldest first */
    struct peer *peers;           /* owned; npeers slots, a power of two */
    size_t npeers;
    uint64_t seed;                /* of the peer hash */
    unsigned char etag_key[crypto_shorthash_siphashx24_KEYBYTES]; /* drawn at
                                     start: the ETags' hash is keyed */
    int spare_fd;                 /* /dev/null, given up when out of fds */
    int64_t accept_paused_until;  /* 0, or when to listen again */
    int64_t fd_warned_ms;         /* last "out of descriptors" warning */
    struct conn *kick;            /* TLS connections with decrypted bytes
                                     that epoll cannot report: read them
                                     after the batch */
};

/* epoll tags for the two non-connection descriptors */
static char tag_listen, tag_wake;

/* ---- request accessors ------------------------------------------------ */

const char *sl_http_method(const struct sl_http_req *r) { return r->method; }
const char *sl_http_path(const struct sl_http_req *r) { return r->path; }
uint64_t sl_http_peer(const struct sl_http_req *r)
{
    return r->c->peer_key ^ ((uint64_t)r->c->peer_v6 << 63);
}

const char *sl_http_target(const struct sl_http_req *r, size_t *len)
{
    *len = r->target_len;
    return r->head + r->target_off;
}

const char *sl_http_header(const struct sl_http_req *r, const char *name)
{
    for (int i = 0; i < r->nheaders; i++)
        if (strcasecmp(r->hname[i], name) == 0)
            return r->hvalue[i];
    return NULL;
}

const char *sl_http_query(const struct sl_http_req *r, const char *name)
{
    for (int i = 0; i < r->nparams; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return r->params[i].value;
    return NULL;
}

const char *sl_http_body(const struct sl_http_req *r, size_t *len)
{
    *len = r->body_len;
    return r->body ? r->body : "";
}

const char *sl_http_peer_user(const struct sl_http_req *r)
{
    /* Set once at the handshake, before any request: safe to read from the
     * thread that holds the request. */
    return r->c && r->c->peer_user[0] ? r->c->peer_user : NULL;
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

void sl_http_add_header_lines(struct sl_http_req *r, const char *lines)
{
    r->xlines = lines;
}

void sl_http_use_etag(struct sl_http_req *r)
{
    r->use_etag = true;
}

bool sl_http_none_match(const struct sl_http_req *r, const char *opaque)
{
    int lines = 0, star = 0, match = 0;

    for (int i = 0; i < r->nheaders; i++) {
        int rc;
        if (strcasecmp(r->hname[i], "If-None-Match") != 0)
            continue;
        lines++;
        if ((rc = sl_http_etag_match(r->hvalue[i], opaque)) < 0)
            return false;
        star |= rc == 2;
        match |= rc == 1;
    }
    return star ? lines == 1 : match;
}

/* A 200 to a GET or HEAD that asked for it: its ETag, and 304 when the
 * request already has it. The tag is SipHash-2-4 with 128-bit output under
 * the server's own key: a PRF, so that no one can make two bodies share a
 * tag, at 2.5 times BLAKE2b's speed (21 against 53 us for a page of 50
 * jobs, 47 KB, here); a restart draws a new key, and every tag changes
 * once. */
static void etag_answer(struct sl_http_req *r)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char h[crypto_shorthash_siphashx24_BYTES];
    char opaque[2 * sizeof(h) + 1];

    if (!r->use_etag || r->status != 200 ||
        (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0))
        return;
    crypto_shorthash_siphashx24(h, (const unsigned char *)r->resp, r->resp_len,
                                r->c->s->etag_key);
    for (size_t i = 0; i < sizeof(h); i++) {
        opaque[2 * i] = hex[h[i] >> 4];
        opaque[2 * i + 1] = hex[h[i] & 15];
    }
    opaque[2 * sizeof(h)] = '\0';
    _Static_assert(sizeof(opaque) + 2 <= sizeof(((struct sl_http_req *)0)->etag),
                   "the tag and its quotes fit");
    snprintf(r->etag, sizeof(r->etag), "\"%s\"", opaque);
    if (sl_http_none_match(r, opaque)) {
        r->status = 304;
        r->resp_len = 0;
    }
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
    r->etag[0] = '\0';
    etag_answer(r);
    r->phase = PH_ANSWERED;
}

int sl_http_status(const struct sl_http_req *r)
{
    return r->phase == PH_ANSWERED ? r->status : 0;
}

/* How every JSON answer is written: reals in 15 significant digits
 * (0.2625, not 0.26250000000000001). */
#define JSON_ANSWER_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

json_t *sl_http_json_as_sent(const json_t *json)
{
    char *text = json_dumps(json, JSON_ANSWER_FLAGS);
    json_t *v = text ? sl_jf_loadb(text, strlen(text), 0, NULL) : NULL;

    free(text);
    if (!v)
        errno = ENOMEM;
    return v;
}

void sl_http_reply_json(struct sl_http_req *r, int status, json_t *json)
{
    char *text = json ? json_dumps(json, JSON_ANSWER_FLAGS) : NULL;
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

void sl_http_upgrade(struct sl_http_req *r, const char *protocol, sl_http_takeover fn,
                     void *arg)
{
    free(r->resp);
    r->resp = NULL;
    r->resp_len = 0;
    r->status = 101;
    r->ctype = NULL;
    sl_strlcpy(r->upgrade, protocol, sizeof(r->upgrade));
    r->takeover = fn;
    r->takeover_arg = arg;
    r->phase = PH_ANSWERED;
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
    if (r->takeover)
        r->takeover(-1, NULL, NULL, 0, r->takeover_arg); /* its 101 never went out */
    if (r->state_free)
        r->state_free(r->state);
    /* a head may carry a token and a body a password (POST /v1/login):
     * neither outlives the request in freed memory */
    if (r->head)
        sodium_memzero(r->head, r->head_len);
    if (r->body)
        sodium_memzero(r->body, r->body_len);
    free(r->head);
    free(r->query);
    free(r->body);
    free(r->resp);
    free(r);
}

/* ---- peers: connections per address ----------------------------------- */

static size_t peer_hash(const struct sl_http *s, uint64_t key, bool v6)
{
    /* splitmix64 of a seeded key: a peer cannot choose addresses that
     * collide. */
    uint64_t z = key ^ s->seed ^ (v6 ? 0x9e3779b97f4a7c15ULL : 0);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (size_t)(z ^ (z >> 31)) & (s->npeers - 1);
}

/* The peer's key: an IPv4 address (also mapped into IPv6), or the /64 an
 * IPv6 host is usually given whole. False for another family. */
static bool peer_key(const struct sockaddr_storage *ss, uint64_t *key, bool *v6)
{
    if (ss->ss_family == AF_INET) {
        *key = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
        *v6 = false;
        return true;
    }
    if (ss->ss_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
        uint64_t k = 0;
        if (IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr)) {
            *key = (uint64_t)a[12] << 24 | (uint64_t)a[13] << 16 |
                   (uint64_t)a[14] << 8 | a[15];
            *v6 = false;
            return true;
        }
        for (int i = 0; i < 8; i++)
            k = k << 8 | a[i];
        *key = k;
        *v6 = true;
        return true;
    }
    return false;
}

/* The slot of the peer, or of the free slot where it would go. The table
 * has twice the slots of max_conns, and a slot is taken only by a peer
 * with a connection, so a free one is always found. */
static size_t peer_slot(const struct sl_http *s, uint64_t key, bool v6)
{
    size_t i = peer_hash(s, key, v6);

    while (s->peers[i].n && !(s->peers[i].key == key && s->peers[i].v6 == v6))
        i = (i + 1) & (s->npeers - 1);
    return i;
}

/* One connection fewer for the peer of c; a peer without any leaves the
 * table (backward-shift deletion: no tombstones to pile up). */
static void peer_release(struct sl_http *s, struct conn *c)
{
    size_t i, j, mask = s->npeers - 1;

    if (!c->counted)
        return;
    c->counted = false;
    i = peer_slot(s, c->peer_key, c->peer_v6);
    if (--s->peers[i].n)
        return;
    for (j = i;;) {
        size_t home;
        j = (j + 1) & mask;
        if (!s->peers[j].n)
            break;
        home = peer_hash(s, s->peers[j].key, s->peers[j].v6);
        /* The entry at j stays when its home lies cyclically in (i, j]. */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        s->peers[i] = s->peers[j];
        s->peers[j].n = 0;
        i = j;
    }
}

/* ---- the idle list ------------------------------------------------------ */

static void lru_unlink(struct sl_http *s, struct conn *c)
{
    if (!c->in_lru)
        return;
    if (c->lru_prev)
        c->lru_prev->lru_next = c->lru_next;
    else
        s->lru_head = c->lru_next;
    if (c->lru_next)
        c->lru_next->lru_prev = c->lru_prev;
    else
        s->lru_tail = c->lru_prev;
    c->lru_prev = c->lru_next = NULL;
    c->in_lru = false;
}

/* After activity or a change of state: an idle connection goes to the
 * young end of the list, any other leaves it. */
static void lru_set(struct sl_http *s, struct conn *c)
{
    lru_unlink(s, c);
    if (c->req || c->out_off < c->out_len || c->fd < 0 || c->dead)
        return;
    c->lru_prev = s->lru_tail;
    if (s->lru_tail)
        s->lru_tail->lru_next = c;
    else
        s->lru_head = c;
    s->lru_tail = c;
    c->in_lru = true;
}

static void conn_close(struct sl_http *s, struct conn *c)
{
    lru_unlink(s, c);
    if (c->req) {
        /* Suspended: its answer is still to come; free the connection when
         * it does (see resumed()). */
        c->peer_gone = true;
        if (c->fd >= 0) {
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
            sl_tls_conn_free(c->ssl);
            c->ssl = NULL;
            close(c->fd);
            c->fd = -1;
        }
        return;
    }
    if (c->dead)
        return;
    sl_tls_conn_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    if (c->takeover) {
        /* The 101 never went out: the taker's state is its own again. */
        c->takeover(-1, NULL, NULL, 0, c->takeover_arg);
        c->takeover = NULL;
    }
    peer_release(s, c);
    req_free(c->rx);
    c->rx = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    /* Events of this batch may still name it: free it after the batch. */
    c->dead = true;
    c->next = s->dead;
    s->dead = c;
}

/* Free the connections closed during the batch of events just handled. */
static void conns_reap(struct sl_http *s)
{
    while (s->dead) {
        struct conn *c = s->dead;
        s->dead = c->next;
        free(c->in);
        free(c->out);
        free(c);
    }
}

/* The interest set for reading and/or writing. Over TLS a write may need
 * the socket readable and a read writable (the handshake): epoll is asked
 * for what the record layer waits for. */
static void conn_events(struct sl_http *s, struct conn *c, bool reading, bool writing)
{
    struct epoll_event ev = {.events = (reading ? EPOLLIN | EPOLLRDHUP : 0) |
                                       (writing ? EPOLLOUT : 0),
                             .data.ptr = c};
    if (writing && c->tls_wr_wants_read)
        ev.events = (ev.events & ~(uint32_t)EPOLLOUT) | EPOLLIN | EPOLLRDHUP;
    if (reading && c->tls_rd_wants_write)
        ev.events |= EPOLLOUT;
    c->reading = reading;
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Read from the connection, through TLS when it has it: bytes, 0 at the
 * peer's close, -EAGAIN when nothing more can come now, -EINTR, or -EIO. */
static ssize_t conn_recv(struct conn *c, void *buf, size_t len)
{
    ssize_t n;

    if (!c->ssl) {
        n = recv(c->fd, buf, len, 0);
        if (n >= 0)
            return n;
        return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN
               : errno == EINTR                       ? -EINTR
                                                      : -EIO;
    }
    c->tls_rd_wants_write = false;
    n = sl_tls_read(c->ssl, buf, len);
    if (!c->tls_known && sl_tls_ready(c->ssl)) {
        c->tls_known = true;
        sl_tls_peer_user(c->ssl, c->peer_user, sizeof(c->peer_user));
    }
    if (n >= 0)
        return n;
    if (n == SL_TLS_WANT_WRITE)
        c->tls_rd_wants_write = true;
    return n == SL_TLS_FAILED ? -EIO : -EAGAIN;
}

/* Write to the connection as conn_recv reads: bytes taken, -EAGAIN, -EINTR
 * or -EIO. */
static ssize_t conn_send(struct conn *c, const void *buf, size_t len)
{
    ssize_t n;

    if (!c->ssl) {
        n = send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n >= 0)
            return n;
        return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN
               : errno == EINTR                       ? -EINTR
                                                      : -EIO;
    }
    c->tls_wr_wants_read = false;
    n = sl_tls_write(c->ssl, buf, len);
    if (n >= 0)
        return n;
    if (n == SL_TLS_WANT_READ)
        c->tls_wr_wants_read = true;
    return n == SL_TLS_FAILED ? -EIO : -EAGAIN;
}

/* Read c again after this batch: TLS bytes wait inside it that no epoll
 * event will announce. */
static void kick(struct sl_http *s, struct conn *c)
{
    if (c->kicked || !c->ssl || !sl_tls_pending(c->ssl))
        return;
    c->kicked = true;
    c->kick_next = s->kick;
    s->kick = c;
}

/* Send what is pending; false when the connection had to be closed. */
static bool conn_flush(struct sl_http *s, struct conn *c)
{
    bool progress = false;

    while (c->out_off < c->out_len) {
        ssize_t n = conn_send(c, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0) {
            if (n == -EINTR)
                continue;
            if (n == -EAGAIN) {
                if (progress)
                    c->sent_ms = sl_mono_ms();
                conn_events(s, c, false, true);
                lru_set(s, c); /* something left to send: not idle */
                return true;
            }
            conn_close(s, c);
            return false;
        }
        c->out_off += (size_t)n;
        progress = true;
    }
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
    if (c->takeover) {
        /* The 101 is out: the connection is the taker's from here, its
         * TLS session too (with what it holds decrypted still). */
        sl_http_takeover fn = c->takeover;
        int fd = c->fd;
        struct ssl_st *ssl = c->ssl;
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
        c->fd = -1;
        c->ssl = NULL;
        c->takeover = NULL;
        fn(fd, ssl, c->in, c->in_len, c->takeover_arg);
        conn_close(s, c);
        return false;
    }
    if (c->close_after && c->lingering) {
        /* Let the peer finish sending and read our answer before the
         * close, rather than meet a reset; LINGER_MS from the refusal at
         * most, whatever the peer sends. */
        if (c->ssl) {
            /* close_notify, then raw reads drain what still comes */
            sl_tls_conn_free(c->ssl);
            c->ssl = NULL;
        }
        shutdown(c->fd, SHUT_WR);
        conn_events(s, c, true, false);
        lru_set(s, c);
        return false;
    }
    if (c->close_after) {
        conn_close(s, c);
        return false;
    }
    c->idle_ms = sl_mono_ms();
    if (!c->reading)
        conn_events(s, c, true, false);
    lru_set(s, c);
    kick(s, c); /* a request that came behind this one, still decrypted */
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
        {301, "Moved Permanently"}, {304, "Not Modified"}, {307, "Temporary Redirect"},
        {400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"},
        {404, "Not Found"}, {405, "Method Not Allowed"}, {408, "Request Timeout"},
        {409, "Conflict"}, {411, "Length Required"}, {413, "Content Too Large"},
        {414, "URI Too Long"}, {415, "Unsupported Media Type"}, {426, "Upgrade Required"}, {429, "Too Many Requests"},
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
    if (r->takeover) {
        /* A 101 has no body and no length (RFC 9110 8.6); the connection
         * is no longer HTTP after it, so nothing closes it here. */
        n = (size_t)snprintf(head, sizeof(head),
                             "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\n"
                             "Connection: Upgrade\r\n",
                             r->upgrade);
        c->close_after = false;
        c->takeover = r->takeover;
        c->takeover_arg = r->takeover_arg;
        r->takeover = NULL;
    } else if (r->status == 304) {
        /* No body, and no Content-Length, which would have to be the
         * 200's (RFC 9110 sections 8.6 and 15.4.5). */
        n = (size_t)snprintf(head, sizeof(head), "HTTP/1.1 304 Not Modified\r\n%s",
                             c->close_after ? "Connection: close\r\n" : "");
        r->resp_len = 0;
    } else {
        n = (size_t)snprintf(head, sizeof(head),
                             "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s",
                             r->status, reason_phrase(r->status),
                             r->ctype ? r->ctype : "application/json", r->resp_len,
                             c->close_after ? "Connection: close\r\n" : "");
    }
    if (r->etag[0])
        n += (size_t)snprintf(head + n, sizeof(head) - n,
                              "ETag: %s\r\nCache-Control: private, no-cache\r\n"
                              "Vary: Authorization\r\n",
                              r->etag);
    for (int i = 0; i < r->nx && n < sizeof(head); i++)
        n += (size_t)snprintf(head + n, sizeof(head) - n, "%s: %s\r\n", r->xname[i],
                              r->xval[i]);
    if (r->xlines && n < sizeof(head))
        n += (size_t)snprintf(head + n, sizeof(head) - n, "%s", r->xlines);
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
    /* Answered: the next head's deadline runs from now (bytes of it may
     * have come already, behind this request). */
    c->served = true;
    c->head_ms = c->idle_ms = c->sent_ms = sl_mono_ms();
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
    c->linger_ms = sl_mono_ms();
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
    r->head_len = h->head_len;
    memcpy(r->head, c->in, h->head_len);
    r->head[h->head_len] = '\0';
    /* The parser bounds the method and the target by these buffers. */
    memcpy(r->method, r->head + h->method.off, h->method.len);
    r->method[h->method.len] = '\0';
    t = r->head + h->target.off;
    r->target_off = h->target.off;
    r->target_len = h->target.len;
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
    while (!c->req && !c->takeover && c->in_len > 0) {
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
            if (c->rx->query &&
                (rc = sl_http_parse_query(c->rx->query, strlen(c->rx->query),
                                          c->rx->params, SL_HTTP_MAX_PARAMS, &why)) < 0) {
                req_free(c->rx);
                c->rx = NULL;
                conn_refuse(s, c, why.status, refusal_code(why.status), why.text);
                return false;
            }
            c->rx->nparams = c->rx->query ? rc : 0;
            c->rx_head = h.head_len;
            c->rx_need = h.head_len + (size_t)(h.content_length > 0 ? h.content_length : 0);
            c->rx_continue = h.expect_continue;
            c->body_ms = sl_mono_ms();
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
                    c->sent_ms = sl_mono_ms();
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
        sodium_memzero(c->in + c->in_len, c->rx_need); /* no stale copy of it */
        c->rx = NULL;
        c->scan_off = 0;
        c->continue_sent = false;

        r->phase = PH_HANDLING;
        s->handler(r, s->arg);
        if (r->suspend_now) {
            c->req = r;
            lru_set(s, c); /* the handler holds a request: not idle */
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
    bool got = false;

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
                    return; /* TLS bytes left inside: flush kicks it */
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
        n = conn_recv(c, c->in + c->in_len, room);
        if (n == -EINTR)
            continue;
        if (n == -EAGAIN)
            break;
        if (n <= 0) {
            conn_close(s, c);
            return;
        }
        /* The first byte of a head on a kept-alive connection starts its
         * deadline; later bytes do not move it. */
        if (c->in_len == 0 && c->served && !c->rx && !c->req)
            c->head_ms = sl_mono_ms();
        c->in_len += (size_t)n;
        got = true;
        if ((size_t)n < room)
            break; /* a short read: the socket is drained for now (a TLS
                      read gives one record: kick below reads the rest) */
    }
    if (c->tls_rd_wants_write)
        conn_events(s, c, c->reading, c->out_off < c->out_len);
    if (got)
        lru_set(s, c); /* activity: the young end of the idle list */
    if (c->req) {
        /* A request is in flight: keep what came, read no more for now
         * (TLS bytes left inside: the answer's flush kicks it). */
        conn_events(s, c, false, c->out_len > c->out_off);
        return;
    }
    /* Records OpenSSL has read whole from the socket but not handed over
     * yet: read again after this batch (only after progress, so that a
     * partial record waits for epoll rather than spins). */
    if (conn_process(s, c) && got && !c->req && c->reading)
        kick(s, c);
}

/* Close the least recently active idle connection: true when there was
 * one. */
static bool evict_one(struct sl_http *s)
{
    struct conn *c = s->lru_head;

    if (!c)
        return false;
    sl_debug("msg=\"closing the oldest idle connection to make room\" connections=%d",
             s->nconns);
    conn_close(s, c);
    return true;
}

/* A whole answer that closes the connection, for the server's own
 * refusals outside any request ('msg' is plain ASCII without quotes). */
static size_t canned(char *out, size_t size, int status, const char *code,
                     const char *msg)
{
    char body[256];
    int blen = snprintf(body, sizeof(body),
                        "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n", code, msg);
    int n = snprintf(out, size,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                     status, reason_phrase(status), blen, body);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* Send a canned answer as far as the socket takes it at once (a peer that
 * does not read loses it; nothing waits for it). What the peer sent
 * already is read first, so that the close is less likely a reset that
 * loses the answer. */
static void send_canned(int fd, int status, const char *code, const char *msg)
{
    char out[512], sink[4096];
    size_t n = canned(out, sizeof(out), status, code, msg);

    while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
        ;
    if (send(fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* best effort: the peer may be gone */
    }
}

/* Refuse a connection not taken in, and close it. Over TLS there is no
 * session yet to answer in: just the close. */
static void shed(const struct sl_http *s, int fd, int status, const char *code,
                 const char *msg)
{
    if (!s->cfg.tls)
        send_canned(fd, status, code, msg);
    close(fd);
}

/* Stop accepting for ACCEPT_PAUSE_MS: the listening socket stays readable
 * while the process is out of descriptors, and epoll would report it at
 * once, again and again. */
static void accept_pause(struct sl_http *s)
{
    struct epoll_event ev = {.events = 0, .data.ptr = &tag_listen};
    int64_t now = sl_mono_ms();

    epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &ev);
    s->accept_paused_until = now + ACCEPT_PAUSE_MS;
    if (now - s->fd_warned_ms >= 60000) {
        s->fd_warned_ms = now;
        sl_warn("msg=\"out of file descriptors: new connections are refused\" "
                "connections=%d max_connections=%d", s->nconns, s->cfg.max_conns);
    }
}

/* Accept once out of descriptors: make room by closing an idle connection,
 * or shed the new one through the spare descriptor. True when the caller
 * may accept again. */
static bool accept_no_fds(struct sl_http *s)
{
    int fd;

    if (evict_one(s))
        return true;
    if (s->spare_fd >= 0) {
        close(s->spare_fd);
        fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            shed(s, fd, 503, "unavailable", "out of file descriptors; try again");
        s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && s->spare_fd >= 0)
            return true;
    }
    accept_pause(s);
    return false;
}

static void conn_accept(struct sl_http *s)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sslen = sizeof(ss);
        int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sslen,
                         SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
        struct conn *c;
        struct epoll_event ev;
        uint64_t key = 0;
        bool v6 = false, counted;
        size_t slot = 0;

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if ((errno == EMFILE || errno == ENFILE) && accept_no_fds(s))
                continue;
            return; /* EAGAIN: none waiting; or paused */
        }
        key = 0;
        v6 = false;
        counted = peer_key(&ss, &key, &v6) && s->cfg.max_conns_per_peer > 0;
        if (counted) {
            slot = peer_slot(s, key, v6);
            if (s->peers[slot].n >= (uint32_t)s->cfg.max_conns_per_peer) {
                char msg[96];
                snprintf(msg, sizeof(msg),
                         "too many connections from this address (at most %d)",
                         s->cfg.max_conns_per_peer);
                shed(s, fd, 429, "too_many_requests", msg);
                continue;
            }
        }
        if (s->nconns >= s->cfg.max_conns && !evict_one(s)) {
            shed(s, fd, 503, "unavailable", "too many connections, none idle; try again");
            continue;
        }
        if (!(c = calloc(1, sizeof(*c)))) {
            close(fd);
            continue;
        }
        if (s->cfg.tls && !(c->ssl = sl_tls_conn_new(s->cfg.tls, fd))) {
            close(fd);
            free(c);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->s = s;
        c->fd = fd;
        c->reading = true;
        c->head_ms = c->idle_ms = c->sent_ms = sl_mono_ms();
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.ptr = c;
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            sl_tls_conn_free(c->ssl);
            close(fd);
            free(c);
            continue;
        }
        if (counted) {
            /* evict_one may have moved the entries: find the slot again. */
            slot = peer_slot(s, key, v6);
            s->peers[slot].key = key;
            s->peers[slot].v6 = v6;
            s->peers[slot].n++;
            c->counted = true;
        }
        c->peer_key = key;
        c->peer_v6 = v6;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
        lru_set(s, c);
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

/* When c is to be closed for want of progress; INT64_MAX while the
 * handler holds its request (the engine answers every one). */
static int64_t conn_deadline(const struct sl_http *s, const struct conn *c)
{
    if (c->req || c->fd < 0)
        return INT64_MAX;
    if (c->lingering)
        return c->linger_ms + LINGER_MS;
    if (c->out_off < c->out_len)
        return c->sent_ms + s->cfg.send_timeout_ms;
    if (c->rx)
        return c->body_ms + s->cfg.body_timeout_ms;
    if (c->in_len > 0 || !c->served)
        return c->head_ms + s->cfg.header_timeout_ms;
    return c->idle_ms + s->cfg.idle_timeout_ms;
}

/* Close what is past its deadline. A request under way is told 408, as
 * far as the socket takes it at once; an idle connection just closes. */
static void sweep(struct sl_http *s)
{
    int64_t now = sl_mono_ms();
    struct conn *c = s->conns;

    while (c) {
        struct conn *next = c->next;
        if (now >= conn_deadline(s, c)) {
            if (!c->lingering && c->out_len == 0 && (c->in_len > 0 || c->rx)) {
                const char *msg = c->rx ? "the request body did not come in time"
                                        : "the request head did not come in time";
                if (!c->ssl) {
                    send_canned(c->fd, 408, "invalid", msg);
                } else if (sl_tls_ready(c->ssl)) {
                    /* as far as the socket takes it at once */
                    char out[512];
                    size_t n = canned(out, sizeof(out), 408, "invalid", msg);
                    sl_tls_write(c->ssl, out, n);
                }
            }
            conn_close(s, c);
        }
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
        int64_t now = sl_mono_ms(), wait_ms = last_sweep + SWEEP_MS - now;
        int n;

        if (s->accept_paused_until && s->accept_paused_until - now < wait_ms)
            wait_ms = s->accept_paused_until - now;
        n = epoll_wait(s->epfd, ev, (int)SL_ARRAY_LEN(ev),
                       wait_ms < 0 ? 0 : (int)wait_ms);
        for (int i = 0; i < n; i++) {
            void *p = ev[i].data.ptr;
            if (p == &tag_listen) {
                conn_accept(s);
            } else if (p == &tag_wake) {
                resumed(s);
            } else {
                struct conn *c = p;
                bool in = ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR),
                     out = ev[i].events & EPOLLOUT;
                if (c->dead)
                    continue; /* closed earlier in this batch */
                /* Over TLS a write may wait for readability and a read
                 * (the handshake) for writability: each goes on when
                 * what it waits for comes. */
                if ((out && (c->out_off < c->out_len || !c->tls_rd_wants_write)) ||
                    (in && c->tls_wr_wants_read)) {
                    if (!conn_flush(s, c))
                        continue;
                }
                if ((in && !c->tls_wr_wants_read) || (out && c->tls_rd_wants_write))
                    conn_read(s, c);
            }
        }
        while (s->kick) {
            struct conn *c = s->kick;
            s->kick = c->kick_next;
            c->kicked = false;
            if (!c->dead && c->fd >= 0 && c->reading)
                conn_read(s, c);
        }
        pthread_mutex_lock(&s->mu);
        stop = s->stop;
        quiesce = s->quiesce;
        pthread_mutex_unlock(&s->mu);
        now = sl_mono_ms();
        if (s->accept_paused_until && now >= s->accept_paused_until && s->lfd >= 0) {
            struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &tag_listen};
            s->accept_paused_until = 0;
            epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &lev);
        }
        if (quiesce && s->lfd >= 0) {
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
            close(s->lfd);
            s->lfd = -1;
            s->accept_paused_until = 0;
        }
        if (stop) {
            resumed(s); /* the last answers, best effort */
            conns_reap(s);
            break;
        }
        if (now - last_sweep >= SWEEP_MS) {
            sweep(s);
            last_sweep = now;
        }
        conns_reap(s);
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

/* Lower max_conns to what RLIMIT_NOFILE leaves beside SL_HTTP_FD_RESERVE
 * descriptors for the rest of the daemon. */
static void fit_nofile(struct sl_http_config *cfg)
{
    struct rlimit rl;
    rlim_t fit;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    fit = rl.rlim_cur > 2 * SL_HTTP_FD_RESERVE ? rl.rlim_cur - SL_HTTP_FD_RESERVE
                                                : rl.rlim_cur / 2;
    if (fit < 1)
        fit = 1;
    if ((rlim_t)cfg->max_conns <= fit)
        return;
    sl_warn("msg=\"max connections lowered to fit the open files limit\" "
            "max_connections=%llu asked=%d nofile=%llu reserve=%d",
            (unsigned long long)fit, cfg->max_conns, (unsigned long long)rl.rlim_cur,
            SL_HTTP_FD_RESERVE);
    cfg->max_conns = (int)fit;
}

struct sl_http *sl_http_start(const char *addr, const struct sl_http_config *cfg,
                              sl_http_handler h, void *arg, char *why, size_t why_size)
{
    static const struct sl_http_config defaults = SL_HTTP_CONFIG_DEFAULT;
    struct sl_http *s = NULL;
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    struct epoll_event ev;
    int family = parse_listen(addr, &ss, &sslen, why, why_size), one = 1, saved;

    if (family < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!cfg)
        cfg = &defaults;
    if (cfg->max_conns < 1 || cfg->max_conns > INT_MAX / 4 || cfg->max_conns_per_peer < 0 ||
        cfg->header_timeout_ms < 1 || cfg->body_timeout_ms < 1 ||
        cfg->send_timeout_ms < 1 || cfg->idle_timeout_ms < 1) {
        snprintf(why, why_size, "HTTP limits: max connections must be at least 1, the "
                                "per-peer limit 0 or more and every timeout positive");
        errno = EINVAL;
        return NULL;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    s->handler = h;
    s->arg = arg;
    s->lfd = s->epfd = s->wake_fd = s->spare_fd = -1;
    s->cfg = *cfg;
    fit_nofile(&s->cfg);
    pthread_mutex_init(&s->mu, NULL);
    /* Twice as many peer slots as connections, a power of two. */
    for (s->npeers = 16; s->npeers < 2 * (size_t)s->cfg.max_conns; s->npeers *= 2)
        ;
    if (!(s->peers = calloc(s->npeers, sizeof(*s->peers)))) {
        saved = ENOMEM;
        snprintf(why, why_size, "out of memory");
        goto fail;
    }
    if (getrandom(&s->seed, sizeof(s->seed), GRND_NONBLOCK) != sizeof(s->seed))
        s->seed = (uint64_t)sl_mono_ns() ^ (uint64_t)getpid() << 32;
    if (getrandom(s->etag_key, sizeof(s->etag_key), 0) != (ssize_t)sizeof(s->etag_key)) {
        saved = errno;
        snprintf(why, why_size, "getrandom: %s", strerror(saved));
        goto fail;
    }
    /* Kept to be given up when the process is out of descriptors. */
    if ((s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        saved = errno;
        snprintf(why, why_size, "cannot open /dev/null: %s", strerror(saved));
        goto fail;
    }
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
    sl_info("msg=\"http limits\" max_connections=%d max_connections_per_peer=%d "
            "header_timeout_ms=%lld body_timeout_ms=%lld send_timeout_ms=%lld "
            "idle_timeout_ms=%lld",
            s->cfg.max_conns, s->cfg.max_conns_per_peer, (long long)s->cfg.header_timeout_ms,
            (long long)s->cfg.body_timeout_ms, (long long)s->cfg.send_timeout_ms,
            (long long)s->cfg.idle_timeout_ms);
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
    conns_reap(s);
    free(s->peers);
    if (s->spare_fd >= 0)
        close(s->spare_fd);
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
