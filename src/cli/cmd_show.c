/*
 * cmd_show.c - `sluice show JOB`: one job as "Key: value" lines, then its
 * events; -o json prints the job object as the server sent it.
 *
 * Fields the contract leaves open (spec.resources, usage) are rendered
 * generically as key=value pairs, so whatever the server normalises to is
 * shown without this file knowing every field.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One JSON scalar (or flat array) as text into buf; NULL for null/absent. */
static const char *scalar(const json_t *v, char *buf, size_t size)
{
    size_t i, o = 0;
    const json_t *e;

    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_string_value(v);
    case JSON_INTEGER:
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        return buf;
    case JSON_REAL:
        sl_fmt_decimal(json_real_value(v), SL_CLI_DECIMALS, buf, size);
        return buf;
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_ARRAY:
        buf[0] = '\0';
        json_array_foreach (v, i, e) {
            char item[64];
            const char *s = json_is_array(e) || json_is_object(e)
                                ? "..."
                                : scalar(e, item, sizeof(item));
            int n = snprintf(buf + o, size - o, "%s%s", i ? "," : "",
                             s ? s : "null");
            if (n < 0 || (size_t)n >= size - o)
                break;
            o += (size_t)n;
        }
        return buf;
    default:
        return NULL;
    }
}

/* "k=v k=v" of an object's scalar members, into buf. With 'resources',
 * spec.resources reads the way people write it: cpuMilli as cpus=0.5,
 * memory in bytes as memory=16.0Gi, no gpus=0 beside a gpuMilli, no empty
 * lists. */
static char *flat(const json_t *obj, bool resources, char *buf, size_t size)
{
    const char *key;
    const json_t *v;
    size_t o = 0;
    int64_t milli = 0;
    bool has_milli = sl_cli_jint(obj, "gpuMilli", &milli) && milli > 0;

    buf[0] = '\0';
    json_object_foreach ((json_t *)obj, key, v) {
        char tmp[256];
        const char *s, *k = key;
        int64_t n64;
        int n;

        if (resources && json_is_array(v) && json_array_size(v) == 0)
            continue;
        if (resources && strcmp(key, "gpus") == 0 && has_milli &&
            sl_cli_jint(obj, key, &n64) && n64 == 0)
            continue;
        if (resources && strcmp(key, "cpuMilli") == 0 &&
            sl_cli_jint(obj, key, &n64)) {
            k = "cpus";
            s = sl_cli_fmt_milli(n64, tmp, sizeof(tmp));
        } else if (resources && strcmp(key, "memory") == 0 &&
                   sl_cli_jint(obj, key, &n64)) {
            s = sl_cli_fmt_bytes(n64, tmp, sizeof(tmp));
        } else {
            s = json_is_object(v) ? "{...}" : scalar(v, tmp, sizeof(tmp));
        }
        if (!s)
            continue;
        n = snprintf(buf + o, size - o, "%s%s=%s", o ? " " : "", k, s);
        if (n < 0 || (size_t)n >= size - o)
            break;
        o += (size_t)n;
    }
    return buf;
}

struct kv {
    struct sl_cli_table *t;
    int failed;
};

static void kv_add(struct kv *kv, const char *label, const char *value)
{
    const char *row[] = {label, value};

    if (sl_cli_table_add(kv->t, row) < 0)
        kv->failed = -ENOMEM;
}

static void add_placement(struct kv *kv, const json_t *placement)
{
    const json_t *p;
    size_t i;

    if (!json_is_array(placement) || json_array_size(placement) == 0) {
        kv_add(kv, "Placement:", NULL);
        return;
    }
    json_array_foreach (placement, i, p) {
        char line[512], gpus[256], task[24] = "";
        const char *node = sl_cli_jstr(p, "node");
        int64_t v;

        if (sl_cli_jint(p, "task", &v))
            snprintf(task, sizeof(task), "task %lld: ", (long long)v);
        scalar(json_object_get(p, "gpus"), gpus, sizeof(gpus));
        if (!json_is_array(json_object_get(p, "gpus")))
            gpus[0] = '\0';
        snprintf(line, sizeof(line), "%s%s gpus=[%s] milli=%lld", task,
                 node ? node : "?", gpus,
                 sl_cli_jint(p, "gpu_milli", &v) ? (long long)v : 0LL);
        kv_add(kv, i == 0 ? "Placement:" : "", line);
    }
}

static int print_job(struct sl_cli_ctx *ctx, const json_t *job)
{
    const json_t *spec = sl_cli_job_spec(job);
    const json_t *limits = json_object_get(job, "limits_enforced");
    struct kv kv = {.t = sl_cli_table_create(2, NULL)};
    char id[24] = "", exit_code[24] = "", prio[128] = "", attempt[64] = "";
    char res[512] = "", usage[512] = "", runtime[32] = "", *command = NULL;
    char max_runtime[64] = "", hold[160], kind[16], who[80], state[48], idle[256];
    const json_t *attached = json_object_get(job, "attached");
    const char *mr;
    int64_t ms;
    const char *pc = sl_cli_jstr(job, "priority_class");
    int64_t v, r;

    (void)ctx;
    if (!kv.t)
        return -ENOMEM;
    if (sl_cli_jint(job, "id", &v))
        snprintf(id, sizeof(id), "%lld", (long long)v);
    if (sl_cli_jint(job, "exit_code", &v))
        snprintf(exit_code, sizeof(exit_code), "%lld", (long long)v);
    if (pc && sl_cli_jint(job, "priority", &v))
        snprintf(prio, sizeof(prio), "%.100s (%lld)", pc, (long long)v);
    else if (pc)
        snprintf(prio, sizeof(prio), "%.100s", pc);
    if (sl_cli_jint(job, "attempt", &v))
        snprintf(attempt, sizeof(attempt), "%lld (retries allowed: %lld)",
                 (long long)v,
                 sl_cli_jint(job, "retries", &r) ? (long long)r : 0LL);
    if (json_is_object(spec)) {
        int64_t tasks = 1;
        size_t n;
        sl_cli_jint(spec, "tasks", &tasks);
        n = (size_t)snprintf(res, sizeof(res), "tasks=%lld", (long long)tasks);
        if (json_is_object(json_object_get(spec, "resources")) &&
            n < sizeof(res) - 1) {
            res[n++] = ' ';
            flat(json_object_get(spec, "resources"), true, res + n,
                 sizeof(res) - n);
        }
        command = sl_cli_shell_join(json_object_get(spec, "command"));
        /* "7200s" reads better as "2h0m"; anything else is shown as is. */
        if ((mr = sl_cli_jstr(spec, "maxRuntime"))) {
            if (sl_parse_duration_ms(mr, &ms) == 0)
                sl_cli_fmt_duration(ms, max_runtime, sizeof(max_runtime));
            else
                sl_strlcpy(max_runtime, mr, sizeof(max_runtime));
        }
    }
    if (json_is_object(json_object_get(job, "usage")))
        flat(json_object_get(job, "usage"), false, usage, sizeof(usage));
    sl_cli_job_time(job, sl_now_ms(), runtime, sizeof(runtime));

    kv_add(&kv, "ID:", id[0] ? id : NULL);
    kv_add(&kv, "Name:", sl_cli_jstr(job, "name"));
    kv_add(&kv, "Team:", sl_cli_jstr(job, "team"));
    kv_add(&kv, "Project:", sl_cli_jstr(job, "project"));
    kv_add(&kv, "User:", sl_cli_jstr(job, "user"));
    kv_add(&kv, "Queue:", sl_cli_jstr(job, "queue"));
    kv_add(&kv, "Priority class:", prio[0] ? prio : NULL);
    kv_add(&kv, "State:", sl_cli_job_state_cell(job, state, sizeof(state)));
    kv_add(&kv, "Exit code:", exit_code[0] ? exit_code : NULL);
    kv_add(&kv, "Attempt:", attempt[0] ? attempt : NULL);
    kv_add(&kv, "Submitted:", sl_cli_jstr(job, "submitted_at"));
    kv_add(&kv, "Started:", sl_cli_jstr(job, "started_at"));
    kv_add(&kv, "Finished:", sl_cli_jstr(job, "finished_at"));
    kv_add(&kv, "Time:", runtime);
    kv_add(&kv, "Resources:", res[0] ? res : NULL);
    kv_add(&kv, "Max runtime:", max_runtime[0] ? max_runtime : NULL);
    add_placement(&kv, json_object_get(job, "placement"));
    kv_add(&kv, "Limits enforced:",
           json_is_true(limits)    ? "yes"
           : json_is_false(limits) ? "no"
                                   : NULL);
    if (usage[0])
        kv_add(&kv, "Usage:", usage);
    if (json_is_object(json_object_get(job, "hold"))) {
        const json_t *h = json_object_get(job, "hold");
        const char *by = sl_cli_jstr(h, "by");
        snprintf(hold, sizeof(hold), "%s hold%s%s",
                 sl_cli_sanitize(sl_cli_jstr(h, "kind"), kind, sizeof(kind)), by ? " by " : "",
                 by ? sl_cli_sanitize(by, who, sizeof(who)) : "");
        kv_add(&kv, "Hold:", hold);
    }
    kv_add(&kv, "Reason:", sl_cli_jstr(job, "reason"));
    if (sl_cli_job_idle_text(job, sl_now_ms(), idle, sizeof(idle)))
        kv_add(&kv, "Idle:", idle);
    if (json_is_boolean(attached)) /* a running interactive job */
        kv_add(&kv, "Terminal:", json_is_true(attached) ? "attached" : "detached");
    kv_add(&kv, "Message:", sl_cli_jstr(job, "message"));
    kv_add(&kv, "Image:", sl_cli_jstr(spec, "image"));
    kv_add(&kv, "Command:", command && *command ? command : NULL);
    if (!kv.failed)
        sl_cli_table_print(kv.t, stdout, SL_CLI_OUT_TABLE, 0);
    free(command);
    sl_cli_table_destroy(kv.t);
    return kv.failed;
}

static int print_events(const json_t *ans)
{
    static const char *const cols[] = {"AT", "TYPE", "FROM", "TO", "MESSAGE"};
    const json_t *events = json_object_get(ans, "events"), *e;
    struct sl_cli_table *t;
    size_t i;

    if (!json_is_array(events))
        return -EPROTO;
    printf("\nEvents:\n");
    if (json_array_size(events) == 0) {
        printf("  none\n");
        return 0;
    }
    if (!(t = sl_cli_table_create(SL_ARRAY_LEN(cols), cols)))
        return -ENOMEM;
    json_array_foreach (events, i, e) {
        const char *row[] = {sl_cli_jstr(e, "at"), sl_cli_jstr(e, "type"),
                             sl_cli_jstr(e, "from"), sl_cli_jstr(e, "to"),
                             sl_cli_jstr(e, "message")};
        if (sl_cli_table_add(t, row) < 0) {
            sl_cli_table_destroy(t);
            return -ENOMEM;
        }
    }
    sl_cli_table_print(t, stdout, SL_CLI_OUT_TABLE, 2);
    sl_cli_table_destroy(t);
    return 0;
}

int sl_cli_cmd_show(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_table *t = NULL;
    const char *pos[1];
    char path[64], what[40];
    json_t *job = NULL, *events = NULL;
    int64_t id;
    int n, code, rc;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 1, &n)) != SL_CLI_OK)
        return code;
    if (n == 0) {
        sl_cli_errorf("show: JOB is required (sluice show JOB)");
        return SL_CLI_USAGE;
    }
    if (sl_cli_job_id(pos[0], &id, &err) < 0)
        return sl_cli_usage_error(&err);
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, what,
                                 &job)) != SL_CLI_OK)
        return code;
    switch (ctx->output) {
    case SL_CLI_OUT_JSON:
        code = sl_cli_print_json(job) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        break;
    case SL_CLI_OUT_CSV:
        if (!(t = sl_cli_jobs_table(SL_CLI_OUT_CSV)) ||
            sl_cli_jobs_table_add(t, SL_CLI_OUT_CSV, job, sl_now_ms()) < 0) {
            sl_cli_errorf("out of memory");
            code = SL_CLI_FAILED;
            break;
        }
        sl_cli_table_print(t, stdout, SL_CLI_OUT_CSV, 0);
        break;
    case SL_CLI_OUT_TABLE:
        if (print_job(ctx, job) < 0) {
            sl_cli_errorf("out of memory");
            code = SL_CLI_FAILED;
            break;
        }
        snprintf(path, sizeof(path), "/v1/jobs/%lld/events", (long long)id);
        if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, what,
                                     &events)) != SL_CLI_OK)
            break;
        if ((rc = print_events(events)) < 0) {
            sl_cli_errorf("%s: %s", what,
                          rc == -ENOMEM
                              ? "out of memory"
                              : "the server's event list is malformed");
            code = SL_CLI_FAILED;
        }
        break;
    }
    sl_cli_table_destroy(t);
    json_decref(job);
    json_decref(events);
    return code;
}
