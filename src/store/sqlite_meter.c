/*
 * sqlite_meter.c - the SQLite backend's metering rows: the usage ledger
 * (one interval per task and attempt, open until the task ends), budgets
 * and their threshold events (once per period and threshold: a UNIQUE key),
 * and hourly carbon intensity per site.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <string.h>

static const char *const meter_sql[SQ_METER_N] = {
    [SQ_USAGE_OPEN] = "INSERT INTO usage(job_id, attempt, task, team, project, user, queue, "
                      "node, gpu_model, gpus, ngpus, gpu_milli, cpu_milli, mem_bytes, "
                      "start_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                      "?13, ?14, ?15)",
    [SQ_USAGE_CLOSE] = "UPDATE usage SET end_ms = ?4, gpu_energy_j = ?5, cpu_energy_j = ?6, "
                       "util = ?7, idle_ms = ?8, start_ms = ?9 WHERE job_id = ?1 AND "
                       "attempt = ?2 AND task = ?3 AND end_ms IS NULL",
    [SQ_USAGE_IDLE] = "UPDATE usage SET idle = 1, idle_ms = ?2 WHERE job_id = ?1 AND "
                      "end_ms IS NULL",
    [SQ_BUDGET_GET] = "SELECT spec FROM budgets WHERE name = ?1",
    [SQ_BUDGET_PUT] = "INSERT INTO budgets(name, team, spec, created_at) "
                      "VALUES(?1, ?2, ?3, ?4) ON CONFLICT(name) DO UPDATE SET "
                      "team = excluded.team, spec = excluded.spec",
    [SQ_BUDGET_EVENT] = "INSERT OR IGNORE INTO budget_events(budget, period_start, threshold, "
                        "at, used, limit_value) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [SQ_CARBON_PUT] = "INSERT INTO carbon_hourly(site, hour, g) VALUES(?1, ?2, ?3) "
                      "ON CONFLICT(site, hour) DO UPDATE SET g = excluded.g",
};

static sqlite3_stmt *prep(struct sl_sqlite *s, enum sq_meter_stmt i)
{
    return sl_sqlite_prep(s, &s->meter[i], meter_sql[i]);
}

/* Bind 'v' when 'has' says it was measured, else NULL. */
static void bind_double_or_null(sqlite3_stmt *q, int i, bool has, double v)
{
    if (has)
        sqlite3_bind_double(q, i, v);
    else
        sqlite3_bind_null(q, i);
}

/* ---- the usage ledger ---------------------------------------------------- */

int sl_sqlite_usage_open(struct sl_store *st, const struct sl_usage_row *r)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_USAGE_OPEN);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, r->job_id);
    sqlite3_bind_int(q, 2, r->attempt);
    sqlite3_bind_int(q, 3, r->task);
    sqlite3_bind_text(q, 4, r->team, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, r->project ? r->project : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, r->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 7, r->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 8, r->node, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 9, r->gpu_model ? r->gpu_model : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 10, r->gpus ? r->gpus : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 11, r->ngpus);
    sqlite3_bind_int(q, 12, r->gpu_milli);
    sqlite3_bind_int64(q, 13, r->cpu_milli);
    sqlite3_bind_int64(q, 14, r->mem_bytes);
    sqlite3_bind_int64(q, 15, r->start_ms);
    return sl_sqlite_step_done(s, q);
}

int sl_sqlite_usage_close(struct sl_store *st, const struct sl_usage_row *r)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_USAGE_CLOSE);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, r->job_id);
    sqlite3_bind_int(q, 2, r->attempt);
    sqlite3_bind_int(q, 3, r->task);
    sqlite3_bind_int64(q, 4, r->end_ms);
    bind_double_or_null(q, 5, r->gpu_energy_measured, r->gpu_energy_j);
    bind_double_or_null(q, 6, r->cpu_energy_measured, r->cpu_energy_j);
    bind_double_or_null(q, 7, r->has_util, r->util);
    sqlite3_bind_int64(q, 8, r->idle_ms);
    sqlite3_bind_int64(q, 9, r->start_ms);
    return sl_sqlite_step_done(s, q);
}

int sl_sqlite_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_USAGE_IDLE);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int64(q, 2, idle_ms);
    return sl_sqlite_step_done(s, q);
}

/* Fill 'r' from a row of the scan below; strings point into the row. */
static void usage_row(sqlite3_stmt *q, struct sl_usage_row *r)
{
    memset(r, 0, sizeof(*r));
    r->id = sqlite3_column_int64(q, 0);
    r->job_id = sqlite3_column_int64(q, 1);
    r->attempt = sqlite3_column_int(q, 2);
    r->task = sqlite3_column_int(q, 3);
    r->team = sl_sqlite_col_str(q, 4);
    r->project = sl_sqlite_col_str(q, 5);
    r->user = sl_sqlite_col_str(q, 6);
    r->queue = sl_sqlite_col_str(q, 7);
    r->node = sl_sqlite_col_str(q, 8);
    r->gpu_model = sl_sqlite_col_str(q, 9);
    r->gpus = sl_sqlite_col_str(q, 10);
    r->ngpus = sqlite3_column_int(q, 11);
    r->gpu_milli = sqlite3_column_int(q, 12);
    r->cpu_milli = sqlite3_column_int64(q, 13);
    r->mem_bytes = sqlite3_column_int64(q, 14);
    r->start_ms = sqlite3_column_int64(q, 15);
    r->end_ms = sqlite3_column_int64(q, 16);
    if ((r->gpu_energy_measured = sqlite3_column_type(q, 17) != SQLITE_NULL))
        r->gpu_energy_j = sqlite3_column_double(q, 17);
    if ((r->cpu_energy_measured = sqlite3_column_type(q, 18) != SQLITE_NULL))
        r->cpu_energy_j = sqlite3_column_double(q, 18);
    if ((r->has_util = sqlite3_column_type(q, 19) != SQLITE_NULL))
        r->util = sqlite3_column_double(q, 19);
    r->idle = sqlite3_column_int(q, 20) != 0;
    r->idle_ms = sqlite3_column_int64(q, 21);
}

int sl_sqlite_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                         const char *team, int64_t job_id,
                         int (*fn)(void *arg, const struct sl_usage_row *r), void *arg)
{
#define USAGE_SCAN                                                              \
    "SELECT id, job_id, attempt, task, team, project, user, queue, node, "      \
    "gpu_model, gpus, ngpus, gpu_milli, cpu_milli, mem_bytes, start_ms, "       \
    "coalesce(end_ms, 0), gpu_energy_j, cpu_energy_j, util, idle, idle_ms FROM usage " \
    "WHERE start_ms < ?2 AND (end_ms IS NULL OR end_ms > ?1) "                  \
    "AND (?3 IS NULL OR team = ?3) "
    /* one job's rows through its index, not a scan of the whole window */
    static const char all[] = USAGE_SCAN "AND (?4 = 0 OR job_id = ?4) ORDER BY job_id, id";
    static const char one[] = USAGE_SCAN "AND job_id = ?4 ORDER BY job_id, id";
#undef USAGE_SCAN
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    int rc = 0, step;

    if (sqlite3_prepare_v2(s->db, job_id ? one : all, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, from_ms);
    sqlite3_bind_int64(q, 2, to_ms);
    sl_sqlite_bind_text_or_null(q, 3, team);
    sqlite3_bind_int64(q, 4, job_id);
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_usage_row r;
        usage_row(q, &r);
        if ((rc = fn(arg, &r)) < 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc;
}

/* ---- the history --------------------------------------------------------- */

/* Run 'q' (bound) to its end, calling fn per row; fn's first negative
 * return stops it and is returned. */
static int history_rows(sqlite3_stmt *q, int (*fn)(sqlite3_stmt *q, void *arg), void *arg)
{
    int rc = 0, step;

    while ((step = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(q, arg)) < 0)
            break;
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    return rc;
}

struct history_scan {
    int (*usage)(void *arg, const struct sl_usage_row *r);
    int (*event)(void *arg, const struct sl_history_event *ev);
    void *arg;
};

static int history_usage_row(sqlite3_stmt *q, void *arg)
{
    struct history_scan *hs = arg;
    struct sl_usage_row r;

    memset(&r, 0, sizeof(r));
    r.start_ms = sqlite3_column_int64(q, 0);
    r.end_ms = sqlite3_column_int64(q, 1);
    r.ngpus = sqlite3_column_int(q, 2);
    r.gpu_milli = sqlite3_column_int(q, 3);
    if ((r.has_util = sqlite3_column_type(q, 4) != SQLITE_NULL))
        r.util = sqlite3_column_double(q, 4);
    r.idle_ms = sqlite3_column_int64(q, 5);
    return hs->usage(hs->arg, &r);
}

static int history_event_row(sqlite3_stmt *q, void *arg)
{
    /* the kinds by the number the statement gives them */
    static const enum sl_history_kind kinds[] = {SL_HIST_PENDING_NOW, SL_HIST_ENTER,
                                                 SL_HIST_LEAVE, SL_HIST_START,
                                                 SL_HIST_PREEMPT};
    struct history_scan *hs = arg;
    int k = sqlite3_column_int(q, 0);
    struct sl_history_event ev = {.kind = kinds[k >= 0 && k < 5 ? k : 0]};

    if (k == 0)
        ev.count = sqlite3_column_int64(q, 1);
    else
        ev.at_ms = sqlite3_column_int64(q, 1);
    ev.since_ms = sqlite3_column_int64(q, 2); /* NULL reads 0 */
    return hs->event(hs->arg, &ev);
}

int sl_sqlite_history_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                           const char *team,
                           int (*usage)(void *arg, const struct sl_usage_row *r),
                           int (*event)(void *arg, const struct sl_history_event *ev),
                           void *arg)
{
    /* closed intervals by their end (usage_end: the start would reach back
     * over the whole ledger), then the open ones */
    static const char usage_sql[] =
        "SELECT start_ms, end_ms, ngpus, gpu_milli, util, idle_ms FROM usage "
        "WHERE end_ms > ?1 AND +start_ms < ?2 AND ngpus > 0 AND (?3 IS NULL OR team = ?3) "
        "UNION ALL "
        "SELECT start_ms, 0, ngpus, gpu_milli, util, idle_ms FROM usage "
        "WHERE end_ms IS NULL AND start_ms < ?2 AND ngpus > 0 AND (?3 IS NULL OR team = ?3)";
    /* One statement, so one snapshot: the count of now and every
     * transition since from. Kinds: 0 the count, 1 into Pending, 2 out of
     * it, 3 out of it to run (with when the job last went into it), 4 a
     * preemption. The transitions' filter is the partial index
     * job_events_history's, word for word (0010_history.sql), so that the
     * window is read from that index alone; the entry before a start
     * from job_events_enter. A team's jobs are looked up per transition,
     * so that a short window costs little however many jobs it has had. */
    static const char event_sql[] =
        "SELECT 0, count(*), NULL FROM jobs WHERE state = 0 AND (?2 IS NULL OR team = ?2) "
        "UNION ALL "
        "SELECT CASE WHEN e.type = 'preempt' THEN 4 WHEN e.to_state = 'Pending' THEN 1 "
        "WHEN e.to_state = 'Running' THEN 3 ELSE 2 END, e.at, "
        "CASE WHEN e.type <> 'preempt' AND e.to_state = 'Running' THEN "
        "(SELECT p.at FROM job_events p WHERE p.job_id = e.job_id AND p.id < e.id "
        "AND p.to_state = 'Pending' AND p.from_state IS NOT 'Pending' "
        "ORDER BY p.id DESC LIMIT 1) END "
        "FROM job_events e WHERE e.at >= ?1 "
        "AND (e.type = 'preempt' OR (e.to_state = 'Pending' AND e.from_state IS NOT 'Pending') "
        "OR (e.from_state = 'Pending' AND e.to_state <> 'Pending')) "
        "AND (?2 IS NULL OR "
        "EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id AND j.team = ?2))";
    struct sl_sqlite *s = sl_sqlite_of(st);
    struct history_scan hs = {usage, event, arg};
    sqlite3_stmt *q = NULL;
    int rc;

    if (sqlite3_prepare_v2(s->db, usage_sql, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, from_ms);
    sqlite3_bind_int64(q, 2, to_ms);
    sl_sqlite_bind_text_or_null(q, 3, team);
    rc = history_rows(q, history_usage_row, &hs);
    sqlite3_finalize(q);
    if (rc < 0)
        return rc;
    if (sqlite3_prepare_v2(s->db, event_sql, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, from_ms);
    sl_sqlite_bind_text_or_null(q, 2, team);
    rc = history_rows(q, history_event_row, &hs);
    sqlite3_finalize(q);
    return rc;
}

/* ---- budgets ------------------------------------------------------------- */

int sl_sqlite_budget_upsert(struct sl_store *st, const char *name, const char *team,
                            const char *spec_json)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *g = prep(s, SQ_BUDGET_GET), *q = prep(s, SQ_BUDGET_PUT);
    int act = 1, rc;

    if (!g || !q)
        return -EIO;
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(g) == SQLITE_ROW)
        act = strcmp(sl_sqlite_col_str(g, 0), spec_json) == 0 ? 0 : 2;
    sqlite3_reset(g);
    sqlite3_clear_bindings(g);
    if (act == 0)
        return 0;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, team, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, spec_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, sl_now_ms());
    rc = sl_sqlite_step_done(s, q);
    return rc < 0 ? rc : act;
}

int sl_sqlite_budgets_load(struct sl_store *st,
                           int (*fn)(void *arg, const char *name, const char *spec_json),
                           void *arg)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    int rc = 0, step;

    if (sqlite3_prepare_v2(s->db, "SELECT name, spec FROM budgets ORDER BY name", -1, &q,
                           NULL) != SQLITE_OK)
        return -EIO;
    while ((step = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(arg, sl_sqlite_col_str(q, 0), sl_sqlite_col_str(q, 1))) < 0)
            break;
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc;
}

int sl_sqlite_budget_event_add(struct sl_store *st, const char *budget, int64_t period_start,
                               int threshold, int64_t at_ms, double used, double limit)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_BUDGET_EVENT);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, budget, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, period_start);
    sqlite3_bind_int(q, 3, threshold);
    sqlite3_bind_int64(q, 4, at_ms);
    sqlite3_bind_double(q, 5, used);
    sqlite3_bind_double(q, 6, limit);
    if ((rc = sl_sqlite_step_done(s, q)) < 0)
        return rc;
    return sqlite3_changes(s->db) > 0 ? 1 : 0;
}

int sl_sqlite_budget_event_scan(struct sl_store *st, const char *budget,
                                int (*fn)(void *arg,
                                          const struct sl_store_budget_event_row *r),
                                void *arg)
{
    static const char sql[] = "SELECT budget, period_start, threshold, at, used, limit_value "
                              "FROM budget_events WHERE ?1 IS NULL OR budget = ?1 "
                              "ORDER BY id";
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    int rc = 0, step;

    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sl_sqlite_bind_text_or_null(q, 1, budget);
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_store_budget_event_row r = {
            .budget = sl_sqlite_col_str(q, 0),
            .period_start_ms = sqlite3_column_int64(q, 1),
            .threshold = sqlite3_column_int(q, 2),
            .at_ms = sqlite3_column_int64(q, 3),
            .used = sqlite3_column_double(q, 4),
            .limit = sqlite3_column_double(q, 5),
        };
        if ((rc = fn(arg, &r)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc;
}

/* ---- carbon -------------------------------------------------------------- */

int sl_sqlite_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_CARBON_PUT);

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, site, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, hour_ms);
    sqlite3_bind_double(q, 3, g);
    return sl_sqlite_step_done(s, q);
}

int sl_sqlite_carbon_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                          int (*fn)(void *arg, const char *site, int64_t hour_ms, double g),
                          void *arg)
{
    static const char sql[] = "SELECT site, hour, g FROM carbon_hourly "
                              "WHERE hour >= ?1 AND hour < ?2 ORDER BY site, hour";
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    int rc = 0, step;

    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, from_ms);
    sqlite3_bind_int64(q, 2, to_ms);
    while ((step = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(arg, sl_sqlite_col_str(q, 0), sqlite3_column_int64(q, 1),
                     sqlite3_column_double(q, 2))) != 0)
            break;
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc;
}
