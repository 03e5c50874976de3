/*
 * login.c - a user the identity provider vouched for (SL_OP_LOGIN): its
 * User from the group rules, a short-lived token, and the record.
 *
 * The API's login worker (src/api/api_login.c) checks the password with
 * the LDAP server or the OIDC token's signature, and matches the groups
 * against the rules (src/ident/ident.h) before it submits this: the
 * engine trusts the payload and applies it in one transaction.
 *
 * Who came from a provider is kept as a "Login" object (the source, the
 * subject, the groups seen, when): a User without one is a local account,
 * which a login never takes over (an LDAP user named like the break-glass
 * admin gets 409). A login whose groups match no rule deprovisions the
 * user: its live tokens are revoked and the login is refused.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"

/* Revoke the live tokens of 'user'. Returns how many, or a negative
 * errno. */
static int revoke_user_tokens(struct sl_engine *e, const char *user)
{
    int rc = 0, n = 0;
    size_t i;
    json_t *t, *arr = sl_store_tokens(e->st, user, NULL, NULL, &rc);
    int64_t now = sl_eng_now_ms(e);

    if (!arr)
        return rc < 0 ? rc : -EIO;
    json_array_foreach(arr, i, t) {
        if (json_is_true(json_object_get(t, "revoked")))
            continue;
        if ((rc = sl_store_token_revoke(e->st, json_integer_value(json_object_get(t, "id")),
                                        now)) < 0)
            break;
        n++;
    }
    json_decref(arr);
    if (n)
        e->tokens_revoked = true;
    return rc < 0 ? rc : n;
}

int sl_eng_do_login(struct sl_engine *e, struct sl_op *op)
{
    struct sl_op_login *l = &op->u.login;
    struct user *u = sl_eng_user_find(e, l->user);
    char token[80], when[40];
    unsigned char hash[32];
    char *prev, *text;
    json_t *rec;
    int64_t id = 0;
    int rc;

    snprintf(op->object, sizeof(op->object), "user:%s", l->user);
    prev = sl_store_obj_get(e->st, "Login", l->user, &rc);
    if (!prev && rc < 0 && rc != -ENOENT) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: read failed");
    }
    if (prev) {
        json_t *p = json_loads(prev, 0, NULL);
        const char *src = json_string_value(json_object_get(p, "source"));
        bool other = !src || strcmp(src, l->source) != 0,
             was_oidc = src && strcmp(src, "oidc") == 0;
        json_decref(p);
        free(prev);
        if (other && u) {
            /* one provider's user is never another's: the names are
             * theirs, and may differ in who they mean */
            sl_eng_op_fail(op, 409, "conflict");
            if (l->replaces && was_oidc)
                return sl_errorf(&op->err, -EEXIST, "'%s' signs in through OIDC, whose "
                                 "sign-ins are not refreshed: sign in again (sluice login "
                                 "--oidc)", l->user);
            return sl_errorf(&op->err, -EEXIST, "'%s' signs in through %s, not %s", l->user,
                             was_oidc ? "OIDC" : "LDAP",
                             strcmp(l->source, "oidc") == 0 ? "OIDC" : "LDAP");
        }
        prev = (char *)"";
    }
    if (u && !prev) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf(&op->err, -EEXIST,
                         "'%s' is a local account: it signs in with its own tokens, "
                         "not through %s",
                         l->user, l->source);
    }
    if (!l->team[0]) {
        /* No rule maps the user any longer: what it held goes now, not
         * when its tokens would have ended. Committed, then refused. */
        int n = u ? revoke_user_tokens(e, l->user) : 0;
        if (n < 0) {
            sl_eng_op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, n, "store: write failed");
        }
        op->action = "user.deprovision";
        op->audit_details = json_pack("{s:s, s:s, s:O, s:i}", "source", l->source,
                                      "subject", l->subject, "groups", l->groups,
                                      "tokens_revoked", n);
        op->status = 403;
        op->code = "forbidden";
        sl_errorf(&op->err, -EPERM, "'%s' is in none of the groups the identity file maps",
                  l->user);
        return 0;
    }
    if (!sl_eng_team_find(e, l->team)) {
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -ENOENT,
                         "the identity file maps '%s' to team '%s', which does not exist",
                         l->user, l->team);
    }
    if (!u) {
        if (e->nusers == MAX_NAMED) {
            sl_eng_op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, -ENOSPC, "too many users");
        }
        u = &e->users[e->nusers++];
        memset(u, 0, sizeof(*u));
        sl_strlcpy(u->name, l->user, sizeof(u->name));
    }
    /* The rules decide team and role at each login; the Unix account
     * stays the admin's decision (kept as it was, "" for a new user). */
    sl_strlcpy(u->team, l->team, sizeof(u->team));
    sl_strlcpy(u->role, l->role, sizeof(u->role));
    if ((rc = sl_store_user_upsert(e->st, u->name, u->team, u->role, u->unix_user)) < 0)
        goto write_failed;
    rec = json_pack("{s:s, s:s, s:O, s:s, s:s, s:I}", "source", l->source, "subject",
                    l->subject, "groups", l->groups, "team", l->team, "role", l->role, "at",
                    (json_int_t)sl_eng_now_ms(e));
    text = rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(rec);
    if (!text) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    rc = sl_store_obj_put(e->st, "Login", l->user, text);
    free(text);
    if (rc < 0)
        goto write_failed;
    if (l->replaces > 0) {
        if ((rc = sl_store_token_revoke(e->st, l->replaces, sl_eng_now_ms(e))) < 0)
            goto write_failed;
        e->tokens_revoked = true;
    }
    sl_eng_token_new(token, sizeof(token), hash);
    if ((rc = sl_store_token_insert(e->st, hash, l->user, l->expires_ms,
                                    l->source[0] == 'l' ? "login:ldap" : "login:oidc", 0,
                                    &id)) < 0)
        goto write_failed;
    sl_time_rfc3339(l->expires_ms, when, sizeof(when));
    op->result = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s}", "token", token, "id",
                           (json_int_t)id, "user", l->user, "team", l->team, "role", l->role,
                           "expires_at", when);
    /* the record names the token, never its secret */
    op->audit_details = json_pack("{s:s, s:s, s:O, s:s, s:s, s:I, s:s, s:I}", "source",
                                  l->source, "subject", l->subject, "groups", l->groups,
                                  "team", l->team, "granted_role", l->role, "token_id",
                                  (json_int_t)id, "expires_at", when, "replaces",
                                  (json_int_t)l->replaces);
    op->status = l->replaces ? 200 : 201;
    sodium_memzero(token, sizeof(token));
    return 0;
write_failed:
    sl_eng_op_fail(op, 503, "unavailable");
    return sl_errorf(&op->err, rc, "store: write failed");
}
