/*
 * test_client.c - unit tests of the CLI client's answer parser
 * (src/client/client.c, through sl_client_parse_answer): status lines,
 * headers, Content-Length, chunked and read-to-close bodies, interim
 * answers, what makes a connection reusable, the error object, and that an
 * answer means the same whatever pieces it comes in. No network: the file
 * under test is compiled in directly (the unit binaries link only
 * libsluice-core.a).
 */
#include "../../src/client/client.c"

#include "../tap.h"

#define S(lit) lit, sizeof(lit) - 1
#define H "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"

/* Parse 'raw' whole and one byte at a time: the rc (and, when they differ,
 * INT_MIN), with the whole-buffer answer in *r. */
static int parse2(const char *raw, size_t len, const char *method, struct sl_response *r,
                  bool *keep)
{
    struct sl_response one;
    bool keep1;
    int rc = sl_client_parse_answer(raw, len, 0, method, r, keep);
    int rc1 = sl_client_parse_answer(raw, len, 1, method, &one, &keep1);
    bool same = rc == rc1 && r->status == one.status && r->len == one.len &&
                *keep == keep1 && (!r->len || memcmp(r->body, one.body, r->len) == 0);

    sl_response_fini(&one);
    return same ? rc : INT_MIN;
}

static void test_bodies(void)
{
    struct sl_response r;
    bool keep;
    int rc;

    rc = parse2(S(H "Content-Length: 7\r\nX-Sluice-Log-Offset: 42\r\n"
                  "X-Sluice-Log-Attempts: 3\r\n"
                  "X-Sluice-Job-State: Running\r\n\r\n{\"a\":1}"), "GET", &r, &keep);
    ok(rc == 0 && r.status == 200 && r.len == 7 && memcmp(r.body, "{\"a\":1}", 7) == 0,
       "a Content-Length body is read, whole or a byte at a time");
    ok(keep, "an HTTP/1.1 answer that ends where its length says keeps the connection");
    ok(r.log_offset == 42 && strcmp(r.job_state, "Running") == 0 &&
           strcmp(r.content_type, "application/json") == 0,
       "the log offset, job state and content type headers are read");
    is_int(r.log_attempts, 3, "and how many attempts have started");
    sl_response_fini(&r);
    rc = parse2(S(H "Content-Length: 0\r\nX-Sluice-Log-Attempts: x\r\n\r\n"), "GET", &r, &keep);
    ok(rc == 0 && r.log_attempts == -1, "a count that is not one reads as absent (-1)");
    sl_response_fini(&r);

    rc = parse2(S(H "Transfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n"
                  "X-Trailer: 1\r\n\r\n"), "GET", &r, &keep);
    ok(rc == 0 && r.len == 5 && memcmp(r.body, "abcde", 5) == 0 && keep,
       "a chunked body with an extension and a trailer is read");
    sl_response_fini(&r);

    rc = parse2(S("HTTP/1.1 100 Continue\r\n\r\n" H "Content-Length: 2\r\n\r\nok"), "POST",
                &r, &keep);
    ok(rc == 0 && r.status == 200 && r.len == 2, "an interim 100 is passed over");
    sl_response_fini(&r);

    rc = parse2(S("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end"), "GET", &r, &keep);
    ok(rc == 0 && r.len == 10 && !keep, "a body without a length runs to the end, no reuse");
    sl_response_fini(&r);

    rc = parse2(S(H "Content-Length: 500\r\n\r\n"), "HEAD", &r, &keep);
    ok(rc == 0 && r.len == 0 && keep, "a HEAD answer has no body, whatever its length says");
    sl_response_fini(&r);

    rc = parse2(S("HTTP/1.1 204 No Content\r\n\r\n"), "DELETE", &r, &keep);
    ok(rc == 0 && r.status == 204 && r.len == 0 && r.body, "a 204 has an empty body");
    sl_response_fini(&r);

    rc = parse2(S(H "Content-Length: 2\r\nContent-Length: 2\r\n\r\nok"), "GET", &r, &keep);
    ok(rc == 0 && r.len == 2, "two equal Content-Length fields are one length");
    sl_response_fini(&r);
}

static void test_reuse(void)
{
    struct sl_response r;
    bool keep;

    parse2(S("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"), "GET", &r, &keep);
    ok(!keep, "HTTP/1.0 without keep-alive closes");
    sl_response_fini(&r);
    parse2(S("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"),
           "GET", &r, &keep);
    ok(keep, "HTTP/1.0 with keep-alive keeps");
    sl_response_fini(&r);
    parse2(S(H "Connection: close\r\nContent-Length: 2\r\n\r\nok"), "GET", &r, &keep);
    ok(!keep, "Connection: close closes");
    sl_response_fini(&r);
    parse2(S(H "Content-Length: 2\r\n\r\nokSTRAY"), "GET", &r, &keep);
    ok(!keep, "bytes after the answer forbid reuse");
    sl_response_fini(&r);
    parse2(S(H "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n1\r\na\r\n0\r\n\r\n"),
           "GET", &r, &keep);
    ok(!keep, "chunked with a Content-Length is read as chunked, and not reused");
    sl_response_fini(&r);
}

static void test_refusals(void)
{
    static const struct {
        const char *raw;
        size_t len;
        int rc;
        const char *what;
    } cases[] = {
        /* answer bytes, their length, the rc, what the case shows */
        {S("HTTP/9 banana\r\n\r\n"), -EIO, "a garbage status line is refused"},
        {S("HTTP/1.1 20 OK\r\n\r\n"), -EIO, "a two-digit status is refused"},
        {S("HTTP/1.1 200OK\r\n\r\n"), -EIO, "a status glued to its reason is refused"},
        {S("HTTP/1.1 099 X\r\n\r\n"), -EIO, "a status below 100 is refused"},
        {S("HTTP/1.1 101 Switching\r\n\r\n"), -EIO, "a protocol switch is refused"},
        {S(H "Content-Length: 2\r\nContent-Length: 3\r\n\r\nok"), -EIO,
         "two different Content-Length fields are refused"},
        {S(H "Content-Length: -1\r\n\r\n"), -EIO, "a negative Content-Length is refused"},
        {S(H "Content-Length: 1 2\r\n\r\n"), -EIO, "a Content-Length with a space is refused"},
        {S(H "X-A: 1\r\n folded\r\n\r\n"), -EIO, "a folded header line is refused"},
        {S(H "no colon\r\n\r\n"), -EIO, "a header line without a colon is refused"},
        {S(H "Transfer-Encoding: gzip, chunked\r\n\r\n"), -EIO,
         "a Transfer-Encoding other than chunked is refused"},
        {S(H "Transfer-Encoding: chunked\r\n\r\nzz\r\n"), -EIO, "a bad chunk size is refused"},
        {S(H "Transfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n"), -EIO,
         "a chunk longer than its size is refused"},
        {S(H "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"), -EFBIG,
         "a chunk size past the body cap is too big, not wrapped"},
        {S(H "Content-Length: 99999999999\r\n\r\n"), -EFBIG,
         "a Content-Length past the body cap is too big"},
        {S(H "Content-Length: 500\r\n\r\nshort"), -ECONNRESET, "a cut body is a lost connection"},
        {S(H "Transfer-Encoding: chunked\r\n\r\n5\r\nab"), -ECONNRESET, "a cut chunk is too"},
        {S("HTTP/1.1 200 OK\r\nContent-"), -ECONNRESET, "cut headers are too"},
        {S(""), -ECONNRESET, "no answer at all is too"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        struct sl_response r;
        bool keep = true;
        int rc = parse2(cases[i].raw, cases[i].len, "GET", &r, &keep);
        ok(rc == cases[i].rc && !r.body && r.status == 0 && !keep && r.error.message[0],
           "%s (%s)", cases[i].what, r.error.message);
        sl_response_fini(&r);
    }
}

static void test_big_head(void)
{
    size_t n = 70000;
    char *raw = malloc(n);
    struct sl_response r;
    bool keep;
    int rc;

    memcpy(raw, H "X-Big: ", sizeof(H "X-Big: ") - 1);
    memset(raw + sizeof(H "X-Big: ") - 1, 'a', n - (sizeof(H "X-Big: ") - 1));
    rc = parse2(raw, n, "GET", &r, &keep);
    ok(rc == -EIO && strstr(r.error.message, "too large"),
       "headers over 64 KiB are refused: %s", r.error.message);
    sl_response_fini(&r);
    free(raw);
}

static void test_errors(void)
{
    struct sl_response r;
    bool keep;

    parse2(S("HTTP/1.1 400 Bad Request\r\nContent-Length: 71\r\n\r\n"
             "{\"error\":{\"code\":\"invalid\",\"message\":\"must be 0..64\",\"field\":\"spec.x\"}}"),
           "POST", &r, &keep);
    ok(r.status == 400 && strcmp(r.error.code, "invalid") == 0 &&
           strcmp(r.error.message, "must be 0..64") == 0 && strcmp(r.error.field, "spec.x") == 0,
       "an error object is decoded: code, message, field");
    sl_response_fini(&r);
    parse2(S("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\n\r\nproxy\x01" "down\n"), "GET",
           &r, &keep);
    ok(r.status == 502 && strcmp(r.error.code, "bad_gateway") == 0 &&
           strcmp(r.error.message, "server answered HTTP 502: proxy down") == 0,
       "a body that is not an error object gives the status's code and its first line: %s",
       r.error.message);
    sl_response_fini(&r);
    parse2(S("HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n"), "GET", &r, &keep);
    ok(strcmp(r.error.code, "too_many_requests") == 0, "a bare 429 is too_many_requests");
    sl_response_fini(&r);
}

static void test_request_arguments(void)
{
    struct sl_client *c = sl_client_create("http://127.0.0.1:1", "t");
    struct sl_response r;
    int rc = sl_client_request(c, "POST", "/v1/jobs", NULL, "{}", 2, &r);

    ok(rc == -EINVAL && strstr(r.error.message, "Content-Type"),
       "a body without a Content-Type is refused before anything is sent");
    sl_response_fini(&r);
    sl_client_destroy(c);
}

/* Server URLs: https:// with its default port 443, the host the
 * certificate must name, and what stays refused. */
static void test_https_urls(void)
{
    static const struct {
        const char *url;
        int ok;
        bool https;
        const char *host, *port, *authority, *prefix;
    } cases[] = {
        /* url, accepted, https, host, port, authority (Host), prefix */
        {"https://sluice.example.org", 1, true, "sluice.example.org", "443",
         "sluice.example.org", ""},
        {"https://127.0.0.1:8443/", 1, true, "127.0.0.1", "8443", "127.0.0.1:8443", ""},
        {"https://[::1]:8443/api", 1, true, "::1", "8443", "[::1]:8443", "/api"},
        {"http://h", 1, false, "h", "80", "h", ""},
        {"https://", 0, false, NULL, NULL, NULL, NULL},
        {"https://user@h", 0, false, NULL, NULL, NULL, NULL},
        {"https://h:0", 0, false, NULL, NULL, NULL, NULL},
        {"https//h", 0, false, NULL, NULL, NULL, NULL},
        {"ftp://h", 0, false, NULL, NULL, NULL, NULL},
        {"HTTPS://h", 0, false, NULL, NULL, NULL, NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sl_client *c = sl_client_create(cases[i].url, NULL);
        if (!cases[i].ok) {
            ok(!c && errno == EINVAL, "%s is refused with EINVAL", cases[i].url);
            sl_client_destroy(c);
            continue;
        }
        ok(c && sl_client_https(c) == cases[i].https && strcmp(c->host, cases[i].host) == 0 &&
               strcmp(c->port, cases[i].port) == 0 &&
               strcmp(c->authority, cases[i].authority) == 0 &&
               strcmp(c->prefix, cases[i].prefix) == 0,
           "%s: %s, host %s, port %s, Host %s, prefix '%s'", cases[i].url,
           cases[i].https ? "https" : "http", cases[i].host, cases[i].port,
           cases[i].authority, cases[i].prefix);
        sl_client_destroy(c);
    }
    {
        struct sl_client *c = sl_client_create("https://127.0.0.1:1", NULL);
        struct sl_client_tls t = {.ca_file = "/nonexistent/ca.pem"};
        struct sl_response r;
        struct sl_stream *st = NULL;
        int rc;
        char *early = NULL;
        size_t nearly = 0;

        ok(sl_client_set_tls(c, &t) == 0, "TLS settings are taken before any connection");
        rc = sl_client_upgrade(c, "/v1/jobs/1/attach", "sluice.attach.v1", &st, &early,
                               &nearly, &r);
        ok(rc == -ECONNREFUSED && !st && !early && strstr(r.error.message, "cannot connect"),
           "an upgrade over https is no longer refused before connecting: it connects as "
           "any request does (%s)", r.error.message);
        sl_response_fini(&r);
        sl_client_destroy(c);
    }
}

int main(void)
{
    test_https_urls();
    test_bodies();
    test_reuse();
    test_refusals();
    test_big_head();
    test_errors();
    test_request_arguments();
    return done_testing();
}
