/*
 * sqlite_int.h - the SQLite backend's shared internals: the connection
 * struct, the prepared statements of each file, small column and binding
 * helpers, and the operations each file implements (store.h has their
 * contracts; sqlite.c puts them in the ops table).
 *
 * Files: sqlite.c (open, close, migrations, transactions, meta, the ops
 * table), sqlite_wal.c (the commit token's sync and the checkpointer),
 * sqlite_catalog.c (teams, cohorts, queues, classes, users, loading),
 * sqlite_jobs.c (jobs, events, lineage), sqlite_gov.c (tokens, governed
 * objects), sqlite_meter.c (usage ledger, budgets, carbon), sqlite_audit.c
 * (the audit log).
 *
 * Statements are prepared once per connection, on first use, and reset
 * after each use. Every function that writes expects the caller to hold a
 * transaction (sl_store_begin) so that a group of requests commits at once.
 * Connections are opened with SQLITE_OPEN_NOMUTEX (multi-thread mode): each
 * is used by one thread at a time. Only sl_sqlite_sync runs beside the
 * writer's thread, and it touches only the fields marked "sync" below.
 */
#ifndef SL_STORE_SQLITE_INT_H
#define SL_STORE_SQLITE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

#include "backend.h"
#include "store.h"

/* Each file's statements: the index into its slots below and into its own
 * table of SQL text. */
enum sq_core_stmt {
    SQ_BEGIN, SQ_COMMIT, SQ_ROLLBACK, SQ_SAVEPOINT, SQ_RELEASE, SQ_ROLLBACK_TO,
    SQ_META_GET, SQ_META_SET, SQ_CORE_N
};
enum sq_catalog_stmt {
    SQ_TEAM_GET, SQ_TEAM_PUT, SQ_COHORT_GET, SQ_COHORT_PUT, SQ_QUEUE_GET, SQ_QUEUE_PUT,
    SQ_PCLASS_GET, SQ_PCLASS_PUT, SQ_PCLASS_UNDEFAULT, SQ_USER_GET, SQ_USER_PUT,
    SQ_TEAMS, SQ_PCLASSES, SQ_TEAM_DEL, SQ_QUEUE_DEL, SQ_COHORT_DEL, SQ_PCLASS_DEL,
    SQ_USER_DEL, SQ_USER_TOKENS_DEL, SQ_BUDGET_DEL, SQ_USER_TOKENS_LIVE, SQ_CATALOG_N
};
enum sq_jobs_stmt {
    SQ_JOB_INSERT, SQ_JOB_UPDATE, SQ_JOB_GET, SQ_JOB_MAX_ID, SQ_JOB_LINEAGE,
    SQ_JOB_LINEAGE_GET, SQ_EVENT_ADD, SQ_EVENTS, SQ_JOB_RESPEC, SQ_ATTEMPT_PUT, SQ_ATTEMPTS,
    SQ_JOBS_N
};
enum sq_gov_stmt {
    SQ_TOKEN_PUT, SQ_TOKEN_GET, SQ_TOKEN_REVOKE, SQ_TOKEN_REVOKE_JOB, SQ_TOKEN_INFO, SQ_OBJ_PUT, SQ_OBJ_GET,
    SQ_OBJ_DEL, SQ_GOV_N
};
enum sq_meter_stmt {
    SQ_USAGE_OPEN, SQ_USAGE_CLOSE, SQ_USAGE_IDLE, SQ_BUDGET_GET, SQ_BUDGET_PUT,
    SQ_BUDGET_EVENT, SQ_CARBON_PUT, SQ_METER_N
};
enum sq_audit_stmt { SQ_AUDIT_ADD, SQ_AUDIT_HEAD, SQ_AUDIT_CKPT_PUT, SQ_AUDIT_N };

struct sl_sqlite_checkpointer; /* sqlite_wal.c */

/* One connection. */
struct sl_sqlite {
    struct sl_store base;         /* first: base.ops = the SQLite table */
    sqlite3 *db;                  /* owned */
    bool writer;
    bool sync_full;               /* synchronous=FULL: commits are durable */
    sqlite3_stmt *core[SQ_CORE_N], *catalog[SQ_CATALOG_N], *jobs[SQ_JOBS_N],
        *gov[SQ_GOV_N], *meter[SQ_METER_N], *audit[SQ_AUDIT_N]; /* owned; NULL
                                     until first used */
    struct sl_sqlite_checkpointer *ck; /* owned; NULL = checkpoints in COMMIT */
    /* Durability (writer). The writer's thread bumps 'committed' after each
     * COMMIT; sync reads it and the fd, and owns the rest under sync_mu. */
    int wal_fd;                   /* sync: the -wal file, O_RDONLY; -1 = none */
    _Atomic uint64_t committed;   /* sync: the last commit's token */
    pthread_mutex_t sync_mu;      /* sync */
    uint64_t synced;              /* sync, under sync_mu: durable up to it */
};

static inline struct sl_sqlite *sl_sqlite_of(struct sl_store *st)
{
    return (struct sl_sqlite *)st;
}

/* ---- helpers (sqlite.c) ---- */

/* An SQLite result code as 0 or a negated errno (store.h's list). */
int sl_sqlite_errno(int rc);
/* The statement in '*slot', prepared from 'sql' on first use and kept for
 * the connection's life. NULL (logged) when SQLite refuses it. */
sqlite3_stmt *sl_sqlite_prep(struct sl_sqlite *s, sqlite3_stmt **slot, const char *sql);
/* Run a prepared statement that returns no rows; resets it and clears its
 * bindings. Returns 0 or -errno. */
int sl_sqlite_step_done(struct sl_sqlite *s, sqlite3_stmt *q);
/* The upsert of the catalog's small named objects, once 'get' has looked
 * for the row (found) and compared it (same) and 'put' is bound: resets
 * 'get', runs 'put' unless unchanged. Returns 1 created, 2 updated,
 * 0 unchanged, or -errno. */
int sl_sqlite_upsert_result(struct sl_sqlite *s, sqlite3_stmt *get, bool found, bool same,
                            sqlite3_stmt *put);

/* Bind 's', or NULL when it is NULL or "". */
static inline void sl_sqlite_bind_text_or_null(sqlite3_stmt *q, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(q, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

/* Bind 'ms', or NULL when it is 0. */
static inline void sl_sqlite_bind_ms_or_null(sqlite3_stmt *q, int i, int64_t ms)
{
    if (ms)
        sqlite3_bind_int64(q, i, ms);
    else
        sqlite3_bind_null(q, i);
}

/* A text column; NULL for NULL. */
static inline const char *sl_sqlite_col_text(sqlite3_stmt *q, int i)
{
    return (const char *)sqlite3_column_text(q, i);
}

/* A text column; "" for NULL. */
static inline const char *sl_sqlite_col_str(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? (const char *)t : "";
}

/* ---- sqlite_wal.c ---- */

/* Writer, at open: open the -wal file for sl_sqlite_sync. */
int sl_sqlite_wal_open(struct sl_sqlite *s, struct sl_error *err);
/* At close: stop the checkpointer (if any) and close the -wal file. */
void sl_sqlite_wal_close(struct sl_sqlite *s);
int sl_sqlite_sync(struct sl_store *st, uint64_t token);
int sl_sqlite_checkpointer_start(struct sl_store *st, int pages, struct sl_error *err);

/* ---- sqlite_catalog.c ---- */

int sl_sqlite_team_upsert(struct sl_store *st, const char *name, const char *default_queue);
int sl_sqlite_cohort_upsert(struct sl_store *st, const char *name, const char *description);
int sl_sqlite_queue_upsert(struct sl_store *st, const char *name, const char *team,
                           const char *spec_json);
int sl_sqlite_pclass_upsert(struct sl_store *st, const char *name, int value,
                            bool preemptible, bool is_default, bool opportunistic,
                            int64_t min_runtime_ms);
int sl_sqlite_user_upsert(struct sl_store *st, const char *name, const char *team,
                          const char *role, const char *unix_user);
int sl_sqlite_load(struct sl_store *st, const struct sl_store_loader *ld);
int sl_sqlite_team_scan(struct sl_store *st,
                        int (*fn)(void *arg, const char *name, const char *default_queue),
                        void *arg);
int sl_sqlite_pclass_scan(struct sl_store *st,
                          int (*fn)(void *arg, const char *name, int value, bool preemptible,
                                    bool is_default, bool opportunistic,
                                    int64_t min_runtime_ms),
                          void *arg);

/* ---- sqlite_jobs.c ---- */

/* The columns row_to_view reads, in its order. */
#define SL_SQLITE_JOB_COLS                                                     \
    "id, name, team, project, user, queue, priority_class, priority, state, "  \
    "exit_code, attempt, retries, submitted_at, started_at, finished_at, "     \
    "placement, message, limits_enforced, spec, not_before, preemptions, "     \
    "intent, intent_at, intent_for, gpus_enforced, array_job_id, array_index, " \
    "hold_by"
/* Fill 'v' from a row of SL_SQLITE_JOB_COLS; strings point into the row.
 * Returns the row's not_before (ms). */
int64_t sl_sqlite_job_row(sqlite3_stmt *q, struct sl_job_view *v);
int sl_sqlite_job_insert(struct sl_store *st, struct sl_job_view *v, int64_t not_before_ms);
int sl_sqlite_job_max_id(struct sl_store *st, int64_t *id);
int sl_sqlite_job_update(struct sl_store *st, const struct sl_job_view *v,
                         int64_t not_before_ms);
int sl_sqlite_job_read(struct sl_store *st, int64_t id, sl_store_job_fn fn, void *arg);
int sl_sqlite_job_scan(struct sl_store *st, const struct sl_store_job_query *q,
                       sl_store_job_fn fn, void *arg, int64_t *next, int64_t *total);
int sl_sqlite_job_lineage(struct sl_store *st, int64_t id, const char *lineage);
int sl_sqlite_job_respec(struct sl_store *st, int64_t id, const char *queue,
                         const char *priority_class, int priority, const char *spec_json);
char *sl_sqlite_job_lineage_get(struct sl_store *st, int64_t id, int *rc);
int sl_sqlite_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms, const char *type,
                        const char *from, const char *to, const char *message);
int sl_sqlite_event_scan(struct sl_store *st, int64_t job_id,
                         int (*fn)(void *arg, const struct sl_store_event_row *r), void *arg);
int sl_sqlite_attempt_put(struct sl_store *st, int64_t job_id, int attempt, int64_t started_ms,
                          const char *after, const char *log_offsets);
int sl_sqlite_attempt_scan(struct sl_store *st, int64_t job_id,
                           int (*fn)(void *arg, const struct sl_store_attempt_row *r),
                           void *arg);

/* ---- sqlite_gov.c ---- */

int sl_sqlite_token_insert(struct sl_store *st, const unsigned char hash[32],
                           const char *user, int64_t expires_ms, const char *label,
                           int64_t job_id, int64_t *id);
int sl_sqlite_token_lookup(struct sl_store *st, const unsigned char hash[32],
                           int64_t now_ms, struct sl_token_who *who);
int sl_sqlite_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                         int64_t *job_id, bool *revoked);
int sl_sqlite_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms);
int sl_sqlite_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms);
int sl_sqlite_token_scan(struct sl_store *st, const char *user, const char *team,
                         const char *manager,
                         int (*fn)(void *arg, const struct sl_store_token_row *r), void *arg);
int sl_sqlite_obj_put(struct sl_store *st, const char *kind, const char *name,
                      const char *spec);
char *sl_sqlite_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc);
int sl_sqlite_obj_del(struct sl_store *st, const char *kind, const char *name);
int sl_sqlite_catalog_del(struct sl_store *st, const char *kind, const char *name);
int sl_sqlite_user_tokens_live(struct sl_store *st, const char *name, int64_t now_ms);
int sl_sqlite_objs_each(struct sl_store *st, const char *kind,
                        int (*fn)(void *arg, const char *name, const char *spec), void *arg);

/* ---- sqlite_meter.c ---- */

int sl_sqlite_usage_open(struct sl_store *st, const struct sl_usage_row *r);
int sl_sqlite_usage_close(struct sl_store *st, const struct sl_usage_row *r);
int sl_sqlite_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms);
int sl_sqlite_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                         const char *team, int64_t job_id,
                         int (*fn)(void *arg, const struct sl_usage_row *r), void *arg);
int sl_sqlite_history_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                           const char *team,
                           int (*usage)(void *arg, const struct sl_usage_row *r),
                           int (*event)(void *arg, const struct sl_history_event *ev),
                           void *arg);
int sl_sqlite_budget_upsert(struct sl_store *st, const char *name, const char *team,
                            const char *spec_json);
int sl_sqlite_budgets_load(struct sl_store *st,
                           int (*fn)(void *arg, const char *name, const char *spec_json),
                           void *arg);
int sl_sqlite_budget_event_add(struct sl_store *st, const char *budget, int64_t period_start,
                               int threshold, int64_t at_ms, double used, double limit);
int sl_sqlite_budget_event_scan(struct sl_store *st, const char *budget,
                                int (*fn)(void *arg,
                                          const struct sl_store_budget_event_row *r),
                                void *arg);
int sl_sqlite_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g);
int sl_sqlite_carbon_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                          int (*fn)(void *arg, const char *site, int64_t hour_ms, double g),
                          void *arg);

/* ---- sqlite_audit.c ---- */

int sl_sqlite_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                        const char *action, const char *object, const char *outcome,
                        const char *line, size_t len, const unsigned char hash[32]);
int sl_sqlite_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32]);
int sl_sqlite_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                         int (*fn)(void *arg, const struct sl_store_audit_row *row),
                         void *arg);
int sl_sqlite_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                                   const char *text);
char *sl_sqlite_audit_checkpoint_last(struct sl_store *st, int *rc);

#endif
