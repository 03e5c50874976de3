/*
 * prom.c - Prometheus text exposition helpers. See prom.h.
 */
#include "prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_prom_escape(struct sl_buf *b, const char *s)
{
    const char *run = s ? s : "";

    for (const char *p = run; *p; p++) {
        const char *rep = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n"
                                                                                 : NULL;
        if (!rep)
            continue;
        sl_buf_add(b, run, (size_t)(p - run));
        sl_buf_adds(b, rep);
        run = p + 1;
    }
    sl_buf_adds(b, run);
}

void sl_prom_family(struct sl_buf *b, const char *name, const char *type,
                    const char *help)
{
    const char *run = help;

    sl_buf_printf(b, "# HELP %s ", name);
    for (const char *p = run; *p; p++) {
        if (*p != '\\' && *p != '\n')
            continue;
        sl_buf_add(b, run, (size_t)(p - run));
        sl_buf_adds(b, *p == '\\' ? "\\\\" : "\\n");
        run = p + 1;
    }
    sl_buf_adds(b, run);
    sl_buf_printf(b, "\n# TYPE %s %s\n", name, type);
}

void sl_prom_labels(struct sl_buf *b, int n, const char *const *kv,
                    const char *extra_name, const char *extra_value)
{
    if (n <= 0 && !extra_name)
        return;
    sl_buf_add(b, "{", 1);
    for (int i = 0; i < n; i++) {
        if (i)
            sl_buf_add(b, ",", 1);
        sl_buf_adds(b, kv[2 * i]);
        sl_buf_add(b, "=\"", 2);
        sl_prom_escape(b, kv[2 * i + 1]);
        sl_buf_add(b, "\"", 1);
    }
    if (extra_name)
        sl_buf_printf(b, "%s%s=\"%s\"", n > 0 ? "," : "", extra_name, extra_value);
    sl_buf_add(b, "}", 1);
}

/* 'v' as Prometheus reads it into 'out' (>= 32 bytes). */
static void fmt_double(char *out, size_t size, double v)
{
    if (isnan(v)) {
        snprintf(out, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, size, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    /* The shortest of %.1g .. %.17g that reads back exactly. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
}

void sl_prom_double(struct sl_buf *b, double v)
{
    char text[40];

    fmt_double(text, sizeof(text), v);
    sl_buf_adds(b, text);
}

void sl_prom_milli(struct sl_buf *b, int64_t milli)
{
    /* Unsigned arithmetic, so that INT64_MIN has a magnitude too. */
    uint64_t mag = milli < 0 ? 0 - (uint64_t)milli : (uint64_t)milli;
    unsigned frac = (unsigned)(mag % 1000);
    char digits[4];
    int len = 3;

    sl_buf_printf(b, "%s%llu", milli < 0 ? "-" : "", (unsigned long long)(mag / 1000));
    if (!frac)
        return;
    snprintf(digits, sizeof(digits), "%03u", frac);
    while (len > 0 && digits[len - 1] == '0')
        len--;
    sl_buf_add(b, ".", 1);
    sl_buf_add(b, digits, (size_t)len);
}

int sl_prom_bucket(const double *bounds, int n, double v)
{
    int lo = 0, hi = n;

    /* First bound >= v; NaN compares false everywhere and lands in +Inf. */
    if (isnan(v))
        return n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (bounds[mid] >= v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void sl_prom_histogram(struct sl_buf *b, const char *name, int nkv,
                       const char *const *kv, const double *bounds, int n,
                       const uint64_t *counts, double sum)
{
    uint64_t cum = 0;

    for (int i = 0; i <= n; i++) {
        char le[40];
        cum += counts[i];
        if (i < n)
            fmt_double(le, sizeof(le), bounds[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        sl_buf_printf(b, "%s_bucket", name);
        sl_prom_labels(b, nkv, kv, "le", le);
        sl_buf_printf(b, " %llu\n", (unsigned long long)cum);
    }
    sl_buf_printf(b, "%s_sum", name);
    sl_prom_labels(b, nkv, kv, NULL, NULL);
    sl_buf_add(b, " ", 1);
    sl_prom_double(b, sum);
    sl_buf_printf(b, "\n%s_count", name);
    sl_prom_labels(b, nkv, kv, NULL, NULL);
    sl_buf_printf(b, " %llu\n", (unsigned long long)cum);
}
