/*
 * ident.c - the identity file and the group rules (ident.h).
 */
#include "ident.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "../core/spec.h"
#include "oidc.h"
#include "../policy/roles.h"
#include "../util/jfield.h"

/* ---- secrets ---------------------------------------------------------- */

int sl_ident_read_secret(const char *path, const char *key, char *dst, size_t size,
                         struct sl_error *err)
{
    struct stat st;
    ssize_t n;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

    if (fd < 0)
        return sl_errorf_field(err, -errno, key, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sl_errorf_field(err, -EINVAL, key, "%s: not a regular file", path);
    }
    if (st.st_mode & 077) {
        close(fd);
        return sl_errorf_field(err, -EPERM, key,
                               "%s: readable or writable by group or others "
                               "(mode %03o); a secret must be private (chmod 600)",
                               path, (unsigned)(st.st_mode & 0777));
    }
    while (got < size && (n = read(fd, dst + got, size - got)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            sodium_memzero(dst, size);
            return sl_errorf_field(err, -EIO, key, "%s: %s", path, strerror(errno));
        }
        got += (size_t)n;
    }
    close(fd);
    if (got == size) {
        sodium_memzero(dst, size);
        return sl_errorf_field(err, -EFBIG, key, "%s: longer than %zu bytes", path,
                               size - 1);
    }
    while (got && (dst[got - 1] == '\n' || dst[got - 1] == '\r'))
        got--;
    dst[got] = '\0';
    if (!got || memchr(dst, '\0', got) || memchr(dst, '\n', got)) {
        sodium_memzero(dst, size);
        return sl_errorf_field(err, -EINVAL, key, "%s: %s", path,
                               got ? "more than one line" : "empty");
    }
    return 0;
}

/* 'obj' holds either KEYFile or KEYEnv (or neither, when not required):
 * the secret into dst. */
static int get_secret(const json_t *obj, const char *parent, const char *key, char *dst,
                      size_t size, bool required, struct sl_error *err)
{
    char fkey[64], ekey[64], path[1024], var[128], fpath[SL_JF_PATH];
    bool has_file, has_env;
    int rc;

    snprintf(fkey, sizeof(fkey), "%sFile", key);
    snprintf(ekey, sizeof(ekey), "%sEnv", key);
    has_file = sl_jf_member(obj, fkey) != NULL;
    has_env = sl_jf_member(obj, ekey) != NULL;
    dst[0] = '\0';
    if (has_file && has_env) {
        sl_jf_path(fpath, parent, ekey);
        return sl_jf_fail(err, fpath, "give %s or %s, not both", fkey, ekey);
    }
    if (!has_file && !has_env) {
        if (!required)
            return 0;
        sl_jf_path(fpath, parent, fkey);
        return sl_jf_fail(err, fpath, "is required (or %s)", ekey);
    }
    if (has_file) {
        if ((rc = sl_jf_get_str(obj, fkey, parent, path, sizeof(path), true, err)) < 0)
            return rc;
        sl_jf_path(fpath, parent, fkey);
        return sl_ident_read_secret(path, fpath, dst, size, err);
    }
    if ((rc = sl_jf_get_str(obj, ekey, parent, var, sizeof(var), true, err)) < 0)
        return rc;
    sl_jf_path(fpath, parent, ekey);
    {
        const char *v = getenv(var);
        size_t n = v ? strlen(v) : 0;
        if (!n)
            return sl_jf_fail(err, fpath, "environment variable %s is not set", var);
        if (n >= size)
            return sl_jf_fail(err, fpath, "environment variable %s is longer than %zu bytes",
                              var, size - 1);
        memcpy(dst, v, n + 1);
    }
    return 0;
}

/* ---- the file --------------------------------------------------------- */

static int get_duration(const json_t *obj, const char *key, const char *parent, int64_t lo,
                        int64_t hi, int64_t *out, struct sl_error *err)
{
    char buf[32], path[SL_JF_PATH];
    const json_t *v = sl_jf_member(obj, key);
    int64_t ms;

    if (!v)
        return 0;
    sl_jf_path(path, parent, key);
    if (!json_is_string(v) || strlen(json_string_value(v)) >= sizeof(buf) ||
        sl_parse_duration_ms(json_string_value(v), &ms) < 0)
        return sl_jf_fail(err, path, "must be a duration such as \"5s\"");
    if (ms < lo || ms > hi) {
        char a[32], b[32];
        sl_fmt_duration(lo, a, sizeof(a));
        sl_fmt_duration(hi, b, sizeof(b));
        return sl_jf_fail(err, path, "must be between %s and %s", a, b);
    }
    *out = ms;
    return 0;
}

/* Whether the host of URL 'u' (after its scheme) is a loopback one. */
static bool host_loopback(const char *u)
{
    const char *h = strstr(u, "://");
    size_t n;

    if (!h)
        return false;
    h += 3;
    n = strcspn(h, ":/");
    if (h[0] == '[')
        return strncmp(h, "[::1]", 5) == 0;
    return (n == 9 && strncmp(h, "localhost", 9) == 0) || strncmp(h, "127.", 4) == 0;
}

static int load_ldap(struct sl_ident_ldap *l, const json_t *v, struct sl_error *err)
{
    static const char *const keys[] = {
        "url", "startTLS", "caFile", "bindDN", "bindPasswordFile", "bindPasswordEnv",
        "userBase", "userFilter", "groupBase", "groupFilter", "memberAttribute", "timeout",
        NULL};
    const json_t *t;
    int rc;

    if ((rc = sl_jf_check_keys(v, "ldap", keys, err)) < 0)
        return rc;
    if ((rc = sl_jf_get_str(v, "url", "ldap", l->url, sizeof(l->url), true, err)) < 0 ||
        (rc = sl_jf_get_str(v, "caFile", "ldap", l->ca_file, sizeof(l->ca_file), false,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "bindDN", "ldap", l->bind_dn, sizeof(l->bind_dn), false,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "userBase", "ldap", l->user_base, sizeof(l->user_base), true,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "userFilter", "ldap", l->user_filter,
                            sizeof(l->user_filter), false, err)) < 0 ||
        (rc = sl_jf_get_str(v, "groupBase", "ldap", l->group_base, sizeof(l->group_base),
                            false, err)) < 0 ||
        (rc = sl_jf_get_str(v, "groupFilter", "ldap", l->group_filter,
                            sizeof(l->group_filter), false, err)) < 0 ||
        (rc = sl_jf_get_str(v, "memberAttribute", "ldap", l->member_attr,
                            sizeof(l->member_attr), false, err)) < 0)
        return rc;
    if ((t = sl_jf_member(v, "startTLS"))) {
        if (!json_is_boolean(t))
            return sl_jf_fail(err, "ldap.startTLS", "must be true or false");
        l->start_tls = json_is_true(t);
    }
    if (strncmp(l->url, "ldaps://", 8) != 0 && strncmp(l->url, "ldap://", 7) != 0)
        return sl_jf_fail(err, "ldap.url", "must be ldaps://HOST[:PORT] or ldap://HOST[:PORT]");
    if (strchr(l->url, ' ') || strchr(l->url + 7, '?'))
        return sl_jf_fail(err, "ldap.url", "must name one server, without a query");
    if (l->start_tls && strncmp(l->url, "ldaps://", 8) == 0)
        return sl_jf_fail(err, "ldap.startTLS", "is for ldap:// (ldaps:// is TLS already)");
    /* A user's password crosses to the server: never in clear beyond
     * this host. */
    if (strncmp(l->url, "ldap://", 7) == 0 && !l->start_tls && !host_loopback(l->url))
        return sl_jf_fail(err, "ldap.url",
                          "ldap:// without startTLS sends passwords in clear; use "
                          "ldaps:// or startTLS: true (only a loopback server may go "
                          "without)");
    if (!l->user_filter[0])
        sl_strlcpy(l->user_filter, "(uid={user})", sizeof(l->user_filter));
    if (!strstr(l->user_filter, "{user}") || l->user_filter[0] != '(')
        return sl_jf_fail(err, "ldap.userFilter",
                          "must be an LDAP filter in parentheses holding {user}");
    if (l->group_filter[0] && !l->group_base[0])
        return sl_jf_fail(err, "ldap.groupBase", "is required with groupFilter");
    if (l->group_base[0] && !l->group_filter[0])
        sl_strlcpy(l->group_filter, "(|(member={dn})(uniqueMember={dn}))",
                   sizeof(l->group_filter));
    if (l->group_filter[0] && l->group_filter[0] != '(')
        return sl_jf_fail(err, "ldap.groupFilter", "must be an LDAP filter in parentheses");
    if (!l->member_attr[0])
        sl_strlcpy(l->member_attr, "memberOf", sizeof(l->member_attr));
    l->timeout_ms = 5000;
    if ((rc = get_duration(v, "timeout", "ldap", 100, 60000, &l->timeout_ms, err)) < 0)
        return rc;
    return get_secret(v, "ldap", "bindPassword", l->bind_password,
                      sizeof(l->bind_password), l->bind_dn[0] != '\0', err);
}

static int load_oidc(struct sl_ident_oidc *o, const json_t *v, struct sl_error *err)
{
    static const char *const keys[] = {
        "issuer", "audience", "clientId", "clientSecretFile", "clientSecretEnv", "jwksFile",
        "caFile", "userClaim", "groupsClaim", "scope", "skew", "timeout", NULL};
    int rc;

    if ((rc = sl_jf_check_keys(v, "oidc", keys, err)) < 0)
        return rc;
    if ((rc = sl_jf_get_str(v, "issuer", "oidc", o->issuer, sizeof(o->issuer), true,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "clientId", "oidc", o->client_id, sizeof(o->client_id), true,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "audience", "oidc", o->audience, sizeof(o->audience), false,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "jwksFile", "oidc", o->jwks_file, sizeof(o->jwks_file), false,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "caFile", "oidc", o->ca_file, sizeof(o->ca_file), false,
                            err)) < 0 ||
        (rc = sl_jf_get_str(v, "userClaim", "oidc", o->user_claim, sizeof(o->user_claim),
                            false, err)) < 0 ||
        (rc = sl_jf_get_str(v, "groupsClaim", "oidc", o->groups_claim,
                            sizeof(o->groups_claim), false, err)) < 0 ||
        (rc = sl_jf_get_str(v, "scope", "oidc", o->scope, sizeof(o->scope), false, err)) < 0)
        return rc;
    if (strncmp(o->issuer, "https://", 8) != 0 &&
        !(strncmp(o->issuer, "http://", 7) == 0 && host_loopback(o->issuer)))
        return sl_jf_fail(err, "oidc.issuer",
                          "must be an https:// URL (http:// only on a loopback host)");
    if (!o->audience[0])
        sl_strlcpy(o->audience, o->client_id, sizeof(o->audience));
    if (!o->user_claim[0])
        sl_strlcpy(o->user_claim, "preferred_username", sizeof(o->user_claim));
    if (!o->groups_claim[0])
        sl_strlcpy(o->groups_claim, "groups", sizeof(o->groups_claim));
    if (!o->scope[0])
        sl_strlcpy(o->scope, "openid profile", sizeof(o->scope));
    o->skew_ms = 60000;
    o->timeout_ms = 5000;
    if ((rc = get_duration(v, "skew", "oidc", 0, 300000, &o->skew_ms, err)) < 0 ||
        (rc = get_duration(v, "timeout", "oidc", 100, 60000, &o->timeout_ms, err)) < 0)
        return rc;
    return get_secret(v, "oidc", "clientSecret", o->client_secret, sizeof(o->client_secret),
                      false, err);
}

static int load_rules(struct sl_ident *id, const json_t *v, struct sl_error *err)
{
    static const char *const keys[] = {"group", "team", "role", NULL};
    size_t i;
    const json_t *r;
    char path[SL_JF_PATH];
    int rc;

    if (!json_is_array(v) || json_array_size(v) == 0)
        return sl_jf_fail(err, "groups", "must be a list of {group, team, role}");
    if (json_array_size(v) > SL_IDENT_MAX_RULES)
        return sl_jf_fail(err, "groups", "at most %d rules", SL_IDENT_MAX_RULES);
    if (!(id->rules = calloc(json_array_size(v), sizeof(*id->rules))))
        return sl_errorf(err, -ENOMEM, "out of memory");
    json_array_foreach(v, i, r) {
        struct sl_ident_rule *x = &id->rules[i];
        snprintf(path, sizeof(path), "groups[%zu]", i);
        if ((rc = sl_jf_check_keys(r, path, keys, err)) < 0 ||
            (rc = sl_jf_get_str(r, "group", path, x->group, sizeof(x->group), true, err)) < 0 ||
            (rc = sl_jf_get_str(r, "team", path, x->team, sizeof(x->team), true, err)) < 0 ||
            (rc = sl_jf_get_str(r, "role", path, x->role, sizeof(x->role), true, err)) < 0)
            return rc;
        if (!sl_name_valid(x->team)) {
            snprintf(path, sizeof(path), "groups[%zu].team", i);
            return sl_jf_fail(err, path, "'%s' is not a valid team name", x->team);
        }
        if (!sl_role_assignable(x->role)) {
            snprintf(path, sizeof(path), "groups[%zu].role", i);
            return sl_jf_fail(err, path,
                              "must be admin, team-admin, member, viewer or auditor");
        }
        id->nrules++;
    }
    return 0;
}

int sl_ident_load_text(struct sl_ident *id, const char *text, size_t len, const char *name,
                       struct sl_error *err)
{
    static const char *const keys[] = {"ldap", "oidc", "groups", "tokenTtl", NULL};
    json_t *doc = NULL;
    const json_t *v;
    int rc;

    memset(id, 0, sizeof(*id));
    id->token_ttl_ms = 8 * 3600 * 1000LL;
    if ((rc = sl_doc_decode(text, len, false, &doc, err)) < 0) {
        char t[sizeof(err->text)];
        if (err) {
            snprintf(t, sizeof(t), "%s: %s", name, err->text);
            sl_strlcpy(err->text, t, sizeof(err->text));
        }
        return rc;
    }
    if ((rc = sl_jf_check_keys(doc, "", keys, err)) < 0)
        goto out;
    if ((v = sl_jf_member(doc, "ldap"))) {
        id->has_ldap = true;
        if ((rc = load_ldap(&id->ldap, v, err)) < 0)
            goto out;
    }
    if ((v = sl_jf_member(doc, "oidc"))) {
        id->has_oidc = true;
        if ((rc = load_oidc(&id->oidc, v, err)) < 0)
            goto out;
    }
    if (!id->has_ldap && !id->has_oidc) {
        rc = sl_jf_fail(err, "ldap", "the file names no provider: give ldap, oidc or both");
        goto out;
    }
    if ((rc = get_duration(doc, "tokenTtl", "", 60000, 7 * 24 * 3600 * 1000LL,
                           &id->token_ttl_ms, err)) < 0)
        goto out;
    rc = load_rules(id, sl_jf_member(doc, "groups"), err);
out:
    json_decref(doc);
    if (rc < 0) {
        sl_ident_free(id);
        if (err && err->field[0]) {
            char t[sizeof(err->text)];
            snprintf(t, sizeof(t), "%s: %s: %s", name, err->field, err->text);
            sl_strlcpy(err->text, t, sizeof(err->text));
        }
    }
    return rc;
}

int sl_ident_load(struct sl_ident *id, const char *path, struct sl_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sl_read_file(path, SL_IDENT_MAX_BYTES, &buf, &len);

    memset(id, 0, sizeof(*id));
    if (rc < 0)
        return sl_errorf(err, rc, "%s: %s", path,
                         rc == -EFBIG ? "larger than 256 KiB" : strerror(-rc));
    rc = sl_ident_load_text(id, buf, len, path, err);
    free(buf);
    return rc;
}

void sl_ident_free(struct sl_ident *id)
{
    if (!id)
        return;
    free(id->rules);
    id->rules = NULL;
    id->nrules = 0;
    sodium_memzero(id->ldap.bind_password, sizeof(id->ldap.bind_password));
    sodium_memzero(id->oidc.client_secret, sizeof(id->oidc.client_secret));
}

/* ---- the rules -------------------------------------------------------- */

/* 'dn' normalised into dst: lower case, no spaces around the separators
 * ',', '+' and '=', an escaped character kept as written. Returns false
 * when it does not fit or is empty. */
static bool dn_norm(const char *dn, char *dst, size_t size)
{
    size_t n = 0;

    while (*dn == ' ')
        dn++;
    for (const char *p = dn; *p; p++) {
        char c = *p;
        if (n + 2 >= size)
            return false;
        if (c == '\\' && p[1]) {
            dst[n++] = c;
            dst[n++] = (char)tolower((unsigned char)*++p);
            continue;
        }
        if (c == ',' || c == '+' || c == '=') {
            while (n && dst[n - 1] == ' ')
                n--;
            dst[n++] = c;
            while (p[1] == ' ')
                p++;
            continue;
        }
        dst[n++] = (char)tolower((unsigned char)c);
    }
    while (n && dst[n - 1] == ' ')
        n--;
    dst[n] = '\0';
    return n > 0;
}

bool sl_ident_dn_equal(const char *a, const char *b)
{
    char x[600], y[600];

    return dn_norm(a, x, sizeof(x)) && dn_norm(b, y, sizeof(y)) && strcmp(x, y) == 0;
}

const struct sl_ident_rule *sl_ident_match(const struct sl_ident *id, char *const *groups,
                                           size_t n, bool ldap)
{
    for (size_t i = 0; i < id->nrules; i++)
        for (size_t k = 0; k < n; k++)
            if (ldap ? sl_ident_dn_equal(id->rules[i].group, groups[k])
                     : strcmp(id->rules[i].group, groups[k]) == 0)
                return &id->rules[i];
    return NULL;
}

struct sl_oidc *sl_ident_oidc_create(const struct sl_ident_oidc *o, struct sl_error *err)
{
    struct sl_oidc_config cfg;
    struct sl_oidc *v;

    sl_oidc_config_init(&cfg);
    if (strlen(o->client_secret) >= sizeof(cfg.client_secret)) {
        sl_errorf(err, -EINVAL, "oidc.clientSecret: longer than %zu bytes",
                  sizeof(cfg.client_secret) - 1);
        return NULL;
    }
    sl_strlcpy(cfg.issuer, o->issuer, sizeof(cfg.issuer));
    sl_strlcpy(cfg.audience, o->audience, sizeof(cfg.audience));
    sl_strlcpy(cfg.client_id, o->client_id, sizeof(cfg.client_id));
    sl_strlcpy(cfg.client_secret, o->client_secret, sizeof(cfg.client_secret));
    sl_strlcpy(cfg.jwks_file, o->jwks_file, sizeof(cfg.jwks_file));
    sl_strlcpy(cfg.ca_file, o->ca_file, sizeof(cfg.ca_file));
    if (o->user_claim[0])
        sl_strlcpy(cfg.user_claim, o->user_claim, sizeof(cfg.user_claim));
    if (o->groups_claim[0])
        sl_strlcpy(cfg.groups_claim, o->groups_claim, sizeof(cfg.groups_claim));
    cfg.skew_ms = o->skew_ms;
    cfg.timeout_ms = o->timeout_ms;
    v = sl_oidc_create(&cfg, err);
    sodium_memzero(cfg.client_secret, sizeof(cfg.client_secret));
    if (!v) {
        char why[sizeof(err->text)];
        sl_strlcpy(why, err->text, sizeof(why));
        sl_errorf(err, -EINVAL, "oidc: %s", why);
    }
    return v;
}
