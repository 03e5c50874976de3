#!/bin/sh
# web_unit.t - the dashboard's pure JS (web/js: formatting, series,
# layouts) under node's test runner: web/test/*.test.js, node:test and
# node:assert only. Flat TAP through tests/integration/node_tap.js (node's
# own "tap" reporter nests subtests and writes failures as YAML that prove
# cannot read). Skipped when node (18.15 or later, for --test-reporter) is
# not installed.
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$(dirname "$here")")
if ! command -v node >/dev/null 2>&1; then
    echo "1..0 # SKIP node is not installed (apt-get install nodejs)"
    exit 0
fi
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number);
    process.exit(a > 18 || (a === 18 && b >= 15) ? 0 : 1)'; then
    echo "1..0 # SKIP node $(node --version) is older than 18.15 (no --test-reporter)"
    exit 0
fi
cd "$repo" || exit 1
exec node --test --test-reporter="$here/node_tap.js" web/test/
