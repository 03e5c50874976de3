/*
 * test_sched_hold.c - sl_sched_job_hold against its contract: a held job
 * stays pending with its place in line, and no pass, backfill or staging
 * considers it; a release puts it back where it was; a staged job that is
 * held leaves its predecessor; a preemptor that is held lets its victims
 * go; holding a running job is refused and changes nothing. And
 * sl_sched_job_max_runtime: a running job's new maxRuntime moves the
 * estimate of what waits for it.
 */
#include "sched_harness.h"

/* One node of 1 GPU, queue q; job 1 runs; jobs 2 and 3 wait for it. */
static struct sl_sched *line_setup(int *q, int *u)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    struct sl_sched_result r;

    *q = queue(s, "q", -1, NULL, -1, -1);
    *u = sl_sched_user(s, "alice");
    node(s, "n1", NULL, 16, 64, 1, "A100");
    for (int id = 1; id <= 3; id++)
        add(s, id, (struct jspec){.queue = *q, .user = *u, .pclass = c_batch, .gpus = 1});
    r = pass_at(s, T0);
    if (r.nstarts != 1 || !started(&r, 1))
        diag("setup: job 1 did not start alone");
    sl_sched_result_fini(&r);
    return s;
}

static void hold_keeps_place(void)
{
    struct sl_sched_result r;
    struct sl_sched *s;
    json_t *doc;
    int q, u;

    s = line_setup(&q, &u);
    is_int(sl_sched_job_hold(s, 2, true), 0, "the first waiting job is held");
    ok(sl_sched_job_held(s, 2), "and known as held");
    ok(!sl_sched_job_held(s, 3), "the second is not");
    is_int(sl_sched_job_state(s, 2), SL_SCHED_PENDING, "a held job is still pending");
    is_int(sl_sched_pending_count(s), 2, "and counted as pending");
    is_int(sl_sched_job_hold(s, 2, true), 0, "holding it again changes nothing");
    is_str(reason(s, 2, T0), "held: not scheduled until released", "why it waits");
    doc = explain(s, 2, T0);
    ok(doc && json_is_true(json_object_get(doc, "held")), "explain says held");
    json_decref(doc);

    sl_sched_job_remove(s, 1, T0 + 10);
    r = pass_at(s, T0 + 10);
    ok(r.nstarts == 1 && started(&r, 3), "the GPU frees: the second waiting job starts");
    ok(!started(&r, 2), "the held one does not");
    sl_sched_result_fini(&r);

    /* released behind a later job that waits too: it goes first */
    add(s, 4, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    is_int(sl_sched_job_hold(s, 2, false), 0, "released");
    ok(!sl_sched_job_held(s, 2), "no longer held");
    is_int(sl_sched_job_hold(s, 2, false), 0, "releasing it again changes nothing");
    sl_sched_job_remove(s, 3, T0 + 20);
    r = pass_at(s, T0 + 20);
    ok(r.nstarts == 1 && started(&r, 2),
       "released, it starts before job 4, submitted after it: its place in line kept");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void hold_refusals(void)
{
    struct sl_sched *s;
    int q, u;

    s = line_setup(&q, &u);
    is_int(sl_sched_job_hold(s, 1, true), -EINVAL, "a running job cannot be held");
    ok(!sl_sched_job_held(s, 1), "and is not held");
    is_int(sl_sched_job_state(s, 1), SL_SCHED_RUNNING, "it still runs");
    is_int(sl_sched_job_hold(s, 99, true), -ENOENT, "an unknown job: -ENOENT");
    is_int(sl_sched_job_hold(s, 99, false), -ENOENT, "to release too");
    /* a held job removed (cancelled) leaves nothing behind */
    is_int(sl_sched_job_hold(s, 3, true), 0, "job 3 held");
    is_int(sl_sched_job_remove(s, 3, T0 + 1), 0, "and cancelled while held");
    is_int(sl_sched_pending_count(s), 1, "one job pending left");
    ok(!sl_sched_job_held(s, 3), "a removed job is not held");
    sl_sched_destroy(s);
}

static void hold_new_only(void)
{
    struct sl_sched_result r;
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice");

    node(s, "n1", NULL, 16, 64, 2, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    is_int(sl_sched_job_hold(s, 1, true), 0, "a job held before any pass saw it");
    sl_sched_pass(s, T0, true, &r);
    is_int(r.nstarts, 0, "a pass of the new jobs does not start it");
    sl_sched_result_fini(&r);
    r = pass_at(s, T0 + 1);
    is_int(r.nstarts, 0, "nor a full pass, with its GPU free");
    sl_sched_result_fini(&r);
    sl_sched_job_hold(s, 1, false);
    sl_sched_pass(s, T0 + 2, true, &r);
    ok(r.nstarts == 1 && started(&r, 1), "released, a pass of the new jobs starts it");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void hold_backfill(void)
{
    struct sl_sched_result r;
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice");

    /* 2 GPUs; job 1 holds one for an hour; job 2 needs both (reserved at
     * T0+H); job 3 (10 min) could backfill on the free one */
    node(s, "n1", NULL, 16, 64, 2, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .max_runtime = H});
    sl_sched_result_fini((r = pass_at(s, T0), &r));
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = H});
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1,
                             .max_runtime = H / 6});
    is_int(sl_sched_job_hold(s, 3, true), 0, "the job that would backfill is held");
    r = pass_at(s, T0 + 1);
    is_int(r.nstarts, 0, "backfill does not start a held job");
    sl_sched_result_fini(&r);
    sl_sched_job_hold(s, 3, false);
    r = pass_at(s, T0 + 2);
    ok(r.nstarts == 1 && started(&r, 3), "released, it backfills");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void hold_staged(void)
{
    struct sl_sched_stage st[8];
    struct sl_sched_result r;
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice"), n;

    node(s, "n1", NULL, 16, 64, 2, "A100");
    for (int id = 1; id <= 3; id++)
        add(s, id, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    sl_sched_result_fini((r = pass_at(s, T0), &r));
    is_int(sl_sched_job_hold(s, 2, true), 0, "job 2 held before staging");
    n = sl_sched_stage_pick(s, T0, st, 8);
    ok(n == 1 && st[0].job_id == 3, "staging passes over the held job: job 3 is staged");
    is_int(sl_sched_job_hold(s, 3, true), 0, "a staged job is held");
    is_int((int)sl_sched_job_staged_after(s, 3), 0, "it is no longer staged");
    is_int((int)sl_sched_job_successor(s, 1), 0, "its predecessor has no successor");
    is_int(sl_sched_stage_pick(s, T0, st, 8), 0, "nothing is staged while both are held");
    is_int(sl_sched_job_handover(s, 1, T0 + 5), -ENOENT, "nothing to hand over");
    sl_sched_job_remove(s, 1, T0 + 5);
    r = pass_at(s, T0 + 5);
    is_int(r.nstarts, 0, "the node frees: neither held job starts");
    sl_sched_result_fini(&r);
    sl_sched_job_hold(s, 3, false);
    sl_sched_job_hold(s, 2, false);
    r = pass_at(s, T0 + 6);
    ok(r.nstarts == 1 && started(&r, 2), "both released: job 2 starts first, in line");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void hold_preemptor(void)
{
    struct sl_sched_result r;
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice");

    node(s, "n1", NULL, 16, 64, 1, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_be, .gpus = 1});
    sl_sched_result_fini((r = pass_at(s, T0), &r));
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_prod, .gpus = 1});
    r = pass_at(s, T0 + 1);
    ok(r.npreempts == 1 && preempted(&r, 1), "a production job preempts the best-effort one");
    sl_sched_result_fini(&r);
    sl_sched_job_terminating(s, 1, 2);
    is_int(sl_sched_job_hold(s, 2, true), 0, "the preemptor is held while its victim stops");
    sl_sched_job_requeue(s, 1, T0 + 2, 0);
    r = pass_at(s, T0 + 3);
    ok(r.nstarts == 1 && started(&r, 1), "what the victim freed is not kept for the held job");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void max_runtime(void)
{
    struct sl_sched_result r;
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice");
    char at[40];
    json_t *e;

    node(s, "n1", NULL, 16, 64, 4, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = H});
    add(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2,
                             .max_runtime = 2 * H});
    sl_sched_result_fini((r = pass_at(s, T0), &r));
    add(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 4});
    add(s, 4, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2});
    sl_sched_result_fini((r = pass_at(s, T0), &r));
    e = explain(s, 4, T0);
    is_str(json_string_value(json_object_get(e, "eta")), sl_time_rfc3339(T0 + H, at, sizeof(at)),
           "the second waiting job's estimate: job 1 ends in an hour");
    json_decref(e);
    is_int(sl_sched_job_max_runtime(s, 2, H / 2), 0, "job 2's maxRuntime is lowered to 30m");
    e = explain(s, 4, T0);
    is_str(json_string_value(json_object_get(e, "eta")),
           sl_time_rfc3339(T0 + H / 2, at, sizeof(at)), "the estimate follows: job 2 ends first");
    json_decref(e);
    is_int(sl_sched_job_max_runtime(s, 4, H), 0, "a pending job's is changed too");
    is_int(sl_sched_job_max_runtime(s, 9, H), -ENOENT, "an unknown job: -ENOENT");
    is_int(sl_sched_job_max_runtime(s, 2, -1), -EINVAL, "a negative one: -EINVAL");
    sl_sched_destroy(s);
}

int main(void)
{
    hold_keeps_place();
    hold_refusals();
    hold_new_only();
    hold_backfill();
    hold_staged();
    hold_preemptor();
    max_runtime();
    return done_testing();
}
