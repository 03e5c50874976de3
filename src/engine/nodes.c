/*
 * nodes.c - the nodes: the executor (with --fake-nodes, a node list it is
 * given), its inventory into the scheduler (node i of the inventory is the
 * scheduler's node i), refreshed when the executor says they changed, and
 * this machine's meters for the nodes whose devices are here.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/trace.h"

/* The nodes of a --fake-nodes list (src/sim/trace.h), none of them this
 * machine's: their tasks run here, on no device of theirs. */
static int fake_nodes_load(const char *path, struct sl_inventory *inv, struct sl_error *err)
{
    struct sl_trace_node *tn = NULL;
    struct sl_gpu_info gpus[SL_EXEC_MAX_GPUS];
    size_t nn = 0;
    int rc;

    if ((rc = sl_trace_load_nodes(path, &tn, &nn, err)) < 0)
        return sl_errorf(err, rc, "--fake-nodes: %s", err->text);
    for (size_t i = 0; i < nn && rc == 0; i++) {
        struct sl_node_info n = {.ngpus = tn[i].ngpus, .gpus = gpus, .state = SL_NODE_UP};
        sl_strlcpy(n.name, tn[i].name, sizeof(n.name));
        sl_strlcpy(n.domain, tn[i].domain, sizeof(n.domain));
        n.cpu_milli = tn[i].cpu_milli;
        n.mem_bytes = tn[i].mem_bytes;
        memset(gpus, 0, sizeof(gpus));
        for (int g = 0; g < n.ngpus; g++) {
            gpus[g].index = g;
            sl_strlcpy(gpus[g].model, tn[i].model, sizeof(gpus[g].model));
            gpus[g].dev_major = gpus[g].dev_minor = -1;
        }
        sl_strlcpy(n.gpu_source, "fake", sizeof(n.gpu_source));
        if ((rc = sl_inventory_add(inv, &n)) < 0)
            sl_errorf(err, rc, "out of memory");
    }
    free(tn);
    return rc;
}

/* The executor, offering this host or the --fake-nodes list. */
int sl_eng_executor_open(struct sl_engine *e, struct sl_error *err)
{
    struct sl_inventory fake = {NULL, 0, 0};
    struct sl_executor_config xc = {
        .kind = e->cfg.executor ? e->cfg.executor : "local",
        .data_dir = e->data_dir,
        .fake_gpus = e->cfg.fake_gpus,
        .slurm_partition = e->cfg.slurm_partition,
        .slurm_output_dir = e->cfg.slurm_output_dir,
        .slurm_bin = e->cfg.slurm_bin,
        .slurm_api = e->cfg.slurm_api,
        .slurm_jobcomp = e->cfg.slurm_jobcomp,
        .slurm_poll_ms = e->cfg.slurm_poll_ms,
        .slurm_stage = e->cfg.slurm_stage,
        .now_ms = e->cfg.now_ms,
        .detach_grace_ms = e->cfg.detach_grace_ms,
    };
    int rc = 0;

    if (e->cfg.fake_nodes) {
        if ((rc = fake_nodes_load(e->cfg.fake_nodes, &fake, err)) < 0)
            return rc;
        xc.nodes = &fake;
    }
    if (!(e->x = sl_executor_create(&xc, err)))
        rc = errno ? -errno : -EINVAL;
    sl_inventory_fini(&fake);
    if (rc == 0)
        sl_executor_caps(e->x, &e->caps);
    return rc;
}

/* Node i of the scheduler takes work when the executor has it up and no
 * admin has cordoned or drained it; when not, why (the admin's state, then
 * the executor's state and reason) is what `sluice why` shows. Neither
 * hides the other: a node Slurm says down stays unschedulable whatever the
 * admin's state, and a drained node stays drained whatever Slurm says. */
static void node_state(struct sl_engine *e, int i, const struct sl_node_info *ni)
{
    const struct node_admin *a = sl_eng_nodeadmin_get(e, ni->name);
    bool admin_on = !a || a->state == NODE_ACTIVE, up = ni->state == SL_NODE_UP;
    char why[512];
    size_t o;

    sl_sched_node_schedulable(e->sched, i, admin_on && up);
    sl_eng_nodeadmin_note(e, i, a, why, sizeof(why));
    o = strlen(why);
    if (!up)
        snprintf(why + o, sizeof(why) - o, "%s%s%s%s", o ? "; " : "",
                 sl_node_state_name(ni->state), ni->reason[0] ? ": " : "", ni->reason);
    if (sl_sched_node_note(e->sched, i, admin_on && up ? NULL : why) < 0)
        sl_warn("msg=\"out of memory noting a node's state\" node=%s", ni->name);
}

void sl_eng_node_restate(struct sl_engine *e, int i)
{
    pthread_mutex_lock(&e->mu);
    for (int n = i < 0 ? 0 : i; n < e->nodes.n && (i < 0 || n == i); n++)
        node_state(e, n, &e->nodes.nodes[n]);
    pthread_mutex_unlock(&e->mu);
}

/* The cluster: the executor's nodes, in its order (node i of the
 * inventory is node i of the scheduler). */
int sl_eng_nodes_add(struct sl_engine *e, struct sl_error *err)
{
    int rc;

    if ((rc = sl_executor_nodes(e->x, &e->nodes, err)) < 0)
        return rc;
    for (int i = 0; i < e->nodes.n; i++) {
        const struct sl_node_info *ni = &e->nodes.nodes[i];
        struct sl_sched_node_spec n = {0};
        n.name = ni->name;
        n.domain = ni->domain;
        n.cpu_milli = ni->cpu_milli;
        n.mem_bytes = ni->mem_bytes;
        n.ngpus = ni->ngpus;
        for (int g = 0; g < n.ngpus; g++)
            n.gpu_model[g] = ni->gpus[g].model;
        if ((rc = sl_sched_node_add(e->sched, &n)) < 0)
            return sl_errorf(err, rc, "%snode %s: %s", e->cfg.fake_nodes ? "--fake-nodes: " : "",
                             ni->name,
                             rc == -ENOSPC ? "more than 32 GPU models" : strerror(-rc));
        node_state(e, rc, ni);
    }
    return 0;
}

/* This machine's meters (NVML for the GPUs it found, RAPL for the CPU
 * packages), when a node's devices are here and its tasks run. */
void sl_eng_meters_open(struct sl_engine *e)
{
    const struct sl_node_info *here = NULL;

    for (int i = 0; i < e->nodes.n && !here; i++)
        if (e->nodes.nodes[i].devices_here)
            here = &e->nodes.nodes[i];
    if (!here || !e->caps.runs_commands)
        return;
    {
        struct sl_nvml *nv = strcmp(here->gpu_source, "nvml") == 0 ? sl_nvml_open() : NULL;
        struct sl_rapl *rp = sl_rapl_open(NULL);
        sl_info("msg=\"energy\" gpus=%s cpus=%s", nv ? "nvml" : "estimated",
                rp ? "rapl" : "estimated");
        if (nv || rp)
            e->mon = sl_gpumon_start(nv, rp, GPUMON_PERIOD_MS);
    }
}

void sl_eng_nodes_refresh(struct sl_engine *e)
{
    struct sl_inventory now = {NULL, 0, 0};
    struct sl_error err = {0};

    if (sl_executor_nodes(e->x, &now, &err) < 0) {
        sl_warn("msg=\"cannot read the executor's nodes\" error=\"%s\"", err.text);
        return;
    }
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < now.n; i++) {
        const struct sl_node_info *ni = &now.nodes[i];
        if (i < e->nodes.n) {
            if (ni->state != e->nodes.nodes[i].state)
                sl_info("msg=\"node state\" node=%s state=%s reason=\"%s\"", ni->name,
                        sl_node_state_name(ni->state), ni->reason);
            node_state(e, i, ni);
            continue;
        }
        /* a node the executor did not have before */
        struct sl_sched_node_spec n = {.name = ni->name, .domain = ni->domain,
                                       .cpu_milli = ni->cpu_milli, .mem_bytes = ni->mem_bytes,
                                       .ngpus = ni->ngpus};
        for (int g = 0; g < n.ngpus; g++)
            n.gpu_model[g] = ni->gpus[g].model;
        if (sl_sched_node_add(e->sched, &n) != i) {
            sl_warn("msg=\"cannot add a new node\" node=%s", ni->name);
            now.n = i; /* the inventory stays in step with the scheduler */
            break;
        }
        node_state(e, i, ni);
        sl_info("msg=\"node added\" node=%s gpus=%d", ni->name, ni->ngpus);
    }
    sl_inventory_fini(&e->nodes);
    e->nodes = now;
    e->sched_full = true;
    pthread_mutex_unlock(&e->mu);
}
