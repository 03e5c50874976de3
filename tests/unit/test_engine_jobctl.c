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
 *            an admin raises it; a pending job's class, queue and GPUs
 *            change when a submission of them would pass (no node big
 *            enough, another team's queue, no such class, a policy, a
 *            spent budget refuse), not a running job's;
 *   hold     an admin's requeue --hold of alice's job is an admin hold she
 *            may not release; a team-admin may;
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

/* Run call 'c' and free it: its status, the error's field into 'field'
 * (may be NULL). */
static int run(struct sl_engine *e, struct h_call *c, char *field, size_t size)
{
    int st = h_call_run(e, c);

    if (field)
        snprintf(field, size, "%s", c->op.err.field);
    h_call_free(c);
    return st;
}

/* Operation 'kind' on job 'id' by 'user' with 'role' of team default;
 * returns the status, the error's field into 'field' (may be NULL). */
static int ctl(struct sl_engine *e, enum sl_op_kind kind, int64_t id, bool hold,
               const char *user, const char *role, char *field, size_t size)
{
    struct h_call *c = h_call_new(kind, user, "default", role);

    c->op.u.jobctl.job_id = id;
    c->op.u.jobctl.hold = hold;
    return run(e, c, field, size);
}

/* An update of job 'id''s maxRuntime to 'ms' by 'user' with 'role'. */
static int update(struct sl_engine *e, int64_t id, int64_t ms, const char *user,
                  const char *role, char *field, size_t size)
{
    struct h_call *c = h_call_new(SL_OP_UPDATE, user, "default", role);

    c->op.u.update.job_id = id;
    c->op.u.update.max_runtime_ms = ms;
    return run(e, c, field, size);
}

/* An update of job 'id''s class, queue, GPUs per task (-1: none) by
 * 'user' with 'role'. */
static int respec(struct sl_engine *e, int64_t id, const char *pclass, const char *queue,
                  int gpus, const char *user, const char *role, char *field, size_t size)
{
    struct h_call *c = h_call_new(SL_OP_UPDATE, user, "default", role);

    c->op.u.update.job_id = id;
    snprintf(c->op.u.update.pclass, sizeof(c->op.u.update.pclass), "%s", pclass ? pclass : "");
    snprintf(c->op.u.update.queue, sizeof(c->op.u.update.queue), "%s", queue ? queue : "");
    c->op.u.update.has_gpus = gpus >= 0;
    c->op.u.update.gpus = gpus;
    return run(e, c, field, size);
}

/* The stored spec's GPUs per task of job 'id' (-1 when absent). */
static int64_t spec_gpus(struct sl_store *rd, int64_t id)
{
    json_t *j = h_job(rd, id);
    json_t *v = json_object_get(
        json_object_get(json_object_get(json_object_get(j, "spec"), "spec"), "resources"),
        "gpus");
    int64_t n = json_is_integer(v) ? json_integer_value(v) : -1;

    json_decref(j);
    return n;
}

/* An admin cordons node 'name' (no new task there). */
static int cordon(struct sl_engine *e, const char *name, enum sl_op_kind kind)
{
    struct h_call *c = h_call_new(kind, "admin", "default", "admin");

    snprintf(c->op.u.node.node, sizeof(c->op.u.node.node), "%s", name);
    return run(e, c, NULL, 0);
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

    /* admin hold: the requeue --hold above was an admin's of alice's job */
    is_int(ctl(e, SL_OP_RELEASE, j2, false, "alice", "member", field, sizeof(field)), 403,
           "alice may not release the admin's hold");
    is_str(field, "hold", "naming hold");
    ok(sl_sched_job_held(e->sched, j2), "it stays held");

    /* update: class, queue and GPUs of a pending job, checked as a submission */
    is_int(h_apply(e,
                   "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: nlp}\n---\n"
                   "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: nlpq}\n"
                   "spec: {team: nlp}\n---\n"
                   "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: q2}\n"
                   "spec: {team: default}\n---\n"
                   "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: imgq}\n"
                   "spec: {team: default}\n---\n"
                   "apiVersion: sluice/v1\nkind: Policy\nmetadata: {name: img}\n"
                   "spec: {queues: [imgq], images: {requireImage: true}}\n",
                   "admin", "default", "admin", NULL),
           200, "queues q2 and imgq (a policy wants an image there), nlpq of team nlp");
    is_int(respec(e, j2, NULL, NULL, 2, "alice", "member", field, sizeof(field)), 400,
           "2 GPUs per task: no node has 2");
    is_str(field, "spec.resources.gpus", "naming spec.resources.gpus");
    is_int(respec(e, j2, NULL, "nlpq", -1, "alice", "member", field, sizeof(field)), 400,
           "a queue of another team");
    is_str(field, "queue", "naming queue");
    is_int(respec(e, j2, "gold", NULL, -1, "alice", "member", field, sizeof(field)), 400,
           "a class that does not exist");
    is_str(field, "priorityClass", "naming priorityClass");
    is_int(respec(e, j2, NULL, "imgq", -1, "alice", "member", field, sizeof(field)), 403,
           "a queue whose policy refuses the job");
    is_str(field, "spec.image", "naming the job's field the policy refuses");
    is_int(respec(e, j2, "production", NULL, -1, "bob", "member", field, sizeof(field)), 403,
           "bob may not update alice's job");
    is_int(spec_gpus(rd, j2), 1, "none of that changed its GPUs");
    is_str(h_job_str(rd, j2, "queue", s, sizeof(s)), "default", "nor its queue");
    is_str(h_job_str(rd, j2, "priority_class", s, sizeof(s)), "batch", "nor its class");
    is_int(h_events(rd, j2, "update", NULL, 0), 2, "nor wrote an event");
    is_int(respec(e, j2, "production", "q2", 0, "alice", "member", NULL, 0), 200,
           "alice moves it to production in q2 with no GPU");
    is_str(h_job_str(rd, j2, "priority_class", s, sizeof(s)), "production", "its class");
    is_int(job_int(rd, j2, "priority"), 1000, "its priority");
    is_str(h_job_str(rd, j2, "queue", s, sizeof(s)), "q2", "its queue");
    is_int(spec_gpus(rd, j2), 0, "its GPUs per task");
    is_int(h_events(rd, j2, "update", NULL, 0), 3, "one update event more");
    is_str(h_job_str(rd, j2, "message", msg, sizeof(msg)),
           "priorityClass batch -> production, queue default -> q2, resources.gpus 1 -> 0 "
           "by alice",
           "its message names each change");
    ok(sl_sched_job_held(e->sched, j2), "still held");
    is_int(respec(e, j2, "production", "q2", 0, "alice", "member", NULL, 0), 200,
           "the same values again: 200");
    is_int(h_events(rd, j2, "update", NULL, 0), 3, "and no event");
    is_int(ctl(e, SL_OP_RELEASE, j2, false, "tina", "team-admin", NULL, 0), 200,
           "a team-admin releases the admin hold");
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, j2, s, sizeof(s)), "Running", "it runs, as updated");
    is_int(respec(e, j2, NULL, NULL, 1, "alice", "member", field, sizeof(field)), 409,
           "a running job's GPUs cannot change");
    is_str(field, "resources.gpus", "naming resources.gpus");
    is_int(respec(e, j2, "batch", NULL, -1, "admin", "admin", field, sizeof(field)), 409,
           "nor its class, even by an admin");
    is_str(field, "priorityClass", "naming priorityClass");

    /* a spent budget: demoted, a pending job may not be moved above it */
    is_int(cordon(e, "na", SL_OP_NODE_CORDON), 200, "the node is cordoned");
    is_int(h_apply(e,
                   "apiVersion: sluice/v1\nkind: Budget\nmetadata: {name: tiny}\n"
                   "spec: {team: default, period: month, gpuHours: 0.001, action: demote}\n",
                   "admin", "default", "admin", NULL),
           200, "a budget the team has spent, which demotes");
    j3 = submit(e, "10m", 0);
    is_str(h_job_str(rd, j3, "priority_class", s, sizeof(s)), "best-effort",
           "a new job is demoted to best-effort");
    is_int(respec(e, j3, "batch", NULL, -1, "alice", "member", field, sizeof(field)), 403,
           "it may not be moved back to batch");
    is_str(field, "priorityClass", "naming priorityClass");
    is_int(respec(e, j3, NULL, NULL, 0, "alice", "member", NULL, 0), 200,
           "it may ask for fewer GPUs");
    h_submit(e,
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: half}\n"
             "spec: {command: [train], resources: {gpuMilli: 500}}\n",
             "alice", "default", "member", &j1, NULL);
    is_int(respec(e, j1, NULL, NULL, 1, "alice", "member", NULL, 0), 200,
           "a job of half a GPU may take a whole one (it is demoted already)");
    is_str(h_job_str(rd, j1, "message", msg, sizeof(msg)), "resources.gpus 0.5 -> 1 by alice",
           "its message says the fraction");
    is_int(h_apply(e,
                   "apiVersion: sluice/v1\nkind: Budget\nmetadata: {name: tiny-block}\n"
                   "spec: {team: default, period: month, gpuHours: 0.001, action: block}\n",
                   "admin", "default", "admin", NULL),
           200, "and a spent budget that blocks");
    is_int(respec(e, j3, NULL, NULL, 1, "alice", "member", field, sizeof(field)), 403,
           "it may not ask for more GPUs");
    is_str(field, "resources.gpus", "naming resources.gpus");
    is_int(spec_gpus(rd, j3), 0, "still none");
    is_int(h_audit_count(rd, "job.update", "ok"), 6, "the updates recorded ok");
    is_int(h_audit_count(rd, "job.update", NULL), 17, "and the eleven refused ones");
out:
    sl_store_close(rd);
    sl_engine_destroy(e);
    h_rmtree(tmpdir);
    return done_testing();
}
