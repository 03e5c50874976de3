#!/usr/bin/env python3
"""metering.t - the usage ledger, units, cost, carbon, budgets and reports,
end to end through sluiced (local executor, fake GPUs) and `sluice report`.

Real jobs of known duration run on 4 fake H100 and 2 fake A100 (one job
as a fraction of a GPU, one CPU-only, one failing once and retried, one
preempted and requeued, one still running, one re-adopted across a kill -9
of sluiced). The expected GPU-hours, CU, energy estimate, cost and carbon
are computed here from the jobs' own timestamps and the Pricing's formula
(docs/metering.md), independently of the daemon, and must match what
`sluice report` prints. The ledger itself is checked (every interval
closed, none overlapping within a job, one per task and attempt), the
utilisation report must conserve GPU-time (allocated + idle = capacity x
time, per node, per model and in total), and budgets must block or demote
as configured, with their 80 % and 100 % events."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402

H = 3600000.0
T0 = int(time.time() * 1000) - 1000

PRICING = """
apiVersion: sluice/v1
kind: Pricing
metadata: {name: default}
spec:
  currency: EUR
  overhead: 2
  lifetimeYears: 4
  electricity: {pricePerKWh: 0.25, pue: 1.5}
  gpuModels:
    H100: {cu: 4, price: 35040, idleWatts: 70, tdpWatts: 700}
    A100: {cu: 2.5, price: 17520}
  cpu: {cu: 0.01, pricePerCoreHour: 0.02, wattsPerCore: 10}
  memory: {cu: 0.001, pricePerGiBHour: 0.004, wattsPerGiB: 0.5}
  energy: {assumedUtilisation: 0.5}
  carbon: {intensity: 400}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: vision}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: nlp}
"""

# model -> (cu, hardware per GPU-hour, idle W, TDP W); A100 power from the
# built-in table (50 W idle, 400 W TDP).
MODELS = {"H100": (4, 35040 * 2 / (4 * 8760.0), 70, 700),
          "A100": (2.5, 17520 * 2 / (4 * 8760.0), 50, 400)}
CPU_CU, CPU_PRICE, CPU_W = 0.01, 0.02, 10
MEM_CU, MEM_PRICE, MEM_W = 0.001, 0.004, 0.5
ELEC, PUE, UTIL, G = 0.25, 1.5, 0.5, 400


def figures(model, ngpus, milli, cpus, mem_gib, ms):
    """The figures of one interval by the formula of docs/metering.md."""
    h = ms / H
    gpu_h = ngpus * milli / 1000.0 * h
    core_h = cpus * h
    gib_h = mem_gib * h
    cu = core_h * CPU_CU + gib_h * MEM_CU
    kwh = core_h * CPU_W / 1000 + gib_h * MEM_W / 1000
    cost = core_h * CPU_PRICE + gib_h * MEM_PRICE
    if model:
        mcu, hw, idle, tdp = MODELS[model]
        cu += gpu_h * mcu
        kwh += gpu_h * (idle + (tdp - idle) * UTIL) / 1000
        cost += gpu_h * hw
    cost += kwh * PUE * ELEC
    return {"gpu_hours": gpu_h, "cu": cu, "energy_kwh": kwh, "cost": cost,
            "co2_kg": kwh * PUE * G / 1000}


def add(a, b):
    for k, v in b.items():
        a[k] = a.get(k, 0) + v


def near(got, want, tol):
    return isinstance(got, (int, float)) and abs(got - want) <= tol


def ms_of(ts):
    """RFC 3339 with milliseconds, UTC, as sluiced writes it, to epoch ms."""
    import calendar
    base, frac = ts.rstrip("Z").split(".")
    t = time.strptime(base, "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(t) * 1000 + int(frac[:3])


def cli(d, *args):
    env = dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=d.token)
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluice")] + list(args),
                       env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def wait_state(d, jid, states, timeout=60):
    deadline = time.monotonic() + timeout
    job = None
    while time.monotonic() < deadline:
        st, job = d.json_req("GET", "/v1/jobs/%d" % jid)
        if st == 200 and job.get("state") in states:
            return job
        time.sleep(0.1)
    return job


def submit(d, doc, want=201):
    st, body = d.json_req("POST", "/v1/jobs", doc)
    tap.ok(st == want, "%s submitted (%d)" % (doc["metadata"]["name"], st),
           json.dumps(body))
    return body.get("id") if isinstance(body, dict) else None


d = Sluiced(fake_gpus="4xH100,2xA100").start()
st, body = d.json_req("POST", "/v1/apply", PRICING, ctype="application/yaml")
tap.is_(st, 200, "the Pricing and teams apply")

# --- jobs of known duration ------------------------------------------------
doc = job_doc("train", ["sleep", "2"], team="vision",
              resources={"gpus": 2, "gpuModels": ["H100"], "cpus": 2, "memory": "4Gi"})
doc["metadata"]["project"] = "detector"
a = submit(d, doc)
b = submit(d, job_doc("frac", ["sleep", "1"], team="nlp",
                      resources={"gpuMilli": 500, "gpuModels": ["A100"], "cpus": 1,
                                 "memory": "2Gi"}))
c = submit(d, job_doc("cpu", ["sleep", "1"], team="vision",
                      resources={"cpus": 1, "memory": "1Gi"}))
marker = os.path.join(d.jobs, "retry.marker")
r = submit(d, job_doc("retry", ["sh", "-c", "test -f %s || { touch %s; exit 3; }; "
                                "sleep 1" % (marker, marker)],
                      team="vision", retries=1,
                      resources={"gpus": 1, "gpuModels": ["A100"]}))
for jid in (a, b, c, r):
    job = wait_state(d, jid, ("Succeeded", "Failed"), 90)
    tap.is_(job and job.get("state"), "Succeeded", "job %s succeeded" % jid)

# --- preemption splits an interval ------------------------------------------
victim = submit(d, job_doc("victim", ["sh", "-c", "trap 'exit 0' USR1; sleep 2 & wait; "
                                      "sleep 1"],
                           priorityClass="best-effort", checkpoint={"grace": "2s"},
                           resources={"gpus": 4, "gpuModels": ["H100"]}))
wait_state(d, victim, ("Running",))
time.sleep(0.5)
boss = submit(d, job_doc("boss", ["sleep", "1"], priorityClass="production",
                         resources={"gpus": 4, "gpuModels": ["H100"]}))
job = wait_state(d, boss, ("Succeeded",), 60)
tap.is_(job and job.get("state"), "Succeeded", "the production job ran")
job = wait_state(d, victim, ("Succeeded",), 60)
tap.is_(job and job.get("state"), "Succeeded", "the preempted job ran again")
tap.ok(job and job.get("preemptions") == 1, "it was preempted once")

# --- what the ledger holds ---------------------------------------------------
rows = d.store_rows("SELECT job_id, attempt, task, node, gpu_model, ngpus, gpu_milli, "
                  "cpu_milli, mem_bytes, start_ms, end_ms, team, project "
                  "FROM usage ORDER BY job_id, id")
by_job = {}
for row in rows:
    by_job.setdefault(row[0], []).append(row)
tap.ok(all(row[10] is not None for row in rows), "every interval of a finished job is closed")
tap.is_(len(by_job.get(r, [])), 2, "the retried job has one interval per attempt")
tap.is_(len(by_job.get(victim, [])), 2, "the preempted job has one interval per run")
tap.is_([x[1] for x in by_job.get(victim, [])], [0, 1], "numbered by attempt")
overlap = False
for jid, iv in by_job.items():
    for x, y in zip(iv, iv[1:]):
        if y[9] < x[10]:
            overlap = True
tap.ok(not overlap, "no job's intervals overlap: nothing is counted twice")
vict, bs = by_job.get(victim, []), by_job.get(boss, [])
tap.ok(len(vict) == 2 and len(bs) == 1 and vict[0][10] <= bs[0][9] <= bs[0][10] <= vict[1][9],
       "the victim's first run ends before the preemptor starts, the second after it ends")

# The expected figures, from the jobs' own timestamps (single-attempt jobs:
# exactly started_at..finished_at) and the ledger's times for the rest.
expect_team, expect_model, expect_user = {}, {}, {}
exact = {}
for jid in (a, b, c):
    st, job = d.json_req("GET", "/v1/jobs/%d" % jid)
    spec = job["spec"]["spec"] if "spec" in job["spec"] else job["spec"]
    res = spec["resources"]
    ms = ms_of(job["finished_at"]) - ms_of(job["started_at"])
    iv = by_job[jid][0]
    tap.is_((iv[9], iv[10]), (ms_of(job["started_at"]), ms_of(job["finished_at"])),
            "job %d: its interval is its started_at..finished_at" % jid)
    exact[jid] = ms
for jid, iv in by_job.items():
    for (_, _, _, node, model, ngpus, milli, cpu, mem, s, e, team, project) in iv:
        f = figures(model or None, ngpus, milli, cpu / 1000.0, mem / 2.0 ** 30, e - s)
        add(expect_team.setdefault(team, {}), f)
        add(expect_model.setdefault(model or "cpu", {}), f)

rc, out, err = cli(d, "report", "--by", "team", "-o", "json", "--from", str(T0))
tap.is_(rc, 0, "sluice report --by team -o json runs (%s)" % err.strip())
try:
    rep = json.loads(out)
except ValueError:
    rep = []
tap.ok(isinstance(rep, list) and all(
    set(("key", "jobs", "gpu_hours", "cu", "energy_kwh", "energy_measured", "cost",
         "co2_kg")) <= set(x) for x in rep), "an array of objects with the spec's fields")
got = {x["key"]: x for x in rep if isinstance(x, dict)}
for team, want in sorted(expect_team.items()):
    g = got.get(team, {})
    for k in ("gpu_hours", "cu", "energy_kwh", "cost", "co2_kg"):
        tap.ok(near(g.get(k), want[k], 1e-9 * max(1, want[k])),
               "team %s: %s %.9g" % (team, k, want[k]), "got %r" % g.get(k))
    tap.ok(g.get("energy_measured") is False, "team %s: energy says estimated" % team)
tap.is_(got.get("vision", {}).get("jobs"), 3, "vision ran 3 jobs")
# The single-attempt jobs by hand, from started_at/finished_at alone.
tap.ok(near(got.get("nlp", {}).get("gpu_hours"), 0.5 * exact[b] / H, 1e-12),
       "nlp: half an A100 for the job's run time, from its timestamps")

rc, out, _ = cli(d, "report", "--by", "gpu-model", "-o", "json", "--from", str(T0))
models = {x["key"]: x for x in json.loads(out)} if rc == 0 else {}
for m, want in sorted(expect_model.items()):
    tap.ok(near(models.get(m, {}).get("gpu_hours"), want["gpu_hours"], 1e-9),
           "by gpu-model: %s %.9g GPU-hours" % (m, want["gpu_hours"]))
rc, out, _ = cli(d, "report", "--by", "project", "-o", "json", "--from", str(T0))
proj = {x["key"]: x for x in json.loads(out)} if rc == 0 else {}
tap.ok(near(proj.get("detector", {}).get("gpu_hours"), 2 * exact[a] / H, 1e-12),
       "by project: detector has job a's GPU-hours")
rc, out, _ = cli(d, "report", "--by", "team", "-o", "csv", "--from", str(T0))
tap.ok(rc == 0 and out.splitlines()[0].startswith("key,period,jobs,gpu_hours,cu,"),
       "-o csv has a header of the figures")
rc, out, _ = cli(d, "report", "--by", "team", "--period", "day", "--from", str(T0))
tap.ok(rc == 0 and "vision" in out and "PERIOD" in out and "MEASURED" in out,
       "the table by day names the teams", out)
tap.diag("sample report:\n" + out)

# --- /metrics: the team counters agree with the ledger ----------------------------
r = d.request("GET", "/metrics", token=None)
text = r.body.decode("utf-8", "replace") if r.status == 200 else ""
promtool = "/usr/bin/promtool"
if os.access(promtool, os.X_OK):
    lint = subprocess.run([promtool, "check", "metrics"], input=r.body,
                          capture_output=True, timeout=30)
    tap.ok(lint.returncode == 0 and not lint.stdout.strip(),
           "promtool check metrics passes with the meter's families", lint.stdout[:500])
vals = {}
for line in text.splitlines():
    if line.startswith("sluice_team_") and "{" in line:
        name, rest = line.split("{", 1)
        labels, value = rest.rsplit("} ", 1)
        vals[(name, labels)] = float(value)
for team in ("vision", "nlp"):
    got = vals.get(("sluice_team_gpu_seconds_total", 'team="%s"' % team))
    tap.ok(near(got, expect_team[team]["gpu_hours"] * 3600, 1e-6),
           "sluice_team_gpu_seconds_total{team=%s} is its GPU-hours x 3600" % team,
           "got %r" % got)
    got = vals.get(("sluice_team_cost_total", 'team="%s"' % team))
    tap.ok(near(got, expect_team[team]["cost"], 1e-9),
           "sluice_team_cost_total{team=%s} is its cost" % team, "got %r" % got)

# --- who sees what ---------------------------------------------------------------
st, _ = d.json_req("POST", "/v1/apply", "apiVersion: sluice/v1\nkind: User\n"
                   "metadata: {name: vera}\nspec: {team: vision, role: member}\n",
                   ctype="application/yaml")
st, tok = d.json_req("POST", "/v1/users/vera/tokens", {})
vera = tok.get("token") if isinstance(tok, dict) else None
r = d.request("GET", "/v1/report?by=team&from=%d" % T0, token=vera)
keys = [x["key"] for x in (r.json or {}).get("rows", [])]
tap.ok(r.status == 200 and keys == ["vision"], "a member sees only her team's usage", keys)
r = d.request("GET", "/v1/report?team=nlp", token=vera)
tap.ok(r.status == 403 and r.error_field() == "team",
       "and is refused another team's, naming team", r)
r = d.request("GET", "/v1/budgets", token=vera)
tap.ok(r.status == 200, "a member may read budgets")
r = d.request("POST", "/v1/carbon/here", "2026-12-02T10:00:00Z,1\n", ctype="text/csv",
              token=vera)
tap.is_(r.status, 403, "only an admin imports carbon intensity")

# --- conservation --------------------------------------------------------------
now = int(time.time() * 1000)
rc, out, _ = cli(d, "report", "--utilisation", "-o", "json", "--to", str(now))
u = json.loads(out) if rc == 0 else {}
scopes = [("node " + n.get("node", "?"), n) for n in u.get("nodes", [])]
scopes += [("model " + k, v) for k, v in u.get("gpu_models", {}).items()]
scopes.append(("total", u.get("total", {})))
for name, s in scopes:
    cap, al, idle = (s.get("capacity_gpu_hours", -1), s.get("allocated_gpu_hours", -1),
                     s.get("idle_gpu_hours", -1))
    tap.ok(abs(al + idle - cap) <= 1e-9 * max(cap, 1) and s.get("conserved") is True
           and s.get("overcommitted_gpu_hours") == 0,
           "%s: allocated %.6f + idle %.6f = capacity %.6f GPU-hours" % (name, al, idle, cap))
span = (now - ms_of(u.get("from", "1970-01-01T00:00:00.000Z"))) / H
tap.ok(near(u.get("total", {}).get("capacity_gpu_hours"), 6 * span, 1e-9),
       "capacity is 6 GPUs x the window")
tap.ok(near(u.get("gpu_models", {}).get("H100", {}).get("allocated_gpu_hours"),
            expect_model["H100"]["gpu_hours"], 1e-9),
       "allocated H100 GPU-hours equal the usage report's", "%r vs %r" % (u.get("gpu_models", {}).get("H100"), expect_model["H100"]))
rc, out, _ = cli(d, "report", "--utilisation")
tap.ok(rc == 0 and "CONSERVED" in out and "(total)" in out, "the utilisation table", out)

# --- running jobs count up to now; a kill -9 loses and doubles nothing ----------
g = submit(d, job_doc("long", ["sleep", "6"], team="nlp",
                      resources={"gpus": 1, "gpuModels": ["A100"]}))
wait_state(d, g, ("Running",))
time.sleep(1)
st, r1 = d.json_req("GET", "/v1/report?by=job&from=%d" % T0)
time.sleep(1)
st, r2 = d.json_req("GET", "/v1/report?by=job&from=%d" % T0)
h1 = {x["key"]: x for x in r1["rows"]}.get(str(g), {}).get("gpu_hours", 0)
h2 = {x["key"]: x for x in r2["rows"]}.get(str(g), {}).get("gpu_hours", 0)
tap.ok(h1 > 0 and 0.8 / 3600 < h2 - h1 < 1.5 / 3600,
       "a running job counts up to now (%.6f then %.6f GPU-hours)" % (h1, h2))
d.kill9()
tap.ok(d.restart() is None, "sluiced restarts after kill -9 with the job running")
job = wait_state(d, g, ("Succeeded", "Failed", "Lost"), 60)
tap.is_(job and job.get("state"), "Succeeded", "the re-adopted job finished")
rows = d.store_rows("SELECT start_ms, end_ms FROM usage WHERE job_id = ?", (g,))
tap.ok(len(rows) == 1 and rows[0][1] is not None and
       (rows[0][0], rows[0][1]) == (ms_of(job["started_at"]), ms_of(job["finished_at"])),
       "one interval across the restart, closed when the job ended", rows)
open_rows = d.store_rows("SELECT count(*) FROM usage WHERE end_ms IS NULL")[0][0]
tap.is_(open_rows, 0, "no interval is left open")

# --- budgets ------------------------------------------------------------------
st, body = d.json_req("POST", "/v1/apply", """
apiVersion: sluice/v1
kind: Budget
metadata: {name: vision-tiny}
spec: {team: vision, period: month, gpuHours: 0.001, action: block}
---
apiVersion: sluice/v1
kind: Budget
metadata: {name: nlp-cu}
spec: {team: nlp, period: day, cu: 0.001, action: demote}
---
apiVersion: sluice/v1
kind: Budget
metadata: {name: default-big}
spec: {team: default, period: week, cost: 1000000}
""", ctype="application/yaml")
tap.is_(st, 200, "budgets apply")
st, body = d.json_req("POST", "/v1/apply", """
apiVersion: sluice/v1
kind: Budget
metadata: {name: ghost}
spec: {team: nobody, gpuHours: 1}
""", ctype="application/yaml")
tap.ok(st == 400 and body["error"]["field"] == "spec.team",
       "a budget of an unknown team is refused, naming spec.team", body)
deadline = time.monotonic() + 10
events = []
while time.monotonic() < deadline:
    st, bud = d.json_req("GET", "/v1/budgets")
    events = [(e["budget"], e["threshold_percent"]) for e in bud.get("events", [])]
    if ("vision-tiny", 100) in events and ("nlp-cu", 100) in events:
        break
    time.sleep(0.2)
tap.ok(("vision-tiny", 80) in events and ("vision-tiny", 100) in events,
       "vision's budget has its 80 % and 100 % events", events)
tap.ok(("nlp-cu", 100) in events, "nlp's budget has its 100 % event")
tap.ok(not any(n == "default-big" for n, _ in events), "an unspent budget has none")
bmap = {x["name"]: x for x in bud.get("budgets", [])}
tap.ok(near(bmap.get("vision-tiny", {}).get("used"), expect_team["vision"]["gpu_hours"],
            1e-9), "vision's budget use is its GPU-hours this month")
n_before = len(d.list_jobs())
st, body = d.json_req("POST", "/v1/jobs", job_doc("over", ["true"], team="vision"))
tap.ok(st == 403 and body["error"]["code"] == "budget_exceeded" and
       "vision-tiny" in body["error"]["message"] and body["error"]["field"] == "metadata.team",
       "a spent block budget refuses new jobs, naming it", body)
rc, out, err = cli(d, "run", "--team", "vision", "--", "true")
tap.ok(rc == 2 and "vision-tiny" in err, "sluice run exits 2 and names the budget", err)
tap.is_(len(d.list_jobs()), n_before, "the refused submissions created nothing")
dj = submit(d, job_doc("demoted", ["true"], team="nlp", priorityClass="batch"))
job = wait_state(d, dj, ("Succeeded",), 30)
tap.is_(job and job.get("priority_class"), "best-effort",
        "a spent demote budget makes new jobs best-effort")
st, evs = d.json_req("GET", "/v1/jobs/%d/events" % dj)
tap.ok(any(e.get("type") == "budget" and "nlp-cu" in (e.get("message") or "")
           for e in evs.get("events", [])), "with a budget event naming the budget", evs)
ok_job = submit(d, job_doc("fine", ["true"], team="default"))
tap.ok(ok_job is not None, "a team within its budget submits as before")
rc, out, _ = cli(d, "budgets")
tap.ok(rc == 0 and "vision-tiny" in out and "block" in out and "demote" in out,
       "sluice budgets lists them", out)
before = bmap.get("vision-tiny", {}).get("used")
tap.ok(d.restart() is None, "sluiced restarts")
st, bud = d.json_req("GET", "/v1/budgets")
after = {x["name"]: x for x in bud.get("budgets", [])}.get("vision-tiny", {}).get("used")
tap.ok(near(after, before, 1e-9), "a budget's use is the same after a restart")
st, body = d.json_req("POST", "/v1/jobs", job_doc("still", ["true"], team="vision"))
tap.is_(st, 403, "and it still blocks")

# --- carbon by the hour ----------------------------------------------------------
st, body = d.json_req("POST", "/v1/apply", PRICING.replace(
    "carbon: {intensity: 400}",
    'carbon: {intensity: 400, sites: {here: {intensity: 400, nodes: ["*"]}}}'),
    ctype="application/yaml")
tap.is_(st, 200, "a site covering every node applies")
hour = (T0 // 3600000) * 3600000
csv = "hour,gco2_per_kwh\n" + "".join("%d,100\n" % (hour + i * 3600000) for i in range(-1, 3))
st, body = d.json_req("POST", "/v1/carbon/here", csv, ctype="text/csv")
tap.ok(st == 200 and body.get("hours") == 4, "hourly intensity imports", body)
st, body = d.json_req("POST", "/v1/carbon/here", "2026-12-02T10:30:00Z,100\n",
                      ctype="text/csv")
tap.ok(st == 400 and "line 1" in body["error"]["field"], "an hour not on the hour is refused")
st, rep = d.json_req("GET", "/v1/report?by=team&from=%d&to=%d" % (T0, now))
got = {x["key"]: x for x in rep["rows"]}
tap.ok(near(got.get("vision", {}).get("co2_kg"), expect_team["vision"]["co2_kg"] / 4, 1e-9),
       "carbon at 100 g/kWh from the hourly figures: a quarter of 400")

# --- bad input ----------------------------------------------------------------------
for q, field in (("by=colour", "by"), ("from=yesterday", "from"), ("period=year", "period"),
                 ("from=2026-12-02&to=2026-12-01", "to"), ("share_idle=maybe", "share_idle")):
    st, body = d.json_req("GET", "/v1/report?" + q)
    tap.ok(st == 400 and body["error"]["field"] == field,
           "GET /v1/report?%s is refused naming %s" % (q, field))
rc, out, err = cli(d, "report", "--by", "colour")
tap.ok(rc == 1 and "--by" in err, "sluice report --by colour is a usage error")

tap.done_testing(d)
