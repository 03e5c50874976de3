/*
 * explain.c - why a job waits, in one line and in full, and the numbers of
 * each queue. See sched.h.
 *
 * Everything here is computed from the current state when asked (the pass
 * keeps only what stopped each job, its reservation and its victims), so an
 * explanation is never stale and a million pending jobs cost no memory for
 * their reasons.
 */
#include "sched_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "cpu", "memory", "gpu", "gpu[A100]" */
const char *sl_sch_dim_name(const struct sl_sched *s, int dim, char *buf, size_t size)
{
    switch (dim) {
    case SL_DIM_CPU:
        return "cpu";
    case SL_DIM_MEM:
        return "memory";
    case SL_DIM_GPU:
        return "gpu";
    default:
        snprintf(buf, size, "gpu[%s]", sl_sched_model_name(s, dim - SL_DIM_MODEL0));
        return buf;
    }
}

/* Memory for people, in the largest binary unit that keeps it readable:
 * "16Gi", "1.5Gi", "512Mi", "64Ki", "100B". */
static char *fmt_mem(int64_t v, char *buf, size_t size)
{
    static const char *const unit[] = {"B", "Ki", "Mi", "Gi", "Ti"};
    int u = 0;
    double x = (double)v;

    while (u < 4 && (x >= 1024 || x <= -1024)) {
        x /= 1024;
        u++;
    }
    if (x == (double)(int64_t)x)
        snprintf(buf, size, "%" PRId64 "%s", (int64_t)x, unit[u]);
    else
        snprintf(buf, size, "%.1f%s", x, unit[u]);
    return buf;
}

/* An amount of dimension 'dim' for people: "2.5 GPUs", "1 GPU of model
 * A100", "4 CPUs", "16Gi of memory". */
char *sl_sch_fmt_amount(const struct sl_sched *s, int dim, int64_t v, char *buf,
                        size_t size)
{
    double x = (double)v / 1000;
    char m[32];

    if (dim == SL_DIM_CPU)
        snprintf(buf, size, "%g CPU%s", x, x == 1 ? "" : "s");
    else if (dim == SL_DIM_MEM)
        snprintf(buf, size, "%s of memory", fmt_mem(v, m, sizeof(m)));
    else if (dim == SL_DIM_GPU)
        snprintf(buf, size, "%g GPU%s", x, x == 1 ? "" : "s");
    else
        snprintf(buf, size, "%g GPU%s of model %s", x, x == 1 ? "" : "s",
                 sl_sched_model_name(s, dim - SL_DIM_MODEL0));
    return buf;
}

/* The same without the unit words for a second mention: "2.5", "16Gi". */
static char *fmt_bare(int dim, int64_t v, char *buf, size_t size)
{
    if (dim == SL_DIM_MEM)
        fmt_mem(v, buf, size);
    else
        snprintf(buf, size, "%g", (double)v / 1000);
    return buf;
}

/* The amount as a JSON number in the unit the API uses: GPUs and CPUs as
 * decimals, memory in bytes. */
static void json_amount(struct sl_buf *b, int dim, int64_t v)
{
    if (dim == SL_DIM_MEM)
        sl_buf_printf(b, "%" PRId64, v);
    else
        sl_buf_printf(b, "%g", (double)v / 1000);
}

/* "2 GPUs of model A100|H100, 4 CPUs, 16Gi per task" */
void sl_sch_fmt_task(const struct sl_sched *s, const struct job *j, char *buf, size_t size)
{
    size_t o = 0;
    char a[32];

    if (j->shape.num_gpu > 0 && j->shape.gpu_milli < CL_WHOLE)
        o += (size_t)snprintf(buf + o, size - o, "%d milli-GPU", j->shape.gpu_milli);
    else if (j->shape.num_gpu > 0)
        o += (size_t)snprintf(buf + o, size - o, "%d GPU%s", j->shape.num_gpu,
                              j->shape.num_gpu > 1 ? "s" : "");
    if (j->shape.num_gpu > 0 && j->shape.models && o < size) {
        bool first = true;
        o += (size_t)snprintf(buf + o, size - o, " of model ");
        for (int m = 0; m < s->cl.nmodels && o < size; m++)
            if (j->shape.models & (1u << m)) {
                o += (size_t)snprintf(buf + o, size - o, "%s%s", first ? "" : "|",
                                      s->cl.models[m]);
                first = false;
            }
    }
    if (o < size)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? ", " : "",
                              sl_sch_fmt_amount(s, SL_DIM_CPU, j->shape.cpu_milli, a, sizeof(a)));
    if (o < size)
        snprintf(buf + o, size - o, ", %s per task",
                 sl_sch_fmt_amount(s, SL_DIM_MEM, j->shape.mem_bytes, a, sizeof(a)));
}

static const char *reject_names[CL_NREJECT] = {
    "fits", "unschedulable", "gpu_model", "gpus", "cpu", "memory",
};

/* Nodes rejected for one task of 'j', per reason. */
static void count_rejects(const struct sl_sched *s, const struct job *j,
                          uint32_t models, int rej[CL_NREJECT])
{
    struct cl_shape sh = j->shape;

    sh.models = models;
    memset(rej, 0, sizeof(int) * CL_NREJECT);
    for (int n = 0; n < s->cl.nnodes; n++)
        rej[cl_fit(&s->cl, n, &sh)]++;
}

static const struct resv *resv_of(const struct sl_sched *s, int64_t id)
{
    for (int i = 0; i < s->nresv; i++)
        if (s->resv[i].job_id == id)
            return &s->resv[i];
    return NULL;
}

static int qcmp_value(const struct sl_sched *s, const struct job *j)
{
    return s->classes[j->pclass].value;
}

/* 1-based place of pending job 'j' in its queue's order (priority, then
 * the user's share, then submit time), and the queue's pending count. */
static int queue_position(const struct sl_sched *s, const struct job *j, int64_t now,
                          int *pending)
{
    const struct queue *q = &s->queues[j->queue];
    double js = sl_sch_user_share(s, &s->qus[j->qu], now);
    int jv = qcmp_value(s, j), ahead = 0;

    *pending = q->npending;
    for (int i = 0; i < q->nbuckets; i++) {
        const struct bucket *b = q->buckets[i];
        double bs;
        int bv;
        if (!b->head)
            continue;
        bv = s->classes[b->pclass].value;
        bs = b->head ? sl_sch_user_share(s, &s->qus[b->head->qu], now) : 0;
        for (const struct job *k = b->head; k; k = k->next) {
            if (k == j)
                continue;
            if (bv > jv || (bv == jv && (bs < js - 1e-4 || (bs <= js + 1e-4 &&
                                                     (k->submit_ms < j->submit_ms ||
                                                      (k->submit_ms == j->submit_ms &&
                                                       k->id < j->id))))))
                ahead++;
        }
    }
    return ahead + 1;
}

/* Why 'j' cannot run whatever the others release (runnable.c): "cannot
 * run: ..." when no node of the cluster or no limit of its queue ever
 * admits it, "cannot run on the nodes that take work now: ..." when only
 * nodes that take no work now could hold it (*nodes_out). Returns -E2BIG
 * or -EDQUOT with the text in 'buf', or 0. */
static int cannot_run_text(const struct sl_sched *s, const struct job *j, char *buf,
                           size_t size, const char **field, bool *nodes_out)
{
    int rc = sl_sch_cannot_run(s, j, false, buf, size, field);

    *nodes_out = false;
    if (rc == 0 && (rc = sl_sch_cannot_run(s, j, true, buf, size, field)) < 0) {
        char t[512];
        snprintf(t, sizeof(t), "cannot run on the nodes that take work now: %s",
                 strncmp(buf, "cannot run: ", 12) == 0 ? buf + 12 : buf);
        snprintf(buf, size, "%s", t);
        *nodes_out = true;
    }
    return rc;
}

/* ---- one line -------------------------------------------------------- */

int sl_sched_reason(const struct sl_sched *s, int64_t id, int64_t now_ms, char *buf,
                    size_t size)
{
    const struct job *j = sl_imap_get(&s->jobs, id);
    struct quota_why qw;
    uint32_t models;
    const char *field;
    bool nodes_out;
    char a[32], b2[32], c[32], task[160];

    if (!j)
        return -ENOENT;
    buf[0] = '\0';
    if (j->state != J_PENDING)
        return 0;
    if (j->on_hold) {
        snprintf(buf, size, "%s", j->hold_note ? j->hold_note
                                               : "held: not scheduled until released");
        return 0;
    }
    if (j->staged_after) {
        snprintf(buf, size, "staged behind job %" PRId64 ": starts on its resources the "
                            "moment it completes",
                 j->staged_after);
        return 0;
    }
    if (j->wait) {
        snprintf(buf, size, "%s", j->wait);
        return 0;
    }
    if (j->not_before_ms > now_ms) {
        snprintf(buf, size, "retry backoff: eligible again in %" PRId64 "s",
                 (j->not_before_ms - now_ms + 999) / 1000);
        return 0;
    }
    if (j->nvictims > 0) {
        snprintf(buf, size, "preempting: waiting for %d job%s to stop", j->nvictims,
                 j->nvictims > 1 ? "s" : "");
        return 0;
    }
    if (cannot_run_text(s, j, buf, size, &field, &nodes_out) < 0)
        return 0;
    if (!s->classes[j->pclass].opportunistic && !sl_sch_quota_ok(s, j, &models, &qw)) {
        const struct queue *q = &s->queues[j->queue];
        char d[32];
        switch (qw.what) {
        case B_USER:
            snprintf(buf, size, "user limit: %s may hold %s in queue %s; holds %s, this "
                                "job needs %s, over the limit by %s",
                     s->users[j->user], sl_sch_fmt_amount(s, qw.dim, qw.limit, a, sizeof(a)),
                     q->name, fmt_bare(qw.dim, qw.used, b2, sizeof(b2)),
                     fmt_bare(qw.dim, qw.need - qw.used, c, sizeof(c)),
                     fmt_bare(qw.dim, qw.need - qw.limit, d, sizeof(d)));
            break;
        case B_COHORT:
            snprintf(buf, size, "cohort %s is full: its queues borrow %s of the %s its "
                                "queues lend; this job needs %s more, over the limit by %s",
                     s->cohorts[q->cohort].name, fmt_bare(qw.dim, qw.used, b2, sizeof(b2)),
                     sl_sch_fmt_amount(s, qw.dim, qw.limit, a, sizeof(a)),
                     fmt_bare(qw.dim, qw.need - qw.used, c, sizeof(c)),
                     fmt_bare(qw.dim, qw.need - qw.limit, d, sizeof(d)));
            break;
        default:
            snprintf(buf, size, "quota: queue %s may hold %s; holds %s, this job needs "
                                "%s, over the limit by %s",
                     q->name, sl_sch_fmt_amount(s, qw.dim, qw.limit, a, sizeof(a)),
                     fmt_bare(qw.dim, qw.used, b2, sizeof(b2)),
                     fmt_bare(qw.dim, qw.need - qw.used, c, sizeof(c)),
                     fmt_bare(qw.dim, qw.need - qw.limit, d, sizeof(d)));
            break;
        }
        return 0;
    }
    sl_sch_fmt_task(s, j, task, sizeof(task));
    switch (j->blocker) {
    case B_NEW:
        snprintf(buf, size, "waiting for the scheduler");
        break;
    case B_FIFO:
        snprintf(buf, size, "strict FIFO: behind an earlier job of queue %s that waits",
                 s->queues[j->queue].name);
        break;
    case B_RESERVED:
        snprintf(buf, size, "fits only on resources held for an earlier job's "
                            "reservation; it backfills if its maxRuntime ends before "
                            "that job starts");
        break;
    default:
        if (j->tasks > 1)
            snprintf(buf, size, "resources: %d of %d tasks fit (%s)", j->tasks_fit,
                     j->tasks, task);
        else
            snprintf(buf, size, "resources: no node has %s free", task);
        break;
    }
    if (j->resv_at_ms > 0) {
        size_t o = strlen(buf);
        char ts[40];
        snprintf(buf + o, size - o, "; reserved to start by %s",
                 sl_time_rfc3339(j->resv_at_ms, ts, sizeof(ts)));
    }
    return 0;
}

/* ---- in full --------------------------------------------------------- */

static void json_key(struct sl_buf *b, const char *k, bool *first)
{
    sl_buf_printf(b, "%s", *first ? "" : ",");
    sl_buf_json_str(b, k);
    sl_buf_adds(b, ":");
    *first = false;
}

static void json_time(struct sl_buf *b, int64_t ms)
{
    char ts[40];

    if (ms > 0)
        sl_buf_json_str(b, sl_time_rfc3339(ms, ts, sizeof(ts)));
    else
        sl_buf_adds(b, "null");
}

/* One more entry of the list of what would let the job run ('ifs', an
 * open JSON array). */
static void if_add(struct sl_buf *ifs, const char *line)
{
    sl_buf_printf(ifs, "%s", ifs->len > 1 ? "," : "");
    sl_buf_json_str(ifs, line);
}

/* The separator before a blocker in the open "blockers" array. */
static void blocker_sep(struct sl_buf *b, bool *first)
{
    sl_buf_adds(b, *first ? "" : ",");
    *first = false;
}

/* One quota constraint that blocks 'j', as a blocker and what would
 * lift it. */
static void quota_blocker(const struct sl_sched *s, const struct job *j,
                          const struct quota_why *qw, struct sl_buf *b,
                          struct sl_buf *ifs)
{
    const struct queue *q = &s->queues[j->queue];
    static const char *const kinds[] = {
        [B_QUOTA] = "quota", [B_COHORT] = "cohort", [B_USER] = "user_limit",
        [B_MODEL_QUOTA] = "model_quota",
    };
    char dn[64], a[32], line[256];
    const char *dname = sl_sch_dim_name(s, qw->dim, dn, sizeof(dn));
    int64_t shortby = qw->need - qw->limit;

    sl_buf_adds(b, "{\"kind\":");
    sl_buf_json_str(b, kinds[qw->what] ? kinds[qw->what] : "quota");
    sl_buf_adds(b, ",\"queue\":");
    sl_buf_json_str(b, q->name);
    if (qw->what == B_COHORT) {
        sl_buf_adds(b, ",\"cohort\":");
        sl_buf_json_str(b, s->cohorts[q->cohort].name);
    }
    if (qw->what == B_USER) {
        sl_buf_adds(b, ",\"user\":");
        sl_buf_json_str(b, s->users[j->user]);
    }
    sl_buf_adds(b, ",\"resource\":");
    sl_buf_json_str(b, dname);
    sl_buf_adds(b, ",\"used\":");
    json_amount(b, qw->dim, qw->used);
    sl_buf_adds(b, ",\"limit\":");
    json_amount(b, qw->dim, qw->limit);
    sl_buf_adds(b, ",\"would_use\":");
    json_amount(b, qw->dim, qw->need);
    sl_buf_adds(b, ",\"short\":");
    json_amount(b, qw->dim, shortby);
    sl_buf_adds(b, "}");
    if (qw->what == B_USER)
        snprintf(line, sizeof(line), "%s's jobs in queue %s release %s", s->users[j->user],
                 q->name, sl_sch_fmt_amount(s, qw->dim, shortby, a, sizeof(a)));
    else if (qw->what == B_COHORT)
        snprintf(line, sizeof(line),
                 "the queues of cohort %s release %s they borrowed, or lend more",
                 s->cohorts[q->cohort].name, sl_sch_fmt_amount(s, qw->dim, shortby, a, sizeof(a)));
    else
        snprintf(line, sizeof(line),
                 "queue %s's jobs release %s, or its quota grows by as much", q->name,
                 sl_sch_fmt_amount(s, qw->dim, shortby, a, sizeof(a)));
    if_add(ifs, line);
}

/* Who and what: the job's id, state, queue, team, cohort, user, class and
 * request. */
static void explain_job(const struct sl_sched *s, const struct job *j, struct sl_buf *b,
                        bool *first)
{
    const struct queue *q = &s->queues[j->queue];
    char task[160];

    json_key(b, "job", first);
    sl_buf_printf(b, "%" PRId64, j->id);
    json_key(b, "state", first);
    sl_buf_json_str(b, j->state == J_PENDING   ? "Pending"
                       : j->state == J_RUNNING ? "Running"
                                               : "Terminating");
    json_key(b, "queue", first);
    sl_buf_json_str(b, q->name);
    json_key(b, "team", first);
    sl_buf_json_str(b, q->team);
    json_key(b, "cohort", first);
    if (q->cohort >= 0)
        sl_buf_json_str(b, s->cohorts[q->cohort].name);
    else
        sl_buf_adds(b, "null");
    json_key(b, "user", first);
    sl_buf_json_str(b, s->users[j->user]);
    json_key(b, "priority_class", first);
    sl_buf_json_str(b, s->classes[j->pclass].name);
    json_key(b, "priority", first);
    sl_buf_printf(b, "%d", s->classes[j->pclass].value);
    json_key(b, "request", first);
    sl_sch_fmt_task(s, j, task, sizeof(task));
    sl_buf_printf(b, "{\"tasks\":%d,\"per_task\":", j->tasks);
    sl_buf_json_str(b, task);
    sl_buf_adds(b, "}");
}

/* The jobs pending 'j' preempted, still stopping. */
static void blocker_victims(const struct sl_sched *s, const struct job *j,
                            struct sl_buf *b, struct sl_buf *ifs)
{
    bool vf = true;

    sl_buf_adds(b, "{\"kind\":\"preempting\",\"victims\":[");
    for (int i = 0; i < s->nrun; i++)
        if (s->run[i]->for_job == j->id) {
            sl_buf_printf(b, "%s%" PRId64, vf ? "" : ",", s->run[i]->id);
            vf = false;
        }
    sl_buf_adds(b, "]}");
    if_add(ifs, "the jobs it preempted stop (checkpoint signal, grace, kill)");
}

/* ,"unschedulable_nodes":[{"node":..,"why":..}] for the first nodes that
 * take no task, and what would lift it for the first of them. */
static void unschedulable_nodes(const struct sl_sched *s, struct sl_buf *b, struct sl_buf *ifs)
{
    int shown = 0;

    sl_buf_adds(b, ",\"unschedulable_nodes\":[");
    for (int n = 0; n < s->cl.nnodes && shown < 16; n++) {
        const char *why = n < s->nnode_notes ? s->node_notes[n] : NULL;
        if (s->cl.nodes[n].schedulable)
            continue;
        sl_buf_adds(b, shown++ ? ",{\"node\":" : "{\"node\":");
        sl_buf_json_str(b, cl_node_name(&s->cl, n));
        sl_buf_adds(b, ",\"why\":");
        if (why)
            sl_buf_json_str(b, why);
        else
            sl_buf_adds(b, "null");
        sl_buf_adds(b, "}");
        if (shown == 1) {
            char line[560];
            snprintf(line, sizeof(line), "node %s takes work again%s%s%s",
                     cl_node_name(&s->cl, n), why ? " (" : "", why ? why : "", why ? ")" : "");
            if_add(ifs, line);
        }
    }
    sl_buf_adds(b, "]");
}

/* No node takes 'j' (admitted by quota with 'models'): each node's reason
 * to reject one task, the gang's count, whether it can ever fit; or it
 * fits only on resources held for a reservation. Nothing when it fits. */
static void blocker_placement(struct sl_sched *s, const struct job *j, uint32_t models,
                              struct sl_buf *b, struct sl_buf *ifs, bool *bfirst)
{
    int rej[CL_NREJECT], fit = 0;
    uint32_t pm = j->shape.num_gpu == 0 ? j->shape.models : models;
    bool placed = false, held;
    char line[512], task[160];

    if (pm == (s->cl.nmodels >= 32 ? UINT32_MAX : ((1u << s->cl.nmodels) - 1)) &&
        !j->shape.models)
        pm = 0;
    count_rejects(s, j, pm, rej);
    /* the same search the pass makes (topology too), given back */
    placed = sl_sch_place_try(s, j, pm, &fit);
    held = placed && j->blocker == B_RESERVED;
    if (placed && !held)
        return;
    blocker_sep(b, bfirst);
    if (held) {
        sl_buf_adds(b, "{\"kind\":\"reservation\",\"detail\":");
        sl_buf_json_str(b, "it fits only on resources held for a job "
                           "reserved ahead of it; a maxRuntime that ends "
                           "before that job starts lets it backfill");
        sl_buf_adds(b, "}");
        if_add(ifs, "its maxRuntime ends before the reserved job starts, or that job starts");
        return;
    }
    sl_buf_printf(b, "{\"kind\":\"%s\",\"tasks\":%d,\"tasks_fit\":%d,"
                     "\"nodes\":%d,\"nodes_rejected\":{",
                  j->tasks > 1 ? "gang" : "nodes", j->tasks, fit, s->cl.nnodes);
    for (int r = 1; r < CL_NREJECT; r++)
        sl_buf_printf(b, "%s\"%s\":%d", r > 1 ? "," : "", reject_names[r], rej[r]);
    sl_buf_adds(b, "}");
    if (rej[CL_UNSCHEDULABLE] > 0)
        unschedulable_nodes(s, b, ifs);
    sl_buf_adds(b, ",\"topology\":");
    sl_buf_json_str(b, j->topology == SL_TOPO_SAME_NODE     ? "same-node"
                       : j->topology == SL_TOPO_SAME_DOMAIN ? "same-domain"
                                                            : "any");
    sl_buf_adds(b, "}");
    sl_sch_fmt_task(s, j, task, sizeof(task));
    if (j->tasks > 1 && fit < j->tasks && rej[CL_FITS] > 0)
        snprintf(line, sizeof(line), "room for %d more task%s of %s (%d of %d fit now)",
                 j->tasks - fit, j->tasks - fit > 1 ? "s" : "", task, fit, j->tasks);
    else
        snprintf(line, sizeof(line), "a node with %s free%s", task,
                 j->tasks > 1 ? " for each task" : "");
    if_add(ifs, line);
}

/* A job no release lets run: one "cannot_run" blocker, and what would
 * change that (an admin's decision, or nodes back in service). */
static void blocker_cannot_run(const struct sl_sched *s, int rc, const char *text,
                               const char *field, bool nodes_out, struct sl_buf *b,
                               struct sl_buf *ifs)
{
    sl_buf_adds(b, "{\"kind\":\"cannot_run\",\"cause\":");
    sl_buf_json_str(b, nodes_out ? "nodes_out" : rc == -EDQUOT ? "limit" : "cluster");
    sl_buf_adds(b, ",\"detail\":");
    sl_buf_json_str(b, text);
    sl_buf_adds(b, ",\"field\":");
    if (field)
        sl_buf_json_str(b, field);
    else
        sl_buf_adds(b, "null");
    if (nodes_out)
        unschedulable_nodes(s, b, ifs);
    else if (rc == -EDQUOT)
        if_add(ifs, "an admin raises the limit it is over (kind: Queue: the nominal quota, "
                    "borrowing limit or per-user limit), or the job asks for less");
    else
        if_add(ifs, "the cluster gains nodes that can hold it, or the job asks for less");
    sl_buf_adds(b, "}");
}

/* What keeps pending 'j' waiting now, as the "blockers" array, and what
 * would lift each into 'ifs': that nothing lets it run (alone), its
 * backoff, its victims still stopping, every quota constraint, or the
 * nodes. Returns true when the nodes alone keep it waiting, with the
 * models its quota allows in *models. */
static bool explain_blockers(struct sl_sched *s, const struct job *j, int64_t now_ms,
                             struct sl_buf *b, struct sl_buf *ifs, uint32_t *models_out)
{
    struct quota_why qw, all_qw[8];
    uint32_t models = j->shape.models;
    bool bfirst = true, quota_ok, nodes_out, by_nodes = false;
    const char *field = NULL;
    char text[512];
    int rc;

    sl_buf_adds(b, "[");
    if ((rc = cannot_run_text(s, j, text, sizeof(text), &field, &nodes_out)) < 0) {
        blocker_cannot_run(s, rc, text, field, nodes_out, b, ifs);
        sl_buf_adds(b, "]");
        return false;
    }
    if (j->wait) {
        blocker_sep(b, &bfirst);
        sl_buf_adds(b, "{\"kind\":\"dependency\",\"detail\":");
        sl_buf_json_str(b, j->wait);
        sl_buf_adds(b, "}");
        if_add(ifs, "its dependencies are met (spec.dependency)");
    }
    if (j->not_before_ms > now_ms) {
        blocker_sep(b, &bfirst);
        sl_buf_adds(b, "{\"kind\":\"backoff\",\"until\":");
        json_time(b, j->not_before_ms);
        sl_buf_adds(b, "}");
        if_add(ifs, "its retry backoff ends");
    }
    if (j->nvictims > 0) {
        blocker_sep(b, &bfirst);
        blocker_victims(s, j, b, ifs);
    }
    quota_ok = s->classes[j->pclass].opportunistic || sl_sch_quota_ok(s, j, &models, &qw);
    if (!quota_ok) {
        /* every quota constraint that blocks, each with its numbers */
        int nq = sl_sch_quota_blockers(s, j, all_qw, (int)SL_ARRAY_LEN(all_qw));
        if (nq == 0)
            all_qw[nq++] = qw;
        for (int i = 0; i < nq; i++) {
            blocker_sep(b, &bfirst);
            quota_blocker(s, j, &all_qw[i], b, ifs);
        }
    } else if (j->nvictims == 0) {
        size_t before = b->len;
        blocker_placement(s, j, models, b, ifs, &bfirst);
        by_nodes = b->len > before;
    }
    sl_buf_adds(b, "]");
    *models_out = models;
    return by_nodes;
}

/* When it may start and where: its reservation; else, when only the
 * nodes keep it waiting, the earliest moment it would fit once the
 * running jobs end by their maxRuntime (jobs ahead of it may take that
 * room first: an estimate, said so by eta_basis). */
static void explain_eta(struct sl_sched *s, struct job *j, bool by_nodes, uint32_t models,
                        int64_t now_ms, struct sl_buf *b, bool *first)
{
    const struct resv *r = resv_of(s, j->id);
    int64_t at = j->resv_at_ms;
    const char *basis = at ? "reservation" : "none";

    if (!at && by_nodes && j->blocker != B_RESERVED &&
        sl_sch_eta(s, j, models, now_ms, &at) == 0 && at > 0)
        basis = "max_runtime";
    json_key(b, "eta", first);
    json_time(b, at);
    json_key(b, "eta_basis", first);
    sl_buf_json_str(b, basis);
    json_key(b, "reserved_nodes", first);
    sl_buf_adds(b, "[");
    for (int t = 0; r && t < r->ntasks; t++) {
        sl_buf_adds(b, t ? "," : "");
        sl_buf_json_str(b, cl_node_name(&s->cl, r->places[t].node));
    }
    sl_buf_adds(b, "]");
}

int sl_sched_explain(struct sl_sched *s, int64_t id, int64_t now_ms, struct sl_buf *b)
{
    struct job *j = sl_imap_get(&s->jobs, id);
    struct sl_buf ifs;
    bool first = true, by_nodes;
    uint32_t models = 0;
    char line[512];
    int pending = 0;

    if (!j)
        return -ENOENT;
    sl_buf_init(&ifs);
    sl_buf_adds(&ifs, "[");
    sl_buf_adds(b, "{");
    explain_job(s, j, b, &first);
    if (j->state != J_PENDING) {
        json_key(b, "started_at", &first);
        json_time(b, j->start_ms);
        if (j->state == J_TERMINATING) {
            json_key(b, "preempted_for", &first);
            sl_buf_printf(b, "%" PRId64, j->for_job);
        }
        sl_buf_adds(b, "}");
        sl_buf_fini(&ifs);
        return b->failed ? -ENOMEM : 0;
    }
    if (j->staged_after || j->on_hold) {
        json_key(b, j->on_hold ? "held" : "staged_after", &first);
        if (j->on_hold)
            sl_buf_adds(b, "true");
        else
            sl_buf_printf(b, "%" PRId64, j->staged_after);
        json_key(b, "summary", &first);
        sl_sched_reason(s, j->id, now_ms, line, sizeof(line));
        sl_buf_json_str(b, line);
        sl_buf_adds(b, "}");
        sl_buf_fini(&ifs);
        return b->failed ? -ENOMEM : 0;
    }
    json_key(b, "position", &first);
    sl_buf_printf(b, "%d", queue_position(s, j, now_ms, &pending));
    json_key(b, "queue_pending", &first);
    sl_buf_printf(b, "%d", pending);
    json_key(b, "queue_share", &first);
    sl_buf_printf(b, "%.4f", sl_sch_queue_share(s, &s->queues[j->queue], now_ms));
    json_key(b, "user_share", &first);
    sl_buf_printf(b, "%.4f", sl_sch_user_share(s, &s->qus[j->qu], now_ms));
    json_key(b, "blockers", &first);
    by_nodes = explain_blockers(s, j, now_ms, b, &ifs, &models);
    explain_eta(s, j, by_nodes, models, now_ms, b, &first);
    json_key(b, "summary", &first);
    sl_sched_reason(s, j->id, now_ms, line, sizeof(line));
    sl_buf_json_str(b, line);
    json_key(b, "would_run_if", &first);
    sl_buf_adds(&ifs, "]");
    sl_buf_add(b, ifs.data ? ifs.data : "[]", ifs.data ? ifs.len : 2);
    sl_buf_adds(b, "}");
    sl_buf_fini(&ifs);
    return b->failed || ifs.failed ? -ENOMEM : 0;
}

/* ---- queue statistics ------------------------------------------------ */

int sl_sched_queue_stats(struct sl_sched *s, int qi, int64_t now_ms,
                         struct sl_sched_queue_stats *st)
{
    const struct queue *q;

    if (qi < 0 || qi >= s->nqueues)
        return -ENOENT;
    q = &s->queues[qi];
    memset(st, 0, sizeof(*st));
    st->name = q->name;
    st->team = q->team;
    st->cohort = q->cohort >= 0 ? s->cohorts[q->cohort].name : "";
    st->nominal = q->nominal;
    st->pending = q->npending;
    st->running = q->nrunning;
    st->share = sl_sch_queue_share(s, q, now_ms);
    for (int d = 0; d < NDIMS; d++) {
        st->used.v[d] = q->used[d];
        st->opportunistic.v[d] = q->opp[d];
        st->borrowed.v[d] =
            q->nominal.v[d] >= 0 && q->used[d] > q->nominal.v[d] ? q->used[d] - q->nominal.v[d]
                                                                  : 0;
        st->lent.v[d] = 0;
    }
    /* What others borrow comes from the lendable unused quota of the cohort's
     * queues; it is attributed to them in proportion to what each can lend. */
    if (q->cohort >= 0) {
        const struct cohort *co = &s->cohorts[q->cohort];
        for (int d = 0; d < NDIMS; d++) {
            int64_t borrowed = 0, avail = 0, mine = 0;
            if (q->nominal.v[d] < 0)
                continue;
            for (int k = 0; k < co->nqueues; k++) {
                const struct queue *o = &s->queues[co->queues[k]];
                int64_t onom = o->nominal.v[d], olend, unused;
                if (onom < 0)
                    continue;
                if (o->used[d] > onom)
                    borrowed += o->used[d] - onom;
                olend = o->lend.v[d] >= 0 && o->lend.v[d] < onom ? o->lend.v[d] : onom;
                unused = onom - o->used[d];
                if (unused > olend)
                    unused = olend;
                if (unused > 0) {
                    avail += unused;
                    if (co->queues[k] == qi)
                        mine = unused;
                }
            }
            if (avail > 0 && mine > 0)
                st->lent.v[d] = (int64_t)((double)(borrowed < avail ? borrowed : avail) *
                                          (double)mine / (double)avail);
        }
    }
    return 0;
}
