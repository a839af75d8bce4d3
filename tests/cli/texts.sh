# What the command and the scripts say about themselves: `strix --help` names the backends this
# build has (the list of <build>/strix-backends.txt, not "CPU backends" in a CUDA build); a GPU
# backend without its driver says so; bench/gpt_train.sh's summary works for an even number of
# rounds (a median between two integers is a float), run against a stub bench_gpt.
source tests/cli/lib.bash

built=$(sed -n 's/^strix backends built: //p' "$(dirname "$STRIX")/strix-backends.txt" |
    sed 's/ ([^)]*)//g')
banner=$("$STRIX" --help | head -1)
want="strix - train, sample and explain small character-level language models, run and explain Llama-family ones (C11; backends built: $built)"
if [ -n "$built" ] && [ "$banner" = "$want" ]; then
    ok "banner: $banner"
else
    fail "banner '$banner' does not name the built backends '$built'"
fi

# A GPU backend that is built, on a machine without its driver: "no ... driver / GPU found", not
# the runtime's "CUDA driver version is insufficient for CUDA runtime version". (Checked where
# the build has the backend and the machine lacks the driver, as on the CI image.)
case ", $built," in
    *", cuda,"*)
        if [ -e /proc/driver/nvidia/version ]; then
            echo "skipped the no-driver check of cuda: this machine has the NVIDIA driver"
        else
            expect_error "--device cuda without a driver" "no NVIDIA driver / GPU found" \
                "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 2 --device cuda \
                --out c.safetensors
        fi ;;
esac
case ", $built," in
    *", hip,"*)
        if [ -e /dev/kfd ]; then
            echo "skipped the no-driver check of hip: this machine has /dev/kfd"
        else
            expect_error "--device hip without a driver" "no AMD GPU driver / GPU found" \
                "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 2 --device hip \
                --out h.safetensors
        fi ;;
esac

if ! command -v python3 >/dev/null; then
    echo "skipped the bench summary check: no python3"
    finish
fi
mkdir -p fakebuild
# bench_gpt stub: round 1 gives 53000 tok/s, round 2 53002 (cpu) or 33000 / 33002 (cpu-blas).
cat >fakebuild/bench_gpt <<STUB
#!/bin/bash
n=\$(cat "$WORK/count" 2>/dev/null || echo 0); echo \$((n + 1)) >"$WORK/count"
case "\$2:\$n" in
    cpu:0) echo "config A cpu: ms/step 19.0 tok/s 53000 maxrss_mb 105" ;;
    cpu:*) echo "config A cpu: ms/step 19.2 tok/s 53002 maxrss_mb 106" ;;
    cpu-blas:1) echo "config A cpu-blas: ms/step 30.0 tok/s 33000 maxrss_mb 103" ;;
    *) echo "config A cpu-blas: ms/step 30.4 tok/s 33002 maxrss_mb 103" ;;
esac
STUB
chmod +x fakebuild/bench_gpt
BUILD="$WORK/fakebuild" TORCH_PYTHONS=/nonexistent/python bash "$ROOT/bench/gpt_train.sh" 2 \
    >bench.txt 2>&1
rc=$?
summary=$(sed -n '/== medians over 2 rounds/,$p' bench.txt | tr -s ' ')
want=$'== medians over 2 rounds (ms/step, tok/s, max RSS MB) ==\n'
want+=$'strix/cpu 19.1 53001 106\nstrix/cpu-blas 30.2 33001 103'
if [ "$rc" -eq 0 ] && [ "$summary" = "$want" ]; then
    ok "bench summary over 2 rounds: $(echo "$summary" | tr '\n' '|')"
else
    fail "bench/gpt_train.sh 2: exit $rc, output:"; cat bench.txt >&2
fi

finish
