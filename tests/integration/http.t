#!/usr/bin/env python3
"""The HTTP/1.1 server of sluiced at the byte level: malformed and oversized
requests, every rule of the request head (one meaning per request: each
refusal answered with its status and the connection closed after it),
pipelining, HTTP/1.0, chunked bodies, and that none of it breaks the
daemon. Prints TAP."""
import os, random, re, socket, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sltest  # noqa: E402

D = sltest.Sluiced().start()


def check(ok, name, detail=""):
    sltest.tap.ok(ok, name, *([str(detail)] if not ok else []))

def exchange2(raw, timeout=10):
    """Send raw bytes, read until the server closes: (data, closed)."""
    s = socket.create_connection(("127.0.0.1", D.port), timeout=timeout)
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
    except ConnectionResetError:
        closed = True
    s.close()
    return data, closed

def exchange(raw, timeout=10):
    return exchange2(raw, timeout)[0]

H = b"Host: 127.0.0.1\r\n"
NEXT = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

def refused(raw, status, name, code=None):
    """raw is refused with 'status' and an error object, and the connection
    closes after that answer: the request pipelined behind it is not
    answered."""
    data, closed = exchange2(raw + NEXT)
    codes = re.findall(rb"HTTP/1\.1 (\d{3}) ", data)
    body = data.partition(b"\r\n\r\n")[2]
    check(codes == [str(status).encode()] and closed and b'"error"' in body and
          (code is None or (b'"code":"%s"' % code.encode()) in body),
          "%s: %d, then the connection closes" % (name, status),
          "closed %s: %r" % (closed, data[:300]))

auth = ("Authorization: Bearer %s\r\n" % D.token).encode()
job = b'{"apiVersion":"sluice/v1","kind":"Job","spec":{"command":["true"],"resources":{"gpus":1}}}'

r = exchange(b"GARBAGE\r\n\r\n")
check(r.startswith(b"HTTP/1.1 400 "), "a malformed request line gets 400", r[:80])
r = exchange(b"GET /healthz HTTP/1.1\r\n" + H + b"X: " + b"a" * 10000 + b"\r\n\r\n")
check(r.startswith(b"HTTP/1.1 431 "), "headers over 8 KiB get 431", r[:80])
r = exchange(b"POST /v1/jobs HTTP/1.1\r\n" + H + auth + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
check(r.startswith(b"HTTP/1.1 411 "), "a chunked request body gets 411", r[:80])
r = exchange(b"POST /v1/jobs HTTP/1.1\r\n" + H + auth + b"Content-Length: abc\r\n\r\n")
check(r.startswith(b"HTTP/1.1 400 "), "a bad Content-Length gets 400", r[:80])
r = exchange(b"GET /healthz HTTP/1.0\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 ") and b"Connection: close" in r,
      "HTTP/1.0 is answered and the connection closed", r[:200])

# One meaning for every request: each rule of the head, refused with its
# status, and the connection closed after the answer (what follows on the
# stream has no reliable meaning).
G = b"GET /healthz HTTP/1.1\r\n"
P = b"POST /v1/jobs HTTP/1.1\r\n" + H + auth + b"Content-Type: application/json\r\n"
refused(P + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400,
        "two equal Content-Length fields")
refused(P + b"Content-Length: 5\r\nContent-Length: 05\r\n\r\nhello", 400,
        "two Content-Length fields differing in form (5 and 05)")
refused(P + b"Content-Length: 5, 5\r\n\r\nhello", 400, "a Content-Length list")
refused(P + b"Content-Length: +5\r\n\r\nhello", 400, "a Content-Length with a sign")
refused(P + b"Content-Length: 0x5\r\n\r\nhello", 400, "a hexadecimal Content-Length")
refused(P + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello", 400,
        "Transfer-Encoding with Content-Length")
refused(P + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 411,
        "Transfer-Encoding alone")
refused(b"GET /healthz\rX HTTP/1.1\r\n" + H + b"\r\n", 400, "a bare CR in the request line")
refused(G + H + b"X-A: 1\r2\r\n\r\n", 400, "a bare CR in a field value")
refused(b"GET /healthz HTTP/1.1\n" + H + b"\r\n", 400, "a bare LF after the request line")
refused(G + b"Host: x\n\r\n", 400, "a bare LF after a field line")
refused(b"GET /heal\x00thz HTTP/1.1\r\n" + H + b"\r\n", 400, "a NUL in the request target")
refused(G + H + b"X-A: a\x00b\r\n\r\n", 400, "a NUL in a field value")
refused(G + H + b"X-\x00A: 1\r\n\r\n", 400, "a NUL in a field name")
refused(G + H + b"X-A: a\x01b\r\n\r\n", 400, "a control character in a field value")
refused(G + H + b"X-A: a\x7fb\r\n\r\n", 400, "DEL in a field value")
refused(G + b"Host : x\r\n\r\n", 400, "whitespace before a field's colon")
refused(G + H + b"X(A): 1\r\n\r\n", 400, "a field name with an invalid character")
refused(G + H + b"X A: 1\r\n\r\n", 400, "a field name with a space")
refused(G + H + b": 1\r\n\r\n", 400, "a field without a name")
refused(G + H + b"no colon here\r\n\r\n", 400, "a field line without a colon")
refused(G + H + b"X-A: 1\r\n  folded\r\n\r\n", 400, "obsolete line folding (space)")
refused(G + H + b"X-A: 1\r\n\tfolded\r\n\r\n", 400, "obsolete line folding (tab)")
for v in (b"HTTP/1.2", b"HTTP/2.0", b"HTTP/0.9", b"http/1.1", b"HTTP/1.10", b"HTTP/1"):
    refused(b"GET /healthz " + v + b"\r\n" + H + b"\r\n", 400, "version %s" % v.decode())
refused(b"GET /healthz\r\n\r\n", 400, "a request line without a version")
refused(b"GET  /healthz HTTP/1.1\r\n" + H + b"\r\n", 400, "two spaces after the method")
refused(b"GET /healthz  HTTP/1.1\r\n" + H + b"\r\n", 400, "two spaces before the version")
refused(b"GET\t/healthz HTTP/1.1\r\n" + H + b"\r\n", 400, "a tab in the request line")
refused(b"GET http://127.0.0.1/healthz HTTP/1.1\r\n" + H + b"\r\n", 400,
        "an absolute-form target")
refused(b"OPTIONS * HTTP/1.1\r\n" + H + b"\r\n", 400, "an asterisk-form target")
refused(b"GET /healthz#top HTTP/1.1\r\n" + H + b"\r\n", 400, "a fragment in the target")
refused(b"GET /healthz?x=%zz HTTP/1.1\r\n" + H + b"\r\n", 400, "a bad percent escape")
Q = b" HTTP/1.1\r\n" + H + auth + b"\r\n"
refused(b"GET /v1/jobs?state=Running&state=Pending" + Q, 400, "a query parameter given twice")
refused(b"GET /v1/jobs?state=Running&st%61te=Pending" + Q, 400,
        "a query parameter given twice, once percent-encoded")
refused(b"GET /v1/jobs?team=a%00b" + Q, 400, "a NUL in a query value (%00)")
refused(b"GET /v1/jobs?team=a%0Ab" + Q, 400, "a line feed in a query value (%0A)")
refused(b"GET /v1/jobs?=x" + Q, 400, "a query parameter without a name")
r = exchange(b"GET /v1/jobs?state=Running%2CPending&&limit=5&" + Q)
check(r.startswith(b"HTTP/1.1 200 "), "a query with escapes and empty parameters is taken",
      r[:200])
refused(b"GET /h\xc3\xa9 HTTP/1.1\r\n" + H + b"\r\n", 400, "a raw non-ASCII byte in the target")
refused(b"GET /" + b"a" * 1100 + b" HTTP/1.1\r\n" + H + b"\r\n", 414, "a target over 1023 bytes",
        "too_large")
refused(b"G(T /healthz HTTP/1.1\r\n" + H + b"\r\n", 400, "a method that is not a token")
refused(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ /healthz HTTP/1.1\r\n" + H + b"\r\n", 501,
        "a method longer than 15 bytes")
refused(G + b"\r\n", 400, "an HTTP/1.1 request without Host")
refused(G + H + b"Host: other\r\n\r\n", 400, "two Host fields")
refused(G + b"Host: a/b\r\n\r\n", 400, "a Host with a '/'")
refused(G + H + b"Authorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", 400,
        "two Authorization fields")
refused(P + b"Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}", 400,
        "two Content-Type fields")
refused(G + H + b"".join(b"X-%d: 1\r\n" % i for i in range(70)) + b"\r\n", 431,
        "more than 64 fields", "too_large")
refused(b"\r\n\r\n" + G + H + b"\r\n", 400, "two empty lines before the request line")

# The accepted forms.
r = exchange(b"\r\n" + G + H + b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "one empty line before the request line is ignored", r[:80])
r = exchange(G + b"Host:127.0.0.1:80\r\nX-A: \t a \t b \t\r\nUser-Agent: caf\xe9\r\n"
             b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "OWS and HTAB around values and obs-text in a value",
      r[:80])
r = exchange(b"GET /healthz HTTP/1.0\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "an HTTP/1.0 request needs no Host", r[:80])
r = exchange(b"GET /healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "an empty Host is a Host", r[:80])
r = exchange(b"POST /healthz HTTP/1.1\r\n" + H + b"Content-Length: 05\r\n\r\nhello" +
             b"GET /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
codes = re.findall(rb"HTTP/1\.1 (\d{3}) ", r)
check(codes == [b"405", b"200"], "one Content-Length of 05 frames a 5-byte body", codes)
r = exchange(b"HEAD /healthz HTTP/1.1\r\n" + H + b"\r\n" +
             b"GET /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
first, _, rest = r.partition(b"\r\n\r\n")
get_len = re.search(rb"Content-Length: (\d+)", rest)
check(first.startswith(b"HTTP/1.1 200 ") and rest.startswith(b"HTTP/1.1 200 ") and get_len and
      re.search(rb"Content-Length: " + get_len.group(1) + rb"(\r\n|$)", first),
      "a HEAD answer has a GET's head and no body, so the next answer follows its head",
      r[:300])
r = exchange(b"HEAD /v1/jobs/1/attach HTTP/1.1\r\n" + H + auth + b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 405 "), "HEAD is never a change (attach is a GET that changes)",
      r[:200])
r = exchange(b"GET /v1/jobs?state=%FF HTTP/1.1\r\n" + H + auth + b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 400 ") and b'"invalid"' in r,
      "a query value that is not UTF-8 is a 400, not a 503", r[:300])

pipelined = (b"GET /healthz HTTP/1.1\r\n" + H + b"\r\n" +
             b"POST /v1/jobs HTTP/1.1\r\n" + H + auth + b"Content-Type: application/json\r\n" +
             b"Content-Length: %d\r\n\r\n" % len(job) + job +
             b"GET /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
r = exchange(pipelined)
codes = re.findall(rb"HTTP/1\.1 (\d{3}) ", r)
check(codes == [b"200", b"201", b"200"],
      "three pipelined requests, one of them suspended, are answered in order", codes)
r = exchange(b"GET /healthz?x=%41+b HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "a query string with escapes is accepted", r[:80])
r = exchange(b"GET /v1/jobs?state=No%20Such HTTP/1.1\r\n" + H + auth + b"Connection: close\r\n\r\n")
check(b"No Such" in r and r.startswith(b"HTTP/1.1 400 "),
      "query values are percent-decoded", r[:300])
# A client that goes away while its change is being committed.
s = socket.create_connection(("127.0.0.1", D.port))
s.sendall(b"POST /v1/jobs HTTP/1.1\r\n" + H + auth + b"Content-Type: application/json\r\n" +
          b"Content-Length: %d\r\n\r\n" % len(job) + job)
s.close()
time.sleep(0.5)
r = exchange(b"GET /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "the daemon survives a client leaving mid-request", r[:80])
# Many idle connections, then one more request.
idle = [socket.create_connection(("127.0.0.1", D.port)) for _ in range(200)]
r = exchange(b"GET /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "200 idle connections do not block a request", r[:80])
for s in idle:
    s.close()

# Garbage: a fixed-seed stream of mangled requests; the daemon must answer
# or close each one, and stay healthy.
rng = random.Random(20261202)
seeds = [b"GET /healthz HTTP/1.1\r\n" + H + b"\r\n",
         b"POST /v1/jobs HTTP/1.1\r\n" + H + auth + b"Content-Type: application/json\r\n" +
         b"Content-Length: %d\r\n\r\n" % len(job) + job,
         b"GET /v1/jobs?state=all&limit=5 HTTP/1.1\r\n" + H + auth + b"\r\n"]
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
r = exchange(b"GET /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
check(r.startswith(b"HTTP/1.1 200 "), "300 mangled requests later the daemon is healthy", r[:80])

sltest.tap.done_testing(D)
