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
# A copy of the command away from the build tree finds no plugin; STRIX_PLUGIN_DIR then names a
# folder with a file that is not a plugin, then the real plugin folder.
mkdir -p bin fake
cp "$STRIX" bin/strix
echo "not a plugin" >fake/libstrix-cuda.so
cp fake/libstrix-cuda.so fake/libstrix-hip.so
plugins=$(dirname "$STRIX")/lib/strix
# plugin_case NAME DEV PHRASE-IN-A-GPU-BUILD: one line naming the backend; where this build has
# the backend (no "built without"), the line must also contain the phrase.
plugin_case() {
    local name=$1 dev=$2 phrase=$3
    expect_error "$name" "backend $dev:" bin/strix train --data "$SHAKESPEARE" "${TINY[@]}" \
        --steps 2 --device "$dev" --out x.st
    if ! grep -q "built without" "$WORK/stderr" && ! grep -qF -- "$phrase" "$WORK/stderr"; then
        fail "$name: stderr lacks '$phrase'"
    fi
}
for dev in cuda hip; do
    plugin_case "--device $dev, no plugin" $dev "was not found"
    STRIX_PLUGIN_DIR=$WORK/fake plugin_case "--device $dev, a broken plugin" $dev "cannot load"
    # the real plugin, on a machine without the GPU: "no NVIDIA driver / GPU found" (or AMD)
    STRIX_PLUGIN_DIR=$plugins plugin_case "--device $dev, STRIX_PLUGIN_DIR" $dev "GPU found"
    # A named folder is the only place searched, even where the build's own plugin would be found.
    STRIX_PLUGIN_DIR=$WORK/fake expect_error "--device $dev, broken plugin before a good one" \
        "backend $dev:" "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 2 \
        --device "$dev" --out x.st
    if ! grep -q "built without" "$WORK/stderr" && ! grep -q "cannot load" "$WORK/stderr"; then
        fail "--device $dev: a broken plugin in STRIX_PLUGIN_DIR was passed over"
    fi
    STRIX_PLUGIN_DIR=$WORK/none plugin_case "--device $dev, STRIX_PLUGIN_DIR missing" $dev \
        "in plugin_dir"
done
finish
