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
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../meter/meter.h"
#include "../store/store.h"
#include "../util/buf.h"
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
};

enum role { ROLE_NONE, ROLE_VIEWER, ROLE_MEMBER, ROLE_ADMIN };

static enum role role_of(const struct sl_principal *p)
{
    if (strcmp(p->role, "admin") == 0)
        return ROLE_ADMIN;
    if (strcmp(p->role, "member") == 0)
        return ROLE_MEMBER;
    if (strcmp(p->role, "viewer") == 0)
        return ROLE_VIEWER;
    return ROLE_NONE;
}

struct ctx {
    struct sl_api *a;
    struct sl_http_req *r;
    struct sl_principal who;
    int64_t id;                   /* {id} in the path */
    char name[128];               /* {name} in the path */
    int row;                      /* route table row; -1 = none matched */
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

static void reply_errno(struct ctx *c, int rc, const struct sl_error *err)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(errmap); i++)
        if (errmap[i].err == rc) {
            sl_http_reply_error(c->r, errmap[i].status, errmap[i].code,
                                err ? err->field : NULL, "%s",
                                err && err->text[0] ? err->text : strerror(-rc));
            return;
        }
    sl_http_reply_error(c->r, 500, "internal", NULL, "%s",
                        err && err->text[0] ? err->text : strerror(-rc));
}

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
    sl_job_spec_destroy(s->op.spec);
    free(s->op.spec_json);
    free(s->op.manifests);
    json_decref(s->op.result);
    free(s->op.body);
    free(s->op.carbon_hour_ms);
    free(s->op.carbon_g);
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

static struct op_state *op_new(struct ctx *c, enum sl_op_kind kind)
{
    struct op_state *s = calloc(1, sizeof(*s));
    if (!s) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    s->op.kind = kind;
    s->op.who = c->who;
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

/* ---- helpers ---------------------------------------------------------- */

/* Accept JSON and YAML bodies; refuse other declared media types. */
static bool body_type_ok(struct ctx *c)
{
    const char *ct = sl_http_header(c->r, "Content-Type");
    static const char *const ok[] = {
        "application/json", "application/yaml", "application/x-yaml",
        "text/yaml", "text/x-yaml",
    };

    if (!ct || !*ct)
        return true;
    for (size_t i = 0; i < SL_ARRAY_LEN(ok); i++) {
        size_t n = strlen(ok[i]);
        if (strncasecmp(ct, ok[i], n) == 0 && (ct[n] == '\0' || ct[n] == ';'))
            return true;
    }
    sl_http_reply_error(c->r, 415, "unsupported_media_type", NULL,
                        "Content-Type %s is not accepted; send application/json "
                        "or application/yaml", ct);
    return false;
}

static bool can_see_team(const struct ctx *c, const char *team)
{
    return role_of(&c->who) == ROLE_ADMIN || (team && strcmp(team, c->who.team) == 0);
}

/* Fetch a job the caller may see; answers 404 itself when not. */
static json_t *visible_job(struct ctx *c)
{
    int rc;
    json_t *job = sl_store_job_get(c->a->rd, c->id, &rc);

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

/* Pending jobs carry the scheduler's current reason, kept in memory. */
static int reason_of(void *arg, int64_t id, char *buf, size_t size)
{
    return sl_engine_reason(arg, id, buf, size);
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

static void h_job_submit(struct ctx *c)
{
    struct sl_error err = {0};
    struct sl_job_spec *spec = NULL;
    struct op_state *s;
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    int rc;

    if (!body_type_ok(c))
        return;
    if ((rc = sl_job_spec_parse(body, len, &spec, &err)) < 0) {
        reply_errno(c, rc, &err);
        return;
    }
    if (!(s = op_new(c, SL_OP_SUBMIT))) {
        sl_job_spec_destroy(spec);
        return;
    }
    s->op.spec = spec;
    {
        /* The stored text of the spec, made here rather than on the
         * engine thread, which every submission waits for; on -ENOMEM the
         * engine makes it. */
        json_t *doc = sl_job_spec_to_json(spec);
        s->op.spec_json = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
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
    if (role_of(&c->who) != ROLE_ADMIN) {
        if (team && strcmp(team, c->who.team) != 0) {
            sl_http_reply_error(c->r, 403, "forbidden", "team",
                                "user '%s' may not list jobs of team '%s'",
                                c->who.user, team);
            return;
        }
        team = c->who.team;
    }
    {
        struct sl_reason_hook rh = {reason_of, c->a->e};
        struct sl_buf b;
        sl_buf_init(&b);
        sl_buf_adds(&b, "{\"jobs\":");
        rc = sl_store_job_list_render(c->a->rd, after, mask, team, (int)limit, &rh,
                                      &b, &next);
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
    struct sl_reason_hook rh = {reason_of, c->a->e};
    struct sl_buf b;
    char team[64] = "";
    int rc;

    sl_buf_init(&b);
    rc = sl_store_job_render(c->a->rd, c->id, &rh, &b, team, sizeof(team));
    if (rc == 0 && !can_see_team(c, team))
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
    s->op.job_id = c->id;
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
    sl_engine_log_path(c->a->e, c->id, (int)task, path, sizeof(path));
    fd = open(path, O_RDONLY | O_CLOEXEC);
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

    if (!body_type_ok(c))
        return;
    if ((rc = sl_manifests_parse(body, len, &m, &n, &err)) < 0) {
        reply_errno(c, rc, &err);
        return;
    }
    if (!(s = op_new(c, SL_OP_APPLY))) {
        free(m);
        return;
    }
    s->op.manifests = m;
    s->op.nmanifests = n;
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
    if (role_of(&c->who) != ROLE_ADMIN) {
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
    const char *team = role_of(&c->who) == ROLE_ADMIN ? NULL : c->who.team;
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
            sl_http_reply_error(c->r, 400, "invalid", "site",
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
            sl_http_reply_error(c->r, 400, "invalid", field, "line too long");
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
            sl_http_reply_error(c->r, 400, "invalid", field,
                                "must be hour,gco2_per_kwh, got '%.40s'", buf);
            goto fail;
        }
        *comma = '\0';
        if (line == 1 && sl_parse_when_ms(buf, &at) < 0)
            continue; /* a header */
        if (sl_parse_when_ms(buf, &at) < 0 || at % 3600000 != 0) {
            sl_http_reply_error(c->r, 400, "invalid", field,
                                "hour must be a time on the hour, got '%.40s'", buf);
            goto fail;
        }
        v = strtod(comma + 1, &num_end);
        if (num_end == comma + 1 || *num_end || !(v >= 0 && v <= 1e5)) {
            sl_http_reply_error(c->r, 400, "invalid", field,
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
            sl_http_reply_error(c->r, 413, "too_large", NULL,
                                "at most %d hours per upload", CARBON_HOURS_MAX);
            goto fail;
        }
        hours[n] = at;
        g[n++] = v;
    }
    if (n == 0) {
        sl_http_reply_error(c->r, 400, "invalid", "body", "no hours given");
        goto fail;
    }
    if (!(s = op_new(c, SL_OP_CARBON)))
        goto fail;
    sl_strlcpy(s->op.carbon_site, c->name, sizeof(s->op.carbon_site));
    s->op.carbon_hour_ms = hours;
    s->op.carbon_g = g;
    s->op.ncarbon = n;
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

    if (len) {
        json_error_t jerr;
        json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr), *v;
        const char *key;
        if (!json_is_object(doc)) {
            json_decref(doc);
            sl_http_reply_error(c->r, 400, "invalid", NULL,
                                "body must be a JSON object: %s", jerr.text);
            return;
        }
        json_object_foreach(doc, key, v) {
            if (strcmp(key, "expires_in") != 0) {
                sl_http_reply_error(c->r, 400, "invalid", key, "unknown field");
                json_decref(doc);
                return;
            }
            if (!json_is_string(v) ||
                sl_parse_duration_ms(json_string_value(v), &expires_in) < 0 ||
                expires_in <= 0) {
                sl_http_reply_error(c->r, 400, "invalid", "expires_in",
                                    "must be a positive duration such as \"24h\"");
                json_decref(doc);
                return;
            }
        }
        json_decref(doc);
    }
    if (!(s = op_new(c, SL_OP_TOKEN)))
        return;
    sl_strlcpy(s->op.token_user, c->name, sizeof(s->op.token_user));
    s->op.token_expires_ms = expires_in ? sl_now_ms() + expires_in : 0;
    op_send(c, s);
}

/* ---- routing ---------------------------------------------------------- */

/* The route table. Columns: method, path pattern ({id} = a job id, {name} =
 * an object name), handler, least role allowed (ROLE_NONE = no token). */
static const struct route {
    const char *method;
    const char *pattern;
    route_fn fn;
    enum role min_role;
} routes[] = {
    {"GET", "/healthz", h_healthz, ROLE_NONE},
    {"GET", "/metrics", h_metrics, ROLE_NONE},
    {"GET", "/v1/whoami", h_whoami, ROLE_VIEWER},
    {"POST", "/v1/jobs", h_job_submit, ROLE_MEMBER},
    {"GET", "/v1/jobs", h_job_list, ROLE_VIEWER},
    {"GET", "/v1/jobs/{id}", h_job_get, ROLE_VIEWER},
    {"DELETE", "/v1/jobs/{id}", h_job_cancel, ROLE_MEMBER},
    {"GET", "/v1/jobs/{id}/events", h_job_events, ROLE_VIEWER},
    {"GET", "/v1/jobs/{id}/logs", h_job_logs, ROLE_VIEWER},
    {"GET", "/v1/jobs/{id}/explain", h_job_explain, ROLE_VIEWER},
    {"GET", "/v1/nodes", h_nodes, ROLE_VIEWER},
    {"POST", "/v1/apply", h_apply, ROLE_ADMIN},
    {"GET", "/v1/teams", h_teams, ROLE_VIEWER},
    {"GET", "/v1/queues", h_queues, ROLE_VIEWER},
    {"GET", "/v1/priorityclasses", h_pclasses, ROLE_VIEWER},
    {"POST", "/v1/users/{name}/tokens", h_token_create, ROLE_ADMIN},
    {"GET", "/v1/report", h_report, ROLE_VIEWER},
    {"GET", "/v1/report/utilisation", h_report_util, ROLE_VIEWER},
    {"GET", "/v1/budgets", h_budgets, ROLE_VIEWER},
    {"POST", "/v1/carbon/{name}", h_carbon, ROLE_ADMIN},
};

/* Match 'path' against 'pattern', filling c->id / c->name. */
static bool match(const char *pattern, const char *path, struct ctx *c)
{
    while (*pattern && *path) {
        if (strncmp(pattern, "{id}", 4) == 0 || strncmp(pattern, "{name}", 6) == 0) {
            bool is_id = pattern[1] == 'i';
            const char *end = strchr(path, '/');
            size_t n = end ? (size_t)(end - path) : strlen(path);
            char seg[128];
            if (n == 0 || n >= sizeof(seg))
                return false;
            memcpy(seg, path, n);
            seg[n] = '\0';
            if (is_id) {
                if (sl_parse_int64(seg, 1, INT64_MAX, &c->id) < 0)
                    return false;
            } else {
                if (!sl_name_valid(seg))
                    return false;
                sl_strlcpy(c->name, seg, sizeof(c->name));
            }
            pattern += is_id ? 4 : 6;
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
    crypto_generichash(hash, sizeof(hash), (const unsigned char *)h, n, NULL, 0);
    now = sl_now_ms();
    slot = &c->a->cache[hash[0] % TOKEN_CACHE_SLOTS];
    if (slot->until_ms > now && memcmp(slot->hash, hash, sizeof(hash)) == 0) {
        c->who = slot->who;
        return 0;
    }
    if (sl_store_token_lookup(c->a->rd, hash, now, c->who.user, c->who.team,
                              c->who.role, c->who.unix_user) < 0)
        return -EACCES;
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
    if (rt->min_role != ROLE_NONE) {
        if (authenticate(c) < 0) {
            sl_http_add_header(r, "WWW-Authenticate", "Bearer");
            sl_http_reply_error(r, 401, "unauthorized", NULL,
                                "a valid bearer token is required");
            return;
        }
        if (role_of(&c->who) < rt->min_role) {
            sl_http_reply_error(r, 403, "forbidden", NULL,
                                "role %s may not %s %s", c->who.role, method,
                                rt->pattern);
            return;
        }
    }
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
