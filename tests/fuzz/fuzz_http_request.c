/*
 * fuzz_http_request.c - libFuzzer target for the server's request head
 * parser (src/http/parse.c, sl_http_parse_head).
 *
 * Every input is parsed as it came; beyond the sanitizers, what the
 * contract promises is checked and a breach aborts, so the fuzzer reports
 * it: an accepted head ends in CRLF CRLF within the cap, every span lies
 * inside it and holds what its grammar allows, the bytes after the head
 * change nothing, and every strict prefix of it is incomplete (a head is
 * never refused for what has not come yet); a refusal has one of the
 * documented statuses and a printable message; "incomplete" only below
 * the cap. The value of each If-None-Match field of an accepted head is
 * matched too (sl_http_etag_match): the answer is one of the four, a match
 * names the tag between quotes, and "*" is the value alone.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../src/http/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_http_request: %s\n", what);
    abort();
}

static void check_span(struct sl_http_span s, size_t head_len, const char *what)
{
    if ((size_t)s.off + s.len > head_len)
        fail(what);
}

/* One If-None-Match value against the tag "abc". */
static void check_if_none_match(const char *value, size_t len)
{
    char v[SL_HTTP_MAX_HEAD + 1];
    const char *p;
    int rc;

    memcpy(v, value, len);
    v[len] = '\0';
    rc = sl_http_etag_match(v, "abc");
    if (rc != -EPROTO && rc != 0 && rc != 1 && rc != 2)
        fail("If-None-Match: an answer outside the contract");
    if (rc == 1 && !strstr(v, "\"abc\""))
        fail("If-None-Match: a match without the tag");
    for (p = v; *p == ' ' || *p == '\t'; p++)
        ;
    if (rc == 2 && (*p != '*' || strspn(p + 1, " \t") != strlen(p + 1)))
        fail("If-None-Match: '*' that is not the value alone");
}

static void check_accepted(const char *buf, size_t size, const struct sl_http_head *h)
{
    struct sl_http_head again;
    struct sl_http_refusal why;
    const unsigned char *b = (const unsigned char *)buf;

    if (h->head_len < 4 || h->head_len > size || h->head_len > SL_HTTP_MAX_HEAD ||
        memcmp(buf + h->head_len - 4, "\r\n\r\n", 4) != 0)
        fail("an accepted head does not end in CRLF CRLF within the cap");
    check_span(h->method, h->head_len, "the method span is outside the head");
    check_span(h->target, h->head_len, "the target span is outside the head");
    if (h->method.len < 1 || h->method.len > SL_HTTP_MAX_METHOD)
        fail("a method of a bad length");
    for (size_t i = 0; i < h->method.len; i++)
        if (!sl_http_tchar(b[h->method.off + i]))
            fail("a method that is not a token");
    if (h->target.len < 1 || h->target.len > SL_HTTP_MAX_TARGET || b[h->target.off] != '/')
        fail("a target that is not origin-form");
    for (size_t i = 0; i < h->target.len; i++)
        if (b[h->target.off + i] <= 0x20 || b[h->target.off + i] >= 0x7f ||
            b[h->target.off + i] == '#')
            fail("a target with a byte it may not hold");
    if (h->minor != 0 && h->minor != 1)
        fail("a version other than 1.0 and 1.1");
    if (h->nfields < 0 || h->nfields > SL_HTTP_MAX_FIELDS)
        fail("a field count out of range");
    if (h->content_length < -1 || h->content_length > (int64_t)SL_HTTP_MAX_BODY)
        fail("a Content-Length out of range");
    for (int i = 0; i < h->nfields; i++) {
        struct sl_http_span n = h->name[i], v = h->value[i];
        check_span(n, h->head_len, "a name span is outside the head");
        check_span(v, h->head_len, "a value span is outside the head");
        if (n.len < 1 || b[n.off + n.len] != ':')
            fail("a name that does not end at its colon");
        for (size_t k = 0; k < n.len; k++)
            if (!sl_http_tchar(b[n.off + k]))
                fail("a name that is not a token");
        if (v.len && (b[v.off] == ' ' || b[v.off] == '\t' || b[v.off + v.len - 1] == ' ' ||
                      b[v.off + v.len - 1] == '\t'))
            fail("a value with its OWS");
        for (size_t k = 0; k < v.len; k++)
            if ((b[v.off + k] < 0x20 && b[v.off + k] != '\t') || b[v.off + k] == 0x7f)
                fail("a value with a control character");
    }
    for (int i = 0; i < h->nfields; i++)
        if (h->name[i].len == 13 && strncasecmp(buf + h->name[i].off, "If-None-Match", 13) == 0)
            check_if_none_match(buf + h->value[i].off, h->value[i].len);
    /* The bytes after the head change nothing. */
    if (sl_http_parse_head(buf, h->head_len, &again, &why) != 0 ||
        again.head_len != h->head_len || again.nfields != h->nfields ||
        again.content_length != h->content_length || again.keep_alive != h->keep_alive ||
        again.expect_continue != h->expect_continue || again.minor != h->minor ||
        memcmp(again.name, h->name, sizeof(h->name[0]) * (size_t)h->nfields) != 0 ||
        memcmp(again.value, h->value, sizeof(h->value[0]) * (size_t)h->nfields) != 0)
        fail("the head alone does not parse as it did with what follows");
    /* A strict prefix is only incomplete. */
    for (size_t cut = h->head_len - 1;; cut = cut / 2) {
        if (sl_http_parse_head(buf, cut, &again, &why) != -EAGAIN)
            fail("a strict prefix of an accepted head is not incomplete");
        if (cut == 0)
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact copy, so that a read past the input is caught. */
    char *buf = malloc(size ? size : 1);
    struct sl_http_head h;
    struct sl_http_refusal why;
    int rc;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    rc = sl_http_parse_head(buf, size, &h, &why);
    if (rc == 0) {
        check_accepted(buf, size, &h);
    } else if (rc == -EPROTO) {
        static const int statuses[] = {400, 411, 413, 414, 431, 501};
        bool known = false;
        for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
            known |= why.status == statuses[i];
        if (!known)
            fail("a refusal with a status the contract does not list");
        if (!why.text[0])
            fail("a refusal without a message");
        for (const char *p = why.text; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                fail("a message that is not printable ASCII");
    } else if (rc != -EAGAIN || size >= SL_HTTP_MAX_HEAD) {
        fail("neither a head, a refusal, nor incomplete below the cap");
    }
    free(buf);
    return 0;
}
