#!/usr/bin/env bash
# pt_import.sh - tools/ref/pt_to_safetensors.py: a nanoGPT-style PyTorch model (the transcription
# of tools/ref/gpt_ref.py, with nanoGPT's state-dict names) saved as nanoGPT's ckpt.pt (with
# torch.compile's '_orig_mod.' prefix, the causal-mask buffers, a tied head and a meta.pkl
# vocabulary in unsorted order) and as a plain state dict converts into a weights-only file that
# strix samples greedily to the same text as PyTorch, with the same logit; bad inputs are refused
# with one line.
# Skipped (77) when /usr/bin/python3 has no torch.
source "$(dirname "$0")/lib.bash"
PY=/usr/bin/python3
CONVERT="$ROOT/tools/ref/pt_to_safetensors.py"

# The model, its files and what PyTorch predicts: the greedy continuation (recomputing the whole
# sequence each step, as nanoGPT does; it stays within the block, where strix's KV cache gives
# the same), the last logit of the prompt, and the smallest top-1 margin on the way.
"$PY" - "$ROOT/tools/ref" <<'EOF' >torch.txt
import pickle, sys
try:
    import torch
except ImportError:
    sys.exit(77)
sys.path.insert(0, sys.argv[1])
from gpt_ref import GPT, randomize

torch.manual_seed(0)
for name, tie, bias, heads in (("ckpt", True, True, [8, 8, 8]), ("plain", False, False, [12, 12])):
    cfg = dict(V=20, C=24, L=2, block=32, heads=heads, bias=bias, rope=False, rope_base=10000.0,
               d_ff=96, act="gelu", eps=1e-5, tie=tie)
    model = GPT(cfg)
    randomize(model, torch.Generator().manual_seed(3 if tie else 4), wstd=0.4, bstd=0.1)
    chars = "zyx \nabcdefghijklmno"  # ids 0..19, not in byte order
    stoi = {c: i for i, c in enumerate(chars)}
    prompt = "hello "
    ids = [stoi[c] for c in prompt]
    margin = 1e9
    with torch.no_grad():
        for step in range(20):
            logits, _ = model(torch.tensor([ids]), torch.tensor([ids]))
            last = logits[0, -1]
            if step == 0:
                first = last.clone()
            top2 = torch.topk(last, 2).values
            margin = min(margin, float(top2[0] - top2[1]))
            ids.append(int(last.argmax()))
    sd = model.state_dict()
    if name == "ckpt":  # nanoGPT's layout: prefix, mask buffers, model_args
        sd = {"_orig_mod." + k: v for k, v in sd.items()}
        for l in range(cfg["L"]):
            sd[f"_orig_mod.transformer.h.{l}.attn.bias"] = torch.ones(1, 1, 32, 32).tril()
        obj = {"model": sd, "iter_num": 5, "model_args": dict(
            n_layer=2, n_head=3, n_embd=24, block_size=32, bias=True, vocab_size=20, dropout=0.0)}
    else:
        obj = sd
    torch.save(obj, f"{name}.pt")
    with open("meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": 20, "itos": dict(enumerate(chars)), "stoi": stoi}, f)
    text = "".join(chars[i] for i in ids)
    with open(f"{name}.expected", "w") as f:
        f.write(text)
    argmax = chars[int(first.argmax())]
    print(f"{name} logit {argmax!r} {float(first.max()):.6f} margin {margin:.6f}")
EOF
rc=$?
if [ "$rc" -eq 77 ]; then
    echo "SKIP: $PY cannot import torch (apt-get install python3-torch)"
    exit 77
fi
[ "$rc" -eq 0 ] || fail "building the PyTorch model"
cat torch.txt
awk '{ if ($NF < 1e-3) exit 1 }' torch.txt && ok "greedy margins above 1e-3" \
    || fail "a greedy step is nearly tied: $(cat torch.txt)"

"$PY" "$CONVERT" ckpt.pt ckpt.st --meta meta.pkl >conv1.out 2>conv1.err \
    && ok "convert ckpt.pt: $(cat conv1.out)" || fail "convert ckpt.pt: $(cat conv1.err)"
grep -q "tied head" conv1.out && ok "tied head found" || fail "tie not found"
"$PY" "$CONVERT" plain.pt plain.st --meta meta.pkl --n-head 2 >conv2.out 2>conv2.err \
    && ok "convert a plain state dict: $(cat conv2.out)" || fail "convert plain: $(cat conv2.err)"
grep -q "bias off, untied head" conv2.out && ok "bias-free untied model" || fail "plain config"

for name in ckpt plain; do
    "$STRIX" sample --model "$name.st" --prompt "hello " --tokens 20 --temperature 0 \
        >"$name.strix" 2>"$name.err" || fail "strix sample $name: $(cat "$name.err")"
    same_file "$name: strix's greedy text == PyTorch's ($(cat "$name.expected" | tr '\n' '|'))" \
        "$name.expected" "$name.strix"
    # the first prediction's logit, to 1e-4
    want=$(awk -v n="$name" '$1 == n {print $3, $4}' torch.txt)
    got=$("$STRIX" explain --model "$name.st" --prompt "hello " --color never \
        | sed -n "s/^explained: logit of \('.*'\) = \([-0-9.]*\) .*/\1 \2/p")
    awk -v w="$want" -v g="$got" 'BEGIN { split(w, a, " "); split(g, b, " ");
        d = a[2] - b[2]; exit !(a[1] == b[1] && d < 1e-4 && d > -1e-4) }' \
        && ok "$name: logit $got (PyTorch $want)" || fail "$name: logit '$got', PyTorch '$want'"
done
"$STRIX" export --model ckpt.st --out re.st >/dev/null || fail "strix export of a converted file"
"$STRIX" sample --model re.st --prompt "hello " --tokens 20 --temperature 0 >re.strix
same_file "strix export of a converted file samples the same" ckpt.expected re.strix

# refusals: one line, nothing written
expect_error "plain state dict without --n-head" "--n-head" \
    "$PY" "$CONVERT" plain.pt x.st --meta meta.pkl
expect_error "existing output" "--force" "$PY" "$CONVERT" ckpt.pt ckpt.st --vocab bytes
echo "not a pickle" >junk.pt
expect_error "not a PyTorch file" "cannot read 'junk.pt'" \
    "$PY" "$CONVERT" junk.pt x.st --vocab bytes
"$PY" -c 'import pickle; pickle.dump({"itos": dict(enumerate("ab\u00e9" + "cdefghijklmnopqrs"))},
    open("u.pkl", "wb"))'
expect_error "non-ASCII vocabulary" "not one ASCII character" \
    "$PY" "$CONVERT" ckpt.pt x.st --meta u.pkl
[ ! -e x.st ] && ok "nothing written on failure" || fail "x.st was written"
ls .*.tmp.* >/dev/null 2>&1 && fail "temp files left" || ok "no temp files left"
finish
