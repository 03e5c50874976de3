/*
 * tls.c - the HTTP server's TLS (tls.h): OpenSSL contexts, their reload,
 * and non-blocking per-connection reads and writes.
 *
 * The context in force is one pointer under a mutex. A reload builds a
 * whole new context first and swaps it in only when every file loaded, so
 * a bad certificate on disk never replaces a good one in memory; each
 * SSL holds a reference to the context it was made from, so connections
 * open across a reload keep theirs, and the old context is freed with the
 * last of them.
 */
#include "tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* TLS 1.2: ECDHE key exchange (forward secrecy) and AEAD ciphers only. 1.3
 * suites are OpenSSL's defaults, all AEAD. */
#define TLS12_CIPHERS "ECDHE+AESGCM:ECDHE+CHACHA20"

struct sl_tls {
    pthread_mutex_t mu;           /* guards ctx */
    SSL_CTX *ctx;                 /* in force; owned (one reference) */
    char *cert_file, *key_file, *client_ca_file; /* owned; ca NULL = none */
};

static atomic_uint_fast64_t handshakes, failures;

/* The last OpenSSL error, as text, into buf; the queue is cleared. */
static const char *ossl_why(char *buf, size_t size)
{
    unsigned long e = ERR_peek_last_error();

    if (!e) {
        snprintf(buf, size, "unknown error");
    } else {
        const char *reason = ERR_reason_error_string(e);
        snprintf(buf, size, "%s", reason ? reason : "error");
        if (!reason)
            ERR_error_string_n(e, buf, size);
    }
    ERR_clear_error();
    return buf;
}

static void info_cb(const SSL *ssl, int where, int ret)
{
    (void)ssl;
    (void)ret;
    if (where & SSL_CB_HANDSHAKE_DONE)
        atomic_fetch_add_explicit(&handshakes, 1, memory_order_relaxed);
}

/* The key file may be read by its owner only: it holds the server's
 * secret, and a readable copy lets anyone on the host impersonate it. */
static int key_private(const char *path, struct sl_error *err)
{
    struct stat st;

    if (stat(path, &st) < 0)
        return sl_errorf(err, -errno, "--tls-key %.300s: %s", path, strerror(errno));
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        return sl_errorf(err, -EACCES,
                         "--tls-key %.300s: mode %04o lets other users read or change the "
                         "private key; make it private (chmod 600 %.300s)",
                         path, (unsigned)(st.st_mode & 07777), path);
    return 0;
}

/* A new context from t's files: NULL with 'err' set. */
static SSL_CTX *ctx_load(const struct sl_tls *t, struct sl_error *err)
{
    char why[256];
    SSL_CTX *ctx = NULL;
    int rc;

    if ((rc = key_private(t->key_file, err)) < 0) {
        errno = -rc;
        return NULL;
    }
    ERR_clear_error();
    if (!(ctx = SSL_CTX_new(TLS_server_method()))) {
        sl_errorf(err, -ENOMEM, "TLS: cannot make a context: %s", ossl_why(why, sizeof(why)));
        errno = ENOMEM;
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* Partial writes and a buffer that moves: http.c sends from a buffer
     * it may grow between tries. Released buffers: an idle connection
     * keeps no 34 KiB of record buffers. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* The chain sent is the certificate file's, as the operator wrote it:
     * not one OpenSSL completes from the client CA's store. */
    SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"sluiced", 7);
    SSL_CTX_set_info_callback(ctx, info_cb);
    if (SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) != 1) {
        sl_errorf(err, -EINVAL, "TLS: cipher list: %s", ossl_why(why, sizeof(why)));
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1) {
        sl_errorf(err, -EINVAL, "--tls-cert %.300s: not a PEM certificate that loads: %s",
                  t->cert_file, ossl_why(why, sizeof(why)));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, t->key_file, SSL_FILETYPE_PEM) != 1 &&
        ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
        sl_errorf(err, -EINVAL, "--tls-key %.300s: not a PEM private key that loads: %s",
                  t->key_file, ossl_why(why, sizeof(why)));
        goto fail;
    }
    if (ERR_peek_last_error() || SSL_CTX_check_private_key(ctx) != 1) {
        sl_errorf(err, -EINVAL, "--tls-key %.300s: does not match the certificate in %.300s",
                  t->key_file, t->cert_file);
        ERR_clear_error();
        goto fail;
    }
    if (t->client_ca_file) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->client_ca_file);
        if (!names ||
            SSL_CTX_load_verify_locations(ctx, t->client_ca_file, NULL) != 1) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            sl_errorf(err, -EINVAL, "--tls-client-ca %.300s: no PEM CA certificate loads: %s",
                      t->client_ca_file, ossl_why(why, sizeof(why)));
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names); /* takes 'names' */
        /* Ask for a certificate, verify one that comes, go on without. */
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_verify_depth(ctx, 4);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    errno = EINVAL;
    return NULL;
}

struct sl_tls *sl_tls_create(const struct sl_tls_config *cfg, struct sl_error *err)
{
    struct sl_tls *t = calloc(1, sizeof(*t));
    int saved;

    if (!t || !(t->cert_file = strdup(cfg->cert_file)) ||
        !(t->key_file = strdup(cfg->key_file)) ||
        (cfg->client_ca_file && !(t->client_ca_file = strdup(cfg->client_ca_file)))) {
        sl_errorf(err, -ENOMEM, "out of memory");
        saved = ENOMEM;
        goto fail;
    }
    pthread_mutex_init(&t->mu, NULL);
    if (!(t->ctx = ctx_load(t, err))) {
        saved = errno;
        pthread_mutex_destroy(&t->mu);
        goto fail;
    }
    return t;
fail:
    if (t) {
        free(t->cert_file);
        free(t->key_file);
        free(t->client_ca_file);
        free(t);
    }
    errno = saved;
    return NULL;
}

int sl_tls_reload(struct sl_tls *t, struct sl_error *err)
{
    SSL_CTX *ctx = ctx_load(t, err), *old;

    if (!ctx)
        return -errno;
    pthread_mutex_lock(&t->mu);
    old = t->ctx;
    t->ctx = ctx;
    pthread_mutex_unlock(&t->mu);
    SSL_CTX_free(old); /* open connections hold their own references */
    return 0;
}

void sl_tls_destroy(struct sl_tls *t)
{
    int saved = errno;

    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    pthread_mutex_destroy(&t->mu);
    free(t->cert_file);
    free(t->key_file);
    free(t->client_ca_file);
    free(t);
    errno = saved;
}

struct ssl_st *sl_tls_conn_new(struct sl_tls *t, int fd)
{
    SSL *ssl;

    pthread_mutex_lock(&t->mu);
    ssl = SSL_new(t->ctx);
    pthread_mutex_unlock(&t->mu);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        errno = ENOMEM;
        return NULL;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

/* What an SSL_read or SSL_write that returned 'n' <= 0 means. */
static ssize_t io_result(SSL *ssl, int n)
{
    int e = SSL_get_error(ssl, n);

    switch (e) {
    case SSL_ERROR_WANT_READ:
        return SL_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return SL_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default: {
        /* A handshake that fails (a plain-HTTP client, an old protocol, a
         * certificate from another CA) is counted once: its SSL is freed
         * right after. Not a connection that fails once the client's
         * Finished came: one gone without close_notify while our TLS 1.3
         * session tickets were still to go is "in init" for OpenSSL, but
         * its handshake did not fail. */
        unsigned char fin[1];
        if (SSL_get_peer_finished(ssl, fin, sizeof(fin)) == 0)
            atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
        ERR_clear_error();
        return SL_TLS_FAILED;
    }
    }
}

ssize_t sl_tls_read(struct ssl_st *ssl, void *buf, size_t len)
{
    size_t got = 0;
    int rc = SSL_read_ex(ssl, buf, len, &got);

    return rc == 1 ? (ssize_t)got : io_result(ssl, rc);
}

ssize_t sl_tls_write(struct ssl_st *ssl, const void *buf, size_t len)
{
    size_t put = 0;
    int rc = SSL_write_ex(ssl, buf, len, &put);

    return rc == 1 ? (ssize_t)put : io_result(ssl, rc);
}

bool sl_tls_pending(struct ssl_st *ssl)
{
    return SSL_has_pending(ssl) == 1;
}

size_t sl_tls_readable(struct ssl_st *ssl)
{
    int n = SSL_pending(ssl);

    return n > 0 ? (size_t)n : 0;
}

int sl_tls_shutdown(struct ssl_st *ssl)
{
    int rc;

    ERR_clear_error();
    rc = SSL_shutdown(ssl);
    if (rc >= 0)
        return 0; /* 0: ours is out, the peer's still to come; 1: both */
    return (int)io_result(ssl, rc);
}

bool sl_tls_ready(struct ssl_st *ssl)
{
    return SSL_is_init_finished(ssl) == 1;
}

bool sl_tls_peer_user(struct ssl_st *ssl, char *buf, size_t size)
{
    X509 *cert = SSL_get0_peer_certificate(ssl);
    X509_NAME *subject;
    const ASN1_STRING *cn;
    const unsigned char *p;
    int i, n;

    buf[0] = '\0';
    if (!cert || SSL_get_verify_result(ssl) != X509_V_OK ||
        !(subject = X509_get_subject_name(cert)) ||
        (i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1)) < 0 ||
        !(cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i))))
        return false;
    p = ASN1_STRING_get0_data(cn);
    n = ASN1_STRING_length(cn);
    if (n < 1 || (size_t)n >= size)
        return false;
    for (int k = 0; k < n; k++)
        if (!((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') ||
              (p[k] >= '0' && p[k] <= '9') || strchr("._@-", p[k])) || !p[k])
            return false;
    memcpy(buf, p, (size_t)n);
    buf[n] = '\0';
    return true;
}

void sl_tls_conn_free(struct ssl_st *ssl)
{
    if (!ssl)
        return;
    if (SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
        SSL_shutdown(ssl); /* one try: close_notify if the socket takes it */
    ERR_clear_error();
    SSL_free(ssl);
}

void sl_tls_counts(uint64_t *hs, uint64_t *fails)
{
    *hs = atomic_load_explicit(&handshakes, memory_order_relaxed);
    *fails = atomic_load_explicit(&failures, memory_order_relaxed);
}
