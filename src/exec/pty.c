/*
 * pty.c - interactive tasks of the local executor (exec.h,
 * sl_exec_task.tty): the pseudo-terminal and the attach socket, made in
 * the daemon before fork, and the shim's loop that serves them after.
 *
 * The shim holds the terminal's master and the listening socket, so a
 * session outlives a restart of sluiced (decision 0002 for tasks, 0012 for
 * sessions): a client attaches again through the new daemon. The loop:
 *
 *   master -> log (always, within its cap) and -> the attached client as
 *             OUTPUT messages; read only while the client's queue has room
 *             for one more message, so a slow client slows the task's
 *             writes instead of growing a buffer; with nobody attached the
 *             output goes to the log alone and the task never blocks;
 *   client -> STDIN messages into the master (read only once the previous
 *             one was written: a task that does not read its terminal
 *             stops the client's input, not the shim's memory), RESIZE
 *             into TIOCSWINSZ (the kernel sends SIGWINCH);
 *   accept -> a newer client replaces the attached one;
 *   nobody attached for the grace -> hang-up: SIGHUP to the task's group
 *             and to the terminal's foreground group, SIGKILL later if the
 *             main process still runs.
 *
 * Invariants: after fork only async-signal-safe calls (no malloc, no
 * stdio; buffers on the shim's stack); every read is bounded by the room
 * of the buffer it goes to; a client that breaks the wire (attach.h) is
 * dropped, never trusted further.
 */
#include "attach.h"
#include "proc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define TTY_TICK_MS 100           /* check the main process this often */
#define TTY_DRAIN_IDLE_MS 100     /* after its exit: stop after this idle */
#define TTY_DRAIN_MAX_MS 2000     /* ... and in any case after this long */
#define TTY_OUT_CAP 65536         /* queued for the client: whole messages */
#define TTY_STATUS_WAIT_MS 2000   /* the last output and the status */
#define TTY_MISSED_MAX 4096       /* output nobody saw, shown on attach */
_Static_assert(TTY_MISSED_MAX <= SL_ATTACH_MSG_MAX && TTY_MISSED_MAX + SL_ATTACH_HEAD <= TTY_OUT_CAP,
               "what a client missed goes out as one message");

/* ---- in the daemon, before fork ------------------------------------------ */

int sl_attach_addr(const char *path, struct sockaddr_un *sa, size_t *salen, int *dirfd)
{
    size_t n = strlen(path);
    const char *slash;
    char dir[PATH_MAX];

    *dirfd = -1;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (n < sizeof(sa->sun_path)) {
        memcpy(sa->sun_path, path, n + 1);
    } else {
        /* Too long for sun_path: go through a descriptor of its directory. */
        if (!(slash = strrchr(path, '/')) || (size_t)(slash - path) >= sizeof(dir))
            return -ENAMETOOLONG;
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        if ((*dirfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
            return -errno;
        if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s",
                             *dirfd, slash + 1) >= sizeof(sa->sun_path)) {
            close(*dirfd);
            *dirfd = -1;
            return -ENAMETOOLONG;
        }
    }
    *salen = offsetof(struct sockaddr_un, sun_path) + strlen(sa->sun_path) + 1;
    return 0;
}

/* The group and mode of the terminal, as login and sshd give them: group
 * tty, 0620 (so that write(1) can reach it); without such a group the
 * account's own, 0600. */
static void tty_owner(const struct plan *p, gid_t *gid, mode_t *mode)
{
    struct group gr, *res = NULL;
    char buf[4096];

    *gid = p->switch_user ? p->gid : getegid();
    *mode = 0600;
    if (getgrnam_r("tty", &gr, buf, sizeof(buf), &res) == 0 && res) {
        *gid = gr.gr_gid;
        *mode = 0620;
    }
}

static int listen_attach(struct plan *p, struct sl_error *err)
{
    struct sockaddr_un sa;
    size_t salen = 0;
    int dirfd = -1, rc;

    if ((p->attach_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
        return sl_errorf(err, -errno, "attach socket: %s", strerror(errno));
    if ((rc = sl_attach_addr(p->attach_path, &sa, &salen, &dirfd)) < 0)
        return sl_errorf(err, rc, "attach socket %s: %s", p->attach_path, strerror(-rc));
    unlink(sa.sun_path);
    rc = bind(p->attach_fd, (struct sockaddr *)&sa, (socklen_t)salen) < 0 ||
                 chmod(sa.sun_path, 0600) < 0 || listen(p->attach_fd, 4) < 0
             ? -errno
             : 0;
    if (dirfd >= 0)
        close(dirfd);
    if (rc < 0)
        return sl_errorf(err, rc, "attach socket %s: %s", p->attach_path, strerror(-rc));
    return 0;
}

int sl_proc_plan_tty(struct plan *p, struct sl_error *err)
{
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    char name[64];
    gid_t gid;
    mode_t mode;
    int rc;

    p->tty = true;
    if ((p->pty_master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
        return sl_errorf(err, -errno, "posix_openpt: %s", strerror(errno));
    if (unlockpt(p->pty_master) < 0 || (rc = ptsname_r(p->pty_master, name, sizeof(name))) != 0)
        return sl_errorf(err, -errno, "pseudo-terminal: %s", strerror(errno));
    if ((p->pty_slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
        return sl_errorf(err, -errno, "%s: %s", name, strerror(errno));
    tty_owner(p, &gid, &mode);
    /* The task's account owns its terminal. A daemon that is not root runs
     * tasks as itself, which owns it already. */
    if ((geteuid() == 0 && fchown(p->pty_slave, p->switch_user ? p->uid : 0, gid) < 0) ||
        fchmod(p->pty_slave, mode) < 0)
        return sl_errorf(err, -errno, "%s: %s", name, strerror(errno));
    if (ioctl(p->pty_master, TIOCSWINSZ, &ws) < 0 ||
        fcntl(p->pty_master, F_SETFL, O_RDWR | O_NONBLOCK) < 0)
        return sl_errorf(err, -errno, "%s: %s", name, strerror(errno));
    return listen_attach(p, err);
}

/* ---- in the shim, after fork ---------------------------------------------- */

struct tty {
    const struct plan *p;
    pid_t task;
    int conn;                     /* the attached client, or -1 */
    uint8_t out[TTY_OUT_CAP];     /* OUTPUT messages for it */
    size_t out_len, out_off;
    uint8_t in[SL_ATTACH_HEAD + SL_ATTACH_MSG_MAX]; /* one message from it */
    size_t in_len;
    uint8_t kbd[SL_ATTACH_MSG_MAX]; /* its STDIN bytes, for the master */
    size_t kbd_len, kbd_off;
    int64_t alone_ms;             /* nobody attached since (0: someone is) */
    int64_t alone_max_ms;         /* then the terminal is hung up */
    int64_t hup_ms;               /* the hang-up (0: none yet) */
    bool killed;
    int64_t written;              /* log bytes */
    bool truncated;
    uint8_t missed[TTY_MISSED_MAX]; /* the last output while nobody was
                                     attached (a shell's prompt), for the
                                     next client */
    size_t nmissed;
};

/* Keep the last TTY_MISSED_MAX bytes of what nobody saw. */
static void missed_add(struct tty *t, const uint8_t *p, size_t n)
{
    if (n >= TTY_MISSED_MAX) {
        memcpy(t->missed, p + n - TTY_MISSED_MAX, TTY_MISSED_MAX);
        t->nmissed = TTY_MISSED_MAX;
        return;
    }
    if (t->nmissed + n > TTY_MISSED_MAX) {
        size_t drop = t->nmissed + n - TTY_MISSED_MAX;
        memmove(t->missed, t->missed + drop, t->nmissed - drop);
        t->nmissed -= drop;
    }
    memcpy(t->missed + t->nmissed, p, n);
    t->nmissed += n;
}

static void conn_drop(struct tty *t, int64_t now)
{
    if (t->conn < 0)
        return;
    close(t->conn);
    t->conn = -1;
    t->out_len = t->out_off = t->in_len = t->kbd_len = t->kbd_off = 0;
    t->alone_ms = now;
    t->alone_max_ms = t->p->detach_grace_ms;
}

/* The messages read from the client: STDIN waits in kbd, RESIZE goes to
 * the terminal. Stops at the first STDIN until it was written. */
static void conn_messages(struct tty *t, int64_t now)
{
    size_t off = 0;

    while (t->kbd_len == 0 && t->in_len - off >= SL_ATTACH_HEAD) {
        const uint8_t *m = t->in + off;
        size_t len = (size_t)m[1] << 8 | m[2];
        if (len > SL_ATTACH_MSG_MAX) {
            conn_drop(t, now);
            return;
        }
        if (t->in_len - off < SL_ATTACH_HEAD + len)
            break;
        if (m[0] == SL_ATTACH_STDIN) {
            memcpy(t->kbd, m + SL_ATTACH_HEAD, len);
            t->kbd_len = len;
            t->kbd_off = 0;
        } else if (m[0] == SL_ATTACH_RESIZE && len == 4) {
            struct winsize ws = {.ws_row = (unsigned short)(m[3] << 8 | m[4]),
                                 .ws_col = (unsigned short)(m[5] << 8 | m[6])};
            if (ws.ws_row < 1 || ws.ws_row > SL_ATTACH_DIM_MAX || ws.ws_col < 1 ||
                ws.ws_col > SL_ATTACH_DIM_MAX) {
                conn_drop(t, now);
                return;
            }
            ioctl(SL_SHIM_MASTER_FD, TIOCSWINSZ, &ws);
        } else {
            conn_drop(t, now);
            return;
        }
        off += SL_ATTACH_HEAD + len;
    }
    memmove(t->in, t->in + off, t->in_len - off);
    t->in_len -= off;
}

static void conn_read(struct tty *t, int64_t now)
{
    ssize_t n = read(t->conn, t->in + t->in_len, sizeof(t->in) - t->in_len);

    if (n > 0) {
        t->in_len += (size_t)n;
        conn_messages(t, now);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        conn_drop(t, now);
    }
}

static void conn_write(struct tty *t, int64_t now)
{
    ssize_t n = send(t->conn, t->out + t->out_off, t->out_len - t->out_off, MSG_NOSIGNAL);

    if (n > 0) {
        t->out_off += (size_t)n;
        if (t->out_off == t->out_len)
            t->out_len = t->out_off = 0;
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        conn_drop(t, now);
    }
}

/* Read the master into the log and, when someone is attached, into an
 * OUTPUT message. Returns false at the terminal's end (EIO: no slave
 * left open, or EOF). */
static bool master_read(struct tty *t)
{
    uint8_t buf[SL_ATTACH_MSG_MAX];
    size_t want = sizeof(buf);
    ssize_t n;

    if (t->conn >= 0)
        want = TTY_OUT_CAP - t->out_len - SL_ATTACH_HEAD; /* room was checked */
    if (want > sizeof(buf))
        want = sizeof(buf);
    n = read(SL_SHIM_MASTER_FD, buf, want);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    if (n == 0)
        return false;
    sl_proc_log_append(t->p, (const char *)buf, (size_t)n, &t->written, &t->truncated);
    if (t->conn >= 0) {
        sl_attach_head(t->out + t->out_len, SL_ATTACH_OUTPUT, (size_t)n);
        memcpy(t->out + t->out_len + SL_ATTACH_HEAD, buf, (size_t)n);
        t->out_len += SL_ATTACH_HEAD + (size_t)n;
    } else {
        missed_add(t, buf, (size_t)n);
    }
    return true;
}

static void master_write(struct tty *t, int64_t now)
{
    ssize_t n = write(SL_SHIM_MASTER_FD, t->kbd + t->kbd_off, t->kbd_len - t->kbd_off);

    if (n > 0) {
        t->kbd_off += (size_t)n;
        if (t->kbd_off == t->kbd_len)
            t->kbd_len = t->kbd_off = 0;
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        t->kbd_len = t->kbd_off = 0; /* the terminal is gone: drop the input */
    }
    /* The client's next messages may be read already: take them now,
     * since no new byte may come to wake the loop for them. */
    if (t->kbd_len == 0 && t->conn >= 0)
        conn_messages(t, now);
}

static void accept_client(struct tty *t, int64_t now)
{
    int fd = accept4(SL_SHIM_ATTACH_FD, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0)
        return;
    conn_drop(t, now); /* the newer client replaces the older one */
    t->conn = fd;
    t->alone_ms = 0;
    /* It sees first what came while nobody was attached (its tail). */
    if (t->nmissed) {
        sl_attach_head(t->out, SL_ATTACH_OUTPUT, t->nmissed);
        memcpy(t->out + SL_ATTACH_HEAD, t->missed, t->nmissed);
        t->out_len = SL_ATTACH_HEAD + t->nmissed;
        t->nmissed = 0;
    }
}

/* Nobody attached for too long: hang the terminal up, as closing an ssh
 * session does, then kill what ignores that. */
static void hangup_check(struct tty *t, int64_t now)
{
    if (t->alone_ms && !t->hup_ms && now - t->alone_ms >= t->alone_max_ms) {
        pid_t fg = tcgetpgrp(SL_SHIM_MASTER_FD);
        kill(-t->task, SIGHUP);
        kill(-t->task, SIGCONT);
        if (fg > 0 && fg != t->task) {
            kill(-fg, SIGHUP);
            kill(-fg, SIGCONT);
        }
        t->hup_ms = now;
    }
    if (t->hup_ms && !t->killed && now - t->hup_ms >= SL_EXEC_HUP_KILL_MS) {
        kill(-t->task, SIGKILL);
        if (t->p->in_cgroup)
            sl_cgroup_task_kill_all(&t->p->cgt);
        t->killed = true;
    }
}

int sl_proc_pump_tty(const struct plan *p, pid_t task, int *conn)
{
    /* Static, not on the stack: the shim was forked from a daemon thread
     * whose stack may be small, and this is about 100 KiB. The shim is a
     * process of its own with one terminal. */
    static struct tty t;
    int64_t exit_ms = 0;
    bool exited = false, master_open = true;
    int status = 0;

    memset(&t, 0, sizeof(t));
    t.p = p;
    t.task = task;
    t.conn = -1;
    t.written = p->log_written;
    t.alone_ms = sl_proc_mono_ms();
    t.alone_max_ms = p->detach_grace_ms > SL_EXEC_FIRST_ATTACH_MS ? p->detach_grace_ms
                                                                  : SL_EXEC_FIRST_ATTACH_MS;
    for (;;) {
        struct pollfd fds[3];
        int64_t now = sl_proc_mono_ms();
        bool room = t.conn < 0 || TTY_OUT_CAP - t.out_len >= SL_ATTACH_HEAD + 1;
        int n;

        if (!exited && waitpid(task, &status, WNOHANG) == task) {
            exited = true;
            exit_ms = now;
        }
        if (exited && (!master_open || now - exit_ms >= TTY_DRAIN_MAX_MS))
            break;
        if (!exited)
            hangup_check(&t, now);
        /* A descriptor left out (-1) reports nothing, not even a hang-up
         * that would wake the loop while its buffer is full. */
        fds[0].fd = master_open && (room || t.kbd_len) ? SL_SHIM_MASTER_FD : -1;
        fds[0].events = (short)((room ? POLLIN : 0) | (t.kbd_len ? POLLOUT : 0));
        fds[1].fd = exited ? -1 : SL_SHIM_ATTACH_FD;
        fds[1].events = POLLIN;
        fds[2].fd = t.conn;
        fds[2].events = (short)((t.kbd_len == 0 ? POLLIN : 0) |
                                (t.out_len > t.out_off ? POLLOUT : 0));
        n = poll(fds, 3, exited ? TTY_DRAIN_IDLE_MS : TTY_TICK_MS);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        if (n == 0 && exited)
            break; /* idle after the exit: the output is drained */
        now = sl_proc_mono_ms();
        if (fds[0].fd >= 0 && (fds[0].revents & POLLOUT))
            master_write(&t, now);
        if (fds[0].fd >= 0 && room && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            master_open = master_read(&t);
        if (fds[1].fd >= 0 && (fds[1].revents & POLLIN))
            accept_client(&t, now);
        else if (fds[2].fd >= 0 && fds[2].fd == t.conn) {
            if (fds[2].revents & POLLOUT)
                conn_write(&t, now);
            if (t.conn >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)))
                conn_read(&t, now);
        }
    }
    while (!exited) {
        if (waitpid(task, &status, 0) == task)
            exited = true;
        else if (errno != EINTR)
            break;
    }
    /* What is still queued goes out before the status, within a bound. */
    for (int64_t end = sl_proc_mono_ms() + TTY_STATUS_WAIT_MS;
         t.conn >= 0 && t.out_len > t.out_off && sl_proc_mono_ms() < end;) {
        struct pollfd pfd = {t.conn, POLLOUT, 0};
        if (poll(&pfd, 1, 100) > 0)
            conn_write(&t, sl_proc_mono_ms());
    }
    *conn = t.conn;
    return status;
}

void sl_proc_tty_status(int conn, int code)
{
    uint8_t m[SL_ATTACH_HEAD + 1];
    size_t off = 0;
    int64_t end = sl_proc_mono_ms() + TTY_STATUS_WAIT_MS;

    sl_attach_head(m, SL_ATTACH_STATUS, 1);
    m[SL_ATTACH_HEAD] = (uint8_t)code;
    while (off < sizeof(m) && sl_proc_mono_ms() < end) {
        struct pollfd pfd = {conn, POLLOUT, 0};
        ssize_t n;
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        n = send(conn, m + off, sizeof(m) - off, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            break;
        if (n > 0)
            off += (size_t)n;
    }
    close(conn);
}
