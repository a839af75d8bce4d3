#!/usr/bin/env bash
# default_corpus.sh - with no --data, `strix train` trains on the fortunes package's text files;
# when that package is missing it says so, names the package, and exits non-zero. The missing
# case hides /usr/share/games behind an empty directory in a private mount namespace (needs
# root and unshare, as in CI; skipped with a note otherwise).
source "$(dirname "$0")/lib.bash"

RUN=("${TINY[@]}" --steps 3 --eval-every 3 --eval-batches 1)

if [ -d /usr/share/games/fortunes ]; then
    "$STRIX" train "${RUN[@]}" --out f.st >f.out 2>f.err || fail "default corpus run: $(cat f.err)"
    grep -q "corpus /usr/share/games/fortunes:" f.out && ok "no --data trains on fortunes" \
        || fail "no corpus line naming fortunes: $(cat f.out)"
else
    echo "note: fortunes is not installed; the default-corpus run is skipped"
fi

mkdir empty
if unshare -m true 2>/dev/null; then
    expect_error "default corpus missing" "install the Debian package 'fortunes'" \
        unshare -m sh -c 'mount --bind "$1" /usr/share/games 2>/dev/null \
            || mount --bind "$1" /usr/share; shift; exec "$@"' sh "$WORK/empty" \
        "$STRIX" train "${RUN[@]}" --out g.st
    [ -e g.st ] && fail "a checkpoint was written without a corpus" || ok "nothing written"
else
    echo "note: no private mount namespace here; the missing-corpus check is skipped"
fi
finish
