/*
 * depwait.c - jobs that wait for their dependencies (spec.dependency,
 * src/core/depend.h): checked at submission, judged again whenever a job
 * ends, made eligible in the scheduler once met (sl_sched_job_wait), ended
 * (or kept waiting, cfg.keep_invalid_depend) once they can never be met.
 *
 * The same way, the elements of a job array over its limit (spec.array's
 * %N) wait until fewer of its elements are eligible or running.
 *
 * Invariants: a Pending job has j->dep exactly while the scheduler holds it
 * not eligible for its dependencies; e->ndepwait counts them. An array
 * element has j->array_held exactly while the scheduler holds it not
 * eligible for its array's limit; e->narray_held counts them.
 */
#include "engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../policy/roles.h"

struct lookup {
    struct sl_engine *e;
    const struct sl_principal *who; /* NULL: every job is visible */
};

static bool sees(const struct sl_principal *who, const char *team)
{
    return !who || sl_role_all_teams(sl_role_of(who->role, who->job_id)) ||
           (team && strcmp(team, who->team) == 0);
}

/* The state of job 'id': in memory while Pending or Running, else as
 * stored (its end). */
static int lookup_state(void *arg, int64_t id, struct sl_dep_state *st)
{
    struct lookup *lk = arg;
    struct job *d = sl_imap_get(&lk->e->jobs, id);
    json_t *row = NULL;
    int rc, s;

    st->known = false;
    if (d) {
        st->known = sees(lk->who, d->team);
        st->state = d->state;
        return 0;
    }
    if (id >= lk->e->next_id)
        return 0;
    rc = sl_store_job_read(lk->e->st, id, sl_job_view_json_fn, &row);
    if (rc == -ENOENT || (rc == 0 && !row))
        return 0;
    if (rc < 0) {
        json_decref(row);
        return rc;
    }
    s = sl_job_state_parse(json_string_value(json_object_get(row, "state")));
    if (s >= 0 && sees(lk->who, json_string_value(json_object_get(row, "team")))) {
        st->known = true;
        st->state = (enum sl_job_state)s;
    }
    json_decref(row);
    return 0;
}

/* The earliest job of j's name and user before it that has not ended:
 * what a singleton waits for (0: none). */
static int64_t singleton_of(struct sl_engine *e, const struct job *j, enum sl_job_state *st)
{
    size_t pos = 0;
    int64_t id, best = 0;
    void *val;

    while (sl_imap_next(&e->jobs, &pos, &id, &val)) {
        const struct job *o = val;
        if (id < j->id && (!best || id < best) && o->user == j->user &&
            strcmp(o->name, j->name) == 0) {
            best = id;
            *st = o->state;
        }
    }
    return best;
}

static bool has_singleton(const struct sl_depend *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->item[i].type == SL_DEP_SINGLETON)
            return true;
    return false;
}

int sl_eng_depend_check(struct sl_engine *e, struct sl_op *op, struct sl_depend **out)
{
    const struct sl_job_spec *s = op->u.submit.spec;
    struct lookup lk = {.e = e, .who = &op->who};
    struct sl_depend *d;
    char why[256];
    int rc;

    *out = NULL;
    if (!s->dependency)
        return 0;
    if (!(d = malloc(sizeof(*d)))) {
        sl_eng_op_fail(op, 503, "unavailable");
        return sl_errorf(&op->err, -ENOMEM, "out of memory");
    }
    if ((rc = sl_depend_parse(s->dependency, d, &op->err)) < 0) {
        sl_eng_op_fail(op, 400, "invalid");
        goto out;
    }
    rc = sl_depend_eval(d, lookup_state, &lk, 0, SL_JOB_PENDING, why, sizeof(why));
    if (rc < 0) {
        sl_eng_op_fail(op, 503, "unavailable");
        rc = sl_errorf(&op->err, rc, "store: read failed");
        goto out;
    }
    if (rc == SL_DEP_NEVER) {
        sl_eng_op_fail(op, 400, "invalid");
        rc = sl_errorf_field(&op->err, -EINVAL, "spec.dependency", "%s", why);
        goto out;
    }
    *out = d;
    d = NULL;
    rc = 0;
out:
    free(d);
    return rc;
}

/* Tell the scheduler what 'j' waits for: 'why', or NULL once it may run. */
static int sched_wait(struct sl_engine *e, struct job *j, const char *why)
{
    int rc;

    pthread_mutex_lock(&e->mu);
    rc = sl_sched_job_wait(e->sched, j->id, why);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Judge 'j' now: 0 (met, or waits), 1 (can never be met: *why says so),
 * or a negated errno. */
static int judge(struct sl_engine *e, struct job *j, char *why, size_t size)
{
    struct lookup lk = {.e = e, .who = NULL};
    enum sl_job_state sst = SL_JOB_PENDING;
    int64_t single = has_singleton(j->dep) ? singleton_of(e, j, &sst) : 0;
    int v = sl_depend_eval(j->dep, lookup_state, &lk, single, sst, why, size);

    if (v < 0)
        return v;
    if (v == SL_DEP_MET) {
        free(j->dep);
        j->dep = NULL;
        e->ndepwait--;
        e->sched_full = true;
        return sched_wait(e, j, NULL);
    }
    if (v == SL_DEP_WAIT)
        return sched_wait(e, j, why);
    return 1;
}

int sl_eng_depend_attach(struct sl_engine *e, struct job *j, struct sl_depend *dep)
{
    char why[256];
    int rc;

    if (!dep)
        return 0;
    j->dep = dep;
    e->ndepwait++;
    if ((rc = sched_wait(e, j, "waiting for dependency")) < 0)
        return rc;
    rc = judge(e, j, why, sizeof(why));
    if (rc == 1) /* it ended in this very group: the next update ends it */
        e->dep_dirty = true;
    return rc < 0 ? rc : 0;
}

/* 'j' can never start: end it Cancelled, or keep it waiting. */
static void never(struct sl_engine *e, struct job *j, const char *why)
{
    char text[320];

    if (e->cfg.keep_invalid_depend) {
        snprintf(text, sizeof(text), "DependencyNeverSatisfied: %s", why);
        sched_wait(e, j, text);
        return;
    }
    j->state = SL_JOB_CANCELLED;
    sl_eng_job_msg(e, j, "%s", why);
    if (sl_eng_job_persist(e, j, "state", "Pending", -1, sl_eng_now_ms(e)) < 0) {
        /* the group fails as a whole (e->write_failed); memory stays */
        j->state = SL_JOB_PENDING;
        return;
    }
    sl_eng_job_forget(e, j);
    e->sched_full = true;
}

void sl_eng_array_hold(struct sl_engine *e, struct job *j)
{
    char text[160];

    snprintf(text, sizeof(text),
             "array throttle: at most %d elements of array %lld run at once (%%%d)",
             j->array_limit, (long long)j->array_id, j->array_limit);
    if (sched_wait(e, j, text) == 0) {
        j->array_held = true;
        e->narray_held++;
    }
}

static int cmp_elem(const void *a, const void *b)
{
    const struct job *x = *(struct job *const *)a, *y = *(struct job *const *)b;
    if (x->array_id != y->array_id)
        return x->array_id < y->array_id ? -1 : 1;
    return (x->array_index > y->array_index) - (x->array_index < y->array_index);
}

/* Held elements, lowest index first, eligible while their array has fewer
 * than its limit eligible or running. */
static void array_gate(struct sl_engine *e)
{
    struct job **held = NULL, **all = NULL;
    size_t nh = 0, ch = 0, na = 0, ca = 0, pos = 0;
    int64_t id;
    void *val;

    while (sl_imap_next(&e->jobs, &pos, &id, &val)) {
        struct job *j = val;
        if (j->array_limit <= 0)
            continue;
        if (sl_eng_vec_push((void **)(j->array_held ? &held : &all), j->array_held ? &nh : &na,
                            j->array_held ? &ch : &ca, sizeof(j), &j) < 0)
            goto out; /* out of memory: the next job's end tries again */
    }
    qsort(held, nh, sizeof(*held), cmp_elem);
    for (size_t i = 0; i < nh;) {
        int64_t arr = held[i]->array_id;
        int active = 0;
        for (size_t k = 0; k < na; k++)
            active += all[k]->array_id == arr;
        for (; i < nh && held[i]->array_id == arr; i++) {
            if (active >= held[i]->array_limit || sched_wait(e, held[i], NULL) < 0)
                continue;
            held[i]->array_held = false;
            e->narray_held--;
            e->sched_full = true;
            active++;
        }
    }
out:
    free(held);
    free(all);
}

void sl_eng_depend_update(struct sl_engine *e)
{
    for (int round = 0; e->dep_dirty && round < 64; round++) {
        int64_t *ids = NULL;
        size_t n = 0, cap = 0, pos = 0;
        int64_t id;
        void *val;

        e->dep_dirty = false;
        if (e->narray_held > 0)
            array_gate(e);
        if (e->ndepwait == 0)
            continue;
        while (sl_imap_next(&e->jobs, &pos, &id, &val))
            if (((struct job *)val)->dep &&
                sl_eng_vec_push((void **)&ids, &n, &cap, sizeof(id), &id) < 0) {
                e->dep_dirty = true; /* out of memory: try again later */
                break;
            }
        for (size_t i = 0; i < n; i++) {
            struct job *j = sl_imap_get(&e->jobs, ids[i]);
            char why[256];
            if (j && j->dep && j->state == SL_JOB_PENDING && judge(e, j, why, sizeof(why)) == 1)
                never(e, j, why);
        }
        free(ids);
    }
}
