#!/usr/bin/env python3
"""idp.py - the identity provider a browser scenario signs in through.

    idp.py DIR

starts a real OpenLDAP slapd with the directory of
tests/integration/ldaptest.py (alice in nlp, bob in ml-platform, carol in
no group; passwords NAME-pw) and admin in ml-platform (password
admin-pw: the name of sluiced's local admin, which the directory may not
take over), writes
DIR/identity.yaml that maps nlp -> team nlp, member and ml-platform ->
team platform, admin, and prints one line of JSON {"identity": PATH,
"ldap": URL} once slapd answers. It runs until its stdin closes (the
scenario's end, or the runner's death), then stops slapd. When slapd is
not installed it prints {"skip": WHY} and exits.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "integration"))
import ldaptest  # noqa: E402
import sltest  # noqa: E402

sltest.tap.done = True  # not a TAP test: no plan printed at exit


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: idp.py DIR\n")
        return 2
    work = sys.argv[1]
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
    try:
        path = ldaptest.identity_file(slapd, work, [("nlp", "nlp", "member"),
                                                    ("ml-platform", "platform", "admin")])
        print(json.dumps({"identity": path, "ldap": slapd.url}), flush=True)
        sys.stdin.read()
    finally:
        slapd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
