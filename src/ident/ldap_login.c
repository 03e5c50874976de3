/*
 * ldap_login.c - LDAP and Active Directory logins (ldap_login.h).
 */
#define LDAP_DEPRECATED 0
#include "ldap_login.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <ldap.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

int sl_ldap_escape(const char *s, char *dst, size_t size)
{
    size_t n = 0;

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '*' || c == '(' || c == ')' || c == '\\' || c < 0x20 || c == 0x7f) {
            if (n + 4 >= size)
                return -ENOSPC;
            snprintf(dst + n, 4, "\\%02x", c);
            n += 3;
        } else {
            if (n + 2 >= size)
                return -ENOSPC;
            dst[n++] = (char)c;
        }
    }
    if (n >= size)
        return -ENOSPC;
    dst[n] = '\0';
    return (int)n;
}

/* 'tmpl' with {user} and {dn} replaced by their escaped values. */
static int fill_filter(const char *tmpl, const char *user, const char *dn, char *dst,
                       size_t size, struct sl_error *err)
{
    char euser[200], edn[1600];
    size_t n = 0;

    if (sl_ldap_escape(user, euser, sizeof(euser)) < 0 ||
        sl_ldap_escape(dn ? dn : "", edn, sizeof(edn)) < 0)
        return sl_errorf(err, -EINVAL, "LDAP filter value too long");
    for (const char *p = tmpl; *p;) {
        const char *v = NULL;
        if (strncmp(p, "{user}", 6) == 0) {
            v = euser;
            p += 6;
        } else if (strncmp(p, "{dn}", 4) == 0) {
            v = edn;
            p += 4;
        }
        if (v) {
            size_t k = strlen(v);
            if (n + k >= size)
                return sl_errorf(err, -EINVAL, "LDAP filter too long");
            memcpy(dst + n, v, k);
            n += k;
            continue;
        }
        if (n + 1 >= size)
            return sl_errorf(err, -EINVAL, "LDAP filter too long");
        dst[n++] = *p++;
    }
    dst[n] = '\0';
    return 0;
}

/* An LDAP result code as an errno: unreachable, refused or other. */
static int ldap_rc(int rc)
{
    switch (rc) {
    case LDAP_SERVER_DOWN:
    case LDAP_CONNECT_ERROR:
    case LDAP_TIMEOUT:
    case LDAP_UNAVAILABLE:
    case LDAP_BUSY:
        return -EHOSTUNREACH;
    case LDAP_INVALID_CREDENTIALS:
        return -EACCES;
    case LDAP_NO_MEMORY:
        return -ENOMEM;
    default:
        return -EIO;
    }
}

static int fail(struct sl_error *err, int rc, const struct sl_ident_ldap *cfg, const char *what)
{
    return sl_errorf(err, ldap_rc(rc), "LDAP server %s: %s: %s", cfg->url, what,
                     ldap_err2string(rc));
}

/* A TCP connection to host:port within the timeout: the fd, or -1. */
static int tcp_connect(const char *host, int port, const struct timeval *tv)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    char ports[16];
    int fd = -1;

    snprintf(ports, sizeof(ports), "%d", port);
    if (getaddrinfo(host, ports, &hints, &res) != 0)
        return -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        if ((fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol)) < 0)
            continue;
        /* a blocking connect gives up after SO_SNDTIMEO on Linux */
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, tv, sizeof(*tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv, sizeof(*tv)) < 0 ||
            connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* The BER length at res[*i] (short or long form, at most 2 bytes of
 * it); *i moves past it. -1 when it is not within n. */
static long ber_len(const unsigned char *res, size_t n, size_t *i)
{
    size_t lb;
    long len = 0;

    if (*i >= n)
        return -1;
    if (!(res[*i] & 0x80))
        return res[(*i)++];
    lb = res[(*i)++] & 0x7f;
    if (lb == 0 || lb > 2 || *i + lb > n)
        return -1;
    while (lb--)
        len = len << 8 | res[(*i)++];
    return len;
}

/* The StartTLS extended request (RFC 4511 4.14.1) on fd, and whether the
 * server agreed: its ExtendedResponse's resultCode is 0. */
static bool starttls_agreed(int fd)
{
    static const unsigned char req[] = {
        0x30, 0x1d, 0x02, 0x01, 0x01, 0x77, 0x18, 0x80, 0x16, '1', '.', '3', '.', '6', '.',
        '1', '.', '4', '.', '1', '.', '1', '4', '6', '6', '.', '2', '0', '0', '3', '7'};
    unsigned char res[1024];
    size_t n = 0, i;
    long len = -1;

    if (write(fd, req, sizeof(req)) != (ssize_t)sizeof(req))
        return false;
    /* the whole response: SEQUENCE { messageID INTEGER,
     * [APPLICATION 24] { resultCode ENUMERATED, ... } } */
    while (len < 0 || n < (size_t)len) {
        ssize_t k = read(fd, res + n, sizeof(res) - n);
        if (k <= 0)
            return false;
        n += (size_t)k;
        i = 1;
        if (res[0] != 0x30)
            return false;
        if (len < 0 && (len = ber_len(res, n, &i)) >= 0 &&
            (len += (long)i) > (long)sizeof(res))
            return false;
    }
    i = 1;
    if (ber_len(res, n, &i) < 0 || i + 3 > n || res[i] != 0x02 || res[i + 1] != 0x01)
        return false;
    i += 3;
    if (i >= n || res[i++] != 0x78 || ber_len(res, n, &i) < 0)
        return false;
    return i + 2 < n && res[i] == 0x0a && res[i + 1] == 0x01 && res[i + 2] == 0;
}

/* Why the TLS handshake with the server failed, into buf ("" when that
 * cannot be told). libldap as built on Debian (GnuTLS) reports a refused
 * certificate as "Can't contact LDAP server" (ldaps://) or "(unknown
 * error code)" (StartTLS), which leaves an operator guessing between a
 * firewall, the wrong caFile and the wrong host name; so after such a
 * failure the handshake is made again here with OpenSSL, with the same
 * CA file, protocol floor and name check, and its verdict is named. The
 * password is never sent on this connection. */
static void tls_why(const struct sl_ident_ldap *cfg, char *buf, size_t size)
{
    struct timeval tv = {.tv_sec = cfg->timeout_ms / 1000,
                         .tv_usec = (cfg->timeout_ms % 1000) * 1000};
    LDAPURLDesc *lud = NULL;
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    X509 *peer;
    unsigned char ip[16];
    char issuer[256] = "";
    bool is_ip, ldaps;
    int fd = -1, port, hs;
    long vr;

    buf[0] = '\0';
    if (ldap_url_parse(cfg->url, &lud) != LDAP_URL_SUCCESS || !lud->lud_host ||
        !lud->lud_host[0])
        goto out;
    ldaps = lud->lud_scheme && strcmp(lud->lud_scheme, "ldaps") == 0;
    port = lud->lud_port ? lud->lud_port : ldaps ? 636 : 389;
    is_ip = inet_pton(AF_INET, lud->lud_host, ip) == 1 ||
            inet_pton(AF_INET6, lud->lud_host, ip) == 1;
    if ((fd = tcp_connect(lud->lud_host, port, &tv)) < 0 || (!ldaps && !starttls_agreed(fd)))
        goto out; /* not a TLS problem: libldap's own words stand */
    if (!(ctx = SSL_CTX_new(TLS_client_method())) ||
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        (cfg->ca_file[0] ? SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL)
                         : SSL_CTX_set_default_verify_paths(ctx)) != 1 ||
        !(ssl = SSL_new(ctx)) || SSL_set_fd(ssl, fd) != 1 ||
        (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), lud->lud_host)
               : X509_VERIFY_PARAM_set1_host(SSL_get0_param(ssl), lud->lud_host, 0) &&
                     SSL_set_tlsext_host_name(ssl, lud->lud_host)) != 1)
        goto out;
    /* not refused at once, so that a refused certificate is still there
     * to name; nothing is sent on the connection after the handshake */
    SSL_set_verify(ssl, SSL_VERIFY_NONE, NULL);
    hs = SSL_connect(ssl);
    vr = SSL_get_verify_result(ssl);
    if ((peer = SSL_get0_peer_certificate(ssl)))
        X509_NAME_oneline(X509_get_issuer_name(peer), issuer, sizeof(issuer));
    if (hs == 1 && !peer)
        snprintf(buf, size, "TLS: the server sent no certificate");
    else if (hs == 1 && vr == X509_V_OK)
        ; /* OpenSSL accepts it: no better words than libldap's */
    else if (vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH)
        snprintf(buf, size, "TLS: the server's certificate names another host, not %s (%s)",
                 lud->lud_host, X509_verify_cert_error_string(vr));
    else if (vr != X509_V_OK)
        snprintf(buf, size,
                 "TLS: the server's certificate (issued by %.200s) is not trusted by %s%.300s: "
                 "%s",
                 issuer[0] ? issuer : "?", cfg->ca_file[0] ? "caFile " : "the system's CA store",
                 cfg->ca_file, X509_verify_cert_error_string(vr));
    else {
        unsigned long e = ERR_peek_last_error();
        const char *r = e ? ERR_reason_error_string(e) : NULL;
        snprintf(buf, size, "TLS handshake failed: %s", r ? r : "the server closed it");
    }
out:
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    if (fd >= 0)
        close(fd);
    if (lud)
        ldap_free_urldesc(lud);
}

static int simple_bind(LDAP *ld, const char *dn, const char *pw)
{
    struct berval cred = {.bv_len = strlen(pw), .bv_val = (char *)pw};

    return ldap_sasl_bind_s(ld, dn, LDAP_SASL_SIMPLE, &cred, NULL, NULL, NULL);
}

/* Connect and bind as the search account. */
static int open_conn(const struct sl_ident_ldap *cfg, LDAP **out, struct sl_error *err)
{
    LDAP *ld = NULL;
    int v3 = LDAP_VERSION3, demand = LDAP_OPT_X_TLS_DEMAND, zero = 0;
    int tls_min = LDAP_OPT_X_TLS_PROTOCOL_TLS1_2;
    struct timeval tv = {.tv_sec = cfg->timeout_ms / 1000,
                         .tv_usec = (cfg->timeout_ms % 1000) * 1000};
    int rc;

    *out = NULL;
    if ((rc = ldap_initialize(&ld, cfg->url)) != LDAP_SUCCESS)
        return fail(err, rc, cfg, "bad URL");
    if ((rc = ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &v3)) != LDAP_OPT_SUCCESS ||
        (rc = ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF)) != LDAP_OPT_SUCCESS ||
        (rc = ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &tv)) != LDAP_OPT_SUCCESS ||
        (rc = ldap_set_option(ld, LDAP_OPT_TIMEOUT, &tv)) != LDAP_OPT_SUCCESS ||
        (rc = ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &demand)) != LDAP_OPT_SUCCESS ||
        (rc = ldap_set_option(ld, LDAP_OPT_X_TLS_PROTOCOL_MIN, &tls_min)) !=
            LDAP_OPT_SUCCESS ||
        (cfg->ca_file[0] && (rc = ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE,
                                                  cfg->ca_file)) != LDAP_OPT_SUCCESS) ||
        /* the options above for this handle alone, not the process */
        (rc = ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &zero)) != LDAP_OPT_SUCCESS) {
        ldap_unbind_ext_s(ld, NULL, NULL);
        return sl_errorf(err, -EIO, "LDAP server %s: setting an option failed", cfg->url);
    }
    if (cfg->start_tls && (rc = ldap_start_tls_s(ld, NULL, NULL)) != LDAP_SUCCESS) {
        char *diag = NULL, why[600] = "";
        int e = rc == LDAP_SERVER_DOWN || rc == LDAP_CONNECT_ERROR ? -EHOSTUNREACH : -EIO;
        ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &diag);
        ldap_unbind_ext_s(ld, NULL, NULL);
        if (rc == LDAP_CONNECT_ERROR)
            tls_why(cfg, why, sizeof(why));
        if (rc == LDAP_PROTOCOL_ERROR)
            snprintf(why, sizeof(why), "the server does not offer StartTLS (%s%s%s); give it "
                     "TLS or use ldaps://", ldap_err2string(rc), diag && *diag ? ": " : "",
                     diag ? diag : "");
        if (why[0])
            sl_errorf(err, e = -EPROTO, "LDAP server %s: StartTLS: %s", cfg->url, why);
        else
            sl_errorf(err, e, "LDAP server %s: StartTLS: %s%s%s", cfg->url,
                      ldap_err2string(rc), diag && *diag ? ": " : "", diag ? diag : "");
        ldap_memfree(diag);
        return e;
    }
    rc = simple_bind(ld, cfg->bind_dn[0] ? cfg->bind_dn : "", cfg->bind_password);
    if (rc == LDAP_SERVER_DOWN && strncmp(cfg->url, "ldaps://", 8) == 0) {
        /* the first operation makes the connection and its handshake */
        char why[600];
        ldap_unbind_ext_s(ld, NULL, NULL);
        tls_why(cfg, why, sizeof(why));
        if (why[0])
            return sl_errorf(err, -EPROTO, "LDAP server %s: %s", cfg->url, why);
        return fail(err, rc, cfg, "bind as the search account");
    }
    if (rc != LDAP_SUCCESS) {
        /* the search account's own credentials failing is the
         * configuration's fault, not the user's */
        int e = ldap_rc(rc) == -EACCES ? -EIO : ldap_rc(rc);
        sl_errorf(err, e, "LDAP server %s: bind as the search account: %s", cfg->url,
                  ldap_err2string(rc));
        ldap_unbind_ext_s(ld, NULL, NULL);
        return e;
    }
    *out = ld;
    return 0;
}

static int add_group(struct sl_ldap_user *u, const char *dn, size_t len)
{
    char **g;

    if (u->ngroups == SL_LDAP_MAX_GROUPS)
        return 0; /* the rules see the first ones */
    if (!(g = realloc(u->groups, (u->ngroups + 1) * sizeof(*g))))
        return -ENOMEM;
    u->groups = g;
    if (!(g[u->ngroups] = strndup(dn, len)))
        return -ENOMEM;
    u->ngroups++;
    return 0;
}

/* Find the user's entry: its DN into u->dn and, with no group search,
 * its member attribute's values as its groups. */
static int find_user(LDAP *ld, const struct sl_ident_ldap *cfg, const char *user,
                     struct sl_ldap_user *u, struct sl_error *err)
{
    char filter[1024];
    char *attrs[] = {(char *)cfg->member_attr, NULL}, *none[] = {(char *)"1.1", NULL};
    struct timeval tv = {.tv_sec = cfg->timeout_ms / 1000,
                         .tv_usec = (cfg->timeout_ms % 1000) * 1000};
    LDAPMessage *res = NULL, *ent;
    char *dn;
    int rc, n;

    if ((rc = fill_filter(cfg->user_filter, user, NULL, filter, sizeof(filter), err)) < 0)
        return rc;
    rc = ldap_search_ext_s(ld, cfg->user_base, LDAP_SCOPE_SUBTREE, filter,
                           cfg->group_base[0] ? none : attrs, 0, NULL, NULL, &tv, 2, &res);
    if (rc != LDAP_SUCCESS && rc != LDAP_SIZELIMIT_EXCEEDED) {
        ldap_msgfree(res);
        return fail(err, rc, cfg, "user search");
    }
    n = ldap_count_entries(ld, res);
    if (n != 1 || rc == LDAP_SIZELIMIT_EXCEEDED) {
        ldap_msgfree(res);
        if (n == 0)
            return sl_errorf(err, -ENOENT, "no such user");
        return sl_errorf(err, -EIO, "LDAP server %s: user filter finds more than one entry",
                         cfg->url);
    }
    ent = ldap_first_entry(ld, res);
    if (!(dn = ldap_get_dn(ld, ent)) || strlen(dn) >= sizeof(u->dn)) {
        ldap_memfree(dn);
        ldap_msgfree(res);
        return sl_errorf(err, -EIO, "LDAP server %s: the user's DN is too long", cfg->url);
    }
    sl_strlcpy(u->dn, dn, sizeof(u->dn));
    ldap_memfree(dn);
    if (!cfg->group_base[0]) {
        struct berval **vals = ldap_get_values_len(ld, ent, cfg->member_attr);
        for (int i = 0; vals && vals[i]; i++)
            if ((rc = add_group(u, vals[i]->bv_val, vals[i]->bv_len)) < 0) {
                ldap_value_free_len(vals);
                ldap_msgfree(res);
                return sl_errorf(err, rc, "out of memory");
            }
        ldap_value_free_len(vals);
    }
    ldap_msgfree(res);
    return 0;
}

static int search_groups(LDAP *ld, const struct sl_ident_ldap *cfg, const char *user,
                         struct sl_ldap_user *u, struct sl_error *err)
{
    char filter[2048];
    char *none[] = {(char *)"1.1", NULL};
    struct timeval tv = {.tv_sec = cfg->timeout_ms / 1000,
                         .tv_usec = (cfg->timeout_ms % 1000) * 1000};
    LDAPMessage *res = NULL;
    int rc;

    if (!cfg->group_base[0])
        return 0;
    if ((rc = fill_filter(cfg->group_filter, user, u->dn, filter, sizeof(filter), err)) < 0)
        return rc;
    rc = ldap_search_ext_s(ld, cfg->group_base, LDAP_SCOPE_SUBTREE, filter, none, 0, NULL,
                           NULL, &tv, SL_LDAP_MAX_GROUPS, &res);
    if (rc != LDAP_SUCCESS && rc != LDAP_SIZELIMIT_EXCEEDED) {
        ldap_msgfree(res);
        return fail(err, rc, cfg, "group search");
    }
    for (LDAPMessage *e = ldap_first_entry(ld, res); e; e = ldap_next_entry(ld, e)) {
        char *dn = ldap_get_dn(ld, e);
        rc = dn ? add_group(u, dn, strlen(dn)) : 0;
        ldap_memfree(dn);
        if (rc < 0) {
            ldap_msgfree(res);
            return sl_errorf(err, rc, "out of memory");
        }
    }
    ldap_msgfree(res);
    return 0;
}

int sl_ldap_login(const struct sl_ident_ldap *cfg, const char *user, const char *password,
                  struct sl_ldap_user *u, struct sl_error *err)
{
    LDAP *ld;
    int rc;

    memset(u, 0, sizeof(*u));
    /* A simple bind with a DN and no password is an unauthenticated bind
     * (RFC 4513 5.1.2) that many servers let succeed. */
    if (!password[0] || !user[0])
        return sl_errorf(err, -EACCES, "invalid user name or password");
    if ((rc = open_conn(cfg, &ld, err)) < 0)
        return rc;
    if ((rc = find_user(ld, cfg, user, u, err)) < 0) {
        if (rc == -ENOENT)
            rc = sl_errorf(err, -EACCES, "invalid user name or password");
        goto out;
    }
    if ((rc = simple_bind(ld, u->dn, password)) != LDAP_SUCCESS) {
        rc = rc == LDAP_INVALID_CREDENTIALS
                 ? sl_errorf(err, -EACCES, "invalid user name or password")
                 : fail(err, rc, cfg, "bind as the user");
        goto out;
    }
    /* the groups are read as the search account, who may read them all */
    if (cfg->group_base[0]) {
        if ((rc = simple_bind(ld, cfg->bind_dn[0] ? cfg->bind_dn : "", cfg->bind_password)) !=
            LDAP_SUCCESS) {
            rc = fail(err, rc, cfg, "bind as the search account");
            goto out;
        }
        rc = search_groups(ld, cfg, user, u, err);
    }
out:
    ldap_unbind_ext_s(ld, NULL, NULL);
    if (rc < 0)
        sl_ldap_user_clear(u);
    return rc;
}

int sl_ldap_lookup(const struct sl_ident_ldap *cfg, const char *user, struct sl_ldap_user *u,
                   struct sl_error *err)
{
    LDAP *ld;
    int rc;

    memset(u, 0, sizeof(*u));
    if ((rc = open_conn(cfg, &ld, err)) < 0)
        return rc;
    if ((rc = find_user(ld, cfg, user, u, err)) == 0)
        rc = search_groups(ld, cfg, user, u, err);
    ldap_unbind_ext_s(ld, NULL, NULL);
    if (rc < 0)
        sl_ldap_user_clear(u);
    return rc;
}

void sl_ldap_user_clear(struct sl_ldap_user *u)
{
    for (size_t i = 0; i < u->ngroups; i++)
        free(u->groups[i]);
    free(u->groups);
    memset(u, 0, sizeof(*u));
}
