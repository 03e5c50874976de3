/*
 * govern.c - governance operations: job and user tokens, revocation, image
 * scans, the model registry and its stages, carbon intensity.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../policy/policy.h"
#include "../policy/roles.h"
#include "../sched/sched.h"
#include "../sim/trace.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/heap.h"
#include "../util/imap.h"

void sl_eng_token_new(char *out, size_t size, unsigned char hash[32])
{
    unsigned char raw[32];
    char b64[64];

    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(b64, sizeof(b64), raw, sizeof(raw),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    snprintf(out, size, "sl_%s", b64);
    crypto_generichash(hash, 32, (const unsigned char *)out, strlen(out), NULL, 0);
    sodium_memzero(raw, sizeof(raw));
}

/* The caller's role as the roles table knows it (a job's own token is
 * SL_ROLE_JOB whatever its user's role). */
static enum sl_role caller_role(const struct sl_principal *who)
{
    return sl_role_of(who->role, who->job_id);
}

/* May 'who' create or revoke the tokens of user 'u'? The roles table
 * decides (src/policy/roles.c, sl_role_may_manage_tokens); this supplies
 * the user's team and role. */
static bool may_manage_user(const struct sl_principal *who, const struct user *u)
{
    return sl_role_may_manage_tokens(caller_role(who), who->user, who->team, u->name, u->team,
                                     sl_role_of(u->role, 0));
}

/* Whether the team rules of models reach every team for 'who': its user's
 * role holds the models scope in every team (admin). A job's token is
 * judged by its user's role here; its job must belong to the model's team
 * (checked by the caller). */
static bool models_all_teams(const struct sl_principal *who)
{
    enum sl_role r = sl_role_of(who->role, 0);

    return sl_role_all_teams(r) && sl_role_may(r, SL_SC_MODELS);
}

int sl_eng_do_token(struct sl_engine *e, struct sl_op *op)
{
    char token[80], when[40];
    unsigned char hash[32];
    const struct user *u = sl_eng_user_find(e, op->u.token.user);
    int64_t id = 0;
    int rc;

    snprintf(op->object, sizeof(op->object), "user:%s", op->u.token.user);
    if (!u && sl_role_token_reach(caller_role(&op->who)) == SL_TOKENS_ALL) {
        sl_eng_op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "user '%s' not found", op->u.token.user);
    }
    if (!u || !may_manage_user(&op->who, u)) {
        /* The same answer whether the user exists or not: no one but an
         * admin learns who the users are from it. */
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "%s %s may not create tokens for user '%s'",
                         op->who.job_id ? "job" : op->who.role, op->who.user,
                         op->u.token.user);
    }
    sl_eng_token_new(token, sizeof(token), hash);
    if ((rc = sl_store_token_insert(e->st, hash, op->u.token.user, op->u.token.expires_ms,
                                    op->u.token.label, 0, &id)) < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    op->result = json_pack("{s:s, s:I, s:s, s:s, s:o}", "token", token, "id", (json_int_t)id,
                           "user", op->u.token.user, "label", op->u.token.label, "expires_at",
                           op->u.token.expires_ms
                               ? json_string(sl_time_rfc3339(op->u.token.expires_ms,
                                                             when, sizeof(when)))
                               : json_null());
    /* the record names the token, never its secret */
    op->audit_details = json_pack("{s:I, s:s, s:o}", "token_id", (json_int_t)id, "label",
                                  op->u.token.label, "expires_at",
                                  op->u.token.expires_ms
                                      ? json_string(sl_time_rfc3339(op->u.token.expires_ms,
                                                                    when, sizeof(when)))
                                      : json_null());
    op->status = 201;
    sodium_memzero(token, sizeof(token));
    return 0;
}

int sl_eng_do_revoke(struct sl_engine *e, struct sl_op *op)
{
    char user[64], team[64];
    int64_t job_id;
    bool revoked;
    const struct user *u;
    int rc;

    snprintf(op->object, sizeof(op->object), "token:%lld", (long long)op->u.revoke.token_id);
    if (sl_store_token_info(e->st, op->u.revoke.token_id, user, team, &job_id, &revoked) < 0 ||
        !(u = sl_eng_user_find(e, user)) ||
        (!may_manage_user(&op->who, u) && !sl_role_all_teams(caller_role(&op->who)))) {
        /* a token one may not manage is one one cannot see */
        sl_eng_op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "token %lld not found", (long long)op->u.revoke.token_id);
    }
    if (!may_manage_user(&op->who, u)) {
        /* one who sees every team knows that it exists (roles.h) */
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "%s may not revoke tokens",
                         sl_role_name(caller_role(&op->who)));
    }
    if (revoked) {
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf(&op->err, -EALREADY, "token %lld is already revoked",
                         (long long)op->u.revoke.token_id);
    }
    if ((rc = sl_store_token_revoke(e->st, op->u.revoke.token_id, sl_eng_now_ms(e))) < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    e->tokens_revoked = true;
    op->result = json_pack("{s:I, s:s, s:b}", "id", (json_int_t)op->u.revoke.token_id, "user", user,
                           "revoked", 1);
    op->audit_details = json_pack("{s:s}", "user", user);
    op->status = 200;
    return 0;
}

int sl_eng_do_scan(struct sl_engine *e, struct sl_op *op)
{
    const char *digest = json_string_value(json_object_get(op->u.scan.summary, "digest"));
    char *text = NULL;
    int act;

    snprintf(op->object, sizeof(op->object), "image:%s", digest ? digest : "");
    if (!digest || !(text = json_dumps(op->u.scan.summary, JSON_COMPACT | JSON_SORT_KEYS))) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    act = sl_store_obj_put(e->st, "Scan", digest, text);
    free(text);
    if (act < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, act, "store: write failed");
    }
    op->audit_details = json_deep_copy(json_object_get(op->u.scan.summary, "counts"));
    if (op->audit_details && !json_is_object(op->audit_details)) {
        json_decref(op->audit_details);
        op->audit_details = NULL;
    }
    op->result = json_pack("{s:O, s:s}", "scan", op->u.scan.summary, "action", sl_eng_action_names[act]);
    op->status = act == 1 ? 201 : 200;
    return 0;
}

int sl_eng_do_model(struct sl_engine *e, struct sl_op *op)
{
    json_t *d = op->u.model.body, *m = NULL;
    const char *name = json_string_value(json_object_get(d, "name"));
    const char *version = json_string_value(json_object_get(d, "version"));
    const char *team = json_string_value(json_object_get(d, "team"));
    json_int_t job = json_integer_value(json_object_get(d, "job"));
    char key[160], when[40], *text = NULL, *old;
    int rc;

    snprintf(key, sizeof(key), "%s@%s", name ? name : "", version ? version : "");
    snprintf(op->object, sizeof(op->object), "model:%s", key);
    if (op->who.job_id) {
        if (job && job != op->who.job_id) {
            sl_eng_op_fail(op, 403, "forbidden");
            return sl_errorf_field(&op->err, -EPERM, "job",
                                   "a job token registers models of its own job (%lld) only",
                                   (long long)op->who.job_id);
        }
        job = op->who.job_id;
    }
    if (!team)
        team = op->who.team;
    if (!models_all_teams(&op->who) && strcmp(team, op->who.team) != 0) {
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "team", "user '%s' may not register "
                               "models for team '%s'", op->who.user, team);
    }
    if (!sl_eng_team_find(e, team)) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "team", "team '%s' does not exist", team);
    }
    if (job) {
        /* the job must exist and belong to the model's team */
        json_t *jd = NULL;
        const char *jt;
        bool same;
        rc = sl_store_job_read(e->st, job, sl_job_view_json_fn, &jd);
        jt = json_string_value(json_object_get(jd, "team"));
        same = jt && strcmp(jt, team) == 0;
        json_decref(jd);
        if (!jd || !same) {
            sl_eng_op_fail(op, 400, "invalid");
            return sl_errorf_field(&op->err, -EINVAL, "job", "job %lld %s", (long long)job,
                                   jd ? "belongs to another team" : "does not exist");
        }
    }
    if ((old = sl_store_obj_get(e->st, "Model", key, &rc))) {
        free(old);
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EALREADY, "version",
                               "model %s is already registered; versions are immutable", key);
    }
    m = json_pack("{s:s, s:s, s:s, s:O, s:O, s:o, s:o, s:s, s:s, s:s, s:[]}", "name", name,
                  "version", version, "team", team, "digest", json_object_get(d, "digest"),
                  "uri", json_object_get(d, "uri"), "metrics",
                  json_object_get(d, "metrics") ? json_incref(json_object_get(d, "metrics"))
                                                : json_object(),
                  "job", job ? json_integer(job) : json_null(), "registered_by",
                  op->who.user, "registered_at",
                  sl_time_rfc3339(sl_eng_now_ms(e), when, sizeof(when)), "stage", "none",
                  "history");
    if (!m || !(text = json_dumps(m, JSON_COMPACT))) {
        json_decref(m);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    rc = sl_store_obj_put(e->st, "Model", key, text);
    free(text);
    if (rc < 0) {
        json_decref(m);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    op->audit_details = json_pack("{s:s, s:O, s:O, s:o}", "team", team, "digest",
                                  json_object_get(d, "digest"), "uri",
                                  json_object_get(d, "uri"), "job",
                                  job ? json_integer(job) : json_null());
    op->result = m;
    op->status = 201;
    return 0;
}

int sl_eng_do_stage(struct sl_engine *e, struct sl_op *op)
{
    const char *stage = json_string_value(json_object_get(op->u.stage.body, "stage"));
    const char *comment = json_string_value(json_object_get(op->u.stage.body, "comment"));
    json_t *m = NULL, *hist;
    const char *team, *from;
    char *text, when[40], from_buf[32];
    int rc;

    snprintf(op->object, sizeof(op->object), "model:%s", op->u.stage.model);
    if (!(text = sl_store_obj_get(e->st, "Model", op->u.stage.model, &rc)) ||
        !(m = json_loads(text, 0, NULL))) {
        free(text);
        sl_eng_op_fail(op, rc == -ENOENT ? 404 : 503, rc == -ENOENT ? "not_found" : "unavailable");
        return sl_errorf(&op->err, rc == -ENOENT ? -ENOENT : -EIO, "model %s not found",
                         op->u.stage.model);
    }
    free(text);
    team = json_string_value(json_object_get(m, "team"));
    sl_strlcpy(from_buf, json_string_value(json_object_get(m, "stage"))
                             ? json_string_value(json_object_get(m, "stage"))
                             : "",
               sizeof(from_buf));
    from = from_buf; /* the member is replaced below */
    if (!models_all_teams(&op->who) && (!team || strcmp(team, op->who.team) != 0)) {
        json_decref(m);
        sl_eng_op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "model %s not found", op->u.stage.model);
    }
    if (op->who.job_id || !sl_policy_may_approve(e->policies, (size_t)e->npolicies,
                                                 op->who.role)) {
        json_decref(m);
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "stage",
                               "role %s may not move models between stages (models.approvers)",
                               op->who.job_id ? "job" : op->who.role);
    }
    if (from && strcmp(from, stage) == 0) {
        json_decref(m);
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EALREADY, "stage", "model %s is already in %s",
                               op->u.stage.model, stage);
    }
    if (from && strcmp(from, "archived") == 0) {
        json_decref(m);
        sl_eng_op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EALREADY, "stage",
                               "model %s is archived; register a new version", op->u.stage.model);
    }
    hist = json_object_get(m, "history");
    json_array_append_new(hist, json_pack("{s:s, s:s, s:s, s:s, s:s}", "from", from ? from : "",
                                          "to", stage, "by", op->who.user, "at",
                                          sl_time_rfc3339(sl_eng_now_ms(e), when, sizeof(when)),
                                          "comment", comment ? comment : ""));
    json_object_set_new(m, "stage", json_string(stage));
    if (!(text = json_dumps(m, JSON_COMPACT)) ||
        (rc = sl_store_obj_put(e->st, "Model", op->u.stage.model, text)) < 0) {
        free(text);
        json_decref(m);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -EIO, "store: write failed");
    }
    free(text);
    op->audit_details = json_pack("{s:s, s:s, s:s}", "from", from ? from : "", "to", stage,
                                  "comment", comment ? comment : "");
    op->result = m;
    op->status = 200;
    return 0;
}

int sl_eng_do_carbon(struct sl_engine *e, struct sl_op *op)
{
    int rc = 0;

    for (size_t i = 0; i < op->u.carbon.n && rc == 0; i++)
        rc = sl_store_carbon_put(e->st, op->u.carbon.site, op->u.carbon.hour_ms[i],
                                 op->u.carbon.g[i]);
    if (rc < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    op->result = json_pack("{s:s, s:I}", "site", op->u.carbon.site, "hours",
                           (json_int_t)op->u.carbon.n);
    op->status = 200;
    return 0;
}

uint64_t sl_engine_token_epoch(struct sl_engine *e)
{
    return atomic_load_explicit(&e->token_epoch, memory_order_acquire);
}
