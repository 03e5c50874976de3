#!/usr/bin/env python3
"""ldap_login.t - signing in through a real OpenLDAP slapd.

The test starts slapd on a loopback port with a small directory
(ldaptest.py) and sluiced with an identity file that maps its groups to
teams and roles. `sluice login` for users in different groups gets the
right team and role and saves a private token that later commands use; a
user in no mapped group, a wrong password and an empty one are refused; a
name that is a local account (the break-glass admin) is never taken over;
wrong passwords are counted and the sixth is refused with 429 before the
directory is asked. A user removed from a group loses the role at the next
login or `sluice login --refresh`, and its tokens go with it. With the
directory stopped or hanging a login is a clear 503 within the timeout,
while the local admin's token still works. Every login and refusal is in
the audit log with the groups seen; no password is in the log, the
audit log or the store. A bad identity file starts nothing and names the
key; a secret file others may read is refused."""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, job_doc, tap  # noqa: E402
import ldaptest  # noqa: E402

if not ldaptest.available():
    tap.skip_all("slapd and ldap-utils are not installed (scripts/deps.sh installs them)")

SLUICE = os.path.join(SLUICE_BIN, "sluice")
work = tempfile.mkdtemp(prefix="sluice-ldap.")
os.chmod(work, 0o711)
slapd = ldaptest.Slapd(work)
try:
    slapd.start()
except RuntimeError as e:
    tap.bail("slapd starts", str(e))
tap.ok(True, "slapd serves the test directory on %s" % slapd.url)

secret = os.path.join(work, "bind.secret")
with open(secret, "w") as f:
    f.write(ldaptest.SEARCH_PW + "\n")
os.chmod(secret, 0o600)


def identity(path, ldap_extra="", rules=None, url=None):
    rules = rules or [("ml-platform", "platform", "admin"), ("nlp", "nlp", "member"),
                      ("viewers", "nlp", "viewer")]
    text = """tokenTtl: 1h
ldap:
  url: %s
  bindDN: "%s"
  bindPasswordFile: %s
  userBase: "ou=people,%s"
  groupBase: "ou=groups,%s"
  timeout: 1s
%sgroups:
""" % (url or slapd.url, ldaptest.SEARCH_DN, secret, ldaptest.BASE, ldaptest.BASE, ldap_extra)
    for g, team, role in rules:
        # spacing and case differ from the directory's: compared as DNs
        text += "  - {group: \"CN=%s, ou=Groups,%s\", team: %s, role: %s}\n" % (
            g, ldaptest.BASE, team, role)
    with open(path, "w") as f:
        f.write(text)
    return path


ident = identity(os.path.join(work, "identity.yaml"))

# --- a bad identity file starts nothing ----------------------------------------
def start_fails(path):
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluiced"), "--dev", "--listen",
                        "127.0.0.1:1", "--data-dir", os.path.join(work, "bad"),
                        "--identity", path], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stderr


bad = os.path.join(work, "bad.yaml")
with open(bad, "w") as f:
    f.write("ldap: {url: 'ldap://ldap.example.com', userBase: 'ou=p', colour: blue}\n"
            "groups: [{group: g, team: t, role: member}]\n")
rc, err = start_fails(bad)
tap.ok(rc != 0 and "ldap.colour" in err and "unknown" in err,
       "an unknown key in the identity file: sluiced refuses to start, naming ldap.colour",
       err)
with open(bad, "w") as f:
    f.write("ldap: {url: 'ldap://ldap.example.com', userBase: 'ou=p'}\n"
            "groups: [{group: g, team: t, role: member}]\n")
rc, err = start_fails(bad)
tap.ok(rc != 0 and "ldap.url" in err and "clear" in err,
       "ldap:// to another host without StartTLS is refused (passwords in clear)", err)
with open(bad, "w") as f:
    f.write("ldap: {url: 'ldaps://ldap.example.com', userBase: 'ou=p'}\n"
            "groups: [{group: g, team: t, role: root}]\n")
rc, err = start_fails(bad)
tap.ok(rc != 0 and "groups[0].role" in err, "a rule with an unknown role is refused", err)
with open(bad, "w") as f:
    f.write("oidc: {issuer: 'http://idp.example.com', clientId: sluice}\n"
            "groups: [{group: g, team: t, role: member}]\n")
rc, err = start_fails(bad)
tap.ok(rc != 0 and "oidc.issuer" in err and "https" in err,
       "an OIDC issuer over plain http to another host is refused", err)
os.chmod(secret, 0o640)
rc, err = start_fails(ident)
tap.ok(rc != 0 and "bindPasswordFile" in err and "chmod 600" in err,
       "a bind password file others may read is refused", err)
os.chmod(secret, 0o600)

# --- the daemon ---------------------------------------------------------------
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
tap.ok(st == 200 and "password" in (info or {}).get("methods", []),
       "GET /v1/login (no token) offers password sign-in", info)

home = os.path.join(work, "home")
os.makedirs(home)


def login(user, password, *extra, xdg=home, token_env=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_TOKEN")}
    env.update(SLUICE_SERVER=d.server, XDG_CONFIG_HOME=xdg)
    args = [SLUICE, "login", "--password-stdin"] + (["--user", user] if user else [])
    p = subprocess.run(args + list(extra), env=env, input=password + "\n",
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def as_saved(*args, xdg=home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_TOKEN")}
    env.update(SLUICE_SERVER=d.server, XDG_CONFIG_HOME=xdg)
    p = subprocess.run([SLUICE] + list(args), env=env, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def token_login(user, password):
    st, body = d.json_req("POST", "/v1/login", {"user": user, "password": password},
                          token=None)
    return st, body or {}


rc, out, err = login("alice", "alice-pw")
saved = os.path.join(home, "sluice", "token")
tap.ok(rc == 0 and "signed in as alice (team nlp, role member)" in out,
       "sluice login: alice (cn=nlp) is a member of team nlp", out, err)
tap.ok(os.path.exists(saved) and os.stat(saved).st_mode & 0o777 == 0o600 and
       os.stat(os.path.dirname(saved)).st_mode & 0o777 == 0o700,
       "the token is saved private: 0600 in a 0700 directory")
rc, out, err = as_saved("whoami")
tap.ok(rc == 0 and "alice" in out and "nlp" in out and "member" in out,
       "later commands use the saved token: whoami says alice, nlp, member", out, err)
jobfile = os.path.join(work, "job.json")
with open(jobfile, "w") as f:
    json.dump(job_doc("from-alice", team="nlp"), f)
rc, out, err = as_saved("submit", "-f", jobfile)
tap.ok(rc == 0, "alice submits a job to team nlp with it", out, err)

st, bob = token_login("bob", "bob-pw")
tap.ok(st == 201 and bob.get("team") == "platform" and bob.get("role") == "admin",
       "bob (cn=ml-platform) is an admin of team platform", bob)
st, dave = token_login("dave", "dave-pw")
tap.ok(st == 201 and dave.get("role") == "viewer", "dave (cn=viewers) is a viewer", dave)
r = d.request("POST", "/v1/jobs", job_doc("v", team="nlp"), token=dave.get("token"))
tap.ok(r.status == 403, "a viewer's token from LDAP may not submit", r)
r = d.request("POST", "/v1/apply", {"apiVersion": "sluice/v1", "kind": "Team",
                                    "metadata": {"name": "from-bob"}}, token=bob.get("token"))
tap.ok(r.status == 200, "an admin's token from LDAP may apply", r)
st, body = token_login("carol", "carol-pw")
tap.ok(st == 403 and "none of the groups" in json.dumps(body),
       "carol, in no mapped group, is refused with 403", body)

# --- refusals -----------------------------------------------------------------
st, body = token_login("alice", "wrong")
tap.ok(st == 401 and "invalid user name or password" in json.dumps(body),
       "a wrong password: 401", body)
st, body = token_login("nobody-here", "x")
tap.ok(st == 401 and "invalid user name or password" in json.dumps(body),
       "an unknown name gets the same 401 as a wrong password", body)
st, body = token_login("alice", "")
tap.ok(st == 400 and "password" in json.dumps(body),
       "an empty password is refused before the directory (no anonymous bind)", body)
st, body = token_login("alice*", "x")
tap.ok(st == 400, "a name that is not a Sluice name (filter characters) is refused", body)
rc, out, err = login("alice", "wrong")
tap.ok(rc != 0 and "invalid user name or password" in err,
       "sluice login with a wrong password fails with the server's reason", err)
st, body = token_login("root", "root-pw")
tap.ok(st == 201, "root (an LDAP user of cn=nlp) signs in", body)
st, body = token_login("admin", "x")
tap.ok(st == 401, "the local break-glass admin is not in the directory: 401", body)
# the directory gains an 'admin' too: it may not take over the local account
slapd.modify("dn: %s\nobjectClass: inetOrgPerson\nuid: admin\ncn: a\nsn: a\n"
             "userPassword: admin-pw\n" % ldaptest.user_dn("admin"), add=True)
slapd.add_member("ml-platform", "admin")
st, body = token_login("admin", "admin-pw")
tap.ok(st == 409 and "local account" in json.dumps(body),
       "a directory user named like the local admin is refused 409: no takeover", body)
r = d.request("GET", "/v1/whoami")
tap.ok(r.status == 200 and (r.json or {}).get("role") == "admin",
       "the local admin is still the local admin", r)

# --- guessing -----------------------------------------------------------------
codes = [token_login("dave", "guess-%d" % i)[0] for i in range(5)]
st, body = token_login("dave", "dave-pw")
r = d.request("POST", "/v1/login", {"user": "dave", "password": "dave-pw"}, token=None)
tap.ok(codes == [401] * 5 and st == 429 and r.headers.get("retry-after", "").isdigit(),
       "five wrong passwords for dave: the sixth attempt, right or not, is 429 with "
       "Retry-After", codes, st, body)
st, body = token_login("bob", "bob-pw")
tap.ok(st == 201, "another name from the same address still signs in", body)
metrics = d.request("GET", "/metrics", token=None).body.decode()
tap.ok('sluice_logins_total{outcome="limited"}' in metrics and
       'sluice_logins_total{outcome="denied"}' in metrics,
       "/metrics counts logins by outcome")

# --- removal from a group -----------------------------------------------------
st, a1 = token_login("alice", "alice-pw")
tap.ok(st == 201, "alice signs in again", a1)
slapd.remove_member("nlp", "alice")
slapd.add_member("viewers", "alice")
rc, out, err = as_saved("login", "--refresh")
tap.ok(rc == 0 and "role viewer" in out,
       "moved from cn=nlp to cn=viewers: sluice login --refresh gives viewer", out, err)
r = d.request("GET", "/v1/whoami", token=a1.get("token"))
tap.ok(r.status == 200 and (r.json or {}).get("role") == "viewer",
       "her other token holds the new role at once (the role is the user's)", r)
slapd.remove_member("viewers", "alice")
rc, out, err = as_saved("login", "--refresh")
tap.ok(rc != 0 and "none of the groups" in err,
       "removed from every mapped group: the refresh is refused", err)
r = d.request("GET", "/v1/whoami", token=a1.get("token"))
tap.ok(r.status == 401, "and every token she held is revoked", r)
rc, out, err = as_saved("whoami")
tap.ok(rc != 0 and "sluice login" in err,
       "the saved token is refused, with a hint to sign in again", err)
st, body = token_login("alice", "alice-pw")
tap.ok(st == 403, "a new login is refused too", body)

# --- the audit log ------------------------------------------------------------
st, aud = d.json_req("GET", "/v1/audit?limit=500")
recs = (aud or {}).get("records", aud if isinstance(aud, list) else [])
logins = [x for x in recs if x.get("action") == "user.login"]
ok_bob = [x for x in logins if x.get("actor") == "bob" and x.get("outcome") == "ok"]
tap.ok(ok_bob and ok_bob[0].get("details", {}).get("granted_role") == "admin" and
       any("ml-platform" in g for g in ok_bob[0]["details"].get("groups", [])),
       "the audit log records bob's login with his groups and the role granted",
       ok_bob[:1])
tap.ok(any(x.get("outcome") == "refused" and x.get("actor") == "alice" for x in logins),
       "and the refused logins")
tap.ok(any(x.get("action") == "user.deprovision" and x.get("actor") == "alice" and
           x.get("details", {}).get("tokens_revoked", 0) >= 1 for x in recs),
       "and alice's deprovisioning with the tokens revoked")
export = d.request("GET", "/v1/audit/export").body.decode(errors="replace")
log = open(d.log, errors="replace").read()
db = os.path.join(d.data, "sluice.db")
dump = ""
if os.path.exists(db):
    dump = "\n".join(str(row) for row in sqlite3.connect(db).iterdump())
leaked = [pw for pw in list(ldaptest.USERS.values()) + [ldaptest.SEARCH_PW]
          if pw in export or pw in log or pw in dump]
tap.ok(not leaked, "no password in the audit export, the daemon's log or the store",
       leaked)

# --- the directory unreachable ------------------------------------------------
slapd.pause()
t0 = time.monotonic()
st, body = token_login("bob", "bob-pw")
took = time.monotonic() - t0
tap.ok(st == 503 and "cannot be reached" in json.dumps(body) and took < 10,
       "slapd hanging: a clear 503 after the timeout (%.1f s)" % took, body)
r = d.request("GET", "/v1/whoami")
tap.ok(r.status == 200, "the local break-glass admin still works meanwhile", r)
slapd.resume()
slapd.stop()
st, body = token_login("bob", "bob-pw")
tap.ok(st == 503 and "local accounts" in json.dumps(body),
       "slapd stopped: 503 saying local accounts still work", body)
r = d.request("GET", "/v1/whoami", token=bob.get("token"))
tap.ok(r.status == 200, "tokens already given keep working until they end", r)

tap.done_testing(d)
