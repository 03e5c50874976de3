#!/bin/bash
# tls.sh - what TLS costs the API server: full handshakes per second, a new
# connection with one request (HTTPS beside HTTP), and requests/s over 64
# kept-alive connections (wrk -t2 -c64) on GET /healthz and an
# authenticated GET /v1/jobs, HTTPS beside HTTP.
#
# Starts two build/sluiced --dev on free 127.0.0.1 ports with temporary
# data dirs, one with --tls-cert/--tls-key (a P-256 certificate from a
# test CA made here with `openssl req`), one plain, and measures them in
# turn in this one run. Prints figures and ratios; never fails on speed
# (exit 1 only when a daemon does not start or a tool is missing).
#
#   TLS_BENCH_SECONDS=10   each wrk run
#   TLS_BENCH_CONNS=500    new connections per side of the handshake loop
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SLUICE_BIN:-$ROOT/build}
SECS=${TLS_BENCH_SECONDS:-10}
CONNS=${TLS_BENCH_CONNS:-500}
for tool in wrk openssl python3; do
    command -v "$tool" >/dev/null || { echo "tls.sh: $tool not found (scripts/deps.sh)" >&2; exit 1; }
done
[ -x "$BIN/sluiced" ] || { echo "tls.sh: no $BIN/sluiced (make all)" >&2; exit 1; }

TMP=$(mktemp -d /tmp/sluice-bench-tls.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The test CA and the server's certificate (ECDSA P-256, as a site would
# choose today; RSA-2048 handshakes cost the server several times more).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$TMP/ca.key" -out "$TMP/ca.pem" -subj "/CN=Sluice bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$TMP/server.key" -out "$TMP/server.csr" -subj "/CN=sluiced" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$TMP/ext"
openssl x509 -req -in "$TMP/server.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" \
    -CAcreateserial -days 2 -extfile "$TMP/ext" -out "$TMP/server.pem" 2>/dev/null
chmod 600 "$TMP/server.key"

# start NAME PORT ARGS...: a daemon, waited for until /healthz answers.
start() {
    local name=$1 port=$2 scheme=http
    shift 2
    [ "$#" -gt 0 ] && scheme=https
    "$BIN/sluiced" --dev --listen "127.0.0.1:$port" --data-dir "$TMP/$name" \
        --fake-gpus 1xT4 --log-level warn "$@" >"$TMP/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 200); do
        if curl -sf --cacert "$TMP/ca.pem" "$scheme://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.05
    done
    echo "tls.sh: sluiced ($name) did not start" >&2
    tail -20 "$TMP/$name.log" >&2
    exit 1
}

TPORT=$(free_port)
start tls "$TPORT" --tls-cert "$TMP/server.pem" --tls-key "$TMP/server.key"
PPORT=$(free_port)
start plain "$PPORT"
TTOK=$(cat "$TMP/tls/admin.token")
PTOK=$(cat "$TMP/plain/admin.token")

# Full handshakes per second (no session resumption: -new), a C client.
hs=$(openssl s_time -connect "127.0.0.1:$TPORT" -new -time 5 -CAfile "$TMP/ca.pem" 2>/dev/null |
    sed -n 's/^\([0-9]*\) connections in \([0-9.]*\) real seconds.*/\1 \2/p' | head -1)
hs_n=${hs% *}
hs_s=${hs#* }

# A new connection and one GET /healthz, CONNS times, HTTPS then HTTP.
conn=$(python3 - "$TPORT" "$PPORT" "$TMP/ca.pem" "$CONNS" <<'EOF'
import http.client, ssl, sys, time
tport, pport, ca, n = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ctx = ssl.create_default_context(cafile=ca)
def run(mk):
    t0 = time.perf_counter()
    for _ in range(n):
        c = mk()
        c.request("GET", "/healthz")
        r = c.getresponse()
        r.read()
        assert r.status == 200
        c.close()
    return (time.perf_counter() - t0) / n * 1000
https = run(lambda: http.client.HTTPSConnection("127.0.0.1", tport, context=ctx))
plain = run(lambda: http.client.HTTPConnection("127.0.0.1", pport))
print("%.3f %.3f" % (https, plain))
EOF
)
conn_https=${conn% *}
conn_http=${conn#* }

# wrk: requests/s over 64 kept-alive connections.
rps() { # URL [TOKEN]
    local out
    if [ -n "${2:-}" ]; then
        out=$(wrk -t2 -c64 -d"${SECS}s" -H "Authorization: Bearer $2" "$1" 2>&1)
    else
        out=$(wrk -t2 -c64 -d"${SECS}s" "$1" 2>&1)
    fi
    echo "$out" | awk '/^Requests\/sec:/ {print $2}'
}
h_tls=$(rps "https://127.0.0.1:$TPORT/healthz")
h_plain=$(rps "http://127.0.0.1:$PPORT/healthz")
j_tls=$(rps "https://127.0.0.1:$TPORT/v1/jobs" "$TTOK")
j_plain=$(rps "http://127.0.0.1:$PPORT/v1/jobs" "$PTOK")

ratio() { python3 -c "import sys; a,b=float(sys.argv[1] or 0),float(sys.argv[2] or 0); print('%.2f' % (a/b) if b else '-')" "$1" "$2"; }
echo "== TLS (sluiced --tls-cert, ECDSA P-256; $(nproc) CPUs; ratios matter, absolute figures are noisy)"
printf 'tls  full handshakes/s (openssl s_time -new)   : %s  (%s in %s s)\n' \
    "$(python3 -c "import sys; print('%.0f' % (float(sys.argv[1])/float(sys.argv[2])))" "${hs_n:-0}" "${hs_s:-1}")" \
    "${hs_n:-?}" "${hs_s:-?}"
printf 'new connection + GET /healthz, mean ms      : https %s  http %s  (x%s; %d each, Python client)\n' \
    "$conn_https" "$conn_http" "$(ratio "$conn_https" "$conn_http")" "$CONNS"
printf 'GET /healthz req/s, 64 kept-alive (wrk -c64): https %s  http %s  (https/http %s)\n' \
    "$h_tls" "$h_plain" "$(ratio "$h_tls" "$h_plain")"
printf 'GET /v1/jobs req/s, 64 kept-alive (wrk -c64): https %s  http %s  (https/http %s)\n' \
    "$j_tls" "$j_plain" "$(ratio "$j_tls" "$j_plain")"
