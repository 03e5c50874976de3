/*
 * pg_jobs.c - the PostgreSQL backend's jobs: inserting and updating a job's
 * row from a struct sl_job_view, reading rows back as views whose strings
 * point into libpq's result (valid until the callback returns), job lists,
 * the job events, attempts and each job's lineage. The twin of
 * sqlite_jobs.c: the same rows, ids and orders.
 *
 * Where SQLite compares text byte by byte (ORDER BY name, "=" on names),
 * the statements here say COLLATE "C", so that the order does not depend
 * on the database's locale; SQLite's LIKE is ASCII case-insensitive, which
 * is lower(x COLLATE "C") LIKE lower(pattern) here.
 */
#include "pg_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqltext.h"

/* An id not given is max + 1 (store.h), read in the statement itself: the
 * writer is the only one (the lease makes it so), and a taken id is
 * -EEXIST without failing the statement. */
static struct sl_pg_stmt q_job_insert = SL_PG_STMT(
    "INSERT INTO jobs(name, team, project, \"user\", queue, priority_class, priority, state, "
    "exit_code, attempt, retries, submitted_at, started_at, finished_at, placement, message, "
    "limits_enforced, spec, id, not_before, preemptions, intent, intent_at, intent_for, "
    "gpus_enforced, array_job_id, array_index, hold_by) "
    "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, "
    "coalesce($19::bigint, (SELECT coalesce(max(id), 0) + 1 FROM jobs)), $20, $21, $22, $23, "
    "$24, $25, $26, $27, $28 ON CONFLICT(id) DO NOTHING RETURNING id");
static struct sl_pg_stmt q_job_update = SL_PG_STMT(
    "UPDATE jobs SET state = $2, exit_code = $3, attempt = $4, started_at = $5, "
    "finished_at = $6, placement = $7, message = $8, limits_enforced = $9, not_before = $10, "
    "preemptions = $11, intent = $12, intent_at = $13, intent_for = $14, "
    "gpus_enforced = $15, hold_by = $16 WHERE id = $1");
static struct sl_pg_stmt q_job_get =
    SL_PG_STMT("SELECT " SL_PG_JOB_COLS " FROM jobs WHERE id = $1");
static struct sl_pg_stmt q_job_max_id = SL_PG_STMT("SELECT coalesce(max(id), 0) FROM jobs");
static struct sl_pg_stmt q_job_lineage = SL_PG_STMT("UPDATE jobs SET lineage = $2 WHERE id = $1");
static struct sl_pg_stmt q_job_respec =
    SL_PG_STMT("UPDATE jobs SET queue = $2, priority_class = $3, priority = $4, spec = $5 "
               "WHERE id = $1");
static struct sl_pg_stmt q_job_lineage_get =
    SL_PG_STMT("SELECT lineage FROM jobs WHERE id = $1");
static struct sl_pg_stmt q_event_add = SL_PG_STMT(
    "INSERT INTO job_events(id, job_id, at, type, from_state, to_state, message) "
    "SELECT coalesce(max(id), 0) + 1, $1, $2, $3, $4, $5, $6 FROM job_events");
static struct sl_pg_stmt q_events =
    SL_PG_STMT("SELECT at, type, from_state, to_state, message FROM job_events "
               "WHERE job_id = $1 ORDER BY id");
static struct sl_pg_stmt q_attempt_put = SL_PG_STMT(
    "INSERT INTO job_attempts(job_id, attempt, started_at, after, log_offsets) "
    "VALUES($1, $2, $3, $4, $5) ON CONFLICT(job_id, attempt) DO UPDATE SET "
    "started_at = coalesce(excluded.started_at, job_attempts.started_at), "
    "after = coalesce(excluded.after, job_attempts.after), "
    "log_offsets = coalesce(excluded.log_offsets, job_attempts.log_offsets)");
static struct sl_pg_stmt q_attempts =
    SL_PG_STMT("SELECT attempt, started_at, after, log_offsets FROM job_attempts "
               "WHERE job_id = $1 AND started_at IS NOT NULL ORDER BY attempt");

/* A nullable boolean column: -1 for NULL, else 0 or 1. */
static int get_tristate(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? -1 : sl_pg_get_i64(r, row, col) != 0;
}

int64_t sl_pg_job_row(const PGresult *r, int i, struct sl_job_view *v)
{
    memset(v, 0, sizeof(*v));
    v->id = sl_pg_get_i64(r, i, 0);
    v->name = sl_pg_get_text(r, i, 1);
    v->team = sl_pg_get_text(r, i, 2);
    v->project = sl_pg_get_text(r, i, 3);
    v->user = sl_pg_get_text(r, i, 4);
    v->queue = sl_pg_get_text(r, i, 5);
    v->priority_class = sl_pg_get_text(r, i, 6);
    v->priority = (int)sl_pg_get_i64(r, i, 7);
    v->state = (enum sl_job_state)sl_pg_get_i64(r, i, 8);
    v->has_exit_code = !PQgetisnull(r, i, 9);
    v->exit_code = (int)sl_pg_get_i64(r, i, 9);
    v->attempt = (int)sl_pg_get_i64(r, i, 10);
    v->retries = (int)sl_pg_get_i64(r, i, 11);
    v->submitted_ms = sl_pg_get_i64(r, i, 12);
    v->started_ms = sl_pg_get_i64(r, i, 13);
    v->finished_ms = sl_pg_get_i64(r, i, 14);
    v->placement_json = sl_pg_get_text(r, i, 15);
    v->message = sl_pg_get_text(r, i, 16);
    v->limits_enforced = get_tristate(r, i, 17);
    v->spec_json = sl_pg_get_text(r, i, 18);
    v->preemptions = (int)sl_pg_get_i64(r, i, 20);
    v->intent = sl_pg_get_text(r, i, 21);
    v->intent_at_ms = sl_pg_get_i64(r, i, 22);
    v->intent_for = sl_pg_get_i64(r, i, 23);
    v->gpus_enforced = get_tristate(r, i, 24);
    v->array_job_id = sl_pg_get_i64(r, i, 25);
    v->array_index = (int)sl_pg_get_i64(r, i, 26);
    v->hold_by = sl_pg_get_text(r, i, 27);
    return sl_pg_get_i64(r, i, 19);
}

/* ---- writes -------------------------------------------------------------- */

/* The intent's three parameters: intent, intent_at, intent_for; all NULL
 * when the job has none. */
static void p_intent(struct sl_pg_params *pa, const struct sl_job_view *v)
{
    bool has = v->intent && *v->intent;
    sl_pg_p_text(pa, has ? v->intent : NULL);
    if (has)
        sl_pg_p_i64(pa, v->intent_at_ms);
    else
        sl_pg_p_text(pa, NULL);
    if (has && v->intent_for > 0)
        sl_pg_p_i64(pa, v->intent_for);
    else
        sl_pg_p_text(pa, NULL);
}

static void p_tristate(struct sl_pg_params *pa, int x)
{
    if (x >= 0)
        sl_pg_p_i64(pa, x);
    else
        sl_pg_p_text(pa, NULL);
}

int sl_pg_job_insert(struct sl_store *st, struct sl_job_view *v, int64_t not_before_ms)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, v->name);
    sl_pg_p_text(&pa, v->team);
    sl_pg_p_text_or_null(&pa, v->project);
    sl_pg_p_text(&pa, v->user);
    sl_pg_p_text(&pa, v->queue);
    sl_pg_p_text(&pa, v->priority_class);
    sl_pg_p_i64(&pa, v->priority);
    sl_pg_p_i64(&pa, v->state);
    if (v->has_exit_code)
        sl_pg_p_i64(&pa, v->exit_code);
    else
        sl_pg_p_text(&pa, NULL);
    sl_pg_p_i64(&pa, v->attempt);
    sl_pg_p_i64(&pa, v->retries);
    sl_pg_p_i64(&pa, v->submitted_ms);
    sl_pg_p_ms_or_null(&pa, v->started_ms);
    sl_pg_p_ms_or_null(&pa, v->finished_ms);
    sl_pg_p_text_or_null(&pa, v->placement_json);
    sl_pg_p_text_or_null(&pa, v->message);
    p_tristate(&pa, v->limits_enforced);
    sl_pg_p_text(&pa, v->spec_json);
    if (v->id > 0)
        sl_pg_p_i64(&pa, v->id);
    else
        sl_pg_p_text(&pa, NULL);
    sl_pg_p_i64(&pa, not_before_ms);
    sl_pg_p_i64(&pa, v->preemptions);
    p_intent(&pa, v);
    p_tristate(&pa, v->gpus_enforced);
    if (v->array_job_id > 0) {
        sl_pg_p_i64(&pa, v->array_job_id);
        sl_pg_p_i64(&pa, v->array_index);
    } else {
        sl_pg_p_text(&pa, NULL);
        sl_pg_p_text(&pa, NULL);
    }
    sl_pg_p_text_or_null(&pa, v->hold_by);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_job_insert, &pa, &rc)))
        return rc;
    if (PQntuples(r) == 1)
        v->id = sl_pg_get_i64(r, 0, 0);
    else
        rc = -EEXIST;
    PQclear(r);
    return rc;
}

int sl_pg_job_max_id(struct sl_store *st, int64_t *id)
{
    int rc;
    PGresult *r = sl_pg_query(sl_pg_of(st), &q_job_max_id, NULL, &rc);

    if (!r)
        return rc;
    if (PQntuples(r) == 1)
        *id = sl_pg_get_i64(r, 0, 0);
    else
        rc = -EIO;
    PQclear(r);
    return rc;
}

int sl_pg_job_update(struct sl_store *st, const struct sl_job_view *v, int64_t not_before_ms)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, v->id);
    sl_pg_p_i64(&pa, v->state);
    if (v->has_exit_code)
        sl_pg_p_i64(&pa, v->exit_code);
    else
        sl_pg_p_text(&pa, NULL);
    sl_pg_p_i64(&pa, v->attempt);
    sl_pg_p_ms_or_null(&pa, v->started_ms);
    sl_pg_p_ms_or_null(&pa, v->finished_ms);
    sl_pg_p_text_or_null(&pa, v->placement_json);
    sl_pg_p_text_or_null(&pa, v->message);
    p_tristate(&pa, v->limits_enforced);
    sl_pg_p_i64(&pa, not_before_ms);
    sl_pg_p_i64(&pa, v->preemptions);
    p_intent(&pa, v);
    p_tristate(&pa, v->gpus_enforced);
    sl_pg_p_text_or_null(&pa, v->hold_by);
    return sl_pg_exec_later(sl_pg_of(st), &q_job_update, &pa);
}

/* ---- reads --------------------------------------------------------------- */

int sl_pg_job_read(struct sl_store *st, int64_t id, sl_store_job_fn fn, void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, id);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_job_get, &pa, &rc)))
        return rc;
    if (PQntuples(r) == 1) {
        struct sl_job_view v;
        sl_pg_job_row(r, 0, &v);
        rc = fn(arg, &v);
    } else {
        rc = -ENOENT;
    }
    PQclear(r);
    return rc;
}

/* ---- job lists ------------------------------------------------------------ */

/* The column of each sort, by enum sl_job_sort; text in byte order. */
static const char *const sort_col[SL_JOB_NSORTS] = {
    [SL_JOB_SORT_ID] = "id",
    [SL_JOB_SORT_SUBMITTED] = "submitted_at",
    [SL_JOB_SORT_STARTED] = "started_at",
    [SL_JOB_SORT_FINISHED] = "finished_at",
    [SL_JOB_SORT_NAME] = "name COLLATE \"C\"",
    [SL_JOB_SORT_STATE] = "state",
    [SL_JOB_SORT_TEAM] = "team COLLATE \"C\"",
    [SL_JOB_SORT_QUEUE] = "queue COLLATE \"C\"",
    [SL_JOB_SORT_USER] = "\"user\" COLLATE \"C\"",
    [SL_JOB_SORT_PRIORITY] = "priority",
};

/* The spec's gpuModels as text: the expression of the partial index
 * jobs_gpu_models (postgres/0011_job_list.sql), written the same way. */
#define SPEC_MODELS "(sl_json(spec) #>> '{spec,resources,gpuModels}')"

/* The filters of 'q' as " WHERE ..." (nothing when none), with 'after' when
 * 'with_after'; their values go to 'pa' (the LIKE patterns to pats[], which
 * the caller frees), never into the SQL. -ENOMEM or 0. */
static int where_sql(char *sql, size_t size, size_t *n, const struct sl_store_job_query *q,
                     bool with_after, struct sl_pg_params *pa, char *pats[2])
{
    const char *and = " WHERE ";

    if (q->state_mask) {
        const char *sep = "";
        sl_sql_put(sql, size, n, "%sstate IN (", and);
        for (int st = 0; st < SL_JOB_NSTATES; st++)
            if (q->state_mask & (1u << st)) {
                sl_sql_put(sql, size, n, "%s%d", sep, st);
                sep = ",";
            }
        sl_sql_put(sql, size, n, ")");
        and = " AND ";
    }
#define EQ(field, col)                                                           \
    if (q->field) {                                                              \
        sl_sql_put(sql, size, n, "%s" col " = $%d", and, sl_pg_p_text(pa, q->field));   \
        and = " AND ";                                                           \
    }
    EQ(team, "team")
    EQ(queue, "queue")
    EQ(user, "\"user\"")
    EQ(priority_class, "priority_class")
#undef EQ
    if (q->name_has && *q->name_has) {
        if (!(pats[0] = sl_sql_like_pattern("%", q->name_has, "%")))
            return -ENOMEM;
        sl_sql_put(sql, size, n, "%slower(name COLLATE \"C\") LIKE lower($%d COLLATE \"C\") ESCAPE '\\'",
            and, sl_pg_p_text(pa, pats[0]));
        and = " AND ";
    }
    if (q->array_job_id) {
        sl_sql_put(sql, size, n, "%sarray_job_id = $%d", and, sl_pg_p_i64(pa, q->array_job_id));
        and = " AND ";
    }
    if (q->gpu_model) {
        int m = sl_pg_p_text(pa, q->gpu_model);
        if (!(pats[1] = sl_sql_like_pattern("%\"", q->gpu_model, "\"%")))
            return -ENOMEM;
        sl_sql_put(sql, size, n,
            "%sid IN (SELECT job_id FROM usage WHERE lower(gpu_model COLLATE \"C\") = "
            "lower($%d COLLATE \"C\") UNION SELECT id FROM jobs WHERE " SPEC_MODELS
            " <> '[]' AND lower(" SPEC_MODELS " COLLATE \"C\") LIKE lower($%d COLLATE \"C\") "
            "ESCAPE '\\')",
            and, m, sl_pg_p_text(pa, pats[1]));
        and = " AND ";
    }
    if (with_after && q->after > 0)
        sl_sql_put(sql, size, n, "%sid %c $%d", and, q->descending ? '<' : '>',
            sl_pg_p_i64(pa, q->after));
    return 0;
}

/* The page of a scan: fn for each of its jobs, *next. */
static int scan_page(struct sl_pg *p, const struct sl_store_job_query *q, sl_store_job_fn fn,
                     void *arg, int64_t *next)
{
    const char *dir = q->descending ? "DESC" : "ASC";
    char sql[2048], order[96], *pats[2] = {NULL, NULL};
    struct sl_pg_params pa;
    PGresult *r = NULL;
    size_t n = 0;
    int rc, limit, offset;

    sl_pg_params_init(&pa);
    if (q->sort == SL_JOB_SORT_ID)
        snprintf(order, sizeof(order), "id %s", dir);
    else
        snprintf(order, sizeof(order), "%s %s NULLS LAST, id %s", sort_col[q->sort], dir, dir);
    sl_sql_put(sql, sizeof(sql), &n, "SELECT " SL_PG_JOB_COLS " FROM jobs");
    if ((rc = where_sql(sql, sizeof(sql), &n, q, true, &pa, pats)) < 0)
        goto out;
    limit = sl_pg_p_i64(&pa, (int64_t)q->limit + 1); /* one more: is there a next? */
    offset = sl_pg_p_i64(&pa, q->offset);
    sl_sql_put(sql, sizeof(sql), &n, " ORDER BY %s LIMIT $%d OFFSET $%d", order, limit, offset);
    if (n >= sizeof(sql)) {
        rc = -EIO;
        goto out;
    }
    if (!(r = sl_pg_query_text(p, sql, &pa, &rc)))
        goto out;
    for (int i = 0; i < PQntuples(r); i++) {
        struct sl_job_view v;
        if (i >= q->limit) {
            *next = sl_pg_get_i64(r, i - 1, 0);
            break;
        }
        sl_pg_job_row(r, i, &v);
        if ((rc = fn(arg, &v)) != 0)
            break;
    }
out:
    PQclear(r);
    free(pats[0]);
    free(pats[1]);
    return rc;
}

/* How many jobs match q's filters. */
static int scan_count(struct sl_pg *p, const struct sl_store_job_query *q, int64_t *total)
{
    char sql[1536], *pats[2] = {NULL, NULL};
    struct sl_pg_params pa;
    PGresult *r = NULL;
    size_t n = 0;
    int rc;

    sl_pg_params_init(&pa);
    sl_sql_put(sql, sizeof(sql), &n, "SELECT count(*) FROM jobs");
    if ((rc = where_sql(sql, sizeof(sql), &n, q, false, &pa, pats)) == 0) {
        if (n >= sizeof(sql))
            rc = -EIO;
        else if ((r = sl_pg_query_text(p, sql, &pa, &rc)))
            *total = PQntuples(r) == 1 ? sl_pg_get_i64(r, 0, 0) : 0;
    }
    PQclear(r);
    free(pats[0]);
    free(pats[1]);
    return rc;
}

int sl_pg_job_scan(struct sl_store *st, const struct sl_store_job_query *q, sl_store_job_fn fn,
                   void *arg, int64_t *next, int64_t *total)
{
    struct sl_pg *p = sl_pg_of(st);
    /* A page and its count read one snapshot: a repeatable-read transaction,
     * unless the connection is in one already. */
    bool begin = total && PQtransactionStatus(p->conn) == PQTRANS_IDLE;
    int rc;

    if (begin && (rc = sl_pg_simple(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")) < 0)
        return rc;
    rc = scan_page(p, q, fn, arg, next);
    if (rc == 0 && total && (rc = scan_count(p, q, total)) != 0)
        *total = 0;
    if (begin && sl_pg_simple(p, rc == 0 ? "COMMIT" : "ROLLBACK") < 0 && rc == 0)
        rc = -EIO;
    return rc;
}

/* ---- events and lineage -------------------------------------------------- */

int sl_pg_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms, const char *type,
                    const char *from, const char *to, const char *message)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, job_id);
    sl_pg_p_i64(&pa, at_ms);
    sl_pg_p_text(&pa, type);
    sl_pg_p_text_or_null(&pa, from);
    sl_pg_p_text_or_null(&pa, to);
    sl_pg_p_text_or_null(&pa, message);
    return sl_pg_exec_later(sl_pg_of(st), &q_event_add, &pa);
}

int sl_pg_event_scan(struct sl_store *st, int64_t job_id,
                     int (*fn)(void *arg, const struct sl_store_event_row *r), void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, job_id);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_events, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        struct sl_store_event_row row = {
            .at_ms = sl_pg_get_i64(r, i, 0),
            .type = sl_pg_get_str(r, i, 1),
            .from = sl_pg_get_text(r, i, 2),
            .to = sl_pg_get_text(r, i, 3),
            .message = sl_pg_get_text(r, i, 4),
        };
        rc = fn(arg, &row);
    }
    PQclear(r);
    return rc;
}

int sl_pg_attempt_put(struct sl_store *st, int64_t job_id, int attempt, int64_t started_ms,
                      const char *after, const char *log_offsets)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, job_id);
    sl_pg_p_i64(&pa, attempt);
    sl_pg_p_ms_or_null(&pa, started_ms);
    sl_pg_p_text_or_null(&pa, after);
    sl_pg_p_text_or_null(&pa, log_offsets);
    return sl_pg_exec_later(sl_pg_of(st), &q_attempt_put, &pa);
}

int sl_pg_attempt_scan(struct sl_store *st, int64_t job_id,
                       int (*fn)(void *arg, const struct sl_store_attempt_row *r), void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, job_id);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_attempts, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        struct sl_store_attempt_row row = {
            .attempt = (int)sl_pg_get_i64(r, i, 0),
            .started_ms = sl_pg_get_i64(r, i, 1),
            .after = sl_pg_get_text(r, i, 2),
            .log_offsets = sl_pg_get_text(r, i, 3),
        };
        rc = fn(arg, &row);
    }
    PQclear(r);
    return rc;
}

int sl_pg_job_lineage(struct sl_store *st, int64_t id, const char *lineage)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, id);
    sl_pg_p_text_or_null(&pa, lineage);
    return sl_pg_exec_later(sl_pg_of(st), &q_job_lineage, &pa);
}

int sl_pg_job_respec(struct sl_store *st, int64_t id, const char *queue,
                     const char *priority_class, int priority, const char *spec_json)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, id);
    sl_pg_p_text(&pa, queue);
    sl_pg_p_text(&pa, priority_class);
    sl_pg_p_i64(&pa, priority);
    sl_pg_p_text(&pa, spec_json);
    rc = sl_pg_exec(sl_pg_of(st), &q_job_respec, &pa);
    return rc < 0 ? rc : 0;
}

char *sl_pg_job_lineage_get(struct sl_store *st, int64_t id, int *rc)
{
    struct sl_pg_params pa;
    PGresult *r;
    char *text = NULL;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, id);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_job_lineage_get, &pa, rc)))
        return NULL;
    if (PQntuples(r) == 1)
        *rc = (text = strdup(sl_pg_get_str(r, 0, 0))) ? 0 : -ENOMEM;
    else
        *rc = -ENOENT;
    PQclear(r);
    return text;
}
