/*
 * place.c - placing a whole job: every task or none, a gang bound to one
 * node or one domain where all its tasks fit, and the fill mode's single
 * placement. One task's node comes from the placement engine (cluster.h).
 *
 * Invariant: a placement that fails leaves the cluster as it found it.
 */
#include "sched_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- placement of a whole job ------------------------------------------ */

/* A gang bound to a node or a domain: how many of its tasks each node
 * could take is counted without placing anything (cl_capacity), and the
 * tasks are placed only where they all fit. */

/* Same node: the best node (by one task's score) that takes them all. */
static bool place_same_node(struct cl_cluster *c, const struct job *j,
                            const struct cl_shape *sh, struct sl_sched_task_place *pl,
                            int *fit)
{
    double best_sc = -INFINITY;
    int best = -1;

    for (int n = 0; n < c->nnodes; n++) {
        double sc;
        int gpu, k = cl_capacity(c, n, sh, j->tasks);
        if (k > *fit)
            *fit = k;
        if (k < j->tasks || !cl_score(c, n, sh, &sc, &gpu))
            continue;
        if (best < 0 || sc > best_sc) {
            best = n;
            best_sc = sc;
        }
    }
    if (best < 0)
        return false;
    for (int t = 0; t < j->tasks; t++)
        cl_take(c, best, sh, -1, &pl[t]);
    *fit = j->tasks;
    return true;
}

/* Same domain: the fullest domain that holds the gang, so that empty
 * domains stay whole for the big gangs; each task on its best node there. */
static bool place_same_domain(struct cl_cluster *c, const struct job *j,
                              const struct cl_shape *sh, struct sl_sched_task_place *pl,
                              int *fit)
{
    int64_t best_free = INT64_MAX;
    int best = -1;

    for (int d = 0; d < c->ndomains; d++) {
        const struct cl_domain *dm = &c->domains[d];
        int64_t freeg = 0;
        int k = 0;
        for (int i = 0; i < dm->nnodes && k < j->tasks; i++)
            k += cl_capacity(c, dm->nodes[i], sh, j->tasks - k);
        if (k > *fit)
            *fit = k;
        if (k < j->tasks)
            continue;
        for (int i = 0; i < dm->nnodes; i++)
            freeg += c->nodes[dm->nodes[i]].gpu_free_sum;
        if (freeg < best_free) {
            best = d;
            best_free = freeg;
        }
    }
    if (best < 0)
        return false;
    for (int t = 0; t < j->tasks; t++) {
        const struct cl_domain *dm = &c->domains[best];
        int gpu, n = cl_best_among(c, sh, dm->nodes, dm->nnodes, &gpu);
        cl_take(c, n, sh, gpu, &pl[t]); /* n >= 0: the count says so */
    }
    *fit = j->tasks;
    return true;
}

bool sl_sch_place_on(struct cl_cluster *c, const struct job *j,
                     uint32_t models, bool scan, struct sl_sched_task_place *pl,
                     int *fit)
{
    struct cl_shape sh = j->shape;
    int t = 0;

    sh.models = models;
    *fit = 0;
    if (j->topology == SL_TOPO_SAME_NODE && j->tasks > 1)
        return place_same_node(c, j, &sh, pl, fit);
    if (j->topology == SL_TOPO_SAME_DOMAIN && j->tasks > 1)
        return place_same_domain(c, j, &sh, pl, fit);
    /* anywhere: each task on the best node for it, as the tasks before it
     * left the cluster */
    for (t = 0; t < j->tasks; t++) {
        int gpu, n = scan ? cl_best_among(c, &sh, NULL, c->nnodes, &gpu)
                          : cl_best(c, &sh, &gpu);
        if (n < 0)
            break;
        cl_take(c, n, &sh, gpu, &pl[t]);
    }
    *fit = t;
    if (t == j->tasks)
        return true;
    for (int u = t - 1; u >= 0; u--)
        cl_give(c, &sh, &pl[u]);
    return false;
}

bool sl_sch_place_try(struct sl_sched *s, const struct job *j, uint32_t models, int *fit)
{
    struct sl_sched_task_place *pl = malloc(sizeof(*pl) * (size_t)j->tasks);
    bool placed;

    *fit = 0;
    if (!pl)
        return false;
    placed = sl_sch_place_on(&s->cl, j, models, false, pl, fit);
    if (placed)
        for (int t = j->tasks - 1; t >= 0; t--)
            cl_give(&s->cl, &j->shape, &pl[t]);
    free(pl);
    return placed;
}

/* ---- fill mode --------------------------------------------------------- */

int sl_sched_place_now(struct sl_sched *s, const struct sl_sched_job_spec *sp,
                       struct sl_sched_task_place *tasks)
{
    struct job tmp;
    int fit;

    memset(&tmp, 0, sizeof(tmp));
    tmp.tasks = sp->tasks < 1 ? 1 : sp->tasks;
    tmp.topology = (uint8_t)sp->topology;
    shape_of_spec(sp, &tmp.shape);
    for (int i = 0; sp->gpu_models && sp->gpu_models[i]; i++) {
        int m = sl_sched_model(s, sp->gpu_models[i]);
        if (m >= 0)
            tmp.shape.models |= 1u << m;
    }
    return sl_sch_place_on(&s->cl, &tmp, tmp.shape.models, false, tasks, &fit) ? 1 : 0;
}
