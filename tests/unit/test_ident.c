/*
 * test_ident.c - src/ident/ident.h and ldap_login.h against their
 * contracts: the identity file's checks (each refusal names its key), the
 * group rules (first match, DNs compared as DNs), secrets from private
 * files only, and the escaping of LDAP filter values.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/ident/ident.h"
#include "../../src/ident/ldap_login.h"
#include "../tap.h"

static char secret_path[64];

/* Load 'fmt' with its "@S" replaced by the secret's path; the refusal's
 * text in err. */
static int load(const char *fmt, struct sl_ident *id, struct sl_error *err)
{
    char text[2048];
    const char *at = strstr(fmt, "@S");

    if (at)
        snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - fmt), fmt, secret_path, at + 2);
    else
        snprintf(text, sizeof(text), "%s", fmt);
    memset(err, 0, sizeof(*err));
    return sl_ident_load_text(id, text, strlen(text), "id.yaml", err);
}

#define BASE                                                                                 \
    "ldap: {url: 'ldap://127.0.0.1:389', bindDN: 'cn=s', bindPasswordFile: '@S', "         \
    "userBase: 'ou=people,dc=x'}\n"                                                        \
    "groups: [{group: 'cn=a,ou=g,dc=x', team: ta, role: admin},"                           \
    " {group: 'cn=b,ou=g,dc=x', team: tb, role: member}]\n"

static int refused(const char *extra_ldap, const char *key)
{
    char fmt[1024];
    struct sl_ident id;
    struct sl_error err;
    int rc;

    /* the secret path goes in through the first %s; the extra text is
     * spliced in here */
    snprintf(fmt, sizeof(fmt),
             "ldap: {url: 'ldap://127.0.0.1:389', bindDN: 'cn=s', bindPasswordFile: '@S', "
             "userBase: 'ou=people,dc=x'%s}\ngroups: [{group: g, team: t, role: member}]\n",
             extra_ldap);
    rc = load(fmt, &id, &err);
    if (rc == 0)
        sl_ident_free(&id);
    return rc < 0 && strstr(err.text, key) != NULL;
}

int main(void)
{
    struct sl_ident id;
    struct sl_error err;
    char buf[64], fmt[1024];
    char *groups[] = {(char *)"CN=B, OU=g,dc=x", (char *)"cn=a,ou=g,dc=x"};
    char *other[] = {(char *)"cn=c,ou=g,dc=x"};
    int fd;

    snprintf(secret_path, sizeof(secret_path), "/tmp/test_ident.%d", (int)getpid());
    fd = open(secret_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ok(fd >= 0 && write(fd, "s3cret\n", 7) == 7, "a secret file, mode 0600");
    close(fd);

    snprintf(fmt, sizeof(fmt), "%s", BASE);
    is_int(load(fmt, &id, &err), 0, "a good file loads: %s", err.text);
    is_str(id.ldap.bind_password, "s3cret", "the secret without its newline");
    is_str(id.ldap.user_filter, "(uid={user})", "userFilter defaults to (uid={user})");
    is_str(id.ldap.member_attr, "memberOf", "memberAttribute defaults to memberOf");
    ok(id.token_ttl_ms == 8 * 3600 * 1000LL, "tokenTtl defaults to 8h");
    ok(sl_ident_match(&id, groups, 2, true) == &id.rules[0],
       "the first rule that matches wins, whatever the groups' order");
    ok(sl_ident_match(&id, groups, 1, true) == &id.rules[1],
       "DNs compare without case and spaces");
    ok(sl_ident_match(&id, other, 1, true) == NULL, "no rule: NULL");
    ok(sl_ident_match(&id, groups, 2, false) == &id.rules[0] &&
           sl_ident_match(&id, groups, 1, false) == NULL,
       "non-LDAP groups compare exactly");
    sl_ident_free(&id);
    ok(id.ldap.bind_password[0] == '\0', "free wipes the secret");

    ok(sl_ident_dn_equal("cn=a\\,b,dc=x", "CN=A\\,B , DC=X"), "an escaped comma is kept");
    ok(!sl_ident_dn_equal("cn=a,dc=x", "cn=a,dc=y"), "different DNs differ");
    ok(!sl_ident_dn_equal("", ""), "an empty DN equals nothing");

    ok(refused(", colour: blue", "ldap.colour"), "an unknown key is refused by name");
    ok(refused(", startTLS: 'yes'", "ldap.startTLS"), "startTLS must be a boolean");
    ok(refused(", userFilter: 'uid=x'", "ldap.userFilter"),
       "a userFilter without parentheses or {user} is refused");
    ok(refused(", groupFilter: '(member={dn})'", "ldap.groupBase"),
       "groupFilter without groupBase is refused");
    ok(refused(", timeout: 10m", "ldap.timeout"), "a timeout over 60 s is refused");
    ok(refused(", bindPasswordEnv: X", "bindPassword"), "a file and a variable: refused");

    snprintf(fmt, sizeof(fmt), "%s",
             "ldap: {url: 'ldap://ldap.example.com', userBase: 'ou=p'}\n"
             "groups: [{group: g, team: t, role: member}]\n");
    ok(load(fmt, &id, &err) < 0 && strstr(err.text, "ldap.url") && strstr(err.text, "clear"),
       "ldap:// to another host without StartTLS is refused: %s", err.text);
    snprintf(fmt, sizeof(fmt), "%s",
             "ldap: {url: 'ldap://ldap.example.com', startTLS: true, userBase: 'ou=p'}\n"
             "groups: [{group: g, team: t, role: member}]\n");
    ok(load(fmt, &id, &err) == 0, "with startTLS it loads (no bindDN: anonymous search)");
    sl_ident_free(&id);
    snprintf(fmt, sizeof(fmt), "%s",
             "ldap: {url: 'ldaps://h', userBase: 'ou=p'}\n"
             "groups: [{group: g, team: 'Bad Team', role: member}]\n");
    ok(load(fmt, &id, &err) < 0 && strstr(err.text, "groups[0].team"),
       "an invalid team name is refused by its path");
    snprintf(fmt, sizeof(fmt), "%s",
             "ldap: {url: 'ldaps://h', userBase: 'ou=p'}\ngroups: []\n");
    ok(load(fmt, &id, &err) < 0 && strstr(err.text, "groups"), "no rules: refused");
    snprintf(fmt, sizeof(fmt), "%s", "groups: [{group: g, team: t, role: member}]\n");
    ok(load(fmt, &id, &err) < 0 && strstr(err.text, "no provider"), "no provider: refused");
    snprintf(fmt, sizeof(fmt), "%s",
             "oidc: {issuer: 'http://idp.example.com', clientId: c}\n"
             "groups: [{group: g, team: t, role: member}]\n");
    ok(load(fmt, &id, &err) < 0 && strstr(err.text, "oidc.issuer"),
       "an http:// issuer on another host is refused");

    chmod(secret_path, 0640);
    ok(sl_ident_read_secret(secret_path, "k", buf, sizeof(buf), &err) == -EPERM &&
           strstr(err.text, "chmod 600"),
       "a secret others may read is refused");
    chmod(secret_path, 0600);
    ok(sl_ident_read_secret("/nonexistent/x", "k", buf, sizeof(buf), &err) < 0,
       "a missing secret file is refused");
    ok(sl_ident_read_secret(secret_path, "k", buf, 4, &err) == -EFBIG,
       "a secret longer than the buffer is refused");
    unlink(secret_path);

    ok(sl_ldap_escape("a*(b)\\", buf, sizeof(buf)) > 0 &&
           strcmp(buf, "a\\2a\\28b\\29\\5c") == 0,
       "filter values escaped as RFC 4515 says: %s", buf);
    ok(sl_ldap_escape("abcdef", buf, 4) == -ENOSPC, "escaping refuses what does not fit");
    return done_testing();
}
