#!/bin/sh
# fuzz_replay.t - replay the saved fuzz inputs of the job spec and manifests
# parsers (seeds and former crashers) under the sanitizer build. TAP comes
# from the replay driver itself, one line per input.
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN:-$root/build/asan}
replay="$bin/tests/fuzz_spec_replay"

if [ ! -x "$replay" ]; then
    echo "not ok 1 - $replay is built (make SAN=1 unit builds it)"
    echo "1..1"
    exit 1
fi
exec "$replay" "$root/tests/fuzz/corpus/spec"
