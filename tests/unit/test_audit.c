/*
 * test_audit.c - the audit log: canonical record bytes and escaping,
 * refusal of bad entries, parsing back, the streaming verifier, key files,
 * checkpoints and their tampering, and the mutation battery (every byte
 * change, deletion, swap, truncation and duplicate of a 1,200-record chain,
 * and a rollback against an older checkpoint).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "../../src/audit/audit.h"
#include "../../src/util/rng.h"
#include "../../src/util/util.h"
#include "../audit_battery.h"
#include "../tap.h"

#define AT_MS INT64_C(1796292672345) /* 2026-12-03T10:11:12.345Z */

static char g_dir[PATH_MAX];

static void hex(const unsigned char *h, char out[65])
{
    sodium_bin2hex(out, 65, h, 32);
}

static void put(const char *path, const char *text, size_t n, unsigned mode)
{
    FILE *f = fopen(path, "w");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    chmod(path, mode);
}

/* The canonical text of a fixed entry, written out by hand; its hash is
 * computed here from that text, not by the library. */
static void test_golden(void)
{
    static const char body[] =
        "{\"seq\":1,\"time\":\"2026-12-03T10:11:12.345Z\",\"actor\":\"alice\","
        "\"action\":\"job.submit\",\"object\":\"job:42\",\"outcome\":\"ok\","
        "\"details\":{\"gpus\":2,\"queue\":\"research\",\"why\":[1,true,null]},"
        "\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\"}";
    struct sl_audit_head head = {0, {0}};
    struct sl_audit_entry e = {AT_MS, "alice", "job.submit", "job:42", "ok", NULL};
    unsigned char h[32];
    char hx[65], want[sizeof(body) + 80];
    struct sl_buf line;
    json_t *d = json_pack("{s:s,s:i,s:[i,b,n]}", "queue", "research", "gpus", 2,
                          "why", 1, 1);

    e.details = d;
    crypto_hash_sha256(h, (const unsigned char *)body, sizeof(body) - 1);
    hex(h, hx);
    snprintf(want, sizeof(want), "%.*s,\"hash\":\"%s\"}", (int)sizeof(body) - 2, body, hx);
    sl_buf_init(&line);
    sl_buf_adds(&line, "kept|");
    is_int(sl_audit_line(&head, &e, &line), 0, "a record is made of a fixed entry");
    ok(line.len > 5 && strcmp(line.data + 5, want) == 0,
       "its text is the canonical form byte for byte, details with sorted keys");
    if (line.len > 5 && strcmp(line.data + 5, want) != 0)
        diag("got  %s\nwant %s", line.data + 5, want);
    ok(strncmp(line.data, "kept|", 5) == 0, "the text is appended to what the buffer held");
    is_int(head.size, 1, "the head advances to size 1");
    ok(memcmp(head.hash, h, 32) == 0,
       "the head hash is SHA-256 of the record without its hash member");

    /* The second record links to the first. */
    {
        char prevhex[80];
        size_t at = line.len;
        e.details = NULL;
        e.outcome = "refused";
        is_int(sl_audit_line(&head, &e, &line), 0, "a second record is made");
        snprintf(prevhex, sizeof(prevhex), "\"details\":{},\"prev\":\"%s\"", hx);
        ok(strstr(line.data + at, prevhex) != NULL,
           "its prev is the first record's hash and NULL details are {}");
        ok(strncmp(line.data + at, "{\"seq\":2,", 9) == 0, "its seq is 2");
    }
    sl_buf_fini(&line);
    json_decref(d);
}

static void test_escaping(void)
{
    struct sl_audit_head head = {0, {0}};
    struct sl_audit_entry e = {AT_MS, "Jos\xc3\xa9 \"q\" \\", "job.submit", "", "ok", NULL};
    struct sl_buf line;
    struct sl_audit_rec r;
    json_t *d = json_pack("{s:s}", "s",
                          "q\"b\\s/\x01\x1f\n\t\r\x7f \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");

    e.details = d;
    sl_buf_init(&line);
    is_int(sl_audit_line(&head, &e, &line), 0, "a record with awkward strings is made");
    ok(strstr(line.data, "\"actor\":\"Jos\\u00E9 \\\"q\\\" \\\\\"") != NULL,
       "the actor's quotes, backslash and non-ASCII are escaped as jansson does");
    ok(strstr(line.data,
              "\"details\":{\"s\":\"q\\\"b\\\\s/\\u0001\\u001F\\n\\t\\r\x7f "
              "\\u00E9\\u20AC\\uD83D\\uDE00\"}") != NULL,
       "details strings: control characters, BMP and astral characters escaped");
    if (!strstr(line.data, "\\uD83D\\uDE00"))
        diag("got %s", line.data);
    ok(strstr(line.data, "\"object\":\"\"") != NULL, "an empty object is \"\"");
    {
        size_t i = 0;
        while (i < line.len && (unsigned char)line.data[i] < 0x80)
            i++;
        is_int(i, line.len, "the record is ASCII");
    }
    is_int(sl_audit_parse_line(line.data, line.len, &r, NULL), 0,
           "the record parses back");
    is_str(r.actor, "Jos\xc3\xa9 \"q\" \\", "the actor reads back as UTF-8");
    is_str(json_string_value(json_object_get(r.details, "s")),
           "q\"b\\s/\x01\x1f\n\t\r\x7f \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
           "the details string reads back unchanged");
    sl_audit_rec_fini(&r);
    sl_buf_fini(&line);
    json_decref(d);
}

static void test_refusals(void)
{
    struct sl_audit_head head = {3, {7}}, before;
    struct sl_buf line;
    char long_s[SL_AUDIT_FIELD_MAX + 2];
    json_t *arr = json_array(), *nul = json_object(), *big = json_object();
    struct {
        struct sl_audit_entry e;
        int rc;
        const char *name;
    } cases[] = {
        /* entry, expected result, test name */
        {{AT_MS, "", "a", "", "ok", NULL}, -EINVAL, "an empty actor"},
        {{AT_MS, "al\nice", "a", "", "ok", NULL}, -EINVAL, "an actor with a newline"},
        {{AT_MS, "alice", "", "", "ok", NULL}, -EINVAL, "an empty action"},
        {{AT_MS, "alice", "job.\x7f", "", "ok", NULL}, -EINVAL, "an action with DEL"},
        {{AT_MS, "alice", "a", "", "", NULL}, -EINVAL, "an empty outcome"},
        {{AT_MS, "alice", "a", "", "o\tk", NULL}, -EINVAL, "an outcome with a tab"},
        {{AT_MS, "alice", "a", "job\r1", "ok", NULL}, -EINVAL, "an object with CR"},
        {{AT_MS, NULL, "a", "", "ok", NULL}, -EINVAL, "a NULL actor"},
        {{AT_MS, "ali\xc3", "a", "", "ok", NULL}, -EINVAL, "an actor that is not UTF-8"},
        {{AT_MS, long_s, "a", "", "ok", NULL}, -EINVAL, "an actor of 257 bytes"},
        {{AT_MS, "alice", long_s, "", "ok", NULL}, -EINVAL, "an action of 257 bytes"},
        {{AT_MS, "alice", "a", long_s, "ok", NULL}, -EINVAL, "an object of 257 bytes"},
        {{AT_MS, "alice", "a", "", "ok", arr}, -EINVAL, "details that are an array"},
        {{AT_MS, "alice", "a", "", "ok", nul}, -EINVAL, "details with a NUL in a string"},
        {{AT_MS, "alice", "a", "", "ok", big}, -EFBIG, "a record over 64 KiB"},
        {{-1, "alice", "a", "", "ok", NULL}, -EINVAL, "a time before 1970"},
    };
    char *huge = malloc(SL_AUDIT_LINE_MAX);

    memset(long_s, 'x', sizeof(long_s) - 1);
    long_s[sizeof(long_s) - 1] = '\0';
    memset(huge, 'y', SL_AUDIT_LINE_MAX - 1);
    huge[SL_AUDIT_LINE_MAX - 1] = '\0';
    json_object_set_new(big, "s", json_string(huge));
    json_object_set_new(nul, "s", json_stringn("a\0b", 3));
    sl_buf_init(&line);
    sl_buf_adds(&line, "prefix");
    before = head;
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        is_int(sl_audit_line(&head, &cases[i].e, &line), cases[i].rc,
               "%s is refused", cases[i].name);
        ok(head.size == before.size && memcmp(head.hash, before.hash, 32) == 0 &&
               line.len == 6 && strcmp(line.data, "prefix") == 0,
           "refusing %s leaves the head and the line unchanged", cases[i].name);
    }
    {
        struct sl_audit_entry e = {AT_MS, "alice", "a", long_s + 1, "ok", NULL};
        is_int(sl_audit_line(&head, &e, &line), 0, "an object of 256 bytes is fine");
    }
    sl_buf_fini(&line);
    free(huge);
    json_decref(arr);
    json_decref(nul);
    json_decref(big);
}

/* A made-up but varied event i of a chain; 'variant' changes its content. */
static void entry_of(int64_t i, int variant, struct sl_audit_entry *e,
                     char obj[64], json_t **details)
{
    static const char *const actors[] = {"alice", "bob", "scheduler", "meter",
                                         "system", "Zo\xc3\xab"};
    static const char *const actions[] = {"job.submit", "job.place", "job.cancel",
                                          "apply.queue", "token.issue", "job.preempt"};
    static const char *const notes[] = {"", "over \"quota\"", "C:\\jobs",
                                        "na\xc3\xafve \xe2\x82\xac", "tab\there",
                                        "line\nbreak"};
    struct sl_rng r;

    sl_rng_seed(&r, (uint64_t)i * 7919u + (uint64_t)variant * 104729u + 1);
    e->at_ms = AT_MS + i * 1000 + (int64_t)sl_rng_below(&r, 1000);
    e->actor = actors[sl_rng_below(&r, SL_ARRAY_LEN(actors))];
    e->action = actions[sl_rng_below(&r, SL_ARRAY_LEN(actions))];
    switch (sl_rng_below(&r, 3)) {
    case 0: snprintf(obj, 64, "job:%lld", (long long)i); break;
    case 1: snprintf(obj, 64, "queue:research"); break;
    default: obj[0] = '\0'; break;
    }
    e->object = obj;
    e->outcome = sl_rng_below(&r, 5) ? "ok" : "refused";
    *details = json_pack("{s:i,s:s,s:[i,i],s:f}", "gpus", (int)sl_rng_below(&r, 9),
                         "note", notes[sl_rng_below(&r, SL_ARRAY_LEN(notes))],
                         "shape", (int)i, variant, "share", 0.125 * (double)(i % 8));
    if (sl_rng_below(&r, 4) == 0)
        json_object_set_new(*details, "nested", json_pack("{s:{s:b}}", "a", "b", 1));
    e->details = *details;
}

/* Append records from..to (1-based) of the chain to 'out', one per line,
 * from head *h; records from 'changed_from' on take variant 1. */
static void gen(struct sl_audit_head *h, int64_t to, int64_t changed_from,
                struct sl_buf *out)
{
    while (h->size < to) {
        struct sl_audit_entry e;
        char obj[64];
        json_t *d;
        int64_t i = h->size + 1;
        entry_of(i, i >= changed_from ? 1 : 0, &e, obj, &d);
        if (sl_audit_line(h, &e, out) < 0) {
            fprintf(stderr, "record %lld refused\n", (long long)i);
            exit(1);
        }
        sl_buf_add(out, "\n", 1);
        json_decref(d);
    }
}

static int verify(const char *s, size_t n, const struct sl_audit_head *ckpt,
                  struct sl_audit_verifier *v)
{
    int rc;

    sl_audit_verifier_init(v, ckpt);
    rc = sl_audit_verifier_feed(v, s, n);
    if (rc == 0)
        rc = sl_audit_verifier_finish(v);
    return rc;
}

static void test_parse(void)
{
    struct sl_audit_head h = {0, {0}};
    struct sl_buf log;
    struct sl_audit_rec r;
    struct sl_error err = {"", ""};
    char *line, *nl;
    size_t n;

    sl_buf_init(&log);
    gen(&h, 2, 99, &log);
    nl = strchr(log.data, '\n');
    line = nl + 1;
    n = (size_t)(strchr(line, '\n') - line);
    is_int(sl_audit_parse_line(line, n, &r, &err), 0, "record 2 parses");
    is_int(r.seq, 2, "its seq");
    ok(r.at_ms >= AT_MS + 2000 && r.at_ms < AT_MS + 3000, "its time, to the ms");
    ok(json_is_object(r.details) && json_object_get(r.details, "gpus"), "its details");
    ok(memcmp(r.hash, h.hash, 32) == 0, "its hash is the head's");
    {
        struct sl_audit_rec r1;
        sl_audit_parse_line(log.data, (size_t)(nl - log.data), &r1, NULL);
        ok(memcmp(r.prev, r1.hash, 32) == 0, "its prev is record 1's hash");
        sl_audit_rec_fini(&r1);
    }
    sl_audit_rec_fini(&r);
    sl_audit_rec_fini(&r); /* idempotent */

    {
        char *c = strndup(line, n);
        char *hp = strstr(c, "\"hash\":\"") + 8;
        hp[0] = hp[0] == '0' ? '1' : '0';
        is_int(sl_audit_parse_line(c, n, &r, &err), -EBADMSG,
               "a record whose hash is wrong but well-formed is -EBADMSG");
        is_str(err.text, "hash does not match its contents", "and says so");
        ok(r.details == NULL, "a failed parse leaves nothing to free");
        hp[0] = 'A';
        is_int(sl_audit_parse_line(c, n, &r, &err), -EINVAL,
               "an uppercase hex digit is not canonical");
        free(c);
    }
    {
        static const char *const bad[] = {
            "{\"seq\": 1}", "[]", "not json", "{\"seq\":1,\"seq\":1}",
            "{\"seq\":1,\"time\":\"2026-12-03T10:11:12.345Z\",\"actor\":\"a\","
            "\"action\":\"b\",\"object\":\"\",\"outcome\":\"ok\",\"details\":{},"
            "\"hash\":\"0000000000000000000000000000000000000000000000000000000000000000\","
            "\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
        };
        for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
            is_int(sl_audit_parse_line(bad[i], strlen(bad[i]), &r, &err), -EINVAL,
                   "non-record text %zu is refused (%s)", i, err.text);
    }
    {
        /* The same record with a lowercase \u escape or a space is JSON for
         * the same values, but not the canonical text. */
        struct sl_audit_head h2 = {0, {0}};
        struct sl_audit_entry e = {AT_MS, "Jos\xc3\xa9", "a", "", "ok", NULL};
        struct sl_buf b;
        char *p;
        sl_buf_init(&b);
        sl_audit_line(&h2, &e, &b);
        p = strstr(b.data, "\\u00E9");
        p[4] = 'e';
        is_int(sl_audit_parse_line(b.data, b.len, &r, &err), -EINVAL,
               "a lowercase \\u escape is not canonical");
        is_str(err.text, "not in canonical form", "and says so");
        sl_buf_fini(&b);
    }
    sl_buf_fini(&log);
}

/* The index columns a store keeps beside each line are checked against it. */
static void test_index(void)
{
    struct sl_audit_head head = {0, {0}};
    struct sl_audit_entry e = {AT_MS, "alice", "job.submit", "job:7", "ok", NULL};
    struct sl_audit_index ix = {1, AT_MS, "alice", "job.submit", "job:7", "ok"};
    struct sl_error err = {"", ""};
    struct sl_buf line;
    json_t *d = json_object();
    static const char *const what[] = {"actor", "action", "object", "outcome"};

    e.details = d;
    sl_buf_init(&line);
    is_int(sl_audit_line(&head, &e, &line), 0, "a record is made");
    is_int(sl_audit_index_check(&ix, line.data, line.len, &err), 0,
           "columns that say what the line says pass");
    for (int k = 0; k < 4; k++) {
        struct sl_audit_index bad = ix;
        const char **col = k == 0 ? &bad.actor : k == 1 ? &bad.action
                                               : k == 2 ? &bad.object : &bad.outcome;
        *col = "mallory";
        err.text[0] = '\0';
        is_int(sl_audit_index_check(&bad, line.data, line.len, &err), -EBADMSG,
               "an edited %s column fails", what[k]);
        ok(strstr(err.text, what[k]) && strstr(err.text, "mallory") &&
               strstr(err.text, "record 1"),
           "naming the record, the column and its value: %s", err.text);
    }
    {
        struct sl_audit_index bad = ix;
        bad.at_ms++;
        is_int(sl_audit_index_check(&bad, line.data, line.len, &err), -EBADMSG,
               "an edited time column fails: %s", err.text);
        bad = ix;
        bad.seq = 2;
        is_int(sl_audit_index_check(&bad, line.data, line.len, &err), -EBADMSG,
               "an edited seq column fails: %s", err.text);
        bad = ix;
        bad.object = NULL;
        is_int(sl_audit_index_check(&bad, line.data, line.len, &err), -EBADMSG,
               "a NULL column fails");
    }
    line.data[10] ^= 1;
    ok(sl_audit_index_check(&ix, line.data, line.len, &err) < 0,
       "a bad line fails as the parser says: %s", err.text);
    sl_buf_fini(&line);
    json_decref(d);
}

static void test_verifier(void)
{
    struct sl_audit_head h = {0, {0}}, h5;
    struct sl_audit_verifier v, c;
    struct sl_buf log;

    sl_buf_init(&log);
    gen(&h, 5, 99, &log);
    h5 = h;
    is_int(verify(log.data, log.len, NULL, &v), 0, "a good log of 5 records passes");
    is_int(v.head.size, 5, "the verified head has size 5");
    ok(memcmp(v.head.hash, h5.hash, 32) == 0, "and the writer's head hash");
    sl_audit_verifier_fini(&v);
    is_int(verify(log.data, log.len, &h5, &v), 0, "it passes its own checkpoint");
    sl_audit_verifier_fini(&v);

    sl_audit_verifier_init(&v, &h5);
    for (size_t i = 0; i < log.len; i++)
        if (sl_audit_verifier_feed(&v, log.data + i, 1) < 0)
            break;
    is_int(sl_audit_verifier_finish(&v), 0, "fed one byte at a time, it passes");
    sl_audit_verifier_fini(&v);

    sl_audit_verifier_init(&v, &h5);
    sl_audit_verifier_feed(&v, log.data, 10);
    is_int(sl_audit_verifier_copy(&c, &v), 0, "a verifier mid-line is copied");
    sl_audit_verifier_feed(&v, "garbage\n", 8);
    is_int(sl_audit_verifier_feed(&c, log.data + 10, log.len - 10), 0,
           "the copy goes on with its own partial line");
    is_int(sl_audit_verifier_finish(&c), 0, "and passes");
    ok(v.rc < 0, "while the original saw garbage");
    sl_audit_verifier_fini(&v);
    sl_audit_verifier_fini(&c);

    is_int(verify("", 0, NULL, &v), 0, "an empty log passes with no checkpoint");
    sl_audit_verifier_fini(&v);
    {
        struct sl_audit_head zero = {0, {0}};
        is_int(verify("", 0, &zero, &v), 0, "and with a checkpoint of size 0");
        sl_audit_verifier_fini(&v);
    }
    ok(verify(log.data, log.len - 1, NULL, &v) < 0,
       "a last line without its newline fails, even with no checkpoint");
    is_int(v.bad_seq, 5, "naming record 5");
    diag("%s", v.why);
    sl_audit_verifier_fini(&v);
    ok(verify("\n", 1, NULL, &v) < 0 && v.bad_line == 1, "a blank line fails");
    sl_audit_verifier_fini(&v);
    {
        char *big = malloc(SL_AUDIT_LINE_MAX + 100);
        memset(big, '{', SL_AUDIT_LINE_MAX + 100);
        sl_audit_verifier_init(&v, NULL);
        ok(sl_audit_verifier_feed(&v, big, 1000) == 0 &&
               sl_audit_verifier_feed(&v, big, SL_AUDIT_LINE_MAX) < 0,
           "a line over 64 KiB fails before its newline arrives");
        ok(v.part_cap <= SL_AUDIT_LINE_MAX, "and is never buffered whole");
        ok(sl_audit_verifier_feed(&v, log.data, log.len) < 0 &&
               sl_audit_verifier_finish(&v) < 0, "the failure stays");
        sl_audit_verifier_fini(&v);
        free(big);
    }
    {
        /* Record 3's details rewritten and its hash recomputed: the chain
         * breaks at record 4. */
        struct sl_audit_head hh = {0, {0}};
        struct sl_buf alt;
        const char *l4;
        sl_buf_init(&alt);
        gen(&hh, 2, 99, &alt);
        gen(&hh, 3, 3, &alt);
        l4 = log.data;
        for (int k = 0; k < 3; k++)
            l4 = strchr(l4, '\n') + 1;
        sl_buf_add(&alt, l4, log.len - (size_t)(l4 - log.data));
        ok(verify(alt.data, alt.len, NULL, &v) < 0, "a record rewritten with a fresh hash fails");
        is_int(v.bad_seq, 4, "at the next record");
        is_str(v.why, "record 4: prev does not link to record 3", "which does not link");
        sl_audit_verifier_fini(&v);
        sl_buf_fini(&alt);
    }
    sl_buf_fini(&log);
}

static void test_keys(void)
{
    char path[PATH_MAX + 32], vk[SL_AUDIT_VKEY_MAX], vk2[SL_AUDIT_VKEY_MAX];
    struct sl_audit_key k, k2;
    struct sl_error err = {"", ""};
    struct stat st;
    char *text = NULL;
    size_t len = 0;

    snprintf(path, sizeof(path), "%s/audit.key", g_dir);
    is_int(sl_audit_key_load_or_create(path, "sluice.test/audit", &k, &err), 0,
           "a missing key file is created");
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "with mode 0600");
    ok(sl_read_file(path, 4096, &text, &len) == 0 &&
           strncmp(text, "PRIVATE+KEY+sluice.test/audit+", 30) == 0 &&
           len == 30 + 8 + 1 + 44 + 1 && text[len - 1] == '\n',
       "holding PRIVATE+KEY+name+id+base64 and a newline");
    ok(sl_audit_vkey(&k, vk, sizeof(vk)) == 30 - 12 + 8 + 1 + 44 &&
           strncmp(vk, "sluice.test/audit+", 18) == 0 && strncmp(vk + 18, text + 30, 9) == 0,
       "the verifier key has the same name and id");
    is_int(sl_audit_vkey(&k, vk2, 20), -ENOSPC, "the verifier key needs room");
    is_int(sl_audit_key_load_or_create(path, "sluice.test/audit", &k2, &err), 0,
           "the file loads again");
    ok(memcmp(k.pk, k2.pk, 32) == 0 && memcmp(k.sk, k2.sk, 64) == 0, "as the same key");
    sl_audit_key_fini(&k2);
    chmod(path, 0644);
    is_int(sl_audit_key_load_or_create(path, NULL, &k2, &err), 0,
           "a 0644 key file still loads (permissions are the operator's)");
    is_str(k2.name, "sluice.test/audit", "with no name asked for, the file's name");
    sl_audit_key_fini(&k2);
    is_int(sl_audit_key_load_or_create(path, "other", &k2, &err), -EINVAL,
           "a key file of another name is refused");
    ok(strstr(err.text, path) && strstr(err.text, "not 'other'"), "naming the file: %s", err.text);

    {
        struct {
            const char *what;
            size_t at;        /* byte to change, or SIZE_MAX: cut the newline */
            char to;
        } corrupt[] = {
            {"a changed id digit", 30, 'x'},
            {"a changed key byte", 50, 'Q'},
            {"no newline", SIZE_MAX, 0},
            {"a lowercase magic", 0, 'p'},
        };
        char bad[PATH_MAX + 48];
        snprintf(bad, sizeof(bad), "%s/bad.key", g_dir);
        for (size_t i = 0; i < SL_ARRAY_LEN(corrupt); i++) {
            char *c = malloc(len + 1);
            size_t n = len;
            memcpy(c, text, len);
            if (corrupt[i].at == SIZE_MAX)
                n--;
            else
                c[corrupt[i].at] = c[corrupt[i].at] == corrupt[i].to ? 'R' : corrupt[i].to;
            if (i == 0) /* a valid hex digit that is not the id */
                c[30] = text[30] == '0' ? '1' : '0';
            put(bad, c, n, 0600);
            err.text[0] = '\0';
            is_int(sl_audit_key_load_or_create(bad, NULL, &k2, &err), -EINVAL,
                   "a key file with %s is refused", corrupt[i].what);
            ok(strstr(err.text, bad) != NULL, "  naming the file: %s", err.text);
            free(c);
        }
        put(bad, text, len, 0600);
        {
            char *two = malloc(2 * len);
            memcpy(two, text, len);
            memcpy(two + len, text, len);
            put(bad, two, 2 * len, 0600);
            is_int(sl_audit_key_load_or_create(bad, NULL, &k2, &err), -EINVAL,
                   "a key file of two lines is refused");
            free(two);
        }
    }
    is_int(sl_audit_key_load_or_create(path, "bad name", &k2, &err), -EINVAL,
           "a key name with a space is refused");
    {
        char nodir[PATH_MAX + 32];
        snprintf(nodir, sizeof(nodir), "%s/nodir/x.key", g_dir);
        ok(sl_audit_key_load_or_create(nodir, "n", &k2, &err) < 0,
           "a key file in a missing directory fails: %s", err.text);
        snprintf(nodir, sizeof(nodir), "%s/new.key", g_dir);
        ok(sl_audit_key_load_or_create(nodir, "bad+name", &k2, &err) == -EINVAL &&
               access(nodir, F_OK) != 0, "no file is made for a bad key name");
    }
    ok(!sl_audit_key_name_ok("") && !sl_audit_key_name_ok("a b") &&
           !sl_audit_key_name_ok("a+b") && sl_audit_key_name_ok("a.b_c/d-E9"),
       "key names are 1..64 of [A-Za-z0-9._/-]");
    free(text);
    sl_audit_key_fini(&k);
}

static struct sl_audit_key g_key, g_other;
static char g_vkey[SL_AUDIT_VKEY_MAX], g_vother[SL_AUDIT_VKEY_MAX];

/* Verify text with g_vkey; returns the result, err says why. */
static int cv(const char *t, size_t n, struct sl_audit_head *h, struct sl_error *err)
{
    int64_t at = 0;
    return sl_audit_checkpoint_verify(t, n, g_vkey, h, &at, err);
}

static void test_checkpoints(void)
{
    struct sl_audit_head h = {1234, {0}}, got;
    struct sl_error err = {"", ""};
    struct sl_buf cp, other;
    int64_t at = 0;
    char *t;

    for (int i = 0; i < 32; i++)
        h.hash[i] = (unsigned char)(i * 37 + 1);
    sl_buf_init(&cp);
    is_int(sl_audit_checkpoint_sign(&g_key, "sluice.example/audit", &h, AT_MS, &cp), 0,
           "a checkpoint is signed");
    ok(strncmp(cp.data, "sluice.example/audit\n1234\n", 26) == 0 &&
           strstr(cp.data, "\ntime 2026-12-03T10:11:12.345Z\n\n\xE2\x80\x94 sluice.example/audit "),
       "origin, size, hash, time, a blank line and an em-dash signature line");
    is_int(sl_audit_checkpoint_verify(cp.data, cp.len, g_vkey, &got, &at, &err), 0,
           "it verifies with the verifier key");
    ok(got.size == 1234 && memcmp(got.hash, h.hash, 32) == 0, "giving the signed head");
    is_int(at, AT_MS, "and its time");
    {
        char origin[SL_AUDIT_ORIGIN_MAX + 1];
        ok(sl_audit_checkpoint_origin(cp.data, cp.len, origin, sizeof(origin)) == 0 &&
               strcmp(origin, "sluice.example/audit") == 0, "its origin reads back");
    }
    sl_buf_init(&other);
    is_int(sl_audit_checkpoint_sign(&g_key, "o", &h, -1, &other), 0,
           "a checkpoint without a time is signed");
    ok(sl_audit_checkpoint_verify(other.data, other.len, g_vkey, &got, &at, &err) == 0 &&
           at == -1, "it verifies, with no time (-1)");
    sl_buf_fini(&other);

    /* Tampering. Each case edits a copy of the text. */
    t = malloc(cp.len + 200);
#define TAMPER(expect, name, ...)                                              \
    do {                                                                       \
        size_t n_ = cp.len;                                                    \
        memcpy(t, cp.data, cp.len + 1);                                        \
        { __VA_ARGS__; }                                                       \
        err.text[0] = '\0';                                                    \
        is_int(cv(t, n_, &got, &err), expect, name);                           \
        if (err.text[0])                                                       \
            diag("  %s", err.text);                                            \
    } while (0)
    TAMPER(-EPERM, "a changed size is refused", t[21] = '2');
    TAMPER(-EPERM, "a changed hash is refused", {
        char *p = strchr(t + 21, '\n') + 1;
        p[1] = p[1] == 'A' ? 'B' : 'A';
    });
    TAMPER(-EPERM, "a changed signature byte is refused", {
        char *p = strrchr(t, ' ') + 1;
        unsigned char raw[68];
        size_t rl;
        sodium_base642bin(raw, sizeof(raw), p, strlen(p) - 1, NULL, &rl, NULL,
                          sodium_base64_VARIANT_ORIGINAL);
        raw[40] ^= 1;
        sodium_bin2base64(p, 100, raw, rl, sodium_base64_VARIANT_ORIGINAL);
        n_ = (size_t)(p - t) + strlen(p);
        t[n_++] = '\n';
        t[n_] = 0;
    });
    ok(strstr(err.text, "does not verify with key sluice.example/audit") != NULL,
       "  saying the signature does not verify with the key");
    TAMPER(-EINVAL, "a missing blank line is refused", {
        char *p = strstr(t, "\n\n");
        memmove(p + 1, p + 2, n_ - (size_t)(p + 2 - t) + 1);
        n_--;
    });
    TAMPER(-EINVAL, "a size with a leading zero is refused", {
        memmove(t + 22, t + 21, n_ - 21 + 1);
        t[21] = '0';
        n_++;
    });
    ok(strstr(err.text, "line 2 is not a size") != NULL, "  saying line 2 is not a size");
    TAMPER(-EINVAL, "an unknown extension line is refused", {
        char *p = strstr(t, "\n\n") + 1;
        memmove(p + 4, p, n_ - (size_t)(p - t) + 1);
        memcpy(p, "x y\n", 4);
        n_ += 4;
    });
    TAMPER(-EINVAL, "a missing final newline is refused", n_--);
    TAMPER(-EINVAL, "a NUL byte is refused", t[5] = '\0');
    TAMPER(-EINVAL, "a hash that is not 32 bytes is refused", {
        char *p = strchr(t + 21, '\n') + 1;
        memmove(p, p + 4, n_ - (size_t)(p + 4 - t) + 1);
        n_ -= 4;
    });
    TAMPER(-EINVAL, "an origin with a trailing space is refused", {
        memmove(t + 21, t + 20, n_ - 20 + 1);
        t[20] = ' ';
        n_++;
    });
    TAMPER(0, "a signature by another key, added after ours, is ignored", {
        n_ += (size_t)snprintf(t + n_, 200, "\xE2\x80\x94 witness AAAAAQID\n");
    });
    {
        char *big = malloc(SL_AUDIT_CHECKPOINT_MAX + 2);
        memset(big, 'a', SL_AUDIT_CHECKPOINT_MAX + 1);
        memcpy(big, cp.data, cp.len);
        is_int(cv(big, SL_AUDIT_CHECKPOINT_MAX + 1, &got, &err), -EFBIG,
               "a checkpoint over 8 KiB is refused");
        free(big);
    }
    /* The same head signed by another key. */
    sl_buf_init(&other);
    sl_audit_checkpoint_sign(&g_other, "sluice.example/audit", &h, AT_MS, &other);
    is_int(cv(other.data, other.len, &got, &err), -EPERM,
           "a checkpoint signed by another key is refused");
    is_str(err.text, "checkpoint: no signature by key sluice.example/audit",
           "  saying there is no signature by our key");
    is_int(sl_audit_checkpoint_verify(other.data, other.len, g_vother, &got, NULL, &err), 0,
           "and verifies with that key's verifier key");
    sl_buf_fini(&other);
    {
        struct sl_audit_head zero = {0, {1}};
        sl_buf_init(&other);
        is_int(sl_audit_checkpoint_sign(&g_key, "o", &zero, -1, &other), -EINVAL,
               "an empty head with a non-zero hash is not signed");
        is_int(sl_audit_checkpoint_sign(&g_key, " o", &h, -1, &other), -EINVAL,
               "an origin with a leading space is not signed");
        is_int(other.len, 0, "and nothing is written");
        sl_buf_fini(&other);
    }
    {
        char vk[SL_AUDIT_VKEY_MAX];
        snprintf(vk, sizeof(vk), "%s", g_vkey);
        vk[strlen(vk) - 3] ^= 1;
        ok(sl_audit_checkpoint_verify(cp.data, cp.len, vk, &got, NULL, &err) == -EINVAL,
           "a damaged verifier key is refused: %s", err.text);
    }
#undef TAMPER
    free(t);
    sl_buf_fini(&cp);
}

#define CHAIN 1200

static void report(const struct battery_class *c)
{
    diag("%s: %lld tried, %lld detected", c->name, (long long)c->tried,
         (long long)c->detected);
    if (c->missed[0])
        diag("  first undetected: %s", c->missed);
    if (c->strayed[0])
        diag("  first misplaced: %s", c->strayed);
}

static void test_battery(void)
{
    struct sl_audit_head h = {0, {0}}, ckpt, old;
    struct sl_error err = {"", ""};
    struct sl_buf log, cp, cp800;
    struct battery b;
    struct battery_class c[5];
    struct sl_audit_verifier v;
    size_t len800;
    double t0 = (double)sl_mono_ns();

    sl_buf_init(&log);
    sl_buf_init(&cp);
    sl_buf_init(&cp800);
    gen(&h, 800, CHAIN + 1, &log);
    len800 = log.len;
    sl_audit_checkpoint_sign(&g_key, "sluice.example/audit", &h, AT_MS, &cp800);
    gen(&h, CHAIN, CHAIN + 1, &log);
    sl_audit_checkpoint_sign(&g_key, "sluice.example/audit", &h, AT_MS, &cp);
    is_int(sl_audit_checkpoint_verify(cp.data, cp.len, g_vkey, &ckpt, NULL, &err), 0,
           "the final checkpoint of a %d-record chain verifies", CHAIN);
    is_int(sl_audit_checkpoint_verify(cp800.data, cp800.len, g_vkey, &old, NULL, &err), 0,
           "and so does the checkpoint taken at 800");

    is_int(battery_open(&b, log.data, log.len, &ckpt), 0,
           "the untouched chain (%zu bytes) passes its checkpoint", log.len);
    if (b.why[0])
        diag("%s", b.why);
    memset(c, 0, sizeof(c));
    battery_bytes(&b, &c[0]);
    battery_deletions(&b, &c[1]);
    battery_swaps(&b, &c[2]);
    battery_truncations(&b, &c[3]);
    battery_insertions(&b, &c[4]);
    for (int i = 0; i < 5; i++)
        report(&c[i]);
    diag("2 x %zu single-byte changes: %s", log.len,
         c[0].detected == c[0].tried ? "all detected" : "SOME PASSED");
    is_int(c[0].tried, 2 * (int64_t)log.len, "(a) every byte is changed both ways");
    is_int(c[0].detected, c[0].tried, "(a) every single-byte change is detected");
    is_int(c[0].misplaced, 0, "(a) each names the changed record, the next, or the checkpoint");
    is_int(c[1].tried, CHAIN, "(b) every record is deleted in turn");
    is_int(c[1].detected, c[1].tried, "(b) every deletion is detected");
    is_int(c[1].misplaced, 0, "(b) each at the deleted record's place");
    is_int(c[2].tried, CHAIN - 1, "(c) every adjacent pair is swapped");
    is_int(c[2].detected, c[2].tried, "(c) every swap is detected");
    is_int(c[2].misplaced, 0, "(c) each at the first of the pair");
    is_int(c[3].tried, CHAIN, "(d) the log is cut at every record, 0..%d", CHAIN - 1);
    is_int(c[3].detected, c[3].tried, "(d) every truncation is detected with the checkpoint");
    is_int(c[3].passed_bare, CHAIN,
           "(d) and every one passes with no checkpoint: the reason to keep checkpoints");
    is_int(c[4].tried, 2 * (CHAIN + 1), "(e) a duplicate is inserted at every position");
    is_int(c[4].detected, c[4].tried, "(e) every insertion is detected");
    is_int(c[4].misplaced, 0, "(e) each at the inserted line or the next");
    battery_close(&b);

    /* (f) Rollback. The auditor holds the checkpoint at 800; the operator
     * rewrites records 700 on and signs a fresh checkpoint with the key. */
    {
        struct sl_audit_head r = {0, {0}}, fresh;
        struct sl_buf re, cpre;
        sl_buf_init(&re);
        sl_buf_init(&cpre);
        gen(&r, CHAIN, 700, &re);
        sl_audit_checkpoint_sign(&g_key, "sluice.example/audit", &r, AT_MS + 1, &cpre);
        is_int(sl_audit_checkpoint_verify(cpre.data, cpre.len, g_vkey, &fresh, NULL, &err), 0,
               "(f) the rebuilt log's fresh checkpoint verifies: the key is the operator's");
        is_int(verify(re.data, re.len, &fresh, &v), 0,
               "(f) and the rebuilt log passes it");
        sl_audit_verifier_fini(&v);
        ok(verify(re.data, re.len, &old, &v) < 0,
           "(f) the rebuilt log fails the auditor's checkpoint at 800");
        ok(v.bad_seq == 800 && v.bad_ckpt, "(f) naming record 800");
        is_str(v.why, "record 800: hash differs from the checkpoint's head: the log was rewritten",
               "(f) as rewritten");
        sl_audit_verifier_fini(&v);
        {
            const char *p = re.data;
            for (int k = 0; k < 750; k++)
                p = strchr(p, '\n') + 1;
            ok(verify(re.data, (size_t)(p - re.data), &old, &v) < 0 && v.bad_ckpt,
               "(f) rolled back to 750 records, it fails too");
            is_str(v.why, "the log has 750 records; the checkpoint signs 800: truncated or "
                   "rolled back", "(f) as truncated or rolled back");
            sl_audit_verifier_fini(&v);
        }
        sl_buf_fini(&re);
        sl_buf_fini(&cpre);
    }
    is_int(verify(log.data, len800, &old, &v), 0, "(f) the log as it was at 800 passes");
    sl_audit_verifier_fini(&v);
    is_int(verify(log.data, log.len, &old, &v), 0,
           "(f) the honest extension to %d records passes the old checkpoint", CHAIN);
    sl_audit_verifier_fini(&v);
    diag("battery: %.1f s", ((double)sl_mono_ns() - t0) / 1e9);
    sl_buf_fini(&log);
    sl_buf_fini(&cp);
    sl_buf_fini(&cp800);
}

int main(void)
{
    unsigned char seed[32];
    const char *tmp = getenv("TMPDIR");

    snprintf(g_dir, sizeof(g_dir), "%s/test_audit.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    memset(seed, 7, sizeof(seed));
    sl_audit_key_from_seed("sluice.example/audit", seed, &g_key);
    memset(seed, 9, sizeof(seed));
    sl_audit_key_from_seed("sluice.example/audit", seed, &g_other);
    sl_audit_vkey(&g_key, g_vkey, sizeof(g_vkey));
    sl_audit_vkey(&g_other, g_vother, sizeof(g_vother));

    test_golden();
    test_escaping();
    test_refusals();
    test_parse();
    test_index();
    test_verifier();
    test_keys();
    test_checkpoints();
    test_battery();

    sl_audit_key_fini(&g_key);
    sl_audit_key_fini(&g_other);
    {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "%s/audit.key", g_dir);
        unlink(cmd);
        snprintf(cmd, sizeof(cmd), "%s/bad.key", g_dir);
        unlink(cmd);
        rmdir(g_dir);
    }
    return done_testing();
}
