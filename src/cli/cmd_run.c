/*
 * cmd_run.c - `sluice run [FLAGS] -- CMD ARGS...`: submit a job document
 * built from flags (jobdoc.c) and print the new job's id.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int sl_cli_cmd_run(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    json_t *doc = NULL, *job = NULL;
    char *body = NULL;
    int rc, code;

    rc = sl_cli_run_doc(ctx, argc, argv, &doc, &err);
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
    if (code == SL_CLI_OK)
        code = sl_cli_print_created(ctx, job);
out:
    free(body);
    json_decref(doc);
    json_decref(job);
    return code;
}
