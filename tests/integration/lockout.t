#!/usr/bin/env python3
"""lockout.t - no lock-out without a token: the daemon's connection limits.

With 2,000 idle and 200 one-byte-per-second (slowloris) connections open
from 127.0.0.2, an authenticated `sluice jobs` from 127.0.0.1 answers,
correctly and within 1 s, again and again while the slow ones live; the
per-peer limit holds (512 served, every other one answered 429 and closed);
the header deadline closes the slow ones 10 s after their accept, though
each sends a byte a second. Then, with small limits given as flags: the
per-peer limit per address, the oldest idle connection closed to make room
when the table is full (least recently active, not first opened), and each
deadline - a new connection's, a head's (408), a body's (408), a kept-alive
connection's. Needs 127.0.0.2-127.0.0.7 (Linux loopback) and an open files
limit of 3,000 for this process. Prints TAP.
"""
import os
import resource
import select
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import tap, Sluiced, SLUICE_BIN, job_doc  # noqa: E402

IDLE, SLOW = 2000, 200
PER_PEER, HEADER_TIMEOUT = 512, 10.0  # the daemon's defaults (sluiced(8))

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = 3000
if hard != resource.RLIM_INFINITY and hard < want:
    tap.skip_all("the open files limit is %d; this test needs %d" % (hard, want))
if soft != resource.RLIM_INFINITY and soft < want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY
                                                else want, hard))
try:
    probe = socket.socket()
    probe.bind(("127.0.0.2", 0))
    probe.close()
except OSError as e:
    tap.skip_all("cannot bind 127.0.0.2: %s" % e)


def connect_from(src, port):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


class Watch:
    """Sockets watched for what the server sends and when it closes."""

    def __init__(self):
        self.poll = select.poll()
        self.info = {}  # fd -> dict(sock, opened, data, closed)

    def add(self, s, **kw):
        self.info[s.fileno()] = dict(sock=s, opened=time.monotonic(), data=b"",
                                     closed=None, **kw)
        self.poll.register(s, select.POLLIN)
        return self.info[s.fileno()]

    def step(self, timeout_ms):
        for fd, _ in self.poll.poll(timeout_ms):
            i = self.info[fd]
            try:
                chunk = i["sock"].recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                i["data"] += chunk
                continue
            i["closed"] = time.monotonic()
            self.poll.unregister(fd)

    def run(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.step(50)

    def drop(self, i):
        self.poll.unregister(i["sock"])
        i["sock"].close()
        i["closed"] = i["closed"] or time.monotonic()

    def close_all(self):
        for i in self.info.values():
            i["sock"].close()


def sluice_jobs():
    t = time.monotonic()
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluice"), "jobs"], capture_output=True,
                       text=True, timeout=30)
    return time.monotonic() - t, p


# --- the attack, against the defaults -------------------------------------------
d = Sluiced(fake_gpus="1xH100").start()
r = d.request("POST", "/v1/jobs", job_doc("lockout-probe", ("sleep", "600"), resources={"gpus": 1}))
tap.is_(r.status, 201, "a job to look for is submitted")
probe = (r.json or {}).get("id")
d.close_conn()
e0, p = sluice_jobs()
tap.ok(p.returncode == 0 and "lockout-probe" in p.stdout,
       "sluice jobs lists it before the attack (%.3f s)" % e0, p.stdout + p.stderr)

w = Watch()
head = (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000)
slow, idle, failed = [], [], []
for n, kind in ((SLOW, "slow"), (IDLE, "idle")):
    for _ in range(n):
        try:
            (slow if kind == "slow" else idle).append(w.add(connect_from("127.0.0.2", d.port),
                                                            kind=kind, sent=0))
        except OSError as e:
            failed.append(str(e))
tap.ok(not failed and len(slow) == SLOW and len(idle) == IDLE,
       "%d idle and %d slow connections opened from 127.0.0.2" % (IDLE, SLOW),
       "%d failed: %s" % (len(failed), failed[:3]))
t0 = time.monotonic()
runs, next_byte, cli_at = [], t0, [1.0, 3.0, 5.0, 7.0, 8.5]
while time.monotonic() - t0 < HEADER_TIMEOUT + 3.5:
    w.step(50)
    now = time.monotonic()
    if now >= next_byte:
        for i in slow:
            if i["closed"] is None:
                try:
                    i["sock"].send(head[i["sent"]:i["sent"] + 1])
                    i["sent"] += 1
                except OSError:
                    pass
        next_byte += 1.0
    if cli_at and now - t0 >= cli_at[0]:
        cli_at.pop(0)
        if not runs:
            # One second in: what the per-peer limit let in.
            w.step(0)
            open_now = [i for i in slow + idle if i["closed"] is None]
            shed = [i for i in slow + idle if i["closed"] is not None]
            tap.is_(len(open_now), PER_PEER,
                    "the per-peer limit holds: %d of them are served" % PER_PEER)
            tap.ok(all(i["closed"] is None for i in slow),
                   "every slow connection (opened first) is among them")
            tap.ok(shed and all(i["data"].startswith(b"HTTP/1.1 429 ") and
                                b"too_many_requests" in i["data"] for i in shed),
                   "every other one is answered 429 and closed at once",
                   "%r" % [i["data"][:60] for i in shed if not i["data"].startswith(
                       b"HTTP/1.1 429 ")][:3])
        runs.append((now - t0,) + sluice_jobs())
for at, took, p in runs:
    tap.ok(p.returncode == 0 and "lockout-probe" in p.stdout and took < 1.0,
           "%.1f s into the attack an authenticated sluice jobs from 127.0.0.1 answers "
           "in %.3f s (< 1 s)" % (at, took), "exit %d: %s" % (p.returncode, p.stdout + p.stderr))
tap.diag("sluice jobs under attack: %s s" % ", ".join("%.3f" % t for _, t, _ in runs))
served = [i for i in slow + idle if i["data"][:12] != b"HTTP/1.1 429"]
late = [(round(i["closed"] - i["opened"], 2) if i["closed"] else None, i["kind"])
        for i in served
        if i["closed"] is None or not (HEADER_TIMEOUT - 0.5 <= i["closed"] - i["opened"]
                                       <= HEADER_TIMEOUT + 2.5)]
tap.ok(not late, "every served connection is closed by the header deadline, %.0f s after "
       "its accept (the slow ones sent a byte a second until then)" % HEADER_TIMEOUT,
       "closed after (s, kind): %r" % late[:10])
tap.ok(all(i["sent"] >= HEADER_TIMEOUT - 1 for i in slow),
       "each slow connection sent a byte a second while it lived",
       "sent: %r" % sorted({i["sent"] for i in slow}))
tap.ok(all(i["data"].startswith(b"HTTP/1.1 408 ") for i in slow),
       "a slow connection is told 408 Request Timeout",
       "%r" % [i["data"][:40] for i in slow if not i["data"].startswith(b"HTTP/1.1 408")][:3])
tap.ok(all(i["data"] == b"" for i in served if i["kind"] == "idle"),
       "an idle one is closed without a word")
w.close_all()
took, p = sluice_jobs()
tap.ok(p.returncode == 0 and "lockout-probe" in p.stdout,
       "after the attack sluice jobs answers (%.3f s)" % took, p.stderr)
tap.ok(isinstance(probe, int) and d.cancel_job(probe), "the probe job is cancelled and ends")
tap.ok(d.stop() == 0, "sluiced exits cleanly on SIGTERM after the attack", d.log_tail(30))

# --- small limits: per peer, eviction, every deadline -------------------------------
d = Sluiced(fake_gpus="1xH100", args=[
    "--max-connections", "20", "--max-connections-per-peer", "8",
    "--header-timeout", "2s", "--body-timeout", "2s", "--idle-timeout", "3s"]).start()
d.close_conn()
w = Watch()
mine = [w.add(connect_from("127.0.0.3", d.port)) for _ in range(10)]
w.run(0.5)
tap.ok(all(i["closed"] is None for i in mine[:8]) and
       all(i["closed"] is not None and i["data"].startswith(b"HTTP/1.1 429 ")
           for i in mine[8:]),
       "with --max-connections-per-peer 8, the 9th and 10th connection of an address get 429")
other = w.add(connect_from("127.0.0.4", d.port))
other["sock"].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
w.run(0.5)
tap.ok(other["data"].startswith(b"HTTP/1.1 200 ") and other["closed"] is None,
       "another address is served meanwhile", "%r" % other["data"][:80])
w.drop(mine[0])
again = w.add(connect_from("127.0.0.3", d.port))
w.run(0.3)
tap.ok(again["closed"] is None, "a connection closed by the peer frees its place")
w.close_all()
time.sleep(0.3)

# Eviction: fill the table of 20 with idle connections from three
# addresses, refresh the first, then connect again from a fourth.
w = Watch()
fill = []
for k in range(20):
    fill.append(w.add(connect_from("127.0.0.%d" % (5 + k // 8), d.port)))
    time.sleep(0.01)
fill[0]["sock"].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
w.run(0.3)
tap.ok(fill[0]["data"].startswith(b"HTTP/1.1 200 ") and
       all(i["closed"] is None for i in fill),
       "20 connections fill the table; the first one is used again")
new = w.add(connect_from("127.0.0.1", d.port))
new["sock"].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # and it stays
w.run(0.5)
tap.ok(new["data"].startswith(b"HTTP/1.1 200 "),
       "a new connection to a full table is served", "%r" % new["data"][:80])
tap.ok(fill[1]["closed"] is not None and fill[1]["data"] == b"" and
       fill[0]["closed"] is None and all(i["closed"] is None for i in fill[2:]),
       "the least recently active idle connection was closed for it, not the first opened",
       "closed: %r" % [k for k, i in enumerate(fill) if i["closed"] is not None])
new2 = w.add(connect_from("127.0.0.1", d.port))
new2["sock"].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
w.run(0.5)
tap.ok(new2["data"].startswith(b"HTTP/1.1 200 ") and fill[2]["closed"] is not None and
       all(i["closed"] is None for i in fill[3:]),
       "and the next one closes the next oldest",
       "closed: %r" % [k for k, i in enumerate(fill) if i["closed"] is not None])
w.close_all()
time.sleep(0.3)

# Deadlines, all at once: a new connection that sends nothing, a head that
# does not end, a body that does not come, and a kept-alive connection. A
# close is looked for from the deadline to 1.5 s after it (the sweep runs
# every 0.5 s; a loaded machine may be slow to show it), never before.
w = Watch()
fresh = w.add(connect_from("127.0.0.3", d.port))
part = w.add(connect_from("127.0.0.3", d.port))
part["sock"].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
body = w.add(connect_from("127.0.0.3", d.port))
body["sock"].sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                     d.token.encode() + b"\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"a\"")
keep = w.add(connect_from("127.0.0.3", d.port))
keep["sock"].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
late = w.add(connect_from("127.0.0.3", d.port))
late["sock"].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
w.run(1.5)
late["sock"].send(b"G")  # 1.5 s after its answer: a head begins
late["head_at"] = time.monotonic()
w.run(4.0)


def after(i, start=None):
    return None if i["closed"] is None else i["closed"] - (start or i["opened"])


tap.ok(after(fresh) is not None and 1.8 <= after(fresh) <= 3.5 and fresh["data"] == b"",
       "--header-timeout 2s: a new connection that sends nothing is closed after 2 s",
       "after %r: %r" % (after(fresh), fresh["data"][:60]))
tap.ok(after(part) is not None and 1.8 <= after(part) <= 3.5 and
       part["data"].startswith(b"HTTP/1.1 408 "),
       "a head that does not end is answered 408 after 2 s",
       "after %r: %r" % (after(part), part["data"][:60]))
tap.ok(after(body) is not None and 1.8 <= after(body) <= 3.5 and
       body["data"].startswith(b"HTTP/1.1 408 "),
       "--body-timeout 2s: a body that does not come is answered 408 after 2 s",
       "after %r: %r" % (after(body), body["data"][:60]))
tap.ok(after(keep) is not None and 2.8 <= after(keep) <= 4.5 and
       keep["data"].startswith(b"HTTP/1.1 200 ") and keep["data"].count(b"HTTP/1.1") == 1,
       "--idle-timeout 3s: a kept-alive connection is closed 3 s after its answer",
       "after %r: %r" % (after(keep), keep["data"][:60]))
tap.ok(after(late, late["head_at"]) is not None and
       1.8 <= after(late, late["head_at"]) <= 3.5 and late["data"].count(b"408") == 1,
       "on a kept-alive connection the head deadline runs from the head's first byte",
       "after %r: %r" % (after(late, late["head_at"]), late["data"][-80:]))
w.close_all()
r = d.request("GET", "/healthz")
tap.is_(r.status, 200, "the daemon is healthy after all of it")
tap.done_testing(d)
