#!/bin/sh
# cordon_all.sh URL TOKEN - cordon every node of the sluiced at URL, so
# that the jobs a submission benchmark sends stay Pending and the figure
# is submission alone. (A job that could never run is refused at
# submission, so the benchmarks no longer ask for more than a node has.)
set -eu
url=$1 token=$2
nodes=$(curl -sf -H "Authorization: Bearer $token" "$url/v1/nodes" |
    python3 -c 'import json, sys; print(" ".join(n["name"] for n in json.load(sys.stdin)["nodes"]))')
[ -n "$nodes" ] || { echo "cordon_all: no node at $url" >&2; exit 1; }
for n in $nodes; do
    curl -sf -o /dev/null -X POST -H "Authorization: Bearer $token" \
        -H 'Content-Type: application/json' --data '{"reason":"bench: submissions only"}' \
        "$url/v1/nodes/$n/cordon"
done
