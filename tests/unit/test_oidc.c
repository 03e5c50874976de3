/*
 * test_oidc.c - token verification (src/ident/oidc.h): keys are made
 * here with OpenSSL and tokens signed here with OpenSSL directly, so the
 * test does not trust the library under test to sign. Each refusal is
 * checked for its return code and for the reason it names.
 */
#include "../tap.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "../../src/ident/oidc.h"

#define ISS "https://idp.example.com/realms/x"
#define NOW_MS 1800000000000LL /* 2027-01-15 */
#define NOW_S (NOW_MS / 1000)

static EVP_PKEY *rsa, *rsa2, *ec, *rsa_small;

static char *b64url(const unsigned char *d, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *s = malloc(n * 4 / 3 + 4), *p = s;
    size_t i;

    for (i = 0; i + 2 < n; i += 3) {
        *p++ = t[d[i] >> 2];
        *p++ = t[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *p++ = t[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
        *p++ = t[d[i + 2] & 63];
    }
    if (n - i == 1) {
        *p++ = t[d[i] >> 2];
        *p++ = t[(d[i] & 3) << 4];
    } else if (n - i == 2) {
        *p++ = t[d[i] >> 2];
        *p++ = t[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *p++ = t[(d[i + 1] & 15) << 2];
    }
    *p = '\0';
    return s;
}

static char *b64url_str(const char *s)
{
    return b64url((const unsigned char *)s, strlen(s));
}

static char *bn_b64(EVP_PKEY *k, const char *name, int pad)
{
    BIGNUM *bn = NULL;
    unsigned char buf[1024];
    int n;

    EVP_PKEY_get_bn_param(k, name, &bn);
    n = pad ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    BN_free(bn);
    return b64url(buf, (size_t)n);
}

/* One JWK of the public half of k. */
static void jwk_append(char *out, size_t size, EVP_PKEY *k, const char *kid, const char *extra)
{
    char *a, *b;
    size_t used = strlen(out);

    if (EVP_PKEY_is_a(k, "RSA")) {
        a = bn_b64(k, OSSL_PKEY_PARAM_RSA_N, 0);
        b = bn_b64(k, OSSL_PKEY_PARAM_RSA_E, 0);
        snprintf(out + used, size - used, "%s{\"kty\":\"RSA\",\"kid\":\"%s\",\"n\":\"%s\",\"e\":\"%s\"%s}",
                 used > 9 ? "," : "", kid, a, b, extra);
    } else {
        a = bn_b64(k, OSSL_PKEY_PARAM_EC_PUB_X, 32);
        b = bn_b64(k, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
        snprintf(out + used, size - used,
                 "%s{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"%s}",
                 used > 9 ? "," : "", kid, a, b, extra);
    }
    free(a);
    free(b);
}

enum sig { SIG_KEY, SIG_HMAC, SIG_NONE, SIG_JUNK };

/* header.payload.signature, signed with k (RS256 or ES256 by its type),
 * or HMAC-SHA256 with 'secret', or no signature, or junk bytes. */
static char *mint(const char *hdr, const char *payload, enum sig how, EVP_PKEY *k,
                  const unsigned char *secret, size_t secret_len)
{
    char *h = b64url_str(hdr), *p = b64url_str(payload), *s, *out;
    size_t n = strlen(h) + strlen(p) + 2;
    char *input = malloc(n);
    unsigned char sig[512];
    size_t sig_len = 0;

    snprintf(input, n, "%s.%s", h, p);
    if (how == SIG_KEY) {
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        unsigned char der[512];
        size_t der_len = sizeof(der);
        EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k);
        EVP_DigestSign(md, der, &der_len, (unsigned char *)input, strlen(input));
        EVP_MD_CTX_free(md);
        if (EVP_PKEY_is_a(k, "EC")) {
            /* JWS wants r||s, 32 bytes each, not DER. */
            const unsigned char *q = der;
            ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &q, (long)der_len);
            BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, 32);
            BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + 32, 32);
            ECDSA_SIG_free(es);
            sig_len = 64;
        } else {
            memcpy(sig, der, der_len);
            sig_len = der_len;
        }
    } else if (how == SIG_HMAC) {
        unsigned int l = 0;
        HMAC(EVP_sha256(), secret, (int)secret_len, (unsigned char *)input, strlen(input), sig, &l);
        sig_len = l;
    } else if (how == SIG_JUNK) {
        memset(sig, 0x5a, 256);
        sig_len = 256;
    }
    s = b64url(sig, sig_len);
    n = strlen(input) + strlen(s) + 2;
    out = malloc(n);
    snprintf(out, n, "%s.%s", input, s);
    free(h);
    free(p);
    free(s);
    free(input);
    return out;
}

/* Claims that pass, with one part replaced by the caller's format. */
static char *claims(const char *extra)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"sub\":\"u-123\",\"exp\":%lld,"
             "\"iat\":%lld,\"preferred_username\":\"alice\",\"groups\":[\"team-a\",\"ml\"]%s}",
             (long long)NOW_S + 300, (long long)NOW_S - 10, extra);
    return buf;
}

static struct sl_oidc *o;

/* Verify 'tok' (freed here); returns the rc and leaves the text in 'why'. */
static int verify(char *tok, struct sl_oidc_identity *id, char *why, size_t why_size)
{
    struct sl_error err = {0};
    struct sl_oidc_identity local;
    int rc = sl_oidc_verify(o, tok, strlen(tok), NOW_MS, id ? id : &local, &err);

    if (!id)
        sl_oidc_identity_clear(&local);
    if (why)
        snprintf(why, why_size, "%s", err.text);
    free(tok);
    return rc;
}

/* A refusal with code 'want' whose text contains 'needle'. */
static void refused(char *tok, int want, const char *needle, const char *name)
{
    char why[400];
    int rc = verify(tok, NULL, why, sizeof(why));

    if (!ok(rc == want && strstr(why, needle), "%s", name))
        diag("  rc %d (want %d), text \"%s\" (want \"%s\")", rc, want, why, needle);
}

static const char *hdr_rsa = "{\"alg\":\"RS256\",\"kid\":\"rsa1\",\"typ\":\"JWT\"}";
static const char *hdr_ec = "{\"alg\":\"ES256\",\"kid\":\"ec1\"}";

static void test_accepts(void)
{
    struct sl_oidc_identity id;
    char why[400];

    is_int(verify(mint(hdr_rsa, claims(""), SIG_KEY, rsa, NULL, 0), &id, why, sizeof(why)), 0,
           "a valid RS256 token is accepted");
    is_str(id.user, "alice", "the user is preferred_username");
    is_str(id.subject, "u-123", "the subject is sub");
    ok(id.ngroups == 2 && strcmp(id.groups[0], "team-a") == 0 && strcmp(id.groups[1], "ml") == 0,
       "the groups are the groups claim, in order");
    is_int(id.expires_ms, (NOW_S + 300) * 1000, "expires_ms is exp in ms");
    sl_oidc_identity_clear(&id);
    sl_oidc_identity_clear(&id);
    ok(id.groups == NULL && id.ngroups == 0, "identity_clear empties, twice");

    is_int(verify(mint(hdr_ec, claims(""), SIG_KEY, ec, NULL, 0), &id, why, sizeof(why)), 0,
           "a valid ES256 token is accepted");
    is_str(id.user, "alice", "ES256: the user");
    sl_oidc_identity_clear(&id);

    is_int(verify(mint("{\"alg\":\"ES256\"}", claims(""), SIG_KEY, ec, NULL, 0), NULL, why,
                  sizeof(why)), 0, "no kid: the only EC key is used");
    is_int(verify(mint(hdr_rsa, claims(",\"aud\":[\"other\",\"sluice\"]"), SIG_KEY, rsa, NULL, 0),
                  NULL, why, sizeof(why)), -EINVAL,
           "a duplicate member (aud twice) is malformed, not the first or last one");
    char c[512];
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":[\"other\",\"sluice\"],\"exp\":%lld,"
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    is_int(verify(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), &id, why, sizeof(why)), 0,
           "aud as an array containing the audience is accepted");
    ok(id.ngroups == 0 && id.groups == NULL && id.subject[0] == '\0',
       "no groups claim and no sub: no groups, empty subject");
    sl_oidc_identity_clear(&id);
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,\"preferred_username\":\"bob\"}",
             (long long)NOW_S - 30);
    is_int(verify(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), NULL, why, sizeof(why)), 0,
           "expired 30 s ago, within the 60 s skew: accepted");
}

static void test_claims_refused(void)
{
    char c[512];

    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,\"preferred_username\":\"bob\"}",
             (long long)NOW_S - 61);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "expired",
            "expired 61 s ago, beyond the skew: refused as expired");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"preferred_username\":\"bob\"}");
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "no expiry",
            "no exp: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":\"soon\",\"preferred_username\":\"bob\"}");
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "exp: not a time",
            "exp a string: refused");
    snprintf(c, sizeof(c), ",\"nbf\":%lld", (long long)NOW_S + 120);
    refused(mint(hdr_rsa, claims(c), SIG_KEY, rsa, NULL, 0), -EACCES, "nbf",
            "nbf two minutes ahead: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,\"iat\":%lld,"
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 600, (long long)NOW_S + 300);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "future (iat)",
            "iat five minutes ahead: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"https://evil.example.com/realms/x\",\"aud\":\"sluice\",\"exp\":%lld,"
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "wrong issuer", "wrong iss: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "/\",\"aud\":\"sluice\",\"exp\":%lld,"
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "wrong issuer",
            "iss with a trailing slash is not the issuer: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"other\",\"exp\":%lld,"
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "wrong audience",
            "wrong aud (a string): refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":[\"other\",\"sluice-x\"],\"exp\":%lld,"
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "wrong audience",
            "wrong aud (an array without it): refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"exp\":%lld,\"preferred_username\":\"bob\"}",
             (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "wrong audience", "no aud: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":[\"sluice\",\"other\"],\"azp\":\"other\","
             "\"exp\":%lld,\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "another client (azp)",
            "issued to another client (azp other): refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":[\"sluice\",\"other\"],\"azp\":7,"
             "\"exp\":%lld,\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "another client (azp)",
            "azp that is not a string: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":[\"sluice\",\"other\"],\"azp\":\"sluice\","
             "\"exp\":%lld,\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    is_int(verify(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), NULL, NULL, 0), 0,
           "azp naming this client: accepted");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,\"groups\":\"team-a\","
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "not an array",
            "groups a string, not an array: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,\"groups\":[\"a\",7],"
             "\"preferred_username\":\"bob\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "groups[1]",
            "a group that is not a string: refused, naming it");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "preferred_username: missing",
            "user claim missing: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,"
             "\"preferred_username\":\"Alice Smith\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "not a valid name",
            "user claim not a Sluice name: refused");
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,"
             "\"preferred_username\":42}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "not a valid name",
            "user claim a number: refused");

    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,"
             "\"preferred_username\":\"alice\\u0000x\"}", (long long)NOW_S + 60);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EINVAL, "payload",
            "a NUL inside a claim (alice\\u0000x) is malformed, never read as alice");

    /* 257 groups: one too many. */
    char *big = malloc(8192);
    size_t used = (size_t)snprintf(big, 8192, "{\"iss\":\"" ISS "\",\"aud\":\"sluice\",\"exp\":%lld,"
                                   "\"preferred_username\":\"bob\",\"groups\":[", (long long)NOW_S + 60);
    for (int i = 0; i < 257; i++)
        used += (size_t)snprintf(big + used, 8192 - used, "%s\"g%d\"", i ? "," : "", i);
    snprintf(big + used, 8192 - used, "]}");
    refused(mint(hdr_rsa, big, SIG_KEY, rsa, NULL, 0), -EACCES, "more than 256",
            "257 groups: refused");
    free(big);
}

static void test_attacks(void)
{
    unsigned char *der = NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    char *pem;
    long pem_len;
    int der_len;

    refused(mint("{\"alg\":\"none\"}", claims(""), SIG_NONE, NULL, NULL, 0), -EACCES,
            "algorithm none refused", "alg none without a signature: refused");
    refused(mint("{\"alg\":\"none\",\"kid\":\"rsa1\"}", claims(""), SIG_JUNK, NULL, NULL, 0),
            -EACCES, "algorithm none refused", "alg none with a signature: refused");
    refused(mint("{\"alg\":\"None\"}", claims(""), SIG_NONE, NULL, NULL, 0), -EACCES,
            "algorithm none refused", "alg None (any case): refused");

    /* The classic confusion: HS256 keyed with the RSA public key. */
    PEM_write_bio_PUBKEY(bio, rsa);
    pem_len = BIO_get_mem_data(bio, &pem);
    refused(mint("{\"alg\":\"HS256\",\"kid\":\"rsa1\"}", claims(""), SIG_HMAC, NULL,
                 (unsigned char *)pem, (size_t)pem_len),
            -EACCES, "algorithm HS256 refused", "HS256 keyed with the RSA public key's PEM: refused");
    der_len = i2d_PUBKEY(rsa, &der);
    refused(mint("{\"alg\":\"HS256\"}", claims(""), SIG_HMAC, NULL, der, (size_t)der_len),
            -EACCES, "algorithm HS256 refused", "HS256 keyed with its DER, no kid: refused");
    OPENSSL_free(der);
    BIO_free(bio);
    refused(mint("{\"alg\":\"PS256\",\"kid\":\"rsa1\"}", claims(""), SIG_KEY, rsa, NULL, 0),
            -EACCES, "PS256 refused", "PS256 (not on the list): refused");
    refused(mint("{\"alg\":\"RS256\",\"kid\":\"ec1\"}", claims(""), SIG_KEY, rsa, NULL, 0),
            -EACCES, "key type mismatch", "RS256 naming an EC key: refused as a type mismatch");
    refused(mint("{\"alg\":\"ES256\",\"kid\":\"rsa1\"}", claims(""), SIG_KEY, ec, NULL, 0),
            -EACCES, "key type mismatch", "ES256 naming an RSA key: refused as a type mismatch");
    refused(mint("{\"alg\":\"RS256\",\"kid\":\"rsa1\",\"crit\":[\"exp\"]}", claims(""), SIG_KEY,
                 rsa, NULL, 0), -EACCES, "crit", "a crit header: refused");
    refused(mint("{\"alg\":\"RS256\",\"kid\":\"nope\"}", claims(""), SIG_KEY, rsa, NULL, 0),
            -ENOKEY, "unknown key id", "unknown kid: -ENOKEY");
    refused(mint("{\"alg\":\"ES256\",\"kid\":\"\"}", claims(""), SIG_KEY, ec, NULL, 0), -ENOKEY,
            "unknown key id", "kid \"\" names no key (not the keys without a kid)");
    refused(mint("{\"alg\":\"RS256\",\"kid\":\"small\"}", claims(""), SIG_KEY, rsa_small, NULL, 0),
            -ENOKEY, "unknown key id", "a 1024-bit RSA key of the JWKS was skipped: -ENOKEY");
    refused(mint("{\"alg\":\"RS256\",\"kid\":\"rsa1\"}", claims(""), SIG_KEY, rsa2, NULL, 0),
            -EACCES, "bad signature", "signed by another RSA key: bad signature");
    refused(mint("{\"alg\":\"ES256\",\"kid\":\"ec1\"}", claims(""), SIG_JUNK, NULL, NULL, 0),
            -EACCES, "bad signature", "ES256 with junk for a signature: bad signature");

    /* Tampering: another payload under a good signature, a changed signature. */
    char *good = mint(hdr_rsa, claims(""), SIG_KEY, rsa, NULL, 0);
    char *p2 = b64url_str(claims(",\"admin\":true"));
    char *d1 = strchr(good, '.'), *d2 = strchr(d1 + 1, '.');
    size_t n = strlen(good) + strlen(p2) + 4;
    char *t = malloc(n);
    snprintf(t, n, "%.*s.%s%s", (int)(d1 - good), good, p2, d2);
    refused(t, -EACCES, "bad signature", "a tampered payload: bad signature");
    free(p2);
    t = strdup(good);
    d2 = strchr(strchr(t, '.') + 1, '.');
    d2[20] = d2[20] == 'A' ? 'B' : 'A';
    refused(t, -EACCES, "bad signature", "a tampered signature: bad signature");
    free(good);
}

static void test_malformed(void)
{
    char *huge;

    refused(strdup("eyJhbGciOiJSUzI1NiJ9.eyJ9"), -EINVAL, "three", "two parts: malformed");
    refused(strdup("a.b.c.d"), -EINVAL, "three", "four parts: malformed");
    refused(strdup(""), -EINVAL, "three", "empty: malformed");
    refused(strdup("eyJhbGciOiJSUzI1NiJ9!.e30.AA"), -EINVAL, "base64url", "a '!' : malformed");
    refused(strdup("eyJhbGciOiJSUzI1NiJ9=.e30.AA"), -EINVAL, "base64url", "padding: malformed");
    refused(strdup("bm90IGpzb24.e30.AA"), -EINVAL, "header", "a header that is not JSON: malformed");
    refused(strdup("WzFd.e30.AA"), -EINVAL, "header", "a header that is an array: malformed");
    refused(strdup("e30.e30.AA"), -EINVAL, "no alg", "a header without alg: malformed");
    refused(mint(hdr_rsa, "not json", SIG_KEY, rsa, NULL, 0), -EINVAL, "payload",
            "a signed payload that is not JSON: malformed");
    /* cjose's base64url decoder aborts the process on a length of 1 mod 4:
     * such a part must be refused before it gets there. */
    char *t = mint(hdr_rsa, claims(""), SIG_KEY, rsa, NULL, 0);
    size_t n = strlen(t);
    char *t5 = malloc(n + 4);
    size_t sig_len = n - (size_t)(strrchr(t, '.') + 1 - t);
    memcpy(t5, t, n);
    /* 256 signature bytes are 342 characters; pad the part to 1 mod 4. */
    memset(t5 + n, 'A', (5 - sig_len % 4) % 4);
    t5[n + (5 - sig_len % 4) % 4] = '\0';
    refused(t5, -EINVAL, "not base64url", "a signature of 1 mod 4 characters: malformed, no abort");
    free(t);
    refused(strdup("eyJhbGciOiJSUzI1NiJ9.e31.AAAA"), -EINVAL, "not base64url",
            "a payload with non-zero trailing bits: malformed");
    refused(mint(hdr_rsa, claims(""), SIG_NONE, NULL, NULL, 0), -EACCES, "no signature",
            "RS256 without a signature: refused");
    huge = malloc(SL_OIDC_TOKEN_MAX + 2);
    memset(huge, 'A', SL_OIDC_TOKEN_MAX + 1);
    huge[SL_OIDC_TOKEN_MAX + 1] = '\0';
    refused(huge, -EINVAL, "longer than", "a token over 16 KiB: refused before parsing");
}

static struct sl_oidc *make(const char *jwks, struct sl_error *err)
{
    struct sl_oidc_config cfg;
    struct sl_oidc *r;

    sl_oidc_config_init(&cfg);
    sl_strlcpy(cfg.issuer, ISS, sizeof(cfg.issuer));
    sl_strlcpy(cfg.client_id, "sluice", sizeof(cfg.client_id));
    r = sl_oidc_create(&cfg, err);
    if (r && jwks && sl_oidc_load_jwks(r, jwks, strlen(jwks), err) < 0) {
        sl_oidc_destroy(r);
        r = NULL;
    }
    return r;
}

static void test_config(const char *jwks)
{
    struct sl_oidc_config cfg;
    struct sl_error err = {0};
    struct sl_oidc *x;
    char path[] = "/tmp/test_oidc_jwks_XXXXXX";
    int fd;

    sl_oidc_config_init(&cfg);
    sl_strlcpy(cfg.issuer, "http://idp.example.com", sizeof(cfg.issuer));
    sl_strlcpy(cfg.client_id, "sluice", sizeof(cfg.client_id));
    x = sl_oidc_create(&cfg, &err);
    ok(!x && errno == EINVAL && strcmp(err.field, "issuer") == 0 && strstr(err.text, "loopback"),
       "an http issuer on another host is refused, naming issuer");
    sl_strlcpy(cfg.issuer, "http://127.0.0.1:8080/realms/x", sizeof(cfg.issuer));
    x = sl_oidc_create(&cfg, &err);
    ok(x != NULL, "an http issuer on 127.0.0.1 is allowed");
    sl_oidc_destroy(x);
    sl_strlcpy(cfg.issuer, "http://[::1]:8080", sizeof(cfg.issuer));
    x = sl_oidc_create(&cfg, &err);
    ok(x != NULL, "an http issuer on [::1] is allowed");
    sl_oidc_destroy(x);
    sl_strlcpy(cfg.issuer, "http://127.0.0.1.evil.com", sizeof(cfg.issuer));
    x = sl_oidc_create(&cfg, &err);
    ok(!x && strcmp(err.field, "issuer") == 0, "http on 127.0.0.1.evil.com is not loopback");
    sl_strlcpy(cfg.issuer, "ftp://idp.example.com", sizeof(cfg.issuer));
    x = sl_oidc_create(&cfg, &err);
    ok(!x && strcmp(err.field, "issuer") == 0, "an ftp issuer is refused");
    sl_strlcpy(cfg.issuer, ISS, sizeof(cfg.issuer));
    cfg.skew_ms = 300001;
    x = sl_oidc_create(&cfg, &err);
    ok(!x && strcmp(err.field, "skew_ms") == 0 && strstr(err.text, "0..300000"),
       "a skew over five minutes is refused, naming skew_ms");
    cfg.skew_ms = 60000;
    sl_strlcpy(cfg.groups_claim, "realm..roles", sizeof(cfg.groups_claim));
    x = sl_oidc_create(&cfg, &err);
    ok(!x && strcmp(err.field, "groups_claim") == 0, "a bad groups claim path is refused");
    sl_strlcpy(cfg.groups_claim, "groups", sizeof(cfg.groups_claim));
    cfg.client_id[0] = '\0';
    x = sl_oidc_create(&cfg, &err);
    ok(!x && strcmp(err.field, "audience") == 0, "no audience and no client_id: refused");
    sl_strlcpy(cfg.client_id, "sluice", sizeof(cfg.client_id));
    sl_strlcpy(cfg.client_secret, "s3cret-value", sizeof(cfg.client_secret));
    sl_strlcpy(cfg.jwks_file, "/nonexistent/jwks.json", sizeof(cfg.jwks_file));
    x = sl_oidc_create(&cfg, &err);
    ok(!x && strcmp(err.field, "jwks_file") == 0 && !strstr(err.text, "s3cret"),
       "a missing jwks_file is refused, naming jwks_file, without the secret");

    fd = mkstemp(path);
    ok(fd >= 0 && write(fd, jwks, strlen(jwks)) == (ssize_t)strlen(jwks), "write a JWKS file");
    close(fd);
    sl_strlcpy(cfg.jwks_file, path, sizeof(cfg.jwks_file));
    x = sl_oidc_create(&cfg, &err);
    ok(x && sl_oidc_key_count(x) == 3, "create loads jwks_file: 3 usable keys of 5 (%s)", err.text);
    if (x) {
        struct sl_oidc_identity id;
        char *tok = mint(hdr_ec, claims(""), SIG_KEY, ec, NULL, 0);
        is_int(sl_oidc_verify(x, tok, strlen(tok), NOW_MS, &id, &err), 0,
               "a token verifies against the keys of jwks_file");
        sl_oidc_identity_clear(&id);
        free(tok);
        is_int(sl_oidc_refresh_keys(x, NOW_MS, &err), -ENOTSUP,
               "refresh_keys with jwks_file: -ENOTSUP");
    }
    sl_oidc_destroy(x);
    unlink(path);
}

static void test_jwks(void)
{
    struct sl_error err = {0};
    size_t before = sl_oidc_key_count(o);

    is_int(sl_oidc_load_jwks(o, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"AAAA\"}]}", 37, &err), -EINVAL,
           "a JWKS with only an oct key: no usable key");
    is_int(sl_oidc_key_count(o), before, "and the key set is as it was");
    is_int(sl_oidc_load_jwks(o, "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AAAAA\","
                                "\"y\":\"AAAA\"}]}", 60, &err), -EINVAL,
           "an EC key whose x is 5 base64url characters is skipped (cjose would abort)");
    is_int(sl_oidc_load_jwks(o, "[]", 2, &err), -EINVAL, "a JWKS that is an array: refused");
    is_int(sl_oidc_load_jwks(o, "{\"keys\":", 8, &err), -EINVAL, "a JWKS that is not JSON: refused");
    ok(strstr(err.text, "not JSON") != NULL, "says not JSON");
}

static void test_no_kid_several(void)
{
    char jwks[8192] = "{\"keys\":[";
    struct sl_error err = {0};
    struct sl_oidc *saved = o;

    jwk_append(jwks, sizeof(jwks), rsa, "rsa1", "");
    jwk_append(jwks, sizeof(jwks), rsa2, "rsa2", ",\"alg\":\"RS256\",\"use\":\"sig\"");
    strcat(jwks, "]}");
    o = make(jwks, &err);
    refused(mint("{\"alg\":\"RS256\"}", claims(""), SIG_KEY, rsa, NULL, 0), -EACCES, "has 2 RSA keys",
            "no kid with two RSA keys: refused, not guessed");
    is_int(verify(mint("{\"alg\":\"RS256\",\"kid\":\"rsa2\"}", claims(""), SIG_KEY, rsa2, NULL, 0),
                  NULL, NULL, 0), 0, "the second key, named by kid: accepted");
    sl_oidc_destroy(o);
    o = saved;
}

static void test_groups_path(void)
{
    struct sl_oidc_config cfg;
    struct sl_error err = {0};
    struct sl_oidc_identity id;
    struct sl_oidc *saved = o;
    char c[512];
    char jwks[4096] = "{\"keys\":[";

    jwk_append(jwks, sizeof(jwks), rsa, "rsa1", "");
    strcat(jwks, "]}");
    sl_oidc_config_init(&cfg);
    sl_strlcpy(cfg.issuer, ISS, sizeof(cfg.issuer));
    sl_strlcpy(cfg.audience, "api", sizeof(cfg.audience));
    sl_strlcpy(cfg.user_claim, "email_name", sizeof(cfg.user_claim));
    sl_strlcpy(cfg.groups_claim, "realm_access.roles", sizeof(cfg.groups_claim));
    cfg.skew_ms = 0;
    o = sl_oidc_create(&cfg, &err);
    sl_oidc_load_jwks(o, jwks, strlen(jwks), &err);
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"api\",\"exp\":%lld,\"email_name\":\"carol\","
             "\"realm_access\":{\"roles\":[\"admin\"]}}", (long long)NOW_S + 60);
    is_int(verify(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), &id, NULL, 0), 0,
           "a dotted groups claim and another user claim: accepted");
    ok(id.ngroups == 1 && strcmp(id.groups[0], "admin") == 0 && strcmp(id.user, "carol") == 0,
       "groups from realm_access.roles, user from email_name");
    sl_oidc_identity_clear(&id);
    snprintf(c, sizeof(c),
             "{\"iss\":\"" ISS "\",\"aud\":\"api\",\"exp\":%lld,\"email_name\":\"carol\"}",
             (long long)NOW_S - 1);
    refused(mint(hdr_rsa, c, SIG_KEY, rsa, NULL, 0), -EACCES, "expired",
            "with skew 0, a token expired a second ago: refused");
    sl_oidc_destroy(o);
    o = saved;
}

static void test_refresh(void)
{
    struct sl_oidc_config cfg;
    struct sl_error err = {0};
    struct sl_oidc *x;

    /* A loopback issuer on port 1, where nothing listens: each attempt
     * fails at once, which is enough to see the rate limit. */
    sl_oidc_config_init(&cfg);
    sl_strlcpy(cfg.issuer, "http://127.0.0.1:1", sizeof(cfg.issuer));
    sl_strlcpy(cfg.client_id, "sluice", sizeof(cfg.client_id));
    x = sl_oidc_create(&cfg, &err);
    is_int(sl_oidc_refresh_keys(x, NOW_MS, &err), -EIO, "the first refresh tries: -EIO, unreachable");
    is_int(sl_oidc_refresh_keys(x, NOW_MS + 59999, &err), -EAGAIN,
           "a second within a minute: -EAGAIN, no call");
    is_int(sl_oidc_refresh_keys(x, NOW_MS + 60000, &err), -EIO, "a minute later it tries again");
    sl_oidc_destroy(x);
}

int main(void)
{
    char jwks[16384] = "{\"keys\":[";
    struct sl_error err = {0};

    rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa2 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa_small = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ok(rsa && rsa2 && rsa_small && ec, "keys made (RSA 2048 twice, RSA 1024, EC P-256)");

    jwk_append(jwks, sizeof(jwks), rsa, "rsa1", ",\"use\":\"sig\"");
    jwk_append(jwks, sizeof(jwks), rsa_small, "small", "");
    jwk_append(jwks, sizeof(jwks), ec, "ec1", ",\"alg\":\"ES256\"");
    jwk_append(jwks, sizeof(jwks), rsa2, "enc1", ",\"use\":\"enc\"");
    strcat(jwks, ",{\"kty\":\"oct\",\"kid\":\"hmac\",\"k\":\"c2VjcmV0\"}");
    jwk_append(jwks, sizeof(jwks), rsa2, "rsa-other", "");
    strcat(jwks, "]}");
    o = make(jwks, &err);
    ok(o != NULL, "a verifier with the test JWKS (%s)", err.text);
    is_int(sl_oidc_key_count(o), 3, "3 keys kept: 1024-bit RSA, use enc and oct skipped");

    test_accepts();
    test_claims_refused();
    test_attacks();
    test_malformed();
    test_jwks();
    test_no_kid_several();
    test_groups_path();
    test_config(jwks);
    test_refresh();

    sl_oidc_destroy(o);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(rsa2);
    EVP_PKEY_free(rsa_small);
    EVP_PKEY_free(ec);
    return done_testing();
}
