/*
 * jobview.c - job states by name, and the one writer of the API's job
 * object (job.h). Pure: no I/O, no shared state.
 */
#include "job.h"

#include "../util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const state_names[SL_JOB_NSTATES] = {
    "Pending", "Running", "Succeeded", "Failed", "Cancelled", "Preempted", "Lost",
    "Timeout",
};

const char *sl_job_state_name(enum sl_job_state s)
{
    return (unsigned)s < SL_JOB_NSTATES ? state_names[s] : "Unknown";
}

int sl_job_state_parse(const char *name)
{
    for (int i = 0; i < SL_JOB_NSTATES; i++)
        if (strcasecmp(name, state_names[i]) == 0)
            return i;
    return -EINVAL;
}

bool sl_job_state_final(enum sl_job_state s)
{
    return s == SL_JOB_SUCCEEDED || s == SL_JOB_FAILED ||
           s == SL_JOB_CANCELLED || s == SL_JOB_LOST || s == SL_JOB_TIMEOUT;
}

static void buf_time(struct sl_buf *b, int64_t ms)
{
    char t[40];
    if (ms)
        sl_buf_json_str(b, sl_time_rfc3339(ms, t, sizeof(t)));
    else
        sl_buf_add(b, "null", 4);
}

/* "idle" (null unless a Running job is idle-but-allocated now) and
 * "attached" (null unless a Running interactive job). */
static void buf_live(struct sl_buf *b, const struct sl_job_view *v)
{
    const struct sl_job_live *l = v->state == SL_JOB_RUNNING ? v->live : NULL;

    if (l && l->idle) {
        sl_buf_adds(b, ",\"idle\":{\"since\":");
        buf_time(b, l->idle_since_ms);
        sl_buf_printf(b, ",\"idle_ms\":%lld,\"interactive\":%s,\"ends_at\":",
                      (long long)l->idle_ms, l->interactive ? "true" : "false");
        buf_time(b, l->idle_ends_ms);
        sl_buf_add(b, "}", 1);
    } else {
        sl_buf_adds(b, ",\"idle\":null");
    }
    sl_buf_adds(b, ",\"attached\":");
    sl_buf_adds(b, !l || !l->interactive ? "null" : l->attached ? "true" : "false");
}

/* The spec: the stored text, else the caller's decoded document, else {}. */
static void buf_spec(struct sl_buf *b, const struct sl_job_view *v)
{
    if (v->spec_json && *v->spec_json) {
        sl_buf_adds(b, v->spec_json);
    } else if (v->spec_doc) {
        char *text = json_dumps(v->spec_doc, JSON_COMPACT);
        if (!text)
            b->failed = true;
        else
            sl_buf_adds(b, text);
        free(text);
    } else {
        sl_buf_add(b, "{}", 2);
    }
}

int sl_job_view_render(const struct sl_job_view *v, struct sl_buf *b)
{
    bool held;

    sl_buf_printf(b, "{\"id\":%lld,\"name\":", (long long)v->id);
    sl_buf_json_str(b, v->name);
    sl_buf_adds(b, ",\"team\":");
    sl_buf_json_str(b, v->team);
    sl_buf_adds(b, ",\"project\":");
    sl_buf_json_str(b, v->project && *v->project ? v->project : NULL);
    sl_buf_adds(b, ",\"user\":");
    sl_buf_json_str(b, v->user);
    sl_buf_adds(b, ",\"queue\":");
    sl_buf_json_str(b, v->queue);
    sl_buf_adds(b, ",\"priority_class\":");
    sl_buf_json_str(b, v->priority_class);
    sl_buf_printf(b, ",\"priority\":%d,\"state\":\"%s\",\"exit_code\":", v->priority,
                  sl_job_state_name(v->state));
    if (v->has_exit_code)
        sl_buf_printf(b, "%d", v->exit_code);
    else
        sl_buf_add(b, "null", 4);
    sl_buf_printf(b, ",\"attempt\":%d,\"retries\":%d,\"preemptions\":%d,"
                     "\"submitted_at\":",
                  v->attempt, v->retries, v->preemptions);
    buf_time(b, v->submitted_ms);
    sl_buf_adds(b, ",\"started_at\":");
    buf_time(b, v->started_ms);
    sl_buf_adds(b, ",\"finished_at\":");
    buf_time(b, v->finished_ms);
    sl_buf_adds(b, ",\"placement\":");
    sl_buf_adds(b, v->placement_json && *v->placement_json ? v->placement_json : "[]");
    sl_buf_adds(b, ",\"reason\":");
    sl_buf_json_str(b, v->state == SL_JOB_PENDING ? v->reason : NULL);
    held = v->state == SL_JOB_PENDING && v->intent &&
           (!strcmp(v->intent, "held") || !strcmp(v->intent, "held-admin"));
    sl_buf_adds(b, held ? ",\"held\":true,\"hold\":{\"kind\":"
                        : ",\"held\":false,\"hold\":null");
    if (held) {
        /* an admin's hold: its owner may not release it */
        sl_buf_adds(b, strcmp(v->intent, "held") ? "\"admin\",\"by\":"
                                                 : "\"user\",\"by\":");
        sl_buf_json_str(b, v->hold_by && *v->hold_by ? v->hold_by : NULL);
        sl_buf_add(b, "}", 1);
    }
    sl_buf_adds(b, ",\"message\":");
    sl_buf_json_str(b, v->message && *v->message ? v->message : NULL);
    sl_buf_adds(b, ",\"limits_enforced\":");
    sl_buf_adds(b, v->limits_enforced < 0 ? "null" : v->limits_enforced ? "true" : "false");
    sl_buf_adds(b, ",\"gpus_enforced\":");
    sl_buf_adds(b, v->gpus_enforced < 0 ? "null" : v->gpus_enforced ? "true" : "false");
    if (v->array_job_id > 0)
        sl_buf_printf(b, ",\"array_job_id\":%lld,\"array_index\":%d",
                      (long long)v->array_job_id, v->array_index);
    else
        sl_buf_adds(b, ",\"array_job_id\":null,\"array_index\":null");
    buf_live(b, v);
    sl_buf_adds(b, ",\"spec\":");
    buf_spec(b, v);
    sl_buf_add(b, "}", 1);
    return b->failed ? -ENOMEM : 0;
}

json_t *sl_job_view_to_json(const struct sl_job_view *v)
{
    struct sl_buf b;
    json_t *out = NULL;

    sl_buf_init(&b);
    if (sl_job_view_render(v, &b) == 0)
        out = json_loadb(b.data, b.len, 0, NULL);
    sl_buf_fini(&b);
    return out;
}

int sl_job_view_json_fn(void *arg, const struct sl_job_view *v)
{
    json_t **out = arg;
    return (*out = sl_job_view_to_json(v)) ? 0 : -ENOMEM;
}
