/*
 * recovery.c - creation and recovery: opening the store, loading state, re-adopting
 * running tasks and finishing acknowledged intents after a restart,
 * the job identity checks, bootstrap and the node list.
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

static int node_by_name(struct sl_engine *e, const char *name)
{
    struct sl_sched_node_view v;

    for (int i = 0; i < sl_sched_node_count(e->sched); i++)
        if (sl_sched_node_view(e->sched, i, &v) == 0 && strcmp(v.name, name) == 0)
            return i;
    return -1;
}

/* Ask the executor for the tasks of Running job 'j' placed at 'pl': each
 * runs on (its end comes as an event), ended while sluiced was down, or
 * is gone (lost). Returns 0 or -ENOMEM. */
static int adopt_tasks(struct sl_engine *e, struct job *j, const struct sl_sched_task_place *spl,
                       int64_t after, bool *lost, bool *all_done)
{
    int n = j->spec->tasks > 0 ? j->spec->tasks : 1; /* validated: >= 1 */
    struct sl_exec_task_state *st = calloc((size_t)n, sizeof(*st));
    struct sl_exec_place *pl = calloc((size_t)n, sizeof(*pl));
    struct sl_exec_job xj;
    int rc = -ENOMEM;

    if (!st || !pl)
        goto out;
    for (int t = 0; t < n; t++) {
        pl[t].node = spl[t].node;
        pl[t].ngpus = spl[t].ngpus;
        pl[t].gpu_milli = spl[t].gpu_milli;
        memcpy(pl[t].gpus, spl[t].gpus, sizeof(int) * (size_t)spl[t].ngpus);
    }
    xj = (struct sl_exec_job){.job_id = j->id, .attempt = j->attempt, .spec = j->spec,
                              .unix_user = j->unix_user, .allow_daemon_user = e->allow_daemon_user,
                              .log_cap_bytes = e->cfg.log_cap_bytes, .ntasks = n, .tasks = pl,
                              .after_job = after};
    if ((rc = sl_executor_adopt(e->x, &xj, st)) < 0)
        goto out;
    for (int t = 0; t < n; t++) {
        struct task *tk = &j->tasks[t];
        switch (st[t].status) {
        case SL_EXEC_TASK_RUNNING:
            tk->started = true;
            *all_done = false;
            /* What holds now, not what held at the start. */
            if (tk->ngpus > 0 && !st[t].gpus_enforced && j->gpus_enforced == 1) {
                j->gpus_enforced = 0;
                sl_eng_job_msg(e, j, "%s", st[t].gpus_note);
            }
            break;
        case SL_EXEC_TASK_EXITED:
            tk->started = tk->done = true;
            tk->exit_code = st[t].exit_code;
            break;
        default:
            tk->done = true;
            tk->exit_code = 255;
            *lost = true;
            break;
        }
    }
out:
    free(st);
    free(pl);
    return rc;
}

/* Rebuild a Running job's tasks from its stored placement and re-adopt its
 * processes. Returns 0, -ENOMEM, or -EINVAL when the placement no longer
 * fits the cluster (then the job is Lost). */
static int readopt(struct sl_engine *e, struct job *j, const char *placement,
                   struct sl_sched_task_place *pl, int64_t after)
{
    json_t *arr = placement ? json_loads(placement, 0, NULL) : NULL;
    size_t i;
    json_t *p;
    bool lost = false, all_done = true;
    int rc;

    if (!(j->tasks = calloc((size_t)j->spec->tasks, sizeof(*j->tasks)))) {
        json_decref(arr);
        return -ENOMEM;
    }
    for (int t = 0; t < j->spec->tasks; t++)
        j->tasks[t].node = -1;
    json_array_foreach(arr, i, p) {
        int t = (int)json_integer_value(json_object_get(p, "task"));
        const char *nname = json_string_value(json_object_get(p, "node"));
        json_t *g;
        size_t k;
        if (t < 0 || t >= j->spec->tasks)
            continue;
        j->tasks[t].node = nname ? node_by_name(e, nname) : -1;
        j->tasks[t].gpu_milli = (int)json_integer_value(json_object_get(p, "gpu_milli"));
        json_array_foreach(json_object_get(p, "gpus"), k, g) {
            int idx = (int)json_integer_value(g);
            if (idx >= 0 && idx < SL_EXEC_MAX_GPUS && j->tasks[t].ngpus < SL_EXEC_MAX_GPUS)
                j->tasks[t].gpus[j->tasks[t].ngpus++] = idx;
        }
    }
    json_decref(arr);
    for (int t = 0; t < j->spec->tasks; t++) {
        struct task *tk = &j->tasks[t];
        if (tk->node < 0)
            return -EINVAL;
        pl[t].node = tk->node;
        pl[t].ngpus = tk->ngpus;
        pl[t].gpu_milli = tk->gpu_milli;
        memcpy(pl[t].gpus, tk->gpus, sizeof(int) * (size_t)tk->ngpus);
    }
    if ((rc = adopt_tasks(e, j, pl, after, &lost, &all_done)) < 0)
        return rc;
    if (!(j->placement = sl_eng_placement_text(e, j)))
        return -ENOMEM;
    if (j->spec->max_runtime_ms)
        j->ckpt_at_ms = sl_eng_mono_ms(e) + j->spec->max_runtime_ms -
                        (sl_eng_now_ms(e) - j->started_ms);
    j->lost = lost;
    if (lost && !all_done) {
        /* Part of the gang is gone: the job cannot go on. */
        sl_eng_job_signal_all(e, j, SIGKILL);
    }
    sl_info("msg=\"re-adopted running job\" job=%lld lost=%d", (long long)j->id, lost);
    return 0;
}

/* A re-adopted job that was told to stop before the restart (a cancel, a
 * preemption, a timeout, or the failure of one task of its gang) is told
 * again, and killed when its grace, counted from the first signal, is
 * over: an acknowledged intent outlives the daemon. */
static void intent_resume(struct sl_engine *e, struct job *j)
{
    const char *what = j->cancel_requested ? "cancel"
                       : j->preempting     ? "preemption"
                       : j->timed_out      ? "timeout"
                                           : NULL;
    int sig = j->cancel_requested ? SIGTERM : j->spec->ckpt_signal;
    int64_t grace = j->cancel_requested ? e->cfg.cancel_grace_ms : j->spec->ckpt_grace_ms;
    int64_t left;

    if (!what) {
        /* A gang whose task failed while the daemon was down stops whole. */
        for (int t = 0; t < j->spec->tasks && !j->gang_failed; t++)
            j->gang_failed = j->tasks[t].done && j->tasks[t].exit_code != 0;
        if (!j->gang_failed)
            return;
        what = "failed gang";
        j->intent_at_ms = sl_eng_now_ms(e);
    }
    left = j->intent_at_ms + grace - sl_eng_now_ms(e);
    if (left < 0)
        left = 0;
    sl_eng_job_signal_all(e, j, sig);
    j->kill_at_ms = sl_eng_mono_ms(e) + left;
    sl_info("msg=\"re-adopted job was told to stop: signalled again\" job=%lld intent=\"%s\" "
            "signal=%s kill_in_ms=%lld",
            (long long)j->id, what, sl_signal_name(sig), (long long)left);
}

/* A Pending job that never started waits for its spec.dependency again,
 * judged in the first group from the stored states (sl_eng_depend_update). */
static int depend_reload(struct sl_engine *e, struct job *j)
{
    struct sl_error err = {0};
    struct sl_depend *d;
    int rc;

    if (!j->spec->dependency)
        return 0;
    if (!(d = malloc(sizeof(*d))))
        return -ENOMEM;
    if ((rc = sl_depend_parse(j->spec->dependency, d, &err)) < 0) {
        free(d); /* the stored spec was normalised: cannot happen */
        sl_error("msg=\"stored dependency does not parse\" job=%lld err=\"%s\"",
                 (long long)j->id, err.text);
        return 0;
    }
    j->dep = d;
    e->ndepwait++;
    e->dep_dirty = true;
    return sl_sched_job_wait(e->sched, j->id, "waiting for dependency");
}

/* An array element that never started waits for its place under the
 * array's limit again; the first group makes as many eligible as fit. */
static int array_reload(struct sl_engine *e, struct job *j)
{
    if (j->array_limit <= 0)
        return 0;
    sl_eng_array_hold(e, j);
    e->dep_dirty = true;
    return j->array_held ? 0 : -ENOMEM;
}

/* The array fields of a loaded job: its place, and its array's size and
 * limit from spec.array. */
static void array_load(struct job *j, const struct sl_job_view *v)
{
    struct sl_array *a;
    struct sl_error err = {0};

    if (v->array_job_id <= 0 || !j->spec->array || !(a = malloc(sizeof(*a))))
        return;
    j->array_id = v->array_job_id;
    j->array_index = v->array_index;
    if (sl_array_parse(j->spec->array, a, &err) == 0) {
        j->array_count = a->n;
        j->array_limit = a->limit;
    }
    free(a);
}

static int ld_job(void *arg, const struct sl_job_view *v, int64_t not_before)
{
    struct sl_engine *e = arg;
    struct sl_error err = {0};
    struct sl_sched_job_spec sj;
    struct sl_sched_task_place *pl = NULL;
    struct job *j = calloc(1, sizeof(*j));
    struct queue *q;
    struct pclass *pc;
    struct user *u;
    int rc, user;

    if (!j)
        return -ENOMEM;
    if (sl_job_spec_parse(v->spec_json, strlen(v->spec_json), &j->spec, &err) < 0) {
        sl_error("msg=\"stored job spec does not parse\" job=%lld err=\"%s: %s\"",
                 (long long)v->id, err.field, err.text);
        free(j);
        return 0; /* leave it; it cannot run */
    }
    q = sl_eng_queue_find(e, v->queue);
    pc = sl_eng_pclass_find(e, v->priority_class);
    if (!q || !pc) {
        sl_error("msg=\"stored job names an unknown queue or class\" job=%lld",
                 (long long)v->id);
        sl_eng_job_free(j);
        return 0;
    }
    j->id = v->id;
    u = sl_eng_user_find(e, v->user);
    if (!(j->name = strdup(v->name)) || !(j->team = sl_eng_intern(&e->strs, v->team)) ||
        !(j->project = sl_eng_intern(&e->strs, v->project)) ||
        !(j->user = sl_eng_intern(&e->strs, v->user)) ||
        !(j->unix_user = sl_eng_intern(&e->strs, u ? u->unix_user : "")) ||
        !(j->queue = sl_eng_intern(&e->strs, v->queue)) ||
        !(j->pclass = sl_eng_intern(&e->strs, v->priority_class))) {
        sl_eng_job_free(j);
        return -ENOMEM;
    }
    j->priority = v->priority;
    j->state = v->state == SL_JOB_PREEMPTED ? SL_JOB_PENDING : v->state;
    j->attempt = v->attempt;
    j->preemptions = v->preemptions;
    j->submitted_ms = v->submitted_ms;
    j->started_ms = v->started_ms;
    j->not_before_ms = not_before;
    j->limits_enforced = v->limits_enforced;
    j->gpus_enforced = v->gpus_enforced;
    array_load(j, v);
    if (v->state == SL_JOB_RUNNING && v->intent && *v->intent) {
        /* Told to stop before the restart: finished below (intent_resume). */
        j->cancel_requested = strcmp(v->intent, "cancel") == 0;
        j->requeuing = strncmp(v->intent, "requeue", 7) == 0;
        j->requeue_hold = strncmp(v->intent, "requeue-hold", 12) == 0;
        j->hold_admin = strcmp(v->intent, "requeue-hold-admin") == 0;
        j->preempting = j->requeuing || strcmp(v->intent, "preempt") == 0;
        j->timed_out = strcmp(v->intent, "timeout") == 0;
        j->preempted_for = j->preempting ? v->intent_for : 0;
        j->intent_at_ms = v->intent_at_ms;
    }
    j->message = v->message && *v->message ? strdup(v->message) : NULL;
    if (v->hold_by && *v->hold_by && !(j->hold_by = sl_eng_intern(&e->strs, v->hold_by))) {
        sl_eng_job_free(j);
        return -ENOMEM;
    }
    if ((user = sl_sched_user(e->sched, j->user)) < 0) {
        sl_eng_job_free(j);
        return user;
    }
    sl_eng_sched_spec(e, j, q, pc, user, &sj);
    if (j->state == SL_JOB_RUNNING) {
        if (!(pl = calloc((size_t)j->spec->tasks, sizeof(*pl)))) {
            sl_eng_job_free(j);
            return -ENOMEM;
        }
        rc = readopt(e, j, v->placement_json, pl, 0);
        if (rc == 0)
            rc = sl_sched_job_add_running(e->sched, &sj, pl, j->started_ms, &err);
        if (rc == -EINVAL) {
            /* The cluster changed under it (a node gone, GPUs fewer): it
             * cannot be accounted for; it is lost and the next pass retries
             * it per policy. */
            sl_error("msg=\"running job's placement no longer fits the cluster\" "
                     "job=%lld err=\"%s\"", (long long)j->id, err.text);
            sl_eng_job_signal_all(e, j, SIGKILL);
            free(j->tasks);
            j->tasks = NULL;
            free(j->placement);
            j->placement = NULL;
            j->state = SL_JOB_PENDING;
            j->started_ms = 0;
            /* A preemption or timeout ends with this attempt; an
             * acknowledged cancel still holds (load_cancels). */
            j->preempting = j->timed_out = j->requeuing = j->requeue_hold = false;
            j->preempted_for = 0;
            sl_eng_sched_spec(e, j, q, pc, user, &sj);
            rc = sl_sched_job_add(e->sched, &sj, &err);
        }
        free(pl);
        if (rc < 0) {
            sl_eng_job_free(j);
            return rc;
        }
        if (j->state == SL_JOB_RUNNING && (rc = sl_eng_run_add(e, j)) < 0) {
            sl_sched_job_remove(e->sched, j->id, sl_eng_now_ms(e));
            sl_eng_job_free(j);
            return rc;
        }
    } else if ((rc = sl_sched_job_add(e->sched, &sj, &err)) < 0) {
        sl_eng_job_free(j);
        return rc;
    } else if (v->state == SL_JOB_PENDING && v->intent && strcmp(v->intent, "staged") == 0 &&
               v->intent_for > 0 && v->placement_json) {
        /* staged in the executor: resolved in the first group */
        if (!(j->placement = strdup(v->placement_json)) ||
            (rc = sl_eng_vec_push((void **)&e->restaged, &e->nrestaged, &e->restaged_cap,
                                  sizeof(j->id), &j->id)) < 0) {
            sl_sched_job_remove(e->sched, j->id, sl_eng_now_ms(e));
            sl_eng_job_free(j);
            return -ENOMEM;
        }
        j->staged_after = v->intent_for;
    } else if (v->state == SL_JOB_PENDING && v->intent &&
               (strcmp(v->intent, "held") == 0 || strcmp(v->intent, "held-admin") == 0)) {
        /* held (sluice hold): still held, its place in line kept */
        j->held = true;
        j->hold_admin = strcmp(v->intent, "held-admin") == 0;
        sl_sched_job_hold(e->sched, j->id, true);
        sl_eng_hold_note(e, j);
    }
    if ((rc = sl_imap_put(&e->jobs, j->id, j)) < 0) {
        sl_sched_job_remove(e->sched, j->id, sl_eng_now_ms(e));
        if (j->state == SL_JOB_RUNNING)
            sl_eng_run_del(e, j);
        sl_eng_job_free(j);
        return rc;
    }
    if (j->state == SL_JOB_PENDING && j->attempt == 0 && j->preemptions == 0 && !j->started_ms &&
        !j->staged_after && ((rc = depend_reload(e, j)) < 0 || (rc = array_reload(e, j)) < 0))
        return rc;
    if (j->state == SL_JOB_RUNNING) {
        bool all_done = true;
        intent_resume(e, j);
        sl_eng_job_timer(e, j);
        for (int t = 0; t < j->spec->tasks; t++)
            all_done &= j->tasks[t].done;
        /* No event will tell of these ends: they are known already. */
        if (all_done && (rc = sl_eng_vec_push((void **)&e->ended, &e->nended, &e->ended_cap,
                                              sizeof(j->id), &j->id)) < 0)
            return rc;
    }
    return 0;
}

/* Staged job 'j' (loaded Pending) started behind its predecessor while
 * sluiced was down: Running on the placement it was staged for, from
 * now (the ledger counts from Slurm's start as for every job). */
static int restage_run(struct sl_engine *e, struct job *j, const struct sl_sched_task_place *pl,
                       int64_t after)
{
    struct queue *q = sl_eng_queue_find(e, j->queue);
    struct pclass *pc = sl_eng_pclass_find(e, j->pclass);
    struct sl_sched_job_spec sj;
    struct sl_error err = {0};
    int rc = -EINVAL, user;

    pthread_mutex_lock(&e->mu);
    if (q && pc && (user = sl_sched_user(e->sched, j->user)) >= 0) {
        sl_eng_sched_spec(e, j, q, pc, user, &sj);
        sl_sched_job_remove(e->sched, j->id, sl_eng_now_ms(e));
        if ((rc = sl_sched_job_add_running(e->sched, &sj, pl, j->started_ms, &err)) < 0)
            sl_sched_job_add(e->sched, &sj, &err);
        else if ((rc = sl_eng_run_add(e, j)) < 0)
            sl_sched_job_requeue(e->sched, j->id, sl_eng_now_ms(e), 0);
    }
    pthread_mutex_unlock(&e->mu);
    if (rc < 0)
        return rc;
    j->state = SL_JOB_RUNNING;
    sl_eng_job_msg(e, j, "started behind job %lld while sluiced was down", (long long)after);
    /* its output may have begun already: the attempt then starts where
     * the log is now, late */
    if (sl_eng_job_row(e, j, -1, 0) < 0 || sl_eng_ledger_open(e, j) < 0 ||
        sl_eng_attempt_start(e, j) < 0 ||
        sl_store_event_add(e->st, j->id, sl_eng_now_ms(e), "state", "Pending", "Running",
                           j->message) < 0)
        e->write_failed = true;
    sl_eng_ledger_running(e, j);
    sl_eng_job_timer(e, j);
    return 0;
}

/* A staged job loaded from the store: the executor withdraws it when it
 * had not started (Pending again), else it runs or ran (re-adopted). */
static void restage_one(struct sl_engine *e, struct job *j)
{
    struct sl_sched_task_place *pl = calloc((size_t)j->spec->tasks, sizeof(*pl));
    char *placement = j->placement;
    int64_t after = j->staged_after;
    bool started = false, all_done = true;
    int rc = -ENOMEM;

    j->placement = NULL;
    j->staged_after = 0;
    j->started_ms = sl_eng_now_ms(e);
    if (pl)
        rc = readopt(e, j, placement, pl, after);
    free(placement);
    for (int t = 0; rc == 0 && j->tasks && t < j->spec->tasks; t++) {
        started |= j->tasks[t].started;
        all_done &= j->tasks[t].done;
    }
    if (started && (rc = restage_run(e, j, pl, after)) == 0) {
        if (all_done)
            sl_eng_job_finish(e, j, j->lost);
        free(pl);
        return;
    }
    /* it had not started (withdrawn now), or cannot be taken back */
    free(j->tasks);
    j->tasks = NULL;
    free(j->placement);
    j->placement = NULL;
    j->lost = false;
    j->started_ms = 0;
    j->ckpt_at_ms = 0;
    if (sl_eng_job_row(e, j, -1, 0) < 0 ||
        sl_store_event_add(e->st, j->id, sl_eng_now_ms(e), "unstaged", "Pending", "Pending",
                           "withdrawn when sluiced restarted") < 0)
        e->write_failed = true;
    free(pl);
}

void sl_eng_restage_resolve(struct sl_engine *e)
{
    for (size_t i = 0; i < e->nrestaged; i++) {
        struct job *j = sl_imap_get(&e->jobs, e->restaged[i]);
        if (j && j->state == SL_JOB_PENDING && j->staged_after)
            restage_one(e, j);
    }
    e->nrestaged = 0;
}

/* Jobs whose cancel was acknowledged but whose tasks could not be
 * re-adopted (their placement no longer fits the cluster) are Pending
 * again after ld_job: they end Cancelled now, rather than run again. */
static int load_cancels(struct sl_engine *e)
{
    struct job **found = NULL;
    size_t n = 0, cap = 0, pos = 0;
    int64_t id;
    void *v;
    int rc = 0;

    while (rc == 0 && sl_imap_next(&e->jobs, &pos, &id, &v)) {
        struct job *j = v;
        if (j->state == SL_JOB_PENDING && j->cancel_requested)
            rc = sl_eng_vec_push((void **)&found, &n, &cap, sizeof(j), &j);
    }
    if (rc == 0 && n > 0 && (rc = sl_store_begin(e->st)) == 0) {
        for (size_t i = 0; i < n && rc == 0; i++) {
            found[i]->state = SL_JOB_CANCELLED;
            sl_eng_job_msg(e, found[i], "cancelled: its tasks were gone when sluiced restarted");
            rc = sl_eng_job_persist(e, found[i], "state", "Running", -1, sl_eng_now_ms(e));
        }
        if (rc == 0)
            rc = sl_store_commit(e->st, NULL);
        else
            sl_store_rollback(e->st);
        for (size_t i = 0; i < n; i++) {
            if (rc == 0)
                sl_eng_job_forget(e, found[i]);
            else
                found[i]->state = SL_JOB_PENDING;
        }
    }
    free(found);
    return rc;
}

int sl_eng_account_check(const struct sl_engine *e, const char *name, struct sl_error *err)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    int rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);

    if (rc != 0 || !res)
        return sl_errorf(err, -EINVAL, "\"%s\": %s", name,
                         rc ? strerror(rc) : "no such Unix account on this host");
    if ((pw.pw_uid == geteuid() || pw.pw_uid == 0) && strcmp(name, e->allow_daemon_user) != 0)
        return sl_errorf(err, -EPERM,
                         "\"%s\" has uid %u, %s: jobs never run with the daemon's "
                         "identity (an admin allows one such account with "
                         "--allow-daemon-user)",
                         name, (unsigned)pw.pw_uid,
                         pw.pw_uid == geteuid() ? "sluiced's own" : "root's");
    if (geteuid() != 0 && pw.pw_uid != geteuid())
        return sl_errorf(err, -EPERM,
                         "\"%s\": sluiced runs as uid %u, not root, and cannot run "
                         "jobs as another account",
                         name, (unsigned)geteuid());
    return 0;
}

/* Who jobs run as (local executor), settled before anything is created:
 * as root, the default account must be one a job may run as; not as
 * root, jobs can run only as the daemon's own account, which must then be
 * allowed by name, and is the default for everyone. */
static int identity_setup(struct sl_engine *e, struct sl_error *err)
{
    struct sl_error why = {0};

    if (geteuid() != 0) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &res) != 0 || !res)
            return sl_errorf(err, -EINVAL, "uid %u has no Unix account name",
                             (unsigned)geteuid());
        if (strcmp(pw.pw_name, e->allow_daemon_user) != 0)
            return sl_errorf(err, -EPERM,
                             "sluiced runs as %s (uid %u), not root, so it cannot run "
                             "jobs as other accounts and every job would run with the "
                             "daemon's identity; run it as root, or allow that with "
                             "--allow-daemon-user %s (its jobs can then read the data dir)",
                             pw.pw_name, (unsigned)geteuid(), pw.pw_name);
        sl_strlcpy(e->job_user, pw.pw_name, sizeof(e->job_user));
        sl_warn("msg=\"jobs run as sluiced's own account\" user=%s "
                "why=\"sluiced is not root; --allow-daemon-user names it\"",
                pw.pw_name);
        return 0;
    }
    if (strcmp(e->job_user, "none") == 0)
        e->job_user[0] = '\0';
    if (e->job_user[0] && sl_eng_account_check(e, e->job_user, &why) < 0)
        return sl_errorf(err, -EINVAL, "--job-user %s", why.text);
    sl_info("msg=\"job identity\" unmapped_users=%s allow_daemon_user=%s",
            e->job_user[0] ? e->job_user : "refused",
            e->allow_daemon_user[0] ? e->allow_daemon_user : "none");
    return 0;
}

static int bootstrap(struct sl_engine *e, char **admin_token)
{
    static const struct {
        const char *name;
        int value;
        bool preemptible, is_default, opportunistic;
    } classes[] = {
        /* name, value, preemptible, default, opportunistic */
        {"production", 1000, false, false, false},
        {"batch", 100, true, true, false},
        {"best-effort", 0, true, false, true},
    };
    char token[80], buf[8];
    unsigned char hash[32];
    int rc;

    if (sl_store_meta_get(e->st, "initialized", buf, sizeof(buf)) == 0)
        return 0;
    if ((rc = sl_store_begin(e->st)) < 0)
        return rc;
    rc = sl_store_team_upsert(e->st, "default", "default");
    if (rc >= 0)
        rc = sl_store_queue_upsert(e->st, "default", "default", NULL);
    for (size_t i = 0; rc >= 0 && i < SL_ARRAY_LEN(classes); i++)
        rc = sl_store_pclass_upsert(e->st, classes[i].name, classes[i].value,
                                    classes[i].preemptible, classes[i].is_default,
                                    classes[i].opportunistic, 0);
    if (rc >= 0)
        rc = sl_store_user_upsert(e->st, "admin", "default", "admin", "");
    sl_eng_token_new(token, sizeof(token), hash);
    if (rc >= 0)
        rc = sl_store_token_insert(e->st, hash, "admin", 0, "bootstrap", 0, NULL);
    if (rc >= 0)
        rc = sl_store_meta_set(e->st, "initialized", "1");
    if (rc < 0) {
        sl_store_rollback(e->st);
        return rc;
    }
    if ((rc = sl_store_commit(e->st, NULL)) < 0)
        return rc;
    *admin_token = strdup(token);
    sodium_memzero(token, sizeof(token));
    return *admin_token ? 0 : -ENOMEM;
}

/* A new engine holding its own copies of the settings' strings; NULL on
 * -ENOMEM. */
static struct sl_engine *engine_alloc(const struct sl_engine_config *cfg)
{
    struct sl_engine *e = calloc(1, sizeof(*e));

    if (!e)
        return NULL;
    e->wake_fd = -1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->qmu, NULL);
    pthread_mutex_init(&e->smu, NULL);
    pthread_cond_init(&e->scond, NULL);
    sl_imap_init(&e->jobs);
    sl_heap_init(&e->timers);
    e->cfg = *cfg;
    sl_strlcpy(e->api_url, cfg->api_url ? cfg->api_url : "", sizeof(e->api_url));
    sl_strlcpy(e->job_ca, cfg->job_ca_cert ? cfg->job_ca_cert : "", sizeof(e->job_ca));
    sl_strlcpy(e->job_user, cfg->job_user ? cfg->job_user : "", sizeof(e->job_user));
    sl_strlcpy(e->allow_daemon_user, cfg->allow_daemon_user ? cfg->allow_daemon_user : "",
               sizeof(e->allow_daemon_user));
    e->cfg.job_user = e->job_user;
    e->cfg.allow_daemon_user = e->allow_daemon_user;
    sl_strlcpy(e->data_dir, cfg->data_dir, sizeof(e->data_dir));
    e->cfg.data_dir = e->data_dir;
    if (cfg->store_path)
        sl_strlcpy(e->store_path, cfg->store_path, sizeof(e->store_path));
    else
        snprintf(e->store_path, sizeof(e->store_path), "%s/sluice.db", e->data_dir);
    e->cfg.store_path = e->store_path;
    if (!e->cfg.now_ms)
        e->cfg.now_ms = sl_now_ms;
    if (!e->cfg.mono_ms)
        e->cfg.mono_ms = sl_mono_ms;
    if (gethostname(e->hostname, sizeof(e->hostname) - 1) < 0)
        sl_strlcpy(e->hostname, "localhost", sizeof(e->hostname));
    return e;
}

/* The store (a new one bootstrapped, giving *admin_token), its WAL
 * checkpointer, and the settings kept in it: the scheduler's, since when
 * the meter counts. */
static int store_open(struct sl_engine *e, char **admin_token, struct sl_error *err)
{
    struct sl_error cerr = {0};
    char stored[8192];
    int rc;

    /* Commits do not fsync; with sync_full the syncer has the store sync
     * them (sl_store_sync) before answering, overlapping the flush with the
     * next group. */
    if (!(e->st = sl_store_open(e->store_path, true, false, err)))
        return -EIO;
    /* Several daemons on the store: every transaction from here on commits
     * only under the epoch this one leads (decision 0015). */
    if (e->cfg.ha_epoch && (rc = sl_store_fence(e->st, e->cfg.ha_epoch)) < 0)
        return sl_errorf(err, rc, "store: cannot fence writes: %s", strerror(-rc));
    /* The WAL checkpoint (page copies and two fsyncs every ~4 MiB of WAL)
     * on a thread of its own rather than inside our commits. */
    if (sl_store_checkpointer_start(e->st, CHECKPOINT_PAGES, &cerr) < 0)
        sl_warn("msg=\"checkpoints stay on the engine thread\" err=\"%s\"", cerr.text);
    if ((rc = bootstrap(e, admin_token)) < 0)
        return sl_errorf(err, rc, "store: cannot initialise: %s", strerror(-rc));
    if (sl_store_meta_get(e->st, "scheduler", stored, sizeof(stored)) == 0) {
        struct sl_manifest *m = NULL;
        if (sl_eng_manifest_from_store("Scheduler", "default", stored, &m) == 0) {
            sl_eng_sched_settings(e, m);
            free(m);
        }
    }
    sl_pricing_init(&e->pricing);
    if (sl_store_meta_get(e->st, "meter_since", stored, sizeof(stored)) < 0 ||
        sl_parse_int64(stored, 0, INT64_MAX, &e->meter_since) < 0) {
        e->meter_since = sl_eng_now_ms(e);
        snprintf(stored, sizeof(stored), "%lld", (long long)e->meter_since);
        if (sl_store_meta_set(e->st, "meter_since", stored) < 0)
            return sl_errorf(err, -EIO, "store: cannot write");
    }
    return 0;
}

/* Everything the store holds: the catalog, the jobs (Running ones
 * re-adopted, acknowledged intents resumed), the meter, the audit log's
 * head, the admission policies. */
static int state_load(struct sl_engine *e, struct sl_error *err)
{
    struct sl_store_loader ld = {.arg = e, .team = sl_eng_ld_team, .cohort = sl_eng_ld_cohort,
                                 .queue = sl_eng_ld_queue, .pclass = sl_eng_ld_pclass,
                                 .user = sl_eng_ld_user, .job = ld_job};
    int rc;

    if ((rc = sl_store_load(e->st, &ld)) < 0 ||
        (rc = sl_store_job_max_id(e->st, &e->next_id)) < 0)
        return sl_errorf(err, rc, "store: cannot load state: %s", strerror(-rc));
    e->next_id++; /* ids as SQLite would give them: the largest + 1 */
    if ((rc = load_cancels(e)) < 0)
        return sl_errorf(err, rc, "store: cannot finish cancelled jobs: %s", strerror(-rc));
    for (size_t i = 0; i < e->nrun; i++)
        if (e->run[i]->preempting)
            /* every job is loaded: its preemptor waits for it again */
            sl_sched_job_terminating(e->sched, e->run[i]->id, e->run[i]->preempted_for);
    if ((rc = sl_eng_meter_load(e)) < 0)
        return sl_errorf(err, rc, "store: cannot load the meter's state: %s", strerror(-rc));
    if ((rc = sl_eng_audit_open(e, err)) < 0 || (rc = sl_eng_policies_load(e, err)) < 0 ||
        (rc = sl_eng_nodeadmin_load(e, err)) < 0)
        return rc;
    return 0;
}

struct sl_engine *sl_engine_create(const struct sl_engine_config *cfg,
                                   char **admin_token, struct sl_error *err)
{
    struct sl_engine *e = engine_alloc(cfg);
    struct sl_sched_config scfg;
    int rc;

    *admin_token = NULL;
    if (!e) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    if (sodium_init() < 0) {
        sl_errorf(err, -EIO, "libsodium failed to initialise");
        goto fail;
    }
    if ((rc = sl_mkdir_p(e->data_dir, 0700)) < 0) {
        sl_errorf(err, rc, "--data-dir %s: %s", e->data_dir, strerror(-rc));
        goto fail;
    }
    if (sl_eng_executor_open(e, err) < 0)
        goto fail;
    /* Who jobs run as is settled before anything is stored. */
    if (e->caps.runs_as_accounts && e->caps.accounts_here && identity_setup(e, err) < 0)
        goto fail;
    sl_sched_config_init(&scfg);
    if (!(e->sched = sl_sched_create(&scfg))) {
        sl_errorf(err, -ENOMEM, "out of memory");
        goto fail;
    }
    if (sl_eng_nodes_add(e, err) < 0)
        goto fail;
    sl_eng_meters_open(e);
    if (store_open(e, admin_token, err) < 0 || state_load(e, err) < 0)
        goto fail;
    e->sched_full = true;
    if ((e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        sl_errorf(err, -errno, "eventfd: %s", strerror(errno));
        goto fail;
    }
    sl_info("msg=\"engine ready\" host=%s nodes=%d node0=%s cpus_milli=%lld mem_bytes=%lld "
            "gpus=%d gpu_source=%s executor=%s limits=%s placement=%s",
            e->hostname, e->nodes.n, e->nodes.n ? e->nodes.nodes[0].name : "",
            e->nodes.n ? (long long)e->nodes.nodes[0].cpu_milli : 0LL,
            e->nodes.n ? (long long)e->nodes.nodes[0].mem_bytes : 0LL,
            e->nodes.n ? e->nodes.nodes[0].ngpus : 0,
            e->nodes.n ? e->nodes.nodes[0].gpu_source : "none", sl_executor_name(e->x),
            e->caps.limits ? "cgroup" : "none",
            sl_placement_name(sl_sched_get_config(e->sched)->placement));
    return e;
fail:
    free(*admin_token);
    *admin_token = NULL;
    sl_engine_destroy(e);
    return NULL;
}
