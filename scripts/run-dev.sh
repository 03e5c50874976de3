#!/usr/bin/env bash
# make run: start sluiced --dev on this machine (SQLite store in ./.sluice,
# local executor), load the demo teams, print the URL and the admin token,
# and stay in the foreground until Ctrl-C.
#
# Settings (environment): SLUICE_LISTEN (default 127.0.0.1:8470),
# SLUICE_DATA_DIR (default ./.sluice), SLUICE_FAKE_GPUS (default 4xH100,4xA100-80GB
# when NVML finds no GPU; set it to "none" to run without GPUs).
set -euo pipefail
cd "$(dirname "$0")/.."

listen=${SLUICE_LISTEN:-127.0.0.1:8470}
data=${SLUICE_DATA_DIR:-./.sluice}
args=(--dev --listen "$listen" --data-dir "$data")

if [ -z "${SLUICE_FAKE_GPUS:-}" ]; then
    if ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1'; then
        SLUICE_FAKE_GPUS=none          # real GPUs: discovered through NVML
    else
        SLUICE_FAKE_GPUS=4xH100,4xA100-80GB
    fi
fi
[ "$SLUICE_FAKE_GPUS" != none ] && args+=(--fake-gpus "$SLUICE_FAKE_GPUS")

build/sluiced "${args[@]}" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null' INT TERM EXIT

url="http://$listen"
for _ in $(seq 1 100); do
    curl -fsS "$url/healthz" >/dev/null 2>&1 && break
    kill -0 $pid 2>/dev/null || { echo "sluiced exited; see the log above" >&2; exit 1; }
    sleep 0.1
done
token=$(cat "$data/admin.token")
SLUICE_SERVER=$url SLUICE_TOKEN=$token build/sluice apply -f examples/demo-teams.yaml

cat <<MSG

Sluice is running at $url  (data in $data)
  Dashboard: $url/ui/  (log in with the token below)
  export SLUICE_SERVER=$url
  export SLUICE_TOKEN=$token
  build/sluice run --gpus 1 -- sh -c 'echo "my GPU: \$CUDA_VISIBLE_DEVICES"'
  build/sluice jobs --state all
Press Ctrl-C to stop (running jobs keep running and are re-adopted on the next start).
MSG
wait $pid
