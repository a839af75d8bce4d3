# strix plot: hand-written metrics logs drawn as SVG. The polylines' points are the known inputs
# mapped onto the 640x400 frame (plot area x 70..610, y 40..340, axes widened to whole ticks);
# nulls split a curve, a resumed run's repeated steps replace the earlier ones; a malformed line
# is an error naming it, an unfinished last line a warning; an empty log is an error; a file that
# is not an SVG is never replaced.
source tests/cli/lib.bash

# points CLASS FILE: the points of each polyline of class CLASS, one polyline per line.
points() { grep -o "<polyline class=\"$1\"[^>]*" "$2" | sed 's/.*points="\([^"]*\)".*/\1/'; }
# ticks CLASS FILE: the tick labels of class CLASS, space-separated.
ticks() { grep -o "<text class=\"$1\"[^>]*>[^<]*" "$2" | sed 's/.*>//' | tr '\n' ' '; }
# check NAME GOT WANT
check() { if [ "$2" = "$3" ]; then ok "$1: $2"; else fail "$1: got '$2', want '$3'"; fi; }

# 1. Train and val curves. Steps 10..40 -> x 70..610 (ticks every 10); losses 2..4 -> y 340..40
# (ticks every 0.5): (10,4) -> 70,40; (20,3) -> 250,190; (30,2.5) -> 430,265; (40,2) -> 610,340;
# val (20,3.2) -> 250,160; (40,2.2) -> 610,310.
cat >run.metrics.jsonl <<'EOF'
{"step":10,"train_loss":4.0,"lr":0.001,"grad_norm":1.5,"tokens_per_s":1000,"elapsed_s":0.1}
{"step":20,"train_loss":3.0,"lr":0.001,"grad_norm":1.2,"tokens_per_s":1000,"elapsed_s":0.2}
{"step":20,"val_loss":3.2,"elapsed_s":0.25}
{"step":30,"train_loss":2.5,"lr":0.001,"grad_norm":null,"tokens_per_s":1000,"elapsed_s":0.3}

{"step":40,"train_loss":2.0,"lr":0.001,"grad_norm":0.9,"tokens_per_s":1000,"elapsed_s":0.4}
{"step":40,"val_loss":2.2,"elapsed_s":0.45}
EOF
if "$STRIX" plot run.metrics.jsonl --svg loss.svg >out.txt 2>err.txt; then
    ok "plot: $(cat out.txt)"
else
    fail "plot exit status: $(cat err.txt)"
fi
check "train polyline" "$(points train loss.svg)" "70.0,40.0 250.0,190.0 430.0,265.0 610.0,340.0"
check "val polyline" "$(points val loss.svg)" "250.0,160.0 610.0,310.0"
check "val dots" "$(grep -c '<circle class="val"' loss.svg)" 2
check "x ticks" "$(ticks xtick loss.svg)" "10 20 30 40 "
check "y ticks" "$(ticks ytick loss.svg)" "2 2.5 3 3.5 4 "
grep -q '>train loss</text>' loss.svg && grep -q '>val loss</text>' loss.svg && grep -q '>step<' \
    loss.svg && ok "legend and axis label" || fail "legend or axis label missing"
[ -s err.txt ] && fail "stderr not empty: $(cat err.txt)"
if command -v python3 >/dev/null; then
    python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" loss.svg \
        && ok "well-formed XML" || fail "loss.svg is not well-formed XML"
fi

# 2. --model finds the log beside the checkpoint; the existing SVG is replaced (atomically).
cp run.metrics.jsonl m.metrics.jsonl
"$STRIX" plot --model m.safetensors --svg loss.svg >/dev/null 2>err.txt \
    && check "--model m.safetensors reads m.metrics.jsonl" "$(points val loss.svg)" \
        "250.0,160.0 610.0,310.0" \
    || fail "--model: $(cat err.txt)"
ls loss.svg.tmp.* >/dev/null 2>&1 && fail "a temp file was left behind"

# 3. A null splits the curve; a resumed run (step 200 again) replaces the steps from 200 on; lines
# without a loss are ignored. Steps 0..400 -> ticks every 100; losses 1..5 -> ticks every 1:
# (0,5) -> 70,40 alone; (200,3.5) -> 340,152.5; (400,1) -> 610,340. No val curve, no val legend.
cat >gaps.jsonl <<'EOF'
{"step":0,"train_loss":5.0}
{"step":100,"train_loss":null}
{"step":200,"train_loss":3.0}
{"step":300,"train_loss":2.0}
{"step":200,"train_loss":3.5}
{"step":400,"train_loss":1.0}
{"step":400,"note":"something else"}
EOF
"$STRIX" plot gaps.jsonl --svg gaps.svg >out.txt 2>err.txt || fail "gaps: $(cat err.txt)"
check "null gap and resumed steps" "$(points train gaps.svg | tr '\n' '|')" \
    "70.0,40.0|340.0,152.5 610.0,340.0|"
check "no val curve" "$(points val gaps.svg)" ""
grep -q '>val loss<' gaps.svg && fail "val legend without a val curve"
check "x ticks 0..400" "$(ticks xtick gaps.svg)" "0 100 200 300 400 "
grep -qF "wrote gaps.svg: 3 train and 0 val points" out.txt && ok "summary line" \
    || fail "summary line: $(cat out.txt)"

# 4. An unfinished last line (a run writing it) is skipped with a warning.
cp run.metrics.jsonl partial.jsonl
printf '{"step":50,"train_lo' >>partial.jsonl
"$STRIX" plot partial.jsonl --svg partial.svg >/dev/null 2>err.txt || fail "partial: exit status"
grep -q "warning: partial.jsonl:8: skipped the unfinished last line" err.txt \
    && ok "unfinished last line: $(cat err.txt)" || fail "partial warning: $(cat err.txt)"
check "partial: complete lines drawn" "$(points train partial.svg)" \
    "70.0,40.0 250.0,190.0 430.0,265.0 610.0,340.0"

# 5. Errors: one line, non-zero exit, no picture written.
printf '{"step":1,"train_loss":2}\n{"step":2,"train_loss":1.5}\nnot json\n{"step":3}\n' >bad.jsonl
expect_error "malformed line" "bad.jsonl:3: not a JSON object" "$STRIX" plot bad.jsonl --svg b.svg
printf '{"step":1,"train_loss":"2.0"}\n' >str.jsonl
expect_error "loss as a string" 'str.jsonl:1: "train_loss" is neither a number nor null' \
    "$STRIX" plot str.jsonl --svg b.svg
printf '{"train_loss":2.0}\n' >nostep.jsonl
expect_error "no step" 'nostep.jsonl:1: no "step" number' "$STRIX" plot nostep.jsonl --svg b.svg
: >empty.jsonl
expect_error "empty log" "empty.jsonl has no train or val loss to plot" \
    "$STRIX" plot empty.jsonl --svg b.svg
printf '{"step":1,"train_loss":null}\n{"step":1,"val_loss":null}\n' >nulls.jsonl
expect_error "all null" "nulls.jsonl has no train or val loss to plot (1 train and 1 val" \
    "$STRIX" plot nulls.jsonl --svg b.svg
[ -e b.svg ] && fail "a failed plot wrote b.svg"
expect_error "missing log" "cannot open the log nosuch.jsonl" "$STRIX" plot nosuch.jsonl --svg b.svg
expect_error "no --svg" "--svg FILE is required" "$STRIX" plot run.metrics.jsonl
echo "precious notes" >notes.txt
expect_error "non-SVG file kept" "notes.txt exists and is not an SVG picture" \
    "$STRIX" plot run.metrics.jsonl --svg notes.txt
check "notes.txt unchanged" "$(cat notes.txt)" "precious notes"
expect_error "log as --svg" "exists and is not an SVG picture" \
    "$STRIX" plot run.metrics.jsonl --svg run.metrics.jsonl
mkdir adir
expect_error "directory" "adir is a directory" "$STRIX" plot run.metrics.jsonl --svg adir
expect_error "log and --model" "not both" "$STRIX" plot run.metrics.jsonl --model m.safetensors \
    --svg x.svg
"$STRIX" plot --help | grep -q "strix plot \[LOG\]" && ok "plot --help" || fail "plot --help"
check "plot --help: one flags header" "$("$STRIX" plot --help | grep -c '^Flags')" 1

# LOG anywhere among the flags (or after --): the same picture as LOG first
"$STRIX" plot run.metrics.jsonl --svg first.svg >/dev/null 2>&1 || fail "LOG first"
"$STRIX" plot --svg after.svg run.metrics.jsonl >/dev/null 2>err.txt \
    && same_file "LOG after the flags: the same picture" first.svg after.svg \
    || fail "LOG after the flags: $(cat err.txt)"
"$STRIX" plot --svg=mid.svg run.metrics.jsonl >/dev/null 2>err.txt \
    && same_file "LOG after --svg=FILE: the same picture" first.svg mid.svg \
    || fail "LOG after --svg=FILE: $(cat err.txt)"
"$STRIX" plot --svg dash.svg -- run.metrics.jsonl >/dev/null 2>err.txt \
    && same_file "LOG after --: the same picture" first.svg dash.svg \
    || fail "LOG after --: $(cat err.txt)"
# a value after a flag that needs one stays that flag's value: --svg LOG writes LOG (refused, the
# log is not an SVG), never reads it as the log
expect_error "--svg LOG: LOG is the value of --svg" "--svg run.metrics.jsonl exists and is not" \
    "$STRIX" plot --svg run.metrics.jsonl
expect_error "two logs" "unexpected argument 'two.jsonl' (it takes 1 argument" \
    "$STRIX" plot run.metrics.jsonl --svg two.svg two.jsonl
expect_error "a short option" "unexpected argument '-s'" \
    "$STRIX" plot run.metrics.jsonl -s two.svg
[ ! -e two.svg ] && ok "refused runs draw nothing" || fail "two.svg written"

# the metrics logs `make run` and strix train leave (model.metrics.jsonl) and the keep-best
# checkpoints are ignored by git (when the tests run in a git checkout)
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    for f in model.metrics.jsonl sub/run.metrics.jsonl model.best.safetensors explain.svg; do
        git -C "$ROOT" check-ignore -q --no-index "$f" && ok "git ignores $f" \
            || fail "git does not ignore $f"
    done
fi

finish
