/*
 * api_models.c - models (one, register, stage) and lineage.
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../meter/meter.h"
#include "../policy/policy.h"
#include "../policy/roles.h"
#include "../store/store.h"
#include "../util/buf.h"
#include "../util/jfield.h"

/* A model the caller may see ({ref} = NAME@VERSION); answers itself when not. */
static json_t *visible_model(struct ctx *c, const char *ref)
{
    int rc;
    char *text = sl_store_obj_get(c->a->rd, "Model", ref, &rc);
    json_t *m = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    if (!m || !sl_api_can_see_team(c, json_string_value(json_object_get(m, "team")))) {
        json_decref(m);
        if (rc == -EIO)
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "store read failed");
        else
            sl_http_reply_error(c->r, 404, "not_found", NULL, "model %s not found", ref);
        return NULL;
    }
    return m;
}

void sl_api_route_model_get(struct ctx *c)
{
    json_t *m = visible_model(c, c->name);
    if (m)
        sl_http_reply_json(c->r, 200, m);
}



/* POST /v1/models {name, version, digest, uri, metrics?, team?, job?} */
void sl_api_route_model_register(struct ctx *c)
{
    static const char *const keys[] = {"name", "version", "digest", "uri", "metrics",
                                       "team", "job", NULL};
    json_t *d = sl_api_body_json(c), *v, *m;
    const char *key, *uri;
    struct op_state *s;

    if (!d)
        return;
    json_object_foreach(d, key, v) {
        size_t i;
        for (i = 0; keys[i] && strcmp(keys[i], key) != 0; i++)
            ;
        if (!keys[i]) {
            sl_api_refuse(c, 400, "invalid", key, "unknown field; expected name, version, digest, "
                   "uri, metrics, team or job");
            goto bad;
        }
    }
    if (!sl_name_valid(json_string_value(json_object_get(d, "name")))) {
        sl_api_refuse(c, 400, "invalid", "name", "required: 1 to 63 of a-z, 0-9 and '-'");
        goto bad;
    }
    if (!sl_version_valid(sl_api_jstr(d, "version"))) {
        sl_api_refuse(c, 400, "invalid", "version",
               "required: 1 to 63 of A-Z, a-z, 0-9, '.', '_' and '-'");
        goto bad;
    }
    if (!sl_digest_valid(sl_api_jstr(d, "digest"))) {
        sl_api_refuse(c, 400, "invalid", "digest", "required: \"sha256:\" and 64 lowercase hex digits");
        goto bad;
    }
    uri = json_string_value(json_object_get(d, "uri"));
    if (!uri || !*uri || strlen(uri) > 1024 || !sl_text_printable(uri)) {
        sl_api_refuse(c, 400, "invalid", "uri", "required: at most 1024 printable characters");
        goto bad;
    }
    if ((m = json_object_get(d, "metrics"))) {
        const char *mk;
        json_t *mv;
        if (!json_is_object(m) || json_object_size(m) > 64) {
            sl_api_refuse(c, 400, "invalid", "metrics", "must be an object of at most 64 metrics");
            goto bad;
        }
        json_object_foreach(m, mk, mv) {
            if (strlen(mk) > 64 || !sl_text_printable(mk) ||
                !(json_is_number(mv) ||
                  (json_is_string(mv) && strlen(json_string_value(mv)) <= 256))) {
                sl_api_refuse(c, 400, "invalid", "metrics",
                       "each metric: a name of at most 64 printable characters and a "
                       "number or a string of at most 256");
                goto bad;
            }
        }
    }
    if ((v = json_object_get(d, "team")) && !sl_name_valid(json_string_value(v))) {
        sl_api_refuse(c, 400, "invalid", "team", "must be a team name");
        goto bad;
    }
    if ((v = json_object_get(d, "job")) && (!json_is_integer(v) || json_integer_value(v) < 1)) {
        sl_api_refuse(c, 400, "invalid", "job", "must be a job id");
        goto bad;
    }
    if (!(s = sl_api_op_new(c, SL_OP_MODEL)))
        goto bad;
    snprintf(s->op.object, sizeof(s->op.object), "model:%s@%s",
             json_string_value(json_object_get(d, "name")),
             json_string_value(json_object_get(d, "version")));
    s->op.u.model.body = d;
    sl_api_op_send(c, s);
    return;
bad:
    json_decref(d);
}

/* POST /v1/models/{ref}/stage {stage, comment?} */
void sl_api_route_model_stage(struct ctx *c)
{
    static const char *const stages[] = {"none", "staging", "production", "archived"};
    json_t *d = sl_api_body_json(c), *v;
    const char *key, *stage;
    struct op_state *s;
    bool known = false;

    if (!d)
        return;
    json_object_foreach(d, key, v) {
        if (strcmp(key, "stage") != 0 && strcmp(key, "comment") != 0) {
            sl_api_refuse(c, 400, "invalid", key, "unknown field; expected stage or comment");
            goto bad;
        }
    }
    stage = json_string_value(json_object_get(d, "stage"));
    for (size_t i = 0; stage && i < SL_ARRAY_LEN(stages); i++)
        known |= strcmp(stage, stages[i]) == 0;
    if (!known) {
        sl_api_refuse(c, 400, "invalid", "stage", "required: none, staging, production or archived");
        goto bad;
    }
    if ((v = json_object_get(d, "comment")) &&
        (!json_is_string(v) || strlen(json_string_value(v)) > 512 ||
         !sl_text_printable(json_string_value(v)))) {
        sl_api_refuse(c, 400, "invalid", "comment", "at most 512 printable characters");
        goto bad;
    }
    if (!(s = sl_api_op_new(c, SL_OP_STAGE)))
        goto bad;
    sl_strlcpy(s->op.u.stage.model, c->name, sizeof(s->op.u.stage.model));
    s->op.u.stage.body = d;
    sl_api_op_send(c, s);
    return;
bad:
    json_decref(d);
}

/* The job's part of a chain: who ran it where, what it used and cost, and
 * what it ran: image, code, datasets as admitted. NULL when not visible. */
static json_t *lineage_job(struct ctx *c, int64_t id)
{
    json_t *job = NULL, *out, *lin = NULL, *rows = NULL;
    int rc = sl_store_job_read(c->a->rd, id, sl_job_view_json_fn, &job);
    char *text;
    struct sl_pricing *p;
    struct sl_api_report_scan rs = {NULL, NULL, 0};
    struct sl_carbon_hours *hours = NULL;
    size_t nhours = 0;
    int64_t now = sl_now_ms(), from;

    if (!job || !sl_api_can_see_team(c, json_string_value(json_object_get(job, "team")))) {
        json_decref(job);
        return NULL;
    }
    text = sl_store_job_lineage_get(c->a->rd, id, &rc);
    lin = text && *text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    out = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "id",
                    json_object_get(job, "id"), "name", json_object_get(job, "name"), "user",
                    json_object_get(job, "user"), "team", json_object_get(job, "team"),
                    "queue", json_object_get(job, "queue"), "state",
                    json_object_get(job, "state"), "submitted_at",
                    json_object_get(job, "submitted_at"), "started_at",
                    json_object_get(job, "started_at"), "finished_at",
                    json_object_get(job, "finished_at"));
    /* the job's use runs from its submission on: only those hours of
     * carbon intensity are read */
    if (sl_parse_when_ms(sl_api_jstr(job, "submitted_at"), &from) < 0)
        from = 0;
    if ((p = malloc(sizeof(*p)))) {
        sl_engine_pricing(c->a->e, p);
        if ((rs.r = sl_report_new(p, sl_report_by_parse("job"), -1, from, now + 1, now)) &&
            sl_store_carbon_load(c->a->rd, from, now + 1, &hours, &nhours) == 0) {
            rs.hours = hours;
            rs.nhours = nhours;
            if (sl_store_usage_scan(c->a->rd, from, now + 1, NULL, id, sl_api_report_row,
                                    &rs) == 0)
                rows = sl_report_json(rs.r);
        }
        sl_report_free(rs.r);
        sl_carbon_hours_free(hours, nhours);
        free(p);
    }
    {
        json_t *u = json_array_get(rows, 0);
        json_object_set_new(out, "usage",
                            u ? json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "gpu_hours",
                                          json_object_get(u, "gpu_hours"), "cu",
                                          json_object_get(u, "cu"), "energy_kwh",
                                          json_object_get(u, "energy_kwh"), "energy_measured",
                                          json_object_get(u, "energy_measured"), "cost",
                                          json_object_get(u, "cost"), "currency",
                                          json_object_get(u, "currency"), "co2_kg",
                                          json_object_get(u, "co2_kg"))
                              : json_pack("{s:i, s:i, s:i, s:b, s:i, s:i}", "gpu_hours", 0,
                                          "cu", 0, "energy_kwh", 0, "energy_measured", 0,
                                          "cost", 0, "co2_kg", 0));
    }
    json_decref(rows);
    json_object_set_new(out, "image", json_incref(json_object_get(lin, "image"))
                                          ? json_object_get(lin, "image")
                                          : json_null());
    json_object_set_new(out, "code", json_incref(json_object_get(lin, "code"))
                                         ? json_object_get(lin, "code")
                                         : json_null());
    json_object_set_new(out, "datasets", json_incref(json_object_get(lin, "datasets"))
                                             ? json_object_get(lin, "datasets")
                                             : json_array());
    json_decref(lin);
    json_decref(job);
    return out;
}

/* GET /v1/lineage/{ref}: ref model:NAME@VERSION or job:ID. */
void sl_api_route_lineage(struct ctx *c)
{
    json_t *m = NULL, *job = NULL;
    int64_t id = 0;

    if (strncmp(c->name, "model:", 6) == 0) {
        if (!(m = visible_model(c, c->name + 6)))
            return;
        id = json_integer_value(json_object_get(m, "job"));
    } else if (strncmp(c->name, "job:", 4) == 0) {
        if (sl_parse_int64(c->name + 4, 1, INT64_MAX, &id) < 0) {
            sl_http_reply_error(c->r, 400, "invalid", "ref", "job:ID, got '%s'", c->name);
            return;
        }
    } else {
        sl_http_reply_error(c->r, 400, "invalid", "ref",
                            "model:NAME@VERSION or job:ID, got '%s'", c->name);
        return;
    }
    if (id && !(job = lineage_job(c, id)) && !m) {
        sl_http_reply_error(c->r, 404, "not_found", NULL, "job %lld not found", (long long)id);
        return;
    }
    sl_http_reply_json(c->r, 200,
                       json_pack("{s:o, s:o}", "model", m ? m : json_null(), "job",
                                 job ? job : json_null()));
}
