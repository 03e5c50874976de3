/*
 * exec.h - the local executor: runs one task of a job as a process tree on
 * this machine, and host discovery (CPUs, memory, GPUs via NVML or fake).
 *
 * Each task is started under a small supervisor process (the "shim", a
 * forked child of the daemon that never execs) which:
 *   - creates its own session, so the daemon's terminal signals do not reach it;
 *   - forks the task in a second new session/process group (pgid = task pid),
 *     with the environment, working directory, user, cgroup limits,
 *     GPU visibility and device rules and network profile already decided
 *     by the caller;
 *   - copies the task's stdout and stderr (one pipe each) into one log file,
 *     dropping bytes past the cap and appending one marker line when it does;
 *   - waits for the task and writes its exit status atomically to
 *     <run_dir>/<job>.<task>.<attempt>.exit ("<code>\n"; a signal N is 128+N).
 * The shim survives a daemon crash, so a restarted daemon can re-adopt the
 * task (pid, start time, shim pid and whether its GPUs were isolated
 * recorded in <run_dir>/<job>.<task>.<attempt>.pid) and still
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

/* The character major reserved to NVIDIA (the driver's
 * NV_MAJOR_DEVICE_NUMBER; /proc/devices shows "195 nvidia", or
 * "195 nvidia-frontend" with older drivers, once it is loaded):
 * /dev/nvidia<N> is 195:<minor of GPU N>, nvidia-modeset 195:254,
 * nvidiactl 195:255. nvidia-uvm, nvidia-uvm-tools and nvidia-caps get
 * majors of their own, chosen when their module loads. */
#define SL_EXEC_NVIDIA_MAJOR 195
#define SL_EXEC_NVIDIA_GPU_MINOR_MAX 253 /* 254 and 255 are control devices */

struct sl_exec;                  /* opaque */
struct sl_gpu_info;              /* below, with host discovery */

/* Create an executor keeping its files under 'run_dir' (pid/exit files) and
 * cgroups under a "sluice" group of its own. Probes cgroup v2, then v1, and
 * remembers which controllers it may use; then how device rules can be put
 * in force (sl_exec_gpus_available), and network namespaces. Returns NULL
 * and sets errno. */
struct sl_exec *sl_exec_create(const char *run_dir);
void sl_exec_destroy(struct sl_exec *x); /* NULL-safe; does not kill tasks */

/* Whether limits can be enforced on this host, and why not (static text). */
bool sl_exec_limits_available(const struct sl_exec *x, const char **why_not);

/* Whether this executor can keep a task from opening GPUs it was not given
 * (probed once by sl_exec_create: it creates a group, writes a deny rule
 * (cgroup v1 devices controller) or loads and attaches a
 * BPF_PROG_TYPE_CGROUP_DEVICE program (cgroup v2), and removes the group).
 * The mechanism is chosen as docs/executor.md says; $SLUICE_DEVICE_CGROUP
 * ("v1", "bpf" or "none"; unset or "auto": the choice) restricts it. When
 * not, *why_not (may be NULL) says why, e.g. "bpf(BPF_PROG_LOAD):
 * Operation not permitted"; the text lives as long as 'x'. *mech (may be
 * NULL) is "cgroup1 devices", "cgroup2 bpf" or "none". */
bool sl_exec_gpus_available(const struct sl_exec *x, const char **why_not,
                            const char **mech);

/* Whether this executor can put a task in a network namespace of its own
 * (probed once by sl_exec_create: a forked child tries
 * unshare(CLONE_NEWNET) and brings up "lo"). When not, *why_not (may be
 * NULL) says why, e.g. "unshare(CLONE_NEWNET): Operation not permitted";
 * the text lives as long as 'x'. */
bool sl_exec_netns_available(const struct sl_exec *x, const char **why_not);

/* Network profiles of a task. The values are those of enum sl_network in
 * core/spec.h (SL_NET_EGRESS, SL_NET_INTERNAL, SL_NET_ISOLATED), which
 * local.c checks with static_asserts. On the local executor:
 *   EGRESS   nothing is done: the task has the host's network;
 *   INTERNAL not enforced (it would need firewall rules): the task has the
 *            host's network and the handle says so;
 *   ISOLATED the task (not the shim) runs in a new network namespace that
 *            holds only loopback, up; when the executor cannot create one
 *            (sl_exec_netns_available) the task runs with the host's network
 *            and the handle says so. The caller decides whether to accept
 *            that. */
enum sl_exec_net {
    SL_EXEC_NET_EGRESS,
    SL_EXEC_NET_INTERNAL,
    SL_EXEC_NET_ISOLATED,
};

#define SL_EXEC_MAX_DATASETS 64

/* A dataset exposed to a task. The executor tells the task where it is
 * through its environment (see sl_exec_task.env); it neither mounts nor
 * copies anything, and read-only is NOT enforced at the filesystem level
 * (that would need a mount namespace and read-only bind mounts): a task
 * that can write to 'path' by its Unix permissions can write to a dataset
 * given as read-only. */
struct sl_exec_dataset {
    const char *name;             /* 1..63 of [A-Za-z0-9_-]; borrowed */
    const char *version;          /* 1..63 of [A-Za-z0-9._-]; borrowed */
    const char *path;             /* absolute path on this host; borrowed */
    bool rw;                      /* the task may write (advisory, above) */
};

/* Whether 'ds' (n entries) are datasets a task may be given: names and
 * versions of the allowed characters, absolute paths, no two writing the
 * same variable. Returns 0 or -EINVAL with 'err' naming the dataset. */
int sl_exec_datasets_check(const struct sl_exec_dataset *ds, int n, struct sl_error *err);

/* The environment entries of datasets 'ds' ("SLUICE_DATASETS=...", then
 * SLUICE_DATASET_<NAME>=<path> and _MODE for each), each a new "K=V"
 * string handed to put(), which takes it (NULL when out of memory: put
 * must then fail). Returns 0, or -ENOMEM / put's error. */
int sl_exec_dataset_env(const struct sl_exec_dataset *ds, int n,
                        int (*put)(void *arg, char *kv), void *arg);

struct passwd;

/* The Unix account 'name' (NULL: the daemon's own) into 'pw', its strings
 * in *buf (grown with realloc; the caller frees it). Returns 0, or an
 * error naming the account. */
int sl_exec_lookup_user(const char *name, struct passwd *pw, char **buf, struct sl_error *err);

/* The account a task may run as: sl_exec_lookup_user's, refused (-EPERM)
 * when it is the daemon's identity (its uid, or root) unless it is
 * 'allow_daemon_user' (may be NULL), or another account than the daemon's
 * while the daemon is not root (it cannot switch). */
int sl_exec_account(const char *name, const char *allow_daemon_user, struct passwd *pw,
                    char **buf, struct sl_error *err);

struct sl_exec_task {
    int64_t job_id;
    int task_index;
    int attempt;                  /* 0-based; part of file names */
    char *const *argv;            /* NULL-terminated; argv[0] looked up in PATH */
    char *const *env;             /* extra "K=V" pairs, NULL-terminated; the
                                     executor adds SLUICE_JOB_ID,
                                     SLUICE_TASK_INDEX, SLUICE_ATTEMPT,
                                     SLUICE_GPUS, CUDA_DEVICE_ORDER,
                                     CUDA_VISIBLE_DEVICES,
                                     NVIDIA_VISIBLE_DEVICES, SLUICE_DATASETS
                                     and SLUICE_DATASET_<NAME>[_MODE] itself
                                     (a job's own SLUICE_DATASET* entries
                                     are dropped) */
    const char *workdir;          /* the directory the task starts in,
                                     entered as its account (spec.workdir):
                                     when it cannot, the start fails
                                     (-errno, a message naming
                                     spec.workdir). NULL or "" -> the
                                     account's home, else "/" */
    const int *gpus;              /* the task's GPUs: indices into
                                     host_gpus (as in the job's placement);
                                     NULL when ngpus == 0 */
    int ngpus;                    /* SLUICE_GPUS is "i,j,..." (or "" when
                                     0); CUDA_DEVICE_ORDER is PCI_BUS_ID;
                                     CUDA_VISIBLE_DEVICES and
                                     NVIDIA_VISIBLE_DEVICES are the GPUs'
                                     UUIDs "GPU-...,GPU-..." when every one
                                     of them has one, else "i,j,..." as
                                     SLUICE_GPUS; "" when 0 */
    const struct sl_gpu_info *host_gpus; /* borrowed: every GPU of this
                                     host (sl_host_discover's list), or NULL
                                     when the task's GPUs are not this
                                     host's devices (simulated nodes): then
                                     a task with GPUs is not isolated. Each
                                     task's device rules deny every NVIDIA
                                     GPU device (195:0..253, and any GPU of
                                     this list by its numbers) except its
                                     own, whatever 'gpus' holds; the control
                                     devices and every other device stay
                                     allowed */
    int nhost_gpus;               /* 0..SL_EXEC_MAX_GPUS; every gpus[i] is
                                     below it when host_gpus is given */
    int64_t cpu_milli;            /* 0 = no limit */
    int64_t mem_bytes;            /* 0 = no limit */
    int64_t pids_max;             /* 0 = no limit */
    const char *unix_user;        /* run as this Unix account; NULL or "" ->
                                     the daemon's own. A task never runs
                                     with the daemon's uid or uid 0 unless
                                     this account is allow_daemon_user, and
                                     a daemon that is not root runs only
                                     tasks of its own account: anything
                                     else fails to start (-EPERM) */
    const char *allow_daemon_user; /* the one account allowed to have the
                                     daemon's uid or uid 0; NULL or "" =
                                     none */
    const char *log_path;         /* created/appended, mode 0600, owned by
                                     the task's account */
    int64_t log_cap_bytes;        /* > 0 */
    int network;                  /* enum sl_exec_net; 0 = egress */
    const struct sl_exec_dataset *datasets; /* borrowed; NULL when none.
                                     The task's environment gets
                                     SLUICE_DATASETS=name@version[:rw],...
                                     and for each dataset
                                     SLUICE_DATASET_<NAME>=<path> and
                                     SLUICE_DATASET_<NAME>_MODE=ro|rw,
                                     NAME upper-cased with '-' -> '_';
                                     names that map to the same variable
                                     are refused */
    int ndatasets;                /* 0..SL_EXEC_MAX_DATASETS */
    bool tty;                     /* interactive (spec.interactive): the
                                     task's stdin, stdout and stderr are
                                     the slave of a pseudo-terminal of its
                                     own, its controlling terminal, owned
                                     by its account (mode 0620, group tty
                                     where there is one, else 0600); the
                                     shim holds the master, copies what it
                                     shows into the log and serves it on
                                     the attach socket (attach.h) */
    int64_t detach_grace_ms;      /* tty: how long the task may run with
                                     nobody attached (after a detach, and
                                     from its start, then no less than
                                     SL_EXEC_FIRST_ATTACH_MS) before its
                                     terminal is hung up: SIGHUP to its
                                     process group and the terminal's
                                     foreground group, SIGKILL
                                     SL_EXEC_HUP_KILL_MS later if its main
                                     process still runs. 0..1 day */
};

#define SL_EXEC_FIRST_ATTACH_MS 60000 /* an interactive task's first client */
#define SL_EXEC_HUP_KILL_MS 10000     /* SIGHUP to SIGKILL after a hang-up */
#define SL_EXEC_GRACE_MAX_MS 86400000 /* the longest detach grace */

struct sl_exec_handle {
    pid_t shim_pid;               /* 0 when adopted (not our child) */
    pid_t pid;                    /* the task process = its process group */
    uint64_t start_time;          /* /proc/<pid>/stat field 22 */
    int64_t job_id;
    int task_index;
    int attempt;
    bool limits_enforced;         /* cgroup limits applied */
    char limits_note[160];        /* why not, when not */
    int network_enforced;         /* enum sl_exec_net actually in force:
                                     ISOLATED, or EGRESS when the profile
                                     asked for could not be enforced */
    char network_note[160];       /* why the asked profile is not in force;
                                     "" when it is */
    bool gpus_enforced;           /* the task can open no NVIDIA GPU device
                                     but its own, and cannot lift that:
                                     its device rules are in force and it
                                     does not run as root */
    char gpus_note[256];          /* why not, when not ("GPU isolation not
                                     enforced: ..."); "" when it is. The
                                     environment is set either way */
    char cgroup[256];             /* cgroup path relative to mounts, or "" */
};

/* Start a task. Returns 0 and fills 'h', or -errno with 'err' filled
 * (bad user, bad network profile, dataset or GPU list, fork failure, ...);
 * then nothing is left running. A profile, limit or GPU isolation that
 * cannot be enforced is not an error: h->network_note, h->limits_note and
 * h->gpus_note say what is not. Device rules that could be written are
 * written even when h->gpus_enforced is false (a task run as root).
 * Should the network namespace that the probe promised fail to come up in
 * the task child, the task does not run: its log gets one "sluice: ..."
 * line and it exits 127, as for a failed exec. */
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
 * fills 'h' when the recorded process is alive with the recorded start time
 * (h->network_enforced is ISOLATED when its network namespace differs from
 * the daemon's, else EGRESS; h->gpus_enforced is true when the pid file
 * records that it was at the start, the process is still in its device
 * cgroup and, on cgroup v2, a device program is still attached there;
 * h->gpus_note says which of these failed),
 * 1 when it already finished (exit record present, *exit_code set),
 * -ESRCH when it is gone without a record or was never started. */
int sl_exec_adopt(struct sl_exec *x, int64_t job_id, int task_index,
                  int attempt, struct sl_exec_handle *h, int *exit_code);

/* The attach socket of an interactive task (attach.h) into buf. Returns
 * 0 or -ENAMETOOLONG. Thread-safe: it reads only what creation set. */
int sl_exec_attach_path(const struct sl_exec *x, int64_t job_id, int task_index,
                        int attempt, char *buf, size_t size);

/* Remove the task's pid/exit files, its attach socket and its cgroup
 * (after it finished). */
void sl_exec_release(struct sl_exec *x, const struct sl_exec_handle *h);

/* Reap the shim children that exited (call on SIGCHLD); remembers their
 * status so that sl_exec_poll of the matching handle reports it. Returns how
 * many, with their shim pids in *exited (may be NULL; valid until the next
 * call). Costs one waitpid per exit, not per task. */
size_t sl_exec_reap(struct sl_exec *x, const pid_t **exited);

/* --- host discovery ------------------------------------------------------ */

struct sl_gpu_info {
    int index;                    /* NVML's index (PCI bus order), or the
                                     fake GPU's */
    char model[48];               /* short model name, e.g. "H100", "A100-80GB" */
    int64_t mem_bytes;
    char uuid[64];                /* "GPU-..." from NVML; "" for fake GPUs
                                     or when NVML gives none */
    int dev_major;                /* its character device /dev/nvidia<minor>:
                                     SL_EXEC_NVIDIA_MAJOR; fake GPUs are
                                     195:<index>. -1 with dev_minor -1 when
                                     NVML gives no minor number */
    int dev_minor;
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
