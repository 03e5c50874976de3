/*
 * executor.h - what carries out the scheduler's decisions: an operations
 * table behind an opaque handle. The engine starts placed jobs, signals
 * them, learns of their ends through events, re-adopts them after a
 * restart and releases them once their end is recorded; it never asks
 * which executor it has, only what it can do (struct sl_exec_caps).
 *
 * Executors (a table in executor.c; a new one is a new row):
 *   local      each task a process tree on this machine (local.c over the
 *              process runner of exec.h), as its Unix account, in a cgroup
 *              with limits and GPU device rules, with its network profile;
 *   simulated  nothing runs: a task "runs" for its label sim-duration and
 *              ends with code 0 (scheduler load tests; jobs say so);
 *   slurm      a real Slurm cluster runs each placement exactly (slurm.c;
 *              docs/slurm.md).
 * docs/executor.md says what a Slurm or Kubernetes executor must do.
 *
 * Protocol, in the engine's words:
 *   - start(job) once the transaction that made the job Running has
 *     committed; every task is then RUNNING, or FAILED (it never started:
 *     the engine stops the gang and the attempt fails);
 *   - events(now) after the wake descriptor became readable or when
 *     next_event_ms is due: each task's end, once (EXITED with its code,
 *     or LOST: gone without one);
 *   - signal(job, sig): every task of the job still running;
 *   - adopt(job) at start-up for a job stored Running: each task RUNNING
 *     (its end comes as an event), EXITED (ended while the daemon was down)
 *     or GONE (no trace of it);
 *   - release(job) once the transaction that records the job's end has
 *     committed: records, cgroups and other remains go (a crash before
 *     that commit finds them again on the next start).
 * A job is named by (job_id, attempt) throughout.
 *
 * Not thread-safe: the engine's thread owns a struct sl_executor; only
 * sl_executor_log_path may be called from any thread.
 */
#ifndef SL_EXECUTOR_H
#define SL_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/spec.h"
#include "exec.h"
#include "inventory.h"

struct sl_executor;

/* What an executor can do and enforce. Texts say why not, when not. */
struct sl_exec_caps {
    bool runs_commands;           /* false: a job's command is never run
                                     (the simulated executor) */
    bool runs_as_accounts;        /* tasks run as Unix accounts: a user's
                                     mapping (spec.unixUser) or the default
                                     job account, never the daemon's */
    bool accounts_here;           /* and those accounts are this
                                     machine's (getpwnam here says whether
                                     one exists) */
    bool job_tokens;              /* tasks can reach the API with a token
                                     of their own (SLUICE_TOKEN) */
    bool limits;                  /* CPU, memory and pids limits */
    char limits_why[160];
    bool devices;                 /* a task opens only the GPUs it was
                                     given (on nodes whose devices_here) */
    char devices_why[192];
    char devices_mech[32];        /* "cgroup1 devices", "cgroup2 bpf",
                                     "none" */
    bool netns;                   /* the isolated network profile */
    char netns_why[160];
    bool images;                  /* runs the job's image (a container
                                     runtime); false: the command runs on
                                     the host and the image is governed
                                     and recorded only */
    bool interactive;             /* runs spec.interactive jobs: a task
                                     on a pseudo-terminal that a client
                                     attaches to (sl_executor_attach_path) */
    char interactive_why[160];    /* why not, when not */
    bool stages;                  /* can queue a job behind a running one,
                                     on its resources, to start the moment
                                     that one completes (sl_executor_stage;
                                     Slurm: a pinned job with
                                     --dependency=afterok) */
};

/* Where one task of a job was placed: a node of the executor's inventory
 * and that node's GPUs. */
struct sl_exec_place {
    int node;                     /* index in the inventory */
    int ngpus;
    int gpus[SL_EXEC_MAX_GPUS];   /* GPU indices on the node */
    int gpu_milli;                /* per GPU; 1000 = whole */
};

/* A placed job to start or re-adopt. Everything is borrowed for the call. */
struct sl_exec_job {
    int64_t job_id;
    int attempt;                  /* 0-based */
    const struct sl_job_spec *spec; /* command, env, resources, network,
                                     checkpoint, labels */
    char *const *env;             /* the environment beyond the executor's
                                     own variables: the spec's env and
                                     SLUICE_TOKEN/SLUICE_SERVER when the job
                                     has a token; NULL-terminated */
    const struct sl_exec_dataset *datasets;
    int ndatasets;
    const char *unix_user;        /* who the tasks run as (caps
                                     runs_as_accounts) */
    const char *allow_daemon_user; /* the one account allowed the daemon's
                                     uid; "" = none */
    int64_t log_cap_bytes;        /* per task log */
    int ntasks;                   /* spec->tasks */
    const struct sl_exec_place *tasks; /* ntasks entries */
    int64_t after_job;            /* stage, adopt: the running job it is
                                     staged behind (0 = none) */
    int after_attempt;
};

enum sl_exec_task_status {
    SL_EXEC_TASK_RUNNING,
    SL_EXEC_TASK_EXITED,          /* exit_code holds its code (a signal N:
                                     128 + N) */
    SL_EXEC_TASK_GONE,            /* adopt: no trace of it (Lost) */
    SL_EXEC_TASK_FAILED,          /* start: it never started; 'error' says
                                     why */
};

/* One task as start or adopt leaves it. */
struct sl_exec_task_state {
    enum sl_exec_task_status status;
    int exit_code;
    char error[192];              /* FAILED: why */
    char note[192];               /* what the job should say of how it
                                     runs ("" = nothing), e.g. that its
                                     command is not run */
    bool limits_enforced;
    char limits_note[160];        /* why not, when not */
    int network_enforced;         /* enum sl_exec_net in force */
    char network_note[160];       /* why the asked profile is not in force */
    bool gpus_enforced;           /* the task can open no GPU but its own */
    char gpus_note[256];          /* why not, when not */
};

enum sl_exec_event_kind {
    SL_EXEC_EV_EXITED,            /* a task ended with exit_code */
    SL_EXEC_EV_LOST,              /* a task is gone without an exit code */
    SL_EXEC_EV_NODES,             /* the nodes changed (a state, a new
                                     node): ask sl_executor_nodes again */
    SL_EXEC_EV_UNSTAGED,          /* a staged job will not start behind its
                                     predecessor (that one did not complete
                                     cleanly, was stopped, or the staging
                                     failed): it is pending again; comes
                                     before the predecessor's end */
};

struct sl_exec_event {
    enum sl_exec_event_kind kind;
    int64_t job_id;               /* 0 for SL_EXEC_EV_NODES */
    int attempt;
    int task;
    int exit_code;                /* EXITED */
    bool timed_out;               /* EXITED: the executor's own time limit
                                     ended it (Slurm's TIMEOUT): the job
                                     ends Timeout */
    char note[160];               /* what the job should say of it ("" =
                                     nothing), e.g. why its submission
                                     failed or that Slurm lost it */
    int64_t start_ms, end_ms;     /* EXITED, LOST: when the task began (at
                                     the earliest) and by when it had ended,
                                     as the engine that ran it reports them
                                     (ms since the epoch), for the usage
                                     ledger, which keeps them within the
                                     decision and the event's arrival; 0 =
                                     unknown: those two count instead */
};

/* The operations an executor implements; the functions below call them.
 * Contracts are those of the functions. */
struct sl_executor_ops {
    const char *name;
    void (*caps)(const struct sl_executor *x, struct sl_exec_caps *out);
    int (*nodes)(struct sl_executor *x, struct sl_inventory *out, struct sl_error *err);
    int (*start)(struct sl_executor *x, const struct sl_exec_job *job,
                 struct sl_exec_task_state *out);
    int (*signal)(struct sl_executor *x, int64_t job_id, int attempt, int sig);
    int (*adopt)(struct sl_executor *x, const struct sl_exec_job *job,
                 struct sl_exec_task_state *out);
    int (*events)(struct sl_executor *x, int64_t now_ms, struct sl_exec_event *ev, int max);
    int64_t (*next_event_ms)(const struct sl_executor *x);
    int (*wake_fd)(const struct sl_executor *x);
    void (*release)(struct sl_executor *x, int64_t job_id, int attempt);
    int (*stage)(struct sl_executor *x, const struct sl_exec_job *job); /* NULL: cannot */
    void (*unstage)(struct sl_executor *x, int64_t job_id, int attempt);
    void (*revoke)(struct sl_executor *x, int64_t job_id, int attempt);
    int (*log_path)(const struct sl_executor *x, int64_t job_id, int task, char *buf,
                    size_t size);
    int (*attach_path)(const struct sl_executor *x, int64_t job_id, int task, int attempt,
                       char *buf, size_t size); /* NULL: no interactive jobs */
    void (*destroy)(struct sl_executor *x);
};

/* Every executor begins with this (its ops). */
struct sl_executor {
    const struct sl_executor_ops *ops;
};

struct sl_executor_config {
    const char *kind;             /* a row of the table: "local",
                                     "simulated" */
    const char *data_dir;         /* records (DATA/run) and task logs
                                     (DATA/logs) */
    const char *fake_gpus;        /* this host's GPUs as declared
                                     (--fake-gpus); NULL = discover */
    const struct sl_inventory *nodes; /* the nodes to offer instead of this
                                     host (--fake-nodes: their tasks still
                                     run here, without device isolation);
                                     NULL = this host. Copied */
    int64_t (*now_ms)(void);      /* the wall clock; NULL = sl_now_ms. Tests
                                     inject their own */
    int64_t detach_grace_ms;      /* an interactive task's terminal is hung
                                     up after this long with nobody attached
                                     (sl_exec_task.detach_grace_ms) */
    /* slurm (docs/slurm.md) */
    const char *slurm_partition;  /* the partition Sluice places in */
    const char *slurm_output_dir; /* shared: the tasks' output, written by
                                     the job's account, read here */
    const char *slurm_bin;        /* where sbatch, squeue, scontrol and
                                     scancel are; NULL = PATH */
    const char *slurm_api;        /* how jobs are submitted and checked:
                                     "auto" (NULL), "library" (Slurm's C
                                     API) or "tools" (sbatch, scontrol) */
    int64_t slurm_poll_ms;        /* how often Slurm is asked; 0 = 1 s */
    bool slurm_stage;             /* offer staging (caps.stages) */
    const char *slurm_jobcomp;    /* Slurm's jobcomp/filetxt file (JobCompLoc),
                                     read for a job Slurm no longer knows;
                                     NULL = none */
};

/* Whether 'kind' names an executor. */
bool sl_executor_kind_valid(const char *kind);
/* The executors' names joined by ", " ("local, simulated") in 'buf', for
 * messages; truncated to fit. Returns buf. */
const char *sl_executor_kinds(char *buf, size_t size);

/* Create the executor of cfg->kind. Returns NULL with 'err' filled (an
 * unknown kind, a --fake-gpus spec that is bad, a host that cannot be
 * probed). */
struct sl_executor *sl_executor_create(const struct sl_executor_config *cfg,
                                       struct sl_error *err);
/* NULL-safe; preserves errno. Running tasks keep running (a restarted
 * daemon re-adopts them). */
void sl_executor_destroy(struct sl_executor *x);

const char *sl_executor_name(const struct sl_executor *x);
void sl_executor_caps(const struct sl_executor *x, struct sl_exec_caps *out);

/* The nodes it offers now, appended to 'out' (empty on entry). Returns 0
 * or -errno with 'err' filled; on failure 'out' holds nothing to free. */
int sl_executor_nodes(struct sl_executor *x, struct sl_inventory *out, struct sl_error *err);

/* Start every task of a placed job. Fills out[0..ntasks). Returns 0 when
 * every task is RUNNING; -errno when at least one is FAILED (the others
 * may be running: the engine stops them). A start never blocks for long:
 * the task runs on its own. */
int sl_executor_start(struct sl_executor *x, const struct sl_exec_job *job,
                      struct sl_exec_task_state *out);

/* Send 'sig' to every task of the job that still runs (SIGKILL also to
 * whatever the task left behind in its cgroup). Returns 0, or -ESRCH when
 * nothing of it runs. */
int sl_executor_signal(struct sl_executor *x, int64_t job_id, int attempt, int sig);

/* After a restart: take a job stored Running back. Fills out[0..ntasks).
 * A job stored staged (job->after_job set) that has not started is
 * withdrawn and GONE; one that started is adopted as any other.
 * Returns 0 or -ENOMEM. */
int sl_executor_adopt(struct sl_executor *x, const struct sl_exec_job *job,
                      struct sl_exec_task_state *out);

/* Tasks that ended since the last call, at most 'max' (call again while
 * it returns 'max'). 'now_ms' is the wall clock. Each task's end is
 * reported once. Returns how many. */
int sl_executor_events(struct sl_executor *x, int64_t now_ms, struct sl_exec_event *ev,
                       int max);

/* When (wall ms) events may next have something without the wake
 * descriptor becoming readable: a simulated task's end, the next poll of
 * adopted tasks. INT64_MAX = only on a wake-up. */
int64_t sl_executor_next_event_ms(const struct sl_executor *x);

/* A descriptor that becomes readable when events may have something
 * (reset by sl_executor_events), or -1. */
int sl_executor_wake_fd(const struct sl_executor *x);

/* Forget a job whose end is recorded: its records and remains go. */
void sl_executor_release(struct sl_executor *x, int64_t job_id, int attempt);

/* Stage pending job 'job' (its placement: that of running job
 * job->after_job, attempt after_attempt, or part of it) to start the
 * moment that one completes with every task's exit code 0 and was not
 * signalled; the engine still counts it pending. When the predecessor
 * ends, an SL_EXEC_EV_UNSTAGED for the job comes before the
 * predecessor's end if it will not start; otherwise it has started, and
 * sl_executor_start of the same attempt takes it over. Returns 0,
 * -ENOTSUP (caps.stages false), -EAGAIN (the predecessor cannot take a
 * successor now: not yet submitted, ending, or has one), -EINVAL or
 * -ENOMEM; a submission that fails later comes as SL_EXEC_EV_UNSTAGED. */
int sl_executor_stage(struct sl_executor *x, const struct sl_exec_job *job);

/* Withdraw a staged job (the engine no longer wants it there): it does
 * not start, or is stopped if it just did; no event follows. */
void sl_executor_unstage(struct sl_executor *x, int64_t job_id, int attempt);

/* Ask for a staged job back (another job now has a claim on what it waits
 * for): when it has not started, it will not, and an SL_EXEC_EV_UNSTAGED
 * follows; when its predecessor completed first, it runs and is handed
 * over at that one's end as usual. */
void sl_executor_revoke(struct sl_executor *x, int64_t job_id, int attempt);

/* Where task 'task' of job 'job_id' writes its output (all attempts
 * append to one file). Returns 0 or -ENOSPC; -ENOENT when the executor
 * keeps no log. Thread-safe: it reads only what creation set. */
int sl_executor_log_path(const struct sl_executor *x, int64_t job_id, int task, char *buf,
                         size_t size);

/* The attach socket (src/exec/attach.h) of task 'task' of attempt
 * 'attempt' of interactive job 'job_id'. Returns 0, -ENOTSUP when the
 * executor runs no interactive jobs (caps.interactive false), -ENOSPC.
 * Thread-safe: it reads only what creation set. */
int sl_executor_attach_path(const struct sl_executor *x, int64_t job_id, int task,
                            int attempt, char *buf, size_t size);

/* The implementations (executor.c's table). */
struct sl_executor *sl_local_executor_create(const struct sl_executor_config *cfg,
                                             struct sl_error *err);
struct sl_executor *sl_sim_executor_create(const struct sl_executor_config *cfg,
                                           struct sl_error *err);
struct sl_executor *sl_slurm_executor_create(const struct sl_executor_config *cfg,
                                             struct sl_error *err);

#endif
