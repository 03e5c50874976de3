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

/* VC sizes: "vc,node num" (8 GPUs a node), or a Helios per-day table
 * "date,vc...,total" whose last row gives GPUs per VC. */
static int load_vcs(const char *path, struct team *teams, int *nteams, int64_t *total,
                    struct sl_error *err)
{
    struct sl_trace_vc *v = NULL;
    size_t n = 0;
    bool table;
    int rc;

    *total = 0;
    {
        /* which of the two: the daily table's header starts "date," */
        FILE *fp = fopen(path, "re");
        char head[8] = "";
        if (!fp)
            return sl_errorf_field(err, -errno, "--vcs", "--vcs %s: %s", path, strerror(errno));
        if (!fgets(head, sizeof(head), fp))
            head[0] = '\0';
        fclose(fp);
        table = strncmp(head, "date,", 5) == 0;
    }
    if (!table) {
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
    {
        /* The daily table: read the header and the last line. */
        char *buf = NULL, *line, *last = NULL, *save = NULL, *hdr;
        size_t len;
        char *names[MAX_TEAMS], *vals[MAX_TEAMS];
        int ncol;

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

int sl_sim_timed(const struct sl_sim_opts *o, struct sl_buf *out, struct sl_error *err)
{
    struct sl_trace_node *tn = NULL;
    struct sl_trace_task *tt = NULL;
    size_t nn = 0, nt = 0, nusers = 0;
    struct sl_sched *s = NULL;
    struct sl_sched_config cfg;
    struct sjob *jobs = NULL;
    struct team *teams = NULL;
    struct udemand *users = NULL;
    struct heap heap = {0};
    struct sl_manifest *mf = NULL;
    size_t nmf = 0;
    int nteams = 0, c_batch, c_prod = -1, c_be = -1, q_fifo = -1, max_gpus = 0, rc = 0;
    bool fifo = o->scheduler && strcmp(o->scheduler, "fifo") == 0, pods, by_qos;
    int64_t vc_total = 0, max_cpu = 0, max_mem = 0;
    enum sl_placement policy;
    int64_t cap_milli = 0, now = 0, first_submit = 0, last_submit = 0, last_finish = 0;
    size_t next_arrival = 0, done = 0, refused = 0, total_preempts = 0;
    double gpu_ms_used = 0, gpu_ms_window = 0, scale = o->time_scale > 0 ? o->time_scale : 1;
    int64_t passes = 0;
    struct timespec t0, t1;
    struct sl_sim_bar bar = {o->progress, {0, 0}};

    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((rc = sl_sim_policy(o->policy, &policy, err)) < 0)
        return rc;
    pods = sl_trace_sniff(o->workload_path) == 'p';
    if (pods)
        rc = sl_trace_load_pods(o->workload_path, &tt, &nt, err);
    else
        rc = sl_trace_load_jobs(o->workload_path, &tt, &nt, err);
    if (rc < 0)
        goto out;
    if (o->max_jobs > 0 && (size_t)o->max_jobs < nt)
        nt = (size_t)o->max_jobs;
    if (!(teams = calloc(MAX_TEAMS, sizeof(*teams)))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    sl_sched_config_init(&cfg);
    cfg.placement = policy;
    cfg.seed = o->seed;
    if (fifo) {
        cfg.strict_fifo = true;
        cfg.backfill = false;
        cfg.preemption = false;
    }
    if (!(s = sl_sched_create(&cfg))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    c_batch = sl_sched_class_set(s, &(struct sl_sched_class_spec){"batch", 100, true, false, 0});
    if (pods) {
        c_prod = sl_sched_class_set(s, &(struct sl_sched_class_spec){"production", 1000, false,
                                                                     false, 0});
        c_be = sl_sched_class_set(s, &(struct sl_sched_class_spec){"best-effort", 0, true,
                                                                   true, 0});
    }

    /* The teams: the virtual clusters of --vcs, the queues of --config,
     * or the QoS of openb pods; the FIFO baseline keeps them for its
     * figures but puts every job in one queue. */
    if (o->vc_path && (rc = load_vcs(o->vc_path, teams, &nteams, &vc_total, err)) < 0)
        goto out;
    if (o->config_path) {
        char *buf = NULL;
        size_t len;
        if ((rc = sl_read_file(o->config_path, SL_SPEC_MAX_BYTES, &buf, &len)) < 0) {
            sl_errorf_field(err, rc, "--config", "--config %s: %s", o->config_path,
                            rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
            goto out;
        }
        rc = sl_manifests_parse(buf, len, &mf, &nmf, err);
        free(buf);
        if (rc < 0) {
            char text[sizeof(err->text)];
            sl_strlcpy(text, err->text, sizeof(text));
            sl_errorf_field(err, rc, err->field, "--config %s: %s%s%s", o->config_path,
                            err->field, err->field[0] ? ": " : "", text);
            goto out;
        }
        nteams = 0; /* the queues replace the VCs as teams */
        for (size_t i = 0; i < nmf; i++) {
            int q = fifo ? 0 : sl_sched_apply_manifest(s, &mf[i]);
            if (q < 0) {
                rc = sl_errorf(err, q, "--config %s: %s: cannot apply (%s)", o->config_path,
                               mf[i].name, strerror(-q));
                goto out;
            }
            if (mf[i].kind == SL_KIND_QUEUE) {
                int t = team_index(teams, &nteams, mf[i].name);
                if (t < 0) {
                    rc = sl_errorf(err, t, "--config: too many queues");
                    goto out;
                }
                teams[t].queue = q;
                teams[t].nominal_milli = mf[i].u.queue.nominal.gpu_milli;
            }
        }
        if (nteams == 0) {
            rc = sl_errorf_field(err, -EINVAL, "--config", "--config %s: declares no Queue",
                                 o->config_path);
            goto out;
        }
        if ((c_batch = sl_sched_class_find(s, "batch")) < 0)
            c_batch = sl_sched_class_set(s, &(struct sl_sched_class_spec){"batch", 100, true,
                                                                         false, 0});
    } else if (!fifo) {
        for (int i = 0; i < nteams; i++)
            teams[i].queue = add_queue(s, teams[i].name, "cluster", teams[i].nominal_milli);
    }
    if (nteams == 0 && !pods) {
        int t = team_index(teams, &nteams, "all");
        teams[t].queue = fifo ? -1 : add_queue(s, "all", NULL, -1);
    }
    if (fifo && (q_fifo = add_queue(s, "fifo", NULL, -1)) < 0) {
        rc = sl_errorf(err, q_fifo, "out of memory");
        goto out;
    }
    for (int i = 0; i < nteams; i++)
        if (!fifo && teams[i].queue < 0) {
            rc = sl_errorf(err, -ENOMEM, "out of memory");
            goto out;
        }
    by_qos = pods && nteams == 0;

    /* The cluster: --nodes, or nodes of 8 GPUs enough for the VCs. */
    if (o->nodes_path) {
        if ((rc = sl_trace_load_nodes(o->nodes_path, &tn, &nn, err)) < 0 ||
            (rc = sl_sim_add_nodes(s, tn, nn, err)) < 0)
            goto out;
        for (size_t i = 0; i < nn; i++) {
            cap_milli += (int64_t)tn[i].ngpus * 1000;
            if (tn[i].ngpus > max_gpus)
                max_gpus = tn[i].ngpus;
            if (tn[i].cpu_milli > max_cpu)
                max_cpu = tn[i].cpu_milli;
            if (tn[i].mem_bytes > max_mem)
                max_mem = tn[i].mem_bytes;
        }
    } else if (vc_total > 0) {
        for (int64_t k = 0; k * SYNTH_GPUS * 1000 < vc_total; k++) {
            struct sl_sched_node_spec n = {0};
            char name[32];
            snprintf(name, sizeof(name), "node-%04" PRId64, k);
            n.name = name;
            n.cpu_milli = SYNTH_CPU_MILLI;
            n.mem_bytes = SYNTH_MEM_BYTES;
            n.ngpus = SYNTH_GPUS;
            for (int g = 0; g < SYNTH_GPUS; g++)
                n.gpu_model[g] = "GPU";
            if ((rc = sl_sched_node_add(s, &n)) < 0) {
                sl_errorf(err, rc, "cannot add node %s", name);
                goto out;
            }
            cap_milli += SYNTH_GPUS * 1000;
            nn++;
        }
        max_gpus = SYNTH_GPUS;
        max_cpu = SYNTH_CPU_MILLI;
        max_mem = SYNTH_MEM_BYTES;
    } else {
        rc = sl_errorf_field(err, -EINVAL, "--nodes",
                             "timed mode needs --nodes FILE or --vcs FILE (the cluster)");
        goto out;
    }
    if (cap_milli == 0) {
        rc = sl_errorf(err, -EINVAL, "the cluster has no GPUs");
        goto out;
    }

    /* openb pods are too few to load the cluster whatever the time scale
     * (their GPU-time fills it for hours, not months): --target resamples
     * them, as fill mode does, to that multiple of its GPUs; each copy
     * keeps its own arrival and run time. */
    if (pods && o->target > 0 && (rc = resample(&tt, &nt, cap_milli, o->target, o->seed, err)) < 0)
        goto out;
    if (!(jobs = calloc(nt + 1, sizeof(*jobs))) || !(users = calloc(nt + 1, sizeof(*users)))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }

    /* The jobs: times scaled, users dealt to teams. A job no node could
     * ever take (a task bigger than the largest node, or more GPUs than
     * the cluster) is refused, as sluiced refuses it at submission. */
    for (size_t i = 0; i < nt; i++) {
        const struct sl_trace_task *t = &tt[i];
        struct sjob *j = &jobs[i];
        int64_t sub = t->submit_ms >= 0 ? t->submit_ms : 0;
        j->t = t;
        j->idx = i;
        j->submit_ms = (int64_t)((double)sub / scale);
        j->remaining_ms = t->duration_ms > 0 ? t->duration_ms : 0;
        j->first_start_ms = -1;
        j->gpus_milli = t->tasks * t->num_gpu * (t->num_gpu ? t->gpu_milli : 0);
        if (t->num_gpu > max_gpus || t->cpu_milli > max_cpu || t->mem_bytes > max_mem ||
            j->gpus_milli > cap_milli)
            j->state = S_REFUSED;
        if (by_qos) {
            const char *qos = t->qos[0] ? t->qos : "none";
            int tm = team_index(teams, &nteams, qos);
            if (tm < 0) {
                rc = sl_errorf(err, tm, "too many QoS classes");
                goto out;
            }
            if (!fifo && teams[tm].queue < 0 &&
                (teams[tm].queue = add_queue(s, teams[tm].name, NULL, -1)) < 0) {
                rc = sl_errorf(err, teams[tm].queue, "out of memory");
                goto out;
            }
            j->team = tm;
        } else if (nteams == 1) {
            j->team = 0;
        } else {
            const char *u = t->user[0] ? t->user : t->name;
            int k = user_find(users, nusers, u);
            if (k < 0) {
                k = (int)nusers++;
                sl_strlcpy(users[k].user, u, sizeof(users[k].user));
                users[k].team = -1;
            }
            users[k].gpu_s += (double)j->gpus_milli / 1000 * (double)j->remaining_ms / 1000;
            j->team = -2 - k; /* resolved below */
        }
    }
    if (nusers > 0) {
        /* Deal users, biggest first, each to the team that is then least
         * loaded for its quota (the biggest to the biggest quota). */
        struct udemand *sorted = malloc(sizeof(*sorted) * nusers);
        if (!sorted) {
            rc = sl_errorf(err, -ENOMEM, "out of memory");
            goto out;
        }
        memcpy(sorted, users, sizeof(*sorted) * nusers);
        qsort(sorted, nusers, sizeof(*sorted), udemand_cmp);
        for (size_t k = 0; k < nusers; k++) {
            int best = 0;
            double best_load = INFINITY;
            for (int tm = 0; tm < nteams; tm++) {
                double q = teams[tm].nominal_milli > 0 ? (double)teams[tm].nominal_milli : 1000;
                double load = (teams[tm].demand + sorted[k].gpu_s) / q;
                if (load < best_load) {
                    best_load = load;
                    best = tm;
                }
            }
            teams[best].demand += sorted[k].gpu_s;
            users[user_find(users, nusers, sorted[k].user)].team = best;
        }
        free(sorted);
        for (size_t i = 0; i < nt; i++)
            if (jobs[i].team <= -2)
                jobs[i].team = users[-2 - jobs[i].team].team;
    }
    qsort(jobs, nt, sizeof(*jobs), arrival_cmp); /* stable by trace order */
    first_submit = nt ? jobs[0].submit_ms : 0;
    last_submit = nt ? jobs[nt - 1].submit_ms : 0;

    /* The clock. */
    while (done + refused < nt) {
        int64_t next = INT64_MAX;
        struct sl_sched_result res;
        bool freed = false;

        if (next_arrival < nt)
            next = jobs[next_arrival].submit_ms;
        if (heap.n && heap.v[0].at_ms < next)
            next = heap.v[0].at_ms;
        if (next == INT64_MAX)
            break; /* what is left can never start */
        now = next;
        while (next_arrival < nt && jobs[next_arrival].submit_ms <= now) {
            size_t i = next_arrival++;
            struct sjob *j = &jobs[i];
            const struct sl_trace_task *t = j->t;
            struct sl_sched_job_spec sp;
            struct sl_error why = {0};
            char user[80];
            int u, pc = c_batch;

            if (j->state == S_REFUSED) {
                refused++;
                continue;
            }
            if ((rc = sl_sim_spec(s, t, &sp, err)) < 0)
                goto out;
            snprintf(user, sizeof(user), "%s", t->user[0] ? t->user : "trace");
            if ((u = sl_sched_user(s, user)) < 0) {
                rc = sl_errorf(err, u, "out of memory");
                goto out;
            }
            if (by_qos && !fifo) {
                if (strcmp(t->qos, "LS") == 0)
                    pc = c_prod;
                else if (strcmp(t->qos, "BE") == 0)
                    pc = c_be;
            }
            sp.id = (int64_t)i + 1;
            sp.queue = fifo ? q_fifo : teams[j->team].queue;
            sp.user = u;
            sp.pclass = pc;
            sp.submit_ms = j->submit_ms;
            if (!o->no_estimate && j->remaining_ms > 0)
                sp.max_runtime_ms = (j->remaining_ms + 59999) / 60000 * 60000;
            if (sl_sched_job_add(s, &sp, &why) < 0) {
                rc = sl_errorf(err, -EINVAL, "%s: %s: %s", t->name, why.field, why.text);
                goto out;
            }
            j->state = S_PENDING;
        }
        while (heap.n && heap.v[0].at_ms <= now) {
            struct event ev = heap_pop(&heap);
            struct sjob *j = ev.job >= 0 ? &jobs[ev.job] : NULL;
            if (!j || ev.gen != j->gen)
                continue; /* a wake-up, or stale */
            if (ev.kind == E_FINISH && (j->state == S_RUNNING || j->state == S_TERMINATING)) {
                sl_sched_job_remove(s, (int64_t)ev.job + 1, now);
                gpu_ms_used += (double)j->gpus_milli / 1000 * (double)(now - j->run_start_ms);
                gpu_ms_window += (double)j->gpus_milli / 1000 *
                                 overlap(j->run_start_ms, now, first_submit, last_submit);
                j->state = S_DONE;
                j->finish_ms = now;
                last_finish = now;
                done++;
                freed = true;
            } else if (ev.kind == E_STOP && j->state == S_TERMINATING) {
                gpu_ms_used += (double)j->gpus_milli / 1000 * (double)(now - j->run_start_ms);
                gpu_ms_window += (double)j->gpus_milli / 1000 *
                                 overlap(j->run_start_ms, now, first_submit, last_submit);
                j->remaining_ms -= j->signal_ms - j->run_start_ms;
                if (j->remaining_ms < 0)
                    j->remaining_ms = 0;
                sl_sched_job_requeue(s, (int64_t)ev.job + 1, now, 0);
                j->state = S_PENDING;
                j->gen++;
                j->preemptions++;
                freed = true;
            }
        }
        if ((rc = sl_sched_pass(s, now, !freed, &res)) < 0) {
            sl_sched_result_fini(&res);
            sl_errorf(err, rc, "out of memory");
            goto out;
        }
        passes++;
        for (int i = 0; i < res.nstarts; i++) {
            int ji = (int)(res.starts[i].job_id - 1);
            struct sjob *j = &jobs[ji];
            j->state = S_RUNNING;
            j->run_start_ms = now;
            if (j->first_start_ms < 0)
                j->first_start_ms = now;
            j->gen++;
            if (heap_push(&heap, (struct event){now + j->remaining_ms, E_FINISH, ji, j->gen}) < 0) {
                rc = sl_errorf(err, -ENOMEM, "out of memory");
                sl_sched_result_fini(&res);
                goto out;
            }
        }
        for (int i = 0; i < res.npreempts; i++) {
            int ji = (int)(res.preempts[i].job_id - 1);
            struct sjob *j = &jobs[ji];
            if (j->state != S_RUNNING)
                continue;
            j->state = S_TERMINATING;
            j->signal_ms = now;
            total_preempts++;
            /* It stops at the end of its grace, or finishes first. */
            if (now + GRACE_MS < j->run_start_ms + j->remaining_ms &&
                heap_push(&heap, (struct event){now + GRACE_MS, E_STOP, ji, j->gen}) < 0) {
                rc = sl_errorf(err, -ENOMEM, "out of memory");
                sl_sched_result_fini(&res);
                goto out;
            }
        }
        if (res.wake_ms > now)
            heap_push(&heap, (struct event){res.wake_ms, E_WAKE, -1, 0});
        sl_sched_result_fini(&res);
        if (o->progress) {
            char day[48];
            snprintf(day, sizeof(day), "day %.1f", (double)(now - first_submit) / 86400000.0);
            sl_sim_progress(&bar, done + refused, nt, "jobs", day, false);
        }
    }
    if (o->progress) {
        char day[48];
        snprintf(day, sizeof(day), "day %.1f", (double)(now - first_submit) / 86400000.0);
        sl_sim_progress(&bar, done + refused, nt, "jobs", day, true);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);

    /* ---- the summary ---- */
    {
        double *jct = malloc(sizeof(double) * (done + 1));
        double *wait = malloc(sizeof(double) * (done + 1));
        double *tsum = calloc((size_t)nteams + 1, sizeof(double));
        double *twait = calloc((size_t)nteams + 1, sizeof(double));
        double *tjct = calloc((size_t)nteams + 1, sizeof(double));
        double *tgpu = calloc((size_t)nteams + 1, sizeof(double));
        size_t *tcount = calloc((size_t)nteams + 1, sizeof(size_t));
        size_t k = 0, preempted = 0;
        double makespan = (double)(last_finish - first_submit) / 1000, xs = 0, xs2 = 0;
        int nx = 0;

        void *mem[] = {jct, wait, tsum, twait, tjct, tgpu, tcount};

        if (!jct || !wait || !tsum || !twait || !tjct || !tgpu || !tcount) {
            for (size_t i = 0; i < SL_ARRAY_LEN(mem); i++)
                free(mem[i]);
            rc = sl_errorf(err, -ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < nt; i++) {
            struct sjob *j = &jobs[i];
            double run = (double)(j->t->duration_ms > 0 ? j->t->duration_ms : 0), sd;
            if (j->state != S_DONE)
                continue;
            jct[k] = (double)(j->finish_ms - j->submit_ms) / 1000;
            wait[k] = (double)(j->first_start_ms - j->submit_ms) / 1000;
            sd = (double)(j->finish_ms - j->submit_ms) /
                 (run > SLOWDOWN_FLOOR_MS ? run : SLOWDOWN_FLOOR_MS);
            tsum[j->team] += sd > 1 ? sd : 1;
            twait[j->team] += wait[k];
            tjct[j->team] += jct[k];
            tgpu[j->team] += (double)j->gpus_milli / 1000 * run / 3600000.0;
            tcount[j->team]++;
            preempted += j->preemptions > 0;
            k++;
        }
        sl_buf_printf(out, "{\n  \"mode\": \"timed\",\n  \"scheduler\": \"%s\",\n",
                      fifo ? "fifo" : "sluice");
        sl_buf_printf(out, "  \"policy\": \"%s\",\n  \"seed\": %" PRIu64 ",\n",
                      sl_placement_name(sl_sched_get_config(s)->placement), o->seed);
        if (pods && o->target > 0)
            sl_buf_printf(out, "  \"target\": %.4g,\n", o->target);
        sl_buf_printf(out, "  \"time_scale\": %g,\n  \"estimates\": \"%s\",\n", scale,
                      o->no_estimate ? "none" : "exact");
        sl_buf_printf(out, "  \"nodes\": %d,\n  \"gpu_capacity\": %" PRId64 ",\n",
                      sl_sched_node_count(s), cap_milli / 1000);
        sl_buf_printf(out, "  \"jobs\": %zu,\n  \"jobs_finished\": %zu,\n", nt, done);
        sl_buf_printf(out, "  \"jobs_refused\": %zu,\n", refused);
        sl_buf_printf(out, "  \"jobs_never_started\": %zu,\n", nt - done - refused);
        sl_buf_printf(out, "  \"makespan_s\": %.0f,\n", makespan);
        stats_json(out, "jct_s", jct, k, false);
        stats_json(out, "queueing_delay_s", wait, k, false);
        sl_buf_printf(out, "  \"gpu_utilization\": %.4f,\n",
                      makespan > 0 ? gpu_ms_used / 1000 / ((double)cap_milli / 1000 * makespan)
                                   : 0);
        sl_buf_printf(out, "  \"gpu_utilization_arrivals\": %.4f,\n",
                      last_submit > first_submit
                          ? gpu_ms_window /
                                ((double)cap_milli / 1000 * (double)(last_submit - first_submit))
                          : 0);
        for (int tm = 0; tm < nteams; tm++)
            if (tcount[tm]) {
                double x = 1.0 / (tsum[tm] / (double)tcount[tm]);
                xs += x;
                xs2 += x * x;
                nx++;
            }
        sl_buf_printf(out, "  \"jain_fairness\": %.4f,\n",
                      nx && xs2 > 0 ? xs * xs / ((double)nx * xs2) : 1.0);
        sl_buf_adds(out, "  \"fairness_basis\": \"Jain's index over teams of 1 / mean "
                         "bounded slowdown, max(1, JCT / max(run time, 60 s))\",\n");
        sl_buf_printf(out, "  \"preemptions\": %zu,\n  \"preempted_jobs\": %zu,\n",
                      total_preempts, preempted);
        sl_buf_printf(out, "  \"passes\": %" PRId64 ",\n", passes);
        sl_buf_adds(out, "  \"teams\": [");
        for (int tm = 0; tm < nteams; tm++) {
            sl_buf_printf(out, "%s\n    {\"name\": ", tm ? "," : "");
            sl_buf_json_str(out, teams[tm].name);
            sl_buf_adds(out, ", \"nominal_gpus\": ");
            if (teams[tm].nominal_milli >= 0)
                sl_buf_printf(out, "%g", (double)teams[tm].nominal_milli / 1000);
            else
                sl_buf_adds(out, "null");
            sl_buf_printf(out, ", \"jobs\": %zu, \"mean_jct_s\": %.1f, "
                               "\"mean_queueing_delay_s\": %.1f, \"mean_slowdown\": %.3f, "
                               "\"gpu_hours\": %.1f}",
                          tcount[tm], tcount[tm] ? tjct[tm] / (double)tcount[tm] : 0,
                          tcount[tm] ? twait[tm] / (double)tcount[tm] : 0,
                          tcount[tm] ? tsum[tm] / (double)tcount[tm] : 0, tgpu[tm]);
        }
        sl_buf_printf(out, "\n  ],\n  \"wall_seconds\": %.3f\n}\n",
                      (double)(t1.tv_sec - t0.tv_sec) +
                          (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        for (size_t i = 0; i < SL_ARRAY_LEN(mem); i++)
            free(mem[i]);
        if (out->failed)
            rc = sl_errorf(err, -ENOMEM, "out of memory");
    }
out:
    sl_sched_destroy(s);
    free(heap.v);
    free(mf);
    free(jobs);
    free(teams);
    free(users);
    free(tn);
    free(tt);
    return rc;
}
