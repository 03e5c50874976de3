/*
 * fuzz_audit.c - libFuzzer target for the audit log's readers
 * (src/audit/audit.c): the record parser, the streaming verifier of an
 * export (a file from anywhere: `sluice audit verify -f`), the checkpoint
 * (signed note) verifier, and the writer that must only write what they
 * accept.
 *
 * The first input byte chooses the mode (its value modulo 4), the rest is
 * its input:
 *   0  one record line: a line that parses is rebuilt by the writer from
 *      what was parsed, and must come out byte for byte the same;
 *   1  a log: fed to the verifier whole, and in pieces of the size of the
 *      second byte (1..256): both must reach the same verdict, head and
 *      line numbers (a stream may be cut anywhere);
 *   2  an event for the writer (fields split at NUL bytes: actor, action,
 *      object, outcome, details as JSON): a line it writes must parse,
 *      read back the same fields and pass the verifier;
 *   3  a checkpoint, checked against a fixed verifier key; its origin.
 * Every refusal must leave nothing to free.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/audit/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_audit: %s\n", what);
    abort();
}

static void rebuild(const char *s, size_t n)
{
    struct sl_audit_rec r;
    struct sl_audit_head h = {0, {0}};
    struct sl_audit_entry e;
    struct sl_buf b;
    int rc = sl_audit_parse_line(s, n, &r, NULL);

    if (rc < 0) {
        if (rc != -EINVAL && rc != -EBADMSG && rc != -ENOMEM)
            fail("a line refused with an rc the contract does not list");
        if (r.details)
            fail("a refused line left details to free");
        return;
    }
    h.size = r.seq - 1;
    memcpy(h.hash, r.prev, 32);
    e = (struct sl_audit_entry){r.at_ms, r.actor, r.action, r.object, r.outcome, r.details};
    sl_buf_init(&b);
    rc = sl_audit_line(&h, &e, &b);
    if (rc == 0 && (b.len != n || memcmp(b.data, s, n) != 0 || memcmp(h.hash, r.hash, 32)))
        fail("a parsed line is not what the writer writes for it");
    if (rc < 0 && rc != -ENOMEM)
        fail("the writer refused a line the parser accepted");
    sl_buf_fini(&b);
    sl_audit_rec_fini(&r);
}

static int verify(const char *s, size_t n, size_t piece, struct sl_audit_verifier *v)
{
    int rc = 0;

    sl_audit_verifier_init(v, NULL);
    for (size_t at = 0; at < n && rc == 0; at += piece)
        rc = sl_audit_verifier_feed(v, s + at, n - at < piece ? n - at : piece);
    if (rc == 0)
        rc = sl_audit_verifier_finish(v);
    return rc;
}

static void stream(const char *s, size_t n, size_t piece)
{
    struct sl_audit_verifier a, b;
    int ra = verify(s, n, n ? n : 1, &a), rb = verify(s, n, piece, &b);

    if (ra == -ENOMEM || rb == -ENOMEM)
        goto out;
    if (ra != rb || a.head.size != b.head.size || memcmp(a.head.hash, b.head.hash, 32) ||
        a.bad_line != b.bad_line || a.bad_seq != b.bad_seq)
        fail("a log read in pieces got another verdict than read whole");
    if (ra != 0 && ra != -EBADMSG)
        fail("a log refused with an rc the contract does not list");
    if (ra != 0 && (!a.why[0] || a.bad_line < 1))
        fail("a bad log without a reason or a line number");
out:
    sl_audit_verifier_fini(&a);
    sl_audit_verifier_fini(&b);
}

static void write_event(const char *s, size_t n)
{
    char *f[5] = {"", "", "", "", ""}, *copy = malloc(n + 1);
    struct sl_audit_head h = {0, {0}};
    struct sl_audit_verifier v;
    struct sl_audit_entry e;
    struct sl_audit_rec r;
    json_t *details = NULL;
    struct sl_buf b;
    size_t k = 0;
    int rc;

    if (!copy)
        return;
    memcpy(copy, s, n);
    copy[n] = '\0';
    f[0] = copy;
    for (size_t i = 0; i < n && k < 4; i++)
        if (copy[i] == '\0')
            f[++k] = copy + i + 1;
    if (f[4][0])
        details = json_loads(f[4], JSON_DECODE_ANY, NULL);
    e = (struct sl_audit_entry){(int64_t)n * 1000003, f[0], f[1], f[2], f[3], details};
    sl_buf_init(&b);
    rc = sl_audit_line(&h, &e, &b);
    if (rc == 0) {
        if (h.size != 1)
            fail("the writer did not advance the head");
        if (sl_audit_parse_line(b.data, b.len, &r, NULL) != 0)
            fail("a written line does not parse");
        if (strcmp(r.actor, f[0]) || strcmp(r.action, f[1]) || strcmp(r.object, f[2]) ||
            strcmp(r.outcome, f[3]) || memcmp(r.hash, h.hash, 32))
            fail("a written line reads back otherwise");
        sl_audit_rec_fini(&r);
        sl_buf_add(&b, "\n", 1);
        if (!b.failed) {
            stream(b.data, b.len, 7);
            if (verify(b.data, b.len, b.len, &v) != 0)
                fail("a written line fails the verifier");
            sl_audit_verifier_fini(&v);
        }
    } else if (h.size != 0 || b.len != 0) {
        fail("a refused event changed the head or the line");
    }
    sl_buf_fini(&b);
    json_decref(details);
    free(copy);
}

static void checkpoint(const char *s, size_t n)
{
    static const unsigned char seed[32] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct sl_audit_key k;
    struct sl_audit_head h = {-7, {0}};
    char vkey[SL_AUDIT_VKEY_MAX], origin[SL_AUDIT_ORIGIN_MAX + 1];
    int64_t at = -9;
    int rc;

    if (sl_audit_key_from_seed("fuzz.example/audit", seed, &k) != 0 ||
        sl_audit_vkey(&k, vkey, sizeof(vkey)) < 0)
        fail("the fixed key");
    rc = sl_audit_checkpoint_verify(s, n, vkey, &h, &at, NULL);
    if (rc == 0 && (h.size < 0 || at < -1))
        fail("a verified checkpoint with a negative size or time");
    if (rc < 0 && (h.size != -7 || at != -9))
        fail("a refused checkpoint changed its outputs");
    if (sl_audit_checkpoint_origin(s, n, origin, sizeof(origin)) == 0 &&
        strnlen(origin, sizeof(origin)) == sizeof(origin))
        fail("an origin without its NUL");
    sl_audit_key_fini(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data + 1;

    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 0:
        rebuild(s, size - 1);
        break;
    case 1:
        if (size >= 2)
            stream(s + 1, size - 2, (size_t)data[1] + 1);
        break;
    case 2:
        write_event(s, size - 1);
        break;
    default:
        checkpoint(s, size - 1);
        break;
    }
    return 0;
}
