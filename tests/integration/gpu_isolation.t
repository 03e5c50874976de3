#!/usr/bin/env python3
"""gpu_isolation.t - a job can open only the GPUs it was given, end to end.

sluiced runs with --fake-gpus 4xH100, whose GPU i is the device 195:i. The
test makes nodes of those numbers with mknod (nvidia0..3, and nvidiactl
195:255) in a directory of its own; no NVIDIA driver is loaded, so an open
the device rules allow fails with ENXIO and one they deny with EPERM. A job
run with `sluice run --gpus 1` (as the default job account, nobody) opens
every node and prints the errno of each: only its own GPU and the control
device may give ENXIO, and its job object says gpus_enforced true. A job
without GPUs can open none. After kill -9 of the daemon, a task moved out
of its device cgroup is found so on re-adoption. The same holds with the
cgroup2 device program (SLUICE_DEVICE_CGROUP=bpf). A job run as root
(--job-user root --allow-daemon-user root) has the same rules but does not
claim isolation, since root could lift them, and says why in its message;
with SLUICE_DEVICE_CGROUP=none, or without root, the job says its GPUs are
not isolated."""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import SLUICE_BIN, Sluiced, tap  # noqa: E402

NODES = ["nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl"]
NVIDIA_MAJOR = 195

# Opens every node and prints "<node>=<errno name>" ("ok" when it opens),
# then the GPU variables. Run as the job.
PROBE = r"""
import errno, os, sys
d = sys.argv[1]
for n in %r:
    try:
        os.close(os.open(os.path.join(d, n), os.O_RDONLY))
        print(n + "=ok")
    except OSError as e:
        print(n + "=" + errno.errorcode.get(e.errno, str(e.errno)))
print("env " + "|".join(os.environ.get(k, "(unset)") for k in
                        ("CUDA_DEVICE_ORDER", "SLUICE_GPUS", "CUDA_VISIBLE_DEVICES",
                         "NVIDIA_VISIBLE_DEVICES")))
""" % (NODES,)

WAIT = r"""
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
"""


def cli(d, *args):
    env = dict(os.environ, SLUICE_SERVER=d.server, SLUICE_TOKEN=d.token)
    p = subprocess.run([os.path.join(SLUICE_BIN, "sluice")] + list(args),
                       env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def run(d, gpus, script, arg):
    args = ["run", "--cpus", "0.1", "--memory", "64Mi"]
    if gpus:
        args += ["--gpus", str(gpus)]
    rc, out, err = cli(d, *(args + ["--", "/usr/bin/python3", "-c", script, arg]))
    tap.ok(rc == 0 and out.isdigit(), "sluice run %s prints a job id"
           % ("--gpus %d" % gpus if gpus else "(no GPUs)"), out, err)
    return int(out) if out.isdigit() else None


def wait_state(d, jid, states, timeout=30):
    deadline = time.monotonic() + timeout
    job = {}
    while jid is not None and time.monotonic() < deadline:
        st, job = d.json_req("GET", "/v1/jobs/%d" % jid)
        if st == 200 and job.get("state") in states:
            return job
        time.sleep(0.05)
    return job or {}


def opened(d, jid):
    """{node: errno name} and the env line of the job's log."""
    _, out, _ = cli(d, "logs", str(jid))
    res, env = {}, None
    for line in out.splitlines():
        if line.startswith("env "):
            env = line[4:].split("|")
        elif "=" in line:
            k, v = line.split("=", 1)
            res[k] = v
    return res, env


def placed_gpu(job):
    gpus = [g for t in job.get("placement") or [] for g in t.get("gpus", [])]
    return gpus[0] if len(gpus) == 1 else None


def make_nodes():
    d = tempfile.mkdtemp(prefix="sluice-gpu-nodes.")
    os.chmod(d, 0o755)
    for i, n in enumerate(NODES):
        minor = i if n != "nvidiactl" else 255
        p = os.path.join(d, n)
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(NVIDIA_MAJOR, minor))
        os.chmod(p, 0o666)
    return d


def start(env=None, args=()):
    """A daemon with SLUICE_DEVICE_CGROUP=env (None: unset)."""
    if env:
        os.environ["SLUICE_DEVICE_CGROUP"] = env
    d = Sluiced(fake_gpus="4xH100", args=list(args)).start()
    os.environ.pop("SLUICE_DEVICE_CGROUP", None)
    return d


def stop(d):
    rc = d.stop()
    tap.ok(rc == 0, "sluiced exits cleanly on SIGTERM", "exit status %s" % rc)


def check_isolated(d, nodes, label):
    """A one-GPU job: its GPU and nvidiactl open (ENXIO), the other three
    give EPERM, and the job says so."""
    jid = run(d, 1, PROBE, nodes)
    job = wait_state(d, jid, ("Succeeded", "Failed"))
    tap.is_(job.get("state"), "Succeeded", "%s: the one-GPU job succeeds" % label)
    g = placed_gpu(job)
    res, env = opened(d, jid)
    want = {n: "EPERM" for n in NODES[:4]}
    if g is not None:
        want["nvidia%d" % g] = "ENXIO"
    want["nvidiactl"] = "ENXIO"
    tap.is_(res, want, "%s: it opens only nvidia%s (ENXIO: allowed, no driver) and "
            "nvidiactl; every other GPU gives EPERM" % (label, g))
    tap.is_(job.get("gpus_enforced"), True, "%s: its job object says gpus_enforced true"
            % label)
    tap.is_(job.get("message"), None, "%s: with nothing to say" % label)
    tap.is_(env, ["PCI_BUS_ID", str(g), str(g), str(g)],
            "%s: CUDA_DEVICE_ORDER=PCI_BUS_ID; SLUICE_GPUS and both *_VISIBLE_DEVICES "
            "name its GPU" % label)


def main():
    if os.geteuid() != 0:
        d = Sluiced(fake_gpus="4xH100").start()
        jid = run(d, 1, "print('ran')", "-")
        job = wait_state(d, jid, ("Succeeded", "Failed"))
        tap.is_(job.get("state"), "Succeeded", "without root a one-GPU job still runs")
        tap.is_(job.get("gpus_enforced"), False, "and says gpus_enforced false")
        tap.ok("GPU isolation not enforced" in (job.get("message") or ""),
               "with the reason in its message", job.get("message"))
        tap.done_testing(d)

    nodes = make_nodes()
    try:
        d = start()
        check_isolated(d, nodes, "cgroup v1 devices")

        # No GPUs: none of them.
        jid = run(d, 0, PROBE, nodes)
        job = wait_state(d, jid, ("Succeeded", "Failed"))
        res, env = opened(d, jid)
        tap.is_(res, dict({n: "EPERM" for n in NODES[:4]}, nvidiactl="ENXIO"),
                "a job without GPUs can open none of them, nvidiactl still")
        tap.is_(job.get("gpus_enforced"), None, "and its gpus_enforced is null")
        tap.is_(env[:2] if env else env, ["PCI_BUS_ID", ""],
                "its CUDA_DEVICE_ORDER is PCI_BUS_ID, SLUICE_GPUS empty")

        # kill -9, the task leaves its device cgroup meanwhile, restart:
        # re-adoption finds it so.
        flag = os.path.join(nodes, "flag")
        jid = run(d, 1, WAIT, flag)
        job = wait_state(d, jid, ("Running",))
        pidf = os.path.join(d.data, "run", "%d.0.0.pid" % (jid or 0))
        deadline = time.monotonic() + 10
        while not os.path.exists(pidf) and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(pidf) as f:
            fields = f.read().split()
        tap.is_(fields[3:], ["1"], "the pid file records that its GPUs are isolated")
        d.kill9()
        with open("/sys/fs/cgroup/devices/cgroup.procs", "w") as f:
            f.write(fields[0])
        why = d.restart()
        tap.ok(why is None, "sluiced restarts after kill -9", why or "")
        with open(flag, "w"):
            pass
        job = wait_state(d, jid, ("Succeeded", "Failed"))
        tap.is_(job.get("state"), "Succeeded", "the re-adopted job succeeds")
        tap.is_(job.get("gpus_enforced"), False,
                "and says gpus_enforced false: its task left its device cgroup")
        tap.ok("not in its device cgroup" in (job.get("message") or ""),
               "its message says so", job.get("message"))
        stop(d)

        # The same with the cgroup2 device program.
        d = start("bpf")
        check_isolated(d, nodes, "cgroup2 bpf")
        stop(d)

        # Jobs run as root (allowed for this daemon): same rules, no claim.
        d = start(args=("--job-user", "root", "--allow-daemon-user", "root"))
        jid = run(d, 1, PROBE, nodes)
        job = wait_state(d, jid, ("Succeeded", "Failed"))
        g = placed_gpu(job)
        res, _ = opened(d, jid)
        tap.ok(g is not None and res.get("nvidia%d" % g) == "ENXIO" and
               sum(1 for n in NODES[:4] if res.get(n) == "EPERM") == 3,
               "a root job's other GPUs give EPERM too", res)
        tap.is_(job.get("gpus_enforced"), False,
                "but it says gpus_enforced false: root could lift the rules")
        tap.ok("GPU isolation not enforced: the task runs as root" in
               (job.get("message") or ""), "and its message says why", job.get("message"))
        stop(d)

        # Device rules turned off: said, never implied.
        d = start("none")
        jid = run(d, 1, PROBE, nodes)
        job = wait_state(d, jid, ("Succeeded", "Failed"))
        res, env = opened(d, jid)
        tap.ok(all(res.get(n) == "ENXIO" for n in NODES),
               "without device rules a job can open every GPU", res)
        tap.is_(job.get("gpus_enforced"), False, "and says gpus_enforced false")
        tap.is_(job.get("message"), "GPU isolation not enforced: SLUICE_DEVICE_CGROUP=none",
                "with the reason in its message")
        tap.ok(env is not None and env[0] == "PCI_BUS_ID",
               "its environment is set all the same")
        tap.done_testing(d)
    finally:
        shutil.rmtree(nodes, ignore_errors=True)


main()
