/*
 * sqlite.c - the SQLite backend (WAL mode): opening a connection, the
 * schema's migrations, transactions and the commit token, meta, the shared
 * helpers of sqlite_int.h and the ops table that store.c dispatches to.
 * See store.h for the contract and sqlite_int.h for how the backend's
 * files divide the work.
 *
 * Migrations are src/store/migrations/sqlite/NNNN_*.sql, embedded at build
 * time (backend.h); migration N is applied in a transaction of its own
 * that also sets PRAGMA user_version to N, so a data dir of any earlier
 * version opens and is brought up to date, and one of a later version is
 * refused.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const core_sql[SQ_CORE_N] = {
    [SQ_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_SAVEPOINT] = "SAVEPOINT req",
    [SQ_RELEASE] = "RELEASE req",
    [SQ_ROLLBACK_TO] = "ROLLBACK TO req",
    [SQ_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [SQ_META_SET] = ("INSERT INTO meta(key, value) VALUES(?1, ?2) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
};

static void sqlite_close(struct sl_store *st);

static const struct sl_store_ops sqlite_ops;

/* ---- helpers ------------------------------------------------------------- */

int sl_sqlite_errno(int rc)
{
    switch (rc) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return 0;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_CONSTRAINT:
        return -EEXIST;
    case SQLITE_FULL:
        return -ENOSPC;
    default:
        return -EIO;
    }
}

sqlite3_stmt *sl_sqlite_prep(struct sl_sqlite *s, sqlite3_stmt **slot, const char *sql)
{
    if (!*slot &&
        sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) !=
            SQLITE_OK) {
        sl_error("msg=\"sqlite prepare failed\" sql=\"%.60s\" err=\"%s\"", sql,
                 sqlite3_errmsg(s->db));
        return NULL;
    }
    return *slot;
}

int sl_sqlite_step_done(struct sl_sqlite *s, sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        sl_warn("msg=\"sqlite step failed\" err=\"%s\"", sqlite3_errmsg(s->db));
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return sl_sqlite_errno(rc);
}

int sl_sqlite_upsert_result(struct sl_sqlite *s, sqlite3_stmt *get, bool found, bool same,
                            sqlite3_stmt *put)
{
    int rc;
    sqlite3_reset(get);
    sqlite3_clear_bindings(get);
    if (found && same) {
        sqlite3_clear_bindings(put);
        return 0;
    }
    if ((rc = sl_sqlite_step_done(s, put)) < 0)
        return rc;
    return found ? 2 : 1;
}

static sqlite3_stmt *prep(struct sl_sqlite *s, enum sq_core_stmt i)
{
    return sl_sqlite_prep(s, &s->core[i], core_sql[i]);
}

static int exec_simple(struct sl_store *st, enum sq_core_stmt i)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, i);
    return q ? sl_sqlite_step_done(s, q) : -EIO;
}

/* ---- transactions -------------------------------------------------------- */

static int sqlite_begin(struct sl_store *st) { return exec_simple(st, SQ_BEGIN); }
static int sqlite_rollback(struct sl_store *st) { return exec_simple(st, SQ_ROLLBACK); }
static int sqlite_savepoint(struct sl_store *st) { return exec_simple(st, SQ_SAVEPOINT); }
static int sqlite_release(struct sl_store *st) { return exec_simple(st, SQ_RELEASE); }

static int sqlite_rollback_to(struct sl_store *st)
{
    /* ROLLBACK TO keeps the savepoint open; the contract closes it. */
    int rc = exec_simple(st, SQ_ROLLBACK_TO);
    return rc ? rc : exec_simple(st, SQ_RELEASE);
}

static int sqlite_commit(struct sl_store *st, uint64_t *token)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    uint64_t t;
    int rc;

    if ((rc = exec_simple(st, SQ_COMMIT)) < 0)
        return rc;
    /* Only this thread writes 'committed'; the syncer reads it. */
    t = atomic_load_explicit(&s->committed, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->committed, t, memory_order_release);
    if (token)
        *token = t;
    return 0;
}

/* ---- meta ---------------------------------------------------------------- */

static int sqlite_meta_get(struct sl_store *st, const char *key, char *buf, size_t size)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_META_GET);
    int rc = -ENOENT;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW) {
        sl_strlcpy(buf, sl_sqlite_col_str(q, 0), size);
        rc = 0;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

static int sqlite_meta_set(struct sl_store *st, const char *key, const char *val)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    sqlite3_stmt *q = prep(s, SQ_META_SET);
    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, val, -1, SQLITE_STATIC);
    return sl_sqlite_step_done(s, q);
}

/* ---- open, migrate, close ------------------------------------------------ */

/* Apply migration 'm' in a transaction of its own, with its version. */
static int migrate_one(struct sl_sqlite *s, const struct sl_store_migration *m,
                       struct sl_error *err)
{
    char sql[64], *msg = NULL;
    int rc;

    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", m->version);
    rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, m->sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        sl_errorf(err, -EIO, "store: migration %04d_%s: %s", m->version, m->name,
                  msg ? msg : "failed");
        sqlite3_free(msg);
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return -EIO;
    }
    return 0;
}

static int migrate(struct sl_sqlite *s, struct sl_error *err)
{
    const int latest = (int)sl_sqlite_nmigrations;
    sqlite3_stmt *q = NULL;
    int version = 0;

    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
        return sl_errorf(err, -EIO, "store: %s", sqlite3_errmsg(s->db));
    if (sqlite3_step(q) == SQLITE_ROW)
        version = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (version > latest)
        return sl_errorf(err, -EPROTO,
                         "store: schema version %d is newer than this sluiced (%d)",
                         version, latest);
    for (int v = version; v < latest; v++)
        if (migrate_one(s, &sl_sqlite_migrations[v], err) < 0)
            return -EIO;
    return 0;
}

/* Process-wide SQLite settings, before its first use: no memory statistics
 * (they put a global mutex around every allocation). */
static void global_init(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* Open the database file and set the connection's pragmas. */
static int open_db(struct sl_sqlite *s, const char *path, struct sl_error *err)
{
    char pragmas[256], *msg = NULL;
    int flags = SQLITE_OPEN_NOMUTEX |
                (s->writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                           : SQLITE_OPEN_READONLY);

    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK)
        return sl_errorf(err, -EIO, "store: open %s: %s", path,
                         s->db ? sqlite3_errmsg(s->db) : "out of memory");
    sqlite3_busy_timeout(s->db, 5000);
    snprintf(pragmas, sizeof(pragmas),
             "%sPRAGMA synchronous=%s; PRAGMA foreign_keys=ON;"
             "PRAGMA temp_store=MEMORY;",
             s->writer ? "PRAGMA journal_mode=WAL; " : "",
             s->sync_full ? "FULL" : "NORMAL");
    if (sqlite3_exec(s->db, pragmas, NULL, NULL, &msg) != SQLITE_OK) {
        sl_errorf(err, -EIO, "store: %s: %s", path, msg ? msg : "pragma failed");
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

struct sl_store *sl_sqlite_open(const char *path, bool writer, bool sync_full,
                                struct sl_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    struct sl_sqlite *s = NULL;

    pthread_once(&once, global_init);
    if (!(s = calloc(1, sizeof(*s)))) {
        sl_errorf(err, -ENOMEM, "store: out of memory");
        errno = ENOMEM;
        return NULL;
    }
    s->base.ops = &sqlite_ops;
    s->writer = writer;
    s->sync_full = sync_full;
    s->wal_fd = -1;
    atomic_init(&s->committed, 0);
    pthread_mutex_init(&s->sync_mu, NULL);
    if (open_db(s, path, err) < 0 || (writer && migrate(s, err) < 0) ||
        (writer && sl_sqlite_wal_open(s, err) < 0)) {
        sqlite_close(&s->base);
        errno = EIO;
        return NULL;
    }
    return &s->base;
}

static void finalize_all(sqlite3_stmt **q, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sqlite3_finalize(q[i]);
}

static void sqlite_close(struct sl_store *st)
{
    struct sl_sqlite *s = sl_sqlite_of(st);

    sl_sqlite_wal_close(s);
    finalize_all(s->core, SQ_CORE_N);
    finalize_all(s->catalog, SQ_CATALOG_N);
    finalize_all(s->jobs, SQ_JOBS_N);
    finalize_all(s->gov, SQ_GOV_N);
    finalize_all(s->meter, SQ_METER_N);
    finalize_all(s->audit, SQ_AUDIT_N);
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->sync_mu);
    free(s);
}

/* ---- several daemons: not on SQLite ------------------------------------- */

/* An SQLite store is one host's: its lock file keeps a second daemon off
 * it, so there is no lease to hold (store.h). */
static int sqlite_ha_tick(struct sl_store *st, const char *name, const char *url,
                          int64_t lease_ms, int64_t *epoch, struct sl_ha_lease *lease)
{
    (void)st, (void)name, (void)url, (void)lease_ms, (void)epoch, (void)lease;
    return -ENOTSUP;
}

static int sqlite_ha_release(struct sl_store *st, const char *name, int64_t epoch)
{
    (void)st, (void)name, (void)epoch;
    return -ENOTSUP;
}

static int sqlite_ha_lease_get(struct sl_store *st, struct sl_ha_lease *lease)
{
    (void)st, (void)lease;
    return -ENOTSUP;
}

static int sqlite_ha_member_scan(struct sl_store *st,
                                 int (*fn)(void *arg, const struct sl_ha_member_row *r),
                                 void *arg)
{
    (void)st, (void)fn, (void)arg;
    return -ENOTSUP;
}

static int sqlite_fence(struct sl_store *st, int64_t epoch)
{
    (void)st;
    return epoch ? -ENOTSUP : 0;
}

/* The table store.c dispatches through (store.h, struct sl_store_ops). */
static const struct sl_store_ops sqlite_ops = {
    .name = "sqlite",
    .close = sqlite_close,
    .checkpointer_start = sl_sqlite_checkpointer_start,

    .begin = sqlite_begin,
    .commit = sqlite_commit,
    .rollback = sqlite_rollback,
    .savepoint = sqlite_savepoint,
    .release = sqlite_release,
    .rollback_to = sqlite_rollback_to,
    .sync = sl_sqlite_sync,

    .meta_get = sqlite_meta_get,
    .meta_set = sqlite_meta_set,
    .team_upsert = sl_sqlite_team_upsert,
    .cohort_upsert = sl_sqlite_cohort_upsert,
    .queue_upsert = sl_sqlite_queue_upsert,
    .pclass_upsert = sl_sqlite_pclass_upsert,
    .user_upsert = sl_sqlite_user_upsert,
    .catalog_del = sl_sqlite_catalog_del,
    .user_tokens_live = sl_sqlite_user_tokens_live,
    .load = sl_sqlite_load,
    .team_scan = sl_sqlite_team_scan,
    .pclass_scan = sl_sqlite_pclass_scan,

    .token_insert = sl_sqlite_token_insert,
    .token_lookup = sl_sqlite_token_lookup,
    .token_info = sl_sqlite_token_info,
    .token_revoke = sl_sqlite_token_revoke,
    .tokens_revoke_job = sl_sqlite_tokens_revoke_job,
    .token_scan = sl_sqlite_token_scan,

    .job_insert = sl_sqlite_job_insert,
    .job_max_id = sl_sqlite_job_max_id,
    .job_update = sl_sqlite_job_update,
    .job_read = sl_sqlite_job_read,
    .job_scan = sl_sqlite_job_scan,
    .job_lineage = sl_sqlite_job_lineage,
    .job_respec = sl_sqlite_job_respec,
    .job_lineage_get = sl_sqlite_job_lineage_get,
    .event_add = sl_sqlite_event_add,
    .event_scan = sl_sqlite_event_scan,
    .attempt_put = sl_sqlite_attempt_put,
    .attempt_scan = sl_sqlite_attempt_scan,

    .usage_open = sl_sqlite_usage_open,
    .usage_close = sl_sqlite_usage_close,
    .usage_mark_idle = sl_sqlite_usage_mark_idle,
    .usage_scan = sl_sqlite_usage_scan,
    .history_scan = sl_sqlite_history_scan,
    .budget_upsert = sl_sqlite_budget_upsert,
    .budgets_load = sl_sqlite_budgets_load,
    .budget_event_add = sl_sqlite_budget_event_add,
    .budget_event_scan = sl_sqlite_budget_event_scan,
    .carbon_put = sl_sqlite_carbon_put,
    .carbon_scan = sl_sqlite_carbon_scan,

    .audit_add = sl_sqlite_audit_add,
    .audit_head = sl_sqlite_audit_head,
    .audit_scan = sl_sqlite_audit_scan,
    .audit_checkpoint_put = sl_sqlite_audit_checkpoint_put,
    .audit_checkpoint_last = sl_sqlite_audit_checkpoint_last,

    .obj_put = sl_sqlite_obj_put,
    .obj_get = sl_sqlite_obj_get,
    .obj_del = sl_sqlite_obj_del,
    .objs_each = sl_sqlite_objs_each,

    .ha_tick = sqlite_ha_tick,
    .ha_release = sqlite_ha_release,
    .ha_lease_get = sqlite_ha_lease_get,
    .ha_member_scan = sqlite_ha_member_scan,
    .fence = sqlite_fence,
};
