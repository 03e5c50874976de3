/*
 * procenv.c - the plan of a local task (proc_int.h): its checks, the Unix
 * account it runs as and that account's groups, its environment (base,
 * the job's, and the executor's own variables for GPUs and datasets,
 * which a job cannot set), and its log file. Runs in the daemon before
 * fork, so it may allocate and take locks.
 */
#include "proc_int.h"
#include "../core/spec.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TASK_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define MAX_TASK_ENV 4096
#define MAX_ARGS 65536
#define DATASET_FIELD_MAX 63    /* name and version of a dataset */
#define DATASET_ENV_PREFIX "SLUICE_DATASET"
#define GPU_UUID_MAX 63         /* sl_gpu_info.uuid */

char *sl_proc_strdupf(const char *fmt, ...)
{
    va_list ap;
    char *s;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(s = malloc((size_t)n + 1)))
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void sl_proc_plan_fini(struct plan *p)
{
    if (p->envp)
        for (size_t i = 0; i < p->nenv; i++)
            free(p->envp[i]);
    free(p->envp);
    free(p->groups);
    if (p->log_fd >= 0)
        close(p->log_fd);
    if (p->tty) {
        int *fds[] = {&p->pty_master, &p->pty_slave, &p->attach_fd};
        for (size_t i = 0; i < SL_ARRAY_LEN(fds); i++)
            if (*fds[i] >= 0)
                close(*fds[i]);
    }
}

static size_t env_key_len(const char *kv)
{
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Append 's' (owned) to the environment; a later key replaces an earlier
 * one, so the order base < task < executor decides who wins. */
static int env_put(struct plan *p, char *s)
{
    size_t klen;

    if (!s)
        return -ENOMEM;
    klen = env_key_len(s);
    for (size_t i = 0; i < p->nenv; i++) {
        if (env_key_len(p->envp[i]) == klen &&
            strncmp(p->envp[i], s, klen) == 0) {
            free(p->envp[i]);
            p->envp[i] = s;
            return 0;
        }
    }
    p->envp[p->nenv++] = s;
    p->envp[p->nenv] = NULL;
    return 0;
}

/* Look the user up: 'name' NULL -> the daemon's effective user. */
int sl_exec_lookup_user(const char *name, struct passwd *pw, char **buf,
                       struct sl_error *err)
{
    size_t size = 4096;
    struct passwd *res = NULL;
    int rc;

    for (;;) {
        char *nb = realloc(*buf, size);
        if (!nb)
            return sl_errorf(err, -ENOMEM, "out of memory");
        *buf = nb;
        rc = name ? getpwnam_r(name, pw, *buf, size, &res)
                  : getpwuid_r(geteuid(), pw, *buf, size, &res);
        if (rc != ERANGE || size >= (1 << 20))
            break;
        size *= 2;
    }
    if (rc != 0)
        return sl_errorf(err, -rc, "unix user \"%s\": %s",
                         name ? name : "(self)", strerror(rc));
    if (!res)
        return sl_errorf(err, name ? -EINVAL : -ENOENT,
                         "unix user \"%s\": no such user",
                         name ? name : "(self)");
    return 0;
}

int sl_exec_account(const char *name, const char *allow_daemon_user, struct passwd *pw,
                    char **buf, struct sl_error *err)
{
    int rc;

    /* never the daemon's identity (its uid, or root) unless the one
     * account allowed to be, and never anyone else than the daemon when it
     * cannot switch */
    if ((rc = sl_exec_lookup_user(name, pw, buf, err)) < 0)
        return rc;
    if ((pw->pw_uid == geteuid() || pw->pw_uid == 0) &&
        !(allow_daemon_user && strcmp(pw->pw_name, allow_daemon_user) == 0))
        return sl_errorf(err, -EPERM,
                         "unix user \"%s\" has uid %u, %s: a job never runs with "
                         "the daemon's identity unless --allow-daemon-user names "
                         "that account",
                         pw->pw_name, (unsigned)pw->pw_uid,
                         pw->pw_uid == geteuid() ? "sluiced's own" : "root's");
    if (geteuid() != 0 && pw->pw_uid != geteuid())
        return sl_errorf(err, -EPERM,
                         "unix user \"%s\": sluiced runs as uid %u, not root, and "
                         "cannot switch to another account",
                         pw->pw_name, (unsigned)geteuid());
    return 0;
}

static int plan_user_env(struct plan *p, const struct sl_exec_task *t,
                         struct sl_error *err)
{
    struct passwd pw;
    char *pwbuf = NULL;
    const char *home = NULL, *user = NULL, *shell = NULL, *lang;
    const char *name = t->unix_user && *t->unix_user ? t->unix_user : NULL;
    bool root = geteuid() == 0;
    int rc;

    memset(&pw, 0, sizeof(pw));

    /* Who the task runs as (sl_exec_account's rules) */
    if ((rc = sl_exec_account(name, t->allow_daemon_user, &pw, &pwbuf, err)) < 0)
        goto out;
    if (root) {
        p->switch_user = true;
        p->uid = pw.pw_uid;
        p->gid = pw.pw_gid;
        sl_strlcpy(p->user, pw.pw_name, sizeof(p->user));
        for (int n = 32;;) {
            int got = n;
            gid_t *g = realloc(p->groups, (size_t)n * sizeof(*g));
            if (!g) {
                rc = sl_errorf(err, -ENOMEM, "out of memory");
                goto out;
            }
            p->groups = g;
            if (getgrouplist(pw.pw_name, pw.pw_gid, p->groups, &got) >= 0) {
                p->ngroups = got;
                break;
            }
            if (n >= 65536) {
                rc = sl_errorf(err, -E2BIG, "unix user \"%s\": too many groups",
                               pw.pw_name);
                goto out;
            }
            n = got > n ? got : n * 2;
        }
    }
    user = pw.pw_name;
    sl_strlcpy(p->user, user, sizeof(p->user));
    home = pw.pw_dir;
    shell = pw.pw_shell;
    if (!home || !*home || strlen(home) >= PATH_MAX)
        home = "/";
    if (!shell || !*shell)
        shell = "/bin/sh";
    if (t->workdir && *t->workdir) {
        if (sl_strlcpy(p->workdir, t->workdir, sizeof(p->workdir)) >=
            sizeof(p->workdir)) {
            rc = sl_errorf(err, -ENAMETOOLONG, "workdir: too long");
            goto out;
        }
    } else {
        sl_strlcpy(p->workdir, home, sizeof(p->workdir));
        p->workdir_fallback = true;
    }

    if (env_put(p, sl_proc_strdupf("PATH=%s", TASK_PATH)) < 0 ||
        env_put(p, sl_proc_strdupf("HOME=%s", home)) < 0 ||
        env_put(p, sl_proc_strdupf("USER=%s", user)) < 0 ||
        env_put(p, sl_proc_strdupf("LOGNAME=%s", user)) < 0 ||
        env_put(p, sl_proc_strdupf("SHELL=%s", shell)) < 0 ||
        ((lang = getenv("LANG")) && strlen(lang) < 64 &&
         env_put(p, sl_proc_strdupf("LANG=%s", lang)) < 0)) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    rc = 0;
out:
    free(pwbuf);
    return rc;
}

/* 'v' is 1..DATASET_FIELD_MAX characters of letters, digits and 'extra'. */
static bool dataset_field_ok(const char *v, const char *extra)
{
    size_t n = 0;

    if (!v)
        return false;
    for (; v[n]; n++)
        if (n >= DATASET_FIELD_MAX ||
            !((v[n] >= 'a' && v[n] <= 'z') || (v[n] >= 'A' && v[n] <= 'Z') ||
              (v[n] >= '0' && v[n] <= '9') || strchr(extra, v[n])))
            return false;
    return n > 0;
}

/* SLUICE_DATASET_<NAME><suffix> into 'buf': NAME upper-cased, '-' -> '_'. */
static void dataset_var(const char *name, const char *suffix, char *buf,
                        size_t size)
{
    size_t len = (size_t)snprintf(buf, size, DATASET_ENV_PREFIX "_");

    for (; *name && len + 1 < size; name++)
        buf[len++] = *name == '-' ? '_'
                     : (*name >= 'a' && *name <= 'z') ? (char)(*name - 32)
                                                      : *name;
    for (; *suffix && len + 1 < size; suffix++)
        buf[len++] = *suffix;
    buf[len] = '\0';
}

int sl_exec_datasets_check(const struct sl_exec_dataset *ds, int n, struct sl_error *err)
{
    char vi[96], vj[96];
    static const char *const suffix[] = {"", "_MODE"};

    if (n < 0 || n > SL_EXEC_MAX_DATASETS)
        return sl_errorf(err, -EINVAL, "datasets: count %d out of 0..%d",
                         n, SL_EXEC_MAX_DATASETS);
    if (n > 0 && !ds)
        return sl_errorf(err, -EINVAL, "datasets: %d datasets but no list",
                         n);
    for (int i = 0; i < n; i++) {
        const struct sl_exec_dataset *d = &ds[i];
        if (!dataset_field_ok(d->name, "_-"))
            return sl_errorf(err, -EINVAL,
                             "datasets[%d]: name must be 1 to %d of A-Z, "
                             "a-z, 0-9, '_', '-'",
                             i, DATASET_FIELD_MAX);
        if (!dataset_field_ok(d->version, "._-"))
            return sl_errorf(err, -EINVAL,
                             "datasets[%d] %s: version must be 1 to %d of "
                             "A-Z, a-z, 0-9, '.', '_', '-'",
                             i, d->name, DATASET_FIELD_MAX);
        if (!d->path || d->path[0] != '/' || strlen(d->path) >= PATH_MAX)
            return sl_errorf(err, -EINVAL,
                             "datasets[%d] %s: path must be absolute", i,
                             d->name);
    }
    /* Two datasets must not write the same variable ("a-b" and "a_b", or
     * "x" and "x-mode"): one would silently hide the other. */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    dataset_var(ds[i].name, suffix[a], vi,
                                sizeof(vi));
                    dataset_var(ds[j].name, suffix[b], vj,
                                sizeof(vj));
                    if (strcmp(vi, vj) == 0)
                        return sl_errorf(err, -EINVAL,
                                         "datasets %s and %s: both would "
                                         "set %s",
                                         ds[i].name,
                                         ds[j].name, vi);
                }
    return 0;
}

/* SLUICE_DATASETS and the two variables of each dataset. */
int sl_exec_dataset_env(const struct sl_exec_dataset *ds, int n,
                        int (*put)(void *arg, char *kv), void *arg)
{
    size_t size = sizeof("SLUICE_DATASETS="), len;
    char var[96], *list;

    for (int i = 0; i < n; i++)
        size += strlen(ds[i].name) + strlen(ds[i].version) + sizeof("@:rw,");
    if (!(list = malloc(size)))
        return -ENOMEM;
    len = (size_t)snprintf(list, size, "SLUICE_DATASETS=");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(list + len, size - len, "%s%s@%s%s", i ? "," : "", ds[i].name,
                                ds[i].version, ds[i].rw ? ":rw" : "");
    if (put(arg, list) < 0)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        dataset_var(ds[i].name, "", var, sizeof(var));
        if (put(arg, sl_proc_strdupf("%s=%s", var, ds[i].path)) < 0 ||
            put(arg, sl_proc_strdupf("%s_MODE=%s", var, ds[i].rw ? "rw" : "ro")) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int plan_put(void *arg, char *kv)
{
    return env_put(arg, kv);
}

static int plan_dataset_env(struct plan *p, const struct sl_exec_task *t)
{
    return sl_exec_dataset_env(t->datasets, t->ndatasets, plan_put, p);
}

/* A UUID as NVML writes them ("GPU-..." or "MIG-..."): safe in a
 * comma-separated list. */
static bool uuid_ok(const char *u)
{
    size_t n = strnlen(u, GPU_UUID_MAX + 1);

    if (n < 5 || n > GPU_UUID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((u[i] >= 'a' && u[i] <= 'z') || (u[i] >= 'A' && u[i] <= 'Z') ||
              (u[i] >= '0' && u[i] <= '9') || u[i] == '-'))
            return false;
    return true;
}

/* SLUICE_GPUS, CUDA_DEVICE_ORDER and the two *_VISIBLE_DEVICES. UUIDs
 * rather than indices where NVML gave them: CUDA accepts "GPU-<uuid>", and
 * a UUID still names the right GPU when the device rules hide the others
 * and CUDA numbers what it can open from 0. */
static int plan_gpu_env(struct plan *p, const struct sl_exec_task *t)
{
    char idx[SL_EXEC_MAX_GPUS * 8] = "";
    char uuids[SL_EXEC_MAX_GPUS * (GPU_UUID_MAX + 1) + 1] = "";
    size_t ilen = 0, ulen = 0;
    bool by_uuid = t->ngpus > 0 && t->host_gpus;

    for (int i = 0; i < t->ngpus; i++) {
        const char *u = t->host_gpus ? t->host_gpus[t->gpus[i]].uuid : "";
        ilen += (size_t)snprintf(idx + ilen, sizeof(idx) - ilen, "%s%d",
                                 i ? "," : "", t->gpus[i]);
        if (!uuid_ok(u))
            by_uuid = false;
        else if (by_uuid)
            ulen += (size_t)snprintf(uuids + ulen, sizeof(uuids) - ulen,
                                     "%s%s", i ? "," : "", u);
    }
    if (env_put(p, sl_proc_strdupf("SLUICE_GPUS=%s", idx)) < 0 ||
        env_put(p, sl_proc_strdupf("CUDA_DEVICE_ORDER=PCI_BUS_ID")) < 0 ||
        env_put(p, sl_proc_strdupf("CUDA_VISIBLE_DEVICES=%s",
                           by_uuid ? uuids : idx)) < 0 ||
        env_put(p, sl_proc_strdupf("NVIDIA_VISIBLE_DEVICES=%s",
                           by_uuid ? uuids : idx)) < 0)
        return -ENOMEM;
    return 0;
}

int sl_proc_plan_env(struct plan *p, const struct sl_exec_task *t,
                    struct sl_error *err)
{
    size_t ntask = 0;
    int rc;

    for (; t->env && t->env[ntask]; ntask++) {
        const char *kv = t->env[ntask];
        const char *eq = strchr(kv, '=');
        if (ntask >= MAX_TASK_ENV)
            return sl_errorf(err, -E2BIG, "env: more than %d entries",
                             MAX_TASK_ENV);
        if (!eq || eq == kv)
            return sl_errorf(err, -EINVAL,
                             "env[%zu]: \"%.40s\" is not KEY=VALUE", ntask,
                             kv);
    }
    /* base (6) + task + executor (8 + 2 per dataset) + NULL */
    if (!(p->envp = calloc(ntask + 16 + 2 * (size_t)t->ndatasets,
                           sizeof(*p->envp))))
        return sl_errorf(err, -ENOMEM, "out of memory");
    if ((rc = plan_user_env(p, t, err)) < 0)
        return rc;
    for (size_t i = 0; i < ntask; i++) {
        /* A job's own SLUICE_DATASET_X would pass for a dataset it was not
         * given: the executor owns that prefix. */
        if (strncmp(t->env[i], DATASET_ENV_PREFIX,
                    strlen(DATASET_ENV_PREFIX)) == 0)
            continue;
        if (env_put(p, sl_proc_strdupf("%s", t->env[i])) < 0)
            return sl_errorf(err, -ENOMEM, "out of memory");
    }
    if (env_put(p, sl_proc_strdupf("SLUICE_JOB_ID=%lld", (long long)t->job_id)) < 0 ||
        env_put(p, sl_proc_strdupf("SLUICE_TASK_INDEX=%d", t->task_index)) < 0 ||
        env_put(p, sl_proc_strdupf("SLUICE_ATTEMPT=%d", t->attempt)) < 0 ||
        plan_gpu_env(p, t) < 0 || plan_dataset_env(p, t) < 0)
        return sl_errorf(err, -ENOMEM, "out of memory");
    return 0;
}

int sl_proc_open_log(struct plan *p, const struct sl_exec_task *t,
                    struct sl_error *err)
{
    char dir[PATH_MAX], *slash;
    struct stat st;
    int rc;

    if (sl_strlcpy(dir, t->log_path, sizeof(dir)) >= sizeof(dir))
        return sl_errorf(err, -ENAMETOOLONG, "log_path: too long");
    if ((slash = strrchr(dir, '/')) && slash != dir) {
        *slash = '\0';
        if ((rc = sl_mkdir_p(dir, 0700)) < 0)
            return sl_errorf(err, rc, "log directory %s: %s", dir,
                             strerror(-rc));
    }
    p->log_fd = open(t->log_path,
                     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW,
                     0600);
    if (p->log_fd < 0 || fstat(p->log_fd, &st) < 0) {
        rc = -errno;
        return sl_errorf(err, rc, "log %s: %s", t->log_path, strerror(-rc));
    }
    if (!S_ISREG(st.st_mode))
        return sl_errorf(err, -EINVAL, "log %s: not a regular file",
                         t->log_path);
    if (fchmod(p->log_fd, 0600) < 0 ||
        (p->switch_user && fchown(p->log_fd, p->uid, p->gid) < 0)) {
        rc = -errno;
        return sl_errorf(err, rc, "log %s: %s", t->log_path, strerror(-rc));
    }
    p->log_written = st.st_size;
    p->log_cap = t->log_cap_bytes;
    p->marker_len = (size_t)snprintf(p->marker, sizeof(p->marker),
                                     "\n[sluice: log truncated at %lld bytes]\n",
                                     (long long)t->log_cap_bytes);
    return 0;
}

int sl_proc_check_task(const struct sl_exec_task *t, struct sl_error *err)
{
    size_t argc = 0;

    if (!t->argv || !t->argv[0] || !t->argv[0][0])
        return sl_errorf(err, -EINVAL, "argv: empty command");
    while (t->argv[argc])
        if (++argc > MAX_ARGS)
            return sl_errorf(err, -E2BIG, "argv: more than %d arguments",
                             MAX_ARGS);
    if (t->job_id < 0 || t->task_index < 0 || t->attempt < 0)
        return sl_errorf(err, -EINVAL,
                         "job %lld task %d attempt %d: must not be negative",
                         (long long)t->job_id, t->task_index, t->attempt);
    if (t->ngpus < 0 || t->ngpus > SL_EXEC_MAX_GPUS)
        return sl_errorf(err, -EINVAL, "gpus: count %d out of 0..%d",
                         t->ngpus, SL_EXEC_MAX_GPUS);
    if (t->ngpus > 0 && !t->gpus)
        return sl_errorf(err, -EINVAL, "gpus: %d devices but no list",
                         t->ngpus);
    if (t->nhost_gpus < 0 || t->nhost_gpus > SL_EXEC_MAX_GPUS ||
        (t->nhost_gpus > 0 && !t->host_gpus))
        return sl_errorf(err, -EINVAL, "host_gpus: count %d out of 0..%d "
                                       "or no list",
                         t->nhost_gpus, SL_EXEC_MAX_GPUS);
    for (int i = 0; i < t->ngpus; i++) {
        if (t->gpus[i] < 0 || t->gpus[i] > 99999)
            return sl_errorf(err, -EINVAL, "gpus[%d]: bad index %d", i,
                             t->gpus[i]);
        if (t->host_gpus && t->gpus[i] >= t->nhost_gpus)
            return sl_errorf(err, -EINVAL,
                             "gpus[%d]: %d is not one of the host's %d GPUs",
                             i, t->gpus[i], t->nhost_gpus);
    }
    if (t->cpu_milli < 0 || t->mem_bytes < 0 || t->pids_max < 0)
        return sl_errorf(err, -EINVAL, "limits: must not be negative");
    if (!t->log_path || !*t->log_path)
        return sl_errorf(err, -EINVAL, "log_path: empty");
    if (t->log_cap_bytes <= 0)
        return sl_errorf(err, -EINVAL, "log_cap_bytes: must be > 0");
    if (t->tty && (t->detach_grace_ms < 0 || t->detach_grace_ms > SL_EXEC_GRACE_MAX_MS))
        return sl_errorf(err, -EINVAL, "detach_grace_ms: %lld out of 0..%d",
                         (long long)t->detach_grace_ms, SL_EXEC_GRACE_MAX_MS);
    if (t->network < SL_EXEC_NET_EGRESS || t->network > SL_EXEC_NET_ISOLATED)
        return sl_errorf(err, -EINVAL, "network: profile %d out of 0..%d",
                         t->network, SL_EXEC_NET_ISOLATED);
    return sl_exec_datasets_check(t->datasets, t->ndatasets, err);
}
