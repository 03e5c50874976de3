/*
 * buf.h - a growable byte buffer for building text (JSON bodies).
 *
 * Appends never fail loudly: on allocation failure the buffer is marked
 * 'failed' and ignores further appends, so a writer checks once at the end.
 * Not thread-safe; a buffer belongs to one thread at a time.
 */
#ifndef SL_BUF_H
#define SL_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct sl_buf {
    char *data;      /* owned; NUL-terminated when len > 0 */
    size_t len;      /* bytes used, without the NUL */
    size_t cap;      /* bytes allocated */
    bool failed;     /* an allocation failed; contents are incomplete */
};

void sl_buf_init(struct sl_buf *b);
void sl_buf_fini(struct sl_buf *b); /* frees; the buffer may be reused */
void sl_buf_add(struct sl_buf *b, const char *s, size_t n);
void sl_buf_adds(struct sl_buf *b, const char *s);
void sl_buf_printf(struct sl_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append 's' as a JSON string literal (quoted, escaped), or null when s is
 * NULL. 's' is taken as UTF-8; control characters are escaped. */
void sl_buf_json_str(struct sl_buf *b, const char *s);

#endif
