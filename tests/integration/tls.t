#!/usr/bin/env python3
"""sluiced over TLS, and sluice verifying it: a test CA made here with
openssl, the CLI's verification (--ca-cert, SLUICE_CA_CERT, a wrong CA, an
expired certificate, a host-name mismatch, --insecure), SIGHUP reloading
the certificate for new connections while a kept-alive one goes on (and
while clients handshake without pause),
client certificates naming a catalog User, the HTTP server's byte-level
refusals and deadlines over TLS (a silent client, half a ClientHello, a
slow head), plain HTTP on the TLS port, old protocols and weak ciphers
refused, and plain HTTP refused beyond loopback. Prints TAP."""
import hashlib, os, re, shutil, signal, socket, ssl, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sltest  # noqa: E402
from sltest import tap  # noqa: E402

HEADER_TIMEOUT = 2
D = sltest.Sluiced(tls=True)
D.args += ["--tls-client-ca", D.ca[0], "--header-timeout", "%ds" % HEADER_TIMEOUT]
D.start()
TMP = D.tls_dir
SLUICE = os.path.join(sltest.SLUICE_BIN, "sluice")


def check(ok, name, detail=""):
    tap.ok(ok, name, *([str(detail)] if not ok else []))


def cli(*args, env=None, cwd=None):
    """sluice ARGS with a clean TLS environment plus 'env'."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("SLUICE_") or k == "SLUICE_BIN"}
    e.update(env or {})
    p = subprocess.run([SLUICE] + list(args), env=e, capture_output=True, text=True,
                       timeout=60, cwd=cwd or TMP)
    return p.returncode, p.stdout, p.stderr


def fingerprint(port=None):
    """SHA-256 of the certificate a new connection is served."""
    ctx = ssl.create_default_context(cafile=D.ca[0])
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port or D.port), timeout=10) as s:
        with ctx.wrap_socket(s) as t:
            return hashlib.sha256(t.getpeercert(True)).hexdigest()


def s_client(*args):
    p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % D.port,
                        "-CAfile", D.ca[0]] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def healthy(timeout=1.0):
    """/healthz over HTTPS answers 200 within 'timeout' seconds."""
    t0 = time.monotonic()
    try:
        c = D.connection(timeout=timeout)
        c.request("GET", "/healthz")
        ok = c.getresponse().status == 200
        c.close()
        return ok and time.monotonic() - t0 < timeout
    except (OSError, ssl.SSLError):
        return False


class OneShotTLS:
    """A TLS server of our own that serves one certificate to whatever
    connects (the CLI's verification is what the tests look at)."""

    def __init__(self, cert):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert[0], cert[1])
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.ctx.wrap_socket(c, server_side=True) as t:
                    t.recv(1)
            except (OSError, ssl.SSLError):
                pass


# --- the CLI verifies the server --------------------------------------------
rc, out, err = cli("--server", D.server, "--token", D.token, "--ca-cert", D.ca[0], "jobs")
check(rc == 0 and "ID" in out, "sluice --ca-cert ca.pem jobs over https", err)
rc, out, err = cli("--token", D.token, "whoami",
                   env={"SLUICE_SERVER": D.server, "SLUICE_CA_CERT": D.ca[0]})
check(rc == 0 and "admin" in out, "SLUICE_CA_CERT names the CA", err)
rc, out, err = cli("--server", "https://localhost:%d" % D.port, "--token", D.token,
                   "--ca-cert", D.ca[0], "whoami")
check(rc == 0 and "admin" in out, "a host name the certificate names (localhost)", err)

other = sltest.make_ca(TMP, "other", "Another CA")
rc, out, err = cli("--server", D.server, "--token", D.token, "--ca-cert", other[0], "whoami")
check(rc == 3 and "sluice: %s: certificate verify failed: unable to get local issuer "
      "certificate (use --ca-cert FILE)" % D.server in err,
      "a certificate from another CA is refused, saying what to do", err)
rc, out, err = cli("--server", D.server, "--token", D.token, "whoami",
                   env={"SSL_CERT_FILE": other[0], "SSL_CERT_DIR": TMP + "/none"})
check(rc == 3 and "certificate verify failed" in err,
      "without --ca-cert the system's store is used (and does not hold the test CA)", err)

expired = sltest.make_cert(TMP, D.ca, "expired", "sluiced", days=0)
time.sleep(1.1)  # days=0: valid until the second it was signed
srv = OneShotTLS(expired)
rc, out, err = cli("--server", "https://127.0.0.1:%d" % srv.port, "--token", "x",
                   "--ca-cert", D.ca[0], "whoami")
check(rc == 3 and "certificate verify failed: certificate has expired" in err,
      "an expired certificate is refused", err)

wrongname = sltest.make_cert(TMP, D.ca, "wrongname", "sluiced", san="DNS:other.example")
srv2 = OneShotTLS(wrongname)
rc, out, err = cli("--server", "https://127.0.0.1:%d" % srv2.port, "--token", "x",
                   "--ca-cert", D.ca[0], "whoami")
check(rc == 3 and "certificate verify failed: IP address mismatch" in err,
      "a certificate for another address is refused", err)
rc, out, err = cli("--server", "https://localhost:%d" % srv2.port, "--token", "x",
                   "--ca-cert", D.ca[0], "whoami")
check(rc == 3 and "certificate verify failed: hostname mismatch" in err,
      "a certificate for another host name is refused", err)

rc, out, err = cli("--server", D.server, "--token", D.token, "--insecure", "whoami")
check(rc == 0 and "admin" in out and "warning: --insecure" in err,
      "--insecure goes on without verifying, and warns on stderr", err)
rc, out, err = cli("--server", D.server, "--token", D.token, "--insecure", "jobs")
check(rc == 0 and "warning: --insecure" in err, "... every time", err)

# A follower's 307 to the leader (docs/ha.md) is followed over https, the
# leader verified as the first server was.
class Follower:
    """An HTTPS server that answers every request 307, Sluice-Leader: D."""

    def __init__(self):
        import http.server

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(307)
                self.send_header("Sluice-Leader", D.server)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.HTTPServer(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(D.cert[0], D.cert[1])
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


f = Follower()
rc, out, err = cli("--server", "https://127.0.0.1:%d" % f.port, "--token", D.token,
                   "--ca-cert", D.ca[0], "whoami")
check(rc == 0 and "admin" in out, "a 307 to an https leader is followed", out + err)
f.srv.shutdown()

# --- /healthz, /metrics and the API over TLS --------------------------------
check(healthy(5), "/healthz over https")
r = D.request("GET", "/metrics")
check(r.status == 200 and b"sluice_tls_handshakes_total" in r.body,
      "/metrics over https, with the handshake counters", r.body[:200])

# --- SIGHUP: a new certificate for new connections --------------------------
keep = D.connection(timeout=10)
keep.request("GET", "/healthz")
r1 = keep.getresponse()
r1.read()
fp1 = fingerprint()
new = sltest.make_cert(TMP, D.ca, "server2", "sluiced", rsa=True, serial=4242)
shutil.copyfile(new[0], D.cert[0])
shutil.copyfile(new[1], D.cert[1])
D.proc.send_signal(signal.SIGHUP)
fp2 = fp1
deadline = time.monotonic() + 10
while fp2 == fp1 and time.monotonic() < deadline:
    time.sleep(0.1)
    fp2 = fingerprint()
rc, out = s_client()
serial = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=out, capture_output=True,
                        text=True).stdout.strip()
check(fp2 != fp1 and serial.upper() == "SERIAL=1092",
      "after SIGHUP a new connection is served the new certificate (serial 0x1092)", serial)
keep.request("GET", "/healthz")
r2 = keep.getresponse()
check(r2.status == 200 and r2.read() and D.running(),
      "a connection kept alive across the reload goes on")
keep.close()
with open(D.cert[0], "w") as f:
    f.write("not a certificate\n")
D.proc.send_signal(signal.SIGHUP)
deadline = time.monotonic() + 10
while "TLS reload failed" not in D.log_tail(50) and time.monotonic() < deadline:
    time.sleep(0.1)
check("TLS reload failed" in D.log_tail(50) and "old certificate stays" in D.log_tail(50),
      "a reload that fails is logged", D.log_tail(5))
check(fingerprint() == fp2 and healthy(5), "... and the certificate in force stays")
shutil.copyfile(new[0], D.cert[0])

# --- SIGHUP while connections handshake ----------------------------------------
# The main thread swaps the context while the HTTP thread makes SSLs from
# it and finishes handshakes on the old one (run under ThreadSanitizer by
# make tsan). Each reload is waited for in the log before the next pair of
# files is copied, so no reload reads a certificate with the other's key.
third = sltest.make_cert(TMP, D.ca, "server3", "sluiced", rsa=True, serial=4343)
stop_load = threading.Event()
load = {"ok": 0, "failed": [], "fps": set()}
load_mu = threading.Lock()


def handshaker():
    while not stop_load.is_set():
        try:
            with socket.create_connection(("127.0.0.1", D.port), timeout=10) as s:
                with D.ssl_context().wrap_socket(s, server_hostname="127.0.0.1") as t:
                    t.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    head = t.recv(64)
                    fp = hashlib.sha256(t.getpeercert(True)).hexdigest()
            with load_mu:
                if head.startswith(b"HTTP/1.1 200"):
                    load["ok"] += 1
                    load["fps"].add(fp)
                else:
                    load["failed"].append(head[:40])
        except (OSError, ssl.SSLError) as e:
            with load_mu:
                load["failed"].append(repr(e))


def reloads_logged():
    with open(D.log, errors="replace") as f:
        return f.read().count("TLS certificate reloaded")


workers = [threading.Thread(target=handshaker, daemon=True) for _ in range(4)]
for w in workers:
    w.start()
RELOADS = 8
before = reloads_logged()
for i in range(RELOADS):
    pair = third if i % 2 == 0 else new
    shutil.copyfile(pair[0], D.cert[0])
    shutil.copyfile(pair[1], D.cert[1])
    D.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while reloads_logged() < before + i + 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)
stop_load.set()
for w in workers:
    w.join(30)
check(reloads_logged() == before + RELOADS and not load["failed"] and load["ok"] >= RELOADS and
      len(load["fps"]) == 2 and D.running(),
      "%d reloads while 4 clients handshake without pause: all %d connections served, "
      "both certificates seen" % (RELOADS, load["ok"]),
      "reloads %d, failed %s, certificates %d" % (reloads_logged() - before,
                                                   load["failed"][:3], len(load["fps"])))
check(fingerprint() == fp2 and healthy(5),
      "... and the last certificate loaded is in force, the daemon healthy")

# --- client certificates -----------------------------------------------------
r, _ = D.users([("alice", "nlp", "member")], sltest.team_yaml("nlp"))
check(r.status == 200, "a user alice of team nlp", r.body[:200])
alice = sltest.make_cert(TMP, D.ca, "alice", "alice", san=None)
rc, out, err = cli("--server", D.server, "--ca-cert", D.ca[0], "--cert", alice[0],
                   "--key", alice[1], "whoami")
check(rc == 0 and "alice" in out and "nlp" in out and "member" in out,
      "a client certificate with CN alice is user alice, team nlp, role member", out + err)
rc, out, err = cli("whoami", env={"SLUICE_SERVER": D.server, "SLUICE_CA_CERT": D.ca[0],
                                  "SLUICE_CLIENT_CERT": alice[0],
                                  "SLUICE_CLIENT_KEY": alice[1]})
check(rc == 0 and "alice" in out, "SLUICE_CLIENT_CERT and SLUICE_CLIENT_KEY", out + err)
rc, out, err = cli("--server", D.server, "--ca-cert", D.ca[0], "--cert", alice[0],
                   "--key", alice[1], "--token", D.token, "whoami")
check(rc == 0 and "admin" in out, "a bearer token wins over the certificate", out + err)
mallory = sltest.make_cert(TMP, D.ca, "mallory", "mallory", san=None)
rc, out, err = cli("--server", D.server, "--ca-cert", D.ca[0], "--cert", mallory[0],
                   "--key", mallory[1], "whoami")
check(rc == 2 and "unauthorized" in err,
      "a certificate naming no user is refused 401", err)
stranger = sltest.make_cert(TMP, other, "stranger", "alice", san=None)
rc, out, err = cli("--server", D.server, "--ca-cert", D.ca[0], "--cert", stranger[0],
                   "--key", stranger[1], "whoami")
check(rc == 3 and "alice" not in out, "a certificate from another CA is refused at the "
      "handshake", out + err)
rc, out, err = cli("--server", D.server, "--ca-cert", D.ca[0], "whoami")
check(rc == 2, "no certificate and no token: 401", err)

# --- the HTTP server's rules over TLS ---------------------------------------
CTX = D.ssl_context()


def tls_socket(timeout=10):
    s = socket.create_connection(("127.0.0.1", D.port), timeout=timeout)
    return CTX.wrap_socket(s, server_hostname="127.0.0.1")


def exchange(raw, timeout=10):
    """Send raw bytes over TLS, read until the server closes: (data, closed)."""
    s = tls_socket(timeout)
    s.sendall(raw)
    data, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except socket.timeout:
        pass
    except (ConnectionResetError, ssl.SSLError):
        closed = True
    s.close()
    return data, closed


H = b"Host: 127.0.0.1\r\n"
G = b"GET /healthz HTTP/1.1\r\n"
NEXT = G + H + b"\r\n"
auth = ("Authorization: Bearer %s\r\n" % D.token).encode()
P = b"POST /v1/jobs HTTP/1.1\r\n" + H + auth + b"Content-Type: application/json\r\n"
for raw, status, name in (
        (P + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400, "two Content-Length"),
        (P + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 411, "chunked"),
        (G + H + b"X-A: 1\r2\r\n\r\n", 400, "a bare CR in a field value"),
        (G + H + b"X-A: a\x00b\r\n\r\n", 400, "a NUL in a field value"),
        (b"GET /" + b"a" * 1100 + b" HTTP/1.1\r\n" + H + b"\r\n", 414, "a target over 1023"),
        (G + H + b"X: " + b"a" * 10000 + b"\r\n\r\n", 431, "headers over 8 KiB"),
        (b"GET /healthz HTTP/1.2\r\n" + H + b"\r\n", 400, "version HTTP/1.2")):
    data, closed = exchange(raw + NEXT)
    check(re.findall(rb"HTTP/1\.1 (\d{3}) ", data) == [b"%d" % status] and closed,
          "over TLS, %s: %d, then the connection closes" % (name, status), data[:200])
data, closed = exchange(G + H + b"\r\n" + G + H + b"Connection: close\r\n\r\n")
check(data.count(b"HTTP/1.1 200 ") == 2 and closed, "two pipelined requests over TLS", data[:300])
jobdoc = (b'{"apiVersion":"sluice/v1","kind":"Job","metadata":{"name":"tls-pipe"},'
          b'"spec":{"command":["true"],"resources":{"gpus":0}}}')
data, closed = exchange(P + b"Content-Length: %d\r\n\r\n" % len(jobdoc) + jobdoc +
                        G + H + b"Connection: close\r\n\r\n")
check(re.findall(rb"HTTP/1\.1 (\d{3}) ", data) == [b"201", b"200"] and closed,
      "a submission (answered after its commit) and a request pipelined behind it, over TLS",
      data[:300])
# Over 2 MiB pipelined behind a submission: the server stops reading at its
# buffer's cap while the submission waits for its commit, with decrypted
# bytes left inside OpenSSL that epoll does not report; they must still be
# read once the answer is out.
fill = b'{"x":"' + b"a" * 900000 + b'"}'
data, closed = exchange(P + b"Content-Length: %d\r\n\r\n" % len(jobdoc) + jobdoc +
                        (P + b"Content-Length: %d\r\n\r\n" % len(fill) + fill) * 3 +
                        G + H + b"Connection: close\r\n\r\n", timeout=30)
check(re.findall(rb"HTTP/1\.1 (\d{3}) ", data) == [b"201", b"400", b"400", b"400", b"200"]
      and closed, "2.7 MB pipelined behind a submission over TLS: every request answered",
      re.findall(rb"HTTP/1\.1 (\d{3}) ", data))
big = b'{"x":"' + b"a" * 200000 + b'"}'
data, closed = exchange(P + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(big) + big)
check(data.startswith(b"HTTP/1.1 400 ") or data.startswith(b"HTTP/1.1 413 "),
      "a 200 KB body over TLS is read whole and answered", data[:100])

# --- deadlines over TLS: silent clients, half a ClientHello, a slow head ----
hello = ssl.MemoryBIO()
outgoing = ssl.MemoryBIO()
half = ssl.create_default_context().wrap_bio(hello, outgoing, server_hostname="x")
try:
    half.do_handshake()
except ssl.SSLWantReadError:
    pass
client_hello = outgoing.read()
silent = [socket.create_connection(("127.0.0.1", D.port), timeout=10) for _ in range(20)]
halves = []
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", D.port), timeout=10)
    s.sendall(client_hello[:len(client_hello) // 2])
    halves.append(s)
slowhead = tls_socket()
slowhead.sendall(b"GET /healthz HTTP/1.1\r\n")
t0 = time.monotonic()
check(healthy(1.0) and healthy(1.0),
      "with 40 stalled handshakes and a slow head open, /healthz answers at once")


def closed_after(s):
    """Seconds from t0 until the server closed s (None: not in 10 s)."""
    s.settimeout(10)
    try:
        while s.recv(4096):
            pass
    except (OSError, ssl.SSLError):
        pass
    return time.monotonic() - t0


times = [closed_after(s) for s in silent + halves]
check(all(t < HEADER_TIMEOUT + 3 for t in times),
      "a client that sends nothing, or half a ClientHello, is dropped at the header "
      "deadline (%ds)" % HEADER_TIMEOUT, "%r" % times)
data = b""
try:
    while True:
        chunk = slowhead.recv(4096)
        if not chunk:
            break
        data += chunk
except (OSError, ssl.SSLError):
    pass
check(data.startswith(b"HTTP/1.1 408 ") and time.monotonic() - t0 < HEADER_TIMEOUT + 3,
      "a head that does not come in time is told 408 over TLS", data[:100])
for s in silent + halves + [slowhead]:
    s.close()

# --- many idle and slow TLS clients do not keep others out (lockout.t, smaller) -
IDLE, SLOW = 300, 50
req = G + H + b"\r\n"
idle = []
for _ in range(IDLE):
    # served once, then kept alive: idle until --idle-timeout
    s = tls_socket()
    s.sendall(req)
    s.recv(4096)
    idle.append(s)
slow = [tls_socket() for _ in range(SLOW)]
t0 = time.monotonic()
served, worst, sent = 0, 0.0, 0
while time.monotonic() - t0 < HEADER_TIMEOUT + 1.5:
    for s in slow:
        try:
            s.send(req[sent:sent + 1])
        except (OSError, ssl.SSLError):
            pass
    sent += 1
    t1 = time.monotonic()
    rc, out, err = cli("--server", D.server, "--token", D.token, "--ca-cert", D.ca[0], "jobs")
    worst = max(worst, time.monotonic() - t1)
    served += rc == 0
    time.sleep(0.4)
check(served >= 3 and worst < 2.0,
      "with %d idle and %d one-byte-at-a-time TLS connections open, sluice jobs answers "
      "(%d times, slowest %.2f s)" % (IDLE, SLOW, served, worst))
got408 = 0
for s in slow:
    s.settimeout(5)
    try:
        got408 += s.recv(4096).startswith(b"HTTP/1.1 408 ")
    except (OSError, ssl.SSLError):
        pass
check(got408 == SLOW, "every slow TLS connection is told 408 at its header deadline",
      "%d of %d" % (got408, SLOW))
answers = []
for s in (idle[0], idle[-1]):
    try:
        s.sendall(req)
        answers.append(s.recv(4096)[:15])
    except (OSError, ssl.SSLError) as e:
        answers.append(repr(e))
check(answers == [b"HTTP/1.1 200 OK"] * 2,
      "the idle ones stay open and usable (their deadline is --idle-timeout)", answers)
for s in idle + slow:
    s.close()

# --- what TLS refuses ---------------------------------------------------------
try:
    data = sltest.raw_exchange(D.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
except ConnectionResetError:
    data = b""
check(not data.startswith(b"HTTP/1.1") and healthy(5),
      "plain HTTP on the TLS port is refused, and the daemon goes on", data[:80])
for flag in ("-tls1", "-tls1_1"):
    rc, out = s_client(flag, "-cipher", "DEFAULT@SECLEVEL=0")
    check(rc != 0 and ("Cipher is (NONE)" in out or "no protocols available" in out),
          "openssl s_client %s is refused" % flag, out[-300:])
for cipher in ("AES128-SHA", "AES256-GCM-SHA384", "DES-CBC3-SHA:@SECLEVEL=0", "NULL-SHA256:@SECLEVEL=0"):
    rc, out = s_client("-tls1_2", "-cipher", cipher)
    check(rc != 0, "TLS 1.2 with %s (no ECDHE, or weak) is refused" % cipher.split(":")[0],
          out[-300:])
rc, out = s_client("-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256")
check(rc == 0 and "ECDHE-RSA-AES128-GCM-SHA256" in out and "Verify return code: 0 (ok)" in out,
      "TLS 1.2 with ECDHE-RSA-AES128-GCM-SHA256 is accepted", out[-300:])
rc, out = s_client("-tls1_3")
check(rc == 0 and "TLSv1.3" in out, "TLS 1.3 is accepted", out[-300:])
check(healthy(5) and D.running(), "the daemon is healthy after all of it")

# --- plain HTTP beyond loopback; the key's mode --------------------------------
tmp = tempfile.mkdtemp(prefix="sluice-tls.")
sluiced = os.path.join(sltest.SLUICE_BIN, "sluiced")


def start(*args):
    return subprocess.run([sluiced, "--dev", "--data-dir", tmp + "/data", "--fake-gpus",
                           "1xT4"] + list(args), capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


port = sltest.free_port()
p = start("--listen", "0.0.0.0:%d" % port)
check(p.returncode == 1 and "not a loopback address" in p.stderr and "in clear" in p.stderr
      and "--insecure-http" in p.stderr and "--tls-cert" in p.stderr,
      "--listen 0.0.0.0 without TLS refuses to start, saying why", p.stderr)
check(not os.path.exists(tmp + "/data"), "... before it writes anything")
proc = subprocess.Popen([sluiced, "--dev", "--data-dir", tmp + "/data", "--fake-gpus", "1xT4",
                         "--listen", "0.0.0.0:%d" % port, "--insecure-http"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        stdin=subprocess.DEVNULL)


def plain_healthy():
    try:
        return sltest.raw_exchange(port, b"GET /healthz HTTP/1.0\r\n\r\n").startswith(
            b"HTTP/1.1 200")
    except OSError:
        return False


up = sltest.wait_for(plain_healthy, 30)
check(up, "... and starts with --insecure-http")
proc.send_signal(signal.SIGTERM)
proc.wait(20)
shutil.rmtree(tmp + "/data", ignore_errors=True)
os.chmod(D.cert[1], 0o640)
p = start("--listen", "127.0.0.1:%d" % port, "--tls-cert", D.cert[0], "--tls-key", D.cert[1])
check(p.returncode == 1 and "--tls-key %s: mode 0640" % D.cert[1] in p.stderr and
      "chmod 600" in p.stderr, "a key file others may read is refused, saying so", p.stderr)
os.chmod(D.cert[1], 0o600)
p = start("--listen", "127.0.0.1:%d" % port, "--tls-cert", D.cert[0])
check(p.returncode == 1 and "--tls-cert and --tls-key go together" in p.stderr,
      "--tls-cert without --tls-key is refused", p.stderr)
shutil.rmtree(tmp, ignore_errors=True)

tap.done_testing(D)
