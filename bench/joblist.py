#!/usr/bin/env python3
"""joblist.py - GET /v1/jobs over a store of many jobs: how long a page
takes with filters, sorts, offsets and counts, and what a matching
If-None-Match saves. Prints figures; never fails on speed. Exits 1 only
when something is wrong (the daemon does not start, an answer is not 200
or 304, a count does not match the store).

    bench/joblist.py                 # 100,000 jobs, build/ binaries
    BENCH_JOBS=20000 bench/joblist.py
    SLUICE_BIN=build/asan bench/joblist.py

1. Starts `sluiced --dev` (SLUICE_BIN, default build/) on a free port of
   127.0.0.1 with a temporary data dir and 4 fake H100 and 4 fake A100
   GPUs; applies 8 teams (t0..t7) with a queue each and a member user;
   cordons the nodes (the pending jobs below must not start); submits two
   jobs through the API, whose stored specs are the templates of the rest
   (one asks for gpuModels [H100], one for any model); stops it.
2. Writes BENCH_JOBS jobs straight into the copy of the store with Python's
   sqlite3 module, in one transaction, as the daemon would have stored
   them: names from a small vocabulary, 8 teams, 40 users, 3 priority
   classes; 1 % Pending, the rest Succeeded, Failed, Cancelled, Timeout or
   Lost with start and end times, and a usage row of an H100 or an A100
   for each started job (what `gpu_model` filters on besides the spec).
3. Starts sluiced again on that store and times each query of QUERIES:
   BENCH_RUNS (20) requests on one kept-alive connection after one
   warm-up: the median and the slowest, measured at the client on
   loopback (so they include the transfer of the answer and any wait for
   a CPU that others hold), and the daemon's own CPU time per request
   (all its threads, from /proc/PID/task/*/schedstat), the figure that
   the machine's other load does not inflate.
4. With wrk (when installed): requests/s of GET /v1/jobs?limit=50 for
   BENCH_SECONDS (5) on 8 connections, without and with an If-None-Match
   that matches (each answer 304 with no body). With BENCH_BASE_BIN=DIR,
   the 200s also with DIR/sluiced on the same store (an earlier build, say
   one without ETags), between two runs of this build's.
"""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.environ.get("SLUICE_BIN") or os.path.join(REPO, "build")
BASE_BIN = os.environ.get("BENCH_BASE_BIN")
NJOBS = int(os.environ.get("BENCH_JOBS", "100000"))
RUNS = int(os.environ.get("BENCH_RUNS", "20"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
TEAMS = 8
USERS = 40
WORDS = ("train", "eval", "finetune", "infer", "sweep", "bert", "resnet", "llama",
         "vit", "whisper", "ablation", "pretrain")

# name, query: what a dashboard's jobs page asks for.
QUERIES = (
    ("first page, id order", "limit=50"),
    ("newest first, with total", "sort=-id&limit=50&count=true"),
    ("state+team, with total", "state=Failed&team=t3&limit=50&count=true"),
    ("q=text, with total", "q=llama-7&limit=50&count=true"),
    ("q=text, no match", "q=no-such-name&limit=50&count=true"),
    ("sort=-submitted, with total", "sort=-submitted&limit=50&count=true"),
    ("sort=name, page 101", "sort=name&offset=5000&limit=50"),
    ("sort=-finished, user filter", "user=u7&sort=-finished&limit=50&count=true"),
    ("queue+priority_class, sort=priority", "queue=q-t5&priority_class=prod&sort=-priority&limit=50&count=true"),
    ("gpu_model=A100, with total", "gpu_model=A100&limit=50&count=true"),
    ("pending, sort=-priority", "state=Pending&sort=-priority&limit=50&count=true"),
    ("member: own team, with total", "limit=50&count=true&sort=-id"),
)


def say(line):
    print(line, flush=True)


def die(msg):
    say("joblist.py: " + msg)
    sys.exit(1)


class Daemon:
    def __init__(self, tmp):
        self.data = os.path.join(tmp, "data")
        self.log = os.path.join(tmp, "sluiced.log")
        with socket.socket() as s:       # a free port, for the daemon to take
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = None
        self.token = None
        self.conn = None

    def start(self, bindir=BIN):
        argv = [os.path.join(bindir, "sluiced"), "--dev", "--listen", "127.0.0.1:%d" % self.port,
                "--data-dir", self.data, "--fake-gpus", "4xH100,4xA100"]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                die("sluiced exited with status %d (see %s)" % (self.proc.returncode, self.log))
            try:
                if self.request("GET", "/healthz", token=False)[0] == 200:
                    with open(os.path.join(self.data, "admin.token")) as f:
                        self.token = f.read().strip()
                    return
            except OSError:
                pass
            time.sleep(0.1)
        die("sluiced not healthy after 120 s")

    def stop(self):
        if self.conn:
            self.conn.close()
            self.conn = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def request(self, method, path, body=None, ctype=None, token=None, headers=None):
        """(status, headers, body bytes) on a kept-alive connection."""
        h = dict(headers or {})
        if token is not False:
            h["Authorization"] = "Bearer " + (token or self.token or "")
        if ctype:
            h["Content-Type"] = ctype
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, data
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def manifests():
    docs = []
    for t in range(TEAMS):
        docs.append({"apiVersion": "sluice/v1", "kind": "Team", "metadata": {"name": "t%d" % t},
                     "spec": {"defaultQueue": "q-t%d" % t}})
        docs.append({"apiVersion": "sluice/v1", "kind": "Queue",
                     "metadata": {"name": "q-t%d" % t}, "spec": {"team": "t%d" % t}})
    for name, value in (("prod", 1000), ("dev", 10)):
        docs.append({"apiVersion": "sluice/v1", "kind": "PriorityClass",
                     "metadata": {"name": name}, "spec": {"value": value}})
    docs.append({"apiVersion": "sluice/v1", "kind": "User", "metadata": {"name": "mia"},
                 "spec": {"team": "t3", "role": "member"}})
    return json.dumps(docs)


def prepare(d):
    """Teams, a member's token, cordoned nodes, the two template jobs."""
    st, _, body = d.request("POST", "/v1/apply", manifests(), "application/json")
    if st != 200:
        die("apply: %d %s" % (st, body[:300]))
    st, _, body = d.request("POST", "/v1/users/mia/tokens", "{}", "application/json")
    if st != 201:
        die("token for mia: %d %s" % (st, body[:300]))
    member = json.loads(body)["token"]
    st, _, body = d.request("GET", "/v1/nodes")
    for n in json.loads(body)["nodes"]:
        st, _, b2 = d.request("POST", "/v1/nodes/%s/cordon" % n["name"],
                              '{"reason":"bench: nothing starts"}', "application/json")
        if st != 200:
            die("cordon %s: %d %s" % (n["name"], st, b2[:300]))
    for models in (["H100"], []):
        job = {"apiVersion": "sluice/v1", "kind": "Job",
               "metadata": {"name": "template", "team": "t0"},
               "spec": {"command": ["python", "train.py", "--epochs=3"],
                        "resources": {"gpus": 1, "gpuModels": models, "cpus": 1,
                                      "memory": "1Gi"},
                        "maxRuntime": "2h", "env": {"EPOCHS": "3"}}}
        st, _, body = d.request("POST", "/v1/jobs", json.dumps(job), "application/json")
        if st != 201:
            die("template job: %d %s" % (st, body[:300]))
    return member


FINAL = (2, 2, 2, 2, 2, 2, 3, 3, 4, 7, 6)   # Succeeded x6, Failed x2, Cancelled, Timeout, Lost


def populate(db_path):
    """Write NJOBS jobs after the templates; returns the store's job count."""
    db = sqlite3.connect(db_path)
    rng = random.Random(42)
    specs = [r[0] for r in db.execute("SELECT spec FROM jobs ORDER BY id")]
    cols = [r[1] for r in db.execute("PRAGMA table_info(jobs)")]
    if len(specs) != 2:
        die("expected the 2 template jobs in the store, found %d" % len(specs))
    db.execute("DELETE FROM jobs")
    t0 = int(time.time() * 1000) - NJOBS * 6000
    jobs, usage = [], []
    for i in range(1, NJOBS + 1):
        team = rng.randrange(TEAMS)
        user = rng.randrange(USERS)
        pc = rng.choice(("batch", "batch", "batch", "prod", "dev"))
        prio = {"batch": 100, "prod": 1000, "dev": 10}[pc]
        pending = rng.random() < 0.01
        state = 0 if pending else rng.choice(FINAL)
        submitted = t0 + i * 6000 + rng.randrange(3000)
        started = finished = None
        exit_code = None
        placement = None
        if not pending and not (state == 4 and rng.random() < 0.5):
            started = submitted + rng.randrange(600000)
            finished = started + rng.randrange(10, 4 * 3600000)
            exit_code = 0 if state == 2 else 1
            placement = '[{"node":"vm","task":0,"gpus":[%d],"gpu_milli":1000}]' % rng.randrange(8)
        elif state == 4:
            finished = submitted + rng.randrange(60000)
        name = "%s-%s-%d" % (rng.choice(WORDS), rng.choice(WORDS), i)
        spec_i = rng.randrange(2)
        jobs.append((i, name, "t%d" % team, None, "u%d" % user, "q-t%d" % team, pc, prio,
                     state, exit_code, 0, 0, submitted, started, finished, placement,
                     specs[spec_i]))
        if started is not None:
            model = "H100" if spec_i == 0 or rng.random() < 0.5 else "A100"
            usage.append((i, "t%d" % team, "u%d" % user, "q-t%d" % team, model, started,
                          finished))
    if "spec" not in cols:
        die("no spec column in jobs")
    db.executemany("INSERT INTO jobs(id, name, team, project, user, queue, priority_class, "
                   "priority, state, exit_code, attempt, retries, submitted_at, started_at, "
                   "finished_at, placement, spec) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                   "?, ?, ?, ?, ?)", jobs)
    db.executemany("INSERT INTO usage(job_id, attempt, task, team, user, queue, node, "
                   "gpu_model, gpus, ngpus, gpu_milli, cpu_milli, mem_bytes, start_ms, end_ms) "
                   "VALUES(?, 0, 0, ?, ?, ?, 'vm', ?, '[0]', 1, 1000, 4000, 17179869184, ?, ?)",
                   usage)
    db.commit()
    n = db.execute("SELECT count(*) FROM jobs").fetchone()[0]
    db.close()
    return n


def cpu_ns(pid):
    """CPU time of every thread of process pid so far (ns, from schedstat)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def timed(d, path, token=None):
    """Median and slowest of RUNS requests (ms, at the client), the daemon's
    CPU time per request (ms), the last answer."""
    st, _, body = d.request("GET", path, token=token)
    if st != 200:
        die("GET %s: %d %s" % (path, st, body[:300]))
    times = []
    cpu = cpu_ns(d.proc.pid)
    for _ in range(RUNS):
        t = time.perf_counter()
        st, _, body = d.request("GET", path, token=token)
        times.append((time.perf_counter() - t) * 1000)
        if st != 200:
            die("GET %s: %d %s" % (path, st, body[:300]))
    cpu = (cpu_ns(d.proc.pid) - cpu) / 1e6 / RUNS
    return statistics.median(times), max(times), cpu, json.loads(body)


def wrk_rate(d, path, etag, want):
    """Requests/s of wrk on 'path' (with If-None-Match: etag when given) and
    the daemon's CPU time per request (us); every answer must have the
    status 'want'. None without wrk."""
    if not shutil.which("wrk"):
        return None
    env = dict(os.environ, SLUICE_TOKEN=d.token, SLUICE_ETAG=etag or "")
    cpu = cpu_ns(d.proc.pid)
    out = subprocess.run(["wrk", "-t1", "-c8", "-d%ds" % SECONDS, "-s",
                          os.path.join(REPO, "bench", "etag.lua"),
                          "http://127.0.0.1:%d%s" % (d.port, path)],
                         env=env, capture_output=True, text=True, timeout=SECONDS + 60)
    rate, counts = None, {}
    for line in out.stdout.splitlines():
        if line.startswith("Requests/sec:"):
            rate = float(line.split()[1])
        if line.startswith("SLUICE_ETAG_BENCH"):
            counts = dict(kv.split("=") for kv in line.split()[1:])
    n = int(counts.get(str(want), "0"))
    if rate is None or n == 0 or sum(int(v) for v in counts.values()) != n:
        die("wrk %s: %r\n%s" % (path, counts, out.stdout + out.stderr))
    return rate, (cpu_ns(d.proc.pid) - cpu) / 1e3 / n


def main():
    tmp = tempfile.mkdtemp(prefix="sluice-joblist.")
    d = Daemon(tmp)
    try:
        say("== GET /v1/jobs over %d jobs (%s, %d CPUs; ratios matter, absolute figures are "
            "noisy)" % (NJOBS, BIN, os.cpu_count() or 0))
        d.start()
        member = prepare(d)
        d.stop()
        t = time.perf_counter()
        n = populate(os.path.join(d.data, "sluice.db"))
        say("store: %d jobs written in %.1f s" % (n, time.perf_counter() - t))
        t = time.perf_counter()
        d.start()
        say("sluiced restarted on it in %.1f s" % (time.perf_counter() - t))
        say("%-36s %9s %9s %9s  %s" % ("query (GET /v1/jobs?...)", "median", "max",
                                          "cpu/req", "jobs"))
        for name, q in QUERIES:
            tok = member if name.startswith("member") else None
            med, worst, cpu, doc = timed(d, "/v1/jobs?" + q, tok)
            total = doc.get("total")
            say("%-36s %6.2f ms %6.2f ms %6.2f ms  %3d%s" %
                (name, med, worst, cpu, len(doc.get("jobs", [])),
                 "" if total is None else ", total %d" % total))
        _, h, body = d.request("GET", "/v1/jobs?limit=50")
        etag = h.get("etag")
        if not etag:
            die("GET /v1/jobs?limit=50 has no ETag")
        plain = wrk_rate(d, "/v1/jobs?limit=50", None, 200)
        if plain is None:
            say("wrk is not installed: no requests/s figures")
        else:
            cond = wrk_rate(d, "/v1/jobs?limit=50", etag, 304)
            say("GET /v1/jobs?limit=50 (%d bytes; wrk -t1 -c8 -d%ds)      req/s   cpu/req" %
                (len(body), SECONDS))
            say("  200 each                                 %8.0f %6.0f us" % plain)
            say("  with a matching If-None-Match, 304 each  %8.0f %6.0f us" % cond)
            if BASE_BIN:
                d.stop()
                d.start(BASE_BIN)
                base = wrk_rate(d, "/v1/jobs?limit=50", None, 200)
                d.stop()
                d.start()
                again = wrk_rate(d, "/v1/jobs?limit=50", None, 200)
                say("  200 each, again                          %8.0f %6.0f us" % again)
                say("  200 each, %-30s %8.0f %6.0f us" % (BASE_BIN, base[0], base[1]))
    finally:
        d.stop()
        if os.environ.get("SLUICE_KEEP_TMP") == "1":
            say("kept " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
