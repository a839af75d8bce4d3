#!/usr/bin/env bash
# resume_edges.sh - the edges of `strix train --resume` and of stopping a run: the checkpoint
# records the corpus's absolute path, so a resume works from any directory; a moved corpus is
# named with --data (checked by size and hash, a different text is refused); a finished but
# damaged checkpoint is reported, never called finished; the summary of a run stopped before
# its first evaluation says so instead of "nan"; a second Ctrl-C (or SIGTERM) during the final
# save is held off: the checkpoint completes, the stop line is printed, exit 0. Also: --stride
# needs --sequential, --warmup beyond --steps warns, `strix --version` takes no arguments.
source "$(dirname "$0")/lib.bash"

RUN=("${TINY[@]}" --steps 30 --eval-every 10 --eval-batches 2)
mkdir -p proj/data elsewhere
head -c 30000 "$SHAKESPEARE" >proj/data/corpus.txt

# ---- a relative --data resumes from another directory; the path stored is absolute
(cd proj && "$STRIX" train --data data/corpus.txt "${RUN[@]}" --out full.st >/dev/null 2>&1) \
    || fail "uninterrupted run"
(cd proj && "$STRIX" train --data data/corpus.txt "${RUN[@]}" --out part.st --stop-after 5 \
    >part.out 2>&1) || fail "interrupted run"
grep -q "val loss n/a (no evaluation yet)" proj/part.out \
    && ok "summary before the first evaluation: n/a" || fail "summary: $(grep stopped proj/part.out)"
grep -q "val loss nan" proj/part.out && fail "summary still says nan"
/usr/bin/python3 - proj/part.st "$WORK/proj/data/corpus.txt" <<'PY' \
    && ok "checkpoint stores the absolute corpus path" || fail "data_path is not absolute"
import json, os, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
meta = json.loads(raw[8:8 + n])["__metadata__"]
sys.exit(0 if meta["data_path"] == os.path.realpath(sys.argv[2]) else 1)
PY
expect_error "--stop-after not past the checkpoint" "is not past the checkpoint's step 5" \
    "$STRIX" train --resume proj/part.st --out proj/again.st --stop-after 5
cp proj/part.st elsewhere/part.st
(cd elsewhere && "$STRIX" train --resume part.st >resume.out 2>&1) \
    || fail "resume from another directory: $(cat elsewhere/resume.out)"
same_file "resumed from elsewhere == uninterrupted" proj/full.st elsewhere/part.st

# ---- the corpus moved: say so, accept --data naming the same text, refuse another text
cp proj/part.st moved.st
mv proj/data/corpus.txt relocated.txt
expect_error "moved corpus" "no longer exists; if it moved, pass --data PATH" \
    "$STRIX" train --resume moved.st
expect_error "--data naming another text" "'other.txt' is not the corpus of moved.st" \
    bash -c "head -c 30000 '$SHAKESPEARE' | tr a-z A-Z >other.txt && \
             '$STRIX' train --resume moved.st --data other.txt"
"$STRIX" train --resume moved.st --data relocated.txt >moved.out 2>&1 \
    || fail "resume with --data at the new place: $(cat moved.out)"
# the same run, except that data_path now records the corpus's new place
/usr/bin/python3 - proj/full.st moved.st "$WORK/relocated.txt" <<'PY' \
    && ok "resumed with the moved corpus == uninterrupted (new path recorded)" \
    || fail "resumed with the moved corpus differs from the uninterrupted run"
import json, struct, sys
def parts(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    return head, raw[8 + n:]
(ha, da), (hb, db) = parts(sys.argv[1]), parts(sys.argv[2])
path_b = hb["__metadata__"].pop("data_path")
ha["__metadata__"].pop("data_path")
sys.exit(0 if ha == hb and da == db and path_b == sys.argv[3] else 1)
PY
# the same file under another spelling is accepted too (equal realpath)
mv relocated.txt proj/data/corpus.txt
cp proj/part.st spelled.st
"$STRIX" train --resume spelled.st --data "proj/./data/../data/corpus.txt" >/dev/null 2>&1 \
    || fail "resume with --data spelled differently"
same_file "--data spelled differently == uninterrupted" proj/full.st spelled.st

# ---- a finished checkpoint is validated before "nothing to do"
/usr/bin/python3 - proj/full.st damaged.st <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
body = raw[8 + n:]
# drop the last tensor (an AdamW moment) and its bytes: a valid safetensors file, a bad checkpoint
last = max((k for k in head if k != "__metadata__"), key=lambda k: head[k]["data_offsets"][1])
begin, end = head[last]["data_offsets"]
assert end == len(body)
del head[last]
text = json.dumps(head).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + body[:begin])
PY
expect_error "finished but damaged checkpoint" "damaged.st" "$STRIX" train --resume damaged.st
"$STRIX" train --resume proj/full.st >finished.out 2>&1 && grep -q "nothing to do" finished.out \
    && ok "finished and sound: nothing to do" || fail "finished run: $(cat finished.out)"

# ---- flags: --stride needs --sequential; --warmup beyond --steps warns; --version alone
expect_error "--stride without --sequential" "--stride applies only with --sequential" \
    "$STRIX" train --data proj/data/corpus.txt "${RUN[@]}" --stride 4 --out s.st
"$STRIX" train --data proj/data/corpus.txt "${RUN[@]}" --stride 4 --out s.st >/dev/null 2>&1
[ $? -eq 2 ] && ok "--stride without --sequential: exit 2" || fail "--stride: wrong exit status"
"$STRIX" train --data proj/data/corpus.txt "${TINY[@]}" --steps 5 --warmup 50 --eval-every 5 \
    --eval-batches 2 --out w.st >warm.out 2>warm.err
rc=$?
[ $rc -eq 0 ] && ok "--warmup > --steps accepted" || fail "--warmup > --steps: exit $rc"
[ "$(grep -c 'warning: --warmup 50 exceeds --steps 5' warm.err)" -eq 1 ] \
    && ok "--warmup > --steps: one warning line" || fail "warmup warning: $(cat warm.err)"
expect_error "--version with an argument" "--version takes no arguments (got 'extra')" \
    "$STRIX" --version extra
expect_error "--help with an argument" "--help takes no arguments" "$STRIX" --help train

# ---- a second Ctrl-C and a SIGTERM during the final save: held off, exit 0, file complete
LONG=(--data proj/data/corpus.txt "${TINY[@]}" --steps 100000 --eval-every 100000
      --eval-batches 2 --log-every 1 --save-delay 1.5)
"$STRIX" train "${LONG[@]}" --out sig.st >sig.out 2>sig.err &
pid=$!
for _ in $(seq 1 500); do
    grep -q "^step 3/" sig.err 2>/dev/null && break
    sleep 0.01
done
kill -INT "$pid"      # the first: finish the step, then save (which sleeps 1.5 s)
sleep 0.5
kill -INT "$pid"      # during the save
sleep 0.2
kill -TERM "$pid"     # also during the save
wait "$pid"
rc=$?
[ $rc -eq 0 ] && ok "second Ctrl-C during the save: exit 0" || fail "second Ctrl-C: exit $rc"
grep -q "interrupted at step" sig.err && ok "second Ctrl-C: stop line printed" \
    || fail "no stop line: $(tail -2 sig.err)"
grep -q "^stopped:" sig.out && ok "second Ctrl-C: summary printed" || fail "no summary"
"$STRIX" sample --model sig.st --tokens 5 >/dev/null 2>&1 && ok "checkpoint after the signals loads" \
    || fail "checkpoint after the signals is damaged"
ls -A | grep -qE '^\.strix-tmp-|\.tmp\.[0-9]+$' && fail "temp files left behind: $(ls -A)"
finish
