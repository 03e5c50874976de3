#!/usr/bin/env python3
"""guess_cancel.t - a cancel that arrives with the submission it names.

A job's row is written with its first change or just before its group
commits, not when it is submitted (src/engine/job.c, sl_eng_job_row). A cancel
of a job in the same group (its id guessed: the submission is not answered
yet) must still leave one stored job, in the state its answers say, with
its events in order; and all of it must be there after kill -9.

Bursts of submissions pipelined on one connection meet, on another, cancels
of the ids they will get, so that many share an engine group.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import tap, Sluiced, job_doc  # noqa: E402

ROUNDS = int(os.environ.get("GUESS_CANCEL_ROUNDS", "150"))

d = Sluiced(fake_gpus="8xH100", args=["--executor", "simulated"]).start()
import json  # noqa: E402
import socket  # noqa: E402

hdr = {"Authorization": "Bearer " + d.token, "Content-Type": "application/json"}
first = d.request("POST", "/v1/jobs", job_doc("first", resources={"cpus": 0.1, "gpus": 1}))
tap.is_(first.status, 201, "a first job is submitted")
next_id = first.json["id"] + 1

def raw_request(method, path, body):
    body = body.encode()
    return ("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (method, path, d.token, len(body))).encode() + body


def read_answer(f):
    """(status, body) of one HTTP/1.1 answer read from file 'f'."""
    status = int(f.readline().split()[1])
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.decode().partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    return status, f.read(length)


# Bursts: BURST submissions, each on its own connection and each followed
# at once by a cancel of the id it will get on another. The requests arrive
# in that order while the engine works on the first; it then takes the rest
# as one group, in which each cancel comes after the submission it names.
BURST = 10
socks = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(2 * BURST)]
files = [s_.makefile("rb") for s_ in socks]
accepted, cancelled, refused, bad = {}, set(), 0, []
for r0 in range(0, ROUNDS, BURST):
    for k in range(BURST):
        i = r0 + k
        # every third job wants the whole node, which the others (each
        # running for an hour) keep busy; so it waits
        gpus = 8 if i % 3 == 0 else 1
        doc = job_doc("r%d" % i, resources={"cpus": 0.1, "gpus": gpus})
        doc["metadata"]["labels"] = {"sim-duration": "1h"}
        socks[2 * k].sendall(raw_request("POST", "/v1/jobs", json.dumps(doc)))
        socks[2 * k + 1].sendall(raw_request("DELETE", "/v1/jobs/%d" % (next_id + k), ""))
    for k in range(BURST):
        i, jid = r0 + k, next_id + k
        st, body = read_answer(files[2 * k])
        if st != 201:
            bad.append("submit %d: %d %r" % (i, st, body[:200]))
        elif json.loads(body)["id"] != jid:
            bad.append("submit %d: id %d, expected %d" % (i, json.loads(body)["id"], jid))
        else:
            accepted[jid] = i
        st, body = read_answer(files[2 * k + 1])
        if st == 202:
            cancelled.add(jid)
        elif st in (404, 409):
            refused += 1
        else:
            bad.append("cancel %d: %d %r" % (jid, st, body[:200]))
    next_id += BURST
for s_ in socks:
    s_.close()
tap.ok(len(cancelled) > 0, "some cancels met their job (%d)" % len(cancelled))
tap.is_(bad, [], "every submission got 201 and every cancel 202, 404 or 409")
tap.diag("%d submitted, %d cancelled in the same round, %d cancels too early"
         % (len(accepted), len(cancelled), refused))


def check(when, restarted=False):
    problems = []
    for jid in sorted(accepted):
        r = d.request("GET", "/v1/jobs/%d" % jid)
        if r.status != 200:
            problems.append("%d: GET %d" % (jid, r.status))
            continue
        state = r.json["state"]
        if jid in cancelled and state != "Cancelled":
            problems.append("%d: cancel answered 202 but state %s" % (jid, state))
        # a simulated task that was running ends with the daemon's run
        ends = ("Pending", "Running", "Cancelled") + (("Succeeded",) if restarted else ())
        if jid not in cancelled and state not in ends:
            problems.append("%d: state %s" % (jid, state))
        ev = d.request("GET", "/v1/jobs/%d/events" % jid)
        tos = [e["to"] for e in (ev.json or {}).get("events", []) if e["type"] == "state"]
        if not tos or tos[0] != "Pending" or tos.count("Pending") != 1:
            problems.append("%d: state events %r" % (jid, tos))
        if state == "Cancelled" and tos[-1] != "Cancelled":
            problems.append("%d: Cancelled without its event: %r" % (jid, tos))
    listed = {j["id"] for j in d.list_jobs()}
    missing = sorted(set(accepted) - listed)
    if missing:
        problems.append("not listed: %r" % missing[:20])
    tap.is_(problems, [], "%s: every accepted job is stored once, as its answers say"
            % when)


check("while running")
d.kill9()
why = d.restart()
tap.ok(why is None, "sluiced starts again after kill -9", why or "")
check("after kill -9 and a restart", restarted=True)
tap.done_testing(d)
