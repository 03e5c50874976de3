"""sltest.py - helpers for Python integration tests; the twin of tests/lib.sh.

    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from sltest import tap, Sluiced

    d = Sluiced(fake_gpus="4xH100").start()
    r = d.request("GET", "/v1/whoami")
    tap.is_(r.status, 200, "whoami answers 200")
    tap.done_testing(d)      # stops d, checks a clean SIGTERM exit, prints 1..N

TAP is plan-less. The daemon is "$SLUICE_BIN/sluiced --dev" (SLUICE_BIN
defaults to <repo>/build/asan) on a free 127.0.0.1 port with a temp data dir
(removed at exit unless SLUICE_KEEP_TMP=1). Standard library only.
"""

import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", ".."))
SLUICE_BIN = os.environ.get("SLUICE_BIN") or os.path.join(REPO, "build", "asan")

os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")


class Tap:
    """Plan-less TAP producer."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        self.done = False

    def ok(self, cond, name, *diags):
        self.n += 1
        cond = bool(cond)
        line = "%s %d - %s" % ("ok" if cond else "not ok", self.n,
                               name.replace("\n", " "))
        print(line, flush=True)
        if not cond:
            self.failed += 1
            for d in diags:
                self.diag(d)
        return cond

    def is_(self, got, want, name):
        return self.ok(got == want, name,
                       "       got: %r" % (got,), "  expected: %r" % (want,))

    def diag(self, text):
        for line in str(text).splitlines() or [""]:
            print("# " + line, flush=True)

    def skip(self, n, reason):
        """Count the next n tests as skipped (a check this host cannot make)."""
        for _ in range(n):
            self.n += 1
            print("ok %d # skip %s" % (self.n, reason), flush=True)

    def skip_all(self, reason):
        print("1..0 # SKIP %s" % reason, flush=True)
        self.done = True
        sys.exit(0)

    def bail(self, name, *diags):
        """Record a failure and finish now (the test cannot go on)."""
        self.ok(False, name, *diags)
        self.done_testing()

    def done_testing(self, *daemons):
        for d in daemons:
            if d is not None and d.running():
                rc = d.stop()
                if not self.ok(rc == 0, "sluiced exits cleanly on SIGTERM",
                               "exit status %s" % rc):
                    self.diag(d.log_tail(40))
        print("1..%d" % self.n, flush=True)
        self.done = True
        if self.failed:
            self.diag("Looks like you failed %d test(s) of %d." %
                      (self.failed, self.n))
        sys.exit(1 if self.failed else 0)


tap = Tap()


def _atexit_plan():
    # A test that dies without done_testing must not look like a pass.
    if not tap.done:
        print("1..%d" % tap.n, flush=True)
        if tap.failed == 0:
            print("# died before done_testing", flush=True)
            os._exit(1)


atexit.register(_atexit_plan)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Response:
    def __init__(self, status, headers, body):
        self.status = status          # int; 0 when no answer came (body says why)
        self.headers = headers        # dict, lower-case names
        self.body = body              # bytes
        self._json = None
        self.json_error = None
        ctype = headers.get("content-type", "")
        if ctype.split(";")[0].strip() == "application/json":
            try:
                self._json = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                self.json_error = str(e)

    @property
    def ctype(self):
        return self.headers.get("content-type", "").split(";")[0].strip()

    @property
    def json(self):
        return self._json

    def error_field(self):
        try:
            return self._json["error"].get("field")
        except (TypeError, KeyError, AttributeError):
            return None

    def error_code(self):
        try:
            return self._json["error"].get("code")
        except (TypeError, KeyError, AttributeError):
            return None

    def __repr__(self):
        return "<%d %s %r>" % (self.status, self.ctype, self.body[:300])


def response_of(data):
    """A Response from the raw bytes of an HTTP/1.1 answer: its status line,
    headers and the rest as the body (status 0 when there is no status)."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    first = lines[0].split()
    status = int(first[1]) if len(first) > 1 and first[1].isdigit() else 0
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return Response(status, headers, body)


def raw_exchange(port, request, timeout=10):
    """Send the bytes of one request (with Connection: close) to sluiced on
    127.0.0.1:port as they are, and return every byte of the answer, read
    until the server closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    finally:
        s.close()


def openssl(*args, cwd=None):
    """Run the openssl tool; raises on failure."""
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)


def make_ca(dirpath, name="ca", cn="Sluice Test CA"):
    """A self-signed CA in dirpath: (name.pem, name.key)."""
    os.makedirs(dirpath, exist_ok=True)
    pem, key = os.path.join(dirpath, name + ".pem"), os.path.join(dirpath, name + ".key")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", key, "-out", pem, "-days", "30", "-subj", "/CN=" + cn)
    return pem, key


def make_cert(dirpath, ca, name, cn, san="IP:127.0.0.1,DNS:localhost", days=30,
              serial=None, rsa=False):
    """A certificate for 'cn' signed by ca (pem, key): (name.pem, name.key),
    the key mode 0600. days=0 makes one that expires at once."""
    pem, key = os.path.join(dirpath, name + ".pem"), os.path.join(dirpath, name + ".key")
    csr, ext = os.path.join(dirpath, name + ".csr"), os.path.join(dirpath, name + ".ext")
    newkey = ["-newkey", "rsa:2048"] if rsa else \
        ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    openssl("req", *newkey, "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=" + cn)
    with open(ext, "w") as f:
        f.write(("subjectAltName=%s\n" % san if san else "") +
                "extendedKeyUsage=serverAuth,clientAuth\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-out", pem,
            "-days", str(days), "-set_serial", str(serial or int(time.time() * 1000)),
            "-extfile", ext)
    os.chmod(key, 0o600)
    return pem, key


_NO_TOKEN = object()


class Sluiced:
    """One sluiced --dev process with its own data dir and port."""

    def __init__(self, fake_gpus=None, args=(), tmp=None, tls=False):
        """tls=True: serve HTTPS with a certificate for 127.0.0.1 and
        localhost from a test CA made in TMP/tls (self.ca, self.cert)."""
        if fake_gpus is None:
            fake_gpus = os.environ.get("FAKE_GPUS", "4xH100")
        self.fake_gpus = fake_gpus
        self.args = list(args)
        self.tmp = tmp or tempfile.mkdtemp(prefix="sluice-test.")
        # Jobs run as an unprivileged account (sluiced --job-user, nobody
        # by default): what they write goes in self.jobs (mode 1777).
        os.chmod(self.tmp, 0o711)
        self.jobs = os.path.join(self.tmp, "jobs")
        os.makedirs(self.jobs, exist_ok=True)
        os.chmod(self.jobs, 0o1777)
        self.data = os.path.join(self.tmp, "data")
        self.log = os.path.join(self.tmp, "sluiced.log")
        self.port = None
        self.proc = None
        self.token = None
        self._conn = None
        self.pg_db = None             # the PostgreSQL pass: this daemon's database
        self.ca = self.cert = None
        if tls:
            self.tls_dir = os.path.join(self.tmp, "tls")
            self.ca = make_ca(self.tls_dir)
            self.cert = make_cert(self.tls_dir, self.ca, "server", "sluiced", rsa=True)
            self.args += ["--tls-cert", self.cert[0], "--tls-key", self.cert[1]]
        atexit.register(self._cleanup)

    # --- lifecycle ---------------------------------------------------------

    @property
    def server(self):
        return "%s://127.0.0.1:%d" % ("https" if self.ca else "http", self.port)

    def ssl_context(self):
        """A client context that trusts the test CA (tls=True only)."""
        return ssl.create_default_context(cafile=self.ca[0])

    def _argv(self):
        argv = [os.path.join(SLUICE_BIN, "sluiced"), "--dev", "--listen",
                "127.0.0.1:%d" % self.port, "--data-dir", self.data]
        if self.fake_gpus and self.fake_gpus != "none":
            argv += ["--fake-gpus", self.fake_gpus]
        if self.pg_db is None and on_postgres() and \
                not any(a == "--store" or a.startswith("--store=") for a in self.args):
            self.pg_db = pg_test_db()
        if self.pg_db:
            argv += ["--store", self.pg_db]
        return argv + self.args

    def _launch(self, timeout=30.0):
        """Start and wait for /healthz. Returns None or the reason it failed."""
        self.close_conn()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self._argv(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.proc = None
                return "sluiced exited with status %d before it was healthy" % rc
            try:
                c = self.connection(timeout=2)
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    self._read_token()
                    return None
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        return "sluiced not healthy after %.0f s" % timeout

    def _read_token(self):
        path = os.path.join(self.data, "admin.token")
        try:
            with open(path) as f:
                self.token = f.read().strip()
        except OSError:
            self.token = None
        os.environ["SLUICE_SERVER"] = self.server
        if self.token:
            os.environ["SLUICE_TOKEN"] = self.token

    def start(self, timeout=30.0):
        """Start on a new free port; on failure records a failed test and
        finishes the test (a test cannot go on without its daemon)."""
        binary = os.path.join(SLUICE_BIN, "sluiced")
        if not os.access(binary, os.X_OK):
            tap.bail("sluiced starts",
                     "no executable %s (build it: make SAN=1 all)" % binary)
        why = None
        for _ in range(3):
            self.port = free_port()
            why = self._launch(timeout)
            if why is None:
                return self
            # The free port may have been taken before the daemon bound it.
            if self.proc is None and "in use" in self.log_tail(5).lower():
                continue
            break
        self.kill9()
        tap.bail("sluiced starts", why, self.log_tail(30))
        return self

    def restart(self, timeout=30.0):
        """Same data dir and port. Returns None, or the reason it failed."""
        if self.running():
            self.stop()
        return self._launch(timeout)

    def cancel_job(self, jid, timeout=30.0):
        """Cancel job jid (a test's long job, before the daemon stops: a
        running local job outlives sluiced) and wait until it has ended.
        Returns whether it did."""
        self.request("DELETE", "/v1/jobs/%d" % jid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = (self.request("GET", "/v1/jobs/%d" % jid).json or {}).get("state")
            if st not in ("Pending", "Running"):
                return True
            time.sleep(0.1)
        return False

    def cancel_all(self, timeout=60.0):
        """Cancel every pending and running job and wait until each has
        ended: a running local job outlives sluiced. Returns whether all
        did."""
        ids = [j["id"] for j in self.list_jobs(state="Pending,Running")
               if isinstance(j.get("id"), int)]
        for jid in ids:
            self.request("DELETE", "/v1/jobs/%d" % jid)
        return all(self.cancel_job(jid, timeout) for jid in ids)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10.0):
        """SIGTERM, wait, then SIGKILL. Returns the exit status (negative
        signal number when killed, as subprocess reports it)."""
        self.close_conn()
        if self.proc is None:
            return 0
        p, self.proc = self.proc, None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                tap.diag("sluiced did not exit within %.0f s of SIGTERM; killing it"
                         % timeout)
                p.kill()
                p.wait()
        return p.returncode

    def kill9(self):
        self.close_conn()
        if self.proc is None:
            return
        p, self.proc = self.proc, None
        if p.poll() is None:
            p.kill()
        p.wait()

    def log_tail(self, n=20):
        try:
            with open(self.log, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "--- last %d lines of %s ---\n%s" % (n, self.log,
                                                      "\n".join(lines[-n:]))

    def _cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.pg_db:
            pg_drop_db(self.pg_db)
        if os.environ.get("SLUICE_KEEP_TMP") == "1":
            print("# kept %s" % self.tmp, flush=True)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # --- requests ----------------------------------------------------------

    def close_conn(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def connection(self, timeout=60):
        if self.ca:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=self.ssl_context())
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, ctype=None, token=_NO_TOKEN,
                headers=None, timeout=60):
        """One request on a kept-alive connection (reopened when the server
        closed it). body: bytes, str, or a JSON-able value (sent as JSON).
        token: the admin token by default; None sends no Authorization."""
        hdrs = {}
        if token is _NO_TOKEN:
            token = self.token
        if token is not None:
            hdrs["Authorization"] = "Bearer " + token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            ctype = ctype or "application/json"
        if isinstance(body, str):
            body = body.encode("utf-8")
        if ctype:
            hdrs["Content-Type"] = ctype
        if headers:
            hdrs.update(headers)
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = self.connection(timeout)
            try:
                self._conn.request(method, path, body=body, headers=hdrs)
                r = self._conn.getresponse()
                data = r.read()
                h = {k.lower(): v for k, v in r.getheaders()}
                if h.get("connection", "").lower() == "close":
                    self.close_conn()
                return Response(r.status, h, data)
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError) as e:
                # A kept-alive connection the server closed; retry once on
                # a new one (the server closed it idle, or it crashed: the
                # second try tells).
                self.close_conn()
                if attempt:
                    return Response(0, {}, ("no answer: %s" % e).encode())
            except (OSError, http.client.HTTPException) as e:
                self.close_conn()
                return Response(0, {}, ("no answer: %s" % e).encode())
        raise AssertionError("unreachable")

    def json_req(self, method, path, body=None, **kw):
        r = self.request(method, path, body, **kw)
        return r.status, r.json

    def list_jobs(self, state="all", after=0, limit=10000, team=None):
        """All jobs with id > after, following `next`."""
        jobs = []
        while True:
            q = "/v1/jobs?state=%s&limit=%d&after=%d" % (state, limit, after)
            if team:
                q += "&team=" + team
            r = self.request("GET", q)
            if r.status != 200 or not isinstance(r.json, dict):
                raise RuntimeError("GET %s: %r" % (q, r))
            jobs.extend(r.json.get("jobs", []))
            nxt = r.json.get("next")
            if nxt is None:
                return jobs
            if not isinstance(nxt, int) or nxt <= after:
                raise RuntimeError("GET %s: next %r does not advance" % (q, nxt))
            after = nxt


    # --- the store, read (and for tamper tests, written) directly ------------

    def store_rows(self, sql, params=()):
        """Rows of 'sql' ('?' placeholders) run on this daemon's store: its
        SQLite file, or in the PostgreSQL pass its database (through psql,
        values parsed back as int, float, str or None)."""
        if not self.pg_db:
            import sqlite3
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.data, "sluice.db"),
                                 uri=True, timeout=30)
            try:
                return [tuple(r) for r in db.execute(sql, params)]
            finally:
                db.close()
        return _pg_rows(self.pg_db, _pg_inline(sql, params))

    def store_exec(self, sql, params=()):
        """Run a change on this daemon's store behind its back (a test
        that tampers with it), committed."""
        if not self.pg_db:
            import sqlite3
            db = sqlite3.connect(os.path.join(self.data, "sluice.db"), timeout=30)
            try:
                db.execute(sql, params)
                db.commit()
            finally:
                db.close()
            return
        _pg_rows(self.pg_db, _pg_inline(sql, params))

    def cli(self, *args, token=None):
        """Run `sluice ARGS` against this daemon (the admin's token unless
        'token'); returns (exit status, stdout, stderr)."""
        env = dict(os.environ, SLUICE_SERVER=self.server, SLUICE_TOKEN=token or self.token)
        if self.ca:
            env["SLUICE_CA_CERT"] = self.ca[0]
        p = subprocess.run([os.path.join(SLUICE_BIN, "sluice")] + list(args), env=env,
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def users(self, users, manifests=""):
        """Apply the YAML 'manifests' and a kind: User for each (name, team,
        role) of 'users', then a token for each. Returns (the apply's
        Response, {name: token or None})."""
        r = self.request("POST", "/v1/apply", manifests + "".join(
            "---\napiVersion: sluice/v1\nkind: User\nmetadata: {name: %s}\n"
            "spec: {team: %s, role: %s}\n" % u for u in users), ctype="application/yaml")
        tokens = {}
        for u in users:
            st, body = self.json_req("POST", "/v1/users/%s/tokens" % u[0], {"label": "t"})
            tokens[u[0]] = body.get("token") if st == 201 else None
        return r, tokens


def team_yaml(name, queue_spec=""):
    """The manifests of a Team 'name' and its queue of the same name
    ('queue_spec': more of the Queue's spec, e.g. "nominal: {gpus: 2}")."""
    return ("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: %s}\n---\n"
            "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: %s}\n"
            "spec: {team: %s%s}\n" % (name, name, name, ", " + queue_spec if queue_spec else ""))


def job_doc(name, command=("true",), team="default", **spec):
    """A JSON job document; spec keys as in SPEC.md section 4."""
    s = {"command": list(command)}
    s.update(spec)
    return {"apiVersion": "sluice/v1", "kind": "Job",
            "metadata": {"name": name, "team": team}, "spec": s}


PG_SH = os.path.join(REPO, "tests", "pg", "pg.sh")


def on_postgres():
    """Whether this is the PostgreSQL pass of make test (tests/pg/suite.sh):
    then every Sluiced without a --store of its own gets a database of its
    own on the suite's server."""
    return os.environ.get("SLUICE_TEST_STORE") == "postgres" and \
        bool(os.environ.get("SLUICE_TEST_PG_URL"))


_pg_dbs = [0]


def _pg_maint(sql):
    return subprocess.run(["psql", os.environ["SLUICE_TEST_PG_URL"], "-X", "-q", "-w",
                           "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=60)


def pg_test_db():
    """A new database on the suite's server; its store URL."""
    _pg_dbs[0] += 1
    name = "t_%d_%d_%d" % (os.getpid(), int(time.time() * 1000) % 1000000, _pg_dbs[0])
    r = _pg_maint("CREATE DATABASE " + name)
    if r.returncode != 0:
        raise RuntimeError("CREATE DATABASE %s: %s" % (name, r.stderr))
    print("# store: PostgreSQL database %s" % name, flush=True)
    return os.environ["SLUICE_TEST_PG_URL"].rsplit("/", 1)[0] + "/" + name


def _pg_inline(sql, params):
    """'sql' with each '?' replaced by its parameter as a literal."""
    parts = sql.split("?")
    if len(parts) - 1 != len(params):
        raise ValueError("%d placeholders, %d parameters" % (len(parts) - 1, len(params)))
    out = parts[0]
    for p, rest in zip(params, parts[1:]):
        if p is None:
            lit = "NULL"
        elif isinstance(p, bool):
            lit = "1" if p else "0"
        elif isinstance(p, (int, float)):
            lit = repr(p)
        else:
            lit = "'" + str(p).replace("'", "''") + "'"
        out += lit + rest
    return out


def _pg_value(v):
    if v == "\\N":
        return None
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def _pg_rows(url, sql):
    r = subprocess.run(["psql", url, "-X", "-q", "-w", "-A", "-t", "-F", "\x1f",
                        "-P", "null=\\N", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("psql: %s: %s" % (sql, r.stderr))
    return [tuple(_pg_value(v) for v in line.split("\x1f"))
            for line in r.stdout.splitlines() if line]


def pg_drop_db(url):
    _pg_maint("DROP DATABASE IF EXISTS %s WITH (FORCE)" % url.rsplit("/", 1)[1])


def pg_sh(*args):
    """tests/pg/pg.sh ARGS...: its CompletedProcess (exit 2: PostgreSQL's
    server programs are not installed)."""
    return subprocess.run(["sh", PG_SH] + list(args), capture_output=True, text=True,
                          timeout=120)


class PgServer:
    """A throwaway PostgreSQL server (tests/pg/pg.sh) in a temp dir of its
    own (0711, so that the server's account reaches it), stopped and removed
    at exit:

        pgs = PgServer()
        if not pgs.start():
            tap.skip(1, pgs.missing)      # no server programs or no psql
        r = pgs.psql("-c", "SELECT 1")   # psql as the role, ON_ERROR_STOP
    """

    def __init__(self):
        self.top = self.dir = self.port = None
        self.missing = None

    def start(self):
        """True when it runs; False with the reason in self.missing when
        PostgreSQL's server programs or psql are absent. Any other failure
        raises RuntimeError."""
        if not shutil.which("psql"):
            self.missing = "psql is not installed"
            return False
        self.top = tempfile.mkdtemp(prefix="sluice-pg.")
        os.chmod(self.top, 0o711)
        atexit.register(self.stop)
        self.dir = os.path.join(self.top, "pg")
        r = pg_sh("start", self.dir)
        if r.returncode == 2:
            self.missing = "PostgreSQL's server programs are not installed: " + r.stderr.strip()
            return False
        if r.returncode != 0:
            raise RuntimeError("pg.sh start: " + r.stderr)
        self.port = int(open(os.path.join(self.dir, "port")).read())
        return True

    def psql(self, *args):
        env = dict(os.environ, PGPASSFILE=os.path.join(self.dir, "pgpass"),
                   PGCONNECT_TIMEOUT="10")
        return subprocess.run(["psql", "-X", "-w", "-q", "-A", "-t", "-h", "127.0.0.1",
                               "-p", str(self.port), "-U", "sluice", "-d", "sluice",
                               "-v", "ON_ERROR_STOP=1"] + list(args),
                              capture_output=True, text=True, env=env, timeout=60)

    def stop(self):
        if self.top:
            pg_sh("stop", self.dir)
            shutil.rmtree(self.top, ignore_errors=True)
            self.top = None


def wait_for(cond, timeout, step=0.05):
    """cond()'s first true value within 'timeout' seconds, polled every
    'step'; None when it never was."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return None


class HaMember(Sluiced):
    """One of several sluiced on one PostgreSQL store (docs/ha.md): named
    'name', with the lease 'lease_ms'; launch() starts it without waiting
    (a follower's /healthz is 503 by design), status() reads /v1/status."""

    def __init__(self, name, store, lease_ms):
        super().__init__(args=["--store", store, "--ha-lease", "%dms" % lease_ms,
                               "--ha-name", name])
        self.name = name
        self.port = free_port()

    def launch(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self._argv(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)

    def status(self):
        r = self.request("GET", "/v1/status", token=None, timeout=5)
        return r.json if r.status == 200 and isinstance(r.json, dict) else None

    def share_audit_key(self, first):
        """Give it the first daemon's audit key, as docs/ha.md asks."""
        os.makedirs(self.data, mode=0o700, exist_ok=True)
        dst = os.path.join(self.data, "audit.key")
        shutil.copy(os.path.join(first.data, "audit.key"), dst)
        os.chmod(dst, 0o600)
