#!/usr/bin/env python3
"""The CLI's HTTP/1.1 client against a peer that answers in every legal (and
some illegal) way: chunked bodies, read-to-close, interim 100 answers, cut
answers, oversized headers, garbage. Prints TAP."""
import os, socket, subprocess, sys, threading

BIN = os.environ.get("SLUICE_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "asan")
WHO = b'{"user":"u1","team":"t1","role":"member"}'

def head(status, extra=b""):
    return b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n" + extra

SCENARIOS = [
    # name, raw answer, expected exit code, text expected in stdout+stderr
    ("content-length body", head(b"200 OK", b"Content-Length: %d\r\n\r\n" % len(WHO)) + WHO, 0, "u1"),
    ("chunked body with an extension and a trailer",
     head(b"200 OK", b"Transfer-Encoding: chunked\r\n\r\n") +
     b"5;x=y\r\n" + WHO[:5] + b"\r\n%x\r\n" % (len(WHO) - 5) + WHO[5:] + b"\r\n0\r\nX-T: 1\r\n\r\n", 0, "u1"),
    ("read to close", head(b"200 OK", b"Connection: close\r\n\r\n") + WHO, 0, "u1"),
    ("an interim 100 before the answer",
     b"HTTP/1.1 100 Continue\r\n\r\n" + head(b"200 OK", b"Content-Length: %d\r\n\r\n" % len(WHO)) + WHO, 0, "u1"),
    ("an error object", head(b"403 Forbidden", b"Content-Length: 67\r\n\r\n") +
     b'{"error":{"code":"forbidden","message":"role viewer may not do it"}}'[:67], 2, "may not do it"),
    ("a cut answer", head(b"200 OK", b"Content-Length: 500\r\n\r\n") + WHO, 3, ""),
    ("headers over 64 KiB", head(b"200 OK", b"X-Big: " + b"a" * 70000 + b"\r\n\r\n"), 3, ""),
    ("a garbage status line", b"HTTP/9 banana\r\n\r\n", 3, ""),
    ("a huge chunk size", head(b"200 OK", b"Transfer-Encoding: chunked\r\n\r\n") + b"ffffffffffffffffff\r\n", 3, ""),
]

n = 0
failed = 0

def check(ok, name, detail=""):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, name))
    if not ok:
        failed += 1
        for line in detail.splitlines():
            print("# " + line)

def serve(sock, answer, done):
    try:
        conn, _ = sock.accept()
        conn.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        conn.sendall(answer)
        conn.close()
    except OSError:
        pass
    done.set()

for name, answer, want_rc, want_text in SCENARIOS:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    done = threading.Event()
    t = threading.Thread(target=serve, args=(sock, answer, done), daemon=True)
    t.start()
    p = subprocess.run([os.path.join(BIN, "sluice"), "--server", "http://127.0.0.1:%d" % port,
                        "--token", "t", "whoami"], capture_output=True, text=True, timeout=30)
    out = p.stdout + p.stderr
    check(p.returncode == want_rc, "%s: exit %d" % (name, want_rc),
          "got exit %d: %s" % (p.returncode, out))
    if want_text:
        check(want_text in out, "%s: output has '%s'" % (name, want_text), out)
    else:
        check(out.count("\n") == 1 and out.startswith("sluice: "),
              "%s: one error line" % name, out)
    done.wait(5)
    sock.close()

print("1..%d" % n)
sys.exit(1 if failed else 0)
