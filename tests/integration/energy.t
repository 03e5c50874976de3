#!/usr/bin/env python3
"""energy.t - measured energy and idle-but-allocated GPUs, end to end.

sluiced runs without --fake-gpus, over the stand-in NVML library
(tests/fakenvml, loaded through SLUICE_NVML_LIB) and a made-up powercap
tree (SLUICE_POWERCAP_DIR) whose package counter this test advances at a
known power, wrapping on the way. The stand-in reports constant power per
GPU, so each job's measured energy is known exactly: the GPUs' watts, times
the job's share of them, times its run time; its CPU energy is the package
watts times its share of the host's CPUs. Both must be in the ledger and in
`sluice report`, marked measured. A job whose GPU sits under the idle
threshold is flagged idle-but-allocated (an "idle" event, the ledger's
idle_ms, unused GPU-hours in the reports); a busy one is not. /metrics
shows the devices' samples."""

import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402

LIB = os.path.join(SLUICE_BIN, "tests", "libfakenvml.so")
if not os.access(LIB, os.R_OK):
    tap.bail("the stand-in NVML is built", "no %s (make SAN=1 unit)" % LIB)

# GPU: util %, MiB used, MiB total, mW, C, counter, name
GPUS = [[90, 30000, 81559, 400000, 60, "energy", "NVIDIA H100 80GB HBM3"],
        [90, 1000, 81559, 120000, 45, "energy", "NVIDIA H100 80GB HBM3"],
        [50, 2000, 40960, 200000, 50, "noenergy", "NVIDIA A100-SXM4-40GB"]]
CPU_W = 60.0                      # the package counter's power
RAPL_RANGE_UJ = 150 * 10**6       # wraps every 2.5 s at 60 W

work = os.path.join(os.environ.get("TMPDIR", "/tmp"), "sluice-energy.%d" % os.getpid())
os.makedirs(os.path.join(work, "powercap", "intel-rapl:0"), exist_ok=True)
state = os.path.join(work, "nvml.state")
pkg = os.path.join(work, "powercap", "intel-rapl:0")


def write_state():
    with open(state + ".new", "w") as f:
        for g in GPUS:
            f.write(" ".join(str(x) for x in g) + "\n")
    os.replace(state + ".new", state)


def write_file(path, text):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


write_state()
write_file(os.path.join(pkg, "name"), "package-0\n")
write_file(os.path.join(pkg, "max_energy_range_uj"), "%d\n" % RAPL_RANGE_UJ)
T0 = time.time()
stop = threading.Event()


def rapl_counter():
    return int(CPU_W * (time.time() - T0) * 1e6) % RAPL_RANGE_UJ


WRITER = {"gap": 0.0}              # the longest the counter file went unwritten


def advance_rapl():
    last = time.monotonic()
    while not stop.is_set():
        write_file(os.path.join(pkg, "energy_uj"), "%d\n" % rapl_counter())
        now = time.monotonic()
        WRITER["gap"] = max(WRITER["gap"], now - last)
        last = now
        stop.wait(0.02)


write_file(os.path.join(pkg, "energy_uj"), "%d\n" % rapl_counter())
threading.Thread(target=advance_rapl, daemon=True).start()

os.environ["SLUICE_NVML_LIB"] = LIB
os.environ["FAKE_NVML_STATE"] = state
os.environ["SLUICE_POWERCAP_DIR"] = os.path.join(work, "powercap")

PRICING = """
apiVersion: sluice/v1
kind: Pricing
metadata: {name: default}
spec:
  gpuModels:
    H100: {cu: 4, price: 35040}
  memory: {wattsPerGiB: 0.5}
  idle: {utilisation: 0.05, after: 1s}
"""


def ms_of(ts):
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
        time.sleep(0.05)
    return job


def submit(d, doc):
    st, body = d.json_req("POST", "/v1/jobs", doc)
    tap.ok(st == 201, "%s submitted (%d)" % (doc["metadata"]["name"], st), json.dumps(body))
    return body.get("id") if isinstance(body, dict) else None


def placement_gpus(job):
    tasks = job.get("placement") or []
    return [g for t in tasks for g in t.get("gpus", [])]


d = Sluiced(fake_gpus="none").start()
st, nodes = d.json_req("GET", "/v1/nodes")
node = (nodes.get("nodes") or [{}])[0] if st == 200 else {}
models = [g.get("model") for g in node.get("gpus", [])]
tap.is_(models, ["H100", "H100", "A100"], "the host's GPUs come from NVML, named short")
tap.ok(node.get("gpus") and node["gpus"][0].get("uuid") == "GPU-fake-0000",
       "with their UUIDs", json.dumps(node.get("gpus")))
host_milli = node.get("cpu_milli") or 1000
st, body = d.json_req("POST", "/v1/apply", PRICING, ctype="application/yaml")
tap.is_(st, 200, "the Pricing applies")

# --- a busy job on both H100 (counter path) and a fraction of the A100 --------
busy = submit(d, job_doc("busy", ["sleep", "3"],
                         resources={"gpus": 2, "gpuModels": ["H100"], "cpus": 1,
                                    "memory": "1Gi"}))
frac = submit(d, job_doc("frac", ["sleep", "2"],
                         resources={"gpuMilli": 500, "gpuModels": ["A100"], "cpus": 1,
                                    "memory": "1Gi"}))
for jid in (busy, frac):
    job = wait_state(d, jid, ("Succeeded", "Failed"), 60)
    tap.is_(job and job.get("state"), "Succeeded", "job %s succeeded" % jid)

# --- an idle job: its GPU goes to 0 % once it runs ----------------------------
idle = submit(d, job_doc("idle", ["sleep", "5"],
                         resources={"gpus": 1, "gpuModels": ["H100"], "cpus": 1}))
job = wait_state(d, idle, ("Running",), 30)
gpus = placement_gpus(job or {})
tap.ok(len(gpus) == 1, "the idle job holds one GPU", json.dumps(job))
idle_gpu = gpus[0] if gpus else 0
GPUS[idle_gpu][0] = 0
write_state()
job = wait_state(d, idle, ("Succeeded", "Failed"), 60)
tap.is_(job and job.get("state"), "Succeeded", "the idle job succeeded")
GPUS[idle_gpu][0] = 90
write_state()

# --- the ledger ------------------------------------------------------------------
rows = {r[0]: r for r in d.store_rows(
    "SELECT job_id, start_ms, end_ms, gpus, gpu_milli, cpu_milli, gpu_energy_j, "
    "cpu_energy_j, util, idle, idle_ms FROM usage ORDER BY id")}


def expect(jid):
    r = rows.get(jid)
    secs = (r[2] - r[1]) / 1000.0
    watts = sum(GPUS[int(g)][3] / 1000.0 for g in str(r[3]).split(";"))
    return r, secs, watts * r[4] / 1000.0 * secs, CPU_W * secs * r[5] / host_milli


for jid, name in ((busy, "busy (2 x H100, energy counter)"),
                  (frac, "frac (0.5 x A100, power only)")):
    r, secs, gpu_j, cpu_j = expect(jid)
    tap.ok(r[6] is not None and abs(r[6] - gpu_j) <= 0.01 * gpu_j + 1,
           "%s: GPU energy measured, %.1f J = watts x share x %.3f s" % (name, gpu_j, secs),
           "ledger: %r" % (r,))
    # the file lags the clock by up to the writer's longest gap (20 ms when
    # the machine is quiet, more under load) at each end of the interval
    share = r[5] / host_milli
    slack = CPU_W * share * (2 * WRITER["gap"] + 0.1)
    tap.ok(r[7] is not None and abs(r[7] - cpu_j) <= 0.03 * cpu_j + slack,
           "%s: CPU energy from RAPL, %.1f J = %g W x its CPU share" % (name, cpu_j, CPU_W),
           "ledger: %r; counter writer's longest gap %.3f s" % (r, WRITER["gap"]))
r = rows.get(busy)
tap.ok(r[8] is not None and abs(r[8] - 0.9) < 0.02, "busy: utilisation 0.9 measured",
       "util %r" % (r[8],))
tap.ok(r[9] == 0 and r[10] == 0, "busy: not flagged idle")
r = rows.get(idle)
tap.ok(r[9] == 1, "idle: flagged idle-but-allocated in the ledger", "row %r" % (r,))
tap.ok(r[10] >= 1000 and r[10] <= r[2] - r[1], "idle: %d ms of its %d ms under the threshold"
       % (r[10], r[2] - r[1]))
tap.ok(r[8] is not None and r[8] < 0.9, "idle: its measured utilisation is low (%.2f)" % r[8])
st, ev = d.json_req("GET", "/v1/jobs/%d/events" % idle)
idles = [e for e in (ev.get("events") or []) if e.get("type") == "idle"] if st == 200 else []
tap.is_(len(idles), 1, "one \"idle\" event")
tap.ok(idles and "5 %" in (idles[0].get("message") or ""), "it names the threshold",
       json.dumps(idles))
st, ev = d.json_req("GET", "/v1/jobs/%d/events" % busy)
tap.ok(st == 200 and not [e for e in ev["events"] if e.get("type") == "idle"],
       "the busy job has no idle event")

# --- the report -------------------------------------------------------------------
rc, out, err = cli(d, "report", "--by", "job", "-o", "json")
tap.ok(rc == 0, "sluice report --by job answers", err)
rep = {int(x["key"]): x for x in json.loads(out or "[]")} if rc == 0 else {}
for jid in (busy, frac):
    r, secs, gpu_j, cpu_j = expect(jid)
    x = rep.get(jid, {})
    kwh = (r[6] + r[7]) / 3.6e6
    tap.ok(x.get("energy_measured") is True, "job %d: energy_measured true" % jid)
    tap.ok(abs(x.get("energy_measured_kwh", -1) - kwh) <= 1e-9,
           "job %d: the measured kWh are the ledger's joules" % jid, json.dumps(x))
    mem_kwh = 1 * secs / 3600 * 0.5 / 1000
    tap.ok(abs(x.get("energy_kwh", -1) - kwh - mem_kwh) <= 1e-9,
           "job %d: energy_kwh adds the memory estimate" % jid, json.dumps(x))
x = rep.get(idle, {})
r = rows.get(idle)
tap.is_(x.get("idle_jobs"), 1, "the idle job is flagged in the report")
tap.ok(abs(x.get("unused_gpu_hours", -1) - r[10] / 3.6e6) <= 1e-9,
       "its unused GPU-hours are its idle time", json.dumps(x))
tap.is_(rep.get(busy, {}).get("unused_gpu_hours"), 0.0, "the busy job has none")
rc, out, err = cli(d, "report", "--utilisation", "-o", "json")
tap.ok(rc == 0, "sluice report --utilisation answers", err)
u = json.loads(out or "{}") if rc == 0 else {}
tot = u.get("total") or {}
tap.ok(abs(tot.get("allocated_unused_gpu_hours", -1) - r[10] / 3.6e6) <= 1e-9,
       "the utilisation report's allocated-but-unused GPU-hours", json.dumps(tot))
tap.ok(tot.get("conserved") is True, "and it still conserves GPU-time")
rc, out, err = cli(d, "report", "--by", "job")
tap.ok(rc == 0 and "measured" in out, "the table says measured", out)

# --- /metrics ---------------------------------------------------------------------
res = d.request("GET", "/metrics")
text = res.body.decode() if res.status == 200 else ""


def metric(name, gpu):
    for line in text.splitlines():
        if line.startswith(name + "{") and 'gpu="%d"' % gpu in line:
            return float(line.rsplit(" ", 1)[1])
    return None


tap.is_(metric("sluice_gpu_power_watts", 0), 400.0, "/metrics: GPU 0 draws 400 W")
tap.is_(metric("sluice_gpu_utilization_ratio", 2), 0.5, "/metrics: GPU 2 is 50 % busy")
tap.is_(metric("sluice_gpu_temperature_celsius", 1), 45.0, "/metrics: GPU 1 at 45 C")
tap.is_(metric("sluice_gpu_memory_used_bytes", 0), 30000.0 * 2**20, "/metrics: memory used")
e0 = metric("sluice_gpu_energy_joules_total", 0)
tap.ok(e0 is not None and abs(e0 - 400 * time.time()) < 400 * 5,
       "/metrics: GPU 0's energy counter", "got %r" % e0)
tap.is_(metric("sluice_gpu_energy_joules_total", 2), None,
        "no energy counter for the GPU without one")
tap.ok("# TYPE sluice_gpu_energy_joules_total counter" in text, "typed a counter")

stop.set()
import shutil  # noqa: E402
shutil.rmtree(work, ignore_errors=True)
tap.done_testing(d)
