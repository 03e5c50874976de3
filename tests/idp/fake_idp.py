#!/usr/bin/env python3
"""fake_idp.py - a small OpenID provider for Sluice's tests (Python 3
stdlib; signing through the `openssl` command).

  fake_idp.py serve --dir DIR --cert CERT --key KEY [--port-file F]
                    [--client-id ID] [--secret-file F] [--expires-in S]
      HTTPS on 127.0.0.1 (a free port unless --port), issuer
      https://127.0.0.1:PORT. The client secret comes from --secret-file or
      $FAKE_IDP_CLIENT_SECRET (default "secret"), never from argv. Prints
      the port on stdout (and into --port-file) once it accepts connections.
  fake_idp.py mint --dir DIR [--key rsa|ec|hs256-with-rsa-public|none]
                   [--claims JSON] [--header JSON] [--issuer URL]
      prints a token signed with DIR's keys: the JWKS-file mode offline.
  fake_idp.py jwks --dir DIR      prints the JWKS of DIR's keys.

DIR holds rsa.pem (RSA 2048, kid "rsa1") and ec.pem (EC P-256, kid
"ec1"), made with `openssl genpkey` when absent, so `mint` and `serve`
share them. Importable: Keys(DIR).jwks(), Keys(DIR).mint(claims, header,
key).

Endpoints: GET /.well-known/openid-configuration, GET /jwks, POST /device
(RFC 8628 device authorization), POST /token (grant_type device_code;
client_secret_basic or client_secret_post), and for the tests POST
/approve {user_code, user, groups}, /deny {user_code}, /slowdown
{user_code} (the next poll answers slow_down), /mint {claims, header,
key} -> {token}, /misbehave {discovery: "redirect"|"huge"} (the next
discovery answer is a 302 to itself, or a 2 MiB document).
"""
import argparse
import base64
import hmac
import hashlib
import json
import os
import secrets
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def b64url(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def openssl(*args, data=None):
    return subprocess.run(("openssl",) + args, input=data, capture_output=True,
                          check=True).stdout


def der_to_raw(der, size=32):
    """An ECDSA signature from DER (SEQUENCE of two INTEGERs) to r||s."""
    assert der[0] == 0x30
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    out = b""
    for _ in range(2):
        assert der[i] == 0x02
        n = der[i + 1]
        v = der[i + 2:i + 2 + n].lstrip(b"\0")
        out += v.rjust(size, b"\0")
        i += 2 + n
    return out


class Keys:
    """The provider's signing keys, kept as PEM files in 'directory'."""

    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.rsa = os.path.join(directory, "rsa.pem")
        self.ec = os.path.join(directory, "ec.pem")
        if not os.path.exists(self.rsa):
            openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", self.rsa)
        if not os.path.exists(self.ec):
            openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", self.ec)
        self.rsa_public_pem = openssl("pkey", "-in", self.rsa, "-pubout")

    def jwks(self):
        text = openssl("rsa", "-in", self.rsa, "-noout", "-modulus").decode()
        n = bytes.fromhex(text.strip().split("=", 1)[1])
        spki = openssl("pkey", "-in", self.ec, "-pubout", "-outform", "DER")
        point = spki[-65:]  # 04 || x || y, uncompressed
        return {"keys": [
            {"kty": "RSA", "kid": "rsa1", "use": "sig", "alg": "RS256",
             "n": b64url(n), "e": b64url((65537).to_bytes(3, "big"))},
            {"kty": "EC", "kid": "ec1", "use": "sig", "alg": "ES256", "crv": "P-256",
             "x": b64url(point[1:33]), "y": b64url(point[33:65])},
        ]}

    def mint(self, claims, header=None, key="rsa"):
        """A compact JWS of 'claims'. key: rsa (RS256), ec (ES256),
        hs256-with-rsa-public (HMAC keyed with the RSA public key's PEM: the
        alg confusion attack), none (alg none, no signature)."""
        alg, kid = {"rsa": ("RS256", "rsa1"), "ec": ("ES256", "ec1"),
                    "hs256-with-rsa-public": ("HS256", "rsa1"),
                    "none": ("none", None)}[key]
        h = {"alg": alg, "typ": "JWT"}
        if kid:
            h["kid"] = kid
        h.update(header or {})
        signing_input = (b64url(json.dumps(h, separators=(",", ":"))) + "." +
                         b64url(json.dumps(claims, separators=(",", ":"))))
        data = signing_input.encode()
        if key == "rsa":
            sig = openssl("dgst", "-sha256", "-sign", self.rsa, data=data)
        elif key == "ec":
            sig = der_to_raw(openssl("dgst", "-sha256", "-sign", self.ec, data=data))
        elif key == "hs256-with-rsa-public":
            sig = hmac.new(self.rsa_public_pem, data, hashlib.sha256).digest()
        else:
            sig = b""
        return signing_input + "." + b64url(sig)


def default_claims(issuer, audience, user="alice", groups=None, lifetime_s=300):
    now = int(time.time())
    return {"iss": issuer, "aud": audience, "sub": "sub-" + user,
            "preferred_username": user, "groups": groups or [],
            "iat": now, "exp": now + lifetime_s}


class Provider:
    """Device authorizations in flight, by device_code."""

    def __init__(self, keys, client_id, client_secret, expires_in):
        self.keys = keys
        self.client_id = client_id
        self.client_secret = client_secret
        self.expires_in = expires_in
        self.issuer = None
        self.lock = threading.Lock()
        self.devices = {}
        self.misbehave = None  # the next discovery answer: "redirect", "huge"

    def by_user_code(self, code):
        for d in self.devices.values():
            if d["user_code"] == code:
                return d
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-idp/1"

    def log_message(self, fmt, *args):  # quiet: the tests read stdout
        pass

    def answer(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(min(n, 1 << 20)).decode("utf-8", "replace")

    def form(self):
        return {k: v[0] for k, v in urllib.parse.parse_qs(self.body()).items()}

    def client_ok(self, form):
        p = self.server.provider
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            try:
                pair = base64.b64decode(auth[6:], validate=True).decode()
                cid, sec = (urllib.parse.unquote_plus(x) for x in pair.split(":", 1))
            except ValueError:
                return False
        else:
            cid, sec = form.get("client_id", ""), form.get("client_secret", "")
        return (hmac.compare_digest(cid, p.client_id) and
                hmac.compare_digest(sec, p.client_secret))

    def do_GET(self):
        p = self.server.provider
        if self.path == "/.well-known/openid-configuration":
            with p.lock:
                mode, p.misbehave = p.misbehave, None
            if mode == "redirect":
                self.send_response(302)
                self.send_header("Location", p.issuer + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode == "huge":
                return self.answer(200, {"issuer": p.issuer, "pad": "x" * (2 << 20)})
            self.answer(200, {
                "issuer": p.issuer, "jwks_uri": p.issuer + "/jwks",
                "token_endpoint": p.issuer + "/token",
                "device_authorization_endpoint": p.issuer + "/device",
                "authorization_endpoint": p.issuer + "/auth",
                "grant_types_supported": [DEVICE_GRANT],
                "id_token_signing_alg_values_supported": ["RS256", "ES256"],
                "token_endpoint_auth_methods_supported":
                    ["client_secret_basic", "client_secret_post"]})
        elif self.path == "/jwks":
            self.answer(200, p.keys.jwks())
        else:
            self.answer(404, {"error": "not_found"})

    def do_POST(self):
        p = self.server.provider
        path = self.path
        if path in ("/device", "/token"):
            form = self.form()
            if not self.client_ok(form):
                return self.answer(401, {"error": "invalid_client"})
            return self.device(form) if path == "/device" else self.token(form)
        try:
            req = json.loads(self.body() or "{}")
        except ValueError:
            return self.answer(400, {"error": "not JSON"})
        if path == "/mint":
            claims = default_claims(p.issuer, p.client_id)
            claims.update(req.get("claims") or {})
            return self.answer(200, {"token": p.keys.mint(
                claims, req.get("header"), req.get("key", "rsa"))})
        if path == "/misbehave":
            with p.lock:
                p.misbehave = req.get("discovery")
            return self.answer(200, {"ok": True})
        with p.lock:
            d = p.by_user_code(req.get("user_code"))
            if d is None or path not in ("/approve", "/deny", "/slowdown"):
                return self.answer(404, {"error": "no such user_code or endpoint"})
            if path == "/approve":
                d.update(state="approved", user=req.get("user", "alice"),
                         groups=req.get("groups", []))
            elif path == "/deny":
                d["state"] = "denied"
            else:
                d["slow_down"] = True
        self.answer(200, {"ok": True})

    def device(self, form):
        p = self.server.provider
        code = secrets.token_urlsafe(32)
        user_code = "%04X-%04X" % (secrets.randbelow(65536), secrets.randbelow(65536))
        with p.lock:
            p.devices[code] = {"user_code": user_code, "state": "pending",
                               "scope": form.get("scope", ""),
                               "expires": time.time() + p.expires_in}
        self.answer(200, {"device_code": code, "user_code": user_code,
                          "verification_uri": p.issuer + "/activate",
                          "verification_uri_complete": p.issuer + "/activate?user_code=" + user_code,
                          "interval": 1, "expires_in": p.expires_in})

    def token(self, form):
        p = self.server.provider
        if form.get("grant_type") != DEVICE_GRANT:
            return self.answer(400, {"error": "unsupported_grant_type"})
        with p.lock:
            d = p.devices.get(form.get("device_code", ""))
            if d is None:
                return self.answer(400, {"error": "invalid_grant"})
            if time.time() > d["expires"]:
                return self.answer(400, {"error": "expired_token"})
            if d.pop("slow_down", False):
                return self.answer(400, {"error": "slow_down"})
            if d["state"] == "pending":
                return self.answer(400, {"error": "authorization_pending"})
            if d["state"] == "denied":
                return self.answer(400, {"error": "access_denied"})
            # A device code is good for one token.
            del p.devices[form["device_code"]]
        claims = default_claims(p.issuer, p.client_id, d["user"], d["groups"])
        self.answer(200, {"access_token": secrets.token_urlsafe(24), "token_type": "Bearer",
                          "expires_in": 300, "id_token": p.keys.mint(claims)})


def serve(args):
    secret = os.environ.get("FAKE_IDP_CLIENT_SECRET", "secret")
    if args.secret_file:
        with open(args.secret_file) as f:
            secret = f.read().strip()
    provider = Provider(Keys(args.dir), args.client_id, secret, args.expires_in)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    server.provider = provider
    port = server.server_address[1]
    provider.issuer = "https://127.0.0.1:%d" % port
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    print(port, flush=True)
    server.serve_forever()


def main():
    ap = argparse.ArgumentParser(description="a fake OpenID provider for tests")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--dir", required=True)
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--port-file")
    s.add_argument("--client-id", default="sluice")
    s.add_argument("--secret-file")
    s.add_argument("--expires-in", type=int, default=600)
    m = sub.add_parser("mint")
    m.add_argument("--dir", required=True)
    m.add_argument("--key", default="rsa",
                   choices=["rsa", "ec", "hs256-with-rsa-public", "none"])
    m.add_argument("--claims", default="{}")
    m.add_argument("--header", default="{}")
    m.add_argument("--issuer", default="https://127.0.0.1")
    m.add_argument("--audience", default="sluice")
    j = sub.add_parser("jwks")
    j.add_argument("--dir", required=True)
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
    elif args.cmd == "mint":
        claims = default_claims(args.issuer, args.audience)
        claims.update(json.loads(args.claims))
        print(Keys(args.dir).mint(claims, json.loads(args.header), args.key))
    else:
        print(json.dumps(Keys(args.dir).jwks()))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
