/*
 * teamadmin.c - what a team-admin may apply: the rules that need state (its own
 * team's queues and users, quota within the team's, no identity fields).
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

/* Amount 'k' of list 'l' (0 GPUs, 1 CPUs, 2 memory, 3 the weight, 4 + i
 * model[i] of 'models'); RES_INF when not given (not limited). */
static int64_t res_amount(const struct sl_manifest *m, bool borrow, int k, const char *model)
{
    const struct sl_res_list *l = borrow ? &m->u.queue.borrowing_limit : &m->u.queue.nominal;
    int64_t v = -1;

    if (k == 0)
        v = l->gpu_milli;
    else if (k == 1)
        v = l->cpu_milli;
    else if (k == 2)
        v = l->mem_bytes;
    else if (k == 3)
        return borrow ? 0 : m->u.queue.weight_milli;
    else
        for (int i = 0; i < l->nmodels; i++)
            if (strcasecmp(l->model[i], model) == 0)
                v = l->model_milli[i];
    return v < 0 ? RES_INF : v;
}

static int64_t res_add(int64_t a, int64_t b)
{
    return a == RES_INF || b == RES_INF || a > RES_INF - b ? RES_INF : a + b;
}

static int64_t queue_weight(const struct queue *q)
{
    struct sl_manifest *m = NULL;
    int64_t w = 1000;

    if (sl_eng_manifest_from_store("Queue", q->name, q->spec_json, &m) == 0)
        w = m->u.queue.weight_milli;
    free(m);
    return w;
}

int sl_eng_team_admin_check(struct sl_engine *e, struct sl_op *op)
{
    const char *team = op->who.team;
    struct sl_manifest *before = NULL, *after = NULL;
    int nb = 0, na = 0, rc = 0;
    char models[2 * SL_MAX_MODELS * 8][48];
    int nmodels = 0;

    for (size_t i = 0; i < op->nmanifests; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        char msg[192];
        if (m->kind == SL_KIND_USER) {
            const struct user *u = sl_eng_user_find(e, m->name);
            const char *r = m->u.user.role, *field = NULL;
            if (strcmp(m->u.user.team, team) != 0) {
                snprintf(msg, sizeof(msg), "a team-admin adds users to its own team (%s) only",
                         team);
                field = "spec.team";
            } else if (u && (strcmp(u->team, team) != 0 || strcmp(u->role, "admin") == 0 ||
                             strcmp(u->role, "auditor") == 0)) {
                snprintf(msg, sizeof(msg), "user '%s' is not a member of team %s that a "
                         "team-admin may change", m->name, team);
                field = "metadata.name";
            } else if (strcmp(r, "team-admin") && strcmp(r, "member") && strcmp(r, "viewer")) {
                snprintf(msg, sizeof(msg), "a team-admin may not grant role %s: no role "
                         "grants more than it holds", r);
                field = "spec.role";
            } else if (m->u.user.unix_user[0] &&
                       strcmp(m->u.user.unix_user, u ? u->unix_user : "") != 0) {
                /* The account a user's jobs run as is a host identity:
                 * mapping one onto another team's account, or onto a
                 * privileged one, is an escalation. Left out, the mapping
                 * stays as it is (sl_eng_do_apply). */
                snprintf(msg, sizeof(msg), "only an admin sets or changes the Unix account "
                         "a user's jobs run as");
                field = "spec.unixUser";
            }
            if (field)
                return sl_eng_manifest_forbidden(op, i, op->nmanifests, field, msg);
            continue;
        }
        if (m->kind == SL_KIND_QUEUE) {
            const struct queue *q = sl_eng_queue_find(e, m->name);
            if (strcmp(m->u.queue.team, team) != 0 || (q && strcmp(q->team, team) != 0)) {
                snprintf(msg, sizeof(msg), "a team-admin applies the queues of its own "
                         "team (%s) only", team);
                return sl_eng_manifest_forbidden(op, i, op->nmanifests, "spec.team", msg);
            }
            if (m->u.queue.weight_milli != (q ? queue_weight(q) : 1000)) {
                snprintf(msg, sizeof(msg), "only an admin changes a queue's fair-share "
                         "weight");
                return sl_eng_manifest_forbidden(op, i, op->nmanifests, "spec.weight", msg);
            }
            if (strcmp(m->u.queue.cohort, q ? q->cohort : "") != 0) {
                snprintf(msg, sizeof(msg), "only an admin puts a queue in a cohort or takes "
                         "it out (it is '%s')", q ? q->cohort : "");
                return sl_eng_manifest_forbidden(op, i, op->nmanifests, "spec.cohort", msg);
            }
            continue;
        }
        snprintf(msg, sizeof(msg), "a team-admin applies User and Queue manifests of its "
                 "team only");
        return sl_eng_manifest_forbidden(op, i, op->nmanifests, "kind", msg);
    }
    /* the team's queues before and after */
    if (!(before = calloc((size_t)e->nqueues + 1, sizeof(*before))) ||
        !(after = calloc((size_t)e->nqueues + op->nmanifests + 1, sizeof(*after)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (int i = 0; i < e->nqueues; i++) {
        const struct queue *q = &e->queues[i];
        struct sl_manifest *m = NULL;
        bool replaced = false;
        if (strcmp(q->team, team) != 0)
            continue;
        if (!q->spec_json) {
            /* made with its team, never applied: no quota, no cohort */
            memset(&before[nb], 0, sizeof(before[nb]));
            before[nb].kind = SL_KIND_QUEUE;
            sl_strlcpy(before[nb].name, q->name, sizeof(before[nb].name));
            sl_strlcpy(before[nb].u.queue.team, q->team, sizeof(before[nb].u.queue.team));
            before[nb].u.queue.weight_milli = 1000;
            sl_res_list_init(&before[nb].u.queue.nominal);
            sl_res_list_init(&before[nb].u.queue.borrowing_limit);
            sl_res_list_init(&before[nb].u.queue.lending_limit);
            sl_res_list_init(&before[nb].u.queue.user_limit);
            nb++;
        } else if ((rc = sl_eng_manifest_from_store("Queue", q->name, q->spec_json, &m)) < 0) {
            goto out;
        } else {
            before[nb++] = *m;
            free(m);
        }
        for (size_t k = 0; k < op->nmanifests; k++)
            replaced |= op->manifests[k].kind == SL_KIND_QUEUE &&
                        strcmp(op->manifests[k].name, q->name) == 0;
        if (!replaced)
            after[na++] = before[nb - 1];
    }
    for (size_t k = 0; k < op->nmanifests; k++) {
        bool later = false;
        if (op->manifests[k].kind != SL_KIND_QUEUE)
            continue;
        for (size_t l = k + 1; l < op->nmanifests; l++)
            later |= op->manifests[l].kind == SL_KIND_QUEUE &&
                     strcmp(op->manifests[l].name, op->manifests[k].name) == 0;
        if (!later)
            after[na++] = op->manifests[k];
    }
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < (side ? na : nb); i++) {
            const struct sl_manifest *m = side ? &after[i] : &before[i];
            for (int b = 0; b < 2; b++) {
                const struct sl_res_list *l = b ? &m->u.queue.borrowing_limit
                                                : &m->u.queue.nominal;
                for (int x = 0; x < l->nmodels; x++) {
                    int y;
                    for (y = 0; y < nmodels && strcasecmp(models[y], l->model[x]); y++)
                        ;
                    if (y == nmodels && nmodels < (int)SL_ARRAY_LEN(models))
                        sl_strlcpy(models[nmodels++], l->model[x], 48);
                }
            }
        }
    for (int b = 0; b < 2 && rc == 0; b++)
        for (int k = 0; k < 4 + nmodels && rc == 0; k++) {
            static const char *const what[] = {"GPUs", "CPUs", "memory", "weight"};
            if (k == 3)
                continue; /* weights: checked per queue above */
            const char *model = k >= 4 ? models[k - 4] : NULL;
            int64_t sb = 0, sa = 0;
            for (int i = 0; i < nb; i++)
                sb = res_add(sb, res_amount(&before[i], b, k, model));
            for (int i = 0; i < na; i++)
                sa = res_add(sa, res_amount(&after[i], b, k, model));
            if (sa > sb) {
                sl_eng_op_fail(op, 403, "forbidden");
                rc = sl_errorf_field(&op->err, -EPERM,
                                     b ? "spec.borrowingLimit" : "spec.nominal",
                                     "team %s's queues would hold more %s%s%s%s than an admin "
                                     "granted it; a team-admin moves quota between its "
                                     "queues, an admin adds to it",
                                     team, b ? "borrowing of " : "", model ? model : "",
                                     model ? " GPUs" : what[k], "");
            }
        }
out:
    free(before);
    free(after);
    if (rc == -ENOMEM) {
        sl_eng_op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
    } else if (rc < 0 && !op->status) {
        sl_eng_op_fail(op, 500, "internal");
        sl_errorf(&op->err, rc, "a stored queue of team %s does not parse", team);
    }
    return rc;
}
