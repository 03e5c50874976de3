/*
 * schedint.h - the scheduler's internal state, shared by sched.c (state,
 * passes, preemption, backfill) and explain.c (reasons, explanations,
 * statistics). Not a public interface: see sched.h.
 *
 * Pending jobs live in buckets, one per (queue, user, priority class), each
 * a list in submit order; a queue's next job is the head of the bucket with
 * the highest priority, then the lowest user share, then the earliest
 * submit time. A pass orders the queues themselves in a heap by that head's
 * priority, then the queue's weighted dominant share, then submit time.
 */
#ifndef SL_SCHEDINT_H
#define SL_SCHEDINT_H

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
    struct job *prev, *next;      /* pending: its bucket's list */
    struct bucket *bucket;        /* pending */
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
    int npending;
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

/* sched.c */
void sched_hist_now(const struct sl_sched *s, struct hist *h, const int64_t *used,
                    int64_t now_ms, double out[NSHARE]);
double sched_queue_share(const struct sl_sched *s, const struct queue *q,
                         int64_t now_ms);
double sched_user_share(const struct sl_sched *s, const struct qu *u,
                        int64_t now_ms);
void sched_job_request(const struct job *j, int64_t req[NDIMS]);

/* Why a job cannot be admitted by quota: the first dimension found short. */
struct quota_why {
    enum blocker what;            /* B_QUOTA, B_COHORT, B_USER, B_MODEL_QUOTA */
    int dim;
    int64_t need, limit, used;    /* in the dimension's unit */
};
/* Admission by quota. Returns true when admitted; *models receives the GPU
 * models the job may use by quota (bits; all models when unrestricted). */
bool sched_quota_ok(const struct sl_sched *s, const struct job *j,
                    uint32_t *models, struct quota_why *why);

/* Every quota constraint that blocks 'j' (queue, cohort and user limit of
 * each resource; the GPU model quotas when none of those does), at most
 * 'max' in 'out'. Returns how many: 0 when it is admitted. */
int sched_quota_blockers(const struct sl_sched *s, const struct job *j,
                         struct quota_why *out, int max);

/* Whether 'j' could be placed now with 'models' (the pass's own search,
 * topology included), and how many of its tasks fit; nothing is taken. */
bool sched_place_try(struct sl_sched *s, const struct job *j, uint32_t models, int *fit);

/* explain.c */
const char *sched_dim_name(const struct sl_sched *s, int dim, char *buf,
                           size_t size);

#endif
