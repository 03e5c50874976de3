#!/usr/bin/env bash
# bench/ui_scale.sh - `make bench-ui`: the web dashboard at scale, and the
# charting libraries weighed for it. Prints figures beside the issue's
# targets; never fails on speed. Fails (exit 1) only when something is
# wrong: sluiced does not start, the store does not get its jobs, the UI is
# not built.
#
#   1. bench/ui_scale.js: sluiced (build/sluiced, the optimised build) with
#      1,000 fake nodes x 8 GPUs and the simulated executor, 100,000 jobs
#      submitted through the API by 8 teams, then headless Chromium times
#      the jobs page's first render, two filter changes, the overview's
#      charts and the nodes page's tiles (median of BENCH_UI_RUNS runs).
#   2. bench/ui_charts.js: uPlot against Chart.js (when NODE_PATH finds it):
#      bytes, gzipped bytes, evaluation and drawing 4 series x 2,000 points.
#
# Settings (environment): BENCH_UI_NODES (1000), BENCH_UI_JOBS (100000),
# BENCH_UI_RUNS (5), BENCH_UI_CONCURRENCY (32 submissions at once),
# BENCH_UI_TIMEOUT (30 s for one wait), BENCH_UI_SELECTORS (JSON: the page
# selectors, see the top of bench/ui_scale.js), SLUICE_BIN (build),
# SLUICE_UI_SERVER=dev (web/ from disk through web/dev/serve.py).
# Needs node, playwright-core (web/node_modules, from make) and Chromium.
# The summary lands in bench/out/ui_scale.txt, sluiced's log beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
mkdir -p "$OUT"
if ! command -v node >/dev/null 2>&1; then
    echo "bench-ui: node is not installed (apt-get install nodejs)" >&2
    exit 1
fi
SLUICE_BIN=${SLUICE_BIN:-$(pwd)/build}
export SLUICE_BIN
rc=0
node bench/ui_scale.js | tee "$OUT/ui_scale.txt" || rc=$?
echo | tee -a "$OUT/ui_scale.txt"
node bench/ui_charts.js | tee -a "$OUT/ui_scale.txt" || rc=$?
exit "$rc"
