#!/usr/bin/env bash
# gpu-check.sh - the checks that need an NVIDIA GPU, in one go (about 1 minute on one H200):
#   1. builds strix with the CUDA backend in build-gpu/ (-DSTRIX_CUDA=ON, HIP off);
#   2. runs the GPU-labelled tests (ctest -L gpu: test_gpu) and test_ops and test_gemm, whose
#      tables include the "cuda" column (tests/testlib.h); then the strix command on the GPU
#      (train a small GPT, resume it on the CPU, sample, explain);
#   3. benchmarks a training step of the nanoGPT Shakespeare config (6 layers, 6 heads, d_model
#      384, block 256, batch 64) with bench_gpt on the cuda backend (cuBLAS, then our own tiled
#      SGEMM; with kernel launches per step), beside PyTorch eager on the same GPU when python3
#      has torch with CUDA; and the step's GEMM shapes through strix beside torch.mm alone
#      (bench_gpu_gemm, bench/torch_gpu_gemm.py);
#   4. prints a short summary. Exit status 0 only when every test passed (a skipped test, e.g. no
#      device, is reported as skipped and fails the check).
# Run from anywhere: bash scripts/gpu-check.sh. Env: BUILD_DIR (build-gpu), JOBS (nproc), PYTHON
# (python3), BENCH_STEPS (20), CMAKE_ARGS (more configure flags, e.g.
# -DCMAKE_CUDA_ARCHITECTURES=90 -DSTRIX_BLAS=OFF).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
PYTHON=${PYTHON:-python3}
BENCH_STEPS=${BENCH_STEPS:-20}
LOG_DIR=${LOG_DIR:-$BUILD_DIR/gpu-check-logs}
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
mkdir -p "$LOG_DIR"

declare -a SUMMARY
failed=0
note() { SUMMARY+=("$(printf '  %-28s %s' "$1" "$2")"); }
seconds() { date +%s; }

# ---- 1. build ----------------------------------------------------------------------------------
t0=$(seconds)
# shellcheck disable=SC2086 # CMAKE_ARGS is a list of flags
if cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSTRIX_CUDA=ON -DSTRIX_HIP=OFF \
        ${CMAKE_ARGS:-} >"$LOG_DIR/configure.log" 2>&1 &&
   cmake --build "$BUILD_DIR" -j "$JOBS" --target strix_cli test_gpu test_ops test_gemm \
        bench_gpt bench_gpu_gemm >"$LOG_DIR/build.log" 2>&1; then
    note "build (CUDA)" "ok, $(( $(seconds) - t0 )) s"
else
    note "build (CUDA)" "FAILED (see $LOG_DIR/configure.log, build.log)"
    tail -30 "$LOG_DIR/build.log" 2>/dev/null || tail -30 "$LOG_DIR/configure.log"
    printf 'gpu-check summary\n%s\n' "${SUMMARY[@]}"
    exit 1
fi

# ---- 2. tests ----------------------------------------------------------------------------------
# A test's verdict: ok, FAILED (rc), or SKIPPED (exit 77 / ctest "Skipped"). Log: $LOG_DIR/KEY.log
run_test() { # key, label, timeout, command...
    local key=$1 label=$2 limit=$3
    shift 3
    local t rc took
    t=$(seconds)
    timeout "$limit" "$@" >"$LOG_DIR/$key.log" 2>&1
    rc=$?
    took=$(( $(seconds) - t ))
    if [ $rc -eq 0 ] && ! grep -q -- "\*\*\*Skipped" "$LOG_DIR/$key.log"; then
        note "$label" "ok, ${took} s"
    elif [ $rc -eq 77 ] || grep -q -- "\*\*\*Skipped" "$LOG_DIR/$key.log"; then
        note "$label" "SKIPPED (no GPU backend opened; see $LOG_DIR/$key.log)"
        failed=1
    else
        note "$label" "FAILED rc $rc, ${took} s (see $LOG_DIR/$key.log)"
        tail -25 "$LOG_DIR/$key.log"
        failed=1
    fi
}
run_test ctest_gpu "ctest -L gpu" 300 bash -c "cd '$BUILD_DIR' && ctest -L gpu -V"
for t in test_ops test_gemm; do
    run_test "$t" "$t (cpu + cuda)" 300 "./$BUILD_DIR/tests/$t"
    if grep -q "SKIP backend cuda" "$LOG_DIR/$t.log"; then
        note "" "(the cuda column of $t was skipped)"
        failed=1
    fi
done
# The command end to end on the GPU: train, resume that checkpoint on the CPU, sample, explain.
run_test cli_cuda "strix train/sample/explain" 300 bash -c "
    set -ex; S=./$BUILD_DIR/strix; D=\$(mktemp -d); C=../shared/data/tinyshakespeare.txt
    \$S train --device cuda --data \$C --out \$D/m.safetensors --steps 60 --eval-every 30 \
        --layers 2 --d-model 64 --heads 2 --block 32 --log-every 20 --stop-after 30
    \$S train --resume \$D/m.safetensors --device cpu
    \$S sample --model \$D/m.safetensors --device cuda --tokens 80 --seed 1
    \$S sample --model \$D/m.safetensors --device cpu --tokens 80 --seed 1
    \$S explain --model \$D/m.safetensors --device cuda --prompt 'ROMEO: I lo' --top 3
    \$S explain --model \$D/m.safetensors --device cpu --prompt 'ROMEO: I lo' --top 3"

grep -h "step 10 \|device allocations" "$LOG_DIR/ctest_gpu.log" | sed 's/^[0-9]*: //; s/^/  /' \
    >"$LOG_DIR/gpt.txt"

# ---- 3. benchmark ------------------------------------------------------------------------------
NANO=(--batch 64 --block 256 --layers 6 --heads 6 --d-model 384)
bench() { # label, env..., -- args
    local label=$1
    shift
    local line
    line=$(timeout 240 env "$@" 2>"$LOG_DIR/bench.err" | tail -1)
    note "$label" "${line:-FAILED ($(tail -1 "$LOG_DIR/bench.err"))}"
}
bench "bench strix cuda (cuBLAS)" "./$BUILD_DIR/bench_gpt" --device cuda "${NANO[@]}" \
    --steps "$BENCH_STEPS" --warmup-steps 3
bench "bench strix cuda (exact reductions)" STRIX_CUDA_REDUCE=exact "./$BUILD_DIR/bench_gpt" --device cuda \
    "${NANO[@]}" --steps 5 --warmup-steps 1
bench "bench strix cuda (own GEMM)" STRIX_CUDA_GEMM=own "./$BUILD_DIR/bench_gpt" --device cuda \
    "${NANO[@]}" --steps 5 --warmup-steps 1
if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
        >/dev/null 2>&1; then
    line=$(timeout 240 "$PYTHON" - "$BENCH_STEPS" 2>"$LOG_DIR/torch.err" <<'PY' | tail -1
# PyTorch eager, fp32 (TF32 off), same model as bench/torch_gpt.py, on the GPU.
import statistics, sys, time
sys.path.insert(0, "bench")
import torch
import torch_gpt
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_default_device("cuda")  # torch_gpt's arange/ones land on the GPU too
torch.manual_seed(1337)
text = open("../shared/data/tinyshakespeare.txt", "rb").read()
vocab = sorted(set(text))
stoi = {c: i for i, c in enumerate(vocab)}
data = torch.tensor([stoi[c] for c in text[: int(0.9 * len(text))]], dtype=torch.long)
B, T = 64, 256
model = torch_gpt.GPT(len(vocab), T, 6, 6, 384)
decay = [p for p in model.parameters() if p.dim() >= 2]
rest = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": rest, "weight_decay": 0.0}], lr=1e-3)
times = []
steps = int(sys.argv[1])
for step in range(3 + steps):
    ix = torch.randint(len(data) - T - 1, (B,))
    x = torch.stack([data[i:i + T] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + T] for i in ix])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    torch.cuda.synchronize()
    if step >= 3:
        times.append(time.perf_counter() - t0)
ms = statistics.median(times) * 1e3
print(f"torch {torch.__version__} cuda ms/step {ms:.1f} tok/s {B * T / (ms / 1e3):.0f} "
      f"loss {loss.item():.4f}")
PY
)
    note "bench torch eager cuda" "${line:-FAILED ($(tail -1 "$LOG_DIR/torch.err"))}"
else
    note "bench torch eager cuda" "not run ($PYTHON has no torch with CUDA)"
fi

"./$BUILD_DIR/bench_gpu_gemm" --device cuda >"$LOG_DIR/gemm_strix.txt" 2>"$LOG_DIR/gemm.err"
if [ -s "$LOG_DIR/gemm_strix.txt" ] &&
   timeout 240 "$PYTHON" bench/torch_gpu_gemm.py "$LOG_DIR/gemm_strix.txt" \
        >"$LOG_DIR/gemm.txt" 2>>"$LOG_DIR/gemm.err"; then
    note "GEMM strix vs torch.mm" "table below ($LOG_DIR/gemm.txt)"
else
    note "GEMM strix vs torch.mm" "FAILED ($(tail -1 "$LOG_DIR/gemm.err"))"
fi

# ---- 4. summary --------------------------------------------------------------------------------
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
printf '\ngpu-check summary (%s; nanoGPT Shakespeare config B 64, T 256, 6x384)\n' \
    "${gpu:-no nvidia-smi}"
printf '%s\n' "${SUMMARY[@]}"
[ -s "$LOG_DIR/gemm.txt" ] && cat "$LOG_DIR/gemm.txt"
if [ -s "$LOG_DIR/gpt.txt" ]; then
    echo "  GPT on GPU vs CPU (test_gpu):"
    cat "$LOG_DIR/gpt.txt"
fi
[ $failed -eq 0 ] && echo "gpu-check: PASS" || echo "gpu-check: FAIL"
exit $failed
