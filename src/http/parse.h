/*
 * parse.h - the request head parser of the HTTP/1.1 server: bytes in, a
 * request head or a refusal out.
 *
 * Strict RFC 9112, so that a request means one thing to sluiced and to
 * anything in front of it (a proxy, a load balancer): one framing, one
 * target, one set of fields. The rules, each with the status it gets, are
 * in docs/api-contract.md ("Request rules"):
 *
 *   request-line = method SP origin-form SP ("HTTP/1.0" | "HTTP/1.1") CRLF
 *   field-line   = token ":" OWS value OWS CRLF
 *
 * with exactly one space between the parts of the request line; every line
 * ends in CRLF (a bare CR or a bare LF is refused); no NUL, and no other
 * control character but HTAB in a field value; no whitespace before a
 * field's colon; no obsolete line folding; at most one Content-Length (of
 * digits only), Host, Content-Type and Authorization; an HTTP/1.1 request
 * has a Host; Transfer-Encoding is refused (411 alone, 400 with a
 * Content-Length). One empty line before the request line is ignored
 * (RFC 9112 section 2.2).
 *
 * Pure: no sockets, no clock, no allocation, no global state; thread-safe.
 * A parsed head refers to the caller's buffer by offsets.
 */
#ifndef SL_HTTP_PARSE_H
#define SL_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_HTTP_MAX_HEAD   8192       /* bytes: request line, fields, CRLF CRLF */
#define SL_HTTP_MAX_FIELDS 64         /* field lines of one head */
#define SL_HTTP_MAX_METHOD 15         /* bytes of a method name */
#define SL_HTTP_MAX_TARGET 1023       /* bytes of the request target */
#define SL_HTTP_MAX_BODY   (1u << 20) /* bytes of a Content-Length body */

/* Bytes [off, off + len) of the parsed buffer. */
struct sl_http_span {
    uint16_t off, len;
};

struct sl_http_head {
    size_t head_len;                /* bytes up to and with the empty line */
    struct sl_http_span method;     /* a token, at most SL_HTTP_MAX_METHOD */
    struct sl_http_span target;     /* origin-form: path and query */
    int minor;                      /* HTTP/1.<minor>: 0 or 1 */
    int nfields;                    /* field lines, in order */
    struct sl_http_span name[SL_HTTP_MAX_FIELDS];  /* token, before ':' */
    struct sl_http_span value[SL_HTTP_MAX_FIELDS]; /* without OWS */
    int64_t content_length;         /* bytes, 0..SL_HTTP_MAX_BODY; -1 if none */
    bool keep_alive;                /* the connection may carry another request */
    bool expect_continue;           /* Expect: 100-continue */
};

/* Why a request is refused: the status to answer, then close. */
struct sl_http_refusal {
    int status;    /* 400, 411, 413, 414, 431 or 501 */
    char text[160]; /* one printable line for the error message */
};

/* Parse the request head at the start of buf[0..len). Only the first
 * SL_HTTP_MAX_HEAD bytes are looked at; the bytes after the head (a body,
 * the next request) are not.
 *
 * Returns 0 when a complete, valid head is there: *h describes it
 * (offsets into buf). Returns -EAGAIN when the bytes so far begin a valid
 * head and more are needed. Returns -EPROTO when the request is refused:
 * *why has the status and a message, and *h is unspecified; the rest of
 * the stream has no reliable meaning, so the connection is closed after
 * the answer. A fault in the lines already complete is refused at once,
 * without waiting for the rest of the head. */
int sl_http_parse_head(const char *buf, size_t len, struct sl_http_head *h,
                       struct sl_http_refusal *why);

#define SL_HTTP_MAX_PARAMS 32 /* parameters of one query string */

/* One decoded query parameter: NUL-terminated strings inside the buffer
 * that sl_http_parse_query decoded. */
struct sl_http_param {
    const char *name, *value;
};

/* Decode the query string q[0..len) (the target after '?') in place:
 * parameters "name=value" joined by '&', '+' for a space, "%XY" for a
 * byte. Empty parameters ("a=1&&b=2", a trailing '&') are skipped; a
 * name without '=' has the value "". q must have room for len + 1 bytes
 * (decoding never lengthens a part; each part gets its NUL).
 *
 * One meaning or a refusal: returns the number of parameters (at most
 * 'max', filled into p[] in order), or -EPROTO with *why (status 400)
 * naming the parameter, for: a '%' without two hex digits after it, a
 * decoded NUL or other control character (below 0x20, or 0x7f) in a name
 * or a value, an empty name, a name given twice, more than 'max'
 * parameters. On a refusal q's contents are unspecified. */
int sl_http_parse_query(char *q, size_t len, struct sl_http_param *p, int max,
                        struct sl_http_refusal *why);

/* One If-None-Match field value (RFC 9110 section 13.1.2) against an
 * entity tag whose opaque part (between its quotes) is 'opaque':
 *
 *   If-None-Match = "*" / #entity-tag
 *   entity-tag    = [ "W/" ] DQUOTE *etagc DQUOTE
 *   etagc         = %x21 / %x23-7E / obs-text
 *
 * a list of elements joined by OWS "," OWS, where empty elements count as
 * none (RFC 9110 section 5.6.1). The comparison is the weak one a GET
 * uses: W/"x" matches "x". Returns 2 for "*" (any tag), 1 when a tag
 * matches, 0 when none does, and -EPROTO when the value does not follow
 * the grammar: the server then ignores the field, as if it were absent
 * (docs/api-contract.md, Request rules). Pure. */
int sl_http_etag_match(const char *value, const char *opaque);

/* Whether 'c' is a tchar of RFC 9110 (the characters of a token). */
bool sl_http_tchar(unsigned char c);

#endif
