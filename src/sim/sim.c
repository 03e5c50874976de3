/*
 * sim.c - `sluice sim` entry point and what its modes share. See sim.h.
 */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "simint.h"

int sl_sim_policy(const char *name, enum sl_placement *out, struct sl_error *err)
{
    int p = name ? sl_placement_parse(name) : SL_PLACE_FGD;

    if (p < 0)
        return sl_errorf_field(err, -EINVAL, "--policy",
                               "--policy: must be one of fgd, bestfit, packing, "
                               "clustering, dotprod, random, spread; got '%.40s'",
                               name);
    *out = (enum sl_placement)p;
    return 0;
}

int sl_sim_add_nodes(struct sl_sched *s, const struct sl_trace_node *n, size_t count,
                     struct sl_error *err)
{
    for (size_t i = 0; i < count; i++) {
        struct sl_sched_node_spec ns = {0};
        int rc;
        ns.name = n[i].name;
        ns.domain = n[i].domain;
        ns.cpu_milli = n[i].cpu_milli;
        ns.mem_bytes = n[i].mem_bytes;
        ns.ngpus = n[i].ngpus;
        for (int g = 0; g < n[i].ngpus; g++)
            ns.gpu_model[g] = n[i].model;
        if ((rc = sl_sched_node_add(s, &ns)) < 0)
            return sl_errorf(err, rc, "node %s: %s", n[i].name,
                             rc == -ENOSPC ? "more than 32 GPU models" : strerror(-rc));
    }
    return 0;
}

int sl_sim_spec(struct sl_sched *s, const struct sl_trace_task *t,
                struct sl_sched_job_spec *out, struct sl_error *err)
{
    const char *p = t->gpu_spec;

    memset(out, 0, sizeof(*out));
    out->tasks = t->tasks;
    out->cpu_milli = t->cpu_milli;
    out->mem_bytes = t->mem_bytes;
    if (t->num_gpu > 0 && t->gpu_milli >= 1000)
        out->gpus = t->num_gpu;
    else if (t->num_gpu > 0)
        out->gpu_milli = t->gpu_milli;
    while (*p) {
        char model[48];
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        int m;
        if (n > 0 && n < sizeof(model)) {
            memcpy(model, p, n);
            model[n] = '\0';
            if ((m = sl_sched_model(s, model)) < 0)
                return sl_errorf(err, m, "%s: more than %d GPU models", t->name,
                                 SL_SCHED_MAX_MODELS);
            out->models |= 1u << m;
        }
        p += n;
        if (*p == '|')
            p++;
    }
    return 0;
}

void sl_sim_progress(struct sl_sim_bar *b, size_t done, size_t total, const char *what,
                     const char *extra, bool end)
{
    static const char bar[] = "########################################";
    struct timespec now;
    int width = 40, fill;

    if (!b->on || total == 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!end && (now.tv_sec - b->last.tv_sec) * 1000000000L + (now.tv_nsec - b->last.tv_nsec) <
                    100000000L)
        return;
    b->last = now;
    fill = (int)((double)done / (double)total * width);
    fprintf(stderr, "\rsim [%-40.*s] %3d%% %zu/%zu %s%s%s", fill, bar,
            (int)(100.0 * (double)done / (double)total), done, total, what,
            extra ? ", " : "", extra ? extra : "");
    if (end)
        fputc('\n', stderr);
}

int sl_sim_run(const struct sl_sim_opts *o, struct sl_buf *out, struct sl_error *err)
{
    enum sl_sim_mode mode = o->mode;

    if (!o->workload_path)
        return sl_errorf_field(err, -EINVAL, "--workload", "--workload is required");
    if (mode == SL_SIM_AUTO) {
        int kind = sl_trace_sniff(o->workload_path);
        if (kind < 0)
            return sl_errorf_field(err, kind, "--workload", "--workload %s: %s",
                                   o->workload_path, strerror(-kind));
        if (kind != 'p' && kind != 'j')
            return sl_errorf_field(err, -EINVAL, "--workload",
                                   "--workload %s: not a pod list (name,cpu_milli,...) "
                                   "or a job list (u_id,user,...)",
                                   o->workload_path);
        mode = kind == 'p' && !o->time_scale ? SL_SIM_FILL : SL_SIM_TIMED;
    }
    if (mode == SL_SIM_FILL)
        return sl_sim_fill(o, out, err);
    return sl_sim_timed(o, out, err);
}
