/*
 * test_engine.c - the engine without a daemon: no HTTP, no API, the
 * simulated executor on fake GPUs in a temporary data dir. Operations go
 * in through sl_engine_submit as the API would send them, and come back
 * through their done callback; the engine's readers and a reader
 * connection to the store show what they did.
 *
 * What it checks, module by module: the operation table (a payload per
 * kind, its audit action), the catalog (apply of a team and its queue,
 * one document refused changes nothing), team-admin rules, submission and
 * admission, the job lifecycle through the executor's events (a job
 * placed, run by the simulated executor and Succeeded; a cancel of a
 * running job ending Cancelled), tokens, the audit writer (every change
 * and refusal recorded in its transaction), and recovery (a second engine
 * on the same data dir loads what the first committed).
 *
 * Jobs "run" for their sim-duration on the wall clock, so the test waits
 * for their end against a deadline (never a fixed sleep).
 */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/engine/engine.h"
#include "../../src/policy/roles.h"
#include "../tap.h"

#define DEADLINE_MS 20000

static char tmpdir[64];

/* One operation's round trip. */
struct call {
    struct sl_op op;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool done;
};

static void call_done(struct sl_op *op, void *arg)
{
    struct call *c = arg;

    (void)op;
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

static struct call *call_new(enum sl_op_kind kind, const char *user, const char *team,
                             const char *role)
{
    struct call *c = calloc(1, sizeof(*c));

    c->op.kind = kind;
    snprintf(c->op.who.user, sizeof(c->op.who.user), "%s", user);
    snprintf(c->op.who.team, sizeof(c->op.who.team), "%s", team);
    snprintf(c->op.who.role, sizeof(c->op.who.role), "%s", role);
    c->op.done = call_done;
    c->op.arg = c;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, NULL);
    return c;
}

/* Submit and wait for the answer; returns its HTTP status. */
static int call_run(struct sl_engine *e, struct call *c)
{
    sl_engine_submit(e, &c->op);
    pthread_mutex_lock(&c->mu);
    while (!c->done)
        pthread_cond_wait(&c->cond, &c->mu);
    pthread_mutex_unlock(&c->mu);
    return c->op.status;
}

static void call_free(struct call *c)
{
    sl_op_fini(&c->op);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cond);
    free(c);
}

/* POST /v1/apply of 'yaml' by 'role' of 'team'. */
static int apply(struct sl_engine *e, const char *yaml, const char *user, const char *team,
                 const char *role, char *field, size_t field_size)
{
    struct call *c = call_new(SL_OP_APPLY, user, team, role);
    struct sl_error err = {"", ""};
    int st;

    if (sl_manifests_parse(yaml, strlen(yaml), &c->op.u.apply.manifests, &c->op.u.apply.n,
                           &err) < 0) {
        diag("manifest: %s: %s", err.field, err.text);
        call_free(c);
        return -1;
    }
    st = call_run(e, c);
    if (field)
        snprintf(field, field_size, "%s", c->op.err.field);
    call_free(c);
    return st;
}

/* POST /v1/jobs of a job of team 'team' running for 'duration'. Returns
 * the status; *id gets the job's id. */
static int submit(struct sl_engine *e, const char *team, const char *duration, int64_t *id)
{
    struct call *c = call_new(SL_OP_SUBMIT, "admin", "default", "admin");
    struct sl_error err = {"", ""};
    char yaml[512];
    json_t *o;
    int st;

    snprintf(yaml, sizeof(yaml),
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: t, team: %s, "
             "labels: {sim-duration: %s}}\nspec: {command: [train], resources: {gpus: 1}}\n",
             team, duration);
    if (sl_job_spec_parse(yaml, strlen(yaml), &c->op.u.submit.spec, &err) < 0) {
        diag("spec: %s", err.text);
        call_free(c);
        return -1;
    }
    st = call_run(e, c);
    o = c->op.body ? json_loads(c->op.body, 0, NULL) : NULL;
    *id = json_integer_value(json_object_get(o, "id"));
    json_decref(o);
    call_free(c);
    return st;
}

/* The state of job 'id' as the store has it ("" when it has no row). */
static int state_fn(void *arg, const struct sl_job_view *v)
{
    snprintf(arg, 32, "%s", sl_job_state_name(v->state));
    return 0;
}

static void job_state(struct sl_store *rd, int64_t id, char *buf, size_t size)
{
    char state[32] = "";

    if (sl_store_job_read(rd, id, state_fn, state) < 0)
        state[0] = '\0';
    snprintf(buf, size, "%s", state);
}

static bool wait_state(struct sl_store *rd, int64_t id, const char *want)
{
    char state[32] = "";

    for (int waited = 0; waited < DEADLINE_MS; waited += 20) {
        struct timespec ts = {0, 20 * 1000000L};
        job_state(rd, id, state, sizeof(state));
        if (strcmp(state, want) == 0)
            return true;
        nanosleep(&ts, NULL);
    }
    diag("job %lld is %s, not %s", (long long)id, state, want);
    return false;
}

static int count_row(void *arg, const struct sl_store_audit_row *row)
{
    (void)row;
    (*(int *)arg)++;
    return 0;
}

/* Records of the audit log whose action is 'action' and outcome 'outcome'. */
static int audit_count(struct sl_store *rd, const char *action, const char *outcome)
{
    struct sl_audit_filter f = {.action = action, .outcome = outcome};
    int n = 0;

    sl_store_audit_scan(rd, &f, count_row, &n);
    return n;
}

static struct sl_engine *engine_new(char **token)
{
    char data[128];
    struct sl_engine_config cfg = {
        .data_dir = data,
        .sync_full = false,
        .fake_gpus = "4xH100",
        .executor = "simulated",
        .log_cap_bytes = 1 << 20,
        .retry_backoff_ms = 1000,
        .cancel_grace_ms = 1000,
        .job_user = "nobody",
        .allow_daemon_user = "",
    };
    struct sl_error err = {"", ""};
    struct sl_engine *e;

    snprintf(data, sizeof(data), "%s/data", tmpdir);
    if (!(e = sl_engine_create(&cfg, token, &err)))
        diag("engine: %s", err.text);
    else if (sl_engine_start(e) < 0)
        diag("engine thread did not start");
    return e;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

int main(void)
{
    char *token = NULL, field[96] = "", path[160], state[32];
    struct sl_store *rd = NULL;
    struct sl_error err = {"", ""};
    struct sl_engine *e;
    int64_t a = 0, b = 0;
    struct call *c;

    sl_log_set_level(SL_LOG_WARN);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-engine.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        ok(0, "a temp dir");
        return done_testing();
    }
    e = engine_new(&token);
    ok(e && token && strncmp(token, "sl_", 3) == 0,
       "an engine on a new data dir bootstraps and gives the admin token");
    free(token);
    token = NULL;
    if (!e)
        return done_testing();
    snprintf(path, sizeof(path), "%s/data/sluice.db", tmpdir);
    rd = sl_store_open(path, false, false, &err);
    ok(rd != NULL, "a reader connection to its store (%s)", err.text);

    /* the operation table */
    is_int(sl_op_scope(SL_OP_SUBMIT), SL_SC_JOBS_WRITE, "submitting needs jobs.write");
    is_int(sl_op_scope(SL_OP_APPLY), SL_SC_MANAGE, "applying needs manage");
    is_int(sl_op_scope(SL_OP_CARBON), SL_SC_ADMIN, "carbon intensity is an admin's");
    is_str(sl_op_action(SL_OP_CANCEL), "job.cancel", "a cancel is recorded as job.cancel");
    ok(!sl_role_may(sl_role_of("viewer", 0), sl_op_scope(SL_OP_SUBMIT)) &&
           sl_role_may(sl_role_of("member", 0), sl_op_scope(SL_OP_SUBMIT)) &&
           !sl_role_may(sl_role_of("member", 7), sl_op_scope(SL_OP_SUBMIT)),
       "a viewer and a job's token may not submit, a member may");

    /* the catalog */
    is_int(apply(e,
                 "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: vision}\n---\n"
                 "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision}\n"
                 "spec: {team: vision, nominal: {gpus: 2}}\n---\n"
                 "apiVersion: sluice/v1\nkind: User\nmetadata: {name: vic}\n"
                 "spec: {team: vision, role: team-admin}\n",
                 "admin", "default", "admin", NULL, 0),
           200, "an admin applies a team, its queue and a team-admin");
    is_int(apply(e,
                 "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: nlp}\n---\n"
                 "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: nlp}\n"
                 "spec: {team: nlp, cohort: nowhere}\n",
                 "admin", "default", "admin", field, sizeof(field)),
           400, "an apply naming a cohort that does not exist is refused");
    is_str(field, "[1].spec.cohort", "naming the document and field");
    {
        json_t *qs = sl_engine_queues_json(e);
        char *t = json_dumps(qs, JSON_COMPACT);
        ok(t && strstr(t, "\"vision\"") && !strstr(t, "\"nlp\""),
           "and changed nothing: team nlp's queue is not there, vision's is");
        free(t);
        json_decref(qs);
    }
    is_int(apply(e,
                 "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision}\n"
                 "spec: {team: vision, nominal: {gpus: 4}}\n",
                 "vic", "vision", "team-admin", field, sizeof(field)),
           403, "a team-admin may not raise its team's quota");
    is_str(field, "spec.nominal", "naming spec.nominal");
    ok(audit_count(rd, "apply", "refused") == 2 && audit_count(rd, "apply", "ok") == 1,
       "both refusals and the apply are in the audit log");

    /* submission, the executor's events and the lifecycle */
    is_int(submit(e, "vision", "200ms", &a), 201, "a job is submitted to team vision");
    ok(a > 0 && wait_state(rd, a, "Succeeded"),
       "the simulated executor runs it for 200 ms and it Succeeds");
    is_int(submit(e, "vision", "1h", &b), 201, "a job that would run for an hour");
    ok(wait_state(rd, b, "Running"), "is placed and Running");
    c = call_new(SL_OP_CANCEL, "admin", "default", "admin");
    c->op.u.cancel.job_id = b;
    is_int(call_run(e, c), 202, "its cancel is accepted (202: it stops after its signal)");
    call_free(c);
    ok(wait_state(rd, b, "Cancelled"), "and ends Cancelled (the signal ended its tasks)");
    is_int(submit(e, "nowhere", "0s", &a), 400, "a job of a team that does not exist is refused");
    ok(audit_count(rd, "job.submit", "ok") == 2 && audit_count(rd, "job.submit", "refused") == 1 &&
           audit_count(rd, "job.place", "ok") == 2 && audit_count(rd, "job.cancel", "ok") == 1,
       "submissions, the refusal, placements and the cancel are recorded");

    /* tokens */
    c = call_new(SL_OP_TOKEN, "admin", "default", "admin");
    snprintf(c->op.u.token.user, sizeof(c->op.u.token.user), "vic");
    snprintf(c->op.u.token.label, sizeof(c->op.u.token.label), "ci");
    is_int(call_run(e, c), 201, "an admin makes a token for vic");
    ok(c->op.result && strncmp(json_string_value(json_object_get(c->op.result, "token")),
                               "sl_", 3) == 0,
       "the answer holds the token");
    call_free(c);

    /* recovery: a second engine on the same data dir */
    sl_engine_destroy(e);
    e = engine_new(&token);
    ok(e && !token, "a second engine opens the same data dir (no new admin token)");
    if (e) {
        json_t *qs = sl_engine_queues_json(e);
        char *t = json_dumps(qs, JSON_COMPACT);
        ok(t && strstr(t, "\"vision\""), "and has loaded team vision's queue");
        free(t);
        json_decref(qs);
        is_int(submit(e, "vision", "0s", &a), 201, "it takes jobs");
        ok(wait_state(rd, a, "Succeeded"), "and runs them");
    }
    job_state(rd, b, state, sizeof(state));
    is_str(state, "Cancelled", "the cancelled job stays Cancelled");
    sl_engine_destroy(e);
    sl_store_close(rd);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
