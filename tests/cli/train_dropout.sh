#!/usr/bin/env bash
# train_dropout.sh - `strix train --dropout P` (nanoGPT's dropout): a --dropout 0.1 run learns
# (finite val loss well below ln(vocabulary), the val loss of the untrained model) and records
# "dropout":0.1 in the checkpoint's config; --dropout 0 is the default run byte for byte; a
# --dropout run with --grad-accum 2, stopped and resumed (on another thread count), is
# byte-identical to the uninterrupted run; --resume refuses another --dropout and accepts the
# same; P outside [0, 1) is refused; --init-from runs with its own --dropout (default 0), not
# the file's; a checkpoint written before "dropout" existed (the key stripped) resumes and samples.
source "$(dirname "$0")/lib.bash"

RUN=(--eval-batches 4 --batch 4 --log-every 5 --warmup 10 --lr 1e-2)
head -c 20000 "$SHAKESPEARE" >a.txt

meta() {
    python3 -c 'import json,struct,sys
raw=open(sys.argv[2],"rb").read(); n=struct.unpack("<Q",raw[:8])[0]
print(json.loads(raw[8:8+n])["__metadata__"][sys.argv[1]])' "$1" "$2"
}
vals() { grep val_loss "$1" | sed -E 's/.*"val_loss":([^,]*),.*/\1/' | tr '\n' ' '; }

# ---- a --dropout 0.1 run learns
"$STRIX" train --data a.txt --out d.safetensors "${TINY[@]}" "${RUN[@]}" --steps 60 \
    --eval-every 30 --dropout 0.1 >d.out 2>&1 || fail "dropout run: $(tail -n 1 d.out)"
grep -q "dropout 0.1," d.out && ok "setup line names the dropout" || fail "$(grep ^model d.out)"
grep -q '"dropout":0.1}' <<<"$(meta config d.safetensors)" && ok "config records dropout 0.1" \
    || fail "config: $(meta config d.safetensors)"
V=$(sed -nE 's/.*vocabulary ([0-9]+).*/\1/p' d.out)
python3 -c 'import math,sys
v=[float(x) for x in sys.argv[2].split()]; ln=math.log(int(sys.argv[1]))
sys.exit(not (len(v) == 2 and all(math.isfinite(x) for x in v) and v[1] < v[0] < ln - 0.3))' \
    "$V" "$(vals d.metrics.jsonl)" \
    && ok "val loss finite and falling: $(vals d.metrics.jsonl)(ln $V = step 0's)" \
    || fail "val losses $(vals d.metrics.jsonl) with vocabulary $V"

# ---- --dropout 0 is the default run, byte for byte; 0.1 trains other bits
"$STRIX" train --data a.txt --out n.safetensors "${TINY[@]}" "${RUN[@]}" --steps 20 \
    --eval-every 20 >/dev/null 2>&1 || fail "default run"
"$STRIX" train --data a.txt --out z.safetensors "${TINY[@]}" "${RUN[@]}" --steps 20 \
    --eval-every 20 --dropout 0 >/dev/null 2>&1 || fail "--dropout 0 run"
same_file "--dropout 0 == no --dropout" n.safetensors z.safetensors
"$STRIX" train --data a.txt --out o.safetensors "${TINY[@]}" "${RUN[@]}" --steps 20 \
    --eval-every 20 --dropout 0.1 >/dev/null 2>&1 || fail "--dropout 0.1 run"
[ "$(meta val_loss o.safetensors)" != "$(meta val_loss n.safetensors)" ] \
    && ok "dropout changes the run ($(meta val_loss o.safetensors) vs $(meta val_loss n.safetensors))" \
    || fail "dropout 0.1 gave the val loss of dropout 0"

# ---- resumed == uninterrupted (grad-accum 2: the micro-batch keys the masks too)
ACC=("${TINY[@]}" "${RUN[@]}" --steps 30 --eval-every 10 --grad-accum 2 --dropout 0.2)
"$STRIX" train --data a.txt --out full.safetensors "${ACC[@]}" --threads 1 >/dev/null 2>&1 \
    || fail "uninterrupted run"
"$STRIX" train --data a.txt --out part.safetensors "${ACC[@]}" --threads 1 --stop-after 15 \
    >/dev/null 2>&1 || fail "first part"
[ "$(meta step part.safetensors)" = 15 ] && ok "stopped at step 15" \
    || fail "part at step $(meta step part.safetensors)"
expect_error "--resume with another --dropout" "--dropout conflicts with the checkpoint (0.2)" \
    "$STRIX" train --resume part.safetensors --dropout 0.3
"$STRIX" train --resume part.safetensors --dropout 0.2 --threads 2 >resume.out 2>&1 \
    || fail "resume with the same --dropout: $(tail -n 1 resume.out)"
same_file "resumed dropout run (2 threads) == uninterrupted (1 thread)" full.safetensors \
    part.safetensors

# ---- the range
expect_error "--dropout 1" "--dropout must be in [0, 1)" \
    "$STRIX" train --data a.txt --out bad.safetensors "${TINY[@]}" --dropout 1
expect_error "--dropout -0.1" "--dropout must be >= 0" \
    "$STRIX" train --data a.txt --out bad.safetensors "${TINY[@]}" --dropout -0.1
[ ! -e bad.safetensors ] && ok "nothing written" || fail "bad.safetensors written"

# ---- --init-from: its own --dropout (default 0), not the file's 0.1
"$STRIX" train --data a.txt --init-from d.safetensors --out keep.safetensors "${RUN[@]}" \
    --steps 2 --eval-every 2 >/dev/null 2>&1 || fail "init-from without --dropout"
grep -q '"dropout":0}' <<<"$(meta config keep.safetensors)" && ok "--init-from: dropout 0 by default" \
    || fail "default: $(meta config keep.safetensors)"
"$STRIX" train --data a.txt --init-from d.safetensors --out k2.safetensors "${RUN[@]}" \
    --steps 2 --eval-every 2 --dropout 0.2 >/dev/null 2>&1 || fail "init-from --dropout 0.2"
grep -q '"dropout":0.2}' <<<"$(meta config k2.safetensors)" && ok "--init-from --dropout 0.2" \
    || fail "0.2: $(meta config k2.safetensors)"
"$STRIX" train --data a.txt --init-from d.safetensors --out ft.safetensors "${RUN[@]}" \
    --steps 2 --eval-every 2 --dropout 0 >ft.out 2>&1 || fail "init-from --dropout 0: $(tail -n 1 ft.out)"
grep -q '"dropout":0}' <<<"$(meta config ft.safetensors)" && ok "--init-from --dropout 0" \
    || fail "ft: $(meta config ft.safetensors)"
grep -q "^step 0: val loss $(grep -o 'step 60: val loss [0-9.]*' d.out | cut -d' ' -f5)" ft.out \
    && ok "its step 0 is the source's eval-mode val loss" || fail "$(grep '^step 0' ft.out)"

# ---- a checkpoint without the "dropout" key (written before it existed) still loads
"$STRIX" train --data a.txt --out old.safetensors "${TINY[@]}" "${RUN[@]}" --steps 20 \
    --eval-every 20 --stop-after 10 >/dev/null 2>&1 || fail "old run"
python3 - old.safetensors <<'EOF' || fail "stripping the key"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
cfg = json.loads(head["__metadata__"]["config"])
assert cfg.pop("dropout") == 0
head["__metadata__"]["config"] = json.dumps(cfg, separators=(",", ":"))
text = json.dumps(head, separators=(",", ":")).encode()
assert len(text) <= n
open(sys.argv[1], "wb").write(raw[:8] + text + b" " * (n - len(text)) + raw[8 + n:])
EOF
grep -q dropout <<<"$(meta config old.safetensors)" && fail "key still there" \
    || ok "old-style config: $(meta config old.safetensors)"
"$STRIX" sample --model old.safetensors --tokens 20 --seed 3 >old_sample.txt 2>&1 \
    && ok "old checkpoint samples" || fail "sample: $(cat old_sample.txt)"
"$STRIX" train --resume old.safetensors >old.out 2>&1 && ok "old checkpoint resumes" \
    || fail "resume: $(tail -n 1 old.out)"
same_file "resumed old checkpoint == the default run" n.safetensors old.safetensors

finish
