/*
 * api_attach.c - GET /v1/jobs/{id}/attach: a client's terminal on an
 * interactive job (docs/api-contract.md, "Interactive sessions").
 *
 * The request is a WebSocket opening handshake (RFC 6455 4.2.1), checked
 * here in full; then the job is claimed in the relay (one client at a
 * time: 409), the engine checks who and when and records it (job.attach),
 * and its answer connects to the task's attach socket and switches
 * protocols: the connection goes to the relay (relay.c) with the shim's.
 * A refusal after the claim gives the claim up; a connection that closes
 * before its 101 went out too (the takeover with fd -1).
 */
#include "api_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../exec/attach.h"
#include "../util/ws.h"
#include "relay.h"

#define ATTACH_PROTOCOL "v1.attach.sluice" /* Sec-WebSocket-Protocol */

struct attach {
    struct sl_engine *e;
    struct sl_relay *relay;
    struct op_state *s;           /* the request's; freed with it */
    int64_t job;
    int shim;                     /* connected to the attach socket, or -1 */
    char accept[SL_WS_ACCEPT_LEN + 1];
};

static void attach_free(struct attach *at, bool claimed)
{
    if (at->shim >= 0)
        close(at->shim);
    if (claimed)
        sl_relay_unreserve(at->relay, at->job);
    free(at);
}

/* HTTP thread: the 101 is out (fd, and its TLS session over HTTPS), or
 * the connection closed first (-1). */
static void takeover(int fd, struct ssl_st *ssl, const char *early, size_t nearly, void *arg)
{
    struct attach *at = arg;

    if (fd < 0) {
        attach_free(at, true);
        return;
    }
    /* The relay takes both sockets, the SSL and the claim, even when it
     * fails. */
    sl_relay_add(at->relay, at->job, fd, ssl, at->shim, early, nearly);
    at->shim = -1;
    attach_free(at, false);
}

/* Connect to the task's attach socket (a Unix socket: at once or not). */
static int shim_connect(struct attach *at, int attempt, struct sl_error *err)
{
    struct sockaddr_un sa;
    char path[1200];
    size_t salen = 0;
    int dirfd = -1, rc;

    if ((rc = sl_engine_attach_path(at->e, at->job, 0, attempt, path, sizeof(path))) < 0 ||
        (rc = sl_attach_addr(path, &sa, &salen, &dirfd)) < 0)
        return sl_errorf(err, rc, "no attach socket: %s", strerror(-rc));
    if ((at->shim = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
        connect(at->shim, (struct sockaddr *)&sa, (socklen_t)salen) < 0)
        rc = sl_errorf(err, -errno, "its terminal is not reachable: %s", strerror(errno));
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}

/* The engine's answer (its thread, or the syncer's). */
static void attach_done(struct sl_op *op, void *arg)
{
    struct attach *at = arg;
    struct op_state *s = at->s;
    struct sl_error err = {0};

    if (op->status == 200 &&
        shim_connect(at, (int)json_integer_value(json_object_get(op->result, "attempt")),
                     &err) == 0) {
        sl_http_add_header(s->r, "Sec-WebSocket-Accept", at->accept);
        sl_http_add_header(s->r, "Sec-WebSocket-Protocol", ATTACH_PROTOCOL);
        sl_http_upgrade(s->r, "websocket", takeover, at);
    } else {
        if (op->status == 200)
            sl_http_reply_error(s->r, 503, "unavailable", NULL, "job %lld: %s",
                                (long long)at->job, err.text);
        else
            sl_http_reply_error(s->r, op->status, op->code ? op->code : "internal",
                                op->err.field, "%s", op->err.text);
        attach_free(at, true);
    }
    sl_api_metrics_count(s->metrics, s->row, sl_http_method(s->r), sl_http_status(s->r),
                         sl_mono_ns() - s->start_ns);
    sl_http_resume(s->r);
}

/* The opening handshake's headers; false when refused (answered). */
static bool handshake_ok(struct ctx *c, char accept[SL_WS_ACCEPT_LEN + 1])
{
    const char *up = sl_http_header(c->r, "Upgrade");
    const char *conn = sl_http_header(c->r, "Connection");
    const char *ver = sl_http_header(c->r, "Sec-WebSocket-Version");
    const char *key = sl_http_header(c->r, "Sec-WebSocket-Key");
    const char *proto = sl_http_header(c->r, "Sec-WebSocket-Protocol");

    if (!up || !sl_ws_token_in(up, "websocket") || !conn || !sl_ws_token_in(conn, "upgrade")) {
        sl_http_add_header(c->r, "Upgrade", "websocket");
        sl_api_refuse(c, 426, "upgrade_required", "Upgrade",
                      "attach is a WebSocket: send Upgrade: websocket and Connection: Upgrade");
        return false;
    }
    if (!ver || strcmp(ver, "13") != 0) {
        sl_http_add_header(c->r, "Sec-WebSocket-Version", "13");
        sl_api_refuse(c, 426, "upgrade_required", "Sec-WebSocket-Version",
                      "WebSocket version 13 only");
        return false;
    }
    if (!key || sl_ws_accept(key, accept) < 0) {
        sl_api_refuse(c, 400, "invalid", "Sec-WebSocket-Key", "must be the base64 of 16 bytes");
        return false;
    }
    if (!proto || !sl_ws_token_in(proto, ATTACH_PROTOCOL)) {
        sl_api_refuse(c, 400, "invalid", "Sec-WebSocket-Protocol", "must offer %s",
                      ATTACH_PROTOCOL);
        return false;
    }
    return true;
}

void sl_api_route_job_attach(struct ctx *c)
{
    struct attach *at;
    struct op_state *s;
    int rc;

    if (!(at = calloc(1, sizeof(*at)))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    at->e = c->a->e;
    at->relay = c->a->relay;
    at->job = c->id;
    at->shim = -1;
    if (!handshake_ok(c, at->accept)) {
        attach_free(at, false);
        return;
    }
    if ((rc = sl_relay_reserve(at->relay, at->job)) < 0) {
        attach_free(at, false);
        if (rc == -EBUSY)
            sl_api_refuse(c, 409, "conflict", NULL,
                          "job %lld has a client attached already (one at a time)",
                          (long long)c->id);
        else
            sl_http_reply_error(c->r, 503, "unavailable", NULL,
                                "too many sessions at once; try again");
        return;
    }
    if (!(s = sl_api_op_new(c, SL_OP_ATTACH))) {
        attach_free(at, true);
        return;
    }
    at->s = s;
    s->op.u.jobctl.job_id = c->id;
    s->op.done = attach_done;
    s->op.arg = at;
    sl_api_op_send(c, s);
}
