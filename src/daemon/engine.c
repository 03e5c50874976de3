/*
 * engine.c - the engine thread: group commit, job lifecycle, timers,
 * scheduling and the local executor. See engine.h.
 *
 * Invariants:
 *  - Only the engine thread writes the store and changes jobs and nodes.
 *  - e->mu guards what the HTTP thread reads: the job map (membership and
 *    reasons) and node allocations. The engine takes it only around those
 *    changes, never across I/O.
 *  - A job is in e->jobs exactly while it is Pending or Running; its
 *    resources are allocated on the node exactly while it is Running.
 *  - Processes are started only after the transaction that marked the job
 *    Running has committed; a crash in between leaves a Running job with no
 *    pid file, which the next start marks Lost (and retries per policy).
 */
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../sched/sched.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/imap.h"

#define MAX_NAMED 1024 /* teams, queues, classes, users held in memory */

struct team { char name[64]; char default_queue[64]; };
struct queue { char name[64]; char team[64]; };
struct pclass { char name[64]; int value; bool preemptible; bool is_default; };
struct user { char name[64]; char team[64]; char role[16]; char unix_user[64]; };

struct task {
    int ngpus;
    int gpus[SL_EXEC_MAX_GPUS];
    int gpu_milli;
    bool started;                 /* process launched (or adopted) */
    bool done;
    int exit_code;
    struct sl_exec_handle h;
};

struct job {
    int64_t id;
    struct sl_job_spec *spec;     /* owned */
    char name[64], team[64], project[64], user[64], queue[64], pclass[64];
    char unix_user[64];
    int priority;
    enum sl_job_state state;
    int attempt;
    int64_t submitted_ms, started_ms, not_before_ms;
    struct task *tasks;           /* spec->tasks entries while Running */
    bool cancel_requested, timed_out, gang_failed;
    bool lost;                    /* a task vanished across a restart */
    int64_t ckpt_at_ms;           /* maxRuntime: send checkpoint signal */
    int64_t kill_at_ms;           /* send SIGKILL; 0 = none */
    int limits_enforced;          /* -1 unknown */
    char message[200];
    char reason[160];             /* guarded by e->mu */
};

/* The single node of this release: this host. */
struct node {
    struct sl_host_info host;
    int64_t cpu_milli_alloc, mem_bytes_alloc;
    int gpu_milli_alloc[SL_EXEC_MAX_GPUS];
};

struct sl_engine {
    struct sl_engine_config cfg;
    char data_dir[1024], store_path[1100], log_dir[1100], run_dir[1100];
    struct sl_store *st;
    struct sl_exec *exec;
    struct node node;

    struct team teams[MAX_NAMED];
    int nteams;
    struct queue queues[MAX_NAMED];
    int nqueues;
    struct pclass pclasses[64];
    int npclasses;
    struct user users[MAX_NAMED];
    int nusers;

    pthread_mutex_t mu;           /* see invariants */
    struct sl_imap jobs;          /* id -> struct job*, Pending or Running */
    int64_t *fresh;               /* ids submitted since the last pass */
    size_t nfresh, fresh_cap;
    struct job **run;             /* Running jobs (guarded by mu for readers) */
    size_t nrun, run_cap;
    int64_t *backoff;             /* ids of Pending jobs waiting out a retry
                                     backoff; stale ids are dropped lazily */
    size_t nbackoff, backoff_cap;
    struct sl_exec_handle *gone;  /* tasks whose end is recorded in the open
                                     transaction: their pid and exit files
                                     go only once it has committed */
    size_t ngone, gone_cap;
    bool sched_full;              /* resources freed: consider every job */

    pthread_mutex_t qmu;          /* guards the op queue and 'stopping' */
    struct sl_op *qhead, *qtail;
    bool stopping;
    bool broken;                  /* a commit failed: memory and store differ */
    int wake_fd;                  /* eventfd: ops queued or SIGCHLD */

    /* The syncer: answers committed operations once their WAL frames are on
     * disk, so that the engine can go on with the next group meanwhile. */
    pthread_mutex_t smu;
    pthread_cond_t scond;
    struct sl_op *shead, *stail;  /* committed, not yet answered */
    bool sstop;
    pthread_t sthread;
    bool srunning;
    int wal_fd;                   /* the store's -wal file, for fdatasync */
    pthread_t thread;
    bool running;
    int64_t next_poll_ms;         /* periodic task poll (adopted tasks) */
};

static int g_wake_fd = -1; /* for the SIGCHLD handler */

static void on_sigchld(int sig)
{
    uint64_t one = 1;
    int saved = errno;
    (void)sig;
    if (g_wake_fd >= 0 && write(g_wake_fd, &one, sizeof(one)) < 0) {
        /* the counter is saturated; a wake-up is pending anyway */
    }
    errno = saved;
}

/* ---- small lookups ---------------------------------------------------- */

static struct team *team_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nteams; i++)
        if (strcmp(e->teams[i].name, name) == 0)
            return &e->teams[i];
    return NULL;
}

static struct queue *queue_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nqueues; i++)
        if (strcmp(e->queues[i].name, name) == 0)
            return &e->queues[i];
    return NULL;
}

static struct pclass *pclass_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->npclasses; i++)
        if (name ? strcmp(e->pclasses[i].name, name) == 0
                 : e->pclasses[i].is_default)
            return &e->pclasses[i];
    return NULL;
}

static struct user *user_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nusers; i++)
        if (strcmp(e->users[i].name, name) == 0)
            return &e->users[i];
    return NULL;
}

/* ---- job views and transitions ---------------------------------------- */

static char *placement_json(const struct sl_engine *e, const struct job *j)
{
    json_t *arr = json_array();
    char *out;

    if (!arr)
        return NULL;
    if (j->tasks) {
        for (int t = 0; t < j->spec->tasks; t++) {
            const struct task *tk = &j->tasks[t];
            json_t *gpus = json_array();
            for (int g = 0; g < tk->ngpus; g++)
                json_array_append_new(gpus, json_integer(tk->gpus[g]));
            json_array_append_new(
                arr, json_pack("{s:s, s:i, s:o, s:i}", "node",
                               e->node.host.hostname, "task", t, "gpus", gpus,
                               "gpu_milli", tk->gpu_milli));
        }
    }
    out = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return out;
}

static void job_view(const struct job *j, struct sl_job_view *v,
                     const char *placement, const char *spec_json)
{
    memset(v, 0, sizeof(*v));
    v->id = j->id;
    v->name = j->name;
    v->team = j->team;
    v->project = j->project;
    v->user = j->user;
    v->queue = j->queue;
    v->priority_class = j->pclass;
    v->priority = j->priority;
    v->state = j->state;
    v->attempt = j->attempt;
    v->retries = j->spec->retries;
    v->submitted_ms = j->submitted_ms;
    v->started_ms = j->started_ms;
    v->placement_json = placement;
    v->reason = j->reason[0] ? j->reason : NULL;
    v->message = j->message[0] ? j->message : NULL;
    v->limits_enforced = j->limits_enforced;
    v->spec_json = spec_json;
}

/* Write the job row for its current state, plus one event. With
 * 'exit_code' >= 0 the job is finished with that code. */
static int job_persist(struct sl_engine *e, struct job *j, const char *type,
                       const char *from, int exit_code, int64_t finished_ms)
{
    struct sl_job_view v;
    char *placement = placement_json(e, j);
    int rc;

    job_view(j, &v, placement, NULL);
    if (exit_code >= 0) {
        v.has_exit_code = true;
        v.exit_code = exit_code;
    }
    v.finished_ms = finished_ms;
    rc = sl_store_job_update(e->st, &v, j->not_before_ms);
    if (rc == 0)
        rc = sl_store_event_add(e->st, j->id, sl_now_ms(), type, from,
                                sl_job_state_name(j->state),
                                j->message[0] ? j->message : NULL);
    free(placement);
    return rc;
}

static void job_free(struct job *j)
{
    if (!j)
        return;
    sl_job_spec_destroy(j->spec);
    free(j->tasks);
    free(j);
}

/* Append to a growable int64 or pointer vector. */
static int vec_push(void **vec, size_t *n, size_t *cap, size_t elem, const void *v)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        void *nv = realloc(*vec, ncap * elem);
        if (!nv)
            return -ENOMEM;
        *vec = nv;
        *cap = ncap;
    }
    memcpy((char *)*vec + *n * elem, v, elem);
    (*n)++;
    return 0;
}

/* Caller holds e->mu. */
static int run_add(struct sl_engine *e, struct job *j)
{
    return vec_push((void **)&e->run, &e->nrun, &e->run_cap, sizeof(j), &j);
}

/* Caller holds e->mu. */
static void run_del(struct sl_engine *e, struct job *j)
{
    for (size_t i = 0; i < e->nrun; i++)
        if (e->run[i] == j) {
            e->run[i] = e->run[--e->nrun];
            return;
        }
}

/* Give a Running job's resources back to the node. */
static void job_release(struct sl_engine *e, struct job *j)
{
    pthread_mutex_lock(&e->mu);
    e->node.cpu_milli_alloc -= j->spec->cpu_milli * j->spec->tasks;
    e->node.mem_bytes_alloc -= j->spec->mem_bytes * j->spec->tasks;
    for (int t = 0; t < j->spec->tasks; t++)
        for (int g = 0; g < j->tasks[t].ngpus; g++)
            e->node.gpu_milli_alloc[j->tasks[t].gpus[g]] -= j->tasks[t].gpu_milli;
    run_del(e, j);
    pthread_mutex_unlock(&e->mu);
    /* A crash before the commit must still find the exit records. */
    for (int t = 0; t < j->spec->tasks; t++)
        if (j->tasks[t].started &&
            vec_push((void **)&e->gone, &e->ngone, &e->gone_cap,
                     sizeof(struct sl_exec_handle), &j->tasks[t].h) < 0)
            sl_warn("msg=\"out of memory: task files of job %lld kept\"",
                    (long long)j->id);
    free(j->tasks);
    j->tasks = NULL;
    e->sched_full = true;
}

static void job_forget(struct sl_engine *e, struct job *j)
{
    pthread_mutex_lock(&e->mu);
    sl_imap_del(&e->jobs, j->id);
    pthread_mutex_unlock(&e->mu);
    job_free(j);
}

/* A Running job whose every task has ended: decide its outcome. The row is
 * written while the placement is still known, then the resources go back. */
static int job_finish(struct sl_engine *e, struct job *j, bool lost)
{
    int code = 0, rc;
    int64_t now = sl_now_ms();

    for (int t = 0; t < j->spec->tasks; t++)
        if (j->tasks[t].exit_code != 0 && code == 0)
            code = j->tasks[t].exit_code;
    if (j->cancel_requested) {
        j->state = SL_JOB_CANCELLED;
        snprintf(j->message, sizeof(j->message), "cancelled while running");
        rc = job_persist(e, j, "state", "Running", code, now);
    } else if (j->timed_out) {
        j->state = SL_JOB_FAILED;
        snprintf(j->message, sizeof(j->message),
                 "exceeded maxRuntime of %llds; killed",
                 (long long)(j->spec->max_runtime_ms / 1000));
        rc = job_persist(e, j, "state", "Running", code ? code : 137, now);
    } else if (lost) {
        j->state = SL_JOB_LOST;
        snprintf(j->message, sizeof(j->message),
                 "task process vanished while sluiced was down");
        rc = job_persist(e, j, "state", "Running", -1, now);
    } else if (code != 0 && j->attempt >= j->spec->retries) {
        j->state = SL_JOB_FAILED;
        snprintf(j->message, sizeof(j->message), "exited with code %d%s", code,
                 j->gang_failed ? " (gang stopped)" : "");
        rc = job_persist(e, j, "state", "Running", code, now);
    } else if (code == 0) {
        j->state = SL_JOB_SUCCEEDED; /* keeps the launch note, if any */
        rc = job_persist(e, j, "state", "Running", 0, now);
    } else {
        rc = 0; /* a failed attempt with retries left: requeued below */
    }
    job_release(e, j);
    if (rc < 0 || (sl_job_state_final(j->state) && j->state != SL_JOB_LOST) ||
        (j->state == SL_JOB_LOST && j->attempt >= j->spec->retries)) {
        job_forget(e, j);
        return rc;
    }
    /* Requeue: a failed attempt, or a Lost job, with retries left. */
    {
        const char *from = j->state == SL_JOB_LOST ? "Lost" : "Running";
        int64_t backoff = e->cfg.retry_backoff_ms << (j->attempt < 10 ? j->attempt : 10);
        if (backoff > 600000)
            backoff = 600000;
        if (j->state == SL_JOB_LOST)
            snprintf(j->message, sizeof(j->message),
                     "lost on attempt %d; retry %d of %d in %llds", j->attempt + 1,
                     j->attempt + 1, j->spec->retries, (long long)(backoff / 1000));
        else
            snprintf(j->message, sizeof(j->message),
                     "attempt %d failed with exit code %d; retry %d of %d in %llds",
                     j->attempt + 1, code, j->attempt + 1, j->spec->retries,
                     (long long)(backoff / 1000));
        j->attempt++;
        j->state = SL_JOB_PENDING;
        j->started_ms = 0;
        j->not_before_ms = now + backoff;
        j->limits_enforced = -1;
        j->lost = j->gang_failed = j->timed_out = false;
        j->kill_at_ms = j->ckpt_at_ms = 0;
        pthread_mutex_lock(&e->mu);
        snprintf(j->reason, sizeof(j->reason), "retry backoff");
        pthread_mutex_unlock(&e->mu);
        vec_push((void **)&e->backoff, &e->nbackoff, &e->backoff_cap,
                 sizeof(int64_t), &j->id);
        return job_persist(e, j, "retry", from, -1, 0);
    }
}


static void job_signal_all(struct sl_engine *e, struct job *j, int sig)
{
    for (int t = 0; t < j->spec->tasks; t++)
        if (j->tasks[t].started && !j->tasks[t].done)
            sl_exec_signal(e->exec, &j->tasks[t].h, sig);
}

/* ---- operations ------------------------------------------------------- */

static void op_fail(struct sl_op *op, int status, const char *code)
{
    op->status = status;
    op->code = code;
}

/* The answer of a job operation: the job object as text. */
static int op_job_body(struct sl_op *op, const struct sl_job_view *v)
{
    struct sl_buf b;

    sl_buf_init(&b);
    if (sl_job_view_render(v, &b) < 0) {
        sl_buf_fini(&b);
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    op->body = b.data;
    op->body_len = b.len;
    return 0;
}

/* Default job name: the command's base name, made a valid name. */
static void default_name(const struct sl_job_spec *s, char *out, size_t size)
{
    const char *base = strrchr(s->argv[0], '/');
    size_t n = 0;

    base = base ? base + 1 : s->argv[0];
    for (; *base && n + 1 < size && n < SL_NAME_MAX; base++) {
        char c = *base;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '-';
        if (c == '-' && (n == 0 || out[n - 1] == '-'))
            continue;
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    if (n == 0)
        sl_strlcpy(out, "job", size);
}

static bool is_admin(const struct sl_principal *who)
{
    return strcmp(who->role, "admin") == 0;
}

static int do_submit(struct sl_engine *e, struct sl_op *op)
{
    struct sl_job_spec *s = op->spec;
    struct team *tm;
    struct queue *q;
    struct pclass *pc;
    struct job *j = NULL;
    struct sl_job_view v;
    json_t *doc = NULL;
    char *spec_json = NULL;
    int rc;

    if (strcmp(op->who.role, "viewer") == 0) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "role viewer may not submit jobs");
    }
    tm = team_find(e, s->team[0] ? s->team : op->who.team);
    if (!tm) {
        op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "metadata.team",
                               "team '%s' does not exist",
                               s->team[0] ? s->team : op->who.team);
    }
    if (!is_admin(&op->who) && strcmp(tm->name, op->who.team) != 0) {
        op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "metadata.team",
                               "user '%s' may not submit to team '%s'",
                               op->who.user, tm->name);
    }
    q = queue_find(e, s->queue[0] ? s->queue : tm->default_queue);
    if (!q || strcmp(q->team, tm->name) != 0) {
        op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "spec.queue",
                               "queue '%s' does not exist in team '%s'",
                               s->queue[0] ? s->queue : tm->default_queue,
                               tm->name);
    }
    pc = pclass_find(e, s->priority_class[0] ? s->priority_class : NULL);
    if (!pc) {
        op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "spec.priorityClass",
                               "priority class '%s' does not exist",
                               s->priority_class);
    }
    if (!(j = calloc(1, sizeof(*j)))) {
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    if (s->name[0])
        sl_strlcpy(j->name, s->name, sizeof(j->name));
    else
        default_name(s, j->name, sizeof(j->name));
    sl_strlcpy(j->team, tm->name, sizeof(j->team));
    sl_strlcpy(j->project, s->project, sizeof(j->project));
    sl_strlcpy(j->user, op->who.user, sizeof(j->user));
    sl_strlcpy(j->unix_user, op->who.unix_user, sizeof(j->unix_user));
    sl_strlcpy(j->queue, q->name, sizeof(j->queue));
    sl_strlcpy(j->pclass, pc->name, sizeof(j->pclass));
    j->priority = pc->value;
    j->state = SL_JOB_PENDING;
    j->submitted_ms = sl_now_ms();
    j->limits_enforced = -1;
    j->spec = s;
    op->spec = NULL;
    snprintf(j->reason, sizeof(j->reason), "waiting for the scheduler");

    if (!(doc = sl_job_spec_to_json(s)) ||
        !(spec_json = json_dumps(doc, JSON_COMPACT))) {
        op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    job_view(j, &v, NULL, spec_json);
    v.spec_doc = doc; /* the response reuses it rather than re-parse */
    if ((rc = sl_store_job_insert(e->st, &v)) < 0 ||
        (rc = sl_store_event_add(e->st, v.id, j->submitted_ms, "state", NULL,
                                 "Pending", NULL)) < 0) {
        op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "store: write failed");
        goto out;
    }
    j->id = v.id;
    if ((rc = op_job_body(op, &v)) < 0)
        goto out;
    if (e->nfresh == e->fresh_cap) {
        size_t cap = e->fresh_cap ? e->fresh_cap * 2 : 1024;
        int64_t *nf = realloc(e->fresh, cap * sizeof(*nf));
        if (!nf) {
            op_fail(op, 503, "unavailable");
            rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
            goto out;
        }
        e->fresh = nf;
        e->fresh_cap = cap;
    }
    pthread_mutex_lock(&e->mu);
    rc = sl_imap_put(&e->jobs, j->id, j);
    pthread_mutex_unlock(&e->mu);
    if (rc < 0) {
        op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
        goto out;
    }
    e->fresh[e->nfresh++] = j->id;
    j = NULL;
    op->status = 201;
out:
    json_decref(doc);
    free(spec_json);
    job_free(j);
    return rc;
}

static int do_cancel(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = sl_imap_get(&e->jobs, op->job_id);
    struct sl_job_view v;
    char *placement;
    int rc;

    if (!j) {
        json_t *row = sl_store_job_get(e->st, op->job_id, &rc);
        const char *team = row ? json_string_value(json_object_get(row, "team")) : NULL;
        if (!row || (!is_admin(&op->who) && team && strcmp(team, op->who.team))) {
            json_decref(row);
            op_fail(op, 404, "not_found");
            return sl_errorf(&op->err, -ENOENT, "job %lld not found",
                             (long long)op->job_id);
        }
        op_fail(op, 409, "conflict");
        sl_errorf(&op->err, -EALREADY, "job %lld has already finished (%s)",
                  (long long)op->job_id,
                  json_string_value(json_object_get(row, "state")));
        json_decref(row);
        return -EALREADY;
    }
    if (!is_admin(&op->who) && strcmp(j->team, op->who.team) != 0) {
        op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "job %lld not found",
                         (long long)op->job_id);
    }
    if (strcmp(op->who.role, "viewer") == 0) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "role viewer may not cancel jobs");
    }
    if (j->state == SL_JOB_PENDING) {
        j->state = SL_JOB_CANCELLED;
        snprintf(j->message, sizeof(j->message), "cancelled by %s while pending",
                 op->who.user);
        pthread_mutex_lock(&e->mu);
        j->reason[0] = '\0';
        pthread_mutex_unlock(&e->mu);
        if ((rc = job_persist(e, j, "state", "Pending", -1, sl_now_ms())) < 0) {
            op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, rc, "store: write failed");
        }
        job_view(j, &v, NULL, NULL);
        v.finished_ms = sl_now_ms();
        v.spec_doc = sl_job_spec_to_json(j->spec);
        rc = op_job_body(op, &v);
        json_decref(v.spec_doc);
        job_forget(e, j);
        if (rc < 0)
            return rc;
        op->status = 202;
        return 0;
    }
    if (!j->cancel_requested) {
        j->cancel_requested = true;
        snprintf(j->message, sizeof(j->message),
                 "cancel requested by %s: SIGTERM, then SIGKILL after %llds",
                 op->who.user, (long long)(e->cfg.cancel_grace_ms / 1000));
        if ((rc = sl_store_event_add(e->st, j->id, sl_now_ms(), "cancel", NULL,
                                     NULL, j->message)) < 0) {
            op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, rc, "store: write failed");
        }
        job_signal_all(e, j, SIGTERM);
        j->kill_at_ms = sl_mono_ms() + e->cfg.cancel_grace_ms;
    }
    placement = placement_json(e, j);
    job_view(j, &v, placement, NULL);
    v.spec_doc = sl_job_spec_to_json(j->spec);
    rc = op_job_body(op, &v);
    json_decref(v.spec_doc);
    free(placement);
    if (rc < 0)
        return rc;
    op->status = 202;
    return 0;
}

/* Refuse document 'i' of 'n' for 'field' (prefixed "[i]." when n > 1). */
static int manifest_error(struct sl_op *op, size_t i, size_t n, const char *field,
                          const char *msg)
{
    char path[96];
    if (n > 1)
        snprintf(path, sizeof(path), "[%zu].%s", i, field);
    else
        snprintf(path, sizeof(path), "%s", field);
    op_fail(op, 400, "invalid");
    sl_errorf_field(&op->err, -EINVAL, path, "%s", msg);
    return -EINVAL;
}

static const char *const action_names[] = {"unchanged", "created", "updated"};

static int do_apply(struct sl_engine *e, struct sl_op *op)
{
    json_t *applied = json_array();
    /* Work on copies so that a refused apply leaves memory as it was. */
    struct team *teams = malloc(sizeof(e->teams));
    struct queue *queues = malloc(sizeof(e->queues));
    struct pclass *pcs = malloc(sizeof(e->pclasses));
    struct user *users = malloc(sizeof(e->users));
    int nteams = e->nteams, nqueues = e->nqueues, npcs = e->npclasses,
        nusers = e->nusers, rc = 0;
    char msg[160];

    if (!applied || !teams || !queues || !pcs || !users) {
        op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    if (!is_admin(&op->who)) {
        op_fail(op, 403, "forbidden");
        rc = sl_errorf(&op->err, -EPERM, "only admin may apply manifests");
        goto out;
    }
    memcpy(teams, e->teams, sizeof(e->teams));
    memcpy(queues, e->queues, sizeof(e->queues));
    memcpy(pcs, e->pclasses, sizeof(e->pclasses));
    memcpy(users, e->users, sizeof(e->users));

    for (size_t i = 0; i < op->nmanifests && rc == 0; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        const char *kind = "";
        int act = 0;

        switch (m->kind) {
        case SL_KIND_TEAM: {
            struct team *t = team_find(e, m->name);
            const char *dq = m->u.team.default_queue[0] ? m->u.team.default_queue
                                                        : m->name;
            kind = "Team";
            if (!t) {
                if (e->nteams == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many teams");
                    break;
                }
                t = &e->teams[e->nteams++];
                sl_strlcpy(t->name, m->name, sizeof(t->name));
            }
            sl_strlcpy(t->default_queue, dq, sizeof(t->default_queue));
            act = sl_store_team_upsert(e->st, m->name, dq);
            if (act >= 0 && !m->u.team.default_queue[0] && !queue_find(e, dq) &&
                e->nqueues < MAX_NAMED) {
                /* A team without a named default queue gets its own. */
                struct queue *q = &e->queues[e->nqueues++];
                sl_strlcpy(q->name, dq, sizeof(q->name));
                sl_strlcpy(q->team, m->name, sizeof(q->team));
                if (sl_store_queue_upsert(e->st, dq, m->name) < 0)
                    act = -EIO;
            }
            break;
        }
        case SL_KIND_QUEUE: {
            struct queue *q = queue_find(e, m->name);
            kind = "Queue";
            if (!team_find(e, m->u.queue.team)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.queue.team);
                rc = manifest_error(op, i, op->nmanifests, "spec.team", msg);
                break;
            }
            if (!q) {
                if (e->nqueues == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many queues");
                    break;
                }
                q = &e->queues[e->nqueues++];
                sl_strlcpy(q->name, m->name, sizeof(q->name));
            }
            sl_strlcpy(q->team, m->u.queue.team, sizeof(q->team));
            act = sl_store_queue_upsert(e->st, m->name, m->u.queue.team);
            break;
        }
        case SL_KIND_PRIORITY_CLASS: {
            struct pclass *p = pclass_find(e, m->name);
            kind = "PriorityClass";
            if (!p) {
                if (e->npclasses == (int)SL_ARRAY_LEN(e->pclasses)) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many priority classes");
                    break;
                }
                p = &e->pclasses[e->npclasses++];
                sl_strlcpy(p->name, m->name, sizeof(p->name));
            }
            p->value = m->u.pclass.value;
            p->preemptible = m->u.pclass.preemptible;
            p->is_default = m->u.pclass.is_default;
            if (p->is_default)
                for (int k = 0; k < e->npclasses; k++)
                    if (&e->pclasses[k] != p)
                        e->pclasses[k].is_default = false;
            act = sl_store_pclass_upsert(e->st, m->name, p->value, p->preemptible,
                                         p->is_default);
            break;
        }
        case SL_KIND_USER: {
            struct user *u = user_find(e, m->name);
            kind = "User";
            if (!team_find(e, m->u.user.team)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.user.team);
                rc = manifest_error(op, i, op->nmanifests, "spec.team", msg);
                break;
            }
            if (!u) {
                if (e->nusers == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many users");
                    break;
                }
                u = &e->users[e->nusers++];
                sl_strlcpy(u->name, m->name, sizeof(u->name));
            }
            sl_strlcpy(u->team, m->u.user.team, sizeof(u->team));
            sl_strlcpy(u->role, m->u.user.role, sizeof(u->role));
            sl_strlcpy(u->unix_user, m->u.user.unix_user, sizeof(u->unix_user));
            act = sl_store_user_upsert(e->st, m->name, u->team, u->role,
                                       u->unix_user);
            break;
        }
        case SL_KIND_COHORT:
        case SL_KIND_SCHEDULER:
            kind = m->kind == SL_KIND_COHORT ? "Cohort" : "Scheduler";
            rc = manifest_error(op, i, op->nmanifests, "kind",
                                "this kind is not applied by this daemon yet");
            break;
        }
        if (rc == 0 && act < 0) {
            op_fail(op, 503, "unavailable");
            rc = sl_errorf(&op->err, act, "store: write failed");
        }
        if (rc == 0)
            json_array_append_new(applied,
                                  json_pack("{s:s, s:s, s:s}", "kind", kind, "name",
                                            m->name, "action", action_names[act]));
    }
    /* Every team's default queue must exist and belong to it. */
    for (int i = 0; rc == 0 && i < e->nteams; i++) {
        struct queue *q = queue_find(e, e->teams[i].default_queue);
        if (!q || strcmp(q->team, e->teams[i].name) != 0) {
            size_t idx = 0;
            for (size_t k = 0; k < op->nmanifests; k++)
                if (op->manifests[k].kind == SL_KIND_TEAM &&
                    strcmp(op->manifests[k].name, e->teams[i].name) == 0)
                    idx = k;
            snprintf(msg, sizeof(msg), "queue '%s' does not exist in team '%s'",
                     e->teams[i].default_queue, e->teams[i].name);
            rc = manifest_error(op, idx, op->nmanifests, "spec.defaultQueue", msg);
        }
    }
    if (rc < 0) {
        memcpy(e->teams, teams, sizeof(e->teams));
        memcpy(e->queues, queues, sizeof(e->queues));
        memcpy(e->pclasses, pcs, sizeof(e->pclasses));
        memcpy(e->users, users, sizeof(e->users));
        e->nteams = nteams;
        e->nqueues = nqueues;
        e->npclasses = npcs;
        e->nusers = nusers;
        goto out;
    }
    op->result = json_pack("{s:O}", "applied", applied);
    op->status = 200;
out:
    json_decref(applied);
    free(teams);
    free(queues);
    free(pcs);
    free(users);
    return rc;
}

/* A new random token: "sl_" + 43 base64url characters (32 random bytes). */
static void token_new(char *out, size_t size, unsigned char hash[32])
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

static int do_token(struct sl_engine *e, struct sl_op *op)
{
    char token[80], when[40];
    unsigned char hash[32];
    int rc;

    if (!is_admin(&op->who)) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "only admin may create tokens");
    }
    if (!user_find(e, op->token_user)) {
        op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "user '%s' not found", op->token_user);
    }
    token_new(token, sizeof(token), hash);
    if ((rc = sl_store_token_insert(e->st, hash, op->token_user,
                                    op->token_expires_ms)) < 0) {
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    op->result = json_pack("{s:s, s:s, s:o}", "token", token, "user",
                           op->token_user, "expires_at",
                           op->token_expires_ms
                               ? json_string(sl_time_rfc3339(op->token_expires_ms,
                                                             when, sizeof(when)))
                               : json_null());
    op->status = 201;
    sodium_memzero(token, sizeof(token));
    return 0;
}

static void apply_op(struct sl_engine *e, struct sl_op *op)
{
    int rc;

    if (sl_store_savepoint(e->st) < 0) {
        op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, -EIO, "store: cannot start a savepoint");
        return;
    }
    switch (op->kind) {
    case SL_OP_SUBMIT:
        rc = do_submit(e, op);
        break;
    case SL_OP_CANCEL:
        rc = do_cancel(e, op);
        break;
    case SL_OP_APPLY:
        rc = do_apply(e, op);
        break;
    case SL_OP_TOKEN:
        rc = do_token(e, op);
        break;
    default:
        rc = -EINVAL;
        op_fail(op, 500, "internal");
        break;
    }
    if (rc < 0) {
        json_decref(op->result);
        op->result = NULL;
        free(op->body);
        op->body = NULL;
        sl_store_rollback_to(e->st);
    } else {
        sl_store_release(e->st);
    }
}

/* ---- running tasks ---------------------------------------------------- */

static int job_start_tasks(struct sl_engine *e, struct job *j)
{
    struct sl_error err = {0};
    bool enforced = true;
    const char *note = NULL;

    for (int t = 0; t < j->spec->tasks; t++) {
        struct task *tk = &j->tasks[t];
        struct sl_exec_task xt = {0};
        char log_path[1200];
        int rc;

        snprintf(log_path, sizeof(log_path), "%s/%lld.%d.log", e->log_dir,
                 (long long)j->id, t);
        xt.job_id = j->id;
        xt.task_index = t;
        xt.attempt = j->attempt;
        xt.argv = j->spec->argv;
        xt.env = j->spec->env;
        xt.gpus = tk->gpus;
        xt.ngpus = tk->ngpus;
        xt.cpu_milli = j->spec->cpu_milli;
        xt.mem_bytes = j->spec->mem_bytes;
        xt.pids_max = 4096;
        xt.unix_user = j->unix_user;
        xt.log_path = log_path;
        xt.log_cap_bytes = e->cfg.log_cap_bytes;
        rc = sl_exec_start(e->exec, &xt, &tk->h, &err);
        if (rc < 0) {
            snprintf(j->message, sizeof(j->message), "task %d failed to start: %s",
                     t, err.text);
            tk->done = true;
            tk->exit_code = 127;
            j->gang_failed = true;
            continue;
        }
        tk->started = true;
        if (!tk->h.limits_enforced) {
            enforced = false;
            note = tk->h.limits_note;
        }
    }
    if (j->gang_failed)
        job_signal_all(e, j, SIGKILL); /* a gang runs whole or not at all */
    j->limits_enforced = enforced;
    if (!enforced && note && !j->message[0])
        snprintf(j->message, sizeof(j->message), "limits not enforced: %s", note);
    /* Network profiles are admitted and stored; the local executor does not
     * isolate yet, and says so rather than let the job believe it is. */
    if (j->spec->network != SL_NET_EGRESS && !j->message[0])
        snprintf(j->message, sizeof(j->message),
                 "network profile %s is not enforced by the local executor in "
                 "this release; the job has the host's network",
                 j->spec->network == SL_NET_ISOLATED ? "isolated" : "internal");
    return 0;
}

/* Mark a placed job Running (before its processes start). */
static int job_place(struct sl_engine *e, struct job *j,
                     const struct sl_sched_decision *d)
{
    struct task *tasks = calloc((size_t)j->spec->tasks, sizeof(*tasks));
    int rc;

    if (!tasks)
        return -ENOMEM;
    for (int t = 0; t < d->ntasks; t++) {
        tasks[t].ngpus = d->tasks[t].ngpus;
        tasks[t].gpu_milli = d->tasks[t].gpu_milli;
        memcpy(tasks[t].gpus, d->tasks[t].gpus, sizeof(int) * (size_t)tasks[t].ngpus);
    }
    j->tasks = tasks;
    j->state = SL_JOB_RUNNING;
    j->started_ms = sl_now_ms();
    j->not_before_ms = 0;
    j->message[0] = '\0';
    pthread_mutex_lock(&e->mu);
    rc = run_add(e, j);
    pthread_mutex_unlock(&e->mu);
    if (rc == 0 && (rc = job_persist(e, j, "state", "Pending", -1, 0)) < 0) {
        pthread_mutex_lock(&e->mu);
        run_del(e, j);
        pthread_mutex_unlock(&e->mu);
    }
    if (rc < 0) {
        /* Nothing is allocated and the row is unchanged: still Pending. */
        j->tasks = NULL;
        free(tasks);
        j->state = SL_JOB_PENDING;
        j->started_ms = 0;
        return rc;
    }
    pthread_mutex_lock(&e->mu);
    for (int t = 0; t < d->ntasks; t++)
        for (int g = 0; g < tasks[t].ngpus; g++)
            e->node.gpu_milli_alloc[tasks[t].gpus[g]] += tasks[t].gpu_milli;
    e->node.cpu_milli_alloc += j->spec->cpu_milli * j->spec->tasks;
    e->node.mem_bytes_alloc += j->spec->mem_bytes * j->spec->tasks;
    j->reason[0] = '\0';
    pthread_mutex_unlock(&e->mu);
    if (j->spec->max_runtime_ms)
        j->ckpt_at_ms = sl_mono_ms() + j->spec->max_runtime_ms;
    return 0;
}

static void schedule(struct sl_engine *e, struct job ***started, size_t *nstarted)
{
    struct sl_sched_node node = {0};
    struct sl_sched_job *sj = NULL;
    struct sl_sched_state state = {0};
    struct sl_sched_result res = {0};
    int64_t now = sl_now_ms();
    size_t n = 0, cap;
    bool retry = false;

    *started = NULL;
    *nstarted = 0;
    cap = e->sched_full ? e->jobs.len : e->nfresh;
    if (cap == 0)
        goto out;
    if (!(sj = calloc(cap, sizeof(*sj))))
        goto out;
    if (e->sched_full) {
        size_t pos = 0;
        int64_t id;
        void *v;
        while (sl_imap_next(&e->jobs, &pos, &id, &v) && n < cap) {
            struct job *j = v;
            if (j->state != SL_JOB_PENDING)
                continue;
            sj[n].id = j->id;
            n++;
        }
    } else {
        for (size_t i = 0; i < e->nfresh; i++) {
            struct job *j = sl_imap_get(&e->jobs, e->fresh[i]);
            if (j && j->state == SL_JOB_PENDING)
                sj[n++].id = j->id;
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct job *j = sl_imap_get(&e->jobs, sj[i].id);
        sj[i].priority = j->priority;
        sj[i].submit_ms = j->submitted_ms;
        sj[i].not_before_ms = j->not_before_ms;
        sj[i].tasks = j->spec->tasks;
        sj[i].gpus = j->spec->gpus;
        sj[i].gpu_milli = j->spec->gpu_milli;
        sj[i].gpu_models = (const char *const *)j->spec->gpu_models;
        sj[i].cpu_milli = j->spec->cpu_milli;
        sj[i].mem_bytes = j->spec->mem_bytes;
        sj[i].topology = j->spec->topology;
    }
    node.name = e->node.host.hostname;
    node.domain = "";
    node.schedulable = true;
    node.cpu_milli_free = e->node.host.cpu_milli - e->node.cpu_milli_alloc;
    node.mem_bytes_free = e->node.host.mem_bytes - e->node.mem_bytes_alloc;
    node.ngpus = e->node.host.ngpus;
    for (int g = 0; g < node.ngpus; g++) {
        node.gpus[g].model = e->node.host.gpus[g].model;
        node.gpus[g].milli_free = 1000 - e->node.gpu_milli_alloc[g];
    }
    state.nodes = &node;
    state.nnodes = 1;
    state.jobs = sj;
    state.njobs = (int)n;
    if (n == 0 || sl_sched_run(&state, now, &res) < 0)
        goto out;
    if (res.nstarts > 0 && !(*started = calloc((size_t)res.nstarts, sizeof(**started))))
        retry = true;
    for (int i = 0; i < res.nstarts && *started; i++) {
        struct job *j = sl_imap_get(&e->jobs, res.starts[i].job_id);
        if (job_place(e, j, &res.starts[i]) < 0) {
            retry = true; /* still Pending, nothing allocated: next pass */
            continue;
        }
        (*started)[(*nstarted)++] = j;
    }
    /* The scheduler's position counts only the jobs of this pass, which in
     * an incremental pass are the new ones: the reason carries no position
     * until the explain API of the full scheduler. */
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < res.nwaits; i++) {
        struct job *j = sl_imap_get(&e->jobs, res.waits[i].job_id);
        if (j)
            sl_strlcpy(j->reason, res.waits[i].reason, sizeof(j->reason));
    }
    pthread_mutex_unlock(&e->mu);
out:
    sl_sched_result_fini(&res);
    free(sj);
    e->nfresh = 0;
    e->sched_full = retry;
}

/* Poll every started task of every Running job; finish jobs whose tasks
 * have all ended. */
static void poll_tasks(struct sl_engine *e)
{
    size_t nj = e->nrun;
    struct job **run = NULL;

    sl_exec_reap(e->exec);
    /* A copy: finishing a job removes it from e->run. */
    if (!nj || !(run = malloc(nj * sizeof(*run))))
        return;
    memcpy(run, e->run, nj * sizeof(*run));
    for (size_t i = 0; i < nj; i++) {
        struct job *j = run[i];
        bool all_done = true, lost = j->lost;
        for (int t = 0; t < j->spec->tasks; t++) {
            struct task *tk = &j->tasks[t];
            int code = 0, rc;
            if (tk->done || !tk->started)
                continue;
            rc = sl_exec_poll(e->exec, &tk->h, &code);
            if (rc == 0) {
                all_done = false;
                continue;
            }
            tk->done = true;
            tk->exit_code = rc == 1 ? code : 255;
            if (rc < 0)
                lost = true;
            if (tk->exit_code != 0 && !j->gang_failed && !j->cancel_requested &&
                !j->timed_out) {
                /* One task of a gang failed: stop the others. */
                j->gang_failed = true;
                job_signal_all(e, j, j->spec->ckpt_signal);
                j->kill_at_ms = sl_mono_ms() + j->spec->ckpt_grace_ms;
            }
        }
        if (all_done)
            job_finish(e, j, lost);
    }
    free(run);
}

/* maxRuntime and grace timers. Returns ms until the next timer (or 1000). */
static int64_t run_timers(struct sl_engine *e)
{
    int64_t now = sl_mono_ms(), next = 1000, wall = sl_now_ms();
    size_t keep = 0;

    for (size_t i = 0; i < e->nbackoff; i++) {
        struct job *j = sl_imap_get(&e->jobs, e->backoff[i]);
        if (!j || j->state != SL_JOB_PENDING || !j->not_before_ms)
            continue;
        if (j->not_before_ms <= wall) {
            e->sched_full = true;
            continue;
        }
        if (j->not_before_ms - wall < next)
            next = j->not_before_ms - wall;
        e->backoff[keep++] = e->backoff[i];
    }
    e->nbackoff = keep;
    for (size_t i = 0; i < e->nrun; i++) {
        struct job *j = e->run[i];
        if (j->ckpt_at_ms && now >= j->ckpt_at_ms && !j->timed_out &&
            !j->cancel_requested) {
            j->timed_out = true;
            snprintf(j->message, sizeof(j->message),
                     "maxRuntime reached: sent %s, SIGKILL in %llds",
                     sl_signal_name(j->spec->ckpt_signal),
                     (long long)(j->spec->ckpt_grace_ms / 1000));
            sl_store_event_add(e->st, j->id, sl_now_ms(), "timeout", NULL, NULL,
                               j->message);
            job_signal_all(e, j, j->spec->ckpt_signal);
            j->kill_at_ms = now + j->spec->ckpt_grace_ms;
        }
        if (j->kill_at_ms && now >= j->kill_at_ms) {
            job_signal_all(e, j, SIGKILL);
            j->kill_at_ms = 0;
        }
        if (j->ckpt_at_ms && !j->timed_out && j->ckpt_at_ms - now < next)
            next = j->ckpt_at_ms - now;
        if (j->kill_at_ms && j->kill_at_ms - now < next)
            next = j->kill_at_ms - now;
    }
    return next < 1 ? 1 : next;
}

/* ---- the loop --------------------------------------------------------- */

static struct sl_op *take_ops(struct sl_engine *e, bool *stopping)
{
    struct sl_op *ops;
    pthread_mutex_lock(&e->qmu);
    ops = e->qhead;
    e->qhead = e->qtail = NULL;
    *stopping = e->stopping;
    pthread_mutex_unlock(&e->qmu);
    return ops;
}

/* Engine thread: hand a committed group to the syncer. */
static void sync_enqueue(struct sl_engine *e, struct sl_op *ops)
{
    struct sl_op *last = ops;

    if (!ops)
        return;
    while (last->next)
        last = last->next;
    pthread_mutex_lock(&e->smu);
    if (e->stail)
        e->stail->next = ops;
    else
        e->shead = ops;
    e->stail = last;
    pthread_cond_signal(&e->scond);
    pthread_mutex_unlock(&e->smu);
}

static void complete_ops(struct sl_op *ops, bool committed);

/* The syncer thread: one fdatasync of the WAL covers every group committed
 * before it started; then those requests are answered. */
static void *syncer_main(void *arg)
{
    struct sl_engine *e = arg;

    pthread_setname_np(pthread_self(), "syncer");
    for (;;) {
        struct sl_op *ops;
        bool stop;
        pthread_mutex_lock(&e->smu);
        while (!e->shead && !e->sstop)
            pthread_cond_wait(&e->scond, &e->smu);
        ops = e->shead;
        e->shead = e->stail = NULL;
        stop = e->sstop;
        pthread_mutex_unlock(&e->smu);
        if (ops) {
            bool durable = true;
            if (e->cfg.sync_full && fdatasync(e->wal_fd) < 0) {
                /* The rows are committed but maybe not on disk: say so
                 * rather than acknowledge what a power loss could undo. */
                sl_error("msg=\"fdatasync of the WAL failed\" err=\"%s\"",
                         strerror(errno));
                durable = false;
            }
            complete_ops(ops, durable);
        }
        if (stop && !ops)
            break;
    }
    return NULL;
}

static void complete_ops(struct sl_op *ops, bool committed)
{
    while (ops) {
        struct sl_op *next = ops->next;
        if (!committed && ops->status < 300) {
            json_decref(ops->result);
            ops->result = NULL;
            free(ops->body);
            ops->body = NULL;
            op_fail(ops, 503, "unavailable");
            sl_errorf(&ops->err, -EIO, "store: commit failed; nothing was changed");
        }
        ops->done(ops, ops->arg);
        ops = next;
    }
}

static void *engine_main(void *arg)
{
    struct sl_engine *e = arg;
    int64_t wait_ms = 0;

    pthread_setname_np(pthread_self(), "engine");
    for (;;) {
        struct pollfd pfd = {.fd = e->wake_fd, .events = POLLIN};
        struct sl_op *ops;
        struct job **started = NULL;
        size_t nstarted = 0;
        bool stopping, committed = true;
        uint64_t cnt;

        if (poll(&pfd, 1, (int)(wait_ms > 1000 ? 1000 : wait_ms)) > 0 &&
            read(e->wake_fd, &cnt, sizeof(cnt)) < 0) {
            /* spurious; nothing to drain */
        }
        ops = take_ops(e, &stopping);
        if (e->broken || sl_store_begin(e->st) < 0) {
            /* Nothing can be changed: refuse, and wait to be stopped. */
            complete_ops(ops, false);
            wait_ms = 100;
            if (stopping)
                break;
            continue;
        }
        for (struct sl_op *op = ops; op; op = op->next)
            apply_op(e, op);
        poll_tasks(e);
        wait_ms = run_timers(e);
        if (!stopping && (e->nfresh || e->sched_full))
            schedule(e, &started, &nstarted);
        if (sl_store_commit(e->st) < 0) {
            /* Memory now holds changes the store does not: stop changing
             * anything and have sluiced shut down; the next start loads
             * the last committed state. Nothing of this group was
             * acknowledged. */
            sl_error("msg=\"store commit failed; refusing changes and shutting "
                     "down\"");
            sl_store_rollback(e->st);
            committed = false;
            e->broken = true;
            kill(getpid(), SIGTERM);
        }
        if (committed) {
            for (size_t i = 0; i < e->ngone; i++)
                sl_exec_release(e->exec, &e->gone[i]);
            e->ngone = 0;
            sync_enqueue(e, ops);
        } else {
            complete_ops(ops, false);
        }
        if (nstarted && committed) {
            /* Launch after the commit; start failures are written in a
             * small transaction of their own. */
            bool failures = false;
            for (size_t i = 0; i < nstarted; i++) {
                job_start_tasks(e, started[i]);
                failures |= started[i]->gang_failed;
            }
            if (sl_store_begin(e->st) == 0) {
                for (size_t i = 0; i < nstarted; i++)
                    job_persist(e, started[i], "launched", "Running", -1, 0);
                sl_store_commit(e->st);
            }
            if (failures)
                wait_ms = 0;
        }
        free(started);
        if (stopping) {
            bool more;
            pthread_mutex_lock(&e->qmu);
            more = e->qhead != NULL;
            pthread_mutex_unlock(&e->qmu);
            if (!more)
                break;
            wait_ms = 0;
        }
    }
    return NULL;
}

/* ---- creation and loading --------------------------------------------- */

static int ld_team(void *arg, const char *name, const char *dq)
{
    struct sl_engine *e = arg;
    if (e->nteams == MAX_NAMED)
        return -ENOSPC;
    sl_strlcpy(e->teams[e->nteams].name, name, 64);
    sl_strlcpy(e->teams[e->nteams++].default_queue, dq, 64);
    return 0;
}

static int ld_queue(void *arg, const char *name, const char *team)
{
    struct sl_engine *e = arg;
    if (e->nqueues == MAX_NAMED)
        return -ENOSPC;
    sl_strlcpy(e->queues[e->nqueues].name, name, 64);
    sl_strlcpy(e->queues[e->nqueues++].team, team, 64);
    return 0;
}

static int ld_pclass(void *arg, const char *name, int value, bool preemptible,
                     bool is_default)
{
    struct sl_engine *e = arg;
    struct pclass *p;
    if (e->npclasses == (int)SL_ARRAY_LEN(e->pclasses))
        return -ENOSPC;
    p = &e->pclasses[e->npclasses++];
    sl_strlcpy(p->name, name, sizeof(p->name));
    p->value = value;
    p->preemptible = preemptible;
    p->is_default = is_default;
    return 0;
}

static int ld_user(void *arg, const char *name, const char *team,
                   const char *role, const char *unix_user)
{
    struct sl_engine *e = arg;
    struct user *u;
    if (e->nusers == MAX_NAMED)
        return -ENOSPC;
    u = &e->users[e->nusers++];
    sl_strlcpy(u->name, name, sizeof(u->name));
    sl_strlcpy(u->team, team, sizeof(u->team));
    sl_strlcpy(u->role, role, sizeof(u->role));
    sl_strlcpy(u->unix_user, unix_user, sizeof(u->unix_user));
    return 0;
}

/* Rebuild a Running job's tasks from its stored placement and re-adopt its
 * processes. */
static int readopt(struct sl_engine *e, struct job *j, const char *placement)
{
    json_t *arr = placement ? json_loads(placement, 0, NULL) : NULL;
    size_t i;
    json_t *p;
    bool lost = false, all_done = true;

    if (!(j->tasks = calloc((size_t)j->spec->tasks, sizeof(*j->tasks)))) {
        json_decref(arr);
        return -ENOMEM;
    }
    json_array_foreach(arr, i, p) {
        int t = (int)json_integer_value(json_object_get(p, "task"));
        json_t *g;
        size_t k;
        if (t < 0 || t >= j->spec->tasks)
            continue;
        j->tasks[t].gpu_milli = (int)json_integer_value(json_object_get(p, "gpu_milli"));
        json_array_foreach(json_object_get(p, "gpus"), k, g) {
            int idx = (int)json_integer_value(g);
            if (idx >= 0 && idx < e->node.host.ngpus &&
                j->tasks[t].ngpus < SL_EXEC_MAX_GPUS)
                j->tasks[t].gpus[j->tasks[t].ngpus++] = idx;
        }
    }
    json_decref(arr);
    for (int t = 0; t < j->spec->tasks; t++) {
        struct task *tk = &j->tasks[t];
        for (int g = 0; g < tk->ngpus; g++)
            e->node.gpu_milli_alloc[tk->gpus[g]] += tk->gpu_milli;
        int code = 0, rc = sl_exec_adopt(e->exec, j->id, t, j->attempt, &tk->h, &code);
        if (rc == 0) {
            tk->started = true;
            all_done = false;
        } else if (rc == 1) {
            tk->started = true;
            tk->done = true;
            tk->exit_code = code;
        } else {
            tk->done = true;
            tk->exit_code = 255;
            lost = true;
        }
    }
    e->node.cpu_milli_alloc += j->spec->cpu_milli * j->spec->tasks;
    e->node.mem_bytes_alloc += j->spec->mem_bytes * j->spec->tasks;
    if (run_add(e, j) < 0)
        return -ENOMEM;
    if (j->spec->max_runtime_ms)
        j->ckpt_at_ms = sl_mono_ms() + j->spec->max_runtime_ms -
                        (sl_now_ms() - j->started_ms);
    j->lost = lost;
    if (lost && !all_done) {
        /* Part of the gang is gone: the job cannot go on. */
        job_signal_all(e, j, SIGKILL);
    }
    sl_info("msg=\"re-adopted running job\" job=%lld lost=%d", (long long)j->id,
            lost);
    return 0;
}

static int ld_job(void *arg, const struct sl_job_view *v, int64_t not_before)
{
    struct sl_engine *e = arg;
    struct sl_error err = {0};
    struct job *j = calloc(1, sizeof(*j));
    int rc;

    if (!j)
        return -ENOMEM;
    if (sl_job_spec_parse(v->spec_json, strlen(v->spec_json), &j->spec, &err) < 0) {
        sl_error("msg=\"stored job spec does not parse\" job=%lld err=\"%s: %s\"",
                 (long long)v->id, err.field, err.text);
        free(j);
        return 0; /* leave it; it cannot run */
    }
    j->id = v->id;
    sl_strlcpy(j->name, v->name, sizeof(j->name));
    sl_strlcpy(j->team, v->team, sizeof(j->team));
    sl_strlcpy(j->project, v->project ? v->project : "", sizeof(j->project));
    sl_strlcpy(j->user, v->user, sizeof(j->user));
    sl_strlcpy(j->queue, v->queue, sizeof(j->queue));
    sl_strlcpy(j->pclass, v->priority_class, sizeof(j->pclass));
    if (user_find(e, v->user))
        sl_strlcpy(j->unix_user, user_find(e, v->user)->unix_user,
                   sizeof(j->unix_user));
    j->priority = v->priority;
    j->state = v->state == SL_JOB_PREEMPTED ? SL_JOB_PENDING : v->state;
    j->attempt = v->attempt;
    j->submitted_ms = v->submitted_ms;
    j->started_ms = v->started_ms;
    j->not_before_ms = not_before;
    j->limits_enforced = v->limits_enforced;
    sl_strlcpy(j->message, v->message ? v->message : "", sizeof(j->message));
    snprintf(j->reason, sizeof(j->reason), "waiting for the scheduler");
    if (j->state == SL_JOB_RUNNING && (rc = readopt(e, j, v->placement_json)) < 0) {
        job_free(j);
        return rc;
    }
    if ((rc = sl_imap_put(&e->jobs, j->id, j)) < 0) {
        job_free(j);
        return rc;
    }
    if (j->state == SL_JOB_PENDING && j->not_before_ms)
        return vec_push((void **)&e->backoff, &e->nbackoff, &e->backoff_cap,
                        sizeof(int64_t), &j->id);
    return 0;
}

static int bootstrap(struct sl_engine *e, char **admin_token)
{
    static const struct {
        const char *name;
        int value;
        bool preemptible, is_default;
    } classes[] = {
        /* name, value, preemptible, default */
        {"production", 1000, false, false},
        {"batch", 100, true, true},
        {"best-effort", 0, true, false},
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
        rc = sl_store_queue_upsert(e->st, "default", "default");
    for (size_t i = 0; rc >= 0 && i < SL_ARRAY_LEN(classes); i++)
        rc = sl_store_pclass_upsert(e->st, classes[i].name, classes[i].value,
                                    classes[i].preemptible, classes[i].is_default);
    if (rc >= 0)
        rc = sl_store_user_upsert(e->st, "admin", "default", "admin", "");
    token_new(token, sizeof(token), hash);
    if (rc >= 0)
        rc = sl_store_token_insert(e->st, hash, "admin", 0);
    if (rc >= 0)
        rc = sl_store_meta_set(e->st, "initialized", "1");
    if (rc < 0) {
        sl_store_rollback(e->st);
        return rc;
    }
    if ((rc = sl_store_commit(e->st)) < 0)
        return rc;
    *admin_token = strdup(token);
    sodium_memzero(token, sizeof(token));
    return *admin_token ? 0 : -ENOMEM;
}

struct sl_engine *sl_engine_create(const struct sl_engine_config *cfg,
                                   char **admin_token, struct sl_error *err)
{
    struct sl_engine *e = calloc(1, sizeof(*e));
    struct sl_store_loader ld;
    struct sigaction sa;
    int rc;

    *admin_token = NULL;
    if (!e) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    e->wake_fd = -1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->qmu, NULL);
    pthread_mutex_init(&e->smu, NULL);
    pthread_cond_init(&e->scond, NULL);
    e->wal_fd = -1;
    sl_imap_init(&e->jobs);
    e->cfg = *cfg;
    sl_strlcpy(e->data_dir, cfg->data_dir, sizeof(e->data_dir));
    e->cfg.data_dir = e->data_dir;
    if (cfg->store_path)
        sl_strlcpy(e->store_path, cfg->store_path, sizeof(e->store_path));
    else
        snprintf(e->store_path, sizeof(e->store_path), "%s/sluice.db", e->data_dir);
    e->cfg.store_path = e->store_path;
    snprintf(e->log_dir, sizeof(e->log_dir), "%s/logs", e->data_dir);
    snprintf(e->run_dir, sizeof(e->run_dir), "%s/run", e->data_dir);
    if (sodium_init() < 0) {
        sl_errorf(err, -EIO, "libsodium failed to initialise");
        goto fail;
    }
    if ((rc = sl_mkdir_p(e->data_dir, 0700)) < 0 ||
        (rc = sl_mkdir_p(e->log_dir, 0755)) < 0 ||
        (rc = sl_mkdir_p(e->run_dir, 0700)) < 0) {
        sl_errorf(err, rc, "--data-dir %s: %s", e->data_dir, strerror(-rc));
        goto fail;
    }
    if ((rc = sl_host_discover(cfg->fake_gpus, &e->node.host, err)) < 0)
        goto fail;
    /* Commits do not fsync; with sync_full the syncer fdatasyncs the WAL
     * before answering, overlapping the flush with the next group. */
    if (!(e->st = sl_store_open(e->store_path, true, false, err)))
        goto fail;
    if (!(e->exec = sl_exec_create(e->run_dir))) {
        sl_errorf(err, -errno, "executor: %s", strerror(errno));
        goto fail;
    }
    if ((rc = bootstrap(e, admin_token)) < 0) {
        sl_errorf(err, rc, "store: cannot initialise: %s", strerror(-rc));
        goto fail;
    }
    {
        /* The WAL exists once the store has been written (bootstrap or an
         * earlier run); it is never deleted while the writer is open. */
        char wal[1200];
        snprintf(wal, sizeof(wal), "%s-wal",
                 strncmp(e->store_path, "sqlite:", 7) == 0 ? e->store_path + 7
                                                             : e->store_path);
        if ((e->wal_fd = open(wal, O_RDONLY | O_CLOEXEC)) < 0) {
            sl_errorf(err, -errno, "store: open %s: %s", wal, strerror(errno));
            goto fail;
        }
    }
    ld = (struct sl_store_loader){.arg = e, .team = ld_team, .queue = ld_queue,
                                  .pclass = ld_pclass, .user = ld_user, .job = ld_job};
    if ((rc = sl_store_load(e->st, &ld)) < 0) {
        sl_errorf(err, rc, "store: cannot load state: %s", strerror(-rc));
        goto fail;
    }
    e->sched_full = true;
    if ((e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        sl_errorf(err, -errno, "eventfd: %s", strerror(errno));
        goto fail;
    }
    g_wake_fd = e->wake_fd;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    sl_info("msg=\"engine ready\" host=%s cpus_milli=%lld mem_bytes=%lld gpus=%d "
            "gpu_source=%s limits=%s",
            e->node.host.hostname, (long long)e->node.host.cpu_milli,
            (long long)e->node.host.mem_bytes, e->node.host.ngpus,
            e->node.host.gpu_source,
            sl_exec_limits_available(e->exec, NULL) ? "cgroup" : "none");
    return e;
fail:
    free(*admin_token);
    *admin_token = NULL;
    sl_engine_destroy(e);
    return NULL;
}

int sl_engine_start(struct sl_engine *e)
{
    int rc = pthread_create(&e->sthread, NULL, syncer_main, e);
    if (rc)
        return -rc;
    e->srunning = true;
    if ((rc = pthread_create(&e->thread, NULL, engine_main, e)))
        return -rc;
    e->running = true;
    return 0;
}

void sl_engine_stop(struct sl_engine *e)
{
    uint64_t one = 1;

    if (!e)
        return;
    if (e->running) {
        pthread_mutex_lock(&e->qmu);
        e->stopping = true;
        pthread_mutex_unlock(&e->qmu);
        if (write(e->wake_fd, &one, sizeof(one)) < 0) {
            /* the engine polls at least once a second anyway */
        }
        pthread_join(e->thread, NULL);
        e->running = false;
    }
    if (e->srunning) {
        /* The engine has handed over its last group; the syncer answers it
         * and ends. */
        pthread_mutex_lock(&e->smu);
        e->sstop = true;
        pthread_cond_signal(&e->scond);
        pthread_mutex_unlock(&e->smu);
        pthread_join(e->sthread, NULL);
        e->srunning = false;
    }
}

void sl_engine_destroy(struct sl_engine *e)
{
    size_t pos = 0;
    int64_t id;
    void *v;
    int saved = errno;

    if (!e)
        return;
    sl_engine_stop(e);
    while (sl_imap_next(&e->jobs, &pos, &id, &v))
        job_free(v);
    sl_imap_fini(&e->jobs);
    free(e->fresh);
    free(e->run);
    free(e->backoff);
    free(e->gone);
    if (g_wake_fd == e->wake_fd)
        g_wake_fd = -1;
    if (e->wake_fd >= 0)
        close(e->wake_fd);
    sl_exec_destroy(e->exec);
    sl_store_close(e->st);
    if (e->wal_fd >= 0)
        close(e->wal_fd);
    pthread_mutex_destroy(&e->smu);
    pthread_cond_destroy(&e->scond);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->qmu);
    free(e);
    errno = saved;
}

void sl_engine_submit(struct sl_engine *e, struct sl_op *op)
{
    uint64_t one = 1;
    bool refused, wake = false;

    op->next = NULL;
    pthread_mutex_lock(&e->qmu);
    refused = e->stopping && !e->running;
    if (!refused) {
        /* Only the first op of a group wakes the engine: it takes the
         * whole queue at once, so later ones ride along (one syscall per
         * group rather than per request). */
        wake = !e->qhead;
        if (e->qtail)
            e->qtail->next = op;
        else
            e->qhead = op;
        e->qtail = op;
    }
    pthread_mutex_unlock(&e->qmu);
    if (refused) {
        op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, -ESHUTDOWN, "sluiced is shutting down");
        op->done(op, op->arg);
        return;
    }
    if (wake && write(e->wake_fd, &one, sizeof(one)) < 0) {
        /* counter saturated: a wake-up is already pending */
    }
}

json_t *sl_engine_nodes_json(struct sl_engine *e)
{
    json_t *gpus = json_array(), *node, *out;

    pthread_mutex_lock(&e->mu);
    for (int g = 0; g < e->node.host.ngpus; g++) {
        const struct sl_gpu_info *gi = &e->node.host.gpus[g];
        json_t *jobs = json_array();
        for (size_t i = 0; i < e->nrun; i++) {
            struct job *j = e->run[i];
            bool on = false;
            for (int t = 0; t < j->spec->tasks && !on; t++)
                for (int k = 0; k < j->tasks[t].ngpus; k++)
                    on |= j->tasks[t].gpus[k] == g;
            if (on)
                json_array_append_new(jobs, json_integer(j->id));
        }
        json_array_append_new(
            gpus, json_pack("{s:i, s:s, s:I, s:i, s:o}", "index", gi->index, "model",
                            gi->model, "mem_bytes", (json_int_t)gi->mem_bytes,
                            "milli_allocated", e->node.gpu_milli_alloc[g], "jobs",
                            jobs));
    }
    node = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:o}", "name",
                     e->node.host.hostname, "domain", "", "cpu_milli",
                     (json_int_t)e->node.host.cpu_milli, "cpu_milli_allocated",
                     (json_int_t)e->node.cpu_milli_alloc, "mem_bytes",
                     (json_int_t)e->node.host.mem_bytes, "mem_bytes_allocated",
                     (json_int_t)e->node.mem_bytes_alloc, "gpu_source",
                     e->node.host.gpu_source, "gpus", gpus);
    pthread_mutex_unlock(&e->mu);
    out = json_pack("{s:[o]}", "nodes", node);
    return out;
}

int sl_engine_reason(struct sl_engine *e, int64_t id, char *buf, size_t size)
{
    struct job *j;
    int rc = -ENOENT;

    pthread_mutex_lock(&e->mu);
    j = sl_imap_get(&e->jobs, id);
    if (j && j->reason[0]) {
        sl_strlcpy(buf, j->reason, size);
        rc = 0;
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sl_engine_log_path(struct sl_engine *e, int64_t id, int task, char *buf,
                       size_t size)
{
    if ((size_t)snprintf(buf, size, "%s/%lld.%d.log", e->log_dir, (long long)id,
                         task) >= size)
        return -ENAMETOOLONG;
    return 0;
}

const char *sl_engine_store_path(struct sl_engine *e) { return e->store_path; }
bool sl_engine_sync_full(struct sl_engine *e) { return e->cfg.sync_full; }
