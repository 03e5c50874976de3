/*
 * audit.c - canonical audit records, the chain verifier, signing keys and
 * signed checkpoints (see audit.h and docs/audit.md).
 *
 * One builder makes a record's text, both when the daemon writes a record
 * and when the verifier reads one back: a line is canonical exactly when
 * rebuilding it from its parsed fields gives the same bytes, so there is
 * no second definition of the format to drift from the first.
 */
#include "audit.h"
#include "../util/jfield.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#define HASH_TAIL 75          /* bytes of ,"hash":"<64 hex>"} */
#define AT_MS_MAX INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */
#define KEY_FILE_MAX 512      /* bytes of a private key file */
#define SIG_LINES_MAX 100     /* signature lines in a checkpoint */
#define ALG_ED25519 0x01      /* the signed-note signature type */

static const char em_dash[] = "\xE2\x80\x94 "; /* U+2014, then a space */

/* ---- records ---------------------------------------------------------- */

static void hex32(const unsigned char h[32], char out[65])
{
    sodium_bin2hex(out, 65, h, 32);
}

/* Decode n (even) lowercase hex digits into n/2 bytes. */
static int unhex(const char *s, size_t n, unsigned char *out)
{
    if (n % 2)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -EINVAL;
        if (i % 2 == 0)
            out[i / 2] = (unsigned char)(v << 4);
        else
            out[i / 2] |= (unsigned char)v;
    }
    return 0;
}

static int unhex32(const char *s, size_t n, unsigned char out[32])
{
    return n == 64 ? unhex(s, n, out) : -EINVAL;
}

/* A record's text field: UTF-8, no control characters, bounded. */
static int check_text(const char *s, bool need)
{
    size_t n;

    if (!s)
        return -EINVAL;
    n = strlen(s);
    if (n > SL_AUDIT_FIELD_MAX || (need && n == 0))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return -EINVAL;
    return sl_utf8_valid((const unsigned char *)s, n) ? 0 : -EINVAL;
}

static int check_entry(const struct sl_audit_entry *e)
{
    if (!e || e->at_ms < 0 || e->at_ms > AT_MS_MAX)
        return -EINVAL;
    if (check_text(e->actor, true) || check_text(e->action, true) ||
        check_text(e->object, false) || check_text(e->outcome, true))
        return -EINVAL;
    if (e->details && !json_is_object(e->details))
        return -EINVAL;
    return 0;
}

/* Append 's' as jansson writes a string with JSON_ENSURE_ASCII. A checked
 * field escapes to at most 6 bytes per input byte. */
static int add_str(struct sl_buf *b, const char *s)
{
    char tmp[SL_AUDIT_FIELD_MAX * 6 + 8];
    json_t *j;
    size_t n;

    sl_jf_watch();
    if (!(j = json_string(s)))
        return -ENOMEM; /* the text was checked (check_entry) */
    n = json_dumpb(j, tmp, sizeof(tmp), JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
    json_decref(j);
    if (n == 0 && sl_jf_oom(NULL))
        return -ENOMEM; /* jansson's dump allocates (its cycle check) */
    if (n == 0 || n > sizeof(tmp))
        return -EINVAL;
    sl_buf_add(b, tmp, n);
    return 0;
}

struct capped {
    struct sl_buf *b;
    size_t limit;               /* the buffer may not grow past this */
    bool over;                  /* it would have */
};

static int capped_add(const char *s, size_t n, void *data)
{
    struct capped *c = data;

    if (c->b->len + n > c->limit) {
        c->over = true;
        return -1;
    }
    sl_buf_add(c->b, s, n);
    return 0;
}

/* Append the record's text up to and including "prev":"<hex>" (no closing
 * brace): the hashed text is this and "}". */
static int build_prefix(struct sl_buf *b, int64_t seq,
                        const struct sl_audit_entry *e,
                        const unsigned char prev[32])
{
    const size_t start = b->len;
    struct capped cap = {b, start + SL_AUDIT_LINE_MAX - HASH_TAIL, false};
    char when[40], hex[65];
    int rc;

    sl_time_rfc3339(e->at_ms, when, sizeof(when));
    sl_buf_printf(b, "{\"seq\":%" PRId64 ",\"time\":\"%s\",\"actor\":", seq, when);
    if ((rc = add_str(b, e->actor)) < 0)
        return rc;
    sl_buf_adds(b, ",\"action\":");
    if ((rc = add_str(b, e->action)) < 0)
        return rc;
    sl_buf_adds(b, ",\"object\":");
    if ((rc = add_str(b, e->object)) < 0)
        return rc;
    sl_buf_adds(b, ",\"outcome\":");
    if ((rc = add_str(b, e->outcome)) < 0)
        return rc;
    sl_buf_adds(b, ",\"details\":");
    if (!e->details)
        sl_buf_adds(b, "{}");
    else if (json_dump_callback(e->details, capped_add, &cap,
                                JSON_COMPACT | JSON_SORT_KEYS |
                                    JSON_ENSURE_ASCII) != 0)
        /* too long, else memory: ours (b->failed) or jansson's own (the
         * sorted keys) */
        return cap.over && !b->failed ? -EFBIG : -ENOMEM;
    hex32(prev, hex);
    sl_buf_printf(b, ",\"prev\":\"%s\"", hex);
    if (b->failed)
        return -ENOMEM;
    if (b->len - start > SL_AUDIT_LINE_MAX - HASH_TAIL)
        return -EFBIG;
    return 0;
}

/* SHA-256 of p[0..n) followed by "}": the hash of a record whose text up
 * to its hash member is p. */
static void prefix_hash(const char *p, size_t n, unsigned char out[32])
{
    crypto_hash_sha256_state st;

    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const unsigned char *)p, n);
    crypto_hash_sha256_update(&st, (const unsigned char *)"}", 1);
    crypto_hash_sha256_final(&st, out);
}

static void buf_cut(struct sl_buf *b, size_t len)
{
    b->len = len;
    b->failed = false;
    if (b->data)
        b->data[len] = '\0';
}

/* Whether no string in 'v' (keys included) holds a NUL. */
static bool nul_free(const json_t *v)
{
    const char *k;
    json_t *x;
    size_t i;

    if (json_is_string(v))
        return strlen(json_string_value(v)) == json_string_length(v);
    if (json_is_array(v)) {
        json_array_foreach((json_t *)v, i, x) if (!nul_free(x)) return false;
    } else if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x) if (!nul_free(x)) return false;
    }
    return true;
}

int sl_audit_line(struct sl_audit_head *head, const struct sl_audit_entry *e,
                  struct sl_buf *line)
{
    unsigned char hash[32];
    char hex[65];
    size_t start;
    int rc;

    if (line->failed)
        return -ENOMEM;
    if (!head || head->size < 0 || head->size == INT64_MAX)
        return -EINVAL;
    if ((rc = check_entry(e)) < 0)
        return rc;
    start = line->len;
    if ((rc = build_prefix(line, head->size + 1, e, head->hash)) < 0)
        goto out;
    prefix_hash(line->data + start, line->len - start, hash);
    hex32(hash, hex);
    sl_buf_printf(line, ",\"hash\":\"%s\"}", hex);
    if (line->failed) {
        rc = -ENOMEM;
        goto out;
    }
    /* Details jansson cannot parse again (a NUL inside a string, which
     * json_stringn can make) must not reach the log as a record no one can
     * verify; everything else reads back as written (test_audit proves the
     * round trip), so the walk is all the engine pays, not a parse. */
    if (!nul_free(e->details)) {
        rc = -EINVAL;
        goto out;
    }
    head->size++;
    memcpy(head->hash, hash, 32);
out:
    if (rc < 0)
        buf_cut(line, start);
    return rc;
}

static const char *const rec_keys[] = {"seq",     "time",    "actor",
                                       "action",  "object",  "outcome",
                                       "details", "prev",    "hash"};

/* Copy string member 'key' of o into dst (SL_AUDIT_FIELD_MAX + 1). */
static int get_text(json_t *o, const char *key, char *dst, bool need,
                    struct sl_error *err)
{
    json_t *v = json_object_get(o, key);

    if (!json_is_string(v) || json_string_length(v) > SL_AUDIT_FIELD_MAX ||
        check_text(json_string_value(v), need) < 0)
        return sl_errorf(err, -EINVAL, "\"%s\" is not %s text of at most %d bytes",
                         key, need ? "non-empty" : "", SL_AUDIT_FIELD_MAX);
    sl_strlcpy(dst, json_string_value(v), SL_AUDIT_FIELD_MAX + 1);
    return 0;
}

static int get_hash(json_t *o, const char *key, unsigned char out[32],
                    struct sl_error *err)
{
    json_t *v = json_object_get(o, key);

    if (!json_is_string(v) ||
        unhex32(json_string_value(v), json_string_length(v), out) < 0)
        return sl_errorf(err, -EINVAL, "\"%s\" is not 64 lowercase hex digits", key);
    return 0;
}

int sl_audit_parse_line(const char *s, size_t n, struct sl_audit_rec *out,
                        struct sl_error *err)
{
    struct sl_audit_rec r;
    struct sl_audit_entry e;
    struct sl_buf b;
    json_error_t jerr;
    json_t *o = NULL, *v;
    unsigned char hash[32];
    char hex[65], tail[HASH_TAIL + 1];
    int rc = 0;

    memset(out, 0, sizeof(*out));
    memset(&r, 0, sizeof(r));
    sl_buf_init(&b);
    if (n > SL_AUDIT_LINE_MAX) {
        rc = sl_errorf(err, -EINVAL, "longer than %d bytes", SL_AUDIT_LINE_MAX);
        goto out;
    }
    if (!(o = sl_jf_loadb(s, n, JSON_REJECT_DUPLICATES, &jerr))) {
        rc = sl_jf_oom(&jerr) ? sl_errorf(err, -ENOMEM, "out of memory")
                 : sl_errorf(err, -EINVAL, "not JSON: %s", jerr.text);
        goto out;
    }
    if (!json_is_object(o) || json_object_size(o) != SL_ARRAY_LEN(rec_keys)) {
        rc = sl_errorf(err, -EINVAL, "not an object of the %zu record members",
                       SL_ARRAY_LEN(rec_keys));
        goto out;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(rec_keys); i++)
        if (!json_object_get(o, rec_keys[i])) {
            rc = sl_errorf(err, -EINVAL, "no \"%s\" member", rec_keys[i]);
            goto out;
        }
    v = json_object_get(o, "seq");
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) == INT64_MAX) {
        rc = sl_errorf(err, -EINVAL, "\"seq\" is not a positive integer");
        goto out;
    }
    r.seq = json_integer_value(v);
    v = json_object_get(o, "time");
    if (!json_is_string(v) ||
        sl_parse_rfc3339_ms(json_string_value(v), &r.at_ms) < 0 ||
        r.at_ms < 0 || r.at_ms > AT_MS_MAX) {
        rc = sl_errorf(err, -EINVAL, "\"time\" is not an RFC 3339 UTC time");
        goto out;
    }
    if ((rc = get_text(o, "actor", r.actor, true, err)) < 0 ||
        (rc = get_text(o, "action", r.action, true, err)) < 0 ||
        (rc = get_text(o, "object", r.object, false, err)) < 0 ||
        (rc = get_text(o, "outcome", r.outcome, true, err)) < 0 ||
        (rc = get_hash(o, "prev", r.prev, err)) < 0 ||
        (rc = get_hash(o, "hash", r.hash, err)) < 0)
        goto out;
    v = json_object_get(o, "details");
    if (!json_is_object(v)) {
        rc = sl_errorf(err, -EINVAL, "\"details\" is not an object");
        goto out;
    }
    e = (struct sl_audit_entry){r.at_ms, r.actor, r.action, r.object,
                                r.outcome, v};
    if ((rc = build_prefix(&b, r.seq, &e, r.prev)) < 0) {
        rc = rc == -ENOMEM ? rc : sl_errorf(err, -EINVAL, "cannot be rebuilt");
        goto out;
    }
    hex32(r.hash, hex);
    snprintf(tail, sizeof(tail), ",\"hash\":\"%s\"}", hex);
    if (n != b.len + HASH_TAIL || memcmp(s, b.data, b.len) != 0 ||
        memcmp(s + b.len, tail, HASH_TAIL) != 0) {
        rc = sl_errorf(err, -EINVAL, "not in canonical form");
        goto out;
    }
    prefix_hash(s, b.len, hash);
    if (sodium_memcmp(hash, r.hash, 32) != 0) {
        rc = sl_errorf(err, -EBADMSG, "hash does not match its contents");
        goto out;
    }
    r.details = json_incref(v);
    *out = r;
out:
    json_decref(o);
    sl_buf_fini(&b);
    return rc;
}

int sl_audit_index_check(const struct sl_audit_index *ix, const char *s, size_t n,
                         struct sl_error *err)
{
    struct sl_audit_rec r;
    const char *cols[] = {"actor", "action", "object", "outcome"};
    const char *have[] = {ix->actor, ix->action, ix->object, ix->outcome};
    const char *want[4];
    char shown[2][64];
    int rc;

    if ((rc = sl_audit_parse_line(s, n, &r, err)) < 0)
        return rc;
    want[0] = r.actor;
    want[1] = r.action;
    want[2] = r.object;
    want[3] = r.outcome;
    if (ix->seq != r.seq)
        rc = sl_errorf(err, -EBADMSG, "record %lld: its seq column says %lld",
                       (long long)r.seq, (long long)ix->seq);
    else if (ix->at_ms != r.at_ms)
        rc = sl_errorf(err, -EBADMSG,
                       "record %lld: its time column says %lld ms, its line %lld ms",
                       (long long)r.seq, (long long)ix->at_ms, (long long)r.at_ms);
    for (size_t k = 0; rc == 0 && k < SL_ARRAY_LEN(cols); k++) {
        if (have[k] && strcmp(have[k], want[k]) == 0)
            continue;
        sl_text_show(shown[0], sizeof(shown[0]), have[k] ? have[k] : "",
                     have[k] ? strlen(have[k]) : 0, 48);
        sl_text_show(shown[1], sizeof(shown[1]), want[k], strlen(want[k]), 48);
        rc = sl_errorf(err, -EBADMSG,
                       "record %lld: its %s column says \"%s\", its line \"%s\"",
                       (long long)r.seq, cols[k], have[k] ? shown[0] : "(null)", shown[1]);
    }
    sl_audit_rec_fini(&r);
    return rc;
}

void sl_audit_rec_fini(struct sl_audit_rec *r)
{
    if (!r)
        return;
    json_decref(r->details);
    r->details = NULL;
}

/* ---- the verifier ----------------------------------------------------- */

static int vfail(struct sl_audit_verifier *v, int rc, int64_t line, bool ckpt,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int vfail(struct sl_audit_verifier *v, int rc, int64_t line, bool ckpt,
                 const char *fmt, ...)
{
    va_list ap;

    v->rc = rc;
    v->bad_seq = v->head.size + 1;
    v->bad_line = line;
    v->bad_ckpt = ckpt;
    va_start(ap, fmt);
    vsnprintf(v->why, sizeof(v->why), fmt, ap);
    va_end(ap);
    return rc;
}

void sl_audit_verifier_init(struct sl_audit_verifier *v,
                            const struct sl_audit_head *ckpt)
{
    static const unsigned char zero[32];

    memset(v, 0, sizeof(*v));
    if (!ckpt)
        return;
    v->have_ckpt = true;
    v->ckpt = *ckpt;
    if (ckpt->size < 0 || (ckpt->size == 0 && memcmp(ckpt->hash, zero, 32)))
        vfail(v, -EBADMSG, 1, true, "the checkpoint's head is not a log's head");
}

/* Verify one complete line s[0..n) (its '\n' taken off). */
static int check_line(struct sl_audit_verifier *v, const char *s, size_t n)
{
    const int64_t line = ++v->lines, want = v->head.size + 1;
    struct sl_audit_rec r;
    struct sl_error err = {"", ""};
    unsigned char hash[32];
    int rc;

    /* Cheap checks first: any change to a record's bytes is seen here,
     * before the JSON parser runs. */
    if (n > SL_AUDIT_LINE_MAX)
        return vfail(v, -EBADMSG, line, false,
                     "line %" PRId64 " is not a canonical record: longer than %d bytes",
                     line, SL_AUDIT_LINE_MAX);
    if (n < HASH_TAIL + 1 || s[0] != '{' ||
        memcmp(s + n - HASH_TAIL, ",\"hash\":\"", 9) != 0 ||
        memcmp(s + n - 2, "\"}", 2) != 0 ||
        unhex32(s + n - 66, 64, hash) < 0)
        return vfail(v, -EBADMSG, line, false,
                     "line %" PRId64 " is not a canonical record: it does not end in its hash",
                     line);
    {
        unsigned char got[32];
        prefix_hash(s, n - HASH_TAIL, got);
        if (sodium_memcmp(got, hash, 32) != 0)
            return vfail(v, -EBADMSG, line, false,
                         "record %" PRId64 ": hash does not match its contents", want);
    }
    rc = sl_audit_parse_line(s, n, &r, &err);
    if (rc == -ENOMEM)
        return vfail(v, rc, line, false, "out of memory");
    if (rc < 0)
        return vfail(v, -EBADMSG, line, false,
                     "line %" PRId64 " is not a canonical record: %s", line, err.text);
    sl_audit_rec_fini(&r);
    if (r.seq != want)
        return vfail(v, -EBADMSG, line, false,
                     "record %" PRId64 ": seq is %" PRId64, want, r.seq);
    if (memcmp(r.prev, v->head.hash, 32) != 0) {
        if (want == 1)
            return vfail(v, -EBADMSG, line, false,
                         "record 1: prev is not all zeros");
        return vfail(v, -EBADMSG, line, false,
                     "record %" PRId64 ": prev does not link to record %" PRId64,
                     want, want - 1);
    }
    if (v->have_ckpt && want == v->ckpt.size &&
        memcmp(r.hash, v->ckpt.hash, 32) != 0)
        return vfail(v, -EBADMSG, line, true,
                     "record %" PRId64 ": hash differs from the checkpoint's head: "
                     "the log was rewritten", want);
    v->head.size = want;
    memcpy(v->head.hash, r.hash, 32);
    return 0;
}

/* Keep data[0..len) as the start of an unfinished line. */
static int stash(struct sl_audit_verifier *v, const char *data, size_t len)
{
    if (v->part_len + len > SL_AUDIT_LINE_MAX)
        return vfail(v, -EBADMSG, v->lines + 1, false,
                     "line %" PRId64 " is not a canonical record: longer than %d bytes",
                     v->lines + 1, SL_AUDIT_LINE_MAX);
    if (v->part_len + len > v->part_cap) {
        size_t cap = v->part_cap ? v->part_cap : 512;
        char *p;
        while (cap < v->part_len + len)
            cap *= 2;
        if (!(p = realloc(v->part, cap)))
            return -ENOMEM;
        v->part = p;
        v->part_cap = cap;
    }
    memcpy(v->part + v->part_len, data, len);
    v->part_len += len;
    return 0;
}

int sl_audit_verifier_feed(struct sl_audit_verifier *v, const char *data,
                           size_t len)
{
    int rc;

    while (v->rc == 0 && len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t n;

        if (!nl)
            return stash(v, data, len);
        n = (size_t)(nl - data);
        if (v->part_len > 0) {
            if ((rc = stash(v, data, n)) < 0)
                return rc;
            rc = check_line(v, v->part, v->part_len);
            v->part_len = 0;
        } else {
            rc = check_line(v, data, n);
        }
        if (rc < 0)
            return rc;
        data += n + 1;
        len -= n + 1;
    }
    return v->rc;
}

int sl_audit_verifier_finish(struct sl_audit_verifier *v)
{
    if (v->rc)
        return v->rc;
    if (v->part_len > 0)
        return vfail(v, -EBADMSG, v->lines + 1, false,
                     "line %" PRId64 " has no newline at its end: the log was cut short",
                     v->lines + 1);
    if (v->have_ckpt && v->head.size < v->ckpt.size)
        return vfail(v, -EBADMSG, v->lines + 1, true,
                     "the log has %" PRId64 " records; the checkpoint signs %" PRId64
                     ": truncated or rolled back",
                     v->head.size, v->ckpt.size);
    return 0;
}

int sl_audit_verifier_copy(struct sl_audit_verifier *dst,
                           const struct sl_audit_verifier *src)
{
    *dst = *src;
    dst->part = NULL;
    dst->part_cap = 0;
    if (src->part_len == 0) {
        dst->part_len = 0;
        return 0;
    }
    if (!(dst->part = malloc(src->part_len))) {
        dst->part_len = 0;
        return -ENOMEM;
    }
    memcpy(dst->part, src->part, src->part_len);
    dst->part_cap = src->part_len;
    return 0;
}

void sl_audit_verifier_fini(struct sl_audit_verifier *v)
{
    if (!v)
        return;
    free(v->part);
    v->part = NULL;
    v->part_len = v->part_cap = 0;
}

/* ---- keys ------------------------------------------------------------- */

bool sl_audit_key_name_ok(const char *name)
{
    size_t n;

    if (!name || (n = strlen(name)) == 0 || n > SL_AUDIT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '/' ||
              c == '-'))
            return false;
    }
    return true;
}

static void key_id(const char *name, const unsigned char pk[32],
                   unsigned char id[4])
{
    crypto_hash_sha256_state st;
    unsigned char h[32];
    const unsigned char alg[2] = {'\n', ALG_ED25519};

    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const unsigned char *)name, strlen(name));
    crypto_hash_sha256_update(&st, alg, 2);
    crypto_hash_sha256_update(&st, pk, 32);
    crypto_hash_sha256_final(&st, h);
    memcpy(id, h, 4);
}

int sl_audit_key_from_seed(const char *name, const unsigned char seed[32],
                           struct sl_audit_key *k)
{
    if (!sl_audit_key_name_ok(name))
        return -EINVAL;
    if (sodium_init() < 0)
        return -ENOMEM;
    memset(k, 0, sizeof(*k));
    sl_strlcpy(k->name, name, sizeof(k->name));
    crypto_sign_ed25519_seed_keypair(k->pk, k->sk, seed);
    key_id(k->name, k->pk, k->id);
    return 0;
}

void sl_audit_key_fini(struct sl_audit_key *k)
{
    if (k)
        sodium_memzero(k, sizeof(*k));
}

/* Decode standard, padded base64 s[0..n) of exactly 'want' bytes (0: any up
 * to 'max'); the text must be the canonical encoding. Returns the length
 * or -EINVAL. */
static int unbase64(const char *s, size_t n, unsigned char *out, size_t max,
                    size_t want)
{
    char again[512];
    size_t got = 0;
    const char *end = NULL;

    if (n == 0 || n >= sizeof(again) ||
        sodium_base642bin(out, max, s, n, NULL, &got, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != s + n || (want && got != want))
        return -EINVAL;
    sodium_bin2base64(again, sizeof(again), out, got,
                      sodium_base64_VARIANT_ORIGINAL);
    if (strlen(again) != n || memcmp(again, s, n) != 0)
        return -EINVAL;
    return (int)got;
}

static void base64(char *dst, size_t size, const unsigned char *bin, size_t n)
{
    sodium_bin2base64(dst, size, bin, n, sodium_base64_VARIANT_ORIGINAL);
}

/* Parse the private key text t[0..n) into *k. */
static int key_parse(const char *path, const char *t, size_t n,
                     const char *want_name, struct sl_audit_key *k,
                     struct sl_error *err)
{
    static const char magic[] = "PRIVATE+KEY+";
    unsigned char raw[48], id[4];
    char name[SL_AUDIT_NAME_MAX + 1];
    const char *p, *q, *end;
    int rc = 0;

    if (n < sizeof(magic) || memcmp(t, magic, sizeof(magic) - 1) != 0 ||
        t[n - 1] != '\n' || memchr(t, '\n', n) != t + n - 1) {
        rc = sl_errorf(err, -EINVAL,
                       "key file %s: not one line PRIVATE+KEY+name+id+key", path);
        goto out;
    }
    end = t + n - 1;
    p = t + sizeof(magic) - 1;
    q = memchr(p, '+', (size_t)(end - p));
    if (!q || (size_t)(q - p) > SL_AUDIT_NAME_MAX) {
        rc = sl_errorf(err, -EINVAL, "key file %s: no key name", path);
        goto out;
    }
    memcpy(name, p, (size_t)(q - p));
    name[q - p] = '\0';
    if (!sl_audit_key_name_ok(name)) {
        rc = sl_errorf(err, -EINVAL, "key file %s: the key name is not 1..64 of "
                       "[A-Za-z0-9._/-]", path);
        goto out;
    }
    p = q + 1;
    if (end - p < 10 || p[8] != '+' || unhex(p, 8, id) < 0) {
        rc = sl_errorf(err, -EINVAL, "key file %s: no key id of 8 lowercase hex digits",
                       path);
        goto out;
    }
    p += 9;
    if (unbase64(p, (size_t)(end - p), raw, sizeof(raw), 33) < 0 ||
        raw[0] != ALG_ED25519) {
        rc = sl_errorf(err, -EINVAL, "key file %s: the key is not base64 of an "
                       "Ed25519 seed", path);
        goto out;
    }
    if (want_name && strcmp(want_name, name) != 0) {
        rc = sl_errorf(err, -EINVAL, "key file %s: holds key '%s', not '%s'",
                       path, name, want_name);
        goto out;
    }
    if ((rc = sl_audit_key_from_seed(name, raw + 1, k)) < 0) {
        rc = sl_errorf(err, rc, "key file %s: cannot derive the key", path);
        goto out;
    }
    if (memcmp(id, k->id, 4) != 0) {
        sl_audit_key_fini(k);
        rc = sl_errorf(err, -EINVAL, "key file %s: the key id does not match "
                       "the key: the file is damaged", path);
        goto out;
    }
out:
    sodium_memzero(raw, sizeof(raw));
    return rc;
}

/* Write a new key file at 'path', never replacing one that is there;
 * -EEXIST when another writer got there first. */
static int key_create(const char *path, const char *name, struct sl_error *err)
{
    struct sl_audit_key k;
    unsigned char seed[33];
    char text[KEY_FILE_MAX], b64[64], idhex[9], tmp[4096], dir[4096];
    int fd = -1, rc = 0, n;
    const char *slash;

    memset(&k, 0, sizeof(k));
    tmp[0] = '\0';
    if (!sl_audit_key_name_ok(name))
        return sl_errorf(err, -EINVAL, "key name '%s' is not 1..64 of [A-Za-z0-9._/-]",
                         name ? name : "");
    if (sodium_init() < 0)
        return sl_errorf(err, -ENOMEM, "libsodium does not start");
    seed[0] = ALG_ED25519;
    randombytes_buf(seed + 1, 32);
    if ((rc = sl_audit_key_from_seed(name, seed + 1, &k)) < 0)
        goto out;
    base64(b64, sizeof(b64), seed, 33);
    sodium_bin2hex(idhex, sizeof(idhex), k.id, 4);
    n = snprintf(text, sizeof(text), "PRIVATE+KEY+%s+%s+%s\n", name, idhex, b64);
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= sizeof(tmp)) {
        rc = sl_errorf(err, -ENAMETOOLONG, "key file %s: path too long", path);
        goto out;
    }
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        rc = sl_errorf(err, -errno, "key file %s: cannot create %s: %s", path,
                       tmp, strerror(errno));
        goto out;
    }
    errno = 0;
    if (fchmod(fd, 0600) < 0 || write(fd, text, (size_t)n) != n || fsync(fd) < 0) {
        rc = sl_errorf(err, errno ? -errno : -EIO, "key file %s: cannot write %s",
                       path, tmp);
        goto out;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = sl_errorf(err, -errno, "key file %s: cannot write %s", path, tmp);
        goto out;
    }
    fd = -1;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
        /* A file system without RENAME_NOREPLACE: link() never replaces. */
        if ((errno == EINVAL || errno == ENOSYS) && link(tmp, path) == 0) {
            unlink(tmp);
        } else {
            rc = errno == EEXIST ? -EEXIST
                                 : sl_errorf(err, -errno, "key file %s: %s", path,
                                             strerror(errno));
            unlink(tmp);
            goto out;
        }
    }
    slash = strrchr(path, '/');
    if (slash == path) {
        sl_strlcpy(dir, "/", sizeof(dir));
    } else if (slash && (size_t)(slash - path) < sizeof(dir)) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    } else {
        sl_strlcpy(dir, ".", sizeof(dir));
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
        fsync(fd); /* durability of the new name; nothing to undo if it fails */
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0 && rc != -EEXIST && tmp[0])
        unlink(tmp);
    sodium_memzero(seed, sizeof(seed));
    sodium_memzero(text, sizeof(text));
    sodium_memzero(b64, sizeof(b64));
    sl_audit_key_fini(&k);
    return rc;
}

int sl_audit_key_load_or_create(const char *path, const char *name,
                                struct sl_audit_key *k, struct sl_error *err)
{
    char text[KEY_FILE_MAX + 1];
    size_t len = 0;
    int fd = -1, rc = 0;

    for (int tries = 0; tries < 2; tries++) {
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
            break;
        if (errno != ENOENT || tries > 0)
            return sl_errorf(err, -errno, "key file %s: %s", path, strerror(errno));
        rc = key_create(path, name, err);
        if (rc < 0 && rc != -EEXIST)
            return rc;
        rc = 0;
    }
    while (len < sizeof(text)) {
        ssize_t n = read(fd, text + len, sizeof(text) - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = sl_errorf(err, -errno, "key file %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > KEY_FILE_MAX) {
        rc = sl_errorf(err, -EINVAL, "key file %s: longer than %d bytes", path,
                       KEY_FILE_MAX);
        goto out;
    }
    rc = key_parse(path, text, len, name, k, err);
out:
    close(fd);
    sodium_memzero(text, sizeof(text));
    return rc;
}

int sl_audit_vkey(const struct sl_audit_key *k, char *buf, size_t size)
{
    unsigned char raw[33];
    char b64[64], idhex[9];
    int n;

    raw[0] = ALG_ED25519;
    memcpy(raw + 1, k->pk, 32);
    base64(b64, sizeof(b64), raw, 33);
    sodium_bin2hex(idhex, sizeof(idhex), k->id, 4);
    n = snprintf(buf, size, "%s+%s+%s", k->name, idhex, b64);
    if (n < 0 || (size_t)n >= size)
        return -ENOSPC;
    return n;
}

/* Parse verifier key text into name, id and public key. */
static int vkey_parse(const char *vkey, char name[SL_AUDIT_NAME_MAX + 1],
                      unsigned char id[4], unsigned char pk[32],
                      struct sl_error *err)
{
    const char *p = vkey, *q;
    unsigned char raw[48], want[4];
    size_t n;

    if (!vkey || !(q = strchr(p, '+')) || (size_t)(q - p) > SL_AUDIT_NAME_MAX)
        return sl_errorf(err, -EINVAL, "verifier key: not name+id+key");
    memcpy(name, p, (size_t)(q - p));
    name[q - p] = '\0';
    if (!sl_audit_key_name_ok(name))
        return sl_errorf(err, -EINVAL, "verifier key: bad key name");
    p = q + 1;
    if (strlen(p) < 10 || p[8] != '+' || unhex(p, 8, id) < 0)
        return sl_errorf(err, -EINVAL, "verifier key %s: no key id of 8 lowercase "
                         "hex digits", name);
    p += 9;
    n = strlen(p);
    if (unbase64(p, n, raw, sizeof(raw), 33) < 0 || raw[0] != ALG_ED25519)
        return sl_errorf(err, -EINVAL, "verifier key %s: not an Ed25519 key", name);
    memcpy(pk, raw + 1, 32);
    key_id(name, pk, want);
    if (memcmp(want, id, 4) != 0)
        return sl_errorf(err, -EINVAL, "verifier key %s: the key id does not "
                         "match the key", name);
    return 0;
}

/* ---- checkpoints ------------------------------------------------------ */

static bool origin_ok(const char *s, size_t n)
{
    if (n == 0 || n > SL_AUDIT_ORIGIN_MAX || s[0] == ' ' || s[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return false;
    return true;
}

int sl_audit_checkpoint_sign(const struct sl_audit_key *k, const char *origin,
                             const struct sl_audit_head *h, int64_t at_ms,
                             struct sl_buf *out)
{
    static const unsigned char zero[32];
    unsigned char sig[4 + crypto_sign_ed25519_BYTES];
    char b64[128], when[40];
    struct sl_buf body;
    int rc = 0;

    if (out->failed)
        return -ENOMEM;
    if (!origin || !origin_ok(origin, strlen(origin)) || !h || h->size < 0 ||
        (h->size == 0 && memcmp(h->hash, zero, 32) != 0) || at_ms > AT_MS_MAX ||
        !sl_audit_key_name_ok(k->name))
        return -EINVAL;
    sl_buf_init(&body);
    base64(b64, sizeof(b64), h->hash, 32);
    sl_buf_printf(&body, "%s\n%" PRId64 "\n%s\n", origin, h->size, b64);
    if (at_ms >= 0)
        sl_buf_printf(&body, "time %s\n", sl_time_rfc3339(at_ms, when, sizeof(when)));
    if (body.failed) {
        rc = -ENOMEM;
        goto out;
    }
    memcpy(sig, k->id, 4);
    crypto_sign_ed25519_detached(sig + 4, NULL, (const unsigned char *)body.data,
                                 body.len, k->sk);
    base64(b64, sizeof(b64), sig, sizeof(sig));
    {
        size_t start = out->len;
        sl_buf_add(out, body.data, body.len);
        sl_buf_printf(out, "\n%s%s %s\n", em_dash, k->name, b64);
        if (out->failed) {
            buf_cut(out, start);
            rc = -ENOMEM;
        }
    }
out:
    sl_buf_fini(&body);
    return rc;
}

/* The next line of t[*pos..len): its start and length without '\n'.
 * False when there is none or it has no '\n'. */
static bool next_line(const char *t, size_t len, size_t *pos, const char **s,
                      size_t *n)
{
    const char *nl;

    if (*pos >= len || !(nl = memchr(t + *pos, '\n', len - *pos)))
        return false;
    *s = t + *pos;
    *n = (size_t)(nl - *s);
    *pos += *n + 1;
    return true;
}

/* The body of a checkpoint, text[0..body_len) up to its blank line: the
 * origin, the size, the head's hash and an optional time line into *h and
 * *t_ms (-1 when absent). Returns the number of its lines, or -EINVAL. */
static int checkpoint_body(const char *text, size_t body_len, struct sl_audit_head *h,
                           int64_t *t_ms, struct sl_error *err)
{
    static const unsigned char zero[32];
    char num[24], when[40];
    const char *s;
    size_t n, pos = 0;
    int lineno;

    if (!next_line(text, body_len, &pos, &s, &n) || !origin_ok(s, n))
        return sl_errorf(err, -EINVAL, "checkpoint: line 1 is not an origin "
                         "(printable ASCII, 1..%d bytes, no spaces at the ends)",
                         SL_AUDIT_ORIGIN_MAX);
    if (!next_line(text, body_len, &pos, &s, &n) || n == 0 || n >= sizeof(num) ||
        (n > 1 && s[0] == '0'))
        return sl_errorf(err, -EINVAL, "checkpoint: line 2 is not a size");
    memcpy(num, s, n);
    num[n] = '\0';
    if (sl_parse_int64(num, 0, INT64_MAX, &h->size) < 0)
        return sl_errorf(err, -EINVAL, "checkpoint: line 2 is not a size");
    if (!next_line(text, body_len, &pos, &s, &n) ||
        unbase64(s, n, h->hash, sizeof(h->hash), 32) < 0)
        return sl_errorf(err, -EINVAL, "checkpoint: line 3 is not a base64 SHA-256 hash");
    if (h->size == 0 && memcmp(h->hash, zero, 32) != 0)
        return sl_errorf(err, -EINVAL, "checkpoint: the head of an empty log is "
                         "not all zero");
    lineno = 3;
    while (next_line(text, body_len, &pos, &s, &n)) {
        char again[40];
        lineno++;
        if (lineno != 4 || n < 6 || n - 5 >= sizeof(when) || memcmp(s, "time ", 5) != 0)
            return sl_errorf(err, -EINVAL, "checkpoint: line %d is an unknown "
                             "extension", lineno);
        memcpy(when, s + 5, n - 5);
        when[n - 5] = '\0';
        if (sl_parse_rfc3339_ms(when, t_ms) < 0 || *t_ms < 0 || *t_ms > AT_MS_MAX ||
            strcmp(sl_time_rfc3339(*t_ms, again, sizeof(again)), when) != 0)
            return sl_errorf(err, -EINVAL, "checkpoint: line 4 is not \"time "
                             "<RFC 3339 UTC with ms>\"");
    }
    return lineno;
}

/* The signature lines after the blank line of a checkpoint (line
 * 'lineno' + 1 on): well formed, at most SIG_LINES_MAX, and one of them
 * by key 'name' (id, public key pk) that verifies over the body. Lines of
 * other keys are not judged. Returns 0, -EINVAL or -EPERM. */
static int checkpoint_signatures(const char *text, size_t len, size_t body_len, int lineno,
                                 const char *name, const unsigned char id[4],
                                 const unsigned char pk[32], struct sl_error *err)
{
    unsigned char sig[128];
    const char *s;
    size_t n, pos = body_len + 1;
    bool ours = false, good = false;

    if (pos >= len)
        return sl_errorf(err, -EINVAL, "checkpoint: no signature lines");
    if (text[len - 1] != '\n')
        return sl_errorf(err, -EINVAL, "checkpoint: the last line has no newline");
    for (int count = 0; next_line(text, len, &pos, &s, &n); count++) {
        const char *sp;
        char sname[SL_AUDIT_NAME_MAX + 1];
        int got;

        lineno++;
        if (count == SIG_LINES_MAX)
            return sl_errorf(err, -EINVAL, "checkpoint: more than %d signatures",
                             SIG_LINES_MAX);
        if (n < 4 || memcmp(s, em_dash, 4) != 0 ||
            !(sp = memchr(s + 4, ' ', n - 4)) || (size_t)(sp - s - 4) > SL_AUDIT_NAME_MAX)
            return sl_errorf(err, -EINVAL, "checkpoint: line %d is not a signature line",
                             lineno);
        memcpy(sname, s + 4, (size_t)(sp - s - 4));
        sname[sp - s - 4] = '\0';
        got = unbase64(sp + 1, (size_t)(s + n - sp - 1), sig, sizeof(sig), 0);
        if (!sl_audit_key_name_ok(sname) || got < 5)
            return sl_errorf(err, -EINVAL, "checkpoint: line %d is not a signature line",
                             lineno);
        if (strcmp(sname, name) != 0 || memcmp(sig, id, 4) != 0)
            continue; /* another key's signature: not ours to judge */
        ours = true;
        if (got == 4 + crypto_sign_ed25519_BYTES &&
            crypto_sign_ed25519_verify_detached(sig + 4, (const unsigned char *)text,
                                                body_len, pk) == 0)
            good = true;
    }
    if (!good)
        return ours ? sl_errorf(err, -EPERM, "checkpoint signature does not "
                                "verify with key %s", name)
                    : sl_errorf(err, -EPERM, "checkpoint: no signature by key %s",
                                name);
    return 0;
}

int sl_audit_checkpoint_verify(const char *text, size_t len, const char *vkey,
                               struct sl_audit_head *out, int64_t *at_ms,
                               struct sl_error *err)
{
    char name[SL_AUDIT_NAME_MAX + 1];
    unsigned char id[4], pk[32];
    struct sl_audit_head h = {0, {0}};
    int64_t t_ms = -1;
    const char *blank;
    size_t body_len;
    int rc, lineno;

    if ((rc = vkey_parse(vkey, name, id, pk, err)) < 0)
        return rc;
    if (len > SL_AUDIT_CHECKPOINT_MAX)
        return sl_errorf(err, -EFBIG, "checkpoint: longer than %d bytes",
                         SL_AUDIT_CHECKPOINT_MAX);
    if (memchr(text, '\0', len))
        return sl_errorf(err, -EINVAL, "checkpoint: has a NUL byte");
    blank = memmem(text, len, "\n\n", 2);
    if (!blank)
        return sl_errorf(err, -EINVAL, "checkpoint: no blank line before the signatures");
    body_len = (size_t)(blank - text) + 1;
    if ((lineno = checkpoint_body(text, body_len, &h, &t_ms, err)) < 0)
        return lineno;
    lineno++; /* the blank line */
    if ((rc = checkpoint_signatures(text, len, body_len, lineno, name, id, pk, err)) < 0)
        return rc;
    *out = h;
    if (at_ms)
        *at_ms = t_ms;
    return 0;
}

int sl_audit_checkpoint_origin(const char *text, size_t len, char *buf,
                               size_t size)
{
    const char *nl = memchr(text, '\n', len);
    size_t n;

    if (!nl || !origin_ok(text, (n = (size_t)(nl - text))) || n >= size)
        return -EINVAL;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return 0;
}
