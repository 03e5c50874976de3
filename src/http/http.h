/*
 * http.h - the HTTP/1.1 server (src/http/http.c).
 *
 * One epoll thread serves every connection with keep-alive. A request's
 * head is parsed strictly (parse.h: up to 8 KiB, 431 past that) and its
 * Content-Length body read up to SL_HTTP_MAX_BODY (413 past that, answered
 * at once, then the rest of the upload is read and dropped before the
 * close); chunked request bodies are refused with 411. Every refusal of a
 * head closes the connection after its answer. The handler sees a complete
 * request and either answers at once (sl_http_reply*) or suspends it
 * (sl_http_suspend) and answers later from another thread (sl_http_reply*
 * then sl_http_resume).
 *
 * No peer can hold the server: connections are limited in all and per
 * peer address, a request head and body each have a deadline that later
 * bytes do not extend, an answer the peer does not take is dropped, and
 * when the table is full the least recently active idle connection makes
 * room for a new one (struct sl_http_config; docs/man/sluiced.8).
 *
 * Thread-safety: sl_http_start, sl_http_quiesce and sl_http_stop are
 * called from one thread; sl_http_resume from any; the request accessors
 * and answers from the thread that holds the request.
 */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse.h"

/* The server's limits. Every field is in force as given; fill one with
 * SL_HTTP_CONFIG_DEFAULT and change what differs. */
struct sl_http_config {
    int max_conns;             /* connections at once; lowered at start to
                                  RLIMIT_NOFILE less SL_HTTP_FD_RESERVE */
    int max_conns_per_peer;    /* per IPv4 address or IPv6 /64;
                                  0 = no limit */
    int64_t header_timeout_ms; /* a request head must be complete this long
                                  after its first byte (after the accept on
                                  a new connection) */
    int64_t body_timeout_ms;   /* its body, this long after the head */
    int64_t send_timeout_ms;   /* an answer of which the peer takes nothing
                                  for this long is dropped */
    int64_t idle_timeout_ms;   /* a kept-alive connection between requests */
    struct sl_tls *tls;        /* NULL: plain HTTP; else every connection
                                  speaks TLS (tls.h; not owned, must
                                  outlive the server). The handshake
                                  counts against the header deadline. */
};

#define SL_HTTP_CONFIG_DEFAULT                                                 \
    {                                                                          \
        .max_conns = 4096, .max_conns_per_peer = 512,                          \
        .header_timeout_ms = 10000, .body_timeout_ms = 30000,                  \
        .send_timeout_ms = 30000, .idle_timeout_ms = 60000,                    \
    }

/* Descriptors kept for the rest of the daemon (store, task logs, pipes)
 * below RLIMIT_NOFILE when max_conns is fitted to it. */
#define SL_HTTP_FD_RESERVE 256

struct sl_http;
struct sl_http_req;
struct sl_tls;

/* Called once per complete request on the server thread. */
typedef void (*sl_http_handler)(struct sl_http_req *req, void *arg);

/* Listen on "HOST:PORT" ("127.0.0.1:8470", "[::1]:8470", ":8470" = all)
 * with the limits of 'cfg' (NULL: SL_HTTP_CONFIG_DEFAULT; copied). Returns
 * NULL and sets errno (EINVAL for a bad address, max_conns below 1, a
 * negative per-peer limit or a timeout below 1 ms); 'why' gets a message. When max_conns does not fit RLIMIT_NOFILE it is lowered
 * and the start logs it. */
struct sl_http *sl_http_start(const char *listen, const struct sl_http_config *cfg,
                              sl_http_handler h, void *arg, char *why,
                              size_t why_size);
/* Stop accepting new connections (in-flight ones finish). */
void sl_http_quiesce(struct sl_http *s);
void sl_http_stop(struct sl_http *s); /* NULL-safe */

/* Request accessors (valid until the request completes). */
const char *sl_http_method(const struct sl_http_req *r);
const char *sl_http_path(const struct sl_http_req *r);
/* The peer's address as a key: an IPv4 address, or an IPv6 /64 (as the
 * per-peer connection limit counts them). For counting a peer's failures;
 * only equality means anything. */
uint64_t sl_http_peer(const struct sl_http_req *r);
/* The request's target as it was sent (path and query, undecoded): its
 * first '*len' bytes, not NUL-terminated. */
const char *sl_http_target(const struct sl_http_req *r, size_t *len);
const char *sl_http_header(const struct sl_http_req *r, const char *name);
const char *sl_http_query(const struct sl_http_req *r, const char *name);
const char *sl_http_body(const struct sl_http_req *r, size_t *len);
/* The user a verified TLS client certificate names (its subject CN), or
 * NULL: plain HTTP, no client CA, or no certificate presented. */
const char *sl_http_peer_user(const struct sl_http_req *r);

/* Per-request slot for the handler's own state; freed with 'free_fn' when
 * the request completes. */
void sl_http_set_state(struct sl_http_req *r, void *state,
                       void (*free_fn)(void *));

/* Answers. 'body' is copied. Extra headers: up to 4 added with
 * sl_http_add_header before the reply. */
void sl_http_add_header(struct sl_http_req *r, const char *name,
                        const char *value);
/* Header lines sent as they are after those, each "Name: value\r\n"; for
 * long fixed ones (a Content-Security-Policy). Not copied: 'lines' must
 * outlive the request (a string literal). The answer's head, every header
 * included, must fit 1 KiB, else the connection is closed instead. */
void sl_http_add_header_lines(struct sl_http_req *r, const char *lines);
/* A 304 goes without its body, Content-Type and Content-Length. */
void sl_http_reply(struct sl_http_req *r, int status, const char *ctype,
                   const void *body, size_t len);
/* Give this request's answer, when it is a 200 to a GET or HEAD, a strong
 * validator: "ETag" of a 128-bit keyed hash of its body (SipHash-2-4
 * under a key drawn at sl_http_start, in hex),
 * "Cache-Control: private, no-cache" and "Vary: Authorization" (the body
 * is the caller's); and when the request's If-None-Match matches that tag
 * (sl_http_etag_match; its lines read as one list, a malformed one
 * ignored), answer 304 Not Modified instead, with those headers, the
 * added ones and no body. Call before the answer is set. */
void sl_http_use_etag(struct sl_http_req *r);
/* Whether the If-None-Match lines of r match the entity tag whose opaque
 * part (between the quotes) is 'opaque': a list split over lines is one
 * list (RFC 9110 section 5.3), so "*" must stand alone; a malformed line
 * makes the whole field ignored. For answers that carry a tag of their
 * own (the embedded UI's files). */
bool sl_http_none_match(const struct sl_http_req *r, const char *opaque);
/* The status of the answer set so far; 0 = none yet. */
int sl_http_status(const struct sl_http_req *r);
/* Serialise and steal 'json'. */
void sl_http_reply_json(struct sl_http_req *r, int status, json_t *json);
/* 'json' as a client reads it back from sl_http_reply_json's answer (its
 * reals cut to the answer's 15 significant digits): for another form of
 * an answer that must say what the JSON one says, to the byte (GET
 * /v1/report?format=csv). New reference, or NULL with errno ENOMEM. */
json_t *sl_http_json_as_sent(const json_t *json);
void sl_http_reply_error(struct sl_http_req *r, int status, const char *code,
                         const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

struct ssl_st; /* OpenSSL's SSL (tls.h), opaque here */

/* Called once, on the server thread, for a request answered with
 * sl_http_upgrade: when its 101 has gone out, with the connection's
 * descriptor (non-blocking, close-on-exec), its TLS session 'ssl' when the
 * server speaks TLS (NULL on plain HTTP; handshake complete, nothing of
 * it left unsent), and the bytes the peer sent after the request, already
 * read and decrypted ('early', 'nearly': the new protocol's first bytes,
 * valid during the call; more may wait decrypted inside 'ssl', which
 * epoll does not report: sl_tls_readable). From then on 'fd' and 'ssl'
 * are the callee's and no longer the server's: its limits and deadlines
 * are the callee's, it reads and writes through 'ssl' when there is one
 * (on one thread at a time), and it ends with sl_tls_conn_free(ssl) then
 * close(fd). Or it is called with fd -1 and ssl NULL when the connection
 * closed before the 101 went out. Either way 'arg' is the callee's
 * again. */
typedef void (*sl_http_takeover)(int fd, struct ssl_st *ssl, const char *early, size_t nearly,
                                 void *arg);

/* Answer 101 Switching Protocols with "Upgrade: <protocol>" (at most 31
 * characters), "Connection: Upgrade" and the headers added before; once it
 * is sent the connection (over TLS, with its session) is handed to 'fn'
 * with 'arg'. */
void sl_http_upgrade(struct sl_http_req *r, const char *protocol, sl_http_takeover fn,
                     void *arg);

/* Park the request; another thread must later reply and then resume it. */
void sl_http_suspend(struct sl_http_req *r);
void sl_http_resume(struct sl_http_req *r);

#endif
