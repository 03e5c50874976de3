/*
 * test_http.c - unit tests of the request head parser (src/http/parse.c):
 * every refusal rule with its status, the accepted forms, incomplete heads,
 * the size caps, what a parsed head points at, and the query string
 * decoder, and the If-None-Match matcher. The file under test is
 * compiled in directly (the unit binaries link only libsluice-core.a).
 */
#include "../../src/http/parse.c"
#include "../../src/util/util.h"

#include <stdlib.h>

#include "../tap.h"

#define HOST "Host: x\r\n"

static int parse(const char *raw, size_t len, struct sl_http_head *h,
                 struct sl_http_refusal *why)
{
    /* A copy of exactly 'len' bytes, so that ASan sees any read past it. */
    char *buf = malloc(len ? len : 1);
    int rc;

    memcpy(buf, raw, len);
    rc = sl_http_parse_head(buf, len, h, why);
    free(buf);
    return rc;
}

/* The status a head gets: 0 accepted, -1 incomplete, else the refusal. */
static int status_of(const char *raw, size_t len)
{
    struct sl_http_head h;
    struct sl_http_refusal why;
    int rc = parse(raw, len, &h, &why);

    return rc == 0 ? 0 : rc == -EAGAIN ? -1 : why.status;
}

#define S(lit) lit, sizeof(lit) - 1

static const struct {
    const char *raw;
    size_t len;
    int status;
    const char *what;
} cases[] = {
    /* request head, its length, the status it gets, what the case shows */
    {S("GET / HTTP/1.1\r\n" HOST "\r\n"), 0, "a minimal HTTP/1.1 request is accepted"},
    {S("GET / HTTP/1.0\r\n\r\n"), 0, "an HTTP/1.0 request without Host is accepted"},
    {S("\r\nGET / HTTP/1.1\r\n" HOST "\r\n"), 0, "one empty line before the request line is ignored"},
    {S("\r\n\r\nGET / HTTP/1.1\r\n" HOST "\r\n"), 400, "a second empty line before the request line is refused"},
    {S("GET / HTTP/1.1\r\nHost:\r\n\r\n"), 0, "an empty Host is accepted"},
    {S("GET / HTTP/1.1\r\nHost: [::1]:8470\r\n\r\n"), 0, "an IPv6 literal Host is accepted"},
    {S("GET /a?b=%2F&c=d+e HTTP/1.1\r\n" HOST "\r\n"), 0, "a target with a query and escapes is accepted"},
    {S("GET /a|b{c} HTTP/1.1\r\n" HOST "\r\n"), 0, "printable characters outside RFC 3986 are accepted in the target"},
    {S("GET / HTTP/1.1\r\n" HOST "User-Agent: caf\xc3\xa9\r\n\r\n"), 0, "obs-text in a field value is accepted"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A:\t a\tb \t\r\n\r\n"), 0, "HTAB and SP inside and around a value are accepted"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 0005\r\n\r\n"), 0, "one Content-Length with leading zeros is accepted"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 1048576\r\n\r\n"), 0, "a Content-Length of exactly 1 MiB is accepted"},
    {S("M-SEARCH.1 / HTTP/1.1\r\n" HOST "\r\n"), 0, "any token is a method"},

    {S("GET / HTTP/1.1\r\nHost: x\r\n"), -1, "a head without its empty line is incomplete"},
    {S("GET / HTTP/1.1\r"), -1, "a CR at the end of the bytes so far is incomplete"},
    {S(""), -1, "no bytes is incomplete"},

    {S("GET /\rx HTTP/1.1\r\n" HOST "\r\n"), 400, "a bare CR in the request line is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A: 1\r2\r\n\r\n"), 400, "a bare CR in a field value is refused"},
    {S("GET / HTTP/1.1\n" HOST "\r\n"), 400, "a bare LF ending the request line is refused"},
    {S("GET / HTTP/1.1\r\nHost: x\n\r\n"), 400, "a bare LF ending a field line is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "\n"), 400, "a bare LF as the empty line is refused"},
    {S("GET /\0 HTTP/1.1\r\n" HOST "\r\n"), 400, "a NUL in the target is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A: \0\r\n\r\n"), 400, "a NUL in a field value is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X\0A: 1\r\n\r\n"), 400, "a NUL in a field name is refused"},
    {S("G\0T / HTTP/1.1\r\n" HOST "\r\n"), 400, "a NUL in the method is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A: a\x01" "b\r\n\r\n"), 400, "a control character in a value is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A: a\x7f\r\n\r\n"), 400, "DEL in a value is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A: \x1b[1m\r\n\r\n"), 400, "an escape sequence in a value is refused"},
    {S("GET /\x01 HTTP/1.1\r\n" HOST "\r\n"), 400, "a control character in the target is refused"},
    {S("GET /\x80 HTTP/1.1\r\n" HOST "\r\n"), 400, "a byte above 0x7f in the target is refused"},
    {S("GET /#a HTTP/1.1\r\n" HOST "\r\n"), 400, "a fragment in the target is refused"},
    {S("GET /%4 HTTP/1.1\r\n" HOST "\r\n"), 400, "a percent escape cut by the space is refused"},
    {S("GET /%zz HTTP/1.1\r\n" HOST "\r\n"), 400, "a percent escape of non-hex digits is refused"},
    {S("GET a HTTP/1.1\r\n" HOST "\r\n"), 400, "a target that does not start with '/' is refused"},
    {S("GET http://x/ HTTP/1.1\r\n" HOST "\r\n"), 400, "an absolute-form target is refused"},
    {S("CONNECT x:443 HTTP/1.1\r\n" HOST "\r\n"), 400, "an authority-form target is refused"},
    {S("OPTIONS * HTTP/1.1\r\n" HOST "\r\n"), 400, "an asterisk-form target is refused"},
    {S("GET  / HTTP/1.1\r\n" HOST "\r\n"), 400, "two spaces after the method are refused"},
    {S("GET /  HTTP/1.1\r\n" HOST "\r\n"), 400, "two spaces before the version are refused"},
    {S("GET / HTTP/1.1 \r\n" HOST "\r\n"), 400, "a space after the version is refused"},
    {S(" GET / HTTP/1.1\r\n" HOST "\r\n"), 400, "a space before the method is refused"},
    {S("GET\t/ HTTP/1.1\r\n" HOST "\r\n"), 400, "a tab between the parts is refused"},
    {S("GET /\r\n\r\n"), 400, "a request line without a version is refused"},
    {S("GET\r\n\r\n"), 400, "a request line of a method alone is refused"},
    {S("\r\n"), -1, "a lone empty line is incomplete"},
    {S("G(T / HTTP/1.1\r\n" HOST "\r\n"), 400, "a method that is not a token is refused"},
    {S("ABCDEFGHIJKLMNOP / HTTP/1.1\r\n" HOST "\r\n"), 501, "a method of 16 bytes is not implemented"},
    {S("ABCDEFGHIJKLMNO / HTTP/1.1\r\n" HOST "\r\n"), 0, "a method of 15 bytes is accepted"},
    {S("GET / HTTP/1.2\r\n" HOST "\r\n"), 400, "HTTP/1.2 is refused"},
    {S("GET / HTTP/2.0\r\n" HOST "\r\n"), 400, "HTTP/2.0 is refused"},
    {S("GET / HTTP/0.9\r\n" HOST "\r\n"), 400, "HTTP/0.9 is refused"},
    {S("GET / HTTP/1.10\r\n" HOST "\r\n"), 400, "HTTP/1.10 is refused"},
    {S("GET / HTTP/1\r\n" HOST "\r\n"), 400, "HTTP/1 is refused"},
    {S("GET / http/1.1\r\n" HOST "\r\n"), 400, "a lower-case version is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A: 1\r\n b\r\n\r\n"), 400, "obs-fold with a space is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A: 1\r\n\tb\r\n\r\n"), 400, "obs-fold with a tab is refused"},
    {S("GET / HTTP/1.1\r\n Host: x\r\n\r\n"), 400, "whitespace before the first field is refused"},
    {S("GET / HTTP/1.1\r\nHost : x\r\n\r\n"), 400, "a space before the colon is refused"},
    {S("GET / HTTP/1.1\r\nHost\t: x\r\n\r\n"), 400, "a tab before the colon is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X[A]: 1\r\n\r\n"), 400, "brackets in a field name are refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X A: 1\r\n\r\n"), 400, "a space in a field name is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X\xc3\xa9: 1\r\n\r\n"), 400, "a non-ASCII field name is refused"},
    {S("GET / HTTP/1.1\r\n" HOST ": 1\r\n\r\n"), 400, "a field without a name is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "X-A\r\n\r\n"), 400, "a field line without a colon is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 5\r\nContent-Length: 5\r\n\r\n"), 400, "two equal Content-Length fields are refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 5\r\ncontent-length: 05\r\n\r\n"), 400, "two Content-Length fields differing in form are refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 5, 5\r\n\r\n"), 400, "a Content-Length list is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: +5\r\n\r\n"), 400, "a signed Content-Length is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: -1\r\n\r\n"), 400, "a negative Content-Length is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 0x5\r\n\r\n"), 400, "a hexadecimal Content-Length is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 5 5\r\n\r\n"), 400, "a Content-Length with inner space is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length:\r\n\r\n"), 400, "an empty Content-Length is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 1048577\r\n\r\n"), 413, "a Content-Length over 1 MiB is too large"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 99999999999999999999999999\r\n\r\n"), 413, "a Content-Length past int64 is too large, not wrapped"},
    {S("POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n"), 411, "Transfer-Encoding alone needs a length"},
    {S("POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"), 400, "Transfer-Encoding with Content-Length is refused"},
    {S("POST / HTTP/1.1\r\n" HOST "Content-Length: 5\r\nTransfer-Encoding: identity\r\n\r\n"), 400, "Content-Length then Transfer-Encoding is refused"},
    {S("GET / HTTP/1.1\r\n\r\n"), 400, "an HTTP/1.1 request without Host is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "Host: y\r\n\r\n"), 400, "two Host fields are refused"},
    {S("GET / HTTP/1.0\r\n" HOST "HOST: x\r\n\r\n"), 400, "two Host fields are refused on HTTP/1.0 too"},
    {S("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), 400, "a Host with a slash is refused"},
    {S("GET / HTTP/1.1\r\nHost: a@b\r\n\r\n"), 400, "a Host with userinfo is refused"},
    {S("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), 400, "a Host with a space is refused"},
    {S("GET / HTTP/1.1\r\n" HOST "Authorization: a\r\nauthorization: b\r\n\r\n"), 400, "two Authorization fields are refused"},
    {S("GET / HTTP/1.1\r\n" HOST "Content-Type: a/b\r\nContent-Type: a/b\r\n\r\n"), 400, "two Content-Type fields are refused"},
};

static void test_table(void)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++)
        is_int(status_of(cases[i].raw, cases[i].len), cases[i].status, "%s",
               cases[i].what);
}

static void test_fields(void)
{
    static const char raw[] = "POST /v1/jobs?dry_run=true HTTP/1.1\r\n"
                              "Host: x\r\n"
                              "Content-Type:application/json \r\n"
                              "X-Empty:\r\n"
                              "Content-Length: 2\r\n"
                              "\r\n"
                              "{}GET";
    struct sl_http_head h;
    struct sl_http_refusal why;
    int rc = parse(raw, sizeof(raw) - 1, &h, &why);

    is_int(rc, 0, "a head with a body behind it is parsed");
    is_int(h.head_len, sizeof(raw) - 1 - 5, "head_len ends at the empty line, before the body");
    ok(h.method.len == 4 && memcmp(raw + h.method.off, "POST", 4) == 0,
       "the method span is the method");
    ok(h.target.len == 21 && memcmp(raw + h.target.off, "/v1/jobs?dry_run=true", 21) == 0,
       "the target span holds the path and the query");
    is_int(h.minor, 1, "the version is HTTP/1.1");
    is_int(h.nfields, 4, "every field line is counted");
    ok(h.value[1].len == 16 && memcmp(raw + h.value[1].off, "application/json", 16) == 0,
       "a value is given without its OWS");
    is_int(h.value[2].len, 0, "an empty value is an empty span");
    ok(raw[h.name[2].off + h.name[2].len] == ':', "a name span ends at its colon");
    is_int(h.content_length, 2, "the Content-Length is read");
    ok(h.keep_alive, "HTTP/1.1 keeps the connection by default");
    ok(!h.expect_continue, "no Expect, no 100 Continue");
}

static void test_connection(void)
{
    struct sl_http_head h;
    struct sl_http_refusal why;

    ok(parse(S("GET / HTTP/1.1\r\n" HOST "Connection: Upgrade, close\r\n\r\n"), &h, &why) == 0 &&
           !h.keep_alive,
       "Connection: close in a list closes an HTTP/1.1 connection");
    ok(parse(S("GET / HTTP/1.0\r\n\r\n"), &h, &why) == 0 && !h.keep_alive,
       "HTTP/1.0 closes by default");
    ok(parse(S("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"), &h, &why) == 0 &&
           h.keep_alive,
       "HTTP/1.0 with keep-alive keeps the connection");
    ok(parse(S("GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n"), &h,
             &why) == 0 &&
           !h.keep_alive,
       "close wins over keep-alive across two Connection fields");
    ok(parse(S("GET / HTTP/1.1\r\n" HOST "Connection: closed\r\n\r\n"), &h, &why) == 0 &&
           h.keep_alive,
       "a token that only starts with close is not close");
    ok(parse(S("POST / HTTP/1.1\r\n" HOST "Expect: 100-Continue\r\n\r\n"), &h, &why) == 0 &&
           h.expect_continue,
       "Expect: 100-continue is seen, case-insensitively");
    ok(parse(S("POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n"), &h, &why) == 0 &&
           !h.expect_continue,
       "an HTTP/1.0 request's 100-continue is ignored");
    ok(parse(S("GET / HTTP/1.1\r\n" HOST "\r\n"), &h, &why) == 0 && h.content_length == -1,
       "no Content-Length reads as -1");
}

static void test_incremental(void)
{
    static const char raw[] = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n"
                              "Content-Length: 2\r\nConnection: keep-alive\r\n\r\n";
    size_t n = sizeof(raw) - 1, bad = 0;

    for (size_t i = 0; i < n; i++)
        if (status_of(raw, i) != -1)
            bad++;
    is_int(bad, 0, "every strict prefix of a valid head is incomplete, never refused");
    is_int(status_of(raw, n), 0, "and the whole head is accepted");
    is_int(status_of(S("GET /\x01")), 400,
           "a fault in a request line not yet complete is refused at once");
    is_int(status_of(S("GET / HTTP/1.1\r\nX A")), -1,
           "a field line is judged once its CRLF has come");
    is_int(status_of(S("GET / HTTP/1.1\r\nX A: 1\r\nHo")), 400,
           "a complete bad field line is refused before the head ends");
    is_int(status_of(S("GET / HTTP/1.1\r\nHost: x\r\nX: a\nb")), 400,
           "a bare LF is refused before the line it ends is complete");
}

static void test_caps(void)
{
    char *big = malloc(SL_HTTP_MAX_HEAD + 64);
    struct sl_http_head h;
    struct sl_http_refusal why;
    size_t n;
    char *fields = malloc(8192);
    size_t o = 0;

    /* A head of exactly SL_HTTP_MAX_HEAD bytes: padding in one field. */
    n = (size_t)snprintf(big, SL_HTTP_MAX_HEAD + 64, "GET / HTTP/1.1\r\nHost: x\r\nX: ");
    memset(big + n, 'a', SL_HTTP_MAX_HEAD - n - 4);
    memcpy(big + SL_HTTP_MAX_HEAD - 4, "\r\n\r\n", 4);
    is_int(status_of(big, SL_HTTP_MAX_HEAD), 0, "a head of exactly 8192 bytes is accepted");
    memmove(big + n + 1, big + n, SL_HTTP_MAX_HEAD - n);
    big[n] = 'a';
    is_int(status_of(big, SL_HTTP_MAX_HEAD + 1), 431, "a head of 8193 bytes is too large");
    is_int(status_of(big, SL_HTTP_MAX_HEAD - 1), -1,
           "8191 bytes of a longer head are still incomplete");
    memset(big, 'a', SL_HTTP_MAX_HEAD + 64);
    memcpy(big, "GET /", 5);
    is_int(status_of(big, SL_HTTP_MAX_HEAD + 64), 431,
           "a request line that never ends is too large at the cap");

    n = (size_t)snprintf(big, SL_HTTP_MAX_HEAD, "GET /");
    memset(big + n, 'a', 1023 - 1);
    n += 1023 - 1;
    n += (size_t)snprintf(big + n, SL_HTTP_MAX_HEAD - n, " HTTP/1.1\r\n" HOST "\r\n");
    is_int(status_of(big, n), 0, "a target of 1023 bytes is accepted");
    n = (size_t)snprintf(big, SL_HTTP_MAX_HEAD, "GET /");
    memset(big + n, 'a', 1023);
    n += 1023;
    n += (size_t)snprintf(big + n, SL_HTTP_MAX_HEAD - n, " HTTP/1.1\r\n" HOST "\r\n");
    ok(parse(big, n, &h, &why) == -EPROTO && why.status == 414,
       "a target of 1024 bytes is 414 URI Too Long");

    o = (size_t)snprintf(fields, 8192, "GET / HTTP/1.1\r\n" HOST);
    for (int i = 1; i < SL_HTTP_MAX_FIELDS; i++)
        o += (size_t)snprintf(fields + o, 8192 - o, "X-%d: 1\r\n", i);
    o += (size_t)snprintf(fields + o, 8192 - o, "\r\n");
    ok(parse(fields, o, &h, &why) == 0 && h.nfields == SL_HTTP_MAX_FIELDS,
       "64 fields are accepted");
    o -= 2;
    o += (size_t)snprintf(fields + o, 8192 - o, "X-65: 1\r\n\r\n");
    is_int(status_of(fields, o), 431, "a 65th field is 431");
    free(fields);
    free(big);
}

static void test_messages(void)
{
    struct sl_http_head h;
    struct sl_http_refusal why;
    bool printable = true;

    parse(S("GET / HTTP/\xff\x01\r\n" HOST "\r\n"), &h, &why);
    for (const char *p = why.text; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            printable = false;
    ok(printable && why.text[0], "a message quoting the request is printable ASCII: %s",
       why.text);
    parse(S("POST / HTTP/1.1\r\n" HOST "Content-Length: 5\r\nContent-Length: 5\r\n\r\n"), &h,
          &why);
    ok(strstr(why.text, "Content-Length") != NULL, "a duplicate's message names the field: %s",
       why.text);
    parse(S("GET / HTTP/1.1\r\n" HOST "X-A: 1\r\n b\r\n\r\n"), &h, &why);
    ok(strstr(why.text, "line 4") != NULL, "a field line fault names its line: %s", why.text);
}

/* Decode 'raw' into a buffer of exactly strlen + 1 bytes (ASan sees an
 * overrun); returns the count or the refusal's status negated, and the
 * parameters joined as "name=value;..." into 'out'. */
static int query(const char *raw, char *out, size_t outsz, struct sl_http_refusal *why)
{
    size_t len = strlen(raw);
    char *q = malloc(len + 1);
    struct sl_http_param p[SL_HTTP_MAX_PARAMS];
    int n;

    memcpy(q, raw, len + 1);
    n = sl_http_parse_query(q, len, p, SL_HTTP_MAX_PARAMS, why);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t o = strlen(out);
        snprintf(out + o, outsz - o, "%s=%s;", p[i].name, p[i].value);
    }
    free(q);
    return n < 0 ? -why->status : n;
}

static void test_query(void)
{
    struct sl_http_refusal why;
    char got[512], many[512] = "";
    static const struct {
        const char *raw, *want;
        int n;
    } good[] = {
        /* raw, parameters joined, count */
        {"", "", 0},
        {"state=Running", "state=Running;", 1},
        {"a=1&b=2", "a=1;b=2;", 2},
        {"a&b", "a=;b=;", 2},
        {"a=&b", "a=;b=;", 2},
        {"a=1&&b=2&", "a=1;b=2;", 2},
        {"&", "", 0},
        {"team=ml+research", "team=ml research;", 1},
        {"t%65am=%41%62c", "team=Abc;", 1},
        {"x=%2B%26%3D", "x=+&=;", 1},
        {"x=a=b", "x=a=b;", 1},
        {"x=%c3%a9", "x=\xc3\xa9;", 1},
        {"state=Running,Pending&limit=5&after=10",
         "state=Running,Pending;limit=5;after=10;", 3},
    };
    static const struct {
        const char *raw, *says;
    } bad[] = {
        /* raw, what the message must hold */
        {"user=alice%00bob", "'user': a control character"},
        {"user=a%0Ab", "'user': a control character"},
        {"user=a%7f", "control character"},
        {"us%09er=a", "control character"},
        {"x=%", "'x': '%' without two hex digits"},
        {"x=%4", "two hex digits"},
        {"x=%zz", "two hex digits"},
        {"%4=1", "two hex digits"},
        {"=1", "empty name"},
        {"team=a&team=b", "'team' given twice"},
        {"team=a&t%65am=a", "'team' given twice"},
        {"a&a", "'a' given twice"},
    };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int n = query(good[i].raw, got, sizeof(got), &why);
        ok(n == good[i].n && strcmp(got, good[i].want) == 0, "query '%s' is %s (got %d: %s)",
           good[i].raw, good[i].want, n, got);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = query(bad[i].raw, got, sizeof(got), &why);
        ok(n == -400 && strstr(why.text, bad[i].says), "query '%s' is refused: %s",
           bad[i].raw, n == -400 ? why.text : "(accepted)");
    }
    for (int i = 0; i < SL_HTTP_MAX_PARAMS; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "p%d=%d&", i, i);
    ok(query(many, got, sizeof(got), &why) == SL_HTTP_MAX_PARAMS, "%d parameters are taken",
       SL_HTTP_MAX_PARAMS);
    strcat(many, "one=more");
    ok(query(many, got, sizeof(got), &why) == -400 && strstr(why.text, "more than"),
       "one more is refused: %s", why.text);
}

static void test_etag_match(void)
{
    static const struct {
        const char *value;
        int want;
    } inm[] = {
        /* If-None-Match value, against the tag "abc": 2 any, 1 match,
         * 0 none, -1 malformed (ignored) */
        {"\"abc\"", 1},
        {"W/\"abc\"", 1},
        {"  \"abc\" \t", 1},
        {"\"x\", \"abc\"", 1},
        {"\"x\",W/\"abc\",\"y\"", 1},
        {", ,\"abc\",", 1},
        {"*", 2},
        {" * ", 2},
        {"\"abd\"", 0},
        {"\"ABC\"", 0},
        {"\"abc \"", -1},
        {"\"ab\"", 0},
        {"\"abcd\"", 0},
        {"\"\"", 0},
        {"", 0},
        {" , ", 0},
        {"w/\"abc\"", -1},
        {"abc", -1},
        {"\"abc", -1},
        {"\"abc\" \"x\"", -1},
        {"\"abc\";q=1", -1},
        {"*, \"abc\"", -1},
        {"\"abc\", *", -1},
        {"**", -1},
        {"\"a\\\"c\"", -1},
        {"\"abc\x7f\"", -1},
        {"\"\xe9\"", 0},
    };

    for (size_t i = 0; i < sizeof(inm) / sizeof(inm[0]); i++) {
        int rc = sl_http_etag_match(inm[i].value, "abc");
        int got = rc == -EPROTO ? -1 : rc;
        ok(got == inm[i].want, "If-None-Match '%s' against \"abc\" gives %d (got %d)",
           inm[i].value, inm[i].want, got);
    }
}

int main(void)
{
    test_table();
    test_fields();
    test_connection();
    test_incremental();
    test_caps();
    test_messages();
    test_query();
    test_etag_match();
    return done_testing();
}
