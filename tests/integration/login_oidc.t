#!/usr/bin/env python3
"""login_oidc.t - signing in through an OpenID Connect provider.

The test makes a CA, serves the fake provider (tests/idp/fake_idp.py,
through oidctest.py) over HTTPS with it, and starts sluiced with an
identity file naming the provider and rules from its groups claim to
teams and roles. A token the provider signed (RS256 and ES256) is
exchanged at POST /v1/login for a Sluice token with the right team and
role; the attacks are refused with 401 and a reason: expired, not yet
valid, another audience, another issuer, alg none, HS256 keyed with the
RSA public key, a changed payload, an unknown key. A user in no mapped
group is refused and deprovisioned, a local account is never taken over,
a group change changes the role at the next sign-in. `sluice login
--oidc` runs the device flow to a saved token (approved at the provider
while it waits) and reports a denial; the device routes answer 202
while pending and pass slow_down on. With the provider gone, tokens
still verify against the keys already fetched, or against a JWKS file
(a second daemon that has no route to the provider), while the device
flow is a clear 503. No provider token or client secret reaches the
log, the audit export or the store; 30 refused tokens from one address
are followed by 429."""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402
import oidctest  # noqa: E402

SLUICE = os.path.join(SLUICE_BIN, "sluice")
work = tempfile.mkdtemp(prefix="sluice-oidc.")
os.chmod(work, 0o711)
idp = oidctest.FakeIdp(work)
try:
    idp.start()
except RuntimeError as e:
    tap.bail("the fake OIDC provider starts", str(e))
RULES = [("ml-platform", "platform", "admin"), ("nlp", "nlp", "member"),
         ("viewers", "nlp", "viewer")]
ident = oidctest.identity_file(idp, work, RULES)


def start_fails(path):
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluiced"), "--dev", "--listen",
                        "127.0.0.1:1", "--data-dir", os.path.join(work, "bad"),
                        "--identity", path], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stderr


bad = oidctest.identity_file(idp, work, RULES, name="bad.yaml",
                             extra="  jwksFile: '%s'\n" % os.path.join(work, "absent.json"))
rc, err = start_fails(bad)
tap.ok(rc != 0 and "absent.json" in err, "a jwksFile that cannot be read starts nothing", err)
os.chmod(idp.secret_file, 0o644)
rc, err = start_fails(ident)
tap.ok(rc != 0 and "clientSecretFile" in err, "a client secret file others may read is "
       "refused", err)
os.chmod(idp.secret_file, 0o600)

d = Sluiced(fake_gpus="2xH100", args=["--identity", ident])
d.start()
r = d.request("POST", "/v1/apply", """
apiVersion: sluice/v1
kind: Team
metadata: {name: nlp}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: platform}
---
apiVersion: sluice/v1
kind: Queue
metadata: {name: nlp}
spec: {team: nlp, nominal: {gpus: 2}}
""", ctype="application/yaml")
tap.ok(r.status == 200, "teams nlp and platform applied", r)

st, info = d.json_req("GET", "/v1/login", token=None)
tap.ok(st == 200 and "oidc" in info.get("methods", []) and
       "password" not in info.get("methods", []) and
       info.get("oidc") == {"issuer": idp.issuer, "client_id": oidctest.CLIENT_ID},
       "GET /v1/login offers OIDC with the issuer and client id (no password: no LDAP)",
       info)


def exchange(token):
    st, body = d.json_req("POST", "/v1/login", {"id_token": token}, token=None)
    return st, body or {}


# --- tokens the provider signed --------------------------------------------
st, alice = exchange(idp.mint("alice", ["nlp", "unrelated"]))
tap.ok(st == 201 and alice.get("user") == "alice" and alice.get("team") == "nlp" and
       alice.get("role") == "member" and alice.get("token"),
       "an RS256 token for alice (groups nlp): a member of team nlp", alice)
st, who = d.json_req("GET", "/v1/whoami", token=alice.get("token"))
tap.ok(st == 200 and who.get("user") == "alice" and who.get("role") == "member",
       "the Sluice token it gives works: whoami", who)
r = d.request("POST", "/v1/jobs", job_doc("from-oidc", team="nlp"), token=alice.get("token"))
tap.ok(r.status == 201, "alice submits to team nlp", r)
st, bob = exchange(idp.mint("bob", ["ml-platform", "nlp"], key="ec"))
tap.ok(st == 201 and bob.get("team") == "platform" and bob.get("role") == "admin",
       "an ES256 token for bob (ml-platform first in the rules): admin of platform", bob)
st, dave = exchange(idp.mint("dave", ["viewers"]))
r = d.request("POST", "/v1/jobs", job_doc("v", team="nlp"), token=dave.get("token"))
tap.ok(st == 201 and dave.get("role") == "viewer" and r.status == 403,
       "dave (viewers) is a viewer, who may not submit", dave, r)

# --- attacks and bad tokens --------------------------------------------------
now = int(time.time())
ATTACKS = [
    ("expired beyond the skew", idp.mint("alice", ["nlp"], exp=now - 600, iat=now - 900),
     "expired"),
    ("not valid yet", idp.mint("alice", ["nlp"], nbf=now + 600), "nbf"),
    ("for another audience", idp.mint("alice", ["nlp"], aud="someone-else"), "audience"),
    ("from another issuer", idp.mint("alice", ["nlp"], iss="https://evil.example.com"),
     "issuer"),
    ("alg none", idp.mint("alice", ["ml-platform"], key="none"), "none"),
    ("HS256 keyed with the RSA public key", idp.mint("alice", ["ml-platform"],
                                                     key="hs256-with-rsa-public"), "HS256"),
    ("no exp", idp.mint("alice", ["nlp"], exp=None), "exp"),
    ("a key the provider does not have", idp.mint("alice", ["nlp"], header={"kid": "nope"}),
     "key"),
    ("not a JWT", "not.a.jwt", "malformed"),
]
good = idp.mint("mallory", ["nlp"])
h, p, s = good.split(".")
forged = idp.mint("mallory", ["ml-platform"]).split(".")[1]
ATTACKS.append(("a payload changed after signing", "%s.%s.%s" % (h, forged, s), "signature"))
for name, token, why in ATTACKS:
    st, body = exchange(token)
    msg = json.dumps(body)
    tap.ok(st == 401 and "OIDC token" in msg and why.lower() in msg.lower(),
           "refused with 401: %s" % name, st, body)
st, who = d.json_req("GET", "/v1/whoami", token=alice.get("token"))
tap.ok(st == 200, "refused tokens change nothing: alice's token still works", who)
nusers = [u.get("name") for u in (d.json_req("GET", "/v1/users")[1] or {}).get("users", [])]
tap.ok("mallory" not in nusers, "no user was made from a refused token", nusers)

# --- bodies -----------------------------------------------------------------
for body, field, name in [
        ({"id_token": ""}, "id_token", "an empty id_token"),
        ({"id_token": "x" * 16385}, "id_token", "an id_token over 16 KiB"),
        ({"id_token": good, "user": "alice"}, "id_token", "id_token with user"),
        ({"id_token": good, "device_code": "x"}, "id_token", "id_token with device_code"),
        ({"id_token": 7}, "id_token", "an id_token that is not a string"),
        ({"password": "x", "user": "alice"}, "password", "a password with no LDAP server")]:
    r = d.request("POST", "/v1/login", body, token=None)
    tap.ok(r.status == 400 and r.error_field() == field,
           "400 naming %s: %s" % (field, name), r)
r = d.request("POST", "/v1/login/device", "{}", ctype="application/json", token=None)
tap.ok(r.status in (400, 415), "POST /v1/login/device takes no body", r)

# --- the rules at each sign-in ---------------------------------------------------
st, body = exchange(idp.mint("carol", ["other"]))
tap.ok(st == 403 and "none of the groups" in json.dumps(body),
       "carol, in no mapped group, is refused with 403", body)
st, body = exchange(idp.mint("admin", ["ml-platform"]))
tap.ok(st == 409 and "local account" in json.dumps(body),
       "a provider's 'admin' never takes over the local break-glass admin (409)", body)
st, up = exchange(idp.mint("alice", ["ml-platform"]))
tap.ok(st == 201 and up.get("role") == "admin" and up.get("team") == "platform",
       "alice moved to ml-platform at the provider: admin at her next sign-in", up)
st, gone = exchange(idp.mint("alice", []))
st2, _ = d.json_req("GET", "/v1/whoami", token=up.get("token"))
st3, _ = d.json_req("GET", "/v1/whoami", token=alice.get("token"))
tap.ok(st == 403 and st2 == 401 and st3 == 401,
       "alice in no mapped group: refused, and every token she held is revoked", gone, st2,
       st3)
st, back = exchange(idp.mint("alice", ["nlp"]))
tap.ok(st == 201 and back.get("role") == "member", "back in nlp: member again", back)
r = d.request("POST", "/v1/login/refresh", token=back.get("token"))
tap.ok(r.status == 404, "no refresh without LDAP: an OIDC user signs in again", r)

# --- the device flow through the CLI -----------------------------------------------
home = os.path.join(work, "home")
os.makedirs(home)


def cli_env(xdg=home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_TOKEN")}
    env.update(SLUICE_SERVER=d.server, XDG_CONFIG_HOME=xdg)
    return env


def device_cli(decide):
    """`sluice login --oidc`, the code it shows handed to decide(user_code)."""
    p = subprocess.Popen([SLUICE, "login", "--oidc"], env=cli_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = p.stderr.readline()
    words = first.split()
    code = words[-1] if "enter the code" in first else None
    if code:
        decide(code)
    out, err = p.communicate(timeout=60)
    return p.returncode, first, out, err


rc, first, out, err = device_cli(lambda c: idp.approve(c, "erin", ["nlp"]))
tap.ok("open %s/activate" % idp.issuer in first and "enter the code" in first,
       "sluice login --oidc shows where to go and the code", first)
saved = os.path.join(home, "sluice", "token")
tap.ok(rc == 0 and "signed in as erin (team nlp, role member)" in out and
       os.path.exists(saved) and os.stat(saved).st_mode & 0o777 == 0o600,
       "approved at the provider: erin is signed in, the token saved 0600", out, err)
p = subprocess.run([SLUICE, "whoami"], env=cli_env(), capture_output=True, text=True,
                   timeout=30)
tap.ok(p.returncode == 0 and "erin" in p.stdout, "later commands use it", p.stdout, p.stderr)
rc, first, out, err = device_cli(idp.deny)
tap.ok(rc != 0 and "not approved" in err and "access_denied" in err,
       "denied at the provider: the command fails saying so", out, err)

# --- the device routes ----------------------------------------------------------
st, dev = d.json_req("POST", "/v1/login/device", token=None)
tap.ok(st == 200 and dev.get("user_code") and dev.get("device_code") and
       dev.get("verification_uri", "").startswith(idp.issuer) and
       dev.get("verification_uri_complete") and dev.get("interval") == 1 and
       dev.get("expires_in", 0) > 0,
       "POST /v1/login/device: the code, the address and the interval", dev)
st, pend = d.json_req("POST", "/v1/login", {"device_code": dev["device_code"]}, token=None)
tap.ok(st == 202 and pend == {"pending": True, "slow_down": False},
       "polled before approval: 202 pending", pend)
idp.post("/slowdown", {"user_code": dev["user_code"]})
st, slow = d.json_req("POST", "/v1/login", {"device_code": dev["device_code"]}, token=None)
tap.ok(st == 202 and slow.get("slow_down") is True, "slow_down is passed on", slow)
idp.approve(dev["user_code"], "frank", ["ml-platform"])
st, frank = d.json_req("POST", "/v1/login", {"device_code": dev["device_code"]}, token=None)
tap.ok(st == 201 and frank.get("user") == "frank" and frank.get("role") == "admin",
       "approved: 201 with frank's token, admin from ml-platform", frank)
st, again = d.json_req("POST", "/v1/login", {"device_code": dev["device_code"]}, token=None)
tap.ok(st == 403, "a device code gives one token: used again, 403", again)

# --- the record -------------------------------------------------------------------
st, aud = d.json_req("GET", "/v1/audit?action=user.login&limit=1000")
recs = (aud or {}).get("records", aud if isinstance(aud, list) else [])
ok_bob = [x for x in recs if x.get("actor") == "bob" and x.get("outcome") == "ok"]
det = ok_bob[0].get("details", {}) if ok_bob else {}
tap.ok(det.get("source") == "oidc" and det.get("subject") == idp.issuer + "#sub-bob" and
       "ml-platform" in det.get("groups", []) and det.get("granted_role") == "admin",
       "the audit log records bob's sign-in: source, issuer#subject, groups, role", det)
st, aud = d.json_req("GET", "/v1/audit?action=user.deprovision&limit=100")
recs = (aud or {}).get("records", aud if isinstance(aud, list) else [])
tap.ok(any(x.get("actor") == "alice" and x.get("details", {}).get("tokens_revoked", 0) >= 2
           for x in recs), "and alice's deprovisioning with her tokens revoked", recs[-1:])
st, m = 0, d.request("GET", "/metrics", token=None).body.decode()
tap.ok('sluice_logins_total{outcome="ok"}' in m and
       'sluice_logins_total{outcome="unmapped"} 2' in m, "sluice_logins_total counts them")

# --- the provider gone --------------------------------------------------------------
idp.stop()
st, body = exchange(idp.mint("alice", ["nlp"]))
tap.ok(st == 201, "provider stopped: a token still verifies against the keys fetched", body)
t0 = time.monotonic()
st, body = d.json_req("POST", "/v1/login/device", token=None)
tap.ok(st == 503 and "cannot be reached" in json.dumps(body) and time.monotonic() - t0 < 10,
       "the device flow is a clear 503", body)
st, who = d.json_req("GET", "/v1/whoami")
tap.ok(st == 200 and who.get("user") == "admin", "the local admin's token still works", who)

jwks_ident = oidctest.identity_file(idp, work, RULES, jwks_file=True, name="jwks.yaml")
d2 = Sluiced(fake_gpus="1xH100", args=["--identity", jwks_ident])
d2.start()
r = d2.request("POST", "/v1/apply", "apiVersion: sluice/v1\nkind: Team\n"
               "metadata: {name: nlp}\n", ctype="application/yaml")
st, body = d2.json_req("POST", "/v1/login", {"id_token": idp.mint("gina", ["nlp"], key="ec")},
                       token=None)
tap.ok(st == 201 and body.get("team") == "nlp",
       "a daemon with a JWKS file and no route to the provider verifies tokens", body)
st, body = d2.json_req("POST", "/v1/login", {"id_token": idp.mint("gina", ["nlp"],
                       header={"kid": "rotated"})}, token=None)
tap.ok(st == 401 and "key" in json.dumps(body),
       "a key not in the file is refused (no fetch is tried)", body)

# --- nothing secret kept ----------------------------------------------------------
export = d.request("GET", "/v1/audit/export").body.decode(errors="replace")
log = open(d.log, errors="replace").read()
db = os.path.join(d.data, "sluice.db")
dump = "\n".join(str(row) for row in sqlite3.connect(db).iterdump()) \
    if os.path.exists(db) else ""
sigs = [t.split(".")[2] for _, t, _ in ATTACKS if t.count(".") == 2 and t.split(".")[2]]
leaked = [s for s in sigs + [oidctest.SECRET] if s in export or s in log or s in dump]
tap.ok(not leaked, "no provider token nor the client secret in the audit export, the log "
       "or the store", leaked)

# --- guessing bounded -------------------------------------------------------------
codes = [d.request("POST", "/v1/login/device", token=None).status for _ in range(30)]
r = d.request("POST", "/v1/login/device", token=None)
tap.ok(r.status == 429 and int(r.headers.get("retry-after", "0")) > 0 and
       "device sign-ins" in r.body.decode(),
       "an address starts at most 30 device sign-ins in 15 minutes: then 429", codes[-3:], r)
codes = [exchange("a.b.c")[0] for _ in range(40)]
st, body = exchange(idp.mint("alice", ["nlp"]))
tap.ok(429 in codes and st == 429, "refused tokens from one address are limited: 429",
       codes[-5:], st)
tap.done_testing(d, d2)
