/*
 * cmd_cancel.c - `sluice cancel JOB [JOB...]`: DELETE each job and say what
 * became of it. A JOB that is an array's id means its pending and running
 * elements, ID_INDEX one element (arrays.c). Every id is checked before anything is sent; a refusal
 * (e.g. 409, already finished) is reported and the next job still tried.
 * The exit code is the worst seen; a transport failure stops the run.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int sl_cli_cmd_cancel(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const char *const cols[] = {"id", "state"};
    struct sl_error err = {{0}, {0}};
    struct sl_cli_table *t = NULL;
    const char **pos = NULL;
    int64_t *ids = NULL;
    size_t nids = 0;
    json_t *all = NULL;
    int n, code, worst = SL_CLI_OK;

    if (!(pos = calloc((size_t)argc + 1, sizeof(*pos))) ||
        !(all = json_array()) ||
        !(t = sl_cli_table_create(SL_ARRAY_LEN(cols), cols))) {
        sl_cli_errorf("out of memory");
        worst = SL_CLI_FAILED;
        goto out;
    }
    if ((worst = sl_cli_parse_simple(ctx, argc, argv, pos, argc, &n)) !=
        SL_CLI_OK)
        goto out;
    if (n == 0) {
        sl_cli_errorf("cancel: JOB is required (sluice cancel JOB [JOB...])");
        worst = SL_CLI_USAGE;
        goto out;
    }
    for (int i = 0; i < n; i++) { /* every id checked before anything is sent */
        int64_t one;
        if (!strchr(pos[i], '_') && sl_cli_job_id(pos[i], &one, &err) < 0) {
            worst = sl_cli_usage_error(&err);
            goto out;
        }
    }
    for (int i = 0; i < n; i++) /* an array: its elements (src/cli/arrays.c) */
        if (sl_cli_array_ids(ctx, pos[i], &ids, &nids, &err) < 0) {
            sl_cli_errorf("%s", err.text);
            worst = SL_CLI_USAGE;
            goto out;
        }
    for (size_t i = 0; i < nids; i++) {
        char path[64], what[40], id[24], state_buf[64];
        const char *state;
        json_t *job = NULL;

        snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)ids[i]);
        snprintf(what, sizeof(what), "job %lld", (long long)ids[i]);
        snprintf(id, sizeof(id), "%lld", (long long)ids[i]);
        code = sl_cli_call_json(ctx, "DELETE", path, NULL, NULL, 0, what, &job);
        if (code > worst)
            worst = code;
        if (code == SL_CLI_FAILED)
            break; /* the server is gone or failing: do not hammer it */
        if (code != SL_CLI_OK)
            continue;
        state = sl_cli_jstr(job, "state");
        if (ctx->output == SL_CLI_OUT_JSON) {
            json_array_append(all, job);
        } else if (ctx->output == SL_CLI_OUT_CSV) {
            const char *row[] = {id, state};
            sl_cli_table_add(t, row);
        } else if (!state || strcmp(state, "Cancelled") == 0) {
            printf("cancelled %s\n", id);
        } else {
            /* Running jobs get SIGTERM, a grace period, then SIGKILL. */
            printf("cancelling %s (%s)\n", id,
                   sl_cli_sanitize(state, state_buf, sizeof(state_buf)));
        }
        json_decref(job);
    }
    if (ctx->output == SL_CLI_OUT_JSON && json_array_size(all))
        sl_cli_print_json(all);
    else if (ctx->output == SL_CLI_OUT_CSV && sl_cli_table_rows(t))
        sl_cli_table_print(t, stdout, SL_CLI_OUT_CSV, 0);
out:
    sl_cli_table_destroy(t);
    json_decref(all);
    free(ids);
    free(pos);
    return worst;
}
