/*
 * fill.c - fill mode of `sluice sim`: the FGD paper's protocol. See sim.h.
 *
 * The typical tasks of the fragmentation model are the workload's most
 * common (CPU, GPU count, GPU share, allowed models) shapes that together
 * cover 95 % of its pods, CPU-only pods included, each weighted by its
 * count and renormalised, as in the reference simulator. Fragmentation
 * ratio = fragmented / idle GPU milli over the whole cluster.
 *
 * The alloc curve follows the independent checker: point k is the
 * allocation ratio when the arrived GPU demand first reaches k % of
 * capacity; points the run ends short of, by less than half a percent,
 * take the final ratio.
 */
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "../sched/sched.h"
#include "../util/rng.h"
#include "simint.h"
#include "trace.h"

#define TYPICAL_COVER 0.95
#define CURVE_MAX 130

struct pod {
    struct sl_sched_job_spec spec;
    int64_t demand;      /* num_gpu * gpu_milli */
    const char *name;    /* borrowed from the trace */
};

/* ---- typical tasks ---------------------------------------------------- */

struct tkey {
    struct sl_sched_typical t;
    long count;
};

static int tkey_cmp(const void *a, const void *b)
{
    const struct tkey *x = a, *y = b;

    /* most common first; then the reference's order, reversed */
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->t.cpu_milli != y->t.cpu_milli)
        return x->t.cpu_milli > y->t.cpu_milli ? -1 : 1;
    if (x->t.gpu_milli != y->t.gpu_milli)
        return x->t.gpu_milli > y->t.gpu_milli ? -1 : 1;
    if (x->t.gpus != y->t.gpus)
        return x->t.gpus > y->t.gpus ? -1 : 1;
    return (x->t.models < y->t.models) - (x->t.models > y->t.models);
}

/* Set the fragmentation model from the workload's pods. */
static int set_typical(struct sl_sched *s, const struct pod *pods, size_t n,
                       struct sl_error *err)
{
    struct tkey *k = calloc(n ? n : 1, sizeof(*k));
    struct sl_sched_typical *t = NULL;
    size_t nk = 0, take = 0;
    long cum = 0;
    int rc;

    if (!k)
        return sl_errorf(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct sl_sched_job_spec *p = &pods[i].spec;
        int gpus = p->gpus ? p->gpus : p->gpu_milli ? 1 : 0;
        int milli = p->gpus ? 1000 : p->gpu_milli;
        size_t j;
        for (j = 0; j < nk; j++)
            if (k[j].t.cpu_milli == p->cpu_milli && k[j].t.gpus == gpus &&
                k[j].t.gpu_milli == milli && k[j].t.models == p->models)
                break;
        if (j == nk) {
            k[nk].t.cpu_milli = p->cpu_milli;
            k[nk].t.gpus = gpus;
            k[nk].t.gpu_milli = milli;
            k[nk].t.models = p->models;
            nk++;
        }
        k[j].count++;
    }
    qsort(k, nk, sizeof(*k), tkey_cmp);
    while (take < nk && (double)cum < TYPICAL_COVER * (double)n)
        cum += k[take++].count;
    if (!(t = calloc(take ? take : 1, sizeof(*t)))) {
        free(k);
        return sl_errorf(err, -ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < take; i++) {
        t[i] = k[i].t;
        t[i].weight = (double)k[i].count;
    }
    rc = sl_sched_set_typical(s, t, (int)take);
    free(t);
    free(k);
    return rc < 0 ? sl_errorf(err, rc, "out of memory") : 0;
}

/* ---- output ----------------------------------------------------------- */

static void csv_field(FILE *fp, const char *s)
{
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', fp);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', fp);
            fputc(*s, fp);
        }
        fputc('"', fp);
    } else {
        fputs(s, fp);
    }
}

/* ---- the run ---------------------------------------------------------- */

/* One fill run: the cluster, the pods and their order, the placements'
 * figures. Owns everything it points to (fill_fini). */
struct fill {
    const struct sl_sim_opts *o;
    struct sl_error *err;
    struct sl_trace_node *tn;     /* the nodes, shuffled */
    size_t nn;
    struct sl_trace_task *tt;     /* the trace's pods */
    size_t nt;
    struct pod *pods;             /* nt, as the scheduler sees them */
    size_t *order;                /* the pods' arrival order (indexes) */
    size_t npods, cap_pods;
    struct sl_sched *s;
    struct sl_rng rng;            /* node order, then arrival order */
    FILE *csv;                    /* --placements */
    int64_t cap_milli;            /* the cluster's GPUs */
    int64_t demand;               /* the pods' GPU milli, as resampled */
    int64_t arrived, used;        /* GPU milli arrived and placed so far */
    size_t failed, placed;
    double curve[CURVE_MAX + 1];  /* alloc ratio at k % arrived; -1 = none */
    int next_pct;                 /* the next point of the curve */
    double frag90;                /* frag ratio at 90 % arrived; -1 = none */
    struct sl_sim_bar bar;
};

static void fill_fini(struct fill *f)
{
    if (f->csv)
        fclose(f->csv);
    sl_sched_destroy(f->s);
    free(f->order);
    free(f->pods);
    free(f->tn);
    free(f->tt);
}

/* The scheduler on the node list, shuffled with the seed: the node order
 * decides ties, as the reference's node names do. */
static int cluster_make(struct fill *f, enum sl_placement policy)
{
    struct sl_sched_config cfg;
    int rc;

    sl_sched_config_init(&cfg);
    cfg.placement = policy;
    cfg.seed = f->o->seed;
    cfg.auto_typical = false;
    if (!(f->s = sl_sched_create(&cfg)))
        return sl_errorf(f->err, -ENOMEM, "out of memory");
    sl_rng_seed(&f->rng, f->o->seed);
    for (size_t i = f->nn; i > 1; i--) {
        size_t j = (size_t)sl_rng_below(&f->rng, i);
        struct sl_trace_node t = f->tn[i - 1];
        f->tn[i - 1] = f->tn[j];
        f->tn[j] = t;
    }
    if ((rc = sl_sim_add_nodes(f->s, f->tn, f->nn, f->err)) < 0)
        return rc;
    for (size_t i = 0; i < f->nn; i++)
        f->cap_milli += (int64_t)f->tn[i].ngpus * 1000;
    if (f->cap_milli == 0)
        return sl_errorf(f->err, -EINVAL, "%s: the nodes have no GPUs", f->o->nodes_path);
    return 0;
}

/* The trace's pods as job specs, and the fragmentation model from them. */
static int pods_make(struct fill *f)
{
    int rc;

    if (!(f->pods = calloc(f->nt, sizeof(*f->pods))))
        return sl_errorf(f->err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < f->nt; i++) {
        if ((rc = sl_sim_spec(f->s, &f->tt[i], &f->pods[i].spec, f->err)) < 0)
            return rc;
        f->pods[i].demand = (int64_t)f->tt[i].num_gpu * f->tt[i].gpu_milli;
        f->pods[i].name = f->tt[i].name;
        f->demand += f->pods[i].demand;
    }
    return set_typical(f->s, f->pods, f->nt, f->err);
}

/* The arrival order: the pods shuffled, then resampled up (copies drawn
 * with replacement) or thinned down (pods dropped at random) until their
 * GPU demand is just under 'target' times the cluster's GPUs. */
static int order_make(struct fill *f, double target)
{
    int64_t target_milli = (int64_t)llround(target * (double)f->cap_milli);

    f->cap_pods = f->nt * 2 + 16;
    if (!(f->order = malloc(sizeof(*f->order) * f->cap_pods)))
        return sl_errorf(f->err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < f->nt; i++)
        f->order[i] = i;
    f->npods = f->nt;
    for (size_t i = f->npods; i > 1; i--) {
        size_t j = (size_t)sl_rng_below(&f->rng, i);
        size_t tmp = f->order[i - 1];
        f->order[i - 1] = f->order[j];
        f->order[j] = tmp;
    }
    if (f->demand >= target_milli) {
        while (f->demand > target_milli && f->npods > 0) {
            size_t i = (size_t)sl_rng_below(&f->rng, f->npods);
            f->demand -= f->pods[f->order[i]].demand;
            memmove(&f->order[i], &f->order[i + 1], sizeof(*f->order) * (f->npods - i - 1));
            f->npods--;
        }
        return 0;
    }
    for (;;) {
        size_t pick = (size_t)sl_rng_below(&f->rng, f->nt);
        if (f->demand + f->pods[pick].demand > target_milli)
            break;
        if (f->npods == f->cap_pods) {
            size_t *no;
            if (f->cap_pods > (size_t)SL_TRACE_MAX_ROWS)
                return sl_errorf(f->err, -EINVAL, "--target: more than %d pods would be needed",
                                 SL_TRACE_MAX_ROWS);
            if (!(no = realloc(f->order, sizeof(*f->order) * f->cap_pods * 2)))
                return sl_errorf(f->err, -ENOMEM, "out of memory");
            f->order = no;
            f->cap_pods *= 2;
        }
        f->order[f->npods++] = pick;
        f->demand += f->pods[pick].demand;
    }
    return 0;
}

/* One row of --placements: seq, pod, node, GPU indexes, GPU milli (the
 * last three empty for a pod that failed). */
static void placement_row(struct fill *f, size_t seq, const struct pod *p, bool ok,
                          const struct sl_sched_task_place *pl)
{
    FILE *csv = f->csv;

    fprintf(csv, "%zu,", seq);
    csv_field(csv, p->name);
    fputc(',', csv);
    if (ok) {
        struct sl_sched_node_view v;
        sl_sched_node_view(f->s, pl->node, &v);
        csv_field(csv, v.name);
        fputc(',', csv);
        for (int g = 0; g < pl->ngpus; g++)
            fprintf(csv, "%s%d", g ? ";" : "", pl->gpus[g]);
        fputc(',', csv);
        if (pl->ngpus)
            fprintf(csv, "%d", pl->gpu_milli);
    } else {
        fputs(",,", csv);
    }
    fputc('\n', csv);
}

/* The points of the alloc curve that the arrived demand has reached, and
 * the fragmentation ratio at 90 %. */
static void curve_advance(struct fill *f)
{
    double fr, idle;

    while (f->next_pct <= CURVE_MAX && f->arrived * 100 >= (int64_t)f->next_pct * f->cap_milli) {
        f->curve[f->next_pct] = (double)f->used / (double)f->cap_milli;
        if (f->next_pct == 90) {
            sl_sched_frag(f->s, &fr, &idle);
            f->frag90 = idle > 0 ? fr / idle : 0;
        }
        f->next_pct++;
    }
}

/* Place the pods in order, each at once or never, as they arrive. */
static int fill_run(struct fill *f)
{
    const struct sl_sim_opts *o = f->o;

    if (o->placements_path) {
        if (!(f->csv = fopen(o->placements_path, "we")))
            return sl_errorf_field(f->err, -errno, "--placements", "--placements %s: %s",
                                   o->placements_path, strerror(errno));
        fputs("seq,pod,node,gpus,gpu_milli\n", f->csv);
    }
    for (size_t seq = 0; seq < f->npods; seq++) {
        const struct pod *p = &f->pods[f->order[seq]];
        struct sl_sched_task_place pl;
        int ok = sl_sched_place_now(f->s, &p->spec, &pl);

        f->arrived += p->demand;
        if (!ok) {
            f->failed++;
        } else {
            f->used += p->demand;
            f->placed++;
        }
        if (f->csv)
            placement_row(f, seq, p, ok, &pl);
        curve_advance(f);
        sl_sim_progress(&f->bar, seq + 1, f->npods, "pods", NULL, seq + 1 == f->npods);
    }
    /* The resampling stops just short of the target: the points up to the
     * final demand, rounded, take the final ratio (the reference rounds
     * arrived demand to whole percents the same way). */
    while (f->next_pct <= CURVE_MAX &&
           f->arrived * 200 >= (int64_t)(2 * f->next_pct - 1) * f->cap_milli)
        f->curve[f->next_pct++] = (double)f->used / (double)f->cap_milli;
    if (f->csv && (fflush(f->csv) != 0 || ferror(f->csv)))
        return sl_errorf_field(f->err, -EIO, "--placements", "--placements %s: write failed",
                               o->placements_path);
    return 0;
}

/* A ratio, or null when not reached: "<key>: <value>,\n". */
static void ratio_json(struct sl_buf *out, const char *key, double v)
{
    sl_buf_printf(out, "  \"%s\": ", key);
    if (v >= 0)
        sl_buf_printf(out, "%.6f,\n", v);
    else
        sl_buf_adds(out, "null,\n");
}

/* The JSON summary of the run ('wall_s': its wall-clock time). */
static int summary_json(struct fill *f, enum sl_placement policy, double target, double wall_s,
                        struct sl_buf *out)
{
    double cap = (double)f->cap_milli, fr, idle;

    sl_sched_frag(f->s, &fr, &idle);
    sl_buf_printf(out, "{\n  \"mode\": \"fill\",\n  \"policy\": \"%s\",\n",
                  sl_placement_name(policy));
    sl_buf_printf(out, "  \"seed\": %" PRIu64 ",\n  \"target\": %.4g,\n", f->o->seed, target);
    sl_buf_printf(out, "  \"nodes\": %zu,\n  \"gpu_capacity\": %" PRId64 ",\n", f->nn,
                  f->cap_milli / 1000);
    sl_buf_printf(out, "  \"pods\": %zu,\n  \"placed\": %zu,\n  \"failed_pods\": %zu,\n",
                  f->npods, f->placed, f->failed);
    sl_buf_printf(out, "  \"arrived_demand_ratio\": %.6f,\n", (double)f->arrived / cap);
    sl_buf_printf(out, "  \"alloc_ratio_final\": %.6f,\n", (double)f->used / cap);
    ratio_json(out, "alloc_at_100", f->curve[100]);
    sl_buf_printf(out, "  \"unallocated_gpus_final\": %.3f,\n",
                  (double)(f->cap_milli - f->used) / 1000);
    sl_buf_printf(out, "  \"frag_ratio_final\": %.6f,\n", idle > 0 ? fr / idle : 0);
    ratio_json(out, "frag_ratio_at_90", f->frag90);
    sl_buf_adds(out, "  \"alloc_curve\": [");
    for (int i = 0; i <= CURVE_MAX; i++) {
        if (f->curve[i] >= 0)
            sl_buf_printf(out, "%s%.6f", i ? ", " : "", f->curve[i]);
        else
            sl_buf_printf(out, "%snull", i ? ", " : "");
    }
    sl_buf_printf(out, "],\n  \"wall_seconds\": %.3f\n}\n", wall_s);
    return out->failed ? sl_errorf(f->err, -ENOMEM, "out of memory") : 0;
}

int sl_sim_fill(const struct sl_sim_opts *o, struct sl_buf *out, struct sl_error *err)
{
    struct fill f;
    enum sl_placement policy;
    double target = o->target > 0 ? o->target : 1.3, wall_s;
    struct timespec t0, t1;
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(&f, 0, sizeof(f));
    f.o = o;
    f.err = err;
    f.bar.on = o->progress;
    f.frag90 = -1;
    for (int i = 0; i <= CURVE_MAX; i++)
        f.curve[i] = -1;
    if ((rc = sl_sim_policy(o->policy, &policy, err)) < 0)
        return rc;
    if (!o->nodes_path)
        return sl_errorf_field(err, -EINVAL, "--nodes", "--nodes: fill mode needs a node list");
    if ((rc = sl_trace_load_nodes(o->nodes_path, &f.tn, &f.nn, err)) < 0 ||
        (rc = sl_trace_load_pods(o->workload_path, &f.tt, &f.nt, err)) < 0 ||
        (rc = cluster_make(&f, policy)) < 0 || (rc = pods_make(&f)) < 0 ||
        (rc = order_make(&f, target)) < 0 || (rc = fill_run(&f)) < 0)
        goto out;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    rc = summary_json(&f, policy, target, wall_s, out);
out:
    fill_fini(&f);
    return rc;
}
