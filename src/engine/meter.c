/*
 * meter.c - metering glue: ledger intervals, budgets (use, thresholds,
 * demotion), idle-but-allocated detection, the meter tick, and loading
 * the meter's state at start.
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

/* The ledger row of task 't' of Running job 'j' (open, from its start).
 * Node name and GPU model are copied into 'node'/'model'; gpus into
 * 'gpus' ("0;1"). */
static void usage_row(struct sl_engine *e, const struct job *j, int t,
                      struct sl_usage_row *r, char node[64], char model[48],
                      char gpus[128])
{
    const struct task *tk = &j->tasks[t];
    struct sl_sched_node_view nv;
    size_t o = 0;

    memset(r, 0, sizeof(*r));
    node[0] = model[0] = gpus[0] = '\0';
    pthread_mutex_lock(&e->mu);
    if (sl_sched_node_view(e->sched, tk->node, &nv) == 0) {
        sl_strlcpy(node, nv.name, 64);
        if (tk->ngpus > 0 && tk->gpus[0] >= 0 && tk->gpus[0] < nv.ngpus)
            sl_strlcpy(model, sl_sched_model_name(e->sched, nv.gpu_model[tk->gpus[0]]),
                       48);
    }
    pthread_mutex_unlock(&e->mu);
    for (int g = 0; g < tk->ngpus && o + 8 < 128; g++)
        o += (size_t)snprintf(gpus + o, 128 - o, g ? ";%d" : "%d", tk->gpus[g]);
    r->job_id = j->id;
    r->attempt = j->attempt;
    r->task = t;
    r->team = j->team;
    r->project = j->project ? j->project : "";
    r->user = j->user;
    r->queue = j->queue;
    r->node = node;
    r->gpu_model = model;
    r->gpus = gpus;
    r->ngpus = tk->ngpus;
    r->gpu_milli = tk->ngpus ? tk->gpu_milli : 0;
    r->cpu_milli = j->spec->cpu_milli;
    r->mem_bytes = j->spec->mem_bytes;
    r->start_ms = j->started_ms;
}

/* A budget's measure of figures 'f'. */
static double budget_measure(const struct sl_budget *b, const struct sl_usage_fig *f)
{
    return b->unit == SL_BUDGET_GPU_HOURS ? f->gpu_hours
           : b->unit == SL_BUDGET_CU      ? f->cu
                                          : f->cost;
}

double sl_eng_budget_used(const struct budget *b, int64_t now)
{
    double used = b->closed + b->rsum * (double)now - b->rstart;
    return used > 0 ? used : 0;
}

/* Add (sign 1) or take out (-1) Running job 'j''s rates in its team's
 * budgets. */
static void budgets_running(struct sl_engine *e, const struct job *j, int sign)
{
    for (int i = 0; i < e->nbudgets; i++) {
        struct budget *b = &e->budgets[i];
        double rate = j->rate[b->b.unit];
        int64_t from = j->started_ms > b->period_start ? j->started_ms : b->period_start;
        if (strcmp(b->b.team, j->team) != 0)
            continue;
        b->rsum += sign * rate;
        b->rstart += sign * rate * (double)from;
    }
}

/* The estimate rates of Running job 'j' under the Pricing in force: its
 * figures over one hour of running, per ms. */
static void job_rates(struct sl_engine *e, struct job *j)
{
    double rate[3] = {0, 0, 0}, kwh = 0;

    for (int t = 0; j->tasks && t < j->spec->tasks; t++) {
        struct sl_usage_row r;
        struct sl_usage_fig f;
        char node[64], model[48], gpus[128];
        usage_row(e, j, t, &r, node, model, gpus);
        r.start_ms = 0;
        r.end_ms = 3600000;
        sl_usage_figures(&e->pricing, &r, 0, 3600000, 3600000, NULL, 0, &f);
        rate[SL_BUDGET_GPU_HOURS] += f.gpu_hours / 3600000.0;
        rate[SL_BUDGET_CU] += f.cu / 3600000.0;
        rate[SL_BUDGET_COST] += f.cost / 3600000.0;
        kwh += f.energy_kwh / 3600000.0;
    }
    pthread_mutex_lock(&e->mu);
    memcpy(j->rate, rate, sizeof(rate));
    j->rate_kwh = kwh;
    pthread_mutex_unlock(&e->mu);
}

/* The monitor's readings of task 'tk' at wall time 'at': its GPUs' energy,
 * each weighted by the task's share of it, their busy seconds summed, and
 * the CPU packages' energy. */
static void task_read(struct sl_engine *e, const struct task *tk, int64_t at,
                      struct task_reading *out)
{
    memset(out, 0, sizeof(*out));
    const struct sl_node_info *node = &e->nodes.nodes[tk->node];

    out->energy_ok = out->util_ok = tk->ngpus > 0;
    for (int g = 0; g < tk->ngpus; g++) {
        struct sl_gpu_meter m;
        int idx = tk->gpus[g];
        if (idx < 0 || idx >= node->ngpus ||
            !sl_gpumon_gpu(e->mon, node->gpus[idx].index, at, &m)) {
            out->energy_ok = out->util_ok = false;
            break;
        }
        out->energy_ok &= m.energy_ok;
        out->util_ok &= m.util_ok;
        out->energy_j += m.energy_j * tk->gpu_milli / 1000.0;
        out->busy_s += m.busy_s;
    }
    out->cpu_ok = sl_gpumon_cpu(e->mon, at, &out->cpu_j);
}

bool sl_eng_node_metered(const struct sl_engine *e, int node)
{
    return e->mon && e->caps.runs_commands && node >= 0 && node < e->nodes.n &&
           e->nodes.nodes[node].devices_here;
}

int sl_eng_ledger_open(struct sl_engine *e, struct job *j)
{
    int rc = 0;

    pthread_mutex_lock(&e->mu);
    j->idle_since_ms = j->idle_last_ms = j->idle_ms = 0;
    j->idle_counting = j->idle_flagged = false;
    pthread_mutex_unlock(&e->mu);
    for (int t = 0; t < j->spec->tasks && rc == 0; t++) {
        struct sl_usage_row r;
        struct task *tk = &j->tasks[t];
        char node[64], model[48], gpus[128];
        if ((tk->metered = sl_eng_node_metered(e, tk->node)))
            task_read(e, tk, j->started_ms, &tk->m0);
        usage_row(e, j, t, &r, node, model, gpus);
        rc = sl_store_usage_open(e->st, &r);
    }
    return rc;
}

/* Fill row 'r' of task 'tk' (ending at r->end_ms) with what its meters
 * measured since the start: energy, utilisation, its share of the CPU
 * packages' energy; and the job's idle time. */
static void ledger_measured(struct sl_engine *e, const struct job *j, const struct task *tk,
                            struct sl_usage_row *r)
{
    struct task_reading m1;
    double secs = (double)(r->end_ms - r->start_ms) / 1000.0;
    int64_t node_cpu_milli = e->nodes.nodes[tk->node].cpu_milli;

    r->idle = j->idle_flagged;
    r->idle_ms = j->idle_ms;
    if (!tk->metered)
        return;
    task_read(e, tk, r->end_ms, &m1);
    if ((r->gpu_energy_measured = tk->m0.energy_ok && m1.energy_ok))
        r->gpu_energy_j = m1.energy_j > tk->m0.energy_j ? m1.energy_j - tk->m0.energy_j : 0;
    if ((r->has_util = tk->m0.util_ok && m1.util_ok && secs > 0)) {
        double u = (m1.busy_s - tk->m0.busy_s) / (tk->ngpus * secs);
        r->util = u < 0 ? 0 : u > 1 ? 1 : u;
    }
    if ((r->cpu_energy_measured = tk->m0.cpu_ok && m1.cpu_ok && node_cpu_milli > 0)) {
        double d = m1.cpu_j > tk->m0.cpu_j ? m1.cpu_j - tk->m0.cpu_j : 0;
        r->cpu_energy_j = d * (double)r->cpu_milli / (double)node_cpu_milli;
    }
}

void sl_eng_ledger_running(struct sl_engine *e, struct job *j)
{
    job_rates(e, j);
    pthread_mutex_lock(&e->mu);
    budgets_running(e, j, 1);
    pthread_mutex_unlock(&e->mu);
}

/* The interval task 'tk' of 'j' ran, the job ending at 'end': from the
 * decision to 'end', narrowed to the times its executor reports (Slurm
 * counts whole seconds, so its start may read before the decision). */
static void task_span(const struct job *j, const struct task *tk, int64_t end, int64_t *from,
                      int64_t *to)
{
    *from = j->started_ms;
    *to = end > *from ? end : *from;
    if (tk->ran_from_ms > *from && tk->ran_from_ms <= *to)
        *from = tk->ran_from_ms;
    if (tk->ran_to_ms > 0 && tk->ran_to_ms < *to)
        *to = tk->ran_to_ms > *from ? tk->ran_to_ms : *from;
}

void sl_eng_ledger_close(struct sl_engine *e, struct job *j, int64_t end)
{
    struct team *tm = sl_eng_team_find(e, j->team);
    double ms = end > j->started_ms ? (double)(end - j->started_ms) : 0;

    pthread_mutex_lock(&e->mu);
    budgets_running(e, j, -1);
    if (tm) {
        /* the counters of /metrics: at the rates from the decision, so
         * that they only grow (the ledger below narrows each interval to
         * when its task ran) */
        struct team_use *u = &e->team_use[tm - e->teams];
        u->gpu_hours += j->rate[SL_BUDGET_GPU_HOURS] * ms;
        u->cu += j->rate[SL_BUDGET_CU] * ms;
        u->cost += j->rate[SL_BUDGET_COST] * ms;
        u->kwh += j->rate_kwh * ms;
    }
    pthread_mutex_unlock(&e->mu);
    for (int t = 0; j->tasks && t < j->spec->tasks; t++) {
        struct sl_usage_row r;
        char node[64], model[48], gpus[128];
        usage_row(e, j, t, &r, node, model, gpus);
        task_span(j, &j->tasks[t], end, &r.start_ms, &r.end_ms);
        ledger_measured(e, j, &j->tasks[t], &r);
        if (sl_store_usage_close(e->st, &r) < 0) {
            sl_error("msg=\"store: cannot close a usage interval; the group fails\" "
                     "job=%lld", (long long)j->id);
            e->write_failed = true;
        }
        for (int i = 0; i < e->nbudgets; i++) {
            struct budget *b = &e->budgets[i];
            struct sl_usage_fig f;
            if (strcmp(b->b.team, j->team) != 0)
                continue;
            sl_usage_figures(&e->pricing, &r, b->period_start, INT64_MAX, end, NULL, 0,
                             &f);
            pthread_mutex_lock(&e->mu);
            b->closed += budget_measure(&b->b, &f);
            pthread_mutex_unlock(&e->mu);
        }
    }
    pthread_mutex_lock(&e->mu);
    memset(j->rate, 0, sizeof(j->rate));
    j->rate_kwh = 0;
    pthread_mutex_unlock(&e->mu);
}

struct budget_scan {
    struct sl_engine *e;
    struct budget *b;
    int64_t now;
};

static int budget_scan_row(void *arg, const struct sl_usage_row *r)
{
    struct budget_scan *bs = arg;
    struct sl_usage_fig f;

    if (!r->end_ms)
        return 0; /* running: counted by its rate */
    sl_usage_figures(&bs->e->pricing, r, bs->b->period_start, bs->now, bs->now, NULL, 0,
                     &f);
    bs->b->closed += budget_measure(&bs->b->b, &f);
    return 0;
}

/* Recount budget 'b' for the period holding 'now': closed intervals from
 * the ledger, running jobs from their rates. */
static void budget_recount(struct sl_engine *e, struct budget *b, int64_t now)
{
    struct budget nb = *b;
    struct budget_scan bs = {e, &nb, now};
    int64_t ps = sl_period_start(b->b.period, now);

    if (ps != nb.period_start)
        nb.warned = 0;
    nb.period_start = ps;
    nb.closed = nb.rsum = nb.rstart = 0;
    if (sl_store_usage_scan(e->st, ps, now + 1, nb.b.team, 0, budget_scan_row, &bs) < 0)
        sl_warn("msg=\"cannot read the ledger for a budget\" budget=%s", nb.b.name);
    for (size_t i = 0; i < e->nrun; i++) {
        const struct job *j = e->run[i];
        int64_t from = j->started_ms > ps ? j->started_ms : ps;
        if (strcmp(j->team, nb.b.team) != 0)
            continue;
        nb.rsum += j->rate[nb.b.unit];
        nb.rstart += j->rate[nb.b.unit] * (double)from;
    }
    pthread_mutex_lock(&e->mu);
    *b = nb;
    pthread_mutex_unlock(&e->mu);
}

void sl_eng_budget_set(struct sl_engine *e, const struct sl_budget *nb)
{
    struct budget *b = NULL;

    for (int i = 0; i < e->nbudgets && !b; i++)
        if (strcmp(e->budgets[i].b.name, nb->name) == 0)
            b = &e->budgets[i];
    if (!b && e->nbudgets < MAX_BUDGETS) {
        b = &e->budgets[e->nbudgets++];
        memset(b, 0, sizeof(*b));
        b->period_start = -1;
    }
    if (!b)
        return;
    if (b->b.period != nb->period || b->b.unit != nb->unit || b->b.limit != nb->limit ||
        strcmp(b->b.team, nb->team) != 0)
        b->warned = 0;
    b->b = *nb;
}

void sl_eng_meter_recount(struct sl_engine *e)
{
    int64_t now = sl_eng_now_ms(e);

    for (size_t i = 0; i < e->nrun; i++)
        job_rates(e, e->run[i]);
    for (int i = 0; i < e->nbudgets; i++)
        budget_recount(e, &e->budgets[i], now);
}

/* Flag Running job 'j' idle-but-allocated at 'now': an "idle" event, or
 * for an interactive job an "idle_session" event (once per attempt).
 * Returns 0, or a negated errno when the event could not be written. */
static int idle_flag(struct sl_engine *e, struct job *j, int64_t now)
{
    char msg[256], dur[48];
    int rc;

    snprintf(msg, sizeof(msg),
             "%s: its GPUs have been under %.0f %% utilisation for %s",
             j->spec->interactive ? "idle interactive session" : "idle but allocated",
             e->pricing.idle_util * 100,
             sl_fmt_duration((now - j->idle_since_ms) / 1000 * 1000, dur, sizeof(dur)));
    if ((rc = sl_store_event_add(e->st, j->id, now,
                                 j->spec->interactive ? "idle_session" : "idle", NULL, NULL,
                                 msg)) < 0)
        return rc;
    j->idle_flagged = true;
    sl_info("msg=\"job idle but allocated\" job=%lld team=%s interactive=%d idle_ms=%lld",
            (long long)j->id, j->team, j->spec->interactive,
            (long long)(now - j->idle_since_ms));
    return 0;
}

/* An idle interactive session whose GPUs have been under the threshold
 * for --interactive-idle-timeout is ended as a cancel is: recorded
 * (intent, event, audit), its terminal hung up (SIGHUP, as sshd does),
 * SIGKILL after the cancel grace. */
static void session_idle_end(struct sl_engine *e, struct job *j, int64_t now)
{
    int64_t limit = e->cfg.interactive_idle_timeout_ms;
    char dur[48], since[40], obj[32];

    if (!j->spec->interactive || limit <= 0 || now - j->idle_since_ms < limit ||
        j->cancel_requested || j->preempting || j->timed_out)
        return;
    sl_fmt_duration(limit, dur, sizeof(dur));
    j->cancel_requested = j->idle_ended = true;
    j->intent_at_ms = now;
    sl_eng_job_msg(e, j,
                   "interactive session idle for %s: ended (SIGHUP, then SIGKILL after %llds)",
                   dur, (long long)(e->cfg.cancel_grace_ms / 1000));
    if (sl_eng_job_intent_write(e, j, "cancel") < 0) {
        sl_error("msg=\"cannot record the end of an idle session; the group fails\" job=%lld",
                 (long long)j->id);
        e->write_failed = true;
        return;
    }
    snprintf(obj, sizeof(obj), "job:%lld", (long long)j->id);
    sl_eng_audit_add(e, "meter", "job.cancel", obj, true,
                     json_pack("{s:s, s:s, s:s, s:s, s:s}", "team", j->team, "user", j->user,
                               "reason", "interactive-idle-timeout", "timeout", dur,
                               "idle_since",
                               sl_time_rfc3339(j->idle_since_ms, since, sizeof(since))));
    sl_warn("msg=\"idle interactive session ended\" job=%lld team=%s user=%s timeout=%s",
            (long long)j->id, j->team, j->user, dur);
    sl_eng_job_signal_all(e, j, SIGHUP);
    j->kill_at_ms = sl_eng_mono_ms(e) + e->cfg.cancel_grace_ms;
    sl_eng_job_timer(e, j);
}

/* Whether every metered GPU of Running job 'j' sampled under the idle
 * threshold last; *any: whether it has a metered GPU at all. */
static bool gpus_idle(struct sl_engine *e, const struct job *j, bool *any)
{
    *any = false;
    for (int t = 0; t < j->spec->tasks; t++) {
        const struct task *tk = &j->tasks[t];
        const struct sl_node_info *node = &e->nodes.nodes[tk->node];
        for (int g = 0; tk->metered && g < tk->ngpus; g++) {
            struct sl_gpu_sample smp;
            int idx = tk->gpus[g];
            *any = true;
            if (idx < 0 || idx >= node->ngpus ||
                !sl_gpumon_last(e->mon, node->gpus[idx].index, &smp) || !smp.has_util ||
                smp.util >= e->pricing.idle_util)
                return false;
        }
    }
    return *any;
}

/* Idle-but-allocated: a Running job all of whose metered GPUs have sampled
 * under the Pricing's idle threshold for its idle.after is flagged (its
 * intervals, and an event once per attempt); the time under the threshold
 * in such stretches is its idle_ms. An interactive job so is an idle
 * session, which --interactive-idle-timeout ends. The fields readers see
 * (sl_engine_job_live) change under e->mu. In the open transaction. */
static void meter_idle(struct sl_engine *e, int64_t now)
{
    for (size_t i = 0; e->mon && i < e->nrun; i++) {
        struct job *j = e->run[i];
        bool any, idle = gpus_idle(e, j, &any);

        if (!any)
            continue;
        pthread_mutex_lock(&e->mu);
        if (!idle) {
            j->idle_since_ms = 0;
            j->idle_counting = false;
        } else if (!j->idle_since_ms || now < j->idle_since_ms) {
            j->idle_since_ms = j->idle_last_ms = now;
        }
        if (idle && now - j->idle_since_ms < e->pricing.idle_after_ms) {
            j->idle_last_ms = now;
            idle = false;
        } else if (idle) {
            int64_t from = j->idle_counting ? j->idle_last_ms : j->idle_since_ms;
            j->idle_ms += now > from ? now - from : 0;
            j->idle_counting = true;
            j->idle_last_ms = now;
        }
        pthread_mutex_unlock(&e->mu);
        if (!idle)
            continue;
        if (sl_store_usage_mark_idle(e->st, j->id, j->idle_ms) < 0) {
            e->write_failed = true;
            return;
        }
        if (!j->idle_flagged && idle_flag(e, j, now) < 0) {
            e->write_failed = true;
            return;
        }
        session_idle_end(e, j, now);
    }
}

void sl_eng_meter_tick(struct sl_engine *e)
{
    int64_t now = sl_eng_now_ms(e);

    meter_idle(e, now);
    if (e->write_failed)
        return;

    for (int i = 0; i < e->nbudgets; i++) {
        struct budget *b = &e->budgets[i];
        double used, pct;
        if (sl_period_start(b->b.period, now) != b->period_start)
            budget_recount(e, b, now);
        used = sl_eng_budget_used(b, now);
        pct = used / b->b.limit * 100;
        for (int k = 0; k < 2; k++) {
            static const int thresholds[] = {80, 100};
            unsigned bit = 1u << k;
            int added;
            if (pct < thresholds[k] || (b->warned & bit))
                continue;
            if ((added = sl_store_budget_event_add(e->st, b->b.name, b->period_start,
                                                   thresholds[k], now, used,
                                                   b->b.limit)) < 0) {
                e->write_failed = true;
                return;
            }
            pthread_mutex_lock(&e->mu);
            b->warned |= bit;
            pthread_mutex_unlock(&e->mu);
            if (added) {
                char obj[96];
                sl_warn("msg=\"budget %s at %d %%\" budget=%s team=%s used=%.6f limit=%.6f "
                    "unit=%s action=%s",
                    b->b.name, thresholds[k], b->b.name, b->b.team, used, b->b.limit,
                    sl_budget_unit_name(b->b.unit),
                    thresholds[k] == 100 ? sl_budget_action_name(b->b.action) : "none");
                snprintf(obj, sizeof(obj), "budget:%s", b->b.name);
                sl_eng_audit_add(e, "meter", thresholds[k] == 100 ? "budget.exhausted" : "budget.warn",
                          obj, true,
                          json_pack("{s:s, s:i, s:f, s:f, s:s, s:s}", "team", b->b.team,
                                    "threshold", thresholds[k], "used", used, "limit",
                                    b->b.limit, "unit", sl_budget_unit_name(b->b.unit),
                                    "action", thresholds[k] == 100
                                                  ? sl_budget_action_name(b->b.action)
                                                  : "none"));
            }
        }
    }
}

const struct budget *sl_eng_budget_spent(struct sl_engine *e, const char *team,
                                         int64_t now)
{
    const struct budget *found = NULL;

    for (int i = 0; i < e->nbudgets; i++) {
        const struct budget *b = &e->budgets[i];
        if (strcmp(b->b.team, team) != 0 || b->period_start != sl_period_start(b->b.period, now) ||
            sl_eng_budget_used(b, now) < b->b.limit)
            continue;
        if (!found || b->b.action == SL_BUDGET_BLOCK)
            found = b;
        if (b->b.action == SL_BUDGET_BLOCK)
            break;
    }
    return found;
}

struct pclass *sl_eng_demote_class(struct sl_engine *e)
{
    struct pclass *low = sl_eng_pclass_find(e, "best-effort");

    for (int i = 0; !sl_eng_pclass_find(e, "best-effort") && i < e->npclasses; i++)
        if (e->pclasses[i].preemptible && (!low || e->pclasses[i].value < low->value))
            low = &e->pclasses[i];
    return low;
}

void sl_eng_budget_text(struct sl_engine *e, const struct budget *b, int64_t now,
                        char *buf, size_t size)
{
    char from[40], until[40];

    sl_time_rfc3339(b->period_start, from, sizeof(from));
    sl_time_rfc3339(sl_period_next(b->b.period, b->period_start), until, sizeof(until));
    from[10] = until[10] = '\0';
    snprintf(buf, size,
             "team '%s' has used %.2f of the %.2f %s of its budget '%s' for the %s "
             "from %s (it resets on %s)",
             b->b.team, sl_eng_budget_used(b, now), b->b.limit,
             b->b.unit == SL_BUDGET_GPU_HOURS ? "GPU-hours"
             : b->b.unit == SL_BUDGET_CU      ? "CU"
                                              : e->pricing.currency,
             b->b.name, sl_budget_period_name(b->b.period), from, until);
}

static int ld_budget(void *arg, const char *name, const char *spec_json)
{
    struct sl_engine *e = arg;
    struct sl_manifest *m = NULL;

    if (sl_eng_manifest_from_store("Budget", name, spec_json, &m) == 0) {
        sl_eng_budget_set(e, &m->u.budget);
        free(m);
    }
    return 0;
}

struct orphans {
    struct sl_engine *e;
    struct sl_usage_row *rows;    /* strings not kept: only ids are used */
    size_t n, cap;
};

static int ld_orphan(void *arg, const struct sl_usage_row *r)
{
    struct orphans *o = arg;
    const struct job *j = sl_imap_get(&o->e->jobs, r->job_id);
    struct sl_usage_row c;

    if (j && j->state == SL_JOB_RUNNING && j->attempt == r->attempt)
        return 0;
    memset(&c, 0, sizeof(c));
    c.job_id = r->job_id;
    c.attempt = r->attempt;
    c.task = r->task;
    c.start_ms = r->start_ms;
    return sl_eng_vec_push((void **)&o->rows, &o->n, &o->cap, sizeof(c), &c);
}

int sl_eng_meter_load(struct sl_engine *e)
{
    char *text = malloc(PRICING_TEXT_MAX);
    int rc;

    if (!text)
        return -ENOMEM;
    if (sl_store_meta_get(e->st, "pricing", text, PRICING_TEXT_MAX) == 0) {
        struct sl_manifest *m = NULL;
        if (sl_eng_manifest_from_store("Pricing", "default", text, &m) == 0) {
            e->pricing = m->u.pricing;
            free(m);
        }
    }
    free(text);
    if ((rc = sl_store_budgets_load(e->st, ld_budget, e)) < 0)
        return rc;
    if ((rc = sl_store_begin(e->st)) < 0)
        return rc;
    {
        /* Open intervals whose job does not run: it ended while sluiced
         * was down, or could not be re-adopted. They are counted up to now,
         * as the resources were held as far as anyone could tell. */
        struct orphans o = {e, NULL, 0, 0};
        int64_t now = sl_eng_now_ms(e);
        rc = sl_store_usage_scan(e->st, INT64_MAX - 1, INT64_MAX, NULL, 0, ld_orphan, &o);
        for (size_t i = 0; rc == 0 && i < o.n; i++) {
            o.rows[i].end_ms = now > o.rows[i].start_ms ? now : o.rows[i].start_ms;
            sl_warn("msg=\"closed the usage interval of a job that no longer runs\" "
                    "job=%lld attempt=%d task=%d", (long long)o.rows[i].job_id,
                    o.rows[i].attempt, o.rows[i].task);
            rc = sl_store_usage_close(e->st, &o.rows[i]);
        }
        free(o.rows);
    }
    if (rc < 0) {
        sl_store_rollback(e->st);
        return rc;
    }
    if ((rc = sl_store_commit(e->st, NULL)) < 0)
        return rc;
    sl_eng_meter_recount(e);
    return 0;
}

void sl_engine_pricing(struct sl_engine *e, struct sl_pricing *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->pricing;
    pthread_mutex_unlock(&e->mu);
}

int sl_engine_gpus_each(struct sl_engine *e,
                        int (*fn)(void *arg, const char *node, const char *model,
                                  int index),
                        void *arg)
{
    int rc = 0;

    pthread_mutex_lock(&e->mu);
    for (int i = 0; rc == 0 && i < sl_sched_node_count(e->sched); i++) {
        struct sl_sched_node_view nv;
        if (sl_sched_node_view(e->sched, i, &nv) < 0)
            continue;
        for (int g = 0; rc == 0 && g < nv.ngpus; g++)
            rc = fn(arg, nv.name, sl_sched_model_name(e->sched, nv.gpu_model[g]), g);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int64_t sl_engine_meter_since(struct sl_engine *e) { return e->meter_since; }

json_t *sl_engine_budgets_json(struct sl_engine *e, const char *team)
{
    json_t *arr = json_array();
    int64_t now = sl_eng_now_ms(e);

    if (!arr)
        return NULL;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->nbudgets; i++) {
        const struct budget *b = &e->budgets[i];
        char from[40], until[40];
        double used = b->period_start == sl_period_start(b->b.period, now)
                          ? sl_eng_budget_used(b, now)
                          : 0;
        int64_t ps = sl_period_start(b->b.period, now);
        if (team && strcmp(team, b->b.team) != 0)
            continue;
        sl_time_rfc3339(ps, from, sizeof(from));
        sl_time_rfc3339(sl_period_next(b->b.period, ps), until, sizeof(until));
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:s, s:s, s:s, s:b}", "name",
                           b->b.name, "team", b->b.team, "period",
                           sl_budget_period_name(b->b.period), "unit",
                           sl_budget_unit_name(b->b.unit), "limit", b->b.limit, "used",
                           used, "percent", used / b->b.limit * 100, "action",
                           sl_budget_action_name(b->b.action), "period_start", from,
                           "period_end", until, "exceeded", used >= b->b.limit));
    }
    pthread_mutex_unlock(&e->mu);
    return arr;
}
