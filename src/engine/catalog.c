/*
 * catalog.c - the catalog: teams, queues, cohorts, priority classes and users,
 * interned names, their scheduler settings, loading them and applying
 * manifests (kind by kind).
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

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

const char *sl_eng_intern(struct strtab *t, const char *s)
{
    size_t i;

    if (!s)
        s = "";
    if (t->len * 2 >= t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        char **ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return NULL;
        for (size_t k = 0; k < t->cap; k++) {
            if (!t->slot[k])
                continue;
            for (i = str_hash(t->slot[k]) & (ncap - 1); ns[i]; i = (i + 1) & (ncap - 1))
                ;
            ns[i] = t->slot[k];
        }
        free(t->slot);
        t->slot = ns;
        t->cap = ncap;
    }
    for (i = str_hash(s) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
        if (strcmp(t->slot[i], s) == 0)
            return t->slot[i];
    if (!(t->slot[i] = strdup(s)))
        return NULL;
    t->len++;
    return t->slot[i];
}

void sl_eng_strtab_fini(struct strtab *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slot[i]);
    free(t->slot);
    memset(t, 0, sizeof(*t));
}

struct team *sl_eng_team_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nteams; i++)
        if (strcmp(e->teams[i].name, name) == 0)
            return &e->teams[i];
    return NULL;
}

struct queue *sl_eng_queue_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nqueues; i++)
        if (strcmp(e->queues[i].name, name) == 0)
            return &e->queues[i];
    return NULL;
}

static struct cohort *cohort_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->ncohorts; i++)
        if (strcmp(e->cohorts[i].name, name) == 0)
            return &e->cohorts[i];
    return NULL;
}

struct pclass *sl_eng_pclass_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->npclasses; i++)
        if (name ? strcmp(e->pclasses[i].name, name) == 0
                 : e->pclasses[i].is_default)
            return &e->pclasses[i];
    return NULL;
}

struct user *sl_eng_user_find(struct sl_engine *e, const char *name)
{
    for (int i = 0; i < e->nusers; i++)
        if (strcmp(e->users[i].name, name) == 0)
            return &e->users[i];
    return NULL;
}

/* Give queue 'm' (a Queue manifest) to the scheduler. Caller holds mu. */
static int sched_queue(struct sl_engine *e, const struct sl_manifest *m)
{
    return sl_sched_apply_manifest(e->sched, m);
}

/* A queue without quota (made with a team, or before quotas existed). */
static int sched_queue_plain(struct sl_engine *e, const char *name, const char *team)
{
    struct sl_sched_queue_spec qs = {0};

    qs.name = name;
    qs.team = team;
    qs.weight = 1;
    sl_sched_res_unset(&qs.nominal);
    sl_sched_res_unset(&qs.borrowing_limit);
    sl_sched_res_unset(&qs.lending_limit);
    sl_sched_res_unset(&qs.user_limit);
    return sl_sched_queue_set(e->sched, &qs);
}

static int sched_class(struct sl_engine *e, struct pclass *p)
{
    struct sl_sched_class_spec cs = {p->name, p->value, p->preemptible,
                                     p->opportunistic, p->min_runtime_ms};
    return p->sc = sl_sched_class_set(e->sched, &cs);
}

void sl_eng_sched_settings(struct sl_engine *e, const struct sl_manifest *m)
{
    sl_sched_apply_manifest(e->sched, m);
}

int sl_eng_manifest_from_store(const char *kind, const char *name, const char *spec_json,
                               struct sl_manifest **out)
{
    json_t *spec = spec_json && *spec_json ? json_loads(spec_json, 0, NULL) : NULL;
    json_t *doc;
    char *text;
    struct sl_error err = {0};
    size_t n = 0;
    int rc;

    doc = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "sluice/v1", "kind", kind,
                    "metadata", "name", name);
    if (!doc) {
        json_decref(spec);
        return -ENOMEM;
    }
    if (spec)
        json_object_set_new(doc, "spec", spec);
    text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return -ENOMEM;
    rc = sl_manifests_parse(text, strlen(text), out, &n, &err);
    if (rc < 0)
        sl_error("msg=\"stored %s does not parse\" name=%s err=\"%s: %s\"", kind, name,
                 err.field, err.text);
    free(text);
    return rc;
}

bool sl_eng_is_role(const struct sl_principal *who, const char *role)
{
    return strcmp(who->role, role) == 0 && who->job_id == 0;
}

bool sl_eng_is_admin(const struct sl_principal *who)
{
    return strcmp(who->role, "admin") == 0;
}

/* Refuse document 'i' of 'n' for 'field' (prefixed "[i]." when n > 1). */
static int manifest_error(struct sl_op *op, size_t i, size_t n, const char *field,
                          const char *msg)
{
    char path[96];
    if (n > 1)
        snprintf(path, sizeof(path), "[%zu].%s", i, field);
    else
        snprintf(path, sizeof(path), "%s", field);
    sl_eng_op_fail(op, 400, "invalid");
    sl_errorf_field(&op->err, -EINVAL, path, "%s", msg);
    return -EINVAL;
}

int sl_eng_manifest_forbidden(struct sl_op *op, size_t i, size_t n, const char *field,
                              const char *msg)
{
    manifest_error(op, i, n, field, msg);
    sl_eng_op_fail(op, 403, "forbidden");
    return -EPERM;
}

const char *const sl_eng_action_names[] = {"unchanged", "created", "updated"};

/* The canonical spec text of a manifest, or NULL on -ENOMEM. */
static char *manifest_text(const struct sl_manifest *m)
{
    json_t *spec = sl_manifest_spec_json(m);
    char *text = spec ? json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS |
                                             JSON_REAL_PRECISION(15))
                      : NULL;

    json_decref(spec);
    return text;
}

/* Whether 'name' is a cohort declared in the store or earlier in this
 * apply. */
static bool cohort_known(struct sl_engine *e, const struct sl_op *op, size_t upto,
                         const char *name)
{
    if (cohort_find(e, name))
        return true;
    for (size_t k = 0; k < upto; k++)
        if (op->manifests[k].kind == SL_KIND_COHORT &&
            strcmp(op->manifests[k].name, name) == 0)
            return true;
    return false;
}

int sl_eng_do_apply(struct sl_engine *e, struct sl_op *op)
{
    json_t *applied = json_array();
    /* Work on copies so that a refused apply leaves memory as it was. */
    struct team *teams = malloc(sizeof(e->teams));
    struct queue *queues = malloc(sizeof(e->queues));
    struct cohort *cohorts = malloc(sizeof(e->cohorts));
    struct pclass *pcs = malloc(sizeof(e->pclasses));
    struct user *users = malloc(sizeof(e->users));
    char **texts = calloc(op->nmanifests ? op->nmanifests : 1, sizeof(char *));
    int nteams = e->nteams, nqueues = e->nqueues, ncohorts = e->ncohorts,
        npcs = e->npclasses, nusers = e->nusers, rc = 0;
    bool meter = false;
    char msg[160];

    if (!applied || !teams || !queues || !cohorts || !pcs || !users || !texts) {
        sl_eng_op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    if (sl_eng_is_role(&op->who, "team-admin")) {
        if ((rc = sl_eng_team_admin_check(e, op)) < 0)
            goto out;
    } else if (!sl_eng_is_admin(&op->who)) {
        sl_eng_op_fail(op, 403, "forbidden");
        rc = sl_errorf(&op->err, -EPERM, "only admin and team-admin may apply manifests");
        goto out;
    }
    /* The accounts named first: a lookup may be slow (NSS), and the loop
     * below holds e->mu. */
    for (size_t i = 0; i < op->nmanifests && e->cfg.executor == SL_EXECUTOR_LOCAL; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        struct sl_error why = {0};
        if (m->kind == SL_KIND_USER && m->u.user.unix_user[0] &&
            sl_eng_account_check(e, m->u.user.unix_user, &why) < 0) {
            char text[sizeof(why.text) + 32];
            snprintf(text, sizeof(text), "unix account %s", why.text);
            rc = manifest_error(op, i, op->nmanifests, "spec.unixUser", text);
            goto out;
        }
    }
    memcpy(teams, e->teams, sizeof(e->teams));
    memcpy(queues, e->queues, sizeof(e->queues));
    memcpy(cohorts, e->cohorts, sizeof(e->cohorts));
    memcpy(pcs, e->pclasses, sizeof(e->pclasses));
    memcpy(users, e->users, sizeof(e->users));

    /* The catalog (teams, queues, cohorts, classes, users and their
     * counts) changes under e->mu, which readers on the HTTP thread
     * (/metrics, /v1/queues) hold: they see it before or after, never an
     * array half grown. The store writes here do not sync (the syncer
     * does, later). */
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < op->nmanifests && rc == 0; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        const char *kind = "";
        int act = 0;

        switch (m->kind) {
        case SL_KIND_TEAM: {
            struct team *t = sl_eng_team_find(e, m->name);
            const char *dq = m->u.team.default_queue[0] ? m->u.team.default_queue
                                                        : m->name;
            kind = "Team";
            if (!t) {
                if (e->nteams == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many teams");
                    break;
                }
                t = &e->teams[e->nteams++];
                sl_strlcpy(t->name, m->name, sizeof(t->name));
            }
            sl_strlcpy(t->default_queue, dq, sizeof(t->default_queue));
            act = sl_store_team_upsert(e->st, m->name, dq);
            if (act >= 0 && !m->u.team.default_queue[0] && !sl_eng_queue_find(e, dq) &&
                e->nqueues < MAX_NAMED) {
                /* A team without a named default queue gets its own. */
                struct queue *q = &e->queues[e->nqueues++];
                memset(q, 0, sizeof(*q));
                sl_strlcpy(q->name, dq, sizeof(q->name));
                sl_strlcpy(q->team, m->name, sizeof(q->team));
                q->sq = -1;
                if (sl_store_queue_upsert(e->st, dq, m->name, NULL) < 0)
                    act = -EIO;
            }
            break;
        }
        case SL_KIND_COHORT: {
            struct cohort *c = cohort_find(e, m->name);
            kind = "Cohort";
            if (!c) {
                if (e->ncohorts == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many cohorts");
                    break;
                }
                c = &e->cohorts[e->ncohorts++];
                sl_strlcpy(c->name, m->name, sizeof(c->name));
            }
            sl_strlcpy(c->description, m->u.cohort.description, sizeof(c->description));
            act = sl_store_cohort_upsert(e->st, m->name, m->u.cohort.description);
            break;
        }
        case SL_KIND_QUEUE: {
            struct queue *q = sl_eng_queue_find(e, m->name);
            kind = "Queue";
            if (!sl_eng_team_find(e, m->u.queue.team)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.queue.team);
                rc = manifest_error(op, i, op->nmanifests, "spec.team", msg);
                break;
            }
            if (m->u.queue.cohort[0] && !cohort_known(e, op, i, m->u.queue.cohort)) {
                snprintf(msg, sizeof(msg),
                         "cohort '%s' does not exist (declare it with kind: Cohort)",
                         m->u.queue.cohort);
                rc = manifest_error(op, i, op->nmanifests, "spec.cohort", msg);
                break;
            }
            if (!(texts[i] = manifest_text(m))) {
                sl_eng_op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (!q) {
                if (e->nqueues == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many queues");
                    break;
                }
                q = &e->queues[e->nqueues++];
                memset(q, 0, sizeof(*q));
                sl_strlcpy(q->name, m->name, sizeof(q->name));
                q->sq = -1;
            }
            sl_strlcpy(q->team, m->u.queue.team, sizeof(q->team));
            sl_strlcpy(q->cohort, m->u.queue.cohort, sizeof(q->cohort));
            act = sl_store_queue_upsert(e->st, m->name, m->u.queue.team, texts[i]);
            break;
        }
        case SL_KIND_PRIORITY_CLASS: {
            struct pclass *p = sl_eng_pclass_find(e, m->name);
            kind = "PriorityClass";
            if (!p) {
                if (e->npclasses == (int)SL_ARRAY_LEN(e->pclasses)) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many priority classes");
                    break;
                }
                p = &e->pclasses[e->npclasses++];
                memset(p, 0, sizeof(*p));
                sl_strlcpy(p->name, m->name, sizeof(p->name));
                p->sc = -1;
            }
            p->value = m->u.pclass.value;
            p->preemptible = m->u.pclass.preemptible;
            p->is_default = m->u.pclass.is_default;
            p->opportunistic = m->u.pclass.opportunistic;
            p->min_runtime_ms = m->u.pclass.min_runtime_ms;
            if (p->is_default)
                for (int k = 0; k < e->npclasses; k++)
                    if (&e->pclasses[k] != p)
                        e->pclasses[k].is_default = false;
            act = sl_store_pclass_upsert(e->st, m->name, p->value, p->preemptible,
                                         p->is_default, p->opportunistic,
                                         p->min_runtime_ms);
            break;
        }
        case SL_KIND_USER: {
            struct user *u = sl_eng_user_find(e, m->name);
            kind = "User";
            if (!sl_eng_team_find(e, m->u.user.team)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.user.team);
                rc = manifest_error(op, i, op->nmanifests, "spec.team", msg);
                break;
            }
            if (!u) {
                if (e->nusers == MAX_NAMED) {
                    rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                        "too many users");
                    break;
                }
                u = &e->users[e->nusers++];
                sl_strlcpy(u->name, m->name, sizeof(u->name));
            }
            sl_strlcpy(u->team, m->u.user.team, sizeof(u->team));
            sl_strlcpy(u->role, m->u.user.role, sizeof(u->role));
            /* A team-admin never changes a mapping (sl_eng_team_admin_check):
             * one it leaves out stays. */
            if (m->u.user.unix_user[0] || sl_eng_is_admin(&op->who))
                sl_strlcpy(u->unix_user, m->u.user.unix_user, sizeof(u->unix_user));
            act = sl_store_user_upsert(e->st, m->name, u->team, u->role,
                                       u->unix_user);
            break;
        }
        case SL_KIND_SCHEDULER: {
            char old[8192];
            kind = "Scheduler";
            if (!(texts[i] = manifest_text(m))) {
                sl_eng_op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (sl_store_meta_get(e->st, "scheduler", old, sizeof(old)) == 0)
                act = strcmp(old, texts[i]) == 0 ? 0 : 2;
            else
                act = 1;
            if (act && sl_store_meta_set(e->st, "scheduler", texts[i]) < 0)
                act = -EIO;
            break;
        }
        case SL_KIND_PRICING: {
            char *old = malloc(PRICING_TEXT_MAX);
            kind = "Pricing";
            if (!old || !(texts[i] = manifest_text(m))) {
                free(old);
                sl_eng_op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (strlen(texts[i]) >= PRICING_TEXT_MAX) {
                free(old);
                rc = manifest_error(op, i, op->nmanifests, "spec", "is too large");
                break;
            }
            if (sl_store_meta_get(e->st, "pricing", old, PRICING_TEXT_MAX) == 0)
                act = strcmp(old, texts[i]) == 0 ? 0 : 2;
            else
                act = 1;
            free(old);
            if (act && sl_store_meta_set(e->st, "pricing", texts[i]) < 0)
                act = -EIO;
            break;
        }
        case SL_KIND_BUDGET: {
            int known = 0, fresh = 0;
            kind = "Budget";
            if (!sl_eng_team_find(e, m->u.budget.team)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.budget.team);
                rc = manifest_error(op, i, op->nmanifests, "spec.team", msg);
                break;
            }
            for (int k = 0; k < e->nbudgets; k++)
                known += strcmp(e->budgets[k].b.name, m->name) == 0;
            for (size_t k = 0; k < i; k++)
                fresh += op->manifests[k].kind == SL_KIND_BUDGET; /* at most new */
            if (!known && e->nbudgets + fresh >= MAX_BUDGETS) {
                rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                    "too many budgets");
                break;
            }
            if (!(texts[i] = manifest_text(m))) {
                sl_eng_op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            act = sl_store_budget_upsert(e->st, m->name, m->u.budget.team, texts[i]);
            break;
        }
        case SL_KIND_POLICY:
        case SL_KIND_DATASET: {
            char key[160];
            bool policy = m->kind == SL_KIND_POLICY;
            kind = policy ? "Policy" : "Dataset";
            if (!policy && !sl_eng_team_find(e, m->u.dataset.owner)) {
                snprintf(msg, sizeof(msg), "team '%s' does not exist", m->u.dataset.owner);
                rc = manifest_error(op, i, op->nmanifests, "spec.owner", msg);
                break;
            }
            if (policy && e->npolicies + (int)i >= MAX_NAMED) {
                rc = manifest_error(op, i, op->nmanifests, "metadata.name",
                                    "too many policies");
                break;
            }
            if (!(texts[i] = manifest_text(m))) {
                sl_eng_op_fail(op, 503, "unavailable");
                rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
                break;
            }
            if (policy)
                sl_strlcpy(key, m->name, sizeof(key));
            else
                snprintf(key, sizeof(key), "%s@%s", m->name, m->u.dataset.version);
            act = sl_store_obj_put(e->st, kind, key, texts[i]);
            break;
        }
        }
        if (rc == 0 && act < 0) {
            sl_eng_op_fail(op, 503, "unavailable");
            rc = sl_errorf(&op->err, act, "store: write failed");
        }
        if (rc == 0)
            json_array_append_new(applied,
                                  json_pack("{s:s, s:s, s:s}", "kind", kind, "name",
                                            m->name, "action", sl_eng_action_names[act]));
    }
    /* Every team's default queue must exist and belong to it. */
    for (int i = 0; rc == 0 && i < e->nteams; i++) {
        struct queue *q = sl_eng_queue_find(e, e->teams[i].default_queue);
        if (!q || strcmp(q->team, e->teams[i].name) != 0) {
            size_t idx = 0;
            for (size_t k = 0; k < op->nmanifests; k++)
                if (op->manifests[k].kind == SL_KIND_TEAM &&
                    strcmp(op->manifests[k].name, e->teams[i].name) == 0)
                    idx = k;
            snprintf(msg, sizeof(msg), "queue '%s' does not exist in team '%s'",
                     e->teams[i].default_queue, e->teams[i].name);
            rc = manifest_error(op, idx, op->nmanifests, "spec.defaultQueue", msg);
        }
    }
    if (rc < 0) {
        memcpy(e->teams, teams, sizeof(e->teams));
        memcpy(e->queues, queues, sizeof(e->queues));
        memcpy(e->cohorts, cohorts, sizeof(e->cohorts));
        memcpy(e->pclasses, pcs, sizeof(e->pclasses));
        memcpy(e->users, users, sizeof(e->users));
        e->nteams = nteams;
        e->nqueues = nqueues;
        e->ncohorts = ncohorts;
        e->npclasses = npcs;
        e->nusers = nusers;
        pthread_mutex_unlock(&e->mu);
        goto out;
    }
    /* All accepted and stored: now the scheduler sees the changes. */
    for (size_t i = 0; i < op->nmanifests; i++) {
        const struct sl_manifest *m = &op->manifests[i];
        struct queue *q;
        if (m->kind == SL_KIND_QUEUE && (q = sl_eng_queue_find(e, m->name))) {
            q->sq = sched_queue(e, m);
            free(q->spec_json == texts[i] ? NULL : q->spec_json);
            q->spec_json = texts[i];
            texts[i] = NULL;
        } else if (m->kind == SL_KIND_PRIORITY_CLASS) {
            sched_class(e, sl_eng_pclass_find(e, m->name));
        } else if (m->kind == SL_KIND_SCHEDULER) {
            sl_eng_sched_settings(e, m);
        } else if (m->kind == SL_KIND_PRICING) {
            e->pricing = m->u.pricing;
            meter = true;
        } else if (m->kind == SL_KIND_BUDGET) {
            sl_eng_budget_set(e, &m->u.budget);
            meter = true;
        } else if (m->kind == SL_KIND_POLICY) {
            sl_eng_policy_set(e, &m->u.policy);
        }
    }
    for (int i = 0; i < e->nqueues; i++)
        if (e->queues[i].sq < 0)
            e->queues[i].sq = sched_queue_plain(e, e->queues[i].name, e->queues[i].team);
    for (int i = 0; i < e->npclasses; i++)
        e->pclasses[i].sc = sched_class(e, &e->pclasses[i]);
    pthread_mutex_unlock(&e->mu);
    if (meter)
        sl_eng_meter_recount(e);
    e->sched_full = true;
    op->result = json_pack("{s:O}", "applied", applied);
    op->audit_details = json_pack("{s:O}", "applied", applied);
    op->status = 200;
out:
    for (size_t i = 0; texts && i < op->nmanifests; i++)
        free(texts[i]);
    free(texts);
    json_decref(applied);
    free(teams);
    free(queues);
    free(cohorts);
    free(pcs);
    free(users);
    return rc;
}

int sl_eng_ld_team(void *arg, const char *name, const char *dq)
{
    struct sl_engine *e = arg;
    if (e->nteams == MAX_NAMED)
        return -ENOSPC;
    sl_strlcpy(e->teams[e->nteams].name, name, 64);
    sl_strlcpy(e->teams[e->nteams++].default_queue, dq, 64);
    return 0;
}

int sl_eng_ld_cohort(void *arg, const char *name, const char *description)
{
    struct sl_engine *e = arg;
    if (e->ncohorts == MAX_NAMED)
        return -ENOSPC;
    sl_strlcpy(e->cohorts[e->ncohorts].name, name, 64);
    sl_strlcpy(e->cohorts[e->ncohorts++].description, description ? description : "",
               sizeof(e->cohorts[0].description));
    return 0;
}

int sl_eng_ld_queue(void *arg, const char *name, const char *team, const char *spec_json)
{
    struct sl_engine *e = arg;
    struct queue *q;
    struct sl_manifest *m = NULL;

    if (e->nqueues == MAX_NAMED)
        return -ENOSPC;
    q = &e->queues[e->nqueues++];
    memset(q, 0, sizeof(*q));
    sl_strlcpy(q->name, name, sizeof(q->name));
    sl_strlcpy(q->team, team, sizeof(q->team));
    q->sq = -1;
    if (spec_json && strcmp(spec_json, "{}") != 0 &&
        sl_eng_manifest_from_store("Queue", name, spec_json, &m) == 0) {
        sl_strlcpy(q->cohort, m->u.queue.cohort, sizeof(q->cohort));
        q->sq = sched_queue(e, m);
        q->spec_json = strdup(spec_json);
        free(m);
    }
    if (q->sq < 0)
        q->sq = sched_queue_plain(e, name, team);
    return q->sq < 0 ? q->sq : 0;
}

int sl_eng_ld_pclass(void *arg, const char *name, int value, bool preemptible,
                     bool is_default, bool opportunistic, int64_t min_runtime_ms)
{
    struct sl_engine *e = arg;
    struct pclass *p;
    if (e->npclasses == (int)SL_ARRAY_LEN(e->pclasses))
        return -ENOSPC;
    p = &e->pclasses[e->npclasses++];
    sl_strlcpy(p->name, name, sizeof(p->name));
    p->value = value;
    p->preemptible = preemptible;
    p->is_default = is_default;
    p->opportunistic = opportunistic;
    p->min_runtime_ms = min_runtime_ms;
    return sched_class(e, p) < 0 ? -ENOSPC : 0;
}

int sl_eng_ld_user(void *arg, const char *name, const char *team,
                   const char *role, const char *unix_user)
{
    struct sl_engine *e = arg;
    struct user *u;
    if (e->nusers == MAX_NAMED)
        return -ENOSPC;
    u = &e->users[e->nusers++];
    sl_strlcpy(u->name, name, sizeof(u->name));
    sl_strlcpy(u->team, team, sizeof(u->team));
    sl_strlcpy(u->role, role, sizeof(u->role));
    sl_strlcpy(u->unix_user, unix_user, sizeof(u->unix_user));
    return 0;
}
