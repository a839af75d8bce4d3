#!/usr/bin/env bash
# train_outputs.sh - the files `strix train` writes besides --out (its metrics log and the
# --keep-best file) get the same checks as --out, for a new run and for --resume alike, all made
# before any file is created or truncated: the corpus, a file directly in the --data directory,
# a file that is not a metrics log, --out itself (by name or inode) are refused with exit 2 and
# one line, the file left byte for byte; another run's best checkpoint needs --force (also with
# --resume); a refused or failed run leaves no file behind; the log of a run killed before its
# first checkpoint is replaced with a note; a weights-only file at --out is named as such.
# (tools/strix/train_metrics.c metrics_check, tools/strix/train.c check_outputs.)
source "$(dirname "$0")/lib.bash"

RUN=("${TINY[@]}" --eval-batches 2 --steps 4 --eval-every 2 --log-every 1)
head -c 20000 "$SHAKESPEARE" >corpus.txt
cp corpus.txt corpus.orig
mkdir texts
head -c 8000 "$SHAKESPEARE" >texts/a.txt
cp texts/a.txt a.orig

# expect_refused NAME PHRASE CMD...: exit status exactly 2, one line naming the problem.
expect_refused() {
    local name=$1
    expect_error "$@"
    local rc
    "${@:3}" >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name: exit status $rc, expected 2"
}
# no_file NAME PATH...: none of the paths exists.
no_file() {
    local name=$1 p
    shift
    for p in "$@"; do [ -e "$p" ] && { fail "$name: $p was left behind"; return; }; done
    ok "$name: nothing left behind"
}

"$STRIX" train --data corpus.txt --out cp.safetensors "${RUN[@]}" --stop-after 2 >/dev/null 2>&1 \
    || fail "interrupted run"
cp cp.safetensors cp.orig
cp cp.metrics.jsonl cp.log.orig

# ---- 1. --resume checks its log like a new run: nothing it does not own is truncated
expect_refused "--resume --metrics CORPUS" "--metrics 'corpus.txt' is the corpus --data" \
    "$STRIX" train --resume cp.safetensors --metrics corpus.txt
same_file "the corpus survives byte for byte" corpus.orig corpus.txt
cp corpus.orig corpus.txt # (so that a failure here does not fail every later check)
echo "my notes" >notes.txt
cp notes.txt notes.orig
expect_refused "--resume --metrics TEXT" "--metrics 'notes.txt' exists and is not a metrics log" \
    "$STRIX" train --resume cp.safetensors --metrics notes.txt
same_file "a text file survives" notes.orig notes.txt
echo '{"title": "not a log"}' >json.txt
cp json.txt json.orig
expect_refused "--resume --metrics JSON" "--metrics 'json.txt' exists and is not a metrics log" \
    "$STRIX" train --resume cp.safetensors --metrics json.txt
same_file "a JSON file that is no log survives" json.orig json.txt
cp notes.txt victim.metrics.jsonl
expect_refused "--resume --out V: V's default log is text" \
    "--metrics 'victim.metrics.jsonl' exists and is not a metrics log" \
    "$STRIX" train --resume cp.safetensors --out victim.safetensors
same_file "victim.metrics.jsonl survives" notes.orig victim.metrics.jsonl
no_file "--resume --out V refused" victim.safetensors
cp cp.safetensors cd.safetensors
cp notes.txt cd.metrics.jsonl
expect_refused "--resume: its own default log is text" \
    "--metrics 'cd.metrics.jsonl' exists and is not a metrics log" \
    "$STRIX" train --resume cd.safetensors
same_file "its default log path survives" notes.orig cd.metrics.jsonl
"$STRIX" train --data texts --out dir.safetensors "${RUN[@]}" --stop-after 2 >/dev/null 2>&1 \
    || fail "run on a directory"
expect_refused "--resume --metrics DATA_DIR/x" "--metrics 'texts/log.jsonl' lies inside the corpus directory" \
    "$STRIX" train --resume dir.safetensors --metrics texts/log.jsonl
expect_refused "--resume --metrics DATA_DIR/a.txt" "--metrics 'texts/a.txt' lies inside the corpus" \
    "$STRIX" train --resume dir.safetensors --metrics texts/a.txt
no_file "--metrics in the corpus directory" texts/log.jsonl
same_file "the corpus file survives" a.orig texts/a.txt
same_file "the refusals left the checkpoint" cp.orig cp.safetensors
same_file "and its log" cp.log.orig cp.metrics.jsonl
"$STRIX" train --resume cp.safetensors --log-every 1 >/dev/null 2>&1 || fail "plain resume"
python3 - cp.metrics.jsonl <<'PY' && ok "a real log is kept and continued" || fail "resumed log"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if "train_loss" in l]
assert steps == [1, 2, 3, 4], steps
PY

# ---- 2. --metrics equal to --out (a new run: --out does not exist yet)
expect_refused "--metrics == --out" "--metrics 'same.safetensors' is the checkpoint --out" \
    "$STRIX" train --data corpus.txt --out same.safetensors --metrics same.safetensors "${RUN[@]}"
expect_refused "--metrics == --out (other spelling)" "is the checkpoint --out" \
    "$STRIX" train --data corpus.txt --out same.safetensors --metrics "$WORK/./same.safetensors" \
    "${RUN[@]}"
ln -s same.safetensors link.jsonl
expect_refused "--metrics links to --out" "--metrics 'link.jsonl' is the checkpoint --out" \
    "$STRIX" train --data corpus.txt --out same.safetensors --metrics link.jsonl "${RUN[@]}"
expect_refused "--metrics ''" "--metrics is empty" \
    "$STRIX" train --data corpus.txt --out same.safetensors --metrics "" "${RUN[@]}"
no_file "--metrics == --out" same.safetensors same.metrics.jsonl same.safetensors.lock

# ---- 3. the log and the best file never go into the corpus (a new run)
expect_refused "--metrics CORPUS (new run)" "--metrics 'corpus.txt' is the corpus --data" \
    "$STRIX" train --data corpus.txt --out n3.safetensors --metrics corpus.txt "${RUN[@]}"
expect_refused "--metrics DATA_DIR/x (new run)" \
    "--metrics 'texts/log.jsonl' lies inside the corpus directory 'texts'" \
    "$STRIX" train --data texts --out n3.safetensors --metrics texts/log.jsonl "${RUN[@]}"
ln -s texts/b.safetensors n3.best.safetensors # the best file would be written into the corpus
expect_refused "best file into DATA_DIR" \
    "the best checkpoint 'n3.best.safetensors' lies inside the corpus directory 'texts'" \
    "$STRIX" train --data texts --out n3.safetensors --keep-best "${RUN[@]}"
no_file "outputs in the corpus" texts/log.jsonl texts/b.safetensors n3.safetensors n3.metrics.jsonl
[ "$(ls texts)" = a.txt ] && ok "the corpus directory holds a.txt only" || fail "texts: $(ls texts)"
same_file "the corpus survives the new runs" corpus.orig corpus.txt
cp corpus.orig corpus.txt

# ---- 4. --resume --keep-best never replaces another run's best file
"$STRIX" train --data corpus.txt --out other.safetensors "${RUN[@]}" --seed 7 >/dev/null 2>&1 \
    || fail "other run"
"$STRIX" train --data corpus.txt --out cq.safetensors "${RUN[@]}" --stop-after 2 --keep-best \
    >/dev/null 2>&1 || fail "cq run"
cp cq.best.safetensors cq.best.mine
cp cq.safetensors cq.orig
cp other.safetensors cq.best.safetensors
expect_refused "--resume --keep-best: another run's best" \
    "the best checkpoint 'cq.best.safetensors' of another run exists; --force replaces it" \
    "$STRIX" train --resume cq.safetensors --keep-best
same_file "another run's best file untouched" other.safetensors cq.best.safetensors
same_file "the resumed checkpoint untouched" cq.orig cq.safetensors
echo "not a model" >cq.best.safetensors
expect_refused "--resume --keep-best: text at the best path" \
    "the best checkpoint 'cq.best.safetensors' (--keep-best) exists and is not a strix checkpoint" \
    "$STRIX" train --resume cq.safetensors --keep-best
[ "$(cat cq.best.safetensors)" = "not a model" ] && ok "the text file untouched" \
    || fail "text file at the best path changed"
cp other.safetensors cq.best.safetensors
"$STRIX" train --resume cq.safetensors --keep-best --force >/dev/null 2>err.txt \
    && ok "--resume --keep-best --force: exit 0" || fail "--force: $(tail -n 1 err.txt)"
cmp -s other.safetensors cq.best.safetensors && fail "--force kept the other run's best file" \
    || ok "--force replaced the other run's best file"
# a best file of this very run is taken over (its best val loss carries on)
cp cq.orig cq.safetensors
cp cq.best.mine cq.best.safetensors
"$STRIX" train --resume cq.safetensors --keep-best >/dev/null 2>err.txt \
    && ok "--resume --keep-best with its own best: exit 0" || fail "own best: $(tail -n 1 err.txt)"

# ---- 5. a refused run leaves no file behind; so does a run that fails while setting up
cp other.safetensors kk.best.safetensors
expect_refused "new run, another run's best file" \
    "the best checkpoint 'kk.best.safetensors' of another run exists; --force replaces it" \
    "$STRIX" train --data corpus.txt --out kk.safetensors --keep-best "${RUN[@]}"
no_file "refused --keep-best run" kk.safetensors kk.metrics.jsonl kk.safetensors.lock
same_file "kk.best.safetensors untouched" other.safetensors kk.best.safetensors
printf 'tiny' >short.txt
"$STRIX" train --data short.txt --out sh.safetensors "${RUN[@]}" >/dev/null 2>&1
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && ok "a corpus too short fails (exit $rc)" \
    || fail "short corpus: exit $rc"
no_file "failed setup" sh.safetensors sh.metrics.jsonl
cp cp.log.orig fl.metrics.jsonl
cp cp.orig fl.safetensors
"$STRIX" train --data short.txt --out fl.safetensors "${RUN[@]}" --force >/dev/null 2>&1
same_file "a failed --force run keeps the old log" cp.log.orig fl.metrics.jsonl

# ---- 6. the log of a run killed before its first checkpoint is an orphan: replaced with a note
"$STRIX" train --data corpus.txt --out k9.safetensors "${TINY[@]}" --eval-batches 2 \
    --steps 100000 --eval-every 100000 --log-every 1 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s k9.metrics.jsonl ] && break; sleep 0.1; done
kill -9 $pid
wait $pid 2>/dev/null
[ -s k9.metrics.jsonl ] && [ ! -e k9.safetensors ] && ok "killed run: a log, no checkpoint" \
    || fail "killed run: log $(wc -c <k9.metrics.jsonl 2>&1), checkpoint $(ls k9.safetensors 2>&1)"
"$STRIX" train --data corpus.txt --out k9.safetensors "${RUN[@]}" >/dev/null 2>err.txt
rc=$?
[ "$rc" -eq 0 ] && ok "the plain rerun: exit 0" || fail "rerun: exit $rc: $(cat err.txt)"
[ "$(grep -c 'note: replacing the metrics log k9.metrics.jsonl of a run that never saved' err.txt)" \
    -eq 1 ] && ok "one note names the orphan log" || fail "no note: $(grep -v '|' err.txt)"
python3 - k9.metrics.jsonl <<'PY' && ok "the log is the rerun's" || fail "rerun's log"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if "train_loss" in l]
assert steps == [1, 2, 3, 4], steps
PY
cp notes.txt k8.metrics.jsonl
expect_refused "no checkpoint, a text file at the default log" \
    "--metrics 'k8.metrics.jsonl' exists and is not a metrics log" \
    "$STRIX" train --data corpus.txt --out k8.safetensors "${RUN[@]}"
same_file "the text file survives" notes.orig k8.metrics.jsonl
cp cp.log.orig explicit.jsonl
expect_refused "an explicit --metrics of another run" \
    "the metrics log 'explicit.jsonl' of another run exists; --force" \
    "$STRIX" train --data corpus.txt --out k7.safetensors --metrics explicit.jsonl "${RUN[@]}"
same_file "the other run's log survives" cp.log.orig explicit.jsonl

# ---- 7. a weights-only file at --out is named as one
"$STRIX" export --model other.safetensors --out w.safetensors >/dev/null 2>&1 || fail "export"
cp w.safetensors w.orig
expect_refused "weights-only --out" \
    "--out 'w.safetensors' holds a weights-only model file; pass --force to replace it (or --init-from it to fine-tune)" \
    "$STRIX" train --data corpus.txt --out w.safetensors "${RUN[@]}"
same_file "the weights-only file untouched" w.orig w.safetensors
finish
