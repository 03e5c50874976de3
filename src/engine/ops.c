/*
 * ops.c - the table of operations: for each kind of change, the scope a
 * caller needs (src/policy/roles.h), its audit action, the handler that
 * applies it in the engine's transaction, and how its payload is freed.
 * A new kind of change is a new row.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../policy/roles.h"

static void fini_submit(struct sl_op *op)
{
    sl_job_spec_destroy(op->u.submit.spec);
    free(op->u.submit.spec_json);
}

static void fini_apply(struct sl_op *op)
{
    free(op->u.apply.manifests);
    json_decref(op->u.apply.given);
}

static void fini_carbon(struct sl_op *op)
{
    free(op->u.carbon.hour_ms);
    free(op->u.carbon.g);
}

static void fini_login(struct sl_op *op) { json_decref(op->u.login.groups); }
static void fini_scan(struct sl_op *op) { json_decref(op->u.scan.summary); }
static void fini_model(struct sl_op *op) { json_decref(op->u.model.body); }
static void fini_stage(struct sl_op *op) { json_decref(op->u.stage.body); }

/* Refused before it came here: only its record is written. */
static int do_audit(struct sl_engine *e, struct sl_op *op)
{
    (void)e;
    (void)op;
    return -EPERM;
}

/* Columns: kind, the scope its caller needs, its audit action, its
 * handler (returns 0, or a negative errno with op->status, code and err
 * set; the savepoint is then rolled back), how its payload is freed. */
static const struct op_type {
    enum sl_op_kind kind;
    unsigned scope;
    const char *action;
    int (*handler)(struct sl_engine *e, struct sl_op *op);
    void (*fini)(struct sl_op *op);
} op_types[SL_OP_NKINDS] = {
    [SL_OP_SUBMIT] = {SL_OP_SUBMIT, SL_SC_JOBS_WRITE, "job.submit", sl_eng_do_submit,
                      fini_submit},
    [SL_OP_CANCEL] = {SL_OP_CANCEL, SL_SC_JOBS_WRITE, "job.cancel", sl_eng_do_cancel, NULL},
    [SL_OP_ARRAY_CANCEL] = {SL_OP_ARRAY_CANCEL, SL_SC_JOBS_WRITE, "array.cancel",
                            sl_eng_do_array_cancel, NULL},
    [SL_OP_APPLY] = {SL_OP_APPLY, SL_SC_MANAGE, "apply", sl_eng_do_apply, fini_apply},
    [SL_OP_TOKEN] = {SL_OP_TOKEN, SL_SC_TOKENS, "token.create", sl_eng_do_token, NULL},
    [SL_OP_REVOKE] = {SL_OP_REVOKE, SL_SC_TOKENS, "token.revoke", sl_eng_do_revoke, NULL},
    [SL_OP_CARBON] = {SL_OP_CARBON, SL_SC_ADMIN, "carbon.put", sl_eng_do_carbon, fini_carbon},
    [SL_OP_SCAN] = {SL_OP_SCAN, SL_SC_ADMIN, "scan.import", sl_eng_do_scan, fini_scan},
    [SL_OP_MODEL] = {SL_OP_MODEL, SL_SC_MODELS, "model.register", sl_eng_do_model, fini_model},
    [SL_OP_STAGE] = {SL_OP_STAGE, SL_SC_MODELS, "model.stage", sl_eng_do_stage, fini_stage},
    [SL_OP_NODE_DRAIN] = {SL_OP_NODE_DRAIN, SL_SC_ADMIN, "node.drain", sl_eng_do_node, NULL},
    [SL_OP_NODE_CORDON] = {SL_OP_NODE_CORDON, SL_SC_ADMIN, "node.cordon", sl_eng_do_node, NULL},
    [SL_OP_NODE_UNCORDON] = {SL_OP_NODE_UNCORDON, SL_SC_ADMIN, "node.uncordon", sl_eng_do_node,
                             NULL},
    [SL_OP_DELETE] = {SL_OP_DELETE, SL_SC_MANAGE, "object.delete", sl_eng_do_delete, NULL},
    [SL_OP_HOLD] = {SL_OP_HOLD, SL_SC_JOBS_WRITE, "job.hold", sl_eng_do_hold, NULL},
    [SL_OP_RELEASE] = {SL_OP_RELEASE, SL_SC_JOBS_WRITE, "job.release", sl_eng_do_release, NULL},
    [SL_OP_REQUEUE] = {SL_OP_REQUEUE, SL_SC_JOBS_WRITE, "job.requeue", sl_eng_do_requeue, NULL},
    [SL_OP_UPDATE] = {SL_OP_UPDATE, SL_SC_JOBS_WRITE, "job.update", sl_eng_do_update, NULL},
    [SL_OP_ATTACH] = {SL_OP_ATTACH, SL_SC_JOBS_WRITE, "job.attach", sl_eng_do_attach, NULL},
    /* public: the API submits it only for a user the provider vouched for */
    [SL_OP_LOGIN] = {SL_OP_LOGIN, SL_SC_PUBLIC, "user.login", sl_eng_do_login, fini_login},
    [SL_OP_AUDIT] = {SL_OP_AUDIT, SL_SC_PUBLIC, "request", do_audit, NULL},
};

static const struct op_type *op_type(enum sl_op_kind kind)
{
    return kind >= 0 && kind < SL_OP_NKINDS ? &op_types[kind] : NULL;
}

unsigned sl_op_scope(enum sl_op_kind kind)
{
    const struct op_type *t = op_type(kind);

    /* an unknown kind needs what no role but admin holds */
    return t ? t->scope : SL_SC_ADMIN;
}

const char *sl_op_action(enum sl_op_kind kind)
{
    const struct op_type *t = op_type(kind);

    return t ? t->action : "request";
}

void sl_op_fini(struct sl_op *op)
{
    const struct op_type *t = op_type(op->kind);

    if (t && t->fini)
        t->fini(op);
    memset(&op->u, 0, sizeof(op->u));
    json_decref(op->result);
    op->result = NULL;
    free(op->body);
    op->body = NULL;
    json_decref(op->audit_details);
    op->audit_details = NULL;
}

int sl_eng_op_apply(struct sl_engine *e, struct sl_op *op)
{
    const struct op_type *t = op_type(op->kind);

    if (!t) {
        sl_eng_op_fail(op, 500, "internal");
        return sl_errorf(&op->err, -EINVAL, "unknown operation %d", (int)op->kind);
    }
    return t->handler(e, op);
}
