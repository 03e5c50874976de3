/*
 * oidc.h - OpenID Connect for sluiced: verify ID and access tokens (compact
 * JWS) against the provider's key set, fetch that key set through OIDC
 * discovery, and run the device authorization grant (RFC 8628) as a
 * confidential client.
 *
 * What a token must be to pass sl_oidc_verify, in the order checked (the
 * first failure is the answer):
 *   - at most SL_OIDC_TOKEN_MAX bytes, three base64url parts (-EINVAL);
 *   - header alg RS256 or ES256, and no "crit": "none", HS* and everything
 *     else are refused from the header alone, before any key is looked at
 *     (-EACCES), so a public key can never be used as an HMAC secret;
 *   - the key: the one whose kid the header names, or with no kid the only
 *     key of the alg's type (-ENOKEY when none); its type must match the
 *     alg (RSA for RS256, EC P-256 for ES256) and so must its own "alg"
 *     when it has one (-EACCES);
 *   - the signature, checked by cjose (docs/decisions/0017-jose-library.md);
 *   - claims: iss equals the configured issuer exactly, aud (a string or an
 *     array) contains the audience, azp (when present, and the audience is
 *     the client id) is the client id, exp present and later than now - skew,
 *     nbf and iat (when present) no later than now + skew, the user claim
 *     a Sluice name (sl_name_valid), the groups claim (a dotted path into
 *     the claims; absent = no groups) an array of at most SL_OIDC_GROUPS_MAX
 *     printable strings of 1..SL_OIDC_GROUP_MAX bytes (-EACCES).
 * The key set holds RSA keys of 2048 bits or more and EC P-256 keys whose
 * "use" is "sig" or absent; any other key is skipped when the set is loaded.
 *
 * The client secret is never logged nor put in an error text; error texts
 * quote what a provider said only through sl_text_show (bounded, printable).
 * Calls to the provider (libcurl) use https only (http too when the
 * issuer's host is loopback: 127.0.0.0/8, ::1, localhost), follow no
 * redirects, read at most SL_OIDC_BODY_MAX bytes and give up after
 * timeout_ms.
 *
 * Not thread-safe: one thread at a time per struct sl_oidc (the caller
 * serialises). The network calls block; call them from a worker thread.
 */
#ifndef SL_IDENT_OIDC_H
#define SL_IDENT_OIDC_H

#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"

#define SL_OIDC_TOKEN_MAX 16384        /* bytes of a compact JWS */
#define SL_OIDC_BODY_MAX (1024 * 1024) /* bytes of a provider's answer, of a JWKS */
#define SL_OIDC_KEYS_MAX 64            /* keys kept from one JWKS */
#define SL_OIDC_GROUPS_MAX 256
#define SL_OIDC_GROUP_MAX 256          /* bytes of one group name */
#define SL_OIDC_SKEW_MAX_MS 300000
#define SL_OIDC_REFRESH_MS 60000       /* at most one key refresh per minute */

struct sl_oidc_config {
    char issuer[256];        /* exact `iss`; https, or http for a loopback host */
    char audience[256];      /* expected in `aud`; "" = client_id */
    char client_id[256];     /* needed for the device flow, and when audience is "" */
    char client_secret[512]; /* the caller reads it from a 0600 file or env; never shown */
    char jwks_file[1024];    /* "" = the JWKS of the issuer's discovery document */
    char ca_file[1024];      /* CA bundle for calls to the provider; "" = system store */
    char user_claim[64];     /* "" = "preferred_username" */
    char groups_claim[64];   /* "" = "groups"; a dotted path ("realm_access.roles") */
    int64_t skew_ms;         /* allowed clock skew for exp/nbf/iat, 0..300000 */
    int64_t timeout_ms;      /* per call to the provider, 100..120000; 0 = 5000 */
};

/* Fill 'cfg' with the defaults: everything empty, skew_ms 60000,
 * timeout_ms 5000, user_claim "preferred_username", groups_claim "groups". */
void sl_oidc_config_init(struct sl_oidc_config *cfg);

struct sl_oidc;

/* Check 'cfg' and make a verifier from a copy of it; loads jwks_file when
 * set. No network. Returns NULL with errno set (EINVAL, ENOMEM, or the
 * errno of reading jwks_file) and 'err' naming the bad key ("issuer",
 * "skew_ms", "jwks_file", ...). */
struct sl_oidc *sl_oidc_create(const struct sl_oidc_config *cfg, struct sl_error *err);
/* NULL-safe; preserves errno; wipes the copy of the client secret. */
void sl_oidc_destroy(struct sl_oidc *o);

/* Replace the key set with the usable keys of the JWKS json[0..len) (see
 * above for which). Returns 0, or -EINVAL (not a JWKS, or no usable key)
 * with the key set as it was. */
int sl_oidc_load_jwks(struct sl_oidc *o, const char *json, size_t len, struct sl_error *err);
/* How many keys the current set holds. */
size_t sl_oidc_key_count(const struct sl_oidc *o);

/* Blocking: GET {issuer}/.well-known/openid-configuration (one trailing '/'
 * of the issuer dropped), require its "issuer" to equal the configured one
 * exactly, remember its device_authorization_endpoint and token_endpoint
 * (https, as for the issuer) and, unless jwks_file is set, fetch jwks_uri
 * and load it. Returns 0; -EIO when the provider is unreachable or its
 * answer is not what it must be (err says which), -EINVAL when a key set
 * fetched has no usable key. On failure what was known before stays. */
int sl_oidc_discover(struct sl_oidc *o, struct sl_error *err);

/* After sl_oidc_verify answered -ENOKEY: fetch the key set again through
 * sl_oidc_discover, at most once per SL_OIDC_REFRESH_MS of 'now_ms' (the
 * first call always may). Returns 0 (then verify again), -EAGAIN when the
 * last refresh was too recent, -ENOTSUP with jwks_file set, or what
 * sl_oidc_discover returned (the attempt still counts). */
int sl_oidc_refresh_keys(struct sl_oidc *o, int64_t now_ms, struct sl_error *err);

struct sl_oidc_identity {
    char user[64];       /* the user claim, a valid Sluice name */
    char subject[256];   /* `sub`, "" when absent */
    char **groups;       /* ngroups malloc'd strings, in the token's order; owned */
    size_t ngroups;
    int64_t expires_ms;  /* `exp`, epoch ms */
};

/* Verify the compact JWS jwt[0..len) at 'now_ms' (epoch ms) as set out at
 * the top of this file and fill *id (which the caller clears with
 * sl_oidc_identity_clear). Returns 0; -EACCES token refused (err says why:
 * "expired", "wrong issuer", "wrong audience", "bad signature", "algorithm
 * none refused", ...); -ENOKEY no key for the token's kid (see
 * sl_oidc_refresh_keys); -EINVAL malformed token; -ENOMEM. On failure *id
 * is all empty. */
int sl_oidc_verify(struct sl_oidc *o, const char *jwt, size_t len, int64_t now_ms,
                   struct sl_oidc_identity *id, struct sl_error *err);
/* Free the groups and empty *id; NULL-safe; may be called twice. */
void sl_oidc_identity_clear(struct sl_oidc_identity *id);

/* Device authorization grant (RFC 8628). Both calls run sl_oidc_discover
 * first when the endpoints are not known yet. The client authenticates
 * with client_secret_basic, or client_secret_post when the provider lists
 * only that among token_endpoint_auth_methods_supported. */
struct sl_oidc_device {
    char device_code[1024];
    char user_code[64];
    char verification_uri[512];
    char verification_uri_complete[1024]; /* "" when the provider gives none */
    int64_t interval_s;                   /* 1..60; 5 when the provider gives none */
    int64_t expires_in_s;                 /* 1..86400 */
};

/* Start a device authorization with 'scope' (NULL = "openid profile").
 * Returns 0 with *d filled; -EACCES when the provider refuses the client;
 * -EIO provider unreachable or its answer unusable; -EINVAL no client_id. */
int sl_oidc_device_start(struct sl_oidc *o, const char *scope, struct sl_oidc_device *d,
                         struct sl_error *err);

/* One poll of the token endpoint for 'device_code'. Returns 0 with
 * *id_token malloc'd (the answer's id_token, not yet verified: pass it to
 * sl_oidc_verify); -EAGAIN authorization_pending; -EBUSY slow_down (add 5 s
 * to the interval); -EACCES access_denied, expired_token or invalid_grant;
 * -EIO provider unreachable, another error (invalid_client among them) or
 * an answer that makes no sense (err says which). *id_token is NULL on
 * failure. */
int sl_oidc_device_poll(struct sl_oidc *o, const char *device_code, char **id_token,
                        struct sl_error *err);

#endif
