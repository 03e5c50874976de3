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

/* The query of a scan: its state and team filters as SQL, the rest bound. */
static void scan_sql(char *sql, size_t size, unsigned state_mask, bool team)
{
    size_t n = (size_t)snprintf(sql, size, "SELECT " SL_SQLITE_JOB_COLS
                                           " FROM jobs WHERE id > ?");
    if (state_mask) {
        const char *sep = "";
        n += (size_t)snprintf(sql + n, size - n, " AND state IN (");
        for (int st = 0; st < SL_JOB_NSTATES; st++)
            if (state_mask & (1u << st)) {
                n += (size_t)snprintf(sql + n, size - n, "%s%d", sep, st);
                sep = ",";
            }
        n += (size_t)snprintf(sql + n, size - n, ")");
    }
    if (team)
        n += (size_t)snprintf(sql + n, size - n, " AND team = ?");
    snprintf(sql + n, size - n, " ORDER BY id LIMIT ?");
}

int sl_sqlite_job_scan(struct sl_store *st, int64_t after, unsigned state_mask,
                       const char *team, int limit, sl_store_job_fn fn, void *arg,
                       int64_t *next)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    char sql[512];
    sqlite3_stmt *q = NULL;
    int count = 0, bind = 1, rc = 0, step;
    int64_t last = 0;

    *next = 0;
    scan_sql(sql, sizeof(sql), state_mask, team != NULL);
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, bind++, after);
    if (team)
        sqlite3_bind_text(q, bind++, team, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, bind, limit + 1); /* one more: is there a next page? */
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_job_view v;
        if (++count > limit) {
            *next = last;
            break;
        }
        sl_sqlite_job_row(q, &v);
        last = v.id;
        if ((rc = fn(arg, &v)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
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
