#!/usr/bin/env bash
# deps.sh - makes sure the distribution packages strix builds on are installed (the README's
# package line); `make build`, `make run` and `make test` call it before CMake.
#
# On Debian/Ubuntu (dpkg-query present) each package is checked with dpkg-query. When some are
# missing:
#   - as root with apt-get: prints the exact `apt-get install -y ...` line, runs it (running
#     `apt-get update` first when apt does not know a package yet) and exits with its status;
#   - otherwise: prints the one line to run (`sudo apt-get install -y ...`) and exits 1.
# Without dpkg-query (another distribution) it checks nothing and exits 0: CMake then stops naming
# any missing library. It never removes or upgrades a package.
#
# Usage: scripts/deps.sh [--check]   (--check: report only, never install; exit 1 when missing)
# Environment: STRIX_SKIP_DEPS=1 skips the whole check (`make test SKIP_DEPS=1`).
set -u

PACKAGES=(build-essential cmake libopenblas-dev libcjson-dev libpcre2-dev libutf8proc-dev
          libcmocka-dev fortunes libopenmpi-dev openmpi-bin)

if [ "${STRIX_SKIP_DEPS:-}" = 1 ]; then
    exit 0
fi
check_only=0
if [ "${1:-}" = --check ]; then
    check_only=1
elif [ $# -gt 0 ]; then
    echo "deps.sh: unknown argument '$1' (usage: scripts/deps.sh [--check])" >&2
    exit 2
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "strix: no dpkg-query (not Debian/Ubuntu): not checking packages; install the" \
         "equivalents of: ${PACKAGES[*]}" >&2
    exit 0
fi

# A package counts as installed when dpkg's status ends in " installed" ("install ok installed",
# "hold ok installed"); unknown, removed or half-installed packages are missing.
missing=()
for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) || status=""
    case "$status" in
        *" installed") ;;
        *) missing+=("$pkg") ;;
    esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y ${missing[*]}"
uid=$(id -u 2>/dev/null) || uid=""
if [ "$check_only" = 1 ] || [ "$uid" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    if [ "$uid" = 0 ]; then
        echo "strix: missing build packages: ${missing[*]}; install them with: $line" >&2
    else
        echo "strix: missing build packages: ${missing[*]}; install them with: sudo $line" >&2
    fi
    exit 1
fi

# Root with apt-get: say what runs, then run it. apt-cache knows a package only once the package
# lists were fetched (a fresh container has none), so update first when one is unknown.
export DEBIAN_FRONTEND=noninteractive
for pkg in "${missing[@]}"; do
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then
        echo "strix: fetching the package lists: apt-get update"
        if ! apt-get update -qq; then
            echo "strix: apt-get update failed; install the packages with: $line" >&2
            exit 1
        fi
        break
    fi
done
echo "strix: installing missing build packages: $line"
if ! apt-get install -y "${missing[@]}"; then
    echo "strix: '$line' failed (see above)" >&2
    exit 1
fi
exit 0
