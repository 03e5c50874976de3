/*
 * api_catalog.c - health, whoami and the cluster's objects: nodes, teams, queues,
 * priority classes, policies, datasets, scans and models (lists), and apply.
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include "relay.h"

#include <errno.h>
#include <fcntl.h>
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

void sl_api_route_healthz(struct ctx *c)
{
    sl_http_reply_json(c->r, 200, json_pack("{s:s}", "status", "ok"));
}

/* Unauthenticated, as node exporters are: the figures name nodes, queues
 * and teams but no job, user or secret. */
void sl_api_route_metrics(struct ctx *c)
{
    struct sl_buf b;
    int rc;

    sl_buf_init(&b);
    rc = sl_api_metrics_render(c->a->metrics, c->a->e, sl_relay_claims(c->a->relay), &b);

    if (rc == 0 && c->a->ha_metrics)
        c->a->ha_metrics(c->a->ha_arg, &b);
    if (rc == 0)
        sl_login_metrics(c->a->login, &b);
    if (rc < 0 || b.failed)
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
    else
        sl_http_reply(c->r, 200, SL_METRICS_CTYPE, b.data, b.len);
    sl_buf_fini(&b);
}

/* GET /v1/status: which daemon answers and how it stands among those
 * sharing the store (docs/ha.md); one daemon on its own store says so. */
void sl_api_route_status(struct ctx *c)
{
    if (c->a->ha_status) {
        sl_http_reply_json(c->r, 200, c->a->ha_status(c->a->ha_arg));
        return;
    }
    sl_http_reply_json(c->r, 200,
                       json_pack("{s:s, s:b, s:o, s:[]}", "role", "leader", "shared", 0,
                                 "leader", json_null(), "members"));
}

void sl_api_route_whoami(struct ctx *c)
{
    sl_http_reply_json(c->r, 200,
                       json_pack("{s:s, s:s, s:s}", "user", c->who.user, "team",
                                 c->who.team, "role", c->who.role));
}


void sl_api_route_nodes(struct ctx *c)
{
    sl_http_reply_json(c->r, 200, sl_engine_nodes_json(c->a->e));
}

/* POST /v1/nodes/{name}/drain, /cordon, /uncordon: an optional body
 * {"reason": "..."} (at most SL_NODE_REASON_MAX printable bytes); the
 * route's row names the operation. */
void sl_api_route_node_state(struct ctx *c)
{
    const char *key, *reason = "";
    json_t *d = NULL, *v;
    struct op_state *s;
    size_t len;

    sl_http_body(c->r, &len);
    if (len && !(d = sl_api_body_json(c)))
        return;
    json_object_foreach(d, key, v) {
        if (strcmp(key, "reason") != 0) {
            sl_api_refuse(c, 400, "invalid", key, "unknown field; expected reason");
            goto out;
        }
    }
    if ((v = json_object_get(d, "reason"))) {
        if (!json_is_string(v) || strlen(json_string_value(v)) > SL_NODE_REASON_MAX ||
            !sl_text_printable(json_string_value(v))) {
            sl_api_refuse(c, 400, "invalid", "reason", "must be at most %d printable characters",
                          SL_NODE_REASON_MAX);
            goto out;
        }
        reason = json_string_value(v);
    }
    if (strlen(c->name) >= sizeof(((struct sl_op_node *)0)->node)) {
        sl_api_refuse(c, 404, "not_found", NULL, "node %.64s... not found", c->name);
        goto out;
    }
    if (!(s = sl_api_op_new(c, (enum sl_op_kind)c->op)))
        goto out;
    sl_strlcpy(s->op.u.node.node, c->name, sizeof(s->op.u.node.node));
    sl_strlcpy(s->op.u.node.reason, reason, sizeof(s->op.u.node.reason));
    sl_api_op_send(c, s);
out:
    json_decref(d);
}

void sl_api_route_apply(struct ctx *c)
{
    struct sl_error err = {0};
    struct sl_manifest *m = NULL;
    struct op_state *s;
    size_t len, n = 0;
    const char *body = sl_http_body(c->r, &len);
    bool replace = false, dry = false;
    json_t *given = NULL;
    int rc;

    if (!sl_api_query_bool(c, "replace", &replace) || !sl_api_query_bool(c, "dry_run", &dry))
        return;
    if ((rc = sl_manifests_parse(body, len, &m, &n, &err)) < 0) {
        sl_api_reply_errno(c, rc, &err);
        return;
    }
    /* the documents as written, for the fields each gave (parsed again:
     * the manifests keep only what they mean) */
    if (sl_doc_decode(body, len, true, &given, &err) < 0 || json_array_size(given) != n) {
        json_decref(given);
        free(m);
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    if (!(s = sl_api_op_new(c, SL_OP_APPLY))) {
        json_decref(given);
        free(m);
        return;
    }
    s->op.u.apply.manifests = m;
    s->op.u.apply.n = n;
    s->op.u.apply.given = given;
    s->op.u.apply.replace = replace;
    s->op.u.apply.dry_run = dry;
    sl_api_op_send(c, s);
}

static void h_list(struct ctx *c, const char *key, json_t *(*fn)(struct sl_store *, int *))
{
    int rc;
    json_t *arr = fn(c->a->rd, &rc);
    if (!arr) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", key, arr));
}

void sl_api_route_teams(struct ctx *c) { h_list(c, "teams", sl_store_teams); }

void sl_api_route_queues(struct ctx *c)
{
    json_t *arr = sl_engine_queues_json(c->a->e);

    if (!arr) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", "queues", arr));
}


void sl_api_route_pclasses(struct ctx *c) { h_list(c, "priority_classes", sl_store_pclasses); }


/* ---- governed objects, models, lineage --------------------------------- */

struct objs {
    json_t *arr;
    const struct ctx *c;
    const char *team_key;         /* filter on this member's team; NULL = none */
    const char *stage, *name;     /* models: filters */
};

static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

static int obj_row(void *arg, const char *name, const char *spec)
{
    struct objs *o = arg;
    json_t *d = json_loads(spec, 0, NULL);
    (void)name;
    if (!d)
        return 0;
    if (o->team_key) {
        const char *t = json_string_value(json_object_get(d, o->team_key));
        if (!sl_api_can_see_team(o->c, t)) {
            json_decref(d);
            return 0;
        }
    }
    if ((o->stage && !str_is(json_object_get(d, "stage"), o->stage)) ||
        (o->name && !str_is(json_object_get(d, "name"), o->name))) {
        json_decref(d);
        return 0;
    }
    json_array_append_new(o->arr, d);
    return 0;
}

static void h_objs(struct ctx *c, const char *kind, const char *key, const char *team_key)
{
    struct objs o = {json_array(), c, team_key, NULL, NULL};

    if (strcmp(kind, "Model") == 0) {
        o.stage = sl_http_query(c->r, "stage");
        o.name = sl_http_query(c->r, "name");
    }
    if (!o.arr || sl_store_objs_each(c->a->rd, kind, obj_row, &o) < 0) {
        json_decref(o.arr);
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return;
    }
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", key, o.arr));
}

void sl_api_route_policies(struct ctx *c) { h_objs(c, "Policy", "policies", NULL); }
void sl_api_route_datasets(struct ctx *c) { h_objs(c, "Dataset", "datasets", NULL); }
void sl_api_route_scans(struct ctx *c) { h_objs(c, "Scan", "scans", NULL); }
void sl_api_route_models(struct ctx *c) { h_objs(c, "Model", "models", "team"); }
