/*
 * sqlite_gov.c - the SQLite backend's governance rows: API tokens (kept as
 * BLAKE2b-256 hashes; a token's id is its rowid) and the governed objects
 * (policies, datasets, scans, models) as JSON documents by kind and name.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const gov_sql[SQ_GOV_N] = {
    [SQ_TOKEN_PUT] = "INSERT INTO tokens(hash, user, created_at, expires_at, label, job_id) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [SQ_TOKEN_GET] = "SELECT u.name, u.team, u.role, u.unix_user, t.job_id, t.rowid "
                     "FROM tokens t JOIN users u ON u.name = t.user WHERE t.hash = ?1 AND "
                     "t.revoked = 0 AND (t.expires_at = 0 OR t.expires_at > ?2)",
    [SQ_TOKEN_REVOKE] = "UPDATE tokens SET revoked = 1, revoked_at = ?2 WHERE rowid = ?1 "
                        "AND revoked = 0",
    /* "job_id > 0" lets SQLite use the partial index tokens_job: without
     * it every job's end scanned every token ever made */
    [SQ_TOKEN_REVOKE_JOB] = "UPDATE tokens SET revoked = 1, revoked_at = ?2 "
                            "WHERE job_id = ?1 AND job_id > 0 AND revoked = 0",
    [SQ_TOKEN_INFO] = "SELECT t.user, u.team, t.job_id, t.revoked FROM tokens t "
                      "JOIN users u ON u.name = t.user WHERE t.rowid = ?1",
    [SQ_OBJ_PUT] = "INSERT INTO objects(kind, name, spec, created_at, updated_at) "
                   "VALUES(?1, ?2, ?3, ?4, ?4) ON CONFLICT(kind, name) DO UPDATE SET "
                   "spec = excluded.spec, updated_at = excluded.updated_at "
                   "WHERE spec <> excluded.spec",
    [SQ_OBJ_GET] = "SELECT spec FROM objects WHERE kind = ?1 AND name = ?2",
    [SQ_OBJ_DEL] = "DELETE FROM objects WHERE kind = ?1 AND name = ?2",
};

static sqlite3_stmt *prep(struct sl_sqlite *s, enum sq_gov_stmt i)
{
    return sl_sqlite_prep(s, &s->gov[i], gov_sql[i]);
}

/* ---- tokens -------------------------------------------------------------- */

int sl_sqlite_token_insert(struct sl_store *st, const unsigned char hash[32],
                           const char *user, int64_t expires_ms, const char *label,
                           int64_t job_id, int64_t *id)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_TOKEN_PUT);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, sl_now_ms());
    sqlite3_bind_int64(q, 4, expires_ms);
    sqlite3_bind_text(q, 5, label ? label : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 6, job_id);
    if ((rc = sl_sqlite_step_done(s, q)) == 0 && id)
        *id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

int sl_sqlite_token_lookup(struct sl_store *st, const unsigned char hash[32],
                           int64_t now_ms, struct sl_token_who *who)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_TOKEN_GET);
    int rc = -ENOENT;

    if (!q)
        return -EIO;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now_ms);
    if (sqlite3_step(q) == SQLITE_ROW) {
        sl_strlcpy(who->user, sl_sqlite_col_str(q, 0), sizeof(who->user));
        sl_strlcpy(who->team, sl_sqlite_col_str(q, 1), sizeof(who->team));
        sl_strlcpy(who->role, sl_sqlite_col_str(q, 2), sizeof(who->role));
        sl_strlcpy(who->unix_user, sl_sqlite_col_str(q, 3), sizeof(who->unix_user));
        who->job_id = sqlite3_column_int64(q, 4);
        who->token_id = sqlite3_column_int64(q, 5);
        rc = 0;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

int sl_sqlite_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                         int64_t *job_id, bool *revoked)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_TOKEN_INFO);
    int rc = -ENOENT;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
        sl_strlcpy(user, sl_sqlite_col_str(q, 0), 64);
        sl_strlcpy(team, sl_sqlite_col_str(q, 1), 64);
        *job_id = sqlite3_column_int64(q, 2);
        *revoked = sqlite3_column_int(q, 3) != 0;
        rc = 0;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

int sl_sqlite_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_TOKEN_REVOKE);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, now_ms);
    if ((rc = sl_sqlite_step_done(s, q)) < 0)
        return rc;
    return sqlite3_changes(s->db) ? 0 : -ENOENT;
}

int sl_sqlite_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_TOKEN_REVOKE_JOB);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int64(q, 2, now_ms);
    if ((rc = sl_sqlite_step_done(s, q)) < 0)
        return rc;
    return sqlite3_changes(s->db);
}

int sl_sqlite_token_scan(struct sl_store *st, const char *user, const char *team,
                         const char *manager,
                         int (*fn)(void *arg, const struct sl_store_token_row *r), void *arg)
{
    static const char sql[] =
        "SELECT t.rowid, t.user, u.team, t.label, t.job_id, t.created_at, t.expires_at, "
        "t.revoked_at, t.revoked FROM tokens t JOIN users u ON u.name = t.user "
        "WHERE (?1 IS NULL OR t.user = ?1) AND (?2 IS NULL OR u.team = ?2) AND "
        "(?3 IS NULL OR t.user = ?3 OR u.role NOT IN ('admin', 'auditor')) "
        "ORDER BY t.rowid";
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    int rc = 0, step;

    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sl_sqlite_bind_text_or_null(q, 1, user);
    sl_sqlite_bind_text_or_null(q, 2, team);
    sl_sqlite_bind_text_or_null(q, 3, manager);
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_store_token_row r = {
            .id = sqlite3_column_int64(q, 0),
            .user = sl_sqlite_col_str(q, 1),
            .team = sl_sqlite_col_str(q, 2),
            .label = sl_sqlite_col_str(q, 3),
            .job_id = sqlite3_column_int64(q, 4),
            .created_ms = sqlite3_column_int64(q, 5),
            .expires_ms = sqlite3_column_int64(q, 6),
            .revoked_ms = sqlite3_column_int64(q, 7),
            .revoked = sqlite3_column_int(q, 8) != 0,
        };
        if ((rc = fn(arg, &r)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc;
}

/* ---- governed objects ---------------------------------------------------- */

int sl_sqlite_obj_put(struct sl_store *st, const char *kind, const char *name,
                      const char *spec)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *g = prep(s, SQ_OBJ_GET), *p = prep(s, SQ_OBJ_PUT);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    sqlite3_bind_text(g, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(g, 2, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp(sl_sqlite_col_str(g, 0), spec) == 0;
    sqlite3_bind_text(p, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 3, spec, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 4, sl_now_ms());
    return sl_sqlite_upsert_result(s, g, found, same, p);
}

char *sl_sqlite_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_OBJ_GET);
    char *spec = NULL;
    int step;

    *rc = -EIO;
    if (!q)
        return NULL;
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    if ((step = sqlite3_step(q)) == SQLITE_ROW)
        *rc = (spec = strdup(sl_sqlite_col_str(q, 0))) ? 0 : -ENOMEM;
    else
        *rc = step == SQLITE_DONE ? -ENOENT : -EIO;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return spec;
}

int sl_sqlite_obj_del(struct sl_store *st, const char *kind, const char *name)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_OBJ_DEL);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    if ((rc = sl_sqlite_step_done(s, q)) < 0)
        return rc;
    return sqlite3_changes(s->db) ? 0 : -ENOENT;
}

int sl_sqlite_objs_each(struct sl_store *st, const char *kind,
                        int (*fn)(void *arg, const char *name, const char *spec), void *arg)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    int rc = 0, step;

    if (sqlite3_prepare_v2(s->db,
                           "SELECT name, spec FROM objects WHERE kind = ?1 ORDER BY name",
                           -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    while ((step = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(arg, sl_sqlite_col_str(q, 0), sl_sqlite_col_str(q, 1))) != 0)
            break;
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc < 0 ? rc : 0;
}
