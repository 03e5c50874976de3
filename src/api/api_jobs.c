/*
 * api_jobs.c - the job routes: submit, list, get, events, cancel (of a
 * job, of an array), hold, release, requeue, update, logs, explain.
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../meter/meter.h"
#include "../policy/policy.h"
#include "../policy/roles.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/jfield.h"
#include "relay.h"

/* Fetch a job the caller may see; answers 404 itself when not. */
static json_t *visible_job(struct ctx *c)
{
    json_t *job = NULL;
    int rc = sl_store_job_read(c->a->rd, c->id, sl_job_view_json_fn, &job);

    if (!job || !sl_api_can_see_team(c, json_string_value(json_object_get(job, "team")))) {
        json_decref(job);
        if (rc == -EIO)
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        else
            sl_http_reply_error(c->r, 404, "not_found", NULL, "job %lld not found",
                                (long long)c->id);
        return NULL;
    }
    return job;
}

/* Rendering job rows from the store (sl_store_job_read, _scan) as the
 * API's job objects into 'b', with what the store does not keep: a
 * pending job's reason, which the scheduler has in memory, and a running
 * one's idle state (the engine's) and client (the relay's). */
struct job_render {
    struct ctx *c;
    struct sl_buf *b;
    size_t n;                     /* objects written so far */
    bool check_team;              /* skip a job the caller may not see */
    bool hidden;                  /* one was skipped */
};

static int render_job(void *arg, const struct sl_job_view *row)
{
    struct job_render *jr = arg;
    struct sl_job_view v = *row; /* the row's strings stay the store's */
    struct sl_job_live live;
    char reason[200];

    if (jr->check_team && !sl_api_can_see_team(jr->c, v.team)) {
        jr->hidden = true;
        return 0;
    }
    if (v.state == SL_JOB_PENDING &&
        sl_engine_reason(jr->c->a->e, v.id, reason, sizeof(reason)) == 0)
        v.reason = reason;
    if (v.state == SL_JOB_RUNNING && sl_engine_job_live(jr->c->a->e, v.id, &live) == 0) {
        live.attached = live.interactive && sl_relay_claimed(jr->c->a->relay, v.id);
        v.live = &live;
    }
    if (jr->n++)
        sl_buf_add(jr->b, ",", 1);
    return sl_job_view_render(&v, jr->b);
}


void sl_api_route_job_submit(struct ctx *c)
{
    bool dry;
    struct sl_error err = {0};
    struct sl_job_spec *spec = NULL;
    struct op_state *s;
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    int rc;

    if (!sl_api_query_bool(c, "dry_run", &dry))
        return;
    if (dry)
        c->action = NULL; /* a dry run changes nothing: not a request to record */
    if ((rc = sl_job_spec_parse(body, len, &spec, &err)) < 0) {
        sl_api_reply_errno(c, rc, &err);
        return;
    }
    if (!(s = sl_api_op_new(c, SL_OP_SUBMIT))) {
        sl_job_spec_destroy(spec);
        return;
    }
    s->op.u.submit.spec = spec;
    s->op.u.submit.dry_run = dry;
    {
        /* The stored text of the spec, made here rather than on the
         * engine thread, which every submission waits for; on -ENOMEM the
         * engine makes it. */
        json_t *doc = sl_job_spec_to_json(spec);
        s->op.u.submit.spec_json = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        json_decref(doc);
    }
    sl_api_op_send(c, s);
}

/* ---- GET /v1/jobs ----------------------------------------------------------- */

#define LIST_MAX_OFFSET 1000000 /* jobs a page may skip (sort: each is read) */
#define LIST_MAX_Q 128          /* bytes of a name search */

/* The orders of GET /v1/jobs?sort=NAME (-NAME descending). Columns: the
 * parameter's word, the store's order. */
static const struct {
    const char *name;
    enum sl_job_sort sort;
} job_sorts[] = {
    {"id", SL_JOB_SORT_ID},
    {"submitted", SL_JOB_SORT_SUBMITTED},
    {"started", SL_JOB_SORT_STARTED},
    {"finished", SL_JOB_SORT_FINISHED},
    {"name", SL_JOB_SORT_NAME},
    {"state", SL_JOB_SORT_STATE},
    {"team", SL_JOB_SORT_TEAM},
    {"queue", SL_JOB_SORT_QUEUE},
    {"user", SL_JOB_SORT_USER},
    {"priority", SL_JOB_SORT_PRIORITY},
};

/* state=S[,S...]|all into q->state_mask. */
static bool list_states(struct ctx *c, struct sl_store_job_query *q)
{
    const char *state = sl_http_query(c->r, "state");
    char buf[256], *save = NULL;

    if (!state || !*state || strcasecmp(state, "all") == 0)
        return true;
    if (sl_strlcpy(buf, state, sizeof(buf)) >= sizeof(buf)) {
        sl_http_reply_error(c->r, 400, "invalid", "state", "too long");
        return false;
    }
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int s = sl_job_state_parse(t);
        if (s < 0) {
            sl_http_reply_error(c->r, 400, "invalid", "state",
                                "unknown state '%s'; expected Pending, Running, "
                                "Succeeded, Failed, Cancelled, Preempted, Lost, "
                                "Timeout or all", t);
            return false;
        }
        q->state_mask |= 1u << s;
    }
    return true;
}

/* A filter that is an object's name (queue, user, priority_class) into
 * *out: NULL when absent or empty. */
static bool list_name(struct ctx *c, const char *key, const char **out)
{
    const char *v = sl_http_query(c->r, key);

    *out = v && *v ? v : NULL;
    if (!*out || sl_name_valid(v))
        return true;
    sl_http_reply_error(c->r, 400, "invalid", key,
                        "must be a name (1..63 of a-z, 0-9 and '-'), got '%.64s'", v);
    return false;
}

/* sort=[-]FIELD into q->sort and q->descending. */
static bool list_sort(struct ctx *c, struct sl_store_job_query *q)
{
    const char *v = sl_http_query(c->r, "sort"), *name;

    if (!v || !*v)
        return true;
    q->descending = *v == '-';
    name = v + q->descending;
    for (size_t i = 0; i < SL_ARRAY_LEN(job_sorts); i++)
        if (strcmp(name, job_sorts[i].name) == 0) {
            q->sort = job_sorts[i].sort;
            return true;
        }
    sl_http_reply_error(c->r, 400, "invalid", "sort",
                        "unknown sort '%.64s'; expected id, submitted, started, finished, "
                        "name, state, team, queue, user or priority, with a leading '-' "
                        "for descending", v);
    return false;
}

/* The parameters of GET /v1/jobs into *q and *count; answers 400 (or 403
 * for another team) itself and returns false when one is bad. */
static bool list_query(struct ctx *c, struct sl_store_job_query *q, bool *count)
{
    const char *team = sl_http_query(c->r, "team");
    const char *limit_s = sl_http_query(c->r, "limit");
    const char *after_s = sl_http_query(c->r, "after");
    const char *text = sl_http_query(c->r, "q");
    int64_t limit = 1000;

    memset(q, 0, sizeof(*q));
    if (!list_states(c, q))
        return false;
    if (limit_s && sl_parse_int64(limit_s, 1, 10000, &limit) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "limit",
                            "must be an integer from 1 to 10000, got '%s'", limit_s);
        return false;
    }
    q->limit = (int)limit;
    if (after_s && sl_parse_int64(after_s, 0, INT64_MAX, &q->after) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "after",
                            "must be a job id, got '%s'", after_s);
        return false;
    }
    if (!list_name(c, "queue", &q->queue) || !list_name(c, "user", &q->user) ||
        !list_name(c, "priority_class", &q->priority_class) || !list_sort(c, q) ||
        !sl_api_query_int(c, "offset", 0, LIST_MAX_OFFSET, &q->offset) ||
        !sl_api_query_int(c, "array", 1, INT64_MAX, &q->array_job_id) ||
        !sl_api_query_bool(c, "count", count))
        return false;
    if ((q->gpu_model = sl_http_query(c->r, "gpu_model")) && !*q->gpu_model)
        q->gpu_model = NULL;
    if (q->gpu_model && !sl_spec_gpu_model_valid(q->gpu_model)) {
        sl_http_reply_error(c->r, 400, "invalid", "gpu_model",
                            "must be a GPU model (1..47 of A-Z, a-z, 0-9, '.', '_' and '-'), "
                            "got '%.64s'", q->gpu_model);
        return false;
    }
    if (text && strlen(text) > LIST_MAX_Q) {
        sl_http_reply_error(c->r, 400, "invalid", "q", "must be at most %d bytes, got %zu",
                            LIST_MAX_Q, strlen(text));
        return false;
    }
    q->name_has = text;
    if (q->after && q->sort != SL_JOB_SORT_ID) {
        sl_http_reply_error(c->r, 400, "invalid", "after",
                            "pages in id order only (sort=id or sort=-id); with "
                            "sort=%s page with offset", sl_http_query(c->r, "sort"));
        return false;
    }
    if (team && !*team)
        team = NULL;
    if (!sl_api_all_teams(&c->who)) {
        if (team && strcmp(team, c->who.team) != 0) {
            sl_http_reply_error(c->r, 403, "forbidden", "team",
                                "user '%s' may not list jobs of team '%s'",
                                c->who.user, team);
            return false;
        }
        team = c->who.team;
    }
    q->team = team;
    return true;
}

void sl_api_route_job_list(struct ctx *c)
{
    struct sl_store_job_query q;
    struct sl_buf b;
    struct job_render jr = {.c = c, .b = &b};
    bool count = false;
    int64_t next = 0, total = 0;
    int rc;

    if (!list_query(c, &q, &count))
        return;
    sl_buf_init(&b);
    sl_buf_adds(&b, "{\"jobs\":[");
    rc = sl_store_job_scan(c->a->rd, &q, render_job, &jr, &next, count ? &total : NULL);
    if (rc < 0) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
    } else {
        if (next)
            sl_buf_printf(&b, "],\"next\":%lld", (long long)next);
        else
            sl_buf_adds(&b, "],\"next\":null");
        if (count)
            sl_buf_printf(&b, ",\"total\":%lld", (long long)total);
        sl_buf_adds(&b, "}\n");
        sl_api_reply_text(c, &b);
    }
    sl_buf_fini(&b);
}

void sl_api_route_job_get(struct ctx *c)
{
    struct sl_buf b;
    struct job_render jr = {.c = c, .b = &b, .check_team = true};
    int rc;

    sl_buf_init(&b);
    rc = sl_store_job_read(c->a->rd, c->id, render_job, &jr);
    if (rc == 0 && jr.hidden)
        rc = -ENOENT; /* another team's job does not exist for this caller */
    if (rc == 0) {
        sl_buf_add(&b, "\n", 1);
        sl_api_reply_text(c, &b);
    } else if (rc == -ENOENT) {
        sl_http_reply_error(c->r, 404, "not_found", NULL, "job %lld not found",
                            (long long)c->id);
    } else {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
    }
    sl_buf_fini(&b);
}

/* Answer {key: [rows]} of a job the caller may see, as 'read' lists them
 * from the store (the job's events, its attempts). */
static void reply_job_rows(struct ctx *c, const char *key,
                           json_t *(*read)(struct sl_store *st, int64_t job_id, int *rc))
{
    json_t *job = visible_job(c), *rows;
    int rc;

    if (!job)
        return;
    json_decref(job);
    if (!(rows = read(c->a->rd, c->id, &rc))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", key, rows));
}

void sl_api_route_job_events(struct ctx *c)
{
    reply_job_rows(c, "events", sl_store_events);
}

/* DELETE /v1/jobs/{id} (one job) and DELETE /v1/arrays/{id} (every live
 * element of an array, one operation). */
static void cancel(struct ctx *c, enum sl_op_kind kind)
{
    struct op_state *s = sl_api_op_new(c, kind);
    if (!s)
        return;
    s->op.u.cancel.job_id = c->id;
    sl_api_op_send(c, s);
}

void sl_api_route_job_cancel(struct ctx *c) { cancel(c, SL_OP_CANCEL); }

void sl_api_route_array_cancel(struct ctx *c) { cancel(c, SL_OP_ARRAY_CANCEL); }

void sl_api_route_job_ctl(struct ctx *c)
{
    struct op_state *s;
    bool hold = false;

    /* requeue?hold=true: and hold it (scontrol requeuehold) */
    if (c->op == SL_OP_REQUEUE && !sl_api_query_bool(c, "hold", &hold))
        return;
    if (!(s = sl_api_op_new(c, (enum sl_op_kind)c->op)))
        return;
    s->op.u.jobctl.job_id = c->id;
    s->op.u.jobctl.hold = hold;
    sl_api_op_send(c, s);
}

/* An update's maxRuntime: a duration string or integer seconds, > 0.
 * Returns 0, or refuses (answered) and returns -1. */
static int update_max_runtime(struct ctx *c, const json_t *v, int64_t *ms)
{
    *ms = 0;
    if (json_is_integer(v) && json_integer_value(v) > 0 &&
        json_integer_value(v) <= INT64_MAX / 1000)
        *ms = (int64_t)json_integer_value(v) * 1000;
    else if (!json_is_string(v) || sl_parse_duration_ms(json_string_value(v), ms) < 0)
        *ms = 0;
    if (*ms > 0)
        return 0;
    sl_api_refuse(c, 400, "invalid", "maxRuntime",
                  "must be a positive duration such as \"2h\" or seconds");
    return -1;
}

/* An update's name field ('key': priorityClass, queue) into dst. */
static int update_name(struct ctx *c, const char *key, const json_t *v, char *dst,
                       size_t size)
{
    const char *name = json_string_value(v);

    if (name && sl_name_valid(name) && strlen(name) < size) {
        sl_strlcpy(dst, name, size);
        return 0;
    }
    sl_api_refuse(c, 400, "invalid", key, "must be a name (1..63 of a-z, 0-9 and '-')");
    return -1;
}

/* An update's resources: only gpus, whole GPUs per task. */
static int update_resources(struct ctx *c, const json_t *res, struct sl_op_update *u)
{
    const char *key;
    json_t *v;
    char field[96];

    if (!json_is_object(res) || !json_object_size(res)) {
        sl_api_refuse(c, 400, "invalid", "resources",
                      "must be an object of the resources to change: {\"gpus\": N}");
        return -1;
    }
    json_object_foreach((json_t *)res, key, v) {
        snprintf(field, sizeof(field), "resources.%.64s", key);
        if (strcmp(key, "gpus") != 0) {
            sl_api_refuse(c, 400, "invalid", field,
                          "cannot be changed by an update: of the resources only "
                          "resources.gpus can");
            return -1;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > SL_MAX_GPUS_PER_TASK) {
            sl_api_refuse(c, 400, "invalid", field,
                          "must be whole GPUs per task, 0 to %d", SL_MAX_GPUS_PER_TASK);
            return -1;
        }
        u->has_gpus = true;
        u->gpus = (int)json_integer_value(v);
    }
    return 0;
}

/* The fields of an update's body into 'u': maxRuntime, priorityClass,
 * queue, resources.gpus; at least one. Returns 0, or refuses (answered)
 * and returns -1. */
static int update_body(struct ctx *c, struct sl_op_update *u)
{
    size_t len;
    const char *body = sl_http_body(c->r, &len), *key;
    json_error_t jerr;
    json_t *doc = len ? sl_jf_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr) : NULL, *v;
    int rc = -1;

    memset(u, 0, sizeof(*u));
    if (!doc && len && sl_jf_oom(&jerr)) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return -1;
    }
    if (!json_is_object(doc)) {
        sl_api_refuse(c, 400, "invalid", NULL,
                      "body must be a JSON object of the fields to change, e.g. "
                      "{\"maxRuntime\": \"1h\"} or {\"resources\": {\"gpus\": 2}}");
        goto out;
    }
    if (!json_object_size(doc)) {
        sl_api_refuse(c, 400, "invalid", NULL,
                      "nothing to change: give priorityClass, queue, resources.gpus or "
                      "maxRuntime");
        goto out;
    }
    json_object_foreach(doc, key, v) {
        if (!strcmp(key, "maxRuntime")) {
            if (update_max_runtime(c, v, &u->max_runtime_ms) < 0)
                goto out;
        } else if (!strcmp(key, "priorityClass")) {
            if (update_name(c, key, v, u->pclass, sizeof(u->pclass)) < 0)
                goto out;
        } else if (!strcmp(key, "queue")) {
            if (update_name(c, key, v, u->queue, sizeof(u->queue)) < 0)
                goto out;
        } else if (!strcmp(key, "resources")) {
            if (update_resources(c, v, u) < 0)
                goto out;
        } else {
            sl_api_refuse(c, 400, "invalid", key,
                          "unknown field: an update changes priorityClass, queue, "
                          "resources.gpus or maxRuntime");
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

void sl_api_route_job_update(struct ctx *c)
{
    struct sl_op_update u;
    struct op_state *s;

    if (update_body(c, &u) < 0 || !(s = sl_api_op_new(c, SL_OP_UPDATE)))
        return;
    u.job_id = c->id;
    s->op.u.update = u;
    sl_api_op_send(c, s);
}

void sl_api_route_job_attempts(struct ctx *c)
{
    reply_job_rows(c, "attempts", sl_store_attempts);
}

/* Where attempt i (of 'at', sl_store_attempts) begins in task 'task''s
 * log: its recorded offset, 0 when it has none. */
static int64_t attempt_start(const json_t *at, size_t i, int64_t task)
{
    json_t *o = json_array_get(json_object_get(json_array_get(at, i), "log_offsets"),
                               (size_t)task);
    return json_is_integer(o) ? json_integer_value(o) : 0;
}

/* The bytes [*offset, end) of task 'task''s log that are attempt 'want''s
 * output (*offset raised to where it begins): returns the end (INT64_MAX:
 * the end of the log, the attempt is the last), or -1 when 'want' has not
 * started. */
static int64_t attempt_range(const json_t *at, int64_t task, int64_t want, int64_t *offset)
{
    size_t n = json_array_size(at);

    for (size_t i = 0; i < n; i++) {
        if (json_integer_value(json_object_get(json_array_get(at, i), "attempt")) != want)
            continue;
        if (*offset < attempt_start(at, i, task))
            *offset = attempt_start(at, i, task);
        return i + 1 < n ? attempt_start(at, i + 1, task) : INT64_MAX;
    }
    return -1;
}

void sl_api_route_job_logs(struct ctx *c)
{
    const char *task_s = sl_http_query(c->r, "task");
    const char *off_s = sl_http_query(c->r, "offset");
    const char *lim_s = sl_http_query(c->r, "limit");
    const char *att_s = sl_http_query(c->r, "attempt");
    int64_t task = 0, offset = 0, limit = LOG_READ_MAX, tasks, want = -1, end = INT64_MAX;
    json_t *job = visible_job(c), *at = NULL;
    char path[1200], num[32];
    char *buf = NULL;
    ssize_t n = 0;
    struct stat sb;
    int fd, rc;

    if (!job)
        return;
    tasks = json_integer_value(
        json_object_get(json_object_get(json_object_get(job, "spec"), "spec"), "tasks"));
    if (tasks < 1)
        tasks = 1;
    if (task_s && sl_parse_int64(task_s, 0, tasks - 1, &task) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "task",
                            "must be a task index from 0 to %lld, got '%s'",
                            (long long)(tasks - 1), task_s);
        goto out;
    }
    if (off_s && sl_parse_int64(off_s, 0, INT64_MAX, &offset) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "offset",
                            "must be a byte offset, got '%s'", off_s);
        goto out;
    }
    if (lim_s && sl_parse_int64(lim_s, 1, LOG_READ_MAX, &limit) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "limit",
                            "must be an integer from 1 to %d, got '%s'",
                            LOG_READ_MAX, lim_s);
        goto out;
    }
    if (att_s && sl_parse_int64(att_s, 0, INT32_MAX, &want) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "attempt",
                            "must be an attempt number (0, 1, ...), got '%s'", att_s);
        goto out;
    }
    if (!(at = sl_store_attempts(c->a->rd, c->id, &rc))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        goto out;
    }
    if (want >= 0 && (end = attempt_range(at, task, want, &offset)) < 0) {
        size_t na = json_array_size(at);
        if (na == 0)
            sl_http_reply_error(c->r, 400, "invalid", "attempt",
                                "job %lld has not started yet: no attempt %lld",
                                (long long)c->id, (long long)want);
        else
            sl_http_reply_error(
                c->r, 400, "invalid", "attempt",
                "job %lld has no attempt %lld (attempts %lld to %lld)", (long long)c->id,
                (long long)want,
                (long long)json_integer_value(json_object_get(json_array_get(at, 0), "attempt")),
                (long long)json_integer_value(
                    json_object_get(json_array_get(at, na - 1), "attempt")));
        goto out;
    }
    if (end - offset < limit)
        limit = end > offset ? end - offset : 0;
    /* An executor that keeps no log (nothing runs) has an empty one. */
    fd = sl_engine_log_path(c->a->e, c->id, (int)task, path, sizeof(path)) == 0
             ? open(path, O_RDONLY | O_CLOEXEC)
             : -1;
    if (fd >= 0 && limit > 0 && fstat(fd, &sb) == 0 && offset < sb.st_size) {
        size_t want_n = (size_t)(sb.st_size - offset < limit ? sb.st_size - offset : limit);
        if ((buf = malloc(want_n)) && (n = pread(fd, buf, want_n, offset)) < 0)
            n = 0;
    }
    if (fd >= 0)
        close(fd);
    snprintf(num, sizeof(num), "%lld", (long long)(offset + n));
    sl_http_add_header(c->r, "X-Sluice-Log-Offset", num);
    snprintf(num, sizeof(num), "%zu", json_array_size(at));
    sl_http_add_header(c->r, "X-Sluice-Log-Attempts", num);
    sl_http_add_header(c->r, "X-Sluice-Job-State",
                       json_string_value(json_object_get(job, "state")));
    sl_http_reply(c->r, 200, "text/plain; charset=utf-8", buf ? buf : "", (size_t)n);
out:
    free(buf);
    json_decref(at);
    json_decref(job);
}


/* Why a job waits: the scheduler's explanation, or for a job it no longer
 * knows (finished), its state and nothing blocking. */
void sl_api_route_job_explain(struct ctx *c)
{
    json_t *job = visible_job(c);
    struct sl_buf b;
    int rc;

    if (!job)
        return;
    sl_buf_init(&b);
    rc = sl_engine_explain(c->a->e, c->id, &b);
    if (rc == 0) {
        sl_buf_add(&b, "\n", 1);
        sl_api_reply_text(c, &b);
    } else if (rc == -ENOENT) {
        const char *state = json_string_value(json_object_get(job, "state"));
        char summary[96];
        snprintf(summary, sizeof(summary), "not pending: %s", state ? state : "unknown");
        sl_http_reply_json(
            c->r, 200,
            json_pack("{s:I, s:s, s:s, s:s, s:s, s:[], s:n, s:s, s:s, s:[]}", "job",
                      (json_int_t)c->id, "state", state ? state : "unknown", "queue",
                      json_string_value(json_object_get(job, "queue")), "team",
                      json_string_value(json_object_get(job, "team")), "priority_class",
                      json_string_value(json_object_get(job, "priority_class")),
                      "blockers", "eta", "eta_basis", "none", "summary", summary,
                      "would_run_if"));
    } else {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
    }
    sl_buf_fini(&b);
    json_decref(job);
}
