#!/usr/bin/env bash
# descriptors.sh - `strix` started with standard descriptors closed (`2>&-`, `>&-`, `<&-`) opens
# /dev/null onto them first, so no file it opens later (the lock, a checkpoint's temp file)
# becomes stdout or stderr: the progress lines never land in <out>.lock and the checkpoint is
# valid.
source "$(dirname "$0")/lib.bash"

head -c 20000 "$SHAKESPEARE" >corpus.txt
LONG=(--data corpus.txt "${TINY[@]}" --steps 1000000 --eval-every 3 --eval-batches 2 --log-every 1)

# ---- stderr closed, during the run: the lock file stays empty
"$STRIX" train "${LONG[@]}" --out closed.st >run.out 2>&- &
pid=$!
for _ in $(seq 200); do grep -q "^step 9: val loss" run.out 2>/dev/null && break; sleep 0.1; done
grep -q "^step 9: val loss" run.out || fail "the run with stderr closed did not reach step 9"
[ -e closed.st.lock ] && ok "the lock file exists" || fail "no lock file"
[ -s closed.st.lock ] && fail "progress lines written into the lock file: \
$(head -c 200 closed.st.lock)" || ok "the lock file is empty (stderr closed)"
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && ok "stopped with exit 0" || fail "exit $rc"
"$STRIX" sample --model closed.st --tokens 10 >/dev/null 2>&1 && ok "its checkpoint loads" \
    || fail "the checkpoint written with stderr closed does not load"

# ---- all three closed: a short run ends with a valid checkpoint and exit 0
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 6 --eval-every 2 --eval-batches 2 \
    --out all.st <&- >&- 2>&-
rc=$?
[ $rc -eq 0 ] && ok "0, 1 and 2 closed: exit 0" || fail "0, 1 and 2 closed: exit $rc"
"$STRIX" train --resume all.st >resume.out 2>&1
grep -q "already finished its 6 steps" resume.out && ok "0, 1 and 2 closed: the checkpoint is valid" \
    || fail "0, 1 and 2 closed: $(cat resume.out)"
[ -e all.st.lock ] && fail "lock file left"
# sample with stdout closed writes nowhere: no crash, no text in any file
"$STRIX" sample --model all.st --tokens 10 >&- 2>err.txt
rc=$?
[ $rc -eq 0 ] && ok "sample with stdout closed: exit 0 (written to /dev/null)" \
    || fail "sample with stdout closed: exit $rc: $(cat err.txt)"
finish
