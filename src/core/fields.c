/*
 * fields.c - the readers every document parser uses: error text that names
 * a field by its full path, typed field readers, and the value parsers of
 * durations, CPU and memory quantities, amounts with at most three
 * decimals and names; the tables of the enumerated fields. See
 * spec_int.h.
 *
 * A JSON null is taken as "absent" (YAML writes an empty value that way);
 * it satisfies no required field. Integers must be JSON integers: 1.5, "1"
 * and true are refused where an integer is expected. Amounts that may be
 * fractional (GPUs, weights) are numbers with at most three decimals, kept
 * as integer milli-units; see milli_of_real() for how a binary double
 * becomes an exact milli count.
 */
#include "spec_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_MAX 40               /* bytes of a bad value quoted in errors */
#define GPU_MODEL_MAX 47
#define MEM_BYTES_MAX (1LL << 50)                /* 1 PiB per task */

/* ---- the enumerated fields ---- */

const struct enum_row sl_spec_topology_names[] = {
    {"any", SL_TOPO_ANY},
    {"same-node", SL_TOPO_SAME_NODE},
    {"same-domain", SL_TOPO_SAME_DOMAIN},
    {NULL, 0},
};

const struct enum_row sl_spec_network_names[] = {
    {"isolated", SL_NET_ISOLATED},
    {"internal", SL_NET_INTERNAL},
    {"egress", SL_NET_EGRESS},
    {NULL, 0},
};

const struct enum_row sl_spec_role_names[] = {
    {"admin", 0},
    {"member", 1},
    {"viewer", 2},
    {"team-admin", 3},
    {"auditor", 4},
    {NULL, 0},
};

/* Manifest kinds: {kind name, enum value}. */
const struct enum_row sl_spec_manifest_kinds[] = {
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

const struct enum_row sl_spec_preempt_within_names[] = {
    {"LowerPriority", SL_PREEMPT_LOWER_PRIORITY},
    {"Never", SL_PREEMPT_NEVER},
    {NULL, 0},
};

const struct enum_row sl_spec_reclaim_names[] = {
    {"Any", SL_RECLAIM_ANY},
    {"LowerPriority", SL_RECLAIM_LOWER_PRIORITY},
    {"Never", SL_RECLAIM_NEVER},
    {NULL, 0},
};

/* Indexed by enum sl_placement: sl_placement_name relies on the order. */
const struct enum_row sl_spec_placement_names[] = {
    {"fgd", SL_PLACE_FGD},
    {"bestfit", SL_PLACE_BESTFIT},
    {"packing", SL_PLACE_PACKING},
    {"clustering", SL_PLACE_CLUSTERING},
    {"dotprod", SL_PLACE_DOTPROD},
    {"random", SL_PLACE_RANDOM},
    {"spread", SL_PLACE_SPREAD},
    {NULL, 0},
};

/* The keys of a document's top level. */
const char *const sl_spec_top_keys[] = {"apiVersion", "kind", "metadata", "spec", NULL};

/* ---- error text helpers ---- */

/* A short description of a value for "got ..." in an error. */
const char *sl_spec_describe(const json_t *v, char *buf, size_t size)
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

int sl_spec_fail(struct sl_error *err, const char *path, const char *fmt, ...)
{
    char text[sizeof(err->text)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return sl_errorf_field(err, -EINVAL, path, "%s", text);
}

/* "must be <what>, got <value>" */
int sl_spec_fail_got(struct sl_error *err, const char *path, const char *what,
                     const json_t *v)
{
    char got[64];
    return sl_spec_fail(err, path, "must be %s, got %s", what,
                        sl_spec_describe(v, got, sizeof(got)));
}

int sl_spec_oom(struct sl_error *err)
{
    return sl_errorf_field(err, -ENOMEM, "", "out of memory");
}

/* ---- paths ---- */

/* Paths are at most a known prefix and one shown key (SHOW_MAX bytes), so
 * they fit; a cut would still leave a terminated string. */
void sl_spec_path_key(char *dst, const char *parent, const char *key)
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
const json_t *sl_spec_member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* 'v' is an object whose every key is in 'allowed'. */
int sl_spec_check_object(const json_t *v, const char *path,
                         const char *const *allowed, struct sl_error *err)
{
    const char *k;
    json_t *e;

    if (!json_is_object(v))
        return sl_spec_fail_got(err, path, "an object", v);
    json_object_foreach((json_t *)v, k, e)
    {
        size_t i;
        for (i = 0; allowed[i]; i++)
            if (strcmp(k, allowed[i]) == 0)
                break;
        if (!allowed[i]) {
            char p[PATH_MAX_LEN];
            sl_spec_path_key(p, path, k);
            return sl_spec_fail(err, p, "unknown field");
        }
        if (json_is_null(e)) {
            /* One meaning: a field is given or left out. "gpus: null"
             * could read as none, any or the default. */
            char p[PATH_MAX_LEN];
            sl_spec_path_key(p, path, k);
            return sl_spec_fail(err, p, "must not be null: leave the field out for its default");
        }
    }
    return 0;
}

/* A string without NUL bytes of at most 'max' bytes; *out is NULL when
 * absent. */
int sl_spec_get_string(const json_t *obj, const char *key, const char *parent,
                       size_t max, const json_t **out, struct sl_error *err)
{
    const json_t *v = sl_spec_member(obj, key);
    char p[PATH_MAX_LEN];

    *out = NULL;
    if (!v)
        return 0;
    sl_spec_path_key(p, parent, key);
    if (!json_is_string(v))
        return sl_spec_fail_got(err, p, "a string", v);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return sl_spec_fail(err, p, "must not contain NUL bytes");
    if (json_string_length(v) > max)
        return sl_spec_fail(err, p, "must be at most %zu bytes, got %zu", max,
                            json_string_length(v));
    *out = v;
    return 0;
}

static int check_name(const json_t *v, const char *path, struct sl_error *err)
{
    if (!sl_name_valid(json_string_value(v)))
        return sl_spec_fail_got(err, path,
                                "1 to 63 characters of a-z, 0-9 and '-', starting "
                                "and ending with a letter or digit",
                                v);
    return 0;
}

/* An optional name into dst (left "" when absent). */
int sl_spec_get_name(const json_t *obj, const char *key, const char *parent,
                     char dst[SL_NAME_MAX + 1], bool required,
                     struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc;

    sl_spec_path_key(p, parent, key);
    if ((rc = sl_spec_get_string(obj, key, parent, 1024, &v, err)) < 0)
        return rc;
    if (!v)
        return required ? sl_spec_fail(err, p, "is required") : 0;
    if ((rc = check_name(v, p, err)) < 0)
        return rc;
    sl_strlcpy(dst, json_string_value(v), SL_NAME_MAX + 1);
    return 0;
}

/* An integer in [min, max]; *out untouched when absent. */
int sl_spec_get_int(const json_t *obj, const char *key, const char *parent,
                    int64_t min, int64_t max, int64_t *out, bool *present,
                    struct sl_error *err)
{
    const json_t *v = sl_spec_member(obj, key);
    char p[PATH_MAX_LEN], what[80];

    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    sl_spec_path_key(p, parent, key);
    snprintf(what, sizeof(what), "an integer from %" PRId64 " to %" PRId64,
             min, max);
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max)
        return sl_spec_fail_got(err, p, what, v);
    *out = json_integer_value(v);
    return 0;
}

int sl_spec_get_bool(const json_t *obj, const char *key, const char *parent,
                     bool *out, struct sl_error *err)
{
    const json_t *v = sl_spec_member(obj, key);
    char p[PATH_MAX_LEN];

    if (!v)
        return 0;
    sl_spec_path_key(p, parent, key);
    if (!json_is_boolean(v))
        return sl_spec_fail_got(err, p, "true or false", v);
    *out = json_is_true(v);
    return 0;
}

int sl_spec_get_enum(const json_t *obj, const char *key, const char *parent,
                     const struct enum_row *table, int *out,
                     struct sl_error *err)
{
    const json_t *v = sl_spec_member(obj, key);
    char p[PATH_MAX_LEN], what[96] = "one of";
    size_t used = strlen(what);

    if (!v)
        return 0;
    sl_spec_path_key(p, parent, key);
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
    return sl_spec_fail_got(err, p, what, v);
}

const char *sl_spec_enum_name(const struct enum_row *table, int value)
{
    for (size_t i = 0; table[i].name; i++)
        if (table[i].value == value)
            return table[i].name;
    return table[0].name;
}

/* A duration: a string for sl_parse_duration_ms or integer seconds; the
 * result must lie in [min_ms, max_ms], which 'range' says in words. */
int sl_spec_get_duration(const json_t *obj, const char *key, const char *parent,
                         int64_t min_ms, int64_t max_ms, const char *range,
                         int64_t *out, struct sl_error *err)
{
    const json_t *v = sl_spec_member(obj, key);
    char p[PATH_MAX_LEN], what[96];
    int64_t ms = -1;

    if (!v)
        return 0;
    sl_spec_path_key(p, parent, key);
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
        return sl_spec_fail_got(err, p, what, v);
    *out = ms;
    return 0;
}

/* An array of at most 'max' strings, each checked by 'check'. */
int sl_spec_get_string_array(const json_t *obj, const char *key,
                             const char *parent, size_t max, item_check_fn check,
                             const json_t **out, struct sl_error *err)
{
    const json_t *v = sl_spec_member(obj, key);
    char p[PATH_MAX_LEN], what[64];
    int rc;

    *out = NULL;
    if (!v)
        return 0;
    sl_spec_path_key(p, parent, key);
    snprintf(what, sizeof(what), "an array of at most %zu strings", max);
    if (!json_is_array(v))
        return sl_spec_fail_got(err, p, what, v);
    if (json_array_size(v) > max)
        return sl_spec_fail(err, p, "must have at most %zu entries, got %zu", max,
                            json_array_size(v));
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        char ip[PATH_MAX_LEN];

        path_index(ip, p, i);
        if (!json_is_string(e))
            return sl_spec_fail_got(err, ip, "a string", e);
        if (strlen(json_string_value(e)) != json_string_length(e))
            return sl_spec_fail(err, ip, "must not contain NUL bytes");
        if ((rc = check(e, ip, err)) < 0)
            return rc;
    }
    *out = v;
    return 0;
}

/* ---- item rules ---- */

bool sl_spec_all_chars(const char *s, size_t min, size_t max, const char *set)
{
    size_t n = strlen(s);

    if (n < min || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr(set, s[i]))
            return false;
    return true;
}

/* The GPU model rule: 1..47 of A-Z a-z 0-9 . _ - (gpuModels entries and
 * the keys of gpusByModel and modelWeights). */
bool sl_spec_gpu_model_valid(const char *s)
{
    /* isalnum is locale-dependent; the check below keeps it to ASCII. */
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c >= 0x80)
            return false;
    return sl_spec_all_chars(s, 1, GPU_MODEL_MAX, "._-");
}

/* ---- quantities ---- */

/* A CPU amount at path 'p': integer or decimal CPUs, or a string for
 * sl_parse_cpu_milli ("250m", "0.5"), in [min_milli, CPU_MILLI_MAX]. A job
 * asks for at least 1 milli-CPU; a resource list may give 0. */
int sl_spec_parse_cpus(const json_t *v, const char *p, int64_t min_milli,
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
                return sl_spec_fail_got(err, p, "a multiple of 0.001 CPU", v);
        }
    } else if (json_is_string(v) &&
               strlen(json_string_value(v)) == json_string_length(v)) {
        if (sl_parse_cpu_milli(json_string_value(v), &milli) < 0)
            milli = -1;
    }
    if (milli < min_milli || milli > CPU_MILLI_MAX)
        return sl_spec_fail_got(err, p, what, v);
    *out = milli;
    return 0;
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
int sl_spec_parse_memory(const json_t *v, const char *p, int64_t min_bytes,
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
        return sl_spec_fail_got(err, p,
                                min_bytes > 0
                                    ? "a memory size above 0 and at most 1Pi such as "
                                      "\"16Gi\" or a number of bytes"
                                    : "a memory size from 0 to 1Pi such as \"16Gi\" "
                                      "or a number of bytes",
                                v);
    *out = bytes;
    return 0;
}

/* ---- the document header ---- */

/* apiVersion and kind; *kind receives the kind's text. */
int sl_spec_check_header(const json_t *doc, const char *prefix,
                         const char **kind, struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc;

    sl_spec_path_key(p, prefix, "apiVersion");
    if ((rc = sl_spec_get_string(doc, "apiVersion", prefix, 64, &v, err)) < 0)
        return rc;
    if (!v)
        return sl_spec_fail(err, p, "is required (apiVersion: %s)", API_VERSION);
    if (strcmp(json_string_value(v), API_VERSION) != 0)
        return sl_spec_fail_got(err, p, "\"" API_VERSION "\"", v);
    sl_spec_path_key(p, prefix, "kind");
    if ((rc = sl_spec_get_string(doc, "kind", prefix, 64, &v, err)) < 0)
        return rc;
    if (!v)
        return sl_spec_fail(err, p, "is required");
    *kind = json_string_value(v);
    return 0;
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

/* ---- fractional amounts (GPUs, weights) ---- */

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
int sl_spec_get_milli(const json_t *v, const char *path, int64_t min_milli,
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
        return sl_spec_fail_got(err, path, what, v);
    *out = milli;
    return 0;
}

/* ---- placement names ---- */

const char *sl_placement_name(int p)
{
    if (p < 0 || (size_t)p >= SL_ARRAY_LEN(sl_spec_placement_names) - 1)
        return "?";
    return sl_spec_placement_names[p].name;
}

int sl_placement_parse(const char *name)
{
    if (!name)
        return -EINVAL;
    for (size_t i = 0; sl_spec_placement_names[i].name; i++)
        if (strcmp(name, sl_spec_placement_names[i].name) == 0)
            return sl_spec_placement_names[i].value;
    return -EINVAL;
}
