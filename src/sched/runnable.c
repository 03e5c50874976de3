/*
 * runnable.c - whether a job could ever run: its request against the
 * cluster as if every node were empty, and against the most its queue
 * could ever hold (its per-user limit, its nominal quota plus what it may
 * borrow while every other queue of its cohort is idle, per GPU model).
 *
 * What no change in usage can fix is refused at submission, as sbatch
 * refuses a request no node configuration satisfies
 * (sl_sched_job_runnable), and a job already waiting when the cluster or
 * the limits changed is explained as "cannot run" (sl_sch_cannot_run)
 * rather than as something others should release. The checks read the
 * same limits as quota.c and the same node capacities as placement, so
 * that a job accepted here can run once others release what they hold.
 * Nothing here changes state.
 */
#include "sched_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const dim_field[] = {
    [SL_DIM_CPU] = "spec.resources.cpus",
    [SL_DIM_MEM] = "spec.resources.memory",
    [SL_DIM_GPU] = "spec.resources.gpus",
};

/* Tasks of shape 'sh' that node 'ni' could take were it empty, at most
 * 'max'. */
static int empty_capacity(const struct cl_cluster *c, int ni, const struct cl_shape *sh,
                          int max)
{
    const struct cl_node *n = &c->nodes[ni];
    int64_t k = max;

    if (sh->cpu_milli > 0 && n->cpu_total / sh->cpu_milli < k)
        k = n->cpu_total / sh->cpu_milli;
    if (sh->mem_bytes > 0 && n->mem_total / sh->mem_bytes < k)
        k = n->mem_total / sh->mem_bytes;
    if (sh->num_gpu > 0) {
        const uint8_t *m = &c->gpu_model[n->gpu0];
        int64_t slots = 0;
        for (int g = 0; g < n->ngpus; g++)
            if (!sh->models || (sh->models & (1u << m[g])))
                slots += sh->gpu_milli >= CL_WHOLE ? 1 : CL_WHOLE / sh->gpu_milli;
        if (sh->gpu_milli >= CL_WHOLE)
            slots /= sh->num_gpu;
        if (slots < k)
            k = slots;
    }
    return (int)k;
}

/* The GPU models of the nodes counted, as bits; their largest GPU count
 * (of the models in 'mask', 0 = any), CPU and memory. */
struct largest {
    uint32_t models;
    int gpus;
    int64_t cpu, mem;
};

static void largest_node(const struct cl_cluster *c, bool only_sched, uint32_t mask,
                         struct largest *l)
{
    memset(l, 0, sizeof(*l));
    for (int ni = 0; ni < c->nnodes; ni++) {
        const struct cl_node *n = &c->nodes[ni];
        int g = 0;
        if (only_sched && !n->schedulable)
            continue;
        l->models |= n->model_mask;
        for (int i = 0; i < n->ngpus; i++)
            g += !mask || (mask & (1u << c->gpu_model[n->gpu0 + i]));
        if (g > l->gpus)
            l->gpus = g;
        if (n->cpu_total > l->cpu)
            l->cpu = n->cpu_total;
        if (n->mem_total > l->mem)
            l->mem = n->mem_total;
    }
}

/* "A100|H100" of the models in 'mask'. */
static void model_names(const struct cl_cluster *c, uint32_t mask, char *buf, size_t size)
{
    size_t o = 0;

    buf[0] = '\0';
    for (int m = 0; m < c->nmodels && o < size; m++)
        if (mask & (1u << m))
            o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? "|" : "", c->models[m]);
}

/* The id of GPU model 'name' (any case), or -1 when unknown. */
static int model_find(const struct cl_cluster *c, const char *name)
{
    for (int m = 0; m < c->nmodels; m++)
        if (strcasecmp(c->models[m], name) == 0)
            return m;
    return -1;
}

/* Why one task of 'j' fits no node even empty; false when one does. */
static bool task_too_big(const struct sl_sched *s, const struct job *j, bool only_sched,
                         char *buf, size_t size, const char **field)
{
    const struct cl_cluster *c = &s->cl;
    struct largest l;
    char a[64], b[64], names[160];

    largest_node(c, only_sched, j->shape.models, &l);
    if (j->shape.num_gpu > 0 && !(l.models & (j->shape.models ? j->shape.models : ~0u))) {
        *field = "spec.resources.gpuModels";
        if (!l.models) {
            snprintf(buf, size, "cannot run: it asks for GPUs and no node has one");
            *field = j->shape.gpu_milli < CL_WHOLE ? "spec.resources.gpuMilli"
                                                   : "spec.resources.gpus";
        } else {
            model_names(c, j->shape.models, a, sizeof(a));
            model_names(c, l.models, names, sizeof(names));
            snprintf(buf, size, "cannot run: no node has a GPU of model %s (the models "
                                "here: %s)", a, names);
        }
        return true;
    }
    if (j->shape.num_gpu > l.gpus && j->shape.gpu_milli >= CL_WHOLE) {
        *field = "spec.resources.gpus";
        model_names(c, j->shape.models, names, sizeof(names));
        snprintf(buf, size, "cannot run: %d GPUs per task, the largest node has %d%s%s",
                 j->shape.num_gpu, l.gpus, j->shape.models ? " of model " : "",
                 j->shape.models ? names : "");
    } else if (j->shape.cpu_milli > l.cpu) {
        *field = "spec.resources.cpus";
        snprintf(buf, size, "cannot run: %s per task, the largest node has %s",
                 sl_sch_fmt_amount(s, SL_DIM_CPU, j->shape.cpu_milli, a, sizeof(a)),
                 sl_sch_fmt_amount(s, SL_DIM_CPU, l.cpu, b, sizeof(b)));
    } else if (j->shape.mem_bytes > l.mem) {
        *field = "spec.resources.memory";
        snprintf(buf, size, "cannot run: %s per task, the largest node has %s",
                 sl_sch_fmt_amount(s, SL_DIM_MEM, j->shape.mem_bytes, a, sizeof(a)),
                 sl_sch_fmt_amount(s, SL_DIM_MEM, l.mem, b, sizeof(b)));
    } else {
        *field = "spec.resources";
        sl_sch_fmt_task(s, j, names, sizeof(names));
        snprintf(buf, size, "cannot run: no node has all of %s", names);
    }
    return true;
}

/* Why the nodes counted cannot take 'j' even empty; false when they can. */
static bool cannot_fit(const struct sl_sched *s, const struct job *j, bool only_sched,
                       char *buf, size_t size, const char **field)
{
    const struct cl_cluster *c = &s->cl;
    int total = 0, best = 0, best_dom = 0;
    char task[160];

    for (int n = 0; n < c->nnodes; n++) {
        int k;
        if (only_sched && !c->nodes[n].schedulable)
            continue;
        k = empty_capacity(c, n, &j->shape, j->tasks);
        total = total + k > j->tasks ? j->tasks : total + k;
        if (k > best)
            best = k;
    }
    if (best == 0)
        return task_too_big(s, j, only_sched, buf, size, field);
    if (j->tasks == 1)
        return false;
    sl_sch_fmt_task(s, j, task, sizeof(task));
    if (j->topology == SL_TOPO_SAME_NODE && best < j->tasks) {
        *field = "spec.tasks";
        snprintf(buf, size, "cannot run: %d tasks of %s on one node (topology same-node), "
                            "the largest node takes %d",
                 j->tasks, task, best);
        return true;
    }
    if (j->topology == SL_TOPO_SAME_DOMAIN) {
        for (int d = 0; d < c->ndomains; d++) {
            const struct cl_domain *dm = &c->domains[d];
            int k = 0;
            for (int i = 0; i < dm->nnodes && k < j->tasks; i++)
                if (!only_sched || c->nodes[dm->nodes[i]].schedulable)
                    k += empty_capacity(c, dm->nodes[i], &j->shape, j->tasks - k);
            if (k > best_dom)
                best_dom = k;
        }
        if (best_dom < j->tasks) {
            *field = "spec.tasks";
            snprintf(buf, size, "cannot run: %d tasks of %s in one domain (topology "
                                "same-domain), the largest domain takes %d",
                     j->tasks, task, best_dom);
            return true;
        }
    }
    if (total < j->tasks) {
        *field = "spec.tasks";
        snprintf(buf, size, "cannot run: %d tasks of %s, the whole cluster takes %d",
                 j->tasks, task, total);
        return true;
    }
    return false;
}

/* The most queue 'qi' may ever hold of dimension 'd' (INT64_MAX: no
 * limit): its nominal quota, plus, in a cohort, what it may borrow
 * (its borrowing limit, and what the others lend while idle: quota.c's
 * dim_ok with every other queue's usage at 0). 'why' says which bound. */
static int64_t queue_ceiling(const struct sl_sched *s, int qi, int d, const char **why)
{
    const struct queue *q = &s->queues[qi];
    int64_t nom = q->nominal.v[d], pool, cap;

    if (nom < 0)
        return INT64_MAX;
    if (q->cohort < 0) {
        *why = "its nominal quota; it is in no cohort to borrow from";
        return nom;
    }
    pool = nom;
    for (int k = 0; k < s->cohorts[q->cohort].nqueues; k++) {
        int oi = s->cohorts[q->cohort].queues[k];
        const struct queue *o = &s->queues[oi];
        int64_t onom = o->nominal.v[d];
        if (oi == qi || onom < 0)
            continue;
        pool += o->lend.v[d] >= 0 && o->lend.v[d] < onom ? o->lend.v[d] : onom;
    }
    cap = q->borrow.v[d] >= 0 ? nom + q->borrow.v[d] : INT64_MAX;
    *why = cap <= pool ? "its nominal quota plus its borrowing limit"
                      : "its nominal quota plus all that the other queues of its cohort "
                        "lend";
    return cap <= pool ? cap : pool;
}

/* Why no limit of its queue ever admits 'j'; false when one could. */
static bool over_limits(const struct sl_sched *s, const struct job *j, char *buf,
                        size_t size, const char **field)
{
    const struct queue *q = &s->queues[j->queue];
    int64_t req[NDIMS];
    uint32_t want, ok = 0;
    const char *why = "";
    char a[64], b[64];

    if (s->classes[j->pclass].opportunistic)
        return false;
    job_request(j, req);
    for (int d = SL_DIM_CPU; d <= SL_DIM_GPU; d++) {
        int64_t ceil;
        if (req[d] == 0)
            continue;
        *field = dim_field[d];
        if (d == SL_DIM_GPU && j->shape.gpu_milli < CL_WHOLE)
            *field = "spec.resources.gpuMilli";
        if (q->ulimit.v[d] >= 0 && req[d] > q->ulimit.v[d]) {
            char c[64];
            snprintf(buf, size, "cannot run: it needs %s, over the per-user limit of "
                                "queue %s (%s) by %s",
                     sl_sch_fmt_amount(s, d, req[d], a, sizeof(a)), q->name,
                     sl_sch_fmt_amount(s, d, q->ulimit.v[d], b, sizeof(b)),
                     sl_sch_fmt_amount(s, d, req[d] - q->ulimit.v[d], c, sizeof(c)));
            return true;
        }
        if (req[d] > (ceil = queue_ceiling(s, j->queue, d, &why))) {
            char c[64];
            snprintf(buf, size, "cannot run: it needs %s, and queue %s may never hold "
                                "more than %s (%s): over by %s",
                     sl_sch_fmt_amount(s, d, req[d], a, sizeof(a)), q->name,
                     sl_sch_fmt_amount(s, d, ceil, b, sizeof(b)), why,
                     sl_sch_fmt_amount(s, d, req[d] - ceil, c, sizeof(c)));
            return true;
        }
    }
    if (req[SL_DIM_GPU] == 0 || s->cl.nmodels == 0)
        return false;
    /* a model is possible when the whole GPU demand fits its limits */
    want = j->shape.models ? j->shape.models
                           : (s->cl.nmodels >= 32 ? UINT32_MAX : (1u << s->cl.nmodels) - 1);
    for (int m = 0; m < s->cl.nmodels; m++) {
        int d = SL_DIM_MODEL0 + m;
        if ((want & (1u << m)) && req[SL_DIM_GPU] <= queue_ceiling(s, j->queue, d, &why) &&
            (q->ulimit.v[d] < 0 || req[SL_DIM_GPU] <= q->ulimit.v[d]))
            ok |= 1u << m;
    }
    if (ok)
        return false;
    model_names(&s->cl, want, b, sizeof(b));
    *field = j->shape.models ? "spec.resources.gpuModels" : "spec.resources.gpus";
    snprintf(buf, size, "cannot run: it needs %s, more than the GPU model quotas of queue "
                        "%s allow of any of %s",
             sl_sch_fmt_amount(s, SL_DIM_GPU, req[SL_DIM_GPU], a, sizeof(a)), q->name, b);
    return true;
}

int sl_sch_cannot_run(const struct sl_sched *s, const struct job *j, bool schedulable_only,
                      char *buf, size_t size, const char **field)
{
    const char *f = NULL;
    int rc = 0;

    buf[0] = '\0';
    /* with no node known yet (an executor still reading its inventory),
     * only the limits say anything */
    if (s->cl.nnodes > 0 && cannot_fit(s, j, schedulable_only, buf, size, &f))
        rc = -E2BIG;
    else if (over_limits(s, j, buf, size, &f))
        rc = -EDQUOT;
    if (field)
        *field = f;
    return rc;
}

int sl_sched_job_runnable(const struct sl_sched *s, const struct sl_sched_job_spec *sp,
                          struct sl_error *why)
{
    struct job j;
    const char *field = NULL;
    char text[sizeof(why->text)];
    int rc;

    if (sp->queue < 0 || sp->queue >= s->nqueues || sp->pclass < 0 ||
        sp->pclass >= s->nclasses || sp->tasks < 1 || sp->tasks > SL_MAX_TASKS ||
        sp->gpus < 0 || sp->gpus > SL_SCHED_MAX_GPUS || sp->gpu_milli < 0 ||
        sp->gpu_milli > CL_WHOLE || sp->cpu_milli < 0 || sp->mem_bytes < 0)
        return sl_errorf(why, -EINVAL, "job spec out of range");
    memset(&j, 0, sizeof(j));
    j.tasks = sp->tasks;
    j.queue = (int16_t)sp->queue;
    j.pclass = (int16_t)sp->pclass;
    j.topology = (uint8_t)sp->topology;
    shape_of_spec(sp, &j.shape);
    for (int i = 0; sp->gpu_models && sp->gpu_models[i]; i++) {
        /* a model no node has ever had is refused by name: it would
         * otherwise take one of the scheduler's SL_SCHED_MAX_MODELS ids */
        int m = model_find(&s->cl, sp->gpu_models[i]);
        if (m < 0 && s->cl.nnodes > 0) {
            struct largest l;
            char names[160];
            largest_node(&s->cl, false, 0, &l);
            model_names(&s->cl, l.models, names, sizeof(names));
            return sl_errorf_field(why, -E2BIG, "spec.resources.gpuModels",
                                   "cannot run: no node has a GPU of model %s (the models "
                                   "here: %s)",
                                   sp->gpu_models[i], l.models ? names : "none");
        }
        if (m >= 0)
            j.shape.models |= 1u << m;
    }
    if ((rc = sl_sch_cannot_run(s, &j, false, text, sizeof(text), &field)) < 0)
        return field ? sl_errorf_field(why, rc, field, "%s", text)
                     : sl_errorf(why, rc, "%s", text);
    return 0;
}
