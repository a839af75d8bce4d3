#!/usr/bin/env bash
# digits_files.sh - examples/digits --explain writes its SVG pictures atomically, like checkpoints:
# on a full disk (a 128 KiB tmpfs, mounted when the test runs as root and may mount) the run
# fails with the reason ("No space left on device"), the old picture stays as it was and no
# 0-byte, partial or temp file is left; a directory that cannot hold the pictures is an error
# naming why; a good run leaves complete pictures and no temp files. A checkpoint of `strix train`
# on the full disk fails the same way (exit 1, the reason, no file). The binary: $DIGITS, else
# `digits` next to $STRIX.
source "$(dirname "$0")/lib.bash"

DIGITS=${DIGITS:-$(dirname "$STRIX")/digits}
case "$DIGITS" in /*) ;; *) DIGITS="$ROOT/$DIGITS" ;; esac # lib.bash has cd'd into $WORK
DATA="$ROOT/../shared/data/digits.csv"
[ -x "$DIGITS" ] || { echo "no digits binary at $DIGITS"; exit 77; }
[ -f "$DATA" ] || { echo "no $DATA"; exit 77; }
RUN=(--data "$DATA" --model cnn --epochs 1 --no-gate)
temps() { find "$1" -name '.strix-tmp-*' -o -name '*.tmp.[0-9]*'; }

# ---- a good run: 17 complete pictures, nothing else
"$DIGITS" "${RUN[@]}" --explain good >good.out 2>good.err || fail "digits --explain: $(cat good.err)"
n=$(find good -name '*.svg' | wc -l)
[ "$n" -eq 17 ] && ok "17 pictures written" || fail "$n pictures in good/: $(ls -A good)"
complete=0
for f in good/*.svg; do tail -c 7 "$f" | grep -q '</svg>' && complete=$((complete + 1)); done
[ "$complete" -eq 17 ] && ok "every picture ends with </svg>" || fail "$complete of 17 complete"
[ -z "$(temps good)" ] && ok "no temp files beside the pictures" || fail "left: $(temps good)"

# ---- a directory that cannot hold them: an error with the reason
echo "not a directory" >afile
"$DIGITS" "${RUN[@]}" --explain afile/pics >bad.out 2>bad.err
rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "Not a directory" bad.err \
    && ok "--explain under a file: exit $rc, $(tail -1 bad.err)" \
    || fail "--explain under a file: exit $rc, $(cat bad.err)"

# ---- a full disk
mkdir full
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=128k tmpfs full 2>/dev/null; then
    trap 'umount "$WORK/full" 2>/dev/null; rm -rf "$WORK"' EXIT
    mkdir full/pics
    head -c 40000 /dev/zero | tr '\0' 'o' >full/pics/digits_lrp.svg # an older picture
    old_sum=$(sha256sum <full/pics/digits_lrp.svg)
    "$DIGITS" "${RUN[@]}" --explain full/pics >full.out 2>full.err
    rc=$?
    [ $rc -ne 0 ] && [ $rc -lt 128 ] && ok "a full disk: exit $rc" || fail "a full disk: exit $rc"
    grep -q "digits_lrp.svg.*No space left on device" full.err \
        && ok "the error names the picture and the reason: $(tail -1 full.err)" \
        || fail "no reason in the error: $(cat full.err)"
    [ "$(sha256sum <full/pics/digits_lrp.svg)" = "$old_sum" ] \
        && ok "the older picture is left as it was" || fail "the older picture was changed"
    [ -z "$(temps full)" ] && ok "no temp file left on the full disk" || fail "left: $(temps full)"
    others=$(find full/pics -name '*.svg' ! -name digits_lrp.svg)
    [ -z "$others" ] && ok "no other (partial) picture" || fail "partial pictures: $others"
    # a new picture on a full disk: none is created at all
    rm full/pics/digits_lrp.svg
    head -c 120000 /dev/zero >full/filler 2>/dev/null
    "$DIGITS" "${RUN[@]}" --explain full/pics >/dev/null 2>full2.err
    [ $? -ne 0 ] && [ -z "$(find full/pics -name '*.svg')" ] && [ -z "$(temps full)" ] \
        && ok "a full disk leaves no 0-byte picture" \
        || fail "a full disk left: $(ls -la full/pics) $(cat full2.err)"
    # a checkpoint on the full disk: exit 1 with the reason, neither a file nor a temp file
    "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 2 --eval-every 2 --eval-batches 1 \
        --out full/m.st >/dev/null 2>train.err
    rc=$?
    [ $rc -eq 1 ] && tail -1 train.err | grep -q "cannot write 'full/m.st': No space left on device" \
        && ok "a checkpoint on a full disk: exit 1, the reason" \
        || fail "a checkpoint on a full disk: exit $rc: $(cat train.err)"
    [ ! -e full/m.st ] && [ -z "$(temps full)" ] && [ ! -e full/m.st.lock ] \
        && ok "no checkpoint, temp or lock file left on the full disk" \
        || fail "left on the full disk: $(ls -A full)"
    umount full || fail "cannot unmount the test tmpfs"
else
    echo "note: cannot mount a small tmpfs (not root, or no permission): full-disk checks skipped"
fi
finish
