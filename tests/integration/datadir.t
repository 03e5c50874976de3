#!/usr/bin/env python3
"""datadir.t - the data dir is private and one daemon's, and a daemon that
cannot start writes nothing.

A data dir made 0755 beforehand, with a stray 0644 file in it, and a
sluiced started under umask 0022: after a job has run, every file and
directory in it (store, WAL, SHM, audit key and checkpoint, admin token,
lock, logs, run records) has no group or other permission, and the
unprivileged account nobody can open none of them. A second sluiced on the
same data dir, or on the same --store from another data dir, refuses to
start and names the first one's pid, leaving the first one's running job
as it was (still Running, its ledger interval still open). A sluiced that
cannot bind its port fails before it creates a store, a token or a key.
A data dir that another account owns is refused and left untouched. A
start-up error names its flag once."""

import os
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, free_port, job_doc, tap  # noqa: E402

SLUICED = os.path.join(SLUICE_BIN, "sluiced")

os.umask(0o022)
d = Sluiced(fake_gpus="2xH100")
os.makedirs(d.data, 0o755)
os.chmod(d.data, 0o755)
with open(os.path.join(d.data, "stray"), "w") as f:
    f.write("left by hand\n")
os.chmod(os.path.join(d.data, "stray"), 0o644)
d.start()
tap.ok("made private" in open(d.log).read(), "sluiced says it made the data dir private")

st, job = d.json_req("POST", "/v1/jobs", job_doc("long", ["sh", "-c", "echo hi; sleep 30"]))
tap.is_(st, 201, "a job is submitted")
jid = job["id"]
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    job = d.json_req("GET", "/v1/jobs/%d" % jid)[1]
    if job["state"] == "Running" and os.listdir(os.path.join(d.data, "run")):
        break
    time.sleep(0.1)
tap.is_(job["state"], "Running", "it runs")
time.sleep(0.3)  # its log has a line

entries = []
for root, dirs, files in os.walk(d.data):
    for n in dirs + files:
        entries.append(os.path.join(root, n))
entries.append(d.data)
loose = ["%s %o" % (p, os.lstat(p).st_mode & 0o777) for p in entries
         if os.lstat(p).st_mode & 0o077]
tap.ok(len(entries) > (7 if d.pg_db else 10) and not loose,
       "no entry of the data dir (%d) has a group or other bit" % len(entries), *loose)
names = set(os.listdir(d.data))
# (in the PostgreSQL pass the store is a database, not files here)
want = {"audit.key", "admin.token", "sluiced.lock", "logs", "run"}
if not d.pg_db:
    want |= {"sluice.db", "sluice.db-wal", "sluice.db-shm"}
tap.ok(want <= names, "the %skey, token, lock, logs and run records are among them"
       % ("" if d.pg_db else "store, WAL, SHM, "), sorted(names))

# nobody tries every path.
probe = ("import os, sys\n"
         "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
         "opened = []\n"
         "for p in sys.argv[1:]:\n"
         "    try:\n"
         "        if os.path.isdir(p): os.listdir(p)\n"
         "        else: open(p, 'rb').read(1)\n"
         "        opened.append(p)\n"
         "    except OSError: pass\n"
         "print('\\n'.join(opened))\n")
if os.geteuid() == 0:
    out = subprocess.run([sys.executable, "-c", probe] + entries, capture_output=True,
                         text=True, timeout=60)
    tap.ok(out.returncode == 0 and out.stdout.strip() == "",
           "the account nobody can open none of them", out.stdout, out.stderr)
else:
    tap.skip(1, "switching to nobody needs root")

# --- one daemon per data dir ------------------------------------------------------
usage_open = "SELECT count(*) FROM usage WHERE job_id = ? AND end_ms IS NULL"


def open_intervals():
    return d.store_rows(usage_open, (jid,))[0][0]


tap.is_(open_intervals(), 1, "the running job has one open ledger interval")
p = subprocess.run([SLUICED, "--dev", "--listen", "127.0.0.1:%d" % free_port(),
                    "--data-dir", d.data, "--fake-gpus", "1xH100"],
                   capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
tap.is_(p.returncode, 1, "a second sluiced on the same data dir refuses to start")
tap.ok("in use by sluiced pid %d" % d.proc.pid in p.stderr,
       "naming the first one's pid (%d)" % d.proc.pid, p.stderr)
time.sleep(0.5)
job = d.json_req("GET", "/v1/jobs/%d" % jid)[1]
tap.is_(job["state"], "Running", "the first one's job is still Running")
tap.is_(open_intervals(), 1, "and its ledger interval is still open")

other = tempfile.mkdtemp(prefix="sluice-datadir.")
store = os.path.join(d.tmp, "shared.db")
a = Sluiced(fake_gpus="1xH100", args=["--store", store])
a.start()
p = subprocess.run([SLUICED, "--dev", "--listen", "127.0.0.1:%d" % free_port(),
                    "--data-dir", os.path.join(other, "data"), "--store", store,
                    "--fake-gpus", "1xH100"],
                   capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
tap.is_(p.returncode, 1, "a second sluiced on the same --store refuses to start")
tap.ok("--store" in p.stderr and "pid %d" % a.proc.pid in p.stderr,
       "naming the store and the first one's pid", p.stderr)
tap.ok(a.stop() == 0, "the first one on that store stops cleanly")

# --- a port that cannot be bound: nothing written -----------------------------------
held = socket.socket()
held.bind(("127.0.0.1", 0))
held.listen(1)
fresh = os.path.join(other, "fresh")
p = subprocess.run([SLUICED, "--dev", "--listen", "127.0.0.1:%d" % held.getsockname()[1],
                    "--data-dir", fresh, "--fake-gpus", "1xH100"],
                   capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
held.close()
tap.is_(p.returncode, 1, "sluiced fails when its port is taken")
tap.ok("cannot listen" in p.stderr, "saying so", p.stderr)
tap.ok(not os.path.exists(fresh), "before it made the data dir: no store, token or key")

# --- a data dir owned by another account: refused, left as it was ------------------
if os.geteuid() == 0:
    theirs = os.path.join(other, "theirs")
    os.makedirs(theirs, 0o755)
    os.chmod(theirs, 0o755)
    os.chown(theirs, 65534, 65534)
    p = subprocess.run([SLUICED, "--dev", "--listen", "127.0.0.1:%d" % free_port(),
                        "--data-dir", theirs, "--fake-gpus", "1xH100"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    st = os.stat(theirs)
    tap.ok(p.returncode == 1 and "owned by uid 65534" in p.stderr,
           "sluiced refuses a data dir another account owns, naming its owner", p.stderr)
    tap.ok(os.listdir(theirs) == [] and st.st_uid == 65534 and
           stat.S_IMODE(st.st_mode) == 0o755,
           "and writes nothing into it, nor changes its owner or mode",
           os.listdir(theirs), oct(st.st_mode))
else:
    tap.skip(2, "giving a directory to another account needs root")

# --- start-up errors name their flag once ------------------------------------------
bad_csv = os.path.join(other, "nodes.csv")
with open(bad_csv, "w") as f:
    f.write("sn,cpu_milli,memory_mib,gpu,model\nn1,x,1,1,H100\n")
for args, flag in ((["--fake-nodes", os.path.join(other, "absent.csv")], "--fake-nodes"),
                   (["--fake-nodes", bad_csv], "--fake-nodes"),
                   (["--config", os.path.join(other, "absent.yaml")], "--config")):
    p = subprocess.run([SLUICED, "--dev", "--listen", "127.0.0.1:%d" % free_port(),
                        "--data-dir", os.path.join(other, "e%d" % len(args[1]))] + args,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    last = (p.stderr.strip().splitlines() or [""])[-1]
    tap.ok(p.returncode == 1 and last.count(flag) == 1,
           "a bad %s is refused, the flag named once" % flag, p.stderr)

d.request("DELETE", "/v1/jobs/%d" % jid)
tap.done_testing(d)
