#!/usr/bin/env python3
"""joblist.t - GET /v1/jobs as a paged, sorted, filtered list, and the ETags
of /v1 reads.

One sluiced with one node of an H100 and an A100; teams vision (queues
vision, vision-b) and nlp; alice and bob (vision members), vic (vision
viewer), nick (nlp member); a priority class prod. Four jobs run to their
end (two named train-a, one on each GPU model by its gpuModels), then the
node is cordoned and five stay Pending (one asks for an A100, one is an
array of three). Against that store:

- each filter (queue, user, priority_class, gpu_model from the spec and
  from where a job ran, q as a literal case-insensitive substring, array)
  keeps exactly its jobs, and they combine;
- each sort, both ways, orders as the contract says (ties by id in the
  same direction, never-started and unfinished last), pages by offset,
  and -id pages by after;
- count=true gives the total of the filters, whatever the page;
- each bad value is 400 invalid naming its parameter;
- a member or viewer lists their team's jobs only (403 for another team);
- a /v1 read's 200 has a strong ETag, Cache-Control: private, no-cache
  and Vary: Authorization; a matching If-None-Match (the same tag, W/,
  "*", a list, a list over two lines) is 304 with those headers and no
  body; a malformed or non-matching one is 200; the tag differs per caller
  and changes with the list; /healthz, /metrics and errors have none.

Prints TAP."""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Sluiced, job_doc, raw_exchange, tap  # noqa: E402

d = Sluiced(fake_gpus="1xH100,1xA100").start()

OBJECTS = (("Team", "vision", "{defaultQueue: vision}"), ("Queue", "vision", "{team: vision}"),
           ("Queue", "vision-b", "{team: vision}"), ("Team", "nlp", "{defaultQueue: nlp}"),
           ("Queue", "nlp", "{team: nlp}"), ("PriorityClass", "prod", "{value: 1000}"))
r, TOK = d.users((("alice", "vision", "member"), ("bob", "vision", "member"),
                  ("vic", "vision", "viewer"), ("nick", "nlp", "member")),
                 "".join("---\napiVersion: sluice/v1\nkind: %s\nmetadata: {name: %s}\n"
                         "spec: %s\n" % o for o in OBJECTS))
tap.ok(r.status == 200 and all(TOK.values()),
       "teams vision and nlp, users alice, bob, vic, nick with tokens, class prod", r)

SMALL = {"cpus": 0.1, "memory": "64Mi"}


def submit(user, name, command=("true",), team="vision", models=None, **spec):
    res = dict(SMALL)
    if models:
        res.update(gpus=1, gpuModels=models)
    st, body = d.json_req("POST", "/v1/jobs", job_doc(name, command, team=team,
                                                      resources=res, **spec),
                          token=TOK[user])
    if st != 201:
        tap.diag("submit %s: %d %r" % (name, st, body))
    return body.get("id") if st == 201 else None


def state_of(jid):
    return (d.json_req("GET", "/v1/jobs/%d" % jid)[1] or {}).get("state")


def wait_final(jid, secs=60):
    end = time.time() + secs
    while time.time() < end:
        if state_of(jid) in ("Succeeded", "Failed"):
            return True
        time.sleep(0.1)
    return False


# Jobs that run to their end, one at a time so that each has its own times.
J1 = submit("alice", "train-a", models=["H100"])
tap.ok(J1 and wait_final(J1), "alice's train-a ran on the H100")
J2 = submit("bob", "train-a", ("false",))
tap.ok(J2 and wait_final(J2), "bob's train-a failed")
J3 = submit("nick", "eval", team="nlp", models=["A100"])
tap.ok(J3 and wait_final(J3), "nick's eval ran on the A100")
J4 = submit("alice", "sweep", queue="vision-b", priorityClass="prod")
tap.ok(J4 and wait_final(J4), "alice's sweep ran in queue vision-b as prod")

# Then the node takes no more: the rest stay Pending.
nodes = d.json_req("GET", "/v1/nodes")[1].get("nodes", [])
tap.ok(nodes and all(d.request("POST", "/v1/nodes/%s/cordon" % n["name"],
                               {"reason": "test"}).status == 200 for n in nodes),
       "the node is cordoned")
J5 = submit("alice", "train-b", models=["A100"])
J6 = submit("bob", "eval", priorityClass="prod")
J7 = submit("alice", "arr", array="0-2")
J8, J9 = (J7 + 1, J7 + 2) if J7 else (None, None)
tap.ok(J5 and J6 and J7, "train-b (asks for an A100), bob's eval (prod) and an array of "
       "three are submitted")

ALL = d.list_jobs()
BY_ID = {j["id"]: j for j in ALL}
tap.ok([j["id"] for j in ALL] == [J1, J2, J3, J4, J5, J6, J7, J8, J9] and
       all(BY_ID[j]["state"] == "Pending" for j in (J5, J6, J7, J8, J9)),
       "the store holds the nine jobs, the last five Pending",
       [(j["id"], j["name"], j["state"]) for j in ALL])


def as_(token):
    """The request's token argument: the admin's when None."""
    return {"token": token} if token else {}


def ids(query, token=None):
    """The ids, next and document of a 200 list (its status, None, None else)."""
    r = d.request("GET", "/v1/jobs?" + query, **as_(token))
    if r.status != 200 or not isinstance(r.json, dict):
        return r.status, None, None
    return [j["id"] for j in r.json.get("jobs", [])], r.json.get("next"), r.json


def list_is(query, want, name, token=None):
    got = ids(query, token)[0]
    tap.ok(got == want, "%s (?%s)" % (name, query), "got %r, want %r" % (got, want))


# --- filters ---------------------------------------------------------------
list_is("queue=vision-b", [J4], "queue keeps its jobs")
list_is("user=bob", [J2, J6], "user keeps theirs")
list_is("priority_class=prod", [J4, J6], "priority_class keeps its jobs")
list_is("array=%d" % J7, [J7, J8, J9], "array keeps its elements")
list_is("q=TRAIN", [J1, J2, J5], "q is a case-insensitive substring of the name")
list_is("q=ain-a", [J1, J2], "anywhere in the name")
list_is("q=%25", [], "a '%' in q is a '%', not a wildcard")
list_is("q=_", [], "a '_' in q is a '_'")
list_is("q=", [J1, J2, J3, J4, J5, J6, J7, J8, J9], "an empty q is none")
list_is("user=alice&state=Pending", [J5, J7, J8, J9], "filters combine with state")
list_is("team=vision&q=eval", [J6], "and with team")
got = ids("gpu_model=A100")[0] or []
tap.ok(J3 in got and J5 in got and J1 not in got,
       "gpu_model=A100: the job that ran on it and the pending one that asks for it, not "
       "the H100's", got)
got = ids("gpu_model=h100")[0] or []
tap.ok(J1 in got and J3 not in got and J5 not in got,
       "gpu_model=h100 (any case): the H100's job, not the A100's", got)

# --- sorts -----------------------------------------------------------------
STATE_ORDER = ["Pending", "Running", "Succeeded", "Failed", "Cancelled", "Preempted",
               "Lost", "Timeout"]
FIELDS = {
    "id": lambda j: j["id"],
    "submitted": lambda j: j["submitted_at"],
    "started": lambda j: j["started_at"],
    "finished": lambda j: j["finished_at"],
    "name": lambda j: j["name"].encode(),
    "state": lambda j: STATE_ORDER.index(j["state"]),
    "team": lambda j: j["team"].encode(),
    "queue": lambda j: j["queue"].encode(),
    "user": lambda j: j["user"].encode(),
    "priority": lambda j: j["priority"],
}


def expected(field, desc):
    """The contract's order: by the field, ties by id the same way, nulls last."""
    key = FIELDS[field]
    have = sorted((j for j in ALL if key(j) is not None), key=lambda j: (key(j), j["id"]),
                  reverse=desc)
    none = sorted((j["id"] for j in ALL if key(j) is None), reverse=desc)
    return [j["id"] for j in have] + none


for field in FIELDS:
    for desc in (False, True):
        list_is("sort=%s%s" % ("-" if desc else "", field), expected(field, desc),
                "sort by %s, %s" % (field, "descending" if desc else "ascending"))
tap.ok(len({BY_ID[j]["name"] for j in (J1, J2)}) == 1 and
       len({BY_ID[j]["priority"] for j in (J1, J2, J3, J5, J7)}) == 1,
       "those sorts had ties to break (two train-a, one priority for most)")

want = expected("name", False)
got, nxt, _ = ids("sort=name&limit=3&offset=2")
tap.ok(got == want[2:5] and nxt == want[4], "offset skips in the sort's order; next is the "
       "page's last id when more follow", "got %r next %r, want %r" % (got, nxt, want[2:5]))
pages, offset = [], 0
while offset < 20:
    got, nxt, _ = ids("sort=-started&limit=4&offset=%d" % offset)
    pages += got or []
    offset += 4
    if not nxt:
        break
tap.ok(pages == expected("started", True), "offset pages cover the descending sort once",
       pages)
got, nxt, _ = ids("sort=-id&limit=4")
got2, nxt2, _ = ids("sort=-id&limit=4&after=%s" % nxt)
got3, nxt3, _ = ids("sort=-id&limit=4&after=%s" % nxt2)
tap.ok(got + got2 + got3 == expected("id", True) and nxt3 is None,
       "sort=-id pages by after (ids below it)", [got, got2, got3, nxt3])
list_is("sort=id&after=%d&limit=2" % J3, [J4, J5], "sort=id with after is the old paging")

# --- count -----------------------------------------------------------------
for q, n in (("count=true", 9), ("count=true&limit=2&offset=3", 9),
             ("count=true&state=Pending&sort=-name", 5), ("count=true&q=eval", 2),
             ("count=true&user=alice&offset=100", 6), ("count=true&team=none", 0)):
    _, _, doc = ids(q)
    tap.is_((doc or {}).get("total"), n, "?%s: total %d" % (q, n))
_, _, doc = ids("count=false")
tap.ok(doc is not None and "total" not in doc, "count=false: no total")

# --- bad values ------------------------------------------------------------
BAD = [("sort=bogus", "sort"), ("sort=-", "sort"), ("sort=Name", "sort"),
       ("sort=%2Bname", "sort"), ("sort=name&after=3", "after"),
       ("sort=-submitted&after=1", "after"), ("offset=-1", "offset"),
       ("offset=1000001", "offset"), ("offset=x", "offset"), ("count=maybe", "count"),
       ("queue=Vision", "queue"), ("user=a_b", "user"), ("priority_class=a%20b",
                                                         "priority_class"),
       ("gpu_model=a/b", "gpu_model"), ("gpu_model=%s" % ("a" * 48), "gpu_model"),
       ("q=%s" % ("a" * 129), "q"), ("array=0", "array"), ("array=x", "array"),
       ("limit=0", "limit"), ("after=x", "after"), ("state=Done", "state")]
for q, field in BAD:
    r = d.request("GET", "/v1/jobs?" + q)
    tap.ok(r.status == 400 and r.error_code() == "invalid" and r.error_field() == field,
           "?%s: 400 invalid naming %s" % (q[:40], field), r)
list_is("q=%s" % ("a" * 128), [], "a q of 128 bytes is taken")
list_is("offset=1000000", [], "an offset of 1000000 is taken")

# --- a member's view -------------------------------------------------------
VISION = [j["id"] for j in ALL if j["team"] == "vision"]
for who in ("alice", "vic"):
    got, _, doc = ids("count=true&sort=id", token=TOK[who])
    tap.ok(got == VISION and (doc or {}).get("total") == len(VISION),
           "%s lists and counts vision's jobs only" % who, got)
list_is("sort=-name&user=nick", [], "another team's user is no one to alice",
        token=TOK["alice"])
got, _, doc = ids("gpu_model=A100&count=true", token=TOK["alice"])
tap.ok(got == [J5] and doc["total"] == 1, "nor are its GPU models' jobs", got)
r = d.request("GET", "/v1/jobs?team=nlp&sort=name", token=TOK["alice"])
tap.ok(r.status == 403 and r.error_field() == "team", "another team's list is 403", r)
list_is("count=true", [J3], "nick sees nlp's job", token=TOK["nick"])

# --- ETags -----------------------------------------------------------------
TAG = re.compile(r'^"[0-9a-f]{32}"$')


def get(path, token=None, inm=None):
    return d.request("GET", path, headers={"If-None-Match": inm} if inm is not None else None,
                     **as_(token))


r = get("/v1/jobs?limit=50")
etag = r.headers.get("etag", "")
tap.ok(r.status == 200 and TAG.match(etag), "a list has a strong ETag", r.headers)
tap.ok(r.headers.get("cache-control") == "private, no-cache" and
       r.headers.get("vary") == "Authorization",
       "with Cache-Control: private, no-cache and Vary: Authorization", r.headers)
tap.is_(get("/v1/jobs?limit=50").headers.get("etag"), etag, "the same list has the same tag")
for inm, why in ((etag, "the tag"), ("W/" + etag, "its weak form"), ("*", "*"),
                 ('"x", %s, W/"y"' % etag, "a list holding it"),
                 (" ,%s," % etag, "with empty elements")):
    r = get("/v1/jobs?limit=50", inm=inm)
    tap.ok(r.status == 304 and r.body == b"" and r.headers.get("etag") == etag and
           r.headers.get("cache-control") == "private, no-cache" and
           r.headers.get("vary") == "Authorization" and "content-length" not in r.headers,
           "If-None-Match %s: 304 with the tag and no body" % why, (r, r.headers))
for inm, why in (('"0000"', "another tag"), (etag[1:-1], "a tag without quotes"),
                 ("*, " + etag, "'*' in a list"), (etag + " x", "junk after the tag"),
                 ('"x"; ' + etag, "a ';' for a ','")):
    r = get("/v1/jobs?limit=50", inm=inm)
    tap.ok(r.status == 200 and r.headers.get("etag") == etag and
           isinstance(r.json, dict) and "jobs" in r.json,
           "If-None-Match %s: 200 with the list" % why, r)


def raw(lines):
    """One request with these extra header lines; the answer's status."""
    data = raw_exchange(d.port, (
        "GET /v1/jobs?limit=50 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        "%sConnection: close\r\n\r\n" % (d.token, "".join(
            "If-None-Match: %s\r\n" % v for v in lines))).encode())
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
    return int(m.group(1)) if m else 0


tap.is_(raw(['"x"', etag]), 304, "a list over two If-None-Match lines is one list")
tap.is_(raw(["*", etag]), 200, "'*' with another line is malformed: ignored")
tap.is_(raw([etag, "junk"]), 200, "a malformed line makes the field ignored")

ra = get("/v1/jobs?limit=50", token=TOK["alice"])
tap.ok(ra.status == 200 and TAG.match(ra.headers.get("etag", "")) and
       ra.headers["etag"] != etag, "alice's list of the same URL has its own tag")
tap.is_(get("/v1/jobs?limit=50", token=TOK["alice"], inm=etag).status, 200,
        "the admin's tag is not alice's: 200")
tap.is_(get("/v1/jobs?limit=50", token=TOK["alice"], inm=ra.headers.get("etag")).status,
        304, "her own is 304")

r = d.request("DELETE", "/v1/jobs/%d" % J6)
tap.ok(r.status in (200, 202), "bob's pending eval is cancelled", r)
r = get("/v1/jobs?limit=50", inm=etag)
tap.ok(r.status == 200 and TAG.match(r.headers.get("etag", "")) and
       r.headers["etag"] != etag and
       [j["state"] for j in r.json["jobs"] if j["id"] == J6] == ["Cancelled"],
       "after a change the old tag gets 200, the new list and a new tag", r.headers)
tap.is_(get("/v1/jobs?limit=50", inm=r.headers.get("etag")).status, 304,
        "and the new tag is 304 again")

for path in ("/v1/jobs/%d" % J1, "/v1/teams", "/v1/whoami", "/v1/jobs/%d/events" % J1):
    r = get(path)
    r2 = get(path, inm=r.headers.get("etag", "-"))
    tap.ok(r.status == 200 and TAG.match(r.headers.get("etag", "")) and r2.status == 304,
           "GET %s has a tag and answers 304 to it" % path, (r, r2))
for path in ("/healthz", "/metrics"):
    r = d.request("GET", path, token=None)
    tap.ok(r.status == 200 and "etag" not in r.headers, "%s has no ETag" % path, r.headers)
r = get("/v1/jobs?sort=bogus", inm="*")
tap.ok(r.status == 400 and "etag" not in r.headers, "an error has no ETag, even with *", r)
r = get("/v1/jobs/999999", inm="*")
tap.is_(r.status, 404, "If-None-Match: * on a job that does not exist is 404")

tap.ok(d.cancel_all(), "every pending job is cancelled")
tap.done_testing(d)
