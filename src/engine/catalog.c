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
        if (op->u.apply.manifests[k].kind == SL_KIND_COHORT &&
            strcmp(op->u.apply.manifests[k].name, name) == 0)
            return true;
    return false;
}

/* One apply in progress: the operation, the document at hand and the
 * canonical texts of the documents (owned; a queue's is kept by it). */
struct apply {
    struct sl_engine *e;
    struct sl_op *op;
    size_t i;                     /* the document at hand */
    char **texts;                 /* op->u.apply.n entries */
    char msg[160];
};

/* Refuse the document at hand for 'field', saying why. */
static int apply_refuse(struct apply *a, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int apply_refuse(struct apply *a, const char *field, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
    va_end(ap);
    return manifest_error(a->op, a->i, a->op->u.apply.n, field, a->msg);
}

/* The canonical text of the document at hand into a->texts; -ENOMEM with
 * the op failed. */
static int apply_text(struct apply *a, const struct sl_manifest *m)
{
    if ((a->texts[a->i] = manifest_text(m)))
        return 0;
    sl_eng_op_fail(a->op, 503, "unavailable");
    return sl_errorf(&a->op->err, -ENOMEM, "out of memory");
}

static int apply_team(struct apply *a, const struct sl_manifest *m)
{
    struct sl_engine *e = a->e;
    struct team *t = sl_eng_team_find(e, m->name);
    const char *dq = m->u.team.default_queue[0] ? m->u.team.default_queue : m->name;
    int act;

    if (!t) {
        if (e->nteams == MAX_NAMED)
            return apply_refuse(a, "metadata.name", "too many teams");
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
    return act;
}

static int apply_cohort(struct apply *a, const struct sl_manifest *m)
{
    struct sl_engine *e = a->e;
    struct cohort *c = cohort_find(e, m->name);

    if (!c) {
        if (e->ncohorts == MAX_NAMED)
            return apply_refuse(a, "metadata.name", "too many cohorts");
        c = &e->cohorts[e->ncohorts++];
        sl_strlcpy(c->name, m->name, sizeof(c->name));
    }
    sl_strlcpy(c->description, m->u.cohort.description, sizeof(c->description));
    return sl_store_cohort_upsert(e->st, m->name, m->u.cohort.description);
}

static int apply_queue(struct apply *a, const struct sl_manifest *m)
{
    struct sl_engine *e = a->e;
    struct queue *q = sl_eng_queue_find(e, m->name);
    int rc;

    if (!sl_eng_team_find(e, m->u.queue.team))
        return apply_refuse(a, "spec.team", "team '%s' does not exist", m->u.queue.team);
    if (m->u.queue.cohort[0] && !cohort_known(e, a->op, a->i, m->u.queue.cohort))
        return apply_refuse(a, "spec.cohort",
                            "cohort '%s' does not exist (declare it with kind: Cohort)",
                            m->u.queue.cohort);
    if ((rc = apply_text(a, m)) < 0)
        return rc;
    if (!q) {
        if (e->nqueues == MAX_NAMED)
            return apply_refuse(a, "metadata.name", "too many queues");
        q = &e->queues[e->nqueues++];
        memset(q, 0, sizeof(*q));
        sl_strlcpy(q->name, m->name, sizeof(q->name));
        q->sq = -1;
    }
    sl_strlcpy(q->team, m->u.queue.team, sizeof(q->team));
    sl_strlcpy(q->cohort, m->u.queue.cohort, sizeof(q->cohort));
    return sl_store_queue_upsert(e->st, m->name, m->u.queue.team, a->texts[a->i]);
}

static int apply_pclass(struct apply *a, const struct sl_manifest *m)
{
    struct sl_engine *e = a->e;
    struct pclass *p = sl_eng_pclass_find(e, m->name);

    if (!p) {
        if (e->npclasses == (int)SL_ARRAY_LEN(e->pclasses))
            return apply_refuse(a, "metadata.name", "too many priority classes");
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
    return sl_store_pclass_upsert(e->st, m->name, p->value, p->preemptible, p->is_default,
                                  p->opportunistic, p->min_runtime_ms);
}

static int apply_user(struct apply *a, const struct sl_manifest *m)
{
    struct sl_engine *e = a->e;
    struct user *u = sl_eng_user_find(e, m->name);

    if (!sl_eng_team_find(e, m->u.user.team))
        return apply_refuse(a, "spec.team", "team '%s' does not exist", m->u.user.team);
    if (!u) {
        if (e->nusers == MAX_NAMED)
            return apply_refuse(a, "metadata.name", "too many users");
        u = &e->users[e->nusers++];
        sl_strlcpy(u->name, m->name, sizeof(u->name));
    }
    sl_strlcpy(u->team, m->u.user.team, sizeof(u->team));
    sl_strlcpy(u->role, m->u.user.role, sizeof(u->role));
    /* A team-admin never changes a mapping (sl_eng_team_admin_check): one
     * it leaves out stays. */
    if (m->u.user.unix_user[0] || sl_eng_is_admin(&a->op->who))
        sl_strlcpy(u->unix_user, m->u.user.unix_user, sizeof(u->unix_user));
    return sl_store_user_upsert(e->st, m->name, u->team, u->role, u->unix_user);
}

/* A document kept whole in the store's meta table under 'key' (at most
 * 'max' bytes of text): 1 created, 2 updated, 0 unchanged. */
static int apply_meta(struct apply *a, const struct sl_manifest *m, const char *key,
                      size_t max)
{
    char *old = malloc(max);
    int act, rc;

    if (!old || (rc = apply_text(a, m)) < 0) {
        free(old);
        sl_eng_op_fail(a->op, 503, "unavailable");
        return sl_errorf(&a->op->err, -ENOMEM, "out of memory");
    }
    if (strlen(a->texts[a->i]) >= max) {
        free(old);
        return apply_refuse(a, "spec", "is too large");
    }
    if (sl_store_meta_get(a->e->st, key, old, max) == 0)
        act = strcmp(old, a->texts[a->i]) == 0 ? 0 : 2;
    else
        act = 1;
    free(old);
    if (act && sl_store_meta_set(a->e->st, key, a->texts[a->i]) < 0)
        act = -EIO;
    return act;
}

static int apply_scheduler(struct apply *a, const struct sl_manifest *m)
{
    return apply_meta(a, m, "scheduler", 8192);
}

static int apply_pricing(struct apply *a, const struct sl_manifest *m)
{
    return apply_meta(a, m, "pricing", PRICING_TEXT_MAX);
}

static int apply_budget(struct apply *a, const struct sl_manifest *m)
{
    struct sl_engine *e = a->e;
    int known = 0, fresh = 0, rc;

    if (!sl_eng_team_find(e, m->u.budget.team))
        return apply_refuse(a, "spec.team", "team '%s' does not exist", m->u.budget.team);
    for (int k = 0; k < e->nbudgets; k++)
        known += strcmp(e->budgets[k].b.name, m->name) == 0;
    for (size_t k = 0; k < a->i; k++)
        fresh += a->op->u.apply.manifests[k].kind == SL_KIND_BUDGET; /* at most new */
    if (!known && e->nbudgets + fresh >= MAX_BUDGETS)
        return apply_refuse(a, "metadata.name", "too many budgets");
    if ((rc = apply_text(a, m)) < 0)
        return rc;
    return sl_store_budget_upsert(e->st, m->name, m->u.budget.team, a->texts[a->i]);
}

/* kind: Policy and kind: Dataset, kept as documents by name (a dataset
 * by name@version). */
static int apply_object(struct apply *a, const struct sl_manifest *m)
{
    struct sl_engine *e = a->e;
    bool policy = m->kind == SL_KIND_POLICY;
    char key[160];
    int rc;

    if (!policy && !sl_eng_team_find(e, m->u.dataset.owner))
        return apply_refuse(a, "spec.owner", "team '%s' does not exist",
                        m->u.dataset.owner);
    if (policy && e->npolicies + (int)a->i >= MAX_NAMED)
        return apply_refuse(a, "metadata.name", "too many policies");
    if ((rc = apply_text(a, m)) < 0)
        return rc;
    if (policy)
        sl_strlcpy(key, m->name, sizeof(key));
    else
        snprintf(key, sizeof(key), "%s@%s", m->name, m->u.dataset.version);
    return sl_store_obj_put(e->st, policy ? "Policy" : "Dataset", key, a->texts[a->i]);
}

/* Columns: the kind, its name in answers, the step that validates the
 * document and writes it (to the catalog copy in memory and the store):
 * it returns 1 created, 2 updated, 0 unchanged, or a negative errno, with
 * the op failed when the document is refused (else a store write failed).
 * A new kind of manifest is a new row. */
static const struct {
    enum sl_manifest_kind kind;
    const char *name;
    int (*apply)(struct apply *a, const struct sl_manifest *m);
} apply_kinds[] = {
    {SL_KIND_TEAM, "Team", apply_team},
    {SL_KIND_COHORT, "Cohort", apply_cohort},
    {SL_KIND_QUEUE, "Queue", apply_queue},
    {SL_KIND_PRIORITY_CLASS, "PriorityClass", apply_pclass},
    {SL_KIND_USER, "User", apply_user},
    {SL_KIND_SCHEDULER, "Scheduler", apply_scheduler},
    {SL_KIND_PRICING, "Pricing", apply_pricing},
    {SL_KIND_BUDGET, "Budget", apply_budget},
    {SL_KIND_POLICY, "Policy", apply_object},
    {SL_KIND_DATASET, "Dataset", apply_object},
};

/* The catalog as it was before an apply, to put back when it is refused. */
struct catalog_saved {
    struct team teams[MAX_NAMED];
    struct queue queues[MAX_NAMED];
    struct cohort cohorts[MAX_NAMED];
    struct pclass pcs[64];
    struct user users[MAX_NAMED];
    int nteams, nqueues, ncohorts, npcs, nusers;
};

static void catalog_save(const struct sl_engine *e, struct catalog_saved *c)
{
    memcpy(c->teams, e->teams, sizeof(e->teams));
    memcpy(c->queues, e->queues, sizeof(e->queues));
    memcpy(c->cohorts, e->cohorts, sizeof(e->cohorts));
    memcpy(c->pcs, e->pclasses, sizeof(e->pclasses));
    memcpy(c->users, e->users, sizeof(e->users));
    c->nteams = e->nteams;
    c->nqueues = e->nqueues;
    c->ncohorts = e->ncohorts;
    c->npcs = e->npclasses;
    c->nusers = e->nusers;
}

static void catalog_restore(struct sl_engine *e, const struct catalog_saved *c)
{
    memcpy(e->teams, c->teams, sizeof(e->teams));
    memcpy(e->queues, c->queues, sizeof(e->queues));
    memcpy(e->cohorts, c->cohorts, sizeof(e->cohorts));
    memcpy(e->pclasses, c->pcs, sizeof(e->pclasses));
    memcpy(e->users, c->users, sizeof(e->users));
    e->nteams = c->nteams;
    e->nqueues = c->nqueues;
    e->ncohorts = c->ncohorts;
    e->npclasses = c->npcs;
    e->nusers = c->nusers;
}

/* Every team's default queue must exist and belong to it. */
static int check_default_queues(struct apply *a)
{
    struct sl_engine *e = a->e;

    for (int i = 0; i < e->nteams; i++) {
        struct queue *q = sl_eng_queue_find(e, e->teams[i].default_queue);
        if (q && strcmp(q->team, e->teams[i].name) == 0)
            continue;
        a->i = 0;
        for (size_t k = 0; k < a->op->u.apply.n; k++)
            if (a->op->u.apply.manifests[k].kind == SL_KIND_TEAM &&
                strcmp(a->op->u.apply.manifests[k].name, e->teams[i].name) == 0)
                a->i = k;
        return apply_refuse(a, "spec.defaultQueue", "queue '%s' does not exist in team '%s'",
                            e->teams[i].default_queue, e->teams[i].name);
    }
    return 0;
}

/* All accepted and stored: the scheduler, the meter and the admission
 * policies see the changes. Returns whether the meter must recount. */
static bool apply_take(struct apply *a)
{
    struct sl_engine *e = a->e;
    bool meter = false;

    for (size_t i = 0; i < a->op->u.apply.n; i++) {
        const struct sl_manifest *m = &a->op->u.apply.manifests[i];
        struct queue *q;
        if (m->kind == SL_KIND_QUEUE && (q = sl_eng_queue_find(e, m->name))) {
            q->sq = sched_queue(e, m);
            free(q->spec_json == a->texts[i] ? NULL : q->spec_json);
            q->spec_json = a->texts[i];
            a->texts[i] = NULL;
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
    return meter;
}

/* The Unix accounts the documents name exist here and may run jobs;
 * checked first, outside e->mu: a lookup may be slow (NSS). */
static int check_accounts(struct apply *a)
{
    for (size_t i = 0; i < a->op->u.apply.n && a->e->caps.accounts_here; i++) {
        const struct sl_manifest *m = &a->op->u.apply.manifests[i];
        struct sl_error why = {0};
        if (m->kind == SL_KIND_USER && m->u.user.unix_user[0] &&
            sl_eng_account_check(a->e, m->u.user.unix_user, &why) < 0) {
            a->i = i;
            return apply_refuse(a, "spec.unixUser", "unix account %s", why.text);
        }
    }
    return 0;
}

/* Apply every document of 'a' in order, each through its kind's row, into
 * 'applied'. Returns 0 or the first refusal (op failed). */
static int apply_all(struct apply *a, json_t *applied)
{
    for (a->i = 0; a->i < a->op->u.apply.n; a->i++) {
        const struct sl_manifest *m = &a->op->u.apply.manifests[a->i];
        const char *kind = NULL;
        int act = -EINVAL;
        for (size_t k = 0; k < SL_ARRAY_LEN(apply_kinds) && !kind; k++)
            if (apply_kinds[k].kind == m->kind) {
                kind = apply_kinds[k].name;
                act = apply_kinds[k].apply(a, m);
            }
        if (act < 0 && !a->op->status) {
            sl_eng_op_fail(a->op, kind ? 503 : 400, kind ? "unavailable" : "invalid");
            return sl_errorf(&a->op->err, act, kind ? "store: write failed" : "unknown kind");
        }
        if (act < 0)
            return act;
        json_array_append_new(applied, json_pack("{s:s, s:s, s:s}", "kind", kind, "name",
                                                 m->name, "action", sl_eng_action_names[act]));
    }
    return check_default_queues(a);
}

int sl_eng_do_apply(struct sl_engine *e, struct sl_op *op)
{
    struct apply a = {.e = e, .op = op};
    struct catalog_saved *saved = malloc(sizeof(*saved));
    json_t *applied = json_array(), *diff = json_array();
    bool meter;
    int rc;

    a.texts = calloc(op->u.apply.n ? op->u.apply.n : 1, sizeof(char *));
    if (!applied || !diff || !saved || !a.texts) {
        sl_eng_op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    /* The scope (SL_SC_MANAGE) was checked from the operation table; what
     * a team-admin may apply depends on its team. */
    if ((!sl_eng_is_admin(&op->who) && (rc = sl_eng_team_admin_check(e, op)) < 0) ||
        (rc = check_accounts(&a)) < 0 || (rc = sl_eng_apply_compare(e, op, diff)) < 0)
        goto out;
    /* The catalog (teams, queues, cohorts, classes, users and their
     * counts) changes under e->mu, which readers on the HTTP thread
     * (/metrics, /v1/queues) hold: they see it before or after, never an
     * array half grown. The store writes here do not sync (the syncer
     * does, later); a refused apply puts the catalog back as it was. */
    pthread_mutex_lock(&e->mu);
    catalog_save(e, saved);
    if ((rc = apply_all(&a, applied)) < 0 || op->u.apply.dry_run) {
        /* a dry run: every check passed; nothing is kept (the savepoint
         * is rolled back and a new one opened for the engine to release) */
        catalog_restore(e, saved);
        pthread_mutex_unlock(&e->mu);
        if (rc == 0 && (sl_store_rollback_to(e->st) < 0 || sl_store_savepoint(e->st) < 0)) {
            sl_eng_op_fail(op, 503, "unavailable");
            rc = sl_errorf(&op->err, -EIO, "store: cannot roll the dry run back");
        } else if (rc == 0) {
            op->result = json_pack("{s:O}", "diff", diff);
            op->status = 200;
        }
        goto out;
    }
    meter = apply_take(&a);
    pthread_mutex_unlock(&e->mu);
    if (meter)
        sl_eng_meter_recount(e);
    e->sched_full = true;
    op->result = json_pack("{s:O, s:O}", "applied", applied, "diff", diff);
    op->audit_details = json_pack("{s:O}", "applied", applied);
    op->status = 200;
out:
    for (size_t i = 0; a.texts && i < op->u.apply.n; i++)
        free(a.texts[i]);
    free(a.texts);
    json_decref(applied);
    json_decref(diff);
    free(saved);
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
