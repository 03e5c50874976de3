/*
 * prom.h - pieces of the Prometheus text exposition format, version 0.0.4:
 * HELP and TYPE lines, label sets with escaped values, numbers written so
 * that they read back exactly, and cumulative histogram buckets.
 *
 * Every function appends to a struct sl_buf and, like it, never fails
 * loudly (the buffer's 'failed' flag says so once at the end). No state:
 * thread-safe as far as the buffer is.
 */
#ifndef SL_PROM_H
#define SL_PROM_H

#include <stdint.h>

#include "buf.h"

/* Append 's' (NULL = "") escaped as a label value: backslash, double quote
 * and line feed become \\, \" and \n; other bytes are kept as they are. */
void sl_prom_escape(struct sl_buf *b, const char *s);

/* "# HELP name help\n# TYPE name type\n"; 'help' has backslash and line
 * feed escaped. 'type' is counter, gauge, histogram, summary or untyped. */
void sl_prom_family(struct sl_buf *b, const char *name, const char *type,
                    const char *help);

/* A label set "{k1="v1",k2="v2"}" from 'n' name/value pairs kv[0..2n-1]
 * (values escaped, NULL values as ""); nothing when n is 0. 'extra', when
 * not NULL, is one more pair already escaped (a histogram's le). */
void sl_prom_labels(struct sl_buf *b, int n, const char *const *kv,
                    const char *extra_name, const char *extra_value);

/* A double as Prometheus reads it: the shortest %g form that reads back
 * to the same value, or +Inf, -Inf, NaN. */
void sl_prom_double(struct sl_buf *b, double v);

/* A thousandth-unit amount (gpu_milli, cpu_milli) as a decimal number of
 * units, exactly: 1500 -> "1.5", 2000 -> "2", -250 -> "-0.25". */
void sl_prom_milli(struct sl_buf *b, int64_t milli);

/* Index of the histogram bucket of value 'v' among the 'n' ascending upper
 * bounds: the first bound >= v, or n (the +Inf bucket). */
int sl_prom_bucket(const double *bounds, int n, double v);

/* The lines of one histogram series: name_bucket{labels,le="..."} per
 * bound plus +Inf (cumulative), name_sum and name_count. counts[0..n] are
 * per bucket (not cumulative), counts[n] the +Inf one; 'n', 'kv' as in
 * sl_prom_labels. */
void sl_prom_histogram(struct sl_buf *b, const char *name, int nkv,
                       const char *const *kv, const double *bounds, int n,
                       const uint64_t *counts, double sum);

#endif
