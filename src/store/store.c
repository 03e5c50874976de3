/*
 * store.c - the store's front: choosing a backend by URI, the sl_store_*
 * dispatchers through its ops table, and what every backend shares: the
 * JSON lists built from the backends' rows and the carbon hours assembled
 * from theirs. See store.h for the contract; nothing here knows SQL.
 */
#include "store.h"

#include "backend.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backends by URI, first match wins. Columns: the prefix a URI starts
 * with ("" matches any: a plain path); how many of its bytes the backend's
 * open does not see; the backend's open, or NULL for a scheme that is
 * refused; the message of a refusal. */
static const struct backend {
    const char *prefix;
    size_t strip;
    struct sl_store *(*open)(const char *location, bool writer, bool sync_full,
                             struct sl_error *err);
    const char *refusal;
} backends[] = {
    {"postgres://", 0, sl_pg_open, NULL},
    {"postgresql://", 0, sl_pg_open, NULL},
    {"sqlite:", 7, sl_sqlite_open, NULL},
    {"", 0, sl_sqlite_open, NULL},
};

struct sl_store *sl_store_open(const char *uri, bool writer, bool sync_full,
                               struct sl_error *err)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(backends); i++) {
        const struct backend *b = &backends[i];
        if (strncmp(uri, b->prefix, strlen(b->prefix)) != 0)
            continue;
        if (!b->open) {
            sl_errorf(err, -ENOTSUP, "%s", b->refusal);
            errno = ENOTSUP;
            return NULL;
        }
        return b->open(uri + b->strip, writer, sync_full, err);
    }
    sl_errorf(err, -EINVAL, "--store: %s: not a store URI", uri);
    errno = EINVAL;
    return NULL;
}

void sl_store_close(struct sl_store *st)
{
    int saved = errno;
    if (st)
        st->ops->close(st);
    errno = saved;
}

/* ---- dispatchers --------------------------------------------------------- */

int sl_store_checkpointer_start(struct sl_store *st, int pages, struct sl_error *err)
{
    return st->ops->checkpointer_start(st, pages, err);
}

int sl_store_begin(struct sl_store *st) { return st->ops->begin(st); }
int sl_store_commit(struct sl_store *st, uint64_t *token) { return st->ops->commit(st, token); }
int sl_store_rollback(struct sl_store *st) { return st->ops->rollback(st); }
int sl_store_savepoint(struct sl_store *st) { return st->ops->savepoint(st); }
int sl_store_release(struct sl_store *st) { return st->ops->release(st); }
int sl_store_rollback_to(struct sl_store *st) { return st->ops->rollback_to(st); }
int sl_store_sync(struct sl_store *st, uint64_t token) { return st->ops->sync(st, token); }

int sl_store_meta_get(struct sl_store *st, const char *key, char *buf, size_t size)
{
    return st->ops->meta_get(st, key, buf, size);
}

int sl_store_meta_set(struct sl_store *st, const char *key, const char *val)
{
    return st->ops->meta_set(st, key, val);
}

int sl_store_team_upsert(struct sl_store *st, const char *name, const char *default_queue)
{
    return st->ops->team_upsert(st, name, default_queue);
}

int sl_store_cohort_upsert(struct sl_store *st, const char *name, const char *description)
{
    return st->ops->cohort_upsert(st, name, description);
}

int sl_store_queue_upsert(struct sl_store *st, const char *name, const char *team,
                          const char *spec_json)
{
    return st->ops->queue_upsert(st, name, team, spec_json);
}

int sl_store_pclass_upsert(struct sl_store *st, const char *name, int value,
                           bool preemptible, bool is_default, bool opportunistic,
                           int64_t min_runtime_ms)
{
    return st->ops->pclass_upsert(st, name, value, preemptible, is_default, opportunistic,
                                  min_runtime_ms);
}

int sl_store_user_upsert(struct sl_store *st, const char *name, const char *team,
                         const char *role, const char *unix_user)
{
    return st->ops->user_upsert(st, name, team, role, unix_user);
}

int sl_store_load(struct sl_store *st, const struct sl_store_loader *ld)
{
    return st->ops->load(st, ld);
}

int sl_store_token_insert(struct sl_store *st, const unsigned char hash[32],
                          const char *user, int64_t expires_ms, const char *label,
                          int64_t job_id, int64_t *id)
{
    return st->ops->token_insert(st, hash, user, expires_ms, label, job_id, id);
}

int sl_store_token_lookup(struct sl_store *st, const unsigned char hash[32],
                          int64_t now_ms, struct sl_token_who *who)
{
    return st->ops->token_lookup(st, hash, now_ms, who);
}

int sl_store_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                        int64_t *job_id, bool *revoked)
{
    return st->ops->token_info(st, id, user, team, job_id, revoked);
}

int sl_store_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms)
{
    return st->ops->token_revoke(st, id, now_ms);
}

int sl_store_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms)
{
    return st->ops->tokens_revoke_job(st, job_id, now_ms);
}

int sl_store_job_insert(struct sl_store *st, struct sl_job_view *v, int64_t not_before_ms)
{
    return st->ops->job_insert(st, v, not_before_ms);
}

int sl_store_job_max_id(struct sl_store *st, int64_t *id)
{
    return st->ops->job_max_id(st, id);
}

int sl_store_job_update(struct sl_store *st, const struct sl_job_view *v,
                        int64_t not_before_ms)
{
    return st->ops->job_update(st, v, not_before_ms);
}

int sl_store_job_respec(struct sl_store *st, int64_t id, const char *queue,
                        const char *priority_class, int priority, const char *spec_json)
{
    return st->ops->job_respec(st, id, queue, priority_class, priority, spec_json);
}

int sl_store_job_read(struct sl_store *st, int64_t id, sl_store_job_fn fn, void *arg)
{
    return st->ops->job_read(st, id, fn, arg);
}

/* What every backend refuses alike. */
static bool job_query_valid(const struct sl_store_job_query *q)
{
    return q->limit >= 1 && q->offset >= 0 && q->after >= 0 && q->array_job_id >= 0 &&
           (unsigned)q->sort < SL_JOB_NSORTS && (q->after == 0 || q->sort == SL_JOB_SORT_ID);
}

int sl_store_job_scan(struct sl_store *st, const struct sl_store_job_query *q,
                      sl_store_job_fn fn, void *arg, int64_t *next, int64_t *total)
{
    *next = 0;
    if (total)
        *total = 0;
    if (!job_query_valid(q))
        return -EINVAL;
    return st->ops->job_scan(st, q, fn, arg, next, total);
}

int sl_store_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms,
                       const char *type, const char *from, const char *to,
                       const char *message)
{
    return st->ops->event_add(st, job_id, at_ms, type, from, to, message);
}

int sl_store_attempt_put(struct sl_store *st, int64_t job_id, int attempt,
                         int64_t started_ms, const char *after, const char *log_offsets)
{
    return st->ops->attempt_put(st, job_id, attempt, started_ms, after, log_offsets);
}

int sl_store_job_lineage(struct sl_store *st, int64_t id, const char *lineage)
{
    return st->ops->job_lineage(st, id, lineage);
}

char *sl_store_job_lineage_get(struct sl_store *st, int64_t id, int *rc)
{
    return st->ops->job_lineage_get(st, id, rc);
}

int sl_store_usage_open(struct sl_store *st, const struct sl_usage_row *r)
{
    return st->ops->usage_open(st, r);
}

int sl_store_usage_close(struct sl_store *st, const struct sl_usage_row *r)
{
    return st->ops->usage_close(st, r);
}

int sl_store_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms)
{
    return st->ops->usage_mark_idle(st, job_id, idle_ms);
}

int sl_store_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                        const char *team, int64_t job_id,
                        int (*fn)(void *arg, const struct sl_usage_row *r), void *arg)
{
    return st->ops->usage_scan(st, from_ms, to_ms, team, job_id, fn, arg);
}

int sl_store_history_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                          const char *team,
                          int (*usage)(void *arg, const struct sl_usage_row *r),
                          int (*event)(void *arg, const struct sl_history_event *ev),
                          void *arg)
{
    return st->ops->history_scan(st, from_ms, to_ms, team, usage, event, arg);
}

int sl_store_budget_upsert(struct sl_store *st, const char *name, const char *team,
                           const char *spec_json)
{
    return st->ops->budget_upsert(st, name, team, spec_json);
}

int sl_store_budgets_load(struct sl_store *st,
                          int (*fn)(void *arg, const char *name, const char *spec_json),
                          void *arg)
{
    return st->ops->budgets_load(st, fn, arg);
}

int sl_store_budget_event_add(struct sl_store *st, const char *budget,
                              int64_t period_start, int threshold, int64_t at_ms,
                              double used, double limit)
{
    return st->ops->budget_event_add(st, budget, period_start, threshold, at_ms, used, limit);
}

int sl_store_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g)
{
    return st->ops->carbon_put(st, site, hour_ms, g);
}

int sl_store_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                       const char *action, const char *object, const char *outcome,
                       const char *line, size_t len, const unsigned char hash[32])
{
    return st->ops->audit_add(st, seq, at_ms, actor, action, object, outcome, line, len,
                              hash);
}

int sl_store_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32])
{
    return st->ops->audit_head(st, size, hash);
}

int sl_store_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                        int (*fn)(void *arg, const struct sl_store_audit_row *row),
                        void *arg)
{
    return st->ops->audit_scan(st, f, fn, arg);
}

int sl_store_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                                  const char *text)
{
    return st->ops->audit_checkpoint_put(st, size, at_ms, text);
}

char *sl_store_audit_checkpoint_last(struct sl_store *st, int *rc)
{
    return st->ops->audit_checkpoint_last(st, rc);
}

int sl_store_obj_put(struct sl_store *st, const char *kind, const char *name,
                     const char *spec)
{
    return st->ops->obj_put(st, kind, name, spec);
}

char *sl_store_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc)
{
    return st->ops->obj_get(st, kind, name, rc);
}

int sl_store_catalog_del(struct sl_store *st, const char *kind, const char *name)
{
    return st->ops->catalog_del(st, kind, name);
}

int sl_store_user_tokens_live(struct sl_store *st, const char *name, int64_t now_ms)
{
    return st->ops->user_tokens_live(st, name, now_ms);
}

int sl_store_obj_del(struct sl_store *st, const char *kind, const char *name)
{
    return st->ops->obj_del(st, kind, name);
}

int sl_store_objs_each(struct sl_store *st, const char *kind,
                       int (*fn)(void *arg, const char *name, const char *spec), void *arg)
{
    return st->ops->objs_each(st, kind, fn, arg);
}

/* ---- JSON lists from rows ------------------------------------------------ */

static json_t *time_or_null(int64_t ms)
{
    char buf[40];
    return ms ? json_string(sl_time_rfc3339(ms, buf, sizeof(buf))) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

/* The array a scan fills, or NULL with *rc: -ENOMEM, or the scan's error. */
static json_t *array_result(json_t *arr, int scan_rc, int *rc)
{
    *rc = scan_rc < 0 ? scan_rc : 0;
    if (*rc < 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

static int event_json(void *arg, const struct sl_store_event_row *r)
{
    json_array_append_new(arg, json_pack("{s:o, s:s, s:o, s:o, s:o}", "at",
                                         time_or_null(r->at_ms), "type", r->type, "from",
                                         str_or_null(r->from), "to", str_or_null(r->to),
                                         "message", str_or_null(r->message)));
    return 0;
}

static int attempt_json(void *arg, const struct sl_store_attempt_row *r)
{
    json_t *offs = r->log_offsets ? json_loads(r->log_offsets, 0, NULL) : NULL;

    if (!json_is_array(offs)) { /* an attempt that recorded none */
        json_decref(offs);
        offs = json_array();
    }
    json_array_append_new(arg, json_pack("{s:i, s:o, s:o, s:o}", "attempt", r->attempt,
                                         "started_at", time_or_null(r->started_ms), "after",
                                         str_or_null(r->after), "log_offsets", offs));
    return 0;
}

json_t *sl_store_attempts(struct sl_store *st, int64_t job_id, int *rc)
{
    json_t *arr = json_array();

    if (!arr) {
        *rc = -ENOMEM;
        return NULL;
    }
    return array_result(arr, st->ops->attempt_scan(st, job_id, attempt_json, arr), rc);
}

json_t *sl_store_events(struct sl_store *st, int64_t job_id, int *rc)
{
    json_t *arr = json_array();

    if (!arr) {
        *rc = -ENOMEM;
        return NULL;
    }
    return array_result(arr, st->ops->event_scan(st, job_id, event_json, arr), rc);
}

static int team_json(void *arg, const char *name, const char *default_queue)
{
    json_array_append_new(arg, json_pack("{s:s, s:s}", "name", name, "default_queue",
                                         default_queue));
    return 0;
}

json_t *sl_store_teams(struct sl_store *st, int *rc)
{
    json_t *arr = json_array();

    if (!arr) {
        *rc = -ENOMEM;
        return NULL;
    }
    return array_result(arr, st->ops->team_scan(st, team_json, arr), rc);
}

static int pclass_json(void *arg, const char *name, int value, bool preemptible,
                       bool is_default, bool opportunistic, int64_t min_runtime_ms)
{
    char d[48];

    sl_fmt_duration(min_runtime_ms, d, sizeof(d));
    json_array_append_new(arg, json_pack("{s:s, s:i, s:b, s:b, s:b, s:s}", "name", name,
                                         "value", value, "preemptible", preemptible,
                                         "default", is_default, "opportunistic",
                                         opportunistic, "min_runtime", d));
    return 0;
}

json_t *sl_store_pclasses(struct sl_store *st, int *rc)
{
    json_t *arr = json_array();

    if (!arr) {
        *rc = -ENOMEM;
        return NULL;
    }
    return array_result(arr, st->ops->pclass_scan(st, pclass_json, arr), rc);
}

static int token_json(void *arg, const struct sl_store_token_row *r)
{
    json_array_append_new(
        arg, json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b}", "id",
                       (json_int_t)r->id, "user", r->user, "team", r->team, "label",
                       r->label, "job", r->job_id ? json_integer(r->job_id) : json_null(),
                       "created_at", time_or_null(r->created_ms), "expires_at",
                       time_or_null(r->expires_ms), "revoked_at", time_or_null(r->revoked_ms),
                       "revoked", r->revoked));
    return 0;
}

json_t *sl_store_tokens(struct sl_store *st, const char *user, const char *team,
                        const char *manager, int *rc)
{
    json_t *arr = json_array();

    if (!arr) {
        *rc = -ENOMEM;
        return NULL;
    }
    return array_result(arr, st->ops->token_scan(st, user, team, manager, token_json, arr),
                        rc);
}

static int budget_event_json(void *arg, const struct sl_store_budget_event_row *r)
{
    json_array_append_new(
        arg, json_pack("{s:s, s:o, s:i, s:o, s:f, s:f}", "budget", r->budget, "period_start",
                       time_or_null(r->period_start_ms), "threshold_percent", r->threshold,
                       "at", time_or_null(r->at_ms), "used", r->used, "limit", r->limit));
    return 0;
}

json_t *sl_store_budget_events(struct sl_store *st, const char *budget, int *rc)
{
    json_t *arr = json_array();

    if (!arr) {
        *rc = -ENOMEM;
        return NULL;
    }
    return array_result(arr, st->ops->budget_event_scan(st, budget, budget_event_json, arr),
                        rc);
}

/* ---- carbon hours from rows ---------------------------------------------- */

/* The sites being assembled: the last one takes rows until the site
 * changes; its hours are collected first and laid out when it is done. */
struct carbon_load {
    struct sl_carbon_hours *h;    /* owned: the sites so far */
    size_t n;
    int64_t *hour;                /* owned: the current site's rows */
    double *g;
    size_t nrows, cap;
};

/* Lay the current site's rows out as hours from its first to its last
 * stored one, NaN between them. */
static int carbon_site_done(struct carbon_load *cl)
{
    struct sl_carbon_hours *h;
    int64_t lo, hi;
    size_t len;

    if (cl->n == 0 || cl->nrows == 0)
        return 0;
    h = &cl->h[cl->n - 1];
    lo = cl->hour[0];
    hi = cl->hour[cl->nrows - 1];
    len = (size_t)((hi - lo) / 3600000 + 1);
    if (!(h->g = malloc(len * sizeof(double))))
        return -ENOMEM;
    h->start_ms = lo;
    h->n = len;
    for (size_t i = 0; i < len; i++)
        h->g[i] = NAN;
    for (size_t i = 0; i < cl->nrows; i++)
        if (cl->hour[i] % 3600000 == 0)
            h->g[(cl->hour[i] - lo) / 3600000] = cl->g[i];
    cl->nrows = 0;
    return 0;
}

static int carbon_row(void *arg, const char *site, int64_t hour_ms, double g)
{
    struct carbon_load *cl = arg;
    int rc;

    /* a site's name is kept to sizeof(site) - 1 bytes */
    if (cl->n == 0 ||
        strncmp(cl->h[cl->n - 1].site, site, sizeof(cl->h[0].site) - 1) != 0) {
        struct sl_carbon_hours *nh;
        if ((rc = carbon_site_done(cl)) < 0)
            return rc;
        if (!(nh = realloc(cl->h, (cl->n + 1) * sizeof(*nh))))
            return -ENOMEM;
        cl->h = nh;
        memset(&cl->h[cl->n], 0, sizeof(cl->h[cl->n]));
        sl_strlcpy(cl->h[cl->n].site, site, sizeof(cl->h[cl->n].site));
        cl->n++;
    }
    if (cl->nrows == cl->cap) {
        size_t cap = cl->cap ? 2 * cl->cap : 64;
        int64_t *nhour = realloc(cl->hour, cap * sizeof(*nhour));
        double *ng;
        if (nhour)
            cl->hour = nhour;
        if (!nhour || !(ng = realloc(cl->g, cap * sizeof(*ng))))
            return -ENOMEM;
        cl->g = ng;
        cl->cap = cap;
    }
    cl->hour[cl->nrows] = hour_ms;
    cl->g[cl->nrows++] = g;
    return 0;
}

int sl_store_carbon_load(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                         struct sl_carbon_hours **out, size_t *n)
{
    struct carbon_load cl = {0};
    int rc;

    *out = NULL;
    *n = 0;
    from_ms -= from_ms % 3600000;
    rc = st->ops->carbon_scan(st, from_ms, to_ms, carbon_row, &cl);
    if (rc == 0)
        rc = carbon_site_done(&cl);
    free(cl.hour);
    free(cl.g);
    if (rc < 0) {
        sl_carbon_hours_free(cl.h, cl.n);
        return rc;
    }
    *out = cl.h;
    *n = cl.n;
    return 0;
}

void sl_carbon_hours_free(struct sl_carbon_hours *h, size_t n)
{
    for (size_t i = 0; h && i < n; i++)
        free(h[i].g);
    free(h);
}

/* ---- several daemons on one store ---------------------------------------- */

int sl_store_ha_tick(struct sl_store *st, const char *name, const char *url, int64_t lease_ms,
                     int64_t *epoch, struct sl_ha_lease *lease)
{
    return st->ops->ha_tick(st, name, url, lease_ms, epoch, lease);
}

int sl_store_ha_release(struct sl_store *st, const char *name, int64_t epoch)
{
    return st->ops->ha_release(st, name, epoch);
}

int sl_store_ha_lease_get(struct sl_store *st, struct sl_ha_lease *lease)
{
    return st->ops->ha_lease_get(st, lease);
}

int sl_store_ha_members(struct sl_store *st,
                        int (*fn)(void *arg, const struct sl_ha_member_row *r), void *arg)
{
    return st->ops->ha_member_scan(st, fn, arg);
}

int sl_store_fence(struct sl_store *st, int64_t epoch) { return st->ops->fence(st, epoch); }
