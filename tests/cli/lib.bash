# lib.bash - helpers shared by the strix command tests (tests/cli/*.sh source it; it is not a test
# itself: ctest runs only *.sh). Each test works in its own mktemp -d folder under /tmp, removed at
# exit, and ends with `finish`, which exits 1 if any check failed.
set -u
: "${STRIX:?set STRIX to the path of the strix command}"
ROOT=$(pwd)
SHAKESPEARE="$ROOT/../shared/data/tinyshakespeare.txt"
WORK=$(mktemp -d /tmp/strix_cli.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
FAILS=0
# A tiny model: trains 40 steps in well under a second.
TINY=(--d-model 32 --layers 1 --heads 2 --block 16 --batch 4)

fail() {
    echo "FAIL: $*" >&2
    FAILS=$((FAILS + 1))
}

ok() { echo "ok: $*"; }

# expect_error NAME PHRASE CMD...: CMD must exit non-zero without crashing (exit < 128) and print
# exactly one line on stderr, containing PHRASE.
expect_error() {
    local name=$1 phrase=$2
    shift 2
    "$@" >"$WORK/stdout" 2>"$WORK/stderr"
    local rc=$? lines
    lines=$(wc -l <"$WORK/stderr")
    if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ]; then
        fail "$name: exit status $rc"
    elif [ "$lines" -ne 1 ]; then
        fail "$name: $lines lines on stderr:"; cat "$WORK/stderr" >&2
    elif ! grep -qF -- "$phrase" "$WORK/stderr"; then
        fail "$name: stderr lacks '$phrase':"; cat "$WORK/stderr" >&2
    else
        ok "$name (exit $rc): $(cat "$WORK/stderr")"
    fi
}

# same_file NAME A B: byte-identical files.
same_file() {
    if cmp -s "$2" "$3"; then ok "$1"; else fail "$1: $2 and $3 differ"; fi
}

finish() {
    if [ "$FAILS" -ne 0 ]; then
        echo "$FAILS check(s) failed"
        exit 1
    fi
    echo "all checks passed"
    exit 0
}
