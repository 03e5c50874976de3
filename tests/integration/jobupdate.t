#!/usr/bin/env python3
"""jobupdate.t - sluice update of a pending job's priority class, queue and
GPUs per task, and admin holds, on a real sluiced with 4 fake GPUs.

Users of team default: alice and bob (members), tina (team-admin); nick
of team nlp. A job of 3 GPUs (bob's) runs. A pending job of alice's:
  - updated to fewer GPUs, it starts where it could not;
  - each refusal names its field and changes nothing: more GPUs than any
    node has (400 unsatisfiable), over the per-user limit of a queue (400
    quota_exceeded), a queue of another team or none (400 queue), a class
    that does not exist (400 priorityClass), a class a policy refuses for
    its image (403 policy_denied), a member's longer maxRuntime with
    fewer GPUs (409 maxRuntime: neither changes), another member (403);
    a running job's class, queue or GPUs (409 naming the field);
  - moved to a lower class it lets a later job pass; moved back it takes
    its place in line again (its submit time kept);
  - moved to another queue of its team, the job, `sluice why` and the
    queues' pending counts say so; it outlives a restart;
  - every update is audited with each field old -> new, and an event.
An admin's or team-admin's hold of alice's job is an admin hold: shown in
the job (hold: kind, by), sluice hold, show and why; alice cannot release
it (403, field hold) but tina can; it outlives a restart. Her own hold is
a user hold she releases."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, job_doc, tap, team_yaml  # noqa: E402

d = Sluiced(fake_gpus="4xH100")
d.start()
cli = d.cli

r, TOK = d.users((("alice", "default", "member"), ("bob", "default", "member"),
                  ("tina", "default", "team-admin"), ("nick", "nlp", "member")),
                 team_yaml("nlp") + """---
apiVersion: sluice/v1
kind: Queue
metadata: {name: q2}
spec: {team: default}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: capped}
spec: {team: default, userLimit: {gpus: 2}}
---
apiVersion: sluice/v1
kind: Policy
metadata: {name: pinned}
spec: {teams: [default], images: {requireDigest: [production]}}
""")
tap.ok(r.status == 200, "queues q2 and capped (2 GPUs a user), a policy, the users", r)
tap.ok(all(TOK.values()), "a token for each")


def submit(name, gpus, user="alice", **spec):
    st, body = d.json_req("POST", "/v1/jobs", job_doc(
        name, command=("sleep", "300"), resources={"gpus": gpus, "cpus": 0.1,
                                                    "memory": "64Mi"}, **spec),
        token=TOK[user])
    if st != 201:
        tap.diag("submit %s: %d %r" % (name, st, body))
    return body.get("id") if st == 201 else None


def job(jid):
    return d.json_req("GET", "/v1/jobs/%d" % jid)[1]


def spec(jid):
    return job(jid).get("spec", {}).get("spec", {})


def wait_state(jid, state, secs=30):
    end = time.time() + secs
    while time.time() < end:
        if job(jid).get("state") == state:
            return True
        time.sleep(0.1)
    return False


def patch(jid, body, user="alice"):
    return d.request("PATCH", "/v1/jobs/%d" % jid, json.dumps(body),
                     ctype="application/json", token=TOK[user] if user else d.token)


def ctl(verb, jid, user=None):
    return d.request("POST", "/v1/jobs/%d/%s" % (jid, verb), None,
                     token=TOK[user] if user else d.token)


def events(jid, kind="update"):
    evs = d.json_req("GET", "/v1/jobs/%d/events" % jid)[1].get("events", [])
    return [e.get("message") for e in evs if e.get("type") == kind]


# --- fewer GPUs: it starts where it could not ------------------------------------------
hog = submit("hog", 3, user="bob")
tap.ok(hog and wait_state(hog, "Running"), "bob's job of 3 GPUs runs")
p = submit("p", 2, maxRuntime="1h", image="registry.internal/ml/train:v1")
tap.ok(p and wait_state(p, "Pending"), "alice's job of 2 GPUs waits: 1 is free")
time.sleep(1)
tap.is_(job(p).get("state"), "Pending", "and stays so")

# refusals, each naming its field; none changes anything
for body, status, field, what in (
        ({"resources": {"gpus": 5}}, 400, "spec.resources.gpus",
         "5 GPUs per task: no node has 5"),
        ({"queue": "nlp"}, 400, "queue", "a queue of team nlp"),
        ({"queue": "nope"}, 400, "queue", "a queue that does not exist"),
        ({"priorityClass": "gold"}, 400, "priorityClass", "a class that does not exist"),
        ({"priorityClass": "production"}, 403, "spec.image",
         "production, whose policy wants an image pinned by digest"),
        ({"resources": {"gpus": 1}, "maxRuntime": "2h"}, 409, "maxRuntime",
         "fewer GPUs with a longer maxRuntime (a member's)"),
        ({"resources": {"gpus": 1, "cpus": 2}}, 400, "resources.cpus",
         "resources other than gpus"),
        ({"resources": {"gpus": 1.5}}, 400, "resources.gpus", "a fraction"),
        ({"priorityClass": "Batch!"}, 400, "priorityClass", "not a name"),
        ({}, 400, None, "nothing to change")):
    r = patch(p, body)
    tap.ok(r.status == status and r.error_field() == field,
           "%s: %d naming %s" % (what, status, field), r)
st, up = d.json_req("PATCH", "/v1/jobs/%d" % p, {"resources": {"gpus": 3}},
                    token=TOK["alice"])
tap.ok(st == 200 and up["spec"]["spec"]["resources"]["gpus"] == 3,
       "3 GPUs is allowed (the largest node has 4)", up)
r = patch(p, {"queue": "capped"})
tap.ok(r.status == 400 and r.error_code() == "quota_exceeded" and
       r.error_field() == "spec.resources.gpus" and "cannot run" in r.body.decode(),
       "queue capped, 2 GPUs a user, with 3 asked: 400 quota_exceeded", r)
r = patch(p, {"resources": {"gpus": 1}}, "bob")
tap.ok(r.status == 403 and r.error_field() == "user", "bob may not update alice's job", r)
r = patch(p, {"resources": {"gpus": 1}}, "nick")
tap.is_(r.status, 404, "nick of team nlp does not see it")
jp = job(p)
tap.ok(jp["state"] == "Pending" and jp["queue"] == "default" and
       jp["priority_class"] == "batch" and jp["spec"]["spec"]["resources"]["gpus"] == 3 and
       jp["spec"]["spec"]["maxRuntime"] == "1h",
       "none of the refusals changed anything", jp)
tap.is_(events(p), ["resources.gpus 2 -> 3 by alice"], "only the allowed update is an event")

rc, out, err = cli("update", str(p), "--gpus", "1", token=TOK["alice"])
tap.ok(rc == 0 and out.strip() == "updated %d (Pending): gpus 1" % p,
       "sluice update --gpus 1", out, err)
tap.ok(wait_state(p, "Running"), "with 1 GPU it starts where it could not")
tap.is_(len(job(p).get("placement", [{}])[0].get("gpus", [])), 1, "on one GPU")
r = patch(p, {"resources": {"gpus": 2}})
tap.ok(r.status == 409 and r.error_field() == "resources.gpus" and
       "only while it is pending" in r.body.decode(),
       "a running job's GPUs cannot change (409, resources.gpus)", r)
r = patch(p, {"priorityClass": "best-effort"}, None)
tap.ok(r.status == 409 and r.error_field() == "priorityClass",
       "nor its class, even by an admin (409, priorityClass)", r)
rc, out, err = cli("update", str(p), "--queue", "q2", token=TOK["alice"])
tap.ok(rc == 2 and "only while it is pending" in err, "nor its queue: sluice update exits 2",
       rc, out, err)

# --- the class: a lower class lets a later job pass; back, it is first again -----------
a = submit("a", 1)
b = submit("b", 1)
tap.ok(a and b and wait_state(a, "Pending") and wait_state(b, "Pending"),
       "jobs a and b wait for a GPU, a first")
rc, out, err = cli("update", str(a), "--priority-class", "best-effort", token=TOK["alice"])
tap.ok(rc == 0 and out.strip() == "updated %d (Pending): priorityClass best-effort" % a,
       "sluice update --priority-class best-effort: a moves down", out, err)
rc, out, err = cli("why", str(a), "-o", "json")
tap.ok(rc == 0 and json.loads(out).get("priority_class") == "best-effort",
       "sluice why shows its new class", out, err)
tap.is_(d.request("DELETE", "/v1/jobs/%d" % p).status, 202, "a GPU frees")
tap.ok(wait_state(b, "Running"), "b, behind a in line but of a higher class now, starts")
tap.is_(job(a).get("state"), "Pending", "a waits")
rc, out, err = cli("update", str(a), "--priority", "batch", token=TOK["alice"])
tap.ok(rc == 0 and "priorityClass batch" in out, "a moves back to batch (--priority)", out, err)
c = submit("c", 1)
tap.ok(c and wait_state(c, "Pending"), "job c is submitted after it")
tap.is_(d.request("DELETE", "/v1/jobs/%d" % b).status, 202, "a GPU frees again")
tap.ok(wait_state(a, "Running"), "a starts before c: its submit time kept")
tap.is_(job(c).get("state"), "Pending", "c waits")

# --- the queue ---------------------------------------------------------------------------
rc, out, err = cli("update", str(c), "--queue", "q2", token=TOK["alice"])
tap.ok(rc == 0 and out.strip() == "updated %d (Pending): queue q2" % c,
       "sluice update --queue q2", out, err)
jc = job(c)
tap.ok(jc["queue"] == "q2" and jc["spec"]["spec"]["queue"] == "q2",
       "the job and its spec say q2", jc)
st, ex = d.json_req("GET", "/v1/jobs/%d/explain" % c)
tap.ok(st == 200 and ex.get("queue") == "q2", "why: queue q2", ex)
st, qs = d.json_req("GET", "/v1/queues")
pend = {q["name"]: q.get("pending") for q in qs.get("queues", [])} if st == 200 else {}
tap.ok(pend.get("q2") == 1 and pend.get("default") == 0,
       "the queues: one pending in q2, none in default", pend)
rc, out, err = cli("update", str(c), "--gpus", "2", "--max-runtime", "30m", "-o", "json",
                   token=TOK["alice"])
tap.ok(rc == 0 and json.loads(out)["spec"]["spec"]["resources"]["gpus"] == 2,
       "--gpus 2 --max-runtime 30m, -o json prints the job", out, err)
st, ex = d.json_req("GET", "/v1/jobs/%d/explain" % c)
tap.ok(st == 200 and "2" in (ex.get("request") or {}).get("per_task", ""),
       "why: its request is 2 GPUs a task", ex)
tap.is_(events(c), ["queue default -> q2 by alice",
                    "resources.gpus 1 -> 2, maxRuntime none -> 30m by alice"],
        "each update is an event naming each change")
d.restart()
jc = job(c)
tap.ok(jc["state"] == "Pending" and jc["queue"] == "q2" and
       jc["spec"]["spec"]["resources"]["gpus"] == 2 and
       jc["spec"]["spec"]["maxRuntime"] == "30m",
       "after a restart of sluiced it is still in q2 with 2 GPUs and 30m", jc)
st, ex = d.json_req("GET", "/v1/jobs/%d/explain" % c)
tap.ok(st == 200 and ex.get("queue") == "q2", "and the scheduler has it there", ex)

# --- audit -------------------------------------------------------------------------------
st, au = d.json_req("GET", "/v1/audit?action=job.update&limit=100")
recs = au.get("records", []) if st == 200 else []
tap.ok(any(x["actor"] == "alice" and x["object"] == "job:%d" % p and x["outcome"] == "ok" and
           x.get("details", {}).get("resources.gpus") == {"old": "3", "new": "1"}
           for x in recs), "the audit log has the GPU update, old and new", recs)
tap.ok(any(x["object"] == "job:%d" % a and
           x.get("details", {}).get("priorityClass") == {"old": "batch", "new": "best-effort"}
           for x in recs), "the class update", recs)
tap.ok(any(x["object"] == "job:%d" % c and
           {k: v for k, v in x.get("details", {}).items() if k != "role"} ==
           {"resources.gpus": {"old": "1", "new": "2"},
            "maxRuntime": {"old": "none", "new": "30m"}}
           for x in recs), "both fields of one update in one record", recs)
tap.ok(any(x["object"] == "job:%d" % p and x["outcome"] != "ok" and
           x.get("details", {}).get("rule") == "images.requireDigest" for x in recs),
       "the refused ones too, the policy's with its rule", recs)

# --- admin holds -------------------------------------------------------------------------
rc, out, err = cli("hold", str(c))
tap.ok(rc == 0 and out.strip() == "held %d (an admin hold)" % c,
       "an admin holds alice's job: an admin hold", out, err)
jc = job(c)
tap.ok(jc.get("held") is True and jc.get("hold") == {"kind": "admin", "by": "admin"},
       "the job: hold {kind: admin, by: admin}", jc)
tap.ok("an admin hold" in (jc.get("reason") or "") and
       "team-admin of team default releases it" in (jc.get("reason") or ""),
       "its reason says who may release it", jc.get("reason"))
rc, out, err = cli("show", str(c))
tap.ok(rc == 0 and "admin hold by admin" in out, "sluice show says the hold", out)
rc, out, err = cli("why", str(c))
tap.ok(rc == 0 and "an admin hold" in out, "sluice why too", out)
rc, out, err = cli("jobs", "-o", "wide")
tap.ok(rc == 0 and any(line.startswith(str(c)) and "an admin hold" in line
                       for line in out.splitlines()), "sluice jobs -o wide too", out)
r = ctl("release", c, "alice")
tap.ok(r.status == 403 and r.error_field() == "hold" and "admin hold" in r.body.decode(),
       "alice may not release it (403, hold)", r)
rc, out, err = cli("release", str(c), token=TOK["alice"])
tap.ok(rc == 2 and "only an admin or a team-admin" in err, "sluice release says why (exit 2)",
       rc, out, err)
r = ctl("hold", c, "alice")
tap.ok(r.status == 200 and r.json.get("hold", {}).get("kind") == "admin",
       "her hold on it leaves it an admin hold", r)
d.restart()
tap.is_(job(c).get("hold"), {"kind": "admin", "by": "admin"}, "the admin hold outlives a restart")
tap.ok("an admin hold" in (job(c).get("reason") or ""), "with its reason", job(c))
tap.is_(ctl("release", c, "alice").status, 403, "alice still may not release it")
r = ctl("release", c, "tina")
tap.ok(r.status == 200 and r.json.get("held") is False and r.json.get("hold") is None,
       "tina, a team-admin, releases it", r)
r = ctl("hold", c, "tina")
tap.ok(r.status == 200 and r.json.get("hold") == {"kind": "admin", "by": "tina"},
       "tina's hold of alice's job is an admin hold too", r)
tap.is_(ctl("release", c, "alice").status, 403, "which alice may not release")
tap.is_(ctl("release", c).status, 200, "an admin may")
r = ctl("hold", c, "alice")
tap.ok(r.status == 200 and r.json.get("hold") == {"kind": "user", "by": "alice"},
       "alice's own hold is a user hold", r)
r = ctl("hold", c)
tap.ok(r.status == 200 and r.json.get("hold") == {"kind": "admin", "by": "admin"},
       "an admin holding it again makes it an admin hold", r)
tap.is_(ctl("release", c, "tina").status, 200, "tina releases it")
r = ctl("hold", c, "alice")
tap.ok(r.status == 200 and r.json.get("hold") == {"kind": "user", "by": "alice"},
       "alice holds it again", r)
r = ctl("release", c, "alice")
tap.ok(r.status == 200 and r.json.get("held") is False, "and releases her own hold", r)
st, au = d.json_req("GET", "/v1/audit?action=job.hold&limit=100")
recs = au.get("records", []) if st == 200 else []
tap.ok(any(x["actor"] == "admin" and x["object"] == "job:%d" % c and
           x.get("details", {}).get("kind") == "admin" for x in recs),
       "the audit log has the admin hold with its kind", recs)
st, au = d.json_req("GET", "/v1/audit?action=job.release&limit=100")
recs = au.get("records", []) if st == 200 else []
tap.ok(any(x["actor"] == "alice" and x["outcome"] != "ok" for x in recs) and
       any(x["actor"] == "tina" and x["outcome"] == "ok" and
           x.get("details", {}).get("kind") == "admin" for x in recs),
       "and the releases, refused and done", recs)

d.cancel_all()
tap.done_testing(d)
