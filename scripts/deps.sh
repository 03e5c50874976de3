#!/bin/sh
# deps.sh - install the Debian packages Sluice needs to build, test and bench.
#
# Idempotent: asks dpkg which packages are missing and installs only those,
# running `apt-get update` once first. When nothing is missing it exits at
# once without touching the network. Uses sudo only when not root.
#
# Optional packages (Slurm, for the side-by-side bench and the Slurm lab)
# are installed in a second step whose failure is a warning,
# not an error: the bench and the tests that need them skip when absent.
# Set SLUICE_DEPS_NO_OPTIONAL=1 to skip them.
set -eu

# Needed to build (gcc make pkg-config + the -dev libraries), to fuzz
# (clang + libFuzzer runtime), to test (perl for prove, python3 + yaml for
# the integration tests, sqlite3, curl, procps), to bench (wrk), and for
# the web UI (node, whose npm installs web/'s packages at build time, and
# chromium, which the browser tests drive through playwright-core), and
# PostgreSQL: libpq-dev for the PostgreSQL store, and the server, which
# the tests start for themselves (tests/pg/pg.sh: its own cluster on a
# loopback port; Debian's own "main" cluster is not used).
REQUIRED="gcc make pkg-config libc6-dev libldap-dev slapd ldap-utils
libjansson-dev libyaml-dev libsqlite3-dev
libsodium-dev libjemalloc-dev libpq-dev
libcjose-dev libcurl4-openssl-dev libssl-dev openssl
clang libclang-rt-14-dev
perl python3 python3-yaml sqlite3 curl procps wrk
prometheus nodejs chromium postgresql"

# npm: a nodejs package built by Node's own project ships /usr/bin/npm and
# conflicts with Debian's npm package; Debian's nodejs has no npm. So
# Debian's npm is installed only when there is no npm once nodejs is.
has_npm() { command -v npm >/dev/null 2>&1; }

# Needed only by bench/run.sh's side-by-side comparison with Slurm and by
# the Slurm lab (tests/slurm/lab.sh: slurmctld, slurmd and the client
# commands, which slurm-wlm depends on; munged, munge, unmunge, mungekey).
# bench/slurm_rest.sh also needs Slurm's REST daemon (slurmrestd) and its
# JWT authentication plugin (without slurm-wlm-jwt-plugin, a slurmctld
# configured with AuthAltTypes=auth/jwt does not start); the lab itself
# uses neither. libslurm-dev: Slurm's headers, with which the Slurm
# executor is built to submit through Slurm's C API (src/exec/slurm_lib.c;
# without them it submits with sbatch).
OPTIONAL="slurm-wlm munge slurmrestd slurm-wlm-jwt-plugin libslurm-dev"

# Print the packages of the list $1 that are not installed, one per line.
# One dpkg-query call for the whole list keeps the no-op path fast.
missing() {
    # shellcheck disable=SC2086
    installed=$(dpkg-query -W -f='${Package} ${Status}\n' $1 2>/dev/null |
                awk '$NF == "installed" { printf "%s ", $1 }' || true)
    for p in $1; do
        case " $installed" in
        *" $p "*) ;;
        *) printf '%s\n' "$p" ;;
        esac
    done
}

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps.sh: no dpkg-query; not a Debian system, install the packages by hand:" >&2
    echo "deps.sh:   $REQUIRED $OPTIONAL" | tr '\n' ' ' >&2
    echo >&2
    exit 0
fi

# words LIST: the lines of LIST joined by single spaces, no trailing blank.
words() { tr '\n' ' ' | sed 's/ *$//'; }

need=$(missing "$REQUIRED" | words)
opt=""
if [ "${SLUICE_DEPS_NO_OPTIONAL:-0}" != 1 ]; then
    opt=$(missing "$OPTIONAL" | words)
fi

# Fast path: nothing to do, no network.
if [ -z "$need" ] && [ -z "$opt" ] && has_npm; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "deps.sh: missing packages ($need $opt$(has_npm || echo ' npm')) and not root, no sudo" >&2
    exit 1
fi

APT="env DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends"

echo "deps.sh: apt-get update"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q

if [ -n "$need" ]; then
    echo "deps.sh: installing $need"
    # shellcheck disable=SC2086
    $SUDO $APT install $need
fi

if ! has_npm; then
    echo "deps.sh: installing npm (this nodejs has none)"
    # shellcheck disable=SC2086
    $SUDO $APT install npm
fi

if [ -n "$opt" ]; then
    echo "deps.sh: installing optional $opt"
    # shellcheck disable=SC2086
    if ! $SUDO $APT install $opt; then
        echo "deps.sh: warning: optional packages ($opt) not installed;" \
             "bench/run.sh, bench/slurm_rest.sh and slurm_lab.t will skip Slurm" >&2
    fi
fi

# Verify: every required package must now be installed.
left=$(missing "$REQUIRED" | words)
if [ -n "$left" ]; then
    echo "deps.sh: still missing after install: $left" >&2
    exit 1
fi
if ! has_npm; then
    echo "deps.sh: still no npm after install" >&2
    exit 1
fi
echo "deps.sh: done"
