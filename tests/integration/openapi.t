#!/usr/bin/env python3
"""openapi.t - docs/openapi.yaml against a running sluiced.

1. The document is sound: OpenAPI 3.0.3, every $ref resolves, and its routes
   are exactly those of the table in docs/api-contract.md.
2. Every operation is called with valid and invalid requests (bad JSON,
   unknown fields, oversize bodies, no token, unknown ids, conflicts ...).
   Every answer's status must be declared for that operation (and never
   500), and every JSON body must validate against the declared schema.
   The valid request bodies sent must validate against the request schema,
   and the invalid ones must not, so the document states the rules the
   server enforces.
3. Methods a path does not list get 405, unknown paths 404.

Needs python3-yaml (Debian package; scripts/deps.sh installs it).
"""

import json
import os
import re
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import REPO, Response, Sluiced, job_doc, tap  # noqa: E402
from slws import Attach  # noqa: E402
import ldaptest  # noqa: E402
import oidctest  # noqa: E402

try:
    import yaml
except ImportError:
    tap.skip_all("python3-yaml is not installed (scripts/deps.sh installs it)")

# /v1 routes that need no token (as /healthz): which daemon answers
PUBLIC_V1 = {"/v1/status", "/v1/login", "/v1/login/device"}
IDP = None  # the OIDC provider (oidctest.FakeIdp) of the identity file

DOC_PATH = os.path.join(REPO, "docs", "openapi.yaml")
CONTRACT_PATH = os.path.join(REPO, "docs", "api-contract.md")
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
MiB = 1 << 20

with open(DOC_PATH) as f:
    DOC = yaml.safe_load(f)


# --- a JSON-Schema subset (OpenAPI 3.0 flavour) ------------------------------

def resolve(schema):
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise KeyError("external $ref %s" % ref)
        node = DOC
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        schema = node
        seen += 1
        if seen > 50:
            raise KeyError("$ref loop at %s" % ref)
    return schema


RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def type_ok(t, v):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    raise KeyError("unknown type %r" % t)


def validate(schema, v, path="$"):
    """Returns a list of 'path: problem' strings; empty when v is valid."""
    s = resolve(schema)
    if v is None:
        if s.get("nullable"):
            return []
        if "type" in s:
            return ["%s: null where %s is required" % (path, s["type"])]
    errs = []
    if "allOf" in s:
        for sub in s["allOf"]:
            errs += validate(sub, v, path)
    if "anyOf" in s:
        if v is None and s.get("nullable"):
            pass
        elif not any(not validate(sub, v, path) for sub in s["anyOf"]):
            details = [validate(sub, v, path) for sub in s["anyOf"]]
            errs.append("%s: matches none of anyOf: %s" % (path, details))
    if "oneOf" in s:
        results = [validate(sub, v, path) for sub in s["oneOf"]]
        good = sum(1 for r in results if not r)
        if good != 1:
            # Name the branch that came closest, it is the useful one.
            best = min(results, key=len)
            errs.append("%s: matches %d of oneOf (want 1)%s" %
                        (path, good, ": " + "; ".join(best) if good == 0 else ""))
    if v is None:
        return errs
    t = s.get("type")
    if t is not None and not type_ok(t, v):
        return errs + ["%s: %s is not of type %s" % (path, json.dumps(v)[:60], t)]
    if "enum" in s and v not in s["enum"]:
        errs.append("%s: %r not in %r" % (path, v, s["enum"]))
    if isinstance(v, str):
        if "minLength" in s and len(v) < s["minLength"]:
            errs.append("%s: shorter than %d" % (path, s["minLength"]))
        if "maxLength" in s and len(v) > s["maxLength"]:
            errs.append("%s: longer than %d" % (path, s["maxLength"]))
        if "pattern" in s and not re.search(s["pattern"], v):
            errs.append("%s: %r does not match %s" % (path, v, s["pattern"]))
        if s.get("format") == "date-time" and not RFC3339.match(v):
            errs.append("%s: %r is not an RFC 3339 date-time" % (path, v))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in s:
            if s.get("exclusiveMinimum") and not v > s["minimum"]:
                errs.append("%s: %r <= %r" % (path, v, s["minimum"]))
            elif v < s["minimum"]:
                errs.append("%s: %r < %r" % (path, v, s["minimum"]))
        if "maximum" in s:
            if s.get("exclusiveMaximum") and not v < s["maximum"]:
                errs.append("%s: %r >= %r" % (path, v, s["maximum"]))
            elif v > s["maximum"]:
                errs.append("%s: %r > %r" % (path, v, s["maximum"]))
    if isinstance(v, list):
        if "minItems" in s and len(v) < s["minItems"]:
            errs.append("%s: fewer than %d items" % (path, s["minItems"]))
        if "maxItems" in s and len(v) > s["maxItems"]:
            errs.append("%s: more than %d items" % (path, s["maxItems"]))
        if "items" in s:
            for i, item in enumerate(v):
                errs += validate(s["items"], item, "%s[%d]" % (path, i))
    if isinstance(v, dict):
        props = s.get("properties", {})
        if "minProperties" in s and len(v) < s["minProperties"]:
            errs.append("%s: fewer than %d properties" % (path, s["minProperties"]))
        for k in s.get("required", []):
            if k not in v:
                errs.append("%s: missing required %r" % (path, k))
        extra = s.get("additionalProperties", True)
        for k, val in v.items():
            sub = "%s.%s" % (path, k)
            if k in props:
                errs += validate(props[k], val, sub)
            elif extra is False:
                errs.append("%s: not allowed (additionalProperties: false)" % sub)
            elif isinstance(extra, dict):
                errs += validate(extra, val, sub)
    return errs


# --- the document's operations -------------------------------------------------

def operations():
    """{(METHOD, template): operation} for every operation in the document."""
    ops = {}
    for p, item in DOC["paths"].items():
        for m in METHODS:
            if m in item:
                ops[(m.upper(), p)] = item[m]
    return ops


OPS = operations()
CALLED = {}   # (METHOD, template) -> set of statuses seen


def template_of(method, path):
    """The document's template for a concrete path, or None."""
    path = path.split("?")[0]
    for (m, tpl) in OPS:
        if m != method:
            continue
        rx = "^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(tpl)) + "$"
        if re.match(rx, path):
            return tpl
    return None


def check_answer(method, path, r, name):
    """The status is declared for the operation, never 500, and a JSON body
    validates against the declared schema. Records coverage."""
    tpl = template_of(method, path)
    if tpl is None:
        return tap.ok(False, "%s: %s %s is in the document" % (name, method, path))
    CALLED.setdefault((method, tpl), set()).add(r.status)
    op = OPS[(method, tpl)]
    declared = op["responses"].get(str(r.status)) or op["responses"].get("default")
    problems = []
    if r.status == 500:
        problems.append("500 internal error: %r" % r.body[:300])
    if declared is None:
        problems.append("status %d is not declared for %s %s (declared: %s); body %r"
                        % (r.status, method, tpl, ", ".join(op["responses"]),
                           r.body[:300]))
    else:
        declared = resolve(declared)
        content = declared.get("content", {})
        if content and r.ctype not in content:
            problems.append("Content-Type %r, document says %s" %
                            (r.ctype, ", ".join(content)))
        elif r.ctype == "application/json":
            if r.json_error:
                problems.append("body is not JSON (%s): %r" % (r.json_error, r.body[:200]))
            else:
                problems += validate(content["application/json"]["schema"], r.json)
        for h, spec in declared.get("headers", {}).items():
            if spec.get("required") and h.lower() not in r.headers:
                problems.append("missing header %s" % h)
            elif h.lower() in r.headers:
                val = r.headers[h.lower()]
                hs = resolve(spec.get("schema", {}))
                if hs.get("type") == "integer":
                    val = int(val) if re.fullmatch(r"-?\d+", val) else val
                problems += validate(hs, val, "header " + h)
    return tap.ok(not problems, "%s: %d answer matches the document" % (name, r.status),
                  *problems[:8])


def request_schema(method, tpl, ctype="application/json"):
    op = OPS[(method, tpl)]
    return op["requestBody"]["content"][ctype]["schema"]


D = None  # the daemon


def call(method, path, body=None, want=None, name=None, field=None, code=None,
         **kw):
    """Send, check the expected status (int or tuple), the error field/code
    when given, and the answer against the document. Returns the Response."""
    name = name or "%s %s" % (method, path)
    r = D.request(method, path, body, **kw)
    if want is not None:
        wants = want if isinstance(want, tuple) else (want,)
        tap.ok(r.status in wants, "%s -> %s" % (name, "/".join(map(str, wants))),
               "got %r" % r)
    if code is not None:
        tap.is_(r.error_code(), code, "%s: error.code is %s" % (name, code))
    if field is not None:
        tap.is_(r.error_field(), field, "%s: error.field is %s" % (name, field))
    check_answer(method, path, r, name)
    return r


def raw_request(head, body, read_timeout=30):
    """Send raw bytes on a fresh connection and return (status, bytes) of
    the final answer. The server may answer (413) and close before the body
    is all sent; so the body goes in chunks, with a look for an early answer
    before each, and sending stops once one came (a close with unread data
    resets the connection, and a reset can drop an answer not yet read)."""
    import select
    s = socket.create_connection(("127.0.0.1", D.port), timeout=read_timeout)
    data = b""

    def final_answer_started():
        rest = data
        while rest.startswith(b"HTTP/1.1 100"):
            if b"\r\n\r\n" not in rest:
                return False
            rest = rest.partition(b"\r\n\r\n")[2]
        return rest.startswith(b"HTTP/")

    try:
        s.sendall(head)
        if b"expect: 100-continue" in head.lower():
            # The server may refuse at once or say 100 Continue; one that
            # says nothing gets the body after a while (RFC 9110 10.1.1).
            if select.select([s], [], [], 3)[0]:
                data += s.recv(65536)
        pos = 0
        while pos < len(body) and not final_answer_started():
            if select.select([s], [], [], 0)[0]:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                continue
            try:
                pos += s.send(body[pos:pos + 65536])
            except (BrokenPipeError, ConnectionResetError):
                break
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            data += chunk
            if final_answer_started():
                rest = data
                while rest.startswith(b"HTTP/1.1 100"):
                    rest = rest.partition(b"\r\n\r\n")[2]
                hdr, sep, rest = rest.partition(b"\r\n\r\n")
                m = re.search(rb"(?i)content-length:\s*(\d+)", hdr)
                if sep and m and len(rest) >= int(m.group(1)):
                    break
    finally:
        s.close()
    while data.startswith(b"HTTP/1.1 100") and b"\r\n\r\n" in data:
        data = data.partition(b"\r\n\r\n")[2]
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return (int(m.group(1)) if m else 0), data


def raw_response(status, data):
    """A Response object from raw bytes, for check_answer."""
    from sltest import response_of
    r = response_of(data)
    r.status = status
    return r


# --- 1. the document itself ----------------------------------------------------

def check_document():
    tap.is_(DOC.get("openapi"), "3.0.3", "document is OpenAPI 3.0.3")
    bad_refs = []

    def walk(node, where):
        if isinstance(node, dict):
            if "$ref" in node:
                try:
                    resolve(node)
                except (KeyError, TypeError) as e:
                    bad_refs.append("%s: %s" % (where, e))
            for k, v in node.items():
                walk(v, where + "/" + str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, "%s/%d" % (where, i))
    walk(DOC, "#")
    tap.ok(not bad_refs, "every $ref in the document resolves", *bad_refs)

    problems = []
    for (m, tpl), op in OPS.items():
        # a success: a 2xx, or a 101 where the connection switches protocols
        if not any(s.startswith("2") or s == "101" for s in op.get("responses", {})):
            problems.append("%s %s declares no 2xx answer" % (m, tpl))
        if "operationId" not in op:
            problems.append("%s %s has no operationId" % (m, tpl))
        names = set(re.findall(r"{([^}]+)}", tpl))
        params = [resolve(p) for p in DOC["paths"][tpl].get("parameters", [])]
        params += [resolve(p) for p in op.get("parameters", [])]
        declared = {p["name"] for p in params if p["in"] == "path"}
        if names != declared:
            problems.append("%s %s: path parameters %s, declared %s" %
                            (m, tpl, sorted(names), sorted(declared)))
        secured = op.get("security", DOC.get("security")) != []
        if secured != (tpl.startswith("/v1/") and tpl not in PUBLIC_V1):
            problems.append("%s %s: security %s" % (m, tpl, op.get("security")))
        if secured and "401" not in op["responses"]:
            problems.append("%s %s: needs a token but declares no 401" % (m, tpl))
    tap.ok(not problems, "every operation declares a 2xx, its path parameters "
           "and its security", *problems)
    tap.ok("bearer" in DOC["components"]["securitySchemes"] and
           DOC["components"]["securitySchemes"]["bearer"].get("scheme") == "bearer",
           "bearer security scheme declared")

    # The contract table and the document list the same routes.
    table = set()
    with open(CONTRACT_PATH) as f:
        for line in f:
            m = re.match(r"^\|\s*(GET|POST|PUT|DELETE|PATCH)\s*\|\s*(/[^\s|?]*)", line)
            if m:
                table.add((m.group(1), m.group(2)))
    tap.ok(len(table) >= 10, "contract table read (%d routes)" % len(table))
    missing = sorted(table - set(OPS))
    extra = sorted(set(OPS) - table)
    tap.ok(not missing, "every route of docs/api-contract.md is in the document",
           *["missing: %s %s" % r for r in missing])
    tap.ok(not extra, "every route of the document is in docs/api-contract.md",
           *["not in the contract: %s %s" % r for r in extra])
    return table


# --- 2. the server -------------------------------------------------------------

# The hog holds 3 of the 4 GPUs for the whole run (main): a job of 2 GPUs
# stays Pending, and a job of 1 GPU runs.
WAITS = {"gpus": 2}


def pending_doc(name):
    return job_doc(name, ["sleep", "1000"], resources=dict(WAITS))


def start_hog():
    r = D.request("POST", "/v1/jobs", job_doc("oa-hog", ["sleep", "1000"], resources={"gpus": 3}))
    jid = (r.json or {}).get("id")
    deadline = time.monotonic() + 30
    while isinstance(jid, int) and time.monotonic() < deadline:
        if (D.request("GET", "/v1/jobs/%d" % jid).json or {}).get("state") == "Running":
            break
        time.sleep(0.1)
    tap.ok(isinstance(jid, int), "a job holds 3 of the 4 GPUs")
    return jid


def valid_job_request(body, name):
    errs = validate(request_schema("POST", "/v1/jobs"), body)
    tap.ok(not errs, "%s: the document accepts this body" % name, *errs[:5])


def invalid_job_request(body, name):
    errs = validate(request_schema("POST", "/v1/jobs"), body)
    tap.ok(errs, "%s: the document refuses this body too" % name)


def test_health_and_auth():
    call("GET", "/healthz", want=200, token=None, name="healthz without a token")
    r = call("GET", "/v1/status", want=200, token=None, name="status without a token")
    tap.ok(isinstance(r.json, dict) and r.json.get("role") == "leader",
           "status: this daemon leads", r)
    r = call("GET", "/metrics", want=200, token=None, name="metrics without a token")
    tap.ok(r.body.startswith(b"# HELP sluice_"), "metrics: the body is an exposition")
    r = call("GET", "/v1/whoami", want=200, name="whoami")
    if isinstance(r.json, dict):
        tap.is_(r.json.get("role"), "admin", "the dev token is an admin's")
    call("GET", "/v1/whoami", token=None, want=401, code="unauthorized",
         name="whoami without a token")
    call("GET", "/v1/whoami", token="not-a-token-" + "x" * 32, want=401,
         code="unauthorized", name="whoami with an unknown token")
    call("GET", "/v1/jobs", token=None, want=401, name="list jobs without a token")
    call("POST", "/v1/jobs", pending_doc("no-token"), token=None, want=401,
         name="submit without a token")
    call("GET", "/v1/whoami", token=None, headers={"Authorization": "Basic YWRtaW46eA=="},
         want=401, name="whoami with Basic auth")
    for (method, tpl), op in sorted(OPS.items()):
        if op.get("security", DOC.get("security")) == []:
            continue
        path = tpl.replace("{id}", "1").replace("{kind}", "queues").replace(
            "{name}", "admin").replace("{ref}", "model:m@1" if "lineage" in tpl else "m@1")
        call(method, path, token=None, want=401, code="unauthorized",
             name="%s %s without a token" % (method, tpl))


def test_reads():
    r = call("GET", "/v1/teams", want=200)
    teams = {t.get("name"): t for t in (r.json or {}).get("teams", [])}
    tap.ok("default" in teams, "team default exists")
    r = call("GET", "/v1/queues", want=200)
    tap.ok(any(q.get("name") == "default" for q in (r.json or {}).get("queues", [])),
           "queue default exists")
    call("GET", "/v1/priorityclasses", want=200)
    r = call("GET", "/v1/nodes", want=200)
    gpus = [g for n in (r.json or {}).get("nodes", []) for g in n.get("gpus", [])]
    tap.is_(len(gpus), 4, "4 fake GPUs are visible")
    tap.ok(all(g.get("model") == "H100" for g in gpus), "they are H100s")


def job_count():
    try:
        return len(D.list_jobs())
    except RuntimeError as e:
        tap.diag(str(e))
        return -1


def test_submit_and_read():
    body = pending_doc("oa-pending-1")
    valid_job_request(body, "pending job")
    r = call("POST", "/v1/jobs", body, want=201, name="submit a JSON job")
    job = r.json if r.status == 201 and isinstance(r.json, dict) else {}
    jid = job.get("id")
    tap.ok(isinstance(jid, int), "the answer carries an integer id")
    tap.is_(job.get("name"), "oa-pending-1", "and the name")
    tap.is_(job.get("state"), "Pending", "and state Pending")
    if not isinstance(jid, int):
        return None

    yaml_body = ("apiVersion: sluice/v1\nkind: Job\nmetadata:\n  name: oa-yaml\n"
                 "  team: default\nspec:\n  command: [sleep, '1000']\n"
                 "  resources: {gpus: 2}\n")
    r = call("POST", "/v1/jobs", yaml_body, ctype="application/yaml", want=201,
             name="submit a YAML job")
    tap.is_((r.json or {}).get("name"), "oa-yaml", "YAML job has its name")

    r = call("GET", "/v1/jobs/%d" % jid, want=200, name="get the job")
    tap.is_((r.json or {}).get("id"), jid, "get returns that job")
    reason = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r = D.request("GET", "/v1/jobs/%d" % jid)
        reason = (r.json or {}).get("reason")
        if reason:
            break
        time.sleep(0.2)
    tap.ok(isinstance(reason, str) and reason, "a pending job says why (%r)" % reason)

    call("GET", "/v1/jobs/%d/events" % jid, want=200, name="events of the job")
    r = call("GET", "/v1/jobs/%d/explain" % jid, want=200, name="explain a pending job")
    kinds = [b.get("kind") for b in (r.json or {}).get("blockers", [])]
    tap.ok(kinds and kinds[0] == "nodes", "its first blocker is the nodes", "kinds: %r" % kinds)
    r = call("GET", "/v1/jobs/%d/logs" % jid, want=200, name="logs of a pending job")
    tap.is_(r.headers.get("x-sluice-job-state"), "Pending",
            "logs say the job is Pending")

    # Listing, filters, pagination.
    r = call("GET", "/v1/jobs", want=200, name="list all jobs")
    ids = [j.get("id") for j in (r.json or {}).get("jobs", [])]
    tap.ok(jid in ids, "the job is listed")
    tap.ok(ids == sorted(ids), "jobs are listed by id ascending")
    r = call("GET", "/v1/jobs?state=pending", want=200, name="list state=pending")
    tap.ok(jid in [j.get("id") for j in (r.json or {}).get("jobs", [])],
           "state filter is case-insensitive")
    r = call("GET", "/v1/jobs?state=Running,Succeeded", want=200,
             name="list state=Running,Succeeded")
    tap.ok(jid not in [j.get("id") for j in (r.json or {}).get("jobs", [])],
           "a pending job is not listed as Running or Succeeded")
    r = call("GET", "/v1/jobs?state=all&team=default&limit=1", want=200,
             name="list limit=1")
    page = r.json or {}
    tap.is_(len(page.get("jobs", [])), 1, "limit=1 gives one job")
    nxt = page.get("next")
    tap.ok(isinstance(nxt, int), "and a next id")
    if isinstance(nxt, int):
        r = call("GET", "/v1/jobs?limit=1&after=%d" % nxt, want=200,
                 name="list after=next")
        later = [j.get("id") for j in (r.json or {}).get("jobs", [])]
        tap.ok(all(i > nxt for i in later), "after=ID returns ids > ID")
    r = call("GET", "/v1/jobs?after=%d" % (2 ** 40), want=200, name="list past the end")
    tap.is_((r.json or {}).get("next", "absent"), None, "last page has next null")
    r = call("GET", "/v1/jobs?team=no-such-team", want=200, name="list an unknown team")
    tap.is_((r.json or {}).get("jobs"), [], "an unknown team has no jobs")
    for q, why in (("state=bogus", "unknown state"), ("limit=0", "limit 0"),
                   ("limit=10001", "limit over 10000"), ("limit=abc", "limit not a number"),
                   ("after=-1", "negative after"), ("after=x", "after not a number")):
        call("GET", "/v1/jobs?" + q, want=400, code="invalid", name="list with " + why)
    r = call("GET", "/v1/jobs?sort=-submitted&count=true&limit=1&offset=0", want=200,
             name="list sorted, counted, paged by offset")
    tap.ok(isinstance((r.json or {}).get("total"), int), "count=true gives a total")
    call("GET", "/v1/jobs?queue=default&user=admin&priority_class=batch&gpu_model=H100"
         "&q=oa&array=1&sort=name", want=200, name="list with every filter")
    for q, field in (("sort=bogus", "sort"), ("offset=-1", "offset"), ("count=x", "count"),
                     ("q=" + "x" * 129, "q"), ("gpu_model=a/b", "gpu_model"),
                     ("user=Admin", "user"), ("sort=name&after=1", "after")):
        call("GET", "/v1/jobs?" + q, want=400, code="invalid", field=field,
             name="list with a bad " + field)
    etag = call("GET", "/v1/jobs?limit=1", want=200, name="list for its ETag").headers.get(
        "etag", "")
    call("GET", "/v1/jobs?limit=1", want=304, headers={"If-None-Match": etag},
         name="list with a matching If-None-Match")
    return jid


def test_invalid_submissions():
    before = job_count()
    call("POST", "/v1/jobs", b'{"spec": {"command": ["true"]', ctype="application/json",
         want=400, code="invalid", name="submit bad JSON")
    call("POST", "/v1/jobs", b"", ctype="application/json", want=400,
         name="submit an empty body")
    call("POST", "/v1/jobs", b"[1, 2]", ctype="application/json", want=400,
         name="submit a JSON array")
    call("POST", "/v1/jobs", b"spec: [unclosed", ctype="application/yaml", want=400,
         name="submit bad YAML")
    call("POST", "/v1/jobs", job_doc("oa-huge", ["true"], resources={"gpus": 64}), want=400,
         code="unsatisfiable", field="spec.resources.gpus", name="submit a job no node holds")
    call("POST", "/v1/apply", "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: oa-small}\n"
         "spec: {team: default, nominal: {gpus: 1}}\n", ctype="application/yaml", want=200,
         name="a queue of 1 GPU")
    call("POST", "/v1/jobs", job_doc("oa-over", ["true"], queue="oa-small",
                                     resources={"gpus": 2}),
         want=400, code="quota_exceeded", field="spec.resources.gpus",
         name="submit a job over its queue's quota for ever")
    cases = []
    d = pending_doc("oa-bad"); d["bogus"] = 1
    cases.append((d, "bogus", "unknown top-level field"))
    d = pending_doc("oa-bad"); d["spec"]["resources"]["bogus"] = 1
    cases.append((d, "spec.resources.bogus", "unknown nested field"))
    d = pending_doc("oa-bad"); d["metadata"]["bogus"] = "x"
    cases.append((d, "metadata.bogus", "unknown metadata field"))
    d = pending_doc("oa-bad"); d["spec"]["tasks"] = "x"
    cases.append((d, "spec.tasks", "tasks not an integer"))
    d = pending_doc("oa-bad"); d["spec"]["tasks"] = 0
    cases.append((d, "spec.tasks", "tasks 0"))
    d = pending_doc("Bad_Name")
    cases.append((d, "metadata.name", "a name with capitals and _"))
    d = pending_doc("x" * 64)
    cases.append((d, "metadata.name", "a 64-character name"))
    d = pending_doc("oa-bad"); d["spec"]["command"] = []
    cases.append((d, "spec.command", "an empty command"))
    d = pending_doc("oa-bad"); del d["spec"]["command"]
    cases.append((d, "spec.command", "no command"))
    d = pending_doc("oa-bad"); d["spec"]["resources"]["gpus"] = 65
    cases.append((d, "spec.resources.gpus", "65 GPUs per task"))
    d = pending_doc("oa-bad"); d["spec"]["resources"] = {"gpuMilli": 1001}
    cases.append((d, "spec.resources.gpuMilli", "gpuMilli 1001"))
    d = pending_doc("oa-bad"); d["spec"]["topology"] = "ring"
    cases.append((d, "spec.topology", "unknown topology"))
    d = pending_doc("oa-bad"); d["spec"]["network"] = "internet"
    cases.append((d, "spec.network", "unknown network"))
    d = pending_doc("oa-bad"); d["spec"]["retries"] = 101
    cases.append((d, "spec.retries", "101 retries"))
    d = pending_doc("oa-bad"); d["kind"] = "Team"
    cases.append((d, "kind", "a Team sent as a job"))
    for body, field, why in cases:
        invalid_job_request(body, why)
        call("POST", "/v1/jobs", body, want=400, code="invalid", field=field,
             name="submit " + why)
    d = pending_doc("oa-bad"); d["spec"]["queue"] = "no-such-queue"
    valid_job_request(d, "an unknown queue (well-formed)")
    call("POST", "/v1/jobs", d, want=400, field="spec.queue",
         name="submit to an unknown queue")
    after = job_count()
    tap.is_(after, before, "refused submissions created no job")
    call("POST", "/v1/jobs", json.dumps(pending_doc("oa-text")), ctype="text/plain",
         want=415, code="unsupported_media_type", name="submit as text/plain")


def test_media_types():
    """One check before every handler: a POST with a body needs a
    Content-Type its route reads (415 unsupported_media_type otherwise),
    and a known caller's refused change is in the audit log."""
    doc = json.dumps(pending_doc("oa-mt")).encode()
    for path, body, types in (
            ("/v1/jobs", doc, "application/json or application/yaml"),
            ("/v1/apply", b"kind: Team\nmetadata: {name: oa-mt}\n",
             "application/json or application/yaml"),
            ("/v1/users/admin/tokens", b"{}", "application/json"),
            ("/v1/carbon/lab", b"2026-12-01T10:00:00Z,5\n", "text/csv"),
            ("/v1/scans", b"{}", "application/json"),
            ("/v1/models", b"{}", "application/json"),
            ("/v1/models/oa-mt@1/stage", b'{"stage":"staging"}', "application/json")):
        r = call("POST", path, body, want=415, code="unsupported_media_type",
                 name="POST %s with a body and no Content-Type" % path)
        tap.ok(types in ((r.json or {}).get("error") or {}).get("message", ""),
               "POST %s: the message names %s" % (path, types), "got %r" % r)
    call("POST", "/v1/carbon/lab", b"2026-12-01T10:00:00Z,5\n", ctype="application/json",
         want=415, code="unsupported_media_type", name="carbon sent as JSON")
    call("POST", "/v1/models", b"{}", ctype="application/yaml", want=415,
         code="unsupported_media_type", name="a model sent as YAML")
    call("POST", "/v1/jobs", doc, ctype="application/x-www-form-urlencoded", want=415,
         code="unsupported_media_type", name="submit as a form (curl -d)")
    call("POST", "/v1/jobs", doc, ctype="application/jsonp", want=415,
         code="unsupported_media_type", name="submit as application/jsonp")
    call("POST", "/v1/jobs", doc, ctype="Application/JSON ; charset=utf-8", want=201,
         name="submit as Application/JSON with a parameter")
    call("POST", "/v1/users/admin/tokens", b"", want=201,
         name="an empty token request needs no Content-Type")
    r = call("GET", "/v1/audit?action=job.submit&outcome=refused&limit=10000", want=200,
             name="refused submissions in the audit log")
    tap.ok(any("Content-Type" in json.dumps(x.get("details"))
               for x in (r.json or {}).get("records", [])),
           "a 415 of a change is recorded in the audit log",
           "records: %r" % (r.json or {}).get("records", [])[-3:])


def test_sizes():
    # Exactly 1 MiB is allowed: a valid document padded with blanks.
    doc = json.dumps(pending_doc("oa-one-mib")).encode()
    body = doc + b" " * (MiB - len(doc))
    r = call("POST", "/v1/jobs", body, ctype="application/json", want=201,
             name="submit a body of exactly 1 MiB")
    # One byte more is not.
    big_post("/v1/jobs", doc + b" " * (MiB + 1 - len(doc)), "submit 1 MiB + 1")
    head = ("POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n"
            "Expect: 100-continue\r\n\r\n" % (D.token, 8 * MiB)).encode()
    status, data = raw_request(head, b"x" * (8 * MiB))
    tap.is_(status, 413, "submit announcing 8 MiB with Expect: 100-continue -> 413")
    body = json.dumps([{"apiVersion": "sluice/v1", "kind": "Team",
                        "metadata": {"name": "t%d" % i}} for i in range(20000)]).encode()
    big_post("/v1/apply", body, "apply %d bytes" % len(body))
    big_post("/v1/users/alice/tokens",
             json.dumps({"expires_in": "1h" + " " * MiB}).encode(),
             "token request over 1 MiB")
    return r


def big_post(path, body, name):
    """POST an oversize body on a raw connection (the server may answer and
    close before reading it all) and expect 413 too_large."""
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (path, D.token, len(body))).encode()
    status, data = raw_request(head, body)
    tap.is_(status, 413, "%s -> 413" % name)
    if status:
        r = raw_response(status, data)
        tap.is_(r.error_code(), "too_large", "%s: error.code is too_large" % name)
        check_answer("POST", path, r, name)


def test_hold(jid):
    r = call("POST", "/v1/jobs/%d/hold" % jid, want=200, name="hold a pending job")
    tap.is_((r.json or {}).get("held"), True, "the held job says held")
    tap.is_((r.json or {}).get("hold"), {"kind": "user", "by": "admin"},
            "the admin's hold of its own job is a user hold")
    call("POST", "/v1/jobs/%d/hold" % jid, want=200, name="hold it again")
    r = call("POST", "/v1/jobs/%d/release" % jid, want=200, name="release it")
    tap.is_((r.json or {}).get("held"), False, "the released job is not held")
    call("POST", "/v1/jobs/%d/release" % jid, want=409, code="conflict", field="state",
         name="release a job not held")
    call("POST", "/v1/jobs/999999/hold", want=404, name="hold an unknown job")
    r = call("PATCH", "/v1/jobs/%d" % jid, {"maxRuntime": "1h"}, want=200,
             name="update a pending job's maxRuntime")
    tap.is_(((r.json or {}).get("spec") or {}).get("spec", {}).get("maxRuntime"), "1h",
            "the answer has the new maxRuntime")
    # stays Pending: the hog leaves 1 GPU, the job asks for 2, then 4
    for body in ({"priorityClass": "best-effort", "queue": "default"},
                 {"resources": {"gpus": 4}, "priorityClass": "batch"}):
        tap.ok(not validate(request_schema("PATCH", "/v1/jobs/{id}"), body),
               "the request document admits %s" % json.dumps(body))
        r = call("PATCH", "/v1/jobs/%d" % jid, body, want=200,
                 name="update a pending job's %s" % ", ".join(sorted(body)))
    tap.ok((r.json or {}).get("priority_class") == "batch" and
           ((r.json or {}).get("spec") or {}).get("spec", {}).get("resources", {}).get("gpus")
           == 4, "the answer has the new class and GPUs", r)
    call("PATCH", "/v1/jobs/%d" % jid, {"queue": "x"}, want=400, field="queue",
         name="update to a queue that does not exist")
    call("PATCH", "/v1/jobs/%d" % jid, {"resources": {"gpus": 65}}, want=400,
         field="resources.gpus", name="update to 65 GPUs a task")
    tap.ok(validate(request_schema("PATCH", "/v1/jobs/{id}"), {}),
           "the request document refuses an empty update")
    tap.ok(validate(request_schema("PATCH", "/v1/jobs/{id}"), {"resources": {"cpus": 1}}),
           "and resources other than gpus")
    call("PATCH", "/v1/jobs/999999", {"maxRuntime": "1h"}, want=404, name="update an unknown job")
    call("POST", "/v1/jobs/%d/requeue" % jid, want=409, code="conflict", field="state",
         name="requeue a pending job")
    call("POST", "/v1/jobs/%d/requeue?hold=maybe" % jid, want=400, field="hold",
         name="requeue with hold=maybe")


def running_id(r):
    """The id of the job a submission answered, once it runs (None when
    there is none; it may still be Pending after 30 s)."""
    jid = (r.json or {}).get("id")
    deadline = time.monotonic() + 30
    while isinstance(jid, int) and time.monotonic() < deadline:
        if (D.request("GET", "/v1/jobs/%d" % jid).json or {}).get("state") == "Running":
            break
        time.sleep(0.1)
    return jid if isinstance(jid, int) else None


def test_requeue():
    r = call("POST", "/v1/jobs", job_doc("oa-rq", ["sleep", "1000"], resources={"cpus": 0.1}),
             want=201, name="submit a job to requeue")
    jid = running_id(r)
    if jid is None:
        return
    r = call("POST", "/v1/jobs/%d/requeue" % jid, want=202, name="requeue a running job")
    tap.is_((r.json or {}).get("state"), "Running", "it is Running while it stops")
    call("DELETE", "/v1/jobs/%d" % jid, want=202, name="cancel the requeued job")


def attach_call(jid, name, want, **kw):
    """An attach handshake (slws.py) checked against the document."""
    ws = Attach.open(D.port, jid, kw.pop("token", D.token), **kw)
    r = Response(ws.status, ws.headers, ws.body)
    tap.ok(r.status == want, "%s -> %d" % (name, want), "got %r" % r)
    check_answer("GET", "/v1/jobs/%d/attach" % jid, r, name)
    return ws


def test_attach():
    r = call("POST", "/v1/jobs", job_doc("oa-it", ["sh"], interactive=True,
                                         resources={"cpus": 0.1}),
             want=201, name="submit an interactive job")
    jid = running_id(r)
    if jid is None:
        return
    time.sleep(0.5)  # its task's terminal comes up
    ws = attach_call(jid, "attach to it", 101)
    attach_call(jid, "attach a second client", 409)
    attach_call(jid, "attach without the subprotocol", 400, protocol=None)
    attach_call(jid, "attach with version 8", 426, version="8")
    attach_call(jid, "attach without a token", 401, token=None)
    attach_call(1 << 40, "attach to an unknown job", 404)
    call("GET", "/v1/jobs/%d/attach" % jid, want=426, name="a plain GET of attach")
    if ws.sock:
        ws.send_stdin(b"exit 0\n")
        tap.is_(ws.read_until_status()[1], {"exit_code": 0}, "the session ends with exit 0")


def test_cancel(jid):
    r = call("DELETE", "/v1/jobs/%d" % jid, want=202, name="cancel a pending job")
    tap.is_((r.json or {}).get("state"), "Cancelled", "a pending job is Cancelled at once")
    call("DELETE", "/v1/jobs/%d" % jid, want=409, code="conflict",
         name="cancel it again")
    r = call("GET", "/v1/jobs/%d" % jid, want=200, name="get the cancelled job")
    tap.ok((r.json or {}).get("finished_at"), "a cancelled job has finished_at")
    tap.is_((r.json or {}).get("reason"), None, "and no pending reason")


def test_array_cancel():
    body = job_doc("oa-arr", ["sleep", "1000"], resources=dict(WAITS), array="0-2")
    valid_job_request(body, "an array")
    r = call("POST", "/v1/jobs", body, want=201, name="submit an array of pending jobs")
    arr = (r.json or {}).get("id")
    if not isinstance(arr, int):
        return
    call("DELETE", "/v1/arrays/%d" % (arr + 1), want=404, code="not_found",
         name="cancel an element's own id as an array")
    r = call("DELETE", "/v1/arrays/%d" % arr, want=202, name="cancel the array")
    tap.is_((r.json or {}).get("cancelled"), [arr, arr + 1, arr + 2],
            "every pending element is cancelled, in one request")
    call("DELETE", "/v1/arrays/%d" % arr, want=409, code="conflict", name="cancel it again")
    call("DELETE", "/v1/arrays/999999999", want=404, name="cancel an unknown array")


def test_run_to_completion():
    body = job_doc("oa-echo", ["sh", "-c", "echo hello-sluice; echo to-stderr >&2; "
                               "sleep 1"],
                   resources={"gpus": 1}, maxRuntime="60s")
    valid_job_request(body, "a job that runs")
    r = call("POST", "/v1/jobs", body, want=201, name="submit a job that runs")
    jid = (r.json or {}).get("id")
    if not isinstance(jid, int):
        return
    state, job, running = None, {}, None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = D.request("GET", "/v1/jobs/%d" % jid)
        job = r.json or {}
        state = job.get("state")
        if state == "Running" and running is None:
            running = job
            check_answer("GET", "/v1/jobs/%d" % jid, r, "get the running job")
        if state in ("Succeeded", "Failed", "Cancelled", "Lost", "Timeout", "Preempted"):
            break
        time.sleep(0.1)
    tap.ok(running is not None, "the job was seen Running")
    pl = (running or {}).get("placement") or []
    tap.ok(len(pl) == 1 and len(pl[0].get("gpus", [])) == 1 and
           pl[0].get("gpu_milli") == 1000,
           "a running job's placement names one whole GPU", "placement %r" % (pl,))
    tap.is_(state, "Succeeded", "the job succeeds")
    r = call("GET", "/v1/jobs/%d" % jid, want=200, name="get the finished job")
    job = r.json or {}
    tap.is_(job.get("exit_code"), 0, "exit_code 0")
    tap.ok(job.get("started_at") and job.get("finished_at"),
           "started_at and finished_at are set")
    if not job.get("placement"):
        tap.diag("note: a finished job shows placement %r" % (job.get("placement"),))
    r = call("GET", "/v1/jobs/%d/logs" % jid, want=200, name="logs of the finished job")
    tap.ok(b"hello-sluice" in r.body, "the log holds the job's stdout", repr(r.body[:200]))
    tap.ok(b"to-stderr" in r.body, "and its stderr")
    tap.is_(r.headers.get("x-sluice-job-state"), "Succeeded", "log header says Succeeded")
    off = r.headers.get("x-sluice-log-offset")
    tap.is_(off, str(len(r.body)), "X-Sluice-Log-Offset is the bytes read")
    if off and off.isdigit():
        r = call("GET", "/v1/jobs/%d/logs?offset=%s" % (jid, off), want=200,
                 name="logs from the end")
        tap.is_(r.body, b"", "nothing after the end")
        r = call("GET", "/v1/jobs/%d/logs?offset=0&limit=5" % jid, want=200,
                 name="logs limit=5")
        tap.is_(r.body, b"hello", "limit=5 gives 5 bytes")
        tap.is_(r.headers.get("x-sluice-log-offset"), "5", "offset after them is 5")
    r = call("GET", "/v1/jobs/%d/attempts" % jid, want=200, name="attempts of the finished job")
    at = (r.json or {}).get("attempts") or []
    tap.ok(len(at) == 1 and at[0].get("attempt") == 0 and at[0].get("after") is None and
           at[0].get("log_offsets") == [0], "one attempt, from byte 0 of its log", "%r" % at)
    r = call("GET", "/v1/jobs/%d/logs?attempt=0" % jid, want=200, name="logs attempt=0")
    tap.ok(b"hello-sluice" in r.body, "attempt 0's output is the log")
    tap.is_(r.headers.get("x-sluice-log-attempts"), "1", "X-Sluice-Log-Attempts is 1")
    call("GET", "/v1/jobs/%d/logs?attempt=1" % jid, want=400, field="attempt",
         name="logs of an attempt that never started")
    call("GET", "/v1/jobs/%d/logs?attempt=x" % jid, want=400, field="attempt",
         name="logs attempt=x")
    call("GET", "/v1/jobs/%d/logs?task=abc" % jid, want=400, name="logs task=abc")
    call("GET", "/v1/jobs/%d/logs?offset=-1" % jid, want=400, name="logs offset=-1")
    r = call("GET", "/v1/jobs/%d/explain" % jid, want=200, name="explain a finished job")
    tap.ok((r.json or {}).get("state") == "Succeeded" and not (r.json or {}).get("blockers"),
           "a finished job has nothing blocking it", "%r" % r.json)
    r = call("GET", "/v1/jobs/%d/events" % jid, want=200, name="events of the finished job")
    tos = [e.get("to") for e in (r.json or {}).get("events", [])]
    tap.ok("Running" in tos and "Succeeded" in tos,
           "events record Running and Succeeded", "to: %r" % tos)
    call("DELETE", "/v1/jobs/%d" % jid, want=409, code="conflict",
         name="cancel a finished job")


def test_unknown_ids():
    big = 999999999
    call("GET", "/v1/jobs/%d" % big, want=404, code="not_found", name="get an unknown job")
    call("GET", "/v1/jobs/%d/events" % big, want=404, name="events of an unknown job")
    call("GET", "/v1/jobs/%d/logs" % big, want=404, name="logs of an unknown job")
    call("GET", "/v1/jobs/%d/attempts" % big, want=404, name="attempts of an unknown job")
    call("GET", "/v1/jobs/%d/explain" % big, want=404, name="explain an unknown job")
    call("DELETE", "/v1/jobs/%d" % big, want=404, name="cancel an unknown job")
    call("GET", "/v1/jobs/abc", want=(400, 404), name="get job abc")
    call("GET", "/v1/jobs/0", want=(400, 404), name="get job 0")
    call("GET", "/v1/jobs/99999999999999999999999", want=(400, 404),
         name="get a job id over 64 bits")


def manifests():
    return [
        {"apiVersion": "sluice/v1", "kind": "Team", "metadata": {"name": "oa-team"},
         "spec": {"defaultQueue": "oa-queue"}},
        {"apiVersion": "sluice/v1", "kind": "Queue", "metadata": {"name": "oa-queue"},
         "spec": {"team": "oa-team"}},
        {"apiVersion": "sluice/v1", "kind": "PriorityClass",
         "metadata": {"name": "oa-urgent"},
         "spec": {"value": 1000, "preemptible": False}},
        {"apiVersion": "sluice/v1", "kind": "User", "metadata": {"name": "alice"},
         "spec": {"team": "oa-team", "role": "member"}},
    ]


def test_apply():
    body = manifests()
    schema = request_schema("POST", "/v1/apply")
    errs = validate(schema, body)
    tap.ok(not errs, "the document accepts the manifests", *errs[:5])
    r = call("POST", "/v1/apply", body, want=200, name="apply 4 manifests")
    acts = [(a.get("kind"), a.get("name"), a.get("action"))
            for a in (r.json or {}).get("applied", [])]
    tap.is_(acts, [("Team", "oa-team", "created"), ("Queue", "oa-queue", "created"),
                   ("PriorityClass", "oa-urgent", "created"),
                   ("User", "alice", "created")], "each was created")
    r = call("POST", "/v1/apply", body, want=200, name="apply them again")
    tap.ok(all(a.get("action") == "unchanged" for a in (r.json or {}).get("applied", [])),
           "a second apply changes nothing")
    y = ("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: oa-team2}\n---\n"
         "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: oa-queue2}\n"
         "spec: {team: oa-team2}\n")
    r = call("POST", "/v1/apply", y, ctype="application/yaml", want=200,
             name="apply YAML documents")
    tap.is_(len((r.json or {}).get("applied", [])), 2, "two documents applied")
    r = call("POST", "/v1/apply", body[0], want=200, name="apply one JSON object")
    r = call("GET", "/v1/teams", want=200, name="list teams after apply")
    tap.ok(any(t.get("name") == "oa-team" and t.get("default_queue") == "oa-queue"
               for t in (r.json or {}).get("teams", [])), "oa-team is listed")
    r = call("GET", "/v1/queues", want=200, name="list queues after apply")
    tap.ok(any(q.get("name") == "oa-queue" and q.get("team") == "oa-team"
               for q in (r.json or {}).get("queues", [])), "oa-queue is listed")
    r = call("GET", "/v1/priorityclasses", want=200, name="list classes after apply")
    tap.ok(any(p.get("name") == "oa-urgent" and p.get("value") == 1000
               for p in (r.json or {}).get("priority_classes", [])), "oa-urgent is listed")

    # Refusals; each must change nothing.
    bad = manifests(); bad[1]["spec"]["bogus"] = 1
    tap.ok(validate(schema, bad), "the document refuses an unknown manifest field")
    call("POST", "/v1/apply", bad, want=400, code="invalid", field="[1].spec.bogus",
         name="apply with an unknown field")
    bad = [{"apiVersion": "sluice/v1", "kind": "Widget", "metadata": {"name": "w"}}]
    tap.ok(validate(schema, bad), "the document refuses an unknown kind")
    call("POST", "/v1/apply", bad, want=400, code="invalid", name="apply an unknown kind")
    bad = [{"apiVersion": "sluice/v1", "kind": "Team", "metadata": {"name": "oa-new"}},
           {"apiVersion": "sluice/v1", "kind": "Queue", "metadata": {"name": "oa-q3"},
            "spec": {"team": "no-such-team"}}]
    call("POST", "/v1/apply", bad, want=400, name="apply a queue of an unknown team")
    r = D.request("GET", "/v1/teams")
    tap.ok(not any(t.get("name") == "oa-new" for t in (r.json or {}).get("teams", [])),
           "a refused apply applied nothing (all or nothing)")
    call("POST", "/v1/apply", pending_doc("oa-job"), want=400,
         name="apply a job document")
    call("POST", "/v1/apply", b"{not json", ctype="application/json", want=400,
         name="apply bad JSON")
    call("POST", "/v1/apply", b"kind: Team", ctype="text/plain", want=415,
         name="apply as text/plain")


def test_tokens():
    schema = request_schema("POST", "/v1/users/{name}/tokens")
    tap.ok(not validate(schema, {"expires_in": "1h"}), "the document accepts expires_in")
    r = call("POST", "/v1/users/alice/tokens", {"expires_in": "1h"}, want=201,
             name="issue a token for alice")
    tok = (r.json or {}).get("token")
    tap.is_((r.json or {}).get("user"), "alice", "the token is alice's")
    tap.ok((r.json or {}).get("expires_at"), "it expires")
    r = call("POST", "/v1/users/alice/tokens", want=201, name="issue a token, no body")
    tap.is_((r.json or {}).get("expires_at", "absent"), None,
            "without expires_in it never expires")
    call("POST", "/v1/users/nobody/tokens", {"expires_in": "1h"}, want=404,
         code="not_found", name="issue a token for an unknown user")
    call("POST", "/v1/users/alice/tokens", {"expires_in": "soon"}, want=400,
         field="expires_in", name="issue a token with a bad duration")
    tap.ok(validate(schema, {"bogus": 1}), "the document refuses an unknown field")
    call("POST", "/v1/users/alice/tokens", {"bogus": 1}, want=400, field="bogus",
         name="issue a token with an unknown field")
    call("POST", "/v1/users/alice/tokens", b"{", ctype="application/json", want=400,
         name="issue a token with bad JSON")
    call("POST", "/v1/users/Bad_Name/tokens", want=(400, 404),
         name="issue a token for an invalid name")
    if not tok:
        return
    r = call("GET", "/v1/whoami", token=tok, want=200, name="whoami as alice")
    tap.is_((r.json or {}).get("user"), "alice", "alice is alice")
    tap.is_((r.json or {}).get("role"), "member", "and a member")
    call("POST", "/v1/users/admin/tokens", token=tok, want=403, code="forbidden",
         name="a member cannot issue tokens for another user")
    call("POST", "/v1/users/alice/tokens", token=tok, want=201,
         name="but may for itself")
    call("POST", "/v1/apply", manifests(), token=tok, want=403,
         name="a member cannot apply")
    r = call("POST", "/v1/jobs", job_doc("oa-alice", ["sleep", "1000"], team="oa-team",
                                         resources=dict(WAITS)),
             token=tok, want=201, name="alice submits to her team")
    tap.is_((r.json or {}).get("user"), "alice", "the job is alice's")
    tap.is_((r.json or {}).get("queue"), "oa-queue", "in her team's default queue")
    call("POST", "/v1/jobs", pending_doc("oa-alice-other"), token=tok, want=403,
         name="alice cannot submit for team default")


def test_unlisted():
    for method, path in (("PUT", "/v1/jobs"), ("DELETE", "/v1/nodes"),
                         ("POST", "/v1/teams"), ("PATCH", "/v1/jobs"),
                         ("GET", "/v1/apply"), ("POST", "/healthz"), ("POST", "/metrics"),
                         ("GET", "/v1/users/alice/tokens")):
        r = D.request(method, path)
        tap.is_(r.status, 405, "%s %s -> 405" % (method, path))
        tap.is_(r.error_code(), "method_not_allowed", "%s %s: error.code" % (method, path))
        tap.ok(not validate({"$ref": "#/components/schemas/Error"}, r.json),
               "%s %s: the body is an Error" % (method, path))
    for path in ("/v1/nope", "/v2/jobs", "/v1/jobs/1/nope", "/", "/v1",
                 "/v1/jobs/1/events/x", "/v1/users/admin"):
        r = D.request("GET", path)
        tap.is_(r.status, 404, "GET %s -> 404" % path)
        tap.ok(not validate({"$ref": "#/components/schemas/Error"}, r.json),
               "GET %s: the body is an Error" % path)


def test_keepalive():
    c = D.connection()
    try:
        socks = set()
        statuses = []
        for _ in range(20):
            c.request("GET", "/v1/whoami", headers={"Authorization": "Bearer " + D.token})
            r = c.getresponse()
            r.read()
            statuses.append(r.status)
            socks.add(id(c.sock))
            if r.getheader("Connection", "").lower() == "close":
                break
        tap.ok(statuses == [200] * 20 and len(socks) == 1,
               "20 requests on one kept-alive connection", "statuses %r" % statuses)
        c.request("POST", "/v1/jobs", body=json.dumps(pending_doc("oa-ka")),
                  headers={"Authorization": "Bearer " + D.token,
                           "Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        tap.ok(r.status == 201 and r.getheader("Connection", "").lower() != "close",
               "a POST answer keeps the connection open",
               "status %d, Connection: %s" % (r.status, r.getheader("Connection")))
    finally:
        c.close()


def test_meter():
    body = [{"apiVersion": "sluice/v1", "kind": "Pricing", "metadata": {"name": "default"},
             "spec": {"currency": "EUR", "overhead": 2,
                      "electricity": {"pricePerKWh": 0.2, "pue": 1.3},
                      "gpuModels": {"H100": {"cu": 4, "price": 30000}},
                      "carbon": {"intensity": 300,
                                 "sites": {"lab": {"intensity": 200, "nodes": ["*"]}}}}},
            {"apiVersion": "sluice/v1", "kind": "Budget", "metadata": {"name": "oa-budget"},
             "spec": {"team": "default", "period": "week", "cu": 1000, "action": "demote"}}]
    errs = validate(request_schema("POST", "/v1/apply"), body)
    tap.ok(not errs, "the document accepts a Pricing and a Budget", *errs[:5])
    call("POST", "/v1/apply", body, want=200, name="apply a Pricing and a Budget")
    bad = {"apiVersion": "sluice/v1", "kind": "Budget", "metadata": {"name": "oa-b2"},
           "spec": {"team": "default", "cu": 1, "cost": 2}}
    call("POST", "/v1/apply", bad, want=400, code="invalid", field="spec",
         name="apply a budget with two limits")
    bad = {"apiVersion": "sluice/v1", "kind": "Pricing", "metadata": {"name": "default"},
           "spec": {"electricity": {"pue": 0.5}}}
    tap.ok(validate(request_schema("POST", "/v1/apply"), bad),
           "the document refuses a PUE below 1 too")
    call("POST", "/v1/apply", bad, want=400, field="spec.electricity.pue",
         name="apply a PUE below 1")
    r = call("GET", "/v1/report", want=200, name="report by team")
    tap.is_((r.json or {}).get("currency"), "EUR", "in the Pricing's currency")
    call("GET", "/v1/report?by=job&period=day&from=2026-01-01&share_idle=true", want=200,
         name="report by job and day, chargeback")
    call("GET", "/v1/report?by=gpu-model&from=2026-01-01T00:00:00Z&to=%d"
         % (int(time.time() * 1000)), want=200, name="report by model to epoch ms")
    call("GET", "/v1/report?by=colour", want=400, field="by", name="report by colour")
    r = call("GET", "/v1/report?by=gpu-model&from=2026-01-01&format=csv", want=200,
             name="report by model as CSV")
    tap.ok(r.ctype == "text/csv" and r.body.startswith(b"key,period,jobs,"),
           "format=csv answers text/csv with its header line", r)
    call("GET", "/v1/report?format=xml", want=400, field="format", name="report as xml")
    call("GET", "/v1/report?from=soon", want=400, field="from", name="report from soon")
    call("GET", "/v1/report/utilisation", want=200, name="utilisation")
    call("GET", "/v1/report/utilisation?format=csv", want=200, name="utilisation as CSV")
    call("GET", "/v1/report/utilisation?format=CSV", want=400, field="format",
         name="utilisation as CSV in capitals")
    call("GET", "/v1/report/utilisation?to=2000-01-01", want=400, field="to",
         name="utilisation ending before it starts")
    r = call("GET", "/v1/history?range=hour", want=200, name="history of the last hour")
    tap.is_(len(((r.json or {}).get("series") or {}).get("t", [])), 60, "in 60 buckets")
    call("GET", "/v1/history?from=2026-01-01&to=2026-01-02&step=1h&team=default", want=200,
         name="history of a day by the hour, of a team")
    call("GET", "/v1/history?range=year", want=400, field="range", name="history of a year")
    call("GET", "/v1/history?step=1ms", want=400, field="step", name="history by the ms")
    r = call("GET", "/v1/budgets", want=200, name="budgets")
    tap.ok(any(b.get("name") == "oa-budget" for b in (r.json or {}).get("budgets", [])),
           "the budget is listed")
    call("POST", "/v1/carbon/lab", "hour,g\n2026-12-01T10:00:00Z,120\n", ctype="text/csv",
         want=200, name="hourly carbon")
    call("POST", "/v1/carbon/lab", "2026-12-01T10:00:00Z,-5\n", ctype="text/csv",
         want=400, field="line 1", name="a negative intensity")
    call("POST", "/v1/carbon/Lab_1", "2026-12-01T10:00:00Z,5\n", ctype="text/csv",
         want=404, name="a site name that is not a name")


def test_nodes():
    """drain, cordon and uncordon of the one node, with good and bad bodies;
    it ends in service."""
    r = call("GET", "/v1/nodes", want=200, name="nodes before a drain")
    node = ((r.json or {}).get("nodes") or [{}])[0].get("name")
    tap.ok(node, "the host's node is listed")
    if not node:
        return
    schema = request_schema("POST", "/v1/nodes/{name}/drain")
    tap.ok(not validate(schema, {"reason": "disk swap"}), "the document accepts a reason")
    tap.ok(validate(schema, {"reason": "a\tb"}), "the document refuses a control character")
    tap.ok(validate(schema, {"reason": "x" * 257}), "the document refuses 257 characters")
    tap.ok(validate(schema, {"why": "x"}), "the document refuses an unknown field")
    base = "/v1/nodes/%s/" % node
    r = call("POST", base + "drain", {"reason": "disk swap"}, want=200, name="drain the node")
    tap.is_((r.json or {}).get("state"), "draining",
            "the node is draining: the hog still runs there")
    r = call("POST", base + "drain", {"reason": "disk swap"}, want=200, name="drain it again")
    tap.is_((r.json or {}).get("changed"), False, "a repeat changes nothing")
    r = call("POST", base + "cordon", want=200, name="cordon it, no body")
    tap.is_((r.json or {}).get("previous"), "draining", "the answer says what it was")
    call("POST", base + "cordon", {"reason": "a\tb"}, want=400, field="reason",
         name="a reason with a control character")
    call("POST", base + "cordon", {"reason": "x" * 257}, want=400, field="reason",
         name="a reason too long")
    call("POST", base + "drain", {"why": "x"}, want=400, field="why", name="an unknown field")
    call("POST", base + "drain", b"{", ctype="application/json", want=400,
         name="drain with bad JSON")
    call("POST", "/v1/nodes/no-such-node/drain", want=404, code="not_found",
         name="drain an unknown node")
    call("POST", "/v1/nodes/no-such-node/cordon", want=404, name="cordon an unknown node")
    call("POST", "/v1/nodes/no-such-node/uncordon", want=404, name="uncordon an unknown node")
    r = call("GET", "/v1/nodes", want=200, name="nodes while cordoned")
    adm = ((r.json or {}).get("nodes") or [{}])[0].get("admin") or {}
    tap.is_((adm.get("state"), adm.get("by")), ("cordoned", "admin"),
            "GET /v1/nodes shows the admin's state and who set it")
    r = call("POST", base + "uncordon", want=200, name="uncordon it")
    tap.is_((r.json or {}).get("state"), "active", "the node is back in service")


def test_governance():
    """The governance routes, each answered and refused once at least."""
    call("GET", "/v1/policies", want=200, name="policies")
    call("GET", "/v1/datasets", want=200, name="datasets")
    call("POST", "/v1/apply", "apiVersion: sluice/v1\nkind: Policy\nmetadata: {name: oa-p}\n"
         "spec: {teams: [oa-team], caps: {maxGpusPerJob: 64}}\n", ctype="application/yaml",
         want=200, name="a Policy")
    call("POST", "/v1/jobs?dry_run=true", job_doc("oa-dry", ["true"], team="oa-team"),
         want=200, name="a dry run")
    call("POST", "/v1/jobs?dry_run=true",
         job_doc("oa-dry", ["true"], team="oa-team", resources={"gpus": 64}, tasks=2),
         want=403, code="policy_denied", field="spec.resources.gpus",
         name="a dry run over the policy's cap")
    r = call("GET", "/v1/tokens", want=200, name="tokens")
    ids = [t["id"] for t in (r.json or {}).get("tokens", []) if t.get("label") != "bootstrap"
           and not t.get("revoked")]
    if ids:
        call("DELETE", "/v1/tokens/%d" % ids[-1], want=200, name="revoke a token")
        call("DELETE", "/v1/tokens/%d" % ids[-1], want=409, code="conflict",
             name="revoke it again")
    call("DELETE", "/v1/tokens/999999", want=404, name="revoke an unknown token")
    digest = "sha256:" + "ab" * 32
    report = {"SchemaVersion": 2, "ArtifactName": "r.io/a@" + digest,
              "ArtifactType": "container_image",
              "Metadata": {"ImageID": digest, "RepoDigests": ["r.io/a@" + digest]},
              "Results": [{"Target": "t", "Class": "os-pkgs", "Vulnerabilities": [
                  {"VulnerabilityID": "CVE-1", "Severity": "HIGH"}]}]}
    call("POST", "/v1/scans", report, want=(200, 201), name="import a scan")
    call("POST", "/v1/scans", {"SchemaVersion": 1}, want=400, name="a scan of another schema")
    call("GET", "/v1/scans", want=200, name="scans")
    call("GET", "/v1/audit?limit=5", want=200, name="audit records")
    call("GET", "/v1/audit?limit=0", want=400, field="limit", name="audit limit 0")
    r = call("GET", "/v1/audit?order=desc&limit=3", want=200, name="audit newest first")
    seqs = [x["seq"] for x in (r.json or {}).get("records", [])]
    tap.ok(len(seqs) == 3 and seqs == sorted(seqs, reverse=True) and
           (r.json or {}).get("next") == seqs[-1], "order=desc: newest first, next = the last seq", seqs)
    r = call("GET", "/v1/audit?order=desc&limit=3&before=%d" % (seqs[-1] if seqs else 1), want=200,
             name="audit before")
    tap.ok(all(x["seq"] < seqs[-1] for x in (r.json or {}).get("records", [])) if seqs else False,
           "before=SEQ: older records only")
    call("GET", "/v1/audit?order=up", want=400, field="order", name="audit order up")
    call("GET", "/v1/audit/export?limit=3", want=200, name="audit export")
    call("GET", "/v1/audit/export?after=x", want=400, field="after", name="audit export after x")
    r = call("GET", "/v1/audit/verify", want=200, name="audit verify")
    tap.ok((r.json or {}).get("ok") is True, "the live log verifies")
    call("GET", "/v1/audit/checkpoint", want=200, name="audit checkpoint")
    call("GET", "/v1/audit/pubkey", want=200, name="audit pubkey")
    model = {"name": "oa-m", "version": "1", "digest": "sha256:" + "cd" * 32,
             "uri": "s3://m/1", "metrics": {"acc": 0.9}, "team": "oa-team"}
    call("POST", "/v1/models", model, want=201, name="register a model")
    call("POST", "/v1/models", model, want=409, code="conflict", name="the same version again")
    call("POST", "/v1/models", dict(model, digest="md5:1"), want=400, field="digest",
         name="a model with a bad digest")
    call("GET", "/v1/models", want=200, name="models")
    call("GET", "/v1/models/oa-m@1", want=200, name="a model")
    call("GET", "/v1/models/none@1", want=404, name="an unknown model")
    call("POST", "/v1/models/oa-m@1/stage", {"stage": "staging"}, want=200, name="stage it")
    call("POST", "/v1/models/oa-m@1/stage", {"stage": "gold"}, want=400, field="stage",
         name="an unknown stage")
    call("GET", "/v1/lineage/model:oa-m@1", want=200, name="its lineage")
    call("GET", "/v1/lineage/job:1", want=200, name="a job's lineage")
    call("GET", "/v1/lineage/thing:1", want=400, name="a lineage of neither")
    test_roles()


def test_roles():
    """The roles beyond admin, member and viewer, against the document."""
    users = [{"apiVersion": "sluice/v1", "kind": "User", "metadata": {"name": n},
              "spec": {"team": "oa-team", "role": role}}
             for n, role in (("oa-aud", "auditor"), ("oa-ta", "team-admin"))]
    errs = validate(request_schema("POST", "/v1/apply"), users)
    tap.ok(not errs, "the document accepts auditor and team-admin users", *errs[:5])
    call("POST", "/v1/apply", users, want=200, name="an auditor and a team-admin")
    toks = {}
    for n in ("oa-aud", "oa-ta"):
        r = call("POST", "/v1/users/%s/tokens" % n, {"label": "oa"}, want=201,
                 name="a token for %s" % n)
        toks[n] = (r.json or {}).get("token")
        tap.is_((r.json or {}).get("label"), "oa", "the token has its label")
    if not all(toks.values()):
        return
    aud, ta = toks["oa-aud"], toks["oa-ta"]
    r = call("GET", "/v1/whoami", token=aud, want=200, name="whoami as an auditor")
    tap.is_((r.json or {}).get("role"), "auditor", "the auditor is an auditor")
    r = call("GET", "/v1/whoami", token=ta, want=200, name="whoami as a team-admin")
    tap.is_((r.json or {}).get("role"), "team-admin", "the team-admin is a team-admin")
    call("GET", "/v1/audit?limit=1&outcome=refused", token=aud, want=200,
         name="an auditor reads the audit log")
    call("GET", "/v1/audit?limit=1", token=ta, want=403, code="forbidden",
         name="a team-admin may not")
    call("POST", "/v1/jobs", job_doc("oa-aud", ["true"], team="oa-team"), token=aud,
         want=403, code="forbidden", name="an auditor may not submit")
    call("POST", "/v1/users/oa-aud/tokens", token=ta, want=403, code="forbidden",
         name="a team-admin may not issue an auditor's token")
    call("GET", "/v1/tokens", token=ta, want=200, name="a team-admin's tokens")
    r = call("GET", "/v1/audit?action=token.create&outcome=refused&limit=10000",
             want=200, name="the refused token is audited")
    tap.ok(any(x.get("actor") == "oa-ta" for x in (r.json or {}).get("records", [])),
           "the team-admin's refused token request is in the audit log")

    # A job's own token: self, lineage and models only.
    r = call("POST", "/v1/jobs",
             job_doc("oa-jt", ["sh", "-c", "echo \"tok=$SLUICE_TOKEN\"; sleep 1000"],
                     maxRuntime="120s"), want=201, name="a job that shows its token")
    jid = (r.json or {}).get("id")
    if not isinstance(jid, int):
        return
    jt, deadline = None, time.monotonic() + 30
    while jt is None and time.monotonic() < deadline:
        r = D.request("GET", "/v1/jobs/%d/logs" % jid)
        m = re.search(rb"tok=(\S+)", r.body or b"")
        jt = m.group(1).decode() if m else None
        if jt is None:
            time.sleep(0.2)
    tap.ok(jt, "the job's token was read from its log")
    if jt:
        call("GET", "/v1/whoami", token=jt, want=200, name="whoami as a job")
        for path in ("/v1/nodes", "/v1/jobs", "/v1/teams", "/v1/queues",
                     "/v1/priorityclasses", "/v1/report/utilisation", "/v1/budgets"):
            call("GET", path, token=jt, want=403, code="forbidden",
                 name="a job token may not GET %s" % path)
        call("GET", "/v1/lineage/job:%d" % jid, token=jt, want=200,
             name="a job reads its own lineage")
    call("DELETE", "/v1/jobs/%d" % jid, want=202, name="cancel the job")


def test_objects():
    """The catalog's objects: read, delete, and apply's refusal of a reset."""
    y = ("apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: oa-c}\n---\n"
         "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: oa-t}\n---\n"
         "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: oa-q}\n"
         "spec: {team: oa-t, cohort: oa-c, nominal: {gpus: 2}, borrowingLimit: {gpus: 1}}\n")
    call("POST", "/v1/apply", y, ctype="application/yaml", want=200, name="apply a cohort")
    less = ("apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: oa-q}\n"
            "spec: {team: oa-t, cohort: oa-c, nominal: {gpus: 2}}\n")
    call("POST", "/v1/apply", less, ctype="application/yaml", want=409, code="conflict",
         field="spec.borrowingLimit.gpus", name="an apply that would reset a field")
    r = call("POST", "/v1/apply?dry_run=true", less, ctype="application/yaml", want=200,
             name="a dry run of it")
    tap.ok([c.get("field") for d in (r.json or {}).get("diff", [])
            for c in d.get("changes", [])] == ["spec.borrowingLimit.gpus"],
           "the dry run names the field")
    call("POST", "/v1/apply?replace=yes", less, ctype="application/yaml", want=400,
         field="replace", name="replace=yes")
    call("GET", "/v1/objects/queues", want=200, name="list queues as manifests")
    call("GET", "/v1/objects/widgets", want=404, name="list an unknown kind")
    call("GET", "/v1/objects/queue/oa-q", want=200, name="one queue")
    call("GET", "/v1/objects/Queue/oa-none", want=404, name="an unknown queue")
    call("DELETE", "/v1/objects/cohort/oa-c", want=409, code="conflict",
         name="delete a cohort with queues")
    call("DELETE", "/v1/objects/queue/oa-q", want=200, name="delete the queue")
    call("DELETE", "/v1/objects/cohort/oa-c", want=200, name="then the cohort")
    call("DELETE", "/v1/objects/cohort/oa-c", want=404, name="delete it again")
    call("DELETE", "/v1/objects/queue/oa-q?force=maybe", want=400, field="force",
         name="force=maybe")


def test_coverage():
    missing = sorted(k for k in OPS if k not in CALLED)
    tap.ok(not missing, "every operation in the document was called",
           *["never called: %s %s" % k for k in missing])
    no_ok = sorted(k for k, st in CALLED.items()
                   if not any(200 <= s < 300 or s == 101 for s in st))
    tap.ok(not no_ok, "every operation answered 2xx (or switched protocols) at least once",
           *["%s %s: %s" % (k[0], k[1], sorted(CALLED[k])) for k in no_ok])
    no_err = sorted(k for k, st in CALLED.items()
                    if k[1].startswith("/v1/") and k[1] not in PUBLIC_V1 and
                    not any(s >= 400 for s in st))
    tap.ok(not no_err, "every /v1 operation was also refused at least once",
           *["%s %s: %s" % (k[0], k[1], sorted(CALLED[k])) for k in no_err])


def identity_file():
    """An LDAP directory (a real slapd), an OIDC provider (the fake one)
    and the identity file naming both, so that the login routes answer;
    None when slapd is not installed."""
    global IDP
    if not ldaptest.available():
        return None
    tmp = tempfile.mkdtemp(prefix="sluice-oa-ldap.")
    os.chmod(tmp, 0o711)
    slapd = ldaptest.Slapd(tmp).start()
    path = ldaptest.identity_file(slapd, tmp, [("viewers", "default", "member")])
    IDP = oidctest.FakeIdp(tmp)
    IDP.start()
    oidctest.add_to(path, IDP, [("oa-members", "default", "member")])
    return path


def test_login():
    r = call("GET", "/v1/login", want=200, token=None, name="login methods without a token")
    if not {"password", "oidc"} <= set((r.json or {}).get("methods", [])):
        tap.ok(False, "the login routes need slapd (scripts/deps.sh installs it)")
        return
    call("POST", "/v1/login", {"user": "dave", "password": "wrong"}, token=None, want=401,
         code="unauthorized", name="login with a wrong password")
    call("POST", "/v1/login", {"user": "dave", "password": "x", "otp": 1}, token=None,
         want=400, field="otp", name="login with an unknown field")
    r = call("POST", "/v1/login", {"user": "dave", "password": "dave-pw"}, token=None,
             want=201, name="login")
    tok = (r.json or {}).get("token")
    call("POST", "/v1/login/refresh", want=200, token=tok, name="login refresh")
    call("POST", "/v1/login/refresh", want=401, token=tok,
         name="login refresh with the token it replaced")
    # OIDC: a provider's token, and the device flow
    call("POST", "/v1/login", {"id_token": IDP.mint("oa-oidc", ["oa-members"])}, token=None,
         want=201, name="login with an OIDC token")
    call("POST", "/v1/login", {"id_token": IDP.mint("oa-oidc", ["oa-members"], key="none")},
         token=None, want=401, code="unauthorized", name="login with an alg-none token")
    call("POST", "/v1/login/device", "{}", ctype="application/json", token=None,
         want=(400, 415), name="device authorization with a body")
    r = call("POST", "/v1/login/device", token=None, want=200, name="device authorization")
    dev = r.json or {}
    call("POST", "/v1/login", {"device_code": dev.get("device_code", "x")}, token=None,
         want=202, name="device poll before approval")
    IDP.approve(dev.get("user_code"), "oa-device", ["oa-members"])
    call("POST", "/v1/login", {"device_code": dev.get("device_code", "x")}, token=None,
         want=201, name="device poll after approval")


def main():
    global D
    check_document()
    ident = identity_file()
    D = Sluiced(fake_gpus="4xH100", args=["--identity", ident] if ident else []).start()
    hog = start_hog()
    test_health_and_auth()
    test_login()
    test_reads()
    jid = test_submit_and_read()
    test_invalid_submissions()
    test_media_types()
    test_sizes()
    if jid:
        test_hold(jid)
        test_cancel(jid)
    test_requeue()
    test_attach()
    test_array_cancel()
    test_run_to_completion()
    test_unknown_ids()
    test_apply()
    test_tokens()
    test_unlisted()
    test_keepalive()
    test_meter()
    test_governance()
    test_nodes()
    test_objects()
    test_coverage()
    r = D.request("GET", "/healthz")
    tap.is_(r.status, 200, "sluiced is still healthy after all of that")
    tap.ok(isinstance(hog, int) and D.cancel_all(),
           "the hog and every other job still pending or running are cancelled and end")
    tap.done_testing(D)


if __name__ == "__main__":
    main()
