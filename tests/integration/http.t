#!/usr/bin/env python3
"""The HTTP/1.1 server of sluiced at the byte level: malformed and oversized
requests, pipelining, HTTP/1.0, chunked bodies, and that none of it breaks
the daemon. Prints TAP."""
import os, random, re, socket, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sltest  # noqa: E402

D = sltest.Sluiced().start()


def check(ok, name, detail=""):
    sltest.tap.ok(ok, name, *([str(detail)] if not ok else []))

def exchange(raw, timeout=10, read_all=True):
    s = socket.create_connection(("127.0.0.1", D.port), timeout=timeout)
    s.sendall(raw)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if not read_all:
                break
    except socket.timeout:
        pass
    s.close()
    return data

auth = ("Authorization: Bearer %s\r\n" % D.token).encode()
job = b'{"apiVersion":"sluice/v1","kind":"Job","spec":{"command":["true"],"resources":{"gpus":64}}}'

r = exchange(b"GARBAGE\r\n\r\n")
check(r.startswith(b"HTTP/1.1 400 "), "a malformed request line gets 400", r[:80])
r = exchange(b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 10000 + b"\r\n\r\n")
check(r.startswith(b"HTTP/1.1 431 "), "headers over 8 KiB get 431", r[:80])
r = exchange(b"POST /v1/jobs HTTP/1.1\r\n" + auth + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
check(r.startswith(b"HTTP/1.1 411 "), "a chunked request body gets 411", r[:80])
r = exchange(b"POST /v1/jobs HTTP/1.1\r\n" + auth + b"Content-Length: abc\r\n\r\n")
check(r.startswith(b"HTTP/1.1 400 "), "a bad Content-Length gets 400", r[:80])
r = exchange(b"GET /healthz HTTP/1.0\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 ") and b"Connection: close" in r,
      "HTTP/1.0 is answered and the connection closed", r[:200])
pipelined = (b"GET /healthz HTTP/1.1\r\n\r\n" +
             b"POST /v1/jobs HTTP/1.1\r\n" + auth + b"Content-Type: application/json\r\n" +
             b"Content-Length: %d\r\n\r\n" % len(job) + job +
             b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
r = exchange(pipelined)
codes = re.findall(rb"HTTP/1\.1 (\d{3}) ", r)
check(codes == [b"200", b"201", b"200"],
      "three pipelined requests, one of them suspended, are answered in order", codes)
r = exchange(b"GET /healthz?x=%41+b HTTP/1.1\r\nConnection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "a query string with escapes is accepted", r[:80])
r = exchange(b"GET /v1/jobs?state=No%20Such HTTP/1.1\r\n" + auth + b"Connection: close\r\n\r\n")
check(b"No Such" in r and r.startswith(b"HTTP/1.1 400 "),
      "query values are percent-decoded", r[:300])
# A client that goes away while its change is being committed.
s = socket.create_connection(("127.0.0.1", D.port))
s.sendall(b"POST /v1/jobs HTTP/1.1\r\n" + auth + b"Content-Type: application/json\r\n" +
          b"Content-Length: %d\r\n\r\n" % len(job) + job)
s.close()
time.sleep(0.5)
r = exchange(b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "the daemon survives a client leaving mid-request", r[:80])
# Many idle connections, then one more request.
idle = [socket.create_connection(("127.0.0.1", D.port)) for _ in range(200)]
r = exchange(b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "200 idle connections do not block a request", r[:80])
for s in idle:
    s.close()

# Garbage: a fixed-seed stream of mangled requests; the daemon must answer
# or close each one, and stay healthy.
rng = random.Random(20261202)
seeds = [b"GET /healthz HTTP/1.1\r\n\r\n",
         b"POST /v1/jobs HTTP/1.1\r\n" + auth + b"Content-Length: %d\r\n\r\n" % len(job) + job,
         b"GET /v1/jobs?state=all&limit=5 HTTP/1.1\r\n" + auth + b"\r\n"]
for i in range(300):
    msg = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(1, 8)):
        if not msg:
            break
        k = rng.randrange(len(msg))
        op = rng.randrange(3)
        if op == 0:
            msg[k] = rng.randrange(256)
        elif op == 1:
            del msg[k:k + rng.randint(1, 20)]
        else:
            msg[k:k] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
    s = None
    try:
        s = socket.create_connection(("127.0.0.1", D.port), timeout=2)
        s.sendall(bytes(msg))
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except OSError:
        pass
    finally:
        if s:
            s.close()
r = exchange(b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "300 mangled requests later the daemon is healthy", r[:80])

sltest.tap.done_testing(D)
