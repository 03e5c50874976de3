/*
 * pg_gov.c - the PostgreSQL backend's governance rows: API tokens (kept as
 * BLAKE2b-256 hashes; a token's id is the explicit column tokens.id,
 * assigned as max + 1 like SQLite's rowid) and the governed objects
 * (policies, datasets, scans, models) as JSON documents by kind and name.
 * The twin of sqlite_gov.c.
 */
#include "pg_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A taken hash is -EEXIST without failing the statement (which would end
 * the transaction): ON CONFLICT DO NOTHING, and no row back. */
static struct sl_pg_stmt q_token_put = SL_PG_STMT(
    "INSERT INTO tokens(hash, \"user\", created_at, expires_at, label, job_id, id) "
    "SELECT $1, $2, $3, $4, $5, $6, coalesce(max(id), 0) + 1 FROM tokens "
    "ON CONFLICT(hash) DO NOTHING RETURNING id");
static struct sl_pg_stmt q_token_get = SL_PG_STMT(
    "SELECT u.name, u.team, u.role, u.unix_user, t.job_id, t.id "
    "FROM tokens t JOIN users u ON u.name = t.\"user\" WHERE t.hash = $1 AND "
    "t.revoked = 0 AND (t.expires_at = 0 OR t.expires_at > $2)");
static struct sl_pg_stmt q_token_revoke = SL_PG_STMT(
    "UPDATE tokens SET revoked = 1, revoked_at = $2 WHERE id = $1 AND revoked = 0");
static struct sl_pg_stmt q_token_revoke_job =
    SL_PG_STMT("UPDATE tokens SET revoked = 1, revoked_at = $2 "
               "WHERE job_id = $1 AND job_id > 0 AND revoked = 0");
static struct sl_pg_stmt q_token_info =
    SL_PG_STMT("SELECT t.\"user\", u.team, t.job_id, t.revoked FROM tokens t "
               "JOIN users u ON u.name = t.\"user\" WHERE t.id = $1");
static struct sl_pg_stmt q_token_scan = SL_PG_STMT(
    "SELECT t.id, t.\"user\", u.team, t.label, t.job_id, t.created_at, t.expires_at, "
    "t.revoked_at, t.revoked FROM tokens t JOIN users u ON u.name = t.\"user\" "
    "WHERE ($1::text IS NULL OR t.\"user\" = $1) AND ($2::text IS NULL OR u.team = $2) AND "
    "($3::text IS NULL OR t.\"user\" = $3 OR u.role NOT IN ('admin', 'auditor')) "
    "ORDER BY t.id");
static struct sl_pg_stmt q_obj_put = SL_PG_STMT(
    "INSERT INTO objects(kind, name, spec, created_at, updated_at) "
    "VALUES($1, $2, $3, $4, $4) ON CONFLICT(kind, name) DO UPDATE SET "
    "spec = excluded.spec, updated_at = excluded.updated_at "
    "WHERE objects.spec <> excluded.spec");
static struct sl_pg_stmt q_obj_get =
    SL_PG_STMT("SELECT spec FROM objects WHERE kind = $1 AND name = $2");
static struct sl_pg_stmt q_obj_del =
    SL_PG_STMT("DELETE FROM objects WHERE kind = $1 AND name = $2");
static struct sl_pg_stmt q_objs =
    SL_PG_STMT("SELECT name, spec FROM objects WHERE kind = $1 ORDER BY name COLLATE \"C\"");

/* ---- tokens -------------------------------------------------------------- */

int sl_pg_token_insert(struct sl_store *st, const unsigned char hash[32], const char *user,
                       int64_t expires_ms, const char *label, int64_t job_id, int64_t *id)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_bytea(&pa, hash, 32);
    sl_pg_p_text(&pa, user);
    sl_pg_p_i64(&pa, sl_now_ms());
    sl_pg_p_i64(&pa, expires_ms);
    sl_pg_p_text(&pa, label ? label : "");
    sl_pg_p_i64(&pa, job_id);
    r = sl_pg_query(sl_pg_of(st), &q_token_put, &pa, &rc);
    sl_pg_params_fini(&pa);
    if (!r)
        return rc;
    if (PQntuples(r) == 1) {
        if (id)
            *id = sl_pg_get_i64(r, 0, 0);
    } else {
        rc = -EEXIST;
    }
    PQclear(r);
    return rc;
}

int sl_pg_token_lookup(struct sl_store *st, const unsigned char hash[32], int64_t now_ms,
                       struct sl_token_who *who)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_bytea(&pa, hash, 32);
    sl_pg_p_i64(&pa, now_ms);
    r = sl_pg_query(sl_pg_of(st), &q_token_get, &pa, &rc);
    sl_pg_params_fini(&pa);
    if (!r)
        return rc;
    rc = -ENOENT;
    if (PQntuples(r) == 1) {
        sl_strlcpy(who->user, sl_pg_get_str(r, 0, 0), sizeof(who->user));
        sl_strlcpy(who->team, sl_pg_get_str(r, 0, 1), sizeof(who->team));
        sl_strlcpy(who->role, sl_pg_get_str(r, 0, 2), sizeof(who->role));
        sl_strlcpy(who->unix_user, sl_pg_get_str(r, 0, 3), sizeof(who->unix_user));
        who->job_id = sl_pg_get_i64(r, 0, 4);
        who->token_id = sl_pg_get_i64(r, 0, 5);
        rc = 0;
    }
    PQclear(r);
    return rc;
}

int sl_pg_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                     int64_t *job_id, bool *revoked)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, id);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_token_info, &pa, &rc)))
        return rc;
    rc = -ENOENT;
    if (PQntuples(r) == 1) {
        sl_strlcpy(user, sl_pg_get_str(r, 0, 0), 64);
        sl_strlcpy(team, sl_pg_get_str(r, 0, 1), 64);
        *job_id = sl_pg_get_i64(r, 0, 2);
        *revoked = sl_pg_get_i64(r, 0, 3) != 0;
        rc = 0;
    }
    PQclear(r);
    return rc;
}

int sl_pg_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, id);
    sl_pg_p_i64(&pa, now_ms);
    if ((rc = sl_pg_exec(sl_pg_of(st), &q_token_revoke, &pa)) < 0)
        return rc;
    return rc ? 0 : -ENOENT;
}

int sl_pg_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms)
{
    struct sl_pg_params pa;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, job_id);
    sl_pg_p_i64(&pa, now_ms);
    return sl_pg_exec(sl_pg_of(st), &q_token_revoke_job, &pa);
}

int sl_pg_token_scan(struct sl_store *st, const char *user, const char *team,
                     const char *manager,
                     int (*fn)(void *arg, const struct sl_store_token_row *r), void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text_or_null(&pa, user);
    sl_pg_p_text_or_null(&pa, team);
    sl_pg_p_text_or_null(&pa, manager);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_token_scan, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        struct sl_store_token_row row = {
            .id = sl_pg_get_i64(r, i, 0),
            .user = sl_pg_get_str(r, i, 1),
            .team = sl_pg_get_str(r, i, 2),
            .label = sl_pg_get_str(r, i, 3),
            .job_id = sl_pg_get_i64(r, i, 4),
            .created_ms = sl_pg_get_i64(r, i, 5),
            .expires_ms = sl_pg_get_i64(r, i, 6),
            .revoked_ms = sl_pg_get_i64(r, i, 7),
            .revoked = sl_pg_get_i64(r, i, 8) != 0,
        };
        rc = fn(arg, &row);
    }
    PQclear(r);
    return rc;
}

/* ---- governed objects ---------------------------------------------------- */

int sl_pg_obj_put(struct sl_store *st, const char *kind, const char *name, const char *spec)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    PGresult *r;
    bool found, same;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, kind);
    sl_pg_p_text(&pa, name);
    if (!(r = sl_pg_query(p, &q_obj_get, &pa, &rc)))
        return rc;
    found = PQntuples(r) == 1;
    same = found && strcmp(sl_pg_get_str(r, 0, 0), spec) == 0;
    PQclear(r);
    if (found && same)
        return 0;
    sl_pg_p_text(&pa, spec);
    sl_pg_p_i64(&pa, sl_now_ms());
    if ((rc = sl_pg_exec(p, &q_obj_put, &pa)) < 0)
        return rc;
    return found ? 2 : 1;
}

char *sl_pg_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc)
{
    struct sl_pg_params pa;
    PGresult *r;
    char *spec = NULL;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, kind);
    sl_pg_p_text(&pa, name);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_obj_get, &pa, rc)))
        return NULL;
    if (PQntuples(r) == 1)
        *rc = (spec = strdup(sl_pg_get_str(r, 0, 0))) ? 0 : -ENOMEM;
    else
        *rc = -ENOENT;
    PQclear(r);
    return spec;
}

int sl_pg_obj_del(struct sl_store *st, const char *kind, const char *name)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, kind);
    sl_pg_p_text(&pa, name);
    if ((rc = sl_pg_exec(sl_pg_of(st), &q_obj_del, &pa)) < 0)
        return rc;
    return rc ? 0 : -ENOENT;
}

int sl_pg_objs_each(struct sl_store *st, const char *kind,
                    int (*fn)(void *arg, const char *name, const char *spec), void *arg)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, kind);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_objs, &pa, &rc)))
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++)
        rc = fn(arg, sl_pg_get_str(r, i, 0), sl_pg_get_str(r, i, 1));
    PQclear(r);
    return rc < 0 ? rc : 0;
}
