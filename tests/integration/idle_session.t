#!/usr/bin/env python3
"""idle_session.t - idle interactive sessions on a real sluiced.

sluiced runs the local executor over the stand-in NVML library
(tests/fakenvml, through SLUICE_NVML_LIB), so that its GPUs report a
utilisation this test sets, with a Pricing whose idle.after is 1 s and
--interactive-idle-timeout 6s. Two interactive jobs run, a client attached
to the first; once the first one's GPU drops to 0 % it is an idle
interactive session: its job object says so (idle, attached), `sluice
jobs` (and -o wide), `sluice show` and `sluice why` show it, it has an
idle_session event, and /metrics counts it. Six seconds after its GPU went
idle it is ended: Cancelled with "interactive session idle for 6s: ended",
its client gets the command's status, the audit log has the cancel (actor
meter). The busy session is neither flagged nor ended."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402
from slws import Attach  # noqa: E402

LIB = os.path.join(SLUICE_BIN, "tests", "libfakenvml.so")
if not os.access(LIB, os.R_OK):
    tap.bail("the stand-in NVML is built", "no %s (make SAN=1 unit)" % LIB)

TIMEOUT_S = 6
# GPU: util %, MiB used, MiB total, mW, C, counter, name
GPUS = [[90, 1000, 81559, 300000, 50, "energy", "NVIDIA H100 80GB HBM3"],
        [90, 1000, 81559, 300000, 50, "energy", "NVIDIA H100 80GB HBM3"]]

work = os.path.join(os.environ.get("TMPDIR", "/tmp"), "sluice-idle-session.%d" % os.getpid())
os.makedirs(os.path.join(work, "powercap"), exist_ok=True)
state = os.path.join(work, "nvml.state")


def write_state():
    with open(state + ".new", "w") as f:
        for g in GPUS:
            f.write(" ".join(str(x) for x in g) + "\n")
    os.replace(state + ".new", state)


write_state()
os.environ["SLUICE_NVML_LIB"] = LIB
os.environ["FAKE_NVML_STATE"] = state
os.environ["SLUICE_POWERCAP_DIR"] = os.path.join(work, "powercap")

d = Sluiced(fake_gpus="none",
            args=["--interactive-idle-timeout", "%ds" % TIMEOUT_S]).start()
st, body = d.json_req("POST", "/v1/apply", """
apiVersion: sluice/v1
kind: Pricing
metadata: {name: default}
spec:
  idle: {utilisation: 0.05, after: 1s}
""", ctype="application/yaml")
tap.is_(st, 200, "a Pricing with idle.after 1s")


def cli(*args):
    env = dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=d.token)
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluice")] + list(args),
                       env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def job(jid):
    return d.request("GET", "/v1/jobs/%d" % jid).json or {}


def wait_for(jid, pred, secs=30):
    deadline = time.monotonic() + secs
    j = job(jid)
    while time.monotonic() < deadline and not pred(j):
        time.sleep(0.05)
        j = job(jid)
    return j


def metric(text, name, **labels):
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape("{%s}" % want) if want else ""),
                  text, re.M)
    return float(m.group(1)) if m else None


def ms_of(ts):
    import calendar
    base, frac = ts.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) * 1000 + int(frac[:3])


ids = []
for name in ("idle-shell", "busy-shell"):
    st, body = d.json_req("POST", "/v1/jobs", job_doc(
        name, ["sh"], interactive=True,
        resources={"gpus": 1, "cpuMilli": 200, "memory": "64Mi"}))
    tap.is_(st, 201, "interactive job %s submitted" % name)
    ids.append(body.get("id") if st == 201 else 0)
idle_id, busy_id = ids
for jid in ids:
    j = wait_for(jid, lambda j: j.get("state") == "Running")
    tap.is_(j.get("state"), "Running", "job %d runs" % jid)
j = job(idle_id)
tap.ok(j.get("idle") is None and j.get("attached") is False,
       "a running session with busy GPUs: not idle, not attached", json.dumps(j))

ws = None
for _ in range(50):
    ws = Attach.open(d.port, idle_id, d.token)
    if ws.status != 503:
        break
    time.sleep(0.1)
tap.is_(ws.status, 101, "a client attaches to the first session")
j = wait_for(idle_id, lambda j: j.get("attached") is True, 5)
tap.is_(j.get("attached"), True, "its job object says a client is attached")

gpu = ((j.get("placement") or [{}])[0].get("gpus") or [0])[0]
GPUS[gpu][0] = 0
write_state()
went_idle_ms = int(time.time() * 1000)
j = wait_for(idle_id, lambda j: j.get("idle") is not None, 10)
idle = j.get("idle") or {}
tap.ok(idle.get("interactive") is True, "its GPU at 0 %: an idle interactive session",
       json.dumps(j))
since = ms_of(idle["since"]) if idle.get("since") else 0
tap.ok(abs(since - went_idle_ms) < 2500, "idle since its GPU went under the threshold",
       "since %s" % idle.get("since"))
tap.ok(idle.get("ends_at") and ms_of(idle["ends_at"]) == since + TIMEOUT_S * 1000,
       "to be ended %d s after that" % TIMEOUT_S, json.dumps(idle))

# Everything below until the session ends runs within the timeout's 6 s
# (less the 1 s of idle.after): the calls take tens of milliseconds each.
code, out, err = cli("jobs")
row = [ln for ln in out.splitlines() if ln.split()[:1] == [str(idle_id)]]
tap.ok(code == 0 and row and "Running (idle session)" in row[0]
       and "idle interactive session" in row[0],
       "sluice jobs marks it an idle session", out + err)
row = [ln for ln in out.splitlines() if ln.split()[:1] == [str(busy_id)]]
tap.ok(row and "idle" not in row[0], "and not the busy one", out)
code, out, err = cli("jobs", "-o", "wide")
row = [ln for ln in out.splitlines() if ln.split()[:1] == [str(idle_id)]]
tap.ok(code == 0 and row and "Running (idle session)" in row[0], "so does -o wide", out + err)
code, out, err = cli("show", str(idle_id))
tap.ok(code == 0 and re.search(r"^State:\s+Running \(idle session\)$", out, re.M)
       and re.search(r"^Idle:\s+idle interactive session: GPUs idle for \d", out, re.M)
       and re.search(r"^Terminal:\s+attached$", out, re.M)
       and re.search(r"idle_session\s.*idle interactive session: its GPUs have been under "
                     r"5 % utilisation", out),
       "sluice show: its state, since when, its client and the idle_session event",
       out + err)
code, out, err = cli("why", str(idle_id))
tap.ok(code == 0 and "is Running" in out and "idle interactive session: GPUs idle" in out
       and "the idle timeout ends it at" in out, "sluice why says it sits idle", out + err)
code, out, err = cli("show", str(busy_id))
tap.ok(code == 0 and re.search(r"^State:\s+Running$", out, re.M)
       and re.search(r"^Terminal:\s+detached$", out, re.M) and "Idle:" not in out,
       "the busy session is neither idle nor attached", out + err)
mt = d.request("GET", "/metrics").body.decode()
tap.is_((metric(mt, "sluice_interactive_sessions", state="idle"),
         metric(mt, "sluice_interactive_sessions", state="active"),
         metric(mt, "sluice_interactive_sessions_attached")), (1.0, 1.0, 1.0),
        "/metrics: one idle session, one active, one attached")

out, status = ws.read_until_status(timeout=TIMEOUT_S + 15)
tap.is_(status, {"exit_code": 129}, "the idle session is hung up: its client gets the "
        "command's status (SIGHUP)")
ws.close()
j = wait_for(idle_id, lambda j: j.get("state") not in ("Pending", "Running"), 15)
tap.is_((j.get("state"), j.get("message")),
        ("Cancelled", "interactive session idle for %ds: ended" % TIMEOUT_S),
        "it ends Cancelled, saying why")
tap.ok(j.get("finished_at") and ms_of(j["finished_at"]) - since >= TIMEOUT_S * 1000,
       "no earlier than the timeout", json.dumps(j))
st, ev = d.json_req("GET", "/v1/jobs/%d/events" % idle_id)
cancels = [e for e in ev.get("events", []) if e.get("type") == "cancel"]
tap.ok(len(cancels) == 1 and cancels[0].get("message", "").startswith(
    "interactive session idle for %ds: ended (SIGHUP" % TIMEOUT_S),
    "a cancel event says so", json.dumps(cancels))
st, au = d.json_req("GET", "/v1/audit?action=job.cancel&object=job:%d" % idle_id)
recs = au.get("records", []) if st == 200 else []
tap.ok(len(recs) == 1 and recs[0].get("actor") == "meter"
       and recs[0].get("details", {}).get("reason") == "interactive-idle-timeout",
       "audited: job.cancel by the meter", json.dumps(au))
mt = d.request("GET", "/metrics").body.decode()
tap.is_((metric(mt, "sluice_interactive_sessions", state="idle"),
         metric(mt, "sluice_interactive_sessions", state="active"),
         metric(mt, "sluice_interactive_sessions_attached")), (0.0, 1.0, 0.0),
        "/metrics: the busy session alone")
j = job(busy_id)
tap.ok(j.get("state") == "Running" and j.get("idle") is None,
       "the busy session runs on", json.dumps(j))

tap.ok(d.cancel_all(), "the busy session is cancelled")
shutil.rmtree(work, ignore_errors=True)
tap.done_testing(d)
