#!/usr/bin/env python3
"""ui.t - the web UI that sluiced embeds and serves under /ui/
(docs/daemon.md, "The web UI").

1. Against a running sluiced, without a token: /ui is a 301 to /ui/; /ui/
   /ui/NAME without a dot and every deeper path (the dashboard's own routes)
   answer the page shell with no-cache; the hashed assets it references
   answer with a year's immutable caching; any other NAME.EXT is 404; GET
   and HEAD; every answer has the security headers and its strict
   Content-Security-Policy; ETags, and 304 for a matching If-None-Match.
   The bytes are those of web/ by the rules: app.js is uPlot's bundle then
   web/js/*.js in name order, each after a comment line naming it; app.css
   the same from uPlot's stylesheet and web/css/*.css; the hash in each name
   and each ETag is the 64-bit FNV-1a of the bytes; the page shell is
   web/index.html with exactly its three references rewritten, and has no
   inline script, style or event handler (the policy would block them).
   These need uPlot installed (web/node_modules, npm ci): without it, they
   are skipped and the page sluiced serves must be the not-built one.
2. The generator (SLUICE_BIN/tools/ui_embed) on a web directory of its own:
   the order of the files (bytes, as C's strcmp), a page shell that lacks
   a reference refused; and with no uPlot bundle, the one page that says
   the web UI was not built, why and how to build it (an error with
   --require, as make ui runs it).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import REPO, SLUICE_BIN, Sluiced, raw_exchange, tap  # noqa: E402

WEB = os.path.join(REPO, "web")
UPLOT_JS = os.path.join("uplot", "dist", "uPlot.iife.min.js")
UPLOT_CSS = os.path.join("uplot", "dist", "uPlot.min.css")
EMBED = os.path.join(SLUICE_BIN, "tools", "ui_embed")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; "
       "img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; "
       "manifest-src 'self'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
SECURITY = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
            "x-frame-options": "DENY", "content-security-policy": CSP}
IMMUTABLE = "public, max-age=31536000, immutable"
HTML = "text/html; charset=utf-8"


def fnv64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def read(path):
    with open(path, "rb") as f:
        return f.read()


def bundle(first, webdir, sub, ext):
    """The concatenation rule: 'first', then each webdir/sub/*ext in byte
    order, each after a newline and a comment line naming it."""
    out = first
    d = os.path.join(webdir, sub)
    names = sorted((n for n in os.listdir(d) if n.endswith(ext) and not n.startswith(".")),
                   key=lambda n: n.encode()) if os.path.isdir(d) else []
    for n in names:
        out += b"\n/* web/%s/%s */\n" % (sub.encode(), n.encode()) + read(os.path.join(d, n))
    return out


def secure(r, name):
    bad = ["%s: %r" % (h, r.headers.get(h)) for h, v in SECURITY.items()
           if r.headers.get(h) != v]
    return tap.ok(not bad, "%s: the security headers and the policy" % name, *bad)


def raw_head(request):
    """The head of the answer to one raw request, as bytes, and what came
    after it before the server closed (Connection: close)."""
    head, _, rest = raw_exchange(D.port, request).partition(b"\r\n\r\n")
    return head, rest


# --- 1. the daemon ---------------------------------------------------------

D = Sluiced().start()


def get(path, method="GET", token=None, **kw):
    return D.request(method, path, token=token, **kw)


r = get("/ui")
tap.is_(r.status, 301, "GET /ui -> 301")
tap.is_(r.headers.get("location"), "/ui/", "to /ui/")
secure(r, "the 301")
r = get("/ui", "HEAD")
tap.ok(r.status == 301 and r.headers.get("location") == "/ui/", "HEAD /ui -> 301 to /ui/",
       repr(r))

page = get("/ui/")
tap.is_(page.status, 200, "GET /ui/ without a token -> 200")
tap.is_(page.headers.get("content-type"), HTML, "the page shell is text/html; charset=utf-8")
tap.is_(page.headers.get("cache-control"), "no-cache", "and is revalidated (no-cache)")
tap.is_(page.headers.get("etag"), '"%s"' % fnv64(page.body),
        "its ETag is the FNV-1a hash of its bytes")
secure(page, "GET /ui/")
r = get("/ui/", token="sl_not-a-token")
tap.is_(r.status, 200, "a bad token does not matter under /ui/")

built = os.path.exists(os.path.join(WEB, "node_modules", UPLOT_JS)) and \
    os.path.exists(os.path.join(WEB, "node_modules", UPLOT_CSS))
if not built:
    tap.ok(b"was not built" in page.body,
           "no uPlot in web/node_modules: sluiced serves the not-built page")
    tap.skip(12, "uPlot is not installed in web/node_modules (npm ci in web/, or make ui)")
    assets = {}
else:
    # the asset references of the page shell (names with a dot: links to
    # the dashboard's own pages, such as the brand's /ui/, are not assets),
    # and what they answer
    refs = re.findall(rb"""(?:src|href)\s*=\s*["'](/ui/[^"']*\.[^"'/]*)["']""", page.body)
    names = {p.decode() for p in refs}
    want = {"js": None, "css": None, "svg": None}
    for p in names:
        m = re.fullmatch(r"/ui/(app|favicon)\.([0-9a-f]{16})\.(js|css|svg)", p)
        if m and want.get(m.group(3), 0) is None:
            want[m.group(3)] = p
    tap.ok(len(refs) == 3 and all(want.values()),
           "the page shell references exactly app.<hash>.js, app.<hash>.css and "
           "favicon.<hash>.svg", "references: %r" % refs)
    assets = {}
    for ext, ctype in (("js", "text/javascript; charset=utf-8"),
                       ("css", "text/css; charset=utf-8"), ("svg", "image/svg+xml")):
        p = want[ext] or "/ui/app.none.%s" % ext
        a = get(p)
        assets[ext] = (p, a)
        digest = p.split(".")[-2]
        tap.ok(a.status == 200 and a.headers.get("content-type") == ctype and
               a.headers.get("cache-control") == IMMUTABLE and
               a.headers.get("etag") == '"%s"' % digest and fnv64(a.body) == digest,
               "%s: 200, %s, immutable, its name's hash is its ETag and its bytes' hash"
               % (p, ctype), repr(a), "etag %r" % a.headers.get("etag"))
        secure(a, "GET " + p)

    nm = os.path.join(WEB, "node_modules")
    js = bundle(read(os.path.join(nm, UPLOT_JS)), WEB, "js", ".js")
    tap.ok(assets["js"][1].body == js, "app.js is uPlot's bundle, then web/js/*.js in name "
           "order, each after a comment line naming it",
           "%d bytes served, %d expected" % (len(assets["js"][1].body), len(js)))
    tap.ok(assets["js"][1].body.startswith(read(os.path.join(nm, UPLOT_JS))),
           "app.js starts with the uPlot bundle")
    css = bundle(read(os.path.join(nm, UPLOT_CSS)), WEB, "css", ".css")
    tap.ok(assets["css"][1].body == css, "app.css is uPlot's stylesheet, then web/css/*.css")
    tap.ok(assets["svg"][1].body == read(os.path.join(WEB, "favicon.svg")),
           "the icon is web/favicon.svg as it is")
    shell = read(os.path.join(WEB, "index.html"))
    for q in (b'"', b"'"):
        shell = shell.replace(q + b"/ui/app.js" + q, q + assets["js"][0].encode() + q)
        shell = shell.replace(q + b"/ui/app.css" + q, q + assets["css"][0].encode() + q)
        shell = shell.replace(q + b"/ui/favicon.svg" + q, q + assets["svg"][0].encode() + q)
    tap.ok(page.body == shell, "the page shell is web/index.html with those references "
           "rewritten, nothing else")

# what the policy would block, in the page shell (or the not-built page)
inline = [m for m in re.findall(rb"<script\b([^>]*)>(.*?)</script\s*>", page.body,
                                re.I | re.S) if m[1].strip() or b"src" not in m[0]]
tap.ok(not inline, "no inline script in the page shell", *map(repr, inline))
styles = re.findall(rb"""<style\b|\sstyle\s*=""", page.body, re.I)
tap.ok(not styles, "no style element or style= attribute", *map(repr, styles))
handlers = re.findall(rb"""\son[a-z]+\s*=|javascript:""", page.body, re.I)
tap.ok(not handlers, "no inline event handler or javascript: URL", *map(repr, handlers))

# the dashboard's own routes get the page shell
for p in ("/ui/jobs/42", "/ui/jobs?state=Pending", "/ui/jobs/", "/ui/nodes/gpu-01/x",
          "/ui/models/resnet@1.0", "/ui/jobs/42.json"):
    r = get(p)
    tap.ok(r.status == 200 and r.body == page.body and
           r.headers.get("cache-control") == "no-cache" and
           r.headers.get("content-type") == HTML,
           "GET %s (a route of the dashboard) -> the page shell, no-cache" % p, repr(r))
secure(r, "a route of the dashboard")

for p in ("/ui/x.js", "/ui/app.js", "/ui/app.css", "/ui/favicon.svg",
          "/ui/app.0000000000000000.js"):
    r = get(p)
    tap.ok(r.status == 404 and r.error_code() == "not_found", "GET %s -> 404" % p, repr(r))
secure(r, "a 404")
r = get("/ui/", "POST", body=b"")
tap.is_(r.status, 405, "POST /ui/ -> 405")
r = get("/uix")
tap.is_(r.status, 404, "GET /uix -> 404 (not the UI)")

# HEAD: the GET's head, no body
r = get("/ui/", "HEAD")
tap.ok(r.status == 200 and r.body == b"" and
       r.headers.get("content-length") == str(len(page.body)) and
       r.headers.get("etag") == page.headers.get("etag"),
       "HEAD /ui/ -> the GET's headers, Content-Length included, and no body", repr(r))
secure(r, "HEAD /ui/")
for ext, (p, a) in assets.items():
    r = get(p, "HEAD")
    tap.ok(r.status == 200 and r.body == b"" and
           r.headers.get("content-length") == str(len(a.body)) and
           r.headers.get("cache-control") == IMMUTABLE, "HEAD %s" % p, repr(r))

# conditional requests
etag = page.headers.get("etag", "")
for inm in (etag, "W/" + etag, '"0000000000000000", ' + etag, "*"):
    r = get("/ui/", headers={"If-None-Match": inm})
    tap.ok(r.status == 304 and r.body == b"" and r.headers.get("etag") == etag and
           r.headers.get("cache-control") == "no-cache",
           "If-None-Match: %s -> 304 with the ETag" % inm, repr(r))
secure(r, "a 304")
r = get("/ui/jobs/7", headers={"If-None-Match": etag})
tap.is_(r.status, 304, "and for a route of the dashboard (the same page)")
for inm in ('"0000000000000000"', etag.strip('"'), ""):
    r = get("/ui/", headers={"If-None-Match": inm})
    tap.ok(r.status == 200 and r.body == page.body,
           "If-None-Match: %r (no match) -> 200" % inm, repr(r))
for ext, (p, a) in assets.items():
    r = get(p, headers={"If-None-Match": a.headers.get("etag", "")})
    tap.ok(r.status == 304 and r.headers.get("cache-control") == IMMUTABLE,
           "%s with its ETag -> 304" % p, repr(r))
head, rest = raw_head(b"GET /ui/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      b"If-None-Match: " + etag.encode() + b"\r\n\r\n")
tap.ok(head.startswith(b"HTTP/1.1 304 Not Modified\r\n") and rest == b"" and
       b"\ncontent-length:" not in head.lower() and b"\ncontent-type:" not in head.lower(),
       "a 304 has no body, no Content-Length and no Content-Type", repr(head + rest))

r = get("/healthz")
tap.is_(r.status, 200, "sluiced is still healthy")

# --- 2. the generator --------------------------------------------------------

tmp = tempfile.mkdtemp(prefix="sluice-ui.")


def embed(*args):
    p = subprocess.run([EMBED] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def put(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


if not os.access(EMBED, os.X_OK):
    tap.bail("the generator is built", "no %s (make SAN=1 all builds it)" % EMBED)
web = os.path.join(tmp, "web")
put(os.path.join(web, "index.html"),
    b"<!DOCTYPE html><link rel=stylesheet href='/ui/app.css'>"
    b"<script src=\"/ui/app.js\" defer></script><a href=\"/ui/app.jsx\">x</a>")
for n in ("b.js", "A.js", "a.js", "_x.js", ".hidden.js", "notes.txt"):
    put(os.path.join(web, "js", n), b"// " + n.encode())
put(os.path.join(web, "css", "z.css"), b"z{}")
put(os.path.join(web, "node_modules", UPLOT_JS), b"var uPlot=function(){};")
put(os.path.join(web, "node_modules", UPLOT_CSS), b".uplot{}")
rc, listing, err = embed("--list", web)
rows = [line.split("\t") for line in listing.decode().splitlines()]
tap.ok(rc == 0 and len(rows) == 3 and rows[0][0] == "/ui/" and
       all(r[4] == "immutable" for r in rows[1:]) and rows[0][4] == "no-cache",
       "the generator lists the page shell and two assets (no favicon.svg, none)",
       "exit %d: %r %s" % (rc, rows, err))
js_path = [r[0] for r in rows if r[0].endswith(".js")]
rc, js, _ = embed("--print", js_path[0] if js_path else "/ui/none.js", web)
tap.is_(js, b"var uPlot=function(){};"
        b"\n/* web/js/A.js */\n// A.js\n/* web/js/_x.js */\n// _x.js"
        b"\n/* web/js/a.js */\n// a.js\n/* web/js/b.js */\n// b.js",
        "app.js: uPlot, then A.js _x.js a.js b.js (bytes order; dot files left out)")
tap.ok(js_path and js_path[0] == "/ui/app.%s.js" % fnv64(js), "named by its FNV-1a hash",
       repr(js_path))
rc, shell, _ = embed("--print", "/ui/", web)
tap.ok(shell.count(b"/ui/app.js\"") == 0 and b"'/ui/app." in shell and
       b'"/ui/app.jsx"' in shell and (b'"%s"' % js_path[0].encode()) in shell,
       "quoted references rewritten, whatever the quote; /ui/app.jsx left alone", repr(shell))
put(os.path.join(web, "index.html"), b"<!DOCTYPE html><script src=/ui/app.js></script>")
rc, _, err = embed("--list", web)
tap.ok(rc == 1 and "no quoted reference to /ui/app.js" in err,
       "a page shell without a quoted reference to /ui/app.js is refused", err)
put(os.path.join(web, "js", "bad name.js"), b"")
put(os.path.join(web, "index.html"), b"<link href='/ui/app.css'><script src='/ui/app.js'>")
rc, _, err = embed("--list", web)
tap.ok(rc == 1 and "bad name.js" in err, "a file name with a space is refused", err)
os.unlink(os.path.join(web, "js", "bad name.js"))

# without uPlot: the not-built page
empty = os.path.join(tmp, "empty")
os.makedirs(empty)
rc, listing, err = embed("--node-modules", empty, "--list", web)
tap.ok(rc == 0 and listing.decode().count("\n") == 1 and
       listing.decode().startswith("/ui/\ttext/html; charset=utf-8\t"),
       "without the uPlot bundle: one page, at /ui/", "exit %d %r %s" % (rc, listing, err))
tap.ok("warning" in err and "uPlot.iife.min.js" in err, "and a warning on stderr", err)
rc, nb, _ = embed("--node-modules", empty, "--print", "/ui/", REPO + "/web")
text = re.sub(rb"\s+", b" ", nb).decode()
for what, rx in (("says the web UI was not built", r"web UI was not built"),
                 ("says why: the uPlot bundle was missing",
                  r"uPlot\s+bundle.*missing at build time"),
                 ("says why: npm was unavailable or npm ci failed",
                  r"npm was unavailable.*npm ci"),
                 ("says how: make where npm is installed", r"run <code>make</code> where npm"),
                 ("or make ui", r"<code>make ui</code>")):
    tap.ok(re.search(rx, text), "the not-built page %s" % what, text)
tap.ok(not re.search(r"<script|<style|\sstyle\s*=", text, re.I),
       "the not-built page has no script or style either (the policy covers it)")
rc, _, err = embed("--require", "--node-modules", empty, "--list", web)
tap.ok(rc == 1 and "uPlot.iife.min.js" in err, "with --require (make ui) that is an error", err)
c_rc, csrc, err = embed("--node-modules", empty, web)
tap.ok(c_rc == 0 and b"const bool sl_ui_built = false;" in csrc and
       b"sl_ui_nassets = 1;" in csrc, "its C file embeds the one page, not built", err)

shutil.rmtree(tmp, ignore_errors=True)
tap.done_testing(D)
