/*
 * proc.c - the process runner of the local executor (exec.h): one task =
 * one shim process (a forked child of the daemon that never execs)
 * supervising one process tree. What a task runs with (its account,
 * environment, log) is planned in procenv.c.
 *
 * Process layout of a running task:
 *
 *   sluiced ── shim (own session, fds 0-2 on /dev/null, 3 = report pipe
 *              │      until the task is up, 4 = log file; nothing else)
 *              └── task (own session, pgid = its pid, in its cgroup,
 *                        stdin /dev/null, stdout/stderr = two pipes to the shim)
 *
 * Invariants:
 *   - Everything that allocates or may take a lock (user and group lookup,
 *     environment, paths, cgroup creation and limits, the log file) is done
 *     in the daemon before fork. Between fork and exec, the shim and the task
 *     child only make async-signal-safe calls, because the daemon is
 *     multi-threaded and another thread may hold the malloc or stdio lock.
 *   - The shim holds no descriptor of the daemon (listening socket, database),
 *     so a restarted daemon can bind its port while tasks still run.
 *   - The shim writes <run_dir>/<job>.<task>.<attempt>.exit ("<code>\n",
 *     rename into place) after the task's main process exited and its output
 *     was drained; the daemon writes the .pid file
 *     ("<pid> <start> <shim> <gpus isolated 0|1>\n") before sl_exec_start
 *     returns. Both survive a daemon crash: that is what
 *     sl_exec_adopt reads.
 *   - A task's process group and cgroup are killed by the shim once the main
 *     process has exited: a finished task leaves nothing behind that could
 *     keep using the GPUs handed to the next job.
 *   - A task asked to be isolated either runs in a network namespace of its
 *     own or, when sl_exec_create's probe found none can be made, runs with
 *     the handle saying so. It never runs with the host's network while the
 *     handle claims isolation: a failing unshare in the task child fails the
 *     task.
 *   - A task's device rules (the NVIDIA GPUs it was not given) are in force
 *     on its cgroup before it is forked, and it joins that group before
 *     exec; h->gpus_enforced is true only when they are and the task does
 *     not run as root (which could lift them). Whatever was in force is
 *     recorded in the pid file for sl_exec_adopt.
 */
#include "proc_int.h"
#include "../core/spec.h"
#include "../util/imap.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "devices.h"

#define SHIM_REPORT_FD 3        /* the shim's pipe to the daemon (start only) */
#define SHIM_LOG_FD 4           /* the shim's log file */
#define START_TIMEOUT_MS 10000  /* the shim reports the task pid within this */
#define DRAIN_IDLE_MS 100       /* after the task exits: stop after this idle */
#define DRAIN_MAX_MS 2000       /* ... and in any case after this long */
#define RUNNING_TICK_MS 100     /* while it runs: check for its exit this often */

/* exec.h promises the numbering of the job spec's network profiles. */
static_assert(SL_EXEC_NET_EGRESS == (int)SL_NET_EGRESS, "egress");
static_assert(SL_EXEC_NET_INTERNAL == (int)SL_NET_INTERNAL, "internal");
static_assert(SL_EXEC_NET_ISOLATED == (int)SL_NET_ISOLATED, "isolated");

/* A shim we forked. Kept until its final state was reported or it was
 * released, so that sl_exec_reap can record statuses for sl_exec_poll. */
struct kid {
    pid_t pid;
    int status;                  /* waitpid status, valid when exited */
    bool exited;
    bool released;               /* drop as soon as it is reaped */
};

struct sl_exec {
    char run_dir[PATH_MAX];      /* absolute */
    struct sl_cgroup cg;
    struct kid *kids;            /* owned */
    size_t nkids, kids_cap;
    struct sl_imap kid_index;    /* pid -> index + 1 into kids */
    pid_t *exited;               /* shims reaped by the last sl_exec_reap */
    size_t nexited, exited_cap;
    bool netns_ok;               /* a task can get a network namespace */
    char netns_note[128];        /* why not, when not */
};

/* What the shim tells the daemon once the task child is in its session and
 * cgroup. pid < 0 is a negated errno (fork of the task failed). 16 bytes,
 * below PIPE_BUF, so one write is atomic. */
struct start_report {
    int32_t pid;
    int32_t pad;                  /* REPORT_WORKDIR: pid is -errno of the
                                     task's chdir to its spec.workdir */
    uint64_t start_time;
};

#define REPORT_WORKDIR 1
#define SYNC_FD 3                 /* the task's end of the sync pipe */
#define SYNC_WORKDIR 'w'          /* then the chdir's errno (an int) */

/* --- async-signal-safe helpers (used after fork) ------------------------ */

static size_t fmt_u64(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0, i;

    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

static void append(char *buf, size_t size, size_t *len, const char *s)
{
    while (*s && *len + 1 < size)
        buf[(*len)++] = *s++;
}

/* Messages for the errors a task start can meet; strerror() may take the
 * locale lock, so the child uses this table. Columns: errno, text. */
static const struct {
    int err;
    const char *text;
} errno_text[] = {
    {EPERM, "Operation not permitted"},
    {ENOENT, "No such file or directory"},
    {EIO, "Input/output error"},
    {E2BIG, "Argument list too long"},
    {ENOEXEC, "Exec format error"},
    {EAGAIN, "Resource temporarily unavailable"},
    {ENOMEM, "Cannot allocate memory"},
    {EACCES, "Permission denied"},
    {EFAULT, "Bad address"},
    {EBUSY, "Device or resource busy"},
    {ENOTDIR, "Not a directory"},
    {EISDIR, "Is a directory"},
    {EINVAL, "Invalid argument"},
    {ENFILE, "Too many open files in system"},
    {EMFILE, "Too many open files"},
    {ETXTBSY, "Text file busy"},
    {ENOSPC, "No space left on device"},
    {EROFS, "Read-only file system"},
    {ENAMETOOLONG, "File name too long"},
    {ELOOP, "Too many levels of symbolic links"},
    {ESRCH, "No such process"},
    {ELIBBAD, "Accessing a corrupted shared library"},
};

static void child_fail(const char *what, const char *arg, int err)
{
    char buf[1024], num[24];
    size_t len = 0, i;
    const char *text = NULL;

    for (i = 0; i < SL_ARRAY_LEN(errno_text); i++)
        if (errno_text[i].err == err)
            text = errno_text[i].text;
    append(buf, sizeof(buf), &len, "sluice: ");
    append(buf, sizeof(buf), &len, what);
    append(buf, sizeof(buf), &len, " ");
    append(buf, sizeof(buf), &len, arg);
    append(buf, sizeof(buf), &len, ": ");
    if (text) {
        append(buf, sizeof(buf), &len, text);
    } else {
        num[fmt_u64(num, (uint64_t)(err < 0 ? -err : err))] = '\0';
        append(buf, sizeof(buf), &len, "error ");
        append(buf, sizeof(buf), &len, num);
    }
    append(buf, sizeof(buf), &len, "\n");
    if (write(STDERR_FILENO, buf, len) < 0) {
        /* The shim's pipe is all there is; nothing else to tell. */
    }
}

void sl_proc_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* ENOSPC and the like: drop, keep draining the pipes */
        buf += n;
        len -= (size_t)n;
    }
}

int64_t sl_proc_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_from(int lowfd, int max_fd)
{
    if (close_range((unsigned)lowfd, ~0U, 0) == 0)
        return;
    for (int fd = lowfd; fd < max_fd; fd++)
        close(fd);
}

/* Read /proc/<pid>/stat: state (field 3), session (field 6) and start time
 * (field 22), parsed after the last ')' since the command name may hold
 * spaces and parentheses. Returns 0 or -errno. Async-signal-safe. */
static int proc_stat(pid_t pid, char *state, long *session, uint64_t *start)
{
    char path[40], buf[1024];
    size_t len = 0, plen = 0;
    const char *p = NULL;
    int fd, field = 0;
    long sid = 0;
    uint64_t st = 0;

    append(path, sizeof(path), &plen, "/proc/");
    plen += fmt_u64(path + plen, (uint64_t)pid);
    append(path, sizeof(path), &plen, "/stat");
    path[plen] = '\0';
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    while (len < sizeof(buf) - 1) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    for (size_t i = len; i > 0; i--) {
        if (buf[i - 1] == ')') {
            p = buf + i;
            break;
        }
    }
    if (!p || p + 2 >= buf + len)
        return -EINVAL;
    /* p points at " S ppid pgrp session ...": field 3 is the state. */
    for (field = 2; p < buf + len && field <= 22; p++) {
        if (*p == ' ') {
            field++;
            continue;
        }
        if (field == 3)
            *state = *p;
        else if (field == 6 && *p >= '0' && *p <= '9')
            sid = sid * 10 + (*p - '0');
        else if (field == 22 && *p >= '0' && *p <= '9')
            st = st * 10 + (uint64_t)(*p - '0');
    }
    if (field < 22)
        return -EINVAL;
    *session = sid;
    *start = st;
    return 0;
}

/* The steps of netns_enter, for messages. */
static const char *const netns_step[] = {
    "unshare(CLONE_NEWNET)",
    "socket(AF_INET, SOCK_DGRAM)",
    "ioctl(SIOCGIFFLAGS, lo)",
    "ioctl(SIOCSIFFLAGS, lo)",
};

/* Move the calling process into a new network namespace, which holds only
 * a loopback interface, and bring that up. Returns 0, or an errno value with
 * *step the index into netns_step of what failed. Async-signal-safe. */
static int netns_enter(int *step)
{
    struct ifreq ifr;
    int fd, e = 0;

    *step = 0;
    if (unshare(CLONE_NEWNET) < 0)
        return errno;
    *step = 1;
    if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return errno;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    *step = 2;
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
        e = errno;
    } else {
        *step = 3;
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
            e = errno;
    }
    close(fd);
    return e;
}

/* --- the task child ----------------------------------------------------- */

static void __attribute__((noreturn))
task_main(const struct plan *p, int out_w, int err_w, int sync_w)
{
    struct sigaction sa;
    char num[24];
    size_t n;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
    setsid();
    /* Interactive: the terminal becomes the session's controlling one,
     * and stdin too. */
    if (p->tty && (ioctl(out_w, TIOCSCTTY, 0) < 0 || dup2(out_w, STDIN_FILENO) < 0))
        _exit(127);
    if (dup2(out_w, STDOUT_FILENO) < 0 || dup2(err_w, STDERR_FILENO) < 0)
        _exit(127);
    if (p->in_cgroup) {
        n = fmt_u64(num, (uint64_t)getpid());
        for (int i = 0; i < p->cgt.nprocs; i++) {
            int fd = open(p->cgt.procs[i], O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, num, n) != (ssize_t)n) {
                child_fail("join cgroup", p->cgt.procs[i], errno);
                _exit(127);
            }
            close(fd);
        }
    }
    if (p->new_netns) {
        int step, e = netns_enter(&step);
        /* The handle says isolated: never run on the host's network. */
        if (e != 0) {
            child_fail("cannot isolate the network:", netns_step[step], e);
            _exit(127);
        }
    }
    /* The sync pipe stays open, at SYNC_FD and closed on exec, through the
     * identity switch and the chdir; nothing else of the shim's does. */
    if (sync_w != SYNC_FD && dup3(sync_w, SYNC_FD, O_CLOEXEC) < 0)
        _exit(127);
    close_from(SYNC_FD + 1, p->max_fd);
    if (p->switch_user) {
        if (setgroups((size_t)p->ngroups, p->groups) < 0) {
            child_fail("setgroups for user", p->user, errno);
            _exit(127);
        }
        if (setgid(p->gid) < 0) {
            child_fail("setgid for user", p->user, errno);
            _exit(127);
        }
        if (setuid(p->uid) < 0) {
            child_fail("setuid for user", p->user, errno);
            _exit(127);
        }
    }
    /* As the task's account: a spec.workdir it cannot enter fails the
     * start (SYNC_WORKDIR and the errno), never falls back to another
     * directory; only the home, when no workdir was asked for, does. */
    if (chdir(p->workdir) < 0) {
        int e = errno;
        if (!p->workdir_fallback) {
            char m[1 + sizeof(e)] = {SYNC_WORKDIR};
            memcpy(m + 1, &e, sizeof(e));
            if (write(SYNC_FD, m, sizeof(m)) < 0) {
                /* EOF: the shim reports the start, the task exits 127 */
            }
            child_fail("spec.workdir", p->workdir, e);
            _exit(127);
        }
        if (chdir("/") < 0) {
            child_fail("chdir", "/", errno);
            _exit(127);
        }
    }
    /* The shim waits for this byte (or EOF) before it reports the pid: from
     * then on, the process group exists, the cgroup holds the task, it is
     * in its network namespace and its working directory. */
    if (write(SYNC_FD, "r", 1) < 0) {
        /* EOF tells the shim the same. */
    }
    /* sluiced keeps every file it makes private (umask 077); the task
     * gets the usual umask instead. */
    umask(022);
    /* execvpe searches the PATH of the calling process: make that the
     * task's environment, not the daemon's. */
    environ = p->envp;
    execvpe(p->argv[0], p->argv, p->envp);
    child_fail("exec", p->argv[0], errno);
    _exit(127);
}

/* --- the shim ----------------------------------------------------------- */

void sl_proc_log_append(const struct plan *p, const char *buf, size_t len,
                        int64_t *written, bool *truncated)
{
    int64_t room = p->log_cap - *written;

    if (*truncated)
        return;
    if (room > 0) {
        size_t take = (int64_t)len < room ? len : (size_t)room;
        sl_proc_write_all(SHIM_LOG_FD, buf, take);
        *written += (int64_t)take;
        if (take == len)
            return;
    }
    sl_proc_write_all(SHIM_LOG_FD, p->marker, p->marker_len);
    *truncated = true;
}

/* Copy both pipes into the log until both hit EOF, or until the task's main
 * process has exited and the pipes were idle for DRAIN_IDLE_MS (background
 * children may hold them open forever), or DRAIN_MAX_MS after its exit.
 * Returns the task's wait status. */
static int pump(const struct plan *p, int out_r, int err_r, pid_t task)
{
    struct pollfd fds[2] = {{out_r, POLLIN, 0}, {err_r, POLLIN, 0}};
    char buf[16384];
    int64_t written = p->log_written, exit_ms = 0;
    bool exited = false, truncated = false;
    int status = 0;

    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        int n;

        if (!exited && waitpid(task, &status, WNOHANG) == task) {
            exited = true;
            exit_ms = sl_proc_mono_ms();
        }
        if (exited && sl_proc_mono_ms() - exit_ms >= DRAIN_MAX_MS)
            break;
        n = poll(fds, 2, exited ? DRAIN_IDLE_MS : RUNNING_TICK_MS);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        if (n == 0) {
            if (exited)
                break;
            continue;
        }
        for (int i = 0; i < 2; i++) {
            ssize_t r;
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            r = read(fds[i].fd, buf, sizeof(buf));
            if (r > 0) {
                sl_proc_log_append(p, buf, (size_t)r, &written, &truncated);
            } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(fds[i].fd);
                fds[i].fd = -1;
            }
        }
    }
    while (!exited) {
        if (waitpid(task, &status, 0) == task)
            exited = true;
        else if (errno != EINTR)
            break;
    }
    return status;
}

static void write_exit_record(const struct plan *p, int code)
{
    char line[24];
    size_t n = fmt_u64(line, (uint64_t)code);
    int fd;

    line[n++] = '\n';
    fd = open(p->exit_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        _exit(1);
    sl_proc_write_all(fd, line, n);
    if (fsync(fd) < 0 || close(fd) < 0)
        _exit(1);
    if (rename(p->exit_tmp, p->exit_path) < 0)
        _exit(1);
}

static void __attribute__((noreturn)) shim_main(const struct plan *p,
                                                int report_w)
{
    struct sigaction sa;
    struct start_report rep = {0, 0, 0};
    sigset_t none;
    int rfd, lfd, nullfd, out[2] = {-1, -1}, err[2] = {-1, -1}, sync[2], status, code;
    int conn = -1;
    pid_t task;
    char state, b = 0;
    long sid;

    /* Drop the daemon's signal handlers: they would act on descriptors the
     * shim no longer has. SIGPIPE stays ignored for the report pipe. */
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    setsid();

    /* Keep the report pipe and the log at 3 and 4, close everything else of
     * the daemon, and put /dev/null on 0-2. */
    if ((rfd = fcntl(report_w, F_DUPFD_CLOEXEC, 10)) < 0 ||
        (lfd = fcntl(p->log_fd, F_DUPFD_CLOEXEC, 10)) < 0 ||
        dup3(rfd, SHIM_REPORT_FD, O_CLOEXEC) < 0 ||
        dup3(lfd, SHIM_LOG_FD, O_CLOEXEC) < 0)
        _exit(1);
    if (p->tty) {
        /* Every source above 10 first: one may sit where another goes. */
        int m = fcntl(p->pty_master, F_DUPFD_CLOEXEC, 10);
        int sl = fcntl(p->pty_slave, F_DUPFD_CLOEXEC, 10);
        int a = fcntl(p->attach_fd, F_DUPFD_CLOEXEC, 10);
        if (m < 0 || sl < 0 || a < 0 || dup3(m, SL_SHIM_MASTER_FD, O_CLOEXEC) < 0 ||
            dup3(sl, SL_SHIM_SLAVE_FD, O_CLOEXEC) < 0 ||
            dup3(a, SL_SHIM_ATTACH_FD, O_CLOEXEC) < 0)
            _exit(1);
    }
    close_from((p->tty ? SL_SHIM_ATTACH_FD : SHIM_LOG_FD) + 1, p->max_fd);
    if ((nullfd = open("/dev/null", O_RDWR)) < 0)
        _exit(1);
    for (int fd = 0; fd <= 2; fd++)
        if (nullfd != fd && dup2(nullfd, fd) < 0)
            _exit(1);
    if (nullfd > 2)
        close(nullfd);
    if (chdir("/") < 0) {
        /* Every path the shim uses is absolute. */
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if ((!p->tty && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)) ||
        pipe2(sync, O_CLOEXEC) < 0) {
        rep.pid = -errno;
        sl_proc_write_all(SHIM_REPORT_FD, (const char *)&rep, sizeof(rep));
        _exit(1);
    }
    if ((task = fork()) == 0) {
        close(sync[0]);
        if (p->tty)
            task_main(p, SL_SHIM_SLAVE_FD, SL_SHIM_SLAVE_FD, sync[1]);
        close(out[0]);
        close(err[0]);
        task_main(p, out[1], err[1], sync[1]);
    }
    if (task < 0) {
        rep.pid = -errno;
        sl_proc_write_all(SHIM_REPORT_FD, (const char *)&rep, sizeof(rep));
        _exit(1);
    }
    /* The shim keeps no slave: the master reads EIO once the task's side
     * is all closed. */
    if (p->tty)
        close(SL_SHIM_SLAVE_FD);
    else {
        close(out[1]);
        close(err[1]);
    }
    close(sync[1]);
    while (read(sync[0], &b, 1) < 0 && errno == EINTR)
        ;
    if (b == SYNC_WORKDIR) {
        /* the task could not enter its spec.workdir: a failed start */
        int e = 0;
        while (read(sync[0], &e, sizeof(e)) < 0 && errno == EINTR)
            ;
        while (waitpid(task, &status, 0) < 0 && errno == EINTR)
            ;
        rep.pid = -(e > 0 ? e : EIO);
        rep.pad = REPORT_WORKDIR;
        sl_proc_write_all(SHIM_REPORT_FD, (const char *)&rep, sizeof(rep));
        _exit(1);
    }
    close(sync[0]);
    /* The start time is read here, not by the daemon: the task is our child
     * and cannot be reaped before we wait for it, so /proc/<pid> exists. */
    rep.pid = (int32_t)task;
    if (proc_stat(task, &state, &sid, &rep.start_time) < 0)
        rep.start_time = 0;
    sl_proc_write_all(SHIM_REPORT_FD, (const char *)&rep, sizeof(rep));
    close(SHIM_REPORT_FD);

    status = p->tty ? sl_proc_pump_tty(p, task, &conn) : pump(p, out[0], err[0], task);
    /* Whatever the main process left behind goes with it. */
    kill(-task, SIGKILL);
    if (p->in_cgroup)
        sl_cgroup_task_kill_all(&p->cgt);
    if (WIFEXITED(status))
        code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        code = 128 + WTERMSIG(status);
    else
        code = 255;
    write_exit_record(p, code);
    if (conn >= 0)
        sl_proc_tty_status(conn, code);
    _exit(0);
}

/* --- daemon side -------------------------------------------------------- */

static int file_path(const struct sl_exec *x, int64_t job_id, int task_index,
                     int attempt, const char *suffix, char *buf, size_t size)
{
    if ((size_t)snprintf(buf, size, "%s/%lld.%d.%d.%s", x->run_dir,
                         (long long)job_id, task_index, attempt,
                         suffix) >= size)
        return -ENAMETOOLONG;
    return 0;
}

int sl_exec_attach_path(const struct sl_exec *x, int64_t job_id, int task_index,
                        int attempt, char *buf, size_t size)
{
    return file_path(x, job_id, task_index, attempt, "sock", buf, size);
}

/* Read the exit record. Returns 0 with *code, or -errno (-ENOENT: none). */
static int read_exit(const struct sl_exec *x, int64_t job_id, int task_index,
                     int attempt, int *code)
{
    char path[PATH_MAX], *text = NULL;
    int64_t v;
    size_t len;
    int rc;

    if ((rc = file_path(x, job_id, task_index, attempt, "exit", path,
                        sizeof(path))) < 0)
        return rc;
    if ((rc = sl_read_file(path, 64, &text, &len)) < 0)
        return rc;
    if (len > 0 && text[len - 1] == '\n')
        text[len - 1] = '\0';
    if ((rc = sl_parse_int64(text, 0, 255, &v)) == 0)
        *code = (int)v;
    else
        rc = -EINVAL;
    free(text);
    return rc;
}

/* Read the pid file "<pid> <start> <shim> [<gpus enforced 0|1>]". Returns
 * 0 or -errno (-ENOENT: never started); *gpus (may be NULL) is -1 when
 * the file does not say (written before it recorded that). */
static int read_pid_file(const struct sl_exec *x, int64_t job_id,
                         int task_index, int attempt, pid_t *pid,
                         uint64_t *start, pid_t *shim, int *gpus)
{
    char path[PATH_MAX], *text = NULL, *save = NULL, *tok[4];
    int64_t v[3], g = -1;
    int rc;

    if ((rc = file_path(x, job_id, task_index, attempt, "pid", path,
                        sizeof(path))) < 0)
        return rc;
    if ((rc = sl_read_file(path, 128, &text, NULL)) < 0)
        return rc;
    tok[0] = strtok_r(text, " \n", &save);
    tok[1] = strtok_r(NULL, " \n", &save);
    tok[2] = strtok_r(NULL, " \n", &save);
    tok[3] = strtok_r(NULL, " \n", &save);
    for (int i = 0; i < 3 && rc == 0; i++)
        if (!tok[i] ||
            sl_parse_int64(tok[i], i == 1 ? 0 : 1, INT64_MAX, &v[i]) < 0 ||
            (i != 1 && v[i] > INT32_MAX))
            rc = -EINVAL;
    if (rc == 0 && tok[3] && sl_parse_int64(tok[3], 0, 1, &g) < 0)
        rc = -EINVAL;
    if (rc == 0) {
        *pid = (pid_t)v[0];
        *start = (uint64_t)v[1];
        *shim = (pid_t)v[2];
        if (gpus)
            *gpus = (int)g;
    }
    free(text);
    return rc;
}

/* The recorded process still exists (possibly as a zombie) with the
 * recorded start time: signalling its group reaches the task, not a
 * process that reused the pid. */
static bool proc_matches(pid_t pid, uint64_t start, bool *zombie)
{
    char state = '?';
    long sid;
    uint64_t st;

    if (pid <= 0 || proc_stat(pid, &state, &sid, &st) < 0 || st != start)
        return false;
    if (zombie)
        *zombie = state == 'Z' || state == 'X';
    return true;
}

static bool task_alive(pid_t pid, uint64_t start)
{
    bool zombie = false;
    return proc_matches(pid, start, &zombie) && !zombie;
}

/* A shim that is not our child: alive when its pid names a live session
 * leader started no later than its task (the shim called setsid and forked
 * the task), which rules out a reused pid in practice. */
static bool shim_alive(pid_t shim, uint64_t task_start)
{
    char state = '?';
    long sid = 0;
    uint64_t st = 0;

    if (shim <= 0 || proc_stat(shim, &state, &sid, &st) < 0)
        return false;
    return state != 'Z' && state != 'X' && sid == (long)shim &&
           st <= task_start;
}

static struct kid *kid_find(struct sl_exec *x, pid_t pid)
{
    uintptr_t i = pid > 0 ? (uintptr_t)sl_imap_get(&x->kid_index, pid) : 0;

    return i ? &x->kids[i - 1] : NULL;
}

static void kid_remove(struct sl_exec *x, pid_t pid)
{
    struct kid *k = kid_find(x, pid);
    size_t i;

    if (!k)
        return;
    i = (size_t)(k - x->kids);
    sl_imap_del(&x->kid_index, pid);
    if (i != x->nkids - 1) {
        x->kids[i] = x->kids[x->nkids - 1];
        sl_imap_put(&x->kid_index, x->kids[i].pid, (void *)(uintptr_t)(i + 1));
    }
    x->nkids--;
}

static int kid_add(struct sl_exec *x, pid_t pid)
{
    if (x->nkids == x->kids_cap) {
        size_t cap = x->kids_cap ? x->kids_cap * 2 : 16;
        struct kid *k = realloc(x->kids, cap * sizeof(*k));
        if (!k)
            return -ENOMEM;
        x->kids = k;
        x->kids_cap = cap;
    }
    if (sl_imap_put(&x->kid_index, pid, (void *)(uintptr_t)(x->nkids + 1)) < 0)
        return -ENOMEM;
    x->kids[x->nkids++] = (struct kid){pid, 0, false, false};
    return 0;
}

/* The task is gone without an exit record, or its shim is: nothing will
 * ever report on it, so nothing of it may keep running. */
static void kill_remains(struct sl_exec *x, const struct sl_exec_handle *h)
{
    if (proc_matches(h->pid, h->start_time, NULL))
        kill(-h->pid, SIGKILL);
    if (h->cgroup[0])
        sl_cgroup_task_signal(&x->cg, h->cgroup, SIGKILL);
}

/* Find out once whether a task can get a network namespace: a forked child
 * (which only makes system calls, so this is safe in a threaded daemon) runs
 * netns_enter and sends back {step, errno} over a pipe. A pipe, not its exit
 * status, because a SIGCHLD handler's sl_exec_reap may reap it first. */
static void probe_netns(struct sl_exec *x)
{
    int32_t res[2] = {0, 0};
    int fds[2] = {-1, -1}, e = 0;
    size_t got = 0;
    sigset_t all, old;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) < 0) {
        e = errno;
        snprintf(x->netns_note, sizeof(x->netns_note),
                 "cannot probe network namespaces: pipe: %s", strerror(e));
        return;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid = fork();
    if (pid == 0) {
        int step;
        res[1] = netns_enter(&step);
        res[0] = step;
        sl_proc_write_all(fds[1], (const char *)res, sizeof(res));
        _exit(0);
    }
    e = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    while (pid > 0 && got < sizeof(res)) {
        ssize_t n = read(fds[0], (char *)res + got, sizeof(res) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0)
        snprintf(x->netns_note, sizeof(x->netns_note),
                 "cannot probe network namespaces: fork: %s", strerror(e));
    else if (got < sizeof(res))
        sl_strlcpy(x->netns_note,
                   "cannot probe network namespaces: the probe died",
                   sizeof(x->netns_note));
    else if (res[1] != 0)
        snprintf(x->netns_note, sizeof(x->netns_note), "%s: %s",
                 res[0] >= 0 && res[0] < (int32_t)SL_ARRAY_LEN(netns_step)
                     ? netns_step[res[0]]
                     : "probe",
                 strerror(res[1]));
    else
        x->netns_ok = true;
}

struct sl_exec *sl_exec_create(const char *run_dir)
{
    struct sl_exec *x = NULL;
    char tag[24];
    uint64_t hash = 1469598103934665603ULL; /* FNV-1a */
    int rc;

    if (!run_dir || !*run_dir) {
        errno = EINVAL;
        return NULL;
    }
    if (strlen(run_dir) > PATH_MAX - 128) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    if ((rc = sl_mkdir_p(run_dir, 0700)) < 0) {
        errno = -rc;
        return NULL;
    }
    if (!(x = calloc(1, sizeof(*x))))
        return NULL;
    if (!realpath(run_dir, x->run_dir) ||
        strlen(x->run_dir) > PATH_MAX - 128) {
        rc = errno ? errno : ENAMETOOLONG;
        free(x);
        errno = rc;
        return NULL;
    }
    for (const char *p = x->run_dir; *p; p++) {
        hash ^= (unsigned char)*p;
        hash *= 1099511628211ULL;
    }
    snprintf(tag, sizeof(tag), "r-%016llx", (unsigned long long)hash);
    sl_cgroup_probe(&x->cg, tag, getenv("SLUICE_DEVICE_CGROUP"));
    if (x->cg.version == 0)
        sl_info("msg=\"resource limits not enforced\" why=\"%s\"",
                x->cg.note);
    else
        sl_debug("msg=\"cgroups\" version=%d base=%s", x->cg.version,
                 x->cg.base_rel);
    if (x->cg.dev == SL_CGROUP_DEV_NONE)
        sl_info("msg=\"GPU isolation not available\" why=\"%s\"",
                x->cg.dev_note);
    else
        sl_debug("msg=\"device rules\" mechanism=\"%s\" mount=%s",
                 x->cg.dev == SL_CGROUP_DEV_V1 ? "cgroup1 devices"
                                               : "cgroup2 bpf",
                 x->cg.mount[x->cg.dev_hier]);
    probe_netns(x);
    if (!x->netns_ok)
        sl_info("msg=\"network isolation not available\" why=\"%s\"",
                x->netns_note);
    return x;
}

void sl_exec_destroy(struct sl_exec *x)
{
    int saved = errno;

    if (x) {
        sl_cgroup_base_remove(&x->cg);
        sl_imap_fini(&x->kid_index);
        free(x->kids);
        free(x->exited);
        free(x);
    }
    errno = saved;
}

bool sl_exec_limits_available(const struct sl_exec *x, const char **why_not)
{
    if (why_not)
        *why_not = x ? x->cg.note : "no executor";
    return x && x->cg.version != 0;
}

bool sl_exec_gpus_available(const struct sl_exec *x, const char **why_not,
                            const char **mech)
{
    bool ok = x && x->cg.dev != SL_CGROUP_DEV_NONE;

    if (why_not)
        *why_not = x ? (ok ? "" : x->cg.dev_note) : "no executor";
    if (mech)
        *mech = !ok ? "none"
                : x->cg.dev == SL_CGROUP_DEV_V1 ? "cgroup1 devices"
                                                : "cgroup2 bpf";
    return ok;
}

bool sl_exec_netns_available(const struct sl_exec *x, const char **why_not)
{
    if (why_not)
        *why_not = x ? (x->netns_ok ? "" : x->netns_note) : "no executor";
    return x && x->netns_ok;
}

/* Decide the network profile in force; never claim more than is done. */
static void plan_network(const struct sl_exec *x, const struct sl_exec_task *t,
                         struct plan *p, struct sl_exec_handle *nh)
{
    nh->network_enforced = SL_EXEC_NET_EGRESS;
    nh->network_note[0] = '\0';
    if (t->network == SL_EXEC_NET_ISOLATED && x->netns_ok) {
        p->new_netns = true;
        nh->network_enforced = SL_EXEC_NET_ISOLATED;
    } else if (t->network == SL_EXEC_NET_ISOLATED) {
        snprintf(nh->network_note, sizeof(nh->network_note),
                 "network isolation not enforced: %s", x->netns_note);
    } else if (t->network == SL_EXEC_NET_INTERNAL) {
        sl_strlcpy(nh->network_note,
                   "network profile internal is not enforced by the local "
                   "executor (no firewall rules); the task has the host's "
                   "network",
                   sizeof(nh->network_note));
    }
    if (nh->network_note[0])
        sl_warn("msg=\"task runs with the host's network\" job=%lld task=%d "
                "why=\"%s\"",
                (long long)t->job_id, t->task_index, nh->network_note);
}

/* Put the task's device rules in force on its group (made or not by now)
 * and say what holds; never claim more than is done. */
static void plan_gpus(const struct sl_exec *x, const struct sl_exec_task *t,
                      const struct plan *p, struct sl_exec_handle *nh)
{
    struct sl_dev_deny deny;
    char why[256] = "";
    uid_t uid = p->switch_user ? p->uid : geteuid();

    nh->gpus_enforced = false;
    nh->gpus_note[0] = '\0';
    if (x->cg.dev == SL_CGROUP_DEV_NONE)
        sl_strlcpy(why, x->cg.dev_note, sizeof(why));
    else if (!p->in_cgroup)
        snprintf(why, sizeof(why), "the task has no cgroup: %s",
                 nh->limits_note);
    else if (sl_dev_deny_gpus(t->host_gpus, t->nhost_gpus, t->gpus, t->ngpus,
                              &deny, why, sizeof(why)) < 0 ||
             sl_cgroup_task_devices(&x->cg, nh->cgroup, &deny, why,
                                    sizeof(why)) < 0)
        ; /* 'why' says it */
    else if (uid == 0)
        /* Root may write its own devices.allow, detach the program or move
         * to another group: the rules hold only for a task that cannot. */
        sl_strlcpy(why, "the task runs as root, which can lift its device "
                        "rules",
                   sizeof(why));
    else
        nh->gpus_enforced = true;
    if (nh->gpus_enforced)
        return;
    snprintf(nh->gpus_note, sizeof(nh->gpus_note),
             "GPU isolation not enforced: %s", why);
    if (t->ngpus > 0)
        sl_warn("msg=\"task may open GPUs it was not given\" job=%lld "
                "task=%d why=\"%s\"",
                (long long)t->job_id, t->task_index, why);
}

/* Read the shim's start report, waiting at most START_TIMEOUT_MS. */
static int read_report(int fd, struct start_report *rep)
{
    size_t got = 0;
    int64_t deadline = sl_mono_ms() + START_TIMEOUT_MS;

    while (got < sizeof(*rep)) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int64_t left = deadline - sl_mono_ms();
        ssize_t n;
        int r;

        if (left <= 0)
            return -ETIMEDOUT;
        r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -ETIMEDOUT;
        n = read(fd, (char *)rep + got, sizeof(*rep) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -ECHILD; /* the shim died before reporting */
        got += (size_t)n;
    }
    return rep->pid > 0 ? 0 : (rep->pid < 0 ? rep->pid : -ECHILD);
}

/* The task's record files: its pid file ('pid_path'), its exit record
 * and the exit record's temp name; a record left from an earlier start of
 * the same attempt would be read as this one's, so it goes. Also the
 * highest descriptor the shim closes. */
static int plan_files(const struct sl_exec *x, const struct sl_exec_task *t, struct plan *p,
                      char *pid_path, size_t pid_size, struct sl_error *err)
{
    struct rlimit rl;
    int rc;

    if ((rc = file_path(x, t->job_id, t->task_index, t->attempt, "pid", pid_path,
                        pid_size)) < 0 ||
        (rc = file_path(x, t->job_id, t->task_index, t->attempt, "exit", p->exit_path,
                        sizeof(p->exit_path))) < 0 ||
        (rc = file_path(x, t->job_id, t->task_index, t->attempt, "exit.tmp", p->exit_tmp,
                        sizeof(p->exit_tmp))) < 0)
        return sl_errorf(err, rc, "run_dir: file name too long");
    if (t->tty) {
        if ((rc = file_path(x, t->job_id, t->task_index, t->attempt, "sock", p->attach_path,
                            sizeof(p->attach_path))) < 0)
            return sl_errorf(err, rc, "run_dir: file name too long");
        p->detach_grace_ms = t->detach_grace_ms;
        if ((rc = sl_proc_plan_tty(p, err)) < 0)
            return rc;
    }
    unlink(p->exit_path);
    unlink(pid_path);
    p->max_fd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1 << 20)
                    ? (int)rl.rlim_cur
                    : (1 << 20);
    return 0;
}

/* The task's cgroup with its limits, when the host has cgroups: the
 * handle says whether the limits hold and why not. Returns whether a group
 * was made (it may exist for the device rules alone). */
static bool plan_cgroup(struct sl_exec *x, const struct sl_exec_task *t, struct plan *p,
                        struct sl_exec_handle *nh)
{
    if (x->cg.nhier == 0) {
        sl_strlcpy(nh->limits_note, x->cg.note, sizeof(nh->limits_note));
        return false;
    }
    sl_cgroup_task_rel(&x->cg, t->job_id, t->task_index, t->attempt, nh->cgroup,
                       sizeof(nh->cgroup));
    if (sl_cgroup_task_create(&x->cg, nh->cgroup, t->cpu_milli, t->mem_bytes, t->pids_max,
                              &p->cgt, nh->limits_note, sizeof(nh->limits_note)) < 0) {
        sl_warn("msg=\"task runs without limits\" job=%lld task=%d why=\"%s\"",
                (long long)t->job_id, t->task_index, nh->limits_note);
        nh->cgroup[0] = '\0';
        return false;
    }
    p->in_cgroup = true;
    nh->limits_enforced = x->cg.version != 0;
    sl_strlcpy(nh->limits_note, nh->limits_enforced ? "" : x->cg.note, sizeof(nh->limits_note));
    return true;
}

int sl_exec_start(struct sl_exec *x, const struct sl_exec_task *t,
                  struct sl_exec_handle *h, struct sl_error *err)
{
    struct plan p;
    struct sl_exec_handle nh;
    struct start_report rep = {0, 0, 0};
    char pid_path[PATH_MAX], line[96];
    int report[2] = {-1, -1}, rc;
    bool cgroup_made = false;
    pid_t shim = -1;
    sigset_t all, old;

    memset(&p, 0, sizeof(p));
    memset(&nh, 0, sizeof(nh));
    p.log_fd = p.pty_master = p.pty_slave = p.attach_fd = -1;
    if (!x || !t || !h)
        return sl_errorf(err, -EINVAL, "exec: missing argument");
    if ((rc = sl_proc_check_task(t, err)) < 0)
        goto out;
    p.argv = t->argv;
    if ((rc = sl_proc_plan_env(&p, t, err)) < 0)
        goto out;
    if ((rc = sl_proc_open_log(&p, t, err)) < 0)
        goto out;
    if ((rc = plan_files(x, t, &p, pid_path, sizeof(pid_path), err)) < 0)
        goto out;
    nh.job_id = t->job_id;
    nh.task_index = t->task_index;
    nh.attempt = t->attempt;
    cgroup_made = plan_cgroup(x, t, &p, &nh);
    plan_network(x, t, &p, &nh);
    plan_gpus(x, t, &p, &nh);

    if (pipe2(report, O_CLOEXEC) < 0) {
        rc = sl_errorf(err, -errno, "pipe: %s", strerror(errno));
        goto out;
    }
    /* Block every signal across fork so that no daemon handler runs in the
     * shim before it has reset them. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    shim = fork();
    if (shim == 0)
        shim_main(&p, report[1]);
    rc = shim < 0 ? -errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(report[1]);
    report[1] = -1;
    if (rc < 0) {
        rc = sl_errorf(err, rc, "fork: %s", strerror(-rc));
        goto out;
    }
    if ((rc = read_report(report[0], &rep)) < 0) {
        if (rep.pad == REPORT_WORKDIR)
            rc = sl_errorf(err, rc, "spec.workdir: cannot enter %.100s%s as %s: %s",
                           p.workdir, strlen(p.workdir) > 100 ? "..." : "",
                           p.user[0] ? p.user : "the task's account", strerror(-rc));
        else
            rc = sl_errorf(err, rc, "start %s: %s", t->argv[0], strerror(-rc));
        goto out;
    }
    nh.shim_pid = shim;
    nh.pid = (pid_t)rep.pid;
    nh.start_time = rep.start_time;
    snprintf(line, sizeof(line), "%d %llu %d %d\n", (int)nh.pid,
             (unsigned long long)nh.start_time, (int)shim,
             nh.gpus_enforced ? 1 : 0);
    if ((rc = sl_write_file_atomic(pid_path, line, strlen(line), 0600)) < 0) {
        rc = sl_errorf(err, rc, "%s: %s", pid_path, strerror(-rc));
        kill(-nh.pid, SIGKILL);
        goto out;
    }
    if ((rc = kid_add(x, shim)) < 0) {
        rc = sl_errorf(err, rc, "out of memory");
        kill(-nh.pid, SIGKILL);
        unlink(pid_path);
        goto out;
    }
    shim = -1;
    *h = nh;
    sl_debug("msg=\"task started\" job=%lld task=%d attempt=%d pid=%d "
             "shim=%d cgroup=%s",
             (long long)h->job_id, h->task_index, h->attempt, (int)h->pid,
             (int)h->shim_pid, h->cgroup[0] ? h->cgroup : "-");
out:
    if (shim > 0) {
        /* Failed after fork: take the shim down and wait for it, so that
         * nothing is left running. */
        if (p.in_cgroup)
            sl_cgroup_task_kill_all(&p.cgt);
        kill(shim, SIGKILL);
        while (waitpid(shim, NULL, 0) < 0 && errno == EINTR)
            ;
        unlink(p.exit_path);
        unlink(p.exit_tmp);
    }
    if (rc < 0 && p.tty)
        unlink(p.attach_path);
    if (rc < 0 && cgroup_made) {
        for (int i = 0; i < 50 && sl_cgroup_task_remove(&x->cg, nh.cgroup) ==
                                      -EBUSY; i++) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    if (report[0] >= 0)
        close(report[0]);
    if (report[1] >= 0)
        close(report[1]);
    sl_proc_plan_fini(&p);
    return rc;
}

int sl_exec_signal(struct sl_exec *x, const struct sl_exec_handle *h, int sig)
{
    int hit = 0;

    if (!x || !h || h->pid <= 0)
        return -EINVAL;
    if (proc_matches(h->pid, h->start_time, NULL) && kill(-h->pid, sig) == 0)
        hit++;
    if (sig == SIGKILL && h->cgroup[0])
        hit += sl_cgroup_task_signal(&x->cg, h->cgroup, SIGKILL);
    return hit ? 0 : -ESRCH;
}

int sl_exec_poll(struct sl_exec *x, struct sl_exec_handle *h, int *exit_code)
{
    pid_t shim = 0;
    uint64_t unused_start;
    pid_t unused_pid;

    if (!x || !h || !exit_code)
        return -EINVAL;
    if (h->shim_pid > 0) {
        struct kid *k = kid_find(x, h->shim_pid);
        if (!k || !k->exited) {
            int st = 0;
            pid_t r;
            do
                r = waitpid(h->shim_pid, &st, WNOHANG);
            while (r < 0 && errno == EINTR);
            if (r == 0)
                return 0;
            /* r == shim, or ECHILD: someone else reaped it; gone either way. */
        }
        kid_remove(x, h->shim_pid);
        if (read_exit(x, h->job_id, h->task_index, h->attempt, exit_code) ==
            0)
            return 1;
        sl_warn("msg=\"task lost: shim gone without exit record\" job=%lld "
                "task=%d attempt=%d",
                (long long)h->job_id, h->task_index, h->attempt);
        kill_remains(x, h);
        return -ESRCH;
    }

    /* Adopted: the shim is not our child. */
    if (task_alive(h->pid, h->start_time))
        return 0;
    if (read_exit(x, h->job_id, h->task_index, h->attempt, exit_code) == 0)
        return 1;
    if (read_pid_file(x, h->job_id, h->task_index, h->attempt, &unused_pid,
                      &unused_start, &shim, NULL) == 0 &&
        shim_alive(shim, h->start_time))
        return 0; /* still draining the pipes; the record comes next */
    /* The shim may have written the record and exited just now. */
    if (read_exit(x, h->job_id, h->task_index, h->attempt, exit_code) == 0)
        return 1;
    kill_remains(x, h);
    return -ESRCH;
}

/* An adopted task's network: isolated when its namespace is not ours. */
static void adopt_network(struct sl_exec_handle *h)
{
    char path[64], ours[64], theirs[64];
    ssize_t a, b;

    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)h->pid);
    a = readlink("/proc/self/ns/net", ours, sizeof(ours) - 1);
    b = readlink(path, theirs, sizeof(theirs) - 1);
    h->network_enforced = SL_EXEC_NET_EGRESS;
    if (a < 0 || b < 0) {
        snprintf(h->network_note, sizeof(h->network_note),
                 "the task's network namespace is unknown: %s",
                 strerror(errno));
        return;
    }
    ours[a] = theirs[b] = '\0';
    if (strcmp(ours, theirs) != 0)
        h->network_enforced = SL_EXEC_NET_ISOLATED;
}

/* An adopted task's GPUs: isolated when the pid file says they were at
 * the start and, while its main process lives, its rules still hold
 * (cgroup.h); a task whose shim is only draining its output keeps what was
 * recorded. */
static void adopt_gpus(const struct sl_exec *x, struct sl_exec_handle *h,
                       int recorded)
{
    char rel[256], why[256] = "";

    h->gpus_enforced = false;
    sl_cgroup_task_rel(&x->cg, h->job_id, h->task_index, h->attempt, rel,
                       sizeof(rel));
    if (recorded < 0)
        sl_strlcpy(why, "its pid file does not record its device rules",
                   sizeof(why));
    else if (recorded == 0)
        sl_strlcpy(why, "it was not when the task started", sizeof(why));
    else if (!task_alive(h->pid, h->start_time) ||
             sl_cgroup_task_devices_check(&x->cg, rel, h->pid, why,
                                          sizeof(why)) == 0)
        h->gpus_enforced = true;
    if (!h->gpus_enforced)
        snprintf(h->gpus_note, sizeof(h->gpus_note),
                 "GPU isolation not enforced: %s", why);
}

int sl_exec_adopt(struct sl_exec *x, int64_t job_id, int task_index,
                  int attempt, struct sl_exec_handle *h, int *exit_code)
{
    struct sl_exec_handle nh;
    pid_t pid, shim;
    uint64_t start;
    int gpus = -1;

    if (!x || !h || !exit_code || job_id < 0 || task_index < 0 || attempt < 0)
        return -EINVAL;
    memset(&nh, 0, sizeof(nh));
    nh.job_id = job_id;
    nh.task_index = task_index;
    nh.attempt = attempt;
    if (x->cg.nhier != 0) {
        sl_cgroup_task_rel(&x->cg, job_id, task_index, attempt, nh.cgroup,
                           sizeof(nh.cgroup));
        if (sl_cgroup_task_exists(&x->cg, nh.cgroup)) {
            nh.limits_enforced = x->cg.version != 0;
            sl_strlcpy(nh.limits_note, nh.limits_enforced ? "" : x->cg.note,
                       sizeof(nh.limits_note));
        } else {
            nh.cgroup[0] = '\0';
            sl_strlcpy(nh.limits_note, "no cgroup found for this task",
                       sizeof(nh.limits_note));
        }
    } else {
        sl_strlcpy(nh.limits_note, x->cg.note, sizeof(nh.limits_note));
    }
    if (read_exit(x, job_id, task_index, attempt, exit_code) == 0) {
        *h = nh;
        return 1;
    }
    if (read_pid_file(x, job_id, task_index, attempt, &pid, &start, &shim,
                      &gpus) < 0)
        return -ESRCH;
    nh.pid = pid;
    nh.start_time = start;
    nh.shim_pid = 0;
    if (task_alive(pid, start) || shim_alive(shim, start)) {
        adopt_network(&nh);
        adopt_gpus(x, &nh, gpus);
        *h = nh;
        return 0;
    }
    if (read_exit(x, job_id, task_index, attempt, exit_code) == 0) {
        *h = nh;
        return 1;
    }
    kill_remains(x, &nh);
    return -ESRCH;
}

void sl_exec_release(struct sl_exec *x, const struct sl_exec_handle *h)
{
    char path[PATH_MAX];
    static const char *const suffixes[] = {"pid", "pid.tmp", "exit", "exit.tmp", "sock"};
    int saved = errno;

    if (!x || !h)
        return;
    for (size_t i = 0; i < SL_ARRAY_LEN(suffixes); i++)
        if (file_path(x, h->job_id, h->task_index, h->attempt, suffixes[i],
                      path, sizeof(path)) == 0)
            unlink(path);
    if (h->cgroup[0]) {
        int rc = 0;
        /* Members killed a moment ago may take a few ms to leave. */
        for (int i = 0; i < 50; i++) {
            struct timespec ts = {0, 2000000};
            if ((rc = sl_cgroup_task_remove(&x->cg, h->cgroup)) != -EBUSY)
                break;
            sl_cgroup_task_signal(&x->cg, h->cgroup, SIGKILL);
            nanosleep(&ts, NULL);
        }
        if (rc < 0)
            sl_warn("msg=\"cannot remove task cgroup\" cgroup=%s error=\"%s\"",
                    h->cgroup, strerror(-rc));
    }
    if (h->shim_pid > 0) {
        struct kid *k = kid_find(x, h->shim_pid);
        if (k && k->exited)
            kid_remove(x, h->shim_pid);
        else if (k)
            k->released = true;
    }
    errno = saved;
}

size_t sl_exec_reap(struct sl_exec *x, const pid_t **exited)
{
    int saved = errno;

    if (exited)
        *exited = NULL;
    if (!x)
        return 0;
    x->nexited = 0;
    /* Every child of the daemon is a shim: one waitpid per exit, not one
     * per running task. */
    for (;;) {
        int st = 0;
        pid_t r = waitpid(-1, &st, WNOHANG);
        struct kid *k;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (!(k = kid_find(x, r)))
            continue; /* not ours (cannot happen); nothing to report */
        k->exited = true;
        k->status = st;
        if (k->released) {
            kid_remove(x, r);
            continue;
        }
        if (x->nexited == x->exited_cap) {
            size_t cap = x->exited_cap ? x->exited_cap * 2 : 64;
            pid_t *np = realloc(x->exited, cap * sizeof(*np));
            if (!np)
                continue; /* the engine's periodic poll finds it */
            x->exited = np;
            x->exited_cap = cap;
        }
        x->exited[x->nexited++] = r;
    }
    if (exited)
        *exited = x->exited;
    errno = saved;
    return x->nexited;
}
