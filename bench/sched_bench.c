/*
 * sched_bench.c - benchmarks of the scheduler library (src/sched), driven
 * through its public API (sched.h) only. See bench/README.md.
 *
 *   sched_bench cycle  [--policy P] [--nodes N] [--pending N] [--reps N]
 *                      [--churn PCT] [--domain-gangs PCT]
 *                      [--typical learn|fixed] [--preemption on|off] [--seed N]
 *       A full pass (sl_sched_pass, new_only false) over N pending jobs on
 *       N nodes of 8 GPUs: cold (the first pass, indexes built), full (the
 *       cluster full, N jobs pending, nothing can start), and steady state
 *       (remove PCT % of the running jobs, add as many pending ones, pass;
 *       --reps times: median and max).
 *   sched_bench memory [--jobs N] [--nodes N] [--policy P]
 *                      [--domain-gangs PCT] [--seed N]
 *       RSS growth per pending job: the cluster is filled first, then N
 *       pending jobs are added (sl_sched_job_add), then two full passes over
 *       them: the first starts what fits in the gaps, the second finds the
 *       cluster full.
 *   sched_bench preempt [--policy P] [--nodes N]
 *       One pass that must preempt for a production gang of 4 x 8 GPUs (in
 *       one rack, or anywhere) on a cluster whose every GPU is busy: when
 *       victims exist, and when none can make room.
 *
 * The cluster: 70 % "H100" nodes (96 CPUs, 1 TiB, 8 GPUs), 30 % "A100"
 * (64 CPUs, 512 GiB, 8 GPUs), racks of 16 nodes as topology domains;
 * queues q0..q7 in two cohorts with nominal GPU quotas summing to the
 * capacity, plus "scratch" with no quota; classes production (1000, not
 * preemptible), batch (100) and best-effort (0, opportunistic); 8 users per
 * queue. Jobs come from a fixed mix of shapes (job_spec below), submitted
 * in time order. Preempted jobs are requeued at once, as if their
 * checkpoint took no time.
 *
 * Every figure is printed twice: as a line for people, and as one
 * "SCHED_BENCH key=value ..." line that bench/sched.sh parses. Times are
 * wall (CLOCK_MONOTONIC) and CPU (CLOCK_PROCESS_CPUTIME_ID) of this single
 * thread. The benchmark never fails on speed; it exits 1 only when the
 * scheduler refuses what it must accept.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/sched/sched.h"
#include "../src/util/rng.h"
#include "../src/util/util.h"

#define GIB (1024LL * 1024 * 1024)
#define NQUEUES 8                 /* with quota; plus "scratch" */
#define USERS_PER_QUEUE 8
#define RACK_NODES 16
#define CYCLE_MS 10000            /* virtual time between passes */

enum { C_PRODUCTION, C_BATCH, C_BEST_EFFORT, NCLASSES };

struct bench {
    struct sl_sched *s;
    struct sl_rng rng;
    int queue[NQUEUES + 1];       /* scheduler indices; [NQUEUES] = scratch */
    int users[NQUEUES + 1][USERS_PER_QUEUE];
    int pclass[NCLASSES];
    int64_t next_id;
    int64_t now_ms;               /* virtual clock */
    int domain_gangs;             /* % of gangs that want one rack */
    int64_t *running;             /* ids believed running (may be stale) */
    size_t nrunning, running_cap;
};

struct pass_stats {
    double wall_ms, cpu_ms;
    int starts, preempts, examined;
    int pending, running;         /* after the pass */
};

/* ---- clocks and memory ------------------------------------------------- */

static double clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 if absent. */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field);
    long kb = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kb = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* ---- the cluster, queues, classes, users -------------------------------- */

struct opts {
    enum sl_placement policy;
    int nodes, pending, reps, jobs;
    double churn_pct;             /* of the running jobs, per steady pass */
    int domain_gangs;             /* % of gangs that want one rack */
    bool fixed_typical;           /* FGD's typical tasks set once, from the
                                     mix, instead of learnt from submissions */
    bool no_preemption;           /* the scheduler's preemption off */
    uint64_t seed;
};

static int setup(struct bench *b, const struct opts *o)
{
    enum sl_placement policy = o->policy;
    int nnodes = o->nodes;
    uint64_t seed = o->seed;
    struct sl_sched_config cfg;
    struct sl_sched_class_spec cls[NCLASSES] = {
        {.name = "production", .value = 1000, .preemptible = false},
        {.name = "batch", .value = 100, .preemptible = true},
        {.name = "best-effort", .value = 0, .preemptible = true, .opportunistic = true},
    };
    int64_t cap_gpu_milli = (int64_t)nnodes * 8 * 1000;

    memset(b, 0, sizeof(*b));
    sl_rng_seed(&b->rng, seed);
    b->domain_gangs = o->domain_gangs;
    b->next_id = 1;
    b->now_ms = 1700000000000LL;
    sl_sched_config_init(&cfg);
    cfg.placement = policy;
    cfg.seed = seed;
    cfg.auto_typical = !o->fixed_typical;
    cfg.preemption = !o->no_preemption;
    if (!(b->s = sl_sched_create(&cfg)))
        return -errno;
    if (o->fixed_typical) {
        /* the mix of job_spec, per task shape (models left out) */
        static const struct sl_sched_typical mix[] = {
            {.cpu_milli = 15000, .weight = 0.040},
            {.cpu_milli = 4000, .gpus = 1, .gpu_milli = 500, .weight = 0.120},
            {.cpu_milli = 4000, .gpus = 1, .gpu_milli = 250, .weight = 0.030},
            {.cpu_milli = 12000, .gpus = 1, .gpu_milli = 1000, .weight = 0.275},
            {.cpu_milli = 8000, .gpus = 1, .gpu_milli = 1000, .weight = 0.275},
            {.cpu_milli = 24000, .gpus = 2, .gpu_milli = 1000, .weight = 0.100},
            {.cpu_milli = 48000, .gpus = 4, .gpu_milli = 1000, .weight = 0.070},
            {.cpu_milli = 64000, .gpus = 8, .gpu_milli = 1000, .weight = 0.130},
        };
        int rc = sl_sched_set_typical(b->s, mix, (int)SL_ARRAY_LEN(mix));
        if (rc < 0)
            return rc;
    }
    for (int i = 0; i < NCLASSES; i++)
        if ((b->pclass[i] = sl_sched_class_set(b->s, &cls[i])) < 0)
            return b->pclass[i];
    for (int n = 0; n < nnodes; n++) {
        struct sl_sched_node_spec ns;
        char name[32], domain[32];
        bool h100 = n % 10 < 7;
        int rc;

        memset(&ns, 0, sizeof(ns));
        snprintf(name, sizeof(name), "node-%05d", n);
        snprintf(domain, sizeof(domain), "rack-%04d", n / RACK_NODES);
        ns.name = name;
        ns.domain = domain;
        ns.cpu_milli = h100 ? 96000 : 64000;
        ns.mem_bytes = h100 ? 1024 * GIB : 512 * GIB;
        ns.ngpus = 8;
        for (int g = 0; g < 8; g++)
            ns.gpu_model[g] = h100 ? "H100" : "A100";
        if ((rc = sl_sched_node_add(b->s, &ns)) < 0)
            return rc;
    }
    for (int q = 0; q <= NQUEUES; q++) {
        struct sl_sched_queue_spec qs;
        char name[16];

        memset(&qs, 0, sizeof(qs));
        if (q < NQUEUES)
            snprintf(name, sizeof(name), "q%d", q);
        else
            snprintf(name, sizeof(name), "scratch");
        sl_sched_queue_spec_init(&qs, name);
        qs.cohort = q < NQUEUES ? (q < NQUEUES / 2 ? "c0" : "c1") : NULL;
        if (q < NQUEUES)
            qs.nominal.v[SL_DIM_GPU] = cap_gpu_milli / NQUEUES;
        qs.preempt_within = SL_PREEMPT_LOWER_PRIORITY;
        qs.reclaim = SL_RECLAIM_ANY;
        if ((b->queue[q] = sl_sched_queue_set(b->s, &qs)) < 0)
            return b->queue[q];
        for (int u = 0; u < USERS_PER_QUEUE; u++) {
            char uname[32];
            snprintf(uname, sizeof(uname), "%s-user%d", name, u);
            if ((b->users[q][u] = sl_sched_user(b->s, uname)) < 0)
                return b->users[q][u];
        }
    }
    return 0;
}

/* ---- the job mix -------------------------------------------------------- */

static const char *const H100_ONLY[] = {"H100", NULL};
static const char *const A100_ONLY[] = {"A100", NULL};

/* One job of the mix, per mille: 40 CPU-only, 150 fractions (500 or 250
 * milli), 550 one GPU, 100 two, 70 four, 70 eight, 20 gangs of 2-4 tasks x
 * 8 GPUs (--domain-gangs %, default 25, of them in one rack). GPU jobs:
 * 15 % H100 only, 5 % A100 only. Classes 20 / 60 / 20 %; 70 % give a maxRuntime of 1-24 h. */
static void job_spec(struct bench *b, struct sl_sched_job_spec *j)
{
    unsigned r = (unsigned)sl_rng_below(&b->rng, 1000);
    unsigned m = (unsigned)sl_rng_below(&b->rng, 100);
    unsigned c = (unsigned)sl_rng_below(&b->rng, 100);
    int q = sl_rng_below(&b->rng, 10) == 0 ? NQUEUES
                                           : (int)sl_rng_below(&b->rng, NQUEUES);

    memset(j, 0, sizeof(*j));
    j->id = b->next_id++;
    j->queue = b->queue[q];
    j->user = b->users[q][sl_rng_below(&b->rng, USERS_PER_QUEUE)];
    j->pclass = b->pclass[c < 20 ? C_PRODUCTION : c < 80 ? C_BATCH : C_BEST_EFFORT];
    j->submit_ms = b->now_ms;
    j->tasks = 1;
    if (r < 40) {
        static const int cpus[] = {4, 8, 16, 32};
        j->cpu_milli = cpus[sl_rng_below(&b->rng, 4)] * 1000LL;
        j->mem_bytes = (16LL << sl_rng_below(&b->rng, 3)) * GIB;
    } else if (r < 190) {
        j->gpu_milli = sl_rng_below(&b->rng, 5) == 0 ? 250 : 500;
        j->cpu_milli = 4000;
        j->mem_bytes = 32 * GIB;
    } else if (r < 740) {
        j->gpus = 1;
        j->cpu_milli = sl_rng_below(&b->rng, 2) ? 12000 : 8000;
        j->mem_bytes = sl_rng_below(&b->rng, 2) ? 128 * GIB : 64 * GIB;
    } else if (r < 840) {
        j->gpus = 2;
        j->cpu_milli = 24000;
        j->mem_bytes = 256 * GIB;
    } else if (r < 910) {
        j->gpus = 4;
        j->cpu_milli = 48000;
        j->mem_bytes = 480 * GIB;
    } else if (r < 980) {
        j->gpus = 8;
        j->cpu_milli = 64000;
        j->mem_bytes = 480 * GIB;
    } else {
        j->gpus = 8;
        j->tasks = 2 + (int)sl_rng_below(&b->rng, 3);
        j->cpu_milli = 64000;
        j->mem_bytes = 480 * GIB;
        j->topology = (int)sl_rng_below(&b->rng, 100) < b->domain_gangs ? SL_TOPO_SAME_DOMAIN
                                                                        : SL_TOPO_ANY;
    }
    if (j->gpus || j->gpu_milli)
        j->gpu_models = m < 15 ? H100_ONLY : m < 20 ? A100_ONLY : NULL;
    if (sl_rng_below(&b->rng, 10) < 7)
        j->max_runtime_ms = (1 + (int64_t)sl_rng_below(&b->rng, 24)) * 3600000;
}

static int add_pending(struct bench *b, int n)
{
    for (int i = 0; i < n; i++) {
        struct sl_sched_job_spec j;
        struct sl_error err = {0};
        int rc;

        job_spec(b, &j);
        if ((rc = sl_sched_job_add(b->s, &j, &err)) < 0) {
            fprintf(stderr, "sched_bench: sl_sched_job_add: %s (%s)\n", err.text,
                    strerror(-rc));
            return rc;
        }
    }
    return 0;
}

/* ---- passes ------------------------------------------------------------- */

static int running_push(struct bench *b, int64_t id)
{
    if (b->nrunning == b->running_cap) {
        size_t cap = b->running_cap ? 2 * b->running_cap : 4096;
        int64_t *p = realloc(b->running, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        b->running = p;
        b->running_cap = cap;
    }
    b->running[b->nrunning++] = id;
    return 0;
}

/* Profiling one phase: with SCHED_BENCH_PERF_CTL naming the control fifo
 * of `perf record -D -1 --control fifo:PATH`, the passes of the phase named
 * by SCHED_BENCH_PERF_PHASE (cold, fill, full, steady, memory, memory2,
 * gang-any, gang-domain, gang-any-none, gang-domain-none) are the only
 * ones recorded. */
static void perf_ctl(const char *phase, const char *cmd)
{
    static FILE *ctl;
    static bool tried;
    const char *want = getenv("SCHED_BENCH_PERF_PHASE");

    if (!want || strcmp(want, phase) != 0)
        return;
    if (!tried) {
        const char *path = getenv("SCHED_BENCH_PERF_CTL");
        tried = true;
        if (path && *path && !(ctl = fopen(path, "w")))
            fprintf(stderr, "sched_bench: %s: %s\n", path, strerror(errno));
    }
    if (ctl) {
        fprintf(ctl, "%s\n", cmd);
        fflush(ctl);
    }
}

/* One full pass at the virtual 'now', timed; then what the daemon would do
 * with its decisions: started jobs run, victims are requeued. */
static int pass(struct bench *b, const char *phase, struct pass_stats *st)
{
    struct sl_sched_result res;
    double w0, c0;
    int rc;

    perf_ctl(phase, "enable");
    w0 = clock_ms(CLOCK_MONOTONIC);
    c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    rc = sl_sched_pass(b->s, b->now_ms, false, &res);
    st->cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    st->wall_ms = clock_ms(CLOCK_MONOTONIC) - w0;
    perf_ctl(phase, "disable");
    if (rc < 0) {
        fprintf(stderr, "sched_bench: sl_sched_pass: %s\n", strerror(-rc));
        return rc;
    }
    st->starts = res.nstarts;
    st->preempts = res.npreempts;
    st->examined = res.examined;
    for (int i = 0; i < res.nstarts && rc == 0; i++)
        rc = running_push(b, res.starts[i].job_id);
    for (int i = 0; i < res.npreempts; i++)
        sl_sched_job_requeue(b->s, res.preempts[i].job_id, b->now_ms, 0);
    sl_sched_result_fini(&res);
    st->pending = sl_sched_pending_count(b->s);
    st->running = sl_sched_running_count(b->s);
    b->now_ms += CYCLE_MS;
    return rc;
}

/* Remove 'n' running jobs picked at random (they ended). */
static int remove_running(struct bench *b, int n)
{
    int done = 0;

    while (done < n && b->nrunning > 0) {
        size_t i = (size_t)sl_rng_below(&b->rng, b->nrunning);
        int64_t id = b->running[i];

        b->running[i] = b->running[--b->nrunning];
        if (sl_sched_job_state(b->s, id) != SL_SCHED_RUNNING)
            continue; /* requeued since, or listed twice */
        if (sl_sched_job_remove(b->s, id, b->now_ms) == 0)
            done++;
    }
    return done;
}

static void print_pass(const char *test, const char *policy, const char *phase,
                       const struct pass_stats *st)
{
    printf("  %-22s %9.1f ms wall %9.1f ms CPU  examined %6d  started %6d  "
           "preempted %4d  -> pending %7d running %6d\n",
           phase, st->wall_ms, st->cpu_ms, st->examined, st->starts, st->preempts,
           st->pending, st->running);
    printf("SCHED_BENCH test=%s policy=%s phase=%s wall_ms=%.3f cpu_ms=%.3f "
           "examined=%d starts=%d preempts=%d pending=%d running=%d\n",
           test, policy, phase, st->wall_ms, st->cpu_ms, st->examined, st->starts,
           st->preempts, st->pending, st->running);
    fflush(stdout);
}

/* Add jobs and pass until the cluster is full: a pass leaves at least
 * 'pending' jobs waiting. Then make it exactly 'pending': more jobs, or
 * the newest pending ones cancelled. */
static int fill(struct bench *b, int pending, int batch, int *passes)
{
    struct pass_stats st;
    int rc;

    *passes = 0;
    for (int k = 0; k < 64; k++) {
        if ((rc = add_pending(b, batch)) < 0 || (rc = pass(b, "fill", &st)) < 0)
            return rc;
        (*passes)++;
        if (st.pending >= pending)
            break;
    }
    for (int64_t id = b->next_id - 1; id > 0 && sl_sched_pending_count(b->s) > pending;
         id--)
        if (sl_sched_job_state(b->s, id) == SL_SCHED_PENDING)
            sl_sched_job_remove(b->s, id, b->now_ms);
    if (sl_sched_pending_count(b->s) < pending)
        return add_pending(b, pending - sl_sched_pending_count(b->s));
    return 0;
}

/* ---- cycle ---------------------------------------------------------------- */

static int bench_cycle(const struct opts *o)
{
    const char *pname = sl_placement_name(o->policy);
    int nnodes = o->nodes, npending = o->pending, reps = o->reps;
    double churn_pct = o->churn_pct;
    struct bench b;
    struct pass_stats st, *steady = NULL;
    double t0, setup_ms, *wall = NULL, *cpu = NULL;
    int rc, fills = 0, nchurn;
    long starts = 0, preempts = 0;

    t0 = clock_ms(CLOCK_MONOTONIC);
    if ((rc = setup(&b, o)) < 0)
        goto out;
    setup_ms = clock_ms(CLOCK_MONOTONIC) - t0;
    printf("== cycle: policy %s, %d nodes x 8 GPUs (%d GPUs), %d pending jobs "
           "(setup: %d nodes added in %.0f ms)\n",
           pname, nnodes, nnodes * 8, npending, nnodes, setup_ms);

    /* cold: an empty cluster, every index built on first use */
    if ((rc = add_pending(&b, npending)) < 0 || (rc = pass(&b, "cold", &st)) < 0)
        goto out;
    print_pass("cycle", pname, "cold", &st);

    /* full: fill the cluster, then a pass that can start nothing new */
    if ((rc = fill(&b, npending, npending, &fills)) < 0 ||
        (rc = pass(&b, "full", &st)) < 0)
        goto out;
    printf("  (filled in %d passes: %d running, %d pending)\n", fills + 1, st.running,
           st.pending);
    print_pass("cycle", pname, "full", &st);
    if (sl_sched_pending_count(b.s) < npending &&
        (rc = add_pending(&b, npending - sl_sched_pending_count(b.s))) < 0)
        goto out;

    /* steady state: churn, then a full pass */
    nchurn = (int)(sl_sched_running_count(b.s) * churn_pct / 100.0 + 0.5);
    if (!(steady = calloc((size_t)reps, sizeof(*steady))) ||
        !(wall = calloc((size_t)reps, sizeof(double))) ||
        !(cpu = calloc((size_t)reps, sizeof(double)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (int r = 0; r < reps; r++) {
        int gone = remove_running(&b, nchurn);
        int short_by = npending - sl_sched_pending_count(b.s);
        /* as many new jobs as ended, or more to keep 'npending' waiting */
        if ((rc = add_pending(&b, gone > short_by ? gone : short_by)) < 0 ||
            (rc = pass(&b, "steady", &steady[r])) < 0)
            goto out;
        wall[r] = steady[r].wall_ms;
        cpu[r] = steady[r].cpu_ms;
        starts += steady[r].starts;
        preempts += steady[r].preempts;
    }
    qsort(wall, (size_t)reps, sizeof(double), dbl_cmp);
    qsort(cpu, (size_t)reps, sizeof(double), dbl_cmp);
    printf("  steady x%d: each %.1f %% (%d) of the running jobs end, as many new ones "
           "are added (more to keep %d pending)\n",
           reps, churn_pct, nchurn, npending);
    printf("  %-22s %9.1f ms wall %9.1f ms CPU  (median; p90 %.1f / %.1f, max %.1f / "
           "%.1f)  started %.1f, preempted %.1f per pass\n",
           "steady", wall[reps / 2], cpu[reps / 2], wall[(reps * 9) / 10],
           cpu[(reps * 9) / 10], wall[reps - 1], cpu[reps - 1], (double)starts / reps,
           (double)preempts / reps);
    for (int r = 0; r < reps; r++)
        printf("SCHED_BENCH test=cycle policy=%s phase=steady rep=%d wall_ms=%.3f "
               "cpu_ms=%.3f examined=%d starts=%d preempts=%d pending=%d running=%d\n",
               pname, r, steady[r].wall_ms, steady[r].cpu_ms, steady[r].examined,
               steady[r].starts, steady[r].preempts, steady[r].pending,
               steady[r].running);
    printf("SCHED_BENCH test=cycle policy=%s phase=steady-summary reps=%d churn=%d "
           "wall_median_ms=%.3f wall_p90_ms=%.3f wall_max_ms=%.3f cpu_median_ms=%.3f "
           "cpu_p90_ms=%.3f cpu_max_ms=%.3f starts_per_pass=%.1f "
           "preempts_per_pass=%.1f\n",
           pname, reps, nchurn, wall[reps / 2], wall[(reps * 9) / 10], wall[reps - 1],
           cpu[reps / 2], cpu[(reps * 9) / 10], cpu[reps - 1], (double)starts / reps,
           (double)preempts / reps);
    rc = 0;
out:
    free(steady);
    free(wall);
    free(cpu);
    free(b.running);
    sl_sched_destroy(b.s);
    return rc;
}

/* ---- memory ------------------------------------------------------------- */

static int bench_memory(const struct opts *o)
{
    const char *pname = sl_placement_name(o->policy);
    int nnodes = o->nodes, njobs = o->jobs;
    struct bench b;
    struct pass_stats st, st2;
    long rss0, rss1, rss2;
    double w0, c0, add_wall, add_cpu;
    int rc, fills = 0, before;

    if ((rc = setup(&b, o)) < 0)
        goto out;
    printf("== memory: policy %s, %d nodes x 8 GPUs, %d pending jobs\n", pname, nnodes,
           njobs);
    /* full first (10,000 left waiting, then cancelled): a pass over the
     * million then starts (nearly) nothing */
    if ((rc = fill(&b, 10000, 10000, &fills)) < 0)
        goto out;
    for (int64_t id = b.next_id - 1; id > 0 && sl_sched_pending_count(b.s) > 0; id--)
        if (sl_sched_job_state(b.s, id) == SL_SCHED_PENDING)
            sl_sched_job_remove(b.s, id, b.now_ms);
    before = sl_sched_pending_count(b.s);
    rss0 = status_kb("VmRSS");
    w0 = clock_ms(CLOCK_MONOTONIC);
    c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    for (int done = 0; done < njobs && rc == 0; done += 10000) {
        /* arrivals spread in time, as submissions are */
        rc = add_pending(&b, njobs - done < 10000 ? njobs - done : 10000);
        b.now_ms += 1000;
    }
    if (rc < 0)
        goto out;
    add_cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    add_wall = clock_ms(CLOCK_MONOTONIC) - w0;
    rss1 = status_kb("VmRSS");
    printf("  filled: %d running, %d pending before; RSS %.1f MiB\n",
           sl_sched_running_count(b.s), before, rss0 / 1024.0);
    printf("  added %d pending jobs in %.0f ms wall, %.0f ms CPU (%.2f us each); "
           "RSS %.1f MiB -> %.1f MiB: %.0f bytes per job\n",
           njobs, add_wall, add_cpu, add_wall * 1000.0 / njobs, rss0 / 1024.0,
           rss1 / 1024.0, (double)(rss1 - rss0) * 1024.0 / njobs);
    /* the first pass fills what gaps the new jobs fit; the second finds
     * the cluster full */
    if ((rc = pass(&b, "memory", &st)) < 0 || (rc = pass(&b, "memory2", &st2)) < 0)
        goto out;
    rss2 = status_kb("VmRSS");
    print_pass("memory", pname, "pass-1", &st);
    print_pass("memory", pname, "pass-2", &st2);
    printf("  after the passes: RSS %.1f MiB, peak (VmHWM) %.1f MiB\n", rss2 / 1024.0,
           status_kb("VmHWM") / 1024.0);
    printf("SCHED_BENCH test=memory policy=%s jobs=%d nodes=%d rss_before_kb=%ld "
           "rss_after_kb=%ld rss_after_pass_kb=%ld hwm_kb=%ld bytes_per_job=%.1f "
           "add_wall_ms=%.3f add_cpu_ms=%.3f pass_wall_ms=%.3f pass_cpu_ms=%.3f "
           "examined=%d starts=%d preempts=%d pass2_wall_ms=%.3f pass2_cpu_ms=%.3f "
           "pass2_starts=%d pass2_preempts=%d\n",
           pname, njobs, nnodes, rss0, rss1, rss2, status_kb("VmHWM"),
           (double)(rss1 - rss0) * 1024.0 / njobs, add_wall, add_cpu, st.wall_ms,
           st.cpu_ms, st.examined, st.starts, st.preempts, st2.wall_ms, st2.cpu_ms,
           st2.starts, st2.preempts);
    rc = 0;
out:
    free(b.running);
    sl_sched_destroy(b.s);
    return rc;
}

/* ---- preempt ------------------------------------------------------------ */

/* Adopt a running 1-GPU job on GPU 'gpu' of node 'node' (CPU 8, 64 GiB). */
static int adopt(struct bench *b, int q, int pclass, int node, int gpu)
{
    struct sl_sched_job_spec j;
    struct sl_sched_task_place pl;

    memset(&j, 0, sizeof(j));
    memset(&pl, 0, sizeof(pl));
    j.id = b->next_id++;
    j.queue = b->queue[q];
    j.user = b->users[q][j.id % USERS_PER_QUEUE];
    j.pclass = b->pclass[pclass];
    j.submit_ms = b->now_ms - 60000;
    j.tasks = 1;
    j.gpus = 1;
    j.cpu_milli = 8000;
    j.mem_bytes = 64 * GIB;
    pl.node = node;
    pl.ngpus = 1;
    pl.gpus[0] = gpu;
    pl.gpu_milli = 1000;
    return sl_sched_job_add_running(b->s, &j, &pl, b->now_ms - 60000, NULL);
}

/* One pass that must preempt for a production gang of 4 tasks x 8 GPUs in
 * queue q0, on a cluster whose every GPU is busy:
 *   gang-any, gang-domain: every GPU runs a best-effort (opportunistic)
 *       1-GPU job; victims are found (32 of them);
 *   gang-any-none, gang-domain-none: GPUs 0-6 of every node run production
 *       jobs (not preemptible), GPU 7 a best-effort one; no set of victims
 *       frees a whole node, so the search tries every candidate and fails. */
static int bench_preempt(const struct opts *o)
{
    static const struct {
        const char *phase;
        int topology;
        bool none;                /* no victims can make room */
    } cases[] = {
        {"gang-any", SL_TOPO_ANY, false},
        {"gang-domain", SL_TOPO_SAME_DOMAIN, false},
        {"gang-any-none", SL_TOPO_ANY, true},
        {"gang-domain-none", SL_TOPO_SAME_DOMAIN, true},
    };
    const char *pname = sl_placement_name(o->policy);
    struct bench b;
    struct pass_stats st;
    int rc = 0;

    printf("== preempt: policy %s, %d nodes x 8 GPUs, every GPU busy; a production "
           "gang of 4 x 8 GPUs arrives\n",
           pname, o->nodes);
    memset(&b, 0, sizeof(b));
    for (size_t c = 0; c < SL_ARRAY_LEN(cases) && rc == 0; c++) {
        struct sl_sched_job_spec j;

        if ((rc = setup(&b, o)) < 0)
            break;
        for (int n = 0; n < o->nodes && rc == 0; n++)
            for (int g = 0; g < 8 && rc == 0; g++) {
                bool be = !cases[c].none || g == 7;
                rc = adopt(&b, be ? NQUEUES : n % NQUEUES, be ? C_BEST_EFFORT : C_PRODUCTION,
                           n, g);
            }
        if (rc < 0)
            break;
        memset(&j, 0, sizeof(j));
        j.id = b.next_id++;
        j.queue = b.queue[0];
        j.user = b.users[0][0];
        j.pclass = b.pclass[C_PRODUCTION];
        j.submit_ms = b.now_ms;
        j.tasks = 4;
        j.gpus = 8;
        j.cpu_milli = 64000;
        j.mem_bytes = 480 * GIB;
        j.topology = cases[c].topology;
        if ((rc = sl_sched_job_add(b.s, &j, NULL)) < 0 ||
            (rc = pass(&b, cases[c].phase, &st)) < 0)
            break;
        print_pass("preempt", pname, cases[c].phase, &st);
        sl_sched_destroy(b.s);
        free(b.running);
        memset(&b, 0, sizeof(b));
    }
    free(b.running);
    sl_sched_destroy(b.s);
    return rc < 0 ? rc : 0;
}

/* ---- main --------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr,
            "usage: sched_bench cycle  [--policy P] [--nodes N] [--pending N] "
            "[--reps N] [--churn PCT]\n"
            "                          [--domain-gangs PCT] [--typical learn|fixed]\n"
            "                          [--preemption on|off] [--seed N]\n"
            "       sched_bench memory [--policy P] [--nodes N] [--jobs N] "
            "[--domain-gangs PCT] [--seed N]\n"
            "       sched_bench preempt [--policy P] [--nodes N]\n");
    return 2;
}

static int int_arg(const char *flag, const char *v, int64_t min, int64_t max,
                   int64_t *out)
{
    if (!v || sl_parse_int64(v, min, max, out) < 0) {
        fprintf(stderr, "sched_bench: %s wants an integer %lld..%lld\n", flag,
                (long long)min, (long long)max);
        return -EINVAL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {
        .policy = SL_PLACE_FGD, .nodes = 10000, .pending = 10000, .reps = 20,
        .jobs = 1000000, .churn_pct = 1.0, .domain_gangs = 25, .seed = 42,
    };
    int rc;
    bool cycle;

    if (argc < 2)
        return usage();
    if (strcmp(argv[1], "cycle") == 0)
        cycle = true;
    else if (strcmp(argv[1], "memory") == 0 || strcmp(argv[1], "preempt") == 0)
        cycle = false;
    else
        return usage();
    for (int i = 2; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t n = 0;

        rc = 0;
        if (strcmp(f, "--policy") == 0) {
            int p = v ? sl_placement_parse(v) : -EINVAL;
            if (p < 0) {
                fprintf(stderr, "sched_bench: --policy: fgd, bestfit, packing, "
                                "clustering, dotprod, random or spread\n");
                return 2;
            }
            o.policy = (enum sl_placement)p;
        } else if (strcmp(f, "--nodes") == 0) {
            if ((rc = int_arg(f, v, 1, 1000000, &n)) == 0)
                o.nodes = (int)n;
        } else if (strcmp(f, "--pending") == 0) {
            if ((rc = int_arg(f, v, 1, 100000000, &n)) == 0)
                o.pending = (int)n;
        } else if (strcmp(f, "--reps") == 0) {
            if ((rc = int_arg(f, v, 1, 10000, &n)) == 0)
                o.reps = (int)n;
        } else if (strcmp(f, "--jobs") == 0) {
            if ((rc = int_arg(f, v, 1, 100000000, &n)) == 0)
                o.jobs = (int)n;
        } else if (strcmp(f, "--domain-gangs") == 0) {
            if ((rc = int_arg(f, v, 0, 100, &n)) == 0)
                o.domain_gangs = (int)n;
        } else if (strcmp(f, "--preemption") == 0) {
            if (!v || (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)) {
                fprintf(stderr, "sched_bench: --preemption: on or off\n");
                return 2;
            }
            o.no_preemption = strcmp(v, "off") == 0;
        } else if (strcmp(f, "--typical") == 0) {
            if (!v || (strcmp(v, "fixed") != 0 && strcmp(v, "learn") != 0)) {
                fprintf(stderr, "sched_bench: --typical: fixed or learn\n");
                return 2;
            }
            o.fixed_typical = strcmp(v, "fixed") == 0;
        } else if (strcmp(f, "--seed") == 0) {
            if ((rc = int_arg(f, v, 0, INT64_MAX, &n)) == 0)
                o.seed = (uint64_t)n;
        } else if (strcmp(f, "--churn") == 0) {
            /* a percentage with decimals ("1", "0.5"), read as milli-units */
            if (!v || sl_parse_cpu_milli(v, &n) < 0 || n < 1 || n > 100000) {
                fprintf(stderr, "sched_bench: --churn wants a percentage 0.001..100\n");
                return 2;
            }
            o.churn_pct = (double)n / 1000.0;
        } else {
            return usage();
        }
        if (rc < 0)
            return 2;
    }
    printf("sched_bench: %s (single thread; CLOCK_MONOTONIC and "
           "CLOCK_PROCESS_CPUTIME_ID)\n",
           argv[1]);
    rc = cycle                          ? bench_cycle(&o)
         : strcmp(argv[1], "memory") == 0 ? bench_memory(&o)
                                          : bench_preempt(&o);
    if (rc < 0) {
        fprintf(stderr, "sched_bench: failed: %s\n", strerror(-rc));
        return 1;
    }
    return 0;
}
