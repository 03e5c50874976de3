/*
 * run.c - run a program and collect its output (run.h).
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ERR_CAP 4096

extern char **environ;

void sl_run_result_fini(struct sl_run_result *res)
{
    if (!res)
        return;
    sl_buf_fini(&res->out);
    sl_buf_fini(&res->err);
}

static void close_pair(int p[2])
{
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0) {
            close(p[i]);
            p[i] = -1;
        }
}

/* Start argv with its three pipes; the parent's ends go to in_w, out_r,
 * err_r. Returns the pid or -errno. */
static pid_t spawn(char *const argv[], char *const envp[], int in[2], int out[2], int errp[2])
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    pid_t pid = -1;
    int rc;

    sigemptyset(&none);
    sigfillset(&all);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    /* the child starts with the default mask and dispositions, whatever
     * the calling thread blocks */
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc ? -rc : pid;
}

/* Append what 'fd' has to 'b', keeping at most 'cap' bytes. Returns 1 at
 * end of file, 0 when more may come. */
static int drain(int fd, struct sl_buf *b, size_t cap, bool *truncated)
{
    char chunk[16384];
    ssize_t n = read(fd, chunk, sizeof(chunk));

    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : 1;
    if (n == 0)
        return 1;
    if (b->len < cap) {
        size_t keep = (size_t)n < cap - b->len ? (size_t)n : cap - b->len;
        sl_buf_add(b, chunk, keep);
        if (keep < (size_t)n && truncated)
            *truncated = true;
    } else if (truncated) {
        *truncated = true;
    }
    return 0;
}

/* Feed input, read both outputs, until both end or the deadline. */
static int pump(pid_t pid, int in_w, int out_r, int err_r, const char *input, size_t len,
                size_t out_cap, int64_t deadline, struct sl_run_result *res)
{
    size_t sent = 0;
    bool out_open = true, err_open = true;

    if (!input || len == 0) {
        close(in_w);
        in_w = -1;
    }
    while (out_open || err_open) {
        struct pollfd pf[3];
        int n = 0, ifd = -1, ofd = -1, efd = -1;
        int64_t left = deadline - sl_mono_ms();
        if (left <= 0) {
            kill(pid, SIGKILL);
            res->timed_out = true;
            break;
        }
        if (in_w >= 0) {
            pf[n] = (struct pollfd){in_w, POLLOUT, 0};
            ifd = n++;
        }
        if (out_open) {
            pf[n] = (struct pollfd){out_r, POLLIN, 0};
            ofd = n++;
        }
        if (err_open) {
            pf[n] = (struct pollfd){err_r, POLLIN, 0};
            efd = n++;
        }
        if (poll(pf, (nfds_t)n, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
            break;
        if (ifd >= 0 && pf[ifd].revents) {
            ssize_t w = (pf[ifd].revents & POLLOUT) ? write(in_w, input + sent, len - sent) : -1;
            if (w > 0)
                sent += (size_t)w;
            if (w < 0 && errno != EINTR && errno != EAGAIN)
                sent = len; /* it closed its stdin: stop feeding */
            if (sent >= len) {
                close(in_w);
                in_w = -1;
            }
        }
        if (ofd >= 0 && pf[ofd].revents && drain(out_r, &res->out, out_cap, &res->truncated))
            out_open = false;
        if (efd >= 0 && pf[efd].revents && drain(err_r, &res->err, ERR_CAP, NULL))
            err_open = false;
    }
    if (in_w >= 0)
        close(in_w);
    return 0;
}

int sl_run(char *const argv[], char *const envp[], const char *input, size_t input_len,
           size_t out_cap, int64_t timeout_ms, struct sl_run_result *res, struct sl_error *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, st = 0, rc = 0;
    pid_t pid;

    memset(res, 0, sizeof(*res));
    sl_buf_init(&res->out);
    sl_buf_init(&res->err);
    res->status = -1;
    if (out_cap > SL_RUN_OUT_MAX)
        out_cap = SL_RUN_OUT_MAX;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        rc = sl_errorf(err, -errno, "%s: pipe: %s", argv[0], strerror(errno));
        goto out;
    }
    if ((pid = spawn(argv, envp, in, out, errp)) < 0) {
        rc = sl_errorf(err, pid == -ENOENT ? -ENOENT : (int)pid, "%s: cannot start: %s", argv[0],
                       strerror((int)-pid));
        goto out;
    }
    close(in[0]);
    close(out[1]);
    close(errp[1]);
    in[0] = out[1] = errp[1] = -1;
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    pump(pid, in[1], out[0], errp[0], input, input_len, out_cap, sl_mono_ms() + timeout_ms,
         res);
    in[1] = -1; /* pump closed it */
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
    if (res->out.failed || res->err.failed)
        rc = sl_errorf(err, -ENOMEM, "%s: out of memory", argv[0]);
    else if (res->timed_out)
        rc = sl_errorf(err, -ETIMEDOUT, "%s: still running after %lld ms: killed", argv[0],
                       (long long)timeout_ms);
out:
    close_pair(in);
    close_pair(out);
    close_pair(errp);
    return rc;
}

void sl_run_say(const struct sl_run_result *res, char *buf, size_t size)
{
    const struct sl_buf *b = res->err.len ? &res->err : &res->out;
    size_t n = 0;

    if (size == 0)
        return;
    for (size_t i = 0; b->data && i < b->len && b->data[i] != '\n' && n + 1 < size; i++)
        buf[n++] = (unsigned char)b->data[i] < 0x20 || b->data[i] == 0x7f ? '?' : b->data[i];
    buf[n] = '\0';
}
