/*
 * api.c - the /v1 routes. See docs/api-contract.md and docs/openapi.yaml.
 *
 * Reads are answered on the server thread from the store's reader
 * connection (committed data only). Changes become engine operations; the
 * request is suspended until the engine has committed and answered it.
 * Every answer is counted for /metrics (metrics.c) by its route pattern,
 * once it is known: here for answers given at once, in op_done for the
 * suspended ones.
 */
#include "api.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sodium.h>
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
#include "metrics.h"

#define LOG_READ_MAX (1 << 20)

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0" /* as in src/daemon/main.c */
#endif

/* Resolved tokens are cached briefly so that a busy client does not cost a
 * store read per request; a change to a token or user is seen within
 * TOKEN_CACHE_MS. */
#define TOKEN_CACHE_SLOTS 64
#define TOKEN_CACHE_MS 2000

struct token_slot {
    unsigned char hash[32];
    int64_t until_ms;             /* 0 = empty */
    struct sl_principal who;
};

struct sl_api {
    struct sl_engine *e;
    struct sl_api_metrics *metrics;
    struct sl_store *rd;          /* reader; server thread only */
    struct token_slot cache[TOKEN_CACHE_SLOTS]; /* server thread only */
    uint64_t cache_epoch;         /* the engine's token epoch it holds */
};

/* The caller's role (src/policy/roles.h: the roles and their scopes). */
static enum sl_role role_of(const struct sl_principal *p)
{
    return sl_role_of(p->role, p->job_id);
}

static bool all_teams(const struct sl_principal *p)
{
    return sl_role_all_teams(role_of(p));
}

struct ctx {
    struct sl_api *a;
    struct sl_http_req *r;
    struct sl_principal who;
    int64_t id;                   /* {id} in the path */
    char name[128];               /* {name} or {ref} in the path */
    int row;                      /* route table row; -1 = none matched */
    const char *action;           /* the route's audit action; NULL = a read */
    const char *object;           /* what {id}/{name} names ("job", ...) */
    int64_t start_ns;             /* when handling began (mono) */
    bool suspended;               /* answered later, by op_done */
};

typedef void (*route_fn)(struct ctx *c);

/* ---- error mapping ---------------------------------------------------- */

/* One table maps errno values to HTTP statuses and error codes. */
static const struct {
    int err;
    int status;
    const char *code;
} errmap[] = {
    /* negated errno, HTTP status, error code */
    {-EINVAL, 400, "invalid"},
    {-EFBIG, 413, "too_large"},
    {-ENOENT, 404, "not_found"},
    {-EPERM, 403, "forbidden"},
    {-EACCES, 401, "unauthorized"},
    {-EALREADY, 409, "conflict"},
    {-ENOMEM, 503, "unavailable"},
};

/* ---- engine operations ------------------------------------------------ */

struct op_state {
    struct sl_op op;
    struct sl_http_req *r;
    struct sl_api_metrics *metrics;
    int row;                      /* for the request counters */
    int64_t start_ns;
};

static void op_state_free(void *p)
{
    struct op_state *s = p;
    if (!s)
        return;
    sl_op_fini(&s->op);
    free(s);
}

/* Engine thread: the change is committed (or refused); answer and resume. */
static void op_done(struct sl_op *op, void *arg)
{
    struct op_state *s = arg;

    if (op->status >= 200 && op->status < 300 && op->body) {
        sl_http_reply(s->r, op->status, "application/json", op->body,
                      op->body_len);
    } else if (op->status >= 200 && op->status < 300) {
        sl_http_reply_json(s->r, op->status, op->result);
        op->result = NULL;
    } else {
        sl_http_reply_error(s->r, op->status, op->code ? op->code : "internal",
                            op->err.field, "%s", op->err.text);
    }
    sl_api_metrics_count(s->metrics, s->row, sl_http_method(s->r), sl_http_status(s->r),
                         sl_mono_ns() - s->start_ns);
    sl_http_resume(s->r);
}

/* The audit object of the request: "job:42", "user:alice", ... */
static void request_object(const struct ctx *c, char *out, size_t size)
{
    if (!c->object)
        out[0] = '\0';
    else if (c->id)
        snprintf(out, size, "%s:%lld", c->object, (long long)c->id);
    else
        snprintf(out, size, "%s:%s", c->object, c->name);
}

static struct op_state *op_new(struct ctx *c, enum sl_op_kind kind)
{
    struct op_state *s = calloc(1, sizeof(*s));
    if (!s) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    s->op.kind = kind;
    s->op.who = c->who;
    s->op.action = c->action;
    request_object(c, s->op.object, sizeof(s->op.object));
    s->op.done = op_done;
    s->op.arg = s;
    s->r = c->r;
    s->metrics = c->a->metrics;
    s->row = c->row;
    s->start_ns = c->start_ns;
    sl_http_set_state(c->r, s, op_state_free);
    return s;
}

static void op_send(struct ctx *c, struct op_state *s)
{
    c->suspended = true;
    sl_http_suspend(c->r);
    sl_engine_submit(c->a->e, &s->op);
}


/* Refuse the request. A state-changing request of a known caller is
 * refused through the engine, so that the refusal is in the audit log
 * before the answer goes out; anything else is answered at once. */
static void refuse(struct ctx *c, int status, const char *code, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void refuse(struct ctx *c, int status, const char *code, const char *field,
                   const char *fmt, ...)
{
    struct op_state *s;
    char text[sizeof(((struct sl_error *)0)->text)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (!c->action || !c->who.user[0] || !(s = op_new(c, SL_OP_AUDIT))) {
        if (c->action && c->who.user[0])
            return; /* op_new answered 503 */
        sl_http_reply_error(c->r, status, code, field, "%s", text);
        return;
    }
    s->op.action = c->action;
    request_object(c, s->op.object, sizeof(s->op.object));
    s->op.status = status;
    s->op.code = code;
    sl_strlcpy(s->op.err.text, text, sizeof(s->op.err.text));
    if (field)
        sl_strlcpy(s->op.err.field, field, sizeof(s->op.err.field));
    op_send(c, s);
}

static void reply_errno(struct ctx *c, int rc, const struct sl_error *err)
{
    const char *text = err && err->text[0] ? err->text : strerror(-rc);
    const char *field = err && err->field[0] ? err->field : NULL;

    for (size_t i = 0; i < SL_ARRAY_LEN(errmap); i++)
        if (errmap[i].err == rc) {
            refuse(c, errmap[i].status, errmap[i].code, field, "%s", text);
            return;
        }
    sl_http_reply_error(c->r, 500, "internal", NULL, "%s", text);
}

/* ---- helpers ---------------------------------------------------------- */

static bool can_see_team(const struct ctx *c, const char *team)
{
    return all_teams(&c->who) || (team && strcmp(team, c->who.team) == 0);
}

/* Fetch a job the caller may see; answers 404 itself when not. */
static json_t *visible_job(struct ctx *c)
{
    json_t *job = NULL;
    int rc = sl_store_job_read(c->a->rd, c->id, sl_job_view_json_fn, &job);

    if (!job || !can_see_team(c, json_string_value(json_object_get(job, "team")))) {
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
 * pending job's reason, which the scheduler has in memory. */
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
    char reason[200];

    if (jr->check_team && !can_see_team(jr->c, v.team)) {
        jr->hidden = true;
        return 0;
    }
    if (v.state == SL_JOB_PENDING &&
        sl_engine_reason(jr->c->a->e, v.id, reason, sizeof(reason)) == 0)
        v.reason = reason;
    if (jr->n++)
        sl_buf_add(jr->b, ",", 1);
    return sl_job_view_render(&v, jr->b);
}

/* Answer 200 with the text in 'b' wrapped as prefix + b + suffix. */
static void reply_text(struct ctx *c, struct sl_buf *b)
{
    if (b->failed)
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
    else
        sl_http_reply(c->r, 200, "application/json", b->data, b->len);
}

/* ---- handlers --------------------------------------------------------- */

static void h_healthz(struct ctx *c)
{
    sl_http_reply_json(c->r, 200, json_pack("{s:s}", "status", "ok"));
}

/* Unauthenticated, as node exporters are: the figures name nodes, queues
 * and teams but no job, user or secret. */
static void h_metrics(struct ctx *c)
{
    struct sl_buf b;

    sl_buf_init(&b);
    if (sl_api_metrics_render(c->a->metrics, c->a->e, &b) < 0)
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
    else
        sl_http_reply(c->r, 200, SL_METRICS_CTYPE, b.data, b.len);
    sl_buf_fini(&b);
}

static void h_whoami(struct ctx *c)
{
    sl_http_reply_json(c->r, 200,
                       json_pack("{s:s, s:s, s:s}", "user", c->who.user, "team",
                                 c->who.team, "role", c->who.role));
}

static bool query_bool(struct ctx *c, const char *key, bool *out);

static void h_job_submit(struct ctx *c)
{
    bool dry;
    struct sl_error err = {0};
    struct sl_job_spec *spec = NULL;
    struct op_state *s;
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    int rc;

    if (!query_bool(c, "dry_run", &dry))
        return;
    if (dry)
        c->action = NULL; /* a dry run changes nothing: not a request to record */
    if ((rc = sl_job_spec_parse(body, len, &spec, &err)) < 0) {
        reply_errno(c, rc, &err);
        return;
    }
    if (!(s = op_new(c, SL_OP_SUBMIT))) {
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
    op_send(c, s);
}

static void h_job_list(struct ctx *c)
{
    const char *state = sl_http_query(c->r, "state");
    const char *team = sl_http_query(c->r, "team");
    const char *limit_s = sl_http_query(c->r, "limit");
    const char *after_s = sl_http_query(c->r, "after");
    unsigned mask = 0;
    int64_t limit = 1000, after = 0, next = 0;
    int rc;

    if (state && *state && strcasecmp(state, "all") != 0) {
        char buf[256], *save = NULL;
        if (sl_strlcpy(buf, state, sizeof(buf)) >= sizeof(buf)) {
            sl_http_reply_error(c->r, 400, "invalid", "state", "too long");
            return;
        }
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int s = sl_job_state_parse(t);
            if (s < 0) {
                sl_http_reply_error(c->r, 400, "invalid", "state",
                                    "unknown state '%s'; expected Pending, Running, "
                                    "Succeeded, Failed, Cancelled, Preempted, Lost "
                                    "or all", t);
                return;
            }
            mask |= 1u << s;
        }
    }
    if (limit_s && sl_parse_int64(limit_s, 1, 10000, &limit) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "limit",
                            "must be an integer from 1 to 10000, got '%s'", limit_s);
        return;
    }
    if (after_s && sl_parse_int64(after_s, 0, INT64_MAX, &after) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "after",
                            "must be a job id, got '%s'", after_s);
        return;
    }
    if (team && !*team)
        team = NULL;
    if (!all_teams(&c->who)) {
        if (team && strcmp(team, c->who.team) != 0) {
            sl_http_reply_error(c->r, 403, "forbidden", "team",
                                "user '%s' may not list jobs of team '%s'",
                                c->who.user, team);
            return;
        }
        team = c->who.team;
    }
    {
        struct sl_buf b;
        struct job_render jr = {.c = c, .b = &b};
        sl_buf_init(&b);
        sl_buf_adds(&b, "{\"jobs\":[");
        rc = sl_store_job_scan(c->a->rd, after, mask, team, (int)limit, render_job, &jr,
                               &next);
        sl_buf_add(&b, "]", 1);
        if (rc == -EIO) {
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        } else {
            if (next)
                sl_buf_printf(&b, ",\"next\":%lld}\n", (long long)next);
            else
                sl_buf_adds(&b, ",\"next\":null}\n");
            reply_text(c, &b);
        }
        sl_buf_fini(&b);
    }
}

static void h_job_get(struct ctx *c)
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
        reply_text(c, &b);
    } else if (rc == -ENOENT) {
        sl_http_reply_error(c->r, 404, "not_found", NULL, "job %lld not found",
                            (long long)c->id);
    } else {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
    }
    sl_buf_fini(&b);
}

static void h_job_events(struct ctx *c)
{
    json_t *job = visible_job(c), *ev;
    int rc;

    if (!job)
        return;
    json_decref(job);
    if (!(ev = sl_store_events(c->a->rd, c->id, &rc))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", "events", ev));
}

static void h_job_cancel(struct ctx *c)
{
    struct op_state *s = op_new(c, SL_OP_CANCEL);
    if (!s)
        return;
    s->op.u.cancel.job_id = c->id;
    op_send(c, s);
}

static void h_job_logs(struct ctx *c)
{
    const char *task_s = sl_http_query(c->r, "task");
    const char *off_s = sl_http_query(c->r, "offset");
    const char *lim_s = sl_http_query(c->r, "limit");
    int64_t task = 0, offset = 0, limit = LOG_READ_MAX, tasks;
    json_t *job = visible_job(c);
    char path[1200], num[32];
    char *buf = NULL;
    ssize_t n = 0;
    struct stat sb;
    int fd;

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
    /* An executor that keeps no log (nothing runs) has an empty one. */
    fd = sl_engine_log_path(c->a->e, c->id, (int)task, path, sizeof(path)) == 0
             ? open(path, O_RDONLY | O_CLOEXEC)
             : -1;
    if (fd >= 0 && fstat(fd, &sb) == 0 && offset < sb.st_size) {
        size_t want = (size_t)(sb.st_size - offset < limit ? sb.st_size - offset : limit);
        if ((buf = malloc(want)) && (n = pread(fd, buf, want, offset)) < 0)
            n = 0;
    }
    if (fd >= 0)
        close(fd);
    snprintf(num, sizeof(num), "%lld", (long long)(offset + n));
    sl_http_add_header(c->r, "X-Sluice-Log-Offset", num);
    sl_http_add_header(c->r, "X-Sluice-Job-State",
                       json_string_value(json_object_get(job, "state")));
    sl_http_reply(c->r, 200, "text/plain; charset=utf-8", buf ? buf : "", (size_t)n);
out:
    free(buf);
    json_decref(job);
}

static void h_nodes(struct ctx *c)
{
    sl_http_reply_json(c->r, 200, sl_engine_nodes_json(c->a->e));
}

static void h_apply(struct ctx *c)
{
    struct sl_error err = {0};
    struct sl_manifest *m = NULL;
    struct op_state *s;
    size_t len, n = 0;
    const char *body = sl_http_body(c->r, &len);
    int rc;

    if ((rc = sl_manifests_parse(body, len, &m, &n, &err)) < 0) {
        reply_errno(c, rc, &err);
        return;
    }
    if (!(s = op_new(c, SL_OP_APPLY))) {
        free(m);
        return;
    }
    s->op.u.apply.manifests = m;
    s->op.u.apply.n = n;
    op_send(c, s);
}

static void h_list(struct ctx *c, const char *key, json_t *(*fn)(struct sl_store *, int *))
{
    int rc;
    json_t *arr = fn(c->a->rd, &rc);
    if (!arr) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", key, arr));
}

static void h_teams(struct ctx *c) { h_list(c, "teams", sl_store_teams); }

static void h_queues(struct ctx *c)
{
    json_t *arr = sl_engine_queues_json(c->a->e);

    if (!arr) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", "queues", arr));
}

/* ---- metering --------------------------------------------------------- */

#define CARBON_HOURS_MAX (24 * 366 * 5) /* five years of hours per upload */

/* The report window: from/to (RFC 3339, a date, or epoch ms); default the
 * start of this month (UTC) to now. Replies and returns false when bad. */
static bool report_window(struct ctx *c, int64_t now, int64_t *from, int64_t *to)
{
    const char *f = sl_http_query(c->r, "from"), *t = sl_http_query(c->r, "to");

    *from = sl_period_start(SL_PERIOD_MONTH, now);
    *to = now;
    if (f && *f && sl_parse_when_ms(f, from) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "from",
                            "must be a time (2026-12-01, 2026-12-01T08:00:00Z or "
                            "epoch ms), got '%.40s'", f);
        return false;
    }
    if (t && *t && sl_parse_when_ms(t, to) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "to",
                            "must be a time (2026-12-31, 2026-12-31T18:00:00Z or "
                            "epoch ms), got '%.40s'", t);
        return false;
    }
    if (*to <= *from) {
        sl_http_reply_error(c->r, 400, "invalid", "to", "must be after from");
        return false;
    }
    return true;
}

static int util_gpu(void *arg, const char *node, const char *model, int index)
{
    return sl_util_report_gpu(arg, node, model, index);
}

static int util_row(void *arg, const struct sl_usage_row *r)
{
    return sl_util_report_add(arg, r);
}

/* The utilisation report of [from, to), clipped to when the meter began. */
static struct sl_util_report *util_report(struct ctx *c, const struct sl_pricing *p,
                                          int64_t from, int64_t to, int64_t now, int *rc)
{
    int64_t since = sl_engine_meter_since(c->a->e);
    struct sl_util_report *u;

    if (from < since)
        from = since;
    if (to > now)
        to = now;
    if (!(u = sl_util_report_new(p, from, to, now))) {
        *rc = -ENOMEM;
        return NULL;
    }
    if ((*rc = sl_engine_gpus_each(c->a->e, util_gpu, u)) < 0 ||
        (*rc = sl_store_usage_scan(c->a->rd, from, to, NULL, 0, util_row, u)) < 0) {
        sl_util_report_free(u);
        return NULL;
    }
    return u;
}

struct report_scan {
    struct sl_report *r;
    const struct sl_carbon_hours *hours;
    size_t nhours;
};

static int report_row(void *arg, const struct sl_usage_row *row)
{
    struct report_scan *rs = arg;
    return sl_report_add(rs->r, row, rs->hours, rs->nhours);
}

static bool query_bool(struct ctx *c, const char *key, bool *out)
{
    const char *v = sl_http_query(c->r, key);

    *out = false;
    if (!v || !*v || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        return true;
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
        *out = true;
        return true;
    }
    sl_http_reply_error(c->r, 400, "invalid", key, "must be true or false, got '%.20s'", v);
    return false;
}

/* GET /v1/report?by=&from=&to=&period=&team=&share_idle= : usage, units,
 * energy, cost and carbon per key (and period). Members and viewers see
 * their team's usage only. */
static void h_report(struct ctx *c)
{
    const char *by_s = sl_http_query(c->r, "by"), *period_s = sl_http_query(c->r, "period");
    const char *team = sl_http_query(c->r, "team");
    struct sl_pricing *p = malloc(sizeof(*p));
    struct report_scan rs = {NULL, NULL, 0};
    struct sl_carbon_hours *hours = NULL;
    size_t nhours = 0;
    int64_t now = sl_now_ms(), from, to;
    int by, period = -1, rc;
    bool share;
    json_t *rows;

    if (!p) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    by = sl_report_by_parse(by_s && *by_s ? by_s : "team");
    if (by < 0) {
        sl_http_reply_error(c->r, 400, "invalid", "by",
                            "must be team, project, user, queue, gpu-model, node or job, "
                            "got '%.40s'", by_s);
        goto out;
    }
    if (period_s && *period_s) {
        static const char *const names[] = {"day", "week", "month"};
        for (int i = 0; i < 3; i++)
            if (strcmp(period_s, names[i]) == 0)
                period = i;
        if (period < 0) {
            sl_http_reply_error(c->r, 400, "invalid", "period",
                                "must be day, week or month, got '%.20s'", period_s);
            goto out;
        }
    }
    if (!report_window(c, now, &from, &to) || !query_bool(c, "share_idle", &share))
        goto out;
    if (team && !*team)
        team = NULL;
    if (!all_teams(&c->who)) {
        if (team && strcmp(team, c->who.team) != 0) {
            sl_http_reply_error(c->r, 403, "forbidden", "team",
                                "user '%s' may not see the usage of team '%s'",
                                c->who.user, team);
            goto out;
        }
        team = c->who.team;
    }
    if (period >= 0) {
        /* at most ~400 periods of a key: a day report over a year at most */
        int64_t span = (to - from) / 86400000;
        if (span > 400 && period == SL_PERIOD_DAY) {
            sl_http_reply_error(c->r, 400, "invalid", "period",
                                "a daily report covers at most 400 days; use week or "
                                "month");
            goto out;
        }
    }
    sl_engine_pricing(c->a->e, p);
    if (!(rs.r = sl_report_new(p, by, period, from, to, now)) ||
        sl_store_carbon_load(c->a->rd, from, to, &hours, &nhours) < 0) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        goto out;
    }
    rs.hours = hours;
    rs.nhours = nhours;
    if ((rc = sl_store_usage_scan(c->a->rd, from, to, team, 0, report_row, &rs)) < 0) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        goto out;
    }
    if (share) {
        struct sl_util_report *u = util_report(c, p, from, to, now, &rc);
        if (!u) {
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
            goto out;
        }
        sl_report_share_idle(rs.r, sl_util_report_idle_cost(u));
        sl_util_report_free(u);
    }
    if (!(rows = sl_report_json(rs.r))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        goto out;
    }
    {
        char f[40], t[40];
        sl_http_reply_json(c->r, 200,
                           json_pack("{s:s, s:s, s:s, s:s?, s:s, s:b, s:o}", "by",
                                     sl_report_by_name(by), "from",
                                     sl_time_rfc3339(from, f, sizeof(f)), "to",
                                     sl_time_rfc3339(to, t, sizeof(t)), "period",
                                     period >= 0 ? sl_budget_period_name(period) : NULL,
                                     "currency", p->currency, "chargeback", share,
                                     "rows", rows));
    }
out:
    sl_carbon_hours_free(hours, nhours);
    sl_report_free(rs.r);
    free(p);
}

/* GET /v1/report/utilisation?from=&to= : allocated against capacity per
 * node and GPU model, idle and allocated-but-unused GPU-hours and cost. */
static void h_report_util(struct ctx *c)
{
    struct sl_pricing *p = malloc(sizeof(*p));
    struct sl_util_report *u = NULL;
    int64_t now = sl_now_ms(), from, to;
    json_t *o;
    int rc;

    if (!p) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    if (!report_window(c, now, &from, &to))
        goto out;
    sl_engine_pricing(c->a->e, p);
    if (!(u = util_report(c, p, from, to, now, &rc)) || !(o = sl_util_report_json(u))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        goto out;
    }
    {
        int64_t since = sl_engine_meter_since(c->a->e);
        char f[40], t[40];
        json_object_set_new(o, "from", json_string(sl_time_rfc3339(from > since ? from : since,
                                                                   f, sizeof(f))));
        json_object_set_new(o, "to", json_string(sl_time_rfc3339(to < now ? to : now, t,
                                                                 sizeof(t))));
        sl_http_reply_json(c->r, 200, o);
    }
out:
    sl_util_report_free(u);
    free(p);
}

/* GET /v1/budgets: budgets with their use now and their threshold events. */
static void h_budgets(struct ctx *c)
{
    const char *team = all_teams(&c->who) ? NULL : c->who.team;
    json_t *arr = sl_engine_budgets_json(c->a->e, team), *ev, *all, *e;
    size_t i;
    int rc;

    if (!arr || !(all = sl_store_budget_events(c->a->rd, NULL, &rc))) {
        json_decref(arr);
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    ev = json_array();
    json_array_foreach(all, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "budget"));
        size_t k;
        json_t *b;
        json_array_foreach(arr, k, b)
        {
            if (name && strcmp(name, json_string_value(json_object_get(b, "name"))) == 0) {
                json_array_append(ev, e);
                break;
            }
        }
    }
    json_decref(all);
    sl_http_reply_json(c->r, 200, json_pack("{s:o, s:o}", "budgets", arr, "events", ev));
}

/* POST /v1/carbon/{name}: the hourly carbon intensity of site {name}, as
 * CSV lines "hour,gco2_per_kwh" (hour: RFC 3339 or epoch ms, on the hour;
 * a header line is allowed). Every line is checked before any is kept. */
static void h_carbon(struct ctx *c)
{
    size_t len, n = 0, cap = 0, line = 0;
    const char *body = sl_http_body(c->r, &len), *p = body, *end = body + len;
    int64_t *hours = NULL;
    double *g = NULL;
    struct op_state *s;
    char field[32];

    for (const char *q = c->name; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-')) {
            refuse(c, 400, "invalid", "site",
                                "site names are a-z, 0-9 and '-'");
            return;
        }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = (size_t)((nl ? nl : end) - p);
        char buf[128], *comma, *num_end;
        double v;
        int64_t at;
        line++;
        snprintf(field, sizeof(field), "line %zu", line);
        if (l >= sizeof(buf)) {
            refuse(c, 400, "invalid", field, "line too long");
            goto fail;
        }
        memcpy(buf, p, l);
        buf[l] = '\0';
        if (l && buf[l - 1] == '\r')
            buf[--l] = '\0';
        p = nl ? nl + 1 : end;
        if (l == 0)
            continue;
        if (!(comma = strchr(buf, ','))) {
            refuse(c, 400, "invalid", field,
                                "must be hour,gco2_per_kwh, got '%.40s'", buf);
            goto fail;
        }
        *comma = '\0';
        if (line == 1 && sl_parse_when_ms(buf, &at) < 0)
            continue; /* a header */
        if (sl_parse_when_ms(buf, &at) < 0 || at % 3600000 != 0) {
            refuse(c, 400, "invalid", field,
                                "hour must be a time on the hour, got '%.40s'", buf);
            goto fail;
        }
        v = strtod(comma + 1, &num_end);
        if (num_end == comma + 1 || *num_end || !(v >= 0 && v <= 1e5)) {
            refuse(c, 400, "invalid", field,
                                "gco2_per_kwh must be a number from 0 to 100000, "
                                "got '%.20s'", comma + 1);
            goto fail;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            int64_t *nh = realloc(hours, nc * sizeof(*nh));
            double *ng = nh ? realloc(g, nc * sizeof(*ng)) : NULL;
            if (nh)
                hours = nh;
            if (!nh || !ng) {
                sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
                goto fail;
            }
            g = ng;
            cap = nc;
        }
        if (n == CARBON_HOURS_MAX) {
            refuse(c, 413, "too_large", NULL,
                                "at most %d hours per upload", CARBON_HOURS_MAX);
            goto fail;
        }
        hours[n] = at;
        g[n++] = v;
    }
    if (n == 0) {
        refuse(c, 400, "invalid", "body", "no hours given");
        goto fail;
    }
    if (!(s = op_new(c, SL_OP_CARBON)))
        goto fail;
    sl_strlcpy(s->op.u.carbon.site, c->name, sizeof(s->op.u.carbon.site));
    s->op.u.carbon.hour_ms = hours;
    s->op.u.carbon.g = g;
    s->op.u.carbon.n = n;
    op_send(c, s);
    return;
fail:
    free(hours);
    free(g);
}

/* Why a job waits: the scheduler's explanation, or for a job it no longer
 * knows (finished), its state and nothing blocking. */
static void h_job_explain(struct ctx *c)
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
        reply_text(c, &b);
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
static void h_pclasses(struct ctx *c) { h_list(c, "priority_classes", sl_store_pclasses); }

static void h_token_create(struct ctx *c)
{
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    int64_t expires_in = 0;
    struct op_state *s;
    char label[64] = "";

    if (len) {
        json_error_t jerr;
        json_t *doc = sl_jf_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr), *v;
        const char *key;
        if (!doc && sl_jf_oom(&jerr)) {
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
            return;
        }
        if (!json_is_object(doc)) {
            json_decref(doc);
            refuse(c, 400, "invalid", NULL,
                                "body must be a JSON object: %s", jerr.text);
            return;
        }
        json_object_foreach(doc, key, v) {
            if (strcmp(key, "label") == 0) {
                const char *l = json_string_value(v);
                if (!l || strlen(l) >= sizeof(label) || !sl_text_printable(l)) {
                    refuse(c, 400, "invalid", "label",
                           "must be a string of at most %d printable characters",
                           (int)sizeof(label) - 1);
                    json_decref(doc);
                    return;
                }
                sl_strlcpy(label, l, sizeof(label));
                continue;
            }
            if (strcmp(key, "expires_in") != 0) {
                refuse(c, 400, "invalid", key, "unknown field");
                json_decref(doc);
                return;
            }
            if (!json_is_string(v) ||
                sl_parse_duration_ms(json_string_value(v), &expires_in) < 0 ||
                expires_in <= 0) {
                refuse(c, 400, "invalid", "expires_in",
                                    "must be a positive duration such as \"24h\"");
                json_decref(doc);
                return;
            }
        }
        json_decref(doc);
    }
    if (!(s = op_new(c, SL_OP_TOKEN)))
        return;
    sl_strlcpy(s->op.u.token.user, c->name, sizeof(s->op.u.token.user));
    sl_strlcpy(s->op.u.token.label, label, sizeof(s->op.u.token.label));
    s->op.u.token.expires_ms = expires_in ? sl_now_ms() + expires_in : 0;
    op_send(c, s);
}

/* GET /v1/tokens[?user=]: token descriptions, never secrets: one's own;
 * a team-admin's team's; everyone's for admin. */
static void h_tokens(struct ctx *c)
{
    const char *user = sl_http_query(c->r, "user");
    const char *team = NULL;
    enum sl_role r = role_of(&c->who);
    json_t *arr;
    int rc;

    if (user && !*user)
        user = NULL;
    if (r == SL_ROLE_TEAM_ADMIN)
        team = c->who.team;
    else if (r != SL_ROLE_ADMIN) {
        if (user && strcmp(user, c->who.user) != 0) {
            sl_http_reply_error(c->r, 403, "forbidden", "user",
                                "role %s sees its own tokens only", sl_role_name(r));
            return;
        }
        user = c->who.user;
    }
    /* a team-admin sees exactly what it may revoke (the engine's
     * may_manage_user): its team's tokens but those of admins and
     * auditors */
    if (!(arr = sl_store_tokens(c->a->rd, user, team, r == SL_ROLE_TEAM_ADMIN ? c->who.user : NULL,
                                &rc))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    if (r == SL_ROLE_JOB) {
        /* a job token sees itself only */
        size_t i;
        json_t *t, *mine = json_array();
        json_array_foreach(arr, i, t)
        {
            if (json_integer_value(json_object_get(t, "id")) == c->who.token_id)
                json_array_append(mine, t);
        }
        json_decref(arr);
        arr = mine;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", "tokens", arr));
}

static void h_token_revoke(struct ctx *c)
{
    struct op_state *s = op_new(c, SL_OP_REVOKE);
    if (!s)
        return;
    s->op.u.revoke.token_id = c->id;
    op_send(c, s);
}

/* ---- the audit log ---------------------------------------------------- */

static bool query_int(struct ctx *c, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = sl_http_query(c->r, key);

    if (!v || !*v)
        return true;
    if (sl_parse_int64(v, lo, hi, out) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", key,
                            "must be an integer from %lld to %lld, got '%.40s'",
                            (long long)lo, (long long)hi, v);
        return false;
    }
    return true;
}

static bool query_time(struct ctx *c, const char *key, int64_t *out)
{
    const char *v = sl_http_query(c->r, key);

    if (!v || !*v)
        return true;
    if (sl_parse_when_ms(v, out) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", key,
                            "must be an RFC 3339 time or a date (2026-12-01), got '%.40s'",
                            v);
        return false;
    }
    return true;
}

static bool audit_filter(struct ctx *c, struct sl_audit_filter *f, int64_t max_limit)
{
    static const char *const keys[] = {"actor", "action", "object", "outcome"};
    const char **vals[] = {&f->actor, &f->action, &f->object, &f->outcome};

    memset(f, 0, sizeof(*f));
    f->limit = max_limit;
    for (size_t i = 0; i < SL_ARRAY_LEN(keys); i++) {
        const char *v = sl_http_query(c->r, keys[i]);
        if (v && strlen(v) > 256) {
            sl_http_reply_error(c->r, 400, "invalid", keys[i], "at most 256 bytes");
            return false;
        }
        *vals[i] = v && *v ? v : NULL;
    }
    return query_int(c, "after", 0, INT64_MAX, &f->after) &&
           query_int(c, "limit", 1, max_limit, &f->limit) &&
           query_time(c, "from", &f->from_ms) && query_time(c, "to", &f->to_ms);
}

struct audit_out {
    struct sl_buf *b;
    int64_t last, n;
    bool json;                    /* a JSON array, else lines */
};

static int audit_emit(void *arg, const struct sl_store_audit_row *row)
{
    struct audit_out *o = arg;

    if (o->json && o->n)
        sl_buf_add(o->b, ",", 1);
    sl_buf_add(o->b, row->line, row->len);
    if (!o->json)
        sl_buf_add(o->b, "\n", 1);
    o->last = row->seq;
    o->n++;
    return o->b->failed ? -ENOMEM : 0;
}

/* GET /v1/audit: records (each the stored canonical object) by actor,
 * action, object, outcome and time; pages of at most 10,000. */
static void h_audit(struct ctx *c)
{
    struct sl_audit_filter f;
    struct sl_buf b;
    struct audit_out o = {&b, 0, 0, true};
    int rc;

    if (!audit_filter(c, &f, 10000))
        return;
    if (!sl_http_query(c->r, "limit"))
        f.limit = 100;
    sl_buf_init(&b);
    sl_buf_adds(&b, "{\"records\":[");
    if ((rc = sl_store_audit_scan(c->a->rd, &f, audit_emit, &o)) < 0) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
    } else {
        if (o.n == f.limit)
            sl_buf_printf(&b, "],\"next\":%lld}\n", (long long)o.last);
        else
            sl_buf_adds(&b, "],\"next\":null}\n");
        reply_text(c, &b);
    }
    sl_buf_fini(&b);
}

/* GET /v1/audit/export?after=&limit=: the log as JSON lines, exactly as
 * stored and hashed; at most 100,000 lines a page, the next page after the
 * seq in Sluice-Audit-Next. */
static void h_audit_export(struct ctx *c)
{
    struct sl_audit_filter f;
    struct sl_buf b;
    struct audit_out o = {&b, 0, 0, false};
    int rc;

    memset(&f, 0, sizeof(f));
    f.limit = 100000;
    if (!query_int(c, "after", 0, INT64_MAX, &f.after) ||
        !query_int(c, "limit", 1, 100000, &f.limit))
        return;
    sl_buf_init(&b);
    if ((rc = sl_store_audit_scan(c->a->rd, &f, audit_emit, &o)) < 0 || b.failed) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
    } else {
        char next[32];
        if (o.n == f.limit) {
            snprintf(next, sizeof(next), "%lld", (long long)o.last);
            sl_http_add_header(c->r, "Sluice-Audit-Next", next);
        }
        sl_http_reply(c->r, 200, "application/x-ndjson", b.data ? b.data : "", b.len);
    }
    sl_buf_fini(&b);
}

/* The live log checked: the chain by the verifier, and each row's index
 * columns against its line, so that a search (which uses the columns)
 * finds what the chain proves. */
struct audit_check {
    struct sl_audit_verifier v;
    int64_t bad_seq, bad_line;    /* a row whose columns differ; 0 = none */
    struct sl_error err;
};

static int audit_feed(void *arg, const struct sl_store_audit_row *row)
{
    struct audit_check *c = arg;
    struct sl_audit_index ix = {row->seq, row->at_ms, row->actor, row->action,
                                row->object, row->outcome};

    if (sl_audit_verifier_feed(&c->v, row->line, row->len) < 0 ||
        sl_audit_verifier_feed(&c->v, "\n", 1) < 0)
        return 1; /* stop at the first bad record */
    if (sl_audit_index_check(&ix, row->line, row->len, &c->err) < 0) {
        c->bad_seq = row->seq;
        c->bad_line = c->v.lines;
        return 1;
    }
    return 0;
}

/* GET /v1/audit/verify: the live log checked record by record, and against
 * the newest checkpoint the daemon signed. */
static void h_audit_verify(struct ctx *c)
{
    struct sl_audit_filter f = {0};
    struct audit_check chk;
    struct sl_audit_head ck = {0};
    struct sl_error err = {0};
    int64_t ck_at = 0;
    char *ck_text;
    bool have_ck = false, ok;
    int rc;
    json_t *res;
    char hex[65];

    ck_text = sl_store_audit_checkpoint_last(c->a->rd, &rc);
    if (ck_text) {
        if (sl_audit_checkpoint_verify(ck_text, strlen(ck_text), sl_engine_audit_vkey(c->a->e),
                                       &ck, &ck_at, &err) < 0) {
            free(ck_text);
            sl_http_reply_json(c->r, 200,
                               json_pack("{s:b, s:s}", "ok", 0, "error", err.text));
            return;
        }
        have_ck = true;
        free(ck_text);
    } else if (rc != -ENOENT) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    memset(&chk, 0, sizeof(chk));
    sl_audit_verifier_init(&chk.v, have_ck ? &ck : NULL);
    if ((rc = sl_store_audit_scan(c->a->rd, &f, audit_feed, &chk)) < 0) {
        sl_audit_verifier_fini(&chk.v);
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    /* A row whose columns differ from its line is the first failure. */
    ok = !chk.bad_seq && sl_audit_verifier_finish(&chk.v) == 0;
    sodium_bin2hex(hex, sizeof(hex), chk.v.head.hash, 32);
    res = json_pack("{s:b, s:I, s:s}", "ok", ok, "records", (json_int_t)chk.v.head.size,
                    "head", hex);
    if (have_ck) {
        char at[40], ckhex[65];
        sodium_bin2hex(ckhex, sizeof(ckhex), ck.hash, 32);
        json_object_set_new(res, "checkpoint",
                            json_pack("{s:I, s:s, s:s}", "size", (json_int_t)ck.size, "head",
                                      ckhex, "at", sl_time_rfc3339(ck_at, at, sizeof(at))));
    }
    if (chk.bad_seq)
        json_object_set_new(res, "error",
                            json_pack("{s:I, s:I, s:s}", "record", (json_int_t)chk.bad_seq,
                                      "line", (json_int_t)chk.bad_line, "message",
                                      chk.err.text));
    else if (!ok)
        json_object_set_new(res, "error",
                            json_pack("{s:I, s:I, s:s}", "record", (json_int_t)chk.v.bad_seq,
                                      "line", (json_int_t)chk.v.bad_line, "message",
                                      chk.v.why));
    sl_audit_verifier_fini(&chk.v);
    sl_http_reply_json(c->r, 200, res);
}

/* GET /v1/audit/checkpoint: the committed head, signed now. */
static void h_audit_checkpoint(struct ctx *c)
{
    struct sl_buf b;

    sl_buf_init(&b);
    if (sl_engine_audit_checkpoint(c->a->e, &b, NULL) < 0 || b.failed)
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "cannot sign a checkpoint");
    else
        sl_http_reply(c->r, 200, "text/plain; charset=utf-8", b.data, b.len);
    sl_buf_fini(&b);
}

static void h_audit_pubkey(struct ctx *c)
{
    struct sl_buf b;

    sl_buf_init(&b);
    sl_buf_printf(&b, "%s\n", sl_engine_audit_vkey(c->a->e));
    sl_http_reply(c->r, 200, "text/plain; charset=utf-8", b.data, b.len);
    sl_buf_fini(&b);
}

/* POST /v1/scans: a Trivy JSON report of an image (trivy image -f json);
 * its findings by severity are kept under the image's digest, for the
 * admission policy's scan gate. */
static void h_scan_import(struct ctx *c)
{
    struct sl_scan sc;
    struct sl_error err = {0};
    struct op_state *s;
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    int rc;

    if ((rc = sl_trivy_parse(body, len, &sc, &err)) < 0) {
        reply_errno(c, rc, &err);
        return;
    }
    sc.at_ms = sl_now_ms();
    if (!(s = op_new(c, SL_OP_SCAN)))
        return;
    snprintf(s->op.object, sizeof(s->op.object), "image:%s", sc.digest);
    if (!(s->op.u.scan.summary = sl_scan_json(&sc))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    op_send(c, s);
}

/* ---- governed objects, models, lineage --------------------------------- */

struct objs {
    json_t *arr;
    const struct ctx *c;
    const char *team_key;         /* filter on this member's team; NULL = none */
    const char *stage, *name;     /* models: filters */
};

static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

static int obj_row(void *arg, const char *name, const char *spec)
{
    struct objs *o = arg;
    json_t *d = json_loads(spec, 0, NULL);
    (void)name;
    if (!d)
        return 0;
    if (o->team_key) {
        const char *t = json_string_value(json_object_get(d, o->team_key));
        if (!can_see_team(o->c, t)) {
            json_decref(d);
            return 0;
        }
    }
    if ((o->stage && !str_is(json_object_get(d, "stage"), o->stage)) ||
        (o->name && !str_is(json_object_get(d, "name"), o->name))) {
        json_decref(d);
        return 0;
    }
    json_array_append_new(o->arr, d);
    return 0;
}

static void h_objs(struct ctx *c, const char *kind, const char *key, const char *team_key)
{
    struct objs o = {json_array(), c, team_key, NULL, NULL};

    if (strcmp(kind, "Model") == 0) {
        o.stage = sl_http_query(c->r, "stage");
        o.name = sl_http_query(c->r, "name");
    }
    if (!o.arr || sl_store_objs_each(c->a->rd, kind, obj_row, &o) < 0) {
        json_decref(o.arr);
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", key, o.arr));
}

static void h_policies(struct ctx *c) { h_objs(c, "Policy", "policies", NULL); }
static void h_datasets(struct ctx *c) { h_objs(c, "Dataset", "datasets", NULL); }
static void h_scans(struct ctx *c) { h_objs(c, "Scan", "scans", NULL); }
static void h_models(struct ctx *c) { h_objs(c, "Model", "models", "team"); }

/* A model the caller may see ({ref} = NAME@VERSION); answers itself when not. */
static json_t *visible_model(struct ctx *c, const char *ref)
{
    int rc;
    char *text = sl_store_obj_get(c->a->rd, "Model", ref, &rc);
    json_t *m = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    if (!m || !can_see_team(c, json_string_value(json_object_get(m, "team")))) {
        json_decref(m);
        if (rc == -EIO)
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        else
            sl_http_reply_error(c->r, 404, "not_found", NULL, "model %s not found", ref);
        return NULL;
    }
    return m;
}

static void h_model_get(struct ctx *c)
{
    json_t *m = visible_model(c, c->name);
    if (m)
        sl_http_reply_json(c->r, 200, m);
}

/* Member 'key' of 'o' as a string; "" when it is not one. */
static const char *jstr(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

static json_t *body_json(struct ctx *c)
{
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    json_error_t jerr;
    json_t *doc = len ? sl_jf_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;

    if (len && !doc && sl_jf_oom(&jerr)) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        refuse(c, 400, "invalid", NULL, "body must be a JSON object%s%s",
               len ? ": " : "", len ? jerr.text : "");
        return NULL;
    }
    return doc;
}

/* POST /v1/models {name, version, digest, uri, metrics?, team?, job?} */
static void h_model_register(struct ctx *c)
{
    static const char *const keys[] = {"name", "version", "digest", "uri", "metrics",
                                       "team", "job", NULL};
    json_t *d = body_json(c), *v, *m;
    const char *key, *uri;
    struct op_state *s;

    if (!d)
        return;
    json_object_foreach(d, key, v) {
        size_t i;
        for (i = 0; keys[i] && strcmp(keys[i], key) != 0; i++)
            ;
        if (!keys[i]) {
            refuse(c, 400, "invalid", key, "unknown field; expected name, version, digest, "
                   "uri, metrics, team or job");
            goto bad;
        }
    }
    if (!sl_name_valid(json_string_value(json_object_get(d, "name")))) {
        refuse(c, 400, "invalid", "name", "required: 1 to 63 of a-z, 0-9 and '-'");
        goto bad;
    }
    if (!sl_version_valid(jstr(d, "version"))) {
        refuse(c, 400, "invalid", "version",
               "required: 1 to 63 of A-Z, a-z, 0-9, '.', '_' and '-'");
        goto bad;
    }
    if (!sl_digest_valid(jstr(d, "digest"))) {
        refuse(c, 400, "invalid", "digest", "required: \"sha256:\" and 64 lowercase hex digits");
        goto bad;
    }
    uri = json_string_value(json_object_get(d, "uri"));
    if (!uri || !*uri || strlen(uri) > 1024 || !sl_text_printable(uri)) {
        refuse(c, 400, "invalid", "uri", "required: at most 1024 printable characters");
        goto bad;
    }
    if ((m = json_object_get(d, "metrics"))) {
        const char *mk;
        json_t *mv;
        if (!json_is_object(m) || json_object_size(m) > 64) {
            refuse(c, 400, "invalid", "metrics", "must be an object of at most 64 metrics");
            goto bad;
        }
        json_object_foreach(m, mk, mv) {
            if (strlen(mk) > 64 || !sl_text_printable(mk) ||
                !(json_is_number(mv) ||
                  (json_is_string(mv) && strlen(json_string_value(mv)) <= 256))) {
                refuse(c, 400, "invalid", "metrics",
                       "each metric: a name of at most 64 printable characters and a "
                       "number or a string of at most 256");
                goto bad;
            }
        }
    }
    if ((v = json_object_get(d, "team")) && !sl_name_valid(json_string_value(v))) {
        refuse(c, 400, "invalid", "team", "must be a team name");
        goto bad;
    }
    if ((v = json_object_get(d, "job")) && (!json_is_integer(v) || json_integer_value(v) < 1)) {
        refuse(c, 400, "invalid", "job", "must be a job id");
        goto bad;
    }
    if (!(s = op_new(c, SL_OP_MODEL)))
        goto bad;
    snprintf(s->op.object, sizeof(s->op.object), "model:%s@%s",
             json_string_value(json_object_get(d, "name")),
             json_string_value(json_object_get(d, "version")));
    s->op.u.model.body = d;
    op_send(c, s);
    return;
bad:
    json_decref(d);
}

/* POST /v1/models/{ref}/stage {stage, comment?} */
static void h_model_stage(struct ctx *c)
{
    static const char *const stages[] = {"none", "staging", "production", "archived"};
    json_t *d = body_json(c), *v;
    const char *key, *stage;
    struct op_state *s;
    bool known = false;

    if (!d)
        return;
    json_object_foreach(d, key, v) {
        if (strcmp(key, "stage") != 0 && strcmp(key, "comment") != 0) {
            refuse(c, 400, "invalid", key, "unknown field; expected stage or comment");
            goto bad;
        }
    }
    stage = json_string_value(json_object_get(d, "stage"));
    for (size_t i = 0; stage && i < SL_ARRAY_LEN(stages); i++)
        known |= strcmp(stage, stages[i]) == 0;
    if (!known) {
        refuse(c, 400, "invalid", "stage", "required: none, staging, production or archived");
        goto bad;
    }
    if ((v = json_object_get(d, "comment")) &&
        (!json_is_string(v) || strlen(json_string_value(v)) > 512 ||
         !sl_text_printable(json_string_value(v)))) {
        refuse(c, 400, "invalid", "comment", "at most 512 printable characters");
        goto bad;
    }
    if (!(s = op_new(c, SL_OP_STAGE)))
        goto bad;
    sl_strlcpy(s->op.u.stage.model, c->name, sizeof(s->op.u.stage.model));
    s->op.u.stage.body = d;
    op_send(c, s);
    return;
bad:
    json_decref(d);
}

static int lineage_usage_row(void *arg, const struct sl_usage_row *row)
{
    struct report_scan *rs = arg;
    return sl_report_add(rs->r, row, rs->hours, rs->nhours);
}

/* The job's part of a chain: who ran it where, what it used and cost, and
 * what it ran: image, code, datasets as admitted. NULL when not visible. */
static json_t *lineage_job(struct ctx *c, int64_t id)
{
    json_t *job = NULL, *out, *lin = NULL, *rows = NULL;
    int rc = sl_store_job_read(c->a->rd, id, sl_job_view_json_fn, &job);
    char *text;
    struct sl_pricing *p;
    struct report_scan rs = {NULL, NULL, 0};
    struct sl_carbon_hours *hours = NULL;
    size_t nhours = 0;
    int64_t now = sl_now_ms(), from;

    if (!job || !can_see_team(c, json_string_value(json_object_get(job, "team")))) {
        json_decref(job);
        return NULL;
    }
    text = sl_store_job_lineage_get(c->a->rd, id, &rc);
    lin = text && *text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    out = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "id",
                    json_object_get(job, "id"), "name", json_object_get(job, "name"), "user",
                    json_object_get(job, "user"), "team", json_object_get(job, "team"),
                    "queue", json_object_get(job, "queue"), "state",
                    json_object_get(job, "state"), "submitted_at",
                    json_object_get(job, "submitted_at"), "started_at",
                    json_object_get(job, "started_at"), "finished_at",
                    json_object_get(job, "finished_at"));
    /* the job's use runs from its submission on: only those hours of
     * carbon intensity are read */
    if (sl_parse_when_ms(jstr(job, "submitted_at"), &from) < 0)
        from = 0;
    if ((p = malloc(sizeof(*p)))) {
        sl_engine_pricing(c->a->e, p);
        if ((rs.r = sl_report_new(p, sl_report_by_parse("job"), -1, from, now + 1, now)) &&
            sl_store_carbon_load(c->a->rd, from, now + 1, &hours, &nhours) == 0) {
            rs.hours = hours;
            rs.nhours = nhours;
            if (sl_store_usage_scan(c->a->rd, from, now + 1, NULL, id, lineage_usage_row,
                                    &rs) == 0)
                rows = sl_report_json(rs.r);
        }
        sl_report_free(rs.r);
        sl_carbon_hours_free(hours, nhours);
        free(p);
    }
    {
        json_t *u = json_array_get(rows, 0);
        json_object_set_new(out, "usage",
                            u ? json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "gpu_hours",
                                          json_object_get(u, "gpu_hours"), "cu",
                                          json_object_get(u, "cu"), "energy_kwh",
                                          json_object_get(u, "energy_kwh"), "energy_measured",
                                          json_object_get(u, "energy_measured"), "cost",
                                          json_object_get(u, "cost"), "currency",
                                          json_object_get(u, "currency"), "co2_kg",
                                          json_object_get(u, "co2_kg"))
                              : json_pack("{s:i, s:i, s:i, s:b, s:i, s:i}", "gpu_hours", 0,
                                          "cu", 0, "energy_kwh", 0, "energy_measured", 0,
                                          "cost", 0, "co2_kg", 0));
    }
    json_decref(rows);
    json_object_set_new(out, "image", json_incref(json_object_get(lin, "image"))
                                          ? json_object_get(lin, "image")
                                          : json_null());
    json_object_set_new(out, "code", json_incref(json_object_get(lin, "code"))
                                         ? json_object_get(lin, "code")
                                         : json_null());
    json_object_set_new(out, "datasets", json_incref(json_object_get(lin, "datasets"))
                                             ? json_object_get(lin, "datasets")
                                             : json_array());
    json_decref(lin);
    json_decref(job);
    return out;
}

/* GET /v1/lineage/{ref}: ref model:NAME@VERSION or job:ID. */
static void h_lineage(struct ctx *c)
{
    json_t *m = NULL, *job = NULL;
    int64_t id = 0;

    if (strncmp(c->name, "model:", 6) == 0) {
        if (!(m = visible_model(c, c->name + 6)))
            return;
        id = json_integer_value(json_object_get(m, "job"));
    } else if (strncmp(c->name, "job:", 4) == 0) {
        if (sl_parse_int64(c->name + 4, 1, INT64_MAX, &id) < 0) {
            sl_http_reply_error(c->r, 400, "invalid", "ref", "job:ID, got '%s'", c->name);
            return;
        }
    } else {
        sl_http_reply_error(c->r, 400, "invalid", "ref",
                            "model:NAME@VERSION or job:ID, got '%s'", c->name);
        return;
    }
    if (id && !(job = lineage_job(c, id)) && !m) {
        sl_http_reply_error(c->r, 404, "not_found", NULL, "job %lld not found", (long long)id);
        return;
    }
    sl_http_reply_json(c->r, 200,
                       json_pack("{s:o, s:o}", "model", m ? m : json_null(), "job",
                                 job ? job : json_null()));
}

/* ---- routing ---------------------------------------------------------- */

/* Media types of request bodies. A route names the kinds it reads; a
 * POST, PUT or PATCH with a body of any other type, or of none, is 415
 * before its handler runs (docs/api-contract.md). */
enum media { MT_NONE = 0, MT_JSON = 1u << 0, MT_YAML = 1u << 1, MT_CSV = 1u << 2 };
static const struct {
    unsigned kind;
    const char *type;
} media_types[] = {
    /* kind, media type (the first of each kind is the one documented) */
    {MT_JSON, "application/json"},
    {MT_YAML, "application/yaml"},
    {MT_YAML, "application/x-yaml"},
    {MT_YAML, "text/yaml"},
    {MT_YAML, "text/x-yaml"},
    {MT_CSV, "text/csv"},
};

/* A route that changes state: the scope it needs and its audit action
 * are its operation's (src/engine/ops.c), never written twice. */
#define CHANGE(kind) SC_OF_OP, (int)(kind)
#define READ(scope) (scope), -1
#define SC_OF_OP (~0u)

/* The route table. Columns: method, path pattern ({id} = a positive
 * integer, {name} = an object name, {ref} = a reference such as
 * NAME@VERSION or model:NAME@VERSION), handler, the scope a read needs
 * (SL_SC_PUBLIC = no token) or CHANGE(the kind of operation it submits to
 * the engine: its refusals are recorded too), the kind of object its
 * {id}/{name} names in the record, and the media types of the body it
 * reads (MT_NONE: none). */
static const struct route {
    const char *method;
    const char *pattern;
    route_fn fn;
    unsigned scope;
    int op;                       /* enum sl_op_kind; -1 = a read */
    const char *object;
    unsigned body;
} routes[] = {
    {"GET", "/healthz", h_healthz, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"GET", "/metrics", h_metrics, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"GET", "/v1/whoami", h_whoami, READ(SL_SC_SELF), NULL, MT_NONE},
    {"POST", "/v1/jobs", h_job_submit, CHANGE(SL_OP_SUBMIT), NULL, MT_JSON | MT_YAML},
    {"GET", "/v1/jobs", h_job_list, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/jobs/{id}", h_job_get, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"DELETE", "/v1/jobs/{id}", h_job_cancel, CHANGE(SL_OP_CANCEL), "job", MT_NONE},
    {"GET", "/v1/jobs/{id}/events", h_job_events, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/jobs/{id}/logs", h_job_logs, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/jobs/{id}/explain", h_job_explain, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/nodes", h_nodes, READ(SL_SC_READ), NULL, MT_NONE},
    {"POST", "/v1/apply", h_apply, CHANGE(SL_OP_APPLY), NULL, MT_JSON | MT_YAML},
    {"GET", "/v1/teams", h_teams, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/queues", h_queues, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/priorityclasses", h_pclasses, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/policies", h_policies, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/datasets", h_datasets, READ(SL_SC_READ), NULL, MT_NONE},
    {"POST", "/v1/users/{name}/tokens", h_token_create, CHANGE(SL_OP_TOKEN), "user", MT_JSON},
    {"GET", "/v1/tokens", h_tokens, READ(SL_SC_SELF), NULL, MT_NONE},
    {"DELETE", "/v1/tokens/{id}", h_token_revoke, CHANGE(SL_OP_REVOKE), "token", MT_NONE},
    {"GET", "/v1/report", h_report, READ(SL_SC_REPORTS), NULL, MT_NONE},
    {"GET", "/v1/report/utilisation", h_report_util, READ(SL_SC_REPORTS), NULL, MT_NONE},
    {"GET", "/v1/budgets", h_budgets, READ(SL_SC_REPORTS), NULL, MT_NONE},
    {"POST", "/v1/carbon/{name}", h_carbon, CHANGE(SL_OP_CARBON), "site", MT_CSV},
    {"POST", "/v1/scans", h_scan_import, CHANGE(SL_OP_SCAN), NULL, MT_JSON},
    {"GET", "/v1/scans", h_scans, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/audit", h_audit, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/export", h_audit_export, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/verify", h_audit_verify, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/checkpoint", h_audit_checkpoint, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/pubkey", h_audit_pubkey, READ(SL_SC_SELF), NULL, MT_NONE},
    {"POST", "/v1/models", h_model_register, CHANGE(SL_OP_MODEL), NULL, MT_JSON},
    {"GET", "/v1/models", h_models, READ(SL_SC_LINEAGE), NULL, MT_NONE},
    {"GET", "/v1/models/{ref}", h_model_get, READ(SL_SC_LINEAGE), NULL, MT_NONE},
    {"POST", "/v1/models/{ref}/stage", h_model_stage, CHANGE(SL_OP_STAGE), "model", MT_JSON},
    {"GET", "/v1/lineage/{ref}", h_lineage, READ(SL_SC_LINEAGE), NULL, MT_NONE},
};

/* Whether the request's body has a media type its route reads. Only a
 * POST, PUT or PATCH with a non-empty body is checked, here once for every
 * route rather than in each handler; a type matches with any parameters
 * ("application/json; charset=utf-8"), case-insensitively. When it does
 * not, answers 415 through refuse(), so that a known caller's refused
 * change is recorded as every other refusal is. */
static bool body_type_ok(struct ctx *c, const struct route *rt)
{
    const char *method = sl_http_method(c->r), *ct = sl_http_header(c->r, "Content-Type");
    char want[96] = "", shown[64];
    size_t len, o = 0;
    unsigned listed = 0;

    sl_http_body(c->r, &len);
    if (len == 0 || (strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0 &&
                     strcmp(method, "PATCH") != 0))
        return true;
    for (size_t i = 0; ct && i < SL_ARRAY_LEN(media_types); i++) {
        size_t n = strlen(media_types[i].type);
        const char *p = ct + n;
        if (!(rt->body & media_types[i].kind) || strncasecmp(ct, media_types[i].type, n) != 0)
            continue;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == ';')
            return true;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(media_types) && o < sizeof(want); i++) {
        if (!(rt->body & media_types[i].kind) || (listed & media_types[i].kind))
            continue;
        listed |= media_types[i].kind;
        o += (size_t)snprintf(want + o, sizeof(want) - o, "%s%s", o ? " or " : "",
                              media_types[i].type);
    }
    if (!rt->body)
        refuse(c, 415, "unsupported_media_type", NULL, "%s %s takes no body", method,
               rt->pattern);
    else if (!ct || !*ct)
        refuse(c, 415, "unsupported_media_type", NULL,
               "a request body needs a Content-Type; send %s", want);
    else
        refuse(c, 415, "unsupported_media_type", NULL,
               "Content-Type %s is not accepted by %s %s; send %s",
               (sl_text_show(shown, sizeof(shown), ct, strlen(ct), 48), shown), method,
               rt->pattern, want);
    return false;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode %XX escapes in place (clients escape '@' and ':'); a decoded
 * '/' or NUL is refused. */
static int pct_decode(char *s)
{
    char *w = s;

    for (; *s; s++) {
        int v;
        if (*s != '%') {
            *w++ = *s;
            continue;
        }
        if (hexval(s[1]) < 0 || hexval(s[2]) < 0)
            return -1;
        v = hexval(s[1]) * 16 + hexval(s[2]);
        if (v == 0 || v == '/')
            return -1;
        *w++ = (char)v;
        s += 2;
    }
    *w = '\0';
    return 0;
}

static bool ref_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 127)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || strchr("._@:-", *s)))
            return false;
    return true;
}

/* Match 'path' against 'pattern', filling c->id / c->name. */
static bool match(const char *pattern, const char *path, struct ctx *c)
{
    while (*pattern && *path) {
        if (strncmp(pattern, "{id}", 4) == 0 || strncmp(pattern, "{name}", 6) == 0 ||
            strncmp(pattern, "{ref}", 5) == 0) {
            bool is_id = pattern[1] == 'i', is_ref = pattern[1] == 'r';
            const char *end = strchr(path, '/');
            size_t n = end ? (size_t)(end - path) : strlen(path);
            char seg[128];
            if (n == 0 || n >= sizeof(seg))
                return false;
            memcpy(seg, path, n);
            seg[n] = '\0';
            if (!is_id && pct_decode(seg) < 0)
                return false;
            if (is_id) {
                if (sl_parse_int64(seg, 1, INT64_MAX, &c->id) < 0)
                    return false;
            } else {
                if (is_ref ? !ref_valid(seg) : !sl_name_valid(seg))
                    return false;
                sl_strlcpy(c->name, seg, sizeof(c->name));
            }
            pattern += is_id ? 4 : is_ref ? 5 : 6;
            path += n;
            continue;
        }
        if (*pattern != *path)
            return false;
        pattern++;
        path++;
    }
    return *pattern == '\0' && (*path == '\0' || strcmp(path, "/") == 0);
}

static int authenticate(struct ctx *c)
{
    const char *h = sl_http_header(c->r, "Authorization");
    unsigned char hash[32];
    struct token_slot *slot;
    struct sl_token_who w;
    uint64_t epoch = sl_engine_token_epoch(c->a->e);
    int64_t now;
    size_t n;

    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return -EACCES;
    h += 7;
    while (*h == ' ')
        h++;
    n = strlen(h);
    if (n == 0 || n > 256)
        return -EACCES;
    if (epoch != c->a->cache_epoch) {
        /* a token was revoked: nothing cached may outlive it */
        memset(c->a->cache, 0, sizeof(c->a->cache));
        c->a->cache_epoch = epoch;
    }
    crypto_generichash(hash, sizeof(hash), (const unsigned char *)h, n, NULL, 0);
    now = sl_now_ms();
    slot = &c->a->cache[hash[0] % TOKEN_CACHE_SLOTS];
    if (slot->until_ms > now && memcmp(slot->hash, hash, sizeof(hash)) == 0) {
        c->who = slot->who;
        return 0;
    }
    if (sl_store_token_lookup(c->a->rd, hash, now, &w) < 0)
        return -EACCES;
    memset(&c->who, 0, sizeof(c->who));
    sl_strlcpy(c->who.user, w.user, sizeof(c->who.user));
    sl_strlcpy(c->who.team, w.team, sizeof(c->who.team));
    sl_strlcpy(c->who.role, w.role, sizeof(c->who.role));
    sl_strlcpy(c->who.unix_user, w.unix_user, sizeof(c->who.unix_user));
    c->who.job_id = w.job_id;
    c->who.token_id = w.token_id;
    memcpy(slot->hash, hash, sizeof(hash));
    slot->who = c->who;
    slot->until_ms = now + TOKEN_CACHE_MS;
    return 0;
}

static void dispatch(struct ctx *c);

void sl_api_handle(struct sl_http_req *r, void *arg)
{
    struct ctx c = {.a = arg, .r = r, .row = -1, .start_ns = sl_mono_ns()};

    dispatch(&c);
    /* A suspended request may be answered, counted and freed already. */
    if (!c.suspended)
        sl_api_metrics_count(c.a->metrics, c.row, sl_http_method(r), sl_http_status(r),
                             sl_mono_ns() - c.start_ns);
}

/* Find the route, check the caller, call the handler. */
static void dispatch(struct ctx *c)
{
    struct sl_http_req *r = c->r;
    const char *method = sl_http_method(r), *path = sl_http_path(r);
    const struct route *rt = NULL;
    unsigned scope;

    for (size_t i = 0; i < SL_ARRAY_LEN(routes); i++) {
        if (!match(routes[i].pattern, path, c))
            continue;
        if (c->row < 0)
            c->row = (int)i; /* a 405 is counted under the path's pattern */
        if (strcmp(routes[i].method, method) == 0) {
            rt = &routes[i];
            c->row = (int)i;
            break;
        }
    }
    if (!rt) {
        if (c->row >= 0)
            sl_http_reply_error(r, 405, "method_not_allowed", NULL,
                                "%s is not allowed on %s", method, path);
        else
            sl_http_reply_error(r, 404, "not_found", NULL, "no such route: %s %s",
                                method, path);
        return;
    }
    c->action = rt->op >= 0 ? sl_op_action((enum sl_op_kind)rt->op) : NULL;
    c->object = rt->object;
    scope = rt->op >= 0 ? sl_op_scope((enum sl_op_kind)rt->op) : rt->scope;
    if (scope != SL_SC_PUBLIC) {
        enum sl_role role;
        if (authenticate(c) < 0) {
            sl_http_add_header(r, "WWW-Authenticate", "Bearer");
            sl_http_reply_error(r, 401, "unauthorized", NULL,
                                "a valid bearer token is required");
            return;
        }
        role = role_of(&c->who);
        /* The one check of who may do what: the route's scope, or its
         * operation's. The engine's handlers apply only team rules. */
        if (!sl_role_may(role, scope)) {
            refuse(c, 403, "forbidden", NULL, "role %s may not %s %s",
                   role == SL_ROLE_JOB ? "job" : c->who.role, method, rt->pattern);
            return;
        }
    }
    if (!body_type_ok(c, rt))
        return;
    rt->fn(c);
}

/* ---- lifecycle -------------------------------------------------------- */

struct sl_api *sl_api_create(struct sl_engine *e, struct sl_error *err)
{
    struct sl_api *a = calloc(1, sizeof(*a));

    if (!a) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    a->e = e;
    {
        const char *patterns[SL_ARRAY_LEN(routes)];
        for (size_t i = 0; i < SL_ARRAY_LEN(routes); i++)
            patterns[i] = routes[i].pattern;
        if (!(a->metrics = sl_api_metrics_create(patterns, (int)SL_ARRAY_LEN(routes),
                                                 SLUICE_VERSION))) {
            free(a);
            sl_errorf(err, -ENOMEM, "out of memory");
            return NULL;
        }
    }
    if (!(a->rd = sl_store_open(sl_engine_store_path(e), false, false, err))) {
        sl_api_metrics_destroy(a->metrics);
        free(a);
        return NULL;
    }
    return a;
}

void sl_api_destroy(struct sl_api *a)
{
    if (!a)
        return;
    sl_store_close(a->rd);
    sl_api_metrics_destroy(a->metrics);
    free(a);
}
