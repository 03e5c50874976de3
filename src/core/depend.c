/*
 * depend.c - job dependencies in Slurm's syntax: parse, normalise, judge.
 * See depend.h.
 */
#include "depend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "array.h"

#define FIELD "spec.dependency"
#define ID_MAX (INT64_C(1) << 53)

static const char *const type_names[] = {"afterok", "afternotok", "afterany", "singleton"};

const char *sl_dep_type_name(enum sl_dep_type t)
{
    return (unsigned)t < 4 ? type_names[t] : "?";
}

/* One decimal id of [p, end). Returns it, or 0 when it is not one. */
static int64_t parse_id(const char *p, const char *end)
{
    int64_t v = 0;

    if (p == end || (*p == '0') || end - p > 16)
        return 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (*p - '0');
    }
    return v <= ID_MAX ? v : 0;
}

/* An array index of [p, end) ("0" or no leading zero). Returns it, or -1. */
static int32_t parse_index(const char *p, const char *end)
{
    int32_t v = 0;

    if (p == end || (*p == '0' && end - p > 1) || end - p > 6)
        return -1;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v <= SL_ARRAY_INDEX_MAX ? v : -1;
}

/* "12" or "12_3" */
static const char *item_text(const struct sl_dep_item *it, char *buf, size_t size)
{
    if (it->index >= 0)
        snprintf(buf, size, "%" PRId64 "_%" PRId32, it->id, it->index);
    else
        snprintf(buf, size, "%" PRId64, it->id);
    return buf;
}

static int add_item(struct sl_depend *d, enum sl_dep_type t, int64_t id, int32_t index,
                    struct sl_error *err)
{
    struct sl_dep_item it = {.type = t, .id = id, .index = index};
    char num[48];

    for (int i = 0; i < d->n; i++)
        if (d->item[i].type == t && d->item[i].id == id && d->item[i].index == index)
            return id ? sl_errorf_field(err, -EINVAL, FIELD, "%s:%s is given twice",
                                        type_names[t], item_text(&it, num, sizeof(num)))
                      : sl_errorf_field(err, -EINVAL, FIELD, "singleton is given twice");
    if (d->n >= SL_DEP_MAX)
        return sl_errorf_field(err, -EINVAL, FIELD, "at most %d job ids", SL_DEP_MAX);
    d->item[d->n++] = it;
    return 0;
}

/* One condition: [p, end), no ','. */
static int parse_cond(const char *p, const char *end, struct sl_depend *d, struct sl_error *err)
{
    const char *colon = memchr(p, ':', (size_t)(end - p));
    size_t tlen = (size_t)((colon ? colon : end) - p);
    int t = -1, rc;

    for (int i = 0; i < 4; i++)
        if (strlen(type_names[i]) == tlen && memcmp(type_names[i], p, tlen) == 0)
            t = i;
    if (t < 0) {
        if (tlen == 5 && memcmp(p, "after", 5) == 0)
            return sl_errorf_field(err, -EINVAL, FIELD,
                                   "'after' (start after a job started) is not supported; "
                                   "use afterok, afternotok, afterany or singleton");
        return sl_errorf_field(err, -EINVAL, FIELD,
                               "unknown dependency type '%.*s': must be afterok, afternotok, "
                               "afterany or singleton",
                               (int)(tlen > 32 ? 32 : tlen), p);
    }
    if (t == SL_DEP_SINGLETON) {
        if (colon)
            return sl_errorf_field(err, -EINVAL, FIELD, "singleton takes no job id");
        return add_item(d, SL_DEP_SINGLETON, 0, -1, err);
    }
    if (!colon)
        return sl_errorf_field(err, -EINVAL, FIELD, "%s needs one or more job ids (%s:ID[:ID...])",
                               type_names[t], type_names[t]);
    for (p = colon + 1;; ) {
        const char *next = memchr(p, ':', (size_t)(end - p));
        const char *stop = next ? next : end;
        const char *us = memchr(p, '_', (size_t)(stop - p));
        int64_t id = parse_id(p, us ? us : stop);
        int32_t index = us ? parse_index(us + 1, stop) : -1;
        if (!id || (us && index < 0)) {
            if (memchr(p, '+', (size_t)(stop - p)))
                return sl_errorf_field(err, -EINVAL, FIELD, "'+time' delays are not supported");
            return sl_errorf_field(err, -EINVAL, FIELD,
                                   "'%.*s' is not a job id (a positive decimal number "
                                   "without leading zeros) nor ID_INDEX (an array's element, "
                                   "INDEX 0..%d)",
                                   (int)(stop - p > 32 ? 32 : stop - p), p,
                                   SL_ARRAY_INDEX_MAX);
        }
        if ((rc = add_item(d, (enum sl_dep_type)t, id, index, err)) < 0)
            return rc;
        if (!next)
            break;
        p = next + 1;
    }
    return 0;
}

int sl_depend_parse(const char *text, struct sl_depend *out, struct sl_error *err)
{
    const char *p = text;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!text || !*text)
        return sl_errorf_field(err, -EINVAL, FIELD, "must not be empty");
    if (strchr(text, '?'))
        return sl_errorf_field(err, -EINVAL, FIELD,
                               "'?' (any of) is not supported; join conditions with ',' "
                               "(all of)");
    for (const char *c = text; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == ':' || *c == ',' ||
              *c == '+' || *c == '_'))
            return sl_errorf_field(err, -EINVAL, FIELD,
                                   "unexpected character at offset %td: Slurm's syntax is "
                                   "TYPE:ID[:ID...][,TYPE:ID...] or singleton (an array's "
                                   "element: ID_INDEX)",
                                   c - text);
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        if (end == p)
            return sl_errorf_field(err, -EINVAL, FIELD, "empty condition at offset %td",
                                   p - text);
        if ((rc = parse_cond(p, end, out, err)) < 0)
            return rc;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

int sl_depend_format(const struct sl_depend *d, char *buf, size_t size)
{
    bool done[4] = {false, false, false, false};
    size_t len = 0;
    int n;

    if (size == 0)
        return -ENOSPC;
    buf[0] = '\0';
    for (int i = 0; i < d->n; i++) {
        enum sl_dep_type t = d->item[i].type;
        if ((unsigned)t >= 4 || done[t])
            continue;
        done[t] = true;
        n = snprintf(buf + len, size - len, "%s%s", len ? "," : "", type_names[t]);
        if (n < 0 || (size_t)n >= size - len)
            return -ENOSPC;
        len += (size_t)n;
        for (int k = i; k < d->n; k++) {
            char num[48];
            if (d->item[k].type != t || t == SL_DEP_SINGLETON)
                continue;
            n = snprintf(buf + len, size - len, ":%s", item_text(&d->item[k], num, sizeof(num)));
            if (n < 0 || (size_t)n >= size - len)
                return -ENOSPC;
            len += (size_t)n;
        }
    }
    return (int)len;
}

static bool state_ended(enum sl_job_state s)
{
    return sl_job_state_final(s);
}

/* Whether type 't' can still hold, holds, or never will, for what 'st'
 * says of the item. An array, as Slurm's test_job_array_complete(d): once
 * every element has ended, afterok holds when none failed, afternotok when
 * one did. */
static enum sl_dep_verdict judge(enum sl_dep_type t, const struct sl_dep_state *st)
{
    bool ok;

    if (!st->known)
        return SL_DEP_NEVER;
    if (st->elements > 0) {
        if (st->ended < st->elements)
            return SL_DEP_WAIT;
        ok = st->failed_id == 0;
    } else {
        if (!state_ended(st->state))
            return SL_DEP_WAIT;
        ok = st->state == SL_JOB_SUCCEEDED;
    }
    switch (t) {
    case SL_DEP_AFTEROK:
        return ok ? SL_DEP_MET : SL_DEP_NEVER;
    case SL_DEP_AFTERNOTOK:
        return !ok ? SL_DEP_MET : SL_DEP_NEVER;
    default:
        return SL_DEP_MET;
    }
}

/* The words of a verdict on item 'it' into 'text'. */
static void words(const struct sl_dep_item *it, const struct sl_dep_state *st,
                  enum sl_dep_verdict v, char *text, size_t size)
{
    const char *type = type_names[it->type];
    char name[48];

    item_text(it, name, sizeof(name));
    if (v == SL_DEP_WAIT && st->elements > 0)
        snprintf(text, size,
                 "waiting for dependency %s:%s (array %s: %d of %d elements ended; job %" PRId64
                 " is %s)",
                 type, name, name, st->ended, st->elements, st->waiting_id,
                 sl_job_state_name(st->waiting_state));
    else if (v == SL_DEP_WAIT)
        snprintf(text, size, "waiting for dependency %s:%s (job %" PRId64 " is %s)", type, name,
                 st->id ? st->id : it->id, sl_job_state_name(st->state));
    else if (!st->known)
        snprintf(text, size, "dependency %s:%s can never be satisfied: job %s does not exist",
                 type, name, name);
    else if (st->elements > 0 && st->failed_id)
        snprintf(text, size,
                 "dependency %s:%s can never be satisfied: job %" PRId64 " (%s_%" PRId32
                 ") ended %s",
                 type, name, st->failed_id, name, st->failed_index,
                 sl_job_state_name(st->failed_state));
    else if (st->elements > 0)
        snprintf(text, size,
                 "dependency %s:%s can never be satisfied: every element of array %s ended "
                 "Succeeded",
                 type, name, name);
    else
        snprintf(text, size, "dependency %s:%s can never be satisfied: job %" PRId64 " ended %s",
                 type, name, st->id ? st->id : it->id, sl_job_state_name(st->state));
}

int sl_depend_eval(const struct sl_depend *d, sl_dep_lookup_fn lookup, void *arg,
                   int64_t singleton, enum sl_job_state singleton_state, char *why,
                   size_t size)
{
    enum sl_dep_verdict worst = SL_DEP_MET;
    char text[256] = "";

    for (int i = 0; i < d->n && worst != SL_DEP_NEVER; i++) {
        const struct sl_dep_item *it = &d->item[i];
        struct sl_dep_state st;
        enum sl_dep_verdict v;
        int rc;

        if (it->type == SL_DEP_SINGLETON) {
            if (singleton > 0 && worst == SL_DEP_MET) {
                worst = SL_DEP_WAIT;
                snprintf(text, sizeof(text),
                         "waiting for dependency singleton (job %" PRId64 " is %s)", singleton,
                         sl_job_state_name(singleton_state));
            }
            continue;
        }
        memset(&st, 0, sizeof(st));
        if ((rc = lookup(arg, it, &st)) < 0)
            return rc;
        v = judge(it->type, &st);
        if (v == SL_DEP_NEVER || (v == SL_DEP_WAIT && worst == SL_DEP_MET)) {
            worst = v;
            words(it, &st, v, text, sizeof(text));
        }
    }
    if (why && size)
        snprintf(why, size, "%s", text);
    return (int)worst;
}
