/*
 * fuzz_jwt.c - libFuzzer target for OIDC token verification
 * (src/ident/oidc.c, sl_oidc_verify) and key set loading
 * (sl_oidc_load_jwks).
 *
 * Input: byte 0 even: the rest is a compact JWS, verified at a fixed time
 * against a fixed JWKS (one RSA 2048 key "rsa1", one EC P-256 key "ec1";
 * the corpus holds tokens those keys signed, with issuer
 * https://idp.example.com and audience "sluice"). Byte 0 odd: the rest is
 * a JWKS, loaded into a verifier of its own.
 *
 * Beyond the sanitizers, the contract is checked and a breach aborts:
 * verify returns 0, -EACCES, -ENOKEY, -EINVAL or -ENOMEM, the same twice
 * for the same input; an accepted token has a valid Sluice user name, at
 * most 256 printable groups of 1..256 bytes, and came in under 16 KiB
 * with two dots; a refusal leaves the identity empty and says why in
 * printable text. Loading a JWKS returns 0 (then 1..64 keys) or -EINVAL
 * (-ENOMEM aside), and a refused one leaves the key set as it was.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/spec.h"
#include "../../src/ident/oidc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char jwks[] =
    "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"rsa1\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"yctuPL31NZ37y4J4UEtFmp5RV4oigyuMavehNQdgq7Itd_ZGe_8_F9vxA55SgRFUYJcKfbC6lsFmVm90sRUrTEsuTOtb9nPGu9mhh7Fp1XCxKDWj87ER5vFCBpSqKL_XocrmxcOJk3MIU9lBUc7Qi7J6qbDriWez0F9G4ZeRtzRDBjnF2lyOj3KLcn42_ytRsqwlioe0J3QCMG7xWuPgySrBGY6JxUPvW_v202KNNxV3TvRj52WIJEw7-FfXVs1v30hNiTDE0Ahga8Wv5vMgqmc_ngNwgSqeNOs1MqnyB8XJsz0IjpCLEhWjIFg0d0lEJDPFIgUXsUbYK1DMEFG_pw\",\"e\":\"AQAB\"},{\"kty\":\"EC\",\"kid\":\"ec1\",\"use\":\"sig\",\"alg\":\"ES256\",\"crv\":\"P-256\",\"x\":\"lVVW1CLVislYhC5OH1H0_f5-vSWXgkEInGvf3yVPIyM\",\"y\":\"wiTXywK_Fc1J0cfsFXWcrwbKiW8XdIOK4TYYmpBVk4I\"}]}";

#define NOW_MS 1800000000000LL

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_jwt: %s\n", what);
    abort();
}

static struct sl_oidc *make(void)
{
    struct sl_oidc_config cfg;
    struct sl_error err = {0};
    struct sl_oidc *o;

    sl_oidc_config_init(&cfg);
    sl_strlcpy(cfg.issuer, "https://idp.example.com", sizeof(cfg.issuer));
    sl_strlcpy(cfg.client_id, "sluice", sizeof(cfg.client_id));
    o = sl_oidc_create(&cfg, &err);
    if (!o || sl_oidc_load_jwks(o, jwks, strlen(jwks), &err) < 0)
        fail("the fixed JWKS does not load");
    return o;
}

static void check_verify(struct sl_oidc *o, const char *tok, size_t len)
{
    struct sl_oidc_identity id, id2;
    struct sl_error err = {0}, err2 = {0};
    int rc = sl_oidc_verify(o, tok, len, NOW_MS, &id, &err);
    int rc2 = sl_oidc_verify(o, tok, len, NOW_MS, &id2, &err2);

    if (rc != rc2 || strcmp(err.text, err2.text))
        fail("two verifications of one token differ");
    sl_oidc_identity_clear(&id2);
    if (rc == 0) {
        size_t dots = 0;
        for (size_t i = 0; i < len; i++)
            dots += tok[i] == '.';
        if (len > SL_OIDC_TOKEN_MAX || dots != 2)
            fail("a token accepted that is not three parts under 16 KiB");
        if (!sl_name_valid(id.user))
            fail("an accepted user is not a valid name");
        if (id.ngroups > SL_OIDC_GROUPS_MAX || (id.ngroups && !id.groups))
            fail("too many groups");
        for (size_t i = 0; i < id.ngroups; i++) {
            size_t n = strlen(id.groups[i]);
            if (n == 0 || n > SL_OIDC_GROUP_MAX || !sl_text_printable(id.groups[i]))
                fail("a group out of bounds");
        }
    } else {
        if (rc != -EACCES && rc != -ENOKEY && rc != -EINVAL && rc != -ENOMEM)
            fail("verify returned another error");
        if (id.user[0] || id.subject[0] || id.groups || id.ngroups || id.expires_ms)
            fail("a refusal left an identity behind");
        if (!err.text[0] || !sl_text_printable(err.text))
            fail("a refusal without a printable reason");
    }
    sl_oidc_identity_clear(&id);
}

static void check_jwks(const char *text, size_t len)
{
    struct sl_oidc *o = make();
    struct sl_error err = {0};
    size_t before = sl_oidc_key_count(o);
    int rc = sl_oidc_load_jwks(o, text, len, &err);

    if (rc == 0 && (sl_oidc_key_count(o) < 1 || sl_oidc_key_count(o) > SL_OIDC_KEYS_MAX))
        fail("a loaded JWKS with no keys or too many");
    if (rc < 0 && rc != -EINVAL && rc != -ENOMEM)
        fail("load_jwks returned another error");
    if (rc < 0 && sl_oidc_key_count(o) != before)
        fail("a refused JWKS changed the key set");
    sl_oidc_destroy(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sl_oidc *o;
    char *copy;

    if (size < 1)
        return 0;
    if (!o)
        o = make();
    /* A copy of exactly the input, so reads past it are caught. */
    copy = malloc(size - 1 ? size - 1 : 1);
    if (!copy)
        return 0;
    memcpy(copy, data + 1, size - 1);
    if (data[0] & 1)
        check_jwks(copy, size - 1);
    else
        check_verify(o, copy, size - 1);
    free(copy);
    return 0;
}
