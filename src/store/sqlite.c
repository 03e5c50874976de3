/*
 * sqlite.c - the SQLite store (WAL). See store.h for the contract.
 *
 * Statements are prepared once per connection and reset after each use.
 * Every function that writes expects the caller to hold a transaction
 * (sl_store_begin) so that a group of requests commits with one fsync.
 *
 * Connections are opened with SQLITE_OPEN_NOMUTEX (multi-thread mode):
 * each is used by one thread only. The writer's checkpointer thread has a
 * connection of its own; it shares with the writer only 'ck', under ck.mu.
 */
#include "store.h"

#include "backend.h"
#include "../util/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prepared statements, by role. */
enum stmt {
    S_BEGIN, S_COMMIT, S_ROLLBACK, S_SAVEPOINT, S_RELEASE, S_ROLLBACK_TO,
    S_META_GET, S_META_SET,
    S_TEAM_GET, S_TEAM_PUT, S_QUEUE_GET, S_QUEUE_PUT, S_PCLASS_GET,
    S_PCLASS_PUT, S_PCLASS_UNDEFAULT, S_USER_GET, S_USER_PUT,
    S_TOKEN_PUT, S_TOKEN_GET,
    S_JOB_INSERT, S_JOB_UPDATE, S_JOB_GET, S_EVENT_ADD, S_EVENTS,
    S_TEAMS, S_PCLASSES, S_COHORT_GET, S_COHORT_PUT, S_JOB_MAX_ID,
    S_USAGE_OPEN, S_USAGE_CLOSE, S_USAGE_IDLE, S_BUDGET_GET, S_BUDGET_PUT,
    S_BUDGET_EVENT, S_CARBON_PUT,
    S_AUDIT_ADD, S_AUDIT_HEAD, S_AUDIT_CKPT_PUT, S_OBJ_PUT, S_OBJ_GET, S_OBJ_DEL,
    S_TOKEN_REVOKE, S_TOKEN_INFO, S_JOB_LINEAGE,
    S_NSTMTS
};

#define JOB_COLS                                                               \
    "id, name, team, project, user, queue, priority_class, priority, state, "  \
    "exit_code, attempt, retries, submitted_at, started_at, finished_at, "     \
    "placement, message, limits_enforced, spec, not_before, preemptions, "     \
    "intent, intent_at, intent_for, gpus_enforced"

static const char *const stmt_sql[S_NSTMTS] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SAVEPOINT] = "SAVEPOINT req",
    [S_RELEASE] = "RELEASE req",
    [S_ROLLBACK_TO] = "ROLLBACK TO req",
    [S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [S_META_SET] = "INSERT INTO meta(key, value) VALUES(?1, ?2) "
                   "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [S_TEAM_GET] = "SELECT default_queue FROM teams WHERE name = ?1",
    [S_TEAM_PUT] = "INSERT INTO teams(name, default_queue, created_at) "
                   "VALUES(?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET "
                   "default_queue = excluded.default_queue",
    [S_QUEUE_GET] = "SELECT team, spec FROM queues WHERE name = ?1",
    [S_QUEUE_PUT] = "INSERT INTO queues(name, team, created_at, spec) VALUES(?1, ?2, ?3, ?4) "
                    "ON CONFLICT(name) DO UPDATE SET team = excluded.team, "
                    "spec = excluded.spec",
    [S_PCLASS_GET] = "SELECT value, preemptible, is_default, opportunistic, "
                     "min_runtime_ms FROM priority_classes WHERE name = ?1",
    [S_PCLASS_PUT] = "INSERT INTO priority_classes(name, value, preemptible, is_default, "
                     "opportunistic, min_runtime_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6) "
                     "ON CONFLICT(name) DO UPDATE SET value = excluded.value, "
                     "preemptible = excluded.preemptible, is_default = excluded.is_default, "
                     "opportunistic = excluded.opportunistic, "
                     "min_runtime_ms = excluded.min_runtime_ms",
    [S_COHORT_GET] = "SELECT description FROM cohorts WHERE name = ?1",
    [S_COHORT_PUT] = "INSERT INTO cohorts(name, description, created_at) VALUES(?1, ?2, ?3) "
                     "ON CONFLICT(name) DO UPDATE SET description = excluded.description",
    [S_PCLASS_UNDEFAULT] = "UPDATE priority_classes SET is_default = 0 "
                           "WHERE name <> ?1 AND is_default = 1",
    [S_USER_GET] = "SELECT team, role, unix_user FROM users WHERE name = ?1",
    [S_USER_PUT] = "INSERT INTO users(name, team, role, unix_user, created_at) "
                   "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) DO UPDATE SET "
                   "team = excluded.team, role = excluded.role, "
                   "unix_user = excluded.unix_user",
    [S_TOKEN_PUT] = "INSERT INTO tokens(hash, user, created_at, expires_at, label, job_id) "
                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [S_TOKEN_GET] = "SELECT u.name, u.team, u.role, u.unix_user, t.job_id, t.rowid "
                    "FROM tokens t JOIN users u ON u.name = t.user WHERE t.hash = ?1 AND "
                    "t.revoked = 0 AND (t.expires_at = 0 OR t.expires_at > ?2)",
    [S_TOKEN_REVOKE] = "UPDATE tokens SET revoked = 1, revoked_at = ?2 WHERE rowid = ?1 "
                       "AND revoked = 0",
    [S_TOKEN_INFO] = "SELECT t.user, u.team, t.job_id, t.revoked FROM tokens t "
                     "JOIN users u ON u.name = t.user WHERE t.rowid = ?1",
    [S_AUDIT_ADD] = "INSERT INTO audit(seq, at, actor, action, object, outcome, line, hash) "
                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_AUDIT_HEAD] = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
    [S_AUDIT_CKPT_PUT] = "INSERT OR REPLACE INTO audit_checkpoints(size, at, text) "
                         "VALUES(?1, ?2, ?3)",
    [S_OBJ_PUT] = "INSERT INTO objects(kind, name, spec, created_at, updated_at) "
                  "VALUES(?1, ?2, ?3, ?4, ?4) ON CONFLICT(kind, name) DO UPDATE SET "
                  "spec = excluded.spec, updated_at = excluded.updated_at "
                  "WHERE spec <> excluded.spec",
    [S_OBJ_GET] = "SELECT spec FROM objects WHERE kind = ?1 AND name = ?2",
    [S_OBJ_DEL] = "DELETE FROM objects WHERE kind = ?1 AND name = ?2",
    [S_JOB_LINEAGE] = "UPDATE jobs SET lineage = ?2 WHERE id = ?1",
    [S_JOB_INSERT] = "INSERT INTO jobs(name, team, project, user, queue, priority_class, "
                     "priority, state, exit_code, attempt, retries, submitted_at, "
                     "started_at, finished_at, placement, message, limits_enforced, "
                     "spec, id, not_before, preemptions, intent, intent_at, intent_for, "
                     "gpus_enforced) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                     "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, "
                     "?24, ?25)",
    [S_JOB_MAX_ID] = "SELECT coalesce(max(id), 0) FROM jobs",
    [S_JOB_UPDATE] = "UPDATE jobs SET state = ?2, exit_code = ?3, attempt = ?4, "
                     "started_at = ?5, finished_at = ?6, placement = ?7, "
                     "message = ?8, limits_enforced = ?9, not_before = ?10, "
                     "preemptions = ?11, intent = ?12, intent_at = ?13, intent_for = ?14, "
                     "gpus_enforced = ?15 WHERE id = ?1",
    [S_JOB_GET] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?1",
    [S_EVENT_ADD] = "INSERT INTO job_events(job_id, at, type, from_state, to_state, "
                    "message) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [S_EVENTS] = "SELECT at, type, from_state, to_state, message FROM job_events "
                 "WHERE job_id = ?1 ORDER BY id",
    [S_TEAMS] = "SELECT name, default_queue FROM teams ORDER BY name",
    [S_PCLASSES] = "SELECT name, value, preemptible, is_default, opportunistic, "
                   "min_runtime_ms FROM priority_classes ORDER BY value DESC, name",
    [S_USAGE_OPEN] = "INSERT INTO usage(job_id, attempt, task, team, project, user, queue, "
                     "node, gpu_model, gpus, ngpus, gpu_milli, cpu_milli, mem_bytes, "
                     "start_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                     "?13, ?14, ?15)",
    [S_USAGE_CLOSE] = "UPDATE usage SET end_ms = ?4, gpu_energy_j = ?5, cpu_energy_j = ?6, "
                      "util = ?7, idle_ms = ?8 WHERE job_id = ?1 AND attempt = ?2 AND "
                      "task = ?3 AND end_ms IS NULL",
    [S_USAGE_IDLE] = "UPDATE usage SET idle = 1, idle_ms = ?2 WHERE job_id = ?1 AND "
                     "end_ms IS NULL",
    [S_BUDGET_GET] = "SELECT spec FROM budgets WHERE name = ?1",
    [S_BUDGET_PUT] = "INSERT INTO budgets(name, team, spec, created_at) VALUES(?1, ?2, ?3, ?4) "
                     "ON CONFLICT(name) DO UPDATE SET team = excluded.team, "
                     "spec = excluded.spec",
    [S_BUDGET_EVENT] = "INSERT OR IGNORE INTO budget_events(budget, period_start, threshold, "
                       "at, used, limit_value) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [S_CARBON_PUT] = "INSERT INTO carbon_hourly(site, hour, g) VALUES(?1, ?2, ?3) "
                     "ON CONFLICT(site, hour) DO UPDATE SET g = excluded.g",
};

/* The writer's checkpointer (sl_store_checkpointer_start). */
struct checkpointer {
    pthread_mutex_t mu;
    pthread_cond_t cond;          /* want or stop was set */
    pthread_cond_t idle;          /* busy was cleared */
    bool want, stop;              /* guarded by mu */
    bool busy;                    /* guarded by mu: a checkpoint runs */
    int done;                     /* guarded by mu: WAL frames copied to the
                                     database by the last checkpoint */
    bool running;                 /* thread started; writer thread only */
    int pages;                    /* wake it at this many new WAL frames */
    sqlite3 *db;                  /* its own connection; its thread only */
    pthread_t thread;
};

struct sl_store {
    sqlite3 *db;
    sqlite3_stmt *stmt[S_NSTMTS];
    bool writer;
    struct checkpointer *ck;      /* owned; NULL = checkpoints in COMMIT */
    /* Durability (writer). The writer's thread bumps 'committed' after each
     * COMMIT; sl_store_sync reads it and the fd, and owns the rest under
     * sync_mu: it never touches the writer's sqlite3 handle. */
    int wal_fd;                   /* the -wal file, O_RDONLY; -1 = none */
    _Atomic uint64_t committed;   /* the last commit's token */
    pthread_mutex_t sync_mu;
    uint64_t synced;              /* under sync_mu: durable up to it */
};

static int rc_from_sqlite(int rc)
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

static sqlite3_stmt *prep(struct sl_store *st, enum stmt s)
{
    if (!st->stmt[s] &&
        sqlite3_prepare_v3(st->db, stmt_sql[s], -1, SQLITE_PREPARE_PERSISTENT,
                           &st->stmt[s], NULL) != SQLITE_OK) {
        sl_error("msg=\"sqlite prepare failed\" sql=\"%.60s\" err=\"%s\"",
                 stmt_sql[s], sqlite3_errmsg(st->db));
        return NULL;
    }
    return st->stmt[s];
}

/* Run a prepared statement that returns no rows; resets it. */
static int step_done(struct sl_store *st, sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        sl_warn("msg=\"sqlite step failed\" err=\"%s\"", sqlite3_errmsg(st->db));
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc_from_sqlite(rc);
}

static json_t *time_or_null(int64_t ms);
static const char *col_str(sqlite3_stmt *q, int i);

static void bind_text_or_null(sqlite3_stmt *q, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(q, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

static void bind_ms_or_null(sqlite3_stmt *q, int i, int64_t ms)
{
    if (ms)
        sqlite3_bind_int64(q, i, ms);
    else
        sqlite3_bind_null(q, i);
}

static int exec_simple(struct sl_store *st, enum stmt s)
{
    sqlite3_stmt *q = prep(st, s);
    return q ? step_done(st, q) : -EIO;
}

int sl_store_begin(struct sl_store *st) { return exec_simple(st, S_BEGIN); }

int sl_store_commit(struct sl_store *st, uint64_t *token)
{
    uint64_t t;
    int rc;

    if ((rc = exec_simple(st, S_COMMIT)) < 0)
        return rc;
    /* Only this thread writes 'committed'; the syncer reads it. */
    t = atomic_load_explicit(&st->committed, memory_order_relaxed) + 1;
    atomic_store_explicit(&st->committed, t, memory_order_release);
    if (token)
        *token = t;
    return 0;
}

/* One fdatasync of the WAL covers every commit whose COMMIT returned before
 * it began, so a sync records the counter as it was just before flushing.
 * SQLite never deletes or replaces the WAL file while the writer is open
 * (a checkpoint restarts it in place), so the fd stays the WAL. */
int sl_store_sync(struct sl_store *st, uint64_t token)
{
    uint64_t upto;
    int rc = 0;

    if (token == 0 || st->wal_fd < 0)
        return 0; /* nothing committed, a reader, or sync_full */
    pthread_mutex_lock(&st->sync_mu);
    if (token > st->synced) {
        upto = atomic_load_explicit(&st->committed, memory_order_acquire);
        if (fdatasync(st->wal_fd) < 0)
            rc = -errno;
        else if (upto > st->synced)
            st->synced = upto;
    }
    pthread_mutex_unlock(&st->sync_mu);
    return rc;
}

int sl_store_rollback(struct sl_store *st) { return exec_simple(st, S_ROLLBACK); }
int sl_store_savepoint(struct sl_store *st) { return exec_simple(st, S_SAVEPOINT); }
int sl_store_release(struct sl_store *st) { return exec_simple(st, S_RELEASE); }
int sl_store_rollback_to(struct sl_store *st)
{
    int rc = exec_simple(st, S_ROLLBACK_TO);
    return rc ? rc : exec_simple(st, S_RELEASE);
}

/* Apply migration 'm' in a transaction of its own, with its version. */
static int migrate_one(struct sl_store *st, const struct sl_store_migration *m,
                       struct sl_error *err)
{
    char sql[64], *msg = NULL;
    int rc;

    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", m->version);
    rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(st->db, m->sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(st->db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        sl_errorf(err, -EIO, "store: migration %04d_%s: %s", m->version, m->name,
                  msg ? msg : "failed");
        sqlite3_free(msg);
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return -EIO;
    }
    return 0;
}

/* The migrations (src/store/migrations/sqlite/NNNN_*.sql, embedded at
 * build time) after PRAGMA user_version, in order. */
static int migrate(struct sl_store *st, struct sl_error *err)
{
    const int latest = (int)sl_sqlite_nmigrations;
    sqlite3_stmt *q = NULL;
    int version = 0;

    if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
        return sl_errorf(err, -EIO, "store: %s", sqlite3_errmsg(st->db));
    if (sqlite3_step(q) == SQLITE_ROW)
        version = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (version > latest)
        return sl_errorf(err, -EPROTO,
                         "store: schema version %d is newer than this sluiced (%d)",
                         version, latest);
    for (int v = version; v < latest; v++)
        if (migrate_one(st, &sl_sqlite_migrations[v], err) < 0)
            return -EIO;
    return 0;
}

/* Writer, at open: open the -wal file for sl_store_sync. */
static int wal_open(struct sl_store *st, bool sync_full, struct sl_error *err)
{
    const char *db = sqlite3_db_filename(st->db, "main");
    const char *wal = db && *db ? sqlite3_filename_wal(db) : NULL;

    if (sync_full)
        return 0; /* every COMMIT flushes: nothing for sync to do */
    /* Migrating read the database, which in WAL mode creates the file. */
    if (!wal || !*wal)
        return sl_errorf(err, -EINVAL, "store: no WAL file (not a database on disk)");
    if ((st->wal_fd = open(wal, O_RDONLY | O_CLOEXEC)) < 0)
        return sl_errorf(err, -errno, "store: open %s: %s", wal, strerror(errno));
    return 0;
}

/* Process-wide SQLite settings, before its first use: no memory statistics
 * (they put a global mutex around every allocation). */
static void global_init(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

struct sl_store *sl_store_open(const char *path, bool writer, bool sync_full,
                               struct sl_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    struct sl_store *st = NULL;
    char pragmas[256];
    char *msg = NULL;
    int flags = SQLITE_OPEN_NOMUTEX |
                (writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                        : SQLITE_OPEN_READONLY);

    pthread_once(&once, global_init);
    if (strncmp(path, "postgres://", 11) == 0 ||
        strncmp(path, "postgresql://", 13) == 0) {
        sl_errorf(err, -ENOTSUP,
                  "--store: PostgreSQL is not supported in this release; use a "
                  "SQLite path");
        errno = ENOTSUP;
        return NULL;
    }
    if (strncmp(path, "sqlite:", 7) == 0)
        path += 7;
    if (!(st = calloc(1, sizeof(*st)))) {
        sl_errorf(err, -ENOMEM, "store: out of memory");
        return NULL;
    }
    st->writer = writer;
    st->wal_fd = -1;
    atomic_init(&st->committed, 0);
    pthread_mutex_init(&st->sync_mu, NULL);
    if (sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK) {
        sl_errorf(err, -EIO, "store: open %s: %s", path,
                  st->db ? sqlite3_errmsg(st->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(st->db, 5000);
    snprintf(pragmas, sizeof(pragmas),
             "%sPRAGMA synchronous=%s; PRAGMA foreign_keys=ON;"
             "PRAGMA temp_store=MEMORY;",
             writer ? "PRAGMA journal_mode=WAL; " : "",
             sync_full ? "FULL" : "NORMAL");
    if (sqlite3_exec(st->db, pragmas, NULL, NULL, &msg) != SQLITE_OK) {
        sl_errorf(err, -EIO, "store: %s: %s", path, msg ? msg : "pragma failed");
        sqlite3_free(msg);
        goto fail;
    }
    if (writer && (migrate(st, err) < 0 || wal_open(st, sync_full, err) < 0))
        goto fail;
    return st;
fail:
    sl_store_close(st);
    errno = EIO;
    return NULL;
}

static void checkpointer_stop(struct sl_store *st);

void sl_store_close(struct sl_store *st)
{
    int saved = errno;
    if (!st)
        return;
    checkpointer_stop(st);
    for (int i = 0; i < S_NSTMTS; i++)
        sqlite3_finalize(st->stmt[i]);
    sqlite3_close(st->db);
    if (st->wal_fd >= 0)
        close(st->wal_fd);
    pthread_mutex_destroy(&st->sync_mu);
    free(st);
    errno = saved;
}

/* ---- the checkpointer --------------------------------------------------- */

static void *checkpointer_main(void *arg)
{
    struct checkpointer *ck = arg;

    pthread_setname_np(pthread_self(), "checkpoint");
    for (;;) {
        int rc, nlog = 0, ncopied = 0;
        pthread_mutex_lock(&ck->mu);
        while (!ck->want && !ck->stop)
            pthread_cond_wait(&ck->cond, &ck->mu);
        if (ck->stop) {
            pthread_mutex_unlock(&ck->mu);
            break;
        }
        ck->want = false;
        ck->busy = true;
        pthread_mutex_unlock(&ck->mu);
        /* PASSIVE: copies what no reader still needs, takes no lock that
         * the writer waits for, and calls no busy handler. */
        rc = sqlite3_wal_checkpoint_v2(ck->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog,
                                       &ncopied);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            sl_warn("msg=\"wal checkpoint failed\" err=\"%s\"", sqlite3_errmsg(ck->db));
        pthread_mutex_lock(&ck->mu);
        ck->busy = false;
        if (rc == SQLITE_OK && ncopied > 0)
            ck->done = ncopied;
        pthread_cond_broadcast(&ck->idle);
        pthread_mutex_unlock(&ck->mu);
    }
    return NULL;
}

/* Called by SQLite on the writer's thread after each commit, with the
 * frames now in the WAL ('pages'). Replaces the automatic checkpoint.
 *
 * The thread copies frames to the database once 'ck->pages' new ones have
 * come since its last checkpoint. It rarely finds the WAL wholly copied
 * between two of our commits, and only a wholly copied WAL is reused from
 * its start by the next commit; so once the WAL is 4 times the threshold
 * and the thread has copied all but a few frames, this thread copies the
 * rest itself (little work, two fsyncs) and the WAL starts over. At 16
 * times (the thread is far behind) it waits for the thread's checkpoint to
 * end and checkpoints itself, as SQLite would have: the WAL stays within
 * 16 times the threshold plus one commit, as long as no reader holds an
 * old snapshot. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct checkpointer *ck = arg;
    bool idle, inline_ckpt;
    int behind, ncopied = 0;

    pthread_mutex_lock(&ck->mu);
    if (pages < ck->done)
        ck->done = 0; /* the WAL started over */
    behind = pages - ck->done;
    idle = !ck->want && !ck->busy;
    if (pages >= 16 * ck->pages) {
        while (ck->busy) /* a PASSIVE checkpoint beside it would give up */
            pthread_cond_wait(&ck->idle, &ck->mu);
        inline_ckpt = true;
    } else {
        inline_ckpt = idle && pages >= 4 * ck->pages && behind < ck->pages;
        if (idle && behind >= ck->pages) {
            ck->want = true;
            pthread_cond_signal(&ck->cond);
        }
    }
    pthread_mutex_unlock(&ck->mu);
    if (inline_ckpt &&
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, &ncopied) ==
            SQLITE_OK) {
        pthread_mutex_lock(&ck->mu);
        if (ncopied > ck->done)
            ck->done = ncopied;
        pthread_mutex_unlock(&ck->mu);
    }
    return SQLITE_OK;
}

int sl_store_checkpointer_start(struct sl_store *st, int pages, struct sl_error *err)
{
    struct checkpointer *ck = NULL;
    const char *path;
    char *msg = NULL;
    int rc;

    if (!st->writer || st->ck || pages < 1)
        return sl_errorf(err, -EINVAL, "store: checkpointer: writer only, once");
    if (!sqlite3_threadsafe())
        return sl_errorf(err, -ENOTSUP, "store: checkpointer: SQLite built without threads");
    if (!(path = sqlite3_db_filename(st->db, "main")) || !*path)
        return sl_errorf(err, -EINVAL, "store: checkpointer: no database file");
    if (!(ck = calloc(1, sizeof(*ck))))
        return sl_errorf(err, -ENOMEM, "store: out of memory");
    pthread_mutex_init(&ck->mu, NULL);
    pthread_cond_init(&ck->cond, NULL);
    pthread_cond_init(&ck->idle, NULL);
    ck->pages = pages;
    if (sqlite3_open_v2(path, &ck->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        sqlite3_exec(ck->db, "PRAGMA synchronous=NORMAL", NULL, NULL, &msg) != SQLITE_OK) {
        rc = sl_errorf(err, -EIO, "store: checkpointer: %s",
                       msg ? msg : ck->db ? sqlite3_errmsg(ck->db) : "out of memory");
        sqlite3_free(msg);
        goto fail;
    }
    if ((rc = pthread_create(&ck->thread, NULL, checkpointer_main, ck)) != 0) {
        rc = sl_errorf(err, -rc, "store: checkpointer: %s", strerror(rc));
        goto fail;
    }
    ck->running = true;
    st->ck = ck;
    /* Replaces SQLite's automatic checkpoint (which is itself a WAL hook). */
    sqlite3_wal_hook(st->db, wal_hook, ck);
    return 0;
fail:
    sqlite3_close(ck->db);
    pthread_cond_destroy(&ck->idle);
    pthread_cond_destroy(&ck->cond);
    pthread_mutex_destroy(&ck->mu);
    free(ck);
    return rc;
}

static void checkpointer_stop(struct sl_store *st)
{
    struct checkpointer *ck = st->ck;

    if (!ck)
        return;
    /* Commits checkpoint themselves again from here on. */
    sqlite3_wal_autocheckpoint(st->db, 1000); /* SQLite's default */
    pthread_mutex_lock(&ck->mu);
    ck->stop = true;
    pthread_cond_signal(&ck->cond);
    pthread_mutex_unlock(&ck->mu);
    if (ck->running)
        pthread_join(ck->thread, NULL);
    sqlite3_close(ck->db);
    pthread_cond_destroy(&ck->idle);
    pthread_cond_destroy(&ck->cond);
    pthread_mutex_destroy(&ck->mu);
    free(ck);
    st->ck = NULL;
}

int sl_store_meta_get(struct sl_store *st, const char *key, char *buf,
                      size_t size)
{
    sqlite3_stmt *q = prep(st, S_META_GET);
    int rc = -ENOENT;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW) {
        sl_strlcpy(buf, (const char *)sqlite3_column_text(q, 0), size);
        rc = 0;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

int sl_store_meta_set(struct sl_store *st, const char *key, const char *val)
{
    sqlite3_stmt *q = prep(st, S_META_SET);
    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, val, -1, SQLITE_STATIC);
    return step_done(st, q);
}

/* Compare-then-write for the small named objects: returns 1 created,
 * 2 updated, 0 unchanged. 'same' tells whether the stored row (q_get
 * positioned on it) equals the new values. */
static int upsert_result(struct sl_store *st, sqlite3_stmt *get, bool found,
                         bool same, sqlite3_stmt *put)
{
    int rc;
    sqlite3_reset(get);
    sqlite3_clear_bindings(get);
    if (found && same) {
        sqlite3_clear_bindings(put);
        return 0;
    }
    if ((rc = step_done(st, put)) < 0)
        return rc;
    return found ? 2 : 1;
}

/* Upsert of a row keyed by name with one text column (teams, cohorts). */
static int upsert_name_text(struct sl_store *st, enum stmt get, enum stmt put,
                            const char *name, const char *value)
{
    sqlite3_stmt *g = prep(st, get), *p = prep(st, put);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp((const char *)sqlite3_column_text(g, 0), value) == 0;
    sqlite3_bind_text(p, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, value, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 3, sl_now_ms());
    return upsert_result(st, g, found, same, p);
}

int sl_store_team_upsert(struct sl_store *st, const char *name,
                         const char *default_queue)
{
    return upsert_name_text(st, S_TEAM_GET, S_TEAM_PUT, name, default_queue);
}

int sl_store_queue_upsert(struct sl_store *st, const char *name,
                          const char *team, const char *spec_json)
{
    sqlite3_stmt *g = prep(st, S_QUEUE_GET), *p = prep(st, S_QUEUE_PUT);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    if (!spec_json)
        spec_json = "{}";
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp((const char *)sqlite3_column_text(g, 0), team) == 0 &&
               strcmp((const char *)sqlite3_column_text(g, 1), spec_json) == 0;
    sqlite3_bind_text(p, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, team, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 3, sl_now_ms());
    sqlite3_bind_text(p, 4, spec_json, -1, SQLITE_STATIC);
    return upsert_result(st, g, found, same, p);
}

int sl_store_cohort_upsert(struct sl_store *st, const char *name,
                           const char *description)
{
    return upsert_name_text(st, S_COHORT_GET, S_COHORT_PUT, name,
                            description ? description : "");
}

int sl_store_pclass_upsert(struct sl_store *st, const char *name, int value,
                           bool preemptible, bool is_default, bool opportunistic,
                           int64_t min_runtime_ms)
{
    sqlite3_stmt *g = prep(st, S_PCLASS_GET), *p = prep(st, S_PCLASS_PUT);
    sqlite3_stmt *u = prep(st, S_PCLASS_UNDEFAULT);
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
    rc = upsert_result(st, g, found, same, p);
    if (rc > 0 && is_default) {
        /* Only one class is the default. */
        int urc;
        sqlite3_bind_text(u, 1, name, -1, SQLITE_STATIC);
        if ((urc = step_done(st, u)) < 0)
            return urc;
    }
    return rc;
}

int sl_store_user_upsert(struct sl_store *st, const char *name,
                         const char *team, const char *role,
                         const char *unix_user)
{
    sqlite3_stmt *g = prep(st, S_USER_GET), *p = prep(st, S_USER_PUT);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp((const char *)sqlite3_column_text(g, 0), team) == 0 &&
               strcmp((const char *)sqlite3_column_text(g, 1), role) == 0 &&
               strcmp((const char *)sqlite3_column_text(g, 2), unix_user) == 0;
    sqlite3_bind_text(p, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, team, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 3, role, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 4, unix_user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 5, sl_now_ms());
    return upsert_result(st, g, found, same, p);
}

static const char *col_text(sqlite3_stmt *q, int i)
{
    return (const char *)sqlite3_column_text(q, i);
}

/* A nullable boolean column: -1 for NULL, else 0 or 1. */
static int col_tristate(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? -1 : sqlite3_column_int(q, i) != 0;
}

/* Fill a view from a row of JOB_COLS. Strings point into the statement. */
static void row_to_view(sqlite3_stmt *q, struct sl_job_view *v)
{
    memset(v, 0, sizeof(*v));
    v->id = sqlite3_column_int64(q, 0);
    v->name = col_text(q, 1);
    v->team = col_text(q, 2);
    v->project = col_text(q, 3);
    v->user = col_text(q, 4);
    v->queue = col_text(q, 5);
    v->priority_class = col_text(q, 6);
    v->priority = sqlite3_column_int(q, 7);
    v->state = (enum sl_job_state)sqlite3_column_int(q, 8);
    v->has_exit_code = sqlite3_column_type(q, 9) != SQLITE_NULL;
    v->exit_code = sqlite3_column_int(q, 9);
    v->attempt = sqlite3_column_int(q, 10);
    v->retries = sqlite3_column_int(q, 11);
    v->submitted_ms = sqlite3_column_int64(q, 12);
    v->started_ms = sqlite3_column_int64(q, 13);
    v->finished_ms = sqlite3_column_int64(q, 14);
    v->placement_json = col_text(q, 15);
    v->message = col_text(q, 16);
    v->limits_enforced = col_tristate(q, 17);
    v->spec_json = col_text(q, 18);
    v->preemptions = sqlite3_column_int(q, 20);
    v->intent = col_text(q, 21);
    v->intent_at_ms = sqlite3_column_int64(q, 22);
    v->intent_for = sqlite3_column_int64(q, 23);
    v->gpus_enforced = col_tristate(q, 24);
}

int sl_store_load(struct sl_store *st, const struct sl_store_loader *ld)
{
    static const char *sql[] = {
        "SELECT name, default_queue FROM teams ORDER BY name",
        "SELECT name, description FROM cohorts ORDER BY name",
        "SELECT name, team, spec FROM queues ORDER BY name",
        "SELECT name, value, preemptible, is_default, opportunistic, min_runtime_ms "
        "FROM priority_classes ORDER BY name",
        "SELECT name, team, role, unix_user FROM users ORDER BY name",
        "SELECT " JOB_COLS " FROM jobs WHERE state IN (0, 1, 5) ORDER BY id",
    };
    int rc = 0;

    for (size_t i = 0; i < SL_ARRAY_LEN(sql) && rc == 0; i++) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(st->db, sql[i], -1, &q, NULL) != SQLITE_OK)
            return -EIO;
        while (rc == 0 && sqlite3_step(q) == SQLITE_ROW) {
            struct sl_job_view v;
            switch (i) {
            case 0:
                rc = ld->team(ld->arg, col_text(q, 0), col_text(q, 1));
                break;
            case 1:
                rc = ld->cohort(ld->arg, col_text(q, 0), col_text(q, 1));
                break;
            case 2:
                rc = ld->queue(ld->arg, col_text(q, 0), col_text(q, 1), col_text(q, 2));
                break;
            case 3:
                rc = ld->pclass(ld->arg, col_text(q, 0), sqlite3_column_int(q, 1),
                                sqlite3_column_int(q, 2), sqlite3_column_int(q, 3),
                                sqlite3_column_int(q, 4), sqlite3_column_int64(q, 5));
                break;
            case 4:
                rc = ld->user(ld->arg, col_text(q, 0), col_text(q, 1),
                              col_text(q, 2), col_text(q, 3));
                break;
            default:
                row_to_view(q, &v);
                rc = ld->job(ld->arg, &v, sqlite3_column_int64(q, 19));
                break;
            }
        }
        sqlite3_finalize(q);
    }
    return rc;
}

int sl_store_token_insert(struct sl_store *st, const unsigned char hash[32],
                          const char *user, int64_t expires_ms, const char *label,
                          int64_t job_id, int64_t *id)
{
    sqlite3_stmt *q = prep(st, S_TOKEN_PUT);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, sl_now_ms());
    sqlite3_bind_int64(q, 4, expires_ms);
    sqlite3_bind_text(q, 5, label ? label : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 6, job_id);
    if ((rc = step_done(st, q)) == 0 && id)
        *id = sqlite3_last_insert_rowid(st->db);
    return rc;
}

int sl_store_token_lookup(struct sl_store *st, const unsigned char hash[32],
                          int64_t now_ms, struct sl_token_who *who)
{
    sqlite3_stmt *q = prep(st, S_TOKEN_GET);
    int rc = -ENOENT;

    if (!q)
        return -EIO;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now_ms);
    if (sqlite3_step(q) == SQLITE_ROW) {
        sl_strlcpy(who->user, col_text(q, 0), sizeof(who->user));
        sl_strlcpy(who->team, col_text(q, 1), sizeof(who->team));
        sl_strlcpy(who->role, col_text(q, 2), sizeof(who->role));
        sl_strlcpy(who->unix_user, col_text(q, 3), sizeof(who->unix_user));
        who->job_id = sqlite3_column_int64(q, 4);
        who->token_id = sqlite3_column_int64(q, 5);
        rc = 0;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

int sl_store_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                        int64_t *job_id, bool *revoked)
{
    sqlite3_stmt *q = prep(st, S_TOKEN_INFO);
    int rc = -ENOENT;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
        sl_strlcpy(user, col_text(q, 0), 64);
        sl_strlcpy(team, col_text(q, 1), 64);
        *job_id = sqlite3_column_int64(q, 2);
        *revoked = sqlite3_column_int(q, 3) != 0;
        rc = 0;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

int sl_store_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms)
{
    sqlite3_stmt *q = prep(st, S_TOKEN_REVOKE);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, now_ms);
    if ((rc = step_done(st, q)) < 0)
        return rc;
    return sqlite3_changes(st->db) ? 0 : -ENOENT;
}

int sl_store_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms)
{
    sqlite3_stmt *q = NULL;
    int rc;

    if (sqlite3_prepare_v2(st->db,
                           "UPDATE tokens SET revoked = 1, revoked_at = ?2 "
                           "WHERE job_id = ?1 AND revoked = 0",
                           -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int64(q, 2, now_ms);
    rc = sqlite3_step(q) == SQLITE_DONE ? sqlite3_changes(st->db) : -EIO;
    sqlite3_finalize(q);
    return rc;
}

json_t *sl_store_tokens(struct sl_store *st, const char *user, const char *team,
                        const char *manager, int *rc)
{
    sqlite3_stmt *q = NULL;
    json_t *arr = json_array();
    int s;

    *rc = 0;
    if (!arr || sqlite3_prepare_v2(st->db,
                                   "SELECT t.rowid, t.user, u.team, t.label, t.job_id, "
                                   "t.created_at, t.expires_at, t.revoked_at, t.revoked "
                                   "FROM tokens t JOIN users u ON u.name = t.user "
                                   "WHERE (?1 IS NULL OR t.user = ?1) AND "
                                   "(?2 IS NULL OR u.team = ?2) AND (?3 IS NULL OR "
                                   "t.user = ?3 OR u.role NOT IN ('admin', 'auditor')) "
                                   "ORDER BY t.rowid",
                                   -1, &q, NULL) != SQLITE_OK) {
        json_decref(arr);
        *rc = arr ? -EIO : -ENOMEM;
        return NULL;
    }
    bind_text_or_null(q, 1, user);
    bind_text_or_null(q, 2, team);
    bind_text_or_null(q, 3, manager);
    while ((s = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t job = sqlite3_column_int64(q, 4);
        json_array_append_new(
            arr, json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b}", "id",
                           (json_int_t)sqlite3_column_int64(q, 0), "user", col_str(q, 1),
                           "team", col_str(q, 2), "label", col_str(q, 3), "job",
                           job ? json_integer(job) : json_null(), "created_at",
                           time_or_null(sqlite3_column_int64(q, 5)), "expires_at",
                           time_or_null(sqlite3_column_int64(q, 6)), "revoked_at",
                           time_or_null(sqlite3_column_int64(q, 7)), "revoked",
                           sqlite3_column_int(q, 8) != 0));
    }
    if (s != SQLITE_DONE)
        *rc = -EIO;
    sqlite3_finalize(q);
    if (*rc < 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

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

int sl_store_job_insert(struct sl_store *st, struct sl_job_view *v,
                        int64_t not_before_ms)
{
    sqlite3_stmt *q = prep(st, S_JOB_INSERT);
    int rc;

    if (!q)
        return -EIO;
    if (v->id > 0)
        sqlite3_bind_int64(q, 19, v->id); /* else NULL: SQLite picks max + 1 */
    sqlite3_bind_int64(q, 20, not_before_ms);
    sqlite3_bind_int(q, 21, v->preemptions);
    sqlite3_bind_text(q, 1, v->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, v->team, -1, SQLITE_STATIC);
    bind_text_or_null(q, 3, v->project);
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
    bind_ms_or_null(q, 13, v->started_ms);
    bind_ms_or_null(q, 14, v->finished_ms);
    bind_text_or_null(q, 15, v->placement_json);
    bind_text_or_null(q, 16, v->message);
    if (v->limits_enforced >= 0)
        sqlite3_bind_int(q, 17, v->limits_enforced);
    sqlite3_bind_text(q, 18, v->spec_json, -1, SQLITE_STATIC);
    bind_intent(q, 22, v);
    if (v->gpus_enforced >= 0)
        sqlite3_bind_int(q, 25, v->gpus_enforced);
    if ((rc = step_done(st, q)) == 0)
        v->id = sqlite3_last_insert_rowid(st->db);
    return rc;
}

int sl_store_job_max_id(struct sl_store *st, int64_t *id)
{
    sqlite3_stmt *q = prep(st, S_JOB_MAX_ID);
    int rc;

    if (!q)
        return -EIO;
    if ((rc = sqlite3_step(q)) == SQLITE_ROW)
        *id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : -EIO;
}

int sl_store_job_update(struct sl_store *st, const struct sl_job_view *v,
                        int64_t not_before_ms)
{
    sqlite3_stmt *q = prep(st, S_JOB_UPDATE);
    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, v->id);
    sqlite3_bind_int(q, 2, v->state);
    if (v->has_exit_code)
        sqlite3_bind_int(q, 3, v->exit_code);
    sqlite3_bind_int(q, 4, v->attempt);
    bind_ms_or_null(q, 5, v->started_ms);
    bind_ms_or_null(q, 6, v->finished_ms);
    bind_text_or_null(q, 7, v->placement_json);
    bind_text_or_null(q, 8, v->message);
    if (v->limits_enforced >= 0)
        sqlite3_bind_int(q, 9, v->limits_enforced);
    sqlite3_bind_int64(q, 10, not_before_ms);
    sqlite3_bind_int(q, 11, v->preemptions);
    bind_intent(q, 12, v);
    if (v->gpus_enforced >= 0)
        sqlite3_bind_int(q, 15, v->gpus_enforced);
    return step_done(st, q);
}

int sl_store_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms,
                       const char *type, const char *from, const char *to,
                       const char *message)
{
    sqlite3_stmt *q = prep(st, S_EVENT_ADD);
    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int64(q, 2, at_ms);
    sqlite3_bind_text(q, 3, type, -1, SQLITE_STATIC);
    bind_text_or_null(q, 4, from);
    bind_text_or_null(q, 5, to);
    bind_text_or_null(q, 6, message);
    return step_done(st, q);
}

static json_t *time_or_null(int64_t ms)
{
    char buf[40];
    return ms ? json_string(sl_time_rfc3339(ms, buf, sizeof(buf))) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

/* Fill v->reason from the caller's hook for a pending job. */
static void with_reason(struct sl_job_view *v, const struct sl_reason_hook *rh,
                        char *buf, size_t size)
{
    if (rh && v->state == SL_JOB_PENDING && rh->fn(rh->arg, v->id, buf, size) == 0)
        v->reason = buf;
}

int sl_store_job_render(struct sl_store *st, int64_t id,
                        const struct sl_reason_hook *rh, struct sl_buf *out,
                        char *team, size_t team_size)
{
    sqlite3_stmt *q = prep(st, S_JOB_GET);
    char reason[200];
    int rc = -ENOENT;

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
        struct sl_job_view v;
        row_to_view(q, &v);
        with_reason(&v, rh, reason, sizeof(reason));
        if (team)
            sl_strlcpy(team, v.team, team_size);
        rc = sl_job_view_render(&v, out);
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

json_t *sl_store_job_get(struct sl_store *st, int64_t id, int *rc)
{
    struct sl_buf b;
    json_t *out = NULL;

    sl_buf_init(&b);
    *rc = sl_store_job_render(st, id, NULL, &b, NULL, 0);
    if (*rc == 0 && !(out = json_loadb(b.data, b.len, 0, NULL)))
        *rc = -ENOMEM;
    sl_buf_fini(&b);
    return out;
}

int sl_store_job_list_render(struct sl_store *st, int64_t after,
                             unsigned state_mask, const char *team, int limit,
                             const struct sl_reason_hook *rh, struct sl_buf *out,
                             int64_t *next)
{
    char sql[512], reason[200];
    size_t n;
    sqlite3_stmt *q = NULL;
    int count = 0, bind = 1;

    *next = 0;
    n = (size_t)snprintf(sql, sizeof(sql),
                         "SELECT " JOB_COLS " FROM jobs WHERE id > ?");
    if (state_mask) {
        bool first = true;
        n += (size_t)snprintf(sql + n, sizeof(sql) - n, " AND state IN (");
        for (int s = 0; s < SL_JOB_NSTATES; s++)
            if (state_mask & (1u << s)) {
                n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%d",
                                      first ? "" : ",", s);
                first = false;
            }
        n += (size_t)snprintf(sql + n, sizeof(sql) - n, ")");
    }
    if (team)
        n += (size_t)snprintf(sql + n, sizeof(sql) - n, " AND team = ?");
    snprintf(sql + n, sizeof(sql) - n, " ORDER BY id LIMIT ?");
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, bind++, after);
    if (team)
        sqlite3_bind_text(q, bind++, team, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, bind, limit + 1);
    sl_buf_add(out, "[", 1);
    while (sqlite3_step(q) == SQLITE_ROW) {
        struct sl_job_view v;
        if (++count > limit)
            break;
        row_to_view(q, &v);
        with_reason(&v, rh, reason, sizeof(reason));
        if (count > 1)
            sl_buf_add(out, ",", 1);
        sl_job_view_render(&v, out);
        *next = v.id;
    }
    sl_buf_add(out, "]", 1);
    if (count <= limit)
        *next = 0;
    sqlite3_finalize(q);
    return out->failed ? -ENOMEM : 0;
}

/* Run statement 's' (binding 'key' to ?1 when it is > 0) and collect one
 * JSON value per row, built by 'row'. */
static json_t *list_rows(struct sl_store *st, enum stmt s, int64_t key,
                         json_t *(*row)(sqlite3_stmt *q), int *rc)
{
    sqlite3_stmt *q = prep(st, s);
    json_t *arr = json_array();

    if (!q || !arr) {
        json_decref(arr);
        *rc = q ? -ENOMEM : -EIO;
        return NULL;
    }
    if (key > 0)
        sqlite3_bind_int64(q, 1, key);
    while (sqlite3_step(q) == SQLITE_ROW)
        json_array_append_new(arr, row(q));
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    *rc = 0;
    return arr;
}

static json_t *event_row(sqlite3_stmt *q)
{
    return json_pack("{s:o, s:s, s:o, s:o, s:o}", "at",
                     time_or_null(sqlite3_column_int64(q, 0)), "type",
                     col_text(q, 1), "from", str_or_null(col_text(q, 2)), "to",
                     str_or_null(col_text(q, 3)), "message",
                     str_or_null(col_text(q, 4)));
}

static json_t *team_row(sqlite3_stmt *q)
{
    return json_pack("{s:s, s:s}", "name", col_text(q, 0), "default_queue",
                     col_text(q, 1));
}

static json_t *pclass_row(sqlite3_stmt *q)
{
    char d[32];
    int64_t ms = sqlite3_column_int64(q, 5);

    snprintf(d, sizeof(d), "%llds", (long long)(ms / 1000));
    return json_pack("{s:s, s:i, s:b, s:b, s:b, s:s}", "name", col_text(q, 0), "value",
                     sqlite3_column_int(q, 1), "preemptible", sqlite3_column_int(q, 2),
                     "default", sqlite3_column_int(q, 3), "opportunistic",
                     sqlite3_column_int(q, 4), "min_runtime", d);
}

json_t *sl_store_events(struct sl_store *st, int64_t job_id, int *rc)
{
    return list_rows(st, S_EVENTS, job_id, event_row, rc);
}

json_t *sl_store_teams(struct sl_store *st, int *rc)
{
    return list_rows(st, S_TEAMS, 0, team_row, rc);
}

json_t *sl_store_pclasses(struct sl_store *st, int *rc)
{
    return list_rows(st, S_PCLASSES, 0, pclass_row, rc);
}



/* ---- the usage ledger, budgets, carbon ---------------------------------- */

int sl_store_usage_open(struct sl_store *st, const struct sl_usage_row *r)
{
    sqlite3_stmt *q = prep(st, S_USAGE_OPEN);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, r->job_id);
    sqlite3_bind_int(q, 2, r->attempt);
    sqlite3_bind_int(q, 3, r->task);
    sqlite3_bind_text(q, 4, r->team, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, r->project ? r->project : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, r->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 7, r->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 8, r->node, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 9, r->gpu_model ? r->gpu_model : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 10, r->gpus ? r->gpus : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 11, r->ngpus);
    sqlite3_bind_int(q, 12, r->gpu_milli);
    sqlite3_bind_int64(q, 13, r->cpu_milli);
    sqlite3_bind_int64(q, 14, r->mem_bytes);
    sqlite3_bind_int64(q, 15, r->start_ms);
    return step_done(st, q);
}

int sl_store_usage_close(struct sl_store *st, const struct sl_usage_row *r)
{
    sqlite3_stmt *q = prep(st, S_USAGE_CLOSE);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, r->job_id);
    sqlite3_bind_int(q, 2, r->attempt);
    sqlite3_bind_int(q, 3, r->task);
    sqlite3_bind_int64(q, 4, r->end_ms);
    if (r->gpu_energy_measured)
        sqlite3_bind_double(q, 5, r->gpu_energy_j);
    else
        sqlite3_bind_null(q, 5);
    if (r->cpu_energy_measured)
        sqlite3_bind_double(q, 6, r->cpu_energy_j);
    else
        sqlite3_bind_null(q, 6);
    if (r->has_util)
        sqlite3_bind_double(q, 7, r->util);
    else
        sqlite3_bind_null(q, 7);
    sqlite3_bind_int64(q, 8, r->idle_ms);
    return step_done(st, q);
}

int sl_store_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms)
{
    sqlite3_stmt *q = prep(st, S_USAGE_IDLE);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int64(q, 2, idle_ms);
    return step_done(st, q);
}

/* A text column, "" for NULL. */
static const char *col_str(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? (const char *)t : "";
}

int sl_store_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                        const char *team, int64_t job_id,
                        int (*fn)(void *arg, const struct sl_usage_row *r), void *arg)
{
#define USAGE_SCAN                                                              \
    "SELECT id, job_id, attempt, task, team, project, user, queue, node, "      \
    "gpu_model, gpus, ngpus, gpu_milli, cpu_milli, mem_bytes, start_ms, "       \
    "coalesce(end_ms, 0), gpu_energy_j, cpu_energy_j, util, idle, idle_ms FROM usage " \
    "WHERE start_ms < ?2 AND (end_ms IS NULL OR end_ms > ?1) "                  \
    "AND (?3 IS NULL OR team = ?3) "
    /* one job's rows through its index, not a scan of the whole window */
    static const char all[] = USAGE_SCAN "AND (?4 = 0 OR job_id = ?4) ORDER BY job_id, id";
    static const char one[] = USAGE_SCAN "AND job_id = ?4 ORDER BY job_id, id";
#undef USAGE_SCAN
    sqlite3_stmt *q = NULL;
    int rc = 0, s;

    if (sqlite3_prepare_v2(st->db, job_id ? one : all, -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, from_ms);
    sqlite3_bind_int64(q, 2, to_ms);
    bind_text_or_null(q, 3, team);
    sqlite3_bind_int64(q, 4, job_id);
    while ((s = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_usage_row r;
        memset(&r, 0, sizeof(r));
        r.id = sqlite3_column_int64(q, 0);
        r.job_id = sqlite3_column_int64(q, 1);
        r.attempt = sqlite3_column_int(q, 2);
        r.task = sqlite3_column_int(q, 3);
        r.team = col_str(q, 4);
        r.project = col_str(q, 5);
        r.user = col_str(q, 6);
        r.queue = col_str(q, 7);
        r.node = col_str(q, 8);
        r.gpu_model = col_str(q, 9);
        r.gpus = col_str(q, 10);
        r.ngpus = sqlite3_column_int(q, 11);
        r.gpu_milli = sqlite3_column_int(q, 12);
        r.cpu_milli = sqlite3_column_int64(q, 13);
        r.mem_bytes = sqlite3_column_int64(q, 14);
        r.start_ms = sqlite3_column_int64(q, 15);
        r.end_ms = sqlite3_column_int64(q, 16);
        if ((r.gpu_energy_measured = sqlite3_column_type(q, 17) != SQLITE_NULL))
            r.gpu_energy_j = sqlite3_column_double(q, 17);
        if ((r.cpu_energy_measured = sqlite3_column_type(q, 18) != SQLITE_NULL))
            r.cpu_energy_j = sqlite3_column_double(q, 18);
        if ((r.has_util = sqlite3_column_type(q, 19) != SQLITE_NULL))
            r.util = sqlite3_column_double(q, 19);
        r.idle = sqlite3_column_int(q, 20) != 0;
        r.idle_ms = sqlite3_column_int64(q, 21);
        if ((rc = fn(arg, &r)) < 0)
            break;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc;
}

int sl_store_budget_upsert(struct sl_store *st, const char *name, const char *team,
                           const char *spec_json)
{
    sqlite3_stmt *g = prep(st, S_BUDGET_GET), *q = prep(st, S_BUDGET_PUT);
    int act = 1, rc;

    if (!g || !q)
        return -EIO;
    sqlite3_bind_text(g, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(g) == SQLITE_ROW)
        act = strcmp(col_str(g, 0), spec_json) == 0 ? 0 : 2;
    sqlite3_reset(g);
    sqlite3_clear_bindings(g);
    if (act == 0)
        return 0;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, team, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, spec_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, sl_now_ms());
    rc = step_done(st, q);
    return rc < 0 ? rc : act;
}

int sl_store_budgets_load(struct sl_store *st,
                          int (*fn)(void *arg, const char *name, const char *spec_json),
                          void *arg)
{
    sqlite3_stmt *q = NULL;
    int rc = 0, s;

    if (sqlite3_prepare_v2(st->db, "SELECT name, spec FROM budgets ORDER BY name", -1, &q,
                           NULL) != SQLITE_OK)
        return -EIO;
    while ((s = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(arg, col_str(q, 0), col_str(q, 1))) < 0)
            break;
    if (rc == 0 && s != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc;
}

int sl_store_budget_event_add(struct sl_store *st, const char *budget,
                              int64_t period_start, int threshold, int64_t at_ms,
                              double used, double limit)
{
    sqlite3_stmt *q = prep(st, S_BUDGET_EVENT);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, budget, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, period_start);
    sqlite3_bind_int(q, 3, threshold);
    sqlite3_bind_int64(q, 4, at_ms);
    sqlite3_bind_double(q, 5, used);
    sqlite3_bind_double(q, 6, limit);
    if ((rc = step_done(st, q)) < 0)
        return rc;
    return sqlite3_changes(st->db) > 0 ? 1 : 0;
}

json_t *sl_store_budget_events(struct sl_store *st, const char *budget, int *rc)
{
    static const char sql[] = "SELECT budget, period_start, threshold, at, used, limit_value "
                              "FROM budget_events WHERE ?1 IS NULL OR budget = ?1 "
                              "ORDER BY id";
    sqlite3_stmt *q = NULL;
    json_t *arr = json_array();
    int s;

    *rc = 0;
    if (!arr || sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK) {
        json_decref(arr);
        *rc = -EIO;
        return NULL;
    }
    bind_text_or_null(q, 1, budget);
    while ((s = sqlite3_step(q)) == SQLITE_ROW)
        json_array_append_new(
            arr, json_pack("{s:s, s:o, s:i, s:o, s:f, s:f}", "budget", col_str(q, 0),
                           "period_start", time_or_null(sqlite3_column_int64(q, 1)),
                           "threshold_percent", sqlite3_column_int(q, 2), "at",
                           time_or_null(sqlite3_column_int64(q, 3)), "used",
                           sqlite3_column_double(q, 4), "limit",
                           sqlite3_column_double(q, 5)));
    if (s != SQLITE_DONE) {
        json_decref(arr);
        arr = NULL;
        *rc = -EIO;
    }
    sqlite3_finalize(q);
    return arr;
}

int sl_store_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g)
{
    sqlite3_stmt *q = prep(st, S_CARBON_PUT);

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, site, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, hour_ms);
    sqlite3_bind_double(q, 3, g);
    return step_done(st, q);
}

int sl_store_carbon_load(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                         struct sl_carbon_hours **out, size_t *n)
{
    static const char sql[] = "SELECT site, min(hour), max(hour) FROM carbon_hourly "
                              "WHERE hour >= ?1 AND hour < ?2 GROUP BY site ORDER BY site";
    static const char rows[] = "SELECT hour, g FROM carbon_hourly WHERE site = ?1 AND "
                               "hour >= ?2 AND hour <= ?3";
    sqlite3_stmt *q = NULL, *r = NULL;
    struct sl_carbon_hours *h = NULL;
    size_t count = 0;
    int rc = 0;

    *out = NULL;
    *n = 0;
    from_ms -= from_ms % 3600000;
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, rows, -1, &r, NULL) != SQLITE_OK) {
        rc = -EIO;
        goto out;
    }
    sqlite3_bind_int64(q, 1, from_ms);
    sqlite3_bind_int64(q, 2, to_ms);
    while (rc == 0 && sqlite3_step(q) == SQLITE_ROW) {
        int64_t lo = sqlite3_column_int64(q, 1), hi = sqlite3_column_int64(q, 2);
        size_t len = (size_t)((hi - lo) / 3600000 + 1);
        struct sl_carbon_hours *nh = realloc(h, (count + 1) * sizeof(*h));
        if (!nh) {
            rc = -ENOMEM;
            break;
        }
        h = nh;
        memset(&h[count], 0, sizeof(h[count]));
        sl_strlcpy(h[count].site, col_str(q, 0), sizeof(h[count].site));
        h[count].start_ms = lo;
        if (!(h[count].g = malloc(len * sizeof(double)))) {
            rc = -ENOMEM;
            break;
        }
        h[count].n = len;
        for (size_t i = 0; i < len; i++)
            h[count].g[i] = NAN;
        count++;
        sqlite3_bind_text(r, 1, h[count - 1].site, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(r, 2, lo);
        sqlite3_bind_int64(r, 3, hi);
        while (sqlite3_step(r) == SQLITE_ROW) {
            int64_t at = sqlite3_column_int64(r, 0);
            if (at % 3600000 == 0)
                h[count - 1].g[(at - lo) / 3600000] = sqlite3_column_double(r, 1);
        }
        sqlite3_reset(r);
    }
out:
    sqlite3_finalize(q);
    sqlite3_finalize(r);
    if (rc < 0) {
        sl_carbon_hours_free(h, count);
        return rc;
    }
    *out = h;
    *n = count;
    return 0;
}

void sl_carbon_hours_free(struct sl_carbon_hours *h, size_t n)
{
    for (size_t i = 0; h && i < n; i++)
        free(h[i].g);
    free(h);
}

/* ---- the audit log and governed objects ------------------------------- */

int sl_store_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                       const char *action, const char *object, const char *outcome,
                       const char *line, size_t len, const unsigned char hash[32])
{
    sqlite3_stmt *q = prep(st, S_AUDIT_ADD);

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
    return step_done(st, q);
}

int sl_store_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32])
{
    sqlite3_stmt *q = prep(st, S_AUDIT_HEAD);
    int s;

    if (!q)
        return -EIO;
    *size = 0;
    memset(hash, 0, 32);
    if ((s = sqlite3_step(q)) == SQLITE_ROW) {
        *size = sqlite3_column_int64(q, 0);
        if (sqlite3_column_bytes(q, 1) == 32)
            memcpy(hash, sqlite3_column_blob(q, 1), 32);
        else
            s = SQLITE_CORRUPT;
    }
    sqlite3_reset(q);
    return s == SQLITE_ROW || s == SQLITE_DONE ? 0 : -EIO;
}

int sl_store_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                        int (*fn)(void *arg, const struct sl_store_audit_row *row),
                        void *arg)
{
    sqlite3_stmt *q = NULL;
    int rc = 0, s, n = 0;

    if (sqlite3_prepare_v2(st->db,
                           "SELECT seq, line, at, actor, action, object, outcome "
                           "FROM audit WHERE seq > ?1 AND "
                           "(?2 IS NULL OR actor = ?2) AND (?3 IS NULL OR action = ?3) AND "
                           "(?4 IS NULL OR object = ?4) AND (?5 = 0 OR at >= ?5) AND "
                           "(?6 = 0 OR at < ?6) AND (?7 IS NULL OR outcome = ?7) "
                           "ORDER BY seq",
                           -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, f->after);
    bind_text_or_null(q, 2, f->actor);
    bind_text_or_null(q, 3, f->action);
    bind_text_or_null(q, 4, f->object);
    sqlite3_bind_int64(q, 5, f->from_ms);
    sqlite3_bind_int64(q, 6, f->to_ms);
    bind_text_or_null(q, 7, f->outcome);
    while ((f->limit <= 0 || n < f->limit) && (s = sqlite3_step(q)) == SQLITE_ROW) {
        struct sl_store_audit_row row = {
            .seq = sqlite3_column_int64(q, 0),
            .line = col_str(q, 1),
            .len = (size_t)sqlite3_column_bytes(q, 1),
            .at_ms = sqlite3_column_int64(q, 2),
            .actor = col_str(q, 3),
            .action = col_str(q, 4),
            .object = col_str(q, 5),
            .outcome = col_str(q, 6),
        };
        n++;
        if ((rc = fn(arg, &row)) != 0)
            break;
    }
    if (rc == 0 && (f->limit <= 0 || n < f->limit) && s != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc < 0 ? rc : 0;
}

int sl_store_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                                  const char *text)
{
    sqlite3_stmt *q = prep(st, S_AUDIT_CKPT_PUT);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, size);
    sqlite3_bind_int64(q, 2, at_ms);
    sqlite3_bind_text(q, 3, text, -1, SQLITE_STATIC);
    return step_done(st, q);
}

char *sl_store_audit_checkpoint_last(struct sl_store *st, int *rc)
{
    sqlite3_stmt *q = NULL;
    char *text = NULL;
    int s;

    *rc = -ENOENT;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT text FROM audit_checkpoints ORDER BY size DESC LIMIT 1",
                           -1, &q, NULL) != SQLITE_OK) {
        *rc = -EIO;
        return NULL;
    }
    if ((s = sqlite3_step(q)) == SQLITE_ROW) {
        *rc = (text = strdup(col_str(q, 0))) ? 0 : -ENOMEM;
    } else if (s != SQLITE_DONE) {
        *rc = -EIO;
    }
    sqlite3_finalize(q);
    return text;
}

int sl_store_obj_put(struct sl_store *st, const char *kind, const char *name,
                     const char *spec)
{
    sqlite3_stmt *g = prep(st, S_OBJ_GET), *p = prep(st, S_OBJ_PUT);
    bool found, same = false;

    if (!g || !p)
        return -EIO;
    sqlite3_bind_text(g, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(g, 2, name, -1, SQLITE_STATIC);
    found = sqlite3_step(g) == SQLITE_ROW;
    if (found)
        same = strcmp(col_str(g, 0), spec) == 0;
    sqlite3_bind_text(p, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(p, 3, spec, -1, SQLITE_STATIC);
    sqlite3_bind_int64(p, 4, sl_now_ms());
    return upsert_result(st, g, found, same, p);
}

char *sl_store_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc)
{
    sqlite3_stmt *q = prep(st, S_OBJ_GET);
    char *spec = NULL;
    int s;

    *rc = -EIO;
    if (!q)
        return NULL;
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    if ((s = sqlite3_step(q)) == SQLITE_ROW)
        *rc = (spec = strdup(col_str(q, 0))) ? 0 : -ENOMEM;
    else
        *rc = s == SQLITE_DONE ? -ENOENT : -EIO;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return spec;
}

int sl_store_obj_del(struct sl_store *st, const char *kind, const char *name)
{
    sqlite3_stmt *q = prep(st, S_OBJ_DEL);
    int rc;

    if (!q)
        return -EIO;
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    if ((rc = step_done(st, q)) < 0)
        return rc;
    return sqlite3_changes(st->db) ? 0 : -ENOENT;
}

int sl_store_objs_each(struct sl_store *st, const char *kind,
                       int (*fn)(void *arg, const char *name, const char *spec), void *arg)
{
    sqlite3_stmt *q = NULL;
    int rc = 0, s;

    if (sqlite3_prepare_v2(st->db,
                           "SELECT name, spec FROM objects WHERE kind = ?1 ORDER BY name",
                           -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    while ((s = sqlite3_step(q)) == SQLITE_ROW)
        if ((rc = fn(arg, col_str(q, 0), col_str(q, 1))) != 0)
            break;
    if (rc == 0 && s != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    return rc < 0 ? rc : 0;
}

int sl_store_job_lineage(struct sl_store *st, int64_t id, const char *lineage)
{
    sqlite3_stmt *q = prep(st, S_JOB_LINEAGE);

    if (!q)
        return -EIO;
    sqlite3_bind_int64(q, 1, id);
    bind_text_or_null(q, 2, lineage);
    return step_done(st, q);
}

char *sl_store_job_lineage_get(struct sl_store *st, int64_t id, int *rc)
{
    sqlite3_stmt *q = NULL;
    char *text = NULL;
    int s;

    if (sqlite3_prepare_v2(st->db, "SELECT lineage FROM jobs WHERE id = ?1", -1, &q,
                           NULL) != SQLITE_OK) {
        *rc = -EIO;
        return NULL;
    }
    sqlite3_bind_int64(q, 1, id);
    if ((s = sqlite3_step(q)) == SQLITE_ROW)
        *rc = (text = strdup(col_str(q, 0))) ? 0 : -ENOMEM;
    else
        *rc = s == SQLITE_DONE ? -ENOENT : -EIO;
    sqlite3_finalize(q);
    return text;
}
