#!/usr/bin/env python3
"""slurm_handover.py - where a GPU's turnover goes, from a lab's slurmctld log.

Usage: slurm_handover.py LAB_DIR [SLUICED_DATA_DIR]

LAB_DIR is a lab kept after a run (tests/slurm/lab.sh, LAB_KEEP=1) whose
slurmctld ran with SlurmctldDebug=debug2 (LAB_SLURM_CONF_EXTRA). Prints, per
side (Sluice's jobs are named sluice-ID-ATTEMPT, the rest are Slurm alone's):
how long a job lived in Slurm (start to completion), the jobs per second,
and the idle gap per GPU that Little's law gives for 24 GPUs. With the data
directory of the sluiced that ran with --slurm-stage on, also how soon each
staged successor started after its predecessor completed, by who started
it (main scheduler or backfill), and how many reached slurmctld only after
that completion.
"""
import datetime
import os
import re
import sqlite3
import statistics
import sys

GPUS = 24


def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def pct(v):
    v = sorted(v)
    return "p50 %.0f p90 %.0f mean %.0f" % (v[len(v) // 2], v[int(len(v) * 0.9)],
                                           statistics.mean(v))


def main():
    lab = sys.argv[1]
    data = sys.argv[2] if len(sys.argv) > 2 else None
    name, sluice = {}, {}
    for line in open(os.path.join(lab, "jobcomp.txt")):
        m = re.search(r"JobId=(\d+) .*Name=(\S+)", line)
        if m:
            name[int(m.group(1))] = m.group(2)
            s = re.match(r"sluice-(\d+)-\d+$", m.group(2))
            if s:
                sluice[int(s.group(1))] = int(m.group(1))
    done, start, how, sub = {}, {}, {}, {}
    for line in open(os.path.join(lab, "log", "slurmctld.log")):
        t = line[1:24]
        m = re.search(r"_job_complete: JobId=(\d+) done", line)
        if m:
            done[int(m.group(1))] = ts(t)
            continue
        m = re.search(r"(sched: Allocate|_start_job: Started) JobId=(\d+)", line)
        if m:
            start[int(m.group(2))] = ts(t)
            how[int(m.group(2))] = "main" if m.group(1).startswith("sched") else "backfill"
            continue
        m = re.search(r"_slurm_rpc_submit_batch_job: JobId=(\d+)", line)
        if m:
            sub[int(m.group(1))] = ts(t)
    for side in ("Slurm alone", "Sluice"):
        ids = [j for j in start if j in done and
               name.get(j, "").startswith("sluice-") == (side == "Sluice")]
        if not ids:
            continue
        life = [done[j] - start[j] for j in ids]
        span = max(done[j] for j in ids) - min(start[j] for j in ids)
        print("%s: %d jobs in %.2f s (%.2f/s); in Slurm %s ms; idle gap per GPU %.0f ms"
              % (side, len(ids), span, len(ids) / span, pct([x * 1000 for x in life]),
                 1000 * (GPUS * span / len(ids) - statistics.mean(life))))
    if not data:
        return
    db = sqlite3.connect(os.path.join(data, "sluice.db"))
    staged = {j: int(msg.split()[-1]) for j, msg in
              db.execute("select job_id, message from job_events where type = 'staged'")}
    by, late = {"main": [], "backfill": []}, 0
    for s, p in staged.items():
        us, up = sluice.get(s), sluice.get(p)
        if us is None or up is None or up not in done or us not in start:
            continue
        if sub[us] > done[up]:
            late += 1
            continue
        by[how[us]].append((start[us] - done[up]) * 1000)
    for k, v in by.items():
        if v:
            print("staged successors started by %s: %d, after the predecessor's end %s ms"
                  % (k, len(v), pct(v)))
    print("staged successors that reached slurmctld after their predecessor ended: %d of %d"
          % (late, len(staged)))


if __name__ == "__main__":
    main()
