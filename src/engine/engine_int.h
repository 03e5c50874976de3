/*
 * engine_int.h - what the engine's modules share: the engine's state
 * (struct sl_engine), jobs and tasks as the engine holds them, and the
 * functions one module calls in another. Not a public header: only
 * the engine modules include it; everything else uses engine.h.
 *
 * The modules, in the order a change usually meets them:
 *   core.c        the loop, the op queue, group commit, the syncer, timers
 *   catalog.c     teams, queues, cohorts, classes, users; apply
 *   teamadmin.c   what a team-admin may apply
 *   objects.c     objects as manifests: in force, what an apply changes,
 *                 GET /v1/objects
 *   objdelete.c   deleting objects: what blocks, --force
 *   admission.c   submit and cancel, admission policies, lineage
 *   depwait.c     jobs waiting for their dependencies (spec.dependency)
 *   job.c         job views, rows, the run list, transitions to an end
 *   launch.c      placement, preemption, the job environment, starting tasks
 *   meter.c       ledger intervals, budgets, idle detection
 *   govern.c      tokens, scans, models and stages, carbon
 *   auditlog.c    the audit writer and its checkpoints
 *   nodes.c       the executor and its nodes, refreshed; this host's meters
 *   nodeadmin.c   an admin's state of the nodes: drain, cordon, uncordon
 *   recovery.c    creation, loading, re-adoption, bootstrap
 *   readers.c     JSON views and /metrics for the HTTP thread
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
#ifndef SL_ENGINE_INT_H
#define SL_ENGINE_INT_H

#include "engine.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../audit/audit.h"
#include "../core/array.h"
#include "../core/depend.h"
#include "../policy/policy.h"
#include "../sched/sched.h"
#include "../sim/trace.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/heap.h"
#include "../util/imap.h"

#define MAX_NAMED 1024        /* teams, queues, classes, users, cohorts */
#define CHECKPOINT_PAGES 1000 /* WAL frames that wake the checkpointer */
#define MAX_BUDGETS 256
#define METER_TICK_MS 1000    /* budget thresholds, idle flags */
#define GPUMON_PERIOD_MS 1000 /* NVML and RAPL samples */
#define PRICING_TEXT_MAX 65536
#define RES_INF INT64_MAX
#define AUDIT_CHECKPOINT_MS 60000 /* a signed checkpoint this often, when the
                                     log grew */

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
    int node;                     /* node index: the scheduler's and the
                                     inventory's (e->nodes) */
    int ngpus;
    int gpus[SL_EXEC_MAX_GPUS];
    int gpu_milli;
    bool started;                 /* started (or adopted) by the executor */
    bool done;                    /* its end is known */
    int exit_code;
    int64_t ran_from_ms, ran_to_ms; /* when it began and ended where it
                                     ran, as its executor reports them
                                     (Slurm's StartTime, EndTime); 0 =
                                     unknown: the ledger then counts from
                                     the decision to the end seen */
    bool metered;                 /* on a node this host's meters measure:
                                     m0 holds its readings at the
                                     interval's start */
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
    bool cancel_requested, timed_out, gang_failed, lost, preempting;
    int64_t preempted_for;        /* preempting: the job it makes room for */
    int64_t ckpt_at_ms;           /* maxRuntime: send checkpoint signal (mono) */
    int64_t kill_at_ms;           /* send SIGKILL (mono); 0 = none */
    int limits_enforced;          /* -1 unknown */
    int gpus_enforced;            /* -1 unknown or no GPUs; see
                                     sl_job_view.gpus_enforced */
    int64_t intent_at_ms;         /* when a cancel, preemption or timeout
                                     first signalled it (wall); 0 = none */
    char *message;                /* owned; guarded by e->mu; NULL = none */
    char *end_note;               /* owned: what the executor said of a
                                     task's end (the first note), for the
                                     attempt's message; NULL = none */
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
     * least idle.after long; idle_counting: in such a stretch now. Guarded
     * by e->mu for readers (sl_engine_job_live). */
    int64_t idle_since_ms, idle_last_ms, idle_ms;
    bool idle_counting, idle_flagged;
    bool idle_ended;              /* cancel_requested: by
                                     --interactive-idle-timeout (its end's
                                     message says so) */
    bool revoking;                /* staged: asked back (sl_executor_revoke) */
    bool held;                    /* Pending: held (sluice hold), not
                                     scheduled until released */
    bool requeuing;               /* Running, preempting: by sluice requeue
                                     (no preemptor) */
    bool requeue_hold;            /* requeuing: held once back in line */
    bool hold_admin;              /* held, or requeue_hold: an admin's hold
                                     (an admin or team-admin held another's
                                     job), which its user may not release */
    const char *hold_by;          /* interned: who held it (or asked the
                                     requeue to); NULL = unknown */
    int64_t staged_after;         /* Pending: staged in the executor behind
                                     this Running job (placement: the
                                     resources it will take), 0 = not */
    int64_t array_id;             /* an element of a job array: the array's
                                     id (its first element's); 0 = none */
    int array_index, array_count; /* its index; the array's elements */
    int array_limit;              /* at most this many of the array's
                                     elements Pending-eligible or Running
                                     (spec.array's %N); 0 = no limit */
    bool array_held;              /* Pending, not eligible: over that limit */
    struct sl_depend *dep;        /* owned: Pending and waiting for its
                                     dependencies (depwait.c); NULL = none
                                     or met */
    bool dep_never;               /* dep can never be met, and the job
                                     waits anyway (keep_invalid_depend):
                                     not judged again */
};

/* An admin's state of a node (docs/nodes.md), by name: kept in the store
 * as governed objects of kind "Node" so that it outlives a restart and a
 * node the executor no longer lists. */
enum node_admin_state {
    NODE_ACTIVE,                  /* in service */
    NODE_CORDONED,                /* takes no new task */
    NODE_DRAIN,                   /* takes no new task; "draining" while a
                                     running job has a task there, then
                                     "drained" */
};
struct node_admin {
    char name[64];
    enum node_admin_state state;
    char reason[SL_NODE_REASON_MAX + 1];
    char by[64];                  /* the admin who set it */
    int64_t at_ms;                /* when (wall) */
};

/* Interned strings: names that many jobs share, kept for the daemon's life. */
struct strtab {
    char **slot;                  /* open addressing; NULL = empty */
    size_t cap, len;
};

/* A job whose end is recorded in the open transaction: its executor
 * records go once it has committed. */
struct gone { int64_t job_id; int attempt; };

struct sl_engine {
    struct sl_engine_config cfg;
    char data_dir[1024], store_path[1100];
    char hostname[64];            /* this machine, for the audit log */
    struct sl_store *st;
    struct sl_executor *x;        /* carries out placements */
    struct sl_exec_caps caps;     /* what it can do and enforce */
    struct sl_inventory nodes;    /* its nodes: node i is the scheduler's
                                     node i */
    struct sl_gpumon *mon;        /* this machine's GPU and CPU meters, for
                                     the nodes whose devices are here when
                                     the executor runs commands; NULL =
                                     none (fake GPUs, no NVML nor RAPL) */
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
    size_t nfresh;                /* jobs submitted since the last pass */
    int64_t *unstored;            /* ids of the fresh jobs of the open
                                     transaction, stored before it commits */
    size_t nunstored, unstored_cap;
    int64_t next_id;              /* the id of the next job submitted */
    bool write_failed;            /* a write the open transaction needs
                                     failed: it must not commit */
    struct job **run;             /* Running jobs; j->run_idx is the index */
    size_t nrun, run_cap;
    struct sl_heap timers;        /* Running jobs that have a timer:
                                     maxRuntime, kill after grace; room for
                                     every Running job is reserved before
                                     it runs */
    int64_t *ended;               /* Running jobs every task of which had
                                     ended when they were re-adopted: they
                                     finish in the first group */
    size_t nended, ended_cap;
    struct gone *gone;            /* jobs whose end is recorded in the open
                                     transaction: released once it has
                                     committed */
    size_t ngone, gone_cap;
    int64_t *staging;             /* jobs staged in the open transaction:
                                     handed to the executor once it has
                                     committed */
    size_t nstaging, staging_cap;
    int64_t *restaged;            /* loaded staged: resolved in the first
                                     group, once re-adopted jobs that ended
                                     have finished */
    size_t nrestaged, restaged_cap;
    bool sched_full;              /* something was freed or changed */
    int64_t sched_wake_ms;        /* the scheduler's next timer (wall) */

    pthread_mutex_t qmu;          /* guards the op queue and 'stopping' */
    struct sl_op *qhead, *qtail;
    bool stopping;
    bool broken;                  /* a commit failed: memory and store differ */
    _Atomic bool lost;            /* sl_engine_lose: leads no more */
    bool lost_done;               /* engine thread: acted on 'lost' */
    int wake_fd;                  /* eventfd: ops queued */

    /* The syncer: answers committed operations once the store says their
     * commit is durable (sl_store_sync), so that the engine can go on with
     * the next group meanwhile. */
    pthread_mutex_t smu;
    pthread_cond_t scond;
    struct sl_op *shead, *stail;  /* committed, not yet answered */
    uint64_t stoken;              /* the commit token of the last of them */
    bool sstop;
    pthread_t sthread;
    bool srunning;
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
    char job_ca[1024];            /* their SLUICE_CA_CERT; "" = none */
    char job_user[64];            /* the account of unmapped users' jobs;
                                     "" = they are refused (see
                                     identity_setup in recovery.c and
                                     submit_target in admission.c) */
    char allow_daemon_user[64];   /* see sl_engine_config */
    struct sl_policy *policies;   /* kind: Policy, by name */
    int npolicies;
    struct node_admin *nadm;      /* an admin's node states, in the order
                                     set; guarded by mu for readers */
    int nnadm, nadm_cap;
    int ndrain;                   /* of them, in NODE_DRAIN */
    size_t ndepwait;              /* jobs with j->dep */
    size_t narray_held;           /* jobs with j->array_held */
    bool dep_dirty;               /* a job ended: judge the waiting again */
};

/* The engine's clocks: cfg.now_ms and cfg.mono_ms (set at creation, the
 * system's unless a test injected its own). Every time the engine records
 * or decides by comes from these, never from sl_now_ms directly. */
static inline int64_t sl_eng_now_ms(const struct sl_engine *e) { return e->cfg.now_ms(); }
static inline int64_t sl_eng_mono_ms(const struct sl_engine *e) { return e->cfg.mono_ms(); }

/* ---- core.c ------------------------------------------------------------ */

void sl_eng_op_fail(struct sl_op *op, int status, const char *code);

/* The answer of a job operation: the job object as text. */
int sl_eng_op_job_body(struct sl_op *op, const struct sl_job_view *v);

/* ---- ops.c ------------------------------------------------------------- */

/* Apply 'op' with its kind's handler (in the open savepoint). Returns 0
 * or a negative errno with op->status, code and err set. */
int sl_eng_op_apply(struct sl_engine *e, struct sl_op *op);

/* ---- catalog.c --------------------------------------------------------- */

/* The one copy of 's', or NULL on -ENOMEM. */
const char *sl_eng_intern(struct strtab *t, const char *s);

void sl_eng_strtab_fini(struct strtab *t);

struct team *sl_eng_team_find(struct sl_engine *e, const char *name);

struct queue *sl_eng_queue_find(struct sl_engine *e, const char *name);

struct pclass *sl_eng_pclass_find(struct sl_engine *e, const char *name);

struct user *sl_eng_user_find(struct sl_engine *e, const char *name);

void sl_eng_sched_settings(struct sl_engine *e, const struct sl_manifest *m);

/* Parse one stored manifest spec back ({kind, name, spec JSON text}). */
int sl_eng_manifest_from_store(const char *kind, const char *name, const char *spec_json,
                               struct sl_manifest **out);

bool sl_eng_is_admin(const struct sl_principal *who);

int sl_eng_manifest_forbidden(struct sl_op *op, size_t i, size_t n, const char *field,
                              const char *msg);

extern const char *const sl_eng_action_names[];

int sl_eng_do_apply(struct sl_engine *e, struct sl_op *op);
/* objdelete.c: delete one catalog object (SL_OP_DELETE), by the rules of
 * docs/api-contract.md ("Objects"); admins only. */
int sl_eng_do_delete(struct sl_engine *e, struct sl_op *op);
/* objects.c: the manifest in force of 'kind' (enum sl_manifest_kind) kept
 * by 'key' (its name; a Dataset's name@version) into *m, read from the
 * catalog in memory and from store 'st' (the writer on the engine thread;
 * on another, a reader, with e->mu held for the kinds kept in memory:
 * all but the Scheduler, the Pricing, Policy and Dataset). 0, -ENOENT, or
 * -ENOMEM. */
int sl_eng_manifest_current(struct sl_engine *e, struct sl_store *st, int kind,
                            const char *key, struct sl_manifest *m);
/* objects.c: what apply 'op' would change, one entry per document
 * appended to 'diff' ({kind, name, action, changes}, changes as
 * sl_manifest_compare); unless op replaces or is a dry run, a document
 * that would reset a field it left out is refused (409, op failed, the
 * field named). Engine thread. 0 or a negative errno. */
int sl_eng_apply_compare(struct sl_engine *e, struct sl_op *op, json_t *diff);

int sl_eng_ld_team(void *arg, const char *name, const char *dq);

int sl_eng_ld_cohort(void *arg, const char *name, const char *description);

int sl_eng_ld_queue(void *arg, const char *name, const char *team, const char *spec_json);

int sl_eng_ld_pclass(void *arg, const char *name, int value, bool preemptible,
                     bool is_default, bool opportunistic, int64_t min_runtime_ms);

int sl_eng_ld_user(void *arg, const char *name, const char *team,
                   const char *role, const char *unix_user);

/* ---- teamadmin.c ------------------------------------------------------- */

/* A team-admin applies its team's users (as team-admin, member or viewer)
 * and queues; the team's total quota, borrowing limits and fair-share
 * weight may not grow past what it has: quota an admin granted moves
 * between the team's queues, and only an admin adds to it. */
int sl_eng_team_admin_check(struct sl_engine *e, struct sl_op *op);

/* ---- job.c ------------------------------------------------------------- */

/* Set the job's message (NULL fmt clears it). */
void sl_eng_job_msg(struct sl_engine *e, struct job *j, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The placement of a job's tasks as the API's JSON text (the array of
 * {node, task, gpus, gpu_milli} objects, compact), written once when the
 * job is placed and kept while it runs. Returns NULL on -ENOMEM. */
char *sl_eng_placement_text(struct sl_engine *e, const struct job *j);

void sl_eng_job_view(const struct job *j, struct sl_job_view *v,
                     const char *placement, const char *spec_json);

/* Write the job row for its current state. With 'exit_code' >= 0 the job
 * is finished with that code.
 *
 * A job submitted in the open transaction has no row yet ('fresh'): the
 * submission writes nothing, and the job's first write inserts its row as
 * it is then, with the Pending event of its submission first. A job placed
 * in the group that submitted it is thus written once, Running, instead of
 * inserted Pending and updated; the events are the same. The caller undoes
 * a failed write with a savepoint and must then set 'fresh' back. */
int sl_eng_job_row(struct sl_engine *e, struct job *j, int exit_code, int64_t finished_ms);

/* Store the fresh job 'id' if it still is: before a commit, and before an
 * operation on it takes a savepoint (which could undo the insert). A
 * failure fails the whole open transaction. */
void sl_eng_job_store_fresh(struct sl_engine *e, int64_t id);

/* Write the job row for its current state, plus one event. */
int sl_eng_job_persist(struct sl_engine *e, struct job *j, const char *type,
                       const char *from, int exit_code, int64_t finished_ms);

/* Record that Running job 'j' was told to stop ('type': cancel, preempt
 * or timeout; its flag and intent_at_ms already set): the row carries the
 * intent, and one event says it. */
int sl_eng_job_intent_write(struct sl_engine *e, struct job *j, const char *type);

void sl_eng_job_token_drop(struct job *j);

void sl_eng_job_free(struct job *j);

/* Append to a growable vector. */
int sl_eng_vec_push(void **vec, size_t *n, size_t *cap, size_t elem, const void *v);

/* On the run list, with room in the timer heap for it. Caller holds
 * e->mu. Returns 0 or -ENOMEM (nothing changed). */
int sl_eng_run_add(struct sl_engine *e, struct job *j);

/* Off the run list (the last entry takes its place) and off the timer
 * heap. Caller holds e->mu. */
void sl_eng_run_del(struct sl_engine *e, struct job *j);

/* Put a Running job in the timer heap at its next timer, or take it out
 * when it has none. Call after anything that changes one. Cannot fail:
 * sl_eng_run_add reserved the room. */
void sl_eng_job_timer(struct sl_engine *e, struct job *j);

void sl_eng_job_forget(struct sl_engine *e, struct job *j);

/* Back to Pending in the scheduler, keeping the submit time. */
void sl_eng_job_requeue_sched(struct sl_engine *e, struct job *j, int64_t not_before);

/* A Running job whose every task has ended: decide its outcome. The row is
 * written while the placement is still known, then the resources go back. */
int sl_eng_job_finish(struct sl_engine *e, struct job *j, bool lost);

void sl_eng_job_signal_all(struct sl_engine *e, struct job *j, int sig);

/* Record that Running job 'j' starts its attempt (j->attempt, at
 * j->started_ms) and where its output begins in each task's log: the log's
 * size now (0 when there is none), before any of its tasks runs. In the
 * transaction that marks it Running. Returns 0 or a negated errno. */
int sl_eng_attempt_start(struct sl_engine *e, struct job *j);

/* ---- depwait.c --------------------------------------------------------- */

/* The submission's spec.dependency (op->u.submit.spec), checked: every job
 * it names exists and is visible to the submitter (else "does not exist",
 * as for a job of another team), and no condition can already never hold.
 * Returns 0 with *out the parsed dependency (NULL: none; free()), or a
 * refusal (400 "invalid", field spec.dependency; op failed). */
int sl_eng_depend_check(struct sl_engine *e, struct sl_op *op, struct sl_depend **out);

/* Job 'j', just in the scheduler and the job map, waits for 'dep' (taken;
 * NULL: none) unless it is met already. Returns 0 or -ENOMEM (then it
 * waits with no words). */
int sl_eng_depend_attach(struct sl_engine *e, struct job *j, struct sl_depend *dep);

/* Array element 'j' (Pending, in the scheduler) waits for a place under
 * its array's limit (spec.array's %N): not eligible until fewer of its
 * array's elements are eligible or running (and its dependency, if any,
 * is met). */
void sl_eng_array_hold(struct sl_engine *e, struct job *j);

/* Judge every waiting job again when a job ended (e->dep_dirty): one whose
 * dependencies are met becomes eligible; one that waits gets the words of
 * what it waits for; one whose dependency can never be satisfied ends
 * Cancelled with that reason as its message, or with
 * cfg.keep_invalid_depend waits with reason "DependencyNeverSatisfied: ...".
 * Then held array elements are made eligible, lowest index first, while
 * their array is under its limit. Engine thread, before a pass. */
void sl_eng_depend_update(struct sl_engine *e);

/* ---- meter.c ----------------------------------------------------------- */

/* Use of budget 'b' at wall time 'now'. */
double sl_eng_budget_used(const struct budget *b, int64_t now);

/* Open the ledger intervals of a job just placed (in the placement's
 * savepoint), with the meters' readings at its start. */
int sl_eng_ledger_open(struct sl_engine *e, struct job *j);

/* After sl_eng_ledger_open has been written: count the job in its budgets. Also
 * for a Running job re-adopted at start (its intervals are open). */
void sl_eng_ledger_running(struct sl_engine *e, struct job *j);

/* Close the intervals of a Running job at 'end' and move its use into its
 * budgets' closed sums. A failed write fails the group: no change without
 * its record. */
void sl_eng_ledger_close(struct sl_engine *e, struct job *j, int64_t end);

/* Add or replace a budget (caller holds e->mu); sl_eng_meter_recount counts it. */
void sl_eng_budget_set(struct sl_engine *e, const struct sl_budget *nb);

/* Every Running job's rates again (the Pricing changed) and every budget
 * recounted. */
void sl_eng_meter_recount(struct sl_engine *e);

/* The 80 % and 100 % events of every budget, once per period each; a new
 * period's recount; idle-but-allocated jobs. In the open transaction. */
void sl_eng_meter_tick(struct sl_engine *e);

/* The budget of 'team' that is spent, the one that blocks before one that
 * demotes; NULL when none is. */
const struct budget *sl_eng_budget_spent(struct sl_engine *e, const char *team,
                                         int64_t now);

/* The class a demoted job gets: "best-effort" when it exists, else the
 * preemptible class of lowest value; NULL when there is none. */
struct pclass *sl_eng_demote_class(struct sl_engine *e);

void sl_eng_budget_text(struct sl_engine *e, const struct budget *b, int64_t now,
                        char *buf, size_t size);

/* The Pricing, the budgets and their counts; intervals left open by jobs
 * that no longer run are closed. After the jobs are loaded. */
int sl_eng_meter_load(struct sl_engine *e);

/* ---- admission.c ------------------------------------------------------- */

/* The scheduler's view of a job. */
void sl_eng_sched_spec(struct sl_engine *e, const struct job *j, const struct queue *q,
                       const struct pclass *pc, int user, struct sl_sched_job_spec *sj);

/* Put policy 'p' in force (engine thread; kept sorted by name). */
void sl_eng_policy_set(struct sl_engine *e, const struct sl_policy *p);

int sl_eng_policies_load(struct sl_engine *e, struct sl_error *err);

/* The admission policies' verdict on a job of spec 's' in team 'team',
 * queue 'queue', class 'pclass' (sl_admit, with the datasets and scans
 * the store has). Returns 0 with *verdict allowed (owned: free(); its
 * network is the one the job gets), or a refusal with the op failed: 403
 * "policy_denied" naming the job's field at fault (audit details: the
 * policy and rule), 503 when out of memory. */
int sl_eng_admit(struct sl_engine *e, struct sl_op *op, const struct sl_job_spec *s,
                 const char *team, const char *queue, const char *pclass,
                 struct sl_verdict **verdict);

/* Whether a job of spec 'js' in queue 'q', class 'pc' could ever run, as
 * sbatch refuses a request no node configuration satisfies: bigger than
 * the largest node or the cluster, a GPU model no node has, a gang its
 * topology cannot hold, over its per-user limit or the most its queue may
 * ever hold (sl_sched_job_runnable). Returns 0, or a refusal with the op
 * failed: 400 "unsatisfiable" (the cluster) or "quota_exceeded" (a
 * limit), naming the field. */
int sl_eng_runnable(struct sl_engine *e, struct sl_op *op, const struct sl_job_spec *js,
                    const struct queue *q, const struct pclass *pc);

int sl_eng_do_submit(struct sl_engine *e, struct sl_op *op);

int sl_eng_do_cancel(struct sl_engine *e, struct sl_op *op);

/* Cancel every pending and running element of array op->u.cancel.job_id
 * (its first element's id) in one operation: the caller may cancel them
 * all (cancel's rule, judged before any is touched) or none; each goes
 * through the cancel path, audited job.cancel with "for" "array:ID".
 * 202 {"array_job_id", "cancelled": [ids ended now], "stopping": [ids
 * told to stop]}; 404 when it is not an array's id the caller may see; 409
 * when no element is left to cancel. */
int sl_eng_do_array_cancel(struct sl_engine *e, struct sl_op *op);

/* Store the fresh elements of array 'id' (sl_eng_job_store_fresh), before
 * an operation on the array takes its savepoint. */
void sl_eng_array_store_fresh(struct sl_engine *e, int64_t id);

/* ---- jobctl.c ---------------------------------------------------------- */

/* The job an operation on 'id' names, when the caller may 'verb' it: 404
 * when unknown or of another team (as cancel), 409 (field "state") when
 * finished, 403 (field "user") when it is another user's and the caller
 * is neither a team-admin of its team nor an admin. NULL with the op
 * failed on refusal. */
struct job *sl_eng_ctl_job(struct sl_engine *e, struct sl_op *op, int64_t id,
                           const char *verb);
/* The job's object as the operation's answer (200). */
int sl_eng_ctl_answer(struct sl_op *op, const struct job *j);
/* Job 'j''s message back to 'saved', a copy taken before a change that
 * failed (NULL: it had none); frees 'saved'. */
void sl_eng_job_msg_restore(struct sl_engine *e, struct job *j, char *saved);
/* Hold, release a pending job (struct sl_op_jobctl): the job's user, a
 * team-admin of its team or an admin; refused (409, field "state") when
 * it is not pending (hold), is staged in the executor (hold), or is not
 * held (release). A hold by an admin or a team-admin of another user's
 * job is an admin's hold (it replaces a user's hold; never the reverse):
 * only an admin or a team-admin of its team may release it (403, field
 * "hold"). */
int sl_eng_do_hold(struct sl_engine *e, struct sl_op *op);
int sl_eng_do_release(struct sl_engine *e, struct sl_op *op);
/* Held job 'j''s reason in the scheduler: who may release an admin's hold
 * (sl_sched_job_hold_note), the default for a user's. Takes e->mu. */
void sl_eng_hold_note(struct sl_engine *e, const struct job *j);
/* Requeue a running job (struct sl_op_jobctl, hold: and hold it, of the
 * kind hold would make): the preemption's path with no preemptor (its
 * checkpoint signal, its grace, then SIGKILL; back in line with its
 * submit time as the next attempt, retries untouched). The same users as
 * hold; refused (409, field "state") when it is not Running or is already
 * being stopped. */
int sl_eng_do_requeue(struct sl_engine *e, struct sl_op *op);

/* ---- attach.c ---------------------------------------------------------- */

/* A client attaches to interactive job op->u.jobctl.job_id: its user or
 * an admin (403, field "user"), a running interactive job whose task has
 * started (409, field "spec.interactive" or "state"; 503 while it
 * starts); 404 as cancel. Recorded (the audit, an "attach" event); the
 * answer is {"job", "attempt", "task"}, for the attach socket's name. */
int sl_eng_do_attach(struct sl_engine *e, struct sl_op *op);

/* Requeued job 'j' is back in line (sl_eng_job_finish, before its row is
 * written): held when it was asked, its requeue flags cleared. */
void sl_eng_requeue_done(struct sl_engine *e, struct job *j);

/* ---- jobupdate.c ------------------------------------------------------- */

/* Update a job (struct sl_op_update), by the same users as hold: while
 * Pending its priorityClass, queue, GPUs per task and maxRuntime; while
 * Running its maxRuntime (409 naming the field otherwise, and "state"
 * when finished, stopping or staged in the executor). maxRuntime: lower
 * only, but for an admin (409 "maxRuntime"). A new class, queue or GPU
 * count passes what a submission of it would pass: the queue is its
 * team's (400 "queue"), the class exists (400 "priorityClass"), the
 * admission policies (403 policy_denied), a spent budget of the team
 * (403 budget_exceeded: no higher class or more GPUs while it blocks, no
 * class above the one it demotes to), never-runnable (400 unsatisfiable
 * or quota_exceeded). The scheduler takes it in place, its place in line
 * kept (sl_sched_job_respec). Audited with each field changed, old and
 * new; one "update" event; the stored spec, queue and class changed. A
 * refusal changes nothing. */
int sl_eng_do_update(struct sl_engine *e, struct sl_op *op);

/* ---- govern.c ---------------------------------------------------------- */

/* A new random token: "sl_" + 43 base64url characters (32 random bytes). */
void sl_eng_token_new(char *out, size_t size, unsigned char hash[32]);

int sl_eng_do_token(struct sl_engine *e, struct sl_op *op);
int sl_eng_do_login(struct sl_engine *e, struct sl_op *op);

int sl_eng_do_revoke(struct sl_engine *e, struct sl_op *op);

/* An image scan's summary (src/policy/policy.h, sl_scan_json), by digest. */
int sl_eng_do_scan(struct sl_engine *e, struct sl_op *op);

/* Register a model version: by a user of its team, or by a job with its
 * own token (the model is then tied to that job). Versions are immutable. */
int sl_eng_do_model(struct sl_engine *e, struct sl_op *op);

int sl_eng_do_stage(struct sl_engine *e, struct sl_op *op);

/* Hourly carbon intensity of a site (admin): every hour or none. */
int sl_eng_do_carbon(struct sl_engine *e, struct sl_op *op);

/* ---- auditlog.c -------------------------------------------------------- */

/* Append one record to the audit log in the open transaction, stealing
 * 'details' (NULL = {}). A record that cannot be written fails the whole
 * transaction: no change without its record. */
void sl_eng_audit_add(struct sl_engine *e, const char *actor, const char *action,
                      const char *object, bool ok, json_t *details);

/* The record of operation 'op', after its savepoint was released (ok) or
 * rolled back (refused). */
void sl_eng_audit_op(struct sl_engine *e, struct sl_op *op, int rc);

/* At most every AUDIT_CHECKPOINT_MS (or with 'now'), when the log grew:
 * sign its head into a checkpoint, stored in the open transaction and
 * written to DATA/audit/checkpoint once it commits. */
void sl_eng_audit_checkpoint(struct sl_engine *e, bool now);

/* After a commit: the head readers may sign, and the checkpoint file. */
void sl_eng_audit_committed(struct sl_engine *e);

void sl_eng_audit_rollback(struct sl_engine *e);

int sl_eng_audit_open(struct sl_engine *e, struct sl_error *err);

/* ---- launch.c ---------------------------------------------------------- */

int sl_eng_job_start_tasks(struct sl_engine *e, struct job *j);

void sl_eng_schedule(struct sl_engine *e, struct job ***started, size_t *nstarted);

/* Staging (docs/decisions/0010): after a pass, the jobs the scheduler
 * stages are recorded (sl_eng_stage_pick, in the open transaction) and
 * handed to the executor once that has committed (sl_eng_stage_submit).
 * A staged job leaves the stage when the executor says it will not start
 * (sl_eng_unstage), and takes its predecessor's placement when that one
 * succeeds (from sl_eng_job_finish). */
void sl_eng_stage_pick(struct sl_engine *e);
void sl_eng_stage_submit(struct sl_engine *e);
void sl_eng_unstage(struct sl_engine *e, struct job *j, const char *why);
/* Predecessor 'a' ended with 'succeeded': its staged successor runs on
 * its placement (still a's tasks) or goes back in line. Before a's own
 * release. */
void sl_eng_stage_end(struct sl_engine *e, struct job *a, bool succeeded);
/* The staged jobs loaded from the store: re-adopted when they started
 * while sluiced was down, Pending again otherwise. */
void sl_eng_restage_resolve(struct sl_engine *e);

/* Task 'task' of Running job 'j' ended with 'code' (lost: without one).
 * A failed task of a gang stops the others; the job finishes once every
 * task has ended. */
void sl_eng_task_ended(struct sl_engine *e, struct job *j, int task, int code, bool lost,
                       const char *note);

/* Take the executor's events: the ends of tasks (sl_eng_task_ended), and
 * changes of its nodes (sl_eng_nodes_refresh). */
void sl_eng_exec_events(struct sl_engine *e);

/* The executor's nodes again: a node's state changes whether it is
 * schedulable; a new node is added to the scheduler. */
void sl_eng_nodes_refresh(struct sl_engine *e);

/* Whether this host's meters measure task 'tk' (its node's devices are
 * here and the executor runs commands). */
bool sl_eng_node_metered(const struct sl_engine *e, int node);

/* ---- nodes.c ----------------------------------------------------------- */

/* The executor of cfg.executor, offering this host or the --fake-nodes
 * list; e->x and e->caps. */
int sl_eng_executor_open(struct sl_engine *e, struct sl_error *err);

/* The executor's nodes into e->nodes and the scheduler, in its order. */
int sl_eng_nodes_add(struct sl_engine *e, struct sl_error *err);

/* This machine's meters (NVML, RAPL), when a node's devices are here and
 * the executor runs commands; e->mon. */
void sl_eng_meters_open(struct sl_engine *e);

/* Node i's schedulability and note again, from the executor's state
 * (e->nodes) and the admin's (nodeadmin.c). Takes e->mu. i < 0 = every
 * node. */
void sl_eng_node_restate(struct sl_engine *e, int i);

/* ---- nodeadmin.c ------------------------------------------------------- */

/* The admin's node states from the store (kind "Node"), applied to the
 * nodes; at creation. Returns 0 or -errno with 'err' filled. */
int sl_eng_nodeadmin_load(struct sl_engine *e, struct sl_error *err);
/* The admin's state of node 'name'; NULL = never set (active). Engine
 * thread, or under e->mu. */
const struct node_admin *sl_eng_nodeadmin_get(const struct sl_engine *e, const char *name);
/* Whether a Running job has a task on node i. Engine thread or e->mu. */
bool sl_eng_node_busy(const struct sl_engine *e, int i);
/* The admin's state of node i as shown: "active", "cordoned",
 * "draining" or "drained". Engine thread or e->mu. */
const char *sl_eng_nodeadmin_shown(const struct sl_engine *e, int i,
                                   const struct node_admin *a);
/* Into 'buf': why the admin's state keeps node i from new work, for
 * `sluice why` ("drained by alice (reason: disk swap) since ..."); ""
 * when active. */
void sl_eng_nodeadmin_note(const struct sl_engine *e, int i, const struct node_admin *a,
                           char *buf, size_t size);
/* The admin's part of node 'name' (index i, -1 = not listed) in the
 * API's node object: {"state","reason","by","at"} (new reference; NULL
 * when out of memory). Engine thread or e->mu. */
json_t *sl_eng_nodeadmin_json(const struct sl_engine *e, int i, const char *name);
/* Re-note the drained nodes (draining becomes drained when their last
 * job ends); before a scheduling pass. Cheap when none is drained. */
void sl_eng_nodeadmin_refresh(struct sl_engine *e);
/* Handlers of SL_OP_NODE_DRAIN, _CORDON and _UNCORDON. */
int sl_eng_do_node(struct sl_engine *e, struct sl_op *op);

/* ---- recovery.c -------------------------------------------------------- */

/* Whether Unix account 'name' may run jobs here: it exists and has
 * neither the daemon's uid nor uid 0, unless it is the one account
 * --allow-daemon-user names; a daemon that is not root runs jobs as
 * itself only. Returns 0, or -EINVAL / -EPERM with 'err' saying why (its
 * text starts with the account's name in quotes). */
int sl_eng_account_check(const struct sl_engine *e, const char *name, struct sl_error *err);

#endif
