/*
 * test_array.c - job array index lists (src/core/array.h): Slurm's --array
 * syntax, its bounds and refusals with the field named.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../src/core/array.h"
#include "../tap.h"

static struct sl_array a;

static void refused(const char *text, const char *needle)
{
    struct sl_error err = {0};
    int rc = sl_array_parse(text, &a, &err);
    ok(rc == -EINVAL && strcmp(err.field, "spec.array") == 0 && strstr(err.text, needle),
       "'%s' refused: %s", text, err.text);
}

static void parses(const char *text, int n, int limit, const char *first_last)
{
    struct sl_error err = {0};
    char fl[64] = "";
    int rc = sl_array_parse(text, &a, &err);

    ok(rc == 0, "'%s' parses (%s)", text, err.text);
    is_int(a.n, n, "'%s': %d elements", text, n);
    is_int(a.limit, limit, "'%s': limit %d", text, limit);
    if (a.n > 0)
        snprintf(fl, sizeof(fl), "%d..%d", (int)a.index[0], (int)a.index[a.n - 1]);
    is_str(fl, first_last, "'%s': first and last", text);
}

int main(void)
{
    char big[SL_ARRAY_TEXT_MAX + 8];

    parses("0-99%8", 100, 8, "0..99");
    parses("1,3,5-7", 5, 0, "1..7");
    ok(a.index[0] == 1 && a.index[1] == 3 && a.index[2] == 5 && a.index[4] == 7,
       "1,3,5,6,7 in order");
    parses("0-15:4", 4, 0, "0..12");
    ok(a.index[1] == 4 && a.index[3] == 12, "a step of 4: 0,4,8,12");
    parses("7,2,0", 3, 0, "0..7");
    parses("0", 1, 0, "0..0");
    parses("0-999", 1000, 0, "0..999");
    parses("999999", 1, 0, "999999..999999");
    parses("5-5%1", 1, 1, "5..5");
    refused("", "must not be empty");
    refused("0-1000", "at most 1000 elements");
    refused("1000000", "expected an index");
    refused("-1", "expected an index");
    refused("01", "expected an index");
    refused("5-3", "the first index is above the last");
    refused("0-9:0", "expected a step");
    refused("0-9%0", "N must be 1..1000");
    refused("0-9%", "N must be");
    refused("0-9%1001", "N must be");
    refused("1,1", "index 1 is given twice");
    refused("0-4,3", "index 3 is given twice");
    refused("1,,2", "expected an index");
    refused("1,", "expected an index");
    refused("1 ,2", "unexpected");
    refused("0-3%2%2", "unexpected");
    refused("a", "expected an index");
    memset(big, '1', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    refused(big, "at most 255 bytes");
    return done_testing();
}
