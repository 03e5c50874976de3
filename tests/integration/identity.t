#!/usr/bin/env python3
"""identity.t - who a job runs as, and who may decide it.

sluiced runs as root here. A job never runs with the daemon's identity: a
member without a Unix mapping runs as the default job account (nobody),
cannot write /root nor read the data dir; a user an admin mapped runs as
that account; root (the daemon's uid) is refused as a mapping and as the
default account unless --allow-daemon-user names it; with --job-user none
an unmapped user's job is refused with 403 naming spec.unixUser. Only an
admin sets or changes a mapping: a team-admin's attempt is refused 403
(field spec.unixUser), audited, and changes nothing; the other fields a
team-admin could use to escalate (another team's user, a role above its
own, a dataset path, a policy) are refused too."""

import os
import pwd
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, free_port, job_doc, tap  # noqa: E402

if os.geteuid() != 0:
    tap.skip_all("sluiced must run as root to switch accounts")
try:
    NOBODY = pwd.getpwnam("nobody").pw_uid
    DAEMON = pwd.getpwnam("daemon").pw_uid
except KeyError:
    tap.skip_all("needs the accounts nobody and daemon")

d = Sluiced(fake_gpus="2xH100")
d.start()


def apply(text, token=None):
    return d.request("POST", "/v1/apply", text, ctype="application/yaml",
                     token=token or d.token)


def user(name, team, role, unix=None):
    spec = "{team: %s, role: %s%s}" % (team, role, ", unixUser: %s" % unix if unix else "")
    return "apiVersion: sluice/v1\nkind: User\nmetadata: {name: %s}\nspec: %s\n" % (name, spec)


def token(name):
    st, body = d.json_req("POST", "/v1/users/%s/tokens" % name, {"label": "test"})
    return body.get("token") if st == 201 else None


def run(tok, script, team="vision", name="probe"):
    """Submit sh -c SCRIPT as the token's user; its final job object and log."""
    st, job = d.json_req("POST", "/v1/jobs", job_doc(name, ["sh", "-c", script], team=team),
                         token=tok or d.token)
    if st != 201:
        return None, "submit: %s %r" % (st, job)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st, job = d.json_req("GET", "/v1/jobs/%d" % job["id"])
        if job["state"] in ("Succeeded", "Failed", "Cancelled", "Lost", "Timeout"):
            break
        time.sleep(0.1)
    r = d.request("GET", "/v1/jobs/%d/logs" % job["id"])
    return job, r.body.decode("utf-8", "replace")


r = apply("""apiVersion: sluice/v1
kind: Team
metadata: {name: vision}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: nlp}
---
""" + user("vera", "vision", "member") + "---\n" + user("vic", "vision", "team-admin") +
          "---\n" + user("dan", "vision", "member", "daemon") + "---\n" +
          user("nora", "nlp", "member"))
tap.ok(r.status == 200, "teams vision and nlp, an unmapped member, a team-admin, a "
       "member mapped to daemon", r)
VERA, VIC, DAN = token("vera"), token("vic"), token("dan")
tap.ok(VERA and VIC and DAN, "tokens for them")

# --- the default account --------------------------------------------------------
probe = ("id -u; "
         "if touch /root/.sluice-probe 2>/dev/null; then echo root-writable; "
         "rm -f /root/.sluice-probe; else echo root-closed; fi; "
         "if cat %s/admin.token >/dev/null 2>&1; then echo data-readable; "
         "else echo data-closed; fi" % d.data)
job, log = run(VERA, probe)
lines = log.split()
tap.ok(job and job["state"] == "Succeeded", "an unmapped member's job runs", job, log)
tap.ok(lines and lines[0] != "0", "it does not run as root (uid %s)" % (lines[:1],), log)
tap.is_(lines[:1], [str(NOBODY)], "it runs as the default job account, nobody")
tap.ok("root-closed" in lines, "it cannot write /root", log)
tap.ok("data-closed" in lines, "it cannot read the daemon's data dir", log)

job, log = run(DAN, "id -u")
tap.is_(log.split()[:1], [str(DAEMON)], "a member an admin mapped to daemon runs as daemon")

# --- only admin maps, and never onto the daemon's identity -----------------------
r = apply(user("rooty", "vision", "member", "root"))
tap.is_((r.status, r.error_field()), (400, "spec.unixUser"),
        "an admin's mapping onto root is refused 400, field spec.unixUser")
tap.ok(r.json and "uid 0" in r.json["error"]["message"] and
       "--allow-daemon-user" in r.json["error"]["message"],
       "saying it is uid 0 and what would allow it", r)
r = apply(user("ghost", "vision", "member", "sluice-no-such-account"))
tap.is_((r.status, r.error_field()), (400, "spec.unixUser"),
        "a mapping onto an account this host lacks is refused 400")
tap.ok(token("rooty") is None and token("ghost") is None,
       "and neither user was created")

before = d.json_req("GET", "/v1/audit?outcome=refused&action=apply&limit=10000")[1]
r = apply(user("vic2", "vision", "member", "daemon"), token=VIC)
tap.is_((r.status, r.error_field()), (403, "spec.unixUser"),
        "a team-admin setting unixUser is refused 403, field spec.unixUser")
tap.ok(token("vic2") is None, "and the user was not created")
after = d.json_req("GET", "/v1/audit?outcome=refused&action=apply&limit=10000")[1]
tap.is_(len(after["records"]) - len(before["records"]), 1, "the refusal is in the audit log")
tap.ok(after["records"] and after["records"][-1]["actor"] == "vic",
       "recorded with the team-admin as actor", after["records"][-1:])

r = apply(user("dan", "vision", "member", "nobody"), token=VIC)
tap.is_((r.status, r.error_field()), (403, "spec.unixUser"),
        "a team-admin changing an existing mapping is refused")
r = apply(user("dan", "vision", "viewer"), token=VIC)
tap.ok(r.status == 200, "a team-admin may change the user's role, leaving unixUser out", r)
r = apply(user("dan", "vision", "member"), token=VIC)
job, log = run(DAN, "id -u")
tap.is_(log.split()[:1], [str(DAEMON)], "and the mapping stays as the admin set it")

# The other fields a team-admin could escalate with.
cases = [
    (user("nora", "nlp", "member", None), 403, "spec.team", "another team's user"),
    (user("vera", "vision", "admin"), 403, "spec.role", "a role above its own"),
    ("apiVersion: sluice/v1\nkind: Dataset\nmetadata: {name: secrets}\n"
     "spec: {version: v1, owner: vision, path: /root}\n", 403, "kind", "a dataset path"),
    ("apiVersion: sluice/v1\nkind: Policy\nmetadata: {name: lax}\n"
     "spec: {images: {allowedRegistries: ['*']}}\n", 403, "kind", "a policy"),
    ("apiVersion: sluice/v1\nkind: User\nmetadata: {name: vic}\n"
     "spec: {team: vision, role: team-admin, unixUser: root}\n", 403, "spec.unixUser",
     "its own mapping"),
]
for doc, status, field, what in cases:
    r = apply(doc, token=VIC)
    tap.is_((r.status, r.error_field()), (status, field),
            "a team-admin cannot apply %s (%d %s)" % (what, status, field))

# --- --job-user none: unmapped users' jobs are refused ---------------------------
d.args = ["--job-user", "none"]
why = d.restart()
tap.ok(why is None, "sluiced restarts with --job-user none", why)
n0 = len(d.list_jobs())
st, body = d.json_req("POST", "/v1/jobs", job_doc("x", ["true"], team="vision"), token=VERA)
tap.is_((st, (body or {}).get("error", {}).get("field")), (403, "spec.unixUser"),
        "an unmapped member's job is refused 403, field spec.unixUser")
tap.is_(len(d.list_jobs()), n0, "and nothing was created")
job, log = run(DAN, "id -u")
tap.is_(log.split()[:1], [str(DAEMON)], "a mapped member's job still runs")
d.stop()

# --- the daemon's own identity as the default account ------------------------------
tmp = tempfile.mkdtemp(prefix="sluice-identity.")
p = subprocess.run([os.path.join(SLUICE_BIN, "sluiced"), "--dev", "--listen",
                    "127.0.0.1:%d" % free_port(), "--data-dir", tmp + "/data",
                    "--fake-gpus", "1xH100", "--job-user", "root"],
                   capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
tap.is_(p.returncode, 1, "sluiced --job-user root refuses to start")
tap.ok("--job-user" in p.stderr and "root" in p.stderr and "uid 0" in p.stderr and
       "--allow-daemon-user" in p.stderr, "saying why and what would allow it", p.stderr)
tap.ok(not os.path.exists(tmp + "/data/sluice.db"), "having created no store")
r2 = Sluiced(fake_gpus="1xH100", args=["--job-user", "root", "--allow-daemon-user", "root"])
r2.start()
d = r2
job, log = run(None, "id -u", team="default", name="root-job")
tap.is_(log.split()[:1], ["0"], "with --allow-daemon-user root, an admin's explicit choice, "
        "the job runs as root")
tap.done_testing(r2)
