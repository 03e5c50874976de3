"""oidctest.py - an OpenID provider for Sluice's integration tests: the
fake provider (tests/idp/fake_idp.py) served over HTTPS with a CA the
test makes, and the identity file that names it.

    idp = oidctest.FakeIdp(tmp)        # CA, certificate, keys under tmp
    idp.start()                        # idp.issuer, idp.ca, idp.keys
    path = oidctest.identity_file(idp, tmp, [("ml-platform", "platform", "admin")])
    token = idp.mint(user="alice", groups=["nlp"])
    idp.approve(user_code, "alice", ["nlp"])     # a device sign-in approved
    idp.stop()

add_to(path, idp, rules) adds the provider to an LDAP identity file.
identity_file(..., jwks_file=True) names a JWKS file written from the
provider's keys instead of discovery: the daemon then needs no route to
the provider to verify tokens (the device flow still does)."""

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import REPO, make_ca, make_cert  # noqa: E402

IDP = os.path.join(REPO, "tests", "idp", "fake_idp.py")
sys.path.insert(0, os.path.dirname(IDP))
import fake_idp  # noqa: E402

CLIENT_ID = "sluice"
SECRET = "s3cret:with&odd=chars"


class FakeIdp:
    def __init__(self, tmp, name="idp"):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir, exist_ok=True)
        self.keys = fake_idp.Keys(os.path.join(self.dir, "keys"))
        self.proc = None
        self.issuer = None
        self.secret_file = os.path.join(self.dir, "client.secret")
        with open(self.secret_file, "w") as f:
            f.write(SECRET + "\n")
        os.chmod(self.secret_file, 0o600)
        ca = make_ca(self.dir, "idp-ca", "OIDC Test CA")
        self.ca = ca[0]
        self.cert, self.key = make_cert(self.dir, ca, "idp", "127.0.0.1")
        self.ctx = ssl.create_default_context(cafile=self.ca)

    def start(self):
        self.proc = subprocess.Popen(
            [sys.executable, IDP, "serve", "--dir", self.keys.dir, "--cert", self.cert,
             "--key", self.key, "--client-id", CLIENT_ID, "--secret-file", self.secret_file],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # the port, once it listens
        if not line.strip().isdigit():
            raise RuntimeError("fake_idp.py did not start: " + self.proc.stderr.read())
        self.port = int(line)
        self.issuer = "https://127.0.0.1:%d" % self.port

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def post(self, path, doc):
        req = urllib.request.Request(self.issuer + path, data=json.dumps(doc).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
            return json.loads(r.read())

    def claims(self, user="alice", groups=None, lifetime_s=300, **over):
        c = fake_idp.default_claims(self.issuer, CLIENT_ID, user, groups, lifetime_s)
        c.update(over)
        return {k: v for k, v in c.items() if v is not None}

    def mint(self, user="alice", groups=None, key="rsa", header=None, **over):
        """A token for 'user' in 'groups', signed with the provider's key
        (rsa, ec, or an attack: none, hs256-with-rsa-public); keyword
        arguments replace claims (None drops one)."""
        return self.keys.mint(self.claims(user, groups, **over), header, key)

    def approve(self, user_code, user, groups):
        return self.post("/approve", {"user_code": user_code, "user": user, "groups": groups})

    def deny(self, user_code):
        return self.post("/deny", {"user_code": user_code})

    def jwks_file(self):
        path = os.path.join(self.dir, "jwks.json")
        with open(path, "w") as f:
            json.dump(self.keys.jwks(), f)
        return path


def oidc_section(idp, jwks_file=False, extra=""):
    """The identity file's oidc section naming 'idp' (YAML text)."""
    text = ("oidc:\n  issuer: '%s'\n  clientId: %s\n  clientSecretFile: '%s'\n"
            "  caFile: '%s'\n  timeout: 2s\n" % (idp.issuer, CLIENT_ID, idp.secret_file,
                                                 idp.ca))
    if jwks_file:
        text += "  jwksFile: '%s'\n" % idp.jwks_file()
    return text + extra


def rules_text(rules):
    return "".join("  - {group: '%s', team: %s, role: %s}\n" % r for r in rules)


def identity_file(idp, tmp, rules, jwks_file=False, extra="", name="identity-oidc.yaml"):
    """The identity file naming 'idp' with rules [(group, team, role)]."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("tokenTtl: 1h\n" + oidc_section(idp, jwks_file, extra) + "groups:\n" +
                rules_text(rules))
    return path


def add_to(path, idp, rules):
    """Add 'idp' and its rules [(group, team, role)] to the identity file
    at 'path' (one ldaptest.identity_file wrote: its group rules last)."""
    with open(path, "a") as f:
        f.write(rules_text(rules) + oidc_section(idp))


def wait_for(pred, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return None
