/*
 * typical.c - FGD's typical tasks: the task shapes seen in submissions,
 * decayed, and the model the placement engine scores fragmentation with
 * (the most common shapes covering 95 % of the submissions).
 *
 * The model is recomputed every TYPICAL_EVERY submissions and replaced
 * only when it moved by more than TYPICAL_DRIFT, since a new model
 * rescores every node. A model set by the caller (sl_sched_set_typical)
 * is never replaced by a learnt one.
 */
#include "sched_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define TYPICAL_COVER 0.95
#define TYPICAL_EVERY 512          /* submissions between model updates */
#define TYPICAL_DRIFT 0.05         /* ... which replace it past this change */
#define TSHAPES_MAX 4096

static bool shape_same(const struct cl_shape *a, const struct cl_shape *b)
{
    return a->cpu_milli == b->cpu_milli && a->num_gpu == b->num_gpu &&
           a->gpu_milli == b->gpu_milli && a->models == b->models;
}

static int tshape_cmp(const void *a, const void *b)
{
    const struct tshape *x = a, *y = b;

    return (x->weight < y->weight) - (x->weight > y->weight);
}

/* Whether the model 't' (weights not normalised) is the cluster's with
 * the same tasks and weights within TYPICAL_DRIFT in total variation. */
static bool typical_close(const struct cl_cluster *c, const struct cl_typical *t, int n)
{
    double total = 0, tv = 0;

    if (n != c->ntypical || n == 0)
        return false;
    for (int i = 0; i < n; i++)
        total += t[i].weight > 0 ? t[i].weight : 0;
    if (!(total > 0))
        return false;
    for (int i = 0; i < n; i++) {
        int k;
        for (k = 0; k < n; k++)
            if (c->typical[k].cpu_milli == t[i].cpu_milli &&
                c->typical[k].num_gpu == t[i].num_gpu &&
                c->typical[k].gpu_milli == t[i].gpu_milli &&
                c->typical[k].models == t[i].models)
                break;
        if (k == n)
            return false;
        tv += fabs(c->typical[k].weight - (t[i].weight > 0 ? t[i].weight : 0) / total);
    }
    return tv / 2 < TYPICAL_DRIFT;
}

/* Recompute the typical tasks from the shapes seen: the most common ones
 * covering 95 % of the (decayed) submissions. A model that barely moved
 * is kept, since a new one rescores every node for every shape. */
static void typical_update(struct sl_sched *s)
{
    struct cl_typical t[256];
    double cum = 0;
    int n = 0;

    if (s->ntshapes == 0)
        return;
    qsort(s->tshapes, (size_t)s->ntshapes, sizeof(*s->tshapes), tshape_cmp);
    for (int i = 0; i < s->ntshapes && n < (int)SL_ARRAY_LEN(t) &&
                    cum < TYPICAL_COVER * s->tshape_total;
         i++) {
        t[n].cpu_milli = s->tshapes[i].shape.cpu_milli;
        t[n].num_gpu = s->tshapes[i].shape.num_gpu;
        t[n].gpu_milli = s->tshapes[i].shape.gpu_milli;
        t[n].models = s->tshapes[i].shape.models;
        t[n].weight = s->tshapes[i].weight;
        cum += s->tshapes[i].weight;
        n++;
    }
    s->since_typical = 0;
    if (typical_close(&s->cl, t, n))
        return; /* the indexes stay: rescoring every node is not worth it */
    cl_set_typical(&s->cl, t, n); /* on -ENOMEM the old model stays */
}

void sl_sch_typical_learn(struct sl_sched *s, const struct cl_shape *sh, int tasks)
{
    int i;

    if (s->typical_fixed)
        return;
    for (i = 0; i < s->ntshapes; i++)
        if (shape_same(&s->tshapes[i].shape, sh))
            break;
    if (i == s->ntshapes) {
        if (s->ntshapes == TSHAPES_MAX ||
            sl_grow((void **)&s->tshapes, &s->tshapes_cap, s->ntshapes + 1,
                 sizeof(*s->tshapes)) < 0)
            return;
        s->tshapes[i].shape = *sh;
        s->tshapes[i].weight = 0;
        s->ntshapes++;
    }
    s->tshapes[i].weight += tasks;
    s->tshape_total += tasks;
    if (s->tshape_total > 1e6) {
        /* decay: halve, and forget shapes that fell to nothing */
        int keep = 0;
        s->tshape_total = 0;
        for (int k = 0; k < s->ntshapes; k++) {
            s->tshapes[k].weight /= 2;
            if (s->tshapes[k].weight >= 0.5) {
                s->tshapes[keep++] = s->tshapes[k];
                s->tshape_total += s->tshapes[k].weight;
            }
        }
        s->ntshapes = keep;
    }
    if (s->cl.ntypical == 0 || ++s->since_typical >= TYPICAL_EVERY)
        typical_update(s);
}

int sl_sched_set_typical(struct sl_sched *s, const struct sl_sched_typical *t, int n)
{
    struct cl_typical *ct = n > 0 ? calloc((size_t)n, sizeof(*ct)) : NULL;
    int rc;

    if (n > 0 && !ct)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        ct[i].cpu_milli = t[i].cpu_milli;
        ct[i].num_gpu = t[i].gpus;
        ct[i].gpu_milli = t[i].gpus ? t[i].gpu_milli : 0;
        ct[i].models = t[i].models;
        ct[i].weight = t[i].weight;
    }
    rc = cl_set_typical(&s->cl, ct, n);
    free(ct);
    if (rc == 0)
        s->typical_fixed = true;
    return rc;
}

void sl_sched_frag(const struct sl_sched *s, double *frag, double *idle)
{
    *frag = *idle = 0;
    for (int i = 0; i < s->cl.nnodes; i++) {
        *frag += cl_node_frag(&s->cl, i);
        *idle += s->cl.nodes[i].gpu_free_sum;
    }
}
