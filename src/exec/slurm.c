/*
 * slurm.c - the Slurm executor (executor.h): each placement Sluice's
 * scheduler decides runs as one Slurm job on exactly the nodes and GPU
 * indices decided, in the partition Sluice is given (docs/slurm.md).
 *
 * A job attempt is one batch job named "sluice-<id>-<attempt>": a plain
 * job for tasks on one node, a heterogeneous job (one component per node,
 * srun across them) for a gang over several. Each component asks for its
 * node (-w), its tasks, their CPUs and memory, and their GPUs as GRES of
 * one type per index (gpu:g3:1) or, for a fraction, shards of that GPU
 * (shard:g3:500). Slurm can then start it only where Sluice placed it;
 * once it runs, its
 * allocation is read back and checked, and a job that got anything else is
 * cancelled and reported lost.
 *
 * Jobs are submitted pinned and ready (not held): Slurm can start one
 * only where it is pinned, and a held job's release is one more call per
 * batch of jobs for no sooner a start (bench/slurm_e2e.sh: 600 jobs took
 * 41-46 s pinned against 47-51 s held and released, in alternated runs).
 *
 * Every call to Slurm (sbatch, scancel, squeue, scontrol) is made by a
 * thread of the executor's own, so that the engine never waits for one:
 * start queues the submission, for the submitters (up to WAYS sbatch at
 * once, each as soon as its job is decided), and signal the scancel, for
 * the worker; the poller reads the cluster every poll interval (its jobs'
 * states, exit codes and times with one squeue, details with scontrol for
 * those that started or vanished, up to WAYS at once on short-lived
 * helper threads, the nodes every few seconds), turning what it finds
 * into events and waking the engine through an eventfd. A submission thus
 * never waits for a poll (under load, a poll and its checks of the jobs
 * that started take a good part of a second). With the jobcomp file, a
 * reader thread of its own reads the file's tail whenever it grows
 * (inotify) and at every poll interval, so that an end is seen at once,
 * even while the poller waits for Slurm.
 * A submission that fails ends its tasks with code 127 and the reason as
 * the event's note.
 *
 * A signal reaches a job only once its batch script runs (Slurm drops one
 * sent earlier, though it says RUNNING): the script first creates
 * OUTDIR/.<id>.<attempt>.up, and a signal waits for that file (a stop
 * before it cancels the job outright).
 *
 * The mapping from a Sluice job attempt to its Slurm job id is kept in
 * DATA/run/<id>.<attempt>.slurm, so that a restarted sluiced adopts the
 * jobs that still run and learns how the others ended (for as long as
 * Slurm keeps them: MinJobAge, docs/slurm.md).
 *
 * This file submits, signals, reads the nodes and answers the engine;
 * slurm_script.c writes a job's batch script; slurm_poll.c reads what
 * Slurm says of the jobs; slurm_stage.c keeps staged successors
 * (slurm_int.h).
 *
 * Locking: 'mu' guards the job table, the command and event queues, the
 * inventory and every field of a job record; the worker, the poller, their
 * helpers and the jobcomp reader run Slurm's tools and read files without
 * it. A job record is freed (by the worker or the poller) once the engine
 * released it and no command or poll names it (ncmds).
 */
#include "slurm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../util/buf.h"

/* ---- small helpers ---------------------------------------------------- */

void sl_slx_tool(const struct slurm *s, const char *name, char *buf, size_t size)
{
    if (s->bin[0])
        snprintf(buf, size, "%s/%s", s->bin, name);
    else
        snprintf(buf, size, "%s", name);
}

int sl_slx_vec_grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *nv = realloc(*v, ncap * elem);
    if (!nv)
        return -ENOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* Caller holds mu. */
void sl_slx_wake(struct slurm *s)
{
    uint64_t one = 1;

    if (write(s->wake_fd, &one, sizeof(one)) < 0) {
        /* saturated: a wake-up is pending anyway */
    }
}

struct sjob *sl_slx_job_find(struct slurm *s, int64_t id, int attempt)
{
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i]->id == id && s->jobs[i]->attempt == attempt && !s->jobs[i]->released)
            return s->jobs[i];
    return NULL;
}

/* Queue an end for every task of 'j' (caller holds mu), with its exit code
 * (codes; NULL = 0) and its times (NULL = unknown). A job lost (node
 * failure, a node out of service) has the nodes read again at once, so
 * that its retry is not placed where it was lost. */
void sl_slx_push_end(struct slurm *s, struct sjob *j, enum sl_exec_event_kind kind,
                     const int *codes, const struct span *sp, const char *note)
{
    sl_slx_successor_end(s, j, kind, codes);
    if (kind == SL_EXEC_EV_LOST)
        s->nodes_stale = true;
    for (int t = 0; t < j->ntasks; t++) {
        if (sl_slx_vec_grow((void **)&s->events, &s->events_cap, s->nevents,
                            sizeof(*s->events)) < 0) {
            sl_error("msg=\"slurm executor: out of memory; a task's end is lost\" job=%lld",
                     (long long)j->id);
            continue;
        }
        s->events[s->nevents] = (struct sl_exec_event){
            .kind = kind, .job_id = j->id, .attempt = j->attempt, .task = t,
            .exit_code = codes ? codes[t] : 0,
            .timed_out = kind == SL_EXEC_EV_EXITED && j->time_limit,
            .start_ms = sp && t < MAX_TASKS ? sp->start_ms[t] : 0,
            .end_ms = sp && t < MAX_TASKS ? sp->end_ms[t] : 0};
        snprintf(s->events[s->nevents++].note, sizeof(s->events[0].note), "%s",
                 note ? note : "");
    }
    j->st = SJ_DONE;
    sl_slx_wake(s);
}


static void job_free(struct sjob *j)
{
    if (!j)
        return;
    free(j->script);
    free(j->want);
    free(j->comp);
    free(j->ncomp_tasks);
    free(j->comps);
    free(j);
}

/* Queue a signal for the worker (caller holds mu). */
int sl_slx_queue_cmd(struct slurm *s, enum cmd_kind kind, struct sjob *j, int sig)
{
    if (sl_slx_vec_grow((void **)&s->cmds, &s->cmds_cap, s->ncmds, sizeof(*s->cmds)) < 0)
        return -ENOMEM;
    s->cmds[s->ncmds++] = (struct cmd){kind, j, sig};
    j->ncmds++;
    pthread_cond_signal(&s->cond);
    return 0;
}

/* Queue a submission for the submitters (caller holds mu). */
static int queue_submit(struct slurm *s, struct sjob *j)
{
    if (sl_slx_vec_grow((void **)&s->subq, &s->subq_cap, s->nsubq, sizeof(*s->subq)) < 0)
        return -ENOMEM;
    s->subq[s->nsubq++] = j;
    j->ncmds++;
    j->submitting = true;
    pthread_cond_signal(&s->sub_cond);
    return 0;
}

/* DATA/run/<id>.<attempt>.slurm: the Slurm job id of a Sluice attempt. */
static void map_path(const struct slurm *s, int64_t id, int attempt, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%lld.%d.slurm", s->run_dir, (long long)id, attempt);
}

/* OUTDIR/.<id>.<attempt>.up: made by the batch script as its first act,
 * so that the worker knows a signal will find it (Slurm drops a signal
 * sent to a job whose script its node has not started yet). */
void sl_slx_up_path(const struct slurm *s, int64_t id, int attempt, char *buf, size_t size)
{
    snprintf(buf, size, "%s/.%lld.%d.up", s->outdir, (long long)id, attempt);
}

bool sl_slx_is_up(const struct slurm *s, const struct sjob *j)
{
    char path[PATH_MAX + 64];

    sl_slx_up_path(s, j->id, j->attempt, path, sizeof(path));
    return access(path, F_OK) == 0;
}

/* ---- the batch job ----------------------------------------------------- */

static int sig_name(int sig, char *buf, size_t size)
{
    const char *n = sl_signal_name(sig);

    if (!n || strncmp(n, "SIG", 3) != 0)
        return -EINVAL;
    snprintf(buf, size, "%s", n + 3);
    return 0;
}

struct argv_b {
    char **v;
    size_t n, cap;
    bool failed;
};

static void argv_free(char **v)
{
    for (char **a = v; a && *a; a++)
        free(*a);
    free(v);
}

static void arg(struct argv_b *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(struct argv_b *a, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    if (a->failed)
        return;
    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0 || sl_slx_vec_grow((void **)&a->v, &a->cap, a->n + 1, sizeof(char *)) < 0) {
        free(n < 0 ? NULL : s);
        a->failed = true;
        return;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

/* The GRES of one component: its whole GPUs by index (gpu:g3:1), or its
 * shards of each GPU (shard:g3:500). */
static void gres_arg(struct argv_b *a, const struct sl_slurm_place *c)
{
    struct sl_buf g;

    if (c->ngpus == 0 && c->nshards == 0)
        return;
    sl_buf_init(&g);
    sl_buf_adds(&g, "--gres=");
    for (int k = 0; k < c->ngpus; k++)
        sl_buf_printf(&g, "%sgpu:g%d:1", k ? "," : "", c->gpus[k]);
    for (int k = 0; k < c->nshards; k++)
        sl_buf_printf(&g, "%sshard:g%d:%d", k || c->ngpus ? "," : "", c->shard_gpu[k],
                      c->shards[k]);
    if (g.failed)
        a->failed = true;
    else
        arg(a, "%s", g.data);
    sl_buf_fini(&g);
}

/* sbatch's arguments for job 'j': its name, partition, account, time
 * limit and output, then one component per node (--ntasks its tasks
 * there, --mem theirs together), then the script's path. The C API's job
 * description (slurm_lib.c) says the same. */
static char **sbatch_argv(const struct slurm *s, const struct sjob *j)
{
    struct argv_b a = {0};
    char sbatch[PATH_MAX + 16];

    sl_slx_tool(s, "sbatch", sbatch, sizeof(sbatch));
    arg(&a, "%s", sbatch);
    arg(&a, "--parsable");
    arg(&a, "--job-name=sluice-%lld-%d", (long long)j->id, j->attempt);
    arg(&a, "--comment=sluice");
    arg(&a, "--partition=%s", s->partition);
    /* ALL, of sbatch's own environment, which is the executor's
     * (tool_env): any other value makes slurmd run "su - USER -c env" on
     * the node before each job (22.05, whatever --get-user-env says), a
     * login shell per job; the script sets the job's whole environment */
    arg(&a, "--export=ALL");
    arg(&a, "--no-requeue");
    arg(&a, "--open-mode=append");
    arg(&a, "--output=%s/%lld.0.log", s->outdir, (long long)j->id);
    arg(&a, "--chdir=/"); /* the script goes home where the node has it */
    if (j->as_uid) {
        arg(&a, "--uid=%u", (unsigned)j->uid);
        arg(&a, "--gid=%u", (unsigned)j->gid);
    }
    if (j->dep) /* staged: Slurm starts it when that one completes */
        arg(&a, "--dependency=afterok:%llu", (unsigned long long)j->after_sid);
    if (j->time_min > 0)
        arg(&a, "--time=%lld", (long long)j->time_min);
    for (int c = 0; c < j->ncomp; c++) {
        if (c)
            arg(&a, ":");
        arg(&a, "--nodes=1");
        arg(&a, "--ntasks=%d", j->ncomp_tasks[c]);
        arg(&a, "--nodelist=%s", j->comps[c].node);
        arg(&a, "--cpus-per-task=%lld", (long long)j->cpus);
        arg(&a, "--mem=%lldM", (long long)j->mem_mb * j->ncomp_tasks[c]);
        gres_arg(&a, &j->comps[c]);
    }
    /* the script as a file after the components: sbatch reads a
     * heterogeneous job's script from stdin wrongly (22.05) */
    arg(&a, "%s/%lld.%d.%u.sh", s->run_dir, (long long)j->id, j->attempt, j->seq);
    if (a.failed) {
        argv_free(a.v);
        return NULL;
    }
    return a.v;
}

/* ---- the worker: Slurm's tools ------------------------------------------ */

/* Run a Slurm tool; 'say' (may be NULL) gets the first line of what it
 * said when it failed. Returns its exit status, or -errno. */
int sl_slx_call(const struct slurm *s, char *const argv[], const char *input,
                struct sl_run_result *res, char *say, size_t say_size)
{
    struct sl_error err = {0};
    int rc = sl_run(argv, s->tool_env, input, input ? strlen(input) : 0, OUT_CAP, CMD_TIMEOUT_MS,
                    res, &err);

    if (rc < 0) {
        if (say)
            snprintf(say, say_size, "%s", err.text);
        return rc;
    }
    if (res->status != 0 && say)
        sl_run_say(res, say, say_size);
    return res->status;
}

/* Write a batch script for sbatch to read: private, not synced (a script
 * lost in a crash is a submission that did not happen). */
static int write_script(const char *path, const char *text)
{
    size_t len = strlen(text), off = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = 0;

    if (fd < 0)
        return -errno;
    while (off < len && rc == 0) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno != EINTR)
            rc = -errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    return rc;
}

static bool handed_over(struct slurm *s, const struct sjob *j)
{
    bool h;

    pthread_mutex_lock(&s->mu);
    h = j->handed;
    pthread_mutex_unlock(&s->mu);
    return h;
}

/* sbatch: the job's script to DATA/run/<id>.<attempt>.<seq>.sh (sbatch's
 * last argument), sbatch, the script removed (Slurm keeps its copy).
 * Returns its Slurm id, or 0 with why in 'say'. */
static int64_t sbatch(struct slurm *s, struct sjob *j, char *say, size_t say_size)
{
    struct sl_run_result res = {0};
    char path[PATH_MAX + 64], **argv = NULL;
    int64_t id = 0;
    int rc;
    char *semi;

    snprintf(path, sizeof(path), "%s/%lld.%d.%u.sh", s->run_dir, (long long)j->id, j->attempt,
             j->seq);
    if (!(argv = sbatch_argv(s, j))) {
        snprintf(say, say_size, "out of memory");
        return 0;
    }
    if ((rc = write_script(path, j->script)) < 0) {
        snprintf(say, say_size, "cannot write %s: %s", path, strerror(-rc));
        argv_free(argv);
        return 0;
    }
    rc = sl_slx_call(s, argv, NULL, &res, say, say_size);
    unlink(path);
    argv_free(argv);
    semi = res.out.data ? strchr(res.out.data, ';') : NULL;
    if (semi)
        *semi = '\0';
    if (rc == 0 && res.out.data) {
        char *nl = strchr(res.out.data, '\n');
        if (nl)
            *nl = '\0';
        if (sl_parse_int64(res.out.data, 1, INT64_MAX, &id) < 0)
            snprintf(say, say_size, "sbatch answered no job id: '%.60s'", res.out.data);
    }
    sl_run_result_fini(&res);
    return id;
}

/* Submit a job, pinned and ready, through Slurm's C API when it can take
 * it, else sbatch. A staged job refused for its dependency after it was
 * handed over (its predecessor completed and Slurm forgot it meanwhile)
 * goes again without one. Returns its Slurm id, or 0 when it ended
 * (refused). */
static uint64_t do_submit(struct slurm *s, struct sjob *j)
{
    char say[160] = "", path[PATH_MAX + 64], text[32];
    int64_t id = 0, t0 = sl_now_ms();
    bool lib = s->lib && sl_slx_lib_fits(j);

    id = lib ? (int64_t)sl_slx_lib_submit(s, j, say, sizeof(say))
             : sbatch(s, j, say, sizeof(say));
    if (id <= 0 && j->dep && handed_over(s, j)) {
        j->dep = false;
        say[0] = '\0';
        id = lib ? (int64_t)sl_slx_lib_submit(s, j, say, sizeof(say))
                 : sbatch(s, j, say, sizeof(say));
    }
    sl_debug("msg=\"slurm executor: submitted\" job=%lld attempt=%d slurm_job=%lld at_ms=%lld "
             "submit_ms=%lld via=%s", (long long)j->id, j->attempt, (long long)id, (long long)t0,
             (long long)(sl_now_ms() - t0), lib ? "api" : "sbatch");
    pthread_mutex_lock(&s->mu);
    if (id > 0) {
        j->slurm_id = (uint64_t)id;
        j->unheld = true; /* not held: the poll leaves a hold on it to whoever set it */
        if (j->st == SJ_SUBMIT)
            j->st = SJ_WAITING;
    } else if (j->staged) {
        sl_warn("msg=\"slurm executor: a staged job was refused; it waits to be placed\" "
                "job=%lld error=\"%s\"", (long long)j->id, say[0] ? say : "sbatch failed");
        sl_slx_push_unstaged(s, j);
    } else if (j->cancel_after) {
        j->st = SJ_DONE; /* withdrawn meanwhile: nothing to tell */
    } else {
        int codes[MAX_TASKS];
        char note[160];
        for (int t = 0; t < j->ntasks && t < MAX_TASKS; t++)
            codes[t] = 127;
        snprintf(note, sizeof(note), "Slurm refused the job: %s", say[0] ? say : "sbatch failed");
        sl_slx_push_end(s, j, SL_EXEC_EV_EXITED, codes, NULL, note);
    }
    pthread_mutex_unlock(&s->mu);
    if (id > 0) {
        map_path(s, j->id, j->attempt, path, sizeof(path));
        snprintf(text, sizeof(text), "%lld\n", (long long)id);
        if (sl_write_file_atomic(path, text, strlen(text), 0600) < 0)
            sl_warn("msg=\"slurm executor: cannot record a job's Slurm id\" path=%s", path);
    }
    return id > 0 ? (uint64_t)id : 0;
}

/* Release held jobs (adopted ones that an earlier sluiced submitted held):
 * one scontrol per 256 of them. Those of a call that fails stay held until
 * the next poll sees them so and releases each again; a job held by hand
 * after its release, or after this executor submitted it, stays held. The
 * jobs must be pinned (ncmds) by the caller. */
void sl_slx_release(struct slurm *s, struct sjob *const *js, size_t n)
{
    char scontrol[PATH_MAX + 16], list[256 * 21], say[160];
    char *argv[] = {scontrol, "release", list, NULL};
    struct sl_run_result res;

    sl_slx_tool(s, "scontrol", scontrol, sizeof(scontrol));
    for (size_t i = 0, first; i < n;) {
        size_t len = 0;
        for (first = i; i < n && i - first < 256; i++)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%llu",
                                    i > first ? "," : "", (unsigned long long)js[i]->slurm_id);
        say[0] = '\0';
        if (sl_slx_call(s, argv, NULL, &res, say, sizeof(say)) == 0) {
            pthread_mutex_lock(&s->mu);
            for (size_t k = first; k < i; k++)
                js[k]->unheld = true;
            pthread_mutex_unlock(&s->mu);
        } else
            sl_warn("msg=\"scontrol release failed; retried at the next poll\" error=\"%s\"", say);
        sl_run_result_fini(&res);
    }
}

/* scancel JOB when 'sig' is 0 (cancel it: Slurm's SIGTERM, KillWait,
 * SIGKILL, wherever it is in its launch), else scancel --signal=SIG --full
 * JOB (to the batch script, its children and its steps). */
void sl_slx_scancel(struct slurm *s, uint64_t sid, int sig)
{
    char scancel[PATH_MAX + 16], sigarg[32], id[32], name[16], say[160] = "";
    char *argv[] = {scancel, sigarg, "--full", id, NULL};
    struct sl_run_result res;

    if (sig && sig_name(sig, name, sizeof(name)) < 0)
        return;
    sl_slx_tool(s, "scancel", scancel, sizeof(scancel));
    snprintf(id, sizeof(id), "%llu", (unsigned long long)sid);
    if (sig) {
        snprintf(sigarg, sizeof(sigarg), "--signal=%s", name);
    } else {
        argv[1] = id;
        argv[2] = NULL;
    }
    if (sl_slx_call(s, argv, NULL, &res, say, sizeof(say)) != 0)
        sl_warn("msg=\"scancel failed\" slurm_job=%s signal=%d error=\"%s\"", id, sig, say);
    sl_run_result_fini(&res);
}

/* Slurm delivers a signal only to a script its node has started: a job
 * whose script has not yet said it is up (sl_slx_is_up) is cancelled outright
 * for a stop (SIGTERM, SIGKILL: it has nothing to save yet), and gets any
 * other signal (a checkpoint signal) once it is up, at a poll. */
static void do_signal(struct slurm *s, struct sjob *j, int sig)
{
    enum sj_state st;
    uint64_t sid;

    sl_slx_hold_successor(s, j);
    pthread_mutex_lock(&s->mu);
    st = j->st;
    sid = j->slurm_id;
    pthread_mutex_unlock(&s->mu);
    if (st == SJ_DONE || sid == 0)
        return;
    if (sl_slx_is_up(s, j)) {
        sl_slx_scancel(s, sid, sig);
    } else if (sig == SIGTERM || sig == SIGKILL) {
        pthread_mutex_lock(&s->mu);
        j->killed_sig = sig;
        pthread_mutex_unlock(&s->mu);
        sl_slx_scancel(s, sid, 0);
    } else {
        pthread_mutex_lock(&s->mu);
        j->deferred_sig = sig;
        pthread_mutex_unlock(&s->mu);
    }
}

/* ---- nodes ----------------------------------------------------------------- */

/* Read the partition's nodes into 'out' (empty on entry). */
/* How Slurm confines jobs (scontrol show config), read once at open: a
 * change of Slurm's configuration is seen when sluiced restarts. */
static int read_confine(struct slurm *s, struct sl_error *err)
{
    char tool_path[PATH_MAX + 16], say[160] = "";
    char *argv[] = {tool_path, "show", "config", NULL};
    struct sl_run_result res = {0};
    int rc;

    sl_slx_tool(s, "scontrol", tool_path, sizeof(tool_path));
    rc = sl_slx_call(s, argv, NULL, &res, say, sizeof(say));
    if (rc == 0 && (!res.out.data || sl_slurm_parse_confine(res.out.data, &s->confine) < 0))
        snprintf(say, sizeof(say), "its answer has no TaskPlugin");
    else if (rc != 0 && !say[0])
        snprintf(say, sizeof(say), "exit status %d", rc);
    sl_run_result_fini(&res);
    if (say[0])
        return sl_errorf(err, -EIO, "slurm: scontrol show config: %s", say);
    return 0;
}

static int read_nodes(struct slurm *s, struct sl_inventory *out, struct sl_error *err)
{
    char scontrol[PATH_MAX + 16], say[160] = "";
    char *argv[] = {scontrol, "show", "node", "-o", NULL};
    struct sl_run_result res;
    struct sl_slurm_node *node = malloc(sizeof(*node));
    int rc = 0;

    if (!node)
        return sl_errorf(err, -ENOMEM, "out of memory");
    sl_slx_tool(s, "scontrol", scontrol, sizeof(scontrol));
    if ((rc = sl_slx_call(s, argv, NULL, &res, say, sizeof(say))) != 0) {
        rc = sl_errorf(err, rc < 0 ? rc : -EIO, "slurm: scontrol show node: %s", say);
        goto out;
    }
    for (char *line = res.out.data, *nl; line && *line && rc == 0; line = nl ? nl + 1 : NULL) {
        if ((nl = strchr(line, '\n')))
            *nl = '\0';
        if (sl_slurm_parse_node(line, node) < 0 ||
            !sl_slurm_lists_meet(s->partition, node->partitions))
            continue;
        if ((rc = sl_inventory_add(out, &node->info)) < 0)
            sl_errorf(err, rc, "out of memory");
    }
out:
    sl_run_result_fini(&res);
    free(node);
    return rc;
}

/* Fold a fresh reading into the inventory (caller holds mu): a known node
 * keeps its index and takes its new state, a new one is appended, one that
 * is gone is down. Returns whether anything changed. */
static bool nodes_merge(struct slurm *s, const struct sl_inventory *now)
{
    bool changed = false;

    for (int i = 0; i < s->nodes.n; i++) {
        struct sl_node_info *n = &s->nodes.nodes[i];
        const struct sl_node_info *m = NULL;
        for (int k = 0; k < now->n && !m; k++)
            if (strcmp(now->nodes[k].name, n->name) == 0)
                m = &now->nodes[k];
        enum sl_node_state st = m ? m->state : SL_NODE_DOWN;
        if (st != n->state || (m && strcmp(m->reason, n->reason) != 0)) {
            n->state = st;
            snprintf(n->reason, sizeof(n->reason), "%s", m ? m->reason : "not in the partition");
            changed = true;
        }
    }
    for (int k = 0; k < now->n; k++) {
        bool known = false;
        for (int i = 0; i < s->nodes.n && !known; i++)
            known = strcmp(now->nodes[k].name, s->nodes.nodes[i].name) == 0;
        if (!known && sl_inventory_add(&s->nodes, &now->nodes[k]) == 0)
            changed = true;
    }
    return changed;
}

static void poll_nodes(struct slurm *s)
{
    struct sl_inventory now = {NULL, 0, 0};
    struct sl_error err = {0};

    if (read_nodes(s, &now, &err) < 0) {
        sl_warn("msg=\"slurm executor: cannot read the nodes\" error=\"%s\"", err.text);
        return;
    }
    pthread_mutex_lock(&s->mu);
    if (nodes_merge(s, &now) &&
        sl_slx_vec_grow((void **)&s->events, &s->events_cap, s->nevents, sizeof(*s->events)) == 0) {
        s->events[s->nevents++] = (struct sl_exec_event){.kind = SL_EXEC_EV_NODES};
        sl_slx_wake(s);
    }
    pthread_mutex_unlock(&s->mu);
    sl_inventory_fini(&now);
}

/* ---- the worker loop -------------------------------------------------------- */

/* Free the jobs the engine released that nothing names (caller holds mu). */
static void reap_released(struct slurm *s)
{
    size_t k = 0;

    for (size_t i = 0; i < s->njobs; i++) {
        if (s->jobs[i]->released && s->jobs[i]->ncmds == 0)
            job_free(s->jobs[i]);
        else
            s->jobs[k++] = s->jobs[i];
    }
    s->njobs = k;
}

/* After sbatch (caller holds mu): what was kept for it goes, a withdrawn
 * job is cancelled, and a signal that came meanwhile is queued. */
void sl_slx_submitted(struct slurm *s, struct sjob *j)
{
    free(j->script);
    j->script = NULL;
    j->submitting = false;
    if (j->cancel_after && j->slurm_id && sl_slx_queue_cmd(s, C_CANCEL, j, 0) < 0)
        sl_warn("msg=\"slurm executor: out of memory; a withdrawn staged job is not "
                "cancelled\" slurm_job=%llu", (unsigned long long)j->slurm_id);
    if (j->sig_after && j->st != SJ_DONE && sl_slx_queue_cmd(s, C_SIGNAL, j, j->sig_after) < 0)
        sl_warn("msg=\"slurm executor: out of memory; a signal is lost\" job=%lld",
                (long long)j->id);
    j->sig_after = 0;
    j->ncmds--;
}

/* A submitter (WAYS of them): the queued submissions, oldest first, one
 * at a time each, so that a job decided while others are in sbatch starts
 * its own at once. A signal that came while it was being submitted is
 * queued for the worker once it has its Slurm id. */
static void *submitter(void *arg)
{
    struct slurm *s = arg;

    pthread_setname_np(pthread_self(), "slurm-submit");
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct sjob *j;
        if (!s->nsubq) {
            pthread_cond_wait(&s->sub_cond, &s->mu);
            continue;
        }
        j = s->subq[0];
        memmove(s->subq, s->subq + 1, --s->nsubq * sizeof(*s->subq));
        /* a job, then the one staged behind it while it was queued */
        while (j) {
            struct sjob *b;
            pthread_mutex_unlock(&s->mu);
            do_submit(s, j);
            pthread_mutex_lock(&s->mu);
            b = j->succ_id ? sl_slx_job_find(s, j->succ_id, j->succ_attempt) : NULL;
            sl_slx_submitted(s, j);
            j = b && b->after_pending ? sl_slx_chained(s, b, j) : NULL;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Whether signal 'sig' stops a job (its SIGTERM or SIGKILL). */
static bool is_stop(int sig)
{
    return sig == SIGTERM || sig == SIGKILL;
}

/* The worker: the signals, in order. One for a job still being submitted
 * waits for its Slurm id (sig_after; a stop replaces any other, SIGKILL
 * replaces SIGTERM). */
static void *worker(void *arg)
{
    struct slurm *s = arg;

    pthread_setname_np(pthread_self(), "slurm");
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct cmd *cmds;
        size_t ncmds;
        if (!s->ncmds) {
            pthread_cond_wait(&s->cond, &s->mu);
            continue;
        }
        cmds = s->cmds;
        ncmds = s->ncmds;
        s->cmds = NULL;
        s->ncmds = s->cmds_cap = 0;
        for (size_t i = 0; i < ncmds; i++) {
            struct sjob *j = cmds[i].j;
            int sig = cmds[i].sig;
            if (!j->submitting || cmds[i].kind != C_SIGNAL)
                continue;
            if (j->sig_after != SIGKILL && !(is_stop(j->sig_after) && !is_stop(sig)))
                j->sig_after = sig;
            cmds[i].j = NULL;
            j->ncmds--;
        }
        pthread_mutex_unlock(&s->mu);
        for (size_t i = 0; i < ncmds; i++) {
            if (!cmds[i].j)
                continue;
            if (cmds[i].kind == C_CANCEL)
                sl_slx_scancel(s, cmds[i].j->slurm_id, 0); /* set before queued */
            else if (cmds[i].kind == C_REVOKE)
                sl_slx_revoke_one(s, cmds[i].j);
            else
                do_signal(s, cmds[i].j, cmds[i].sig);
        }
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < ncmds; i++)
            if (cmds[i].j)
                cmds[i].j->ncmds--;
        free(cmds);
        reap_released(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The poller: the jobs every poll interval, the nodes every NODE_POLL_MS
 * or at once after a job was lost. */
static void *poller(void *arg)
{
    struct slurm *s = arg;

    pthread_setname_np(pthread_self(), "slurm-poll");
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec ts;
        int64_t until;
        bool stale;
        pthread_mutex_unlock(&s->mu);
        sl_slx_poll_jobs(s);
        pthread_mutex_lock(&s->mu);
        stale = s->nodes_stale;
        s->nodes_stale = false;
        pthread_mutex_unlock(&s->mu);
        if (stale || sl_mono_ms() >= s->next_node_poll) {
            poll_nodes(s);
            s->next_node_poll = sl_mono_ms() + NODE_POLL_MS;
        }
        pthread_mutex_lock(&s->mu);
        reap_released(s);
        clock_gettime(CLOCK_REALTIME, &ts);
        until = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + s->poll_ms;
        ts.tv_sec = until / 1000;
        ts.tv_nsec = (until % 1000) * 1000000;
        while (!s->stop && pthread_cond_timedwait(&s->poll_cond, &s->mu, &ts) == 0) {
            /* woken early: only stop ends the wait */
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- the operations ------------------------------------------------------ */

static void slurm_caps(const struct sl_executor *x, struct sl_exec_caps *out)
{
    const struct sl_slurm_confine *c = &((const struct slurm *)x)->confine;

    out->runs_commands = true;
    out->runs_as_accounts = true;
    /* the accounts are resolved here (getpwnam), where sbatch runs: this
     * host must see the cluster's accounts, as any Slurm client does */
    out->accounts_here = true;
    out->job_tokens = true;
    out->limits = c->task_cgroup && c->cores && c->ram;
    snprintf(out->limits_why, sizeof(out->limits_why), "%s",
             out->limits ? "Slurm's task/cgroup holds each job to its CPUs and memory"
                         : "Slurm's TaskPlugin task/cgroup with ConstrainCores and "
                           "ConstrainRAMSpace is not configured");
    out->devices = c->task_cgroup && c->devices;
    snprintf(out->devices_why, sizeof(out->devices_why), "%s",
             out->devices ? "Slurm's cgroup ConstrainDevices denies a job the node's other GPUs"
                          : "Slurm sets the task's CUDA_VISIBLE_DEVICES; without cgroup "
                            "ConstrainDevices the node's other GPUs are not denied");
    snprintf(out->devices_mech, sizeof(out->devices_mech), "slurm");
    out->netns = false;
    snprintf(out->netns_why, sizeof(out->netns_why), "the Slurm executor does not isolate "
                                                     "networks");
    out->images = false;
    out->interactive = false;
    snprintf(out->interactive_why, sizeof(out->interactive_why),
             "the slurm executor runs no interactive job (docs/slurm.md): run one on the "
             "local executor, or use srun --pty in a Slurm allocation");
    out->stages = ((const struct slurm *)x)->stage;
}

static int slurm_nodes(struct sl_executor *x, struct sl_inventory *out, struct sl_error *err)
{
    struct slurm *s = (struct slurm *)x;
    int rc;

    pthread_mutex_lock(&s->mu);
    rc = sl_inventory_copy(out, &s->nodes);
    pthread_mutex_unlock(&s->mu);
    return rc < 0 ? sl_errorf(err, rc, "out of memory") : 0;
}

/* What a started task is told of its confinement: Slurm's, as its
 * configuration said when the executor opened. */
static void task_notes(const struct slurm *s, const struct sl_exec_job *job,
                       struct sl_exec_task_state *st)
{
    const struct sl_slurm_confine *c = &s->confine;

    for (int t = 0; t < job->ntasks; t++) {
        st[t].status = SL_EXEC_TASK_RUNNING;
        st[t].limits_enforced = c->task_cgroup && c->cores && c->ram;
        if (!st[t].limits_enforced)
            snprintf(st[t].limits_note, sizeof(st[t].limits_note),
                     "Slurm's TaskPlugin task/cgroup with ConstrainCores and ConstrainRAMSpace "
                     "is not configured: the job's CPUs and memory are counted, not held");
        st[t].gpus_enforced = c->task_cgroup && c->devices;
        if (!st[t].gpus_enforced)
            snprintf(st[t].gpus_note, sizeof(st[t].gpus_note),
                     "Slurm's cgroup ConstrainDevices is not configured: the task is told "
                     "its GPUs (CUDA_VISIBLE_DEVICES) but not denied the node's others");
        st[t].network_enforced = SL_EXEC_NET_EGRESS;
        if (job->spec->network != SL_NET_EGRESS)
            snprintf(st[t].network_note, sizeof(st[t].network_note),
                     "network profile %s is not enforced by the Slurm executor",
                     job->spec->network == SL_NET_ISOLATED ? "isolated" : "internal");
    }
}

/* Add task place 'p' to component place 'c': its whole GPUs, or its
 * shards of its one GPU. */
static void comp_add(struct sl_slurm_place *c, const struct sl_exec_place *p)
{
    if (p->ngpus == 1 && p->gpu_milli < 1000) {
        int n = (p->gpu_milli * SL_SLURM_SHARDS + 999) / 1000, k = 0;
        while (k < c->nshards && c->shard_gpu[k] != p->gpus[0])
            k++;
        if (k == c->nshards && c->nshards < SL_EXEC_MAX_GPUS)
            c->shard_gpu[c->nshards++] = p->gpus[0];
        if (k < c->nshards)
            c->shards[k] += n;
        return;
    }
    for (int g = 0; g < p->ngpus && c->ngpus < SL_EXEC_MAX_GPUS; g++)
        c->gpus[c->ngpus++] = p->gpus[g];
}

/* A new record of 'job' with its placement, its tasks grouped by node into
 * Slurm job components (Slurm refuses two components of a heterogeneous
 * job on one node); NULL on -ENOMEM. */
static struct sjob *job_new(struct slurm *s, const struct sl_exec_job *job)
{
    struct sjob *j = calloc(1, sizeof(*j));
    size_t n = (size_t)job->ntasks;

    if (!j || !(j->want = calloc(n, sizeof(*j->want))) || !(j->comp = calloc(n, sizeof(int))) ||
        !(j->ncomp_tasks = calloc(n, sizeof(int))) || !(j->comps = calloc(n, sizeof(*j->comps)))) {
        job_free(j);
        return NULL;
    }
    j->id = job->job_id;
    j->attempt = job->attempt;
    j->seq = ++s->seq;
    j->ntasks = job->ntasks;
    memcpy(j->want, job->tasks, n * sizeof(*j->want));
    for (int t = 0; t < job->ntasks; t++) {
        int c = 0;
        while (c < t && job->tasks[c].node != job->tasks[t].node)
            c++;
        c = c < t ? j->comp[c] : j->ncomp++;
        j->comp[t] = c;
        j->ncomp_tasks[c]++;
        snprintf(j->comps[c].node, sizeof(j->comps[c].node), "%s",
                 s->nodes.nodes[job->tasks[t].node].name);
        comp_add(&j->comps[c], &job->tasks[t]);
    }
    return j;
}

/* Make the record of 'job' and queue its submission (behind Slurm job
 * 'after_sid' when staged; caller holds mu). Returns NULL, or why not. */
const char *sl_slx_job_submit(struct slurm *s, const struct sl_exec_job *job,
                              const struct passwd *pw, bool staged, uint64_t after_sid,
                              struct sjob **out)
{
    struct sjob *j = NULL;
    const char *why = NULL;

    *out = NULL;
    for (int t = 0; t < job->ntasks && !why; t++)
        if (job->tasks[t].node < 0 || job->tasks[t].node >= s->nodes.n)
            why = "placed on a node this executor does not have";
    if (!why && job->ntasks > MAX_TASKS)
        why = "a gang of more than 64 tasks";
    if (!why && !(j = job_new(s, job)))
        why = "out of memory";
    if (!why && !(j->script = sl_slx_batch_script(s, j, job, pw)))
        why = "out of memory";
    if (!why) {
        const struct sl_job_spec *sp = job->spec;
        int64_t cpus = (sp->cpu_milli + 999) / 1000;
        int64_t mem_mb = (sp->mem_bytes + (1 << 20) - 1) >> 20;
        j->cpus = cpus > 0 ? cpus : 1;
        j->mem_mb = mem_mb > 0 ? mem_mb : 1;
        if (sp->max_runtime_ms > 0) /* Slurm's limit: a backstop to Sluice's */
            j->time_min = (sp->max_runtime_ms + sp->ckpt_grace_ms + 60000 + 59999) / 60000;
        if (geteuid() == 0 && pw) {
            j->as_uid = true;
            j->uid = pw->pw_uid;
            j->gid = pw->pw_gid;
        }
        j->dep = staged;
        j->after_sid = after_sid;
    }
    if (!why && sl_slx_vec_grow((void **)&s->jobs, &s->jobs_cap, s->njobs, sizeof(*s->jobs)) < 0)
        why = "out of memory";
    if (!why && staged && !after_sid) {
        /* its predecessor is being submitted: it follows (chained) */
        j->after_pending = j->submitting = true;
        j->ncmds++;
    } else if (!why && queue_submit(s, j) < 0) {
        why = "out of memory";
    }
    if (why) {
        job_free(j);
        return why;
    }
    j->staged = staged;
    s->jobs[s->njobs++] = j;
    *out = j;
    return NULL;
}

static int slurm_start(struct sl_executor *x, const struct sl_exec_job *job,
                       struct sl_exec_task_state *out)
{
    struct slurm *s = (struct slurm *)x;
    struct passwd pwbuf, *pw = NULL;
    char *pwtext = NULL;
    struct sl_error acct = {0};
    struct sjob *j = NULL;
    const char *why = NULL;
    int rc = 0;

    /* a staged job that Slurm started behind its predecessor: taken over */
    pthread_mutex_lock(&s->mu);
    if ((j = sl_slx_job_find(s, job->job_id, job->attempt)) && j->handed) {
        j->handed = false;
        pthread_mutex_unlock(&s->mu);
        task_notes(s, job, out);
        return 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (j) /* staged and not handed over: never a second Slurm job */
        why = "it is staged behind another job";

    /* the local executor's rules: never the daemon's identity unless
     * allowed; as root, sbatch --uid gives the job its account */
    if (!why && sl_exec_account(job->unix_user && job->unix_user[0] ? job->unix_user : NULL,
                                job->allow_daemon_user, &pwbuf, &pwtext, &acct) < 0)
        why = acct.text;
    else if (!why)
        pw = &pwbuf;

    pthread_mutex_lock(&s->mu);
    if (!why)
        why = sl_slx_job_submit(s, job, pw, false, 0, &j);
    pthread_mutex_unlock(&s->mu);
    free(pwtext);
    if (why) {
        for (int t = 0; t < job->ntasks; t++) {
            out[t].status = SL_EXEC_TASK_FAILED;
            snprintf(out[t].error, sizeof(out[t].error), "%s", why);
        }
        return -EINVAL;
    }
    task_notes(s, job, out);
    return rc;
}

static int slurm_signal(struct sl_executor *x, int64_t job_id, int attempt, int sig)
{
    struct slurm *s = (struct slurm *)x;
    struct sjob *j;
    int rc = -ESRCH;

    pthread_mutex_lock(&s->mu);
    if ((j = sl_slx_job_find(s, job_id, attempt)) && j->st != SJ_DONE) {
        j->signalled = true;
        rc = sl_slx_queue_cmd(s, C_SIGNAL, j, sig);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The Slurm job id of an attempt: its record, else a job of its name. */
static uint64_t find_slurm_id(struct slurm *s, int64_t id, int attempt)
{
    char path[PATH_MAX + 64], squeue[PATH_MAX + 16], name[80], *text = NULL;
    char *argv[] = {squeue, "-h", "-t", "all", name, "-o", "%i", NULL};
    struct sl_run_result res;
    int64_t sid = 0;
    size_t len;

    map_path(s, id, attempt, path, sizeof(path));
    if (sl_read_file(path, 64, &text, &len) == 0) {
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        if (sl_parse_int64(text, 1, INT64_MAX, &sid) < 0)
            sid = 0;
        free(text);
        if (sid)
            return (uint64_t)sid;
    }
    /* submitted, but its record not written before a crash */
    sl_slx_tool(s, "squeue", squeue, sizeof(squeue));
    snprintf(name, sizeof(name), "--name=sluice-%lld-%d", (long long)id, attempt);
    if (sl_slx_call(s, argv, NULL, &res, NULL, 0) == 0 && res.out.data) {
        *strchrnul(res.out.data, '\n') = '\0';
        *strchrnul(res.out.data, '+') = '\0';
        if (sl_parse_int64(res.out.data, 1, INT64_MAX, &sid) < 0)
            sid = 0;
    }
    sl_run_result_fini(&res);
    return (uint64_t)sid;
}

static int slurm_adopt(struct sl_executor *x, const struct sl_exec_job *job,
                       struct sl_exec_task_state *out)
{
    struct slurm *s = (struct slurm *)x;
    struct sl_slurm_job *comp;
    uint64_t sid;
    struct sjob *j = NULL;
    int n = 0, rc;

    for (int t = 0; t < job->ntasks; t++)
        if (job->tasks[t].node < 0 || job->tasks[t].node >= s->nodes.n || t >= MAX_TASKS)
            return -EINVAL;
    if (!(comp = calloc(MAX_TASKS, sizeof(*comp))))
        return -ENOMEM;
    sid = find_slurm_id(s, job->job_id, job->attempt);
    if (sid && job->after_job && sl_slx_hold_pending(s, sid)) {
        /* staged, and it had not started: withdrawn (the engine places
         * it again) */
        sl_slx_scancel(s, sid, 0);
        sid = 0;
    }
    if (!sid || (rc = sl_slx_job_details(s, sid, comp, MAX_TASKS, &n)) == -ENOENT) {
        for (int t = 0; t < job->ntasks; t++)
            out[t].status = SL_EXEC_TASK_GONE;
        free(comp);
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    if (!(j = job_new(s, job)) ||
        sl_slx_vec_grow((void **)&s->jobs, &s->jobs_cap, s->njobs, sizeof(*s->jobs)) < 0) {
        pthread_mutex_unlock(&s->mu);
        job_free(j);
        free(comp);
        return -ENOMEM;
    }
    j->slurm_id = sid;
    j->checked = true; /* checked when it started */
    j->st = SJ_WAITING;
    s->jobs[s->njobs++] = j;
    pthread_mutex_unlock(&s->mu);
    task_notes(s, job, out);
    /* Running or waiting: its end comes as an event from the polls. Ended
     * while sluiced was down: that end too, with Slurm's exit codes. */
    if (rc == 0)
        sl_slx_job_settle(s, j, comp, n);
    free(comp);
    return 0;
}

static int slurm_events(struct sl_executor *x, int64_t now_ms, struct sl_exec_event *ev,
                        int max)
{
    struct slurm *s = (struct slurm *)x;
    uint64_t cnt;
    int n;

    (void)now_ms;
    if (read(s->wake_fd, &cnt, sizeof(cnt)) < 0) {
        /* nothing signalled */
    }
    pthread_mutex_lock(&s->mu);
    n = (int)s->nevents < max ? (int)s->nevents : max;
    if (n > 0) {
        memcpy(ev, s->events, (size_t)n * sizeof(*ev));
        memmove(s->events, s->events + n, (s->nevents - (size_t)n) * sizeof(*ev));
        s->nevents -= (size_t)n;
    }
    if (s->nevents)
        sl_slx_wake(s);
    pthread_mutex_unlock(&s->mu);
    return n;
}

static int64_t slurm_next_event_ms(const struct sl_executor *x)
{
    (void)x;
    return INT64_MAX; /* the worker wakes the engine */
}

static int slurm_wake_fd(const struct sl_executor *x)
{
    return ((const struct slurm *)x)->wake_fd;
}

static void slurm_release(struct sl_executor *x, int64_t job_id, int attempt)
{
    struct slurm *s = (struct slurm *)x;
    char path[PATH_MAX + 64];
    struct sjob *j;

    pthread_mutex_lock(&s->mu);
    if ((j = sl_slx_job_find(s, job_id, attempt)))
        j->released = true;
    pthread_mutex_unlock(&s->mu);
    map_path(s, job_id, attempt, path, sizeof(path));
    unlink(path);
    sl_slx_up_path(s, job_id, attempt, path, sizeof(path));
    unlink(path);
}

static int slurm_log_path(const struct sl_executor *x, int64_t job_id, int task, char *buf,
                          size_t size)
{
    const struct slurm *s = (const struct slurm *)x;

    if ((size_t)snprintf(buf, size, "%s/%lld.%d.log", s->outdir, (long long)job_id, task) >= size)
        return -ENOSPC;
    return 0;
}

static void slurm_destroy(struct sl_executor *x)
{
    struct slurm *s = (struct slurm *)x;

    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cond);
    pthread_cond_signal(&s->poll_cond);
    pthread_cond_broadcast(&s->sub_cond);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nsub; i++)
        pthread_join(s->sub_threads[i], NULL);
    if (s->started)
        pthread_join(s->thread, NULL);
    if (s->poll_started)
        pthread_join(s->poll_thread, NULL);
    if (s->jc_started) {
        uint64_t one = 1;
        if (write(s->jc_stop, &one, sizeof(one)) == sizeof(one))
            pthread_join(s->jc_thread, NULL);
        else
            pthread_detach(s->jc_thread); /* cannot be: an eventfd takes 1 */
    }
    if (s->jc_inotify >= 0)
        close(s->jc_inotify);
    if (s->jc_stop >= 0)
        close(s->jc_stop);
    for (size_t i = 0; i < s->njobs; i++)
        job_free(s->jobs[i]);
    free(s->jobs);
    free(s->cmds);
    free(s->subq);
    free(s->events);
    sl_inventory_fini(&s->nodes);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    pthread_cond_destroy(&s->poll_cond);
    pthread_cond_destroy(&s->sub_cond);
    free(s);
}

static const struct sl_executor_ops slurm_ops = {
    .name = "slurm",
    .caps = slurm_caps,
    .nodes = slurm_nodes,
    .start = slurm_start,
    .signal = slurm_signal,
    .adopt = slurm_adopt,
    .stage = sl_slx_stage,
    .unstage = sl_slx_unstage,
    .revoke = sl_slx_revoke,
    .events = slurm_events,
    .next_event_ms = slurm_next_event_ms,
    .wake_fd = slurm_wake_fd,
    .release = slurm_release,
    .log_path = slurm_log_path,
    .destroy = slurm_destroy,
};

static char umask_env[] = "SLURM_UMASK=0022";

/* Settings: the partition and the shared output directory are required. */
static int slurm_settings(struct slurm *s, const struct sl_executor_config *cfg,
                          struct sl_error *err)
{
    struct stat st;
    const char *pl = cfg->slurm_partition, *conf;

    if (!pl || !pl[0] || strlen(pl) >= sizeof(s->partition) || pl[0] == ',' ||
        pl[strlen(pl) - 1] == ',' || strstr(pl, ",,") ||
        strspn(pl, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,") !=
            strlen(pl))
        return sl_errorf(err, -EINVAL, "--slurm-partition: the Slurm partitions Sluice places "
                                       "in, a comma list (letters, digits, '_', '-', '.'), "
                                       "is required");
    snprintf(s->partition, sizeof(s->partition), "%s", cfg->slurm_partition);
    if (!cfg->slurm_output_dir || cfg->slurm_output_dir[0] != '/' ||
        strlen(cfg->slurm_output_dir) >= sizeof(s->outdir) - 64 ||
        strpbrk(cfg->slurm_output_dir, "'\"\\$`\n"))
        return sl_errorf(err, -EINVAL, "--slurm-output-dir: an absolute path of a directory "
                                       "shared with the nodes is required");
    if (stat(cfg->slurm_output_dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return sl_errorf(err, -ENOENT, "--slurm-output-dir %s: not a directory",
                         cfg->slurm_output_dir);
    snprintf(s->outdir, sizeof(s->outdir), "%s", cfg->slurm_output_dir);
    if (cfg->slurm_bin && cfg->slurm_bin[0]) {
        if (cfg->slurm_bin[0] != '/' || strlen(cfg->slurm_bin) >= sizeof(s->bin) - 16)
            return sl_errorf(err, -EINVAL, "--slurm-bin: an absolute directory");
        snprintf(s->bin, sizeof(s->bin), "%s", cfg->slurm_bin);
    }
    if (cfg->slurm_jobcomp && cfg->slurm_jobcomp[0]) {
        if (cfg->slurm_jobcomp[0] != '/' || strlen(cfg->slurm_jobcomp) >= sizeof(s->jobcomp))
            return sl_errorf(err, -EINVAL, "--slurm-jobcomp: an absolute path of Slurm's "
                                           "jobcomp/filetxt file (JobCompLoc)");
        snprintf(s->jobcomp, sizeof(s->jobcomp), "%s", cfg->slurm_jobcomp);
    }
    if (cfg->slurm_api && strcmp(cfg->slurm_api, "auto") != 0 &&
        strcmp(cfg->slurm_api, "library") != 0 && strcmp(cfg->slurm_api, "tools") != 0)
        return sl_errorf(err, -EINVAL, "--slurm-api: auto, library or tools, not '%s'",
                         cfg->slurm_api);
    s->poll_ms = cfg->slurm_poll_ms > 0 ? cfg->slurm_poll_ms : 1000;
    s->stage = cfg->slurm_stage;
    snprintf(s->env_path, sizeof(s->env_path), "PATH=%s", TASK_PATH);
    s->tool_env[0] = s->env_path;
    if ((conf = getenv("SLURM_CONF")) && conf[0]) {
        if (strlen(conf) >= sizeof(s->env_conf) - 16)
            return sl_errorf(err, -EINVAL, "SLURM_CONF: too long");
        snprintf(s->env_conf, sizeof(s->env_conf), "SLURM_CONF=%s", conf);
        s->tool_env[1] = s->env_conf;
    }
    /* the local executor's umask for tasks (sbatch's own, sluiced's 077,
     * would be the job's otherwise) */
    s->tool_env[s->tool_env[1] ? 2 : 1] = umask_env;
    snprintf(s->run_dir, sizeof(s->run_dir), "%s/run", cfg->data_dir);
    return sl_mkdir_p(s->run_dir, 0700) < 0
               ? sl_errorf(err, -EIO, "--data-dir %s: cannot make run/", cfg->data_dir)
               : 0;
}

/* Slurm's C API for submissions (slurm_lib.c): with --slurm-api library,
 * or auto without --slurm-bin (tools in a directory of their own may not
 * be the Slurm the loader finds); else, or when it cannot be loaded in
 * auto, sbatch. After the nodes were read: Slurm's tools work here. */
static int open_api(struct slurm *s, const struct sl_executor_config *cfg, struct sl_error *err)
{
    const char *api = cfg->slurm_api ? cfg->slurm_api : "auto";
    char why[256] = "";

    if (strcmp(api, "tools") == 0) {
        snprintf(why, sizeof(why), "--slurm-api tools");
    } else if (strcmp(api, "auto") == 0 && s->bin[0]) {
        snprintf(why, sizeof(why), "--slurm-bin names Slurm's tools");
    } else if ((s->lib = sl_slx_lib_open(why, sizeof(why)))) {
        sl_info("msg=\"slurm executor: jobs are submitted through Slurm's C API\"");
        return 0;
    } else if (strcmp(api, "library") == 0) {
        return sl_errorf(err, -ENOENT, "--slurm-api library: %s", why);
    }
    sl_info("msg=\"slurm executor: jobs are submitted with sbatch\" why=\"%s\"", why);
    return 0;
}

struct sl_executor *sl_slurm_executor_create(const struct sl_executor_config *cfg,
                                             struct sl_error *err)
{
    struct slurm *s = calloc(1, sizeof(*s));
    int rc;

    if (!s) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->base.ops = &slurm_ops;
    s->wake_fd = s->jc_inotify = s->jc_stop = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    pthread_cond_init(&s->poll_cond, NULL);
    pthread_cond_init(&s->sub_cond, NULL);
    if ((rc = slurm_settings(s, cfg, err)) < 0 || (rc = read_confine(s, err)) < 0 ||
        (rc = read_nodes(s, &s->nodes, err)) < 0)
        goto fail;
    if (s->nodes.n == 0) {
        rc = sl_errorf(err, -ENOENT, "slurm: partition %s has no node", s->partition);
        goto fail;
    }
    if ((rc = open_api(s, cfg, err)) < 0)
        goto fail;
    if ((s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        rc = sl_errorf(err, -errno, "eventfd: %s", strerror(errno));
        goto fail;
    }
    s->next_node_poll = sl_mono_ms() + NODE_POLL_MS;
    if (s->jobcomp[0]) {
        sl_slx_jobcomp_skip(s);
        if ((rc = sl_slx_jobcomp_reader_start(s, err)) < 0)
            goto fail;
    }
    if ((rc = pthread_create(&s->thread, NULL, worker, s)) != 0) {
        rc = sl_errorf(err, -rc, "slurm executor: cannot start its thread");
        goto fail;
    }
    s->started = true;
    if ((rc = pthread_create(&s->poll_thread, NULL, poller, s)) != 0) {
        rc = sl_errorf(err, -rc, "slurm executor: cannot start its poller");
        goto fail;
    }
    s->poll_started = true;
    for (; s->nsub < WAYS; s->nsub++)
        if ((rc = pthread_create(&s->sub_threads[s->nsub], NULL, submitter, s)) != 0) {
            rc = sl_errorf(err, -rc, "slurm executor: cannot start its submitters");
            goto fail;
        }
    return &s->base;
fail:
    slurm_destroy(&s->base);
    errno = -rc;
    return NULL;
}
