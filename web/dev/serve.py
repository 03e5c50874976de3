#!/usr/bin/env python3
"""serve.py - the dashboard from web/ as it is on disk, for working on it.

Serves /ui/ as sluiced does (index.html for every client route, app.js and
app.css concatenated by the same rule as the build's generator: the uPlot
bundle first, then web/js/*.js and web/css/*.css in name order), without
hashed names or caching, and passes /v1, /healthz and /metrics on to a
running sluiced. Reload the browser to see a change; no rebuild.

    python3 web/dev/serve.py [--listen 127.0.0.1:8090] [--sluiced http://127.0.0.1:8080]

The uPlot files come from web/node_modules (make ui fetches them) or the
directory in UPLOT_DIST.
"""
import argparse
import glob
import http.client
import http.server
import os
import sys
import urllib.parse

WEB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPLOT = os.environ.get("UPLOT_DIST", os.path.join(WEB, "node_modules", "uplot", "dist"))
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
       "form-action 'none'; frame-ancestors 'none'")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def bundle(kind):
    first = os.path.join(UPLOT, "uPlot.iife.min.js" if kind == "js" else "uPlot.min.css")
    parts = [read(first)] if os.path.exists(first) else []
    for p in sorted(glob.glob(os.path.join(WEB, kind, "*." + kind))):
        comment = b"// " if kind == "js" else b"/* "
        end = b"\n" if kind == "js" else b" */\n"
        parts.append(comment + os.path.basename(p).encode() + end + read(p))
    return b"\n".join(parts)


class Handler(http.server.BaseHTTPRequestHandler):
    sluiced = None

    def log_message(self, fmt, *args):
        sys.stderr.write("serve.py: " + (fmt % args) + "\n")

    def send(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def proxy(self):
        u = urllib.parse.urlsplit(self.sluiced)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        res = conn.getresponse()
        data = res.read()
        self.send_response(res.status)
        for k, v in res.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    def ui(self):
        path = urllib.parse.urlsplit(self.path).path
        name = path[len("/ui/"):] if path.startswith("/ui/") else ""
        if path == "/ui":
            self.send_response(301)
            self.send_header("Location", "/ui/")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif name == "app.js":
            self.send(200, "text/javascript; charset=utf-8", bundle("js"))
        elif name == "app.css":
            self.send(200, "text/css; charset=utf-8", bundle("css"))
        elif name == "favicon.svg":
            self.send(200, "image/svg+xml", read(os.path.join(WEB, "favicon.svg")))
        elif "/" not in name and "." in name:
            self.send(404, "text/plain; charset=utf-8", b"not found\n")
        else:
            self.send(200, "text/html; charset=utf-8", read(os.path.join(WEB, "index.html")))

    def handle_any(self):
        if self.path.startswith("/ui"):
            self.ui()
        else:
            self.proxy()

    do_GET = do_HEAD = do_POST = do_DELETE = do_PATCH = do_PUT = handle_any


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", default="127.0.0.1:8090")
    ap.add_argument("--sluiced", default="http://127.0.0.1:8080")
    a = ap.parse_args()
    host, port = a.listen.rsplit(":", 1)
    Handler.sluiced = a.sluiced
    srv = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    print("serve.py: the dashboard on http://%s/ui/, API from %s" % (a.listen, a.sluiced), flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
