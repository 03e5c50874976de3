/*
 * client.c - libsluice over libcurl: one reused easy handle per client,
 * bounded answers, the API's error object decoded into struct sl_api_error.
 *
 * Invariants: c->curl lives as long as the client (curl_easy_reset between
 * requests keeps the live connection); a response never owns more than
 * SL_CLIENT_MAX_BODY + 1 bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "client.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../util/util.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0"
#endif

struct sl_client {
    CURL *curl;        /* owned; reused for keep-alive */
    char *server;      /* owned; no trailing slash */
    char *auth_header; /* owned; "Authorization: Bearer ..." or NULL */
    char errbuf[CURL_ERROR_SIZE]; /* libcurl's text for the last failure */
};

/* State of one transfer, passed to the libcurl callbacks. */
struct xfer {
    struct sl_response *resp;
    size_t cap;   /* bytes allocated in resp->body, excluding the NUL */
    bool too_big; /* the answer passed SL_CLIENT_MAX_BODY */
    bool no_mem;
};

/* libcurl result -> negated errno and the words we put before curl's text.
 * Anything not listed is -EIO. */
static const struct {
    CURLcode code;
    int rc;
    const char *what;
} curl_errors[] = {
    {CURLE_COULDNT_CONNECT, -ECONNREFUSED, "cannot connect to"},
    {CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH, "cannot resolve"},
    {CURLE_COULDNT_RESOLVE_PROXY, -EHOSTUNREACH, "cannot resolve proxy for"},
    {CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT, "timed out talking to"},
    {CURLE_OUT_OF_MEMORY, -ENOMEM, "out of memory talking to"},
    {CURLE_URL_MALFORMAT, -EINVAL, "bad URL for"},
    {CURLE_UNSUPPORTED_PROTOCOL, -EPROTONOSUPPORT, "unsupported protocol for"},
    {CURLE_GOT_NOTHING, -ECONNRESET, "empty answer from"},
    {CURLE_RECV_ERROR, -ECONNRESET, "connection lost to"},
    {CURLE_SEND_ERROR, -ECONNRESET, "connection lost to"},
    {CURLE_PEER_FAILED_VERIFICATION, -EPROTO, "TLS verification failed for"},
    {CURLE_SSL_CONNECT_ERROR, -EPROTO, "TLS handshake failed with"},
};

/* HTTP status -> error code, used when a 4xx/5xx body is not an error
 * object (a proxy's page, an empty body). */
static const struct {
    long status;
    const char *code;
} status_codes[] = {
    {400, "invalid"},
    {401, "unauthorized"},
    {403, "forbidden"},
    {404, "not_found"},
    {405, "method_not_allowed"},
    {409, "conflict"},
    {413, "too_large"},
    {415, "unsupported_media_type"},
    {429, "too_many_requests"},
    {500, "internal"},
    {502, "bad_gateway"},
    {503, "unavailable"},
    {504, "gateway_timeout"},
};

/* Copy 'src' into 'dst' as one printable line: control characters become
 * spaces, runs of them collapse, trailing blanks go. */
static void copy_line(char *dst, size_t size, const char *src, size_t srclen)
{
    size_t o = 0;
    bool space = false;

    if (!size)
        return;
    for (size_t i = 0; i < srclen && src[i] && o + 1 < size; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (ch < 0x20 || ch == 0x7f) {
            if (o > 0 && !space)
                dst[o++] = ' ';
            space = true;
            continue;
        }
        space = false;
        dst[o++] = (char)ch;
    }
    while (o > 0 && dst[o - 1] == ' ')
        o--;
    dst[o] = '\0';
}

static bool token_valid(const char *token)
{
    size_t n = 0;

    for (const char *p = token; *p; p++, n++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return false;
    return n <= SL_CLIENT_MAX_TOKEN;
}

struct sl_client *sl_client_create(const char *server, const char *token)
{
    struct sl_client *c = NULL;
    size_t n;
    int err = 0;

    if (!server || (strncmp(server, "http://", 7) != 0 &&
                    strncmp(server, "https://", 8) != 0)) {
        errno = EINVAL;
        return NULL;
    }
    for (const char *p = server; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
            errno = EINVAL;
            return NULL;
        }
    if (token && *token && !token_valid(token)) {
        errno = EINVAL;
        return NULL;
    }
    n = strlen(server);
    while (n > 0 && server[n - 1] == '/')
        n--;
    if (n >= SL_CLIENT_MAX_URL / 2) {
        errno = EINVAL;
        return NULL;
    }
    if (!(c = calloc(1, sizeof(*c))) || !(c->server = strndup(server, n))) {
        err = ENOMEM;
        goto out;
    }
    if (token && *token) {
        size_t hlen = strlen("Authorization: Bearer ") + strlen(token) + 1;
        if (!(c->auth_header = malloc(hlen))) {
            err = ENOMEM;
            goto out;
        }
        snprintf(c->auth_header, hlen, "Authorization: Bearer %s", token);
    }
    if (!(c->curl = curl_easy_init())) {
        err = ENOMEM;
        goto out;
    }
    return c;
out:
    sl_client_destroy(c);
    errno = err;
    return NULL;
}

void sl_client_destroy(struct sl_client *c)
{
    int saved = errno;

    if (c) {
        if (c->curl)
            curl_easy_cleanup(c->curl);
        free(c->server);
        if (c->auth_header) {
            /* The token is a secret: do not leave it in freed memory. */
            memset(c->auth_header, 0, strlen(c->auth_header));
            free(c->auth_header);
        }
        free(c);
    }
    errno = saved;
}

const char *sl_client_server(const struct sl_client *c)
{
    return c->server;
}

void sl_response_fini(struct sl_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
    resp->log_offset = -1;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    struct sl_response *r = x->resp;
    size_t n = size * nmemb;

    if (n > SL_CLIENT_MAX_BODY - r->len) {
        x->too_big = true;
        return 0; /* makes libcurl stop with CURLE_WRITE_ERROR */
    }
    if (r->len + n > x->cap) {
        size_t want = x->cap ? x->cap : 16384;
        char *nb;
        while (want < r->len + n)
            want *= 2;
        if (want > SL_CLIENT_MAX_BODY)
            want = SL_CLIENT_MAX_BODY;
        if (!(nb = realloc(r->body, want + 1))) {
            x->no_mem = true;
            return 0;
        }
        r->body = nb;
        x->cap = want;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
    return n;
}

/* If 'line' is the header 'name', copy its value (trimmed) to 'dst'. */
static bool header_value(const char *line, size_t len, const char *name,
                         char *dst, size_t size)
{
    size_t nl = strlen(name);
    const char *v, *end = line + len;

    if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return false;
    v = line + nl + 1;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    copy_line(dst, size, v, (size_t)(end - v));
    return true;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    struct sl_response *r = x->resp;
    size_t n = size * nmemb;
    char offset[32];

    /* A new status line (after "100 Continue") starts a new header set. */
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        r->log_offset = -1;
        r->job_state[0] = '\0';
        r->content_type[0] = '\0';
        return n;
    }
    if (header_value(data, n, "X-Sluice-Log-Offset", offset, sizeof(offset))) {
        int64_t v;
        r->log_offset = sl_parse_int64(offset, 0, INT64_MAX, &v) == 0 ? v : -1;
        return n;
    }
    if (!header_value(data, n, "X-Sluice-Job-State", r->job_state,
                      sizeof(r->job_state)))
        header_value(data, n, "Content-Type", r->content_type,
                     sizeof(r->content_type));
    return n;
}

/* Fill r->error from a 4xx/5xx answer: the error object when the body is
 * one, else the status and the first line of the body. */
static void decode_error(struct sl_response *r)
{
    struct sl_api_error *e = &r->error;
    json_t *doc = NULL, *obj;
    const char *s;

    if (r->body && r->len)
        doc = json_loadb(r->body, r->len, 0, NULL);
    obj = doc ? json_object_get(doc, "error") : NULL;
    if (json_is_object(obj)) {
        if ((s = json_string_value(json_object_get(obj, "code"))))
            copy_line(e->code, sizeof(e->code), s, strlen(s));
        if ((s = json_string_value(json_object_get(obj, "message"))))
            copy_line(e->message, sizeof(e->message), s, strlen(s));
        if ((s = json_string_value(json_object_get(obj, "field"))))
            copy_line(e->field, sizeof(e->field), s, strlen(s));
    }
    if (!e->code[0]) {
        for (size_t i = 0; i < SL_ARRAY_LEN(status_codes); i++)
            if (status_codes[i].status == r->status)
                sl_strlcpy(e->code, status_codes[i].code, sizeof(e->code));
        if (!e->code[0])
            snprintf(e->code, sizeof(e->code), "http_%ld", r->status);
    }
    if (!e->message[0]) {
        char first[160] = "";
        if (r->body && !doc) {
            size_t n = strcspn(r->body, "\r\n");
            copy_line(first, sizeof(first), r->body, n);
        }
        snprintf(e->message, sizeof(e->message), "server answered HTTP %ld%s%s",
                 r->status, first[0] ? ": " : "", first);
    }
    json_decref(doc);
}

/* The words and errno for a failed transfer. */
static int transport_error(struct sl_client *c, CURLcode cc,
                           const struct xfer *x, const char *url,
                           struct sl_response *r)
{
    const char *what = "request failed to";
    const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc);
    char line[1024];
    int rc = -EIO;

    if (x->too_big) {
        snprintf(line, sizeof(line),
                 "answer from %.512s is larger than %zu MiB", url,
                 SL_CLIENT_MAX_BODY >> 20);
        rc = -EFBIG;
    } else if (x->no_mem) {
        snprintf(line, sizeof(line),
                 "out of memory reading the answer from %.512s", url);
        rc = -ENOMEM;
    } else {
        for (size_t i = 0; i < SL_ARRAY_LEN(curl_errors); i++)
            if (curl_errors[i].code == cc) {
                what = curl_errors[i].what;
                rc = curl_errors[i].rc;
                break;
            }
        snprintf(line, sizeof(line), "%s %.300s: %.300s", what, c->server,
                 detail);
    }
    copy_line(r->error.message, sizeof(r->error.message), line, strlen(line));
    free(r->body);
    r->body = NULL;
    r->len = 0;
    r->status = 0;
    return rc;
}

int sl_client_request(struct sl_client *c, const char *method, const char *path,
                      const char *content_type, const char *body, size_t len,
                      struct sl_response *resp)
{
    struct curl_slist *headers = NULL, *h;
    struct xfer x = {.resp = resp};
    char url[SL_CLIENT_MAX_URL], ct[160];
    CURL *k = c->curl;
    CURLcode cc;
    int rc = 0;

    memset(resp, 0, sizeof(*resp));
    resp->log_offset = -1;
    if (!method || !path || path[0] != '/' || (len && !body)) {
        sl_strlcpy(resp->error.message, "bad request arguments",
                   sizeof(resp->error.message));
        return -EINVAL;
    }
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
            sl_strlcpy(resp->error.message,
                       "request path holds a space or "
                       "control character",
                       sizeof(resp->error.message));
            return -EINVAL;
        }
    if ((size_t)snprintf(url, sizeof(url), "%s%s", c->server, path) >=
        sizeof(url)) {
        sl_strlcpy(resp->error.message, "request URL too long",
                   sizeof(resp->error.message));
        return -EINVAL;
    }

    /* Reset keeps the live connection; every option is set again below. */
    curl_easy_reset(k);
    c->errbuf[0] = '\0';
    if (c->auth_header &&
        !(headers = curl_slist_append(headers, c->auth_header)))
        goto nomem;
    /* No "Expect: 100-continue" round trip; we always send the body. */
    if (!(h = curl_slist_append(headers, "Expect:")))
        goto nomem;
    headers = h;
    if (content_type)
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
    else
        sl_strlcpy(ct, "Content-Type:", sizeof(ct)); /* drop curl's default */
    if (!(h = curl_slist_append(headers, ct)))
        goto nomem;
    headers = h;
    if (!(h = curl_slist_append(headers,
                                "Accept: application/json, text/plain")))
        goto nomem;
    headers = h;

    curl_easy_setopt(k, CURLOPT_URL, url);
    curl_easy_setopt(k, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)SL_CLIENT_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, (long)SL_CLIENT_TIMEOUT_MS);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(k, CURLOPT_PROTOCOLS,
                     (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(k, CURLOPT_USERAGENT, "sluice/" SLUICE_VERSION);
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(k, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(k, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(k, CURLOPT_MAXFILESIZE_LARGE,
                     (curl_off_t)SL_CLIENT_MAX_BODY);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(k, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(k, CURLOPT_POST, 1L);
        curl_easy_setopt(k, CURLOPT_POSTFIELDS, len ? body : "");
        curl_easy_setopt(k, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else {
        curl_easy_setopt(k, CURLOPT_CUSTOMREQUEST, method);
        if (len) {
            curl_easy_setopt(k, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(k, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        }
    }

    cc = curl_easy_perform(k);
    if (cc == CURLE_FILESIZE_EXCEEDED)
        x.too_big = true;
    if (cc != CURLE_OK) {
        rc = transport_error(c, cc, &x, url, resp);
        goto out;
    }
    curl_easy_getinfo(k, CURLINFO_RESPONSE_CODE, &resp->status);
    if (!resp->body && !(resp->body = calloc(1, 1)))
        goto nomem;
    if (resp->status >= 400)
        decode_error(resp);
    goto out;

nomem:
    sl_strlcpy(resp->error.message, "out of memory",
               sizeof(resp->error.message));
    free(resp->body);
    resp->body = NULL;
    resp->len = 0;
    resp->status = 0;
    rc = -ENOMEM;
out:
    /* The handle must not keep pointers to our stack past this call. */
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(k, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    return rc;
}

int sl_client_json(struct sl_client *c, const char *method, const char *path,
                   const json_t *body, json_t **out, struct sl_response *resp)
{
    char *text = NULL;
    json_error_t jerr;
    int rc;

    *out = NULL;
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        memset(resp, 0, sizeof(*resp));
        resp->log_offset = -1;
        sl_strlcpy(resp->error.message, "out of memory",
                   sizeof(resp->error.message));
        return -ENOMEM;
    }
    rc = sl_client_request(c, method, path, text ? "application/json" : NULL,
                           text, text ? strlen(text) : 0, resp);
    free(text);
    if (rc < 0 || resp->status < 200 || resp->status >= 300 || !resp->len)
        return rc;
    if (!(*out = json_loadb(resp->body, resp->len, 0, &jerr))) {
        snprintf(resp->error.message, sizeof(resp->error.message),
                 "the server's answer to %s %s is not JSON: %s", method, path,
                 jerr.text);
        return -EPROTO;
    }
    return 0;
}

char *sl_client_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out, *o;

    if (n > (SIZE_MAX - 1) / 3 || !(out = malloc(3 * n + 1))) {
        errno = ENOMEM;
        return NULL;
    }
    o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
            *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}
