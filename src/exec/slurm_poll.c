/*
 * slurm_poll.c - what the Slurm executor reads of Slurm's jobs
 * (slurm_int.h): one squeue per poll for every job's state, exit code and
 * times, scontrol for the allocation of a job that started or the end of
 * one squeue no longer shows (several at once), the jobcomp file as it
 * grows, and what each of these means for a job: running, checked, ended
 * or lost. How and why: the top of slurm.c.
 */
#include "slurm_int.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the worker: what Slurm says of the jobs ---------------------------- */

/* The lines of Slurm job 'sid' (one per component) in the jobcomp file:
 * 0, or -ENOENT when it has none (or there is no file). The file only
 * grows (an admin rotates it); it is read line by line, and a line
 * longer than 64 KiB (a job name with newlines) is skipped. */
static int jobcomp_details(struct slurm *s, uint64_t sid, struct sl_slurm_job *out, int max,
                           int *n)
{
    char want[40], het[48], *line = NULL;
    size_t cap = 0;
    ssize_t len;
    FILE *f;

    *n = 0;
    if (!s->jobcomp[0])
        return -ENOENT;
    if (!(f = fopen(s->jobcomp, "re"))) {
        sl_warn("msg=\"slurm executor: cannot read the jobcomp file\" path=%s error=\"%s\"",
                s->jobcomp, strerror(errno));
        return -ENOENT;
    }
    snprintf(want, sizeof(want), "JobId=%llu ", (unsigned long long)sid);
    snprintf(het, sizeof(het), " HetJobId=%llu ", (unsigned long long)sid);
    while ((len = getline(&line, &cap, f)) > 0) {
        struct sl_slurm_job j;
        if (len > 65536 || (strncmp(line, want, strlen(want)) != 0 && !strstr(line, het)))
            continue;
        line[strcspn(line, "\n")] = '\0';
        if (sl_slurm_parse_job(line, &j) < 0 || sl_slurm_phase(j.state) < SL_SLURM_ENDED)
            continue;
        /* a requeued job has a line per run: the last one counts */
        for (int k = 0; k < *n; k++)
            if (out[k].id == j.id) {
                out[k] = j;
                goto next;
            }
        if (*n < max)
            out[(*n)++] = j;
    next:;
    }
    free(line);
    fclose(f);
    return *n > 0 ? 0 : -ENOENT;
}

struct details {
    struct sl_slurm_job *out;
    int max, n;
};

static void details_line(void *arg, char *line)
{
    struct details *d = arg;

    if (d->n < d->max && sl_slurm_parse_job(line, &d->out[d->n]) == 0)
        d->n++;
}

/* The details of Slurm job 'sid' (one entry per component), or -ENOENT
 * when Slurm no longer knows it, nor its jobcomp file: through Slurm's C
 * API when it is loaded, else scontrol. */
int sl_slx_job_details(struct slurm *s, uint64_t sid, struct sl_slurm_job *out, int max, int *n)
{
    char scontrol[PATH_MAX + 16], id[32];
    char *argv[] = {scontrol, "show", "job", "-d", "-o", id, NULL};
    struct sl_run_result res;
    int rc;

    *n = 0;
    if (s->lib) {
        struct details d = {out, max, 0};
        if ((rc = sl_slx_lib_job_lines(s, sid, details_line, &d)) == -ENOENT)
            return jobcomp_details(s, sid, out, max, n);
        *n = d.n;
        return rc == 0 && d.n > 0 ? 0 : -EIO;
    }
    sl_slx_tool(s, "scontrol", scontrol, sizeof(scontrol));
    snprintf(id, sizeof(id), "%llu", (unsigned long long)sid);
    if ((rc = sl_slx_call(s, argv, NULL, &res, NULL, 0)) != 0) {
        bool unknown = res.err.data && strstr(res.err.data, "Invalid job id");
        sl_run_result_fini(&res);
        return unknown ? jobcomp_details(s, sid, out, max, n) : -EIO;
    }
    for (char *line = res.out.data, *nl; line && *line && *n < max; line = nl ? nl + 1 : NULL) {
        if ((nl = strchr(line, '\n')))
            *nl = '\0';
        if (sl_slurm_parse_job(line, &out[*n]) == 0)
            (*n)++;
    }
    sl_run_result_fini(&res);
    return *n > 0 ? 0 : -EIO;
}

/* What the components of a job say: its phase (the latest of them), the
 * exit code of each task, and whether its allocation is the one decided. */
void sl_slx_job_settle(struct slurm *s, struct sjob *j, const struct sl_slurm_job *c, int n)
{
    enum sl_slurm_phase phase = SL_SLURM_ENDED;
    int codes[MAX_TASKS] = {0};
    struct span sp = {{0}, {0}};
    char why[160] = "", note[200];
    bool timeout = false;

    /* the least advanced component decides: waiting, running, else ended
     * (lost when any component was) */
    for (int k = 0; k < n; k++) {
        enum sl_slurm_phase p = sl_slurm_phase(c[k].state);
        if ((p == SL_SLURM_LOST ? SL_SLURM_ENDED : p) < phase)
            phase = p;
        /* a component's exit code and times are its batch script's:
         * every task's */
        for (int t = 0; t < j->ntasks && t < MAX_TASKS; t++)
            if (j->comp[t] == c[k].het_offset) {
                codes[t] = c[k].exit_code;
                /* Slurm's times are whole seconds: it began at or after
                 * StartTime, and had ended by the end of EndTime's second */
                sp.start_ms[t] = c[k].start_ms;
                sp.end_ms[t] = c[k].end_ms ? c[k].end_ms + 999 : 0;
            }
        if (strcmp(c[k].state, "TIMEOUT") == 0)
            timeout = true; /* Slurm's --time, the backstop to maxRuntime */
        if (p == SL_SLURM_LOST && !why[0])
            snprintf(why, sizeof(why), "Slurm job %llu ended %s",
                     (unsigned long long)c[k].id, c[k].state);
    }
    if (phase == SL_SLURM_ENDED && why[0])
        phase = SL_SLURM_LOST;
    pthread_mutex_lock(&s->mu);
    if (j->st == SJ_DONE || sl_slx_is_staged(j)) {
        /* a staged job is its predecessor's to settle (sl_slx_push_end) */
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (phase == SL_SLURM_RUNNING && !j->checked) {
        j->st = SJ_RUNNING;
        j->checked = true;
        for (int k = 0; k < n && !why[0]; k++) {
            int off = c[k].het_offset;
            if (off < 0 || off >= j->ncomp)
                snprintf(why, sizeof(why), "Slurm job %llu has a component %d not asked for",
                         (unsigned long long)c[k].id, off);
            else if (c[k].nplaces > 1)
                snprintf(why, sizeof(why), "Slurm job %llu holds %d nodes for one component",
                         (unsigned long long)c[k].id, c[k].nplaces);
            else if (c[k].nplaces == 1 && strcmp(c[k].state, "RUNNING") == 0)
                /* only while it runs: once it is completing, Slurm shows
                 * its node with what is left of its GRES, or none */
                sl_slurm_check_place(&c[k].places[0], &j->comps[off], why, sizeof(why));
        }
        if (why[0]) {
            snprintf(note, sizeof(note), "placement mismatch, cancelled: %s", why);
            sl_slx_push_end(s, j, SL_EXEC_EV_LOST, NULL, NULL, note);
            pthread_mutex_unlock(&s->mu);
            sl_slx_scancel(s, c[0].id, 0);
            return;
        }
    } else if (phase == SL_SLURM_RUNNING) {
        j->st = SJ_RUNNING;
    } else if (phase == SL_SLURM_LOST) {
        sl_slx_push_end(s, j, SL_EXEC_EV_LOST, NULL, &sp, why);
    } else if (phase == SL_SLURM_ENDED) {
        if (j->killed_sig)
            for (int t = 0; t < j->ntasks && t < MAX_TASKS; t++)
                codes[t] = 128 + j->killed_sig;
        j->time_limit = timeout;
        sl_slx_push_end(s, j, SL_EXEC_EV_EXITED, codes, &sp,
                        timeout ? "Slurm ended it at its time limit" : NULL);
    }
    pthread_mutex_unlock(&s->mu);
}

/* A job the poll looks at: pinned (ncmds) so that it outlives a release
 * meanwhile. */
struct look {
    struct sjob *j;
    uint64_t sid;
    bool checked;
    enum sj_state st;
    int deferred_sig;
    bool unheld;                  /* submitted ready by this executor,
                                     released, or being submitted */
    size_t q, nq;                 /* its components' lines: q[q, q + nq) */
    int running, ended, waiting;  /* its components, by phase */
    bool held;                    /* held, and adopted after a restart
                                     (an earlier sluiced submitted jobs
                                     held, then released them), or its
                                     release failed */
    bool unavailable;             /* waiting for a node Slurm will not give */
    char reason[96];              /* then Slurm's reason */
};

/* One line of the poll's squeue: what the executor keeps of it. */
struct qline {
    uint64_t sid;
    int het_offset, exit_code;
    int64_t start_ms, end_ms;
    char state[32];
    char reason[96];
};

/* Whether a job Slurm holds back with 'reason' waits for a node that is not
 * up: ReqNodeNotAvail ("UnavailableNodes:n3") for one of its nodes that
 * the executor has drained or down. Slurm would start it only when the
 * node is back, while Sluice counts it as running there. */
static bool unavailable(struct slurm *s, const struct sjob *j, const char *reason)
{
    bool out = false;

    if (strncmp(reason, "ReqNodeNotAvail", 15) != 0)
        return false;
    pthread_mutex_lock(&s->mu);
    for (int c = 0; c < j->ncomp && !out; c++)
        for (int i = 0; i < s->nodes.n && !out; i++)
            out = strcmp(s->nodes.nodes[i].name, j->comps[c].node) == 0 &&
                  s->nodes.nodes[i].state != SL_NODE_UP;
    pthread_mutex_unlock(&s->mu);
    return out;
}

/* Cancel a job that cannot start where it was placed and report it lost. */
static void giveup_unavailable(struct slurm *s, struct look *l)
{
    char note[200];

    snprintf(note, sizeof(note), "Slurm did not start it: %s (its node went out of service "
             "before it started)", l->reason);
    /* its end first: the jobcomp reader may see the cancel at once */
    pthread_mutex_lock(&s->mu);
    if (l->j->st != SJ_DONE)
        sl_slx_push_end(s, l->j, SL_EXEC_EV_LOST, NULL, NULL, note);
    pthread_mutex_unlock(&s->mu);
    sl_slx_scancel(s, l->sid, 0);
}

/* ---- running Slurm's tools several at once ------------------------------ */

struct fan {
    struct slurm *s;
    void (*fn)(struct slurm *s, void *item);
    char *items;
    size_t size, n;
    atomic_size_t next;
};

static void *fan_run(void *arg)
{
    struct fan *f = arg;

    for (size_t i; (i = atomic_fetch_add(&f->next, 1)) < f->n;)
        f->fn(f->s, f->items + i * f->size);
    return NULL;
}

/* fn(s, item) for each of the n items of 'size' bytes at 'items', up to
 * WAYS at once (slurmctld serves each call on a thread of its own, and
 * most of a call's time is spent waiting for it); returns when all are
 * done. Fewer at once, down to one, when threads cannot be made. */
void sl_slx_fan_out(struct slurm *s, void *items, size_t n, size_t size,
                    void (*fn)(struct slurm *, void *))
{
    struct fan f = {.s = s, .fn = fn, .items = items, .size = size, .n = n};
    pthread_t t[WAYS - 1];
    int nt = 0;

    atomic_init(&f.next, 0);
    while (nt < WAYS - 1 && (size_t)nt + 1 < n && pthread_create(&t[nt], NULL, fan_run, &f) == 0)
        nt++;
    fan_run(&f);
    for (int i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
}

/* ---- the poll ----------------------------------------------------------- */

static int look_cmp(const void *a, const void *b)
{
    const struct look *x = a, *y = b;
    return x->sid < y->sid ? -1 : x->sid > y->sid;
}

static int qline_cmp(const void *a, const void *b)
{
    const struct qline *x = a, *y = b;
    if (x->sid != y->sid)
        return x->sid < y->sid ? -1 : 1;
    return x->het_offset - y->het_offset;
}

/* squeue's lines of the partition's jobs into q (sorted by job id); -EIO
 * when squeue failed, -ENOMEM. */
static int read_queue(struct slurm *s, struct qline **q, size_t *nq)
{
    char squeue[PATH_MAX + 16], part[80];
    char *argv[] = {squeue, "-h", "-t", "all", part, "-O", SL_SLURM_SQUEUE_FORMAT, NULL};
    struct sl_run_result res;
    size_t cap = 0;
    int rc = 0;

    *q = NULL;
    *nq = 0;
    sl_slx_tool(s, "squeue", squeue, sizeof(squeue));
    snprintf(part, sizeof(part), "--partition=%s", s->partition);
    if (sl_slx_call(s, argv, NULL, &res, NULL, 0) != 0) {
        sl_run_result_fini(&res);
        return -EIO;
    }
    for (char *line = res.out.data, *nl; line && *line && rc == 0; line = nl ? nl + 1 : NULL) {
        struct sl_slurm_job c;
        if ((nl = strchr(line, '\n')))
            *nl = '\0';
        if (sl_slurm_parse_squeue(line, &c) < 0)
            continue;
        if ((rc = sl_slx_vec_grow((void **)q, &cap, *nq, sizeof(**q))) < 0)
            break;
        struct qline *ql = &(*q)[(*nq)++];
        ql->sid = c.id;
        ql->het_offset = c.het_offset;
        ql->exit_code = c.exit_code;
        ql->start_ms = c.start_ms;
        ql->end_ms = c.end_ms;
        snprintf(ql->state, sizeof(ql->state), "%s", c.state);
        snprintf(ql->reason, sizeof(ql->reason), "%s", c.reason);
    }
    sl_run_result_fini(&res);
    if (rc < 0) {
        free(*q);
        *q = NULL;
        *nq = 0;
        return rc;
    }
    if (*nq > 1)
        qsort(*q, *nq, sizeof(**q), qline_cmp);
    return 0;
}

/* Settle a job Slurm has ended from the poll's lines of its components. */
static void settle_ended(struct slurm *s, struct look *l, const struct qline *q,
                         struct sl_slurm_job *comp)
{
    int n = 0;

    for (size_t k = 0; k < l->nq && n < MAX_TASKS; k++, n++) {
        const struct qline *ql = &q[l->q + k];
        memset(&comp[n], 0, sizeof(comp[n]));
        comp[n].id = ql->sid;
        comp[n].het_offset = ql->het_offset;
        comp[n].exit_code = ql->exit_code;
        comp[n].start_ms = ql->start_ms;
        comp[n].end_ms = ql->end_ms;
        snprintf(comp[n].state, sizeof(comp[n].state), "%s", ql->state);
    }
    sl_slx_job_settle(s, l->j, comp, n);
}

/* For fan_out: a job squeue no longer shows, or that started and has not
 * been checked: its details from scontrol (or the jobcomp file). */
static void look_details(struct slurm *s, void *item)
{
    struct look *l = item;
    struct sl_slurm_job *comp = calloc(MAX_TASKS, sizeof(*comp));
    int nc, rc;

    if (!comp)
        return; /* the next poll looks again */
    if ((rc = sl_slx_job_details(s, l->sid, comp, MAX_TASKS, &nc)) == 0) {
        sl_slx_job_settle(s, l->j, comp, nc);
    } else if (rc == -ENOENT) {
        char note[160];
        snprintf(note, sizeof(note), "Slurm no longer knows its job %llu",
                 (unsigned long long)l->sid);
        pthread_mutex_lock(&s->mu);
        if (l->j->st != SJ_DONE)
            sl_slx_push_end(s, l->j, SL_EXEC_EV_LOST, NULL, NULL, note);
        pthread_mutex_unlock(&s->mu);
    }
    free(comp);
}

/* One squeue of the partition: ends are read from it; the jobs that
 * started are checked (scontrol, several at once), those squeue no
 * longer shows are asked after; held ones are released, and a signal
 * waiting for its job's script is sent once that is up. */
void sl_slx_poll_jobs(struct slurm *s)
{
    struct look *l = NULL, *ask = NULL;
    struct qline *q = NULL;
    struct sl_slurm_job *comp = NULL;
    struct sjob **held = NULL;    /* those to sl_slx_release, together */
    size_t n = 0, nq = 0, nask = 0, nheld = 0;

    pthread_mutex_lock(&s->mu);
    if (s->njobs && (l = calloc(s->njobs, sizeof(*l))))
        for (size_t i = 0; i < s->njobs; i++) {
            struct sjob *j = s->jobs[i];
            if ((j->st != SJ_WAITING && j->st != SJ_RUNNING) || sl_slx_is_staged(j))
                continue;
            j->ncmds++;
            l[n++] = (struct look){.j = j, .sid = j->slurm_id, .checked = j->checked,
                                   .st = j->st, .deferred_sig = j->deferred_sig,
                                   .unheld = j->unheld || j->submitting};
        }
    pthread_mutex_unlock(&s->mu);
    if (!n) {
        free(l);
        return;
    }
    if (!(comp = calloc(MAX_TASKS, sizeof(*comp))) || !(held = calloc(n, sizeof(*held))) ||
        !(ask = calloc(n, sizeof(*ask)))) {
        sl_warn("msg=\"slurm executor: out of memory; the jobs' states wait for the next poll\"");
        goto out;
    }
    if (read_queue(s, &q, &nq) < 0) {
        sl_warn("msg=\"squeue failed; the jobs' states wait for the next poll\"");
        goto out;
    }
    qsort(l, n, sizeof(*l), look_cmp);
    for (size_t i = 0, k = 0; i < n; i++) {
        while (k < nq && q[k].sid < l[i].sid)
            k++;
        l[i].q = k;
        for (size_t m = k; m < nq && q[m].sid == l[i].sid; m++) {
            enum sl_slurm_phase p = sl_slurm_phase(q[m].state);
            l[i].nq++;
            if (p == SL_SLURM_WAITING && strncmp(q[m].reason, "JobHeld", 7) == 0 &&
                !l[i].unheld)
                l[i].held = true;
            if (p == SL_SLURM_WAITING && unavailable(s, l[i].j, q[m].reason)) {
                l[i].unavailable = true;
                snprintf(l[i].reason, sizeof(l[i].reason), "%s", q[m].reason);
            }
            l[i].running += p == SL_SLURM_RUNNING;
            l[i].ended += p == SL_SLURM_ENDED || p == SL_SLURM_LOST;
            l[i].waiting += p == SL_SLURM_WAITING;
        }
        if (l[i].held)
            held[nheld++] = l[i].j;
    }
    sl_slx_release(s, held, nheld);
    for (size_t i = 0; i < n; i++) {
        struct look *x = &l[i];
        if (x->held)
            continue;
        if (x->unavailable && !x->running)
            giveup_unavailable(s, x);
        else if (x->ended && !x->running && !x->waiting)
            settle_ended(s, x, q, comp);
        else if (!x->nq || (x->running && !x->checked))
            ask[nask++] = *x;
        if (x->deferred_sig && x->running && sl_slx_is_up(s, x->j)) {
            pthread_mutex_lock(&s->mu);
            if (x->j->deferred_sig == x->deferred_sig)
                x->j->deferred_sig = 0;
            pthread_mutex_unlock(&s->mu);
            sl_slx_scancel(s, x->sid, x->deferred_sig);
        }
    }
    sl_slx_fan_out(s, ask, nask, sizeof(*ask), look_details);
out:
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++)
        l[i].j->ncmds--;
    pthread_mutex_unlock(&s->mu);
    free(q);
    free(comp);
    free(held);
    free(ask);
    free(l);
}

/* ---- the jobcomp file's tail --------------------------------------------- */

/* Where the jobcomp file ends now: the tail starts there (the jobs that
 * ended before are asked after as the poll finds them). */
void sl_slx_jobcomp_skip(struct slurm *s)
{
    struct stat st;

    if (s->jobcomp[0] && stat(s->jobcomp, &st) == 0) {
        s->jc_off = st.st_size;
        s->jc_dev = st.st_dev;
        s->jc_ino = st.st_ino;
    }
}

/* Read the lines added to the jobcomp file since the last read, and settle
 * each job of one component that a line says ended (a job over several
 * nodes is left to the poll, which sees all its components). A file
 * replaced or cut (rotated) is read from its start; a last line without
 * its newline waits for the next read. */
static void jobcomp_tail(struct slurm *s)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    struct stat st;
    FILE *f;

    if (!s->jobcomp[0] || !(f = fopen(s->jobcomp, "re")))
        return;
    if (fstat(fileno(f), &st) < 0 || st.st_size == s->jc_off) {
        fclose(f);
        return;
    }
    if (st.st_dev != s->jc_dev || st.st_ino != s->jc_ino || st.st_size < s->jc_off) {
        s->jc_off = 0;
        s->jc_dev = st.st_dev;
        s->jc_ino = st.st_ino;
    }
    if (fseeko(f, s->jc_off, SEEK_SET) < 0) {
        fclose(f);
        return;
    }
    while ((len = getline(&line, &cap, f)) > 0 && line[len - 1] == '\n') {
        struct sl_slurm_job c;
        struct sjob *j = NULL;
        s->jc_off += len;
        line[len - 1] = '\0';
        if (len > 65536 || sl_slurm_parse_job(line, &c) < 0 ||
            sl_slurm_phase(c.state) < SL_SLURM_ENDED)
            continue;
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < s->njobs && !j; i++)
            if (s->jobs[i]->slurm_id == c.id && s->jobs[i]->ncomp == 1 &&
                (s->jobs[i]->st == SJ_WAITING || s->jobs[i]->st == SJ_RUNNING))
                j = s->jobs[i];
        if (j)
            j->ncmds++;
        pthread_mutex_unlock(&s->mu);
        if (!j)
            continue;
        c.nplaces = 0; /* a jobcomp line has no GRES details */
        sl_slx_job_settle(s, j, &c, 1);
        pthread_mutex_lock(&s->mu);
        j->ncmds--;
        pthread_mutex_unlock(&s->mu);
    }
    free(line);
    fclose(f);
}

/* The reader: reads the jobcomp file's tail when the file changes (it
 * watches the file's directory, so that a rotated file's successor is
 * seen) and at every poll interval, until jc_stop is written. */
static void *jobcomp_reader(void *arg)
{
    struct slurm *s = arg;
    const char *base = strrchr(s->jobcomp, '/') + 1;
    struct pollfd p[2] = {{.fd = s->jc_stop, .events = POLLIN},
                          {.fd = s->jc_inotify, .events = POLLIN}};
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));

    pthread_setname_np(pthread_self(), "slurm-jobcomp");
    for (;;) {
        int rc = poll(p, s->jc_inotify >= 0 ? 2 : 1, (int)s->poll_ms);
        bool mine = rc == 0;
        ssize_t n;
        if (rc < 0 && errno != EINTR)
            break;
        if (rc > 0 && p[0].revents)
            break;
        if (rc > 0 && p[1].revents && (n = read(s->jc_inotify, buf, sizeof(buf))) > 0)
            for (char *q = buf; q < buf + n;) {
                const struct inotify_event *ev = (const void *)q;
                mine = mine || (ev->len && strcmp(ev->name, base) == 0) ||
                       (ev->mask & IN_Q_OVERFLOW);
                q += sizeof(*ev) + ev->len;
            }
        if (mine)
            jobcomp_tail(s);
    }
    return NULL;
}

/* Start the reader; without inotify it reads at the poll interval only. */
int sl_slx_jobcomp_reader_start(struct slurm *s, struct sl_error *err)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(s->jobcomp, '/');
    int rc;

    snprintf(dir, sizeof(dir), "%.*s", slash == s->jobcomp ? 1 : (int)(slash - s->jobcomp),
             s->jobcomp);
    if ((s->jc_inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0 ||
        inotify_add_watch(s->jc_inotify, dir, IN_MODIFY | IN_CREATE | IN_MOVED_TO) < 0) {
        sl_warn("msg=\"slurm executor: cannot watch the jobcomp file; it is read at each "
                "poll interval\" path=%s error=\"%s\"", s->jobcomp, strerror(errno));
        if (s->jc_inotify >= 0)
            close(s->jc_inotify);
        s->jc_inotify = -1;
    }
    if ((s->jc_stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return sl_errorf(err, -errno, "eventfd: %s", strerror(errno));
    if ((rc = pthread_create(&s->jc_thread, NULL, jobcomp_reader, s)) != 0)
        return sl_errorf(err, -rc, "slurm executor: cannot start its jobcomp reader");
    s->jc_started = true;
    return 0;
}
