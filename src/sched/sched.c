/*
 * sched.c - the first scheduler: strict priority order with gang placement.
 *
 * One pass orders the pending jobs (priority desc, submit time asc, id asc),
 * passes over those still in retry backoff, and tries to place every task of
 * each job (all or none) with a best-fit choice of node and GPUs. Placing
 * takes the amounts off st->nodes at once, so later jobs in the same pass
 * see what is left. A job that does not fit gets a reason naming what is
 * short, and the next job is tried: there is no reservation, so a small job
 * may pass a big one that cannot start yet.
 *
 * Best fit: a whole-GPU task goes to the node with the fewest free GPUs of
 * an allowed model that still fit, then the least free CPU, then the lowest
 * index; on that node it takes the lowest-indexed free GPUs. A fractional
 * task takes the GPU with the least free milli that still fits (so shared
 * GPUs fill up before whole ones are broken), preferring nodes with fewer
 * whole free GPUs. A CPU-only task prefers nodes with fewer free GPUs.
 *
 * Quotas, fair share, backfill and preemption come in a later release,
 * behind the same interface (sched.h).
 *
 * Cost: O(jobs x tasks x nodes x gpus per node) at worst, with an early exit
 * when a job needs more than the cluster's total free amount of a resource.
 *
 * Invariant: when sl_sched_run returns, every node's free amounts equal its
 * amounts on entry minus exactly what out->starts holds (nothing on error).
 */
#include "sched.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/spec.h"
#include "../util/util.h"

#define WHOLE_MILLI 1000

/* Why a node cannot take a task; also the order reasons are listed in. */
enum reject {
    R_UNSCHEDULABLE,
    R_GPUS,
    R_GPU_MILLI,
    R_CPU,
    R_MEM,
    R_NREASONS,
    R_OK = R_NREASONS,
};

struct score {      /* lower is a better fit, compared in field order */
    int64_t gpu_milli_free; /* the chosen GPU's free milli (fractional) */
    int64_t whole_free;     /* free whole GPUs that would be left to others */
    int64_t cpu_milli_free;
    int gpu;                /* not compared: the GPU a fraction would take */
};

struct totals {     /* free amounts over schedulable nodes */
    int64_t cpu_milli, mem_bytes, whole_gpus, gpu_milli;
    int nodes;
};

struct pass {
    struct sl_sched_state *st;
    struct totals free;
    int *domain_order;  /* node indices grouped by domain, or NULL */
    struct sl_sched_task_place *places; /* scratch: one job's tasks */
};

static int node_ngpus(const struct sl_sched_node *n)
{
    if (n->ngpus < 0)
        return 0;
    return n->ngpus > SL_SCHED_MAX_GPUS ? SL_SCHED_MAX_GPUS : n->ngpus;
}

static bool model_ok(const struct sl_sched_job *j, const char *model)
{
    if (!j->gpu_models || !j->gpu_models[0])
        return true;
    for (const char *const *m = j->gpu_models; *m; m++)
        if (strcasecmp(*m, model ? model : "") == 0)
            return true;
    return false;
}

/* Can node 'n' take one task of 'j' now? Fills *sc when it can. */
static enum reject node_fit(const struct sl_sched_node *n,
                            const struct sl_sched_job *j, struct score *sc)
{
    int ng = node_ngpus(n), whole_any = 0, whole_match = 0, best = -1;

    if (!n->schedulable)
        return R_UNSCHEDULABLE;
    for (int g = 0; g < ng; g++) {
        int m = n->gpus[g].milli_free;

        if (m >= WHOLE_MILLI)
            whole_any++;
        if (!model_ok(j, n->gpus[g].model))
            continue;
        if (m >= WHOLE_MILLI)
            whole_match++;
        if (j->gpu_milli > 0 && m >= j->gpu_milli &&
            (best < 0 || m < n->gpus[best].milli_free))
            best = g;
    }
    if (j->gpus > 0 && whole_match < j->gpus)
        return R_GPUS;
    if (j->gpus == 0 && j->gpu_milli > 0 && best < 0)
        return R_GPU_MILLI;
    if (n->cpu_milli_free < j->cpu_milli)
        return R_CPU;
    if (n->mem_bytes_free < j->mem_bytes)
        return R_MEM;
    sc->gpu = best;
    sc->gpu_milli_free = best >= 0 ? n->gpus[best].milli_free : 0;
    sc->whole_free = j->gpus > 0 ? whole_match : whole_any;
    sc->cpu_milli_free = n->cpu_milli_free;
    return R_OK;
}

static bool better(const struct score *a, const struct score *b)
{
    if (a->gpu_milli_free != b->gpu_milli_free)
        return a->gpu_milli_free < b->gpu_milli_free;
    if (a->whole_free != b->whole_free)
        return a->whole_free < b->whole_free;
    return a->cpu_milli_free < b->cpu_milli_free;
}

/* Take one task of 'j' off node 'ni', which node_fit() accepted with
 * score 'sc'. */
static void take(struct pass *p, const struct sl_sched_job *j, int ni,
                 const struct score *sc, struct sl_sched_task_place *tp)
{
    struct sl_sched_node *n = &p->st->nodes[ni];
    int ng = node_ngpus(n);

    memset(tp, 0, sizeof(*tp));
    tp->node = ni;
    n->cpu_milli_free -= j->cpu_milli;
    n->mem_bytes_free -= j->mem_bytes;
    p->free.cpu_milli -= j->cpu_milli;
    p->free.mem_bytes -= j->mem_bytes;
    if (j->gpus > 0) {
        tp->gpu_milli = WHOLE_MILLI;
        for (int g = 0; g < ng && tp->ngpus < j->gpus; g++) {
            if (n->gpus[g].milli_free < WHOLE_MILLI ||
                !model_ok(j, n->gpus[g].model))
                continue;
            n->gpus[g].milli_free -= WHOLE_MILLI;
            tp->gpus[tp->ngpus++] = g;
            p->free.whole_gpus--;
            p->free.gpu_milli -= WHOLE_MILLI;
        }
    } else if (j->gpu_milli > 0 && sc->gpu >= 0 && sc->gpu < ng) {
        int best = sc->gpu;
        if (n->gpus[best].milli_free >= WHOLE_MILLI)
            p->free.whole_gpus--;
        n->gpus[best].milli_free -= j->gpu_milli;
        p->free.gpu_milli -= j->gpu_milli;
        tp->gpu_milli = j->gpu_milli;
        tp->gpus[tp->ngpus++] = best;
    }
}

/* Give back what take() took. */
static void give(struct pass *p, const struct sl_sched_job *j,
                 const struct sl_sched_task_place *tp)
{
    struct sl_sched_node *n = &p->st->nodes[tp->node];

    n->cpu_milli_free += j->cpu_milli;
    n->mem_bytes_free += j->mem_bytes;
    p->free.cpu_milli += j->cpu_milli;
    p->free.mem_bytes += j->mem_bytes;
    for (int i = 0; i < tp->ngpus; i++) {
        struct sl_sched_gpu *g = &n->gpus[tp->gpus[i]];
        g->milli_free += tp->gpu_milli;
        p->free.gpu_milli += tp->gpu_milli;
        if (g->milli_free >= WHOLE_MILLI)
            p->free.whole_gpus++;
    }
}

/* Place all tasks of 'j' on nodes among members[0..nmembers) (NULL: every
 * node) into p->places. Returns -1 when all are placed, else the index of
 * the task that did not fit, with the nodes untouched and rej[] (may be
 * NULL) counting why each member refused that task. */
static int place_gang(struct pass *p, const struct sl_sched_job *j,
                      const int *members, int nmembers, int rej[R_NREASONS])
{
    int nn = members ? nmembers : p->st->nnodes;

    for (int t = 0; t < j->tasks; t++) {
        struct score best_sc = {0, 0, 0, -1}, sc;
        int best = -1;

        for (int k = 0; k < nn; k++) {
            int ni = members ? members[k] : k;
            enum reject r = node_fit(&p->st->nodes[ni], j, &sc);

            if (r != R_OK) {
                if (rej)
                    rej[r]++;
                continue;
            }
            if (best < 0 || better(&sc, &best_sc)) {
                best = ni;
                best_sc = sc;
            }
        }
        if (best < 0) {
            for (int u = t - 1; u >= 0; u--)
                give(p, j, &p->places[u]);
            return t;
        }
        if (rej)
            memset(rej, 0, sizeof(int) * R_NREASONS);
        take(p, j, best, &best_sc, &p->places[t]);
    }
    return -1;
}

static void give_gang(struct pass *p, const struct sl_sched_job *j)
{
    for (int t = j->tasks - 1; t >= 0; t--)
        give(p, j, &p->places[t]);
}

/* The first reason counted in rej[], for a single node's refusal. */
static enum reject first_reason(const int rej[R_NREASONS])
{
    for (int r = 0; r < R_NREASONS; r++)
        if (rej[r])
            return (enum reject)r;
    return R_CPU; /* not reached: a refusal always counts a reason */
}

/* topology same-node: the best-fitting node that holds the whole gang.
 * Returns true when placed; else rej[] counts one reason per node. */
static bool place_same_node(struct pass *p, const struct sl_sched_job *j,
                            int rej[R_NREASONS])
{
    struct score best_sc = {0, 0, 0, -1}, sc;
    int best = -1;

    for (int ni = 0; ni < p->st->nnodes; ni++) {
        int one[R_NREASONS] = {0};
        enum reject r = node_fit(&p->st->nodes[ni], j, &sc);

        if (r != R_OK) {
            rej[r]++;
            continue;
        }
        if (place_gang(p, j, &ni, 1, one) >= 0) {
            rej[first_reason(one)]++;
            continue;
        }
        give_gang(p, j);
        if (best < 0 || better(&sc, &best_sc)) {
            best = ni;
            best_sc = sc;
        }
    }
    /* The nodes are as they were when 'best' held the gang. */
    return best >= 0 && place_gang(p, j, &best, 1, NULL) < 0;
}

struct dom_entry {
    const char *domain;
    int node;
};

static int dom_cmp(const void *a, const void *b)
{
    const struct dom_entry *x = a, *y = b;
    bool xe = !*x->domain, ye = !*y->domain;
    int c;

    if (xe != ye)
        return xe ? 1 : -1; /* nodes without a domain last */
    if (!xe && (c = strcmp(x->domain, y->domain)) != 0)
        return c;
    return (x->node > y->node) - (x->node < y->node);
}

static const char *node_domain(const struct sl_sched_node *n)
{
    return n->domain ? n->domain : "";
}

/* Node indices grouped by domain: equal non-empty domains are adjacent, a
 * node without a domain stands alone. */
static int build_domains(struct pass *p)
{
    int nn = p->st->nnodes;
    struct dom_entry *e = calloc((size_t)nn, sizeof(*e));

    if (!e)
        return -ENOMEM;
    if (!(p->domain_order = calloc((size_t)nn, sizeof(int)))) {
        free(e);
        return -ENOMEM;
    }
    for (int i = 0; i < nn; i++) {
        e[i].domain = node_domain(&p->st->nodes[i]);
        e[i].node = i;
    }
    qsort(e, (size_t)nn, sizeof(*e), dom_cmp);
    for (int i = 0; i < nn; i++)
        p->domain_order[i] = e[i].node;
    free(e);
    return 0;
}

/* Length of the domain group starting at domain_order[start]. */
static int group_len(const struct pass *p, int start)
{
    const char *d = node_domain(&p->st->nodes[p->domain_order[start]]);
    int k = start + 1;

    if (!*d)
        return 1;
    while (k < p->st->nnodes &&
           strcmp(node_domain(&p->st->nodes[p->domain_order[k]]), d) == 0)
        k++;
    return k - start;
}

/* topology same-domain: the best-fitting domain (fewest free GPUs, then
 * least free CPU) that holds the whole gang. Returns true when placed;
 * else rej[] counts, over every domain, why its nodes refused the task
 * that did not fit, and *ndomains how many domains were tried. */
static bool place_same_domain(struct pass *p, const struct sl_sched_job *j,
                              int rej[R_NREASONS], int *ndomains)
{
    int best = -1, best_len = 0;
    struct score best_sc = {0, 0, 0, -1};

    *ndomains = 0;
    for (int start = 0; start < p->st->nnodes;) {
        int len = group_len(p, start), one[R_NREASONS] = {0};
        const int *members = &p->domain_order[start];
        struct score sc = {0, 0, 0, -1};

        (*ndomains)++;
        for (int k = 0; k < len; k++) {
            const struct sl_sched_node *n = &p->st->nodes[members[k]];
            if (!n->schedulable)
                continue;
            for (int g = 0; g < node_ngpus(n); g++)
                sc.whole_free += n->gpus[g].milli_free >= WHOLE_MILLI;
            sc.cpu_milli_free += n->cpu_milli_free;
        }
        if (place_gang(p, j, members, len, one) >= 0) {
            for (int r = 0; r < R_NREASONS; r++)
                rej[r] += one[r];
        } else {
            give_gang(p, j);
            if (best < 0 || better(&sc, &best_sc)) {
                best = start;
                best_len = len;
                best_sc = sc;
            }
        }
        start += len;
    }
    return best >= 0 &&
           place_gang(p, j, &p->domain_order[best], best_len, NULL) < 0;
}

/* ---- reasons ---- */

/* Format into a reason buffer; a reason longer than the buffer is cut. */
static void say(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(buf, size, fmt, ap) < 0)
        buf[0] = '\0';
    va_end(ap);
}

static void fmt_bytes(char *buf, size_t size, int64_t b)
{
    if (b > 0 && b % (1LL << 30) == 0)
        snprintf(buf, size, "%" PRId64 "Gi", b >> 30);
    else if (b > 0 && b % (1LL << 20) == 0)
        snprintf(buf, size, "%" PRId64 "Mi", b >> 20);
    else
        snprintf(buf, size, "%" PRId64 " bytes", b);
}

/* " of model A100|H100" or "" when any model will do. */
static void fmt_models(char *buf, size_t size, const struct sl_sched_job *j)
{
    size_t used;

    buf[0] = '\0';
    if (!j->gpu_models || !j->gpu_models[0])
        return;
    used = (size_t)snprintf(buf, size, " of model ");
    for (int i = 0; j->gpu_models[i] && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                 i ? "|" : "", j->gpu_models[i]);
}

/* "2 insufficient gpus of model H100, 1 insufficient memory" */
static void fmt_rejections(char *buf, size_t size, const int rej[R_NREASONS],
                           const struct sl_sched_job *j)
{
    char models[64];
    size_t used = 0;

    buf[0] = '\0';
    fmt_models(models, sizeof(models), j);
    for (int r = 0; r < R_NREASONS && used < size; r++) {
        const char *sep = used ? ", " : "";
        if (!rej[r])
            continue;
        switch ((enum reject)r) {
        case R_UNSCHEDULABLE:
            used += (size_t)snprintf(buf + used, size - used,
                                     "%s%d unschedulable", sep, rej[r]);
            break;
        case R_GPUS:
            used += (size_t)snprintf(buf + used, size - used,
                                     "%s%d insufficient gpus%s", sep, rej[r],
                                     models);
            break;
        case R_GPU_MILLI:
            used += (size_t)snprintf(buf + used, size - used,
                                     "%s%d no gpu%s with %d milli free", sep,
                                     rej[r], models, j->gpu_milli);
            break;
        case R_CPU:
            used += (size_t)snprintf(buf + used, size - used,
                                     "%s%d insufficient cpu", sep, rej[r]);
            break;
        default:
            used += (size_t)snprintf(buf + used, size - used,
                                     "%s%d insufficient memory", sep, rej[r]);
            break;
        }
    }
}

/* Whether 'j' is a request this scheduler can consider; else a reason. */
static bool job_valid(const struct sl_sched_job *j, char *why, size_t size)
{
    const char *bad = NULL;

    if (j->tasks < 1 || j->tasks > SL_MAX_TASKS)
        bad = "tasks must be 1..1024";
    else if (j->gpus < 0 || j->gpus > SL_SCHED_MAX_GPUS)
        bad = "gpus must be 0..64";
    else if (j->gpu_milli < 0 || j->gpu_milli > WHOLE_MILLI)
        bad = "gpu_milli must be 0..1000";
    else if (j->gpus > 0 && j->gpu_milli > 0)
        bad = "gpus and gpu_milli are exclusive";
    else if (j->cpu_milli < 0 || j->cpu_milli > INT64_MAX / SL_MAX_TASKS)
        bad = "cpu_milli out of range";
    else if (j->mem_bytes < 0 || j->mem_bytes > INT64_MAX / SL_MAX_TASKS)
        bad = "mem_bytes out of range";
    else if (j->topology < SL_TOPO_ANY || j->topology > SL_TOPO_SAME_DOMAIN)
        bad = "unknown topology";
    if (bad)
        say(why, size, "invalid request: %s", bad);
    return !bad;
}

/* Fail fast when the cluster as a whole lacks what the gang needs. */
static bool cluster_short(const struct pass *p, const struct sl_sched_job *j,
                          char *why, size_t size)
{
    int64_t t = j->tasks;
    char need[32], have[32];

    if (p->free.nodes == 0) {
        say(why, size, "no schedulable nodes");
        return true;
    }
    if (t * j->gpus > p->free.whole_gpus) {
        say(why, size,
                 "needs %" PRId64 " whole gpus (%d tasks x %d), the cluster "
                 "has %" PRId64 " free",
                 t * j->gpus, j->tasks, j->gpus, p->free.whole_gpus);
        return true;
    }
    if (t * j->gpu_milli > p->free.gpu_milli) {
        say(why, size,
                 "needs %" PRId64 " gpu milli (%d tasks x %d), the cluster "
                 "has %" PRId64 " free",
                 t * j->gpu_milli, j->tasks, j->gpu_milli, p->free.gpu_milli);
        return true;
    }
    if (t * j->cpu_milli > p->free.cpu_milli) {
        say(why, size,
                 "needs %" PRId64 " cpu milli (%d tasks x %" PRId64
                 "), the cluster has %" PRId64 " free",
                 t * j->cpu_milli, j->tasks, j->cpu_milli, p->free.cpu_milli);
        return true;
    }
    if (t * j->mem_bytes > p->free.mem_bytes) {
        fmt_bytes(need, sizeof(need), t * j->mem_bytes);
        fmt_bytes(have, sizeof(have), p->free.mem_bytes);
        say(why, size,
                 "needs %s memory (%d tasks), the cluster has %s free", need,
                 j->tasks, have);
        return true;
    }
    return false;
}

/* Place the gang per its topology; else write why into 'why'. */
static bool place_job(struct pass *p, const struct sl_sched_job *j, char *why,
                      size_t size)
{
    int rej[R_NREASONS] = {0}, failed, ndomains = 0;
    char list[128];

    switch (j->topology) {
    case SL_TOPO_SAME_NODE:
        if (place_same_node(p, j, rej))
            return true;
        fmt_rejections(list, sizeof(list), rej, j);
        say(why, size, "no single node fits all %d tasks: %d nodes "
                 "rejected (%s)", j->tasks, p->st->nnodes, list);
        return false;
    case SL_TOPO_SAME_DOMAIN:
        if (place_same_domain(p, j, rej, &ndomains))
            return true;
        fmt_rejections(list, sizeof(list), rej, j);
        say(why, size, "no domain fits all %d tasks: %d domains "
                 "rejected (nodes: %s)", j->tasks, ndomains, list);
        return false;
    default:
        if ((failed = place_gang(p, j, NULL, 0, rej)) < 0)
            return true;
        fmt_rejections(list, sizeof(list), rej, j);
        say(why, size, "no node fits task %d of %d: %d nodes rejected "
                 "(%s)", failed + 1, j->tasks, p->st->nnodes, list);
        return false;
    }
}

/* Scheduling order: priority desc, submit time asc, id asc, then input
 * order (so the result never depends on qsort's instability). */
static int job_cmp(const void *a, const void *b)
{
    const struct sl_sched_job *x = *(const struct sl_sched_job *const *)a;
    const struct sl_sched_job *y = *(const struct sl_sched_job *const *)b;

    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x > y) - (x < y);
}

void sl_sched_result_fini(struct sl_sched_result *out)
{
    int saved = errno;

    if (!out)
        return;
    for (int i = 0; i < out->nstarts; i++)
        free(out->starts[i].tasks);
    free(out->starts);
    free(out->waits);
    memset(out, 0, sizeof(*out));
    errno = saved;
}

int sl_sched_run(struct sl_sched_state *st, int64_t now_ms,
                 struct sl_sched_result *out)
{
    struct pass p = {.st = st};
    const struct sl_sched_job **order = NULL, **started = NULL;
    struct sl_sched_result res = {NULL, 0, NULL, 0};
    int max_tasks = 1, rc = 0;
    bool domains = false;

    memset(out, 0, sizeof(*out));
    if (st->njobs <= 0)
        return 0;
    for (int i = 0; i < st->njobs; i++) {
        const struct sl_sched_job *j = &st->jobs[i];
        if (j->tasks > max_tasks && j->tasks <= SL_MAX_TASKS)
            max_tasks = j->tasks;
        domains = domains || j->topology == SL_TOPO_SAME_DOMAIN;
    }
    if (!(order = calloc((size_t)st->njobs, sizeof(*order))) ||
        !(started = calloc((size_t)st->njobs, sizeof(*started))) ||
        !(res.starts = calloc((size_t)st->njobs, sizeof(*res.starts))) ||
        !(res.waits = calloc((size_t)st->njobs, sizeof(*res.waits))) ||
        !(p.places = calloc((size_t)max_tasks, sizeof(*p.places))) ||
        (domains && st->nnodes > 0 && build_domains(&p) < 0)) {
        rc = -ENOMEM;
        goto out;
    }
    for (int i = 0; i < st->nnodes; i++) {
        const struct sl_sched_node *n = &st->nodes[i];
        if (!n->schedulable)
            continue;
        p.free.nodes++;
        p.free.cpu_milli += n->cpu_milli_free;
        p.free.mem_bytes += n->mem_bytes_free;
        for (int g = 0; g < node_ngpus(n); g++) {
            p.free.gpu_milli += n->gpus[g].milli_free;
            p.free.whole_gpus += n->gpus[g].milli_free >= WHOLE_MILLI;
        }
    }
    for (int i = 0; i < st->njobs; i++)
        order[i] = &st->jobs[i];
    qsort(order, (size_t)st->njobs, sizeof(*order), job_cmp);

    for (int k = 0; k < st->njobs; k++) {
        const struct sl_sched_job *j = order[k];
        struct sl_sched_wait *w = &res.waits[res.nwaits];
        struct sl_sched_decision *d = &res.starts[res.nstarts];

        if (!job_valid(j, w->reason, sizeof(w->reason))) {
            /* reason written */
        } else if (j->not_before_ms > now_ms) {
            char ts[40];
            say(w->reason, sizeof(w->reason),
                     "retry backoff until %s (in %" PRId64 " ms)",
                     sl_time_rfc3339(j->not_before_ms, ts, sizeof(ts)),
                     j->not_before_ms - now_ms);
        } else if (cluster_short(&p, j, w->reason, sizeof(w->reason))) {
            /* reason written */
        } else if (place_job(&p, j, w->reason, sizeof(w->reason))) {
            if (!(d->tasks = calloc((size_t)j->tasks, sizeof(*d->tasks)))) {
                give_gang(&p, j);
                rc = -ENOMEM;
                goto out;
            }
            memcpy(d->tasks, p.places, (size_t)j->tasks * sizeof(*d->tasks));
            d->job_id = j->id;
            d->ntasks = j->tasks;
            started[res.nstarts++] = j;
            continue;
        }
        w->job_id = j->id;
        w->position = res.nwaits + 1;
        res.nwaits++;
    }
    *out = res;
    memset(&res, 0, sizeof(res));
out:
    if (rc < 0 && res.starts) {
        /* Undo every start so the nodes are as the caller gave them. */
        for (int i = res.nstarts - 1; i >= 0; i--) {
            memcpy(p.places, res.starts[i].tasks,
                   (size_t)res.starts[i].ntasks * sizeof(*p.places));
            give_gang(&p, started[i]);
        }
    }
    sl_sched_result_fini(&res);
    free(p.places);
    free(p.domain_order);
    free(started);
    free(order);
    return rc;
}
