/*
 * arrays.c - job arrays in the CLI: `jobs` shows an array as one line
 * (ID_[ARRAY], its elements counted by state) unless --expand, where each
 * element is ID_INDEX; `cancel ID` of an array's id cancels every element
 * still pending or running (one request, DELETE /v1/arrays/ID), `cancel
 * ID_INDEX` one element.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The array fields of 'job': true for an element. */
static bool element(const json_t *job, int64_t *arr, int64_t *idx)
{
    return sl_cli_jint(job, "array_job_id", arr) && *arr > 0 &&
           sl_cli_jint(job, "array_index", idx);
}

/* The group line of array 'arr', its first element 'first' shown: a copy
 * with display_id ID_[ARRAY] and its elements counted by state. */
static json_t *group_line(const json_t *all, const json_t *first, int64_t arr)
{
    static const char *const states[] = {"Running", "Pending",  "Succeeded", "Failed",
                                         "Cancelled", "Timeout", "Lost",     "Preempted"};
    int count[8] = {0};
    char text[160], did[64];
    const char *spec_arr;
    const char *reason = NULL;
    const json_t *job;
    json_t *line;
    size_t i, o = 0;
    int64_t a, x;

    json_array_foreach (all, i, job) {
        if (!element(job, &a, &x) || a != arr)
            continue;
        for (int s = 0; s < 8; s++)
            if (sl_cli_jstr(job, "state") && strcmp(sl_cli_jstr(job, "state"), states[s]) == 0)
                count[s]++;
        if (!reason)
            reason = sl_cli_jstr(job, "reason");
    }
    text[0] = '\0';
    for (int s = 0; s < 8; s++)
        if (count[s] && o < sizeof(text)) {
            int w = snprintf(text + o, sizeof(text) - o, "%s%s:%d", o ? "," : "", states[s],
                             count[s]);
            o += w > 0 ? (size_t)w : 0;
        }
    spec_arr = sl_cli_jstr(json_object_get(json_object_get(first, "spec"), "spec"), "array");
    snprintf(did, sizeof(did), "%" PRId64 "_[%.40s]", arr, spec_arr ? spec_arr : "?");
    if (!(line = json_deep_copy(first)) ||
        json_object_set_new(line, "display_id", json_string(did)) < 0 ||
        json_object_set_new(line, "state", json_string(text)) < 0 ||
        json_object_set_new(line, "exit_code", json_null()) < 0 ||
        json_object_set_new(line, "reason", reason ? json_string(reason) : json_null()) < 0) {
        json_decref(line);
        return NULL;
    }
    return line;
}

int sl_cli_jobs_group(json_t *all, bool expand)
{
    json_t *out = json_array(), *job;
    size_t i;
    int64_t arr, idx;

    if (!out)
        return -ENOMEM;
    json_array_foreach (all, i, job) {
        json_t *line = NULL;
        if (!element(job, &arr, &idx)) {
            line = json_incref(job);
        } else if (expand) {
            char did[48];
            snprintf(did, sizeof(did), "%" PRId64 "_%" PRId64, arr, idx);
            if ((line = json_deep_copy(job)) &&
                json_object_set_new(line, "display_id", json_string(did)) < 0) {
                json_decref(line);
                line = NULL;
            }
        } else {
            /* one line per array, where its first listed element is */
            bool seen = false;
            const json_t *prev;
            int64_t a2, x2;
            for (size_t k = 0; k < i && !seen; k++) {
                prev = json_array_get(all, k);
                seen = element(prev, &a2, &x2) && a2 == arr;
            }
            if (seen)
                continue;
            line = group_line(all, job, arr);
        }
        if (!line || json_array_append_new(out, line) < 0) {
            json_decref(out);
            return -ENOMEM;
        }
    }
    if (json_array_clear(all) < 0 || json_array_extend(all, out) < 0) {
        json_decref(out);
        return -ENOMEM;
    }
    json_decref(out);
    return 0;
}

/* The pending or running element 'idx' of array 'arr': its job id, 0 when
 * none, following the list's pages. */
static int64_t active_element(struct sl_cli_ctx *ctx, int64_t arr, int64_t idx)
{
    int64_t after = arr - 1, a, x, id, next, found = 0;

    for (int pages = 0; pages < 100000 && !found; pages++) {
        char path[128];
        json_t *page, *job;
        size_t i;

        snprintf(path, sizeof(path), "/v1/jobs?state=Pending,Running&limit=1000&after=%lld",
                 (long long)after);
        if (!(page = sl_cli_get_quiet(ctx, path)))
            break;
        json_array_foreach (json_object_get(page, "jobs"), i, job)
            if (element(job, &a, &x) && a == arr && x == idx && sl_cli_jint(job, "id", &id))
                found = id;
        next = 0;
        if (!sl_cli_jint(page, "next", &next) || next <= after)
            next = 0;
        json_decref(page);
        if (!next)
            break;
        after = next;
    }
    return found;
}

static int target_add(struct sl_cli_target **t, size_t *n, int64_t id, bool array,
                      struct sl_error *err)
{
    struct sl_cli_target *grown = realloc(*t, (*n + 1) * sizeof(**t));

    if (!grown)
        return sl_errorf(err, -ENOMEM, "out of memory");
    *t = grown;
    (*t)[*n].id = id;
    (*t)[(*n)++].array = array;
    return 0;
}

int sl_cli_cancel_targets(struct sl_cli_ctx *ctx, const char *arg, struct sl_cli_target **t,
                          size_t *n, struct sl_error *err)
{
    const char *us = strchr(arg, '_');
    char head[32], path[64];
    int64_t arr, idx = -1, id, a = 0;
    json_t *job;
    bool array;

    if (us) {
        if ((size_t)(us - arg) >= sizeof(head))
            return sl_errorf(err, -EINVAL, "job '%.64s': not a job id or ID_INDEX", arg);
        memcpy(head, arg, (size_t)(us - arg));
        head[us - arg] = '\0';
        if (sl_cli_job_id(head, &arr, err) < 0 || sl_parse_int64(us + 1, 0, 999999, &idx) < 0)
            return sl_errorf(err, -EINVAL,
                             "job '%.64s': an array element is ID_INDEX (12_5)", arg);
        if (!(id = active_element(ctx, arr, idx)))
            return sl_errorf(err, -ENOENT,
                             "job %s: no pending or running element %lld of array %lld", arg,
                             (long long)idx, (long long)arr);
        return target_add(t, n, id, false, err);
    }
    if (sl_cli_job_id(arg, &arr, err) < 0)
        return -EINVAL;
    /* the id of an array (its first element's): the whole array */
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)arr);
    job = sl_cli_get_quiet(ctx, path);
    array = job && sl_cli_jint(job, "array_job_id", &a) && a == arr;
    json_decref(job);
    return target_add(t, n, arr, array, err);
}
