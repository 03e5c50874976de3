#!/usr/bin/env python3
"""governance.t - roles, admission policy, the audit log, lineage.

One sluiced with two teams and a user of every role in each. The RBAC
matrix sends every route of the API as every role and checks that exactly
the roles the route's scope names get past the route (anything but 401 or
403 from the scope check), and that a member of team A can neither see nor
touch team B's jobs, tokens or models. Every policy rule refuses a job with
its name in the message and admits a compliant one; a refused submission
creates nothing. The audit log holds every change and refusal; its export
of more than 1,000 records verifies offline against a signed checkpoint,
and the battery program finds every single-byte change, deletion,
reordering, insertion and truncation; an older checkpoint catches a
rollback. kill -9 during submissions leaves no job without its record. A
job registers a model with its own token and `sluice lineage` prints the
chain."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402
import ldaptest  # noqa: E402
import oidctest  # noqa: E402

SLUICE = os.path.join(SLUICE_BIN, "sluice")
BATTERY = os.path.join(SLUICE_BIN, "tests", "audit-battery")
ROLES = ["admin", "team-admin", "member", "viewer", "auditor"]
DIGEST = "sha256:" + "ab" * 32
CLEAN = "sha256:" + "cd" * 32

work = tempfile.mkdtemp(prefix="sluice-gov.")
os.chmod(work, 0o711)

# The directory for the matrix's second pass and the OIDC provider for its
# third: a user of every role in team vision, each in a group the identity
# file maps to that role.
slapd = ident = idp = None
if ldaptest.available():
    slapd = ldaptest.Slapd(work, users={"l-%s" % r: "pw-%s" % r for r in ROLES},
                           groups={"g-%s" % r: ["l-%s" % r] for r in ROLES}).start()
    ident = ldaptest.identity_file(slapd, work, [("g-" + r, "vision", r) for r in ROLES])
    idp = oidctest.FakeIdp(work)
    idp.start()
    oidctest.add_to(ident, idp, [("o-" + r, "vision", r) for r in ROLES])
d = Sluiced(fake_gpus="4xH100", args=["--identity", ident] if ident else [])
d.start()


def cli(*args, token=None, stdin=None):
    env = dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=token or d.token)
    p = subprocess.run([SLUICE] + list(args), env=env, capture_output=True, text=True,
                       input=stdin, timeout=120)
    return p.returncode, p.stdout, p.stderr


def apply(text, token=None):
    return d.request("POST", "/v1/apply", text, ctype="application/yaml",
                     token=token or d.token)


r = apply("""
apiVersion: sluice/v1
kind: Team
metadata: {name: vision}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: nlp}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: vision}
spec: {team: vision, nominal: {gpus: 2}}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: nlp}
spec: {team: nlp, nominal: {gpus: 2}}
""" + "".join("""---
apiVersion: sluice/v1
kind: User
metadata: {name: %s-%s}
spec: {team: %s, role: %s}
""" % (t, role, t, role) for t in ("vision", "nlp") for role in ROLES))
tap.ok(r.status == 200, "teams, queues and a user of every role applied", r)

TOK = {}
for t in ("vision", "nlp"):
    for role in ROLES:
        st, body = d.json_req("POST", "/v1/users/%s-%s/tokens" % (t, role),
                              {"label": "test"})
        TOK[(t, role)] = body.get("token") if st == 201 else None
tap.ok(all(TOK.values()), "a token for each of them")

# --- the RBAC matrix -----------------------------------------------------------
# route -> the roles whose scope admits it (docs/api-contract.md, "Roles")
R_ALL = set(ROLES)
R_WRITE = {"admin", "team-admin", "member"}
MATRIX = [
    ("GET", "/v1/whoami", None, R_ALL),
    ("GET", "/v1/status", None, R_ALL),  # public, as /healthz
    ("GET", "/v1/login", None, R_ALL),  # public
    # public; a user of the directory when there is one (a wrong password's
    # 401 is the route's answer, not the scope's)
    ("POST", "/v1/login", {"user": "l-viewer", "password": "pw-viewer"} if slapd else
     {"user": "nobody", "password": "x"}, R_ALL),
    ("POST", "/v1/login/refresh", None, R_ALL),
    ("POST", "/v1/login/device", None, R_ALL),  # public
    ("POST", "/v1/jobs?dry_run=true", job_doc("x", team="vision"), R_WRITE),
    ("GET", "/v1/jobs", None, R_ALL),
    ("GET", "/v1/jobs/1", None, R_ALL),
    ("DELETE", "/v1/jobs/999999", None, R_WRITE),
    ("POST", "/v1/jobs/999999/hold", None, R_WRITE),
    ("POST", "/v1/jobs/999999/release", None, R_WRITE),
    ("POST", "/v1/jobs/999999/requeue", None, R_WRITE),
    ("PATCH", "/v1/jobs/999999", {"maxRuntime": "1h"}, R_WRITE),
    ("DELETE", "/v1/arrays/999999", None, R_WRITE),
    ("GET", "/v1/jobs/1/attach", None, R_WRITE),
    ("GET", "/v1/jobs/1/events", None, R_ALL),
    ("GET", "/v1/jobs/1/logs", None, R_ALL),
    ("GET", "/v1/jobs/1/attempts", None, R_ALL),
    ("GET", "/v1/jobs/1/explain", None, R_ALL),
    ("GET", "/v1/nodes", None, R_ALL),
    ("POST", "/v1/nodes/nobody/drain", {"reason": "r"}, {"admin"}),
    ("POST", "/v1/nodes/nobody/cordon", {}, {"admin"}),
    ("POST", "/v1/nodes/nobody/uncordon", {}, {"admin"}),
    ("POST", "/v1/apply", {"apiVersion": "sluice/v1", "kind": "Cohort",
                           "metadata": {"name": "c1"}}, {"admin", "team-admin"}),
    ("GET", "/v1/teams", None, R_ALL),
    ("GET", "/v1/queues", None, R_ALL),
    ("GET", "/v1/priorityclasses", None, R_ALL),
    ("GET", "/v1/policies", None, R_ALL),
    ("GET", "/v1/datasets", None, R_ALL),
    ("POST", "/v1/users/nobody/tokens", {}, R_ALL),
    ("GET", "/v1/tokens", None, R_ALL),
    ("DELETE", "/v1/tokens/999999", None, R_ALL),
    ("GET", "/v1/report", None, R_ALL),
    ("GET", "/v1/report/utilisation", None, R_ALL),
    ("GET", "/v1/history?range=hour", None, R_ALL),
    ("GET", "/v1/budgets", None, R_ALL),
    ("POST", "/v1/carbon/site-x", "hour,g\n", {"admin"}),
    ("POST", "/v1/scans", "{}", {"admin"}),
    ("GET", "/v1/scans", None, R_ALL),
    ("GET", "/v1/audit", None, {"admin", "auditor"}),
    ("GET", "/v1/audit/export", None, {"admin", "auditor"}),
    ("GET", "/v1/audit/verify", None, {"admin", "auditor"}),
    ("GET", "/v1/audit/checkpoint", None, {"admin", "auditor"}),
    ("GET", "/v1/audit/pubkey", None, R_ALL),
    ("POST", "/v1/models", {}, R_WRITE),
    ("GET", "/v1/models", None, R_ALL),
    ("GET", "/v1/models/none@1", None, R_ALL),
    ("POST", "/v1/models/none@1/stage", {"stage": "staging"}, R_WRITE),
    ("GET", "/v1/lineage/job:1", None, R_ALL),
    ("GET", "/v1/objects/queues", None, R_ALL),
    ("GET", "/v1/objects/queue/nobody", None, R_ALL),
    ("DELETE", "/v1/objects/queue/nobody", None, {"admin", "team-admin"}),
]
# every route of the table is in the matrix (the routes are listed in
# docs/openapi.yaml too; openapi.t checks those against the server)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "api",
                       "api.c")) as f:
    src = f.read()
table = [line.split('"')[1:4:2] for line in src.split("routes[] = {")[1].split("};")[0]
         .splitlines() if line.strip().startswith('{"')]
covered = {(m, p.split("?")[0]) for m, p, _, _ in MATRIX}
missing = [(m, p) for m, p in table if p.startswith("/v1/") and
           (m, p.replace("{id}", "1").replace("{name}", "nobody")) not in covered and
           not any(m == cm and len(cp.split("/")) == len(p.split("/")) and
                   all(a == b or b.startswith("{") for a, b in zip(cp.split("/"), p.split("/")))
                   for cm, cp in covered)]
tap.ok(table and not missing, "the matrix covers all %d /v1 routes" % len(
    [p for _, p in table if p.startswith("/v1/")]), "missing: %r" % missing)

def run_matrix(tokens, how):
    """Every route of MATRIX as every role, with tokens[role] (a user of
    team vision); refused exactly when the route's scope does not hold."""
    bad = []
    for method, path, body, allowed in MATRIX:
        for role in ROLES:
            ctype = None
            if isinstance(body, str):
                ctype = "text/csv" if "carbon" in path else "application/json"
            resp = d.request(method, path, body, ctype=ctype, token=tokens[role])
            scope_refused = resp.status == 403 and "may not %s" % method in (
                resp.json or {}).get("error", {}).get("message", "")
            if path == "/v1/login/refresh" and resp.status == 200:
                tokens[role] = resp.json["token"]  # the old one is revoked
            if resp.status == 401 or (role in allowed) == scope_refused:
                bad.append("%s %s as %s: %d %s" % (method, path, role, resp.status,
                                                    resp.body[:120]))
    tap.ok(not bad, "RBAC matrix%s: %d routes x %d roles, each refused exactly when its "
           "scope does not hold" % (how, len(MATRIX), len(ROLES)), *bad[:10])


run_matrix({role: TOK[("vision", role)] for role in ROLES}, "")
if slapd:
    LDAP_TOK = {}
    for role in ROLES:
        st, body = d.json_req("POST", "/v1/login", {"user": "l-" + role, "password": "pw-" + role},
                              token=None)
        LDAP_TOK[role] = (body or {}).get("token") if st == 201 and \
            (body or {}).get("role") == role else None
    tap.ok(all(LDAP_TOK.values()), "a user of every role signs in through LDAP", LDAP_TOK)
    if all(LDAP_TOK.values()):
        run_matrix(LDAP_TOK, " with identities from LDAP")
else:
    tap.skip(2, "slapd is not installed: the matrix with LDAP identities")
if idp:
    OIDC_TOK = {}
    for role in ROLES:
        st, body = d.json_req("POST", "/v1/login",
                              {"id_token": idp.mint("o-" + role, ["o-" + role])}, token=None)
        OIDC_TOK[role] = (body or {}).get("token") if st == 201 and \
            (body or {}).get("role") == role else None
    tap.ok(all(OIDC_TOK.values()), "a user of every role signs in through OIDC", OIDC_TOK)
    if all(OIDC_TOK.values()):
        run_matrix(OIDC_TOK, " with identities from OIDC")
    r = d.request("POST", "/v1/login/refresh", token=OIDC_TOK["member"])
    tap.ok(r.status == 409 and "sign in again" in r.body.decode(),
           "an OIDC sign-in is not refreshed through LDAP: 409, sign in again", r)
    st, body = d.json_req("POST", "/v1/login", {"id_token": idp.mint("l-admin", ["o-admin"])},
                          token=None)
    tap.ok(st == 409 and "through LDAP, not OIDC" in json.dumps(body),
           "an LDAP user's name is never taken by an OIDC token (409)", body)
else:
    tap.skip(4, "slapd is not installed: the matrix with OIDC identities")
r = d.request("GET", "/v1/jobs", token="sl_not-a-token")
tap.is_(r.status, 401, "an unknown token gets 401")
r = d.request("GET", "/v1/jobs", token=None)
tap.is_(r.status, 401, "no token gets 401")

# --- cross-team isolation ----------------------------------------------------------
st, jb = d.json_req("POST", "/v1/jobs", job_doc("b-job", ("sleep", "30"), team="nlp"),
                    token=TOK[("nlp", "member")])
tap.is_(st, 201, "an nlp member submits to nlp")
bjob = jb.get("id")
m = TOK[("vision", "member")]
tap.is_(d.request("GET", "/v1/jobs/%d" % bjob, token=m).status, 404,
        "a vision member cannot see an nlp job (404, not 403: it does not exist for them)")
tap.is_(d.request("DELETE", "/v1/jobs/%d" % bjob, token=m).status, 404,
        "nor cancel it")
st, lst = d.json_req("GET", "/v1/jobs", token=m)
tap.ok(st == 200 and all(j["team"] == "vision" for j in lst["jobs"]),
       "a vision member's job list holds vision jobs only")
r = d.request("GET", "/v1/jobs?team=nlp", token=m)
tap.is_(r.status, 403, "and asking for nlp's is refused")
r = d.request("POST", "/v1/jobs", job_doc("x", team="nlp"), token=m)
tap.ok(r.status == 403 and "team" in (r.error_field() or ""),
       "a vision member cannot submit to nlp", r)
st, lst = d.json_req("GET", "/v1/jobs", token=TOK[("nlp", "auditor")])
tap.ok(st == 200 and any(j["team"] == "vision" for j in lst["jobs"]) is not None,
       "an auditor reads every team's jobs")
r = d.request("DELETE", "/v1/jobs/%d" % bjob, token=TOK[("nlp", "auditor")])
tap.is_(r.status, 403, "but cannot cancel them")

# tokens: self, team-admin within its team, never above its role
r = d.request("POST", "/v1/users/vision-viewer/tokens", {}, token=TOK[("vision", "viewer")])
tap.is_(r.status, 201, "a viewer makes a token for itself")
r = d.request("POST", "/v1/users/vision-member/tokens", {}, token=TOK[("vision", "viewer")])
tap.is_(r.status, 403, "but not for another user")
r = d.request("POST", "/v1/users/vision-member/tokens", {}, token=TOK[("vision", "team-admin")])
tap.is_(r.status, 201, "a team-admin makes tokens for its team's members")
r = d.request("POST", "/v1/users/nlp-member/tokens", {}, token=TOK[("vision", "team-admin")])
tap.is_(r.status, 403, "but not for another team's")
r = d.request("POST", "/v1/users/vision-auditor/tokens", {}, token=TOK[("vision", "team-admin")])
tap.is_(r.status, 403, "nor for an auditor of its team (a role it does not hold)")

# team-admin manifests
ta = TOK[("vision", "team-admin")]
r = apply("apiVersion: sluice/v1\nkind: User\nmetadata: {name: v-new}\n"
          "spec: {team: vision, role: member}\n", token=ta)
tap.is_(r.status, 200, "a team-admin adds a member to its team")
r = apply("apiVersion: sluice/v1\nkind: User\nmetadata: {name: v-boss}\n"
          "spec: {team: vision, role: admin}\n", token=ta)
tap.ok(r.status == 403 and "no role grants more" in r.body.decode(),
       "but may not grant admin", r)
r = apply("apiVersion: sluice/v1\nkind: User\nmetadata: {name: n-new}\n"
          "spec: {team: nlp, role: member}\n", token=ta)
tap.is_(r.status, 403, "nor add users to another team")
r = apply("apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision-dev}\n"
          "spec: {team: vision, nominal: {gpus: 1}}\n---\n"
          "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision}\n"
          "spec: {team: vision, nominal: {gpus: 1}}\n", token=ta)
tap.is_(r.status, 200, "a team-admin moves 1 of its team's 2 GPUs to a new queue")
r = apply("apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: vision-dev}\n"
          "spec: {team: vision, nominal: {gpus: 2}}\n", token=ta)
tap.ok(r.status == 403 and "than an admin granted" in r.body.decode(),
       "but cannot grow the team's quota past what an admin granted", r)
r = apply("apiVersion: sluice/v1\nkind: Pricing\nmetadata: {name: default}\n", token=ta)
tap.is_(r.status, 403, "nor apply cluster settings")

# revocation is immediate
st, t = d.json_req("POST", "/v1/users/vision-member/tokens", {"label": "short"})
tid, tok = t["id"], t["token"]
tap.is_(d.request("GET", "/v1/whoami", token=tok).status, 200, "a new token works")
r = d.request("DELETE", "/v1/tokens/%d" % tid, token=TOK[("nlp", "team-admin")])
tap.is_(r.status, 404, "another team's team-admin cannot revoke it")
r = d.request("DELETE", "/v1/tokens/%d" % tid, token=TOK[("vision", "member")])
tap.is_(r.status, 200, "its owner revokes it")
tap.is_(d.request("GET", "/v1/whoami", token=tok).status, 401,
        "and it is refused at once, cache or not")
st, toks = d.json_req("GET", "/v1/tokens", token=TOK[("vision", "member")])
tap.ok(st == 200 and all("token" not in x for x in toks["tokens"]) and
       any(x["id"] == tid and x["revoked"] for x in toks["tokens"]),
       "the token list shows it revoked and never a secret")
st, ex = d.json_req("POST", "/v1/users/vision-member/tokens", {"expires_in": "1s"})
time.sleep(2.5)
tap.is_(d.request("GET", "/v1/whoami", token=ex["token"]).status, 401,
        "an expired token is refused")

# --- admission policy ------------------------------------------------------------
os.makedirs(os.path.join(work, "imagenet"), exist_ok=True)
r = apply("""
apiVersion: sluice/v1
kind: Policy
metadata: {name: vision-rules}
spec:
  teams: [vision]
  images:
    allowedRegistries: [registry.internal/]
    deny: ["*:latest"]
    requireDigest: [production]
    scan: {maxSeverity: high, requireScan: true}
  network: {allowed: [isolated, internal], default: isolated}
  caps: {maxGpusPerJob: 2, maxRuntime: 1h}
---
apiVersion: sluice/v1
kind: Dataset
metadata: {name: imagenet}
spec:
  version: v3
  digest: sha256:%s
  owner: nlp
  path: %s
  access: [{team: vision, mode: ro}]
""" % ("ef" * 32, os.path.join(work, "imagenet")))
tap.is_(r.status, 200, "a Policy and a Dataset applied")

# a scan: HIGH findings for DIGEST, a clean one for CLEAN
def trivy(digest, vulns):
    return json.dumps({
        "SchemaVersion": 2, "ArtifactName": "registry.internal/ml/train@" + digest,
        "ArtifactType": "container_image",
        "Metadata": {"ImageID": digest, "RepoDigests": ["registry.internal/ml/train@" + digest],
                     "RepoTags": []},
        "Results": [{"Target": "debian", "Class": "os-pkgs", "Type": "debian",
                     "Vulnerabilities": [{"VulnerabilityID": v, "PkgName": "openssl",
                                          "InstalledVersion": "3.0.1", "FixedVersion": "3.0.2",
                                          "Severity": s, "Title": "t"} for v, s in vulns]}]})


for dg, vulns in ((DIGEST, [("CVE-2026-0001", "HIGH"), ("CVE-2026-0002", "LOW")]),
                  (CLEAN, [("CVE-2026-0003", "LOW")])):
    with open(os.path.join(work, "scan.json"), "w") as f:
        f.write(trivy(dg, vulns))
    rc, out, err = cli("scan", "import", os.path.join(work, "scan.json"))
    tap.ok(rc == 0 and dg in out, "sluice scan import %s..." % dg[:14], out, err)

GOOD = dict(image="registry.internal/ml/train@" + CLEAN, maxRuntime="30m",
            resources={"gpus": 1}, datasets=["imagenet@v3"])
CASES = [
    ("images.allowedRegistries", dict(image="docker.io/evil/x@" + CLEAN),
     "is not from an allowed registry; allowed: registry.internal/"),
    ("images.deny", dict(image="registry.internal/ml/train:latest"),
     "matches the denied pattern \"*:latest\""),
    ("images.requireDigest", dict(image="registry.internal/ml/train:v1", priorityClass="production"),
     "priority class production needs an image pinned by digest"),
    ("images.scan", dict(image="registry.internal/ml/train@" + DIGEST),
     "has 1 high finding (at or above high is refused): CVE-2026-0001"),
    ("images.scan", dict(image="registry.internal/ml/train@sha256:" + "00" * 32),
     "was never scanned; pin the image by digest and import its scan"),
    ("network.allowed", dict(network="egress"),
     "network profile egress is not allowed for team vision, queue vision; allowed: internal, "
     "isolated"),
    ("caps.maxGpusPerJob", dict(resources={"gpus": 1}, tasks=3),
     "the job asks for 3 GPUs in all; at most 2 per job"),
    ("caps.maxRuntime", dict(maxRuntime="2h"), "maxRuntime is over the cap of 1h"),
    ("datasets.exists", dict(datasets=["imagenet@v9"]),
     "dataset imagenet@v9 is not declared (kind: Dataset)"),
    ("datasets.access", dict(datasets=["imagenet@v3:rw"]),
     "team vision may read dataset imagenet@v3 but not write it; drop \":rw\""),
]
vm = TOK[("vision", "member")]
before = len(d.list_jobs())
for rule, change, text in CASES:
    spec = dict(GOOD)
    spec.update(change)
    r = d.request("POST", "/v1/jobs", job_doc("p", ("true",), team="vision", **spec), token=vm)
    msg = (r.json or {}).get("error", {}).get("message", "")
    tap.ok(r.status == 403 and (r.json or {}).get("error", {}).get("code") == "policy_denied"
           and rule in msg and text in msg, "%s refuses: %s" % (rule, text), r)
tap.is_(len(d.list_jobs()), before, "refused submissions created nothing")
r = d.request("POST", "/v1/jobs", job_doc("p", ("true",), team="nlp", **dict(
    GOOD, datasets=["imagenet@v3:rw"], image="docker.io/library/ubuntu:latest")),
    token=TOK[("nlp", "member")])
tap.is_(r.status, 201, "the policy governs vision only: nlp (the dataset's owner, rw) is admitted")
r = d.request("POST", "/v1/jobs?dry_run=true", job_doc("p", team="vision", **GOOD), token=vm)
tap.ok(r.status == 200 and r.json.get("allowed") is True and r.json.get("network") == "isolated"
       and r.json.get("datasets") == [{"name": "imagenet", "version": "v3", "mode": "ro"}],
       "dry run: allowed, the policy's default network, the dataset read-only", r)
tap.is_(len(d.list_jobs()), before + 1, "and a dry run creates nothing")
with open(os.path.join(work, "job.yaml"), "w") as f:
    json.dump(job_doc("p", team="vision", **dict(GOOD, network="egress")), f)
rc, out, err = cli("submit", "-f", os.path.join(work, "job.yaml"), "--dry-run", token=vm)
tap.ok(rc == 2 and "network.allowed" in err, "sluice submit --dry-run prints the refusal", err)

# the admitted job sees its dataset and runs isolated, and registers a model
reg = ('curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $SLUICE_TOKEN" '
       '-H "Content-Type: application/json" -X POST "$SLUICE_SERVER/v1/models" -d '
       '"{\\"name\\":\\"resnet\\",\\"version\\":\\"1.0\\",\\"digest\\":\\"' + "sha256:" + "12" * 32 +
       '\\",\\"uri\\":\\"s3://models/resnet/1.0\\",\\"metrics\\":{\\"top1\\":0.76}}"; echo; '
       'echo "ds=$SLUICE_DATASET_IMAGENET mode=$SLUICE_DATASET_IMAGENET_MODE"')
# internal: the local executor does not restrict it (it says so), so the job
# reaches the API; an isolated one has loopback only (checked below)
spec = dict(GOOD, network="internal",
            code={"repo": "https://git.example/vision/resnet", "commit": "0123abc"})
st, jb = d.json_req("POST", "/v1/jobs", job_doc("train", ("sh", "-c", reg), team="vision",
                                                **spec), token=vm)
tap.is_(st, 201, "a compliant job is admitted")
job = jb.get("id")
for _ in range(300):
    st, j = d.json_req("GET", "/v1/jobs/%d" % job)
    if j.get("state") in ("Succeeded", "Failed"):
        break
    time.sleep(0.1)
log = d.request("GET", "/v1/jobs/%d/logs" % job).body.decode()
tap.ok(j.get("state") == "Succeeded" and log.startswith("201"),
       "the job registered a model with its own token", log, j)
tap.ok("ds=%s mode=ro" % os.path.join(work, "imagenet") in log,
       "its environment names the dataset's path, read-only", log)
tap.ok("not enforced" in (j.get("message") or ""),
       "the job says that internal is not enforced", j.get("message"))
iso = 'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " " | tr "\\n" ","'
st, jb2 = d.json_req("POST", "/v1/jobs", job_doc("iso", ("sh", "-c", iso), team="vision",
                                                 **GOOD), token=vm)
for _ in range(300):
    st, j2 = d.json_req("GET", "/v1/jobs/%d" % jb2.get("id", 0))
    if j2.get("state") in ("Succeeded", "Failed"):
        break
    time.sleep(0.1)
log2 = d.request("GET", "/v1/jobs/%d/logs" % jb2.get("id", 0)).body.decode()
if os.geteuid() == 0:
    tap.ok(log2.strip() == "lo,", "isolated (the policy's default): only lo in its network "
           "namespace", log2, j2)
else:
    tap.skip(1, "isolation needs root")
st, toks = d.json_req("GET", "/v1/tokens?user=vision-member")
jt = [x for x in toks.get("tokens", []) if x.get("job") == job]
tap.ok(jt and all(x["revoked"] for x in jt), "the job's token was revoked when it ended", jt)

# --- models and lineage -----------------------------------------------------------
r = d.request("POST", "/v1/models/resnet@1.0/stage", {"stage": "production"}, token=vm)
tap.ok(r.status == 403 and "models.approvers" in r.body.decode(),
       "a member cannot approve a model into production", r)
r = d.request("POST", "/v1/models/resnet@1.0/stage", {"stage": "production"},
              token=TOK[("nlp", "team-admin")])
tap.is_(r.status, 404, "another team's team-admin does not see it")
rc, out, err = cli("models", "stage", "resnet@1.0", "--stage", "production", "--comment",
                   "top1 ok", token=TOK[("vision", "team-admin")])
tap.ok(rc == 0, "its team-admin moves it to production", out, err)
rc, out, err = cli("lineage", "model:resnet@1.0", token=TOK[("vision", "viewer")])
tap.ok(rc == 0 and "model resnet@1.0  stage production" in out and
       "<- job %d train  user vision-member  team vision  queue vision" % job in out and
       "GPU-hours" in out and "<- image registry.internal/ml/train@" + CLEAN in out and
       "<- code https://git.example/vision/resnet @ 0123abc" in out and
       "<- dataset imagenet@v3 (ro)  digest sha256:" + "ef" * 32 in out,
       "sluice lineage prints model <- job <- image, code, dataset", out, err)
rc, out, err = cli("-o", "json", "lineage", "model:resnet@1.0")
ln = json.loads(out) if rc == 0 else {}
tap.ok(ln.get("job", {}).get("usage", {}).get("gpu_hours", 0) > 0 and
       ln["model"]["history"][0]["to"] == "production",
       "its JSON has the job's usage and the model's stage history", out)
tap.is_(cli("lineage", "model:resnet@1.0", token=TOK[("nlp", "member")])[0], 2,
        "another team's member cannot read it")

# --- the audit log ------------------------------------------------------------------
st, au = d.json_req("GET", "/v1/audit?object=job:%d" % job, token=TOK[("vision", "auditor")])
acts = [x["action"] for x in au.get("records", [])]
tap.ok("job.submit" in acts and "job.place" in acts, "the job's submission and placement "
       "are in the log", acts)
st, au = d.json_req("GET", "/v1/audit?outcome=refused&action=job.submit", token=TOK[("vision",
                                                                                      "auditor")])
tap.ok(st == 200 and any(x["details"].get("rule") == "images.deny" for x in au["records"]),
       "policy refusals are recorded with their rule")
exp_text = d.request("GET", "/v1/audit/export").body.decode()
tap.ok("token.create" in exp_text and not any(t in exp_text for t in TOK.values()) and
       d.token not in exp_text, "token records never hold a secret")
rc, out, err = cli("audit", "log", "--action", "token.revoke",
                   token=TOK[("vision", "auditor")])
tap.ok(rc == 0 and "token.revoke" in out, "sluice audit log filters by action", out, err)
tap.is_(cli("audit", "log", token=TOK[("vision", "member")])[0], 2,
        "a member cannot read the audit log")

# grow the log past 1,000 records (a submission and a placement each), and
# wait for those jobs to have run rather than for a fixed time
for i in range(0, 520):
    d.request("POST", "/v1/jobs?dry_run=false", job_doc("n%d" % i, ("true",), team="nlp"),
              token=TOK[("nlp", "member")])
deadline = time.monotonic() + 180
while time.monotonic() < deadline and d.list_jobs(state="Pending,Running", team="nlp"):
    time.sleep(0.2)
st, v = d.json_req("GET", "/v1/audit/verify")
tap.ok(st == 200 and v.get("ok") is True and v.get("records", 0) > 900,
       "the live log verifies (%s records)" % v.get("records"), v)
old_ckpt = os.path.join(work, "old.ckpt")
rc, out, err = cli("audit", "checkpoint", token=TOK[("vision", "auditor")])
open(old_ckpt, "w").write(out)
rc, key, err = cli("audit", "pubkey", token=TOK[("vision", "member")])
open(os.path.join(work, "key"), "w").write(key)
for i in range(5):
    d.request("POST", "/v1/jobs", job_doc("late%d" % i, ("true",), team="nlp"),
              token=TOK[("nlp", "member")])
deadline = time.monotonic() + 60
while time.monotonic() < deadline and d.list_jobs(state="Pending,Running", team="nlp"):
    time.sleep(0.2)
ckpt = os.path.join(work, "new.ckpt")
rc, out, err = cli("audit", "checkpoint")
open(ckpt, "w").write(out)
export = os.path.join(work, "audit.jsonl")
rc, out, err = cli("audit", "export", "-f", export, token=TOK[("vision", "auditor")])
n = sum(1 for _ in open(export))
tap.ok(rc == 0 and n >= 1000, "sluice audit export wrote %d records" % n, err)
# the export may have grown past the checkpoint: cut it at the checkpoint's size
size = int(open(ckpt).read().split("\n")[1])
lines = open(export).read().splitlines(True)[:size]
open(export, "w").write("".join(lines))
rc, out, err = cli("audit", "verify", "-f", export, "--checkpoint", ckpt, "--pubkey",
                   os.path.join(work, "key"))
tap.ok(rc == 0 and "ok: %d records" % size in out and "matches" in out,
       "an auditor verifies the export offline against the signed checkpoint", out, err)
rc, out, err = cli("audit", "verify", "-f", export, "--checkpoint", old_ckpt, "--pubkey",
                   os.path.join(work, "key"))
tap.ok(rc == 0, "the export is an honest extension of the older checkpoint", out, err)
t0 = time.time()
p = subprocess.run([BATTERY, export, ckpt, os.path.join(work, "key")], capture_output=True,
                   text=True, timeout=600)
tap.ok(p.returncode == 0, "the battery on the daemon's export: every mutation detected "
       "(%.1f s)" % (time.time() - t0), p.stdout, p.stderr)
for line in p.stdout.splitlines():
    tap.diag(line)
# one tampering each way through the CLI, with the first bad record named
tampered = os.path.join(work, "tampered.jsonl")
rec = json.loads(lines[499])
rec["actor"] = "someone-else"
bad_lines = list(lines)
bad_lines[499] = json.dumps(rec, separators=(",", ":")) + "\n"
open(tampered, "w").write("".join(bad_lines))
rc, out, err = cli("audit", "verify", "-f", tampered)
tap.ok(rc == 3 and "record 500" in err, "a changed record is named (exit 3)", err)
open(tampered, "w").write("".join(lines[:-3]))
rc, out, err = cli("audit", "verify", "-f", tampered)
tap.is_(rc, 0, "a cut tail passes the chain alone (why checkpoints are kept)")
rc, out, err = cli("audit", "verify", "-f", tampered, "--checkpoint", ckpt, "--pubkey",
                   os.path.join(work, "key"))
tap.ok(rc == 3 and "truncated or rolled back" in err, "but not the signed checkpoint", err)

# --- kill -9 during submissions --------------------------------------------------------
stop = threading.Event()
acked = []


def submitter(k):
    i = 0
    while not stop.is_set():
        r = d.request("POST", "/v1/jobs", job_doc("k%d-%d" % (k, i), ("true",), team="nlp"),
                      token=TOK[("nlp", "member")])
        if r.status == 201:
            acked.append(r.json["id"])
        i += 1


# one submitter on the shared connection; the main thread only sleeps
subs = [threading.Thread(target=submitter, args=(k,)) for k in range(1)]
for t in subs:
    t.start()
time.sleep(2.0)
d.kill9()
stop.set()
for t in subs:
    t.join()
d.start()
ids = {r[0] for r in d.store_rows("SELECT id FROM jobs")}
audited = {int(r[0].split(":")[1]) for r in d.store_rows(
    "SELECT object FROM audit WHERE action = 'job.submit' AND outcome = 'ok'")}
tap.ok(acked and set(acked) <= ids, "every acknowledged submission survived kill -9 (%d)"
       % len(acked))
tap.ok(ids <= audited, "and no job is without its audit record (%d jobs, %d records)"
       % (len(ids), len(audited)), sorted(ids - audited)[:10])
st, v = d.json_req("GET", "/v1/audit/verify")
tap.ok(st == 200 and v.get("ok") is True, "the log verifies after kill -9", v)

# rollback: the store restored from a copy taken before the old checkpoint
# was signed; the operator then carries on: the auditor's checkpoint catches it
snap = os.path.join(work, "snap")
d.stop()
shutil.copytree(d.data, snap)
d.start()
for i in range(3):
    d.request("POST", "/v1/jobs", job_doc("after%d" % i, ("true",), team="nlp"),
              token=TOK[("nlp", "member")])
time.sleep(1)
rc, out, err = cli("audit", "checkpoint")
open(os.path.join(work, "kept.ckpt"), "w").write(out)
d.stop()
if d.pg_db:
    # PostgreSQL: the same rollback done in the database (as restoring an
    # older dump would): the records since before the snapshot go
    d.store_exec("DELETE FROM audit WHERE seq > (SELECT max(seq) - 5 FROM audit)")
    d.store_exec("DELETE FROM audit_checkpoints WHERE size > (SELECT max(seq) FROM audit)")
else:
    db = sqlite3.connect(os.path.join(snap, "sluice.db"))
    db.execute("DELETE FROM audit WHERE seq > (SELECT max(seq) - 2 FROM audit)")
    # a careful operator drops the daemon's own later checkpoints too
    db.execute("DELETE FROM audit_checkpoints WHERE size > (SELECT max(seq) FROM audit)")
    db.commit()
    db.close()
    shutil.rmtree(d.data)
    shutil.copytree(snap, d.data)
d.start()
d.request("POST", "/v1/jobs", job_doc("forked", ("true",), team="nlp"),
          token=TOK[("nlp", "member")])
time.sleep(1)
rc, out, err = cli("audit", "export", "-f", export)
rc, out, err = cli("audit", "verify", "-f", export, "--checkpoint",
                   os.path.join(work, "kept.ckpt"), "--pubkey", os.path.join(work, "key"))
tap.ok(rc == 3 and ("rewritten" in err or "rolled back" in err),
       "a rolled-back store is caught by the checkpoint kept before", err)
st, v = d.json_req("GET", "/v1/audit/verify")
tap.ok(st == 200 and v.get("ok") is True,
       "(the daemon's own chain is consistent again: only a kept checkpoint tells)", v)

tap.done_testing(d)
