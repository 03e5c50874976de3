/*
 * test_engine_nodes.c - an admin's node states (src/engine/nodeadmin.c,
 * with nodes.c) against their contract in engine_int.h, on the simulated
 * executor with two fake nodes of one GPU each and the harness's clock
 * (engine_harness.h):
 *   drain    a node running a job takes no new one and is "draining"
 *            until the job ends, then "drained"; a repeat changes nothing,
 *            a new reason replaces the old; an unknown node is 404;
 *   why      a job that only the drained node could take says so, with
 *            who, why and since when;
 *   cordon   no new work, the job on it goes on;
 *   restart  state, reason, who and when are loaded again; the executor's
 *            refresh (it says up) does not undo them, and a node the
 *            executor has down stays out of service when uncordoned;
 *   audit    every change and repeat is recorded with old and new state.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/engine/engine_int.h"
#include "../../src/sched/sched.h"
#include "engine_harness.h"

static char tmpdir[64];
static char nodes_csv[128];

/* A drain, cordon or uncordon of 'node' by admin; returns the status and
 * the answer in *out (new reference; NULL when refused). */
static int node_op(struct sl_engine *e, enum sl_op_kind kind, const char *node,
                   const char *reason, json_t **out)
{
    struct h_call *c = h_call_new(kind, "admin", "default", "admin");
    int st;

    snprintf(c->op.u.node.node, sizeof(c->op.u.node.node), "%s", node);
    snprintf(c->op.u.node.reason, sizeof(c->op.u.node.reason), "%s", reason ? reason : "");
    st = h_call_run(e, c);
    *out = st == 200 ? h_call_json(c) : NULL;
    h_call_free(c);
    return st;
}

/* A one-GPU job that runs for 'duration' on the simulated executor. */
static int64_t submit(struct sl_engine *e, const char *duration)
{
    char yaml[320];
    int64_t id = 0;

    snprintf(yaml, sizeof(yaml),
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: t, "
             "labels: {sim-duration: %s}}\nspec: {command: [train], resources: {gpus: 1}}\n",
             duration);
    h_submit(e, yaml, "admin", "default", "admin", &id, NULL);
    h_sync(e);
    return id;
}

/* Member 'key' of node 'name' in the API's node list ("" when absent);
 * 'key' "admin.X" reads the admin object's X. */
static const char *node_get(struct sl_engine *e, const char *name, const char *key, char *buf,
                            size_t size)
{
    json_t *all = sl_engine_nodes_json(e), *n;
    size_t i;

    buf[0] = '\0';
    json_array_foreach(json_object_get(all, "nodes"), i, n) {
        json_t *v = n;
        if (strcmp(json_string_value(json_object_get(n, "name")), name) != 0)
            continue;
        if (strncmp(key, "admin.", 6) == 0) {
            v = json_object_get(n, "admin");
            key += 6;
        }
        v = json_object_get(v, key);
        if (json_is_string(v))
            snprintf(buf, size, "%s", json_string_value(v));
        else if (json_is_boolean(v))
            snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
        else if (json_is_null(v))
            snprintf(buf, size, "null");
    }
    json_decref(all);
    return buf;
}

/* The node job 'id' runs on ("" when none). */
static const char *job_node(struct sl_store *rd, int64_t id, char *buf, size_t size)
{
    json_t *j = h_job(rd, id);
    const char *n = json_string_value(
        json_object_get(json_array_get(json_object_get(j, "placement"), 0), "node"));

    snprintf(buf, size, "%s", n ? n : "");
    json_decref(j);
    return buf;
}

/* The scheduler's explanation of job 'id' as text. */
static char *explain(struct sl_engine *e, int64_t id)
{
    struct sl_buf b;

    sl_buf_init(&b);
    if (sl_engine_explain(e, id, &b) == 0)
        sl_buf_add(&b, "", 1);
    if (b.failed || !b.data) {
        sl_buf_fini(&b);
        return NULL;
    }
    return b.data;
}

static int node_index(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nodes.n; i++)
        if (strcmp(e->nodes.nodes[i].name, name) == 0)
            return i;
    return -1;
}

static bool schedulable(struct sl_engine *e, const char *name)
{
    struct sl_sched_node_view v = {0};

    return sl_sched_node_view(e->sched, node_index(e, name), &v) == 0 && v.schedulable;
}

static struct sl_engine *engine(void)
{
    struct sl_engine_config cfg = {.executor = "simulated", .fake_nodes = nodes_csv};

    return h_engine_create(tmpdir, cfg, NULL);
}

int main(void)
{
    struct sl_store *rd = NULL;
    struct sl_engine *e;
    char a[160], x[64], y[64], at[64];
    json_t *o = NULL;
    int64_t j1, j2, j3;
    char *text;
    FILE *f;

    sl_log_set_level(SL_LOG_ERROR);
    if (sodium_init() < 0) {
        ok(0, "libsodium");
        return done_testing();
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-nodes.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        ok(0, "a temp dir");
        return done_testing();
    }
    snprintf(nodes_csv, sizeof(nodes_csv), "%s/nodes.csv", tmpdir);
    if (!(f = fopen(nodes_csv, "w")) ||
        fputs("sn,cpu_milli,memory_mib,gpu,model\nna,8000,16384,1,H100\nnb,8000,16384,1,H100\n",
              f) < 0 ||
        fclose(f) != 0) {
        ok(0, "a node list");
        h_rmtree(tmpdir);
        return done_testing();
    }
    if (!(e = engine()) || sl_engine_start(e) < 0) {
        ok(0, "an engine");
        sl_engine_destroy(e);
        h_rmtree(tmpdir);
        return done_testing();
    }
    rd = h_reader(tmpdir);
    is_str(node_get(e, "na", "admin.state", a, sizeof(a)), "active", "a node starts active");
    is_str(node_get(e, "na", "admin.at", a, sizeof(a)), "null", "with no time");

    /* drain the node that runs a job */
    j1 = submit(e, "10m");
    is_str(h_job_state(rd, j1, a, sizeof(a)), "Running", "a job runs");
    snprintf(x, sizeof(x), "%s", job_node(rd, j1, a, sizeof(a)));
    snprintf(y, sizeof(y), "%s", strcmp(x, "na") == 0 ? "nb" : "na");
    h_clock_set(H_T0 + H_MIN);
    is_int(node_op(e, SL_OP_NODE_DRAIN, x, "disk swap", &o), 200, "drain the job's node %s", x);
    is_str(json_string_value(json_object_get(o, "state")), "draining",
           "it is draining while the job runs");
    is_str(json_string_value(json_object_get(o, "previous")), "active", "it was active");
    ok(json_is_true(json_object_get(o, "changed")), "the drain changed it");
    json_decref(o);
    ok(!schedulable(e, x), "a draining node takes no new work");
    is_str(node_get(e, x, "state", a, sizeof(a)), "up", "the executor's state is kept apart");
    snprintf(at, sizeof(at), "%s", node_get(e, x, "admin.at", a, sizeof(a)));
    is_str(at, "2026-03-10T08:01:00.000Z", "when it was drained");
    is_str(node_get(e, x, "admin.by", a, sizeof(a)), "admin", "who drained it");

    h_clock_set(H_T0 + 2 * H_MIN);
    is_int(node_op(e, SL_OP_NODE_DRAIN, x, "disk swap", &o), 200, "drain it again");
    ok(json_is_false(json_object_get(o, "changed")), "a repeat changes nothing");
    json_decref(o);
    is_str(node_get(e, x, "admin.at", a, sizeof(a)), at, "not even the time");
    is_int(node_op(e, SL_OP_NODE_DRAIN, x, "", &o), 200, "drain it again with no reason");
    ok(json_is_false(json_object_get(o, "changed")), "which keeps the reason");
    json_decref(o);
    is_int(node_op(e, SL_OP_NODE_DRAIN, "nz", "", &o), 404, "draining an unknown node is 404");
    is_int(node_op(e, SL_OP_NODE_UNCORDON, "nz", "", &o), 404, "as is its uncordon");

    /* new work goes to the other node, then waits */
    j2 = submit(e, "10m");
    is_str(job_node(rd, j2, a, sizeof(a)), y, "a second job lands on %s", y);
    j3 = submit(e, "1m");
    is_str(h_job_state(rd, j3, a, sizeof(a)), "Pending", "a third job waits");
    text = explain(e, j3);
    ok(text && strstr(text, "\"why\":\"draining by admin (reason: disk swap) since 2026-03-10T08:01"),
       "its explanation names the draining node, who, why and since when");
    free(text);

    /* the job on the draining node ends: drained */
    h_clock_set(H_T0 + 11 * H_MIN);
    h_sync(e);
    is_str(h_job_state(rd, j1, a, sizeof(a)), "Succeeded", "the job on the drained node finishes");
    is_str(node_get(e, x, "admin.state", a, sizeof(a)), "drained", "then the node is drained");
    is_str(h_job_state(rd, j3, a, sizeof(a)), "Pending", "and the waiting job does not go there");
    text = explain(e, j3);
    ok(text && strstr(text, "\"why\":\"drained by admin (reason: disk swap)"),
       "its explanation now says drained");
    free(text);

    /* a new reason replaces the old one */
    is_int(node_op(e, SL_OP_NODE_DRAIN, x, "new disk", &o), 200, "drain with a new reason");
    ok(json_is_true(json_object_get(o, "changed")) &&
           !strcmp(json_string_value(json_object_get(o, "previous")), "drained"),
       "changes the reason of a drained node");
    json_decref(o);

    /* cordon the other node: its job goes on */
    is_int(node_op(e, SL_OP_NODE_CORDON, y, "fan", &o), 200, "cordon %s", y);
    is_str(json_string_value(json_object_get(o, "state")), "cordoned", "it is cordoned");
    json_decref(o);
    h_sync(e);
    is_str(h_job_state(rd, j2, a, sizeof(a)), "Running", "its job goes on");
    ok(!schedulable(e, y), "a cordoned node takes no new work");
    is_int(h_audit_count(rd, "node.drain", "ok"), 4, "every drain is audited");
    is_int(h_audit_count(rd, "node.cordon", "ok"), 1, "the cordon is audited");
    is_int(h_audit_count(rd, "node.drain", "refused"), 1, "the refused drain is audited");

    /* a restart loads every state; the executor's refresh does not undo them */
    sl_engine_destroy(e);
    e = engine();
    ok(e != NULL, "the engine starts again");
    if (!e)
        goto out;
    ok(!schedulable(e, x) && !schedulable(e, y), "both nodes stay out of service");
    is_str(node_get(e, x, "admin.reason", a, sizeof(a)), "new disk", "with the reason");
    is_str(node_get(e, y, "admin.by", a, sizeof(a)), "admin", "who");
    is_str(node_get(e, y, "admin.at", a, sizeof(a)), "2026-03-10T08:11:00.000Z", "and when");
    sl_eng_nodes_refresh(e);
    ok(!schedulable(e, x), "a refresh of the executor's nodes (up) keeps the drain");
    /* the executor now has x down: an uncordon does not put it back */
    e->nodes.nodes[node_index(e, x)].state = SL_NODE_DOWN;
    snprintf(e->nodes.nodes[node_index(e, x)].reason, sizeof(e->nodes.nodes[0].reason), "psu");
    sl_eng_node_restate(e, node_index(e, x));
    if (sl_engine_start(e) < 0) {
        ok(0, "the engine runs again");
        goto out;
    }
    text = explain(e, j3);
    ok(text && strstr(text, "drained by admin (reason: new disk) since 2026-03-10T08:11:00.000Z; "
                            "down: psu"),
       "the explanation gives the admin's state, then the executor's");
    free(text);
    is_int(node_op(e, SL_OP_NODE_UNCORDON, x, "", &o), 200, "uncordon %s", x);
    is_str(json_string_value(json_object_get(o, "state")), "active", "the admin's state is active");
    json_decref(o);
    h_sync(e);
    ok(!schedulable(e, x), "but a node its executor has down stays out of service");
    is_str(h_job_state(rd, j3, a, sizeof(a)), "Pending", "and the job still waits");
    is_int(node_op(e, SL_OP_NODE_UNCORDON, y, "", &o), 200, "uncordon %s", y);
    json_decref(o);
    ok(schedulable(e, y), "an uncordoned node the executor has up takes work");
    h_sync(e);
    is_str(h_job_state(rd, j3, a, sizeof(a)), "Running", "and the waiting job runs");
    is_str(job_node(rd, j3, a, sizeof(a)), y, "there");
    is_str(node_get(e, y, "admin.state", a, sizeof(a)), "active", "in service");
    is_int(h_audit_count(rd, "node.uncordon", "ok"), 2, "both uncordons are audited");
out:
    sl_engine_destroy(e);
    sl_store_close(rd);
    h_rmtree(tmpdir);
    return done_testing();
}
