#!/bin/sh
# check-banned.sh - refuse calls to functions the house style bans in src/:
#   strcpy strcat sprintf vsprintf gets atoi system
# (snprintf, vsnprintf, sl_strlcpy, sl_parse_int64 and fork/exec are the
# replacements.)
#
# Prints file:line: banned call 'NAME(' for each hit and exits 1 if there is
# any. Comments (// and /* */, also across lines) and string/char literals
# are stripped first, roughly, so prose about strcpy does not count.
# Usage: scripts/check-banned.sh [DIR...]   (default: src)
set -eu
cd "$(dirname "$0")/.."

[ $# -gt 0 ] || set -- src
files=$(find "$@" -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
[ -n "$files" ] || exit 0

# shellcheck disable=SC2086
awk '
FNR == 1 { incomment = 0 }
{
    line = $0; out = ""; i = 1; n = length(line)
    while (i <= n) {
        c = substr(line, i, 1); c2 = substr(line, i, 2)
        if (incomment) {
            if (c2 == "*/") { incomment = 0; i += 2 } else i++
            continue
        }
        if (c2 == "/*") { incomment = 1; i += 2; continue }
        if (c2 == "//") break
        if (c == "\"" || c == "\047") {          # skip a string/char literal
            q = c; i++
            while (i <= n) {
                d = substr(line, i, 1)
                if (d == "\\") { i += 2; continue }
                i++
                if (d == q) break
            }
            out = out " "
            continue
        }
        out = out c; i++
    }
    rest = out
    while (match(rest, /(^|[^A-Za-z0-9_.>])(strcpy|strcat|sprintf|vsprintf|gets|atoi|system)[ \t]*\(/)) {
        hit = substr(rest, RSTART, RLENGTH)
        sub(/^[^A-Za-z]/, "", hit); sub(/[ \t]*\($/, "", hit)
        printf "%s:%d: banned call %s()\n", FILENAME, FNR, hit
        bad = 1
        rest = substr(rest, RSTART + RLENGTH)
    }
}
END { exit bad ? 1 : 0 }
' $files || { echo "check-banned: use snprintf, sl_strlcpy, sl_parse_int64 or fork/exec instead" >&2; exit 1; }
