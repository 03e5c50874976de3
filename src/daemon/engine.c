/*
 * engine.c - the engine thread: group commit, job lifecycle, timers,
 * scheduling and the executor. See engine.h.
 *
 * Invariants:
 *  - Only the engine thread writes the store and changes jobs and nodes.
 *  - e->mu guards what the HTTP thread reads: the job map, the scheduler
 *    (reasons, explanations, queue and node figures) and job messages. The
 *    engine takes it around those changes, never across I/O.
 *  - A job is in e->jobs exactly while it is Pending or Running (a job being
 *    preempted is Running); the scheduler knows exactly those jobs, and it
 *    owns the resource accounting: a Running job's resources are taken in it
 *    exactly while the job is Running.
 *  - Processes are started only after the transaction that marked the job
 *    Running has committed; a crash in between leaves a Running job with no
 *    pid file, which the next start marks Lost (and retries per policy).
 *  - A submission writes nothing at once: the job is 'fresh' and its row
 *    and Pending event are inserted with its first write (most often its
 *    placement in the same group) or, at the latest, just before the group
 *    commits; its 201 follows that commit, as every answer does. Nothing
 *    that a savepoint may undo holds a fresh job's only insert.
 *  - Running jobs sit in e->timers at their next timer; a loop iteration
 *    looks only at those that are due.
 */
#include "engine.h"

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

#define MAX_NAMED 1024        /* teams, queues, classes, users, cohorts */
#define ADOPTED_POLL_MS 1000  /* tasks re-adopted after a restart */
#define SIM_DURATION_LABEL "sim-duration"
#define CHECKPOINT_PAGES 1000 /* WAL frames that wake the checkpointer */
#define MAX_BUDGETS 256
#define METER_TICK_MS 1000    /* budget thresholds, idle flags */
#define GPUMON_PERIOD_MS 1000 /* NVML and RAPL samples */
#define PRICING_TEXT_MAX 65536

struct team { char name[64]; char default_queue[64]; };
struct queue {
    char name[64], team[64], cohort[64];
    char *spec_json;              /* owned: canonical manifest spec */
    int sq;                       /* scheduler index */
};
struct cohort { char name[64]; char description[257]; };
struct pclass {
    char name[64];
    int value;
    bool preemptible, is_default, opportunistic;
    int64_t min_runtime_ms;
    int sc;                       /* scheduler index */
};
struct user { char name[64]; char team[64]; char role[16]; char unix_user[64]; };

/* A team's use since this sluiced started, for the counters of /metrics:
 * closed intervals at the rates they ran at (running ones are added at
 * each scrape). Guarded by e->mu. */
struct team_use { double gpu_hours, cu, cost, kwh; };

/* A budget and its use in the current period: closed intervals summed,
 * running ones as sums of their rates, so that the use at any time is
 * closed + rsum * now - rstart (see budget_used). */
struct budget {
    struct sl_budget b;
    int64_t period_start;         /* of the period the sums are for */
    double closed;                /* unit */
    double rsum, rstart;          /* unit per ms; unit */
    unsigned warned;              /* 1: 80 % event written, 2: 100 % */
};

struct task {
    int node;                     /* scheduler node index */
    int ngpus;
    int gpus[SL_EXEC_MAX_GPUS];
    int gpu_milli;
    bool started;                 /* process launched (or adopted) */
    bool done;
    int exit_code;
    int64_t sim_end_ms;           /* simulated executor: when it ends (wall:
                                     the job's started_ms + its duration) */
    struct sl_exec_handle h;
    bool metered;                 /* on this host, with the monitor: m0 holds
                                     its readings at the interval's start */
    struct task_reading { bool energy_ok, util_ok, cpu_ok;
                          double energy_j, busy_s, cpu_j; } m0;
};

struct job {
    int64_t id;
    struct sl_job_spec *spec;     /* owned */
    char *name;                   /* owned */
    const char *team, *project, *user, *queue, *pclass, *unix_user; /* interned */
    int priority;
    enum sl_job_state state;
    int attempt, preemptions;
    int64_t submitted_ms, started_ms, not_before_ms;
    struct task *tasks;           /* spec->tasks entries while Running */
    bool cancel_requested, timed_out, gang_failed, lost, preempting, adopted;
    int64_t preempted_for;        /* preempting: the job it makes room for */
    int64_t ckpt_at_ms;           /* maxRuntime: send checkpoint signal (mono) */
    int64_t kill_at_ms;           /* send SIGKILL (mono); 0 = none */
    int limits_enforced;          /* -1 unknown */
    int gpus_enforced;            /* -1 unknown or no GPUs; see
                                     sl_job_view.gpus_enforced */
    int64_t intent_at_ms;         /* when a cancel, preemption or timeout
                                     first signalled it (wall); 0 = none */
    char *message;                /* owned; guarded by e->mu; NULL = none */
    char *placement;              /* owned: the tasks' placement as the
                                     API's JSON text, while Running */
    bool fresh;                   /* submitted in the open transaction and
                                     not yet stored: its first write inserts
                                     the row (see job_row) */
    char *spec_json;              /* owned while fresh: the spec's text */
    size_t run_idx;               /* index in e->run while Running */
    struct sl_heap_item due;      /* in e->timers while Running with a timer
                                     (key: its next one, mono ms) */
    double rate[3];               /* while Running: gpu-hours, CU and cost
                                     per ms at the estimate (budgets);
                                     guarded by e->mu for readers */
    double rate_kwh;              /* and kWh per ms */
    char *lineage;                /* owned while fresh: its lineage (JSON) */
    char *token;                  /* owned from placement to launch: the
                                     attempt's job token, in clear */
    char *demoted;                /* owned while fresh: why a spent budget
                                     demoted it (its "budget" event) */
    /* Idle-but-allocated (metered GPUs only): the stretch under the
     * Pricing's idle threshold that began at idle_since_ms (0 = none), the
     * tick it was last seen, and the time of this interval in stretches at
     * least idle.after long. */
    int64_t idle_since_ms, idle_last_ms, idle_ms;
    bool idle_counting, idle_flagged;
};

/* Interned strings: names that many jobs share, kept for the daemon's life. */
struct strtab {
    char **slot;                  /* open addressing; NULL = empty */
    size_t cap, len;
};

struct sl_engine {
    struct sl_engine_config cfg;
    char data_dir[1024], store_path[1100], log_dir[1100], run_dir[1100];
    char fake_nodes[1100];
    struct sl_store *st;
    struct sl_exec *exec;
    struct sl_host_info host;     /* this machine */
    struct sl_gpumon *mon;        /* its GPUs' and CPUs' meters; NULL = none
                                     (fake GPUs, no NVML nor RAPL) */
    bool host_is_node;            /* node 0 is this host (no --fake-nodes) */
    struct sl_sched *sched;       /* guarded by mu */
    struct strtab strs;

    struct team teams[MAX_NAMED];
    int nteams;
    struct queue queues[MAX_NAMED];
    int nqueues;
    struct cohort cohorts[MAX_NAMED];
    int ncohorts;
    struct pclass pclasses[64];
    int npclasses;
    struct user users[MAX_NAMED];
    int nusers;
    struct sl_pricing pricing;    /* in force; guarded by mu for readers */
    struct team_use team_use[MAX_NAMED]; /* by index in teams */
    struct budget budgets[MAX_BUDGETS];
    int nbudgets;                 /* guarded by mu for readers */
    int64_t next_meter_ms;        /* next meter tick (mono) */
    int64_t meter_since;          /* the meter's first start (wall) */

    pthread_mutex_t mu;           /* see invariants */
    struct sl_imap jobs;          /* id -> struct job*, Pending or Running */
    struct sl_imap shims;         /* shim pid -> job id, for exited tasks */
    size_t nfresh;                /* jobs submitted since the last pass */
    int64_t *unstored;            /* ids of the fresh jobs of the open
                                     transaction, stored before it commits */
    size_t nunstored, unstored_cap;
    int64_t next_id;              /* the id of the next job submitted */
    bool write_failed;            /* a write the open transaction needs
                                     failed: it must not commit */
    struct job **run;             /* Running jobs; j->run_idx is the index */
    size_t nrun, run_cap;
    struct sl_heap timers;        /* Running jobs that have a timer: task
                                     ends (simulated), maxRuntime, kill
                                     after grace; room for every Running
                                     job is reserved before it runs */
    struct sl_exec_handle *gone;  /* tasks whose end is recorded in the open
                                     transaction: their pid and exit files
                                     go only once it has committed */
    size_t ngone, gone_cap;
    bool sched_full;              /* something was freed or changed */
    int64_t sched_wake_ms;        /* the scheduler's next timer (wall) */
    int64_t next_poll_ms;         /* adopted tasks of the local executor (mono) */

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
    struct sl_engine_counters counters; /* for /metrics; see engine.h */

    /* The audit log: its head as of the open transaction, the signing key
     * (read-only after creation, so that the HTTP thread may sign) */
    struct sl_audit_head audit_head;
    struct sl_audit_head audit_committed; /* guarded by mu */
    struct sl_audit_key audit_key;
    char audit_origin[160];
    char audit_vkey[256];
    struct sl_buf audit_line;
    int64_t audit_ckpt_size;      /* the last checkpoint's size */
    int64_t next_ckpt_ms;         /* mono */
    char *audit_ckpt_text;        /* a checkpoint to write to its file once
                                     the transaction holding it commits */
    _Atomic uint64_t token_epoch; /* bumped when a token is revoked */
    bool tokens_revoked;          /* in the open transaction */
    char api_url[160];            /* for tasks; "" = no job tokens */
    char job_user[64];            /* the account of unmapped users' jobs;
                                     "" = they are refused (see
                                     identity_check) */
    char allow_daemon_user[64];   /* see sl_engine_config */
    struct sl_policy *policies;   /* kind: Policy, by name */
    int npolicies;
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

/* ---- interned strings ------------------------------------------------- */

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The one copy of 's', or NULL on -ENOMEM. */
static const char *intern(struct strtab *t, const char *s)
{
    size_t i;

    if (!s)
        s = "";
    if (t->len * 2 >= t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        char **ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return NULL;
        for (size_t k = 0; k < t->cap; k++) {
            if (!t->slot[k])
                continue;
            for (i = str_hash(t->slot[k]) & (ncap - 1); ns[i]; i = (i + 1) & (ncap - 1))
                ;
            ns[i] = t->slot[k];
        }
        free(t->slot);
        t->slot = ns;
        t->cap = ncap;
    }
    for (i = str_hash(s) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
        if (strcmp(t->slot[i], s) == 0)
            return t->slot[i];
    if (!(t->slot[i] = strdup(s)))
        return NULL;
    t->len++;
    return t->slot[i];
}

static void strtab_fini(struct strtab *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slot[i]);
    free(t->slot);
    memset(t, 0, sizeof(*t));
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

static struct cohort *cohort_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->ncohorts; i++)
        if (strcmp(e->cohorts[i].name, name) == 0)
            return &e->cohorts[i];
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

static void audit_add(struct sl_engine *e, const char *actor, const char *action,
                      const char *object, bool ok, json_t *details);
static void job_msg(struct sl_engine *e, struct job *j, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Set the job's message (NULL fmt clears it). */
static void job_msg(struct sl_engine *e, struct job *j, const char *fmt, ...)
{
    char buf[256];
    char *m = NULL;
    va_list ap;

    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        m = strdup(buf); /* on -ENOMEM the job just loses its message */
    }
    pthread_mutex_lock(&e->mu);
    free(j->message);
    j->message = m;
    pthread_mutex_unlock(&e->mu);
}

/* ---- scheduler glue --------------------------------------------------- */

/* Give queue 'm' (a Queue manifest) to the scheduler. Caller holds mu. */
static int sched_queue(struct sl_engine *e, const struct sl_manifest *m)
{
    return sl_sched_apply_manifest(e->sched, m);
}

/* A queue without quota (made with a team, or before quotas existed). */
static int sched_queue_plain(struct sl_engine *e, const char *name, const char *team)
{
    struct sl_sched_queue_spec qs = {0};

    qs.name = name;
    qs.team = team;
    qs.weight = 1;
    sl_sched_res_unset(&qs.nominal);
    sl_sched_res_unset(&qs.borrowing_limit);
    sl_sched_res_unset(&qs.lending_limit);
    sl_sched_res_unset(&qs.user_limit);
    return sl_sched_queue_set(e->sched, &qs);
}

static int sched_class(struct sl_engine *e, struct pclass *p)
{
    struct sl_sched_class_spec cs = {p->name, p->value, p->preemptible,
                                     p->opportunistic, p->min_runtime_ms};
    return p->sc = sl_sched_class_set(e->sched, &cs);
}

static void sched_settings(struct sl_engine *e, const struct sl_manifest *m)
{
    sl_sched_apply_manifest(e->sched, m);
}

/* Parse one stored manifest spec back ({kind, name, spec JSON text}). */
static int manifest_from_store(const char *kind, const char *name, const char *spec_json,
                               struct sl_manifest **out)
{
    json_t *spec = spec_json && *spec_json ? json_loads(spec_json, 0, NULL) : NULL;
    json_t *doc;
    char *text;
    struct sl_error err = {0};
    size_t n = 0;
    int rc;

    doc = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "sluice/v1", "kind", kind,
                    "metadata", "name", name);
    if (!doc) {
        json_decref(spec);
        return -ENOMEM;
    }
    if (spec)
        json_object_set_new(doc, "spec", spec);
    text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return -ENOMEM;
    rc = sl_manifests_parse(text, strlen(text), out, &n, &err);
    if (rc < 0)
        sl_error("msg=\"stored %s does not parse\" name=%s err=\"%s: %s\"", kind, name,
                 err.field, err.text);
    free(text);
    return rc;
}

/* ---- job views and transitions ---------------------------------------- */

/* Append the decimal form of 'v'. */
static void buf_int(struct sl_buf *b, int v)
{
    char t[16];
    int n = snprintf(t, sizeof(t), "%d", v);

    sl_buf_add(b, t, (size_t)n);
}

/* The placement of a job's tasks as the API's JSON text (the array of
 * {node, task, gpus, gpu_milli} objects, compact), written once when the
 * job is placed and kept while it runs. Returns NULL on -ENOMEM. */
static char *placement_text(struct sl_engine *e, const struct job *j)
{
    struct sl_buf b;

    sl_buf_init(&b);
    sl_buf_add(&b, "[", 1);
    pthread_mutex_lock(&e->mu); /* node names live in the scheduler */
    for (int t = 0; j->tasks && t < j->spec->tasks; t++) {
        const struct task *tk = &j->tasks[t];
        struct sl_sched_node_view nv;
        sl_sched_node_view(e->sched, tk->node, &nv);
        sl_buf_adds(&b, t ? ",{\"node\":" : "{\"node\":");
        sl_buf_json_str(&b, nv.name);
        sl_buf_adds(&b, ",\"task\":");
        buf_int(&b, t);
        sl_buf_adds(&b, ",\"gpus\":[");
        for (int g = 0; g < tk->ngpus; g++) {
            if (g)
                sl_buf_add(&b, ",", 1);
            buf_int(&b, tk->gpus[g]);
        }
        sl_buf_adds(&b, "],\"gpu_milli\":");
        buf_int(&b, tk->gpu_milli);
        sl_buf_add(&b, "}", 1);
    }
    pthread_mutex_unlock(&e->mu);
    sl_buf_add(&b, "]", 1);
    if (b.failed) {
        sl_buf_fini(&b);
        return NULL;
    }
    return b.data;
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
    v->preemptions = j->preemptions;
    v->submitted_ms = j->submitted_ms;
    v->started_ms = j->started_ms;
    v->placement_json = placement;
    v->message = j->message;
    v->limits_enforced = j->limits_enforced;
    v->gpus_enforced = j->gpus_enforced;
    if (j->state == SL_JOB_RUNNING) {
        v->intent = j->cancel_requested ? "cancel"
                    : j->preempting     ? "preempt"
                    : j->timed_out      ? "timeout"
                                        : NULL;
        v->intent_at_ms = v->intent ? j->intent_at_ms : 0;
        v->intent_for = j->preempting ? j->preempted_for : 0;
    }
    v->spec_json = spec_json;
}

/* Write the job row for its current state. With 'exit_code' >= 0 the job
 * is finished with that code.
 *
 * A job submitted in the open transaction has no row yet ('fresh'): the
 * submission writes nothing, and the job's first write inserts its row as
 * it is then, with the Pending event of its submission first. A job placed
 * in the group that submitted it is thus written once, Running, instead of
 * inserted Pending and updated; the events are the same. The caller undoes
 * a failed write with a savepoint and must then set 'fresh' back. */
static int job_row(struct sl_engine *e, struct job *j, int exit_code, int64_t finished_ms)
{
    struct sl_job_view v;
    int rc;

    job_view(j, &v, j->fresh ? j->placement : j->placement ? j->placement : "[]",
             j->spec_json);
    if (exit_code >= 0) {
        v.has_exit_code = true;
        v.exit_code = exit_code;
    }
    v.finished_ms = finished_ms;
    if (!j->fresh)
        return sl_store_job_update(e->st, &v, j->not_before_ms);
    if ((rc = sl_store_job_insert(e->st, &v, j->not_before_ms)) == 0 &&
        (!j->lineage || (rc = sl_store_job_lineage(e->st, j->id, j->lineage)) == 0) &&
        (rc = sl_store_event_add(e->st, j->id, j->submitted_ms, "state", NULL, "Pending",
                                 NULL)) == 0 &&
        (!j->demoted || (rc = sl_store_event_add(e->st, j->id, j->submitted_ms, "budget",
                                                 "Pending", "Pending", j->demoted)) == 0))
        j->fresh = false;
    return rc;
}

/* Store the fresh job 'id' if it still is: before a commit, and before an
 * operation on it takes a savepoint (which could undo the insert). A
 * failure fails the whole open transaction. */
static void job_store_fresh(struct sl_engine *e, int64_t id)
{
    struct job *j = sl_imap_get(&e->jobs, id);

    if (!j || !j->fresh)
        return;
    if (job_row(e, j, -1, 0) < 0) {
        sl_error("msg=\"store: cannot write a new job; the group fails\" job=%lld",
                 (long long)id);
        e->write_failed = true;
    } else {
        free(j->spec_json);
        j->spec_json = NULL;
        free(j->demoted);
        j->demoted = NULL;
        free(j->lineage);
        j->lineage = NULL;
    }
}

/* Write the job row for its current state, plus one event. */
static int job_persist(struct sl_engine *e, struct job *j, const char *type,
                       const char *from, int exit_code, int64_t finished_ms)
{
    int rc = job_row(e, j, exit_code, finished_ms);

    if (rc == 0)
        rc = sl_store_event_add(e->st, j->id, sl_now_ms(), type, from,
                                sl_job_state_name(j->state), j->message);
    return rc;
}

/* Record that Running job 'j' was told to stop ('type': cancel, preempt
 * or timeout; its flag and intent_at_ms already set): the row carries the
 * intent, and one event says it. */
static int job_intent_write(struct sl_engine *e, struct job *j, const char *type)
{
    int rc = job_row(e, j, -1, 0);

    if (rc == 0)
        rc = sl_store_event_add(e->st, j->id, j->intent_at_ms, type, NULL, NULL,
                                j->message);
    return rc;
}

static void job_token_drop(struct job *j)
{
    if (j->token) {
        sodium_memzero(j->token, strlen(j->token));
        free(j->token);
        j->token = NULL;
    }
}

static void job_free(struct job *j)
{
    if (!j)
        return;
    sl_job_spec_destroy(j->spec);
    free(j->tasks);
    free(j->placement);
    free(j->spec_json);
    free(j->name);
    free(j->message);
    free(j->demoted);
    free(j->lineage);
    job_token_drop(j);
    free(j);
}

/* Append to a growable vector. */
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

/* On the run list, with room in the timer heap for it. Caller holds
 * e->mu. Returns 0 or -ENOMEM (nothing changed). */
static int run_add(struct sl_engine *e, struct job *j)
{
    int rc = sl_heap_reserve(&e->timers, e->nrun + 1);

    if (rc == 0 && (rc = vec_push((void **)&e->run, &e->nrun, &e->run_cap,
                                  sizeof(j), &j)) == 0)
        j->run_idx = e->nrun - 1;
    return rc;
}

/* Off the run list (the last entry takes its place) and off the timer
 * heap. Caller holds e->mu. */
static void run_del(struct sl_engine *e, struct job *j)
{
    size_t i = j->run_idx;

    sl_heap_del(&e->timers, &j->due);
    if (i >= e->nrun || e->run[i] != j)
        return; /* not on the list */
    e->run[i] = e->run[--e->nrun];
    e->run[i]->run_idx = i;
}

/* When the job's next timer is due (mono ms), or INT64_MAX for none: the
 * maxRuntime checkpoint, the SIGKILL after a grace period and, with the
 * simulated executor, the end of a task. A task's end is on the wall clock
 * (so that finished_at - started_at is never below its duration) and is
 * put on the monotonic one here; should the clocks drift apart, the task
 * is found not yet ended and put back. */
static int64_t job_due_ms(const struct sl_engine *e, const struct job *j)
{
    int64_t due = INT64_MAX, mono = 0, wall = 0;

    if (j->ckpt_at_ms && !j->timed_out && !j->cancel_requested && !j->preempting)
        due = j->ckpt_at_ms;
    if (j->kill_at_ms && j->kill_at_ms < due)
        due = j->kill_at_ms;
    if (e->cfg.executor == SL_EXECUTOR_SIMULATED && j->tasks) {
        mono = sl_mono_ms();
        wall = sl_now_ms();
        for (int t = 0; t < j->spec->tasks; t++) {
            const struct task *tk = &j->tasks[t];
            int64_t at = tk->sim_end_ms <= wall ? mono : mono + (tk->sim_end_ms - wall);
            if (tk->started && !tk->done && at < due)
                due = at;
        }
    }
    return due;
}

/* Put a Running job in the timer heap at its next timer, or take it out
 * when it has none. Call after anything that changes one. Cannot fail:
 * run_add reserved the room. */
static void job_timer(struct sl_engine *e, struct job *j)
{
    int64_t due = j->tasks ? job_due_ms(e, j) : INT64_MAX;

    if (due == INT64_MAX)
        sl_heap_del(&e->timers, &j->due);
    else if (sl_heap_set(&e->timers, &j->due, due) < 0)
        sl_warn("msg=\"timer heap without room\" job=%lld", (long long)j->id);
}

/* A Running job stops: off the run list; its task files go once the
 * transaction that records its end has committed. The scheduler is told
 * by the caller (remove or requeue), which gives the resources back. */
static void job_release(struct sl_engine *e, struct job *j)
{
    pthread_mutex_lock(&e->mu);
    run_del(e, j);
    pthread_mutex_unlock(&e->mu);
    for (int t = 0; t < j->spec->tasks; t++) {
        if (j->tasks[t].h.shim_pid > 0)
            sl_imap_del(&e->shims, j->tasks[t].h.shim_pid);
        /* A crash before the commit must still find the exit records. */
        if (j->tasks[t].started && e->cfg.executor == SL_EXECUTOR_LOCAL &&
            vec_push((void **)&e->gone, &e->ngone, &e->gone_cap,
                     sizeof(struct sl_exec_handle), &j->tasks[t].h) < 0)
            sl_warn("msg=\"out of memory: task files of job %lld kept\"",
                    (long long)j->id);
    }
    free(j->tasks);
    j->tasks = NULL;
    free(j->placement);
    j->placement = NULL;
    e->sched_full = true;
}

static void job_forget(struct sl_engine *e, struct job *j)
{
    sl_engine_count_finished(e, j->state);
    pthread_mutex_lock(&e->mu);
    sl_imap_del(&e->jobs, j->id);
    sl_sched_job_remove(e->sched, j->id, sl_now_ms());
    pthread_mutex_unlock(&e->mu);
    job_free(j);
}

/* Back to Pending in the scheduler, keeping the submit time. */
static void job_requeue_sched(struct sl_engine *e, struct job *j, int64_t not_before)
{
    pthread_mutex_lock(&e->mu);
    sl_sched_job_requeue(e->sched, j->id, sl_now_ms(), not_before);
    pthread_mutex_unlock(&e->mu);
}

/* ---- the meter: ledger intervals and budgets ---------------------------- */

/* The ledger row of task 't' of Running job 'j' (open, from its start).
 * Node name and GPU model are copied into 'node'/'model'; gpus into
 * 'gpus' ("0;1"). */
static void usage_row(struct sl_engine *e, const struct job *j, int t,
                      struct sl_usage_row *r, char node[64], char model[48],
                      char gpus[128])
{
    const struct task *tk = &j->tasks[t];
    struct sl_sched_node_view nv;
    size_t o = 0;

    memset(r, 0, sizeof(*r));
    node[0] = model[0] = gpus[0] = '\0';
    pthread_mutex_lock(&e->mu);
    if (sl_sched_node_view(e->sched, tk->node, &nv) == 0) {
        sl_strlcpy(node, nv.name, 64);
        if (tk->ngpus > 0 && tk->gpus[0] >= 0 && tk->gpus[0] < nv.ngpus)
            sl_strlcpy(model, sl_sched_model_name(e->sched, nv.gpu_model[tk->gpus[0]]),
                       48);
    }
    pthread_mutex_unlock(&e->mu);
    for (int g = 0; g < tk->ngpus && o + 8 < 128; g++)
        o += (size_t)snprintf(gpus + o, 128 - o, g ? ";%d" : "%d", tk->gpus[g]);
    r->job_id = j->id;
    r->attempt = j->attempt;
    r->task = t;
    r->team = j->team;
    r->project = j->project ? j->project : "";
    r->user = j->user;
    r->queue = j->queue;
    r->node = node;
    r->gpu_model = model;
    r->gpus = gpus;
    r->ngpus = tk->ngpus;
    r->gpu_milli = tk->ngpus ? tk->gpu_milli : 0;
    r->cpu_milli = j->spec->cpu_milli;
    r->mem_bytes = j->spec->mem_bytes;
    r->start_ms = j->started_ms;
}

/* A budget's measure of figures 'f'. */
static double budget_measure(const struct sl_budget *b, const struct sl_usage_fig *f)
{
    return b->unit == SL_BUDGET_GPU_HOURS ? f->gpu_hours
           : b->unit == SL_BUDGET_CU      ? f->cu
                                          : f->cost;
}

/* Use of budget 'b' at wall time 'now'. */
static double budget_used(const struct budget *b, int64_t now)
{
    double used = b->closed + b->rsum * (double)now - b->rstart;
    return used > 0 ? used : 0;
}

/* Add (sign 1) or take out (-1) Running job 'j''s rates in its team's
 * budgets. */
static void budgets_running(struct sl_engine *e, const struct job *j, int sign)
{
    for (int i = 0; i < e->nbudgets; i++) {
        struct budget *b = &e->budgets[i];
        double rate = j->rate[b->b.unit];
        int64_t from = j->started_ms > b->period_start ? j->started_ms : b->period_start;
        if (strcmp(b->b.team, j->team) != 0)
            continue;
        b->rsum += sign * rate;
        b->rstart += sign * rate * (double)from;
    }
}

/* The estimate rates of Running job 'j' under the Pricing in force: its
 * figures over one hour of running, per ms. */
static void job_rates(struct sl_engine *e, struct job *j)
{
    double rate[3] = {0, 0, 0}, kwh = 0;

    for (int t = 0; j->tasks && t < j->spec->tasks; t++) {
        struct sl_usage_row r;
        struct sl_usage_fig f;
        char node[64], model[48], gpus[128];
        usage_row(e, j, t, &r, node, model, gpus);
        r.start_ms = 0;
        r.end_ms = 3600000;
        sl_usage_figures(&e->pricing, &r, 0, 3600000, 3600000, NULL, 0, &f);
        rate[SL_BUDGET_GPU_HOURS] += f.gpu_hours / 3600000.0;
        rate[SL_BUDGET_CU] += f.cu / 3600000.0;
        rate[SL_BUDGET_COST] += f.cost / 3600000.0;
        kwh += f.energy_kwh / 3600000.0;
    }
    pthread_mutex_lock(&e->mu);
    memcpy(j->rate, rate, sizeof(rate));
    j->rate_kwh = kwh;
    pthread_mutex_unlock(&e->mu);
}

/* The monitor's readings of task 'tk' at wall time 'at': its GPUs' energy,
 * each weighted by the task's share of it, their busy seconds summed, and
 * the CPU packages' energy. */
static void task_read(struct sl_engine *e, const struct task *tk, int64_t at,
                      struct task_reading *out)
{
    memset(out, 0, sizeof(*out));
    out->energy_ok = out->util_ok = tk->ngpus > 0;
    for (int g = 0; g < tk->ngpus; g++) {
        struct sl_gpu_meter m;
        int idx = tk->gpus[g];
        if (idx < 0 || idx >= e->host.ngpus ||
            !sl_gpumon_gpu(e->mon, e->host.gpus[idx].index, at, &m)) {
            out->energy_ok = out->util_ok = false;
            break;
        }
        out->energy_ok &= m.energy_ok;
        out->util_ok &= m.util_ok;
        out->energy_j += m.energy_j * tk->gpu_milli / 1000.0;
        out->busy_s += m.busy_s;
    }
    out->cpu_ok = sl_gpumon_cpu(e->mon, at, &out->cpu_j);
}

static bool task_metered(const struct sl_engine *e, const struct task *tk)
{
    return e->mon && e->host_is_node && tk->node == 0;
}

/* Open the ledger intervals of a job just placed (in the placement's
 * savepoint), with the meters' readings at its start. */
static int ledger_open(struct sl_engine *e, struct job *j)
{
    int rc = 0;

    j->idle_since_ms = j->idle_last_ms = j->idle_ms = 0;
    j->idle_counting = j->idle_flagged = false;
    for (int t = 0; t < j->spec->tasks && rc == 0; t++) {
        struct sl_usage_row r;
        struct task *tk = &j->tasks[t];
        char node[64], model[48], gpus[128];
        if ((tk->metered = task_metered(e, tk)))
            task_read(e, tk, j->started_ms, &tk->m0);
        usage_row(e, j, t, &r, node, model, gpus);
        rc = sl_store_usage_open(e->st, &r);
    }
    return rc;
}

/* Fill row 'r' of task 'tk' (ending at r->end_ms) with what its meters
 * measured since the start: energy, utilisation, its share of the CPU
 * packages' energy; and the job's idle time. */
static void ledger_measured(struct sl_engine *e, const struct job *j, const struct task *tk,
                            struct sl_usage_row *r)
{
    struct task_reading m1;
    double secs = (double)(r->end_ms - r->start_ms) / 1000.0;

    r->idle = j->idle_flagged;
    r->idle_ms = j->idle_ms;
    if (!tk->metered)
        return;
    task_read(e, tk, r->end_ms, &m1);
    if ((r->gpu_energy_measured = tk->m0.energy_ok && m1.energy_ok))
        r->gpu_energy_j = m1.energy_j > tk->m0.energy_j ? m1.energy_j - tk->m0.energy_j : 0;
    if ((r->has_util = tk->m0.util_ok && m1.util_ok && secs > 0)) {
        double u = (m1.busy_s - tk->m0.busy_s) / (tk->ngpus * secs);
        r->util = u < 0 ? 0 : u > 1 ? 1 : u;
    }
    if ((r->cpu_energy_measured = tk->m0.cpu_ok && m1.cpu_ok && e->host.cpu_milli > 0)) {
        double d = m1.cpu_j > tk->m0.cpu_j ? m1.cpu_j - tk->m0.cpu_j : 0;
        r->cpu_energy_j = d * (double)r->cpu_milli / (double)e->host.cpu_milli;
    }
}

/* After ledger_open has been written: count the job in its budgets. Also
 * for a Running job re-adopted at start (its intervals are open). */
static void ledger_running(struct sl_engine *e, struct job *j)
{
    job_rates(e, j);
    pthread_mutex_lock(&e->mu);
    budgets_running(e, j, 1);
    pthread_mutex_unlock(&e->mu);
}

/* Close the intervals of a Running job at 'end' and move its use into its
 * budgets' closed sums. A failed write fails the group: no change without
 * its record. */
static void ledger_close(struct sl_engine *e, struct job *j, int64_t end)
{
    struct team *tm = team_find(e, j->team);
    double ms = end > j->started_ms ? (double)(end - j->started_ms) : 0;

    pthread_mutex_lock(&e->mu);
    budgets_running(e, j, -1);
    if (tm) {
        /* the counters of /metrics: at the rates, so that they only grow */
        struct team_use *u = &e->team_use[tm - e->teams];
        u->gpu_hours += j->rate[SL_BUDGET_GPU_HOURS] * ms;
        u->cu += j->rate[SL_BUDGET_CU] * ms;
        u->cost += j->rate[SL_BUDGET_COST] * ms;
        u->kwh += j->rate_kwh * ms;
    }
    pthread_mutex_unlock(&e->mu);
    for (int t = 0; j->tasks && t < j->spec->tasks; t++) {
        struct sl_usage_row r;
        char node[64], model[48], gpus[128];
        usage_row(e, j, t, &r, node, model, gpus);
        r.end_ms = end > r.start_ms ? end : r.start_ms;
        ledger_measured(e, j, &j->tasks[t], &r);
        if (sl_store_usage_close(e->st, &r) < 0) {
            sl_error("msg=\"store: cannot close a usage interval; the group fails\" "
                     "job=%lld", (long long)j->id);
            e->write_failed = true;
        }
        for (int i = 0; i < e->nbudgets; i++) {
            struct budget *b = &e->budgets[i];
            struct sl_usage_fig f;
            if (strcmp(b->b.team, j->team) != 0)
                continue;
            sl_usage_figures(&e->pricing, &r, b->period_start, INT64_MAX, end, NULL, 0,
                             &f);
            pthread_mutex_lock(&e->mu);
            b->closed += budget_measure(&b->b, &f);
            pthread_mutex_unlock(&e->mu);
        }
    }
    pthread_mutex_lock(&e->mu);
    memset(j->rate, 0, sizeof(j->rate));
    j->rate_kwh = 0;
    pthread_mutex_unlock(&e->mu);
}

struct budget_scan {
    struct sl_engine *e;
    struct budget *b;
    int64_t now;
};

static int budget_scan_row(void *arg, const struct sl_usage_row *r)
{
    struct budget_scan *bs = arg;
    struct sl_usage_fig f;

    if (!r->end_ms)
        return 0; /* running: counted by its rate */
    sl_usage_figures(&bs->e->pricing, r, bs->b->period_start, bs->now, bs->now, NULL, 0,
                     &f);
    bs->b->closed += budget_measure(&bs->b->b, &f);
    return 0;
}

/* Recount budget 'b' for the period holding 'now': closed intervals from
 * the ledger, running jobs from their rates. */
static void budget_recount(struct sl_engine *e, struct budget *b, int64_t now)
{
    struct budget nb = *b;
    struct budget_scan bs = {e, &nb, now};
    int64_t ps = sl_period_start(b->b.period, now);

    if (ps != nb.period_start)
        nb.warned = 0;
    nb.period_start = ps;
    nb.closed = nb.rsum = nb.rstart = 0;
    if (sl_store_usage_scan(e->st, ps, now + 1, nb.b.team, 0, budget_scan_row, &bs) < 0)
        sl_warn("msg=\"cannot read the ledger for a budget\" budget=%s", nb.b.name);
    for (size_t i = 0; i < e->nrun; i++) {
        const struct job *j = e->run[i];
        int64_t from = j->started_ms > ps ? j->started_ms : ps;
        if (strcmp(j->team, nb.b.team) != 0)
            continue;
        nb.rsum += j->rate[nb.b.unit];
        nb.rstart += j->rate[nb.b.unit] * (double)from;
    }
    pthread_mutex_lock(&e->mu);
    *b = nb;
    pthread_mutex_unlock(&e->mu);
}

/* Add or replace a budget (caller holds e->mu); meter_recount counts it. */
static void budget_set(struct sl_engine *e, const struct sl_budget *nb)
{
    struct budget *b = NULL;

    for (int i = 0; i < e->nbudgets && !b; i++)
        if (strcmp(e->budgets[i].b.name, nb->name) == 0)
            b = &e->budgets[i];
    if (!b && e->nbudgets < MAX_BUDGETS) {
        b = &e->budgets[e->nbudgets++];
        memset(b, 0, sizeof(*b));
        b->period_start = -1;
    }
    if (!b)
        return;
    if (b->b.period != nb->period || b->b.unit != nb->unit || b->b.limit != nb->limit ||
        strcmp(b->b.team, nb->team) != 0)
        b->warned = 0;
    b->b = *nb;
}

/* Every Running job's rates again (the Pricing changed) and every budget
 * recounted. */
static void meter_recount(struct sl_engine *e)
{
    int64_t now = sl_now_ms();

    for (size_t i = 0; i < e->nrun; i++)
        job_rates(e, e->run[i]);
    for (int i = 0; i < e->nbudgets; i++)
        budget_recount(e, &e->budgets[i], now);
}

/* Idle-but-allocated: a Running job all of whose metered GPUs have sampled
 * under the Pricing's idle threshold for its idle.after is flagged (its
 * intervals, and an "idle" event once per attempt); the time under the
 * threshold in such stretches is its idle_ms. In the open transaction. */
static void meter_idle(struct sl_engine *e, int64_t now)
{
    for (size_t i = 0; e->mon && i < e->nrun; i++) {
        struct job *j = e->run[i];
        bool any = false, idle = true;
        char msg[256];

        for (int t = 0; t < j->spec->tasks && idle; t++) {
            const struct task *tk = &j->tasks[t];
            for (int g = 0; tk->metered && g < tk->ngpus && idle; g++) {
                struct sl_gpu_sample smp;
                int idx = tk->gpus[g];
                any = true;
                if (idx < 0 || idx >= e->host.ngpus ||
                    !sl_gpumon_last(e->mon, e->host.gpus[idx].index, &smp) ||
                    !smp.has_util || smp.util >= e->pricing.idle_util)
                    idle = false;
            }
        }
        if (!any)
            continue;
        if (!idle) {
            j->idle_since_ms = 0;
            j->idle_counting = false;
            continue;
        }
        if (!j->idle_since_ms || now < j->idle_since_ms)
            j->idle_since_ms = j->idle_last_ms = now;
        if (now - j->idle_since_ms < e->pricing.idle_after_ms) {
            j->idle_last_ms = now;
            continue;
        }
        {
            int64_t from = j->idle_counting ? j->idle_last_ms : j->idle_since_ms;
            j->idle_ms += now > from ? now - from : 0;
        }
        j->idle_counting = true;
        j->idle_last_ms = now;
        if (sl_store_usage_mark_idle(e->st, j->id, j->idle_ms) < 0) {
            e->write_failed = true;
            return;
        }
        if (j->idle_flagged)
            continue;
        snprintf(msg, sizeof(msg),
                 "idle but allocated: its GPUs have been under %.0f %% utilisation for "
                 "%llds",
                 e->pricing.idle_util * 100, (long long)((now - j->idle_since_ms) / 1000));
        if (sl_store_event_add(e->st, j->id, now, "idle", NULL, NULL, msg) < 0) {
            e->write_failed = true;
            return;
        }
        j->idle_flagged = true;
        sl_info("msg=\"job idle but allocated\" job=%lld team=%s idle_ms=%lld",
                (long long)j->id, j->team, (long long)(now - j->idle_since_ms));
    }
}

/* The 80 % and 100 % events of every budget, once per period each; a new
 * period's recount; idle-but-allocated jobs. In the open transaction. */
static void meter_tick(struct sl_engine *e)
{
    int64_t now = sl_now_ms();

    meter_idle(e, now);
    if (e->write_failed)
        return;

    for (int i = 0; i < e->nbudgets; i++) {
        struct budget *b = &e->budgets[i];
        double used, pct;
        if (sl_period_start(b->b.period, now) != b->period_start)
            budget_recount(e, b, now);
        used = budget_used(b, now);
        pct = used / b->b.limit * 100;
        for (int k = 0; k < 2; k++) {
            static const int thresholds[] = {80, 100};
            unsigned bit = 1u << k;
            int added;
            if (pct < thresholds[k] || (b->warned & bit))
                continue;
            if ((added = sl_store_budget_event_add(e->st, b->b.name, b->period_start,
                                                   thresholds[k], now, used,
                                                   b->b.limit)) < 0) {
                e->write_failed = true;
                return;
            }
            pthread_mutex_lock(&e->mu);
            b->warned |= bit;
            pthread_mutex_unlock(&e->mu);
            if (added) {
                char obj[96];
                sl_warn("msg=\"budget %s at %d %%\" budget=%s team=%s used=%.6f limit=%.6f "
                    "unit=%s action=%s",
                    b->b.name, thresholds[k], b->b.name, b->b.team, used, b->b.limit,
                    sl_budget_unit_name(b->b.unit),
                    thresholds[k] == 100 ? sl_budget_action_name(b->b.action) : "none");
                snprintf(obj, sizeof(obj), "budget:%s", b->b.name);
                audit_add(e, "meter", thresholds[k] == 100 ? "budget.exhausted" : "budget.warn",
                          obj, true,
                          json_pack("{s:s, s:i, s:f, s:f, s:s, s:s}", "team", b->b.team,
                                    "threshold", thresholds[k], "used", used, "limit",
                                    b->b.limit, "unit", sl_budget_unit_name(b->b.unit),
                                    "action", thresholds[k] == 100
                                                  ? sl_budget_action_name(b->b.action)
                                                  : "none"));
            }
        }
    }
}

/* The budget of 'team' that is spent, the one that blocks before one that
 * demotes; NULL when none is. */
static const struct budget *budget_spent(struct sl_engine *e, const char *team,
                                         int64_t now)
{
    const struct budget *found = NULL;

    for (int i = 0; i < e->nbudgets; i++) {
        const struct budget *b = &e->budgets[i];
        if (strcmp(b->b.team, team) != 0 || b->period_start != sl_period_start(b->b.period, now) ||
            budget_used(b, now) < b->b.limit)
            continue;
        if (!found || b->b.action == SL_BUDGET_BLOCK)
            found = b;
        if (b->b.action == SL_BUDGET_BLOCK)
            break;
    }
    return found;
}

/* The class a demoted job gets: "best-effort" when it exists, else the
 * preemptible class of lowest value; NULL when there is none. */
static struct pclass *demote_class(struct sl_engine *e)
{
    struct pclass *low = pclass_find(e, "best-effort");

    for (int i = 0; !pclass_find(e, "best-effort") && i < e->npclasses; i++)
        if (e->pclasses[i].preemptible && (!low || e->pclasses[i].value < low->value))
            low = &e->pclasses[i];
    return low;
}

static void budget_text(struct sl_engine *e, const struct budget *b, int64_t now,
                        char *buf, size_t size)
{
    char from[40], until[40];

    sl_time_rfc3339(b->period_start, from, sizeof(from));
    sl_time_rfc3339(sl_period_next(b->b.period, b->period_start), until, sizeof(until));
    from[10] = until[10] = '\0';
    snprintf(buf, size,
             "team '%s' has used %.2f of the %.2f %s of its budget '%s' for the %s "
             "from %s (it resets on %s)",
             b->b.team, budget_used(b, now), b->b.limit,
             b->b.unit == SL_BUDGET_GPU_HOURS ? "GPU-hours"
             : b->b.unit == SL_BUDGET_CU      ? "CU"
                                              : e->pricing.currency,
             b->b.name, sl_budget_period_name(b->b.period), from, until);
}

/* A Running job whose every task has ended: decide its outcome. The row is
 * written while the placement is still known, then the resources go back. */
static int job_finish(struct sl_engine *e, struct job *j, bool lost)
{
    int code = 0, rc, failures = j->attempt - j->preemptions;
    int64_t now = sl_now_ms();

    ledger_close(e, j, now);
    job_token_drop(j);
    if (e->cfg.executor == SL_EXECUTOR_LOCAL && e->api_url[0]) {
        int n = sl_store_tokens_revoke_job(e->st, j->id, now);
        if (n < 0)
            e->write_failed = true;
        e->tokens_revoked |= n > 0;
    }
    for (int t = 0; t < j->spec->tasks; t++)
        if (j->tasks[t].exit_code != 0 && code == 0)
            code = j->tasks[t].exit_code;
    if (j->cancel_requested) {
        j->state = SL_JOB_CANCELLED;
        job_msg(e, j, "cancelled while running");
        rc = job_persist(e, j, "state", "Running", code, now);
    } else if (j->preempting) {
        /* Preempted: recorded, then back in line with its submit time. */
        char from[32];
        j->state = SL_JOB_PREEMPTED;
        rc = job_persist(e, j, "state", "Running", -1, 0);
        job_release(e, j);
        snprintf(from, sizeof(from), "Preempted");
        j->preemptions++;
        j->attempt++;
        j->state = SL_JOB_PENDING;
        j->started_ms = 0;
        j->not_before_ms = 0;
        j->limits_enforced = j->gpus_enforced = -1;
        j->preempting = j->lost = j->gang_failed = j->timed_out = false;
        j->kill_at_ms = j->ckpt_at_ms = 0;
        job_msg(e, j, "preempted for job %lld and requeued (%d time%s)",
                (long long)j->preempted_for, j->preemptions,
                j->preemptions > 1 ? "s" : "");
        j->preempted_for = 0;
        job_requeue_sched(e, j, 0);
        if (rc == 0)
            rc = job_persist(e, j, "requeue", from, -1, 0);
        return rc;
    } else if (j->timed_out) {
        j->state = SL_JOB_FAILED;
        job_msg(e, j, "exceeded maxRuntime of %llds; killed",
                (long long)(j->spec->max_runtime_ms / 1000));
        rc = job_persist(e, j, "state", "Running", code ? code : 137, now);
    } else if (lost) {
        j->state = SL_JOB_LOST;
        job_msg(e, j, "task process vanished while sluiced was down");
        rc = job_persist(e, j, "state", "Running", -1, now);
    } else if (code != 0 && failures >= j->spec->retries) {
        j->state = SL_JOB_FAILED;
        job_msg(e, j, "exited with code %d%s", code,
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
        (j->state == SL_JOB_LOST && failures >= j->spec->retries)) {
        job_forget(e, j);
        return rc;
    }
    /* Requeue: a failed attempt, or a Lost job, with retries left. */
    {
        const char *from = j->state == SL_JOB_LOST ? "Lost" : "Running";
        int64_t backoff = e->cfg.retry_backoff_ms << (failures < 10 ? failures : 10);
        if (backoff > 600000)
            backoff = 600000;
        if (j->state == SL_JOB_LOST)
            job_msg(e, j, "lost on attempt %d; retry %d of %d in %llds", j->attempt + 1,
                    failures + 1, j->spec->retries, (long long)(backoff / 1000));
        else
            job_msg(e, j, "attempt %d failed with exit code %d; retry %d of %d in %llds",
                    j->attempt + 1, code, failures + 1, j->spec->retries,
                    (long long)(backoff / 1000));
        j->attempt++;
        j->state = SL_JOB_PENDING;
        j->started_ms = 0;
        j->not_before_ms = now + backoff;
        j->limits_enforced = j->gpus_enforced = -1;
        j->lost = j->gang_failed = j->timed_out = false;
        j->kill_at_ms = j->ckpt_at_ms = 0;
        job_requeue_sched(e, j, j->not_before_ms);
        return job_persist(e, j, "retry", from, -1, 0);
    }
}

static void task_signal(struct sl_engine *e, struct task *tk, int sig)
{
    if (!tk->started || tk->done)
        return;
    if (e->cfg.executor == SL_EXECUTOR_SIMULATED) {
        /* nothing runs: the signal ends the task at once */
        tk->sim_end_ms = 0;
        tk->exit_code = 128 + sig;
        return;
    }
    sl_exec_signal(e->exec, &tk->h, sig);
}

static void job_signal_all(struct sl_engine *e, struct job *j, int sig)
{
    for (int t = 0; t < j->spec->tasks; t++)
        task_signal(e, &j->tasks[t], sig);
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

static bool is_role(const struct sl_principal *who, const char *role)
{
    return strcmp(who->role, role) == 0 && who->job_id == 0;
}

static bool is_admin(const struct sl_principal *who)
{
    return strcmp(who->role, "admin") == 0;
}

static int account_check(const struct sl_engine *e, const char *name, struct sl_error *err);

/* The scheduler's view of a job. */
static void sched_spec(struct sl_engine *e, const struct job *j, const struct queue *q,
                       const struct pclass *pc, int user, struct sl_sched_job_spec *sj)
{
    memset(sj, 0, sizeof(*sj));
    sj->id = j->id;
    sj->queue = q->sq;
    sj->user = user;
    sj->pclass = pc->sc;
    sj->submit_ms = j->submitted_ms;
    sj->not_before_ms = j->not_before_ms;
    sj->tasks = j->spec->tasks;
    sj->gpus = j->spec->gpus;
    sj->gpu_milli = j->spec->gpu_milli;
    sj->gpu_models = (const char *const *)j->spec->gpu_models;
    sj->cpu_milli = j->spec->cpu_milli;
    sj->mem_bytes = j->spec->mem_bytes;
    sj->topology = j->spec->topology;
    sj->max_runtime_ms = j->spec->max_runtime_ms;
    (void)e;
}

/* ---- admission ------------------------------------------------------------ */

static int policy_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sl_policy *)a)->name, ((const struct sl_policy *)b)->name);
}

/* Put policy 'p' in force (engine thread; kept sorted by name). */
static void policy_set(struct sl_engine *e, const struct sl_policy *p)
{
    struct sl_policy *grown;

    for (int i = 0; i < e->npolicies; i++)
        if (strcmp(e->policies[i].name, p->name) == 0) {
            e->policies[i] = *p;
            return;
        }
    if (!(grown = realloc(e->policies, sizeof(*grown) * (size_t)(e->npolicies + 1)))) {
        sl_error("msg=\"out of memory: policy %s is stored but not in force until "
                 "restart\"", p->name);
        return;
    }
    e->policies = grown;
    e->policies[e->npolicies++] = *p;
    qsort(e->policies, (size_t)e->npolicies, sizeof(*e->policies), policy_cmp);
}

static int ld_policy(void *arg, const char *name, const char *spec)
{
    struct sl_engine *e = arg;
    struct sl_manifest *m = NULL;

    if (manifest_from_store("Policy", name, spec, &m) < 0)
        return 0; /* said by manifest_from_store; the others still load */
    policy_set(e, &m->u.policy);
    free(m);
    return 0;
}

static int policies_load(struct sl_engine *e, struct sl_error *err)
{
    int rc = sl_store_objs_each(e->st, "Policy", ld_policy, e);
    return rc < 0 ? sl_errorf(err, rc, "store: cannot load the policies") : 0;
}

/* The lookups of sl_admit, from the store (engine thread): one scratch
 * object each, valid until the next call. */
struct admit_scratch {
    struct sl_engine *e;
    struct sl_dataset ds;
    struct sl_scan scan;
};

static const struct sl_dataset *admit_dataset(void *arg, const char *name, const char *version)
{
    struct admit_scratch *x = arg;
    char key[160], *text;
    struct sl_manifest *m = NULL;
    int rc;

    snprintf(key, sizeof(key), "%s@%s", name, version);
    if (!(text = sl_store_obj_get(x->e->st, "Dataset", key, &rc)))
        return NULL;
    rc = manifest_from_store("Dataset", name, text, &m);
    free(text);
    if (rc < 0)
        return NULL;
    x->ds = m->u.dataset;
    free(m);
    return &x->ds;
}

static const struct sl_scan *admit_scan(void *arg, const char *digest)
{
    struct admit_scratch *x = arg;
    char *text;
    json_t *j;
    int rc;

    if (!(text = sl_store_obj_get(x->e->st, "Scan", digest, &rc)))
        return NULL;
    j = json_loads(text, 0, NULL);
    free(text);
    rc = j ? sl_scan_from_json(j, &x->scan) : -EINVAL;
    json_decref(j);
    return rc == 0 ? &x->scan : NULL;
}

/* The lineage the job records: its image (and digest), code and datasets
 * as admitted. */
static char *lineage_text(const struct sl_job_spec *s, const struct sl_verdict *v)
{
    json_t *ds = json_array(), *o;
    struct sl_image_ref ref;
    char *text;

    for (int i = 0; ds && i < v->ndatasets; i++)
        json_array_append_new(ds, json_pack("{s:s, s:s, s:s, s:s}", "name", v->datasets[i].name,
                                            "version", v->datasets[i].version, "digest",
                                            v->datasets[i].digest, "mode",
                                            v->datasets[i].rw ? "rw" : "ro"));
    o = json_pack("{s:o, s:o, s:o}", "image",
                  s->image ? json_pack("{s:s, s:s?}", "ref", s->image, "digest",
                                       sl_image_ref_parse(s->image, &ref) == 0 && ref.digest[0]
                                           ? ref.digest
                                           : NULL)
                           : json_null(),
                  "code",
                  s->code_repo ? json_pack("{s:s, s:s}", "repo", s->code_repo, "commit",
                                           s->code_commit)
                               : json_null(),
                  "datasets", ds ? ds : json_array());
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

static int do_submit(struct sl_engine *e, struct sl_op *op)
{
    struct sl_job_spec *s = op->spec;
    struct sl_sched_job_spec sj;
    struct sl_error why = {0};
    struct team *tm;
    struct queue *q;
    struct pclass *pc;
    struct job *j = NULL;
    struct sl_job_view v;
    json_t *doc = NULL;
    char *spec_json = NULL, name[SL_NAME_MAX + 1], btext[256];
    const struct budget *spent;
    struct sl_verdict *verdict = NULL;
    int rc, user;

    snprintf(op->object, sizeof(op->object), "team:%s", s->team[0] ? s->team : op->who.team);
    if (op->who.job_id || !(is_admin(&op->who) || is_role(&op->who, "team-admin") ||
                            is_role(&op->who, "member"))) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "role %s may not submit jobs",
                         op->who.job_id ? "job" : op->who.role);
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
    if (e->cfg.executor == SL_EXECUTOR_LOCAL && !op->who.unix_user[0] && !e->job_user[0]) {
        op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "spec.unixUser",
                               "user '%s' has no Unix account to run jobs as (kind: User "
                               "spec.unixUser, set by an admin), and sluiced runs no job "
                               "of an unmapped user (--job-user none)",
                               op->who.user);
    }
    pc = pclass_find(e, s->priority_class[0] ? s->priority_class : NULL);
    if (!pc) {
        op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "spec.priorityClass",
                               "priority class '%s' does not exist",
                               s->priority_class);
    }
    /* admission policy: refused here, nothing is created */
    {
        struct admit_scratch x = {.e = e};
        struct sl_admit_in in = {.spec = s, .team = tm->name, .queue = q->name,
                                 .pclass = pc->name, .dataset = admit_dataset,
                                 .scan = admit_scan, .arg = &x};
        if (!(verdict = calloc(1, sizeof(*verdict))) ||
            sl_admit(e->policies, (size_t)e->npolicies, &in, verdict) < 0) {
            op_fail(op, 503, "unavailable");
            rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
            free(verdict);
            return rc;
        }
        if (!verdict->allowed) {
            op_fail(op, 403, "policy_denied");
            rc = sl_errorf_field(&op->err, -EPERM, verdict->field, "%s", verdict->message);
            op->audit_details = json_pack("{s:s, s:s}", "policy", verdict->policy, "rule",
                                          verdict->rule);
            free(verdict);
            return rc;
        }
        if ((int)s->network != verdict->network) {
            /* a policy's default profile: the stored spec says it */
            s->network = (enum sl_network)verdict->network;
            free(op->spec_json);
            op->spec_json = NULL;
        }
    }
    if ((spent = budget_spent(e, tm->name, sl_now_ms()))) {
        struct pclass *low = demote_class(e);
        budget_text(e, spent, sl_now_ms(), btext, sizeof(btext));
        if (spent->b.action == SL_BUDGET_BLOCK || !low) {
            free(verdict);
            op_fail(op, 403, "budget_exceeded");
            return sl_errorf_field(&op->err, -EPERM, "metadata.team",
                                   "%s; new jobs are blocked", btext);
        }
        if (low != pc && low->value < pc->value)
            pc = low;
        else
            spent = NULL; /* already as low as demotion goes */
    }
    if (op->dry_run) {
        /* the verdict, and nothing kept */
        json_t *ds = json_array();
        for (int i = 0; ds && i < verdict->ndatasets; i++)
            json_array_append_new(ds, json_pack("{s:s, s:s, s:s}", "name",
                                                verdict->datasets[i].name, "version",
                                                verdict->datasets[i].version, "mode",
                                                verdict->datasets[i].rw ? "rw" : "ro"));
        op->result = json_pack("{s:b, s:s, s:s, s:s, s:s, s:o, s:s?}", "allowed", 1, "team",
                               tm->name, "queue", q->name, "priority_class", pc->name,
                               "network",
                               s->network == SL_NET_ISOLATED   ? "isolated"
                               : s->network == SL_NET_INTERNAL ? "internal"
                                                               : "egress",
                               "datasets", ds ? ds : json_array(), "demoted_to",
                               spent ? pc->name : NULL);
        free(verdict);
        op->status = 200;
        return 0;
    }
    if (!(j = calloc(1, sizeof(*j)))) {
        free(verdict);
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    j->lineage = lineage_text(s, verdict);
    free(verdict);
    if (spent) {
        char note[384];
        snprintf(note, sizeof(note), "demoted to %s: %s", pc->name, btext);
        if (!(j->demoted = strdup(note))) {
            free(j);
            op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, -ENOMEM, "out of memory");
        }
        job_msg(e, j, "%s", note);
    }
    if (s->name[0])
        sl_strlcpy(name, s->name, sizeof(name));
    else
        default_name(s, name, sizeof(name));
    j->spec = s;
    op->spec = NULL;
    if (!(j->name = strdup(name)) || !(j->team = intern(&e->strs, tm->name)) ||
        !(j->project = intern(&e->strs, s->project)) ||
        !(j->user = intern(&e->strs, op->who.user)) ||
        !(j->unix_user = intern(&e->strs, op->who.unix_user)) ||
        !(j->queue = intern(&e->strs, q->name)) ||
        !(j->pclass = intern(&e->strs, pc->name))) {
        op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    j->priority = pc->value;
    j->state = SL_JOB_PENDING;
    j->submitted_ms = sl_now_ms();
    j->limits_enforced = j->gpus_enforced = -1;

    /* The normalised spec as text: the HTTP thread's (made beside the
     * parse, off this thread), else made here. */
    spec_json = op->spec_json;
    op->spec_json = NULL;
    if (!spec_json && (!(doc = sl_job_spec_to_json(s)) ||
                       !(spec_json = json_dumps(doc, JSON_COMPACT)))) {
        op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    /* Nothing is written here: the row and the Pending event go with the
     * job's first write (job_row), at the latest just before this
     * transaction commits, and the answer waits for that commit. */
    j->id = e->next_id;
    job_view(j, &v, NULL, spec_json);
    if ((rc = vec_push((void **)&e->unstored, &e->nunstored, &e->unstored_cap,
                       sizeof(j->id), &j->id)) < 0) {
        op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
        goto out;
    }
    if ((rc = op_job_body(op, &v)) < 0) {
        e->nunstored--;
        goto out;
    }
    pthread_mutex_lock(&e->mu);
    user = sl_sched_user(e->sched, j->user);
    if (user < 0) {
        rc = user;
    } else {
        sched_spec(e, j, q, pc, user, &sj);
        rc = sl_sched_job_add(e->sched, &sj, &why);
    }
    if (rc == 0 && (rc = sl_imap_put(&e->jobs, j->id, j)) < 0)
        sl_sched_job_remove(e->sched, j->id, j->submitted_ms);
    pthread_mutex_unlock(&e->mu);
    if (rc < 0) {
        e->nunstored--;
        free(op->body);
        op->body = NULL;
        if (rc == -ENOMEM) {
            op_fail(op, 503, "unavailable");
            sl_errorf(&op->err, rc, "out of memory");
        } else {
            op_fail(op, 400, "invalid");
            sl_errorf_field(&op->err, -EINVAL, why.field, "%s", why.text);
            rc = -EINVAL;
        }
        goto out;
    }
    e->next_id++;
    snprintf(op->object, sizeof(op->object), "job:%lld", (long long)j->id);
    op->audit_details = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:i, s:i, s:i, s:s?}", "name",
                                  j->name, "team", j->team, "queue", j->queue,
                                  "priority_class", j->pclass, "image", s->image, "tasks",
                                  s->tasks, "gpus", s->gpus, "gpu_milli", s->gpu_milli,
                                  "budget", spent ? spent->b.name : NULL);
    j->fresh = true;
    j->spec_json = spec_json;
    spec_json = NULL;
    e->nfresh++;
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
        job_msg(e, j, "cancelled by %s while pending", op->who.user);
        if ((rc = job_persist(e, j, "state", "Pending", -1, sl_now_ms())) < 0) {
            j->state = SL_JOB_PENDING;
            op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, rc, "store: write failed");
        }
        job_view(j, &v, NULL, NULL);
        v.finished_ms = sl_now_ms();
        v.spec_doc = sl_job_spec_to_json(j->spec);
        rc = op_job_body(op, &v);
        json_decref(v.spec_doc);
        job_forget(e, j);
        e->sched_full = true; /* a reservation may be gone */
        if (rc < 0)
            return rc;
        op->status = 202;
        return 0;
    }
    if (!j->cancel_requested) {
        j->cancel_requested = true;
        j->intent_at_ms = sl_now_ms();
        job_msg(e, j, "cancel requested by %s: SIGTERM, then SIGKILL after %llds",
                op->who.user, (long long)(e->cfg.cancel_grace_ms / 1000));
        /* The intent is in the row, so that a daemon restarted before the
         * job ends finishes the cancel (intent_resume). */
        if ((rc = job_intent_write(e, j, "cancel")) < 0) {
            j->cancel_requested = false;
            j->intent_at_ms = 0;
            op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, rc, "store: write failed");
        }
        job_signal_all(e, j, SIGTERM);
        j->kill_at_ms = sl_mono_ms() + e->cfg.cancel_grace_ms;
        job_timer(e, j);
    }
    job_view(j, &v, j->placement, NULL);
    v.spec_doc = sl_job_spec_to_json(j->spec);
    rc = op_job_body(op, &v);
    json_decref(v.spec_doc);
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

static int manifest_forbidden(struct sl_op *op, size_t i, size_t n, const char *field,
                              const char *msg)
{
    manifest_error(op, i, n, field, msg);
    op_fail(op, 403, "forbidden");
    return -EPERM;
}

static const char *const action_names[] = {"unchanged", "created", "updated"};

/* The canonical spec text of a manifest, or NULL on -ENOMEM. */
static char *manifest_text(const struct sl_manifest *m)
{
    json_t *spec = sl_manifest_spec_json(m);
    char *text = spec ? json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS |
                                             JSON_REAL_PRECISION(15))
                      : NULL;

    json_decref(spec);
    return text;
}

/* Whether 'name' is a cohort declared in the store or earlier in this
 * apply. */
static bool cohort_known(struct sl_engine *e, const struct sl_op *op, size_t upto,
                         const char *name)
{
    if (cohort_find(e, name))
        return true;
    for (size_t k = 0; k < upto; k++)
        if (op->manifests[k].kind == SL_KIND_COHORT &&
            strcmp(op->manifests[k].name, name) == 0)
            return true;
    return false;
}


/* ---- what a team-admin may apply ---------------------------------------- */

#define RES_INF INT64_MAX

/* Amount 'k' of list 'l' (0 GPUs, 1 CPUs, 2 memory, 3 the weight, 4 + i
 * model[i] of 'models'); RES_INF when not given (not limited). */
static int64_t res_amount(const struct sl_manifest *m, bool borrow, int k, const char *model)
{
    const struct sl_res_list *l = borrow ? &m->u.queue.borrowing_limit : &m->u.queue.nominal;
    int64_t v = -1;

    if (k == 0)
        v = l->gpu_milli;
    else if (k == 1)
        v = l->cpu_milli;
    else if (k == 2)
        v = l->mem_bytes;
    else if (k == 3)
        return borrow ? 0 : m->u.queue.weight_milli;
    else
        for (int i = 0; i < l->nmodels; i++)
            if (strcasecmp(l->model[i], model) == 0)
                v = l->model_milli[i];
    return v < 0 ? RES_INF : v;
}

static int64_t res_add(int64_t a, int64_t b)
{
    return a == RES_INF || b == RES_INF || a > RES_INF - b ? RES_INF : a + b;
}

static int64_t queue_weight(const struct queue *q)
{
    struct sl_manifest *m = NULL;
    int64_t w = 1000;

    if (manifest_from_store("Queue", q->name, q->spec_json, &m) == 0)
        w = m->u.queue.weight_milli;
    free(m);
    return w;
}

/* A team-admin applies its team's users (as team-admin, member or viewer)
 * and queues; the team's total quota, borrowing limits and fair-share
 * weight may not grow past what it has: quota an admin granted moves
 * between the team's queues, and only an admin adds to it. */
static int team_admin_check(struct sl_engine *e, struct sl_op *op)
{
    const char *team = op->who.team;
    struct sl_manifest *before = NULL, *after = NULL;
    int nb = 0, na = 0, rc = 0;
    char models[2 * SL_MAX_MODELS * 8][48];
    int nmodels = 0;

    for (size_t i = 0; i < op->nmanifests; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        char msg[192];
        if (m->kind == SL_KIND_USER) {
            const struct user *u = user_find(e, m->name);
            const char *r = m->u.user.role, *field = NULL;
            if (strcmp(m->u.user.team, team) != 0) {
                snprintf(msg, sizeof(msg), "a team-admin adds users to its own team (%s) only",
                         team);
                field = "spec.team";
            } else if (u && (strcmp(u->team, team) != 0 || strcmp(u->role, "admin") == 0 ||
                             strcmp(u->role, "auditor") == 0)) {
                snprintf(msg, sizeof(msg), "user '%s' is not a member of team %s that a "
                         "team-admin may change", m->name, team);
                field = "metadata.name";
            } else if (strcmp(r, "team-admin") && strcmp(r, "member") && strcmp(r, "viewer")) {
                snprintf(msg, sizeof(msg), "a team-admin may not grant role %s: no role "
                         "grants more than it holds", r);
                field = "spec.role";
            } else if (m->u.user.unix_user[0] &&
                       strcmp(m->u.user.unix_user, u ? u->unix_user : "") != 0) {
                /* The account a user's jobs run as is a host identity:
                 * mapping one onto another team's account, or onto a
                 * privileged one, is an escalation. Left out, the mapping
                 * stays as it is (do_apply). */
                snprintf(msg, sizeof(msg), "only an admin sets or changes the Unix account "
                         "a user's jobs run as");
                field = "spec.unixUser";
            }
            if (field)
                return manifest_forbidden(op, i, op->nmanifests, field, msg);
            continue;
        }
        if (m->kind == SL_KIND_QUEUE) {
            const struct queue *q = queue_find(e, m->name);
            if (strcmp(m->u.queue.team, team) != 0 || (q && strcmp(q->team, team) != 0)) {
                snprintf(msg, sizeof(msg), "a team-admin applies the queues of its own "
                         "team (%s) only", team);
                return manifest_forbidden(op, i, op->nmanifests, "spec.team", msg);
            }
            if (m->u.queue.weight_milli != (q ? queue_weight(q) : 1000)) {
                snprintf(msg, sizeof(msg), "only an admin changes a queue's fair-share "
                         "weight");
                return manifest_forbidden(op, i, op->nmanifests, "spec.weight", msg);
            }
            if (strcmp(m->u.queue.cohort, q ? q->cohort : "") != 0) {
                snprintf(msg, sizeof(msg), "only an admin puts a queue in a cohort or takes "
                         "it out (it is '%s')", q ? q->cohort : "");
                return manifest_forbidden(op, i, op->nmanifests, "spec.cohort", msg);
            }
            continue;
        }
        snprintf(msg, sizeof(msg), "a team-admin applies User and Queue manifests of its "
                 "team only");
        return manifest_forbidden(op, i, op->nmanifests, "kind", msg);
    }
    /* the team's queues before and after */
    if (!(before = calloc((size_t)e->nqueues + 1, sizeof(*before))) ||
        !(after = calloc((size_t)e->nqueues + op->nmanifests + 1, sizeof(*after)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (int i = 0; i < e->nqueues; i++) {
        const struct queue *q = &e->queues[i];
        struct sl_manifest *m = NULL;
        bool replaced = false;
        if (strcmp(q->team, team) != 0)
            continue;
        if (!q->spec_json) {
            /* made with its team, never applied: no quota, no cohort */
            memset(&before[nb], 0, sizeof(before[nb]));
            before[nb].kind = SL_KIND_QUEUE;
            sl_strlcpy(before[nb].name, q->name, sizeof(before[nb].name));
            sl_strlcpy(before[nb].u.queue.team, q->team, sizeof(before[nb].u.queue.team));
            before[nb].u.queue.weight_milli = 1000;
            sl_res_list_init(&before[nb].u.queue.nominal);
            sl_res_list_init(&before[nb].u.queue.borrowing_limit);
            sl_res_list_init(&before[nb].u.queue.lending_limit);
            sl_res_list_init(&before[nb].u.queue.user_limit);
            nb++;
        } else if ((rc = manifest_from_store("Queue", q->name, q->spec_json, &m)) < 0) {
            goto out;
        } else {
            before[nb++] = *m;
            free(m);
        }
        for (size_t k = 0; k < op->nmanifests; k++)
            replaced |= op->manifests[k].kind == SL_KIND_QUEUE &&
                        strcmp(op->manifests[k].name, q->name) == 0;
        if (!replaced)
            after[na++] = before[nb - 1];
    }
    for (size_t k = 0; k < op->nmanifests; k++) {
        bool later = false;
        if (op->manifests[k].kind != SL_KIND_QUEUE)
            continue;
        for (size_t l = k + 1; l < op->nmanifests; l++)
            later |= op->manifests[l].kind == SL_KIND_QUEUE &&
                     strcmp(op->manifests[l].name, op->manifests[k].name) == 0;
        if (!later)
            after[na++] = op->manifests[k];
    }
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < (side ? na : nb); i++) {
            const struct sl_manifest *m = side ? &after[i] : &before[i];
            for (int b = 0; b < 2; b++) {
                const struct sl_res_list *l = b ? &m->u.queue.borrowing_limit
                                                : &m->u.queue.nominal;
                for (int x = 0; x < l->nmodels; x++) {
                    int y;
                    for (y = 0; y < nmodels && strcasecmp(models[y], l->model[x]); y++)
                        ;
                    if (y == nmodels && nmodels < (int)SL_ARRAY_LEN(models))
                        sl_strlcpy(models[nmodels++], l->model[x], 48);
                }
            }
        }
    for (int b = 0; b < 2 && rc == 0; b++)
        for (int k = 0; k < 4 + nmodels && rc == 0; k++) {
            static const char *const what[] = {"GPUs", "CPUs", "memory", "weight"};
            if (k == 3)
                continue; /* weights: checked per queue above */
            const char *model = k >= 4 ? models[k - 4] : NULL;
            int64_t sb = 0, sa = 0;
            for (int i = 0; i < nb; i++)
                sb = res_add(sb, res_amount(&before[i], b, k, model));
            for (int i = 0; i < na; i++)
                sa = res_add(sa, res_amount(&after[i], b, k, model));
            if (sa > sb) {
                op_fail(op, 403, "forbidden");
                rc = sl_errorf_field(&op->err, -EPERM,
                                     b ? "spec.borrowingLimit" : "spec.nominal",
                                     "team %s's queues would hold more %s%s%s%s than an admin "
                                     "granted it; a team-admin moves quota between its "
                                     "queues, an admin adds to it",
                                     team, b ? "borrowing of " : "", model ? model : "",
                                     model ? " GPUs" : what[k], "");
            }
        }
out:
    free(before);
    free(after);
    if (rc == -ENOMEM) {
        op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
    } else if (rc < 0 && !op->status) {
        op_fail(op, 500, "internal");
        sl_errorf(&op->err, rc, "a stored queue of team %s does not parse", team);
    }
    return rc;
}

static int do_apply(struct sl_engine *e, struct sl_op *op)
{
    json_t *applied = json_array();
    /* Work on copies so that a refused apply leaves memory as it was. */
    struct team *teams = malloc(sizeof(e->teams));
    struct queue *queues = malloc(sizeof(e->queues));
    struct cohort *cohorts = malloc(sizeof(e->cohorts));
    struct pclass *pcs = malloc(sizeof(e->pclasses));
    struct user *users = malloc(sizeof(e->users));
    char **texts = calloc(op->nmanifests ? op->nmanifests : 1, sizeof(char *));
    int nteams = e->nteams, nqueues = e->nqueues, ncohorts = e->ncohorts,
        npcs = e->npclasses, nusers = e->nusers, rc = 0;
    bool meter = false;
    char msg[160];

    if (!applied || !teams || !queues || !cohorts || !pcs || !users || !texts) {
        op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    if (is_role(&op->who, "team-admin")) {
        if ((rc = team_admin_check(e, op)) < 0)
            goto out;
    } else if (!is_admin(&op->who)) {
        op_fail(op, 403, "forbidden");
        rc = sl_errorf(&op->err, -EPERM, "only admin and team-admin may apply manifests");
        goto out;
    }
    /* The accounts named first: a lookup may be slow (NSS), and the loop
     * below holds e->mu. */
    for (size_t i = 0; i < op->nmanifests && e->cfg.executor == SL_EXECUTOR_LOCAL; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        struct sl_error why = {0};
        if (m->kind == SL_KIND_USER && m->u.user.unix_user[0] &&
            account_check(e, m->u.user.unix_user, &why) < 0) {
            char text[sizeof(why.text) + 32];
            snprintf(text, sizeof(text), "unix account %s", why.text);
            rc = manifest_error(op, i, op->nmanifests, "spec.unixUser", text);
            goto out;
        }
    }
    memcpy(teams, e->teams, sizeof(e->teams));
    memcpy(queues, e->queues, sizeof(e->queues));
    memcpy(cohorts, e->cohorts, sizeof(e->cohorts));
    memcpy(pcs, e->pclasses, sizeof(e->pclasses));
    memcpy(users, e->users, sizeof(e->users));

    /* The catalog (teams, queues, cohorts, classes, users and their
     * counts) changes under e->mu, which readers on the HTTP thread
     * (/metrics, /v1/queues) hold: they see it before or after, never an
     * array half grown. The store writes here do not sync (the syncer
     * does, later). */
    pthread_mutex_lock(&e->mu);
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
                memset(q, 0, sizeof(*q));
                sl_strlcpy(q->name, dq, sizeof(q->name));
                sl_strlcpy(q->team, m->name, sizeof(q->team));
                q->sq = -1;
                if (sl_store_queue_upsert(e->st, dq, m->name, NULL) < 0)
                    act = -EIO;
            }
            break;
        }
        case SL_KIND_COHORT: {
            struct cohort *c = cohort_find(e, m->name);
            kind = "Cohort";
            if (!c) {
                if (e->ncohorts == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many cohorts");
                    break;
                }
                c = &e->cohorts[e->ncohorts++];
                sl_strlcpy(c->name, m->name, sizeof(c->name));
            }
            sl_strlcpy(c->description, m->u.cohort.description, sizeof(c->description));
            act = sl_store_cohort_upsert(e->st, m->name, m->u.cohort.description);
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
            if (m->u.queue.cohort[0] && !cohort_known(e, op, i, m->u.queue.cohort)) {
                snprintf(msg, sizeof(msg),
                         "cohort '%s' does not exist (declare it with kind: Cohort)",
                         m->u.queue.cohort);
                rc = manifest_error(op, i, op->nmanifests, "spec.cohort", msg);
                break;
            }
            if (!(texts[i] = manifest_text(m))) {
                op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (!q) {
                if (e->nqueues == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many queues");
                    break;
                }
                q = &e->queues[e->nqueues++];
                memset(q, 0, sizeof(*q));
                sl_strlcpy(q->name, m->name, sizeof(q->name));
                q->sq = -1;
            }
            sl_strlcpy(q->team, m->u.queue.team, sizeof(q->team));
            sl_strlcpy(q->cohort, m->u.queue.cohort, sizeof(q->cohort));
            act = sl_store_queue_upsert(e->st, m->name, m->u.queue.team, texts[i]);
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
                memset(p, 0, sizeof(*p));
                sl_strlcpy(p->name, m->name, sizeof(p->name));
                p->sc = -1;
            }
            p->value = m->u.pclass.value;
            p->preemptible = m->u.pclass.preemptible;
            p->is_default = m->u.pclass.is_default;
            p->opportunistic = m->u.pclass.opportunistic;
            p->min_runtime_ms = m->u.pclass.min_runtime_ms;
            if (p->is_default)
                for (int k = 0; k < e->npclasses; k++)
                    if (&e->pclasses[k] != p)
                        e->pclasses[k].is_default = false;
            act = sl_store_pclass_upsert(e->st, m->name, p->value, p->preemptible,
                                         p->is_default, p->opportunistic,
                                         p->min_runtime_ms);
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
            /* A team-admin never changes a mapping (team_admin_check):
             * one it leaves out stays. */
            if (m->u.user.unix_user[0] || is_admin(&op->who))
                sl_strlcpy(u->unix_user, m->u.user.unix_user, sizeof(u->unix_user));
            act = sl_store_user_upsert(e->st, m->name, u->team, u->role,
                                       u->unix_user);
            break;
        }
        case SL_KIND_SCHEDULER: {
            char old[8192];
            kind = "Scheduler";
            if (!(texts[i] = manifest_text(m))) {
                op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (sl_store_meta_get(e->st, "scheduler", old, sizeof(old)) == 0)
                act = strcmp(old, texts[i]) == 0 ? 0 : 2;
            else
                act = 1;
            if (act && sl_store_meta_set(e->st, "scheduler", texts[i]) < 0)
                act = -EIO;
            break;
        }
        case SL_KIND_PRICING: {
            char *old = malloc(PRICING_TEXT_MAX);
            kind = "Pricing";
            if (!old || !(texts[i] = manifest_text(m))) {
                free(old);
                op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (strlen(texts[i]) >= PRICING_TEXT_MAX) {
                free(old);
                rc = manifest_error(op, i, op->nmanifests, "spec", "is too large");
                break;
            }
            if (sl_store_meta_get(e->st, "pricing", old, PRICING_TEXT_MAX) == 0)
                act = strcmp(old, texts[i]) == 0 ? 0 : 2;
            else
                act = 1;
            free(old);
            if (act && sl_store_meta_set(e->st, "pricing", texts[i]) < 0)
                act = -EIO;
            break;
        }
        case SL_KIND_BUDGET: {
            int known = 0, fresh = 0;
            kind = "Budget";
            if (!team_find(e, m->u.budget.team)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.budget.team);
                rc = manifest_error(op, i, op->nmanifests, "spec.team", msg);
                break;
            }
            for (int k = 0; k < e->nbudgets; k++)
                known += strcmp(e->budgets[k].b.name, m->name) == 0;
            for (size_t k = 0; k < i; k++)
                fresh += op->manifests[k].kind == SL_KIND_BUDGET; /* at most new */
            if (!known && e->nbudgets + fresh >= MAX_BUDGETS) {
                rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                    "too many budgets");
                break;
            }
            if (!(texts[i] = manifest_text(m))) {
                op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            act = sl_store_budget_upsert(e->st, m->name, m->u.budget.team, texts[i]);
            break;
        }
        case SL_KIND_POLICY:
        case SL_KIND_DATASET: {
            char key[160];
            bool policy = m->kind == SL_KIND_POLICY;
            kind = policy ? "Policy" : "Dataset";
            if (!policy && !team_find(e, m->u.dataset.owner)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.dataset.owner);
                rc = manifest_error(op, i, op->nmanifests, "spec.owner", msg);
                break;
            }
            if (policy && e->npolicies + (int)i >= MAX_NAMED) {
                rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                    "too many policies");
                break;
            }
            if (!(texts[i] = manifest_text(m))) {
                op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (policy)
                sl_strlcpy(key, m->name, sizeof(key));
            else
                snprintf(key, sizeof(key), "%s@%s", m->name, m->u.dataset.version);
            act = sl_store_obj_put(e->st, kind, key, texts[i]);
            break;
        }
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
        memcpy(e->cohorts, cohorts, sizeof(e->cohorts));
        memcpy(e->pclasses, pcs, sizeof(e->pclasses));
        memcpy(e->users, users, sizeof(e->users));
        e->nteams = nteams;
        e->nqueues = nqueues;
        e->ncohorts = ncohorts;
        e->npclasses = npcs;
        e->nusers = nusers;
        pthread_mutex_unlock(&e->mu);
        goto out;
    }
    /* All accepted and stored: now the scheduler sees the changes. */
    for (size_t i = 0; i < op->nmanifests; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        struct queue *q;
        if (m->kind == SL_KIND_QUEUE && (q = queue_find(e, m->name))) {
            q->sq = sched_queue(e, m);
            free(q->spec_json == texts[i] ? NULL : q->spec_json);
            q->spec_json = texts[i];
            texts[i] = NULL;
        } else if (m->kind == SL_KIND_PRIORITY_CLASS) {
            sched_class(e, pclass_find(e, m->name));
        } else if (m->kind == SL_KIND_SCHEDULER) {
            sched_settings(e, m);
        } else if (m->kind == SL_KIND_PRICING) {
            e->pricing = m->u.pricing;
            meter = true;
        } else if (m->kind == SL_KIND_BUDGET) {
            budget_set(e, &m->u.budget);
            meter = true;
        } else if (m->kind == SL_KIND_POLICY) {
            policy_set(e, &m->u.policy);
        }
    }
    for (int i = 0; i < e->nqueues; i++)
        if (e->queues[i].sq < 0)
            e->queues[i].sq = sched_queue_plain(e, e->queues[i].name, e->queues[i].team);
    for (int i = 0; i < e->npclasses; i++)
        e->pclasses[i].sc = sched_class(e, &e->pclasses[i]);
    pthread_mutex_unlock(&e->mu);
    if (meter)
        meter_recount(e);
    e->sched_full = true;
    op->result = json_pack("{s:O}", "applied", applied);
    op->audit_details = json_pack("{s:O}", "applied", applied);
    op->status = 200;
out:
    for (size_t i = 0; texts && i < op->nmanifests; i++)
        free(texts[i]);
    free(texts);
    json_decref(applied);
    free(teams);
    free(queues);
    free(cohorts);
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


/* May 'who' create or revoke the tokens of user 'u'? Admin: anyone; a
 * team-admin: the users of its team below admin and auditor; anyone: itself.
 * A job token: nobody. */
static bool may_manage_user(const struct sl_principal *who, const struct user *u)
{
    if (who->job_id)
        return false;
    if (is_admin(who) || strcmp(who->user, u->name) == 0)
        return true;
    return is_role(who, "team-admin") && strcmp(u->team, who->team) == 0 &&
           strcmp(u->role, "admin") != 0 && strcmp(u->role, "auditor") != 0;
}

static int do_token(struct sl_engine *e, struct sl_op *op)
{
    char token[80], when[40];
    unsigned char hash[32];
    const struct user *u = user_find(e, op->token_user);
    int64_t id = 0;
    int rc;

    snprintf(op->object, sizeof(op->object), "user:%s", op->token_user);
    if (!u && is_admin(&op->who)) {
        op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "user '%s' not found", op->token_user);
    }
    if (!u || !may_manage_user(&op->who, u)) {
        /* The same answer whether the user exists or not: no one but an
         * admin learns who the users are from it. */
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "%s %s may not create tokens for user '%s'",
                         op->who.job_id ? "job" : op->who.role, op->who.user,
                         op->token_user);
    }
    token_new(token, sizeof(token), hash);
    if ((rc = sl_store_token_insert(e->st, hash, op->token_user, op->token_expires_ms,
                                    op->token_label, 0, &id)) < 0) {
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    op->result = json_pack("{s:s, s:I, s:s, s:s, s:o}", "token", token, "id", (json_int_t)id,
                           "user", op->token_user, "label", op->token_label, "expires_at",
                           op->token_expires_ms
                               ? json_string(sl_time_rfc3339(op->token_expires_ms,
                                                             when, sizeof(when)))
                               : json_null());
    /* the record names the token, never its secret */
    op->audit_details = json_pack("{s:I, s:s, s:o}", "token_id", (json_int_t)id, "label",
                                  op->token_label, "expires_at",
                                  op->token_expires_ms
                                      ? json_string(sl_time_rfc3339(op->token_expires_ms,
                                                                    when, sizeof(when)))
                                      : json_null());
    op->status = 201;
    sodium_memzero(token, sizeof(token));
    return 0;
}

static int do_revoke(struct sl_engine *e, struct sl_op *op)
{
    char user[64], team[64];
    int64_t job_id;
    bool revoked;
    const struct user *u;
    int rc;

    snprintf(op->object, sizeof(op->object), "token:%lld", (long long)op->token_id);
    if (sl_store_token_info(e->st, op->token_id, user, team, &job_id, &revoked) < 0 ||
        !(u = user_find(e, user)) ||
        (!may_manage_user(&op->who, u) && !is_role(&op->who, "auditor"))) {
        /* a token one may not manage is one one cannot see */
        op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "token %lld not found", (long long)op->token_id);
    }
    if (is_role(&op->who, "auditor") && !may_manage_user(&op->who, u)) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "auditor may not revoke tokens");
    }
    if (revoked) {
        op_fail(op, 409, "conflict");
        return sl_errorf(&op->err, -EALREADY, "token %lld is already revoked",
                         (long long)op->token_id);
    }
    if ((rc = sl_store_token_revoke(e->st, op->token_id, sl_now_ms())) < 0) {
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    e->tokens_revoked = true;
    op->result = json_pack("{s:I, s:s, s:b}", "id", (json_int_t)op->token_id, "user", user,
                           "revoked", 1);
    op->audit_details = json_pack("{s:s}", "user", user);
    op->status = 200;
    return 0;
}

/* An image scan's summary (src/policy/policy.h, sl_scan_json), by digest. */
static int do_scan(struct sl_engine *e, struct sl_op *op)
{
    const char *digest = json_string_value(json_object_get(op->doc, "digest"));
    char *text = NULL;
    int act;

    snprintf(op->object, sizeof(op->object), "image:%s", digest ? digest : "");
    if (!is_admin(&op->who)) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "only admin may import scans");
    }
    if (!digest || !(text = json_dumps(op->doc, JSON_COMPACT | JSON_SORT_KEYS))) {
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    act = sl_store_obj_put(e->st, "Scan", digest, text);
    free(text);
    if (act < 0) {
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, act, "store: write failed");
    }
    op->audit_details = json_deep_copy(json_object_get(op->doc, "counts"));
    if (op->audit_details && !json_is_object(op->audit_details)) {
        json_decref(op->audit_details);
        op->audit_details = NULL;
    }
    op->result = json_pack("{s:O, s:s}", "scan", op->doc, "action", action_names[act]);
    op->status = act == 1 ? 201 : 200;
    return 0;
}

/* Register a model version: by a user of its team, or by a job with its
 * own token (the model is then tied to that job). Versions are immutable. */
static int do_model(struct sl_engine *e, struct sl_op *op)
{
    json_t *d = op->doc, *m = NULL;
    const char *name = json_string_value(json_object_get(d, "name"));
    const char *version = json_string_value(json_object_get(d, "version"));
    const char *team = json_string_value(json_object_get(d, "team"));
    json_int_t job = json_integer_value(json_object_get(d, "job"));
    char key[160], when[40], *text = NULL, *old;
    int rc;

    snprintf(key, sizeof(key), "%s@%s", name ? name : "", version ? version : "");
    snprintf(op->object, sizeof(op->object), "model:%s", key);
    if (strcmp(op->who.role, "viewer") == 0 || strcmp(op->who.role, "auditor") == 0) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "role %s may not register models", op->who.role);
    }
    if (op->who.job_id) {
        if (job && job != op->who.job_id) {
            op_fail(op, 403, "forbidden");
            return sl_errorf_field(&op->err, -EPERM, "job",
                                   "a job token registers models of its own job (%lld) only",
                                   (long long)op->who.job_id);
        }
        job = op->who.job_id;
    }
    if (!team)
        team = op->who.team;
    if (!is_admin(&op->who) && strcmp(team, op->who.team) != 0) {
        op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "team", "user '%s' may not register "
                               "models for team '%s'", op->who.user, team);
    }
    if (!team_find(e, team)) {
        op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "team", "team '%s' does not exist", team);
    }
    if (job) {
        /* the job must exist and belong to the model's team */
        json_t *jd = sl_store_job_get(e->st, job, &rc);
        const char *jt = json_string_value(json_object_get(jd, "team"));
        bool same = jt && strcmp(jt, team) == 0;
        json_decref(jd);
        if (!jd || !same) {
            op_fail(op, 400, "invalid");
            return sl_errorf_field(&op->err, -EINVAL, "job", "job %lld %s", (long long)job,
                                   jd ? "belongs to another team" : "does not exist");
        }
    }
    if ((old = sl_store_obj_get(e->st, "Model", key, &rc))) {
        free(old);
        op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EALREADY, "version",
                               "model %s is already registered; versions are immutable", key);
    }
    m = json_pack("{s:s, s:s, s:s, s:O, s:O, s:o, s:o, s:s, s:s, s:s, s:[]}", "name", name,
                  "version", version, "team", team, "digest", json_object_get(d, "digest"),
                  "uri", json_object_get(d, "uri"), "metrics",
                  json_object_get(d, "metrics") ? json_incref(json_object_get(d, "metrics"))
                                                : json_object(),
                  "job", job ? json_integer(job) : json_null(), "registered_by",
                  op->who.user, "registered_at",
                  sl_time_rfc3339(sl_now_ms(), when, sizeof(when)), "stage", "none",
                  "history");
    if (!m || !(text = json_dumps(m, JSON_COMPACT))) {
        json_decref(m);
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    rc = sl_store_obj_put(e->st, "Model", key, text);
    free(text);
    if (rc < 0) {
        json_decref(m);
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    op->audit_details = json_pack("{s:s, s:O, s:O, s:o}", "team", team, "digest",
                                  json_object_get(d, "digest"), "uri",
                                  json_object_get(d, "uri"), "job",
                                  job ? json_integer(job) : json_null());
    op->result = m;
    op->status = 201;
    return 0;
}

static int do_stage(struct sl_engine *e, struct sl_op *op)
{
    const char *stage = json_string_value(json_object_get(op->doc, "stage"));
    const char *comment = json_string_value(json_object_get(op->doc, "comment"));
    json_t *m = NULL, *hist;
    const char *team, *from;
    char *text, when[40], from_buf[32];
    int rc;

    snprintf(op->object, sizeof(op->object), "model:%s", op->model);
    if (!(text = sl_store_obj_get(e->st, "Model", op->model, &rc)) ||
        !(m = json_loads(text, 0, NULL))) {
        free(text);
        op_fail(op, rc == -ENOENT ? 404 : 503, rc == -ENOENT ? "not_found" : "unavailable");
        return sl_errorf(&op->err, rc == -ENOENT ? -ENOENT : -EIO, "model %s not found",
                         op->model);
    }
    free(text);
    team = json_string_value(json_object_get(m, "team"));
    sl_strlcpy(from_buf, json_string_value(json_object_get(m, "stage"))
                             ? json_string_value(json_object_get(m, "stage"))
                             : "",
               sizeof(from_buf));
    from = from_buf; /* the member is replaced below */
    if (!is_admin(&op->who) && (!team || strcmp(team, op->who.team) != 0)) {
        json_decref(m);
        op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "model %s not found", op->model);
    }
    if (op->who.job_id || !sl_policy_may_approve(e->policies, (size_t)e->npolicies,
                                                 op->who.role)) {
        json_decref(m);
        op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "stage",
                               "role %s may not move models between stages (models.approvers)",
                               op->who.job_id ? "job" : op->who.role);
    }
    if (from && strcmp(from, stage) == 0) {
        json_decref(m);
        op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EALREADY, "stage", "model %s is already in %s",
                               op->model, stage);
    }
    if (from && strcmp(from, "archived") == 0) {
        json_decref(m);
        op_fail(op, 409, "conflict");
        return sl_errorf_field(&op->err, -EALREADY, "stage",
                               "model %s is archived; register a new version", op->model);
    }
    hist = json_object_get(m, "history");
    json_array_append_new(hist, json_pack("{s:s, s:s, s:s, s:s, s:s}", "from", from ? from : "",
                                          "to", stage, "by", op->who.user, "at",
                                          sl_time_rfc3339(sl_now_ms(), when, sizeof(when)),
                                          "comment", comment ? comment : ""));
    json_object_set_new(m, "stage", json_string(stage));
    if (!(text = json_dumps(m, JSON_COMPACT)) ||
        (rc = sl_store_obj_put(e->st, "Model", op->model, text)) < 0) {
        free(text);
        json_decref(m);
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -EIO, "store: write failed");
    }
    free(text);
    op->audit_details = json_pack("{s:s, s:s, s:s}", "from", from ? from : "", "to", stage,
                                  "comment", comment ? comment : "");
    op->result = m;
    op->status = 200;
    return 0;
}

/* Hourly carbon intensity of a site (admin): every hour or none. */
static int do_carbon(struct sl_engine *e, struct sl_op *op)
{
    int rc = 0;

    if (!is_admin(&op->who)) {
        op_fail(op, 403, "forbidden");
        return sl_errorf(&op->err, -EPERM, "only admin may set carbon intensity");
    }
    for (size_t i = 0; i < op->ncarbon && rc == 0; i++)
        rc = sl_store_carbon_put(e->st, op->carbon_site, op->carbon_hour_ms[i],
                                 op->carbon_g[i]);
    if (rc < 0) {
        op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "store: write failed");
    }
    op->result = json_pack("{s:s, s:I}", "site", op->carbon_site, "hours",
                           (json_int_t)op->ncarbon);
    op->status = 200;
    return 0;
}

/* ---- the audit log ------------------------------------------------------ */

#define AUDIT_CHECKPOINT_MS 60000 /* a signed checkpoint this often, when the
                                     log grew */

/* Append one record to the audit log in the open transaction, stealing
 * 'details' (NULL = {}). A record that cannot be written fails the whole
 * transaction: no change without its record. */
static void audit_add(struct sl_engine *e, const char *actor, const char *action,
                      const char *object, bool ok, json_t *details)
{
    struct sl_audit_head h = e->audit_head;
    struct sl_audit_entry en = {
        .at_ms = sl_now_ms(), .actor = actor && *actor ? actor : "system",
        .action = action, .object = object ? object : "",
        .outcome = ok ? "ok" : "refused", .details = details,
    };
    int rc;

    e->audit_line.len = 0;
    rc = sl_audit_line(&h, &en, &e->audit_line);
    if (rc == 0 && e->audit_line.failed)
        rc = -ENOMEM;
    if (rc == 0)
        rc = sl_store_audit_add(e->st, h.size, en.at_ms, en.actor, action, en.object,
                                en.outcome, e->audit_line.data, e->audit_line.len, h.hash);
    json_decref(details);
    if (rc < 0) {
        sl_error("msg=\"cannot append to the audit log; the group fails\" action=%s "
                 "rc=%d", action, rc);
        e->write_failed = true;
        return;
    }
    e->audit_head = h;
}

/* The record of operation 'op', after its savepoint was released (ok) or
 * rolled back (refused). */
static void audit_op(struct sl_engine *e, struct sl_op *op, int rc)
{
    static const char *const actions[] = {
        [SL_OP_SUBMIT] = "job.submit", [SL_OP_CANCEL] = "job.cancel",
        [SL_OP_APPLY] = "apply", [SL_OP_TOKEN] = "token.create",
        [SL_OP_CARBON] = "carbon.put", [SL_OP_REVOKE] = "token.revoke",
        [SL_OP_SCAN] = "scan.import", [SL_OP_MODEL] = "model.register",
        [SL_OP_STAGE] = "model.stage", [SL_OP_AUDIT] = "request",
    };
    const char *action = op->action ? op->action : actions[op->kind];
    const char *actor = op->who.user;
    char who[96];
    json_t *d;

    if (op->kind == SL_OP_SUBMIT && op->dry_run)
        return; /* a dry run changes nothing: nothing to record (its details
                   are freed with the op) */
    d = op->audit_details ? op->audit_details : json_object();
    op->audit_details = NULL;
    if (op->who.job_id) {
        snprintf(who, sizeof(who), "%s/job:%lld", op->who.user, (long long)op->who.job_id);
        actor = who;
    }
    if (d && op->who.role[0])
        json_object_set_new(d, "role", json_string(op->who.role));
    if (d && rc < 0) {
        json_object_set_new(d, "status", json_integer(op->status));
        json_object_set_new(d, "code", json_string(op->code ? op->code : "error"));
        json_object_set_new(d, "message", json_string(op->err.text));
        if (op->err.field[0])
            json_object_set_new(d, "field", json_string(op->err.field));
    }
    audit_add(e, actor, action, op->object, rc >= 0, d);
}

/* At most every AUDIT_CHECKPOINT_MS (or with 'now'), when the log grew:
 * sign its head into a checkpoint, stored in the open transaction and
 * written to DATA/audit/checkpoint once it commits. */
static void audit_checkpoint(struct sl_engine *e, bool now)
{
    struct sl_buf b;

    if (e->audit_head.size == e->audit_ckpt_size ||
        (!now && sl_mono_ms() < e->next_ckpt_ms))
        return;
    sl_buf_init(&b);
    if (sl_audit_checkpoint_sign(&e->audit_key, e->audit_origin, &e->audit_head,
                                 sl_now_ms(), &b) < 0 || b.failed ||
        sl_store_audit_checkpoint_put(e->st, e->audit_head.size, sl_now_ms(), b.data) < 0) {
        sl_warn("msg=\"cannot write an audit checkpoint\" size=%lld",
                (long long)e->audit_head.size);
        sl_buf_fini(&b);
        return; /* tried again at the next interval */
    }
    free(e->audit_ckpt_text);
    e->audit_ckpt_text = b.data;
    e->audit_ckpt_size = e->audit_head.size;
    e->next_ckpt_ms = sl_mono_ms() + AUDIT_CHECKPOINT_MS;
}

/* After a commit: the head readers may sign, and the checkpoint file. */
static void audit_committed(struct sl_engine *e)
{
    char path[1200], tmp[1210];
    int fd;

    pthread_mutex_lock(&e->mu);
    e->audit_committed = e->audit_head;
    pthread_mutex_unlock(&e->mu);
    if (!e->audit_ckpt_text)
        return;
    snprintf(path, sizeof(path), "%s/audit.checkpoint", e->data_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) >= 0) {
        size_t n = strlen(e->audit_ckpt_text);
        bool good = write(fd, e->audit_ckpt_text, n) == (ssize_t)n && fsync(fd) == 0;
        close(fd);
        if (!good || rename(tmp, path) < 0)
            sl_warn("msg=\"cannot write %s\"", path);
    }
    free(e->audit_ckpt_text);
    e->audit_ckpt_text = NULL;
}

static void audit_rollback(struct sl_engine *e)
{
    e->audit_head = e->audit_committed;
    free(e->audit_ckpt_text);
    e->audit_ckpt_text = NULL;
}

static int audit_open(struct sl_engine *e, struct sl_error *err)
{
    char path[1200];
    int rc;

    snprintf(path, sizeof(path), "%s/audit.key", e->data_dir);
    if ((rc = sl_audit_key_load_or_create(path, "sluice-audit", &e->audit_key, err)) < 0)
        return rc;
    if (sl_audit_vkey(&e->audit_key, e->audit_vkey, sizeof(e->audit_vkey)) < 0)
        return sl_errorf(err, -EINVAL, "%s: cannot make its verifier key", path);
    snprintf(e->audit_origin, sizeof(e->audit_origin), "sluice.audit/%s", e->host.hostname);
    if ((rc = sl_store_audit_head(e->st, &e->audit_head.size, e->audit_head.hash)) < 0)
        return sl_errorf(err, rc, "store: cannot read the audit log's head");
    e->audit_committed = e->audit_head;
    e->audit_ckpt_size = -1; /* a first checkpoint at the first interval */
    e->next_ckpt_ms = 0;
    sl_buf_init(&e->audit_line);
    return 0;
}

int sl_engine_audit_checkpoint(struct sl_engine *e, struct sl_buf *out, int64_t *size)
{
    struct sl_audit_head h;

    pthread_mutex_lock(&e->mu);
    h = e->audit_committed;
    pthread_mutex_unlock(&e->mu);
    if (size)
        *size = h.size;
    return sl_audit_checkpoint_sign(&e->audit_key, e->audit_origin, &h, sl_now_ms(), out);
}

const char *sl_engine_audit_vkey(struct sl_engine *e) { return e->audit_vkey; }

uint64_t sl_engine_token_epoch(struct sl_engine *e)
{
    return atomic_load_explicit(&e->token_epoch, memory_order_acquire);
}

static void apply_op(struct sl_engine *e, struct sl_op *op)
{
    int rc;

    /* A cancel of a job submitted in this very group (its id guessed, as
     * it is not answered yet) must not hold the job's only insert in a
     * savepoint that a refusal would undo. */
    if (op->kind == SL_OP_CANCEL)
        job_store_fresh(e, op->job_id);
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
    case SL_OP_CARBON:
        rc = do_carbon(e, op);
        break;
    case SL_OP_REVOKE:
        rc = do_revoke(e, op);
        break;
    case SL_OP_SCAN:
        rc = do_scan(e, op);
        break;
    case SL_OP_MODEL:
        rc = do_model(e, op);
        break;
    case SL_OP_STAGE:
        rc = do_stage(e, op);
        break;
    case SL_OP_AUDIT:
        rc = -EPERM; /* refused before it came here: only the record */
        break;
    default:
        rc = -EINVAL;
        op_fail(op, 500, "internal");
        break;
    }
    if (rc < 0) {
        if (!op->status) {
            /* every refusal names its status; one that did not is a bug,
             * never a status 0 on the wire */
            op_fail(op, 500, "internal");
            if (!op->err.text[0])
                sl_errorf(&op->err, rc, "%s", strerror(-rc));
        }
        json_decref(op->result);
        op->result = NULL;
        free(op->body);
        op->body = NULL;
        sl_store_rollback_to(e->st);
    } else {
        sl_store_release(e->st);
    }
    audit_op(e, op, rc);
}

/* ---- running tasks ---------------------------------------------------- */

/* The simulated executor's run time of a job: its label sim-duration. */
static int64_t sim_duration_ms(const struct job *j)
{
    const char *v = json_string_value(json_object_get(j->spec->labels, SIM_DURATION_LABEL));
    int64_t ms = 0;

    if (v && sl_parse_duration_ms(v, &ms) < 0)
        ms = 0;
    return ms;
}

/* What a job's tasks get beyond their spec: the job token and the API's
 * address, and the datasets as the store has them now. */
struct job_env {
    char **v;                     /* the spec's env + ours, NULL-terminated */
    char *token_kv, *server_kv;
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
        job_msg(e, j, "dataset %s is no longer declared; not given to the job", key);
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

    memset(x, 0, sizeof(*x));
    if (!(x->v = calloc((size_t)j->spec->envc + 3, sizeof(char *))))
        return -ENOMEM;
    for (int i = 0; i < j->spec->envc; i++)
        x->v[n++] = j->spec->env[i];
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
    }
    for (int i = 0; i < j->spec->n_datasets && x->nds < SL_EXEC_MAX_DATASETS; i++)
        job_dataset(e, j, j->spec->datasets[i], x);
    return 0;
}

static int job_start_tasks(struct sl_engine *e, struct job *j)
{
    struct sl_error err = {0};
    bool enforced = true, has_gpus = false, gpus_ok = true;
    const char *note = NULL, *gpus_note = NULL;
    struct job_env env;

    if (e->cfg.executor == SL_EXECUTOR_SIMULATED) {
        int64_t end = j->started_ms + sim_duration_ms(j);
        for (int t = 0; t < j->spec->tasks; t++) {
            j->tasks[t].started = true;
            j->tasks[t].sim_end_ms = end;
        }
        job_msg(e, j, "simulated executor: the command is not run");
        return 0;
    }
    if (job_env(e, j, &env) < 0) {
        job_msg(e, j, "cannot start: out of memory");
        for (int t = 0; t < j->spec->tasks; t++) {
            j->tasks[t].done = true;
            j->tasks[t].exit_code = 127;
        }
        j->gang_failed = true;
        return 0;
    }
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
        xt.env = env.v;
        xt.network = j->spec->network;
        xt.datasets = env.ds;
        xt.ndatasets = env.nds;
        xt.gpus = tk->gpus;
        xt.ngpus = tk->ngpus;
        /* Placed on this host: its GPU indices are this host's devices. */
        if (e->host_is_node && tk->node == 0) {
            xt.host_gpus = e->host.gpus;
            xt.nhost_gpus = e->host.ngpus;
        }
        has_gpus |= tk->ngpus > 0;
        xt.cpu_milli = j->spec->cpu_milli;
        xt.mem_bytes = j->spec->mem_bytes;
        xt.pids_max = 4096;
        xt.unix_user = j->unix_user[0] ? j->unix_user : e->job_user;
        xt.allow_daemon_user = e->allow_daemon_user;
        xt.log_path = log_path;
        xt.log_cap_bytes = e->cfg.log_cap_bytes;
        rc = sl_exec_start(e->exec, &xt, &tk->h, &err);
        if (rc < 0) {
            job_msg(e, j, "task %d failed to start: %s", t, err.text);
            tk->done = true;
            tk->exit_code = 127;
            j->gang_failed = true;
            continue;
        }
        tk->started = true;
        if (tk->h.shim_pid > 0 &&
            sl_imap_put(&e->shims, tk->h.shim_pid, (void *)(intptr_t)j->id) < 0)
            j->adopted = true; /* no map entry: poll it on the timer */
        if (!tk->h.limits_enforced) {
            enforced = false;
            note = tk->h.limits_note;
        }
        if (tk->ngpus > 0 && !tk->h.gpus_enforced) {
            gpus_ok = false;
            gpus_note = tk->h.gpus_note;
        }
    }
    job_env_fini(&env);
    job_token_drop(j);
    if (j->gang_failed)
        job_signal_all(e, j, SIGKILL); /* a gang runs whole or not at all */
    j->limits_enforced = enforced;
    j->gpus_enforced = has_gpus ? gpus_ok : -1;
    if (!enforced && note && !j->message)
        job_msg(e, j, "limits not enforced: %s", note);
    if (!gpus_ok && gpus_note && !j->message)
        job_msg(e, j, "%s", gpus_note); /* "GPU isolation not enforced: ..." */
    /* A profile the executor could not put in force is said, never
     * pretended (its note names why). */
    if (!j->message && j->spec->tasks > 0 && j->tasks[0].started &&
        j->tasks[0].h.network_note[0])
        job_msg(e, j, "%s", j->tasks[0].h.network_note);
    return 0;
}

/* The writes of a placement, in a savepoint of their own so that a failed
 * one leaves the row as it was: the row Running with its placement and the
 * event Pending -> Running; with the simulated executor, which has nothing
 * to wait for, also the "launched" event (the row then carries its note). */
static int job_place_write(struct sl_engine *e, struct job *j)
{
    bool simulated = e->cfg.executor == SL_EXECUTOR_SIMULATED, fresh = j->fresh;
    int64_t now = sl_now_ms();
    int rc;

    if ((rc = sl_store_savepoint(e->st)) < 0)
        return rc;
    if ((rc = job_row(e, j, -1, 0)) == 0 && (rc = ledger_open(e, j)) == 0)
        rc = sl_store_event_add(e->st, j->id, now, "state", "Pending", "Running",
                                simulated ? NULL : j->message);
    if (rc == 0 && simulated)
        rc = sl_store_event_add(e->st, j->id, now, "launched", "Running", "Running",
                                j->message);
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

/* Mark a placed job Running: with the local executor before its processes
 * start (they start once this has committed), with the simulated one
 * started at once. On failure the job is Pending again, in the scheduler
 * too. */
/* A token of the job's own for this attempt, given to its tasks (the
 * local executor) to register models and read what their team may: the
 * job's user's team, role "job". Revoked when the attempt ends. */
static void job_token(struct sl_engine *e, struct job *j)
{
    char token[80], label[64];
    unsigned char hash[32];

    if (e->cfg.executor != SL_EXECUTOR_LOCAL || !e->api_url[0] || j->token)
        return;
    token_new(token, sizeof(token), hash);
    snprintf(label, sizeof(label), "job %lld attempt %d", (long long)j->id, j->attempt);
    if (sl_store_token_insert(e->st, hash, j->user, 0, label, j->id, NULL) == 0)
        j->token = strdup(token);
    else
        sl_warn("msg=\"cannot make a job token; the job runs without one\" job=%lld",
                (long long)j->id);
    sodium_memzero(token, sizeof(token));
}


static int job_place(struct sl_engine *e, struct job *j, const struct sl_sched_start *d)
{
    struct task *tasks = calloc((size_t)j->spec->tasks, sizeof(*tasks));
    int rc;

    if (!tasks) {
        job_requeue_sched(e, j, 0);
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
    j->started_ms = sl_now_ms();
    j->not_before_ms = 0;
    job_msg(e, j, NULL);
    rc = (j->placement = placement_text(e, j)) ? 0 : -ENOMEM;
    if (rc == 0) {
        pthread_mutex_lock(&e->mu);
        rc = run_add(e, j);
        pthread_mutex_unlock(&e->mu);
    }
    if (rc == 0) {
        if (e->cfg.executor == SL_EXECUTOR_SIMULATED)
            job_start_tasks(e, j);
        if ((rc = job_place_write(e, j)) < 0) {
            pthread_mutex_lock(&e->mu);
            run_del(e, j);
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
        job_msg(e, j, NULL);
        job_requeue_sched(e, j, 0);
        return rc;
    }
    if (j->spec->max_runtime_ms)
        j->ckpt_at_ms = sl_mono_ms() + j->spec->max_runtime_ms;
    job_timer(e, j);
    ledger_running(e, j);
    atomic_fetch_add_explicit(&e->counters.placements, 1, memory_order_relaxed);
    job_token(e, j);
    {
        char obj[32];
        json_t *pl = json_loads(j->placement, 0, NULL);
        snprintf(obj, sizeof(obj), "job:%lld", (long long)j->id);
        audit_add(e, "scheduler", "job.place", obj, true,
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
    j->intent_at_ms = sl_now_ms();
    atomic_fetch_add_explicit(&e->counters.preemptions, 1, memory_order_relaxed);
    job_msg(e, j, "preempted for job %lld (%s): %s, SIGKILL in %llds",
            (long long)for_id, whys[why], sl_signal_name(j->spec->ckpt_signal),
            (long long)(j->spec->ckpt_grace_ms / 1000));
    if (job_intent_write(e, j, "preempt") < 0) {
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
        audit_add(e, "scheduler", why == SL_PREEMPT_RECLAIM ? "job.reclaim" : "job.preempt",
                  obj, true,
                  json_pack("{s:I, s:s, s:s, s:s, s:I}", "for_job", (json_int_t)for_id,
                            "why", kinds[why], "team", j->team, "queue", j->queue,
                            "grace_ms", (json_int_t)j->spec->ckpt_grace_ms));
    }
    job_signal_all(e, j, j->spec->ckpt_signal);
    j->kill_at_ms = sl_mono_ms() + j->spec->ckpt_grace_ms;
    job_timer(e, j);
    sl_info("msg=\"preempting\" job=%lld for=%lld why=%d", (long long)j->id,
            (long long)for_id, (int)why);
}

static void schedule(struct sl_engine *e, struct job ***started, size_t *nstarted)
{
    struct sl_sched_result res;
    int64_t now = sl_now_ms();
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
        if (e->cfg.executor == SL_EXECUTOR_LOCAL)
            (*started)[(*nstarted)++] = j; /* launched after the commit */
    }
    for (int i = 0; i < res.npreempts; i++) {
        struct job *j = sl_imap_get(&e->jobs, res.preempts[i].job_id);
        if (j)
            job_preempt(e, j, res.preempts[i].for_job, res.preempts[i].why);
    }
    sl_sched_result_fini(&res);
}

/* Poll one job's tasks; finish it when all have ended, else put it at
 * its next timer. */
static void poll_job(struct sl_engine *e, struct job *j)
{
    bool all_done = true, lost = j->lost;
    int64_t wall = e->cfg.executor == SL_EXECUTOR_SIMULATED ? sl_now_ms() : 0;

    for (int t = 0; t < j->spec->tasks; t++) {
        struct task *tk = &j->tasks[t];
        int code = 0, rc;
        if (tk->done || !tk->started)
            continue;
        if (e->cfg.executor == SL_EXECUTOR_SIMULATED) {
            if (tk->sim_end_ms > wall) {
                all_done = false;
                continue;
            }
            rc = 1;
            code = tk->exit_code;
        } else {
            rc = sl_exec_poll(e->exec, &tk->h, &code);
        }
        if (rc == 0) {
            all_done = false;
            continue;
        }
        tk->done = true;
        tk->exit_code = rc == 1 ? code : 255;
        if (rc < 0)
            lost = true;
        if (tk->exit_code != 0 && !j->gang_failed && !j->cancel_requested &&
            !j->timed_out && !j->preempting) {
            /* One task of a gang failed: stop the others. */
            j->gang_failed = true;
            job_signal_all(e, j, j->spec->ckpt_signal);
            j->kill_at_ms = sl_mono_ms() + j->spec->ckpt_grace_ms;
        }
    }
    if (all_done)
        job_finish(e, j, lost);
    else
        job_timer(e, j);
}

/* Poll the tasks whose shim exited and, once a second, the re-adopted
 * ones (their shims are not our children); finish jobs whose tasks have
 * all ended. The simulated executor's task ends are timers (run_due). */
static void poll_tasks(struct sl_engine *e)
{
    const pid_t *exited = NULL;
    size_t n = e->exec ? sl_exec_reap(e->exec, &exited) : 0;
    int64_t mono = sl_mono_ms();

    for (size_t i = 0; i < n; i++) {
        int64_t id = (int64_t)(intptr_t)sl_imap_get(&e->shims, exited[i]);
        struct job *j = id ? sl_imap_get(&e->jobs, id) : NULL;
        if (j && j->state == SL_JOB_RUNNING && j->tasks)
            poll_job(e, j);
    }
    if (e->cfg.executor == SL_EXECUTOR_LOCAL && mono >= e->next_poll_ms) {
        /* A copy: finishing a job removes it from e->run. */
        size_t nj = 0;
        struct job **run = e->nrun ? malloc(e->nrun * sizeof(*run)) : NULL;
        if (e->nrun && !run)
            return;
        for (size_t i = 0; i < e->nrun; i++)
            if (e->run[i]->adopted)
                run[nj++] = e->run[i];
        for (size_t i = 0; i < nj; i++)
            poll_job(e, run[i]);
        free(run);
        e->next_poll_ms = mono + ADOPTED_POLL_MS;
    }
}

/* Fire one job's maxRuntime and grace timers that are due at 'now' (mono). */
static void fire_timers(struct sl_engine *e, struct job *j, int64_t now)
{
    if (j->ckpt_at_ms && now >= j->ckpt_at_ms && !j->timed_out &&
        !j->cancel_requested && !j->preempting) {
        j->timed_out = true;
        j->intent_at_ms = sl_now_ms();
        job_msg(e, j, "maxRuntime reached: sent %s, SIGKILL in %llds",
                sl_signal_name(j->spec->ckpt_signal),
                (long long)(j->spec->ckpt_grace_ms / 1000));
        if (job_intent_write(e, j, "timeout") < 0) {
            sl_error("msg=\"cannot record a timeout; the group fails\" job=%lld",
                     (long long)j->id);
            e->write_failed = true;
        }
        job_signal_all(e, j, j->spec->ckpt_signal);
        j->kill_at_ms = now + j->spec->ckpt_grace_ms;
    }
    if (j->kill_at_ms && now >= j->kill_at_ms) {
        job_signal_all(e, j, SIGKILL);
        j->kill_at_ms = 0;
    }
}

/* Everything due by now, and only that: the jobs at the top of the timer
 * heap. Each firing moves its job on (a timer fired is cleared or made
 * later, a simulated task due ends), so the loop ends. */
static void run_due(struct sl_engine *e)
{
    int64_t now = sl_mono_ms();
    struct sl_heap_item *it;

    while ((it = sl_heap_top(&e->timers)) && it->key <= now) {
        struct job *j = SL_CONTAINER_OF(it, struct job, due);
        fire_timers(e, j, now);
        if (e->cfg.executor == SL_EXECUTOR_SIMULATED)
            poll_job(e, j); /* may finish j: not touched after */
        else
            job_timer(e, j);
    }
}

/* How long the loop may sleep (ms): until the next timer or the
 * scheduler's wake-up, at most a second; 0 when one is due. */
static int64_t next_wait_ms(struct sl_engine *e)
{
    int64_t next = 1000, wall = sl_now_ms();
    const struct sl_heap_item *it = sl_heap_top(&e->timers);

    if (e->sched_wake_ms && e->sched_wake_ms - wall < next)
        next = e->sched_wake_ms - wall;
    if (it && it->key - sl_mono_ms() < next)
        next = it->key - sl_mono_ms();
    return next < 0 ? 0 : next;
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
        bool stopping, committed = true, failures = false;
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
        run_due(e);
        if (sl_mono_ms() >= e->next_meter_ms) {
            meter_tick(e);
            e->next_meter_ms = sl_mono_ms() + METER_TICK_MS;
        }
        if (!stopping && (e->nfresh || e->sched_full ||
                          (e->sched_wake_ms && sl_now_ms() >= e->sched_wake_ms))) {
            int64_t pass_start_ns = sl_mono_ns();
            schedule(e, &started, &nstarted);
            sl_engine_count_pass(e, sl_mono_ns() - pass_start_ns);
        }
        /* The jobs of this group that nothing has written yet. */
        for (size_t i = 0; i < e->nunstored; i++)
            job_store_fresh(e, e->unstored[i]);
        e->nunstored = 0;
        audit_checkpoint(e, stopping);
        if (e->write_failed || sl_store_commit(e->st) < 0) {
            /* Memory now holds changes the store does not: stop changing
             * anything and have sluiced shut down; the next start loads
             * the last committed state. Nothing of this group was
             * acknowledged. */
            sl_error("msg=\"store %s failed; refusing changes and shutting down\"",
                     e->write_failed ? "write" : "commit");
            sl_store_rollback(e->st);
            audit_rollback(e);
            e->tokens_revoked = false;
            committed = false;
            e->broken = true;
            kill(getpid(), SIGTERM);
        }
        if (committed) {
            audit_committed(e);
            if (e->tokens_revoked)
                atomic_fetch_add_explicit(&e->token_epoch, 1, memory_order_release);
            e->tokens_revoked = false;
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
            for (size_t i = 0; i < nstarted; i++) {
                job_start_tasks(e, started[i]);
                job_timer(e, started[i]);
                failures |= started[i]->gang_failed;
            }
            if (sl_store_begin(e->st) == 0) {
                for (size_t i = 0; i < nstarted; i++)
                    job_persist(e, started[i], "launched", "Running", -1, 0);
                sl_store_commit(e->st);
            }
        }
        free(started);
        wait_ms = next_wait_ms(e);
        if (failures || e->sched_full || e->nfresh)
            wait_ms = 0;
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

static int ld_cohort(void *arg, const char *name, const char *description)
{
    struct sl_engine *e = arg;
    if (e->ncohorts == MAX_NAMED)
        return -ENOSPC;
    sl_strlcpy(e->cohorts[e->ncohorts].name, name, 64);
    sl_strlcpy(e->cohorts[e->ncohorts++].description, description ? description : "",
               sizeof(e->cohorts[0].description));
    return 0;
}

static int ld_queue(void *arg, const char *name, const char *team, const char *spec_json)
{
    struct sl_engine *e = arg;
    struct queue *q;
    struct sl_manifest *m = NULL;

    if (e->nqueues == MAX_NAMED)
        return -ENOSPC;
    q = &e->queues[e->nqueues++];
    memset(q, 0, sizeof(*q));
    sl_strlcpy(q->name, name, sizeof(q->name));
    sl_strlcpy(q->team, team, sizeof(q->team));
    q->sq = -1;
    if (spec_json && strcmp(spec_json, "{}") != 0 &&
        manifest_from_store("Queue", name, spec_json, &m) == 0) {
        sl_strlcpy(q->cohort, m->u.queue.cohort, sizeof(q->cohort));
        q->sq = sched_queue(e, m);
        q->spec_json = strdup(spec_json);
        free(m);
    }
    if (q->sq < 0)
        q->sq = sched_queue_plain(e, name, team);
    return q->sq < 0 ? q->sq : 0;
}

static int ld_pclass(void *arg, const char *name, int value, bool preemptible,
                     bool is_default, bool opportunistic, int64_t min_runtime_ms)
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
    p->opportunistic = opportunistic;
    p->min_runtime_ms = min_runtime_ms;
    return sched_class(e, p) < 0 ? -ENOSPC : 0;
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

static int node_by_name(struct sl_engine *e, const char *name)
{
    struct sl_sched_node_view v;

    for (int i = 0; i < sl_sched_node_count(e->sched); i++)
        if (sl_sched_node_view(e->sched, i, &v) == 0 && strcmp(v.name, name) == 0)
            return i;
    return -1;
}

/* Rebuild a Running job's tasks from its stored placement and re-adopt its
 * processes. Returns 0, -ENOMEM, or -EINVAL when the placement no longer
 * fits the cluster (then the job is Lost). */
static int readopt(struct sl_engine *e, struct job *j, const char *placement,
                   struct sl_sched_task_place *pl)
{
    json_t *arr = placement ? json_loads(placement, 0, NULL) : NULL;
    size_t i;
    json_t *p;
    bool lost = false, all_done = true;

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
        int code = 0, rc;
        if (tk->node < 0)
            return -EINVAL;
        pl[t].node = tk->node;
        pl[t].ngpus = tk->ngpus;
        pl[t].gpu_milli = tk->gpu_milli;
        memcpy(pl[t].gpus, tk->gpus, sizeof(int) * (size_t)tk->ngpus);
        if (e->cfg.executor == SL_EXECUTOR_SIMULATED) {
            tk->started = true;
            tk->sim_end_ms = 0; /* its run ended with the daemon */
            all_done = false;
            continue;
        }
        rc = sl_exec_adopt(e->exec, j->id, t, j->attempt, &tk->h, &code);
        if (rc == 0) {
            tk->started = true;
            all_done = false;
            /* What holds now, not what held at the start. */
            if (tk->ngpus > 0 && !tk->h.gpus_enforced && j->gpus_enforced == 1) {
                j->gpus_enforced = 0;
                job_msg(e, j, "%s", tk->h.gpus_note);
            }
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
    if (!(j->placement = placement_text(e, j)))
        return -ENOMEM;
    j->adopted = true;
    if (j->spec->max_runtime_ms)
        j->ckpt_at_ms = sl_mono_ms() + j->spec->max_runtime_ms -
                        (sl_now_ms() - j->started_ms);
    j->lost = lost;
    if (lost && !all_done) {
        /* Part of the gang is gone: the job cannot go on. */
        job_signal_all(e, j, SIGKILL);
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
        j->intent_at_ms = sl_now_ms();
    }
    left = j->intent_at_ms + grace - sl_now_ms();
    if (left < 0)
        left = 0;
    job_signal_all(e, j, sig);
    j->kill_at_ms = sl_mono_ms() + left;
    sl_info("msg=\"re-adopted job was told to stop: signalled again\" job=%lld intent=\"%s\" "
            "signal=%s kill_in_ms=%lld",
            (long long)j->id, what, sl_signal_name(sig), (long long)left);
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
    q = queue_find(e, v->queue);
    pc = pclass_find(e, v->priority_class);
    if (!q || !pc) {
        sl_error("msg=\"stored job names an unknown queue or class\" job=%lld",
                 (long long)v->id);
        job_free(j);
        return 0;
    }
    j->id = v->id;
    u = user_find(e, v->user);
    if (!(j->name = strdup(v->name)) || !(j->team = intern(&e->strs, v->team)) ||
        !(j->project = intern(&e->strs, v->project)) ||
        !(j->user = intern(&e->strs, v->user)) ||
        !(j->unix_user = intern(&e->strs, u ? u->unix_user : "")) ||
        !(j->queue = intern(&e->strs, v->queue)) ||
        !(j->pclass = intern(&e->strs, v->priority_class))) {
        job_free(j);
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
    if (v->state == SL_JOB_RUNNING && v->intent && *v->intent) {
        /* Told to stop before the restart: finished below (intent_resume). */
        j->cancel_requested = strcmp(v->intent, "cancel") == 0;
        j->preempting = strcmp(v->intent, "preempt") == 0;
        j->timed_out = strcmp(v->intent, "timeout") == 0;
        j->preempted_for = j->preempting ? v->intent_for : 0;
        j->intent_at_ms = v->intent_at_ms;
    }
    j->message = v->message && *v->message ? strdup(v->message) : NULL;
    if ((user = sl_sched_user(e->sched, j->user)) < 0) {
        job_free(j);
        return user;
    }
    sched_spec(e, j, q, pc, user, &sj);
    if (j->state == SL_JOB_RUNNING) {
        if (!(pl = calloc((size_t)j->spec->tasks, sizeof(*pl)))) {
            job_free(j);
            return -ENOMEM;
        }
        rc = readopt(e, j, v->placement_json, pl);
        if (rc == 0)
            rc = sl_sched_job_add_running(e->sched, &sj, pl, j->started_ms, &err);
        if (rc == -EINVAL) {
            /* The cluster changed under it (a node gone, GPUs fewer): it
             * cannot be accounted for; it is lost and the next pass retries
             * it per policy. */
            sl_error("msg=\"running job's placement no longer fits the cluster\" "
                     "job=%lld err=\"%s\"", (long long)j->id, err.text);
            job_signal_all(e, j, SIGKILL);
            free(j->tasks);
            j->tasks = NULL;
            free(j->placement);
            j->placement = NULL;
            j->state = SL_JOB_PENDING;
            j->started_ms = 0;
            /* A preemption or timeout ends with this attempt; an
             * acknowledged cancel still holds (load_cancels). */
            j->preempting = j->timed_out = false;
            j->preempted_for = 0;
            sched_spec(e, j, q, pc, user, &sj);
            rc = sl_sched_job_add(e->sched, &sj, &err);
        }
        free(pl);
        if (rc < 0) {
            job_free(j);
            return rc;
        }
        if (j->state == SL_JOB_RUNNING && (rc = run_add(e, j)) < 0) {
            sl_sched_job_remove(e->sched, j->id, sl_now_ms());
            job_free(j);
            return rc;
        }
        for (int t = 0; j->tasks && t < j->spec->tasks; t++)
            if (j->tasks[t].h.shim_pid > 0)
                sl_imap_put(&e->shims, j->tasks[t].h.shim_pid, (void *)(intptr_t)j->id);
    } else if ((rc = sl_sched_job_add(e->sched, &sj, &err)) < 0) {
        job_free(j);
        return rc;
    }
    if ((rc = sl_imap_put(&e->jobs, j->id, j)) < 0) {
        sl_sched_job_remove(e->sched, j->id, sl_now_ms());
        if (j->state == SL_JOB_RUNNING)
            run_del(e, j);
        job_free(j);
        return rc;
    }
    if (j->state == SL_JOB_RUNNING) {
        intent_resume(e, j);
        job_timer(e, j);
    }
    return 0;
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
            rc = vec_push((void **)&found, &n, &cap, sizeof(j), &j);
    }
    if (rc == 0 && n > 0 && (rc = sl_store_begin(e->st)) == 0) {
        for (size_t i = 0; i < n && rc == 0; i++) {
            found[i]->state = SL_JOB_CANCELLED;
            job_msg(e, found[i], "cancelled: its tasks were gone when sluiced restarted");
            rc = job_persist(e, found[i], "state", "Running", -1, sl_now_ms());
        }
        if (rc == 0)
            rc = sl_store_commit(e->st);
        else
            sl_store_rollback(e->st);
        for (size_t i = 0; i < n; i++) {
            if (rc == 0)
                job_forget(e, found[i]);
            else
                found[i]->state = SL_JOB_PENDING;
        }
    }
    free(found);
    return rc;
}

static int ld_budget(void *arg, const char *name, const char *spec_json)
{
    struct sl_engine *e = arg;
    struct sl_manifest *m = NULL;

    if (manifest_from_store("Budget", name, spec_json, &m) == 0) {
        budget_set(e, &m->u.budget);
        free(m);
    }
    return 0;
}

struct orphans {
    struct sl_engine *e;
    struct sl_usage_row *rows;    /* strings not kept: only ids are used */
    size_t n, cap;
};

static int ld_orphan(void *arg, const struct sl_usage_row *r)
{
    struct orphans *o = arg;
    const struct job *j = sl_imap_get(&o->e->jobs, r->job_id);
    struct sl_usage_row c;

    if (j && j->state == SL_JOB_RUNNING && j->attempt == r->attempt)
        return 0;
    memset(&c, 0, sizeof(c));
    c.job_id = r->job_id;
    c.attempt = r->attempt;
    c.task = r->task;
    c.start_ms = r->start_ms;
    return vec_push((void **)&o->rows, &o->n, &o->cap, sizeof(c), &c);
}
/* The Pricing, the budgets and their counts; intervals left open by jobs
 * that no longer run are closed. After the jobs are loaded. */
static int meter_load(struct sl_engine *e)
{
    char *text = malloc(PRICING_TEXT_MAX);
    int rc;

    if (!text)
        return -ENOMEM;
    if (sl_store_meta_get(e->st, "pricing", text, PRICING_TEXT_MAX) == 0) {
        struct sl_manifest *m = NULL;
        if (manifest_from_store("Pricing", "default", text, &m) == 0) {
            e->pricing = m->u.pricing;
            free(m);
        }
    }
    free(text);
    if ((rc = sl_store_budgets_load(e->st, ld_budget, e)) < 0)
        return rc;
    if ((rc = sl_store_begin(e->st)) < 0)
        return rc;
    {
        /* Open intervals whose job does not run: it ended while sluiced
         * was down, or could not be re-adopted. They are counted up to now,
         * as the resources were held as far as anyone could tell. */
        struct orphans o = {e, NULL, 0, 0};
        int64_t now = sl_now_ms();
        rc = sl_store_usage_scan(e->st, INT64_MAX - 1, INT64_MAX, NULL, 0, ld_orphan, &o);
        for (size_t i = 0; rc == 0 && i < o.n; i++) {
            o.rows[i].end_ms = now > o.rows[i].start_ms ? now : o.rows[i].start_ms;
            sl_warn("msg=\"closed the usage interval of a job that no longer runs\" "
                    "job=%lld attempt=%d task=%d", (long long)o.rows[i].job_id,
                    o.rows[i].attempt, o.rows[i].task);
            rc = sl_store_usage_close(e->st, &o.rows[i]);
        }
        free(o.rows);
    }
    if (rc < 0) {
        sl_store_rollback(e->st);
        return rc;
    }
    if ((rc = sl_store_commit(e->st)) < 0)
        return rc;
    meter_recount(e);
    return 0;
}

/* Whether Unix account 'name' may run jobs here: it exists and has
 * neither the daemon's uid nor uid 0, unless it is the one account
 * --allow-daemon-user names; a daemon that is not root runs jobs as
 * itself only. Returns 0, or -EINVAL / -EPERM with 'err' saying why (its
 * text starts with the account's name in quotes). */
static int account_check(const struct sl_engine *e, const char *name, struct sl_error *err)
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
    if (e->job_user[0] && account_check(e, e->job_user, &why) < 0)
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
    token_new(token, sizeof(token), hash);
    if (rc >= 0)
        rc = sl_store_token_insert(e->st, hash, "admin", 0, "bootstrap", 0, NULL);
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

/* The cluster: this host, or the nodes of --fake-nodes. */
static int add_nodes(struct sl_engine *e, struct sl_error *err)
{
    int rc;

    if (!e->cfg.fake_nodes) {
        struct sl_sched_node_spec n = {0};
        n.name = e->host.hostname;
        n.cpu_milli = e->host.cpu_milli;
        n.mem_bytes = e->host.mem_bytes;
        n.ngpus = e->host.ngpus;
        for (int g = 0; g < n.ngpus; g++)
            n.gpu_model[g] = e->host.gpus[g].model;
        if ((rc = sl_sched_node_add(e->sched, &n)) < 0)
            return sl_errorf(err, rc, "scheduler: cannot add this host: %s", strerror(-rc));
        e->host_is_node = true;
        return 0;
    }
    {
        struct sl_trace_node *tn = NULL;
        size_t nn = 0;
        if ((rc = sl_trace_load_nodes(e->cfg.fake_nodes, &tn, &nn, err)) < 0)
            return sl_errorf(err, rc, "--fake-nodes: %s", err->text);
        for (size_t i = 0; i < nn && rc >= 0; i++) {
            struct sl_sched_node_spec n = {0};
            n.name = tn[i].name;
            n.domain = tn[i].domain;
            n.cpu_milli = tn[i].cpu_milli;
            n.mem_bytes = tn[i].mem_bytes;
            n.ngpus = tn[i].ngpus;
            for (int g = 0; g < n.ngpus; g++)
                n.gpu_model[g] = tn[i].model;
            if ((rc = sl_sched_node_add(e->sched, &n)) < 0)
                sl_errorf(err, rc, "--fake-nodes: node %s: %s", tn[i].name,
                          rc == -ENOSPC ? "more than 32 GPU models" : strerror(-rc));
        }
        free(tn);
        return rc < 0 ? rc : 0;
    }
}

struct sl_engine *sl_engine_create(const struct sl_engine_config *cfg,
                                   char **admin_token, struct sl_error *err)
{
    struct sl_engine *e = calloc(1, sizeof(*e));
    struct sl_store_loader ld;
    struct sl_sched_config scfg;
    struct sigaction sa;
    char stored[8192];
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
    sl_imap_init(&e->shims);
    sl_heap_init(&e->timers);
    e->cfg = *cfg;
    sl_strlcpy(e->api_url, cfg->api_url ? cfg->api_url : "", sizeof(e->api_url));
    sl_strlcpy(e->job_user, cfg->job_user ? cfg->job_user : "", sizeof(e->job_user));
    sl_strlcpy(e->allow_daemon_user, cfg->allow_daemon_user ? cfg->allow_daemon_user : "",
               sizeof(e->allow_daemon_user));
    e->cfg.job_user = e->job_user;
    e->cfg.allow_daemon_user = e->allow_daemon_user;
    sl_strlcpy(e->data_dir, cfg->data_dir, sizeof(e->data_dir));
    e->cfg.data_dir = e->data_dir;
    if (cfg->fake_nodes) {
        sl_strlcpy(e->fake_nodes, cfg->fake_nodes, sizeof(e->fake_nodes));
        e->cfg.fake_nodes = e->fake_nodes;
    }
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
        (rc = sl_mkdir_p(e->log_dir, 0700)) < 0 ||
        (rc = sl_mkdir_p(e->run_dir, 0700)) < 0) {
        sl_errorf(err, rc, "--data-dir %s: %s", e->data_dir, strerror(-rc));
        goto fail;
    }
    if (cfg->executor == SL_EXECUTOR_LOCAL && identity_setup(e, err) < 0)
        goto fail;
    if ((rc = sl_host_discover(cfg->fake_gpus, &e->host, err)) < 0)
        goto fail;
    sl_sched_config_init(&scfg);
    if (!(e->sched = sl_sched_create(&scfg))) {
        sl_errorf(err, -ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = add_nodes(e, err)) < 0)
        goto fail;
    if (e->host_is_node && cfg->executor == SL_EXECUTOR_LOCAL) {
        /* What can be measured here: NVML for GPUs it discovered, RAPL for
         * the CPU packages; the meter estimates the rest. */
        struct sl_nvml *nv = strcmp(e->host.gpu_source, "nvml") == 0 ? sl_nvml_open() : NULL;
        struct sl_rapl *rp = sl_rapl_open(NULL);
        sl_info("msg=\"energy\" gpus=%s cpus=%s", nv ? "nvml" : "estimated",
                rp ? "rapl" : "estimated");
        if (nv || rp)
            e->mon = sl_gpumon_start(nv, rp, GPUMON_PERIOD_MS);
    }
    /* Commits do not fsync; with sync_full the syncer fdatasyncs the WAL
     * before answering, overlapping the flush with the next group. */
    if (!(e->st = sl_store_open(e->store_path, true, false, err)))
        goto fail;
    {
        /* The WAL checkpoint (page copies and two fsyncs every ~4 MiB of
         * WAL) on a thread of its own rather than inside our commits. */
        struct sl_error cerr = {0};
        if (sl_store_checkpointer_start(e->st, CHECKPOINT_PAGES, &cerr) < 0)
            sl_warn("msg=\"checkpoints stay on the engine thread\" err=\"%s\"", cerr.text);
    }
    if (cfg->executor == SL_EXECUTOR_LOCAL && !(e->exec = sl_exec_create(e->run_dir))) {
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
    if (sl_store_meta_get(e->st, "scheduler", stored, sizeof(stored)) == 0) {
        struct sl_manifest *m = NULL;
        if (manifest_from_store("Scheduler", "default", stored, &m) == 0) {
            sched_settings(e, m);
            free(m);
        }
    }
    sl_pricing_init(&e->pricing);
    if (sl_store_meta_get(e->st, "meter_since", stored, sizeof(stored)) < 0 ||
        sl_parse_int64(stored, 0, INT64_MAX, &e->meter_since) < 0) {
        e->meter_since = sl_now_ms();
        snprintf(stored, sizeof(stored), "%lld", (long long)e->meter_since);
        if (sl_store_meta_set(e->st, "meter_since", stored) < 0) {
            sl_errorf(err, -EIO, "store: cannot write");
            goto fail;
        }
    }
    ld = (struct sl_store_loader){.arg = e, .team = ld_team, .cohort = ld_cohort,
                                  .queue = ld_queue, .pclass = ld_pclass,
                                  .user = ld_user, .job = ld_job};
    if ((rc = sl_store_load(e->st, &ld)) < 0 ||
        (rc = sl_store_job_max_id(e->st, &e->next_id)) < 0) {
        sl_errorf(err, rc, "store: cannot load state: %s", strerror(-rc));
        goto fail;
    }
    e->next_id++; /* ids as SQLite would give them: the largest + 1 */
    if ((rc = load_cancels(e)) < 0) {
        sl_errorf(err, rc, "store: cannot finish cancelled jobs: %s", strerror(-rc));
        goto fail;
    }
    for (size_t i = 0; i < e->nrun; i++)
        if (e->run[i]->preempting)
            /* every job is loaded: its preemptor waits for it again */
            sl_sched_job_terminating(e->sched, e->run[i]->id, e->run[i]->preempted_for);
    if ((rc = meter_load(e)) < 0) {
        sl_errorf(err, rc, "store: cannot load the meter's state: %s", strerror(-rc));
        goto fail;
    }
    if ((rc = audit_open(e, err)) < 0 || (rc = policies_load(e, err)) < 0)
        goto fail;
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
    sl_info("msg=\"engine ready\" host=%s nodes=%d cpus_milli=%lld mem_bytes=%lld "
            "gpus=%d gpu_source=%s executor=%s limits=%s placement=%s",
            e->host.hostname, sl_sched_node_count(e->sched),
            (long long)e->host.cpu_milli, (long long)e->host.mem_bytes, e->host.ngpus,
            e->host.gpu_source,
            cfg->executor == SL_EXECUTOR_SIMULATED ? "simulated" : "local",
            e->exec && sl_exec_limits_available(e->exec, NULL) ? "cgroup" : "none",
            sl_placement_name(sl_sched_get_config(e->sched)->placement));
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
    sl_imap_fini(&e->shims);
    for (int i = 0; i < e->nqueues; i++)
        free(e->queues[i].spec_json);
    free(e->run);
    free(e->unstored);
    sl_heap_fini(&e->timers);
    free(e->gone);
    if (g_wake_fd == e->wake_fd)
        g_wake_fd = -1;
    if (e->wake_fd >= 0)
        close(e->wake_fd);
    sl_gpumon_stop(e->mon);
    sl_exec_destroy(e->exec);
    sl_store_close(e->st);
    sl_sched_destroy(e->sched);
    strtab_fini(&e->strs);
    sl_buf_fini(&e->audit_line);
    free(e->audit_ckpt_text);
    sl_audit_key_fini(&e->audit_key);
    free(e->policies);
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

/* ---- readers (HTTP thread) -------------------------------------------- */


/* What is known of this host's GPU 'g' beyond the scheduler's view: its
 * UUID and the monitor's last sample. */
static void node_gpu_measured(struct sl_engine *e, int g, json_t *o)
{
    struct sl_gpu_sample smp;

    if (e->host.gpus[g].uuid[0])
        json_object_set_new(o, "uuid", json_string(e->host.gpus[g].uuid));
    if (!e->mon || !sl_gpumon_last(e->mon, e->host.gpus[g].index, &smp))
        return;
    if (smp.has_util)
        json_object_set_new(o, "utilisation", json_real(smp.util));
    if (smp.has_mem)
        json_object_set_new(o, "mem_used_bytes", json_integer(smp.mem_used_bytes));
    if (smp.has_power)
        json_object_set_new(o, "power_w", json_real(smp.power_w));
    if (smp.has_temp)
        json_object_set_new(o, "temperature_c", json_real(smp.temp_c));
}

json_t *sl_engine_nodes_json(struct sl_engine *e)
{
    json_t *nodes = json_array();

    pthread_mutex_lock(&e->mu);
    for (int n = 0; n < sl_sched_node_count(e->sched); n++) {
        struct sl_sched_node_view v;
        json_t *gpus = json_array(), *node;
        int64_t cpu_alloc, mem_alloc;
        bool host = e->host_is_node && n == 0;

        sl_sched_node_view(e->sched, n, &v);
        for (int g = 0; g < v.ngpus; g++) {
            json_t *jobs = json_array();
            for (size_t i = 0; i < e->nrun; i++) {
                struct job *j = e->run[i];
                bool on = false;
                for (int t = 0; j->tasks && t < j->spec->tasks && !on; t++)
                    for (int k = 0; k < j->tasks[t].ngpus; k++)
                        on |= j->tasks[t].node == n && j->tasks[t].gpus[k] == g;
                if (on)
                    json_array_append_new(jobs, json_integer(j->id));
            }
            json_t *o = json_pack("{s:i, s:s, s:I, s:i, s:o}", "index", g, "model",
                                  sl_sched_model_name(e->sched, v.gpu_model[g]), "mem_bytes",
                                  (json_int_t)(host ? e->host.gpus[g].mem_bytes : 0),
                                  "milli_allocated", 1000 - v.gpu_free_milli[g], "jobs",
                                  jobs);
            if (o && host && g < e->host.ngpus)
                node_gpu_measured(e, g, o);
            json_array_append_new(gpus, o);
        }
        cpu_alloc = v.cpu_total - v.cpu_free;
        mem_alloc = v.mem_total - v.mem_free;
        node = json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:s, s:o}", "name", v.name,
                         "domain", v.domain, "schedulable", v.schedulable, "cpu_milli",
                         (json_int_t)v.cpu_total, "cpu_milli_allocated",
                         (json_int_t)cpu_alloc, "mem_bytes", (json_int_t)v.mem_total,
                         "mem_bytes_allocated", (json_int_t)mem_alloc, "gpu_source",
                         host ? e->host.gpu_source : "fake", "gpus", gpus);
        json_array_append_new(nodes, node);
    }
    pthread_mutex_unlock(&e->mu);
    return json_pack("{s:o}", "nodes", nodes);
}

/* A resource vector as the API's resource object: gpus and cpus as numbers
 * of units, memory in bytes, gpusByModel per model; unset entries left out
 * (all of them, with 'all', shown as 0). */
static json_t *res_json(struct sl_sched *s, const struct sl_sched_res *r, bool all)
{
    json_t *o = json_object(), *by = json_object();

    if (!o || !by) {
        json_decref(o);
        json_decref(by);
        return NULL;
    }
    if (all || r->v[SL_DIM_GPU] >= 0)
        json_object_set_new(o, "gpus", json_real((double)(r->v[SL_DIM_GPU] > 0
                                                              ? r->v[SL_DIM_GPU]
                                                              : 0) / 1000));
    if (all || r->v[SL_DIM_CPU] >= 0)
        json_object_set_new(o, "cpus", json_real((double)(r->v[SL_DIM_CPU] > 0
                                                              ? r->v[SL_DIM_CPU]
                                                              : 0) / 1000));
    if (all || r->v[SL_DIM_MEM] >= 0)
        json_object_set_new(o, "memory",
                            json_integer(r->v[SL_DIM_MEM] > 0 ? r->v[SL_DIM_MEM] : 0));
    for (int m = 0; m < sl_sched_model_count(s); m++) {
        int64_t v = r->v[SL_DIM_MODEL0 + m];
        if (v > 0 || (!all && v >= 0))
            json_object_set_new(by, sl_sched_model_name(s, m), json_real((double)v / 1000));
    }
    if (json_object_size(by))
        json_object_set_new(o, "gpusByModel", by);
    else
        json_decref(by);
    return o;
}

json_t *sl_engine_queues_json(struct sl_engine *e)
{
    json_t *arr = json_array();
    int64_t now = sl_now_ms();

    if (!arr)
        return NULL;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->nqueues; i++) {
        struct sl_sched_queue_stats st;
        if (sl_sched_queue_stats(e->sched, e->queues[i].sq, now, &st) < 0)
            continue;
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:i, s:f}",
                           "name", e->queues[i].name, "team", e->queues[i].team,
                           "cohort", e->queues[i].cohort[0] ? json_string(e->queues[i].cohort)
                                                             : json_null(),
                           "nominal", res_json(e->sched, &st.nominal, false), "used",
                           res_json(e->sched, &st.used, true), "borrowed",
                           res_json(e->sched, &st.borrowed, true), "lent",
                           res_json(e->sched, &st.lent, true), "opportunistic",
                           res_json(e->sched, &st.opportunistic, true), "pending",
                           st.pending, "running", st.running, "share", st.share));
    }
    pthread_mutex_unlock(&e->mu);
    return arr;
}

int sl_engine_reason(struct sl_engine *e, int64_t id, char *buf, size_t size)
{
    int rc;

    pthread_mutex_lock(&e->mu);
    rc = sl_sched_reason(e->sched, id, sl_now_ms(), buf, size);
    pthread_mutex_unlock(&e->mu);
    if (rc == 0 && !buf[0])
        rc = -ENOENT;
    return rc;
}

int sl_engine_explain(struct sl_engine *e, int64_t id, struct sl_buf *b)
{
    int rc;

    pthread_mutex_lock(&e->mu);
    rc = sl_sched_explain(e->sched, id, sl_now_ms(), b);
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

/* ---- the meter's readers ---------------------------------------------- */

void sl_engine_pricing(struct sl_engine *e, struct sl_pricing *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->pricing;
    pthread_mutex_unlock(&e->mu);
}

int sl_engine_gpus_each(struct sl_engine *e,
                        int (*fn)(void *arg, const char *node, const char *model,
                                  int index),
                        void *arg)
{
    int rc = 0;

    pthread_mutex_lock(&e->mu);
    for (int i = 0; rc == 0 && i < sl_sched_node_count(e->sched); i++) {
        struct sl_sched_node_view nv;
        if (sl_sched_node_view(e->sched, i, &nv) < 0)
            continue;
        for (int g = 0; rc == 0 && g < nv.ngpus; g++)
            rc = fn(arg, nv.name, sl_sched_model_name(e->sched, nv.gpu_model[g]), g);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int64_t sl_engine_meter_since(struct sl_engine *e) { return e->meter_since; }

json_t *sl_engine_budgets_json(struct sl_engine *e, const char *team)
{
    json_t *arr = json_array();
    int64_t now = sl_now_ms();

    if (!arr)
        return NULL;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->nbudgets; i++) {
        const struct budget *b = &e->budgets[i];
        char from[40], until[40];
        double used = b->period_start == sl_period_start(b->b.period, now)
                          ? budget_used(b, now)
                          : 0;
        int64_t ps = sl_period_start(b->b.period, now);
        if (team && strcmp(team, b->b.team) != 0)
            continue;
        sl_time_rfc3339(ps, from, sizeof(from));
        sl_time_rfc3339(sl_period_next(b->b.period, ps), until, sizeof(until));
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:s, s:s, s:s, s:b}", "name",
                           b->b.name, "team", b->b.team, "period",
                           sl_budget_period_name(b->b.period), "unit",
                           sl_budget_unit_name(b->b.unit), "limit", b->b.limit, "used",
                           used, "percent", used / b->b.limit * 100, "action",
                           sl_budget_action_name(b->b.action), "period_start", from,
                           "period_end", until, "exceeded", used >= b->b.limit));
    }
    pthread_mutex_unlock(&e->mu);
    return arr;
}

/* ---- metrics ---------------------------------------------------------- */

const double sl_engine_pass_bounds_s[SL_ENGINE_PASS_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,  0.5,    1,     2.5,  5,     10,
};

void sl_engine_count_pass(struct sl_engine *e, int64_t ns)
{
    int b = SL_ENGINE_PASS_BUCKETS;

    if (ns < 0)
        ns = 0;
    for (int i = 0; i < SL_ENGINE_PASS_BUCKETS; i++)
        if ((double)ns <= sl_engine_pass_bounds_s[i] * 1e9) {
            b = i;
            break;
        }
    atomic_fetch_add_explicit(&e->counters.pass[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->counters.pass_ns, (uint64_t)ns, memory_order_relaxed);
}

void sl_engine_count_finished(struct sl_engine *e, enum sl_job_state s)
{
    if ((int)s >= 0 && s < SL_JOB_NSTATES && sl_job_state_final(s))
        atomic_fetch_add_explicit(&e->counters.finished[s], 1, memory_order_relaxed);
}

void sl_engine_metrics_fini(struct sl_engine_metrics *m)
{
    if (!m)
        return;
    free(m->nodes);
    free(m->gpus);
    free(m->queues);
    free(m->teams);
    free(m->budgets);
    memset(m, 0, sizeof(*m));
}

/* Under e->mu: the nodes and their GPUs. */
static int metrics_nodes(struct sl_engine *e, struct sl_engine_metrics *m)
{
    int nnodes = sl_sched_node_count(e->sched), ngpus = 0;
    struct sl_sched_node_view v;

    for (int n = 0; n < nnodes; n++) {
        sl_sched_node_view(e->sched, n, &v);
        ngpus += v.ngpus;
    }
    m->nodes = calloc(nnodes > 0 ? (size_t)nnodes : 1, sizeof(*m->nodes));
    m->gpus = calloc(ngpus > 0 ? (size_t)ngpus : 1, sizeof(*m->gpus));
    if (!m->nodes || !m->gpus)
        return -ENOMEM;
    for (int n = 0; n < nnodes; n++) {
        struct sl_metrics_node *mn = &m->nodes[n];
        bool host = e->host_is_node && n == 0;

        sl_sched_node_view(e->sched, n, &v);
        sl_strlcpy(mn->name, v.name, sizeof(mn->name));
        if (v.ngpus > 0)
            sl_strlcpy(mn->model, sl_sched_model_name(e->sched, v.gpu_model[0]),
                       sizeof(mn->model));
        mn->schedulable = v.schedulable;
        mn->ngpus = v.ngpus;
        mn->cpu_milli = v.cpu_total;
        mn->cpu_milli_allocated = v.cpu_total - v.cpu_free;
        mn->mem_bytes = v.mem_total;
        mn->mem_bytes_allocated = v.mem_total - v.mem_free;
        for (int g = 0; g < v.ngpus && m->ngpus < ngpus; g++) {
            struct sl_metrics_gpu *mg = &m->gpus[m->ngpus++];
            mg->node = n;
            mg->index = g;
            sl_strlcpy(mg->model, sl_sched_model_name(e->sched, v.gpu_model[g]),
                       sizeof(mg->model));
            if (host && g < e->host.ngpus) {
                sl_strlcpy(mg->uuid, e->host.gpus[g].uuid, sizeof(mg->uuid));
                mg->mem_bytes = e->host.gpus[g].mem_bytes;
            }
            mg->milli_allocated = 1000 - v.gpu_free_milli[g];
            mn->gpu_milli_allocated += mg->milli_allocated;
            if (host && g < e->host.ngpus && e->mon)
                sl_gpumon_last(e->mon, e->host.gpus[g].index, &mg->sample);
        }
        m->nnodes++;
    }
    return 0;
}

/* Under e->mu: the queues' GPU figures. */
static int metrics_queues(struct sl_engine *e, struct sl_engine_metrics *m, int64_t now)
{
    m->queues = calloc(e->nqueues > 0 ? (size_t)e->nqueues : 1, sizeof(*m->queues));
    if (!m->queues)
        return -ENOMEM;
    for (int i = 0; i < e->nqueues; i++) {
        struct sl_sched_queue_stats st;
        struct sl_metrics_queue *q = &m->queues[m->nqueues];
        if (sl_sched_queue_stats(e->sched, e->queues[i].sq, now, &st) < 0)
            continue;
        sl_strlcpy(q->name, e->queues[i].name, sizeof(q->name));
        sl_strlcpy(q->team, e->queues[i].team, sizeof(q->team));
        sl_strlcpy(q->cohort, e->queues[i].cohort, sizeof(q->cohort));
        q->nominal_gpu_milli = st.nominal.v[SL_DIM_GPU] >= 0 ? st.nominal.v[SL_DIM_GPU] : -1;
        q->used_gpu_milli = st.used.v[SL_DIM_GPU] > 0 ? st.used.v[SL_DIM_GPU] : 0;
        q->borrowed_gpu_milli = st.borrowed.v[SL_DIM_GPU] > 0 ? st.borrowed.v[SL_DIM_GPU] : 0;
        q->lent_gpu_milli = st.lent.v[SL_DIM_GPU] > 0 ? st.lent.v[SL_DIM_GPU] : 0;
        q->pending = st.pending;
        q->running = st.running;
        m->nqueues++;
    }
    return 0;
}

/* Under e->mu: each team's use since start (closed + running up to now)
 * and each budget's use this period. */
static int metrics_meter(struct sl_engine *e, struct sl_engine_metrics *m, int64_t now)
{
    m->teams = calloc(e->nteams > 0 ? (size_t)e->nteams : 1, sizeof(*m->teams));
    m->budgets = calloc(e->nbudgets > 0 ? (size_t)e->nbudgets : 1, sizeof(*m->budgets));
    if (!m->teams || !m->budgets)
        return -ENOMEM;
    for (int i = 0; i < e->nteams; i++) {
        struct sl_metrics_team *t = &m->teams[i];
        sl_strlcpy(t->name, e->teams[i].name, sizeof(t->name));
        t->gpu_seconds = e->team_use[i].gpu_hours * 3600;
        t->cu = e->team_use[i].cu;
        t->cost = e->team_use[i].cost;
        t->energy_j = e->team_use[i].kwh * 3.6e6;
    }
    m->nteams = e->nteams;
    for (size_t r = 0; r < e->nrun; r++) {
        const struct job *j = e->run[r];
        struct team *tm = team_find(e, j->team);
        double ms = now > j->started_ms ? (double)(now - j->started_ms) : 0;
        struct sl_metrics_team *t;
        if (!tm)
            continue;
        t = &m->teams[tm - e->teams];
        t->gpu_seconds += j->rate[SL_BUDGET_GPU_HOURS] * ms * 3600;
        t->cu += j->rate[SL_BUDGET_CU] * ms;
        t->cost += j->rate[SL_BUDGET_COST] * ms;
        t->energy_j += j->rate_kwh * ms * 3.6e6;
    }
    for (int i = 0; i < e->nbudgets; i++) {
        const struct budget *b = &e->budgets[i];
        struct sl_metrics_budget *o = &m->budgets[i];
        sl_strlcpy(o->name, b->b.name, sizeof(o->name));
        sl_strlcpy(o->team, b->b.team, sizeof(o->team));
        o->unit = sl_budget_unit_name(b->b.unit);
        o->limit = b->b.limit;
        o->used = b->period_start == sl_period_start(b->b.period, now) ? budget_used(b, now)
                                                                       : 0;
    }
    m->nbudgets = e->nbudgets;
    sl_strlcpy(m->currency, e->pricing.currency, sizeof(m->currency));
    return 0;
}

int sl_engine_metrics(struct sl_engine *e, struct sl_engine_metrics *m)
{
    int64_t now = sl_now_ms();
    int rc;

    memset(m, 0, sizeof(*m));
    pthread_mutex_lock(&e->mu);
    rc = metrics_nodes(e, m);
    if (rc == 0)
        rc = metrics_queues(e, m, now);
    if (rc == 0)
        rc = metrics_meter(e, m, now);
    m->jobs_running = (int64_t)e->nrun;
    m->jobs_pending = (int64_t)e->jobs.len - (int64_t)e->nrun;
    pthread_mutex_unlock(&e->mu);
    if (rc < 0) {
        sl_engine_metrics_fini(m);
        return rc;
    }
    for (int s = 0; s < SL_JOB_NSTATES; s++)
        m->finished[s] = atomic_load_explicit(&e->counters.finished[s], memory_order_relaxed);
    m->placements = atomic_load_explicit(&e->counters.placements, memory_order_relaxed);
    m->preemptions = atomic_load_explicit(&e->counters.preemptions, memory_order_relaxed);
    for (int b = 0; b <= SL_ENGINE_PASS_BUCKETS; b++)
        m->pass[b] = atomic_load_explicit(&e->counters.pass[b], memory_order_relaxed);
    m->pass_ns = atomic_load_explicit(&e->counters.pass_ns, memory_order_relaxed);
    return 0;
}
