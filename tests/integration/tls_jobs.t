#!/usr/bin/env python3
"""tls_jobs.t - a job calls the API over TLS: sluiced --tls-job-ca gives
tasks SLUICE_CA_CERT beside SLUICE_SERVER (https://) and their job token,
so `sluice` in a job verifies the daemon's certificate; a job that sets
its own SLUICE_CA_CERT keeps it; --tls-job-ca without TLS or as a
relative path starts nothing."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sltest  # noqa: E402
from sltest import job_doc, tap  # noqa: E402

SLUICE = os.path.join(sltest.SLUICE_BIN, "sluice")
D = sltest.Sluiced(fake_gpus="1xT4", tls=True)
D.args += ["--tls-job-ca", D.ca[0]]
D.start()


def run_job(name, env=None):
    out = os.path.join(D.jobs, name + ".out")
    script = ('%s whoami -o json > %s 2>&1; echo "rc=$?" >> %s; '
              'echo "ca=$SLUICE_CA_CERT" >> %s' % (SLUICE, out, out, out))
    doc = job_doc(name, command=["sh", "-c", script], env=env or {})
    r = D.request("POST", "/v1/jobs", doc)
    jid = (r.json or {}).get("id")
    done = sltest.wait_for(lambda: D.json_req("GET", "/v1/jobs/%s" % jid)[1].get("state")
                           in ("Succeeded", "Failed", "Cancelled"), 60)
    text = open(out).read() if done and os.path.exists(out) else ""
    return r.status, text


st, text = run_job("whoami")
tap.ok(st == 201 and "rc=0" in text and '"user": "admin"' in text and
       "ca=%s" % D.ca[0] in text,
       "a job's sluice verifies the API over https with the CA it was given", text)
st, text = run_job("own-ca", env={"SLUICE_CA_CERT": "/nonexistent/ca.pem"})
tap.ok(st == 201 and "ca=/nonexistent/ca.pem" in text and "rc=0" not in text,
       "a job that sets SLUICE_CA_CERT keeps its own (here a wrong one: refused)", text)

sluiced = os.path.join(sltest.SLUICE_BIN, "sluiced")


def start_fails(*args):
    p = subprocess.run([sluiced, "--dev", "--listen", "127.0.0.1:%d" % sltest.free_port(),
                        "--data-dir", os.path.join(D.tmp, "bad")] + list(args),
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    return p.returncode, p.stderr


rc, err = start_fails("--tls-job-ca", D.ca[0])
tap.ok(rc != 0 and "--tls-job-ca needs --tls-cert" in err, "--tls-job-ca without TLS is "
       "refused", err)
rc, err = start_fails("--tls-cert", D.cert[0], "--tls-key", D.cert[1], "--tls-job-ca",
                      "ca.pem")
tap.ok(rc != 0 and "absolute path" in err, "a relative --tls-job-ca is refused", err)
tap.ok(not os.path.exists(os.path.join(D.tmp, "bad")), "... before anything is written")
tap.done_testing(D)
