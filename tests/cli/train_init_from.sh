#!/usr/bin/env bash
# train_init_from.sh - `strix train --init-from FILE` fine-tunes: a new run (its own steps, lr,
# data and seed) from the weights and model shape of a checkpoint. Its step-0 evaluation is the
# source model's (on the source's own corpus it equals the source's last val loss bit for bit),
# training on a second corpus lowers that corpus's val loss, the run resumes bit for bit; shape
# flags that differ from the file, a corpus byte outside the model's vocabulary and --init-from
# with --resume are refused. Also --no-bias: a bias-free model trains, saves, resumes, samples.
source "$(dirname "$0")/lib.bash"

RUN=(--eval-batches 4 --batch 4 --log-every 5)
head -c 20000 "$SHAKESPEARE" >a.txt
# corpus B: other lines of the play, lower case letters, spaces and newlines (all in A's bytes)
tail -c 30000 "$SHAKESPEARE" | tr -cd 'a-z \n' >b.txt

lastval() { grep val_loss "$1" | tail -n 1 | sed -E 's/.*"val_loss":([^,]*),.*/\1/'; }
firstval() { grep val_loss "$1" | head -n 1 | sed -E 's/.*"val_loss":([^,]*),.*/\1/'; }
meta() {
    python3 -c 'import json,struct,sys
raw=open(sys.argv[2],"rb").read(); n=struct.unpack("<Q",raw[:8])[0]
print(json.loads(raw[8:8+n])["__metadata__"][sys.argv[1]])' "$1" "$2"
}

"$STRIX" train --data a.txt --out a.safetensors "${TINY[@]}" "${RUN[@]}" --steps 60 \
    --eval-every 30 --lr 1e-2 --no-bias >a.out 2>&1 || fail "source run: $(tail -n 1 a.out)"
grep -q '"bias":false' <<<"$(meta config a.safetensors)" && ok "--no-bias recorded in the config" \
    || fail "config: $(meta config a.safetensors)"
"$STRIX" train --data a.txt --out withbias.safetensors "${TINY[@]}" --steps 1 >wb.out 2>&1
nb=$(grep -o '[0-9]* parameters' a.out); wb=$(grep -o '[0-9]* parameters' wb.out)
[ "${nb% *}" -lt "${wb% *}" ] && ok "no-bias model is smaller ($nb < $wb)" || fail "$nb vs $wb"

# ---- on the source's own corpus, the step-0 evaluation is the source's last one, exactly
"$STRIX" train --data a.txt --init-from a.safetensors --out same.safetensors "${RUN[@]}" \
    --steps 5 --eval-every 5 >same.out 2>&1 || fail "init-from on A: $(tail -n 1 same.out)"
[ "$(firstval same.metrics.jsonl)" = "$(lastval a.metrics.jsonl)" ] \
    && ok "step 0 on A = the source's last val loss ($(lastval a.metrics.jsonl))" \
    || fail "step 0 on A $(firstval same.metrics.jsonl), source $(lastval a.metrics.jsonl)"
grep -q "^step 0: val loss" same.out && ok "step 0 is printed" || fail "no step 0 line"

# ---- fine-tuning on B lowers B's val loss
"$STRIX" train --data b.txt --init-from a.safetensors --out ft.safetensors "${RUN[@]}" \
    --steps 40 --eval-every 20 --lr 1e-2 --seed 7 >ft.out 2>&1 || fail "fine-tune: $(tail -n 1 ft.out)"
v0=$(firstval ft.metrics.jsonl); v1=$(lastval ft.metrics.jsonl)
python3 -c 'import sys; sys.exit(not float(sys.argv[2]) < float(sys.argv[1]) - 0.05)' "$v0" "$v1" \
    && ok "fine-tuning lowers B's val loss: $v0 -> $v1" || fail "B's val loss $v0 -> $v1"
grep -q "vocabulary 58 (the model's; the corpus uses 28)" ft.out && ok "names both vocabularies" \
    || fail "corpus line: $(grep ^corpus ft.out)"
[ "$(meta step ft.safetensors)" = 40 ] && [ "$(meta total_steps ft.safetensors)" = 40 ] \
    && [ "$(meta seed ft.safetensors)" = 7 ] && ok "a new run: its own steps and seed" \
    || fail "ft metadata: step $(meta step ft.safetensors) seed $(meta seed ft.safetensors)"
[ "$(meta vocab ft.safetensors)" = "$(meta vocab a.safetensors)" ] && ok "the model's vocabulary" \
    || fail "vocab changed"
"$STRIX" sample --model ft.safetensors --tokens 20 >/dev/null && ok "fine-tuned model samples" \
    || fail "sample"

# ---- the fine-tune (and so the bias-free model) resumes bit for bit
"$STRIX" train --data b.txt --init-from a.safetensors --out ftp.safetensors "${RUN[@]}" \
    --steps 40 --eval-every 20 --lr 1e-2 --seed 7 --stop-after 25 >/dev/null 2>&1 || fail "part"
"$STRIX" train --resume ftp.safetensors --no-bias >/dev/null 2>&1 || fail "resume of the fine-tune"
same_file "resumed fine-tune == uninterrupted" ft.safetensors ftp.safetensors

# ---- refusals
expect_error "shape flag differs" "--layers 2 differs from the model of --init-from a.safetensors (1)" \
    "$STRIX" train --data b.txt --init-from a.safetensors --out x.safetensors --layers 2
"$STRIX" train --data b.txt --init-from a.safetensors --out y.safetensors --layers 1 \
    --d-model 32 --no-bias --steps 2 --eval-every 2 "${RUN[@]}" >/dev/null 2>&1 \
    && ok "shape flags equal to the file's are accepted" || fail "equal shape flags refused"
printf 'zebra\tquiz\n%.0s' {1..300} >tabs.txt
expect_error "byte outside the vocabulary" "holds the byte (0x09), which the vocabulary of a.safetensors" \
    "$STRIX" train --data tabs.txt --init-from a.safetensors --out z.safetensors
expect_error "--init-from with --resume" "--init-from starts a new run" \
    "$STRIX" train --resume ft.safetensors --init-from a.safetensors
finish
