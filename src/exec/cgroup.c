/*
 * cgroup.c - per-task control groups for the local executor: probing
 * (v2 first, then v1; then how device rules can be put in force), group
 * creation with cpu/memory/pids limits and device rules, signalling every
 * member, removal. See cgroup.h for the layout.
 *
 * Invariant: a task's group is created (its limits written, its device
 * rules or program in place) before the task is forked; the task child
 * joins it itself before exec, so the command never runs outside its
 * limits nor opens a device its rules deny. The shim and the daemon stay
 * outside.
 */
#include "cgroup.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "devices.h"

#include "../util/util.h"

#define CG_ROOT "/sys/fs/cgroup"
#define CG_V1_DEVICES CG_ROOT "/devices"
#define CG_HYBRID_UNIFIED CG_ROOT "/unified" /* systemd's hybrid layout */
#define DEV_PROBE_GROUP "dev-probe"        /* under the base group */
#define CGROUP_SUPER_MAGIC_V1 0x27e0ebL
#define CGROUP2_SUPER_MAGIC_V2 0x63677270L

/* v1 hierarchies in use. Columns: controller (= mount dir under CG_ROOT),
 * the file whose presence in a child group proves the controller works. */
static const struct {
    const char *name;
    const char *probe_file;
} v1_hier[] = {
    {"cpu", "cpu.cfs_quota_us"},
    {"memory", "memory.limit_in_bytes"},
    {"pids", "pids.max"},
};
enum { V1_CPU, V1_MEMORY, V1_PIDS };
static_assert(SL_ARRAY_LEN(v1_hier) < SL_CGROUP_MAX_HIER,
              "v1 limits leave room for the device hierarchy");

static const char *const v2_controllers[] = {"cpu", "memory", "pids"};

/* Human notes may be cut short; vsnprintf does that without a warning. */
static void notef(char *note, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void notef(char *note, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, size, fmt, ap);
    va_end(ap);
}

/* Write 'text' to an existing control file. Returns 0 or -errno. */
static int write_ctl(const char *path, const char *text)
{
    size_t len = strlen(text);
    int fd, rc = 0;
    ssize_t n;

    if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
        return -errno;
    n = write(fd, text, len);
    if (n < 0)
        rc = -errno;
    else if ((size_t)n != len)
        rc = -EIO;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    return rc;
}

static int write_ctl_at(const char *dir, const char *file, const char *text,
                        char *note, size_t size)
{
    char path[PATH_MAX];
    int rc;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >=
        sizeof(path))
        rc = -ENAMETOOLONG;
    else
        rc = write_ctl(path, text);
    if (rc < 0)
        notef(note, size, "%s: %s", path, strerror(-rc));
    return rc;
}

static int mkdir_ok(const char *path, char *note, size_t size)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        int rc = -errno;
        notef(note, size, "%s: %s", path, strerror(-rc));
        return rc;
    }
    return 0;
}

/* Whether the whitespace-separated word list 'list' holds 'word'. */
static bool has_word(const char *list, const char *word)
{
    size_t wl = strlen(word);

    for (const char *p = list; *p;) {
        size_t n;
        while (*p == ' ' || *p == '\n' || *p == '\t')
            p++;
        n = strcspn(p, " \n\t");
        if (n == wl && strncmp(p, word, wl) == 0)
            return true;
        p += n;
    }
    return false;
}

/* Enable cpu, memory and pids for the children of 'dir' (v2). Each one is
 * written on its own, and what counts is the file read back: a controller
 * that is already enabled is fine even where writing is refused. */
static int v2_enable(const char *dir, char *note, size_t size)
{
    char path[PATH_MAX], *text = NULL;
    int rc = 0, wrc = 0;

    if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.subtree_control",
                         dir) >= sizeof(path)) {
        notef(note, size, "%s: %s", dir, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(v2_controllers); i++) {
        char cmd[16];
        int r;
        snprintf(cmd, sizeof(cmd), "+%s", v2_controllers[i]);
        if ((r = write_ctl(path, cmd)) < 0 && wrc == 0)
            wrc = r;
    }
    if ((rc = sl_read_file(path, 4096, &text, NULL)) < 0) {
        notef(note, size, "%s: %s", path, strerror(-rc));
        goto out;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(v2_controllers); i++) {
        if (!has_word(text, v2_controllers[i])) {
            rc = wrc < 0 ? wrc : -EOPNOTSUPP;
            notef(note, size, "%s: cannot enable %s: %s", path,
                     v2_controllers[i], strerror(-rc));
            goto out;
        }
    }
out:
    free(text);
    return rc;
}

/* Create (or find) the executor's base group in hierarchy 'i'; v2 limits
 * also enable the controllers on the way down. */
static int ensure_base_one(const struct sl_cgroup *cg, int i, char *note,
                           size_t size)
{
    bool enable = cg->version == 2 && i < cg->nlimits;
    char path[PATH_MAX];
    int rc;

    snprintf(path, sizeof(path), "%s/sluice", cg->mount[i]);
    if ((rc = mkdir_ok(path, note, size)) < 0)
        return rc;
    if (enable && (rc = v2_enable(path, note, size)) < 0)
        return rc;
    snprintf(path, sizeof(path), "%s%s", cg->mount[i], cg->base_rel);
    if ((rc = mkdir_ok(path, note, size)) < 0)
        return rc;
    if (enable && (rc = v2_enable(path, note, size)) < 0)
        return rc;
    return 0;
}

/* The same in every hierarchy in use. */
static int ensure_base(const struct sl_cgroup *cg, char *note, size_t size)
{
    int rc;

    for (int i = 0; i < cg->nhier; i++)
        if ((rc = ensure_base_one(cg, i, note, size)) < 0)
            return rc;
    return 0;
}

static int probe_v2(struct sl_cgroup *cg, char *why, size_t size)
{
    char *text = NULL, path[PATH_MAX];
    struct statfs sfs;
    int rc;

    cg->version = 2;
    cg->nhier = cg->nlimits = 1;
    sl_strlcpy(cg->mount[0], CG_ROOT, sizeof(cg->mount[0]));
    if (statfs(CG_ROOT, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC_V2) {
        notef(why, size, "%s is not a cgroup2 mount", CG_ROOT);
        rc = -ENOENT;
        goto out;
    }
    if ((rc = sl_read_file(CG_ROOT "/cgroup.controllers", 4096, &text,
                           NULL)) < 0) {
        notef(why, size, "%s/cgroup.controllers: %s", CG_ROOT,
                 strerror(-rc));
        goto out;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(v2_controllers); i++) {
        if (!has_word(text, v2_controllers[i])) {
            notef(why, size, "%s: no %s controller", CG_ROOT,
                     v2_controllers[i]);
            rc = -EOPNOTSUPP;
            goto out;
        }
    }
    /* The root group is exempt from "no internal processes", so enabling
     * controllers there works even with the daemon living in it. */
    if ((rc = v2_enable(CG_ROOT, why, size)) < 0)
        goto out;
    if ((rc = ensure_base(cg, why, size)) < 0)
        goto out;
    snprintf(path, sizeof(path), "%s%s/cgroup.kill", CG_ROOT, cg->base_rel);
    cg->has_kill = access(path, F_OK) == 0;
out:
    free(text);
    return rc;
}

static int probe_v1(struct sl_cgroup *cg, char *why, size_t size)
{
    char path[PATH_MAX];
    int rc = 0;

    cg->version = 1;
    cg->nhier = cg->nlimits = (int)SL_ARRAY_LEN(v1_hier);
    cg->has_kill = false;
    for (int i = 0; i < cg->nlimits; i++) {
        struct statfs sfs;

        snprintf(cg->mount[i], sizeof(cg->mount[i]), "%s/%s", CG_ROOT,
                 v1_hier[i].name);
        if (statfs(cg->mount[i], &sfs) < 0) {
            rc = -errno;
            notef(why, size, "%s: %s", cg->mount[i], strerror(-rc));
            goto out;
        }
        if (sfs.f_type != CGROUP_SUPER_MAGIC_V1) {
            rc = -ENOENT;
            notef(why, size, "%s is not a cgroup v1 mount", cg->mount[i]);
            goto out;
        }
    }
    if ((rc = ensure_base(cg, why, size)) < 0)
        goto out;
    for (int i = 0; i < cg->nlimits; i++) {
        snprintf(path, sizeof(path), "%s%s/%s", cg->mount[i], cg->base_rel,
                 v1_hier[i].probe_file);
        if (access(path, F_OK) < 0) {
            rc = -errno;
            notef(why, size, "%s: %s", path, strerror(-rc));
            goto out;
        }
    }
out:
    if (rc < 0)
        sl_cgroup_base_remove(cg);
    return rc;
}

/* Whether 'path' is a mount of the given file system type. */
static bool is_fs(const char *path, long magic)
{
    struct statfs sfs;

    return statfs(path, &sfs) == 0 && (long)sfs.f_type == magic;
}

static int dir_path(const struct sl_cgroup *cg, int hier, const char *rel,
                    char *buf, size_t size)
{
    if ((size_t)snprintf(buf, size, "%s%s", cg->mount[hier], rel) >= size)
        return -ENAMETOOLONG;
    return 0;
}

/* Make 'mount' the device hierarchy: one of the limits' hierarchies when it
 * is one (v2), else one more. Returns its index. */
static int dev_hier_add(struct sl_cgroup *cg, const char *mount)
{
    for (int i = 0; i < cg->nhier; i++)
        if (strcmp(cg->mount[i], mount) == 0)
            return i;
    sl_strlcpy(cg->mount[cg->nhier], mount, sizeof(cg->mount[0]));
    return cg->nhier++;
}

/* Undo dev_hier_add after a failed probe. */
static void dev_hier_drop(struct sl_cgroup *cg, int i)
{
    char path[PATH_MAX];

    if (i >= cg->nlimits && i == cg->nhier - 1) {
        snprintf(path, sizeof(path), "%s%s", cg->mount[i], cg->base_rel);
        rmdir(path);
        cg->nhier--;
    }
    cg->dev = SL_CGROUP_DEV_NONE;
    cg->dev_hier = -1;
}

/* Try 'kind' on hierarchy 'mount' for real: base groups, a probe group
 * with the rules of a task without GPUs, removed again. */
static int dev_try(struct sl_cgroup *cg, enum sl_cgroup_dev kind,
                   const char *mount, char *why, size_t size)
{
    char probe[96], dir[PATH_MAX];
    struct sl_dev_deny deny;
    int i, rc;

    if (kind == SL_CGROUP_DEV_V1) {
        if (!is_fs(mount, CGROUP_SUPER_MAGIC_V1)) {
            notef(why, size, "%s is not a cgroup v1 mount", mount);
            return -ENOENT;
        }
        snprintf(dir, sizeof(dir), "%s/devices.deny", mount);
        if (access(dir, F_OK) < 0) {
            rc = -errno;
            notef(why, size, "%s: %s", dir, strerror(-rc));
            return rc;
        }
    } else if (!is_fs(mount, CGROUP2_SUPER_MAGIC_V2)) {
        notef(why, size, "%s is not a cgroup2 mount", mount);
        return -ENOENT;
    }
    i = dev_hier_add(cg, mount);
    cg->dev = kind;
    cg->dev_hier = i;
    snprintf(probe, sizeof(probe), "%s/" DEV_PROBE_GROUP, cg->base_rel);
    if ((rc = ensure_base_one(cg, i, why, size)) < 0 ||
        (rc = dir_path(cg, i, probe, dir, sizeof(dir))) < 0 ||
        (rc = mkdir_ok(dir, why, size)) < 0)
        goto out;
    if ((rc = sl_dev_deny_gpus(NULL, 0, NULL, 0, &deny, why, size)) == 0)
        rc = sl_cgroup_task_devices(cg, probe, &deny, why, size);
    if (rmdir(dir) < 0 && rc == 0) {
        rc = -errno;
        notef(why, size, "%s: %s", dir, strerror(-rc));
    }
out:
    if (rc < 0)
        dev_hier_drop(cg, i);
    return rc;
}

/* The cgroup2 mount for a device program: the limits' when they are v2,
 * else the one at the root (v2 without the limits' controllers), else the
 * unified mount of a hybrid host. */
static const char *bpf_mount(const struct sl_cgroup *cg)
{
    if (cg->version == 2)
        return cg->mount[0];
    return is_fs(CG_ROOT, CGROUP2_SUPER_MAGIC_V2) ? CG_ROOT : CG_HYBRID_UNIFIED;
}

static void probe_devices(struct sl_cgroup *cg, const char *want)
{
    char why1[160] = "", why2[160] = "";

    cg->dev = SL_CGROUP_DEV_NONE;
    cg->dev_hier = -1;
    if (!want || !*want || strcmp(want, "auto") == 0) {
        /* v2 limits: a program on the same groups. Otherwise the v1
         * controller, whose rules are plain text, before a program on a
         * hierarchy of its own. */
        if (cg->version != 2 &&
            dev_try(cg, SL_CGROUP_DEV_V1, CG_V1_DEVICES, why1,
                    sizeof(why1)) == 0)
            return;
        if (dev_try(cg, SL_CGROUP_DEV_BPF, bpf_mount(cg), why2,
                    sizeof(why2)) == 0)
            return;
        if (cg->version == 2)
            snprintf(cg->dev_note, sizeof(cg->dev_note), "cgroup2 bpf: %s",
                     why2);
        else
            snprintf(cg->dev_note, sizeof(cg->dev_note),
                     "cgroup v1 devices: %s; cgroup2 bpf: %s", why1, why2);
    } else if (strcmp(want, "v1") == 0) {
        if (dev_try(cg, SL_CGROUP_DEV_V1, CG_V1_DEVICES, why1,
                    sizeof(why1)) == 0)
            return;
        snprintf(cg->dev_note, sizeof(cg->dev_note), "cgroup v1 devices: %s",
                 why1);
    } else if (strcmp(want, "bpf") == 0) {
        if (dev_try(cg, SL_CGROUP_DEV_BPF, bpf_mount(cg), why2,
                    sizeof(why2)) == 0)
            return;
        snprintf(cg->dev_note, sizeof(cg->dev_note), "cgroup2 bpf: %s", why2);
    } else if (strcmp(want, "none") == 0) {
        sl_strlcpy(cg->dev_note, "SLUICE_DEVICE_CGROUP=none",
                   sizeof(cg->dev_note));
    } else {
        snprintf(cg->dev_note, sizeof(cg->dev_note),
                 "SLUICE_DEVICE_CGROUP=\"%.32s\": want auto, v1, bpf or none",
                 want);
    }
}

void sl_cgroup_probe(struct sl_cgroup *cg, const char *tag,
                     const char *dev_want)
{
    char why2[160] = "", why1[160] = "";

    memset(cg, 0, sizeof(*cg));
    snprintf(cg->base_rel, sizeof(cg->base_rel), "/sluice/%s", tag);
    if (probe_v2(cg, why2, sizeof(why2)) < 0 &&
        probe_v1(cg, why1, sizeof(why1)) < 0) {
        cg->version = 0;
        cg->nhier = cg->nlimits = 0;
        cg->has_kill = false;
        snprintf(cg->note, sizeof(cg->note), "cgroup v2: %s; cgroup v1: %s",
                 why2, why1);
    }
    probe_devices(cg, dev_want);
}

void sl_cgroup_task_rel(const struct sl_cgroup *cg, int64_t job_id,
                        int task_index, int attempt, char *buf, size_t size)
{
    snprintf(buf, size, "%s/job-%lld-%d-%d", cg->base_rel, (long long)job_id,
             task_index, attempt);
}

void sl_cgroup_task_paths(const struct sl_cgroup *cg, const char *rel,
                          struct sl_cgroup_task *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < cg->nhier; i++)
        snprintf(out->procs[i], sizeof(out->procs[i]), "%s%s/cgroup.procs",
                 cg->mount[i], rel);
    out->nprocs = cg->nhier;
    if (cg->version == 2 && cg->has_kill)
        snprintf(out->kill, sizeof(out->kill), "%s%s/cgroup.kill",
                 cg->mount[0], rel);
}

/* Write the limits of one task into its freshly made group(s). */
static int write_limits(const struct sl_cgroup *cg, char dirs[][PATH_MAX],
                        int64_t cpu_milli, int64_t mem_bytes,
                        int64_t pids_max, char *note, size_t size)
{
    char val[64];
    int rc = 0;
    /* CFS wants at least 1 ms of quota per 100 ms period. */
    int64_t quota_us = cpu_milli * 100 < 1000 ? 1000 : cpu_milli * 100;
    const char *cpu_dir = dirs[cg->version == 2 ? 0 : V1_CPU];
    const char *mem_dir = dirs[cg->version == 2 ? 0 : V1_MEMORY];
    const char *pids_dir = dirs[cg->version == 2 ? 0 : V1_PIDS];

    if (cpu_milli > 0) {
        if (cg->version == 2) {
            snprintf(val, sizeof(val), "%lld 100000", (long long)quota_us);
            rc = write_ctl_at(cpu_dir, "cpu.max", val, note, size);
        } else {
            rc = write_ctl_at(cpu_dir, "cpu.cfs_period_us", "100000", note,
                              size);
            snprintf(val, sizeof(val), "%lld", (long long)quota_us);
            if (rc == 0)
                rc = write_ctl_at(cpu_dir, "cpu.cfs_quota_us", val, note,
                                  size);
        }
        if (rc < 0)
            return rc;
    }
    if (mem_bytes > 0) {
        char ignored[8];
        snprintf(val, sizeof(val), "%lld", (long long)mem_bytes);
        if (cg->version == 2) {
            rc = write_ctl_at(mem_dir, "memory.max", val, note, size);
            /* No swap either where swap accounting exists; optional. */
            if (rc == 0)
                (void)write_ctl_at(mem_dir, "memory.swap.max", "0", ignored,
                                   sizeof(ignored));
        } else {
            rc = write_ctl_at(mem_dir, "memory.limit_in_bytes", val, note,
                              size);
            if (rc == 0)
                (void)write_ctl_at(mem_dir, "memory.memsw.limit_in_bytes",
                                   val, ignored, sizeof(ignored));
        }
        if (rc < 0)
            return rc;
    }
    if (pids_max > 0) {
        snprintf(val, sizeof(val), "%lld", (long long)pids_max);
        if ((rc = write_ctl_at(pids_dir, "pids.max", val, note, size)) < 0)
            return rc;
    }
    return 0;
}

int sl_cgroup_task_create(const struct sl_cgroup *cg, const char *rel,
                          int64_t cpu_milli, int64_t mem_bytes,
                          int64_t pids_max, struct sl_cgroup_task *out,
                          char *note, size_t size)
{
    char dirs[SL_CGROUP_MAX_HIER][PATH_MAX];
    int made = 0, rc;

    if (cg->nhier == 0) {
        notef(note, size, "%s", cg->note);
        return -EOPNOTSUPP;
    }
    if ((rc = ensure_base(cg, note, size)) < 0)
        goto out;
    for (made = 0; made < cg->nhier; made++) {
        if ((size_t)snprintf(dirs[made], sizeof(dirs[made]), "%s%s",
                             cg->mount[made], rel) >= sizeof(dirs[made])) {
            rc = -ENAMETOOLONG;
            notef(note, size, "%s%s: %s", cg->mount[made], rel,
                     strerror(-rc));
            goto out;
        }
        if ((rc = mkdir_ok(dirs[made], note, size)) < 0)
            goto out;
    }
    if (cg->version != 0 &&
        (rc = write_limits(cg, dirs, cpu_milli, mem_bytes, pids_max, note,
                           size)) < 0)
        goto out;
    sl_cgroup_task_paths(cg, rel, out);
out:
    if (rc < 0)
        while (made-- > 0)
            rmdir(dirs[made]);
    return rc;
}

bool sl_cgroup_task_exists(const struct sl_cgroup *cg, const char *rel)
{
    char path[PATH_MAX];
    struct stat st;

    if (cg->nhier == 0 || !rel || !*rel)
        return false;
    snprintf(path, sizeof(path), "%s%s", cg->mount[0], rel);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int sl_cgroup_signal_procs_file(const char *procs_path, int sig)
{
    char buf[4096];
    long pid = 0;
    bool in_num = false;
    int fd, count = 0;

    if ((fd = open(procs_path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                if (pid < 100000000L)
                    pid = pid * 10 + (buf[i] - '0');
                in_num = true;
            } else {
                if (in_num && pid > 1 && kill((pid_t)pid, sig) == 0)
                    count++;
                pid = 0;
                in_num = false;
            }
        }
    }
    if (in_num && pid > 1 && kill((pid_t)pid, sig) == 0)
        count++;
    close(fd);
    return count;
}

int sl_cgroup_task_kill_all(const struct sl_cgroup_task *t)
{
    int total = 0;

    if (t->nprocs == 0)
        return 0;
    if (t->kill[0]) {
        int fd;
        /* Signal 0 only counts the members. */
        int n = sl_cgroup_signal_procs_file(t->procs[0], 0);
        if (n == 0)
            return 0;
        if ((fd = open(t->kill, O_WRONLY | O_CLOEXEC)) >= 0) {
            ssize_t w = write(fd, "1", 1);
            close(fd);
            if (w == 1)
                return n;
        }
    }
    /* Without cgroup.kill, members may fork while we walk the list: walk
     * again until a pass finds nobody. */
    for (int pass = 0; pass < 8; pass++) {
        int n = 0;
        for (int i = 0; i < t->nprocs; i++)
            n += sl_cgroup_signal_procs_file(t->procs[i], SIGKILL);
        if (n == 0)
            break;
        total += n;
    }
    return total;
}

int sl_cgroup_task_signal(const struct sl_cgroup *cg, const char *rel,
                          int sig)
{
    struct sl_cgroup_task t;

    if (cg->nhier == 0 || !rel || !*rel)
        return 0;
    sl_cgroup_task_paths(cg, rel, &t);
    if (sig == SIGKILL)
        return sl_cgroup_task_kill_all(&t);
    /* Every hierarchy lists the same members; one is enough. */
    return sl_cgroup_signal_procs_file(t.procs[0], sig);
}

int sl_cgroup_task_remove(const struct sl_cgroup *cg, const char *rel)
{
    char path[PATH_MAX];
    int rc = 0;

    if (cg->nhier == 0 || !rel || !*rel)
        return 0;
    for (int i = 0; i < cg->nhier; i++) {
        snprintf(path, sizeof(path), "%s%s", cg->mount[i], rel);
        if (rmdir(path) < 0 && errno != ENOENT && rc == 0)
            rc = -errno;
    }
    return rc;
}

void sl_cgroup_base_remove(const struct sl_cgroup *cg)
{
    char path[PATH_MAX];

    for (int i = 0; i < cg->nhier; i++) {
        snprintf(path, sizeof(path), "%s%s", cg->mount[i], cg->base_rel);
        rmdir(path);
    }
}

int sl_cgroup_task_devices(const struct sl_cgroup *cg, const char *rel,
                           const struct sl_dev_deny *deny, char *note,
                           size_t size)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    int fd = -1, prog = -1, rc;

    if (cg->dev == SL_CGROUP_DEV_NONE || cg->dev_hier < 0) {
        notef(note, size, "%s", cg->dev_note);
        return -EOPNOTSUPP;
    }
    if ((rc = dir_path(cg, cg->dev_hier, rel, dir, sizeof(dir))) < 0) {
        notef(note, size, "%s%s: %s", cg->mount[cg->dev_hier], rel,
              strerror(-rc));
        return rc;
    }
    if (cg->dev == SL_CGROUP_DEV_V1) {
        snprintf(path, sizeof(path), "%s/devices.deny", dir);
        if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0 ||
            (rc = sl_dev_v1_write(fd, deny)) < 0) {
            rc = fd < 0 ? -errno : rc;
            notef(note, size, "%s: %s", path, strerror(-rc));
        }
        goto out;
    }
    if ((prog = sl_devbpf_load(deny, note, size)) < 0) {
        rc = prog;
        goto out;
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = -errno;
        notef(note, size, "%s: %s", dir, strerror(-rc));
        goto out;
    }
    if ((rc = sl_devbpf_attach(prog, fd)) < 0)
        notef(note, size, "bpf(BPF_PROG_ATTACH) %s: %s", dir, strerror(-rc));
out:
    if (fd >= 0)
        close(fd);
    if (prog >= 0)
        close(prog); /* the attachment holds the program */
    return rc;
}

/* The path of 'pid' in the hierarchy that lists 'controller' ("" = the
 * cgroup2 line "0::"), from /proc/<pid>/cgroup, into 'buf'. */
static int pid_cgroup(pid_t pid, const char *controller, char *buf,
                      size_t size)
{
    char path[64], *text = NULL, *line, *save = NULL;
    int rc;

    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    if ((rc = sl_read_file(path, 1 << 16, &text, NULL)) < 0)
        return rc;
    rc = -ENOENT;
    for (line = strtok_r(text, "\n", &save); line && rc < 0;
         line = strtok_r(NULL, "\n", &save)) {
        /* "<id>:<controllers, comma-separated>:<path>" */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        bool hit = false;
        if (!c2)
            continue;
        *c2 = '\0';
        if (!*controller) {
            hit = c1[1] == '\0' && strcmp(line, "0:") == 0;
        } else {
            char *save2 = NULL;
            for (char *w = strtok_r(c1 + 1, ",", &save2); w && !hit;
                 w = strtok_r(NULL, ",", &save2))
                hit = strcmp(w, controller) == 0;
        }
        if (hit) {
            sl_strlcpy(buf, c2 + 1, size);
            rc = 0;
        }
    }
    free(text);
    return rc;
}

int sl_cgroup_task_devices_check(const struct sl_cgroup *cg, const char *rel,
                                 pid_t pid, char *note, size_t size)
{
    char in[PATH_MAX], dir[PATH_MAX];
    uint32_t count = 0;
    int fd, rc;

    if (cg->dev == SL_CGROUP_DEV_NONE || cg->dev_hier < 0) {
        notef(note, size, "%s", cg->dev_note);
        return -EOPNOTSUPP;
    }
    rc = pid_cgroup(pid, cg->dev == SL_CGROUP_DEV_V1 ? "devices" : "", in,
                    sizeof(in));
    if (rc < 0) {
        notef(note, size, "the task's device cgroup is unknown: "
                          "/proc/%d/cgroup: %s",
              (int)pid, strerror(-rc));
        return rc;
    }
    if (strcmp(in, rel) != 0) {
        notef(note, size, "the task is in %.60s, not in its device cgroup",
              in);
        return -ESRCH;
    }
    if (cg->dev == SL_CGROUP_DEV_V1)
        return 0;
    if ((rc = dir_path(cg, cg->dev_hier, rel, dir, sizeof(dir))) < 0 ||
        (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = rc < 0 ? rc : -errno;
        notef(note, size, "%s%s: %s", cg->mount[cg->dev_hier], rel,
              strerror(-rc));
        return rc;
    }
    rc = sl_devbpf_count(fd, &count);
    close(fd);
    if (rc < 0) {
        notef(note, size, "bpf(BPF_PROG_QUERY): %s", strerror(-rc));
        return rc;
    }
    if (count == 0) {
        notef(note, size, "no device program is attached to its cgroup");
        return -ENOENT;
    }
    return 0;
}
