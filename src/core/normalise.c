/*
 * normalise.c - the normalised documents: a job spec and a manifest's spec
 * written back as JSON with every default filled in, as the store keeps
 * them and `sluice show` prints them. See spec.h.
 *
 * Invariant: what is written here validates again to an equal struct:
 * sl_job_spec_from_json(sl_job_spec_to_json(s)) equals s, and a manifest's
 * spec, fed back to sl_manifests_parse, gives the same struct sl_manifest.
 */
#include "spec_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the job spec ---- */

/* Set obj[key] = v (stolen); false on failure. */
static bool put(json_t *obj, const char *key, json_t *v)
{
    return v && json_object_set_new(obj, key, v) == 0;
}

static bool put_str_opt(json_t *obj, const char *key, const char *s)
{
    return !s || !*s || put(obj, key, json_string(s));
}

static json_t *strv_json(char *const *v, int n)
{
    json_t *a = json_array();

    for (int i = 0; a && i < n; i++) {
        if (json_array_append_new(a, json_string(v[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *duration_json(int64_t ms)
{
    char buf[48];

    return json_string(sl_fmt_duration(ms, buf, sizeof(buf)));
}

json_t *sl_job_spec_to_json(const struct sl_job_spec *s)
{
    json_t *doc = json_object(), *meta = json_object(), *spec = json_object();
    json_t *res = json_object(), *env = json_object(), *ckpt = json_object();
    json_t *result = NULL;

    if (!doc || !meta || !spec || !res || !env || !ckpt)
        goto out;
    for (int i = 0; i < s->envc; i++) {
        const char *eq = strchr(s->env[i], '=');
        char key[ENV_KEY_MAX + 1];
        size_t klen = eq ? (size_t)(eq - s->env[i]) : 0;

        if (!eq || klen > ENV_KEY_MAX)
            goto out;
        memcpy(key, s->env[i], klen);
        key[klen] = '\0';
        if (!put(env, key, json_string(eq + 1)))
            goto out;
    }
    if (!put(doc, "apiVersion", json_string(API_VERSION)) ||
        !put(doc, "kind", json_string("Job")) ||
        !put_str_opt(meta, "name", s->name) ||
        !put_str_opt(meta, "team", s->team) ||
        !put_str_opt(meta, "project", s->project) ||
        !put(meta, "labels", s->labels ? json_deep_copy(s->labels)
                                       : json_object()) ||
        !put_str_opt(spec, "queue", s->queue) ||
        !put_str_opt(spec, "priorityClass", s->priority_class) ||
        !put_str_opt(spec, "image", s->image) ||
        !put(spec, "command", strv_json(s->argv, s->argc)) ||
        !put(spec, "env", json_incref(env)) ||
        !put_str_opt(spec, "workdir", s->workdir) ||
        !put_str_opt(spec, "dependency", s->dependency) ||
        !put_str_opt(spec, "array", s->array) ||
        (s->interactive && !put(spec, "interactive", json_true())) ||
        !put(spec, "tasks", json_integer(s->tasks)) ||
        !put(res, "gpus", json_integer(s->gpus)) ||
        (s->gpu_milli > 0 && !put(res, "gpuMilli", json_integer(s->gpu_milli))) ||
        !put(res, "gpuModels", strv_json(s->gpu_models, s->n_gpu_models)) ||
        !put(res, "cpuMilli", json_integer(s->cpu_milli)) ||
        !put(res, "memory", json_integer(s->mem_bytes)) ||
        !put(spec, "resources", json_incref(res)) ||
        !put(spec, "topology", json_string(sl_spec_enum_name(sl_spec_topology_names,
                                                             (int)s->topology))) ||
        (s->max_runtime_ms > 0 &&
         !put(spec, "maxRuntime", duration_json(s->max_runtime_ms))) ||
        !put(spec, "retries", json_integer(s->retries)) ||
        !put(ckpt, "signal", json_string(sl_signal_name(s->ckpt_signal))) ||
        !put(ckpt, "grace", duration_json(s->ckpt_grace_ms)) ||
        !put(spec, "checkpoint", json_incref(ckpt)) ||
        !put(spec, "datasets", strv_json(s->datasets, s->n_datasets)) ||
        !put(spec, "network", json_string(sl_spec_enum_name(sl_spec_network_names,
                                                            (int)s->network))) ||
        (s->code_repo && !put(spec, "code", json_pack("{s:s, s:s}", "repo", s->code_repo,
                                                      "commit", s->code_commit))) ||
        !put(doc, "metadata", json_incref(meta)) ||
        !put(doc, "spec", json_incref(spec)))
        goto out;
    result = doc;
    doc = NULL;
out:
    json_decref(doc);
    json_decref(meta);
    json_decref(spec);
    json_decref(res);
    json_decref(env);
    json_decref(ckpt);
    if (!result)
        errno = ENOMEM;
    return result;
}

/* ---- manifests ---- */

/* Milli-units as a JSON number: an integer when whole, else a real
 * (500 -> 0.5). milli / 1000.0 is the double nearest the decimal, the one
 * strtod gives for its text, so milli_of_real reads it back exactly. */
static json_t *milli_json(int64_t milli)
{
    if (milli % 1000 == 0)
        return json_integer(milli / 1000);
    return json_real((double)milli / 1000.0);
}

/* CPUs as a whole number or a "<milli>m" string (1500 -> "1500m"). */
static json_t *cpu_json(int64_t milli)
{
    char buf[32];

    if (milli % 1000 == 0)
        return json_integer(milli / 1000);
    snprintf(buf, sizeof(buf), "%" PRId64 "m", milli);
    return json_string(buf);
}

static json_t *model_map_json(const char names[][48], const int64_t *milli,
                              int n)
{
    json_t *o = json_object();

    for (int i = 0; o && i < n; i++) {
        if (!put(o, names[i], milli_json(milli[i]))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static bool res_list_given(const struct sl_res_list *l)
{
    return l->gpu_milli >= 0 || l->nmodels > 0 || l->cpu_milli >= 0 ||
           l->mem_bytes >= 0;
}

/* spec[key] = the list, left out when nothing is given (as absent or {}
 * parses). False on -ENOMEM. */
static bool put_res_list(json_t *spec, const char *key,
                         const struct sl_res_list *l)
{
    json_t *o;

    if (!res_list_given(l))
        return true;
    if (!(o = json_object()))
        return false;
    if ((l->gpu_milli >= 0 && !put(o, "gpus", milli_json(l->gpu_milli))) ||
        (l->nmodels > 0 &&
         !put(o, "gpusByModel",
              model_map_json(l->model, l->model_milli, l->nmodels))) ||
        (l->cpu_milli >= 0 && !put(o, "cpus", cpu_json(l->cpu_milli))) ||
        (l->mem_bytes >= 0 && !put(o, "memory", json_integer(l->mem_bytes)))) {
        json_decref(o);
        return false;
    }
    return put(spec, key, o);
}

/* Object {k: v} from a stolen value (may be NULL); NULL on failure. */
static json_t *obj1(const char *k, json_t *v)
{
    json_t *o = json_object();

    if (!o) {
        json_decref(v);
        return NULL;
    }
    if (!put(o, k, v)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Object {k1: v1, k2: v2} from stolen values; NULL on failure. */
static json_t *obj2(const char *k1, json_t *v1, const char *k2, json_t *v2)
{
    json_t *o = obj1(k1, v1);

    if (!o) {
        json_decref(v2);
        return NULL;
    }
    if (!put(o, k2, v2)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sl_manifest_spec_json(const struct sl_manifest *m)
{
    json_t *spec = json_object(), *result = NULL;
    bool good = spec != NULL;

    if (!good)
        goto out;
    switch (m->kind) {
    case SL_KIND_TEAM:
        good = put_str_opt(spec, "defaultQueue", m->u.team.default_queue);
        break;
    case SL_KIND_QUEUE:
        good = put(spec, "team", json_string(m->u.queue.team)) &&
               put_str_opt(spec, "cohort", m->u.queue.cohort) &&
               put(spec, "weight", milli_json(m->u.queue.weight_milli)) &&
               put_res_list(spec, "nominal", &m->u.queue.nominal) &&
               put_res_list(spec, "borrowingLimit",
                            &m->u.queue.borrowing_limit) &&
               put_res_list(spec, "lendingLimit", &m->u.queue.lending_limit) &&
               put_res_list(spec, "userLimit", &m->u.queue.user_limit) &&
               put(spec, "preemption",
                   obj2("withinQueue",
                             json_string(sl_spec_enum_name(sl_spec_preempt_within_names,
                                                           m->u.queue.preempt_within)),
                             "reclaimWithinCohort",
                             json_string(sl_spec_enum_name(sl_spec_reclaim_names,
                                                           m->u.queue.reclaim))));
        break;
    case SL_KIND_PRIORITY_CLASS:
        good = put(spec, "value", json_integer(m->u.pclass.value)) &&
               put(spec, "preemptible",
                   json_boolean(m->u.pclass.preemptible)) &&
               put(spec, "default", json_boolean(m->u.pclass.is_default)) &&
               put(spec, "opportunistic",
                   json_boolean(m->u.pclass.opportunistic)) &&
               put(spec, "minRuntime",
                   duration_json(m->u.pclass.min_runtime_ms));
        break;
    case SL_KIND_USER:
        good = put(spec, "team", json_string(m->u.user.team)) &&
               put(spec, "role", json_string(m->u.user.role)) &&
               put_str_opt(spec, "unixUser", m->u.user.unix_user);
        break;
    case SL_KIND_COHORT:
        good = put(spec, "description", json_string(m->u.cohort.description));
        break;
    case SL_KIND_SCHEDULER:
        good = put(spec, "placement",
                   json_string(sl_placement_name(m->u.sched.placement))) &&
               put(spec, "backfill", json_boolean(m->u.sched.backfill)) &&
               put(spec, "reservations",
                   json_integer(m->u.sched.reservations)) &&
               put(spec, "fairShare",
                   obj1("halfLife", duration_json(m->u.sched.half_life_ms))) &&
               put(spec, "preemption",
                   obj2("enabled", json_boolean(m->u.sched.preemption),
                             "minRuntime",
                             duration_json(m->u.sched.min_runtime_ms))) &&
               put(spec, "modelWeights",
                   model_map_json(m->u.sched.weight_model,
                                  m->u.sched.weight_milli,
                                  m->u.sched.nweights));
        break;
    case SL_KIND_PRICING:
        json_decref(spec);
        spec = sl_pricing_json(&m->u.pricing);
        good = spec != NULL;
        break;
    case SL_KIND_BUDGET:
        json_decref(spec);
        spec = sl_budget_json(&m->u.budget);
        good = spec != NULL;
        break;
    case SL_KIND_POLICY:
        json_decref(spec);
        spec = sl_policy_json(&m->u.policy);
        good = spec != NULL;
        break;
    case SL_KIND_DATASET:
        json_decref(spec);
        spec = sl_dataset_json(&m->u.dataset);
        good = spec != NULL;
        break;
    }
out:
    if (good) {
        result = spec;
        spec = NULL;
    }
    json_decref(spec);
    if (!result)
        errno = ENOMEM;
    return result;
}
