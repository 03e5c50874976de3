/*
 * sched_int.h - what the scheduler's modules share: its state (struct
 * sl_sched), jobs, buckets, queues and the state of one pass, and the
 * functions one module calls in another. Not a public interface: only the
 * files of src/sched/ include it; everything else uses sched.h.
 *
 * The modules, in the order a job meets them:
 *   sched.c     lifecycle, settings, GPU models and nodes
 *   queues.c    priority classes, cohorts, queues, users, manifests
 *   jobs.c      buckets, adding, stopping, requeueing and removing jobs,
 *               the run lists
 *   typical.c   FGD's typical tasks, learnt from the jobs submitted
 *   share.c     usage, decayed history, fair shares; charging a job
 *   quota.c     admission by quota: nominal, borrowing, cohort, per user,
 *               per GPU model
 *   place.c     placing a whole job: gangs, topology, fill mode
 *   pass.c      the pass: queue order, considering a job, starting it
 *   preempt.c   victim searches (trials on the live cluster), preempting
 *   backfill.c  reservations for blocked jobs and the holds that keep them
 *   runnable.c  whether a job could ever run: the empty cluster, the most
 *               its queue may hold
 *   explain.c   reasons, explanations, queue statistics
 *   cluster.c, policy.c  the placement engine (cluster.h)
 *
 * Pending jobs live in buckets, one per (queue, user, priority class), each
 * a list in submit order; a queue's next job is the head of the bucket with
 * the highest priority, then the lowest user share, then the earliest
 * submit time. A pass orders the queues themselves in a heap by that head's
 * priority, then the queue's weighted dominant share, then submit time.
 *
 * Invariants:
 *  - a job is in s->jobs exactly while pending, running or terminating;
 *    pending jobs are in exactly one bucket, others in s->run;
 *  - queue and user usage equal the sum of the charges of their running and
 *    terminating jobs; node free amounts equal capacity minus the places of
 *    those jobs, minus holds during a pass only.
 */
#ifndef SL_SCHED_INT_H
#define SL_SCHED_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../util/imap.h"
#include "cluster.h"
#include "sched.h"

#define NDIMS SL_SCHED_NDIMS
#define NSHARE 3 /* fair-share dimensions: CPU, memory, weighted GPU */
#define INF_MS INT64_MAX

enum jstate { J_PENDING = 1, J_RUNNING, J_TERMINATING };

/* What stopped a pending job in the last pass that looked at it. */
enum blocker {
    B_NEW,          /* not looked at yet */
    B_BACKOFF,      /* retry backoff */
    B_QUOTA,        /* its queue's nominal + borrowing limit */
    B_COHORT,       /* the cohort has nothing left to lend */
    B_USER,         /* the per-user limit of its queue */
    B_MODEL_QUOTA,  /* no allowed GPU model has quota left */
    B_NODES,        /* no placement: capacity, models, topology */
    B_RESERVED,     /* it fits only on resources reserved for another job */
    B_PREEMPTING,   /* waiting for the jobs it preempted to stop */
    B_INVALID,      /* a request no node can ever satisfy */
    B_FIFO,         /* strict FIFO: behind a blocked job of its queue */
    B_WAIT,         /* not eligible: its dependencies (sl_sched_job_wait) */
};

struct hist {       /* decayed usage: exponential average of allocation */
    double h[NSHARE];
    int64_t t_ms;   /* when h was last brought up to date */
};

struct job {
    int64_t id;
    int64_t submit_ms, not_before_ms;
    int64_t start_ms;             /* running: when it started */
    int64_t order_ms;             /* pending: when it was granted victims
                                     (0 = never); running: its age for
                                     victim order, that moment or its start */
    int64_t max_runtime_ms;       /* 0 = unknown */
    int64_t for_job;              /* terminating: the preemptor */
    struct cl_shape shape;        /* one task */
    int32_t tasks;
    int16_t queue, pclass;
    int32_t user;
    int32_t qu;                   /* index into s->qus */
    uint8_t topology;
    uint8_t state;                /* enum jstate */
    uint8_t blocker;              /* enum blocker, pending */
    uint8_t opportunistic;        /* running: charged as opportunistic */
    uint8_t claimed;              /* pending: granted victims; its request
                                     is in its queue's 'claimed' */
    int16_t nvictims;             /* pending: victims still terminating */
    int16_t tasks_fit;            /* pending: tasks that fitted last time */
    int32_t run_idx;              /* running: index in s->run */
    uint64_t gen;                 /* the pass count when it was added */
    uint64_t seen;                /* the last pass that considered it, + 1 */
    int64_t resv_at_ms;           /* pending: its reservation's start, 0 = none */
    struct sl_sched_task_place *places;      /* running: 'tasks' entries */
    int64_t staged_after;         /* pending: staged behind this running
                                     job (in no bucket), 0 = not staged */
    int64_t successor;            /* running: the job staged behind it */
    uint8_t on_hold;              /* pending: held (in no bucket) until
                                     released (sl_sched_job_hold) */
    struct job *prev, *next;      /* pending: its bucket's list */
    struct bucket *bucket;        /* pending */
    char *wait;                   /* pending: why it is not eligible (its
                                     dependencies), owned; NULL = eligible */
    char *hold_note;              /* held: its reason in other words than
                                     the default (who may release it),
                                     owned; NULL = the default */
};

struct bucket {
    int queue, user, pclass;
    struct job *head, *tail;
    int count;
    struct job *cursor;           /* a pass's next job here */
};

struct qu {                       /* one user in one queue */
    int queue, user;
    int64_t used[NDIMS];          /* running, quota-charged */
    struct hist hist;
    double share;                 /* its share in the pass share_pass - 1 */
    uint64_t share_pass;          /* 0: not computed since its usage changed */
};

struct queue {
    char name[64], team[64];
    int cohort;                   /* index, -1 = none */
    double weight;
    struct sl_sched_res nominal, borrow, lend, ulimit;
    enum sl_preempt_within preempt_within;
    enum sl_reclaim reclaim;
    int64_t used[NDIMS];          /* running, quota-charged */
    int64_t opp[NDIMS];           /* running, opportunistic */
    int64_t claimed[NDIMS];       /* requests of its preemptors waiting for
                                     their victims to stop */
    struct hist hist;
    struct bucket **buckets;
    int nbuckets, buckets_cap;
    int npending, nrunning;
    int heap_pos;                 /* a pass's heap slot, -1 = out */
    double share;                 /* a pass's cached share */
};

struct cohort {
    char name[64];
    int *queues;
    int nqueues, cap;
};

struct pclass {
    char name[64];
    int value;
    bool preemptible, opportunistic;
    int64_t min_runtime_ms;
};

struct resv {                     /* a backfill reservation, or a
                                     preemptor's claim on its victims' room */
    int64_t job_id;
    int64_t at_ms;                /* when the job should start */
    int ntasks;
    struct sl_sched_task_place *places;      /* where (owned) */
};

struct hold {                     /* reserved resources held now */
    struct cl_shape shape;        /* CPU and memory held */
    struct sl_sched_task_place place;        /* GPUs held */
};

struct tshape {                   /* a task shape seen, for FGD's model */
    struct cl_shape shape;
    double weight;
};

struct sl_sched {
    struct sl_sched_config cfg;
    struct cl_cluster cl;
    double model_weight[SL_SCHED_MAX_MODELS];

    struct pclass classes[SL_SCHED_MAX_CLASSES];
    int nclasses;
    struct queue *queues;
    int nqueues, queues_cap;
    struct cohort *cohorts;
    int ncohorts, cohorts_cap;
    char **users;
    int nusers, users_cap;
    struct qu *qus;
    int nqus, qus_cap;
    struct sl_imap qu_index;      /* (queue+1)<<32 | (user+1) -> index+1 */

    struct sl_imap jobs;          /* id -> struct job * */
    struct sl_imap node_names;    /* hash of a node's name -> index + 1 */
    char **node_notes;            /* why node i takes no task (NULL: none) */
    int nnode_notes;
    int npending;                 /* staged ones included */
    int nstaged;                  /* pending, staged (in no bucket) */
    int nheld;                    /* pending, held (in no bucket) */
    struct job **run;             /* running and terminating jobs */
    int nrun, run_cap;
    struct job **byend;           /* running with maxRuntime, by end */
    int nbyend, byend_cap;
    int nrun_opp;                 /* of those, opportunistic */
    struct job **fresh;           /* added since the last pass */
    int nfresh, fresh_cap;
    uint64_t passes;

    struct resv *resv;            /* from the last full pass */
    int nresv, resv_cap;
    struct resv *nominees;        /* pending jobs that preempted others, with
                                     where they will run (at_ms unused) */
    int nnominees, nominees_cap;
    struct hold *holds;           /* reservations', applied during a pass */
    int nholds, holds_cap;
    struct hold *cholds;          /* nominees' claims, applied during a pass */
    int ncholds, cholds_cap;

    struct tshape *tshapes;       /* learnt typical tasks */
    int ntshapes, tshapes_cap;
    double tshape_total;
    int since_typical;            /* submissions since the model was set */
    bool typical_fixed;

    int64_t cap[NDIMS];           /* cluster capacity per dimension */
    int max_node_gpus;            /* the largest node's GPUs, CPU, memory */
    int64_t max_node_cpu, max_node_mem;
};

/* ---- the state of one pass (pass.c; preempt.c and backfill.c use it) -- */

#define PREEMPT_ATTEMPTS 16        /* victim searches per pass */
#define FAILED_MEMO 64

struct nofit {                    /* a request that fits nowhere now */
    struct cl_shape shape;        /* models: the allowed set, 0 = any */
    int tasks, topology;
};

struct pfail {                    /* a preemption search that failed */
    struct cl_shape shape;
    int tasks, queue, pclass;
    bool entitled;
};

struct release {                  /* a running job's expected end */
    int64_t at_ms;
    struct job *j;
};

struct pass {
    struct sl_sched *s;
    int64_t now;
    struct sl_sched_result *out;
    int starts_cap, preempts_cap;
    int pool_len, pool_cap;       /* out->task_pool */
    int *heap;                    /* queue indices */
    int nheap;
    struct job **head;            /* per queue: its next job this pass */
    struct nofit failed[FAILED_MEMO]; /* requests that fit nowhere now */
    int nfailed;
    struct pfail pfailed[PREEMPT_ATTEMPTS]; /* preemption searches that failed */
    int npfailed;
    struct release *rel;          /* running jobs by expected end */
    int nrel;
    bool rel_ready;               /* until a start changes them */
    struct cl_shape rfailed[FAILED_MEMO]; /* fit after no release */
    int nrfailed;
    /* a preemption trial's state (preempt.c, trial_begin) */
    uint32_t *touch_mark;         /* per node: touch_gen when touched */
    int *touched;                 /* the nodes the released victims ran on */
    int ntouched, touch_cap;
    uint32_t touch_gen;
    bool fits_now;                /* the preemptor fits the cluster as it is */
    const struct job *tjob;       /* the preemptor */
    struct cl_shape tshape;       /* its task, with the models it may use */
    int64_t troom;                /* its tasks the cluster could take */
    int *touched_cap;             /* ... each touched node, as it is now */
    int *touch_idx;               /* per node: its index in touched[] */
    uint32_t *dom_mark;           /* per domain: touch_gen when counted */
    int64_t *dom_room;            /* per domain: the preemptor's tasks it takes */
    int *doms, ndoms, dom_cap;    /* the domains counted */
    int nresv;                    /* reservations made this pass */
    int64_t resv_min_ms;          /* the earliest reservation's start */
    int preempts_left;
    struct cl_cluster scratch;    /* for reservations; nodes owned */
    bool scratch_ready;
    struct sl_sched_task_place *pl; /* scratch places, SL_MAX_TASKS */
    int rc;                       /* -ENOMEM seen */
};

/* Free what a pass allocated (its scratch cluster, places, releases,
 * trial notes); holds are not touched. */
void sl_sch_pass_free(struct pass *p);

/* ---- small helpers, inline: the pass calls them for every job ---------- */

/* Submit order: earlier submit time, then lower id. */
static inline bool job_before(const struct job *a, const struct job *b)
{
    return a->submit_ms < b->submit_ms || (a->submit_ms == b->submit_ms && a->id < b->id);
}

/* What job 'j' asks for in all, per quota dimension (no per-model part). */
/* One task's shape from a job spec: CPU, memory and GPUs (whole, or one
 * GPU's fraction); models as given in sp->models (names are the caller's). */
static inline void shape_of_spec(const struct sl_sched_job_spec *sp, struct cl_shape *sh)
{
    memset(sh, 0, sizeof(*sh));
    sh->cpu_milli = sp->cpu_milli;
    sh->mem_bytes = sp->mem_bytes;
    if (sp->gpus > 0) {
        sh->num_gpu = sp->gpus;
        sh->gpu_milli = CL_WHOLE;
    } else if (sp->gpu_milli > 0) {
        sh->num_gpu = 1;
        sh->gpu_milli = sp->gpu_milli;
    }
    sh->models = sp->models;
}

static inline void job_request(const struct job *j, int64_t req[NDIMS])
{
    memset(req, 0, sizeof(int64_t) * NDIMS);
    req[SL_DIM_CPU] = j->tasks * j->shape.cpu_milli;
    req[SL_DIM_MEM] = j->tasks * j->shape.mem_bytes;
    req[SL_DIM_GPU] = (int64_t)j->tasks * j->shape.num_gpu * j->shape.gpu_milli;
}

/* The pass should run again at 't' (a backoff ends, a victim's minimum
 * run time passes): the earliest such time after now. */
static inline void wake_at(struct pass *p, int64_t t)
{
    if (t > p->now && (!p->out->wake_ms || t < p->out->wake_ms))
        p->out->wake_ms = t;
}

/* The model mask to place with: quota's allowed models, or 0 (any) when
 * that is no restriction, or the job needs no GPU. */
static inline uint32_t placement_models(const struct sl_sched *s, const struct job *j,
                                        uint32_t quota_models)
{
    uint32_t all = s->cl.nmodels >= 32 ? UINT32_MAX : ((1u << s->cl.nmodels) - 1);

    if (j->shape.num_gpu == 0)
        return j->shape.models;
    if (!j->shape.models && (quota_models & all) == all)
        return 0;
    return quota_models;
}

/* Whether the pass may still give a reservation (backfill is on, it gave
 * fewer than the configured number, something runs): the test before
 * each call of sl_sch_reserve(), which most blocked jobs fail. */
static inline bool reservations_open(const struct pass *p)
{
    const struct sl_sched *s = p->s;

    return s->cfg.backfill && p->nresv < s->cfg.reservations && s->nrun;
}

/* ---- jobs.c ------------------------------------------------------------ */

void sl_sch_job_free(struct job *j);   /* NULL-safe */
/* Take pending job 'j' out of its bucket (a pass's cursor moves past it). */
void sl_sch_bucket_remove(struct job *j);
/* 'j' runs from 'start_ms' (its start_ms is set here): into s->run and,
 * with a maxRuntime, s->byend. Returns 0 or -ENOMEM (then unchanged). */
int sl_sch_run_add(struct sl_sched *s, struct job *j, int64_t start_ms);

/* ---- typical.c --------------------------------------------------------- */

/* Count 'tasks' tasks of shape 'sh' into the learnt model (unless the
 * typical tasks are fixed); now and then recompute the model. */
void sl_sch_typical_learn(struct sl_sched *s, const struct cl_shape *sh, int tasks);

/* ---- share.c ----------------------------------------------------------- */

double sl_sch_queue_share(const struct sl_sched *s, const struct queue *q,
                          int64_t now_ms);
double sl_sch_user_share(const struct sl_sched *s, const struct qu *u,
                         int64_t now_ms);
/* Set (on) or drop a preemptor's claim on its queue's nominal quota. */
void sl_sch_claim(struct sl_sched *s, struct job *j, bool on);
/* Add (sign 1) or remove (-1) a running job's charge, without history. */
void sl_sch_charge_raw(struct sl_sched *s, const struct job *j, int sign);
/* The same, its queue's and user's history first brought to 'now'. */
void sl_sch_charge(struct sl_sched *s, struct job *j, int sign, int64_t now);

/* ---- quota.c ----------------------------------------------------------- */

/* Why a job cannot be admitted by quota: the first dimension found short. */
struct quota_why {
    enum blocker what;            /* B_QUOTA, B_COHORT, B_USER, B_MODEL_QUOTA */
    int dim;
    int64_t need, limit, used;    /* in the dimension's unit */
};
/* Admission by quota. Returns true when admitted; *models receives the GPU
 * models the job may use by quota (bits; all models when unrestricted). */
bool sl_sch_quota_ok(const struct sl_sched *s, const struct job *j,
                     uint32_t *models, struct quota_why *why);

/* Every quota constraint that blocks 'j' (queue, cohort and user limit of
 * each resource; the GPU model quotas when none of those does), at most
 * 'max' in 'out'. Returns how many: 0 when it is admitted. */
int sl_sch_quota_blockers(const struct sl_sched *s, const struct job *j,
                          struct quota_why *out, int max);

/* ---- place.c ----------------------------------------------------------- */

/* Place every task of 'j' (shape with 'models') on cluster 'c': all tasks
 * or none. 'scan' uses no index (a scratch cluster). Returns true with the
 * places taken; else c is unchanged and *fit says how many tasks fitted. */
bool sl_sch_place_on(struct cl_cluster *c, const struct job *j, uint32_t models,
                     bool scan, struct sl_sched_task_place *pl, int *fit);

/* Whether 'j' could be placed now with 'models' (the pass's own search,
 * topology included), and how many of its tasks fit; nothing is taken. */
bool sl_sch_place_try(struct sl_sched *s, const struct job *j, uint32_t models, int *fit);

/* ---- preempt.c --------------------------------------------------------- */

/* Find victims whose going would let pending 'j' run, and preempt them
 * (into p->out). 'placement_failed': j was admitted by quota but not
 * placed. Returns true when it preempted. */
bool sl_sch_try_preempt(struct pass *p, struct job *j, bool placement_failed);
/* Room for a trial's notes of touched nodes (one mark per cluster node).
 * Returns 0 or -ENOMEM. */
int sl_sch_trial_room(struct pass *p);

/* ---- backfill.c -------------------------------------------------------- */

/* Give blocked job 'j' a reservation: when, by the running jobs'
 * maxRuntime, it could start, and hold now what it will need then.
 * Nothing when !reservations_open(p). */
void sl_sch_reserve(struct pass *p, struct job *j, uint32_t models);
/* The earliest moment pending 'j' (with 'models') would fit if the
 * running jobs ended by their maxRuntime (those without one never end)
 * and nothing else started: *at_ms, or 0 when no such moment exists.
 * Outside a pass; nothing changes. Returns 0 or -ENOMEM. */
int sl_sch_eta(struct sl_sched *s, struct job *j, uint32_t models, int64_t now_ms,
               int64_t *at_ms);
/* Forget the reservations (a full pass makes them anew). */
void sl_sch_resv_clear(struct sl_sched *s);
/* Load p->scratch, a copy of the live cluster without indexes. Returns 0
 * or -ENOMEM. */
int sl_sch_scratch_load(struct pass *p);
/* Hold what of place 'p' (a task of shape 'sh') is free now: for a
 * preemptor's claim ('claim') or a reservation. Returns 0 or -ENOMEM. */
int sl_sch_hold_add(struct sl_sched *s, bool claim, const struct cl_shape *sh,
                    const struct sl_sched_task_place *p);
void sl_sch_holds_release(struct sl_sched *s);
void sl_sch_cholds_release(struct sl_sched *s);
/* Hold, for each preemptor still waiting for its victims, what they have
 * freed already. */
void sl_sch_cholds_apply(struct sl_sched *s);
/* Hold what reservation 'r' needs that is free now. */
void sl_sch_holds_apply(struct sl_sched *s, const struct resv *r);

/* ---- explain.c --------------------------------------------------------- */

/* "cpu", "memory", "gpu", "gpu[A100]" */
const char *sl_sch_dim_name(const struct sl_sched *s, int dim, char *buf,
                            size_t size);
/* An amount of dimension 'dim' for people: "2.5 GPUs", "1 GPU of model
 * A100", "4 CPUs", "16Gi of memory"; returns buf. */
char *sl_sch_fmt_amount(const struct sl_sched *s, int dim, int64_t v, char *buf,
                        size_t size);
/* One task of 'j' for people: "2 GPUs of model A100|H100, 4 CPUs, 16Gi per
 * task". */
void sl_sch_fmt_task(const struct sl_sched *s, const struct job *j, char *buf, size_t size);

/* ---- runnable.c -------------------------------------------------------- */

/* Why 'j' can never run (sched.h, sl_sched_job_runnable), in 'buf' as
 * "cannot run: ...", with the spec field at fault in *field (may be NULL)
 * and -E2BIG (the cluster) or -EDQUOT (a limit) as the result; 0 when it
 * could run. 'schedulable_only' counts only the nodes that take work now. */
int sl_sch_cannot_run(const struct sl_sched *s, const struct job *j, bool schedulable_only,
                      char *buf, size_t size, const char **field);

#endif
