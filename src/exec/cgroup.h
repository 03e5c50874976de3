/*
 * cgroup.h - private to src/exec: per-task control groups for the local
 * executor (cgroup v2, else v1 with cpu, memory and pids mounted).
 *
 * Layout, relative to each mount (v2: the unified mount; v1: the cpu,
 * memory and pids mounts):
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

#define SL_CGROUP_MAX_HIER 3 /* v1: cpu, memory, pids; v2: one */

struct sl_cgroup {
    int version;                 /* 2, 1, or 0 when limits are unavailable */
    int nhier;                   /* hierarchies in use: 1 (v2) or 3 (v1) */
    char mount[SL_CGROUP_MAX_HIER][64];     /* e.g. "/sys/fs/cgroup/memory" */
    char base_rel[64];           /* "/sluice/r-<tag>", relative to mounts */
    bool has_kill;               /* v2 cgroup.kill exists */
    char note[160];              /* why limits are unavailable; "" when they are */
};

/* Probe cgroup v2, then v1, creating the executor's base group ("tag" is the
 * r-<hex> name). Never fails: on failure cg->version is 0 and cg->note says
 * why, naming the path and the error for each version tried. */
void sl_cgroup_probe(struct sl_cgroup *cg, const char *tag);

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

/* Create the task's group (relative path 'rel') in every hierarchy and write
 * its limits (0 = no limit), and fill 'out'. Returns 0, or -errno with 'note'
 * (size bytes) naming the path and the error; then nothing is left created. */
int sl_cgroup_task_create(const struct sl_cgroup *cg, const char *rel,
                          int64_t cpu_milli, int64_t mem_bytes,
                          int64_t pids_max, struct sl_cgroup_task *out,
                          char *note, size_t size);

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
