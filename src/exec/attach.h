/*
 * attach.h - the wire between an interactive task's shim and sluiced.
 *
 * The shim of an interactive task (exec.h, sl_exec_task.tty) holds the
 * master of the task's pseudo-terminal and listens on a Unix socket of its
 * own, <run_dir>/<job>.<task>.<attempt>.sock (the run directory is the
 * daemon's, mode 0700: no task can reach it unless it runs as the daemon's
 * account). A connection to it is an attached client; a newer connection
 * replaces an older one (sluiced allows one attach per job and serialises
 * them). Both ways the stream is a sequence of messages:
 *
 *   byte 0      channel (enum sl_attach_channel)
 *   bytes 1-2   payload length, big-endian, 0..SL_ATTACH_MSG_MAX
 *   bytes 3..   payload
 *
 * To the shim: STDIN (bytes for the terminal's input), RESIZE (4 bytes:
 * rows and columns, each big-endian 16 bits, 1..SL_ATTACH_DIM_MAX). From
 * the shim: OUTPUT (what the terminal showed), then, when the task's main
 * process has ended and its output was drained, one STATUS (1 byte: the
 * exit code as the exit record has it, 128 + N for a signal N) before it
 * closes. Anything else is a protocol error: the receiver drops the
 * connection.
 *
 * Not thread-safe by itself; the functions below are pure or use only
 * their arguments.
 */
#ifndef SL_ATTACH_H
#define SL_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#define SL_ATTACH_HEAD 3          /* channel byte + 16-bit length */
#define SL_ATTACH_MSG_MAX 16384   /* payload bytes of one message */
#define SL_ATTACH_DIM_MAX 10000   /* rows or columns of a terminal */

enum sl_attach_channel {
    SL_ATTACH_STDIN = 0,
    SL_ATTACH_OUTPUT = 1,
    SL_ATTACH_STATUS = 3,
    SL_ATTACH_RESIZE = 4,
};

/* Write a message header for 'len' bytes of 'chan' into out. */
static inline void sl_attach_head(uint8_t out[SL_ATTACH_HEAD], int chan, size_t len)
{
    out[0] = (uint8_t)chan;
    out[1] = (uint8_t)(len >> 8);
    out[2] = (uint8_t)len;
}

/* The address of the Unix socket at 'path' in *sa (and its length in
 * *salen). A path longer than sun_path is reached through the directory:
 * *dirfd is then an O_PATH descriptor of it, named /proc/self/fd/N in the
 * address, to be closed by the caller after bind or connect (else -1).
 * Returns 0 or -ENAMETOOLONG / -errno. */
int sl_attach_addr(const char *path, struct sockaddr_un *sa, size_t *salen, int *dirfd);

#endif
