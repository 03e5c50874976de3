/*
 * test_executor.c - the executor interface (src/exec/executor.h) against
 * its contract, for each implementation:
 *   simulated  on an injected clock: a task ends at its sim-duration with
 *              code 0, a signal ends it at once with 128 + the signal, an
 *              adopted job ends at once, every end is reported once, in
 *              batches of at most 'max', next_event_ms says when;
 *   local      real processes: start, the wake descriptor and events on a
 *              task's end, signal, a failed start, adoption by a second
 *              executor (the first one destroyed, as a restart does),
 *              release, log paths, the nodes it offers.
 * And the table: unknown kinds are refused, the kinds are listed.
 *
 * The local part waits for processes by polling against a deadline; the
 * simulated part never waits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/core/spec.h"
#include "../../src/exec/executor.h"
#include "../tap.h"

#define DEADLINE_MS 10000

static int64_t clock_ms = 1000000;
static int64_t test_now(void) { return clock_ms; }

/* A job spec of 'tasks' tasks running 'cmd' (a YAML flow list), with the
 * label sim-duration when 'duration' is not NULL. */
static struct sl_job_spec *spec_of(const char *cmd, int tasks, const char *duration)
{
    struct sl_job_spec *s = NULL;
    struct sl_error err = {"", ""};
    char yaml[512];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: sluice/v1\nkind: Job\nmetadata: {name: t, labels: {%s%s}}\n"
             "spec: {command: %s, tasks: %d}\n",
             duration ? "sim-duration: " : "", duration ? duration : "", cmd, tasks);
    if (sl_job_spec_parse(yaml, strlen(yaml), &s, &err) < 0)
        diag("spec: %s: %s", err.field, err.text);
    return s;
}

static struct sl_exec_job job_of(int64_t id, int attempt, const struct sl_job_spec *spec,
                                 struct sl_exec_place *pl)
{
    struct sl_exec_job j = {0};

    memset(pl, 0, sizeof(*pl) * (size_t)spec->tasks);
    j.job_id = id;
    j.attempt = attempt;
    j.spec = spec;
    j.log_cap_bytes = 1 << 20;
    j.ntasks = spec->tasks;
    j.tasks = pl;
    j.allow_daemon_user = "";
    return j;
}

/* ---- the table ------------------------------------------------------------ */

static void test_table(void)
{
    struct sl_executor_config cfg = {.kind = "docker", .data_dir = "/nonexistent"};
    struct sl_error err = {"", ""};
    char kinds[128];

    ok(sl_executor_kind_valid("local") && sl_executor_kind_valid("simulated") &&
           sl_executor_kind_valid("slurm"),
       "local, simulated and slurm are executors");
    ok(!sl_executor_kind_valid("docker") && !sl_executor_kind_valid(NULL) &&
           !sl_executor_kind_valid(""),
       "docker, NULL and \"\" are not");
    is_str(sl_executor_kinds(kinds, sizeof(kinds)), "local, simulated, slurm",
           "the kinds are listed");
    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "local, simulated, slurm") &&
           strstr(err.text, "docker"),
       "an unknown kind is refused, naming it and the kinds (%s)", err.text);
}

static void test_slurm_settings(void)
{
    struct sl_executor_config cfg = {.kind = "slurm", .data_dir = "/nonexistent"};
    struct sl_error err = {"", ""};

    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "--slurm-partition"),
       "the slurm executor needs its partition (%s)", err.text);
    cfg.slurm_partition = "main; rm";
    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "--slurm-partition"),
       "and refuses one that is not a partition name");
    cfg.slurm_partition = "main,,gpu";
    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "--slurm-partition"),
       "or a list with an empty item");
    cfg.slurm_partition = "main";
    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "--slurm-output-dir"),
       "it needs a shared output directory (%s)", err.text);
    cfg.slurm_output_dir = "/nonexistent-sluice-dir";
    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "not a directory"),
       "that exists (%s)", err.text);
    cfg.slurm_output_dir = "relative/dir";
    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "absolute"),
       "given as an absolute path");
    cfg.slurm_output_dir = "/tmp";
    cfg.slurm_api = "rest";
    ok(sl_executor_create(&cfg, &err) == NULL && strstr(err.text, "--slurm-api") &&
           strstr(err.text, "auto, library or tools") && strstr(err.text, "'rest'"),
       "--slurm-api is auto, library or tools (%s)", err.text);
}

/* ---- simulated -------------------------------------------------------------- */

static struct sl_executor *sim_new(const char *fake_gpus)
{
    struct sl_executor_config cfg = {.kind = "simulated", .data_dir = "/nonexistent",
                                     .fake_gpus = fake_gpus, .now_ms = test_now};
    struct sl_error err = {"", ""};
    struct sl_executor *x = sl_executor_create(&cfg, &err);

    if (!x)
        diag("simulated: %s", err.text);
    return x;
}

static void test_sim_nodes_and_caps(void)
{
    struct sl_executor *x = sim_new("2xH100");
    struct sl_inventory inv = {NULL, 0, 0};
    struct sl_exec_caps caps;
    struct sl_error err = {"", ""};
    char path[64];

    ok(x != NULL, "a simulated executor on this host with 2 fake H100s");
    if (!x)
        return;
    is_str(sl_executor_name(x), "simulated", "it is named simulated");
    sl_executor_caps(x, &caps);
    ok(!caps.runs_commands && !caps.runs_as_accounts && !caps.job_tokens && !caps.limits &&
           !caps.devices && !caps.images,
       "it runs nothing, so it enforces nothing and gives no job tokens");
    is_int(sl_executor_nodes(x, &inv, &err), 0, "it lists its nodes");
    ok(inv.n == 1 && inv.nodes[0].ngpus == 2 && strcmp(inv.nodes[0].gpus[1].model, "H100") == 0 &&
           inv.nodes[0].state == SL_NODE_UP && strcmp(inv.nodes[0].gpu_source, "fake") == 0,
       "one node, up, with the 2 fake H100s");
    is_int(sl_executor_wake_fd(x), -1, "no wake descriptor: its ends are timed");
    is_int(sl_executor_log_path(x, 1, 0, path, sizeof(path)), -ENOENT, "and it keeps no log");
    sl_inventory_fini(&inv);
    sl_executor_destroy(x);
}

static void test_sim_runs(void)
{
    struct sl_executor *x = sim_new("1xT4");
    struct sl_job_spec *s3 = spec_of("[x]", 3, "2s");
    struct sl_job_spec *s0 = spec_of("[x]", 1, NULL);
    struct sl_exec_place pl[3], pl0[1];
    struct sl_exec_task_state st[3];
    struct sl_exec_event ev[8];
    struct sl_exec_job j;
    int n;

    if (!x || !s3 || !s0) {
        ok(0, "setup");
        return;
    }
    clock_ms = 1000000;
    j = job_of(7, 0, s3, pl);
    is_int(sl_executor_start(x, &j, st), 0, "a 3-task job with sim-duration 2s starts");
    ok(st[0].status == SL_EXEC_TASK_RUNNING && st[2].status == SL_EXEC_TASK_RUNNING,
       "every task is running");
    is_str(st[0].note, "simulated executor: the command is not run", "and says nothing runs");
    is_int(sl_executor_next_event_ms(x), 1002000, "its end is due 2 s later");
    is_int(sl_executor_events(x, 1001999, ev, 8), 0, "nothing ends before");
    n = sl_executor_events(x, 1002000, ev, 2);
    ok(n == 2 && ev[0].job_id == 7 && ev[0].task == 0 && ev[1].task == 1 &&
           ev[0].kind == SL_EXEC_EV_EXITED && ev[0].exit_code == 0,
       "at 2 s its tasks end with code 0, two per call when max is 2");
    n = sl_executor_events(x, 1002000, ev, 2);
    ok(n == 1 && ev[0].task == 2, "then the third");
    is_int(sl_executor_events(x, 1009000, ev, 8), 0, "each end is reported once");
    is_int(sl_executor_next_event_ms(x), INT64_MAX, "nothing is due any more");
    is_int(sl_executor_signal(x, 7, 0, SIGTERM), -ESRCH, "a job that ended takes no signal");
    sl_executor_release(x, 7, 0);

    j = job_of(8, 1, s0, pl0);
    sl_executor_start(x, &j, st);
    is_int(sl_executor_next_event_ms(x), 1000000, "a job without sim-duration ends at once");
    n = sl_executor_events(x, 1000000, ev, 8);
    ok(n == 1 && ev[0].job_id == 8 && ev[0].attempt == 1 && ev[0].exit_code == 0,
       "with code 0, named by its attempt");
    sl_executor_release(x, 8, 1);

    j = job_of(9, 0, s3, pl);
    sl_executor_start(x, &j, st);
    clock_ms = 1000500;
    is_int(sl_executor_signal(x, 9, 1, SIGTERM), -ESRCH, "another attempt's signal finds nothing");
    is_int(sl_executor_signal(x, 9, 0, SIGTERM), 0, "a running job takes a signal");
    n = sl_executor_events(x, clock_ms, ev, 8);
    ok(n == 3 && ev[0].exit_code == 128 + SIGTERM && ev[2].exit_code == 128 + SIGTERM,
       "which ends every task at once with 128 + SIGTERM");
    sl_executor_release(x, 9, 0);

    j = job_of(10, 2, s3, pl);
    is_int(sl_executor_adopt(x, &j, st), 0, "a job stored Running is adopted after a restart");
    ok(st[0].status == SL_EXEC_TASK_RUNNING && st[2].status == SL_EXEC_TASK_RUNNING,
       "its tasks are running");
    n = sl_executor_events(x, clock_ms, ev, 8);
    ok(n == 3 && ev[0].exit_code == 0 && ev[0].attempt == 2,
       "and end at once with code 0: their run ended with the daemon");
    sl_executor_release(x, 10, 2);
    sl_executor_release(x, 10, 2); /* twice: nothing */
    is_int(sl_executor_next_event_ms(x), INT64_MAX, "released twice, nothing is left");
    sl_job_spec_destroy(s3);
    sl_job_spec_destroy(s0);
    sl_executor_destroy(x);
}

static void test_sim_given_nodes(void)
{
    struct sl_inventory given = {NULL, 0, 0}, inv = {NULL, 0, 0};
    struct sl_gpu_info gpus[8] = {{0}};
    struct sl_node_info n = {.gpus = gpus};
    struct sl_executor_config cfg = {.kind = "simulated", .data_dir = "/nonexistent",
                                     .nodes = &given, .now_ms = test_now};
    struct sl_error err = {"", ""};
    struct sl_executor *x;

    snprintf(gpus[7].model, sizeof(gpus[7].model), "A100");
    for (int i = 0; i < 5; i++) {
        snprintf(n.name, sizeof(n.name), "node-%d", i);
        n.ngpus = 8;
        n.state = i == 4 ? SL_NODE_DRAINING : SL_NODE_UP;
        sl_inventory_add(&given, &n);
    }
    n.ngpus = SL_EXEC_MAX_GPUS + 1;
    is_int(sl_inventory_add(&given, &n), -EINVAL, "a node of more GPUs than a node has is refused");
    is_int(given.n, 5, "and not added");
    x = sl_executor_create(&cfg, &err);
    snprintf(gpus[7].model, sizeof(gpus[7].model), "T4");
    sl_inventory_fini(&given); /* copied */
    ok(x && sl_executor_nodes(x, &inv, &err) == 0 && inv.n == 5 &&
           strcmp(inv.nodes[4].name, "node-4") == 0 && inv.nodes[4].state == SL_NODE_DRAINING &&
           !inv.nodes[0].devices_here && strcmp(inv.nodes[4].gpus[7].model, "A100") == 0,
       "the nodes it was given, in their order and state, none of them here, their GPUs copied");
    sl_inventory_fini(&inv);
    sl_executor_destroy(x);
    is_str(sl_node_state_name(SL_NODE_DRAINING), "draining", "a node state has a name");
}

/* ---- local ---------------------------------------------------------------- */

static char tmpdir[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Events of 'x' until 'want' have come or the deadline passes. */
static int wait_events(struct sl_executor *x, struct sl_exec_event *ev, int want)
{
    int got = 0;

    for (int waited = 0; got < want && waited < DEADLINE_MS; waited += 20) {
        struct pollfd pfd = {sl_executor_wake_fd(x), POLLIN, 0};
        poll(&pfd, 1, 20);
        got += sl_executor_events(x, sl_now_ms(), ev + got, want - got);
    }
    return got;
}

static struct sl_executor *local_new(void)
{
    struct sl_executor_config cfg = {.kind = "local", .data_dir = tmpdir, .fake_gpus = "2xA100"};
    struct sl_error err = {"", ""};
    struct sl_executor *x = sl_executor_create(&cfg, &err);

    if (!x)
        diag("local: %s", err.text);
    return x;
}

static void test_local(const char *self)
{
    struct sl_executor *x = local_new(), *y = NULL;
    struct sl_job_spec *s2 = spec_of("[sh, -c, 'echo hi $SLUICE_TASK_INDEX; exit 3']", 2, NULL);
    struct sl_job_spec *sl = spec_of("[sleep, '30']", 1, NULL);
    struct sl_job_spec *bad = spec_of("['true']", 1, NULL);
    struct sl_exec_place pl[2];
    struct sl_exec_task_state st[2];
    struct sl_exec_event ev[4];
    struct sl_inventory inv = {NULL, 0, 0};
    struct sl_exec_caps caps;
    struct sl_error err = {"", ""};
    struct sl_exec_job j;
    char path[256], buf[64] = "";
    FILE *f;
    int n;

    ok(x != NULL, "a local executor in a fresh data dir");
    if (!x || !s2 || !sl || !bad)
        return;
    sl_executor_caps(x, &caps);
    ok(caps.runs_commands && caps.runs_as_accounts && caps.accounts_here && caps.job_tokens &&
           !caps.images,
       "it runs commands as this host's accounts, gives job tokens, runs no image");
    ok(sl_executor_nodes(x, &inv, &err) == 0 && inv.n == 1 && inv.nodes[0].devices_here &&
           inv.nodes[0].ngpus == 2,
       "it offers this host, whose devices are here, with its 2 (fake) GPUs");
    sl_inventory_fini(&inv);
    ok(sl_executor_wake_fd(x) >= 0, "it has a wake descriptor");

    j = job_of(1, 0, s2, pl);
    j.unix_user = self;
    j.allow_daemon_user = self;
    is_int(sl_executor_start(x, &j, st), 0, "a 2-task job starts");
    ok(st[0].status == SL_EXEC_TASK_RUNNING && st[1].status == SL_EXEC_TASK_RUNNING,
       "both tasks run");
    n = wait_events(x, ev, 2);
    ok(n == 2 && ev[0].kind == SL_EXEC_EV_EXITED && ev[0].exit_code == 3 &&
           ev[1].exit_code == 3 && ev[0].task != ev[1].task,
       "the wake descriptor and events report both ends, code 3");
    is_int(sl_executor_events(x, sl_now_ms(), ev, 4), 0, "once each");
    ok(sl_executor_log_path(x, 1, 1, path, sizeof(path)) == 0 && (f = fopen(path, "r")) &&
           fgets(buf, sizeof(buf), f) && fclose(f) == 0,
       "task 1's log is where log_path says");
    is_str(buf, "hi 1\n", "and holds its output");
    sl_executor_release(x, 1, 0);

    j = job_of(2, 0, sl, pl);
    j.unix_user = self;
    j.allow_daemon_user = self;
    is_int(sl_executor_start(x, &j, st), 0, "a sleeping job starts");
    is_int(sl_executor_signal(x, 2, 1, SIGTERM), -ESRCH, "another attempt's signal finds nothing");
    is_int(sl_executor_signal(x, 2, 0, SIGTERM), 0, "it takes SIGTERM");
    n = wait_events(x, ev, 1);
    ok(n == 1 && ev[0].job_id == 2 && ev[0].exit_code == 128 + SIGTERM,
       "and ends with 128 + SIGTERM");
    sl_executor_release(x, 2, 0);

    j = job_of(3, 0, bad, pl);
    j.unix_user = "sluice-no-such-account";
    j.allow_daemon_user = "";
    ok(sl_executor_start(x, &j, st) < 0 && st[0].status == SL_EXEC_TASK_FAILED && st[0].error[0],
       "a task that cannot start is FAILED, saying why (%s)", st[0].error);
    sl_executor_release(x, 3, 0);

    /* A restart: the first executor goes, its task runs on, a second one
     * adopts it and learns of its end by polling. */
    j = job_of(4, 5, sl, pl);
    j.unix_user = self;
    j.allow_daemon_user = self;
    is_int(sl_executor_start(x, &j, st), 0, "a job that will outlive its executor starts");
    sl_executor_destroy(x);
    x = NULL;
    y = local_new();
    ok(y && sl_executor_adopt(y, &j, st) == 0 && st[0].status == SL_EXEC_TASK_RUNNING,
       "a new executor adopts its running task");
    ok(y && sl_executor_next_event_ms(y) != INT64_MAX, "and will poll it");
    if (y) {
        struct sl_exec_job other = job_of(5, 0, sl, pl);
        is_int(sl_executor_signal(y, 4, 5, SIGKILL), 0, "the adopted task takes SIGKILL");
        n = wait_events(y, ev, 1);
        ok(n == 1 && ev[0].job_id == 4 && ev[0].attempt == 5 &&
               ev[0].exit_code == 128 + SIGKILL,
           "its end comes as an event, 128 + SIGKILL");
        sl_executor_release(y, 4, 5);
        ok(sl_executor_adopt(y, &j, st) == 0 && st[0].status == SL_EXEC_TASK_GONE,
           "once released, nothing of it is left to adopt");
        ok(sl_executor_adopt(y, &other, st) == 0 && st[0].status == SL_EXEC_TASK_GONE,
           "a job that never ran is gone");
    }
    sl_executor_destroy(y);
    sl_job_spec_destroy(s2);
    sl_job_spec_destroy(sl);
    sl_job_spec_destroy(bad);
}

int main(void)
{
    struct passwd *pw = getpwuid(geteuid());

    test_table();
    test_slurm_settings();
    test_sim_nodes_and_caps();
    test_sim_runs();
    test_sim_given_nodes();
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-executor.XXXXXX");
    if (!mkdtemp(tmpdir) || !pw) {
        ok(0, "a temp dir and this process's account");
        return done_testing();
    }
    chmod(tmpdir, 0755); /* a task run as another account reads nothing here */
    test_local(pw->pw_name);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
