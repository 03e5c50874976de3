/*
 * store.h - the durable store: one interface, a backend per database.
 *
 * A backend fills a struct sl_store_ops (one function per operation) and
 * embeds a struct sl_store, whose first member points at that table, at
 * the start of its own connection struct. The sl_store_* functions below
 * are thin dispatchers through the table, plus what every backend shares:
 * choosing the backend by URI (sl_store_open) and turning the rows of the
 * list reads into JSON. The operations and their contracts are documented
 * once, here, above the dispatchers; tests/store/conformance.c checks them
 * against any backend. Backends: SQLite (src/store/sqlite*.c, the default)
 * and PostgreSQL (src/store/pg*.c; see docs/decisions/0006-store-interface.md
 * and 0015-ha-leader-lease.md).
 *
 * Connections. One writer connection belongs to the daemon's engine
 * thread; every other thread opens its own reader connection. A struct
 * sl_store is NOT thread-safe: one thread uses it at a time. The one
 * exception is sl_store_sync, which one other thread (the engine's syncer)
 * may call on the writer while the writer's own thread goes on.
 *
 * What every backend guarantees:
 *   - Writes happen inside a transaction (sl_store_begin ... commit or
 *     rollback) on the writer; a reader never writes.
 *   - A reader sees only committed transactions, each wholly or not at all,
 *     and never blocks or is blocked by the writer for long.
 *   - Savepoints nest inside a transaction: rollback_to undoes everything
 *     since the innermost open savepoint and closes it; release keeps it
 *     and closes it. Either way the enclosing transaction goes on.
 *   - Job ids: an insert without an id takes max(id) + 1 (1 for the first),
 *     never a sequence that skips; an insert with a taken id is -EEXIST and
 *     changes nothing. Usage rows, job events and budget events are read
 *     back in the order they were added.
 *   - Lists come in the order each operation states (name, id, seq ...).
 *   - sl_store_commit returns a token that grows with every commit of that
 *     writer; once sl_store_sync(token) returns 0, that commit and every
 *     earlier one survive a power loss.
 *   - The schema is migrated at open by the writer, as numbered migrations
 *     (src/store/migrations/<backend>/NNNN_*.sql, embedded at build time);
 *     a store newer than this build is refused with -EPROTO.
 *
 * Errors: 0 (or a count, as stated) on success, else a negated errno:
 * -ENOENT absent, -EEXIST a key taken, -EBUSY locked, -ENOSPC full, -ENOMEM,
 * -EIO anything else the database said. On failure an operation changes
 * nothing that the transaction's rollback would not undo.
 */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/job.h"
#include "../meter/history.h"
#include "../meter/meter.h"
#include "../util/util.h"

struct sl_store_ops;

/* The base of every backend's connection: its first member. */
struct sl_store {
    const struct sl_store_ops *ops; /* static; never NULL */
};

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
    /* jobs not in a final state (Pending, Running, Preempted), by id */
    int (*job)(void *arg, const struct sl_job_view *v, int64_t not_before_ms);
};

/* Who a token belongs to (sl_store_token_lookup). */
struct sl_token_who {
    char user[64], team[64], role[64], unix_user[64];
    int64_t job_id;                /* 0 = a user token */
    int64_t token_id;
};

/* One token as listed (never its secret). Strings valid during the
 * callback. Times in ms; 0 = none. */
struct sl_store_token_row {
    int64_t id;
    const char *user, *team, *label; /* "" = none */
    int64_t job_id;                /* 0 = a user token */
    int64_t created_ms, expires_ms, revoked_ms;
    bool revoked;
};

/* One job event. Strings valid during the callback; NULL = none. */
struct sl_store_event_row {
    int64_t at_ms;
    const char *type;              /* never NULL */
    const char *from, *to, *message;
};

/* One started attempt of a job. Strings valid during the callback; NULL =
 * none. */
struct sl_store_attempt_row {
    int attempt;                   /* 0, 1, ... as the job's "attempt" */
    int64_t started_ms;
    const char *after;             /* what ended the attempt before it
                                      (SL_ATTEMPT_AFTER_*); NULL for the first */
    const char *log_offsets;       /* JSON array: where its output begins in
                                      each task's log, bytes by task index */
};

/* One budget threshold event. 'budget' valid during the callback. */
struct sl_store_budget_event_row {
    const char *budget;
    int64_t period_start_ms, at_ms;
    int threshold;                 /* percent: 80, 100 */
    double used, limit;
};

struct sl_audit_filter {
    int64_t after;                 /* records with seq > after */
    int64_t before;                /* and seq < before; 0 = open */
    bool newest_first;             /* descending seq (else ascending) */
    int64_t limit;                 /* <= 0 = all */
    const char *actor, *action, *object, *outcome; /* NULL or "" = any */
    int64_t from_ms, to_ms;        /* 0 = open */
};

/* One audit record as stored: its hashed line and the index columns a
 * search uses (which only the line's hash protects once checked against
 * it: sl_audit_index_check). Strings are valid during the callback only. */
struct sl_store_audit_row {
    int64_t seq, at_ms;
    const char *actor, *action, *object, *outcome;
    const char *line;
    size_t len;
};

/* The leader lease (docs/decisions/0015-ha-leader-lease.md) as read:
 * times are the database's clock, in ms. */
struct sl_ha_lease {
    char holder[128];              /* the leader's name; "" = never held */
    char url[256];                 /* where it serves */
    int64_t epoch;                 /* grows by one at every takeover */
    int64_t renewed_ms, expires_ms;
    int64_t now_ms;                /* the database's clock when read */
};

/* One daemon sharing the store, as its last heartbeat left it. Strings
 * valid during the callback. */
struct sl_ha_member_row {
    const char *name, *url, *role; /* role: "leader" or "follower" */
    int64_t epoch;                 /* the epoch it leads under; 0 = follows */
    int64_t started_ms, seen_ms, now_ms;
};

/* Row callbacks. Each gets the row's strings for the length of the call
 * (borrowed from the backend: copy what must outlive it) and returns 0 to
 * go on or a negative errno to stop; the scan then returns that value. */
typedef int (*sl_store_job_fn)(void *arg, const struct sl_job_view *v);

/* The order of a job list: by one column, ties broken by id. */
enum sl_job_sort {
    SL_JOB_SORT_ID,
    SL_JOB_SORT_SUBMITTED,
    SL_JOB_SORT_STARTED,          /* null (never started) last, either way */
    SL_JOB_SORT_FINISHED,         /* null (not finished) last, either way */
    SL_JOB_SORT_NAME,             /* byte order */
    SL_JOB_SORT_STATE,            /* enum sl_job_state's order: Pending,
                                     Running, Succeeded, Failed, ... */
    SL_JOB_SORT_TEAM,
    SL_JOB_SORT_QUEUE,
    SL_JOB_SORT_USER,
    SL_JOB_SORT_PRIORITY,         /* the number, not the class's name */
    SL_JOB_NSORTS
};

/* Which jobs a list reads (sl_store_job_scan) and in what order. Zero-filled = every job by id ascending, which is no valid
 * scan until 'limit' is set. Strings are borrowed for the call. */
struct sl_store_job_query {
    unsigned state_mask;          /* bit 1 << state; 0 = any */
    const char *team;             /* each of these: exactly this; NULL = any */
    const char *queue;
    const char *user;
    const char *priority_class;
    const char *gpu_model;        /* spec.resources.gpuModels lists it, or an
                                     attempt ran on a GPU of it (the usage
                                     ledger); ASCII case-insensitive */
    const char *name_has;         /* the name holds it, ASCII case-
                                     insensitive, every byte literal ('%'
                                     and '_' too); NULL or "" = any */
    int64_t array_job_id;         /* elements of this array; 0 = any */
    enum sl_job_sort sort;
    bool descending;
    int64_t after;                /* SL_JOB_SORT_ID only: the jobs past this
                                     id in the list's order (ids > after
                                     ascending, < after descending); 0 = from
                                     the first */
    int64_t offset;               /* skip this many of the matching jobs */
    int limit;                    /* >= 1: at most this many */
};

/*
 * The operations table. Every member is set (a backend for which an
 * operation is moot implements it as stated, e.g. sync returns 0). The
 * contract of each is that of the sl_store_* function of the same name
 * below, but for the *_scan members that feed the JSON lists and carbon
 * hours store.c builds, whose contracts are here; 'st' is the backend's own
 * connection (its struct sl_store). A scan calls fn per row, strings
 * borrowed for the call, stops at fn's first non-zero return and returns
 * it; else 0 or -errno. Members, in this order: lifecycle; transactions and
 * durability; meta and the catalog; tokens; jobs; the usage ledger,
 * budgets, carbon; the audit log; governed objects.
 */
struct sl_store_ops {
    const char *name;              /* "sqlite": logs and test names */
    void (*close)(struct sl_store *st);
    int (*checkpointer_start)(struct sl_store *st, int pages, struct sl_error *err);

    int (*begin)(struct sl_store *st);
    int (*commit)(struct sl_store *st, uint64_t *token);
    int (*rollback)(struct sl_store *st);
    int (*savepoint)(struct sl_store *st);
    int (*release)(struct sl_store *st);
    int (*rollback_to)(struct sl_store *st);
    int (*sync)(struct sl_store *st, uint64_t token); /* any one thread */

    int (*meta_get)(struct sl_store *st, const char *key, char *buf, size_t size);
    int (*meta_set)(struct sl_store *st, const char *key, const char *val);
    int (*team_upsert)(struct sl_store *st, const char *name, const char *default_queue);
    int (*cohort_upsert)(struct sl_store *st, const char *name, const char *description);
    int (*queue_upsert)(struct sl_store *st, const char *name, const char *team,
                        const char *spec_json);
    int (*pclass_upsert)(struct sl_store *st, const char *name, int value, bool preemptible,
                         bool is_default, bool opportunistic, int64_t min_runtime_ms);
    int (*user_upsert)(struct sl_store *st, const char *name, const char *team,
                       const char *role, const char *unix_user);
    int (*catalog_del)(struct sl_store *st, const char *kind, const char *name);
    int (*user_tokens_live)(struct sl_store *st, const char *name, int64_t now_ms);
    int (*load)(struct sl_store *st, const struct sl_store_loader *ld);
    /* teams by name (sl_store_teams) */
    int (*team_scan)(struct sl_store *st,
                     int (*fn)(void *arg, const char *name, const char *default_queue),
                     void *arg);
    /* priority classes by value, highest first, then name (sl_store_pclasses) */
    int (*pclass_scan)(struct sl_store *st,
                       int (*fn)(void *arg, const char *name, int value, bool preemptible,
                                 bool is_default, bool opportunistic,
                                 int64_t min_runtime_ms),
                       void *arg);

    int (*token_insert)(struct sl_store *st, const unsigned char hash[32], const char *user,
                        int64_t expires_ms, const char *label, int64_t job_id, int64_t *id);
    int (*token_lookup)(struct sl_store *st, const unsigned char hash[32], int64_t now_ms,
                        struct sl_token_who *who);
    int (*token_info)(struct sl_store *st, int64_t id, char *user, char *team,
                      int64_t *job_id, bool *revoked);
    int (*token_revoke)(struct sl_store *st, int64_t id, int64_t now_ms);
    int (*tokens_revoke_job)(struct sl_store *st, int64_t job_id, int64_t now_ms);
    /* tokens by id, filtered as sl_store_tokens says */
    int (*token_scan)(struct sl_store *st, const char *user, const char *team,
                      const char *manager,
                      int (*fn)(void *arg, const struct sl_store_token_row *r), void *arg);

    int (*job_insert)(struct sl_store *st, struct sl_job_view *v, int64_t not_before_ms);
    int (*job_max_id)(struct sl_store *st, int64_t *id);
    int (*job_update)(struct sl_store *st, const struct sl_job_view *v,
                      int64_t not_before_ms);
    int (*job_read)(struct sl_store *st, int64_t id, sl_store_job_fn fn, void *arg);
    int (*job_scan)(struct sl_store *st, const struct sl_store_job_query *q,
                    sl_store_job_fn fn, void *arg, int64_t *next, int64_t *total);
    int (*job_lineage)(struct sl_store *st, int64_t id, const char *lineage);
    int (*job_respec)(struct sl_store *st, int64_t id, const char *queue,
                      const char *priority_class, int priority, const char *spec_json);
    char *(*job_lineage_get)(struct sl_store *st, int64_t id, int *rc);
    int (*event_add)(struct sl_store *st, int64_t job_id, int64_t at_ms, const char *type,
                     const char *from, const char *to, const char *message);
    /* the events of 'job_id' in the order added (sl_store_events) */
    int (*event_scan)(struct sl_store *st, int64_t job_id,
                      int (*fn)(void *arg, const struct sl_store_event_row *r), void *arg);
    int (*attempt_put)(struct sl_store *st, int64_t job_id, int attempt, int64_t started_ms,
                       const char *after, const char *log_offsets);
    /* the started attempts of 'job_id', in order (sl_store_attempts) */
    int (*attempt_scan)(struct sl_store *st, int64_t job_id,
                        int (*fn)(void *arg, const struct sl_store_attempt_row *r), void *arg);

    int (*usage_open)(struct sl_store *st, const struct sl_usage_row *r);
    int (*usage_close)(struct sl_store *st, const struct sl_usage_row *r);
    int (*usage_mark_idle)(struct sl_store *st, int64_t job_id, int64_t idle_ms);
    int (*usage_scan)(struct sl_store *st, int64_t from_ms, int64_t to_ms, const char *team,
                      int64_t job_id, int (*fn)(void *arg, const struct sl_usage_row *r),
                      void *arg);
    int (*history_scan)(struct sl_store *st, int64_t from_ms, int64_t to_ms, const char *team,
                        int (*usage)(void *arg, const struct sl_usage_row *r),
                        int (*event)(void *arg, const struct sl_history_event *ev), void *arg);
    int (*budget_upsert)(struct sl_store *st, const char *name, const char *team,
                         const char *spec_json);
    int (*budgets_load)(struct sl_store *st,
                        int (*fn)(void *arg, const char *name, const char *spec_json),
                        void *arg);
    int (*budget_event_add)(struct sl_store *st, const char *budget, int64_t period_start,
                            int threshold, int64_t at_ms, double used, double limit);
    /* budget events of 'budget' (NULL = all) in the order added */
    int (*budget_event_scan)(struct sl_store *st, const char *budget,
                             int (*fn)(void *arg, const struct sl_store_budget_event_row *r),
                             void *arg);
    int (*carbon_put)(struct sl_store *st, const char *site, int64_t hour_ms, double g);
    /* every stored hour with from_ms <= hour_ms < to_ms, by site, then hour
     * (sl_store_carbon_load rounds from_ms down and lays the hours out) */
    int (*carbon_scan)(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                       int (*fn)(void *arg, const char *site, int64_t hour_ms, double g),
                       void *arg);

    int (*audit_add)(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                     const char *action, const char *object, const char *outcome,
                     const char *line, size_t len, const unsigned char hash[32]);
    int (*audit_head)(struct sl_store *st, int64_t *size, unsigned char hash[32]);
    int (*audit_scan)(struct sl_store *st, const struct sl_audit_filter *f,
                      int (*fn)(void *arg, const struct sl_store_audit_row *row), void *arg);
    int (*audit_checkpoint_put)(struct sl_store *st, int64_t size, int64_t at_ms,
                                const char *text);
    char *(*audit_checkpoint_last)(struct sl_store *st, int *rc);

    int (*obj_put)(struct sl_store *st, const char *kind, const char *name, const char *spec);
    char *(*obj_get)(struct sl_store *st, const char *kind, const char *name, int *rc);
    int (*obj_del)(struct sl_store *st, const char *kind, const char *name);
    int (*objs_each)(struct sl_store *st, const char *kind,
                     int (*fn)(void *arg, const char *name, const char *spec), void *arg);

    int (*ha_tick)(struct sl_store *st, const char *name, const char *url, int64_t lease_ms,
                   int64_t *epoch, struct sl_ha_lease *lease);
    int (*ha_release)(struct sl_store *st, const char *name, int64_t epoch);
    int (*ha_lease_get)(struct sl_store *st, struct sl_ha_lease *lease);
    /* the members by name (sl_store_ha_members) */
    int (*ha_member_scan)(struct sl_store *st,
                          int (*fn)(void *arg, const struct sl_ha_member_row *r), void *arg);
    int (*fence)(struct sl_store *st, int64_t epoch);
};

/* ---- lifecycle ----------------------------------------------------------- */

/* Open (creating and migrating when needed, for a writer) the store at
 * 'uri': a plain path or "sqlite:PATH" is SQLite; "postgres://..." and
 * "postgresql://..." are PostgreSQL (libpq's URI; the password from
 * PGPASSFILE, PGPASSWORD or the URI, never logged).
 * 'writer' selects the writer connection; 'sync_full' makes every commit
 * durable by itself (SQLite: synchronous=FULL), which leaves sync nothing
 * to do. Returns NULL with 'err' filled and errno set. */
struct sl_store *sl_store_open(const char *uri, bool writer, bool sync_full,
                               struct sl_error *err);
/* Close the connection (stopping the checkpointer). NULL-safe; keeps errno. */
void sl_store_close(struct sl_store *st);

/* Writer: checkpoint the WAL on a thread of the store's own, with its own
 * connection, instead of in the thread that commits (SQLite's automatic
 * checkpoint runs inside COMMIT: copying pages and two fsyncs). After a
 * commit leaves at least 'pages' frames in the WAL the thread is woken and
 * runs a PASSIVE checkpoint, which never blocks the writer or readers;
 * should it fall behind by 16 times that, the committing thread
 * checkpoints itself, as before. Durability is unchanged: a checkpoint
 * syncs the WAL before it writes the database and the database before the
 * WAL is reused. Stopped by sl_store_close. Returns 0, or -errno with 'err'
 * filled (then commits checkpoint as before): -EINVAL on a reader or a
 * second call. A backend without a WAL of its own returns 0. */
int sl_store_checkpointer_start(struct sl_store *st, int pages, struct sl_error *err);

/* ---- transactions and durability (writer) -------------------------------- */

/* Savepoints nest inside a transaction so that one refused request in a
 * group commit changes nothing: rollback_to undoes and closes the
 * innermost savepoint, release closes it keeping its changes. */
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
/* Make every commit up to and including 'token' durable (SQLite: one
 * fdatasync of the WAL, which the store opened itself). A token already
 * synced, 0, a reader, or a store opened with sync_full return 0 at once.
 * Thread-safe against the writer's own thread: one other thread may call
 * it while the writer commits (it never touches the writer's connection),
 * and concurrent calls are serialised. Returns 0 or -errno (then nothing
 * is known to be durable beyond what an earlier call said). */
int sl_store_sync(struct sl_store *st, uint64_t token);

/* ---- meta and the catalog ------------------------------------------------ */

/* meta key/value (writer for set). get copies the value (truncated to
 * 'size') and returns 0, or -ENOENT when absent. */
int sl_store_meta_get(struct sl_store *st, const char *key, char *buf,
                      size_t size);
int sl_store_meta_set(struct sl_store *st, const char *key, const char *val);

/* Teams, cohorts, queues, priority classes, users. upsert returns 1
 * created, 2 updated, 0 unchanged, or -errno. A queue's 'spec_json' is the
 * canonical JSON of its manifest spec (quotas, limits); NULL = "{}". A
 * cohort's NULL description is "". At most one priority class is the
 * default: upserting one with is_default clears it on the others. */
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
/* Delete the catalog row of 'kind' ("Team", "Queue", "Cohort",
 * "PriorityClass", "User", "Budget") named 'name'; a User's tokens (live,
 * revoked or expired) go with it. Jobs, events and the audit log keep the
 * name as text. The caller has checked what refers to it (a team's
 * queues). Returns 0, -ENOENT (no such row), -EINVAL (another kind) or
 * -EIO. */
int sl_store_catalog_del(struct sl_store *st, const char *kind, const char *name);
/* How many tokens of user 'name' are live at 'now_ms' (not revoked, not
 * expired), job tokens included; or -EIO. */
int sl_store_user_tokens_live(struct sl_store *st, const char *name, int64_t now_ms);

/* Call the loader for every team, cohort, queue, priority class, user (in
 * that order, each by name) and every job not in a final state (by id).
 * Stops at a callback's first non-zero return and returns it. */
int sl_store_load(struct sl_store *st, const struct sl_store_loader *ld);

/* Teams by name as [{name, default_queue}]; priority classes by value
 * (highest first) then name as [{name, value, preemptible, default,
 * opportunistic, min_runtime: "<s>s"}]. New reference, or NULL with *rc. */
json_t *sl_store_teams(struct sl_store *st, int *rc);
json_t *sl_store_pclasses(struct sl_store *st, int *rc);

/* ---- tokens -------------------------------------------------------------- */

/* Tokens: stored as BLAKE2b-256 hashes, never in clear. A token belongs to
 * a user; a job token (job_id > 0) is also bound to that job and revoked
 * when the job ends. Insert; *id (may be NULL) receives the token's id
 * (ids grow). expires_ms 0 = never. A hash taken is -EEXIST. */
int sl_store_token_insert(struct sl_store *st, const unsigned char hash[32],
                          const char *user, int64_t expires_ms, const char *label,
                          int64_t job_id, int64_t *id);
/* Looks the token hash up. Returns 0, -ENOENT (unknown, revoked or expired
 * at now_ms: expires_ms <= now_ms) or -EIO. */
int sl_store_token_lookup(struct sl_store *st, const unsigned char hash[32],
                          int64_t now_ms, struct sl_token_who *who);
/* Token 'id': its user and the user's team (>= 64 bytes each), job, state.
 * -ENOENT when there is no such token (revoked ones are found). */
int sl_store_token_info(struct sl_store *st, int64_t id, char *user, char *team,
                        int64_t *job_id, bool *revoked);
/* Returns 0, or -ENOENT when there is no such live token. */
int sl_store_token_revoke(struct sl_store *st, int64_t id, int64_t now_ms);
/* Revoke the live tokens of job 'job_id'; returns how many, or -EIO. */
int sl_store_tokens_revoke_job(struct sl_store *st, int64_t job_id, int64_t now_ms);
/* Token descriptions (never the secret) of 'user' and/or 'team' (NULL = any),
 * by id, as [{id, user, team, label, job, created_at, expires_at,
 * revoked_at, revoked}]. With 'manager' (NULL = none), what a team-admin of
 * that name manages: the tokens of users with role admin or auditor are
 * left out, but for the manager's own. New reference, or NULL with *rc. */
json_t *sl_store_tokens(struct sl_store *st, const char *user, const char *team,
                        const char *manager, int *rc);

/* ---- jobs ---------------------------------------------------------------- */

/* Jobs (writer). insert writes every column of 'v' (and 'not_before_ms')
 * under id v->id, or under the next free id (max + 1) when v->id is 0,
 * and sets v->id. v->reason and v->spec_doc are not stored. Returns 0,
 * -EEXIST when the id is taken, or -errno. */
int sl_store_job_insert(struct sl_store *st, struct sl_job_view *v,
                        int64_t not_before_ms);
/* The largest job id stored (0 when there is none). */
int sl_store_job_max_id(struct sl_store *st, int64_t *id);
/* Update the mutable columns of job v->id from 'v': state, exit code,
 * attempt, times, placement, message, limits and GPUs enforced,
 * not_before, preemptions, intent. An unknown id changes nothing. */
int sl_store_job_update(struct sl_store *st, const struct sl_job_view *v,
                        int64_t not_before_ms);

/* A job's spec changed after submission (sluice update): its queue,
 * priority class and priority and the spec's text (the normalised job
 * document). An unknown id changes nothing. Returns 0 or -errno. */
int sl_store_job_respec(struct sl_store *st, int64_t id, const char *queue,
                        const char *priority_class, int priority, const char *spec_json);

/* Reads (any connection). Call fn once with job 'id' as stored: its
 * strings borrowed from the backend until fn returns; v->reason and
 * v->spec_doc are NULL. Returns fn's return value, -ENOENT (no such job)
 * or -EIO. */
int sl_store_job_read(struct sl_store *st, int64_t id, sl_store_job_fn fn, void *arg);
/* Call fn for each of the jobs that 'q' selects, in its order (ties by id
 * in the same direction), skipping q->offset of them and stopping after
 * q->limit, each borrowed as in sl_store_job_read. *next is the id of the
 * last job handed over when more match, else 0 (in id order it is the
 * 'after' of the next page). With 'total' (may be NULL), *total is how many
 * jobs match q's filters, whatever its after, offset and limit, counted in
 * the same snapshot of the store as the page. Returns 0, fn's first
 * non-zero return (which stops the scan; *total is then 0), -EINVAL for a
 * query out of range (limit < 1, offset or after < 0, an unknown sort,
 * 'after' with a sort other than id), or -EIO. */
int sl_store_job_scan(struct sl_store *st, const struct sl_store_job_query *q,
                      sl_store_job_fn fn, void *arg, int64_t *next, int64_t *total);

/* Job events (writer): appended; read back in the order added. 'from',
 * 'to', 'message' may be NULL (and "" reads back as NULL). */
int sl_store_event_add(struct sl_store *st, int64_t job_id, int64_t at_ms,
                       const char *type, const char *from, const char *to,
                       const char *message);
/* The events of 'job_id' as [{at, type, from, to, message}]. New
 * reference, or NULL with *rc. */
json_t *sl_store_events(struct sl_store *st, int64_t job_id, int *rc);

/* What ended a job's previous attempt, as the next one records it. */
#define SL_ATTEMPT_AFTER_PREEMPTION "preemption"
#define SL_ATTEMPT_AFTER_REQUEUE "requeue"
#define SL_ATTEMPT_AFTER_FAILURE "failure"
#define SL_ATTEMPT_AFTER_LOSS "loss"

/* Attempt 'attempt' of job 'job_id' (writer): set what is given and keep
 * the rest: 'started_ms' (0 = keep), 'after' (what ended the attempt before
 * it, set as the job goes back in line; NULL = keep), 'log_offsets' (a JSON
 * array of byte offsets by task, set as it starts; NULL = keep). Only an
 * attempt with a start is read back. */
int sl_store_attempt_put(struct sl_store *st, int64_t job_id, int attempt,
                         int64_t started_ms, const char *after, const char *log_offsets);
/* The started attempts of 'job_id' as [{attempt, started_at, after,
 * log_offsets: [bytes by task]}], in order. New reference, or NULL with
 * *rc. */
json_t *sl_store_attempts(struct sl_store *st, int64_t job_id, int *rc);

/* A job's lineage (JSON text: image, code, datasets), set at submission;
 * NULL or "" clears it. get returns a copy the caller frees ("" when the
 * job has none), or NULL with *rc -ENOENT (no such job) or -errno. */
int sl_store_job_lineage(struct sl_store *st, int64_t id, const char *lineage);
char *sl_store_job_lineage_get(struct sl_store *st, int64_t id, int *rc);

/* ---- the usage ledger, budgets, carbon ----------------------------------- */

/* The usage ledger (writer, in the transaction of the change it records):
 * open inserts one interval of task r->task of attempt r->attempt from
 * r->start_ms; close ends that open interval at r->end_ms, from
 * r->start_ms (the start opened with, or when the task began where it
 * ran, if its executor says so), with its measured energy and
 * utilisation (the has_ and _measured flags; NULL otherwise) and
 * r->idle_ms; mark_idle flags a job's open intervals
 * idle-but-allocated, with the idle time so far. */
int sl_store_usage_open(struct sl_store *st, const struct sl_usage_row *r);
int sl_store_usage_close(struct sl_store *st, const struct sl_usage_row *r);
int sl_store_usage_mark_idle(struct sl_store *st, int64_t job_id, int64_t idle_ms);
/* Call fn for each interval overlapping [from_ms, to_ms) (open ones have
 * end_ms 0), of 'team' (NULL = any) and job 'job_id' (0 = any), in job
 * then interval order; the row's strings ("" for none) live until fn
 * returns. Stops at fn's first negative return and returns it. */
int sl_store_usage_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                        const char *team, int64_t job_id,
                        int (*fn)(void *arg, const struct sl_usage_row *r), void *arg);

/* The reads behind GET /v1/history (src/meter/history.h), of the jobs of
 * 'team' (NULL = any). First 'usage' for each interval of a GPU (ngpus >
 * 0) overlapping [from_ms, to_ms), with only start_ms, end_ms (0 = open),
 * ngpus, gpu_milli, has_util, util and idle_ms set. Then, from one
 * snapshot, 'event' with SL_HIST_PENDING_NOW (count: the jobs whose state
 * is Pending) and with each of the jobs' transitions whose event is at or
 * after from_ms (to_ms does not bound them; the pending counts are walked
 * back from now): SL_HIST_ENTER for an event into Pending from another
 * state or from none (a submission, a requeue, a retry); SL_HIST_START
 * for one from Pending to Running, its since_ms the time of the job's
 * latest event into Pending before it (0 when there is none);
 * SL_HIST_LEAVE for one from Pending to any other state; SL_HIST_PREEMPT
 * for each "preempt" event (the scheduler told a running job to stop).
 * Events from Pending to Pending (holds, staging, updates) change nothing
 * and are not passed. Rows come in no particular order. Stops at a
 * callback's first negative return and returns it; else 0 or -EIO. */
int sl_store_history_scan(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                          const char *team,
                          int (*usage)(void *arg, const struct sl_usage_row *r),
                          int (*event)(void *arg, const struct sl_history_event *ev),
                          void *arg);

/* Budgets: upsert as the other objects (compared on spec_json); load calls
 * fn per budget by name, stopping at its first negative return. */
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
/* Events of 'budget' (NULL = all) in the order added, as [{budget,
 * period_start, threshold_percent, at, used, limit}]. New reference, or
 * NULL with *rc. */
json_t *sl_store_budget_events(struct sl_store *st, const char *budget, int *rc);

/* Hourly carbon intensity per site: put one hour (hour_ms a multiple of
 * 3600000; a second put replaces it); load every site's hours in
 * [from_ms rounded down to the hour, to_ms), one struct per site by name
 * from its first to its last stored hour, NaN where none (free with
 * sl_carbon_hours_free). */
int sl_store_carbon_put(struct sl_store *st, const char *site, int64_t hour_ms, double g);
int sl_store_carbon_load(struct sl_store *st, int64_t from_ms, int64_t to_ms,
                         struct sl_carbon_hours **out, size_t *n);
void sl_carbon_hours_free(struct sl_carbon_hours *h, size_t n); /* NULL-safe */

/* ---- the audit log ------------------------------------------------------- */

/* The audit log (src/audit/audit.h makes the lines): appended by the
 * engine in the transaction of the change it records; 'seq' is the
 * record's number (a seq taken is -EEXIST). NULL object = "". */
int sl_store_audit_add(struct sl_store *st, int64_t seq, int64_t at_ms, const char *actor,
                       const char *action, const char *object, const char *outcome,
                       const char *line, size_t len, const unsigned char hash[32]);
/* The last record's seq and hash; 0 and zeros when the log is empty. */
int sl_store_audit_head(struct sl_store *st, int64_t *size, unsigned char hash[32]);
/* Calls fn for each record matching 'f' in seq order, at most f->limit;
 * fn returns non-zero to stop (a negative value is returned, a positive
 * one gives 0). */
int sl_store_audit_scan(struct sl_store *st, const struct sl_audit_filter *f,
                        int (*fn)(void *arg, const struct sl_store_audit_row *row),
                        void *arg);
/* Store a signed checkpoint of the log at 'size' records (a second one of
 * the same size replaces it). */
int sl_store_audit_checkpoint_put(struct sl_store *st, int64_t size, int64_t at_ms,
                                  const char *text);
/* The stored checkpoint of the largest size (caller frees), or NULL with
 * *rc -ENOENT (none) or -errno. */
char *sl_store_audit_checkpoint_last(struct sl_store *st, int *rc);

/* ---- governed objects ---------------------------------------------------- */

/* Governed objects as JSON documents by kind ("Policy", "Dataset", "Scan",
 * "Model") and name. put returns 0 unchanged, 1 created, 2 updated. get
 * returns a copy (caller frees) or NULL with *rc -ENOENT or -errno. del
 * returns 0 or -ENOENT. each calls fn per object of 'kind' by name,
 * stopping at its first non-zero return (a negative one is returned). */
int sl_store_obj_put(struct sl_store *st, const char *kind, const char *name,
                     const char *spec);
char *sl_store_obj_get(struct sl_store *st, const char *kind, const char *name, int *rc);
int sl_store_obj_del(struct sl_store *st, const char *kind, const char *name);
int sl_store_objs_each(struct sl_store *st, const char *kind,
                       int (*fn)(void *arg, const char *name, const char *spec), void *arg);

/* ---- several daemons on one store (decision 0015) ------------------------ */

/* Only a store several hosts can share has these (PostgreSQL); the others
 * return -ENOTSUP from each. Each runs in a transaction of its own and
 * must not be called inside one; any connection may (not a reader's).
 *
 * ha_tick: one heartbeat of daemon 'name' serving at 'url'. It records the
 * daemon in the members' table, then: when *epoch is not 0 (this daemon
 * leads under it), renews the lease for lease_ms from the database's
 * clock, or returns -ESTALE when the lease has moved on (the daemon leads
 * no more); when *epoch is 0, takes the lease if it has expired (or was
 * never held) and sets *epoch to the new epoch, one more than the last.
 * A takeover waits for the writer transactions that hold the lease's
 * fence (sl_store_fence) to end. Fills 'lease' with the lease as it is
 * after. Returns 0, -ESTALE, or -errno.
 *
 * ha_release: on a clean stop, let the lease of 'epoch' expire now so that
 * a follower takes over without waiting; and drop the member's row.
 * Returns 0 (also when the lease had moved on already) or -errno.
 *
 * ha_lease_get: the lease as it is (lease->holder "" when never held).
 * ha_member_scan: fn per member by name; stops at fn's first non-zero.
 *
 * fence: on the writer, every transaction begun after this checks that the
 * lease's epoch is still 'epoch' (0: no check) and holds it until its
 * commit, so that a takeover cannot happen in between: sl_store_begin
 * returns -ESTALE when the epoch has moved on. */
int sl_store_ha_tick(struct sl_store *st, const char *name, const char *url, int64_t lease_ms,
                     int64_t *epoch, struct sl_ha_lease *lease);
int sl_store_ha_release(struct sl_store *st, const char *name, int64_t epoch);
int sl_store_ha_lease_get(struct sl_store *st, struct sl_ha_lease *lease);
int sl_store_ha_members(struct sl_store *st,
                        int (*fn)(void *arg, const struct sl_ha_member_row *r), void *arg);
int sl_store_fence(struct sl_store *st, int64_t epoch);

#endif
