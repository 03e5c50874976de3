/*
 * cmd_cancel.c - `sluice cancel JOB [JOB...]`: DELETE each job and say what
 * became of it. A JOB that is an array's id means its pending and running
 * elements, cancelled in one request (DELETE /v1/arrays/ID), ID_INDEX one
 * element (arrays.c). Every id is checked before anything is sent; a
 * refusal (e.g. 409, already finished) is reported and the next job still
 * tried. The exit code is the worst seen; a transport failure stops the
 * run.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Say what became of job 'id' ("Cancelled", or still "Running" while it
 * stops). */
static void said(struct sl_cli_ctx *ctx, struct sl_cli_table *t, int64_t id, const char *state)
{
    char num[24], state_buf[64];

    snprintf(num, sizeof(num), "%lld", (long long)id);
    if (ctx->output == SL_CLI_OUT_CSV) {
        const char *row[] = {num, state};
        sl_cli_table_add(t, row);
    } else if (ctx->output == SL_CLI_OUT_JSON) {
        return;
    } else if (!state || strcmp(state, "Cancelled") == 0) {
        printf("cancelled %s\n", num);
    } else {
        /* Running jobs get SIGTERM, a grace period, then SIGKILL. */
        printf("cancelling %s (%s)\n", num, sl_cli_sanitize(state, state_buf, sizeof(state_buf)));
    }
}

/* Cancel target 't': DELETE the job, or the array whole. */
static int cancel_one(struct sl_cli_ctx *ctx, const struct sl_cli_target *t,
                      struct sl_cli_table *tab, json_t *all)
{
    char path[64], what[40];
    json_t *ans = NULL, *v;
    size_t i;
    int64_t id;
    int code;

    snprintf(path, sizeof(path), "/v1/%s/%lld", t->array ? "arrays" : "jobs", (long long)t->id);
    snprintf(what, sizeof(what), "%s %lld", t->array ? "array" : "job", (long long)t->id);
    if ((code = sl_cli_call_json(ctx, "DELETE", path, NULL, NULL, 0, what, &ans)) != SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON)
        json_array_append(all, ans);
    if (!t->array) {
        said(ctx, tab, t->id, sl_cli_jstr(ans, "state"));
    } else {
        json_array_foreach (json_object_get(ans, "cancelled"), i, v)
            if ((id = json_integer_value(v)) > 0)
                said(ctx, tab, id, "Cancelled");
        json_array_foreach (json_object_get(ans, "stopping"), i, v)
            if ((id = json_integer_value(v)) > 0)
                said(ctx, tab, id, "Running");
    }
    json_decref(ans);
    return SL_CLI_OK;
}

int sl_cli_cmd_cancel(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const char *const cols[] = {"id", "state"};
    struct sl_error err = {{0}, {0}};
    struct sl_cli_table *t = NULL;
    struct sl_cli_target *targets = NULL;
    const char **pos = NULL;
    size_t ntargets = 0;
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
    for (int i = 0; i < n; i++) /* an array, an element (src/cli/arrays.c) */
        if (sl_cli_cancel_targets(ctx, pos[i], &targets, &ntargets, &err) < 0) {
            sl_cli_errorf("%s", err.text);
            worst = SL_CLI_USAGE;
            goto out;
        }
    for (size_t i = 0; i < ntargets; i++) {
        code = cancel_one(ctx, &targets[i], t, all);
        if (code > worst)
            worst = code;
        if (code == SL_CLI_FAILED)
            break; /* the server is gone or failing: do not hammer it */
    }
    sl_cli_print_collected(ctx, all, t);
out:
    sl_cli_table_destroy(t);
    json_decref(all);
    free(targets);
    free(pos);
    return worst;
}
