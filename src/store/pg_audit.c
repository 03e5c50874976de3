/*
 * pg_audit.c - the PostgreSQL backend's audit log: records by seq (the
 * hash-chained line as written, its hash, and the index columns searches
 * use) and the signed checkpoints of the log by size. The twin of
 * sqlite_audit.c.
 */
#include "pg_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct sl_pg_stmt q_audit_add = SL_PG_STMT(
    "INSERT INTO audit(seq, at, actor, action, object, outcome, line, hash) "
    "VALUES($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT(seq) DO NOTHING");
static struct sl_pg_stmt q_audit_head =
    SL_PG_STMT("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1");
#define AUDIT_SCAN_SQL                                                                      \
    "SELECT seq, line, at, actor, action, object, outcome FROM audit WHERE seq > $1 AND "     \
    "($2::text IS NULL OR actor = $2) AND ($3::text IS NULL OR action = $3) AND "             \
    "($4::text IS NULL OR object = $4) AND ($5::bigint = 0 OR at >= $5) AND "                 \
    "($6::bigint = 0 OR at < $6) AND ($7::text IS NULL OR outcome = $7) AND "                 \
    "($8::bigint = 0 OR seq < $8) ORDER BY seq"
static struct sl_pg_stmt q_audit_asc = SL_PG_STMT(AUDIT_SCAN_SQL " LIMIT $9");
static struct sl_pg_stmt q_audit_desc = SL_PG_STMT(AUDIT_SCAN_SQL " DESC LIMIT $9");
#undef AUDIT_SCAN_SQL
static struct sl_pg_stmt q_ckpt_put =
    SL_PG_STMT("INSERT INTO audit_checkpoints(size, at, text) VALUES($1, $2, $3) "
               "ON CONFLICT(size) DO UPDATE SET at = excluded.at, text = excluded.text");
static struct sl_pg_stmt q_ckpt_last =
    SL_PG_STMT("SELECT text FROM audit_checkpoints ORDER BY size DESC LIMIT 1");

int sl_pg_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                    const char *action, const char *object, const char *outcome,
                    const char *line, size_t len, const unsigned char hash[32])
{
    struct sl_pg_params pa;
    char *text = strndup(line, len);
    int rc;

    if (!text)
        return -ENOMEM;
    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, seq);
    sl_pg_p_i64(&pa, at_ms);
    sl_pg_p_text(&pa, actor);
    sl_pg_p_text(&pa, action);
    sl_pg_p_text(&pa, object ? object : "");
    sl_pg_p_text(&pa, outcome);
    sl_pg_p_text(&pa, text);
    sl_pg_p_bytea(&pa, hash, 32);
    rc = sl_pg_exec(sl_pg_of(st), &q_audit_add, &pa);
    sl_pg_params_fini(&pa);
    free(text);
    if (rc < 0)
        return rc;
    return rc == 1 ? 0 : -EEXIST;
}

int sl_pg_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32])
{
    int rc;
    PGresult *r = sl_pg_query(sl_pg_of(st), &q_audit_head, NULL, &rc);

    *size = 0;
    memset(hash, 0, 32);
    if (!r)
        return rc;
    if (PQntuples(r) == 1) {
        *size = sl_pg_get_i64(r, 0, 0);
        rc = sl_pg_get_bytea(r, 0, 1, hash, 32);
    }
    PQclear(r);
    return rc;
}

int sl_pg_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                     int (*fn)(void *arg, const struct sl_store_audit_row *row), void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, f->after);
    sl_pg_p_text_or_null(&pa, f->actor);
    sl_pg_p_text_or_null(&pa, f->action);
    sl_pg_p_text_or_null(&pa, f->object);
    sl_pg_p_i64(&pa, f->from_ms);
    sl_pg_p_i64(&pa, f->to_ms);
    sl_pg_p_text_or_null(&pa, f->outcome);
    sl_pg_p_i64(&pa, f->before);
    if (f->limit > 0)
        sl_pg_p_i64(&pa, f->limit);
    else
        sl_pg_p_text(&pa, NULL); /* LIMIT NULL: all */
    if (!(r = sl_pg_query(sl_pg_of(st), f->newest_first ? &q_audit_desc : &q_audit_asc, &pa,
                          &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        struct sl_store_audit_row row = {
            .seq = sl_pg_get_i64(r, i, 0),
            .line = sl_pg_get_str(r, i, 1),
            .len = (size_t)PQgetlength(r, i, 1),
            .at_ms = sl_pg_get_i64(r, i, 2),
            .actor = sl_pg_get_str(r, i, 3),
            .action = sl_pg_get_str(r, i, 4),
            .object = sl_pg_get_str(r, i, 5),
            .outcome = sl_pg_get_str(r, i, 6),
        };
        rc = fn(arg, &row);
    }
    PQclear(r);
    return rc < 0 ? rc : 0;
}

int sl_pg_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                               const char *text)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, size);
    sl_pg_p_i64(&pa, at_ms);
    sl_pg_p_text(&pa, text);
    rc = sl_pg_exec(sl_pg_of(st), &q_ckpt_put, &pa);
    return rc < 0 ? rc : 0;
}

char *sl_pg_audit_checkpoint_last(struct sl_store *st, int *rc)
{
    PGresult *r = sl_pg_query(sl_pg_of(st), &q_ckpt_last, NULL, rc);
    char *text = NULL;

    if (!r)
        return NULL;
    if (PQntuples(r) == 1)
        *rc = (text = strdup(sl_pg_get_str(r, 0, 0))) ? 0 : -ENOMEM;
    else
        *rc = -ENOENT;
    PQclear(r);
    return text;
}
