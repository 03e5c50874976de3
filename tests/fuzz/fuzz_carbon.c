/*
 * fuzz_carbon.c - libFuzzer target for the carbon intensity upload's
 * parser (src/meter/carbon.c, sl_carbon_parse_csv), the body of
 * POST /v1/carbon/{site}.
 *
 * Beyond the sanitizers, the contract is checked and a breach aborts: an
 * accepted upload has 1 to SL_CARBON_HOURS_MAX hours, each on the hour,
 * from 1970 to 9999 and none twice, each intensity from 0 to 100000; written out again as CSV it
 * parses to the same hours and values (one meaning); an error is -EINVAL
 * or -E2BIG (-ENOMEM aside) and names a field ("body" or "line N", N
 * within the input's lines) with a printable message.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/meter/meter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_carbon: %s\n", what);
    abort();
}

static void check_error(int rc, const struct sl_carbon_error *err, const uint8_t *data,
                        size_t size)
{
    size_t lines = 1, line;

    if (rc == -ENOMEM)
        return;
    if (rc != -EINVAL && rc != -E2BIG)
        fail("an error other than -EINVAL, -E2BIG and -ENOMEM");
    for (const char *t = err->text; *t; t++)
        if ((unsigned char)*t < 0x20 || (unsigned char)*t >= 0x7f)
            fail("a message that is not printable ASCII");
    if (!err->text[0])
        fail("an empty message");
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (strcmp(err->field, "body") != 0 &&
        (sscanf(err->field, "line %zu", &line) != 1 || line < 1 || line > lines))
        fail("a field that is neither the body nor one of its lines");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_carbon_csv c, again;
    struct sl_carbon_error err;
    char *copy = malloc(size ? size : 1), *out;
    size_t o = 0;
    struct tm tm;
    time_t secs;
    int rc;

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    rc = sl_carbon_parse_csv(copy, size, &c, &err);
    free(copy);
    if (rc < 0) {
        check_error(rc, &err, data, size);
        return 0;
    }
    if (rc != 0 || c.n < 1 || c.n > SL_CARBON_HOURS_MAX)
        fail("an accepted upload with a bad count");
    if (!(out = malloc(c.n * 64 + 1)))
        fail("out of memory");
    for (size_t i = 0; i < c.n; i++) {
        if (c.hour_ms[i] % 3600000 != 0)
            fail("an hour not on the hour");
        if (!(c.g[i] >= 0 && c.g[i] <= 1e5))
            fail("an intensity out of range");
        for (size_t k = 0; k < i && c.n < 2000; k++)
            if (c.hour_ms[k] == c.hour_ms[i])
                fail("an hour given twice");
        if (c.hour_ms[i] < 0 || c.hour_ms[i] >= 253402300800000LL)
            fail("an hour before 1970 or after 9999");
        /* RFC 3339, and a plain decimal: the only number form it takes. */
        secs = (time_t)(c.hour_ms[i] / 1000);
        gmtime_r(&secs, &tm);
        o += (size_t)snprintf(out + o, 64, "%04d-%02d-%02dT%02d:00:00Z,%.6f\n",
                              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                              c.g[i]);
    }
    out[o] = '\0';
    if (sl_carbon_parse_csv(out, o, &again, &err) != 0 || again.n != c.n)
        fail("the upload written again does not parse to as many hours");
    for (size_t i = 0; i < c.n; i++)
        if (again.hour_ms[i] != c.hour_ms[i] || fabs(again.g[i] - c.g[i]) > 1e-6)
            fail("the upload written again parses to other hours or values");
    free(out);
    sl_carbon_csv_free(&again);
    sl_carbon_csv_free(&c);
    return 0;
}
