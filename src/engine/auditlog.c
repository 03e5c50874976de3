/*
 * auditlog.c - the audit writer: records appended in the open transaction,
 * signed checkpoints, the committed head for readers.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../policy/policy.h"
#include "../sched/sched.h"
#include "../sim/trace.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/heap.h"
#include "../util/imap.h"

void sl_eng_audit_add(struct sl_engine *e, const char *actor, const char *action,
                      const char *object, bool ok, json_t *details)
{
    struct sl_audit_head h = e->audit_head;
    struct sl_audit_entry en = {
        .at_ms = sl_eng_now_ms(e), .actor = actor && *actor ? actor : "system",
        .action = action, .object = object ? object : "",
        .outcome = ok ? "ok" : "refused", .details = details,
    };
    int rc;

    e->audit_line.len = 0;
    rc = sl_audit_line(&h, &en, &e->audit_line);
    if (rc == 0 && e->audit_line.failed)
        rc = -ENOMEM;
    if (rc == 0)
        rc = sl_store_audit_add(e->st, h.size, en.at_ms, en.actor, action, en.object,
                                en.outcome, e->audit_line.data, e->audit_line.len, h.hash);
    json_decref(details);
    if (rc < 0) {
        sl_error("msg=\"cannot append to the audit log; the group fails\" action=%s "
                 "rc=%d", action, rc);
        e->write_failed = true;
        return;
    }
    e->audit_head = h;
}

void sl_eng_audit_op(struct sl_engine *e, struct sl_op *op, int rc)
{
    const char *action = op->action ? op->action : sl_op_action(op->kind);
    const char *actor = op->who.user;
    char who[96];
    json_t *d;

    if ((op->kind == SL_OP_SUBMIT && op->u.submit.dry_run) ||
        (op->kind == SL_OP_APPLY && op->u.apply.dry_run))
        return; /* a dry run changes nothing: nothing to record (its details
                   are freed with the op) */
    d = op->audit_details ? op->audit_details : json_object();
    op->audit_details = NULL;
    if (op->who.job_id) {
        snprintf(who, sizeof(who), "%s/job:%lld", op->who.user, (long long)op->who.job_id);
        actor = who;
    }
    if (d && op->who.role[0])
        json_object_set_new(d, "role", json_string(op->who.role));
    if (d && rc < 0) {
        json_object_set_new(d, "status", json_integer(op->status));
        json_object_set_new(d, "code", json_string(op->code ? op->code : "error"));
        json_object_set_new(d, "message", json_string(op->err.text));
        if (op->err.field[0])
            json_object_set_new(d, "field", json_string(op->err.field));
    }
    sl_eng_audit_add(e, actor, action, op->object, rc >= 0, d);
}

void sl_eng_audit_checkpoint(struct sl_engine *e, bool now)
{
    struct sl_buf b;

    if (e->audit_head.size == e->audit_ckpt_size ||
        (!now && sl_eng_mono_ms(e) < e->next_ckpt_ms))
        return;
    sl_buf_init(&b);
    if (sl_audit_checkpoint_sign(&e->audit_key, e->audit_origin, &e->audit_head,
                                 sl_eng_now_ms(e), &b) < 0 || b.failed ||
        sl_store_audit_checkpoint_put(e->st, e->audit_head.size, sl_eng_now_ms(e), b.data) < 0) {
        sl_warn("msg=\"cannot write an audit checkpoint\" size=%lld",
                (long long)e->audit_head.size);
        sl_buf_fini(&b);
        return; /* tried again at the next interval */
    }
    free(e->audit_ckpt_text);
    e->audit_ckpt_text = b.data;
    e->audit_ckpt_size = e->audit_head.size;
    e->next_ckpt_ms = sl_eng_mono_ms(e) + AUDIT_CHECKPOINT_MS;
}

void sl_eng_audit_committed(struct sl_engine *e)
{
    char path[1200], tmp[1210];
    int fd;

    pthread_mutex_lock(&e->mu);
    e->audit_committed = e->audit_head;
    pthread_mutex_unlock(&e->mu);
    if (!e->audit_ckpt_text)
        return;
    snprintf(path, sizeof(path), "%s/audit.checkpoint", e->data_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) >= 0) {
        size_t n = strlen(e->audit_ckpt_text);
        bool good = write(fd, e->audit_ckpt_text, n) == (ssize_t)n && fsync(fd) == 0;
        close(fd);
        if (!good || rename(tmp, path) < 0)
            sl_warn("msg=\"cannot write %s\"", path);
    }
    free(e->audit_ckpt_text);
    e->audit_ckpt_text = NULL;
}

void sl_eng_audit_rollback(struct sl_engine *e)
{
    e->audit_head = e->audit_committed;
    free(e->audit_ckpt_text);
    e->audit_ckpt_text = NULL;
}

/* Several daemons on one store sign one log: each must hold the same key,
 * or the checkpoints of one would not verify against another's public key.
 * The first leader records its verifier key in the store; a later leader
 * with another key refuses to lead, saying what to copy. */
static int audit_key_shared(struct sl_engine *e, const char *path, struct sl_error *err)
{
    char stored[256];
    int rc = sl_store_meta_get(e->st, "audit_vkey", stored, sizeof(stored));

    if (rc == 0) {
        if (strcmp(stored, e->audit_vkey) != 0)
            return sl_errorf(err, -EPERM,
                             "%s: not the audit key the other daemons on this store sign "
                             "with (%s): copy DATA/audit.key from the first daemon to every "
                             "daemon's data dir (docs/ha.md)",
                             path, stored);
        return 0;
    }
    if (rc != -ENOENT)
        return sl_errorf(err, rc, "store: cannot read the audit key's record");
    if ((rc = sl_store_begin(e->st)) < 0 ||
        (rc = sl_store_meta_set(e->st, "audit_vkey", e->audit_vkey)) < 0 ||
        (rc = sl_store_commit(e->st, NULL)) < 0) {
        sl_store_rollback(e->st);
        return sl_errorf(err, rc, "store: cannot record the audit key");
    }
    return 0;
}

int sl_eng_audit_open(struct sl_engine *e, struct sl_error *err)
{
    char path[1200];
    int rc;

    snprintf(path, sizeof(path), "%s/audit.key", e->data_dir);
    if ((rc = sl_audit_key_load_or_create(path, "sluice-audit", &e->audit_key, err)) < 0)
        return rc;
    if (sl_audit_vkey(&e->audit_key, e->audit_vkey, sizeof(e->audit_vkey)) < 0)
        return sl_errorf(err, -EINVAL, "%s: cannot make its verifier key", path);
    snprintf(e->audit_origin, sizeof(e->audit_origin), "sluice.audit/%s", e->hostname);
    if (e->cfg.ha_epoch && (rc = audit_key_shared(e, path, err)) < 0)
        return rc;
    if ((rc = sl_store_audit_head(e->st, &e->audit_head.size, e->audit_head.hash)) < 0)
        return sl_errorf(err, rc, "store: cannot read the audit log's head");
    e->audit_committed = e->audit_head;
    e->audit_ckpt_size = -1; /* a first checkpoint at the first interval */
    e->next_ckpt_ms = 0;
    sl_buf_init(&e->audit_line);
    return 0;
}

int sl_engine_audit_checkpoint(struct sl_engine *e, struct sl_buf *out, int64_t *size)
{
    struct sl_audit_head h;

    pthread_mutex_lock(&e->mu);
    h = e->audit_committed;
    pthread_mutex_unlock(&e->mu);
    if (size)
        *size = h.size;
    return sl_audit_checkpoint_sign(&e->audit_key, e->audit_origin, &h, sl_eng_now_ms(e), out);
}

const char *sl_engine_audit_vkey(struct sl_engine *e) { return e->audit_vkey; }
