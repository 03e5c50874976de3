/*
 * cluster.h - the scheduler's model of the cluster and its placement engine
 * (internal to src/sched; sched.h is the public interface).
 *
 * A cluster holds nodes (CPU, memory, GPUs each with a model and free
 * milli-GPU), the GPU model names, the placement policy and, per task
 * shape, an index that answers "the best node for one task of this shape"
 * without scoring every node again:
 *
 *   - a tournament tree over the nodes holds each node's score for the
 *     shape (-inf where the task does not fit); its root is the best node,
 *     the lowest-indexed one among equal scores. Under the random policy
 *     the tree also counts the leaves that share the best score, so that
 *     it draws one of the fitting nodes uniformly in O(log n);
 *   - every change to a node bumps its version and appends it to a change
 *     log; a tree replays the log since it last looked, rescoring only the
 *     nodes that changed (or rebuilds when it is far behind). A decision
 *     after one placement therefore costs one score and O(log n) per shape
 *     that is asked, not one score per node.
 *
 * Scores come from the policy (policy.c): for a node and a shape, whether
 * the task fits and how good the fit is (higher is better), and which GPU a
 * fractional task would take. The policies are those of the FGD paper's
 * reference simulator (random, dotprod, clustering, packing, bestfit, fgd)
 * and spread.
 *
 * Units: cpu_milli, mem_bytes, gpu milli (1000 = one GPU).
 * Not thread-safe: one thread owns a cluster.
 */
#ifndef SL_SCHED_CLUSTER_H
#define SL_SCHED_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/rng.h"
#include "sched.h"

#define CL_WHOLE 1000
#define CL_MAX_TAGS 6    /* distinct GPU-task kinds counted per node */
#define CL_NO_TREE (-1)

/* One task's request, the unit placement works on. */
struct cl_shape {
    int64_t cpu_milli;
    int64_t mem_bytes;
    int num_gpu;         /* GPUs per task: 0, or 1.. with milli 1000, or 1
                            with milli < 1000 (a fraction) */
    int gpu_milli;       /* per GPU: 0 when num_gpu == 0 */
    uint32_t models;     /* allowed GPU models (bit per model id); 0 = any */
};

struct cl_node {
    int64_t cpu_total, cpu_free;
    int64_t mem_total, mem_free;
    int32_t gpu0;        /* first GPU in cluster->gpu_free/gpu_model */
    int16_t ngpus;
    int16_t nfull;       /* GPUs with 1000 milli free */
    int32_t gpu_free_sum;/* milli free over the node's GPUs */
    uint32_t version;    /* bumped on every change */
    int32_t domain;      /* index into cluster->domains, -1 = none */
    int32_t name;        /* offset into cluster->names */
    bool schedulable;
    uint32_t model_mask; /* models present on the node */
    uint8_t ntags;       /* GPU-task kinds present (clustering) */
    uint8_t tag[CL_MAX_TAGS];
    uint16_t tag_count[CL_MAX_TAGS];
    uint32_t frag_version;/* version + 1 when 'frag' is current, else 0 */
    double frag;         /* cached fragmentation (fgd) */
};

/* A typical task for the fragmentation model: a shape and its share of
 * the workload (weights sum to 1). */
struct cl_typical {
    int64_t cpu_milli;
    int num_gpu;
    int gpu_milli;
    uint32_t models;
    double weight;
};

struct cl_frag_group;    /* policy.c: typical tasks grouped by GPU demand */

struct cl_domain {       /* a topology domain (NVLink domain, rack) */
    char *name;          /* owned */
    int *nodes;          /* its members, by index */
    int nnodes, cap;
};

struct cl_memo {         /* an fgd score by node state (cluster.c) */
    uint64_t hash;
    int64_t cpu_free;
    double score;
};

struct cl_tree {         /* one shape's index; see the file comment */
    struct cl_shape shape;
    uint64_t key;        /* hash of the shape */
    uint64_t synced;     /* change-log position replayed so far */
    uint64_t used;       /* last use, for eviction */
    double *best;        /* 2 * leaves: best score in each subtree */
    int32_t *count;      /* random only (else NULL): 2 * leaves, leaves
                            sharing that score */
    uint32_t *stamp;     /* per node: version the leaf was scored at */
    int leaves;          /* power of two >= nodes */
    int nnodes;          /* nodes covered when built */
    struct cl_memo *memo;/* fgd: scores by node state, or NULL */
};

struct cl_cluster {
    struct cl_node *nodes;
    int nnodes, nodes_cap;
    int16_t *gpu_free;   /* milli free, per GPU of every node */
    uint8_t *gpu_model;  /* model id, per GPU */
    int ngpus, gpus_cap;
    char *names;         /* node names, NUL-separated */
    size_t names_len, names_cap;
    struct cl_domain *domains;
    int ndomains, domains_cap;
    char models[SL_SCHED_MAX_MODELS][48];
    int nmodels;

    enum sl_placement policy;
    struct sl_rng rng;

    /* change log: node indices, positions counted from 0 forever */
    bool no_log;         /* a scratch copy: no log, no indexes */
    int32_t *log;
    uint64_t log_pos;
    int log_cap;         /* power of two */

    struct cl_tree *trees;
    int ntrees, trees_cap, trees_max;
    uint64_t clock;      /* use counter for tree eviction */

    /* fragmentation model (fgd) */
    struct cl_typical *typical;
    int ntypical;
    struct cl_frag_group *groups;
    int ngroups;
    double frag_cpu_weight; /* weight of CPU-only typical tasks */
};

int cl_init(struct cl_cluster *c, enum sl_placement policy, uint64_t seed);
void cl_fini(struct cl_cluster *c);
/* Change the policy; drops every index. */
void cl_set_policy(struct cl_cluster *c, enum sl_placement policy);

/* Model id for 'name' (case-insensitive), adding it when 'add'. Returns
 * 0..SL_SCHED_MAX_MODELS-1, -ENOENT (unknown, !add) or -ENOSPC. */
int cl_model(struct cl_cluster *c, const char *name, bool add);

/* Add a node. gpu_models[i] is the model id of GPU i. Returns its index or
 * -ENOMEM / -EINVAL. */
int cl_node_add(struct cl_cluster *c, const char *name, const char *domain,
                int64_t cpu_milli, int64_t mem_bytes, int ngpus,
                const int *gpu_models);
void cl_node_schedulable(struct cl_cluster *c, int node, bool on);
const char *cl_node_name(const struct cl_cluster *c, int node);
const char *cl_node_domain(const struct cl_cluster *c, int node);

/* How many tasks of 's' node 'n' could take now, at most 'max' (0 when
 * one does not fit): no change is made. */
int cl_capacity(const struct cl_cluster *c, int n, const struct cl_shape *s, int max);

/* Whether one task of 's' fits node 'n' now, and if not, why. */
enum cl_reject {
    CL_FITS,
    CL_UNSCHEDULABLE,
    CL_MODEL,        /* no GPU of an allowed model */
    CL_GPUS,         /* not enough GPUs (whole, or with the fraction free) */
    CL_CPU,
    CL_MEM,
    CL_NREJECT,
};
enum cl_reject cl_fit(const struct cl_cluster *c, int n,
                      const struct cl_shape *s);

/* The best node for one task of 's' under the policy, or -1 when it fits
 * nowhere. Uses (and builds) the shape's index. Returns -ENOMEM only when
 * neither an index nor a scan could be done (never: a scan needs no
 * memory); *gpu receives the GPU a fraction would take. */
int cl_best(struct cl_cluster *c, const struct cl_shape *s, int *gpu);
/* The same among the nodes listed in members[0..n) only (a domain, or a
 * single node), by scanning them. */
int cl_best_among(struct cl_cluster *c, const struct cl_shape *s,
                  const int *members, int n, int *gpu);

/* Take one task of 's' off node 'n' ('gpu' as cl_best chose it, or -1 to
 * let the policy choose). The task must fit. Fills 'p'. */
void cl_take(struct cl_cluster *c, int n, const struct cl_shape *s, int gpu,
             struct sl_sched_task_place *p);
/* Give back what 'p' took for shape 's'. */
void cl_give(struct cl_cluster *c, const struct cl_shape *s,
             const struct sl_sched_task_place *p);
/* Take exactly what 'p' names (adopting a running task). Returns 0, or
 * -EINVAL when it does not fit (nothing taken). */
int cl_take_exact(struct cl_cluster *c, const struct cl_shape *s,
                  const struct sl_sched_task_place *p);

/* The fragmentation model for fgd: replaces the typical tasks (weights
 * are normalised here). Drops every index. Returns 0 or -ENOMEM. */
int cl_set_typical(struct cl_cluster *c, const struct cl_typical *t, int n);
/* Fragmented GPU milli of node 'n' under the model (FGD's F_n(M)). */
double cl_node_frag(const struct cl_cluster *c, int n);

/* Score of node 'n' for 's' (policy.c); false when the task does not fit.
 * *gpu receives the GPU a fraction would take (-1 otherwise). */
bool cl_score(struct cl_cluster *c, int n, const struct cl_shape *s,
              double *score, int *gpu);
/* The GPU a fraction of 's' takes on node 'n' under the policy. */
int cl_choose_gpu(struct cl_cluster *c, int n, const struct cl_shape *s);

/* Mark node 'n' changed (cl_take/cl_give do it). */
void cl_touch(struct cl_cluster *c, int n);

#endif
