/*
 * buf.c - growable text buffer; see buf.h.
 */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_buf_init(struct sl_buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

void sl_buf_fini(struct sl_buf *b)
{
    free(b->data);
    sl_buf_init(b);
}

/* Make room for 'n' more bytes plus the NUL. */
static bool reserve(struct sl_buf *b, size_t n)
{
    size_t cap;
    char *nd;

    if (b->failed)
        return false;
    if (b->len + n + 1 <= b->cap)
        return true;
    cap = b->cap ? b->cap : 1024; /* a job object is ~700 bytes */
    while (cap < b->len + n + 1)
        cap *= 2;
    if (!(nd = realloc(b->data, cap))) {
        b->failed = true;
        return false;
    }
    b->data = nd;
    b->cap = cap;
    return true;
}

void sl_buf_add(struct sl_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sl_buf_adds(struct sl_buf *b, const char *s) { sl_buf_add(b, s, strlen(s)); }

void sl_buf_printf(struct sl_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sl_buf_json_str(struct sl_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const char *run;

    if (!s) {
        sl_buf_add(b, "null", 4);
        return;
    }
    sl_buf_add(b, "\"", 1);
    for (run = s; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t n = 2;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        sl_buf_add(b, run, (size_t)(s - run));
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
            break;
        }
        sl_buf_add(b, esc, n);
        run = s + 1;
    }
    sl_buf_add(b, run, (size_t)(s - run));
    sl_buf_add(b, "\"", 1);
}
