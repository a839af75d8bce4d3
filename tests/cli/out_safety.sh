#!/usr/bin/env bash
# out_safety.sh - `strix train` never destroys data and never trains for nothing: --out is
# checked before training starts (the corpus itself, a file inside the --data directory, an
# existing file that is not a strix checkpoint, a directory, a path ending in '/', an empty path,
# a missing or unwritable directory are refused with exit 2 and one line), and so is an existing
# strix checkpoint of another run (its step named; replacing it needs --force, continuing it
# --resume). --data accepts only regular files (or a directory,
# whose non-regular entries are skipped and counted) of at most 1 GiB. Output errors of
# `strix sample` (a full disk) are reported with exit 1. Two runs never train into one --out.
source "$(dirname "$0")/lib.bash"

RUN=("${TINY[@]}" --steps 4 --eval-every 2 --eval-batches 2)
head -c 20000 "$SHAKESPEARE" >corpus.txt
corpus_sum=$(sha256sum <corpus.txt)

# expect_refused NAME PHRASE CMD...: exit status exactly 2, one line naming the problem.
expect_refused() {
    local name=$1
    expect_error "$@"
    local rc
    "${@:3}" >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name: exit status $rc, expected 2"
}

# ---- the corpus is never replaced
expect_refused "--out is --data" "is the corpus --data 'corpus.txt'" \
    "$STRIX" train --data corpus.txt --out corpus.txt "${RUN[@]}"
expect_refused "--out is --data (other spelling)" "is the corpus --data" \
    "$STRIX" train --data ./corpus.txt --out "$WORK/corpus.txt" "${RUN[@]}"
ln -s corpus.txt alias.txt
expect_refused "--out reaches --data through a link" "is the corpus --data 'alias.txt'" \
    "$STRIX" train --data alias.txt --out corpus.txt "${RUN[@]}"
ln corpus.txt hardlink.txt
expect_refused "--out is a hard link of --data" "is the corpus --data 'corpus.txt'" \
    "$STRIX" train --data corpus.txt --out hardlink.txt "${RUN[@]}"
mkdir texts && cp corpus.txt texts/a.txt
expect_refused "--out inside the --data directory" "lies inside the corpus directory 'texts'" \
    "$STRIX" train --data texts --out texts/model.safetensors "${RUN[@]}"
mkdir texts/sub
expect_refused "--out inside the --data directory (other spelling)" \
    "lies inside the corpus directory" \
    "$STRIX" train --data texts/ --out texts/sub/../m.st "${RUN[@]}"
[ "$(sha256sum <corpus.txt)" = "$corpus_sum" ] && ok "corpus untouched" || fail "corpus changed"
[ -e texts/model.safetensors ] && fail "a checkpoint was written inside the corpus directory"

# ---- an existing file that is not a strix checkpoint is never replaced
echo "my notes" >notes.txt
expect_refused "--out is a text file" "'notes.txt' exists and is not a strix checkpoint" \
    "$STRIX" train --data corpus.txt --out notes.txt "${RUN[@]}"
cp "$ROOT/tests/golden/io/ref-f32.st" other.safetensors
expect_refused "--out is a foreign safetensors file" "is not a strix checkpoint" \
    "$STRIX" train --data corpus.txt --out other.safetensors "${RUN[@]}"
[ "$(cat notes.txt)" = "my notes" ] && ok "notes untouched" || fail "notes.txt changed"
same_file "foreign safetensors untouched" "$ROOT/tests/golden/io/ref-f32.st" other.safetensors

# ---- a bad --out is refused before training (not at the first checkpoint)
mkdir outdir
expect_refused "--out is a directory" "--out 'outdir' is a directory" \
    "$STRIX" train --data corpus.txt --out outdir "${RUN[@]}"
expect_refused "--out ends in /" "ends in '/'" \
    "$STRIX" train --data corpus.txt --out newdir/ "${RUN[@]}"
expect_refused "--out is empty" "--out is empty" \
    "$STRIX" train --data corpus.txt --out "" "${RUN[@]}"
expect_refused "--out in a missing directory" \
    "cannot write the checkpoint no/such/m.st: directory 'no/such': does not exist" \
    "$STRIX" train --data corpus.txt --out no/such/m.st "${RUN[@]}"
expect_refused "--out under a file" "directory 'notes.txt': Not a directory" \
    "$STRIX" train --data corpus.txt --out notes.txt/m.st "${RUN[@]}"
expect_refused "--out is a device" "--out '/dev/null' is not a regular file" \
    "$STRIX" train --data corpus.txt --out /dev/null "${RUN[@]}"
# an unwritable directory: /proc refuses new files even to root
expect_refused "--out in an unwritable directory" "cannot write the checkpoint /proc/m.st" \
    "$STRIX" train --data corpus.txt --out /proc/m.st "${RUN[@]}"
if [ "$(id -u)" -ne 0 ]; then
    mkdir ro && chmod 555 ro
    expect_refused "--out in a read-only directory" "cannot write the checkpoint ro/m.st" \
        "$STRIX" train --data corpus.txt --out ro/m.st "${RUN[@]}"
    chmod 755 ro
fi
# refused before training: the line comes before any "step" output, nothing is trained
"$STRIX" train --data corpus.txt --out outdir "${RUN[@]}" >early.out 2>&1
grep -q "step" early.out && fail "training started before --out was checked: $(cat early.out)" \
    || ok "bad --out refused before training"

# ---- a trained checkpoint of another run is not replaced without --force (or --resume)
"$STRIX" train --data corpus.txt --out model.safetensors "${RUN[@]}" >/dev/null 2>&1 \
    || fail "first run"
model_sum=$(sha256sum <model.safetensors)
expect_refused "a second run into a trained checkpoint" \
    "--out 'model.safetensors' holds a trained checkpoint (step 4 of 4); pass --force to replace it or --resume to continue it" \
    "$STRIX" train --data corpus.txt --out model.safetensors "${RUN[@]}" --seed 5
[ "$(sha256sum <model.safetensors)" = "$model_sum" ] && ok "the trained checkpoint untouched" \
    || fail "the trained checkpoint changed"
ln -s model.safetensors model_link.st
expect_refused "a second run into a trained checkpoint through a link" \
    "--out 'model_link.st' holds a trained checkpoint (step 4 of 4)" \
    "$STRIX" train --data corpus.txt --out model_link.st "${RUN[@]}"

# ---- --data: regular files only, at most 1 GiB
expect_error "--data /dev/zero" "'/dev/zero' is not a regular file" \
    timeout 10 "$STRIX" train --data /dev/zero --out z.st "${RUN[@]}"
expect_error "--data /dev/urandom" "'/dev/urandom' is not a regular file" \
    timeout 10 "$STRIX" train --data /dev/urandom --out z.st "${RUN[@]}"
mkfifo pipe
expect_error "--data a FIFO" "'pipe' is not a regular file" \
    timeout 10 "$STRIX" train --data pipe --out z.st "${RUN[@]}"
truncate -s 2G huge.txt   # sparse: no disk used, refused from its size before reading
expect_error "--data over 1 GiB" "'huge.txt' is 2.00 GiB (2147483648 bytes); the limit is 1 GiB" \
    timeout 10 "$STRIX" train --data huge.txt --out z.st "${RUN[@]}"
# a directory: devices, FIFOs, links, hidden files, subdirectories and binaries are skipped
mkdir mixed && cp corpus.txt mixed/a.txt && cp corpus.txt mixed/.hidden
ln -s /dev/zero mixed/zero && mkfifo mixed/fifo && mkdir mixed/sub && printf 'x\0y' >mixed/bin
: >mixed/empty
timeout 20 "$STRIX" train --data mixed --out mixed.st "${RUN[@]}" >mixed.out 2>&1
rc=$?
[ $rc -eq 0 ] && ok "directory with devices and FIFOs loads" || fail "mixed directory: exit $rc"
grep -q "20000 characters in 1 file (6 skipped: 2 binary or empty, 4 hidden, links, " mixed.out \
    && ok "directory line counts read and skipped files" \
    || fail "directory line: $(grep corpus mixed.out)"

# ---- sample: a full disk is an error, not a success
if [ -w /dev/full ]; then
    "$STRIX" sample --model model.safetensors --tokens 20 >/dev/full 2>full.err
    rc=$?
    [ $rc -eq 1 ] && ok "sample >/dev/full: exit 1" || fail "sample >/dev/full: exit $rc"
    grep -q "cannot write the sample: No space left on device" full.err \
        && ok "sample >/dev/full: message" || fail "sample >/dev/full: $(cat full.err)"
    "$STRIX" sample --model model.safetensors --tokens 100000 >/dev/full 2>full.err
    rc=$?
    [ $rc -eq 1 ] && [ "$(wc -l <full.err)" -eq 1 ] && ok "long sample >/dev/full: one line, exit 1" \
        || fail "long sample >/dev/full: exit $rc: $(cat full.err)"
    "$STRIX" --version >/dev/full 2>/dev/null && fail "--version >/dev/full exits 0" \
        || ok "--version >/dev/full fails"
else
    echo "note: no writable /dev/full; the full-disk checks are skipped"
fi
# ---- two runs never train into one --out: the second is refused while the first holds the lock
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 1000000 --eval-every 1000000 \
    --out locked.st >/dev/null 2>locked.err &
first=$!
for _ in $(seq 50); do [ -e locked.st.lock ] && break; sleep 0.1; done
expect_refused "a second run into the same --out" "another strix process is training into" \
    "$STRIX" train --data corpus.txt "${RUN[@]}" --out locked.st
kill -INT "$first"
wait "$first" || fail "the first run did not stop cleanly: $(cat locked.err)"
[ -e locked.st.lock ] && fail "lock file left behind" || ok "lock file removed at exit"
rm -f locked.st locked.st.metrics.jsonl # the interrupted run's files (replacing: --force)
"$STRIX" train --data corpus.txt "${RUN[@]}" --out locked.st >/dev/null 2>&1 \
    && ok "--out usable again once the first run ended" || fail "--out still locked"

left=$(find . -name '.strix-tmp-*' -o -name '*.tmp.[0-9]*')
[ -n "$left" ] && fail "temp files left behind: $left"
finish
