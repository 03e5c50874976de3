/*
 * fuzz_http_response.c - libFuzzer target for the CLI client's answer
 * parser (src/client/client.c through sl_client_parse_answer): status
 * line, headers, Content-Length, chunked and read-to-close bodies, interim
 * answers, the error object.
 *
 * The first input byte chooses the request method (bit 7: HEAD, else GET)
 * and how many bytes each read hands out (bits 0-5; 0 = as many as the
 * buffer takes); the rest is the answer. Beyond the sanitizers: an answer
 * must read the same in pieces of that size as whole and one byte at a
 * time (TCP may cut it anywhere; only whether the connection may be reused
 * can differ, by what came after the answer), an accepted one has a final status and a
 * NUL-terminated body within the cap, a refused one no body, and every
 * text the CLI may print is one printable line.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/client/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_http_response: %s\n", what);
    abort();
}

static void check_line(const char *s, size_t size, const char *what)
{
    size_t n = strnlen(s, size);

    if (n == size)
        fail(what);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
            fail(what);
}

static void check_one(int rc, const struct sl_response *r, bool keep)
{
    check_line(r->error.message, sizeof(r->error.message), "a message with a control character");
    check_line(r->error.code, sizeof(r->error.code), "a code with a control character");
    check_line(r->error.field, sizeof(r->error.field), "a field with a control character");
    check_line(r->content_type, sizeof(r->content_type), "a content type with a control character");
    check_line(r->job_state, sizeof(r->job_state), "a job state with a control character");
    if (rc == 0) {
        if (r->status < 200 || r->status > 599)
            fail("an accepted answer without a final status");
        if (!r->body || r->len > SL_CLIENT_MAX_BODY || r->body[r->len] != '\0')
            fail("an accepted answer's body is not NUL-terminated within the cap");
        if (r->status >= 400 && (!r->error.code[0] || !r->error.message[0]))
            fail("an error answer without a code and a message");
    } else {
        if (rc != -EIO && rc != -EFBIG && rc != -ECONNRESET && rc != -ENOMEM)
            fail("an rc the contract does not list");
        if (r->body || r->status != 0 || keep || !r->error.message[0])
            fail("a refused answer keeps a body, a status or the connection");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *method, *raw = (const char *)data + 1;
    size_t n = size ? size - 1 : 0, steps[3];
    struct sl_response r[3];
    bool keep[3];
    int rc[3];

    if (size < 1)
        return 0;
    method = data[0] & 0x80 ? "HEAD" : "GET";
    steps[0] = data[0] & 0x3f;
    steps[1] = 0;
    steps[2] = 1;
    for (int i = 0; i < 3; i++) {
        rc[i] = sl_client_parse_answer(raw, n, steps[i], method, &r[i], &keep[i]);
        check_one(rc[i], &r[i], keep[i]);
    }
    /* Whether the connection could be reused may differ: bytes after the
     * answer are seen only when they came with it (sl_client_request
     * looks for them before reusing a connection). A reader that saw
     * everything and kept may not be outdone by one that saw less. */
    if (keep[1] && (!keep[0] || !keep[2]))
        fail("bytes that came in pieces forbid a reuse that the whole answer allows");
    for (int i = 1; i < 3; i++)
        if (rc[i] != rc[0] || r[i].status != r[0].status || r[i].len != r[0].len ||
            (r[0].len && memcmp(r[i].body, r[0].body, r[0].len) != 0) ||
            strcmp(r[i].error.code, r[0].error.code) != 0 ||
            strcmp(r[i].content_type, r[0].content_type) != 0 ||
            r[i].log_offset != r[0].log_offset)
            fail("the answer reads differently in other pieces");
    for (int i = 0; i < 3; i++)
        sl_response_fini(&r[i]);
    return 0;
}
