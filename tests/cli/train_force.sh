#!/usr/bin/env bash
# train_force.sh - a new `strix train` into an existing checkpoint (another run's, issue 10 item 8)
# is refused with exit 2 and one line naming --force, leaving the file byte for byte; with --force
# it is replaced (and so is its metrics log); --resume needs no --force. The refusal is
# out_check's (tools/strix/out_file.c).
source "$(dirname "$0")/lib.bash"

RUN=("${TINY[@]}" --eval-batches 2 --steps 4 --eval-every 2)
head -c 20000 "$SHAKESPEARE" >corpus.txt
"$STRIX" train --data corpus.txt --out m.safetensors "${RUN[@]}" >/dev/null 2>&1 || fail "first run"
cp m.safetensors first.safetensors

expect_error "second run without --force" "--force" \
    "$STRIX" train --data corpus.txt --out m.safetensors "${RUN[@]}" --seed 2
"$STRIX" train --data corpus.txt --out m.safetensors "${RUN[@]}" --seed 2 >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] && ok "exit 2" || fail "second run without --force: exit $rc, expected 2"
same_file "the checkpoint is untouched" first.safetensors m.safetensors

"$STRIX" train --data corpus.txt --out m.safetensors "${RUN[@]}" --seed 2 --force >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 0 ] && ok "--force: exit 0" || fail "--force: exit $rc: $(cat err.txt)"
grep -q "note: m.safetensors exists and will be replaced" err.txt && ok "--force says it replaces" \
    || fail "no note: $(cat err.txt)"
cmp -s first.safetensors m.safetensors && fail "--force did not replace the checkpoint" \
    || ok "--force replaced the checkpoint"
[ "$(grep -c val_loss m.metrics.jsonl)" -eq 2 ] && ok "and truncated its log" \
    || fail "log: $(cat m.metrics.jsonl)"
"$STRIX" train --data corpus.txt --out r.safetensors "${RUN[@]}" --stop-after 2 >/dev/null 2>&1
"$STRIX" train --resume r.safetensors >/dev/null 2>&1 && ok "--resume needs no --force" \
    || fail "--resume refused"
finish
