/*
 * test_engine_depwait.c - jobs that wait (src/engine/depwait.c, against its
 * contract in engine_int.h): dependencies judged when jobs end, met,
 * waiting or never satisfiable (ended Cancelled, or kept Pending with
 * keep_invalid_depend), and job arrays created in one submission whose
 * %N limit holds. The simulated executor runs each job for its label
 * sim-duration on the harness's clock: nothing waits for wall time.
 */
#include <limits.h>

#include "engine_harness.h"

static char tmpdir[PATH_MAX];

static const char *job(char *buf, size_t size, const char *dur, const char *extra)
{
    snprintf(buf, size,
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {labels: {sim-duration: %s}}\n"
             "spec:\n  command: [x]\n  resources: {cpus: 1, memory: 1Gi}\n%s",
             dur, extra);
    return buf;
}

static int64_t submit(struct sl_engine *e, const char *dur, const char *extra, int *status,
                      struct sl_error *err)
{
    char doc[512];
    int64_t id = 0;

    *status = h_submit(e, job(doc, sizeof(doc), dur, extra), "admin", "default", "admin",
                       &id, err);
    h_sync(e);
    return id;
}

static void dependencies(struct sl_engine *e, struct sl_store *rd)
{
    char extra[128], b1[256];
    struct sl_error err = {"", ""};
    int st;
    int64_t a, b, c, d;

    h_clock_set(H_T0);
    a = submit(e, "10m", "", &st, &err);
    is_int(st, 201, "job a (10 minutes) is submitted");
    snprintf(extra, sizeof(extra), "  dependency: afterok:%lld\n", (long long)a);
    b = submit(e, "1m", extra, &st, &err);
    is_int(st, 201, "job b afterok:a is submitted");
    snprintf(extra, sizeof(extra), "  dependency: afternotok:%lld\n", (long long)a);
    c = submit(e, "1m", extra, &st, &err);
    snprintf(extra, sizeof(extra), "  dependency: afterok:%lld\n", (long long)b);
    d = submit(e, "1m", extra, &st, &err);
    h_sync(e);
    is_str(h_job_state(rd, a, b1, sizeof(b1)), "Running", "a runs");
    is_str(h_job_state(rd, b, b1, sizeof(b1)), "Pending", "b waits");
    is_str(h_job_state(rd, d, b1, sizeof(b1)), "Pending", "d (afterok:b) waits");
    h_clock_set(H_T0 + 10 * H_MIN + 1);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, a, b1, sizeof(b1)), "Succeeded", "a succeeds at its end");
    is_str(h_job_state(rd, b, b1, sizeof(b1)), "Running", "then b runs, in the same moment");
    is_str(h_job_state(rd, c, b1, sizeof(b1)), "Cancelled",
           "c (afternotok on a success) ends Cancelled");
    snprintf(extra, sizeof(extra),
             "dependency afternotok:%lld can never be satisfied: job %lld ended Succeeded",
             (long long)a, (long long)a);
    is_str(h_job_str(rd, c, "message", b1, sizeof(b1)), extra, "its message says why");
    is_str(h_job_state(rd, d, b1, sizeof(b1)), "Pending", "d still waits for b");
    h_clock_set(H_T0 + 11 * H_MIN + 2);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, d, b1, sizeof(b1)), "Running", "d runs once b succeeded");
    snprintf(extra, sizeof(extra), "  dependency: afterok:%lld\n", (long long)c);
    submit(e, "1m", extra, &st, &err);
    is_int(st, 400, "afterok on a job that ended Cancelled is refused at submission");
    is_str(err.field, "spec.dependency", "naming spec.dependency");
    submit(e, "1m", "  dependency: afterany:999\n", &st, &err);
    is_int(st, 400, "a dependency on a job that does not exist is refused");
    ok(strstr(err.text, "job 999 does not exist") != NULL, "saying so (%s)", err.text);
    h_clock_set(H_T0 + 13 * H_MIN);
    h_sync(e);
}

static void arrays(struct sl_engine *e, struct sl_store *rd)
{
    char b1[64], extra[96];
    struct sl_error err = {"", ""};
    int st, running = 0, pending = 0;
    int64_t a, d, f;

    h_clock_set(H_T0 + 20 * H_MIN);
    a = submit(e, "5m", "  array: \"0-5%2\"\n", &st, &err);
    is_int(st, 201, "an array of 6 with %%2 is submitted");
    h_sync(e);
    for (int k = 0; k < 6; k++) {
        json_t *j = h_job(rd, a + k);
        running += strcmp(h_job_state(rd, a + k, b1, sizeof(b1)), "Running") == 0;
        pending += strcmp(b1, "Pending") == 0;
        ok(j && json_integer_value(json_object_get(j, "array_job_id")) == a &&
               json_integer_value(json_object_get(j, "array_index")) == k,
           "element %d: array_job_id %lld, array_index %d", k, (long long)a, k);
        json_decref(j);
    }
    is_int(running, 2, "two elements run");
    is_int(pending, 4, "four wait");
    h_clock_set(H_T0 + 25 * H_MIN + 1);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, a + 2, b1, sizeof(b1)), "Running", "as two end, element 2 runs");
    is_str(h_job_state(rd, a + 3, b1, sizeof(b1)), "Running", "and element 3");
    is_str(h_job_state(rd, a + 4, b1, sizeof(b1)), "Pending", "element 4 still waits");
    /* an array may have a dependency, which each element carries: one on
     * element 5 runs once it succeeded, one that it fails is cancelled */
    snprintf(extra, sizeof(extra), "  array: \"0-1\"\n  dependency: afterok:%lld\n",
             (long long)(a + 5));
    d = submit(e, "1m", extra, &st, &err);
    is_int(st, 201, "an array with a dependency (afterok on element 5) is submitted");
    snprintf(extra, sizeof(extra), "  array: \"0-1\"\n  dependency: afternotok:%lld\n",
             (long long)(a + 5));
    f = submit(e, "1m", extra, &st, &err);
    is_int(st, 201, "and one afternotok on it");
    for (int k = 0; k < 2; k++) {
        json_t *j = h_job(rd, d + k), *sp = json_object_get(json_object_get(j, "spec"), "spec");
        snprintf(extra, sizeof(extra), "afterok:%lld", (long long)(a + 5));
        is_str(json_string_value(json_object_get(sp, "dependency")), extra,
               "element %d carries the dependency", k);
        json_decref(j);
    }
    /* elements 2 and 3 end at 30m and 4 and 5 start (the host's two
     * CPUs); they end at 35m */
    h_clock_set(H_T0 + 30 * H_MIN + 2);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, a + 5, b1, sizeof(b1)), "Running", "element 5 runs");
    h_clock_set(H_T0 + 35 * H_MIN + 3);
    h_sync(e);
    h_sync(e);
    is_str(h_job_state(rd, a + 5, b1, sizeof(b1)), "Succeeded", "element 5 succeeds");
    is_str(h_job_state(rd, d, b1, sizeof(b1)), "Running",
           "then the dependent array's element 0 runs");
    is_str(h_job_state(rd, d + 1, b1, sizeof(b1)), "Running", "and its element 1");
    is_str(h_job_state(rd, f, b1, sizeof(b1)), "Cancelled",
           "the afternotok array's element 0 can never run: Cancelled");
    is_str(h_job_state(rd, f + 1, b1, sizeof(b1)), "Cancelled", "and its element 1");
}

int main(void)
{
    struct sl_engine_config cfg = {.executor = "simulated", .fake_gpus = "8xH100"};
    struct sl_store *rd = NULL;
    struct sl_engine *e;

    sl_log_set_level(SL_LOG_ERROR);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-depwait.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        ok(0, "a temp dir");
        return done_testing();
    }
    h_clock_set(H_T0);
    e = h_engine_create(tmpdir, cfg, NULL);
    ok(e != NULL && sl_engine_start(e) == 0, "an engine with the simulated executor starts");
    if (!e) {
        h_rmtree(tmpdir);
        return done_testing();
    }
    rd = h_reader(tmpdir);
    dependencies(e, rd);
    arrays(e, rd);
    sl_store_close(rd);
    sl_engine_destroy(e);
    h_rmtree(tmpdir);
    return done_testing();
}
