/*
 * sqlite_catalog.c - the SQLite backend's catalog: teams, cohorts, queues,
 * priority classes and users (compare-then-write upserts that say whether
 * anything changed), their lists, and loading the whole state at start.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <string.h>

static const char *const catalog_sql[SQ_CATALOG_N] = {
    [SQ_TEAM_GET] = "SELECT default_queue FROM teams WHERE name = ?1",
    [SQ_TEAM_PUT] = "INSERT INTO teams(name, default_queue, created_at) "
                    "VALUES(?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET "
                    "default_queue = excluded.default_queue",
    [SQ_COHORT_GET] = "SELECT description FROM cohorts WHERE name = ?1",
    [SQ_COHORT_PUT] = "INSERT INTO cohorts(name, description, created_at) VALUES(?1, ?2, ?3) "
                      "ON CONFLICT(name) DO UPDATE SET description = excluded.description",
    [SQ_QUEUE_GET] = "SELECT team, spec FROM queues WHERE name = ?1",
    [SQ_QUEUE_PUT] = "INSERT INTO queues(name, team, created_at, spec) VALUES(?1, ?2, ?3, ?4) "
                     "ON CONFLICT(name) DO UPDATE SET team = excluded.team, "
                     "spec = excluded.spec",
    [SQ_PCLASS_GET] = "SELECT value, preemptible, is_default, opportunistic, "
                      "min_runtime_ms FROM priority_classes WHERE name = ?1",
    [SQ_PCLASS_PUT] = "INSERT INTO priority_classes(name, value, preemptible, is_default, "
                      "opportunistic, min_runtime_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6) "
                      "ON CONFLICT(name) DO UPDATE SET value = excluded.value, "
                      "preemptible = excluded.preemptible, is_default = excluded.is_default, "
                      "opportunistic = excluded.opportunistic, "
                      "min_runtime_ms = excluded.min_runtime_ms",
    [SQ_PCLASS_UNDEFAULT] = "UPDATE priority_classes SET is_default = 0 "
                            "WHERE name <> ?1 AND is_default = 1",
    [SQ_USER_GET] = "SELECT team, role, unix_user FROM users WHERE name = ?1",
    [SQ_USER_PUT] = "INSERT INTO users(name, team, role, unix_user, created_at) "
                    "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) DO UPDATE SET "
                    "team = excluded.team, role = excluded.role, "
                    "unix_user = excluded.unix_user",
    [SQ_TEAMS] = "SELECT name, default_queue FROM teams ORDER BY name",
    [SQ_PCLASSES] = "SELECT name, value, preemptible, is_default, opportunistic, "
                    "min_runtime_ms FROM priority_classes ORDER BY value DESC, name",
    [SQ_TEAM_DEL] = "DELETE FROM teams WHERE name = ?1",
    [SQ_QUEUE_DEL] = "DELETE FROM queues WHERE name = ?1",
    [SQ_COHORT_DEL] = "DELETE FROM cohorts WHERE name = ?1",
    [SQ_PCLASS_DEL] = "DELETE FROM priority_classes WHERE name = ?1",
    [SQ_USER_DEL] = "DELETE FROM users WHERE name = ?1",
    [SQ_USER_TOKENS_DEL] = "DELETE FROM tokens WHERE user = ?1",
    [SQ_BUDGET_DEL] = "DELETE FROM budgets WHERE name = ?1",
    [SQ_USER_TOKENS_LIVE] = "SELECT count(*) FROM tokens WHERE user = ?1 AND revoked = 0 "
                            "AND (expires_at = 0 OR expires_at > ?2)",
};

static sqlite3_stmt *prep(struct sl_sqlite *s, enum sq_catalog_stmt i)
{
    return sl_sqlite_prep(s, &s->catalog[i], catalog_sql[i]);
}

/* ---- upserts ------------------------------------------------------------- */

/* Upsert of a row keyed by name with one text column (teams, cohorts). */
static int upsert_name_text(struct sl_sqlite *s, enum sq_catalog_stmt get,
                            enum sq_catalog_stmt put, const char *name, const char *value)
{
    sqlite3_stmt *g = prep(s, get), *p = prep(s, put);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp(sl_sqlite_col_str(g, 0), value) == 0;
    sqlite3_bind_text(p, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, value, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 3, sl_now_ms());
    return sl_sqlite_upsert_result(s, g, found, same, p);
}

int sl_sqlite_team_upsert(struct sl_store *st, const char *name, const char *default_queue)
{
    return upsert_name_text(sl_sqlite_of(st), SQ_TEAM_GET, SQ_TEAM_PUT, name, default_queue);
}

int sl_sqlite_cohort_upsert(struct sl_store *st, const char *name, const char *description)
{
    return upsert_name_text(sl_sqlite_of(st), SQ_COHORT_GET, SQ_COHORT_PUT, name,
                            description ? description : "");
}

int sl_sqlite_queue_upsert(struct sl_store *st, const char *name, const char *team,
                           const char *spec_json)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *g = prep(s, SQ_QUEUE_GET), *p = prep(s, SQ_QUEUE_PUT);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    if (!spec_json)
        spec_json = "{}";
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp(sl_sqlite_col_str(g, 0), team) == 0 &&
               strcmp(sl_sqlite_col_str(g, 1), spec_json) == 0;
    sqlite3_bind_text(p, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, team, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 3, sl_now_ms());
    sqlite3_bind_text(p, 4, spec_json, -1, SQLITE_STATIC);
    return sl_sqlite_upsert_result(s, g, found, same, p);
}

int sl_sqlite_pclass_upsert(struct sl_store *st, const char *name, int value,
                            bool preemptible, bool is_default, bool opportunistic,
                            int64_t min_runtime_ms)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *g = prep(s, SQ_PCLASS_GET), *p = prep(s, SQ_PCLASS_PUT);
    sqlite3_stmt *u = prep(s, SQ_PCLASS_UNDEFAULT);
    bool found, same = false;
    int rc;

    if (!g || !p || !u)
        return -EIO;
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = sqlite3_column_int(g, 0) == value &&
               sqlite3_column_int(g, 1) == preemptible &&
               sqlite3_column_int(g, 2) == is_default &&
               sqlite3_column_int(g, 3) == opportunistic &&
               sqlite3_column_int64(g, 4) == min_runtime_ms;
    sqlite3_bind_text(p, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(p, 2, value);
    sqlite3_bind_int(p, 3, preemptible);
    sqlite3_bind_int(p, 4, is_default);
    sqlite3_bind_int(p, 5, opportunistic);
    sqlite3_bind_int64(p, 6, min_runtime_ms);
    rc = sl_sqlite_upsert_result(s, g, found, same, p);
    if (rc > 0 && is_default) {
        /* Only one class is the default. */
        int urc;
        sqlite3_bind_text(u, 1, name, -1, SQLITE_STATIC);
        if ((urc = sl_sqlite_step_done(s, u)) < 0)
            return urc;
    }
    return rc;
}

int sl_sqlite_user_upsert(struct sl_store *st, const char *name, const char *team,
                          const char *role, const char *unix_user)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *g = prep(s, SQ_USER_GET), *p = prep(s, SQ_USER_PUT);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp(sl_sqlite_col_str(g, 0), team) == 0 &&
               strcmp(sl_sqlite_col_str(g, 1), role) == 0 &&
               strcmp(sl_sqlite_col_str(g, 2), unix_user) == 0;
    sqlite3_bind_text(p, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, team, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 3, role, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 4, unix_user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 5, sl_now_ms());
    return sl_sqlite_upsert_result(s, g, found, same, p);
}

/* ---- loading at start ---------------------------------------------------- */

static int ld_team(const struct sl_store_loader *ld, sqlite3_stmt *q)
{
    return ld->team(ld->arg, sl_sqlite_col_text(q, 0), sl_sqlite_col_text(q, 1));
}

static int ld_cohort(const struct sl_store_loader *ld, sqlite3_stmt *q)
{
    return ld->cohort(ld->arg, sl_sqlite_col_text(q, 0), sl_sqlite_col_text(q, 1));
}

static int ld_queue(const struct sl_store_loader *ld, sqlite3_stmt *q)
{
    return ld->queue(ld->arg, sl_sqlite_col_text(q, 0), sl_sqlite_col_text(q, 1),
                     sl_sqlite_col_text(q, 2));
}

static int ld_pclass(const struct sl_store_loader *ld, sqlite3_stmt *q)
{
    return ld->pclass(ld->arg, sl_sqlite_col_text(q, 0), sqlite3_column_int(q, 1),
                      sqlite3_column_int(q, 2), sqlite3_column_int(q, 3),
                      sqlite3_column_int(q, 4), sqlite3_column_int64(q, 5));
}

static int ld_user(const struct sl_store_loader *ld, sqlite3_stmt *q)
{
    return ld->user(ld->arg, sl_sqlite_col_text(q, 0), sl_sqlite_col_text(q, 1),
                    sl_sqlite_col_text(q, 2), sl_sqlite_col_text(q, 3));
}

static int ld_job(const struct sl_store_loader *ld, sqlite3_stmt *q)
{
    struct sl_job_view v;
    int64_t not_before_ms = sl_sqlite_job_row(q, &v);
    return ld->job(ld->arg, &v, not_before_ms);
}

/* What sl_store_load reads, in order: the query and the loader's callback
 * for each of its rows. Jobs: Pending (0), Running (1), Preempted (5). */
static const struct {
    const char *sql;
    int (*row)(const struct sl_store_loader *ld, sqlite3_stmt *q);
} load_steps[] = {
    {"SELECT name, default_queue FROM teams ORDER BY name", ld_team},
    {"SELECT name, description FROM cohorts ORDER BY name", ld_cohort},
    {"SELECT name, team, spec FROM queues ORDER BY name", ld_queue},
    {"SELECT name, value, preemptible, is_default, opportunistic, min_runtime_ms "
     "FROM priority_classes ORDER BY name", ld_pclass},
    {"SELECT name, team, role, unix_user FROM users ORDER BY name", ld_user},
    {"SELECT " SL_SQLITE_JOB_COLS " FROM jobs WHERE state IN (0, 1, 5) ORDER BY id", ld_job},
};

int sl_sqlite_load(struct sl_store *st, const struct sl_store_loader *ld)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    int rc = 0;

    for (size_t i = 0; i < SL_ARRAY_LEN(load_steps) && rc == 0; i++) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(s->db, load_steps[i].sql, -1, &q, NULL) != SQLITE_OK)
            return -EIO;
        while (rc == 0 && sqlite3_step(q) == SQLITE_ROW)
            rc = load_steps[i].row(ld, q);
        sqlite3_finalize(q);
    }
    return rc;
}

/* ---- lists --------------------------------------------------------------- */

int sl_sqlite_team_scan(struct sl_store *st,
                        int (*fn)(void *arg, const char *name, const char *default_queue),
                        void *arg)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_TEAMS);
    int rc = 0, step;

    if (!q)
        return -EIO;
    while ((step = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(arg, sl_sqlite_col_str(q, 0), sl_sqlite_col_str(q, 1))) != 0)
            break;
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_reset(q);
    return rc;
}

int sl_sqlite_pclass_scan(struct sl_store *st,
                          int (*fn)(void *arg, const char *name, int value, bool preemptible,
                                    bool is_default, bool opportunistic,
                                    int64_t min_runtime_ms),
                          void *arg)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_PCLASSES);
    int rc = 0, step;

    if (!q)
        return -EIO;
    while ((step = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(arg, sl_sqlite_col_str(q, 0), sqlite3_column_int(q, 1),
                     sqlite3_column_int(q, 2) != 0, sqlite3_column_int(q, 3) != 0,
                     sqlite3_column_int(q, 4) != 0, sqlite3_column_int64(q, 5))) != 0)
            break;
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_reset(q);
    return rc;
}

/* ---- deletes ------------------------------------------------------------- */

static int del_by_name(struct sl_sqlite *s, enum sq_catalog_stmt i, const char *name)
{
    sqlite3_stmt *q = prep(s, i);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    if ((rc = sl_sqlite_step_done(s, q)) < 0)
        return rc;
    return sqlite3_changes(s->db) ? 0 : -ENOENT;
}

int sl_sqlite_catalog_del(struct sl_store *st, const char *kind, const char *name)
{
    static const struct {
        const char *kind;
        enum sq_catalog_stmt del;
    } rows[] = {
        {"Team", SQ_TEAM_DEL},           {"Queue", SQ_QUEUE_DEL},
        {"Cohort", SQ_COHORT_DEL},       {"PriorityClass", SQ_PCLASS_DEL},
        {"User", SQ_USER_DEL},           {"Budget", SQ_BUDGET_DEL},
    };
    struct sl_sqlite *s = sl_sqlite_of(st);
    int rc;

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (strcmp(rows[i].kind, kind) != 0)
            continue;
        /* a user's tokens refer to it */
        if (rows[i].del == SQ_USER_DEL &&
            (rc = del_by_name(s, SQ_USER_TOKENS_DEL, name)) < 0 && rc != -ENOENT)
            return rc;
        return del_by_name(s, rows[i].del, name);
    }
    return -EINVAL;
}

int sl_sqlite_user_tokens_live(struct sl_store *st, const char *name, int64_t now_ms)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_USER_TOKENS_LIVE);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now_ms);
    rc = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -EIO;
    sqlite3_reset(q);
    return rc;
}
