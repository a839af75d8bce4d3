#!/usr/bin/env bash
# bad_input.sh - every kind of bad input to `strix train` and `strix sample` ends with a non-zero
# exit (no crash), ONE clear line on stderr, and leaves an existing checkpoint untouched.
source "$(dirname "$0")/lib.bash"

# A valid checkpoint whose bytes must survive every failed run below.
"$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 4 --eval-every 2 --eval-batches 2 \
    --out keep.safetensors >/dev/null 2>&1 || { fail "training the reference model"; finish; }
before=$(sha256sum <keep.safetensors)
KEEP=(--out keep.safetensors --force) # replaceable: each bad flag must still leave it
# A new run into keep.safetensors is refused before the corpus is read (it holds a trained
# checkpoint; replacing it needs --force): the corpus errors go to a new file, never created.
NEW=(--out new.safetensors)

# ---- corpus
expect_error "missing file" "cannot open corpus" \
    "$STRIX" train --data does-not-exist.txt "${TINY[@]}" "${NEW[@]}"
: >empty.txt
expect_error "empty file" "is empty" "$STRIX" train --data empty.txt "${TINY[@]}" "${NEW[@]}"
mkdir notext && head -c 4096 /dev/urandom >notext/blob.dat && : >notext/empty
expect_error "directory without text" "holds no text files" \
    "$STRIX" train --data notext "${TINY[@]}" "${NEW[@]}"
head -c 4096 /dev/urandom >binary.bin
printf 'x\0y' >>binary.bin
expect_error "binary file" "is not a text file" \
    "$STRIX" train --data binary.bin "${TINY[@]}" "${NEW[@]}"
printf 'short text' >short.txt
expect_error "corpus shorter than one block" "corpus of 10 characters is shorter than one block" \
    "$STRIX" train --data short.txt "${TINY[@]}" "${NEW[@]}"
head -c 200 "$SHAKESPEARE" >small.txt
expect_error "block larger than the validation split" \
    "validation split of 20 characters (of a corpus of 200) is shorter than one block" \
    "$STRIX" train --data small.txt "${TINY[@]}" --block 32 "${NEW[@]}"
[ -e new.safetensors ] && fail "a failed run created new.safetensors"

# ---- flags
expect_error "unknown flag" "strix train: unknown flag --foo" \
    "$STRIX" train --data "$SHAKESPEARE" --foo 3 "${KEEP[@]}"
expect_error "unknown sample flag" "strix sample: unknown flag --bar" \
    "$STRIX" sample --model keep.safetensors --bar
expect_error "heads not dividing d_model" "n_head 4 does not divide d_model 30" \
    "$STRIX" train --data "$SHAKESPEARE" --d-model 30 --heads 4 "${KEEP[@]}"
expect_error "head sizes not summing to d_model" "head sizes sum to 24, not d_model 32" \
    "$STRIX" train --data "$SHAKESPEARE" --d-model 32 --head-sizes 16,8 "${KEEP[@]}"
expect_error "malformed head sizes" "--head-sizes expects" \
    "$STRIX" train --data "$SHAKESPEARE" --d-model 32 --head-sizes 16,x "${KEEP[@]}"
expect_error "negative lr" "--lr must be > 0 (got -1e-3)" \
    "$STRIX" train --data "$SHAKESPEARE" --lr -1e-3 "${KEEP[@]}"
expect_error "non-numeric steps" "--steps expects an integer (got 'many')" \
    "$STRIX" train --data "$SHAKESPEARE" --steps many "${KEEP[@]}"
expect_error "missing value" "--batch needs a value" "$STRIX" train --batch
# integers beyond 64 bits get the flag's range, for each integer type (int, int64, uint64)
expect_error "int beyond 64 bits" "--batch must be <= 1048576 (got 99999999999999999999)" \
    "$STRIX" train --data "$SHAKESPEARE" --batch 99999999999999999999 "${KEEP[@]}"
expect_error "int64 beyond 64 bits" \
    "--steps must be <= 9223372036854775807 (got 99999999999999999999)" \
    "$STRIX" train --data "$SHAKESPEARE" --steps 99999999999999999999 "${KEEP[@]}"
expect_error "negative int64 beyond 64 bits" "--warmup must be >= 0 (got -99999999999999999999)" \
    "$STRIX" train --data "$SHAKESPEARE" --warmup -99999999999999999999 "${KEEP[@]}"
expect_error "uint64 beyond 64 bits" \
    "--seed must be <= 18446744073709551615 (got 18446744073709551616)" \
    "$STRIX" train --data "$SHAKESPEARE" --seed 18446744073709551616 "${KEEP[@]}"
expect_error "int flag of sample beyond 64 bits" \
    "--top-k must be <= 1073741824 (got 123456789012345678901234)" \
    "$STRIX" sample --model keep.safetensors --top-k 123456789012345678901234
expect_error "not an integer stays so" "--top-k expects an integer (got '12x')" \
    "$STRIX" sample --model keep.safetensors --top-k 12x
# a micro-batch whose activations cannot fit in the machine's memory is refused before anything
# is read or allocated (the corpus does not exist), naming the estimate and the memory
expect_error "--batch too large for the memory" "--batch 1048576 needs about " \
    "$STRIX" train --data does-not-exist.txt --d-model 1024 --layers 8 --heads 8 --block 1024 \
    --batch 1048576 "${NEW[@]}"
python3 - "$(cat "$WORK/stderr")" "$(getconf _PHYS_PAGES)" "$(getconf PAGESIZE)" <<'PY' \
    && ok "--batch too large: the estimate B*T*(L*(10C+2F+NH*T)+2V) floats and the memory" \
    || fail "--batch too large: $(cat "$WORK/stderr")"
import re, sys
m = re.search(r"needs about (\S+) GiB .* the machine's (\S+) GiB of memory", sys.argv[1])
B, T, L, C, H, F, V = 1048576, 1024, 8, 1024, 8, 4096, 256  # V: the byte vocabulary's bound
want = 4 * B * T * (L * (10 * C + 2 * F + H * T) + 2 * V) / 2**30
assert abs(float(m.group(1)) - want) <= 0.05 + 1e-9 * want, (m.group(1), want)
assert abs(float(m.group(2)) - int(sys.argv[2]) * int(sys.argv[3]) / 2**30) <= 0.05, m.group(2)
PY
[ ! -e new.safetensors ] && ok "nothing written for a refused --batch" || fail "new.safetensors"
expect_error "val fraction out of range" "--val-fraction must be <= 0.9 (got 1.5)" \
    "$STRIX" train --data "$SHAKESPEARE" --val-fraction 1.5 "${KEEP[@]}"
expect_error "min-lr above lr" "--min-lr 0.01 exceeds --lr 0.001" \
    "$STRIX" train --data "$SHAKESPEARE" --min-lr 1e-2 "${KEEP[@]}"
expect_error "odd head size with rope" "RoPE needs an even head size" \
    "$STRIX" train --data "$SHAKESPEARE" --d-model 30 --heads 2 --rope "${KEEP[@]}"
expect_error "resume with a conflicting flag" \
    "strix train: --lr conflicts with the checkpoint (0.001); a resumed run keeps its config" \
    "$STRIX" train --resume keep.safetensors --lr 3e-4
expect_error "resume with another model size" "--d-model conflicts with the checkpoint (32)" \
    "$STRIX" train --resume keep.safetensors --d-model 64

expect_error "unwritable --out" "cannot write the checkpoint no/such/dir/m.st" \
    "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 4 --out no/such/dir/m.st

# ---- checkpoints
size=$(stat -c %s keep.safetensors)
head -c $((size - 100)) keep.safetensors >truncated.safetensors
expect_error "truncated checkpoint (resume)" "past the end" \
    "$STRIX" train --resume truncated.safetensors "${KEEP[@]}"
expect_error "truncated checkpoint (sample)" "past the end" \
    "$STRIX" sample --model truncated.safetensors
head -c 5 keep.safetensors >stub.safetensors
expect_error "5-byte checkpoint" "shorter than the 8-byte header length" \
    "$STRIX" sample --model stub.safetensors
cp keep.safetensors corrupt.safetensors
printf '{{{{not json' | dd of=corrupt.safetensors bs=1 seek=8 conv=notrunc status=none
expect_error "corrupted checkpoint header" "malformed JSON header" \
    "$STRIX" train --resume corrupt.safetensors "${KEEP[@]}"
cp keep.safetensors lying.safetensors
printf '\xff\xff\xff\x7f' | dd of=lying.safetensors bs=1 seek=0 conv=notrunc status=none
expect_error "header length lies" "runs past the end of the" \
    "$STRIX" sample --model lying.safetensors
# a header whose first tensor claims 4 more bytes than its shape holds
/usr/bin/python3 - keep.safetensors offsets.safetensors <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
name = next(k for k in head if k != "__metadata__")
head[name]["data_offsets"][1] += 4
text = json.dumps(head).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
expect_error "tensor offsets lie" "but its shape needs" \
    "$STRIX" sample --model offsets.safetensors
expect_error "not a strix checkpoint" "is not a strix checkpoint" \
    "$STRIX" sample --model "$ROOT/tests/golden/io/ref-f32.st"
expect_error "missing checkpoint" "cannot open 'nothing.safetensors'" \
    "$STRIX" sample --model nothing.safetensors
expect_error "missing checkpoint (resume)" "cannot open 'nothing.safetensors'" \
    "$STRIX" train --resume nothing.safetensors

# ---- sampling
expect_error "sample without --model" "--model CKPT is required" "$STRIX" sample
expect_error "negative temperature" "--temperature must be >= 0 (got -0.5)" \
    "$STRIX" sample --model keep.safetensors --temperature -0.5
expect_error "negative top-k" "--top-k must be >= 0 (got -1)" \
    "$STRIX" sample --model keep.safetensors --top-k -1
expect_error "top-p zero" "--top-p must be > 0 (got 0)" \
    "$STRIX" sample --model keep.safetensors --top-p 0
expect_error "top-p above one" "--top-p must be <= 1 (got 1.5)" \
    "$STRIX" sample --model keep.safetensors --top-p 1.5
expect_error "prompt with an unknown character" "character '~' (byte 126) at offset 2" \
    "$STRIX" sample --model keep.safetensors --prompt 'ab~c'
# every weight NaN: sampling must refuse, never print a silently chosen byte
/usr/bin/python3 - keep.safetensors nan.safetensors <<'PY'
import struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
body = raw[8 + n:]
open(sys.argv[2], "wb").write(raw[:8 + n] + b"\xff" * len(body))
PY
expect_error "NaN logits" "NaN logit" "$STRIX" sample --model nan.safetensors --tokens 5
expect_error "unknown command" "unknown command 'fly'" "$STRIX" fly

after=$(sha256sum <keep.safetensors)
[ "$before" = "$after" ] && ok "existing checkpoint untouched" \
    || fail "keep.safetensors changed during failed runs"
ls -A | grep -qE '^\.strix-tmp-|\.tmp\.[0-9]+$' && fail "temp files left behind: $(ls -A)"
# ---- a model path that is not a regular file never blocks or reads forever
mkfifo model_fifo
expect_error "sample --model FIFO" "is not a regular file" timeout 10 "$STRIX" sample --model model_fifo
expect_error "sample --model /dev/zero" "is not a regular file" \
    timeout 10 "$STRIX" sample --model /dev/zero
expect_error "train --resume FIFO" "is not a regular file" timeout 10 "$STRIX" train --resume model_fifo
finish
