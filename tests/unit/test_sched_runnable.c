/*
 * test_sched_runnable.c - sl_sched_job_runnable against its contract (a
 * request no empty cluster and no limit of its queue admits is refused,
 * naming the field, and nothing changes), and what why says of a waiting
 * job that cannot run, of the numbers of a quota blocker, and of the
 * start it may expect from the running jobs' maxRuntime.
 */
#include "sched_harness.h"

/* 'got' holds 'want'. */
#define has(got, want, ...) ok((got) && strstr((got), (want)) != NULL, __VA_ARGS__)

static int runnable(struct sl_sched *s, struct jspec js, struct sl_error *err)
{
    struct sl_sched_job_spec j = job_spec(1, js); /* id and user unread */

    memset(err, 0, sizeof(*err));
    return sl_sched_job_runnable(s, &j, err);
}

static void cluster_limits(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1);
    static const char *const b200[] = {"B200", NULL};
    static const char *const h100[] = {"h100", NULL};
    struct sl_error e;

    node(s, "a1", "rack-a", 16, 64, 4, "H100");
    node(s, "a2", "rack-a", 16, 64, 4, "H100");
    node(s, "b1", "rack-b", 16, 64, 4, "H100");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .gpus = 4}, &e), 0,
           "a job of the largest node's size could run");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .gpus = 8}, &e), -E2BIG,
           "8 GPUs per task on 4-GPU nodes cannot");
    is_str(e.field, "spec.resources.gpus", "naming spec.resources.gpus");
    is_str(e.text, "cannot run: 8 GPUs per task, the largest node has 4", "saying why");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .cpu_milli = 32000}, &e),
           -E2BIG, "32 CPUs per task on 16-CPU nodes cannot");
    is_str(e.field, "spec.resources.cpus", "naming spec.resources.cpus");
    has(e.text, "32 CPUs per task, the largest node has 16 CPUs", "with both numbers");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .mem = 65 * GI}, &e),
           -E2BIG, "65Gi per task on 64Gi nodes cannot");
    is_str(e.field, "spec.resources.memory", "naming spec.resources.memory");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .tasks = 4, .gpus = 4},
                    &e),
           -E2BIG, "4 tasks of 4 GPUs on 3 nodes of 4 cannot");
    is_str(e.field, "spec.tasks", "naming spec.tasks");
    has(e.text, "the whole cluster takes 3", "and what the cluster takes");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .tasks = 3, .gpus = 4}, &e),
           0, "3 tasks of 4 GPUs anywhere could run");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .tasks = 2, .gpus = 3,
                                      .topology = SL_TOPO_SAME_NODE},
                    &e),
           -E2BIG, "2 tasks of 3 GPUs on one node of 4 cannot");
    has(e.text, "on one node (topology same-node), the largest node takes 1", "said so");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .tasks = 3, .gpus = 4,
                                      .topology = SL_TOPO_SAME_DOMAIN},
                    &e),
           -E2BIG, "3 tasks of 4 GPUs in one domain of 2 nodes cannot");
    has(e.text, "in one domain (topology same-domain), the largest domain takes 2", "said so");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .tasks = 2, .gpus = 4,
                                      .topology = SL_TOPO_SAME_DOMAIN},
                    &e),
           0, "2 tasks of 4 GPUs in rack-a could run");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .gpus = 1, .models = h100},
                    &e),
           0, "a model named in another case is the same model");
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .gpus = 1, .models = b200},
                    &e),
           -E2BIG, "a model no node has cannot");
    is_str(e.field, "spec.resources.gpuModels", "naming spec.resources.gpuModels");
    is_str(e.text, "cannot run: no node has a GPU of model B200 (the models here: H100)",
           "and the models there are");
    is_int(sl_sched_model_count(s), 1, "the refused model takes no model id");
    sl_sched_model(s, "B200"); /* known, as a job of an earlier day made it */
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .gpus = 1, .models = b200},
                    &e),
           -E2BIG, "a model known but on no node cannot either");
    sl_sched_destroy(s);

    s = mk(SL_PLACE_BESTFIT, 0);
    q = queue(s, "q", -1, NULL, -1, -1);
    node(s, "gpu", NULL, 2, 64, 4, "A100");
    node(s, "cpu", NULL, 32, 64, 0, NULL);
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .gpus = 1,
                                      .cpu_milli = 8000},
                    &e),
           -E2BIG, "1 GPU with 8 CPUs where GPUs and CPUs are on different nodes cannot");
    is_str(e.field, "spec.resources", "naming spec.resources");
    has(e.text, "no node has all of 1 GPU, 8 CPUs, 1Gi of memory per task", "said so");
    sl_sched_destroy(s);

    s = mk(SL_PLACE_BESTFIT, 0);
    q = queue(s, "q", -1, NULL, -1, -1);
    node(s, "cpu", NULL, 32, 64, 0, NULL);
    is_int(runnable(s, (struct jspec){.queue = q, .pclass = c_batch, .milli = 500}, &e), -E2BIG,
           "half a GPU where no node has one cannot");
    is_str(e.field, "spec.resources.gpuMilli", "naming spec.resources.gpuMilli");
    is_str(e.text, "cannot run: it asks for GPUs and no node has one", "said so");
    sl_sched_destroy(s);
}

static void queue_limits(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    struct sl_sched_queue_spec qs;
    int lone = queue(s, "lone", 2, NULL, -1, -1);
    int a = queue(s, "a", 2, "pool", -1, -1), capped;
    struct sl_error e;

    queue(s, "b", 2, "pool", -1, 1);
    capped = queue(s, "capped", 2, "pool", 0, -1);
    node(s, "n", NULL, 64, 256, 8, "A100");
    is_int(runnable(s, (struct jspec){.queue = lone, .pclass = c_batch, .gpus = 2}, &e), 0,
           "a queue's nominal quota admits its size");
    is_int(runnable(s, (struct jspec){.queue = lone, .pclass = c_batch, .gpus = 3}, &e),
           -EDQUOT, "3 GPUs over a nominal 2 with no cohort cannot run");
    is_str(e.field, "spec.resources.gpus", "naming spec.resources.gpus");
    is_str(e.text, "cannot run: it needs 3 GPUs, and queue lone may never hold more than 2 "
                   "GPUs (its nominal quota; it is in no cohort to borrow from): over by 1 "
                   "GPU",
           "with the limit, its source and by how much");
    is_int(runnable(s, (struct jspec){.queue = lone, .pclass = c_be, .gpus = 3}, &e), 0,
           "an opportunistic class skips the limits");
    /* a: nominal 2, may borrow what b (lends 1) and capped (lends 2) lend */
    is_int(runnable(s, (struct jspec){.queue = a, .pclass = c_batch, .gpus = 5}, &e), 0,
           "a queue may borrow what the others of its cohort lend (2 + 1 + 2)");
    is_int(runnable(s, (struct jspec){.queue = a, .pclass = c_batch, .gpus = 6}, &e), -EDQUOT,
           "but no more");
    has(e.text, "may never hold more than 5 GPUs (its nominal quota plus all that the other "
                 "queues of its cohort lend)",
         "said so");
    is_int(runnable(s, (struct jspec){.queue = capped, .pclass = c_batch, .gpus = 3}, &e),
           -EDQUOT, "a borrowing limit of 0 keeps a queue to its nominal quota");
    has(e.text, "(its nominal quota plus its borrowing limit)", "said so");
    sl_sched_queue_spec_init(&qs, "limited");
    qs.user_limit.v[SL_DIM_GPU] = 2000;
    int lim = sl_sched_queue_set(s, &qs);
    is_int(runnable(s, (struct jspec){.queue = lim, .pclass = c_batch, .gpus = 3}, &e), -EDQUOT,
           "3 GPUs over a per-user limit of 2 cannot run");
    is_str(e.text, "cannot run: it needs 3 GPUs, over the per-user limit of queue limited (2 "
                   "GPUs) by 1 GPU",
           "said with the numbers");
    is_int(runnable(s, (struct jspec){.queue = lim, .pclass = c_batch, .tasks = 2, .gpus = 1},
                    &e),
           0, "2 tasks of 1 GPU are within it");
    sl_sched_destroy(s);

    s = mk(SL_PLACE_BESTFIT, 0);
    lone = queue(s, "lone", 2, NULL, -1, -1);
    is_int(runnable(s, (struct jspec){.queue = lone, .pclass = c_batch, .gpus = 64}, &e),
           -EDQUOT, "with no node known yet, the limits still refuse");
    is_int(runnable(s, (struct jspec){.queue = lone, .pclass = c_batch, .gpus = 2,
                                      .cpu_milli = 999000},
                    &e),
           0, "and the cluster says nothing");
    is_int(runnable(s, (struct jspec){.queue = 7, .pclass = c_batch, .gpus = 1}, &e), -EINVAL,
           "an unknown queue is out of range");
    sl_sched_destroy(s);
}

static void why_cannot_run(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice");
    struct sl_sched_queue_spec qs;
    struct sl_sched_result r;
    json_t *e, *b;
    const char *rs;

    node(s, "small", NULL, 16, 64, 4, "A100");
    node(s, "big", NULL, 16, 64, 8, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 8});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 8});
    r = pass_at(s, T0);
    ok(started(&r, 1) && !started(&r, 2), "one 8-GPU job runs on big, the next waits");
    sl_sched_result_fini(&r);
    has(reason(s, 2, T0), "resources: no node has 8 GPUs", "it waits for GPUs to free");
    sl_sched_node_schedulable(s, 1, false);
    sl_sched_node_note(s, 1, "down: not responding");
    rs = reason(s, 2, T0);
    is_str(rs, "cannot run on the nodes that take work now: 8 GPUs per task, the largest "
               "node has 4",
           "once big takes no work, the waiting job cannot run: said so");
    e = explain(s, 2, T0);
    b = json_array_get(json_object_get(e, "blockers"), 0);
    is_int((int)json_array_size(json_object_get(e, "blockers")), 1, "one blocker");
    is_str(json_string_value(json_object_get(b, "kind")), "cannot_run", "kind cannot_run");
    is_str(json_string_value(json_object_get(b, "cause")), "nodes_out", "cause nodes_out");
    is_str(json_string_value(json_object_get(
               json_array_get(json_object_get(b, "unschedulable_nodes"), 0), "node")),
           "big", "naming big");
    has(json_string_value(json_array_get(json_object_get(e, "would_run_if"), 0)),
         "node big takes work again (down: not responding)",
         "it would run if big took work again, not if others released");
    is_int((int)json_array_size(json_object_get(e, "would_run_if")), 1, "and only that");
    json_decref(e);
    sl_sched_node_schedulable(s, 1, true);
    sl_sched_node_note(s, 1, NULL);

    /* a limit lowered under a waiting job */
    sl_sched_queue_spec_init(&qs, "q");
    qs.user_limit.v[SL_DIM_GPU] = 4000;
    sl_sched_queue_set(s, &qs);
    rs = reason(s, 2, T0);
    is_str(rs, "cannot run: it needs 8 GPUs, over the per-user limit of queue q (4 GPUs) by 4 "
               "GPUs",
           "a per-user limit lowered below the job: cannot run");
    e = explain(s, 2, T0);
    b = json_array_get(json_object_get(e, "blockers"), 0);
    is_str(json_string_value(json_object_get(b, "cause")), "limit", "cause limit");
    is_str(json_string_value(json_object_get(b, "field")), "spec.resources.gpus",
           "the field at fault");
    has(json_string_value(json_array_get(json_object_get(e, "would_run_if"), 0)),
         "an admin raises the limit", "what would change it is an admin's");
    json_decref(e);
    sl_sched_destroy(s);
}

static void quota_numbers(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "research", 3, NULL, -1, -1), u = sl_sched_user(s, "alice");
    struct sl_sched_result r;
    json_t *e, *b;

    node(s, "n", NULL, 64, 256, 8, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    r = pass_at(s, T0);
    ok(started(&r, 1) && !started(&r, 2), "2 of a quota of 3 GPUs run; 2 more wait");
    sl_sched_result_fini(&r);
    is_str(reason(s, 2, T0), "quota: queue research may hold 3 GPUs; holds 2, this job needs "
                             "2, over the limit by 1",
           "the reason gives the request and the overshoot");
    e = explain(s, 2, T0);
    b = json_array_get(json_object_get(e, "blockers"), 0);
    ok(json_number_value(json_object_get(b, "short")) == 1.0,
       "the blocker's short is the same overshoot");
    has(json_string_value(json_array_get(json_object_get(e, "would_run_if"), 0)),
         "release 1 GPU", "and what would let it run releases as much");
    json_decref(e);
    sl_sched_destroy(s);
}

static void eta_by_max_runtime(void)
{
    struct sl_sched_config cfg;
    struct sl_sched *s;
    struct sl_sched_result r;
    int q, u;
    json_t *e;
    char at[40];

    sl_sched_config_init(&cfg);
    cfg.placement = SL_PLACE_BESTFIT;
    cfg.reservations = 1;
    s = mk_cfg(&cfg);
    q = queue(s, "q", -1, NULL, -1, -1);
    u = sl_sched_user(s, "alice");
    node(s, "n", NULL, 64, 256, 4, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = H});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = 2 * H});
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 4});
    add(s, 4, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    r = pass_at(s, T0);
    ok(started(&r, 1) && started(&r, 2) && !started(&r, 3) && !started(&r, 4),
       "two 2-GPU jobs with a maxRuntime fill the node; a 4- and a 2-GPU job wait");
    sl_sched_result_fini(&r);
    e = explain(s, 3, T0);
    is_str(json_string_value(json_object_get(e, "eta_basis")), "reservation",
           "the first waiting job has the reservation");
    json_decref(e);
    e = explain(s, 4, T0);
    is_str(json_string_value(json_object_get(e, "eta_basis")), "max_runtime",
           "the second has an estimate from the running jobs' maxRuntime");
    is_str(json_string_value(json_object_get(e, "eta")),
           sl_time_rfc3339(T0 + H, at, sizeof(at)),
           "the moment the first of them ends, which frees 2 GPUs");
    json_decref(e);
    sl_sched_destroy(s);

    s = mk_cfg(&cfg);
    q = queue(s, "q", -1, NULL, -1, -1);
    u = sl_sched_user(s, "alice");
    node(s, "n", NULL, 64, 256, 4, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 4});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 4});
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 4});
    sl_sched_result_fini((r = pass_at(s, T0), &r));
    e = explain(s, 3, T0);
    ok(json_is_null(json_object_get(e, "eta")) &&
           !strcmp(json_string_value(json_object_get(e, "eta_basis")), "none"),
       "with no maxRuntime on the running job, no estimate");
    json_decref(e);
    sl_sched_destroy(s);
}

int main(void)
{
    cluster_limits();
    queue_limits();
    why_cannot_run();
    quota_numbers();
    eta_by_max_runtime();
    return done_testing();
}
