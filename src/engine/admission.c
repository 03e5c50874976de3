/*
 * admission.c - submit and cancel: admission policies, dataset and scan
 * lookups, lineage, and the submit and cancel operations.
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

/* Default job name: the command's base name, made a valid name. */
static void default_name(const struct sl_job_spec *s, char *out, size_t size)
{
    const char *base = strrchr(s->argv[0], '/');
    size_t n = 0;

    base = base ? base + 1 : s->argv[0];
    for (; *base && n + 1 < size && n < SL_NAME_MAX; base++) {
        char c = *base;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '-';
        if (c == '-' && (n == 0 || out[n - 1] == '-'))
            continue;
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    if (n == 0)
        sl_strlcpy(out, "job", size);
}

void sl_eng_sched_spec(struct sl_engine *e, const struct job *j, const struct queue *q,
                       const struct pclass *pc, int user, struct sl_sched_job_spec *sj)
{
    memset(sj, 0, sizeof(*sj));
    sj->id = j->id;
    sj->queue = q->sq;
    sj->user = user;
    sj->pclass = pc->sc;
    sj->submit_ms = j->submitted_ms;
    sj->not_before_ms = j->not_before_ms;
    sj->tasks = j->spec->tasks;
    sj->gpus = j->spec->gpus;
    sj->gpu_milli = j->spec->gpu_milli;
    sj->gpu_models = (const char *const *)j->spec->gpu_models;
    sj->cpu_milli = j->spec->cpu_milli;
    sj->mem_bytes = j->spec->mem_bytes;
    sj->topology = j->spec->topology;
    sj->max_runtime_ms = j->spec->max_runtime_ms;
    (void)e;
}

static int policy_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sl_policy *)a)->name, ((const struct sl_policy *)b)->name);
}

void sl_eng_policy_set(struct sl_engine *e, const struct sl_policy *p)
{
    struct sl_policy *grown;

    for (int i = 0; i < e->npolicies; i++)
        if (strcmp(e->policies[i].name, p->name) == 0) {
            e->policies[i] = *p;
            return;
        }
    if (!(grown = realloc(e->policies, sizeof(*grown) * (size_t)(e->npolicies + 1)))) {
        sl_error("msg=\"out of memory: policy %s is stored but not in force until "
                 "restart\"", p->name);
        return;
    }
    e->policies = grown;
    e->policies[e->npolicies++] = *p;
    qsort(e->policies, (size_t)e->npolicies, sizeof(*e->policies), policy_cmp);
}

static int ld_policy(void *arg, const char *name, const char *spec)
{
    struct sl_engine *e = arg;
    struct sl_manifest *m = NULL;

    if (sl_eng_manifest_from_store("Policy", name, spec, &m) < 0)
        return 0; /* said by sl_eng_manifest_from_store; the others still load */
    sl_eng_policy_set(e, &m->u.policy);
    free(m);
    return 0;
}

int sl_eng_policies_load(struct sl_engine *e, struct sl_error *err)
{
    int rc = sl_store_objs_each(e->st, "Policy", ld_policy, e);
    return rc < 0 ? sl_errorf(err, rc, "store: cannot load the policies") : 0;
}

/* The lookups of sl_admit, from the store (engine thread): one scratch
 * object each, valid until the next call. */
struct admit_scratch {
    struct sl_engine *e;
    struct sl_dataset ds;
    struct sl_scan scan;
};

static const struct sl_dataset *admit_dataset(void *arg, const char *name, const char *version)
{
    struct admit_scratch *x = arg;
    char key[160], *text;
    struct sl_manifest *m = NULL;
    int rc;

    snprintf(key, sizeof(key), "%s@%s", name, version);
    if (!(text = sl_store_obj_get(x->e->st, "Dataset", key, &rc)))
        return NULL;
    rc = sl_eng_manifest_from_store("Dataset", name, text, &m);
    free(text);
    if (rc < 0)
        return NULL;
    x->ds = m->u.dataset;
    free(m);
    return &x->ds;
}

static const struct sl_scan *admit_scan(void *arg, const char *digest)
{
    struct admit_scratch *x = arg;
    char *text;
    json_t *j;
    int rc;

    if (!(text = sl_store_obj_get(x->e->st, "Scan", digest, &rc)))
        return NULL;
    j = json_loads(text, 0, NULL);
    free(text);
    rc = j ? sl_scan_from_json(j, &x->scan) : -EINVAL;
    json_decref(j);
    return rc == 0 ? &x->scan : NULL;
}

/* The lineage the job records: its image (and digest), code and datasets
 * as admitted. */
static char *lineage_text(const struct sl_job_spec *s, const struct sl_verdict *v)
{
    json_t *ds = json_array(), *o;
    struct sl_image_ref ref;
    char *text;

    for (int i = 0; ds && i < v->ndatasets; i++)
        json_array_append_new(ds, json_pack("{s:s, s:s, s:s, s:s}", "name", v->datasets[i].name,
                                            "version", v->datasets[i].version, "digest",
                                            v->datasets[i].digest, "mode",
                                            v->datasets[i].rw ? "rw" : "ro"));
    o = json_pack("{s:o, s:o, s:o}", "image",
                  s->image ? json_pack("{s:s, s:s?}", "ref", s->image, "digest",
                                       sl_image_ref_parse(s->image, &ref) == 0 && ref.digest[0]
                                           ? ref.digest
                                           : NULL)
                           : json_null(),
                  "code",
                  s->code_repo ? json_pack("{s:s, s:s}", "repo", s->code_repo, "commit",
                                           s->code_commit)
                               : json_null(),
                  "datasets", ds ? ds : json_array());
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* Where a submission goes, once resolved: its team, queue and class, and
 * what admission and the budgets said. */
struct submit {
    struct team *tm;
    struct queue *q;
    struct pclass *pc;
    struct sl_verdict *verdict;   /* owned */
    const struct budget *spent;   /* demoting the job; NULL = none */
    char btext[256];              /* the spent budget, in words */
};

/* The team, queue and class of a submission, and who its tasks run as.
 * Returns 0, or a refusal (op failed). */
static int submit_target(struct sl_engine *e, struct sl_op *op, struct submit *x)
{
    struct sl_job_spec *s = op->u.submit.spec;
    const char *team = s->team[0] ? s->team : op->who.team;

    snprintf(op->object, sizeof(op->object), "team:%s", team);
    if (!(x->tm = sl_eng_team_find(e, team))) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "metadata.team", "team '%s' does not exist",
                               team);
    }
    if (!sl_eng_is_admin(&op->who) && strcmp(x->tm->name, op->who.team) != 0) {
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "metadata.team",
                               "user '%s' may not submit to team '%s'", op->who.user,
                               x->tm->name);
    }
    x->q = sl_eng_queue_find(e, s->queue[0] ? s->queue : x->tm->default_queue);
    if (!x->q || strcmp(x->q->team, x->tm->name) != 0) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "spec.queue",
                               "queue '%s' does not exist in team '%s'",
                               s->queue[0] ? s->queue : x->tm->default_queue, x->tm->name);
    }
    if (e->caps.runs_as_accounts && !op->who.unix_user[0] && !e->job_user[0]) {
        sl_eng_op_fail(op, 403, "forbidden");
        return sl_errorf_field(&op->err, -EPERM, "spec.unixUser",
                               "user '%s' has no Unix account to run jobs as (kind: User "
                               "spec.unixUser, set by an admin), and sluiced runs no job "
                               "of an unmapped user (--job-user none)",
                               op->who.user);
    }
    if (s->interactive && !e->caps.interactive) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "spec.interactive", "%s",
                               e->caps.interactive_why);
    }
    if (!(x->pc = sl_eng_pclass_find(e, s->priority_class[0] ? s->priority_class : NULL))) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, "spec.priorityClass",
                               "priority class '%s' does not exist", s->priority_class);
    }
    return 0;
}

int sl_eng_admit(struct sl_engine *e, struct sl_op *op, const struct sl_job_spec *s,
                 const char *team, const char *queue, const char *pclass,
                 struct sl_verdict **verdict)
{
    struct admit_scratch scratch = {.e = e};
    struct sl_admit_in in = {.spec = s, .team = team, .queue = queue, .pclass = pclass,
                             .dataset = admit_dataset, .scan = admit_scan, .arg = &scratch};
    struct sl_verdict *v = calloc(1, sizeof(*v));

    if (!v || sl_admit(e->policies, (size_t)e->npolicies, &in, v) < 0) {
        free(v);
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    if (!v->allowed) {
        sl_eng_op_fail(op, 403, "policy_denied");
        op->audit_details = json_pack("{s:s, s:s}", "policy", v->policy, "rule", v->rule);
        sl_errorf_field(&op->err, -EPERM, v->field, "%s", v->message);
        free(v);
        return -EPERM;
    }
    *verdict = v;
    return 0;
}

/* The admission policies' verdict (x->verdict); a refusal changes nothing.
 * A policy's default network profile becomes the job's. */
static int submit_admit(struct sl_engine *e, struct sl_op *op, struct submit *x)
{
    struct sl_job_spec *s = op->u.submit.spec;
    int rc;

    if ((rc = sl_eng_admit(e, op, s, x->tm->name, x->q->name, x->pc->name, &x->verdict)) < 0)
        return rc;
    if ((int)s->network != x->verdict->network) {
        /* a policy's default profile: the stored spec says it */
        s->network = (enum sl_network)x->verdict->network;
        free(op->u.submit.spec_json);
        op->u.submit.spec_json = NULL;
    }
    return 0;
}

/* A spent budget of the team blocks the job, or demotes it to the lowest
 * preemptible class (x->spent, x->pc). */
static int submit_budget(struct sl_engine *e, struct sl_op *op, struct submit *x)
{
    struct pclass *low;

    if (!(x->spent = sl_eng_budget_spent(e, x->tm->name, sl_eng_now_ms(e))))
        return 0;
    low = sl_eng_demote_class(e);
    sl_eng_budget_text(e, x->spent, sl_eng_now_ms(e), x->btext, sizeof(x->btext));
    if (x->spent->b.action == SL_BUDGET_BLOCK || !low) {
        sl_eng_op_fail(op, 403, "budget_exceeded");
        return sl_errorf_field(&op->err, -EPERM, "metadata.team", "%s; new jobs are blocked",
                               x->btext);
    }
    if (low != x->pc && low->value < x->pc->value)
        x->pc = low;
    else
        x->spent = NULL; /* already as low as demotion goes */
    return 0;
}

int sl_eng_runnable(struct sl_engine *e, struct sl_op *op, const struct sl_job_spec *js,
                    const struct queue *q, const struct pclass *pc)
{
    struct sl_sched_job_spec sj;
    struct sl_error why = {0};
    int rc;

    memset(&sj, 0, sizeof(sj));
    sj.queue = q->sq;
    sj.user = -1;
    sj.pclass = pc->sc;
    sj.tasks = js->tasks;
    sj.gpus = js->gpus;
    sj.gpu_milli = js->gpu_milli;
    sj.gpu_models = (const char *const *)js->gpu_models;
    sj.cpu_milli = js->cpu_milli;
    sj.mem_bytes = js->mem_bytes;
    sj.topology = js->topology;
    sj.max_runtime_ms = js->max_runtime_ms;
    pthread_mutex_lock(&e->mu);
    rc = sl_sched_job_runnable(e->sched, &sj, &why);
    pthread_mutex_unlock(&e->mu);
    if (rc == 0)
        return 0;
    sl_eng_op_fail(op, 400, rc == -EDQUOT ? "quota_exceeded"
                            : rc == -E2BIG ? "unsatisfiable"
                                           : "invalid");
    return sl_errorf_field(&op->err, rc, why.field[0] ? why.field : NULL, "%s", why.text);
}

/* A dry run's answer: the verdict, and nothing kept. */
static int submit_dry_run(struct sl_op *op, const struct submit *x)
{
    const struct sl_job_spec *s = op->u.submit.spec;
    const struct sl_verdict *v = x->verdict;
    json_t *ds = json_array();

    for (int i = 0; ds && i < v->ndatasets; i++)
        json_array_append_new(ds, json_pack("{s:s, s:s, s:s}", "name", v->datasets[i].name,
                                            "version", v->datasets[i].version, "mode",
                                            v->datasets[i].rw ? "rw" : "ro"));
    op->result = json_pack("{s:b, s:s, s:s, s:s, s:s, s:o, s:s?}", "allowed", 1, "team",
                           x->tm->name, "queue", x->q->name, "priority_class", x->pc->name,
                           "network",
                           s->network == SL_NET_ISOLATED   ? "isolated"
                           : s->network == SL_NET_INTERNAL ? "internal"
                                                           : "egress",
                           "datasets", ds ? ds : json_array(), "demoted_to",
                           x->spent ? x->pc->name : NULL);
    op->status = 200;
    return 0;
}

/* The new job, Pending, owning the op's spec. Returns it, or NULL with the
 * op failed (out of memory). */
static struct job *submit_job(struct sl_engine *e, struct sl_op *op, const struct submit *x)
{
    struct sl_job_spec *s = op->u.submit.spec;
    struct job *j = calloc(1, sizeof(*j));
    char name[SL_NAME_MAX + 1];

    if (!j)
        goto oom;
    j->lineage = lineage_text(s, x->verdict);
    if (x->spent) {
        char note[384];
        snprintf(note, sizeof(note), "demoted to %s: %s", x->pc->name, x->btext);
        if (!(j->demoted = strdup(note)))
            goto oom;
        sl_eng_job_msg(e, j, "%s", note);
    }
    if (s->name[0])
        sl_strlcpy(name, s->name, sizeof(name));
    else
        default_name(s, name, sizeof(name));
    j->spec = s;
    op->u.submit.spec = NULL;
    if (!(j->name = strdup(name)) || !(j->team = sl_eng_intern(&e->strs, x->tm->name)) ||
        !(j->project = sl_eng_intern(&e->strs, s->project)) ||
        !(j->user = sl_eng_intern(&e->strs, op->who.user)) ||
        !(j->unix_user = sl_eng_intern(&e->strs, op->who.unix_user)) ||
        !(j->queue = sl_eng_intern(&e->strs, x->q->name)) ||
        !(j->pclass = sl_eng_intern(&e->strs, x->pc->name)))
        goto oom;
    j->priority = x->pc->value;
    j->state = SL_JOB_PENDING;
    j->submitted_ms = sl_eng_now_ms(e);
    j->limits_enforced = j->gpus_enforced = -1;
    return j;
oom:
    sl_eng_job_free(j);
    sl_eng_op_fail(op, 503, "unavailable");
    sl_errorf(&op->err, -ENOMEM, "out of memory");
    return NULL;
}

/* Job 'j' in the scheduler and the job map. Returns 0, or -ENOMEM / -EINVAL
 * (the scheduler refused it) with the op failed and nothing changed. */
static int submit_enqueue(struct sl_engine *e, struct sl_op *op, struct job *j,
                          const struct submit *x)
{
    struct sl_sched_job_spec sj;
    struct sl_error why = {0};
    int rc, user;

    pthread_mutex_lock(&e->mu);
    user = sl_sched_user(e->sched, j->user);
    if (user < 0) {
        rc = user;
    } else {
        sl_eng_sched_spec(e, j, x->q, x->pc, user, &sj);
        rc = sl_sched_job_add(e->sched, &sj, &why);
    }
    if (rc == 0 && (rc = sl_imap_put(&e->jobs, j->id, j)) < 0)
        sl_sched_job_remove(e->sched, j->id, j->submitted_ms);
    pthread_mutex_unlock(&e->mu);
    if (rc == -ENOMEM) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, rc, "out of memory");
    }
    if (rc < 0) {
        sl_eng_op_fail(op, 400, "invalid");
        return sl_errorf_field(&op->err, -EINVAL, why.field, "%s", why.text);
    }
    return 0;
}

/* Take back the elements [first, e->next_id) of an array submitted in
 * this op (a later element failed): a refused request changes nothing. */
static void submit_undo(struct sl_engine *e, int64_t first)
{
    for (int64_t id = e->next_id - 1; id >= first; id--) {
        struct job *j;
        pthread_mutex_lock(&e->mu);
        j = sl_imap_del(&e->jobs, id);
        sl_sched_job_remove(e->sched, id, sl_eng_now_ms(e));
        pthread_mutex_unlock(&e->mu);
        if (j && j->array_held)
            e->narray_held--;
        sl_eng_job_free(j);
        e->nunstored--;
        e->nfresh--;
    }
    e->next_id = first;
}

/* One job (or array element k of 'arr') into the engine, fresh, owning
 * *spec_json (taken). The first one's object is the answer. */
static int submit_one(struct sl_engine *e, struct sl_op *op, const struct submit *x,
                      const struct sl_array *arr, int k, int64_t first, char **spec_json)
{
    struct job *j;
    struct sl_job_view v;
    int rc;

    if (!(j = submit_job(e, op, x)))
        return -ENOMEM;
    j->id = e->next_id;
    if (arr) {
        j->array_id = first;
        j->array_index = arr->index[k];
        j->array_count = arr->n;
        j->array_limit = arr->limit;
    }
    /* Nothing is written here: the row and the Pending event go with the
     * job's first write (sl_eng_job_row), at the latest just before this
     * transaction commits, and the answer waits for that commit. */
    sl_eng_job_view(j, &v, NULL, *spec_json);
    if ((rc = sl_eng_vec_push((void **)&e->unstored, &e->nunstored, &e->unstored_cap,
                              sizeof(j->id), &j->id)) < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        sl_errorf(&op->err, rc, "out of memory");
        sl_eng_job_free(j);
        return rc;
    }
    if ((k == 0 && (rc = sl_eng_op_job_body(op, &v)) < 0) ||
        (rc = submit_enqueue(e, op, j, x)) < 0) {
        e->nunstored--;
        sl_eng_job_free(j);
        return rc;
    }
    e->next_id++;
    j->fresh = true;
    j->spec_json = *spec_json;
    *spec_json = NULL;
    e->nfresh++;
    if (arr && arr->limit > 0 && k >= arr->limit)
        sl_eng_array_hold(e, j);
    return 0;
}

/* The array of the submission (spec.array), or NULL with *rc 0 (none) or
 * a refusal. */
static struct sl_array *submit_array(struct sl_op *op, int *rc)
{
    const struct sl_job_spec *s = op->u.submit.spec;
    struct sl_array *a;

    *rc = 0;
    if (!s->array)
        return NULL;
    if (!(a = malloc(sizeof(*a))) || (*rc = sl_array_parse(s->array, a, &op->err)) < 0) {
        sl_eng_op_fail(op, a ? 400 : 503, a ? "invalid" : "unavailable");
        if (!a)
            *rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        free(a);
        return NULL;
    }
    return a;
}

static void dep_copies_free(struct sl_depend **c, int n)
{
    for (int k = 0; c && k < n; k++)
        free(c[k]);
    free(c);
}

/* Copies of 'dep' for the 'n' elements after an array's first, which takes
 * 'dep' itself: every element carries the dependency. Made before any job
 * is, so that running out of memory refuses the submission whole. NULL on
 * -ENOMEM. */
static struct sl_depend **dep_copies(const struct sl_depend *dep, int n)
{
    struct sl_depend **c = calloc((size_t)n, sizeof(*c));

    for (int k = 0; c && k < n; k++) {
        if (!(c[k] = malloc(sizeof(*dep)))) {
            dep_copies_free(c, k);
            return NULL;
        }
        *c[k] = *dep;
    }
    return c;
}

int sl_eng_do_submit(struct sl_engine *e, struct sl_op *op)
{
    struct submit x = {0};
    struct sl_depend *dep = NULL, **copies = NULL;
    struct sl_array *arr = NULL;
    json_t *doc = NULL;
    char *spec_json = NULL, *text = NULL;
    int64_t first = e->next_id;
    int rc, n = 1;

    if ((rc = submit_target(e, op, &x)) < 0 || (rc = submit_admit(e, op, &x)) < 0 ||
        (rc = submit_budget(e, op, &x)) < 0 ||
        (rc = sl_eng_runnable(e, op, op->u.submit.spec, x.q, x.pc)) < 0 ||
        (rc = sl_eng_depend_check(e, op, &dep)) < 0 || (!(arr = submit_array(op, &rc)) && rc < 0))
        goto out;
    if (op->u.submit.dry_run) {
        rc = submit_dry_run(op, &x);
        goto out;
    }
    /* The normalised spec as text: the HTTP thread's (made beside the
     * parse, off this thread), else made here. */
    spec_json = op->u.submit.spec_json;
    op->u.submit.spec_json = NULL;
    if (!spec_json && (!(doc = sl_job_spec_to_json(op->u.submit.spec)) ||
                       !(spec_json = json_dumps(doc, JSON_COMPACT)))) {
        sl_eng_op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    n = arr ? arr->n : 1;
    if (dep && n > 1 && !(copies = dep_copies(dep, n - 1))) {
        sl_eng_op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        goto out;
    }
    for (int k = 0; k < n; k++) {
        /* each element owns its spec: the next one's is read back from
         * the normalised text */
        if (k + 1 < n && !(text = strdup(spec_json))) {
            sl_eng_op_fail(op, 503, "unavailable");
            rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
        } else if (k > 0 && !op->u.submit.spec &&
                   (rc = sl_job_spec_parse(spec_json, strlen(spec_json), &op->u.submit.spec,
                                           &op->err)) < 0) {
            sl_eng_op_fail(op, 503, "unavailable");
        } else {
            rc = submit_one(e, op, &x, arr, k, first, &spec_json);
        }
        if (rc < 0) {
            submit_undo(e, first);
            free(op->body);
            op->body = NULL;
            goto out;
        }
        free(spec_json);
        spec_json = text;
        text = NULL;
    }
    for (int k = 0; dep && k < n; k++) {
        struct sl_depend *dk = k ? copies[k - 1] : dep;
        if (k)
            copies[k - 1] = NULL;
        if (sl_eng_depend_attach(e, sl_imap_get(&e->jobs, first + k), dk) < 0)
            sl_error("msg=\"out of memory judging a job's dependencies\" job=%lld",
                     (long long)(first + k));
    }
    dep = NULL;
    {
        struct job *j = sl_imap_get(&e->jobs, first);
        snprintf(op->object, sizeof(op->object), "job:%lld", (long long)first);
        op->audit_details = json_pack(
            "{s:s, s:s, s:s, s:s, s:s?, s:i, s:i, s:i, s:s?, s:s?, s:i}", "name", j->name,
            "team", j->team, "queue", j->queue, "priority_class", j->pclass, "image",
            j->spec->image, "tasks", j->spec->tasks, "gpus", j->spec->gpus, "gpu_milli",
            j->spec->gpu_milli, "budget", x.spent ? x.spent->b.name : NULL, "array",
            j->spec->array, "jobs", n);
    }
    op->status = 201;
out:
    free(x.verdict);
    free(dep);
    dep_copies_free(copies, n - 1);
    free(arr);
    free(text);
    json_decref(doc);
    free(spec_json);
    return rc;
}

int sl_eng_do_cancel(struct sl_engine *e, struct sl_op *op)
{
    struct job *j = sl_imap_get(&e->jobs, op->u.cancel.job_id);
    struct sl_job_view v;
    int rc;

    if (!j) {
        json_t *row = NULL;
        const char *team;
        /* any failure to read it (no such job, a read error) is a 404 */
        rc = sl_store_job_read(e->st, op->u.cancel.job_id, sl_job_view_json_fn, &row);
        team = rc == 0 ? json_string_value(json_object_get(row, "team")) : NULL;
        if (!row || (!sl_eng_is_admin(&op->who) && team && strcmp(team, op->who.team))) {
            json_decref(row);
            sl_eng_op_fail(op, 404, "not_found");
            return sl_errorf(&op->err, -ENOENT, "job %lld not found",
                             (long long)op->u.cancel.job_id);
        }
        sl_eng_op_fail(op, 409, "conflict");
        sl_errorf(&op->err, -EALREADY, "job %lld has already finished (%s)",
                  (long long)op->u.cancel.job_id,
                  json_string_value(json_object_get(row, "state")));
        json_decref(row);
        return -EALREADY;
    }
    if (!sl_eng_is_admin(&op->who) && strcmp(j->team, op->who.team) != 0) {
        sl_eng_op_fail(op, 404, "not_found");
        return sl_errorf(&op->err, -ENOENT, "job %lld not found",
                         (long long)op->u.cancel.job_id);
    }
    if (j->state == SL_JOB_PENDING) {
        if (j->staged_after) { /* it never runs where it was staged */
            free(j->placement);
            j->placement = NULL;
        }
        j->state = SL_JOB_CANCELLED;
        sl_eng_job_msg(e, j, "cancelled by %s while pending", op->who.user);
        if ((rc = sl_eng_job_persist(e, j, "state", "Pending", -1, sl_eng_now_ms(e))) < 0) {
            j->state = SL_JOB_PENDING;
            sl_eng_op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, rc, "store: write failed");
        }
        sl_eng_job_view(j, &v, NULL, NULL);
        v.finished_ms = sl_eng_now_ms(e);
        v.spec_doc = sl_job_spec_to_json(j->spec);
        rc = sl_eng_op_job_body(op, &v);
        json_decref(v.spec_doc);
        sl_eng_job_forget(e, j);
        e->sched_full = true; /* a reservation may be gone */
        if (rc < 0)
            return rc;
        op->status = 202;
        return 0;
    }
    if (!j->cancel_requested) {
        j->cancel_requested = true;
        j->intent_at_ms = sl_eng_now_ms(e);
        sl_eng_job_msg(e, j, "cancel requested by %s: SIGTERM, then SIGKILL after %llds",
                op->who.user, (long long)(e->cfg.cancel_grace_ms / 1000));
        /* The intent is in the row, so that a daemon restarted before the
         * job ends finishes the cancel (intent_resume). */
        if ((rc = sl_eng_job_intent_write(e, j, "cancel")) < 0) {
            j->cancel_requested = false;
            j->intent_at_ms = 0;
            sl_eng_op_fail(op, 503, "unavailable");
            return sl_errorf(&op->err, rc, "store: write failed");
        }
        sl_eng_job_signal_all(e, j, SIGTERM);
        j->kill_at_ms = sl_eng_mono_ms(e) + e->cfg.cancel_grace_ms;
        sl_eng_job_timer(e, j);
    }
    sl_eng_job_view(j, &v, j->placement, NULL);
    v.spec_doc = sl_job_spec_to_json(j->spec);
    rc = sl_eng_op_job_body(op, &v);
    json_decref(v.spec_doc);
    if (rc < 0)
        return rc;
    op->status = 202;
    return 0;
}

void sl_eng_array_store_fresh(struct sl_engine *e, int64_t id)
{
    for (int k = 0; k < SL_ARRAY_MAX; k++) {
        struct job *j = sl_imap_get(&e->jobs, id + k);
        if (j && j->array_id == id && j->fresh)
            sl_eng_job_store_fresh(e, j->id);
    }
}

/* The array whose first element is job 'id', as the caller may see it:
 * its number of elements, or 0 when there is none (not visible, not an
 * array's id). */
static int array_of(struct sl_engine *e, const struct sl_op *op, int64_t id)
{
    struct job *h = sl_imap_get(&e->jobs, id);
    struct sl_array *a = NULL;
    struct sl_error err;
    json_t *row = NULL;
    const char *team, *text;
    int n = 0;

    if (h) {
        if (h->array_id == id && (sl_eng_is_admin(&op->who) || !strcmp(h->team, op->who.team)))
            n = h->array_count;
        return n;
    }
    sl_store_job_read(e->st, id, sl_job_view_json_fn, &row);
    team = json_string_value(json_object_get(row, "team"));
    text = json_string_value(
        json_object_get(json_object_get(json_object_get(row, "spec"), "spec"), "array"));
    if (row && text && json_integer_value(json_object_get(row, "array_job_id")) == id &&
        (sl_eng_is_admin(&op->who) || (team && !strcmp(team, op->who.team))) &&
        (a = malloc(sizeof(*a))) && sl_array_parse(text, a, &err) == 0)
        n = a->n;
    free(a);
    json_decref(row);
    return n;
}

int sl_eng_do_array_cancel(struct sl_engine *e, struct sl_op *op)
{
    int64_t arr = op->u.cancel.job_id;
    json_t *cancelled = json_array(), *stopping = json_array();
    int64_t *live = NULL;
    size_t nlive = 0, cap = 0;
    int n = array_of(e, op, arr), rc = 0;

    if (!cancelled || !stopping)
        goto oom;
    if (n == 0) {
        sl_eng_op_fail(op, 404, "not_found");
        rc = sl_errorf(&op->err, -ENOENT, "array %lld not found (no array has that id)",
                       (long long)arr);
        goto out;
    }
    for (int k = 0; k < n; k++) {
        struct job *j = sl_imap_get(&e->jobs, arr + k);
        if (j && j->array_id == arr &&
            sl_eng_vec_push((void **)&live, &nlive, &cap, sizeof(j->id), &j->id) < 0)
            goto oom;
    }
    if (nlive == 0) {
        sl_eng_op_fail(op, 409, "conflict");
        rc = sl_errorf(&op->err, -EALREADY, "array %lld has already finished", (long long)arr);
        goto out;
    }
    for (size_t i = 0; i < nlive; i++) {
        struct sl_op c = {.kind = SL_OP_CANCEL, .who = op->who};
        struct job *j;

        c.u.cancel.job_id = live[i];
        snprintf(c.object, sizeof(c.object), "job:%lld", (long long)live[i]);
        c.audit_details = json_pack("{s:s}", "for", op->object);
        rc = sl_eng_do_cancel(e, &c);
        sl_eng_audit_op(e, &c, rc);
        sl_op_fini(&c);
        if (rc < 0) {
            /* the same team's live elements: only a failed write refuses
             * one, and the whole group fails with it */
            e->write_failed = true;
            sl_eng_op_fail(op, 503, "unavailable");
            rc = sl_errorf(&op->err, rc, "cancelling job %lld failed", (long long)live[i]);
            goto out;
        }
        j = sl_imap_get(&e->jobs, live[i]);
        json_array_append_new(j && j->state == SL_JOB_RUNNING ? stopping : cancelled,
                              json_integer(live[i]));
    }
    op->result = json_pack("{s:I, s:O, s:O}", "array_job_id", (json_int_t)arr, "cancelled",
                           cancelled, "stopping", stopping);
    op->audit_details = json_pack("{s:O, s:O}", "cancelled", cancelled, "stopping", stopping);
    if (!op->result) {
        e->write_failed = true; /* the cancels are in memory: fail them all */
        goto oom;
    }
    op->status = 202;
    goto out;
oom:
    sl_eng_op_fail(op, 503, "unavailable");
    rc = sl_errorf(&op->err, -ENOMEM, "out of memory");
out:
    free(live);
    json_decref(cancelled);
    json_decref(stopping);
    return rc;
}
