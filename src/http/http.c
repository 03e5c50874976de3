/*
 * http.c - libmicrohttpd glue: body accumulation with a cap, deferred
 * response queueing (keep-alive), suspend/resume for answers that wait on
 * the engine's commit.
 *
 * Handler call sequence for one request (libmicrohttpd 0.9.x):
 *   1st call: headers only; we allocate the request and answer nothing.
 *   next calls with *upload_data_size > 0: body chunks; appended up to the
 *     cap, the rest drained.
 *   the call with *upload_data_size == 0: the request is complete; the
 *     handler runs. If it answered, the response is queued now (never on the
 *     first call). If it suspended, we return and wait; after resume the
 *     library calls us again and the stored answer is queued.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"

#define MAX_EXTRA_HEADERS 4
#define SL_HTTP_POOL_BYTES (8 * 1024)

enum phase { PH_READING, PH_SUSPENDED, PH_ANSWERED, PH_SENT };

struct sl_http {
    struct MHD_Daemon *d;
    int quiesced_fd;              /* listen socket after quiesce; closed at stop */
    sl_http_handler handler;
    void *arg;
};

struct sl_http_req {
    struct MHD_Connection *conn;
    char method[16];
    char path[1024];
    char *body;                   /* owned; NUL-terminated */
    size_t body_len, body_cap;
    bool too_large;
    enum phase phase;             /* written by the server thread, and by the
                                     answering thread while suspended */
    bool suspend_now;             /* set by sl_http_suspend in the handler */
    int status;
    char *resp;                   /* owned */
    size_t resp_len;
    const char *ctype;
    char hname[MAX_EXTRA_HEADERS][32];
    char hval[MAX_EXTRA_HEADERS][128];
    int nheaders;
    void *state;
    void (*state_free)(void *);
};

const char *sl_http_method(const struct sl_http_req *r) { return r->method; }
const char *sl_http_path(const struct sl_http_req *r) { return r->path; }

const char *sl_http_header(const struct sl_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *sl_http_query(const struct sl_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *sl_http_body(const struct sl_http_req *r, size_t *len)
{
    *len = r->body_len;
    return r->body ? r->body : "";
}

bool sl_http_body_too_large(const struct sl_http_req *r) { return r->too_large; }

void sl_http_set_state(struct sl_http_req *r, void *state, void (*free_fn)(void *))
{
    r->state = state;
    r->state_free = free_fn;
}

void sl_http_add_header(struct sl_http_req *r, const char *name, const char *value)
{
    if (r->nheaders == MAX_EXTRA_HEADERS)
        return;
    sl_strlcpy(r->hname[r->nheaders], name, sizeof(r->hname[0]));
    sl_strlcpy(r->hval[r->nheaders], value, sizeof(r->hval[0]));
    r->nheaders++;
}

void sl_http_reply(struct sl_http_req *r, int status, const char *ctype,
                   const void *body, size_t len)
{
    free(r->resp);
    r->resp = malloc(len ? len : 1);
    if (r->resp) {
        memcpy(r->resp, body, len);
        r->resp_len = len;
        r->status = status;
        r->ctype = ctype;
    } else {
        r->resp_len = 0;
        r->status = 503;
        r->ctype = "application/json";
    }
    r->phase = PH_ANSWERED;
}

void sl_http_reply_json(struct sl_http_req *r, int status, json_t *json)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    size_t len;

    json_decref(json);
    if (!text) {
        static const char oom[] =
            "{\"error\":{\"code\":\"unavailable\",\"message\":\"out of memory\"}}";
        sl_http_reply(r, 503, "application/json", oom, sizeof(oom) - 1);
        return;
    }
    len = strlen(text);
    text[len] = '\n'; /* replaces the NUL; we pass the length */
    sl_http_reply(r, status, "application/json", text, len + 1);
    free(text);
}

void sl_http_reply_error(struct sl_http_req *r, int status, const char *code,
                         const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    json_t *err;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err = json_pack("{s:s, s:s}", "code", code, "message", msg);
    if (err && field && *field)
        json_object_set_new(err, "field", json_string(field));
    sl_http_reply_json(r, status, err ? json_pack("{s:o}", "error", err) : NULL);
}

void sl_http_suspend(struct sl_http_req *r)
{
    r->phase = PH_SUSPENDED;
    r->suspend_now = true;
    MHD_suspend_connection(r->conn);
}

void sl_http_resume(struct sl_http_req *r)
{
    MHD_resume_connection(r->conn);
}

static enum MHD_Result queue(struct sl_http_req *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_buffer(r->resp_len, r->resp,
                                           MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return MHD_NO;
    r->resp = NULL; /* the response owns it now */
    MHD_add_response_header(resp, "Content-Type", r->ctype);
    for (int i = 0; i < r->nheaders; i++)
        MHD_add_response_header(resp, r->hname[i], r->hval[i]);
    ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    r->phase = PH_SENT;
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct sl_http *s = cls;
    struct sl_http_req *r = *con_cls;

    (void)version;
    if (!r) {
        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        r->conn = conn;
        sl_strlcpy(r->method, method, sizeof(r->method));
        if (sl_strlcpy(r->path, url, sizeof(r->path)) >= sizeof(r->path))
            r->too_large = true; /* answered as 414-ish 400 below */
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        if (!r->too_large && r->body_len + n <= SL_HTTP_MAX_BODY) {
            if (r->body_len + n + 1 > r->body_cap) {
                size_t cap = r->body_cap ? r->body_cap : 1024;
                char *nb;
                while (cap < r->body_len + n + 1)
                    cap *= 2;
                if (!(nb = realloc(r->body, cap)))
                    return MHD_NO;
                r->body = nb;
                r->body_cap = cap;
            }
            memcpy(r->body + r->body_len, upload_data, n);
            r->body_len += n;
            r->body[r->body_len] = '\0';
        } else {
            r->too_large = true; /* keep draining; answer 413 at the end */
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->phase == PH_READING) {
        r->suspend_now = false;
        if (r->too_large)
            sl_http_reply_error(r, 413, "too_large", NULL,
                                "request larger than %u bytes", SL_HTTP_MAX_BODY);
        else
            s->handler(r, s->arg);
        if (r->suspend_now)
            return MHD_YES; /* answered later, after resume */
    }
    if (r->phase == PH_ANSWERED)
        return queue(r);
    if (r->phase == PH_SUSPENDED)
        return MHD_YES;
    /* The handler neither answered nor suspended: a bug; say so. */
    sl_http_reply_error(r, 500, "internal", NULL, "no answer");
    return queue(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct sl_http_req *r = *con_cls;

    (void)cls;
    (void)conn;
    (void)toe;
    if (!r)
        return;
    if (r->state_free)
        r->state_free(r->state);
    free(r->body);
    free(r->resp);
    free(r);
    *con_cls = NULL;
}

static int parse_listen(const char *listen, struct sockaddr_storage *ss,
                        char *why, size_t why_size)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    int64_t port;

    memset(ss, 0, sizeof(*ss));
    if (!colon || (size_t)(colon - listen) >= sizeof(host) ||
        sl_parse_int64(colon + 1, 1, 65535, &port) < 0) {
        snprintf(why, why_size, "--listen: expected HOST:PORT, got '%s'", listen);
        return -EINVAL;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    if (host[0] == '[') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        size_t n = strlen(host);
        if (n < 2 || host[n - 1] != ']') {
            snprintf(why, why_size, "--listen: bad IPv6 address in '%s'", listen);
            return -EINVAL;
        }
        host[n - 1] = '\0';
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1) {
            snprintf(why, why_size, "--listen: bad IPv6 address in '%s'", listen);
            return -EINVAL;
        }
        return AF_INET6;
    }
    {
        struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0)
            a4->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (strcmp(host, "localhost") == 0)
            a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) {
            snprintf(why, why_size, "--listen: bad IPv4 address in '%s'", listen);
            return -EINVAL;
        }
    }
    return AF_INET;
}

struct sl_http *sl_http_start(const char *listen, sl_http_handler h, void *arg,
                              char *why, size_t why_size)
{
    struct sl_http *s;
    struct sockaddr_storage ss;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    int family = parse_listen(listen, &ss, why, why_size);

    if (family < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    s->handler = h;
    s->arg = arg;
    s->quiesced_fd = -1;
    s->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &ss,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SL_HTTP_POOL_BYTES,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
    if (!s->d) {
        int saved = errno;
        snprintf(why, why_size, "cannot listen on %s: %s", listen,
                 strerror(saved ? saved : EADDRINUSE));
        free(s);
        errno = saved ? saved : EADDRINUSE;
        return NULL;
    }
    return s;
}

void sl_http_quiesce(struct sl_http *s)
{
    if (s && s->d && s->quiesced_fd < 0)
        s->quiesced_fd = MHD_quiesce_daemon(s->d);
}

void sl_http_stop(struct sl_http *s)
{
    if (!s)
        return;
    if (s->d)
        MHD_stop_daemon(s->d);
    if (s->quiesced_fd >= 0)
        close(s->quiesced_fd);
    free(s);
}
