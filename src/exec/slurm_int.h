/*
 * slurm_int.h - what the Slurm executor's two files share: its state (the
 * job table, the command and event queues, the inventory) and the calls
 * each makes of the other. slurm.c submits, signals and answers the
 * engine; slurm_poll.c reads what Slurm says of the jobs (the poll, the
 * details of one job, the jobcomp file's tail). Not a public header: only
 * src/exec/slurm*.c include it. Locking as at the top of slurm.c.
 */
#ifndef SL_SLURM_INT_H
#define SL_SLURM_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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
    int deferred_sig;             /* one to send once its script runs */
    int ncmds;                    /* queued commands that name it */
    struct sl_exec_place *want;   /* the placement decided (ntasks) */
    int ncomp;                    /* Slurm job components: one per node */
    int *comp;                    /* task -> its component (ntasks) */
    int *ncomp_tasks;             /* component -> its number of tasks */
    struct sl_slurm_place *comps; /* component -> what it holds there */
    char **argv;                  /* sbatch's, until submitted (owned) */
    char *script;                 /* the batch script, until submitted */
};

enum cmd_kind { C_SIGNAL };

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
    char *tool_env[3];
    char env_path[sizeof("PATH=") + sizeof(TASK_PATH)];
    char env_conf[PATH_MAX + 16];
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
/* Whether the job's batch script has said it is up (a signal finds it). */
bool sl_slx_is_up(const struct slurm *s, const struct sjob *j);

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
