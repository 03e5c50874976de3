/*
 * exec.h - the local executor: runs one task of a job as a process tree on
 * this machine, and host discovery (CPUs, memory, GPUs via NVML or fake).
 *
 * Each task is started under a small supervisor process (the "shim", a
 * forked child of the daemon that never execs) which:
 *   - creates its own session, so the daemon's terminal signals do not reach it;
 *   - forks the task in a second new session/process group (pgid = task pid),
 *     with the environment, working directory, user, cgroup limits and
 *     GPU visibility already decided by the caller;
 *   - copies the task's stdout and stderr (one pipe each) into one log file,
 *     dropping bytes past the cap and appending one marker line when it does;
 *   - waits for the task and writes its exit status atomically to
 *     <run_dir>/<job>.<task>.<attempt>.exit ("<code>\n"; a signal N is 128+N).
 * The shim survives a daemon crash, so a restarted daemon can re-adopt the
 * task (pid, start time and shim pid recorded in
 * <run_dir>/<job>.<task>.<attempt>.pid) and still
 * learn its exit code.
 *
 * Not thread-safe: one thread (the daemon's engine) owns a struct sl_exec.
 */
#ifndef SL_EXEC_H
#define SL_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../util/util.h"

#define SL_EXEC_MAX_GPUS 64

struct sl_exec;                  /* opaque */

/* Create an executor keeping its files under 'run_dir' (pid/exit files) and
 * cgroups under a "sluice" group of its own. Probes cgroup v2, then v1, and
 * remembers which controllers it may use. Returns NULL and sets errno. */
struct sl_exec *sl_exec_create(const char *run_dir);
void sl_exec_destroy(struct sl_exec *x); /* NULL-safe; does not kill tasks */

/* Whether limits can be enforced on this host, and why not (static text). */
bool sl_exec_limits_available(const struct sl_exec *x, const char **why_not);

struct sl_exec_task {
    int64_t job_id;
    int task_index;
    int attempt;                  /* 0-based; part of file names */
    char *const *argv;            /* NULL-terminated; argv[0] looked up in PATH */
    char *const *env;             /* extra "K=V" pairs, NULL-terminated; the
                                     executor adds SLUICE_JOB_ID,
                                     SLUICE_TASK_INDEX, SLUICE_ATTEMPT,
                                     CUDA_VISIBLE_DEVICES and
                                     NVIDIA_VISIBLE_DEVICES itself */
    const char *workdir;          /* NULL -> the user's home, else "/" */
    const int *gpus;              /* device indices; NULL when ngpus == 0 */
    int ngpus;                    /* the two *_VISIBLE_DEVICES are set to
                                     "i,j,..." or to "" when 0 */
    int64_t cpu_milli;            /* 0 = no limit */
    int64_t mem_bytes;            /* 0 = no limit */
    int64_t pids_max;             /* 0 = no limit */
    const char *unix_user;        /* run as this user when the daemon is root;
                                     NULL or "" -> the daemon's user */
    const char *log_path;         /* created/appended, mode 0640 */
    int64_t log_cap_bytes;        /* > 0 */
};

struct sl_exec_handle {
    pid_t shim_pid;               /* 0 when adopted (not our child) */
    pid_t pid;                    /* the task process = its process group */
    uint64_t start_time;          /* /proc/<pid>/stat field 22 */
    int64_t job_id;
    int task_index;
    int attempt;
    bool limits_enforced;         /* cgroup limits applied */
    char limits_note[160];        /* why not, when not */
    char cgroup[256];             /* cgroup path relative to mounts, or "" */
};

/* Start a task. Returns 0 and fills 'h', or -errno with 'err' filled
 * (bad user, fork failure, ...); then nothing is left running. */
int sl_exec_start(struct sl_exec *x, const struct sl_exec_task *t,
                  struct sl_exec_handle *h, struct sl_error *err);

/* Send 'sig' to the task's whole process group, and (SIGKILL) to every
 * process left in its cgroup. Returns 0, or -ESRCH when nothing is left. */
int sl_exec_signal(struct sl_exec *x, const struct sl_exec_handle *h, int sig);

/* Check a task without blocking. Returns 0 while it runs; 1 when it has
 * finished, with *exit_code set (signal N -> 128+N); -ESRCH when it is gone
 * without an exit record (Lost). Reaps the shim when it is our child. */
int sl_exec_poll(struct sl_exec *x, struct sl_exec_handle *h, int *exit_code);

/* Re-adopt a task after a daemon restart from its pid file. Returns 0 and
 * fills 'h' when the recorded process is alive with the recorded start time,
 * 1 when it already finished (exit record present, *exit_code set),
 * -ESRCH when it is gone without a record or was never started. */
int sl_exec_adopt(struct sl_exec *x, int64_t job_id, int task_index,
                  int attempt, struct sl_exec_handle *h, int *exit_code);

/* Remove the task's pid/exit files and its cgroup (after it finished). */
void sl_exec_release(struct sl_exec *x, const struct sl_exec_handle *h);

/* Reap the shim children that exited (call on SIGCHLD); remembers their
 * status so that sl_exec_poll of the matching handle reports it. Returns how
 * many, with their shim pids in *exited (may be NULL; valid until the next
 * call). Costs one waitpid per exit, not per task. */
size_t sl_exec_reap(struct sl_exec *x, const pid_t **exited);

/* --- host discovery ------------------------------------------------------ */

struct sl_gpu_info {
    int index;
    char model[48];               /* short model name, e.g. "H100", "A100-80GB" */
    int64_t mem_bytes;
    char uuid[64];                /* "" for fake GPUs */
};

struct sl_host_info {
    char hostname[64];
    int64_t cpu_milli;            /* online CPUs x 1000 */
    int64_t mem_bytes;            /* MemTotal */
    int ngpus;
    struct sl_gpu_info gpus[SL_EXEC_MAX_GPUS];
    char gpu_source[16];          /* "nvml", "fake" or "none" */
};

/* Discover this host. 'fake' (may be NULL) is a --fake-gpus spec such as
 * "8xH100" or "4xA100-80GB,2xT4"; when given, NVML is not consulted. NVML is
 * loaded with dlopen (gpumon.h: $SLUICE_NVML_LIB or "libnvidia-ml.so.1"); its
 * absence is not an error.
 * Returns 0 or -EINVAL (bad fake spec, err names it). */
int sl_host_discover(const char *fake, struct sl_host_info *out,
                     struct sl_error *err);

/* Shorten an NVML product name ("NVIDIA H100 80GB HBM3" -> "H100") into
 * 'out' (>= 48 bytes); the rule is documented in host.c. */
void sl_host_gpu_short_name(const char *nvml_name, char *out, size_t size);

#endif
