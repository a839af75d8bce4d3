#!/usr/bin/env bash
# train_metrics.sh - the metrics log of `strix train` (JSON lines beside the checkpoint): one line
# per --log-every step and one per evaluation, each parsing as JSON with the agreed keys, values
# equal to the progress and eval lines; --metrics PATH and --metrics none; a resumed run's log
# equals the uninterrupted run's (but for elapsed_s and tokens_per_s); another run's log is only
# replaced with --force; a write error is one warning, not a failed run.
source "$(dirname "$0")/lib.bash"

RUN=("${TINY[@]}" --eval-batches 2 --log-every 5 --steps 20 --eval-every 10)
head -c 20000 "$SHAKESPEARE" >corpus.txt

"$STRIX" train --data corpus.txt --out m.safetensors "${RUN[@]}" >out.txt 2>err.txt \
    || fail "run: $(cat err.txt)"
[ -f m.metrics.jsonl ] && ok "default path m.metrics.jsonl" || fail "no m.metrics.jsonl"
# every line is JSON with exactly the agreed keys; train lines at 5 10 15 20, evals at 10 20;
# the values printed agree with the log to the 4 decimals printed
python3 - m.metrics.jsonl out.txt err.txt <<'PY' && ok "log lines agree with progress and evals" \
    || fail "log lines"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
train = [l for l in lines if "train_loss" in l]
evals = [l for l in lines if "val_loss" in l]
keys_t = ["step", "train_loss", "lr", "grad_norm", "tokens_per_s", "elapsed_s"]
keys_e = ["step", "val_loss", "elapsed_s"]
assert all(list(l) == keys_t for l in train), train
assert all(list(l) == keys_e for l in evals), evals
assert len(train) + len(evals) == len(lines)
assert [l["step"] for l in train] == [5, 10, 15, 20], train
assert [l["step"] for l in evals] == [10, 20], evals
prog = {int(m.group(1)): m.group(2) for m in
        re.finditer(r"^step (\d+)/20 \| loss ([0-9.]+)", open(sys.argv[3]).read(), re.M)}
vals = {int(m.group(1)): m.group(2) for m in
        re.finditer(r"^step (\d+): val loss ([0-9.]+)", open(sys.argv[2]).read(), re.M)}
assert {l["step"]: "%.4f" % l["train_loss"] for l in train} == prog, (prog, train)
assert {l["step"]: "%.4f" % l["val_loss"] for l in evals} == vals, (vals, evals)
assert all(l["lr"] > 0 and l["grad_norm"] > 0 and l["tokens_per_s"] > 0 for l in train)
assert all(a["elapsed_s"] <= b["elapsed_s"] for a, b in zip(lines, lines[1:]))
PY
grep -q '^{"step":10,"val_loss":[0-9.e+-]*,"elapsed_s":[0-9.e+-]*}$' m.metrics.jsonl \
    && ok "eval line format (without python)" || fail "eval line: $(grep val_loss m.metrics.jsonl)"

# ---- another run's log needs --force (the checkpoint is replaced with it); the default log of a
# missing checkpoint (a run killed before its first save) is replaced: tests/cli/train_outputs.sh
expect_error "another run's log" "the metrics log 'm.metrics.jsonl' of another run exists; --force" \
    "$STRIX" train --data corpus.txt --out o.safetensors --metrics m.metrics.jsonl "${RUN[@]}"
echo "my notes" >notes.txt
expect_error "not a metrics log" "--metrics 'notes.txt' exists and is not a metrics log" \
    "$STRIX" train --data corpus.txt --out n.safetensors "${RUN[@]}" --metrics notes.txt --force
[ "$(cat notes.txt)" = "my notes" ] && ok "notes untouched" || fail "notes.txt changed"

# ---- --metrics PATH, --metrics none
"$STRIX" train --data corpus.txt --out x.st "${RUN[@]}" --metrics logs.jsonl >/dev/null 2>&1
[ "$(wc -l <logs.jsonl)" -eq 6 ] && ok "--metrics PATH: 6 lines" || fail "logs.jsonl: $(wc -l <logs.jsonl)"
[ -e x.st.metrics.jsonl ] && fail "--metrics PATH also wrote the default"
"$STRIX" train --data corpus.txt --out y.safetensors "${RUN[@]}" --metrics none >/dev/null 2>&1
[ -e y.metrics.jsonl ] && fail "--metrics none wrote a log" || ok "--metrics none: no log"

# ---- resume: lines after the checkpoint's step are dropped, the rest appended
"$STRIX" train --data corpus.txt --out full.safetensors "${RUN[@]}" >/dev/null 2>&1
"$STRIX" train --data corpus.txt --out part.safetensors "${RUN[@]}" --stop-after 12 >/dev/null 2>&1
echo '{"step":15,"train_loss":9,"lr":0,"grad_norm":0,"tokens_per_s":0,"elapsed_s":0}' \
    >>part.metrics.jsonl # as if a later run of this file had logged on
"$STRIX" train --resume part.safetensors --log-every 5 >/dev/null 2>&1 || fail "resume"
strip() { sed -E 's/,"tokens_per_s":[^,]*//; s/,"elapsed_s":[^}]*//' "$1"; }
if diff <(strip full.metrics.jsonl) <(strip part.metrics.jsonl) >/dev/null; then
    ok "resumed log == uninterrupted log (but for time)"
else
    fail "resumed log differs:"; diff <(strip full.metrics.jsonl) <(strip part.metrics.jsonl) >&2
fi

# ---- a write error: one warning, the run succeeds
"$STRIX" train --data corpus.txt --out z.st "${RUN[@]}" --metrics /dev/full >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 0 ] && ok "full log device: exit 0" || fail "full log device: exit $rc"
[ "$(grep -c 'warning: metrics log /dev/full' err.txt)" -eq 1 ] && ok "one warning" \
    || fail "warnings: $(cat err.txt)"
finish
