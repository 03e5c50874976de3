/*
 * api_audit.c - the audit log: search, export, verification against the chain and
 * a checkpoint, signed checkpoints, the verifier key; image scan import.
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../meter/meter.h"
#include "../policy/policy.h"
#include "../policy/roles.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/jfield.h"

/* ---- the audit log ---------------------------------------------------- */



static bool audit_filter(struct ctx *c, struct sl_audit_filter *f, int64_t max_limit)
{
    static const char *const keys[] = {"actor", "action", "object", "outcome"};
    const char **vals[] = {&f->actor, &f->action, &f->object, &f->outcome};

    memset(f, 0, sizeof(*f));
    f->limit = max_limit;
    for (size_t i = 0; i < SL_ARRAY_LEN(keys); i++) {
        const char *v = sl_http_query(c->r, keys[i]);
        if (v && strlen(v) > 256) {
            sl_http_reply_error(c->r, 400, "invalid", keys[i], "at most 256 bytes");
            return false;
        }
        *vals[i] = v && *v ? v : NULL;
    }
    return sl_api_query_int(c, "after", 0, INT64_MAX, &f->after) &&
           sl_api_query_int(c, "limit", 1, max_limit, &f->limit) &&
           sl_api_query_time(c, "from", &f->from_ms) && sl_api_query_time(c, "to", &f->to_ms);
}

struct audit_out {
    struct sl_buf *b;
    int64_t last, n;
    bool json;                    /* a JSON array, else lines */
};

static int audit_emit(void *arg, const struct sl_store_audit_row *row)
{
    struct audit_out *o = arg;

    if (o->json && o->n)
        sl_buf_add(o->b, ",", 1);
    sl_buf_add(o->b, row->line, row->len);
    if (!o->json)
        sl_buf_add(o->b, "\n", 1);
    o->last = row->seq;
    o->n++;
    return o->b->failed ? -ENOMEM : 0;
}

/* GET /v1/audit: records (each the stored canonical object) by actor,
 * action, object, outcome and time; pages of at most 10,000, oldest first
 * or with order=desc newest first; "next" is the seq to give as after
 * (ascending) or before (descending) for the next page. */
void sl_api_route_audit(struct ctx *c)
{
    struct sl_audit_filter f;
    struct sl_buf b;
    struct audit_out o = {&b, 0, 0, true};
    const char *order = sl_http_query(c->r, "order");
    int rc;

    if (!audit_filter(c, &f, 10000) ||
        !sl_api_query_int(c, "before", 0, INT64_MAX, &f.before))
        return;
    if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
        sl_http_reply_error(c->r, 400, "invalid", "order", "asc or desc");
        return;
    }
    f.newest_first = order && strcmp(order, "desc") == 0;
    if (!sl_http_query(c->r, "limit"))
        f.limit = 100;
    sl_buf_init(&b);
    sl_buf_adds(&b, "{\"records\":[");
    if ((rc = sl_store_audit_scan(c->a->rd, &f, audit_emit, &o)) < 0) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
    } else {
        if (o.n == f.limit)
            sl_buf_printf(&b, "],\"next\":%lld}\n", (long long)o.last);
        else
            sl_buf_adds(&b, "],\"next\":null}\n");
        sl_api_reply_text(c, &b);
    }
    sl_buf_fini(&b);
}

/* GET /v1/audit/export?after=&limit=: the log as JSON lines, exactly as
 * stored and hashed; at most 100,000 lines a page, the next page after the
 * seq in Sluice-Audit-Next. */
void sl_api_route_audit_export(struct ctx *c)
{
    struct sl_audit_filter f;
    struct sl_buf b;
    struct audit_out o = {&b, 0, 0, false};
    int rc;

    memset(&f, 0, sizeof(f));
    f.limit = 100000;
    if (!sl_api_query_int(c, "after", 0, INT64_MAX, &f.after) ||
        !sl_api_query_int(c, "limit", 1, 100000, &f.limit))
        return;
    sl_buf_init(&b);
    if ((rc = sl_store_audit_scan(c->a->rd, &f, audit_emit, &o)) < 0 || b.failed) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
    } else {
        char next[32];
        if (o.n == f.limit) {
            snprintf(next, sizeof(next), "%lld", (long long)o.last);
            sl_http_add_header(c->r, "Sluice-Audit-Next", next);
        }
        sl_http_reply(c->r, 200, "application/x-ndjson", b.data ? b.data : "", b.len);
    }
    sl_buf_fini(&b);
}

/* The live log checked: the chain by the verifier, and each row's index
 * columns against its line, so that a search (which uses the columns)
 * finds what the chain proves. */
struct audit_check {
    struct sl_audit_verifier v;
    int64_t bad_seq, bad_line;    /* a row whose columns differ; 0 = none */
    struct sl_error err;
};

static int audit_feed(void *arg, const struct sl_store_audit_row *row)
{
    struct audit_check *c = arg;
    struct sl_audit_index ix = {row->seq, row->at_ms, row->actor, row->action,
                                row->object, row->outcome};

    if (sl_audit_verifier_feed(&c->v, row->line, row->len) < 0 ||
        sl_audit_verifier_feed(&c->v, "\n", 1) < 0)
        return 1; /* stop at the first bad record */
    if (sl_audit_index_check(&ix, row->line, row->len, &c->err) < 0) {
        c->bad_seq = row->seq;
        c->bad_line = c->v.lines;
        return 1;
    }
    return 0;
}

/* GET /v1/audit/verify: the live log checked record by record, and against
 * the newest checkpoint the daemon signed. */
void sl_api_route_audit_verify(struct ctx *c)
{
    struct sl_audit_filter f = {0};
    struct audit_check chk;
    struct sl_audit_head ck = {0};
    struct sl_error err = {0};
    int64_t ck_at = 0;
    char *ck_text;
    bool have_ck = false, ok;
    int rc;
    json_t *res;
    char hex[65];

    ck_text = sl_store_audit_checkpoint_last(c->a->rd, &rc);
    if (ck_text) {
        if (sl_audit_checkpoint_verify(ck_text, strlen(ck_text), sl_engine_audit_vkey(c->a->e),
                                       &ck, &ck_at, &err) < 0) {
            free(ck_text);
            sl_http_reply_json(c->r, 200,
                               json_pack("{s:b, s:s}", "ok", 0, "error", err.text));
            return;
        }
        have_ck = true;
        free(ck_text);
    } else if (rc != -ENOENT) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    memset(&chk, 0, sizeof(chk));
    sl_audit_verifier_init(&chk.v, have_ck ? &ck : NULL);
    if ((rc = sl_store_audit_scan(c->a->rd, &f, audit_feed, &chk)) < 0) {
        sl_audit_verifier_fini(&chk.v);
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    /* A row whose columns differ from its line is the first failure. */
    ok = !chk.bad_seq && sl_audit_verifier_finish(&chk.v) == 0;
    sodium_bin2hex(hex, sizeof(hex), chk.v.head.hash, 32);
    res = json_pack("{s:b, s:I, s:s}", "ok", ok, "records", (json_int_t)chk.v.head.size,
                    "head", hex);
    if (have_ck) {
        char at[40], ckhex[65];
        sodium_bin2hex(ckhex, sizeof(ckhex), ck.hash, 32);
        json_object_set_new(res, "checkpoint",
                            json_pack("{s:I, s:s, s:s}", "size", (json_int_t)ck.size, "head",
                                      ckhex, "at", sl_time_rfc3339(ck_at, at, sizeof(at))));
    }
    if (chk.bad_seq)
        json_object_set_new(res, "error",
                            json_pack("{s:I, s:I, s:s}", "record", (json_int_t)chk.bad_seq,
                                      "line", (json_int_t)chk.bad_line, "message",
                                      chk.err.text));
    else if (!ok)
        json_object_set_new(res, "error",
                            json_pack("{s:I, s:I, s:s}", "record", (json_int_t)chk.v.bad_seq,
                                      "line", (json_int_t)chk.v.bad_line, "message",
                                      chk.v.why));
    sl_audit_verifier_fini(&chk.v);
    sl_http_reply_json(c->r, 200, res);
}

/* GET /v1/audit/checkpoint: the committed head, signed now. */
void sl_api_route_audit_checkpoint(struct ctx *c)
{
    struct sl_buf b;

    sl_buf_init(&b);
    if (sl_engine_audit_checkpoint(c->a->e, &b, NULL) < 0 || b.failed)
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "cannot sign a checkpoint");
    else
        sl_http_reply(c->r, 200, "text/plain; charset=utf-8", b.data, b.len);
    sl_buf_fini(&b);
}

void sl_api_route_audit_pubkey(struct ctx *c)
{
    struct sl_buf b;

    sl_buf_init(&b);
    sl_buf_printf(&b, "%s\n", sl_engine_audit_vkey(c->a->e));
    sl_http_reply(c->r, 200, "text/plain; charset=utf-8", b.data, b.len);
    sl_buf_fini(&b);
}

/* POST /v1/scans: a Trivy JSON report of an image (trivy image -f json);
 * its findings by severity are kept under the image's digest, for the
 * admission policy's scan gate. */
void sl_api_route_scan_import(struct ctx *c)
{
    struct sl_scan sc;
    struct sl_error err = {0};
    struct op_state *s;
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    int rc;

    if ((rc = sl_trivy_parse(body, len, &sc, &err)) < 0) {
        sl_api_reply_errno(c, rc, &err);
        return;
    }
    sc.at_ms = sl_now_ms();
    if (!(s = sl_api_op_new(c, SL_OP_SCAN)))
        return;
    snprintf(s->op.object, sizeof(s->op.object), "image:%s", sc.digest);
    if (!(s->op.u.scan.summary = sl_scan_json(&sc))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    sl_api_op_send(c, s);
}
