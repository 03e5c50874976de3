/*
 * http.h - the HTTP/1.1 server (src/http/http.c).
 *
 * One epoll thread serves every connection with keep-alive. A request's
 * head is parsed strictly (parse.h: up to 8 KiB, 431 past that) and its
 * Content-Length body read up to SL_HTTP_MAX_BODY (413 past that, answered
 * at once, then the rest of the upload is read and dropped before the
 * close); chunked request bodies are refused with 411. Every refusal of a
 * head closes the connection after its answer. The handler sees a complete request and either
 * answers at once (sl_http_reply*) or suspends it (sl_http_suspend) and
 * answers later from another thread (sl_http_reply* then sl_http_resume).
 */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse.h"

struct sl_http;
struct sl_http_req;

/* Called once per complete request on the server thread. */
typedef void (*sl_http_handler)(struct sl_http_req *req, void *arg);

/* Listen on "HOST:PORT" ("127.0.0.1:8470", "[::1]:8470", ":8470" = all).
 * Returns NULL and sets errno; 'why' gets a message. */
struct sl_http *sl_http_start(const char *listen, sl_http_handler h, void *arg,
                              char *why, size_t why_size);
/* Stop accepting new connections (in-flight ones finish). */
void sl_http_quiesce(struct sl_http *s);
void sl_http_stop(struct sl_http *s); /* NULL-safe */

/* Request accessors (valid until the request completes). */
const char *sl_http_method(const struct sl_http_req *r);
const char *sl_http_path(const struct sl_http_req *r);
const char *sl_http_header(const struct sl_http_req *r, const char *name);
const char *sl_http_query(const struct sl_http_req *r, const char *name);
const char *sl_http_body(const struct sl_http_req *r, size_t *len);

/* Per-request slot for the handler's own state; freed with 'free_fn' when
 * the request completes. */
void sl_http_set_state(struct sl_http_req *r, void *state,
                       void (*free_fn)(void *));

/* Answers. 'body' is copied. Extra headers: up to 4 added with
 * sl_http_add_header before the reply. */
void sl_http_add_header(struct sl_http_req *r, const char *name,
                        const char *value);
void sl_http_reply(struct sl_http_req *r, int status, const char *ctype,
                   const void *body, size_t len);
/* The status of the answer set so far; 0 = none yet. */
int sl_http_status(const struct sl_http_req *r);
/* Serialise and steal 'json'. */
void sl_http_reply_json(struct sl_http_req *r, int status, json_t *json);
void sl_http_reply_error(struct sl_http_req *r, int status, const char *code,
                         const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Park the request; another thread must later reply and then resume it. */
void sl_http_suspend(struct sl_http_req *r);
void sl_http_resume(struct sl_http_req *r);

#endif
