/*
 * test_tls.c - unit tests of the server's TLS context (src/http/tls.c):
 * what loads and what is refused with which message (a PEM that is not
 * one, a key that does not match its certificate, a key file others may
 * read, a client CA that does not load), a reload that fails keeping the
 * context in force and one that works reaching new connections only, and
 * the client certificate's CN as the peer's user after a handshake over a
 * socket pair. Keys and certificates are made here with OpenSSL; the file
 * under test is compiled in directly.
 */
#include "../../src/http/tls.c"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../tap.h"

static char dir[] = "/tmp/sluice-test-tls.XXXXXX";

/* The file 'name' in the test's directory; each name has a buffer of its
 * own, so that a path stays valid while the test runs. */
static const char *path(const char *name)
{
    static char buf[16][256];
    static int n;

    for (int i = 0; i < n; i++)
        if (strcmp(strrchr(buf[i], '/') + 1, name) == 0)
            return buf[i];
    snprintf(buf[n], sizeof(buf[n]), "%s/%s", dir, name);
    return buf[n++];
}

static void write_text(const char *name, const char *text, mode_t mode)
{
    int fd = open(path(name), O_WRONLY | O_CREAT | O_TRUNC, mode);

    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        perror(name);
    close(fd);
    chmod(path(name), mode);
}

/* A P-256 key. */
static EVP_PKEY *key_new(void)
{
    return EVP_EC_gen("P-256");
}

/* A certificate for 'cn' with key 'k', signed by 'ca_key' as 'issuer'
 * (NULL: self-signed). */
static X509 *cert_new(const char *cn, EVP_PKEY *k, X509 *issuer, EVP_PKEY *ca_key, long serial)
{
    X509 *x = X509_new();
    X509_NAME *n = X509_get_subject_name(x);

    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, k);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
    if (!issuer) {
        X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, NID_basic_constraints, "critical,CA:TRUE");
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    X509_sign(x, issuer ? ca_key : k, EVP_sha256());
    return x;
}

static void save(const char *name, X509 *x, EVP_PKEY *k, mode_t mode)
{
    FILE *f = fopen(path(name), "w");

    if (x)
        PEM_write_X509(f, x);
    if (k)
        PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    chmod(path(name), mode);
}

/* Drive a handshake between server 's' and client 'c' over a socket pair
 * (both non-blocking) until both are done or one fails. */
static bool handshake(SSL *s, SSL *c)
{
    char b[1];
    for (int i = 0; i < 100; i++) {
        int rc = SSL_do_handshake(c);
        ssize_t n = sl_tls_read(s, b, sizeof(b));
        if (n == SL_TLS_FAILED)
            return false;
        if (rc == 1 && sl_tls_ready(s))
            return true;
        if (rc <= 0 && SSL_get_error(c, rc) != SSL_ERROR_WANT_READ &&
            SSL_get_error(c, rc) != SSL_ERROR_WANT_WRITE)
            return false;
    }
    return false;
}

int main(void)
{
    struct sl_error err;
    EVP_PKEY *ca_key, *other_key, *alice_key;
    X509 *ca, *ca2, *alice, *odd;
    struct sl_tls *t;
    struct sl_tls_config cfg = {0};
    int sv[2];

    /* as sluiced: a write to a peer that is gone fails, it does not kill */
    signal(SIGPIPE, SIG_IGN);
    memset(&err, 0, sizeof(err));
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    ca_key = key_new();
    other_key = key_new();
    alice_key = key_new();
    ca = cert_new("Test CA", ca_key, NULL, NULL, 1);
    ca2 = cert_new("Test CA", ca_key, NULL, NULL, 2);
    alice = cert_new("alice", alice_key, ca, ca_key, 3);
    odd = cert_new("alice smith!", alice_key, ca, ca_key, 4);
    save("cert.pem", ca, NULL, 0644);
    save("cert2.pem", ca2, NULL, 0644);
    save("key.pem", NULL, ca_key, 0600);
    save("other.pem", NULL, other_key, 0600);
    save("readable.pem", NULL, ca_key, 0640);
    save("alice.pem", alice, alice_key, 0600);
    save("odd.pem", odd, alice_key, 0600);
    write_text("junk.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all\n", 0644);

    cfg.cert_file = path("cert.pem");
    cfg.key_file = path("key.pem");
    t = sl_tls_create(&cfg, &err);
    ok(t != NULL, "a certificate and its key (mode 0600) load (%s)", err.text);
    sl_tls_destroy(t);

    cfg.key_file = path("readable.pem");
    errno = 0;
    ok(!sl_tls_create(&cfg, &err) && errno == EACCES, "a key file the group may read is refused");
    ok(strstr(err.text, "--tls-key") && strstr(err.text, "mode 0640") &&
           strstr(err.text, "chmod 600"),
       "saying which file, its mode and the fix (%s)", err.text);

    cfg.key_file = path("key.pem");
    cfg.cert_file = path("junk.pem");
    errno = 0;
    ok(!sl_tls_create(&cfg, &err) && errno == EINVAL, "a PEM that is not a certificate is refused");
    ok(strstr(err.text, "--tls-cert") && strstr(err.text, "junk.pem"), "naming the file (%s)",
       err.text);

    cfg.cert_file = path("cert.pem");
    cfg.key_file = path("other.pem");
    errno = 0;
    ok(!sl_tls_create(&cfg, &err) && errno == EINVAL, "a key of another certificate is refused");
    ok(strstr(err.text, "does not match the certificate"), "saying so (%s)", err.text);

    cfg.key_file = path("missing.pem");
    ok(!sl_tls_create(&cfg, &err) && strstr(err.text, "missing.pem") &&
           strstr(err.text, "No such file"),
       "a key file that is not there is named (%s)", err.text);

    cfg.key_file = path("key.pem");
    cfg.client_ca_file = path("junk.pem");
    ok(!sl_tls_create(&cfg, &err) && strstr(err.text, "--tls-client-ca"),
       "a client CA that does not load is refused (%s)", err.text);

    /* Reload: a failure keeps what is in force, a success reaches new
     * connections only. */
    cfg.client_ca_file = path("cert.pem");
    write_text("live.pem", "", 0644);
    save("live.pem", ca, NULL, 0644);
    cfg.cert_file = path("live.pem");
    t = sl_tls_create(&cfg, &err);
    ok(t != NULL, "a context with a client CA (%s)", err.text);
    if (t) {
        SSL *before, *after, *client;
        SSL_CTX *cctx;
        char user[64];

        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
        before = sl_tls_conn_new(t, sv[0]);
        write_text("live.pem", "garbage\n", 0644);
        ok(sl_tls_reload(t, &err) == -EINVAL && strstr(err.text, "live.pem"),
           "a reload of a bad file fails, naming it (%s)", err.text);
        after = sl_tls_conn_new(t, sv[0]);
        ok(after && X509_cmp(SSL_get_certificate(after), ca) == 0,
           "and new connections still get the certificate in force");
        SSL_free(after);
        save("live.pem", ca2, NULL, 0644);
        is_int(sl_tls_reload(t, &err), 0, "a reload of a good file works");
        after = sl_tls_conn_new(t, sv[0]);
        ok(after && X509_cmp(SSL_get_certificate(after), ca2) == 0,
           "a new connection gets the new certificate");
        ok(X509_cmp(SSL_get_certificate(before), ca) == 0,
           "one made before keeps the old one");
        SSL_free(before);
        SSL_free(after);

        /* A handshake with a client certificate: its CN is the user. */
        cctx = SSL_CTX_new(TLS_client_method());
        SSL_CTX_use_certificate_file(cctx, path("alice.pem"), SSL_FILETYPE_PEM);
        SSL_CTX_use_PrivateKey_file(cctx, path("alice.pem"), SSL_FILETYPE_PEM);
        after = sl_tls_conn_new(t, sv[0]);
        client = SSL_new(cctx);
        SSL_set_fd(client, sv[1]);
        SSL_set_connect_state(client);
        ok(handshake(after, client), "a handshake with a client certificate of the CA");
        ok(sl_tls_peer_user(after, user, sizeof(user)) && strcmp(user, "alice") == 0,
           "its subject CN is the peer's user (%s)", user);
        ok(!sl_tls_peer_user(after, user, 5), "a CN longer than the buffer is not taken");
        SSL_free(after);
        SSL_free(client);
        close(sv[0]);
        close(sv[1]);

        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
        SSL_CTX_use_certificate_file(cctx, path("odd.pem"), SSL_FILETYPE_PEM);
        after = sl_tls_conn_new(t, sv[0]);
        client = SSL_new(cctx);
        SSL_set_fd(client, sv[1]);
        SSL_set_connect_state(client);
        ok(handshake(after, client) && !sl_tls_peer_user(after, user, sizeof(user)),
           "a CN that is not a user name (a space, '!') names no user");
        SSL_free(after);
        SSL_free(client);
        close(sv[0]);
        close(sv[1]);

        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
        after = sl_tls_conn_new(t, sv[0]);
        client = SSL_new(cctx);
        SSL_free(client);
        client = NULL;
        {
            SSL_CTX *plain = SSL_CTX_new(TLS_client_method());
            client = SSL_new(plain);
            SSL_CTX_free(plain);
        }
        SSL_set_fd(client, sv[1]);
        SSL_set_connect_state(client);
        ok(handshake(after, client) && !sl_tls_peer_user(after, user, sizeof(user)),
           "without a client certificate there is no peer user");
        SSL_free(after);
        SSL_free(client);
        close(sv[0]);
        close(sv[1]);
        {
            uint64_t hs0, f0, hs1, f1;
            char b[16];
            ssize_t n;

            /* A peer gone without close_notify once its side of the
             * handshake is done: a read that fails, not a handshake that
             * failed. Gone at once, while our session tickets (TLS 1.3)
             * are still to go, then gone later, with our bytes unread. */
            for (int later = 0; later < 2; later++) {
                int rc = 0;
                socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
                after = sl_tls_conn_new(t, sv[0]);
                client = SSL_new(cctx);
                SSL_set_fd(client, sv[1]);
                SSL_set_connect_state(client);
                for (int i = 0; i < 100 && rc != 1; i++)
                    if ((rc = SSL_do_handshake(client)) != 1)
                        sl_tls_read(after, b, sizeof(b));
                if (later)
                    rc = rc == 1 && handshake(after, client) &&
                         sl_tls_write(after, "unread", 6) == 6;
                sl_tls_counts(&hs0, &f0);
                SSL_free(client);
                close(sv[1]);
                n = sl_tls_read(after, b, sizeof(b));
                sl_tls_counts(&hs1, &f1);
                ok(rc == 1 && n == SL_TLS_FAILED && f1 == f0,
                   "a peer gone %s fails the read; no handshake failure is counted "
                   "(%llu then %llu)",
                   later ? "after the handshake, our bytes unread" : "right after its Finished",
                   (unsigned long long)f0, (unsigned long long)f1);
                SSL_free(after);
                close(sv[0]);
            }

            /* Plain HTTP on the TLS port: a handshake that fails, once. */
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
            after = sl_tls_conn_new(t, sv[0]);
            ok(write(sv[1], "GET / HTTP/1.1\r\n\r\n", 18) == 18, "plain HTTP is sent");
            n = sl_tls_read(after, b, sizeof(b));
            sl_tls_counts(&hs1, &f1);
            ok(n == SL_TLS_FAILED && f1 == f0 + 1,
               "on the TLS port it fails the handshake, counted once (%llu then %llu)",
               (unsigned long long)f0, (unsigned long long)f1);
            SSL_free(after);
            close(sv[0]);
            close(sv[1]);
        }
        SSL_CTX_free(cctx);
        sl_tls_destroy(t);
    }
    {
        uint64_t hs, fails;
        sl_tls_counts(&hs, &fails);
        ok(hs >= 3, "completed handshakes are counted (%llu)", (unsigned long long)hs);
    }

    X509_free(ca);
    X509_free(ca2);
    X509_free(alice);
    X509_free(odd);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(other_key);
    EVP_PKEY_free(alice_key);
    {
        const char *names[] = {"cert.pem", "cert2.pem", "key.pem", "other.pem", "readable.pem",
                               "alice.pem", "odd.pem", "junk.pem", "live.pem"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            unlink(path(names[i]));
        rmdir(dir);
    }
    return done_testing();
}
