/*
 * api_tokens.c - tokens: create, list, revoke.
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../meter/meter.h"
#include "../policy/policy.h"
#include "../policy/roles.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/jfield.h"

void sl_api_route_token_create(struct ctx *c)
{
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    int64_t expires_in = 0;
    struct op_state *s;
    char label[64] = "";

    if (len) {
        json_error_t jerr;
        json_t *doc = sl_jf_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr), *v;
        const char *key;
        if (!doc && sl_jf_oom(&jerr)) {
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
            return;
        }
        if (!json_is_object(doc)) {
            json_decref(doc);
            sl_api_refuse(c, 400, "invalid", NULL,
                                "body must be a JSON object: %s", jerr.text);
            return;
        }
        json_object_foreach(doc, key, v) {
            if (strcmp(key, "label") == 0) {
                const char *l = json_string_value(v);
                if (!l || strlen(l) >= sizeof(label) || !sl_text_printable(l)) {
                    sl_api_refuse(c, 400, "invalid", "label",
                           "must be a string of at most %d printable characters",
                           (int)sizeof(label) - 1);
                    json_decref(doc);
                    return;
                }
                sl_strlcpy(label, l, sizeof(label));
                continue;
            }
            if (strcmp(key, "expires_in") != 0) {
                sl_api_refuse(c, 400, "invalid", key, "unknown field");
                json_decref(doc);
                return;
            }
            if (!json_is_string(v) ||
                sl_parse_duration_ms(json_string_value(v), &expires_in) < 0 ||
                expires_in <= 0) {
                sl_api_refuse(c, 400, "invalid", "expires_in",
                                    "must be a positive duration such as \"24h\"");
                json_decref(doc);
                return;
            }
        }
        json_decref(doc);
    }
    if (!(s = sl_api_op_new(c, SL_OP_TOKEN)))
        return;
    sl_strlcpy(s->op.u.token.user, c->name, sizeof(s->op.u.token.user));
    sl_strlcpy(s->op.u.token.label, label, sizeof(s->op.u.token.label));
    s->op.u.token.expires_ms = expires_in ? sl_now_ms() + expires_in : 0;
    sl_api_op_send(c, s);
}

/* GET /v1/tokens[?user=]: token descriptions, never secrets: one's own;
 * a team-admin's team's; everyone's for admin. */
void sl_api_route_tokens(struct ctx *c)
{
    const char *user = sl_http_query(c->r, "user");
    const char *team = NULL;
    enum sl_role r = sl_api_role_of(&c->who);
    json_t *arr;
    int rc;

    if (user && !*user)
        user = NULL;
    if (r == SL_ROLE_TEAM_ADMIN)
        team = c->who.team;
    else if (r != SL_ROLE_ADMIN) {
        if (user && strcmp(user, c->who.user) != 0) {
            sl_http_reply_error(c->r, 403, "forbidden", "user",
                                "role %s sees its own tokens only", sl_role_name(r));
            return;
        }
        user = c->who.user;
    }
    /* a team-admin sees exactly what it may revoke (the engine's
     * may_manage_user): its team's tokens but those of admins and
     * auditors */
    if (!(arr = sl_store_tokens(c->a->rd, user, team, r == SL_ROLE_TEAM_ADMIN ? c->who.user : NULL,
                                &rc))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    if (r == SL_ROLE_JOB) {
        /* a job token sees itself only */
        size_t i;
        json_t *t, *mine = json_array();
        json_array_foreach(arr, i, t)
        {
            if (json_integer_value(json_object_get(t, "id")) == c->who.token_id)
                json_array_append(mine, t);
        }
        json_decref(arr);
        arr = mine;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", "tokens", arr));
}

void sl_api_route_token_revoke(struct ctx *c)
{
    struct op_state *s = sl_api_op_new(c, SL_OP_REVOKE);
    if (!s)
        return;
    s->op.u.revoke.token_id = c->id;
    sl_api_op_send(c, s);
}
