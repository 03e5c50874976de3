#!/bin/sh
# fuzz_replay.t - replay the saved inputs (seeds and former crashers) of
# every libFuzzer target under the sanitizer build: the job spec and
# manifests parsers (tests/fuzz/corpus/spec), the server's request head
# parser (http_request) and query string decoder (http_query), the CLI
# client's answer parser (http_response),
# the trace loaders of the simulator (trace), the audit log's readers and
# writer (audit), imported image scans (trivy), sluiced's config file
# (config), the Slurm executor's readers of Slurm's answers (slurm) and
# the carbon intensity upload (carbon), the WebSocket frames of an
# attach (ws), OIDC tokens and key sets (jwt) and the identity file
# (ident).
# Each target's replay driver prints one TAP line per
# input; this file numbers them as one stream. A crash (or a sanitizer
# report, on stderr) ends that driver's run and is one more failure here.
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN:-$root/build/asan}
n=0
failed=0

for t in spec http_request http_query http_response trace audit trivy config slurm carbon ws jwt ident; do
    replay="$bin/tests/fuzz_${t}_replay"
    if [ ! -x "$replay" ]; then
        n=$((n + 1))
        failed=1
        echo "not ok $n - $replay is built (make SAN=1 unit builds it)"
        continue
    fi
    out=$("$replay" "$root/tests/fuzz/corpus/$t")
    rc=$?
    printf '%s\n' "$out" | awk -v base="$n" -v t="fuzz_$t" '
        /^(not )?ok [0-9]+ / {
            verdict = ($0 ~ /^not /) ? "not ok" : "ok"
            sub(/^(not )?ok [0-9]+ - /, "")
            printf "%s %d - %s %s\n", verdict, base + (++k), t, $0
        }'
    n=$((n + $(printf '%s\n' "$out" | grep -c '^\(not \)\{0,1\}ok [0-9]')))
    if [ "$rc" -ne 0 ]; then
        n=$((n + 1))
        failed=1
        echo "not ok $n - fuzz_$t replays its whole corpus (exit $rc; see its report above)"
    fi
done
echo "1..$n"
exit $failed
