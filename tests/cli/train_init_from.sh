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
# ---- found by a new-user trial: the file's block sets --sequential's stride; the step-0
# evaluation is the first best of --keep-best/--patience; --out may not be the --init-from file;
# --head-sizes that repeat a uniform model are its shape, --heads never repeats head sizes
"$STRIX" train --data b.txt --init-from a.safetensors --out seq.safetensors "${RUN[@]}" --steps 4 \
    --eval-every 4 --sequential --batch 1 >seq.out 2>&1 || fail "sequential: $(tail -n 1 seq.out)"
[ "$(meta stride seq.safetensors)" = 16 ] && [ "$(meta seq_pos seq.safetensors)" = 64 ] \
    && ok "--sequential stride = the file's block 16 (4 steps: position 64)" \
    || fail "stride $(meta stride seq.safetensors), seq_pos $(meta seq_pos seq.safetensors)"
"$STRIX" train --data b.txt --init-from a.safetensors --out pat.safetensors "${RUN[@]}" \
    --steps 40 --eval-every 10 --lr 1 --warmup 0 --clip 0 --patience 1 >pat.out 2>&1 \
    || fail "patience run: $(tail -n 1 pat.out)"
[ "$(meta step pat.best.safetensors)" = 0 ] && grep -q "^step 10: val loss" pat.out \
    && ! grep -q "^step 20: val loss" pat.out \
    && ok "lr 1 only worsens: best = step 0, --patience 1 stops at step 10" \
    || fail "best step $(meta step pat.best.safetensors): $(grep -E '^(step|stopped|done)' pat.out | tr '\n' '|')"
cp a.safetensors self.safetensors
expect_error "--out is the --init-from file" "is the --init-from file; a fine-tune writes its own" \
    "$STRIX" train --data b.txt --init-from self.safetensors --out self.safetensors --force
same_file "the --init-from file is untouched" a.safetensors self.safetensors
"$STRIX" train --data b.txt --init-from a.safetensors --out hs.safetensors "${RUN[@]}" --steps 2 \
    --head-sizes 16,16 >/dev/null 2>&1 && ok "--head-sizes 16,16 repeats --heads 2 of d_model 32" \
    || fail "--head-sizes 16,16 refused"
"$STRIX" train --data a.txt --out het.safetensors --d-model 32 --layers 1 --head-sizes 8,24 \
    --block 16 --steps 2 --metrics none >/dev/null 2>&1 || fail "heterogeneous source"
expect_error "--heads 2 on head sizes 8,24" "differs from the model of --init-from het.safetensors (head sizes 8,24)" \
    "$STRIX" train --data a.txt --init-from het.safetensors --out h2.safetensors --heads 2
finish
