/*
 * client.c - libsluice over plain sockets: a small HTTP/1.1 client with one
 * kept-alive connection per client, bounded answers, the API's error object
 * decoded into struct sl_api_error. https:// goes through OpenSSL on the
 * same non-blocking socket; its context is made at the first https
 * connection, so a plain-HTTP run never initialises OpenSSL
 * (docs/decisions/0016-cli-tls-client.md).
 *
 * Invariants: c->fd is -1 or a connected socket with no request in flight
 * and no unread answer bytes; a response never owns more than
 * SL_CLIENT_MAX_BODY + 1 bytes; an answer's header block is at most
 * HEAD_MAX bytes; a request is never sent again once any byte of it was
 * written (a POST is not duplicated): only a request of which not one byte
 * went out on a reused connection is sent, once, on a new connection.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "../util/buf.h"
#include "../util/util.h"
#include "../util/ws.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0"
#endif

#define HEAD_MAX       ((size_t)64 << 10) /* bytes of an answer's header block */
#define CHUNK_LINE_MAX 1024               /* bytes of a chunk-size line */
#define HOST_MAX       255                /* bytes of a host name */
#define METHOD_MAX     16                 /* bytes of a method name */
#define CTYPE_MAX      255                /* bytes of a Content-Type value */
#define EOF_RC         (-ENODATA) /* internal: the peer closed the stream */

struct sl_client {
    char *server;      /* owned; "http://authority[/prefix]", no trailing / */
    char *host;        /* owned; for getaddrinfo: no brackets */
    char *authority;   /* owned; the Host header: host[:port] as written */
    char *prefix;      /* owned; path before every request path, or "" */
    char port[8];      /* decimal, "80" by default */
    char *auth_header; /* owned; "Authorization: Bearer ...\r\n" or NULL */
    int fd;            /* the kept-alive connection, -1 when none */
    bool https;        /* the server URL is https:// */
    SSL *ssl;          /* owned; fd's TLS when https, else NULL */
    SSL_CTX *tls_ctx;  /* owned; made at the first https connection */
    char *ca_file, *cert_file, *key_file; /* owned; sl_client_set_tls */
    bool insecure;     /* no verification of the server's certificate */
};

/* Buffered reads from the connection, bounded by the request deadline;
 * or, with fd -1, from bytes in memory (sl_client_parse_answer), handed
 * out 'step' at a time as a socket might, their end the end of the
 * stream. */
struct reader {
    int fd;
    SSL *ssl;            /* not owned: fd's TLS, or NULL */
    const char *src;     /* not owned: the memory source, src_len bytes */
    size_t src_len, src_off, src_step; /* bytes; step 0 = as many as fit */
    char *buf;           /* owned by the request; cap bytes */
    size_t cap, pos, end; /* bytes; unread data is buf[pos, end) */
    int64_t deadline_ms; /* sl_mono_ms() clock */
    bool got_any;        /* a byte of the answer came */
};

/* A connection after its 101: the caller's (sl_client_upgrade). */
struct sl_stream {
    int fd;               /* owned; non-blocking */
    SSL *ssl;             /* owned; fd's TLS over https, else NULL */
    short rd_events;      /* what the last read waits for (poll events) */
    short wr_events;      /* ... the last write */
};

/* HTTP status -> error code, used when a 4xx/5xx body is not an error
 * object (a proxy's page, an empty body). */
static const struct {
    long status;
    const char *code;
} status_codes[] = {
    {400, "invalid"},
    {401, "unauthorized"},
    {403, "forbidden"},
    {404, "not_found"},
    {405, "method_not_allowed"},
    {409, "conflict"},
    {413, "too_large"},
    {415, "unsupported_media_type"},
    {429, "too_many_requests"},
    {500, "internal"},
    {502, "bad_gateway"},
    {503, "unavailable"},
    {504, "gateway_timeout"},
};

/* Copy 'src' into 'dst' as one printable line: control characters become
 * spaces, runs of them collapse, trailing blanks go. */
static void copy_line(char *dst, size_t size, const char *src, size_t srclen)
{
    size_t o = 0;
    bool space = false;

    if (!size)
        return;
    for (size_t i = 0; i < srclen && src[i] && o + 1 < size; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (ch < 0x20 || ch == 0x7f) {
            if (o > 0 && !space)
                dst[o++] = ' ';
            space = true;
            continue;
        }
        space = false;
        dst[o++] = (char)ch;
    }
    while (o > 0 && dst[o - 1] == ' ')
        o--;
    dst[o] = '\0';
}

static bool token_valid(const char *token)
{
    size_t n = 0;

    for (const char *p = token; *p; p++, n++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return false;
    return n <= SL_CLIENT_MAX_TOKEN;
}

/* Set r->error.message, drop what the answer held, return rc. */
static int fail(struct sl_response *r, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct sl_response *r, int rc, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    copy_line(r->error.message, sizeof(r->error.message), line, strlen(line));
    free(r->body);
    r->body = NULL;
    r->len = 0;
    r->status = 0;
    r->log_offset = -1;
    r->log_attempts = -1;
    r->job_state[0] = '\0';
    r->content_type[0] = '\0';
    return rc;
}

/* Split "http://authority[/prefix]" (n bytes, no trailing slash) into the
 * client's host, port, authority and prefix. 0 or -EINVAL / -ENOMEM. */
static int parse_server(struct sl_client *c, const char *url, size_t n)
{
    bool https = n >= 8 && strncmp(url, "https://", 8) == 0;
    const char *a = url + (https ? 8 : 7), *end = url + n, *slash, *host, *host_end, *p;
    size_t alen;

    if (!https && (n < 7 || strncmp(url, "http://", 7) != 0))
        return -EINVAL;
    c->https = https;
    slash = memchr(a, '/', (size_t)(end - a));
    if (!slash)
        slash = end;
    alen = (size_t)(slash - a);
    if (alen == 0 || memchr(url, '?', n) || memchr(url, '#', n) ||
        memchr(a, '@', alen))
        return -EINVAL;
    if (*a == '[') {
        host = a + 1;
        if (!(host_end = memchr(host, ']', alen - 1)) || host_end == host)
            return -EINVAL;
        for (p = host; p < host_end; p++)
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.' &&
                *p != '%' && !isalnum((unsigned char)*p))
                return -EINVAL;
        p = host_end + 1;
    } else {
        host = a;
        host_end = memchr(a, ':', alen);
        if (!host_end)
            host_end = slash;
        if (host_end == host)
            return -EINVAL;
        for (p = host; p < host_end; p++)
            if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' &&
                *p != '_')
                return -EINVAL;
        p = host_end;
    }
    if ((size_t)(host_end - host) > HOST_MAX)
        return -EINVAL;
    if (p < slash) {
        /* ":port", 1..65535 */
        long port = 0;
        if (*p++ != ':' || p == slash || slash - p > 5)
            return -EINVAL;
        for (const char *d = p; d < slash; d++) {
            if (*d < '0' || *d > '9')
                return -EINVAL;
            port = port * 10 + (*d - '0');
        }
        if (port < 1 || port > 65535)
            return -EINVAL;
        snprintf(c->port, sizeof(c->port), "%ld", port);
    } else {
        sl_strlcpy(c->port, https ? "443" : "80", sizeof(c->port));
    }
    if (!(c->host = strndup(host, (size_t)(host_end - host))) ||
        !(c->authority = strndup(a, alen)) ||
        !(c->prefix = strndup(slash, (size_t)(end - slash))))
        return -ENOMEM;
    return 0;
}

struct sl_client *sl_client_create(const char *server, const char *token)
{
    struct sl_client *c = NULL;
    size_t n;
    int err = 0, rc;

    if (!server || (strncmp(server, "http://", 7) != 0 && strncmp(server, "https://", 8) != 0)) {
        errno = EINVAL;
        return NULL;
    }
    for (const char *p = server; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
            errno = EINVAL;
            return NULL;
        }
    if (token && *token && !token_valid(token)) {
        errno = EINVAL;
        return NULL;
    }
    n = strlen(server);
    while (n > 0 && server[n - 1] == '/')
        n--;
    if (n >= SL_CLIENT_MAX_URL / 2) {
        errno = EINVAL;
        return NULL;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        errno = ENOMEM;
        return NULL;
    }
    c->fd = -1;
    if ((rc = parse_server(c, server, n)) < 0) {
        err = -rc;
        goto out;
    }
    if (!(c->server = strndup(server, n))) {
        err = ENOMEM;
        goto out;
    }
    if (token && *token) {
        size_t hlen = strlen("Authorization: Bearer \r\n") + strlen(token) + 1;
        if (!(c->auth_header = malloc(hlen))) {
            err = ENOMEM;
            goto out;
        }
        snprintf(c->auth_header, hlen, "Authorization: Bearer %s\r\n", token);
    }
    return c;
out:
    sl_client_destroy(c);
    errno = err;
    return NULL;
}

static void conn_close(struct sl_client *c)
{
    if (c->ssl) {
        /* No close_notify: the socket may be dead, and an HTTP/1.1 answer
         * is delimited by its length, not by the close. */
        SSL_free(c->ssl);
        c->ssl = NULL;
        ERR_clear_error();
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

void sl_client_destroy(struct sl_client *c)
{
    int saved = errno;

    if (c) {
        conn_close(c);
        SSL_CTX_free(c->tls_ctx);
        free(c->ca_file);
        free(c->cert_file);
        free(c->key_file);
        free(c->server);
        free(c->host);
        free(c->authority);
        free(c->prefix);
        if (c->auth_header) {
            /* The token is a secret: do not leave it in freed memory. */
            memset(c->auth_header, 0, strlen(c->auth_header));
            free(c->auth_header);
        }
        free(c);
    }
    errno = saved;
}

const char *sl_client_server(const struct sl_client *c)
{
    return c->server;
}

int sl_client_set_tls(struct sl_client *c, const struct sl_client_tls *t)
{
    char *ca = NULL, *cert = NULL, *key = NULL;

    if ((t->ca_file && !(ca = strdup(t->ca_file))) ||
        (t->cert_file && !(cert = strdup(t->cert_file))) ||
        (t->key_file && !(key = strdup(t->key_file)))) {
        free(ca);
        free(cert);
        return -ENOMEM;
    }
    conn_close(c);
    SSL_CTX_free(c->tls_ctx);
    c->tls_ctx = NULL;
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    c->ca_file = ca;
    c->cert_file = cert;
    c->key_file = key;
    c->insecure = t->insecure;
    return 0;
}

bool sl_client_https(const struct sl_client *c)
{
    return c->https;
}

void sl_response_fini(struct sl_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
    resp->log_offset = -1;
    resp->log_attempts = -1;
}


/* Wait until 'fd' has one of 'events' or the deadline passes: 0,
 * -ETIMEDOUT or a negated errno from poll. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left_ms = deadline_ms - sl_mono_ms();
        struct pollfd p = {.fd = fd, .events = events, .revents = 0};
        int n;

        if (left_ms <= 0)
            return -ETIMEDOUT;
        n = poll(&p, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
        if (n > 0)
            return 0; /* ready, or POLLERR/POLLHUP: the next call says */
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* OpenSSL writes to its socket with write(), which raises SIGPIPE on a
 * connection the server closed, where the plain path passes MSG_NOSIGNAL.
 * Around each TLS call that may write, SIGPIPE is blocked for this thread,
 * and one it raised is taken back before the mask is restored; the
 * process's own disposition (a CLI piped into head) is left alone. */
struct nopipe {
    sigset_t old;
    bool pending_before;
};

static void nopipe_begin(struct nopipe *p)
{
    sigset_t pipe, pending;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    p->pending_before = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &p->old);
}

static void nopipe_end(struct nopipe *p)
{
    sigset_t pipe, pending;
    struct timespec zero = {0, 0};

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    if (!p->pending_before && sigismember(&pending, SIGPIPE))
        while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
            ;
    pthread_sigmask(SIG_SETMASK, &p->old, NULL);
}

/* Whether a kept-alive connection can carry a new request: nothing may be
 * waiting on it (the server's EOF, stray bytes) and no error or hangup. */
static bool conn_idle(int fd, SSL *ssl)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
    char b;
    int n;

    while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR)
        ;
    if (n == 0 || !ssl || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        return n == 0;
    /* Over TLS the server sends records of its own after the handshake
     * (TLS 1.3 session tickets): read them; idle when no data follows. */
    {
        struct nopipe np;
        nopipe_begin(&np);
        n = SSL_peek(ssl, &b, 1);
        nopipe_end(&np);
    }
    if (n <= 0 && SSL_get_error(ssl, n) == SSL_ERROR_WANT_READ) {
        ERR_clear_error();
        return true;
    }
    ERR_clear_error();
    return false;
}

/* The last OpenSSL error's reason, into buf; the queue is cleared. */
static const char *ossl_why(char *buf, size_t size)
{
    unsigned long e = ERR_peek_last_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;

    snprintf(buf, size, "%s", reason ? reason : e ? "error" : "unknown error");
    ERR_clear_error();
    return buf;
}

/* The TLS context: TLS 1.2 at least, the server verified against the CA
 * file or the system's store (unless insecure), the client certificate
 * when one was given. 0 or -EINVAL with resp->error set. */
static int tls_ctx_make(struct sl_client *c, struct sl_response *resp)
{
    char why[256];
    SSL_CTX *ctx;

    if (c->tls_ctx)
        return 0;
    if (!(ctx = SSL_CTX_new(TLS_client_method())))
        return fail(resp, -ENOMEM, "cannot set up TLS: %s", ossl_why(why, sizeof(why)));
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, c->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (c->ca_file ? SSL_CTX_load_verify_locations(ctx, c->ca_file, NULL) != 1
                   : SSL_CTX_set_default_verify_paths(ctx) != 1) {
        SSL_CTX_free(ctx);
        return fail(resp, -EINVAL, "%s: %.300s: %s", c->ca_file ? "--ca-cert" : "TLS",
                    c->ca_file ? c->ca_file : "the system's CA store",
                    ossl_why(why, sizeof(why)));
    }
    if (c->cert_file || c->key_file) {
        if (!c->cert_file || !c->key_file) {
            SSL_CTX_free(ctx);
            return fail(resp, -EINVAL, "--cert and --key go together");
        }
        if (SSL_CTX_use_certificate_chain_file(ctx, c->cert_file) != 1) {
            SSL_CTX_free(ctx);
            return fail(resp, -EINVAL, "--cert %.300s: %s", c->cert_file,
                        ossl_why(why, sizeof(why)));
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, c->key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            SSL_CTX_free(ctx);
            return fail(resp, -EINVAL, "--key %.300s: %s", c->key_file,
                        ossl_why(why, sizeof(why)));
        }
    }
    c->tls_ctx = ctx;
    return 0;
}

/* Wait for what an SSL call that returned 'n' needs: 0 to try again, or a
 * negated errno (-ETIMEDOUT; 1 = a TLS failure, see the error queue). */
static int tls_wait(SSL *ssl, int fd, int n, int64_t deadline_ms)
{
    switch (SSL_get_error(ssl, n)) {
    case SSL_ERROR_WANT_READ:
        return wait_fd(fd, POLLIN, deadline_ms);
    case SSL_ERROR_WANT_WRITE:
        return wait_fd(fd, POLLOUT, deadline_ms);
    default:
        return 1;
    }
}

/* The handshake on c->fd, the server's name or address checked against
 * its certificate. 0, or a negated errno with resp->error set (and the
 * connection closed). */
static int tls_connect(struct sl_client *c, int64_t deadline_ms, struct sl_response *resp)
{
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, c->host, ip) == 1 || inet_pton(AF_INET6, c->host, ip) == 1;
    char why[256];
    int rc, n;

    if ((rc = tls_ctx_make(c, resp)) < 0) {
        conn_close(c);
        return rc;
    }
    if (!(c->ssl = SSL_new(c->tls_ctx)) || SSL_set_fd(c->ssl, c->fd) != 1) {
        conn_close(c);
        return fail(resp, -ENOMEM, "out of memory");
    }
    if (!is_ip)
        SSL_set_tlsext_host_name(c->ssl, c->host);
    if (!c->insecure &&
        (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), c->host)
               : SSL_set1_host(c->ssl, c->host)) != 1) {
        conn_close(c);
        return fail(resp, -EINVAL, "%.300s: cannot check the certificate against %.300s",
                    c->server, c->host);
    }
    for (;;) {
        struct nopipe np;
        nopipe_begin(&np);
        n = SSL_connect(c->ssl);
        nopipe_end(&np);
        if (n == 1)
            break;
        if ((rc = tls_wait(c->ssl, c->fd, n, deadline_ms)) == 0)
            continue;
        if (rc == -ETIMEDOUT) {
            conn_close(c);
            return fail(resp, -ETIMEDOUT, "timed out in the TLS handshake with %.300s",
                        c->server);
        }
        {
            long v = SSL_get_verify_result(c->ssl);
            if (v != X509_V_OK) {
                rc = fail(resp, -EPROTO, "%.300s: certificate verify failed: %s%s", c->server,
                          X509_verify_cert_error_string(v),
                          v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH
                              ? ""
                              : " (use --ca-cert FILE)");
                ERR_clear_error();
            } else {
                rc = fail(resp, -EPROTO, "%.300s: TLS handshake failed: %s", c->server,
                          ossl_why(why, sizeof(why)));
            }
        }
        conn_close(c);
        return rc;
    }
    return 0;
}

/* Connect to one address: 0 with c->fd set, or a positive errno. */
static int conn_try(struct sl_client *c, const struct addrinfo *ai,
                    int64_t deadline_ms)
{
    int fd, err = 0, one = 1;
    socklen_t elen = sizeof(err);
    int64_t until_ms = sl_mono_ms() + SL_CLIENT_CONNECT_TIMEOUT_MS;

    if (until_ms > deadline_ms)
        until_ms = deadline_ms;
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                ai->ai_protocol);
    if (fd < 0)
        return errno;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            err = errno;
            goto out;
        }
        if ((err = -wait_fd(fd, POLLOUT, until_ms)) != 0)
            goto out;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
            err = errno;
        if (err)
            goto out;
    }
    /* Requests are small and answered at once: no Nagle delay. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    fd = -1;
out:
    if (fd >= 0)
        close(fd);
    return err;
}

/* Open c->fd to the server, trying each address in turn. 0, or a negated
 * errno with resp->error.message set. */
static int conn_open(struct sl_client *c, int64_t deadline_ms,
                     struct sl_response *resp)
{
    struct addrinfo hints, *res = NULL;
    int gai, err = ECONNREFUSED, rc = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV;
    if ((gai = getaddrinfo(c->host, c->port, &hints, &res)) != 0) {
        switch (gai) {
        case EAI_MEMORY:
            return fail(resp, -ENOMEM, "out of memory resolving %.300s",
                        c->host);
        case EAI_SYSTEM:
            return fail(resp, -EIO, "cannot resolve %.300s: %s", c->host,
                        strerror(errno));
        default:
            return fail(resp, -EHOSTUNREACH, "cannot resolve %.300s: %s",
                        c->host, gai_strerror(gai));
        }
    }
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (sl_mono_ms() >= deadline_ms) {
            err = ETIMEDOUT;
            break;
        }
        if ((err = conn_try(c, ai, deadline_ms)) == 0) {
            if (c->https)
                rc = tls_connect(c, deadline_ms, resp);
            goto out;
        }
    }
    switch (err) {
    case ETIMEDOUT:
        rc = fail(resp, -ETIMEDOUT, "timed out connecting to %.300s",
                  c->server);
        break;
    case EHOSTUNREACH:
    case ENETUNREACH:
        rc = fail(resp, -EHOSTUNREACH, "cannot reach %.300s: %s", c->server,
                  strerror(err));
        break;
    case ENOMEM:
    case ENOBUFS:
        rc = fail(resp, -ENOMEM, "out of memory connecting to %.300s",
                  c->server);
        break;
    default:
        rc = fail(resp, -ECONNREFUSED, "cannot connect to %.300s: %s",
                  c->server, strerror(err));
        break;
    }
out:
    freeaddrinfo(res);
    return rc;
}

/* Write the head and the body; *sent counts the bytes written, so the
 * caller knows whether the request may have reached the server. 0 or a
 * negated errno. */
static int send_all(int fd, SSL *ssl, const char *head, size_t hlen, const char *body,
                    size_t blen, int64_t deadline_ms, size_t *sent)
{
    *sent = 0;
    while (ssl && *sent < hlen + blen) {
        const char *p = *sent < hlen ? head + *sent : body + (*sent - hlen);
        size_t want = *sent < hlen ? hlen - *sent : blen - (*sent - hlen), put = 0;
        struct nopipe np;
        int n, rc;
        nopipe_begin(&np);
        n = SSL_write_ex(ssl, p, want, &put);
        nopipe_end(&np);
        if (n == 1) {
            *sent += put;
            continue;
        }
        if ((rc = tls_wait(ssl, fd, n, deadline_ms)) < 0)
            return rc;
        if (rc > 0) {
            ERR_clear_error();
            return -ECONNRESET;
        }
    }
    while (*sent < hlen + blen) {
        struct iovec iov[2];
        struct msghdr m;
        ssize_t n;
        int rc;

        memset(&m, 0, sizeof(m));
        m.msg_iov = iov;
        if (*sent < hlen) {
            iov[0].iov_base = (char *)head + *sent;
            iov[0].iov_len = hlen - *sent;
            iov[1].iov_base = (char *)body;
            iov[1].iov_len = blen;
            m.msg_iovlen = blen ? 2 : 1;
        } else {
            iov[0].iov_base = (char *)body + (*sent - hlen);
            iov[0].iov_len = blen - (*sent - hlen);
            m.msg_iovlen = 1;
        }
        /* MSG_NOSIGNAL: a closed connection is an error, not a SIGPIPE. */
        if ((n = sendmsg(fd, &m, MSG_NOSIGNAL)) >= 0) {
            *sent += (size_t)n;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        if ((rc = wait_fd(fd, POLLOUT, deadline_ms)) < 0)
            return rc;
    }
    return 0;
}

/* Read more into the reader: bytes read, EOF_RC at end of stream, or a
 * negated errno (-ETIMEDOUT, -ENOBUFS when the buffer is full). */
static int rd_fill(struct reader *r)
{
    if (r->pos == r->end) {
        r->pos = r->end = 0;
    } else if (r->end == r->cap && r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->end - r->pos);
        r->end -= r->pos;
        r->pos = 0;
    }
    if (r->end == r->cap)
        return -ENOBUFS;
    if (r->fd < 0) {
        size_t n = r->cap - r->end;
        if (r->src_off == r->src_len)
            return EOF_RC;
        if (n > r->src_len - r->src_off)
            n = r->src_len - r->src_off;
        if (r->src_step && n > r->src_step)
            n = r->src_step;
        memcpy(r->buf + r->end, r->src + r->src_off, n);
        r->src_off += n;
        r->end += n;
        r->got_any = true;
        return (int)n;
    }
    while (r->ssl) {
        size_t got = 0;
        struct nopipe np;
        int n, rc;
        nopipe_begin(&np); /* a read may answer the server (an alert) */
        n = SSL_read_ex(r->ssl, r->buf + r->end, r->cap - r->end, &got);
        nopipe_end(&np);
        if (n == 1) {
            r->end += got;
            r->got_any = true;
            return (int)got;
        }
        if ((rc = tls_wait(r->ssl, r->fd, n, r->deadline_ms)) < 0)
            return rc;
        if (rc > 0) {
            /* close_notify, or a close without one (as read() sees it) */
            int e = SSL_get_error(r->ssl, n);
            ERR_clear_error();
            return e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0)
                       ? EOF_RC
                       : -ECONNRESET;
        }
    }
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
        int rc;

        if (n > 0) {
            r->end += (size_t)n;
            r->got_any = true;
            return (int)n;
        }
        if (n == 0)
            return EOF_RC;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        if ((rc = wait_fd(r->fd, POLLIN, r->deadline_ms)) < 0)
            return rc;
    }
}

/* The next line, at most 'max' bytes with its "\n": *line points into the
 * buffer (valid until the next read), *len excludes the "\r\n" or "\n".
 * 0, -E2BIG for a longer line, or rd_fill's errors. */
static int rd_line(struct reader *r, size_t max, char **line, size_t *len)
{
    size_t scanned = 0;

    for (;;) {
        char *nl = memchr(r->buf + r->pos + scanned, '\n',
                          r->end - r->pos - scanned);
        int rc;

        if (nl) {
            *line = r->buf + r->pos;
            *len = (size_t)(nl - *line);
            if (*len + 1 > max)
                return -E2BIG;
            r->pos += *len + 1;
            if (*len > 0 && (*line)[*len - 1] == '\r')
                (*len)--;
            return 0;
        }
        scanned = r->end - r->pos;
        if (scanned >= max)
            return -E2BIG;
        if ((rc = rd_fill(r)) < 0)
            return rc == -ENOBUFS ? -E2BIG : rc;
    }
}

/* One line of a header or trailer block, counted against HEAD_MAX for the
 * whole block ('*total'): -E2BIG past it. */
static int rd_head_line(struct reader *r, size_t *total, char **line, size_t *len)
{
    int rc = rd_line(r, HEAD_MAX, line, len);

    if (rc < 0)
        return rc;
    *total += *len + 2;
    return *total > HEAD_MAX ? -E2BIG : 0;
}

/* Append n bytes to the body, within SL_CLIENT_MAX_BODY. */
static int body_add(struct sl_response *r, size_t *cap, const char *data,
                    size_t n)
{
    if (n > SL_CLIENT_MAX_BODY - r->len)
        return -EFBIG;
    if (r->len + n > *cap || !r->body) {
        size_t want = *cap ? *cap : 16384;
        char *nb;
        while (want < r->len + n)
            want *= 2;
        if (want > SL_CLIENT_MAX_BODY)
            want = SL_CLIENT_MAX_BODY;
        if (!(nb = realloc(r->body, want + 1)))
            return -ENOMEM;
        r->body = nb;
        *cap = want;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
    return 0;
}

/* Move up to 'want' bytes (all until EOF when want is SIZE_MAX) from the
 * connection into the body. 0, EOF_RC before 'want' bytes, or an error. */
static int body_read(struct reader *rd, struct sl_response *r, size_t *cap,
                     size_t want)
{
    while (want > 0) {
        size_t n = rd->end - rd->pos;
        int rc;

        if (n == 0) {
            if ((rc = rd_fill(rd)) < 0)
                return rc == EOF_RC && want == SIZE_MAX ? 0 : rc;
            continue;
        }
        if (n > want)
            n = want;
        if ((rc = body_add(r, cap, rd->buf + rd->pos, n)) < 0)
            return rc;
        rd->pos += n;
        if (want != SIZE_MAX)
            want -= n;
    }
    return 0;
}

/* What the head of an answer says about its body and the connection. */
struct head {
    int minor;          /* HTTP/1.<minor> */
    bool chunked;       /* Transfer-Encoding: chunked */
    bool close;         /* Connection: close */
    bool keep_alive;    /* Connection: keep-alive */
    int64_t length;     /* Content-Length, -1 when absent */
    char ws_accept[SL_WS_ACCEPT_LEN + 1]; /* Sec-WebSocket-Accept of a 101 */
    char ws_protocol[64];                 /* Sec-WebSocket-Protocol */
};

/* Whether the comma-separated 'list' holds 'tok' (case-insensitive). */
/* Parse one header line (no line end, NUL-terminated at 'len') into h and
 * the response. 0, -EIO (bad line) or -EFBIG (Content-Length too big). */
static int header_line(char *line, size_t len, struct head *h,
                       struct sl_response *r, const char **why)
{
    char *colon = memchr(line, ':', len), *v, *end = line + len;
    int64_t n;

    if (!colon || colon == line) {
        *why = "a header line without a name";
        return -EIO;
    }
    *colon = '\0';
    v = colon + 1;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    *end = '\0';
    if (strcasecmp(line, "Content-Length") == 0) {
        if (!*v || strspn(v, "0123456789") != strlen(v) ||
            sl_parse_int64(v, 0, INT64_MAX, &n) < 0) {
            *why = "a bad Content-Length";
            return -EIO;
        }
        if (h->length >= 0 && h->length != n) {
            *why = "two different Content-Length headers";
            return -EIO;
        }
        if ((uint64_t)n > SL_CLIENT_MAX_BODY)
            return -EFBIG;
        h->length = n;
    } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
        /* Only chunked (after no other coding) is spoken here. */
        for (char *p = v; *p;) {
            size_t tl;
            while (*p == ' ' || *p == '\t' || *p == ',')
                p++;
            tl = strcspn(p, ", \t");
            if (tl == 7 && strncasecmp(p, "chunked", 7) == 0) {
                h->chunked = true;
            } else if (tl && !(tl == 8 && strncasecmp(p, "identity", 8) == 0)) {
                *why = "a Transfer-Encoding other than chunked";
                return -EIO;
            }
            p += tl;
        }
    } else if (strcasecmp(line, "Connection") == 0) {
        h->close |= sl_ws_token_in(v, "close");
        h->keep_alive |= sl_ws_token_in(v, "keep-alive");
    } else if (strcasecmp(line, "X-Sluice-Log-Offset") == 0) {
        char offset[32];
        copy_line(offset, sizeof(offset), v, (size_t)(end - v));
        r->log_offset = sl_parse_int64(offset, 0, INT64_MAX, &n) == 0 ? n : -1;
    } else if (strcasecmp(line, "X-Sluice-Log-Attempts") == 0) {
        char num[32];
        copy_line(num, sizeof(num), v, (size_t)(end - v));
        r->log_attempts = sl_parse_int64(num, 0, INT_MAX, &n) == 0 ? (int)n : -1;
    } else if (strcasecmp(line, "X-Sluice-Job-State") == 0) {
        copy_line(r->job_state, sizeof(r->job_state), v, (size_t)(end - v));
    } else if (strcasecmp(line, "Sec-WebSocket-Accept") == 0) {
        copy_line(h->ws_accept, sizeof(h->ws_accept), v, (size_t)(end - v));
    } else if (strcasecmp(line, "Sec-WebSocket-Protocol") == 0) {
        copy_line(h->ws_protocol, sizeof(h->ws_protocol), v, (size_t)(end - v));
    } else if (strcasecmp(line, "Content-Type") == 0) {
        copy_line(r->content_type, sizeof(r->content_type), v,
                  (size_t)(end - v));
    } else if (strcasecmp(line, "Sluice-Leader") == 0) {
        copy_line(r->leader, sizeof(r->leader), v, (size_t)(end - v));
    }
    return 0;
}

/* Read the status line and headers of one answer (at most HEAD_MAX
 * bytes). */
static int read_head(struct reader *rd, struct head *h, struct sl_response *r,
                     const char **why)
{
    size_t total = 0, len;
    char *line;
    int rc;

    memset(h, 0, sizeof(*h));
    h->length = -1;
    r->log_offset = -1;
    r->log_attempts = -1;
    r->job_state[0] = '\0';
    r->content_type[0] = '\0';
    if ((rc = rd_line(rd, HEAD_MAX, &line, &len)) < 0)
        goto out;
    total += len + 2;
    /* "HTTP/1.x SSS[ reason]" */
    if (len < 12 || strncmp(line, "HTTP/1.", 7) != 0 ||
        (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
        !isdigit((unsigned char)line[9]) ||
        !isdigit((unsigned char)line[10]) ||
        !isdigit((unsigned char)line[11]) || (len > 12 && line[12] != ' ')) {
        *why = "a bad status line";
        rc = -EIO;
        goto out;
    }
    h->minor = line[7] - '0';
    r->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (r->status < 100 || r->status > 599) {
        *why = "a status outside 100..599";
        rc = -EIO;
        goto out;
    }
    for (;;) {
        if ((rc = rd_head_line(rd, &total, &line, &len)) < 0)
            goto out;
        if (len == 0)
            break;
        if (line[0] == ' ' || line[0] == '\t') {
            *why = "a folded header line";
            rc = -EIO;
            goto out;
        }
        line[len] = '\0';
        if ((rc = header_line(line, len, h, r, why)) < 0)
            goto out;
    }
out:
    if (rc == -E2BIG) {
        *why = "answer headers too large";
        rc = -EIO;
    }
    return rc;
}

/* Read a chunked body and its trailers into r. */
static int read_chunked(struct reader *rd, struct sl_response *r, size_t *cap,
                        const char **why)
{
    size_t total = 0, len;
    char *line;
    int rc;

    for (;;) {
        size_t size = 0, i = 0;

        if ((rc = rd_line(rd, CHUNK_LINE_MAX, &line, &len)) < 0)
            goto out;
        for (; i < len && isxdigit((unsigned char)line[i]); i++) {
            int d = isdigit((unsigned char)line[i])
                        ? line[i] - '0'
                        : tolower((unsigned char)line[i]) - 'a' + 10;
            size = size * 16 + (size_t)d;
            /* Bounded before it can overflow: the body cap is far below. */
            if (size > SL_CLIENT_MAX_BODY)
                return -EFBIG;
        }
        if (i == 0 || (i < len && line[i] != ';' && line[i] != ' ' &&
                       line[i] != '\t')) {
            *why = "a bad chunk size";
            return -EIO;
        }
        if (size == 0)
            break;
        if ((rc = body_read(rd, r, cap, size)) < 0)
            return rc;
        if ((rc = rd_line(rd, CHUNK_LINE_MAX, &line, &len)) < 0)
            goto out;
        if (len != 0) {
            *why = "a chunk longer than its size";
            return -EIO;
        }
    }
    /* Trailers, up to an empty line; their values are not used. */
    for (;;) {
        if ((rc = rd_head_line(rd, &total, &line, &len)) < 0)
            goto out;
        if (len == 0)
            break;
    }
out:
    if (rc == -E2BIG) {
        *why = "a chunk or trailer line too long";
        rc = -EIO;
    }
    return rc;
}

/* Read one whole answer into r: 0, or a negated errno with *why set for
 * -EIO. *keep tells whether the connection may carry another request. */
static int read_answer(struct reader *rd, const char *method,
                       struct sl_response *r, bool *keep, const char **why,
                       struct head *upgraded)
{
    struct head h;
    size_t cap = 0;
    bool until_close = false; /* no length: the body ends at EOF */
    int rc;

    *keep = false;
    do {
        if ((rc = read_head(rd, &h, r, why)) < 0)
            return rc;
        if (r->status == 101 && upgraded) {
            *upgraded = h; /* the connection is the new protocol's now */
            return 0;
        }
        if (r->status == 101) {
            *why = "an unexpected protocol switch";
            return -EIO;
        }
    } while (r->status < 200); /* 1xx: an interim answer, the real one follows */

    if (strcmp(method, "HEAD") == 0 || r->status == 204 || r->status == 304) {
        rc = 0;
    } else if (h.chunked) {
        rc = read_chunked(rd, r, &cap, why);
    } else if (h.length >= 0) {
        rc = body_read(rd, r, &cap, (size_t)h.length);
    } else {
        until_close = true;
        rc = body_read(rd, r, &cap, SIZE_MAX);
    }
    if (rc < 0)
        return rc;
    /* Reuse only a connection left exactly at the end of this answer. */
    *keep = (h.minor == 1 ? !h.close : h.keep_alive && !h.close) &&
            !until_close && !(h.chunked && h.length >= 0) &&
            rd->pos == rd->end;
    if (!r->body && !(r->body = calloc(1, 1)))
        return -ENOMEM;
    return 0;
}

/* Fill r->error from a 4xx/5xx answer: the error object when the body is
 * one, else the status and the first line of the body. */
static void decode_error(struct sl_response *r)
{
    struct sl_api_error *e = &r->error;
    json_t *doc = NULL, *obj;
    const char *s;

    if (r->body && r->len)
        doc = json_loadb(r->body, r->len, 0, NULL);
    obj = doc ? json_object_get(doc, "error") : NULL;
    if (json_is_object(obj)) {
        if ((s = json_string_value(json_object_get(obj, "code"))))
            copy_line(e->code, sizeof(e->code), s, strlen(s));
        if ((s = json_string_value(json_object_get(obj, "message"))))
            copy_line(e->message, sizeof(e->message), s, strlen(s));
        if ((s = json_string_value(json_object_get(obj, "field"))))
            copy_line(e->field, sizeof(e->field), s, strlen(s));
    }
    if (!e->code[0]) {
        for (size_t i = 0; i < SL_ARRAY_LEN(status_codes); i++)
            if (status_codes[i].status == r->status)
                sl_strlcpy(e->code, status_codes[i].code, sizeof(e->code));
        if (!e->code[0])
            snprintf(e->code, sizeof(e->code), "http_%ld", r->status);
    }
    if (!e->message[0]) {
        char first[160] = "";
        if (r->body && !doc) {
            size_t n = strcspn(r->body, "\r\n");
            copy_line(first, sizeof(first), r->body, n);
        }
        snprintf(e->message, sizeof(e->message), "server answered HTTP %ld%s%s",
                 r->status, first[0] ? ": " : "", first);
    }
    json_decref(doc);
}

/* The message and errno for a request that failed after it was sent to
 * 'server' ('url' the whole URL). */
static int answer_error(const char *server, const struct reader *rd, int rc,
                        const char *why, const char *url, struct sl_response *r)
{
    switch (rc) {
    case -ETIMEDOUT:
        return fail(r, -ETIMEDOUT, "timed out after %d s waiting for %.300s",
                    SL_CLIENT_TIMEOUT_MS / 1000, server);
    case -EFBIG:
        return fail(r, -EFBIG, "answer from %.512s is larger than %zu MiB", url,
                    SL_CLIENT_MAX_BODY >> 20);
    case -ENOMEM:
        return fail(r, -ENOMEM, "out of memory reading the answer from %.512s",
                    url);
    case EOF_RC:
        return fail(r, -ECONNRESET,
                    rd->got_any ? "connection to %.300s closed in the middle "
                                  "of the answer"
                                : "connection to %.300s closed before an "
                                  "answer came",
                    server);
    case -EIO:
        if (why)
            return fail(r, -EIO, "bad answer from %.300s: %s", server, why);
        break;
    default:
        break;
    }
    return fail(r, -ECONNRESET, "connection lost to %.300s: %s", server,
                strerror(-rc));
}

/* Whether 'method' is a plausible method name: 1..METHOD_MAX letters. */
static bool method_valid(const char *method)
{
    size_t n = 0;

    for (const char *p = method; *p; p++, n++)
        if (*p < 'A' || *p > 'Z')
            return false;
    return n > 0 && n <= METHOD_MAX;
}

static bool ctype_valid(const char *ct)
{
    size_t n = 0;

    for (const char *p = ct; *p; p++, n++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            return false;
    return n > 0 && n <= CTYPE_MAX;
}

/* The request's arguments, checked before anything is sent; its URL into
 * 'url' (for messages). Returns 0, or -EINVAL with resp->error.message
 * set. */
static int request_check(const struct sl_client *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t len,
                         char url[SL_CLIENT_MAX_URL], struct sl_response *resp)
{
    if (!method || !path || path[0] != '/' || (len && !body) ||
        !method_valid(method) || (content_type && !ctype_valid(content_type))) {
        sl_strlcpy(resp->error.message, "bad request arguments",
                   sizeof(resp->error.message));
        return -EINVAL;
    }
    if (len && !content_type) {
        /* The server refuses such a body (415): say so before sending. */
        sl_strlcpy(resp->error.message, "a request body needs a Content-Type",
                   sizeof(resp->error.message));
        return -EINVAL;
    }
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
            sl_strlcpy(resp->error.message,
                       "request path holds a space or "
                       "control character",
                       sizeof(resp->error.message));
            return -EINVAL;
        }
    if ((size_t)snprintf(url, SL_CLIENT_MAX_URL, "%s%s", c->server, path) >=
        SL_CLIENT_MAX_URL) {
        sl_strlcpy(resp->error.message, "request URL too long",
                   sizeof(resp->error.message));
        return -EINVAL;
    }
    return 0;
}

/* The request line and headers into 'head' (head->failed without
 * memory). */
static void request_head(struct sl_buf *head, const struct sl_client *c, const char *method,
                         const char *path, const char *content_type, size_t len)
{
    sl_buf_printf(head, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", method, c->prefix,
                  path, c->authority);
    sl_buf_adds(head, "User-Agent: sluice/" SLUICE_VERSION "\r\n"
                      "Accept: application/json, text/plain\r\n");
    if (c->auth_header)
        sl_buf_adds(head, c->auth_header);
    if (content_type)
        sl_buf_printf(head, "Content-Type: %s\r\n", content_type);
    if (len || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
        strcmp(method, "PATCH") == 0)
        sl_buf_printf(head, "Content-Length: %zu\r\n", len);
    sl_buf_adds(head, "\r\n");
}

/* Send the head and body on the kept-alive connection, or a new one. A
 * kept-alive connection the server has closed (or that holds stray bytes)
 * is dropped before anything is written to it; one that fails before a
 * byte of this request reached it is replaced. Returns 0, or a negated
 * errno with resp->error set and the connection closed. */
static int request_send(struct sl_client *c, const struct sl_buf *head, const char *body,
                        size_t len, int64_t deadline_ms, struct sl_response *resp)
{
    size_t sent = 0;
    bool reused;
    int rc;

    if (c->fd >= 0 && !conn_idle(c->fd, c->ssl))
        conn_close(c);
    for (;;) {
        reused = c->fd >= 0;
        if (!reused && (rc = conn_open(c, deadline_ms, resp)) < 0)
            return rc;
        rc = send_all(c->fd, c->ssl, head->data, head->len, body, len, deadline_ms,
                      &sent);
        if (rc == 0)
            return 0;
        conn_close(c);
        /* Nothing of this request reached the old connection: a new one
         * may carry it. Once a byte is out, it is never sent again. */
        if (reused && sent == 0 && rc != -ETIMEDOUT)
            continue;
        if (rc == -ETIMEDOUT)
            return fail(resp, -ETIMEDOUT,
                        "timed out after %d s sending the request to %.300s",
                        SL_CLIENT_TIMEOUT_MS / 1000, c->server);
        return fail(resp, -ECONNRESET,
                    "connection lost to %.300s while sending the request: "
                    "%s",
                    c->server, strerror(-rc));
    }
}

/* Talk to 'url' from now on (a follower named the leader): the same
 * token, a new connection. 0, or -errno with the client unchanged. */
static int retarget(struct sl_client *c, const char *url)
{
    struct sl_client *n = sl_client_create(url, NULL);
    char port[sizeof(c->port)];

    if (!n)
        return -errno;
    conn_close(c);
#define SWAP(f)                                                                  \
    do {                                                                         \
        char *t = c->f;                                                          \
        c->f = n->f;                                                             \
        n->f = t;                                                                \
    } while (0)
    SWAP(server);
    SWAP(host);
    SWAP(authority);
    SWAP(prefix);
#undef SWAP
    c->https = n->https;
    memcpy(port, c->port, sizeof(port));
    memcpy(c->port, n->port, sizeof(port));
    memcpy(n->port, port, sizeof(port));
    sl_client_destroy(n);
    return 0;
}

static int request_once(struct sl_client *c, const char *method, const char *path,
                        const char *content_type, const char *body, size_t len,
                        struct sl_response *resp);

int sl_client_request(struct sl_client *c, const char *method, const char *path,
                      const char *content_type, const char *body, size_t len,
                      struct sl_response *resp)
{
    int rc = request_once(c, method, path, content_type, body, len, resp);

    /* A follower of several daemons on one store sends every request to
     * the leader (307, Sluice-Leader: docs/ha.md): follow it, twice at
     * most (a takeover in between), with the same method and body, to an
     * http:// or https:// URL only (verified as the first server was);
     * later requests go there directly. */
    for (int hop = 0; hop < 2 && rc == 0 && (resp->status == 307 || resp->status == 308) &&
                      (strncmp(resp->leader, "http://", 7) == 0 ||
                       strncmp(resp->leader, "https://", 8) == 0);
         hop++) {
        char leader[sizeof(resp->leader)];
        sl_strlcpy(leader, resp->leader, sizeof(leader));
        if (retarget(c, leader) < 0)
            break;
        sl_response_fini(resp);
        rc = request_once(c, method, path, content_type, body, len, resp);
    }
    return rc;
}

static int request_once(struct sl_client *c, const char *method, const char *path,
                        const char *content_type, const char *body, size_t len,
                        struct sl_response *resp)
{
    struct sl_buf head;
    struct reader rd = {.fd = -1};
    char url[SL_CLIENT_MAX_URL];
    const char *why = NULL;
    bool keep = false;
    int64_t deadline_ms = sl_mono_ms() + SL_CLIENT_TIMEOUT_MS;
    int rc = 0;

    sl_buf_init(&head);
    memset(resp, 0, sizeof(*resp));
    resp->log_offset = -1;
    resp->log_attempts = -1;
    if ((rc = request_check(c, method, path, content_type, body, len, url, resp)) < 0)
        return rc;
    request_head(&head, c, method, path, content_type, len);
    if (head.failed || !(rd.buf = malloc(HEAD_MAX + 1))) {
        rc = fail(resp, -ENOMEM, "out of memory");
        goto out;
    }
    rd.cap = HEAD_MAX + 1;
    rd.deadline_ms = deadline_ms;
    if ((rc = request_send(c, &head, body, len, deadline_ms, resp)) < 0)
        goto out;
    rd.fd = c->fd;
    rd.ssl = c->ssl;
    if ((rc = read_answer(&rd, method, resp, &keep, &why, NULL)) < 0) {
        rc = answer_error(c->server, &rd, rc, why, url, resp);
        keep = false;
        goto out;
    }
    if (resp->status >= 400)
        decode_error(resp);
out:
    if (!keep)
        conn_close(c);
    if (head.data)
        /* The head holds the token: do not leave it in freed memory. */
        memset(head.data, 0, head.cap);
    sl_buf_fini(&head);
    free(rd.buf);
    return rc;
}

int sl_client_upgrade(struct sl_client *c, const char *path, const char *protocol,
                      struct sl_stream **st, char **early, size_t *nearly,
                      struct sl_response *resp)
{
    struct sl_buf head;
    struct reader rd = {.fd = -1};
    struct head h;
    char url[SL_CLIENT_MAX_URL], key[SL_WS_KEY_LEN + 1], want[SL_WS_ACCEPT_LEN + 1];
    const char *why = NULL;
    uint8_t nonce[16];
    bool keep = false;
    int64_t deadline_ms = sl_mono_ms() + SL_CLIENT_TIMEOUT_MS;
    int rc;

    *st = NULL;
    *early = NULL;
    *nearly = 0;
    memset(resp, 0, sizeof(*resp));
    resp->log_offset = -1;
    sl_buf_init(&head);
    if ((rc = request_check(c, "GET", path, NULL, NULL, 0, url, resp)) < 0)
        return rc;
    if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
        return fail(resp, -EIO, "no random bytes for the WebSocket key");
    sl_ws_key_make(nonce, key);
    /* A connection of its own: after the switch it is no longer HTTP. */
    conn_close(c);
    sl_buf_printf(&head, "GET %s%s HTTP/1.1\r\nHost: %s\r\n", c->prefix, path, c->authority);
    sl_buf_adds(&head, "User-Agent: sluice/" SLUICE_VERSION "\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n");
    sl_buf_printf(&head, "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: %s\r\n", key,
                  protocol);
    if (c->auth_header)
        sl_buf_adds(&head, c->auth_header);
    sl_buf_adds(&head, "\r\n");
    if (head.failed || !(rd.buf = malloc(HEAD_MAX + 1))) {
        rc = fail(resp, -ENOMEM, "out of memory");
        goto out;
    }
    rd.cap = HEAD_MAX + 1;
    rd.deadline_ms = deadline_ms;
    if ((rc = request_send(c, &head, NULL, 0, deadline_ms, resp)) < 0)
        goto out;
    rd.fd = c->fd;
    rd.ssl = c->ssl;
    memset(&h, 0, sizeof(h));
    if ((rc = read_answer(&rd, "GET", resp, &keep, &why, &h)) < 0) {
        rc = answer_error(c->server, &rd, rc, why, url, resp);
        keep = false;
        goto out;
    }
    if (resp->status != 101) {
        if (resp->status >= 400)
            decode_error(resp);
        goto out;
    }
    keep = false;
    sl_ws_accept(key, want);
    if (strcmp(h.ws_accept, want) != 0 || strcmp(h.ws_protocol, protocol) != 0) {
        rc = fail(resp, -EIO, "%.300s switched protocols without the WebSocket handshake "
                              "asked for (Sec-WebSocket-Accept, Sec-WebSocket-Protocol)",
                  c->server);
        goto out;
    }
    if (!(*st = calloc(1, sizeof(**st))) ||
        (rd.end > rd.pos && !(*early = malloc(rd.end - rd.pos)))) {
        free(*st);
        *st = NULL;
        rc = fail(resp, -ENOMEM, "out of memory");
        goto out;
    }
    if (rd.end > rd.pos) {
        memcpy(*early, rd.buf + rd.pos, rd.end - rd.pos);
        *nearly = rd.end - rd.pos;
    }
    /* The connection, its TLS session with it, is the stream's now. */
    (*st)->fd = c->fd;
    (*st)->ssl = c->ssl;
    (*st)->rd_events = POLLIN;
    (*st)->wr_events = POLLOUT;
    c->fd = -1;
    c->ssl = NULL;
out:
    if (!keep)
        conn_close(c);
    if (head.data)
        memset(head.data, 0, head.cap); /* it holds the token */
    sl_buf_fini(&head);
    free(rd.buf);
    return rc;
}

int sl_stream_fd(const struct sl_stream *st)
{
    return st->fd;
}

/* What an SSL read or write that returned 'n' <= 0 means: -EAGAIN with
 * *events what it waits for, 0 at the peer's end (reads), or -errno. */
static ssize_t stream_tls_result(SSL *ssl, int n, short *events, short same)
{
    int e = SSL_get_error(ssl, n), err = errno;

    ERR_clear_error();
    switch (e) {
    case SSL_ERROR_WANT_READ:
        *events = POLLIN;
        return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        *events = POLLOUT;
        return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return same == POLLIN ? 0 : -EPIPE;
    case SSL_ERROR_SYSCALL:
        /* a close without close_notify, as read() sees it */
        if (err == 0)
            return same == POLLIN ? 0 : -EPIPE;
        return err == EPIPE ? -EPIPE : -ECONNRESET;
    default:
        return -EPROTO;
    }
}

ssize_t sl_stream_read(struct sl_stream *st, void *buf, size_t len)
{
    ssize_t n;

    st->rd_events = POLLIN;
    if (st->ssl) {
        struct nopipe np;
        size_t got = 0;
        int rc;
        errno = 0;
        nopipe_begin(&np); /* a read may answer the server (an alert) */
        rc = SSL_read_ex(st->ssl, buf, len, &got);
        n = rc == 1 ? (ssize_t)got : stream_tls_result(st->ssl, rc, &st->rd_events, POLLIN);
        nopipe_end(&np);
        return n;
    }
    n = read(st->fd, buf, len);
    if (n >= 0)
        return n;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
}

ssize_t sl_stream_write(struct sl_stream *st, const void *buf, size_t len)
{
    ssize_t n;

    st->wr_events = POLLOUT;
    if (st->ssl) {
        struct nopipe np;
        size_t put = 0;
        int rc;
        errno = 0;
        nopipe_begin(&np);
        rc = SSL_write_ex(st->ssl, buf, len, &put);
        n = rc == 1 ? (ssize_t)put : stream_tls_result(st->ssl, rc, &st->wr_events, POLLOUT);
        nopipe_end(&np);
        return n;
    }
    /* MSG_NOSIGNAL: a closed connection is an error, not a SIGPIPE. */
    n = send(st->fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0)
        return n;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
}

short sl_stream_read_events(const struct sl_stream *st)
{
    return st->rd_events;
}

short sl_stream_write_events(const struct sl_stream *st)
{
    return st->wr_events;
}

bool sl_stream_pending(const struct sl_stream *st)
{
    return st->ssl && SSL_pending(st->ssl) > 0;
}

void sl_stream_close(struct sl_stream *st)
{
    int saved = errno;

    if (!st)
        return;
    if (st->ssl) {
        struct nopipe np;
        nopipe_begin(&np);
        /* close_notify as far as the socket takes it now: the server reads
         * a clean end rather than a truncation */
        if (SSL_is_init_finished(st->ssl))
            SSL_shutdown(st->ssl);
        nopipe_end(&np);
        SSL_free(st->ssl);
        ERR_clear_error();
    }
    if (st->fd >= 0)
        close(st->fd);
    free(st);
    errno = saved;
}

int sl_client_parse_answer(const char *data, size_t len, size_t step,
                           const char *method, struct sl_response *resp, bool *keep)
{
    struct reader rd = {.fd = -1, .src = data, .src_len = len, .src_step = step};
    const char *why = NULL;
    int rc;

    memset(resp, 0, sizeof(*resp));
    resp->log_offset = -1;
    resp->log_attempts = -1;
    *keep = false;
    if (!method || !method_valid(method) || (len && !data)) {
        sl_strlcpy(resp->error.message, "bad arguments", sizeof(resp->error.message));
        return -EINVAL;
    }
    if (!(rd.buf = malloc(HEAD_MAX + 1)))
        return fail(resp, -ENOMEM, "out of memory");
    rd.cap = HEAD_MAX + 1;
    rd.deadline_ms = INT64_MAX;
    if ((rc = read_answer(&rd, method, resp, keep, &why, NULL)) < 0) {
        rc = answer_error("memory", &rd, rc, why, "memory", resp);
        *keep = false;
    } else if (resp->status >= 400) {
        decode_error(resp);
    }
    free(rd.buf);
    return rc;
}

int sl_client_json(struct sl_client *c, const char *method, const char *path,
                   const json_t *body, json_t **out, struct sl_response *resp)
{
    char *text = NULL;
    json_error_t jerr;
    int rc;

    *out = NULL;
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        memset(resp, 0, sizeof(*resp));
        resp->log_offset = -1;
        resp->log_attempts = -1;
        sl_strlcpy(resp->error.message, "out of memory",
                   sizeof(resp->error.message));
        return -ENOMEM;
    }
    rc = sl_client_request(c, method, path, text ? "application/json" : NULL,
                           text, text ? strlen(text) : 0, resp);
    free(text);
    if (rc < 0 || resp->status < 200 || resp->status >= 300 || !resp->len)
        return rc;
    if (!(*out = json_loadb(resp->body, resp->len, 0, &jerr))) {
        snprintf(resp->error.message, sizeof(resp->error.message),
                 "the server's answer to %s %s is not JSON: %s", method, path,
                 jerr.text);
        return -EPROTO;
    }
    return 0;
}

char *sl_client_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out, *o;

    if (n > (SIZE_MAX - 1) / 3 || !(out = malloc(3 * n + 1))) {
        errno = ENOMEM;
        return NULL;
    }
    o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
            *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}
