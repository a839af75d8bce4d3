#!/usr/bin/env bash
# explain.sh - `strix explain`: the text output (plain without a terminal or with NO_COLOR,
# 24-bit colour on a terminal or with --color always), the SVG / HTML / JSON files (well-formed,
# escaped, consistent with the text output, written atomically, reproducible on 1 or 2 threads),
# every rule, targets and contrasts, prompts longer than the block, bytes that do not print, and
# one clear error line for every kind of bad input.
source "$(dirname "$0")/lib.bash"
PY=/usr/bin/python3

"$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 60 --eval-every 60 --eval-batches 2 \
    --out m.st >/dev/null 2>&1 || { fail "training the model"; finish; }
before=$(sha256sum <m.st)
E=("$STRIX" explain --model m.st)
PROMPT="ROMEO: It's"

# ---- plain text (stdout is a file here, so no colour)
"${E[@]}" --prompt "$PROMPT" >plain.txt 2>plain.err || fail "explain exit status $?"
[ ! -s plain.err ] && ok "nothing on stderr" || fail "stderr: $(cat plain.err)"
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
"${E[@]}" --prompt "$PROMPT" --target e --contrast a --json tc.json >tc.txt \
    && grep -q "^explained: logit of 'e' minus logit of 'a'" tc.txt \
    && $PY -c "import json; d=json.load(open('tc.json')); \
        assert d['target']=='e' and d['contrast']=='a' and d['contrast_byte']==97" \
    && ok "--target e --contrast a" || fail "target/contrast"
"${E[@]}" --prompt "$PROMPT" --target '\n' --json tn.json >tn.txt \
    && grep -q "^explained: logit of '\\\\n'" tn.txt \
    && $PY -c "import json; assert json.load(open('tn.json'))['target'] == '\n'" \
    && ok "--target '\\n' (escape)" || fail "--target '\\n'"
"${E[@]}" --prompt "$PROMPT" --one-hot --json oh.json >oh.txt \
    && $PY -c "import json; assert abs(json.load(open('oh.json'))['relevance_out_sum']-1)<1e-6" \
    && ok "--one-hot seeds 1" || fail "--one-hot"

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

# ---- bytes >= 0x80 (UTF-8 explained byte by byte) and a tab
for i in $(seq 200); do printf 'Le caf\xc3\xa9 est tr\xc3\xa8s bon.\tNa\xc3\xafve <b>&"q"</b>\n'; done >u8.txt
"$STRIX" train --data u8.txt "${TINY[@]}" --steps 20 --eval-every 20 --eval-batches 2 \
    --out u8.st >/dev/null 2>&1 || fail "training on UTF-8"
U=$'caf\xc3\xa9\t<b>'
"$STRIX" explain --model u8.st --prompt "$U" --svg u.svg --html u.html --json u.json >u.txt \
    || fail "explain a UTF-8 prompt"
grep -qE "^ +3  '\\\\xc3' " u.txt && grep -qE "^ +5  '\\\\t' " u.txt \
    && ok "plain table: \\xc3 and \\t escapes" || fail "table escapes: $(cat u.txt)"
$PY - <<'PY' && ok "UTF-8 prompt: JSON, SVG and HTML valid" || fail "UTF-8 prompt files"
import json, xml.etree.ElementTree as ET
d = json.load(open("u.json", encoding="utf-8"))
assert d["prompt"] == "café\t<b>", d["prompt"]
assert [p["char"] for p in d["positions"]][3:6] == ["\\xc3", "\\xa9", "\t"]
ET.parse("u.svg")
svg = open("u.svg", encoding="utf-8").read()
assert "\\xc3" in svg and "&lt;" in svg and "\u21e5" in svg
html = open("u.html", encoding="utf-8").read()
assert "\\xc3</span>" in html and "&lt;</span>" in html and "&gt;</span>" in html
PY

# ---- bad input: one line, non-zero exit, no crash, nothing written
expect_error "no --model" "--model CKPT is required" "$STRIX" explain --prompt "$PROMPT"
expect_error "no --prompt" "--prompt TEXT is required" "${E[@]}"
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
expect_error "--html over a file strix did not write" "was not written by strix explain" \
    "${E[@]}" --prompt "$PROMPT" --html notes.txt
[ "$(cat notes.txt)" = "my notes" ] && ok "that file is untouched" || fail "notes.txt was changed"
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
for flag in model prompt target contrast rule svg html json top one-hot color; do
    grep -q -- "--$flag" help.txt || fail "explain --help lacks --$flag"
done
"$STRIX" --help | grep -q "strix explain" && ok "strix --help lists explain" \
    || fail "strix --help lacks explain"
finish
