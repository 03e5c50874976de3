/*
 * api.c - the /v1 route table and what every route shares: routing,
 * authentication and the token cache, the one check of who may do what,
 * engine operations, errors. The handlers live one file per resource
 * (api_int.h lists them). See docs/api-contract.md and docs/openapi.yaml.
 *
 * Reads are answered on the server thread from the store's reader
 * connection (committed data only). Changes become engine operations; the
 * request is suspended until the engine has committed and answered it.
 * Every answer is counted for /metrics (metrics.c) by its route pattern,
 * once it is known: here for answers given at once, in op_done for the
 * suspended ones.
 */
#include "api.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sodium.h>
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
#include "api_int.h"
#include "metrics.h"
#include "relay.h"

/* ---- error mapping ---------------------------------------------------- */

/* One table maps errno values to HTTP statuses and error codes. */
static const struct {
    int err;
    int status;
    const char *code;
} errmap[] = {
    /* negated errno, HTTP status, error code */
    {-EINVAL, 400, "invalid"},
    {-EFBIG, 413, "too_large"},
    {-ENOENT, 404, "not_found"},
    {-EPERM, 403, "forbidden"},
    {-EACCES, 401, "unauthorized"},
    {-EALREADY, 409, "conflict"},
    {-ENOMEM, 503, "unavailable"},
};

/* ---- engine operations ------------------------------------------------ */

static void op_state_free(void *p)
{
    struct op_state *s = p;
    if (!s)
        return;
    sl_op_fini(&s->op);
    free(s);
}

/* Engine thread: the change is committed (or refused); answer and resume. */
static void op_done(struct sl_op *op, void *arg)
{
    struct op_state *s = arg;

    if (op->status >= 200 && op->status < 300 && op->body) {
        sl_http_reply(s->r, op->status, "application/json", op->body,
                      op->body_len);
    } else if (op->status >= 200 && op->status < 300) {
        sl_http_reply_json(s->r, op->status, op->result);
        op->result = NULL;
    } else {
        sl_http_reply_error(s->r, op->status, op->code ? op->code : "internal",
                            op->err.field, "%s", op->err.text);
    }
    sl_api_metrics_count(s->metrics, s->row, sl_http_method(s->r), sl_http_status(s->r),
                         sl_mono_ns() - s->start_ns);
    sl_http_resume(s->r);
}

/* The audit object of the request: "job:42", "user:alice", ... */
static void request_object(const struct ctx *c, char *out, size_t size)
{
    if (!c->object)
        out[0] = '\0';
    else if (c->id)
        snprintf(out, size, "%s:%lld", c->object, (long long)c->id);
    else
        snprintf(out, size, "%s:%s", c->object, c->name);
}

struct op_state *sl_api_op_new(struct ctx *c, enum sl_op_kind kind)
{
    struct op_state *s = calloc(1, sizeof(*s));
    if (!s) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    s->op.kind = kind;
    s->op.who = c->who;
    s->op.action = c->action;
    request_object(c, s->op.object, sizeof(s->op.object));
    s->op.done = op_done;
    s->op.arg = s;
    s->r = c->r;
    s->metrics = c->a->metrics;
    s->row = c->row;
    s->start_ns = c->start_ns;
    sl_http_set_state(c->r, s, op_state_free);
    return s;
}

void sl_api_op_send(struct ctx *c, struct op_state *s)
{
    c->suspended = true;
    sl_http_suspend(c->r);
    sl_engine_submit(c->a->e, &s->op);
}


/* Refuse the request. A state-changing request of a known caller is
 * refused through the engine, so that the refusal is in the audit log
 * before the answer goes out; anything else is answered at once. */
void sl_api_refuse(struct ctx *c, int status, const char *code, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void sl_api_refuse(struct ctx *c, int status, const char *code, const char *field,
                   const char *fmt, ...)
{
    struct op_state *s;
    char text[sizeof(((struct sl_error *)0)->text)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (!c->action || !c->who.user[0] || !(s = sl_api_op_new(c, SL_OP_AUDIT))) {
        if (c->action && c->who.user[0])
            return; /* sl_api_op_new answered 503 */
        sl_http_reply_error(c->r, status, code, field, "%s", text);
        return;
    }
    s->op.action = c->action;
    request_object(c, s->op.object, sizeof(s->op.object));
    s->op.status = status;
    s->op.code = code;
    sl_strlcpy(s->op.err.text, text, sizeof(s->op.err.text));
    if (field)
        sl_strlcpy(s->op.err.field, field, sizeof(s->op.err.field));
    sl_api_op_send(c, s);
}

void sl_api_reply_errno(struct ctx *c, int rc, const struct sl_error *err)
{
    const char *text = err && err->text[0] ? err->text : strerror(-rc);
    const char *field = err && err->field[0] ? err->field : NULL;

    for (size_t i = 0; i < SL_ARRAY_LEN(errmap); i++)
        if (errmap[i].err == rc) {
            sl_api_refuse(c, errmap[i].status, errmap[i].code, field, "%s", text);
            return;
        }
    sl_http_reply_error(c->r, 500, "internal", NULL, "%s", text);
}

/* ---- helpers ---------------------------------------------------------- */

bool sl_api_can_see_team(const struct ctx *c, const char *team)
{
    return sl_api_all_teams(&c->who) || (team && strcmp(team, c->who.team) == 0);
}

/* Answer 200 with the text in 'b' wrapped as prefix + b + suffix. */
void sl_api_reply_text(struct ctx *c, struct sl_buf *b)
{
    if (b->failed)
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
    else
        sl_http_reply(c->r, 200, "application/json", b->data, b->len);
}

/* The caller's role (src/policy/roles.h: the roles and their scopes). */
enum sl_role sl_api_role_of(const struct sl_principal *p)
{
    return sl_role_of(p->role, p->job_id);
}

bool sl_api_all_teams(const struct sl_principal *p)
{
    return sl_role_all_teams(sl_api_role_of(p));
}

/* ---- query parameters and bodies ------------------------------------- */

bool sl_api_query_bool(struct ctx *c, const char *key, bool *out)
{
    const char *v = sl_http_query(c->r, key);

    *out = false;
    if (!v || !*v || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        return true;
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
        *out = true;
        return true;
    }
    sl_http_reply_error(c->r, 400, "invalid", key, "must be true or false, got '%.20s'", v);
    return false;
}


bool sl_api_query_int(struct ctx *c, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = sl_http_query(c->r, key);

    if (!v || !*v)
        return true;
    if (sl_parse_int64(v, lo, hi, out) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", key,
                            "must be an integer from %lld to %lld, got '%.40s'",
                            (long long)lo, (long long)hi, v);
        return false;
    }
    return true;
}


bool sl_api_query_time(struct ctx *c, const char *key, int64_t *out)
{
    const char *v = sl_http_query(c->r, key);

    if (!v || !*v)
        return true;
    if (sl_parse_when_ms(v, out) < 0) {
        sl_http_reply_error(c->r, 400, "invalid", key,
                            "must be an RFC 3339 time or a date (2026-12-01), got '%.40s'",
                            v);
        return false;
    }
    return true;
}


/* Member 'key' of 'o' as a string; "" when it is not one. */
const char *sl_api_jstr(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}


json_t *sl_api_body_json(struct ctx *c)
{
    size_t len;
    const char *body = sl_http_body(c->r, &len);
    json_error_t jerr;
    json_t *doc = len ? sl_jf_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;

    if (len && !doc && sl_jf_oom(&jerr)) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        sl_api_refuse(c, 400, "invalid", NULL, "body must be a JSON object%s%s",
               len ? ": " : "", len ? jerr.text : "");
        return NULL;
    }
    return doc;
}

/* ---- routing ---------------------------------------------------------- */

/* Media types of request bodies. A route names the kinds it reads; a
 * POST, PUT or PATCH with a body of any other type, or of none, is 415
 * before its handler runs (docs/api-contract.md). */
enum media { MT_NONE = 0, MT_JSON = 1u << 0, MT_YAML = 1u << 1, MT_CSV = 1u << 2 };
static const struct {
    unsigned kind;
    const char *type;
} media_types[] = {
    /* kind, media type (the first of each kind is the one documented) */
    {MT_JSON, "application/json"},
    {MT_YAML, "application/yaml"},
    {MT_YAML, "application/x-yaml"},
    {MT_YAML, "text/yaml"},
    {MT_YAML, "text/x-yaml"},
    {MT_CSV, "text/csv"},
};

/* A route that changes state: the scope it needs and its audit action
 * are its operation's (src/engine/ops.c), never written twice. */
#define CHANGE(kind) SC_OF_OP, (int)(kind)
#define READ(scope) (scope), -1
#define SC_OF_OP (~0u)

/* The route table. Columns: method, path pattern ({id} = a positive
 * integer, {name} = an object name, {ref} = a reference such as
 * NAME@VERSION or model:NAME@VERSION, {*} = the rest of the path, any or
 * none, at the end only), handler, the scope a read needs
 * (SL_SC_PUBLIC = no token) or CHANGE(the kind of operation it submits to
 * the engine: its refusals are recorded too), the kind of object its
 * {id}/{name} names in the record, and the media types of the body it
 * reads (MT_NONE: none). */
static const struct route {
    const char *method;
    const char *pattern;
    route_fn fn;
    unsigned scope;
    int op;                       /* enum sl_op_kind; -1 = a read */
    const char *object;
    unsigned body;
} routes[] = {
    {"GET", "/healthz", sl_api_route_healthz, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"GET", "/metrics", sl_api_route_metrics, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    /* the web UI (api_ui.c): /ui/{*} before /ui, which also matches "/ui/" */
    {"GET", "/ui/{*}", sl_api_route_ui, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"GET", "/ui", sl_api_route_ui, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"GET", "/v1/status", sl_api_route_status, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"GET", "/v1/whoami", sl_api_route_whoami, READ(SL_SC_SELF), NULL, MT_NONE},
    {"GET", "/v1/login", sl_api_route_login_info, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"POST", "/v1/login", sl_api_route_login, CHANGE(SL_OP_LOGIN), "user", MT_JSON},
    {"POST", "/v1/login/refresh", sl_api_route_login_refresh, READ(SL_SC_SELF), NULL, MT_NONE},
    {"POST", "/v1/login/device", sl_api_route_login_device, READ(SL_SC_PUBLIC), NULL, MT_NONE},
    {"POST", "/v1/jobs", sl_api_route_job_submit, CHANGE(SL_OP_SUBMIT), NULL, MT_JSON | MT_YAML},
    {"GET", "/v1/jobs", sl_api_route_job_list, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/jobs/{id}", sl_api_route_job_get, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"DELETE", "/v1/jobs/{id}", sl_api_route_job_cancel, CHANGE(SL_OP_CANCEL), "job", MT_NONE},
    {"DELETE", "/v1/arrays/{id}", sl_api_route_array_cancel, CHANGE(SL_OP_ARRAY_CANCEL), "array", MT_NONE},
    {"POST", "/v1/jobs/{id}/hold", sl_api_route_job_ctl, CHANGE(SL_OP_HOLD), "job", MT_NONE},
    {"POST", "/v1/jobs/{id}/release", sl_api_route_job_ctl, CHANGE(SL_OP_RELEASE), "job", MT_NONE},
    {"POST", "/v1/jobs/{id}/requeue", sl_api_route_job_ctl, CHANGE(SL_OP_REQUEUE), "job", MT_NONE},
    {"PATCH", "/v1/jobs/{id}", sl_api_route_job_update, CHANGE(SL_OP_UPDATE), "job", MT_JSON},
    {"GET", "/v1/jobs/{id}/events", sl_api_route_job_events, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/jobs/{id}/logs", sl_api_route_job_logs, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/jobs/{id}/attach", sl_api_route_job_attach, CHANGE(SL_OP_ATTACH), "job", MT_NONE},
    {"GET", "/v1/jobs/{id}/attempts", sl_api_route_job_attempts, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/jobs/{id}/explain", sl_api_route_job_explain, READ(SL_SC_JOBS_READ), NULL, MT_NONE},
    {"GET", "/v1/nodes", sl_api_route_nodes, READ(SL_SC_READ), NULL, MT_NONE},
    {"POST", "/v1/nodes/{name}/drain", sl_api_route_node_state, CHANGE(SL_OP_NODE_DRAIN), "node", MT_JSON},
    {"POST", "/v1/nodes/{name}/cordon", sl_api_route_node_state, CHANGE(SL_OP_NODE_CORDON), "node", MT_JSON},
    {"POST", "/v1/nodes/{name}/uncordon", sl_api_route_node_state, CHANGE(SL_OP_NODE_UNCORDON), "node", MT_JSON},
    {"POST", "/v1/apply", sl_api_route_apply, CHANGE(SL_OP_APPLY), NULL, MT_JSON | MT_YAML},
    {"GET", "/v1/teams", sl_api_route_teams, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/queues", sl_api_route_queues, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/priorityclasses", sl_api_route_pclasses, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/policies", sl_api_route_policies, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/datasets", sl_api_route_datasets, READ(SL_SC_READ), NULL, MT_NONE},
    {"POST", "/v1/users/{name}/tokens", sl_api_route_token_create, CHANGE(SL_OP_TOKEN), "user", MT_JSON},
    {"GET", "/v1/tokens", sl_api_route_tokens, READ(SL_SC_SELF), NULL, MT_NONE},
    {"DELETE", "/v1/tokens/{id}", sl_api_route_token_revoke, CHANGE(SL_OP_REVOKE), "token", MT_NONE},
    {"GET", "/v1/report", sl_api_route_report, READ(SL_SC_REPORTS), NULL, MT_NONE},
    {"GET", "/v1/report/utilisation", sl_api_route_report_util, READ(SL_SC_REPORTS), NULL, MT_NONE},
    {"GET", "/v1/history", sl_api_route_history, READ(SL_SC_REPORTS), NULL, MT_NONE},
    {"GET", "/v1/budgets", sl_api_route_budgets, READ(SL_SC_REPORTS), NULL, MT_NONE},
    {"POST", "/v1/carbon/{name}", sl_api_route_carbon, CHANGE(SL_OP_CARBON), "site", MT_CSV},
    {"POST", "/v1/scans", sl_api_route_scan_import, CHANGE(SL_OP_SCAN), NULL, MT_JSON},
    {"GET", "/v1/scans", sl_api_route_scans, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/audit", sl_api_route_audit, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/export", sl_api_route_audit_export, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/verify", sl_api_route_audit_verify, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/checkpoint", sl_api_route_audit_checkpoint, READ(SL_SC_AUDIT), NULL, MT_NONE},
    {"GET", "/v1/audit/pubkey", sl_api_route_audit_pubkey, READ(SL_SC_SELF), NULL, MT_NONE},
    {"POST", "/v1/models", sl_api_route_model_register, CHANGE(SL_OP_MODEL), NULL, MT_JSON},
    {"GET", "/v1/models", sl_api_route_models, READ(SL_SC_LINEAGE), NULL, MT_NONE},
    {"GET", "/v1/models/{ref}", sl_api_route_model_get, READ(SL_SC_LINEAGE), NULL, MT_NONE},
    {"POST", "/v1/models/{ref}/stage", sl_api_route_model_stage, CHANGE(SL_OP_STAGE), "model", MT_JSON},
    {"GET", "/v1/lineage/{ref}", sl_api_route_lineage, READ(SL_SC_LINEAGE), NULL, MT_NONE},
    {"GET", "/v1/objects/{kind}", sl_api_route_objects, READ(SL_SC_READ), NULL, MT_NONE},
    {"GET", "/v1/objects/{kind}/{ref}", sl_api_route_object_get, READ(SL_SC_READ), NULL, MT_NONE},
    {"DELETE", "/v1/objects/{kind}/{ref}", sl_api_route_object_delete, CHANGE(SL_OP_DELETE), "object", MT_NONE},
};

/* Whether the request's body has a media type its route reads. Only a
 * POST, PUT or PATCH with a non-empty body is checked, here once for every
 * route rather than in each handler; a type matches with any parameters
 * ("application/json; charset=utf-8"), case-insensitively. When it does
 * not, answers 415 through sl_api_refuse(), so that a known caller's refused
 * change is recorded as every other refusal is. */
static bool body_type_ok(struct ctx *c, const struct route *rt)
{
    const char *method = sl_http_method(c->r), *ct = sl_http_header(c->r, "Content-Type");
    char want[96] = "", shown[64];
    size_t len, o = 0;
    unsigned listed = 0;

    sl_http_body(c->r, &len);
    if (len == 0 || (strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0 &&
                     strcmp(method, "PATCH") != 0))
        return true;
    for (size_t i = 0; ct && i < SL_ARRAY_LEN(media_types); i++) {
        size_t n = strlen(media_types[i].type);
        const char *p = ct + n;
        if (!(rt->body & media_types[i].kind) || strncasecmp(ct, media_types[i].type, n) != 0)
            continue;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == ';')
            return true;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(media_types) && o < sizeof(want); i++) {
        if (!(rt->body & media_types[i].kind) || (listed & media_types[i].kind))
            continue;
        listed |= media_types[i].kind;
        o += (size_t)snprintf(want + o, sizeof(want) - o, "%s%s", o ? " or " : "",
                              media_types[i].type);
    }
    if (!rt->body)
        sl_api_refuse(c, 415, "unsupported_media_type", NULL, "%s %s takes no body", method,
               rt->pattern);
    else if (!ct || !*ct)
        sl_api_refuse(c, 415, "unsupported_media_type", NULL,
               "a request body needs a Content-Type; send %s", want);
    else
        sl_api_refuse(c, 415, "unsupported_media_type", NULL,
               "Content-Type %s is not accepted by %s %s; send %s",
               (sl_text_show(shown, sizeof(shown), ct, strlen(ct), 48), shown), method,
               rt->pattern, want);
    return false;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode %XX escapes in place (clients escape '@' and ':'); a decoded
 * '/' or NUL is refused. */
static int pct_decode(char *s)
{
    char *w = s;

    for (; *s; s++) {
        int v;
        if (*s != '%') {
            *w++ = *s;
            continue;
        }
        if (hexval(s[1]) < 0 || hexval(s[2]) < 0)
            return -1;
        v = hexval(s[1]) * 16 + hexval(s[2]);
        if (v == 0 || v == '/')
            return -1;
        *w++ = (char)v;
        s += 2;
    }
    *w = '\0';
    return 0;
}

static bool ref_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 127)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || strchr("._@:-", *s)))
            return false;
    return true;
}

/* Match 'path' against 'pattern', filling c->id / c->name / c->kind. */
static bool match(const char *pattern, const char *path, struct ctx *c)
{
    while (*pattern && *path) {
        if (strcmp(pattern, "{*}") == 0)
            return true;
        if (strncmp(pattern, "{kind}", 6) == 0) {
            /* a kind word: letters, '-' and '_' (sl_manifest_kind_parse) */
            size_t n = strcspn(path, "/");
            if (n == 0 || n >= sizeof(c->kind) || strspn(path, "abcdefghijklmnopqrstuvwxyz"
                                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_") < n)
                return false;
            memcpy(c->kind, path, n);
            c->kind[n] = '\0';
            pattern += 6;
            path += n;
            continue;
        }
        if (strncmp(pattern, "{id}", 4) == 0 || strncmp(pattern, "{name}", 6) == 0 ||
            strncmp(pattern, "{ref}", 5) == 0) {
            bool is_id = pattern[1] == 'i', is_ref = pattern[1] == 'r';
            const char *end = strchr(path, '/');
            size_t n = end ? (size_t)(end - path) : strlen(path);
            char seg[128];
            if (n == 0 || n >= sizeof(seg))
                return false;
            memcpy(seg, path, n);
            seg[n] = '\0';
            if (!is_id && pct_decode(seg) < 0)
                return false;
            if (is_id) {
                if (sl_parse_int64(seg, 1, INT64_MAX, &c->id) < 0)
                    return false;
            } else {
                if (is_ref ? !ref_valid(seg) : !sl_name_valid(seg))
                    return false;
                sl_strlcpy(c->name, seg, sizeof(c->name));
            }
            pattern += is_id ? 4 : is_ref ? 5 : 6;
            path += n;
            continue;
        }
        if (*pattern != *path)
            return false;
        pattern++;
        path++;
    }
    return (*pattern == '\0' || strcmp(pattern, "{*}") == 0) &&
           (*path == '\0' || strcmp(path, "/") == 0);
}

/* The caller named by a verified TLS client certificate (its subject CN):
 * that User of the catalog, with its team and role. -EACCES when the
 * catalog has no such user. */
static int authenticate_cert(struct ctx *c, const char *user)
{
    json_t *arr = sl_engine_objects_json(c->a->e, c->a->rd, SL_KIND_USER, user);
    json_t *spec = json_object_get(json_array_get(arr, 0), "spec");
    const char *team = json_string_value(json_object_get(spec, "team")),
               *role = json_string_value(json_object_get(spec, "role")),
               *unix_user = json_string_value(json_object_get(spec, "unixUser"));
    int rc = -EACCES;

    if (team && role) {
        memset(&c->who, 0, sizeof(c->who));
        sl_strlcpy(c->who.user, user, sizeof(c->who.user));
        sl_strlcpy(c->who.team, team, sizeof(c->who.team));
        sl_strlcpy(c->who.role, role, sizeof(c->who.role));
        sl_strlcpy(c->who.unix_user, unix_user ? unix_user : "", sizeof(c->who.unix_user));
        rc = 0;
    }
    json_decref(arr);
    return rc;
}

static int authenticate(struct ctx *c)
{
    const char *h = sl_http_header(c->r, "Authorization");
    unsigned char hash[32];
    struct token_slot *slot;
    struct sl_token_who w;
    uint64_t epoch = sl_engine_token_epoch(c->a->e);
    int64_t now;
    size_t n;

    /* A bearer token wins; without one, a client certificate the server
     * verified (--tls-client-ca) names the user. */
    if (!h && sl_http_peer_user(c->r))
        return authenticate_cert(c, sl_http_peer_user(c->r));
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return -EACCES;
    h += 7;
    while (*h == ' ')
        h++;
    n = strlen(h);
    if (n == 0 || n > 256)
        return -EACCES;
    if (epoch != c->a->cache_epoch) {
        /* a token was revoked: nothing cached may outlive it */
        memset(c->a->cache, 0, sizeof(c->a->cache));
        c->a->cache_epoch = epoch;
    }
    crypto_generichash(hash, sizeof(hash), (const unsigned char *)h, n, NULL, 0);
    now = sl_now_ms();
    slot = &c->a->cache[hash[0] % TOKEN_CACHE_SLOTS];
    if (slot->until_ms > now && memcmp(slot->hash, hash, sizeof(hash)) == 0) {
        c->who = slot->who;
        return 0;
    }
    if (sl_store_token_lookup(c->a->rd, hash, now, &w) < 0)
        return -EACCES;
    memset(&c->who, 0, sizeof(c->who));
    sl_strlcpy(c->who.user, w.user, sizeof(c->who.user));
    sl_strlcpy(c->who.team, w.team, sizeof(c->who.team));
    sl_strlcpy(c->who.role, w.role, sizeof(c->who.role));
    sl_strlcpy(c->who.unix_user, w.unix_user, sizeof(c->who.unix_user));
    c->who.job_id = w.job_id;
    c->who.token_id = w.token_id;
    memcpy(slot->hash, hash, sizeof(hash));
    slot->who = c->who;
    slot->until_ms = now + TOKEN_CACHE_MS;
    return 0;
}

static void dispatch(struct ctx *c);

void sl_api_handle(struct sl_http_req *r, void *arg)
{
    struct ctx c = {.a = arg, .r = r, .row = -1, .op = -1, .start_ns = sl_mono_ns()};

    dispatch(&c);
    /* A suspended request may be answered, counted and freed already. */
    if (!c.suspended)
        sl_api_metrics_count(c.a->metrics, c.row, sl_http_method(r), sl_http_status(r),
                             sl_mono_ns() - c.start_ns);
}

/* Find the route, check the caller, call the handler. */
static void dispatch(struct ctx *c)
{
    struct sl_http_req *r = c->r;
    const char *method = sl_http_method(r), *path = sl_http_path(r);
    const struct route *rt = NULL;
    unsigned scope;

    for (size_t i = 0; i < SL_ARRAY_LEN(routes); i++) {
        if (!match(routes[i].pattern, path, c))
            continue;
        if (c->row < 0)
            c->row = (int)i; /* a 405 is counted under the path's pattern */
        /* A HEAD is a GET of a read without its body (RFC 9110 9.3.2;
         * the HTTP layer drops it): never of a change such as attach. */
        if (strcmp(routes[i].method, method) == 0 ||
            (strcmp(method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0 &&
             routes[i].op < 0)) {
            rt = &routes[i];
            c->row = (int)i;
            break;
        }
    }
    if (!rt) {
        if (c->row >= 0)
            sl_http_reply_error(r, 405, "method_not_allowed", NULL,
                                "%s is not allowed on %s", method, path);
        else
            sl_http_reply_error(r, 404, "not_found", NULL, "no such route: %s %s",
                                method, path);
        return;
    }
    c->action = rt->op >= 0 ? sl_op_action((enum sl_op_kind)rt->op) : NULL;
    c->op = rt->op;
    c->object = rt->object;
    scope = rt->op >= 0 ? sl_op_scope((enum sl_op_kind)rt->op) : rt->scope;
    if (scope != SL_SC_PUBLIC) {
        enum sl_role role;
        if (authenticate(c) < 0) {
            sl_http_add_header(r, "WWW-Authenticate", "Bearer");
            sl_http_reply_error(r, 401, "unauthorized", NULL,
                                "a valid bearer token is required");
            return;
        }
        role = sl_api_role_of(&c->who);
        /* The one check of who may do what: the route's scope, or its
         * operation's. The engine's handlers apply only team rules. */
        if (!sl_role_may(role, scope)) {
            sl_api_refuse(c, 403, "forbidden", NULL, "role %s may not %s %s",
                   role == SL_ROLE_JOB ? "job" : c->who.role, method, rt->pattern);
            return;
        }
    }
    if (!body_type_ok(c, rt))
        return;
    /* A /v1 read's answer is built whole and is the caller's own: it gets
     * an ETag, and a poll that has it already gets 304 without the body
     * (docs/api-contract.md, Caching). */
    if (rt->op < 0 && strncmp(rt->pattern, "/v1/", 4) == 0)
        sl_http_use_etag(r);
    rt->fn(c);
}

/* ---- lifecycle -------------------------------------------------------- */

struct sl_api *sl_api_create(struct sl_engine *e, struct sl_error *err)
{
    struct sl_api *a = calloc(1, sizeof(*a));

    if (!a) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    a->e = e;
    {
        const char *patterns[SL_ARRAY_LEN(routes)];
        for (size_t i = 0; i < SL_ARRAY_LEN(routes); i++)
            patterns[i] = routes[i].pattern;
        if (!(a->metrics = sl_api_metrics_create(patterns, (int)SL_ARRAY_LEN(routes),
                                                 SLUICE_VERSION))) {
            free(a);
            sl_errorf(err, -ENOMEM, "out of memory");
            return NULL;
        }
    }
    if (!(a->rd = sl_store_open(sl_engine_store_path(e), false, false, err))) {
        sl_api_metrics_destroy(a->metrics);
        free(a);
        return NULL;
    }
    if (!(a->relay = sl_relay_create())) {
        sl_errorf(err, -errno, "attach relay: %s", strerror(errno));
        sl_api_destroy(a);
        return NULL;
    }
    return a;
}

void sl_api_destroy(struct sl_api *a)
{
    if (!a)
        return;
    sl_login_destroy(a->login);
    sl_relay_destroy(a->relay);
    sl_store_close(a->rd);
    sl_api_metrics_destroy(a->metrics);
    free(a);
}

void sl_api_quiesce(struct sl_api *a)
{
    if (a)
        sl_login_stop(a->login);
}

int sl_api_set_identity(struct sl_api *a, const struct sl_ident *id, struct sl_error *err)
{
    if (!(a->login = sl_login_create(a->e, id, err)))
        return -ENOMEM;
    a->ident = id;
    return 0;
}

void sl_api_set_ha(struct sl_api *a, json_t *(*status)(void *arg),
                   void (*metrics)(void *arg, struct sl_buf *b), void *arg)
{
    a->ha_status = status;
    a->ha_metrics = metrics;
    a->ha_arg = arg;
}
