#!/usr/bin/env python3
"""report_csv.t - GET /v1/report?format=csv and /v1/report/utilisation
?format=csv against `sluice report -o csv`, end to end.

A few real jobs of two teams (and two users) run on fake H100 and A100.
Then, over a window that has ended (so that nothing changes between two
requests), the daemon's CSV (fetched with curl) must be byte for byte what
`sluice report ... -o csv` prints for the same parameters, for every `by`,
with and without a period, with chargeback, for a window given as dates,
and for a member (who gets her team only, through either). The answer is
text/csv; charset=utf-8 with a Content-Disposition attachment named after
the report; format=json is the JSON answer, any other format a 400 naming
format. CPU time is priced so high that costs have more digits than the
JSON answer carries: the CSV must say what the JSON says."""

import calendar
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, response_of, tap  # noqa: E402

SETUP = """
apiVersion: sluice/v1
kind: Pricing
metadata: {name: default}
spec:
  currency: EUR
  electricity: {pricePerKWh: 0.25, pue: 1.5}
  gpuModels:
    H100: {cu: 4, price: 35040}
    A100: {cu: 2.5, price: 17520}
  carbon: {intensity: 400}
  # costs of 1e8 and more: 9 decimals of them are past the 15 significant
  # digits the JSON answer carries, so the CSV must be made from the JSON
  # as sent, not from the figures before it is written
  cpu: {pricePerCoreHour: 1e12}
""" + "".join("---\napiVersion: sluice/v1\nkind: Team\nmetadata: {name: %s}\n" % t
              for t in ("vision", "nlp"))


def cli_csv(d, args, token=None):
    """`sluice report ARGS -o csv`: (exit status, stdout bytes, stderr)."""
    env = dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=token or d.token)
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluice"), "report"] + list(args) +
                       ["-o", "csv"], env=env, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def curl(d, path, token=None):
    """GET path with curl: (status, {header: value}, body bytes)."""
    p = subprocess.run(["curl", "-s", "-D", "-", "--max-time", "60", "-H",
                        "Authorization: Bearer " + (token or d.token), d.server + path],
                       capture_output=True, timeout=90)
    r = response_of(p.stdout)
    return r.status, r.headers, r.body


def stamp(ms):
    """Epoch ms as the file name writes it: 20261201T080000Z."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(ms // 1000))


def wait_done(d, jid, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st, job = d.json_req("GET", "/v1/jobs/%d" % jid)
        if st == 200 and job.get("state") in ("Succeeded", "Failed"):
            return job.get("state")
        time.sleep(0.1)
    return None


d = Sluiced(fake_gpus="4xH100,2xA100").start()
r, tokens = d.users([("vera", "vision", "member")], SETUP)
tap.is_(r.status, 200, "the Pricing, teams and a member apply")
vera = tokens.get("vera")

T0 = int(time.time() * 1000) - 1000
jobs = []
doc = job_doc("train", ["sleep", "1"], team="vision",
              resources={"gpus": 2, "gpuModels": ["H100"], "cpus": 2, "memory": "4Gi"})
doc["metadata"]["project"] = "detector"
jobs.append(d.json_req("POST", "/v1/jobs", doc)[1].get("id"))
jobs.append(d.json_req("POST", "/v1/jobs", job_doc(
    "frac", ["sleep", "1"], team="nlp",
    resources={"gpuMilli": 500, "gpuModels": ["A100"], "cpus": 1}))[1].get("id"))
jobs.append(d.json_req("POST", "/v1/jobs", job_doc(
    "cpu", ["sleep", "1"], team="vision", resources={"cpus": 1, "memory": "1Gi"}))[1].get("id"))
st, body = d.json_req("POST", "/v1/jobs", job_doc(
    "mine", ["sleep", "1"], team="vision", resources={"gpus": 1, "gpuModels": ["A100"]}),
    token=vera)
jobs.append(body.get("id") if st == 201 else None)
tap.ok(all(isinstance(j, int) for j in jobs), "four jobs are submitted", jobs)
for j in jobs:
    tap.is_(wait_done(d, j) if j else None, "Succeeded", "job %s succeeded" % j)
T1 = int(time.time() * 1000)
time.sleep(0.2)  # the window [T0, T1) has ended: nothing in it changes now

# --- the same bytes, for every by, period and chargeback ---------------------
cases = []
for by in ("team", "project", "user", "queue", "gpu-model", "node", "job"):
    cases.append((by, None, False))
for by, period in (("team", "day"), ("user", "week"), ("gpu-model", "month")):
    cases.append((by, period, False))
cases.append(("team", None, True))
cases.append(("project", "day", True))
for by, period, charge in cases:
    args = ["--by", by, "--from", str(T0), "--to", str(T1)]
    q = "by=%s&from=%d&to=%d" % (by, T0, T1)
    if period:
        args += ["--period", period]
        q += "&period=" + period
    if charge:
        args.append("--chargeback")
        q += "&share_idle=true"
    what = "by %s%s%s" % (by, ", by " + period if period else "",
                          ", chargeback" if charge else "")
    rc, out, err = cli_csv(d, args)
    st, hdrs, body = curl(d, "/v1/report?" + q + "&format=csv")
    tap.ok(rc == 0 and st == 200 and len(out) > 0 and body == out,
           "%s: GET /v1/report?...&format=csv is byte for byte sluice report -o csv" % what,
           "cli %d %r" % (rc, err), "cli: %r" % out[:600], "api %d: %r" % (st, body[:600]))
    st, rep = d.json_req("GET", "/v1/report?" + q)
    lines = body.split(b"\n")
    tap.ok(st == 200 and len(rep.get("rows", [])) >= 1 and
           len(lines) == len(rep["rows"]) + 2 and lines[-1] == b"" and b"\r" not in body and
           lines[0].startswith(b"key,period,jobs,gpu_hours,cu,"),
           "%s: a header, a line per row of the JSON (%d), LF-ended" %
           (what, len(rep.get("rows", []))), body[:600])

st, hdrs, body = curl(d, "/v1/report?by=team&from=%d&to=%d&format=csv" % (T0, T1))
tap.is_(hdrs.get("content-type"), "text/csv; charset=utf-8", "Content-Type is text/csv")
tap.is_(hdrs.get("content-disposition"),
        'attachment; filename="sluice-report-team-%s-%s.csv"' % (stamp(T0), stamp(T1)),
        "Content-Disposition names the report's by, from and to")
keys = [line.split(b",")[0] for line in body.split(b"\n")[1:-1]]
tap.is_(sorted(keys), [b"nlp", b"vision"], "both teams are in the admin's CSV")
st, hdrs, body = curl(d, "/v1/report?by=gpu-model&from=%d&to=%d&format=csv" % (T0, T1))
tap.is_(hdrs.get("content-disposition"),
        'attachment; filename="sluice-report-gpu-model-%s-%s.csv"' % (stamp(T0), stamp(T1)),
        "and by gpu-model")

# A window given as dates: the CLI sends epoch ms, the browser may send dates.
today = time.strftime("%Y-%m-%d", time.gmtime(T1 / 1000))
tomorrow = time.strftime("%Y-%m-%d", time.gmtime(T1 / 1000 + 86400))
midnight = calendar.timegm(time.strptime(today, "%Y-%m-%d")) * 1000
rc, out, err = cli_csv(d, ["--by", "queue", "--from", today, "--to", str(T1)])
st, hdrs, body = curl(d, "/v1/report?by=queue&from=%s&to=%d&format=csv" % (today, T1))
tap.ok(rc == 0 and st == 200 and body == out,
       "a window from a date: the same bytes (from=%s)" % today, out[:400], body[:400])
tap.is_(hdrs.get("content-disposition"),
        'attachment; filename="sluice-report-queue-%s-%s.csv"' % (stamp(midnight), stamp(T1)),
        "named from midnight")

# --- a member: her team only, through either ----------------------------------
for by in ("team", "user"):
    rc, out, err = cli_csv(d, ["--by", by, "--from", str(T0), "--to", str(T1)], token=vera)
    st, hdrs, body = curl(d, "/v1/report?by=%s&from=%d&to=%d&format=csv" % (by, T0, T1),
                          token=vera)
    tap.ok(rc == 0 and st == 200 and body == out,
           "member, by %s: the same bytes as her sluice report -o csv" % by, err, out, body)
    if by == "team":
        tap.is_([line.split(b",")[0] for line in body.split(b"\n")[1:-1]], [b"vision"],
                "a member's CSV has her team only")
st, hdrs, body = curl(d, "/v1/report?team=nlp&format=csv", token=vera)
tap.ok(st == 403 and hdrs.get("content-type", "").startswith("application/json") and
       json.loads(body)["error"]["field"] == "team",
       "another team's CSV is refused as the JSON is, naming team", st, body)

# --- utilisation ---------------------------------------------------------------
rc, out, err = cli_csv(d, ["--utilisation", "--from", str(T0), "--to", str(T1)])
st, hdrs, body = curl(d, "/v1/report/utilisation?from=%d&to=%d&format=csv" % (T0, T1))
tap.ok(rc == 0 and st == 200 and body == out and
       body.startswith(b"scope,name,gpu_model,gpus,capacity_gpu_hours,"),
       "GET /v1/report/utilisation?...&format=csv is byte for byte sluice report "
       "--utilisation -o csv", err, out[:600], body[:600])
st, u = d.json_req("GET", "/v1/report/utilisation?from=%d&to=%d" % (T0, T1))
lines = body.split(b"\n")[1:-1]
tap.is_(len(lines), len(u.get("nodes", [])) + len(u.get("gpu_models", {})) + 1,
        "a line per node, per GPU model and the total")
tap.is_(hdrs.get("content-type"), "text/csv; charset=utf-8", "as text/csv")
ufrom = calendar.timegm(time.strptime(u.get("from", "")[:19], "%Y-%m-%dT%H:%M:%S")) * 1000
tap.is_(hdrs.get("content-disposition"),
        'attachment; filename="sluice-report-utilisation-%s-%s.csv"' % (stamp(ufrom),
                                                                      stamp(T1)),
        "named utilisation, from the report's (clipped) window")

# --- format --------------------------------------------------------------------
q = "/v1/report?by=team&from=%d&to=%d" % (T0, T1)
plain, explicit, empty = (d.request("GET", q + s) for s in ("", "&format=json", "&format="))
tap.ok(plain.status == 200 and plain.ctype == "application/json" and
       explicit.body == plain.body and empty.body == plain.body,
       "format=json and an empty format are the JSON answer")
for path in ("/v1/report?format=xml", "/v1/report?format=CSV",
             "/v1/report/utilisation?format=text"):
    r = d.request("GET", path)
    tap.ok(r.status == 400 and r.error_code() == "invalid" and r.error_field() == "format",
           "GET %s is 400 invalid naming format" % path, r)

tap.done_testing(d)
