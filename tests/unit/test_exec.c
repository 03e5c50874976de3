/*
 * test_exec.c - the local executor with real processes: exit codes, logs
 * and their cap, the task environment, signals to whole trees, re-adoption
 * after a daemon restart, cgroup limits, user switching, descriptor hygiene,
 * network profiles (an isolated task's namespace), dataset variables, and
 * GPU isolation: device rules (cgroup v1 devices, cgroup2 device programs)
 * tried against device nodes the test makes with mknod (major 195, no
 * driver: an allowed open gives ENXIO, a denied one EPERM).
 *
 * Everything lives in a fresh directory under /tmp. Waiting is polling with
 * short sleeps against a deadline, never a fixed long sleep.
 *
 * Why one file of over 1,500 lines: every case runs on one harness (the
 * executor over a temporary run dir, and the helpers that read process
 * trees, groups and descriptors from /proc), which is half the file's
 * reason to exist; split, each part would carry a copy of it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <pwd.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/exec/devices.h"
#include "../../src/exec/exec.h"
#include "../tap.h"

#define DEADLINE_MS 10000

static char tmpdir[64];
static char self_name[64]; /* this process's account */
static char run_dir[128];
static struct sl_exec *X;

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void path_in_tmp(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

static void log_path(char *buf, size_t size, int64_t job)
{
    snprintf(buf, size, "%s/logs/job-%lld.log", tmpdir, (long long)job);
}

static struct sl_exec_task task_for(int64_t job, char *const *argv,
                                    char *log, size_t log_size)
{
    struct sl_exec_task t;

    memset(&t, 0, sizeof(t));
    t.job_id = job;
    t.argv = argv;
    log_path(log, log_size, job);
    t.log_path = log;
    t.log_cap_bytes = 1 << 20;
    /* Most tests run their tasks as the test's own account, which the
     * executor allows only by name (test_identity checks the refusals). */
    t.allow_daemon_user = self_name;
    return t;
}

/* Poll until the task is final; returns poll's answer, or -ETIMEDOUT. */
static int wait_final(struct sl_exec *x, struct sl_exec_handle *h, int *code)
{
    int64_t deadline = sl_mono_ms() + DEADLINE_MS;

    for (;;) {
        int rc = sl_exec_poll(x, h, code);
        if (rc != 0)
            return rc;
        if (sl_mono_ms() > deadline)
            return -ETIMEDOUT;
        nap_ms(5);
    }
}

static int run_on(struct sl_exec *x, struct sl_exec_task *t, struct sl_exec_handle *h);

/* Start, wait, and return the exit code (or a negative error). */
static int run_to_end(struct sl_exec_task *t, struct sl_exec_handle *h)
{
    return run_on(X, t, h);
}

static char *slurp(const char *path)
{
    char *text = NULL;
    if (sl_read_file(path, 1 << 22, &text, NULL) < 0)
        return NULL;
    return text;
}

/* Wait until the file at 'path' contains 'needle'. */
static bool wait_for_text(const char *path, const char *needle)
{
    int64_t deadline = sl_mono_ms() + DEADLINE_MS;

    while (sl_mono_ms() < deadline) {
        char *text = slurp(path);
        bool found = text && strstr(text, needle);
        free(text);
        if (found)
            return true;
        nap_ms(5);
    }
    return false;
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    if (fd >= 0)
        close(fd);
}

/* state and process group of 'pid'; false when it does not exist. */
static bool proc_info(pid_t pid, char *state, long *pgrp)
{
    char path[64], buf[1024], *rp;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!(rp = strrchr(buf, ')')))
        return false;
    return sscanf(rp + 1, " %c %*d %ld", state, pgrp) == 2;
}

/* Live (non-zombie) members of process group 'pgid'; their pids go to
 * 'pids' (up to max). */
static int pgrp_members(pid_t pgid, pid_t *pids, int max)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char state;
        long pg;
        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
        if (pid <= 0 || !proc_info(pid, &state, &pg))
            continue;
        if (pg == pgid && state != 'Z' && state != 'X') {
            if (n < max)
                pids[n] = pid;
            n++;
        }
    }
    closedir(d);
    return n;
}

static bool wait_pgrp_size(pid_t pgid, int want, pid_t *pids, int max)
{
    int64_t deadline = sl_mono_ms() + DEADLINE_MS;

    while (sl_mono_ms() < deadline) {
        if (pgrp_members(pgid, pids, max) == want)
            return true;
        nap_ms(5);
    }
    return false;
}

/* The process is gone: no entry, a zombie, or a reused pid elsewhere. */
static bool proc_gone(pid_t pid, pid_t pgid)
{
    char state;
    long pg;
    return !proc_info(pid, &state, &pg) || state == 'Z' || state == 'X' ||
           pg != pgid;
}

static bool wait_gone(pid_t pid, pid_t pgid)
{
    int64_t deadline = sl_mono_ms() + DEADLINE_MS;

    while (sl_mono_ms() < deadline) {
        if (proc_gone(pid, pgid))
            return true;
        nap_ms(5);
    }
    return false;
}

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* --- tests -------------------------------------------------------------- */

static void test_exit_codes(void)
{
    char log[PATH_MAX];
    char *a_true[] = {"true", NULL};
    char *a_three[] = {"sh", "-c", "exit 3", NULL};
    char *a_kill[] = {"sh", "-c", "kill -9 $$", NULL};
    struct sl_exec_task t;
    struct sl_exec_handle h;

    t = task_for(1, a_true, log, sizeof(log));
    is_int(run_to_end(&t, &h), 0, "a task that exits 0 finishes with code 0");
    t = task_for(2, a_three, log, sizeof(log));
    is_int(run_to_end(&t, &h), 3, "a task that exits 3 finishes with code 3");
    t = task_for(3, a_kill, log, sizeof(log));
    is_int(run_to_end(&t, &h), 128 + 9,
           "a task killed by signal 9 finishes with code 137");
}

static void test_reap_then_poll(void)
{
    char log[PATH_MAX];
    char *argv[] = {"sh", "-c", "exit 4", NULL};
    struct sl_exec_task t = task_for(4, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    int code = -1, rc = 0;
    int64_t deadline = sl_mono_ms() + DEADLINE_MS;

    ok(sl_exec_start(X, &t, &h, &err) == 0, "a task starts");
    /* Let sl_exec_reap take the status first, as the daemon does on
     * SIGCHLD; poll must still report it. WNOWAIT only peeks. */
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        if ((waitid(P_PID, (id_t)h.shim_pid, &si,
                    WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid != 0) ||
            sl_mono_ms() > deadline)
            break;
        nap_ms(5);
    }
    sl_exec_reap(X, NULL);
    rc = wait_final(X, &h, &code);
    ok(rc == 1 && code == 4,
       "a status taken by sl_exec_reap is reported by the next poll");
    sl_exec_release(X, &h);
}

static void test_log_capture(void)
{
    char log[PATH_MAX], *text;
    char *argv[] = {"sh", "-c", "echo to-stdout; echo to-stderr >&2; umask", NULL};
    struct sl_exec_task t = task_for(10, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct stat st;

    is_int(run_to_end(&t, &h), 0, "a task writing to both streams exits 0");
    text = slurp(log);
    ok(text && strstr(text, "to-stdout\n"), "stdout lands in the log");
    ok(text && strstr(text, "to-stderr\n"), "stderr lands in the log");
    ok(stat(log, &st) == 0 && (st.st_mode & 0777) == 0600,
       "the log file has mode 0600, whatever the umask");
    ok(text && strstr(text, "\n0022\n"), "the task runs with umask 022");
    free(text);
}

static void test_log_cap(void)
{
    char log[PATH_MAX], *text;
    /* 2000 bytes of 'x' through a 100-byte cap. */
    char *argv[] = {"sh", "-c",
                    "i=0; while [ $i -lt 40 ]; do "
                    "printf '%049d\\n' 0 | tr 0 x; i=$((i+1)); done",
                    NULL};
    struct sl_exec_task t = task_for(11, argv, log, sizeof(log));
    struct sl_exec_handle h;
    const char *marker = "\n[sluice: log truncated at 100 bytes]\n";
    size_t len;

    t.log_cap_bytes = 100;
    is_int(run_to_end(&t, &h), 0, "a task writing past the cap exits 0");
    text = slurp(log);
    len = text ? strlen(text) : 0;
    is_int(len, 100 + strlen(marker),
           "the log holds the cap plus one marker line");
    ok(text && len >= strlen(marker) &&
           strcmp(text + len - strlen(marker), marker) == 0,
       "the log ends with the truncation marker");
    ok(text && strstr(text, "[sluice") == strstr(text, marker) + 1 &&
           !strstr(strstr(text, marker) + strlen(marker), "[sluice"),
       "the marker appears exactly once");
    free(text);
}

static void test_environment(void)
{
    char log[PATH_MAX], *text;
    char *script =
        "echo \"C=[$CUDA_VISIBLE_DEVICES] N=[$NVIDIA_VISIBLE_DEVICES] "
        "c=${CUDA_VISIBLE_DEVICES+set} n=${NVIDIA_VISIBLE_DEVICES+set} "
        "J=$SLUICE_JOB_ID T=$SLUICE_TASK_INDEX A=$SLUICE_ATTEMPT F=$FOO "
        "L=[$SLUICE_TEST_LEAK]\"; echo \"P=$PATH\"; "
        "echo \"G=[$SLUICE_GPUS] g=${SLUICE_GPUS+set} "
        "O=[$CUDA_DEVICE_ORDER]\"";
    char *argv[] = {"sh", "-c", script, NULL};
    char *env[] = {"FOO=bar", "SLUICE_JOB_ID=999",
                   "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLUICE_GPUS=0",
                   "CUDA_DEVICE_ORDER=FASTEST_FIRST", NULL};
    int gpus[] = {1, 3};
    struct sl_gpu_info host[4];
    struct sl_exec_task t = task_for(20, argv, log, sizeof(log));
    struct sl_exec_handle h;

    setenv("SLUICE_TEST_LEAK", "leaked", 1);
    t.env = env;
    t.gpus = gpus;
    t.ngpus = 2;
    t.task_index = 2;
    t.attempt = 1;
    is_int(run_to_end(&t, &h), 0, "the environment task exits 0");
    text = slurp(log);
    ok(text && strstr(text, "C=[1,3] N=[1,3] c=set n=set"),
       "CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES are \"1,3\" for GPUs "
       "{1,3}, whatever the job's env says");
    ok(text && strstr(text, "J=20 T=2 A=1"),
       "SLUICE_JOB_ID, SLUICE_TASK_INDEX and SLUICE_ATTEMPT are the "
       "executor's, not the job's");
    ok(text && strstr(text, "F=bar"), "the job's own env reaches the task");
    ok(text && strstr(text, "L=[]"), "the daemon's environment does not leak");
    ok(text && strstr(text, "P=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                            "/usr/bin:/sbin:/bin\n"),
       "PATH is the clean base");
    ok(text && strstr(text, "G=[1,3] g=set O=[PCI_BUS_ID]\n"),
       "SLUICE_GPUS is \"1,3\" and CUDA_DEVICE_ORDER PCI_BUS_ID, whatever "
       "the job's env says");
    free(text);

    /* GPUs with UUIDs, as NVML gives them: CUDA_VISIBLE_DEVICES names them
     * by UUID, SLUICE_GPUS keeps the indices. */
    memset(host, 0, sizeof(host));
    for (int i = 0; i < 4; i++) {
        host[i].index = i;
        host[i].dev_major = SL_EXEC_NVIDIA_MAJOR;
        host[i].dev_minor = i;
        snprintf(host[i].uuid, sizeof(host[i].uuid),
                 "GPU-0000000%d-aaaa-bbbb-cccc-ddddeeeeffff", i);
    }
    t = task_for(22, argv, log, sizeof(log));
    t.gpus = gpus;
    t.ngpus = 2;
    t.host_gpus = host;
    t.nhost_gpus = 4;
    is_int(run_to_end(&t, &h), 0, "a task given GPUs with UUIDs exits 0");
    text = slurp(log);
    ok(text && strstr(text,
                      "C=[GPU-00000001-aaaa-bbbb-cccc-ddddeeeeffff,"
                      "GPU-00000003-aaaa-bbbb-cccc-ddddeeeeffff] "
                      "N=[GPU-00000001-aaaa-bbbb-cccc-ddddeeeeffff,"
                      "GPU-00000003-aaaa-bbbb-cccc-ddddeeeeffff] "),
       "both *_VISIBLE_DEVICES list the GPUs' UUIDs when NVML gave them");
    ok(text && strstr(text, "G=[1,3] g=set O=[PCI_BUS_ID]\n"),
       "and SLUICE_GPUS still has the indices");
    free(text);
    host[3].uuid[0] = '\0';
    t = task_for(23, argv, log, sizeof(log));
    t.gpus = gpus;
    t.ngpus = 2;
    t.host_gpus = host;
    t.nhost_gpus = 4;
    is_int(run_to_end(&t, &h), 0, "a task given a GPU without UUID exits 0");
    text = slurp(log);
    ok(text && strstr(text, "C=[1,3] N=[1,3] "),
       "one GPU without a UUID: both *_VISIBLE_DEVICES fall back to indices");
    free(text);

    t = task_for(21, argv, log, sizeof(log));
    is_int(run_to_end(&t, &h), 0, "a GPU-less task exits 0");
    text = slurp(log);
    ok(text && strstr(text, "C=[] N=[] c=set n=set J=21 T=0 A=0"),
       "a GPU-less task sees both *_VISIBLE_DEVICES set to \"\"");
    ok(text && strstr(text, "G=[] g=set O=[PCI_BUS_ID]\n"),
       "and SLUICE_GPUS set to \"\", CUDA_DEVICE_ORDER to PCI_BUS_ID");
    free(text);
    unsetenv("SLUICE_TEST_LEAK");
}

static void test_missing_command(void)
{
    char log[PATH_MAX], *text;
    char *argv[] = {"sluice-no-such-command-xyz", "arg", NULL};
    struct sl_exec_task t = task_for(30, argv, log, sizeof(log));
    struct sl_exec_handle h;

    is_int(run_to_end(&t, &h), 127, "a missing command finishes with 127");
    text = slurp(log);
    ok(text && strstr(text, "sluice: exec sluice-no-such-command-xyz: No such "
                            "file or directory\n"),
       "the log says which command could not be run and why");
    free(text);
}

static void test_workdir(void)
{
    char log[PATH_MAX], dir[PATH_MAX], *text;
    struct sl_error err;
    char *argv[] = {"pwd", NULL};
    struct sl_exec_task t = task_for(31, argv, log, sizeof(log));
    struct sl_exec_handle h;

    t.workdir = "/tmp";
    is_int(run_to_end(&t, &h), 0, "a task with a workdir exits 0");
    text = slurp(log);
    ok(text && strcmp(text, "/tmp\n") == 0, "the task runs in its workdir");
    free(text);

    t = task_for(32, argv, log, sizeof(log));
    t.workdir = "/sluice-no-such-dir";
    is_int(sl_exec_start(X, &t, &h, &err), -ENOENT,
           "a missing workdir fails the start: no fallback to another directory");
    ok(strstr(err.text, "spec.workdir: cannot enter /sluice-no-such-dir as ") &&
           strstr(err.text, ": No such file or directory"),
       "the error names spec.workdir, the directory and why: %s", err.text);
    text = slurp(log);
    ok(!text || !strstr(text, "/\n"), "and the command did not run");
    free(text);

    /* A directory the executor's account may enter but the task's may not:
     * the chdir is the task's, after the identity switch. */
    if (geteuid() != 0) {
        skip(3, "entering as another account needs root");
        return;
    }
    path_in_tmp(dir, sizeof(dir), "private-wd");
    mkdir(dir, 0700);
    ok(chmod(dir, 0700) == 0, "(a directory only root may enter)");
    t = task_for(33, argv, log, sizeof(log));
    t.unix_user = "nobody";
    t.workdir = dir;
    is_int(sl_exec_start(X, &t, &h, &err), -EACCES,
           "a workdir the task's account cannot enter fails the start, though "
           "the executor could");
    ok(strstr(err.text, "spec.workdir: cannot enter ") && strstr(err.text, " as nobody: "),
       "naming the account: %s", err.text);
    rmdir(dir);
}

static void test_sigterm_tree(void)
{
    char log[PATH_MAX];
    char *argv[] = {"sh", "-c", "sleep 300 & sleep 300 & wait", NULL};
    struct sl_exec_task t = task_for(40, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    pid_t pids[8];
    int code = -1, all_gone = 1;

    ok(sl_exec_start(X, &t, &h, &err) == 0, "a tree of three processes starts");
    ok(wait_pgrp_size(h.pid, 3, pids, 8),
       "the shell and both sleeps share the task's process group");
    is_int(sl_exec_signal(X, &h, SIGTERM), 0, "SIGTERM is sent");
    is_int(wait_final(X, &h, &code), 1, "the tree finishes after SIGTERM");
    is_int(code, 128 + SIGTERM, "its code is 128+15");
    for (int i = 0; i < 3; i++)
        if (!wait_gone(pids[i], h.pid))
            all_gone = 0;
    ok(all_gone, "every process of the tree is gone");
    is_int(sl_exec_signal(X, &h, SIGTERM), -ESRCH,
           "signalling a finished task says nothing is left");
    sl_exec_release(X, &h);
}

static void test_sigterm_ignored(void)
{
    char log[PATH_MAX];
    char *argv[] = {"sh", "-c",
                    "trap '' TERM; echo ready; "
                    "while :; do sleep 0.05; done",
                    NULL};
    struct sl_exec_task t = task_for(41, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    int code = -1, still = 1;

    ok(sl_exec_start(X, &t, &h, &err) == 0, "a task ignoring SIGTERM starts");
    ok(wait_for_text(log, "ready\n"), "it has set its trap");
    is_int(sl_exec_signal(X, &h, SIGTERM), 0, "SIGTERM is sent");
    for (int i = 0; i < 20; i++) {
        if (sl_exec_poll(X, &h, &code) != 0)
            still = 0;
        nap_ms(10);
    }
    ok(still, "it keeps running after SIGTERM");
    is_int(sl_exec_signal(X, &h, SIGKILL), 0, "SIGKILL is sent");
    is_int(wait_final(X, &h, &code), 1, "it finishes after SIGKILL");
    is_int(code, 128 + SIGKILL, "its code is 137");
    sl_exec_release(X, &h);
}

static void test_background_child(void)
{
    char log[PATH_MAX], *text;
    char *argv[] = {"sh", "-c", "sleep 300 & echo done", NULL};
    struct sl_exec_task t = task_for(42, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    pid_t pids[4];
    int code = -1;
    int64_t t0 = sl_mono_ms();

    ok(sl_exec_start(X, &t, &h, &err) == 0,
       "a task leaving a background child that holds its stdout starts");
    is_int(wait_final(X, &h, &code), 1,
           "it is reported finished although the pipe stays open");
    ok(sl_mono_ms() - t0 < 5000, "and within seconds (%lld ms)",
       (long long)(sl_mono_ms() - t0));
    is_int(code, 0, "with the main process's code");
    text = slurp(log);
    ok(text && strstr(text, "done\n"), "its output is in the log");
    free(text);
    ok(wait_pgrp_size(h.pid, 0, pids, 4),
       "the background child is killed when the task ends");
    sl_exec_release(X, &h);
}

static void test_early_close(void)
{
    char log[PATH_MAX];
    char *argv[] = {"sh", "-c", "exec >&- 2>&-; sleep 0.2; exit 5", NULL};
    struct sl_exec_task t = task_for(43, argv, log, sizeof(log));
    struct sl_exec_handle h;

    is_int(run_to_end(&t, &h), 5,
           "a task closing its output early is still waited for");
}

static void test_lost_shim(void)
{
    char log[PATH_MAX];
    char *argv[] = {"sleep", "300", NULL};
    struct sl_exec_task t = task_for(44, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    int code = -1;

    ok(sl_exec_start(X, &t, &h, &err) == 0, "a task starts");
    kill(h.shim_pid, SIGKILL);
    is_int(wait_final(X, &h, &code), -ESRCH,
           "a task whose shim died without a record is lost");
    ok(wait_gone(h.pid, h.pid), "and the unsupervised task is killed");
    sl_exec_release(X, &h);
}

static void test_pid_file_and_release(void)
{
    char log[PATH_MAX], flag[PATH_MAX], pidf[PATH_MAX], exitf[PATH_MAX];
    char *text;
    char script[PATH_MAX + 64];
    char *argv[] = {"sh", "-c", script, NULL};
    struct sl_exec_task t = task_for(45, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    int pid = 0, shim = 0, code = -1, gpus = -1;
    unsigned long long start = 0;

    path_in_tmp(flag, sizeof(flag), "flag45");
    snprintf(script, sizeof(script),
             "while [ ! -e '%s' ]; do sleep 0.01; done", flag);
    snprintf(pidf, sizeof(pidf), "%s/45.0.0.pid", run_dir);
    snprintf(exitf, sizeof(exitf), "%s/45.0.0.exit", run_dir);
    ok(sl_exec_start(X, &t, &h, &err) == 0, "a task starts");
    text = slurp(pidf);
    ok(text &&
           sscanf(text, "%d %llu %d %d\n", &pid, &start, &shim, &gpus) ==
               4 &&
           pid == h.pid && start == h.start_time && shim == h.shim_pid &&
           h.start_time > 0 && gpus == (h.gpus_enforced ? 1 : 0),
       "the pid file holds \"<pid> <start time> <shim pid> <gpus "
       "enforced>\"");
    free(text);
    touch(flag);
    is_int(wait_final(X, &h, &code), 1, "it finishes");
    ok(file_exists(exitf), "the exit record exists");
    {
        struct stat sp, se, sr;
        ok(stat(pidf, &sp) == 0 && (sp.st_mode & 0777) == 0600 && stat(exitf, &se) == 0 &&
               (se.st_mode & 0777) == 0600 && stat(run_dir, &sr) == 0 &&
               (sr.st_mode & 0777) == 0700,
           "pid file and exit record are 0600, the run dir 0700, under umask 0");
    }
    sl_exec_release(X, &h);
    ok(!file_exists(pidf) && !file_exists(exitf),
       "release removes the pid file and the exit record");
}

static void test_adopt(void)
{
    char log[PATH_MAX], flag[PATH_MAX], script[PATH_MAX + 64];
    char *argv[] = {"sh", "-c", script, NULL};
    struct sl_exec_task t = task_for(50, argv, log, sizeof(log));
    struct sl_exec_handle h1, h2, h3;
    struct sl_error err;
    struct sl_exec *x1 = NULL, *x2 = NULL;
    int code = -1;

    path_in_tmp(flag, sizeof(flag), "flag50");
    snprintf(script, sizeof(script),
             "while [ ! -e '%s' ]; do sleep 0.01; done; echo bye; exit 7",
             flag);
    x1 = sl_exec_create(run_dir);
    ok(x1 && sl_exec_start(x1, &t, &h1, &err) == 0,
       "a task starts under a first executor");
    /* The daemon "crashes": its executor goes away, the task stays. */
    sl_exec_destroy(x1);
    x2 = sl_exec_create(run_dir);
    is_int(sl_exec_adopt(x2, 50, 0, 0, &h2, &code), 0,
           "a new executor on the same run_dir adopts the running task");
    ok(h2.pid == h1.pid && h2.start_time == h1.start_time &&
           h2.shim_pid == 0 && strcmp(h2.cgroup, h1.cgroup) == 0,
       "the adopted handle names the same process and cgroup");
    is_int(sl_exec_poll(x2, &h2, &code), 0, "the adopted task polls as running");
    touch(flag);
    code = -1;
    is_int(wait_final(x2, &h2, &code), 1, "the adopted task finishes");
    is_int(code, 7, "with its exit code");
    code = -1;
    is_int(sl_exec_adopt(x2, 50, 0, 0, &h3, &code), 1,
           "adopting a finished task reports it finished");
    is_int(code, 7, "with its exit code");
    ok(wait_for_text(log, "bye\n"), "its output reached the log");
    sl_exec_release(x2, &h2);
    /* The first executor's shim is still this process's child. */
    waitpid(h1.shim_pid, NULL, 0);
    is_int(sl_exec_adopt(x2, 51, 0, 0, &h3, &code), -ESRCH,
           "adopting a task that never started gives -ESRCH");
    sl_exec_destroy(x2);
}

static void test_bad_input(void)
{
    char log[PATH_MAX], pidf[PATH_MAX];
    char *argv[] = {"true", NULL}, *empty[] = {"", NULL};
    char *env[] = {"NOEQUALS", NULL};
    struct sl_exec_task t;
    struct sl_exec_handle h;
    struct sl_error err;

    t = task_for(60, NULL, log, sizeof(log));
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL, "no argv is refused");
    t = task_for(60, empty, log, sizeof(log));
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL, "an empty command is refused");
    t = task_for(60, argv, log, sizeof(log));
    t.log_cap_bytes = 0;
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL, "a zero log cap is refused");
    t = task_for(60, argv, log, sizeof(log));
    t.ngpus = SL_EXEC_MAX_GPUS + 1;
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL, "65 GPUs are refused");
    {
        struct sl_gpu_info host[2];
        int gpus[] = {2};
        memset(host, 0, sizeof(host));
        t = task_for(60, argv, log, sizeof(log));
        t.gpus = gpus;
        t.ngpus = 1;
        t.host_gpus = host;
        t.nhost_gpus = 2;
        is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
               "a GPU index past the host's GPUs is refused");
        ok(strstr(err.text, "host's 2 GPUs") != NULL,
           "and the message says so: %s", err.text);
        t.nhost_gpus = SL_EXEC_MAX_GPUS + 1;
        is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
               "65 host GPUs are refused");
    }
    t = task_for(60, argv, log, sizeof(log));
    t.env = env;
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "an env entry without '=' is refused");
    ok(strstr(err.text, "NOEQUALS") != NULL, "and the message names it: %s",
       err.text);
    snprintf(pidf, sizeof(pidf), "%s/60.0.0.pid", run_dir);
    ok(!file_exists(pidf), "a refused start leaves no pid file");
}

static bool fd_links_to(pid_t pid, const char *target, bool any_socket)
{
    char dir[64], link[PATH_MAX + 64], dest[PATH_MAX];
    DIR *d;
    struct dirent *e;
    bool found = false;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    if (!(d = opendir(dir)))
        return false;
    while ((e = readdir(d))) {
        ssize_t n;
        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        if ((n = readlink(link, dest, sizeof(dest) - 1)) < 0)
            continue;
        dest[n] = '\0';
        if (strcmp(dest, target) == 0 ||
            (any_socket && strncmp(dest, "socket:", 7) == 0))
            found = true;
    }
    closedir(d);
    return found;
}

static void test_descriptors(void)
{
    char log[PATH_MAX], flag[PATH_MAX], marker[PATH_MAX];
    char script[PATH_MAX + 64];
    char *argv[] = {"sh", "-c", script, NULL};
    struct sl_exec_task t = task_for(70, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    struct sockaddr_in sa;
    socklen_t slen = sizeof(sa);
    int lfd, mfd, lfd2, code = -1;

    path_in_tmp(flag, sizeof(flag), "flag70");
    path_in_tmp(marker, sizeof(marker), "daemon-db");
    snprintf(script, sizeof(script),
             "while [ ! -e '%s' ]; do sleep 0.01; done", flag);
    /* A "daemon" listening socket and database, inheritable on purpose. */
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
           listen(lfd, 4) == 0 &&
           getsockname(lfd, (struct sockaddr *)&sa, &slen) == 0,
       "a listening socket is open");
    mfd = open(marker, O_RDWR | O_CREAT, 0600);
    ok(sl_exec_start(X, &t, &h, &err) == 0, "a task starts");
    ok(!fd_links_to(h.shim_pid, marker, true),
       "the shim holds neither the daemon's socket nor its files");
    ok(!fd_links_to(h.pid, marker, true),
       "nor does the task");
    {
        char link[64], dest[64] = "";
        ssize_t n;
        snprintf(link, sizeof(link), "/proc/%d/fd/1", (int)h.shim_pid);
        n = readlink(link, dest, sizeof(dest) - 1);
        ok(n > 0 && strcmp(dest, "/dev/null") == 0,
           "the shim's stdout is /dev/null, not the daemon's: %s", dest);
    }
    close(lfd);
    lfd2 = socket(AF_INET, SOCK_STREAM, 0);
    ok(lfd2 >= 0 && bind(lfd2, (struct sockaddr *)&sa, sizeof(sa)) == 0,
       "a restarted daemon can bind its port while the task runs");
    if (lfd2 >= 0)
        close(lfd2);
    if (mfd >= 0)
        close(mfd);
    touch(flag);
    is_int(wait_final(X, &h, &code), 1, "the task finishes");
    sl_exec_release(X, &h);
}

/* First line of <mount><rel>/<file>. */
static bool read_first_line(const char *mount, const char *rel,
                            const char *file, char *buf, size_t size)
{
    char path[PATH_MAX], *text;
    snprintf(path, sizeof(path), "%s%s/%s", mount, rel, file);
    if (!(text = slurp(path)))
        return false;
    buf[0] = '\0';
    sl_strlcpy(buf, text, size);
    buf[strcspn(buf, "\n")] = '\0';
    free(text);
    return true;
}

static void test_cgroup_limits(void)
{
    char log[PATH_MAX], flag[PATH_MAX], script[PATH_MAX + 64];
    char mem[64] = "", cpu[64] = "", pids[64] = "", dir[PATH_MAX];
    char *argv[] = {"sh", "-c", script, NULL};
    struct sl_exec_task t = task_for(80, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    const char *why = NULL;
    int code = -1;
    bool v1;

    path_in_tmp(flag, sizeof(flag), "flag80");
    snprintf(script, sizeof(script),
             "while [ ! -e '%s' ]; do sleep 0.01; done", flag);
    t.cpu_milli = 500;
    t.mem_bytes = 64LL << 20;
    t.pids_max = 64;
    ok(sl_exec_start(X, &t, &h, &err) == 0, "a task with limits starts");
    if (!sl_exec_limits_available(X, &why)) {
        ok(why && *why, "without cgroups the executor says why: %s", why);
        ok(!h.limits_enforced && h.limits_note[0] &&
               (!h.cgroup[0] || sl_exec_gpus_available(X, NULL, NULL)),
           "and the handle says its limits are not enforced: %s",
           h.limits_note);
    } else {
        diag("cgroup %s", h.cgroup);
        ok(h.limits_enforced && h.cgroup[0] && !h.limits_note[0],
           "the handle says its limits are enforced");
        v1 = read_first_line("/sys/fs/cgroup/memory", h.cgroup,
                             "memory.limit_in_bytes", mem, sizeof(mem));
        if (v1) {
            read_first_line("/sys/fs/cgroup/cpu", h.cgroup,
                            "cpu.cfs_quota_us", cpu, sizeof(cpu));
            read_first_line("/sys/fs/cgroup/pids", h.cgroup, "pids.max",
                            pids, sizeof(pids));
            is_str(cpu, "50000", "cpu quota is 50 ms per 100 ms (v1)");
        } else {
            read_first_line("/sys/fs/cgroup", h.cgroup, "memory.max", mem,
                            sizeof(mem));
            read_first_line("/sys/fs/cgroup", h.cgroup, "cpu.max", cpu,
                            sizeof(cpu));
            read_first_line("/sys/fs/cgroup", h.cgroup, "pids.max", pids,
                            sizeof(pids));
            is_str(cpu, "50000 100000", "cpu.max is 50 ms per 100 ms (v2)");
        }
        is_str(mem, "67108864", "the memory limit reads back as 64 MiB");
        is_str(pids, "64", "the pids limit reads back as 64");
        {
            char path[64], *text;
            snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)h.pid);
            text = slurp(path);
            ok(text && strstr(text, h.cgroup), "the task runs in its cgroup");
            free(text);
        }
    }
    touch(flag);
    is_int(wait_final(X, &h, &code), 1, "the limited task finishes");
    snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s", h.cgroup);
    sl_exec_release(X, &h);
    if (h.cgroup[0]) {
        char dir2[PATH_MAX];
        snprintf(dir2, sizeof(dir2), "/sys/fs/cgroup%s", h.cgroup);
        ok(!file_exists(dir) && !file_exists(dir2),
           "release removes the task's cgroup");
    }

    /* Enforcement, not only bookkeeping: 300 MiB in a 32 MiB group. */
    if (sl_exec_limits_available(X, NULL) && access("/usr/bin/python3", X_OK) == 0) {
        char *hog[] = {"python3", "-c",
                       "b = bytearray(300 << 20)\n"
                       "for i in range(0, len(b), 4096): b[i] = 1\n",
                       NULL};
        t = task_for(81, hog, log, sizeof(log));
        t.mem_bytes = 32LL << 20;
        is_int(run_to_end(&t, &h), 128 + SIGKILL,
               "a task past its memory limit is killed (137)");
    }
}

static void test_user_switch(void)
{
    char log[PATH_MAX], *text;
    char *argv[] = {"sh", "-c", "id -u; pwd; echo \"$HOME $USER\"", NULL};
    struct sl_exec_task t = task_for(90, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;
    struct stat st;

    if (geteuid() != 0) {
        skip(1, "user switching needs root");
        return;
    }
    t.unix_user = "nobody";
    is_int(run_to_end(&t, &h), 0, "a task run as nobody exits 0");
    text = slurp(log);
    ok(text && strncmp(text, "65534\n", 6) == 0, "id -u says 65534");
    ok(text && strstr(text, "\n/\n/nonexistent nobody\n"),
       "HOME and USER are nobody's; an absent home falls back to /");
    free(text);
    ok(stat(log, &st) == 0 && st.st_uid == 65534,
       "the log belongs to the task user");
    t = task_for(91, argv, log, sizeof(log));
    t.unix_user = "sluice-no-such-user";
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "an unknown user is refused");
    ok(strstr(err.text, "sluice-no-such-user") != NULL,
       "and the message names it: %s", err.text);
}

/* No task runs with the executor's own identity (its uid, or root) unless
 * that account is the one allowed by name, and a task's account is not
 * another one than the executor's when it cannot switch. */
static void test_identity(void)
{
    char log[PATH_MAX], *text;
    char *argv[] = {"id", "-u", NULL};
    struct sl_exec_task t;
    struct sl_exec_handle h;
    struct sl_error err = {"", ""};

    t = task_for(95, argv, log, sizeof(log));
    t.allow_daemon_user = NULL;
    is_int(sl_exec_start(X, &t, &h, &err), -EPERM,
           "a task without an account, allowed none, does not run as the executor");
    ok(strstr(err.text, self_name) && strstr(err.text, "--allow-daemon-user"),
       "and the message names the account and the setting: %s", err.text);
    t = task_for(95, argv, log, sizeof(log));
    t.unix_user = self_name;
    t.allow_daemon_user = "sluice-other";
    is_int(sl_exec_start(X, &t, &h, &err), -EPERM,
           "naming the executor's own account is refused when another one is allowed");
    t = task_for(95, argv, log, sizeof(log));
    t.unix_user = "root";
    t.allow_daemon_user = "";
    is_int(sl_exec_start(X, &t, &h, &err), -EPERM, "a task as root is refused");
    ok(strstr(err.text, "uid 0") != NULL, "and the message says uid 0: %s", err.text);
    t = task_for(96, argv, log, sizeof(log));
    t.unix_user = self_name;
    is_int(run_to_end(&t, &h), 0, "the one allowed account runs");
    text = slurp(log);
    ok(text && strtoul(text, NULL, 10) == (unsigned long)geteuid(), "as the executor's uid");
    free(text);
    if (geteuid() == 0) {
        skip(2, "an unprivileged executor cannot be tested as root");
        return;
    }
    t = task_for(97, argv, log, sizeof(log));
    t.unix_user = "nobody";
    is_int(sl_exec_start(X, &t, &h, &err), -EPERM,
           "an executor that is not root refuses another account");
    ok(strstr(err.text, "not root") != NULL, "saying it cannot switch: %s", err.text);
}

static void test_signal_state(void)
{
    char log[PATH_MAX], *text;
    char *argv[] = {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL};
    struct sl_exec_task t = task_for(100, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sigaction sa, old_pipe;
    sigset_t block, old_mask;

    /* A daemon typically ignores SIGPIPE and blocks signals in its threads. */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old_mask);
    is_int(run_to_end(&t, &h), 0, "a task reading its signal state exits 0");
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    text = slurp(log);
    /* Signals 32 and 33 are glibc's own (thread cancellation, setxid):
     * glibc refuses to change them, and every glibc process sets them up
     * again at start, so only the standard signals 1-31 are checked. */
    {
        const char *blk = text ? strstr(text, "SigBlk:\t") : NULL;
        const char *ign = text ? strstr(text, "SigIgn:\t") : NULL;
        unsigned long long blk_mask = blk ? strtoull(blk + 8, NULL, 16) : ~0ULL;
        unsigned long long ign_mask = ign ? strtoull(ign + 8, NULL, 16) : ~0ULL;
        if (!ok((blk_mask & 0x7fffffffULL) == 0 && (ign_mask & 0x7fffffffULL) == 0,
                "the daemon's blocked and ignored signals do not reach the task"))
            diag("the task saw: %s", text ? text : "(no log)");
    }
    free(text);
}

static atomic_int hammer_stop; /* set by the main thread, read by the hammer */

static void *hammer(void *arg)
{
    (void)arg;
    while (!hammer_stop) {
        char buf[64];
        void *p = malloc(4096);
        snprintf(buf, sizeof(buf), "%p", p);
        free(p);
    }
    return NULL;
}

static void test_threads(void)
{
    char log[PATH_MAX];
    char *argv[] = {"true", NULL};
    pthread_t th[2];
    int good = 0;

    hammer_stop = 0;
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, hammer, NULL);
    for (int i = 0; i < 8; i++) {
        struct sl_exec_task t = task_for(110 + i, argv, log, sizeof(log));
        struct sl_exec_handle h;
        int rc = run_to_end(&t, &h);
        if (rc == 0)
            good++;
        else
            diag("task %d of 8 ended with %d", i, rc);
    }
    hammer_stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    is_int(good, 8,
           "tasks start and finish while other threads hold the allocator");
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* --- network profiles and datasets --------------------------------------- */

static bool have_python3(void)
{
    return access("/usr/bin/python3", X_OK) == 0 ||
           access("/usr/local/bin/python3", X_OK) == 0;
}

/* Whether this process can make a network namespace, tried directly. */
static bool can_unshare_net(void)
{
    int st = 0;
    pid_t pid = fork();

    if (pid == 0)
        _exit(unshare(CLONE_NEWNET) == 0 ? 0 : 1);
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0;
}

/* A listener on 127.0.0.1 of the test's (the host's) namespace. */
static int listen_loopback(int *port)
{
    struct sockaddr_in sa;
    socklen_t slen = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &slen) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* The interfaces /proc/net/dev listed between the lines "DEV" and "END" of
 * 'text' (that file is per network namespace): how many, and whether "lo"
 * is one of them. */
static int count_ifaces(const char *text, bool *has_lo)
{
    const char *p = text ? strstr(text, "DEV\n") : NULL;
    const char *end = p ? strstr(p, "END\n") : NULL;
    int n = 0;

    *has_lo = false;
    if (!p || !end)
        return -1;
    for (p += 4; p < end;) {
        const char *nl = strchr(p, '\n'), *colon = strchr(p, ':');
        if (!nl || nl > end)
            break;
        if (colon && colon < nl) {
            n++;
            while (*p == ' ')
                p++;
            if (strncmp(p, "lo:", 3) == 0)
                *has_lo = true;
        }
        p = nl + 1;
    }
    return n;
}

/* A script that tries the host's listener on 'port', then a listener of its
 * own on 127.0.0.1, then lists its interfaces. */
static void net_script(char *buf, size_t size, int port, bool python)
{
    if (!python) {
        snprintf(buf, size, "echo DEV; cat /proc/net/dev; echo END");
        return;
    }
    snprintf(buf, size,
             "python3 -c '\n"
             "import socket\n"
             "s = socket.socket(); s.settimeout(3)\n"
             "try:\n"
             "    s.connect((\"127.0.0.1\", %d)); print(\"host:connected\")\n"
             "except OSError as e:\n"
             "    print(\"host:failed\", e.errno)\n"
             "l = socket.socket(); l.bind((\"127.0.0.1\", 0)); l.listen(1)\n"
             "c = socket.socket(); c.settimeout(3); c.connect(l.getsockname())\n"
             "a, _ = l.accept(); c.sendall(b\"hi\")\n"
             "print(\"lo:\" + a.recv(2).decode())\n"
             "'; echo DEV; cat /proc/net/dev; echo END",
             port);
}

static void test_network_isolated(void)
{
    char log[PATH_MAX], script[2048], *text;
    char *argv[] = {"sh", "-c", script, NULL};
    struct sl_exec_task t;
    struct sl_exec_handle h;
    const char *why = NULL;
    bool avail, python = have_python3(), has_lo;
    int lfd, port = 0, n;

    avail = sl_exec_netns_available(X, &why);
    diag("network namespaces %s%s", avail ? "available" : "unavailable: ",
         avail ? "" : why);
    ok(avail == can_unshare_net(),
       "sl_exec_netns_available agrees with a direct unshare(CLONE_NEWNET)");
    ok(avail ? why && !*why : why && *why,
       "and gives a reason exactly when it says no: %s", why ? why : "-");
    lfd = listen_loopback(&port);
    ok(lfd >= 0, "the test listens on 127.0.0.1:%d of the host", port);
    if (!python)
        diag("python3 not installed: the TCP checks are skipped");
    net_script(script, sizeof(script), port, python);

    t = task_for(200, argv, log, sizeof(log));
    is_int(run_to_end(&t, &h), 0, "an egress task exits 0");
    text = slurp(log);
    is_int(h.network_enforced, SL_EXEC_NET_EGRESS, "egress is in force");
    is_str(h.network_note, "", "with no note");
    n = count_ifaces(text, &has_lo);
    ok(n >= 1 && has_lo, "an egress task sees the host's interfaces (%d)", n);
    if (python)
        ok(text && strstr(text, "host:connected"),
           "an egress task reaches a listener on the host's 127.0.0.1");
    else
        skip(1, "python3 is not installed");
    free(text);

    t = task_for(201, argv, log, sizeof(log));
    t.network = SL_EXEC_NET_ISOLATED;
    is_int(run_to_end(&t, &h), 0, "an isolated task exits 0");
    text = slurp(log);
    n = count_ifaces(text, &has_lo);
    if (avail) {
        is_int(h.network_enforced, SL_EXEC_NET_ISOLATED,
               "isolation is in force when namespaces are available");
        is_str(h.network_note, "", "with no note");
        ok(n == 1 && has_lo, "an isolated task sees only lo (%d interface(s))",
           n);
        if (python) {
            ok(text && strstr(text, "host:failed"),
               "an isolated task cannot reach the host's 127.0.0.1 listener");
            ok(text && strstr(text, "lo:hi"),
               "its own loopback is up: it binds and connects to 127.0.0.1");
        } else {
            skip(2, "python3 is not installed");
        }
    } else {
        is_int(h.network_enforced, SL_EXEC_NET_EGRESS,
               "without namespaces an isolated task runs on the host's "
               "network");
        ok(strncmp(h.network_note, "network isolation not enforced: ", 32) ==
                   0 &&
               strstr(h.network_note, why),
           "and the handle says so: %s", h.network_note);
        ok(n >= 1 && has_lo, "it sees the host's interfaces (%d)", n);
        if (python)
            ok(text && strstr(text, "host:connected"),
               "and reaches the host's listener, as the note says");
        else
            skip(1, "python3 is not installed");
        skip(1, "network namespaces are not available");
    }
    free(text);
    if (lfd >= 0)
        close(lfd);

    if (!avail || geteuid() != 0) {
        skip(1, "isolation of another user's task needs root and namespaces");
        return;
    }
    net_script(script, sizeof(script), 0, false);
    t = task_for(202, argv, log, sizeof(log));
    t.network = SL_EXEC_NET_ISOLATED;
    t.unix_user = "nobody";
    is_int(run_to_end(&t, &h), 0, "an isolated task run as nobody exits 0");
    text = slurp(log);
    n = count_ifaces(text, &has_lo);
    ok(n == 1 && has_lo, "and it too sees only lo (%d interface(s))", n);
    free(text);
}

static void test_network_adopt(void)
{
    char log[PATH_MAX], flag[PATH_MAX], script[PATH_MAX + 64];
    char *argv[] = {"sh", "-c", script, NULL};
    struct sl_exec_task t = task_for(210, argv, log, sizeof(log));
    struct sl_exec_handle h1, h2;
    struct sl_error err;
    struct sl_exec *x2;
    int code = -1;

    if (!sl_exec_netns_available(X, NULL)) {
        skip(1, "network namespaces are not available");
        return;
    }
    path_in_tmp(flag, sizeof(flag), "flag210");
    snprintf(script, sizeof(script),
             "while [ ! -e '%s' ]; do sleep 0.01; done", flag);
    t.network = SL_EXEC_NET_ISOLATED;
    ok(sl_exec_start(X, &t, &h1, &err) == 0, "an isolated task starts");
    x2 = sl_exec_create(run_dir);
    ok(x2 && sl_exec_adopt(x2, 210, 0, 0, &h2, &code) == 0 &&
           h2.network_enforced == SL_EXEC_NET_ISOLATED,
       "an executor that adopts it sees it isolated");
    touch(flag);
    is_int(wait_final(X, &h1, &code), 1, "the task finishes");
    sl_exec_release(X, &h1);
    sl_exec_destroy(x2);
}

/* Capabilities without CAP_SYS_ADMIN, as in a container that lacks it. */
static int drop_sys_admin(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];

    memset(data, 0, sizeof(data));
    if (syscall(SYS_capget, &hdr, data) < 0)
        return -1;
    data[0].effective &= ~(1U << CAP_SYS_ADMIN);
    data[0].permitted &= ~(1U << CAP_SYS_ADMIN);
    data[0].inheritable &= ~(1U << CAP_SYS_ADMIN);
    return (int)syscall(SYS_capset, &hdr, data);
}

static void test_network_unshare_fails(void)
{
    char log[PATH_MAX], *text;
    char *argv[] = {"sh", "-c", "echo ran-with-network", NULL};
    int st = 0;
    pid_t pid;

    if (!sl_exec_netns_available(X, NULL) || geteuid() != 0) {
        skip(2, "needs root and network namespaces");
        return;
    }
    log_path(log, sizeof(log), 220);
    /* In a child of the test: the executor's probe said yes, then the
     * process lost the capability, so the task child's unshare fails. */
    pid = fork();
    if (pid == 0) {
        struct sl_exec_task t = task_for(220, argv, log, sizeof(log));
        struct sl_exec_handle h;
        struct sl_error err;
        int code = -1;

        t.network = SL_EXEC_NET_ISOLATED;
        if (drop_sys_admin() < 0)
            _exit(200);
        if (sl_exec_start(X, &t, &h, &err) < 0)
            _exit(201);
        if (h.network_enforced != SL_EXEC_NET_ISOLATED)
            _exit(202);
        if (wait_final(X, &h, &code) != 1)
            _exit(203);
        sl_exec_release(X, &h);
        _exit(code);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = -1;
    ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127,
       "an isolated task whose unshare fails exits 127 (status %d)",
       st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    text = slurp(log);
    ok(text &&
           strstr(text, "sluice: cannot isolate the network: "
                        "unshare(CLONE_NEWNET): Operation not permitted\n") &&
           !strstr(text, "ran-with-network"),
       "it never ran, and its log says why: %s", text ? text : "(none)");
    free(text);
}

static void test_network_internal(void)
{
    char log[PATH_MAX];
    char *argv[] = {"true", NULL};
    struct sl_exec_task t = task_for(230, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;

    t.network = SL_EXEC_NET_INTERNAL;
    is_int(run_to_end(&t, &h), 0, "an internal task runs");
    is_int(h.network_enforced, SL_EXEC_NET_EGRESS,
           "with the host's network in force");
    is_str(h.network_note,
           "network profile internal is not enforced by the local executor "
           "(no firewall rules); the task has the host's network",
           "and the handle says internal is not enforced");
    t = task_for(231, argv, log, sizeof(log));
    t.network = 3;
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "an unknown network profile is refused");
    ok(strstr(err.text, "network") != NULL, "and the message says so: %s",
       err.text);
}

static void test_datasets(void)
{
    char log[PATH_MAX], *text;
    char *script =
        "echo \"D=[$SLUICE_DATASETS] d=${SLUICE_DATASETS+set} "
        "I=$SLUICE_DATASET_IMAGENET IM=$SLUICE_DATASET_IMAGENET_MODE "
        "C=$SLUICE_DATASET_MY_CORPUS CM=$SLUICE_DATASET_MY_CORPUS_MODE "
        "F=[${SLUICE_DATASET_FAKE-unset}]\"";
    char *argv[] = {"sh", "-c", script, NULL};
    char *env[] = {"SLUICE_DATASET_FAKE=/etc", "SLUICE_DATASETS=fake@1",
                   NULL};
    const struct sl_exec_dataset ds[] = {
        {"imagenet", "2024-01", "/data/imagenet", false},
        {"my-corpus", "v2.1", "/data/corpus", true},
    };
    struct sl_exec_dataset bad[2];
    struct sl_exec_task t = task_for(240, argv, log, sizeof(log));
    struct sl_exec_handle h;
    struct sl_error err;

    t.env = env;
    t.datasets = ds;
    t.ndatasets = 2;
    is_int(run_to_end(&t, &h), 0, "a task with two datasets exits 0");
    text = slurp(log);
    ok(text && strstr(text, "D=[imagenet@2024-01,my-corpus@v2.1:rw] d=set "),
       "SLUICE_DATASETS lists name@version, with :rw for a writable one");
    ok(text && strstr(text, "I=/data/imagenet IM=ro C=/data/corpus CM=rw "),
       "SLUICE_DATASET_<NAME> is the path and _MODE ro or rw; '-' -> '_'");
    ok(text && strstr(text, "F=[unset]"),
       "the job's own SLUICE_DATASET* entries are dropped");
    free(text);

    t = task_for(241, argv, log, sizeof(log));
    is_int(run_to_end(&t, &h), 0, "a task without datasets exits 0");
    text = slurp(log);
    ok(text && strstr(text, "D=[] d=set"),
       "a task without datasets sees SLUICE_DATASETS set to \"\"");
    free(text);

    t = task_for(242, argv, log, sizeof(log));
    t.datasets = bad;
    t.ndatasets = 2;
    bad[0] = (struct sl_exec_dataset){"a-b", "1", "/d/a", false};
    bad[1] = (struct sl_exec_dataset){"a_b", "1", "/d/b", false};
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "datasets a-b and a_b are refused");
    ok(strstr(err.text, "SLUICE_DATASET_A_B") != NULL,
       "they would set the same variable: %s", err.text);
    bad[1] = (struct sl_exec_dataset){"a-b-mode", "1", "/d/b", false};
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "datasets a-b and a-b-mode are refused");
    ok(strstr(err.text, "SLUICE_DATASET_A_B_MODE") != NULL,
       "the path of one would be the mode of the other: %s", err.text);
    t.ndatasets = 1;
    bad[0] = (struct sl_exec_dataset){"a b", "1", "/d/a", false};
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "a dataset name with a space is refused");
    bad[0] = (struct sl_exec_dataset){"a", "1,2", "/d/a", false};
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "a version with a comma is refused");
    bad[0] = (struct sl_exec_dataset){"a", "1", "d/a", false};
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "a relative dataset path is refused");
    t.datasets = NULL;
    is_int(sl_exec_start(X, &t, &h, &err), -EINVAL,
           "a dataset count without a list is refused");
}

/* --- GPU isolation -------------------------------------------------------- */

static void test_gpu_deny_list(void)
{
    struct sl_gpu_info host[4];
    struct sl_dev_deny d;
    char note[160] = "";
    int own1[] = {1}, own0[] = {0}, own03[] = {0, 3};
    bool all = true;

    memset(host, 0, sizeof(host));
    for (int i = 0; i < 4; i++) {
        host[i].dev_major = SL_EXEC_NVIDIA_MAJOR;
        host[i].dev_minor = i;
    }
    is_int(sl_dev_deny_gpus(host, 4, own1, 1, &d, note, sizeof(note)), 0,
           "the deny list of GPU 1 of four is built");
    ok(sl_dev_denied(&d, 195, 0) && !sl_dev_denied(&d, 195, 1) &&
           sl_dev_denied(&d, 195, 2) && sl_dev_denied(&d, 195, 3),
       "it denies 195:0, 195:2, 195:3 and not the task's own 195:1");
    ok(sl_dev_denied(&d, 195, 4) && sl_dev_denied(&d, 195, 253),
       "and every other GPU minor of 195, up to 253");
    ok(!sl_dev_denied(&d, 195, 254) && !sl_dev_denied(&d, 195, 255),
       "but neither nvidia-modeset 195:254 nor nvidiactl 195:255");
    ok(!sl_dev_denied(&d, 1, 3) && !sl_dev_denied(&d, 196, 0),
       "nor any other major (/dev/null 1:3, 196:0)");
    is_int(d.n, 2, "as two ranges (195:0, 195:2-253)");

    is_int(sl_dev_deny_gpus(host, 4, NULL, 0, &d, note, sizeof(note)), 0,
           "the deny list of a task without GPUs is built");
    for (uint32_t m = 0; m <= 253; m++)
        all = all && sl_dev_denied(&d, 195, m);
    ok(all && !sl_dev_denied(&d, 195, 255),
       "it denies every GPU minor 195:0-253, not the control device");
    is_int(sl_dev_deny_gpus(NULL, 0, NULL, 0, &d, note, sizeof(note)), 0,
           "a host without GPUs still gets the NVIDIA range denied");
    ok(sl_dev_denied(&d, 195, 0), "so a GPU nobody declared stays hidden");

    /* Minors as NVML reports them need not follow the indices. */
    host[0].dev_minor = 2;
    host[2].dev_minor = 0;
    is_int(sl_dev_deny_gpus(host, 4, own0, 1, &d, note, sizeof(note)), 0,
           "GPU 0 whose device is nvidia2");
    ok(!sl_dev_denied(&d, 195, 2) && sl_dev_denied(&d, 195, 0),
       "is allowed by its minor number (195:2), not by its index");
    host[0].dev_minor = 0;
    host[2].dev_minor = 2;

    /* A GPU under another major is denied by its own number. */
    host[3].dev_major = 240;
    host[3].dev_minor = 7;
    is_int(sl_dev_deny_gpus(host, 4, own1, 1, &d, note, sizeof(note)), 0,
           "a host GPU under another major");
    ok(sl_dev_denied(&d, 240, 7) && !sl_dev_denied(&d, 240, 6),
       "is denied exactly (240:7) to a task that was not given it");
    is_int(sl_dev_deny_gpus(host, 4, own03, 2, &d, note, sizeof(note)), 0,
           "GPUs 0 and 3 (195:0 and 240:7)");
    ok(!sl_dev_denied(&d, 240, 7) && !sl_dev_denied(&d, 195, 0) &&
           sl_dev_denied(&d, 195, 1) && sl_dev_denied(&d, 195, 3),
       "allow their own devices and deny the others");
    host[3].dev_major = SL_EXEC_NVIDIA_MAJOR;
    host[3].dev_minor = 3;

    host[1].dev_major = host[1].dev_minor = -1;
    is_int(sl_dev_deny_gpus(host, 4, own1, 1, &d, note, sizeof(note)),
           -ENODEV, "a task's GPU without a device number cannot be isolated");
    ok(strstr(note, "GPU 1") != NULL, "and the note names it: %s", note);
    is_int(sl_dev_deny_gpus(host, 4, own0, 1, &d, note, sizeof(note)), 0,
           "another task's GPU without a device number is no obstacle");
    ok(sl_dev_denied(&d, 195, 1), "it is hidden by the NVIDIA range");
    is_int(sl_dev_deny_gpus(NULL, 0, own1, 1, &d, note, sizeof(note)),
           -ENODEV, "GPUs that are not this host's cannot be isolated");
    is_int(sl_dev_deny_gpus(host, 1, own1, 1, &d, note, sizeof(note)),
           -EINVAL, "an index past the host's GPUs is refused");
    {
        struct bpf_insn insns[SL_DEVBPF_MAX_INSNS];
        host[1].dev_major = SL_EXEC_NVIDIA_MAJOR;
        host[1].dev_minor = 1;
        sl_dev_deny_gpus(host, 4, own1, 1, &d, note, sizeof(note));
        /* 5 to load, 4 + 3 for the two ranges, 4 to answer */
        is_int(sl_devbpf_build(&d, insns, SL_DEVBPF_MAX_INSNS), 16,
               "the device program of two ranges has 16 instructions");
        is_int(sl_devbpf_build(&d, insns, 10), -ENOSPC,
               "and does not fit in 10");
    }
}

/* Nodes the GPU tests open: nvidia0..3 (195:0..3) and nvidiactl (195:255)
 * in a directory anyone may enter. No driver is loaded, so an open the
 * device rules allow fails with ENXIO, one they deny with EPERM. */
static char gpu_dir[64];

static bool make_gpu_nodes(void)
{
    char path[128];

    snprintf(gpu_dir, sizeof(gpu_dir), "/tmp/sluice-test-gpus-XXXXXX");
    if (!mkdtemp(gpu_dir) || chmod(gpu_dir, 0755) < 0)
        return false;
    for (int i = 0; i <= 4; i++) {
        int minor = i < 4 ? i : 255;
        if (i < 4)
            snprintf(path, sizeof(path), "%s/nvidia%d", gpu_dir, i);
        else
            snprintf(path, sizeof(path), "%s/nvidiactl", gpu_dir);
        if (mknod(path, S_IFCHR | 0666, makedev(SL_EXEC_NVIDIA_MAJOR,
                                                (unsigned)minor)) < 0 ||
            chmod(path, 0666) < 0)
            return false;
    }
    return true;
}

/* Tries every node, then prints the GPU variables: "nvidia0=<error>" etc.,
 * "null=[]" when /dev/null opens. */
#define GPU_SCRIPT                                                         \
    "for n in nvidia0 nvidia1 nvidia2 nvidia3 nvidiactl; do "              \
    "r=$(cat \"$D/$n\" 2>&1 </dev/null >/dev/null); "                      \
    "echo \"$n=${r##*: }\"; done; "                                        \
    "r=$(cat /dev/null 2>&1); echo \"null=[$r]\"; "                        \
    "echo \"O=$CUDA_DEVICE_ORDER G=$SLUICE_GPUS C=$CUDA_VISIBLE_DEVICES\""

#define ALLOWED "No such device or address"
#define DENIED "Operation not permitted"

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = text; p && (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
            return true;
    return false;
}

static bool node_is(const char *text, const char *node, const char *what)
{
    char line[96];

    snprintf(line, sizeof(line), "%s=%s", node, what);
    return text && has_line(text, line);
}

/* Start on executor 'x', wait, and return the exit code (or a negative
 * error). */
static int run_on(struct sl_exec *x, struct sl_exec_task *t,
                  struct sl_exec_handle *h)
{
    struct sl_error err = {"", ""};
    int code = -1, rc;

    if ((rc = sl_exec_start(x, t, h, &err)) < 0) {
        diag("start: %s", err.text);
        return rc;
    }
    rc = wait_final(x, h, &code);
    sl_exec_release(x, h);
    return rc == 1 ? code : rc;
}

/* The four fake GPUs of --fake-gpus 4xH100, with their device numbers. */
static bool fake_host(struct sl_host_info *info)
{
    struct sl_error err = {"", ""};

    return sl_host_discover("4xH100", info, &err) == 0 && info->ngpus == 4;
}

/* The device hierarchy of mechanism 'want' on this host. */
static const char *dev_mount(const char *want)
{
    struct stat st;

    if (strcmp(want, "v1") == 0)
        return "/sys/fs/cgroup/devices";
    return stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0
               ? "/sys/fs/cgroup"
               : "/sys/fs/cgroup/unified";
}

static void test_gpu_isolation(const char *want, int64_t job0)
{
    char rd[PATH_MAX], log[PATH_MAX], denv[128], flag[128];
    char script[512], *text;
    char *argv[] = {"sh", "-c", GPU_SCRIPT, NULL};
    char *wait_argv[] = {"sh", "-c", script, NULL};
    char *env[] = {denv, NULL};
    const char *why = "", *mech = "";
    struct sl_host_info info;
    struct sl_exec_task t;
    struct sl_exec_handle h, h2;
    struct sl_exec *x, *x2;
    int one[] = {1}, two[] = {2}, code = -1;

    snprintf(rd, sizeof(rd), "%s/run-%s", tmpdir, want);
    setenv("SLUICE_DEVICE_CGROUP", want, 1);
    x = sl_exec_create(rd);
    unsetenv("SLUICE_DEVICE_CGROUP");
    ok(x != NULL, "an executor asked for %s device rules is created", want);
    if (!x)
        return;
    sl_exec_gpus_available(x, &why, &mech);
    diag("%s device rules: %s%s%s", want, mech, *why ? ": " : "", why);
    if (geteuid() != 0 || !gpu_dir[0] || !fake_host(&info) ||
        !sl_exec_gpus_available(x, NULL, NULL)) {
        char reason[256];
        snprintf(reason, sizeof(reason), "%s device rules: %s", want,
                 geteuid() != 0 ? "not root" : !gpu_dir[0] ? "no mknod" : why);
        skip(1, reason);
        sl_exec_destroy(x);
        return;
    }
    is_str(mech, strcmp(want, "v1") == 0 ? "cgroup1 devices" : "cgroup2 bpf",
           "and uses %s", want);
    ok(info.gpus[1].dev_major == 195 && info.gpus[1].dev_minor == 1,
       "fake GPU 1 is the device 195:1");
    snprintf(denv, sizeof(denv), "D=%s", gpu_dir);

    /* GPU 1 of four, as an unprivileged user. */
    t = task_for(job0, argv, log, sizeof(log));
    t.env = env;
    t.gpus = one;
    t.ngpus = 1;
    t.host_gpus = info.gpus;
    t.nhost_gpus = info.ngpus;
    t.unix_user = "nobody";
    is_int(run_on(x, &t, &h), 0, "%s: a task given GPU 1 of 4 exits 0", want);
    ok(h.gpus_enforced && !h.gpus_note[0],
       "%s: its handle says GPU isolation is enforced", want);
    text = slurp(log);
    ok(node_is(text, "nvidia1", ALLOWED),
       "%s: it can open nvidia1 (ENXIO: allowed, no driver)", want);
    ok(node_is(text, "nvidia0", DENIED) && node_is(text, "nvidia2", DENIED) &&
           node_is(text, "nvidia3", DENIED),
       "%s: it gets EPERM on nvidia0, nvidia2 and nvidia3", want);
    ok(node_is(text, "nvidiactl", ALLOWED),
       "%s: the control device 195:255 stays allowed", want);
    ok(text && has_line(text, "null=[]"), "%s: /dev/null opens", want);
    ok(text && has_line(text, "O=PCI_BUS_ID G=1 C=1"),
       "%s: CUDA_DEVICE_ORDER=PCI_BUS_ID, SLUICE_GPUS and "
       "CUDA_VISIBLE_DEVICES are 1",
       want);
    if (!ok(text && strstr(text, "nvidia0=") && !strstr(text, "sluice:"),
            "%s: the task ran", want))
        diag("%s", text ? text : "(no log)");
    free(text);

    /* No GPUs: none of them. */
    t = task_for(job0 + 1, argv, log, sizeof(log));
    t.env = env;
    t.host_gpus = info.gpus;
    t.nhost_gpus = info.ngpus;
    t.unix_user = "nobody";
    is_int(run_on(x, &t, &h), 0, "%s: a task without GPUs exits 0", want);
    text = slurp(log);
    ok(h.gpus_enforced && node_is(text, "nvidia0", DENIED) &&
           node_is(text, "nvidia1", DENIED) &&
           node_is(text, "nvidia2", DENIED) &&
           node_is(text, "nvidia3", DENIED),
       "%s: a task without GPUs gets EPERM on every one of them", want);
    ok(node_is(text, "nvidiactl", ALLOWED) && has_line(text, "null=[]"),
       "%s: and still opens nvidiactl and /dev/null", want);
    free(text);

    /* As root: the rules hold, but root could lift them. */
    t = task_for(job0 + 2, argv, log, sizeof(log));
    t.env = env;
    t.gpus = one;
    t.ngpus = 1;
    t.host_gpus = info.gpus;
    t.nhost_gpus = info.ngpus;
    is_int(run_on(x, &t, &h), 0, "%s: a task run as root exits 0", want);
    text = slurp(log);
    ok(node_is(text, "nvidia0", DENIED) && node_is(text, "nvidia1", ALLOWED),
       "%s: its device rules are in force too", want);
    ok(!h.gpus_enforced && strstr(h.gpus_note, "runs as root"),
       "%s: but its handle does not claim isolation: %s", want,
       h.gpus_note);
    free(text);

    /* Re-adoption reads back what holds. */
    snprintf(flag, sizeof(flag), "%s/flag-%s", gpu_dir, want);
    snprintf(script, sizeof(script),
             "while [ ! -e '%s' ]; do sleep 0.01; done", flag);
    t = task_for(job0 + 3, wait_argv, log, sizeof(log));
    t.gpus = two;
    t.ngpus = 1;
    t.host_gpus = info.gpus;
    t.nhost_gpus = info.ngpus;
    t.unix_user = "nobody";
    {
        struct sl_error err = {"", ""};
        ok(sl_exec_start(x, &t, &h, &err) == 0 && h.gpus_enforced,
           "%s: an isolated task starts", want);
    }
    setenv("SLUICE_DEVICE_CGROUP", want, 1);
    x2 = sl_exec_create(rd);
    unsetenv("SLUICE_DEVICE_CGROUP");
    ok(x2 && sl_exec_adopt(x2, job0 + 3, 0, 0, &h2, &code) == 0 &&
           h2.gpus_enforced && !h2.gpus_note[0],
       "%s: an executor that adopts it finds it isolated", want);
    {
        /* Out of its group, as only a privileged process can do. */
        char procs[128], num[24];
        int fd;
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", dev_mount(want));
        snprintf(num, sizeof(num), "%d", (int)h.pid);
        fd = open(procs, O_WRONLY);
        ok(fd >= 0 && write(fd, num, strlen(num)) == (ssize_t)strlen(num),
           "%s: the test moves the task out of its device cgroup", want);
        if (fd >= 0)
            close(fd);
    }
    ok(x2 && sl_exec_adopt(x2, job0 + 3, 0, 0, &h2, &code) == 0 &&
           !h2.gpus_enforced &&
           strstr(h2.gpus_note, "not in its device cgroup"),
       "%s: then adoption says it is no longer isolated: %s", want,
       h2.gpus_note);
    touch(flag);
    is_int(wait_final(x, &h, &code), 1, "%s: the task finishes", want);
    sl_exec_release(x, &h);
    sl_exec_destroy(x2);
    sl_exec_destroy(x);
}

/* A daemon without the privilege to write device rules (here: the test as
 * nobody) runs GPU tasks, says they are not isolated, and sets the
 * environment all the same. */
static void test_gpu_unprivileged(void)
{
    char dir[128], rd[160], log[160], res[160], denv[128], *text;
    char *argv[] = {"sh", "-c", GPU_SCRIPT, NULL};
    char *env[] = {denv, NULL};
    struct sl_host_info info;
    int one[] = {1}, st = 0;
    pid_t pid;

    if (!fake_host(&info)) {
        ok(0, "fake GPUs are discovered");
        return;
    }
    if (geteuid() != 0 || !gpu_dir[0]) {
        /* The test runs unprivileged already: X is such a daemon. */
        struct sl_exec_task t = task_for(320, argv, log, sizeof(log));
        struct sl_exec_handle h;
        t.gpus = one;
        t.ngpus = 1;
        t.host_gpus = info.gpus;
        t.nhost_gpus = info.ngpus;
        is_int(run_to_end(&t, &h), 0, "an unprivileged executor runs a task "
                                      "given GPU 1");
        ok(!h.gpus_enforced &&
               strncmp(h.gpus_note, "GPU isolation not enforced: ", 28) == 0,
           "and says it is not isolated: %s", h.gpus_note);
        text = slurp(log);
        ok(text && strstr(text, "O=PCI_BUS_ID G=1 C=1"),
           "and sets the environment all the same");
        free(text);
        return;
    }
    snprintf(dir, sizeof(dir), "%s/unpriv", gpu_dir);
    snprintf(rd, sizeof(rd), "%s/run", dir);
    snprintf(log, sizeof(log), "%s/task.log", dir);
    snprintf(res, sizeof(res), "%s/result", dir);
    snprintf(denv, sizeof(denv), "D=%s", gpu_dir);
    ok(mkdir(dir, 0755) == 0 && chown(dir, 65534, 65534) == 0,
       "a directory for an executor run by nobody");
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char unused[PATH_MAX];
        struct sl_exec_task t = task_for(321, argv, unused, sizeof(unused));
        struct sl_exec_handle h;
        struct sl_exec *x;
        const char *why = "";
        bool avail;
        char line[512];
        int fd, code, n;

        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
            _exit(200);
        if (!(x = sl_exec_create(rd)))
            _exit(201);
        avail = sl_exec_gpus_available(x, &why, NULL);
        t.log_path = log;
        t.allow_daemon_user = "nobody"; /* the daemon's own account here */
        t.env = env;
        t.gpus = one;
        t.ngpus = 1;
        t.host_gpus = info.gpus;
        t.nhost_gpus = info.ngpus;
        code = run_on(x, &t, &h);
        n = snprintf(line, sizeof(line), "avail=%d code=%d enforced=%d\n%s\n%s\n",
                     avail, code, h.gpus_enforced, why, h.gpus_note);
        if ((fd = open(res, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
            write(fd, line, (size_t)n) != n)
            _exit(202);
        close(fd);
        _exit(0);
    }
    ok(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0,
       "an executor run by nobody runs a task given GPU 1 (status %d)",
       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    text = slurp(res);
    ok(text && strncmp(text, "avail=0 code=0 enforced=0\n", 26) == 0,
       "it cannot isolate GPUs, and the handle says so");
    ok(text && strstr(text, "\nGPU isolation not enforced: ") &&
           strstr(text, "Permission denied"),
       "the note says why: %s", text ? text : "(none)");
    free(text);
    text = slurp(log);
    ok(node_is(text, "nvidia0", ALLOWED) && node_is(text, "nvidia2", ALLOWED),
       "the task can open GPUs it was not given, as the note says");
    ok(text && has_line(text, "O=PCI_BUS_ID G=1 C=1"),
       "and its environment is set all the same");
    free(text);
}

int main(void)
{
    /* The executor's files are private whatever the umask it runs with. */
    umask(0);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-test-exec-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    snprintf(run_dir, sizeof(run_dir), "%s/run", tmpdir);
    sl_log_set_level(SL_LOG_ERROR);
    {
        struct passwd *pw = getpwuid(geteuid());
        snprintf(self_name, sizeof(self_name), "%s", pw ? pw->pw_name : "?");
    }
    X = sl_exec_create(run_dir);
    ok(X != NULL, "an executor is created on a fresh run_dir");
    if (!X)
        return done_testing();
    {
        const char *why = NULL;
        bool avail = sl_exec_limits_available(X, &why);
        diag("limits %s%s%s", avail ? "available" : "unavailable: ",
             avail ? "" : why, "");
    }

    test_exit_codes();
    test_reap_then_poll();
    test_log_capture();
    test_log_cap();
    test_environment();
    test_missing_command();
    test_workdir();
    test_sigterm_tree();
    test_sigterm_ignored();
    test_background_child();
    test_early_close();
    test_lost_shim();
    test_pid_file_and_release();
    test_adopt();
    test_bad_input();
    test_descriptors();
    test_cgroup_limits();
    test_user_switch();
    test_identity();
    test_signal_state();
    test_threads();
    test_network_isolated();
    test_network_adopt();
    test_network_unshare_fails();
    test_network_internal();
    test_datasets();
    test_gpu_deny_list();
    if (geteuid() == 0 && !make_gpu_nodes()) {
        diag("mknod of the test's GPU nodes failed: %s", strerror(errno));
        if (gpu_dir[0] && !strchr(gpu_dir, 'X'))
            nftw(gpu_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        gpu_dir[0] = '\0';
    }
    test_gpu_isolation("v1", 300);
    test_gpu_isolation("bpf", 310);
    test_gpu_unprivileged();

    sl_exec_destroy(X);
    if (gpu_dir[0])
        nftw(gpu_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
