#!/usr/bin/env bash
# export.sh - `strix export`: the weights-only file of a trained checkpoint is about a third of its
# size, samples the same text and explains the same relevances as the full checkpoint; re-exported
# it gives the same bytes; it cannot be resumed; --out is checked like train's (never --model, a
# directory, a file that is not a strix checkpoint, a full checkpoint without --force); a truncated
# weights-only file is refused with one line.
source "$(dirname "$0")/lib.bash"

"$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 60 --eval-every 60 --eval-batches 2 \
    --out m.st >/dev/null 2>&1 || { fail "training the model"; finish; }

"$STRIX" export --model m.st --out w.st >export.out 2>export.err || fail "export: $(cat export.err)"
[ ! -s export.err ] && ok "nothing on stderr" || fail "stderr: $(cat export.err)"
full=$(stat -c %s m.st) wo=$(stat -c %s w.st)
# 17,440 parameters: 69,760 bytes of weights against 209,280 with both AdamW moments
if [ "$((wo * 100 / full))" -ge 30 ] && [ "$((wo * 100 / full))" -le 36 ]; then
    ok "weights-only file is $wo of $full bytes"
else
    fail "weights-only file is $wo of $full bytes"
fi
grep -qF "wrote w.st: $wo bytes, weights only; the full checkpoint m.st: $full bytes" export.out \
    && ok "export reports both sizes" || fail "export report: $(cat export.out)"

# the same samples, seeded and greedy, past the block size (16) too
for model in m.st w.st; do
    "$STRIX" sample --model "$model" --prompt "ROMEO:" --tokens 100 --seed 7 >"s7.$model.txt" \
        || fail "sample $model"
    "$STRIX" sample --model "$model" --prompt "ROMEO:" --tokens 60 --temperature 0 \
        >"g.$model.txt" || fail "greedy $model"
    "$STRIX" explain --model "$model" --prompt "ROMEO: O Rom" --color never \
        --json "e.$model.json" >"e.$model.txt" || fail "explain $model"
done
same_file "seeded sample: full == weights-only" s7.m.st.txt s7.w.st.txt
same_file "greedy sample: full == weights-only" g.m.st.txt g.w.st.txt
[ "$(stat -c %s s7.w.st.txt)" -eq 106 ] && ok "prompt + 100 bytes" || fail "sample length"
# the explanations differ only in the model's and the JSON file's names
sed 's/m\.st/MODEL/g' e.m.st.txt >e1.txt
sed 's/w\.st/MODEL/g' e.w.st.txt >e2.txt
same_file "explain table: full == weights-only" e1.txt e2.txt
grep -q "relevance sums: output" e2.txt && ok "weights-only explanation has sums" \
    || fail "no relevance sums"
sed 's/m\.st/MODEL/g' e.m.st.json >j1.txt
sed 's/w\.st/MODEL/g' e.w.st.json >j2.txt
same_file "explain JSON relevances: full == weights-only" j1.txt j2.txt

# re-exporting a weights-only file gives the same bytes; replacing one says so
"$STRIX" export --model w.st --out w2.st >/dev/null || fail "export of a weights-only file"
same_file "re-export is byte-identical" w.st w2.st
"$STRIX" export --model m.st --out w2.st >re.out || fail "replace a weights-only file"
grep -q "^note: replaced the weights-only file w2.st" re.out && ok "replacing it is noted" \
    || fail "no note: $(cat re.out)"

# a weights-only file is not a run
expect_error "resume a weights-only file" "weights-only file" "$STRIX" train --resume w.st
# --out safety
cp m.st m_copy.st
expect_error "--out is --model" "is the checkpoint --model" \
    "$STRIX" export --model m.st --out ./m.st
expect_error "--out a full checkpoint" "--force replaces it" \
    "$STRIX" export --model w.st --out m_copy.st
same_file "the full checkpoint is untouched" m.st m_copy.st
"$STRIX" export --model w.st --out m_copy.st --force >/dev/null \
    && same_file "--force replaces it" w.st m_copy.st || fail "--force"
echo "precious" >notes.txt
expect_error "--out a non-strix file" "is not a strix checkpoint" \
    "$STRIX" export --model m.st --out notes.txt
[ "$(cat notes.txt)" = "precious" ] && ok "non-strix file untouched" || fail "notes.txt changed"
mkdir -p dir.st
expect_error "--out a directory" "is a directory" "$STRIX" export --model m.st --out dir.st
expect_error "--out in a missing directory" "does not exist" \
    "$STRIX" export --model m.st --out nowhere/w.st
expect_error "--out missing" "are required" "$STRIX" export --model m.st
expect_error "--model not a checkpoint" "notes.txt" \
    "$STRIX" export --model notes.txt --out x.st
[ ! -e x.st ] && ok "nothing written on failure" || fail "x.st was written"

"$STRIX" export --help >help.txt && grep -q -- "--force" help.txt && grep -q "weights-only" help.txt \
    && ok "export --help" || fail "export --help"

# a truncated weights-only file is refused by every reader, with one line
head -c $((wo - 100)) w.st >cut.st
expect_error "sample a truncated weights-only file" "cut.st" "$STRIX" sample --model cut.st
expect_error "explain a truncated weights-only file" "cut.st" \
    "$STRIX" explain --model cut.st --prompt "RO"
expect_error "export a truncated weights-only file" "cut.st" \
    "$STRIX" export --model cut.st --out y.st
ls ./*.tmp.* >/dev/null 2>&1 && fail "temp files left: $(ls ./*.tmp.*)" || ok "no temp files left"
finish
