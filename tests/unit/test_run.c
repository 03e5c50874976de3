/*
 * test_run.c - running a program and collecting what it prints
 * (src/exec/run.h), as the Slurm executor runs sbatch, squeue, scontrol
 * and scancel: the environment given (or the process's own), stdin fed,
 * stdout kept up to its cap, stderr, the exit status and signals, the
 * deadline, a program that is not there. Real processes (/bin/sh, env).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/exec/run.h"
#include "../tap.h"

static void environment(void)
{
    struct sl_run_result r;
    struct sl_error err = {0};
    char *argv[] = {"env", NULL};
    char *envp[] = {"A=1", "B=two words", NULL};

    setenv("SL_TEST_RUN_PARENT", "leaked", 1);
    ok(sl_run(argv, envp, NULL, 0, 4096, 10000, &r, &err) == 0 && r.status == 0,
       "env runs with an environment of its own");
    ok(r.out.data && strcmp(r.out.data, "A=1\nB=two words\n") == 0,
       "it sees exactly that environment: '%s'", r.out.data ? r.out.data : "(none)");
    sl_run_result_fini(&r);

    ok(sl_run(argv, NULL, NULL, 0, 1 << 20, 10000, &r, &err) == 0 && r.status == 0,
       "env runs with the process's environment (envp NULL)");
    ok(r.out.data && strstr(r.out.data, "SL_TEST_RUN_PARENT=leaked\n") != NULL,
       "which it then sees");
    sl_run_result_fini(&r);
    unsetenv("SL_TEST_RUN_PARENT");
}

static void io_and_status(void)
{
    struct sl_run_result r;
    struct sl_error err = {0};
    char *cat[] = {"/bin/sh", "-c", "cat; echo oops >&2; exit 3", NULL};
    char *big[] = {"/bin/sh", "-c", "i=0; while [ $i -lt 200 ]; do echo 0123456789; "
                                    "i=$((i+1)); done", NULL};
    char *kill9[] = {"/bin/sh", "-c", "kill -9 $$", NULL};
    char *slow[] = {"/bin/sh", "-c", "exec sleep 5", NULL};
    char *none[] = {"/nonexistent/sluice-no-such-tool", NULL};
    char say[64];

    ok(sl_run(cat, NULL, "in", 2, 4096, 10000, &r, &err) == 0, "sh runs to its end");
    is_int(r.status, 3, "its exit status");
    ok(r.out.data && strcmp(r.out.data, "in") == 0, "stdin fed, echoed on stdout");
    sl_run_say(&r, say, sizeof(say));
    is_str(say, "oops", "the first line of stderr, for messages");
    sl_run_result_fini(&r);

    ok(sl_run(big, NULL, NULL, 0, 100, 10000, &r, &err) == 0 && r.truncated,
       "stdout over its cap: truncated");
    is_int((int)r.out.len, 100, "kept to the cap");
    sl_run_result_fini(&r);

    ok(sl_run(kill9, NULL, NULL, 0, 4096, 10000, &r, &err) == 0, "a program killed by a signal");
    is_int(r.status, 128 + 9, "its status is 128 + the signal");
    sl_run_result_fini(&r);

    ok(sl_run(slow, NULL, NULL, 0, 4096, 200, &r, &err) == -ETIMEDOUT && r.timed_out,
       "a program past its deadline is killed: -ETIMEDOUT");
    sl_run_result_fini(&r);

    ok(sl_run(none, NULL, NULL, 0, 4096, 10000, &r, &err) == -ENOENT,
       "a program that is not there: -ENOENT (%s)", err.text);
    sl_run_result_fini(&r);
}

int main(void)
{
    environment();
    io_and_status();
    return done_testing();
}
