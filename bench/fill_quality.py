#!/usr/bin/env python3
"""Fill-mode quality against the FGD paper's published runs.

Runs `sluice sim` (fill mode) for each workload x policy x seed and prints,
next to each other, the mean final GPU allocation ratio (at 130 % arrived
demand), the ratio at 100 % arrived, and the unallocated GPUs, for Sluice
and for the reference simulator's artifact runs
(../shared/traces/fgd-simulator-reference-results/analysis_allo_discrete.csv.gz,
the same seeds). It never fails on the figures; it exits 1 only when a run
fails or a published row is missing.

usage: bench/fill_quality.py [--workloads default,cpu050,...|all]
                             [--policies fgd,bestfit,...] [--seeds 42-51]
                             [--sluice build/sluice] [--shared ../shared]
"""
import argparse
import collections
import csv
import gzip
import json
import os
import subprocess
import sys
import time

POLICIES = {"01-Random": "random", "02-DotProd": "dotprod", "03-GpuClustering": "clustering",
            "04-GpuPacking": "packing", "05-BestFit": "bestfit", "06-FGD": "fgd"}


def seeds_arg(text):
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="default")
    ap.add_argument("--policies", default=",".join(POLICIES.values()))
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("42-51"))
    ap.add_argument("--sluice", default=os.path.join(root, "build", "sluice"))
    ap.add_argument("--shared", default=os.environ.get("SLUICE_SHARED",
                                                       os.path.join(root, "..", "shared")))
    a = ap.parse_args()

    traces = os.path.join(a.shared, "traces", "alibaba-gpu-v2023")
    ref_path = os.path.join(a.shared, "traces", "fgd-simulator-reference-results",
                            "analysis_allo_discrete.csv.gz")
    nodes = os.path.join(traces, "openb_node_list_gpu_node.csv")
    ref = collections.defaultdict(dict)   # (workload, policy) -> seed -> (final, at100)
    with gzip.open(ref_path, "rt") as f:
        for r in csv.DictReader(f):
            w = r["workload"].replace("openb_pod_list_", "")
            ref[(w, POLICIES[r["sc_policy"]])][int(r["seed"])] = (float(r["130"]), float(r["100"]))
    workloads = sorted({w for w, _ in ref}) if a.workloads == "all" else a.workloads.split(",")
    policies = a.policies.split(",")
    bad = 0
    print("== fill mode vs the published FGD artifact runs (seeds %d-%d; %% of 6212 GPUs)"
          % (a.seeds[0], a.seeds[-1]))
    print("%-12s %-10s %8s %8s %8s | %8s %8s %8s | %7s %9s" %
          ("workload", "policy", "final", "at100", "unalloc", "pub-fin", "pub-100", "pub-un",
           "diff", "wall s"))
    for w in workloads:
        for p in policies:
            got, pub, walls = [], [], []
            for seed in a.seeds:
                if seed not in ref[(w, p)]:
                    print("no published run for %s %s seed %d" % (w, p, seed), file=sys.stderr)
                    bad = 1
                    continue
                cmd = [a.sluice, "sim", "--no-progress", "--nodes", nodes, "--workload",
                       os.path.join(traces, "openb_pod_list_%s.csv" % w), "--policy", p,
                       "--seed", str(seed)]
                t = time.monotonic()
                run = subprocess.run(cmd, capture_output=True, text=True)
                walls.append(time.monotonic() - t)
                if run.returncode != 0:
                    print("%s: %s" % (" ".join(cmd), run.stderr.strip()), file=sys.stderr)
                    bad = 1
                    continue
                s = json.loads(run.stdout)
                got.append((s["alloc_ratio_final"] * 100, (s.get("alloc_at_100") or 0) * 100,
                            s["unallocated_gpus_final"]))
                pub.append(ref[(w, p)][seed])
            if not got:
                continue
            n = len(got)
            fin = sum(g[0] for g in got) / n
            a100 = sum(g[1] for g in got) / n
            un = sum(g[2] for g in got) / n
            pfin = sum(x[0] for x in pub) / n
            p100 = sum(x[1] for x in pub) / n
            print("%-12s %-10s %8.2f %8.2f %8.1f | %8.2f %8.2f %8.1f | %+7.2f %9.3f" %
                  (w, p, fin, a100, un, pfin, p100, (100 - pfin) / 100 * 6212, fin - pfin,
                   sum(walls) / n))
            sys.stdout.flush()
    return bad


if __name__ == "__main__":
    sys.exit(main())
