/*
 * ldap_login.h - logging a user in against an LDAP or Active Directory server
 * (OpenLDAP's libldap), and reading the groups the user is in.
 *
 * A login is: connect (ldaps://, or ldap:// with StartTLS; the server's
 * certificate verified against ca_file or the system store), bind as the
 * search account, find the user's one entry under user_base with
 * user_filter ({user} the login name, escaped as RFC 4515 says), bind as
 * that entry with the password (an empty password is refused before: a
 * simple bind without one is an anonymous bind that succeeds), then read
 * the user's groups: the entries under group_base that group_filter
 * finds ({dn} the user's DN, {user} the name), or, with no group_base,
 * the values of member_attr (memberOf) of the user's entry.
 *
 * Every call blocks for at most about four times the configured timeout:
 * call from a thread that may wait. libldap is thread-safe; so are these.
 */
#ifndef SL_IDENT_LDAP_H
#define SL_IDENT_LDAP_H

#include <stddef.h>

#include "ident.h"

#define SL_LDAP_MAX_GROUPS 1024

struct sl_ldap_user {
    char dn[512];
    char **groups;                /* the group DNs, as the server wrote them */
    size_t ngroups;
};

/* Check the password of 'user' and read its groups into *u. Returns 0;
 * -EACCES for a wrong name or password (one answer for both: the error
 * does not tell which), -EHOSTUNREACH when the server cannot be reached
 * or did not answer in time, -EPROTO when TLS with it fails for a reason
 * 'err' names (its certificate not trusted by ca_file, made for
 * another host name, or no StartTLS offered), -EIO for another failure (the search
 * account refused, more than one entry for the name), -ENOMEM; 'err'
 * says what happened (never the password). */
int sl_ldap_login(const struct sl_ident_ldap *cfg, const char *user, const char *password,
                  struct sl_ldap_user *u, struct sl_error *err);
/* The same without the user's password, as the search account: for a
 * token refresh. -ENOENT when the user is no longer in the directory. */
int sl_ldap_lookup(const struct sl_ident_ldap *cfg, const char *user, struct sl_ldap_user *u,
                   struct sl_error *err);
void sl_ldap_user_clear(struct sl_ldap_user *u);

/* 's' escaped for an LDAP filter value (RFC 4515: '*', '(', ')', '\\'
 * and NUL as \XX). Returns the length, or -ENOSPC. */
int sl_ldap_escape(const char *s, char *dst, size_t size);

#endif
