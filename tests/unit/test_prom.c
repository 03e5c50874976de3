/*
 * test_prom.c - the Prometheus text helpers (src/util/prom.c): label value
 * escaping, HELP escaping, numbers, buckets and histogram lines.
 */
#include <math.h>
#include <stdlib.h>

#include "../../src/util/prom.h"
#include "../tap.h"

/* 's' escaped, as a string the caller frees. */
static char *escaped(const char *s)
{
    struct sl_buf b;
    char *out;

    sl_buf_init(&b);
    sl_prom_escape(&b, s);
    out = strdup(b.len ? b.data : "");
    sl_buf_fini(&b);
    return out;
}

static void check_escape(const char *in, const char *want, const char *name)
{
    char *got = escaped(in);
    is_str(got, want, "%s", name);
    free(got);
}

static char *as_double(double v)
{
    struct sl_buf b;
    char *out;

    sl_buf_init(&b);
    sl_prom_double(&b, v);
    out = strdup(b.len ? b.data : "");
    sl_buf_fini(&b);
    return out;
}

static char *as_milli(int64_t v)
{
    struct sl_buf b;
    char *out;

    sl_buf_init(&b);
    sl_prom_milli(&b, v);
    out = strdup(b.len ? b.data : "");
    sl_buf_fini(&b);
    return out;
}

int main(void)
{
    char *s;
    struct sl_buf b;

    check_escape("plain", "plain", "a plain value is kept as it is");
    check_escape("", "", "an empty value stays empty");
    check_escape(NULL, "", "a NULL value is written as empty");
    check_escape("a\\b", "a\\\\b", "a backslash is doubled");
    check_escape("say \"hi\"", "say \\\"hi\\\"", "a double quote is escaped");
    check_escape("two\nlines", "two\\nlines", "a line feed becomes \\n");
    check_escape("\\\"\n", "\\\\\\\"\\n", "the three escapes side by side");
    check_escape("tab\there\r", "tab\there\r", "other control bytes are kept");
    check_escape("H100 \xc3\xa9t\xc3\xa9", "H100 \xc3\xa9t\xc3\xa9", "UTF-8 is kept");

    sl_buf_init(&b);
    sl_prom_family(&b, "sluice_x", "gauge", "a \\ and a\nline");
    is_str(b.data, "# HELP sluice_x a \\\\ and a\\nline\n# TYPE sluice_x gauge\n",
           "HELP escapes backslash and line feed, TYPE follows");
    sl_buf_fini(&b);

    sl_buf_init(&b);
    {
        const char *kv[] = {"node", "n\"1", "model", NULL};
        sl_prom_labels(&b, 2, kv, NULL, NULL);
    }
    is_str(b.data, "{node=\"n\\\"1\",model=\"\"}", "a label set escapes its values");
    sl_buf_fini(&b);

    sl_buf_init(&b);
    sl_prom_labels(&b, 0, NULL, NULL, NULL);
    is_int(b.len, 0, "no labels write nothing");
    sl_prom_labels(&b, 0, NULL, "le", "+Inf");
    is_str(b.data, "{le=\"+Inf\"}", "the extra pair alone makes a label set");
    sl_buf_fini(&b);

    s = as_double(0.1);
    is_str(s, "0.1", "0.1 is written as 0.1, not its 17-digit form");
    free(s);
    s = as_double(1e-9 * 123456789);
    ok(strtod(s, NULL) == 1e-9 * 123456789, "a double reads back exactly (%s)", s);
    free(s);
    s = as_double(INFINITY);
    is_str(s, "+Inf", "infinity is +Inf");
    free(s);
    s = as_double(-INFINITY);
    is_str(s, "-Inf", "minus infinity is -Inf");
    free(s);
    s = as_double(NAN);
    is_str(s, "NaN", "not a number is NaN");
    free(s);
    s = as_double(3);
    is_str(s, "3", "a whole number has no point");
    free(s);

    s = as_milli(1500);
    is_str(s, "1.5", "1500 milli is 1.5");
    free(s);
    s = as_milli(2000);
    is_str(s, "2", "2000 milli is 2");
    free(s);
    s = as_milli(1);
    is_str(s, "0.001", "1 milli is 0.001");
    free(s);
    s = as_milli(-250);
    is_str(s, "-0.25", "-250 milli is -0.25");
    free(s);
    s = as_milli(INT64_MIN);
    is_str(s, "-9223372036854775.808", "the most negative amount does not overflow");
    free(s);

    {
        const double bounds[] = {0.001, 0.01, 0.1};
        const uint64_t counts[] = {1, 0, 2, 1};
        const char *kv[] = {"route", "/v1/jobs"};

        is_int(sl_prom_bucket(bounds, 3, 0.0005), 0, "a value below the first bound");
        is_int(sl_prom_bucket(bounds, 3, 0.001), 0, "a value on a bound is in it (le)");
        is_int(sl_prom_bucket(bounds, 3, 0.05), 2, "a value between bounds");
        is_int(sl_prom_bucket(bounds, 3, 7), 3, "a value past the last bound is +Inf");
        is_int(sl_prom_bucket(bounds, 3, NAN), 3, "NaN is counted in +Inf");

        sl_buf_init(&b);
        sl_prom_histogram(&b, "h", 1, kv, bounds, 3, counts, 0.25);
        is_str(b.data,
               "h_bucket{route=\"/v1/jobs\",le=\"0.001\"} 1\n"
               "h_bucket{route=\"/v1/jobs\",le=\"0.01\"} 1\n"
               "h_bucket{route=\"/v1/jobs\",le=\"0.1\"} 3\n"
               "h_bucket{route=\"/v1/jobs\",le=\"+Inf\"} 4\n"
               "h_sum{route=\"/v1/jobs\"} 0.25\n"
               "h_count{route=\"/v1/jobs\"} 4\n",
               "a histogram's buckets are cumulative, with sum and count");
        sl_buf_fini(&b);
    }
    return done_testing();
}
