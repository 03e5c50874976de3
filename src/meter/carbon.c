/*
 * carbon.c - the CSV of a site's hourly carbon intensity (meter.h): one
 * meaning per upload or a refusal that names the line.
 */
#include "meter.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 128
#define HOUR_MS_END 253402300800000LL /* 10000-01-01T00:00:00Z */

static int bad(struct sl_carbon_error *err, int rc, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(struct sl_carbon_error *err, int rc, size_t line, const char *fmt, ...)
{
    va_list ap;

    if (line)
        snprintf(err->field, sizeof(err->field), "line %zu", line);
    else
        snprintf(err->field, sizeof(err->field), "body");
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof(err->text), fmt, ap);
    va_end(ap);
    /* The text may quote the body: printable ASCII only. */
    for (char *t = err->text; *t; t++)
        if ((unsigned char)*t < 0x20 || (unsigned char)*t >= 0x7f)
            *t = '?';
    return rc;
}

/* s without SP and HTAB at either end (in place). */
static char *trim(char *s)
{
    size_t n;

    while (*s == ' ' || *s == '\t')
        s++;
    n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* A decimal number: digits, optionally '.' and digits. */
static int parse_decimal(const char *s, double *out)
{
    const char *p = s;
    char *end;

    if (*p < '0' || *p > '9')
        return -EINVAL;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -EINVAL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p || p - s > 32)
        return -EINVAL;
    *out = strtod(s, &end);
    return end == p ? 0 : -EINVAL;
}

struct at {
    int64_t hour_ms;
    size_t line;
};

static int cmp_at(const void *a, const void *b)
{
    const struct at *x = a, *y = b;

    if (x->hour_ms != y->hour_ms)
        return x->hour_ms < y->hour_ms ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* An hour given twice: *err names the second line. */
static int no_twice(const struct sl_carbon_csv *c, const size_t *lines,
                    struct sl_carbon_error *err)
{
    struct at *a = malloc(c->n * sizeof(*a));

    if (!a)
        return -ENOMEM;
    for (size_t i = 0; i < c->n; i++)
        a[i] = (struct at){c->hour_ms[i], lines[i]};
    qsort(a, c->n, sizeof(*a), cmp_at);
    for (size_t i = 1; i < c->n; i++)
        if (a[i].hour_ms == a[i - 1].hour_ms) {
            size_t l = a[i].line, first = a[i - 1].line;
            free(a);
            return bad(err, -EINVAL, l, "the same hour as line %zu", first);
        }
    free(a);
    return 0;
}

void sl_carbon_csv_free(struct sl_carbon_csv *c)
{
    free(c->hour_ms);
    free(c->g);
    memset(c, 0, sizeof(*c));
}

int sl_carbon_parse_csv(const char *body, size_t len, struct sl_carbon_csv *out,
                        struct sl_carbon_error *err)
{
    const char *p = body, *end = body + len;
    struct sl_carbon_csv c = {0};
    size_t cap = 0, line = 0, *lines = NULL;
    int rc = 0;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = (size_t)((nl ? nl : end) - p);
        char buf[LINE_MAX_BYTES], *comma, *hour, *num;
        int64_t at;
        double v;

        line++;
        if (l >= sizeof(buf)) {
            rc = bad(err, -EINVAL, line, "line too long (at most %d bytes)",
                     LINE_MAX_BYTES - 1);
            goto fail;
        }
        memcpy(buf, p, l);
        buf[l] = '\0';
        p = nl ? nl + 1 : end;
        if (l && buf[l - 1] == '\r')
            buf[--l] = '\0';
        if (memchr(buf, '\0', l) || memchr(buf, '\r', l)) {
            rc = bad(err, -EINVAL, line, "a NUL or a bare CR in the line");
            goto fail;
        }
        if (!*trim(buf))
            continue;
        if (!(comma = strchr(buf, ',')) || strchr(comma + 1, ',')) {
            rc = bad(err, -EINVAL, line, "must be hour,gco2_per_kwh, got '%.40s'", buf);
            goto fail;
        }
        *comma = '\0';
        hour = trim(buf);
        num = trim(comma + 1);
        if (sl_parse_when_ms(hour, &at) < 0) {
            if (line == 1)
                continue; /* a header */
            rc = bad(err, -EINVAL, line, "hour must be RFC 3339 or epoch ms, got '%.40s'",
                     hour);
            goto fail;
        }
        if (at < 0 || at >= HOUR_MS_END) {
            rc = bad(err, -EINVAL, line, "hour must be from 1970 to 9999, got '%.40s'", hour);
            goto fail;
        }
        if (at % 3600000 != 0) {
            rc = bad(err, -EINVAL, line, "hour must be on the hour, got '%.40s'", hour);
            goto fail;
        }
        if (parse_decimal(num, &v) < 0 || !(v >= 0 && v <= 1e5)) {
            rc = bad(err, -EINVAL, line,
                     "gco2_per_kwh must be a number from 0 to 100000, got '%.20s'", num);
            goto fail;
        }
        if (c.n == SL_CARBON_HOURS_MAX) {
            rc = bad(err, -E2BIG, 0, "at most %d hours per upload", SL_CARBON_HOURS_MAX);
            goto fail;
        }
        if (c.n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            int64_t *nh = realloc(c.hour_ms, nc * sizeof(*nh));
            double *ng;
            size_t *nlines;

            if (nh)
                c.hour_ms = nh;
            if (!nh || !(ng = realloc(c.g, nc * sizeof(*ng)))) {
                rc = -ENOMEM;
                goto fail;
            }
            c.g = ng;
            if (!(nlines = realloc(lines, nc * sizeof(*nlines)))) {
                rc = -ENOMEM;
                goto fail;
            }
            lines = nlines;
            cap = nc;
        }
        c.hour_ms[c.n] = at;
        c.g[c.n] = v;
        lines[c.n++] = line;
    }
    if (c.n == 0) {
        rc = bad(err, -EINVAL, 0, "no hours given");
        goto fail;
    }
    if ((rc = no_twice(&c, lines, err)) < 0)
        goto fail;
    free(lines);
    *out = c;
    return 0;
fail:
    free(lines);
    sl_carbon_csv_free(&c);
    return rc;
}
