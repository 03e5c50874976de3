/*
 * proc_int.h - what the process runner's two files share: the plan of a
 * task (everything the shim and the task child need, prepared in the
 * daemon before fork; procenv.c makes it, proc.c carries it out) and the
 * planning steps. Not a public header: only src/exec/proc*.c include it.
 */
#ifndef SL_PROC_INT_H
#define SL_PROC_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "exec.h"

/* Everything the shim and the task child need, prepared before fork. After
 * fork it is only read. */
struct plan {
    char *const *argv;           /* borrowed from the task */
    char **envp;                 /* owned, NULL-terminated */
    size_t nenv;
    char workdir[PATH_MAX];
    bool workdir_fallback;       /* chdir("/") when workdir fails */
    bool switch_user;
    char user[64];               /* for messages */
    uid_t uid;
    gid_t gid;
    gid_t *groups;               /* owned */
    int ngroups;
    bool in_cgroup;
    struct sl_cgroup_task cgt;
    bool new_netns;              /* isolated: unshare the network, lo up */
    int log_fd;                  /* owned by the daemon side until fork */
    int64_t log_written;         /* bytes already in the log */
    int64_t log_cap;
    char marker[96];
    size_t marker_len;
    char exit_path[PATH_MAX];
    char exit_tmp[PATH_MAX];
    int max_fd;                  /* for the close loop without close_range */
    bool tty;                    /* interactive: a pseudo-terminal (pty.c) */
    int pty_master;              /* owned by the daemon side until fork */
    int pty_slave;               /* likewise */
    int attach_fd;               /* the listening attach socket; likewise */
    char attach_path[PATH_MAX];  /* where it listens */
    int64_t detach_grace_ms;
};

/* Where the shim keeps an interactive task's descriptors (after the
 * report pipe at 3 and the log at 4). */
#define SL_SHIM_MASTER_FD 5
#define SL_SHIM_SLAVE_FD 6
#define SL_SHIM_ATTACH_FD 7

/* A string formatted into new memory (free()), or NULL on -ENOMEM. */
char *sl_proc_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Check a task's description completely before anything is made. Returns
 * 0 or -EINVAL / -E2BIG with 'err' naming the field. */
int sl_proc_check_task(const struct sl_exec_task *t, struct sl_error *err);

/* The task's account (switching to it when it is not the daemon's), its
 * environment (the account's base, the task's env, the executor's own
 * variables: job, task, attempt, GPUs, datasets) into 'p'. Returns 0 or
 * -errno with 'err' filled; 'p' is then released with sl_proc_plan_fini. */
int sl_proc_plan_env(struct plan *p, const struct sl_exec_task *t, struct sl_error *err);

/* Open (create, append) the task's log for the shim, owned by the task's
 * account, mode 0600. Returns 0 or -errno with 'err' filled. */
int sl_proc_open_log(struct plan *p, const struct sl_exec_task *t, struct sl_error *err);

/* An interactive task's pseudo-terminal (master and slave, the slave
 * owned by the task's account, 24 x 80 to begin with) and its listening
 * attach socket at p->attach_path (mode 0600), into 'p' (p->tty set).
 * Runs in the daemon before fork, after sl_proc_plan_env. Returns 0 or
 * -errno with 'err' filled; what was made is released by
 * sl_proc_plan_fini. */
int sl_proc_plan_tty(struct plan *p, struct sl_error *err);

/* The shim's side of an interactive task (after fork; async-signal-safe
 * calls only): serve the terminal's master at SL_SHIM_MASTER_FD and the
 * attach socket at SL_SHIM_ATTACH_FD (attach.h) until the task's main
 * process 'task' has exited and the terminal's output was drained, hanging
 * the terminal up when nobody is attached for the plan's grace. Returns
 * the task's wait status; *conn is the attached client then (-1: none),
 * to be told the exit code with sl_proc_tty_status. */
int sl_proc_pump_tty(const struct plan *p, pid_t task, int *conn);

/* Send the STATUS message with 'code' on 'conn' (waiting a little for the
 * client to take what was queued) and close it. Async-signal-safe. */
void sl_proc_tty_status(int conn, int code);

/* Shared by the two pumps, async-signal-safe: append to the log within its
 * cap (the marker once past it), write everything, the monotonic clock. */
void sl_proc_log_append(const struct plan *p, const char *buf, size_t len,
                        int64_t *written, bool *truncated);
void sl_proc_write_all(int fd, const char *buf, size_t len);
int64_t sl_proc_mono_ms(void);

/* Free what the plan owns and close its log; the plan may be reused. */
void sl_proc_plan_fini(struct plan *p);

#endif
