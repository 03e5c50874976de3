/*
 * array.c - job arrays' index lists in Slurm's --array syntax. See array.h.
 */
#include "array.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define FIELD "spec.array"

/* A decimal number at *p (no sign, no leading zero but "0"), at most
 * 'max'; *p moves past it. Returns it or -1. */
static int64_t number(const char **p, int64_t max)
{
    const char *s = *p;
    int64_t v = 0;

    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
        return -1;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > max)
            return -1;
        s++;
    }
    *p = s;
    return v;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* One part "I", "A-B" or "A-B:S" at *p, appended to 'a'. */
static int part(const char **p, struct sl_array *a, struct sl_error *err)
{
    int64_t lo, hi, step = 1;

    if ((lo = number(p, SL_ARRAY_INDEX_MAX)) < 0)
        return sl_errorf_field(err, -EINVAL, FIELD,
                               "expected an index 0..%d (no sign or leading zero) at '%.16s'",
                               SL_ARRAY_INDEX_MAX, *p);
    hi = lo;
    if (**p == '-') {
        (*p)++;
        if ((hi = number(p, SL_ARRAY_INDEX_MAX)) < 0)
            return sl_errorf_field(err, -EINVAL, FIELD,
                                   "expected the range's last index 0..%d at '%.16s'",
                                   SL_ARRAY_INDEX_MAX, *p);
        if (hi < lo)
            return sl_errorf_field(err, -EINVAL, FIELD,
                                   "range %lld-%lld: the first index is above the last",
                                   (long long)lo, (long long)hi);
        if (**p == ':') {
            (*p)++;
            if ((step = number(p, SL_ARRAY_INDEX_MAX)) < 1)
                return sl_errorf_field(err, -EINVAL, FIELD,
                                       "expected a step 1..%d at '%.16s'",
                                       SL_ARRAY_INDEX_MAX, *p);
        }
    }
    for (int64_t i = lo; i <= hi; i += step) {
        if (a->n >= SL_ARRAY_MAX)
            return sl_errorf_field(err, -EINVAL, FIELD, "at most %d elements", SL_ARRAY_MAX);
        a->index[a->n++] = (int32_t)i;
    }
    return 0;
}

int sl_array_parse(const char *text, struct sl_array *out, struct sl_error *err)
{
    const char *p = text;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!text || !*text)
        return sl_errorf_field(err, -EINVAL, FIELD, "must not be empty");
    if (strlen(text) >= SL_ARRAY_TEXT_MAX)
        return sl_errorf_field(err, -EINVAL, FIELD, "at most %d bytes",
                               SL_ARRAY_TEXT_MAX - 1);
    for (;;) {
        if ((rc = part(&p, out, err)) < 0)
            return rc;
        if (*p != ',')
            break;
        p++;
    }
    if (*p == '%') {
        int64_t lim;
        p++;
        if ((lim = number(&p, SL_ARRAY_MAX)) < 1)
            return sl_errorf_field(err, -EINVAL, FIELD,
                                   "%%N: N must be 1..%d (elements running at once)",
                                   SL_ARRAY_MAX);
        out->limit = (int)lim;
    }
    if (*p)
        return sl_errorf_field(err, -EINVAL, FIELD,
                               "unexpected '%.16s': the syntax is I, A-B or A-B:S joined "
                               "with ',', then an optional %%N",
                               p);
    qsort(out->index, (size_t)out->n, sizeof(out->index[0]), cmp_i32);
    for (int i = 1; i < out->n; i++)
        if (out->index[i] == out->index[i - 1])
            return sl_errorf_field(err, -EINVAL, FIELD, "index %d is given twice",
                                   (int)out->index[i]);
    return 0;
}
