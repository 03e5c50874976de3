/*
 * cmd_submit.c - `sluice submit -f FILE`: send a job document as written
 * (YAML or JSON) and print the new job's id.
 */
#include "cli.h"

int sl_cli_cmd_submit(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *path;
    json_t *job = NULL;
    int code;

    if ((code = sl_cli_parse_file(ctx, argc, argv, &path)) != SL_CLI_OK)
        return code;
    if ((code = sl_cli_post_document(ctx, path, "/v1/jobs", false, &job)) ==
        SL_CLI_OK)
        code = sl_cli_print_created(ctx, job);
    json_decref(job);
    return code;
}
