/*
 * csv.c - CSV fields, rows and JSON numbers as text; see csv.h.
 */
#include "csv.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

void sl_csv_field(struct sl_buf *b, const char *s)
{
    size_t n;

    if (!s)
        return;
    n = strlen(s);
    if (!s[strcspn(s, ",\"\r\n")] && (n == 0 || (s[0] != ' ' && s[n - 1] != ' '))) {
        sl_buf_add(b, s, n);
        return;
    }
    sl_buf_add(b, "\"", 1);
    for (const char *q; (q = strchr(s, '"')); s = q + 1) {
        sl_buf_add(b, s, (size_t)(q - s) + 1); /* up to and with the quote */
        sl_buf_add(b, "\"", 1);                /* which is doubled */
    }
    sl_buf_adds(b, s);
    sl_buf_add(b, "\"", 1);
}

void sl_csv_row(struct sl_buf *b, const char *const *cells, size_t n)
{
    for (size_t c = 0; c < n; c++) {
        if (c)
            sl_buf_add(b, ",", 1);
        sl_csv_field(b, cells[c]);
    }
    sl_buf_add(b, "\n", 1);
}

const char *sl_csv_number(const json_t *v, char *buf, size_t size)
{
    if (json_is_integer(v))
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        sl_fmt_decimal(json_real_value(v), SL_CSV_DECIMALS, buf, size);
    else if (size)
        buf[0] = '\0';
    return buf;
}

bool sl_csv_integer(const json_t *obj, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);

    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= -9.0e15 && d <= 9.0e15 && d == (double)(int64_t)d) {
            *out = (int64_t)d;
            return true;
        }
    }
    return false;
}
