#!/usr/bin/env bash
# llm.sh - SmolLM2-135M-Instruct (the GGUF of tools/models/get-smollm2.sh) in strix beside
# transformers (float32, the GGUF dequantized at load), LXT 2.1 (AttnLRP on transformers) and
# llama.cpp (llama-cpp-python, its own quantized arithmetic), in one run, alternating, ROUNDS
# rounds (default 3, medians printed): load time, a 256-token prompt in one pass (tokens/s),
# 128 greedy new tokens with the KV cache (tokens/s), the time to explain the next token after
# the 256-token prompt, peak RSS. Figures, never a test.
#
# Usage: bench/llm.sh            (from the repository root, after `make build`)
# Environment: THREADS (default 2), ROUNDS (default 3), STRIX (default build/strix),
#   PYTHON: a python with torch, transformers<5, gguf, accelerate, lxt 2.1 and llama-cpp-python;
#   default: a venv under ~/.cache/strix-bench/llm built on first use (pip; llama.cpp is
#   compiled from source with its AMX paths off, which can crash inside virtual machines).
set -euo pipefail

THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
STRIX=${STRIX:-build/strix}
CACHE=${STRIX_BENCH_CACHE:-$HOME/.cache/strix-bench}/llm
MODEL=$(tools/models/get-smollm2.sh --quiet)
[ -x "$STRIX" ] || { echo "llm.sh: no $STRIX (make build first)" >&2; exit 1; }

if [ -z "${PYTHON:-}" ]; then
    PYTHON=$CACHE/venv/bin/python
    if [ ! -f "$CACHE/.ok" ]; then
        echo "llm.sh: setting up $CACHE/venv (torch, transformers<5, gguf, lxt, llama-cpp-python; log in $CACHE/setup.log)"
        mkdir -p "$CACHE"
        {
            python3 -m venv "$CACHE/venv"
            "$CACHE/venv/bin/pip" install --index-url https://download.pytorch.org/whl/cpu torch ||
                "$CACHE/venv/bin/pip" install torch
            "$CACHE/venv/bin/pip" install "transformers<5" gguf accelerate zennit torchvision
            "$CACHE/venv/bin/pip" install --no-deps lxt==2.1
            CMAKE_ARGS="-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
                "$CACHE/venv/bin/pip" install --no-cache-dir llama-cpp-python
        } >"$CACHE/setup.log" 2>&1 || { echo "llm.sh: setup failed (see $CACHE/setup.log)" >&2; exit 1; }
        touch "$CACHE/.ok"
    fi
fi

WORK=$(mktemp -d /tmp/strix-llm-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
P=$WORK/prompt.txt
"$PYTHON" bench/llm_ref.py --engine prompt --model "$MODEL" --source ../shared/data/tinyshakespeare.txt \
    --prompt-file "$P" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }

# strix: one generate run gives load, prompt and generation figures; explain gives its time
run_strix() {
    "$STRIX" generate --model "$MODEL" --prompt-file "$P" --max-new-tokens 128 --ignore-eos \
        --threads "$THREADS" >/dev/null 2>"$WORK/g.err"
    "$STRIX" explain --model "$MODEL" --prompt-file "$P" --top 0 --color never \
        --threads "$THREADS" >/dev/null 2>"$WORK/e.err"
    python3 - "$WORK/g.err" "$WORK/e.err" <<'PY'
import json, re, sys
g, e = open(sys.argv[1]).read(), open(sys.argv[2]).read()
load = float(re.search(r"loaded in ([0-9.]+) s", g).group(1))
m = re.search(r"prompt (\d+) tokens in [0-9.]+ s \(([0-9.]+) tokens/s\); generated (\d+) tokens "
              r"in [0-9.]+ s \(([0-9.]+) tokens/s\)", g)
rss = max(float(x) for x in re.findall(r"peak RSS ([0-9]+) MB", g + e))
ex = float(re.search(r"explained the next token after \d+ tokens in ([0-9.]+) s", e).group(1))
print(json.dumps({"engine": "strix", "load_s": load, "prompt_tok_s": float(m.group(2)),
                  "gen_tok_s": float(m.group(4)), "explain_s": ex, "peak_rss_mb": rss,
                  "prompt_tokens": int(m.group(1)), "new_tokens": int(m.group(3))}))
PY
}

: >"$WORK/all.jsonl"
for r in $(seq "$ROUNDS"); do
    run_strix >>"$WORK/all.jsonl"
    for e in transformers lxt llamacpp; do
        "$PYTHON" bench/llm_ref.py --engine "$e" --model "$MODEL" --prompt-file "$P" \
            --threads "$THREADS" 2>>"$WORK/ref.err" >>"$WORK/all.jsonl" ||
            echo "{\"engine\": \"$e\", \"failed\": true}" >>"$WORK/all.jsonl"
    done
done

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $THREADS threads, $ROUNDS rounds (medians)"
python3 - "$WORK/all.jsonl" <<'PY'
import json, math, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(engine, key):
    v = [r[key] for r in rows if r["engine"] == engine and not r.get("failed")
         and r.get(key) is not None and not math.isnan(r[key])]
    return statistics.median(v) if v else None
fmt = lambda x, f: "-" if x is None else f % x
print("%-13s %8s %12s %12s %10s %9s" % ("engine", "load s", "prompt tok/s", "gen tok/s",
                                        "explain s", "RSS MB"))
for e in ["strix", "transformers", "lxt", "llamacpp"]:
    print("%-13s %8s %12s %12s %10s %9s" % (e, fmt(med(e, "load_s"), "%.2f"),
          fmt(med(e, "prompt_tok_s"), "%.0f"), fmt(med(e, "gen_tok_s"), "%.1f"),
          fmt(med(e, "explain_s"), "%.3f"), fmt(med(e, "peak_rss_mb"), "%.0f")))
s, t = med("strix", "gen_tok_s"), med("transformers", "gen_tok_s")
if s and t:
    print("strix / transformers: generation %.2fx, prompt %.2fx" %
          (s / t, med("strix", "prompt_tok_s") / med("transformers", "prompt_tok_s")))
PY
