/*
 * sched_harness.h - small hand-built clusters for the scheduler's unit
 * tests (test_sched.c, test_sched_runnable.c): three priority classes,
 * nodes, queues and jobs from one line each, a pass, its starts, and a
 * job's reason and explanation. Time is an argument; nothing sleeps.
 */
#ifndef SL_TEST_SCHED_HARNESS_H
#define SL_TEST_SCHED_HARNESS_H

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sched/cluster.h"
#include "../../src/sched/sched.h"
#include "../../src/util/rng.h"
#include "../tap.h"

#define GI (1LL << 30)
#define H (3600LL * 1000)
#define T0 (1700000000000LL)

static int c_prod, c_batch, c_be;

/* A scheduler of configuration 'cfg' with the three classes. */
static inline struct sl_sched *mk_cfg(const struct sl_sched_config *cfg)
{
    struct sl_sched_class_spec prod = {"production", 1000, false, false, 0};
    struct sl_sched_class_spec batch = {"batch", 100, true, false, 0};
    struct sl_sched_class_spec be = {"best-effort", 0, true, true, 0};
    struct sl_sched *s = sl_sched_create(cfg);

    c_prod = sl_sched_class_set(s, &prod);
    c_batch = sl_sched_class_set(s, &batch);
    c_be = sl_sched_class_set(s, &be);
    return s;
}

static inline struct sl_sched *mk(enum sl_placement policy, int64_t half_life_ms)
{
    struct sl_sched_config cfg;

    sl_sched_config_init(&cfg);
    cfg.placement = policy;
    cfg.half_life_ms = half_life_ms;
    cfg.seed = 7;
    return mk_cfg(&cfg);
}

static inline int node(struct sl_sched *s, const char *name, const char *domain, int cpus,
                int mem_gi, int ngpus, const char *model)
{
    struct sl_sched_node_spec n = {0};

    n.name = name;
    n.domain = domain;
    n.cpu_milli = cpus * 1000LL;
    n.mem_bytes = mem_gi * GI;
    n.ngpus = ngpus;
    for (int g = 0; g < ngpus; g++)
        n.gpu_model[g] = model;
    return sl_sched_node_add(s, &n);
}

/* A queue: nominal GPUs (-1 = none), cohort, borrow and lend limits (-1). */
static inline int queue(struct sl_sched *s, const char *name, double nominal_gpus,
                 const char *cohort, double borrow, double lend)
{
    struct sl_sched_queue_spec q;

    sl_sched_queue_spec_init(&q, name);
    q.cohort = cohort;
    if (nominal_gpus >= 0)
        q.nominal.v[SL_DIM_GPU] = (int64_t)(nominal_gpus * 1000);
    if (borrow >= 0)
        q.borrowing_limit.v[SL_DIM_GPU] = (int64_t)(borrow * 1000);
    if (lend >= 0)
        q.lending_limit.v[SL_DIM_GPU] = (int64_t)(lend * 1000);
    return sl_sched_queue_set(s, &q);
}

struct jspec {
    int queue, user, pclass, tasks, gpus, milli, topology;
    int64_t cpu_milli, mem, submit, max_runtime;
    const char *const *models;
};

/* The scheduler's spec of job 'id' as 'js' says (1 task, 1 CPU and 1Gi by
 * default; submitted at T0 + id unless given). */
static inline struct sl_sched_job_spec job_spec(int64_t id, struct jspec js)
{
    struct sl_sched_job_spec j = {0};

    j.id = id;
    j.queue = js.queue;
    j.user = js.user;
    j.pclass = js.pclass;
    j.submit_ms = js.submit ? js.submit : T0 + id;
    j.tasks = js.tasks ? js.tasks : 1;
    j.gpus = js.gpus;
    j.gpu_milli = js.milli;
    j.cpu_milli = js.cpu_milli ? js.cpu_milli : 1000;
    j.mem_bytes = js.mem ? js.mem : GI;
    j.topology = js.topology;
    j.max_runtime_ms = js.max_runtime;
    j.gpu_models = js.models;
    return j;
}

static inline int add(struct sl_sched *s, int64_t id, struct jspec js)
{
    struct sl_sched_job_spec j = job_spec(id, js);
    struct sl_error err = {{0}, {0}};
    int rc = sl_sched_job_add(s, &j, &err);

    if (rc < 0)
        diag("add job %lld: %s: %s", (long long)id, err.field, err.text);
    return rc;
}

/* Run a full pass; returns the result (caller finis). */
static inline struct sl_sched_result pass_at(struct sl_sched *s, int64_t now)
{
    struct sl_sched_result r;

    if (sl_sched_pass(s, now, false, &r) < 0)
        diag("pass failed");
    return r;
}

static inline const struct sl_sched_start *started(const struct sl_sched_result *r, int64_t id)
{
    for (int i = 0; i < r->nstarts; i++)
        if (r->starts[i].job_id == id)
            return &r->starts[i];
    return NULL;
}

static inline const struct sl_sched_preempt *preempted(const struct sl_sched_result *r,
                                                int64_t id)
{
    for (int i = 0; i < r->npreempts; i++)
        if (r->preempts[i].job_id == id)
            return &r->preempts[i];
    return NULL;
}

static inline const char *node_name(struct sl_sched *s, int node)
{
    struct sl_sched_node_view v;

    return sl_sched_node_view(s, node, &v) == 0 ? v.name : "?";
}

static inline json_t *explain(struct sl_sched *s, int64_t id, int64_t now)
{
    struct sl_buf b;
    json_t *doc;

    sl_buf_init(&b);
    if (sl_sched_explain(s, id, now, &b) < 0) {
        sl_buf_fini(&b);
        return NULL;
    }
    doc = json_loadb(b.data, b.len, 0, NULL);
    if (!doc)
        diag("explain is not JSON: %s", b.data);
    sl_buf_fini(&b);
    return doc;
}

static inline const char *reason(struct sl_sched *s, int64_t id, int64_t now)
{
    static char buf[512];

    sl_sched_reason(s, id, now, buf, sizeof(buf));
    return buf;
}

#endif
