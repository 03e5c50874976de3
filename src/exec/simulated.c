/*
 * simulated.c - the simulated executor (executor.h): nothing runs. A
 * started job's tasks "run" for the duration in its label sim-duration (0
 * when absent or not a duration) and end with code 0; a signal ends them
 * at once with 128 + the signal; a job adopted after a restart ends at
 * once with code 0 (its run ended with the daemon). For scheduler load
 * tests and benchmarks: every job says that its command is not run.
 *
 * Jobs wait in a heap by their end, so that events and next_event_ms cost
 * what is due, not what runs. Time is the configured wall clock, which
 * unit tests inject.
 */
#include "executor.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/heap.h"
#include "../util/imap.h"

#define SIM_DURATION_LABEL "sim-duration"
#define SIM_NOTE "simulated executor: the command is not run"

struct sim_job {
    int64_t id;
    int attempt;
    int ntasks;
    int reported;                 /* tasks whose end events went out */
    int exit_code;                /* of every task */
    struct sl_heap_item end;      /* in the heap until every end is out
                                     (key: the end, wall ms) */
};

struct sim {
    struct sl_executor base;
    struct sl_inventory nodes;
    struct sl_imap jobs;          /* id -> struct sim_job*, started and
                                     not released */
    struct sl_heap due;           /* jobs whose tasks have not all been
                                     reported ended */
    int64_t (*now_ms)(void);
};

static int64_t duration_ms(const struct sl_job_spec *spec)
{
    const char *v = json_string_value(json_object_get(spec->labels, SIM_DURATION_LABEL));
    int64_t ms = 0;

    if (v && sl_parse_duration_ms(v, &ms) < 0)
        ms = 0;
    return ms;
}

static void sim_caps(const struct sl_executor *x, struct sl_exec_caps *out)
{
    (void)x;
    out->runs_commands = false;
    snprintf(out->limits_why, sizeof(out->limits_why), "nothing runs");
    snprintf(out->devices_why, sizeof(out->devices_why), "nothing runs");
    snprintf(out->devices_mech, sizeof(out->devices_mech), "none");
    snprintf(out->netns_why, sizeof(out->netns_why), "nothing runs");
    snprintf(out->interactive_why, sizeof(out->interactive_why),
             "the simulated executor runs no command, so there is no terminal to attach to");
}

static int sim_nodes(struct sl_executor *x, struct sl_inventory *out, struct sl_error *err)
{
    struct sim *s = (struct sim *)x;

    if (sl_inventory_copy(out, &s->nodes) < 0)
        return sl_errorf(err, -ENOMEM, "out of memory");
    return 0;
}

/* Track 'job' ending at 'end_ms' with 'code'. Returns 0 or -ENOMEM. */
static int track(struct sim *s, const struct sl_exec_job *job, int64_t end_ms, int code)
{
    struct sim_job *j = sl_imap_get(&s->jobs, job->job_id);

    if (j) {
        /* a new attempt of a job whose last one was not released */
        sl_heap_del(&s->due, &j->end);
    } else {
        if (!(j = calloc(1, sizeof(*j))))
            return -ENOMEM;
        if (sl_imap_put(&s->jobs, job->job_id, j) < 0) {
            free(j);
            return -ENOMEM;
        }
    }
    j->id = job->job_id;
    j->attempt = job->attempt;
    j->ntasks = job->ntasks;
    j->reported = 0;
    j->exit_code = code;
    if (sl_heap_set(&s->due, &j->end, end_ms) < 0) {
        free(sl_imap_del(&s->jobs, job->job_id));
        return -ENOMEM;
    }
    return 0;
}

static int sim_start(struct sl_executor *x, const struct sl_exec_job *job,
                     struct sl_exec_task_state *out)
{
    struct sim *s = (struct sim *)x;
    int rc = track(s, job, s->now_ms() + duration_ms(job->spec), 0);

    for (int t = 0; t < job->ntasks; t++) {
        out[t].status = rc < 0 ? SL_EXEC_TASK_FAILED : SL_EXEC_TASK_RUNNING;
        if (rc < 0)
            snprintf(out[t].error, sizeof(out[t].error), "out of memory");
        snprintf(out[t].note, sizeof(out[t].note), SIM_NOTE);
        out[t].network_enforced = job->spec->network;
    }
    return rc;
}

static int sim_adopt(struct sl_executor *x, const struct sl_exec_job *job,
                     struct sl_exec_task_state *out)
{
    struct sim *s = (struct sim *)x;
    int rc = track(s, job, s->now_ms(), 0);

    for (int t = 0; t < job->ntasks; t++) {
        out[t].status = SL_EXEC_TASK_RUNNING;
        out[t].network_enforced = job->spec->network;
    }
    return rc;
}

static int sim_signal(struct sl_executor *x, int64_t job_id, int attempt, int sig)
{
    struct sim *s = (struct sim *)x;
    struct sim_job *j = sl_imap_get(&s->jobs, job_id);
    int64_t now = s->now_ms();

    if (!j || j->attempt != attempt || !sl_heap_has(&j->end))
        return -ESRCH;
    if (j->end.key > now) {
        /* still "running": the signal ends it now */
        j->exit_code = 128 + sig;
        sl_heap_set(&s->due, &j->end, now); /* in the heap: cannot fail */
    }
    return 0;
}

static int sim_events(struct sl_executor *x, int64_t now_ms, struct sl_exec_event *ev,
                      int max)
{
    struct sim *s = (struct sim *)x;
    struct sl_heap_item *it;
    int n = 0;

    while (n < max && (it = sl_heap_top(&s->due)) && it->key <= now_ms) {
        struct sim_job *j = SL_CONTAINER_OF(it, struct sim_job, end);
        while (n < max && j->reported < j->ntasks)
            ev[n++] = (struct sl_exec_event){.kind = SL_EXEC_EV_EXITED, .job_id = j->id,
                                             .attempt = j->attempt, .task = j->reported++,
                                             .exit_code = j->exit_code};
        if (j->reported == j->ntasks)
            sl_heap_del(&s->due, &j->end);
    }
    return n;
}

static int64_t sim_next_event_ms(const struct sl_executor *x)
{
    const struct sim *s = (const struct sim *)x;
    const struct sl_heap_item *it = sl_heap_top(&s->due);

    return it ? it->key : INT64_MAX;
}

static int sim_wake_fd(const struct sl_executor *x)
{
    (void)x;
    return -1;
}

static void sim_release(struct sl_executor *x, int64_t job_id, int attempt)
{
    struct sim *s = (struct sim *)x;
    struct sim_job *j = sl_imap_get(&s->jobs, job_id);

    if (!j || j->attempt != attempt)
        return;
    sl_heap_del(&s->due, &j->end);
    sl_imap_del(&s->jobs, job_id);
    free(j);
}

static int sim_log_path(const struct sl_executor *x, int64_t job_id, int task, char *buf,
                        size_t size)
{
    (void)x;
    (void)job_id;
    (void)task;
    (void)buf;
    (void)size;
    return -ENOENT;
}

static void sim_destroy(struct sl_executor *x)
{
    struct sim *s = (struct sim *)x;
    size_t pos = 0;
    int64_t id;
    void *v;

    while (sl_imap_next(&s->jobs, &pos, &id, &v))
        free(v);
    sl_imap_fini(&s->jobs);
    sl_heap_fini(&s->due);
    sl_inventory_fini(&s->nodes);
    free(s);
}

static const struct sl_executor_ops sim_ops = {
    .name = "simulated",
    .caps = sim_caps,
    .nodes = sim_nodes,
    .start = sim_start,
    .signal = sim_signal,
    .adopt = sim_adopt,
    .events = sim_events,
    .next_event_ms = sim_next_event_ms,
    .wake_fd = sim_wake_fd,
    .release = sim_release,
    .log_path = sim_log_path,
    .destroy = sim_destroy,
};

struct sl_executor *sl_sim_executor_create(const struct sl_executor_config *cfg,
                                           struct sl_error *err)
{
    struct sim *s = calloc(1, sizeof(*s));
    int rc;

    if (!s) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->base.ops = &sim_ops;
    s->now_ms = cfg->now_ms ? cfg->now_ms : sl_now_ms;
    sl_imap_init(&s->jobs);
    sl_heap_init(&s->due);
    rc = cfg->nodes ? sl_inventory_copy(&s->nodes, cfg->nodes)
                    : sl_inventory_host(&s->nodes, cfg->fake_gpus, err);
    if (rc < 0) {
        if (cfg->nodes)
            sl_errorf(err, rc, "out of memory");
        sim_destroy(&s->base);
        errno = -rc;
        return NULL;
    }
    return &s->base;
}
