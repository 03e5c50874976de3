/*
 * pg_catalog.c - the PostgreSQL backend's catalog: teams, cohorts, queues,
 * priority classes and users (compare-then-write upserts that say whether
 * anything changed), their lists, and loading the whole state at start.
 * The twin of sqlite_catalog.c, statement for statement.
 */
#include "pg_int.h"

#include <errno.h>
#include <string.h>

static struct sl_pg_stmt q_team_get = SL_PG_STMT("SELECT default_queue FROM teams WHERE name = $1");
static struct sl_pg_stmt q_team_put =
    SL_PG_STMT("INSERT INTO teams(name, default_queue, created_at) VALUES($1, $2, $3) "
               "ON CONFLICT(name) DO UPDATE SET default_queue = excluded.default_queue");
static struct sl_pg_stmt q_cohort_get =
    SL_PG_STMT("SELECT description FROM cohorts WHERE name = $1");
static struct sl_pg_stmt q_cohort_put =
    SL_PG_STMT("INSERT INTO cohorts(name, description, created_at) VALUES($1, $2, $3) "
               "ON CONFLICT(name) DO UPDATE SET description = excluded.description");
static struct sl_pg_stmt q_queue_get = SL_PG_STMT("SELECT team, spec FROM queues WHERE name = $1");
static struct sl_pg_stmt q_queue_put =
    SL_PG_STMT("INSERT INTO queues(name, team, created_at, spec) VALUES($1, $2, $3, $4) "
               "ON CONFLICT(name) DO UPDATE SET team = excluded.team, spec = excluded.spec");
static struct sl_pg_stmt q_pclass_get =
    SL_PG_STMT("SELECT value, preemptible, is_default, opportunistic, min_runtime_ms "
               "FROM priority_classes WHERE name = $1");
static struct sl_pg_stmt q_pclass_put = SL_PG_STMT(
    "INSERT INTO priority_classes(name, value, preemptible, is_default, opportunistic, "
    "min_runtime_ms) VALUES($1, $2, $3, $4, $5, $6) "
    "ON CONFLICT(name) DO UPDATE SET value = excluded.value, "
    "preemptible = excluded.preemptible, is_default = excluded.is_default, "
    "opportunistic = excluded.opportunistic, min_runtime_ms = excluded.min_runtime_ms");
static struct sl_pg_stmt q_pclass_undefault = SL_PG_STMT(
    "UPDATE priority_classes SET is_default = 0 WHERE name <> $1 AND is_default = 1");
static struct sl_pg_stmt q_user_get =
    SL_PG_STMT("SELECT team, role, unix_user FROM users WHERE name = $1");
static struct sl_pg_stmt q_user_put =
    SL_PG_STMT("INSERT INTO users(name, team, role, unix_user, created_at) "
               "VALUES($1, $2, $3, $4, $5) ON CONFLICT(name) DO UPDATE SET "
               "team = excluded.team, role = excluded.role, unix_user = excluded.unix_user");
static struct sl_pg_stmt q_teams =
    SL_PG_STMT("SELECT name, default_queue FROM teams ORDER BY name COLLATE \"C\"");
static struct sl_pg_stmt q_pclasses =
    SL_PG_STMT("SELECT name, value, preemptible, is_default, opportunistic, min_runtime_ms "
               "FROM priority_classes ORDER BY value DESC, name COLLATE \"C\"");
static struct sl_pg_stmt q_team_del = SL_PG_STMT("DELETE FROM teams WHERE name = $1");
static struct sl_pg_stmt q_queue_del = SL_PG_STMT("DELETE FROM queues WHERE name = $1");
static struct sl_pg_stmt q_cohort_del = SL_PG_STMT("DELETE FROM cohorts WHERE name = $1");
static struct sl_pg_stmt q_pclass_del =
    SL_PG_STMT("DELETE FROM priority_classes WHERE name = $1");
static struct sl_pg_stmt q_user_del = SL_PG_STMT("DELETE FROM users WHERE name = $1");
static struct sl_pg_stmt q_user_tokens_del =
    SL_PG_STMT("DELETE FROM tokens WHERE \"user\" = $1");
static struct sl_pg_stmt q_budget_del = SL_PG_STMT("DELETE FROM budgets WHERE name = $1");
static struct sl_pg_stmt q_user_tokens_live =
    SL_PG_STMT("SELECT count(*) FROM tokens WHERE \"user\" = $1 AND revoked = 0 "
               "AND (expires_at = 0 OR expires_at > $2)");

/* ---- upserts ------------------------------------------------------------- */

/* The row of 'get' for 'name' (NULL with *rc = 0 when there is none). */
static PGresult *get_row(struct sl_pg *p, struct sl_pg_stmt *get, const char *name, int *rc)
{
    struct sl_pg_params pa;
    PGresult *r;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    if (!(r = sl_pg_query(p, get, &pa, rc)))
        return NULL;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return NULL;
    }
    return r;
}

/* Write with 'put' unless the row was found and the same: 1 created,
 * 2 updated, 0 unchanged, or -errno. Consumes 'row'. */
static int upsert_result(struct sl_pg *p, PGresult *row, bool same, struct sl_pg_stmt *put,
                         const struct sl_pg_params *pa)
{
    bool found = row != NULL;
    int rc;

    PQclear(row);
    if (found && same)
        return 0;
    if ((rc = sl_pg_exec(p, put, pa)) < 0)
        return rc;
    return found ? 2 : 1;
}

/* Upsert of a row keyed by name with one text column (teams, cohorts). */
static int upsert_name_text(struct sl_pg *p, struct sl_pg_stmt *get, struct sl_pg_stmt *put,
                            const char *name, const char *value)
{
    struct sl_pg_params pa;
    PGresult *row;
    int rc;

    if (!(row = get_row(p, get, name, &rc)) && rc < 0)
        return rc;
    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    sl_pg_p_text(&pa, value);
    sl_pg_p_i64(&pa, sl_now_ms());
    return upsert_result(p, row, row && strcmp(sl_pg_get_str(row, 0, 0), value) == 0, put,
                         &pa);
}

int sl_pg_team_upsert(struct sl_store *st, const char *name, const char *default_queue)
{
    return upsert_name_text(sl_pg_of(st), &q_team_get, &q_team_put, name, default_queue);
}

int sl_pg_cohort_upsert(struct sl_store *st, const char *name, const char *description)
{
    return upsert_name_text(sl_pg_of(st), &q_cohort_get, &q_cohort_put, name,
                            description ? description : "");
}

int sl_pg_queue_upsert(struct sl_store *st, const char *name, const char *team,
                       const char *spec_json)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    PGresult *row;
    int rc;

    if (!spec_json)
        spec_json = "{}";
    if (!(row = get_row(p, &q_queue_get, name, &rc)) && rc < 0)
        return rc;
    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    sl_pg_p_text(&pa, team);
    sl_pg_p_i64(&pa, sl_now_ms());
    sl_pg_p_text(&pa, spec_json);
    return upsert_result(p, row,
                         row && strcmp(sl_pg_get_str(row, 0, 0), team) == 0 &&
                             strcmp(sl_pg_get_str(row, 0, 1), spec_json) == 0,
                         &q_queue_put, &pa);
}

int sl_pg_pclass_upsert(struct sl_store *st, const char *name, int value, bool preemptible,
                        bool is_default, bool opportunistic, int64_t min_runtime_ms)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    PGresult *row;
    bool same;
    int rc;

    if (!(row = get_row(p, &q_pclass_get, name, &rc)) && rc < 0)
        return rc;
    same = row && sl_pg_get_i64(row, 0, 0) == value &&
           sl_pg_get_i64(row, 0, 1) == preemptible && sl_pg_get_i64(row, 0, 2) == is_default &&
           sl_pg_get_i64(row, 0, 3) == opportunistic &&
           sl_pg_get_i64(row, 0, 4) == min_runtime_ms;
    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    sl_pg_p_i64(&pa, value);
    sl_pg_p_i64(&pa, preemptible);
    sl_pg_p_i64(&pa, is_default);
    sl_pg_p_i64(&pa, opportunistic);
    sl_pg_p_i64(&pa, min_runtime_ms);
    rc = upsert_result(p, row, same, &q_pclass_put, &pa);
    if (rc > 0 && is_default) {
        /* Only one class is the default. */
        int urc;
        sl_pg_params_init(&pa);
        sl_pg_p_text(&pa, name);
        if ((urc = sl_pg_exec(p, &q_pclass_undefault, &pa)) < 0)
            return urc;
    }
    return rc;
}

int sl_pg_user_upsert(struct sl_store *st, const char *name, const char *team,
                      const char *role, const char *unix_user)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    PGresult *row;
    int rc;

    if (!(row = get_row(p, &q_user_get, name, &rc)) && rc < 0)
        return rc;
    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    sl_pg_p_text(&pa, team);
    sl_pg_p_text(&pa, role);
    sl_pg_p_text(&pa, unix_user);
    sl_pg_p_i64(&pa, sl_now_ms());
    return upsert_result(p, row,
                         row && strcmp(sl_pg_get_str(row, 0, 0), team) == 0 &&
                             strcmp(sl_pg_get_str(row, 0, 1), role) == 0 &&
                             strcmp(sl_pg_get_str(row, 0, 2), unix_user) == 0,
                         &q_user_put, &pa);
}

/* ---- loading at start ---------------------------------------------------- */

static int ld_team(const struct sl_store_loader *ld, const PGresult *r, int i)
{
    return ld->team(ld->arg, sl_pg_get_text(r, i, 0), sl_pg_get_text(r, i, 1));
}

static int ld_cohort(const struct sl_store_loader *ld, const PGresult *r, int i)
{
    return ld->cohort(ld->arg, sl_pg_get_text(r, i, 0), sl_pg_get_text(r, i, 1));
}

static int ld_queue(const struct sl_store_loader *ld, const PGresult *r, int i)
{
    return ld->queue(ld->arg, sl_pg_get_text(r, i, 0), sl_pg_get_text(r, i, 1),
                     sl_pg_get_text(r, i, 2));
}

static int ld_pclass(const struct sl_store_loader *ld, const PGresult *r, int i)
{
    return ld->pclass(ld->arg, sl_pg_get_text(r, i, 0), (int)sl_pg_get_i64(r, i, 1),
                      sl_pg_get_i64(r, i, 2) != 0, sl_pg_get_i64(r, i, 3) != 0,
                      sl_pg_get_i64(r, i, 4) != 0, sl_pg_get_i64(r, i, 5));
}

static int ld_user(const struct sl_store_loader *ld, const PGresult *r, int i)
{
    return ld->user(ld->arg, sl_pg_get_text(r, i, 0), sl_pg_get_text(r, i, 1),
                    sl_pg_get_text(r, i, 2), sl_pg_get_text(r, i, 3));
}

static int ld_job(const struct sl_store_loader *ld, const PGresult *r, int i)
{
    struct sl_job_view v;
    int64_t not_before_ms = sl_pg_job_row(r, i, &v);
    return ld->job(ld->arg, &v, not_before_ms);
}

/* What sl_store_load reads, in order: the query and the loader's callback
 * for each of its rows. Jobs: Pending (0), Running (1), Preempted (5). */
static struct {
    struct sl_pg_stmt q;
    int (*row)(const struct sl_store_loader *ld, const PGresult *r, int i);
} load_steps[] = {
    {SL_PG_STMT("SELECT name, default_queue FROM teams ORDER BY name COLLATE \"C\""), ld_team},
    {SL_PG_STMT("SELECT name, description FROM cohorts ORDER BY name COLLATE \"C\""),
     ld_cohort},
    {SL_PG_STMT("SELECT name, team, spec FROM queues ORDER BY name COLLATE \"C\""), ld_queue},
    {SL_PG_STMT("SELECT name, value, preemptible, is_default, opportunistic, min_runtime_ms "
                "FROM priority_classes ORDER BY name COLLATE \"C\""),
     ld_pclass},
    {SL_PG_STMT("SELECT name, team, role, unix_user FROM users ORDER BY name COLLATE \"C\""),
     ld_user},
    {SL_PG_STMT("SELECT " SL_PG_JOB_COLS " FROM jobs WHERE state IN (0, 1, 5) ORDER BY id"),
     ld_job},
};

int sl_pg_load(struct sl_store *st, const struct sl_store_loader *ld)
{
    struct sl_pg *p = sl_pg_of(st);
    int rc = 0;

    for (size_t i = 0; i < SL_ARRAY_LEN(load_steps) && rc == 0; i++) {
        PGresult *r = sl_pg_query(p, &load_steps[i].q, NULL, &rc);
        if (!r)
            return rc;
        for (int k = 0; k < PQntuples(r) && rc == 0; k++)
            rc = load_steps[i].row(ld, r, k);
        PQclear(r);
    }
    return rc;
}

/* ---- lists --------------------------------------------------------------- */

int sl_pg_team_scan(struct sl_store *st,
                    int (*fn)(void *arg, const char *name, const char *default_queue),
                    void *arg)
{
    int rc;
    PGresult *r = sl_pg_query(sl_pg_of(st), &q_teams, NULL, &rc);

    if (!r)
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++)
        rc = fn(arg, sl_pg_get_str(r, i, 0), sl_pg_get_str(r, i, 1));
    PQclear(r);
    return rc;
}

int sl_pg_pclass_scan(struct sl_store *st,
                      int (*fn)(void *arg, const char *name, int value, bool preemptible,
                                bool is_default, bool opportunistic, int64_t min_runtime_ms),
                      void *arg)
{
    int rc;
    PGresult *r = sl_pg_query(sl_pg_of(st), &q_pclasses, NULL, &rc);

    if (!r)
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++)
        rc = fn(arg, sl_pg_get_str(r, i, 0), (int)sl_pg_get_i64(r, i, 1),
                sl_pg_get_i64(r, i, 2) != 0, sl_pg_get_i64(r, i, 3) != 0,
                sl_pg_get_i64(r, i, 4) != 0, sl_pg_get_i64(r, i, 5));
    PQclear(r);
    return rc;
}

/* ---- deletes ------------------------------------------------------------- */

static int del_by_name(struct sl_pg *p, struct sl_pg_stmt *q, const char *name)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    if ((rc = sl_pg_exec(p, q, &pa)) < 0)
        return rc;
    return rc ? 0 : -ENOENT;
}

int sl_pg_catalog_del(struct sl_store *st, const char *kind, const char *name)
{
    static const struct {
        const char *kind;
        struct sl_pg_stmt *del;
    } rows[] = {
        {"Team", &q_team_del},         {"Queue", &q_queue_del},
        {"Cohort", &q_cohort_del},     {"PriorityClass", &q_pclass_del},
        {"User", &q_user_del},         {"Budget", &q_budget_del},
    };
    struct sl_pg *p = sl_pg_of(st);
    int rc;

    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        if (strcmp(rows[i].kind, kind) != 0)
            continue;
        /* a user's tokens refer to it */
        if (rows[i].del == &q_user_del &&
            (rc = del_by_name(p, &q_user_tokens_del, name)) < 0 && rc != -ENOENT)
            return rc;
        return del_by_name(p, rows[i].del, name);
    }
    return -EINVAL;
}

int sl_pg_user_tokens_live(struct sl_store *st, const char *name, int64_t now_ms)
{
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    sl_pg_p_i64(&pa, now_ms);
    if (!(r = sl_pg_query(sl_pg_of(st), &q_user_tokens_live, &pa, &rc)))
        return rc;
    rc = PQntuples(r) == 1 ? (int)sl_pg_get_i64(r, 0, 0) : -EIO;
    PQclear(r);
    return rc;
}
