#!/usr/bin/env python3
"""ldap_tls.t - signing in through a real OpenLDAP slapd over TLS.

A test CA made here with openssl signs a certificate for 127.0.0.1; slapd
(ldaptest.py) serves it on ldaps:// and as StartTLS on its ldap:// port.
sluiced signs users in over ldaps:// with caFile naming the test CA and
over ldap:// with startTLS: true, each with the right team and role. It
refuses, with a 503 that names the certificate problem: a caFile naming
another CA (over ldaps:// and over StartTLS), a server certificate made
for another host name, and StartTLS to a slapd that offers no TLS. No
refusal signs anyone in or gives a token. Prints TAP."""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, make_ca, make_cert, tap  # noqa: E402
import ldaptest  # noqa: E402

if not ldaptest.available():
    tap.skip_all("slapd and ldap-utils are not installed (scripts/deps.sh installs them)")

work = tempfile.mkdtemp(prefix="sluice-ldaptls.")
os.chmod(work, 0o711)
pki = os.path.join(work, "pki")
ca = make_ca(pki)
other_ca = make_ca(pki, name="other-ca", cn="Some Other CA")
good = make_cert(pki, ca, "slapd", "127.0.0.1")
# signed by the right CA, but for another host: no name 127.0.0.1 matches
wrong_name = make_cert(pki, ca, "slapd-other", "ldap.example.org",
                       san="DNS:ldap.example.org")

RULES = [("ml-platform", "platform", "admin"), ("nlp", "nlp", "member")]


def start_slapd(name, tls):
    s = ldaptest.Slapd(os.path.join(work, name), tls=tls)
    try:
        s.start()
    except RuntimeError as e:
        tap.bail("slapd %s starts" % name, str(e))
    return s


def identity(name, url, extra):
    """An identity file for 'url' with extra ldap keys; the search
    account's password in a private file."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    secret = os.path.join(d, "bind.secret")
    with open(secret, "w") as f:
        f.write(ldaptest.SEARCH_PW)
    os.chmod(secret, 0o600)
    path = os.path.join(d, "identity.yaml")
    with open(path, "w") as f:
        f.write("ldap:\n  url: '%s'\n  bindDN: '%s'\n  bindPasswordFile: '%s'\n"
                "  userBase: 'ou=people,%s'\n  groupBase: 'ou=groups,%s'\n  timeout: 2s\n"
                % (url, ldaptest.SEARCH_DN, secret, ldaptest.BASE, ldaptest.BASE))
        for k, v in extra.items():
            f.write("  %s: %s\n" % (k, v))
        f.write("groups:\n")
        for g, team, role in RULES:
            f.write("  - {group: '%s', team: %s, role: %s}\n"
                    % (ldaptest.group_dn(g), team, role))
    return path


def with_daemon(name, url, extra, fn):
    """Start sluiced with that identity, run fn(d), stop it."""
    d = Sluiced(fake_gpus="1xH100", args=["--identity", identity(name, url, extra)])
    d.start()
    r = d.request("POST", "/v1/apply", "".join(
        "---\napiVersion: sluice/v1\nkind: Team\nmetadata: {name: %s}\n" % t
        for t in ("nlp", "platform")), ctype="application/yaml")
    tap.ok(r.status == 200, "%s: sluiced with teams nlp and platform" % name, r)
    try:
        fn(d)
    finally:
        d.stop()


def login(d, user, password):
    st, body = d.json_req("POST", "/v1/login", {"user": user, "password": password},
                          token=None)
    return st, body or {}


def message(body):
    """The refusal's text, shown in the TAP output for whoever reads it."""
    text = json.dumps(body)
    tap.diag(text)
    return text


tls = start_slapd("tls", (good[0], good[1], ca[0]))
tap.ok(True, "slapd serves TLS on %s and StartTLS on %s" % (tls.ldaps_url, tls.url))


# --- the right CA ---------------------------------------------------------------
def right_ca_ldaps(d):
    st, b = login(d, "bob", "bob-pw")
    tap.ok(st == 201 and b.get("team") == "platform" and b.get("role") == "admin",
           "ldaps:// with caFile naming the test CA: bob signs in, admin of platform", st, b)
    st, b = login(d, "alice", "alice-pw")
    tap.ok(st == 201 and b.get("team") == "nlp" and b.get("role") == "member",
           "and alice, member of nlp", st, b)
    st, b = login(d, "alice", "wrong")
    tap.ok(st == 401, "a wrong password over ldaps:// is still 401", st, b)


with_daemon("ldaps-ok", tls.ldaps_url, {"caFile": "'%s'" % ca[0]}, right_ca_ldaps)


def right_ca_starttls(d):
    st, b = login(d, "alice", "alice-pw")
    tap.ok(st == 201 and b.get("team") == "nlp" and b.get("role") == "member",
           "ldap:// with startTLS: true: alice signs in, member of nlp", st, b)


with_daemon("starttls-ok", tls.url, {"startTLS": "true", "caFile": "'%s'" % ca[0]},
            right_ca_starttls)


# --- another CA -----------------------------------------------------------------
def refused_cert(what):
    def check(d):
        st, b = login(d, "bob", "bob-pw")
        text = message(b)
        tap.ok(st == 503 and "certificate" in text and "token" not in b,
               "%s: 503 naming the certificate" % what, st, b)
        tap.ok("not trusted by caFile %s" % other_ca[0] in text and
               "issued by /CN=Sluice Test CA" in text,
               "%s: the message says the certificate is not trusted by that caFile" % what,
               text)
    return check


with_daemon("ldaps-other-ca", tls.ldaps_url, {"caFile": "'%s'" % other_ca[0]},
            refused_cert("ldaps:// with caFile naming another CA"))
with_daemon("starttls-other-ca", tls.url, {"startTLS": "true", "caFile": "'%s'" % other_ca[0]},
            refused_cert("StartTLS with caFile naming another CA"))
tls.stop()

# --- a certificate for another host name -----------------------------------------
other = start_slapd("wrong-name", (wrong_name[0], wrong_name[1], ca[0]))


def wrong_host(d):
    st, b = login(d, "bob", "bob-pw")
    text = message(b)
    tap.ok(st == 503 and "token" not in b and "certificate" in text,
           "a server certificate for ldap.example.org at 127.0.0.1: refused with 503", st, b)
    tap.ok("names another host, not 127.0.0.1" in text,
           "the message says the certificate names another host", text)


with_daemon("wrong-name", other.ldaps_url, {"caFile": "'%s'" % ca[0]}, wrong_host)
other.stop()

# --- StartTLS to a slapd without TLS ---------------------------------------------
plain = start_slapd("plain", None)


def no_tls(d):
    st, b = login(d, "bob", "bob-pw")
    text = message(b)
    tap.ok(st == 503 and "token" not in b and "does not offer StartTLS" in text,
           "startTLS: true against a slapd with no TLS: 503, the server does not offer "
           "StartTLS", st, b)


with_daemon("plain", plain.url, {"startTLS": "true", "caFile": "'%s'" % ca[0]}, no_tls)
plain.stop()

tap.done_testing()
