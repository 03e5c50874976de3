/*
 * job.h - a job's lifecycle states and the job object as the API shows it.
 *
 * struct sl_job_view is one job as a row: the engine fills it from memory
 * to store it, the store fills it from a row to hand it to a reader, and
 * sl_job_view_render writes it as the API's job object. It holds no
 * memory of its own: every pointer is borrowed from whoever filled it.
 * Thread-safe: no shared state.
 */
#ifndef SL_CORE_JOB_H
#define SL_CORE_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/buf.h"

/* Stored as these numbers: the values never change. */
enum sl_job_state {
    SL_JOB_PENDING,
    SL_JOB_RUNNING,
    SL_JOB_SUCCEEDED,
    SL_JOB_FAILED,
    SL_JOB_CANCELLED,
    SL_JOB_PREEMPTED,
    SL_JOB_LOST,
    SL_JOB_TIMEOUT,               /* ended by its maxRuntime (Sluice's or the
                                     executor's limit); added after Lost so
                                     that stored numbers keep their meaning */
    SL_JOB_NSTATES
};

/* "Pending", "Running", ...; "Unknown" out of range. */
const char *sl_job_state_name(enum sl_job_state s);
/* Case-insensitive; returns the state or -EINVAL for an unknown name. */
int sl_job_state_parse(const char *name);
/* Succeeded, Failed, Cancelled, Lost and Timeout: the job never changes
 * again. */
bool sl_job_state_final(enum sl_job_state s);

/* What the engine knows of a Running job beyond its row, from memory:
 * never stored (docs/metering.md, "Idle but allocated"). */
struct sl_job_live {
    bool interactive;             /* spec.interactive: a session */
    bool idle;                    /* idle-but-allocated now: its GPUs have
                                     sat under the Pricing's idle threshold
                                     for at least idle.after, and still do */
    int64_t idle_since_ms;        /* idle: when they went under it (wall) */
    int64_t idle_ms;              /* idle: this attempt's time flagged so */
    int64_t idle_ends_ms;         /* an idle session: when
                                     --interactive-idle-timeout ends it
                                     (wall); 0 = never */
    bool attached;                /* a session: a client is attached (the
                                     API's relay knows, not the engine) */
};

/* One job as stored and as shown (the API's job object). Strings are
 * borrowed from whoever filled the view; json fields are borrowed refs. */
struct sl_job_view {
    int64_t id;
    const char *name, *team, *project, *user, *queue, *priority_class;
    int priority;
    enum sl_job_state state;
    bool has_exit_code;
    int exit_code;
    int attempt, retries;
    int preemptions;              /* times preempted and requeued */
    int64_t submitted_ms, started_ms, finished_ms; /* 0 = null */
    const char *placement_json;   /* JSON array text, NULL = [] */
    const char *reason;           /* NULL unless pending; never stored: the
                                     scheduler keeps it in memory */
    const char *message;          /* NULL if none */
    int limits_enforced;          /* -1 null, 0, 1 */
    int gpus_enforced;            /* -1 null (not started, or no GPUs),
                                     0: visible only (CUDA_VISIBLE_DEVICES),
                                     1: no other GPU can be opened */
    const char *intent;           /* while Running: "cancel", "preempt",
                                     "timeout", "requeue", "requeue-hold" or
                                     "requeue-hold-admin" once the job was
                                     told to stop; while Pending: "staged"
                                     (in the executor), "held" (sluice hold:
                                     a user's hold) or "held-admin" (an
                                     admin's hold), rendered as "held": true
                                     and "hold"; NULL/"" = none. Otherwise
                                     not rendered: the events say it */
    int64_t intent_at_ms;         /* when it was first signalled (wall) */
    int64_t intent_for;           /* preempt: the preemptor's job id */
    const char *hold_by;          /* held, or requeued to be held: who
                                     held it; NULL = unknown (a hold made
                                     before this was kept) */
    int64_t array_job_id;         /* an element of a job array: the array's
                                     id (its first element's); 0 = none */
    int array_index;              /* the element's index (spec.array) */
    const struct sl_job_live *live; /* Running: what the engine knows now
                                     (rendered as "idle" and "attached");
                                     NULL = none */
    const char *spec_json;        /* normalised job document text */
    json_t *spec_doc;             /* the same document decoded, when the
                                     caller has it (borrowed); else NULL */
};

/* Append the API's job object for 'v' to 'b' as JSON text: the one writer
 * of that object. Stored JSON (placement, spec) is copied as text, not
 * decoded and encoded again. Returns 0 or -ENOMEM (then 'b' is marked
 * failed). */
int sl_job_view_render(const struct sl_job_view *v, struct sl_buf *b);
/* The same object decoded. Returns a new reference or NULL. */
json_t *sl_job_view_to_json(const struct sl_job_view *v);
/* A row callback for the store's job reads (sl_store_job_read): sets
 * *(json_t **)arg to sl_job_view_to_json(v), a new reference the caller
 * frees. Returns 0 or -ENOMEM (then *arg is NULL). */
int sl_job_view_json_fn(void *arg, const struct sl_job_view *v);

#endif
