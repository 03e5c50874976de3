/*
 * test_sched_respec.c - sl_sched_job_respec against its contract: a
 * pending job takes a new request, queue or class and keeps its submit
 * time (its place in line in its new bucket), its hold and its backoff;
 * a job updated to fewer GPUs starts where it could not; the queues'
 * pending counts follow it; a running or unknown job and a spec out of
 * range are refused and change nothing. And sl_sched_job_hold_note: a
 * held job's reason in other words, dropped at its release.
 */
#include "sched_harness.h"

/* One node of 'gpus' GPUs, queue q; job 1 (1 GPU) runs; jobs 2..1+n wait,
 * each asking 'ask' GPUs. */
static struct sl_sched *line_setup(int gpus, int n, int ask, int *q, int *u)
{
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    struct sl_sched_result r;

    *q = queue(s, "q", -1, NULL, -1, -1);
    *u = sl_sched_user(s, "alice");
    node(s, "n1", NULL, 16, 64, gpus, "A100");
    add(s, 1, (struct jspec){.queue = *q, .user = *u, .pclass = c_batch, .gpus = 1});
    for (int id = 2; id < 2 + n; id++)
        add(s, id, (struct jspec){.queue = *q, .user = *u, .pclass = c_batch, .gpus = ask});
    r = pass_at(s, T0);
    if (r.nstarts != 1 || !started(&r, 1))
        diag("setup: job 1 did not start alone");
    sl_sched_result_fini(&r);
    return s;
}

/* Respec job 'id' to 'js' (its submit time is the caller's: not read). */
static int respec(struct sl_sched *s, int64_t id, struct jspec js, char *field, size_t size)
{
    struct sl_sched_job_spec sp = job_spec(id, js);
    struct sl_error err = {{0}, {0}};
    int rc;

    sp.submit_ms = T0 + 1000; /* later than any: not read, the job keeps its own */
    rc = sl_sched_job_respec(s, &sp, &err);
    if (field)
        snprintf(field, size, "%s", err.field);
    return rc;
}

static void fewer_gpus_start(void)
{
    struct sl_sched_result r;
    struct sl_sched *s;
    int q, u;

    /* 2 GPUs, one taken by job 1; job 2 asks for both */
    s = line_setup(2, 1, 2, &q, &u);
    r = pass_at(s, T0 + 1);
    is_int(r.nstarts, 0, "job 2, asking for 2 GPUs with 1 free, waits");
    sl_sched_result_fini(&r);
    is_int(respec(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1},
                  NULL, 0),
           0, "job 2 is updated to 1 GPU");
    is_int(sl_sched_job_state(s, 2), SL_SCHED_PENDING, "it is still pending");
    sl_sched_pass(s, T0 + 2, true, &r);
    ok(r.nstarts == 1 && started(&r, 2),
       "a pass of the new jobs starts it on the free GPU: its new request counts");
    ok(r.nstarts == 1 && started(&r, 2) && started(&r, 2)->tasks[0].ngpus == 1,
       "with one GPU");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void place_in_line(void)
{
    struct sl_sched_result r;
    struct sl_sched *s;
    int q, u;

    /* 1 GPU; jobs 2, 3, 4 wait in submit order */
    s = line_setup(1, 3, 1, &q, &u);
    is_int(respec(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_be, .gpus = 1},
                  NULL, 0),
           0, "job 2 is moved down to best-effort");
    sl_sched_job_remove(s, 1, T0 + 10);
    r = pass_at(s, T0 + 10);
    ok(r.nstarts == 1 && started(&r, 3), "the GPU frees: job 3, now ahead, starts");
    sl_sched_result_fini(&r);
    is_int(respec(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1},
                  NULL, 0),
           0, "job 2 is moved back to batch");
    sl_sched_job_remove(s, 3, T0 + 20);
    r = pass_at(s, T0 + 20);
    ok(r.nstarts == 1 && started(&r, 2),
       "it starts before job 4, submitted after it: its submit time kept");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void other_queue(void)
{
    struct sl_sched_queue_stats st;
    struct sl_sched *s;
    json_t *doc;
    int q, q2, u;

    s = line_setup(1, 2, 1, &q, &u);
    q2 = queue(s, "q2", -1, NULL, -1, -1);
    is_int(respec(s, 3, (struct jspec){.queue = q2, .user = u, .pclass = c_batch, .gpus = 1},
                  NULL, 0),
           0, "job 3 moves to queue q2");
    sl_sched_queue_stats(s, q, T0, &st);
    is_int(st.pending, 1, "q has one pending job left");
    sl_sched_queue_stats(s, q2, T0, &st);
    is_int(st.pending, 1, "q2 has it");
    doc = explain(s, 3, T0);
    is_str(doc ? json_string_value(json_object_get(doc, "queue")) : NULL, "q2",
           "its explanation names its new queue");
    json_decref(doc);
    is_int(sl_sched_job_remove(s, 3, T0 + 1), 0, "removed from there");
    sl_sched_queue_stats(s, q2, T0, &st);
    is_int(st.pending, 0, "q2 has none");
    sl_sched_destroy(s);
}

static void held_stays_held(void)
{
    struct sl_sched_result r;
    struct sl_sched *s;
    int q, u;

    s = line_setup(2, 1, 2, &q, &u);
    is_int(sl_sched_job_hold(s, 2, true), 0, "job 2 is held");
    is_int(sl_sched_job_hold_note(s, 2, "held by admin root: only an admin may release it"), 0,
           "with words of its own");
    is_str(reason(s, 2, T0), "held by admin root: only an admin may release it",
           "its reason says them");
    is_int(respec(s, 2, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1},
                  NULL, 0),
           0, "updated to 1 GPU while held");
    ok(sl_sched_job_held(s, 2), "it is still held");
    is_str(reason(s, 2, T0), "held by admin root: only an admin may release it",
           "with the same words");
    r = pass_at(s, T0 + 1);
    is_int(r.nstarts, 0, "a pass does not start it, with a GPU free");
    sl_sched_result_fini(&r);
    is_int(sl_sched_job_hold(s, 2, false), 0, "released");
    is_int(sl_sched_job_hold_note(s, 2, "x"), -EINVAL, "a job not held takes no hold words");
    r = pass_at(s, T0 + 2);
    ok(r.nstarts == 1 && started(&r, 2), "it starts with its new request");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void backoff_kept(void)
{
    struct sl_sched_result r;
    struct sl_sched *s = mk(SL_PLACE_BESTFIT, 0);
    int q = queue(s, "q", -1, NULL, -1, -1), u = sl_sched_user(s, "alice");

    node(s, "n1", NULL, 16, 64, 2, "A100");
    add(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1});
    is_int(sl_sched_job_backoff(s, 1, T0 + 100), 0, "job 1 backs off until T0+100");
    is_int(respec(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2},
                  NULL, 0),
           0, "updated to 2 GPUs");
    r = pass_at(s, T0 + 50);
    is_int(r.nstarts, 0, "it still backs off");
    sl_sched_result_fini(&r);
    r = pass_at(s, T0 + 100);
    ok(r.nstarts == 1 && started(&r, 1) && started(&r, 1)->tasks[0].ngpus == 2,
       "then starts with 2 GPUs");
    sl_sched_result_fini(&r);
    sl_sched_destroy(s);
}

static void refusals(void)
{
    struct sl_sched_queue_stats st;
    struct sl_sched_result r;
    struct sl_sched *s;
    char field[96];
    int q, u;

    s = line_setup(1, 2, 1, &q, &u); /* job 1 runs, jobs 2 and 3 wait */
    is_int(respec(s, 1, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 2},
                  field, sizeof(field)),
           -EINVAL, "a running job cannot be respecified");
    is_str(field, "state", "naming state");
    is_int(respec(s, 99, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 1},
                  NULL, 0),
           -ENOENT, "an unknown job: -ENOENT");
    is_int(respec(s, 3, (struct jspec){.queue = q, .user = u, .pclass = c_batch, .gpus = 99},
                  field, sizeof(field)),
           -EINVAL, "99 GPUs per task is out of range");
    is_str(field, "spec.resources.gpus", "naming spec.resources.gpus");
    is_int(respec(s, 3, (struct jspec){.queue = 77, .user = u, .pclass = c_batch, .gpus = 1},
                  field, sizeof(field)),
           -EINVAL, "an unknown queue");
    is_str(field, "spec.queue", "naming spec.queue");
    is_int(respec(s, 3, (struct jspec){.queue = q, .user = u, .pclass = 50, .gpus = 1},
                  field, sizeof(field)),
           -EINVAL, "an unknown class");
    is_str(field, "spec.priorityClass", "naming spec.priorityClass");
    sl_sched_queue_stats(s, q, T0, &st);
    is_int(st.pending, 2, "jobs 2 and 3 still pending in q");
    sl_sched_job_remove(s, 1, T0 + 2);
    sl_sched_job_remove(s, 2, T0 + 2);
    r = pass_at(s, T0 + 2);
    ok(r.nstarts == 1 && started(&r, 3) && started(&r, 3)->tasks[0].ngpus == 1,
       "and job 3 starts as it was, with 1 GPU");
    sl_sched_result_fini(&r);
    is_int(sl_sched_job_hold_note(s, 99, "x"), -ENOENT, "hold words for an unknown job");
    sl_sched_destroy(s);
}

int main(void)
{
    fewer_gpus_start();
    place_in_line();
    other_queue();
    held_stays_held();
    backoff_kept();
    refusals();
    return done_testing();
}
