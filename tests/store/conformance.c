/*
 * conformance.c - the store conformance suite (conformance.h): one group
 * of checks per part of struct sl_store_ops, each on a fresh store, each
 * check named as the sentence it verifies.
 */
#include "conformance.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"

static const struct sl_store_conformance *be;

/* A fresh writer, or NULL (and a failed check). */
static struct sl_store *fresh(void)
{
    struct sl_store *w = be->open_fresh(be->arg);
    if (!w)
        ok(0, "a fresh store opens");
    return w;
}

static bool meta_is(struct sl_store *st, const char *key, const char *want)
{
    char buf[64];
    if (!want)
        return sl_store_meta_get(st, key, buf, sizeof(buf)) == -ENOENT;
    return sl_store_meta_get(st, key, buf, sizeof(buf)) == 0 && strcmp(buf, want) == 0;
}

static bool commit(struct sl_store *st)
{
    return sl_store_commit(st, NULL) == 0;
}

/* A JSON value as compact text with sorted keys, for comparisons. */
static char *dump(const json_t *v)
{
    return v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : strdup("(null)");
}

static void is_json(json_t *got, const char *want, const char *name)
{
    char *g = dump(got);
    json_t *w = json_loads(want, 0, NULL);
    char *ws = dump(w);
    is_str(g, ws, "%s", name);
    free(g);
    free(ws);
    json_decref(w);
}

/* ---- transactions, savepoints, tokens, sync ------------------------------ */

static void t_transactions(void)
{
    struct sl_store *w = fresh(), *r;
    uint64_t t1 = 0, t2 = 0;

    if (!w)
        return;
    r = be->open_again(be->arg, false);
    ok(r != NULL, "a reader opens beside the writer");
    ok(sl_store_begin(w) == 0 && sl_store_meta_set(w, "a", "1") == 0,
       "a write inside a transaction succeeds");
    ok(meta_is(w, "a", "1"), "the writer sees its own uncommitted write");
    ok(r && meta_is(r, "a", NULL), "a reader does not see an uncommitted write");
    ok(sl_store_commit(w, &t1) == 0 && t1 > 0, "commit gives a token above 0");
    ok(r && meta_is(r, "a", "1"), "a reader sees the write once committed");
    ok(sl_store_begin(w) == 0 && sl_store_meta_set(w, "a", "2") == 0 &&
           sl_store_rollback(w) == 0,
       "a transaction rolls back");
    ok(meta_is(w, "a", "1") && r && meta_is(r, "a", "1"), "and leaves nothing of itself");

    /* savepoint(x) { y; savepoint { z }; rollback_to } release; savepoint
     * { v } rollback_to; commit: x and y stay, z and v do not */
    ok(sl_store_begin(w) == 0 && sl_store_meta_set(w, "x", "1") == 0 &&
           sl_store_savepoint(w) == 0 && sl_store_meta_set(w, "y", "1") == 0 &&
           sl_store_savepoint(w) == 0 && sl_store_meta_set(w, "z", "1") == 0,
       "savepoints nest");
    ok(sl_store_rollback_to(w) == 0 && meta_is(w, "z", NULL) && meta_is(w, "y", "1"),
       "rollback_to undoes the innermost savepoint only");
    ok(sl_store_release(w) == 0 && meta_is(w, "y", "1"),
       "release keeps the outer savepoint's changes");
    ok(sl_store_savepoint(w) == 0 && sl_store_meta_set(w, "v", "1") == 0 &&
           sl_store_rollback_to(w) == 0,
       "a savepoint rolled back after a release");
    ok(sl_store_savepoint(w) == 0 && sl_store_release(w) == 0,
       "rollback_to closed its savepoint (a new one opens and releases)");
    ok(sl_store_commit(w, &t2) == 0 && t2 > t1, "the next commit's token is larger");
    ok(r && meta_is(r, "x", "1") && meta_is(r, "y", "1") && meta_is(r, "z", NULL) &&
           meta_is(r, "v", NULL),
       "after commit a reader sees what was kept and nothing rolled back");
    ok(sl_store_sync(w, t2) == 0 && sl_store_sync(w, t1) == 0 && sl_store_sync(w, 0) == 0,
       "sync of a token, an older token and 0 succeed");
    ok(r && sl_store_sync(r, 0) == 0, "sync on a reader succeeds");
    sl_store_close(r);
    sl_store_close(w);
}

/* The syncer's side of t_sync_thread: syncs whatever token was last
 * published until told to stop. */
struct syncer {
    struct sl_store *w;
    _Atomic uint64_t token;
    _Atomic bool stop;
    int failures, calls;
};

static void *syncer_main(void *arg)
{
    struct syncer *s = arg;
    while (!atomic_load(&s->stop)) {
        if (sl_store_sync(s->w, atomic_load(&s->token)) < 0)
            s->failures++;
        s->calls++;
    }
    return NULL;
}

static void t_sync_thread(void)
{
    struct sl_store *w = fresh();
    struct syncer s = {.w = w};
    pthread_t th;
    uint64_t last = 0, t = 0;
    bool grows = true, all = true;

    if (!w)
        return;
    atomic_init(&s.token, 0);
    atomic_init(&s.stop, false);
    if (pthread_create(&th, NULL, syncer_main, &s) != 0) {
        ok(0, "a syncer thread starts");
        sl_store_close(w);
        return;
    }
    for (int i = 0; i < 300 && all; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        all = sl_store_begin(w) == 0 && sl_store_meta_set(w, "k", v) == 0 &&
              sl_store_commit(w, &t) == 0;
        grows &= t > last;
        last = t;
        atomic_store(&s.token, t);
    }
    atomic_store(&s.stop, true);
    pthread_join(th, NULL);
    ok(all, "300 commits while another thread syncs");
    ok(grows, "every commit's token is larger than the one before");
    ok(s.failures == 0 && s.calls > 0, "every sync from the other thread succeeded (%d)",
       s.calls);
    ok(sl_store_sync(w, last) == 0, "a final sync of the last token succeeds");
    sl_store_close(w);
}

static void t_reopen(void)
{
    struct sl_store *w = fresh();
    char buf[8];

    if (!w)
        return;
    ok(sl_store_meta_get(w, "k", buf, sizeof(buf)) == -ENOENT,
       "meta_get of an absent key is -ENOENT");
    ok(sl_store_begin(w) == 0 && sl_store_meta_set(w, "k", "hello") == 0 &&
           sl_store_meta_set(w, "k", "world!") == 0 && commit(w),
       "meta_set overwrites");
    ok(sl_store_meta_get(w, "k", buf, 4) == 0 && strcmp(buf, "wor") == 0,
       "meta_get truncates to the buffer");
    sl_store_close(w);
    w = be->open_again(be->arg, true);
    ok(w && meta_is(w, "k", "world!"), "a committed value is there after reopening");
    sl_store_close(w);
}

/* ---- the catalog --------------------------------------------------------- */

static void t_upserts(void)
{
    struct sl_store *w = fresh();
    json_t *j;
    int rc;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    is_int(sl_store_team_upsert(w, "ml", "default"), 1, "a new team is created (1)");
    is_int(sl_store_team_upsert(w, "ml", "default"), 0, "the same team is unchanged (0)");
    is_int(sl_store_team_upsert(w, "ml", "gpu"), 2, "a changed team is updated (2)");
    sl_store_team_upsert(w, "cv", "cvq");
    is_int(sl_store_cohort_upsert(w, "c1", NULL), 1, "a new cohort is created");
    is_int(sl_store_cohort_upsert(w, "c1", ""), 0, "a NULL description is \"\"");
    is_int(sl_store_cohort_upsert(w, "c1", "shared"), 2, "a changed cohort is updated");
    is_int(sl_store_queue_upsert(w, "gpu", "ml", NULL), 1, "a new queue is created");
    is_int(sl_store_queue_upsert(w, "gpu", "ml", "{}"), 0, "a NULL queue spec is \"{}\"");
    is_int(sl_store_queue_upsert(w, "gpu", "ml", "{\"q\":1}"), 2, "a new spec updates");
    is_int(sl_store_queue_upsert(w, "gpu", "cv", "{\"q\":1}"), 2, "a new team updates");
    is_int(sl_store_pclass_upsert(w, "batch", 100, true, true, false, 0), 1,
           "a new priority class is created");
    is_int(sl_store_pclass_upsert(w, "batch", 100, true, true, false, 0), 0,
           "the same class is unchanged");
    is_int(sl_store_pclass_upsert(w, "batch", 100, true, true, true, 0), 2,
           "a changed class is updated");
    is_int(sl_store_pclass_upsert(w, "prod", 1000, false, true, false, 90500), 1,
           "a second default class is created");
    is_int(sl_store_user_upsert(w, "alice", "ml", "user", ""), 1, "a new user is created");
    is_int(sl_store_user_upsert(w, "alice", "ml", "user", ""), 0, "the same user is unchanged");
    is_int(sl_store_user_upsert(w, "alice", "ml", "team-admin", "al"), 2,
           "a changed user is updated");
    ok(commit(w), "the catalog commits");
    j = sl_store_teams(w, &rc);
    is_json(j, "[{\"name\":\"cv\",\"default_queue\":\"cvq\"},"
               "{\"name\":\"ml\",\"default_queue\":\"gpu\"}]",
            "teams list by name with their default queue");
    json_decref(j);
    j = sl_store_pclasses(w, &rc);
    is_json(j, "[{\"name\":\"prod\",\"value\":1000,\"preemptible\":false,\"default\":true,"
               "\"opportunistic\":false,\"min_runtime\":\"90s500ms\"},"
               "{\"name\":\"batch\",\"value\":100,\"preemptible\":true,\"default\":false,"
               "\"opportunistic\":true,\"min_runtime\":\"0s\"}]",
            "classes list by value, only the last default is the default");
    json_decref(j);
out:
    sl_store_close(w);
}

/* Records what sl_store_load hands over, as "kind:name ..." text. */
struct load_log {
    char text[512];
    int stop_at;                  /* return 7 at this call; 0 = never */
    int calls;
};

static int ld_note(struct load_log *l, const char *kind, const char *name)
{
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof(l->text) - n, "%s%s:%s", n ? " " : "", kind, name);
    return ++l->calls == l->stop_at ? 7 : 0;
}

static int ld_team(void *a, const char *name, const char *dq)
{
    (void)dq;
    return ld_note(a, "team", name);
}

static int ld_cohort(void *a, const char *name, const char *d)
{
    (void)d;
    return ld_note(a, "cohort", name);
}

static int ld_queue(void *a, const char *name, const char *team, const char *spec)
{
    (void)team;
    (void)spec;
    return ld_note(a, "queue", name);
}

static int ld_pclass(void *a, const char *name, int v, bool p, bool d, bool o, int64_t m)
{
    (void)v, (void)p, (void)d, (void)o, (void)m;
    return ld_note(a, "pclass", name);
}

static int ld_user(void *a, const char *name, const char *t, const char *r, const char *u)
{
    (void)t, (void)r, (void)u;
    return ld_note(a, "user", name);
}

static int ld_job(void *a, const struct sl_job_view *v, int64_t not_before_ms)
{
    char name[64];
    snprintf(name, sizeof(name), "%s@%lld", v->name, (long long)not_before_ms);
    return ld_note(a, "job", name);
}

static struct sl_job_view job_view(const char *name, const char *team, enum sl_job_state s)
{
    struct sl_job_view v = {
        .name = name, .team = team, .user = "alice", .queue = "q",
        .priority_class = "batch", .priority = 100, .state = s, .submitted_ms = 1000,
        .limits_enforced = -1, .gpus_enforced = -1, .spec_json = "{\"s\":1}",
    };
    return v;
}

static void t_load(void)
{
    static const char want[] =
        "team:a team:b cohort:c1 cohort:c2 queue:qa queue:qb pclass:hi pclass:lo "
        "user:u1 user:u2 job:p@0 job:r@0 job:pre@5000";
    static const enum sl_job_state states[] = {
        SL_JOB_PENDING, SL_JOB_SUCCEEDED, SL_JOB_RUNNING, SL_JOB_FAILED,
        SL_JOB_CANCELLED, SL_JOB_LOST, SL_JOB_PREEMPTED,
    };
    static const char *const names[] = {"p", "s", "r", "f", "c", "l", "pre"};
    struct sl_store *w = fresh();
    struct load_log l = {{0}, 0, 0};
    struct sl_store_loader ld = {&l, ld_team, ld_cohort, ld_queue, ld_pclass, ld_user, ld_job};
    bool all = true;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    /* inserted out of order: load sorts */
    all &= sl_store_team_upsert(w, "b", "qb") == 1 && sl_store_team_upsert(w, "a", "qa") == 1;
    all &= sl_store_cohort_upsert(w, "c2", "") == 1 && sl_store_cohort_upsert(w, "c1", "") == 1;
    all &= sl_store_queue_upsert(w, "qb", "b", NULL) == 1 &&
           sl_store_queue_upsert(w, "qa", "a", NULL) == 1;
    all &= sl_store_pclass_upsert(w, "lo", 1, true, false, false, 0) == 1 &&
           sl_store_pclass_upsert(w, "hi", 9, false, false, false, 0) == 1;
    all &= sl_store_user_upsert(w, "u2", "a", "user", "") == 1 &&
           sl_store_user_upsert(w, "u1", "b", "user", "") == 1;
    for (size_t i = 0; i < SL_ARRAY_LEN(states); i++) {
        struct sl_job_view v = job_view(names[i], "a", states[i]);
        all &= sl_store_job_insert(w, &v, states[i] == SL_JOB_PREEMPTED ? 5000 : 0) == 0;
    }
    ok(all && commit(w), "a catalog and jobs of every state are stored");
    is_int(sl_store_load(w, &ld), 0, "load succeeds");
    is_str(l.text, want, "load gives each kind by name, then the unfinished jobs by id "
                         "with their not_before");
    memset(&l, 0, sizeof(l));
    l.stop_at = 3;
    is_int(sl_store_load(w, &ld), 7, "load stops at a callback's non-zero return");
    is_int(l.calls, 3, "and calls nothing after it");
out:
    sl_store_close(w);
}

/* ---- tokens -------------------------------------------------------------- */

static void hash_of(unsigned char h[32], int n)
{
    memset(h, 0, 32);
    h[0] = (unsigned char)n;
    h[31] = 0xa5;
}

static void t_tokens(void)
{
    struct sl_store *w = fresh();
    unsigned char h[6][32];
    int64_t id[6] = {0};
    struct sl_token_who who;
    char user[64], team[64];
    int64_t job = -1;
    bool revoked = true;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    for (int i = 0; i < 6; i++)
        hash_of(h[i], i + 1);
    sl_store_team_upsert(w, "ml", "ml");
    sl_store_user_upsert(w, "alice", "ml", "user", "al");
    sl_store_user_upsert(w, "root", "ml", "admin", "");
    ok(sl_store_token_insert(w, h[0], "alice", 0, "laptop", 0, &id[0]) == 0 && id[0] > 0,
       "a token is inserted and gets an id");
    ok(sl_store_token_insert(w, h[1], "alice", 1000, NULL, 0, &id[1]) == 0 && id[1] > id[0],
       "a second token gets a larger id");
    is_int(sl_store_token_insert(w, h[0], "alice", 0, "again", 0, NULL), -EEXIST,
           "a hash already stored is -EEXIST");
    ok(sl_store_token_insert(w, h[2], "alice", 0, "job", 7, &id[2]) == 0 &&
           sl_store_token_insert(w, h[3], "alice", 0, "job", 7, &id[3]) == 0 &&
           sl_store_token_insert(w, h[4], "alice", 0, "job", 8, &id[4]) == 0 &&
           sl_store_token_insert(w, h[5], "root", 0, "", 0, &id[5]) == 0,
       "job tokens and an admin's token are inserted");
    ok(commit(w), "tokens commit");
    ok(sl_store_token_lookup(w, h[0], 5000, &who) == 0 && strcmp(who.user, "alice") == 0 &&
           strcmp(who.team, "ml") == 0 && strcmp(who.role, "user") == 0 &&
           strcmp(who.unix_user, "al") == 0 && who.job_id == 0 && who.token_id == id[0],
       "lookup gives the token's user, team, role, unix user, job and id");
    is_int(sl_store_token_lookup(w, h[1], 999, &who), 0, "a token is live before it expires");
    is_int(sl_store_token_lookup(w, h[1], 1000, &who), -ENOENT,
           "and unknown from its expiry on");
    hash_of(h[1], 99);
    is_int(sl_store_token_lookup(w, h[1], 0, &who), -ENOENT, "an unknown hash is -ENOENT");
    ok(sl_store_token_lookup(w, h[2], 0, &who) == 0 && who.job_id == 7,
       "a job token names its job");
    ok(sl_store_token_info(w, id[0], user, team, &job, &revoked) == 0 &&
           strcmp(user, "alice") == 0 && strcmp(team, "ml") == 0 && job == 0 && !revoked,
       "info gives a token's user, team, job and state");
    is_int(sl_store_token_info(w, 9999, user, team, &job, &revoked), -ENOENT,
           "info of an unknown id is -ENOENT");
    ok(sl_store_begin(w) == 0 && sl_store_token_revoke(w, id[0], 6000) == 0,
       "a live token is revoked");
    is_int(sl_store_token_revoke(w, id[0], 6001), -ENOENT, "a revoked token is not live");
    is_int(sl_store_tokens_revoke_job(w, 7, 6000), 2, "revoking a job's tokens counts them");
    is_int(sl_store_tokens_revoke_job(w, 7, 6000), 0, "and a second time finds none");
    ok(commit(w), "revocations commit");
    is_int(sl_store_token_lookup(w, h[0], 7000, &who), -ENOENT, "a revoked token is unknown");
    is_int(sl_store_token_lookup(w, h[3], 7000, &who), -ENOENT, "so is a revoked job token");
    is_int(sl_store_token_lookup(w, h[4], 7000, &who), 0, "another job's token is not");
    ok(sl_store_token_info(w, id[0], user, team, &job, &revoked) == 0 && revoked,
       "info says a token was revoked");
out:
    sl_store_close(w);
}

/* The ids and a few fields of a token list, as "id:user:job:revoked ...". */
static void token_list_is(struct sl_store *st, const char *user, const char *team,
                          const char *manager, const char *want, const char *name)
{
    int rc = -1;
    json_t *arr = sl_store_tokens(st, user, team, manager, &rc), *t;
    char got[256] = "";
    size_t i, n = 0;

    json_array_foreach(arr, i, t) {
        json_t *job = json_object_get(t, "job");
        n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%lld:%s:%s:%s", n ? " " : "",
                              (long long)json_integer_value(json_object_get(t, "id")),
                              json_string_value(json_object_get(t, "user")),
                              json_is_null(job) ? "-" : "j",
                              json_is_true(json_object_get(t, "revoked")) ? "r" : "l");
    }
    ok(arr && rc == 0, "%s: a list", name);
    is_str(got, want, "%s", name);
    json_decref(arr);
}

static void t_token_list(void)
{
    struct sl_store *w = fresh();
    unsigned char h[32];
    int rc = -1;
    json_t *arr, *t;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    sl_store_team_upsert(w, "ml", "ml");
    sl_store_team_upsert(w, "cv", "cv");
    sl_store_user_upsert(w, "alice", "ml", "user", "");
    sl_store_user_upsert(w, "bob", "cv", "team-admin", "");
    sl_store_user_upsert(w, "root", "ml", "admin", "");
    for (int i = 1; i <= 4; i++) {
        const char *u = i == 1 ? "alice" : i == 2 ? "bob" : i == 3 ? "root" : "alice";
        hash_of(h, i);
        sl_store_token_insert(w, h, u, i == 4 ? 9000 : 0, "l", i == 4 ? 3 : 0, NULL);
    }
    sl_store_token_revoke(w, 1, 500);
    ok(commit(w), "tokens of three users commit");
    token_list_is(w, NULL, NULL, NULL, "1:alice:-:r 2:bob:-:l 3:root:-:l 4:alice:j:l",
                  "every token, by id, with its job and state");
    token_list_is(w, "alice", NULL, NULL, "1:alice:-:r 4:alice:j:l", "a user's tokens");
    token_list_is(w, NULL, "ml", NULL, "1:alice:-:r 3:root:-:l 4:alice:j:l",
                  "a team's tokens");
    token_list_is(w, NULL, "ml", "bob", "1:alice:-:r 4:alice:j:l",
                  "a manager does not see an admin's tokens");
    token_list_is(w, NULL, NULL, "root", "1:alice:-:r 2:bob:-:l 3:root:-:l 4:alice:j:l",
                  "but sees their own");
    arr = sl_store_tokens(w, "alice", NULL, NULL, &rc);
    t = json_array_get(arr, 0);
    ok(json_is_string(json_object_get(t, "created_at")) &&
           json_is_string(json_object_get(t, "revoked_at")) &&
           json_is_null(json_object_get(t, "expires_at")) &&
           strcmp(json_string_value(json_object_get(t, "label")), "l") == 0 &&
           strcmp(json_string_value(json_object_get(t, "team")), "ml") == 0,
       "a listed token has its times (null when none), label and team");
    t = json_array_get(arr, 1);
    ok(json_integer_value(json_object_get(t, "job")) == 3 &&
           json_is_string(json_object_get(t, "expires_at")),
       "a job token lists its job and expiry");
    json_decref(arr);
out:
    sl_store_close(w);
}

/* ---- jobs ---------------------------------------------------------------- */

/* A job row as read: the view with its strings copied. */
struct job_copy {
    int calls;
    struct sl_job_view v;
    char s[12][256];
    bool null[12];
};

static const char *keep(struct job_copy *c, int i, const char *s)
{
    c->null[i] = s == NULL;
    snprintf(c->s[i], sizeof(c->s[i]), "%s", s ? s : "");
    return s ? c->s[i] : NULL;
}

static int copy_job(void *arg, const struct sl_job_view *v)
{
    struct job_copy *c = arg;
    c->calls++;
    c->v = *v;
    c->v.name = keep(c, 0, v->name);
    c->v.team = keep(c, 1, v->team);
    c->v.project = keep(c, 2, v->project);
    c->v.user = keep(c, 3, v->user);
    c->v.queue = keep(c, 4, v->queue);
    c->v.priority_class = keep(c, 5, v->priority_class);
    c->v.placement_json = keep(c, 6, v->placement_json);
    c->v.message = keep(c, 7, v->message);
    c->v.intent = keep(c, 8, v->intent);
    c->v.spec_json = keep(c, 9, v->spec_json);
    c->v.reason = keep(c, 10, v->reason);
    return 0;
}

static int fail_with_eintr(void *arg, const struct sl_job_view *v)
{
    (void)arg;
    (void)v;
    return -EINTR;
}

static bool str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void t_job_insert(void)
{
    struct sl_store *w = fresh(), *r = NULL;
    struct sl_job_view v = job_view("a", "ml", SL_JOB_PENDING);
    struct job_copy c;
    int64_t max = -1;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    ok(sl_store_job_max_id(w, &max) == 0 && max == 0, "an empty store's largest id is 0");
    ok(sl_store_job_insert(w, &v, 0) == 0 && v.id == 1, "the first job gets id 1");
    v.id = 0;
    ok(sl_store_job_insert(w, &v, 0) == 0 && v.id == 2, "the next gets 2");
    v.id = 10;
    ok(sl_store_job_insert(w, &v, 0) == 0 && v.id == 10, "a job keeps an id it is given");
    v.id = 0;
    ok(sl_store_job_insert(w, &v, 0) == 0 && v.id == 11, "then the next is max + 1");
    v.id = 10;
    v.name = "dup";
    is_int(sl_store_job_insert(w, &v, 0), -EEXIST, "an id already taken is -EEXIST");
    ok(sl_store_job_max_id(w, &max) == 0 && max == 11, "the largest id is 11");
    r = be->open_again(be->arg, false);
    memset(&c, 0, sizeof(c));
    is_int(r ? sl_store_job_read(r, 1, copy_job, &c) : 0, -ENOENT,
           "a reader does not see an uncommitted job");
    ok(commit(w), "jobs commit");
    memset(&c, 0, sizeof(c));
    ok(r && sl_store_job_read(r, 1, copy_job, &c) == 0 && c.calls == 1,
       "a reader sees a committed job");
    memset(&c, 0, sizeof(c));
    ok(sl_store_job_read(w, 10, copy_job, &c) == 0 && str_eq(c.v.name, "a"),
       "the refused insert changed nothing");
    memset(&c, 0, sizeof(c));
    is_int(sl_store_job_read(w, 12, copy_job, &c), -ENOENT, "an unknown job is -ENOENT");
    is_int(c.calls, 0, "and its callback is not called");
    is_int(sl_store_job_read(w, 1, fail_with_eintr, NULL), -EINTR,
           "read returns what its callback returned");
out:
    sl_store_close(r);
    sl_store_close(w);
}

/* A view with every column set. */
static struct sl_job_view full_view(void)
{
    struct sl_job_view v = job_view("full", "ml", SL_JOB_RUNNING);
    v.project = "proj";
    v.priority_class = "prod";
    v.priority = 1000;
    v.has_exit_code = true;
    v.exit_code = 3;
    v.attempt = 2;
    v.retries = 4;
    v.preemptions = 1;
    v.started_ms = 2000;
    v.finished_ms = 3000;
    v.placement_json = "[{\"node\":\"n1\"}]";
    v.message = "msg";
    v.limits_enforced = 1;
    v.gpus_enforced = 0;
    v.intent = "preempt";
    v.intent_at_ms = 2500;
    v.intent_for = 42;
    v.reason = "not stored";
    return v;
}

static void t_job_columns(void)
{
    struct sl_store *w = fresh();
    struct sl_job_view v = full_view(), u;
    struct job_copy c;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    ok(sl_store_job_insert(w, &v, 0) == 0, "a job with every column set is stored");
    memset(&c, 0, sizeof(c));
    ok(sl_store_job_read(w, v.id, copy_job, &c) == 0, "and read back");
    ok(str_eq(c.v.name, "full") && str_eq(c.v.team, "ml") && str_eq(c.v.project, "proj") &&
           str_eq(c.v.user, "alice") && str_eq(c.v.queue, "q") &&
           str_eq(c.v.priority_class, "prod") && c.v.priority == 1000 &&
           c.v.state == SL_JOB_RUNNING && str_eq(c.v.spec_json, "{\"s\":1}"),
       "its names, class, priority, state and spec read back");
    ok(c.v.has_exit_code && c.v.exit_code == 3 && c.v.attempt == 2 && c.v.retries == 4 &&
           c.v.preemptions == 1 && c.v.submitted_ms == 1000 && c.v.started_ms == 2000 &&
           c.v.finished_ms == 3000,
       "its exit code, counts and times read back");
    ok(str_eq(c.v.placement_json, "[{\"node\":\"n1\"}]") && str_eq(c.v.message, "msg") &&
           c.v.limits_enforced == 1 && c.v.gpus_enforced == 0 &&
           str_eq(c.v.intent, "preempt") && c.v.intent_at_ms == 2500 && c.v.intent_for == 42,
       "its placement, message, enforcement and intent read back");
    ok(c.null[10] && !c.v.spec_doc, "the reason is not stored and no document is given");
    u = job_view("other", "cv", SL_JOB_PENDING);
    u.id = v.id;
    u.project = "";
    ok(sl_store_job_update(w, &u, 7000) == 0 && commit(w), "a job is updated");
    memset(&c, 0, sizeof(c));
    sl_store_job_read(w, v.id, copy_job, &c);
    ok(c.v.state == SL_JOB_PENDING && !c.v.has_exit_code && c.v.attempt == 0 &&
           c.v.started_ms == 0 && c.v.finished_ms == 0 && c.v.preemptions == 0,
       "update writes the state, exit code, attempt, times and preemptions");
    ok(c.null[6] && c.null[7] && c.v.limits_enforced == -1 && c.v.gpus_enforced == -1 &&
           (c.null[8] || !*c.v.intent) && c.v.intent_at_ms == 0 && c.v.intent_for == 0,
       "and clears placement, message, enforcement and intent (NULL)");
    ok(str_eq(c.v.name, "full") && str_eq(c.v.team, "ml") && str_eq(c.v.project, "proj") &&
           str_eq(c.v.priority_class, "prod") && c.v.retries == 4,
       "but leaves the name, team, project, class and retries");
    u = job_view("bare", "ml", SL_JOB_PENDING);
    u.project = "";
    ok(sl_store_begin(w) == 0 && sl_store_job_insert(w, &u, 0) == 0 && commit(w),
       "a job with an empty project is stored");
    memset(&c, 0, sizeof(c));
    sl_store_job_read(w, u.id, copy_job, &c);
    ok(c.null[2] || !*c.v.project, "an empty project reads back as none");
out:
    sl_store_close(w);
}

/* Collects the ids a scan hands over, as "1 2 3". */
struct ids {
    char text[256];
    int stop_after;               /* return 1 after this many; 0 = never */
    int n;
};

static int note_id(void *arg, const struct sl_job_view *v)
{
    struct ids *s = arg;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof(s->text) - len, "%s%lld", len ? " " : "",
             (long long)v->id);
    return ++s->n == s->stop_after ? 1 : 0;
}

/* The ids a query's scan hands over ("1 2 3"), and its next. */
static void query_is(struct sl_store *st, const struct sl_store_job_query *q, const char *want,
                     int64_t want_next, const char *name)
{
    struct ids s = {"", 0, 0};
    int64_t next = -1;
    int rc = sl_store_job_scan(st, q, note_id, &s, &next, NULL);
    ok(rc == 0 && strcmp(s.text, want) == 0 && next == want_next, "%s", name);
    if (rc != 0 || strcmp(s.text, want) != 0 || next != want_next)
        diag("  got rc %d, \"%s\", next %lld", rc, s.text, (long long)next);
}

static void scan_is(struct sl_store *st, int64_t after, unsigned mask, const char *team,
                    int limit, const char *want, int64_t want_next, const char *name)
{
    struct sl_store_job_query q = {
        .after = after, .state_mask = mask, .team = team, .limit = limit,
    };
    query_is(st, &q, want, want_next, name);
}

static void t_job_scan(void)
{
    /* ids 1..12: team ml for odd ids; states cycle through all eight */
    struct sl_store *w = fresh();
    struct ids s = {"", 2, 0};
    int64_t next = -1;
    bool all = true;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    for (int i = 1; i <= 12; i++) {
        struct sl_job_view v = job_view("j", i % 2 ? "ml" : "cv",
                                        (enum sl_job_state)((i - 1) % SL_JOB_NSTATES));
        all &= sl_store_job_insert(w, &v, 0) == 0;
    }
    ok(all && commit(w), "12 jobs of two teams and every state are stored");
    scan_is(w, 0, 0, NULL, 100, "1 2 3 4 5 6 7 8 9 10 11 12", 0,
            "a scan gives every job by id and no next");
    scan_is(w, 0, 0, NULL, 5, "1 2 3 4 5", 5, "a limit stops it and names the next");
    scan_is(w, 5, 0, NULL, 5, "6 7 8 9 10", 10, "after continues from there");
    scan_is(w, 10, 0, NULL, 5, "11 12", 0, "the last page has no next");
    scan_is(w, 0, 0, NULL, 12, "1 2 3 4 5 6 7 8 9 10 11 12", 0,
            "a limit of exactly all has no next");
    scan_is(w, 0, (1u << SL_JOB_PENDING) | (1u << SL_JOB_RUNNING), NULL, 100, "1 2 9 10", 0,
            "a state mask keeps only those states");
    scan_is(w, 0, 1u << SL_JOB_TIMEOUT, NULL, 100, "8", 0,
            "Timeout, the state added last, is stored and found as itself");
    scan_is(w, 0, 0, "ml", 100, "1 3 5 7 9 11", 0, "a team keeps only its jobs");
    scan_is(w, 0, 1u << SL_JOB_PENDING, "ml", 100, "1 9", 0, "both filters apply together");
    scan_is(w, 0, 0, "ml", 2, "1 3", 3, "a filtered page names the next");
    scan_is(w, 12, 0, NULL, 10, "", 0, "after the last id there is nothing");
    scan_is(w, 0, 0, "none", 10, "", 0, "an unknown team has nothing");
    is_int(sl_store_job_scan(w, &(struct sl_store_job_query){.limit = 100}, note_id, &s, &next,
                             NULL),
           1, "a scan stops at its callback's non-zero return and returns it");
    is_str(s.text, "1 2", "after handing over that row");
out:
    sl_store_close(w);
}

static void t_attempts(void)
{
    struct sl_store *w = fresh();
    json_t *j = NULL;
    char *s = NULL;
    int rc = 0;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    ok(sl_store_attempt_put(w, 1, 0, 1000, NULL, "[0,0]") == 0 &&
           sl_store_attempt_put(w, 1, 1, 0, SL_ATTEMPT_AFTER_PREEMPTION, NULL) == 0 && commit(w),
       "an attempt starts; the next one is noted as the job goes back in line");
    j = sl_store_attempts(w, 1, &rc);
    ok(rc == 0 && json_array_size(j) == 1, "only the started attempt is listed");
    json_decref(j);
    ok(sl_store_begin(w) == 0 && sl_store_attempt_put(w, 1, 1, 5000, NULL, "[12,3]") == 0 &&
           commit(w),
       "then it starts");
    j = sl_store_attempts(w, 1, &rc);
    s = dump(j);
    ok(rc == 0 && json_array_size(j) == 2 && s &&
           strstr(s, "{\"after\":\"preemption\",\"attempt\":1,\"log_offsets\":[12,3],"
                     "\"started_at\":\"1970-01-01T00:00:05"),
       "with what ended the one before and its offsets kept together (%s)", s ? s : "");
    ok(json_is_null(json_object_get(json_array_get(j, 0), "after")),
       "the first attempt comes after nothing");
    free(s);
    json_decref(j);
    j = sl_store_attempts(w, 99, &rc);
    ok(rc == 0 && json_is_array(j) && json_array_size(j) == 0,
       "a job that never started has no attempt");
out:
    json_decref(j);
    sl_store_close(w);
}

static void t_events_lineage(void)
{
    struct sl_store *w = fresh();
    struct sl_job_view v = job_view("a", "ml", SL_JOB_PENDING);
    json_t *j = NULL;
    char *text;
    int rc = 0;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    sl_store_job_insert(w, &v, 0);
    ok(sl_store_event_add(w, 1, 1000, "state", NULL, "Pending", NULL) == 0 &&
           sl_store_event_add(w, 2, 1500, "state", NULL, "Pending", NULL) == 0 &&
           sl_store_event_add(w, 1, 3000, "idle", "", "", "idle 5m") == 0 &&
           sl_store_event_add(w, 1, 2000, "state", "Pending", "Running", "placed") == 0,
       "events are added");
    ok(sl_store_job_lineage(w, 1, "{\"image\":\"x\"}") == 0 && commit(w),
       "a lineage is set");
    j = sl_store_events(w, 1, &rc);
    ok(rc == 0 && json_array_size(j) == 3, "a job's events are listed");
    {
        char *s = dump(j);
        ok(s && strstr(s, "\"type\":\"state\"") && strstr(s, "\"message\":\"idle 5m\""),
           "with their type and message");
        free(s);
    }
    ok(strcmp(json_string_value(json_object_get(json_array_get(j, 1), "type")), "idle") == 0 &&
           strcmp(json_string_value(json_object_get(json_array_get(j, 2), "to")), "Running") ==
               0,
       "in the order added, not by time");
    ok(json_is_null(json_object_get(json_array_get(j, 0), "from")) &&
           json_is_null(json_object_get(json_array_get(j, 1), "from")) &&
           json_is_string(json_object_get(json_array_get(j, 0), "at")),
       "a NULL or empty field is null, the time is text");
    json_decref(j);
    j = sl_store_events(w, 99, &rc);
    ok(rc == 0 && json_is_array(j) && json_array_size(j) == 0,
       "a job without events has an empty list");
    json_decref(j);
    text = sl_store_job_lineage_get(w, 1, &rc);
    ok(rc == 0 && str_eq(text, "{\"image\":\"x\"}"), "the lineage reads back");
    free(text);
    v.id = 0;
    ok(sl_store_begin(w) == 0 && sl_store_job_insert(w, &v, 0) == 0 && commit(w),
       "a second job is stored");
    text = sl_store_job_lineage_get(w, v.id, &rc);
    ok(rc == 0 && str_eq(text, ""), "a job without lineage has \"\"");
    free(text);
    text = sl_store_job_lineage_get(w, 99, &rc);
    ok(!text && rc == -ENOENT, "an unknown job's lineage is -ENOENT");
    ok(sl_store_begin(w) == 0 && sl_store_job_lineage(w, 1, NULL) == 0 && commit(w),
       "a lineage is cleared");
    text = sl_store_job_lineage_get(w, 1, &rc);
    ok(rc == 0 && str_eq(text, ""), "and reads back as \"\"");
    free(text);
    text = NULL;
    ok(sl_store_begin(w) == 0 &&
           sl_store_job_respec(w, 1, "q2", "prod", 1000, "{\"respec\":1}") == 0 && commit(w),
       "a job's spec, queue and class are changed");
    j = NULL;
    ok(sl_store_job_read(w, 1, sl_job_view_json_fn, &j) == 0 &&
           str_eq(json_string_value(json_object_get(j, "queue")), "q2") &&
           str_eq(json_string_value(json_object_get(j, "priority_class")), "prod") &&
           json_integer_value(json_object_get(j, "priority")) == 1000 &&
           json_integer_value(json_object_get(json_object_get(j, "spec"), "respec")) == 1,
       "and read back");
    json_decref(j);
    ok(sl_store_begin(w) == 0 && sl_store_job_respec(w, 99, "q", "c", 1, "{}") == 0 &&
           commit(w),
       "an unknown id changes nothing");
    free(text);
out:
    sl_store_close(w);
}

/* ---- the usage ledger ---------------------------------------------------- */

static struct sl_usage_row usage(int64_t job, int task, const char *team, int64_t start)
{
    struct sl_usage_row r = {
        .job_id = job, .task = task, .team = team, .user = "alice", .queue = "q",
        .node = "n1", .gpu_model = "T4", .gpus = "0;1", .ngpus = 2, .gpu_milli = 1000,
        .cpu_milli = 4000, .mem_bytes = 1 << 30, .start_ms = start,
    };
    return r;
}

struct usage_log {
    char text[256];
    struct sl_usage_row first;    /* strings copied below */
    char node[16], gpus[16], project[16];
    int stop_after;
    int n;
};

static int note_usage(void *arg, const struct sl_usage_row *r)
{
    struct usage_log *l = arg;
    size_t len = strlen(l->text);
    snprintf(l->text + len, sizeof(l->text) - len, "%s%lld.%d%s", len ? " " : "",
             (long long)r->job_id, r->task, r->end_ms ? "" : "+");
    if (l->n == 0) {
        l->first = *r;
        snprintf(l->node, sizeof(l->node), "%s", r->node);
        snprintf(l->gpus, sizeof(l->gpus), "%s", r->gpus);
        snprintf(l->project, sizeof(l->project), "%s", r->project);
    }
    return ++l->n == l->stop_after ? -EINTR : 0;
}

static void usage_is(struct sl_store *st, int64_t from, int64_t to, const char *team,
                     int64_t job, const char *want, const char *name)
{
    struct usage_log l = {.n = 0};
    int rc = sl_store_usage_scan(st, from, to, team, job, note_usage, &l);
    ok(rc == 0 && strcmp(l.text, want) == 0, "%s", name);
    if (rc != 0 || strcmp(l.text, want) != 0)
        diag("  got rc %d, \"%s\"", rc, l.text);
}

/* The row of job 'job', task 'task' (its numbers only). */
struct row_find {
    int64_t job;
    int task;
    struct sl_usage_row row;
};

static int find_row(void *arg, const struct sl_usage_row *r)
{
    struct row_find *f = arg;
    if (r->job_id == f->job && r->task == f->task) {
        f->row = *r;
        f->row.team = f->row.project = f->row.user = f->row.queue = NULL;
        f->row.node = f->row.gpu_model = f->row.gpus = NULL;
    }
    return 0;
}

static struct sl_usage_row row_of(struct sl_store *st, int64_t job, int task)
{
    struct row_find f = {.job = job, .task = task};
    sl_store_usage_scan(st, 0, INT64_MAX, NULL, 0, find_row, &f);
    return f.row;
}

static void t_usage(void)
{
    struct sl_store *w = fresh();
    struct sl_usage_row r;
    struct usage_log l = {.n = 0};

    if (!w || sl_store_begin(w) < 0)
        goto out;
    r = usage(2, 0, "cv", 5000);
    sl_store_usage_open(w, &r);
    r = usage(1, 1, "ml", 1000);
    sl_store_usage_open(w, &r);
    r = usage(1, 0, "ml", 1000);
    ok(sl_store_usage_open(w, &r) == 0, "intervals are opened");
    r = usage(3, 0, "ml", 20000);
    sl_store_usage_open(w, &r);
    r = usage(1, 0, "ml", 1000);
    r.end_ms = 3000;
    r.gpu_energy_measured = true;
    r.gpu_energy_j = 10.5;
    r.has_util = true;
    r.util = 0.5;
    r.idle_ms = 100;
    ok(sl_store_usage_close(w, &r) == 0, "an interval is closed");
    r.attempt = 1;
    r.end_ms = 9000;
    ok(sl_store_usage_close(w, &r) == 0, "closing another attempt's interval finds none");
    ok(sl_store_usage_mark_idle(w, 2, 77) == 0 && commit(w), "a job is marked idle");
    usage_is(w, 0, 100000, NULL, 0, "1.1+ 1.0 2.0+ 3.0+",
             "a scan gives intervals by job then interval, open ones with end 0");
    usage_is(w, 3000, 4000, NULL, 0, "1.1+", "a window keeps the intervals overlapping it");
    usage_is(w, 0, 100000, "cv", 0, "2.0+", "a team keeps its intervals");
    usage_is(w, 0, 100000, NULL, 1, "1.1+ 1.0", "a job keeps its intervals");
    usage_is(w, 0, 100000, "cv", 1, "", "both filters apply together");
    sl_store_usage_scan(w, 0, 100000, NULL, 1, note_usage, &l);
    ok(l.first.job_id == 1 && l.first.task == 1 && l.first.ngpus == 2 &&
           l.first.gpu_milli == 1000 && l.first.cpu_milli == 4000 &&
           l.first.mem_bytes == (1 << 30) && l.first.start_ms == 1000 &&
           strcmp(l.node, "n1") == 0 && strcmp(l.gpus, "0;1") == 0 &&
           strcmp(l.project, "") == 0 && !l.first.gpu_energy_measured && !l.first.has_util,
       "an open row has its columns, \"\" for none, nothing measured");
    r = row_of(w, 1, 0);
    ok(r.end_ms == 3000 && r.gpu_energy_measured && r.gpu_energy_j == 10.5 &&
           !r.cpu_energy_measured && r.has_util && r.util == 0.5 && r.idle_ms == 100 &&
           !r.idle,
       "a closed row has its end, what was measured and its idle time");
    r = row_of(w, 2, 0);
    ok(r.idle && r.idle_ms == 77 && r.end_ms == 0, "an idle job's open row is flagged");
    /* closed with the start its executor reports (Slurm's StartTime) */
    if (sl_store_begin(w) == 0) {
        r = usage(3, 0, "ml", 20000);
        r.start_ms = 21000;
        r.end_ms = 25000;
        ok(sl_store_usage_close(w, &r) == 0 && commit(w), "an interval is closed from a later start");
        r = row_of(w, 3, 0);
        ok(r.start_ms == 21000 && r.end_ms == 25000, "its row runs from that start to its end");
    }
    r = row_of(w, 3, 0);
    ok(!r.idle && r.idle_ms == 0, "another job's is not");
    memset(&l, 0, sizeof(l));
    l.stop_after = 1;
    is_int(sl_store_usage_scan(w, 0, 100000, NULL, 0, note_usage, &l), -EINTR,
           "a scan stops at its callback's negative return and returns it");
    is_int(l.n, 1, "after one row");
out:
    sl_store_close(w);
}

/* ---- the history's reads ------------------------------------------------- */

/* What a history scan passed, as sorted words: "u<start>-<end>x<gpus>[u<util>]"
 * per interval, "n<count>" for the count of now, "e<at>", "l<at>",
 * "s<at><<since>", "p<at>" per transition. */
struct hist_log {
    char words[32][32];
    int n, stop_after, calls;
    char text[512];
};

static int hist_word(struct hist_log *l, const char *w)
{
    if (l->n < 32)
        snprintf(l->words[l->n++], sizeof(l->words[0]), "%s", w);
    return ++l->calls == l->stop_after ? -EINTR : 0;
}

static int hist_usage(void *arg, const struct sl_usage_row *r)
{
    char w[32];
    if (r->has_util)
        snprintf(w, sizeof(w), "u%lld-%lldx%du%.1f", (long long)r->start_ms,
                 (long long)r->end_ms, r->ngpus * r->gpu_milli / 1000, r->util);
    else
        snprintf(w, sizeof(w), "u%lld-%lldx%d", (long long)r->start_ms, (long long)r->end_ms,
                 r->ngpus * r->gpu_milli / 1000);
    return hist_word(arg, w);
}

static int hist_event(void *arg, const struct sl_history_event *ev)
{
    char w[32];
    switch (ev->kind) {
    case SL_HIST_PENDING_NOW:
        snprintf(w, sizeof(w), "n%lld", (long long)ev->count);
        break;
    case SL_HIST_START:
        snprintf(w, sizeof(w), "s%lld<%lld", (long long)ev->at_ms, (long long)ev->since_ms);
        break;
    default:
        snprintf(w, sizeof(w), "%c%lld", "nelsp"[ev->kind], (long long)ev->at_ms);
    }
    return hist_word(arg, w);
}

static int word_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void history_is(struct sl_store *st, int64_t from, int64_t to, const char *team,
                       const char *want, const char *name)
{
    struct hist_log l;
    int rc;

    memset(&l, 0, sizeof(l));
    rc = sl_store_history_scan(st, from, to, team, hist_usage, hist_event, &l);
    qsort(l.words, (size_t)l.n, sizeof(l.words[0]), word_cmp);
    for (int i = 0; i < l.n; i++) {
        size_t len = strlen(l.text);
        snprintf(l.text + len, sizeof(l.text) - len, "%s%s", i ? " " : "", l.words[i]);
    }
    ok(rc == 0 && strcmp(l.text, want) == 0, "%s", name);
    if (rc != 0 || strcmp(l.text, want) != 0)
        diag("  got rc %d, \"%s\"", rc, l.text);
}

static void t_history(void)
{
    struct sl_store *w = fresh(), *r = NULL;
    struct sl_job_view a = job_view("a", "ml", SL_JOB_RUNNING);
    struct sl_job_view b = job_view("b", "cv", SL_JOB_CANCELLED);
    struct sl_job_view c = job_view("c", "ml", SL_JOB_PENDING);
    struct sl_usage_row u;
    struct hist_log l;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    ok(sl_store_job_insert(w, &a, 0) == 0 && sl_store_job_insert(w, &b, 0) == 0 &&
           sl_store_job_insert(w, &c, 0) == 0,
       "three jobs: one running again after a preemption, one cancelled, one pending");
    /* a: submitted, held and released, started, preempted, requeued,
     * started again; b: submitted, cancelled while pending; c: pending */
    ok(sl_store_event_add(w, 1, 1000, "state", NULL, "Pending", NULL) == 0 &&
           sl_store_event_add(w, 3, 500, "state", NULL, "Pending", NULL) == 0 &&
           sl_store_event_add(w, 2, 1200, "state", NULL, "Pending", NULL) == 0 &&
           sl_store_event_add(w, 1, 1500, "hold", "Pending", "Pending", NULL) == 0 &&
           sl_store_event_add(w, 1, 2000, "state", "Pending", "Running", NULL) == 0 &&
           sl_store_event_add(w, 1, 3000, "preempt", NULL, NULL, "for 9") == 0 &&
           sl_store_event_add(w, 1, 3500, "state", "Running", "Preempted", NULL) == 0 &&
           sl_store_event_add(w, 1, 3500, "requeue", "Preempted", "Pending", NULL) == 0 &&
           sl_store_event_add(w, 2, 4000, "state", "Pending", "Cancelled", NULL) == 0 &&
           sl_store_event_add(w, 1, 4200, "staged", "Pending", "Pending", NULL) == 0 &&
           sl_store_event_add(w, 1, 5000, "state", "Pending", "Running", NULL) == 0 &&
           sl_store_event_add(w, 1, 6000, "idle", NULL, NULL, "idle") == 0,
       "their events are added");
    u = usage(1, 0, "ml", 2000);
    sl_store_usage_open(w, &u);
    u.end_ms = 3500;
    u.has_util = true;
    u.util = 0.5;
    sl_store_usage_close(w, &u);
    u = usage(1, 0, "ml", 5000);
    u.attempt = 1;
    sl_store_usage_open(w, &u);
    u = usage(2, 0, "cv", 100);
    u.ngpus = 0;
    u.gpus = "";
    sl_store_usage_open(w, &u);
    ok(commit(w), "and their intervals");
    r = be->open_again(be->arg, false);
    if (!r)
        goto out;
    history_is(r, 0, 10000, NULL,
               "e1000 e1200 e3500 e500 l4000 n1 p3000 s2000<1000 s5000<3500 u2000-3500x2u0.5 "
               "u5000-0x2",
               "a scan gives the GPU intervals, the count of now and every change of Pending, "
               "a start with the time its job went into Pending");
    history_is(r, 1100, 4000, NULL,
               "e1200 e3500 l4000 n1 p3000 s2000<1000 s5000<3500 u2000-3500x2u0.5",
               "from bounds the transitions, to does not; a start's entry may be before from");
    history_is(r, 3600, 6000, NULL, "l4000 n1 s5000<3500 u5000-0x2",
               "intervals are those overlapping the window, the open one included");
    history_is(r, 0, 10000, "cv", "e1200 l4000 n0",
               "a team keeps its jobs' transitions and count, and its GPU intervals");
    history_is(r, 5001, 10000, "ml", "n1 u5000-0x2", "another team's likewise");
    memset(&l, 0, sizeof(l));
    l.stop_after = 1;
    is_int(sl_store_history_scan(r, 0, 10000, NULL, hist_usage, hist_event, &l), -EINTR,
           "a scan stops at a usage callback's negative return and returns it");
    memset(&l, 0, sizeof(l));
    l.stop_after = 3;
    is_int(sl_store_history_scan(r, 0, 10000, NULL, hist_usage, hist_event, &l), -EINTR,
           "and at an event callback's");
    is_int(l.calls, 3, "after that row");
out:
    sl_store_close(r);
    sl_store_close(w);
}

/* ---- budgets and carbon -------------------------------------------------- */

static int note_budget(void *arg, const char *name, const char *spec)
{
    char *text = arg;
    size_t n = strlen(text);
    snprintf(text + n, 128 - n, "%s%s=%s", n ? " " : "", name, spec);
    return 0;
}

/* A job of t_job_query: its columns beside job_view's. */
static bool query_job(struct sl_store *w, int64_t id, const char *name, const char *team,
                      const char *user, const char *queue, enum sl_job_state state,
                      int64_t submitted_ms, int64_t started_ms, const char *models)
{
    char spec[128];
    struct sl_job_view v = job_view(name, team, state);

    snprintf(spec, sizeof(spec), "{\"spec\":{\"resources\":{\"gpuModels\":%s}}}", models);
    v.id = id;
    v.user = user;
    v.queue = queue;
    v.submitted_ms = submitted_ms;
    v.started_ms = started_ms;
    v.finished_ms = sl_job_state_final(state) ? started_ms + 500 : 0;
    v.spec_json = models ? spec : "not JSON";
    if (id == 2) {
        v.priority_class = "prod";
        v.priority = 1000;
    }
    if (id >= 5) {
        v.array_job_id = 5;
        v.array_index = (int)(id - 5);
    }
    return sl_store_job_insert(w, &v, 0) == 0;
}

/* The total a scan counts for q, and that its page is the one without a
 * count. */
static void count_is(struct sl_store *st, const struct sl_store_job_query *q, int64_t want,
                     const char *name)
{
    struct ids with = {"", 0, 0}, without = {"", 0, 0};
    int64_t n = -1, next = -1, next2 = -1;
    int rc = sl_store_job_scan(st, q, note_id, &with, &next, &n);
    ok(rc == 0 && n == want && sl_store_job_scan(st, q, note_id, &without, &next2, NULL) == 0 &&
           strcmp(with.text, without.text) == 0 && next == next2,
       "%s", name);
    if (rc != 0 || n != want)
        diag("  got rc %d, %lld", rc, (long long)n);
}

static void t_job_query(void)
{
    struct sl_store *w = fresh();
    struct sl_usage_row u = usage(2, 0, "ml", 2100);
    struct sl_store_job_query q;
    struct ids s = {"", 0, 0};
    int64_t next, n;
    bool all = true;

    /* A query of these fields, with a limit of 100 unless it sets one. */
#define Q(...) (q = (struct sl_store_job_query){__VA_ARGS__}, q.limit += 100 * !q.limit, &q)
    if (!w || sl_store_begin(w) < 0)
        goto out;
    all &= query_job(w, 1, "train-a", "ml", "alice", "q1", SL_JOB_SUCCEEDED, 1000, 1100,
                     "[\"H100\"]");
    all &= query_job(w, 2, "Train-B", "ml", "bob", "q1", SL_JOB_FAILED, 2000, 2100, "[]");
    all &= query_job(w, 3, "eval_1", "cv", "alice", "q2", SL_JOB_PENDING, 2000, 0,
                     "[\"A100\",\"H100\"]");
    all &= query_job(w, 4, "eval%1", "cv", "carol", "q2", SL_JOB_RUNNING, 3000, 3100, "[]");
    all &= query_job(w, 5, "evalx1", "ml", "alice", "q1", SL_JOB_PENDING, 3000, 0, NULL);
    all &= query_job(w, 6, "sweep", "ml", "alice", "q1", SL_JOB_PENDING, 4000, 0, "[]");
    u.gpu_model = "h100";
    all &= sl_store_usage_open(w, &u) == 0;
    u = usage(4, 0, "cv", 3100);
    u.gpu_model = "A100";
    all &= sl_store_usage_open(w, &u) == 0;
    ok(all && commit(w), "6 jobs with names, users, queues, times, GPU models and an array "
                         "(one spec not JSON) are stored");

    query_is(w, Q(.queue = "q2"), "3 4", 0, "a queue keeps its jobs");
    query_is(w, Q(.user = "alice"), "1 3 5 6", 0, "a user keeps theirs");
    query_is(w, Q(.priority_class = "prod"), "2", 0, "a priority class keeps its jobs");
    query_is(w, Q(.array_job_id = 5), "5 6", 0, "an array keeps its elements");
    query_is(w, Q(.name_has = "TRAIN"), "1 2", 0, "a name search ignores ASCII case");
    query_is(w, Q(.name_has = "eval_1"), "3", 0, "'_' in a name search is itself, no wildcard");
    query_is(w, Q(.name_has = "l%1"), "4", 0, "so is '%'");
    query_is(w, Q(.name_has = "a\\b"), "", 0, "and '\\'");
    query_is(w, Q(.name_has = ""), "1 2 3 4 5 6", 0, "an empty search is none");
    query_is(w, Q(.gpu_model = "H100"), "1 2 3", 0,
             "a GPU model: the specs that ask for it and the jobs that ran on it, any case");
    query_is(w, Q(.gpu_model = "a100"), "3 4", 0, "another model, any case in the spec too");
    query_is(w, Q(.gpu_model = "H10"), "", 0, "a model is matched whole");
    query_is(w, Q(.user = "alice", .queue = "q1", .state_mask = 1u << SL_JOB_PENDING), "5 6", 0,
             "filters apply together");

    query_is(w, Q(.sort = SL_JOB_SORT_SUBMITTED), "1 2 3 4 5 6", 0,
             "sort by submit time, ties by id");
    query_is(w, Q(.sort = SL_JOB_SORT_SUBMITTED, .descending = true), "6 5 4 3 2 1", 0,
             "descending, ties by id descending");
    query_is(w, Q(.sort = SL_JOB_SORT_STARTED), "1 2 4 3 5 6", 0,
             "sort by start time: never started last");
    query_is(w, Q(.sort = SL_JOB_SORT_STARTED, .descending = true), "4 2 1 6 5 3", 0,
             "descending too");
    query_is(w, Q(.sort = SL_JOB_SORT_FINISHED, .descending = true), "2 1 6 5 4 3", 0,
             "sort by end time, latest first, not finished last");
    query_is(w, Q(.sort = SL_JOB_SORT_NAME), "2 4 3 5 6 1", 0, "sort by name in byte order");
    query_is(w, Q(.sort = SL_JOB_SORT_STATE), "3 5 6 4 1 2", 0,
             "sort by state in the lifecycle's order");
    query_is(w, Q(.sort = SL_JOB_SORT_PRIORITY, .descending = true), "2 6 5 4 3 1", 0,
             "sort by priority, highest first");
    query_is(w, Q(.sort = SL_JOB_SORT_TEAM), "3 4 1 2 5 6", 0, "sort by team");
    query_is(w, Q(.sort = SL_JOB_SORT_QUEUE, .descending = true), "4 3 6 5 2 1", 0,
             "sort by queue, descending");
    query_is(w, Q(.sort = SL_JOB_SORT_USER), "1 3 5 6 2 4", 0, "sort by user");
    query_is(w, Q(.sort = SL_JOB_SORT_SUBMITTED, .limit = 2, .offset = 2), "3 4", 4,
             "an offset skips; next is the page's last id when more follow");
    query_is(w, Q(.sort = SL_JOB_SORT_SUBMITTED, .limit = 2, .offset = 4), "5 6", 0,
             "the last page has no next");
    query_is(w, Q(.sort = SL_JOB_SORT_NAME, .team = "ml", .name_has = "a"), "2 5 1", 0,
             "a sort of filtered jobs");
    query_is(w, Q(.offset = 4), "5 6", 0, "an offset in id order");
    query_is(w, Q(.offset = 9), "", 0, "an offset past the end");
    query_is(w, Q(.descending = true), "6 5 4 3 2 1", 0, "id descending");
    query_is(w, Q(.descending = true, .limit = 2), "6 5", 5, "a page of it");
    query_is(w, Q(.descending = true, .after = 5, .limit = 2), "4 3", 3,
             "after goes on below the id when descending");
    query_is(w, Q(.descending = true, .after = 5, .offset = 1), "3 2 1", 0,
             "after then offset");

    count_is(w, Q(.sort = SL_JOB_SORT_ID), 6, "a count of every job");
    count_is(w, Q(.team = "ml", .name_has = "eval"), 1, "a count of filtered jobs");
    count_is(w, Q(.gpu_model = "h100", .after = 2, .offset = 1, .limit = 1,
                  .sort = SL_JOB_SORT_ID), 3, "after, offset and limit do not change a count");
    count_is(w, Q(.team = "none"), 0, "no job matches");
    is_int(sl_store_job_scan(w, &(struct sl_store_job_query){.limit = 0}, note_id, &s, &next,
                             NULL),
           -EINVAL, "a scan needs a limit");
    is_int(sl_store_job_scan(w, Q(.sort = SL_JOB_SORT_NAME, .after = 1), note_id, &s, &next,
                             NULL),
           -EINVAL, "after pages in id order only");
    n = -1;
    is_int(sl_store_job_scan(w, Q(.sort = SL_JOB_NSORTS), note_id, &s, &next, &n), -EINVAL,
           "an unknown sort is refused");
    is_int(n, 0, "and counts nothing");
    is_int(sl_store_job_scan(w, Q(.offset = -1), note_id, &s, &next, NULL), -EINVAL,
           "a negative offset is refused");
    if (sl_store_begin(w) == 0) {
        count_is(w, Q(.team = "cv"), 2, "a count inside the writer's transaction");
        sl_store_rollback(w);
    }
#undef Q
out:
    sl_store_close(w);
}

static void t_budgets(void)
{
    struct sl_store *w = fresh();
    char text[128] = "";
    json_t *j = NULL, *e;
    int rc = 0;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    is_int(sl_store_budget_upsert(w, "b1", "ml", "{\"a\":1}"), 1, "a new budget is created");
    is_int(sl_store_budget_upsert(w, "b1", "ml", "{\"a\":1}"), 0, "the same is unchanged");
    is_int(sl_store_budget_upsert(w, "b1", "ml", "{\"a\":2}"), 2, "a new spec updates it");
    is_int(sl_store_budget_upsert(w, "b0", "cv", "{}"), 1, "a second budget is created");
    is_int(sl_store_budget_event_add(w, "b1", 1000, 80, 1500, 80.5, 100), 1,
           "a threshold event is added");
    is_int(sl_store_budget_event_add(w, "b1", 1000, 80, 1600, 90, 100), 0,
           "the same threshold of the same period is not added again");
    is_int(sl_store_budget_event_add(w, "b1", 1000, 100, 1700, 101, 100), 1,
           "another threshold of that period is");
    is_int(sl_store_budget_event_add(w, "b1", 2000, 80, 2500, 81, 100), 1,
           "and the same threshold of the next period");
    is_int(sl_store_budget_event_add(w, "b0", 1000, 80, 1800, 8, 10), 1,
           "another budget's event is added");
    ok(commit(w), "budgets commit");
    ok(sl_store_budgets_load(w, note_budget, text) == 0, "budgets load");
    is_str(text, "b0={} b1={\"a\":2}", "by name, with their spec");
    j = sl_store_budget_events(w, "b1", &rc);
    ok(rc == 0 && json_array_size(j) == 3, "a budget's events are listed");
    e = json_array_get(j, 0);
    ok(strcmp(json_string_value(json_object_get(e, "budget")), "b1") == 0 &&
           json_integer_value(json_object_get(e, "threshold_percent")) == 80 &&
           json_real_value(json_object_get(e, "used")) == 80.5 &&
           json_real_value(json_object_get(e, "limit")) == 100 &&
           json_is_string(json_object_get(e, "at")) &&
           json_is_string(json_object_get(e, "period_start")),
       "the first as it was added: budget, threshold, used, limit, times");
    ok(json_integer_value(json_object_get(json_array_get(j, 1), "threshold_percent")) == 100,
       "in the order added");
    json_decref(j);
    j = sl_store_budget_events(w, NULL, &rc);
    ok(rc == 0 && json_array_size(j) == 4, "every budget's events are listed");
    json_decref(j);
out:
    sl_store_close(w);
}

#define H 3600000LL

static void t_carbon(void)
{
    struct sl_store *w = fresh();
    struct sl_carbon_hours *h = NULL;
    size_t n = 9;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    ok(sl_store_carbon_put(w, "a", 0, 100) == 0 && sl_store_carbon_put(w, "a", H, 110) == 0 &&
           sl_store_carbon_put(w, "a", 3 * H, 130) == 0 &&
           sl_store_carbon_put(w, "b", 2 * H, 200) == 0 &&
           sl_store_carbon_put(w, "a", H, 111) == 0 && commit(w),
       "hours are put, one of them twice");
    ok(sl_store_carbon_load(w, 0, 5 * H, &h, &n) == 0 && n == 2, "a window loads two sites");
    ok(n == 2 && strcmp(h[0].site, "a") == 0 && h[0].start_ms == 0 && h[0].n == 4 &&
           h[0].g[0] == 100 && h[0].g[1] == 111 && isnan(h[0].g[2]) && h[0].g[3] == 130,
       "a site's hours run from its first to its last, NaN between, the last put wins");
    ok(n == 2 && strcmp(h[1].site, "b") == 0 && h[1].start_ms == 2 * H && h[1].n == 1 &&
           h[1].g[0] == 200,
       "sites come by name");
    sl_carbon_hours_free(h, n);
    h = NULL;
    ok(sl_store_carbon_load(w, H + 5, 3 * H, &h, &n) == 0 && n == 2 && h[0].start_ms == H &&
           h[0].n == 1 && h[0].g[0] == 111 && h[1].n == 1,
       "the window starts at the hour of its start and ends before its end");
    sl_carbon_hours_free(h, n);
    h = NULL;
    ok(sl_store_carbon_load(w, 10 * H, 20 * H, &h, &n) == 0 && n == 0 && !h,
       "an empty window loads nothing");
    sl_carbon_hours_free(NULL, 0);
out:
    sl_store_close(w);
}

/* ---- the audit log ------------------------------------------------------- */

struct audit_log {
    char text[256];
    int stop_after, stop_rc;
    int n;
    bool lines_ok;
    char object4[16];             /* record 4's object */
};

static int note_audit(void *arg, const struct sl_store_audit_row *row)
{
    struct audit_log *l = arg;
    size_t len = strlen(l->text);
    char want[64];
    snprintf(l->text + len, sizeof(l->text) - len, "%s%lld", len ? " " : "",
             (long long)row->seq);
    snprintf(want, sizeof(want), "line %lld by %s", (long long)row->seq, row->actor);
    l->lines_ok &= row->len == strlen(want) && memcmp(row->line, want, row->len) == 0 &&
                   row->at_ms == row->seq * 1000;
    if (row->seq == 4)
        snprintf(l->object4, sizeof(l->object4), "%s", row->object);
    return ++l->n == l->stop_after ? l->stop_rc : 0;
}

static void audit_is(struct sl_store *st, struct sl_audit_filter f, const char *want,
                     const char *name)
{
    struct audit_log l = {.lines_ok = true};
    int rc = sl_store_audit_scan(st, &f, note_audit, &l);
    ok(rc == 0 && strcmp(l.text, want) == 0 && l.lines_ok, "%s", name);
    if (rc != 0 || strcmp(l.text, want) != 0)
        diag("  got rc %d, \"%s\"", rc, l.text);
}

static void t_audit(void)
{
    static const char *const actors[] = {"alice", "bob", "alice", "root", "bob"};
    static const char *const actions[] = {"submit", "cancel", "submit", "apply", "submit"};
    static const char *const outcomes[] = {"ok", "ok", "denied", "ok", "ok"};
    struct sl_store *w = fresh();
    unsigned char hash[32], got[32];
    int64_t size = -1;
    struct audit_log l = {.lines_ok = true};
    bool all = true;
    char *text;
    int rc;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    ok(sl_store_audit_head(w, &size, got) == 0 && size == 0 && got[0] == 0 && got[31] == 0,
       "an empty log's head is 0 and zeros");
    for (int i = 1; i <= 5; i++) {
        char line[64];
        int len = snprintf(line, sizeof(line), "line %d by %s", i, actors[i - 1]);
        hash_of(hash, i);
        all &= sl_store_audit_add(w, i, i * 1000, actors[i - 1], actions[i - 1],
                                  i == 4 ? NULL : "job/1", outcomes[i - 1], line,
                                  (size_t)len, hash) == 0;
    }
    ok(all, "records are added");
    is_int(sl_store_audit_add(w, 3, 1, "x", "y", "z", "ok", "l", 1, hash), -EEXIST,
           "a seq already stored is -EEXIST");
    ok(commit(w), "the log commits");
    hash_of(hash, 5);
    ok(sl_store_audit_head(w, &size, got) == 0 && size == 5 && memcmp(got, hash, 32) == 0,
       "the head is the last record's seq and hash");
    audit_is(w, (struct sl_audit_filter){0}, "1 2 3 4 5",
             "a scan gives every record by seq with its line");
    audit_is(w, (struct sl_audit_filter){.after = 2}, "3 4 5", "after skips up to a seq");
    audit_is(w, (struct sl_audit_filter){.limit = 2}, "1 2", "limit stops it");
    audit_is(w, (struct sl_audit_filter){.actor = "bob"}, "2 5", "an actor filters");
    audit_is(w, (struct sl_audit_filter){.action = "submit"}, "1 3 5", "an action filters");
    audit_is(w, (struct sl_audit_filter){.object = "job/1"}, "1 2 3 5", "an object filters");
    audit_is(w, (struct sl_audit_filter){.outcome = "denied"}, "3", "an outcome filters");
    audit_is(w, (struct sl_audit_filter){.from_ms = 2000, .to_ms = 4000}, "2 3",
             "a time window is [from, to)");
    audit_is(w, (struct sl_audit_filter){.actor = "alice", .action = "submit", .after = 1},
             "3", "filters apply together");
    audit_is(w, (struct sl_audit_filter){.actor = "", .object = ""}, "1 2 3 4 5",
             "an empty filter string matches any");
    l.stop_after = 5;
    l.stop_rc = 1;
    sl_store_audit_scan(w, &(struct sl_audit_filter){0}, note_audit, &l);
    is_str(l.object4, "", "a NULL object is stored as \"\"");
    memset(&l, 0, sizeof(l));
    l.stop_after = 2;
    l.stop_rc = 1;
    is_int(sl_store_audit_scan(w, &(struct sl_audit_filter){0}, note_audit, &l), 0,
           "a positive return stops a scan, which returns 0");
    is_str(l.text, "1 2", "after that row");
    memset(&l, 0, sizeof(l));
    l.stop_after = 1;
    l.stop_rc = -EINTR;
    is_int(sl_store_audit_scan(w, &(struct sl_audit_filter){0}, note_audit, &l), -EINTR,
           "a negative return is returned");
    text = sl_store_audit_checkpoint_last(w, &rc);
    ok(!text && rc == -ENOENT, "no checkpoint yet is -ENOENT");
    ok(sl_store_begin(w) == 0 && sl_store_audit_checkpoint_put(w, 3, 100, "c3") == 0 &&
           sl_store_audit_checkpoint_put(w, 5, 200, "c5") == 0 &&
           sl_store_audit_checkpoint_put(w, 4, 300, "c4") == 0 && commit(w),
       "checkpoints are stored");
    text = sl_store_audit_checkpoint_last(w, &rc);
    ok(rc == 0 && str_eq(text, "c5"), "the last checkpoint is that of the largest size");
    free(text);
    ok(sl_store_begin(w) == 0 && sl_store_audit_checkpoint_put(w, 5, 400, "c5b") == 0 &&
           commit(w),
       "a checkpoint of the same size is stored again");
    text = sl_store_audit_checkpoint_last(w, &rc);
    ok(rc == 0 && str_eq(text, "c5b"), "and replaces the first");
    free(text);
out:
    sl_store_close(w);
}

/* ---- governed objects ---------------------------------------------------- */

static int note_obj(void *arg, const char *name, const char *spec)
{
    struct audit_log *l = arg;
    size_t len = strlen(l->text);
    snprintf(l->text + len, sizeof(l->text) - len, "%s%s=%s", len ? " " : "", name, spec);
    return ++l->n == l->stop_after ? l->stop_rc : 0;
}

static void t_objects(void)
{
    struct sl_store *w = fresh();
    struct audit_log l = {.n = 0};
    char *text;
    int rc;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    is_int(sl_store_obj_put(w, "Policy", "p2", "{\"a\":1}"), 1, "a new object is created");
    is_int(sl_store_obj_put(w, "Policy", "p2", "{\"a\":1}"), 0, "the same is unchanged");
    is_int(sl_store_obj_put(w, "Policy", "p2", "{\"a\":2}"), 2, "a new spec updates it");
    is_int(sl_store_obj_put(w, "Policy", "p1", "{}"), 1, "another name is another object");
    is_int(sl_store_obj_put(w, "Dataset", "p1", "{\"d\":1}"), 1,
           "the same name of another kind is another object");
    ok(commit(w), "objects commit");
    text = sl_store_obj_get(w, "Policy", "p2", &rc);
    ok(rc == 0 && str_eq(text, "{\"a\":2}"), "get gives the stored document");
    free(text);
    text = sl_store_obj_get(w, "Model", "p2", &rc);
    ok(!text && rc == -ENOENT, "an unknown object is -ENOENT");
    ok(sl_store_objs_each(w, "Policy", note_obj, &l) == 0 &&
           strcmp(l.text, "p1={} p2={\"a\":2}") == 0,
       "each gives the objects of a kind by name");
    memset(&l, 0, sizeof(l));
    l.stop_after = 1;
    l.stop_rc = 5;
    ok(sl_store_objs_each(w, "Policy", note_obj, &l) == 0 && l.n == 1,
       "a positive return stops each, which returns 0");
    memset(&l, 0, sizeof(l));
    l.stop_after = 1;
    l.stop_rc = -EINTR;
    is_int(sl_store_objs_each(w, "Policy", note_obj, &l), -EINTR,
           "a negative return is returned");
    ok(sl_store_begin(w) == 0 && sl_store_obj_del(w, "Policy", "p2") == 0,
       "an object is deleted");
    is_int(sl_store_obj_del(w, "Policy", "p2"), -ENOENT, "a deleted object is -ENOENT");
    ok(commit(w), "the delete commits");
    text = sl_store_obj_get(w, "Policy", "p2", &rc);
    ok(!text && rc == -ENOENT, "and it is gone");
    text = sl_store_obj_get(w, "Dataset", "p1", &rc);
    ok(rc == 0 && str_eq(text, "{\"d\":1}"), "the other kind's object stays");
    free(text);
out:
    sl_store_close(w);
}

/* ---- a rolled-back request leaves nothing -------------------------------- */

static void t_rollback_to_everything(void)
{
    struct sl_store *w = fresh();
    struct sl_job_view v = job_view("gone", "ml", SL_JOB_PENDING);
    struct sl_usage_row u = usage(1, 0, "ml", 1000);
    unsigned char hash[32];
    struct sl_token_who who;
    int64_t max = -1, size = -1;
    char *text;
    int rc;
    json_t *j;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    hash_of(hash, 1);
    sl_store_team_upsert(w, "ml", "ml");
    sl_store_user_upsert(w, "alice", "ml", "user", "");
    ok(sl_store_savepoint(w) == 0 && sl_store_job_insert(w, &v, 0) == 0 &&
           sl_store_event_add(w, v.id, 1, "state", NULL, "Pending", NULL) == 0 &&
           sl_store_job_lineage(w, v.id, "{}") == 0 && sl_store_usage_open(w, &u) == 0 &&
           sl_store_token_insert(w, hash, "alice", 0, "", v.id, NULL) == 0 &&
           sl_store_audit_add(w, 1, 1, "a", "b", "c", "ok", "l", 1, hash) == 0 &&
           sl_store_obj_put(w, "Model", "m", "{}") == 1 &&
           sl_store_budget_upsert(w, "b", "ml", "{}") == 1 &&
           sl_store_budget_event_add(w, "b", 1, 80, 1, 1, 1) == 1 &&
           sl_store_carbon_put(w, "s", 0, 1) == 0 &&
           sl_store_team_upsert(w, "cv", "cv") == 1 && sl_store_meta_set(w, "m", "1") == 0,
       "one request writes to every table in a savepoint");
    ok(sl_store_rollback_to(w) == 0 && commit(w), "the request is rolled back, the rest kept");
    ok(sl_store_job_max_id(w, &max) == 0 && max == 0 &&
           sl_store_job_read(w, 1, copy_job, &(struct job_copy){0}) == -ENOENT,
       "no job is left");
    j = sl_store_events(w, 1, &rc);
    ok(json_array_size(j) == 0, "no event is left");
    json_decref(j);
    text = sl_store_obj_get(w, "Model", "m", &rc);
    ok(!text && rc == -ENOENT && sl_store_token_lookup(w, hash, 0, &who) == -ENOENT &&
           sl_store_audit_head(w, &size, hash) == 0 && size == 0 && meta_is(w, "m", NULL),
       "no object, token, audit record or meta is left");
    j = sl_store_teams(w, &rc);
    ok(json_array_size(j) == 1, "no team is left but the one from before");
    json_decref(j);
    usage_is(w, 0, INT64_MAX, NULL, 0, "", "no usage is left");
out:
    sl_store_close(w);
}

/* Deleting catalog rows: each kind by name, a user's tokens with it, the
 * live ones counted before; what is gone stays gone after a reload. */
static void t_catalog_del(void)
{
    struct sl_store *w = fresh();
    unsigned char h[3][32];
    struct sl_token_who who;

    if (!w || sl_store_begin(w) < 0)
        goto out;
    for (int i = 0; i < 3; i++)
        hash_of(h[i], 40 + i);
    sl_store_team_upsert(w, "ml", "ml");
    sl_store_queue_upsert(w, "ml", "ml", NULL);
    sl_store_queue_upsert(w, "gpu", "ml", NULL);
    sl_store_cohort_upsert(w, "c1", "");
    sl_store_pclass_upsert(w, "batch", 100, true, false, false, 0);
    sl_store_user_upsert(w, "alice", "ml", "member", "");
    sl_store_budget_upsert(w, "b1", "ml", "{}");
    sl_store_token_insert(w, h[0], "alice", 0, "live", 0, NULL);
    sl_store_token_insert(w, h[1], "alice", 1000, "expired", 0, NULL);
    ok(commit(w), "a catalog to delete from commits");
    is_int(sl_store_user_tokens_live(w, "alice", 5000), 1, "one live token of alice at 5000");
    is_int(sl_store_user_tokens_live(w, "alice", 500), 2, "two at 500");
    is_int(sl_store_user_tokens_live(w, "nobody", 500), 0, "none of an unknown user");
    if (sl_store_begin(w) < 0)
        goto out;
    is_int(sl_store_catalog_del(w, "Queue", "gpu"), 0, "a queue is deleted");
    is_int(sl_store_catalog_del(w, "Queue", "gpu"), -ENOENT, "again: -ENOENT");
    is_int(sl_store_catalog_del(w, "Cohort", "c1"), 0, "a cohort is deleted");
    is_int(sl_store_catalog_del(w, "PriorityClass", "batch"), 0, "a class is deleted");
    is_int(sl_store_catalog_del(w, "Budget", "b1"), 0, "a budget is deleted");
    is_int(sl_store_catalog_del(w, "User", "alice"), 0, "a user with tokens is deleted");
    is_int(sl_store_token_lookup(w, h[0], 5000, &who), -ENOENT, "and its token with it");
    is_int(sl_store_user_tokens_live(w, "alice", 0), 0, "no token of alice is left");
    is_int(sl_store_catalog_del(w, "Queue", "ml"), 0, "the team's queue is deleted");
    is_int(sl_store_catalog_del(w, "Team", "ml"), 0, "then the team");
    is_int(sl_store_catalog_del(w, "Widget", "ml"), -EINVAL, "another kind is -EINVAL");
    ok(commit(w), "the deletes commit");
    {
        json_t *j = sl_store_teams(w, &(int){0});
        is_json(j, "[]", "no team is left");
        json_decref(j);
        j = sl_store_pclasses(w, &(int){0});
        is_json(j, "[]", "no class is left");
        json_decref(j);
    }
out:
    sl_store_close(w);
}

int sl_store_conformance(const struct sl_store_conformance *backend)
{
    static void (*const groups[])(void) = {
        t_transactions, t_sync_thread, t_reopen, t_upserts, t_load,
        t_tokens, t_token_list, t_job_insert, t_job_columns, t_job_scan, t_job_query,
        t_events_lineage, t_attempts, t_usage, t_history, t_budgets, t_carbon, t_audit,
        t_objects, t_rollback_to_everything, t_catalog_del,
    };

    be = backend;
    for (size_t i = 0; i < SL_ARRAY_LEN(groups); i++)
        groups[i]();
    return done_testing();
}
