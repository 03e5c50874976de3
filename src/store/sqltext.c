/*
 * sqltext.c - building SQL text at run time (sqltext.h).
 */
#include "sqltext.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"

void sl_sql_put(char *sql, size_t size, size_t *n, const char *fmt, ...)
{
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vsnprintf(sql + (*n < size ? *n : size - 1), *n < size ? size - *n : 1, fmt, ap);
    va_end(ap);
    *n += k > 0 ? (size_t)k : 0;
}

char *sl_sql_like_pattern(const char *pre, const char *text, const char *post)
{
    size_t len = strlen(text);
    char *p = malloc(2 * len + 5), *w = p;

    if (!p)
        return NULL;
    w += sl_strlcpy(w, pre, 3);
    for (; *text; text++) {
        if (*text == '%' || *text == '_' || *text == '\\')
            *w++ = '\\';
        *w++ = *text;
    }
    sl_strlcpy(w, post, 3);
    return p;
}
