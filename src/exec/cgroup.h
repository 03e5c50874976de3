/*
 * cgroup.h - private to src/exec: per-task control groups for the local
 * executor (cgroup v2, else v1 with cpu, memory and pids mounted), and the
 * device rules that keep a task from opening GPUs it was not given (the v1
 * devices controller, or a device program on a cgroup v2 group).
 *
 * Layout, relative to each mount (v2: the unified mount; v1: the cpu,
 * memory and pids mounts; and the device hierarchy when it is another one:
 * the v1 devices mount, or the cgroup2 mount of a hybrid host):
 *     /sluice/r-<tag>/job-<job>-<task>-<attempt>
 * where <tag> is 16 hex digits hashed from the executor's run directory, so
 * that two daemons (or two test runs) on one host never share a group, and
 * a daemon restarted on the same run directory finds its groups again.
 *
 * Not thread-safe: owned by the struct sl_exec that embeds it. Nothing here
 * is async-signal-safe except where a comment says so.
 */
#ifndef SL_EXEC_CGROUP_H
#define SL_EXEC_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "devices.h"

#define SL_CGROUP_MAX_HIER 4 /* v1: cpu, memory, pids, devices; v2: one */

/* How a task's device rules are put in force. */
enum sl_cgroup_dev {
    SL_CGROUP_DEV_NONE,          /* they cannot be here (dev_note) */
    SL_CGROUP_DEV_V1,            /* devices.deny of the v1 devices controller */
    SL_CGROUP_DEV_BPF,           /* a BPF_PROG_TYPE_CGROUP_DEVICE program
                                    attached to the task's cgroup2 group */
};

struct sl_cgroup {
    int version;                 /* of the limits: 2, 1, or 0 when they are
                                    unavailable */
    int nlimits;                 /* hierarchies holding limits: 1 (v2), 3
                                    (v1: cpu, memory, pids), 0 */
    int nhier;                   /* hierarchies a task's group is made in:
                                    mount[0..nlimits) for the limits, then
                                    the device hierarchy when it is not one
                                    of those; 0 = no group at all */
    char mount[SL_CGROUP_MAX_HIER][64];     /* e.g. "/sys/fs/cgroup/memory" */
    char base_rel[64];           /* "/sluice/r-<tag>", relative to mounts */
    bool has_kill;               /* v2 cgroup.kill exists (limits v2) */
    char note[160];              /* why limits are unavailable; "" when they are */
    enum sl_cgroup_dev dev;
    int dev_hier;                /* index into mount of the device
                                    hierarchy; -1 when dev is NONE */
    char dev_note[320];          /* why devices cannot be denied; "" when
                                    they can */
};

/* Probe cgroup v2, then v1, creating the executor's base group ("tag" is the
 * r-<hex> name), then how device rules can be put in force: 'dev_want' is
 * NULL or "auto" (v2 limits: a device program on the same groups; else the
 * v1 devices controller, else a device program on a cgroup2 mount: the
 * unified hierarchy of a hybrid host), "v1", "bpf" (only that) or "none".
 * Each is tried for real on a probe group, which is removed again. Never
 * fails: on failure cg->version is 0 and cg->note says why, naming the path
 * and the error for each version tried; cg->dev is NONE and cg->dev_note
 * says why in the same way. */
void sl_cgroup_probe(struct sl_cgroup *cg, const char *tag,
                     const char *dev_want);

/* Write the group path of a task, relative to the mounts, into 'buf'. */
void sl_cgroup_task_rel(const struct sl_cgroup *cg, int64_t job_id,
                        int task_index, int attempt, char *buf, size_t size);

/* Absolute paths of one task's group files, computed before fork so that
 * the task child and the shim only need open/read/write/kill. */
struct sl_cgroup_task {
    int nprocs;
    char procs[SL_CGROUP_MAX_HIER][PATH_MAX]; /* each hierarchy's cgroup.procs */
    char kill[PATH_MAX];                      /* v2 cgroup.kill, or "" */
};

/* Create the task's group (relative path 'rel') in every hierarchy and, when
 * limits are available (cg->version != 0), write its limits (0 = no limit),
 * and fill 'out'. Returns 0, or -errno with 'note' (size bytes) naming the
 * path and the error (-EOPNOTSUPP and cg->note when there is no hierarchy
 * at all); then nothing is left created. */
int sl_cgroup_task_create(const struct sl_cgroup *cg, const char *rel,
                          int64_t cpu_milli, int64_t mem_bytes,
                          int64_t pids_max, struct sl_cgroup_task *out,
                          char *note, size_t size);

/* Put the deny list 'deny' in force on the task's group 'rel' (made by
 * sl_cgroup_task_create), before any process joins it: v1, one rule per
 * device in its devices.deny; BPF, a program generated from the list,
 * loaded and attached to the group. Returns 0, or -errno with 'note' naming
 * the path or call and the error (-EOPNOTSUPP with cg->dev_note when
 * cg->dev is NONE); the group itself stays either way. */
int sl_cgroup_task_devices(const struct sl_cgroup *cg, const char *rel,
                           const struct sl_dev_deny *deny, char *note,
                           size_t size);

/* Whether device rules put in force for 'rel' still hold for process 'pid':
 * it is a member of 'rel' in the device hierarchy (/proc/<pid>/cgroup) and,
 * for BPF, a device program is still attached to that group. Returns 0, or
 * -errno with 'note' saying which does not hold. v1 rules cannot be read
 * back (devices.list shows "a *:* rwm" for a group that allows by default
 * whatever it denies), so for v1 membership is what is checked. */
int sl_cgroup_task_devices_check(const struct sl_cgroup *cg, const char *rel,
                                 pid_t pid, char *note, size_t size);

/* Fill 'out' for an existing group (no creation, no limits). */
void sl_cgroup_task_paths(const struct sl_cgroup *cg, const char *rel,
                          struct sl_cgroup_task *out);

/* Async-signal-safe: send 'sig' to every pid listed in the cgroup.procs file
 * at 'procs_path'. Returns how many were signalled (0 when none or the file
 * is unreadable). */
int sl_cgroup_signal_procs_file(const char *procs_path, int sig);

/* Async-signal-safe: SIGKILL everything in the group: cgroup.kill when
 * present, else each cgroup.procs, repeated until a pass finds nobody (at
 * most a few passes). Returns how many processes were signalled (cgroup.kill
 * counts as 1 when it was written). */
int sl_cgroup_task_kill_all(const struct sl_cgroup_task *t);

/* Whether the task's group still exists (in the first hierarchy). */
bool sl_cgroup_task_exists(const struct sl_cgroup *cg, const char *rel);

/* Send 'sig' to every process in the task's group (SIGKILL: as
 * sl_cgroup_task_kill_all). Returns how many processes were signalled, 0 when
 * the group is empty or gone. */
int sl_cgroup_task_signal(const struct sl_cgroup *cg, const char *rel,
                          int sig);

/* Remove the task's group in every hierarchy (it must be empty). Returns 0,
 * or the first -errno other than -ENOENT. */
int sl_cgroup_task_remove(const struct sl_cgroup *cg, const char *rel);

/* Try to remove the executor's own base group; fails harmlessly (EBUSY)
 * while task groups remain. */
void sl_cgroup_base_remove(const struct sl_cgroup *cg);

#endif
