/*
 * nodeadmin.c - an admin's state of the nodes (docs/nodes.md): cordon (no
 * new work), drain (no new work; the work running there finishes:
 * "draining" while a running job has a task there, then "drained") and
 * uncordon (back in service).
 *
 * The state is kept by node name in the store as governed objects of kind
 * "Node" ({"state","reason","by","at_ms"}), so that it outlives a restart
 * and an executor that stops listing the node for a while. It is applied
 * over the executor's own state (nodes.c, node_state), never in its place:
 * a refresh of the executor's nodes cannot undo it, and it cannot make a
 * node the executor says is down schedulable.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stored names of the states (the "state" member of a "Node" object). */
static const char *const stored_names[] = {
    [NODE_ACTIVE] = "active",
    [NODE_CORDONED] = "cordoned",
    [NODE_DRAIN] = "drain",
};

const struct node_admin *sl_eng_nodeadmin_get(const struct sl_engine *e, const char *name)
{
    for (int k = 0; k < e->nnadm; k++)
        if (strcmp(e->nadm[k].name, name) == 0)
            return &e->nadm[k];
    return NULL;
}

/* The scheduler's (and inventory's) index of node 'name'; -1 = none. */
static int node_index(const struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nodes.n; i++)
        if (strcmp(e->nodes.nodes[i].name, name) == 0)
            return i;
    return -1;
}

bool sl_eng_node_busy(const struct sl_engine *e, int i)
{
    for (size_t r = 0; r < e->nrun; r++) {
        const struct job *j = e->run[r];
        for (int t = 0; j->tasks && t < j->spec->tasks; t++)
            if (j->tasks[t].node == i && !j->tasks[t].done)
                return true;
    }
    return false;
}

const char *sl_eng_nodeadmin_shown(const struct sl_engine *e, int i,
                                   const struct node_admin *a)
{
    if (!a || a->state == NODE_ACTIVE)
        return "active";
    if (a->state == NODE_CORDONED)
        return "cordoned";
    return i >= 0 && sl_eng_node_busy(e, i) ? "draining" : "drained";
}

void sl_eng_nodeadmin_note(const struct sl_engine *e, int i, const struct node_admin *a,
                           char *buf, size_t size)
{
    char when[40];

    buf[0] = '\0';
    if (!a || a->state == NODE_ACTIVE)
        return;
    snprintf(buf, size, "%s by %s%s%s%s since %s", sl_eng_nodeadmin_shown(e, i, a),
             a->by[0] ? a->by : "an admin", a->reason[0] ? " (reason: " : "", a->reason,
             a->reason[0] ? ")" : "", sl_time_rfc3339(a->at_ms, when, sizeof(when)));
}

/* The admin's part of node i's object: {"state","reason","by","at"}. */
json_t *sl_eng_nodeadmin_json(const struct sl_engine *e, int i, const char *name)
{
    const struct node_admin *a = sl_eng_nodeadmin_get(e, name);
    char when[40];

    return json_pack("{s:s, s:s, s:s, s:o}", "state", sl_eng_nodeadmin_shown(e, i, a),
                     "reason", a ? a->reason : "", "by", a ? a->by : "", "at",
                     a && a->at_ms ? json_string(sl_time_rfc3339(a->at_ms, when, sizeof(when)))
                                   : json_null());
}

/* Room for one more state; nothing else changes. */
static int nadm_reserve(struct sl_engine *e)
{
    struct node_admin *n;
    int cap;

    if (e->nnadm < e->nadm_cap)
        return 0;
    cap = e->nadm_cap ? 2 * e->nadm_cap : 16;
    pthread_mutex_lock(&e->mu);
    n = realloc(e->nadm, (size_t)cap * sizeof(*n));
    if (n) {
        e->nadm = n;
        e->nadm_cap = cap;
    }
    pthread_mutex_unlock(&e->mu);
    return n ? 0 : -ENOMEM;
}

/* Set 'a' (its name's entry replaced, else added in the room reserved).
 * Under e->mu. */
static void nadm_set(struct sl_engine *e, const struct node_admin *a)
{
    struct node_admin *old = (struct node_admin *)sl_eng_nodeadmin_get(e, a->name);

    if (old)
        e->ndrain -= old->state == NODE_DRAIN;
    else
        old = &e->nadm[e->nnadm++];
    *old = *a;
    e->ndrain += a->state == NODE_DRAIN;
}

static int load_one(void *arg, const char *name, const char *spec)
{
    struct sl_engine *e = arg;
    struct node_admin a = {0};
    json_t *d = json_loads(spec, 0, NULL);
    const char *state = json_string_value(json_object_get(d, "state"));
    const char *reason = json_string_value(json_object_get(d, "reason"));
    const char *by = json_string_value(json_object_get(d, "by"));
    int rc = 0;

    a.state = (enum node_admin_state)-1;
    for (size_t k = 0; state && k < SL_ARRAY_LEN(stored_names); k++)
        if (strcmp(state, stored_names[k]) == 0)
            a.state = (enum node_admin_state)k;
    if ((int)a.state < 0 || strlen(name) >= sizeof(a.name)) {
        /* not written by this version: left as it is, the node active */
        sl_warn("msg=\"a stored node state is not understood; the node is active\" node=%.64s",
                name);
        goto out;
    }
    sl_strlcpy(a.name, name, sizeof(a.name));
    sl_strlcpy(a.reason, reason ? reason : "", sizeof(a.reason));
    sl_strlcpy(a.by, by ? by : "", sizeof(a.by));
    a.at_ms = json_integer_value(json_object_get(d, "at_ms"));
    if ((rc = nadm_reserve(e)) == 0) {
        pthread_mutex_lock(&e->mu);
        nadm_set(e, &a);
        pthread_mutex_unlock(&e->mu);
    }
out:
    json_decref(d);
    return rc;
}

int sl_eng_nodeadmin_load(struct sl_engine *e, struct sl_error *err)
{
    int rc = sl_store_objs_each(e->st, "Node", load_one, e);

    if (rc < 0)
        return sl_errorf(err, rc, "store: cannot load the nodes' states: %s", strerror(-rc));
    sl_eng_node_restate(e, -1);
    e->sched_full = true;
    return 0;
}

void sl_eng_nodeadmin_refresh(struct sl_engine *e)
{
    if (e->ndrain == 0)
        return;
    for (int k = 0; k < e->nnadm; k++) {
        int i;
        if (e->nadm[k].state == NODE_DRAIN && (i = node_index(e, e->nadm[k].name)) >= 0)
            sl_eng_node_restate(e, i);
    }
}

/* The state an operation asks for. */
static enum node_admin_state op_target(enum sl_op_kind kind)
{
    return kind == SL_OP_NODE_DRAIN    ? NODE_DRAIN
           : kind == SL_OP_NODE_CORDON ? NODE_CORDONED
                                       : NODE_ACTIVE;
}

int sl_eng_do_node(struct sl_engine *e, struct sl_op *op)
{
    const struct sl_op_node *p = &op->u.node;
    const struct node_admin *old = sl_eng_nodeadmin_get(e, p->node);
    struct node_admin a = {0};
    enum node_admin_state target = op_target(op->kind);
    int i = node_index(e, p->node), rc;
    char *text = NULL, prev[16];
    json_t *res;
    bool changed;

    snprintf(op->object, sizeof(op->object), "node:%s", p->node);
    if (i < 0 && !old) {
        sl_eng_op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "node %s not found", p->node);
    }
    sl_strlcpy(prev, sl_eng_nodeadmin_shown(e, i, old), sizeof(prev));
    /* a repeat changes nothing; a new reason replaces the old one */
    changed = (old ? old->state : NODE_ACTIVE) != target ||
              (p->reason[0] && (!old || strcmp(old->reason, p->reason) != 0));
    if (changed) {
        sl_strlcpy(a.name, p->node, sizeof(a.name));
        a.state = target;
        sl_strlcpy(a.reason, p->reason, sizeof(a.reason));
        sl_strlcpy(a.by, op->who.user, sizeof(a.by));
        a.at_ms = sl_eng_now_ms(e);
        json_t *d = json_pack("{s:s, s:s, s:s, s:I}", "state", stored_names[target], "reason",
                              a.reason, "by", a.by, "at_ms", (json_int_t)a.at_ms);
        text = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(d);
        if (!text || nadm_reserve(e) < 0) {
            free(text);
            sl_eng_op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, -ENOMEM, "out of memory");
        }
        if ((rc = sl_store_obj_put(e->st, "Node", a.name, text)) < 0) {
            free(text);
            sl_eng_op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, -EIO, "store: write failed");
        }
        free(text);
        pthread_mutex_lock(&e->mu);
        nadm_set(e, &a);
        pthread_mutex_unlock(&e->mu);
        if (i >= 0)
            sl_eng_node_restate(e, i);
        e->sched_full = true;
        sl_info("msg=\"node state\" node=%s admin=%s by=%s reason=\"%s\"", a.name,
                stored_names[target], a.by, a.reason);
    }
    res = sl_eng_nodeadmin_json(e, i, p->node);
    json_object_set_new(res, "node", json_string(p->node));
    json_object_set_new(res, "previous", json_string(prev));
    json_object_set_new(res, "changed", json_boolean(changed));
    op->audit_details = json_pack("{s:s, s:s, s:s, s:b}", "from", prev, "to",
                                  json_string_value(json_object_get(res, "state")), "reason",
                                  p->reason, "changed", changed);
    op->result = res;
    op->status = 200;
    return 0;
}
