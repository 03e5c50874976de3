#!/usr/bin/env python3
"""idp.py - the identity provider a browser scenario signs in through.

    idp.py DIR [--oidc]

starts a real OpenLDAP slapd with the directory of
tests/integration/ldaptest.py (alice in nlp, bob in ml-platform, carol in
no group; passwords NAME-pw) and admin in ml-platform (password
admin-pw: the name of sluiced's local admin, which the directory may not
take over), writes
DIR/identity.yaml that maps nlp -> team nlp, member and ml-platform ->
team platform, admin, and prints one line of JSON {"identity": PATH,
"ldap": URL} once slapd answers. With --oidc it also starts
tests/idp/fake_idp.py over HTTPS (tests/integration/oidctest.py: a CA and
a certificate for 127.0.0.1, client "sluice", its secret in a private
file) and the identity file names it too: the JSON adds "issuer" and "ca" (the CA's
file, to call the provider's /approve). It runs until its stdin closes
(the scenario's end, or the runner's death), then stops what it started.
When slapd is not installed it prints {"skip": WHY} and exits.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "integration"))
import ldaptest  # noqa: E402
import oidctest  # noqa: E402
import sltest  # noqa: E402

sltest.tap.done = True  # not a TAP test: no plan printed at exit


def main():
    args = sys.argv[1:]
    oidc = "--oidc" in args
    args = [a for a in args if a != "--oidc"]
    if len(args) != 1:
        sys.stderr.write("usage: idp.py DIR [--oidc]\n")
        return 2
    work = args[0]
    if not ldaptest.available():
        print(json.dumps({"skip": "slapd and ldap-utils are not installed"}), flush=True)
        return 0
    users = dict(ldaptest.USERS, admin="admin-pw")
    groups = dict(ldaptest.GROUPS)
    groups["ml-platform"] = groups["ml-platform"] + ["admin"]
    slapd = ldaptest.Slapd(work, users=users, groups=groups)
    try:
        slapd.start()
    except RuntimeError as e:
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    provider = None
    try:
        path = ldaptest.identity_file(slapd, work, [("nlp", "nlp", "member"),
                                                    ("ml-platform", "platform", "admin")])
        out = {"identity": path, "ldap": slapd.url}
        if oidc:
            provider = oidctest.FakeIdp(work)
            provider.start()
            # the provider's groups claim holds plain names
            oidctest.add_to(path, provider, [("nlp", "nlp", "member")])
            out.update(issuer=provider.issuer, ca=provider.ca)
        print(json.dumps(out), flush=True)
        sys.stdin.read()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    finally:
        if provider:
            provider.stop()
        slapd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
