/*
 * spec_int.h - what the parsers of documents share: the field readers, each
 * naming the field's full path in its error, the value parsers (durations,
 * CPU and memory quantities, amounts with three decimals, names) and the
 * name <-> value tables of the enumerated fields. Not a public header: only
 * the files of src/core/ include it; everything else uses spec.h.
 *
 * The files, in the order a document meets them:
 *   doc.c        YAML or JSON text into jansson values, with bounds
 *   fields.c     the field readers and value parsers below
 *   spec.c       the job spec (kind: Job)
 *   manifest.c   the manifests, one parser per kind
 *   normalise.c  the normalised documents written back (job and manifests)
 *
 * Every reader returns 0 (the field is absent, or valid and stored) or a
 * negated errno with 'err' naming the field ("spec.resources.gpus") and the
 * reason; -EINVAL for a bad value, -ENOMEM when out of memory. A JSON null
 * counts as absent.
 */
#ifndef SL_SPEC_INT_H
#define SL_SPEC_INT_H

#include "spec.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define API_VERSION "sluice/v1"
#define PATH_MAX_LEN 128          /* a field's path, with its terminator */
#define ENV_KEY_MAX 128
#define CPU_MILLI_MAX 1000000000LL /* 1M CPUs per task */

/* Name <-> value tables for the enumerated fields: {text, value}, ended by
 * a NULL name. */
struct enum_row {
    const char *name;
    int value;
};

extern const struct enum_row sl_spec_topology_names[];  /* enum sl_topology */
extern const struct enum_row sl_spec_network_names[];   /* enum sl_network */
extern const struct enum_row sl_spec_role_names[];      /* a User's role */
extern const struct enum_row sl_spec_manifest_kinds[];  /* enum sl_manifest_kind */
extern const struct enum_row sl_spec_preempt_within_names[]; /* enum sl_preempt_within */
extern const struct enum_row sl_spec_reclaim_names[];   /* enum sl_reclaim */
extern const struct enum_row sl_spec_placement_names[]; /* enum sl_placement */

/* The keys of a document's top level, NULL-terminated. */
extern const char *const sl_spec_top_keys[];

/* ---- errors and paths ------------------------------------------------- */

/* A short description of a value for "got ..." in an error, in 'buf'. */
const char *sl_spec_describe(const json_t *v, char *buf, size_t size);
/* Fill 'err' for the field at 'path'. Returns -EINVAL. */
int sl_spec_fail(struct sl_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "must be <what>, got <value>". Returns -EINVAL. */
int sl_spec_fail_got(struct sl_error *err, const char *path, const char *what,
                     const json_t *v);
/* "out of memory". Returns -ENOMEM. */
int sl_spec_oom(struct sl_error *err);
/* 'parent'.'key' into dst (PATH_MAX_LEN bytes); a long key is shortened. */
void sl_spec_path_key(char *dst, const char *parent, const char *key);

/* ---- field readers: obj[key] at path parent.key ------------------------ */

/* The member 'key' of 'obj', or NULL when absent or null. */
const json_t *sl_spec_member(const json_t *obj, const char *key);
/* 'v' is an object whose every key is in 'allowed' and no value null. */
int sl_spec_check_object(const json_t *v, const char *path,
                         const char *const *allowed, struct sl_error *err);
/* A string without NUL bytes of at most 'max' bytes; *out is NULL when
 * absent. */
int sl_spec_get_string(const json_t *obj, const char *key, const char *parent,
                       size_t max, const json_t **out, struct sl_error *err);
/* A name (sl_name_valid) into dst, left "" when absent unless 'required'. */
int sl_spec_get_name(const json_t *obj, const char *key, const char *parent,
                     char dst[SL_NAME_MAX + 1], bool required, struct sl_error *err);
/* An integer in [min, max]; *out untouched when absent; *present (may be
 * NULL) says whether it was given. */
int sl_spec_get_int(const json_t *obj, const char *key, const char *parent,
                    int64_t min, int64_t max, int64_t *out, bool *present,
                    struct sl_error *err);
int sl_spec_get_bool(const json_t *obj, const char *key, const char *parent,
                     bool *out, struct sl_error *err);
/* One of the names of 'table', its value into *out. */
int sl_spec_get_enum(const json_t *obj, const char *key, const char *parent,
                     const struct enum_row *table, int *out, struct sl_error *err);
/* The name of 'value' in 'table' (its first name when not there). */
const char *sl_spec_enum_name(const struct enum_row *table, int value);
/* A duration: a string for sl_parse_duration_ms or integer seconds; the
 * result must lie in [min_ms, max_ms], which 'range' says in words. */
int sl_spec_get_duration(const json_t *obj, const char *key, const char *parent,
                         int64_t min_ms, int64_t max_ms, const char *range,
                         int64_t *out, struct sl_error *err);
/* An array of at most 'max' strings, each checked by 'check'; *out is NULL
 * when absent. */
typedef int (*item_check_fn)(const json_t *item, const char *path,
                             struct sl_error *err);
int sl_spec_get_string_array(const json_t *obj, const char *key,
                             const char *parent, size_t max, item_check_fn check,
                             const json_t **out, struct sl_error *err);
/* apiVersion (must be API_VERSION) and kind (required; its text into
 * *kind) of the document 'doc' at path 'prefix'. */
int sl_spec_check_header(const json_t *doc, const char *prefix, const char **kind,
                         struct sl_error *err);

/* ---- value parsers: the value 'v' at path 'p' --------------------------- */

/* 'min'..'max' bytes, each isalnum() or in 'set'. */
bool sl_spec_all_chars(const char *s, size_t min, size_t max, const char *set);
/* A CPU amount: integer or decimal CPUs, or a string for sl_parse_cpu_milli
 * ("250m", "0.5"), in [min_milli, CPU_MILLI_MAX]. */
int sl_spec_parse_cpus(const json_t *v, const char *p, int64_t min_milli,
                       int64_t *out, struct sl_error *err);
/* A memory size: integer bytes or a string for sl_parse_bytes ("16Gi"), in
 * [min_bytes, 1Pi]. */
int sl_spec_parse_memory(const json_t *v, const char *p, int64_t min_bytes,
                         int64_t *out, struct sl_error *err);
/* A non-negative number with at most three decimals as milli-units in
 * [min_milli, max_milli]; refused as "must be <what>, got ...". */
int sl_spec_get_milli(const json_t *v, const char *path, int64_t min_milli,
                      int64_t max_milli, const char *what, int64_t *out,
                      struct sl_error *err);

#endif
