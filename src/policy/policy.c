/*
 * policy.c - Policy and Dataset manifests, scan summaries, admission.
 * See policy.h and docs/policy.md.
 */
#include "policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../core/spec.h"
#include "../util/jfield.h"

#define TRIVY_MAX (16 << 20)

static const char *const sev_names[SL_SEV_COUNT] = {"unknown", "low", "medium", "high",
                                                    "critical"};
static const char *const net_names[] = {"egress", "internal", "isolated"};

const char *sl_severity_name(int s)
{
    return s >= 0 && s < SL_SEV_COUNT ? sev_names[s] : "?";
}

/* ---- field helpers ------------------------------------------------------ */


static int get_bool(const json_t *obj, const char *key, const char *parent, bool *out,
                    struct sl_error *err)
{
    const json_t *v = sl_jf_member(obj, key);
    char p[SL_JF_PATH];

    if (!v)
        return 0;
    sl_jf_path(p, parent, key);
    if (!json_is_boolean(v))
        return sl_jf_fail(err, p, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

/* A list of strings, each checked by ok() (NULL: printable), into
 * out[max][size]. */
static int get_list(const json_t *obj, const char *key, const char *parent, char *out,
                    size_t size, int max, int *n, bool (*ok)(const char *), const char *what,
                    struct sl_error *err)
{
    const json_t *v = sl_jf_member(obj, key), *e;
    char p[SL_JF_PATH], q[SL_JF_PATH + 16];
    size_t i;

    *n = 0;
    if (!v)
        return 0;
    sl_jf_path(p, parent, key);
    if (!json_is_array(v) || json_array_size(v) > (size_t)max)
        return sl_jf_fail(err, p, "must be a list of at most %d %s", max, what);
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        snprintf(q, sizeof(q), "%s[%zu]", p, i);
        if (!s || !*s || strlen(s) >= size || !sl_text_printable(s) || (ok && !ok(s)))
            return sl_jf_fail(err, q, "must be %s (at most %zu bytes)", what, size - 1);
        memcpy(out + (size_t)*n * size, s, strlen(s) + 1);
        (*n)++;
    }
    return 0;
}

static bool name_ok(const char *s) { return sl_name_valid(s); }

bool sl_version_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
            return false;
    return true;
}

bool sl_digest_valid(const char *d)
{
    if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71)
        return false;
    for (d += 7; *d; d++)
        if (!((*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'f')))
            return false;
    return true;
}

static int choice(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static json_t *list_json(const char *base, size_t size, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(base + (size_t)i * size));
    return a;
}

/* ---- kind: Policy -------------------------------------------------------- */

static const char *const policy_keys[] = {"teams", "queues", "images", "network", "caps",
                                          "models", NULL};
static const char *const images_keys[] = {"allowedRegistries", "deny", "requireDigest",
                                          "requireImage", "scan", NULL};
static const char *const scan_keys[] = {"maxSeverity", "requireScan", NULL};
static const char *const network_keys[] = {"allowed", "default", NULL};
static const char *const caps_keys[] = {"maxGpusPerJob", "maxRuntime", NULL};
static const char *const models_keys[] = {"approvers", NULL};

static bool role_ok(const char *s)
{
    static const char *const roles[] = {"admin", "team-admin", "member", "viewer", "auditor"};
    return choice(s, roles, 5) >= 0;
}

/* spec.images 'v' at path 'q': registries, denied images, digests, and
 * the scan rule. */
static int parse_images(const json_t *v, const char *q, struct sl_policy *p,
                        struct sl_error *err)
{
    const json_t *w;
    char r[SL_JF_PATH];
    int rc;

    if ((rc = sl_jf_check_keys(v, q, images_keys, err)) < 0 ||
        (rc = get_list(v, "allowedRegistries", q, p->registries[0], SL_POLICY_PATTERN_MAX,
                       SL_POLICY_LIST_MAX, &p->nregistries, NULL, "registry prefixes",
                       err)) < 0 ||
        (rc = get_list(v, "deny", q, p->deny[0], SL_POLICY_PATTERN_MAX,
                       SL_POLICY_LIST_MAX, &p->ndeny, NULL, "image patterns", err)) < 0 ||
        (rc = get_list(v, "requireDigest", q, p->require_digest[0], 64,
                       SL_POLICY_LIST_MAX, &p->ndigest, name_ok, "priority class names",
                       err)) < 0 ||
        (rc = get_bool(v, "requireImage", q, &p->require_image, err)) < 0)
        return rc;
    if (!(w = sl_jf_member(v, "scan")))
        return 0;
    sl_jf_path(r, q, "scan");
    if ((rc = sl_jf_check_keys(w, r, scan_keys, err)) < 0 ||
        (rc = get_bool(w, "requireScan", r, &p->require_scan, err)) < 0)
        return rc;
    if (sl_jf_member(w, "maxSeverity")) {
        char s[SL_JF_PATH];
        sl_jf_path(s, r, "maxSeverity");
        p->max_severity = choice(json_string_value(sl_jf_member(w, "maxSeverity")),
                                 sev_names + 1, SL_SEV_COUNT - 1);
        if (p->max_severity < 0)
            return sl_jf_fail(err, s, "must be low, medium, high or critical");
        p->max_severity++;
    }
    return 0;
}

/* spec.network 'v' at path 'q': the allowed profiles and the default. */
static int parse_network(const json_t *v, const char *q, struct sl_policy *p,
                         struct sl_error *err)
{
    char nets[3][16], r[SL_JF_PATH];
    int n, rc;

    if ((rc = sl_jf_check_keys(v, q, network_keys, err)) < 0 ||
        (rc = get_list(v, "allowed", q, nets[0], 16, 3, &n, NULL,
                       "profiles (isolated, internal, egress)", err)) < 0)
        return rc;
    for (int i = 0; i < n; i++) {
        int k = choice(nets[i], net_names, 3);
        if (k < 0) {
            snprintf(r, sizeof(r), "%s.allowed[%d]", q, i);
            return sl_jf_fail(err, r, "must be isolated, internal or egress");
        }
        p->networks |= 1u << k;
    }
    if (sl_jf_member(v, "default")) {
        sl_jf_path(r, q, "default");
        p->network_default = choice(json_string_value(sl_jf_member(v, "default")), net_names, 3);
        if (p->network_default < 0)
            return sl_jf_fail(err, r, "must be isolated, internal or egress");
        if (p->networks && !(p->networks & (1u << p->network_default)))
            return sl_jf_fail(err, r, "must be one of the allowed profiles");
    }
    return 0;
}

/* spec.caps 'v' at path 'q': GPUs per job and run time. */
static int parse_caps(const json_t *v, const char *q, struct sl_policy *p,
                      struct sl_error *err)
{
    const json_t *w;
    char r[SL_JF_PATH];
    int rc;

    if ((rc = sl_jf_check_keys(v, q, caps_keys, err)) < 0)
        return rc;
    if ((w = sl_jf_member(v, "maxGpusPerJob"))) {
        double g = json_number_value(w);
        sl_jf_path(r, q, "maxGpusPerJob");
        if (!json_is_number(w) || g < 0 || g > 100000 || g * 1000 != (int64_t)(g * 1000))
            return sl_jf_fail(err, r, "must be a number of GPUs from 0 to 100000 (0.001 steps)");
        p->max_gpu_milli = (int64_t)(g * 1000);
    }
    if ((w = sl_jf_member(v, "maxRuntime"))) {
        sl_jf_path(r, q, "maxRuntime");
        if (!json_is_string(w) ||
            sl_parse_duration_ms(json_string_value(w), &p->max_runtime_ms) < 0 ||
            p->max_runtime_ms <= 0)
            return sl_jf_fail(err, r, "must be a positive duration such as \"24h\"");
    }
    return 0;
}

int sl_policy_parse(const json_t *spec, const char *P, const char *name, struct sl_policy *p,
                    struct sl_error *err)
{
    const json_t *v;
    char q[SL_JF_PATH];
    int rc;

    memset(p, 0, sizeof(*p));
    sl_strlcpy(p->name, name, sizeof(p->name));
    p->max_severity = -1;
    p->network_default = -1;
    p->max_gpu_milli = -1;
    if (!spec)
        return 0;
    if ((rc = sl_jf_check_keys(spec, P, policy_keys, err)) < 0 ||
        (rc = get_list(spec, "teams", P, p->teams[0], 64, SL_POLICY_LIST_MAX, &p->nteams,
                       name_ok, "team names", err)) < 0 ||
        (rc = get_list(spec, "queues", P, p->queues[0], 64, SL_POLICY_LIST_MAX, &p->nqueues,
                       name_ok, "queue names", err)) < 0)
        return rc;
    if ((v = sl_jf_member(spec, "images"))) {
        sl_jf_path(q, P, "images");
        if ((rc = parse_images(v, q, p, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "network"))) {
        sl_jf_path(q, P, "network");
        if ((rc = parse_network(v, q, p, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "caps"))) {
        sl_jf_path(q, P, "caps");
        if ((rc = parse_caps(v, q, p, err)) < 0)
            return rc;
    }
    if ((v = sl_jf_member(spec, "models"))) {
        sl_jf_path(q, P, "models");
        if ((rc = sl_jf_check_keys(v, q, models_keys, err)) < 0 ||
            (rc = get_list(v, "approvers", q, p->approvers[0], 16, 5, &p->napprovers, role_ok,
                           "roles (admin, team-admin, member, viewer, auditor)", err)) < 0)
            return rc;
    }
    return 0;
}

json_t *sl_policy_json(const struct sl_policy *p)
{
    json_t *o = json_object(), *img = json_object(), *net = json_object(), *caps = json_object();
    json_t *nets = json_array();

    if (!o || !img || !net || !caps || !nets) {
        json_decref(o);
        json_decref(img);
        json_decref(net);
        json_decref(caps);
        json_decref(nets);
        return NULL;
    }
    json_object_set_new(o, "teams", list_json(p->teams[0], 64, p->nteams));
    json_object_set_new(o, "queues", list_json(p->queues[0], 64, p->nqueues));
    json_object_set_new(img, "allowedRegistries",
                        list_json(p->registries[0], SL_POLICY_PATTERN_MAX, p->nregistries));
    json_object_set_new(img, "deny", list_json(p->deny[0], SL_POLICY_PATTERN_MAX, p->ndeny));
    json_object_set_new(img, "requireDigest", list_json(p->require_digest[0], 64, p->ndigest));
    json_object_set_new(img, "requireImage", json_boolean(p->require_image));
    json_object_set_new(img, "scan",
                        p->max_severity >= 0
                            ? json_pack("{s:s, s:b}", "maxSeverity",
                                        sev_names[p->max_severity], "requireScan",
                                        p->require_scan)
                            : json_pack("{s:b}", "requireScan", p->require_scan));
    json_object_set_new(o, "images", img);
    for (int i = 0; i < 3; i++)
        if (!p->networks || (p->networks & (1u << i)))
            json_array_append_new(nets, json_string(net_names[i]));
    json_object_set_new(net, "allowed", nets);
    if (p->network_default >= 0)
        json_object_set_new(net, "default", json_string(net_names[p->network_default]));
    json_object_set_new(o, "network", net);
    if (p->max_gpu_milli >= 0)
        json_object_set_new(caps, "maxGpusPerJob",
                            p->max_gpu_milli % 1000 ? json_real(p->max_gpu_milli / 1000.0)
                                                    : json_integer(p->max_gpu_milli / 1000));
    if (p->max_runtime_ms > 0) {
        char d[48];
        json_object_set_new(caps, "maxRuntime",
                            json_string(sl_fmt_duration(p->max_runtime_ms, d, sizeof(d))));
    }
    json_object_set_new(o, "caps", caps);
    json_object_set_new(o, "models",
                        json_pack("{s:o}", "approvers",
                                  list_json(p->approvers[0], 16, p->napprovers)));
    return o;
}

/* ---- kind: Dataset ------------------------------------------------------- */

static const char *const dataset_keys[] = {"version", "digest", "owner", "path", "description",
                                           "access", NULL};
static const char *const access_keys[] = {"team", "mode", NULL};

int sl_dataset_parse(const json_t *spec, const char *P, const char *name, struct sl_dataset *d,
                     struct sl_error *err)
{
    const json_t *v, *e;
    char q[SL_JF_PATH], r[SL_JF_PATH + 16];
    size_t i;
    int rc;

    memset(d, 0, sizeof(*d));
    sl_strlcpy(d->name, name, sizeof(d->name));
    if (!spec)
        return sl_jf_fail(err, P, "is required (version, owner and path)");
    if ((rc = sl_jf_check_keys(spec, P, dataset_keys, err)) < 0 ||
        (rc = sl_jf_get_str(spec, "version", P, d->version, sizeof(d->version), true, err)) < 0 ||
        (rc = sl_jf_get_str(spec, "digest", P, d->digest, sizeof(d->digest), false, err)) < 0 ||
        (rc = sl_jf_get_str(spec, "owner", P, d->owner, sizeof(d->owner), true, err)) < 0 ||
        (rc = sl_jf_get_str(spec, "path", P, d->path, sizeof(d->path), true, err)) < 0 ||
        (rc = sl_jf_get_str(spec, "description", P, d->description, sizeof(d->description), false,
                      err)) < 0)
        return rc;
    sl_jf_path(q, P, "version");
    if (!sl_version_valid(d->version))
        return sl_jf_fail(err, q, "must be 1 to 63 of A-Z, a-z, 0-9, '.', '_', '-'");
    sl_jf_path(q, P, "digest");
    if (d->digest[0] && !sl_digest_valid(d->digest))
        return sl_jf_fail(err, q, "must be \"sha256:\" and 64 lowercase hex digits");
    sl_jf_path(q, P, "owner");
    if (!sl_name_valid(d->owner))
        return sl_jf_fail(err, q, "must be a team name");
    sl_jf_path(q, P, "path");
    if (d->path[0] != '/' || strstr(d->path, "/../") ||
        (strlen(d->path) >= 3 && strcmp(d->path + strlen(d->path) - 3, "/..") == 0))
        return sl_jf_fail(err, q, "must be an absolute path without '..'");
    if (!(v = sl_jf_member(spec, "access")))
        return 0;
    sl_jf_path(q, P, "access");
    if (!json_is_array(v) || json_array_size(v) > SL_DATASET_ACCESS_MAX)
        return sl_jf_fail(err, q, "must be a list of at most %d {team, mode}", SL_DATASET_ACCESS_MAX);
    json_array_foreach(v, i, e)
    {
        char mode[8] = "ro";
        snprintf(r, sizeof(r), "%s[%zu]", q, i);
        if ((rc = sl_jf_check_keys(e, r, access_keys, err)) < 0 ||
            (rc = sl_jf_get_str(e, "team", r, d->access[i].team, 64, true, err)) < 0 ||
            (rc = sl_jf_get_str(e, "mode", r, mode, sizeof(mode), false, err)) < 0)
            return rc;
        if (!sl_name_valid(d->access[i].team))
            return sl_jf_fail(err, r, "team must be a team name");
        if (strcmp(mode, "ro") != 0 && strcmp(mode, "rw") != 0)
            return sl_jf_fail(err, r, "mode must be ro or rw");
        d->access[i].rw = mode[1] == 'w';
        d->naccess++;
    }
    return 0;
}

json_t *sl_dataset_json(const struct sl_dataset *d)
{
    json_t *acc = json_array(), *o;

    for (int i = 0; acc && i < d->naccess; i++)
        json_array_append_new(acc, json_pack("{s:s, s:s}", "team", d->access[i].team, "mode",
                                             d->access[i].rw ? "rw" : "ro"));
    o = json_pack("{s:s, s:s, s:s, s:o}", "version", d->version, "owner", d->owner, "path",
                  d->path, "access", acc ? acc : json_array());
    if (o && d->digest[0])
        json_object_set_new(o, "digest", json_string(d->digest));
    if (o && d->description[0])
        json_object_set_new(o, "description", json_string(d->description));
    return o;
}

/* ---- scans ----------------------------------------------------------------- */

static void scan_count(struct sl_scan *s, const char *sev, const char *id)
{
    int k = SL_SEV_UNKNOWN;

    for (int i = 0; sev && i < SL_SEV_COUNT; i++)
        if (strcasecmp(sev, sev_names[i]) == 0)
            k = i;
    s->counts[k]++;
    if (k > s->top) {
        s->top = k;
        s->nids = 0;
    }
    if (k == s->top && id && s->nids < 5 && strlen(id) < sizeof(s->ids[0]) && sl_text_printable(id))
        sl_strlcpy(s->ids[s->nids++], id, sizeof(s->ids[0]));
}

int sl_trivy_parse(const char *buf, size_t len, struct sl_scan *out, struct sl_error *err)
{
    json_error_t jerr;
    json_t *doc, *meta, *digests, *results, *res;
    const char *digest = NULL, *artifact;
    size_t i;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    out->top = -1;
    if (len > TRIVY_MAX)
        return sl_errorf(err, -EFBIG, "a scan report is at most 16 MiB");
    if (!(doc = sl_jf_loadb(buf, len, 0, &jerr)) || !json_is_object(doc)) {
        if (!doc && sl_jf_oom(&jerr))
            return sl_errorf(err, -ENOMEM, "out of memory");
        json_decref(doc);
        return sl_errorf(err, -EINVAL, "not a JSON object: %s", jerr.text);
    }
    if (json_integer_value(json_object_get(doc, "SchemaVersion")) != 2) {
        rc = sl_errorf_field(err, -EINVAL, "SchemaVersion",
                             "must be 2 (a report of trivy image -f json)");
        goto out;
    }
    artifact = json_string_value(json_object_get(doc, "ArtifactName"));
    if (!artifact || strlen(artifact) >= sizeof(out->artifact) || !sl_text_printable(artifact)) {
        rc = sl_errorf_field(err, -EINVAL, "ArtifactName", "must be the image scanned");
        goto out;
    }
    sl_strlcpy(out->artifact, artifact, sizeof(out->artifact));
    meta = json_object_get(doc, "Metadata");
    digests = json_object_get(meta, "RepoDigests");
    if (json_is_array(digests) && json_array_size(digests) > 0) {
        const char *d = json_string_value(json_array_get(digests, 0));
        digest = d ? strchr(d, '@') : NULL;
        digest = digest ? digest + 1 : NULL;
    }
    if (!digest)
        digest = json_string_value(json_object_get(meta, "ImageID"));
    if (!digest || !sl_digest_valid(digest)) {
        rc = sl_errorf_field(err, -EINVAL, "Metadata.RepoDigests",
                             "no image digest (sha256:<64 hex>) in RepoDigests or ImageID");
        goto out;
    }
    sl_strlcpy(out->digest, digest, sizeof(out->digest));
    results = json_object_get(doc, "Results");
    if (results && !json_is_array(results)) {
        rc = sl_errorf_field(err, -EINVAL, "Results", "must be a list");
        goto out;
    }
    json_array_foreach(results, i, res)
    {
        static const char *const lists[] = {"Vulnerabilities", "Misconfigurations", "Secrets"};
        for (int l = 0; l < 3; l++) {
            json_t *arr = json_object_get(res, lists[l]), *f;
            size_t k;
            if (!arr)
                continue;
            if (!json_is_array(arr)) {
                char p[64];
                snprintf(p, sizeof(p), "Results[%zu].%s", i, lists[l]);
                rc = sl_errorf_field(err, -EINVAL, p, "must be a list");
                goto out;
            }
            json_array_foreach(arr, k, f)
            {
                const char *st = json_string_value(json_object_get(f, "Status"));
                const char *id = json_string_value(json_object_get(f, "VulnerabilityID"));
                if (l == 1 && (!st || strcmp(st, "FAIL") != 0))
                    continue;
                if (!id)
                    id = json_string_value(json_object_get(f, l == 1 ? "ID" : "RuleID"));
                scan_count(out, json_string_value(json_object_get(f, "Severity")), id);
            }
        }
    }
out:
    json_decref(doc);
    return rc;
}

json_t *sl_scan_json(const struct sl_scan *s)
{
    char at[40];
    json_t *counts = json_object(), *ids = json_array();

    for (int i = 0; counts && i < SL_SEV_COUNT; i++)
        json_object_set_new(counts, sev_names[i], json_integer(s->counts[i]));
    for (int i = 0; ids && i < s->nids; i++)
        json_array_append_new(ids, json_string(s->ids[i]));
    return json_pack("{s:s, s:s, s:s, s:o, s:s?, s:o}", "digest", s->digest, "artifact",
                     s->artifact, "scanned_at", sl_time_rfc3339(s->at_ms, at, sizeof(at)),
                     "counts", counts ? counts : json_object(), "highest",
                     s->top >= 0 ? sev_names[s->top] : NULL, "top_findings",
                     ids ? ids : json_array());
}

int sl_scan_from_json(const json_t *j, struct sl_scan *out)
{
    const char *d = json_string_value(json_object_get(j, "digest"));
    const json_t *ids = json_object_get(j, "top_findings"), *e;
    size_t i;

    memset(out, 0, sizeof(*out));
    out->top = -1;
    if (!d || !sl_digest_valid(d))
        return -EINVAL;
    sl_strlcpy(out->digest, d, sizeof(out->digest));
    sl_strlcpy(out->artifact, json_string_value(json_object_get(j, "artifact"))
                                  ? json_string_value(json_object_get(j, "artifact"))
                                  : "",
               sizeof(out->artifact));
    sl_parse_when_ms(json_string_value(json_object_get(j, "scanned_at")) ?
                     json_string_value(json_object_get(j, "scanned_at")) : "", &out->at_ms);
    for (int k = 0; k < SL_SEV_COUNT; k++) {
        out->counts[k] = (int)json_integer_value(
            json_object_get(json_object_get(j, "counts"), sev_names[k]));
        if (out->counts[k] > 0)
            out->top = k;
    }
    json_array_foreach(ids, i, e)
    {
        if (out->nids < 5 && json_is_string(e))
            sl_strlcpy(out->ids[out->nids++], json_string_value(e), sizeof(out->ids[0]));
    }
    return 0;
}

/* ---- image references ------------------------------------------------------ */

int sl_image_ref_parse(const char *ref, struct sl_image_ref *out)
{
    char buf[512], *at, *slash, *colon, *rest;

    memset(out, 0, sizeof(*out));
    if (!ref || !*ref || sl_strlcpy(buf, ref, sizeof(buf)) >= sizeof(buf))
        return -EINVAL;
    if ((at = strchr(buf, '@'))) {
        *at = '\0';
        if (!sl_digest_valid(at + 1))
            return -EINVAL;
        sl_strlcpy(out->digest, at + 1, sizeof(out->digest));
    }
    rest = buf;
    slash = strchr(buf, '/');
    if (slash && (memchr(buf, '.', (size_t)(slash - buf)) ||
                  memchr(buf, ':', (size_t)(slash - buf)) ||
                  (slash - buf == 9 && strncmp(buf, "localhost", 9) == 0))) {
        *slash = '\0';
        sl_strlcpy(out->registry, buf, sizeof(out->registry));
        rest = slash + 1;
    } else {
        sl_strlcpy(out->registry, "docker.io", sizeof(out->registry));
    }
    if ((colon = strrchr(rest, ':')) && !strchr(colon, '/')) {
        *colon = '\0';
        sl_strlcpy(out->tag, colon + 1, sizeof(out->tag));
    }
    if (!*rest)
        return -EINVAL;
    if (strcmp(out->registry, "docker.io") == 0 && !strchr(rest, '/'))
        snprintf(out->repository, sizeof(out->repository), "library/%s", rest);
    else
        sl_strlcpy(out->repository, rest, sizeof(out->repository));
    return 0;
}

/* ---- admission --------------------------------------------------------------- */

static bool in_list(const char *s, const char *base, size_t size, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, base + (size_t)i * size) == 0)
            return true;
    return false;
}

static bool governs(const struct sl_policy *p, const struct sl_admit_in *in)
{
    if (!p->nteams && !p->nqueues)
        return true;
    return in_list(in->team, p->teams[0], 64, p->nteams) ||
           in_list(in->queue, p->queues[0], 64, p->nqueues);
}

static int refuse(struct sl_verdict *v, const char *policy, const char *rule, const char *field,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int refuse(struct sl_verdict *v, const char *policy, const char *rule, const char *field,
                  const char *fmt, ...)
{
    char text[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    v->allowed = false;
    sl_strlcpy(v->policy, policy, sizeof(v->policy));
    sl_strlcpy(v->rule, rule, sizeof(v->rule));
    sl_strlcpy(v->field, field, sizeof(v->field));
    if (*policy)
        snprintf(v->message, sizeof(v->message), "policy \"%s\" (%s): %s", policy, rule, text);
    else
        snprintf(v->message, sizeof(v->message), "%s: %s", rule, text);
    return 0;
}

static void join(char *out, size_t size, const char *base, size_t esize, int n)
{
    size_t len = 0;

    out[0] = '\0';
    for (int i = 0; i < n && len + 1 < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ", " : "",
                                base + (size_t)i * esize);
}

static int admit_image(const struct sl_policy *p, const struct sl_admit_in *in,
                       struct sl_verdict *v)
{
    const char *image = in->spec->image;
    struct sl_image_ref ref;
    char norm[400], list[640];
    const struct sl_scan *sc;

    if (!image) {
        if (p->require_image)
            return refuse(v, p->name, "images.requireImage", "spec.image",
                          "jobs governed by this policy must name a container image");
        return 1;
    }
    if (sl_image_ref_parse(image, &ref) < 0)
        return refuse(v, p->name, "images.allowedRegistries", "spec.image",
                      "image \"%s\" is not a valid image reference", image);
    snprintf(norm, sizeof(norm), "%s/%s", ref.registry, ref.repository);
    if (p->nregistries) {
        bool ok = false;
        for (int i = 0; i < p->nregistries && !ok; i++) {
            size_t n = strlen(p->registries[i]);
            ok = strncmp(image, p->registries[i], n) == 0 || strncmp(norm, p->registries[i], n) == 0;
        }
        if (!ok) {
            join(list, sizeof(list), p->registries[0], SL_POLICY_PATTERN_MAX, p->nregistries);
            return refuse(v, p->name, "images.allowedRegistries", "spec.image",
                          "image \"%s\" is not from an allowed registry; allowed: %s", image,
                          list);
        }
    }
    for (int i = 0; i < p->ndeny; i++)
        if (fnmatch(p->deny[i], image, 0) == 0 || fnmatch(p->deny[i], norm, 0) == 0)
            return refuse(v, p->name, "images.deny", "spec.image",
                          "image \"%s\" matches the denied pattern \"%s\"", image, p->deny[i]);
    if (in_list(in->pclass, p->require_digest[0], 64, p->ndigest) && !ref.digest[0])
        return refuse(v, p->name, "images.requireDigest", "spec.image",
                      "priority class %s needs an image pinned by digest "
                      "(name@sha256:<64 hex>); \"%s\" is not", in->pclass, image);
    if (p->max_severity < 0 && !p->require_scan)
        return 1;
    sc = ref.digest[0] && in->scan ? in->scan(in->arg, ref.digest) : NULL;
    if (!sc) {
        if (p->require_scan)
            return refuse(v, p->name, "images.scan", "spec.image",
                          "image \"%s\" was never scanned; pin the image by digest and import "
                          "its scan (sluice scan import)", image);
        return 1;
    }
    if (p->max_severity >= 0 && sc->top >= p->max_severity) {
        join(list, sizeof(list), sc->ids[0], sizeof(sc->ids[0]), sc->nids);
        return refuse(v, p->name, "images.scan", "spec.image",
                      "image %s has %d %s finding%s (at or above %s is refused)%s%s", ref.digest,
                      sc->counts[sc->top], sev_names[sc->top], sc->counts[sc->top] == 1 ? "" : "s",
                      sev_names[p->max_severity], sc->nids ? ": " : "", list);
    }
    return 1;
}

int sl_admit(const struct sl_policy *policies, size_t n, const struct sl_admit_in *in,
             struct sl_verdict *v)
{
    const struct sl_job_spec *s = in->spec;
    int64_t gpu_milli;

    memset(v, 0, sizeof(*v));
    v->allowed = true;
    v->network = s->network;
    /* datasets: deny by default */
    for (int i = 0; i < s->n_datasets && i < (int)SL_ARRAY_LEN(v->datasets); i++) {
        char name[160], field[40], *ver, *mode;
        const struct sl_dataset *d;
        bool rw = false, ok = false, may_rw = false;
        snprintf(field, sizeof(field), "spec.datasets[%d]", i);
        sl_strlcpy(name, s->datasets[i], sizeof(name));
        if (!(ver = strchr(name, '@')))
            return refuse(v, "", "datasets.exists", field, "\"%s\" is not name@version",
                          s->datasets[i]);
        *ver++ = '\0';
        if ((mode = strchr(ver, ':'))) {
            *mode++ = '\0';
            rw = strcmp(mode, "rw") == 0;
        }
        if (!(d = in->dataset ? in->dataset(in->arg, name, ver) : NULL))
            return refuse(v, "", "datasets.exists", field,
                          "dataset %s@%s is not declared (kind: Dataset)", name, ver);
        if (strcmp(d->owner, in->team) == 0)
            ok = may_rw = true;
        for (int k = 0; k < d->naccess; k++)
            if (strcmp(d->access[k].team, in->team) == 0) {
                ok = true;
                may_rw |= d->access[k].rw;
            }
        if (!ok)
            return refuse(v, "", "datasets.access", field,
                          "team %s may not use dataset %s@%s (owner %s); ask its owner to list "
                          "the team under access", in->team, name, ver, d->owner);
        if (rw && !may_rw)
            return refuse(v, "", "datasets.access", field,
                          "team %s may read dataset %s@%s but not write it; drop \":rw\"",
                          in->team, name, ver);
        sl_strlcpy(v->datasets[v->ndatasets].name, name, sizeof(v->datasets[0].name));
        sl_strlcpy(v->datasets[v->ndatasets].version, ver, sizeof(v->datasets[0].version));
        sl_strlcpy(v->datasets[v->ndatasets].digest, d->digest, sizeof(v->datasets[0].digest));
        v->datasets[v->ndatasets++].rw = rw;
    }
    /* the network a job that named none gets: the first policy's default */
    if (!s->network_set)
        for (size_t i = 0; i < n; i++)
            if (governs(&policies[i], in) && policies[i].network_default >= 0) {
                v->network = policies[i].network_default;
                break;
            }
    gpu_milli = (int64_t)s->tasks * (s->gpus ? s->gpus * 1000LL : s->gpu_milli);
    for (size_t i = 0; i < n; i++) {
        const struct sl_policy *p = &policies[i];
        if (!governs(p, in))
            continue;
        if (admit_image(p, in, v) == 0)
            return 0;
        if (p->networks && !(p->networks & (1u << v->network))) {
            char list[64] = "";
            for (int k = 0; k < 3; k++)
                if (p->networks & (1u << k))
                    snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                             list[0] ? ", " : "", net_names[k]);
            return refuse(v, p->name, "network.allowed", "spec.network",
                          "network profile %s is not allowed for team %s, queue %s; allowed: %s",
                          net_names[v->network], in->team, in->queue, list);
        }
        if (p->max_gpu_milli >= 0 && gpu_milli > p->max_gpu_milli)
            return refuse(v, p->name, "caps.maxGpusPerJob", "spec.resources.gpus",
                          "the job asks for %g GPUs in all; at most %g per job",
                          gpu_milli / 1000.0, p->max_gpu_milli / 1000.0);
        if (p->max_runtime_ms > 0 &&
            (s->max_runtime_ms <= 0 || s->max_runtime_ms > p->max_runtime_ms)) {
            char cap[48];
            sl_fmt_duration(p->max_runtime_ms, cap, sizeof(cap));
            return refuse(v, p->name, "caps.maxRuntime", "spec.maxRuntime",
                          s->max_runtime_ms <= 0 ? "the job must set maxRuntime, at most %s"
                                                 : "maxRuntime is over the cap of %s",
                          cap);
        }
    }
    return 0;
}

bool sl_policy_may_approve(const struct sl_policy *policies, size_t n, const char *role)
{
    bool named = false;

    for (size_t i = 0; i < n; i++) {
        if (!policies[i].napprovers)
            continue;
        named = true;
        if (in_list(role, policies[i].approvers[0], 16, policies[i].napprovers))
            return true;
    }
    return !named && (strcmp(role, "admin") == 0 || strcmp(role, "team-admin") == 0);
}
