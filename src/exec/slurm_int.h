/*
 * slurm_int.h - what the Slurm executor's three files share: its state
 * (the job table, the command and event queues, the inventory) and the
 * calls each makes of the others. slurm.c submits, signals and answers the
 * engine; slurm_poll.c reads what Slurm says of the jobs (the poll, the
 * details of one job, the jobcomp file's tail); slurm_stage.c keeps staged
 * successors (docs/decisions/0010). Not a public header: only
 * src/exec/slurm*.c include it. Locking as at the top of slurm.c.
 */
#ifndef SL_SLURM_INT_H
#define SL_SLURM_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct passwd;

#include "executor.h"
#include "run.h"
#include "slurm.h"

#define CMD_TIMEOUT_MS 30000     /* one call of a Slurm tool */
#define OUT_CAP ((size_t)32 << 20)
#define NODE_POLL_MS 5000
#define MAX_TASKS 64             /* of a gang; so many components at most */
#define WAYS 8                   /* Slurm commands the worker runs at once */
#define TASK_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum sj_state { SJ_SUBMIT, SJ_WAITING, SJ_RUNNING, SJ_DONE };

struct sjob {
    int64_t id;
    int attempt;
    int ntasks;
    uint64_t slurm_id;            /* 0 until sbatch answered */
    enum sj_state st;
    bool checked;                 /* its allocation was checked */
    bool released;                /* the engine is done with it */
    bool unheld;                  /* submitted ready, or released: a hold
                                     seen later is someone else's */
    bool submitting;              /* queued for sbatch or in it */
    int sig_after;                /* a signal to send once submitted */
    int killed_sig;               /* a signal that cancelled it (pending) */
    bool time_limit;              /* Slurm ended it TIMEOUT: its end
                                     events say timed_out */
    int deferred_sig;             /* one to send once its script runs */
    int ncmds;                    /* queued commands that name it */
    struct sl_exec_place *want;   /* the placement decided (ntasks) */
    int ncomp;                    /* Slurm job components: one per node */
    int *comp;                    /* task -> its component (ntasks) */
    int *ncomp_tasks;             /* component -> its number of tasks */
    struct sl_slurm_place *comps; /* component -> what it holds there */
    /* what the submission asks of Slurm beside the components (sbatch's
     * arguments, or the C API's job description: slurm_lib.c) */
    bool as_uid;                  /* as root: the job's account (--uid) */
    uid_t uid;
    gid_t gid;
    int64_t time_min;             /* Slurm's time limit, minutes (0 = none) */
    int64_t cpus, mem_mb;         /* per task */
    char *script;                 /* the batch script, until submitted */
    /* Staging (sl_executor_stage): a job submitted behind a running one,
     * pinned to its resources with --dependency=afterok on its Slurm id,
     * that Slurm starts the moment that one completes. */
    bool staged;                  /* staged and not yet handed over: the
                                     engine counts it pending */
    bool held;                    /* staged, and scontrol hold took: it
                                     will not start */
    bool handed;                  /* was staged; its predecessor completed
                                     and Slurm starts it: the engine's
                                     start takes it over */
    bool signalled;               /* the engine sent it a signal: it takes
                                     no successor */
    bool after_pending;           /* staged behind a job still being
                                     submitted: submitted right after it,
                                     by the same submitter */
    bool dep;                     /* staged: afterok on 'after_sid' */
    uint64_t after_sid;           /* its predecessor's Slurm id (0 = being
                                     submitted: set by sl_slx_chained) */
    unsigned seq;                 /* this executor's count of records: the
                                     script's file is its own */
    bool cancel_after;            /* withdrawn while being submitted:
                                     scancel once it has its Slurm id */
    int64_t succ_id;              /* its staged successor (0 = none) */
    int succ_attempt;
};

enum cmd_kind { C_SIGNAL, C_CANCEL, C_REVOKE };

struct cmd {
    enum cmd_kind kind;
    struct sjob *j;
    int sig;
};

struct slurm {
    struct sl_executor base;
    pthread_mutex_t mu;
    pthread_cond_t cond;          /* the worker's: a command, or stop */
    pthread_cond_t poll_cond;     /* the poller's: stop */
    pthread_cond_t sub_cond;      /* the submitters': a submission, or stop */
    pthread_t sub_threads[WAYS];
    int nsub;                     /* submitters started */
    struct sjob **subq;           /* submissions, oldest first */
    size_t nsubq, subq_cap;
    pthread_t thread, poll_thread;
    bool started, poll_started, stop;
    struct sl_inventory nodes;    /* append-only: node i stays node i */
    struct sjob **jobs;
    size_t njobs, jobs_cap;
    struct cmd *cmds;
    size_t ncmds, cmds_cap;
    struct sl_exec_event *events;
    size_t nevents, events_cap;
    int wake_fd;
    int64_t poll_ms, next_node_poll;
    bool stage;                   /* caps.stages */
    unsigned seq;                 /* records made (job_new) */
    bool nodes_stale;             /* read the nodes at the next poll */
    char partition[64];
    char outdir[PATH_MAX];
    char run_dir[PATH_MAX];
    char bin[PATH_MAX];           /* "" = PATH */
    char jobcomp[PATH_MAX];       /* Slurm's jobcomp/filetxt file; "" = none */
    /* the jobcomp file's tail, read by a thread of its own when the file
     * changes (inotify; a file another host writes, over NFS, is seen at
     * the poll interval only) */
    pthread_t jc_thread;
    bool jc_started;
    int jc_inotify, jc_stop;      /* the reader's fds; -1 = none */
    off_t jc_off;                 /* read up to here (reader only) */
    dev_t jc_dev;                 /* of the file read (reader only) */
    ino_t jc_ino;
    struct sl_slurm_confine confine; /* how Slurm confines a job */
    /* the environment of every Slurm tool: PATH and the daemon's
     * SLURM_CONF, nothing else (sbatch passes its own to the job) */
    char *tool_env[4];
    char env_path[sizeof("PATH=") + sizeof(TASK_PATH)];
    char env_conf[PATH_MAX + 16];
    struct sl_slurm_lib *lib;     /* Slurm's C API (slurm_lib.c); NULL = the
                                     tools only */
};


/* When each task began and ended, as Slurm says (0 = unknown). */
struct span {
    int64_t start_ms[MAX_TASKS], end_ms[MAX_TASKS];
};

/* ---- slurm.c ---- */

/* The path of Slurm tool 'name' (under --slurm-bin, else for PATH). */
void sl_slx_tool(const struct slurm *s, const char *name, char *buf, size_t size);
/* Make room for element n of *v (doubling); 0 or -ENOMEM. */
int sl_slx_vec_grow(void **v, size_t *cap, size_t n, size_t elem);
/* Queue an end for every task of 'j' (caller holds mu); see slurm.c. */
void sl_slx_push_end(struct slurm *s, struct sjob *j, enum sl_exec_event_kind kind,
                     const int *codes, const struct span *sp, const char *note);
/* Run a Slurm tool; 'say' (may be NULL) gets the first line of what it
 * said when it failed. Returns its exit status, or -errno. */
int sl_slx_call(const struct slurm *s, char *const argv[], const char *input,
                struct sl_run_result *res, char *say, size_t say_size);
/* Release held jobs, one scontrol per 256 of them (see slurm.c). */
void sl_slx_release(struct slurm *s, struct sjob *const *js, size_t n);
/* scancel JOB (sig 0: cancel it), or scancel --signal=SIG --full JOB. */
void sl_slx_scancel(struct slurm *s, uint64_t sid, int sig);
/* OUTDIR/.<id>.<attempt>.up, which the batch script makes as its first
 * act (slurm.c). */
void sl_slx_up_path(const struct slurm *s, int64_t id, int attempt, char *buf, size_t size);
/* Whether the job's batch script has said it is up (a signal finds it). */
bool sl_slx_is_up(const struct slurm *s, const struct sjob *j);

/* ---- slurm_script.c ----------------------------------------------------- */

/* The batch script of job 'j' (its spec 'job', its account 'pw'), in a
 * new string the caller frees, or NULL when out of memory. */
char *sl_slx_batch_script(const struct slurm *s, const struct sjob *j,
                          const struct sl_exec_job *job, const struct passwd *pw);
/* Whether 'j' is staged (caller holds mu): Slurm starts it on its
 * predecessor's completion, and the poll leaves it to that moment. */
bool sl_slx_is_staged(const struct sjob *j);

/* Wake the engine (caller holds mu). */
void sl_slx_wake(struct slurm *s);
/* The record of an attempt the engine has not released, or NULL (caller
 * holds mu). */
struct sjob *sl_slx_job_find(struct slurm *s, int64_t id, int attempt);
/* Queue a command for the worker (caller holds mu); 0 or -ENOMEM. */
int sl_slx_queue_cmd(struct slurm *s, enum cmd_kind kind, struct sjob *j, int sig);
/* Make the record of 'job' and queue its submission; staged: behind Slurm
 * job 'after_sid', or, 0, behind one still being submitted (caller holds
 * mu). Returns NULL, or why not. */
const char *sl_slx_job_submit(struct slurm *s, const struct sl_exec_job *job,
                              const struct passwd *pw, bool staged, uint64_t after_sid,
                              struct sjob **out);

/* After sbatch (caller holds mu): what was kept for it goes, a withdrawn
 * job is cancelled, a signal that came meanwhile is queued. */
void sl_slx_submitted(struct slurm *s, struct sjob *j);

/* ---- slurm_lib.c: Slurm's C API, loaded at run time ------------------ */

struct sl_slurm_lib;
/* Load libslurm (the ABI of the Slurm this was built against) and read
 * Slurm's configuration, for submissions without a process per job.
 * NULL, with why in 'why', when it cannot be used: the tools then do
 * all. The library stays loaded for the life of the process. */
struct sl_slurm_lib *sl_slx_lib_open(char *why, size_t why_size);
/* Whether job 'j' can be submitted through the C API: one component (a
 * heterogeneous job goes through sbatch, whose environment per
 * component the API does not make). */
bool sl_slx_lib_fits(const struct sjob *j);
/* Submit 'j' as sbatch would with its arguments (slurm.c, sbatch_argv):
 * its Slurm id, or 0 with Slurm's error in 'say'. */
uint64_t sl_slx_lib_submit(struct slurm *s, const struct sjob *j, char *say, size_t say_size);
/* What `scontrol show job -d -o SID` prints, one line per component,
 * each given to fn(arg, line); 0, -ENOENT when Slurm does not know the
 * job, -EIO. */
int sl_slx_lib_job_lines(struct slurm *s, uint64_t sid, void (*fn)(void *arg, char *line),
                         void *arg);

/* ---- slurm_stage.c ---- */

/* Staged job 'b' waited for its predecessor 'p' to be submitted (caller
 * holds mu): 'b' with its dependency set, to submit next, or NULL. */
struct sjob *sl_slx_chained(struct slurm *s, struct sjob *b, const struct sjob *p);

/* Predecessor 'j' ends (caller holds mu, before its own end is queued):
 * its staged successor is handed over or withdrawn (and said so). */
void sl_slx_successor_end(struct slurm *s, struct sjob *j, enum sl_exec_event_kind kind,
                          const int *codes);
/* Tell the engine staged job 'b' will not start, and withdraw it (caller
 * holds mu). */
void sl_slx_push_unstaged(struct slurm *s, struct sjob *b);
/* scontrol hold of Slurm job 'sid', kept only while it is pending: true
 * when it will not start. */
bool sl_slx_hold_pending(struct slurm *s, uint64_t sid);
/* Before job 'j' is signalled (worker): hold its staged successor. */
void sl_slx_hold_successor(struct slurm *s, struct sjob *j);
/* Revoke staged job 'b' (worker, 'b' pinned). */
void sl_slx_revoke_one(struct slurm *s, struct sjob *b);
/* The operations (executor.h). */
int sl_slx_stage(struct sl_executor *x, const struct sl_exec_job *job);
void sl_slx_unstage(struct sl_executor *x, int64_t job_id, int attempt);
void sl_slx_revoke(struct sl_executor *x, int64_t job_id, int attempt);

/* ---- slurm_poll.c ---- */

/* fn(s, item) for each of n items of 'size' bytes, up to WAYS at once;
 * returns when all are done. */
void sl_slx_fan_out(struct slurm *s, void *items, size_t n, size_t size,
                    void (*fn)(struct slurm *, void *));
/* One poll of the partition's jobs (worker only). */
void sl_slx_poll_jobs(struct slurm *s);
/* The details of Slurm job 'sid' (one entry per component), from scontrol
 * or the jobcomp file: 0, or -ENOENT when neither knows it, -EIO. */
int sl_slx_job_details(struct slurm *s, uint64_t sid, struct sl_slurm_job *out, int max,
                       int *n);
/* Turn what the components of a job say into its state or its end. */
void sl_slx_job_settle(struct slurm *s, struct sjob *j, const struct sl_slurm_job *c, int n);
/* Start the jobcomp tail at the file's end now. */
void sl_slx_jobcomp_skip(struct slurm *s);
/* Start the jobcomp reader thread; 0 or -errno with 'err'. */
int sl_slx_jobcomp_reader_start(struct slurm *s, struct sl_error *err);

#endif
