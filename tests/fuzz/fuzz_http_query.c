/*
 * fuzz_http_query.c - libFuzzer target for the server's query string
 * decoder (src/http/parse.c, sl_http_parse_query).
 *
 * The input is the query as it came (any bytes; the server passes only
 * what the head parser let through). Beyond the sanitizers, the contract
 * is checked and a breach aborts: an accepted query gives at most the
 * maximum of parameters, each name non-empty and given once, no control
 * character in a name or a value, every string inside the buffer; the
 * parameters, encoded again, decode to the same list (one meaning); a
 * refusal is a 400 with a printable message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/http/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_http_query: %s\n", what);
    abort();
}

static bool clean(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* Append s percent-encoded (all but unreserved characters) at *o. */
static void encode(const char *s, char *out, size_t *o)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            strchr("-._~", c)) {
            out[(*o)++] = (char)c;
        } else {
            out[(*o)++] = '%';
            out[(*o)++] = hex[c >> 4];
            out[(*o)++] = hex[c & 15];
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_http_param p[SL_HTTP_MAX_PARAMS], p2[SL_HTTP_MAX_PARAMS];
    struct sl_http_refusal why;
    char *q = malloc(size + 1), *again;
    size_t o = 0;
    int n, n2;

    if (!q)
        return 0;
    memcpy(q, data, size);
    why.status = 0;
    n = sl_http_parse_query(q, size, p, SL_HTTP_MAX_PARAMS, &why);
    if (n < 0) {
        if (n != -EPROTO || why.status != 400 || !why.text[0] || !clean(why.text))
            fail("a refusal that is not a 400 with a printable message");
        for (const char *t = why.text; *t; t++)
            if ((unsigned char)*t >= 0x7f)
                fail("a message that is not ASCII");
        free(q);
        return 0;
    }
    if (n > SL_HTTP_MAX_PARAMS)
        fail("more parameters than the maximum");
    /* Each encoded byte is at most three, plus '=' and '&' per parameter. */
    if (!(again = malloc(3 * size + 2 * (size_t)n + 1)))
        fail("out of memory");
    for (int i = 0; i < n; i++) {
        if (p[i].name < q || p[i].name > q + size || p[i].value < q || p[i].value > q + size)
            fail("a string outside the buffer");
        if (!p[i].name[0])
            fail("an empty name");
        if (!clean(p[i].name) || !clean(p[i].value))
            fail("a control character in a parameter");
        for (int k = 0; k < i; k++)
            if (strcmp(p[k].name, p[i].name) == 0)
                fail("a name given twice");
        if (i)
            again[o++] = '&';
        encode(p[i].name, again, &o);
        again[o++] = '=';
        encode(p[i].value, again, &o);
    }
    again[o] = '\0';
    n2 = sl_http_parse_query(again, o, p2, SL_HTTP_MAX_PARAMS, &why);
    if (n2 != n)
        fail("the encoded parameters do not decode to as many");
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].name, p2[i].name) != 0 || strcmp(p[i].value, p2[i].value) != 0)
            fail("the encoded parameters decode to others");
    free(again);
    free(q);
    return 0;
}
