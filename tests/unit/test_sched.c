/*
 * test_sched.c - the scheduler on small hand-built clusters: placement
 * policies, gang and topology, quotas with borrowing, lending and reclaim,
 * fair share with history, priorities and preemption, backfill, and the
 * explanations of pending jobs. Time is an argument; nothing sleeps.
 */
#include "sched_harness.h"

static void like_reason(struct sl_sched *s, int64_t id, int64_t now);

/* ---- placement and gang ---------------------------------------------- */

static void basics(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice");
    struct sl_sched_result r;
    const struct sl_sched_start *st;
    struct sl_sched_node_view v;

    node(s, "n1", NULL, 16, 64, 4, "A100");
    node(s, "n2", NULL, 16, 64, 2, "A100");
    is_int(sl_sched_node_add(s, &(struct sl_sched_node_spec){.name = "n1"}), -EEXIST,
           "a node name can be added only once");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    r = pass_at(s, T0);
    st = started(&r, 1);
    ok(st && st->ntasks == 1, "a job that fits starts in the first pass");
    ok(st && st->tasks[0].node == 1 && st->tasks[0].ngpus == 2 &&
           st->tasks[0].gpu_milli == 1000,
       "bestfit puts 2 GPUs on the node with exactly 2 free");
    is_int(sl_sched_job_state(s, 1), SL_SCHED_RUNNING, "the started job is running");
    sl_sched_node_view(s, 1, &v);
    is_int(v.gpu_free_milli[0] + v.gpu_free_milli[1], 0, "its GPUs are taken");
    is_int(v.cpu_free, 15000, "and its CPU");
    sl_sched_result_fini(&r);
    sl_sched_job_remove(s, 1, T0 + 10);
    sl_sched_node_view(s, 1, &v);
    is_int(v.gpu_free_milli[0] + v.gpu_free_milli[1], 2000,
           "removing a running job gives its GPUs back");
    is_int(sl_sched_job_remove(s, 1, T0), -ENOENT, "a removed job is unknown");
    sl_sched_destroy(s);
}

static void fractions(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    const struct sl_sched_start *a, *b, *c;

    node(s, "n1", NULL, 16, 64, 2, "T4");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .milli = 500});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .milli = 500});
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .milli = 600});
    r = pass_at(s, T0);
    a = started(&r, 1);
    b = started(&r, 2);
    c = started(&r, 3);
    ok(a && b && c, "three fractional tasks start on two GPUs");
    ok(a && b && a->tasks[0].gpus[0] == b->tasks[0].gpus[0] && a->tasks[0].gpu_milli == 500,
       "two halves share one GPU");
    ok(a && c && c->tasks[0].gpus[0] != a->tasks[0].gpus[0],
       "the 600-milli task takes the other GPU");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void gangs(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    const struct sl_sched_start *st;
    struct sl_sched_node_view v0, v1;
    json_t *e;

    node(s, "n1", NULL, 16, 64, 4, "H100");
    node(s, "n2", NULL, 16, 64, 4, "H100");
    add(s, 9, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 3});
    sl_sched_result_fini((r = pass_at(s, T0), &r));
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .tasks = 3, .gpus = 2});
    r = pass_at(s, T0);
    ok(!started(&r, 1), "a gang of 3 x 2 GPUs does not start beside a 3-GPU job on 2 x 4 GPUs");
    sl_sched_node_view(s, 0, &v0);
    sl_sched_node_view(s, 1, &v1);
    is_int(v0.gpu_free_milli[0] + v0.gpu_free_milli[1] + v0.gpu_free_milli[2] +
               v0.gpu_free_milli[3] + v1.gpu_free_milli[0] + v1.gpu_free_milli[1] +
               v1.gpu_free_milli[2] + v1.gpu_free_milli[3],
           5000, "and holds no GPU: all or nothing");
    like_reason(s, 1, T0);
    e = explain(s, 1, T0);
    ok(e && !strcmp(json_string_value(json_object_get(
                        json_array_get(json_object_get(e, "blockers"), 0), "kind")),
                    "gang"),
       "explain names the gang as the blocker");
    is_int(json_integer_value(json_object_get(json_array_get(json_object_get(e, "blockers"), 0),
                                              "tasks_fit")),
           2, "and says 2 of the 3 tasks fit");
    json_decref(e);
    sl_sched_result_fini(&r);
    /* 3 x 3 GPUs never fits 2 x 4 GPUs: said so, not as what others hold */
    add(s, 4, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .tasks = 3, .gpus = 3});
    ok(strstr(reason(s, 4, T0), "cannot run: 3 tasks of 3 GPUs") &&
           strstr(reason(s, 4, T0), "the whole cluster takes 2"),
       "a gang the empty cluster cannot hold: the reason says it cannot run (%s)",
       reason(s, 4, T0));
    e = explain(s, 4, T0);
    is_str(json_string_value(json_object_get(json_array_get(json_object_get(e, "blockers"), 0),
                                             "kind")),
           "cannot_run", "explain: its only blocker is cannot_run");
    is_int((int)json_array_size(json_object_get(e, "blockers")), 1, "and nothing else");
    is_str(json_string_value(json_object_get(json_array_get(json_object_get(e, "blockers"), 0),
                                             "field")),
           "spec.tasks", "naming spec.tasks");
    json_decref(e);
    sl_sched_job_remove(s, 4, T0);
    sl_sched_job_remove(s, 1, T0);
    sl_sched_job_remove(s, 9, T0);
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .tasks = 3, .gpus = 2});
    r = pass_at(s, T0);
    st = started(&r, 2);
    ok(st && st->ntasks == 3, "a gang of 3 x 2 GPUs starts whole on 2 x 4 GPUs");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

/* Defined after gangs() uses it: the reason line of a gang. */
static void like_reason_impl(struct sl_sched *s, int64_t id, int64_t now)
{
    const char *rs = reason(s, id, now);
    ok(strstr(rs, "2 of 3 tasks fit") != NULL, "the reason says how many tasks fit (%s)", rs);
}

static void topology(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    const struct sl_sched_start *st;

    node(s, "a1", "rack-a", 16, 64, 2, "A100");
    node(s, "a2", "rack-a", 16, 64, 2, "A100");
    node(s, "b1", "rack-b", 32, 128, 8, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .tasks = 3, .gpus = 1,
                             .topology = SL_TOPO_SAME_DOMAIN});
    r = pass_at(s, T0);
    st = started(&r, 1);
    ok(st && st->tasks[0].node <= 1 && st->tasks[1].node <= 1 && st->tasks[2].node <= 1,
       "same-domain puts the gang in the fuller domain that holds it (rack-a)");
    sl_sched_result_fini(&r);
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .tasks = 2, .gpus = 2,
                             .topology = SL_TOPO_SAME_NODE});
    r = pass_at(s, T0);
    st = started(&r, 2);
    ok(st && st->tasks[0].node == 2 && st->tasks[1].node == 2,
       "same-node puts both tasks on the one node that takes them (%s)",
       st ? node_name(s, st->tasks[0].node) : "none");
    sl_sched_result_fini(&r);
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .tasks = 2, .gpus = 3,
                             .topology = SL_TOPO_SAME_NODE});
    r = pass_at(s, T0);
    ok(!started(&r, 3), "same-node refuses a gang no single node holds (4 GPUs left, "
                        "1 + 4 across nodes)");
    sl_sched_result_fini(&r);
    {
        json_t *e = explain(s, 3, T0), *b = json_array_get(json_object_get(e, "blockers"), 0);
        ok(b && !strcmp(json_string_value(json_object_get(b, "kind")), "gang") &&
               !strcmp(json_string_value(json_object_get(b, "topology")), "same-node"),
           "explain blames the gang's topology, though its GPUs are free across nodes");
        json_decref(e);
    }
    /* 5 GPUs free: 1 in rack-a, 4 in rack-b; a 5-task gang in one rack
     * fits neither. */
    add(s, 4, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .tasks = 5, .gpus = 1,
                             .topology = SL_TOPO_SAME_DOMAIN});
    r = pass_at(s, T0);
    ok(!started(&r, 4), "same-domain refuses a gang no domain holds (5 free GPUs: 1 + 4)");
    sl_sched_result_fini(&r);
    {
        json_t *e = explain(s, 4, T0), *b = json_array_get(json_object_get(e, "blockers"), 0);
        ok(b && !strcmp(json_string_value(json_object_get(b, "kind")), "gang") &&
               json_integer_value(json_object_get(b, "tasks_fit")) == 4,
           "explain: a gang, 4 of its 5 tasks fit in the best domain");
        json_decref(e);
    }
    sl_sched_destroy(s);
}

/* A node out of service is named, with the reason given for it, in the
 * nodes blocker and in what would let the job run. */
static void unschedulable(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    json_t *e, *bl, *list, *ifs;

    node(s, "n1", NULL, 16, 64, 1, "H100");
    node(s, "n2", NULL, 16, 64, 1, "H100");
    node(s, "n3", NULL, 16, 64, 8, "H100");
    sl_sched_node_schedulable(s, 2, false);
    is_int(sl_sched_node_note(s, 2, "draining: disk swap [root@2026-12-04T17:01:41]"), 0,
           "a note on node n3");
    is_int(sl_sched_node_note(s, 7, "x"), -ENOENT, "no note on a node that does not exist");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 4});
    r = pass_at(s, T0);
    ok(!started(&r, 1), "a 4-GPU job waits: only the drained node has 4");
    e = explain(s, 1, T0);
    bl = json_array_get(json_object_get(e, "blockers"), 0);
    list = json_object_get(bl, "unschedulable_nodes");
    ok(json_array_size(list) == 1 &&
           !strcmp(json_string_value(json_object_get(json_array_get(list, 0), "node")), "n3") &&
           !strcmp(json_string_value(json_object_get(json_array_get(list, 0), "why")),
                   "draining: disk swap [root@2026-12-04T17:01:41]"),
       "the blocker names n3 and why it takes no task");
    ifs = json_object_get(e, "would_run_if");
    {
        bool said = false;
        for (size_t i = 0; i < json_array_size(ifs); i++)
            said = said || strstr(json_string_value(json_array_get(ifs, i)),
                                  "node n3 takes work again (draining: disk swap");
        ok(said, "and says it would run when n3 takes work again");
    }
    json_decref(e);
    sl_sched_result_fini(&r);
    {
        /* an admin's drain with its reason, who and since when, and the
         * executor's state after it, is kept whole up to 480 bytes */
        char longer[600];
        memset(longer, 'r', sizeof(longer) - 1);
        longer[sizeof(longer) - 1] = '\0';
        memcpy(longer, "drained by", 10);
        is_int(sl_sched_node_note(s, 2, longer), 0, "a long note on n3");
        e = explain(s, 1, T0);
        bl = json_array_get(json_object_get(e, "blockers"), 0);
        list = json_object_get(bl, "unschedulable_nodes");
        is_int((int)strlen(json_string_value(json_object_get(json_array_get(list, 0), "why"))),
               480, "a note is kept up to 480 bytes");
        json_decref(e);
    }
    sl_sched_node_schedulable(s, 2, true);
    is_int(sl_sched_node_note(s, 2, NULL), 0, "the note cleared when n3 is back");
    r = pass_at(s, T0 + 1000);
    ok(started(&r, 1), "then the job runs on n3");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void models(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    static const char *const h100[] = {"H100", NULL};
    static const char *const b200[] = {"B200", NULL};
    struct sl_sched_result r;
    const struct sl_sched_start *st;
    json_t *e, *bl;

    node(s, "t4", NULL, 16, 64, 1, "T4");
    node(s, "h", NULL, 16, 64, 4, "H100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1, .models = h100});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1, .models = b200});
    r = pass_at(s, T0);
    st = started(&r, 1);
    ok(st && st->tasks[0].node == 1, "a job allowed only H100 goes to the H100 node, "
                                     "though the T4 is the tighter fit");
    ok(!started(&r, 2), "a job for a model no node has waits");
    e = explain(s, 2, T0);
    bl = json_array_get(json_object_get(e, "blockers"), 0);
    ok(!strcmp(json_string_value(json_object_get(bl, "kind")), "cannot_run") &&
           strstr(json_string_value(json_object_get(bl, "detail")),
                  "no node has a GPU of model B200 (the models here: T4|H100)"),
       "explain says it cannot run: no node has the model (%s)",
       json_string_value(json_object_get(bl, "detail")));
    json_decref(e);
    sl_sched_result_fini(&r);
    /* With the H100s full, a job for H100 only fits nowhere; one for any
     * model still goes to the T4 in the same pass (what failed for a
     * narrower set of models says nothing of a wider one). */
    for (int i = 3; i <= 5; i++)
        add(s, i, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                                 .models = h100, .submit = T0 + 10 + i});
    add(s, 6, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .submit = T0 + 20});
    add(s, 7, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .models = h100, .submit = T0 + 16});
    add(s, 8, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .submit = T0 + 22});
    r = pass_at(s, T0 + 1000);
    ok(started(&r, 3) && started(&r, 4) && started(&r, 5), "three H100 jobs fill the H100s");
    ok(!started(&r, 7), "the fourth H100 job finds none");
    st = started(&r, 6);
    ok(st && st->tasks[0].node == 0, "a job for any model takes the T4");
    ok(!started(&r, 8), "and the next finds the T4 taken too");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

/* ---- placement policies ---------------------------------------------- */

static int place_one(enum sl_placement p, int gpus, int milli, int *gpu_out,
                     void (*setup)(struct sl_sched *))
{
    struct sl_sched *s = mk(p, 0);
    struct sl_sched_job_spec j = {.id = 99, .tasks = 1, .gpus = gpus, .gpu_milli = milli,
                                  .cpu_milli = 1000, .mem_bytes = GI};
    struct sl_sched_task_place pl[1];
    int n = -1;

    setup(s);
    if (sl_sched_place_now(s, &j, pl) == 1) {
        n = pl[0].node;
        if (gpu_out)
            *gpu_out = pl[0].gpus[0];
    }
    sl_sched_destroy(s);
    return n;
}

/* Node 0: 1 GPU free of 8; node 1: 8 free; node 2: 4 free. */
static void setup_mixed(struct sl_sched *s)
{
    struct sl_sched_job_spec fill = {.tasks = 1, .cpu_milli = 1000, .mem_bytes = GI};
    struct sl_sched_task_place pl[1];

    node(s, "busy", NULL, 96, 512, 8, "G2");
    node(s, "empty", NULL, 96, 512, 8, "G2");
    node(s, "half", NULL, 96, 512, 4, "G2");
    /* fill node 0 with 7 whole GPUs, one at a time onto it */
    for (int i = 0; i < 7; i++) {
        sl_sched_node_schedulable(s, 1, false);
        sl_sched_node_schedulable(s, 2, false);
        fill.id = 1000 + i;
        fill.gpus = 1;
        sl_sched_place_now(s, &fill, pl);
    }
    sl_sched_node_schedulable(s, 1, true);
    sl_sched_node_schedulable(s, 2, true);
}

/* Node 0 has a GPU with 500 milli free; node 1 is empty. */
static void setup_shared(struct sl_sched *s)
{
    struct sl_sched_job_spec half = {.id = 1, .tasks = 1, .gpu_milli = 500,
                                     .cpu_milli = 1000, .mem_bytes = GI};
    struct sl_sched_task_place pl[1];

    node(s, "shared", NULL, 32, 128, 2, "T4");
    node(s, "idle", NULL, 32, 128, 2, "T4");
    sl_sched_node_schedulable(s, 1, false);
    sl_sched_place_now(s, &half, pl);
    sl_sched_node_schedulable(s, 1, true);
}

static void setup_fgd(struct sl_sched *s)
{
    /* The workload is all 8-GPU tasks: breaking an idle 8-GPU node into a
     * 7 leaves 7 GPUs no typical task can use. */
    struct sl_sched_typical t[] = {{.cpu_milli = 1000, .gpus = 8, .gpu_milli = 1000,
                                    .weight = 1}};
    setup_mixed(s);
    sl_sched_set_typical(s, t, 1);
}

static void policies(void)
{
    int gpu = -1;

    is_int(place_one(SL_PLACE_BESTFIT, 1, 0, NULL, setup_mixed), 0,
           "bestfit takes the node with the least left over");
    is_int(place_one(SL_PLACE_SPREAD, 1, 0, NULL, setup_mixed), 1,
           "spread takes the emptiest node");
    is_int(place_one(SL_PLACE_PACKING, 1, 0, NULL, setup_mixed), 0,
           "packing prefers free GPUs on a used node");
    is_int(place_one(SL_PLACE_FGD, 1, 0, NULL, setup_fgd), 0,
           "fgd keeps the idle 8-GPU node whole for the typical 8-GPU task");
    is_int(place_one(SL_PLACE_PACKING, 0, 300, &gpu, setup_shared), 0,
           "packing puts a fraction on the shared GPU");
    is_int(gpu, 0, "on the GPU that is already half used");
    is_int(place_one(SL_PLACE_BESTFIT, 0, 300, &gpu, setup_shared), 0,
           "bestfit puts a fraction on the tightest GPU too");
    is_int(place_one(SL_PLACE_CLUSTERING, 0, 300, NULL, setup_shared), 0,
           "clustering puts a fraction where fractions already run");
    is_int(place_one(SL_PLACE_DOTPROD, 1, 0, NULL, setup_mixed), 0,
           "dotprod takes the node whose free vector aligns least with the task");
    {
        /* random: uniform over the nodes that fit */
        int counts[4] = {0};
        struct sl_sched *s = mk(SL_PLACE_RANDOM, 0);
        struct sl_sched_task_place pl[1];
        for (int i = 0; i < 4; i++) {
            char name[8];
            snprintf(name, sizeof(name), "r%d", i);
            node(s, name, NULL, 4000, 4000, 0, NULL);
        }
        for (int i = 0; i < 400; i++) {
            struct sl_sched_job_spec j = {.id = i + 1, .tasks = 1, .cpu_milli = 1,
                                          .mem_bytes = 1};
            if (sl_sched_place_now(s, &j, pl) == 1)
                counts[pl[0].node]++;
        }
        ok(counts[0] > 60 && counts[1] > 60 && counts[2] > 60 && counts[3] > 60,
           "random spreads 400 tasks over 4 equal nodes (%d %d %d %d)", counts[0],
           counts[1], counts[2], counts[3]);
        sl_sched_destroy(s);
    }
}

/* ---- priorities, quotas, cohorts --------------------------------------- */

static void priority_order(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;

    node(s, "n", NULL, 16, 64, 1, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_prod, .gpus = 1});
    r = pass_at(s, T0);
    ok(started(&r, 2) && !started(&r, 1),
       "the production job takes the last GPU before an older batch job");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void quotas(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "research", 2, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    json_t *e, *b;
    const char *rs;

    node(s, "n", NULL, 64, 256, 8, "A100");
    for (int i = 1; i <= 3; i++)
        add(s, i, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    ok(started(&r, 1) && started(&r, 2) && !started(&r, 3),
       "a queue with a nominal quota of 2 GPUs runs 2 one-GPU jobs, though 8 are free");
    rs = reason(s, 3, T0);
    ok(strstr(rs, "quota: queue research may hold 2 GPUs; holds 2, this job needs 1, over the limit by 1") != NULL,
       "the reason names the queue, the resource and the numbers (%s)", rs);
    e = explain(s, 3, T0);
    b = json_array_get(json_object_get(e, "blockers"), 0);
    is_str(json_string_value(json_object_get(b, "kind")), "quota", "explain: kind quota");
    is_str(json_string_value(json_object_get(b, "resource")), "gpu", "explain: resource gpu");
    ok(json_number_value(json_object_get(b, "short")) == 1.0, "explain: 1 GPU short");
    is_int(json_integer_value(json_object_get(e, "position")), 1,
           "explain: first in its queue");
    json_decref(e);
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void borrowing(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int a = queue(s, "a", 2, "pool", -1, -1), b = queue(s, "b", 2, "pool", -1, -1);
    int u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    int n = 0;

    (void)b;
    node(s, "n", NULL, 64, 256, 4, "A100");
    for (int i = 1; i <= 5; i++)
        add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    for (int i = 1; i <= 5; i++)
        n += started(&r, i) != NULL;
    is_int(n, 4, "queue a borrows b's unused 2 GPUs in the cohort: 4 run");
    ok(strstr(reason(s, 5, T0), "cohort pool is full: its queues borrow 4 of the 4 GPUs its "
                                "queues lend; this job needs 1 more, over the limit by 1") ||
           strstr(reason(s, 5, T0), "resources"),
       "the fifth waits for the cohort or the nodes (%s)", reason(s, 5, T0));
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);

    s = mk(SL_PLACE_BESTFIT, 0);
    a = queue(s, "a", 2, "pool", 1, -1);
    queue(s, "b", 2, "pool", -1, -1);
    u = sl_sched_user(s, "u");
    node(s, "n", NULL, 64, 256, 8, "A100");
    for (int i = 1; i <= 4; i++)
        add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    n = 0;
    for (int i = 1; i <= 4; i++)
        n += started(&r, i) != NULL;
    is_int(n, 3, "a borrowingLimit of 1 GPU lets the queue run 3");
    ok(strstr(reason(s, 4, T0), "may hold 3 GPUs") != NULL,
       "the reason counts nominal plus borrowing limit (%s)", reason(s, 4, T0));
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);

    s = mk(SL_PLACE_BESTFIT, 0);
    a = queue(s, "a", 2, "pool", -1, -1);
    queue(s, "b", 2, "pool", -1, 1);
    u = sl_sched_user(s, "u");
    node(s, "n", NULL, 64, 256, 8, "A100");
    for (int i = 1; i <= 4; i++)
        add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    n = 0;
    for (int i = 1; i <= 4; i++)
        n += started(&r, i) != NULL;
    is_int(n, 3, "when b lends at most 1 GPU, a runs 3");
    ok(strstr(reason(s, 4, T0), "cohort pool is full") != NULL,
       "the reason names the cohort (%s)", reason(s, 4, T0));
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void reclaim(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int a = queue(s, "a", 2, "pool", -1, -1), b = queue(s, "b", 2, "pool", -1, -1);
    int u = sl_sched_user(s, "u"), total = 0;
    struct sl_sched_result r;
    const struct sl_sched_preempt *p3, *p4;

    node(s, "n", NULL, 64, 256, 4, "A100");
    for (int i = 1; i <= 4; i++)
        add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1,
                                 .submit = T0 + i});
    r = pass_at(s, T0 + 10);
    is_int(r.nstarts, 4, "a borrows all 4 GPUs while b is idle");
    sl_sched_result_fini(&r);
    add(s, 10, (struct jspec){.queue = b, .user = u, .pclass = c_batch, .gpus = 1,
                              .submit = T0 + 100});
    add(s, 11, (struct jspec){.queue = b, .user = u, .pclass = c_batch, .gpus = 1,
                              .submit = T0 + 101});
    r = pass_at(s, T0 + H);
    p3 = preempted(&r, 3);
    p4 = preempted(&r, 4);
    is_int(r.npreempts, 2, "b reclaims its 2 GPUs: 2 of a's jobs are preempted");
    ok(p3 && p4, "the victims are a's 2 youngest jobs (3 and 4)");
    ok(p3 && p3->why == SL_PREEMPT_RECLAIM && (p3->for_job == 10 || p3->for_job == 11),
       "for reclaim, on behalf of b's jobs");
    is_int(sl_sched_job_state(s, 3), SL_SCHED_TERMINATING,
           "a victim is terminating until its caller stops it");
    ok(!started(&r, 10) && !started(&r, 11), "b's jobs wait for the victims to stop");
    ok(strstr(reason(s, 10, T0 + H), "preempting") != NULL, "and say so (%s)",
       reason(s, 10, T0 + H));
    sl_sched_result_fini(&r);
    sl_sched_job_requeue(s, 3, T0 + H + 1, 0);
    sl_sched_job_requeue(s, 4, T0 + H + 1, 0);
    r = pass_at(s, T0 + H + 2);
    ok(started(&r, 10) && started(&r, 11), "once they stop, b's jobs start");
    ok(!started(&r, 3) && !started(&r, 4), "the requeued victims wait");
    is_int(r.npreempts, 0, "and preempt nothing back: a is at its nominal quota");
    sl_sched_result_fini(&r);
    for (int k = 0; k < 5; k++) {
        r = pass_at(s, T0 + H + 10 + k);
        total += r.npreempts;
        sl_sched_result_fini(&r);
    }
    is_int(total, 0, "five more passes: no preemption loop");
    ok(strstr(reason(s, 3, T0 + H + 20), "cohort") || strstr(reason(s, 3, T0 + H + 20), "quota") ||
           strstr(reason(s, 3, T0 + H + 20), "resources"),
       "a requeued victim explains why it waits (%s)", reason(s, 3, T0 + H + 20));
    sl_sched_destroy(s);
}

/* Two preemptors of one queue, each within its nominal quota alone but not
 * together: only the first may reclaim, else the queue would go over
 * nominal when both start and be reclaimed from in turn, for ever. */
static void reclaim_claims(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int a = queue(s, "a", 4, "pool", -1, -1), b = queue(s, "b", 4, "pool", -1, -1);
    int u = sl_sched_user(s, "u"), total = 0;
    struct sl_sched_result r;

    node(s, "n1", NULL, 64, 256, 4, "A100");
    node(s, "n2", NULL, 64, 256, 4, "A100");
    for (int i = 1; i <= 8; i++)
        add(s, i, (struct jspec){.queue = b, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    is_int(r.nstarts, 8, "b borrows all 8 GPUs while a is idle");
    sl_sched_result_fini(&r);
    add(s, 20, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 4});
    add(s, 21, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 4});
    r = pass_at(s, T0 + H);
    is_int(r.npreempts, 4, "a reclaims its 4 GPUs once: 4 of b's jobs are preempted");
    for (int i = 0; i < r.npreempts; i++)
        total += r.preempts[i].for_job == 20;
    is_int(total, 4, "all for a's first job; the second is not entitled to more");
    sl_sched_result_fini(&r);
    for (int i = 1; i <= 8; i++)
        if (sl_sched_job_state(s, i) == SL_SCHED_TERMINATING)
            sl_sched_job_requeue(s, i, T0 + H + 1000, 0);
    r = pass_at(s, T0 + H + 2000);
    ok(started(&r, 20) && !started(&r, 21), "a's first job starts; the second waits");
    is_int(r.npreempts, 0, "nothing is preempted back: b is at its nominal quota");
    sl_sched_result_fini(&r);
    total = 0;
    for (int k = 0; k < 5; k++) {
        r = pass_at(s, T0 + H + 3000 + k * 1000);
        total += r.npreempts;
        sl_sched_result_fini(&r);
    }
    is_int(total, 0, "five more passes: no preemption either way");
    sl_sched_destroy(s);
}

/* A preemptor waiting for several victims keeps what the first ones free:
 * no other job may take it meanwhile, so that it runs when the last one
 * stops instead of preempting again. */
static void reclaim_holds(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;

    node(s, "n", NULL, 16, 64, 2, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    is_int(r.nstarts, 2, "two batch jobs take both GPUs");
    sl_sched_result_fini(&r);
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_prod, .gpus = 2});
    r = pass_at(s, T0 + 1000);
    is_int(r.npreempts, 2, "a production job needing both preempts both");
    sl_sched_result_fini(&r);
    sl_sched_job_requeue(s, 1, T0 + 2000, 0);
    add(s, 4, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0 + 2000);
    is_int(r.nstarts, 0, "the GPU the first victim freed is held: neither it nor a new job "
                          "takes it");
    is_int(r.npreempts, 0, "and the preemptor does not preempt again");
    ok(strstr(reason(s, 3, T0 + 2000), "preempting") != NULL, "it is waiting (%s)",
       reason(s, 3, T0 + 2000));
    sl_sched_result_fini(&r);
    sl_sched_job_requeue(s, 2, T0 + 3000, 0);
    r = pass_at(s, T0 + 3000);
    ok(started(&r, 3), "when the second victim stops, the preemptor runs");
    is_int(r.npreempts, 0, "with no further preemption");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

/* A reclaim takes from a queue only while it still borrows: two borrowers
 * each one GPU over nominal lose one job each, not two from one. */
static void reclaim_spread(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int a = queue(s, "a", 2, "pool", -1, -1), b = queue(s, "b", 2, "pool", -1, -1);
    int c = queue(s, "c", 2, "pool", -1, -1), u = sl_sched_user(s, "u");
    int from_a = 0, from_b = 0;
    struct sl_sched_result r;

    node(s, "n", NULL, 64, 256, 6, "A100");
    for (int i = 1; i <= 3; i++)
        add(s, i, (struct jspec){.queue = b, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    sl_sched_result_fini(&r);
    for (int i = 4; i <= 6; i++)
        add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0 + 1000);
    is_int(r.nstarts, 3, "a and b each borrow one GPU of c's (a's jobs are the youngest)");
    sl_sched_result_fini(&r);
    add(s, 10, (struct jspec){.queue = c, .user = u, .pclass = c_batch, .gpus = 2});
    r = pass_at(s, T0 + H);
    is_int(r.npreempts, 2, "c reclaims 2 GPUs");
    for (int i = 0; i < r.npreempts; i++) {
        from_a += r.preempts[i].job_id >= 4 && r.preempts[i].job_id <= 6;
        from_b += r.preempts[i].job_id <= 3;
    }
    ok(from_a == 1 && from_b == 1, "one from each borrower (a %d, b %d): a is back at its "
                                   "nominal quota after one", from_a, from_b);
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

/* Amounts in reasons read as people write them. */
static void amounts(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;

    node(s, "n", NULL, 4, 1, 1, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .mem = 512LL << 20});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .mem = 512LL << 20});
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 0,
                             .mem = 3LL << 29});
    r = pass_at(s, T0);
    sl_sched_result_fini(&r);
    ok(strstr(reason(s, 2, T0), "512Mi of memory") != NULL, "512 MiB reads 512Mi (%s)",
       reason(s, 2, T0));
    ok(strstr(reason(s, 3, T0), "1.5Gi of memory per task, the largest node has 1Gi") != NULL,
       "1.5 GiB against a 1 GiB node (%s)", reason(s, 3, T0));
    sl_sched_destroy(s);
}

static void priority_preemption(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_class_spec urgent = {"urgent", 5000, true, false, 0};
    int c_urgent = sl_sched_class_set(s, &urgent), total = 0;
    struct sl_sched_result r;
    const struct sl_sched_preempt *p;

    node(s, "n", NULL, 16, 64, 1, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    ok(started(&r, 1), "a batch job takes the only GPU");
    sl_sched_result_fini(&r);
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_prod, .gpus = 1});
    r = pass_at(s, T0 + 1000);
    p = preempted(&r, 1);
    ok(p && p->for_job == 2 && p->why == SL_PREEMPT_PRIORITY,
       "a production job of the same queue preempts it, for priority");
    sl_sched_result_fini(&r);
    sl_sched_job_requeue(s, 1, T0 + 2000, 0);
    r = pass_at(s, T0 + 3000);
    ok(started(&r, 2), "the production job starts once the victim stopped");
    sl_sched_result_fini(&r);
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_urgent, .gpus = 1});
    for (int k = 0; k < 3; k++) {
        r = pass_at(s, T0 + 4000 + k);
        total += r.npreempts;
        sl_sched_result_fini(&r);
    }
    is_int(total, 0, "a production job is never preempted, even by a higher class");
    sl_sched_destroy(s);
}

static void opportunistic(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int a = queue(s, "a", 1, NULL, -1, -1), b = queue(s, "b", 2, NULL, -1, -1);
    int u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    const struct sl_sched_preempt *p;
    struct sl_sched_queue_stats st;

    node(s, "n", NULL, 16, 64, 2, "A100");
    add(s, 1, (struct jspec){.queue = a, .user = u, .pclass = c_be, .gpus = 2});
    r = pass_at(s, T0);
    ok(started(&r, 1), "a best-effort job uses 2 idle GPUs beyond its queue's quota of 1");
    sl_sched_result_fini(&r);
    sl_sched_queue_stats(s, a, T0, &st);
    is_int(st.used.v[SL_DIM_GPU], 0, "it is not charged to the quota");
    is_int(st.opportunistic.v[SL_DIM_GPU], 2000, "it shows as opportunistic use");
    add(s, 2, (struct jspec){.queue = b, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0 + 1);
    p = preempted(&r, 1);
    ok(p && p->why == SL_PREEMPT_OPPORTUNISTIC && p->for_job == 2,
       "a batch job of another queue preempts it, as opportunistic");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void min_runtime(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    struct sl_sched_config cfg = *sl_sched_get_config(s);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;

    cfg.min_runtime_ms = 10 * 60 * 1000;
    sl_sched_configure(s, &cfg);
    node(s, "n", NULL, 16, 64, 1, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    sl_sched_result_fini(&r);
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_prod, .gpus = 1});
    r = pass_at(s, T0 + 60 * 1000);
    is_int(r.npreempts, 0, "a job that has run 1 of its 10 protected minutes is not preempted");
    is_int(r.wake_ms, T0 + 10 * 60 * 1000, "and the pass says when the protection ends");
    sl_sched_result_fini(&r);
    r = pass_at(s, T0 + 10 * 60 * 1000);
    ok(preempted(&r, 1), "then it is");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

/* ---- fair share ------------------------------------------------------ */

static void fair_share(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int a = queue(s, "a", -1, NULL, -1, -1), b = queue(s, "b", -1, NULL, -1, -1);
    int u = sl_sched_user(s, "u"), v = sl_sched_user(s, "v");
    struct sl_sched_result r;

    node(s, "n", NULL, 64, 256, 4, "A100");
    for (int i = 1; i <= 3; i++)
        add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1,
                                 .submit = T0});
    r = pass_at(s, T0);
    sl_sched_result_fini(&r);
    add(s, 10, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1,
                              .submit = T0 + 1});
    add(s, 11, (struct jspec){.queue = b, .user = v, .pclass = c_batch, .gpus = 1,
                              .submit = T0 + 2});
    r = pass_at(s, T0 + 3);
    ok(started(&r, 11) && !started(&r, 10),
       "DRF: queue b (no usage) gets the last GPU before a (3 GPUs), though a asked first");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);

    /* within a queue, by user */
    s = mk(SL_PLACE_BESTFIT, 0);
    a = queue(s, "a", -1, NULL, -1, -1);
    u = sl_sched_user(s, "heavy");
    v = sl_sched_user(s, "light");
    node(s, "n", NULL, 64, 256, 3, "A100");
    add(s, 1, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 2});
    r = pass_at(s, T0);
    sl_sched_result_fini(&r);
    add(s, 2, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1,
                             .submit = T0 + 1});
    add(s, 3, (struct jspec){.queue = a, .user = v, .pclass = c_batch, .gpus = 1,
                             .submit = T0 + 2});
    r = pass_at(s, T0 + 3);
    ok(started(&r, 3) && !started(&r, 2),
       "within a queue, the user with less usage goes first");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void decay(void)
{
    /* a used 4 GPUs for 2 hours and stopped; b used nothing; then a job of
     * a third queue keeps 2 of the 4 GPUs, and a and b each want 2. */
    for (int round = 0; round < 2; round++) {
        int64_t later = T0 + 2 * H + (round == 0 ? 1000 : 40 * H);
        struct sl_sched *s = mk(SL_PLACE_BESTFIT, H);
        int a = queue(s, "a", -1, NULL, -1, -1), b = queue(s, "b", -1, NULL, -1, -1);
        int c = queue(s, "c", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
        struct sl_sched_result r;

        node(s, "n", NULL, 64, 256, 4, "A100");
        for (int i = 1; i <= 4; i++)
            add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1});
        r = pass_at(s, T0);
        sl_sched_result_fini(&r);
        for (int i = 1; i <= 4; i++)
            sl_sched_job_remove(s, i, T0 + 2 * H);
        add(s, 5, (struct jspec){.queue = c, .user = u, .pclass = c_batch, .gpus = 2});
        r = pass_at(s, T0 + 2 * H);
        sl_sched_result_fini(&r);
        add(s, 10, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 2,
                                  .submit = T0 + 2 * H + 1});
        add(s, 11, (struct jspec){.queue = b, .user = u, .pclass = c_batch, .gpus = 2,
                                  .submit = T0 + 2 * H + 2});
        r = pass_at(s, later);
        if (round == 0)
            ok(started(&r, 11) && !started(&r, 10),
               "right after, a's decayed usage of 4 GPUs for 2h puts b first");
        else
            ok(started(&r, 10) && !started(&r, 11),
               "40 half-lives later it has decayed: a's older job goes first");
        sl_sched_result_fini(&r);
        sl_sched_destroy(s);
    }
}

static void user_limit(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    struct sl_sched_queue_spec qs;
    int q, u = sl_sched_user(s, "alice"), v = sl_sched_user(s, "bob");
    struct sl_sched_result r;

    sl_sched_queue_spec_init(&qs, "q");
    qs.user_limit.v[SL_DIM_GPU] = 1000;
    q = sl_sched_queue_set(s, &qs);
    node(s, "n", NULL, 64, 256, 4, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    add(s, 3, (struct jspec){.queue = q, .user = v, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    ok(started(&r, 1) && !started(&r, 2) && started(&r, 3),
       "a per-user limit of 1 GPU holds alice's second job, not bob's first");
    ok(strstr(reason(s, 2, T0), "user limit: alice may hold 1 GPU in queue q; holds 1, this job needs 1, over the limit by 1") != NULL,
       "the reason names the user and the limit (%s)", reason(s, 2, T0));
    sl_sched_result_fini(&r);
    /* With a queue quota of 2 GPUs, now full, alice's next job is blocked
     * twice: the explanation lists both constraints, each with numbers. */
    qs.nominal.v[SL_DIM_GPU] = 2000;
    sl_sched_queue_set(s, &qs);
    {
        json_t *e = explain(s, 2, T0 + 1), *b = json_object_get(e, "blockers");
        ok(json_array_size(b) == 2 &&
               !strcmp(json_string_value(json_object_get(json_array_get(b, 0), "kind")),
                       "quota") &&
               !strcmp(json_string_value(json_object_get(json_array_get(b, 1), "kind")),
                       "user_limit"),
           "explain lists the queue quota and the user limit");
        ok(json_number_value(json_object_get(json_array_get(b, 0), "limit")) == 2 &&
               json_number_value(json_object_get(json_array_get(b, 1), "limit")) == 1,
           "with their limits, 2 and 1 GPUs");
        is_int((int)json_array_size(json_object_get(e, "would_run_if")), 2,
               "and what would lift each");
        json_decref(e);
    }
    sl_sched_destroy(s);
}

/* ---- backfill ---------------------------------------------------------- */

static void backfill(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    json_t *e;

    node(s, "n", NULL, 64, 256, 4, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = H});
    r = pass_at(s, T0);
    ok(started(&r, 1), "a 2-GPU job with maxRuntime 1h runs");
    sl_sched_result_fini(&r);
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 4,
                             .submit = T0 + 1});
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = 2 * H, .submit = T0 + 2});
    add(s, 4, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = H / 2, .submit = T0 + 3});
    add(s, 5, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .submit = T0 + 4});
    r = pass_at(s, T0 + 1000);
    ok(!started(&r, 2), "the 4-GPU job is blocked");
    ok(!started(&r, 3), "a 2-GPU job of 2h would delay it: it does not backfill");
    ok(started(&r, 4), "a 2-GPU job of 30 min ends before it: it backfills");
    ok(!started(&r, 5), "a job without maxRuntime cannot backfill");
    e = explain(s, 2, T0 + 1000);
    ok(e && json_string_value(json_object_get(e, "eta")) &&
           !strcmp(json_string_value(json_object_get(e, "eta_basis")), "reservation"),
       "the blocked job has a reservation-based ETA (%s)",
       e ? json_string_value(json_object_get(e, "eta")) : "none");
    json_decref(e);
    ok(strstr(reason(s, 2, T0 + 1000), "reserved to start by") != NULL,
       "its reason carries the reservation (%s)", reason(s, 2, T0 + 1000));
    ok(strstr(reason(s, 3, T0 + 1000), "held for an earlier job's reservation") != NULL,
       "the 2h job says it fits only on reserved resources (%s)",
       reason(s, 3, T0 + 1000));
    sl_sched_result_fini(&r);
    /* The 30 min job fails early, freeing 2 GPUs; the next full passes
     * make the reservation again: the 2h job still may not take them. */
    sl_sched_job_remove(s, 4, T0 + 1500);
    for (int k = 0; k < 3; k++) {
        r = pass_at(s, T0 + 2000 + k * 1000);
        ok(!started(&r, 3), "full pass %d: the 2h job still does not backfill", k + 2);
        sl_sched_result_fini(&r);
    }
    ok(strstr(reason(s, 2, T0 + 4000), "reserved to start by") != NULL,
       "and the blocked job keeps its reservation (%s)", reason(s, 2, T0 + 4000));
    /* An hour later both 2-GPU jobs have ended: the reserved job starts
     * first, not the 2h one submitted after it. */
    sl_sched_job_remove(s, 1, T0 + H);
    r = pass_at(s, T0 + H);
    ok(started(&r, 2) && !started(&r, 3), "at the reservation time the 4-GPU job starts");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void backoff_and_requeue(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_job_spec j = {.id = 1, .queue = q, .user = u, .pclass = c_batch,
                                  .submit_ms = T0, .not_before_ms = T0 + 5000, .tasks = 1,
                                  .gpus = 1, .cpu_milli = 1000, .mem_bytes = GI};
    struct sl_sched_result r;

    node(s, "n", NULL, 16, 64, 1, "A100");
    sl_sched_job_add(s, &j, NULL);
    r = pass_at(s, T0);
    ok(!started(&r, 1), "a job in retry backoff does not start");
    is_int(r.wake_ms, T0 + 5000, "the pass asks to be woken when the backoff ends");
    ok(strstr(reason(s, 1, T0), "retry backoff: eligible again in 5s") != NULL,
       "its reason says when (%s)", reason(s, 1, T0));
    sl_sched_result_fini(&r);
    r = pass_at(s, T0 + 5000);
    ok(started(&r, 1), "it starts when the backoff is over");
    sl_sched_result_fini(&r);
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .submit = T0 + 10});
    sl_sched_job_requeue(s, 1, T0 + 6000, 0);
    r = pass_at(s, T0 + 6001);
    ok(started(&r, 1) && !started(&r, 2),
       "a requeued job keeps its submit time: it goes before a later one");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void dependency_wait(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    struct sl_buf b;

    node(s, "n", NULL, 16, 64, 1, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1, .submit = T0});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .submit = T0 + 1});
    is_int(sl_sched_job_wait(s, 1, "waiting for dependency afterok:9 (job 9 is Running)"), 0,
           "job 1 waits for a dependency");
    is_int(sl_sched_job_wait(s, 99, NULL), -ENOENT, "an unknown job: -ENOENT");
    r = pass_at(s, T0);
    ok(!started(&r, 1) && started(&r, 2),
       "a job that is not eligible does not start, nor keep a later one of its queue waiting");
    sl_sched_result_fini(&r);
    is_str(reason(s, 1, T0), "waiting for dependency afterok:9 (job 9 is Running)",
           "its reason is the words given");
    sl_buf_init(&b);
    ok(sl_sched_explain(s, 1, T0, &b) == 0 && b.data &&
           strstr(b.data, "{\"kind\":\"dependency\",\"detail\":\"waiting for dependency "
                          "afterok:9 (job 9 is Running)\"}") != NULL,
       "the explanation has a blocker of kind dependency");
    sl_buf_fini(&b);
    is_int(sl_sched_job_wait(s, 2, "x"), -EINVAL, "a running job cannot be made to wait");
    sl_sched_job_remove(s, 2, T0 + 10);
    is_int(sl_sched_job_wait(s, 1, NULL), 0, "job 1 made eligible");
    r = pass_at(s, T0 + 11);
    ok(started(&r, 1), "once eligible it starts");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void adoption_and_validation(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "u");
    struct sl_sched_job_spec j = {.id = 1, .queue = q, .user = u, .pclass = c_batch,
                                  .submit_ms = T0, .tasks = 1, .gpus = 1, .cpu_milli = 1000,
                                  .mem_bytes = GI};
    struct sl_sched_task_place pl = {.node = 0, .ngpus = 1, .gpus = {1}, .gpu_milli = 1000};
    struct sl_sched_node_view v;
    struct sl_error err = {{0}, {0}};

    node(s, "n", NULL, 16, 64, 2, "A100");
    ok(sl_sched_job_add_running(s, &j, &pl, T0, &err) == 0, "a running job is adopted");
    sl_sched_node_view(s, 0, &v);
    ok(v.gpu_free_milli[1] == 0 && v.gpu_free_milli[0] == 1000,
       "with exactly the GPU its placement names");
    j.id = 2;
    is_int(sl_sched_job_add_running(s, &j, &pl, T0, &err), -EINVAL,
           "a second adoption of the same GPU is refused");
    is_str(err.field, "placement", "naming the placement");
    j.id = 3;
    j.gpus = 65;
    is_int(sl_sched_job_add(s, &j, &err), -EINVAL, "65 GPUs per task is refused");
    is_str(err.field, "spec.resources.gpus", "naming the field");
    j.gpus = 1;
    j.gpu_milli = 500;
    is_int(sl_sched_job_add(s, &j, &err), -EINVAL, "gpus with gpuMilli is refused");
    j.gpu_milli = 0;
    j.queue = 99;
    is_int(sl_sched_job_add(s, &j, &err), -EINVAL, "an unknown queue is refused");
    j.queue = q;
    j.id = 1;
    is_int(sl_sched_job_add(s, &j, &err), -EEXIST, "a known id is refused");
    is_int(sl_sched_pending_count(s), 0, "and none of the refused jobs was added");
    sl_sched_destroy(s);
}

static void stats(void)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int a = queue(s, "a", 2, "pool", -1, -1), b = queue(s, "b", 2, "pool", -1, -1);
    int u = sl_sched_user(s, "u");
    struct sl_sched_result r;
    struct sl_sched_queue_stats sa, sb;

    node(s, "n", NULL, 64, 256, 4, "A100");
    for (int i = 1; i <= 3; i++)
        add(s, i, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 1});
    add(s, 9, (struct jspec){.queue = a, .user = u, .pclass = c_batch, .gpus = 8});
    r = pass_at(s, T0);
    sl_sched_result_fini(&r);
    sl_sched_queue_stats(s, a, T0, &sa);
    sl_sched_queue_stats(s, b, T0, &sb);
    is_int(sa.used.v[SL_DIM_GPU], 3000, "queue a uses 3 GPUs");
    is_int(sa.borrowed.v[SL_DIM_GPU], 1000, "it borrows 1");
    is_int(sb.lent.v[SL_DIM_GPU], 1000, "b lends 1");
    is_int(sa.pending, 1, "a has 1 pending job");
    is_int(sa.running, 3, "and 3 running");
    ok(sa.share > sb.share, "a's share is above b's");
    sl_sched_destroy(s);
}

static void like_reason(struct sl_sched *s, int64_t id, int64_t now)
{
    like_reason_impl(s, id, now);
}

/* The per-shape indexes answer what a scan of every node answers, for
 * each policy, through thousands of takes and gives (each index replays
 * the change log, stopping early where a subtree's best did not change,
 * or rebuilds when far behind). Random's pick must score the best. */
static void index_agrees_with_scan(void)
{
    static const enum sl_placement pols[] = {SL_PLACE_FGD,     SL_PLACE_BESTFIT,
                                             SL_PLACE_PACKING, SL_PLACE_CLUSTERING,
                                             SL_PLACE_DOTPROD, SL_PLACE_SPREAD,
                                             SL_PLACE_RANDOM};
    static const struct cl_shape shapes[] = {
        {4000, 8 * GI, 1, 500, 0},  {4000, 8 * GI, 1, 250, 0},
        {8000, 16 * GI, 1, 1000, 0}, {16000, 32 * GI, 2, 1000, 0},
        {32000, 64 * GI, 4, 1000, 0}, {2000, 4 * GI, 0, 0, 0},
        {4000, 8 * GI, 1, 1000, 2},  {8000, 8 * GI, 8, 1000, 0},
    };
    static const struct cl_typical mix[] = {
        {4000, 1, 500, 0, 0.3}, {8000, 1, 1000, 0, 0.4}, {32000, 4, 1000, 0, 0.2},
        {2000, 0, 0, 0, 0.1},
    };

    for (size_t pi = 0; pi < SL_ARRAY_LEN(pols); pi++) {
        struct cl_cluster c;
        struct sl_rng rng;
        struct held {
            int shape;
            struct sl_sched_task_place p;
        } *held = calloc(4096, sizeof(*held));
        int nheld = 0, mismatches = 0, picks = 0, placed = 0, models[8];
        bool full = false;

        sl_rng_seed(&rng, 11 + pi);
        cl_init(&c, pols[pi], 5);
        cl_model(&c, "A100", true);
        cl_model(&c, "V100", true);
        cl_set_typical(&c, mix, (int)SL_ARRAY_LEN(mix));
        for (int n = 0; n < 300; n++) {
            char name[16];
            int ng = (int[]){0, 2, 4, 8}[n % 4];
            for (int g = 0; g < ng; g++)
                models[g] = n % 3 == 0;
            snprintf(name, sizeof(name), "n%d", n);
            cl_node_add(&c, name, NULL, 96000, 512 * GI, ng, models);
        }
        for (int step = 0; step < 6000; step++) {
            /* more gives than takes once a shape stops fitting: the
             * cluster stays part full, where the choice matters */
            bool give = nheld > 0 && (nheld >= 4096 ||
                                      sl_rng_below(&rng, 100) < (full ? 70u : 40u));
            if (give) {
                int k = (int)sl_rng_below(&rng, (uint64_t)nheld);
                cl_give(&c, &shapes[held[k].shape], &held[k].p);
                held[k] = held[--nheld];
                continue;
            }
            int si = (int)sl_rng_below(&rng, SL_ARRAY_LEN(shapes)), gpu, sgpu;
            const struct cl_shape *sh = &shapes[si];
            int n = cl_best(&c, sh, &gpu);
            int m = cl_best_among(&c, sh, NULL, c.nnodes, &sgpu);
            double a = 0, b = 0;
            picks++;
            if ((n < 0) != (m < 0)) {
                mismatches++;
                continue;
            }
            full = n < 0;
            if (n < 0)
                continue;
            if (cl_fit(&c, n, sh) != CL_FITS) { /* a stale index */
                mismatches++;
                continue;
            }
            placed++;
            cl_score(&c, n, sh, &a, &sgpu); /* the GPUs: not used */
            cl_score(&c, m, sh, &b, &sgpu);
            if (pols[pi] == SL_PLACE_RANDOM ? a != b : n != m)
                mismatches++;
            cl_take(&c, n, sh, gpu, &held[nheld].p);
            held[nheld++].shape = si;
        }
        is_int(mismatches, 0, "%s: the index picks what a scan picks (%d picks, %d placed)",
               sl_placement_name(pols[pi]), picks, placed);
        cl_fini(&c);
        free(held);
    }
}

/* ---- staging ---------------------------------------------------------- */

/* Two nodes of 2 GPUs, queue q; jobs 1-4 of 2 GPUs each, so 1 and 2 run. */
static struct sl_sched *stage_setup(int *q, int *u)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    struct sl_sched_result r;

    *q = queue(s, "q", -1, NULL, -1, -1);
    *u = sl_sched_user(s, "alice");
    node(s, "n1", NULL, 16, 64, 2, "A100");
    node(s, "n2", NULL, 16, 64, 2, "A100");
    for (int id = 1; id <= 4; id++)
        add(s, id, (struct jspec){.queue = *q, .user = *u, .pclass = c_batch, .gpus = 2});
    r = pass_at(s, T0);
    sl_sched_result_fini(&r);
    return s;
}

static void staging(void)
{
    struct sl_sched_stage st[8];
    struct sl_sched_result r;
    struct sl_sched *s;
    int q, u, n;
    int64_t id;
    json_t *doc;

    s = stage_setup(&q, &u);
    n = sl_sched_stage_pick(s, T0, st, 8);
    is_int(n, 2, "two pending jobs of the running jobs' bucket are staged, one behind each");
    ok(n == 2 && st[0].job_id == 3 && st[1].job_id == 4, "in the bucket's order");
    ok(n == 2 && st[0].after != st[1].after && (st[0].after == 1 || st[0].after == 2),
       "each behind a different running job");
    is_int(sl_sched_pending_count(s), 2, "staged jobs are still pending");
    is_int((int)sl_sched_job_staged_after(s, 3), (int)st[0].after, "job 3 knows its predecessor");
    is_int((int)sl_sched_job_successor(s, st[0].after), 3, "and the predecessor its successor");
    is_int(sl_sched_stage_pick(s, T0, st, 8), 0, "nothing more to stage");
    ok(strncmp(reason(s, 3, T0), "staged behind job ", 18) == 0 &&
           strstr(reason(s, 3, T0), ": starts on its resources the moment it completes"),
       "why a staged job waits: %s", reason(s, 3, T0));
    doc = explain(s, 3, T0);
    ok(doc && json_integer_value(json_object_get(doc, "staged_after")) == st[0].after,
       "explain names its predecessor");
    json_decref(doc);
    /* a third node frees nothing for them: staged jobs are placed by no pass */
    node(s, "n3", NULL, 16, 64, 2, "A100");
    r = pass_at(s, T0 + 1);
    is_int(r.nstarts, 0, "a pass places no staged job, even where GPUs are free");
    sl_sched_result_fini(&r);

    /* the predecessor of job 3 completes: 3 takes its placement */
    {
        int64_t a = st[0].after;
        id = sl_sched_job_handover(s, a, T0 + 100);
        is_int((int)id, 3, "a handover starts the successor");
        is_int(sl_sched_job_state(s, a), SL_SCHED_UNKNOWN, "the predecessor is gone");
        is_int(sl_sched_job_state(s, 3), SL_SCHED_RUNNING, "the successor runs");
        is_int(sl_sched_pending_count(s), 1, "one job pending");
        {
            struct sl_sched_node_view v0, v1, v2;
            sl_sched_node_view(s, 0, &v0);
            sl_sched_node_view(s, 1, &v1);
            sl_sched_node_view(s, 2, &v2);
            ok(v0.gpu_free_milli[0] + v0.gpu_free_milli[1] == 0 &&
                   v1.gpu_free_milli[0] + v1.gpu_free_milli[1] == 0 &&
                   v2.gpu_free_milli[0] + v2.gpu_free_milli[1] == 2000,
               "on its predecessor's GPUs, not the free node's");
        }
        is_int(sl_sched_running_count(s), 2, "two running");
        is_int((int)sl_sched_job_handover(s, a, T0 + 100), -ENOENT, "a handover is once");
    }
    /* job 4's predecessor is requeued (preempted): 4 goes back in line */
    sl_sched_job_requeue(s, st[1].after, T0 + 200, 0);
    is_int((int)sl_sched_job_staged_after(s, 4), 0, "requeueing a predecessor unstages its successor");
    r = pass_at(s, T0 + 300);
    ok(started(&r, 4) || started(&r, st[1].after), "both are in line again and one runs");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);

    /* unstage, and removal either side */
    s = stage_setup(&q, &u);
    n = sl_sched_stage_pick(s, T0, st, 8);
    is_int(sl_sched_job_unstage(s, 3), 0, "a staged job can be sent back in line");
    is_int(sl_sched_job_unstage(s, 3), -EINVAL, "once");
    is_int((int)sl_sched_job_successor(s, st[0].after), 0, "its predecessor has no successor");
    ok(!strstr(reason(s, 3, T0), "staged"), "it waits as any pending job: %s",
       reason(s, 3, T0));
    sl_sched_job_remove(s, 4, T0);
    is_int((int)sl_sched_job_successor(s, st[1].after), 0,
           "removing a staged job frees its predecessor");
    n = sl_sched_stage_pick(s, T0, st, 8);
    is_int(n, 1, "the job sent back is staged again");
    sl_sched_job_remove(s, st[0].after, T0 + 10);
    is_int((int)sl_sched_job_staged_after(s, 3), 0, "removing a predecessor unstages its successor");
    r = pass_at(s, T0 + 20);
    ok(started(&r, 3) != NULL, "and the next pass places it");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);

    /* nothing is staged when two buckets wait, or requests differ */
    s = stage_setup(&q, &u);
    ok(!sl_sched_stage_contested(s), "no staged job: nothing contested");
    n = sl_sched_stage_pick(s, T0, st, 8);
    ok(n == 2 && !sl_sched_stage_contested(s), "staged, and nothing else waits: not contested");
    add(s, 9, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    ok(!sl_sched_stage_contested(s), "a later job of the same bucket waits behind: not contested");
    add(s, 10, (struct jspec){.queue = q, .user = sl_sched_user(s, "carol"), .pclass = c_batch,
                              .gpus = 2});
    ok(sl_sched_stage_contested(s), "another user's job waits: the staging is contested");
    sl_sched_job_remove(s, 10, T0);
    sl_sched_job_remove(s, 9, T0);
    sl_sched_job_unstage(s, 3);
    sl_sched_job_unstage(s, 4);
    add(s, 5, (struct jspec){.queue = q, .user = sl_sched_user(s, "bob"), .pclass = c_batch,
                             .gpus = 2});
    is_int(sl_sched_stage_pick(s, T0, st, 8), 0,
           "another user waiting in the queue: nothing staged (fair share decides then)");
    sl_sched_job_remove(s, 5, T0);
    add(s, 6, (struct jspec){.queue = q, .user = u, .pclass = c_prod, .gpus = 2});
    is_int(sl_sched_stage_pick(s, T0, st, 8), 0, "another priority class waiting: nothing staged");
    sl_sched_job_remove(s, 6, T0);
    sl_sched_job_remove(s, 3, T0);
    sl_sched_job_remove(s, 4, T0);
    add(s, 7, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    is_int(sl_sched_stage_pick(s, T0, st, 8), 0, "a different request: nothing staged");
    sl_sched_node_schedulable(s, 0, false);
    sl_sched_node_schedulable(s, 1, false);
    sl_sched_job_remove(s, 7, T0);
    add(s, 8, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    is_int(sl_sched_stage_pick(s, T0, st, 8), 0, "no staging behind jobs on nodes that take no work");
    sl_sched_destroy(s);
}

int main(void)
{
    basics();
    fractions();
    gangs();
    topology();
    models();
    unschedulable();
    policies();
    priority_order();
    quotas();
    borrowing();
    reclaim();
    reclaim_claims();
    reclaim_holds();
    reclaim_spread();
    priority_preemption();
    opportunistic();
    min_runtime();
    fair_share();
    decay();
    user_limit();
    backfill();
    backoff_and_requeue();
    dependency_wait();
    adoption_and_validation();
    stats();
    amounts();
    index_agrees_with_scan();
    staging();
    return done_testing();
}
