#!/usr/bin/env bash
# grad_accum.sh - `strix train --grad-accum N`: N micro-batches of --batch sequences per step,
# each backpropagated as loss/N. The checkpoint records grad_accum, so a run interrupted
# (--stop-after) and resumed is byte-identical to the uninterrupted one, on both stream kinds; a
# resumed run refuses another --grad-accum; a checkpoint written before the key existed resumes
# as grad_accum 1; values out of range are refused with the range.
source "$(dirname "$0")/lib.bash"

RUN=(--data "$SHAKESPEARE" "${TINY[@]}" --steps 30 --eval-every 10 --eval-batches 2)

"$STRIX" train "${RUN[@]}" --grad-accum 2 --out a.st >a.out 2>&1 || fail "grad-accum 2 run"
"$STRIX" train "${RUN[@]}" --grad-accum 2 --out p.st --stop-after 13 >/dev/null 2>&1 \
    || fail "grad-accum 2 run stopped at 13"
"$STRIX" train --resume p.st >p.out 2>&1 || fail "resume of the grad-accum 2 run"
grep -q "resuming at step 13 of 30" p.out && ok "resume message" || fail "no resume message"
same_file "--grad-accum 2: interrupted + resumed == uninterrupted" a.st p.st
"$STRIX" train "${RUN[@]}" --out one.st >/dev/null 2>&1 || fail "grad-accum 1 run"
cmp -s a.st one.st && fail "--grad-accum 2 gave the --grad-accum 1 checkpoint" \
    || ok "--grad-accum 2 differs from 1"

# the sequential walk draws the micro-batches in order from its cursor
SEQ=("${RUN[@]}" --sequential --stride 8 --grad-accum 3)
"$STRIX" train "${SEQ[@]}" --out s.st >/dev/null 2>&1 || fail "sequential grad-accum 3 run"
"$STRIX" train "${SEQ[@]}" --out sp.st --stop-after 7 >/dev/null 2>&1 || fail "sequential stop"
"$STRIX" train --resume sp.st >/dev/null 2>&1 || fail "sequential resume"
same_file "--sequential --grad-accum 3: interrupted + resumed == uninterrupted" s.st sp.st

# the metadata holds the value; a file without the key (older strix) resumes as grad_accum 1
meta() { # meta FILE KEY: the metadata value
    /usr/bin/python3 -c 'import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
print(json.loads(raw[8:8 + n])["__metadata__"].get(sys.argv[2], "<missing>"))' "$1" "$2"
}
[ "$(meta a.st grad_accum)" = 2 ] && ok "metadata grad_accum 2" \
    || fail "metadata grad_accum: $(meta a.st grad_accum)"
[ "$(meta one.st grad_accum)" = 1 ] && ok "metadata grad_accum 1" \
    || fail "metadata grad_accum of a default run: $(meta one.st grad_accum)"
"$STRIX" train "${RUN[@]}" --out old.st --stop-after 13 >/dev/null 2>&1 || fail "run to strip"
# blank the key out of the header (same length, JSON whitespace), as a pre-accumulation file
/usr/bin/python3 - old.st <<'PY' || fail "could not strip grad_accum"
import re, struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
head = raw[8:8 + n].decode()
new = re.sub(r'"grad_accum"\s*:\s*"1"\s*,', lambda m: " " * len(m.group(0)), head)
assert new != head and len(new) == len(head)
raw[8:8 + n] = new.encode()
open(sys.argv[1], "wb").write(raw)
PY
[ "$(meta old.st grad_accum)" = "<missing>" ] && ok "key stripped" || fail "key still there"
"$STRIX" train --resume old.st >/dev/null 2>&1 || fail "resume of a file without grad_accum"
same_file "a checkpoint without grad_accum resumes as 1 == uninterrupted" one.st old.st

# a resumed run keeps its grad_accum: repeating it is fine, another value is refused
"$STRIX" train "${RUN[@]}" --grad-accum 2 --out q.st --stop-after 13 >/dev/null 2>&1 \
    || fail "run to resume with flags"
expect_error "resume with another --grad-accum" \
    "--grad-accum conflicts with the checkpoint (2); a resumed run keeps its configuration" \
    "$STRIX" train --resume q.st --grad-accum 3
"$STRIX" train --resume q.st --grad-accum 2 >/dev/null 2>&1 || fail "resume repeating the value"
same_file "resumed with --grad-accum 2 repeated == uninterrupted" a.st q.st

expect_error "grad-accum 0" "--grad-accum must be >= 1 (got 0)" \
    "$STRIX" train "${RUN[@]}" --grad-accum 0 --out bad.st
expect_error "grad-accum too large" "--grad-accum must be <= 65536 (got 70000)" \
    "$STRIX" train "${RUN[@]}" --grad-accum 70000 --out bad.st
[ -e bad.st ] && fail "a refused run wrote its --out" || ok "refused runs write nothing"
"$STRIX" train --help | grep -q -- "--grad-accum N" && ok "--help lists --grad-accum" \
    || fail "--help lacks --grad-accum"
finish
