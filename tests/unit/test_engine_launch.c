/*
 * test_engine_launch.c - the engine's launch module (src/engine/launch.c)
 * against its contract in engine_int.h and the executor protocol
 * (src/exec/executor.h): what a placed job's tasks are given - its
 * spec's environment, a token of its own with the API's address, its
 * datasets' paths as the store has them when it starts, its placement,
 * the account it runs as - and how its start and its tasks' ends are
 * carried out: a task that cannot start fails the whole gang, a gang's
 * failed task stops the others with the checkpoint signal, a preempted
 * job is signalled and goes back in line for its preemptor.
 *
 * Two engines, on the harness's clock (engine_harness.h):
 *  - the simulated executor behind a recording one of this file's (the
 *    executor interface is an operations table): it keeps what start was
 *    given and every signal, can fail a task's start, and hands out task
 *    ends the test injects;
 *  - the local executor, which runs a real `env` on fake GPUs, so that
 *    the variables a process gets (CUDA_VISIBLE_DEVICES,
 *    CUDA_DEVICE_ORDER, the datasets, the token) are read from its log.
 *    That job is a real process: its end is polled for against a
 *    deadline, as test_engine.c and test_executor.c do; no check depends
 *    on how long it takes.
 */
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../src/engine/engine_int.h"
#include "engine_harness.h"

#define API_URL "http://sluice.test:8470"
#define DEADLINE_MS 20000

static char tmpdir[64];

/* ---- a recording executor around the simulated one ------------------- */

struct rec {
    struct sl_executor base;
    struct sl_executor *inner;    /* owned */
    pthread_mutex_t mu;           /* the test reads while the engine runs */
    int fail_task;                /* start: this task FAILED; -1 = none */
    /* the last start */
    int starts;
    int64_t job_id;
    int attempt, ntasks;
    char env[16][160];
    int nenv;
    struct {
        char name[64], version[64], path[160];
        bool rw;
    } ds[4];
    int nds;
    char unix_user[64];
    int64_t log_cap_bytes;
    struct sl_exec_place pl[4];
    /* every signal */
    struct rec_sig { int64_t job_id; int sig; } sig[64];
    int nsig;
    /* task ends to hand out */
    struct sl_exec_event inject[4];
    int ninject;
};

static struct rec rec;

static struct rec *rec_of(const struct sl_executor *x) { return (struct rec *)x; }

static void rec_caps(const struct sl_executor *x, struct sl_exec_caps *out)
{
    sl_executor_caps(rec_of(x)->inner, out);
    out->job_tokens = true; /* as if its tasks could reach the API */
}

static int rec_nodes(struct sl_executor *x, struct sl_inventory *out, struct sl_error *err)
{
    return sl_executor_nodes(rec_of(x)->inner, out, err);
}

static int rec_start(struct sl_executor *x, const struct sl_exec_job *job,
                     struct sl_exec_task_state *out)
{
    struct rec *r = rec_of(x);
    int rc = sl_executor_start(r->inner, job, out);

    pthread_mutex_lock(&r->mu);
    r->starts++;
    r->job_id = job->job_id;
    r->attempt = job->attempt;
    r->ntasks = job->ntasks;
    r->nenv = 0;
    for (int i = 0; job->env && job->env[i] && i < 16; i++)
        snprintf(r->env[r->nenv++], sizeof(r->env[0]), "%s", job->env[i]);
    r->nds = job->ndatasets < 4 ? job->ndatasets : 4;
    for (int i = 0; i < r->nds; i++) {
        snprintf(r->ds[i].name, sizeof(r->ds[i].name), "%s", job->datasets[i].name);
        snprintf(r->ds[i].version, sizeof(r->ds[i].version), "%s", job->datasets[i].version);
        snprintf(r->ds[i].path, sizeof(r->ds[i].path), "%s", job->datasets[i].path);
        r->ds[i].rw = job->datasets[i].rw;
    }
    snprintf(r->unix_user, sizeof(r->unix_user), "%s", job->unix_user ? job->unix_user : "");
    r->log_cap_bytes = job->log_cap_bytes;
    for (int t = 0; t < job->ntasks && t < 4; t++)
        r->pl[t] = job->tasks[t];
    if (r->fail_task >= 0 && r->fail_task < job->ntasks) {
        out[r->fail_task].status = SL_EXEC_TASK_FAILED;
        snprintf(out[r->fail_task].error, sizeof(out[0].error), "injected failure");
        rc = -EIO;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static int rec_signal(struct sl_executor *x, int64_t job_id, int attempt, int sig)
{
    struct rec *r = rec_of(x);

    pthread_mutex_lock(&r->mu);
    if (r->nsig < 64)
        r->sig[r->nsig++] = (struct rec_sig){job_id, sig};
    pthread_mutex_unlock(&r->mu);
    return sl_executor_signal(r->inner, job_id, attempt, sig);
}

static int rec_adopt(struct sl_executor *x, const struct sl_exec_job *job,
                     struct sl_exec_task_state *out)
{
    return sl_executor_adopt(rec_of(x)->inner, job, out);
}

static int rec_events(struct sl_executor *x, int64_t now_ms, struct sl_exec_event *ev, int max)
{
    struct rec *r = rec_of(x);
    int n = 0;

    pthread_mutex_lock(&r->mu);
    while (n < max && r->ninject > 0) {
        ev[n++] = r->inject[0];
        memmove(r->inject, r->inject + 1, (size_t)--r->ninject * sizeof(r->inject[0]));
    }
    pthread_mutex_unlock(&r->mu);
    return n + sl_executor_events(r->inner, now_ms, ev + n, max - n);
}

static int64_t rec_next_event_ms(const struct sl_executor *x)
{
    return sl_executor_next_event_ms(rec_of(x)->inner);
}

static int rec_wake_fd(const struct sl_executor *x)
{
    return sl_executor_wake_fd(rec_of(x)->inner);
}

static void rec_release(struct sl_executor *x, int64_t job_id, int attempt)
{
    sl_executor_release(rec_of(x)->inner, job_id, attempt);
}

static int rec_log_path(const struct sl_executor *x, int64_t job_id, int task, char *buf,
                        size_t size)
{
    return sl_executor_log_path(rec_of(x)->inner, job_id, task, buf, size);
}

static void rec_destroy(struct sl_executor *x)
{
    sl_executor_destroy(rec_of(x)->inner);
    pthread_mutex_destroy(&rec_of(x)->mu);
}

static const struct sl_executor_ops rec_ops = {
    .name = "recording",
    .caps = rec_caps,
    .nodes = rec_nodes,
    .start = rec_start,
    .signal = rec_signal,
    .adopt = rec_adopt,
    .events = rec_events,
    .next_event_ms = rec_next_event_ms,
    .wake_fd = rec_wake_fd,
    .release = rec_release,
    .log_path = rec_log_path,
    .destroy = rec_destroy,
};

/* Put the recording executor in front of engine 'e''s own (before it
 * starts), and take its capabilities as the engine's. */
static void rec_install(struct sl_engine *e)
{
    memset(&rec, 0, sizeof(rec));
    rec.base.ops = &rec_ops;
    rec.inner = e->x;
    rec.fail_task = -1;
    pthread_mutex_init(&rec.mu, NULL);
    e->x = &rec.base;
    sl_executor_caps(e->x, &e->caps);
}

/* Whether the last start's environment holds 'kv' exactly. */
static bool env_has(const char *kv)
{
    bool found = false;

    pthread_mutex_lock(&rec.mu);
    for (int i = 0; i < rec.nenv; i++)
        found |= strcmp(rec.env[i], kv) == 0;
    pthread_mutex_unlock(&rec.mu);
    return found;
}

/* The value of 'key' in the last start's environment ("" = none). */
static const char *env_get(const char *key, char *buf, size_t size)
{
    size_t n = strlen(key);

    buf[0] = '\0';
    pthread_mutex_lock(&rec.mu);
    for (int i = 0; i < rec.nenv; i++)
        if (strncmp(rec.env[i], key, n) == 0 && rec.env[i][n] == '=')
            snprintf(buf, size, "%s", rec.env[i] + n + 1);
    pthread_mutex_unlock(&rec.mu);
    return buf;
}

/* Signals recorded for 'job' as "15,9". */
static const char *signals_of(int64_t job, char *buf, size_t size)
{
    size_t o = 0;

    buf[0] = '\0';
    pthread_mutex_lock(&rec.mu);
    for (int i = 0; i < rec.nsig && o < size; i++)
        if (rec.sig[i].job_id == job)
            o += (size_t)snprintf(buf + o, size - o, "%s%d", o ? "," : "", rec.sig[i].sig);
    pthread_mutex_unlock(&rec.mu);
    return buf;
}

/* ---- helpers ------------------------------------------------------------ */

static bool token_works(struct sl_store *rd, const char *secret, struct sl_token_who *who)
{
    unsigned char hash[32];
    struct sl_token_who w;

    crypto_generichash(hash, sizeof(hash), (const unsigned char *)secret, strlen(secret), NULL,
                       0);
    if (sl_store_token_lookup(rd, hash, h_now(), &w) < 0)
        return false;
    if (who)
        *who = w;
    return true;
}

/* The GPUs of task 'task' in job 'id''s stored placement, as "0,1". */
static const char *placed_gpus(struct sl_store *rd, int64_t id, int task, char *buf,
                               size_t size)
{
    json_t *j = h_job(rd, id);
    json_t *gpus = json_object_get(json_array_get(json_object_get(j, "placement"), (size_t)task),
                                   "gpus"),
           *g;
    size_t i, o = 0;

    buf[0] = '\0';
    json_array_foreach(gpus, i, g)
    {
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? "," : "",
                              (long long)json_integer_value(g));
    }
    json_decref(j);
    return buf;
}

static const char *job_message(struct sl_store *rd, int64_t id, char *buf, size_t size)
{
    json_t *j = h_job(rd, id);
    const char *m = json_string_value(json_object_get(j, "message"));

    snprintf(buf, size, "%s", m ? m : "");
    json_decref(j);
    return buf;
}

/* Submit as vera, a member of vision whose jobs run as svc-train. */
static int submit_as_vera(struct sl_engine *e, const char *yaml, int64_t *id)
{
    struct h_call *c = h_call_new(SL_OP_SUBMIT, "vera", "vision", "member");
    struct sl_error perr = {"", ""};
    json_t *o;
    int st;

    *id = 0;
    snprintf(c->op.who.unix_user, sizeof(c->op.who.unix_user), "svc-train");
    if (sl_job_spec_parse(yaml, strlen(yaml), &c->op.u.submit.spec, &perr) < 0) {
        diag("spec: %s: %s", perr.field, perr.text);
        h_call_free(c);
        return -1;
    }
    st = h_call_run(e, c);
    o = h_call_json(c);
    *id = json_integer_value(json_object_get(o, "id"));
    json_decref(o);
    h_call_free(c);
    return st;
}

static const char *const catalog =
    "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: vision}\n---\n"
    "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision}\n"
    "spec: {team: vision, nominal: {gpus: 4}}\n---\n"
    "apiVersion: sluice/v1\nkind: User\nmetadata: {name: vera}\n"
    "spec: {team: vision, role: member}\n---\n"
    "apiVersion: sluice/v1\nkind: Dataset\nmetadata: {name: imagenet}\n"
    "spec: {version: v3, owner: vision, path: /data/imagenet/v3}\n---\n"
    "apiVersion: sluice/v1\nkind: Dataset\nmetadata: {name: corpus}\n"
    "spec: {version: v1, owner: vision, path: /data/corpus/v1}\n";

/* ---- with the recording executor ----------------------------------------- */

static void environment(struct sl_engine *e, struct sl_store *rd)
{
    char token[96], buf[256], gpus[64];
    struct sl_token_who w;
    int64_t id = 0, frac = 0;
    json_t *lst, *t;
    size_t i;
    bool listed = false;

    is_int(submit_as_vera(e,
                          "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: train, labels: "
                          "{sim-duration: 10m}}\nspec: {command: [train], env: {FOO: bar, "
                          "EPOCHS: \"3\"}, resources: {gpus: 2}, "
                          "datasets: [imagenet@v3, \"corpus@v1:rw\"]}\n",
                          &id),
           201, "a 2-GPU job with an environment and two datasets");
    h_sync(e);
    ok(rec.starts == 1 && rec.job_id == id && rec.attempt == 0 && rec.ntasks == 1,
       "once placed and committed it is started, attempt 0, one task");
    ok(env_has("FOO=bar") && env_has("EPOCHS=3"), "its tasks get the spec's environment");
    env_get("SLUICE_TOKEN", token, sizeof(token));
    ok(strncmp(token, "sl_", 3) == 0 && strlen(token) == 46,
       "a token of its own in SLUICE_TOKEN");
    is_str(env_get("SLUICE_SERVER", buf, sizeof(buf)), API_URL,
           "and the API's address in SLUICE_SERVER");
    is_int(rec.nenv, 4, "and nothing more: the executor sets its own variables");
    ok(token_works(rd, token, &w) && w.job_id == id && strcmp(w.user, "vera") == 0 &&
           strcmp(w.team, "vision") == 0,
       "the token lets the job in as itself: job %lld of vera's, team vision", (long long)id);
    {
        int rc = 0;
        char label[64];
        snprintf(label, sizeof(label), "job %lld attempt 0", (long long)id);
        lst = sl_store_tokens(rd, "vera", NULL, NULL, &rc);
        json_array_foreach(lst, i, t)
        {
            listed |= json_integer_value(json_object_get(t, "job")) == id &&
                      strcmp(json_string_value(json_object_get(t, "label")), label) == 0 &&
                      !json_is_true(json_object_get(t, "revoked"));
        }
        json_decref(lst);
        ok(listed, "listed among vera's tokens as \"%s\", live", label);
    }
    ok(rec.nds == 2 && strcmp(rec.ds[0].name, "imagenet") == 0 &&
           strcmp(rec.ds[0].version, "v3") == 0 &&
           strcmp(rec.ds[0].path, "/data/imagenet/v3") == 0 && !rec.ds[0].rw,
       "its first dataset: imagenet v3 at its declared path, read-only");
    ok(strcmp(rec.ds[1].name, "corpus") == 0 && strcmp(rec.ds[1].version, "v1") == 0 &&
           strcmp(rec.ds[1].path, "/data/corpus/v1") == 0 && rec.ds[1].rw,
       "its second: corpus v1, writable as asked (:rw)");
    placed_gpus(rd, id, 0, gpus, sizeof(gpus));
    snprintf(buf, sizeof(buf), "%d,%d", rec.pl[0].gpus[0], rec.pl[0].gpus[1]);
    ok(rec.pl[0].ngpus == 2 && rec.pl[0].gpu_milli == 1000 && strcmp(buf, gpus) == 0,
       "the executor is given the placement stored for it: GPUs %s, whole", gpus);
    is_str(rec.unix_user, "svc-train", "it runs as its user's mapped account");
    is_int(rec.log_cap_bytes, 1 << 20, "with the configured log cap");
    ok(strstr(job_message(rd, id, buf, sizeof(buf)), "the command is not run") != NULL,
       "what the executor says of how it runs is the job's message (%s)", buf);

    h_clock_set(H_T0 + 10 * H_MIN);
    h_sync(e);
    is_str(h_job_state(rd, id, buf, sizeof(buf)), "Succeeded", "it ends at its time");
    ok(!token_works(rd, token, NULL), "and its token is revoked with the attempt's end");

    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: small, team: vision, "
                    "labels: {sim-duration: 10m}}\nspec: {command: [train], "
                    "resources: {gpuMilli: 500}}\n",
                    "admin", "default", "admin", &frac, NULL),
           201, "a job of half a GPU, by a user without an account of its own");
    h_sync(e);
    ok(rec.job_id == frac && rec.pl[0].ngpus == 1 && rec.pl[0].gpu_milli == 500,
       "is given one GPU at 500 milli");
    is_str(rec.unix_user, "nobody", "and runs as the default job account");
    is_int(rec.nds, 0, "with no dataset");
    h_clock_set(H_T0 + 20 * H_MIN);
    h_sync(e);
}

/* A dataset removed after admission is left out when the job starts. */
static void dataset_gone(struct sl_engine *e, struct sl_store *rd)
{
    struct sl_error err = {"", ""};
    struct sl_store *wr;
    int64_t big = 0, late = 0;
    char buf[256], path[256];
    int rc = -1;

    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: big, team: vision, "
                    "labels: {sim-duration: 10m}}\nspec: {command: [train], "
                    "resources: {gpus: 4}}\n",
                    "admin", "default", "admin", &big, NULL),
           201, "a job that takes every GPU");
    is_int(submit_as_vera(e,
                          "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: late, labels: "
                          "{sim-duration: 10m}}\nspec: {command: [train], resources: {gpus: "
                          "1}, datasets: [imagenet@v3]}\n",
                          &late),
           201, "a job admitted with a dataset waits behind it");
    h_sync(e);
    snprintf(path, sizeof(path), "%s/data/sluice.db", tmpdir);
    if ((wr = sl_store_open(path, true, false, &err)) && sl_store_begin(wr) == 0 &&
        sl_store_obj_del(wr, "Dataset", "imagenet@v3") == 0)
        rc = sl_store_commit(wr, NULL);
    sl_store_close(wr);
    is_int(rc, 0, "(the dataset's declaration is then removed from the store)");
    h_clock_set(H_T0 + 30 * H_MIN);
    h_sync(e);
    h_sync(e);
    ok(rec.job_id == late && rec.nds == 0, "when the waiting job starts it gets no dataset");
    ok(strstr(job_message(rd, late, buf, sizeof(buf)),
              "dataset imagenet@v3 is no longer declared; not given to the job") != NULL,
       "and its message says so (%s)", buf);
    h_clock_set(H_T0 + 40 * H_MIN);
    h_sync(e);
}

/* A task that cannot start fails the gang; a failed task stops the
 * others. */
static void gangs(struct sl_engine *e, struct sl_store *rd)
{
    int64_t g1 = 0, g2 = 0;
    char buf[256], sigs[64];
    json_t *j;

    pthread_mutex_lock(&rec.mu);
    rec.fail_task = 1;
    pthread_mutex_unlock(&rec.mu);
    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: gang, team: vision, "
                    "labels: {sim-duration: 1h}}\nspec: {command: [train], tasks: 2, "
                    "resources: {gpus: 1}}\n",
                    "admin", "default", "admin", &g1, NULL),
           201, "a gang of two tasks whose second cannot start");
    h_sync(e);
    pthread_mutex_lock(&rec.mu);
    rec.fail_task = -1;
    pthread_mutex_unlock(&rec.mu);
    is_str(signals_of(g1, sigs, sizeof(sigs)), "9",
           "the task that started is killed at once (SIGKILL): all or nothing");
    h_sync(e);
    j = h_job(rd, g1);
    ok(j && strcmp(json_string_value(json_object_get(j, "state")), "Failed") == 0,
       "the attempt fails");
    json_decref(j);
    ok(h_events(rd, g1, "launched", buf, sizeof(buf)) == 1 &&
           strstr(buf, "task 1 failed to start: injected failure") != NULL,
       "its launch is recorded naming the task that failed to start and why (%s)", buf);

    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: gang2, team: vision, "
                    "labels: {sim-duration: 1h}}\nspec: {command: [train], tasks: 2, "
                    "resources: {gpus: 1}, checkpoint: {signal: SIGUSR1, grace: 60s}}\n",
                    "admin", "default", "admin", &g2, NULL),
           201, "a gang of two that starts");
    h_sync(e);
    is_str(h_job_state(rd, g2, buf, sizeof(buf)), "Running", "runs");
    pthread_mutex_lock(&rec.mu);
    rec.inject[rec.ninject++] = (struct sl_exec_event){
        .kind = SL_EXEC_EV_EXITED, .job_id = g2, .attempt = 0, .task = 1, .exit_code = 3};
    pthread_mutex_unlock(&rec.mu);
    h_sync(e);
    is_str(signals_of(g2, sigs, sizeof(sigs)), "10",
           "when its task 1 exits 3, task 0 is told to stop with its checkpoint signal");
    h_sync(e);
    j = h_job(rd, g2);
    ok(j && strcmp(json_string_value(json_object_get(j, "state")), "Failed") == 0 &&
           strstr(json_string_value(json_object_get(j, "message")), "gang stopped"),
       "and once it has, the job fails, the gang stopped");
    json_decref(j);
}

/* The executor's own time limit (Slurm's TIMEOUT) ends a job Timeout, not
 * retried, its exit code kept or 137. */
static void executor_timeout(struct sl_engine *e, struct sl_store *rd)
{
    int64_t t = 0;
    char buf[256];
    json_t *j;

    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: limited, team: vision, "
                    "labels: {sim-duration: 1h}}\nspec: {command: [train], retries: 2, "
                    "maxRuntime: 2h, resources: {gpus: 1}}\n",
                    "admin", "default", "admin", &t, NULL),
           201, "a job with retries and a maxRuntime");
    h_sync(e);
    is_str(h_job_state(rd, t, buf, sizeof(buf)), "Running", "runs");
    pthread_mutex_lock(&rec.mu);
    rec.inject[rec.ninject++] = (struct sl_exec_event){
        .kind = SL_EXEC_EV_EXITED, .job_id = t, .attempt = 0, .task = 0, .exit_code = 0,
        .timed_out = true, .note = "Slurm ended it at its time limit"};
    pthread_mutex_unlock(&rec.mu);
    h_sync(e);
    j = h_job(rd, t);
    ok(j && strcmp(json_string_value(json_object_get(j, "state")), "Timeout") == 0 &&
           json_integer_value(json_object_get(j, "exit_code")) == 137 &&
           json_integer_value(json_object_get(j, "attempt")) == 0,
       "the executor's time limit ends it Timeout with 137, not retried");
    ok(j && strcmp(json_string_value(json_object_get(j, "message")),
                   "exceeded maxRuntime of 2h; killed (Slurm ended it at its time limit)") == 0,
       "saying which limit (%s)", j ? json_string_value(json_object_get(j, "message")) : "");
    json_decref(j);
}

/* Preemption: the victim gets its checkpoint signal and goes back in
 * line; its preemptor runs. */
static void preemption(struct sl_engine *e, struct sl_store *rd)
{
    int64_t low = 0, high = 0;
    char buf[256], sigs[64];

    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: low, team: vision, "
                    "labels: {sim-duration: 1h}}\nspec: {command: [train], priorityClass: "
                    "best-effort, resources: {gpus: 4}}\n",
                    "admin", "default", "admin", &low, NULL),
           201, "a best-effort job on every GPU");
    h_sync(e);
    is_str(h_job_state(rd, low, buf, sizeof(buf)), "Running", "runs");
    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: high, team: vision, "
                    "labels: {sim-duration: 1h}}\nspec: {command: [train], priorityClass: "
                    "production, resources: {gpus: 4}}\n",
                    "admin", "default", "admin", &high, NULL),
           201, "a production job that needs them");
    h_sync(e);
    h_sync(e);
    is_str(signals_of(low, sigs, sizeof(sigs)), "15",
           "the best-effort job is sent its checkpoint signal (SIGTERM)");
    ok(h_events(rd, low, "preempt", buf, sizeof(buf)) == 1, "its preemption is recorded");
    ok(h_audit_count(rd, "job.preempt", "ok") == 1, "and audited");
    is_str(h_job_state(rd, low, buf, sizeof(buf)), "Pending",
           "once its tasks end it is back in line");
    is_str(h_job_state(rd, high, buf, sizeof(buf)), "Running", "and the production job runs");
    ok(rec.job_id == high, "started by the executor");
}

/* ---- with the local executor: a real process's environment --------------- */

static bool wait_state(struct sl_store *rd, int64_t id, const char *want)
{
    char state[32] = "";

    for (int waited = 0; waited < DEADLINE_MS; waited += 20) {
        struct timespec ts = {0, 20 * 1000000L};
        h_job_state(rd, id, state, sizeof(state));
        if (strcmp(state, want) == 0)
            return true;
        nanosleep(&ts, NULL);
    }
    diag("job %lld is %s, not %s", (long long)id, state, want);
    return false;
}

/* The line "KEY=..." of 'text', as the value ("" = none). */
static const char *line_of(const char *text, const char *key, char *buf, size_t size)
{
    size_t n = strlen(key);

    buf[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == '=') {
            size_t len = strcspn(p + n + 1, "\n");
            snprintf(buf, size, "%.*s", (int)len, p + n + 1);
            break;
        }
    return buf;
}

static void real_environment(void)
{
    char dir[128], path[1200], buf[256], gpus[64], token[96], account[64], *text = NULL;
    struct sl_engine_config cfg = {
        .executor = "local",
        .fake_gpus = "4xH100",
        .api_url = API_URL,
        .job_user = "nobody",
        .allow_daemon_user = "",
    };
    struct sl_store *rd = NULL;
    struct sl_engine *e;
    int64_t id = 0;
    size_t len = 0;
    FILE *f;

    if (geteuid() != 0) {
        /* not root: jobs run as this account, which must be named */
        struct passwd *pw = getpwuid(geteuid());
        cfg.job_user = cfg.allow_daemon_user = pw ? pw->pw_name : "";
    }
    snprintf(account, sizeof(account), "%s", cfg.job_user);
    snprintf(dir, sizeof(dir), "%s/local", tmpdir);
    mkdir(dir, 0700);
    e = h_engine_create(dir, cfg, NULL);
    if (!e || sl_engine_start(e) < 0) {
        ok(0, "an engine with the local executor (%s)", e ? "not started" : "not created");
        skip(10, "no local executor here");
        sl_engine_destroy(e);
        return;
    }
    rd = h_reader(dir);
    is_int(h_apply(e, catalog, "admin", "default", "admin", NULL), 200,
           "the local executor's engine: a team, a queue, a dataset");
    is_int(h_submit(e,
                    "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: env, team: vision}\n"
                    "spec: {command: [env], env: {FOO: bar}, resources: {gpus: 2}, "
                    "datasets: [imagenet@v3]}\n",
                    "admin", "default", "admin", &id, NULL),
           201, "a real job that prints its environment, on 2 of 4 fake GPUs");
    ok(wait_state(rd, id, "Succeeded"), "runs and succeeds");
    if (sl_engine_log_path(e, id, 0, path, sizeof(path)) == 0 && (f = fopen(path, "r"))) {
        text = calloc(1, 65536);
        len = text ? fread(text, 1, 65535, f) : 0;
        fclose(f);
    }
    ok(text && len > 0, "its log holds what it printed");
    placed_gpus(rd, id, 0, gpus, sizeof(gpus));
    ok(strlen(gpus) == 3 && strcmp(line_of(text, "CUDA_VISIBLE_DEVICES", buf, sizeof(buf)),
                                   gpus) == 0,
       "CUDA_VISIBLE_DEVICES is the GPUs it was placed on (%s)", gpus);
    is_str(line_of(text, "CUDA_DEVICE_ORDER", buf, sizeof(buf)), "PCI_BUS_ID",
           "CUDA_DEVICE_ORDER is PCI_BUS_ID, the order GPU indices count in");
    ok(strcmp(line_of(text, "FOO", buf, sizeof(buf)), "bar") == 0 &&
           strtoll(line_of(text, "SLUICE_JOB_ID", buf, sizeof(buf)), NULL, 10) == id,
       "it has its spec's variables and its SLUICE_JOB_ID");
    ok(strcmp(line_of(text, "SLUICE_DATASETS", buf, sizeof(buf)), "imagenet@v3") == 0 &&
           strcmp(line_of(text, "SLUICE_DATASET_IMAGENET", buf, sizeof(buf)),
                  "/data/imagenet/v3") == 0 &&
           strcmp(line_of(text, "SLUICE_DATASET_IMAGENET_MODE", buf, sizeof(buf)), "ro") == 0,
       "its dataset's path and mode");
    line_of(text, "SLUICE_TOKEN", token, sizeof(token));
    ok(strncmp(token, "sl_", 3) == 0 &&
           strcmp(line_of(text, "SLUICE_SERVER", buf, sizeof(buf)), API_URL) == 0,
       "its token and the API's address");
    ok(token[0] && !token_works(rd, token, NULL), "a token that ended with it");
    is_str(line_of(text, "USER", buf, sizeof(buf)), account,
           "and it ran as the job account (%s)", account);
    free(text);
    sl_engine_destroy(e);
    sl_store_close(rd);
}

int main(void)
{
    struct sl_engine_config cfg = {
        .executor = "simulated",
        .fake_gpus = "4xH100",
        .api_url = API_URL,
        .job_user = "nobody",
    };
    struct sl_store *rd;
    struct sl_engine *e;

    sl_log_set_level(SL_LOG_ERROR);
    if (sodium_init() < 0) {
        ok(0, "libsodium");
        return done_testing();
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-launch.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        ok(0, "a temp dir");
        return done_testing();
    }
    e = h_engine_create(tmpdir, cfg, NULL);
    if (!e) {
        ok(0, "an engine");
        h_rmtree(tmpdir);
        return done_testing();
    }
    rec_install(e);
    if (sl_engine_start(e) < 0) {
        ok(0, "the engine starts");
        sl_engine_destroy(e);
        h_rmtree(tmpdir);
        return done_testing();
    }
    rd = h_reader(tmpdir);
    is_int(h_apply(e, catalog, "admin", "default", "admin", NULL), 200,
           "a team, its queue, a member and two datasets");

    environment(e, rd);
    dataset_gone(e, rd);
    gangs(e, rd);
    executor_timeout(e, rd);
    preemption(e, rd);
    sl_engine_destroy(e);
    sl_store_close(rd);

    real_environment();
    h_rmtree(tmpdir);
    return done_testing();
}
