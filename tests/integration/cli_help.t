#!/bin/sh
# Help, the manual page and docs/cli.md against the CLI's command table:
# every command `sluice --help` lists has `sluice help CMD` and `sluice CMD
# --help`, an entry with a description in sluice(1)'s COMMANDS and a
# heading in docs/cli.md; `sluice --help` has no empty section. Needs no
# server.
. "$(dirname "$0")/../lib.sh"

REPO=$(cd "$(dirname "$0")/../.." && pwd)
MAN=$REPO/docs/man/sluice.1
help=$(sluice --help); rc=$?
is "$rc" 0 "sluice --help exits 0"
cmds=$(printf '%s\n' "$help" | awk '/^Commands:/ {on = 1; next}
    on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
ok "it lists the commands" test "$(printf '%s\n' "$cmds" | wc -l)" -ge 20

# A section is a line ending in ':' at the margin; it must be followed by
# an indented line.
empty=$(printf '%s\n' "$help" | awk 'head && !/^  / {print head} {head = ""}
    /^[A-Z][^ ].*:$/ {head = $0} END {if (head) print head}')
is "$empty" "" "sluice --help has no empty section"
like "$(printf '%s\n' "$help" | head -1)" "-o FORMAT" "its usage line names -o FORMAT"

# The commands of sluice(1): the first word of each .TP tag in COMMANDS,
# with its description (a text line of at least three words).
mancmds=$(python3 - "$MAN" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
sec, i = None, 0
while i < len(lines):
    l = lines[i]
    if l.startswith(".SH"):
        sec = l[3:].strip()
    elif l == ".TP" and sec == "COMMANDS" and i + 1 < len(lines):
        tag = re.sub(r'\\f[BIRP]|["\\]', "", lines[i + 1]).split()
        desc, j = [], i + 2
        while j < len(lines) and not lines[j].startswith((".TP", ".SH")):
            if not lines[j].startswith("."):
                desc.append(lines[j])
            j += 1
        if len(tag) > 1 and len(" ".join(desc).split()) >= 3:
            print(tag[1])
    i += 1
PY
)
for c in $cmds; do
    h=$(sluice help "$c" 2>&1); rc=$?
    is "$rc" 0 "sluice help $c exits 0"
    like "$(printf '%s\n' "$h" | head -1)" "^usage: sluice $c( |$)" "  and prints its usage"
    h2=$(sluice "$c" --help 2>&1)
    is "$h2" "$h" "  sluice $c --help prints the same"
    ok "  sluice(1) describes $c" sh -c 'printf "%s\n" "$1" | grep -qx "$2"' _ "$mancmds" "$c"
    ok "  docs/cli.md has a heading for $c" \
        grep -q "^### .*\`sluice $c[ \`]" "$REPO/docs/cli.md"
done
sluice help no-such-command >/dev/null 2>&1
is "$?" 1 "sluice help of an unknown command is a usage error"
done_testing
