/*
 * run.h - run a program (no shell) and collect what it prints: for the
 * cluster tools an executor drives (sbatch, squeue, scontrol, scancel).
 *
 * The program is started with posix_spawnp (safe in a threaded daemon),
 * with the default signal mask and dispositions, stdin fed from a buffer,
 * stdout and stderr captured up to a cap each, and killed (SIGKILL) when
 * it outlives its deadline. Thread-safe: no shared state; it waits for its
 * own child only (waitpid on the pid), so a SIGCHLD handler elsewhere in
 * the process does not lose its status.
 */
#ifndef SL_RUN_H
#define SL_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "../util/buf.h"
#include "../util/util.h"

#define SL_RUN_OUT_MAX ((size_t)64 << 20) /* the most a caller may ask to keep */

struct sl_run_result {
    int status;                   /* exit code; 128 + N when killed by
                                     signal N; -1 when it did not run */
    bool timed_out;               /* killed at its deadline */
    bool truncated;               /* stdout was over the cap (cut) */
    struct sl_buf out;            /* stdout, NUL-terminated when len > 0 */
    struct sl_buf err;            /* stderr, at most 4 KiB */
};

/* Run argv[0] (looked up in the caller's PATH) with argv and the
 * environment 'envp' (NULL: the process's own), feeding 'input' (may be NULL)
 * on its stdin, keeping at most 'out_cap' bytes of its stdout, for at most
 * 'timeout_ms'. Returns 0 when it ran to its end (whatever its status),
 * -ETIMEDOUT when it was killed at its deadline, -ENOENT when it cannot be
 * started, -ENOMEM; 'err' says which. The result's buffers are the
 * caller's to free (sl_run_result_fini) in every case. */
int sl_run(char *const argv[], char *const envp[], const char *input, size_t input_len,
           size_t out_cap, int64_t timeout_ms, struct sl_run_result *res, struct sl_error *err);

/* Free the result's buffers; NULL-safe. */
void sl_run_result_fini(struct sl_run_result *res);

/* The first line of its stderr (or of stdout when stderr is empty), for
 * messages: at most 'size' - 1 bytes, control characters replaced. */
void sl_run_say(const struct sl_run_result *res, char *buf, size_t size);

#endif
