#!/usr/bin/env python3
"""history.py - how long GET /v1/history takes over a large store.

Starts build/sluiced (SLUICE_BIN to change it) once to create a store,
stops it, writes HISTORY_JOBS (100,000) jobs into it by SQL as the engine
would have left them over the last HISTORY_DAYS (30) days: their state
events, preempt events and usage intervals; 10 % preempted once and run
again, 3 % cancelled while pending, the newest still pending (held). Then
starts it again and times each range (hour, day, week, month), for every
team and for one, HISTORY_RUNS (5) times each, from the client (the whole
request). Prints figures; never fails on speed, only when sluiced does not
start or a request is not answered 200.

    make all && bench/history.py
"""

import json
import os
import random
import sqlite3
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
os.environ.setdefault("SLUICE_BIN", os.path.join(REPO, "build"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from sltest import Sluiced, tap  # noqa: E402

JOBS = int(os.environ.get("HISTORY_JOBS", "100000"))
RUNS = int(os.environ.get("HISTORY_RUNS", "5"))
DAYS = int(os.environ.get("HISTORY_DAYS", "30"))
DAY = 86400000
TEAMS = ["vision", "nlp", "speech", "default"]
STATES = {"Pending": 0, "Running": 1, "Succeeded": 2, "Failed": 3, "Cancelled": 4,
          "Preempted": 5}


def populate(db, now):
    """Write JOBS jobs submitted evenly over the DAYS days before now."""
    rnd = random.Random(7)
    spec = db.execute("SELECT spec FROM jobs ORDER BY id LIMIT 1").fetchone()[0]
    jobs, events, usage = [], [], []
    first = now - DAYS * DAY
    base = db.execute("SELECT coalesce(max(id), 0) FROM jobs").fetchone()[0]
    for i in range(JOBS):
        jid = base + 1 + i
        team = TEAMS[i % len(TEAMS)]
        sub = first + (DAYS * DAY * i) // JOBS + rnd.randrange(1000)
        ev = [(jid, sub, "state", None, "Pending", None)]
        gpus = rnd.choice((1, 1, 2, 4, 8))
        t = sub
        attempt = preemptions = 0
        state, started, finished = "Pending", None, None
        roll = rnd.random()
        if roll < 0.03:
            t += int(rnd.expovariate(1 / 600000))
            if t < now:
                ev.append((jid, t, "state", "Pending", "Cancelled", "cancelled"))
                state, finished = "Cancelled", t
        else:
            runs = 2 if roll > 0.90 else 1
            for k in range(runs):
                s = t + int(rnd.expovariate(1 / 300000))
                if s >= now:
                    break
                ev.append((jid, s, "state", "Pending", "Running", None))
                started, attempt = s, k
                e = min(s + int(rnd.expovariate(1 / 1800000)) + 1000, now - 1000)
                util = rnd.random() if rnd.random() < 0.5 else None
                idle = rnd.randrange(e - s) if rnd.random() < 0.1 else 0
                usage.append((jid, k, team, "node%d" % (jid % 16), gpus, s, e, util, idle))
                if k + 1 < runs and e + 5000 < now:
                    ev += [(jid, e - 5000, "preempt", None, None, "preempt"),
                           (jid, e, "state", "Running", "Preempted", None),
                           (jid, e, "requeue", "Preempted", "Pending", None)]
                    preemptions += 1
                    t = e
                    state = "Pending"
                    continue
                ev.append((jid, e, "state", "Running", "Succeeded", None))
                state, finished = "Succeeded", e
                break
        pending = state == "Pending"
        jobs.append((jid, "h%d" % jid, "default" if pending else team,
                     STATES[state], attempt, sub, started, finished, preemptions,
                     "held" if pending else None, spec))
        events += ev
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO jobs(id, name, team, user, queue, priority_class, priority, state, "
        "attempt, retries, submitted_at, started_at, finished_at, preemptions, intent, "
        "hold_by, spec) VALUES(?1, ?2, ?3, 'admin', 'default', 'batch', 100, ?4, ?5, 0, "
        "?6, ?7, ?8, ?9, ?10, CASE WHEN ?10 IS NULL THEN NULL ELSE 'admin' END, ?11)", jobs)
    db.executemany("INSERT INTO job_events(job_id, at, type, from_state, to_state, message) "
                   "VALUES(?, ?, ?, ?, ?, ?)", events)
    db.executemany(
        "INSERT INTO usage(job_id, attempt, task, team, user, queue, node, gpu_model, gpus, "
        "ngpus, gpu_milli, cpu_milli, mem_bytes, start_ms, end_ms, util, idle_ms) "
        "VALUES(?1, ?2, 0, ?3, 'admin', 'default', ?4, 'H100', '0', ?5, 1000, 1000, 0, ?6, "
        "?7, ?8, ?9)", usage)
    db.execute("COMMIT")
    return len(jobs), len(events), len(usage)


def main():
    d = Sluiced(fake_gpus="4xH100")
    d.start()
    st, body = d.json_req("POST", "/v1/jobs",
                          {"apiVersion": "sluice/v1", "kind": "Job",
                           "metadata": {"name": "seed"},
                           "spec": {"command": ["true"], "resources": {"gpus": 1}}})
    if st != 201:
        print("cannot submit the seed job: %d %s" % (st, body))
        return 1
    for _ in range(300):
        if d.json_req("GET", "/v1/jobs/%d" % body["id"])[1].get("state") == "Succeeded":
            break
        time.sleep(0.1)
    d.stop()
    db = sqlite3.connect(os.path.join(d.data, "sluice.db"), isolation_level=None)
    t0 = time.monotonic()
    nj, ne, nu = populate(db, int(time.time() * 1000))
    print("store: %d jobs, %d events, %d usage rows written in %.1f s" %
          (nj, ne, nu, time.monotonic() - t0))
    db.close()
    why = d.restart(timeout=120)
    if why:
        print("sluiced does not restart: %s" % why)
        return 1
    print("%-6s %-7s %10s %10s %8s %9s" % ("range", "team", "median ms", "max ms", "buckets",
                                           "started"))
    for rng in ("hour", "day", "week", "month"):
        for team in (None, "vision"):
            path = "/v1/history?range=" + rng + ("&team=" + team if team else "")
            times, body = [], None
            for _ in range(RUNS):
                t = time.monotonic()
                r = d.request("GET", path)
                times.append((time.monotonic() - t) * 1000)
                if r.status != 200:
                    print("%s: %d %s" % (path, r.status, r.body[:200]))
                    return 1
                body = json.loads(r.body)
            s = body["series"]
            print("%-6s %-7s %10.1f %10.1f %8d %9d" % (
                rng, team or "all", statistics.median(times), max(times), len(s["t"]),
                sum(x or 0 for x in s["started"])))
    d.stop()
    return 0


if __name__ == "__main__":
    rc = main()
    tap.done = True  # figures, not TAP
    sys.exit(rc)
