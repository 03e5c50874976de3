/*
 * sched.h - the scheduler: queues, quotas with borrowing, fair share,
 * priorities, preemption, gang, backfill, placement and explanations.
 *
 * A struct sl_sched is the scheduler's whole world: nodes, GPU models,
 * priority classes, queues and cohorts, and the jobs it knows (pending,
 * running, terminating). The caller tells it what happens (a job was
 * submitted, ended, was requeued; a node was added) and asks it for a pass
 * at time 'now': the pass returns decisions as data (start this job with
 * this placement, preempt that one for this one), which the caller carries
 * out. The scheduler does no I/O and reads no clock: time comes in as
 * arguments, randomness from the seed. The daemon (sluiced) and the
 * simulator (sluice sim) drive the very same code. See docs/scheduler.md
 * for the policies and docs/decisions/0004 for why the state persists.
 *
 * Units: cpu_milli, mem_bytes, GPU milli (1000 = one GPU), ms.
 * Not thread-safe: one thread owns a struct sl_sched.
 */
#ifndef SL_SCHED_H
#define SL_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/spec.h"
#include "../util/buf.h"

#define SL_SCHED_MAX_GPUS 64      /* per node */
#define SL_SCHED_MAX_MODELS 32    /* GPU models in a cluster */
#define SL_SCHED_MAX_QUEUES 4096
#define SL_SCHED_MAX_CLASSES 64
#define SL_SCHED_MAX_COHORTS 1024

/* Quota dimensions: CPU, memory, GPUs of any model, then GPUs per model. */
enum { SL_DIM_CPU, SL_DIM_MEM, SL_DIM_GPU, SL_DIM_MODEL0 };
#define SL_SCHED_NDIMS (SL_DIM_MODEL0 + SL_SCHED_MAX_MODELS)

struct sl_sched;

struct sl_sched_config {
    enum sl_placement placement;  /* default fgd */
    uint64_t seed;                /* the random policy's draws */
    bool backfill;                /* EASY backfill (default true) */
    int reservations;             /* blocked jobs given a reservation, 1..64 */
    int64_t half_life_ms;         /* fair-share usage decay; 0 = current
                                     usage only */
    bool preemption;              /* default true */
    int64_t min_runtime_ms;       /* default protection of a started job */
    bool strict_fifo;             /* a blocked job blocks the later jobs of
                                     its queue at its priority or below (no
                                     passing; the FIFO baseline) */
    bool auto_typical;            /* learn FGD's typical tasks from the jobs
                                     submitted (default true; the fill
                                     simulator sets them itself) */
};

/* Defaults: fgd, backfill with 1 reservation, 7-day half-life, preemption
 * on, no minimum run time, typical tasks learnt. */
void sl_sched_config_init(struct sl_sched_config *cfg);

/* Returns NULL with errno set (ENOMEM). */
struct sl_sched *sl_sched_create(const struct sl_sched_config *cfg);
void sl_sched_destroy(struct sl_sched *s);   /* NULL-safe; keeps errno */
/* Change the settings (kind: Scheduler). A new placement policy drops the
 * placement indexes; they are rebuilt on use. */
void sl_sched_configure(struct sl_sched *s, const struct sl_sched_config *cfg);
const struct sl_sched_config *sl_sched_get_config(const struct sl_sched *s);

/* ---- the cluster ------------------------------------------------------ */

/* GPU model id for 'name' (case-insensitive), added when new. Returns
 * 0..SL_SCHED_MAX_MODELS-1 or -ENOSPC / -EINVAL. */
int sl_sched_model(struct sl_sched *s, const char *name);
const char *sl_sched_model_name(const struct sl_sched *s, int model);
int sl_sched_model_count(const struct sl_sched *s);
/* Fair-share weight of a model's GPU-time (default 1; kind: Scheduler
 * modelWeights). */
void sl_sched_model_weight(struct sl_sched *s, int model, double weight);

struct sl_sched_node_spec {
    const char *name;             /* unique */
    const char *domain;           /* NVLink domain / rack; NULL or "" = none */
    int64_t cpu_milli;
    int64_t mem_bytes;
    int ngpus;
    const char *gpu_model[SL_SCHED_MAX_GPUS]; /* model of each GPU */
};
/* Returns the node's index (0, 1, ...) or -EEXIST / -EINVAL / -ENOSPC /
 * -ENOMEM with nothing added. */
int sl_sched_node_add(struct sl_sched *s, const struct sl_sched_node_spec *n);
int sl_sched_node_count(const struct sl_sched *s);
/* A node that is not schedulable takes no new task. */
void sl_sched_node_schedulable(struct sl_sched *s, int node, bool on);
/* Why node 'node' is not schedulable, for explanations ("draining: disk
 * swap"; at most 480 bytes kept); NULL clears it. Returns 0, -ENOENT or
 * -ENOMEM. */
int sl_sched_node_note(struct sl_sched *s, int node, const char *why);

struct sl_sched_node_view {
    const char *name, *domain;    /* borrowed */
    bool schedulable;
    int64_t cpu_total, cpu_free, mem_total, mem_free;
    int ngpus;
    int gpu_model[SL_SCHED_MAX_GPUS];
    int gpu_free_milli[SL_SCHED_MAX_GPUS];
};
int sl_sched_node_view(const struct sl_sched *s, int node,
                       struct sl_sched_node_view *v);

/* ---- classes, cohorts, queues ----------------------------------------- */

struct sl_sched_class_spec {
    const char *name;
    int value;                    /* higher is scheduled first */
    bool preemptible;             /* false: never preempted (SLA) */
    bool opportunistic;           /* runs on idle capacity beyond quota and
                                     is preempted first, by anyone */
    int64_t min_runtime_ms;       /* 0 = the scheduler's default */
};
/* Create or update by name. Returns the class index or -ENOSPC/-EINVAL. */
int sl_sched_class_set(struct sl_sched *s, const struct sl_sched_class_spec *c);
int sl_sched_class_find(const struct sl_sched *s, const char *name);

/* Resource amounts indexed by SL_DIM_*; -1 = not set. */
struct sl_sched_res {
    int64_t v[SL_SCHED_NDIMS];
};
void sl_sched_res_unset(struct sl_sched_res *r);

struct sl_sched_queue_spec {
    const char *name;
    const char *team;
    const char *cohort;           /* NULL or "" = none */
    double weight;                /* fair-share weight, > 0 */
    struct sl_sched_res nominal;  /* unset dims: no quota on them */
    struct sl_sched_res borrowing_limit; /* unset: unlimited in the cohort */
    struct sl_sched_res lending_limit;   /* unset: all of nominal */
    struct sl_sched_res user_limit;      /* per user; unset: none */
    enum sl_preempt_within preempt_within;
    enum sl_reclaim reclaim;
};
/* A spec for queue 'name' of team 'name' with no quota and no limits,
 * weight 1, the default preemption settings. */
void sl_sched_queue_spec_init(struct sl_sched_queue_spec *q, const char *name);
/* Create or update by name. Returns the queue index or -ENOSPC/-EINVAL.
 * Running jobs keep running when a quota shrinks; new ones see the new
 * quota. */
int sl_sched_queue_set(struct sl_sched *s, const struct sl_sched_queue_spec *q);
int sl_sched_queue_find(const struct sl_sched *s, const char *name);
int sl_sched_queue_count(const struct sl_sched *s);

/* Apply a manifest of kind Queue, PriorityClass or Scheduler (other kinds
 * are not the scheduler's: 0, nothing done). A Queue's cohort is made when
 * new. Returns the queue or class index, 0 for Scheduler, or -errno. */
int sl_sched_apply_manifest(struct sl_sched *s, const struct sl_manifest *m);

/* Per-user interned ids (the scheduler keeps per-user usage per queue). */
int sl_sched_user(struct sl_sched *s, const char *name);

/* ---- jobs ------------------------------------------------------------- */

struct sl_sched_job_spec {
    int64_t id;                   /* > 0, unique */
    int queue;                    /* sl_sched_queue_set index */
    int user;                     /* sl_sched_user id */
    int pclass;                   /* sl_sched_class_set index */
    int64_t submit_ms;            /* keeps its place in line across requeues */
    int64_t not_before_ms;        /* retry backoff; 0 = now */
    int tasks;                    /* gang size, 1..SL_MAX_TASKS */
    int gpus;                     /* whole GPUs per task */
    int gpu_milli;                /* a fraction of one GPU per task (gpus 0) */
    const char *const *gpu_models;/* allowed models; NULL-terminated; NULL or
                                     empty (and models 0) = any */
    uint32_t models;              /* or allowed model ids (sl_sched_model) as
                                     bits, OR-ed with gpu_models */
    int64_t cpu_milli;            /* per task */
    int64_t mem_bytes;            /* per task */
    int topology;                 /* enum sl_topology */
    int64_t max_runtime_ms;       /* 0 = unknown: no backfill estimate */
};

/* One task placed. */
struct sl_sched_task_place {
    int node;
    int ngpus;
    int gpus[SL_SCHED_MAX_GPUS];  /* device indices on the node */
    int gpu_milli;                /* milli taken on each listed GPU */
};

/* Whether a job of spec 'j' could ever run here, whatever the others
 * hold: its request against the cluster as if every node were empty (the
 * largest node, the GPU models present, the whole cluster; a gang as its
 * topology asks; every node counted, also those that take no work now)
 * and against the most its queue may ever hold (its per-user limit; its
 * nominal quota plus what it may borrow while every other queue of its
 * cohort is idle; the GPU model quotas). Opportunistic classes skip the
 * limits; with no node known, only the limits are checked; j->id and
 * j->user are not read. Returns 0 when it could; -E2BIG (the cluster) or
 * -EDQUOT (a limit) with 'why' (may be NULL) naming the field and saying
 * "cannot run: ..."; -EINVAL when the spec is out of range. Changes
 * nothing: a GPU model no node has is refused, not added. */
int sl_sched_job_runnable(const struct sl_sched *s, const struct sl_sched_job_spec *j,
                          struct sl_error *why);
/* Add a pending job. Returns 0, -EEXIST, -ENOMEM, or -EINVAL with 'why'
 * (may be NULL) naming the bad field; nothing is added on failure. */
int sl_sched_job_add(struct sl_sched *s, const struct sl_sched_job_spec *j,
                     struct sl_error *why);
/* Add a job that is already running with this placement (a daemon that
 * restarts re-adopts its tasks). Its resources are taken as given. */
int sl_sched_job_add_running(struct sl_sched *s, const struct sl_sched_job_spec *j,
                             const struct sl_sched_task_place *tasks,
                             int64_t started_ms, struct sl_error *why);
/* A job ended (finished, failed, cancelled, lost): forget it, giving its
 * resources back. Returns 0 or -ENOENT. */
int sl_sched_job_remove(struct sl_sched *s, int64_t id, int64_t now_ms);
/* A running job goes back to pending (preempted, or a failed attempt with
 * retries left), keeping its submit time; not before 'not_before_ms'. */
int sl_sched_job_requeue(struct sl_sched *s, int64_t id, int64_t now_ms,
                         int64_t not_before_ms);
/* A running job is being preempted for pending job 'for_job' (0 = none
 * known) as a pass would have decided: it keeps its resources until
 * removed or requeued, is no victim again, and 'for_job' waits for it
 * rather than look for other victims. For a daemon that restarts while a
 * victim is in its grace. Returns 0 (also when it already is), -ENOENT,
 * or -EINVAL when it is not running. */
int sl_sched_job_terminating(struct sl_sched *s, int64_t id, int64_t for_job);
/* Whether pending job 'id' is eligible: 'why' non-NULL makes it wait,
 * in those words (its dependencies: "waiting for dependency afterok:12
 * (job 12 is Running)"), shown as its reason and as a blocker of kind
 * "dependency"; no pass starts, stages or reserves for it, and it makes no
 * room by preemption. NULL makes it eligible again. Returns 0, -ENOENT,
 * -EINVAL (not pending, or staged) or -ENOMEM (nothing changed). */
int sl_sched_job_wait(struct sl_sched *s, int64_t id, const char *why);
/* Change a pending job's backoff. */
int sl_sched_job_backoff(struct sl_sched *s, int64_t id, int64_t not_before_ms);

/* Hold ('on' true) or release pending job 'id'. A held job stays pending
 * with its submit time (its place in line) but no pass, backfill or
 * staging considers it: it leaves its bucket (and its predecessor, when
 * staged; the caller revokes what it staged), drops what it claimed as a
 * preemptor (its victims owe it nothing more) and its reservation. A
 * released job goes back to its place in line. Holding a held job or
 * releasing one not held changes nothing. Returns 0, -ENOENT, -EINVAL
 * when it is not pending, or -ENOMEM (release; it stays held). */
int sl_sched_job_hold(struct sl_sched *s, int64_t id, bool on);
/* The words of held job 'id''s reason (and of its explanation's
 * summary) instead of "held: not scheduled until released": who may
 * release it (an admin's hold). NULL: the default again. Dropped when it
 * is released. Returns 0, -ENOENT, -EINVAL when it is not held, or
 * -ENOMEM (unchanged). */
int sl_sched_job_hold_note(struct sl_sched *s, int64_t id, const char *why);
/* Whether job 'id' is pending and held. */
bool sl_sched_job_held(const struct sl_sched *s, int64_t id);
/* Job 'id''s maxRuntime is now 'ms' (0 = unknown; sluice update): a
 * running job's expected end moves with it (reservations are made anew by
 * the next full pass). Returns 0, -ENOENT, -EINVAL (ms < 0) or -ENOMEM
 * (unchanged). */
int sl_sched_job_max_runtime(struct sl_sched *s, int64_t id, int64_t ms);

/* Pending job sp->id takes spec 'sp' (sluice update): its queue, user,
 * class, tasks, resources, topology and maxRuntime. Its submit time, its
 * backoff, its hold and what it waits for are kept (sp->submit_ms and
 * sp->not_before_ms are not read): it keeps its place in line within its
 * new queue and class. What it claimed as a preemptor is let go (its
 * victims owe it nothing more) and its reservation dropped; the next pass
 * judges it anew. Whether it could ever run is the caller's
 * (sl_sched_job_runnable). Returns 0; -ENOENT; -EINVAL when it is not
 * pending or is staged (field "state"), or for a spec out of range as
 * sl_sched_job_add ('why' names the field); -ENOMEM. Nothing changes on
 * failure. */
int sl_sched_job_respec(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                        struct sl_error *why);

enum sl_sched_job_state {
    SL_SCHED_UNKNOWN,
    SL_SCHED_PENDING,
    SL_SCHED_RUNNING,
    SL_SCHED_TERMINATING,         /* preempted: still holds its resources */
};
enum sl_sched_job_state sl_sched_job_state(const struct sl_sched *s, int64_t id);
int sl_sched_pending_count(const struct sl_sched *s);
int sl_sched_running_count(const struct sl_sched *s);

/* ---- staging ---------------------------------------------------------- */

/* An executor that can queue a job behind a running one (Slurm) lets a
 * queue's next job wait there, on the running job's resources, so that it
 * starts the moment they free, with no decision in between. A staged job
 * is pending, but no pass places it: its predecessor's end either hands
 * it the predecessor's placement (sl_sched_job_handover) or sends it back
 * to its place in line (sl_sched_job_unstage; also what removing or
 * requeueing the predecessor does). docs/decisions/0010. */
struct sl_sched_stage {
    int64_t job_id;               /* pending, now staged */
    int64_t after;                /* running: its predecessor */
};

/* Stage what a pass at 'now_ms' would hand over anyway, up to 'max'
 * pairs in out[], marked staged; returns how many. A job is staged only
 * when the pending jobs that are not staged all wait in one bucket (one
 * queue, user and priority class: no other job could claim the resources
 * when they free), in that bucket's order, each behind a running job of
 * the same bucket with the same one-task request that has no successor
 * and is not terminating, on a node that takes work. */
int sl_sched_stage_pick(struct sl_sched *s, int64_t now_ms, struct sl_sched_stage *out,
                        int max);
/* Whether staged jobs have lost the ground they were staged on: some job
 * of another bucket now waits, and would have a claim on what they wait
 * for (the caller revokes them: sl_executor_revoke). */
bool sl_sched_stage_contested(const struct sl_sched *s);
/* Staged job 'id' goes back to its place in line. -ENOENT, -EINVAL when
 * it is not staged. */
int sl_sched_job_unstage(struct sl_sched *s, int64_t id);
/* Running job 'id' ended and its staged successor runs on its placement
 * from 'now_ms': 'id' is forgotten (as sl_sched_job_remove). Returns the
 * successor's id, -ENOENT (no such job, or no successor) or -EINVAL. */
int64_t sl_sched_job_handover(struct sl_sched *s, int64_t id, int64_t now_ms);
/* The staged successor of running job 'id' (0 = none). */
int64_t sl_sched_job_successor(const struct sl_sched *s, int64_t id);
/* The predecessor of staged job 'id' (0 = not staged). */
int64_t sl_sched_job_staged_after(const struct sl_sched *s, int64_t id);

/* ---- passes ----------------------------------------------------------- */

enum sl_preempt_why {
    SL_PREEMPT_PRIORITY,          /* a higher-priority job of the same queue */
    SL_PREEMPT_RECLAIM,           /* the preemptor's queue takes back its
                                     nominal quota from a borrower */
    SL_PREEMPT_OPPORTUNISTIC,     /* the victim ran on idle capacity */
};

struct sl_sched_start {
    int64_t job_id;
    int ntasks;
    struct sl_sched_task_place *tasks; /* ntasks entries, in the result's
                                          task_pool */
};

struct sl_sched_preempt {
    int64_t job_id;               /* the victim: checkpoint signal, grace, kill,
                                     then sl_sched_job_requeue */
    int64_t for_job;              /* the preemptor */
    enum sl_preempt_why why;
};

struct sl_sched_result {
    struct sl_sched_start *starts;
    int nstarts;
    struct sl_sched_preempt *preempts;
    int npreempts;
    int64_t wake_ms;              /* when a pass could next change something
                                     without any event (a backoff ending, a
                                     victim's protection running out); 0 =
                                     nothing scheduled */
    int examined;                 /* jobs looked at */
    struct sl_sched_task_place *task_pool; /* where the starts' tasks lie */
};

/* Run one pass at 'now_ms'. With 'new_only', only the jobs added since the
 * last pass are considered (nothing was freed; the reservations of the last
 * full pass hold). Every start is applied to the scheduler's state at once
 * (the job is running); every preempted job is terminating. Returns 0 and
 * fills 'out' (sl_sched_result_fini), or -ENOMEM with the state as it was. */
int sl_sched_pass(struct sl_sched *s, int64_t now_ms, bool new_only,
                  struct sl_sched_result *out);
void sl_sched_result_fini(struct sl_sched_result *out);

/* Place job 'j' now, outside any queue and quota, as the fill simulator
 * does: the job runs at once if it fits (returns 1, 'tasks' filled with
 * j->tasks entries) or is not added at all (returns 0). */
int sl_sched_place_now(struct sl_sched *s, const struct sl_sched_job_spec *j,
                       struct sl_sched_task_place *tasks);

/* FGD's typical tasks, set by the caller (the fill simulator). Turns off
 * learning them. */
struct sl_sched_typical {
    int64_t cpu_milli;
    int gpus;                     /* per task: whole GPUs, or 1 with milli */
    int gpu_milli;                /* per GPU */
    uint32_t models;              /* bit per model id; 0 = any */
    double weight;
};
int sl_sched_set_typical(struct sl_sched *s, const struct sl_sched_typical *t,
                         int n);
/* Fragmented and idle GPU milli over the cluster under FGD's model. */
void sl_sched_frag(const struct sl_sched *s, double *frag_milli,
                   double *idle_milli);

/* ---- explanations and statistics -------------------------------------- */

/* One line on why pending job 'id' waits ("" when it is not pending).
 * Returns 0 or -ENOENT. */
int sl_sched_reason(const struct sl_sched *s, int64_t id, int64_t now_ms,
                    char *buf, size_t size);
/* The structured explanation of job 'id' as a JSON object appended to 'b':
 * state, queue position, each blocking constraint with its numbers, the
 * estimated start, and what would make it run (docs/scheduler.md). Returns
 * 0, -ENOENT, or -ENOMEM. Computed from the current state. */
int sl_sched_explain(struct sl_sched *s, int64_t id, int64_t now_ms,
                     struct sl_buf *b);

struct sl_sched_queue_stats {
    const char *name, *team, *cohort; /* borrowed; cohort "" = none */
    struct sl_sched_res nominal;  /* as set; -1 = none */
    struct sl_sched_res used;     /* held by running jobs (not opportunistic) */
    struct sl_sched_res borrowed; /* used beyond nominal */
    struct sl_sched_res lent;     /* of its unused nominal, in use by others */
    struct sl_sched_res opportunistic; /* held by opportunistic jobs */
    int pending, running;
    double share;                 /* weighted dominant share, with history */
};
int sl_sched_queue_stats(struct sl_sched *s, int queue, int64_t now_ms,
                         struct sl_sched_queue_stats *st);

#endif
