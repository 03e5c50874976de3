/*
 * oidc.c - OpenID Connect: token verification against a JWKS (cjose does
 * the signature arithmetic; the alg allow-list, the key choice and every
 * claim are checked here), discovery and the device authorization grant
 * over libcurl. The contract is in oidc.h.
 *
 * Invariants: the key set only ever holds RSA keys of >= 2048 bits and
 * EC P-256 keys; a key is used only for the one alg its type allows; the
 * client secret leaves this file only in a request to the token or device
 * endpoint, never in a log line or an error text.
 */
#include "oidc.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjose/cjose.h>
#include <curl/curl.h>
#include <jansson.h>

#include "../core/spec.h"

enum key_kind { KEY_RSA, KEY_EC256 };

struct key {
    cjose_jwk_t *jwk;  /* owned */
    enum key_kind kind;
    char kid[256];     /* "" when the JWK has none */
    char alg[16];      /* the JWK's own "alg", "" when absent */
};

struct sl_oidc {
    struct sl_oidc_config cfg;
    bool loopback;               /* issuer host is loopback: http allowed */
    struct key *keys;            /* owned, nkeys */
    size_t nkeys;
    char device_endpoint[1024];  /* "" until discovered */
    char token_endpoint[1024];
    bool auth_post;              /* client_secret_post rather than basic */
    bool discovered;
    bool refreshed;              /* refresh_ms holds the last refresh */
    int64_t refresh_ms;
};

/* The algs a token may name, and the key type each needs. */
static const struct {
    const char *alg;
    enum key_kind kind;
} algs[] = {
    {"RS256", KEY_RSA},
    {"ES256", KEY_EC256},
};

static const char *kind_name(enum key_kind k)
{
    return k == KEY_RSA ? "RSA" : "EC P-256";
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void keys_free(struct key *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cjose_jwk_release(keys[i].jwk);
    free(keys);
}

/* ---- URLs ---- */

/* Whether 'host' (no brackets) is a loopback name or address. */
static bool host_loopback(const char *host)
{
    struct in_addr a4;

    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return false;
}

/* Check that 'url' is http(s)://host[:port][/path], no user information,
 * no fragment; set *https and *loopback. Returns 0 or -EINVAL. */
static int url_check(const char *url, bool *https, bool *loopback)
{
    const char *p, *end;
    char host[256];
    size_t n;

    if (strncmp(url, "https://", 8) == 0) {
        *https = true;
        p = url + 8;
    } else if (strncmp(url, "http://", 7) == 0) {
        *https = false;
        p = url + 7;
    } else {
        return -EINVAL;
    }
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == '#' || (unsigned char)*c >= 0x7f)
            return -EINVAL;
    end = p + strcspn(p, "/?");
    if (memchr(p, '@', (size_t)(end - p)))
        return -EINVAL;
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb)
            return -EINVAL;
        n = (size_t)(rb - p - 1);
        p++;
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        n = (size_t)((colon ? colon : end) - p);
    }
    if (n == 0 || n >= sizeof(host))
        return -EINVAL;
    memcpy(host, p, n);
    host[n] = '\0';
    *loopback = host_loopback(host);
    return 0;
}

/* A provider URL from discovery: https, or http when the issuer and the
 * URL are both loopback. */
static bool url_allowed(const struct sl_oidc *o, const char *url)
{
    bool https, loop;

    if (url_check(url, &https, &loop) < 0)
        return false;
    return https || (o->loopback && loop);
}

/* ---- configuration ---- */

void sl_oidc_config_init(struct sl_oidc_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->skew_ms = 60000;
    cfg->timeout_ms = 5000;
    sl_strlcpy(cfg->user_claim, "preferred_username", sizeof(cfg->user_claim));
    sl_strlcpy(cfg->groups_claim, "groups", sizeof(cfg->groups_claim));
}

/* A claim name or dotted path: 1..63 of [A-Za-z0-9_:/-] and single dots
 * between parts. */
static bool claim_path_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_-:/.", *s))
            return false;
    return true;
}

#define TERMINATED(f) (memchr((f), '\0', sizeof(f)) != NULL)

struct sl_oidc *sl_oidc_create(const struct sl_oidc_config *cfg, struct sl_error *err)
{
    struct sl_oidc *o = NULL;
    char *json = NULL;
    size_t len = 0;
    bool https, loop;
    int rc;

    pthread_once(&curl_once, curl_init_once);
    if (!TERMINATED(cfg->issuer) || !TERMINATED(cfg->audience) ||
        !TERMINATED(cfg->client_id) || !TERMINATED(cfg->client_secret) ||
        !TERMINATED(cfg->jwks_file) || !TERMINATED(cfg->ca_file) ||
        !TERMINATED(cfg->user_claim) || !TERMINATED(cfg->groups_claim)) {
        rc = sl_errorf(err, -EINVAL, "oidc: a setting is not NUL-terminated");
        goto out;
    }
    if (!cfg->issuer[0]) {
        rc = sl_errorf_field(err, -EINVAL, "issuer", "issuer: required");
        goto out;
    }
    if (url_check(cfg->issuer, &https, &loop) < 0 || strchr(cfg->issuer, '?')) {
        rc = sl_errorf_field(err, -EINVAL, "issuer",
                             "issuer: must be https://host[:port][/path] without query or fragment");
        goto out;
    }
    if (!https && !loop) {
        rc = sl_errorf_field(err, -EINVAL, "issuer",
                             "issuer: http is allowed only for a loopback host; use https");
        goto out;
    }
    if (!cfg->audience[0] && !cfg->client_id[0]) {
        rc = sl_errorf_field(err, -EINVAL, "audience",
                             "audience: required when client_id is empty");
        goto out;
    }
    if (cfg->user_claim[0] && !claim_path_valid(cfg->user_claim)) {
        rc = sl_errorf_field(err, -EINVAL, "user_claim", "user_claim: not a claim name");
        goto out;
    }
    if (cfg->groups_claim[0] && !claim_path_valid(cfg->groups_claim)) {
        rc = sl_errorf_field(err, -EINVAL, "groups_claim",
                             "groups_claim: not a claim name or dotted path");
        goto out;
    }
    if (cfg->skew_ms < 0 || cfg->skew_ms > SL_OIDC_SKEW_MAX_MS) {
        rc = sl_errorf_field(err, -EINVAL, "skew_ms", "skew_ms: must be 0..%d, got %lld",
                             SL_OIDC_SKEW_MAX_MS, (long long)cfg->skew_ms);
        goto out;
    }
    if (cfg->timeout_ms != 0 && (cfg->timeout_ms < 100 || cfg->timeout_ms > 120000)) {
        rc = sl_errorf_field(err, -EINVAL, "timeout_ms", "timeout_ms: must be 100..120000, got %lld",
                             (long long)cfg->timeout_ms);
        goto out;
    }
    if (cfg->ca_file[0] && access(cfg->ca_file, R_OK) < 0) {
        rc = sl_errorf_field(err, -errno, "ca_file", "ca_file: %s: %s", cfg->ca_file,
                             strerror(errno));
        goto out;
    }
    o = calloc(1, sizeof(*o));
    if (!o) {
        rc = sl_errorf(err, -ENOMEM, "oidc: out of memory");
        goto out;
    }
    o->cfg = *cfg;
    o->loopback = loop;
    if (!o->cfg.audience[0])
        sl_strlcpy(o->cfg.audience, cfg->client_id, sizeof(o->cfg.audience));
    if (!o->cfg.user_claim[0])
        sl_strlcpy(o->cfg.user_claim, "preferred_username", sizeof(o->cfg.user_claim));
    if (!o->cfg.groups_claim[0])
        sl_strlcpy(o->cfg.groups_claim, "groups", sizeof(o->cfg.groups_claim));
    if (!o->cfg.timeout_ms)
        o->cfg.timeout_ms = 5000;
    if (cfg->jwks_file[0]) {
        rc = sl_read_file(cfg->jwks_file, SL_OIDC_BODY_MAX, &json, &len);
        if (rc < 0) {
            sl_errorf_field(err, rc, "jwks_file", "jwks_file: %s: %s", cfg->jwks_file,
                            rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
            goto out;
        }
        rc = sl_oidc_load_jwks(o, json, len, err);
        if (rc < 0) {
            char why[sizeof(err->text)];
            if (err) {
                sl_strlcpy(why, err->text, sizeof(why));
                sl_errorf_field(err, rc, "jwks_file", "jwks_file: %s", why);
            }
            goto out;
        }
    }
    rc = 0;
out:
    free(json);
    if (rc < 0) {
        sl_oidc_destroy(o);
        errno = -rc;
        return NULL;
    }
    return o;
}

void sl_oidc_destroy(struct sl_oidc *o)
{
    int saved = errno;

    if (!o)
        return;
    keys_free(o->keys, o->nkeys);
    explicit_bzero(o->cfg.client_secret, sizeof(o->cfg.client_secret));
    free(o);
    errno = saved;
}

/* ---- base64url ---- */

static int b64url_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

/* Strict base64url without padding: s[0..n) into out (of at least
 * n*3/4+1 bytes), NUL-terminated. Returns the decoded length or -EINVAL. */
static ssize_t b64url_decode(const char *s, size_t n, unsigned char *out)
{
    uint32_t acc = 0;
    size_t bits = 0, o = 0;

    if (n % 4 == 1)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        int v = b64url_val((unsigned char)s[i]);
        if (v < 0)
            return -EINVAL;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    /* The bits left over must be zero: one meaning per token. */
    if (acc & ((1u << bits) - 1))
        return -EINVAL;
    out[o] = '\0';
    return (ssize_t)o;
}

/* Whether s[0..n) is strict base64url (what b64url_decode takes), so that
 * cjose's decoder, which aborts on some malformed input, never sees
 * anything else. */
static bool b64url_ok(const char *s, size_t n)
{
    int last;

    if (n % 4 == 1)
        return false;
    for (size_t i = 0; i < n; i++)
        if (b64url_val((unsigned char)s[i]) < 0)
            return false;
    if (n % 4 == 0)
        return true;
    /* 2 or 3 characters in the last group: the bits past the bytes are 0. */
    last = b64url_val((unsigned char)s[n - 1]);
    return (last & (n % 4 == 2 ? 0x0f : 0x03)) == 0;
}

/* ---- the key set ---- */


/* The members of a JWK that cjose base64url-decodes. cjose's decoder
 * asserts (aborts the process) on a length of 1 mod 4, so each is checked
 * here first; the private ones also mark a key this module does not take. */
static const struct {
    const char *name;
    bool private_part;
} jwk_b64_members[] = {
    {"n", false}, {"e", false}, {"x", false}, {"y", false},
    {"d", true}, {"p", true}, {"q", true}, {"dp", true}, {"dq", true}, {"qi", true},
};

size_t sl_oidc_key_count(const struct sl_oidc *o)
{
    return o->nkeys;
}

/* Import one JWK of the set, or skip it (returns 1) when it is not a key
 * this module uses. Returns 0 with *k filled, 1 skipped, -ENOMEM. */
static int key_import(json_t *jk, struct key *k)
{
    const char *kty = json_string_value(json_object_get(jk, "kty"));
    json_t *use = json_object_get(jk, "use"), *kid = json_object_get(jk, "kid");
    json_t *alg = json_object_get(jk, "alg");
    cjose_err cerr;

    memset(k, 0, sizeof(*k));
    if (!kty || (use && (!json_is_string(use) || strcmp(json_string_value(use), "sig"))))
        return 1;
    if (kid && (!json_is_string(kid) || json_string_length(kid) >= sizeof(k->kid)))
        return 1;
    if (alg && (!json_is_string(alg) || json_string_length(alg) >= sizeof(k->alg)))
        return 1;
    if (strcmp(kty, "RSA") == 0) {
        k->kind = KEY_RSA;
    } else if (strcmp(kty, "EC") == 0) {
        const char *crv = json_string_value(json_object_get(jk, "crv"));
        if (!crv || strcmp(crv, "P-256"))
            return 1;
        k->kind = KEY_EC256;
    } else {
        return 1;
    }
    /* A public key only: a "d" (or RSA's other private members) in a set
     * fetched from a provider is a mistake there, and cjose would make a
     * private key of it. */
    for (size_t i = 0; i < SL_ARRAY_LEN(jwk_b64_members); i++) {
        json_t *m = json_object_get(jk, jwk_b64_members[i].name);
        if (m && (jwk_b64_members[i].private_part || !json_is_string(m) ||
                  !b64url_ok(json_string_value(m), json_string_length(m))))
            return 1;
    }
    k->jwk = cjose_jwk_import_json((cjose_header_t *)jk, &cerr);
    if (!k->jwk)
        return cerr.code == CJOSE_ERR_NO_MEMORY ? -ENOMEM : 1;
    if (cjose_jwk_get_kty(k->jwk, &cerr) != (k->kind == KEY_RSA ? CJOSE_JWK_KTY_RSA
                                                                 : CJOSE_JWK_KTY_EC) ||
        (k->kind == KEY_RSA && cjose_jwk_get_keysize(k->jwk, &cerr) < 2048) ||
        (k->kind == KEY_EC256 && cjose_jwk_EC_get_curve(k->jwk, &cerr) != CJOSE_JWK_EC_P_256)) {
        cjose_jwk_release(k->jwk);
        k->jwk = NULL;
        return 1;
    }
    if (kid)
        sl_strlcpy(k->kid, json_string_value(kid), sizeof(k->kid));
    if (alg)
        sl_strlcpy(k->alg, json_string_value(alg), sizeof(k->alg));
    return 0;
}

int sl_oidc_load_jwks(struct sl_oidc *o, const char *json, size_t len, struct sl_error *err)
{
    json_t *doc = NULL, *arr, *jk;
    struct key *keys = NULL;
    size_t n = 0, i;
    json_error_t jerr;
    int rc;

    if (len > SL_OIDC_BODY_MAX) {
        rc = sl_errorf(err, -EINVAL, "jwks: larger than 1 MiB");
        goto out;
    }
    doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        rc = sl_errorf(err, -EINVAL, "jwks: not JSON (line %d: %.80s)", jerr.line, jerr.text);
        goto out;
    }
    arr = json_object_get(doc, "keys");
    if (!json_is_array(arr)) {
        rc = sl_errorf(err, -EINVAL, "jwks: keys: must be an array");
        goto out;
    }
    keys = calloc(SL_OIDC_KEYS_MAX, sizeof(*keys));
    if (!keys) {
        rc = sl_errorf(err, -ENOMEM, "jwks: out of memory");
        goto out;
    }
    json_array_foreach(arr, i, jk) {
        if (n == SL_OIDC_KEYS_MAX)
            break;
        if (!json_is_object(jk))
            continue;
        rc = key_import(jk, &keys[n]);
        if (rc < 0) {
            sl_errorf(err, rc, "jwks: out of memory");
            goto out;
        }
        if (rc == 0)
            n++;
    }
    if (n == 0) {
        rc = sl_errorf(err, -EINVAL, "jwks: no usable key (RSA of 2048 bits or more, or EC P-256, for signing)");
        goto out;
    }
    keys_free(o->keys, o->nkeys);
    o->keys = keys;
    o->nkeys = n;
    keys = NULL;
    n = 0;
    rc = 0;
out:
    keys_free(keys, n);
    json_decref(doc);
    return rc;
}

/* ---- tokens ---- */

/* A JSON object from base64url s[0..n); NULL when either fails. */
static json_t *b64url_json(const char *s, size_t n)
{
    unsigned char *buf = malloc(n * 3 / 4 + 2);
    json_t *j = NULL;
    ssize_t len;

    if (!buf)
        return NULL;
    len = b64url_decode(s, n, buf);
    if (len >= 0)
        j = json_loadb((const char *)buf, (size_t)len, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* A NumericDate claim in epoch ms: 1 present, 0 absent, -1 not a time. */
static int claim_time(json_t *claims, const char *name, int64_t *ms)
{
    json_t *v = json_object_get(claims, name);
    double d;

    if (!v)
        return 0;
    if (!json_is_number(v))
        return -1;
    d = json_number_value(v);
    if (!isfinite(d) || d < 0 || d > 253402300799.0) /* 9999-12-31 */
        return -1;
    *ms = (int64_t)(d * 1000.0);
    return 1;
}

static bool aud_has(json_t *aud, const char *want)
{
    size_t i;
    json_t *a;

    if (json_is_string(aud))
        return strcmp(json_string_value(aud), want) == 0;
    if (!json_is_array(aud))
        return false;
    json_array_foreach(aud, i, a) if (json_is_string(a) && strcmp(json_string_value(a), want) == 0)
        return true;
    return false;
}

/* Follow a dotted path through nested objects; NULL when a part is absent. */
static json_t *claim_path(json_t *claims, const char *path)
{
    char part[64];
    json_t *cur = claims;

    while (cur && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof(part) || !json_is_object(cur))
            return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        cur = json_object_get(cur, part);
        path += n;
        if (*path == '.')
            path++;
    }
    return cur;
}

void sl_oidc_identity_clear(struct sl_oidc_identity *id)
{
    if (!id)
        return;
    for (size_t i = 0; i < id->ngroups; i++)
        free(id->groups[i]);
    free(id->groups);
    memset(id, 0, sizeof(*id));
}

/* The claims after the signature: fill *id. */
static int check_claims(struct sl_oidc *o, json_t *claims, int64_t now_ms,
                        struct sl_oidc_identity *id, struct sl_error *err)
{
    const struct sl_oidc_config *c = &o->cfg;
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    json_t *user, *sub, *groups, *g, *azp;
    int64_t exp_ms = 0, t_ms = 0;
    char shown[80];
    size_t i;
    int r;

    if (!iss || strcmp(iss, c->issuer))
        return sl_errorf(err, -EACCES, "token refused: wrong issuer");
    if (!aud_has(json_object_get(claims, "aud"), c->audience))
        return sl_errorf(err, -EACCES, "token refused: wrong audience");
    if (c->client_id[0] && strcmp(c->audience, c->client_id) == 0 &&
        (azp = json_object_get(claims, "azp")) &&
        (!json_is_string(azp) || strcmp(json_string_value(azp), c->client_id) != 0))
        /* OIDC Core 3.1.3.7: an ID token for this client names it as the
         * authorized party when it names one; with another audience
         * configured (an API's access tokens) azp is the caller's client */
        return sl_errorf(err, -EACCES, "token refused: issued to another client (azp)");
    r = claim_time(claims, "exp", &exp_ms);
    if (r == 0)
        return sl_errorf(err, -EACCES, "token refused: no expiry (exp)");
    if (r < 0)
        return sl_errorf(err, -EACCES, "token refused: exp: not a time");
    if (exp_ms + c->skew_ms <= now_ms)
        return sl_errorf(err, -EACCES, "token refused: expired");
    r = claim_time(claims, "nbf", &t_ms);
    if (r < 0)
        return sl_errorf(err, -EACCES, "token refused: nbf: not a time");
    if (r > 0 && t_ms - c->skew_ms > now_ms)
        return sl_errorf(err, -EACCES, "token refused: not valid yet (nbf)");
    r = claim_time(claims, "iat", &t_ms);
    if (r < 0)
        return sl_errorf(err, -EACCES, "token refused: iat: not a time");
    if (r > 0 && t_ms - c->skew_ms > now_ms)
        return sl_errorf(err, -EACCES, "token refused: issued in the future (iat)");
    user = claim_path(claims, c->user_claim);
    if (!user)
        return sl_errorf(err, -EACCES, "token refused: user claim %s: missing", c->user_claim);
    if (!json_is_string(user) || !sl_name_valid(json_string_value(user))) {
        sl_text_show(shown, sizeof(shown), json_is_string(user) ? json_string_value(user) : "",
                     json_is_string(user) ? json_string_length(user) : 0, 48);
        return sl_errorf(err, -EACCES,
                         "token refused: user claim %s: \"%s\" is not a valid name "
                         "(a-z, 0-9 and '-', 1..63)", c->user_claim, shown);
    }
    sub = json_object_get(claims, "sub");
    if (sub && (!json_is_string(sub) || json_string_length(sub) >= sizeof(id->subject)))
        return sl_errorf(err, -EACCES, "token refused: sub: not a string of at most 255 bytes");
    groups = claim_path(claims, c->groups_claim);
    if (groups && !json_is_array(groups))
        return sl_errorf(err, -EACCES, "token refused: groups claim %s: not an array",
                         c->groups_claim);
    if (json_array_size(groups) > SL_OIDC_GROUPS_MAX)
        return sl_errorf(err, -EACCES, "token refused: groups claim %s: more than %d groups",
                         c->groups_claim, SL_OIDC_GROUPS_MAX);
    json_array_foreach(groups, i, g) {
        if (!json_is_string(g) || json_string_length(g) == 0 ||
            json_string_length(g) > SL_OIDC_GROUP_MAX || !sl_text_printable(json_string_value(g)))
            return sl_errorf(err, -EACCES,
                             "token refused: groups claim %s[%zu]: not a printable string of 1..%d bytes",
                             c->groups_claim, i, SL_OIDC_GROUP_MAX);
    }
    if (json_array_size(groups)) {
        id->groups = calloc(json_array_size(groups), sizeof(char *));
        if (!id->groups)
            return sl_errorf(err, -ENOMEM, "oidc: out of memory");
        json_array_foreach(groups, i, g) {
            id->groups[i] = strdup(json_string_value(g));
            if (!id->groups[i])
                return sl_errorf(err, -ENOMEM, "oidc: out of memory");
            id->ngroups = i + 1;
        }
    }
    sl_strlcpy(id->user, json_string_value(user), sizeof(id->user));
    if (sub)
        sl_strlcpy(id->subject, json_string_value(sub), sizeof(id->subject));
    id->expires_ms = exp_ms;
    return 0;
}

/* Choose the key for 'kind' and 'kid' (NULL = none named). */
static int key_choose(struct sl_oidc *o, enum key_kind kind, const char *alg, const char *kid,
                      const struct key **out, struct sl_error *err)
{
    const struct key *found = NULL, *other = NULL;
    size_t of_kind = 0;

    for (size_t i = 0; i < o->nkeys; i++) {
        const struct key *k = &o->keys[i];
        if (kid) {
            /* "kid":"" names no key, not the keys without one. */
            if (!k->kid[0] || strcmp(k->kid, kid))
                continue;
            if (k->kind == kind) {
                found = k;
                break;
            }
            other = k;
        } else if (k->kind == kind) {
            found = k;
            of_kind++;
        }
    }
    if (kid && !found && other)
        return sl_errorf(err, -EACCES, "token refused: key type mismatch: %s needs an %s key, "
                         "the key it names is %s", alg, kind_name(kind), kind_name(other->kind));
    if (!found && kid)
        return sl_errorf(err, -ENOKEY, "token refused: unknown key id");
    if (!found)
        return sl_errorf(err, -ENOKEY, "token refused: no %s key for %s", kind_name(kind), alg);
    if (!kid && of_kind > 1)
        return sl_errorf(err, -EACCES, "token refused: no key id, and the key set has %zu %s keys",
                         of_kind, kind_name(kind));
    if (found->alg[0] && strcmp(found->alg, alg))
        return sl_errorf(err, -EACCES, "token refused: the key is for %.15s, not %s", found->alg, alg);
    *out = found;
    return 0;
}

int sl_oidc_verify(struct sl_oidc *o, const char *jwt, size_t len, int64_t now_ms,
                   struct sl_oidc_identity *id, struct sl_error *err)
{
    json_t *hdr = NULL, *claims = NULL, *jkid, *crit;
    const char *dot1, *dot2, *alg;
    const struct key *key = NULL;
    cjose_jws_t *jws = NULL;
    uint8_t *plain = NULL;
    size_t plain_len = 0, a;
    cjose_err cerr;
    char shown[24];
    int rc;

    memset(id, 0, sizeof(*id));
    if (len > SL_OIDC_TOKEN_MAX) {
        rc = sl_errorf(err, -EINVAL, "token malformed: longer than %d bytes", SL_OIDC_TOKEN_MAX);
        goto out;
    }
    for (size_t i = 0; i < len; i++) {
        if (jwt[i] != '.' && b64url_val((unsigned char)jwt[i]) < 0) {
            rc = sl_errorf(err, -EINVAL, "token malformed: byte %zu is not base64url", i);
            goto out;
        }
    }
    dot1 = len ? memchr(jwt, '.', len) : NULL;
    dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - jwt)) : NULL;
    if (!dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - jwt))) {
        rc = sl_errorf(err, -EINVAL, "token malformed: not three dot-separated parts");
        goto out;
    }
    /* Every part strict base64url before cjose decodes it (see b64url_ok);
     * RS256 and ES256 need a signature. */
    if (!b64url_ok(dot1 + 1, (size_t)(dot2 - dot1 - 1)) ||
        !b64url_ok(dot2 + 1, len - (size_t)(dot2 + 1 - jwt))) {
        rc = sl_errorf(err, -EINVAL, "token malformed: a part is not base64url");
        goto out;
    }
    hdr = b64url_json(jwt, (size_t)(dot1 - jwt));
    if (!hdr) {
        rc = sl_errorf(err, -EINVAL, "token malformed: header is not a base64url JSON object");
        goto out;
    }
    /* The allow-list, from the header alone: no key is looked at for an
     * alg that is not on it, so HS256 over a public key or "none" never
     * reach a verifier. */
    alg = json_string_value(json_object_get(hdr, "alg"));
    if (!alg) {
        rc = sl_errorf(err, -EINVAL, "token malformed: header has no alg");
        goto out;
    }
    for (a = 0; a < SL_ARRAY_LEN(algs); a++)
        if (strcmp(alg, algs[a].alg) == 0)
            break;
    if (a == SL_ARRAY_LEN(algs)) {
        sl_text_show(shown, sizeof(shown), alg, strlen(alg), 16);
        if (strcasecmp(alg, "none") == 0)
            rc = sl_errorf(err, -EACCES, "token refused: algorithm none refused");
        else
            rc = sl_errorf(err, -EACCES,
                           "token refused: algorithm %s refused (RS256 and ES256 only)", shown);
        goto out;
    }
    crit = json_object_get(hdr, "crit");
    if (crit) {
        rc = sl_errorf(err, -EACCES, "token refused: header has crit extensions, none understood");
        goto out;
    }
    jkid = json_object_get(hdr, "kid");
    if (jkid && !json_is_string(jkid)) {
        rc = sl_errorf(err, -EINVAL, "token malformed: kid is not a string");
        goto out;
    }
    rc = key_choose(o, algs[a].kind, alg, jkid ? json_string_value(jkid) : NULL, &key, err);
    if (rc < 0)
        goto out;
    if (dot2 + 1 == jwt + len) {
        rc = sl_errorf(err, -EACCES, "token refused: no signature");
        goto out;
    }
    jws = cjose_jws_import(jwt, len, &cerr);
    if (!jws) {
        rc = sl_errorf(err, cerr.code == CJOSE_ERR_NO_MEMORY ? -ENOMEM : -EINVAL,
                       "token malformed: %s", cerr.message ? cerr.message : "not a JWS");
        goto out;
    }
    if (!cjose_jws_verify(jws, key->jwk, &cerr)) {
        rc = sl_errorf(err, cerr.code == CJOSE_ERR_NO_MEMORY ? -ENOMEM : -EACCES,
                       "token refused: bad signature");
        goto out;
    }
    if (!cjose_jws_get_plaintext(jws, &plain, &plain_len, &cerr)) {
        rc = sl_errorf(err, -EINVAL, "token malformed: no payload");
        goto out;
    }
    /* Without JSON_ALLOW_NUL jansson refuses "\u0000" in a string, so each
     * claim compared with strcmp below is the whole of its value; with
     * JSON_REJECT_DUPLICATES a claim has one meaning. */
    claims = json_loadb((const char *)plain, plain_len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(claims)) {
        rc = sl_errorf(err, -EINVAL, "token malformed: payload is not a JSON object");
        goto out;
    }
    rc = check_claims(o, claims, now_ms, id, err);
out:
    if (rc < 0)
        sl_oidc_identity_clear(id);
    json_decref(claims);
    cjose_jws_release(jws); /* owns plain */
    json_decref(hdr);
    return rc;
}

/* ---- calls to the provider ---- */

struct body {
    char *buf;
    size_t len;
    bool too_big;
};

static size_t body_write(char *data, size_t size, size_t n, void *arg)
{
    struct body *b = arg;
    size_t add = size * n;
    char *p;

    if (add > SL_OIDC_BODY_MAX - b->len) {
        b->too_big = true;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    p = realloc(b->buf, b->len + add + 1);
    if (!p)
        return 0;
    b->buf = p;
    memcpy(b->buf + b->len, data, add);
    b->len += add;
    b->buf[b->len] = '\0';
    return add;
}

/* GET (form NULL) or POST a form to 'url'; *doc the JSON object answered.
 * 'what' names the call in errors. With 'client' the client
 * authenticates. Returns 0 with *status and *doc (caller decrefs; NULL
 * when the body is not a JSON object), or -EIO / -ENOMEM. */
static int http_json(struct sl_oidc *o, const char *what, const char *url, const char *form,
                     bool client, long *status, json_t **doc, struct sl_error *err)
{
    struct body b = {0};
    struct curl_slist *hdrs = NULL;
    char *auth = NULL, *eid = NULL, *esec = NULL;
    CURL *c = NULL;
    CURLcode cc;
    int rc;

    *doc = NULL;
    if (!url_allowed(o, url)) {
        rc = sl_errorf(err, -EIO, "%s: the provider's URL is not https", what);
        goto out;
    }
    c = curl_easy_init();
    if (!c) {
        rc = sl_errorf(err, -ENOMEM, "%s: out of memory", what);
        goto out;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, o->loopback ? "https,http" : "https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)o->cfg.timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)o->cfg.timeout_ms);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)SL_OIDC_BODY_MAX);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "sluiced");
    if (o->cfg.ca_file[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, o->cfg.ca_file);
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (client && !o->auth_post) {
        /* client_secret_basic: RFC 6749 2.3.1 form-encodes both halves
         * before they are joined and base64-encoded. */
        char *b64 = NULL;
        size_t b64len = 0, n;
        char *pair;
        cjose_err cerr;

        eid = curl_easy_escape(c, o->cfg.client_id, 0);
        esec = curl_easy_escape(c, o->cfg.client_secret, 0);
        if (!eid || !esec) {
            rc = sl_errorf(err, -ENOMEM, "%s: out of memory", what);
            goto out;
        }
        n = strlen(eid) + strlen(esec) + 2;
        pair = malloc(n);
        if (!pair) {
            rc = sl_errorf(err, -ENOMEM, "%s: out of memory", what);
            goto out;
        }
        snprintf(pair, n, "%s:%s", eid, esec);
        if (!cjose_base64_encode((const uint8_t *)pair, n - 1, &b64, &b64len, &cerr)) {
            explicit_bzero(pair, n);
            free(pair);
            rc = sl_errorf(err, -ENOMEM, "%s: out of memory", what);
            goto out;
        }
        explicit_bzero(pair, n);
        free(pair);
        n = b64len + 32;
        auth = malloc(n);
        if (auth)
            snprintf(auth, n, "Authorization: Basic %s", b64);
        explicit_bzero(b64, b64len);
        cjose_get_dealloc()(b64);
        if (!auth) {
            rc = sl_errorf(err, -ENOMEM, "%s: out of memory", what);
            goto out;
        }
        hdrs = curl_slist_append(hdrs, auth);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (form)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
    cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        rc = sl_errorf(err, -EIO, "%s: %s", what,
                       b.too_big ? "answer larger than 1 MiB" : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    *doc = b.len ? json_loadb(b.buf, b.len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (*doc && !json_is_object(*doc)) {
        json_decref(*doc);
        *doc = NULL;
    }
    rc = 0;
out:
    if (auth) {
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    if (esec) {
        explicit_bzero(esec, strlen(esec));
        curl_free(esec);
    }
    curl_free(eid);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(b.buf);
    return rc;
}

/* A string member of 'doc' that is an allowed provider URL, into dst. */
static int doc_url(struct sl_oidc *o, json_t *doc, const char *name, char *dst, size_t size,
                   bool required, struct sl_error *err)
{
    json_t *v = json_object_get(doc, name);

    if (!v && !required) {
        dst[0] = '\0';
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) >= size || !url_allowed(o, json_string_value(v)))
        return sl_errorf(err, -EIO, "discovery: %s: %s", name,
                         v ? "not an https URL" : "missing");
    sl_strlcpy(dst, json_string_value(v), size);
    return 0;
}

int sl_oidc_discover(struct sl_oidc *o, struct sl_error *err)
{
    char url[512], device[1024], token[1024], jwks_uri[1024];
    json_t *doc = NULL, *jwks = NULL, *methods, *m;
    const char *iss;
    size_t n = strlen(o->cfg.issuer), i;
    bool basic = false, post = false;
    char *text = NULL;
    long status = 0;
    int rc;

    if (n && o->cfg.issuer[n - 1] == '/')
        n--;
    snprintf(url, sizeof(url), "%.*s/.well-known/openid-configuration", (int)n, o->cfg.issuer);
    rc = http_json(o, "discovery", url, NULL, false, &status, &doc, err);
    if (rc < 0)
        goto out;
    if (status != 200 || !doc) {
        rc = sl_errorf(err, -EIO, "discovery: %s answered %ld%s", url, status,
                       doc ? "" : " without a JSON object");
        goto out;
    }
    iss = json_string_value(json_object_get(doc, "issuer"));
    if (!iss || strcmp(iss, o->cfg.issuer)) {
        rc = sl_errorf(err, -EIO, "discovery: wrong issuer: the document's issuer is not %s",
                       o->cfg.issuer);
        goto out;
    }
    if ((rc = doc_url(o, doc, "token_endpoint", token, sizeof(token), false, err)) < 0 ||
        (rc = doc_url(o, doc, "device_authorization_endpoint", device, sizeof(device), false,
                      err)) < 0 ||
        (rc = doc_url(o, doc, "jwks_uri", jwks_uri, sizeof(jwks_uri), !o->cfg.jwks_file[0],
                      err)) < 0)
        goto out;
    methods = json_object_get(doc, "token_endpoint_auth_methods_supported");
    json_array_foreach(methods, i, m) {
        basic |= json_is_string(m) && strcmp(json_string_value(m), "client_secret_basic") == 0;
        post |= json_is_string(m) && strcmp(json_string_value(m), "client_secret_post") == 0;
    }
    if (!o->cfg.jwks_file[0]) {
        rc = http_json(o, "jwks", jwks_uri, NULL, false, &status, &jwks, err);
        if (rc < 0)
            goto out;
        if (status != 200 || !jwks) {
            rc = sl_errorf(err, -EIO, "jwks: %s answered %ld%s", jwks_uri, status,
                           jwks ? "" : " without a JSON object");
            goto out;
        }
        text = json_dumps(jwks, JSON_COMPACT);
        if (!text) {
            rc = sl_errorf(err, -ENOMEM, "jwks: out of memory");
            goto out;
        }
        rc = sl_oidc_load_jwks(o, text, strlen(text), err);
        if (rc < 0)
            goto out;
    }
    sl_strlcpy(o->token_endpoint, token, sizeof(o->token_endpoint));
    sl_strlcpy(o->device_endpoint, device, sizeof(o->device_endpoint));
    o->auth_post = post && !basic;
    o->discovered = true;
    rc = 0;
out:
    free(text);
    json_decref(jwks);
    json_decref(doc);
    return rc;
}

int sl_oidc_refresh_keys(struct sl_oidc *o, int64_t now_ms, struct sl_error *err)
{
    if (o->cfg.jwks_file[0])
        return sl_errorf(err, -ENOTSUP, "oidc: the key set comes from jwks_file");
    if (o->refreshed && now_ms - o->refresh_ms < SL_OIDC_REFRESH_MS && now_ms >= o->refresh_ms)
        return sl_errorf(err, -EAGAIN, "oidc: keys were refreshed less than a minute ago");
    o->refreshed = true;
    o->refresh_ms = now_ms;
    return sl_oidc_discover(o, err);
}

/* ---- device authorization grant ---- */

/* Append "&name=value" (form-encoded) to the form in *buf. */
static int form_add(CURL *c, char *buf, size_t size, const char *name, const char *value)
{
    char *e = curl_easy_escape(c, value, 0);
    size_t used = strlen(buf);
    int n;

    if (!e)
        return -ENOMEM;
    n = snprintf(buf + used, size - used, "%s%s=%s", used ? "&" : "", name, e);
    if (strcmp(name, "client_secret") == 0)
        explicit_bzero(e, strlen(e));
    curl_free(e);
    return n < 0 || (size_t)n >= size - used ? -E2BIG : 0;
}

/* The form for a call: the fields given, and the client's credentials in
 * the body unless they go in the Authorization header. */
static int form_build(struct sl_oidc *o, char *buf, size_t size, const char *const *kv, size_t nkv)
{
    CURL *c = curl_easy_init();
    int rc = 0;

    if (!c)
        return -ENOMEM;
    buf[0] = '\0';
    for (size_t i = 0; i + 1 < nkv && rc == 0; i += 2)
        rc = form_add(c, buf, size, kv[i], kv[i + 1]);
    if (rc == 0)
        rc = form_add(c, buf, size, "client_id", o->cfg.client_id);
    if (rc == 0 && o->auth_post)
        rc = form_add(c, buf, size, "client_secret", o->cfg.client_secret);
    curl_easy_cleanup(c);
    return rc;
}

static int endpoints_ready(struct sl_oidc *o, const char *endpoint, const char *what,
                           struct sl_error *err)
{
    int rc;

    if (!o->cfg.client_id[0])
        return sl_errorf_field(err, -EINVAL, "client_id", "client_id: required for the device flow");
    if (!o->discovered && (rc = sl_oidc_discover(o, err)) < 0)
        return rc;
    if (!endpoint[0])
        return sl_errorf(err, -EIO, "discovery: the provider has no %s", what);
    return 0;
}

/* The provider's "error" (and its description) into err, shown safely. */
static const char *doc_error(json_t *doc, char *shown, size_t size)
{
    const char *e = json_string_value(json_object_get(doc, "error"));

    if (!e)
        return NULL;
    sl_text_show(shown, size, e, strlen(e), 48);
    return e;
}

static int copy_str(json_t *doc, const char *name, char *dst, size_t size, bool required,
                    struct sl_error *err)
{
    json_t *v = json_object_get(doc, name);

    dst[0] = '\0';
    if (!v && !required)
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= size ||
        !sl_text_printable(json_string_value(v)))
        return sl_errorf(err, -EIO, "device authorization: %s: %s", name,
                         v ? "not a printable string that fits" : "missing");
    sl_strlcpy(dst, json_string_value(v), size);
    return 0;
}

static int copy_int(json_t *doc, const char *name, int64_t dflt, int64_t min, int64_t max,
                    int64_t *out, struct sl_error *err)
{
    json_t *v = json_object_get(doc, name);

    if (!v && dflt >= 0) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return sl_errorf(err, -EIO, "device authorization: %s: must be an integer %lld..%lld",
                         name, (long long)min, (long long)max);
    *out = json_integer_value(v);
    return 0;
}

int sl_oidc_device_start(struct sl_oidc *o, const char *scope, struct sl_oidc_device *d,
                         struct sl_error *err)
{
    const char *kv[] = {"scope", scope ? scope : "openid profile"};
    struct sl_oidc_device got = {0};
    char form[2048], shown[64];
    json_t *doc = NULL;
    long status = 0;
    int rc;

    rc = endpoints_ready(o, o->device_endpoint, "device_authorization_endpoint", err);
    if (rc < 0)
        goto out;
    rc = form_build(o, form, sizeof(form), kv, SL_ARRAY_LEN(kv));
    if (rc < 0) {
        rc = sl_errorf(err, rc, "device authorization: the request does not fit");
        goto out;
    }
    rc = http_json(o, "device authorization", o->device_endpoint, form, true, &status, &doc, err);
    explicit_bzero(form, sizeof(form));
    if (rc < 0)
        goto out;
    if (status != 200) {
        const char *e = doc_error(doc, shown, sizeof(shown));
        rc = sl_errorf(err, e && (strcmp(e, "invalid_client") == 0 ||
                                  strcmp(e, "unauthorized_client") == 0) ? -EACCES : -EIO,
                       "device authorization: the provider answered %ld (%s)", status,
                       e ? shown : "no error code");
        goto out;
    }
    if (!doc) {
        rc = sl_errorf(err, -EIO, "device authorization: the answer is not a JSON object");
        goto out;
    }
    if ((rc = copy_str(doc, "device_code", got.device_code, sizeof(got.device_code), true, err)) < 0 ||
        (rc = copy_str(doc, "user_code", got.user_code, sizeof(got.user_code), true, err)) < 0 ||
        (rc = copy_str(doc, "verification_uri_complete", got.verification_uri_complete,
                       sizeof(got.verification_uri_complete), false, err)) < 0 ||
        (rc = copy_int(doc, "interval", 5, 1, 60, &got.interval_s, err)) < 0 ||
        (rc = copy_int(doc, "expires_in", -1, 1, 86400, &got.expires_in_s, err)) < 0)
        goto out;
    /* Google's older endpoint says verification_url. */
    rc = copy_str(doc, json_object_get(doc, "verification_uri") ? "verification_uri"
                                                                 : "verification_url",
                  got.verification_uri, sizeof(got.verification_uri), true, err);
    if (rc < 0)
        goto out;
    *d = got;
out:
    explicit_bzero(&got, sizeof(got));
    json_decref(doc);
    return rc;
}

/* The token endpoint's error codes (RFC 8628 3.5, RFC 6749 5.2) and what
 * a poll returns for each; anything else is -EIO. */
static const struct {
    const char *error;
    int rc;
} poll_errors[] = {
    {"authorization_pending", -EAGAIN},
    {"slow_down", -EBUSY},
    {"access_denied", -EACCES},
    {"expired_token", -EACCES},
    {"invalid_grant", -EACCES},
};

int sl_oidc_device_poll(struct sl_oidc *o, const char *device_code, char **id_token,
                        struct sl_error *err)
{
    const char *kv[] = {"grant_type", "urn:ietf:params:oauth:grant-type:device_code",
                        "device_code", device_code};
    char form[4096], shown[64];
    json_t *doc = NULL, *tok;
    long status = 0;
    int rc;

    *id_token = NULL;
    rc = endpoints_ready(o, o->token_endpoint, "token_endpoint", err);
    if (rc < 0)
        goto out;
    rc = form_build(o, form, sizeof(form), kv, SL_ARRAY_LEN(kv));
    if (rc < 0) {
        rc = sl_errorf(err, rc, "token: the request does not fit");
        goto out;
    }
    rc = http_json(o, "token", o->token_endpoint, form, true, &status, &doc, err);
    explicit_bzero(form, sizeof(form));
    if (rc < 0)
        goto out;
    if (status != 200) {
        const char *e = doc_error(doc, shown, sizeof(shown));
        rc = -EIO;
        for (size_t i = 0; e && i < SL_ARRAY_LEN(poll_errors); i++)
            if (strcmp(e, poll_errors[i].error) == 0)
                rc = poll_errors[i].rc;
        rc = sl_errorf(err, rc, "token: the provider answered %ld (%s)", status,
                       e ? shown : "no error code");
        goto out;
    }
    tok = json_object_get(doc, "id_token");
    if (!json_is_string(tok) || json_string_length(tok) == 0 ||
        json_string_length(tok) > SL_OIDC_TOKEN_MAX) {
        rc = sl_errorf(err, -EIO, "token: the answer has no id_token");
        goto out;
    }
    *id_token = strdup(json_string_value(tok));
    rc = *id_token ? 0 : sl_errorf(err, -ENOMEM, "token: out of memory");
out:
    json_decref(doc);
    return rc;
}
