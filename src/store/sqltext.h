/*
 * sqltext.h - building SQL text at run time, shared by the backends' job
 * lists (sqlite_jobs.c, pg_jobs.c): appending to a bounded buffer, and a
 * LIKE pattern that matches a text's own bytes. Values still go as bound
 * parameters; only placeholders and fixed words go into the text.
 */
#ifndef SL_STORE_SQLTEXT_H
#define SL_STORE_SQLTEXT_H

#include <stddef.h>

/* Append to 'sql' (a buffer of 'size') at *n; *n grows past size - 1 when
 * it does not fit, which the caller checks once. */
void sl_sql_put(char *sql, size_t size, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 'text' as a LIKE pattern of its own bytes, '\' escaping the pattern's
 * characters ('%', '_', '\'), between 'pre' and 'post' (pattern text of at
 * most 2 bytes each: "%", "%\""). NULL on ENOMEM; the caller frees. */
char *sl_sql_like_pattern(const char *pre, const char *text, const char *post);

#endif
