/*
 * stage.c - staging (sched.h): which pending jobs may wait behind which
 * running ones, on their resources, so that the executor starts them the
 * moment those free. The rule keeps every decision a pass would make:
 * only when one bucket holds all the pending jobs that are not staged (no
 * other queue, user or class could claim the resources), in that
 * bucket's order, behind jobs of the same bucket with the same request.
 * docs/decisions/0010-slurm-staged-successors.md.
 */
#include "sched_int.h"

#include <string.h>

/* The one bucket with pending jobs not staged, or NULL when none or
 * several have. */
static struct bucket *only_bucket(const struct sl_sched *s)
{
    struct bucket *found = NULL;

    if (s->npending - s->nstaged - s->nheld <= 0)
        return NULL;
    for (int q = 0; q < s->nqueues; q++) {
        const struct queue *qq = &s->queues[q];
        if (qq->npending == 0)
            continue;
        for (int b = 0; b < qq->nbuckets; b++) {
            if (!qq->buckets[b]->head)
                continue;
            if (found)
                return NULL;
            found = qq->buckets[b];
        }
    }
    return found;
}

static bool same_request(const struct job *a, const struct job *b)
{
    return a->tasks == 1 && b->tasks == 1 && a->topology == b->topology &&
           a->shape.cpu_milli == b->shape.cpu_milli && a->shape.mem_bytes == b->shape.mem_bytes &&
           a->shape.num_gpu == b->shape.num_gpu && a->shape.gpu_milli == b->shape.gpu_milli &&
           a->shape.models == b->shape.models;
}

/* A running job of 'j''s bucket with j's request and no successor, on a
 * node that takes work; NULL when none. */
static struct job *predecessor(struct sl_sched *s, const struct job *j)
{
    for (int i = 0; i < s->nrun; i++) {
        struct job *r = s->run[i];
        if (r->state == J_RUNNING && !r->successor && r->queue == j->queue &&
            r->user == j->user && r->pclass == j->pclass && same_request(r, j) &&
            s->cl.nodes[r->places[0].node].schedulable)
            return r;
    }
    return NULL;
}

int sl_sched_stage_pick(struct sl_sched *s, int64_t now_ms, struct sl_sched_stage *out,
                        int max)
{
    struct bucket *b = only_bucket(s);
    struct job *j, *next;
    int n = 0;

    if (!b)
        return 0;
    for (j = b->head; j && n < max; j = next) {
        struct job *r;
        next = j->next;
        /* in line, in order: the first that cannot be staged stops it */
        if (j->wait || j->not_before_ms > now_ms || j->claimed || j->nvictims > 0 || j->tasks != 1 ||
            !(r = predecessor(s, j)))
            break;
        sl_sch_bucket_remove(j);
        j->staged_after = r->id;
        r->successor = j->id;
        s->nstaged++;
        out[n].job_id = j->id;
        out[n].after = r->id;
        n++;
    }
    return n;
}

bool sl_sched_stage_contested(const struct sl_sched *s)
{
    const struct job *staged = NULL;

    if (s->nstaged == 0 || s->npending == s->nstaged + s->nheld)
        return false;
    for (int i = 0; i < s->nrun && !staged; i++)
        if (s->run[i]->successor)
            staged = sl_imap_get(&s->jobs, s->run[i]->successor);
    if (!staged)
        return false;
    for (int q = 0; q < s->nqueues; q++) {
        const struct queue *qq = &s->queues[q];
        if (qq->npending == 0)
            continue;
        for (int b = 0; b < qq->nbuckets; b++) {
            const struct bucket *bk = qq->buckets[b];
            if (bk->head && (bk->queue != staged->queue || bk->user != staged->user ||
                             bk->pclass != staged->pclass))
                return true;
        }
    }
    return false;
}
