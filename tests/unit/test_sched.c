/*
 * test_sched.c - the first scheduler (src/sched/sched.c): order, gangs,
 * GPU models and fractions, CPU and memory fit, topology, retry backoff,
 * and the reasons given to jobs left pending.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../src/core/spec.h"
#include "../../src/sched/sched.h"
#include "../tap.h"

#define GiB (1LL << 30)
#define NOW 1000000

static struct sl_sched_node mknode(const char *name, const char *domain,
                                   int64_t cpu_milli, int64_t mem_bytes,
                                   int ngpus, const char *model)
{
    struct sl_sched_node n;

    memset(&n, 0, sizeof(n));
    n.name = name;
    n.domain = domain;
    n.schedulable = true;
    n.cpu_milli_free = cpu_milli;
    n.mem_bytes_free = mem_bytes;
    n.ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        n.gpus[i].model = model;
        n.gpus[i].milli_free = 1000;
    }
    return n;
}

/* A job of 'tasks' tasks of 'gpus' whole GPUs, 1 CPU and 1 GiB each. */
static struct sl_sched_job mkjob(int64_t id, int priority, int64_t submit_ms,
                                 int tasks, int gpus)
{
    struct sl_sched_job j;

    memset(&j, 0, sizeof(j));
    j.id = id;
    j.priority = priority;
    j.submit_ms = submit_ms;
    j.tasks = tasks;
    j.gpus = gpus;
    j.cpu_milli = 1000;
    j.mem_bytes = GiB;
    j.topology = SL_TOPO_ANY;
    return j;
}

static int run(struct sl_sched_node *nodes, int nnodes,
               const struct sl_sched_job *jobs, int njobs,
               struct sl_sched_result *res)
{
    struct sl_sched_state st = {nodes, nnodes, jobs, njobs};
    return sl_sched_run(&st, NOW, res);
}

static const struct sl_sched_decision *started(const struct sl_sched_result *r,
                                               int64_t id)
{
    for (int i = 0; i < r->nstarts; i++)
        if (r->starts[i].job_id == id)
            return &r->starts[i];
    return NULL;
}

static const struct sl_sched_wait *waiting(const struct sl_sched_result *r,
                                           int64_t id)
{
    for (int i = 0; i < r->nwaits; i++)
        if (r->waits[i].job_id == id)
            return &r->waits[i];
    return NULL;
}

static bool reason_has(const struct sl_sched_result *r, int64_t id,
                       const char *text)
{
    const struct sl_sched_wait *w = waiting(r, id);
    bool found = w && strstr(w->reason, text);

    if (!found)
        diag("job %lld reason: \"%s\" (want \"%s\")", (long long)id,
             w ? w->reason : "(not waiting)", text);
    return found;
}

static void order(void)
{
    struct sl_sched_node n[1];
    struct sl_sched_job j[3];
    struct sl_sched_result r;

    n[0] = mknode("a", "", 8000, 64 * GiB, 1, "H100");
    j[0] = mkjob(1, 0, 100, 1, 1);
    j[1] = mkjob(2, 10, 200, 1, 1);
    j[2] = mkjob(3, 0, 50, 1, 1);
    is_int(run(n, 1, j, 3, &r), 0, "a pass over three jobs succeeds");
    ok(started(&r, 2) && r.nstarts == 1,
       "the job of higher priority starts first though submitted last");
    ok(waiting(&r, 3) && waiting(&r, 3)->position == 1 && waiting(&r, 1) &&
           waiting(&r, 1)->position == 2,
       "within a priority the earlier submission is ahead (FIFO)");
    ok(r.waits[0].job_id == 3 && r.waits[1].job_id == 1,
       "waits are listed in scheduling order");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 8000, 64 * GiB, 1, "H100");
    j[0] = mkjob(7, 5, 100, 1, 1);
    j[1] = mkjob(4, 5, 100, 1, 1);
    run(n, 1, j, 2, &r);
    ok(started(&r, 4) && waiting(&r, 7),
       "with equal priority and submit time the lower id goes first");
    sl_sched_result_fini(&r);
}

static void gangs(void)
{
    struct sl_sched_node n[3];
    struct sl_sched_job j[2];
    struct sl_sched_result r;

    n[0] = mknode("a", "", 8000, 16 * GiB, 1, "A100");
    n[1] = mknode("b", "", 8000, 16 * GiB, 1, "A100");
    n[2] = mknode("c", "", 8000, 4 * GiB, 1, "A100");
    j[0] = mkjob(1, 10, 0, 3, 1);
    j[0].mem_bytes = 10 * GiB;
    j[1] = mkjob(2, 0, 0, 1, 1);
    run(n, 3, j, 2, &r);
    ok(waiting(&r, 1) && !started(&r, 1),
       "a gang of 3 tasks is not started when only 2 fit");
    ok(reason_has(&r, 1,
                  "no node fits task 3 of 3: 3 nodes rejected (2 insufficient "
                  "gpus, 1 insufficient memory)"),
       "the reason names the task that did not fit and why each node refused");
    ok(started(&r, 2), "the gang's tentative GPUs go to the next job");
    ok(n[0].gpus[0].milli_free + n[1].gpus[0].milli_free +
               n[2].gpus[0].milli_free == 2000 &&
           n[0].cpu_milli_free + n[1].cpu_milli_free + n[2].cpu_milli_free ==
               23000,
       "the failed gang's tentative placement is rolled back");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 8000, 16 * GiB, 2, "A100");
    n[1] = mknode("b", "", 8000, 16 * GiB, 2, "A100");
    j[0] = mkjob(1, 0, 0, 3, 1);
    run(n, 2, j, 1, &r);
    ok(started(&r, 1) && started(&r, 1)->ntasks == 3,
       "a gang of 3 starts when all 3 fit");
    {
        const struct sl_sched_decision *d = started(&r, 1);
        ok(d && d->tasks[0].node == d->tasks[1].node &&
               d->tasks[0].gpus[0] != d->tasks[1].gpus[0] &&
               d->tasks[2].node != d->tasks[0].node,
           "best fit packs the gang's tasks onto one node before the next");
    }
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 8000, 16 * GiB, 1, "A100");
    j[0] = mkjob(1, 0, 0, 3, 1);
    run(n, 1, j, 1, &r);
    ok(reason_has(&r, 1, "needs 3 whole gpus (3 tasks x 1), the cluster has 1 "
                         "free"),
       "a gang larger than the cluster fails fast with the totals");
    sl_sched_result_fini(&r);
}

static void models(void)
{
    static const char *const h100[] = {"h100", NULL};
    static const char *const v100[] = {"V100", NULL};
    static const char *const any[] = {NULL};
    struct sl_sched_node n[2];
    struct sl_sched_job j[3];
    struct sl_sched_result r;

    n[0] = mknode("a", "", 32000, 256 * GiB, 4, "A100");
    n[1] = mknode("b", "", 32000, 256 * GiB, 4, "H100");
    j[0] = mkjob(1, 0, 0, 1, 2);
    j[0].gpu_models = h100;
    j[1] = mkjob(2, 0, 1, 1, 1);
    j[1].gpu_models = v100;
    j[2] = mkjob(3, 0, 2, 1, 4);
    j[2].gpu_models = any;
    run(n, 2, j, 3, &r);
    {
        const struct sl_sched_decision *d = started(&r, 1);
        ok(d && d->tasks[0].node == 1 && d->tasks[0].ngpus == 2 &&
               d->tasks[0].gpus[0] == 0 && d->tasks[0].gpus[1] == 1 &&
               d->tasks[0].gpu_milli == 1000,
           "whole GPUs are taken from a node of the asked model "
           "(case-insensitive), lowest indices first");
    }
    ok(n[1].gpus[0].milli_free == 0 && n[1].gpus[2].milli_free == 1000,
       "the placed GPUs are taken off the node in place");
    ok(reason_has(&r, 2, "2 insufficient gpus of model V100"),
       "a job for a model nobody has says which model is short");
    ok(started(&r, 3) && started(&r, 3)->tasks[0].node == 0,
       "an empty model list takes any model");
    sl_sched_result_fini(&r);
}

static void fractions(void)
{
    struct sl_sched_node n[2];
    struct sl_sched_job j[4];
    struct sl_sched_result r;

    n[0] = mknode("a", "", 32000, 64 * GiB, 1, "T4");
    for (int i = 0; i < 3; i++) {
        j[i] = mkjob(i + 1, 0, i, 1, 0);
        j[i].gpu_milli = 400;
    }
    j[3] = mkjob(4, 0, 9, 1, 0);
    j[3].gpu_milli = 200;
    run(n, 1, j, 4, &r);
    ok(started(&r, 1) && started(&r, 2) &&
           started(&r, 2)->tasks[0].gpus[0] == 0 &&
           started(&r, 2)->tasks[0].gpu_milli == 400,
       "two 400-milli jobs share one GPU");
    ok(waiting(&r, 3), "a third 400-milli job does not fit the 200 left");
    ok(reason_has(&r, 3, "gpu milli"), "and its reason names gpu milli");
    ok(started(&r, 4), "a 200-milli job fills the GPU up to 1000 milli");
    is_int(n[0].gpus[0].milli_free, 0, "the shared GPU is then full");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 32000, 64 * GiB, 2, "T4");
    n[0].gpus[1].milli_free = 300;
    n[1] = mknode("b", "", 32000, 64 * GiB, 1, "T4");
    n[1].gpus[0].milli_free = 600;
    j[0] = mkjob(1, 0, 0, 1, 0);
    j[0].gpu_milli = 250;
    run(n, 2, j, 1, &r);
    ok(started(&r, 1) && started(&r, 1)->tasks[0].node == 0 &&
           started(&r, 1)->tasks[0].gpus[0] == 1,
       "a fraction goes to the GPU with the least free milli that fits");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 32000, 64 * GiB, 1, "T4");
    n[0].gpus[0].milli_free = 300;
    n[1] = mknode("b", "", 32000, 64 * GiB, 1, "T4");
    n[1].gpus[0].milli_free = 300;
    j[0] = mkjob(1, 0, 0, 1, 0);
    j[0].gpu_milli = 500;
    run(n, 2, j, 1, &r);
    ok(reason_has(&r, 1, "2 no gpu with 500 milli free"),
       "a fraction that fits no single GPU says so per node");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 32000, 64 * GiB, 2, "T4");
    n[0].gpus[0].milli_free = 500;
    n[1] = mknode("b", "", 32000, 64 * GiB, 1, "T4");
    j[0] = mkjob(1, 0, 0, 1, 2);
    run(n, 2, j, 1, &r);
    ok(waiting(&r, 1) &&
           reason_has(&r, 1, "no node fits task 1 of 1: 2 nodes rejected (2 "
                             "insufficient gpus)"),
       "a partly used GPU does not count as a whole one");
    sl_sched_result_fini(&r);
}

static void cpu_memory(void)
{
    struct sl_sched_node n[2];
    struct sl_sched_job j[3];
    struct sl_sched_result r;

    n[0] = mknode("a", "", 4000, 8 * GiB, 0, NULL);
    n[1] = mknode("b", "", 4000, 8 * GiB, 0, NULL);
    n[1].schedulable = false;
    j[0] = mkjob(1, 2, 0, 1, 0);
    j[0].cpu_milli = 3000;
    j[1] = mkjob(2, 1, 0, 1, 0);
    j[1].cpu_milli = 2000;
    j[2] = mkjob(3, 0, 0, 1, 0);
    j[2].mem_bytes = 8 * GiB;
    run(n, 2, j, 3, &r);
    ok(started(&r, 1), "a CPU job that fits starts");
    is_int(n[0].cpu_milli_free, 1000, "its CPU is taken off the node");
    ok(waiting(&r, 2) && reason_has(&r, 2, "needs 2000 cpu milli"),
       "a CPU job that does not fit waits on cpu");
    ok(waiting(&r, 3) && reason_has(&r, 3, "needs 8Gi memory"),
       "a job short of memory waits on memory");
    ok(n[1].cpu_milli_free == 4000, "an unschedulable node is never used");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 4000, 8 * GiB, 0, NULL);
    n[1] = mknode("b", "", 4000, 8 * GiB, 0, NULL);
    j[0] = mkjob(1, 0, 0, 1, 0);
    j[0].cpu_milli = 3000;
    j[0].mem_bytes = 4 * GiB;
    j[1] = mkjob(2, 0, 1, 2, 0);
    j[1].cpu_milli = 2500;
    j[1].mem_bytes = 2 * GiB;
    run(n, 2, j, 2, &r);
    ok(started(&r, 1) && waiting(&r, 2) &&
           reason_has(&r, 2, "no node fits task 2 of 2: 2 nodes rejected (2 "
                             "insufficient cpu)"),
       "a task short of CPU on every node names cpu for each");
    sl_sched_result_fini(&r);

    n[0] = mknode("gpu", "", 64000, 64 * GiB, 8, "H100");
    n[1] = mknode("cpu", "", 8000, 64 * GiB, 0, NULL);
    j[0] = mkjob(1, 0, 0, 1, 0);
    run(n, 2, j, 1, &r);
    ok(started(&r, 1) && started(&r, 1)->tasks[0].node == 1 &&
           started(&r, 1)->tasks[0].ngpus == 0,
       "a CPU-only job prefers a node without free GPUs");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 4000, 8 * GiB, 0, NULL);
    n[0].schedulable = false;
    j[0] = mkjob(1, 0, 0, 1, 0);
    run(n, 1, j, 1, &r);
    ok(reason_has(&r, 1, "no schedulable nodes"),
       "with every node unschedulable the reason says so");
    sl_sched_result_fini(&r);
}

static void topology(void)
{
    struct sl_sched_node n[4];
    struct sl_sched_job j[2];
    struct sl_sched_result r;

    n[0] = mknode("a", "", 32000, 64 * GiB, 2, "A100");
    n[1] = mknode("b", "", 32000, 64 * GiB, 2, "A100");
    j[0] = mkjob(1, 0, 0, 2, 2);
    j[0].topology = SL_TOPO_SAME_NODE;
    run(n, 2, j, 1, &r);
    ok(waiting(&r, 1) &&
           reason_has(&r, 1, "no single node fits all 2 tasks: 2 nodes "
                             "rejected (2 insufficient gpus)"),
       "same-node: a gang that needs two nodes waits and says why");
    ok(n[0].gpus[0].milli_free == 1000 && n[1].gpus[1].milli_free == 1000,
       "same-node: the trial placements leave the nodes untouched");
    sl_sched_result_fini(&r);

    j[0].topology = SL_TOPO_ANY;
    run(n, 2, j, 1, &r);
    ok(started(&r, 1) && started(&r, 1)->tasks[0].node !=
                             started(&r, 1)->tasks[1].node,
       "topology any: the same gang spreads over two nodes");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 32000, 64 * GiB, 1, "A100");
    n[1] = mknode("b", "", 32000, 64 * GiB, 4, "A100");
    j[0] = mkjob(1, 0, 0, 3, 1);
    j[0].topology = SL_TOPO_SAME_NODE;
    run(n, 2, j, 1, &r);
    ok(started(&r, 1) && started(&r, 1)->tasks[0].node == 1 &&
           started(&r, 1)->tasks[2].node == 1,
       "same-node: the gang goes to the node that holds it all");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "r1", 32000, 64 * GiB, 1, "A100");
    n[1] = mknode("c", "r2", 32000, 64 * GiB, 1, "A100");
    n[2] = mknode("b", "r1", 32000, 64 * GiB, 1, "A100");
    n[3] = mknode("d", "", 32000, 64 * GiB, 3, "A100");
    j[0] = mkjob(1, 0, 0, 2, 1);
    j[0].topology = SL_TOPO_SAME_DOMAIN;
    j[1] = mkjob(2, 0, 1, 3, 1);
    j[1].topology = SL_TOPO_SAME_DOMAIN;
    run(n, 4, j, 2, &r);
    {
        const struct sl_sched_decision *d = started(&r, 1);
        ok(d && ((d->tasks[0].node == 0 && d->tasks[1].node == 2) ||
                 (d->tasks[0].node == 2 && d->tasks[1].node == 0)),
           "same-domain: two tasks share the smallest domain that fits");
        d = started(&r, 2);
        ok(d && d->tasks[0].node == 3 && d->tasks[2].node == 3,
           "same-domain: a node without a domain is a domain of its own");
    }
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "r1", 32000, 64 * GiB, 1, "A100");
    n[1] = mknode("b", "r2", 32000, 64 * GiB, 1, "A100");
    j[0] = mkjob(1, 0, 0, 2, 1);
    j[0].topology = SL_TOPO_SAME_DOMAIN;
    run(n, 2, j, 1, &r);
    ok(waiting(&r, 1) && reason_has(&r, 1, "no domain fits all 2 tasks"),
       "same-domain: a gang split over two domains waits and says why");
    sl_sched_result_fini(&r);
}

static void backoff_and_misc(void)
{
    struct sl_sched_node n[1], copy[1];
    struct sl_sched_job j[3];
    struct sl_sched_result r, r2;

    n[0] = mknode("a", "", 8000, 16 * GiB, 1, "H100");
    j[0] = mkjob(1, 9, 0, 1, 1);
    j[0].not_before_ms = NOW + 30000;
    j[1] = mkjob(2, 0, 0, 1, 1);
    j[1].not_before_ms = NOW;
    run(n, 1, j, 2, &r);
    ok(waiting(&r, 1) && reason_has(&r, 1, "retry backoff until"),
       "a job in retry backoff is passed over with a reason");
    ok(started(&r, 2), "a job whose backoff ended at now starts");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 8000, 16 * GiB, 1, "H100");
    j[0] = mkjob(1, 5, 0, 1, 2);
    j[1] = mkjob(2, 1, 0, 1, 1);
    run(n, 1, j, 2, &r);
    ok(waiting(&r, 1) && started(&r, 2),
       "a smaller job of lower priority starts when a bigger one cannot");
    sl_sched_result_fini(&r);

    n[0] = mknode("a", "", 8000, 16 * GiB, 1, "H100");
    j[0] = mkjob(1, 0, 0, 0, 0);
    j[1] = mkjob(2, 0, 0, 1, 65);
    j[2] = mkjob(3, 0, 0, 1, 1);
    j[2].gpu_milli = 500;
    run(n, 1, j, 3, &r);
    ok(reason_has(&r, 1, "invalid request: tasks") &&
           reason_has(&r, 2, "invalid request: gpus") &&
           reason_has(&r, 3, "invalid request: gpus and gpu_milli"),
       "malformed requests wait with an 'invalid request' reason");
    sl_sched_result_fini(&r);

    ok(run(n, 1, j, 0, &r) == 0 && r.nstarts == 0 && r.nwaits == 0 &&
           !r.starts && !r.waits,
       "a pass without jobs returns an empty result");
    sl_sched_result_fini(&r);
    sl_sched_result_fini(NULL);
    ok(1, "result_fini accepts NULL and an empty result");

    n[0] = mknode("a", "", 8000, 16 * GiB, 4, "H100");
    copy[0] = n[0];
    j[0] = mkjob(1, 0, 0, 2, 1);
    j[1] = mkjob(2, 0, 1, 3, 1);
    run(n, 1, j, 2, &r);
    run(copy, 1, j, 2, &r2);
    ok(r.nstarts == r2.nstarts && r.nwaits == r2.nwaits &&
           !strcmp(r.waits[0].reason, r2.waits[0].reason) &&
           !memcmp(r.starts[0].tasks, r2.starts[0].tasks,
                   sizeof(*r.starts[0].tasks) * 2),
       "the same state gives the same decisions");
    sl_sched_result_fini(&r);
    sl_sched_result_fini(&r2);
}

/* Many random passes: no node ever goes below zero and every start's
 * placement is consistent with its job. */
static void random_passes(void)
{
    static const char *const models[] = {"A100", "H100", "T4"};
    static const char *const want_h100[] = {"H100", NULL};
    static const char *const domains[] = {"", "r1", "r2"};
    unsigned seed = 12345;
    bool sound = true;
    int nstarts = 0, nwaits = 0;

    for (int pass = 0; pass < 200 && sound; pass++) {
        struct sl_sched_node n[8];
        struct sl_sched_job j[20];
        struct sl_sched_result r;
        int nn = 1 + (int)(rand_r(&seed) % 8), nj = (int)(rand_r(&seed) % 20);
        int64_t gpu_before = 0, gpu_after = 0, gpu_taken = 0;

        for (int i = 0; i < nn; i++) {
            n[i] = mknode("n", domains[rand_r(&seed) % 3], 16000, 64 * GiB,
                          (int)(rand_r(&seed) % 9), models[rand_r(&seed) % 3]);
            n[i].schedulable = rand_r(&seed) % 8 != 0;
            for (int g = 0; g < n[i].ngpus; g++) {
                n[i].gpus[g].milli_free = (int)(rand_r(&seed) % 3) * 500;
                gpu_before += n[i].gpus[g].milli_free;
            }
        }
        for (int i = 0; i < nj; i++) {
            j[i] = mkjob(i, (int)(rand_r(&seed) % 3), i,
                         1 + (int)(rand_r(&seed) % 4), 0);
            if (rand_r(&seed) % 2)
                j[i].gpus = (int)(rand_r(&seed) % 4);
            else
                j[i].gpu_milli = (int)(rand_r(&seed) % 1001);
            j[i].cpu_milli = (int64_t)(rand_r(&seed) % 8000);
            j[i].topology = (int)(rand_r(&seed) % 3);
            j[i].gpu_models = rand_r(&seed) % 3 ? NULL : want_h100;
        }
        if (run(n, nn, j, nj, &r) != 0) {
            sound = false;
            break;
        }
        sound = r.nstarts + r.nwaits == nj;
        for (int i = 0; i < nn; i++) {
            sound = sound && n[i].cpu_milli_free >= 0 &&
                    n[i].mem_bytes_free >= 0;
            for (int g = 0; g < n[i].ngpus; g++) {
                sound = sound && n[i].gpus[g].milli_free >= 0;
                gpu_after += n[i].gpus[g].milli_free;
            }
        }
        for (int s = 0; s < r.nstarts; s++) {
            const struct sl_sched_decision *d = &r.starts[s];
            const struct sl_sched_job *job = &j[d->job_id];
            sound = sound && d->ntasks == job->tasks;
            for (int t = 0; t < d->ntasks; t++) {
                const struct sl_sched_task_place *tp = &d->tasks[t];
                sound = sound && n[tp->node].schedulable;
                if (job->topology == SL_TOPO_SAME_NODE)
                    sound = sound && tp->node == d->tasks[0].node;
                gpu_taken += (int64_t)tp->ngpus * tp->gpu_milli;
            }
        }
        sound = sound && gpu_before - gpu_after == gpu_taken;
        nstarts += r.nstarts;
        nwaits += r.nwaits;
        sl_sched_result_fini(&r);
    }
    ok(sound, "200 random passes never overcommit and account for every milli");
    ok(nstarts > 100 && nwaits > 100,
       "the random passes both start and hold back jobs (%d started, %d "
       "waiting)", nstarts, nwaits);
}

int main(void)
{
    order();
    gangs();
    models();
    fractions();
    cpu_memory();
    topology();
    backoff_and_misc();
    random_passes();
    return done_testing();
}
