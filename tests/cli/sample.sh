#!/usr/bin/env bash
# sample.sh - `strix sample`: greedy and seeded sampling are reproducible, the output is the prompt
# plus exactly --tokens bytes, top-k/top-p work, and generation runs past the block size with both
# --window rules (slide, the default, and reprime; tests/test_sample.c checks their tokens).
source "$(dirname "$0")/lib.bash"

"$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 60 --eval-every 60 --eval-batches 2 \
    --out m.st >/dev/null 2>&1 || { fail "training the model"; finish; }
S=("$STRIX" sample --model m.st)

"${S[@]}" --prompt "ROMEO:" --tokens 120 --temperature 0 >g1.txt 2>g1.err || fail "greedy 1"
"${S[@]}" --prompt "ROMEO:" --tokens 120 --temperature 0 >g2.txt || fail "greedy 2"
same_file "greedy twice" g1.txt g2.txt
[ ! -s g1.err ] && ok "nothing on stderr" || fail "stderr: $(cat g1.err)"
[ "$(head -c 6 g1.txt)" = "ROMEO:" ] && ok "output starts with the prompt" || fail "prompt missing"
[ "$(stat -c %s g1.txt)" -eq 126 ] && ok "prompt + 120 bytes" \
    || fail "length $(stat -c %s g1.txt), expected 126"
"${S[@]}" --prompt "ROMEO:" --tokens 120 --temperature 1.5 --top-k 1 >k1.txt || fail "top-k 1"
same_file "top-k 1 == greedy" g1.txt k1.txt

"${S[@]}" --prompt "ROMEO:" --tokens 200 --seed 5 >s5a.txt || fail "seed 5"
"${S[@]}" --prompt "ROMEO:" --tokens 200 --seed 5 >s5b.txt || fail "seed 5 again"
same_file "one seed twice" s5a.txt s5b.txt
"${S[@]}" --prompt "ROMEO:" --tokens 200 --seed 6 >s6.txt || fail "seed 6"
cmp -s s5a.txt s6.txt && fail "seeds 5 and 6 gave the same text" || ok "another seed differs"

"${S[@]}" --prompt "ROMEO:" --tokens 50 --top-k 1000 --top-p 0.9 --seed 1 >kp.txt \
    && [ "$(stat -c %s kp.txt)" -eq 56 ] && ok "top-k above V and top-p" || fail "top-k/top-p run"
"${S[@]}" --prompt "ROMEO:" --tokens 0 >zero.txt && [ "$(cat zero.txt)" = "ROMEO:" ] \
    && ok "--tokens 0 prints the prompt" || fail "--tokens 0"
"${S[@]}" --tokens 64 --seed 2 >empty.txt && [ "$(stat -c %s empty.txt)" -eq 64 ] \
    && ok "empty prompt" || fail "empty prompt"
# block 16: 300 tokens re-prime the cache many times; a 40-byte prompt is cropped
"${S[@]}" --prompt "First Citizen: Before we proceed any fur" --tokens 300 --temperature 0 \
    >long.txt && [ "$(stat -c %s long.txt)" -eq 340 ] && ok "generation past the block size" \
    || fail "long generation"
"${S[@]}" --prompt "First Citizen: Before we proceed any fur" --tokens 300 --temperature 0 \
    >long2.txt
same_file "long greedy generation twice" long.txt long2.txt
"${S[@]}" --prompt "First Citizen: Before we proceed any fur" --tokens 300 --temperature 0 \
    --window slide >slide.txt || fail "--window slide"
same_file "--window slide is the default" long.txt slide.txt
"${S[@]}" --prompt "First Citizen: Before we proceed any fur" --tokens 300 --temperature 0 \
    --window reprime >reprime.txt && [ "$(stat -c %s reprime.txt)" -eq 340 ] \
    && ok "--window reprime past the block size" || fail "--window reprime"
cmp -s slide.txt reprime.txt && fail "slide and reprime gave the same 300 bytes" \
    || ok "reprime differs from the sliding window"
"${S[@]}" --prompt "ROMEO:" --tokens 5 --window wide >bad.txt 2>bad.err
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <bad.err)" -eq 1 ] && grep -q -- "--window takes slide or reprime" \
    bad.err && ok "--window wide refused (exit 2, one line)" \
    || fail "--window wide: rc $rc, $(cat bad.err)"

# --threads above the online cores: train's one-line warning, the thread count kept (the same
# text), for sample and explain alike; at the core count no warning
cores=$(getconf _NPROCESSORS_ONLN)
many=$((cores + 3))
want="strix: warning: --threads $many exceeds the $cores online cores; oversubscribed threads"
want+=" make every step much slower (keeping $many)"
"${S[@]}" --prompt "ROMEO:" --tokens 40 --seed 3 --threads $many >th.txt 2>th.err \
    && [ "$(cat th.err)" = "$want" ] && ok "sample --threads $many: the warning, one line" \
    || fail "sample --threads $many: $(cat th.err)"
"${S[@]}" --prompt "ROMEO:" --tokens 40 --seed 3 >th0.txt 2>/dev/null
same_file "sample --threads $many: the same text" th.txt th0.txt
"${S[@]}" --prompt "ROMEO:" --tokens 5 --threads $cores >/dev/null 2>thc.err \
    && [ ! -s thc.err ] && ok "sample --threads $cores (the core count): no warning" \
    || fail "sample --threads $cores: $(cat thc.err)"
"$STRIX" explain --model m.st --prompt "ROMEO:" --threads $many >ex.txt 2>ex.err \
    && [ "$(grep -c 'warning: --threads' ex.err)" -eq 1 ] && grep -qxF "$want" ex.err \
    && grep -q "^next character" ex.txt && ok "explain --threads $many: the same warning, once" \
    || fail "explain --threads $many: $(cat ex.err)"
expect_error "--tokens beyond 64 bits: the range, not 'an integer'" \
    "--tokens must be <= 1073741824 (got 99999999999999999999)" \
    "${S[@]}" --tokens 99999999999999999999
finish
