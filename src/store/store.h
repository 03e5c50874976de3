/*
 * store.h - the durable store: SQLite in WAL mode inside the data dir.
 *
 * One writer connection belongs to the daemon's engine thread; every other
 * thread opens its own reader connection (WAL lets readers run beside the
 * writer and see only committed transactions). A struct sl_store is not
 * thread-safe: use one per thread; the one exception is sl_store_sync,
 * which one other thread (the engine's syncer) may call on the writer.
 *
 * Schema changes are numbered migrations (src/store/migrations/sqlite/
 * NNNN_name.sql, embedded at build time) applied in order at open time; the
 * applied version is kept in PRAGMA user_version.
 *
 * PostgreSQL (SPEC.md section 3) is not part of this release: opening a
 * postgres:// URL fails with -ENOTSUP and says so.
 */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/job.h"
#include "../meter/meter.h"
#include "../util/buf.h"
#include "../util/util.h"

struct sl_store;

/* Open (creating and migrating when needed) the store at 'path' ("sqlite:"
 * prefix optional). 'writer' selects the writer connection; 'sync_full'
 * fsyncs every commit (synchronous=FULL) rather than only checkpoints.
 * Returns NULL with 'err' filled. */
struct sl_store *sl_store_open(const char *path, bool writer, bool sync_full,
                               struct sl_error *err);
void sl_store_close(struct sl_store *st); /* NULL-safe */

/* Writer: checkpoint the WAL on a thread of the store's own, with its own
 * connection, instead of in the thread that commits (SQLite's automatic
 * checkpoint runs inside COMMIT: copying pages and two fsyncs). After a
 * commit leaves at least 'pages' frames in the WAL the thread is woken and
 * runs a PASSIVE checkpoint, which never blocks the writer or readers;
 * should it fall behind by 16 times that, the committing thread
 * checkpoints itself, as before. Durability is unchanged: a checkpoint
 * syncs the WAL before it writes the database and the database before the
 * WAL is reused. Stopped by sl_store_close. Returns 0, or -errno with 'err'
 * filled (then commits checkpoint as before). */
int sl_store_checkpointer_start(struct sl_store *st, int pages, struct sl_error *err);

/* Transactions (writer). Savepoints nest inside a transaction so that one
 * refused request in a group commit changes nothing. */
int sl_store_begin(struct sl_store *st);
/* Commit the transaction. *token (may be NULL) receives this commit's
 * token: larger than that of every earlier commit of this connection, and
 * never 0. The commit is visible to readers at once; it is durable once
 * sl_store_sync(token) returned 0 (or at once, when opened with
 * sync_full). On failure the transaction is still open: roll it back. */
int sl_store_commit(struct sl_store *st, uint64_t *token);
int sl_store_rollback(struct sl_store *st);
int sl_store_savepoint(struct sl_store *st);
int sl_store_release(struct sl_store *st);
int sl_store_rollback_to(struct sl_store *st);
/* Make every commit up to and including 'token' durable: one fdatasync of
 * the WAL file, which the writer opened itself at open. A token already
 * synced, 0, a reader, or a store opened with sync_full return 0 at once.
 * Thread-safe against the writer's own thread: one other thread may call
 * it while the writer commits (it never touches the writer's connection),
 * and concurrent calls are serialised. Returns 0 or -errno (then nothing
 * is known to be durable beyond what an earlier call said). */
int sl_store_sync(struct sl_store *st, uint64_t token);

/* meta key/value (writer for set). get returns -ENOENT when absent. */
int sl_store_meta_get(struct sl_store *st, const char *key, char *buf,
                      size_t size);
int sl_store_meta_set(struct sl_store *st, const char *key, const char *val);

/* Teams, cohorts, queues, priority classes, users. upsert returns 1
 * created, 2 updated, 0 unchanged, or -errno. A queue's 'spec_json' is the
 * canonical JSON of its manifest spec (quotas, limits); NULL = "{}". */
int sl_store_team_upsert(struct sl_store *st, const char *name,
                         const char *default_queue);
int sl_store_cohort_upsert(struct sl_store *st, const char *name,
                           const char *description);
int sl_store_queue_upsert(struct sl_store *st, const char *name,
                          const char *team, const char *spec_json);
int sl_store_pclass_upsert(struct sl_store *st, const char *name, int value,
                           bool preemptible, bool is_default, bool opportunistic,
                           int64_t min_runtime_ms);
int sl_store_user_upsert(struct sl_store *st, const char *name,
                         const char *team, const char *role,
                         const char *unix_user);

/* Callbacks for loading everything at start; rows in name order. */
struct sl_store_loader {
    void *arg;
    int (*team)(void *arg, const char *name, const char *default_queue);
    int (*cohort)(void *arg, const char *name, const char *description);
    int (*queue)(void *arg, const char *name, const char *team, const char *spec_json);
    int (*pclass)(void *arg, const char *name, int value, bool preemptible,
                  bool is_default, bool opportunistic, int64_t min_runtime_ms);
    int (*user)(void *arg, const char *name, const char *team,
                const char *role, const char *unix_user);
    /* jobs not in a final state, by id */
    int (*job)(void *arg, const struct sl_job_view *v, int64_t not_before_ms);
};
int sl_store_load(struct sl_store *st, const struct sl_store_loader *ld);

/* Tokens: stored as BLAKE2b-256 hashes, never in clear. A token belongs to
 * a user; a job token (job_id > 0) is also bound to that job and revoked
 * when the job ends. */
struct sl_token_who {
    char user[64], team[64], role[64], unix_user[64];
    int64_t job_id;                /* 0 = a user token */
    int64_t token_id;
};
/* Insert; *id (may be NULL) receives the token's id. */
int sl_store_token_insert(struct sl_store *st, const unsigned char hash[32],
                          const char *user, int64_t expires_ms, const char *label,
                          int64_t job_id, int64_t *id);
/* Looks the token hash up. Returns 0, -ENOENT (unknown, revoked or expired
 * at now_ms) or -EIO. */
int sl_store_token_lookup(struct sl_store *st, const unsigned char hash[32],
                          int64_t now_ms, struct sl_token_who *who);
/* Token 'id': its user and the user's team (>= 64 bytes each), job, state. */
int sl_store_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                        int64_t *job_id, bool *revoked);
/* Returns 0, or -ENOENT when there is no such live token. */
int sl_store_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms);
/* Revoke the tokens of job 'job_id'; returns how many, or -EIO. */
int sl_store_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms);
/* Token descriptions (never the secret) of 'user' and/or 'team' (NULL = any).
 * With 'manager' (NULL = none), what a team-admin of that name manages:
 * the tokens of users with role admin or auditor are left out, but for
 * the manager's own. */
json_t *sl_store_tokens(struct sl_store *st, const char *user, const char *team,
                        const char *manager, int *rc);

/* Jobs (writer). insert writes every column of 'v' (and 'not_before_ms')
 * under id v->id, or under the next free id (max + 1) when v->id is 0,
 * and sets v->id. Returns 0, -EEXIST when the id is taken, or -errno. */
int sl_store_job_insert(struct sl_store *st, struct sl_job_view *v,
                        int64_t not_before_ms);
/* The largest job id stored (0 when there is none). */
int sl_store_job_max_id(struct sl_store *st, int64_t *id);
/* Update the mutable columns of job v->id from 'v'. */
int sl_store_job_update(struct sl_store *st, const struct sl_job_view *v,
                        int64_t not_before_ms);
int sl_store_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms,
                       const char *type, const char *from, const char *to,
                       const char *message);

/* Reads (any connection). The hook supplies the pending reason of a job
 * (kept in the engine's memory, not in the store); it returns 0 and fills
 * buf, or a negative errno when there is none. */
struct sl_reason_hook {
    int (*fn)(void *arg, int64_t id, char *buf, size_t size);
    void *arg;
};

/* Append job 'id' as the API's job object to 'out' and copy its team into
 * 'team' (may be NULL). Returns 0, -ENOENT, -EIO or -ENOMEM. */
int sl_store_job_render(struct sl_store *st, int64_t id,
                        const struct sl_reason_hook *rh, struct sl_buf *out,
                        char *team, size_t team_size);
/* The same job decoded (no reason); a new reference or NULL with *rc. */
json_t *sl_store_job_get(struct sl_store *st, int64_t id, int *rc);
/* Append a JSON array of the jobs with id > after, state in 'state_mask'
 * (bit per state; 0 = all), team (NULL = any), at most 'limit', in id
 * order. *next is the id to continue after, or 0 when there is no more. */
int sl_store_job_list_render(struct sl_store *st, int64_t after,
                             unsigned state_mask, const char *team, int limit,
                             const struct sl_reason_hook *rh, struct sl_buf *out,
                             int64_t *next);
json_t *sl_store_events(struct sl_store *st, int64_t job_id, int *rc);
json_t *sl_store_teams(struct sl_store *st, int *rc);
json_t *sl_store_pclasses(struct sl_store *st, int *rc);

/* The usage ledger (writer, in the transaction of the change it records):
 * open inserts one interval of task r->task of attempt r->attempt from
 * r->start_ms; close ends that open interval at r->end_ms with its
 * measured energy and utilisation (the has_ and _measured flags; NULL
 * otherwise) and r->idle_ms; mark_idle flags a job's open intervals
 * idle-but-allocated, with the idle time so far. */
int sl_store_usage_open(struct sl_store *st, const struct sl_usage_row *r);
int sl_store_usage_close(struct sl_store *st, const struct sl_usage_row *r);
int sl_store_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms);
/* Call fn for each interval overlapping [from_ms, to_ms), of 'team' (NULL =
 * any) and job 'job_id' (0 = any), in job then interval order; the row's
 * strings live until fn returns. Stops at fn's first negative return. */
int sl_store_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                        const char *team, int64_t job_id,
                        int (*fn)(void *arg, const struct sl_usage_row *r), void *arg);

/* Budgets: upsert as the other objects; load calls fn per budget. */
int sl_store_budget_upsert(struct sl_store *st, const char *name, const char *team,
                           const char *spec_json);
int sl_store_budgets_load(struct sl_store *st,
                          int (*fn)(void *arg, const char *name, const char *spec_json),
                          void *arg);
/* A threshold event (80, 100) of a budget's period; once per period and
 * threshold. Returns 1 when added, 0 when it was there already, or -errno. */
int sl_store_budget_event_add(struct sl_store *st, const char *budget,
                              int64_t period_start, int threshold, int64_t at_ms,
                              double used, double limit);
/* Events of 'budget' (NULL = all) as a JSON array. */
json_t *sl_store_budget_events(struct sl_store *st, const char *budget, int *rc);

/* Hourly carbon intensity per site: put one hour (hour_ms a multiple of
 * 3600000); load every site's hours in [from_ms, to_ms) (free with
 * sl_carbon_hours_free). */
int sl_store_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g);
int sl_store_carbon_load(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                         struct sl_carbon_hours **out, size_t *n);
void sl_carbon_hours_free(struct sl_carbon_hours *h, size_t n);

/* The audit log (src/audit/audit.h makes the lines): appended by the
 * engine in the transaction of the change it records. */
int sl_store_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                       const char *action, const char *object, const char *outcome,
                       const char *line, size_t len, const unsigned char hash[32]);
/* The last record's seq and hash; 0 and zeros when the log is empty. */
int sl_store_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32]);
struct sl_audit_filter {
    int64_t after;                 /* records with seq > after */
    int64_t limit;                 /* <= 0 = all */
    const char *actor, *action, *object, *outcome; /* NULL = any */
    int64_t from_ms, to_ms;        /* 0 = open */
};
/* One record as stored: its hashed line and the index columns a search
 * uses (which only the line's hash protects once checked against it:
 * sl_audit_index_check). Strings are valid during the callback only. */
struct sl_store_audit_row {
    int64_t seq, at_ms;
    const char *actor, *action, *object, *outcome;
    const char *line;
    size_t len;
};
/* Calls fn for each matching record in seq order; fn returns non-zero to
 * stop (a negative value is returned). */
int sl_store_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                        int (*fn)(void *arg, const struct sl_store_audit_row *row),
                        void *arg);
int sl_store_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                                  const char *text);
/* The newest stored checkpoint (caller frees), or NULL with *rc -ENOENT. */
char *sl_store_audit_checkpoint_last(struct sl_store *st, int *rc);

/* Governed objects as JSON documents by kind ("Policy", "Dataset", "Scan",
 * "Model") and name. put returns 0 unchanged, 1 created, 2 updated. */
int sl_store_obj_put(struct sl_store *st, const char *kind, const char *name,
                     const char *spec);
char *sl_store_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc);
int sl_store_obj_del(struct sl_store *st, const char *kind, const char *name);
int sl_store_objs_each(struct sl_store *st, const char *kind,
                       int (*fn)(void *arg, const char *name, const char *spec), void *arg);
/* A job's lineage (JSON text: image, code, datasets), set at submission. */
int sl_store_job_lineage(struct sl_store *st, int64_t id, const char *lineage);
char *sl_store_job_lineage_get(struct sl_store *st, int64_t id, int *rc);

#endif
