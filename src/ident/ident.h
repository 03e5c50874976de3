/*
 * ident.h - where users come from besides Sluice's own accounts: the
 * identity file (sluiced --identity FILE, docs/identity.md) naming an LDAP
 * or Active Directory server and an OIDC provider, and the rules that map
 * the groups a user is in to a Sluice team and role.
 *
 * The file is YAML or JSON, read whole (at most SL_IDENT_MAX_BYTES) and
 * checked completely: an unknown key, a missing one or a bad value is
 * refused with the key's path ("ldap.url: ..."). Secrets (the LDAP bind
 * password, the OIDC client secret) are never in the file: they are read
 * from a file that only its owner may read (mode 0600 or 0400) or from an
 * environment variable the file names, and are never printed.
 *
 * The group rules are ordered: the first rule whose group the user is in
 * gives the team and the role (put the most privileged first). An LDAP
 * group is a DN, compared to the user's groups' DNs as normalised DNs
 * (case and spacing do not matter); an OIDC group is the claim's string,
 * compared exactly.
 *
 * Not thread-safe: load once, then read from any thread.
 */
#ifndef SL_IDENT_H
#define SL_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"

#define SL_IDENT_MAX_BYTES (256 * 1024)
#define SL_IDENT_MAX_RULES 256
#define SL_IDENT_MAX_SECRET 1024 /* bytes of a secret */

struct sl_ident_ldap {
    char url[512];                /* ldaps://HOST[:PORT] or ldap://HOST[:PORT] */
    bool start_tls;               /* ldap:// upgraded with StartTLS */
    char ca_file[1024];           /* "" = the system's CA store */
    char bind_dn[512];            /* the search account; "" = anonymous search */
    char bind_password[SL_IDENT_MAX_SECRET];
    char user_base[512];          /* where users are searched */
    char user_filter[256];        /* "{user}" is the escaped login name */
    char group_base[512];         /* where groups are searched; "" = read
                                     member_attr from the user's entry */
    char group_filter[256];       /* "{dn}" the user's DN, "{user}" the name */
    char member_attr[64];         /* default "memberOf" */
    int64_t timeout_ms;           /* each LDAP call; default 5 s */
};

struct sl_ident_oidc {
    char issuer[256];
    char audience[256];           /* "" = client_id */
    char client_id[256];
    char client_secret[SL_IDENT_MAX_SECRET]; /* "" = a public client */
    char jwks_file[1024];         /* "" = the issuer's discovery document */
    char ca_file[1024];
    char user_claim[64];          /* default "preferred_username" */
    char groups_claim[64];        /* default "groups" */
    char scope[256];              /* default "openid profile" */
    int64_t skew_ms;              /* default 60 s */
    int64_t timeout_ms;           /* default 5 s */
};

struct sl_ident_rule {
    char group[512];
    char team[64];
    char role[16];
};

struct sl_ident {
    int64_t token_ttl_ms;         /* a login's token lives this long;
                                     default 8 h, at most 7 days */
    bool has_ldap, has_oidc;
    struct sl_ident_ldap ldap;
    struct sl_ident_oidc oidc;
    struct sl_ident_rule *rules;
    size_t nrules;
};

/* Load and check the file at 'path' into *id (zeroed first). Returns 0,
 * or a negative errno with 'err' naming the key (field) and why. */
int sl_ident_load(struct sl_ident *id, const char *path, struct sl_error *err);
/* The same from text; 'name' is what refusals call it (the path). */
int sl_ident_load_text(struct sl_ident *id, const char *text, size_t len,
                       const char *name, struct sl_error *err);
/* Free the rules and wipe the secrets. NULL-safe; *id may be reloaded. */
void sl_ident_free(struct sl_ident *id);

/* The first rule one of whose groups is among 'groups' (n of them), or
 * NULL. 'ldap': compare as DNs (sl_ident_dn_equal), else exactly. */
const struct sl_ident_rule *sl_ident_match(const struct sl_ident *id, char *const *groups,
                                           size_t n, bool ldap);
/* Whether two DNs name the same entry: attribute types and values
 * compared without case, spaces around ',', '=' and '+' ignored. A DN
 * that does not parse equals nothing. */
bool sl_ident_dn_equal(const char *a, const char *b);

/* The verifier of the oidc section (src/ident/oidc.h), its jwksFile
 * loaded. No network: the provider's discovery document and keys are
 * fetched at the first sign-in that needs them, so a provider that is
 * down does not stop the daemon. NULL with 'err' naming the setting. */
struct sl_oidc;
struct sl_oidc *sl_ident_oidc_create(const struct sl_ident_oidc *o, struct sl_error *err);

/* Read a secret from 'path': a regular file that neither group nor
 * others may read, of at most SL_IDENT_MAX_SECRET-1 bytes, its trailing
 * newline dropped. 'key' names the setting in refusals. */
int sl_ident_read_secret(const char *path, const char *key, char *dst, size_t size,
                         struct sl_error *err);

#endif
