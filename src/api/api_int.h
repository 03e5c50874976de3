/*
 * api_int.h - what the files of the API share: the API's state, a
 * request's context, engine operations in flight, the helpers every
 * handler uses, and the handlers the route table (api.c) names. Not a
 * public header: only src/api/api*.c include it.
 *
 * The files, one per resource:
 *   api.c          the route table, routing, authentication, the token
 *                  cache, engine operations, errors; start here
 *   api_jobs.c     jobs: submit, list, get, events, cancel, logs, explain
 *   api_attach.c   a terminal on an interactive job (with relay.c)
 *   api_catalog.c  health, whoami, nodes, teams, queues, classes, apply,
 *                  policies, datasets, scans, models (lists)
 *   api_meter.c    reports, utilisation, history, budgets, carbon intensity
 *   api_tokens.c   tokens
 *   api_login.c    sign-in through LDAP or OIDC: a worker pool, the
 *                  failure limits, the engine's SL_OP_LOGIN
 *   api_audit.c    the audit log, its export, verification, checkpoints,
 *                  scan import
 *   api_models.c   models (one, register, stage) and lineage
 *   api_objects.c  the catalog's objects by kind: list, one, delete
 *   api_ui.c       the web UI's files (src/ui/assets.h) under /ui/
 *   metrics.c      GET /metrics
 *
 * Everything runs on the HTTP server's thread.
 */
#ifndef SL_API_INT_H
#define SL_API_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "../meter/meter.h"
#include "../policy/roles.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "api.h"
#include "metrics.h"

#define LOG_READ_MAX (1 << 20)

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0" /* as in src/daemon/main.c */
#endif

/* Resolved tokens are cached briefly so that a busy client does not cost a
 * store read per request; a change to a token or user is seen within
 * TOKEN_CACHE_MS. */
#define TOKEN_CACHE_SLOTS 64
#define TOKEN_CACHE_MS 2000

struct token_slot {
    unsigned char hash[32];
    int64_t until_ms;             /* 0 = empty */
    struct sl_principal who;
};

struct sl_api {
    struct sl_engine *e;
    struct sl_api_metrics *metrics;
    struct sl_store *rd;          /* reader; server thread only */
    struct token_slot cache[TOKEN_CACHE_SLOTS]; /* server thread only */
    uint64_t cache_epoch;         /* the engine's token epoch it holds */
    struct sl_relay *relay;       /* interactive sessions (relay.h) */
    /* several daemons on one store (sl_api_set_ha); NULL = one daemon */
    json_t *(*ha_status)(void *arg);
    void (*ha_metrics)(void *arg, struct sl_buf *b);
    void *ha_arg;
    /* sign-in through an identity provider (api_login.c); NULL = none */
    const struct sl_ident *ident;
    struct sl_login *login;
};

struct ctx {
    struct sl_api *a;
    struct sl_http_req *r;
    struct sl_principal who;
    int64_t id;                   /* {id} in the path */
    char name[128];               /* {name} or {ref} in the path */
    char kind[32];                /* {kind} in the path */
    int row;                      /* route table row; -1 = none matched */
    const char *action;           /* the route's audit action; NULL = a read */
    int op;                       /* the route's enum sl_op_kind; -1 = a read */
    const char *object;           /* what {id}/{name} names ("job", ...) */
    int64_t start_ns;             /* when handling began (mono) */
    bool suspended;               /* answered later, by op_done */
};

typedef void (*route_fn)(struct ctx *c);

struct op_state {
    struct sl_op op;
    struct sl_http_req *r;
    struct sl_api_metrics *metrics;
    int row;                      /* for the request counters */
    int64_t start_ns;
};

/* ---- helpers (api.c) -------------------------------------------------- */

/* The caller's role (src/policy/roles.h), and whether it sees every team. */
enum sl_role sl_api_role_of(const struct sl_principal *p);
bool sl_api_all_teams(const struct sl_principal *p);
/* Whether the caller may see what belongs to 'team' (NULL: nothing). */
bool sl_api_can_see_team(const struct ctx *c, const char *team);

/* An engine operation for this request (answers 503 itself and returns
 * NULL when out of memory), and sending it: the request is suspended
 * until the engine answers it. */
struct op_state *sl_api_op_new(struct ctx *c, enum sl_op_kind kind);
void sl_api_op_send(struct ctx *c, struct op_state *s);

/* Refuse the request. A state-changing request of a known caller is
 * refused through the engine, so that the refusal is in the audit log
 * before the answer goes out; anything else is answered at once. */
void sl_api_refuse(struct ctx *c, int status, const char *code, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Answer a parser's refusal 'rc' with its text and field. */
void sl_api_reply_errno(struct ctx *c, int rc, const struct sl_error *err);
/* Answer 200 with the JSON text in 'b' (503 when it failed to grow). */
void sl_api_reply_text(struct ctx *c, struct sl_buf *b);

/* Query parameters; each answers 400 itself, naming the parameter, and
 * returns false when the value is bad. Absent: *out unchanged. */
bool sl_api_query_bool(struct ctx *c, const char *key, bool *out);
bool sl_api_query_int(struct ctx *c, const char *key, int64_t lo, int64_t hi, int64_t *out);
bool sl_api_query_time(struct ctx *c, const char *key, int64_t *out);
/* A string member of 'o', or NULL. */
const char *sl_api_jstr(const json_t *o, const char *key);
/* The request body as a JSON object (answers 400 itself, NULL). */
json_t *sl_api_body_json(struct ctx *c);

/* ---- metering (api_meter.c) ----------------------------------------- */

/* A usage scan feeding a report (sl_store_usage_scan's callback
 * sl_api_report_row, with the carbon hours that price its intervals). */
struct sl_api_report_scan {
    struct sl_report *r;
    const struct sl_carbon_hours *hours;
    size_t nhours;
};
int sl_api_report_row(void *arg, const struct sl_usage_row *row);

/* ---- the handlers of the route table ---------------------------------- */

void sl_api_route_apply(struct ctx *c);
void sl_api_route_objects(struct ctx *c);
void sl_api_route_object_get(struct ctx *c);
void sl_api_route_object_delete(struct ctx *c);
void sl_api_route_audit(struct ctx *c);
void sl_api_route_audit_checkpoint(struct ctx *c);
void sl_api_route_audit_export(struct ctx *c);
void sl_api_route_audit_pubkey(struct ctx *c);
void sl_api_route_audit_verify(struct ctx *c);
void sl_api_route_budgets(struct ctx *c);
void sl_api_route_carbon(struct ctx *c);
void sl_api_route_datasets(struct ctx *c);
void sl_api_route_healthz(struct ctx *c);
void sl_api_route_history(struct ctx *c);
void sl_api_route_job_cancel(struct ctx *c);
void sl_api_route_array_cancel(struct ctx *c);
/* hold, release, requeue[?hold=true]: the route's operation on job {id}
 * (no body) */
void sl_api_route_job_ctl(struct ctx *c);
/* PATCH /v1/jobs/{id}: {"maxRuntime": DURATION} */
void sl_api_route_job_update(struct ctx *c);
void sl_api_route_job_events(struct ctx *c);
void sl_api_route_job_explain(struct ctx *c);
void sl_api_route_job_get(struct ctx *c);
void sl_api_route_job_list(struct ctx *c);
void sl_api_route_job_logs(struct ctx *c);
/* GET /v1/jobs/{id}/attach: a WebSocket to an interactive job's terminal
 * (api_attach.c) */
void sl_api_route_job_attach(struct ctx *c);
void sl_api_route_job_attempts(struct ctx *c);
void sl_api_route_job_submit(struct ctx *c);
void sl_api_route_lineage(struct ctx *c);
void sl_api_route_metrics(struct ctx *c);
void sl_api_route_model_get(struct ctx *c);
void sl_api_route_model_register(struct ctx *c);
void sl_api_route_model_stage(struct ctx *c);
void sl_api_route_models(struct ctx *c);
void sl_api_route_nodes(struct ctx *c);
void sl_api_route_node_state(struct ctx *c);
void sl_api_route_pclasses(struct ctx *c);
void sl_api_route_policies(struct ctx *c);
void sl_api_route_queues(struct ctx *c);
void sl_api_route_report(struct ctx *c);
void sl_api_route_report_util(struct ctx *c);
void sl_api_route_scan_import(struct ctx *c);
void sl_api_route_scans(struct ctx *c);
void sl_api_route_teams(struct ctx *c);
/* the identity provider's sign-in (api_login.c) */
struct sl_login;
struct sl_ident;
struct sl_login *sl_login_create(struct sl_engine *e, const struct sl_ident *id,
                                 struct sl_error *err);
/* Stop: the workers finish the login each holds (its provider call is
 * bounded by the identity file's timeout) and answer the queued ones 503;
 * later logins are 503. NULL-safe. */
void sl_login_stop(struct sl_login *l);
void sl_login_destroy(struct sl_login *l); /* NULL-safe; stops first */
void sl_login_metrics(struct sl_login *l, struct sl_buf *b);
void sl_api_route_login_info(struct ctx *c);
void sl_api_route_login(struct ctx *c);
void sl_api_route_login_refresh(struct ctx *c);
void sl_api_route_login_device(struct ctx *c);
void sl_api_route_token_create(struct ctx *c);
void sl_api_route_token_revoke(struct ctx *c);
void sl_api_route_tokens(struct ctx *c);
/* GET and HEAD of /ui and /ui/{*}: the embedded web UI (api_ui.c) */
void sl_api_route_ui(struct ctx *c);
void sl_api_route_whoami(struct ctx *c);
void sl_api_route_status(struct ctx *c);

#endif
