/*
 * test_engine_govern.c - the engine's governance operations
 * (src/engine/govern.c) against their contract in engine_int.h, each
 * submitted as the API would (a principal that passed the router's scope
 * check, engine_harness.h):
 *   tokens   who may create whose (admin anyone's; a team-admin its team's
 *            users below admin and auditor; everyone its own; a job's
 *            token nobody's), the secret shown once and stored hashed,
 *            expiry, and what a team-admin lists is what it may revoke;
 *   revoke   a token one may not manage is not found (404), but for an
 *            auditor, which sees every team and is refused (403: it may
 *            revoke its own only); revoked at once, once (409 after);
 *   models   registration by a team's user or a job's own token,
 *            immutable versions, another team's refused; stages moved by
 *            the approvers (admin and team-admin, or a Policy's list),
 *            history kept, archived for good;
 *   scans    stored by digest: created, unchanged, updated;
 *   carbon   a site's hourly intensity stored, an hour replaced.
 * Every change and refusal is in the audit log.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/policy/policy.h"
#include "engine_harness.h"

static char tmpdir[64];

static const char *const users =
    "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: vision}\n---\n"
    "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision}\n"
    "spec: {team: vision, nominal: {gpus: 2}}\n---\n"
    "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: nlp}\n---\n"
    "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: nlp}\n"
    "spec: {team: nlp, nominal: {gpus: 2}}\n---\n"
    "apiVersion: sluice/v1\nkind: User\nmetadata: {name: vic}\n"
    "spec: {team: vision, role: team-admin}\n---\n"
    "apiVersion: sluice/v1\nkind: User\nmetadata: {name: vera}\n"
    "spec: {team: vision, role: member}\n---\n"
    "apiVersion: sluice/v1\nkind: User\nmetadata: {name: val}\n"
    "spec: {team: vision, role: viewer}\n---\n"
    "apiVersion: sluice/v1\nkind: User\nmetadata: {name: vaud}\n"
    "spec: {team: vision, role: auditor}\n---\n"
    "apiVersion: sluice/v1\nkind: User\nmetadata: {name: nick}\n"
    "spec: {team: nlp, role: member}\n---\n"
    "apiVersion: sluice/v1\nkind: User\nmetadata: {name: nadia}\n"
    "spec: {team: nlp, role: team-admin}\n";

/* Who asks: a user of a team with a role, or (job > 0) a job's token. */
struct who {
    const char *user, *team, *role;
    int64_t job;
};

static const struct who ADMIN = {"admin", "default", "admin", 0};
static const struct who VIC = {"vic", "vision", "team-admin", 0};
static const struct who VERA = {"vera", "vision", "member", 0};
static const struct who VAL = {"val", "vision", "viewer", 0};
static const struct who VAUD = {"vaud", "vision", "auditor", 0};
static const struct who NICK = {"nick", "nlp", "member", 0};
static const struct who NADIA = {"nadia", "nlp", "team-admin", 0};

static struct h_call *call(enum sl_op_kind kind, struct who w)
{
    struct h_call *c = h_call_new(kind, w.user, w.team, w.role);

    c->op.who.job_id = w.job;
    return c;
}

/* The last answer's error text and field. */
static struct sl_error last;

/* Create a token for 'user' as 'w'; returns the status, *id and 'secret'
 * (may be NULL) of the new token. */
static int token(struct sl_engine *e, struct who w, const char *user, int64_t expires_ms,
                 int64_t *id, char *secret, size_t size)
{
    struct h_call *c = call(SL_OP_TOKEN, w);
    int st;

    snprintf(c->op.u.token.user, sizeof(c->op.u.token.user), "%s", user);
    snprintf(c->op.u.token.label, sizeof(c->op.u.token.label), "by %s", w.user);
    c->op.u.token.expires_ms = expires_ms;
    st = h_call_run(e, c);
    last = c->op.err;
    if (id)
        *id = json_integer_value(json_object_get(c->op.result, "id"));
    if (secret)
        snprintf(secret, size, "%s",
                 st == 201 ? json_string_value(json_object_get(c->op.result, "token")) : "");
    h_call_free(c);
    return st;
}

static int revoke(struct sl_engine *e, struct who w, int64_t id)
{
    struct h_call *c = call(SL_OP_REVOKE, w);
    int st;

    c->op.u.revoke.token_id = id;
    st = h_call_run(e, c);
    last = c->op.err;
    h_call_free(c);
    return st;
}

/* Whether the token 'secret' lets its holder in at 'now_ms' (as the API's
 * authentication asks the store); 'who' (may be NULL) gets its holder. */
static bool token_works(struct sl_store *rd, const char *secret, int64_t now_ms,
                        struct sl_token_who *who)
{
    unsigned char hash[32];
    struct sl_token_who w;

    crypto_generichash(hash, sizeof(hash), (const unsigned char *)secret, strlen(secret), NULL,
                       0);
    if (sl_store_token_lookup(rd, hash, now_ms, &w) < 0)
        return false;
    if (who)
        *who = w;
    return true;
}

/* Whether some audit record's line holds 'text'; and how many records
 * match the filter. */
struct grep {
    const char *text;
    int n, found;
};

static int grep_row(void *arg, const struct sl_store_audit_row *row)
{
    struct grep *g = arg;

    g->n++;
    if (g->text && memmem(row->line, row->len, g->text, strlen(g->text)))
        g->found++;
    return 0;
}

static struct grep audit_grep(struct sl_store *rd, const char *actor, const char *action,
                              const char *outcome, const char *text)
{
    struct sl_audit_filter f = {.actor = actor, .action = action, .outcome = outcome};
    struct grep g = {text, 0, 0};

    sl_store_audit_scan(rd, &f, grep_row, &g);
    return g;
}

static void tokens(struct sl_engine *e, struct sl_store *rd)
{
    char secret[96], other[96];
    int64_t id = 0, vera_id = 0, val_id = 0, vaud_id = 0, nick_id = 0;
    struct sl_token_who w;
    uint64_t epoch;
    json_t *lst, *t;
    size_t i;
    bool only_managed = true, has_vera = false, has_val = false;

    /* create */
    is_int(token(e, ADMIN, "vera", 0, &vera_id, secret, sizeof(secret)), 201,
           "an admin makes a token for a member");
    ok(strncmp(secret, "sl_", 3) == 0 && strlen(secret) == 46 && vera_id > 0,
       "the answer holds it once: sl_ and 43 characters (id %lld)", (long long)vera_id);
    ok(token_works(rd, secret, H_T0, &w) && strcmp(w.user, "vera") == 0 &&
           strcmp(w.team, "vision") == 0 && strcmp(w.role, "member") == 0 && w.job_id == 0,
       "the store knows it by its hash, as vera's, a member of vision");
    ok(audit_grep(rd, "admin", "token.create", "ok", secret).found == 0 &&
           audit_grep(rd, "admin", "token.create", "ok", "\"token_id\"").found == 1,
       "its creation is audited, naming the token by its id, never its secret");

    is_int(token(e, VERA, "vera", H_T0 + 60 * H_MIN, &id, other, sizeof(other)), 201,
           "a member makes a token of its own, for an hour");
    ok(token_works(rd, other, H_T0 + 59 * H_MIN, NULL) &&
           !token_works(rd, other, H_T0 + 60 * H_MIN, NULL),
       "which works until it expires, and not from then on");
    is_int(token(e, ADMIN, "ghost", 0, NULL, NULL, 0), 404,
           "an admin is told a user does not exist");
    is_int(token(e, VERA, "ghost", 0, NULL, NULL, 0), 403,
           "a member is refused alike whether the user exists or not (ghost)");
    ok(token(e, VERA, "val", 0, NULL, NULL, 0) == 403 &&
           strstr(last.text, "member vera may not create tokens for user 'val'"),
       "or does (val), saying who may not do what (%s)", last.text);
    is_int(token(e, VIC, "val", 0, &val_id, NULL, 0), 201,
           "a team-admin makes tokens for its team's viewer");
    is_int(token(e, VIC, "vaud", 0, NULL, NULL, 0), 403,
           "but not for an auditor of its team");
    is_int(token(e, VIC, "nick", 0, NULL, NULL, 0), 403, "nor for another team's member");
    is_int(token(e, VAUD, "vaud", 0, &vaud_id, NULL, 0), 201, "an auditor makes its own");
    token(e, ADMIN, "nick", 0, &nick_id, NULL, 0);
    {
        struct who job = {"vera", "vision", "member", 42};
        ok(token(e, job, "vera", 0, NULL, NULL, 0) == 403 && strstr(last.text, "job vera"),
           "a job's token may not make tokens, even for its own user (%s)", last.text);
    }

    /* what a team-admin lists is what it may revoke */
    {
        int rc = 0;
        lst = sl_store_tokens(rd, NULL, "vision", "vic", &rc);
        json_array_foreach(lst, i, t)
        {
            const char *u = json_string_value(json_object_get(t, "user"));
            only_managed &= strcmp(u, "vaud") != 0;
            has_vera |= strcmp(u, "vera") == 0;
            has_val |= strcmp(u, "val") == 0;
        }
        json_decref(lst);
        ok(only_managed && has_vera && has_val,
           "a team-admin's list holds its members' and viewers' tokens, not its auditor's");
    }

    /* revoke */
    is_int(revoke(e, VAL, vera_id), 404, "a viewer cannot see a teammate's token (404)");
    is_int(revoke(e, NICK, vera_id), 404, "nor another team's member");
    is_int(revoke(e, NADIA, vera_id), 404, "nor another team's team-admin");
    ok(revoke(e, VAUD, vera_id) == 403 && strcmp(last.text, "auditor may not revoke tokens") == 0,
       "an auditor, which sees every team, is refused another user's token: 403, "
       "\"auditor may not revoke tokens\"");
    is_int(audit_grep(rd, "vaud", "token.revoke", "refused", NULL).n, 1,
           "and the refusal is audited");
    is_int(revoke(e, VAUD, 99999), 404, "an auditor is told an unknown token is not found");
    ok(token_works(rd, secret, H_T0, NULL), "vera's token still works");
    is_int(revoke(e, VIC, vaud_id), 404, "a team-admin may not revoke its auditor's token");
    is_int(revoke(e, VAUD, vaud_id), 200, "an auditor revokes its own token");
    is_int(revoke(e, VIC, val_id), 200, "a team-admin revokes its viewer's");
    {
        struct who job = {"vera", "vision", "member", 42};
        is_int(revoke(e, job, vera_id), 404, "a job's token may not revoke its user's tokens");
    }
    epoch = sl_engine_token_epoch(e);
    h_clock_set(H_T0 + 5 * H_MIN);
    {
        struct h_call *c = call(SL_OP_REVOKE, VERA);
        c->op.u.revoke.token_id = vera_id;
        ok(h_call_run(e, c) == 200 &&
               json_integer_value(json_object_get(c->op.result, "id")) == vera_id &&
               strcmp(json_string_value(json_object_get(c->op.result, "user")), "vera") == 0 &&
               json_is_true(json_object_get(c->op.result, "revoked")),
           "the owner revokes its token: 200 with its id, user and revoked: true");
        h_call_free(c);
    }
    ok(!token_works(rd, secret, H_T0 + 5 * H_MIN, NULL), "the token no longer works");
    ok(sl_engine_token_epoch(e) > epoch, "and cached lookups are dropped (the epoch moved)");
    is_int(revoke(e, VERA, vera_id), 409, "revoking it again is a conflict");
    is_int(revoke(e, ADMIN, nick_id), 200, "an admin revokes anyone's");
}

/* A model request body; a new reference. */
static json_t *model_body(const char *name, const char *version, const char *team,
                          int64_t job)
{
    json_t *b = json_pack("{s:s, s:s, s:s, s:s}", "name", name, "version", version, "digest",
                          "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                          "uri", "s3://models/x");
    if (team)
        json_object_set_new(b, "team", json_string(team));
    if (job)
        json_object_set_new(b, "job", json_integer(job));
    return b;
}

static int model(struct sl_engine *e, struct who w, json_t *body, json_t **result)
{
    struct h_call *c = call(SL_OP_MODEL, w);
    int st;

    c->op.u.model.body = body;
    st = h_call_run(e, c);
    last = c->op.err;
    if (result)
        *result = c->op.result ? json_incref(c->op.result) : NULL;
    h_call_free(c);
    return st;
}

static int stage(struct sl_engine *e, struct who w, const char *ref, const char *to,
                 json_t **result)
{
    struct h_call *c = call(SL_OP_STAGE, w);
    int st;

    snprintf(c->op.u.stage.model, sizeof(c->op.u.stage.model), "%s", ref);
    c->op.u.stage.body = json_pack("{s:s, s:s}", "stage", to, "comment", "looks good");
    st = h_call_run(e, c);
    last = c->op.err;
    if (result)
        *result = c->op.result ? json_incref(c->op.result) : NULL;
    h_call_free(c);
    return st;
}

static void models(struct sl_engine *e, struct sl_store *rd)
{
    int64_t vjob = 0, njob = 0;
    json_t *m = NULL, *h;
    char *text;
    int rc = 0;
    char yaml[512];

    h_clock_set(H_T0 + 10 * H_MIN);
#define JOB_YAML                                                                           \
    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: train, team: %s, labels: "            \
    "{sim-duration: 1h}}\nspec: {command: [train], resources: {gpus: 1}}\n"
    snprintf(yaml, sizeof(yaml), JOB_YAML, "vision");
    h_submit(e, yaml, "vera", "vision", "member", &vjob, NULL);
    snprintf(yaml, sizeof(yaml), JOB_YAML, "nlp");
    h_submit(e, yaml, "nick", "nlp", "member", &njob, NULL);
    ok(vjob > 0 && njob > 0, "(a job of each team)");

    is_int(model(e, VERA, model_body("resnet", "1", NULL, 0), &m), 201,
           "a member registers a model version for its team");
    ok(m && strcmp(json_string_value(json_object_get(m, "team")), "vision") == 0 &&
           strcmp(json_string_value(json_object_get(m, "stage")), "none") == 0 &&
           strcmp(json_string_value(json_object_get(m, "registered_by")), "vera") == 0 &&
           json_is_null(json_object_get(m, "job")) &&
           json_array_size(json_object_get(m, "history")) == 0,
       "in its team, in stage none, registered by it, without a job or history");
    is_str(m ? json_string_value(json_object_get(m, "registered_at")) : NULL,
           "2026-03-10T08:10:00.000Z", "stamped with the engine's clock");
    json_decref(m);
    ok(model(e, VERA, model_body("resnet", "1", NULL, 0), NULL) == 409 &&
           strcmp(last.field, "version") == 0,
       "the same version again is a conflict (field version): versions are immutable");
    ok(model(e, VERA, model_body("bert", "1", "nlp", 0), NULL) == 403 &&
           strcmp(last.field, "team") == 0,
       "a member may not register for another team (field team)");
    is_int(model(e, ADMIN, model_body("bert", "1", "nowhere", 0), NULL), 400,
           "a team that does not exist is invalid");
    is_int(model(e, ADMIN, model_body("bert", "1", "nlp", 0), NULL), 201,
           "an admin registers for any team");
    ok(model(e, VERA, model_body("resnet", "2", NULL, vjob), &m) == 201 && m &&
           json_integer_value(json_object_get(m, "job")) == vjob,
       "a member ties a version to its team's job, which it records");
    json_decref(m);
    ok(model(e, VERA, model_body("resnet", "3", NULL, njob), NULL) == 400 &&
           strstr(last.text, "belongs to another team"),
       "but not to another team's job (%s)", last.text);
    is_int(model(e, VERA, model_body("resnet", "3", NULL, 99999), NULL), 400,
           "nor to a job that does not exist");
    {
        struct who jt = {"vera", "vision", "member", vjob};
        ok(model(e, jt, model_body("resnet", "4", NULL, 0), &m) == 201 && m &&
               json_integer_value(json_object_get(m, "job")) == vjob,
           "a job's own token registers a version, tied to that job without naming it");
        json_decref(m);
        ok(model(e, jt, model_body("resnet", "5", NULL, njob), NULL) == 403 &&
               strcmp(last.field, "job") == 0,
           "and may not name another job (field job)");
        is_int(stage(e, jt, "resnet@4", "staging", NULL), 403,
               "nor may a job's token move a version between stages");
    }

    /* stages */
    is_int(stage(e, VIC, "resnet@9", "staging", NULL), 404, "an unknown version is not found");
    is_int(stage(e, NADIA, "resnet@1", "staging", NULL), 404,
           "another team's version is not found either");
    ok(stage(e, VERA, "resnet@1", "staging", NULL) == 403 && strcmp(last.field, "stage") == 0,
       "without a Policy naming approvers a member may not move a version (field stage)");
    h_clock_set(H_T0 + 20 * H_MIN);
    is_int(stage(e, VIC, "resnet@1", "staging", &m), 200, "a team-admin may");
    h = json_array_get(json_object_get(m, "history"), 0);
    ok(m && strcmp(json_string_value(json_object_get(m, "stage")), "staging") == 0 &&
           strcmp(json_string_value(json_object_get(h, "from")), "none") == 0 &&
           strcmp(json_string_value(json_object_get(h, "to")), "staging") == 0 &&
           strcmp(json_string_value(json_object_get(h, "by")), "vic") == 0 &&
           strcmp(json_string_value(json_object_get(h, "at")), "2026-03-10T08:20:00.000Z") == 0 &&
           strcmp(json_string_value(json_object_get(h, "comment")), "looks good") == 0,
       "the version is in staging, its history says from, to, by whom, when and why");
    json_decref(m);
    is_int(stage(e, VIC, "resnet@1", "staging", NULL), 409, "moving it where it is: a conflict");
    is_int(stage(e, ADMIN, "resnet@1", "archived", NULL), 200, "an admin archives it");
    is_int(stage(e, ADMIN, "resnet@1", "production", NULL), 409,
           "an archived version stays archived");
    text = sl_store_obj_get(rd, "Model", "resnet@1", &rc);
    m = text ? json_loads(text, 0, NULL) : NULL;
    ok(m && strcmp(json_string_value(json_object_get(m, "stage")), "archived") == 0 &&
           json_array_size(json_object_get(m, "history")) == 2,
       "the store has it archived with two moves");
    json_decref(m);
    free(text);
    is_int(h_apply(e,
                   "apiVersion: sluice/v1\nkind: Policy\nmetadata: {name: approvers}\n"
                   "spec: {models: {approvers: [member]}}\n",
                   "admin", "default", "admin", NULL),
           200, "a Policy names members the approvers");
    is_int(stage(e, VERA, "resnet@2", "staging", NULL), 200, "a member may then move a version");
    is_int(stage(e, VIC, "resnet@2", "production", NULL), 403, "and a team-admin may not");
    ok(audit_grep(rd, NULL, "model.register", "ok", NULL).n == 4 &&
           audit_grep(rd, NULL, "model.stage", "ok", NULL).n == 3 &&
           audit_grep(rd, NULL, "model.stage", "refused", NULL).n == 7,
       "registrations, moves and refusals are audited");
}

static int scan(struct sl_engine *e, int high, const char **action)
{
    struct h_call *c = call(SL_OP_SCAN, ADMIN);
    struct sl_scan s;
    int st;

    memset(&s, 0, sizeof(s));
    snprintf(s.digest, sizeof(s.digest), "sha256:%064d", 7);
    snprintf(s.artifact, sizeof(s.artifact), "registry.example/train:1");
    s.at_ms = H_T0;
    s.counts[SL_SEV_HIGH] = high;
    s.top = high ? SL_SEV_HIGH : -1;
    c->op.u.scan.summary = sl_scan_json(&s);
    st = h_call_run(e, c);
    *action = "";
    if (c->op.result)
        *action = strcmp(json_string_value(json_object_get(c->op.result, "action")), "created") == 0
                      ? "created"
                  : strcmp(json_string_value(json_object_get(c->op.result, "action")),
                           "updated") == 0
                      ? "updated"
                      : "unchanged";
    h_call_free(c);
    return st;
}

static void scans(struct sl_engine *e, struct sl_store *rd)
{
    const char *action;
    char digest[80], *text;
    struct sl_scan back;
    json_t *j;
    int rc = 0;

    snprintf(digest, sizeof(digest), "sha256:%064d", 7);
    ok(scan(e, 2, &action) == 201 && strcmp(action, "created") == 0,
       "an admin imports an image's scan: 201, created");
    text = sl_store_obj_get(rd, "Scan", digest, &rc);
    j = text ? json_loads(text, 0, NULL) : NULL;
    ok(j && sl_scan_from_json(j, &back) == 0 && back.counts[SL_SEV_HIGH] == 2 &&
           back.top == SL_SEV_HIGH,
       "the store has it by digest, with its 2 high findings");
    json_decref(j);
    free(text);
    ok(scan(e, 2, &action) == 200 && strcmp(action, "unchanged") == 0,
       "the same scan again changes nothing");
    ok(scan(e, 0, &action) == 200 && strcmp(action, "updated") == 0,
       "a new scan of the image replaces the old one");
    ok(audit_grep(rd, "admin", "scan.import", "ok", "\"high\":2").found == 2,
       "each import is audited with its counts");
}

static void carbon(struct sl_engine *e, struct sl_store *rd)
{
    const int64_t h0 = H_T0; /* on the hour */
    struct sl_carbon_hours *hours = NULL;
    size_t n = 0;
    struct h_call *c;

    c = call(SL_OP_CARBON, ADMIN);
    snprintf(c->op.u.carbon.site, sizeof(c->op.u.carbon.site), "eu");
    c->op.u.carbon.n = 3;
    c->op.u.carbon.hour_ms = malloc(3 * sizeof(int64_t));
    c->op.u.carbon.g = malloc(3 * sizeof(double));
    for (int i = 0; i < 3; i++) {
        c->op.u.carbon.hour_ms[i] = h0 + i * 3600000LL;
        c->op.u.carbon.g[i] = 100.0 * (i + 1);
    }
    ok(h_call_run(e, c) == 200 && c->op.result &&
           json_integer_value(json_object_get(c->op.result, "hours")) == 3 &&
           strcmp(json_string_value(json_object_get(c->op.result, "site")), "eu") == 0,
       "an admin uploads three hours of a site's carbon intensity: 200, site and hours");
    h_call_free(c);
    sl_store_carbon_load(rd, h0, h0 + 3 * 3600000LL, &hours, &n);
    ok(n == 1 && strcmp(hours[0].site, "eu") == 0 && hours[0].n == 3 &&
           hours[0].g[0] == 100 && hours[0].g[1] == 200 && hours[0].g[2] == 300,
       "the store has them hour by hour");
    sl_carbon_hours_free(hours, n);

    c = call(SL_OP_CARBON, ADMIN);
    snprintf(c->op.u.carbon.site, sizeof(c->op.u.carbon.site), "eu");
    c->op.u.carbon.n = 1;
    c->op.u.carbon.hour_ms = malloc(sizeof(int64_t));
    c->op.u.carbon.g = malloc(sizeof(double));
    c->op.u.carbon.hour_ms[0] = h0 + 3600000LL;
    c->op.u.carbon.g[0] = 150;
    is_int(h_call_run(e, c), 200, "an hour uploaded again");
    h_call_free(c);
    hours = NULL;
    n = 0;
    sl_store_carbon_load(rd, h0, h0 + 3 * 3600000LL, &hours, &n);
    ok(n == 1 && hours[0].n == 3 && hours[0].g[0] == 100 && hours[0].g[1] == 150 &&
           hours[0].g[2] == 300,
       "replaces that hour only");
    sl_carbon_hours_free(hours, n);
    is_int(audit_grep(rd, "admin", "carbon.put", "ok", NULL).n, 2, "both uploads are audited");
}

int main(void)
{
    struct sl_engine_config cfg = {
        .executor = "simulated",
        .fake_gpus = "4xH100",
    };
    struct sl_store *rd;
    struct sl_engine *e;

    sl_log_set_level(SL_LOG_ERROR);
    if (sodium_init() < 0) {
        ok(0, "libsodium");
        return done_testing();
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-govern.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        ok(0, "a temp dir");
        return done_testing();
    }
    e = h_engine_create(tmpdir, cfg, NULL);
    if (!e || sl_engine_start(e) < 0) {
        ok(0, "an engine");
        sl_engine_destroy(e);
        h_rmtree(tmpdir);
        return done_testing();
    }
    rd = h_reader(tmpdir);
    is_int(h_apply(e, users, "admin", "default", "admin", NULL), 200,
           "two teams and a user of each role");

    tokens(e, rd);
    models(e, rd);
    scans(e, rd);
    carbon(e, rd);

    sl_engine_destroy(e);
    sl_store_close(rd);
    h_rmtree(tmpdir);
    return done_testing();
}
