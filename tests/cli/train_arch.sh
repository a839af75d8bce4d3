#!/usr/bin/env bash
# train_arch.sh - `strix train --arch` for every sequence architecture: a run of each lowers the
# val loss; the checkpoint records the architecture and its config, so sample, explain, export
# and --resume need no model flags; interrupted + resumed == uninterrupted, byte for byte;
# sampling is deterministic; flags of another architecture and bad values are refused with one
# line and exit 2, touching nothing.
source "$(dirname "$0")/lib.bash"

ARCHS=(rnn lstm gru mamba rwkv retnet)
for a in "${ARCHS[@]}"; do
    RUN=(--arch "$a" --data "$SHAKESPEARE" --d-model 24 --layers 2 --block 16 --batch 4
         --steps 40 --eval-every 20 --eval-batches 4 --lr 3e-3)
    "$STRIX" train "${RUN[@]}" --out "$a.st" >"$a.out" 2>&1 || fail "$a: train: $(tail -2 "$a.out")"
    grep -q "^model: $a, 2 layers, d_model 24" "$a.out" && ok "$a: setup line names the arch" \
        || fail "$a: setup line: $(grep '^model' "$a.out")"
    # the first evaluation (step 20) is above the last (step 40): the model learns
    v20=$(sed -n 's/^step 20: val loss //p' "$a.out"); v40=$(sed -n 's/^step 40: val loss //p' "$a.out")
    awk -v a="$v20" -v b="$v40" 'BEGIN { exit !(b < a) }' \
        && ok "$a: val loss $v20 -> $v40" || fail "$a: val loss $v20 -> $v40"
    "$STRIX" train "${RUN[@]}" --out "$a.part.st" --stop-after 13 >/dev/null 2>&1 || fail "$a: stop"
    "$STRIX" train --resume "$a.part.st" >"$a.res" 2>&1 || fail "$a: resume: $(tail -1 "$a.res")"
    same_file "$a: interrupted + resumed == uninterrupted" "$a.st" "$a.part.st"
    "$STRIX" sample --model "$a.st" --prompt "ROMEO:" --tokens 40 --seed 3 >"$a.s1" 2>&1 \
        || fail "$a: sample: $(cat "$a.s1")"
    "$STRIX" sample --model "$a.st" --prompt "ROMEO:" --tokens 40 --seed 3 >"$a.s2" 2>&1
    same_file "$a: sample is deterministic" "$a.s1" "$a.s2"
    [ "$(head -c 6 "$a.s1")" = "ROMEO:" ] && [ "$(wc -c <"$a.s1")" -ge 46 ] \
        && ok "$a: sample prints the prompt and 40 bytes" || fail "$a: sample: $(cat "$a.s1")"
    "$STRIX" explain --model "$a.st" --prompt "ROMEO: Good mor" --json "$a.json" >"$a.ex" 2>&1 \
        || fail "$a: explain: $(tail -2 "$a.ex")"
    grep -q "model $a.st: $a, vocabulary" "$a.ex" && ok "$a: explain names the arch" \
        || fail "$a: explain header: $(head -1 "$a.ex")"
    grep -q '"relevance"' "$a.json" && ok "$a: explain writes JSON" || fail "$a: no JSON"
    "$STRIX" explain --model "$a.st" --prompt "ROMEO: Good mor" --method integrated-gradients \
        >"$a.ig" 2>&1 || fail "$a: explain IG: $(tail -2 "$a.ig")"
    "$STRIX" export --model "$a.st" --out "$a.w.st" >"$a.exp" 2>&1 || fail "$a: export: $(cat "$a.exp")"
    "$STRIX" sample --model "$a.w.st" --prompt "ROMEO:" --tokens 40 --seed 3 >"$a.s3" 2>&1
    same_file "$a: the weights-only file samples the same bytes" "$a.s1" "$a.s3"
done

# the architecture and its flags are the checkpoint's: --resume with another is refused
"$STRIX" train --resume lstm.st --arch gru >conflict.err 2>&1
[ $? -eq 2 ] && grep -q -- "--arch conflicts with the checkpoint (lstm)" conflict.err \
    && ok "--resume keeps the architecture" || fail "arch conflict: $(cat conflict.err)"
"$STRIX" train --resume mamba.st --hidden 24 >na.out 2>&1
[ $? -eq 2 ] && grep -q -- "--hidden does not apply to the mamba model of the checkpoint" na.out \
    && ok "--resume with another architecture's flag: named" || fail "resume --hidden: $(cat na.out)"
"$STRIX" train --resume lstm.st --hidden 24 >hid.out 2>&1 \
    && ok "--resume with the checkpoint's own --hidden" || fail "--resume --hidden 24 refused: $(cat hid.out)"

# flags of another architecture, unknown names and bad values: one line, exit 2, no file
bad() {
    local what="$1" want="$2"; shift 2
    rm -f bad.st
    "$STRIX" train --data "$SHAKESPEARE" --steps 2 --out bad.st "$@" >bad.out 2>bad.err
    local rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <bad.err)" -eq 1 ] && grep -q -- "$want" bad.err && [ ! -e bad.st ] \
        && ok "$what" || fail "$what: exit $rc, $(cat bad.err)"
}
bad "--d-state on lstm" "--d-state applies to --arch mamba, not to lstm" --arch lstm --d-state 8
bad "--hidden on gpt" "--hidden applies to --arch rnn, lstm, gru, not to gpt" --hidden 8
bad "--rope on gru" "--rope applies to --arch gpt, not to gru" --arch gru --rope
bad "unknown arch" "unknown architecture 'transformer'" --arch transformer
bad "--hidden 0" "hidden" --arch lstm --hidden 0
bad "--d-state on rwkv" "--d-state applies to --arch mamba, not to rwkv" --arch rwkv --d-state 8
bad "--heads on mamba" "--heads applies to --arch gpt, retnet, not to mamba" --arch mamba --heads 2
bad "retnet heads not dividing" "retnet needs heads (5)" --arch retnet --heads 5
bad "--expand 0" "--expand" --arch mamba --expand 0
bad "--hidden 1" "hidden 1: the final norm needs at least 2 features" --arch gru --hidden 1
bad "tied head of another width" "a tied head needs" --arch lstm --tie --hidden 8 --d-model 16
bad "memory estimate" "needs about .* GiB for training" --arch lstm --batch 100000

# edge sizes the flags accept train (once: a heap overflow in the Mamba init, NaN with >= 21
# RetNet heads whose decay rounds to 1.0f)
"$STRIX" train --arch mamba --d-model 8 --d-conv 64 --steps 2 --eval-every 2 --eval-batches 1 \
    --data "$SHAKESPEARE" --out dc.st >dc.out 2>&1 && grep -q "^done: 2 of 2 steps" dc.out \
    && ok "mamba --d-conv 64 at --d-model 8" || fail "mamba --d-conv 64: $(tail -2 dc.out)"
"$STRIX" train --arch retnet --d-model 64 --heads 32 --layers 1 --steps 2 --eval-every 2 \
    --eval-batches 1 --data "$SHAKESPEARE" --out h32.st >h32.out 2>&1 \
    && grep -q "^done: 2 of 2 steps, train loss [0-9]" h32.out \
    && ok "retnet --heads 32 trains (finite loss)" || fail "retnet 32 heads: $(tail -2 h32.out)"

# a sequence model's window is not part of its weights: --init-from may change --block
"$STRIX" train --init-from lstm.st --block 24 --steps 3 --eval-every 3 --eval-batches 1 \
    --data "$SHAKESPEARE" --out ft.st >ft.out 2>&1 && grep -q "block 24" ft.out \
    && ok "--init-from with another --block (lstm)" || fail "--init-from --block: $(tail -2 ft.out)"

# sample's window and explain's gamma/alpha-beta rules are a GPT's: exit 2; explain reads the
# whole prompt (no crop) like sample; a checkpoint is never an explain output, even with --force
"$STRIX" sample --model lstm.st --window reprime >win.out 2>&1
[ $? -eq 2 ] && grep -q "applies to a GPT" win.out && ok "sample --window on lstm: exit 2" \
    || fail "sample --window: $(cat win.out)"
"$STRIX" explain --model gru.st --prompt "ROMEO: Good" --rule gamma >gam.out 2>&1
[ $? -eq 2 ] && grep -q "epsilon rules only" gam.out && ok "explain --rule gamma on gru: exit 2" \
    || fail "explain gamma: $(cat gam.out)"
long=$(head -c 300 "$SHAKESPEARE" | tr -d "\n'")
"$STRIX" explain --model gru.st --prompt "$long" --json long.json >long.out 2>&1 \
    || fail "explain long prompt: $(tail -2 long.out)"
grep -q "prompt cropped" long.out && fail "a sequence model's prompt was cropped" \
    || ok "explain reads the whole 300-byte prompt"
cp gru.st keep.st
"$STRIX" explain --model lstm.st --prompt ROMEO --svg keep.st --force >cp.out 2>&1
[ $? -eq 2 ] && same_file "explain --svg CHECKPOINT --force refused" gru.st keep.st \
    || fail "explain overwrote a checkpoint: $(cat cp.out)"
finish
