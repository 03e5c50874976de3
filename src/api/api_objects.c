/*
 * api_objects.c - the catalog's objects by kind: GET /v1/objects/{kind}
 * (every object the caller may see, as manifests), GET
 * /v1/objects/{kind}/{ref} (one, with what relates to it) and DELETE
 * /v1/objects/{kind}/{ref} (the engine's rules; ?force=true).
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include <errno.h>
#include <string.h>

/* The kind of the path, or -1 with the request answered 404. */
static int path_kind(struct ctx *c)
{
    int kind = sl_manifest_kind_parse(c->kind);

    if (kind < 0)
        sl_http_reply_error(c->r, 404, "not_found", "kind",
                            "no such kind: %s (one of teams, queues, cohorts, "
                            "priorityclasses, users, schedulers, pricings, budgets, "
                            "policies, datasets)",
                            c->kind);
    return kind;
}

/* The key of {ref}: a name, or a Dataset's name@version; false with the
 * request answered 404. */
static bool ref_ok(struct ctx *c, int kind)
{
    char name[128], *at;

    sl_strlcpy(name, c->name, sizeof(name));
    if (kind == SL_KIND_DATASET && (at = strchr(name, '@')))
        *at = '\0';
    if (sl_name_valid(name) && (kind == SL_KIND_DATASET || !strchr(c->name, '@')) &&
        !strchr(c->name, ':'))
        return true;
    sl_http_reply_error(c->r, 404, "not_found", NULL, "no such object: %s %s",
                        sl_manifest_kind_name(kind), c->name);
    return false;
}

/* Whether the caller sees object 'doc': users only of its own team
 * (team-admin) or itself (others), budgets only of its team, unless its
 * role sees every team; everything else, all. */
static bool visible(const struct ctx *c, int kind, const json_t *doc)
{
    const json_t *spec = json_object_get(doc, "spec");
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"),
                                                         "name"));

    if (sl_api_all_teams(&c->who))
        return true;
    if (kind == SL_KIND_BUDGET)
        return sl_api_can_see_team(c, sl_api_jstr(spec, "team"));
    if (kind == SL_KIND_USER)
        return sl_api_role_of(&c->who) == SL_ROLE_TEAM_ADMIN
                   ? sl_api_can_see_team(c, sl_api_jstr(spec, "team"))
                   : name && strcmp(name, c->who.user) == 0;
    return true;
}

static json_t *read_objects(struct ctx *c, int kind, const char *key)
{
    json_t *arr = sl_engine_objects_json(c->a->e, c->a->rd, kind, key), *kept, *doc;
    size_t i;

    if (!arr) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        return NULL;
    }
    if (!(kept = json_array())) {
        json_decref(arr);
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    json_array_foreach (arr, i, doc)
        if (visible(c, kind, doc))
            json_array_append(kept, doc);
    json_decref(arr);
    return kept;
}

void sl_api_route_objects(struct ctx *c)
{
    int kind = path_kind(c);
    json_t *arr;

    if (kind < 0 || !(arr = read_objects(c, kind, NULL)))
        return;
    sl_http_reply_json(c->r, 200, json_pack("{s:o}", "items", arr));
}

/* A queue's figures of GET /v1/queues ("status"). */
static void queue_status(struct ctx *c, json_t *doc, const char *name)
{
    json_t *qs = sl_engine_queues_json(c->a->e), *q;
    size_t i;

    json_array_foreach (qs, i, q)
        if (strcmp(sl_api_jstr(q, "name") ? sl_api_jstr(q, "name") : "", name) == 0)
            json_object_set(json_object_get(doc, "related"), "status", q);
    json_decref(qs);
}

void sl_api_route_object_get(struct ctx *c)
{
    int kind = path_kind(c);
    json_t *arr, *doc;

    if (kind < 0 || !ref_ok(c, kind) || !(arr = read_objects(c, kind, c->name)))
        return;
    if (!(doc = json_array_get(arr, 0))) {
        json_decref(arr);
        sl_http_reply_error(c->r, 404, "not_found", NULL, "%s %s not found",
                            sl_manifest_kind_name(kind), c->name);
        return;
    }
    if (kind == SL_KIND_QUEUE)
        queue_status(c, doc, c->name);
    sl_http_reply_json(c->r, 200, json_incref(doc));
    json_decref(arr);
}

void sl_api_route_object_delete(struct ctx *c)
{
    int kind = path_kind(c);
    bool force = false;
    struct op_state *s;

    if (kind < 0 || !ref_ok(c, kind) || !sl_api_query_bool(c, "force", &force) ||
        !(s = sl_api_op_new(c, SL_OP_DELETE)))
        return;
    s->op.u.del.kind = kind;
    s->op.u.del.force = force;
    sl_strlcpy(s->op.u.del.key, c->name, sizeof(s->op.u.del.key));
    sl_api_op_send(c, s);
}
