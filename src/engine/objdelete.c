/*
 * objdelete.c - deleting the catalog's objects (DELETE /v1/objects/{kind}/
 * {ref}): the rules that refuse a delete while something depends on the
 * object, what --force does, and the removal from memory and the store.
 * The rules, kind by kind, are in docs/api-contract.md ("Objects").
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sched/sched.h"
#include "../store/store.h"
#include "../util/buf.h"

/* The jobs not yet final that 'match' picks, counted by state; their ids
 * into 'ids' (may be NULL). */
struct live_jobs {
    int pending, running;
    json_t *ids;
};

static bool job_uses_dataset(const struct job *j, const char *key)
{
    size_t n = strlen(key);

    for (int i = 0; i < j->spec->n_datasets; i++)
        if (strncmp(j->spec->datasets[i], key, n) == 0 &&
            (j->spec->datasets[i][n] == '\0' || j->spec->datasets[i][n] == ':'))
            return true;
    return false;
}

/* The live jobs that refer to object 'key' of 'kind'. */
static int live_jobs(struct sl_engine *e, int kind, const char *key, struct live_jobs *lj)
{
    int64_t id;
    void *v;

    memset(lj, 0, sizeof(*lj));
    if (!(lj->ids = json_array()))
        return -ENOMEM;
    for (size_t pos = 0; sl_imap_next(&e->jobs, &pos, &id, &v);) {
        const struct job *j = v;
        bool hit = (kind == SL_KIND_QUEUE && strcmp(j->queue, key) == 0) ||
                   (kind == SL_KIND_PRIORITY_CLASS && strcmp(j->pclass, key) == 0) ||
                   (kind == SL_KIND_USER && strcmp(j->user, key) == 0) ||
                   (kind == SL_KIND_TEAM && strcmp(j->team, key) == 0) ||
                   (kind == SL_KIND_DATASET && job_uses_dataset(j, key));
        if (!hit || (j->state != SL_JOB_PENDING && j->state != SL_JOB_RUNNING))
            continue;
        if (j->state == SL_JOB_PENDING)
            lj->pending++;
        else
            lj->running++;
        if (json_array_append_new(lj->ids, json_integer(id)) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* "3 pending and 1 running jobs" */
static const char *jobs_text(const struct live_jobs *lj, char *buf, size_t size)
{
    int n = lj->pending + lj->running;

    if (lj->pending && lj->running)
        snprintf(buf, size, "%d pending and %d running jobs", lj->pending, lj->running);
    else
        snprintf(buf, size, "%d %s job%s", n, lj->pending ? "pending" : "running",
                 n == 1 ? "" : "s");
    return buf;
}

static int refuse(struct sl_op *op, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(struct sl_op *op, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    char msg[sizeof(op->err.text)];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sl_eng_op_fail(op, status, code);
    return sl_errorf(&op->err, status == 404 ? -ENOENT : -EBUSY, "%s", msg);
}

/* Names into a list "a, b, c" (at most 'size' bytes, "..." when cut). */
static void names_add(char *buf, size_t size, const char *name)
{
    size_t o = strlen(buf);

    if (o + strlen(name) + 6 >= size) {
        if (o + 4 < size && !strstr(buf, "..."))
            memcpy(buf + o, ", ...", o + 6 <= size ? 6 : 0);
        return;
    }
    snprintf(buf + o, size - o, "%s%s", o ? ", " : "", name);
}

/* Cancel every job of 'lj' through the cancel path, each audited as a
 * job.cancel of the deleting caller. Returns how many are still running
 * (asked to stop), or a negative errno. */
static int cancel_all(struct sl_engine *e, struct sl_op *op, const struct live_jobs *lj,
                      json_t *stopping)
{
    size_t i;
    json_t *v;

    json_array_foreach (lj->ids, i, v) {
        struct sl_op c = {.kind = SL_OP_CANCEL, .who = op->who};
        struct job *j;
        int rc;

        c.u.cancel.job_id = json_integer_value(v);
        snprintf(c.object, sizeof(c.object), "job:%lld", (long long)c.u.cancel.job_id);
        c.audit_details = json_pack("{s:s}", "for", op->object);
        rc = sl_eng_do_cancel(e, &c);
        sl_eng_audit_op(e, &c, rc);
        sl_op_fini(&c);
        if (rc < 0 && rc != -EALREADY) {
            sl_eng_op_fail(op, 503, "unavailable");
            e->write_failed = true; /* earlier cancels are in memory only */
            return sl_errorf(&op->err, rc, "cancelling job %lld failed",
                             (long long)json_integer_value(v));
        }
        if ((j = sl_imap_get(&e->jobs, json_integer_value(v))) && j->state == SL_JOB_RUNNING)
            json_array_append_new(stopping, json_integer(j->id));
    }
    return (int)json_array_size(stopping);
}

/* ---- the checks, kind by kind: 0 when nothing refers to the object ---- */

static bool is_default_queue(struct sl_engine *e, const char *q, char *team, size_t size)
{
    for (int i = 0; i < e->nteams; i++)
        if (strcmp(e->teams[i].default_queue, q) == 0) {
            sl_strlcpy(team, e->teams[i].name, size);
            return true;
        }
    return false;
}

/* Datasets owned by 'team' (names into 'list'). */
struct owned {
    const char *team;
    char *list;
    size_t size;
    int n;
};

static int owned_row(void *arg, const char *name, const char *spec)
{
    struct owned *o = arg;
    json_t *d = json_loads(spec, 0, NULL);
    const char *owner = json_string_value(json_object_get(d, "owner"));

    if (owner && strcmp(owner, o->team) == 0 && ++o->n)
        names_add(o->list, o->size, name);
    json_decref(d);
    return 0;
}

static int check_team(struct sl_engine *e, struct sl_op *op, const char *name)
{
    const struct team *t = sl_eng_team_find(e, name);
    char users[256] = "", queues[256] = "", owned[256] = "", sets[256] = "";
    struct owned ds = {name, sets, sizeof(sets), 0};
    int nu = 0, nq = 0, no = 0;

    for (int i = 0; i < e->nusers; i++)
        if (strcmp(e->users[i].team, name) == 0 && ++nu) {
            names_add(users, sizeof(users), e->users[i].name);
            if (op->u.del.force && strcmp(e->users[i].name, op->who.user) == 0)
                return refuse(op, 409, "conflict",
                              "team %s has the caller (%s) as a user: an admin does not "
                              "delete itself",
                              name, op->who.user);
        }
    for (int i = 0; i < e->nqueues; i++)
        if (strcmp(e->queues[i].team, name) == 0 &&
            strcmp(e->queues[i].name, t->default_queue) != 0 && ++nq)
            names_add(queues, sizeof(queues), e->queues[i].name);
    for (int i = 0; i < e->nbudgets; i++)
        if (strcmp(e->budgets[i].b.team, name) == 0 && ++no)
            names_add(owned, sizeof(owned), e->budgets[i].b.name);
    if (sl_store_objs_each(e->st, "Dataset", owned_row, &ds) < 0)
        return refuse(op, 503, "unavailable", "store: cannot read the datasets");
    if ((nu || nq) && !op->u.del.force)
        return refuse(op, 409, "conflict",
                      "team %s has %d user%s%s%s%s and %d queue%s%s%s%s besides its default "
                      "queue; --force deletes them",
                      name, nu, nu == 1 ? "" : "s", nu ? " (" : "", users, nu ? ")" : "",
                      nq, nq == 1 ? "" : "s", nq ? " (" : "", queues, nq ? ")" : "");
    if (no && !op->u.del.force)
        return refuse(op, 409, "conflict", "team %s has budgets (%s); --force deletes them",
                      name, owned);
    if (ds.n)
        return refuse(op, 409, "conflict",
                      "team %s owns datasets (%s); delete them or give them another owner "
                      "first",
                      name, sets);
    return 0;
}

static int check_cohort(struct sl_engine *e, struct sl_op *op, const char *name)
{
    char queues[256] = "";
    int n = 0;

    for (int i = 0; i < e->nqueues; i++)
        if (strcmp(e->queues[i].cohort, name) == 0 && ++n)
            names_add(queues, sizeof(queues), e->queues[i].name);
    return n ? refuse(op, 409, "conflict",
                      "cohort %s has %d queue%s (%s); apply them without spec.cohort first",
                      name, n, n == 1 ? "" : "s", queues)
             : 0;
}

/* ---- removal from memory (under e->mu) and the store ---- */

static void remove_at(void *arr, int *n, size_t size, int i)
{
    char *a = arr;

    memmove(a + (size_t)i * size, a + (size_t)(i + 1) * size, (size_t)(*n - i - 1) * size);
    (*n)--;
}

/* The queue leaves the scheduler's accounts: it keeps its slot (indices
 * are for life) without quota, cohort or jobs. */
static void queue_gone(struct sl_engine *e, int i)
{
    struct sl_sched_queue_spec qs = {0};

    qs.name = e->queues[i].name;
    qs.team = e->queues[i].team;
    qs.weight = 1;
    sl_sched_res_unset(&qs.nominal);
    sl_sched_res_unset(&qs.borrowing_limit);
    sl_sched_res_unset(&qs.lending_limit);
    sl_sched_res_unset(&qs.user_limit);
    sl_sched_queue_set(e->sched, &qs);
    free(e->queues[i].spec_json);
    remove_at(e->queues, &e->nqueues, sizeof(e->queues[0]), i);
}

static int remove_object(struct sl_engine *e, int kind, const char *key)
{
    const char *kname = sl_manifest_kind_name(kind);
    int rc = 0;

    if (kind == SL_KIND_POLICY || kind == SL_KIND_DATASET)
        rc = sl_store_obj_del(e->st, kname, key);
    else
        rc = sl_store_catalog_del(e->st, kname, key);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; kind == SL_KIND_TEAM && i < e->nteams; i++)
        if (strcmp(e->teams[i].name, key) == 0)
            remove_at(e->teams, &e->nteams, sizeof(e->teams[0]), i);
    for (int i = 0; kind == SL_KIND_QUEUE && i < e->nqueues; i++)
        if (strcmp(e->queues[i].name, key) == 0)
            queue_gone(e, i);
    for (int i = 0; kind == SL_KIND_COHORT && i < e->ncohorts; i++)
        if (strcmp(e->cohorts[i].name, key) == 0)
            remove_at(e->cohorts, &e->ncohorts, sizeof(e->cohorts[0]), i);
    for (int i = 0; kind == SL_KIND_PRIORITY_CLASS && i < e->npclasses; i++)
        if (strcmp(e->pclasses[i].name, key) == 0)
            remove_at(e->pclasses, &e->npclasses, sizeof(e->pclasses[0]), i);
    for (int i = 0; kind == SL_KIND_USER && i < e->nusers; i++)
        if (strcmp(e->users[i].name, key) == 0)
            remove_at(e->users, &e->nusers, sizeof(e->users[0]), i);
    for (int i = 0; kind == SL_KIND_BUDGET && i < e->nbudgets; i++)
        if (strcmp(e->budgets[i].b.name, key) == 0)
            remove_at(e->budgets, &e->nbudgets, sizeof(e->budgets[0]), i);
    for (int i = 0; kind == SL_KIND_POLICY && i < e->npolicies; i++)
        if (strcmp(e->policies[i].name, key) == 0)
            remove_at(e->policies, &e->npolicies, sizeof(e->policies[0]), i);
    pthread_mutex_unlock(&e->mu);
    if (kind == SL_KIND_USER)
        e->tokens_revoked = true; /* cached tokens of the user are dropped */
    e->sched_full = true;
    return 0;
}

/* The checks of 'kind' that need no jobs: 0, or the op refused. */
static int check_refs(struct sl_engine *e, struct sl_op *op, int kind, const char *key)
{
    char team[64];
    int live;

    switch (kind) {
    case SL_KIND_SCHEDULER:
    case SL_KIND_PRICING:
        return refuse(op, 409, "conflict",
                      "one %s is always in force: apply a changed one instead",
                      sl_manifest_kind_name(kind));
    case SL_KIND_TEAM:
        return check_team(e, op, key);
    case SL_KIND_COHORT:
        return check_cohort(e, op, key);
    case SL_KIND_QUEUE:
        if (is_default_queue(e, key, team, sizeof(team)))
            return refuse(op, 409, "conflict",
                          "queue %s is the default queue of team %s; apply team %s with "
                          "another spec.defaultQueue first, or delete the team",
                          key, team, team);
        return 0;
    case SL_KIND_PRIORITY_CLASS:
        if (sl_eng_pclass_find(e, key) && sl_eng_pclass_find(e, key)->is_default)
            return refuse(op, 409, "conflict",
                          "priority class %s is the default class; apply another with "
                          "spec.default: true first",
                          key);
        return 0;
    case SL_KIND_USER:
        if (strcmp(key, op->who.user) == 0)
            return refuse(op, 409, "conflict",
                          "user %s is the caller: an admin does not delete itself", key);
        live = sl_store_user_tokens_live(e->st, key, sl_eng_now_ms(e));
        if (live < 0)
            return refuse(op, 503, "unavailable", "store: cannot count the user's tokens");
        if (live > 0 && !op->u.del.force)
            return refuse(op, 409, "conflict",
                          "user %s has %d live token%s; --force revokes them", key, live,
                          live == 1 ? "" : "s");
        return 0;
    default:
        return 0;
    }
}

/* What goes with a team (its live jobs refused already): its users (and
 * their tokens), its queues, its budgets; their names into 'gone'. */
static int team_members_too(struct sl_engine *e, const char *team, json_t *gone)
{
    json_t *todo = json_array(), *v;
    size_t i;
    int rc = 0;

    if (!todo)
        return -ENOMEM;
    for (int k = 0; k < e->nusers; k++)
        if (strcmp(e->users[k].team, team) == 0)
            json_array_append_new(todo, json_pack("[i,s]", SL_KIND_USER, e->users[k].name));
    for (int k = 0; k < e->nqueues; k++)
        if (strcmp(e->queues[k].team, team) == 0)
            json_array_append_new(todo, json_pack("[i,s]", SL_KIND_QUEUE, e->queues[k].name));
    for (int k = 0; k < e->nbudgets; k++)
        if (strcmp(e->budgets[k].b.team, team) == 0)
            json_array_append_new(todo, json_pack("[i,s]", SL_KIND_BUDGET, e->budgets[k].b.name));
    json_array_foreach (todo, i, v) {
        int kind = (int)json_integer_value(json_array_get(v, 0));
        const char *name = json_string_value(json_array_get(v, 1));
        char what[160];
        if (!name) {
            rc = -ENOMEM;
            break;
        }
        if ((rc = remove_object(e, kind, name)) < 0)
            break;
        snprintf(what, sizeof(what), "%s:%s", sl_manifest_kind_name(kind), name);
        json_array_append_new(gone, json_string(what));
    }
    json_decref(todo);
    return rc;
}

int sl_eng_do_delete(struct sl_engine *e, struct sl_op *op)
{
    int kind = op->u.del.kind, rc;
    const char *key = op->u.del.key, *kname = sl_manifest_kind_name(kind);
    char lower[32] = "";
    struct sl_manifest *m = malloc(sizeof(*m));
    struct live_jobs lj = {0};
    json_t *stopping = json_array(), *gone = json_array();
    char jobs[96];

    snprintf(op->object, sizeof(op->object), "%s:%s", kname ? kname : "?", key);
    for (size_t i = 0; kname && kname[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)(kname[i] | 0x20); /* "queue rq has ..." */
    if (!m || !stopping || !gone) {
        rc = -ENOMEM;
        goto oom;
    }
    if (!sl_eng_is_admin(&op->who)) {
        rc = refuse(op, 403, "forbidden", "only an admin deletes objects");
        goto out;
    }
    if ((rc = sl_eng_manifest_current(e, e->st, kind, key, m)) == -ENOMEM)
        goto oom;
    if (rc < 0) {
        rc = refuse(op, 404, "not_found", "%s %s not found", lower, key);
        goto out;
    }
    if ((rc = check_refs(e, op, kind, key)) < 0)
        goto out;
    if ((rc = live_jobs(e, kind, key, &lj)) < 0)
        goto oom;
    if (lj.pending + lj.running) {
        bool forceable = kind == SL_KIND_QUEUE;
        if (!forceable || !op->u.del.force) {
            rc = refuse(op, 409, "conflict", "%s %s has %s%s", lower, key,
                        jobs_text(&lj, jobs, sizeof(jobs)),
                        forceable ? "; --force cancels them"
                        : kind == SL_KIND_TEAM ? "; delete its queues with --force first"
                                               : "; cancel them first");
            goto out;
        }
        if ((rc = cancel_all(e, op, &lj, stopping)) < 0)
            goto out;
        if (rc > 0) {
            /* the cancels stand (each audited); the queue stays until its
             * running jobs have ended */
            op->result = json_pack("{s:s, s:s, s:b, s:O, s:O, s:s}", "kind", kname, "name",
                                   key, "deleted", false, "cancelled", lj.ids, "stopping",
                                   stopping, "message",
                                   "running jobs are stopping; delete again once they "
                                   "have ended");
            op->audit_details = json_pack("{s:b, s:O, s:O}", "deleted", false, "cancelled",
                                          lj.ids, "stopping", stopping);
            op->status = 202;
            rc = 0;
            goto out;
        }
    }
    if ((kind == SL_KIND_TEAM && (rc = team_members_too(e, key, gone)) < 0) ||
        (rc = remove_object(e, kind, key)) < 0) {
        if (rc == -ENOENT) {
            rc = refuse(op, 404, "not_found", "%s %s not found", lower, key);
        } else {
            e->write_failed = true; /* what was removed from memory stays so */
            rc = refuse(op, 503, "unavailable", "store: write failed");
        }
        goto out;
    }
    op->result = json_pack("{s:s, s:s, s:b, s:O}", "kind", kname, "name", key, "deleted",
                           true, "cancelled", lj.ids);
    op->audit_details = json_pack("{s:b, s:O}", "force", op->u.del.force, "cancelled", lj.ids);
    if (json_array_size(gone)) { /* a team's users, queues and budgets */
        json_object_set(op->result, "with", gone);
        json_object_set(op->audit_details, "with", gone);
    }
    op->status = 200;
    rc = 0;
    goto out;
oom:
    sl_eng_op_fail(op, 503, "unavailable");
    rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
out:
    json_decref(lj.ids);
    json_decref(stopping);
    json_decref(gone);
    free(m);
    return rc;
}
