/*
 * test_policy.c - Policy and Dataset manifests, image references, Trivy
 * reports and the admission verdict (src/policy/policy.c). The daemon's
 * side of every rule, with its message, is in tests/integration/governance.t.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/spec.h"
#include "../../src/policy/policy.h"
#include "../tap.h"

static int parse(const char *yaml, struct sl_manifest **m, struct sl_error *err)
{
    size_t n = 0;
    memset(err, 0, sizeof(*err));
    *m = NULL;
    return sl_manifests_parse(yaml, strlen(yaml), m, &n, err);
}

static void refused(const char *yaml, const char *field, const char *text, const char *name)
{
    struct sl_manifest *m;
    struct sl_error err;
    int rc = parse(yaml, &m, &err);

    if (!ok(rc == -EINVAL && strcmp(err.field, field) == 0 && strstr(err.text, text), "%s",
            name))
        diag("rc %d, field \"%s\" (want \"%s\"), text \"%s\" (want \"%s\")", rc, err.field,
             field, err.text, text);
    free(m);
}

#define P "apiVersion: sluice/v1\nkind: Policy\nmetadata: {name: p}\nspec:\n"
#define D "apiVersion: sluice/v1\nkind: Dataset\nmetadata: {name: imagenet}\nspec:\n"

static void manifests(void)
{
    struct sl_manifest *m, *back;
    struct sl_error err;
    json_t *j;
    char *text, doc[4096];
    size_t n;

    ok(parse(P "  teams: [vision]\n  images: {allowedRegistries: [r.io/], deny: ['*:latest'],"
               " requireDigest: [production], scan: {maxSeverity: high, requireScan: true}}\n"
               "  network: {allowed: [isolated], default: isolated}\n"
               "  caps: {maxGpusPerJob: 1.5, maxRuntime: 2h}\n"
               "  models: {approvers: [admin]}\n",
             &m, &err) == 0,
       "a full Policy parses (%s)", err.text);
    ok(m && m->kind == SL_KIND_POLICY && m->u.policy.nteams == 1 &&
           m->u.policy.max_severity == SL_SEV_HIGH && m->u.policy.require_scan &&
           m->u.policy.max_gpu_milli == 1500 && m->u.policy.max_runtime_ms == 7200000 &&
           m->u.policy.network_default == SL_NET_ISOLATED,
       "its fields");
    j = sl_manifest_spec_json(m);
    text = json_dumps(j, JSON_COMPACT);
    snprintf(doc, sizeof(doc),
             "{\"apiVersion\":\"sluice/v1\",\"kind\":\"Policy\",\"metadata\":{\"name\":\"p\"},"
             "\"spec\":%s}", text);
    ok(sl_manifests_parse(doc, strlen(doc), &back, &n, &err) == 0 &&
           memcmp(&back->u.policy, &m->u.policy, sizeof(m->u.policy)) == 0,
       "the normalised spec reads back the same");
    free(text);
    json_decref(j);
    free(back);
    free(m);

    refused(P "  colour: red\n", "spec.colour", "unknown field", "an unknown field");
    refused(P "  teams: [Vision]\n", "spec.teams[0]", "team names", "a bad team name");
    refused(P "  images: {scan: {maxSeverity: severe}}\n", "spec.images.scan.maxSeverity",
            "low, medium, high or critical", "an unknown severity");
    refused(P "  network: {allowed: [open]}\n", "spec.network.allowed[0]",
            "isolated, internal or egress", "an unknown profile");
    refused(P "  network: {allowed: [isolated], default: egress}\n", "spec.network.default",
            "one of the allowed", "a default outside the allowed profiles");
    refused(P "  caps: {maxGpusPerJob: -1}\n", "spec.caps.maxGpusPerJob", "number of GPUs",
            "negative GPUs");
    refused(P "  caps: {maxRuntime: soon}\n", "spec.caps.maxRuntime", "positive duration",
            "a bad duration");
    refused(P "  models: {approvers: [root]}\n", "spec.models.approvers[0]", "roles",
            "an unknown approver role");

    ok(parse(D "  version: v3\n  owner: nlp\n  path: /data/imagenet\n"
               "  access: [{team: vision}, {team: cv, mode: rw}]\n",
             &m, &err) == 0 &&
           m->u.dataset.naccess == 2 && !m->u.dataset.access[0].rw &&
           m->u.dataset.access[1].rw,
       "a Dataset parses, mode ro by default (%s)", err.text);
    free(m);
    refused(D "  owner: nlp\n  path: /d\n", "spec.version", "is required", "version required");
    refused(D "  version: v3\n  owner: nlp\n  path: data\n", "spec.path", "absolute",
            "a relative path");
    refused(D "  version: v3\n  owner: nlp\n  path: /data/../etc\n", "spec.path", "'..'",
            "a path with ..");
    refused(D "  version: v3\n  owner: nlp\n  path: /d\n  digest: md5:1\n", "spec.digest",
            "sha256:", "a bad digest");
    refused(D "  version: v3\n  owner: nlp\n  path: /d\n  access: [{team: a, mode: w}]\n",
            "spec.access[0]", "ro or rw", "a bad mode");
}

static void image_refs(void)
{
    static const struct {
        const char *ref, *registry, *repo, *tag;
        bool digest;
    } cases[] = {
        {"ubuntu", "docker.io", "library/ubuntu", "", false},
        {"ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", false},
        {"acme/tool:1", "docker.io", "acme/tool", "1", false},
        {"registry.internal/ml/train:v1", "registry.internal", "ml/train", "v1", false},
        {"localhost:5000/x", "localhost:5000", "x", "", false},
        {"ghcr.io/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         "ghcr.io", "a/b", "", true},
    };
    struct sl_image_ref r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ok(sl_image_ref_parse(cases[i].ref, &r) == 0 &&
               strcmp(r.registry, cases[i].registry) == 0 &&
               strcmp(r.repository, cases[i].repo) == 0 && strcmp(r.tag, cases[i].tag) == 0 &&
               (r.digest[0] != '\0') == cases[i].digest,
           "image %s: %s / %s", cases[i].ref, r.registry, r.repository);
    ok(sl_image_ref_parse("x@sha256:zz", &r) == -EINVAL, "a bad digest is refused");
}

static void trivy(void)
{
    static const char report[] =
        "{\"SchemaVersion\":2,\"ArtifactName\":\"r.io/a@sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
        "\"ArtifactType\":\"container_image\",\"Metadata\":{\"ImageID\":\"sha256:"
        "1111111111111111111111111111111111111111111111111111111111111111\","
        "\"RepoDigests\":[\"r.io/a@sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"]},"
        "\"Results\":[{\"Target\":\"t\",\"Class\":\"os-pkgs\",\"Vulnerabilities\":["
        "{\"VulnerabilityID\":\"CVE-1\",\"Severity\":\"CRITICAL\"},"
        "{\"VulnerabilityID\":\"CVE-2\",\"Severity\":\"HIGH\"},"
        "{\"VulnerabilityID\":\"CVE-3\",\"Severity\":\"LOW\"}]},"
        "{\"Target\":\"Dockerfile\",\"Class\":\"config\",\"Misconfigurations\":["
        "{\"ID\":\"DS002\",\"Status\":\"FAIL\",\"Severity\":\"HIGH\"},"
        "{\"ID\":\"DS005\",\"Status\":\"PASS\",\"Severity\":\"HIGH\"}]}]}";
    struct sl_scan s, back;
    struct sl_error err = {{0}, {0}};
    json_t *j;

    ok(sl_trivy_parse(report, strlen(report), &s, &err) == 0, "a Trivy report parses (%s)",
       err.text);
    ok(strncmp(s.digest, "sha256:0123", 11) == 0, "the digest from RepoDigests");
    ok(s.counts[SL_SEV_CRITICAL] == 1 && s.counts[SL_SEV_HIGH] == 2 &&
           s.counts[SL_SEV_LOW] == 1 && s.top == SL_SEV_CRITICAL &&
           strcmp(s.ids[0], "CVE-1") == 0,
       "findings by severity; a passed misconfiguration is not one");
    j = sl_scan_json(&s);
    ok(j && sl_scan_from_json(j, &back) == 0 && back.top == s.top &&
           memcmp(back.counts, s.counts, sizeof(s.counts)) == 0,
       "the summary reads back");
    json_decref(j);
    ok(sl_trivy_parse("{\"SchemaVersion\":1}", 19, &s, &err) == -EINVAL &&
           strcmp(err.field, "SchemaVersion") == 0,
       "another schema version is refused");
    ok(sl_trivy_parse("[", 1, &s, &err) == -EINVAL, "not JSON is refused");
}

static void approvers(void)
{
    struct sl_policy p;

    ok(sl_policy_may_approve(NULL, 0, "team-admin") && !sl_policy_may_approve(NULL, 0, "member"),
       "without a policy: admin and team-admin approve");
    memset(&p, 0, sizeof(p));
    p.napprovers = 1;
    strcpy(p.approvers[0], "member");
    ok(sl_policy_may_approve(&p, 1, "member") && !sl_policy_may_approve(&p, 1, "team-admin"),
       "a policy's approvers replace the default");
}

int main(void)
{
    manifests();
    image_refs();
    trivy();
    approvers();
    return done_testing();
}
