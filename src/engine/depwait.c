/*
 * depwait.c - jobs that wait for their dependencies (spec.dependency,
 * src/core/depend.h): checked at submission, judged again whenever a job
 * ends, made eligible in the scheduler once met (sl_sched_job_wait), ended
 * (or kept waiting, cfg.keep_invalid_depend) once they can never be met.
 *
 * The same way, the elements of a job array over its limit (spec.array's
 * %N) wait until fewer of its elements are eligible or running.
 *
 * An array's id in a dependency names every element (Slurm's meaning,
 * src/core/depend.h), ID_INDEX one element; an array may have a
 * dependency, which each of its elements carries.
 *
 * Invariants: a Pending job is eligible exactly while it has neither
 * j->dep (it waits for its dependencies; e->ndepwait counts them) nor
 * j->array_held (an array element over its array's limit; e->narray_held
 * counts them). Its reason in the scheduler is the dependency's while it
 * has one, else the limit's.
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

/* What the engine knows of one job for a dependency. */
struct found {
    bool known;                   /* exists and 'who' may see it */
    enum sl_job_state state;
    int64_t array_id;             /* an element: its array's id; 0 = none */
    int32_t array_index;
    int array_count;              /* an element: its array's elements */
    const char *array_text;       /* an element: spec.array (in 'row' or
                                     the job's spec) */
    json_t *row;                  /* owned: the stored row, when read */
};

/* Job 'id' into *f: in memory while Pending or Running, else as stored
 * (its end). Returns 0 (f->known false: none, or not visible) or a
 * negated errno; release f->row. */
static int find(struct lookup *lk, int64_t id, struct found *f)
{
    struct job *d = sl_imap_get(&lk->e->jobs, id);
    const json_t *spec;
    int rc, s;

    memset(f, 0, sizeof(*f));
    if (d) {
        f->known = sees(lk->who, d->team);
        f->state = d->state;
        f->array_id = d->array_id;
        f->array_index = d->array_index;
        f->array_count = d->array_count;
        f->array_text = d->spec->array;
        return 0;
    }
    if (id >= lk->e->next_id)
        return 0;
    rc = sl_store_job_read(lk->e->st, id, sl_job_view_json_fn, &f->row);
    if (rc == -ENOENT || (rc == 0 && !f->row))
        return 0;
    if (rc < 0)
        return rc;
    s = sl_job_state_parse(json_string_value(json_object_get(f->row, "state")));
    if (s < 0 || !sees(lk->who, json_string_value(json_object_get(f->row, "team"))))
        return 0;
    f->known = true;
    f->state = (enum sl_job_state)s;
    f->array_id = json_integer_value(json_object_get(f->row, "array_job_id"));
    f->array_index = (int32_t)json_integer_value(json_object_get(f->row, "array_index"));
    spec = json_object_get(json_object_get(f->row, "spec"), "spec");
    f->array_text = json_string_value(json_object_get(spec, "array"));
    if (f->array_id && f->array_text) {
        struct sl_array *a = malloc(sizeof(*a));
        struct sl_error err;
        if (!a)
            return -ENOMEM;
        if (sl_array_parse(f->array_text, a, &err) == 0)
            f->array_count = a->n;
        free(a);
    }
    return 0;
}

/* The position of 'index' in array text 'text' (its element's id is the
 * array's id plus it), or -1. */
static int element_pos(const char *text, int32_t index, int *rc)
{
    struct sl_array *a = malloc(sizeof(*a));
    struct sl_error err;
    int pos = -1;

    *rc = a ? 0 : -ENOMEM;
    if (a && text && sl_array_parse(text, a, &err) == 0)
        for (int k = 0; k < a->n && pos < 0; k++)
            if (a->index[k] == index)
                pos = k;
    free(a);
    return pos;
}

/* Element 'index' of array 'arr' (ID_INDEX) into *st. */
static int lookup_element(struct lookup *lk, int64_t arr, int32_t index, struct sl_dep_state *st)
{
    struct found head, el = {0};
    int rc, pos;

    if ((rc = find(lk, arr, &head)) < 0 || !head.known || head.array_id != arr)
        goto out;
    if ((pos = element_pos(head.array_text, index, &rc)) < 0 ||
        (rc = find(lk, arr + pos, &el)) < 0)
        goto out;
    if (el.known && el.array_id == arr && el.array_index == index) {
        st->known = true;
        st->id = arr + pos;
        st->state = el.state;
    }
out:
    json_decref(head.row);
    json_decref(el.row);
    return rc;
}

/* Every element of array 'arr' ('n' of them) into *st: those in memory
 * have not ended (a job leaves the map when it ends); only once none is
 * left are the ended ones read, for the first that failed. */
static int lookup_array(struct lookup *lk, int64_t arr, int n, struct sl_dep_state *st)
{
    int waiting = 0, rc = 0;

    st->known = true;
    st->elements = n;
    for (int k = 0; k < n; k++) {
        struct job *d = sl_imap_get(&lk->e->jobs, arr + k);
        if (d && d->array_id == arr && !sl_job_state_final(d->state) && !waiting++) {
            st->waiting_id = d->id;
            st->waiting_state = d->state;
        }
    }
    st->ended = n - waiting;
    for (int k = 0; k < n && !waiting && !st->failed_id && rc == 0; k++) {
        struct found el;
        if ((rc = find(lk, arr + k, &el)) == 0 && el.known && el.array_id == arr &&
            el.state != SL_JOB_SUCCEEDED) {
            st->failed_id = arr + k;
            st->failed_index = el.array_index;
            st->failed_state = el.state;
        }
        json_decref(el.row);
    }
    return rc;
}

/* What item 'it' names (src/core/depend.h, sl_dep_lookup_fn). */
static int lookup_item(void *arg, const struct sl_dep_item *it, struct sl_dep_state *st)
{
    struct lookup *lk = arg;
    struct found f;
    int rc;

    if (it->index >= 0)
        return lookup_element(lk, it->id, it->index, st);
    if ((rc = find(lk, it->id, &f)) == 0 && f.known) {
        if (f.array_id == it->id && f.array_count > 0) {
            rc = lookup_array(lk, it->id, f.array_count, st);
        } else {
            st->known = true;
            st->id = it->id;
            st->state = f.state;
        }
    }
    json_decref(f.row);
    return rc;
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
    rc = sl_depend_eval(d, lookup_item, &lk, 0, SL_JOB_PENDING, why, sizeof(why));
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

static void throttle_text(const struct job *j, char *buf, size_t size)
{
    snprintf(buf, size, "array throttle: at most %d elements of array %lld run at once (%%%d)",
             j->array_limit, (long long)j->array_id, j->array_limit);
}

/* Tell the scheduler what 'j' waits for: its dependency ('dep_why') while
 * it has one, else its array's limit while held there, else nothing. */
static int sched_gate(struct sl_engine *e, struct job *j, const char *dep_why)
{
    char text[160];

    if (j->dep)
        return sched_wait(e, j, dep_why);
    if (j->array_held) {
        throttle_text(j, text, sizeof(text));
        return sched_wait(e, j, text);
    }
    return sched_wait(e, j, NULL);
}

/* Judge 'j' now: 0 (met, or waits), 1 (can never be met: *why says so),
 * or a negated errno. */
static int judge(struct sl_engine *e, struct job *j, char *why, size_t size)
{
    struct lookup lk = {.e = e, .who = NULL};
    enum sl_job_state sst = SL_JOB_PENDING;
    int64_t single = has_singleton(j->dep) ? singleton_of(e, j, &sst) : 0;
    int v = sl_depend_eval(j->dep, lookup_item, &lk, single, sst, why, size);

    if (v < 0)
        return v;
    if (v == SL_DEP_MET) {
        free(j->dep);
        j->dep = NULL;
        e->ndepwait--;
        e->sched_full = true;
        return sched_gate(e, j, NULL);
    }
    if (v == SL_DEP_WAIT)
        return sched_gate(e, j, why);
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
    if ((rc = sched_gate(e, j, "waiting for dependency")) < 0)
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
        /* for good: what it names has ended, or does not exist */
        snprintf(text, sizeof(text), "DependencyNeverSatisfied: %s", why);
        sched_gate(e, j, text);
        j->dep_never = true;
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
    j->array_held = true;
    /* one waiting for its dependency keeps that reason */
    if (!j->dep && sched_gate(e, j, NULL) < 0)
        j->array_held = false;
    else
        e->narray_held++;
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
            /* one still waiting for its dependency keeps that reason */
            if (active >= held[i]->array_limit ||
                (!held[i]->dep && sched_wait(e, held[i], NULL) < 0))
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
            if (((struct job *)val)->dep && !((struct job *)val)->dep_never &&
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
