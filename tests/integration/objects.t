#!/usr/bin/env python3
"""objects.t - an admin's objects: get, describe, delete, apply, diff.

One sluiced with one fake GPU. Every manifest kind is applied and read back
with `sluice get` and `sluice describe` (and -o json round-trips through
apply as unchanged). Deletes are refused, naming what blocks and changing
nothing, for a queue with jobs, a team's default queue, a team with users
and queues, a cohort with queues, a priority class live jobs use, a user
with live tokens, the Scheduler and the Pricing; --force cancels a queue's
jobs (202 while a running one stops, 200 once it has ended) and revokes a
user's tokens; every deletion and each cancel it made are in the audit log;
a member, a viewer and a team-admin cannot delete. Apply refuses to reset
a field a document leaves out, naming it and its value now, and applies
with --replace; `sluice diff` shows the change and keeps nothing.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402

SLUICE = os.path.join(SLUICE_BIN, "sluice")
d = Sluiced(fake_gpus="1xH100")
d.start()
work = tempfile.mkdtemp(prefix="sluice-objects.")
os.mkdir(os.path.join(work, "ds"))


def cli(*args, token=None, stdin=None):
    env = dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=token or d.token)
    p = subprocess.run([SLUICE] + list(args), env=env, capture_output=True, text=True,
                       input=stdin, timeout=120)
    return p.returncode, p.stdout, p.stderr


def audit(action):
    st, body = d.json_req("GET", "/v1/audit?action=%s&limit=1000" % action)
    return body.get("records", []) if st == 200 else []


ALL = """apiVersion: sluice/v1
kind: Cohort
metadata: {name: shared}
spec: {description: the shared pool}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: research}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: rq}
spec: {team: research, cohort: shared, nominal: {gpus: 1}, borrowingLimit: {gpus: 1},
       lendingLimit: {gpus: 1}}
---
apiVersion: sluice/v1
kind: PriorityClass
metadata: {name: urgent}
spec: {value: 5000}
---
apiVersion: sluice/v1
kind: User
metadata: {name: alice}
spec: {team: research, role: member}
---
apiVersion: sluice/v1
kind: User
metadata: {name: tara}
spec: {team: research, role: team-admin}
---
apiVersion: sluice/v1
kind: User
metadata: {name: vic}
spec: {team: research, role: viewer}
---
apiVersion: sluice/v1
kind: Scheduler
metadata: {name: default}
spec: {placement: bestfit}
---
apiVersion: sluice/v1
kind: Pricing
metadata: {name: default}
spec: {currency: EUR}
---
apiVersion: sluice/v1
kind: Budget
metadata: {name: rb}
spec: {team: research, period: month, gpuHours: 100, action: block}
---
apiVersion: sluice/v1
kind: Policy
metadata: {name: rp}
spec: {teams: [research], caps: {maxGpusPerJob: 8}}
---
apiVersion: sluice/v1
kind: Dataset
metadata: {name: corpus}
spec: {version: v1, digest: "sha256:%s", owner: research, path: %s,
       access: [{team: research, mode: ro}]}
""" % ("ab" * 32, os.path.join(work, "ds"))

rc, out, err = cli("apply", "-f", "-", stdin=ALL)
tap.is_(rc, 0, "every kind applied: %s" % err.strip())

# --- get and describe, every kind ---------------------------------------------------
KINDS = [("team", "research"), ("queues", "rq"), ("Cohort", "shared"),
         ("priority-class", "urgent"), ("USERS", "alice"), ("scheduler", "default"),
         ("pricing", "default"), ("budgets", "rb"), ("policies", "rp"),
         ("dataset", "corpus@v1")]
for word, name in KINDS:
    rc, out, err = cli("get", word)
    tap.ok(rc == 0 and any(line.split()[1:2] == [name] for line in out.splitlines()[1:]),
           "sluice get %s lists %s" % (word, name), out, err)
    rc, out, err = cli("describe", word, name)
    tap.ok(rc == 0 and ("Name: %s\n" % name.split("@")[0]) in out and "Spec:" in out,
           "sluice describe %s %s" % (word, name), out, err)
    rc, out, err = cli("get", word, name, "-o", "json")
    doc = json.loads(out) if rc == 0 else {}
    rc2, out2, err2 = cli("apply", "-f", "-", stdin=json.dumps(
        {k: doc.get(k) for k in ("apiVersion", "kind", "metadata", "spec")}))
    tap.ok(rc2 == 0 and out2.strip().endswith("unchanged"),
           "get %s %s -o json applies back unchanged" % (word, name), out2, err2)

rc, out, err = cli("describe", "queue", "rq")
tap.ok("borrowingLimit:" in out and "pending: 0" in out and "running: 0" in out,
       "describe queue shows its limits and its pending and running jobs", out)
rc, out, err = cli("describe", "team", "research")
tap.ok('users: ["alice","tara","vic"]' in out and '"rq"' in out,
       "describe team shows its users and queues", out)
rc, out, err = cli("get", "queue", "rq", "-o", "csv")
tap.ok(rc == 0 and out.startswith("kind,name,spec\n") and "nominal.gpus=1" in out,
       "get -o csv", out)
rc, out, err = cli("get", "widgets")
tap.ok(rc == 1 and "unknown kind 'widgets'" in err, "an unknown kind is a usage error", err)
rc, out, err = cli("get", "queue", "nope")
tap.ok(rc == 2 and "not found" in err, "an unknown name is 404", err)

# tokens for the roles
TOK = {}
for u in ("alice", "tara", "vic"):
    st, body = d.json_req("POST", "/v1/users/%s/tokens" % u, {})
    TOK[u] = body.get("token") if st == 201 else None
tap.ok(all(TOK.values()), "a token for alice, tara and vic")
st, body = d.json_req("GET", "/v1/objects/users", token=TOK["alice"])
tap.is_([u["metadata"]["name"] for u in body.get("items", [])], ["alice"],
        "a member sees itself only among users")
st, body = d.json_req("GET", "/v1/objects/users", token=TOK["tara"])
tap.is_(sorted(u["metadata"]["name"] for u in body.get("items", [])),
        ["alice", "tara", "vic"], "a team-admin sees its team's users")
tap.is_(d.request("GET", "/v1/objects/user/admin", token=TOK["alice"]).status, 404,
        "a member cannot read another user")

# --- apply never resets silently ----------------------------------------------------
LESS = """apiVersion: sluice/v1
kind: Queue
metadata: {name: rq}
spec: {team: research, cohort: shared, nominal: {gpus: 1}}
"""
rc, out, err = cli("diff", "-f", "-", stdin=LESS)
tap.ok(rc == 0 and "queue/rq would change" in out and
       "spec.borrowingLimit.gpus: 1 -> (unset)  (left out" in out and
       "spec.lendingLimit.gpus: 1 -> (unset)" in out, "sluice diff shows the resets", out, err)
n_apply = len(audit("apply"))
rc, out, err = cli("apply", "-f", "-", stdin=LESS)
tap.ok(rc == 2 and "fields left out would be reset: spec.borrowingLimit.gpus (now 1), "
       "spec.lendingLimit.gpus (now 1)" in err and "--replace" in err,
       "apply refuses, naming each field and its value now", err)
st, q = d.json_req("GET", "/v1/objects/queue/rq")
tap.is_(q.get("spec", {}).get("borrowingLimit"), {"gpus": 1}, "the refusal changed nothing")
tap.is_(len(audit("apply")), n_apply + 1, "the refusal is audited and the diff is not")
rc, out, err = cli("diff", "-f", "-", stdin=ALL)
tap.ok(rc == 0 and "would change" not in out and "would be created" not in out,
       "diff of the whole file: everything unchanged", out)
rc, out, err = cli("apply", "--replace", "-f", "-", stdin=LESS)
tap.ok(rc == 0 and "queue/rq updated" in out, "apply --replace takes the defaults", err)
st, q = d.json_req("GET", "/v1/objects/queue/rq")
tap.ok("borrowingLimit" not in q.get("spec", {}), "the limit is gone after --replace")
TEAM = "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: research}\n"
rc, out, err = cli("apply", "-f", "-", stdin=TEAM)
tap.ok(rc == 0 and "unchanged" in out, "a Team without defaultQueue is its own name: unchanged",
       err)

# --- delete: refusals name what blocks ----------------------------------------------
st, j1 = d.json_req("POST", "/v1/jobs", job_doc("run1", ("sleep", "60"), team="research",
                                                queue="rq", resources={"gpus": 1}))
st2, j2 = d.json_req("POST", "/v1/jobs", job_doc("wait1", ("sleep", "60"), team="research",
                                                 queue="rq", priorityClass="urgent",
                                                 resources={"gpus": 1}))
tap.ok(st == 201 and st2 == 201, "two jobs submitted to rq")
# the second waits: the first holds the only GPU (unless urgent preempts it; either way
# one runs and one waits)
deadline = time.time() + 30
while time.time() < deadline:
    states = sorted(d.json_req("GET", "/v1/jobs/%d" % j["id"])[1]["state"] for j in (j1, j2))
    if states == ["Pending", "Running"]:
        break
    time.sleep(0.2)
tap.is_(states, ["Pending", "Running"], "one job runs, one waits")

CASES = [
    ("queue", "rq", "queue rq has 1 pending and 1 running jobs; --force cancels them"),
    ("queue", "research", "queue research is the default queue of team research"),
    ("team", "research", "team research has 3 users (alice, tara, vic) and 1 queue (rq)"),
    ("cohort", "shared", "cohort shared has 1 queue (rq)"),
    ("priorityclass", "urgent", "priorityclass urgent has 1 "),
    ("user", "alice", "user alice has 1 live token; --force revokes them"),
    ("priorityclass", "batch", "priority class batch is the default class"),
    ("user", "admin", "user admin is the caller: an admin does not delete itself"),
    ("scheduler", "default", "one Scheduler is always in force"),
    ("pricing", "default", "one Pricing is always in force"),
]
for kind, name, text in CASES:
    rc, out, err = cli("delete", kind, name)
    tap.ok(rc == 2 and text in err and "(conflict)" in err,
           "delete %s %s is refused: %s" % (kind, name, text), err)
st, body = d.json_req("GET", "/v1/objects/queues")
tap.ok("rq" in [q["metadata"]["name"] for q in body.get("items", [])] and
       sum(1 for j in (j1, j2) if d.json_req("GET", "/v1/jobs/%d" % j["id"])[1]["state"]
           in ("Pending", "Running")) == 2, "the refusals changed nothing")
for who in ("alice", "vic", "tara"):
    r = d.request("DELETE", "/v1/objects/queue/rq?force=true", token=TOK[who])
    tap.is_(r.status, 403, "%s may not delete" % who)

# --force on a queue with a running job: 202, then 200 once it has ended
rc, out, err = cli("delete", "queue", "rq", "--force")
tap.ok(rc == 0 and "cancelled 2 job(s)" in out and "not deleted yet" in out,
       "delete --force cancels both and says the queue waits for the running one", out, err)
for j in (j1, j2):
    tap.ok(d.json_req("GET", "/v1/jobs/%d" % j["id"])[1]["state"] in ("Cancelled", "Running"),
           "job %d cancelled or stopping" % j["id"])
deadline = time.time() + 60
while time.time() < deadline and any(
        d.json_req("GET", "/v1/jobs/%d" % j["id"])[1]["state"] == "Running" for j in (j1, j2)):
    time.sleep(0.2)
rc, out, err = cli("delete", "queue", "rq")
tap.ok(rc == 0 and "queue/rq deleted" in out, "once they have ended the queue is deleted",
       out, err)
cancels = [r for r in audit("job.cancel") if r["details"].get("for") == "Queue:rq"]
tap.is_(sorted(r["object"] for r in cancels),
        sorted("job:%d" % j["id"] for j in (j1, j2)), "each cancel is audited for the queue")
dels = audit("object.delete")
tap.ok(any(r["object"] == "Queue:rq" and r["outcome"] == "ok" and
           r["details"].get("deleted") is False for r in dels) and
       any(r["object"] == "Queue:rq" and r["outcome"] == "ok" and
           r["details"].get("deleted") is not False for r in dels),
       "the forced delete and the delete are audited")
tap.ok(any(r["object"] == "Queue:research" and r["outcome"] == "refused" for r in dels),
       "a refused delete is audited")
tap.ok(any(r["outcome"] == "refused" and r["actor"] == "alice" for r in dels),
       "a member's attempt is audited")

rc, out, err = cli("delete", "user", "alice", "--force")
tap.ok(rc == 0 and "user/alice deleted" in out, "delete user --force revokes its token", err)
tap.is_(d.request("GET", "/v1/whoami", token=TOK["alice"]).status, 401,
        "the deleted user's token no longer works")
for kind, name in (("priorityclass", "urgent"), ("cohort", "shared"), ("policy", "rp")):
    rc, out, err = cli("delete", kind, name)
    tap.ok(rc == 0 and "deleted" in out, "delete %s %s" % (kind, name), err)
rc, out, err = cli("delete", "team", "research", "--force")
tap.ok(rc == 2 and "team research owns datasets (corpus@v1)" in err,
       "a team that owns a dataset is not deleted, even with --force", err)
rc, out, err = cli("delete", "dataset", "corpus@v1")
tap.ok(rc == 0 and "deleted" in out, "delete dataset corpus@v1", err)
rc, out, err = cli("delete", "team", "research")
tap.ok(rc == 2 and "team research has 2 users (tara, vic) and 0 queues besides its default "
       "queue; --force deletes them" in err, "without --force the team's users block", err)
st, body = d.json_req("DELETE", "/v1/objects/team/research?force=true")
tap.ok(st == 200 and body.get("deleted") is True and sorted(body.get("with", [])) ==
       ["Budget:rb", "Queue:research", "User:tara", "User:vic"],
       "--force deletes the team with its users, default queue and budget", body)
rc, out, err = cli("apply", "-f", "-", stdin=TEAM)
rc, out, err = cli("delete", "team", "research", "--force")
tap.is_(out, "team/research deleted with Queue:research\n",
        "the CLI says what went with a team (applied again: its own queue)")
rec = [r for r in audit("object.delete") if r["object"] == "Team:research" and
       r["outcome"] == "ok"]
tap.ok(any(sorted(r["details"].get("with", [])) ==
           ["Budget:rb", "Queue:research", "User:tara", "User:vic"] for r in rec),
       "the audit record lists what went with the team")
st, body = d.json_req("GET", "/v1/objects/queues")
tap.ok("research" not in [q["metadata"]["name"] for q in body.get("items", [])],
       "its default queue went with it")
rc, out, err = cli("delete", "team", "research")
tap.ok(rc == 2 and "not found" in err, "delete it again: 404", err)

d.restart()
st, body = d.json_req("GET", "/v1/objects/teams")
tap.is_([t["metadata"]["name"] for t in body.get("items", [])], ["default"],
        "after a restart the deleted objects stay deleted")
rc, out, err = cli("apply", "-f", "-", stdin=ALL)
tap.is_(rc, 0, "the same file applies again from scratch: %s" % err.strip())

tap.done_testing(d)
