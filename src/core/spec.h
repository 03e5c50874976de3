/*
 * spec.h - the job spec (SPEC.md section 4) and the small manifests of this
 * release (Team, Queue, PriorityClass, User): parsing from YAML or JSON,
 * complete validation, normalisation.
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
    char **datasets;               /* owned; "name@version"; NULL-terminated */
    int n_datasets;
    enum sl_network network;       /* default egress */
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
};

struct sl_manifest {
    enum sl_manifest_kind kind;
    char name[SL_NAME_MAX + 1];   /* metadata.name */
    union {
        struct {                  /* kind: Team; spec: {defaultQueue?} */
            char default_queue[SL_NAME_MAX + 1]; /* "" -> same as team name
                                                    or "default" (server) */
        } team;
        struct {                  /* kind: Queue; spec: {team, priority?} */
            char team[SL_NAME_MAX + 1];
        } queue;
        struct {                  /* kind: PriorityClass;
                                     spec: {value, preemptible?, default?} */
            int value;            /* -1000000..1000000 */
            bool preemptible;     /* default true */
            bool is_default;      /* default false */
        } pclass;
        struct {                  /* kind: User;
                                     spec: {team, role, unixUser?} */
            char team[SL_NAME_MAX + 1];
            char role[16];        /* admin | member | viewer */
            char unix_user[33];   /* "" -> not mapped */
        } user;
    } u;
};

/* Parse one or more manifests ("---"-separated YAML or a JSON object or
 * array). On success *out is a new array of *n manifests (free with free()).
 * Errors name the field path prefixed with the document index when there is
 * more than one ("[1].spec.team"). Job documents are refused here. */
int sl_manifests_parse(const char *buf, size_t len, struct sl_manifest **out,
                       size_t *n, struct sl_error *err);

/* Name rule shared by every object: [a-z0-9-], 1..63, alnum at both ends. */
bool sl_name_valid(const char *s);

#endif
