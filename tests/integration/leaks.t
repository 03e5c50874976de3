#!/usr/bin/env python3
"""leaks.t - small leaks and second meanings, through the API.

A non-admin asking for a token of a user that does not exist and of
another team's user gets the same answer (no enumeration of users); a
team-admin's GET /v1/tokens lists exactly the tokens it may revoke (its
team's, but not those of its team's admin or auditor); label values and
token labels refuse control characters; `gpus: null` and `gpus: -0` are
refused, not read as 0."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, job_doc, tap  # noqa: E402

d = Sluiced(fake_gpus="2xH100")
d.start()
r = d.request("POST", "/v1/apply", """apiVersion: sluice/v1
kind: Team
metadata: {name: vision}
---
apiVersion: sluice/v1
kind: Team
metadata: {name: nlp}
---
apiVersion: sluice/v1
kind: User
metadata: {name: v-member}
spec: {team: vision, role: member}
---
apiVersion: sluice/v1
kind: User
metadata: {name: v-other}
spec: {team: vision, role: member}
---
apiVersion: sluice/v1
kind: User
metadata: {name: v-lead}
spec: {team: vision, role: team-admin}
---
apiVersion: sluice/v1
kind: User
metadata: {name: v-auditor}
spec: {team: vision, role: auditor}
---
apiVersion: sluice/v1
kind: User
metadata: {name: v-root}
spec: {team: vision, role: admin}
---
apiVersion: sluice/v1
kind: User
metadata: {name: n-member}
spec: {team: nlp, role: member}
""", ctype="application/yaml")
tap.ok(r.status == 200, "two teams and users of several roles", r)


def token(user, caller=None):
    st, body = d.json_req("POST", "/v1/users/%s/tokens" % user, {"label": "t"},
                          token=caller or d.token)
    return body.get("token") if st == 201 else None


TOK = {u: token(u) for u in ("v-member", "v-other", "v-lead", "v-auditor", "v-root",
                             "n-member")}
tap.ok(all(TOK.values()), "a token for each")


def answer(user, caller):
    r = d.request("POST", "/v1/users/%s/tokens" % user, {}, token=caller)
    msg = (r.json or {}).get("error", {}).get("message", "")
    return r.status, (r.json or {}).get("error", {}).get("code"), msg.replace(user, "USER")


for who in ("v-member", "v-lead"):
    a = answer("n-member", TOK[who])
    b = answer("sluice-no-such-user", TOK[who])
    tap.is_(a, b, "%s: another team's user and an unknown user get the same answer" % who)
    tap.is_(a[0], 403, "%s: that answer is 403" % who)
tap.is_(d.request("POST", "/v1/users/sluice-no-such-user/tokens", {}).status, 404,
        "an admin is told the user does not exist")

# --- a team-admin lists exactly what it may revoke ------------------------------
st, body = d.json_req("GET", "/v1/tokens", token=TOK["v-lead"])
listed = {t["user"] for t in body["tokens"]}
tap.is_(listed, {"v-member", "v-other", "v-lead"},
        "a team-admin's token list holds its team's members' and its own, not its "
        "team's admin's or auditor's")
st, all_tokens = d.json_req("GET", "/v1/tokens")
hidden = [t["id"] for t in all_tokens["tokens"] if t["user"] in ("v-auditor", "v-root")]
tap.ok(hidden and all(d.request("DELETE", "/v1/tokens/%d" % i, token=TOK["v-lead"]).status
                      == 404 for i in hidden),
       "and the tokens it does not list it cannot revoke")
mine = [t["id"] for t in body["tokens"] if t["user"] == "v-other"]
tap.ok(mine and all(d.request("DELETE", "/v1/tokens/%d" % i, token=TOK["v-lead"]).status
                    == 200 for i in mine),
       "the ones it lists it can")

# --- control characters ------------------------------------------------------------
for label in ("a\nb", "\x1b[31mred", "tab\there"):
    doc = job_doc("x", ["true"])
    doc["metadata"]["labels"] = {"stage": label}
    r = d.request("POST", "/v1/jobs", doc)
    tap.is_((r.status, r.error_field()), (400, "metadata.labels.stage"),
            "a label value %s is refused" % json.dumps(label))
r = d.request("POST", "/v1/users/v-member/tokens", {"label": "ci\r\nX-Evil: 1"})
tap.is_((r.status, r.error_field()), (400, "label"), "a token label with CR LF is refused")

# --- null and -0 ---------------------------------------------------------------------
n0 = len(d.list_jobs())
r = d.request("POST", "/v1/jobs", '{"apiVersion": "sluice/v1", "kind": "Job", "spec": '
              '{"command": ["true"], "resources": {"gpus": null}}}', ctype="application/json")
tap.is_((r.status, r.error_field()), (400, "spec.resources.gpus"),
        "gpus: null is refused with its field")
r = d.request("POST", "/v1/jobs", '{"apiVersion": "sluice/v1", "kind": "Job", "spec": '
              '{"command": ["true"], "resources": {"gpus": -0}}}', ctype="application/json")
tap.ok(r.status == 400 and "-0" in r.body.decode(), "gpus: -0 is refused in JSON", r)
r = d.request("POST", "/v1/jobs", "apiVersion: sluice/v1\nkind: Job\nspec:\n"
              "  command: [\"true\"]\n  resources: {gpus: -0}\n", ctype="application/yaml")
tap.ok(r.status == 400 and "-0" in r.body.decode(), "and in YAML", r)
tap.is_(len(d.list_jobs()), n0, "none of them created a job")
tap.done_testing(d)
