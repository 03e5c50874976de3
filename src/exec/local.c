/*
 * local.c - the local executor (executor.h): each task of a job is a
 * process tree on this machine, run by the process runner of exec.h
 * (proc.c) under a shim that outlives the daemon.
 *
 * The executor keeps the handles of the jobs it started or adopted until
 * they are released. A task's end is learnt two ways: its shim is our
 * child, so SIGCHLD wakes the engine (the handler writes to an eventfd,
 * the wake descriptor) and events() reaps it and polls that job's tasks;
 * or, after a restart, its shim is not our child and events() polls the
 * adopted jobs once a second. Each end is reported once.
 *
 * The nodes are this host (with its GPUs as NVML finds them or as
 * --fake-gpus declares them), or the node list the engine hands over
 * (--fake-nodes): their tasks still run here, on no device of theirs, so
 * without GPU isolation. The SIGCHLD handler is process-wide: one local
 * executor per process.
 */
#include "executor.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../util/imap.h"

#define ADOPTED_POLL_MS 1000      /* tasks whose shim is not our child */
#define TASK_PIDS_MAX 4096        /* processes per task */

struct ltask {
    struct sl_exec_handle h;
    bool started;                 /* a process was started or adopted */
    bool done;                    /* its end was reported (or learnt at
                                     adoption) */
};

struct ljob {
    int64_t id;
    int attempt;
    bool polled;                  /* some shim is not our child: poll it */
    int ntasks;
    struct ltask t[];
};

struct local {
    struct sl_executor base;
    struct sl_exec *px;           /* the process runner */
    struct sl_inventory nodes;
    char log_dir[1100];
    struct sl_imap jobs;          /* id -> struct ljob*, until released */
    struct sl_imap shims;         /* shim pid -> job id */
    int wake_fd;                  /* eventfd; SIGCHLD writes to it */
    int npolled;                  /* jobs with 'polled' and a task not done */
    int64_t next_poll_ms;         /* wall */
    struct sl_exec_event *queue;  /* ends found, not yet handed out */
    int nqueue, queue_cap;
    int64_t detach_grace_ms;      /* interactive tasks (executor.h) */
};

static int g_sigchld_fd = -1;

static void on_sigchld(int sig)
{
    uint64_t one = 1;
    int saved = errno;

    (void)sig;
    if (g_sigchld_fd >= 0 && write(g_sigchld_fd, &one, sizeof(one)) < 0) {
        /* the counter is saturated: a wake-up is pending anyway */
    }
    errno = saved;
}

static void local_caps(const struct sl_executor *x, struct sl_exec_caps *out)
{
    const struct local *l = (const struct local *)x;
    const char *why = NULL, *mech = NULL;

    out->runs_commands = true;
    out->runs_as_accounts = true;
    out->accounts_here = true;
    out->job_tokens = true;
    out->limits = sl_exec_limits_available(l->px, &why);
    sl_strlcpy(out->limits_why, why ? why : "", sizeof(out->limits_why));
    why = NULL;
    out->devices = sl_exec_gpus_available(l->px, &why, &mech);
    sl_strlcpy(out->devices_why, why ? why : "", sizeof(out->devices_why));
    sl_strlcpy(out->devices_mech, mech ? mech : "none", sizeof(out->devices_mech));
    why = NULL;
    out->netns = sl_exec_netns_available(l->px, &why);
    sl_strlcpy(out->netns_why, why ? why : "", sizeof(out->netns_why));
    out->images = false;
    out->interactive = true;
}

static int local_nodes(struct sl_executor *x, struct sl_inventory *out, struct sl_error *err)
{
    struct local *l = (struct local *)x;

    if (sl_inventory_copy(out, &l->nodes) < 0)
        return sl_errorf(err, -ENOMEM, "out of memory");
    return 0;
}

static int local_log_path(const struct sl_executor *x, int64_t job_id, int task, char *buf,
                          size_t size)
{
    const struct local *l = (const struct local *)x;

    if ((size_t)snprintf(buf, size, "%s/%lld.%d.log", l->log_dir, (long long)job_id, task) >=
        size)
        return -ENOSPC;
    return 0;
}

static int local_attach_path(const struct sl_executor *x, int64_t job_id, int task,
                             int attempt, char *buf, size_t size)
{
    const struct local *l = (const struct local *)x;

    return sl_exec_attach_path(l->px, job_id, task, attempt, buf, size) < 0 ? -ENOSPC : 0;
}

/* A new record for 'job' (replacing one of an earlier attempt that was
 * not released). Returns NULL on -ENOMEM. */
static struct ljob *ljob_new(struct local *l, const struct sl_exec_job *job)
{
    struct ljob *j = calloc(1, sizeof(*j) + (size_t)job->ntasks * sizeof(j->t[0]));
    struct ljob *old = sl_imap_get(&l->jobs, job->job_id);

    if (!j)
        return NULL;
    j->id = job->job_id;
    j->attempt = job->attempt;
    j->ntasks = job->ntasks;
    if (sl_imap_put(&l->jobs, j->id, j) < 0) {
        free(j);
        return NULL;
    }
    if (old) {
        for (int t = 0; t < old->ntasks; t++)
            if (old->t[t].h.shim_pid > 0)
                sl_imap_del(&l->shims, old->t[t].h.shim_pid);
        if (old->polled)
            l->npolled--;
        free(old);
    }
    return j;
}

/* Copy what a handle says is in force into a task's state. */
static void state_from_handle(struct sl_exec_task_state *s, const struct sl_exec_handle *h)
{
    s->limits_enforced = h->limits_enforced;
    sl_strlcpy(s->limits_note, h->limits_note, sizeof(s->limits_note));
    s->network_enforced = h->network_enforced;
    sl_strlcpy(s->network_note, h->network_note, sizeof(s->network_note));
    s->gpus_enforced = h->gpus_enforced;
    sl_strlcpy(s->gpus_note, h->gpus_note, sizeof(s->gpus_note));
}

/* Watch task 't' of 'j' by its shim, or poll it when it cannot be. */
static void watch(struct local *l, struct ljob *j, int t)
{
    if (j->t[t].h.shim_pid > 0 && sl_imap_put(&l->shims, j->t[t].h.shim_pid,
                                              (void *)(intptr_t)j->id) == 0)
        return;
    if (!j->polled) {
        j->polled = true;
        l->npolled++;
    }
}

static int local_start(struct sl_executor *x, const struct sl_exec_job *job,
                       struct sl_exec_task_state *out)
{
    struct local *l = (struct local *)x;
    struct ljob *j = ljob_new(l, job);
    int rc = 0;

    for (int t = 0; t < job->ntasks; t++) {
        const struct sl_exec_place *pl = &job->tasks[t];
        const struct sl_node_info *node =
            pl->node >= 0 && pl->node < l->nodes.n ? &l->nodes.nodes[pl->node] : NULL;
        struct sl_exec_task xt = {0};
        struct sl_error err = {0};
        char log_path[1200];

        if (!j || !node) {
            out[t].status = SL_EXEC_TASK_FAILED;
            snprintf(out[t].error, sizeof(out[t].error), "%s",
                     j ? "placed on a node this executor does not have" : "out of memory");
            rc = j ? -EINVAL : -ENOMEM;
            continue;
        }
        local_log_path(x, job->job_id, t, log_path, sizeof(log_path));
        xt.job_id = job->job_id;
        xt.task_index = t;
        xt.attempt = job->attempt;
        xt.argv = job->spec->argv;
        xt.env = job->env;
        xt.workdir = job->spec->workdir;
        xt.network = job->spec->network;
        xt.datasets = job->datasets;
        xt.ndatasets = job->ndatasets;
        xt.gpus = pl->gpus;
        xt.ngpus = pl->ngpus;
        if (node->devices_here) {
            /* its GPU indices are this machine's devices */
            xt.host_gpus = node->gpus;
            xt.nhost_gpus = node->ngpus;
        }
        xt.cpu_milli = job->spec->cpu_milli;
        xt.mem_bytes = job->spec->mem_bytes;
        xt.pids_max = TASK_PIDS_MAX;
        xt.unix_user = job->unix_user;
        xt.allow_daemon_user = job->allow_daemon_user;
        xt.log_path = log_path;
        xt.log_cap_bytes = job->log_cap_bytes;
        xt.tty = job->spec->interactive;
        xt.detach_grace_ms = l->detach_grace_ms;
        if ((rc = sl_exec_start(l->px, &xt, &j->t[t].h, &err)) < 0) {
            out[t].status = SL_EXEC_TASK_FAILED;
            sl_strlcpy(out[t].error, err.text, sizeof(out[t].error));
            continue;
        }
        j->t[t].started = true;
        out[t].status = SL_EXEC_TASK_RUNNING;
        state_from_handle(&out[t], &j->t[t].h);
        watch(l, j, t);
    }
    for (int t = 0; t < job->ntasks; t++)
        if (out[t].status == SL_EXEC_TASK_FAILED)
            return rc < 0 ? rc : -EIO;
    return 0;
}

static int local_signal(struct sl_executor *x, int64_t job_id, int attempt, int sig)
{
    struct local *l = (struct local *)x;
    struct ljob *j = sl_imap_get(&l->jobs, job_id);
    int rc = -ESRCH;

    if (!j || j->attempt != attempt)
        return -ESRCH;
    for (int t = 0; t < j->ntasks; t++)
        if (j->t[t].started && !j->t[t].done && sl_exec_signal(l->px, &j->t[t].h, sig) == 0)
            rc = 0;
    return rc;
}

static int local_adopt(struct sl_executor *x, const struct sl_exec_job *job,
                       struct sl_exec_task_state *out)
{
    struct local *l = (struct local *)x;
    struct ljob *j = ljob_new(l, job);

    if (!j)
        return -ENOMEM;
    for (int t = 0; t < job->ntasks; t++) {
        struct ltask *tk = &j->t[t];
        int code = 0, rc = sl_exec_adopt(l->px, job->job_id, t, job->attempt, &tk->h, &code);
        if (rc == 0) {
            tk->started = true;
            out[t].status = SL_EXEC_TASK_RUNNING;
            state_from_handle(&out[t], &tk->h);
            watch(l, j, t); /* adopted shims are not our children */
        } else if (rc == 1) {
            tk->started = tk->done = true;
            out[t].status = SL_EXEC_TASK_EXITED;
            out[t].exit_code = code;
        } else {
            tk->done = true; /* nothing to release: it left no record */
            out[t].status = SL_EXEC_TASK_GONE;
        }
    }
    return 0;
}

static int queue_push(struct local *l, const struct sl_exec_event *ev)
{
    if (l->nqueue == l->queue_cap) {
        int cap = l->queue_cap ? l->queue_cap * 2 : 64;
        struct sl_exec_event *q = realloc(l->queue, (size_t)cap * sizeof(*q));
        if (!q)
            return -ENOMEM;
        l->queue = q;
        l->queue_cap = cap;
    }
    l->queue[l->nqueue++] = *ev;
    return 0;
}

/* Poll every task of 'j' still running; queue the ends found. A task whose
 * end cannot be queued (no memory) is polled again next time. */
static void poll_job(struct local *l, struct ljob *j)
{
    bool left = false;

    for (int t = 0; t < j->ntasks; t++) {
        struct ltask *tk = &j->t[t];
        struct sl_exec_event ev = {
            .kind = SL_EXEC_EV_EXITED, .job_id = j->id, .attempt = j->attempt, .task = t};
        int rc;
        if (!tk->started || tk->done)
            continue;
        if ((rc = sl_exec_poll(l->px, &tk->h, &ev.exit_code)) == 0) {
            left = true;
            continue;
        }
        if (rc < 0)
            ev.kind = SL_EXEC_EV_LOST;
        if (queue_push(l, &ev) < 0) {
            left = true;
            continue;
        }
        tk->done = true;
    }
    if (!left && j->polled) {
        j->polled = false;
        l->npolled--;
    }
}

static int local_events(struct sl_executor *x, int64_t now_ms, struct sl_exec_event *ev,
                        int max)
{
    struct local *l = (struct local *)x;
    const pid_t *exited = NULL;
    size_t nexited;
    uint64_t cnt;
    int n;

    if (read(l->wake_fd, &cnt, sizeof(cnt)) < 0) {
        /* nothing signalled since the last call */
    }
    nexited = sl_exec_reap(l->px, &exited);
    for (size_t i = 0; i < nexited; i++) {
        int64_t id = (int64_t)(intptr_t)sl_imap_get(&l->shims, exited[i]);
        struct ljob *j = id ? sl_imap_get(&l->jobs, id) : NULL;
        if (j)
            poll_job(l, j);
    }
    if (l->npolled > 0 && now_ms >= l->next_poll_ms) {
        size_t pos = 0;
        int64_t id;
        void *v;
        while (sl_imap_next(&l->jobs, &pos, &id, &v))
            if (((struct ljob *)v)->polled)
                poll_job(l, v);
        l->next_poll_ms = now_ms + ADOPTED_POLL_MS;
    }
    if ((n = l->nqueue < max ? l->nqueue : max) == 0)
        return 0;
    memcpy(ev, l->queue, (size_t)n * sizeof(*ev));
    memmove(l->queue, l->queue + n, (size_t)(l->nqueue - n) * sizeof(*ev));
    l->nqueue -= n;
    return n;
}

static int64_t local_next_event_ms(const struct sl_executor *x)
{
    const struct local *l = (const struct local *)x;

    if (l->nqueue > 0)
        return 0;
    return l->npolled > 0 ? l->next_poll_ms : INT64_MAX;
}

static int local_wake_fd(const struct sl_executor *x)
{
    return ((const struct local *)x)->wake_fd;
}

static void local_release(struct sl_executor *x, int64_t job_id, int attempt)
{
    struct local *l = (struct local *)x;
    struct ljob *j = sl_imap_get(&l->jobs, job_id);

    if (!j || j->attempt != attempt)
        return;
    for (int t = 0; t < j->ntasks; t++) {
        if (j->t[t].h.shim_pid > 0)
            sl_imap_del(&l->shims, j->t[t].h.shim_pid);
        if (j->t[t].started)
            sl_exec_release(l->px, &j->t[t].h);
    }
    if (j->polled)
        l->npolled--;
    sl_imap_del(&l->jobs, job_id);
    free(j);
}

static void local_destroy(struct sl_executor *x)
{
    struct local *l = (struct local *)x;
    size_t pos = 0;
    int64_t id;
    void *v;

    if (g_sigchld_fd == l->wake_fd)
        g_sigchld_fd = -1;
    while (sl_imap_next(&l->jobs, &pos, &id, &v))
        free(v);
    sl_imap_fini(&l->jobs);
    sl_imap_fini(&l->shims);
    free(l->queue);
    if (l->wake_fd >= 0)
        close(l->wake_fd);
    sl_exec_destroy(l->px);
    sl_inventory_fini(&l->nodes);
    free(l);
}

static const struct sl_executor_ops local_ops = {
    .name = "local",
    .caps = local_caps,
    .nodes = local_nodes,
    .start = local_start,
    .signal = local_signal,
    .adopt = local_adopt,
    .events = local_events,
    .next_event_ms = local_next_event_ms,
    .wake_fd = local_wake_fd,
    .release = local_release,
    .log_path = local_log_path,
    .attach_path = local_attach_path,
    .destroy = local_destroy,
};

struct sl_executor *sl_local_executor_create(const struct sl_executor_config *cfg,
                                             struct sl_error *err)
{
    struct local *l = calloc(1, sizeof(*l));
    struct sigaction sa;
    char run_dir[1100];
    int rc;

    if (!l) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    l->base.ops = &local_ops;
    l->wake_fd = -1;
    sl_imap_init(&l->jobs);
    sl_imap_init(&l->shims);
    l->detach_grace_ms = cfg->detach_grace_ms;
    snprintf(l->log_dir, sizeof(l->log_dir), "%s/logs", cfg->data_dir);
    snprintf(run_dir, sizeof(run_dir), "%s/run", cfg->data_dir);
    if ((rc = sl_mkdir_p(l->log_dir, 0700)) < 0 || (rc = sl_mkdir_p(run_dir, 0700)) < 0) {
        sl_errorf(err, rc, "--data-dir %s: %s", cfg->data_dir, strerror(-rc));
        goto fail;
    }
    rc = cfg->nodes ? sl_inventory_copy(&l->nodes, cfg->nodes)
                    : sl_inventory_host(&l->nodes, cfg->fake_gpus, err);
    if (rc < 0) {
        if (cfg->nodes)
            sl_errorf(err, rc, "out of memory");
        goto fail;
    }
    if (!(l->px = sl_exec_create(run_dir))) {
        rc = -errno;
        sl_errorf(err, rc, "executor: %s", strerror(-rc));
        goto fail;
    }
    if ((l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        rc = -errno;
        sl_errorf(err, rc, "eventfd: %s", strerror(-rc));
        goto fail;
    }
    g_sigchld_fd = l->wake_fd;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    return &l->base;
fail:
    local_destroy(&l->base);
    errno = -rc;
    return NULL;
}
