/*
 * timed.c - timed mode of `sluice sim`: a trace's arrivals and run times
 * through queues, quotas, priorities, preemption and backfill, on a
 * virtual clock with a simulated executor. See sim.h.
 *
 * The clock jumps from event to event: arrivals (the trace's submit times,
 * inter-arrival gaps divided by --time-scale), completions, the end of a
 * preempted job's grace period, and the scheduler's own timers. After the
 * events of an instant the scheduler makes a pass: a full one when
 * something was freed, else one over the new jobs only (the last full
 * pass's reservations hold), exactly as sluiced does.
 *
 * The executor: a job runs for its run time; a preempted job gets its
 * checkpoint signal, keeps its resources for the grace period (30 s),
 * then goes back in line with its submit time, and resumes from the
 * checkpoint taken at the signal (work done after it is lost). Backfill
 * needs run-time estimates: with --estimate exact (the default) each job's
 * maxRuntime is its run time rounded up to the minute; with none, jobs
 * have none and only reservations of others' known ends exist.
 *
 * Teams: for a job list (Philly, Helios) each virtual cluster of --vcs is
 * a team with one queue whose nominal quota is its GPUs, all in one cohort
 * so that idle quota can be borrowed and reclaimed; the trace's users are
 * dealt to the virtual clusters greedily (biggest GPU-time first, to the
 * one least loaded relative to its quota), because the job lists carry no
 * VC (each to the VC least loaded for its quota once it has the user).
 * Without --vcs there is one queue. For openb pods the team is the QoS
 * (LS, Burstable, Guaranteed, BE), LS jobs are production, BE ones
 * best-effort. --config replaces the queues and classes with manifests.
 * --scheduler fifo is the baseline: one queue, strict FIFO (no job passes
 * an earlier one), no backfill, no preemption, no quotas.
 *
 * Fairness: Jain's index over teams of x = 1 / (mean bounded slowdown of
 * the team's jobs), bounded slowdown = max(1, JCT / max(run time, 60 s)).
 */
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sched/sched.h"
#include "../util/rng.h"
#include "simint.h"
#include "trace.h"

#define GRACE_MS 30000
#define SLOWDOWN_FLOOR_MS 60000
#define SYNTH_GPUS 8
#define SYNTH_CPU_MILLI (128 * 1000LL)
#define SYNTH_MEM_BYTES (1024LL << 30)
#define MAX_TEAMS 4096

enum { S_FUTURE, S_PENDING, S_RUNNING, S_TERMINATING, S_DONE, S_REFUSED };
enum { E_FINISH, E_STOP, E_WAKE };

struct sjob {
    const struct sl_trace_task *t;
    size_t idx;                   /* trace order */
    int team;                     /* index into teams */
    int64_t submit_ms;
    int64_t remaining_ms;         /* work left */
    int64_t first_start_ms;       /* -1 until it first runs */
    int64_t run_start_ms;         /* this run's start */
    int64_t signal_ms;            /* terminating: when it was told to stop */
    int64_t finish_ms;
    uint32_t gen;                 /* bumped at each start and stop */
    int state;
    int preemptions;
    int gpus_milli;               /* all tasks */
};

struct event {
    int64_t at_ms;
    int kind;
    int job;                      /* index, or -1 */
    uint32_t gen;
};

struct heap {
    struct event *v;
    size_t n, cap;
};

struct team {
    char name[SL_TRACE_NAME_MAX + 1];
    int queue;                    /* scheduler queue index */
    int64_t nominal_milli;        /* GPU quota, -1 = none */
    double demand;                /* GPU-seconds dealt to it */
};

/* ---- the event heap --------------------------------------------------- */

static bool ev_less(const struct event *a, const struct event *b)
{
    if (a->at_ms != b->at_ms)
        return a->at_ms < b->at_ms;
    return a->kind < b->kind;
}

static int heap_push(struct heap *h, struct event e)
{
    size_t i;

    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        struct event *nv = realloc(h->v, cap * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        h->v = nv;
        h->cap = cap;
    }
    i = h->n++;
    h->v[i] = e;
    while (i > 0 && ev_less(&h->v[i], &h->v[(i - 1) / 2])) {
        struct event t = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
    return 0;
}

static struct event heap_pop(struct heap *h)
{
    struct event top = h->v[0];
    size_t i = 0;

    h->v[0] = h->v[--h->n];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && ev_less(&h->v[l], &h->v[m]))
            m = l;
        if (r < h->n && ev_less(&h->v[r], &h->v[m]))
            m = r;
        if (m == i)
            break;
        struct event t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return top;
}

/* ---- statistics --------------------------------------------------------- */

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean and percentiles (nearest rank) of v[0..n), sorted in place. */
static void stats_json(struct sl_buf *out, const char *key, double *v, size_t n,
                       bool last)
{
    double sum = 0;

    qsort(v, n, sizeof(*v), dcmp);
    for (size_t i = 0; i < n; i++)
        sum += v[i];
#define PCT(p) (n ? v[(size_t)ceil((p) / 100.0 * (double)n) > 0                   \
                      ? (size_t)ceil((p) / 100.0 * (double)n) - 1                    \
                      : 0]                                                         \
                  : 0)
    sl_buf_printf(out, "  \"%s\": {\"mean\": %.1f, \"p50\": %.1f, \"p95\": %.1f, "
                       "\"p99\": %.1f}%s\n",
                  key, n ? sum / (double)n : 0, PCT(50), PCT(95), PCT(99), last ? "" : ",");
#undef PCT
}

/* ---- set-up ------------------------------------------------------------ */

static int team_index(struct team *teams, int *nteams, const char *name)
{
    for (int i = 0; i < *nteams; i++)
        if (strcmp(teams[i].name, name) == 0)
            return i;
    if (*nteams == MAX_TEAMS)
        return -ENOSPC;
    memset(&teams[*nteams], 0, sizeof(teams[0]));
    sl_strlcpy(teams[*nteams].name, name, sizeof(teams[0].name));
    teams[*nteams].nominal_milli = -1;
    teams[*nteams].queue = -1;
    return (*nteams)++;
}

static int add_queue(struct sl_sched *s, const char *name, const char *cohort,
                     int64_t nominal_milli)
{
    struct sl_sched_queue_spec q;

    sl_sched_queue_spec_init(&q, name);
    q.cohort = cohort;
    q.nominal.v[SL_DIM_GPU] = nominal_milli;
    return sl_sched_queue_set(s, &q);
}

/* Split a CSV line in place at commas (empty fields kept, a trailing CR
 * dropped); at most 'max' fields, -1 if there are more. */
static int split_row(char *line, char **out, int max)
{
    int n = 0;
    size_t len = strlen(line);

    if (len && line[len - 1] == '\r')
        line[len - 1] = '\0';
    for (char *p = line;; p++) {
        char *comma = strchr(p, ',');
        if (n == max)
            return -1;
        out[n++] = p;
        if (!comma)
            return n;
        *comma = '\0';
        p = comma;
    }
}

/* VCs of a "vc,node num" list: 8 GPUs a node. */
static int load_vc_list(const char *path, struct team *teams, int *nteams, int64_t *total,
                        struct sl_error *err)
{
    struct sl_trace_vc *v = NULL;
    size_t n = 0;
    int rc;

    if ((rc = sl_trace_load_vcs(path, &v, &n, err)) < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        int t = team_index(teams, nteams, v[i].name);
        if (t < 0) {
            free(v);
            return sl_errorf(err, t, "%s: too many virtual clusters", path);
        }
        teams[t].nominal_milli = (int64_t)v[i].nodes * SYNTH_GPUS * 1000;
        *total += teams[t].nominal_milli;
    }
    free(v);
    return 0;
}

/* VCs of a Helios per-day table "date,vc...,total": the header and the
 * last row, which gives GPUs per VC (a VC with none is left out). */
static int load_vc_table(const char *path, struct team *teams, int *nteams, int64_t *total,
                         struct sl_error *err)
{
    char *buf = NULL, *line, *last = NULL, *save = NULL, *hdr;
    size_t len;
    char *names[MAX_TEAMS], *vals[MAX_TEAMS];
    int ncol, rc;

    if ((rc = sl_read_file(path, 8 << 20, &buf, &len)) < 0)
        return sl_errorf(err, rc, "--vcs %s: %s", path, strerror(-rc));
    hdr = strtok_r(buf, "\n", &save);
    while ((line = strtok_r(NULL, "\n", &save)))
        if (*line)
            last = line;
    if (!hdr || !last) {
        free(buf);
        return sl_errorf_field(err, -EINVAL, "--vcs",
                               "--vcs %s: a 'date,VC...,total' table needs a row", path);
    }
    ncol = split_row(hdr, names, MAX_TEAMS);
    if (split_row(last, vals, MAX_TEAMS) != ncol) {
        free(buf);
        return sl_errorf_field(err, -EINVAL, "--vcs",
                               "--vcs %s: the last row has not the header's %d columns",
                               path, ncol);
    }
    for (int c = 1; c < ncol; c++) {
        int64_t g;
        int t;
        if (strcmp(names[c], "total") == 0)
            continue;
        if (!names[c][0] || sl_parse_int64(vals[c], 0, 1000000, &g) < 0) {
            rc = sl_errorf_field(err, -EINVAL, "--vcs",
                                 "--vcs %s: column '%.40s': not a GPU count: '%.20s'",
                                 path, names[c], vals[c]);
            free(buf);
            return rc;
        }
        if (g == 0)
            continue;
        if ((t = team_index(teams, nteams, names[c])) < 0) {
            free(buf);
            return sl_errorf(err, t, "%s: too many virtual clusters", path);
        }
        teams[t].nominal_milli = g * 1000;
        *total += g * 1000;
    }
    free(buf);
    if (*total == 0)
        return sl_errorf(err, -EINVAL, "--vcs %s: no GPUs in its last row", path);
    return 0;
}

/* VC sizes: "vc,node num" (8 GPUs a node), or a Helios per-day table
 * "date,vc...,total" whose last row gives GPUs per VC. */
static int load_vcs(const char *path, struct team *teams, int *nteams, int64_t *total,
                    struct sl_error *err)
{
    FILE *fp;
    char head[8] = "";

    *total = 0;
    /* which of the two: the daily table's header starts "date," */
    if (!(fp = fopen(path, "re")))
        return sl_errorf_field(err, -errno, "--vcs", "--vcs %s: %s", path, strerror(errno));
    if (!fgets(head, sizeof(head), fp))
        head[0] = '\0';
    fclose(fp);
    if (strncmp(head, "date,", 5) == 0)
        return load_vc_table(path, teams, nteams, total, err);
    return load_vc_list(path, teams, nteams, total, err);
}

struct udemand {
    char user[SL_TRACE_NAME_MAX + 1];
    double gpu_s;
    int team;
};

static int udemand_cmp(const void *a, const void *b)
{
    const struct udemand *x = a, *y = b;

    if (x->gpu_s != y->gpu_s)
        return x->gpu_s > y->gpu_s ? -1 : 1;
    return strcmp(x->user, y->user);
}

static int user_find(struct udemand *u, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(u[i].user, name) == 0)
            return (int)i;
    return -1;
}

/* Shuffle the tasks with the seed, then draw copies with replacement (or
 * drop tasks at random) until their GPU demand is just under target x
 * capacity. Replaces *tt. */
static int resample(struct sl_trace_task **tt, size_t *nt, int64_t cap_milli, double target,
                    uint64_t seed, struct sl_error *err)
{
    struct sl_trace_task *v = *tt, *nv;
    size_t n = *nt, cap = n;
    int64_t want = (int64_t)llround(target * (double)cap_milli), demand = 0;
    struct sl_rng rng;

    if (n == 0)
        return 0;
    sl_rng_seed(&rng, seed);
    for (size_t i = n; i > 1; i--) {
        size_t k = (size_t)sl_rng_below(&rng, i);
        struct sl_trace_task t = v[i - 1];
        v[i - 1] = v[k];
        v[k] = t;
    }
    for (size_t i = 0; i < n; i++)
        demand += (int64_t)v[i].tasks * v[i].num_gpu * v[i].gpu_milli;
    while (demand > want && n > 0) {
        n--; /* the shuffled list's last, a random one */
        demand -= (int64_t)v[n].tasks * v[n].num_gpu * v[n].gpu_milli;
    }
    for (size_t orig = n; demand < want && orig > 0;) {
        size_t pi = (size_t)sl_rng_below(&rng, orig);
        const struct sl_trace_task *pick = &v[pi];
        int64_t d = (int64_t)pick->tasks * pick->num_gpu * pick->gpu_milli;
        if (demand + d > want)
            break;
        if (n == cap) {
            if (cap >= (size_t)SL_TRACE_MAX_ROWS / 2)
                return sl_errorf_field(err, -EINVAL, "--target",
                                       "--target: more than %d tasks would be needed",
                                       SL_TRACE_MAX_ROWS);
            if (!(nv = realloc(v, sizeof(*v) * cap * 2)))
                return sl_errorf(err, -ENOMEM, "out of memory");
            /* the old block is gone: the pick is found again by index */
            pick = nv + pi;
            v = nv;
            *tt = v;
            cap *= 2;
        }
        v[n++] = *pick;
        demand += d;
    }
    *tt = v;
    *nt = n;
    return 0;
}

/* The length of [a, b) within [lo, hi). */
static double overlap(int64_t a, int64_t b, int64_t lo, int64_t hi)
{
    int64_t x = a > lo ? a : lo, y = b < hi ? b : hi;

    return y > x ? (double)(y - x) : 0;
}

static int arrival_cmp(const void *a, const void *b)
{
    const struct sjob *x = a, *y = b;

    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* ---- the run ----------------------------------------------------------- */

/* One timed run: what it read, the scheduler it drives, the jobs and the
 * clock. Owns everything it points to (run_fini). */
struct run {
    const struct sl_sim_opts *o;
    struct sl_error *err;
    struct sl_trace_node *tn;     /* --nodes */
    size_t nn;
    struct sl_trace_task *tt;     /* the trace, resampled for --target */
    size_t nt;
    struct sl_manifest *mf;       /* --config */
    size_t nmf;
    struct sl_sched *s;
    struct sjob *jobs;            /* nt, by arrival once dealt */
    struct team *teams;           /* MAX_TEAMS slots */
    int nteams;
    struct udemand *users;        /* the trace's users, when dealt to teams */
    size_t nusers;
    struct heap heap;             /* finishes, stops, the scheduler's wake-ups */
    bool fifo;                    /* --scheduler fifo */
    bool pods;                    /* an openb pod list */
    bool by_qos;                  /* pods' teams are their QoS */
    int c_batch, c_prod, c_be;    /* priority classes */
    int q_fifo;                   /* the FIFO baseline's one queue */
    int64_t vc_total;             /* GPU milli of --vcs */
    int64_t cap_milli;            /* the cluster's GPUs */
    int max_gpus;                 /* the largest node's */
    int64_t max_cpu, max_mem;
    double scale;                 /* --time-scale */
    int64_t now;                  /* the virtual clock, ms */
    int64_t first_submit, last_submit, last_finish;
    size_t next_arrival, done, refused, total_preempts;
    double gpu_ms_used;           /* GPU-ms held by running jobs */
    double gpu_ms_window;         /* ... between the first and last arrival */
    int64_t passes;
    struct sl_sim_bar bar;
};

static void run_init(struct run *r, const struct sl_sim_opts *o, struct sl_error *err)
{
    memset(r, 0, sizeof(*r));
    r->o = o;
    r->err = err;
    r->fifo = o->scheduler && strcmp(o->scheduler, "fifo") == 0;
    r->c_prod = r->c_be = r->q_fifo = -1;
    r->scale = o->time_scale > 0 ? o->time_scale : 1;
    r->bar.on = o->progress;
}

static void run_fini(struct run *r)
{
    sl_sched_destroy(r->s);
    free(r->heap.v);
    free(r->mf);
    free(r->jobs);
    free(r->teams);
    free(r->users);
    free(r->tn);
    free(r->tt);
}

/* The trace: an openb pod list or a job list, cut to --max-jobs. */
static int load_workload(struct run *r)
{
    const struct sl_sim_opts *o = r->o;
    int rc;

    r->pods = sl_trace_sniff(o->workload_path) == 'p';
    if (r->pods)
        rc = sl_trace_load_pods(o->workload_path, &r->tt, &r->nt, r->err);
    else
        rc = sl_trace_load_jobs(o->workload_path, &r->tt, &r->nt, r->err);
    if (rc < 0)
        return rc;
    if (o->max_jobs > 0 && (size_t)o->max_jobs < r->nt)
        r->nt = (size_t)o->max_jobs;
    return 0;
}

/* The scheduler, with the batch class, and production and best-effort for
 * pods; the FIFO baseline runs in strict order without backfill or
 * preemption. */
static int sched_make(struct run *r, enum sl_placement policy)
{
    struct sl_sched_config cfg;

    sl_sched_config_init(&cfg);
    cfg.placement = policy;
    cfg.seed = r->o->seed;
    if (r->fifo) {
        cfg.strict_fifo = true;
        cfg.backfill = false;
        cfg.preemption = false;
    }
    if (!(r->s = sl_sched_create(&cfg)))
        return sl_errorf(r->err, -ENOMEM, "out of memory");
    r->c_batch = sl_sched_class_set(r->s, &(struct sl_sched_class_spec){"batch", 100, true,
                                                                        false, 0});
    if (r->pods) {
        r->c_prod = sl_sched_class_set(r->s, &(struct sl_sched_class_spec){"production", 1000,
                                                                           false, false, 0});
        r->c_be = sl_sched_class_set(r->s, &(struct sl_sched_class_spec){"best-effort", 0,
                                                                         true, true, 0});
    }
    return 0;
}

/* --config: its manifests applied (the FIFO baseline applies none), its
 * queues the teams in place of the VCs; a batch class when it has none. */
static int config_apply(struct run *r)
{
    const char *path = r->o->config_path;
    struct sl_error *err = r->err;
    char *buf = NULL;
    size_t len;
    int rc;

    if ((rc = sl_read_file(path, SL_SPEC_MAX_BYTES, &buf, &len)) < 0) {
        sl_errorf_field(err, rc, "--config", "--config %s: %s", path,
                        rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
        return rc;
    }
    rc = sl_manifests_parse(buf, len, &r->mf, &r->nmf, err);
    free(buf);
    if (rc < 0) {
        char text[sizeof(err->text)];
        sl_strlcpy(text, err->text, sizeof(text));
        sl_errorf_field(err, rc, err->field, "--config %s: %s%s%s", path, err->field,
                        err->field[0] ? ": " : "", text);
        return rc;
    }
    r->nteams = 0; /* the queues replace the VCs as teams */
    for (size_t i = 0; i < r->nmf; i++) {
        const struct sl_manifest *m = &r->mf[i];
        int q = r->fifo ? 0 : sl_sched_apply_manifest(r->s, m);
        int t;
        if (q < 0)
            return sl_errorf(err, q, "--config %s: %s: cannot apply (%s)", path, m->name,
                             strerror(-q));
        if (m->kind != SL_KIND_QUEUE)
            continue;
        if ((t = team_index(r->teams, &r->nteams, m->name)) < 0)
            return sl_errorf(err, t, "--config: too many queues");
        r->teams[t].queue = q;
        r->teams[t].nominal_milli = m->u.queue.nominal.gpu_milli;
    }
    if (r->nteams == 0)
        return sl_errorf_field(err, -EINVAL, "--config", "--config %s: declares no Queue",
                               path);
    if ((r->c_batch = sl_sched_class_find(r->s, "batch")) < 0)
        r->c_batch = sl_sched_class_set(r->s, &(struct sl_sched_class_spec){"batch", 100,
                                                                            true, false, 0});
    return 0;
}

/* The teams: the virtual clusters of --vcs, the queues of --config, or
 * (made as the jobs are dealt) the QoS of openb pods; the FIFO baseline
 * keeps them for its figures but puts every job in one queue. */
static int teams_make(struct run *r)
{
    int rc;

    if (r->o->vc_path &&
        (rc = load_vcs(r->o->vc_path, r->teams, &r->nteams, &r->vc_total, r->err)) < 0)
        return rc;
    if (r->o->config_path) {
        if ((rc = config_apply(r)) < 0)
            return rc;
    } else if (!r->fifo) {
        for (int i = 0; i < r->nteams; i++)
            r->teams[i].queue = add_queue(r->s, r->teams[i].name, "cluster",
                                          r->teams[i].nominal_milli);
    }
    if (r->nteams == 0 && !r->pods) {
        int t = team_index(r->teams, &r->nteams, "all");
        r->teams[t].queue = r->fifo ? -1 : add_queue(r->s, "all", NULL, -1);
    }
    if (r->fifo && (r->q_fifo = add_queue(r->s, "fifo", NULL, -1)) < 0)
        return sl_errorf(r->err, r->q_fifo, "out of memory");
    for (int i = 0; i < r->nteams; i++)
        if (!r->fifo && r->teams[i].queue < 0)
            return sl_errorf(r->err, -ENOMEM, "out of memory");
    r->by_qos = r->pods && r->nteams == 0;
    return 0;
}

/* Nodes of SYNTH_GPUS GPUs, enough for the GPUs of --vcs. */
static int synth_nodes(struct run *r)
{
    for (int64_t k = 0; k * SYNTH_GPUS * 1000 < r->vc_total; k++) {
        struct sl_sched_node_spec n = {0};
        char name[32];
        int rc;
        snprintf(name, sizeof(name), "node-%04" PRId64, k);
        n.name = name;
        n.cpu_milli = SYNTH_CPU_MILLI;
        n.mem_bytes = SYNTH_MEM_BYTES;
        n.ngpus = SYNTH_GPUS;
        for (int g = 0; g < SYNTH_GPUS; g++)
            n.gpu_model[g] = "GPU";
        if ((rc = sl_sched_node_add(r->s, &n)) < 0)
            return sl_errorf(r->err, rc, "cannot add node %s", name);
        r->cap_milli += SYNTH_GPUS * 1000;
        r->nn++;
    }
    r->max_gpus = SYNTH_GPUS;
    r->max_cpu = SYNTH_CPU_MILLI;
    r->max_mem = SYNTH_MEM_BYTES;
    return 0;
}

/* The cluster: --nodes, or nodes of 8 GPUs enough for the VCs; its GPU
 * capacity and its largest node. */
static int cluster_make(struct run *r)
{
    int rc;

    if (r->o->nodes_path) {
        if ((rc = sl_trace_load_nodes(r->o->nodes_path, &r->tn, &r->nn, r->err)) < 0 ||
            (rc = sl_sim_add_nodes(r->s, r->tn, r->nn, r->err)) < 0)
            return rc;
        for (size_t i = 0; i < r->nn; i++) {
            const struct sl_trace_node *n = &r->tn[i];
            r->cap_milli += (int64_t)n->ngpus * 1000;
            if (n->ngpus > r->max_gpus)
                r->max_gpus = n->ngpus;
            if (n->cpu_milli > r->max_cpu)
                r->max_cpu = n->cpu_milli;
            if (n->mem_bytes > r->max_mem)
                r->max_mem = n->mem_bytes;
        }
    } else if (r->vc_total > 0) {
        if ((rc = synth_nodes(r)) < 0)
            return rc;
    } else {
        return sl_errorf_field(r->err, -EINVAL, "--nodes",
                               "timed mode needs --nodes FILE or --vcs FILE (the cluster)");
    }
    if (r->cap_milli == 0)
        return sl_errorf(r->err, -EINVAL, "the cluster has no GPUs");
    return 0;
}

/* Job 'j''s team: its QoS (a queue made for a new one), the one team, or,
 * to be resolved once users are dealt, -2 - its user's index in
 * r->users, its GPU-time added to that user's. */
static int job_team(struct run *r, struct sjob *j)
{
    const struct sl_trace_task *t = j->t;
    const char *u;
    int k;

    if (r->by_qos) {
        const char *qos = t->qos[0] ? t->qos : "none";
        int tm = team_index(r->teams, &r->nteams, qos);
        if (tm < 0)
            return sl_errorf(r->err, tm, "too many QoS classes");
        if (!r->fifo && r->teams[tm].queue < 0 &&
            (r->teams[tm].queue = add_queue(r->s, r->teams[tm].name, NULL, -1)) < 0)
            return sl_errorf(r->err, r->teams[tm].queue, "out of memory");
        j->team = tm;
        return 0;
    }
    if (r->nteams == 1) {
        j->team = 0;
        return 0;
    }
    u = t->user[0] ? t->user : t->name;
    if ((k = user_find(r->users, r->nusers, u)) < 0) {
        k = (int)r->nusers++;
        sl_strlcpy(r->users[k].user, u, sizeof(r->users[k].user));
        r->users[k].team = -1;
    }
    r->users[k].gpu_s += (double)j->gpus_milli / 1000 * (double)j->remaining_ms / 1000;
    j->team = -2 - k;
    return 0;
}

/* Deal users, biggest first, each to the team that is then least loaded
 * for its quota (the biggest to the biggest quota); then each job to its
 * user's team. */
static int users_deal(struct run *r)
{
    struct udemand *sorted = malloc(sizeof(*sorted) * r->nusers);

    if (!sorted)
        return sl_errorf(r->err, -ENOMEM, "out of memory");
    memcpy(sorted, r->users, sizeof(*sorted) * r->nusers);
    qsort(sorted, r->nusers, sizeof(*sorted), udemand_cmp);
    for (size_t k = 0; k < r->nusers; k++) {
        int best = 0;
        double best_load = INFINITY;
        for (int tm = 0; tm < r->nteams; tm++) {
            double q = r->teams[tm].nominal_milli > 0 ? (double)r->teams[tm].nominal_milli : 1000;
            double load = (r->teams[tm].demand + sorted[k].gpu_s) / q;
            if (load < best_load) {
                best_load = load;
                best = tm;
            }
        }
        r->teams[best].demand += sorted[k].gpu_s;
        r->users[user_find(r->users, r->nusers, sorted[k].user)].team = best;
    }
    free(sorted);
    for (size_t i = 0; i < r->nt; i++)
        if (r->jobs[i].team <= -2)
            r->jobs[i].team = r->users[-2 - r->jobs[i].team].team;
    return 0;
}

/* The jobs: times scaled, users dealt to teams, in order of arrival. A
 * job no node could ever take (a task bigger than the largest node, or
 * more GPUs than the cluster) is refused, as sluiced refuses it at
 * submission. */
static int jobs_make(struct run *r)
{
    int rc;

    if (!(r->jobs = calloc(r->nt + 1, sizeof(*r->jobs))) ||
        !(r->users = calloc(r->nt + 1, sizeof(*r->users))))
        return sl_errorf(r->err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < r->nt; i++) {
        const struct sl_trace_task *t = &r->tt[i];
        struct sjob *j = &r->jobs[i];
        int64_t sub = t->submit_ms >= 0 ? t->submit_ms : 0;
        j->t = t;
        j->idx = i;
        j->submit_ms = (int64_t)((double)sub / r->scale);
        j->remaining_ms = t->duration_ms > 0 ? t->duration_ms : 0;
        j->first_start_ms = -1;
        j->gpus_milli = t->tasks * t->num_gpu * (t->num_gpu ? t->gpu_milli : 0);
        if (t->num_gpu > r->max_gpus || t->cpu_milli > r->max_cpu || t->mem_bytes > r->max_mem ||
            j->gpus_milli > r->cap_milli)
            j->state = S_REFUSED;
        if ((rc = job_team(r, j)) < 0)
            return rc;
    }
    if (r->nusers > 0 && (rc = users_deal(r)) < 0)
        return rc;
    qsort(r->jobs, r->nt, sizeof(*r->jobs), arrival_cmp); /* stable by trace order */
    r->first_submit = r->nt ? r->jobs[0].submit_ms : 0;
    r->last_submit = r->nt ? r->jobs[r->nt - 1].submit_ms : 0;
    return 0;
}

/* ---- the clock ---------------------------------------------------------- */

/* Submit job 'i', arrived: its queue, user and class, and with --estimate
 * exact a maxRuntime of its run time rounded up to the minute. */
static int submit(struct run *r, size_t i)
{
    struct sjob *j = &r->jobs[i];
    const struct sl_trace_task *t = j->t;
    struct sl_sched_job_spec sp;
    struct sl_error why = {0};
    char user[80];
    int rc, u, pc = r->c_batch;

    if ((rc = sl_sim_spec(r->s, t, &sp, r->err)) < 0)
        return rc;
    snprintf(user, sizeof(user), "%s", t->user[0] ? t->user : "trace");
    if ((u = sl_sched_user(r->s, user)) < 0)
        return sl_errorf(r->err, u, "out of memory");
    if (r->by_qos && !r->fifo) {
        if (strcmp(t->qos, "LS") == 0)
            pc = r->c_prod;
        else if (strcmp(t->qos, "BE") == 0)
            pc = r->c_be;
    }
    sp.id = (int64_t)i + 1;
    sp.queue = r->fifo ? r->q_fifo : r->teams[j->team].queue;
    sp.user = u;
    sp.pclass = pc;
    sp.submit_ms = j->submit_ms;
    if (!r->o->no_estimate && j->remaining_ms > 0)
        sp.max_runtime_ms = (j->remaining_ms + 59999) / 60000 * 60000;
    if (sl_sched_job_add(r->s, &sp, &why) < 0)
        return sl_errorf(r->err, -EINVAL, "%s: %s: %s", t->name, why.field, why.text);
    j->state = S_PENDING;
    return 0;
}

/* The jobs that have arrived by now: submitted, or counted as refused. */
static int arrivals(struct run *r)
{
    int rc;

    while (r->next_arrival < r->nt && r->jobs[r->next_arrival].submit_ms <= r->now) {
        size_t i = r->next_arrival++;
        if (r->jobs[i].state == S_REFUSED) {
            r->refused++;
            continue;
        }
        if ((rc = submit(r, i)) < 0)
            return rc;
    }
    return 0;
}

/* The GPU time of j's run until now, in all and within the arrivals. */
static void gpu_time_add(struct run *r, const struct sjob *j)
{
    r->gpu_ms_used += (double)j->gpus_milli / 1000 * (double)(r->now - j->run_start_ms);
    r->gpu_ms_window += (double)j->gpus_milli / 1000 *
                        overlap(j->run_start_ms, r->now, r->first_submit, r->last_submit);
}

/* The events due by now: a job finishes; a preempted job stops at the end
 * of its grace and goes back in line with the work done until its signal.
 * Returns whether anything was freed. */
static bool events(struct run *r)
{
    bool freed = false;

    while (r->heap.n && r->heap.v[0].at_ms <= r->now) {
        struct event ev = heap_pop(&r->heap);
        struct sjob *j = ev.job >= 0 ? &r->jobs[ev.job] : NULL;
        if (!j || ev.gen != j->gen)
            continue; /* a wake-up, or stale */
        if (ev.kind == E_FINISH && (j->state == S_RUNNING || j->state == S_TERMINATING)) {
            sl_sched_job_remove(r->s, (int64_t)ev.job + 1, r->now);
            gpu_time_add(r, j);
            j->state = S_DONE;
            j->finish_ms = r->now;
            r->last_finish = r->now;
            r->done++;
            freed = true;
        } else if (ev.kind == E_STOP && j->state == S_TERMINATING) {
            gpu_time_add(r, j);
            j->remaining_ms -= j->signal_ms - j->run_start_ms;
            if (j->remaining_ms < 0)
                j->remaining_ms = 0;
            sl_sched_job_requeue(r->s, (int64_t)ev.job + 1, r->now, 0);
            j->state = S_PENDING;
            j->gen++;
            j->preemptions++;
            freed = true;
        }
    }
    return freed;
}

/* Carry out a pass: each start runs until its finish; each preempted job
 * stops at the end of its grace, or finishes first; the scheduler wakes
 * when it asked to. */
static int pass_apply(struct run *r, const struct sl_sched_result *res)
{
    for (int i = 0; i < res->nstarts; i++) {
        int ji = (int)(res->starts[i].job_id - 1);
        struct sjob *j = &r->jobs[ji];
        j->state = S_RUNNING;
        j->run_start_ms = r->now;
        if (j->first_start_ms < 0)
            j->first_start_ms = r->now;
        j->gen++;
        if (heap_push(&r->heap, (struct event){r->now + j->remaining_ms, E_FINISH, ji, j->gen}) <
            0)
            return sl_errorf(r->err, -ENOMEM, "out of memory");
    }
    for (int i = 0; i < res->npreempts; i++) {
        int ji = (int)(res->preempts[i].job_id - 1);
        struct sjob *j = &r->jobs[ji];
        if (j->state != S_RUNNING)
            continue;
        j->state = S_TERMINATING;
        j->signal_ms = r->now;
        r->total_preempts++;
        if (r->now + GRACE_MS < j->run_start_ms + j->remaining_ms &&
            heap_push(&r->heap, (struct event){r->now + GRACE_MS, E_STOP, ji, j->gen}) < 0)
            return sl_errorf(r->err, -ENOMEM, "out of memory");
    }
    if (res->wake_ms > r->now)
        heap_push(&r->heap, (struct event){res->wake_ms, E_WAKE, -1, 0});
    return 0;
}

static void progress(struct run *r, bool end)
{
    char day[48];

    snprintf(day, sizeof(day), "day %.1f", (double)(r->now - r->first_submit) / 86400000.0);
    sl_sim_progress(&r->bar, r->done + r->refused, r->nt, "jobs", day, end);
}

/* Run the clock from event to event until every job has finished or was
 * refused, or what is left can never start: after the arrivals and
 * events of an instant, a pass (a full one when something was freed). */
static int clock_run(struct run *r)
{
    int rc;

    while (r->done + r->refused < r->nt) {
        int64_t next = INT64_MAX;
        struct sl_sched_result res;
        bool freed;

        if (r->next_arrival < r->nt)
            next = r->jobs[r->next_arrival].submit_ms;
        if (r->heap.n && r->heap.v[0].at_ms < next)
            next = r->heap.v[0].at_ms;
        if (next == INT64_MAX)
            break; /* what is left can never start */
        r->now = next;
        if ((rc = arrivals(r)) < 0)
            return rc;
        freed = events(r);
        if ((rc = sl_sched_pass(r->s, r->now, !freed, &res)) < 0) {
            sl_sched_result_fini(&res);
            return sl_errorf(r->err, rc, "out of memory");
        }
        r->passes++;
        rc = pass_apply(r, &res);
        sl_sched_result_fini(&res);
        if (rc < 0)
            return rc;
        if (r->o->progress)
            progress(r, false);
    }
    if (r->o->progress)
        progress(r, true);
    return 0;
}

/* ---- the summary -------------------------------------------------------- */

/* The figures of the finished jobs, each and per team. */
struct figures {
    double *jct, *wait;           /* per finished job, s */
    size_t n;                     /* finished jobs */
    size_t preempted;             /* of those, preempted at least once */
    double *tsum;                 /* per team: sum of bounded slowdowns */
    double *twait, *tjct;         /* ... of queueing delays and JCTs, s */
    double *tgpu;                 /* ... GPU-hours of run time */
    size_t *tcount;               /* ... finished jobs */
};

static void figures_fini(struct figures *f)
{
    free(f->jct);
    free(f->wait);
    free(f->tsum);
    free(f->twait);
    free(f->tjct);
    free(f->tgpu);
    free(f->tcount);
}

static int figures_make(const struct run *r, struct figures *f)
{
    size_t nt = (size_t)r->nteams + 1;

    memset(f, 0, sizeof(*f));
    f->jct = malloc(sizeof(double) * (r->done + 1));
    f->wait = malloc(sizeof(double) * (r->done + 1));
    f->tsum = calloc(nt, sizeof(double));
    f->twait = calloc(nt, sizeof(double));
    f->tjct = calloc(nt, sizeof(double));
    f->tgpu = calloc(nt, sizeof(double));
    f->tcount = calloc(nt, sizeof(size_t));
    if (!f->jct || !f->wait || !f->tsum || !f->twait || !f->tjct || !f->tgpu || !f->tcount) {
        figures_fini(f);
        return sl_errorf(r->err, -ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < r->nt; i++) {
        const struct sjob *j = &r->jobs[i];
        double run = (double)(j->t->duration_ms > 0 ? j->t->duration_ms : 0), sd;
        size_t k = f->n;
        if (j->state != S_DONE)
            continue;
        f->jct[k] = (double)(j->finish_ms - j->submit_ms) / 1000;
        f->wait[k] = (double)(j->first_start_ms - j->submit_ms) / 1000;
        sd = (double)(j->finish_ms - j->submit_ms) /
             (run > SLOWDOWN_FLOOR_MS ? run : SLOWDOWN_FLOOR_MS);
        f->tsum[j->team] += sd > 1 ? sd : 1;
        f->twait[j->team] += f->wait[k];
        f->tjct[j->team] += f->jct[k];
        f->tgpu[j->team] += (double)j->gpus_milli / 1000 * run / 3600000.0;
        f->tcount[j->team]++;
        f->preempted += j->preemptions > 0;
        f->n++;
    }
    return 0;
}

/* Jain's index over the teams with finished jobs of 1 / their mean
 * bounded slowdown (1 when there are none). */
static double jain(const struct run *r, const struct figures *f)
{
    double xs = 0, xs2 = 0;
    int nx = 0;

    for (int tm = 0; tm < r->nteams; tm++)
        if (f->tcount[tm]) {
            double x = 1.0 / (f->tsum[tm] / (double)f->tcount[tm]);
            xs += x;
            xs2 += x * x;
            nx++;
        }
    return nx && xs2 > 0 ? xs * xs / ((double)nx * xs2) : 1.0;
}

/* "teams": each with its quota and its jobs' figures. */
static void teams_json(const struct run *r, const struct figures *f, struct sl_buf *out)
{
    sl_buf_adds(out, "  \"teams\": [");
    for (int tm = 0; tm < r->nteams; tm++) {
        size_t n = f->tcount[tm];
        sl_buf_printf(out, "%s\n    {\"name\": ", tm ? "," : "");
        sl_buf_json_str(out, r->teams[tm].name);
        sl_buf_adds(out, ", \"nominal_gpus\": ");
        if (r->teams[tm].nominal_milli >= 0)
            sl_buf_printf(out, "%g", (double)r->teams[tm].nominal_milli / 1000);
        else
            sl_buf_adds(out, "null");
        sl_buf_printf(out, ", \"jobs\": %zu, \"mean_jct_s\": %.1f, "
                           "\"mean_queueing_delay_s\": %.1f, \"mean_slowdown\": %.3f, "
                           "\"gpu_hours\": %.1f}",
                      n, n ? f->tjct[tm] / (double)n : 0, n ? f->twait[tm] / (double)n : 0,
                      n ? f->tsum[tm] / (double)n : 0, f->tgpu[tm]);
    }
    sl_buf_adds(out, "\n  ],\n");
}

/* The JSON summary of the run ('wall_s': its wall-clock time). */
static int summary_json(struct run *r, double wall_s, struct sl_buf *out)
{
    const struct sl_sim_opts *o = r->o;
    double cap = (double)r->cap_milli / 1000;
    double makespan = (double)(r->last_finish - r->first_submit) / 1000;
    struct figures f;
    int rc;

    if ((rc = figures_make(r, &f)) < 0)
        return rc;
    sl_buf_printf(out, "{\n  \"mode\": \"timed\",\n  \"scheduler\": \"%s\",\n",
                  r->fifo ? "fifo" : "sluice");
    sl_buf_printf(out, "  \"policy\": \"%s\",\n  \"seed\": %" PRIu64 ",\n",
                  sl_placement_name(sl_sched_get_config(r->s)->placement), o->seed);
    if (r->pods && o->target > 0)
        sl_buf_printf(out, "  \"target\": %.4g,\n", o->target);
    sl_buf_printf(out, "  \"time_scale\": %g,\n  \"estimates\": \"%s\",\n", r->scale,
                  o->no_estimate ? "none" : "exact");
    sl_buf_printf(out, "  \"nodes\": %d,\n  \"gpu_capacity\": %" PRId64 ",\n",
                  sl_sched_node_count(r->s), r->cap_milli / 1000);
    sl_buf_printf(out, "  \"jobs\": %zu,\n  \"jobs_finished\": %zu,\n", r->nt, r->done);
    sl_buf_printf(out, "  \"jobs_refused\": %zu,\n", r->refused);
    sl_buf_printf(out, "  \"jobs_never_started\": %zu,\n", r->nt - r->done - r->refused);
    sl_buf_printf(out, "  \"makespan_s\": %.0f,\n", makespan);
    stats_json(out, "jct_s", f.jct, f.n, false);
    stats_json(out, "queueing_delay_s", f.wait, f.n, false);
    sl_buf_printf(out, "  \"gpu_utilization\": %.4f,\n",
                  makespan > 0 ? r->gpu_ms_used / 1000 / (cap * makespan) : 0);
    sl_buf_printf(out, "  \"gpu_utilization_arrivals\": %.4f,\n",
                  r->last_submit > r->first_submit
                      ? r->gpu_ms_window / (cap * (double)(r->last_submit - r->first_submit))
                      : 0);
    sl_buf_printf(out, "  \"jain_fairness\": %.4f,\n", jain(r, &f));
    sl_buf_adds(out, "  \"fairness_basis\": \"Jain's index over teams of 1 / mean "
                     "bounded slowdown, max(1, JCT / max(run time, 60 s))\",\n");
    sl_buf_printf(out, "  \"preemptions\": %zu,\n  \"preempted_jobs\": %zu,\n",
                  r->total_preempts, f.preempted);
    sl_buf_printf(out, "  \"passes\": %" PRId64 ",\n", r->passes);
    teams_json(r, &f, out);
    sl_buf_printf(out, "  \"wall_seconds\": %.3f\n}\n", wall_s);
    figures_fini(&f);
    return out->failed ? sl_errorf(r->err, -ENOMEM, "out of memory") : 0;
}

int sl_sim_timed(const struct sl_sim_opts *o, struct sl_buf *out, struct sl_error *err)
{
    struct run r;
    enum sl_placement policy;
    struct timespec t0, t1;
    double wall_s;
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((rc = sl_sim_policy(o->policy, &policy, err)) < 0)
        return rc;
    run_init(&r, o, err);
    if ((rc = load_workload(&r)) < 0)
        goto out;
    if (!(r.teams = calloc(MAX_TEAMS, sizeof(*r.teams)))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = sched_make(&r, policy)) < 0 || (rc = teams_make(&r)) < 0 ||
        (rc = cluster_make(&r)) < 0)
        goto out;
    /* openb pods are too few to load the cluster whatever the time scale
     * (their GPU-time fills it for hours, not months): --target resamples
     * them, as fill mode does, to that multiple of its GPUs; each copy
     * keeps its own arrival and run time. */
    if (r.pods && o->target > 0 &&
        (rc = resample(&r.tt, &r.nt, r.cap_milli, o->target, o->seed, err)) < 0)
        goto out;
    if ((rc = jobs_make(&r)) < 0 || (rc = clock_run(&r)) < 0)
        goto out;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    rc = summary_json(&r, wall_s, out);
out:
    run_fini(&r);
    return rc;
}
