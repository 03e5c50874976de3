#!/usr/bin/env python3
"""metrics.t - GET /metrics against a running sluiced, and a real Prometheus
scraping it.

1. sluiced with 4 fake H100s and the simulated executor runs two long jobs
   (1 and 2 GPUs), finishes a short one and keeps one Pending (it asks for
   more GPUs than there are). /metrics answers without a token, in the text
   format 0.0.4, passes `promtool check metrics`, and its figures are those
   of the cluster: GPUs, allocation, jobs by state, finished jobs, queue
   use, placements, scheduling passes, request counters by route pattern.
2. /usr/bin/prometheus scrapes it every second; once the target is up,
   PromQL queries through its HTTP API give the same figures.
Skips part 2 only when /usr/bin/prometheus is absent.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, free_port, job_doc, tap  # noqa: E402

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
CTYPE = "text/plain; version=0.0.4; charset=utf-8"

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, frozenset(labels)): value} and {family: type}."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("not a sample line: %r" % line)
        labels = frozenset(LABEL.findall(m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples, types


def value(samples, name, **labels):
    want = set(labels.items())
    hits = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    return sum(hits) if hits else None


def sim_job(name, gpus, duration):
    doc = job_doc(name, ["sleep", "3600"], resources={"gpus": gpus, "cpus": 0.25})
    doc["metadata"]["labels"] = {"sim-duration": duration}
    return doc


def wait_state(d, jid, state, timeout=30):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        st, body = d.json_req("GET", "/v1/jobs/%d" % jid)
        got = (body or {}).get("state") if st == 200 else None
        if got == state:
            return True
        time.sleep(0.1)
    tap.diag("job %d is %s, not %s" % (jid, got, state))
    return False


def scrape(d):
    t0 = time.monotonic()
    r = d.request("GET", "/metrics", token=None)
    return r, time.monotonic() - t0


# --- 1. the exposition ---------------------------------------------------------

d = Sluiced(fake_gpus="4xH100", args=["--executor", "simulated"]).start()

ids = {}
for name, gpus, dur in (("m-one", 1, "1h"), ("m-two", 2, "1h"), ("m-short", 1, "0s"),
                        ("m-huge", 4, "1h")):
    st, body = d.json_req("POST", "/v1/jobs", sim_job(name, gpus, dur))
    tap.is_(st, 201, "job %s is submitted" % name)
    ids[name] = (body or {}).get("id", 0)
tap.ok(wait_state(d, ids["m-one"], "Running"), "the 1-GPU job runs")
tap.ok(wait_state(d, ids["m-two"], "Running"), "the 2-GPU job runs")
tap.ok(wait_state(d, ids["m-short"], "Succeeded"), "the short job succeeds")
tap.ok(wait_state(d, ids["m-huge"], "Pending", 5), "the 4-GPU job stays Pending: the node is busy for an hour")
d.request("GET", "/v1/no-such-route")
d.request("POST", "/metrics", token=None)

r, took = scrape(d)
tap.is_(r.status, 200, "GET /metrics without a token answers 200")
tap.is_(r.headers.get("content-type"), CTYPE, "in the text exposition format 0.0.4")
text = r.body.decode("utf-8")
tap.diag("scrape: %d bytes in %.1f ms" % (len(r.body), took * 1000))

lint = subprocess.run([PROMTOOL, "check", "metrics"], input=r.body,
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
tap.ok(lint.returncode == 0 and not lint.stdout.strip(),
       "promtool check metrics finds nothing to say",
       lint.stdout.decode("utf-8", "replace")[:2000])

try:
    S, TYPES = parse(text)
except ValueError as e:
    tap.bail("the exposition parses", str(e))

for fam in sorted(TYPES):
    tap.ok(fam.startswith("sluice_"), "family %s is prefixed sluice_" % fam)
tap.ok("# HELP sluice_cluster_gpus " in text, "families carry HELP lines")
tap.is_(TYPES.get("sluice_scheduler_pass_seconds"), "histogram",
        "the scheduling pass duration is a histogram")
tap.is_(TYPES.get("sluice_http_requests_total"), "counter",
        "the request counter is a counter")

tap.is_(value(S, "sluice_up"), 1.0, "sluice_up is 1")
tap.is_(value(S, "sluice_build_info", version="0.1.0"), 1.0, "build info names the version")
tap.ok(abs(value(S, "sluice_start_time_seconds") - time.time()) < 600,
       "the start time is now-ish")
tap.is_(value(S, "sluice_cluster_nodes"), 1.0, "one node")
tap.is_(value(S, "sluice_cluster_gpus"), 4.0, "sluice_cluster_gpus is the fake GPU count")
tap.is_(value(S, "sluice_cluster_gpus_allocated"), 3.0,
        "the running jobs' 3 GPUs are allocated")
tap.is_(value(S, "sluice_node_gpus", model="H100"), 4.0, "the node has 4 H100s")
tap.is_(value(S, "sluice_node_gpus_allocated"), 3.0, "3 of them allocated")
tap.is_(value(S, "sluice_gpu_allocated_ratio"), 3.0,
        "per-GPU allocation adds up to 3 GPUs")
tap.is_(len([k for k in S if k[0] == "sluice_gpu_allocated_ratio"]), 4,
        "one series per GPU")
tap.ok(not [k for k in S if k[0].startswith("sluice_gpu_power")],
       "no power figures: nothing measures them")
tap.ok(value(S, "sluice_cluster_cpus") > 0, "the cluster has CPUs")
tap.ok(value(S, "sluice_cluster_memory_bytes") > 0, "and memory")
tap.is_(value(S, "sluice_jobs", state="Running"), 2.0, "2 jobs Running")
tap.is_(value(S, "sluice_jobs", state="Pending"), 1.0, "1 job Pending")
tap.is_(value(S, "sluice_jobs_finished_total", state="Succeeded"), 1.0,
        "1 job finished Succeeded")
tap.is_(value(S, "sluice_jobs_finished_total", state="Failed"), 0.0,
        "none Failed, and the series is there at 0")
tap.is_(value(S, "sluice_jobs_finished_total", state="Timeout"), 0.0,
        "none Timeout, and the series is there at 0")
tap.is_(value(S, "sluice_queue_used_gpus", queue="default", team="default"), 3.0,
        "the default queue uses 3 GPUs")
tap.is_(value(S, "sluice_queue_jobs", queue="default", state="Running"), 2.0,
        "the default queue runs 2 jobs")
tap.is_(value(S, "sluice_queue_jobs", queue="default", state="Pending"), 1.0,
        "and has 1 pending")
tap.is_(value(S, "sluice_scheduler_placements_total"), 3.0, "3 placements")
tap.is_(value(S, "sluice_scheduler_preemptions_total"), 0.0, "no preemptions")
passes = value(S, "sluice_scheduler_pass_seconds_count")
tap.ok(passes and passes >= 1, "scheduling passes were timed (%s)" % passes)
tap.is_(value(S, "sluice_scheduler_pass_seconds_bucket", le="+Inf"), passes,
        "the +Inf bucket holds every pass")
tap.is_(value(S, "sluice_http_requests_total", method="POST", route="/v1/jobs",
              code="201"), 4.0, "the 4 submissions are counted under POST /v1/jobs 201")
tap.ok((value(S, "sluice_http_requests_total", method="GET", route="/v1/jobs/{id}",
              code="200") or 0) >= 4,
       "job reads are counted under the pattern /v1/jobs/{id}")
tap.ok(not [k for k in S if k[0] == "sluice_http_requests_total"
            and re.search(r"/v1/jobs/\d", dict(k[1]).get("route", ""))],
       "no route label carries a job id")
tap.is_(value(S, "sluice_http_requests_total", route="other", code="404"), 1.0,
        "an unknown path is counted under route other")
tap.is_(value(S, "sluice_http_requests_total", method="POST", route="/metrics",
              code="405"), 1.0, "a POST to /metrics is counted as a 405 of /metrics")
tap.ok(value(S, "sluice_http_request_duration_seconds_count", route="/v1/jobs")
       >= 4, "request durations are recorded per route")

before = value(S, "sluice_http_requests_total", route="/metrics", code="200") or 0
r2, _ = scrape(d)
S2, _ = parse(r2.body.decode("utf-8"))
tap.is_(value(S2, "sluice_http_requests_total", route="/metrics", code="200"),
        before + 1, "the counter of /metrics itself goes up by one per scrape")
st, _ = d.json_req("DELETE", "/v1/jobs/%d" % ids["m-huge"])
tap.is_(st, 202, "the pending job is cancelled")
r3, _ = scrape(d)
S3, _ = parse(r3.body.decode("utf-8"))
tap.is_(value(S3, "sluice_jobs_finished_total", state="Cancelled"), 1.0,
        "it is counted Cancelled")
tap.is_(value(S3, "sluice_jobs", state="Pending"), 0.0, "and no job is Pending")

# Timing: many scrapes back to back on one connection.
t0 = time.monotonic()
for _ in range(50):
    scrape(d)
tap.diag("50 scrapes: %.1f ms each" % ((time.monotonic() - t0) * 1000 / 50))

# --- 2. a real Prometheus ------------------------------------------------------

prom = None
tmp = tempfile.mkdtemp(prefix="sluice-prom.")


def stop_prometheus():
    global prom
    if prom is not None and prom.poll() is None:
        prom.send_signal(signal.SIGTERM)
        try:
            prom.wait(10)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
    prom = None
    shutil.rmtree(tmp, ignore_errors=True)


def prom_get(port, path, **query):
    url = "http://127.0.0.1:%d%s" % (port, path)
    if query:
        url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=10) as f:
        return json.loads(f.read().decode("utf-8"))


def prom_query(port, q):
    """The single value of instant query 'q', or None."""
    try:
        res = prom_get(port, "/api/v1/query", query=q)
    except (OSError, ValueError) as e:
        tap.diag("query %s: %s" % (q, e))
        return None
    data = res.get("data", {}).get("result", [])
    if res.get("status") != "success" or len(data) != 1:
        tap.diag("query %s: %r" % (q, res))
        return None
    return float(data[0]["value"][1])


if not os.access(PROMETHEUS, os.X_OK):
    tap.skip(1, "%s is not installed (Debian package prometheus)" % PROMETHEUS)
    tap.done_testing(d)

import atexit  # noqa: E402
atexit.register(stop_prometheus)
pport = free_port()
with open(os.path.join(tmp, "prom.yml"), "w") as f:
    f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: sluice\n    static_configs:\n"
            "      - targets: ['127.0.0.1:%d']\n" % d.port)
plog = open(os.path.join(tmp, "prometheus.log"), "wb")
prom = subprocess.Popen([PROMETHEUS, "--config.file=" + os.path.join(tmp, "prom.yml"),
                         "--storage.tsdb.path=" + os.path.join(tmp, "data"),
                         "--web.listen-address=127.0.0.1:%d" % pport],
                        stdin=subprocess.DEVNULL, stdout=plog, stderr=plog)
try:
    up, health, deadline = False, None, time.monotonic() + 40
    while time.monotonic() < deadline and prom.poll() is None:
        try:
            t = prom_get(pport, "/api/v1/targets")
            active = t.get("data", {}).get("activeTargets", [])
            health = [a.get("health") for a in active]
            if health == ["up"]:
                up = True
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.25)
    if not tap.ok(up, "Prometheus finds the sluiced target up", "health %r" % health):
        with open(os.path.join(tmp, "prometheus.log"), "rb") as f:
            tap.diag(f.read().decode("utf-8", "replace")[-2000:])
    else:
        tap.is_(prom_query(pport, "sluice_cluster_gpus"), 4.0,
                "PromQL sluice_cluster_gpus is 4")
        tap.is_(prom_query(pport, "sum(sluice_node_gpus)"), 4.0,
                "PromQL sum(sluice_node_gpus) is 4")
        tap.is_(prom_query(pport, 'sum(sluice_node_gpus{model="H100"})'), 4.0,
                "PromQL on a label: the H100s are 4")
        tap.is_(prom_query(pport, "sluice_cluster_gpus_allocated"), 3.0,
                "PromQL sluice_cluster_gpus_allocated is 3")
        tap.is_(prom_query(pport, 'sluice_jobs{state="Running"}'), 2.0,
                "PromQL sluice_jobs{state=\"Running\"} is 2")
        tap.is_(prom_query(pport, 'sum by (queue) (sluice_queue_used_gpus{queue="default"})'),
                3.0, "PromQL: the default queue uses 3 GPUs")
        # Three GPUs held all along: the team's GPU-second counter grows at
        # 3 per second (irate: the last two scrapes; rate would divide a
        # window not yet full).
        rate = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rate = prom_query(pport, 'irate(sluice_team_gpu_seconds_total{team="default"}[5s])')
            if rate is not None:
                break
            time.sleep(0.5)
        tap.ok(rate is not None and 2.7 <= rate <= 3.3,
               "PromQL: team default uses GPU-seconds at 3 per second (%r)" % rate)
        tap.ok(prom_query(pport, "histogram_quantile(0.99, sum by (le) "
                                 "(sluice_scheduler_pass_seconds_bucket))") is not None,
               "PromQL histogram_quantile over the pass histogram answers")
finally:
    stop_prometheus()
tap.done_testing(d)
