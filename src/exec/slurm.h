/*
 * slurm.h - what the Slurm executor (slurm.c) reads of Slurm's answers and
 * writes for it: pure functions, unit-tested on recorded output
 * (tests/unit/test_slurm.c), so that the executor's I/O is the only part
 * that needs a cluster.
 *
 * Slurm 22.05's one-line forms are read: `scontrol show node -o`,
 * `scontrol show job -d -o` (one line per job, or per component of a
 * heterogeneous job), and `squeue -h -t all -O` with the fields of
 * SL_SLURM_SQUEUE_FORMAT. A node's GPUs are
 * GRES of one type per index ("gpu:g3:1", see docs/slurm.md), a fraction
 * of GPU i is shards of type gi, its GPU model and topology domain are
 * node features "gpu_<MODEL>" and "domain_<NAME>".
 *
 * No state; thread-safe.
 */
#ifndef SL_SLURM_H
#define SL_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "../util/buf.h"
#include "inventory.h"

#define SL_SLURM_SHARDS 1000          /* shards per GPU: a fraction is exact */
/* Where Slurm's tools and library read slurm.conf without SLURM_CONF
 * (Debian's build; configless when it is missing) */
#define SL_SLURM_DEFAULT_CONF "/etc/slurm/slurm.conf"
#define SL_SLURM_FEATURE_MODEL "gpu_"
#define SL_SLURM_FEATURE_DOMAIN "domain_"

/* One node of `scontrol show node -o`. 'partitions' is its comma list. */
struct sl_slurm_node {
    struct sl_node_info info;     /* gpus points into 'gpus' */
    struct sl_gpu_info gpus[SL_EXEC_MAX_GPUS];
    char partitions[256];
};

/* Read one line of `scontrol show node -o`. The GPUs are the typed GRES
 * gpu:gN (index N); untyped GPUs cannot be placed exactly and are left out,
 * said in info.reason. Returns 0 or -EINVAL (not a node line). */
int sl_slurm_parse_node(const char *line, struct sl_slurm_node *out);

/* Whether comma list 'list' holds 'item'. */
bool sl_slurm_list_has(const char *list, const char *item);
/* Whether comma lists 'a' and 'b' have an item in common. */
bool sl_slurm_lists_meet(const char *a, const char *b);

/* The state of one job (or component) of `scontrol show job -d -o`. */
struct sl_slurm_place {
    char node[64];
    int ngpus;                    /* whole GPUs, by index */
    int gpus[SL_EXEC_MAX_GPUS];
    int nshards;                  /* GPUs it holds shards of */
    int shard_gpu[SL_EXEC_MAX_GPUS];
    int shards[SL_EXEC_MAX_GPUS]; /* how many of shard_gpu[i] */
};

struct sl_slurm_job {
    uint64_t id;                  /* JobId */
    int het_offset;               /* HetJobOffset; 0 for a plain job */
    char name[128];               /* JobName */
    char state[32];               /* JobState: PENDING, RUNNING, ... */
    char reason[128];             /* Reason */
    int exit_code;                /* from ExitCode=a:b: 128 + b when b,
                                     else a */
    int64_t start_ms, end_ms;     /* StartTime and EndTime (local time, as
                                     scontrol prints them) in ms since the
                                     epoch once the job runs or ran; 0 while
                                     it waits (StartTime is then Slurm's
                                     guess), while it runs (EndTime its
                                     limit) and when Slurm says Unknown */
    int nplaces;                  /* from the Nodes= / GRES= details */
    struct sl_slurm_place places[8];
};

/* Read one line of `scontrol show job -d -o`. Returns 0 or -EINVAL. */
int sl_slurm_parse_job(const char *line, struct sl_slurm_job *out);

/* The squeue fields the executor polls, in this order, each ended by '|'
 * (the reason last: it may hold spaces). */
#define SL_SLURM_SQUEUE_FORMAT \
    "JobID:|,HetJobID:|,HetJobOffset:|,State:|,exit_code:|,StartTime:|,EndTime:|,Reason:"

/* Read one line of `squeue -h -O SL_SLURM_SQUEUE_FORMAT`: a job, or one
 * component of a heterogeneous job (then 'id' is the job's, HetJobID, as
 * sbatch answered it, and 'het_offset' the component's). exit_code is
 * read from squeue's wait status; the times as in sl_slurm_parse_job;
 * no places. Returns 0 or -EINVAL. */
int sl_slurm_parse_squeue(const char *line, struct sl_slurm_job *out);

enum sl_slurm_phase {
    SL_SLURM_WAITING,             /* PENDING, CONFIGURING, REQUEUED, ... */
    SL_SLURM_RUNNING,             /* RUNNING, COMPLETING, SUSPENDED */
    SL_SLURM_ENDED,               /* COMPLETED, FAILED, CANCELLED, TIMEOUT,
                                     OUT_OF_MEMORY, DEADLINE: an exit code */
    SL_SLURM_LOST,                /* NODE_FAIL, BOOT_FAIL, PREEMPTED,
                                     REVOKED: no exit code of the task */
};

/* What a JobState means to the executor. */
enum sl_slurm_phase sl_slurm_phase(const char *state);

/* Whether an allocation on one node is what was decided: the same node,
 * the same whole GPUs and the same shards of the same GPUs, in any order.
 * Returns 0, or -EINVAL with 'why' (may be NULL) saying what differs. */
int sl_slurm_check_place(const struct sl_slurm_place *got, const struct sl_slurm_place *want,
                         char *why, size_t why_size);

/* What `scontrol show config` says of how Slurm confines a job: its task
 * plugin list (TaskPlugin) and cgroup.conf's Constrain* settings, which
 * Slurm 22.05 prints in the same answer. */
struct sl_slurm_confine {
    bool task_cgroup;             /* TaskPlugin holds task/cgroup */
    bool cores;                   /* ConstrainCores = yes */
    bool ram;                     /* ConstrainRAMSpace = yes */
    bool devices;                 /* ConstrainDevices = yes */
};

/* Read the answer of `scontrol show config`. Keys it lacks read as "no".
 * Returns 0, or -EINVAL when it has no TaskPlugin line (not that answer). */
int sl_slurm_parse_confine(const char *text, struct sl_slurm_confine *out);

/* Append 's' to 'b' quoted for a POSIX shell (single quotes). */
void sl_slurm_shell_quote(struct sl_buf *b, const char *s);

#endif
