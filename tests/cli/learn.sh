#!/usr/bin/env bash
# learn.sh - a small GPT learns tinyshakespeare: the validation loss falls from ln 65 = 4.17 to
# below 2.5 within 300 steps (about 10 s on 2 cores). Settings: d_model 64, 2 layers, 4 heads,
# block 32, batch 16, lr 3e-3 (warmup 30, cosine to 3e-4), 20 validation batches.
source "$(dirname "$0")/lib.bash"

[ -f "$SHAKESPEARE" ] || { echo "skip: $SHAKESPEARE not found"; exit 77; }
"$STRIX" train --data "$SHAKESPEARE" --d-model 64 --layers 2 --heads 4 --block 32 --batch 16 \
    --lr 3e-3 --warmup 30 --steps 300 --eval-every 100 --eval-batches 20 --out learn.st \
    >learn.out 2>learn.err || { fail "training failed: $(cat learn.err)"; finish; }
cat learn.out
first=$(grep -m1 '^step 100: val loss' learn.out | awk '{print $5}')
final=$(grep '^step 300: val loss' learn.out | awk '{print $5}')
[ -n "$final" ] || { fail "no val loss at step 300"; finish; }
awk -v v="$final" 'BEGIN { exit !(v < 2.5) }' && ok "val loss $final < 2.5 at step 300" \
    || fail "val loss $final is not below 2.5"
awk -v a="$first" -v b="$final" 'BEGIN { exit !(b < a) }' \
    && ok "val loss falls ($first -> $final)" \
    || fail "val loss did not fall ($first -> $final)"
finish
