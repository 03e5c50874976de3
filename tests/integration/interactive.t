#!/usr/bin/env python3
"""interactive.t - interactive jobs on a real sluiced with the local
executor: spec.interactive, GET /v1/jobs/{id}/attach (a WebSocket, spoken
by hand in slws.py), the session's end with its command or its client's
detach, one client at a time, who may attach, a resize reaching the task,
backpressure (a task writing to a client that does not read stops, and
sluiced's memory stays put), the log of the session, a session surviving
a restart of sluiced; and `sluice run -it` under a pseudo-terminal."""

import os
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, tap, Sluiced, job_doc, team_yaml  # noqa: E402
from ptytest import interrupt_after, under_pty  # noqa: E402
from slws import Attach  # noqa: E402

d = Sluiced(fake_gpus="2xH100", args=["--interactive-detach-grace", "2s"]).start()

r, TOK = d.users((("alice", "default", "member"), ("bob", "default", "member"),
                  ("nick", "nlp", "member")), team_yaml("nlp"))
tap.ok(r.status == 200, "users alice, bob (default) and nick (nlp)", r)
tap.ok(all(TOK.values()), "a token for each")


def submit(name, command=("sh",), token=None, **spec):
    spec.setdefault("interactive", True)
    spec.setdefault("resources", {"gpus": 1, "cpuMilli": 200, "memory": "64Mi"})
    st, body = d.json_req("POST", "/v1/jobs", job_doc(name, command, **spec),
                          token=token or TOK["alice"])
    return st, body


def job(jid):
    return d.request("GET", "/v1/jobs/%d" % jid).json or {}


def wait_state(jid, states, secs=30):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        j = job(jid)
        if j.get("state") in states:
            return j
        time.sleep(0.1)
    return job(jid)


def attach(jid, token=None, tries=50):
    """Attach once the task's terminal is up (503 while it starts)."""
    for _ in range(tries):
        ws = Attach.open(d.port, jid, token or TOK["alice"])
        if ws.status != 503:
            return ws
        time.sleep(0.1)
    return ws


def free_gpus():
    nodes = d.request("GET", "/v1/nodes").json or {}
    return sum(1 for n in nodes.get("nodes", []) for g in n.get("gpus", [])
               if g.get("milli_allocated") == 0)


# --- the spec ---------------------------------------------------------------

st, body = submit("gang", tasks=2)
tap.is_(st, 400, "an interactive gang is refused")
tap.is_((body or {}).get("error", {}).get("field"), "spec.interactive",
        "... naming spec.interactive")
st, body = submit("arr", array="0-3")
tap.is_((st, (body or {}).get("error", {}).get("field")), (400, "spec.interactive"),
        "an interactive array is refused, naming spec.interactive")
st, body = submit("plain", command=("sleep", "30"), interactive=False,
                  resources={"gpus": 0, "cpuMilli": 200, "memory": "64Mi"})
plain = (body or {}).get("id")
tap.ok(st == 201 and job(plain).get("spec", {}).get("spec", {}).get("interactive") is None,
       "a job that is not interactive stores no interactive field", body)

# --- executors that cannot -------------------------------------------------------

sim = Sluiced(fake_gpus="2xH100", args=["--executor", "simulated"]).start()
st, body = sim.json_req("POST", "/v1/jobs", job_doc("sim", ["sh"], interactive=True))
tap.is_((st, (body or {}).get("error", {}).get("field")), (400, "spec.interactive"),
        "the simulated executor refuses an interactive job, naming spec.interactive")
tap.ok("runs no command" in (body or {}).get("error", {}).get("message", ""),
       "... and says why", body)
sim.stop()

# --- a session ----------------------------------------------------------------

gpus0 = free_gpus()
st, body = submit("sh1")
a = (body or {}).get("id")
tap.ok(st == 201 and body["spec"]["spec"].get("interactive") is True,
       "an interactive job is accepted and its spec says so", body)
tap.is_(wait_state(a, ("Running",)).get("state"), "Running", "it runs")
ws = attach(a)
tap.is_(ws.status, 101, "its user attaches: 101 Switching Protocols")
tap.is_(ws.headers.get("sec-websocket-protocol"), "v1.attach.sluice",
        "... with the attach subprotocol")
two = Attach.open(d.port, a, TOK["alice"])
tap.is_((two.status, two.error().get("code")), (409, "conflict"),
        "a second client of the same job is refused 409")
ws.send_resize(100, 30)
ws.send_stdin(b"stty size; tty; echo hi; exit 3\n")
out, status = ws.read_until_status()
tap.ok(b"30 100" in out, "the resize reached the task (stty size: 30 100)", out)
tap.ok(b"/dev/pts/" in out, "its stdin is a terminal (tty)", out)
tap.ok(b"hi" in out, "its output comes to the client", out)
tap.is_(status, {"exit_code": 3}, "the status message carries the command's exit code")
try:
    ws.recv_frame()
except Exception as ex:  # noqa: BLE001 - the diagnostic says what came
    tap.diag("no frame after the status: %r" % ex)
tap.is_(ws.closed and ws.closed[0], 1000, "then the server closes normally (1000)")
j = wait_state(a, ("Failed", "Succeeded"))
tap.is_((j.get("state"), j.get("exit_code")), ("Failed", 3),
        "the job ends with the session: Failed, exit code 3")
deadline = time.monotonic() + 10
while free_gpus() != gpus0 and time.monotonic() < deadline:
    time.sleep(0.1)
tap.is_(free_gpus(), gpus0, "and its GPU is free again")
log = d.request("GET", "/v1/jobs/%d/logs" % a).body
tap.ok(b"hi" in log and b"stty size" in log,
       "the log holds the session (what the terminal showed)", log)
ev = [e.get("type") for e in (d.request("GET", "/v1/jobs/%d/events" % a).json or {})
      .get("events", [])]
tap.ok("attach" in ev, "the attach is an event of the job", ev)
audit = d.request("GET", "/v1/audit?action=job.attach").json or {}
tap.ok(any(e.get("object") == "job:%d" % a and e.get("actor") == "alice"
           for e in audit.get("records", [])),
       "and is in the audit log (job.attach by alice)", audit)

st, body = submit("sh0")
b = body["id"]
wait_state(b, ("Running",))
ws = attach(b)
ws.send_stdin(b"exit 0\n")
out, status = ws.read_until_status()
tap.is_(status, {"exit_code": 0}, "a session that exits 0 says so")
tap.is_(wait_state(b, ("Succeeded", "Failed")).get("state"), "Succeeded", "... and Succeeded")

# --- who may attach, and when -------------------------------------------------

st, body = submit("alices")
c = body["id"]
wait_state(c, ("Running",))
ws = attach(c, TOK["bob"])
tap.is_((ws.status, ws.error().get("field")), (403, "user"),
        "another member of the team may not attach (403, field user)")
ws = attach(c, TOK["nick"])
tap.is_(ws.status, 404, "a member of another team does not see the job (404)")
ws = attach(plain)
tap.is_((ws.status, ws.error().get("field")), (409, "spec.interactive"),
        "a job that is not interactive has no terminal (409, spec.interactive)")
ws = Attach.open(d.port, c, TOK["alice"], protocol=None)
tap.is_((ws.status, ws.error().get("field")), (400, "Sec-WebSocket-Protocol"),
        "an attach without the subprotocol is refused, naming it")
ws = Attach.open(d.port, c, TOK["alice"], key="not-a-key")
tap.is_((ws.status, ws.error().get("field")), (400, "Sec-WebSocket-Key"),
        "a bad Sec-WebSocket-Key is refused, naming it")
ws = Attach.open(d.port, c, TOK["alice"], version="8")
tap.is_((ws.status, ws.headers.get("sec-websocket-version")), (426, "13"),
        "another WebSocket version: 426, Sec-WebSocket-Version: 13")
r = d.request("GET", "/v1/jobs/%d/attach" % c, token=TOK["alice"])
tap.is_(r.status, 426, "a plain GET of attach: 426 Upgrade Required")
ws = Attach.open(d.port, c, None)
tap.is_(ws.status, 401, "no token: 401")
ws = attach(c, d.token)
tap.is_(ws.status, 101, "an admin may attach to alice's session")

# --- the client leaves ---------------------------------------------------------

ws.send_stdin(b"echo ready\n")
out, _ = ws.read_until_status(until=b"ready")
t0 = time.monotonic()
ws.sock.close()  # gone without a close frame, as a dropped connection
j = wait_state(c, ("Failed", "Succeeded", "Cancelled"), secs=30)
took = time.monotonic() - t0
tap.is_((j.get("state"), j.get("exit_code")), ("Failed", 129),
        "a session left alone past the grace is hung up: SIGHUP, exit 129")
tap.ok(1.5 <= took <= 15, "after the grace (2s), not before: %.1f s" % took)

st, body = submit("back")
e = body["id"]
wait_state(e, ("Running",))
ws = attach(e)
ws.close()
time.sleep(0.5)
ws = attach(e)
tap.is_(ws.status, 101, "a client that comes back within the grace attaches again")
ws.send_stdin(b"echo again; exit 5\n")
out, status = ws.read_until_status()
tap.ok(b"again" in out and status == {"exit_code": 5},
       "... and the same session goes on", (out, status))

# --- backpressure --------------------------------------------------------------


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def log_size(jid):
    try:
        return os.path.getsize(os.path.join(d.data, "logs", "%d.0.log" % jid))
    except OSError:
        return -1


st, body = submit("flood", command=("sh", "-c", "exec cat /dev/zero | od -v"))
f = body["id"]
wait_state(f, ("Running",))
ws = attach(f)
rss0 = rss_kib(d.proc.pid)
time.sleep(3)  # the client reads nothing
s1 = log_size(f)
time.sleep(1)
s2 = log_size(f)
rss1 = rss_kib(d.proc.pid)
tap.ok(s1 == s2 and s1 > 0,
       "a client that does not read stops the task's output (log %d then %d bytes)" % (s1, s2))
tap.ok(rss1 - rss0 < 16 * 1024,
       "sluiced's memory stays put meanwhile (%d KiB more)" % (rss1 - rss0))
got = 0
t_end = time.monotonic() + 2
while time.monotonic() < t_end:
    try:
        op, p = ws.recv_frame(1)
    except Exception:
        break
    got += len(p)
tap.ok(got > 100000, "reading again lets it go on (%d bytes)" % got)
tap.ok(log_size(f) > s2, "... and the task writes again")
ws.close()
d.cancel_job(f)

# --- sluice run -it, under a pseudo-terminal ----------------------------------

SLUICE = os.path.join(SLUICE_BIN, "sluice")


def cli_env(token):
    return dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=token, TERM="xterm")


st, out, lflag = under_pty(
    [SLUICE, "run", "-it", "--gpus", "1", "--cpus", "0.2", "--memory", "64Mi", "--", "sh"],
    cli_env(TOK["alice"]), [(b"$ ", b"stty size; echo $TERM\r"), (b"40 120", (30, 90)),
     (b"xterm", b"sleep 0.5; stty size\r"), (b"30 90", b"exit 7\r")])
tap.is_(st, 7, "sluice run -it exits with the command's exit code (7)")
tap.ok(b"40 120" in out, "the task's terminal has the size of the client's (40 x 120)", out)
tap.ok(b"xterm" in out, "and the client's TERM", out)
tap.ok(b"30 90" in out, "a resize of the client's terminal (SIGWINCH) reaches the task", out)
tap.ok(lflag is not None and lflag & termios.ICANON and lflag & termios.ECHO,
       "the client's terminal is out of raw mode again after the session")
tap.ok(b"submitted" in out, "sluice says the job was submitted (on stderr)", out)

st, out, _ = under_pty([SLUICE, "shell", "--cpus", "0.2", "--memory", "64Mi"],
                       cli_env(TOK["alice"]), [(b"$ ", b"echo in-a-shell; exit 9\r")])
tap.is_(st, 9, "sluice shell runs the account's shell and exits with its code")
tap.ok(b"in-a-shell" in out, "... which ran the command typed", out)

p = subprocess.run([SLUICE, "run", "-i", "--cpus", "0.2", "--memory", "64Mi", "--", "sh"],
                   input=b"echo piped\nexit 4\n", capture_output=True,
                   env=cli_env(TOK["alice"]), timeout=60)
tap.is_(p.returncode, 4, "sluice run -i with a pipe for stdin exits with the command's code")
tap.ok(b"piped" in p.stdout, "and its output on stdout", p.stdout, p.stderr)

for data, how in ((b"a line\n", "after a newline"), (b"no newline", "within a line")):
    p = subprocess.run([SLUICE, "run", "-i", "--cpus", "0.2", "--memory", "64Mi", "--", "cat"],
                       input=data, capture_output=True, env=cli_env(TOK["alice"]), timeout=60)
    tap.ok(p.returncode == 0 and data.strip() in p.stdout,
           "the end of a piped stdin %s ends the task's input (cat ends)" % how,
           p.returncode, p.stdout, p.stderr)

# a job that waits: why, on stderr; Ctrl-C (SIGINT) cancels it
hog_st, hog = submit("hog", command=("sleep", "300"), interactive=False,
                     resources={"gpus": 2, "cpuMilli": 200, "memory": "64Mi"})
proc = subprocess.Popen([SLUICE, "run", "-i", "--gpus", "1", "--", "sh"],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        env=cli_env(TOK["alice"]))
err = interrupt_after(proc, 3)
tap.ok(b"is pending" in err, "sluice run -i says why the job waits", err)
tap.is_(proc.returncode, 130, "Ctrl-C while it waits: exit 130")
tap.ok(b"cancelled" in err, "... and the waiting job is cancelled", err)
d.cancel_job(hog["id"])

# --- a restart of sluiced -------------------------------------------------------

# A task keeps the grace of its start: this one gets 60 s, for the restart.
d.args = ["--interactive-detach-grace", "60s"]
why = d.restart()
tap.ok(why is None, "sluiced restarts with a detach grace of 60s", why)
st, body = submit("survivor")
g = body["id"]
wait_state(g, ("Running",))
ws = attach(g)
ws.send_stdin(b"X=kept; echo one\n")
ws.read_until_status(until=b"one")
why = d.restart()  # the relay tells the client it goes away (1001)
tap.ok(why is None, "sluiced restarts under a session", why)
ws = attach(g)
tap.is_(ws.status, 101, "the session is attached again through the new sluiced")
ws.send_stdin(b"echo $X; exit 0\n")
out, status = ws.read_until_status()
tap.ok(b"kept" in out and status == {"exit_code": 0},
       "the shell kept its state across the restart", (out, status))
tap.is_(wait_state(g, ("Succeeded", "Failed")).get("state"), "Succeeded",
        "and the job ends Succeeded")

# --- sluice attach: a session its client left, taken up again --------------------
st, body = submit("left")
k = body["id"]
wait_state(k, ("Running",))
ws = attach(k)
ws.send_stdin(b"Y=still; echo first\n")
ws.read_until_status(until=b"first")
ws.close()  # the client leaves; the task has its 60 s grace
deadline = time.monotonic() + 20
while job(k).get("attached") is not False and time.monotonic() < deadline:
    time.sleep(0.1)
p = subprocess.run([SLUICE, "attach", str(k)], input=b"echo $Y-here; exit 5\n",
                   capture_output=True, env=cli_env(TOK["alice"]), timeout=60)
tap.is_(p.returncode, 5, "sluice attach takes up a session its client left: the command's "
        "exit code (5)")
tap.ok(b"still-here" in p.stdout, "... in the same shell, which kept its state", p.stdout,
       p.stderr)
st, plain = submit("plain", command=("sleep", "300"), interactive=False)
p = subprocess.run([SLUICE, "attach", str(plain["id"])], capture_output=True,
                   env=cli_env(TOK["alice"]), timeout=60)
tap.ok(p.returncode == 2 and b"not interactive" in p.stderr and b"sluice logs" in p.stderr,
       "sluice attach to a job that is not interactive: refused, pointing to sluice logs",
       p.stderr)
p = subprocess.run([SLUICE, "attach", "x1"], capture_output=True, env=cli_env(TOK["alice"]),
                   timeout=60)
tap.ok(p.returncode == 1 and b"job id" in p.stderr, "sluice attach with a bad job id: a "
       "usage error", p.stderr)
# both GPUs held: an interactive job waits; Ctrl-C stops the wait, not the job
st, waiting = submit("waits", resources={"gpus": 2, "cpuMilli": 200, "memory": "64Mi"})
proc = subprocess.Popen([SLUICE, "attach", str(waiting["id"])], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        env=cli_env(TOK["alice"]))
err = interrupt_after(proc, 3)
tap.ok(proc.returncode == 130 and b"is pending" in err and b"still pending" in err,
       "sluice attach to a pending job says why it waits; Ctrl-C: exit 130", err)
tap.is_(job(waiting["id"]).get("state"), "Pending", "... and the job is not cancelled")

d.cancel_all()
tap.done_testing(d)
