/*
 * pg_int.h - the PostgreSQL backend's shared internals: the connection
 * struct, statements, parameters, results and the operations each file
 * implements (store.h has their contracts; pg.c puts them in the ops
 * table). The files divide the work as the SQLite backend's do:
 *
 *   pg.c          open (libpq), migrations, transactions and the lease's
 *                 fence, meta, the helpers below, the ops table
 *   pg_catalog.c  teams, cohorts, queues, classes, users, loading
 *   pg_jobs.c     jobs, events, attempts, lineage
 *   pg_gov.c      tokens, governed objects
 *   pg_meter.c    usage ledger, history, budgets, carbon
 *   pg_audit.c    the audit log
 *   pg_ha.c       the leader lease and the members' table (decision 0015)
 *
 * Statements are prepared once per connection, on first use, under a name
 * of their own ("s<id>"), and sent with text parameters. Every value goes
 * as a parameter, never spliced into SQL. Results come back in text form;
 * the sl_pg_get_* helpers parse them.
 *
 * PostgreSQL aborts a transaction at its first failed statement (SQLite
 * goes on), so a statement whose failure the contract expects (a taken
 * key: -EEXIST) is written so that it cannot fail: INSERT ... ON CONFLICT
 * DO NOTHING, and 0 rows is -EEXIST. Any other failure leaves the
 * transaction aborted, and the engine's savepoint (sl_store_rollback_to)
 * or rollback is what recovers it, as store.h allows.
 *
 * A connection is used by one thread at a time; libpq's connections are
 * independent, so each thread opens its own (store.h). sync is a no-op:
 * a COMMIT returns once the server has flushed it (synchronous_commit=on,
 * which open sets for the session).
 */
#ifndef SL_STORE_PG_INT_H
#define SL_STORE_PG_INT_H

#include <libpq-fe.h>
#include <stdatomic.h>

#include "backend.h"
#include "store.h"

/* One statement: static in the file that uses it. 'id' is given on first
 * use (process-wide, atomically) and names the prepared statement on every
 * connection. */
struct sl_pg_stmt {
    const char *sql;              /* $1, $2 ... parameters */
    _Atomic int id;               /* 0 = not yet given */
};

#define SL_PG_STMT(text) {.sql = (text)}

/* Up to SL_PG_MAXP text parameters; numbers are printed into 'num'. */
#define SL_PG_MAXP 32
struct sl_pg_params {
    int n;
    const char *v[SL_PG_MAXP];    /* NULL = SQL NULL */
    char num[SL_PG_MAXP][32];     /* the text of number parameters */
    char *owned[SL_PG_MAXP];      /* heap text (bytea hex); freed by
                                     sl_pg_params_fini */
};

/* One connection. */
struct sl_pg {
    struct sl_store base;         /* first: base.ops = the PostgreSQL table */
    PGconn *conn;                 /* owned */
    bool writer;
    int64_t epoch;                /* the lease's epoch that every write
                                     transaction must still hold (begin's
                                     fence); 0 = no fence (no HA) */
    bool *prepared;               /* by statement id; grown as needed */
    int nprepared;
    uint64_t committed;           /* the last commit's token */
    /* The writer runs in libpq's pipeline mode: statements whose outcome
     * nobody waits for (sl_pg_exec_later) are sent and their results read
     * at the next statement that is waited for, one round trip for all. */
    bool pipeline;
    int queued;                   /* results not yet read */
};

static inline struct sl_pg *sl_pg_of(struct sl_store *st) { return (struct sl_pg *)st; }

/* ---- parameters (pg.c) ---- */

static inline void sl_pg_params_init(struct sl_pg_params *p) { p->n = 0; }
void sl_pg_params_fini(struct sl_pg_params *p);
/* Add a parameter; each returns its number ($N). Past SL_PG_MAXP aborts
 * (a bug in the statement's caller, never input). */
int sl_pg_p_text(struct sl_pg_params *p, const char *s);            /* NULL = NULL */
int sl_pg_p_text_or_null(struct sl_pg_params *p, const char *s);    /* "" = NULL too */
int sl_pg_p_i64(struct sl_pg_params *p, int64_t x);
int sl_pg_p_ms_or_null(struct sl_pg_params *p, int64_t ms);         /* 0 = NULL */
int sl_pg_p_double(struct sl_pg_params *p, double x);               /* round-trips */
int sl_pg_p_bytea(struct sl_pg_params *p, const void *b, size_t n); /* \x hex */

/* ---- running statements (pg.c) ---- */

/* A PostgreSQL failure as 0 or a negated errno (store.h's list): unique
 * violation -EEXIST, serialization failure or deadlock -EBUSY, disk full
 * -ENOSPC, out of memory -ENOMEM, anything else (the connection lost too)
 * -EIO. Logs the server's message at warn. */
int sl_pg_errno(struct sl_pg *p, const PGresult *r);
/* Run 's' with 'pa' (NULL = none) and return its result (PGRES_TUPLES_OK
 * or PGRES_COMMAND_OK), or NULL with '*rc' set to -errno. The caller
 * PQclear()s it. */
PGresult *sl_pg_query(struct sl_pg *p, struct sl_pg_stmt *s, const struct sl_pg_params *pa,
                      int *rc);
/* Run 's' for its effect: the number of rows it touched (>= 0), or -errno. */
int sl_pg_exec(struct sl_pg *p, struct sl_pg_stmt *s, const struct sl_pg_params *pa);
/* Run 's' for its effect without waiting for it (on the writer; elsewhere
 * it is sl_pg_exec): its result is read, and a failure reported, at the
 * next call that waits (sl_pg_query, sl_pg_exec, sl_pg_simple), which then
 * fails. For statements that touch a row known to exist or insert one
 * that cannot conflict: a failure is a broken transaction, not an answer.
 * Returns 0, or -errno when it could not be sent. */
int sl_pg_exec_later(struct sl_pg *p, struct sl_pg_stmt *s, const struct sl_pg_params *pa);
/* Run plain SQL text with no parameters (BEGIN, SAVEPOINT ...): 0 or -errno. */
int sl_pg_simple(struct sl_pg *p, const char *sql);
/* Run SQL text built at run time (placeholders $1..., values in 'pa'),
 * unprepared: as sl_pg_query. For the statements whose text depends on a
 * query's filters (job lists, audit search). */
PGresult *sl_pg_query_text(struct sl_pg *p, const char *sql, const struct sl_pg_params *pa,
                           int *rc);

/* ---- reading results (pg.c) ---- */

/* Text of a column; NULL for NULL. */
static inline const char *sl_pg_get_text(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}
/* Text of a column; "" for NULL. */
static inline const char *sl_pg_get_str(const PGresult *r, int row, int col)
{
    return PQgetvalue(r, row, col); /* libpq gives "" for NULL */
}
/* An integer column; 0 for NULL. */
int64_t sl_pg_get_i64(const PGresult *r, int row, int col);
/* A double column; 0 for NULL. */
double sl_pg_get_double(const PGresult *r, int row, int col);
/* A bytea column into 'out' (exactly 'n' bytes): 0, or -EIO when the
 * column is NULL or not 'n' bytes long. */
int sl_pg_get_bytea(const PGresult *r, int row, int col, void *out, size_t n);

/* ---- pg_catalog.c ---- */

int sl_pg_team_upsert(struct sl_store *st, const char *name, const char *default_queue);
int sl_pg_cohort_upsert(struct sl_store *st, const char *name, const char *description);
int sl_pg_queue_upsert(struct sl_store *st, const char *name, const char *team,
                       const char *spec_json);
int sl_pg_pclass_upsert(struct sl_store *st, const char *name, int value, bool preemptible,
                        bool is_default, bool opportunistic, int64_t min_runtime_ms);
int sl_pg_user_upsert(struct sl_store *st, const char *name, const char *team,
                      const char *role, const char *unix_user);
int sl_pg_catalog_del(struct sl_store *st, const char *kind, const char *name);
int sl_pg_user_tokens_live(struct sl_store *st, const char *name, int64_t now_ms);
int sl_pg_load(struct sl_store *st, const struct sl_store_loader *ld);
int sl_pg_team_scan(struct sl_store *st,
                    int (*fn)(void *arg, const char *name, const char *default_queue),
                    void *arg);
int sl_pg_pclass_scan(struct sl_store *st,
                      int (*fn)(void *arg, const char *name, int value, bool preemptible,
                                bool is_default, bool opportunistic, int64_t min_runtime_ms),
                      void *arg);

/* ---- pg_jobs.c ---- */

/* The columns sl_pg_job_row reads, in its order ("user" quoted). */
#define SL_PG_JOB_COLS                                                          \
    "id, name, team, project, \"user\", queue, priority_class, priority, state, " \
    "exit_code, attempt, retries, submitted_at, started_at, finished_at, "      \
    "placement, message, limits_enforced, spec, not_before, preemptions, "      \
    "intent, intent_at, intent_for, gpus_enforced, array_job_id, array_index, "  \
    "hold_by"
/* Fill 'v' from row 'row' of SL_PG_JOB_COLS; strings point into 'r'.
 * Returns the row's not_before (ms). */
int64_t sl_pg_job_row(const PGresult *r, int row, struct sl_job_view *v);
int sl_pg_job_insert(struct sl_store *st, struct sl_job_view *v, int64_t not_before_ms);
int sl_pg_job_max_id(struct sl_store *st, int64_t *id);
int sl_pg_job_update(struct sl_store *st, const struct sl_job_view *v, int64_t not_before_ms);
int sl_pg_job_read(struct sl_store *st, int64_t id, sl_store_job_fn fn, void *arg);
int sl_pg_job_scan(struct sl_store *st, const struct sl_store_job_query *q, sl_store_job_fn fn,
                   void *arg, int64_t *next, int64_t *total);
int sl_pg_job_lineage(struct sl_store *st, int64_t id, const char *lineage);
int sl_pg_job_respec(struct sl_store *st, int64_t id, const char *queue,
                     const char *priority_class, int priority, const char *spec_json);
char *sl_pg_job_lineage_get(struct sl_store *st, int64_t id, int *rc);
int sl_pg_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms, const char *type,
                    const char *from, const char *to, const char *message);
int sl_pg_event_scan(struct sl_store *st, int64_t job_id,
                     int (*fn)(void *arg, const struct sl_store_event_row *r), void *arg);
int sl_pg_attempt_put(struct sl_store *st, int64_t job_id, int attempt, int64_t started_ms,
                      const char *after, const char *log_offsets);
int sl_pg_attempt_scan(struct sl_store *st, int64_t job_id,
                       int (*fn)(void *arg, const struct sl_store_attempt_row *r), void *arg);

/* ---- pg_gov.c ---- */

int sl_pg_token_insert(struct sl_store *st, const unsigned char hash[32], const char *user,
                       int64_t expires_ms, const char *label, int64_t job_id, int64_t *id);
int sl_pg_token_lookup(struct sl_store *st, const unsigned char hash[32], int64_t now_ms,
                       struct sl_token_who *who);
int sl_pg_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                     int64_t *job_id, bool *revoked);
int sl_pg_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms);
int sl_pg_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms);
int sl_pg_token_scan(struct sl_store *st, const char *user, const char *team,
                     const char *manager,
                     int (*fn)(void *arg, const struct sl_store_token_row *r), void *arg);
int sl_pg_obj_put(struct sl_store *st, const char *kind, const char *name, const char *spec);
char *sl_pg_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc);
int sl_pg_obj_del(struct sl_store *st, const char *kind, const char *name);
int sl_pg_objs_each(struct sl_store *st, const char *kind,
                    int (*fn)(void *arg, const char *name, const char *spec), void *arg);

/* ---- pg_meter.c ---- */

int sl_pg_usage_open(struct sl_store *st, const struct sl_usage_row *r);
int sl_pg_usage_close(struct sl_store *st, const struct sl_usage_row *r);
int sl_pg_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms);
int sl_pg_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms, const char *team,
                     int64_t job_id, int (*fn)(void *arg, const struct sl_usage_row *r),
                     void *arg);
int sl_pg_history_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms, const char *team,
                       int (*usage)(void *arg, const struct sl_usage_row *r),
                       int (*event)(void *arg, const struct sl_history_event *ev), void *arg);
int sl_pg_budget_upsert(struct sl_store *st, const char *name, const char *team,
                        const char *spec_json);
int sl_pg_budgets_load(struct sl_store *st,
                       int (*fn)(void *arg, const char *name, const char *spec_json),
                       void *arg);
int sl_pg_budget_event_add(struct sl_store *st, const char *budget, int64_t period_start,
                           int threshold, int64_t at_ms, double used, double limit);
int sl_pg_budget_event_scan(struct sl_store *st, const char *budget,
                            int (*fn)(void *arg, const struct sl_store_budget_event_row *r),
                            void *arg);
int sl_pg_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g);
int sl_pg_carbon_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                      int (*fn)(void *arg, const char *site, int64_t hour_ms, double g),
                      void *arg);

/* ---- pg_audit.c ---- */

int sl_pg_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                    const char *action, const char *object, const char *outcome,
                    const char *line, size_t len, const unsigned char hash[32]);
int sl_pg_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32]);
int sl_pg_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                     int (*fn)(void *arg, const struct sl_store_audit_row *row), void *arg);
int sl_pg_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                               const char *text);
char *sl_pg_audit_checkpoint_last(struct sl_store *st, int *rc);

/* ---- pg_ha.c ---- */

int sl_pg_ha_tick(struct sl_store *st, const char *name, const char *url, int64_t lease_ms,
                  int64_t *epoch, struct sl_ha_lease *lease);
int sl_pg_ha_release(struct sl_store *st, const char *name, int64_t epoch);
int sl_pg_ha_lease_get(struct sl_store *st, struct sl_ha_lease *lease);
int sl_pg_ha_member_scan(struct sl_store *st,
                         int (*fn)(void *arg, const struct sl_ha_member_row *r), void *arg);

#endif
