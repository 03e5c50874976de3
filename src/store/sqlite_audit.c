/*
 * sqlite_audit.c - the SQLite backend's audit log: records by seq (the
 * hash-chained line as written, its hash, and the index columns searches
 * use) and the signed checkpoints of the log by size.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const audit_sql[SQ_AUDIT_N] = {
    [SQ_AUDIT_ADD] = "INSERT INTO audit(seq, at, actor, action, object, outcome, line, hash) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [SQ_AUDIT_HEAD] = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
    [SQ_AUDIT_CKPT_PUT] = "INSERT OR REPLACE INTO audit_checkpoints(size, at, text) "
                          "VALUES(?1, ?2, ?3)",
};

static sqlite3_stmt *prep(struct sl_sqlite *s, enum sq_audit_stmt i)
{
    return sl_sqlite_prep(s, &s->audit[i], audit_sql[i]);
}

int sl_sqlite_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                        const char *action, const char *object, const char *outcome,
                        const char *line, size_t len, const unsigned char hash[32])
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_AUDIT_ADD);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, seq);
    sqlite3_bind_int64(q, 2, at_ms);
    sqlite3_bind_text(q, 3, actor, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, action, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, object ? object : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, outcome, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 7, line, (int)len, SQLITE_STATIC);
    sqlite3_bind_blob(q, 8, hash, 32, SQLITE_STATIC);
    return sl_sqlite_step_done(s, q);
}

int sl_sqlite_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32])
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_AUDIT_HEAD);
    int step;

    if (!q)
        return -EIO;
    *size = 0;
    memset(hash, 0, 32);
    if ((step = sqlite3_step(q)) == SQLITE_ROW) {
        *size = sqlite3_column_int64(q, 0);
        if (sqlite3_column_bytes(q, 1) == 32)
            memcpy(hash, sqlite3_column_blob(q, 1), 32);
        else
            step = SQLITE_CORRUPT;
    }
    sqlite3_reset(q);
    return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : -EIO;
}

int sl_sqlite_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                         int (*fn)(void *arg, const struct sl_store_audit_row *row),
                         void *arg)
{
#define AUDIT_SCAN_SQL                                                                   \
    "SELECT seq, line, at, actor, action, object, outcome FROM audit WHERE seq > ?1 AND "  \
    "(?2 IS NULL OR actor = ?2) AND (?3 IS NULL OR action = ?3) AND "                      \
    "(?4 IS NULL OR object = ?4) AND (?5 = 0 OR at >= ?5) AND "                            \
    "(?6 = 0 OR at < ?6) AND (?7 IS NULL OR outcome = ?7) AND (?8 = 0 OR seq < ?8) "      \
    "ORDER BY seq"
    static const char asc[] = AUDIT_SCAN_SQL, desc[] = AUDIT_SCAN_SQL " DESC";
#undef AUDIT_SCAN_SQL
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    int rc = 0, step = SQLITE_DONE, n = 0;

    if (sqlite3_prepare_v2(s->db, f->newest_first ? desc : asc, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, f->after);
    sl_sqlite_bind_text_or_null(q, 2, f->actor);
    sl_sqlite_bind_text_or_null(q, 3, f->action);
    sl_sqlite_bind_text_or_null(q, 4, f->object);
    sqlite3_bind_int64(q, 5, f->from_ms);
    sqlite3_bind_int64(q, 6, f->to_ms);
    sl_sqlite_bind_text_or_null(q, 7, f->outcome);
    sqlite3_bind_int64(q, 8, f->before);
    while ((f->limit <= 0 || n < f->limit) && (step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_store_audit_row row = {
            .seq = sqlite3_column_int64(q, 0),
            .line = sl_sqlite_col_str(q, 1),
            .len = (size_t)sqlite3_column_bytes(q, 1),
            .at_ms = sqlite3_column_int64(q, 2),
            .actor = sl_sqlite_col_str(q, 3),
            .action = sl_sqlite_col_str(q, 4),
            .object = sl_sqlite_col_str(q, 5),
            .outcome = sl_sqlite_col_str(q, 6),
        };
        n++;
        if ((rc = fn(arg, &row)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc < 0 ? rc : 0;
}

int sl_sqlite_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                                   const char *text)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_AUDIT_CKPT_PUT);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, size);
    sqlite3_bind_int64(q, 2, at_ms);
    sqlite3_bind_text(q, 3, text, -1, SQLITE_STATIC);
    return sl_sqlite_step_done(s, q);
}

char *sl_sqlite_audit_checkpoint_last(struct sl_store *st, int *rc)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = NULL;
    char *text = NULL;
    int step;

    *rc = -ENOENT;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT text FROM audit_checkpoints ORDER BY size DESC LIMIT 1",
                           -1, &q, NULL) != SQLITE_OK) {
        *rc = -EIO;
        return NULL;
    }
    if ((step = sqlite3_step(q)) == SQLITE_ROW)
        *rc = (text = strdup(sl_sqlite_col_str(q, 0))) ? 0 : -ENOMEM;
    else if (step != SQLITE_DONE)
        *rc = -EIO;
    sqlite3_finalize(q);
    return text;
}
