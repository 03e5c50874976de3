/*
 * api_meter.c - metering: usage reports, the utilisation report, budgets and
 * hourly carbon intensity.
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../meter/history.h"
#include "../meter/meter.h"
#include "../policy/policy.h"
#include "../policy/roles.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/jfield.h"

/* ---- metering --------------------------------------------------------- */


/* The optional time parameter 'name' (RFC 3339, a date, or epoch ms):
 * *has says whether it is there, and *ms is set when it is (else kept).
 * Replies 400 naming it and returns false when it is there and bad. */
static bool query_time(struct ctx *c, const char *name, bool *has, int64_t *ms)
{
    const char *v = sl_http_query(c->r, name);

    *has = v && *v;
    if (*has && sl_parse_when_ms(v, ms) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", name,
                            "must be a time (2026-12-01, 2026-12-01T08:00:00Z or epoch ms), "
                            "got '%.40s'", v);
        return false;
    }
    return true;
}

/* The report window: from/to (query_time); default the start of this
 * month (UTC) to now. Replies and returns false when bad. */
static bool report_window(struct ctx *c, int64_t now, int64_t *from, int64_t *to)
{
    bool has;

    *from = sl_period_start(SL_PERIOD_MONTH, now);
    *to = now;
    if (!query_time(c, "from", &has, from) || !query_time(c, "to", &has, to))
        return false;
    if (*to <= *from) {
        sl_http_reply_error(c->r, 400, "invalid", "to", "must be after from");
        return false;
    }
    return true;
}

/* format=json (the default, also when empty) or format=csv. Replies and
 * returns false for anything else. */
static bool report_format(struct ctx *c, bool *csv)
{
    const char *f = sl_http_query(c->r, "format");

    *csv = f && strcmp(f, "csv") == 0;
    if (!f || !*f || *csv || strcmp(f, "json") == 0)
        return true;
    sl_http_reply_error(c->r, 400, "invalid", "format", "must be json or csv, got '%.20s'",
                        f);
    return false;
}

/* An RFC 3339 time of a report ("2026-12-01T08:00:00.000Z") as a file name
 * takes it: "20261201T080000Z" (digits and T up to the fraction, then Z). */
static const char *file_stamp(const char *rfc3339, char *buf, size_t size)
{
    size_t o = 0;

    for (const char *p = rfc3339 ? rfc3339 : ""; *p && *p != '.' && o + 2 < size; p++)
        if ((*p >= '0' && *p <= '9') || *p == 'T')
            buf[o++] = *p;
    buf[o++] = 'Z';
    buf[o] = '\0';
    return buf;
}

/* Answer report 'o' (stolen) as CSV written by 'csv' (meter.h) from what
 * its JSON answer would carry, so that the body is what `sluice report
 * -o csv` prints for the same request: text/csv, an attachment named
 * sluice-report-WHAT-FROM-TO.csv after the report's from and to. */
static void reply_csv(struct ctx *c, json_t *o, int (*csv)(const json_t *, struct sl_buf *),
                      const char *what)
{
    json_t *sent = o ? sl_http_json_as_sent(o) : NULL;
    char f[24], t[24], disp[128];
    struct sl_buf b;
    int rc = -ENOMEM;

    sl_buf_init(&b);
    if (!sent || (rc = csv(sent, &b)) < 0) {
        sl_http_reply_error(c->r, rc == -ENOMEM ? 503 : 500,
                            rc == -ENOMEM ? "unavailable" : "internal", NULL,
                            rc == -ENOMEM ? "out of memory" : "the report has no rows");
        goto out;
    }
    snprintf(disp, sizeof(disp), "attachment; filename=\"sluice-report-%s-%s-%s.csv\"", what,
             file_stamp(json_string_value(json_object_get(sent, "from")), f, sizeof(f)),
             file_stamp(json_string_value(json_object_get(sent, "to")), t, sizeof(t)));
    sl_http_add_header(c->r, "Content-Disposition", disp);
    sl_http_reply(c->r, 200, "text/csv; charset=utf-8", b.data ? b.data : "", b.len);
out:
    sl_buf_fini(&b);
    json_decref(sent);
    json_decref(o);
}

/* The team a report covers: the query's 'team' ("" = every team); members
 * and viewers see their own team only, asked or not. Replies 403 and
 * returns false when they ask for another. */
static bool report_team(struct ctx *c, const char **team)
{
    if (*team && !**team)
        *team = NULL;
    if (!sl_api_all_teams(&c->who)) {
        if (*team && strcmp(*team, c->who.team) != 0) {
            sl_http_reply_error(c->r, 403, "forbidden", "team",
                                "user '%s' may not see the usage of team '%s'",
                                c->who.user, *team);
            return false;
        }
        *team = c->who.team;
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

int sl_api_report_row(void *arg, const struct sl_usage_row *row)
{
    struct sl_api_report_scan *rs = arg;
    return sl_report_add(rs->r, row, rs->hours, rs->nhours);
}

/* GET /v1/report?by=&from=&to=&period=&team=&share_idle=&format= : usage,
 * units, energy, cost and carbon per key (and period), as JSON or CSV.
 * Members and viewers see their team's usage only. */
void sl_api_route_report(struct ctx *c)
{
    const char *by_s = sl_http_query(c->r, "by"), *period_s = sl_http_query(c->r, "period");
    const char *team = sl_http_query(c->r, "team");
    struct sl_pricing *p = malloc(sizeof(*p));
    struct sl_api_report_scan rs = {NULL, NULL, 0};
    struct sl_carbon_hours *hours = NULL;
    size_t nhours = 0;
    int64_t now = sl_now_ms(), from, to;
    int by, period = -1, rc;
    bool share, csv;
    json_t *rows, *o;

    if (!p) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    if (!report_format(c, &csv))
        goto out;
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
    if (!report_window(c, now, &from, &to) || !sl_api_query_bool(c, "share_idle", &share))
        goto out;
    if (!report_team(c, &team))
        goto out;
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
    if ((rc = sl_store_usage_scan(c->a->rd, from, to, team, 0, sl_api_report_row, &rs)) < 0) {
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
        o = json_pack("{s:s, s:s, s:s, s:s?, s:s, s:b, s:o}", "by", sl_report_by_name(by),
                      "from", sl_time_rfc3339(from, f, sizeof(f)), "to",
                      sl_time_rfc3339(to, t, sizeof(t)), "period",
                      period >= 0 ? sl_budget_period_name(period) : NULL, "currency",
                      p->currency, "chargeback", share, "rows", rows);
    }
    if (csv)
        reply_csv(c, o, sl_report_csv, sl_report_by_name(by));
    else
        sl_http_reply_json(c->r, 200, o);
out:
    sl_carbon_hours_free(hours, nhours);
    sl_report_free(rs.r);
    free(p);
}

/* GET /v1/report/utilisation?from=&to=&format= : allocated against
 * capacity per node and GPU model, idle and allocated-but-unused GPU-hours
 * and cost, as JSON or CSV. */
void sl_api_route_report_util(struct ctx *c)
{
    struct sl_pricing *p = malloc(sizeof(*p));
    struct sl_util_report *u = NULL;
    int64_t now = sl_now_ms(), from, to;
    json_t *o;
    bool csv;
    int rc;

    if (!p) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    if (!report_format(c, &csv) || !report_window(c, now, &from, &to))
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
        if (csv)
            reply_csv(c, o, sl_util_report_csv, "utilisation");
        else
            sl_http_reply_json(c->r, 200, o);
    }
out:
    sl_util_report_free(u);
    free(p);
}

static int history_usage(void *arg, const struct sl_usage_row *r)
{
    sl_history_add_usage(arg, r);
    return 0;
}

static int history_event(void *arg, const struct sl_history_event *ev)
{
    return sl_history_add_event(arg, ev);
}

static int count_gpu(void *arg, const char *node, const char *model, int index)
{
    (void)node;
    (void)model;
    (void)index;
    ++*(int *)arg;
    return 0;
}

/* GET /v1/history?range=hour|day|week|month&from=&to=&step=&team= : GPUs
 * allocated and idle, utilisation, pending jobs, waits, starts and
 * preemptions per time bucket, from the store (docs/metering.md,
 * "History"). Members and viewers see their team's only. */
void sl_api_route_history(struct ctx *c)
{
    const char *range = sl_http_query(c->r, "range"), *step_s = sl_http_query(c->r, "step");
    const char *team = sl_http_query(c->r, "team");
    struct sl_history_window w;
    struct sl_error err;
    struct sl_history *h = NULL;
    int64_t now = sl_now_ms(), from = 0, to = 0, step = 0;
    bool has_from, has_to;
    int gpus = 0, rc;
    json_t *series;

    if (range && !*range)
        range = NULL;
    if (!query_time(c, "from", &has_from, &from) || !query_time(c, "to", &has_to, &to))
        return;
    if (step_s && *step_s && (sl_parse_duration_ms(step_s, &step) < 0 || step <= 0)) {
        sl_http_reply_error(c->r, 400, "invalid", "step",
                            "must be a duration (60s, 15m, 1h), got '%.20s'", step_s);
        return;
    }
    if (sl_history_window(range, has_from, from, has_to, to, step, now, &w, &err) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", err.field, "%s", err.text);
        return;
    }
    if (!report_team(c, &team))
        return;
    if (!(h = sl_history_new(&w, now))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    if ((rc = sl_store_history_scan(c->a->rd, w.from_ms, w.to_ms, team, history_usage,
                                    history_event, h)) < 0) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL,
                            rc == -ENOMEM ? "out of memory" : "store read failed");
        goto out;
    }
    if (!(series = sl_history_series(h))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        goto out;
    }
    sl_engine_gpus_each(c->a->e, count_gpu, &gpus);
    sl_http_reply_json(c->r, 200,
                       json_pack("{s:I, s:I, s:I, s:I, s:s?, s:i, s:o}", "from",
                                 (json_int_t)w.from_ms, "to", (json_int_t)w.to_ms, "step",
                                 (json_int_t)w.step_ms, "now", (json_int_t)now, "team", team,
                                 "capacity_gpus", gpus, "series", series));
out:
    sl_history_free(h);
}

/* GET /v1/budgets: budgets with their use now and their threshold events. */
void sl_api_route_budgets(struct ctx *c)
{
    const char *team = sl_api_all_teams(&c->who) ? NULL : c->who.team;
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
 * CSV lines "hour,gco2_per_kwh" (sl_carbon_parse_csv). */
void sl_api_route_carbon(struct ctx *c)
{
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    struct sl_carbon_csv csv;
    struct sl_carbon_error err;
    struct op_state *s;
    int rc;

    for (const char *q = c->name; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-')) {
            sl_api_refuse(c, 400, "invalid", "site", "site names are a-z, 0-9 and '-'");
            return;
        }
    if ((rc = sl_carbon_parse_csv(body, len, &csv, &err)) < 0) {
        if (rc == -ENOMEM)
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        else
            sl_api_refuse(c, rc == -E2BIG ? 413 : 400, rc == -E2BIG ? "too_large" : "invalid",
                          rc == -E2BIG ? NULL : err.field, "%s", err.text);
        return;
    }
    if (!(s = sl_api_op_new(c, SL_OP_CARBON))) {
        sl_carbon_csv_free(&csv);
        return;
    }
    sl_strlcpy(s->op.u.carbon.site, c->name, sizeof(s->op.u.carbon.site));
    s->op.u.carbon.hour_ms = csv.hour_ms;
    s->op.u.carbon.g = csv.g;
    s->op.u.carbon.n = csv.n;
    sl_api_op_send(c, s);
}
