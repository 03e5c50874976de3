/*
 * objects.c - the catalog's objects as manifests: the manifest in force
 * of each kind by name, what an apply would change in it (the refusal of
 * fields left out, the dry run of `sluice diff`), and the documents of
 * GET /v1/objects.
 * See engine_int.h for what the modules share and the invariants.
 */
#include "engine_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"

#define META_TEXT_MAX PRICING_TEXT_MAX

/* *m from a stored spec text (canonical JSON); -ENOENT when unreadable. */
static int from_text(enum sl_manifest_kind kind, const char *name, const char *text,
                     struct sl_manifest *m)
{
    struct sl_manifest *got = NULL;
    int rc = sl_eng_manifest_from_store(sl_manifest_kind_name((int)kind), name, text, &got);

    if (rc == 0)
        *m = *got;
    free(got);
    return rc == -ENOMEM ? rc : rc < 0 ? -ENOENT : 0;
}

/* The Scheduler or the Pricing (name "default") kept under meta 'key'. */
static int from_meta(struct sl_store *st, enum sl_manifest_kind kind, const char *key,
                     struct sl_manifest *m)
{
    char *text = malloc(META_TEXT_MAX);
    int rc;

    if (!text)
        return -ENOMEM;
    rc = sl_store_meta_get(st, key, text, META_TEXT_MAX);
    if (rc == 0)
        rc = from_text(kind, "default", text, m);
    free(text);
    return rc < 0 && rc != -ENOMEM ? -ENOENT : rc;
}

static int from_obj(struct sl_store *st, enum sl_manifest_kind kind, const char *key,
                    struct sl_manifest *m)
{
    char *at, name[SL_NAME_MAX + 1];
    int rc;
    char *text = sl_store_obj_get(st, kind == SL_KIND_POLICY ? "Policy" : "Dataset", key, &rc);

    if (!text)
        return rc == -ENOMEM ? rc : -ENOENT;
    sl_strlcpy(name, key, sizeof(name));
    if ((at = strchr(name, '@')))
        *at = '\0';
    rc = from_text(kind, name, text, m);
    free(text);
    return rc;
}

int sl_eng_manifest_current(struct sl_engine *e, struct sl_store *st, int kind,
                            const char *key, struct sl_manifest *m)
{
    memset(m, 0, sizeof(*m));
    m->kind = (enum sl_manifest_kind)kind;
    sl_strlcpy(m->name, key, sizeof(m->name));
    switch ((enum sl_manifest_kind)kind) {
    case SL_KIND_TEAM: {
        const struct team *t = sl_eng_team_find(e, key);
        if (!t)
            return -ENOENT;
        sl_strlcpy(m->u.team.default_queue, t->default_queue,
                   sizeof(m->u.team.default_queue));
        return 0;
    }
    case SL_KIND_QUEUE: {
        const struct queue *q = sl_eng_queue_find(e, key);
        char plain[160];
        if (!q)
            return -ENOENT;
        snprintf(plain, sizeof(plain), "{\"team\":\"%s\"}", q->team);
        return from_text(SL_KIND_QUEUE, key, q->spec_json ? q->spec_json : plain, m);
    }
    case SL_KIND_COHORT:
        for (int i = 0; i < e->ncohorts; i++)
            if (strcmp(e->cohorts[i].name, key) == 0) {
                sl_strlcpy(m->u.cohort.description, e->cohorts[i].description,
                           sizeof(m->u.cohort.description));
                return 0;
            }
        return -ENOENT;
    case SL_KIND_PRIORITY_CLASS: {
        const struct pclass *p = sl_eng_pclass_find(e, key);
        if (!p)
            return -ENOENT;
        m->u.pclass.value = p->value;
        m->u.pclass.preemptible = p->preemptible;
        m->u.pclass.is_default = p->is_default;
        m->u.pclass.opportunistic = p->opportunistic;
        m->u.pclass.min_runtime_ms = p->min_runtime_ms;
        return 0;
    }
    case SL_KIND_USER: {
        const struct user *u = sl_eng_user_find(e, key);
        if (!u)
            return -ENOENT;
        sl_strlcpy(m->u.user.team, u->team, sizeof(m->u.user.team));
        sl_strlcpy(m->u.user.role, u->role, sizeof(m->u.user.role));
        sl_strlcpy(m->u.user.unix_user, u->unix_user, sizeof(m->u.user.unix_user));
        return 0;
    }
    case SL_KIND_SCHEDULER:
        return strcmp(key, "default") ? -ENOENT : from_meta(st, SL_KIND_SCHEDULER, "scheduler", m);
    case SL_KIND_PRICING:
        return strcmp(key, "default") ? -ENOENT : from_meta(st, SL_KIND_PRICING, "pricing", m);
    case SL_KIND_BUDGET:
        for (int i = 0; i < e->nbudgets; i++)
            if (strcmp(e->budgets[i].b.name, key) == 0) {
                m->u.budget = e->budgets[i].b;
                return 0;
            }
        return -ENOENT;
    case SL_KIND_POLICY:
    case SL_KIND_DATASET:
        return from_obj(st, (enum sl_manifest_kind)kind, key, m);
    }
    return -ENOENT;
}

/* The key an object is kept by: its name, a Dataset's name@version. */
static void object_key(const struct sl_manifest *m, char *key, size_t size)
{
    if (m->kind == SL_KIND_DATASET)
        snprintf(key, size, "%s@%s", m->name, m->u.dataset.version);
    else
        sl_strlcpy(key, m->name, size);
}

/* What the server makes of document 'm' beyond the parser's defaults, as
 * the apply kind by kind does: a team's default queue named after it, a
 * unixUser a team-admin leaves out kept. */
static void server_fill(const struct sl_op *op, const struct sl_manifest *old,
                        struct sl_manifest *m)
{
    if (m->kind == SL_KIND_TEAM && !m->u.team.default_queue[0])
        sl_strlcpy(m->u.team.default_queue, m->name, sizeof(m->u.team.default_queue));
    if (m->kind == SL_KIND_USER && old && !m->u.user.unix_user[0] &&
        !sl_eng_is_admin(&op->who))
        sl_strlcpy(m->u.user.unix_user, old->u.user.unix_user,
                   sizeof(m->u.user.unix_user));
}

/* One document's entry of the comparison: {kind, name, action, changes}. */
static json_t *compare_one(struct sl_engine *e, const struct sl_op *op, size_t i,
                           struct sl_manifest *old, struct sl_manifest *now)
{
    const struct sl_manifest *m = &op->u.apply.manifests[i];
    const json_t *given = json_object_get(json_array_get(op->u.apply.given, i), "spec");
    char key[160];
    json_t *a = NULL, *b = NULL, *changes = NULL, *row = NULL;
    bool exists;
    int rc;

    object_key(m, key, sizeof(key));
    rc = sl_eng_manifest_current(e, e->st, (int)m->kind, key, old);
    if (rc == -ENOMEM)
        return NULL;
    exists = rc == 0;
    *now = *m;
    server_fill(op, exists ? old : NULL, now);
    if (!(b = sl_manifest_spec_json(now)) || (exists && !(a = sl_manifest_spec_json(old))))
        goto out;
    if (!(changes = sl_manifest_compare(a, b, given)))
        goto out;
    row = json_pack("{s:s, s:s, s:s, s:O}", "kind", sl_manifest_kind_name((int)m->kind),
                    "name", key, "action",
                    !exists ? "created" : json_array_size(changes) ? "updated" : "unchanged",
                    "changes", changes);
out:
    json_decref(a);
    json_decref(b);
    json_decref(changes);
    return row;
}

/* The reset fields of 'changes' as "spec.x (now 4), ..." into buf;
 * returns how many, and the first's field in *first. */
static int resets_text(const json_t *changes, char *buf, size_t size, const char **first)
{
    size_t i, o = 0;
    json_t *c;
    int n = 0;

    buf[0] = '\0';
    json_array_foreach (changes, i, c) {
        char *old;
        if (json_is_true(json_object_get(c, "given")))
            continue;
        old = json_dumps(json_object_get(c, "old"), JSON_COMPACT | JSON_ENCODE_ANY |
                                                        JSON_REAL_PRECISION(15));
        if (n++ == 0)
            *first = json_string_value(json_object_get(c, "field"));
        if (o < size)
            o += (size_t)snprintf(buf + o, size - o, "%s%s (now %s)", o ? ", " : "",
                                  json_string_value(json_object_get(c, "field")),
                                  old ? old : "?");
        free(old);
    }
    if (o >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    return n;
}

int sl_eng_apply_compare(struct sl_engine *e, struct sl_op *op, json_t *diff)
{
    struct sl_manifest *old = malloc(sizeof(*old)), *now = malloc(sizeof(*now));
    char text[640], path[96];
    int rc = 0;

    if (!old || !now) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < op->u.apply.n; i++) {
        const struct sl_manifest *m = &op->u.apply.manifests[i];
        json_t *row = compare_one(e, op, i, old, now);
        const char *first = "spec";
        if (!row || json_array_append_new(diff, row) < 0) {
            rc = -ENOMEM;
            goto out;
        }
        if (op->u.apply.replace || op->u.apply.dry_run ||
            strcmp(json_string_value(json_object_get(row, "action")), "updated") != 0 ||
            resets_text(json_object_get(row, "changes"), text, sizeof(text), &first) == 0)
            continue;
        if (op->u.apply.n > 1)
            snprintf(path, sizeof(path), "[%zu].%s", i, first);
        else
            snprintf(path, sizeof(path), "%s", first);
        sl_eng_op_fail(op, 409, "conflict");
        rc = sl_errorf_field(&op->err, -EEXIST, path,
                             "%s %s: fields left out would be reset: %s; give them, or "
                             "apply with --replace",
                             sl_manifest_kind_name((int)m->kind),
                             json_string_value(json_object_get(row, "name")), text);
        goto out;
    }
out:
    if (rc == -ENOMEM) {
        sl_eng_op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
    }
    free(old);
    free(now);
    return rc;
}

/* ---- GET /v1/objects -------------------------------------------------- */

static int key_row(void *arg, const char *name, const char *spec)
{
    (void)spec;
    return json_array_append_new(arg, json_string(name)) < 0 ? -ENOMEM : 0;
}

/* The keys of every object of 'kind', by name. Caller holds e->mu for the
 * kinds kept in memory. */
static json_t *object_keys(struct sl_engine *e, struct sl_store *rd, int kind)
{
    json_t *keys = json_array();

    if (!keys)
        return NULL;
#define NAMES(arr, n, field)                                                   \
    for (int i = 0; i < (n); i++)                                              \
        json_array_append_new(keys, json_string(arr[i] field))
    switch ((enum sl_manifest_kind)kind) {
    case SL_KIND_TEAM: NAMES(e->teams, e->nteams, .name); break;
    case SL_KIND_QUEUE: NAMES(e->queues, e->nqueues, .name); break;
    case SL_KIND_COHORT: NAMES(e->cohorts, e->ncohorts, .name); break;
    case SL_KIND_PRIORITY_CLASS: NAMES(e->pclasses, e->npclasses, .name); break;
    case SL_KIND_USER: NAMES(e->users, e->nusers, .name); break;
    case SL_KIND_BUDGET: NAMES(e->budgets, e->nbudgets, .b.name); break;
    case SL_KIND_SCHEDULER:
    case SL_KIND_PRICING: json_array_append_new(keys, json_string("default")); break;
    case SL_KIND_POLICY:
    case SL_KIND_DATASET:
        if (sl_store_objs_each(rd, kind == SL_KIND_POLICY ? "Policy" : "Dataset", key_row,
                               keys) < 0) {
            json_decref(keys);
            return NULL;
        }
        break;
    }
#undef NAMES
    return keys;
}

/* What else a queue, a team or a cohort has: its members and queues.
 * Caller holds e->mu. */
static json_t *related(struct sl_engine *e, int kind, const char *key)
{
    json_t *r = json_object(), *users = json_array(), *queues = json_array();

    for (int i = 0; kind == SL_KIND_TEAM && i < e->nusers; i++)
        if (strcmp(e->users[i].team, key) == 0)
            json_array_append_new(users, json_string(e->users[i].name));
    for (int i = 0; i < e->nqueues; i++)
        if ((kind == SL_KIND_TEAM && strcmp(e->queues[i].team, key) == 0) ||
            (kind == SL_KIND_COHORT && strcmp(e->queues[i].cohort, key) == 0))
            json_array_append_new(queues, json_string(e->queues[i].name));
    if (r && users && kind == SL_KIND_TEAM)
        json_object_set(r, "users", users);
    if (r && queues && (kind == SL_KIND_TEAM || kind == SL_KIND_COHORT))
        json_object_set(r, "queues", queues);
    json_decref(users);
    json_decref(queues);
    return r;
}

json_t *sl_engine_objects_json(struct sl_engine *e, struct sl_store *rd, int kind,
                               const char *key)
{
    struct sl_manifest *m = malloc(sizeof(*m));
    json_t *out = json_array(), *keys = NULL, *k;
    const char *kname = sl_manifest_kind_name(kind);
    size_t i;
    bool good = m && out && kname;
    /* kinds kept only in the store are read without e->mu: the engine
     * never waits on this thread's I/O */
    bool in_memory = kind != SL_KIND_SCHEDULER && kind != SL_KIND_PRICING &&
                     kind != SL_KIND_POLICY && kind != SL_KIND_DATASET;

    if (in_memory)
        pthread_mutex_lock(&e->mu);
    if (good && !(keys = key ? json_pack("[s]", key) : object_keys(e, rd, kind)))
        good = false;
    json_array_foreach (good ? keys : NULL, i, k) {
        const char *name = json_string_value(k);
        json_t *spec, *doc;
        int rc = sl_eng_manifest_current(e, rd, kind, name, m);
        if (rc == -ENOENT)
            continue;
        if (rc < 0 || !(spec = sl_manifest_spec_json(m))) {
            good = false;
            break;
        }
        /* a dataset's name without its @version (spec.version) */
        doc = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "sluice/v1", "kind", kname,
                        "metadata", "name", m->name, "spec", spec);
        if (doc && key)
            json_object_set_new(doc, "related", related(e, kind, name));
        if (!doc || json_array_append_new(out, doc) < 0) {
            good = false;
            break;
        }
    }
    if (in_memory)
        pthread_mutex_unlock(&e->mu);
    json_decref(keys);
    free(m);
    if (!good) {
        json_decref(out);
        errno = ENOMEM;
        return NULL;
    }
    return out;
}
