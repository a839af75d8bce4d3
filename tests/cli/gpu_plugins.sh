#!/usr/bin/env bash
# gpu_plugins.sh - the GPU backends are run-time plugins: a CPU run maps no CUDA or HIP library
# (LD_DEBUG=libs lists every library the loader opens), and `--device cuda` / `--device hip` end
# with one line on stderr whatever is missing: the backend in this build, its plugin (hidden by
# pointing STRIX_PLUGIN_DIR at a folder holding a file that is not a plugin), the GPU runtime, the
# driver or the device. In a CPU-only build the first check holds trivially; the CI builds with
# both GPU backends, where it is the check that matters.
source "$(dirname "$0")/lib.bash"

LD_DEBUG=libs "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 2 --out m.safetensors \
    >/dev/null 2>"$WORK/ld.log" || fail "cpu training with LD_DEBUG=libs"
if grep -qE 'libcudart|libcublas|libcuda\.so|libamdhip64|libhipblas|libstrix-(cuda|hip)' \
        "$WORK/ld.log"; then
    fail "a cpu run loads a GPU library: $(grep -oE 'file=[^ ]*(cuda|cublas|hip)[^ ]*' \
        "$WORK/ld.log" | sort -u | tr '\n' ' ')"
else
    ok "a cpu run maps no CUDA or HIP library ($(grep -c 'calling init' "$WORK/ld.log") inits)"
fi
# The same for the --version run the issue measures.
LD_DEBUG=libs "$STRIX" --version >/dev/null 2>"$WORK/ld.log" || fail "--version"
grep -qE 'libcudart|libcublas|libamdhip64' "$WORK/ld.log" && fail "--version loads a GPU library"

for dev in cuda hip cuda:1; do
    expect_error "--device $dev" "backend $dev" \
        "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 2 --device "$dev" --out x.st
done
mkdir -p fake/strix
echo "not a plugin" >fake/libstrix-cuda.so
cp fake/libstrix-cuda.so fake/libstrix-hip.so
for dev in cuda hip; do
    STRIX_PLUGIN_DIR=$WORK/fake expect_error "--device $dev, a broken plugin first in the path" \
        "backend $dev" "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 2 \
        --device "$dev" --out x.st
done
finish
