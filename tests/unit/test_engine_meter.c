/*
 * test_engine_meter.c - the engine's metering (src/engine/meter.c) against
 * its contract in engine_int.h: a job's ledger interval opens when it is
 * placed and closes when it ends, with the GPU time it held; a budget
 * counts closed intervals and running jobs, records its 80 % and 100 %
 * events once per period, blocks (or demotes) the team's new jobs at
 * 100 % and starts again with the next period; a job whose GPUs sit under
 * the Pricing's idle threshold for idle.after is flagged idle-but-
 * allocated, once, with the time it spent so; an interactive job so is
 * an idle session, flagged apart and ended after the interactive idle
 * timeout; its interval's energy is measured where this host's meters see
 * its GPUs.
 *
 * The engine runs the simulated executor on 8 fake H100s, on the
 * harness's clock (engine_harness.h): a job "runs" until the test moves
 * the clock past its sim-duration. For idle detection the GPUs are
 * metered by a GPU monitor of the test's (the stand-in NVML,
 * tests/fakenvml, next to this binary, on the same clock, sampled when the
 * test says), put in the engine before it starts, as sl_eng_meters_open
 * would for a host whose executor runs commands.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/engine/engine_int.h"
#include "../../src/exec/gpumon.h"
#include "engine_harness.h"

#define T_APR1 1775001600000LL /* 2026-04-01T00:00:00Z */

static char tmpdir[64];
static char nvml_state[128], nvml_clock[128];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

/* Move the clock (and the stand-in NVML's, which its energy counter is
 * read at). */
static void at(int64_t ms)
{
    char t[32];

    h_clock_set(ms);
    snprintf(t, sizeof(t), "%lld\n", (long long)ms);
    put(nvml_clock, t);
}

/* The stand-in's 8 GPUs, all at 90 % and 300 W but those of bit mask
 * 'idle', which are at 0 %. */
static void gpus_idle_mask(unsigned idle)
{
    char text[1024];
    size_t o = 0;

    for (int g = 0; g < 8; g++)
        o += (size_t)snprintf(text + o, sizeof(text) - o,
                              "%d 1000 81559 300000 50 energy NVIDIA H100 80GB HBM3\n",
                              idle & (1u << g) ? 0 : 90);
    put(nvml_state, text);
}

/* All busy but GPU 'idle' (-1 = none). */
static void gpus_busy_but(int idle)
{
    gpus_idle_mask(idle < 0 ? 0 : 1u << idle);
}

static int64_t monitor_now(void *arg)
{
    (void)arg;
    return h_now();
}

static int submit_job(struct sl_engine *e, const char *team, int gpus, const char *duration,
                      int64_t *id, struct sl_error *err)
{
    char yaml[512];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: m, team: %s, labels: "
             "{sim-duration: %s}}\nspec: {command: [train], resources: {gpus: %d}}\n",
             team, duration, gpus);
    return h_submit(e, yaml, "admin", "default", "admin", id, err);
}

/* The ledger's intervals of one job, their strings copied here. */
struct rows {
    int n;
    struct sl_usage_row r[4];
    char node[4][64], model[4][48], team[4][64], project[4][64], user[4][64], queue[4][64],
        gpus[4][128];
};

static int row_fn(void *arg, const struct sl_usage_row *r)
{
    struct rows *rs = arg;
    int i = rs->n++;

    if (i >= 4)
        return 0;
    rs->r[i] = *r;
    snprintf(rs->node[i], 64, "%s", r->node);
    snprintf(rs->model[i], 48, "%s", r->gpu_model);
    snprintf(rs->team[i], 64, "%s", r->team);
    snprintf(rs->project[i], 64, "%s", r->project);
    snprintf(rs->user[i], 64, "%s", r->user);
    snprintf(rs->queue[i], 64, "%s", r->queue);
    snprintf(rs->gpus[i], 128, "%s", r->gpus);
    rs->r[i].node = rs->node[i];
    rs->r[i].gpu_model = rs->model[i];
    rs->r[i].team = rs->team[i];
    rs->r[i].project = rs->project[i];
    rs->r[i].user = rs->user[i];
    rs->r[i].queue = rs->queue[i];
    rs->r[i].gpus = rs->gpus[i];
    return 0;
}

/* Fill 'rs' (whose strings the rows then point to) with job 'job''s. */
static void ledger(struct sl_store *rd, int64_t job, struct rows *rs)
{
    memset(rs, 0, sizeof(*rs));
    sl_store_usage_scan(rd, 0, INT64_MAX, NULL, job, row_fn, rs);
}

/* GPU-milliseconds held by an interval. */
static int64_t gpu_ms(const struct sl_usage_row *r)
{
    return (r->end_ms - r->start_ms) * r->ngpus * r->gpu_milli / 1000;
}

/* Budget 'name' as GET /v1/budgets shows it now (a new reference). */
static json_t *budget(struct sl_engine *e, const char *team, const char *name)
{
    json_t *arr = sl_engine_budgets_json(e, team), *b, *found = NULL;
    size_t i;

    json_array_foreach(arr, i, b)
    {
        if (strcmp(json_string_value(json_object_get(b, "name")), name) == 0)
            found = json_incref(b);
    }
    json_decref(arr);
    return found;
}

static double budget_used(struct sl_engine *e, const char *team, const char *name)
{
    json_t *b = budget(e, team, name);
    double used = b ? json_real_value(json_object_get(b, "used")) : -1;

    json_decref(b);
    return used;
}

static bool near(double got, double want, double tol)
{
    if (fabs(got - want) <= tol)
        return true;
    diag("got %.9f, want %.9f", got, want);
    return false;
}

/* The thresholds of the events recorded for 'name', as "80,100". */
static void budget_events(struct sl_store *rd, const char *name, char *buf, size_t size)
{
    int rc = 0;
    json_t *arr = sl_store_budget_events(rd, name, &rc), *ev;
    size_t i, o = 0;

    buf[0] = '\0';
    json_array_foreach(arr, i, ev)
    {
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", o ? "," : "",
                              (long long)json_integer_value(
                                  json_object_get(ev, "threshold_percent")));
    }
    json_decref(arr);
}

/* The GPU (index) of a one-GPU job, from its placement. */
static int job_gpu(struct sl_store *rd, int64_t id)
{
    json_t *j = h_job(rd, id);
    json_t *g = json_array_get(json_object_get(json_array_get(json_object_get(j, "placement"),
                                                               0),
                                               "gpus"),
                               0);
    int gpu = g ? (int)json_integer_value(g) : -1;

    json_decref(j);
    return gpu;
}

static double team_gpu_seconds(struct sl_engine *e, const char *team)
{
    struct sl_engine_metrics m;
    double s = -1;

    if (sl_engine_metrics(e, &m) == 0)
        for (int i = 0; i < m.nteams; i++)
            if (strcmp(m.teams[i].name, team) == 0)
                s = m.teams[i].gpu_seconds;
    sl_engine_metrics_fini(&m);
    return s;
}

static const char *const setup =
    "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: vision}\n---\n"
    "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision}\n"
    "spec: {team: vision, nominal: {gpus: 4}}\n---\n"
    "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: nlp}\n---\n"
    "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: nlp}\n"
    "spec: {team: nlp, nominal: {gpus: 2}}\n---\n"
    "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: research}\n---\n"
    "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: research}\n"
    "spec: {team: research, nominal: {gpus: 2}}\n---\n"
    "apiVersion: sluice/v1\nkind: Pricing\nmetadata: {name: default}\n"
    "spec: {idle: {utilisation: 0.05, after: 10m}}\n---\n"
    "apiVersion: sluice/v1\nkind: Budget\nmetadata: {name: vision-gpu}\n"
    "spec: {team: vision, period: month, gpuHours: 2, action: block}\n---\n"
    "apiVersion: sluice/v1\nkind: Budget\nmetadata: {name: nlp-gpu}\n"
    "spec: {team: nlp, period: month, gpuHours: 0.5, action: demote}\n";

/* Ledger intervals, and a blocking budget through its period. */
static void ledger_and_blocking_budget(struct sl_engine *e, struct sl_store *rd)
{
    struct sl_pricing pricing;
    struct sl_usage_fig fig;
    struct sl_error err;
    struct rows rs;
    json_t *b;
    char state[32], evs[64];
    int64_t a = 0, b2 = 0, c = 0;

    b = budget(e, "vision", "vision-gpu");
    ok(b && json_real_value(json_object_get(b, "used")) == 0 &&
           json_real_value(json_object_get(b, "limit")) == 2 &&
           !json_is_true(json_object_get(b, "exceeded")),
       "a new budget has used none of its 2 GPU-hours");
    is_str(b ? json_string_value(json_object_get(b, "period_start")) : NULL,
           "2026-03-01T00:00:00.000Z", "its period is the calendar month of the clock");
    json_decref(b);

    /* a job of 2 GPUs for 30 minutes */
    is_int(submit_job(e, "vision", 2, "30m", &a, NULL), 201, "a 2-GPU job of team vision");
    h_sync(e);
    is_str(h_job_state(rd, a, state, sizeof(state)), "Running", "is placed");
    ledger(rd, a, &rs);
    is_int(rs.n, 1, "its placement opens one ledger interval (one task)");
    ok(rs.r[0].start_ms == H_T0 && rs.r[0].end_ms == 0,
       "open (no end), from the time it was placed");
    ok(rs.r[0].ngpus == 2 && rs.r[0].gpu_milli == 1000 && strlen(rs.gpus[0]) == 3 &&
           strchr(rs.gpus[0], ';'),
       "holding its 2 whole GPUs (%s)", rs.gpus[0]);
    ok(strcmp(rs.team[0], "vision") == 0 && strcmp(rs.model[0], "H100") == 0 && rs.node[0][0],
       "of team vision, on an H100 of node %s", rs.node[0]);

    at(H_T0 + 15 * H_MIN);
    ok(near(budget_used(e, "vision", "vision-gpu"), 0.5, 1e-9),
       "15 minutes in, the budget counts the running job: 0.5 GPU-hours");

    at(H_T0 + 30 * H_MIN);
    h_sync(e);
    is_str(h_job_state(rd, a, state, sizeof(state)), "Succeeded", "at 30 minutes it ends");
    ledger(rd, a, &rs);
    ok(rs.n == 1 && rs.r[0].start_ms == H_T0 && rs.r[0].end_ms == H_T0 + 30 * H_MIN,
       "and its interval is closed at its end");
    is_int(gpu_ms(&rs.r[0]), 2 * 30 * H_MIN, "with 2 x 30 GPU-minutes");
    sl_engine_pricing(e, &pricing);
    sl_usage_figures(&pricing, &rs.r[0], 0, INT64_MAX, h_now(), NULL, 0, &fig);
    ok(near(fig.gpu_hours, 1.0, 1e-9), "which the meter counts as 1 GPU-hour");
    ok(near(budget_used(e, "vision", "vision-gpu"), 1.0, 1e-9),
       "the budget holds it as closed use");
    ok(near(team_gpu_seconds(e, "vision"), 3600, 1e-6),
       "and so do the team's counters of /metrics (3600 GPU-seconds)");
    budget_events(rd, "vision-gpu", evs, sizeof(evs));
    is_str(evs, "", "at 50 %% no budget event");

    /* a second job: the budget grows with it while it runs */
    is_int(submit_job(e, "vision", 2, "2h", &b2, NULL), 201, "a second 2-GPU job, for 2 hours");
    h_sync(e); /* launched before the clock moves on */
    at(H_T0 + 42 * H_MIN);
    h_sync(e);
    budget_events(rd, "vision-gpu", evs, sizeof(evs));
    ok(near(budget_used(e, "vision", "vision-gpu"), 1.4, 1e-9) && strcmp(evs, "") == 0,
       "12 minutes in: 1.4 GPU-hours (70 %%), still no event");
    at(H_T0 + 49 * H_MIN);
    h_sync(e);
    budget_events(rd, "vision-gpu", evs, sizeof(evs));
    is_str(evs, "80", "past 80 %% the tick records the 80 %% event");
    is_int(h_audit_count(rd, "budget.warn", "ok"), 1, "and audits it (budget.warn)");
    at(H_T0 + 61 * H_MIN);
    h_sync(e);
    budget_events(rd, "vision-gpu", evs, sizeof(evs));
    is_str(evs, "80,100", "past 100 %% the 100 %% event");
    is_int(h_audit_count(rd, "budget.exhausted", "ok"), 1, "audited as budget.exhausted");
    b = budget(e, "vision", "vision-gpu");
    ok(b && json_is_true(json_object_get(b, "exceeded")), "the budget reads exceeded");
    json_decref(b);
    is_int(submit_job(e, "vision", 1, "10m", &c, &err), 403,
           "a spent blocking budget refuses the team's new jobs");
    ok(strstr(err.text, "vision-gpu") && strstr(err.text, "blocked") &&
           strcmp(err.field, "metadata.team") == 0,
       "naming the budget (%s)", err.text);
    is_str(h_job_state(rd, b2, state, sizeof(state)), "Running", "running jobs are not touched");
    at(H_T0 + 75 * H_MIN);
    h_sync(e);
    budget_events(rd, "vision-gpu", evs, sizeof(evs));
    is_str(evs, "80,100", "each event is recorded once per period");
    is_int(h_audit_count(rd, "budget.exhausted", "ok"), 1, "and audited once");

    at(H_T0 + 150 * H_MIN);
    h_sync(e);
    ledger(rd, b2, &rs);
    ok(rs.n == 1 && rs.r[0].start_ms == H_T0 + 30 * H_MIN &&
           rs.r[0].end_ms == H_T0 + 150 * H_MIN && gpu_ms(&rs.r[0]) == 2 * 120 * H_MIN,
       "the second job's interval: 2 GPUs for its 2 hours");
    ok(near(budget_used(e, "vision", "vision-gpu"), 5.0, 1e-9),
       "the budget: 5 GPU-hours used of 2");
}

/* A demoting budget admits the team's jobs as best-effort. */
static void demoting_budget(struct sl_engine *e, struct sl_store *rd)
{
    int64_t n1 = 0, n2 = 0;
    char msg[256], evs[64];
    json_t *j;

    is_int(submit_job(e, "nlp", 1, "1h", &n1, NULL), 201, "a 1-GPU job of team nlp, for 1 hour");
    h_sync(e);
    at(H_T0 + 181 * H_MIN);
    h_sync(e);
    budget_events(rd, "nlp-gpu", evs, sizeof(evs));
    is_str(evs, "80,100", "31 minutes of it spend nlp's 0.5 GPU-hours: both events at once");
    is_int(submit_job(e, "nlp", 1, "10m", &n2, NULL), 201,
           "a spent demoting budget still admits the team's jobs");
    h_sync(e);
    j = h_job(rd, n2);
    is_str(j ? json_string_value(json_object_get(j, "priority_class")) : NULL, "best-effort",
           "as best-effort");
    json_decref(j);
    is_int(h_events(rd, n2, "budget", msg, sizeof(msg)), 1, "with a budget event");
    ok(strstr(msg, "nlp-gpu") != NULL, "naming the budget (%s)", msg);
    at(H_T0 + 210 * H_MIN);
    h_sync(e);
}

/* The next period starts from nothing. */
static void next_period(struct sl_engine *e, struct sl_store *rd)
{
    int64_t c = 0;
    json_t *b;
    char state[32];

    at(T_APR1 + H_MIN);
    h_sync(e);
    b = budget(e, "vision", "vision-gpu");
    ok(b && json_real_value(json_object_get(b, "used")) == 0 &&
           !json_is_true(json_object_get(b, "exceeded")) &&
           strcmp(json_string_value(json_object_get(b, "period_start")),
                  "2026-04-01T00:00:00.000Z") == 0,
       "on April 1 the budget's new period has used nothing");
    json_decref(b);
    is_int(submit_job(e, "vision", 1, "0s", &c, NULL), 201,
           "and the team's jobs are admitted again");
    h_sync(e);
    at(T_APR1 + 2 * H_MIN);
    h_sync(e);
    is_str(h_job_state(rd, c, state, sizeof(state)), "Succeeded", "and run");
}

/* Idle-but-allocated, and measured energy. */
static void idle(struct sl_engine *e, struct sl_store *rd, struct sl_gpumon *mon)
{
    const int64_t ta = T_APR1 + 60 * H_MIN;
    int64_t i = 0, k = 0;
    int gi, gk;
    char msg[256], state[32];
    struct rows rs;

    at(ta);
    gpus_busy_but(-1);
    sl_gpumon_round(mon);
    is_int(submit_job(e, "research", 1, "3h", &i, NULL), 201, "a job that will sit idle");
    is_int(submit_job(e, "research", 1, "3h", &k, NULL), 201, "and a busy one");
    h_sync(e);
    gi = job_gpu(rd, i);
    gk = job_gpu(rd, k);
    ok(gi >= 0 && gk >= 0 && gi != gk, "each holds a GPU of its own (%d, %d)", gi, gk);
    gpus_busy_but(gi);

    at(ta + 1 * H_MIN);
    sl_gpumon_round(mon);
    h_sync(e);
    at(ta + 6 * H_MIN);
    sl_gpumon_round(mon);
    h_sync(e);
    is_int(h_events(rd, i, "idle", NULL, 0), 0,
           "5 minutes under the threshold is not yet idle.after (10 minutes)");
    ledger(rd, i, &rs);
    ok(rs.n == 1 && !rs.r[0].idle && rs.r[0].idle_ms == 0, "nor is its interval marked");

    at(ta + 11 * H_MIN);
    sl_gpumon_round(mon);
    h_sync(e);
    is_int(h_events(rd, i, "idle", msg, sizeof(msg)), 1,
           "10 minutes under it: the job is flagged idle-but-allocated");
    ok(strstr(msg, "under 5 %") && strstr(msg, "for 10m"), "saying so (%s)", msg);
    ledger(rd, i, &rs);
    ok(rs.n == 1 && rs.r[0].idle && rs.r[0].idle_ms == 10 * H_MIN && rs.r[0].end_ms == 0,
       "its open interval is marked idle, with the 10 minutes");
    is_int(h_events(rd, k, "idle", NULL, 0), 0, "the busy job is not flagged");
    ledger(rd, k, &rs);
    ok(rs.n == 1 && !rs.r[0].idle, "nor its interval");

    at(ta + 12 * H_MIN);
    sl_gpumon_round(mon);
    h_sync(e);
    is_int(h_events(rd, i, "idle", NULL, 0), 1, "the idle event is recorded once per attempt");
    ledger(rd, i, &rs);
    is_int(rs.r[0].idle_ms, 11 * H_MIN, "while its idle time grows");
    gpus_busy_but(-1);
    at(ta + 13 * H_MIN);
    sl_gpumon_round(mon);
    h_sync(e);

    at(ta + 180 * H_MIN);
    h_sync(e);
    is_str(h_job_state(rd, i, state, sizeof(state)), "Succeeded", "the idle job ends");
    ledger(rd, i, &rs);
    ok(rs.n == 1 && rs.r[0].end_ms == ta + 180 * H_MIN && rs.r[0].idle &&
           rs.r[0].idle_ms == 11 * H_MIN,
       "its closed interval keeps the flag and the 11 minutes it was idle (busy again after)");
    ok(rs.r[0].gpu_energy_measured && near(rs.r[0].gpu_energy_j, 300.0 * 3 * 3600, 0.01),
       "its GPU energy is measured: 300 W for 3 hours (%.1f J)", rs.r[0].gpu_energy_j);
    ok(rs.r[0].has_util && rs.r[0].util > 0.8 && rs.r[0].util < 0.9,
       "and its utilisation (%.3f: 0 %% for 12 of 180 minutes, else 90 %%)", rs.r[0].util);
}

/* Move the clock to 'ms', sample the GPUs there and let the engine tick. */
static void tick_at(struct sl_engine *e, struct sl_gpumon *mon, int64_t ms)
{
    at(ms);
    sl_gpumon_round(mon);
    h_sync(e);
}

static int submit_kind(struct sl_engine *e, bool interactive, int64_t *id)
{
    char yaml[512];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: s, team: lab, labels: "
             "{sim-duration: 3h}}\nspec: {command: [bash], interactive: %s, resources: "
             "{gpus: 1, cpuMilli: 100}}\n",
             interactive ? "true" : "false");
    return h_submit(e, yaml, "admin", "default", "admin", id, NULL);
}

/* Idle interactive sessions: flagged apart, counted, and ended after
 * --interactive-idle-timeout (30 minutes here, idle.after 10). */
static void idle_sessions(struct sl_engine *e, struct sl_store *rd, struct sl_gpumon *mon)
{
    const int64_t tb = T_APR1 + 240 * H_MIN;
    int64_t i = 0, k = 0, b = 0;
    int gi, gk, gb;
    char msg[256], state[32];
    struct sl_job_live live;
    struct sl_engine_metrics m;
    json_t *job;

    is_int(h_apply(e,
                   "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: lab}\n---\n"
                   "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: lab}\n"
                   "spec: {team: lab, nominal: {gpus: 4}}\n",
                   "admin", "default", "admin", NULL),
           200, "a team for sessions");
    at(tb);
    gpus_busy_but(-1);
    sl_gpumon_round(mon);
    is_int(submit_kind(e, true, &i), 201, "an interactive job that will sit idle");
    is_int(submit_kind(e, true, &k), 201, "an interactive job kept busy");
    is_int(submit_kind(e, false, &b), 201, "a batch job that will sit idle");
    h_sync(e);
    gi = job_gpu(rd, i);
    gk = job_gpu(rd, k);
    gb = job_gpu(rd, b);
    ok(gi >= 0 && gk >= 0 && gb >= 0 && gi != gk && gi != gb && gk != gb,
       "each holds a GPU of its own (%d, %d, %d)", gi, gk, gb);
    if (gi < 0 || gb < 0)
        return;
    gpus_idle_mask(1u << gi | 1u << gb);
    tick_at(e, mon, tb + 1 * H_MIN);
    ok(sl_engine_job_live(e, i, &live) == 0 && live.interactive && !live.idle,
       "an interactive job under the threshold for less than idle.after is not idle yet");
    ok(sl_engine_job_live(e, b, &live) == 0 && !live.interactive,
       "a batch job is not interactive");

    tick_at(e, mon, tb + 11 * H_MIN);
    is_int(h_events(rd, i, "idle_session", msg, sizeof(msg)), 1,
           "10 minutes under it: the interactive job is flagged an idle session");
    ok(strstr(msg, "idle interactive session") && strstr(msg, "for 10m"), "saying so (%s)",
       msg);
    is_int(h_events(rd, i, "idle", NULL, 0), 0, "with no plain idle event");
    is_int(h_events(rd, b, "idle", NULL, 0), 1, "the batch job gets the plain idle event");
    ok(sl_engine_job_live(e, i, &live) == 0 && live.idle && live.interactive &&
           live.idle_since_ms == tb + 1 * H_MIN && live.idle_ms == 10 * H_MIN &&
           live.idle_ends_ms == tb + 31 * H_MIN,
       "the engine shows it idle since its GPUs went under, to be ended 30 minutes after");
    ok(sl_engine_job_live(e, b, &live) == 0 && live.idle && live.idle_ends_ms == 0,
       "the idle batch job has no end");
    ok(sl_engine_job_live(e, k, &live) == 0 && !live.idle, "the busy session is not idle");
    is_int(sl_engine_metrics(e, &m), 0, "the metrics");
    ok(m.sessions_idle == 1 && m.sessions_active == 1,
       "count one idle session and one active (%lld, %lld)", (long long)m.sessions_idle,
       (long long)m.sessions_active);
    sl_engine_metrics_fini(&m);

    tick_at(e, mon, tb + 30 * H_MIN);
    is_str(h_job_state(rd, i, state, sizeof(state)), "Running",
           "29 minutes under the threshold: the session goes on");
    is_int(h_audit_count(rd, "job.cancel", NULL), 0, "nothing is ended");

    tick_at(e, mon, tb + 31 * H_MIN);
    h_sync(e); /* the simulated task ends on its signal */
    is_str(h_job_state(rd, i, state, sizeof(state)), "Cancelled",
           "30 minutes: the idle session is ended");
    job = h_job(rd, i);
    is_str(json_string_value(json_object_get(job, "message")),
           "interactive session idle for 30m: ended", "saying why");
    json_decref(job);
    is_int(h_events(rd, i, "cancel", msg, sizeof(msg)), 1, "with a cancel event");
    ok(strstr(msg, "interactive session idle for 30m: ended (SIGHUP"), "that says so (%s)",
       msg);
    is_int(h_audit_count(rd, "job.cancel", "ok"), 1, "audited as a cancel");
    is_str(h_job_state(rd, b, state, sizeof(state)), "Running",
           "an idle batch job is never ended by the timeout");
    is_str(h_job_state(rd, k, state, sizeof(state)), "Running", "nor a busy session");
    ok(sl_engine_job_live(e, i, &live) == -ENOENT, "an ended job has nothing live");
    ok(sl_engine_metrics(e, &m) == 0 && m.sessions_idle == 0 && m.sessions_active == 1,
       "the metrics count the busy session only");
    sl_engine_metrics_fini(&m);

    gpus_busy_but(-1);
    tick_at(e, mon, tb + 240 * H_MIN);
    h_sync(e);
    is_str(h_job_state(rd, k, state, sizeof(state)), "Succeeded", "the others end");
}

int main(int argc, char **argv)
{
    struct sl_engine_config cfg = {
        .executor = "simulated",
        .fake_gpus = "8xH100",
        .interactive_idle_timeout_ms = 30 * H_MIN,
    };
    char self[PATH_MAX], lib[PATH_MAX + 32], *slash;
    struct sl_store *rd = NULL;
    struct sl_gpumon *mon = NULL;
    struct sl_engine *e;

    (void)argc;
    sl_log_set_level(SL_LOG_ERROR);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-meter.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        ok(0, "a temp dir");
        return done_testing();
    }
    snprintf(nvml_state, sizeof(nvml_state), "%s/nvml.state", tmpdir);
    snprintf(nvml_clock, sizeof(nvml_clock), "%s/nvml.clock", tmpdir);
    snprintf(self, sizeof(self), "%s", argv[0]);
    slash = strrchr(self, '/');
    snprintf(lib, sizeof(lib), "%s/libfakenvml.so", slash ? (*slash = '\0', self) : ".");
    setenv("SLUICE_NVML_LIB", lib, 1);
    setenv("FAKE_NVML_STATE", nvml_state, 1);
    setenv("FAKE_NVML_CLOCK", nvml_clock, 1);
    gpus_busy_but(-1);
    at(H_T0);

    e = h_engine_create(tmpdir, cfg, NULL);
    ok(e != NULL, "an engine with the simulated executor on 8 fake H100s");
    if (!e) {
        h_rmtree(tmpdir);
        return done_testing();
    }
    if (access(lib, R_OK) == 0 && (mon = sl_gpumon_start_clock(sl_nvml_open(), NULL, 0,
                                                               monitor_now, NULL))) {
        /* This host's meters see the nodes' GPUs (engine_int.h: a task is
         * metered when e->mon is set, the executor runs commands and its
         * node's devices are here, as the fake GPUs are). */
        e->mon = mon;
        e->caps.runs_commands = true;
        /* the simulated executor runs sessions as any job: their terminal
         * is not what these tests look at */
        e->caps.interactive = true;
    }
    ok(sl_engine_start(e) == 0, "starts");
    rd = h_reader(tmpdir);
    is_int(h_apply(e, setup, "admin", "default", "admin", NULL), 200,
           "an admin applies three teams, a Pricing and two budgets");

    ledger_and_blocking_budget(e, rd);
    demoting_budget(e, rd);
    next_period(e, rd);
    if (mon) {
        idle(e, rd, mon);
        idle_sessions(e, rd, mon);
    } else {
        skip(44, "no stand-in NVML next to this binary (make unit builds it)");
    }

    sl_engine_destroy(e); /* stops the monitor too */
    sl_store_close(rd);
    h_rmtree(tmpdir);
    return done_testing();
}
