/*
 * sched.h - the scheduler: takes a snapshot of cluster state and a clock,
 * returns decisions as data. No I/O, no global state, no allocation that
 * outlives the call except the result the caller frees.
 *
 * This release: priority (higher first), then submit time (earlier first),
 * then job id; each pending job is placed when its whole gang fits
 * (all tasks or none), else it gets a reason and the next job is tried.
 * The full policy set (quotas, DRF, preemption, backfill, fgd) comes later
 * behind the same interface.
 *
 * Thread-safe: touches only its arguments.
 */
#ifndef SL_SCHED_H
#define SL_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#define SL_SCHED_MAX_GPUS 64

struct sl_sched_gpu {
    const char *model;            /* borrowed */
    int milli_free;               /* 0..1000 */
};

struct sl_sched_node {
    const char *name;             /* borrowed */
    const char *domain;           /* NVLink domain / rack; borrowed; may be "" */
    bool schedulable;
    int64_t cpu_milli_free;
    int64_t mem_bytes_free;
    int ngpus;
    struct sl_sched_gpu gpus[SL_SCHED_MAX_GPUS];
};

struct sl_sched_job {
    int64_t id;
    int priority;
    int64_t submit_ms;
    int64_t not_before_ms;        /* retry backoff; 0 = now */
    int tasks;
    int gpus;                     /* whole GPUs per task */
    int gpu_milli;                /* fraction of one GPU per task (gpus == 0) */
    const char *const *gpu_models;/* borrowed; NULL-terminated; NULL = any */
    int64_t cpu_milli;            /* per task */
    int64_t mem_bytes;            /* per task */
    int topology;                 /* enum sl_topology */
};

struct sl_sched_state {
    struct sl_sched_node *nodes;  /* the scheduler updates free amounts in
                                     place as it places, so the caller's
                                     snapshot reflects its decisions */
    int nnodes;
    const struct sl_sched_job *jobs; /* pending jobs, any order */
    int njobs;
};

struct sl_sched_task_place {
    int node;                     /* index into state.nodes */
    int ngpus;
    int gpus[SL_SCHED_MAX_GPUS];  /* device indices on that node */
    int gpu_milli;                /* milli taken on each listed GPU */
};

struct sl_sched_decision {
    int64_t job_id;
    int ntasks;
    struct sl_sched_task_place *tasks; /* ntasks entries, owned by result */
};

struct sl_sched_wait {
    int64_t job_id;
    char reason[160];             /* e.g. "resources: needs 2 GPU(s) of model
                                     H100 per task, largest free is 1 (3 nodes
                                     rejected: 2 gpus, 1 memory)" */
    int position;                 /* 1-based position in scheduling order */
};

struct sl_sched_result {
    struct sl_sched_decision *starts;
    int nstarts;
    struct sl_sched_wait *waits;   /* one per job left pending */
    int nwaits;
};

/* Run one scheduling pass at time 'now_ms'. Returns 0 and fills 'out' (free
 * with sl_sched_result_fini), or -ENOMEM with 'out' empty and the nodes
 * unchanged. */
int sl_sched_run(struct sl_sched_state *st, int64_t now_ms,
                 struct sl_sched_result *out);
void sl_sched_result_fini(struct sl_sched_result *out);

#endif
