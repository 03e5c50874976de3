/*
 * executor.c - the table of executors and the calls that dispatch to
 * their operations (executor.h).
 */
#include "executor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Columns: the name users give (--executor, config key executor), its
 * constructor. A new executor is a new row. */
static const struct {
    const char *kind;
    struct sl_executor *(*create)(const struct sl_executor_config *cfg, struct sl_error *err);
} executors[] = {
    {"local", sl_local_executor_create},
    {"simulated", sl_sim_executor_create},
    {"slurm", sl_slurm_executor_create},
};

bool sl_executor_kind_valid(const char *kind)
{
    for (size_t i = 0; kind && i < SL_ARRAY_LEN(executors); i++)
        if (strcmp(executors[i].kind, kind) == 0)
            return true;
    return false;
}

const char *sl_executor_kinds(char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < SL_ARRAY_LEN(executors); i++)
        len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
                                "%s%s", i ? ", " : "", executors[i].kind);
    return buf;
}

struct sl_executor *sl_executor_create(const struct sl_executor_config *cfg,
                                       struct sl_error *err)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(executors); i++)
        if (cfg->kind && strcmp(executors[i].kind, cfg->kind) == 0)
            return executors[i].create(cfg, err);
    char kinds[128];

    sl_errorf(err, -EINVAL, "executor: must be one of %s, got '%.40s'",
              sl_executor_kinds(kinds, sizeof(kinds)), cfg->kind ? cfg->kind : "");
    errno = EINVAL;
    return NULL;
}

void sl_executor_destroy(struct sl_executor *x)
{
    int saved = errno;

    if (x)
        x->ops->destroy(x);
    errno = saved;
}

const char *sl_executor_name(const struct sl_executor *x)
{
    return x->ops->name;
}

void sl_executor_caps(const struct sl_executor *x, struct sl_exec_caps *out)
{
    memset(out, 0, sizeof(*out));
    x->ops->caps(x, out);
}

int sl_executor_nodes(struct sl_executor *x, struct sl_inventory *out, struct sl_error *err)
{
    return x->ops->nodes(x, out, err);
}

int sl_executor_start(struct sl_executor *x, const struct sl_exec_job *job,
                      struct sl_exec_task_state *out)
{
    memset(out, 0, (size_t)job->ntasks * sizeof(*out));
    return x->ops->start(x, job, out);
}

int sl_executor_signal(struct sl_executor *x, int64_t job_id, int attempt, int sig)
{
    return x->ops->signal(x, job_id, attempt, sig);
}

int sl_executor_adopt(struct sl_executor *x, const struct sl_exec_job *job,
                      struct sl_exec_task_state *out)
{
    memset(out, 0, (size_t)job->ntasks * sizeof(*out));
    return x->ops->adopt(x, job, out);
}

int sl_executor_events(struct sl_executor *x, int64_t now_ms, struct sl_exec_event *ev,
                       int max)
{
    return x->ops->events(x, now_ms, ev, max);
}

int64_t sl_executor_next_event_ms(const struct sl_executor *x)
{
    return x->ops->next_event_ms(x);
}

int sl_executor_wake_fd(const struct sl_executor *x)
{
    return x->ops->wake_fd(x);
}

void sl_executor_release(struct sl_executor *x, int64_t job_id, int attempt)
{
    x->ops->release(x, job_id, attempt);
}

int sl_executor_stage(struct sl_executor *x, const struct sl_exec_job *job)
{
    return x->ops->stage ? x->ops->stage(x, job) : -ENOTSUP;
}

void sl_executor_unstage(struct sl_executor *x, int64_t job_id, int attempt)
{
    if (x->ops->unstage)
        x->ops->unstage(x, job_id, attempt);
}

void sl_executor_revoke(struct sl_executor *x, int64_t job_id, int attempt)
{
    if (x->ops->revoke)
        x->ops->revoke(x, job_id, attempt);
}

int sl_executor_log_path(const struct sl_executor *x, int64_t job_id, int task, char *buf,
                         size_t size)
{
    return x->ops->log_path(x, job_id, task, buf, size);
}

int sl_executor_attach_path(const struct sl_executor *x, int64_t job_id, int task,
                            int attempt, char *buf, size_t size)
{
    if (!x->ops->attach_path)
        return -ENOTSUP;
    return x->ops->attach_path(x, job_id, task, attempt, buf, size);
}
