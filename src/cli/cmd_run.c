/*
 * cmd_run.c - `sluice run [FLAGS] -- CMD ARGS...`: submit a job document
 * built from flags (jobdoc.c) and print the new job's id; with -i or -t,
 * stay as its terminal (attach.c). `sluice shell [FLAGS]`: run -t of the
 * job account's shell. `sluice attach JOB`: the terminal of an interactive
 * job submitted before (a session left by Ctrl-C or a lost connection).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sl_cli_cmd_run(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    json_t *doc = NULL, *job = NULL;
    char *body = NULL;
    int rc, code, attach = SL_CLI_ATTACH_NONE;

    rc = sl_cli_run_doc(ctx, argc, argv, &doc, &attach, &err);
    if (rc == SL_CLI_ARG_HELP || rc == SL_CLI_ARG_VERSION)
        return sl_cli_arg_special(ctx, rc, &err);
    if (rc < 0)
        return sl_cli_usage_error(&err);
    if (!(body = json_dumps(doc, JSON_COMPACT))) {
        sl_cli_errorf("out of memory");
        code = SL_CLI_FAILED;
        goto out;
    }
    code = sl_cli_call_json(ctx, "POST", "/v1/jobs", "application/json", body,
                            strlen(body), NULL, &job);
    if (code == SL_CLI_OK && attach == SL_CLI_ATTACH_NONE)
        code = sl_cli_print_created(ctx, job);
    else if (code == SL_CLI_OK) {
        bool tty = attach == SL_CLI_ATTACH_TTY && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
        json_int_t id = json_integer_value(json_object_get(job, "id"));
        /* stdout is the session's: what sluice says goes to stderr */
        fprintf(stderr, "sluice: job %lld submitted\n", (long long)id);
        if (attach == SL_CLI_ATTACH_TTY && !tty)
            fprintf(stderr, "sluice: stdin or stdout is not a terminal: no raw mode (as -i)\n");
        code = sl_cli_attach_job(ctx, id, tty, true);
    }
out:
    free(body);
    json_decref(doc);
    json_decref(job);
    return code;
}

int sl_cli_cmd_shell(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    /* The account's login shell; an account that has none (nologin,
     * false: the default job account, nobody) gets sh. */
    static char *const tail[] = {
        "--", "sh", "-c",
        "case \"$SHELL\" in ''|*/nologin|*/false) exec /bin/sh;; *) exec \"$SHELL\";; esac"};
    char **av = calloc((size_t)argc + 2 + SL_ARRAY_LEN(tail), sizeof(*av));
    int n = 0, code;

    if (!av) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    av[n++] = "run";
    av[n++] = "-t";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            free(av);
            sl_cli_errorf("shell: takes no command (use sluice run -it -- CMD)");
            return SL_CLI_USAGE;
        }
        av[n++] = argv[i];
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(tail); i++)
        av[n++] = tail[i];
    code = sl_cli_cmd_run(ctx, n, av);
    free(av);
    return code;
}

int sl_cli_cmd_attach(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    const char *pos[1];
    char path[64], what[40];
    json_t *job = NULL;
    bool interactive;
    int64_t id;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 1, &n)) != SL_CLI_OK)
        return code;
    if (n == 0) {
        sl_cli_errorf("attach: JOB is required (sluice attach JOB)");
        return SL_CLI_USAGE;
    }
    if (sl_cli_job_id(pos[0], &id, &err) < 0)
        return sl_cli_usage_error(&err);
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, what, &job)) != SL_CLI_OK)
        return code;
    /* "spec" is the job's document, its own "spec" within */
    interactive = json_is_true(json_object_get(
        json_object_get(json_object_get(job, "spec"), "spec"), "interactive"));
    json_decref(job);
    if (!interactive) {
        sl_cli_errorf("%s is not interactive: it has no terminal to attach to (sluice logs "
                      "%lld shows its output)", what, (long long)id);
        return SL_CLI_REFUSED; /* as the server's 409 to an attach would be */
    }
    /* someone's job, perhaps: an interrupt while it waits ends the wait,
     * not the job */
    return sl_cli_attach_job(ctx, id, isatty(STDIN_FILENO) && isatty(STDOUT_FILENO), false);
}
