#!/bin/sh
# browser.t - the dashboard end to end in a real browser: node runs
# tests/browser/run.js (TAP), which starts its own sluiced from $SLUICE_BIN,
# drives Chromium through playwright-core and runs every
# tests/browser/scenarios/NN-*.js (tests/browser/README.md). Screenshots go
# to $SLUICE_BROWSER_OUT (default tests/browser/out/). Skipped when node,
# playwright-core (web/node_modules, from `make`, or NODE_PATH) or Chromium
# is absent.
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$(dirname "$here")")
if ! command -v node >/dev/null 2>&1; then
    echo "1..0 # SKIP node is not installed (apt-get install nodejs)"
    exit 0
fi
exec node "$repo/tests/browser/run.js"
