/*
 * cmd_submit.c - `sluice submit -f FILE [--dry-run]`: send a job document
 * as written (YAML or JSON) and print the new job's id, or with --dry-run
 * the admission verdict (nothing is created).
 */
#include "cli.h"

#include <stdio.h>

/* clang-format off */
static const struct sl_cli_opt submit_opts[] = {
    /* long name, short, takes a value, id */
    {"file", 'f', true, 1},
    {"dry-run", '\0', false, 2},
    {NULL, '\0', false, 0},
};
/* clang-format on */

int sl_cli_cmd_submit(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *path = NULL;
    bool dry = false;
    json_t *job = NULL;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, submit_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code == SL_CLI_DONE ? SL_CLI_OK : code;
        if (id == SL_CLI_ARG_POS) {
            sl_cli_errorf("submit: unexpected argument '%.64s' (use -f FILE)", v);
            return SL_CLI_USAGE;
        }
        if (id == 1)
            path = v;
        else
            dry = true;
    }
    if (!path || !*path) {
        sl_cli_errorf("submit: -f FILE is required ('-' reads standard input)");
        return SL_CLI_USAGE;
    }
    code = sl_cli_post_document(ctx, path, dry ? "/v1/jobs?dry_run=true" : "/v1/jobs", false,
                                &job);
    if (code == SL_CLI_OK && !dry)
        code = sl_cli_print_created(ctx, job);
    else if (code == SL_CLI_OK && ctx->output == SL_CLI_OUT_JSON)
        code = sl_cli_print_json(job) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    else if (code == SL_CLI_OK)
        printf("allowed: team %s, queue %s, priority class %s, network %s\n",
               sl_cli_jstr(job, "team"), sl_cli_jstr(job, "queue"),
               sl_cli_jstr(job, "priority_class"), sl_cli_jstr(job, "network"));
    json_decref(job);
    return code;
}
