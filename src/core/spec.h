/*
 * spec.h - the job spec (SPEC.md section 4) and the manifests applied with
 * `sluice apply` (Team, Queue, Cohort, PriorityClass, User, Scheduler):
 * parsing from YAML or JSON, complete validation, normalisation.
 *
 * Every error names the field path ("spec.resources.gpus") in err->field and
 * the reason in err->text, and returns -EINVAL. Unknown fields are errors.
 * Inputs are bounded: documents over SL_SPEC_MAX_BYTES are refused (-EFBIG),
 * nesting deeper than 32 levels is refused.
 * Thread-safe: no shared state.
 */
#ifndef SL_SPEC_H
#define SL_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../meter/meter.h"
#include "../policy/policy.h"
#include "../util/util.h"

#define SL_SPEC_MAX_BYTES (1 << 20)
#define SL_NAME_MAX 63        /* [a-z0-9-], starts and ends alnum */
#define SL_MAX_TASKS 1024
#define SL_MAX_GPUS_PER_TASK 64
#define SL_MAX_ARGS 1024
#define SL_MAX_ENV 256

enum sl_topology { SL_TOPO_ANY, SL_TOPO_SAME_NODE, SL_TOPO_SAME_DOMAIN };
enum sl_network { SL_NET_EGRESS, SL_NET_INTERNAL, SL_NET_ISOLATED };

struct sl_job_spec {
    char name[SL_NAME_MAX + 1];    /* metadata.name; "" -> server names it */
    char team[SL_NAME_MAX + 1];    /* metadata.team; "" -> caller's team */
    char project[SL_NAME_MAX + 1]; /* metadata.project; "" if none */
    json_t *labels;                /* owned; object of string->string; never NULL */
    char queue[SL_NAME_MAX + 1];   /* "" -> the team's default queue */
    char priority_class[SL_NAME_MAX + 1]; /* "" -> server default */
    char *image;                   /* owned; NULL if none */
    char **argv;                   /* owned; NULL-terminated; argc >= 1 */
    int argc;
    char **env;                    /* owned; "KEY=VALUE", NULL-terminated */
    int envc;
    int tasks;                     /* 1..SL_MAX_TASKS */
    int gpus;                      /* whole GPUs per task, 0..64 */
    int gpu_milli;                 /* fraction of one GPU per task, 0..1000;
                                      set only when gpus == 0 */
    char **gpu_models;             /* owned; NULL-terminated; may be empty */
    int n_gpu_models;
    int64_t cpu_milli;             /* per task; default 1000 */
    int64_t mem_bytes;             /* per task; default 1 GiB */
    enum sl_topology topology;
    int64_t max_runtime_ms;        /* 0 = unlimited */
    int retries;                   /* 0..100 */
    int ckpt_signal;               /* default SIGTERM */
    int64_t ckpt_grace_ms;         /* default 30 s */
    char **datasets;               /* owned; "name@version", or with ":rw"
                                      to ask for read-write; NULL-terminated */
    int n_datasets;
    enum sl_network network;       /* default egress */
    bool network_set;              /* spec.network was given */
    char *code_repo;               /* owned; spec.code.repo; NULL if none */
    char *code_commit;             /* owned; spec.code.commit; NULL if none */
    char *workdir;                 /* owned; spec.workdir: an absolute path,
                                      normalised (no "//", ".", "..", or
                                      trailing '/'), at most 1024 bytes;
                                      NULL = the account's home */
    char *array;                   /* owned; spec.array in Slurm's --array
                                      syntax as written, valid (src/core/
                                      array.h); NULL = not an array */
    char *dependency;              /* owned; spec.dependency in Slurm's
                                      syntax, normalised (src/core/
                                      depend.h); NULL = none */
    bool interactive;              /* spec.interactive: its one task runs
                                      on a pseudo-terminal a client
                                      attaches to (GET /v1/jobs/{id}/
                                      attach); tasks 1, not an array */
};

/* Parse a job document. 'buf' need not be NUL-terminated. The format is JSON
 * when the first non-blank byte is '{', else YAML. Returns 0 and a new spec in
 * *out (free with sl_job_spec_destroy), or -EINVAL/-EFBIG/-ENOMEM with 'err'
 * filled; *out is untouched on failure. */
int sl_job_spec_parse(const char *buf, size_t len, struct sl_job_spec **out,
                      struct sl_error *err);

/* Validate an already-decoded document (the same rules as parse). */
int sl_job_spec_from_json(const json_t *doc, struct sl_job_spec **out,
                          struct sl_error *err);

/* The normalised document (apiVersion, kind, metadata, spec) with every
 * default filled in, suitable for storing and for re-parsing with
 * sl_job_spec_from_json. Returns a new reference or NULL on -ENOMEM. */
json_t *sl_job_spec_to_json(const struct sl_job_spec *spec);

/* Frees everything; accepts NULL; preserves errno. */
void sl_job_spec_destroy(struct sl_job_spec *spec);

/* Decode YAML or JSON (same detection as above) into a jansson value, with
 * the size and depth bounds above. YAML scalars become strings unless plain
 * (unquoted) and spelling an integer, a decimal number, true/false or null.
 * Multi-document YAML ("---") yields an array of the documents when
 * 'multi' is true, else more than one document is an error. */
int sl_doc_decode(const char *buf, size_t len, bool multi, json_t **out,
                  struct sl_error *err);

/* Manifests applied with `sluice apply -f`. */
enum sl_manifest_kind {
    SL_KIND_TEAM,
    SL_KIND_QUEUE,
    SL_KIND_PRIORITY_CLASS,
    SL_KIND_USER,
    SL_KIND_COHORT,
    SL_KIND_SCHEDULER,
    SL_KIND_PRICING,
    SL_KIND_BUDGET,
    SL_KIND_POLICY,
    SL_KIND_DATASET,
};

/* How a queue's pending job may preempt jobs of the same queue. */
enum sl_preempt_within { SL_PREEMPT_LOWER_PRIORITY, SL_PREEMPT_NEVER };

/* Which jobs a queue may preempt in its cohort to get back what it lent. */
enum sl_reclaim { SL_RECLAIM_ANY, SL_RECLAIM_LOWER_PRIORITY, SL_RECLAIM_NEVER };

/* Placement policies of the scheduler (kind: Scheduler, spec.placement). */
enum sl_placement {
    SL_PLACE_FGD,        /* "fgd": least GPU fragmentation */
    SL_PLACE_BESTFIT,    /* "bestfit" */
    SL_PLACE_PACKING,    /* "packing" */
    SL_PLACE_CLUSTERING, /* "clustering" */
    SL_PLACE_DOTPROD,    /* "dotprod" */
    SL_PLACE_RANDOM,     /* "random" */
    SL_PLACE_SPREAD,     /* "spread" */
};

#define SL_MAX_MODELS 16          /* GPU models named in one resource list */

/* A resource list of a manifest (a quota, a limit); -1 = not given.
 * Zero is a valid amount (a quota of 0). */
struct sl_res_list {
    int64_t gpu_milli;            /* "gpus": GPUs of any model, milli
                                     (1000 = 1 GPU), 0..10^9 */
    int64_t cpu_milli;            /* "cpus", 0..10^9 */
    int64_t mem_bytes;            /* "memory", 0..2^50 */
    int nmodels;                  /* entries of "gpusByModel", 0..16 */
    char model[SL_MAX_MODELS][48];/* GPU model names, as written: 1..47 of
                                     A-Z a-z 0-9 . _ -, distinct ignoring
                                     case */
    int64_t model_milli[SL_MAX_MODELS]; /* GPUs of model[i], milli */
};

/* Set every amount of 'l' to -1 (not given) and its models to none. */
void sl_res_list_init(struct sl_res_list *l);

/* One manifest. Plain data (no pointers): copy it with memcpy. */
struct sl_manifest {
    enum sl_manifest_kind kind;
    char name[SL_NAME_MAX + 1];   /* metadata.name */
    union {
        struct {                  /* kind: Team; spec: {defaultQueue?} */
            char default_queue[SL_NAME_MAX + 1]; /* "" -> same as team name
                                                    or "default" (server) */
        } team;
        struct {                  /* kind: Queue; spec: {team, cohort?,
                                     weight?, nominal?, borrowingLimit?,
                                     lendingLimit?, userLimit?,
                                     preemption?} */
            char team[SL_NAME_MAX + 1];
            char cohort[SL_NAME_MAX + 1]; /* "" = none */
            int64_t weight_milli;         /* fair-share weight, 1..10^6;
                                             1000 = weight 1 (default) */
            struct sl_res_list nominal;   /* the queue's own quota */
            struct sl_res_list borrowing_limit; /* at most this much more
                                                   from the cohort; only with
                                                   a cohort, each resource
                                                   also in nominal */
            struct sl_res_list lending_limit;   /* at most this much of
                                                   nominal lent; only with a
                                                   cohort, each <= nominal */
            struct sl_res_list user_limit;      /* per user in this queue */
            int preempt_within;           /* enum sl_preempt_within */
            int reclaim;                  /* enum sl_reclaim */
        } queue;
        struct {                  /* kind: Cohort; spec?: {description?} */
            char description[257]; /* "" = none; no control characters */
        } cohort;
        struct {                  /* kind: PriorityClass;
                                     spec: {value, preemptible?, default?,
                                            opportunistic?, minRuntime?} */
            int value;            /* -1000000..1000000 */
            bool preemptible;     /* default true */
            bool is_default;      /* default false */
            bool opportunistic;   /* default false; implies preemptible */
            int64_t min_runtime_ms; /* 0..30 days, default 0: not preempted
                                       before running this long */
        } pclass;
        struct {                  /* kind: User;
                                     spec: {team, role, unixUser?} */
            char team[SL_NAME_MAX + 1];
            char role[16];        /* admin | team-admin | member | viewer |
                                     auditor */
            char unix_user[33];   /* "" -> not mapped */
        } user;
        struct {                  /* kind: Scheduler, name "default";
                                     spec?: {placement?, backfill?,
                                     reservations?, fairShare?, preemption?,
                                     modelWeights?} */
            int placement;        /* enum sl_placement, default fgd */
            bool backfill;        /* default true */
            int reservations;     /* 1..64, default 1 */
            int64_t half_life_ms; /* fair-share usage half-life, 0..3650 d,
                                     default 7 d; 0 = current usage only */
            bool preemption;      /* preemption enabled, default true */
            int64_t min_runtime_ms; /* 0..30 d, default 0: for classes that
                                       set no minRuntime */
            int nweights;         /* entries of modelWeights, 0..16 */
            char weight_model[SL_MAX_MODELS][48]; /* as res_list.model */
            int64_t weight_milli[SL_MAX_MODELS];  /* 1..10^6 (0.001..1000) */
        } sched;
        struct sl_pricing pricing; /* kind: Pricing, name "default"
                                      (src/meter/meter.h) */
        struct sl_budget budget;   /* kind: Budget */
        struct sl_policy policy;   /* kind: Policy (src/policy/policy.h) */
        struct sl_dataset dataset; /* kind: Dataset */
    } u;
};

/* Parse one or more manifests ("---"-separated YAML or a JSON object or
 * array). On success *out is a new array of *n manifests (free with free()).
 * Errors name the field path prefixed with the document index when there is
 * more than one ("[1].spec.team"). Job documents are refused here. */
int sl_manifests_parse(const char *buf, size_t len, struct sl_manifest **out,
                       size_t *n, struct sl_error *err);

/* The normalised "spec" object of manifest 'm', every default filled in:
 * feeding {apiVersion, kind, metadata: {name}, spec: it} to
 * sl_manifests_parse gives a struct equal to *m. Resource lists are written
 * back with gpus (and each gpusByModel entry) as a number of GPUs (500 milli
 * -> 0.5), cpus as a number of CPUs or a "250m" string, memory as integer
 * bytes; a list with nothing given is left out. jansson prints reals with
 * 17 digits (0.1 as 0.10000000000000001, which reads back the same); dump
 * with JSON_REAL_PRECISION(15) for the short form. Returns a new reference,
 * or NULL with errno ENOMEM. */
json_t *sl_manifest_spec_json(const struct sl_manifest *m);

/* The manifest kind a person means by 'word': a kind's name or its
 * plural, ignoring case, '-' and '_' ("Queue", "queues", "priority-class",
 * "PriorityClasses", "policies"). Returns the enum sl_manifest_kind value,
 * or -EINVAL for NULL or any other word. */
int sl_manifest_kind_parse(const char *word);
/* The kind's name as manifests write it ("PriorityClass"), or NULL. */
const char *sl_manifest_kind_name(int kind);

/* What an apply would change: 'old' and 'new' are an object's normalised
 * specs (sl_manifest_spec_json) in force and after the apply, 'given' the
 * spec as the document wrote it (NULL: none). Objects are compared member
 * by member; anything else (lists, numbers, strings) as a whole. Returns a
 * new array with one entry per field that differs, in old's member order
 * then new's: {"field": "spec.nominal.gpus", "old": value or null (absent),
 * "new": value or null (absent), "given": whether the document gave the
 * field: it holds the field's whole path, or a part of the path whose
 * value is not an object with members (a list, a scalar, null or {} set
 * all that is under it)}. Equal specs give []. NULL with errno ENOMEM. */
json_t *sl_manifest_compare(const json_t *old, const json_t *new, const json_t *given);

/* Placement policy names, exactly as written in spec.placement and
 * `--policy NAME`: "fgd", "bestfit", "packing", "clustering", "dotprod",
 * "random", "spread". _name returns "?" for a value outside the enum;
 * _parse returns the enum sl_placement value, or -EINVAL for NULL or any
 * other text (the match is case-sensitive). */
const char *sl_placement_name(int p);
int sl_placement_parse(const char *name);

/* Name rule shared by every object: [a-z0-9-], 1..63, alnum at both ends. */
bool sl_name_valid(const char *s);

/* The GPU model rule (gpuModels entries, the keys of gpusByModel and
 * modelWeights): 1..47 of A-Z a-z 0-9 . _ - */
bool sl_spec_gpu_model_valid(const char *s);

/* A Unix account name as kind: User spec.unixUser and sluiced's --job-user
 * take it: [a-z_][a-z0-9_-]{0,31}. */
bool sl_unix_name_valid(const char *s);

#endif
