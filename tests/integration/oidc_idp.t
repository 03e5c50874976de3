#!/usr/bin/env python3
"""oidc_idp.t - the fake OpenID provider (tests/idp/fake_idp.py) behaves as
a provider must, and src/ident/oidc.c talks to it over HTTPS.

A CA and a server certificate for 127.0.0.1 are made with `openssl`;
fake_idp.py serves with them. Its endpoints are checked directly
(discovery, JWKS, device authorization, token polls, approve/deny/
slowdown, mint; signatures checked with `openssl dgst -verify`), then
through oidc-probe (tests/idp/oidc_probe.c, built by make SAN=1 unit):
discovery, the device flow to an id_token, and verification of that
token and of minted attack tokens."""

import base64
import hashlib
import hmac
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import REPO, SLUICE_BIN, tap  # noqa: E402

IDP = os.path.join(REPO, "tests", "idp", "fake_idp.py")
PROBE = os.path.join(SLUICE_BIN, "tests", "oidc-probe")
SECRET = "s3cret:with&odd=chars"

tmp = tempfile.mkdtemp(prefix="oidc_idp.")


def sh(*args, data=None):
    return subprocess.run(args, input=data, capture_output=True, check=True, cwd=tmp).stdout


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


# A CA, and a certificate for 127.0.0.1 that it signs.
sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
   "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=oidc test CA", "-days", "2")
sh("openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
   "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1",
   "-addext", "subjectAltName=IP:127.0.0.1")
sh("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
   "-CAcreateserial", "-copy_extensions", "copy", "-days", "2", "-out", "server.pem")
ca = os.path.join(tmp, "ca.pem")
with open(os.path.join(tmp, "secret"), "w") as f:
    f.write(SECRET + "\n")
os.chmod(os.path.join(tmp, "secret"), 0o600)

port_file = os.path.join(tmp, "port")
idp = subprocess.Popen([sys.executable, IDP, "serve", "--dir", os.path.join(tmp, "keys"),
                        "--cert", os.path.join(tmp, "server.pem"),
                        "--key", os.path.join(tmp, "server.key"),
                        "--port-file", port_file, "--secret-file", os.path.join(tmp, "secret")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
line = idp.stdout.readline()  # printed once it listens
if not line.strip().isdigit():
    tap.bail("fake_idp.py starts", idp.stderr.read())
port = int(line)
issuer = "https://127.0.0.1:%d" % port
ctx = ssl.create_default_context(cafile=ca)


def call(path, form=None, js=None, auth=True, basic=True):
    headers = {}
    data = None
    if form is not None:
        if auth and basic:
            pair = "%s:%s" % (urllib.parse.quote_plus("sluice"), urllib.parse.quote_plus(SECRET))
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif auth:
            form = dict(form, client_id="sluice", client_secret=SECRET)
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif js is not None:
        data = json.dumps(js).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(issuer + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def verifies(token, pem_key, ec):
    """Check a token's signature with `openssl dgst -verify`."""
    h, p, s = token.split(".")
    sig = b64d(s)
    if ec:  # r||s back to DER
        def der_int(b):
            b = b.lstrip(b"\0")
            if not b or b[0] & 0x80:
                b = b"\0" + b
            return b"\x02" + bytes([len(b)]) + b
        body = der_int(sig[:32]) + der_int(sig[32:])
        sig = b"\x30" + bytes([len(body)]) + body
    pub = os.path.join(tmp, "pub.pem")
    with open(pub, "wb") as f:
        f.write(sh("openssl", "pkey", "-in", pem_key, "-pubout"))
    with open(os.path.join(tmp, "sig"), "wb") as f:
        f.write(sig)
    r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", pub, "-signature",
                        os.path.join(tmp, "sig")], input=(h + "." + p).encode(),
                       capture_output=True, cwd=tmp)
    return r.returncode == 0


def probe(*args, stdin=None):
    env = dict(os.environ, OIDC_CLIENT_SECRET=SECRET)
    r = subprocess.run([PROBE, issuer, ca] + list(args), input=stdin, capture_output=True,
                       text=True, env=env, timeout=60)
    if r.stderr:
        probe_stderr.append(r.stderr)
    return r.stdout.strip(), r.stderr


probe_stderr = []


try:
    with open(port_file) as f:
        tap.is_(int(f.read()), port, "the port file holds the port printed")
    st, doc = call("/.well-known/openid-configuration")
    tap.ok(st == 200 and doc["issuer"] == issuer and doc["token_endpoint"] == issuer + "/token"
           and doc["device_authorization_endpoint"] == issuer + "/device",
           "discovery names the issuer and its endpoints", doc)
    st, jwks = call("/jwks")
    kinds = sorted((k["kty"], k["kid"]) for k in jwks["keys"])
    tap.ok(st == 200 and kinds == [("EC", "ec1"), ("RSA", "rsa1")], "the JWKS has rsa1 and ec1",
           kinds)
    tap.ok(len(b64d(next(k["n"] for k in jwks["keys"] if k["kty"] == "RSA"))) == 256,
           "the RSA key is 2048 bits")

    st, dev = call("/device", form={"scope": "openid profile"})
    tap.ok(st == 200 and dev["interval"] == 1 and dev["user_code"] and dev["device_code"]
           and dev["verification_uri"].startswith(issuer), "device authorization answers", dev)
    st, doc = call("/device", form={"scope": "openid"}, auth=False)
    tap.ok(st == 401 and doc["error"] == "invalid_client", "without credentials: invalid_client")
    grant = {"grant_type": "urn:ietf:params:oauth:grant-type:device_code",
             "device_code": dev["device_code"]}
    st, doc = call("/token", form=grant)
    tap.ok(st == 400 and doc["error"] == "authorization_pending", "a poll before approval: pending",
           doc)
    st, doc = call("/token", form=dict(grant, client_id="sluice", client_secret="wrong"),
                   auth=False)
    tap.ok(st == 401 and doc["error"] == "invalid_client", "a wrong secret: invalid_client", doc)
    call("/slowdown", js={"user_code": dev["user_code"]})
    st, doc = call("/token", form=grant, basic=False)
    tap.ok(st == 400 and doc["error"] == "slow_down", "after /slowdown: slow_down (secret in the body)")
    st, _ = call("/approve", js={"user_code": dev["user_code"], "user": "bob",
                                 "groups": ["team-a", "admins"]})
    tap.is_(st, 200, "approve")
    st, doc = call("/token", form=grant)
    tap.ok(st == 200 and "id_token" in doc, "after approval the poll gives an id_token", doc)
    tok = doc.get("id_token", "..")
    claims = json.loads(b64d(tok.split(".")[1]))
    tap.ok(claims["iss"] == issuer and claims["aud"] == "sluice" and
           claims["preferred_username"] == "bob" and claims["groups"] == ["team-a", "admins"]
           and claims["exp"] > time.time(), "its claims: issuer, audience, user, groups", claims)
    rsa_pem = os.path.join(tmp, "keys", "rsa.pem")
    ec_pem = os.path.join(tmp, "keys", "ec.pem")
    tap.ok(verifies(tok, rsa_pem, False), "its RS256 signature verifies with openssl")
    st, doc = call("/token", form=grant)
    tap.ok(st == 400 and doc["error"] == "invalid_grant", "a device code is good for one token")

    st, dev2 = call("/device", form={})
    call("/deny", js={"user_code": dev2["user_code"]})
    st, doc = call("/token", form=dict(grant, device_code=dev2["device_code"]))
    tap.ok(st == 400 and doc["error"] == "access_denied", "denied: access_denied")

    st, doc = call("/mint", js={"key": "ec", "claims": {"preferred_username": "carol",
                                                    "sub": "c-1"}})
    ec_tok = doc["token"]
    hdr = json.loads(b64d(ec_tok.split(".")[0]))
    tap.ok(hdr["alg"] == "ES256" and hdr["kid"] == "ec1" and len(b64d(ec_tok.split(".")[2])) == 64,
           "mint ec: ES256, kid ec1, a 64-byte r||s signature", hdr)
    tap.ok(verifies(ec_tok, ec_pem, True), "which verifies with openssl")
    st, doc = call("/mint", js={"key": "none"})
    tap.ok(json.loads(b64d(doc["token"].split(".")[0]))["alg"] == "none" and
           doc["token"].endswith("."), "mint none: alg none, no signature")
    st, doc = call("/mint", js={"key": "hs256-with-rsa-public", "header": {"typ": "at+jwt"}})
    h, p, s = doc["token"].split(".")
    pem = sh("openssl", "pkey", "-in", rsa_pem, "-pubout")
    tap.ok(hmac.compare_digest(b64d(s), hmac.new(pem, (h + "." + p).encode(),
                                                 hashlib.sha256).digest())
           and json.loads(b64d(h))["typ"] == "at+jwt",
           "mint hs256-with-rsa-public: HMAC keyed with the public PEM, header override applied")
    off = subprocess.run([sys.executable, IDP, "mint", "--dir", os.path.join(tmp, "keys"),
                          "--issuer", issuer, "--claims", '{"preferred_username":"dave"}'],
                         capture_output=True, text=True, check=True).stdout.strip()
    tap.ok(verifies(off, rsa_pem, False), "an offline mint uses the same keys")

    # The C module against it.
    if not os.access(PROBE, os.X_OK):
        tap.skip(16, "%s is not built (make SAN=1 unit)" % PROBE)
    else:
        out, err = probe("discover")
        tap.is_(out, "ok keys=2", "oidc.c: discovery over HTTPS loads both keys")
        out, err = probe("device-start")
        parts = out.split()
        tap.ok(len(parts) == 6 and parts[0] == "ok" and parts[3] == "1",
               "oidc.c: device_start gives a code and interval 1", out, err)
        code, user_code = parts[1], parts[2]
        out, _ = probe("poll", code)
        tap.ok(out.startswith("rc=-11 "), "oidc.c: a poll before approval is -EAGAIN", out)
        call("/approve", js={"user_code": user_code, "user": "erin", "groups": ["ml"]})
        out, _ = probe("poll", code)
        tap.ok(out.startswith("ok ey"), "oidc.c: after approval the poll gives the id_token", out)
        id_token = out[3:]
        out, _ = probe("verify", stdin=id_token)
        tap.is_(out, "ok erin sub-erin ml", "oidc.c: that id_token verifies, user and groups")
        out, _ = probe("verify", stdin=ec_tok)
        tap.is_(out, "ok carol c-1", "oidc.c: a minted ES256 token verifies")
        for key, want in (("none", "algorithm none refused"),
                          ("hs256-with-rsa-public", "algorithm HS256 refused")):
            t = call("/mint", js={"key": key})[1]["token"]
            out, _ = probe("verify", stdin=t)
            tap.ok(out.startswith("rc=-13 ") and want in out, "oidc.c refuses a %s token" % key,
                   out)
        out, _ = probe("device-start")
        code, user_code = out.split()[1:3]
        call("/slowdown", js={"user_code": user_code})
        out, _ = probe("poll", code)
        tap.ok(out.startswith("rc=-16 ") and "slow_down" in out, "oidc.c: slow_down is -EBUSY", out)
        call("/deny", js={"user_code": user_code})
        out, _ = probe("poll", code)
        tap.ok(out.startswith("rc=-13 ") and "access_denied" in out,
               "oidc.c: access_denied is -EACCES", out)
        r = subprocess.run([PROBE, issuer + "/", ca, "discover"], capture_output=True, text=True,
                           timeout=60)
        tap.ok(r.stdout.startswith("rc=-5 ") and "wrong issuer" in r.stdout,
               "oidc.c: a document whose issuer differs (by a slash) is refused", r.stdout)
        for mode, what, want in (("redirect", "a redirect (no redirect is followed)", "answered 302"),
                                 ("huge", "2 MiB (the cap is 1 MiB)", "size")):
            call("/misbehave", js={"discovery": mode})
            out, _ = probe("discover")
            tap.ok(out.startswith("rc=-5 ") and want in out,
                   "oidc.c: a discovery answer that is %s is refused (-EIO)" % what, out)
        sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
           "-nodes", "-keyout", "other.key", "-out", "other.pem", "-subj", "/CN=other CA",
           "-days", "2")
        r = subprocess.run([PROBE, issuer, os.path.join(tmp, "other.pem"), "discover"],
                           capture_output=True, text=True, timeout=60)
        tap.ok(r.stdout.startswith("rc=-5 "), "oidc.c: a provider whose certificate the CA file "
               "does not vouch for is refused", r.stdout)
        os.environ["OIDC_CLIENT_ID"] = "nobody"
        out, _ = probe("device-start")
        del os.environ["OIDC_CLIENT_ID"]
        tap.ok(out.startswith("rc=-13 ") and SECRET not in out,
               "oidc.c: a client the provider does not know: -EACCES, no secret in the text", out)
        tap.ok(not probe_stderr, "oidc-probe wrote nothing to stderr (no sanitizer report)",
               *probe_stderr[:2])
finally:
    idp.terminate()
    idp.wait(timeout=10)
    shutil.rmtree(tmp, ignore_errors=True)
tap.done_testing()
