/*
 * fuzz_ident.c - libFuzzer target for the identity file (src/ident/ident.c,
 * sl_ident_load_text: YAML or JSON naming an LDAP server, an OIDC provider
 * and the group rules; docs/identity.md).
 *
 * Beyond the sanitizers, the contract is checked and a breach aborts: a
 * refusal is a negative errno whose text is printable; a file that loads
 * names a provider, has 1..SL_IDENT_MAX_RULES rules each with a group, a
 * valid team name and an assignable role, a tokenTtl of 1 minute to 7
 * days, an ldap:// or ldaps:// URL, an https:// issuer (http:// only for a
 * loopback host) and NUL-terminated strings; the same text gives the same
 * answer twice; sl_ident_free leaves nothing behind (LeakSanitizer).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/spec.h"
#include "../../src/ident/ident.h"
#include "../../src/policy/roles.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_ident: %s\n", what);
    abort();
}

static void check_str(const char *s, size_t size, const char *what)
{
    if (strnlen(s, size) == size)
        fail(what);
}

static void check_loaded(const struct sl_ident *id)
{
    if (!id->has_ldap && !id->has_oidc)
        fail("a file that names no provider loaded");
    if (id->nrules < 1 || id->nrules > SL_IDENT_MAX_RULES || !id->rules)
        fail("a rule count out of range");
    for (size_t i = 0; i < id->nrules; i++) {
        const struct sl_ident_rule *r = &id->rules[i];
        check_str(r->group, sizeof(r->group), "a rule's group");
        check_str(r->team, sizeof(r->team), "a rule's team");
        check_str(r->role, sizeof(r->role), "a rule's role");
        if (!r->group[0] || !sl_name_valid(r->team) || !sl_role_assignable(r->role))
            fail("a rule with an empty group, a bad team or a role that is not one");
    }
    if (id->token_ttl_ms < 60000 || id->token_ttl_ms > 7 * 24 * 3600 * 1000LL)
        fail("tokenTtl out of range");
    if (id->has_ldap) {
        check_str(id->ldap.url, sizeof(id->ldap.url), "ldap.url");
        check_str(id->ldap.user_base, sizeof(id->ldap.user_base), "ldap.userBase");
        check_str(id->ldap.bind_password, sizeof(id->ldap.bind_password), "the bind password");
        if (strncmp(id->ldap.url, "ldap://", 7) != 0 && strncmp(id->ldap.url, "ldaps://", 8) != 0)
            fail("an LDAP URL that is neither ldap:// nor ldaps://");
        if (id->ldap.timeout_ms < 100 || id->ldap.timeout_ms > 60000)
            fail("ldap.timeout out of range");
    }
    if (id->has_oidc) {
        check_str(id->oidc.issuer, sizeof(id->oidc.issuer), "oidc.issuer");
        check_str(id->oidc.client_id, sizeof(id->oidc.client_id), "oidc.clientId");
        check_str(id->oidc.audience, sizeof(id->oidc.audience), "oidc.audience");
        if (strncmp(id->oidc.issuer, "https://", 8) != 0 &&
            strncmp(id->oidc.issuer, "http://", 7) != 0)
            fail("an issuer that is not an http(s) URL");
        if (!id->oidc.client_id[0] || !id->oidc.audience[0])
            fail("no client id or audience");
        if (id->oidc.skew_ms < 0 || id->oidc.skew_ms > 300000 || id->oidc.timeout_ms < 100 ||
            id->oidc.timeout_ms > 60000)
            fail("oidc.skew or oidc.timeout out of range");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_ident id, again;
    struct sl_error err = {"", ""}, err2 = {"", ""};
    int rc, rc2;

    rc = sl_ident_load_text(&id, (const char *)data, size, "fuzz.yaml", &err);
    if (rc > 0)
        fail("a positive answer");
    if (rc < 0) {
        for (const char *p = err.text; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t')
                fail("a refusal text with a control character");
        if (!err.text[0])
            fail("a refusal that says nothing");
    } else {
        check_loaded(&id);
    }
    rc2 = sl_ident_load_text(&again, (const char *)data, size, "fuzz.yaml", &err2);
    if (rc2 != rc || strcmp(err.text, err2.text) != 0)
        fail("the same file answered twice differently");
    sl_ident_free(&id);
    sl_ident_free(&again);
    return 0;
}
