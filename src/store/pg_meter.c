/*
 * pg_meter.c - the PostgreSQL backend's metering rows: the usage ledger
 * (one interval per task and attempt, open until the task ends), the
 * history's reads, budgets and their threshold events (once per period and
 * threshold: a UNIQUE key), and hourly carbon intensity per site. The twin
 * of sqlite_meter.c. Doubles travel as text of 17 significant digits, which
 * reads back as the same double: the ledger stays conserved.
 */
#include "pg_int.h"

#include <errno.h>
#include <string.h>

static struct sl_pg_stmt q_usage_open = SL_PG_STMT(
    "INSERT INTO usage(id, job_id, attempt, task, team, project, \"user\", queue, node, "
    "gpu_model, gpus, ngpus, gpu_milli, cpu_milli, mem_bytes, start_ms) "
    "SELECT coalesce(max(id), 0) + 1, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
    "$14, $15 FROM usage");
static struct sl_pg_stmt q_usage_close = SL_PG_STMT(
    "UPDATE usage SET end_ms = $4, gpu_energy_j = $5, cpu_energy_j = $6, util = $7, "
    "idle_ms = $8, start_ms = $9 WHERE job_id = $1 AND attempt = $2 AND task = $3 AND "
    "end_ms IS NULL");
static struct sl_pg_stmt q_usage_idle = SL_PG_STMT(
    "UPDATE usage SET idle = 1, idle_ms = $2 WHERE job_id = $1 AND end_ms IS NULL");
#define USAGE_SCAN                                                              \
    "SELECT id, job_id, attempt, task, team, project, \"user\", queue, node, "  \
    "gpu_model, gpus, ngpus, gpu_milli, cpu_milli, mem_bytes, start_ms, "       \
    "coalesce(end_ms, 0), gpu_energy_j, cpu_energy_j, util, idle, idle_ms FROM usage " \
    "WHERE start_ms < $2 AND (end_ms IS NULL OR end_ms > $1) "                  \
    "AND ($3::text IS NULL OR team = $3) "
/* one job's rows through its index, not a scan of the whole window */
static struct sl_pg_stmt q_usage_all =
    SL_PG_STMT(USAGE_SCAN "AND ($4::bigint = 0 OR job_id = $4) ORDER BY job_id, id");
static struct sl_pg_stmt q_usage_one = SL_PG_STMT(USAGE_SCAN "AND job_id = $4 ORDER BY job_id, id");
#undef USAGE_SCAN
/* closed intervals by their end, then the open ones (sqlite_meter.c) */
static struct sl_pg_stmt q_history_usage = SL_PG_STMT(
    "SELECT start_ms, end_ms, ngpus, gpu_milli, util, idle_ms FROM usage "
    "WHERE end_ms > $1 AND start_ms < $2 AND ngpus > 0 AND ($3::text IS NULL OR team = $3) "
    "UNION ALL "
    "SELECT start_ms, 0, ngpus, gpu_milli, util, idle_ms FROM usage "
    "WHERE end_ms IS NULL AND start_ms < $2 AND ngpus > 0 AND ($3::text IS NULL OR team = $3)");
/* The count of now and every transition since 'from', in one statement (one
 * snapshot), as sqlite_meter.c's: kinds 0 the count, 1 into Pending, 2 out
 * of it, 3 out of it to run (with when the job last went into it), 4 a
 * preemption. The transitions' filter is the partial index
 * job_events_history's, word for word (postgres/0010_history.sql). */
static struct sl_pg_stmt q_history_events = SL_PG_STMT(
    "SELECT 0, count(*), NULL::bigint FROM jobs WHERE state = 0 AND "
    "($2::text IS NULL OR team = $2) "
    "UNION ALL "
    "SELECT CASE WHEN e.type = 'preempt' THEN 4 WHEN e.to_state = 'Pending' THEN 1 "
    "WHEN e.to_state = 'Running' THEN 3 ELSE 2 END, e.at, "
    "CASE WHEN e.type <> 'preempt' AND e.to_state = 'Running' THEN "
    "(SELECT p.at FROM job_events p WHERE p.job_id = e.job_id AND p.id < e.id "
    "AND p.to_state = 'Pending' AND p.from_state IS DISTINCT FROM 'Pending' "
    "ORDER BY p.id DESC LIMIT 1) END "
    "FROM job_events e WHERE e.at >= $1 "
    "AND (e.type = 'preempt' OR (e.to_state = 'Pending' AND e.from_state IS DISTINCT FROM "
    "'Pending') OR (e.from_state = 'Pending' AND e.to_state <> 'Pending')) "
    "AND ($2::text IS NULL OR "
    "EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id AND j.team = $2))");
static struct sl_pg_stmt q_budget_get = SL_PG_STMT("SELECT spec FROM budgets WHERE name = $1");
static struct sl_pg_stmt q_budget_put =
    SL_PG_STMT("INSERT INTO budgets(name, team, spec, created_at) VALUES($1, $2, $3, $4) "
               "ON CONFLICT(name) DO UPDATE SET team = excluded.team, spec = excluded.spec");
static struct sl_pg_stmt q_budgets =
    SL_PG_STMT("SELECT name, spec FROM budgets ORDER BY name COLLATE \"C\"");
static struct sl_pg_stmt q_budget_event = SL_PG_STMT(
    "INSERT INTO budget_events(id, budget, period_start, threshold, at, used, limit_value) "
    "SELECT coalesce(max(id), 0) + 1, $1, $2, $3, $4, $5, $6 FROM budget_events "
    "ON CONFLICT(budget, period_start, threshold) DO NOTHING");
static struct sl_pg_stmt q_budget_events =
    SL_PG_STMT("SELECT budget, period_start, threshold, at, used, limit_value "
               "FROM budget_events WHERE $1::text IS NULL OR budget = $1 ORDER BY id");
static struct sl_pg_stmt q_carbon_put =
    SL_PG_STMT("INSERT INTO carbon_hourly(site, hour, g) VALUES($1, $2, $3) "
               "ON CONFLICT(site, hour) DO UPDATE SET g = excluded.g");
static struct sl_pg_stmt q_carbon =
    SL_PG_STMT("SELECT site, hour, g FROM carbon_hourly WHERE hour >= $1 AND hour < $2 "
               "ORDER BY site COLLATE \"C\", hour");

/* 'v' when 'has' says it was measured, else NULL. */
static void p_double_or_null(struct sl_pg_params *pa, bool has, double v)
{
    if (has)
        sl_pg_p_double(pa, v);
    else
        sl_pg_p_text(pa, NULL);
}

/* ---- the usage ledger ---------------------------------------------------- */

int sl_pg_usage_open(struct sl_store *st, const struct sl_usage_row *r)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, r->job_id);
    sl_pg_p_i64(&pa, r->attempt);
    sl_pg_p_i64(&pa, r->task);
    sl_pg_p_text(&pa, r->team);
    sl_pg_p_text(&pa, r->project ? r->project : "");
    sl_pg_p_text(&pa, r->user);
    sl_pg_p_text(&pa, r->queue);
    sl_pg_p_text(&pa, r->node);
    sl_pg_p_text(&pa, r->gpu_model ? r->gpu_model : "");
    sl_pg_p_text(&pa, r->gpus ? r->gpus : "");
    sl_pg_p_i64(&pa, r->ngpus);
    sl_pg_p_i64(&pa, r->gpu_milli);
    sl_pg_p_i64(&pa, r->cpu_milli);
    sl_pg_p_i64(&pa, r->mem_bytes);
    sl_pg_p_i64(&pa, r->start_ms);
    return sl_pg_exec_later(sl_pg_of(st), &q_usage_open, &pa);
}

int sl_pg_usage_close(struct sl_store *st, const struct sl_usage_row *r)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, r->job_id);
    sl_pg_p_i64(&pa, r->attempt);
    sl_pg_p_i64(&pa, r->task);
    sl_pg_p_i64(&pa, r->end_ms);
    p_double_or_null(&pa, r->gpu_energy_measured, r->gpu_energy_j);
    p_double_or_null(&pa, r->cpu_energy_measured, r->cpu_energy_j);
    p_double_or_null(&pa, r->has_util, r->util);
    sl_pg_p_i64(&pa, r->idle_ms);
    sl_pg_p_i64(&pa, r->start_ms);
    return sl_pg_exec_later(sl_pg_of(st), &q_usage_close, &pa);
}

int sl_pg_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, job_id);
    sl_pg_p_i64(&pa, idle_ms);
    return sl_pg_exec_later(sl_pg_of(st), &q_usage_idle, &pa);
}

/* Fill 'u' from row 'i' of the scan above; strings point into 'r'. */
static void usage_row(const PGresult *r, int i, struct sl_usage_row *u)
{
    memset(u, 0, sizeof(*u));
    u->id = sl_pg_get_i64(r, i, 0);
    u->job_id = sl_pg_get_i64(r, i, 1);
    u->attempt = (int)sl_pg_get_i64(r, i, 2);
    u->task = (int)sl_pg_get_i64(r, i, 3);
    u->team = sl_pg_get_str(r, i, 4);
    u->project = sl_pg_get_str(r, i, 5);
    u->user = sl_pg_get_str(r, i, 6);
    u->queue = sl_pg_get_str(r, i, 7);
    u->node = sl_pg_get_str(r, i, 8);
    u->gpu_model = sl_pg_get_str(r, i, 9);
    u->gpus = sl_pg_get_str(r, i, 10);
    u->ngpus = (int)sl_pg_get_i64(r, i, 11);
    u->gpu_milli = (int)sl_pg_get_i64(r, i, 12);
    u->cpu_milli = sl_pg_get_i64(r, i, 13);
    u->mem_bytes = sl_pg_get_i64(r, i, 14);
    u->start_ms = sl_pg_get_i64(r, i, 15);
    u->end_ms = sl_pg_get_i64(r, i, 16);
    if ((u->gpu_energy_measured = !PQgetisnull(r, i, 17)))
        u->gpu_energy_j = sl_pg_get_double(r, i, 17);
    if ((u->cpu_energy_measured = !PQgetisnull(r, i, 18)))
        u->cpu_energy_j = sl_pg_get_double(r, i, 18);
    if ((u->has_util = !PQgetisnull(r, i, 19)))
        u->util = sl_pg_get_double(r, i, 19);
    u->idle = sl_pg_get_i64(r, i, 20) != 0;
    u->idle_ms = sl_pg_get_i64(r, i, 21);
}

int sl_pg_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms, const char *team,
                     int64_t job_id, int (*fn)(void *arg, const struct sl_usage_row *r),
                     void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, from_ms);
    sl_pg_p_i64(&pa, to_ms);
    sl_pg_p_text_or_null(&pa, team);
    sl_pg_p_i64(&pa, job_id);
    if (!(r = sl_pg_query(sl_pg_of(st), job_id ? &q_usage_one : &q_usage_all, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct sl_usage_row u;
        usage_row(r, i, &u);
        if ((rc = fn(arg, &u)) < 0)
            break;
    }
    PQclear(r);
    return rc < 0 ? rc : 0;
}

/* ---- the history --------------------------------------------------------- */

int sl_pg_history_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms, const char *team,
                       int (*usage)(void *arg, const struct sl_usage_row *r),
                       int (*event)(void *arg, const struct sl_history_event *ev), void *arg)
{
    /* the kinds by the number the statement gives them */
    static const enum sl_history_kind kinds[] = {SL_HIST_PENDING_NOW, SL_HIST_ENTER,
                                                 SL_HIST_LEAVE, SL_HIST_START,
                                                 SL_HIST_PREEMPT};
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, from_ms);
    sl_pg_p_i64(&pa, to_ms);
    sl_pg_p_text_or_null(&pa, team);
    if (!(r = sl_pg_query(p, &q_history_usage, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc >= 0; i++) {
        struct sl_usage_row u;
        memset(&u, 0, sizeof(u));
        u.start_ms = sl_pg_get_i64(r, i, 0);
        u.end_ms = sl_pg_get_i64(r, i, 1);
        u.ngpus = (int)sl_pg_get_i64(r, i, 2);
        u.gpu_milli = (int)sl_pg_get_i64(r, i, 3);
        if ((u.has_util = !PQgetisnull(r, i, 4)))
            u.util = sl_pg_get_double(r, i, 4);
        u.idle_ms = sl_pg_get_i64(r, i, 5);
        rc = usage(arg, &u);
    }
    PQclear(r);
    if (rc < 0)
        return rc;
    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, from_ms);
    sl_pg_p_text_or_null(&pa, team);
    if (!(r = sl_pg_query(p, &q_history_events, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc >= 0; i++) {
        int k = (int)sl_pg_get_i64(r, i, 0);
        struct sl_history_event ev = {.kind = kinds[k >= 0 && k < 5 ? k : 0]};
        if (k == 0)
            ev.count = sl_pg_get_i64(r, i, 1);
        else
            ev.at_ms = sl_pg_get_i64(r, i, 1);
        ev.since_ms = sl_pg_get_i64(r, i, 2); /* NULL reads 0 */
        rc = event(arg, &ev);
    }
    PQclear(r);
    return rc < 0 ? rc : 0;
}

/* ---- budgets ------------------------------------------------------------- */

int sl_pg_budget_upsert(struct sl_store *st, const char *name, const char *team,
                        const char *spec_json)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    PGresult *r;
    int act = 1, rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    if (!(r = sl_pg_query(p, &q_budget_get, &pa, &rc)))
        return rc;
    if (PQntuples(r) == 1)
        act = strcmp(sl_pg_get_str(r, 0, 0), spec_json) == 0 ? 0 : 2;
    PQclear(r);
    if (act == 0)
        return 0;
    sl_pg_p_text(&pa, team);
    sl_pg_p_text(&pa, spec_json);
    sl_pg_p_i64(&pa, sl_now_ms());
    rc = sl_pg_exec(p, &q_budget_put, &pa);
    return rc < 0 ? rc : act;
}

int sl_pg_budgets_load(struct sl_store *st,
                       int (*fn)(void *arg, const char *name, const char *spec_json), void *arg)
{
    int rc;
    PGresult *r = sl_pg_query(sl_pg_of(st), &q_budgets, NULL, &rc);

    if (!r)
        return rc;
    for (int i = 0; i < PQntuples(r) && rc >= 0; i++)
        rc = fn(arg, sl_pg_get_str(r, i, 0), sl_pg_get_str(r, i, 1));
    PQclear(r);
    return rc < 0 ? rc : 0;
}

int sl_pg_budget_event_add(struct sl_store *st, const char *budget, int64_t period_start,
                           int threshold, int64_t at_ms, double used, double limit)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, budget);
    sl_pg_p_i64(&pa, period_start);
    sl_pg_p_i64(&pa, threshold);
    sl_pg_p_i64(&pa, at_ms);
    sl_pg_p_double(&pa, used);
    sl_pg_p_double(&pa, limit);
    if ((rc = sl_pg_exec(sl_pg_of(st), &q_budget_event, &pa)) < 0)
        return rc;
    return rc > 0 ? 1 : 0;
}

int sl_pg_budget_event_scan(struct sl_store *st, const char *budget,
                            int (*fn)(void *arg, const struct sl_store_budget_event_row *r),
                            void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text_or_null(&pa, budget);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_budget_events, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        struct sl_store_budget_event_row row = {
            .budget = sl_pg_get_str(r, i, 0),
            .period_start_ms = sl_pg_get_i64(r, i, 1),
            .threshold = (int)sl_pg_get_i64(r, i, 2),
            .at_ms = sl_pg_get_i64(r, i, 3),
            .used = sl_pg_get_double(r, i, 4),
            .limit = sl_pg_get_double(r, i, 5),
        };
        rc = fn(arg, &row);
    }
    PQclear(r);
    return rc;
}

/* ---- carbon -------------------------------------------------------------- */

int sl_pg_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, site);
    sl_pg_p_i64(&pa, hour_ms);
    sl_pg_p_double(&pa, g);
    rc = sl_pg_exec(sl_pg_of(st), &q_carbon_put, &pa);
    return rc < 0 ? rc : 0;
}

int sl_pg_carbon_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                      int (*fn)(void *arg, const char *site, int64_t hour_ms, double g),
                      void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, from_ms);
    sl_pg_p_i64(&pa, to_ms);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_carbon, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++)
        rc = fn(arg, sl_pg_get_str(r, i, 0), sl_pg_get_i64(r, i, 1), sl_pg_get_double(r, i, 2));
    PQclear(r);
    return rc;
}
