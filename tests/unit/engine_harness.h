/*
 * engine_harness.h - what the engine's module tests share
 * (test_engine_meter.c, test_engine_govern.c, test_engine_launch.c): an
 * engine without the HTTP server in a temporary data dir, on an injected
 * clock, driven by operations as the API would send them.
 *
 * Time: the engine's wall and monotonic clocks (sl_engine_config.now_ms,
 * mono_ms) and its executor's read h_clock, which only the test moves;
 * nothing waits for time to pass. h_sync() returns once the engine has
 * been through a whole loop iteration after the call (the executor's
 * events, timers, the meter's tick, the scheduler, the commit, the launch
 * of what it placed) at the clock's present value. A submission is
 * answered after the commit that placed it but maybe before its launch:
 * h_sync() after it, before the clock moves, so that the executor starts
 * it at the time it was placed.
 *
 * Everything here is static inline, so that each test uses what it needs.
 */
#ifndef SL_TEST_ENGINE_HARNESS_H
#define SL_TEST_ENGINE_HARNESS_H

#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../src/engine/engine.h"
#include "../tap.h"

/* 2026-03-10T08:00:00Z: a Tuesday, ten days into a calendar month. */
#define H_T0 1773129600000LL
#define H_MIN 60000LL

static _Atomic int64_t h_clock = H_T0;

static inline int64_t h_now(void) { return atomic_load(&h_clock); }
static inline int64_t h_mono(void) { return atomic_load(&h_clock); }
static inline void h_clock_set(int64_t ms) { atomic_store(&h_clock, ms); }

/* One operation's round trip. */
struct h_call {
    struct sl_op op;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool done;
};

static inline void h_call_done(struct sl_op *op, void *arg)
{
    struct h_call *c = arg;

    (void)op;
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

/* An operation of 'kind' by 'user' of 'team' with 'role' (job_id 0). */
static inline struct h_call *h_call_new(enum sl_op_kind kind, const char *user,
                                        const char *team, const char *role)
{
    struct h_call *c = calloc(1, sizeof(*c));

    if (!c) {
        perror("calloc");
        exit(2);
    }
    c->op.kind = kind;
    snprintf(c->op.who.user, sizeof(c->op.who.user), "%s", user);
    snprintf(c->op.who.team, sizeof(c->op.who.team), "%s", team);
    snprintf(c->op.who.role, sizeof(c->op.who.role), "%s", role);
    c->op.done = h_call_done;
    c->op.arg = c;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, NULL);
    return c;
}

/* Submit and wait for the answer; returns its HTTP status. */
static inline int h_call_run(struct sl_engine *e, struct h_call *c)
{
    sl_engine_submit(e, &c->op);
    pthread_mutex_lock(&c->mu);
    while (!c->done)
        pthread_cond_wait(&c->cond, &c->mu);
    pthread_mutex_unlock(&c->mu);
    return c->op.status;
}

static inline void h_call_free(struct h_call *c)
{
    if (!c)
        return;
    sl_op_fini(&c->op);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cond);
    free(c);
}

/* The answer's body as JSON (result or body text); a new reference. */
static inline json_t *h_call_json(const struct h_call *c)
{
    if (c->op.body)
        return json_loadb(c->op.body, c->op.body_len, 0, NULL);
    return c->op.result ? json_incref(c->op.result) : NULL;
}

/* One operation that changes nothing (the record of a refused request,
 * action "test.sync"), so its answer follows a whole loop iteration. */
static inline void h_barrier(struct sl_engine *e)
{
    struct h_call *c = h_call_new(SL_OP_AUDIT, "harness", "default", "admin");

    c->op.action = "test.sync";
    c->op.status = 403;
    c->op.code = "forbidden";
    snprintf(c->op.err.text, sizeof(c->op.err.text), "a barrier");
    h_call_run(e, c);
    h_call_free(c);
}

/* Two barriers: the first's iteration ran every due event, timer, tick
 * and pass at the clock's value; the second begins only after that
 * iteration launched what it placed. */
static inline void h_sync(struct sl_engine *e)
{
    h_barrier(e);
    h_barrier(e);
}

/* Apply 'yaml' as 'role' 'user' of 'team'; returns the status. 'err' (may
 * be NULL) receives the refusal's field and text. */
static inline int h_apply(struct sl_engine *e, const char *yaml, const char *user,
                          const char *team, const char *role, struct sl_error *err)
{
    struct h_call *c = h_call_new(SL_OP_APPLY, user, team, role);
    struct sl_error perr = {"", ""};
    int st;

    if (sl_manifests_parse(yaml, strlen(yaml), &c->op.u.apply.manifests, &c->op.u.apply.n,
                           &perr) < 0) {
        diag("manifest: %s: %s", perr.field, perr.text);
        h_call_free(c);
        return -1;
    }
    st = h_call_run(e, c);
    if (err)
        *err = c->op.err;
    if (st != 200)
        diag("apply: %d %s: %s", st, c->op.err.field, c->op.err.text);
    h_call_free(c);
    return st;
}

/* Submit job spec 'yaml' as 'role' 'user' of 'team'; returns the status,
 * *id the job's id (0 when refused), 'err' (may be NULL) the refusal. */
static inline int h_submit(struct sl_engine *e, const char *yaml, const char *user,
                           const char *team, const char *role, int64_t *id,
                           struct sl_error *err)
{
    struct h_call *c = h_call_new(SL_OP_SUBMIT, user, team, role);
    struct sl_error perr = {"", ""};
    json_t *o;
    int st;

    *id = 0;
    if (sl_job_spec_parse(yaml, strlen(yaml), &c->op.u.submit.spec, &perr) < 0) {
        diag("spec: %s: %s", perr.field, perr.text);
        h_call_free(c);
        return -1;
    }
    st = h_call_run(e, c);
    if (err)
        *err = c->op.err;
    o = h_call_json(c);
    *id = json_integer_value(json_object_get(o, "id"));
    json_decref(o);
    h_call_free(c);
    return st;
}

/* Job 'id' as the store has it (the API's job object), or NULL. */
static inline json_t *h_job(struct sl_store *rd, int64_t id)
{
    json_t *j = NULL;

    if (sl_store_job_read(rd, id, sl_job_view_json_fn, &j) < 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* String member 'key' of job 'id' as stored ("" when absent). */
static inline const char *h_job_str(struct sl_store *rd, int64_t id, const char *key, char *buf,
                                    size_t size)
{
    json_t *j = h_job(rd, id);
    const char *v = json_string_value(json_object_get(j, key));

    snprintf(buf, size, "%s", v ? v : "");
    json_decref(j);
    return buf;
}

/* Its state's name ("" when it has no row). */
static inline const char *h_job_state(struct sl_store *rd, int64_t id, char *buf, size_t size)
{
    return h_job_str(rd, id, "state", buf, size);
}

/* How many of job 'id''s events have type 'type'; the first one's message
 * into 'msg' (may be NULL). */
static inline int h_events(struct sl_store *rd, int64_t id, const char *type, char *msg,
                           size_t size)
{
    int rc = 0, n = 0;
    json_t *evs = sl_store_events(rd, id, &rc), *ev;
    size_t i;

    if (msg && size)
        msg[0] = '\0';
    json_array_foreach(evs, i, ev)
    {
        const char *m = json_string_value(json_object_get(ev, "message"));
        if (strcmp(json_string_value(json_object_get(ev, "type")), type) != 0)
            continue;
        if (n++ == 0 && msg)
            snprintf(msg, size, "%s", m ? m : "");
    }
    json_decref(evs);
    return n;
}

static inline int h_count_row(void *arg, const struct sl_store_audit_row *row)
{
    (void)row;
    (*(int *)arg)++;
    return 0;
}

/* Records of the audit log with 'action' and 'outcome' (NULL = any). */
static inline int h_audit_count(struct sl_store *rd, const char *action, const char *outcome)
{
    struct sl_audit_filter f = {.action = action, .outcome = outcome};
    int n = 0;

    sl_store_audit_scan(rd, &f, h_count_row, &n);
    return n;
}

/* A new engine on 'dir'/data (created if need be) with the settings of
 * 'cfg' and the harness's clock; not started. *token (may be NULL) gets
 * the admin token of a new store (caller frees). */
static inline struct sl_engine *h_engine_create(const char *dir, struct sl_engine_config cfg,
                                                char **token)
{
    char data[256];
    struct sl_error err = {"", ""};
    struct sl_engine *e;
    char *t = NULL;

    snprintf(data, sizeof(data), "%s/data", dir);
    cfg.data_dir = data;
    cfg.now_ms = h_now;
    cfg.mono_ms = h_mono;
    if (!cfg.log_cap_bytes)
        cfg.log_cap_bytes = 1 << 20;
    if (!cfg.retry_backoff_ms)
        cfg.retry_backoff_ms = 1000;
    if (!cfg.cancel_grace_ms)
        cfg.cancel_grace_ms = 1000;
    if (!(e = sl_engine_create(&cfg, &t, &err)))
        diag("engine: %s", err.text);
    if (token)
        *token = t;
    else
        free(t);
    return e;
}

/* A reader connection to the store of the engine on 'dir'. */
static inline struct sl_store *h_reader(const char *dir)
{
    char path[256];
    struct sl_error err = {"", ""};
    struct sl_store *rd;

    snprintf(path, sizeof(path), "%s/data/sluice.db", dir);
    if (!(rd = sl_store_open(path, false, false, &err)))
        diag("reader: %s", err.text);
    return rd;
}

static inline int h_rm_entry(const char *path, const struct stat *st, int flag,
                             struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Remove 'dir' and everything under it. */
static inline void h_rmtree(const char *dir)
{
    nftw(dir, h_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
