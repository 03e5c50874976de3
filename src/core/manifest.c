/*
 * manifest.c - the manifests applied with `sluice apply`: Team, Queue,
 * Cohort, PriorityClass, User and Scheduler parsed here, Pricing, Budget,
 * Policy and Dataset by their own modules (src/meter, src/policy); the
 * checks across fields (a limit needs a cohort and a nominal amount), and
 * the file of manifests as a whole (no two of one kind and name).
 *
 * Validation is complete and stops at the first fault, which it names by
 * its full path, prefixed with the document's index when the file holds
 * more than one ("[1].spec.team").
 */
#include "spec_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MANIFESTS_MAX 1000
#define PCLASS_VALUE_MAX 1000000
#define RES_GPU_MILLI_MAX 1000000000LL           /* 1M GPUs in a list */
#define WEIGHT_MILLI_MIN 1                       /* weight 0.001 */
#define WEIGHT_MILLI_MAX 1000000LL               /* weight 1000 */
#define DEFAULT_WEIGHT_MILLI 1000
#define MIN_RUNTIME_MS_MAX (30LL * 86400 * 1000) /* 30 days */
#define HALF_LIFE_MS_MAX (3650LL * 86400 * 1000) /* 10 years */
#define DEFAULT_HALF_LIFE_MS (7LL * 86400 * 1000)
#define RESERVATIONS_MAX 64
#define DESCRIPTION_MAX 256
#define SCHEDULER_NAME "default"
#define GPUS_WHAT "a number of GPUs from 0 to 1000000 with at most 3 decimals"
#define WEIGHT_WHAT "a weight from 0.001 to 1000 with at most 3 decimals"

/* Allowed keys of each object, NULL-terminated. */
static const char *const manifest_meta_keys[] = {"name", NULL};
static const char *const team_spec_keys[] = {"defaultQueue", NULL};
static const char *const queue_spec_keys[] = {
    "team",         "cohort",    "weight",     "nominal", "borrowingLimit",
    "lendingLimit", "userLimit", "preemption", NULL};
static const char *const queue_preemption_keys[] = {
    "withinQueue", "reclaimWithinCohort", NULL};
static const char *const res_list_keys[] = {"gpus", "gpusByModel", "cpus",
                                            "memory", NULL};
static const char *const cohort_spec_keys[] = {"description", NULL};
static const char *const pclass_spec_keys[] = {
    "value", "preemptible", "default", "opportunistic", "minRuntime", NULL};
static const char *const sched_spec_keys[] = {
    "placement", "backfill", "reservations", "fairShare", "preemption",
    "modelWeights", NULL};
static const char *const sched_fair_keys[] = {"halfLife", NULL};
static const char *const sched_preemption_keys[] = {"enabled", "minRuntime",
                                                    NULL};
static const char *const user_spec_keys[] = {"team", "role", "unixUser",
                                             NULL};

/* ---- resource lists and limits ---- */

/* Non-negative milli-units as a short decimal ("16", "0.5", "0.125"). */
static const char *milli_text(int64_t milli, char *buf, size_t size)
{
    if (milli % 1000 == 0) {
        snprintf(buf, size, "%" PRId64, milli / 1000);
    } else {
        size_t n;
        snprintf(buf, size, "%" PRId64 ".%03" PRId64, milli / 1000,
                 milli % 1000);
        n = strlen(buf);
        while (n > 0 && buf[n - 1] == '0')
            buf[--n] = '\0';
    }
    return buf;
}

void sl_res_list_init(struct sl_res_list *l)
{
    memset(l, 0, sizeof(*l));
    l->gpu_milli = -1;
    l->cpu_milli = -1;
    l->mem_bytes = -1;
    l->nmodels = 0;
}

/* An object of GPU model -> amount at 'path' (gpusByModel, modelWeights):
 * at most SL_MAX_MODELS keys, each by the GPU model rule and distinct from
 * the earlier ones ignoring case (models are matched that way), each value
 * by get_milli. Fills names[], milli[] and *n in the document's order. */
static int get_model_map(const json_t *v, const char *path, int64_t min_milli,
                         int64_t max_milli, const char *what,
                         char names[SL_MAX_MODELS][48],
                         int64_t milli[SL_MAX_MODELS], int *n,
                         struct sl_error *err)
{
    const char *k;
    json_t *e;
    int count = 0, rc;

    if (!json_is_object(v))
        return sl_spec_fail_got(err, path, "an object of GPU model: amount", v);
    if (json_object_size(v) > SL_MAX_MODELS)
        return sl_spec_fail(err, path, "must have at most %d models, got %zu",
                            SL_MAX_MODELS, json_object_size(v));
    json_object_foreach((json_t *)v, k, e)
    {
        char p[PATH_MAX_LEN];

        sl_spec_path_key(p, path, k);
        if (!sl_spec_gpu_model_valid(k))
            return sl_spec_fail(err, p,
                                "GPU model names must be 1 to 47 characters of A-Z, "
                                "a-z, 0-9, '.', '_' and '-'");
        for (int i = 0; i < count; i++)
            if (strcasecmp(names[i], k) == 0)
                return sl_spec_fail(err, p,
                                    "names the GPU model \"%s\" again (model names "
                                    "are case-insensitive)",
                                    names[i]);
        if ((rc = sl_spec_get_milli(e, p, min_milli, max_milli, what, &milli[count],
                                    err)) < 0)
            return rc;
        sl_strlcpy(names[count], k, sizeof(names[count]));
        count++;
    }
    *n = count;
    return 0;
}

/* The resource list obj[key] into *l; "not given" throughout when absent.
 * Zero amounts are valid. */
static int get_res_list(const json_t *obj, const char *key, const char *parent,
                        struct sl_res_list *l, struct sl_error *err)
{
    const json_t *v = sl_spec_member(obj, key), *e;
    char P[PATH_MAX_LEN], p[PATH_MAX_LEN];
    int rc;

    sl_res_list_init(l);
    if (!v)
        return 0;
    sl_spec_path_key(P, parent, key);
    if ((rc = sl_spec_check_object(v, P, res_list_keys, err)) < 0)
        return rc;
    if ((e = sl_spec_member(v, "gpus"))) {
        sl_spec_path_key(p, P, "gpus");
        if ((rc = sl_spec_get_milli(e, p, 0, RES_GPU_MILLI_MAX, GPUS_WHAT,
                                    &l->gpu_milli, err)) < 0)
            return rc;
    }
    if ((e = sl_spec_member(v, "gpusByModel"))) {
        sl_spec_path_key(p, P, "gpusByModel");
        if ((rc = get_model_map(e, p, 0, RES_GPU_MILLI_MAX, GPUS_WHAT,
                                l->model, l->model_milli, &l->nmodels, err)) < 0)
            return rc;
    }
    if ((e = sl_spec_member(v, "cpus"))) {
        sl_spec_path_key(p, P, "cpus");
        if ((rc = sl_spec_parse_cpus(e, p, 0, &l->cpu_milli, err)) < 0)
            return rc;
    }
    if ((e = sl_spec_member(v, "memory"))) {
        sl_spec_path_key(p, P, "memory");
        if ((rc = sl_spec_parse_memory(e, p, 0, &l->mem_bytes, err)) < 0)
            return rc;
    }
    return 0;
}

/* One amount of limit list 'lkey' against the same one of nominal:
 * 'res' names it ("gpus", "gpusByModel.A100"); 'bytes' says how to show
 * it. Given in the limit, it must be given in nominal and, 'at_most', no
 * larger. */
static int limit_one(const char *P, const char *lkey, const char *res,
                     int64_t lim, int64_t nom, bool at_most, bool bytes,
                     struct sl_error *err)
{
    char lp[PATH_MAX_LEN], p[PATH_MAX_LEN], a[32], b[32];

    if (lim < 0)
        return 0;
    sl_spec_path_key(lp, P, lkey);
    sl_spec_path_key(p, lp, res);
    if (nom < 0)
        return sl_spec_fail(err, p,
                            "needs spec.nominal.%s (a limit applies to a resource "
                            "with a nominal quota)",
                            res);
    if (at_most && lim > nom) {
        if (bytes) {
            snprintf(a, sizeof(a), "%" PRId64, nom);
            snprintf(b, sizeof(b), "%" PRId64, lim);
        } else {
            milli_text(nom, a, sizeof(a));
            milli_text(lim, b, sizeof(b));
        }
        return sl_spec_fail(err, p,
                            "must be at most spec.nominal.%s (%s), got %s: a queue "
                            "lends only what it has",
                            res, a, b);
    }
    return 0;
}

/* Every resource of limit 'l' (spec.<lkey>) is in 'nom'; with 'at_most'
 * none exceeds it. Models match ignoring case. */
static int check_limit(const char *P, const char *lkey,
                       const struct sl_res_list *l,
                       const struct sl_res_list *nom, bool at_most,
                       struct sl_error *err)
{
    int rc;

    if ((rc = limit_one(P, lkey, "gpus", l->gpu_milli, nom->gpu_milli,
                        at_most, false, err)) < 0)
        return rc;
    for (int i = 0; i < l->nmodels; i++) {
        char res[64];
        int64_t n = -1;

        for (int k = 0; k < nom->nmodels; k++)
            if (strcasecmp(nom->model[k], l->model[i]) == 0)
                n = nom->model_milli[k];
        snprintf(res, sizeof(res), "gpusByModel.%s", l->model[i]);
        if ((rc = limit_one(P, lkey, res, l->model_milli[i], n, at_most, false,
                            err)) < 0)
            return rc;
    }
    if ((rc = limit_one(P, lkey, "cpus", l->cpu_milli, nom->cpu_milli, at_most,
                        false, err)) < 0)
        return rc;
    return limit_one(P, lkey, "memory", l->mem_bytes, nom->mem_bytes, at_most,
                     true, err);
}

/* ---- one spec per kind ---- */

static int team_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                     struct sl_error *err)
{
    int rc;

    if (!spec)
        return 0;
    if ((rc = sl_spec_check_object(spec, P, team_spec_keys, err)) < 0)
        return rc;
    return sl_spec_get_name(spec, "defaultQueue", P, m->u.team.default_queue, false,
                            err);
}

static int queue_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                      struct sl_error *err)
{
    static const struct {
        const char *key; /* the limit's field */
        const char *why; /* why it needs a cohort */
        bool at_most;    /* each amount <= nominal */
    } limits[] = {
        {"borrowingLimit", "borrowing happens inside a cohort", false},
        {"lendingLimit", "lending happens inside a cohort", true},
    };
    struct sl_res_list *lists[] = {&m->u.queue.borrowing_limit,
                                   &m->u.queue.lending_limit};
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc;

    m->u.queue.weight_milli = DEFAULT_WEIGHT_MILLI;
    m->u.queue.preempt_within = SL_PREEMPT_LOWER_PRIORITY;
    m->u.queue.reclaim = SL_RECLAIM_ANY;
    sl_res_list_init(&m->u.queue.nominal);
    sl_res_list_init(&m->u.queue.borrowing_limit);
    sl_res_list_init(&m->u.queue.lending_limit);
    sl_res_list_init(&m->u.queue.user_limit);
    if (!spec)
        return sl_spec_fail(err, P, "is required (spec.team names the owner)");
    if ((rc = sl_spec_check_object(spec, P, queue_spec_keys, err)) < 0 ||
        (rc = sl_spec_get_name(spec, "team", P, m->u.queue.team, true, err)) < 0 ||
        (rc = sl_spec_get_name(spec, "cohort", P, m->u.queue.cohort, false, err)) < 0)
        return rc;
    if ((v = sl_spec_member(spec, "weight"))) {
        sl_spec_path_key(p, P, "weight");
        if ((rc = sl_spec_get_milli(v, p, WEIGHT_MILLI_MIN, WEIGHT_MILLI_MAX,
                                    WEIGHT_WHAT, &m->u.queue.weight_milli, err)) < 0)
            return rc;
    }
    if ((rc = get_res_list(spec, "nominal", P, &m->u.queue.nominal, err)) < 0)
        return rc;
    for (size_t i = 0; i < SL_ARRAY_LEN(limits); i++) {
        sl_spec_path_key(p, P, limits[i].key);
        if (sl_spec_member(spec, limits[i].key) && !m->u.queue.cohort[0])
            return sl_spec_fail(err, p, "needs spec.cohort (%s)", limits[i].why);
        if ((rc = get_res_list(spec, limits[i].key, P, lists[i], err)) < 0 ||
            (rc = check_limit(P, limits[i].key, lists[i],
                              &m->u.queue.nominal, limits[i].at_most, err)) < 0)
            return rc;
    }
    if ((rc = get_res_list(spec, "userLimit", P, &m->u.queue.user_limit,
                           err)) < 0)
        return rc;
    if (!(v = sl_spec_member(spec, "preemption")))
        return 0;
    sl_spec_path_key(p, P, "preemption");
    if ((rc = sl_spec_check_object(v, p, queue_preemption_keys, err)) < 0 ||
        (rc = sl_spec_get_enum(v, "withinQueue", p, sl_spec_preempt_within_names,
                               &m->u.queue.preempt_within, err)) < 0)
        return rc;
    return sl_spec_get_enum(v, "reclaimWithinCohort", p, sl_spec_reclaim_names,
                            &m->u.queue.reclaim, err);
}

static int cohort_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    const json_t *v;
    const unsigned char *s;
    char p[PATH_MAX_LEN];
    int rc;

    if (!spec)
        return 0;
    if ((rc = sl_spec_check_object(spec, P, cohort_spec_keys, err)) < 0 ||
        (rc = sl_spec_get_string(spec, "description", P, DESCRIPTION_MAX, &v, err)) < 0)
        return rc;
    if (!v)
        return 0;
    sl_spec_path_key(p, P, "description");
    /* C0 controls, DEL and the C1 controls U+0080..U+009F (UTF-8 C2 80..9F);
     * the decoder has already checked the UTF-8. */
    s = (const unsigned char *)json_string_value(v);
    for (size_t i = 0; s[i]; i++)
        if (s[i] < 0x20 || s[i] == 0x7f ||
            (s[i] == 0xc2 && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f))
            return sl_spec_fail(err, p,
                                "must not contain control characters (such as a "
                                "newline or a tab), found one at byte %zu",
                                i);
    sl_strlcpy(m->u.cohort.description, json_string_value(v),
               sizeof(m->u.cohort.description));
    return 0;
}

static int pclass_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    char p[PATH_MAX_LEN];
    int64_t value = 0;
    bool present = false;
    int rc;

    m->u.pclass.preemptible = true;
    m->u.pclass.is_default = false;
    m->u.pclass.opportunistic = false;
    m->u.pclass.min_runtime_ms = 0;
    if (!spec)
        return sl_spec_fail(err, P, "is required (spec.value sets the priority)");
    if ((rc = sl_spec_check_object(spec, P, pclass_spec_keys, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_int(spec, "value", P, -PCLASS_VALUE_MAX, PCLASS_VALUE_MAX,
                              &value, &present, err)) < 0)
        return rc;
    if (!present) {
        sl_spec_path_key(p, P, "value");
        return sl_spec_fail(err, p, "is required");
    }
    m->u.pclass.value = (int)value;
    if ((rc = sl_spec_get_bool(spec, "preemptible", P, &m->u.pclass.preemptible,
                               err)) < 0 ||
        (rc = sl_spec_get_bool(spec, "default", P, &m->u.pclass.is_default, err)) < 0 ||
        (rc = sl_spec_get_bool(spec, "opportunistic", P, &m->u.pclass.opportunistic,
                               err)) < 0)
        return rc;
    if (m->u.pclass.opportunistic && !m->u.pclass.preemptible) {
        sl_spec_path_key(p, P, "opportunistic");
        return sl_spec_fail(err, p,
                            "cannot be true with preemptible: false (opportunistic "
                            "jobs are the first to be preempted)");
    }
    return sl_spec_get_duration(spec, "minRuntime", P, 0, MIN_RUNTIME_MS_MAX,
                                "a duration from 0s to 30d",
                                &m->u.pclass.min_runtime_ms, err);
}

static int user_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                     struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int rc, role = 1;

    if (!spec)
        return sl_spec_fail(err, P, "is required (spec.team names the user's team)");
    if ((rc = sl_spec_check_object(spec, P, user_spec_keys, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_name(spec, "team", P, m->u.user.team, true, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_enum(spec, "role", P, sl_spec_role_names, &role, err)) < 0)
        return rc;
    sl_strlcpy(m->u.user.role, sl_spec_enum_name(sl_spec_role_names, role),
               sizeof(m->u.user.role));
    if ((rc = sl_spec_get_string(spec, "unixUser", P, 64, &v, err)) < 0)
        return rc;
    if (v) {
        sl_spec_path_key(p, P, "unixUser");
        if (!sl_unix_name_valid(json_string_value(v)))
            return sl_spec_fail_got(err, p,
                                    "a Unix user name matching "
                                    "[a-z_][a-z0-9_-]{0,31}",
                                    v);
        sl_strlcpy(m->u.user.unix_user, json_string_value(v),
                   sizeof(m->u.user.unix_user));
    }
    return 0;
}

static int sched_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                      struct sl_error *err)
{
    const json_t *v;
    char p[PATH_MAX_LEN];
    int64_t reservations = 1;
    int rc;

    m->u.sched.placement = SL_PLACE_FGD;
    m->u.sched.backfill = true;
    m->u.sched.reservations = 1;
    m->u.sched.half_life_ms = DEFAULT_HALF_LIFE_MS;
    m->u.sched.preemption = true;
    m->u.sched.min_runtime_ms = 0;
    m->u.sched.nweights = 0;
    if (!spec)
        return 0;
    if ((rc = sl_spec_check_object(spec, P, sched_spec_keys, err)) < 0 ||
        (rc = sl_spec_get_enum(spec, "placement", P, sl_spec_placement_names,
                               &m->u.sched.placement, err)) < 0 ||
        (rc = sl_spec_get_bool(spec, "backfill", P, &m->u.sched.backfill, err)) < 0 ||
        (rc = sl_spec_get_int(spec, "reservations", P, 1, RESERVATIONS_MAX,
                              &reservations, NULL, err)) < 0)
        return rc;
    m->u.sched.reservations = (int)reservations;
    if ((v = sl_spec_member(spec, "fairShare"))) {
        sl_spec_path_key(p, P, "fairShare");
        if ((rc = sl_spec_check_object(v, p, sched_fair_keys, err)) < 0 ||
            (rc = sl_spec_get_duration(v, "halfLife", p, 0, HALF_LIFE_MS_MAX,
                                       "a duration from 0s to 3650d",
                                       &m->u.sched.half_life_ms, err)) < 0)
            return rc;
    }
    if ((v = sl_spec_member(spec, "preemption"))) {
        sl_spec_path_key(p, P, "preemption");
        if ((rc = sl_spec_check_object(v, p, sched_preemption_keys, err)) < 0 ||
            (rc = sl_spec_get_bool(v, "enabled", p, &m->u.sched.preemption, err)) < 0 ||
            (rc = sl_spec_get_duration(v, "minRuntime", p, 0, MIN_RUNTIME_MS_MAX,
                                       "a duration from 0s to 30d",
                                       &m->u.sched.min_runtime_ms, err)) < 0)
            return rc;
    }
    if (!(v = sl_spec_member(spec, "modelWeights")))
        return 0;
    sl_spec_path_key(p, P, "modelWeights");
    return get_model_map(v, p, WEIGHT_MILLI_MIN, WEIGHT_MILLI_MAX, WEIGHT_WHAT,
                         m->u.sched.weight_model, m->u.sched.weight_milli,
                         &m->u.sched.nweights, err);
}

static int pricing_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                        struct sl_error *err)
{
    return sl_pricing_parse(spec, P, &m->u.pricing, err);
}

static int budget_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    int rc = sl_budget_parse(spec, P, &m->u.budget, err);

    sl_strlcpy(m->u.budget.name, m->name, sizeof(m->u.budget.name));
    return rc;
}

static int policy_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                       struct sl_error *err)
{
    return sl_policy_parse(spec, P, m->name, &m->u.policy, err);
}

static int dataset_spec(const json_t *spec, const char *P, struct sl_manifest *m,
                        struct sl_error *err)
{
    return sl_dataset_parse(spec, P, m->name, &m->u.dataset, err);
}

/* ---- a file of manifests ---- */

/* The spec of one manifest, by kind: {kind, parse its spec (NULL when
 * absent) at path P}. */
static const struct {
    enum sl_manifest_kind kind;
    int (*parse)(const json_t *spec, const char *P, struct sl_manifest *m,
                 struct sl_error *err);
} spec_parsers[] = {
    {SL_KIND_TEAM, team_spec},     {SL_KIND_QUEUE, queue_spec},
    {SL_KIND_PRIORITY_CLASS, pclass_spec}, {SL_KIND_USER, user_spec},
    {SL_KIND_COHORT, cohort_spec}, {SL_KIND_SCHEDULER, sched_spec},
    {SL_KIND_PRICING, pricing_spec}, {SL_KIND_BUDGET, budget_spec},
    {SL_KIND_POLICY, policy_spec},   {SL_KIND_DATASET, dataset_spec},
};

/* The spec of one manifest, its kind and name already known. */
static int manifest_spec(const json_t *doc, const char *prefix,
                         struct sl_manifest *m, struct sl_error *err)
{
    char P[PATH_MAX_LEN];

    sl_spec_path_key(P, prefix, "spec");
    for (size_t i = 0; i < SL_ARRAY_LEN(spec_parsers); i++)
        if (spec_parsers[i].kind == m->kind)
            return spec_parsers[i].parse(sl_spec_member(doc, "spec"), P, m, err);
    return sl_spec_fail(err, P, "no parser for this kind"); /* not reached */
}

static int manifest_one(const json_t *doc, const char *prefix,
                        struct sl_manifest *m, struct sl_error *err)
{
    const json_t *meta;
    const char *kind;
    char p[PATH_MAX_LEN], np[PATH_MAX_LEN];
    size_t i;
    int rc;

    if (!json_is_object(doc))
        return sl_spec_fail_got(err, prefix, "an object (a manifest)", doc);
    if ((rc = sl_spec_check_object(doc, prefix, sl_spec_top_keys, err)) < 0 ||
        (rc = sl_spec_check_header(doc, prefix, &kind, err)) < 0)
        return rc;
    sl_spec_path_key(p, prefix, "kind");
    if (strcmp(kind, "Job") == 0)
        return sl_spec_fail(err, p,
                            "Job is not a manifest: submit jobs with `sluice submit "
                            "-f FILE`");
    for (i = 0; sl_spec_manifest_kinds[i].name; i++)
        if (strcmp(kind, sl_spec_manifest_kinds[i].name) == 0)
            break;
    if (!sl_spec_manifest_kinds[i].name)
        return sl_spec_fail_got(err, p,
                                "one of Team, Queue, PriorityClass, User, Cohort, "
                                "Scheduler, Pricing, Budget, Policy or Dataset",
                                sl_spec_member(doc, "kind"));
    m->kind = (enum sl_manifest_kind)sl_spec_manifest_kinds[i].value;
    sl_spec_path_key(p, prefix, "metadata");
    if (!(meta = sl_spec_member(doc, "metadata")))
        return sl_spec_fail(err, p, "is required (metadata.name names the object)");
    if ((rc = sl_spec_check_object(meta, p, manifest_meta_keys, err)) < 0 ||
        (rc = sl_spec_get_name(meta, "name", p, m->name, true, err)) < 0)
        return rc;
    if (m->kind == SL_KIND_SCHEDULER && strcmp(m->name, SCHEDULER_NAME) != 0) {
        sl_spec_path_key(np, p, "name");
        return sl_spec_fail(err, np,
                            "must be \"" SCHEDULER_NAME "\" (there is one scheduler), "
                            "got \"%s\"",
                            m->name);
    }
    if (m->kind == SL_KIND_PRICING && strcmp(m->name, SCHEDULER_NAME) != 0) {
        sl_spec_path_key(np, p, "name");
        return sl_spec_fail(err, np,
                            "must be \"default\" (one Pricing is in force), got \"%s\"",
                            m->name);
    }
    return manifest_spec(doc, prefix, m, err);
}

int sl_manifests_parse(const char *buf, size_t len, struct sl_manifest **out,
                       size_t *n, struct sl_error *err)
{
    json_t *docs = NULL;
    struct sl_manifest *ms = NULL;
    size_t count = 0;
    int rc;

    if ((rc = sl_doc_decode(buf, len, true, &docs, err)) < 0)
        goto out;
    count = json_array_size(docs);
    if (count == 0) {
        rc = sl_spec_fail(err, "", "no manifests found");
        goto out;
    }
    if (count > MANIFESTS_MAX) {
        rc = sl_spec_fail(err, "", "at most %d manifests per file, got %zu",
                          MANIFESTS_MAX, count);
        goto out;
    }
    if (!(ms = calloc(count, sizeof(*ms)))) {
        rc = sl_spec_oom(err);
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        char prefix[16] = "";

        if (count > 1)
            snprintf(prefix, sizeof(prefix), "[%zu]", i);
        if ((rc = manifest_one(json_array_get(docs, i), prefix, &ms[i], err)) < 0)
            goto out;
        for (size_t k = 0; k < i; k++) {
            if (ms[k].kind == ms[i].kind && !strcmp(ms[k].name, ms[i].name)) {
                char p[PATH_MAX_LEN];
                sl_spec_path_key(p, prefix, "metadata.name");
                rc = sl_spec_fail(err, p, "%s \"%s\" is declared twice (also at [%zu])",
                                  sl_spec_enum_name(sl_spec_manifest_kinds, (int)ms[i].kind),
                                  ms[i].name, k);
                goto out;
            }
        }
    }
    *out = ms;
    *n = count;
    ms = NULL;
out:
    free(ms);
    json_decref(docs);
    return rc;
}
