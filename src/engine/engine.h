/*
 * engine.h - the daemon's engine: the one thread that changes state.
 *
 * Requests that change state are queued as operations (struct sl_op) from
 * the HTTP thread. The engine thread takes every queued operation at once,
 * applies them in one store transaction (one savepoint each, so a refused
 * request changes nothing), reaps finished tasks, fires timers, runs the
 * scheduler and commits. A second thread, the syncer, then flushes the WAL
 * (fdatasync, with sync_full) and only then completes each operation
 * through its callback: a 2xx answer always follows the durable commit, and
 * the engine works on the next group while the flush runs (group commit).
 *
 * sl_engine_submit and the sl_engine_*_json readers are thread-safe; the
 * rest of the engine is owned by its thread.
 */
#ifndef SL_ENGINE_H
#define SL_ENGINE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/spec.h"
#include "../exec/executor.h"
#include "../exec/gpumon.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/util.h"

struct sl_engine;

/* Who is asking, as resolved from the bearer token. */
struct sl_principal {
    char user[64];
    char team[64];
    char role[64];       /* admin | team-admin | member | viewer | auditor;
                            "job" for a job's own token */
    char unix_user[64];  /* "" = not mapped */
    int64_t job_id;      /* a job token's job; 0 = a user token */
    int64_t token_id;
};

/* The kinds of change, each a row of the operation table (src/engine/ops.c:
 * its scope, audit action, handler and payload). */
enum sl_op_kind {
    SL_OP_SUBMIT,                     /* a job */
    SL_OP_CANCEL,                     /* a job */
    SL_OP_ARRAY_CANCEL,               /* every live element of a job array */
    SL_OP_APPLY,                      /* manifests */
    SL_OP_TOKEN,                      /* create a token */
    SL_OP_REVOKE,                     /* a token */
    SL_OP_CARBON,                     /* a site's hourly carbon intensity */
    SL_OP_SCAN,                       /* an image scan's findings */
    SL_OP_MODEL,                      /* register a model version */
    SL_OP_STAGE,                      /* move a model version to a stage */
    SL_OP_NODE_DRAIN,                 /* a node takes no new work; its
                                         running work finishes */
    SL_OP_NODE_CORDON,                /* a node takes no new work */
    SL_OP_NODE_UNCORDON,              /* a node returns to service */
    SL_OP_DELETE,                     /* a catalog object */
    SL_OP_HOLD,                       /* a pending job is not scheduled */
    SL_OP_RELEASE,                    /* a held job is scheduled again */
    SL_OP_REQUEUE,                    /* a running job back to Pending */
    SL_OP_UPDATE,                     /* a job's class, queue, GPUs,
                                         maxRuntime */
    SL_OP_ATTACH,                     /* a client attaches to an interactive
                                         job's terminal: checked and
                                         recorded (src/engine/attach.c) */
    SL_OP_LOGIN,                      /* a user the identity provider
                                         vouched for: its User from the
                                         group rules, and a token
                                         (src/engine/login.c) */
    SL_OP_AUDIT,                      /* nothing to change: only the record
                                         of a request refused before it
                                         reached the engine (status, code
                                         and err set by the caller) */
    SL_OP_NKINDS
};

/* The payload of each kind; owned by the op, freed by sl_op_fini. */
struct sl_op_submit {
    struct sl_job_spec *spec;
    char *spec_json;                  /* optional: the spec as
                                         sl_job_spec_to_json + json_dumps
                                         (JSON_COMPACT) write it, made by the
                                         caller so that the engine thread
                                         need not; NULL = the engine does */
    bool dry_run;                     /* the verdict, nothing kept */
};
struct sl_op_cancel { int64_t job_id; }; /* SL_OP_ARRAY_CANCEL: the array's id */
/* hold, release, requeue (src/engine/jobctl.c) */
struct sl_op_jobctl {
    int64_t job_id;
    bool hold;                        /* requeue: and hold it */
};
/* update (src/engine/jobupdate.c): the fields the request gives */
struct sl_op_update {
    int64_t job_id;
    int64_t max_runtime_ms;           /* > 0; 0 = unchanged */
    char pclass[64];                  /* priorityClass; "" = unchanged */
    char queue[64];                   /* "" = unchanged */
    bool has_gpus;                    /* resources.gpus was given: */
    int gpus;                         /* whole GPUs per task, 0..64 */
};
struct sl_op_apply {
    struct sl_manifest *manifests;
    size_t n;
    json_t *given;                    /* the documents as written (an
                                         array of n objects; owned), whose
                                         "spec" says which fields each gave;
                                         NULL: none given */
    bool replace;                     /* fields left out take their
                                         defaults (else: refused, 409) */
    bool dry_run;                     /* every check, what would change
                                         ({"diff": [...]}), nothing kept */
};
struct sl_op_delete {
    int kind;                         /* enum sl_manifest_kind */
    char key[160];                    /* its name; a Dataset's name@version */
    bool force;                       /* cancel a queue's jobs, revoke a
                                         user's tokens */
};
struct sl_op_token {
    char user[64];                    /* whose */
    char label[64];
    int64_t expires_ms;               /* 0 = never */
};
struct sl_op_revoke { int64_t token_id; };
struct sl_op_login {
    char user[64];                    /* the login name, a valid name */
    char source[8];                   /* "ldap" or "oidc" */
    char subject[512];                /* its LDAP DN, or OIDC iss + sub */
    char team[64], role[16];          /* the first rule that matched;
                                         "" = none: the user is
                                         deprovisioned (its tokens revoked)
                                         and refused */
    json_t *groups;                   /* the groups the provider gave
                                         (owned): recorded */
    int64_t expires_ms;               /* the new token's end */
    int64_t replaces;                 /* a refresh: the caller's token,
                                         revoked; 0 = none */
};
struct sl_op_carbon {
    char site[64];
    int64_t *hour_ms;                 /* hour starts */
    double *g;                        /* gCO2e/kWh */
    size_t n;
};
struct sl_op_scan { json_t *summary; }; /* sl_scan_json */
struct sl_op_model { json_t *body; };   /* the request body */
struct sl_op_stage {
    char model[160];                  /* "name@version" */
    json_t *body;                     /* {stage, comment?} */
};
/* An admin's state of a node (docs/nodes.md): drain, cordon, uncordon. */
#define SL_NODE_REASON_MAX 256        /* bytes of a reason, printable */
struct sl_op_node {
    char node[64];                    /* the node's name */
    char reason[SL_NODE_REASON_MAX + 1]; /* "" = none given */
};

struct sl_op {
    enum sl_op_kind kind;
    struct sl_principal who;
    union {                           /* by kind */
        struct sl_op_submit submit;
        struct sl_op_cancel cancel;   /* SL_OP_CANCEL, _ARRAY_CANCEL */
        struct sl_op_jobctl jobctl;   /* SL_OP_HOLD, _RELEASE, _REQUEUE,
                                         _ATTACH */
        struct sl_op_update update;
        struct sl_op_apply apply;
        struct sl_op_delete del;
        struct sl_op_token token;
        struct sl_op_revoke revoke;
        struct sl_op_login login;
        struct sl_op_carbon carbon;
        struct sl_op_scan scan;
        struct sl_op_model model;
        struct sl_op_stage stage;
        struct sl_op_node node;       /* the three SL_OP_NODE_* kinds */
    } u;
    /* the audit record of the request */
    const char *action;               /* SL_OP_AUDIT: the refused route's
                                         action (static); otherwise NULL:
                                         the table's */
    char object[160];                 /* e.g. "job:42"; the engine may set it */
    json_t *audit_details;            /* extra details (owned); may be NULL */
    /* outputs, valid in done() */
    int status;                       /* HTTP status */
    json_t *result;                   /* success body; owned by the op */
    char *body;                       /* or the success body as JSON text
                                         (owned; wins over result) */
    size_t body_len;
    struct sl_error err;              /* failure text and field */
    const char *code;                 /* failure code ("invalid", ...) */
    /* completion: called once, on the syncer thread after the durable
     * commit (or on the engine thread for a failed commit) */
    void (*done)(struct sl_op *op, void *arg);
    void *arg;
    struct sl_op *next;               /* queue link; engine-private */
};

/* The scope a kind of change needs (src/policy/roles.h): whoever submits
 * an operation has checked it with sl_role_may, once; the engine's
 * handlers apply only the rules that need state. */
unsigned sl_op_scope(enum sl_op_kind kind);
/* Its audit action ("job.submit", ...; "request" for SL_OP_AUDIT). */
const char *sl_op_action(enum sl_op_kind kind);
/* Free the payload and the outputs; the op may be freed after. */
void sl_op_fini(struct sl_op *op);

struct sl_engine_config {
    const char *data_dir;
    const char *store_path;           /* the store's path or URL */
    int64_t ha_epoch;                 /* several daemons on one store: the
                                         lease's epoch this one leads under;
                                         every write is fenced by it
                                         (sl_store_fence); 0 = one daemon */
    bool sync_full;                   /* fsync each group commit */
    const char *fake_gpus;            /* NULL = discover */
    const char *fake_nodes;           /* node list CSV replacing this host as
                                         the cluster (tasks still run here);
                                         NULL = this host only */
    const char *executor;             /* src/exec/executor.h: "local",
                                         "simulated", "slurm" */
    const char *slurm_partition;      /* slurm: see sl_executor_config */
    const char *slurm_output_dir;
    const char *slurm_bin;
    const char *slurm_api;
    const char *slurm_jobcomp;
    int64_t slurm_poll_ms;
    bool slurm_stage;             /* stage a queue's next jobs behind its
                                     running ones where the executor can
                                     (caps.stages) */
    int64_t log_cap_bytes;
    int64_t retry_backoff_ms;         /* base; doubles per attempt, cap 10 min */
    int64_t cancel_grace_ms;          /* SIGTERM to SIGKILL on cancel */
    int64_t detach_grace_ms;          /* interactive jobs: see
                                         sl_executor_config */
    int64_t interactive_idle_timeout_ms; /* an interactive job whose GPUs
                                         have been idle this long (meter.c)
                                         is ended; 0 = never */
    bool keep_invalid_depend;         /* a job whose dependency can never be
                                         satisfied stays Pending (reason
                                         DependencyNeverSatisfied) instead
                                         of ending Cancelled */
    const char *api_url;              /* given to tasks as SLUICE_SERVER with
                                         their job token; NULL = none */
    const char *job_ca_cert;          /* given to those tasks as SLUICE_CA_CERT
                                         (unless spec.env sets it); NULL =
                                         none */
    const char *job_user;             /* the Unix account that jobs of users
                                         without a mapping (kind: User
                                         spec.unixUser) run as; NULL or ""
                                         = such jobs are refused (403) */
    const char *allow_daemon_user;    /* the one account a job may run as
                                         although it has the daemon's uid
                                         (or uid 0); NULL or "" = none. A
                                         daemon that is not root can run
                                         jobs only as its own account, so
                                         it must name that one */
    int64_t (*now_ms)(void);          /* the wall clock (ms since the
                                         epoch) of every time the engine
                                         records and decides by, and of
                                         its executor; NULL = sl_now_ms.
                                         Unit tests inject their own */
    int64_t (*mono_ms)(void);         /* the monotonic clock (ms) of its
                                         timers (maxRuntime, grace, the
                                         meter's tick, audit checkpoints);
                                         NULL = sl_mono_ms */
};

/* Open the store, discover the host, bootstrap a new store (admin user and
 * token, team "default", priority classes), load state and re-adopt tasks
 * that survived a restart. On first start *admin_token receives the new
 * admin token (caller frees), else NULL. Returns NULL with 'err' filled. */
struct sl_engine *sl_engine_create(const struct sl_engine_config *cfg,
                                   char **admin_token, struct sl_error *err);

/* Start / stop the engine thread. stop finishes every queued operation
 * (completing them) and leaves running tasks running: a restarted daemon
 * re-adopts them. */
int sl_engine_start(struct sl_engine *e);
void sl_engine_stop(struct sl_engine *e);

/* This daemon no longer leads (its lease moved on, or could not be
 * renewed): from now on the engine changes nothing and answers every
 * write 503; tasks it runs that no other daemon could adopt (the local
 * executor's processes) are killed, so that the next leader can retry
 * them; then sluiced is asked to stop (SIGTERM). Any thread; idempotent.
 * The engine calls it itself when a transaction finds the epoch gone. */
void sl_engine_lose(struct sl_engine *e);
/* Whether sl_engine_lose was called. */
bool sl_engine_lost(struct sl_engine *e);
void sl_engine_destroy(struct sl_engine *e);

/* Queue an operation; op->done is called exactly once, on another thread.
 * Never fails: when the engine is stopping, done() gets 503. */
void sl_engine_submit(struct sl_engine *e, struct sl_op *op);

/* Thread-safe readers for the HTTP thread. The nodes: each with the
 * executor's state and reason, and "admin": the admin's state (active,
 * cordoned, draining, drained), reason, by and at (docs/nodes.md). */
json_t *sl_engine_nodes_json(struct sl_engine *e);
/* Queues with quota, use, borrowing, lending, pending and running counts
 * and fair share (the API's queue objects). */
json_t *sl_engine_queues_json(struct sl_engine *e);
/* The catalog's objects of 'kind' (enum sl_manifest_kind) as manifests
 * {apiVersion, kind, metadata: {name}, spec} with every default filled in
 * (sl_manifest_spec_json), by name; 'key' NULL: all, else only the one kept
 * by 'key' (its name, a Dataset's name@version) with "related" added: a
 * team's "users" and "queues", a cohort's "queues" (else {}); an empty
 * array when there is none. The Scheduler, the Pricing, policies and
 * datasets are read from 'rd' (the caller's reader), without e->mu; the
 * other kinds from memory under it. NULL with errno ENOMEM, or EIO when
 * 'rd' failed. */
json_t *sl_engine_objects_json(struct sl_engine *e, struct sl_store *rd, int kind,
                               const char *key);
/* What the engine knows now of Running job 'id' beyond its row (idle,
 * interactive) into 'out' (its 'attached' false: the relay knows that).
 * Returns 0, or -ENOENT when the job does not run. */
int sl_engine_job_live(struct sl_engine *e, int64_t id, struct sl_job_live *out);
/* Copy the pending reason of job 'id' into buf; returns 0 or -ENOENT. */
int sl_engine_reason(struct sl_engine *e, int64_t id, char *buf, size_t size);
/* Append the scheduler's explanation of job 'id' (JSON object) to 'b'.
 * Returns 0, -ENOENT when the scheduler does not know the job (finished),
 * or -ENOMEM. */
int sl_engine_explain(struct sl_engine *e, int64_t id, struct sl_buf *b);
/* Path of a task's log file: 0, or -ENOENT when the executor keeps none,
 * -ENOSPC when 'size' is too small. */
int sl_engine_log_path(struct sl_engine *e, int64_t id, int task, char *buf,
                       size_t size);
/* The attach socket of an interactive job's task (src/exec/attach.h): 0,
 * -ENOTSUP when the executor runs no interactive jobs, -ENOSPC. */
int sl_engine_attach_path(struct sl_engine *e, int64_t id, int task, int attempt, char *buf,
                          size_t size);
const char *sl_engine_store_path(struct sl_engine *e);

/* The meter, for reports on the HTTP thread: a copy of the Pricing in
 * force; every GPU of the cluster (its node's name, its model, its index)
 * through fn; since when the meter has counted (its first start); the
 * budgets of 'team' (NULL = all) with their use now. */
void sl_engine_pricing(struct sl_engine *e, struct sl_pricing *out);
int sl_engine_gpus_each(struct sl_engine *e,
                        int (*fn)(void *arg, const char *node, const char *model,
                                  int index),
                        void *arg);
int64_t sl_engine_meter_since(struct sl_engine *e);
json_t *sl_engine_budgets_json(struct sl_engine *e, const char *team);
bool sl_engine_sync_full(struct sl_engine *e);

/* The audit log, for the HTTP thread: a checkpoint signed now of the last
 * committed head (*size receives its size; may be NULL), and the verifier
 * key auditors check checkpoints with (src/audit/audit.h, docs/audit.md). */
int sl_engine_audit_checkpoint(struct sl_engine *e, struct sl_buf *out, int64_t *size);
const char *sl_engine_audit_vkey(struct sl_engine *e);
/* Changes whenever committed changes revoked tokens: a cache of resolved
 * tokens is dropped when it moves. */
uint64_t sl_engine_token_epoch(struct sl_engine *e);

/* ---- metrics ------------------------------------------------------------
 * Figures for the /metrics writer (src/api/metrics.c): a snapshot taken
 * under the engine's lock, and counters the engine thread bumps with
 * relaxed atomics, so that a scrape never waits for the engine and the
 * engine never waits for a scrape beyond that short copy. */

/* Upper bounds, in seconds, of the scheduling pass histogram. */
#define SL_ENGINE_PASS_BUCKETS 14
extern const double sl_engine_pass_bounds_s[SL_ENGINE_PASS_BUCKETS];

/* Counters; part of struct sl_engine, zero at creation. */
struct sl_engine_counters {
    _Atomic uint64_t finished[SL_JOB_NSTATES]; /* jobs that ended in that
                                                  final state */
    _Atomic uint64_t placements;      /* jobs placed (marked Running) */
    _Atomic uint64_t preemptions;     /* victims signalled */
    _Atomic uint64_t pass[SL_ENGINE_PASS_BUCKETS + 1]; /* per bucket, last
                                                          = +Inf */
    _Atomic uint64_t pass_ns;         /* sum of pass durations */
};

struct sl_metrics_node {
    char name[128];
    char model[48];                   /* its first GPU's model; "" = none */
    bool schedulable;
    int ngpus;
    int64_t gpu_milli_allocated;
    int64_t cpu_milli, cpu_milli_allocated;
    int64_t mem_bytes, mem_bytes_allocated;
};

struct sl_metrics_gpu {
    int node;                         /* index in the snapshot's nodes */
    int index;                        /* on its node */
    char model[48];
    char uuid[64];                    /* "" = unknown (fake GPUs) */
    int64_t mem_bytes;                /* 0 = unknown */
    int milli_allocated;
    struct sl_gpu_sample sample;      /* NVML's last (src/exec/gpumon.h);
                                         all unset on other nodes */
};

struct sl_metrics_queue {
    char name[64], team[64], cohort[64]; /* cohort "" = none */
    int64_t nominal_gpu_milli;        /* -1 = no GPU quota */
    int64_t used_gpu_milli, borrowed_gpu_milli, lent_gpu_milli;
    int pending, running;
};

struct sl_metrics_team {
    char name[64];
    double gpu_seconds, cu, cost, energy_j; /* since this sluiced started */
};

struct sl_metrics_budget {
    char name[64], team[64];
    const char *unit;                 /* static: gpuHours | cu | cost */
    double limit, used;               /* this period */
};

struct sl_engine_metrics {
    struct sl_metrics_node *nodes;    /* owned, nnodes */
    int nnodes;
    struct sl_metrics_gpu *gpus;      /* owned, ngpus */
    int ngpus;
    struct sl_metrics_queue *queues;  /* owned, nqueues */
    int nqueues;
    int64_t jobs_pending, jobs_running;
    int64_t sessions_idle, sessions_active; /* Running interactive jobs,
                                               idle-but-allocated or not */
    uint64_t finished[SL_JOB_NSTATES];
    uint64_t placements, preemptions;
    uint64_t pass[SL_ENGINE_PASS_BUCKETS + 1];
    uint64_t pass_ns;
    struct sl_metrics_team *teams;    /* owned, nteams */
    int nteams;
    struct sl_metrics_budget *budgets; /* owned, nbudgets */
    int nbudgets;
    char currency[8];
};

/* Thread-safe: fill 'm' with the cluster's figures now. Returns 0, or
 * -ENOMEM with 'm' empty. Release with sl_engine_metrics_fini either way. */
int sl_engine_metrics(struct sl_engine *e, struct sl_engine_metrics *m);
void sl_engine_metrics_fini(struct sl_engine_metrics *m);

/* Engine thread: count one scheduling pass of 'ns' nanoseconds. */
void sl_engine_count_pass(struct sl_engine *e, int64_t ns);
/* Engine thread: count a job that has reached final state 's'. */
void sl_engine_count_finished(struct sl_engine *e, enum sl_job_state s);

#endif
