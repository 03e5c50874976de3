#!/usr/bin/env python3
"""Timed mode: FIFO against the scheduler on the real traces.

Runs `sluice sim` in timed mode on the Philly and Helios job subsets (with
their virtual clusters' quotas) and on the openb pods (resampled to 1.3 x
the GPUs), at several arrival speeds (--time-scale), once with
--scheduler fifo and once with the scheduler, and prints the figures side
by side: queueing delay (mean, p50, p95, p99), mean JCT, GPU utilisation
over the arrival window, Jain's index across teams, preemptions, and the
simulation's wall time. The runs are deterministic (seed 42); only the
wall times are noisy. It exits 1 only when a run fails.

usage: bench/timed_compare.py [--sluice build/sluice] [--shared ../shared] [--quick]
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sluice", default=os.path.join(root, "build", "sluice"))
    ap.add_argument("--shared", default=os.environ.get("SLUICE_SHARED",
                                                       os.path.join(root, "..", "shared")))
    ap.add_argument("--quick", action="store_true", help="one speed per trace")
    a = ap.parse_args()
    t = os.path.join(a.shared, "traces")
    ph = ["--workload", os.path.join(t, "msr-philly", "philly_data_training.csv"),
          "--vcs", os.path.join(t, "msr-philly", "philly_vc.csv")]
    he = ["--workload", os.path.join(t, "sensetime-helios", "helios_data_training.csv"),
          "--vcs", os.path.join(t, "sensetime-helios", "Earth_gpu_number.csv")]
    ob = ["--nodes", os.path.join(t, "alibaba-gpu-v2023", "openb_node_list_gpu_node.csv"),
          "--workload", os.path.join(t, "alibaba-gpu-v2023", "openb_pod_list_default.csv"),
          "--mode", "timed", "--target", "1.3"]
    runs = [("philly", ph, [4] if a.quick else [1, 4, 8, 16]),
            ("helios", he, [2] if a.quick else [1, 2, 4]),
            ("openb", ob, [10000] if a.quick else [10000, 100000])]
    bad = 0
    print("== timed mode, FIFO vs the scheduler (seed 42; delays and JCT in seconds)")
    print("%-7s %7s %-7s %9s %8s %9s %9s %10s %6s %6s %6s %9s" %
          ("trace", "speed", "sched", "wait mean", "p50", "p95", "p99", "JCT mean", "util",
           "Jain", "pre", "wall s"))
    for name, args, scales in runs:
        for sc in scales:
            for sched in ("fifo", "sluice"):
                cmd = [a.sluice, "sim", "--no-progress", "--time-scale", str(sc),
                       "--scheduler", sched] + args
                run = subprocess.run(cmd, capture_output=True, text=True)
                if run.returncode != 0:
                    print("%s: %s" % (" ".join(cmd), run.stderr.strip()), file=sys.stderr)
                    bad = 1
                    continue
                d = json.loads(run.stdout)
                q = d["queueing_delay_s"]
                print("%-7s %6gx %-7s %9.0f %8.0f %9.0f %9.0f %10.0f %6.3f %6.3f %6d %9.2f" %
                      (name, sc, sched, q["mean"], q["p50"], q["p95"], q["p99"],
                       d["jct_s"]["mean"], d["gpu_utilization_arrivals"], d["jain_fairness"],
                       d["preemptions"], d["wall_seconds"]))
                sys.stdout.flush()
    return bad


if __name__ == "__main__":
    sys.exit(main())
