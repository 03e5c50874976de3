/*
 * cluster.c - nodes, the change log and the per-shape indexes of the
 * placement engine. See cluster.h.
 *
 * Invariants:
 *  - node->nfull, node->gpu_free_sum and node->model_mask always agree
 *    with the node's GPUs; every change goes through cl_touch.
 *  - a tree leaf whose stamp equals its node's version holds that node's
 *    current score; the tree's internal nodes always agree with its leaves.
 *  - trees never outlive a policy or a typical-task model: changing either
 *    drops them all.
 */
#include "cluster.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../util/util.h"

#define TREE_BUDGET_BYTES (64u << 20) /* all indexes together */
#define TREES_MIN 8
#define TREE_MEMO 1024                /* fgd scores remembered per index */

/* ---- setup ------------------------------------------------------------ */

int cl_init(struct cl_cluster *c, enum sl_placement policy, uint64_t seed)
{
    memset(c, 0, sizeof(*c));
    c->policy = policy;
    sl_rng_seed(&c->rng, seed);
    c->log_cap = 1024;
    if (!(c->log = calloc((size_t)c->log_cap, sizeof(*c->log))))
        return -ENOMEM;
    c->trees_max = TREES_MIN;
    return 0;
}

static void tree_free(struct cl_tree *t)
{
    free(t->memo);
    t->memo = NULL;
    free(t->best);
    free(t->count);
    free(t->stamp);
    memset(t, 0, sizeof(*t));
}

static void drop_trees(struct cl_cluster *c)
{
    for (int i = 0; i < c->ntrees; i++)
        tree_free(&c->trees[i]);
    c->ntrees = 0;
}

void cl_fini(struct cl_cluster *c)
{
    if (!c)
        return;
    drop_trees(c);
    cl_set_typical(c, NULL, 0); /* frees the model; cannot fail */
    free(c->trees);
    free(c->nodes);
    free(c->gpu_free);
    free(c->gpu_model);
    free(c->names);
    for (int i = 0; i < c->ndomains; i++) {
        free(c->domains[i].name);
        free(c->domains[i].nodes);
    }
    free(c->domains);
    free(c->log);
    memset(c, 0, sizeof(*c));
}

void cl_set_policy(struct cl_cluster *c, enum sl_placement policy)
{
    if (c->policy == policy)
        return;
    c->policy = policy;
    drop_trees(c);
}

int cl_model(struct cl_cluster *c, const char *name, bool add)
{
    for (int i = 0; i < c->nmodels; i++)
        if (strcasecmp(c->models[i], name) == 0)
            return i;
    if (!add)
        return -ENOENT;
    if (c->nmodels == SL_SCHED_MAX_MODELS)
        return -ENOSPC;
    if (!*name || strlen(name) >= sizeof(c->models[0]))
        return -EINVAL;
    sl_strlcpy(c->models[c->nmodels], name, sizeof(c->models[0]));
    return c->nmodels++;
}

/* The domain named 'domain', made when new, with room for one more
 * member; -1 for none, or -ENOMEM. */
static int domain_id(struct cl_cluster *c, const char *domain)
{
    struct cl_domain *d;
    int i;

    if (!domain || !*domain)
        return -1;
    for (i = c->ndomains - 1; i >= 0; i--) /* nodes come rack by rack */
        if (strcmp(c->domains[i].name, domain) == 0)
            break;
    if (i < 0) {
        if (sl_grow((void **)&c->domains, &c->domains_cap, c->ndomains + 1,
                 sizeof(*c->domains)) < 0)
            return -ENOMEM;
        d = &c->domains[c->ndomains];
        memset(d, 0, sizeof(*d));
        if (!(d->name = strdup(domain)))
            return -ENOMEM;
        i = c->ndomains++;
    }
    d = &c->domains[i];
    if (sl_grow((void **)&d->nodes, &d->cap, d->nnodes + 1, sizeof(int)) < 0)
        return -ENOMEM;
    return i;
}

int cl_node_add(struct cl_cluster *c, const char *name, const char *domain,
                int64_t cpu_milli, int64_t mem_bytes, int ngpus,
                const int *gpu_models)
{
    size_t nlen = strlen(name) + 1;
    struct cl_node *n;
    int dom, rc;

    if (ngpus < 0 || ngpus > SL_SCHED_MAX_GPUS || cpu_milli < 0 || mem_bytes < 0)
        return -EINVAL;
    for (int g = 0; g < ngpus; g++)
        if (gpu_models[g] < 0 || gpu_models[g] >= c->nmodels)
            return -EINVAL;
    if ((rc = sl_grow((void **)&c->nodes, &c->nodes_cap, c->nnodes + 1,
                   sizeof(*c->nodes))) < 0)
        return rc;
    {
        int gcap = c->gpus_cap;
        if ((rc = sl_grow((void **)&c->gpu_free, &gcap, c->ngpus + ngpus,
                       sizeof(*c->gpu_free))) < 0)
            return rc;
        gcap = c->gpus_cap;
        if ((rc = sl_grow((void **)&c->gpu_model, &gcap, c->ngpus + ngpus,
                       sizeof(*c->gpu_model))) < 0)
            return rc;
        c->gpus_cap = gcap;
    }
    while (c->names_len + nlen > c->names_cap) {
        size_t ncap = c->names_cap ? c->names_cap * 2 : 4096;
        char *np = realloc(c->names, ncap);
        if (!np)
            return -ENOMEM;
        c->names = np;
        c->names_cap = ncap;
    }
    if ((dom = domain_id(c, domain)) < -1)
        return dom;
    if (c->log_cap < 2 * (c->nnodes + 1)) {
        int cap = c->log_cap;
        int32_t *nl;
        while (cap < 2 * (c->nnodes + 1))
            cap *= 2;
        if (!(nl = calloc((size_t)cap, sizeof(*nl))))
            return -ENOMEM;
        free(c->log);
        c->log = nl;
        c->log_cap = cap;
        /* The old positions are gone: every index must rebuild. */
        c->log_pos += (uint64_t)cap;
    }
    n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof(*n));
    n->cpu_total = n->cpu_free = cpu_milli;
    n->mem_total = n->mem_free = mem_bytes;
    n->gpu0 = c->ngpus;
    n->ngpus = (int16_t)ngpus;
    n->nfull = (int16_t)ngpus;
    n->gpu_free_sum = ngpus * CL_WHOLE;
    n->domain = dom;
    if (dom >= 0)
        c->domains[dom].nodes[c->domains[dom].nnodes++] = c->nnodes;
    n->name = (int32_t)c->names_len;
    n->schedulable = true;
    for (int g = 0; g < ngpus; g++) {
        c->gpu_free[c->ngpus + g] = CL_WHOLE;
        c->gpu_model[c->ngpus + g] = (uint8_t)gpu_models[g];
        n->model_mask |= 1u << gpu_models[g];
    }
    memcpy(c->names + c->names_len, name, nlen);
    c->names_len += nlen;
    c->ngpus += ngpus;
    /* Keep the indexes affordable as the cluster grows. */
    {
        size_t leaves = 1, per;
        while (leaves < (size_t)c->nnodes + 1)
            leaves *= 2;
        size_t node = sizeof(double) + (c->policy == SL_PLACE_RANDOM ? sizeof(int32_t) : 0);
        per = leaves * 2 * node +
              ((size_t)c->nnodes + 1) * sizeof(uint32_t) + TREE_MEMO * sizeof(struct cl_memo);
        c->trees_max = (int)(TREE_BUDGET_BYTES / per);
        if (c->trees_max < TREES_MIN)
            c->trees_max = TREES_MIN;
        if (c->trees_max > 4096)
            c->trees_max = 4096;
    }
    return c->nnodes++;
}

void cl_touch(struct cl_cluster *c, int n)
{
    c->nodes[n].version++;
    if (c->no_log)
        return;
    c->log[c->log_pos & (uint64_t)(c->log_cap - 1)] = n;
    c->log_pos++;
}

void cl_node_schedulable(struct cl_cluster *c, int node, bool on)
{
    if (c->nodes[node].schedulable == on)
        return;
    c->nodes[node].schedulable = on;
    cl_touch(c, node);
}

const char *cl_node_name(const struct cl_cluster *c, int node)
{
    return c->names + c->nodes[node].name;
}

const char *cl_node_domain(const struct cl_cluster *c, int node)
{
    int d = c->nodes[node].domain;
    return d >= 0 ? c->domains[d].name : "";
}

/* ---- fit -------------------------------------------------------------- */

enum cl_reject cl_fit(const struct cl_cluster *c, int ni, const struct cl_shape *s)
{
    const struct cl_node *n = &c->nodes[ni];

    if (!n->schedulable)
        return CL_UNSCHEDULABLE;
    if (s->models && !(n->model_mask & s->models))
        return n->ngpus || s->num_gpu ? CL_MODEL : CL_GPUS;
    if (s->num_gpu > 0) {
        int have = 0;
        const int16_t *f = &c->gpu_free[n->gpu0];
        const uint8_t *m = &c->gpu_model[n->gpu0];

        if (n->ngpus < s->num_gpu)
            return CL_GPUS;
        if (s->gpu_milli >= CL_WHOLE && !s->models) {
            have = n->nfull;
        } else {
            for (int g = 0; g < n->ngpus; g++)
                if (f[g] >= s->gpu_milli &&
                    (!s->models || (s->models & (1u << m[g]))))
                    have++;
        }
        if (have < s->num_gpu)
            return CL_GPUS;
    }
    if (n->cpu_free < s->cpu_milli)
        return CL_CPU;
    if (n->mem_free < s->mem_bytes)
        return CL_MEM;
    return CL_FITS;
}

int cl_capacity(const struct cl_cluster *c, int ni, const struct cl_shape *s, int max)
{
    const struct cl_node *n = &c->nodes[ni];
    int k = max;

    if (max <= 0 || cl_fit(c, ni, s) != CL_FITS)
        return 0;
    if (s->cpu_milli > 0 && n->cpu_free / s->cpu_milli < k)
        k = (int)(n->cpu_free / s->cpu_milli);
    if (s->mem_bytes > 0 && n->mem_free / s->mem_bytes < k)
        k = (int)(n->mem_free / s->mem_bytes);
    if (s->num_gpu > 0) {
        /* whole GPUs: free ones by num_gpu; a fraction: how many fit on
         * each GPU, summed (each task takes from one GPU) */
        const int16_t *f = &c->gpu_free[n->gpu0];
        const uint8_t *m = &c->gpu_model[n->gpu0];
        int slots = 0;
        for (int g = 0; g < n->ngpus; g++)
            if (!s->models || (s->models & (1u << m[g])))
                slots += s->gpu_milli >= CL_WHOLE ? f[g] >= CL_WHOLE : f[g] / s->gpu_milli;
        if (s->gpu_milli >= CL_WHOLE)
            slots /= s->num_gpu;
        if (slots < k)
            k = slots;
    }
    return k;
}

/* ---- indexes ---------------------------------------------------------- */

static uint64_t shape_key(const struct cl_shape *s)
{
    uint64_t h = 0x84222325cbf29ce4ULL;
    uint64_t v[5] = {(uint64_t)s->cpu_milli, (uint64_t)s->mem_bytes,
                     (uint64_t)s->num_gpu, (uint64_t)s->gpu_milli, s->models};

    for (int i = 0; i < 5; i++) {
        h ^= v[i];
        h *= 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h;
}

static bool shape_eq(const struct cl_shape *a, const struct cl_shape *b)
{
    return a->cpu_milli == b->cpu_milli && a->mem_bytes == b->mem_bytes &&
           a->num_gpu == b->num_gpu && a->gpu_milli == b->gpu_milli &&
           a->models == b->models;
}

static void tree_pull(struct cl_tree *t, int i)
{
    int l = 2 * i, r = l + 1;

    if (!t->count) {
        t->best[i] = t->best[l] >= t->best[r] ? t->best[l] : t->best[r];
        return;
    }
    if (t->best[l] > t->best[r]) {
        t->best[i] = t->best[l];
        t->count[i] = t->count[l];
    } else if (t->best[r] > t->best[l]) {
        t->best[i] = t->best[r];
        t->count[i] = t->count[r];
    } else {
        t->best[i] = t->best[l];
        t->count[i] = t->count[l] + t->count[r];
    }
}

/* A hash of what an fgd score reads of node 'n': its free CPU and each
 * GPU's free milli and model, in order. */
static uint64_t fgd_state_hash(const struct cl_cluster *c, int n)
{
    const struct cl_node *nd = &c->nodes[n];
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)nd->cpu_free;

    h *= 0xff51afd7ed558ccdULL;
    for (int g = 0; g < nd->ngpus; g++) {
        h ^= (uint64_t)(uint16_t)c->gpu_free[nd->gpu0 + g] |
             (uint64_t)c->gpu_model[nd->gpu0 + g] << 16 | (uint64_t)(g + 1) << 24;
        h *= 0xc4ceb9fe1a85ec53ULL;
        h ^= h >> 33;
    }
    return h ? h : 1;
}

/* The node's score for the tree's shape. Under fgd, nodes in the same
 * state score the same and scoring is costly (the fragmentation model over
 * every typical task), so the tree remembers scores by state: an empty or
 * a full node of each kind is scored once, not once per node. Whether the
 * task fits is always checked on the node itself. */
static bool tree_score(struct cl_cluster *c, struct cl_tree *t, int n, double *sc)
{
    struct cl_memo *e;
    uint64_t h;
    int gpu;

    if (c->policy != SL_PLACE_FGD)
        return cl_score(c, n, &t->shape, sc, &gpu);
    if (cl_fit(c, n, &t->shape) != CL_FITS)
        return false;
    if (!t->memo && !(t->memo = calloc(TREE_MEMO, sizeof(*t->memo))))
        return cl_score(c, n, &t->shape, sc, &gpu);
    h = fgd_state_hash(c, n);
    e = &t->memo[h & (TREE_MEMO - 1)];
    if (e->hash == h && e->cpu_free == c->nodes[n].cpu_free) {
        *sc = e->score;
        return true;
    }
    if (!cl_score(c, n, &t->shape, sc, &gpu))
        return false;
    e->hash = h;
    e->cpu_free = c->nodes[n].cpu_free;
    e->score = *sc;
    return true;
}

static void tree_leaf(struct cl_cluster *c, struct cl_tree *t, int n)
{
    double sc;
    int i = t->leaves + n;

    if (tree_score(c, t, n, &sc)) {
        t->best[i] = sc;
        if (t->count)
            t->count[i] = 1;
    } else {
        t->best[i] = -INFINITY;
        if (t->count)
            t->count[i] = 0;
    }
    t->stamp[n] = c->nodes[n].version;
}

static int tree_build(struct cl_cluster *c, struct cl_tree *t)
{
    bool counts = c->policy == SL_PLACE_RANDOM; /* only random draws among ties */
    int leaves = 1;

    while (leaves < c->nnodes)
        leaves *= 2;
    if (leaves != t->leaves || !t->best || (t->count != NULL) != counts) {
        double *best = realloc(t->best, sizeof(double) * 2 * (size_t)leaves);
        int32_t *count = NULL;
        if (!best)
            return -ENOMEM;
        t->best = best;
        if (!counts) {
            free(t->count);
        } else if (!(count = realloc(t->count, sizeof(int32_t) * 2 * (size_t)leaves))) {
            return -ENOMEM;
        }
        t->count = count;
        t->leaves = leaves;
    }
    if (t->nnodes != c->nnodes || !t->stamp) {
        uint32_t *stamp = realloc(t->stamp, sizeof(uint32_t) *
                                                (size_t)(c->nnodes ? c->nnodes : 1));
        if (!stamp)
            return -ENOMEM;
        t->stamp = stamp;
        t->nnodes = c->nnodes;
    }
    for (int n = 0; n < c->nnodes; n++)
        tree_leaf(c, t, n);
    for (int i = t->leaves + c->nnodes; i < 2 * t->leaves; i++) {
        t->best[i] = -INFINITY;
        if (t->count)
            t->count[i] = 0;
    }
    for (int i = t->leaves - 1; i >= 1; i--)
        tree_pull(t, i);
    t->synced = c->log_pos;
    return 0;
}

/* Replay the change log since the tree last looked. */
static int tree_sync(struct cl_cluster *c, struct cl_tree *t)
{
    uint64_t behind = c->log_pos - t->synced;

    if (t->nnodes != c->nnodes || behind > (uint64_t)c->log_cap ||
        behind > (uint64_t)(c->nnodes / 2 + 8))
        return tree_build(c, t);
    for (uint64_t p = t->synced; p < c->log_pos; p++) {
        int n = c->log[p & (uint64_t)(c->log_cap - 1)];
        if (t->stamp[n] == c->nodes[n].version)
            continue;
        tree_leaf(c, t, n);
        for (int i = (t->leaves + n) / 2; i >= 1; i /= 2) {
            double was = t->best[i];
            int32_t had = t->count ? t->count[i] : 0;
            tree_pull(t, i);
            /* Nothing above changes when this node did not. */
            if (t->best[i] == was && (!t->count || t->count[i] == had))
                break;
        }
    }
    t->synced = c->log_pos;
    return 0;
}

/* The shape's tree, made when missing (evicting the least used one when
 * the budget is spent). NULL on -ENOMEM. */
static struct cl_tree *tree_get(struct cl_cluster *c, const struct cl_shape *s)
{
    uint64_t key = shape_key(s);
    struct cl_tree *t = NULL;

    for (int i = 0; i < c->ntrees; i++)
        if (c->trees[i].key == key && shape_eq(&c->trees[i].shape, s)) {
            t = &c->trees[i];
            break;
        }
    if (!t) {
        if (c->ntrees < c->trees_max) {
            if (sl_grow((void **)&c->trees, &c->trees_cap, c->ntrees + 1,
                     sizeof(*c->trees)) < 0)
                return NULL;
            t = &c->trees[c->ntrees++];
            memset(t, 0, sizeof(*t));
        } else {
            t = &c->trees[0];
            for (int i = 1; i < c->ntrees; i++)
                if (c->trees[i].used < t->used)
                    t = &c->trees[i];
            t->nnodes = -1; /* rebuild, reusing the arrays */
            if (t->memo) /* another shape's scores */
                memset(t->memo, 0, TREE_MEMO * sizeof(*t->memo));
        }
        t->shape = *s;
        t->key = key;
        if (tree_build(c, t) < 0) {
            tree_free(t);
            t->nnodes = -1;
            return NULL;
        }
    } else if (tree_sync(c, t) < 0) {
        return NULL;
    }
    t->used = ++c->clock;
    return t;
}

static int tree_pick(struct cl_cluster *c, const struct cl_tree *t)
{
    int i = 1;

    if (t->leaves == 1)
        return t->best[1] > -INFINITY ? 0 : -1;
    if (!(t->best[1] > -INFINITY))
        return -1;
    while (i < t->leaves) {
        int l = 2 * i, r = l + 1;
        if (t->best[l] > t->best[r])
            i = l;
        else if (t->best[r] > t->best[l])
            i = r;
        else if (c->policy == SL_PLACE_RANDOM &&
                 sl_rng_below(&c->rng, (uint64_t)(t->count[l] + t->count[r])) >=
                     (uint64_t)t->count[l])
            i = r;
        else
            i = l;
    }
    return i - t->leaves;
}

int cl_best_among(struct cl_cluster *c, const struct cl_shape *s,
                  const int *members, int n, int *gpu)
{
    double best = -INFINITY;
    int pick = -1, ties = 0, pick_gpu = -1;

    for (int k = 0; k < n; k++) {
        int ni = members ? members[k] : k, g;
        double sc;
        if (!cl_score(c, ni, s, &sc, &g))
            continue;
        if (pick < 0 || sc > best) {
            best = sc;
            pick = ni;
            pick_gpu = g;
            ties = 1;
        } else if (sc == best && c->policy == SL_PLACE_RANDOM &&
                   sl_rng_below(&c->rng, (uint64_t)++ties) == 0) {
            /* reservoir sampling among equal scores */
            pick = ni;
            pick_gpu = g;
        }
    }
    if (gpu)
        *gpu = pick_gpu;
    return pick;
}

int cl_best(struct cl_cluster *c, const struct cl_shape *s, int *gpu)
{
    struct cl_tree *t;
    int n;

    if (c->nnodes == 0)
        return -1;
    if (!(t = tree_get(c, s)))
        return cl_best_among(c, s, NULL, c->nnodes, gpu); /* no memory: scan */
    if ((n = tree_pick(c, t)) < 0)
        return -1;
    if (gpu)
        *gpu = s->num_gpu == 1 && s->gpu_milli < CL_WHOLE ? cl_choose_gpu(c, n, s)
                                                          : -1;
    return n;
}

/* ---- taking and giving ------------------------------------------------ */

static int task_tag(const struct cl_shape *s)
{
    if (s->num_gpu <= 0)
        return -1;
    return s->gpu_milli < CL_WHOLE ? 0 : s->num_gpu;
}

static void tag_add(struct cl_node *n, int tag, int delta)
{
    int i;

    if (tag < 0)
        return;
    for (i = 0; i < n->ntags; i++)
        if (n->tag[i] == tag)
            break;
    if (i == n->ntags) {
        if (delta < 0 || n->ntags == CL_MAX_TAGS)
            return; /* more kinds than tracked: clustering sees the first */
        n->tag[i] = (uint8_t)tag;
        n->tag_count[i] = 0;
        n->ntags++;
    }
    n->tag_count[i] = (uint16_t)(n->tag_count[i] + delta);
    if (n->tag_count[i] == 0) {
        n->ntags--;
        n->tag[i] = n->tag[n->ntags];
        n->tag_count[i] = n->tag_count[n->ntags];
    }
}

static void gpu_adjust(struct cl_cluster *c, struct cl_node *n, int g, int delta)
{
    int16_t *f = &c->gpu_free[n->gpu0 + g];

    if (*f == CL_WHOLE)
        n->nfull--;
    *f = (int16_t)(*f + delta);
    if (*f == CL_WHOLE)
        n->nfull++;
    n->gpu_free_sum += delta;
}

void cl_take(struct cl_cluster *c, int ni, const struct cl_shape *s, int gpu,
             struct sl_sched_task_place *p)
{
    struct cl_node *n = &c->nodes[ni];
    const uint8_t *m = &c->gpu_model[n->gpu0];

    memset(p, 0, sizeof(*p));
    p->node = ni;
    n->cpu_free -= s->cpu_milli;
    n->mem_free -= s->mem_bytes;
    if (s->num_gpu > 0) {
        p->gpu_milli = s->gpu_milli;
        if (s->gpu_milli < CL_WHOLE) {
            if (gpu < 0 || gpu >= n->ngpus)
                gpu = cl_choose_gpu(c, ni, s);
            p->gpus[p->ngpus++] = gpu;
            gpu_adjust(c, n, gpu, -s->gpu_milli);
        } else {
            for (int g = 0; g < n->ngpus && p->ngpus < s->num_gpu; g++) {
                if (c->gpu_free[n->gpu0 + g] < CL_WHOLE ||
                    (s->models && !(s->models & (1u << m[g]))))
                    continue;
                p->gpus[p->ngpus++] = g;
                gpu_adjust(c, n, g, -CL_WHOLE);
            }
        }
    }
    tag_add(n, task_tag(s), 1);
    cl_touch(c, ni);
}

void cl_give(struct cl_cluster *c, const struct cl_shape *s,
             const struct sl_sched_task_place *p)
{
    struct cl_node *n = &c->nodes[p->node];

    n->cpu_free += s->cpu_milli;
    n->mem_free += s->mem_bytes;
    for (int i = 0; i < p->ngpus; i++)
        gpu_adjust(c, n, p->gpus[i], p->gpu_milli);
    tag_add(n, task_tag(s), -1);
    cl_touch(c, p->node);
}

int cl_take_exact(struct cl_cluster *c, const struct cl_shape *s,
                  const struct sl_sched_task_place *p)
{
    struct cl_node *n;

    if (p->node < 0 || p->node >= c->nnodes)
        return -EINVAL;
    n = &c->nodes[p->node];
    if (p->ngpus < 0 || p->ngpus > n->ngpus || p->gpu_milli < 0 ||
        p->gpu_milli > CL_WHOLE)
        return -EINVAL;
    for (int i = 0; i < p->ngpus; i++) {
        if (p->gpus[i] < 0 || p->gpus[i] >= n->ngpus ||
            c->gpu_free[n->gpu0 + p->gpus[i]] < p->gpu_milli)
            return -EINVAL;
        for (int k = 0; k < i; k++)
            if (p->gpus[k] == p->gpus[i])
                return -EINVAL;
    }
    /* CPU and memory may be overcommitted by an adoption (a node that
     * shrank across a restart): the job runs already. */
    n->cpu_free -= s->cpu_milli;
    n->mem_free -= s->mem_bytes;
    for (int i = 0; i < p->ngpus; i++)
        gpu_adjust(c, n, p->gpus[i], -p->gpu_milli);
    tag_add(n, task_tag(s), 1);
    cl_touch(c, p->node);
    return 0;
}
