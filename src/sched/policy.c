/*
 * policy.c - how good a node is for one task: the placement policies, the
 * GPU a fraction takes on a node, and the fragmentation model of FGD.
 *
 * Every score is "higher is better" and is computed only for a node where
 * the task fits (cl_fit). The reference policies follow, formula for
 * formula, the score plugins of the FGD paper's simulator
 * (hkust-adsl/kubernetes-scheduler-simulator), including their integer
 * truncation, so that their results can be compared with the published
 * ones. Ties go to the lowest node index, as in the reference runs (whose
 * results match that rule over a node order shuffled by the seed, and not
 * uniform tie-breaking); the random policy draws uniformly among the nodes
 * where the task fits, as the reference's RandomScore does.
 *
 *   bestfit     100 * (1 - (cpu_left-cpu)/128000/2 - (gpu_left-gpu)/8000/2),
 *               truncated: the node with the least left over.
 *   packing     a shared GPU first (100 - its free share/10, >= 50), then
 *               free GPUs of a used node (50 - whole GPUs used, >= 33), then
 *               an idle node (33 - its GPUs, >= its GPUs); CPU tasks: 0.
 *   clustering  nodes holding only tasks of the same GPU kind (share, 1-GPU,
 *               2-GPU, ...) first, then mixed ones with that kind, then idle
 *               nodes, then others, each band by GPUs used; CPU tasks: 0.
 *   dotprod     100 * (1 - <free, request>/2) with both vectors scaled by
 *               (128 CPUs, 8 GPUs): Tetris' alignment, smaller product first.
 *   random      0 for every node: the tie rule draws one at random.
 *   fgd         100 * sigmoid((F_before - F_after) / 1000), truncated, where
 *               F is the node's fragmentation under the typical tasks: the
 *               node whose fragmentation grows least (or shrinks most).
 *   spread      the emptiest node: free CPU share + free GPU share after.
 *
 * The fragmentation of a node under typical tasks M with weights p_m (FGD,
 * section 4): F = sum_m p_m F(m), where F(m) is all the node's free GPU
 * milli when m cannot run there (a CPU-only task, no GPU of an allowed
 * model, too few GPUs with m's fraction free, or too little CPU), and else
 * the free milli of the GPUs that cannot hold m's per-GPU share. Memory is
 * not part of the model, as in the paper. The typical tasks are grouped by
 * GPU demand (count, milli, models) with their CPU needs sorted, so that F
 * costs one pass over the GPUs per group and a binary search for the CPU.
 */
#include "cluster.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SPEC_CPU 128000.0 /* the reference's normalisers */
#define MAX_SPEC_GPU 8000.0
#define MAX_SPEC_GPU_INT 8000
#define MAX_NODE_SCORE 100

struct cl_frag_group {
    int num_gpu;
    int gpu_milli;
    uint32_t models;
    int n;               /* typical tasks in the group */
    int64_t *cpu;        /* CPU needs, ascending (owned, one block) */
    double *cum;         /* cum[i] = weight of tasks 0..i-1; cum[n] = total */
};

static bool fraction(const struct cl_shape *s)
{
    return s->num_gpu == 1 && s->gpu_milli < CL_WHOLE;
}

static bool allowed(uint32_t models, int model)
{
    return !models || (models & (1u << model));
}

/* ---- fragmentation ---------------------------------------------------- */

static void groups_free(struct cl_cluster *c)
{
    for (int i = 0; i < c->ngroups; i++)
        free(c->groups[i].cpu);
    free(c->groups);
    c->groups = NULL;
    c->ngroups = 0;
}

static int typical_cmp(const void *a, const void *b)
{
    const struct cl_typical *x = a, *y = b;

    if (x->num_gpu != y->num_gpu)
        return x->num_gpu < y->num_gpu ? -1 : 1;
    if (x->gpu_milli != y->gpu_milli)
        return x->gpu_milli < y->gpu_milli ? -1 : 1;
    if (x->models != y->models)
        return x->models < y->models ? -1 : 1;
    return (x->cpu_milli > y->cpu_milli) - (x->cpu_milli < y->cpu_milli);
}

/* Whether typical task 't' belongs to group 'g'. */
static bool in_group(const struct cl_typical *t, const struct cl_frag_group *g)
{
    return t->num_gpu == g->num_gpu && t->gpu_milli == g->gpu_milli &&
           t->models == g->models;
}

int cl_set_typical(struct cl_cluster *c, const struct cl_typical *t, int n)
{
    struct cl_typical *copy = NULL;
    double total = 0;
    int ngroups = 0, g = -1;

    for (int i = 0; i < n; i++)
        if (t[i].weight > 0)
            total += t[i].weight;
    if (n > 0 && !(copy = malloc(sizeof(*copy) * (size_t)n)))
        return -ENOMEM;
    if (n > 0)
        memcpy(copy, t, sizeof(*copy) * (size_t)n);
    /* sorted by GPU demand, then CPU: a group is a run of equal demand */
    if (n > 0)
        qsort(copy, (size_t)n, sizeof(*copy), typical_cmp);
    free(c->typical);
    groups_free(c);
    c->typical = copy;
    c->ntypical = n;
    c->frag_cpu_weight = 0;
    for (int i = 0; i < n; i++) {
        copy[i].weight = total > 0 && copy[i].weight > 0 ? copy[i].weight / total : 0;
        if (copy[i].num_gpu <= 0)
            c->frag_cpu_weight += copy[i].weight;
        else if (i == 0 || copy[i - 1].num_gpu <= 0 ||
                 copy[i].num_gpu != copy[i - 1].num_gpu ||
                 copy[i].gpu_milli != copy[i - 1].gpu_milli ||
                 copy[i].models != copy[i - 1].models)
            ngroups++;
    }
    if (ngroups && !(c->groups = calloc((size_t)ngroups, sizeof(*c->groups))))
        goto oom;
    for (int i = 0; i < n;) {
        struct cl_frag_group *gr;
        int k = i;

        if (copy[i].num_gpu <= 0) {
            i++;
            continue;
        }
        gr = &c->groups[++g];
        gr->num_gpu = copy[i].num_gpu;
        gr->gpu_milli = copy[i].gpu_milli;
        gr->models = copy[i].models;
        while (k < n && in_group(&copy[k], gr))
            k++;
        gr->n = k - i;
        /* one block: n CPU needs, then n + 1 cumulative weights */
        if (!(gr->cpu = malloc(sizeof(int64_t) * (size_t)gr->n +
                               sizeof(double) * (size_t)(gr->n + 1))))
            goto oom;
        c->ngroups = g + 1;
        gr->cum = (double *)(gr->cpu + gr->n);
        gr->cum[0] = 0;
        for (int j = 0; j < gr->n; j++) {
            gr->cpu[j] = copy[i + j].cpu_milli;
            gr->cum[j + 1] = gr->cum[j] + copy[i + j].weight;
        }
        i = k;
    }
    for (int i = 0; i < c->nnodes; i++)
        c->nodes[i].frag_version = 0;
    for (int i = 0; i < c->ntrees; i++) {
        c->trees[i].nnodes = -1; /* scores depend on the model: rebuild */
        free(c->trees[i].memo);
        c->trees[i].memo = NULL;
    }
    return 0;
oom:
    free(c->typical);
    c->typical = NULL;
    c->ntypical = 0;
    groups_free(c);
    return -ENOMEM;
}

/* Weight of the group's tasks that need at most 'cpu' CPU. */
static double cpu_ok_weight(const struct cl_frag_group *g, int64_t cpu)
{
    int lo = 0, hi = g->n; /* first index whose need exceeds cpu */

    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (g->cpu[mid] <= cpu)
            lo = mid + 1;
        else
            hi = mid;
    }
    return g->cum[lo];
}

/* F of a node state: 'cpu' left, GPUs free[0..ng) of models model[]. */
static double frag_eval(const struct cl_cluster *c, int64_t cpu,
                        const int16_t *free, const uint8_t *model, int ng)
{
    int64_t total = 0;
    double f;

    for (int g = 0; g < ng; g++)
        total += free[g];
    if (total == 0)
        return 0;
    f = c->frag_cpu_weight * (double)total;
    for (int k = 0; k < c->ngroups; k++) {
        const struct cl_frag_group *gr = &c->groups[k];
        int64_t partial = 0;
        int fit = 0;
        double all = gr->cum[gr->n], ok;

        for (int g = 0; g < ng; g++) {
            if (free[g] >= gr->gpu_milli && allowed(gr->models, model[g]))
                fit++;
            else
                partial += free[g];
        }
        if (fit < gr->num_gpu) {
            f += all * (double)total;
            continue;
        }
        ok = cpu_ok_weight(gr, cpu);
        f += ok * (double)partial + (all - ok) * (double)total;
    }
    return f;
}

double cl_node_frag(const struct cl_cluster *c, int ni)
{
    const struct cl_node *n = &c->nodes[ni];

    return frag_eval(c, n->cpu_free, &c->gpu_free[n->gpu0],
                     &c->gpu_model[n->gpu0], n->ngpus);
}

static double node_frag_cached(struct cl_cluster *c, int ni)
{
    struct cl_node *n = &c->nodes[ni];

    if (n->frag_version != n->version + 1 || n->version + 1 == 0) {
        n->frag = cl_node_frag(c, ni);
        n->frag_version = n->version + 1;
    }
    return n->frag;
}

/* The score of a frag decrease of 'd' milli: 100 * sigmoid(d / 1000),
 * truncated. The truncation matters: nodes within about 40 milli of each
 * other tie and go to the lowest index, which consolidates tasks; scoring
 * the exact decrease spreads them and loses 4.6 points of allocation on the
 * default openb workload (90.8 % against 95.4 %, 10 seeds). */
static double quantise(double d)
{
    return (double)(int64_t)(1.0 / (1.0 + exp(-d / 1000)) * MAX_NODE_SCORE);
}

/* FGD on node 'ni': 100 * sigmoid(frag decrease / 1000), truncated, of the
 * best way to place 's', and for a fraction its GPU (the first of equals). */
static double fgd_score(struct cl_cluster *c, int ni, const struct cl_shape *s,
                        int *gpu)
{
    const struct cl_node *n = &c->nodes[ni];
    const int16_t *f0 = &c->gpu_free[n->gpu0];
    const uint8_t *m = &c->gpu_model[n->gpu0];
    int16_t f[SL_SCHED_MAX_GPUS];
    double before = node_frag_cached(c, ni), best = -INFINITY;
    int64_t cpu = n->cpu_free - s->cpu_milli;

    memcpy(f, f0, sizeof(int16_t) * (size_t)n->ngpus);
    *gpu = -1;
    if (fraction(s)) {
        for (int g = 0; g < n->ngpus; g++) {
            double sc;
            bool seen = false;
            if (f0[g] < s->gpu_milli || !allowed(s->models, m[g]))
                continue;
            /* a GPU like an earlier candidate leaves the same state */
            for (int k = 0; k < g && !seen; k++)
                seen = f0[k] == f0[g] && m[k] == m[g] && f0[k] >= s->gpu_milli &&
                       allowed(s->models, m[k]);
            if (seen)
                continue;
            f[g] = (int16_t)(f0[g] - s->gpu_milli);
            sc = quantise(before - frag_eval(c, cpu, f, m, n->ngpus));
            f[g] = f0[g];
            if (*gpu < 0 || sc > best) {
                best = sc;
                *gpu = g;
            }
        }
        return best;
    }
    for (int g = 0, left = s->num_gpu; g < n->ngpus && left > 0; g++) {
        if (f[g] < CL_WHOLE || !allowed(s->models, m[g]))
            continue;
        f[g] = 0;
        left--;
    }
    return quantise(before - frag_eval(c, cpu, f, m, n->ngpus));
}

/* ---- the reference policies ------------------------------------------- */

static double bestfit_score(const struct cl_node *n, const struct cl_shape *s)
{
    double score = 0;
    int64_t req_gpu = (int64_t)s->num_gpu * s->gpu_milli;

    score += (double)(n->cpu_free - s->cpu_milli) / MAX_SPEC_CPU * 0.5;
    score += (double)(n->gpu_free_sum - req_gpu) / MAX_SPEC_GPU * 0.5;
    score = (1.0 - score) * MAX_NODE_SCORE;
    return (double)(int64_t)score;
}

static double dotprod_score(const struct cl_node *n, const struct cl_shape *s)
{
    double dot = 0, score;
    int64_t req_gpu = (int64_t)s->num_gpu * s->gpu_milli;

    dot += ((double)n->cpu_free / MAX_SPEC_CPU) * ((double)s->cpu_milli / MAX_SPEC_CPU);
    dot += ((double)n->gpu_free_sum / MAX_SPEC_GPU) * ((double)req_gpu / MAX_SPEC_GPU);
    score = 1 - dot / 2;
    return (double)(int64_t)(MAX_NODE_SCORE * score);
}

static double packing_score(const struct cl_cluster *c, const struct cl_node *n,
                            const struct cl_shape *s)
{
    const int16_t *f = &c->gpu_free[n->gpu0];
    int order[SL_SCHED_MAX_GPUS], left = s->num_gpu, whole_used = 0;
    int64_t ratio = 0, score;
    int used[SL_SCHED_MAX_GPUS], nused = 0;

    if (s->num_gpu <= 0)
        return 0;
    if (n->nfull == n->ngpus) {
        score = MAX_NODE_SCORE / 3 - n->nfull;
        return (double)(score > n->nfull ? score : n->nfull);
    }
    /* least free first, index order among equals (a stable sort) */
    for (int g = 0; g < n->ngpus; g++) {
        int k = g;
        while (k > 0 && f[order[k - 1]] > f[g]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = g;
    }
    for (int i = 0; i < n->ngpus && left > 0; i++) {
        int g = order[i];
        if (f[g] < s->gpu_milli || !allowed(s->models, c->gpu_model[n->gpu0 + g]))
            continue;
        left--;
        used[nused++] = g;
        whole_used += f[g] == CL_WHOLE;
    }
    if (whole_used > 0) {
        score = MAX_NODE_SCORE / 2 - whole_used;
        return (double)(score > MAX_NODE_SCORE / 3 ? score : MAX_NODE_SCORE / 3);
    }
    for (int i = 0; i < nused; i++)
        ratio += (int64_t)f[used[i]] * 100 / CL_WHOLE;
    score = MAX_NODE_SCORE - ratio / 10;
    return (double)(score > MAX_NODE_SCORE / 2 ? score : MAX_NODE_SCORE / 2);
}

static double clustering_score(const struct cl_node *n, const struct cl_shape *s)
{
    int tag, count = 0;
    int64_t used = (int64_t)(MAX_NODE_SCORE / 4) *
                   (MAX_SPEC_GPU_INT - n->gpu_free_sum) / MAX_SPEC_GPU_INT;

    if (s->num_gpu <= 0)
        return 0;
    tag = fraction(s) ? 0 : s->num_gpu;
    for (int i = 0; i < n->ntags; i++)
        if (n->tag[i] == tag)
            count = n->tag_count[i];
    if (count > 0)
        return (double)(used + (n->ntags == 1 ? MAX_NODE_SCORE * 3 / 4
                                              : MAX_NODE_SCORE * 2 / 4));
    return (double)(used + (n->ntags == 0 ? MAX_NODE_SCORE / 4 : 0));
}

static double spread_score(const struct cl_node *n, const struct cl_shape *s)
{
    double cpu = n->cpu_total > 0
                     ? (double)(n->cpu_free - s->cpu_milli) / (double)n->cpu_total
                     : 0;
    double gpu = n->ngpus > 0 ? (double)(n->gpu_free_sum -
                                         (int64_t)s->num_gpu * s->gpu_milli) /
                                    (double)(n->ngpus * CL_WHOLE)
                              : 0;
    return cpu + gpu;
}

/* ---- GPU choice ------------------------------------------------------- */

int cl_choose_gpu(struct cl_cluster *c, int ni, const struct cl_shape *s)
{
    const struct cl_node *n = &c->nodes[ni];
    const int16_t *f = &c->gpu_free[n->gpu0];
    const uint8_t *m = &c->gpu_model[n->gpu0];
    int pick = -1, seen = 0;

    if (!fraction(s))
        return -1;
    switch (c->policy) {
    case SL_PLACE_FGD:
        fgd_score(c, ni, s, &pick);
        return pick;
    case SL_PLACE_RANDOM:
        for (int g = 0; g < n->ngpus; g++)
            if (f[g] >= s->gpu_milli && allowed(s->models, m[g]) &&
                sl_rng_below(&c->rng, (uint64_t)++seen) == 0)
                pick = g;
        return pick;
    case SL_PLACE_SPREAD:
        for (int g = 0; g < n->ngpus; g++)
            if (f[g] >= s->gpu_milli && allowed(s->models, m[g]) &&
                (pick < 0 || f[g] > f[pick]))
                pick = g;
        return pick;
    default: /* best fit: the least free GPU that holds the fraction */
        for (int g = 0; g < n->ngpus; g++)
            if (f[g] >= s->gpu_milli && allowed(s->models, m[g]) &&
                (pick < 0 || f[g] < f[pick]))
                pick = g;
        return pick;
    }
}

/* ---- the score -------------------------------------------------------- */

bool cl_score(struct cl_cluster *c, int ni, const struct cl_shape *s,
              double *score, int *gpu)
{
    const struct cl_node *n = &c->nodes[ni];

    *gpu = -1;
    if (cl_fit(c, ni, s) != CL_FITS)
        return false;
    switch (c->policy) {
    case SL_PLACE_FGD:
        *score = fgd_score(c, ni, s, gpu);
        break;
    case SL_PLACE_BESTFIT:
        *score = bestfit_score(n, s);
        break;
    case SL_PLACE_PACKING:
        *score = packing_score(c, n, s);
        break;
    case SL_PLACE_CLUSTERING:
        *score = clustering_score(n, s);
        break;
    case SL_PLACE_DOTPROD:
        *score = dotprod_score(n, s);
        break;
    case SL_PLACE_SPREAD:
        *score = spread_score(n, s);
        break;
    case SL_PLACE_RANDOM:
    default:
        *score = 0;
        break;
    }
    return true;
}
