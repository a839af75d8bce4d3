#!/usr/bin/env bash
# explain.sh - `strix explain`: the text output (plain without a terminal or with NO_COLOR,
# 24-bit colour on a terminal or with --color always), the SVG / HTML / JSON files (well-formed,
# escaped, consistent with the text output, written atomically, reproducible on 1 or 2 threads),
# every rule and method, targets and contrasts, prompts from a file or standard input, prompts
# longer than the block, UTF-8 characters merged, bytes that do not print, the conservation
# warning (given exactly when the sums are off by > 25 % or of opposite signs), the deletion
# check (its values equal a recomputation, and the most relevant characters matter more than
# random ones), --force, and one clear error line for every kind of bad input.
source "$(dirname "$0")/lib.bash"
PY=/usr/bin/python3

"$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 60 --eval-every 60 --eval-batches 2 \
    --out m.st >/dev/null 2>&1 || { fail "training the model"; finish; }
before=$(sha256sum <m.st)
E=("$STRIX" explain --model m.st)
PROMPT="ROMEO: It's"

# warned NAME OUT ERR [IG]: stderr holds the conservation warning exactly when the sums of the
# text output OUT say so (LRP: input vs output; IG: input vs output - baseline), and nothing else.
warned() {
    $PY - "$2" "$3" <<'PY' && ok "$1: conservation warning iff off by > 25 % or opposite sign" \
        || fail "$1: conservation warning: $(cat "$3")"
import re, sys
text, err = open(sys.argv[1]).read(), open(sys.argv[2]).read()
m = re.search(r"relevance sums: output (\S+), input ([-0-9.]+)", text)
out, inp = float(m.group(1)), float(m.group(2))
b = re.search(r"baseline output (\S+):", text)
want = out - float(b.group(1)) if b else out
off = want * inp < 0 or abs(inp - want) > 0.25 * abs(want)
lines = err.splitlines()
assert len(lines) == (1 if off else 0), (off, want, inp, lines)
assert not off or lines[0].startswith("strix: warning: the input relevance sum "), lines
print("  output", want, "input", inp, "warned" if off else "no warning")
PY
}

# ---- plain text (stdout is a file here, so no colour)
"${E[@]}" --prompt "$PROMPT" >plain.txt 2>plain.err || fail "explain exit status $?"
warned "default explanation" plain.txt plain.err
grep -q $'\x1b' plain.txt && fail "escape codes in non-tty output" || ok "no colour without a tty"
grep -qE "^next character: '.+' \(p = 0\.[0-9]{4}\)$" plain.txt && ok "predicted character line" \
    || fail "no 'next character' line"
grep -qE "^explained: logit of '.+' = -?[0-9.]+ \(p = 0\.[0-9]{4}\)$" plain.txt \
    && ok "explained target line" || fail "no 'explained' line"
rows=$(grep -cE "^ +[0-9]+  '.+' +[-+][0-9]+\.[0-9]{6}$" plain.txt)
top=$(grep -cE "^ +[0-9]+  '.+' +[-+][0-9]+\.[0-9]{6} +[0-9]+\.[0-9]%$" plain.txt)
[ "$rows" -eq ${#PROMPT} ] && [ "$top" -eq 10 ] && ok "one table row per position, 10 top rows" \
    || fail "$rows table rows and $top top rows, expected ${#PROMPT} and 10"
grep -qE "^ +10  's' +[-+]" plain.txt && grep -qE "^ +9  '\\\\'' " plain.txt \
    && ok "positions and escaped quote in the table" || fail "table rows: $(head -20 plain.txt)"
grep -q "^top 10 contributors:" plain.txt && ok "top contributors" || fail "no top list"
grep -qE "^relevance sums: output -?[0-9.]+, input -?[0-9.]+ " plain.txt && ok "relevance sums" \
    || fail "no relevance sums"
"${E[@]}" --prompt "$PROMPT" --top 3 >top3.txt && [ "$(grep -A4 '^top 3' top3.txt | grep -cE \
    "^ +[0-9]+  '")" -eq 3 ] && ok "--top 3" || fail "--top 3"
"${E[@]}" --prompt "$PROMPT" --top 0 | grep -q "contributors" && fail "--top 0 lists" \
    || ok "--top 0 lists nothing"

# ---- colour
"${E[@]}" --prompt "$PROMPT" --color always >color.txt || fail "--color always"
n_cells=$(grep -o $'\x1b\\[48;2;[0-9]*;[0-9]*;[0-9]*m' color.txt | wc -l)
[ "$n_cells" -eq ${#PROMPT} ] && ok "--color always: one 24-bit background per character" \
    || fail "$n_cells coloured cells, expected ${#PROMPT}"
NO_COLOR=1 "${E[@]}" --prompt "$PROMPT" --color always | grep -q $'\x1b\\[48;2' \
    && ok "--color always beats NO_COLOR" || fail "--color always with NO_COLOR"
if command -v script >/dev/null; then
    script -qec "$(printf '%q ' "${E[@]}" --prompt "$PROMPT")" /dev/null >tty.txt 2>&1
    grep -q $'\x1b\\[48;2' tty.txt && ok "a terminal gets colour" || fail "no colour on a tty"
    NO_COLOR=1 script -qec "$(printf '%q ' "${E[@]}" --prompt "$PROMPT")" /dev/null >tty2.txt 2>&1
    grep -q $'\x1b\\[48;2' tty2.txt && fail "NO_COLOR ignored on a tty" \
        || { grep -qE "^ +10  's' " tty2.txt && ok "NO_COLOR on a tty: plain table" \
            || fail "NO_COLOR output: $(head -5 tty2.txt)"; }
else
    echo "skip: no script(1) for a pseudo-terminal"
fi

# ---- files
"${E[@]}" --prompt "$PROMPT" --svg e.svg --html e.html --json e.json >files.txt \
    || fail "writing files"
for f in e.svg e.html e.json; do
    grep -q "^wrote $f$" files.txt && [ -s $f ] && ok "wrote $f" || fail "$f missing"
done
ls -A | grep -qE '^\.strix-tmp-|\.tmp\.[0-9]+$' && fail "temp files left behind" || ok "no temp files left"
# JSON: fields, one entry per position, values as printed
$PY - "$PROMPT" files.txt <<'PY' && ok "JSON fields and values" || fail "JSON check"
import json, re, sys
prompt, text = sys.argv[1], open(sys.argv[2]).read()
d = json.load(open("e.json"))
assert d["prompt"] == prompt and d["offset"] == 0 and d["rule"] == "attnlrp", d
assert len(d["predicted"]) == 1 and d["contrast"] is None and d["target"] == d["predicted"]
assert 0 < d["probability"] <= 1 and d["probability"] == d["target_probability"]
pos = d["positions"]
assert [p["position"] for p in pos] == list(range(len(prompt)))
assert "".join(p["char"] for p in pos) == prompt
assert [p["byte"] for p in pos] == list(prompt.encode())
s = sum(p["relevance"] for p in pos)
assert abs(s - d["relevance_characters_sum"]) <= 1e-5 * max(1.0, abs(s))
s += sum(p["position_relevance"] for p in pos)  # learned positions: their share of x0
assert abs(s - d["relevance_in_sum"]) <= 1e-4 * max(1.0, abs(s)), (s, d["relevance_in_sum"])
assert "softmax_gap" in d
m = re.search(r"relevance sums: output (\S+), input (\S+) ", text)
assert abs(float(m.group(1)) - d["relevance_out_sum"]) < 1e-5, m.group(0)
assert abs(float(m.group(2)) - d["relevance_in_sum"]) < 1e-5, m.group(0)
m = re.search(r"next character: '(.+)' \(p = (\S+)\)", text)
assert abs(float(m.group(2)) - d["probability"]) < 1e-4
PY
$PY - <<'PY' && ok "SVG is well-formed XML with a cell per character" || fail "SVG check"
import xml.etree.ElementTree as ET
root = ET.parse("e.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg"
titles = [t.text for t in root.iter(ns + "title")]
assert len(titles) == 11 and titles[9].startswith("position 9 '\\''"), titles
texts = "".join(t.text or "" for t in root.iter(ns + "text"))
assert "Next character: '" in texts and "relevance sums" in texts
PY
if command -v xmllint >/dev/null; then
    xmllint --noout e.svg && ok "xmllint: SVG" || fail "xmllint SVG"
    xmllint --html --noout e.html 2>html.err && [ ! -s html.err ] && ok "xmllint: HTML" \
        || fail "xmllint HTML: $(head -3 html.err)"
fi
[ "$(grep -o 'data-tip="position' e.html | wc -l)" -eq ${#PROMPT} ] && grep -q '<style>' e.html \
    && ! grep -qE '<script|src=|href=' e.html && ok "HTML: self-contained, a hover tip per character" \
    || fail "HTML content"

# reproducible, whatever the thread count; the checkpoint is never touched
"${E[@]}" --prompt "$PROMPT" --json t1.json --threads 1 >/dev/null || fail "--threads 1"
"${E[@]}" --prompt "$PROMPT" --json t2.json --threads 2 >/dev/null || fail "--threads 2"
same_file "JSON on 1 and 2 threads" t1.json t2.json
same_file "JSON twice" t1.json e.json
# files are replaced whole (atomic rename), not appended to
"${E[@]}" --prompt "ROMEO" --json e.json >/dev/null && $PY -c "import json; \
    assert json.load(open('e.json'))['prompt'] == 'ROMEO'" && ok "an existing file is replaced" \
    || fail "rewrite of e.json"

# ---- rules, targets, contrast
for rule in attnlrp epsilon gamma alpha-beta; do
    "${E[@]}" --prompt "$PROMPT" --rule $rule --json r_$rule.json >r.txt 2>r.err \
        && grep -q "rule $rule" r.txt && ok "--rule $rule" || fail "--rule $rule: $(cat r.err)"
done
cmp -s r_attnlrp.json r_epsilon.json && fail "attnlrp and epsilon agree (LayerNorm ignored?)" \
    || ok "attnlrp (LayerNorm std held constant) differs from epsilon (pass-through)"
"${E[@]}" --prompt "$PROMPT" --target e --contrast a --json tc.json --svg tc.svg >tc.txt \
    && grep -q "^explained: logit of 'e' minus logit of 'a' = " tc.txt \
    && $PY -c "import json; d=json.load(open('tc.json')); \
        assert d['target']=='e' and d['contrast']=='a' and d['contrast_byte']==97" \
    && ok "--target e --contrast a" || fail "target/contrast"
# the difference and both logits are shown (text and SVG), and agree with the JSON and the seed
$PY - <<'PY' && ok "--contrast: 'explained:' shows logit(e) - logit(a) and both logits" \
    || fail "--contrast values: $(grep explained tc.txt)"
import json, re
d, text = json.load(open("tc.json")), open("tc.txt").read()
m = re.search(r"^explained: logit of 'e' minus logit of 'a' = (\S+) \((\S+) - (\S+)\)$", text, re.M)
diff, te, ta = map(float, m.groups())
assert abs(te - d["target_logit"]) <= 1e-4 and abs(ta - d["contrast_logit"]) <= 1e-4, (te, ta, d)
assert abs(diff - (d["target_logit"] - d["contrast_logit"])) <= 2e-4, (diff, d)
assert abs(diff - d["relevance_out_sum"]) <= 1e-4, (diff, d["relevance_out_sum"])  # LRP's seed
svg = re.search(r"minus logit of 'a' = (\S+) \(", open("tc.svg").read())
assert abs(diff) > 1e-3 and abs(float(svg.group(1)) - diff) <= 2e-4, (diff, svg)
PY
"${E[@]}" --prompt "$PROMPT" --target '\n' --json tn.json >tn.txt \
    && grep -q "^explained: logit of '\\\\n'" tn.txt \
    && $PY -c "import json; assert json.load(open('tn.json'))['target'] == '\n'" \
    && ok "--target '\\n' (escape)" || fail "--target '\\n'"
"${E[@]}" --prompt "$PROMPT" --one-hot --json oh.json >oh.txt \
    && $PY -c "import json; assert abs(json.load(open('oh.json'))['relevance_out_sum']-1)<1e-6" \
    && ok "--one-hot seeds 1" || fail "--one-hot"

# ---- conservation warning: --contrast and rules, each checked against its own sums
"${E[@]}" --prompt "$PROMPT" --target e --contrast a >w1.txt 2>w1.err || fail "contrast run"
warned "--contrast" w1.txt w1.err
"${E[@]}" --prompt "$PROMPT" --rule epsilon --eps 0.5 >w2.txt 2>w2.err || fail "epsilon run"
warned "--rule epsilon --eps 0.5" w2.txt w2.err
"${E[@]}" --prompt "$PROMPT" --method integrated-gradients --ig-steps 100 >w3.txt 2>w3.err \
    || fail "IG run"
warned "integrated-gradients" w3.txt w3.err
"${E[@]}" --prompt "$PROMPT" --method saliency >w4.txt 2>w4.err && [ ! -s w4.err ] \
    && ok "saliency: no conservation warning (no sum is promised)" \
    || fail "saliency: $(cat w4.err)"

# ---- --method: every method; values as the JSON says; gradient methods differ from LRP
for m in lrp gradient-x-input integrated-gradients saliency; do
    "${E[@]}" --prompt "$PROMPT" --method $m --json m_$m.json >m.txt 2>m.err \
        && grep -q "; \(method $m\|rule attnlrp\)" m.txt && ok "--method $m" \
        || fail "--method $m: $(cat m.err)"
done
$PY - <<'PY' && ok "methods: JSON method fields, saliency >= 0, IG completeness" \
    || fail "methods JSON"
import json
d = {m: json.load(open(f"m_{m}.json")) for m in
     ["lrp", "gradient-x-input", "integrated-gradients", "saliency"]}
assert d["lrp"]["method"] == "lrp" and d["lrp"]["rule"] == "attnlrp"
for m in ["gradient-x-input", "integrated-gradients", "saliency"]:
    assert d[m]["method"] == m and d[m]["rule"] is None, d[m]
    assert "position_relevance" not in d[m]["positions"][0]  # token embeddings only
    # the explained output is the same logit whatever the method
    assert abs(d[m]["relevance_out_sum"] - d["lrp"]["relevance_out_sum"]) < 1e-5
    s = sum(p["relevance"] for p in d[m]["positions"])
    assert abs(s - d[m]["relevance_in_sum"]) < 1e-5 * max(1, abs(s))
    r = [p["relevance"] for p in d[m]["positions"]]
    assert r != [p["relevance"] for p in d["lrp"]["positions"]]
assert all(p["relevance"] >= 0 for p in d["saliency"]["positions"])
ig = d["integrated-gradients"]
assert ig["ig_steps"] == 50 and "conserved_sum" in ig and "baseline_output" in ig
assert abs(ig["conserved_sum"] - (ig["relevance_out_sum"] - ig["baseline_output"])) < 1e-6
gap = abs(ig["relevance_in_sum"] - ig["conserved_sum"])
assert gap <= 0.02 * abs(ig["conserved_sum"]) + 1e-4, ig
assert "conserved_sum" not in d["gradient-x-input"] and "conserved_sum" not in d["saliency"]
PY
"${E[@]}" --prompt "$PROMPT" --method integrated-gradients --ig-steps 3 --json ig3.json \
    >/dev/null 2>&1 && $PY -c "import json; assert json.load(open('ig3.json'))['ig_steps'] == 3" \
    && ok "--ig-steps 3" || fail "--ig-steps 3"

# ---- --prompt-file FILE and - (standard input): the same bytes, the same explanation
printf '%s' "$PROMPT" >prompt.txt
"${E[@]}" --prompt "$PROMPT" --json pf0.json >/dev/null 2>&1
"${E[@]}" --prompt-file prompt.txt --json pf1.json >/dev/null 2>&1 || fail "--prompt-file"
"${E[@]}" --prompt-file - --json pf2.json <prompt.txt >/dev/null 2>&1 || fail "--prompt-file -"
same_file "--prompt-file FILE explains as --prompt" pf0.json pf1.json
same_file "--prompt-file - (stdin) explains as --prompt" pf0.json pf2.json
printf 'ROMEO:\n' | "${E[@]}" --prompt-file - --json pf3.json >/dev/null 2>&1 \
    && $PY -c "import json; assert json.load(open('pf3.json'))['prompt'] == 'ROMEO:\n'" \
    && ok "a prompt file's bytes are kept as they are (trailing newline)" || fail "pf3"

# ---- --deletion K: the reported outputs equal a recomputation of the shortened prompts, and
# on a trained model deleting the most relevant characters lowers the logit more than random
"$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 150 --eval-every 150 --eval-batches 2 \
    --out d.st >/dev/null 2>&1 || fail "training the deletion model"
n=0
for p in "ROMEO: It's" "First Citizen:" "KING HENRY: My" "And then the "; do
    n=$((n + 1))
    "$STRIX" explain --model d.st --prompt "$p" --deletion 3 --json del$n.json >del$n.txt \
        2>/dev/null || fail "--deletion 3 on '$p'"
done
NUM="-?[0-9.]+"
grep -qE "^deletion of the 3 most relevant characters \(removed\): output $NUM -> $NUM \(drop $NUM\)$" \
    del1.txt && grep -qE "^deletion of 3 random characters \(mean of 10 draws, seed 0\): " del1.txt \
    && ok "--deletion: both drops reported" || fail "--deletion lines: $(cat del1.txt)"
$PY - "$STRIX" <<'PY' && ok "--deletion: values equal the recomputed logits" \
    || fail "--deletion recomputation"
import json, subprocess, sys
strix = sys.argv[1]
for n in range(1, 5):
    d = json.load(open(f"del{n}.json"))
    dl, prompt = d["deletion"], d["prompt"].encode()
    assert dl["k"] == 3 and len(dl["positions"]) == 3 and dl["random_draws"] == 10
    assert abs(dl["output_before"] - d["target_logit"]) < 1e-5, dl
    # the 3 largest relevances, removed from the prompt
    pos = sorted(d["positions"], key=lambda p: (-p["relevance"], p["position"]))[:3]
    assert [p["position"] for p in pos] == dl["positions"], (pos, dl)
    gone = {p["position"]: len(p["bytes"]) for p in pos}
    out, i = b"", 0
    while i < len(prompt):
        if i in gone: i += gone[i]
        else: out += prompt[i:i + 1]; i += 1
    open("deleted.txt", "wb").write(out)
    subprocess.run([strix, "explain", "--model", "d.st", "--prompt-file", "deleted.txt",
                    "--target", d["target"], "--json", "re.json"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = json.load(open("re.json"))["target_logit"]
    assert abs(after - dl["output_after"]) < 1e-5 * max(1, abs(after)), (after, dl)
    assert abs(dl["drop"] - (dl["output_before"] - dl["output_after"])) < 1e-9
PY
$PY - <<'PY' && ok "--deletion: the most relevant characters lower the logit more than random" \
    || fail "--deletion: relevance-ordered deletion not better than random"
import json
top = [json.load(open(f"del{n}.json"))["deletion"]["drop"] for n in range(1, 5)]
rnd = [json.load(open(f"del{n}.json"))["deletion"]["random_drop"] for n in range(1, 5)]
print("  mean drop: most relevant", sum(top) / 4, "random", sum(rnd) / 4)
assert sum(top) > sum(rnd), (top, rnd)
PY
# --seed takes the whole u64 range; the same seed draws the same random characters, another seed
# other ones (the most relevant ones stay)
for sd in 5 5b 6 18446744073709551615; do
    "$STRIX" explain --model d.st --prompt "ROMEO: It's" --deletion 2 --seed ${sd%b} \
        --json s$sd.json >/dev/null 2>s$sd.err || fail "--deletion 2 --seed $sd: $(cat s$sd.err)"
done
same_file "--deletion --seed: reproducible" s5.json s5b.json
$PY - <<'PY' && ok "--deletion --seed 5, 6 and 2^64-1: other random drops, the same top drop" \
    || fail "--deletion --seed: the seed changes nothing"
import json
d = [json.load(open(f"s{s}.json"))["deletion"] for s in ("5", "6", "18446744073709551615")]
assert d[0]["seed"] == 5 and d[1]["seed"] == 6 and d[2]["seed"] == 2**64 - 1, d
assert len({x["random_drop"] for x in d}) == 3, [x["random_drop"] for x in d]
assert len({x["drop"] for x in d}) == 1, [x["drop"] for x in d]
PY
"$STRIX" explain --model d.st --prompt "ROMEO" --deletion 2 --seed 18446744073709551615 >smax.txt \
    2>/dev/null && grep -q "(mean of 10 draws, seed 18446744073709551615)" smax.txt \
    && ok "--seed 2^64-1 (the largest) is taken" || fail "--seed 2^64-1: $(cat smax.txt)"
expect_error "--seed 2^64" "--seed must be <= 18446744073709551615 (got 18446744073709551616)" \
    "$STRIX" explain --model d.st --prompt "ROMEO" --deletion 2 --seed 18446744073709551616
expect_error "--deletion as large as the prompt" "--deletion 5 must be below the 5 characters" \
    "$STRIX" explain --model d.st --prompt "ROMEO" --deletion 5

# ---- a prompt longer than the block (16) is cropped; newlines and quotes in the pictures
LONG=$'First Citizen:\nBefore we proceed any further, hear me & \'speak\'.'
"${E[@]}" --prompt "$LONG" --svg l.svg --html l.html --json l.json >long.txt || fail "long prompt"
grep -q "prompt cropped to its last 16 characters" long.txt && ok "cropping is reported" \
    || fail "no cropping line"
$PY - "$LONG" <<'PY' && ok "cropped JSON: offsets into the whole prompt" || fail "cropped JSON"
import json, sys
d, p = json.load(open("l.json")), sys.argv[1]
assert d["prompt"] == p and d["offset"] == len(p) - 16 and len(d["positions"]) == 16
assert d["positions"][0]["position"] == len(p) - 16
assert "".join(x["char"] for x in d["positions"]) == p[-16:]
PY
NL=$'ROMEO:\nI & \'you\''
"${E[@]}" --prompt "$NL" --svg n.svg --html n.html >/dev/null || fail "prompt with a newline"
$PY -c "import xml.etree.ElementTree as E; E.parse('n.svg'); E.parse('l.svg')" \
    && grep -q '⏎' n.svg && grep -q '&amp;' n.svg && ok "SVG: newline glyph, escaped &" \
    || fail "SVG escaping"
grep -q '⏎</span>' n.html && grep -q '&amp;' n.html && ok "HTML: newline glyph, escaped &" \
    || fail "HTML escaping"
$PY - <<'PY' && ok "SVG: the quote ' is drawn as itself (&apos;), not as a prime" \
    || fail "SVG quote cells"
import xml.etree.ElementTree as ET
svg = open("n.svg", encoding="utf-8").read()
cells = [t.text for t in ET.parse("n.svg").getroot().iter("{http://www.w3.org/2000/svg}text")]
assert cells.count("'") == 2, cells
assert "\u2032" not in svg and "\u2033" not in svg and "<text" in svg and "&apos;</text>" in svg
PY

# ---- bytes >= 0x80: a UTF-8 character is one cell (its bytes' relevance summed), shown as itself;
# a byte that is not valid UTF-8 stays \xNN
for i in $(seq 200); do printf 'Le caf\xc3\xa9 est tr\xc3\xa8s bon.\tNa\xc3\xafve <b>&"q"</b>\n'; done >u8.txt
"$STRIX" train --data u8.txt "${TINY[@]}" --steps 20 --eval-every 20 --eval-batches 2 \
    --out u8.st >/dev/null 2>&1 || fail "training on UTF-8"
U=$'caf\xc3\xa9\t<b>'
"$STRIX" explain --model u8.st --prompt "$U" --svg u.svg --html u.html --json u.json >u.txt \
    || fail "explain a UTF-8 prompt"
grep -qE "^ +3  'é'  " u.txt && grep -qE "^ +5  '\\\\t' " u.txt && ! grep -q 'xc3' u.txt \
    && [ "$(grep -cE "^ +[0-9]+  '" u.txt)" -eq $((8 + 8)) ] \
    && ok "plain table: é as one row at its first byte, \\t escaped" || fail "table: $(cat u.txt)"
$PY - <<'PY' && ok "UTF-8 prompt: one cell per character in JSON, SVG and HTML" \
    || fail "UTF-8 prompt files"
import json, xml.etree.ElementTree as ET
d = json.load(open("u.json", encoding="utf-8"))
assert d["prompt"] == "café\t<b>", d["prompt"]
pos = d["positions"]
assert [p["char"] for p in pos] == list("café\t<b>"), [p["char"] for p in pos]
assert [p["position"] for p in pos] == [0, 1, 2, 3, 5, 6, 7, 8]
assert pos[3]["bytes"] == [0xc3, 0xa9] and pos[3]["byte"] == 0xc3 and pos[4]["bytes"] == [9]
# the merged cells keep every byte's relevance: characters + positions = the library's input sum
s = sum(p["relevance"] for p in pos) + sum(p["position_relevance"] for p in pos)
assert abs(s - d["relevance_in_sum"]) <= 1e-4 * max(1.0, abs(s)), (s, d["relevance_in_sum"])
ET.parse("u.svg")
svg = open("u.svg", encoding="utf-8").read()
assert "'é'" in svg and "\\xc3" not in svg and "&lt;" in svg and "\u21e5" in svg
assert svg.count("<title>position") == 8
html = open("u.html", encoding="utf-8").read()
assert "é</span>" in html and "\\xc3" not in html and "&lt;</span>" in html
PY
"$STRIX" explain --model u8.st --prompt '<b>&"q"' --svg q.svg >/dev/null 2>&1 || fail "a \" prompt"
$PY - <<'PY' && ok "SVG: the quote \" is drawn as itself (&quot;), not as a prime" \
    || fail "SVG \" cells"
import xml.etree.ElementTree as ET
svg = open("q.svg", encoding="utf-8").read()
cells = [t.text for t in ET.parse("q.svg").getroot().iter("{http://www.w3.org/2000/svg}text")]
assert cells.count('"') == 2, cells
assert "\u2033" not in svg and "&quot;</text>" in svg
PY
# a lone continuation byte (the prompt starts inside a character) stays an escape
"$STRIX" explain --model u8.st --prompt $'\xa9caf\xc3\xa9' --json v.json >v.txt \
    || fail "explain a prompt with invalid UTF-8"
grep -qE "^ +0  '\\\\xa9' " v.txt && grep -qE "^ +4  'é' " v.txt \
    && $PY -c "import json; d=json.load(open('v.json')); \
        assert [p['char'] for p in d['positions']] == ['\\\\xa9','c','a','f','é'], d['positions']" \
    && ok "invalid UTF-8 byte as \\xa9, the valid character after it merged" \
    || fail "invalid UTF-8: $(cat v.txt)"


# ---- bad input: one line, non-zero exit, no crash, nothing written
expect_error "no --model" "--model CKPT is required" "$STRIX" explain --prompt "$PROMPT"
expect_error "no --prompt" "--prompt TEXT (or --prompt-file FILE) is required" "${E[@]}"
expect_error "empty prompt" "must not be empty" "${E[@]}" --prompt ""
expect_error "missing checkpoint" "cannot open 'none.st'" \
    "$STRIX" explain --model none.st --prompt "$PROMPT"
head -c 1000 m.st >trunc.st
expect_error "truncated checkpoint" "past the end" "$STRIX" explain --model trunc.st --prompt "$PROMPT"
printf 'not a checkpoint at all' >junk.st
expect_error "not a checkpoint" "junk.st" "$STRIX" explain --model junk.st --prompt "$PROMPT"
expect_error "unknown rule" "unknown --rule 'zplus'" "${E[@]}" --prompt "$PROMPT" --rule zplus
expect_error "target not in the vocabulary" "--target '~' is not in the model's vocabulary" \
    "${E[@]}" --prompt "$PROMPT" --target '~'
expect_error "contrast not in the vocabulary" "--contrast '\\x80' is not in the model's vocabulary" \
    "${E[@]}" --prompt "$PROMPT" --contrast '\x80'
expect_error "target of two characters" "--target expects one character" \
    "${E[@]}" --prompt "$PROMPT" --target ab
expect_error "bad escape" "--target expects one character" "${E[@]}" --prompt "$PROMPT" --target '\q'
expect_error "contrast == target" "--contrast must differ from --target" \
    "${E[@]}" --prompt "$PROMPT" --target a --contrast a
expect_error "prompt character not in the vocabulary" "character '~' (byte 126) at offset 2" \
    "${E[@]}" --prompt "ab~c"
expect_error "unknown flag" "strix explain: unknown flag --fast" "${E[@]}" --prompt "$PROMPT" --fast
expect_error "negative --top" "--top must be >= 0" "${E[@]}" --prompt "$PROMPT" --top -1
expect_error "bad --color" "--color takes auto, always or never" \
    "${E[@]}" --prompt "$PROMPT" --color sometimes
expect_error "--alpha below 1" "--alpha must be >= 1" "${E[@]}" --prompt "$PROMPT" --alpha 0.5
printf 'my notes\n' > notes.txt
expect_error "--html over a file strix did not write" \
    "was not written by strix explain; --force replaces it" \
    "${E[@]}" --prompt "$PROMPT" --html notes.txt
[ "$(cat notes.txt)" = "my notes" ] && ok "that file is untouched" || fail "notes.txt was changed"
cp notes.txt notes.json
"${E[@]}" --prompt "$PROMPT" --json notes.json --force >/dev/null 2>&1 \
    && $PY -c "import json; assert json.load(open('notes.json'))['prompt'] == \"ROMEO: It's\"" \
    && ok "--force replaces a file strix explain did not write" || fail "--force"
expect_error "--force never writes over the checkpoint" "is the checkpoint" \
    "${E[@]}" --prompt "$PROMPT" --svg m.st --force
expect_error "--json over the prompt file" "is the prompt file" \
    "${E[@]}" --prompt-file notes.txt --json notes.txt --force
[ "$(cat notes.txt)" = "my notes" ] && ok "the prompt file is untouched" || fail "notes.txt changed"
expect_error "--prompt and --prompt-file" "give one of --prompt and --prompt-file, not both" \
    "${E[@]}" --prompt "$PROMPT" --prompt-file prompt.txt
: >empty.txt
expect_error "empty --prompt-file" "--prompt-file empty.txt is empty" \
    "${E[@]}" --prompt-file empty.txt
expect_error "empty standard input" "--prompt-file standard input is empty" \
    "${E[@]}" --prompt-file - </dev/null
expect_error "missing --prompt-file" "cannot read --prompt-file nothere.txt: No such file" \
    "${E[@]}" --prompt-file nothere.txt
expect_error "--prompt-file is a directory" "--prompt-file adir0 is a directory" \
    bash -c 'mkdir -p adir0 && "$@"' _ "${E[@]}" --prompt-file adir0
expect_error "unknown method" "unknown --method 'shap'" "${E[@]}" --prompt "$PROMPT" --method shap
expect_error "--rule with a gradient method" "--rule is an option of --method lrp" \
    "${E[@]}" --prompt "$PROMPT" --method saliency --rule epsilon
expect_error "--gamma without --rule gamma" \
    "--gamma is an option of --rule gamma (got --rule attnlrp)" \
    "${E[@]}" --prompt "$PROMPT" --gamma 0.5
expect_error "--alpha without --rule alpha-beta" \
    "--alpha is an option of --rule alpha-beta (got --rule gamma)" \
    "${E[@]}" --prompt "$PROMPT" --rule gamma --alpha 3
"${E[@]}" --prompt "$PROMPT" --rule gamma --gamma 0.5 --json g5.json >/dev/null 2>&1 \
    && "${E[@]}" --prompt "$PROMPT" --rule alpha-beta --alpha 3 --json a3.json >/dev/null 2>&1 \
    && ! cmp -s g5.json r_gamma.json && ! cmp -s a3.json r_alpha-beta.json \
    && ok "--gamma with --rule gamma and --alpha with --rule alpha-beta change the relevances" \
    || fail "--gamma / --alpha with their rules"
expect_error "--ig-steps without integrated-gradients" "--ig-steps is an option of --method" \
    "${E[@]}" --prompt "$PROMPT" --ig-steps 10
expect_error "--ig-steps 0" "--ig-steps must be >= 1" \
    "${E[@]}" --prompt "$PROMPT" --method integrated-gradients --ig-steps 0
expect_error "--svg over the checkpoint" "is the checkpoint" "${E[@]}" --prompt "$PROMPT" --svg m.st
ln -s m.st link.st
expect_error "--json over the checkpoint through a link" "is the checkpoint" \
    "${E[@]}" --prompt "$PROMPT" --json link.st
mkdir adir
expect_error "--html is a directory" "is a directory" "${E[@]}" --prompt "$PROMPT" --html adir
expect_error "two outputs, one file" "name the same file" \
    "${E[@]}" --prompt "$PROMPT" --svg x.out --json x.out
expect_error "unwritable --svg" "no/such/dir/x.svg" \
    "${E[@]}" --prompt "$PROMPT" --svg no/such/dir/x.svg
[ -e x.out ] && fail "x.out written by a refused run" || ok "refused runs write nothing"
after=$(sha256sum <m.st)
[ "$before" = "$after" ] && ok "checkpoint untouched" || fail "m.st changed"

# ---- examples/digits --explain DIR: one grid and 16 single heatmaps, well-formed SVG
DIGITS=${DIGITS:-$(dirname "$STRIX")/digits}
case "$DIGITS" in /*) ;; *) DIGITS="$ROOT/$DIGITS" ;; esac # lib.bash has cd'd into $WORK
if [ -x "$DIGITS" ] && [ -f "$ROOT/../shared/data/digits.csv" ]; then
    "$DIGITS" --data "$ROOT/../shared/data/digits.csv" --model cnn --epochs 4 --no-gate \
        --explain dg >dg.txt 2>dg.err || fail "digits --explain: $(tail -n 1 dg.err)"
    $PY - <<'PY' && ok "digits --explain: 17 well-formed SVG heatmaps" || fail "digits SVGs"
import glob, xml.etree.ElementTree as ET
files = sorted(glob.glob("dg/*.svg"))
assert len(files) == 17 and files[-1] == "dg/digits_lrp.svg", files
ns = "{http://www.w3.org/2000/svg}"
grid = ET.parse("dg/digits_lrp.svg").getroot()
assert len(list(grid.iter(ns + "rect"))) >= 16 * 2 * 64
for f in files:
    ET.parse(f)
PY
    # usage errors: exit 2, the problem on the first stderr line (the usage line follows)
    "$DIGITS" --model mlp --explain dg 2>u1.err
    [ $? -eq 2 ] && head -n 1 u1.err | grep -q "explain the CNN" \
        && ok "digits --explain with --model mlp: usage error" || fail "digits --model mlp --explain"
    "$DIGITS" --composite zplus 2>u2.err
    [ $? -eq 2 ] && head -n 1 u2.err | grep -q "composite takes" \
        && ok "digits --composite zplus: usage error" || fail "digits --composite zplus"
else
    echo "skip: no digits binary or data"
fi

# ---- help
"$STRIX" explain --help >help.txt || fail "explain --help exit status"
missing=$(grep -E '^  --' help.txt | grep -v -- '--help' | grep -vi 'default' || true)
[ -z "$missing" ] && ok "explain --help: every flag has its default" \
    || fail "explain --help: flags without a default: $missing"
for flag in model prompt prompt-file method ig-steps deletion seed force target contrast rule \
    svg html json top one-hot color; do
    grep -q -- "--$flag" help.txt || fail "explain --help lacks --$flag"
done
"$STRIX" --help | grep -q "strix explain" && ok "strix --help lists explain" \
    || fail "strix --help lacks explain"
finish
