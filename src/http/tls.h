/*
 * tls.h - TLS for the HTTP server (src/http/tls.c, OpenSSL 3): the server's
 * context (certificate, key, optional client CA), its reload, and the
 * non-blocking wrappers http.c calls in place of recv and send.
 *
 * Policy, fixed: TLS 1.2 at least; for 1.2 only ECDHE key exchange with an
 * AEAD cipher (AES-GCM, ChaCha20-Poly1305); 1.3 with OpenSSL's defaults; no
 * renegotiation, no compression; session tickets on. With a client CA, a
 * client may present a certificate, which must then verify against that CA
 * or the handshake fails; one without a certificate goes on (a bearer
 * token authenticates it).
 *
 * Thread-safety: sl_tls_reload may run on any thread while the HTTP
 * thread makes new connections (the context is swapped under a lock;
 * connections keep the context they started with). A connection's SSL is
 * used by one thread at a time: the HTTP thread's, or after a 101 the
 * thread of whoever took the connection over (the attach relay), which
 * frees it; the reference it holds to its context keeps that context
 * alive across reloads, whichever thread drops it last. The counters are
 * atomic.
 */
#ifndef SL_HTTP_TLS_H
#define SL_HTTP_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../util/util.h"

struct ssl_st; /* OpenSSL's SSL, opaque here so that http.c needs no header of it */
struct sl_tls;

/* The files, PEM. 'key_file' may not be readable by group or others. */
struct sl_tls_config {
    const char *cert_file;      /* the certificate, then its chain */
    const char *key_file;       /* its private key */
    const char *client_ca_file; /* NULL = no client certificates */
};

/* Load a server context from cfg's files (copied). Returns the TLS state,
 * or NULL with errno (EINVAL: a file that does not load, a key that does
 * not match the certificate, EACCES: a key file readable by others) and
 * 'err' saying "--tls-key FILE: why". */
struct sl_tls *sl_tls_create(const struct sl_tls_config *cfg, struct sl_error *err);

/* Read the same files again: new connections get the new context. On
 * failure the old one stays in force; returns -errno with 'err' saying
 * why. */
int sl_tls_reload(struct sl_tls *t, struct sl_error *err);

void sl_tls_destroy(struct sl_tls *t); /* NULL-safe; connections must be gone */

/* A server-side TLS connection on accepted socket 'fd' (not owned), with
 * the handshake still to come (the first sl_tls_read makes it). NULL on
 * ENOMEM. */
struct ssl_st *sl_tls_conn_new(struct sl_tls *t, int fd);

/* Results of sl_tls_read and sl_tls_write besides a byte count. */
#define SL_TLS_WANT_READ  (-1) /* call again once the socket is readable */
#define SL_TLS_WANT_WRITE (-2) /* ... once it is writable */
#define SL_TLS_FAILED     (-3) /* protocol error or reset: close it */

/* Read up to 'len' (> 0) bytes of application data: the count, 0 when the
 * peer closed, or SL_TLS_*. Completes the handshake first. */
ssize_t sl_tls_read(struct ssl_st *ssl, void *buf, size_t len);
/* Write up to 'len' (> 0) bytes (partial writes allowed; the buffer may
 * move between a WANT_* and the retry): the count taken, or SL_TLS_*. */
ssize_t sl_tls_write(struct ssl_st *ssl, const void *buf, size_t len);
/* Whether decrypted or buffered bytes wait inside the connection that
 * epoll cannot see. */
bool sl_tls_pending(struct ssl_st *ssl);
/* How many decrypted bytes of application data wait inside the
 * connection: a read of at least one byte returns at least one at once
 * (unlike sl_tls_pending, which is also true of part of a record). */
size_t sl_tls_readable(struct ssl_st *ssl);
/* Send close_notify; the read side stays open. Returns 0 once it is out,
 * SL_TLS_WANT_WRITE (or _READ): call again when the socket is writable
 * (readable), and only then; SL_TLS_FAILED when the connection is
 * broken. Once it returned 0, sl_tls_conn_free sends nothing more. */
int sl_tls_shutdown(struct ssl_st *ssl);
/* Whether the handshake is complete. */
bool sl_tls_ready(struct ssl_st *ssl);
/* The subject CN of the client's certificate when one was presented and
 * verified, into buf (at most size-1 bytes; a CN longer than that or
 * with bytes other than letters, digits and "._@-" is not taken). True
 * when there is one. */
bool sl_tls_peer_user(struct ssl_st *ssl, char *buf, size_t size);
/* Send close_notify when the handshake completed (best effort, never
 * waits) and free. NULL-safe; the socket is the caller's to close. */
void sl_tls_conn_free(struct ssl_st *ssl);

/* Handshakes completed and failed since start, over all servers. */
void sl_tls_counts(uint64_t *handshakes, uint64_t *failures);

#endif
