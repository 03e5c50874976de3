#!/usr/bin/env python3
"""slurm_e2e.py - the measuring half of bench/slurm_e2e.sh (read its header).

Modes (each prints "E2E key=value ..." lines that slurm_e2e.sh collects):

  plain N CLIENTS          N trivial 1-GPU jobs through sbatch, CLIENTS at a
                           time; first submit to last completion
  sluice N CLIENTS URL [KEY TAG]
                           the same through Sluice's API (Slurm executor),
                           printed as KEY (sluice), stamps tagged TAG (s)
  latency N URL            decision-to-running of N jobs placed one at a time
  pinhold N                sbatch pinned (-w, typed GRES) against sbatch
                           --hold + scontrol release: submit/release to the
                           job's first command, N of each, one at a time
  pollcost                 one poll of the job states, each way, with the
                           jobs Slurm holds now

Every job writes its own start time (date +%s%N) to $LAB_SHARED/t/<tag>.<id>
so that start times are not limited by Slurm's 1 s timestamps. Standard
library only.
"""
import concurrent.futures
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse

SHARED = os.environ["LAB_SHARED"]
STAMPS = os.path.join(SHARED, "t")
TOKEN = os.environ.get("SLUICE_TOKEN", "")


def say(key, **kv):
    print("E2E " + key + " " + " ".join("%s=%s" % (k, v) for k, v in kv.items()), flush=True)


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def stamp(tag, key):
    try:
        with open(os.path.join(STAMPS, "%s.%s" % (tag, key))) as f:
            return int(f.read().strip()) / 1e6  # ms
    except (OSError, ValueError):
        return None


def stamp_cmd(tag, var):
    return "date +%%s%%N > %s/%s.$%s" % (STAMPS, tag, var)


def jobcomp_count(ids):
    n = 0
    try:
        with open(os.environ["LAB_JOBCOMP"]) as f:
            for line in f:
                if line.startswith("JobId=") and line[6:].split(" ", 1)[0] in ids:
                    n += 1
    except OSError:
        pass
    return n


# ---- plain Slurm -------------------------------------------------------------

def sbatch(args):
    r = subprocess.run(["sbatch", "--parsable"] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("sbatch: " + r.stderr.strip())
    return r.stdout.strip().split(";")[0]


def plain(n, clients):
    args = ["-p", "main", "--gres=gpu:1", "--mem=64", "--cpus-per-task=1", "-o", "/dev/null",
            "--no-requeue", "--wrap", stamp_cmd("p", "SLURM_JOB_ID")]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(clients) as ex:
        ids = set(ex.map(lambda _: sbatch(args), range(n)))
    t_sub = time.time()
    while jobcomp_count(ids) < n:
        if time.time() - t0 > 3600:
            raise RuntimeError("plain: not all jobs ended within an hour")
        time.sleep(0.2)
    t_end = time.time()
    starts = [stamp("p", i) for i in ids]
    say("plain", jobs=n, clients=clients, submit_s="%.2f" % (t_sub - t0),
        total_s="%.2f" % (t_end - t0), jobs_per_s="%.2f" % (n / (t_end - t0)),
        started=sum(1 for s in starts if s))


# ---- Sluice ------------------------------------------------------------------

class Api:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.conn = None

    def call(self, method, path, body=None):
        for attempt in range(3):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                hdr = {"Authorization": "Bearer " + TOKEN}
                data = None
                if body is not None:
                    data = json.dumps(body).encode()
                    hdr["Content-Type"] = "application/json"
                self.conn.request(method, path, data, hdr)
                r = self.conn.getresponse()
                payload = r.read()
                return r.status, json.loads(payload) if payload else None
            except (http.client.HTTPException, OSError):
                self.conn = None
                if attempt == 2:
                    raise


def job_doc(cmd):
    return {"apiVersion": "sluice/v1", "kind": "Job", "metadata": {"name": "e2e"},
            "spec": {"command": ["sh", "-c", cmd],
                     "resources": {"gpus": 1, "cpus": 1, "memory": "64Mi"}}}


def submit_many(url, n, cmd):
    api = Api(url)
    ids = []
    for _ in range(n):
        st, body = api.call("POST", "/v1/jobs", job_doc(cmd))
        if st != 201:
            raise RuntimeError("submit: %s %s" % (st, body))
        ids.append(body["id"])
    return ids


def all_jobs(url):
    api, out, after = Api(url), [], 0
    while True:
        st, body = api.call("GET", "/v1/jobs?state=all&limit=10000&after=%d" % after)
        out += body["jobs"]
        if not body.get("next"):
            return out
        after = body["next"]


def ms(t):
    """An RFC 3339 UTC time of the API, in ms since the epoch."""
    import datetime
    d = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ")
    return d.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000.0


def submissions(path):
    """{Sluice job id: (its submission's start in ms since the epoch, its duration
    in ms)} of the first submission of each, from sluiced's debug log (the executor's
    "submitted" lines); {} without one."""
    out = {}
    if not path:
        return out
    with open(path) as f:
        for line in f:
            if "slurm executor: submitted" not in line:
                continue
            kv = dict(w.split("=", 1) for w in line.split() if "=" in w and '"' not in w)
            out.setdefault(int(kv["job"]), (int(kv["at_ms"]), int(kv["submit_ms"])))
    return out


def sluice(n, clients, url, key="sluice", tag="s"):
    cmd = stamp_cmd(tag, "SLUICE_JOB_ID")
    t0 = time.time()
    per = [n // clients + (1 if i < n % clients else 0) for i in range(clients)]
    with concurrent.futures.ThreadPoolExecutor(clients) as ex:
        ids = [i for part in ex.map(lambda k: submit_many(url, k, cmd), per) for i in part]
    t_sub = time.time()
    api = Api(url)
    while True:
        st, body = api.call("GET", "/v1/jobs?state=pending,running&limit=1")
        if st == 200 and not body["jobs"]:
            break
        if time.time() - t0 > 3600:
            raise RuntimeError("sluice: not all jobs ended within an hour")
        time.sleep(0.2)
    t_end = time.time()
    jobs = {j["id"]: j for j in all_jobs(url)}
    ok = sum(1 for i in ids if jobs[i]["state"] == "Succeeded")
    for i in [i for i in ids if jobs[i]["state"] != "Succeeded"][:5]:
        print("# job %s ended %s: %s" % (i, jobs[i]["state"], jobs[i].get("message", "")),
              flush=True)
    subs = submissions(os.environ.get("E2E_SLUICED_LOG", ""))
    queue, d2r, tail, to_submit, in_submit, in_slurm = [], [], [], [], [], []
    for i in ids:
        j = jobs[i]
        s = stamp(tag, i)
        if not j.get("started_at") or not j.get("finished_at") or s is None:
            continue
        sub, start, fin = ms(j["submitted_at"]), ms(j["started_at"]), ms(j["finished_at"])
        queue.append(start - sub)
        d2r.append(s - start)
        tail.append(fin - s)
        if i in subs:
            at, took = subs[i]
            to_submit.append(at - start)
            in_submit.append(took)
            in_slurm.append(s - at - took)
    say(key, jobs=n, clients=clients, submit_s="%.2f" % (t_sub - t0),
        total_s="%.2f" % (t_end - t0), jobs_per_s="%.2f" % (n / (t_end - t0)), succeeded=ok,
        wait_in_sluice_mean_ms="%.0f" % statistics.mean(queue),
        decision_to_running_p50_ms="%.0f" % pct(d2r, 50),
        decision_to_running_p99_ms="%.0f" % pct(d2r, 99),
        running_to_end_seen_mean_ms="%.0f" % statistics.mean(tail),
        decision_to_submit_p50_ms="%.0f" % pct(to_submit, 50),
        submit_p50_ms="%.0f" % pct(in_submit, 50),
        submit_to_running_p50_ms="%.0f" % pct(in_slurm, 50))


def latency(n, url):
    cmd = stamp_cmd("l", "SLUICE_JOB_ID")
    api, d2r = Api(url), []
    for _ in range(n):
        st, body = api.call("POST", "/v1/jobs", job_doc(cmd))
        if st != 201:
            raise RuntimeError("submit: %s %s" % (st, body))
        jid = body["id"]
        t0 = time.time()
        while True:
            st, j = api.call("GET", "/v1/jobs/%d" % jid)
            if j["state"] in ("Succeeded", "Failed", "Lost", "Cancelled", "Timeout"):
                break
            if time.time() - t0 > 120:
                raise RuntimeError("latency: job %d did not end" % jid)
            time.sleep(0.05)
        s = stamp("l", jid)
        if s is not None and j.get("started_at"):
            d2r.append(s - ms(j["started_at"]))
    say("latency", jobs=n, samples=len(d2r), p50_ms="%.0f" % pct(d2r, 50),
        p99_ms="%.0f" % pct(d2r, 99), max_ms="%.0f" % max(d2r))


# ---- pinned against held + release -------------------------------------------

def wait_stamp(tag, key, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        s = stamp(tag, key)
        if s is not None:
            return s
        time.sleep(0.01)
    return None


def pinhold(n):
    common = ["-p", "main", "-w", "n2", "--gres=gpu:g3:1", "--mem=64", "--cpus-per-task=1",
              "-o", "/dev/null", "--no-requeue"]
    pinned, held = [], []
    for _ in range(n):
        t = time.time() * 1000
        jid = sbatch(common + ["--wrap", stamp_cmd("h", "SLURM_JOB_ID")])
        s = wait_stamp("h", jid)
        if s:
            pinned.append(s - t)
        wait_gone(jid)
        jid = sbatch(common + ["--hold", "--wrap", stamp_cmd("h", "SLURM_JOB_ID")])
        t = time.time() * 1000
        subprocess.run(["scontrol", "release", jid], check=True)
        s = wait_stamp("h", jid)
        if s:
            held.append(s - t)
        wait_gone(jid)
    say("pinhold", samples=n, pinned_p50_ms="%.0f" % pct(pinned, 50),
        pinned_p99_ms="%.0f" % pct(pinned, 99), held_release_p50_ms="%.0f" % pct(held, 50),
        held_release_p99_ms="%.0f" % pct(held, 99))


def wait_gone(jid):
    t0 = time.time()
    while time.time() - t0 < 30:
        r = subprocess.run(["squeue", "-h", "-j", jid, "-o", "%T"], capture_output=True, text=True)
        if r.stdout.strip() in ("", "COMPLETED", "FAILED", "CANCELLED"):
            return
        time.sleep(0.02)


# ---- the cost of one poll ----------------------------------------------------

def timed(argv, reps=5):
    out = []
    size = 0
    for _ in range(reps):
        t = time.time()
        r = subprocess.run(argv, capture_output=True)
        out.append((time.time() - t) * 1000)
        size = len(r.stdout)
    return statistics.median(out), size


def pollcost():
    r = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i"], capture_output=True, text=True)
    ids = r.stdout.split()
    few = ",".join(ids[:24])
    ways = [
        ("squeue_O_partition", ["squeue", "-h", "-t", "all", "--partition=main", "-O",
                                "JobID:|,HetJobID:|,HetJobOffset:|,State:|,exit_code:|,"
                                "StartTime:|,EndTime:|,Reason:"]),
        ("squeue_text_partition", ["squeue", "-h", "-t", "all", "--partition=main", "-o", "%i|%T|%r"]),
        ("squeue_text_24_ids", ["squeue", "-h", "-t", "all", "-j", few, "-o", "%i|%T|%r"]),
        ("squeue_json", ["squeue", "--json"]),
        ("scontrol_one_job", ["scontrol", "show", "job", "-d", "-o", ids[0]]),
        ("scontrol_all_jobs", ["scontrol", "show", "job", "-o"]),
    ]
    for name, argv in ways:
        t, size = timed(argv)
        say("pollcost", jobs=len(ids), way=name, median_ms="%.1f" % t, bytes=size)


def main():
    os.makedirs(STAMPS, mode=0o1777, exist_ok=True)
    os.chmod(STAMPS, 0o1777)
    mode = sys.argv[1]
    if mode == "plain":
        plain(int(sys.argv[2]), int(sys.argv[3]))
    elif mode == "sluice":
        sluice(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], *sys.argv[5:7])
    elif mode == "latency":
        latency(int(sys.argv[2]), sys.argv[3])
    elif mode == "pinhold":
        pinhold(int(sys.argv[2]))
    elif mode == "pollcost":
        pollcost()
    else:
        sys.exit("slurm_e2e.py: unknown mode " + mode)


if __name__ == "__main__":
    main()
