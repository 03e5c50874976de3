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

int sl_sim_fill(const struct sl_sim_opts *o, struct sl_buf *out, struct sl_error *err)
{
    struct sl_trace_node *tn = NULL;
    struct sl_trace_task *tt = NULL;
    size_t nn = 0, nt = 0, npods = 0, cap_pods = 0;
    struct pod *pods = NULL;
    size_t *order = NULL;
    struct sl_sched *s = NULL;
    struct sl_sched_config cfg;
    struct sl_rng rng;
    enum sl_placement policy;
    FILE *csv = NULL;
    double curve[CURVE_MAX + 1], frag90 = -1, f, idle;
    int next_pct = 0, rc;
    int64_t cap_milli = 0, target_milli, demand = 0, arrived = 0, used = 0;
    size_t failed = 0, placed = 0;
    double target = o->target > 0 ? o->target : 1.3;
    struct sl_sim_bar bar = {o->progress, {0, 0}};
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i <= CURVE_MAX; i++)
        curve[i] = -1;
    if ((rc = sl_sim_policy(o->policy, &policy, err)) < 0)
        return rc;
    if (!o->nodes_path)
        return sl_errorf_field(err, -EINVAL, "--nodes", "--nodes: fill mode needs a node list");
    if ((rc = sl_trace_load_nodes(o->nodes_path, &tn, &nn, err)) < 0 ||
        (rc = sl_trace_load_pods(o->workload_path, &tt, &nt, err)) < 0)
        goto out;
    sl_sched_config_init(&cfg);
    cfg.placement = policy;
    cfg.seed = o->seed;
    cfg.auto_typical = false;
    if (!(s = sl_sched_create(&cfg))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    sl_rng_seed(&rng, o->seed);
    /* The node order decides ties: shuffle it with the seed, as the
     * reference does by renaming its nodes. */
    for (size_t i = nn; i > 1; i--) {
        size_t j = (size_t)sl_rng_below(&rng, i);
        struct sl_trace_node t = tn[i - 1];
        tn[i - 1] = tn[j];
        tn[j] = t;
    }
    if ((rc = sl_sim_add_nodes(s, tn, nn, err)) < 0)
        goto out;
    for (size_t i = 0; i < nn; i++)
        cap_milli += (int64_t)tn[i].ngpus * 1000;
    if (cap_milli == 0) {
        rc = sl_errorf(err, -EINVAL, "%s: the nodes have no GPUs", o->nodes_path);
        goto out;
    }
    if (!(pods = calloc(nt, sizeof(*pods)))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nt; i++) {
        if ((rc = sl_sim_spec(s, &tt[i], &pods[i].spec, err)) < 0)
            goto out;
        pods[i].demand = (int64_t)tt[i].num_gpu * tt[i].gpu_milli;
        pods[i].name = tt[i].name;
        demand += pods[i].demand;
    }
    if ((rc = set_typical(s, pods, nt, err)) < 0)
        goto out;

    /* Shuffle, then resample up or thin down to the target demand. */
    target_milli = (int64_t)llround(target * (double)cap_milli);
    cap_pods = nt * 2 + 16;
    if (!(order = malloc(sizeof(*order) * cap_pods))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nt; i++)
        order[i] = i;
    npods = nt;
    for (size_t i = npods; i > 1; i--) {
        size_t j = (size_t)sl_rng_below(&rng, i);
        size_t tmp = order[i - 1];
        order[i - 1] = order[j];
        order[j] = tmp;
    }
    if (demand < target_milli) {
        for (;;) {
            size_t pick = (size_t)sl_rng_below(&rng, nt);
            if (demand + pods[pick].demand > target_milli)
                break;
            if (npods == cap_pods) {
                size_t *no;
                if (cap_pods > (size_t)SL_TRACE_MAX_ROWS) {
                    rc = sl_errorf(err, -EINVAL,
                                   "--target: more than %d pods would be needed",
                                   SL_TRACE_MAX_ROWS);
                    goto out;
                }
                if (!(no = realloc(order, sizeof(*order) * cap_pods * 2))) {
                    rc = sl_errorf(err, -ENOMEM, "out of memory");
                    goto out;
                }
                order = no;
                cap_pods *= 2;
            }
            order[npods++] = pick;
            demand += pods[pick].demand;
        }
    } else {
        while (demand > target_milli && npods > 0) {
            size_t i = (size_t)sl_rng_below(&rng, npods);
            demand -= pods[order[i]].demand;
            memmove(&order[i], &order[i + 1], sizeof(*order) * (npods - i - 1));
            npods--;
        }
    }

    if (o->placements_path) {
        if (!(csv = fopen(o->placements_path, "we"))) {
            rc = sl_errorf_field(err, -errno, "--placements", "--placements %s: %s",
                                 o->placements_path, strerror(errno));
            goto out;
        }
        fputs("seq,pod,node,gpus,gpu_milli\n", csv);
    }
    for (size_t seq = 0; seq < npods; seq++) {
        const struct pod *p = &pods[order[seq]];
        struct sl_sched_task_place pl;
        int ok = sl_sched_place_now(s, &p->spec, &pl);

        arrived += p->demand;
        if (!ok) {
            failed++;
        } else {
            used += p->demand;
            placed++;
        }
        if (csv) {
            fprintf(csv, "%zu,", seq);
            csv_field(csv, p->name);
            fputc(',', csv);
            if (ok) {
                struct sl_sched_node_view v;
                sl_sched_node_view(s, pl.node, &v);
                csv_field(csv, v.name);
                fputc(',', csv);
                for (int g = 0; g < pl.ngpus; g++)
                    fprintf(csv, "%s%d", g ? ";" : "", pl.gpus[g]);
                fputc(',', csv);
                if (pl.ngpus)
                    fprintf(csv, "%d", pl.gpu_milli);
            } else {
                fputs(",,", csv);
            }
            fputc('\n', csv);
        }
        while (next_pct <= CURVE_MAX && arrived * 100 >= (int64_t)next_pct * cap_milli) {
            curve[next_pct] = (double)used / (double)cap_milli;
            if (next_pct == 90) {
                sl_sched_frag(s, &f, &idle);
                frag90 = idle > 0 ? f / idle : 0;
            }
            next_pct++;
        }
        sl_sim_progress(&bar, seq + 1, npods, "pods", NULL, seq + 1 == npods);
    }
    /* The resampling stops just short of the target: the points up to the
     * final demand, rounded, take the final ratio (the reference rounds
     * arrived demand to whole percents the same way). */
    while (next_pct <= CURVE_MAX && arrived * 200 >= (int64_t)(2 * next_pct - 1) * cap_milli)
        curve[next_pct++] = (double)used / (double)cap_milli;
    if (csv && (fflush(csv) != 0 || ferror(csv))) {
        rc = sl_errorf_field(err, -EIO, "--placements", "--placements %s: write failed",
                             o->placements_path);
        goto out;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);

    sl_sched_frag(s, &f, &idle);
    sl_buf_printf(out, "{\n  \"mode\": \"fill\",\n  \"policy\": \"%s\",\n",
                  sl_placement_name(policy));
    sl_buf_printf(out, "  \"seed\": %" PRIu64 ",\n  \"target\": %.4g,\n", o->seed, target);
    sl_buf_printf(out, "  \"nodes\": %zu,\n  \"gpu_capacity\": %" PRId64 ",\n", nn,
                  cap_milli / 1000);
    sl_buf_printf(out, "  \"pods\": %zu,\n  \"placed\": %zu,\n  \"failed_pods\": %zu,\n",
                  npods, placed, failed);
    sl_buf_printf(out, "  \"arrived_demand_ratio\": %.6f,\n",
                  (double)arrived / (double)cap_milli);
    sl_buf_printf(out, "  \"alloc_ratio_final\": %.6f,\n", (double)used / (double)cap_milli);
    sl_buf_adds(out, "  \"alloc_at_100\": ");
    if (curve[100] >= 0)
        sl_buf_printf(out, "%.6f,\n", curve[100]);
    else
        sl_buf_adds(out, "null,\n");
    sl_buf_printf(out, "  \"unallocated_gpus_final\": %.3f,\n",
                  (double)(cap_milli - used) / 1000);
    sl_buf_printf(out, "  \"frag_ratio_final\": %.6f,\n", idle > 0 ? f / idle : 0);
    sl_buf_adds(out, "  \"frag_ratio_at_90\": ");
    if (frag90 >= 0)
        sl_buf_printf(out, "%.6f,\n", frag90);
    else
        sl_buf_adds(out, "null,\n");
    sl_buf_adds(out, "  \"alloc_curve\": [");
    for (int i = 0; i <= CURVE_MAX; i++) {
        if (curve[i] >= 0)
            sl_buf_printf(out, "%s%.6f", i ? ", " : "", curve[i]);
        else
            sl_buf_printf(out, "%snull", i ? ", " : "");
    }
    sl_buf_printf(out, "],\n  \"wall_seconds\": %.3f\n}\n",
                  (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    if (out->failed)
        rc = sl_errorf(err, -ENOMEM, "out of memory");
out:
    if (csv)
        fclose(csv);
    sl_sched_destroy(s);
    free(order);
    free(pods);
    free(tn);
    free(tt);
    return rc;
}
