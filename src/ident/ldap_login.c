/*
 * ldap_login.c - LDAP and Active Directory logins (ldap_login.h).
 */
#define LDAP_DEPRECATED 0
#include "ldap_login.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <ldap.h>

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
        char *diag = NULL;
        int e = rc == LDAP_SERVER_DOWN || rc == LDAP_CONNECT_ERROR ? -EHOSTUNREACH : -EIO;
        ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &diag);
        sl_errorf(err, e, "LDAP server %s: StartTLS: %s%s%s", cfg->url, ldap_err2string(rc),
                  diag && *diag ? ": " : "", diag ? diag : "");
        ldap_memfree(diag);
        ldap_unbind_ext_s(ld, NULL, NULL);
        return e;
    }
    rc = simple_bind(ld, cfg->bind_dn[0] ? cfg->bind_dn : "", cfg->bind_password);
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
