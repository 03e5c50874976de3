#!/usr/bin/env python3
"""pg_ha.t - three sluiced on one PostgreSQL (docs/ha.md, decision 0015):
exactly one leads; the followers redirect (307, Sluice-Leader) and say who
leads; the CLI follows them; a leader killed with SIGKILL is replaced within
the lease and a beat and loses nothing it acknowledged; a leader stopped
(SIGSTOP) past its lease is fenced when it wakes: it writes nothing more and
exits 75; a clean stop hands the lease over at once. A real server of the
test's own (tests/pg/pg.sh); skipped without PostgreSQL."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import HaMember, PgServer, tap, wait_for  # noqa: E402

LEASE_MS = 1500

pgs = PgServer()
if not pgs.start():
    tap.skip_all(pgs.missing)
os.environ["PGPASSFILE"] = os.path.join(pgs.dir, "pgpass")
store = "postgres://sluice@127.0.0.1:%d/sluice" % pgs.port


def leader_of(members):
    """The member every live one names as leader, when they agree."""
    names = set()
    for m in members:
        if not m.running():
            continue
        st = m.status()
        if not st or not st.get("leader"):
            return None
        names.add((st["leader"]["name"], st["leader"]["epoch"]))
    if len(names) != 1:
        return None
    name, epoch = names.pop()
    lead = [m for m in members if m.name == name and m.running()]
    if not lead or (lead[0].status() or {}).get("role") != "leader" or \
            lead[0].request("GET", "/healthz", token=None, timeout=5).status != 200:
        return None  # not yet serving: its engine is loading
    return lead[0], epoch


a, b, c = (HaMember(n, store, LEASE_MS) for n in ("a", "b", "c"))
a.launch()
tap.ok(wait_for(lambda: (a.status() or {}).get("role") == "leader", 30),
       "the first daemon takes the lease", a.log_tail(20))
tap.ok(wait_for(lambda: os.path.exists(os.path.join(a.data, "admin.token")), 30),
       "and bootstraps the store (its admin token)")
a._read_token()
token = a.token
# One audit key signs the one log: the others get the first one's.
for m in (b, c):
    m.share_audit_key(a)
    m.launch()
members = [a, b, c]
tap.ok(wait_for(lambda: all((m.status() or {}).get("members") and
                            len(m.status()["members"]) == 3 for m in members), 30),
       "all three see all three as members")
lead = leader_of(members)
tap.ok(lead and lead[0] is a and lead[1] == 1, "all agree: a leads, epoch 1", repr(lead))
for m in members:
    m.token = token

# A follower's answers.
r = b.request("GET", "/v1/jobs?state=all&limit=5")
tap.is_(r.status, 307, "a follower redirects a request (307)")
tap.is_(r.headers.get("location"), a.server + "/v1/jobs?state=all&limit=5",
        "to the same target at the leader")
tap.is_(r.headers.get("sluice-leader"), a.server, "and names the leader (Sluice-Leader)")
tap.is_(r.headers.get("sluice-role"), "follower", "Sluice-Role: follower")
r = a.request("GET", "/v1/whoami")
tap.ok(r.status == 200 and r.headers.get("sluice-role") == "leader",
       "the leader answers itself, Sluice-Role: leader", repr(r))
r = b.request("GET", "/healthz", token=None)
tap.ok(r.status == 503 and (r.json or {}).get("status") == "follower",
       "a follower's /healthz is 503 (a load balancer sends traffic to the leader)", repr(r))
tap.is_(a.request("GET", "/healthz", token=None).status, 200, "the leader's is 200")
tap.ok("sluice_ha_leader 0" in b.request("GET", "/metrics", token=None).body.decode(),
       "a follower's /metrics: sluice_ha_leader 0")
tap.ok("sluice_ha_leader 1" in a.request("GET", "/metrics", token=None).body.decode(),
       "the leader's: sluice_ha_leader 1")
rc, out, err = b.cli("status")
tap.ok(rc == 0 and "leader:      a at " + a.server in out and "follower" in out,
       "sluice status through a follower names the leader and the members", out + err)
rc, out, err = c.cli("whoami")
tap.ok(rc == 0 and "admin" in out, "the CLI follows a follower's redirect", out + err)

# Work acknowledged before a crash survives it.
ids = []
for i in range(5):
    rc, out, err = b.cli("run", "--name", "before%d" % i, "--", "true")
    if rc == 0 and out.strip().isdigit():
        ids.append(int(out.strip()))
tap.is_(len(ids), 5, "five jobs submitted through a follower")
tap.ok(wait_for(lambda: all((a.request("GET", "/v1/jobs/%d" % j).json or {}).get("state") ==
                            "Succeeded" for j in ids), 30), "and run to Succeeded")

# kill -9 the leader: another takes over within the lease and a beat.
t0 = time.monotonic()
a.kill9()
nl = wait_for(lambda: leader_of([b, c]), 30, 0.02)
took = time.monotonic() - t0
tap.ok(nl and nl[1] == 2, "after SIGKILL another daemon leads, epoch 2", repr(nl))
tap.ok(took < (LEASE_MS * 2 + 3000) / 1000.0,
       "within the lease, a beat and loading (%.2f s, lease %.1f s)" % (took, LEASE_MS / 1000))
tap.diag("takeover after SIGKILL: %.2f s" % took)
new = nl[0] if nl else b
got = [(new.request("GET", "/v1/jobs/%d" % j).json or {}).get("state") for j in ids]
tap.is_(got, ["Succeeded"] * 5, "every acknowledged job is there, as it was")
r = new.request("GET", "/v1/audit/verify")
tap.ok(r.status == 200 and (r.json or {}).get("ok") is True,
       "the audit chain verifies after the takeover", repr(r))
rc, out, err = a.cli("run", "--name", "after", "--", "true") if False else new.cli(
    "run", "--name", "after", "--", "true")
tap.ok(rc == 0 and out.strip().isdigit() and int(out.strip()) == max(ids) + 1,
       "the new leader goes on with the next id", out + err)

# SIGSTOP the leader past its lease, then SIGCONT: fenced, it exits 75.
old = new
others = [m for m in (b, c) if m is not old]
before = old.request("GET", "/v1/audit/verify").json or {}
old.proc.send_signal(signal.SIGSTOP)
nl = wait_for(lambda: leader_of(others), 30, 0.02)
tap.ok(nl and nl[1] == 3, "a paused leader is replaced (epoch 3)", repr(nl))
old.proc.send_signal(signal.SIGCONT)
try:
    old.proc.wait(20)
except Exception:
    pass
tap.is_(old.proc.returncode, 75, "the old leader, woken, finds its lease gone and exits 75")
old.proc = None
log = open(old.log).read()
tap.ok("no longer leads" in log, "and says so in its log")
cur = nl[0] if nl else others[0]
r = cur.request("GET", "/v1/audit/verify")
tap.ok(r.status == 200 and (r.json or {}).get("ok") is True and
       r.json.get("records", 0) >= before.get("records", 0),
       "the audit chain still verifies: the fenced leader wrote nothing after", repr(r))

# A clean stop lets the lease go at once (a, killed earlier, is back as a
# follower, as a supervisor would start it again).
a.launch()
tap.ok(wait_for(lambda: (a.status() or {}).get("role") == "follower", 30),
       "the daemon killed earlier comes back as a follower")
t0 = time.monotonic()
rest = [a]
tap.is_(cur.stop(), 0, "a leader stops cleanly on SIGTERM")
nl = wait_for(lambda: leader_of(rest), 10, 0.02)
tap.ok(nl and nl[1] == 4 and time.monotonic() - t0 < LEASE_MS / 1000.0 + 1.5,
       "and the last daemon leads without waiting out the lease (%.2f s)"
       % (time.monotonic() - t0), repr(nl))
tap.done_testing(*rest)
