#!/usr/bin/env python3
"""durability.t - nothing acknowledged is lost across kill -9 (SPEC.md 8).

Each round: CLIENTS processes post job documents to POST /v1/jobs as fast as
they can on kept-alive connections and record every job they got a 201 for;
after a random 0.3-1.5 s the daemon is killed with SIGKILL, then restarted
on the same data dir. Then, via GET /v1/jobs?state=all (following `next`):

  - every acknowledged id is there, exactly once, with the name it was
    acknowledged with (lost = 0, duplicates = 0);
  - every job is well-formed: a name, a spec, state Pending, submitted_at;
  - a job nobody acknowledged is one whose request was in flight at the kill
    (sent, no answer): those may or may not have committed; nothing else may
    appear, and a request the server refused (4xx/5xx) never appears.

Jobs never run: the daemon has one fake T4, held for the whole test by one
job (HOG_NAME, adopted again after each kill), and each job wants it.
Job names carry round, client and sequence, so a duplicate is visible.

Environment: DURABILITY_ROUNDS (default 20), DURABILITY_CLIENTS (8),
DURABILITY_SEED (random; printed, to replay a run).
"""

import http.client
import json
import multiprocessing
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, tap  # noqa: E402

ROUNDS = int(os.environ.get("DURABILITY_ROUNDS", "20"))
CLIENTS = int(os.environ.get("DURABILITY_CLIENTS", "8"))
SEED = int(os.environ.get("DURABILITY_SEED", str(random.randrange(1 << 30))))
NAME_RX = re.compile(r"^dur-r(\d+)-c(\d+)-(\d+)$")
FINAL = 5.0  # seconds a client may take to notice the daemon is gone


def job_body(name):
    return json.dumps({
        "apiVersion": "sluice/v1", "kind": "Job",
        "metadata": {"name": name, "team": "default"},
        "spec": {"command": ["true"], "resources": {"gpus": 1}},
    }).encode()


HOG_NAME = "dur-hog"


def start_hog(d):
    """The job that holds the one GPU; returns its id or None."""
    body = json.dumps({"apiVersion": "sluice/v1", "kind": "Job",
                       "metadata": {"name": HOG_NAME, "team": "default"},
                       "spec": {"command": ["sleep", "3600"],
                                "resources": {"gpus": 1, "cpus": 0.1}}}).encode()
    r = d.request("POST", "/v1/jobs", body, ctype="application/json")
    hog = (r.json or {}).get("id") if r.status == 201 else None
    deadline = time.monotonic() + 30
    while hog is not None and time.monotonic() < deadline:
        if (d.request("GET", "/v1/jobs/%d" % hog).json or {}).get("state") == "Running":
            return hog
        time.sleep(0.1)
    return None


def client(port, token, rnd, cid, out_path, stop):
    """Post jobs until the daemon goes away. Writes one JSON line per
    outcome to out_path: {"ack": [id, name]}, {"refused": [status, name]},
    {"inflight": name}; then {"done": sent}."""
    headers = {"Authorization": "Bearer " + token,
               "Content-Type": "application/json"}
    seq = 0
    sent = 0
    with open(out_path, "w") as out:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while not stop.is_set():
            name = "dur-r%02d-c%d-%06d" % (rnd, cid, seq)
            seq += 1
            try:
                conn.connect() if conn.sock is None else None
            except OSError:
                break  # refused: the daemon is gone; nothing was sent
            try:
                conn.request("POST", "/v1/jobs", body=job_body(name), headers=headers)
                sent += 1
                r = conn.getresponse()
                data = r.read()
            except (OSError, http.client.HTTPException):
                # Sent (maybe partly), no complete answer: in flight at the
                # kill. It may or may not have been committed.
                out.write(json.dumps({"inflight": name}) + "\n")
                conn.close()
                continue  # the next connect tells whether the daemon is gone
            if r.status == 201:
                try:
                    jid = json.loads(data)["id"]
                except (ValueError, KeyError, TypeError):
                    out.write(json.dumps({"badack": [name, data[:200].decode(
                        "utf-8", "replace")]}) + "\n")
                    continue
                out.write(json.dumps({"ack": [jid, name]}) + "\n")
            else:
                out.write(json.dumps({"refused": [r.status, name, data[:200].decode(
                    "utf-8", "replace")]}) + "\n")
            if (r.getheader("Connection") or "").lower() == "close":
                conn.close()
        out.write(json.dumps({"done": sent}) + "\n")


def run_round(d, rnd, rng, tmp):
    stop = multiprocessing.Event()
    procs, paths = [], []
    for cid in range(CLIENTS):
        path = os.path.join(tmp, "r%02d-c%d.jsonl" % (rnd, cid))
        p = multiprocessing.Process(target=client,
                                    args=(d.port, d.token, rnd, cid, path, stop))
        p.start()
        procs.append(p)
        paths.append(path)
    load_s = rng.uniform(0.3, 1.5)
    time.sleep(load_s)
    d.kill9()
    stop.set()
    for p in procs:
        p.join(FINAL + 30)
        if p.is_alive():
            p.kill()
            p.join()
    res = {"ack": [], "refused": [], "inflight": [], "badack": [], "sent": 0,
           "unfinished": 0, "load_s": load_s}
    for path in paths:
        done = False
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if "done" in rec:
                    res["sent"] += rec["done"]
                    done = True
                else:
                    (k, v), = rec.items()
                    res[k].append(v)
        if not done:
            res["unfinished"] += 1
    return res


def check_jobs(jobs, acked, inflight, refused):
    """Returns a dict of figures and a list of problems."""
    problems = []
    by_id = {}
    names = {}
    for j in jobs:
        jid = j.get("id") if isinstance(j, dict) else None
        if isinstance(j, dict) and j.get("name") == HOG_NAME:
            continue
        if not isinstance(jid, int):
            problems.append("a job without an integer id: %r" % (j,))
            continue
        if jid in by_id:
            problems.append("id %d listed twice" % jid)
        by_id[jid] = j
        name = j.get("name")
        names[name] = names.get(name, 0) + 1
        spec = j.get("spec")
        bad = []
        if not isinstance(name, str) or not NAME_RX.match(name):
            bad.append("name %r" % (name,))
        if not isinstance(spec, dict) or \
                (spec.get("metadata") or {}).get("name") != name:
            bad.append("spec %r" % (json.dumps(spec)[:120],))
        if j.get("state") != "Pending":
            bad.append("state %r" % (j.get("state"),))
        if not isinstance(j.get("submitted_at"), str) or not j.get("submitted_at"):
            bad.append("submitted_at %r" % (j.get("submitted_at"),))
        if bad:
            problems.append("job %d malformed: %s" % (jid, ", ".join(bad)))
    lost = 0
    for jid, name in acked:
        j = by_id.get(jid)
        if j is None:
            lost += 1
            if lost <= 5:
                problems.append("acknowledged job %d (%s) is missing" % (jid, name))
        elif j.get("name") != name:
            lost += 1
            if lost <= 5:
                problems.append("acknowledged job %d is %s, not %s (id reused?)"
                                % (jid, j.get("name"), name))
    dups = sum(c - 1 for c in names.values() if c > 1)
    for name, c in names.items():
        if c > 1 and len(problems) < 20:
            problems.append("%s stored %d times" % (name, c))
    acked_names = {n for _, n in acked}
    inflight_set = set(inflight)
    refused_set = {n for _, n, _ in refused}
    extra = [j for j in by_id.values() if j.get("name") not in acked_names]
    phantom = [j for j in extra if j.get("name") not in inflight_set]
    for j in phantom[:5]:
        why = "refused" if j.get("name") in refused_set else "never acknowledged"
        problems.append("job %s (%s) exists but was %s, not in flight"
                        % (j.get("id"), j.get("name"), why))
    return {"jobs": len(by_id), "lost": lost, "dups": dups, "extra": len(extra),
            "phantom": len(phantom)}, problems


def main():
    rng = random.Random(SEED)
    tap.diag("seed %d (DURABILITY_SEED to replay), %d rounds, %d clients"
             % (SEED, ROUNDS, CLIENTS))
    d = Sluiced(fake_gpus="1xT4").start()
    work = os.path.join(d.tmp, "clients")
    os.makedirs(work)

    # The premise: these jobs are accepted and stay Pending.
    hog = start_hog(d)
    r = d.request("POST", "/v1/jobs", job_body("dur-r99-c0-000000"),
                  ctype="application/json")
    if not tap.ok(hog is not None and r.status == 201,
                  "a 1-GPU job is accepted while another holds the one GPU",
                  "hog %r, got %r" % (hog, r)):
        tap.done_testing(d)
    acked = [(r.json["id"], "dur-r99-c0-000000")]
    inflight, refused, badacks = [], [], []
    sent_total = 0
    load_total = 0.0
    t0 = time.monotonic()
    start_fail = None
    for rnd in range(ROUNDS):
        res = run_round(d, rnd, rng, work)
        acked += [tuple(a) for a in res["ack"]]
        inflight += res["inflight"]
        refused += res["refused"]
        badacks += res["badack"]
        sent_total += res["sent"]
        load_total += res["load_s"]
        if res["unfinished"]:
            tap.diag("round %d: %d clients did not finish" % (rnd, res["unfinished"]))
        why = d.restart()
        if why is not None:
            start_fail = "round %d: restart failed: %s" % (rnd, why)
            break
        try:
            jobs = d.list_jobs()
        except (RuntimeError, OSError, http.client.HTTPException) as e:
            start_fail = "round %d: listing jobs failed: %s" % (rnd, e)
            break
        figs, problems = check_jobs(jobs, acked, inflight, refused)
        tap.diag("round %2d: %5d acked (%4d this round), %d in flight, %d refused, "
                 "%d jobs stored, %d unacknowledged stored"
                 % (rnd, len(acked), len(res["ack"]), len(res["inflight"]),
                    len(res["refused"]), figs["jobs"], figs["extra"]))
        if not tap.ok(not problems, "round %d: every acknowledged job is there once, "
                      "nothing else appeared" % rnd, *problems[:20]):
            break
    elapsed = time.monotonic() - t0

    tap.ok(start_fail is None, "the daemon restarts after every kill -9",
           *([start_fail, d.log_tail(30)] if start_fail else []))
    # Last, a clean stop and start must keep everything too.
    jobs = []
    if d.running():
        rc = d.stop()
        tap.ok(rc == 0, "sluiced exits cleanly on SIGTERM after the rounds",
               "exit status %s" % rc, *([d.log_tail(30)] if rc else []))
        why = d.restart()
        if tap.ok(why is None, "and starts again", *([why] if why else [])):
            jobs = d.list_jobs()
    figs, problems = check_jobs(jobs, acked, inflight, refused)
    tap.ok(not badacks, "every 201 carries an id", *map(repr, badacks[:5]))
    tap.ok(len(acked) > ROUNDS, "jobs were acknowledged (%d)" % len(acked))
    codes = {}
    for status, _, body in refused:
        codes[status] = codes.get(status, 0) + 1
    if refused:
        tap.diag("refused answers by status: %r; first: %s"
                 % (codes, refused[0][2]))
    tap.is_(figs["lost"], 0, "lost: 0")
    tap.is_(figs["dups"], 0, "duplicates: 0")
    tap.is_(figs["phantom"], 0, "jobs that were neither acknowledged nor in flight: 0")
    tap.ok(figs["extra"] <= len(inflight), "unacknowledged jobs stored (%d) <= "
           "requests in flight at the kills (%d)" % (figs["extra"], len(inflight)))
    tap.diag("figures: rounds %d, requests sent %d, acknowledged %d, in flight at "
             "kill %d (of which committed %d), refused %d, lost %d, duplicates %d, "
             "%.1f s in all, %.0f acknowledged/s while loaded (%d Python clients)"
             % (rnd + 1, sent_total, len(acked), len(inflight), figs["extra"],
                len(refused), figs["lost"], figs["dups"], elapsed,
                len(acked) / max(load_total, 1e-9), CLIENTS))
    if d.running():
        d.request("DELETE", "/v1/jobs/%d" % hog)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                (d.request("GET", "/v1/jobs/%d" % hog).json or {}).get("state") == "Running":
            time.sleep(0.1)
    tap.done_testing(d)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    main()
