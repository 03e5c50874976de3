#!/usr/bin/env python3
"""slurm_replay.py - the replaying and measuring half of bench/slurm_replay.sh
(read its header for what is measured and why).

Modes:

  plan TRACE FROM N SPAN LOAD MAXDUR PLAN.json
        take the first N jobs of 1..8 GPUs of the Helios trace at or after
        row u_id FROM; compress their durations and arrivals (below); write
        the plan and print what it is ("REPLAY plan ..." lines)
  teams PLAN.json          print the Sluice manifests (Team, Queue, Cohort,
                           Scheduler) for the plan's teams
  slurm PLAN.json OUT.json replay the plan with sbatch (Slurm schedules)
  sluice PLAN.json URL OUT.json
                           replay the plan through Sluice's API
  report PLAN.json A.json B.json
                           the figures of both, side by side

Compression. A job's duration is run_time / C clipped to [1 s, MAXDUR], C
found by bisection so that the GPU-seconds of the window come to
24 GPUs x SPAN x LOAD; the submit times keep the trace's gaps, scaled so
that the window's arrivals span SPAN seconds. The offered load over the
arrival span is then LOAD times the lab's 24 GPUs.

Every job runs `date +%s%N > S; sleep D; date +%s%N > E` with S and E files
of its own under $LAB_SHARED/replay, so that start and end are the job's
own, not Slurm's whole seconds or a poll's. Standard library only.
"""
import concurrent.futures
import csv
import http.client
import json
import math
import os
import subprocess
import sys
import threading
import time
import urllib.parse

GPUS = 24          # the lab: 3 nodes x 8 GPUs
TEAMS = 4
TAU = float(os.environ.get("BENCH_REPLAY_TAU", "2"))   # bounded slowdown's floor, s
SUBMITTERS = 8     # concurrent submissions at most (bursts of the trace)
CPUS_PER_GPU = 2   # a lab node's 16 CPUs over its 8 GPUs, as jobs ask on real clusters


def say(key, **kv):
    print("REPLAY " + key + " " + " ".join("%s=%s" % (k, v) for k, v in kv.items()), flush=True)


def die(msg):
    print("slurm_replay.py: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def pct(xs, p):
    """The nearest-rank percentile p of xs."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1))]


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def team_of(user):
    return "team%d" % (user % TEAMS)


# ---- the plan --------------------------------------------------------------

def plan(trace, first, n, span, load, maxdur, out):
    jobs, t = [], 0
    with open(trace, newline="") as f:
        for r in csv.DictReader(f):
            t += int(r["interval"])
            g = int(r["gpu_num"])
            if int(r["u_id"]) < first or not 1 <= g <= 8:
                continue
            jobs.append({"u_id": int(r["u_id"]), "user": int(r["user"]), "gpus": g,
                         "trace_t": t, "trace_run": int(r["run_time"]),
                         "status": r["new_status"]})
            if len(jobs) == n:
                break
    if len(jobs) < n:
        die("the trace has only %d jobs of 1..8 GPUs from u_id %d" % (len(jobs), first))

    def work(c):
        return sum(j["gpus"] * min(maxdur, max(1.0, j["trace_run"] / c)) for j in jobs)

    target = GPUS * span * load
    lo, hi = 1e-3, 1e9          # work(lo) is the most, work(hi) the least
    if work(hi) > target:
        die("even at 1 s per job the window holds %.0f GPU-s, more than %.0f: "
            "raise BENCH_REPLAY_SPAN or lower BENCH_REPLAY_JOBS" % (work(hi), target))
    if work(lo) < target:
        die("even at %g s per job the window holds %.0f GPU-s, less than %.0f: "
            "raise BENCH_REPLAY_MAXDUR" % (maxdur, work(lo), target))
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if work(mid) > target:
            lo = mid
        else:
            hi = mid
    c = hi
    t0, t1 = jobs[0]["trace_t"], jobs[-1]["trace_t"]
    ca = (t1 - t0) / span if t1 > t0 else 1.0
    clipped_hi = clipped_lo = 0
    for i, j in enumerate(jobs):
        j["idx"] = i
        j["team"] = team_of(j["user"])
        d = j["trace_run"] / c
        clipped_hi += d > maxdur
        clipped_lo += d < 1.0
        j["dur"] = round(min(maxdur, max(1.0, d)), 2)
        j["at"] = round((j["trace_t"] - t0) / ca, 3)
        # Slurm keeps time limits in whole minutes: both sides get this one.
        j["limit_min"] = int(math.ceil((j["dur"] + 10) / 60.0))
    p = {"trace": trace, "from_u_id": first, "to_u_id": jobs[-1]["u_id"], "jobs": jobs,
         "span": span, "load": load, "maxdur": maxdur, "dur_compression": c,
         "arrival_compression": ca, "work_gpu_s": work(c),
         "trace_span_s": t1 - t0, "clipped_max": clipped_hi, "clipped_min": clipped_lo}
    with open(out, "w") as f:
        json.dump(p, f)
    sizes = {}
    for j in jobs:
        sizes[j["gpus"]] = sizes.get(j["gpus"], 0) + 1
    teams = {}
    for j in jobs:
        t = teams.setdefault(j["team"], [0, 0.0, set()])
        t[0] += 1
        t[1] += j["gpus"] * j["dur"]
        t[2].add(j["user"])
    say("plan", jobs=n, u_id="%d..%d" % (first, jobs[-1]["u_id"]),
        trace_hours="%.1f" % ((t1 - t0) / 3600.0),
        arrivals_compressed="%.0fx" % ca, durations_compressed="%.0fx" % c,
        span_s=span, offered_load="%.2f" % (work(c) / (GPUS * span)),
        gpu_s="%.0f" % work(c), clipped_to_max=clipped_hi, raised_to_1s=clipped_lo,
        maxdur_s=maxdur)
    say("plan_sizes", **{"gpus%d" % k: v for k, v in sorted(sizes.items())})
    for name, (cnt, w, us) in sorted(teams.items()):
        say("plan_team", team=name, jobs=cnt, gpu_s="%.0f" % w, users=len(us))


def teams(planfile):
    with open(planfile) as f:
        p = json.load(f)
    names = sorted({j["team"] for j in p["jobs"]} | {"team%d" % i for i in range(TEAMS)})
    nominal = GPUS // len(names)
    docs = ["apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: replay}\n",
            "apiVersion: sluice/v1\nkind: Scheduler\nmetadata: {name: default}\n"
            "spec: {placement: fgd, backfill: true, preemption: {enabled: false}}\n"]
    for t in names:
        docs.append("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: %s}\n"
                    "spec: {defaultQueue: %s}\n" % (t, t))
        docs.append("apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: %s}\n"
                    "spec: {team: %s, cohort: replay, nominal: {gpus: %d}}\n" % (t, t, nominal))
    sys.stdout.write("---\n".join(docs))


# ---- replaying -------------------------------------------------------------

STAMPS = os.path.join(os.environ.get("LAB_SHARED", "/nonexistent"), "replay")


def job_cmd(tag, j):
    base = os.path.join(STAMPS, "%s.%d" % (tag, j["idx"]))
    return "date +%%s%%N > %s.s; sleep %.2f; date +%%s%%N > %s.e" % (base, j["dur"], base)


def read_stamp(tag, idx, which):
    try:
        with open(os.path.join(STAMPS, "%s.%d.%s" % (tag, idx, which))) as f:
            return int(f.read().strip()) / 1e9
    except (OSError, ValueError):
        return None


def replay(jobs, submit_one, tag):
    """Submit each job at its time (from a start a second from now), up to
    SUBMITTERS at once; returns {idx: submit time} (when the call began)
    and {idx: the submit's answer}."""
    os.makedirs(STAMPS, exist_ok=True)
    os.chmod(STAMPS, 0o1777)
    submitted, answers, lock = {}, {}, threading.Lock()
    t0 = time.time() + 1.0

    def one(j):
        ts = time.time()
        a = submit_one(j)
        with lock:
            submitted[j["idx"]] = ts
            answers[j["idx"]] = a

    with concurrent.futures.ThreadPoolExecutor(SUBMITTERS) as ex:
        futs = []
        for j in jobs:
            d = t0 + j["at"] - time.time()
            if d > 0:
                time.sleep(d)
            futs.append(ex.submit(one, j))
        for f in futs:
            f.result()
    lags = [submitted[j["idx"]] - (t0 + j["at"]) for j in jobs]
    say("submitted", side=tag, jobs=len(jobs), lag_mean_ms="%.0f" % (1000 * mean(lags)),
        lag_max_ms="%.0f" % (1000 * max(lags)))
    return t0, submitted, answers


def wait_ends(tag, jobs, deadline, alive=None):
    while True:
        missing = [j["idx"] for j in jobs if read_stamp(tag, j["idx"], "e") is None]
        if not missing:
            return []
        if time.time() > deadline or (alive is not None and not alive(missing)):
            return missing
        time.sleep(0.5)


def collect(tag, jobs, t0, submitted, extra):
    rows = []
    for j in jobs:
        rows.append({"idx": j["idx"], "team": j["team"], "gpus": j["gpus"], "dur": j["dur"],
                     "submit": submitted.get(j["idx"]),
                     "start": read_stamp(tag, j["idx"], "s"),
                     "end": read_stamp(tag, j["idx"], "e")})
    out = {"side": tag, "t0": t0, "jobs": rows}
    out.update(extra)
    return out


def sbatch(j):
    argv = ["sbatch", "--parsable", "-p", "main", "-J", "replay-%d" % j["idx"],
            "--gres=gpu:%d" % j["gpus"], "--cpus-per-task=%d" % (CPUS_PER_GPU * j["gpus"]),
            "--mem=64",
            "--time=%d" % j["limit_min"], "--account=%s" % j["team"],
            "-o", "/dev/null", "--no-requeue", "--wrap", job_cmd("A", j)]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        return "error: " + r.stderr.strip()
    return r.stdout.strip().split(";")[0]


def squeue_ids(ids):
    r = subprocess.run(["squeue", "-h", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING",
                        "-o", "%i"], capture_output=True, text=True)
    return set(r.stdout.split()) & set(ids)


def slurm(planfile, out):
    with open(planfile) as f:
        p = json.load(f)
    jobs = p["jobs"]
    t0, submitted, answers = replay(jobs, sbatch, "A")
    bad = {i: a for i, a in answers.items() if a.startswith("error")}
    if bad:
        die("sbatch refused %d jobs, e.g. %s" % (len(bad), next(iter(bad.values()))))
    ids = list(answers.values())
    deadline = time.time() + 4 * (p["work_gpu_s"] / GPUS) + 300
    # The priority factors Slurm gives the waiting jobs, sampled every 10 s
    # (sprio: age, fair share, job size), to show which of them count.
    prio = {"samples": 0, "jobs": 0, "age": [], "fairshare": [], "jobsize": []}
    last = [0.0]

    def alive(_missing):
        if time.time() - last[0] >= 10:
            last[0] = time.time()
            r = subprocess.run(["sprio", "-h", "-o", "%i %A %F %J"],
                               capture_output=True, text=True)
            prio["samples"] += 1
            for line in r.stdout.splitlines():
                f = line.split()
                if len(f) == 4:
                    prio["jobs"] += 1
                    for k, v in zip(("age", "fairshare", "jobsize"), f[1:]):
                        prio[k].append(float(v))
        return bool(squeue_ids(ids))

    missing = wait_ends("A", jobs, deadline, alive)
    if prio["jobs"]:
        say("sprio", samples=prio["samples"], waiting_jobs_seen=prio["jobs"],
            age="%g..%g" % (min(prio["age"]), max(prio["age"])),
            fairshare="%g..%g" % (min(prio["fairshare"]), max(prio["fairshare"])),
            jobsize="%g..%g" % (min(prio["jobsize"]), max(prio["jobsize"])))
    if missing:
        time.sleep(2)
        missing = [i for i in missing if read_stamp("A", i, "e") is None]
    if missing:
        die("Slurm side: %d jobs never wrote their end (e.g. job %d, Slurm id %s)"
            % (len(missing), missing[0], answers[missing[0]]))
    with open(out, "w") as f:
        json.dump(collect("A", jobs, t0, submitted, {"sprio": prio}), f)


class Api:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.token = os.environ.get("SLUICE_TOKEN", "")
        self.local = threading.local()

    def call(self, method, path, body=None):
        for attempt in range(3):
            try:
                conn = getattr(self.local, "conn", None)
                if conn is None:
                    conn = self.local.conn = http.client.HTTPConnection(self.host, self.port,
                                                                        timeout=60)
                hdr = {"Authorization": "Bearer " + self.token}
                data = None
                if body is not None:
                    data = json.dumps(body).encode()
                    hdr["Content-Type"] = "application/json"
                conn.request(method, path, data, hdr)
                r = conn.getresponse()
                payload = r.read()
                return r.status, json.loads(payload) if payload else None
            except (http.client.HTTPException, OSError):
                self.local.conn = None
                if attempt == 2:
                    raise


def sluice(planfile, url, out):
    with open(planfile) as f:
        p = json.load(f)
    jobs = p["jobs"]
    api = Api(url)

    def submit(j):
        doc = {"apiVersion": "sluice/v1", "kind": "Job",
               "metadata": {"name": "replay-%d" % j["idx"], "team": j["team"]},
               "spec": {"command": ["sh", "-c", job_cmd("B", j)],
                        "resources": {"gpus": j["gpus"], "cpus": CPUS_PER_GPU * j["gpus"],
                                      "memory": "64Mi"},
                        "maxRuntime": "%ds" % (60 * j["limit_min"])}}
        st, body = api.call("POST", "/v1/jobs", doc)
        if st != 201:
            return "error: %s %s" % (st, body)
        return body["id"]

    t0, submitted, answers = replay(jobs, submit, "B")
    bad = {i: a for i, a in answers.items() if isinstance(a, str)}
    if bad:
        die("Sluice refused %d jobs, e.g. %s" % (len(bad), next(iter(bad.values()))))
    deadline = time.time() + 4 * (p["work_gpu_s"] / GPUS) + 300

    def alive(_missing):
        st, body = api.call("GET", "/v1/jobs?state=pending,running&limit=1")
        return st == 200 and bool(body["jobs"])

    missing = wait_ends("B", jobs, deadline, alive)
    if missing:
        time.sleep(2)
        missing = [i for i in missing if read_stamp("B", i, "e") is None]
    # The end a job wrote is ahead of Sluice's seeing it (the next poll).
    t_end = time.time() + 60
    while alive(None) and time.time() < t_end:
        time.sleep(0.5)
    states = {}
    for j in jobs:
        st, body = api.call("GET", "/v1/jobs/%d" % answers[j["idx"]])
        s = body.get("state") if st == 200 else "?"
        states[s] = states.get(s, 0) + 1
        if s != "Succeeded" and j["idx"] not in missing:
            missing.append(j["idx"])
    if missing:
        die("Sluice side: %d jobs did not succeed (states %s; e.g. job %d, Sluice id %s)"
            % (len(missing), states, missing[0], answers[missing[0]]))
    with open(out, "w") as f:
        json.dump(collect("B", jobs, t0, submitted, {"states": states}), f)


# ---- the figures -------------------------------------------------------------

def figures(res):
    rows = res["jobs"]
    t_first = min(r["submit"] for r in rows)
    t_last = max(r["end"] for r in rows)
    makespan = t_last - t_first
    waits = [r["start"] - r["submit"] for r in rows]
    held = sum(r["gpus"] * (r["end"] - r["start"]) for r in rows)
    buckets = []
    for k in range(10):
        a = t_first + makespan * k / 10.0
        b = t_first + makespan * (k + 1) / 10.0
        g = sum(r["gpus"] * max(0.0, min(b, r["end"]) - max(a, r["start"])) for r in rows)
        buckets.append(100.0 * g / (GPUS * (b - a)))
    per_team = {}
    for r in rows:
        run = r["end"] - r["start"]
        bsld = max(1.0, (r["end"] - r["submit"]) / max(run, TAU))
        t = per_team.setdefault(r["team"], {"wait": [], "bsld": []})
        t["wait"].append(r["start"] - r["submit"])
        t["bsld"].append(bsld)
    xs = [mean(t["bsld"]) for t in per_team.values()]
    jain = sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))
    big = [r["start"] - r["submit"] for r in rows if r["gpus"] == 8]
    small = [r["start"] - r["submit"] for r in rows if r["gpus"] < 8]
    return {"makespan": makespan, "wait_mean": mean(waits), "wait_p95": pct(waits, 95),
            "wait_max": max(waits), "alloc": 100.0 * held / (GPUS * makespan),
            "timeline": buckets, "jain": jain, "teams": per_team,
            "wait8_mean": mean(big), "wait_small_mean": mean(small), "n8": len(big),
            "bsld_mean": mean([max(1.0, (r["end"] - r["submit"]) / max(r["end"] - r["start"], TAU))
                               for r in rows])}


def report(planfile, afile, bfile):
    with open(afile) as f:
        a = figures(json.load(f))
    with open(bfile) as f:
        b = figures(json.load(f))

    def ratio(x, y):
        return "%.2fx" % (x / y) if y else "-"

    def line(label, x, y, fmt, better=""):
        print("%-36s %14s %14s %9s %s" % (label, fmt % x, fmt % y, ratio(x, y), better))

    print("%-36s %14s %14s %9s" % ("", "Slurm alone", "Sluice", "Slurm/Sluice"))
    line("makespan (s)", a["makespan"], b["makespan"], "%.1f", "(lower is better)")
    line("wait, mean (s)", a["wait_mean"], b["wait_mean"], "%.2f", "(lower is better)")
    line("wait, p95 (s)", a["wait_p95"], b["wait_p95"], "%.2f", "(lower is better)")
    line("wait, max (s)", a["wait_max"], b["wait_max"], "%.2f")
    line("wait of 8-GPU jobs, mean (s)", a["wait8_mean"], b["wait8_mean"], "%.2f",
         "(%d jobs)" % a["n8"])
    line("wait of 1..7-GPU jobs, mean (s)", a["wait_small_mean"], b["wait_small_mean"], "%.2f")
    line("bounded slowdown, mean", a["bsld_mean"], b["bsld_mean"], "%.2f", "(tau %g s)" % TAU)
    line("GPU allocation (% of 24 x makespan)", a["alloc"], b["alloc"], "%.1f",
         "(higher is better)")
    line("Jain's index, teams' mean slowdown", a["jain"], b["jain"], "%.3f", "(1 = fair)")
    print("GPU allocation per tenth of makespan (%):")
    print("  Slurm alone : " + " ".join("%3.0f" % x for x in a["timeline"]))
    print("  Sluice      : " + " ".join("%3.0f" % x for x in b["timeline"]))
    print("per team: jobs, mean wait (s), mean bounded slowdown   Slurm alone | Sluice")
    for t in sorted(a["teams"]):
        ta, tb = a["teams"][t], b["teams"][t]
        print("  %-8s %4d   %7.2f %7.2f   | %7.2f %7.2f" % (
            t, len(ta["wait"]), mean(ta["wait"]), mean(ta["bsld"]),
            mean(tb["wait"]), mean(tb["bsld"])))
    for side, f in (("A", a), ("B", b)):
        say("figures", side=side, makespan_s="%.1f" % f["makespan"],
            wait_mean_s="%.2f" % f["wait_mean"], wait_p95_s="%.2f" % f["wait_p95"],
            alloc_pct="%.1f" % f["alloc"], jain="%.3f" % f["jain"])


def main():
    m = sys.argv[1] if len(sys.argv) > 1 else ""
    a = sys.argv[2:]
    if m == "plan" and len(a) == 7:
        plan(a[0], int(a[1]), int(a[2]), float(a[3]), float(a[4]), float(a[5]), a[6])
    elif m == "teams" and len(a) == 1:
        teams(a[0])
    elif m == "slurm" and len(a) == 2:
        slurm(a[0], a[1])
    elif m == "sluice" and len(a) == 3:
        sluice(a[0], a[1], a[2])
    elif m == "report" and len(a) == 3:
        report(a[0], a[1], a[2])
    else:
        die("usage: plan|teams|slurm|sluice|report ... (see the header)")


if __name__ == "__main__":
    main()
