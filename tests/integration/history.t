#!/usr/bin/env python3
"""history.t - GET /v1/history end to end: the Overview's series from the
store, through sluiced with two fake H100.

Jobs of two teams run, wait, are cancelled while pending, held, preempted
and requeued. The pending count the history gives at moments the test
noted (between two job listings that agree) must be the count of Pending
jobs listed then, for every team and per team; over the whole run the
history must count every attempt started and the one preemption, the
waits' percentiles must be those of the waits read from the jobs' events,
and the GPU-seconds held must be the ledger's. The same questions after a
restart of sluiced give the same answers. A member sees their own team's
series only, and bad parameters are refused 400 naming the parameter."""

import calendar
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, job_doc, tap  # noqa: E402


def now_ms():
    return int(time.time() * 1000)


def ms_of(ts):
    """RFC 3339 with milliseconds, UTC, as sluiced writes it, to epoch ms."""
    base, frac = ts.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) * 1000 + int(frac[:3])


d = Sluiced(fake_gpus="2xH100").start()
r, tok = d.users([("nlp-member", "nlp", "member"), ("vision-viewer", "vision", "viewer")],
                 "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: vision}\n---\n"
                 "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: nlp}\n")
tap.ok(r.status == 200 and all(tok.values()), "two teams, a member and a viewer", r)


def submit(doc):
    st, body = d.json_req("POST", "/v1/jobs", doc)
    tap.is_(st, 201, "%s submitted" % doc["metadata"]["name"])
    return body.get("id") if isinstance(body, dict) else None


def state(jid):
    return (d.request("GET", "/v1/jobs/%d" % jid).json or {}).get("state")


def wait_state(jid, states, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = state(jid)
        if s in states:
            return s
        time.sleep(0.1)
    return state(jid)


def pending_now():
    return sorted((j["id"], j["team"]) for j in d.list_jobs(state="Pending"))


def moment():
    """A time at which the set of Pending jobs is known: the middle of two
    listings that agree. Returns (ms, [(id, team)])."""
    for _ in range(20):
        a = now_ms()
        p1 = pending_now()
        time.sleep(0.3)
        p2 = pending_now()
        b = now_ms()
        if p1 == p2:
            return (a + b) // 2, p1
    tap.bail("the pending jobs stay still long enough to note them")


def history(query, token=None):
    r = d.request("GET", "/v1/history?" + query, token=token or d.token)
    return r.status, r.json if isinstance(r.json, dict) else {}


def pending_at(ms, team=None, token=None):
    """The history's count at 'ms': the end of a one-second bucket."""
    st, h = history("from=%d&to=%d&step=1s%s" % (ms - 1000, ms, "&team=" + team if team else ""),
                    token)
    return h.get("series", {}).get("pending", [None])[0] if st == 200 else "status %d" % st


T0 = now_ms() - 1000
moments = [moment()]
tap.is_(moments[0][1], [], "nothing is pending at first")

# --- a run: A holds both GPUs; B, C and H wait; H is held, B cancelled -----
a = submit(job_doc("a", ["sleep", "6"], team="vision", resources={"gpus": 2}))
tap.is_(wait_state(a, ("Running",)), "Running", "A runs on both GPUs")
b = submit(job_doc("b", ["sleep", "1"], team="vision", resources={"gpus": 2}))
c = submit(job_doc("c", ["sleep", "1"], team="nlp", resources={"gpus": 1}))
h = submit(job_doc("h", ["sleep", "1"], team="vision", resources={"gpus": 1}))
tap.is_(d.request("POST", "/v1/jobs/%d/hold" % h).status, 200, "H is held")
moments.append(moment())
tap.is_(len(moments[1][1]), 3, "B, C and H are pending while A runs")
tap.ok(d.request("DELETE", "/v1/jobs/%d" % b).status in (200, 202),
       "B is cancelled while pending")
moments.append(moment())
tap.is_(wait_state(c, ("Succeeded",)), "Succeeded", "C runs once A is done")

# --- a preemption: the production job P preempts V, which runs again ------
v = submit(job_doc("v", ["sh", "-c", "trap 'exit 0' USR1; sleep 2 & wait; sleep 1"],
                   team="vision", priorityClass="best-effort", checkpoint={"grace": "2s"},
                   resources={"gpus": 2}))
tap.is_(wait_state(v, ("Running",)), "Running", "V runs")
time.sleep(0.5)
p = submit(job_doc("p", ["sleep", "1"], team="vision", priorityClass="production",
                   resources={"gpus": 2}))
tap.is_(wait_state(p, ("Succeeded",)), "Succeeded", "P preempts V and runs")
tap.is_(wait_state(v, ("Succeeded",)), "Succeeded", "V runs again")
tap.is_((d.request("GET", "/v1/jobs/%d" % v).json or {}).get("preemptions"), 1,
        "V was preempted once")
moments.append(moment())
tap.is_(moments[-1][1], [(h, "vision")], "H alone is pending, held")
T1 = now_ms()
time.sleep(1.2)  # every bucket of a window to T1 (rounded up to a second) is past

# --- what the jobs say ---------------------------------------------------------
waits, starts = [], []
for jid in (a, b, c, h, v, p):
    into = None
    for e in (d.request("GET", "/v1/jobs/%d/events" % jid).json or {}).get("events", []):
        at = ms_of(e["at"])
        if e.get("to") == "Pending" and e.get("from") != "Pending":
            into = at
        if e.get("from") == "Pending" and e.get("to") == "Running":
            starts.append(at)
            waits.append(at - into)
waits.sort()
tap.is_(len(starts), 5, "five attempts started: A, C, V twice, P")


def rank(p):
    return waits[max(1, math.ceil(p * len(waits) / 100)) - 1] / 1000.0


gpu_s = sum(n * m / 1000.0 * (e - s) / 1000.0 for n, m, s, e in d.store_rows(
    "SELECT ngpus, gpu_milli, start_ms, end_ms FROM usage WHERE end_ms IS NOT NULL"))


def check(when):
    """The questions, asked again after the restart."""
    answers = {}
    for i, (ms, pend) in enumerate(moments):
        got = pending_at(ms)
        tap.is_(got, len(pend), "%s: pending at moment %d is the jobs listed then (%d)"
                % (when, i, len(pend)))
        for team in ("vision", "nlp"):
            want = len([x for x in pend if x[1] == team])
            tap.is_(pending_at(ms, team), want, "%s: and %d of team %s" % (when, want, team))
        answers["pending%d" % i] = got
    st, one = history("from=%d&to=%d&step=%dms" % (T0, T1, T1 - T0))
    s = one.get("series", {})
    tap.ok(st == 200 and len(s.get("t", [])) == 1, "%s: one bucket over the run" % when)
    tap.is_(s.get("started"), [5], "%s: it counts the five attempts started" % when)
    tap.is_(s.get("preemptions"), [1], "%s: and the one preemption" % when)
    tap.is_([s.get("wait_p50_s"), s.get("wait_p90_s"), s.get("wait_p99_s")],
            [[rank(50)], [rank(90)], [rank(99)]],
            "%s: the waits' p50, p90, p99 are those of the jobs' events" % when)
    got = s.get("gpus_allocated", [0])[0] * (T1 - T0) / 1000.0
    tap.ok(abs(got - gpu_s) < 1e-6, "%s: GPU-seconds held are the ledger's (%.3f)"
           % (when, gpu_s), "got %r" % got)
    tap.is_(s.get("utilisation"), [None], "%s: fake GPUs measure no utilisation" % when)
    tap.is_(s.get("gpus_idle"), [0], "%s: nor idle time" % when)
    tap.is_(one.get("capacity_gpus"), 2, "%s: the capacity is the two GPUs" % when)
    st, sec = history("from=%d&to=%d&step=1s" % (T0, T1))
    s2 = sec.get("series", {})
    buckets = [int((x - T0) // 1000) for x in starts]
    tap.ok(st == 200 and sum(s2.get("started", [])) == 5 and
           all(s2["started"][i] >= buckets.count(i) for i in buckets),
           "%s: by the second, each start is in its second's bucket" % when)
    got = sum(x * 1.0 for x in s2.get("gpus_allocated", []) if x is not None)
    tap.ok(abs(got - gpu_s) < 1e-6, "%s: and the GPU-seconds add up to the ledger's" % when,
           "got %r, want %r" % (got, gpu_s))
    answers["one"] = one
    answers["sec"] = sec
    return answers


before = check("before the restart")

# --- a restart changes nothing -----------------------------------------------------
tap.ok(d.restart() is None, "sluiced restarts")
after = check("after the restart")
for k in ("one", "sec"):
    for x in (before, after):
        x[k].pop("now", None)
tap.ok(json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True),
       "the same windows give the same answers, byte for byte")
st, hr = history("range=hour")
s = hr.get("series", {})
tap.ok(st == 200 and len(s.get("t", [])) == 60 and hr.get("step") == 60000 and
       hr.get("to") % 60000 == 0 and hr["to"] - 60000 <= hr.get("now") <= hr["to"],
       "range=hour: 60 minutes ending with the one that holds now")
tap.is_(s.get("pending", [None])[-1], 1, "held H is pending now, across the restart")
tap.is_(sum(x or 0 for x in s.get("started", [])), 5, "the hour holds the five starts")
for rng, n, step in (("day", 96, 900000), ("week", 168, 3600000), ("month", 120, 21600000)):
    st, x = history("range=" + rng)
    tap.ok(st == 200 and len(x["series"]["t"]) == n and x["step"] == step and
           x["to"] - x["from"] == n * step and x["team"] is None,
           "range=%s: %d buckets of %d s" % (rng, n, step // 1000))

# --- teams -----------------------------------------------------------------------------
st, mine = history("from=%d&to=%d&step=%dms" % (T0, T1, T1 - T0), token=tok["nlp-member"])
tap.ok(st == 200 and mine.get("team") == "nlp", "a member gets their team's series", mine)
tap.is_(mine.get("series", {}).get("started"), [1], "nlp started C only")
tap.is_(pending_at(moments[1][0], token=tok["nlp-member"]), 1,
        "nlp's pending count at moment 1 is C alone")
st, admin = history("from=%d&to=%d&step=%dms&team=nlp" % (T0, T1, T1 - T0))
admin.pop("now", None)
mine.pop("now", None)
tap.ok(st == 200 and admin == mine, "what an admin asks of team nlp")
r = d.request("GET", "/v1/history?team=vision", token=tok["nlp-member"])
tap.ok(r.status == 403 and r.error_field() == "team",
       "a member asking for another team is refused 403 naming team", r)
st, vv = history("from=%d&to=%d&step=%dms" % (T0, T1, T1 - T0), token=tok["vision-viewer"])
tap.ok(st == 200 and vv.get("team") == "vision" and vv["series"]["started"] == [4] and
       vv["series"]["preemptions"] == [1], "a viewer gets their team's: 4 starts, 1 preemption")

# --- bad parameters ---------------------------------------------------------------------
for query, field in (("range=year", "range"), ("range=", None), ("step=fast", "step"),
                     ("step=500ms", "step"), ("range=month&step=1s", "step"),
                     ("from=soon", "from"), ("to=2026-13-01", "to"),
                     ("from=2026-01-02&to=2026-01-01", "to"),
                     ("from=99999999999999999", "from"), ("step=400d", "step")):
    r = d.request("GET", "/v1/history?" + query)
    if field is None:
        tap.is_(r.status, 200, "%s is the default range" % query)
    else:
        tap.ok(r.status == 400 and r.error_field() == field and r.error_code() == "invalid",
               "%s is refused 400 naming %s" % (query, field), r)

tap.done_testing(d)
