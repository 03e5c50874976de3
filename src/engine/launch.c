/*
 * launch.c - placement and launch: carrying out the scheduler's decisions
 * (place, preempt), the job environment, datasets and job tokens,
 * starting tasks and polling them.
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
#include "../sched/sched.h"
#include "../sim/trace.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/heap.h"
#include "../util/imap.h"

/* What a job's tasks get beyond their spec: the job token and the API's
 * address, and the datasets as the store has them now. */
struct job_env {
    char **v;                     /* the spec's env + ours, NULL-terminated */
    char *token_kv, *server_kv, *ca_kv;
    char array_kv[3][48];         /* SLUICE_ARRAY_*, for an array element */
    struct sl_exec_dataset ds[SL_EXEC_MAX_DATASETS];
    char *ds_text[SL_EXEC_MAX_DATASETS]; /* their documents (owned) */
    int nds;
};

static void job_env_fini(struct job_env *x)
{
    if (x->token_kv) {
        sodium_memzero(x->token_kv, strlen(x->token_kv));
        free(x->token_kv);
    }
    free(x->server_kv);
    free(x->ca_kv);
    free(x->v);
    for (int i = 0; i < x->nds; i++)
        free(x->ds_text[i]);
    memset(x, 0, sizeof(*x));
}

/* Dataset 'ref' ("name@version" or "name@version:rw", admitted at
 * submission) as the store has it: its path for the task. One gone since
 * is left out, and said. */
static void job_dataset(struct sl_engine *e, struct job *j, const char *ref,
                        struct job_env *x)
{
    char key[160], *colon, *text, *buf;
    const char *path;
    bool rw = false;
    json_t *d;
    size_t kn, pn;
    int rc;

    sl_strlcpy(key, ref, sizeof(key));
    if ((colon = strrchr(key, ':')) && strcmp(colon, ":rw") == 0) {
        *colon = '\0';
        rw = true;
    }
    text = sl_store_obj_get(e->st, "Dataset", key, &rc);
    d = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    path = json_string_value(json_object_get(d, "path"));
    if (!path) {
        sl_eng_job_msg(e, j, "dataset %s is no longer declared; not given to the job", key);
        json_decref(d);
        return;
    }
    kn = strlen(key) + 1;
    pn = strlen(path) + 1;
    if (!(buf = malloc(kn + pn))) {
        json_decref(d);
        return;
    }
    memcpy(buf, key, kn);
    memcpy(buf + kn, path, pn);
    json_decref(d);
    *strchr(buf, '@') = '\0'; /* name, version, path */
    x->ds_text[x->nds] = buf;
    x->ds[x->nds].name = buf;
    x->ds[x->nds].version = buf + strlen(buf) + 1;
    x->ds[x->nds].path = buf + kn;
    x->ds[x->nds].rw = rw;
    x->nds++;
}

static int job_env(struct sl_engine *e, struct job *j, struct job_env *x)
{
    int n = 0;
    bool own_ca = false;

    memset(x, 0, sizeof(*x));
    if (!(x->v = calloc((size_t)j->spec->envc + 7, sizeof(char *))))
        return -ENOMEM;
    for (int i = 0; i < j->spec->envc; i++) {
        x->v[n++] = j->spec->env[i];
        own_ca |= strncmp(j->spec->env[i], "SLUICE_CA_CERT=", 15) == 0;
    }
    if (j->token) {
        size_t len = strlen(j->token) + 16;
        if (!(x->token_kv = malloc(len)) ||
            !(x->server_kv = malloc(strlen(e->api_url) + 16))) {
            job_env_fini(x);
            return -ENOMEM;
        }
        snprintf(x->token_kv, len, "SLUICE_TOKEN=%s", j->token);
        snprintf(x->server_kv, strlen(e->api_url) + 16, "SLUICE_SERVER=%s", e->api_url);
        x->v[n++] = x->token_kv;
        x->v[n++] = x->server_kv;
        if (e->job_ca[0] && !own_ca) {
            /* the CA of the API's certificate (sluiced --tls-job-ca); a
             * job that names its own keeps it */
            size_t cl = strlen(e->job_ca) + 16;
            if (!(x->ca_kv = malloc(cl))) {
                job_env_fini(x);
                return -ENOMEM;
            }
            snprintf(x->ca_kv, cl, "SLUICE_CA_CERT=%s", e->job_ca);
            x->v[n++] = x->ca_kv;
        }
    }
    if (j->array_id > 0) { /* reserved in spec.env: the job cannot set them */
        snprintf(x->array_kv[0], sizeof(x->array_kv[0]), "SLUICE_ARRAY_JOB_ID=%lld",
                 (long long)j->array_id);
        snprintf(x->array_kv[1], sizeof(x->array_kv[1]), "SLUICE_ARRAY_INDEX=%d",
                 j->array_index);
        snprintf(x->array_kv[2], sizeof(x->array_kv[2]), "SLUICE_ARRAY_TASK_COUNT=%d",
                 j->array_count);
        for (int i = 0; i < 3; i++)
            x->v[n++] = x->array_kv[i];
    }
    for (int i = 0; i < j->spec->n_datasets && x->nds < SL_EXEC_MAX_DATASETS; i++)
        job_dataset(e, j, j->spec->datasets[i], x);
    return 0;
}

/* Every task of 'j' failed to start ('why'): the attempt fails. */
static void start_failed(struct sl_engine *e, struct job *j, const char *why)
{
    sl_eng_job_msg(e, j, "cannot start: %s", why);
    if (!j->end_note && why && why[0]) /* the end says why, too */
        j->end_note = strdup(why);
    for (int t = 0; t < j->spec->tasks; t++) {
        j->tasks[t].done = true;
        j->tasks[t].exit_code = 127;
    }
    j->gang_failed = true;
}

/* What the executor says of the started tasks, in the job: whether limits
 * and GPU isolation hold, and the first note that says how it runs (the
 * executor's own, then limits, GPUs, network). */
static void start_notes(struct sl_engine *e, struct job *j, const struct sl_exec_task_state *st)
{
    bool enforced = true, has_gpus = false, gpus_ok = true;
    const char *note = NULL, *limits = NULL, *gpus = NULL, *net = NULL;

    for (int t = 0; t < j->spec->tasks; t++) {
        if (st[t].status != SL_EXEC_TASK_RUNNING)
            continue;
        if (st[t].note[0] && !note)
            note = st[t].note;
        if (!st[t].limits_enforced) {
            enforced = false;
            limits = st[t].limits_note;
        }
        has_gpus |= j->tasks[t].ngpus > 0;
        if (j->tasks[t].ngpus > 0 && !st[t].gpus_enforced) {
            gpus_ok = false;
            gpus = st[t].gpus_note;
        }
        if (t == 0 && st[t].network_note[0])
            net = st[t].network_note;
    }
    if (e->caps.runs_commands) {
        /* where nothing runs, nothing is enforced or not: both stay null */
        j->limits_enforced = enforced;
        j->gpus_enforced = has_gpus ? gpus_ok : -1;
    }
    if (note && !j->message)
        sl_eng_job_msg(e, j, "%s", note);
    if (!enforced && limits && limits[0] && !j->message)
        sl_eng_job_msg(e, j, "limits not enforced: %s", limits);
    if (!gpus_ok && gpus && !j->message)
        sl_eng_job_msg(e, j, "%s", gpus); /* "GPU isolation not enforced: ..." */
    /* A profile the executor could not put in force is said, never
     * pretended (its note names why). */
    if (net && !j->message)
        sl_eng_job_msg(e, j, "%s", net);
}

/* What the executor is given of job 'j' on the places of 'tasks' (its
 * own, or its predecessor's when staged): pl[0..n) is filled. */
static void exec_job(const struct sl_engine *e, const struct job *j, const struct task *tasks,
                     int n, const struct job_env *env, struct sl_exec_place *pl,
                     struct sl_exec_job *xj)
{
    for (int t = 0; t < n; t++) {
        pl[t].node = tasks[t].node;
        pl[t].ngpus = tasks[t].ngpus;
        pl[t].gpu_milli = tasks[t].gpu_milli;
        memcpy(pl[t].gpus, tasks[t].gpus, sizeof(int) * (size_t)tasks[t].ngpus);
    }
    *xj = (struct sl_exec_job){
        .job_id = j->id,
        .attempt = j->attempt,
        .spec = j->spec,
        .env = env->v,
        .datasets = env->ds,
        .ndatasets = env->nds,
        .unix_user = j->unix_user[0] ? j->unix_user : e->job_user,
        .allow_daemon_user = e->allow_daemon_user,
        .log_cap_bytes = e->cfg.log_cap_bytes,
        .ntasks = n,
        .tasks = pl,
    };
}

int sl_eng_job_start_tasks(struct sl_engine *e, struct job *j)
{
    int n = j->spec->tasks > 0 ? j->spec->tasks : 1; /* validated: >= 1 */
    struct sl_exec_task_state *st = calloc((size_t)n, sizeof(*st));
    struct sl_exec_place *pl = calloc((size_t)n, sizeof(*pl));
    struct job_env env;
    struct sl_exec_job xj;

    if (!st || !pl || job_env(e, j, &env) < 0) {
        start_failed(e, j, "out of memory");
        free(st);
        free(pl);
        return -ENOMEM;
    }
    exec_job(e, j, j->tasks, n, &env, pl, &xj);
    sl_executor_start(e->x, &xj, st);
    for (int t = 0; t < n; t++) {
        struct task *tk = &j->tasks[t];
        if (st[t].status == SL_EXEC_TASK_RUNNING) {
            tk->started = true;
            continue;
        }
        if (!j->gang_failed)
            sl_eng_job_msg(e, j, "task %d failed to start: %s", t, st[t].error);
        if (!j->end_note && st[t].error[0]) /* the end says why, too */
            j->end_note = strdup(st[t].error); /* on -ENOMEM it says less */
        tk->done = true;
        tk->exit_code = 127;
        j->gang_failed = true;
    }
    job_env_fini(&env);
    sl_eng_job_token_drop(j);
    if (j->gang_failed)
        sl_eng_job_signal_all(e, j, SIGKILL); /* a gang runs whole or not at all */
    start_notes(e, j, st);
    free(st);
    free(pl);
    return 0;
}

/* The writes of a placement, in a savepoint of their own so that a failed
 * one leaves the row as it was: the row Running with its placement, the
 * attempt's start and the event Pending -> Running. */
static int job_place_write(struct sl_engine *e, struct job *j)
{
    bool fresh = j->fresh;
    int64_t now = sl_eng_now_ms(e);
    int rc;

    if ((rc = sl_store_savepoint(e->st)) < 0)
        return rc;
    if ((rc = sl_eng_job_row(e, j, -1, 0)) == 0 && (rc = sl_eng_ledger_open(e, j)) == 0 &&
        (rc = sl_eng_attempt_start(e, j)) == 0)
        rc = sl_store_event_add(e->st, j->id, now, "state", "Pending", "Running", j->message);
    if (rc < 0) {
        sl_store_rollback_to(e->st);
        j->fresh = fresh; /* its insert, if it was this, is undone */
    } else if ((rc = sl_store_release(e->st)) == 0 && fresh) {
        free(j->spec_json);
        j->spec_json = NULL;
        free(j->demoted);
        j->demoted = NULL;
    }
    return rc;
}

/* A token of the job's own for this attempt, given to its tasks (where
 * they can reach the API) to register models and read what their team
 * may: the job's user's team, role "job". Revoked when the attempt ends. */
static void job_token(struct sl_engine *e, struct job *j)
{
    char token[80], label[64];
    unsigned char hash[32];

    if (!e->caps.job_tokens || !e->api_url[0] || j->token)
        return;
    sl_eng_token_new(token, sizeof(token), hash);
    snprintf(label, sizeof(label), "job %lld attempt %d", (long long)j->id, j->attempt);
    if (sl_store_token_insert(e->st, hash, j->user, 0, label, j->id, NULL) == 0)
        j->token = strdup(token);
    else
        sl_warn("msg=\"cannot make a job token; the job runs without one\" job=%lld",
                (long long)j->id);
    sodium_memzero(token, sizeof(token));
}

/* Mark a placed job Running, before its tasks start: they start once
 * this has committed. On failure the job is Pending again, in the
 * scheduler too. */
static int job_place(struct sl_engine *e, struct job *j, const struct sl_sched_start *d)
{
    struct task *tasks = calloc((size_t)j->spec->tasks, sizeof(*tasks));
    int rc;

    if (!tasks) {
        sl_eng_job_requeue_sched(e, j, 0);
        return -ENOMEM;
    }
    for (int t = 0; t < d->ntasks; t++) {
        tasks[t].node = d->tasks[t].node;
        tasks[t].ngpus = d->tasks[t].ngpus;
        tasks[t].gpu_milli = d->tasks[t].gpu_milli;
        memcpy(tasks[t].gpus, d->tasks[t].gpus, sizeof(int) * (size_t)tasks[t].ngpus);
    }
    j->tasks = tasks;
    j->state = SL_JOB_RUNNING;
    j->started_ms = sl_eng_now_ms(e);
    j->not_before_ms = 0;
    sl_eng_job_msg(e, j, NULL);
    rc = (j->placement = sl_eng_placement_text(e, j)) ? 0 : -ENOMEM;
    if (rc == 0) {
        pthread_mutex_lock(&e->mu);
        rc = sl_eng_run_add(e, j);
        pthread_mutex_unlock(&e->mu);
    }
    if (rc == 0) {
        if ((rc = job_place_write(e, j)) < 0) {
            pthread_mutex_lock(&e->mu);
            sl_eng_run_del(e, j);
            pthread_mutex_unlock(&e->mu);
        }
    }
    if (rc < 0) {
        /* The row is unchanged: still Pending; give the scheduler's
         * allocation back and retry on the next pass. */
        j->tasks = NULL;
        free(tasks);
        free(j->placement);
        j->placement = NULL;
        j->state = SL_JOB_PENDING;
        j->started_ms = 0;
        sl_eng_job_msg(e, j, NULL);
        sl_eng_job_requeue_sched(e, j, 0);
        return rc;
    }
    if (j->spec->max_runtime_ms)
        j->ckpt_at_ms = sl_eng_mono_ms(e) + j->spec->max_runtime_ms;
    sl_eng_job_timer(e, j);
    sl_eng_ledger_running(e, j);
    if (e->ndepwait)
        e->dep_dirty = true; /* the words of the jobs waiting for it ("is Running") */
    atomic_fetch_add_explicit(&e->counters.placements, 1, memory_order_relaxed);
    job_token(e, j);
    {
        char obj[32];
        json_t *pl = json_loads(j->placement, 0, NULL);
        snprintf(obj, sizeof(obj), "job:%lld", (long long)j->id);
        sl_eng_audit_add(e, "scheduler", "job.place", obj, true,
                  json_pack("{s:s, s:s, s:s, s:o, s:i}", "team", j->team, "queue", j->queue,
                            "priority_class", j->pclass, "placement",
                            pl ? pl : json_array(), "attempt", j->attempt));
    }
    return 0;
}

/* The scheduler chose 'j' as a victim for job 'for_id'. */
static void job_preempt(struct sl_engine *e, struct job *j, int64_t for_id,
                        enum sl_preempt_why why)
{
    static const char *const whys[] = {
        [SL_PREEMPT_PRIORITY] = "a higher-priority job of its queue",
        [SL_PREEMPT_RECLAIM] = "its queue's cohort reclaiming lent quota",
        [SL_PREEMPT_OPPORTUNISTIC] = "it ran opportunistically on idle capacity",
    };

    if (j->state != SL_JOB_RUNNING || j->preempting || j->cancel_requested)
        return;
    j->preempting = true;
    j->preempted_for = for_id;
    j->intent_at_ms = sl_eng_now_ms(e);
    atomic_fetch_add_explicit(&e->counters.preemptions, 1, memory_order_relaxed);
    sl_eng_job_msg(e, j, "preempted for job %lld (%s): %s, SIGKILL in %llds",
            (long long)for_id, whys[why], sl_signal_name(j->spec->ckpt_signal),
            (long long)(j->spec->ckpt_grace_ms / 1000));
    if (sl_eng_job_intent_write(e, j, "preempt") < 0) {
        /* The group must not commit without it: a restart would let the
         * victim run on while its preemptor waits. */
        sl_error("msg=\"cannot record a preemption; the group fails\" job=%lld",
                 (long long)j->id);
        e->write_failed = true;
    }
    {
        static const char *const kinds[] = {
            [SL_PREEMPT_PRIORITY] = "priority", [SL_PREEMPT_RECLAIM] = "reclaim",
            [SL_PREEMPT_OPPORTUNISTIC] = "opportunistic",
        };
        char obj[32];
        snprintf(obj, sizeof(obj), "job:%lld", (long long)j->id);
        sl_eng_audit_add(e, "scheduler", why == SL_PREEMPT_RECLAIM ? "job.reclaim" : "job.preempt",
                  obj, true,
                  json_pack("{s:I, s:s, s:s, s:s, s:I}", "for_job", (json_int_t)for_id,
                            "why", kinds[why], "team", j->team, "queue", j->queue,
                            "grace_ms", (json_int_t)j->spec->ckpt_grace_ms));
    }
    sl_eng_job_signal_all(e, j, j->spec->ckpt_signal);
    j->kill_at_ms = sl_eng_mono_ms(e) + j->spec->ckpt_grace_ms;
    sl_eng_job_timer(e, j);
    sl_info("msg=\"preempting\" job=%lld for=%lld why=%d", (long long)j->id,
            (long long)for_id, (int)why);
}

void sl_eng_schedule(struct sl_engine *e, struct job ***started, size_t *nstarted)
{
    struct sl_sched_result res;
    int64_t now = sl_eng_now_ms(e);
    bool new_only = !e->sched_full && !(e->sched_wake_ms && now >= e->sched_wake_ms);
    int rc;

    *started = NULL;
    *nstarted = 0;
    pthread_mutex_lock(&e->mu);
    rc = sl_sched_pass(e->sched, now, new_only, &res);
    pthread_mutex_unlock(&e->mu);
    e->nfresh = 0;
    e->sched_full = false;
    e->sched_wake_ms = res.wake_ms;
    if (rc < 0) {
        sl_warn("msg=\"scheduling pass ran out of memory\"");
        e->sched_full = true;
    }
    if (res.nstarts > 0 && !(*started = calloc((size_t)res.nstarts, sizeof(**started)))) {
        for (int i = 0; i < res.nstarts; i++) {
            pthread_mutex_lock(&e->mu);
            sl_sched_job_requeue(e->sched, res.starts[i].job_id, now, 0);
            pthread_mutex_unlock(&e->mu);
        }
        e->sched_full = true;
    }
    for (int i = 0; i < res.nstarts && *started; i++) {
        struct job *j = sl_imap_get(&e->jobs, res.starts[i].job_id);
        if (!j || job_place(e, j, &res.starts[i]) < 0) {
            e->sched_full = true; /* still Pending: next pass */
            continue;
        }
        (*started)[(*nstarted)++] = j; /* launched after the commit */
    }
    for (int i = 0; i < res.npreempts; i++) {
        struct job *j = sl_imap_get(&e->jobs, res.preempts[i].job_id);
        if (j)
            job_preempt(e, j, res.preempts[i].for_job, res.preempts[i].why);
    }
    sl_sched_result_fini(&res);
    sl_eng_stage_pick(e);
}

void sl_eng_task_ended(struct sl_engine *e, struct job *j, int task, int code, bool lost,
                       const char *note)
{
    struct task *tk;
    bool all_done = true;

    if (task < 0 || task >= j->spec->tasks || !(tk = &j->tasks[task])->started || tk->done)
        return;
    tk->done = true;
    tk->exit_code = lost ? 255 : code;
    j->lost |= lost;
    if (note && note[0] && !j->end_note)
        j->end_note = strdup(note); /* on -ENOMEM the end just says less */
    if (tk->exit_code != 0 && !j->gang_failed && !j->cancel_requested && !j->timed_out &&
        !j->preempting) {
        /* One task of a gang failed: stop the others. */
        j->gang_failed = true;
        sl_eng_job_signal_all(e, j, j->spec->ckpt_signal);
        j->kill_at_ms = sl_eng_mono_ms(e) + j->spec->ckpt_grace_ms;
    }
    for (int t = 0; t < j->spec->tasks; t++)
        all_done &= j->tasks[t].done || !j->tasks[t].started;
    if (all_done)
        sl_eng_job_finish(e, j, j->lost);
    else
        sl_eng_job_timer(e, j);
}

void sl_eng_exec_events(struct sl_engine *e)
{
    struct sl_exec_event ev[64];
    int n;

    do {
        n = sl_executor_events(e->x, sl_eng_now_ms(e), ev, (int)SL_ARRAY_LEN(ev));
        for (int i = 0; i < n; i++) {
            struct job *j;
            if (ev[i].kind == SL_EXEC_EV_NODES) {
                sl_eng_nodes_refresh(e);
                continue;
            }
            j = sl_imap_get(&e->jobs, ev[i].job_id);
            if (ev[i].kind == SL_EXEC_EV_UNSTAGED) {
                if (j && j->state == SL_JOB_PENDING && j->staged_after &&
                    j->attempt == ev[i].attempt)
                    sl_eng_unstage(e, j, "its predecessor did not complete, or Slurm "
                                         "refused it");
                continue;
            }
            /* an end of an attempt that is over (a restart may report one
             * twice) is the executor's to forget, not ours to count */
            if (!j || j->state != SL_JOB_RUNNING || !j->tasks || j->attempt != ev[i].attempt)
                continue;
            if (ev[i].task >= 0 && ev[i].task < j->spec->tasks && !j->tasks[ev[i].task].done) {
                j->tasks[ev[i].task].ran_from_ms = ev[i].start_ms;
                j->tasks[ev[i].task].ran_to_ms = ev[i].end_ms;
            }
            if (ev[i].kind == SL_EXEC_EV_EXITED && ev[i].timed_out)
                j->timed_out = true; /* the executor's limit: Timeout too */
            sl_eng_task_ended(e, j, ev[i].task, ev[i].exit_code,
                              ev[i].kind == SL_EXEC_EV_LOST, ev[i].note);
        }
    } while (n == (int)SL_ARRAY_LEN(ev));
}

/* ---- staging ------------------------------------------------------------- */

/* Ask staged jobs back: every one ('all': another job now waits for what
 * they wait for), or those whose predecessor's node takes no new work
 * (an admin's cordon or drain, or its executor's state), where the
 * executor would otherwise start them the moment it frees. Those that had
 * not started come back as SL_EXEC_EV_UNSTAGED. */
static void stage_revoke(struct sl_engine *e, bool all)
{
    for (size_t i = 0; i < e->nrun; i++) {
        struct job *a = e->run[i], *b;
        struct sl_sched_node_view v;
        int64_t bid;
        pthread_mutex_lock(&e->mu);
        bid = sl_sched_job_successor(e->sched, a->id);
        if (bid && !all &&
            (!a->tasks || sl_sched_node_view(e->sched, a->tasks[0].node, &v) < 0 ||
             v.schedulable))
            bid = 0;
        pthread_mutex_unlock(&e->mu);
        if (bid && (b = sl_imap_get(&e->jobs, bid)) && b->staged_after == a->id &&
            !b->revoking) {
            b->revoking = true;
            sl_executor_revoke(e->x, b->id, b->attempt);
        }
    }
}

void sl_eng_stage_pick(struct sl_engine *e)
{
    struct sl_sched_stage st[64];
    int64_t now = sl_eng_now_ms(e);
    int n;

    if (!e->caps.stages)
        return;
    stage_revoke(e, false);
    pthread_mutex_lock(&e->mu);
    if (sl_sched_stage_contested(e->sched)) {
        pthread_mutex_unlock(&e->mu);
        stage_revoke(e, true);
        return;
    }
    n = sl_sched_stage_pick(e->sched, now, st, (int)SL_ARRAY_LEN(st));
    pthread_mutex_unlock(&e->mu);
    if (n == (int)SL_ARRAY_LEN(st))
        e->sched_full = true; /* more at the next pass */
    for (int i = 0; i < n; i++) {
        struct job *b = sl_imap_get(&e->jobs, st[i].job_id);
        struct job *a = sl_imap_get(&e->jobs, st[i].after);
        char note[96];
        if (!b || !a || b->state != SL_JOB_PENDING || a->state != SL_JOB_RUNNING ||
            !a->placement || !a->tasks || b->placement ||
            !(b->placement = strdup(a->placement)) ||
            sl_eng_vec_push((void **)&e->staging, &e->nstaging, &e->staging_cap,
                            sizeof(b->id), &b->id) < 0) {
            if (b) {
                free(b->placement);
                b->placement = NULL;
            }
            pthread_mutex_lock(&e->mu);
            sl_sched_job_unstage(e->sched, st[i].job_id);
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        b->staged_after = a->id;
        job_token(e, b); /* in its environment from the submission on */
        snprintf(note, sizeof(note), "staged behind job %lld", (long long)a->id);
        if (sl_eng_job_row(e, b, -1, 0) < 0 ||
            sl_store_event_add(e->st, b->id, now, "staged", "Pending", "Pending", note) < 0) {
            sl_error("msg=\"cannot record a staged job; the group fails\" job=%lld",
                     (long long)b->id);
            e->write_failed = true;
        }
    }
}

/* Hand staged job 'b' to the executor, behind 'a'. */
static int stage_one(struct sl_engine *e, struct job *b, struct job *a)
{
    int n = b->spec->tasks;
    struct sl_exec_place *pl = calloc((size_t)n, sizeof(*pl));
    struct job_env env;
    struct sl_exec_job xj;
    int rc;

    if (!pl || n > a->spec->tasks || job_env(e, b, &env) < 0) {
        free(pl);
        return -ENOMEM;
    }
    exec_job(e, b, a->tasks, n, &env, pl, &xj);
    xj.after_job = a->id;
    xj.after_attempt = a->attempt;
    rc = sl_executor_stage(e->x, &xj);
    job_env_fini(&env);
    sl_eng_job_token_drop(b);
    free(pl);
    return rc;
}

void sl_eng_stage_submit(struct sl_engine *e)
{
    int64_t *failed = NULL;
    size_t nfailed = 0;

    for (size_t i = 0; i < e->nstaging; i++) {
        struct job *b = sl_imap_get(&e->jobs, e->staging[i]), *a;
        if (!b || b->state != SL_JOB_PENDING || !b->staged_after)
            continue;
        a = sl_imap_get(&e->jobs, b->staged_after);
        if (!a || a->state != SL_JOB_RUNNING || !a->tasks || stage_one(e, b, a) < 0) {
            if (!failed && !(failed = calloc(e->nstaging, sizeof(*failed))))
                continue; /* it stays staged; its predecessor's end sends it back */
            failed[nfailed++] = b->id;
        }
    }
    e->nstaging = 0;
    if (nfailed && sl_store_begin(e->st) == 0) {
        for (size_t i = 0; i < nfailed; i++) {
            struct job *b = sl_imap_get(&e->jobs, failed[i]);
            if (b && b->state == SL_JOB_PENDING && b->staged_after)
                sl_eng_unstage(e, b, "the executor could not stage it");
        }
        if (sl_store_commit(e->st, NULL) < 0)
            sl_store_rollback(e->st);
    }
    free(failed);
}

void sl_eng_unstage(struct sl_engine *e, struct job *j, const char *why)
{
    pthread_mutex_lock(&e->mu);
    sl_sched_job_unstage(e->sched, j->id);
    pthread_mutex_unlock(&e->mu);
    j->staged_after = 0;
    j->revoking = false;
    free(j->placement);
    j->placement = NULL;
    e->sched_full = true;
    if (sl_eng_job_row(e, j, -1, 0) < 0 ||
        sl_store_event_add(e->st, j->id, sl_eng_now_ms(e), "unstaged", "Pending", "Pending",
                           why) < 0)
        sl_warn("msg=\"cannot record that a job is no longer staged\" job=%lld",
                (long long)j->id);
}

void sl_eng_stage_end(struct sl_engine *e, struct job *a, bool succeeded)
{
    struct sl_sched_task_place places[1];
    struct sl_sched_start d;
    struct job *b;
    int64_t bid;

    pthread_mutex_lock(&e->mu);
    bid = sl_sched_job_successor(e->sched, a->id);
    pthread_mutex_unlock(&e->mu);
    if (!bid || !(b = sl_imap_get(&e->jobs, bid)) || b->state != SL_JOB_PENDING ||
        b->staged_after != a->id)
        return;
    if (!succeeded || !a->tasks || b->spec->tasks != 1) {
        sl_executor_unstage(e->x, b->id, b->attempt);
        sl_eng_unstage(e, b, "its predecessor did not complete");
        return;
    }
    memset(places, 0, sizeof(places));
    places[0].node = a->tasks[0].node;
    places[0].ngpus = a->tasks[0].ngpus;
    places[0].gpu_milli = a->tasks[0].gpu_milli;
    memcpy(places[0].gpus, a->tasks[0].gpus, sizeof(int) * (size_t)a->tasks[0].ngpus);
    pthread_mutex_lock(&e->mu);
    bid = sl_sched_job_handover(e->sched, a->id, sl_eng_now_ms(e));
    pthread_mutex_unlock(&e->mu);
    if (bid != b->id) {
        sl_executor_unstage(e->x, b->id, b->attempt);
        sl_eng_unstage(e, b, "its predecessor's resources could not be handed over");
        return;
    }
    /* the executor started it as its predecessor completed: Running on
     * that placement from now, its tasks taken over at once */
    b->staged_after = 0;
    b->revoking = false;
    free(b->placement);
    b->placement = NULL;
    d = (struct sl_sched_start){.job_id = b->id, .ntasks = 1, .tasks = places};
    if (job_place(e, b, &d) < 0) {
        sl_executor_unstage(e->x, b->id, b->attempt);
        return; /* Pending again (job_place) */
    }
    sl_eng_job_start_tasks(e, b);
    sl_eng_job_timer(e, b);
    if (sl_eng_job_persist(e, b, "launched", "Running", -1, 0) < 0)
        e->write_failed = true;
    if (!b->tasks[0].started)
        sl_eng_job_finish(e, b, false);
}
