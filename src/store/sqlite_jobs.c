/*
 * sqlite_jobs.c - the SQLite backend's jobs: inserting and updating a job's
 * row from a struct sl_job_view, reading rows back as views whose strings
 * point into SQLite's row (valid until the callback returns: no copy), the
 * job events and each job's lineage.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqltext.h"

static const char *const jobs_sql[SQ_JOBS_N] = {
    [SQ_JOB_INSERT] = "INSERT INTO jobs(name, team, project, user, queue, priority_class, "
                      "priority, state, exit_code, attempt, retries, submitted_at, "
                      "started_at, finished_at, placement, message, limits_enforced, "
                      "spec, id, not_before, preemptions, intent, intent_at, intent_for, "
                      "gpus_enforced, array_job_id, array_index, hold_by) VALUES(?1, ?2, ?3, "
                      "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
                      "?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)",
    [SQ_JOB_UPDATE] = "UPDATE jobs SET state = ?2, exit_code = ?3, attempt = ?4, "
                      "started_at = ?5, finished_at = ?6, placement = ?7, "
                      "message = ?8, limits_enforced = ?9, not_before = ?10, "
                      "preemptions = ?11, intent = ?12, intent_at = ?13, intent_for = ?14, "
                      "gpus_enforced = ?15, hold_by = ?16 WHERE id = ?1",
    [SQ_JOB_GET] = "SELECT " SL_SQLITE_JOB_COLS " FROM jobs WHERE id = ?1",
    [SQ_JOB_MAX_ID] = "SELECT coalesce(max(id), 0) FROM jobs",
    [SQ_JOB_LINEAGE] = "UPDATE jobs SET lineage = ?2 WHERE id = ?1",
    [SQ_JOB_RESPEC] = "UPDATE jobs SET queue = ?2, priority_class = ?3, priority = ?4, "
                      "spec = ?5 WHERE id = ?1",
    [SQ_JOB_LINEAGE_GET] = "SELECT lineage FROM jobs WHERE id = ?1",
    [SQ_EVENT_ADD] = "INSERT INTO job_events(job_id, at, type, from_state, to_state, "
                     "message) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [SQ_EVENTS] = "SELECT at, type, from_state, to_state, message FROM job_events "
                  "WHERE job_id = ?1 ORDER BY id",
    [SQ_ATTEMPT_PUT] = "INSERT INTO job_attempts(job_id, attempt, started_at, after, "
                       "log_offsets) VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(job_id, attempt) "
                       "DO UPDATE SET started_at = coalesce(excluded.started_at, started_at), "
                       "after = coalesce(excluded.after, after), "
                       "log_offsets = coalesce(excluded.log_offsets, log_offsets)",
    [SQ_ATTEMPTS] = "SELECT attempt, started_at, after, log_offsets FROM job_attempts "
                    "WHERE job_id = ?1 AND started_at IS NOT NULL ORDER BY attempt",
};

static sqlite3_stmt *prep(struct sl_sqlite *s, enum sq_jobs_stmt i)
{
    return sl_sqlite_prep(s, &s->jobs[i], jobs_sql[i]);
}

/* A nullable boolean column: -1 for NULL, else 0 or 1. */
static int col_tristate(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? -1 : sqlite3_column_int(q, i) != 0;
}

int64_t sl_sqlite_job_row(sqlite3_stmt *q, struct sl_job_view *v)
{
    memset(v, 0, sizeof(*v));
    v->id = sqlite3_column_int64(q, 0);
    v->name = sl_sqlite_col_text(q, 1);
    v->team = sl_sqlite_col_text(q, 2);
    v->project = sl_sqlite_col_text(q, 3);
    v->user = sl_sqlite_col_text(q, 4);
    v->queue = sl_sqlite_col_text(q, 5);
    v->priority_class = sl_sqlite_col_text(q, 6);
    v->priority = sqlite3_column_int(q, 7);
    v->state = (enum sl_job_state)sqlite3_column_int(q, 8);
    v->has_exit_code = sqlite3_column_type(q, 9) != SQLITE_NULL;
    v->exit_code = sqlite3_column_int(q, 9);
    v->attempt = sqlite3_column_int(q, 10);
    v->retries = sqlite3_column_int(q, 11);
    v->submitted_ms = sqlite3_column_int64(q, 12);
    v->started_ms = sqlite3_column_int64(q, 13);
    v->finished_ms = sqlite3_column_int64(q, 14);
    v->placement_json = sl_sqlite_col_text(q, 15);
    v->message = sl_sqlite_col_text(q, 16);
    v->limits_enforced = col_tristate(q, 17);
    v->spec_json = sl_sqlite_col_text(q, 18);
    v->preemptions = sqlite3_column_int(q, 20);
    v->intent = sl_sqlite_col_text(q, 21);
    v->intent_at_ms = sqlite3_column_int64(q, 22);
    v->intent_for = sqlite3_column_int64(q, 23);
    v->gpus_enforced = col_tristate(q, 24);
    v->array_job_id = sqlite3_column_int64(q, 25);
    v->array_index = sqlite3_column_int(q, 26);
    v->hold_by = sl_sqlite_col_text(q, 27);
    return sqlite3_column_int64(q, 19);
}

/* ---- writes -------------------------------------------------------------- */

/* The intent columns from 'first' on: intent, intent_at, intent_for; all
 * NULL when the job has none. */
static void bind_intent(sqlite3_stmt *q, int first, const struct sl_job_view *v)
{
    if (!v->intent || !*v->intent)
        return;
    sqlite3_bind_text(q, first, v->intent, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, first + 1, v->intent_at_ms);
    if (v->intent_for > 0)
        sqlite3_bind_int64(q, first + 2, v->intent_for);
}

int sl_sqlite_job_insert(struct sl_store *st, struct sl_job_view *v, int64_t not_before_ms)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_JOB_INSERT);
    int rc;

    if (!q)
        return -EIO;
    if (v->id > 0)
        sqlite3_bind_int64(q, 19, v->id); /* else NULL: SQLite picks max + 1 */
    sqlite3_bind_int64(q, 20, not_before_ms);
    sqlite3_bind_int(q, 21, v->preemptions);
    sqlite3_bind_text(q, 1, v->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, v->team, -1, SQLITE_STATIC);
    sl_sqlite_bind_text_or_null(q, 3, v->project);
    sqlite3_bind_text(q, 4, v->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, v->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, v->priority_class, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 7, v->priority);
    sqlite3_bind_int(q, 8, v->state);
    if (v->has_exit_code)
        sqlite3_bind_int(q, 9, v->exit_code);
    sqlite3_bind_int(q, 10, v->attempt);
    sqlite3_bind_int(q, 11, v->retries);
    sqlite3_bind_int64(q, 12, v->submitted_ms);
    sl_sqlite_bind_ms_or_null(q, 13, v->started_ms);
    sl_sqlite_bind_ms_or_null(q, 14, v->finished_ms);
    sl_sqlite_bind_text_or_null(q, 15, v->placement_json);
    sl_sqlite_bind_text_or_null(q, 16, v->message);
    if (v->limits_enforced >= 0)
        sqlite3_bind_int(q, 17, v->limits_enforced);
    sqlite3_bind_text(q, 18, v->spec_json, -1, SQLITE_STATIC);
    bind_intent(q, 22, v);
    if (v->gpus_enforced >= 0)
        sqlite3_bind_int(q, 25, v->gpus_enforced);
    if (v->array_job_id > 0) {
        sqlite3_bind_int64(q, 26, v->array_job_id);
        sqlite3_bind_int(q, 27, v->array_index);
    }
    sl_sqlite_bind_text_or_null(q, 28, v->hold_by);
    if ((rc = sl_sqlite_step_done(s, q)) == 0)
        v->id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

int sl_sqlite_job_max_id(struct sl_store *st, int64_t *id)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_JOB_MAX_ID);
    int rc;

    if (!q)
        return -EIO;
    if ((rc = sqlite3_step(q)) == SQLITE_ROW)
        *id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : -EIO;
}

int sl_sqlite_job_update(struct sl_store *st, const struct sl_job_view *v,
                         int64_t not_before_ms)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_JOB_UPDATE);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, v->id);
    sqlite3_bind_int(q, 2, v->state);
    if (v->has_exit_code)
        sqlite3_bind_int(q, 3, v->exit_code);
    sqlite3_bind_int(q, 4, v->attempt);
    sl_sqlite_bind_ms_or_null(q, 5, v->started_ms);
    sl_sqlite_bind_ms_or_null(q, 6, v->finished_ms);
    sl_sqlite_bind_text_or_null(q, 7, v->placement_json);
    sl_sqlite_bind_text_or_null(q, 8, v->message);
    if (v->limits_enforced >= 0)
        sqlite3_bind_int(q, 9, v->limits_enforced);
    sqlite3_bind_int64(q, 10, not_before_ms);
    sqlite3_bind_int(q, 11, v->preemptions);
    bind_intent(q, 12, v);
    if (v->gpus_enforced >= 0)
        sqlite3_bind_int(q, 15, v->gpus_enforced);
    sl_sqlite_bind_text_or_null(q, 16, v->hold_by);
    return sl_sqlite_step_done(s, q);
}

/* ---- reads --------------------------------------------------------------- */

int sl_sqlite_job_read(struct sl_store *st, int64_t id, sl_store_job_fn fn, void *arg)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_JOB_GET);
    int rc, step;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    if ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_job_view v;
        sl_sqlite_job_row(q, &v);
        rc = fn(arg, &v);
    } else {
        rc = step == SQLITE_DONE ? -ENOENT : -EIO;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

/* ---- job lists ------------------------------------------------------------ */

/* The parameters of a job list's SQL, by number: each is bound only when
 * the query uses it. */
enum {
    P_TEAM = 1, P_QUEUE, P_USER, P_PCLASS, P_NAME, P_ARRAY, P_MODEL, P_MODEL_LIKE,
    P_AFTER, P_LIMIT, P_OFFSET
};

/* The column of each sort, by enum sl_job_sort. */
static const char *const sort_col[SL_JOB_NSORTS] = {
    [SL_JOB_SORT_ID] = "id",
    [SL_JOB_SORT_SUBMITTED] = "submitted_at",
    [SL_JOB_SORT_STARTED] = "started_at",
    [SL_JOB_SORT_FINISHED] = "finished_at",
    [SL_JOB_SORT_NAME] = "name",
    [SL_JOB_SORT_STATE] = "state",
    [SL_JOB_SORT_TEAM] = "team",
    [SL_JOB_SORT_QUEUE] = "queue",
    [SL_JOB_SORT_USER] = "user",
    [SL_JOB_SORT_PRIORITY] = "priority",
};

/* The spec's gpuModels as text (["A100","H100"]): the expression of the
 * partial index jobs_gpu_models (0011_job_list.sql), written the same way
 * so that SQLite uses it. */
#define SPEC_MODELS "json_extract(spec, '$.spec.resources.gpuModels')"

/* The filters of 'q' as " WHERE ..." (nothing when none), with 'after' when
 * 'with_after'. Strings are bound, never written into the SQL. */
static void where_sql(char *sql, size_t size, size_t *n, const struct sl_store_job_query *q,
                      bool with_after)
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
#define EQ(field, col, param)                                                    \
    if (q->field) {                                                              \
        sl_sql_put(sql, size, n, "%s" col " = ?%d", and, param);                        \
        and = " AND ";                                                           \
    }
    EQ(team, "team", P_TEAM)
    EQ(queue, "queue", P_QUEUE)
    EQ(user, "user", P_USER)
    EQ(priority_class, "priority_class", P_PCLASS)
#undef EQ
    if (q->name_has && *q->name_has) {
        sl_sql_put(sql, size, n, "%sname LIKE ?%d ESCAPE '\\'", and, P_NAME);
        and = " AND ";
    }
    if (q->array_job_id) {
        sl_sql_put(sql, size, n, "%sarray_job_id = ?%d", and, P_ARRAY);
        and = " AND ";
    }
    if (q->gpu_model) {
        /* Two indexed lookups joined, rather than an OR that would read
         * every row's spec. */
        sl_sql_put(sql, size, n,
            "%sid IN (SELECT job_id FROM usage WHERE gpu_model = ?%d COLLATE NOCASE "
            "UNION SELECT id FROM jobs WHERE json_valid(spec) AND " SPEC_MODELS " <> '[]' "
            "AND " SPEC_MODELS " LIKE ?%d ESCAPE '\\')",
            and, P_MODEL, P_MODEL_LIKE);
        and = " AND ";
    }
    if (with_after && q->after > 0)
        sl_sql_put(sql, size, n, "%sid %c ?%d", and, q->descending ? '<' : '>', P_AFTER);
}

/* Prepare the SQL of 'sql' for 'q' and bind what it uses ('sql' of 'size'
 * filled by the caller, or truncated: then -EIO). The LIKE patterns are
 * kept in pats[2] until the statement is finalised (SQLITE_STATIC). */
static int query_prepare(struct sl_sqlite *s, const char *sql, size_t n, size_t size,
                         const struct sl_store_job_query *q, char *pats[2], sqlite3_stmt **out)
{
    sqlite3_stmt *st = NULL;

    *out = NULL;
    if (n >= size)
        return -EIO;
    if ((q->name_has && *q->name_has && !(pats[0] = sl_sql_like_pattern("%", q->name_has, "%"))) ||
        (q->gpu_model && !(pats[1] = sl_sql_like_pattern("%\"", q->gpu_model, "\"%"))))
        return -ENOMEM;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sl_error("msg=\"sqlite prepare failed\" sql=\"%.60s\" err=\"%s\"", sql,
                 sqlite3_errmsg(s->db));
        return -EIO;
    }
    /* Binding a parameter the SQL does not use fails harmlessly. */
    sqlite3_bind_text(st, P_TEAM, q->team, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, P_QUEUE, q->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, P_USER, q->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, P_PCLASS, q->priority_class, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, P_NAME, pats[0], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, P_ARRAY, q->array_job_id);
    sqlite3_bind_text(st, P_MODEL, q->gpu_model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, P_MODEL_LIKE, pats[1], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, P_AFTER, q->after);
    sqlite3_bind_int64(st, P_LIMIT, (int64_t)q->limit + 1); /* one more: is there a next? */
    sqlite3_bind_int64(st, P_OFFSET, q->offset);
    *out = st;
    return 0;
}

/* The page of a scan: fn for each of its jobs, *next. */
static int scan_page(struct sl_sqlite *s, const struct sl_store_job_query *q,
                     sl_store_job_fn fn, void *arg, int64_t *next)
{
    const char *dir = q->descending ? "DESC" : "ASC";
    char sql[2048], order[96], *pats[2] = {NULL, NULL};
    sqlite3_stmt *stmt = NULL;
    size_t n = 0;
    int count = 0, rc, step = SQLITE_DONE;
    int64_t last = 0;

    if (q->sort == SL_JOB_SORT_ID)
        snprintf(order, sizeof(order), "id %s", dir);
    else
        snprintf(order, sizeof(order), "%s %s NULLS LAST, id %s", sort_col[q->sort], dir, dir);
    if (q->sort == SL_JOB_SORT_ID && !q->queue && !q->user && !q->priority_class &&
        !(q->name_has && *q->name_has)) {
        /* The table's own order, or jobs_state's or jobs_team's (each in
         * id order): a page reads about its own rows. */
        sl_sql_put(sql, sizeof(sql), &n, "SELECT " SL_SQLITE_JOB_COLS " FROM jobs");
        where_sql(sql, sizeof(sql), &n, q, true);
        sl_sql_put(sql, sizeof(sql), &n, " ORDER BY %s LIMIT ?%d OFFSET ?%d", order, P_LIMIT,
            P_OFFSET);
    } else {
        /* The page's ids first, from the narrow index jobs_list where it
         * covers the filters, then only those rows: sorting whole rows, or
         * walking the table in id order past jobs that do not match (all of
         * them when none does), would read every job's spec. "+id" keeps
         * SQLite from choosing that walk. */
        sl_sql_put(sql, sizeof(sql), &n,
            "SELECT " SL_SQLITE_JOB_COLS " FROM jobs WHERE id IN (SELECT id FROM jobs");
        where_sql(sql, sizeof(sql), &n, q, true);
        sl_sql_put(sql, sizeof(sql), &n, " ORDER BY %s%s LIMIT ?%d OFFSET ?%d) ORDER BY %s",
            q->sort == SL_JOB_SORT_ID ? "+" : "", order, P_LIMIT, P_OFFSET, order);
    }
    if ((rc = query_prepare(s, sql, n, sizeof(sql), q, pats, &stmt)) < 0)
        goto out;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct sl_job_view v;
        if (++count > q->limit) {
            *next = last;
            break;
        }
        sl_sqlite_job_row(stmt, &v);
        last = v.id;
        if ((rc = fn(arg, &v)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = -EIO;
out:
    sqlite3_finalize(stmt);
    free(pats[0]);
    free(pats[1]);
    return rc;
}

/* How many jobs match q's filters. */
static int scan_count(struct sl_sqlite *s, const struct sl_store_job_query *q, int64_t *total)
{
    char sql[1536], *pats[2] = {NULL, NULL};
    sqlite3_stmt *stmt = NULL;
    size_t n = 0;
    int rc;

    sl_sql_put(sql, sizeof(sql), &n, "SELECT count(*) FROM jobs");
    where_sql(sql, sizeof(sql), &n, q, false);
    if ((rc = query_prepare(s, sql, n, sizeof(sql), q, pats, &stmt)) == 0) {
        if (sqlite3_step(stmt) == SQLITE_ROW)
            *total = sqlite3_column_int64(stmt, 0);
        else
            rc = -EIO;
    }
    sqlite3_finalize(stmt);
    free(pats[0]);
    free(pats[1]);
    return rc;
}

int sl_sqlite_job_scan(struct sl_store *st, const struct sl_store_job_query *q,
                       sl_store_job_fn fn, void *arg, int64_t *next, int64_t *total)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    /* A page and its count read one snapshot: a read transaction, unless
     * the connection is in one already. */
    bool begin = total && sqlite3_get_autocommit(s->db);
    int rc;

    if (begin && sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return -EIO;
    rc = scan_page(s, q, fn, arg, next);
    if (rc == 0 && total && (rc = scan_count(s, q, total)) != 0)
        *total = 0;
    if (begin && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK && rc == 0)
        rc = -EIO;
    return rc;
}

/* ---- events and lineage -------------------------------------------------- */

int sl_sqlite_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms, const char *type,
                        const char *from, const char *to, const char *message)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_EVENT_ADD);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int64(q, 2, at_ms);
    sqlite3_bind_text(q, 3, type, -1, SQLITE_STATIC);
    sl_sqlite_bind_text_or_null(q, 4, from);
    sl_sqlite_bind_text_or_null(q, 5, to);
    sl_sqlite_bind_text_or_null(q, 6, message);
    return sl_sqlite_step_done(s, q);
}

int sl_sqlite_event_scan(struct sl_store *st, int64_t job_id,
                         int (*fn)(void *arg, const struct sl_store_event_row *r), void *arg)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_EVENTS);
    int rc = 0, step;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_store_event_row r = {
            .at_ms = sqlite3_column_int64(q, 0),
            .type = sl_sqlite_col_str(q, 1),
            .from = sl_sqlite_col_text(q, 2),
            .to = sl_sqlite_col_text(q, 3),
            .message = sl_sqlite_col_text(q, 4),
        };
        if ((rc = fn(arg, &r)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

int sl_sqlite_attempt_put(struct sl_store *st, int64_t job_id, int attempt, int64_t started_ms,
                          const char *after, const char *log_offsets)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_ATTEMPT_PUT);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int(q, 2, attempt);
    if (started_ms)
        sqlite3_bind_int64(q, 3, started_ms);
    else
        sqlite3_bind_null(q, 3);
    sl_sqlite_bind_text_or_null(q, 4, after);
    sl_sqlite_bind_text_or_null(q, 5, log_offsets);
    return sl_sqlite_step_done(s, q);
}

int sl_sqlite_attempt_scan(struct sl_store *st, int64_t job_id,
                           int (*fn)(void *arg, const struct sl_store_attempt_row *r),
                           void *arg)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_ATTEMPTS);
    int rc = 0, step;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_store_attempt_row r = {
            .attempt = sqlite3_column_int(q, 0),
            .started_ms = sqlite3_column_int64(q, 1),
            .after = sl_sqlite_col_text(q, 2),
            .log_offsets = sl_sqlite_col_text(q, 3),
        };
        if ((rc = fn(arg, &r)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

int sl_sqlite_job_lineage(struct sl_store *st, int64_t id, const char *lineage)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_JOB_LINEAGE);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    sl_sqlite_bind_text_or_null(q, 2, lineage);
    return sl_sqlite_step_done(s, q);
}

int sl_sqlite_job_respec(struct sl_store *st, int64_t id, const char *queue,
                         const char *priority_class, int priority, const char *spec_json)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_JOB_RESPEC);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_text(q, 2, queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, priority_class, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 4, priority);
    sqlite3_bind_text(q, 5, spec_json, -1, SQLITE_STATIC);
    return sl_sqlite_step_done(s, q);
}

char *sl_sqlite_job_lineage_get(struct sl_store *st, int64_t id, int *rc)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_JOB_LINEAGE_GET);
    char *text = NULL;
    int step;

    if (!q) {
        *rc = -EIO;
        return NULL;
    }
    sqlite3_bind_int64(q, 1, id);
    if ((step = sqlite3_step(q)) == SQLITE_ROW)
        *rc = (text = strdup(sl_sqlite_col_str(q, 0))) ? 0 : -ENOMEM;
    else
        *rc = step == SQLITE_DONE ? -ENOENT : -EIO;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return text;
}
