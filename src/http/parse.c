/*
 * parse.c - the request head parser (see parse.h for the grammar and the
 * contract, docs/api-contract.md for every rule and its status).
 *
 * One pass over the head, line by line; a line is judged as soon as its
 * CRLF is there, so a fault is refused before the rest of the head comes.
 * Invariants: nothing is read past min(len, SL_HTTP_MAX_HEAD); every span
 * handed out lies inside the head; messages hold printable ASCII only
 * (bytes of the request are shown with '?' for anything else), so that
 * they can go into a JSON error object as they are.
 */
#include "parse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Fields a request may hold once: with two, two readers of one request
 * (a proxy and sluiced) could each take a different one. */
enum { F_HOST = 1u << 0, F_CLEN = 1u << 1, F_CTYPE = 1u << 2, F_AUTH = 1u << 3 };
static const struct {
    const char *name;
    unsigned bit;
} singletons[] = {
    /* field name, bit in 'seen' */
    {"Host", F_HOST},
    {"Content-Length", F_CLEN},
    {"Content-Type", F_CTYPE},
    {"Authorization", F_AUTH},
};

/* What the field lines said, beyond the spans. */
struct state {
    unsigned seen;    /* F_* bits of the singletons met */
    bool te;          /* a Transfer-Encoding field */
    bool conn_close;  /* Connection: close */
    bool conn_keep;   /* Connection: keep-alive */
};

static int refuse(struct sl_http_refusal *why, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct sl_http_refusal *why, int status, const char *fmt, ...)
{
    va_list ap;

    why->status = status;
    va_start(ap, fmt);
    vsnprintf(why->text, sizeof(why->text), fmt, ap);
    va_end(ap);
    return -EPROTO;
}

/* Up to 'size' - 1 bytes of b[off, off + n) as printable ASCII ('?' for
 * anything else, "..." when cut), for a message. */
static const char *shown(const unsigned char *b, size_t off, size_t n, char *out,
                         size_t size)
{
    size_t o = 0, max = size - 1;
    bool cut = n > max;

    if (cut)
        n = max > 3 ? max - 3 : 0;
    for (size_t i = 0; i < n; i++, o++)
        out[o] = b[off + i] >= 0x20 && b[off + i] < 0x7f ? (char)b[off + i] : '?';
    if (cut)
        for (; o < max; o++)
            out[o] = '.';
    out[o] = '\0';
    return out;
}

bool sl_http_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool hexdig(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool name_is(const unsigned char *b, struct sl_http_span s, const char *name)
{
    size_t n = strlen(name);
    return s.len == n && strncasecmp((const char *)b + s.off, name, n) == 0;
}

/* Whether the value holds 'word' as an element of a comma-separated list,
 * case-insensitively. */
static bool list_has(const unsigned char *b, struct sl_http_span v, const char *word)
{
    size_t n = strlen(word), i = v.off, end = (size_t)v.off + v.len;

    while (i < end) {
        size_t e;
        while (i < end && (b[i] == ' ' || b[i] == '\t' || b[i] == ','))
            i++;
        for (e = i; e < end && b[e] != ','; e++)
            ;
        {
            size_t t = e;
            while (t > i && (b[t - 1] == ' ' || b[t - 1] == '\t'))
                t--;
            if (t - i == n && strncasecmp((const char *)b + i, word, n) == 0)
                return true;
        }
        i = e;
    }
    return false;
}

/* The end of the line that starts at p: 1 with *eol at its CR; 0 when the
 * line is not complete within b[0..lim); -EPROTO on a bare CR, a bare LF,
 * a NUL or another control character (HTAB is one only in the request
 * line, line 1), even in a line not yet complete. */
static int find_eol(const unsigned char *b, size_t p, size_t lim, int line,
                    size_t *eol, struct sl_http_refusal *why)
{
    for (size_t i = p; i < lim; i++) {
        if (b[i] == '\r') {
            if (i + 1 == lim)
                return 0;
            if (b[i + 1] != '\n')
                return refuse(why, 400, "a bare CR in line %d of the request head", line);
            *eol = i;
            return 1;
        }
        if (b[i] == '\n')
            return refuse(why, 400,
                          "a bare LF in line %d of the request head (lines end in CRLF)",
                          line);
        if (b[i] == '\0')
            return refuse(why, 400, "a NUL byte in line %d of the request head", line);
        if ((b[i] < 0x20 && (b[i] != '\t' || line == 1)) || b[i] == 0x7f)
            return refuse(why, 400, "a control character in line %d of the request head",
                          line);
    }
    return 0;
}

/* METHOD SP origin-form SP HTTP/1.x, in b[p, eol). */
static int request_line(const unsigned char *b, size_t p, size_t eol,
                        struct sl_http_head *h, struct sl_http_refusal *why)
{
    size_t i = p, t0;
    char text[40];

    while (i < eol && sl_http_tchar(b[i]))
        i++;
    if (i == p || i == eol || b[i] != ' ')
        return refuse(why, 400,
                      "malformed request line: expected METHOD SP /TARGET SP HTTP/1.1");
    if (i - p > SL_HTTP_MAX_METHOD)
        return refuse(why, 501, "method %s is not implemented",
                      shown(b, p, i - p, text, sizeof(text)));
    h->method = (struct sl_http_span){(uint16_t)p, (uint16_t)(i - p)};
    t0 = ++i;
    if (i < eol && b[i] == ' ')
        return refuse(why, 400, "malformed request line: one space between its parts");
    if (i == eol || b[i] != '/')
        return refuse(why, 400,
                      "the request target must be an absolute path (origin-form, "
                      "starting with '/')");
    for (; i < eol && b[i] != ' '; i++) {
        unsigned char c = b[i];
        if (c >= 0x80)
            return refuse(why, 400,
                          "a byte above 0x7f in the request target (percent-encode it)");
        if (c == '#')
            return refuse(why, 400, "a fragment ('#') in the request target");
        if (c == '%' && !(i + 2 < eol && hexdig(b[i + 1]) && hexdig(b[i + 2])))
            return refuse(why, 400,
                          "a '%%' not followed by two hex digits in the request target");
    }
    if (i - t0 > SL_HTTP_MAX_TARGET)
        return refuse(why, 414, "request target longer than %d bytes", SL_HTTP_MAX_TARGET);
    h->target = (struct sl_http_span){(uint16_t)t0, (uint16_t)(i - t0)};
    if (i == eol)
        return refuse(why, 400, "malformed request line: no HTTP version");
    i++;
    if (i < eol && b[i] == ' ')
        return refuse(why, 400, "malformed request line: one space between its parts");
    if (eol - i != 8 || memcmp(b + i, "HTTP/1.", 7) != 0 ||
        (b[i + 7] != '0' && b[i + 7] != '1'))
        return refuse(why, 400, "HTTP version %s: only HTTP/1.0 and HTTP/1.1 are served",
                      shown(b, i, eol - i, text, sizeof(text)));
    h->minor = b[i + 7] - '0';
    return 0;
}

/* One field line in b[p, eol) (line number 'line'). */
static int field_line(const unsigned char *b, size_t p, size_t eol, int line,
                      struct sl_http_head *h, struct state *st,
                      struct sl_http_refusal *why)
{
    size_t i = p, v0, v1;
    struct sl_http_span name, value;
    char text[40];

    if (b[p] == ' ' || b[p] == '\t')
        return refuse(why, 400,
                      "obsolete line folding (line %d starts with whitespace) is not "
                      "accepted",
                      line);
    while (i < eol && sl_http_tchar(b[i]))
        i++;
    if (i == eol)
        return refuse(why, 400, "field line %d has no colon", line);
    if (b[i] != ':') {
        if (b[i] == ' ' || b[i] == '\t')
            return refuse(why, 400, "whitespace between a field name and its colon (line %d)",
                          line);
        return refuse(why, 400, "an invalid character in a field name (line %d)", line);
    }
    if (i == p)
        return refuse(why, 400, "a field without a name (line %d)", line);
    name = (struct sl_http_span){(uint16_t)p, (uint16_t)(i - p)};
    for (v0 = i + 1; v0 < eol && (b[v0] == ' ' || b[v0] == '\t'); v0++)
        ;
    for (v1 = eol; v1 > v0 && (b[v1 - 1] == ' ' || b[v1 - 1] == '\t'); v1--)
        ;
    value = (struct sl_http_span){(uint16_t)v0, (uint16_t)(v1 - v0)};
    if (h->nfields == SL_HTTP_MAX_FIELDS)
        return refuse(why, 431, "more than %d header fields", SL_HTTP_MAX_FIELDS);
    h->name[h->nfields] = name;
    h->value[h->nfields++] = value;

    for (size_t k = 0; k < sizeof(singletons) / sizeof(singletons[0]); k++) {
        if (!name_is(b, name, singletons[k].name))
            continue;
        if (st->seen & singletons[k].bit)
            return refuse(why, 400, "more than one %s field", singletons[k].name);
        st->seen |= singletons[k].bit;
    }
    if (name_is(b, name, "Content-Length")) {
        int64_t n = 0;
        if (v1 == v0)
            return refuse(why, 400, "an empty Content-Length");
        for (size_t k = v0; k < v1; k++) {
            if (b[k] < '0' || b[k] > '9')
                return refuse(why, 400, "Content-Length must be digits only, got '%s'",
                              shown(b, v0, v1 - v0, text, sizeof(text)));
            /* Saturate just past the cap: no overflow, still too large. */
            if (n <= (int64_t)SL_HTTP_MAX_BODY)
                n = n * 10 + (b[k] - '0');
        }
        h->content_length = n;
    } else if (name_is(b, name, "Transfer-Encoding")) {
        st->te = true;
    } else if (name_is(b, name, "Host")) {
        for (size_t k = v0; k < v1; k++)
            if (!((b[k] >= '0' && b[k] <= '9') || (b[k] >= 'a' && b[k] <= 'z') ||
                  (b[k] >= 'A' && b[k] <= 'Z') || strchr("-._~!$&'()*+,;=:%[]", b[k])))
                return refuse(why, 400, "an invalid Host: '%s'",
                              shown(b, v0, v1 - v0, text, sizeof(text)));
    } else if (name_is(b, name, "Connection")) {
        st->conn_close |= list_has(b, value, "close");
        st->conn_keep |= list_has(b, value, "keep-alive");
    } else if (name_is(b, name, "Expect")) {
        /* RFC 9110 10.1.1: an HTTP/1.0 client's 100-continue is ignored. */
        h->expect_continue = h->minor == 1 && value.len == 12 &&
                             strncasecmp((const char *)b + v0, "100-continue", 12) == 0;
    }
    return 0;
}

/* More bytes are needed, unless the head already fills the cap. */
static int need_more(size_t len, struct sl_http_refusal *why)
{
    if (len >= SL_HTTP_MAX_HEAD)
        return refuse(why, 431, "request head larger than %d bytes", SL_HTTP_MAX_HEAD);
    return -EAGAIN;
}

int sl_http_parse_head(const char *buf, size_t len, struct sl_http_head *h,
                       struct sl_http_refusal *why)
{
    const unsigned char *b = (const unsigned char *)buf;
    size_t lim = len < SL_HTTP_MAX_HEAD ? len : SL_HTTP_MAX_HEAD, p = 0, eol = 0;
    struct state st = {0, false, false, false};
    int rc, line = 1;

    h->head_len = 0;
    h->nfields = 0;
    h->minor = 1;
    h->content_length = -1;
    h->keep_alive = false;
    h->expect_continue = false;
    why->status = 0;
    why->text[0] = '\0';

    /* RFC 9112 2.2: one empty line before the request line is ignored. */
    if (lim >= 2 && b[0] == '\r' && b[1] == '\n')
        p = 2;
    if ((rc = find_eol(b, p, lim, line, &eol, why)) <= 0)
        return rc < 0 ? rc : need_more(len, why);
    if ((rc = request_line(b, p, eol, h, why)) < 0)
        return rc;
    for (;;) {
        p = eol + 2;
        line++;
        if ((rc = find_eol(b, p, lim, line, &eol, why)) <= 0)
            return rc < 0 ? rc : need_more(len, why);
        if (eol == p)
            break; /* the empty line: the head is complete */
        if ((rc = field_line(b, p, eol, line, h, &st, why)) < 0)
            return rc;
    }
    h->head_len = eol + 2;

    if (st.te && (st.seen & F_CLEN))
        return refuse(why, 400, "Transfer-Encoding and Content-Length together");
    if (st.te)
        return refuse(why, 411,
                      "chunked request bodies are not accepted; send Content-Length");
    if (h->minor == 1 && !(st.seen & F_HOST))
        return refuse(why, 400, "an HTTP/1.1 request needs a Host field");
    if (h->content_length > (int64_t)SL_HTTP_MAX_BODY)
        return refuse(why, 413, "request body larger than %u bytes", SL_HTTP_MAX_BODY);
    h->keep_alive = h->minor == 1 ? !st.conn_close : st.conn_keep && !st.conn_close;
    return 0;
}

/* ---- the query string ------------------------------------------------- */

static int hexval(unsigned char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Decode q[from, to) into q starting at *out and NUL-terminate it there.
 * Returns 0, or -1 with *bad set to a message. */
static int decode_part(char *q, size_t from, size_t to, size_t *out, const char **bad)
{
    size_t o = *out;

    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)q[i];
        if (c == '%') {
            if (i + 2 >= to || !hexdig((unsigned char)q[i + 1]) ||
                !hexdig((unsigned char)q[i + 2])) {
                *bad = "'%' without two hex digits after it";
                return -1;
            }
            c = (unsigned char)(hexval((unsigned char)q[i + 1]) * 16 +
                                hexval((unsigned char)q[i + 2]));
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (c < 0x20 || c == 0x7f) {
            *bad = "a control character (decoded)";
            return -1;
        }
        q[o++] = (char)c;
    }
    q[o++] = '\0';
    *out = o;
    return 0;
}

int sl_http_parse_query(char *q, size_t len, struct sl_http_param *p, int max,
                        struct sl_http_refusal *why)
{
    size_t i = 0, out = 0;
    int n = 0;
    char name[48];

    while (i < len) {
        size_t end = i, eq;
        const char *bad = NULL;
        size_t name_at, value_at;

        while (end < len && q[end] != '&')
            end++;
        if (end == i) {
            i = end + 1; /* an empty parameter */
            continue;
        }
        for (eq = i; eq < end && q[eq] != '='; eq++)
            ;
        shown((const unsigned char *)q, i, eq - i, name, sizeof(name));
        if (eq == i)
            return refuse(why, 400, "query parameter with an empty name");
        if (n == max)
            return refuse(why, 400, "more than %d query parameters", max);
        /* Decoding writes at 'out' <= i: each part only shrinks, and the
         * NUL of a part takes the place of its '=' or '&' separator (or of
         * the end of q: q has room for len + 1). */
        name_at = out;
        if (decode_part(q, i, eq, &out, &bad) < 0)
            return refuse(why, 400, "query parameter '%s': %s", name, bad);
        value_at = out - 1; /* no '=': the value "", the name's NUL */
        if (eq < end) {
            value_at = out;
            if (decode_part(q, eq + 1, end, &out, &bad) < 0)
                return refuse(why, 400, "query parameter '%s': %s", name, bad);
        }
        for (int k = 0; k < n; k++)
            if (strcmp(p[k].name, q + name_at) == 0)
                return refuse(why, 400, "query parameter '%s' given twice",
                              shown((const unsigned char *)q, name_at,
                                    strlen(q + name_at), name, sizeof(name)));
        p[n].name = q + name_at;
        p[n].value = q + value_at;
        n++;
        i = end + 1;
    }
    return n;
}

/* ---- If-None-Match ------------------------------------------------------ */

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static bool etagc(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

int sl_http_etag_match(const char *value, const char *opaque)
{
    const char *p = skip_ows(value);
    size_t olen = strlen(opaque);
    int match = 0;

    if (*p == '*')
        return *skip_ows(p + 1) == '\0' ? 2 : -EPROTO;
    for (;;) {
        const char *tag;
        p = skip_ows(p);
        if (*p == ',') {
            p++; /* an empty element */
            continue;
        }
        if (*p == '\0')
            return match;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        if (*p != '"')
            return -EPROTO;
        tag = ++p;
        while (etagc((unsigned char)*p))
            p++;
        if (*p != '"')
            return -EPROTO;
        if ((size_t)(p - tag) == olen && memcmp(tag, opaque, olen) == 0)
            match = 1;
        p = skip_ows(p + 1);
        if (*p != ',' && *p != '\0')
            return -EPROTO;
    }
}
