/*
 * sim.c - `sluice sim` entry point and what its modes share. See sim.h.
 */
#include "sim.h"

#include <errno.h>
#include <string.h>

#include "simint.h"

/* Policy names: {name, policy}. */
static const struct {
    const char *name;
    enum cl_policy policy;
} policies[] = {
    {"fgd", CL_FGD},
    {"bestfit", CL_BESTFIT},
    {"packing", CL_PACKING},
    {"clustering", CL_CLUSTERING},
    {"dotprod", CL_DOTPROD},
    {"random", CL_RANDOM},
    {"spread", CL_SPREAD},
};

int sl_sim_policy(const char *name, enum cl_policy *out, struct sl_error *err)
{
    if (!name) {
        *out = CL_FGD;
        return 0;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(policies); i++)
        if (strcmp(policies[i].name, name) == 0) {
            *out = policies[i].policy;
            return 0;
        }
    return sl_errorf_field(err, -EINVAL, "--policy",
                           "--policy: must be one of fgd, bestfit, "
                           "packing, clustering, dotprod, random, spread; got '%s'",
                           name);
}

const char *sl_sim_policy_name(enum cl_policy p)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(policies); i++)
        if (policies[i].policy == p)
            return policies[i].name;
    return "?";
}

int sl_sim_add_nodes(struct cl_cluster *c, const struct sl_trace_node *n,
                     size_t count, struct sl_error *err)
{
    for (size_t i = 0; i < count; i++) {
        int models[SL_SCHED_MAX_GPUS], m = -1, rc;
        if (n[i].ngpus > 0 && (m = cl_model(c, n[i].model, true)) < 0)
            return sl_errorf(err, m, "node %s: more than %d GPU models", n[i].name,
                             SL_SCHED_MAX_MODELS);
        for (int g = 0; g < n[i].ngpus; g++)
            models[g] = m;
        if ((rc = cl_node_add(c, n[i].name, n[i].domain, n[i].cpu_milli,
                              n[i].mem_bytes, n[i].ngpus, models)) < 0)
            return sl_errorf(err, rc, "node %s: %s", n[i].name, strerror(-rc));
    }
    return 0;
}

int sl_sim_shape(struct cl_cluster *c, const struct sl_trace_task *t,
                 struct cl_shape *out, struct sl_error *err)
{
    const char *p = t->gpu_spec;

    memset(out, 0, sizeof(*out));
    out->cpu_milli = t->cpu_milli;
    out->mem_bytes = t->mem_bytes;
    out->num_gpu = t->num_gpu;
    out->gpu_milli = t->num_gpu ? t->gpu_milli : 0;
    while (*p) {
        char model[48];
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        int m;
        if (n > 0 && n < sizeof(model)) {
            memcpy(model, p, n);
            model[n] = '\0';
            if ((m = cl_model(c, model, true)) < 0)
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
