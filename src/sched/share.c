/*
 * share.c - usage, its decayed history and fair shares (weighted dominant
 * resource share), and charging a running job to its queue and user.
 *
 * A share is (current usage + decayed history) over the queue's nominal
 * quota (the cluster's capacity where none is set), the largest of CPU,
 * memory and model-weighted GPU, divided by the queue's weight. History
 * decays exponentially with the configured half-life.
 *
 * Invariant: a queue's or user's history is brought up to 'now' before
 * its usage changes (charge), so that history integrates the usage held
 * over each interval.
 */
#include "sched_int.h"

#include <math.h>
#include <string.h>

static const double LN2 = 0.69314718055994530942;

/* A preemptor's claim on its queue's nominal quota, from the moment it
 * is granted victims until it starts (or gives up): two preemptors of one
 * queue, each within nominal alone, must not both count on the same room,
 * or the queue goes over nominal when they start and is reclaimed from. */
void sl_sch_claim(struct sl_sched *s, struct job *j, bool on)
{
    struct queue *q = &s->queues[j->queue];
    int64_t req[NDIMS];

    if ((bool)j->claimed == on)
        return;
    job_request(j, req);
    for (int d = 0; d < NDIMS; d++)
        q->claimed[d] += on ? req[d] : -req[d];
    j->claimed = on;
}

/* What a running job holds, per dimension (models from its places). */
static void job_charge(const struct sl_sched *s, const struct job *j,
                       int64_t ch[NDIMS])
{
    job_request(j, ch);
    for (int t = 0; t < j->tasks; t++) {
        const struct sl_sched_task_place *p = &j->places[t];
        const struct cl_node *n = &s->cl.nodes[p->node];
        for (int g = 0; g < p->ngpus; g++)
            ch[SL_DIM_MODEL0 + s->cl.gpu_model[n->gpu0 + p->gpus[g]]] += p->gpu_milli;
    }
}

/* The fair-share view of a usage vector: CPU, memory, weighted GPU. */
static void share_vec(const struct sl_sched *s, const int64_t *a, const int64_t *b,
                      double out[NSHARE])
{
    out[0] = (double)a[SL_DIM_CPU] + (b ? (double)b[SL_DIM_CPU] : 0);
    out[1] = (double)a[SL_DIM_MEM] + (b ? (double)b[SL_DIM_MEM] : 0);
    out[2] = 0;
    for (int m = 0; m < s->cl.nmodels; m++)
        out[2] += ((double)a[SL_DIM_MODEL0 + m] + (b ? (double)b[SL_DIM_MODEL0 + m] : 0)) *
                  s->model_weight[m];
}

/* History brought to 'now' under the allocation 'cur' (held since h->t_ms). */
static void hist_advance(const struct sl_sched *s, const struct hist *h,
                         const double cur[NSHARE], int64_t now, double out[NSHARE])
{
    double tau = (double)s->cfg.half_life_ms / LN2, f;

    if (s->cfg.half_life_ms <= 0) {
        for (int d = 0; d < NSHARE; d++)
            out[d] = 0;
        return;
    }
    f = now > h->t_ms ? exp(-(double)(now - h->t_ms) / tau) : 1.0;
    for (int d = 0; d < NSHARE; d++)
        out[d] = cur[d] + (h->h[d] - cur[d]) * f;
}

/* Denominators of a queue's shares: its nominal quota where set, else the
 * cluster's capacity. */
static void share_denoms(const struct sl_sched *s, const struct queue *q,
                         double den[NSHARE])
{
    double capw = 0, nomw = 0;
    bool per_model = false;

    for (int m = 0; m < s->cl.nmodels; m++) {
        capw += (double)s->cap[SL_DIM_MODEL0 + m] * s->model_weight[m];
        if (q->nominal.v[SL_DIM_MODEL0 + m] >= 0) {
            per_model = true;
            nomw += (double)q->nominal.v[SL_DIM_MODEL0 + m] * s->model_weight[m];
        }
    }
    den[0] = q->nominal.v[SL_DIM_CPU] > 0 ? (double)q->nominal.v[SL_DIM_CPU]
                                          : (double)s->cap[SL_DIM_CPU];
    den[1] = q->nominal.v[SL_DIM_MEM] > 0 ? (double)q->nominal.v[SL_DIM_MEM]
                                          : (double)s->cap[SL_DIM_MEM];
    if (q->nominal.v[SL_DIM_GPU] > 0 && s->cap[SL_DIM_GPU] > 0)
        den[2] = (double)q->nominal.v[SL_DIM_GPU] * capw / (double)s->cap[SL_DIM_GPU];
    else if (per_model && nomw > 0)
        den[2] = nomw;
    else
        den[2] = capw;
}

static double dominant(const double use[NSHARE], const double den[NSHARE], double w)
{
    double best = 0;

    for (int d = 0; d < NSHARE; d++)
        if (den[d] > 0 && use[d] / (w * den[d]) > best)
            best = use[d] / (w * den[d]);
    return best;
}

double sl_sch_queue_share(const struct sl_sched *s, const struct queue *q,
                          int64_t now_ms)
{
    double cur[NSHARE], h[NSHARE], den[NSHARE], use[NSHARE];

    share_vec(s, q->used, q->opp, cur);
    hist_advance(s, &q->hist, cur, now_ms, h);
    share_denoms(s, q, den);
    for (int d = 0; d < NSHARE; d++)
        use[d] = cur[d] + h[d];
    return dominant(use, den, q->weight);
}

double sl_sch_user_share(const struct sl_sched *s, const struct qu *u, int64_t now_ms)
{
    const struct queue *q = &s->queues[u->queue];
    double cur[NSHARE], h[NSHARE], den[NSHARE], use[NSHARE];

    share_vec(s, u->used, NULL, cur);
    hist_advance(s, &u->hist, cur, now_ms, h);
    share_denoms(s, q, den);
    for (int d = 0; d < NSHARE; d++)
        use[d] = cur[d] + h[d];
    return dominant(use, den, 1.0);
}

/* Bring a queue's and a user's history up to 'now' before their usage
 * changes. */
static void hist_touch(struct sl_sched *s, struct queue *q, struct qu *u, int64_t now)
{
    double cur[NSHARE];

    share_vec(s, q->used, q->opp, cur);
    hist_advance(s, &q->hist, cur, now, q->hist.h);
    q->hist.t_ms = now;
    share_vec(s, u->used, NULL, cur);
    hist_advance(s, &u->hist, cur, now, u->hist.h);
    u->hist.t_ms = now;
}

/* Add (sign 1) or remove (-1) a running job's charge, without history. */
void sl_sch_charge_raw(struct sl_sched *s, const struct job *j, int sign)
{
    struct queue *q = &s->queues[j->queue];
    struct qu *u = &s->qus[j->qu];
    int64_t ch[NDIMS];

    job_charge(s, j, ch);
    u->share_pass = 0;
    if (j->opportunistic)
        s->nrun_opp += sign;
    for (int d = 0; d < SL_DIM_MODEL0 + s->cl.nmodels; d++) { /* the rest are 0 */
        if (j->opportunistic) {
            q->opp[d] += sign * ch[d];
        } else {
            q->used[d] += sign * ch[d];
            u->used[d] += sign * ch[d];
        }
    }
}

void sl_sch_charge(struct sl_sched *s, struct job *j, int sign, int64_t now)
{
    hist_touch(s, &s->queues[j->queue], &s->qus[j->qu], now);
    sl_sch_charge_raw(s, j, sign);
}
