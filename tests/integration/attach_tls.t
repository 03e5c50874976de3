#!/usr/bin/env python3
"""attach_tls.t - interactive sessions over HTTPS: sluiced with --tls-cert
(a test CA made here) hands the TLS session of GET /v1/jobs/{id}/attach to
the relay after its 101. The WebSocket spoken by hand over TLS (slws.py):
input reaches the task and its output comes back, a resize, the exit
status, frames sent in the same write as the request, a client that
leaves and comes back, a client that vanishes, a burst of output read
whole, backpressure through TLS (sluiced's memory stays put). Then the
real CLI verifying the server with SLUICE_CA_CERT: `sluice run -it` under
a pseudo-terminal (size, resize, exit code), `sluice run -i` with a pipe
(output, a large burst, a large input), and a session attached again
through a restarted sluiced. No TLS handshake counts as failed, and
sluiced exits cleanly (no SSL leaked, under ASan)."""

import os
import re
import select
import subprocess
import sys
import termios
import time

# Under ASan each record buffer OpenSSL releases (SSL_MODE_RELEASE_BUFFERS)
# would wait in a 256 MiB quarantine: a small one keeps sluiced's RSS a
# measure of what it holds (the backpressure check below).
os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:quarantine_size_mb=4")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, tap, Sluiced, job_doc  # noqa: E402
from ptytest import under_pty  # noqa: E402
from slws import Attach  # noqa: E402

# A task keeps the grace of its start: 60 s covers the restart below.
d = Sluiced(fake_gpus="2xH100", args=["--interactive-detach-grace", "60s"], tls=True).start()
tap.ok(d.server.startswith("https://"), "sluiced serves HTTPS (%s)" % d.server)
CTX = d.ssl_context()
r, TOK = d.users((("alice", "default", "member"),))
tap.ok(r.status == 200 and TOK["alice"], "user alice, with a token", r)


def submit(name, command=("sh",), **spec):
    spec.setdefault("interactive", True)
    spec.setdefault("resources", {"gpus": 1, "cpuMilli": 200, "memory": "64Mi"})
    st, body = d.json_req("POST", "/v1/jobs", job_doc(name, command, **spec),
                          token=TOK["alice"])
    return (body or {}).get("id") if st == 201 else None


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


def attach(jid, tries=50, first=b""):
    """Attach over TLS once the task's terminal is up (503 while it starts)."""
    for _ in range(tries):
        ws = Attach.open(d.port, jid, TOK["alice"], ctx=CTX, first=first)
        if ws.status != 503:
            return ws
        time.sleep(0.1)
    return ws


def metric(name):
    text = d.request("GET", "/metrics").body.decode("utf-8", "replace")
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


# None of the sessions below may count as a failed handshake.
failures0 = metric("sluice_tls_handshake_failures_total")

# --- a session, by hand over TLS -------------------------------------------

a = submit("sh1")
tap.is_(wait_state(a, ("Running",)).get("state"), "Running", "an interactive job runs")
ws = attach(a)
tap.is_(ws.status, 101, "attach over HTTPS: 101 Switching Protocols")
tap.is_(ws.headers.get("sec-websocket-protocol"), "v1.attach.sluice",
        "... with the attach subprotocol")
ws.send_resize(100, 30)
ws.send_stdin(b"stty size; echo hi-over-tls; exit 3\n")
out, status = ws.read_until_status()
tap.ok(b"30 100" in out, "the resize reached the task (stty size: 30 100)", out)
tap.ok(b"hi-over-tls" in out, "typed input reached the task and its output came back", out)
tap.is_(status, {"exit_code": 3}, "the status message carries the exit code (3)")
try:
    ws.recv_frame()
except Exception as ex:  # noqa: BLE001 - the diagnostic says what came
    tap.diag("no frame after the status: %r" % ex)
tap.is_(ws.closed and ws.closed[0], 1000, "then the server closes normally (1000)")
try:
    ws.sock.settimeout(5)
    tail = ws.sock.recv(100)
    tap.is_(tail, b"", "then TLS ends with close_notify (a clean EOF, not a reset)")
except Exception as ex:  # noqa: BLE001
    tap.ok(False, "then TLS ends with close_notify (a clean EOF, not a reset)", repr(ex))
ws.sock.close()
j = wait_state(a, ("Failed", "Succeeded"))
tap.is_((j.get("state"), j.get("exit_code")), ("Failed", 3), "the job ends Failed, exit code 3")

# Frames in the same TLS write as the request: the HTTP layer has read and
# decrypted them before the 101; they go to the relay with the session.
b = submit("early")
wait_state(b, ("Running",))
ws = attach(b, first=Attach.frame(2, b"\x00" + b"echo early-bytes; exit 0\n"))
tap.is_(ws.status, 101, "an attach whose first frame came with the request: 101")
out, status = ws.read_until_status()
tap.ok(b"early-bytes" in out and status == {"exit_code": 0},
       "the frame sent with the request reached the task", (out, status))
ws.close()

# --- the client leaves, and comes back --------------------------------------

c = submit("back")
wait_state(c, ("Running",))
ws = attach(c)
ws.send_stdin(b"X=kept; echo one\n")
ws.read_until_status(until=b"one")
ws.close()
time.sleep(0.5)
ws = attach(c)
tap.is_(ws.status, 101, "a client that detached attaches again over TLS")
ws.send_stdin(b"echo $X-again\n")
out, _ = ws.read_until_status(until=b"kept-again")
tap.ok(b"kept-again" in out, "... to the same session (its shell kept X)", out)
ws.sock.close()  # gone without a close frame, nor close_notify
time.sleep(0.5)
ws = attach(c)
tap.is_(ws.status, 101, "after a client vanished without a close, the job is free again")
ws.send_stdin(b"echo $X-third; exit 6\n")
out, status = ws.read_until_status()
tap.ok(b"kept-third" in out and status == {"exit_code": 6},
       "... and the same session goes on to its end", (out, status))
ws.close()

# --- a burst of output, read whole -----------------------------------------

N = 200000
e = submit("burst")
wait_state(e, ("Running",))
ws = attach(e)
ws.send_stdin(b"seq 1 %d; exit 0\n" % N)
out, status = ws.read_until_status(timeout=120)
nums = [int(x) for x in re.findall(rb"^(\d+)\r?$", out, re.M)]
tap.ok(status == {"exit_code": 0} and nums == list(range(1, N + 1)),
       "a burst of %d lines (%d bytes) comes through TLS whole and in order" % (N, len(out)),
       "status %r, %d lines, last %r" % (status, len(nums), nums[-3:]))
ws.close()

# --- backpressure through TLS -------------------------------------------------


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


f = submit("flood", command=("sh", "-c", "exec cat /dev/zero | od -v"))
wait_state(f, ("Running",))
rss_a = rss_kib(d.proc.pid)
ws = attach(f)
time.sleep(3)  # the client reads nothing: within this the output stops
s1, rss0 = log_size(f), rss_kib(d.proc.pid)
time.sleep(2)
s2, rss1 = log_size(f), rss_kib(d.proc.pid)
tap.ok(s1 == s2 and s1 > 0,
       "a TLS client that does not read stops the task's output (log %d then %d bytes)"
       % (s1, s2))
tap.ok(rss1 - rss_a < 16 * 1024 and rss1 - rss0 < 4 * 1024,
       "sluiced's memory stays put meanwhile (%d KiB more from the attach, %d KiB while "
       "stopped)" % (rss1 - rss_a, rss1 - rss0))
got = 0
t_end = time.monotonic() + 2
while time.monotonic() < t_end:
    try:
        op, p = ws.recv_frame(1)
    except Exception:  # noqa: BLE001
        break
    got += len(p)
tap.ok(got > 100000, "reading again lets it go on (%d bytes)" % got)
tap.ok(log_size(f) > s2, "... and the task writes again")
ws.close()
d.cancel_job(f)

# --- the CLI over https ---------------------------------------------------------

SLUICE = os.path.join(SLUICE_BIN, "sluice")


def cli_env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    e.update(SLUICE_SERVER=d.server, SLUICE_TOKEN=TOK["alice"], SLUICE_CA_CERT=d.ca[0],
             TERM="xterm")
    return e


st, out, lflag = under_pty(
    [SLUICE, "run", "-it", "--gpus", "1", "--cpus", "0.2", "--memory", "64Mi", "--", "sh"],
    cli_env(), [(b"$ ", b"stty size; echo $TERM\r"), (b"40 120", (30, 90)),
     (b"xterm", b"sleep 0.5; stty size\r"), (b"30 90", b"exit 7\r")])
tap.is_(st, 7, "sluice run -it over https exits with the command's exit code (7)")
tap.ok(b"40 120" in out, "the task's terminal has the size of the client's (40 x 120)", out)
tap.ok(b"30 90" in out, "a resize of the client's terminal (SIGWINCH) reaches the task", out)
tap.ok(b"over https" not in out and b"not supported" not in out,
       "nothing says attach is unavailable over https", out)
tap.ok(lflag is not None and lflag & termios.ICANON and lflag & termios.ECHO,
       "the client's terminal is out of raw mode again after the session")


def run_i(command, data, timeout=120):
    return subprocess.run([SLUICE, "run", "-i", "--cpus", "0.2", "--memory", "64Mi", "--"]
                          + list(command), input=data, capture_output=True, env=cli_env(),
                          timeout=timeout)


p = run_i(["sh"], b"echo piped-over-tls\nexit 4\n")
tap.is_(p.returncode, 4, "sluice run -i over https exits with the command's code (4)")
tap.ok(b"piped-over-tls" in p.stdout, "and its output is on stdout", p.stdout, p.stderr)

M = 300000
p = run_i(["sh"], b"seq 1 %d; exit 0\n" % M)
nums = [int(x) for x in re.findall(rb"^(\d+)\r?$", p.stdout, re.M)]
tap.ok(p.returncode == 0 and nums == list(range(1, M + 1)),
       "a burst of %d lines (%d bytes) reaches the CLI whole and in order" % (M, len(p.stdout)),
       "exit %r, %d lines, last %r" % (p.returncode, len(nums), nums[-3:]), p.stderr[-500:])

L = 3000
data = b"".join(b"line %05d %s\n" % (i, b"x" * 60) for i in range(L))
p = run_i(["sh", "-c", "wc -l"], data)
tap.ok(p.returncode == 0 and re.search(rb"^\s*%d\s*$" % L, p.stdout, re.M),
       "a large input (%d bytes) reaches the task whole (wc -l: %d)" % (len(data), L),
       p.returncode, p.stdout[-200:], p.stderr[-500:])

failures1 = metric("sluice_tls_handshake_failures_total")
tap.ok(failures0 is not None and failures1 == failures0,
       "no TLS handshake failed in all these sessions (%s then %s): a client gone "
       "without close_notify is not one" % (failures0, failures1))

# --- attached again through a restarted sluiced, by the CLI ------------------------

proc = subprocess.Popen([SLUICE, "run", "-i", "--cpus", "0.2", "--memory", "64Mi", "--", "sh"],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        env=cli_env())


def read_until(pipe, want, secs=60):
    buf, deadline = b"", time.monotonic() + secs
    while want not in buf and time.monotonic() < deadline:
        r, _, _ = select.select([pipe], [], [], 0.2)
        if r:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
    return buf


proc.stdin.write(b"Y=survived; echo first\n")
proc.stdin.flush()
got = read_until(proc.stdout, b"first")
tap.ok(b"first" in got, "a CLI session over https runs", got)
why = d.restart()  # the relay tells the CLI it goes away (1001)
tap.ok(why is None, "sluiced restarts under the CLI's session", why)
proc.stdin.write(b"echo $Y-after; exit 0\n")
proc.stdin.flush()
got = read_until(proc.stdout, b"survived-after")
try:
    rest, err = proc.communicate(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    rest, err = proc.communicate()
tap.ok(b"survived-after" in got + rest,
       "the CLI attached again over https and the session went on", got + rest, err)
tap.is_(proc.returncode, 0, "and it exits with the command's code (0)")

# sluice attach: a session its client left, taken up again over https
left = submit("left-tls")
wait_state(left, ("Running",))
ws = attach(left)
ws.send_stdin(b"Z=kept; echo first\n")
ws.read_until_status(until=b"first")
ws.close()
deadline = time.monotonic() + 20
while job(left).get("attached") is not False and time.monotonic() < deadline:
    time.sleep(0.1)
p = subprocess.run([SLUICE, "attach", str(left)], input=b"echo $Z-over-tls; exit 6\n",
                   capture_output=True, env=cli_env(), timeout=60)
tap.ok(p.returncode == 6 and b"kept-over-tls" in p.stdout,
       "sluice attach over https takes up the left session (exit 6)", p.returncode,
       p.stdout, p.stderr)

d.cancel_all()
tap.done_testing(d)
