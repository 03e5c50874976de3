/*
 * test_engine_jobctl.c - hold, release and requeue (src/engine/jobctl.c)
 * against their contract in engine_int.h, on the simulated executor with
 * one node of one GPU and the harness's clock (engine_harness.h):
 *   hold     a pending job is held: the job behind it starts when the GPU
 *            frees, it does not; another member may not (403, user), a
 *            running job cannot be held (409, state), nothing changes;
 *   restart  the hold is loaded again;
 *   release  it runs from its place in line;
 *   requeue  a running job gets its checkpoint signal, is back in line as
 *            its next attempt with its retries untouched; with hold it
 *            waits held;
 *   update   maxRuntime is lowered, in the stored spec and an event; only
 *            an admin raises it;
 *   audit    every change and refusal is recorded.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/engine/engine_int.h"
#include "../../src/sched/sched.h"
#include "engine_harness.h"

static char tmpdir[64];
static char nodes_csv[128];

/* Operation 'kind' on job 'id' by 'user' with 'role' of team default;
 * returns the status, the error's field into 'field' (may be NULL). */
static int ctl(struct sl_engine *e, enum sl_op_kind kind, int64_t id, bool hold,
               const char *user, const char *role, char *field, size_t size)
{
    struct h_call *c = h_call_new(kind, user, "default", role);
    int st;

    c->op.u.jobctl.job_id = id;
    c->op.u.jobctl.hold = hold;
    st = h_call_run(e, c);
    if (field)
        snprintf(field, size, "%s", c->op.err.field);
    h_call_free(c);
    return st;
}

/* An update of job 'id''s maxRuntime to 'ms' by 'user' with 'role'. */
static int update(struct sl_engine *e, int64_t id, int64_t ms, const char *user,
                  const char *role, char *field, size_t size)
{
    struct h_call *c = h_call_new(SL_OP_UPDATE, user, "default", role);
    int st;

    c->op.u.update.job_id = id;
    c->op.u.update.max_runtime_ms = ms;
    st = h_call_run(e, c);
    if (field)
        snprintf(field, size, "%s", c->op.err.field);
    h_call_free(c);
    return st;
}

/* The stored spec's maxRuntime of job 'id' ("" when none). */
static const char *spec_max_runtime(struct sl_store *rd, int64_t id, char *buf, size_t size)
{
    json_t *j = h_job(rd, id);
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(j, "spec"), "spec"), "maxRuntime"));

    snprintf(buf, size, "%s", v ? v : "");
    json_decref(j);
    return buf;
}

/* A one-GPU job that runs for 'duration', with 'retries'. */
static int64_t submit(struct sl_engine *e, const char *duration, int retries)
{
    char yaml[400];
    int64_t id = 0;

    snprintf(yaml, sizeof(yaml),
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: t, "
             "labels: {sim-duration: %s}}\nspec: {command: [train], resources: {gpus: 1}, "
             "retries: %d, checkpoint: {signal: SIGUSR1, grace: 30s}}\n",
             duration, retries);
    h_submit(e, yaml, "alice", "default", "member", &id, NULL);
    h_sync(e);
    return id;
}

/* Integer member 'key' of job 'id' as stored (-1 when absent). */
static int64_t job_int(struct sl_store *rd, int64_t id, const char *key)
{
    json_t *j = h_job(rd, id), *v = json_object_get(j, key);
    int64_t n = json_is_integer(v) ? json_integer_value(v) : json_is_true(v) ? 1
                                                           : json_is_false(v) ? 0
                                                                              : -1;
    json_decref(j);
    return n;
}

static struct sl_engine *engine(void)
{
    struct sl_engine_config cfg = {.executor = "simulated", .fake_nodes = nodes_csv};

    return h_engine_create(tmpdir, cfg, NULL);
}

int main(void)
{
    struct sl_store *rd = NULL;
    struct sl_engine *e;
    char s[32], field[96], msg[200];
    int64_t j1, j2, j3;
    FILE *f;

    sl_log_set_level(SL_LOG_ERROR);
    if (sodium_init() < 0)
        return done_testing();
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-jobctl.XXXXXX");
    if (!mkdtemp(tmpdir))
        return done_testing();
    snprintf(nodes_csv, sizeof(nodes_csv), "%s/nodes.csv", tmpdir);
    if (!(f = fopen(nodes_csv, "w")) ||
        fputs("sn,cpu_milli,memory_mib,gpu,model\nna,8000,16384,1,H100\n", f) < 0 ||
        fclose(f) != 0) {
        h_rmtree(tmpdir);
        return done_testing();
    }
    e = engine();
    if (!e || sl_engine_start(e) < 0) {
        sl_engine_destroy(e);
        h_rmtree(tmpdir);
        return done_testing();
    }
    rd = h_reader(tmpdir);

    /* hold: the job behind the held one starts first */
    j1 = submit(e, "10m", 0);
    j2 = submit(e, "60m", 2);
    j3 = submit(e, "10m", 0);
    is_str(h_job_state(rd, j1, s, sizeof(s)), "Running", "job 1 runs on the one GPU");
    is_int(ctl(e, SL_OP_HOLD, j2, false, "bob", "member", field, sizeof(field)), 403,
           "another member may not hold alice's job");
    is_str(field, "user", "naming user");
    ok(!sl_sched_job_held(e->sched, j2), "and it is not held");
    is_int(ctl(e, SL_OP_HOLD, j1, false, "alice", "member", field, sizeof(field)), 409,
           "a running job cannot be held");
    is_str(field, "state", "naming state");
    is_int(h_events(rd, j1, "hold", NULL, 0), 0, "no event was written for it");
    is_int(ctl(e, SL_OP_HOLD, j2, false, "alice", "member", NULL, 0), 200, "alice holds job 2");
    ok(sl_sched_job_held(e->sched, j2), "the scheduler has it held");
    is_int(job_int(rd, j2, "held"), 1, "its row says held");
    ok(h_events(rd, j2, "hold", msg, sizeof(msg)) == 1 && !strcmp(msg, "held by alice"),
       "one hold event: %s", msg);
    h_clock_set(H_T0 + 11 * H_MIN);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, j1, s, sizeof(s)), "Succeeded", "job 1 ends");
    is_str(h_job_state(rd, j3, s, sizeof(s)), "Running", "job 3, behind the held one, starts");
    is_str(h_job_state(rd, j2, s, sizeof(s)), "Pending", "job 2 waits, held");

    /* the hold outlives a restart */
    sl_engine_destroy(e);
    if (!(e = engine()) || sl_engine_start(e) < 0)
        goto out;
    ok(sl_sched_job_held(e->sched, j2), "after a restart job 2 is still held");
    is_int(ctl(e, SL_OP_RELEASE, j2, false, "bob", "member", field, sizeof(field)), 403,
           "bob may not release it");
    is_int(ctl(e, SL_OP_RELEASE, j3, false, "alice", "member", field, sizeof(field)), 409,
           "a job not held cannot be released");
    is_int(ctl(e, SL_OP_RELEASE, j2, false, "alice", "member", NULL, 0), 200, "released");
    ok(!sl_sched_job_held(e->sched, j2), "the scheduler has it in line again");
    h_clock_set(H_T0 + 22 * H_MIN);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, j2, s, sizeof(s)), "Running", "job 3 ends: job 2 runs");

    /* requeue: through the checkpoint signal, as the next attempt */
    is_int(ctl(e, SL_OP_REQUEUE, j3, false, "alice", "member", field, sizeof(field)), 409,
           "a finished job cannot be requeued");
    is_int(ctl(e, SL_OP_REQUEUE, j2, false, "bob", "member", field, sizeof(field)), 403,
           "bob may not requeue it");
    is_int(ctl(e, SL_OP_REQUEUE, j2, false, "alice", "member", NULL, 0), 202, "alice requeues it");
    ok(h_events(rd, j2, "requeue", msg, sizeof(msg)) >= 1 &&
           !strncmp(msg, "requeued by alice: SIGUSR1", 26),
       "the requeue event says who and which signal: %s", msg);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, j2, s, sizeof(s)), "Running", "the signal ended it; it runs again");
    is_int(job_int(rd, j2, "attempt"), 1, "as attempt 1");
    is_int(job_int(rd, j2, "retries"), 2, "its retries untouched");
    is_int(job_int(rd, j2, "preemptions"), 1, "counted with the preemptions, not the failures");
    is_int(ctl(e, SL_OP_REQUEUE, j2, true, "admin", "admin", NULL, 0), 202,
           "an admin requeues it and holds it");
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, j2, s, sizeof(s)), "Pending", "it is back in line");
    ok(sl_sched_job_held(e->sched, j2) && job_int(rd, j2, "held") == 1, "held");
    is_int(job_int(rd, j2, "attempt"), 2, "as attempt 2");
    is_int(ctl(e, SL_OP_REQUEUE, j2, false, "alice", "member", field, sizeof(field)), 409,
           "a pending job cannot be requeued");
    is_str(field, "state", "naming state");

    /* update: maxRuntime lower only, but for an admin */
    is_int(update(e, j2, 30 * H_MIN, "alice", "member", field, sizeof(field)), 200,
           "alice lowers the pending job's maxRuntime to 30m");
    is_str(spec_max_runtime(rd, j2, s, sizeof(s)), "30m", "its stored spec says so");
    ok(h_events(rd, j2, "update", msg, sizeof(msg)) == 1 &&
           !strcmp(msg, "maxRuntime none -> 30m by alice"),
       "one update event with the old and new value: %s", msg);
    is_int(update(e, j2, 60 * H_MIN, "alice", "member", field, sizeof(field)), 409,
           "she may not raise it");
    is_str(field, "maxRuntime", "naming maxRuntime");
    is_str(spec_max_runtime(rd, j2, s, sizeof(s)), "30m", "nothing changed");
    is_int(update(e, j2, 60 * H_MIN, "bob", "member", field, sizeof(field)), 403,
           "bob may not update it");
    is_int(update(e, j2, 60 * H_MIN, "admin", "admin", NULL, 0), 200, "an admin may raise it");
    is_str(spec_max_runtime(rd, j2, s, sizeof(s)), "1h", "to 60m");

    /* audit */
    is_int(h_audit_count(rd, "job.hold", "ok"), 1, "one hold recorded ok");
    ok(h_audit_count(rd, "job.hold", NULL) == 3, "and the two refused ones");
    is_int(h_audit_count(rd, "job.release", "ok"), 1, "one release recorded ok");
    is_int(h_audit_count(rd, "job.requeue", "ok"), 2, "two requeues recorded ok");
    is_int(h_audit_count(rd, "job.update", "ok"), 2, "two updates recorded ok");
    is_int(h_audit_count(rd, "job.update", NULL), 4, "and the two refused ones");
out:
    sl_store_close(rd);
    sl_engine_destroy(e);
    h_rmtree(tmpdir);
    return done_testing();
}
