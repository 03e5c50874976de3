/*
 * spec.c - validation and normalisation of the job spec (SPEC.md section 4)
 * and of the manifests (Team, Queue, Cohort, PriorityClass, User, Scheduler).
 *
 * Validation is complete and stops at the first fault, which it names by
 * its full path ("spec.command[2]", "[1].spec.team") and a reason that
 * quotes the bad value when short. Unknown fields are errors. A JSON null
 * is taken as "absent" (YAML writes an empty value that way); it satisfies
 * no required field. Integers must be JSON integers: 1.5, "1" and true are
 * refused where an integer is expected.
 *
 * Amounts that may be fractional (GPUs, weights) are numbers with at most
 * three decimals, kept as integer milli-units; see milli_of_real() for how a
 * binary double becomes an exact milli count.
 *
 * Invariant: a struct sl_job_spec that leaves this file satisfies every
 * bound in spec.h, and sl_job_spec_to_json() of it validates again to an
 * equal spec; the same holds for a struct sl_manifest and
 * sl_manifest_spec_json().
 */
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define API_VERSION "sluice/v1"
#define PATH_MAX_LEN 128
#define SHOW_MAX 40               /* bytes of a bad value quoted in errors */
#define IMAGE_MAX 512
#define ARG_MAX_BYTES 4096
#define ENV_KEY_MAX 128
#define ENV_VALUE_MAX 4096
#define LABELS_MAX 64
#define LABEL_KEY_MAX 63
#define LABEL_VALUE_MAX 256
#define GPU_MODELS_MAX 16
#define GPU_MODEL_MAX 47
#define DATASETS_MAX 64
#define DATASET_VERSION_MAX 63
#define CPU_MILLI_MAX 1000000000LL               /* 1M CPUs per task */
#define MEM_BYTES_MAX (1LL << 50)                /* 1 PiB per task */
#define RUNTIME_MS_MAX (3650LL * 86400 * 1000)   /* 10 years */
#define GRACE_MS_MAX (86400LL * 1000)            /* 1 day */
#define RETRIES_MAX 100
#define DEFAULT_CPU_MILLI 1000
#define DEFAULT_MEM_BYTES (1LL << 30)
#define DEFAULT_GRACE_MS 30000
#define MANIFESTS_MAX 1000
#define PCLASS_VALUE_MAX 1000000
#define RES_GPU_MILLI_MAX 1000000000LL           /* 1M GPUs in a list */
#define WEIGHT_MILLI_MIN 1                       /* weight 0.001 */
#define WEIGHT_MILLI_MAX 1000000LL               /* weight 1000 */
#define DEFAULT_WEIGHT_MILLI 1000
#define MIN_RUNTIME_MS_MAX (30LL * 86400 * 1000) /* 30 days */
#define HALF_LIFE_MS_MAX (3650LL * 86400 * 1000) /* 10 years */
#define DEFAULT_HALF_LIFE_MS (7LL * 86400 * 1000)
#define RESERVATIONS_MAX 64
#define DESCRIPTION_MAX 256
#define SCHEDULER_NAME "default"

/* Name <-> value tables for the enumerated fields: {text, value}. */
struct enum_row {
    const char *name;
    int value;
};

static const struct enum_row topology_names[] = {
    {"any", SL_TOPO_ANY},
    {"same-node", SL_TOPO_SAME_NODE},
    {"same-domain", SL_TOPO_SAME_DOMAIN},
    {NULL, 0},
};

static const struct enum_row network_names[] = {
    {"isolated", SL_NET_ISOLATED},
    {"internal", SL_NET_INTERNAL},
    {"egress", SL_NET_EGRESS},
    {NULL, 0},
};

static const struct enum_row role_names[] = {
    {"admin", 0},
    {"member", 1},
    {"viewer", 2},
    {"team-admin", 3},
    {"auditor", 4},
    {NULL, 0},
};

/* Manifest kinds: {kind name, enum value}. */
static const struct enum_row manifest_kinds[] = {
    {"Team", SL_KIND_TEAM},
    {"Queue", SL_KIND_QUEUE},
    {"PriorityClass", SL_KIND_PRIORITY_CLASS},
    {"User", SL_KIND_USER},
    {"Cohort", SL_KIND_COHORT},
    {"Scheduler", SL_KIND_SCHEDULER},
    {"Pricing", SL_KIND_PRICING},
    {"Budget", SL_KIND_BUDGET},
    {"Policy", SL_KIND_POLICY},
    {"Dataset", SL_KIND_DATASET},
    {NULL, 0},
};

static const struct enum_row preempt_within_names[] = {
    {"LowerPriority", SL_PREEMPT_LOWER_PRIORITY},
    {"Never", SL_PREEMPT_NEVER},
    {NULL, 0},
};

static const struct enum_row reclaim_names[] = {
    {"Any", SL_RECLAIM_ANY},
    {"LowerPriority", SL_RECLAIM_LOWER_PRIORITY},
    {"Never", SL_RECLAIM_NEVER},
    {NULL, 0},
};

/* Indexed by enum sl_placement: sl_placement_name relies on the order. */
static const struct enum_row placement_names[] = {
    {"fgd", SL_PLACE_FGD},
    {"bestfit", SL_PLACE_BESTFIT},
    {"packing", SL_PLACE_PACKING},
    {"clustering", SL_PLACE_CLUSTERING},
    {"dotprod", SL_PLACE_DOTPROD},
    {"random", SL_PLACE_RANDOM},
    {"spread", SL_PLACE_SPREAD},
    {NULL, 0},
};

/* Environment variables the executor sets for every task: {name, what,
 * prefix}; a prefix row reserves every name that starts with 'name'. */
static const struct {
    const char *name;
    const char *what;
    bool prefix;
} reserved_env[] = {
    {"SLUICE_JOB_ID", "the job id", false},
    {"SLUICE_TASK_INDEX", "the task index", false},
    {"SLUICE_ATTEMPT", "the attempt number", false},
    {"CUDA_VISIBLE_DEVICES", "the GPUs placed for the task", false},
    {"NVIDIA_VISIBLE_DEVICES", "the GPUs placed for the task", false},
    {"SLUICE_GPUS", "the GPUs placed for the task", false},
    {"CUDA_DEVICE_ORDER", "the GPUs' numbering (PCI bus order)", false},
    {"SLUICE_DATASETS", "the job's datasets", false},
    {"SLUICE_TOKEN", "the job's own API token", false},
    {"SLUICE_SERVER", "the API's address", false},
    {"SLUICE_DATASET_", "a dataset's path or mode", true},
};

/* Allowed keys of each object, NULL-terminated. */
static const char *const top_keys[] = {"apiVersion", "kind", "metadata",
                                       "spec", NULL};
static const char *const job_meta_keys[] = {"name", "team", "project",
                                            "labels", NULL};
static const char *const job_spec_keys[] = {
    "queue",      "priorityClass", "image",   "command",
    "env",        "tasks",         "resources", "topology",
    "maxRuntime", "retries",       "checkpoint", "datasets",
    "network",    "code",          NULL};
static const char *const code_keys[] = {"repo", "commit", NULL};
static const char *const resources_keys[] = {"gpus", "gpuMilli", "gpuModels",
                                             "cpus", "cpuMilli", "memory",
                                             NULL};
static const char *const checkpoint_keys[] = {"signal", "grace", NULL};
static const char *const manifest_meta_keys[] = {"name", NULL};
static const char *const team_spec_keys[] = {"defaultQueue", NULL};
static const char *const queue_spec_keys[] = {
    "team",         "cohort",    "weight",     "nominal", "borrowingLimit",
    "lendingLimit", "userLimit", "preemption", NULL};
static const char *const queue_preemption_keys[] = {
    "withinQueue", "reclaimWithinCohort", NULL};
static const char *const res_list_keys[] = {"gpus", "gpusByModel", "cpus",
                                            "memory", NULL};
static const char *const cohort_spec_keys[] = {"description", NULL};
static const char *const pclass_spec_keys[] = {
    "value", "preemptible", "default", "opportunistic", "minRuntime", NULL};
static const char *const sched_spec_keys[] = {
    "placement", "backfill", "reservations", "fairShare", "preemption",
    "modelWeights", NULL};
static const char *const sched_fair_keys[] = {"halfLife", NULL};
static const char *const sched_preemption_keys[] = {"enabled", "minRuntime",
                                                    NULL};
static const char *const user_spec_keys[] = {"team", "role", "unixUser",
                                             NULL};

/* ---- error text helpers ---- */



/* A short description of a value for "got ..." in an error. */
static const char *describe(const json_t *v, char *buf, size_t size)
{
    char tmp[64];

    switch (json_typeof(v)) {
    case JSON_STRING:
        sl_text_show(tmp, sizeof(tmp), json_string_value(v), json_string_length(v),
             SHOW_MAX);
        if (snprintf(buf, size, "\"%s\"", tmp) < 0)
            buf[0] = '\0';
        break;
    case JSON_INTEGER:
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        /* The shortest text that reads back as the same double, so that
         * "got 1000.0005" shows the fourth decimal that %g would drop. */
        for (int prec = 6; prec <= 17; prec++) {
            snprintf(buf, size, "%.*g", prec, json_real_value(v));
            if (strtod(buf, NULL) == json_real_value(v))
                break;
        }
        break;
    case JSON_TRUE:
        snprintf(buf, size, "true");
        break;
    case JSON_FALSE:
        snprintf(buf, size, "false");
        break;
    case JSON_NULL:
        snprintf(buf, size, "null");
        break;
    case JSON_OBJECT:
        snprintf(buf, size, "an object");
        break;
    default:
        snprintf(buf, size, "an array");
        break;
    }
    return buf;
}

static int fail(struct sl_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct sl_error *err, const char *path, const char *fmt, ...)
{
    char text[sizeof(err->text)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return sl_errorf_field(err, -EINVAL, path, "%s", text);
}

/* "must be <what>, got <value>" */
static int fail_got(struct sl_error *err, const char *path, const char *what,
                    const json_t *v)
{
    char got[64];
    return fail(err, path, "must be %s, got %s", what,
                describe(v, got, sizeof(got)));
}

static int oom(struct sl_error *err)
{
    return sl_errorf_field(err, -ENOMEM, "", "out of memory");
}

/* ---- paths ---- */

/* Paths are at most a known prefix and one shown key (SHOW_MAX bytes), so
 * they fit; a cut would still leave a terminated string. */
static void path_key(char *dst, const char *parent, const char *key)
{
    char k[64];
    int n;

    sl_text_show(k, sizeof(k), key, strlen(key), SHOW_MAX);
    n = snprintf(dst, PATH_MAX_LEN, "%s%s%s", parent, *parent ? "." : "", k);
    if (n < 0)
        dst[0] = '\0';
}

static void path_index(char *dst, const char *parent, size_t i)
{
    int n = snprintf(dst, PATH_MAX_LEN, "%s[%zu]", parent, i);
    if (n < 0)
        dst[0] = '\0';
}

/* ---- typed getters: each returns 0 (absent or valid) or -EINVAL ---- */

/* The member 'key' of 'obj', or NULL when absent or null. */
static const json_t *member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* 'v' is an object whose every key is in 'allowed'. */
static int check_object(const json_t *v, const char *path,
                        const char *const *allowed, struct sl_error *err)
{
    const char *k;
    json_t *e;

    if (!json_is_object(v))
        return fail_got(err, path, "an object", v);
    json_object_foreach((json_t *)v, k, e)
    {
        size_t i;
        for (i = 0; allowed[i]; i++)
            if (strcmp(k, allowed[i]) == 0)
                break;
        if (!allowed[i]) {
            char p[PATH_MAX_LEN];
            path_key(p, path, k);
            return fail(err, p, "unknown field");
        }
        if (json_is_null(e)) {
            /* One meaning: a field is given or left out. "gpus: null"
             * could read as none, any or the default. */
            char p[PATH_MAX_LEN];
            path_key(p, path, k);
            return fail(err, p, "must not be null: leave the field out for its default");
        }
    }
    return 0;
}

/* A string without NUL bytes of at most 'max' bytes; *out is NULL when
 * absent. */
static int get_string(const json_t *obj, const char *key, const char *parent,
                      size_t max, const json_t **out, struct sl_error *err)
{
    const json_t *v = member(obj, key);
    char p[PATH_MAX_LEN];

    *out = NULL;
    if (!v)
        return 0;
    path_key(p, parent, key);
    if (!json_is_string(v))
        return fail_got(err, p, "a string", v);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return fail(err, p, "must not contain NUL bytes");
    if (json_string_length(v) > max)
        return fail(err, p, "must be at most %zu bytes, got %zu", max,
                    json_string_length(v));
    *out = v;
    return 0;
}

static int check_name(const json_t *v, const char *path, struct sl_error *err)
{
    if (!sl_name_valid(json_string_value(v)))
        return fail_got(err, path,
                        "1 to 63 characters of a-z, 0-9 and '-', starting "
                        "and ending with a letter or digit",
                        v);
    return 0;
}

/* An optional name into dst (left "" when absent). */
static int get_name(const json_t *obj, const char *key, const char *parent,
                    char dst[SL_NAME_MAX + 1], bool required,
                    struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc;

    path_key(p, parent, key);
    if ((rc = get_string(obj, key, parent, 1024, &v, err)) < 0)
        return rc;
    if (!v)
        return required ? fail(err, p, "is required") : 0;
    if ((rc = check_name(v, p, err)) < 0)
        return rc;
    sl_strlcpy(dst, json_string_value(v), SL_NAME_MAX + 1);
    return 0;
}

/* An integer in [min, max]; *out untouched when absent. */
static int get_int(const json_t *obj, const char *key, const char *parent,
                   int64_t min, int64_t max, int64_t *out, bool *present,
                   struct sl_error *err)
{
    const json_t *v = member(obj, key);
    char p[PATH_MAX_LEN], what[80];

    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    path_key(p, parent, key);
    snprintf(what, sizeof(what), "an integer from %" PRId64 " to %" PRId64,
             min, max);
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max)
        return fail_got(err, p, what, v);
    *out = json_integer_value(v);
    return 0;
}

static int get_bool(const json_t *obj, const char *key, const char *parent,
                    bool *out, struct sl_error *err)
{
    const json_t *v = member(obj, key);
    char p[PATH_MAX_LEN];

    if (!v)
        return 0;
    path_key(p, parent, key);
    if (!json_is_boolean(v))
        return fail_got(err, p, "true or false", v);
    *out = json_is_true(v);
    return 0;
}

static int get_enum(const json_t *obj, const char *key, const char *parent,
                    const struct enum_row *table, int *out,
                    struct sl_error *err)
{
    const json_t *v = member(obj, key);
    char p[PATH_MAX_LEN], what[96] = "one of";
    size_t used = strlen(what);

    if (!v)
        return 0;
    path_key(p, parent, key);
    if (json_is_string(v)) {
        for (size_t i = 0; table[i].name; i++) {
            if (strcmp(json_string_value(v), table[i].name) == 0) {
                *out = table[i].value;
                return 0;
            }
        }
    }
    for (size_t i = 0; table[i].name && used < sizeof(what); i++)
        used += (size_t)snprintf(what + used, sizeof(what) - used, "%s %s",
                                 i == 0 ? "" : (table[i + 1].name ? "," : " or"),
                                 table[i].name);
    return fail_got(err, p, what, v);
}

static const char *enum_name(const struct enum_row *table, int value)
{
    for (size_t i = 0; table[i].name; i++)
        if (table[i].value == value)
            return table[i].name;
    return table[0].name;
}

/* A duration: a string for sl_parse_duration_ms or integer seconds; the
 * result must lie in [min_ms, max_ms], which 'range' says in words. */
static int get_duration(const json_t *obj, const char *key, const char *parent,
                        int64_t min_ms, int64_t max_ms, const char *range,
                        int64_t *out, struct sl_error *err)
{
    const json_t *v = member(obj, key);
    char p[PATH_MAX_LEN], what[96];
    int64_t ms = -1;

    if (!v)
        return 0;
    path_key(p, parent, key);
    snprintf(what, sizeof(what), "%s, such as 90s, 1h30m or 2h", range);
    if (json_is_integer(v)) {
        json_int_t sec = json_integer_value(v);
        if (sec >= 0 && sec <= max_ms / 1000)
            ms = (int64_t)sec * 1000;
    } else if (json_is_string(v) &&
               strlen(json_string_value(v)) == json_string_length(v)) {
        if (sl_parse_duration_ms(json_string_value(v), &ms) < 0)
            ms = -1;
    }
    if (ms < min_ms || ms > max_ms)
        return fail_got(err, p, what, v);
    *out = ms;
    return 0;
}

/* An array of at most 'max' strings, each checked by 'check'. */
typedef int (*item_check_fn)(const json_t *item, const char *path,
                             struct sl_error *err);

static int get_string_array(const json_t *obj, const char *key,
                            const char *parent, size_t max, item_check_fn check,
                            const json_t **out, struct sl_error *err)
{
    const json_t *v = member(obj, key);
    char p[PATH_MAX_LEN], what[64];
    int rc;

    *out = NULL;
    if (!v)
        return 0;
    path_key(p, parent, key);
    snprintf(what, sizeof(what), "an array of at most %zu strings", max);
    if (!json_is_array(v))
        return fail_got(err, p, what, v);
    if (json_array_size(v) > max)
        return fail(err, p, "must have at most %zu entries, got %zu", max,
                    json_array_size(v));
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        char ip[PATH_MAX_LEN];

        path_index(ip, p, i);
        if (!json_is_string(e))
            return fail_got(err, ip, "a string", e);
        if (strlen(json_string_value(e)) != json_string_length(e))
            return fail(err, ip, "must not contain NUL bytes");
        if ((rc = check(e, ip, err)) < 0)
            return rc;
    }
    *out = v;
    return 0;
}

/* ---- item rules ---- */

static bool all_chars(const char *s, size_t min, size_t max, const char *set)
{
    size_t n = strlen(s);

    if (n < min || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr(set, s[i]))
            return false;
    return true;
}

static int check_arg(const json_t *e, const char *path, struct sl_error *err)
{
    if (json_string_length(e) > ARG_MAX_BYTES)
        return fail(err, path, "must be at most %d bytes, got %zu",
                    ARG_MAX_BYTES, json_string_length(e));
    return 0;
}

/* The GPU model rule: 1..47 of A-Z a-z 0-9 . _ - (gpuModels entries and
 * the keys of gpusByModel and modelWeights). */
static bool gpu_model_valid(const char *s)
{
    /* isalnum is locale-dependent; the check below keeps it to ASCII. */
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c >= 0x80)
            return false;
    return all_chars(s, 1, GPU_MODEL_MAX, "._-");
}

static int check_gpu_model(const json_t *e, const char *path,
                           struct sl_error *err)
{
    if (!gpu_model_valid(json_string_value(e)))
        return fail_got(err, path,
                        "1 to 47 characters of A-Z, a-z, 0-9, '.', '_' and '-'",
                        e);
    return 0;
}

static int check_dataset(const json_t *e, const char *path,
                         struct sl_error *err)
{
    const char *s = json_string_value(e), *at = strchr(s, '@');
    char name[SL_NAME_MAX + 2];

    if (at && (size_t)(at - s) <= SL_NAME_MAX) {
        memcpy(name, s, (size_t)(at - s));
        name[at - s] = '\0';
        const char *ver = at + 1, *mode = strchr(ver, ':');
        char v[DATASET_VERSION_MAX + 2];
        size_t vn = mode ? (size_t)(mode - ver) : strlen(ver);
        if (vn <= DATASET_VERSION_MAX && (!mode || strcmp(mode, ":rw") == 0)) {
            memcpy(v, ver, vn);
            v[vn] = '\0';
            if (sl_name_valid(name) && all_chars(v, 1, DATASET_VERSION_MAX, "._-"))
                return 0;
        }
    }
    return fail_got(err, path,
                    "\"name@version\" or \"name@version:rw\" (name: a-z, 0-9, '-'; "
                    "version: 1 to 63 of A-Z, a-z, 0-9, '.', '_', '-')",
                    e);
}

/* spec.code: {repo: URL, commit: hex}, for lineage. */
static int parse_code(const json_t *code, struct sl_job_spec *s, struct sl_error *err)
{
    const json_t *repo, *commit;
    int rc;

    if (!code)
        return 0;
    if ((rc = check_object(code, "spec.code", code_keys, err)) < 0)
        return rc;
    repo = member(code, "repo");
    commit = member(code, "commit");
    if (!json_is_string(repo) || json_string_length(repo) == 0 ||
        json_string_length(repo) > 512 || !sl_text_printable(json_string_value(repo)))
        return fail(err, "spec.code.repo",
                    "is required: the repository's URL, at most 512 printable characters");
    if (!json_is_string(commit) || json_string_length(commit) < 7 ||
        json_string_length(commit) > 64 ||
        !all_chars(json_string_value(commit), 7, 64, "") ||
        strspn(json_string_value(commit), "0123456789abcdef") != json_string_length(commit))
        return fail(err, "spec.code.commit",
                    "is required: the commit, 7 to 64 lowercase hex digits");
    if (!(s->code_repo = strdup(json_string_value(repo))) ||
        !(s->code_commit = strdup(json_string_value(commit))))
        return oom(err);
    return 0;
}

static bool ascii_only(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

/* ---- the job spec ---- */

static char *dup_json_string(const json_t *v)
{
    return strndup(json_string_value(v), json_string_length(v));
}

/* A new NULL-terminated copy of the strings of array 'a' (may be NULL). */
static char **dup_string_array(const json_t *a, int *n)
{
    size_t count = a ? json_array_size(a) : 0;
    char **v = calloc(count + 1, sizeof(*v));

    if (!v)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        if (!(v[i] = dup_json_string(json_array_get(a, i)))) {
            for (size_t k = 0; k < i; k++)
                free(v[k]);
            free(v);
            return NULL;
        }
    }
    *n = (int)count;
    return v;
}

static void free_strv(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

void sl_job_spec_destroy(struct sl_job_spec *spec)
{
    int saved = errno;

    if (spec) {
        json_decref(spec->labels);
        free(spec->image);
        free_strv(spec->argv);
        free_strv(spec->env);
        free_strv(spec->gpu_models);
        free_strv(spec->datasets);
        free(spec->code_repo);
        free(spec->code_commit);
        free(spec);
    }
    errno = saved;
}

static int parse_metadata(const json_t *doc, struct sl_job_spec *s,
                          struct sl_error *err)
{
    const json_t *meta = member(doc, "metadata"), *labels;
    const char *k;
    json_t *e;
    int rc;

    if (!meta)
        return 0;
    if ((rc = check_object(meta, "metadata", job_meta_keys, err)) < 0)
        return rc;
    if ((rc = get_name(meta, "name", "metadata", s->name, false, err)) < 0 ||
        (rc = get_name(meta, "team", "metadata", s->team, false, err)) < 0 ||
        (rc = get_name(meta, "project", "metadata", s->project, false, err)) <
            0)
        return rc;
    if (!(labels = member(meta, "labels")))
        return 0;
    if (!json_is_object(labels))
        return fail_got(err, "metadata.labels", "an object of strings", labels);
    if (json_object_size(labels) > LABELS_MAX)
        return fail(err, "metadata.labels",
                    "must have at most %d labels, got %zu", LABELS_MAX,
                    json_object_size(labels));
    json_object_foreach((json_t *)labels, k, e)
    {
        char p[PATH_MAX_LEN];

        path_key(p, "metadata.labels", k);
        if (!ascii_only(k) || !all_chars(k, 1, LABEL_KEY_MAX, "._/-"))
            return fail(err, p,
                        "label keys must be 1 to 63 characters of A-Z, a-z, "
                        "0-9, '.', '_', '/' and '-'");
        if (!json_is_string(e))
            return fail_got(err, p, "a string", e);
        if (strlen(json_string_value(e)) != json_string_length(e))
            return fail(err, p, "must not contain NUL bytes");
        if (!sl_text_printable(json_string_value(e)))
            /* shown by sluice show and in reports: no terminal escapes,
             * no line breaks that fake another line */
            return fail(err, p, "must not contain control characters");
        if (json_string_length(e) > LABEL_VALUE_MAX)
            return fail(err, p, "must be at most %d bytes, got %zu",
                        LABEL_VALUE_MAX, json_string_length(e));
        if (json_object_set_new(s->labels, k, json_string(json_string_value(e))) <
            0)
            return oom(err);
    }
    return 0;
}

static int parse_env(const json_t *spec, struct sl_job_spec *s,
                     struct sl_error *err)
{
    const json_t *env = member(spec, "env");
    const char *k;
    json_t *e;
    int n = 0;

    if (env && !json_is_object(env))
        return fail_got(err, "spec.env", "an object of strings", env);
    if (env && json_object_size(env) > SL_MAX_ENV)
        return fail(err, "spec.env", "must have at most %d variables, got %zu",
                    SL_MAX_ENV, json_object_size(env));
    /* Exactly as many slots as variables: a pending job keeps its spec. */
    if (!(s->env = calloc((env ? json_object_size(env) : 0) + 1, sizeof(*s->env))))
        return oom(err);
    if (!env)
        return 0;
    json_object_foreach((json_t *)env, k, e)
    {
        char p[PATH_MAX_LEN];
        size_t klen = strlen(k), vlen;

        path_key(p, "spec.env", k);
        if (klen == 0 || klen > ENV_KEY_MAX || !ascii_only(k) ||
            isdigit((unsigned char)k[0]) || !all_chars(k, 1, ENV_KEY_MAX, "_"))
            return fail(err, p,
                        "variable names must match [A-Za-z_][A-Za-z0-9_]* "
                        "(at most %d characters)",
                        ENV_KEY_MAX);
        for (size_t i = 0; i < SL_ARRAY_LEN(reserved_env); i++)
            if (reserved_env[i].prefix
                    ? strncmp(k, reserved_env[i].name,
                              strlen(reserved_env[i].name)) == 0
                    : strcmp(k, reserved_env[i].name) == 0)
                return fail(err, p,
                            "is set by the executor to %s and cannot be "
                            "overridden",
                            reserved_env[i].what);
        if (!json_is_string(e)) {
            char got[64];
            return fail(err, p, "must be a string, got %s%s",
                        describe(e, got, sizeof(got)),
                        json_is_number(e) || json_is_boolean(e)
                            ? " (quote it)"
                            : "");
        }
        vlen = json_string_length(e);
        if (strlen(json_string_value(e)) != vlen)
            return fail(err, p, "must not contain NUL bytes");
        if (vlen > ENV_VALUE_MAX)
            return fail(err, p, "must be at most %d bytes, got %zu",
                        ENV_VALUE_MAX, vlen);
        if (!(s->env[n] = malloc(klen + vlen + 2)))
            return oom(err);
        memcpy(s->env[n], k, klen);
        s->env[n][klen] = '=';
        memcpy(s->env[n] + klen + 1, json_string_value(e), vlen + 1);
        n++;
    }
    s->envc = n;
    return 0;
}

/* A CPU amount at path 'p': integer or decimal CPUs, or a string for
 * sl_parse_cpu_milli ("250m", "0.5"), in [min_milli, CPU_MILLI_MAX]. A job
 * asks for at least 1 milli-CPU; a resource list may give 0. */
static int parse_cpus_at(const json_t *v, const char *p, int64_t min_milli,
                         int64_t *out, struct sl_error *err)
{
    const char *what =
        min_milli > 0
            ? "a CPU amount above 0 such as 4, 0.5 or \"250m\""
            : "a CPU amount of 0 or more such as 4, 0.5 or \"250m\"";
    int64_t milli = -1;

    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n >= 0 && n <= CPU_MILLI_MAX / 1000)
            milli = (int64_t)n * 1000;
    } else if (json_is_real(v)) {
        double d = json_real_value(v) * 1000.0;
        if (d >= 0 && d <= (double)CPU_MILLI_MAX) {
            double r = nearbyint(d);
            if (fabs(d - r) < 1e-6)
                milli = (int64_t)r;
            else
                return fail_got(err, p, "a multiple of 0.001 CPU", v);
        }
    } else if (json_is_string(v) &&
               strlen(json_string_value(v)) == json_string_length(v)) {
        if (sl_parse_cpu_milli(json_string_value(v), &milli) < 0)
            milli = -1;
    }
    if (milli < min_milli || milli > CPU_MILLI_MAX)
        return fail_got(err, p, what, v);
    *out = milli;
    return 0;
}

static int parse_cpus(const json_t *v, int64_t *out, struct sl_error *err)
{
    return parse_cpus_at(v, "spec.resources.cpus", 1, out, err);
}

/* Whether a quantity string is small enough for sl_parse_bytes to compute
 * exactly: its number times the largest multiplier its suffix may mean
 * stays under 2^60, so no intermediate product can overflow. */
static bool bytes_in_reach(const char *s)
{
    char *end;
    double v = strtod(s, &end), mult = 1;

    if (end == s || !isdigit((unsigned char)*s))
        return true; /* not a number: sl_parse_bytes refuses it */
    switch (*end) {
    case 'T': mult = 1099511627776.0; break;
    case 'G': mult = 1073741824.0; break;
    case 'M': mult = 1048576.0; break;
    case 'K': case 'k': mult = 1024.0; break;
    default: break;
    }
    return v * mult < 1152921504606846976.0;
}

/* A memory size at path 'p': integer bytes or a string for sl_parse_bytes
 * ("16Gi"), in [min_bytes, MEM_BYTES_MAX]. A job asks for at least 1 byte;
 * a resource list may give 0. */
static int parse_memory_at(const json_t *v, const char *p, int64_t min_bytes,
                           int64_t *out, struct sl_error *err)
{
    int64_t bytes = -1;

    if (json_is_integer(v)) {
        bytes = json_integer_value(v);
    } else if (json_is_string(v) &&
               strlen(json_string_value(v)) == json_string_length(v) &&
               bytes_in_reach(json_string_value(v))) {
        if (sl_parse_bytes(json_string_value(v), &bytes) < 0)
            bytes = -1;
    }
    if (bytes < min_bytes || bytes > MEM_BYTES_MAX)
        return fail_got(err, p,
                        min_bytes > 0
                            ? "a memory size above 0 and at most 1Pi such as "
                              "\"16Gi\" or a number of bytes"
                            : "a memory size from 0 to 1Pi such as \"16Gi\" "
                              "or a number of bytes",
                        v);
    *out = bytes;
    return 0;
}

static int parse_memory(const json_t *v, int64_t *out, struct sl_error *err)
{
    return parse_memory_at(v, "spec.resources.memory", 1, out, err);
}

static int parse_resources(const json_t *spec, struct sl_job_spec *s,
                           struct sl_error *err)
{
    const char *P = "spec.resources";
    const json_t *r = member(spec, "resources"), *models, *cpus, *mem;
    int64_t gpus = 0, milli = 0, cpu_milli = 0;
    bool has_milli = false, has_cpu_milli = false;
    int rc;

    s->cpu_milli = DEFAULT_CPU_MILLI;
    s->mem_bytes = DEFAULT_MEM_BYTES;
    if (!(s->gpu_models = calloc(1, sizeof(*s->gpu_models))))
        return oom(err);
    if (!r)
        return 0;
    if ((rc = check_object(r, P, resources_keys, err)) < 0)
        return rc;
    if ((rc = get_int(r, "gpus", P, 0, SL_MAX_GPUS_PER_TASK, &gpus, NULL,
                      err)) < 0 ||
        (rc = get_int(r, "gpuMilli", P, 1, 1000, &milli, &has_milli, err)) < 0)
        return rc;
    if (has_milli && gpus > 0)
        return fail(err, "spec.resources.gpuMilli",
                    "cannot be combined with gpus > 0 (got gpus %" PRId64
                    "): ask for whole GPUs or a fraction of one",
                    gpus);
    s->gpus = (int)gpus;
    s->gpu_milli = (int)milli;
    if ((rc = get_string_array(r, "gpuModels", P, GPU_MODELS_MAX,
                               check_gpu_model, &models, err)) < 0)
        return rc;
    if (models) {
        free(s->gpu_models);
        if (!(s->gpu_models = dup_string_array(models, &s->n_gpu_models)))
            return oom(err);
    }
    if ((cpus = member(r, "cpus")) && (rc = parse_cpus(cpus, &s->cpu_milli,
                                                       err)) < 0)
        return rc;
    if ((rc = get_int(r, "cpuMilli", P, 1, CPU_MILLI_MAX, &cpu_milli,
                      &has_cpu_milli, err)) < 0)
        return rc;
    if (has_cpu_milli) {
        if (cpus)
            return fail(err, "spec.resources.cpuMilli",
                        "cannot be combined with cpus: give one of them");
        s->cpu_milli = cpu_milli;
    }
    if ((mem = member(r, "memory")) &&
        (rc = parse_memory(mem, &s->mem_bytes, err)) < 0)
        return rc;
    return 0;
}

static int parse_checkpoint(const json_t *spec, struct sl_job_spec *s,
                            struct sl_error *err)
{
    const char *P = "spec.checkpoint";
    const json_t *c = member(spec, "checkpoint"), *sig;
    int rc;

    s->ckpt_signal = SIGTERM;
    s->ckpt_grace_ms = DEFAULT_GRACE_MS;
    if (!c)
        return 0;
    if ((rc = check_object(c, P, checkpoint_keys, err)) < 0)
        return rc;
    if ((rc = get_string(c, "signal", P, 32, &sig, err)) < 0)
        return rc;
    if (sig) {
        int n = sl_signal_from_name(json_string_value(sig));
        if (n < 0)
            return fail_got(err, "spec.checkpoint.signal",
                            "a signal name such as SIGUSR1 or SIGTERM", sig);
        if (n == SIGKILL || n == SIGSTOP)
            return fail(err, "spec.checkpoint.signal",
                        "cannot be %s: a job cannot catch it to checkpoint",
                        sl_signal_name(n));
        s->ckpt_signal = n;
    }
    return get_duration(c, "grace", P, 0, GRACE_MS_MAX,
                        "a duration from 0s to 1d", &s->ckpt_grace_ms, err);
}

static int parse_spec(const json_t *doc, struct sl_job_spec *s,
                      struct sl_error *err)
{
    const char *P = "spec";
    const json_t *spec = member(doc, "spec"), *image, *cmd, *ds;
    int64_t tasks = 1, retries = 0;
    int topo = SL_TOPO_ANY, net = SL_NET_EGRESS;
    int rc;

    if (!spec)
        return fail(err, "spec", "is required");
    if ((rc = check_object(spec, P, job_spec_keys, err)) < 0)
        return rc;
    if ((rc = get_name(spec, "queue", P, s->queue, false, err)) < 0 ||
        (rc = get_name(spec, "priorityClass", P, s->priority_class, false,
                       err)) < 0)
        return rc;
    if ((rc = get_string(spec, "image", P, IMAGE_MAX, &image, err)) < 0)
        return rc;
    if (image) {
        const char *i = json_string_value(image);
        if (!*i)
            return fail(err, "spec.image", "must not be empty");
        for (const char *c = i; *c; c++)
            if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c))
                return fail_got(err, "spec.image",
                                "an image reference without spaces", image);
        if (!(s->image = dup_json_string(image)))
            return oom(err);
    }
    if ((rc = get_string_array(spec, "command", P, SL_MAX_ARGS, check_arg, &cmd,
                               err)) < 0)
        return rc;
    if (!cmd)
        return fail(err, "spec.command", "is required");
    if (json_array_size(cmd) == 0)
        return fail(err, "spec.command",
                    "must have at least one entry (the program)");
    if (json_string_length(json_array_get(cmd, 0)) == 0)
        return fail(err, "spec.command[0]", "must not be empty");
    if (!(s->argv = dup_string_array(cmd, &s->argc)))
        return oom(err);
    if ((rc = parse_env(spec, s, err)) < 0)
        return rc;
    if ((rc = get_int(spec, "tasks", P, 1, SL_MAX_TASKS, &tasks, NULL, err)) <
        0)
        return rc;
    s->tasks = (int)tasks;
    if ((rc = parse_resources(spec, s, err)) < 0)
        return rc;
    if ((rc = get_enum(spec, "topology", P, topology_names, &topo, err)) < 0)
        return rc;
    s->topology = (enum sl_topology)topo;
    if ((rc = get_duration(spec, "maxRuntime", P, 1, RUNTIME_MS_MAX,
                           "a duration above 0 and at most 3650d",
                           &s->max_runtime_ms, err)) < 0)
        return rc;
    if ((rc = get_int(spec, "retries", P, 0, RETRIES_MAX, &retries, NULL,
                      err)) < 0)
        return rc;
    s->retries = (int)retries;
    if ((rc = parse_checkpoint(spec, s, err)) < 0)
        return rc;
    if ((rc = get_string_array(spec, "datasets", P, DATASETS_MAX, check_dataset,
                               &ds, err)) < 0)
        return rc;
    if (!(s->datasets = dup_string_array(ds, &s->n_datasets)))
        return oom(err);
    s->network_set = member(spec, "network") != NULL;
    if ((rc = get_enum(spec, "network", P, network_names, &net, err)) < 0)
        return rc;
    s->network = (enum sl_network)net;
    return parse_code(member(spec, "code"), s, err);
}

/* apiVersion and kind; 'kind' must equal 'want' when want is not NULL. */
static int check_header(const json_t *doc, const char *prefix,
                        const char **kind, struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc;

    path_key(p, prefix, "apiVersion");
    if ((rc = get_string(doc, "apiVersion", prefix, 64, &v, err)) < 0)
        return rc;
    if (!v)
        return fail(err, p, "is required (apiVersion: %s)", API_VERSION);
    if (strcmp(json_string_value(v), API_VERSION) != 0)
        return fail_got(err, p, "\"" API_VERSION "\"", v);
    path_key(p, prefix, "kind");
    if ((rc = get_string(doc, "kind", prefix, 64, &v, err)) < 0)
        return rc;
    if (!v)
        return fail(err, p, "is required");
    *kind = json_string_value(v);
    return 0;
}

int sl_job_spec_from_json(const json_t *doc, struct sl_job_spec **out,
                          struct sl_error *err)
{
    struct sl_job_spec *s = NULL;
    const char *kind;
    int rc;

    if (!doc) {
        rc = fail(err, "", "no document");
        goto out;
    }
    if (!json_is_object(doc)) {
        rc = fail_got(err, "", "an object (a job document)", doc);
        goto out;
    }
    if ((rc = check_object(doc, "", top_keys, err)) < 0 ||
        (rc = check_header(doc, "", &kind, err)) < 0)
        goto out;
    if (strcmp(kind, "Job") != 0) {
        char got[64];
        bool manifest = false;
        for (size_t i = 0; manifest_kinds[i].name; i++)
            manifest = manifest || !strcmp(kind, manifest_kinds[i].name);
        rc = fail(err, "kind", "must be \"Job\", got %s%s",
                  describe(member(doc, "kind"), got, sizeof(got)),
                  manifest ? " (declare it with `sluice apply -f FILE`)" : "");
        goto out;
    }
    if (!(s = calloc(1, sizeof(*s))) || !(s->labels = json_object())) {
        rc = oom(err);
        goto out;
    }
    if ((rc = parse_metadata(doc, s, err)) < 0 ||
        (rc = parse_spec(doc, s, err)) < 0)
        goto out;
    *out = s;
    s = NULL;
out:
    sl_job_spec_destroy(s);
    return rc;
}

int sl_job_spec_parse(const char *buf, size_t len, struct sl_job_spec **out,
                      struct sl_error *err)
{
    json_t *doc = NULL;
    int rc;

    if ((rc = sl_doc_decode(buf, len, false, &doc, err)) < 0)
        goto out;
    rc = sl_job_spec_from_json(doc, out, err);
out:
    json_decref(doc);
    return rc;
}

/* ---- to_json ---- */

/* Set obj[key] = v (stolen); false on failure. */
static bool put(json_t *obj, const char *key, json_t *v)
{
    return v && json_object_set_new(obj, key, v) == 0;
}

static bool put_str_opt(json_t *obj, const char *key, const char *s)
{
    return !s || !*s || put(obj, key, json_string(s));
}

static json_t *strv_json(char *const *v, int n)
{
    json_t *a = json_array();

    for (int i = 0; a && i < n; i++) {
        if (json_array_append_new(a, json_string(v[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *duration_json(int64_t ms)
{
    char buf[32];

    if (ms % 1000 == 0)
        snprintf(buf, sizeof(buf), "%" PRId64 "s", ms / 1000);
    else
        snprintf(buf, sizeof(buf), "%" PRId64 "ms", ms);
    return json_string(buf);
}

json_t *sl_job_spec_to_json(const struct sl_job_spec *s)
{
    json_t *doc = json_object(), *meta = json_object(), *spec = json_object();
    json_t *res = json_object(), *env = json_object(), *ckpt = json_object();
    json_t *result = NULL;

    if (!doc || !meta || !spec || !res || !env || !ckpt)
        goto out;
    for (int i = 0; i < s->envc; i++) {
        const char *eq = strchr(s->env[i], '=');
        char key[ENV_KEY_MAX + 1];
        size_t klen = eq ? (size_t)(eq - s->env[i]) : 0;

        if (!eq || klen > ENV_KEY_MAX)
            goto out;
        memcpy(key, s->env[i], klen);
        key[klen] = '\0';
        if (!put(env, key, json_string(eq + 1)))
            goto out;
    }
    if (!put(doc, "apiVersion", json_string(API_VERSION)) ||
        !put(doc, "kind", json_string("Job")) ||
        !put_str_opt(meta, "name", s->name) ||
        !put_str_opt(meta, "team", s->team) ||
        !put_str_opt(meta, "project", s->project) ||
        !put(meta, "labels", s->labels ? json_deep_copy(s->labels)
                                       : json_object()) ||
        !put_str_opt(spec, "queue", s->queue) ||
        !put_str_opt(spec, "priorityClass", s->priority_class) ||
        !put_str_opt(spec, "image", s->image) ||
        !put(spec, "command", strv_json(s->argv, s->argc)) ||
        !put(spec, "env", json_incref(env)) ||
        !put(spec, "tasks", json_integer(s->tasks)) ||
        !put(res, "gpus", json_integer(s->gpus)) ||
        (s->gpu_milli > 0 && !put(res, "gpuMilli", json_integer(s->gpu_milli))) ||
        !put(res, "gpuModels", strv_json(s->gpu_models, s->n_gpu_models)) ||
        !put(res, "cpuMilli", json_integer(s->cpu_milli)) ||
        !put(res, "memory", json_integer(s->mem_bytes)) ||
        !put(spec, "resources", json_incref(res)) ||
        !put(spec, "topology", json_string(enum_name(topology_names,
                                                     (int)s->topology))) ||
        (s->max_runtime_ms > 0 &&
         !put(spec, "maxRuntime", duration_json(s->max_runtime_ms))) ||
        !put(spec, "retries", json_integer(s->retries)) ||
        !put(ckpt, "signal", json_string(sl_signal_name(s->ckpt_signal))) ||
        !put(ckpt, "grace", duration_json(s->ckpt_grace_ms)) ||
        !put(spec, "checkpoint", json_incref(ckpt)) ||
        !put(spec, "datasets", strv_json(s->datasets, s->n_datasets)) ||
        !put(spec, "network", json_string(enum_name(network_names,
                                                    (int)s->network))) ||
        (s->code_repo && !put(spec, "code", json_pack("{s:s, s:s}", "repo", s->code_repo,
                                                      "commit", s->code_commit))) ||
        !put(doc, "metadata", json_incref(meta)) ||
        !put(doc, "spec", json_incref(spec)))
        goto out;
    result = doc;
    doc = NULL;
out:
    json_decref(doc);
    json_decref(meta);
    json_decref(spec);
    json_decref(res);
    json_decref(env);
    json_decref(ckpt);
    if (!result)
        errno = ENOMEM;
    return result;
}

/* ---- names ---- */

bool sl_name_valid(const char *s)
{
    size_t n;

    if (!s)
        return false;
    n = strlen(s);
    if (n < 1 || n > SL_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return s[0] != '-' && s[n - 1] != '-';
}

/* ---- fractional amounts (GPUs, weights) ---- */

#define GPUS_WHAT "a number of GPUs from 0 to 1000000 with at most 3 decimals"
#define WEIGHT_WHAT "a weight from 0.001 to 1000 with at most 3 decimals"

/*
 * The exact milli count of a JSON real that has at most three decimals.
 *
 * The decoder hands over a binary double, not the text that was written:
 * 0.1 arrives as 0.1000000000000000055..., and multiplying by 1000 then
 * rounding with a tolerance would let a fourth decimal through on large
 * values or refuse good ones on small. Instead the double is printed with
 * three decimals ("%.3f", correctly rounded) and that text is read back
 * with strtod: the number had at most three decimals exactly when it reads
 * back as the very same double, because strtod yields the double nearest to
 * the decimal, as the decoder did with the user's text. The milli count is
 * then the digits of that text, with no floating-point arithmetic at all.
 * So 0.5 -> 500, 0.001 -> 1, 0.1 -> 100, 2.0 and 1e3 are whole; 0.0005 and
 * 0.1234 are refused. A spelling beyond double precision
 * (0.10000000000000000001) is the same double as 0.1 and reads as 0.1:
 * the text is gone by the time it gets here.
 * 'max_milli' bounds the size before printing. False when refused.
 */
static bool milli_of_real(double d, int64_t max_milli, int64_t *out)
{
    char text[48];
    int64_t milli = 0;
    int n;

    if (!isfinite(d) || d < 0 || d > (double)max_milli / 1000.0 + 1.0)
        return false;
    if (d == 0) { /* also -0.0, which would print as "-0.000" */
        *out = 0;
        return true;
    }
    n = snprintf(text, sizeof(text), "%.3f", d);
    if (n < 0 || (size_t)n >= sizeof(text) || strtod(text, NULL) != d)
        return false;
    for (const char *c = text; *c; c++)
        if (*c >= '0' && *c <= '9')
            milli = milli * 10 + (*c - '0');
    *out = milli;
    return true;
}

/* A non-negative amount with at most three decimals at 'path', as
 * milli-units in [min_milli, max_milli]: a JSON integer or real. Strings,
 * booleans, negatives and finer fractions are refused as "must be <what>,
 * got ...". */
static int get_milli(const json_t *v, const char *path, int64_t min_milli,
                     int64_t max_milli, const char *what, int64_t *out,
                     struct sl_error *err)
{
    int64_t milli = -1;

    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n >= 0 && n <= max_milli / 1000)
            milli = (int64_t)n * 1000;
    } else if (json_is_real(v)) {
        if (!milli_of_real(json_real_value(v), max_milli, &milli))
            milli = -1;
    }
    if (milli < min_milli || milli > max_milli)
        return fail_got(err, path, what, v);
    *out = milli;
    return 0;
}

/* Non-negative milli-units as a short decimal ("16", "0.5", "0.125"). */
static const char *milli_text(int64_t milli, char *buf, size_t size)
{
    if (milli % 1000 == 0) {
        snprintf(buf, size, "%" PRId64, milli / 1000);
    } else {
        size_t n;
        snprintf(buf, size, "%" PRId64 ".%03" PRId64, milli / 1000,
                 milli % 1000);
        n = strlen(buf);
        while (n > 0 && buf[n - 1] == '0')
            buf[--n] = '\0';
    }
    return buf;
}

/* ---- manifests ---- */

void sl_res_list_init(struct sl_res_list *l)
{
    memset(l, 0, sizeof(*l));
    l->gpu_milli = -1;
    l->cpu_milli = -1;
    l->mem_bytes = -1;
    l->nmodels = 0;
}

bool sl_unix_name_valid(const char *s)
{
    size_t n = strlen(s);

    if (n < 1 || n > 32)
        return false;
    if (!((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-'))
            return false;
    }
    return true;
}

/* An object of GPU model -> amount at 'path' (gpusByModel, modelWeights):
 * at most SL_MAX_MODELS keys, each by the GPU model rule and distinct from
 * the earlier ones ignoring case (models are matched that way), each value
 * by get_milli. Fills names[], milli[] and *n in the document's order. */
static int get_model_map(const json_t *v, const char *path, int64_t min_milli,
                         int64_t max_milli, const char *what,
                         char names[SL_MAX_MODELS][48],
                         int64_t milli[SL_MAX_MODELS], int *n,
                         struct sl_error *err)
{
    const char *k;
    json_t *e;
    int count = 0, rc;

    if (!json_is_object(v))
        return fail_got(err, path, "an object of GPU model: amount", v);
    if (json_object_size(v) > SL_MAX_MODELS)
        return fail(err, path, "must have at most %d models, got %zu",
                    SL_MAX_MODELS, json_object_size(v));
    json_object_foreach((json_t *)v, k, e)
    {
        char p[PATH_MAX_LEN];

        path_key(p, path, k);
        if (!gpu_model_valid(k))
            return fail(err, p,
                        "GPU model names must be 1 to 47 characters of A-Z, "
                        "a-z, 0-9, '.', '_' and '-'");
        for (int i = 0; i < count; i++)
            if (strcasecmp(names[i], k) == 0)
                return fail(err, p,
                            "names the GPU model \"%s\" again (model names "
                            "are case-insensitive)",
                            names[i]);
        if ((rc = get_milli(e, p, min_milli, max_milli, what, &milli[count],
                            err)) < 0)
            return rc;
        sl_strlcpy(names[count], k, sizeof(names[count]));
        count++;
    }
    *n = count;
    return 0;
}

/* The resource list obj[key] into *l; "not given" throughout when absent.
 * Zero amounts are valid. */
static int get_res_list(const json_t *obj, const char *key, const char *parent,
                        struct sl_res_list *l, struct sl_error *err)
{
    const json_t *v = member(obj, key), *e;
    char P[PATH_MAX_LEN], p[PATH_MAX_LEN];
    int rc;

    sl_res_list_init(l);
    if (!v)
        return 0;
    path_key(P, parent, key);
    if ((rc = check_object(v, P, res_list_keys, err)) < 0)
        return rc;
    if ((e = member(v, "gpus"))) {
        path_key(p, P, "gpus");
        if ((rc = get_milli(e, p, 0, RES_GPU_MILLI_MAX, GPUS_WHAT,
                            &l->gpu_milli, err)) < 0)
            return rc;
    }
    if ((e = member(v, "gpusByModel"))) {
        path_key(p, P, "gpusByModel");
        if ((rc = get_model_map(e, p, 0, RES_GPU_MILLI_MAX, GPUS_WHAT,
                                l->model, l->model_milli, &l->nmodels, err)) <
            0)
            return rc;
    }
    if ((e = member(v, "cpus"))) {
        path_key(p, P, "cpus");
        if ((rc = parse_cpus_at(e, p, 0, &l->cpu_milli, err)) < 0)
            return rc;
    }
    if ((e = member(v, "memory"))) {
        path_key(p, P, "memory");
        if ((rc = parse_memory_at(e, p, 0, &l->mem_bytes, err)) < 0)
            return rc;
    }
    return 0;
}

/* One amount of limit list 'lkey' against the same one of nominal:
 * 'res' names it ("gpus", "gpusByModel.A100"); 'bytes' says how to show
 * it. Given in the limit, it must be given in nominal and, 'at_most', no
 * larger. */
static int limit_one(const char *P, const char *lkey, const char *res,
                     int64_t lim, int64_t nom, bool at_most, bool bytes,
                     struct sl_error *err)
{
    char lp[PATH_MAX_LEN], p[PATH_MAX_LEN], a[32], b[32];

    if (lim < 0)
        return 0;
    path_key(lp, P, lkey);
    path_key(p, lp, res);
    if (nom < 0)
        return fail(err, p,
                    "needs spec.nominal.%s (a limit applies to a resource "
                    "with a nominal quota)",
                    res);
    if (at_most && lim > nom) {
        if (bytes) {
            snprintf(a, sizeof(a), "%" PRId64, nom);
            snprintf(b, sizeof(b), "%" PRId64, lim);
        } else {
            milli_text(nom, a, sizeof(a));
            milli_text(lim, b, sizeof(b));
        }
        return fail(err, p,
                    "must be at most spec.nominal.%s (%s), got %s: a queue "
                    "lends only what it has",
                    res, a, b);
    }
    return 0;
}

/* Every resource of limit 'l' (spec.<lkey>) is in 'nom'; with 'at_most'
 * none exceeds it. Models match ignoring case. */
static int check_limit(const char *P, const char *lkey,
                       const struct sl_res_list *l,
                       const struct sl_res_list *nom, bool at_most,
                       struct sl_error *err)
{
    int rc;

    if ((rc = limit_one(P, lkey, "gpus", l->gpu_milli, nom->gpu_milli,
                        at_most, false, err)) < 0)
        return rc;
    for (int i = 0; i < l->nmodels; i++) {
        char res[64];
        int64_t n = -1;

        for (int k = 0; k < nom->nmodels; k++)
            if (strcasecmp(nom->model[k], l->model[i]) == 0)
                n = nom->model_milli[k];
        snprintf(res, sizeof(res), "gpusByModel.%s", l->model[i]);
        if ((rc = limit_one(P, lkey, res, l->model_milli[i], n, at_most, false,
                            err)) < 0)
            return rc;
    }
    if ((rc = limit_one(P, lkey, "cpus", l->cpu_milli, nom->cpu_milli, at_most,
                        false, err)) < 0)
        return rc;
    return limit_one(P, lkey, "memory", l->mem_bytes, nom->mem_bytes, at_most,
                     true, err);
}

static int team_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                     struct sl_error *err)
{
    int rc;

    if (!spec)
        return 0;
    if ((rc = check_object(spec, P, team_spec_keys, err)) < 0)
        return rc;
    return get_name(spec, "defaultQueue", P, m->u.team.default_queue, false,
                    err);
}

static int queue_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                      struct sl_error *err)
{
    static const struct {
        const char *key; /* the limit's field */
        const char *why; /* why it needs a cohort */
        bool at_most;    /* each amount <= nominal */
    } limits[] = {
        {"borrowingLimit", "borrowing happens inside a cohort", false},
        {"lendingLimit", "lending happens inside a cohort", true},
    };
    struct sl_res_list *lists[] = {&m->u.queue.borrowing_limit,
                                   &m->u.queue.lending_limit};
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc;

    m->u.queue.weight_milli = DEFAULT_WEIGHT_MILLI;
    m->u.queue.preempt_within = SL_PREEMPT_LOWER_PRIORITY;
    m->u.queue.reclaim = SL_RECLAIM_ANY;
    sl_res_list_init(&m->u.queue.nominal);
    sl_res_list_init(&m->u.queue.borrowing_limit);
    sl_res_list_init(&m->u.queue.lending_limit);
    sl_res_list_init(&m->u.queue.user_limit);
    if (!spec)
        return fail(err, P, "is required (spec.team names the owner)");
    if ((rc = check_object(spec, P, queue_spec_keys, err)) < 0 ||
        (rc = get_name(spec, "team", P, m->u.queue.team, true, err)) < 0 ||
        (rc = get_name(spec, "cohort", P, m->u.queue.cohort, false, err)) < 0)
        return rc;
    if ((v = member(spec, "weight"))) {
        path_key(p, P, "weight");
        if ((rc = get_milli(v, p, WEIGHT_MILLI_MIN, WEIGHT_MILLI_MAX,
                            WEIGHT_WHAT, &m->u.queue.weight_milli, err)) < 0)
            return rc;
    }
    if ((rc = get_res_list(spec, "nominal", P, &m->u.queue.nominal, err)) < 0)
        return rc;
    for (size_t i = 0; i < SL_ARRAY_LEN(limits); i++) {
        path_key(p, P, limits[i].key);
        if (member(spec, limits[i].key) && !m->u.queue.cohort[0])
            return fail(err, p, "needs spec.cohort (%s)", limits[i].why);
        if ((rc = get_res_list(spec, limits[i].key, P, lists[i], err)) < 0 ||
            (rc = check_limit(P, limits[i].key, lists[i],
                              &m->u.queue.nominal, limits[i].at_most, err)) <
                0)
            return rc;
    }
    if ((rc = get_res_list(spec, "userLimit", P, &m->u.queue.user_limit,
                           err)) < 0)
        return rc;
    if (!(v = member(spec, "preemption")))
        return 0;
    path_key(p, P, "preemption");
    if ((rc = check_object(v, p, queue_preemption_keys, err)) < 0 ||
        (rc = get_enum(v, "withinQueue", p, preempt_within_names,
                       &m->u.queue.preempt_within, err)) < 0)
        return rc;
    return get_enum(v, "reclaimWithinCohort", p, reclaim_names,
                    &m->u.queue.reclaim, err);
}

static int cohort_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    const json_t *v;
    const unsigned char *s;
    char p[PATH_MAX_LEN];
    int rc;

    if (!spec)
        return 0;
    if ((rc = check_object(spec, P, cohort_spec_keys, err)) < 0 ||
        (rc = get_string(spec, "description", P, DESCRIPTION_MAX, &v, err)) <
            0)
        return rc;
    if (!v)
        return 0;
    path_key(p, P, "description");
    /* C0 controls, DEL and the C1 controls U+0080..U+009F (UTF-8 C2 80..9F);
     * the decoder has already checked the UTF-8. */
    s = (const unsigned char *)json_string_value(v);
    for (size_t i = 0; s[i]; i++)
        if (s[i] < 0x20 || s[i] == 0x7f ||
            (s[i] == 0xc2 && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f))
            return fail(err, p,
                        "must not contain control characters (such as a "
                        "newline or a tab), found one at byte %zu",
                        i);
    sl_strlcpy(m->u.cohort.description, json_string_value(v),
               sizeof(m->u.cohort.description));
    return 0;
}

static int pclass_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    char p[PATH_MAX_LEN];
    int64_t value = 0;
    bool present = false;
    int rc;

    m->u.pclass.preemptible = true;
    m->u.pclass.is_default = false;
    m->u.pclass.opportunistic = false;
    m->u.pclass.min_runtime_ms = 0;
    if (!spec)
        return fail(err, P, "is required (spec.value sets the priority)");
    if ((rc = check_object(spec, P, pclass_spec_keys, err)) < 0)
        return rc;
    if ((rc = get_int(spec, "value", P, -PCLASS_VALUE_MAX, PCLASS_VALUE_MAX,
                      &value, &present, err)) < 0)
        return rc;
    if (!present) {
        path_key(p, P, "value");
        return fail(err, p, "is required");
    }
    m->u.pclass.value = (int)value;
    if ((rc = get_bool(spec, "preemptible", P, &m->u.pclass.preemptible,
                       err)) < 0 ||
        (rc = get_bool(spec, "default", P, &m->u.pclass.is_default, err)) < 0 ||
        (rc = get_bool(spec, "opportunistic", P, &m->u.pclass.opportunistic,
                       err)) < 0)
        return rc;
    if (m->u.pclass.opportunistic && !m->u.pclass.preemptible) {
        path_key(p, P, "opportunistic");
        return fail(err, p,
                    "cannot be true with preemptible: false (opportunistic "
                    "jobs are the first to be preempted)");
    }
    return get_duration(spec, "minRuntime", P, 0, MIN_RUNTIME_MS_MAX,
                        "a duration from 0s to 30d",
                        &m->u.pclass.min_runtime_ms, err);
}

static int user_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                     struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc, role = 1;

    if (!spec)
        return fail(err, P, "is required (spec.team names the user's team)");
    if ((rc = check_object(spec, P, user_spec_keys, err)) < 0)
        return rc;
    if ((rc = get_name(spec, "team", P, m->u.user.team, true, err)) < 0)
        return rc;
    if ((rc = get_enum(spec, "role", P, role_names, &role, err)) < 0)
        return rc;
    sl_strlcpy(m->u.user.role, enum_name(role_names, role),
               sizeof(m->u.user.role));
    if ((rc = get_string(spec, "unixUser", P, 64, &v, err)) < 0)
        return rc;
    if (v) {
        path_key(p, P, "unixUser");
        if (!sl_unix_name_valid(json_string_value(v)))
            return fail_got(err, p,
                            "a Unix user name matching "
                            "[a-z_][a-z0-9_-]{0,31}",
                            v);
        sl_strlcpy(m->u.user.unix_user, json_string_value(v),
                   sizeof(m->u.user.unix_user));
    }
    return 0;
}

static int sched_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                      struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int64_t reservations = 1;
    int rc;

    m->u.sched.placement = SL_PLACE_FGD;
    m->u.sched.backfill = true;
    m->u.sched.reservations = 1;
    m->u.sched.half_life_ms = DEFAULT_HALF_LIFE_MS;
    m->u.sched.preemption = true;
    m->u.sched.min_runtime_ms = 0;
    m->u.sched.nweights = 0;
    if (!spec)
        return 0;
    if ((rc = check_object(spec, P, sched_spec_keys, err)) < 0 ||
        (rc = get_enum(spec, "placement", P, placement_names,
                       &m->u.sched.placement, err)) < 0 ||
        (rc = get_bool(spec, "backfill", P, &m->u.sched.backfill, err)) < 0 ||
        (rc = get_int(spec, "reservations", P, 1, RESERVATIONS_MAX,
                      &reservations, NULL, err)) < 0)
        return rc;
    m->u.sched.reservations = (int)reservations;
    if ((v = member(spec, "fairShare"))) {
        path_key(p, P, "fairShare");
        if ((rc = check_object(v, p, sched_fair_keys, err)) < 0 ||
            (rc = get_duration(v, "halfLife", p, 0, HALF_LIFE_MS_MAX,
                               "a duration from 0s to 3650d",
                               &m->u.sched.half_life_ms, err)) < 0)
            return rc;
    }
    if ((v = member(spec, "preemption"))) {
        path_key(p, P, "preemption");
        if ((rc = check_object(v, p, sched_preemption_keys, err)) < 0 ||
            (rc = get_bool(v, "enabled", p, &m->u.sched.preemption, err)) < 0 ||
            (rc = get_duration(v, "minRuntime", p, 0, MIN_RUNTIME_MS_MAX,
                               "a duration from 0s to 30d",
                               &m->u.sched.min_runtime_ms, err)) < 0)
            return rc;
    }
    if (!(v = member(spec, "modelWeights")))
        return 0;
    path_key(p, P, "modelWeights");
    return get_model_map(v, p, WEIGHT_MILLI_MIN, WEIGHT_MILLI_MAX, WEIGHT_WHAT,
                         m->u.sched.weight_model, m->u.sched.weight_milli,
                         &m->u.sched.nweights, err);
}

static int pricing_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                        struct sl_error *err)
{
    return sl_pricing_parse(spec, P, &m->u.pricing, err);
}

static int budget_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    int rc = sl_budget_parse(spec, P, &m->u.budget, err);

    sl_strlcpy(m->u.budget.name, m->name, sizeof(m->u.budget.name));
    return rc;
}

static int policy_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    return sl_policy_parse(spec, P, m->name, &m->u.policy, err);
}

static int dataset_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                        struct sl_error *err)
{
    return sl_dataset_parse(spec, P, m->name, &m->u.dataset, err);
}

/* The spec of one manifest, by kind: {kind, parse its spec (NULL when
 * absent) at path P}. */
static const struct {
    enum sl_manifest_kind kind;
    int (*parse)(const json_t *spec, const char *P, struct sl_manifest *m,
                 struct sl_error *err);
} spec_parsers[] = {
    {SL_KIND_TEAM, team_spec},     {SL_KIND_QUEUE, queue_spec},
    {SL_KIND_PRIORITY_CLASS, pclass_spec}, {SL_KIND_USER, user_spec},
    {SL_KIND_COHORT, cohort_spec}, {SL_KIND_SCHEDULER, sched_spec},
    {SL_KIND_PRICING, pricing_spec}, {SL_KIND_BUDGET, budget_spec},
    {SL_KIND_POLICY, policy_spec},   {SL_KIND_DATASET, dataset_spec},
};

/* The spec of one manifest, its kind and name already known. */
static int manifest_spec(const json_t *doc, const char *prefix,
                         struct sl_manifest *m, struct sl_error *err)
{
    char P[PATH_MAX_LEN];

    path_key(P, prefix, "spec");
    for (size_t i = 0; i < SL_ARRAY_LEN(spec_parsers); i++)
        if (spec_parsers[i].kind == m->kind)
            return spec_parsers[i].parse(member(doc, "spec"), P, m, err);
    return fail(err, P, "no parser for this kind"); /* not reached */
}

static int manifest_one(const json_t *doc, const char *prefix,
                        struct sl_manifest *m, struct sl_error *err)
{
    const json_t *meta;
    const char *kind;
    char p[PATH_MAX_LEN], np[PATH_MAX_LEN];
    size_t i;
    int rc;

    if (!json_is_object(doc))
        return fail_got(err, prefix, "an object (a manifest)", doc);
    if ((rc = check_object(doc, prefix, top_keys, err)) < 0 ||
        (rc = check_header(doc, prefix, &kind, err)) < 0)
        return rc;
    path_key(p, prefix, "kind");
    if (strcmp(kind, "Job") == 0)
        return fail(err, p,
                    "Job is not a manifest: submit jobs with `sluice submit "
                    "-f FILE`");
    for (i = 0; manifest_kinds[i].name; i++)
        if (strcmp(kind, manifest_kinds[i].name) == 0)
            break;
    if (!manifest_kinds[i].name)
        return fail_got(err, p,
                        "one of Team, Queue, PriorityClass, User, Cohort, "
                        "Scheduler, Pricing, Budget, Policy or Dataset",
                        member(doc, "kind"));
    m->kind = (enum sl_manifest_kind)manifest_kinds[i].value;
    path_key(p, prefix, "metadata");
    if (!(meta = member(doc, "metadata")))
        return fail(err, p, "is required (metadata.name names the object)");
    if ((rc = check_object(meta, p, manifest_meta_keys, err)) < 0 ||
        (rc = get_name(meta, "name", p, m->name, true, err)) < 0)
        return rc;
    if (m->kind == SL_KIND_SCHEDULER && strcmp(m->name, SCHEDULER_NAME) != 0) {
        path_key(np, p, "name");
        return fail(err, np,
                    "must be \"" SCHEDULER_NAME "\" (there is one scheduler), "
                    "got \"%s\"",
                    m->name);
    }
    if (m->kind == SL_KIND_PRICING && strcmp(m->name, SCHEDULER_NAME) != 0) {
        path_key(np, p, "name");
        return fail(err, np,
                    "must be \"default\" (one Pricing is in force), got \"%s\"",
                    m->name);
    }
    return manifest_spec(doc, prefix, m, err);
}

int sl_manifests_parse(const char *buf, size_t len, struct sl_manifest **out,
                       size_t *n, struct sl_error *err)
{
    json_t *docs = NULL;
    struct sl_manifest *ms = NULL;
    size_t count = 0;
    int rc;

    if ((rc = sl_doc_decode(buf, len, true, &docs, err)) < 0)
        goto out;
    count = json_array_size(docs);
    if (count == 0) {
        rc = fail(err, "", "no manifests found");
        goto out;
    }
    if (count > MANIFESTS_MAX) {
        rc = fail(err, "", "at most %d manifests per file, got %zu",
                  MANIFESTS_MAX, count);
        goto out;
    }
    if (!(ms = calloc(count, sizeof(*ms)))) {
        rc = oom(err);
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        char prefix[16] = "";

        if (count > 1)
            snprintf(prefix, sizeof(prefix), "[%zu]", i);
        if ((rc = manifest_one(json_array_get(docs, i), prefix, &ms[i], err)) <
            0)
            goto out;
        for (size_t k = 0; k < i; k++) {
            if (ms[k].kind == ms[i].kind && !strcmp(ms[k].name, ms[i].name)) {
                char p[PATH_MAX_LEN];
                path_key(p, prefix, "metadata.name");
                rc = fail(err, p, "%s \"%s\" is declared twice (also at [%zu])",
                          enum_name(manifest_kinds, (int)ms[i].kind),
                          ms[i].name, k);
                goto out;
            }
        }
    }
    *out = ms;
    *n = count;
    ms = NULL;
out:
    free(ms);
    json_decref(docs);
    return rc;
}

/* ---- manifests: normalised spec ---- */

/* Milli-units as a JSON number: an integer when whole, else a real
 * (500 -> 0.5). milli / 1000.0 is the double nearest the decimal, the one
 * strtod gives for its text, so milli_of_real reads it back exactly. */
static json_t *milli_json(int64_t milli)
{
    if (milli % 1000 == 0)
        return json_integer(milli / 1000);
    return json_real((double)milli / 1000.0);
}

/* CPUs as a whole number or a "<milli>m" string (1500 -> "1500m"). */
static json_t *cpu_json(int64_t milli)
{
    char buf[32];

    if (milli % 1000 == 0)
        return json_integer(milli / 1000);
    snprintf(buf, sizeof(buf), "%" PRId64 "m", milli);
    return json_string(buf);
}

static json_t *model_map_json(const char names[][48], const int64_t *milli,
                              int n)
{
    json_t *o = json_object();

    for (int i = 0; o && i < n; i++) {
        if (!put(o, names[i], milli_json(milli[i]))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static bool res_list_given(const struct sl_res_list *l)
{
    return l->gpu_milli >= 0 || l->nmodels > 0 || l->cpu_milli >= 0 ||
           l->mem_bytes >= 0;
}

/* spec[key] = the list, left out when nothing is given (as absent or {}
 * parses). False on -ENOMEM. */
static bool put_res_list(json_t *spec, const char *key,
                         const struct sl_res_list *l)
{
    json_t *o;

    if (!res_list_given(l))
        return true;
    if (!(o = json_object()))
        return false;
    if ((l->gpu_milli >= 0 && !put(o, "gpus", milli_json(l->gpu_milli))) ||
        (l->nmodels > 0 &&
         !put(o, "gpusByModel",
              model_map_json(l->model, l->model_milli, l->nmodels))) ||
        (l->cpu_milli >= 0 && !put(o, "cpus", cpu_json(l->cpu_milli))) ||
        (l->mem_bytes >= 0 && !put(o, "memory", json_integer(l->mem_bytes)))) {
        json_decref(o);
        return false;
    }
    return put(spec, key, o);
}

/* Object {k: v} from a stolen value (may be NULL); NULL on failure. */
static json_t *obj1(const char *k, json_t *v)
{
    json_t *o = json_object();

    if (!o) {
        json_decref(v);
        return NULL;
    }
    if (!put(o, k, v)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Object {k1: v1, k2: v2} from stolen values; NULL on failure. */
static json_t *obj2(const char *k1, json_t *v1, const char *k2, json_t *v2)
{
    json_t *o = obj1(k1, v1);

    if (!o) {
        json_decref(v2);
        return NULL;
    }
    if (!put(o, k2, v2)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sl_manifest_spec_json(const struct sl_manifest *m)
{
    json_t *spec = json_object(), *result = NULL;
    bool good = spec != NULL;

    if (!good)
        goto out;
    switch (m->kind) {
    case SL_KIND_TEAM:
        good = put_str_opt(spec, "defaultQueue", m->u.team.default_queue);
        break;
    case SL_KIND_QUEUE:
        good = put(spec, "team", json_string(m->u.queue.team)) &&
               put_str_opt(spec, "cohort", m->u.queue.cohort) &&
               put(spec, "weight", milli_json(m->u.queue.weight_milli)) &&
               put_res_list(spec, "nominal", &m->u.queue.nominal) &&
               put_res_list(spec, "borrowingLimit",
                            &m->u.queue.borrowing_limit) &&
               put_res_list(spec, "lendingLimit", &m->u.queue.lending_limit) &&
               put_res_list(spec, "userLimit", &m->u.queue.user_limit) &&
               put(spec, "preemption",
                   obj2("withinQueue",
                             json_string(enum_name(preempt_within_names,
                                                   m->u.queue.preempt_within)),
                             "reclaimWithinCohort",
                             json_string(enum_name(reclaim_names,
                                                   m->u.queue.reclaim))));
        break;
    case SL_KIND_PRIORITY_CLASS:
        good = put(spec, "value", json_integer(m->u.pclass.value)) &&
               put(spec, "preemptible",
                   json_boolean(m->u.pclass.preemptible)) &&
               put(spec, "default", json_boolean(m->u.pclass.is_default)) &&
               put(spec, "opportunistic",
                   json_boolean(m->u.pclass.opportunistic)) &&
               put(spec, "minRuntime",
                   duration_json(m->u.pclass.min_runtime_ms));
        break;
    case SL_KIND_USER:
        good = put(spec, "team", json_string(m->u.user.team)) &&
               put(spec, "role", json_string(m->u.user.role)) &&
               put_str_opt(spec, "unixUser", m->u.user.unix_user);
        break;
    case SL_KIND_COHORT:
        good = put(spec, "description", json_string(m->u.cohort.description));
        break;
    case SL_KIND_SCHEDULER:
        good = put(spec, "placement",
                   json_string(sl_placement_name(m->u.sched.placement))) &&
               put(spec, "backfill", json_boolean(m->u.sched.backfill)) &&
               put(spec, "reservations",
                   json_integer(m->u.sched.reservations)) &&
               put(spec, "fairShare",
                   obj1("halfLife", duration_json(m->u.sched.half_life_ms))) &&
               put(spec, "preemption",
                   obj2("enabled", json_boolean(m->u.sched.preemption),
                             "minRuntime",
                             duration_json(m->u.sched.min_runtime_ms))) &&
               put(spec, "modelWeights",
                   model_map_json(m->u.sched.weight_model,
                                  m->u.sched.weight_milli,
                                  m->u.sched.nweights));
        break;
    case SL_KIND_PRICING:
        json_decref(spec);
        spec = sl_pricing_json(&m->u.pricing);
        good = spec != NULL;
        break;
    case SL_KIND_BUDGET:
        json_decref(spec);
        spec = sl_budget_json(&m->u.budget);
        good = spec != NULL;
        break;
    case SL_KIND_POLICY:
        json_decref(spec);
        spec = sl_policy_json(&m->u.policy);
        good = spec != NULL;
        break;
    case SL_KIND_DATASET:
        json_decref(spec);
        spec = sl_dataset_json(&m->u.dataset);
        good = spec != NULL;
        break;
    }
out:
    if (good) {
        result = spec;
        spec = NULL;
    }
    json_decref(spec);
    if (!result)
        errno = ENOMEM;
    return result;
}

/* ---- placement names ---- */

const char *sl_placement_name(int p)
{
    if (p < 0 || (size_t)p >= SL_ARRAY_LEN(placement_names) - 1)
        return "?";
    return placement_names[p].name;
}

int sl_placement_parse(const char *name)
{
    if (!name)
        return -EINVAL;
    for (size_t i = 0; placement_names[i].name; i++)
        if (strcmp(name, placement_names[i].name) == 0)
            return placement_names[i].value;
    return -EINVAL;
}
