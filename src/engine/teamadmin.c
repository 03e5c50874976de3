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

/* A User document a team-admin applies: a user of its own team (not an
 * admin or auditor), given a role it holds at most, and no change of the
 * Unix account its jobs run as. Returns 0 or a refusal (op failed). */
static int check_user(struct sl_engine *e, struct sl_op *op, size_t i)
{
    const struct sl_manifest *m = &op->u.apply.manifests[i];
    const struct user *u = sl_eng_user_find(e, m->name);
    const char *team = op->who.team, *r = m->u.user.role, *field = NULL;
    char msg[192];

    if (strcmp(m->u.user.team, team) != 0) {
        snprintf(msg, sizeof(msg), "a team-admin adds users to its own team (%s) only", team);
        field = "spec.team";
    } else if (u && (strcmp(u->team, team) != 0 || strcmp(u->role, "admin") == 0 ||
                     strcmp(u->role, "auditor") == 0)) {
        snprintf(msg, sizeof(msg),
                 "user '%s' is not a member of team %s that a team-admin may change", m->name,
                 team);
        field = "metadata.name";
    } else if (strcmp(r, "team-admin") && strcmp(r, "member") && strcmp(r, "viewer")) {
        snprintf(msg, sizeof(msg),
                 "a team-admin may not grant role %s: no role grants more than it holds", r);
        field = "spec.role";
    } else if (m->u.user.unix_user[0] &&
               strcmp(m->u.user.unix_user, u ? u->unix_user : "") != 0) {
        /* The account a user's jobs run as is a host identity: mapping
         * one onto another team's account, or onto a privileged one, is
         * an escalation. Left out, the mapping stays as it is
         * (sl_eng_do_apply). */
        snprintf(msg, sizeof(msg),
                 "only an admin sets or changes the Unix account a user's jobs run as");
        field = "spec.unixUser";
    }
    return field ? sl_eng_manifest_forbidden(op, i, op->u.apply.n, field, msg) : 0;
}

/* A Queue document a team-admin applies: a queue of its own team whose
 * weight and cohort stay as an admin set them. */
static int check_queue(struct sl_engine *e, struct sl_op *op, size_t i)
{
    const struct sl_manifest *m = &op->u.apply.manifests[i];
    const struct queue *q = sl_eng_queue_find(e, m->name);
    const char *team = op->who.team;
    char msg[192];

    if (strcmp(m->u.queue.team, team) != 0 || (q && strcmp(q->team, team) != 0)) {
        snprintf(msg, sizeof(msg), "a team-admin applies the queues of its own team (%s) only",
                 team);
        return sl_eng_manifest_forbidden(op, i, op->u.apply.n, "spec.team", msg);
    }
    if (m->u.queue.weight_milli != (q ? queue_weight(q) : 1000)) {
        snprintf(msg, sizeof(msg), "only an admin changes a queue's fair-share weight");
        return sl_eng_manifest_forbidden(op, i, op->u.apply.n, "spec.weight", msg);
    }
    if (strcmp(m->u.queue.cohort, q ? q->cohort : "") != 0) {
        snprintf(msg, sizeof(msg),
                 "only an admin puts a queue in a cohort or takes it out (it is '%s')",
                 q ? q->cohort : "");
        return sl_eng_manifest_forbidden(op, i, op->u.apply.n, "spec.cohort", msg);
    }
    return 0;
}

/* A team's queues as manifests: before the apply (*before, nb) and after
 * it (*after, na: those the apply leaves, then its last document of each
 * queue). Returns 0, -ENOMEM, or -EINVAL when a stored queue does not
 * parse. */
static int team_queues(struct sl_engine *e, const struct sl_op *op, struct sl_manifest *before,
                       int *nb, struct sl_manifest *after, int *na)
{
    const struct sl_manifest *ms = op->u.apply.manifests;
    size_t n = op->u.apply.n;
    int rc;

    for (int i = 0; i < e->nqueues; i++) {
        const struct queue *q = &e->queues[i];
        struct sl_manifest *m = NULL;
        bool replaced = false;
        if (strcmp(q->team, op->who.team) != 0)
            continue;
        if (!q->spec_json) {
            /* made with its team, never applied: no quota, no cohort */
            struct sl_manifest *b = &before[*nb];
            memset(b, 0, sizeof(*b));
            b->kind = SL_KIND_QUEUE;
            sl_strlcpy(b->name, q->name, sizeof(b->name));
            sl_strlcpy(b->u.queue.team, q->team, sizeof(b->u.queue.team));
            b->u.queue.weight_milli = 1000;
            sl_res_list_init(&b->u.queue.nominal);
            sl_res_list_init(&b->u.queue.borrowing_limit);
            sl_res_list_init(&b->u.queue.lending_limit);
            sl_res_list_init(&b->u.queue.user_limit);
            (*nb)++;
        } else if ((rc = sl_eng_manifest_from_store("Queue", q->name, q->spec_json, &m)) < 0) {
            return rc;
        } else {
            before[(*nb)++] = *m;
            free(m);
        }
        for (size_t k = 0; k < n; k++)
            replaced |= ms[k].kind == SL_KIND_QUEUE && strcmp(ms[k].name, q->name) == 0;
        if (!replaced)
            after[(*na)++] = before[*nb - 1];
    }
    for (size_t k = 0; k < n; k++) {
        bool later = false;
        if (ms[k].kind != SL_KIND_QUEUE)
            continue;
        for (size_t l = k + 1; l < n; l++)
            later |= ms[l].kind == SL_KIND_QUEUE && strcmp(ms[l].name, ms[k].name) == 0;
        if (!later)
            after[(*na)++] = ms[k];
    }
    return 0;
}

#define MODELS_MAX (2 * SL_MAX_MODELS * 8)

/* The GPU models that the nominal quota and borrowing limits of 'qs' name,
 * added to models[0..*n). */
static void quota_models(const struct sl_manifest *qs, int nq, char models[][48], int *n)
{
    for (int i = 0; i < nq; i++)
        for (int b = 0; b < 2; b++) {
            const struct sl_res_list *l =
                b ? &qs[i].u.queue.borrowing_limit : &qs[i].u.queue.nominal;
            for (int x = 0; x < l->nmodels; x++) {
                int y;
                for (y = 0; y < *n && strcasecmp(models[y], l->model[x]); y++)
                    ;
                if (y == *n && *n < MODELS_MAX)
                    sl_strlcpy(models[(*n)++], l->model[x], 48);
            }
        }
}

/* The team's total nominal quota and borrowing limit of each resource
 * (GPUs, CPUs, memory, GPUs of each model) may not grow. */
static int check_quota(struct sl_op *op, const struct sl_manifest *before, int nb,
                       const struct sl_manifest *after, int na)
{
    static const char *const what[] = {"GPUs", "CPUs", "memory", "weight"};
    char models[MODELS_MAX][48];
    int nmodels = 0;

    quota_models(before, nb, models, &nmodels);
    quota_models(after, na, models, &nmodels);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4 + nmodels; k++) {
            const char *model = k >= 4 ? models[k - 4] : NULL;
            int64_t sb = 0, sa = 0;
            if (k == 3)
                continue; /* weights: checked per queue */
            for (int i = 0; i < nb; i++)
                sb = res_add(sb, res_amount(&before[i], b, k, model));
            for (int i = 0; i < na; i++)
                sa = res_add(sa, res_amount(&after[i], b, k, model));
            if (sa <= sb)
                continue;
            sl_eng_op_fail(op, 403, "forbidden");
            return sl_errorf_field(&op->err, -EPERM, b ? "spec.borrowingLimit" : "spec.nominal",
                                   "team %s's queues would hold more %s%s%s than an admin "
                                   "granted it; a team-admin moves quota between its "
                                   "queues, an admin adds to it",
                                   op->who.team, b ? "borrowing of " : "", model ? model : "",
                                   model ? " GPUs" : what[k]);
        }
    return 0;
}

int sl_eng_team_admin_check(struct sl_engine *e, struct sl_op *op)
{
    struct sl_manifest *before = NULL, *after = NULL;
    int nb = 0, na = 0, rc = 0;
    char msg[192];

    for (size_t i = 0; i < op->u.apply.n; i++) {
        enum sl_manifest_kind kind = op->u.apply.manifests[i].kind;
        if (kind == SL_KIND_USER)
            rc = check_user(e, op, i);
        else if (kind == SL_KIND_QUEUE)
            rc = check_queue(e, op, i);
        else {
            snprintf(msg, sizeof(msg),
                     "a team-admin applies User and Queue manifests of its team only");
            rc = sl_eng_manifest_forbidden(op, i, op->u.apply.n, "kind", msg);
        }
        if (rc < 0)
            return rc;
    }
    if (!(before = calloc((size_t)e->nqueues + 1, sizeof(*before))) ||
        !(after = calloc((size_t)e->nqueues + op->u.apply.n + 1, sizeof(*after))))
        rc = -ENOMEM;
    else if ((rc = team_queues(e, op, before, &nb, after, &na)) == 0)
        rc = check_quota(op, before, nb, after, na);
    free(before);
    free(after);
    if (rc == -ENOMEM) {
        sl_eng_op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
    } else if (rc < 0 && !op->status) {
        sl_eng_op_fail(op, 500, "internal");
        sl_errorf(&op->err, rc, "a stored queue of team %s does not parse", op->who.team);
    }
    return rc;
}
