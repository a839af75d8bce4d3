#!/usr/bin/env bash
# CleanRL's published single-file PyTorch agents, run unmodified on CPU, so the RL benchmark can
# quote their environment steps/s and returns beside strix's in the same run.
#
# Usage: bench/cleanrl.sh ALGO STEPS SEED      ALGO: ppo | dqn | sac
#   ppo: cleanrl/ppo.py                    on CartPole-v1 (4 envs x 128 steps per update)
#   dqn: cleanrl/dqn.py                    on CartPole-v1
#   sac: cleanrl/sac_continuous_action.py  on Pendulum-v1 (learning starts at step 5000, so use
#        STEPS well above that)
# Each runs with its default hyper-parameters and --total-timesteps STEPS --seed SEED --cuda False
# --track False --capture-video False, with 2 torch threads whatever the core count
# (torch.set_num_threads(2), OMP/MKL/OPENBLAS_NUM_THREADS=2; env CLEANRL_THREADS overrides).
#
# Nothing of CleanRL lives in this repository: the first run fetches it into a cache folder,
# ${STRIX_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strix-bench}/cleanrl, and builds a venv there
# (one line says what it installs; pip's output goes to setup.log there). Later runs reuse it.
#   CleanRL 1.2.0: the PyPI wheel (the newest release on PyPI; its Requires-Python says <3.11, so
#     it is fetched with `pip download --no-deps` and unpacked, never pip-installed; sha256 checked).
#     In 1.2.0 ppo.py and sac_continuous_action.py use gym 0.23.1 and stable-baselines3 1.2.0's
#     ReplayBuffer, while dqn.py uses gymnasium 0.28.1 and needs stable-baselines3 >= 2.0: one venv
#     holds torch, gym and gymnasium, and each SB3 lives in its own folder put on PYTHONPATH.
#   torch: CPU wheel from download.pytorch.org/whl/cpu when reachable, else PyPI's (which pulls in
#     the CUDA libraries, a few GB, unused here).
#
# The script's stdout/stderr go to logs/ALGO_STEPS_SEED.log in the cache folder; its tensorboard
# runs/ go to a scratch folder that is removed afterwards. The last line printed is the summary:
#   cleanrl ppo steps=499712 seconds=367.4 sps=1360 script_sps=1360 final_mean_return_last100=490.1
#     episodes=1469 eval_mean_return_100=500.0 env=CartPole-v1 threads=2 cleanrl=1.2.0 torch=2.5.1
# (script_sps=na when the script printed no SPS line: sac prints it only once learning has started)
# steps: environment steps taken (ppo rounds STEPS down to a multiple of 512); seconds: wall time of
# the training loop (from the script's own start_time, set just before its loop, to its end);
# sps = steps/seconds; script_sps: the last "SPS:" figure the script printed; final_mean_return_last100:
# mean of the last 100 "episodic_return=" lines printed during training (fewer when fewer episodes
# ended, see episodes=); eval_mean_return_100: mean return of 100 greedy episodes of the trained
# network (argmax for ppo/dqn, the tanh-squashed mean action for sac) on fresh environments
# seeded SEED+100000.. (env CLEANRL_EVAL_EPISODES=N changes the count, 0 skips it).
# cpu_wait_pct (where the kernel has /proc/pressure/cpu): the share of the run's wall time in which
# some task on the machine waited for a CPU; the 2-thread torch runs slow down badly when other work
# shares the cores, so treat runs with more than a few percent as noisy.
# Any failure prints one line "cleanrl.sh: error: ..." on stderr and exits non-zero.
set -euo pipefail

die() { echo "cleanrl.sh: error: $*" >&2; exit 1; }

CLEANRL_VERSION=1.2.0
CLEANRL_WHEEL=cleanrl-1.2.0-py3-none-any.whl
CLEANRL_SHA256=002f6dac6cd0efb5889cd9096a252da1b4bc98a8f52ccb1f47a7215c18b30369
TORCH_VERSION=2.5.1
TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
PIP_PKGS=(numpy==1.26.4 gym==0.23.1 gymnasium==0.28.1 pygame==2.6.1 tensorboard==2.18.0 setuptools
          cloudpickle pandas matplotlib)
SB3_GYM=1.2.0        # for ppo.py / sac_continuous_action.py (gym API)
SB3_GYMNASIUM=2.0.0  # for dqn.py (gymnasium API)
SETUP_TAG=v1-cleanrl$CLEANRL_VERSION-torch$TORCH_VERSION-sb3$SB3_GYM+$SB3_GYMNASIUM

[ $# -eq 3 ] || die "usage: bench/cleanrl.sh ALGO STEPS SEED (ALGO: ppo|dqn|sac)"
ALGO=$1 STEPS=$2 SEED=$3
[[ $STEPS =~ ^[0-9]+$ && $STEPS -gt 0 ]] || die "STEPS must be a positive integer, got '$STEPS'"
[[ $SEED =~ ^[0-9]+$ ]] || die "SEED must be a non-negative integer, got '$SEED'"
case $ALGO in
    ppo) SCRIPT=ppo.py ENV_ID=CartPole-v1 SB3=$SB3_GYM ;;
    dqn) SCRIPT=dqn.py ENV_ID=CartPole-v1 SB3=$SB3_GYMNASIUM ;;
    sac) SCRIPT=sac_continuous_action.py ENV_ID=Pendulum-v1 SB3=$SB3_GYM ;;
    *) die "unknown ALGO '$ALGO' (ppo|dqn|sac)" ;;
esac
THREADS=${CLEANRL_THREADS:-2}
EVAL_EPISODES=${CLEANRL_EVAL_EPISODES:-100}

CACHE=${STRIX_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strix-bench}/cleanrl
ENVDIR=$CACHE/$SETUP_TAG
VENV=$ENVDIR/venv
mkdir -p "$CACHE/logs" || die "cannot create cache folder $CACHE"

# ---- one-time setup (redone from scratch while its stamp file is missing) ----
setup() {
    local log=$CACHE/setup.log py="" cand
    for cand in python3.11 python3.10 python3.12 python3; do
        if command -v "$cand" >/dev/null 2>&1 &&
           "$cand" -c 'import sys, venv; assert (3, 8) <= sys.version_info[:2] < (3, 13)' 2>/dev/null; then
            py=$cand; break
        fi
    done
    [ -n "$py" ] || die "setup: no Python 3.8-3.12 with the venv module found (Debian: apt-get install python3-venv)"
    local torch_src="$TORCH_CPU_INDEX, else PyPI"
    echo "cleanrl.sh: one-time setup in $ENVDIR ($($py -V 2>&1) venv): cleanrl==$CLEANRL_VERSION (PyPI wheel," \
         "unpacked), torch==$TORCH_VERSION ($torch_src), ${PIP_PKGS[*]}, stable-baselines3==$SB3_GYM and" \
         "==$SB3_GYMNASIUM (separate folders); log: $log" >&2
    : >"$log"
    rm -rf "$ENVDIR"
    mkdir -p "$ENVDIR/dl"
    {
        "$py" -m venv "$VENV" || return 11
        "$VENV/bin/pip" download --no-deps --only-binary=:all: --python-version 3.10 \
            -d "$ENVDIR/dl" "cleanrl==$CLEANRL_VERSION" || return 12
        echo "$CLEANRL_SHA256  $ENVDIR/dl/$CLEANRL_WHEEL" | sha256sum -c - || return 13
        "$VENV/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
            "$ENVDIR/dl/$CLEANRL_WHEEL" "$ENVDIR/src" || return 13
        if "$VENV/bin/pip" install --timeout 15 --retries 1 --index-url "$TORCH_CPU_INDEX" \
                "torch==$TORCH_VERSION"; then
            echo "torch: from $TORCH_CPU_INDEX"
        else
            echo "torch: CPU index unreachable, installing PyPI's wheel"
            "$VENV/bin/pip" install "torch==$TORCH_VERSION" || return 14
        fi
        "$VENV/bin/pip" install "${PIP_PKGS[@]}" || return 15
        "$VENV/bin/pip" install --no-deps --target "$ENVDIR/sb3-$SB3_GYM" "stable-baselines3==$SB3_GYM" || return 16
        "$VENV/bin/pip" install --no-deps --target "$ENVDIR/sb3-$SB3_GYMNASIUM" \
            "stable-baselines3==$SB3_GYMNASIUM" || return 16
        "$VENV/bin/pip" freeze >"$ENVDIR/freeze.txt"
    } >>"$log" 2>&1
}
if [ ! -f "$ENVDIR/.ok" ]; then
    rc=0
    setup || rc=$?
    case $rc in
        0) ;;
        11) die "setup: could not create the venv (see $CACHE/setup.log)" ;;
        12) die "setup: could not download cleanrl==$CLEANRL_VERSION from PyPI (no network?) (see $CACHE/setup.log)" ;;
        13) die "setup: the cleanrl wheel failed its sha256 check or did not unpack (see $CACHE/setup.log)" ;;
        14) die "setup: could not install torch==$TORCH_VERSION (no network?) (see $CACHE/setup.log)" ;;
        15) die "setup: could not install ${PIP_PKGS[*]} (no network?) (see $CACHE/setup.log)" ;;
        16) die "setup: could not install stable-baselines3 (no network?) (see $CACHE/setup.log)" ;;
        *) die "setup failed (exit $rc, see $CACHE/setup.log)" ;;
    esac
    touch "$ENVDIR/.ok"
fi

# ---- the run: the script executed as __main__ by runpy, untouched; its globals give the trained
#      network and its start_time afterwards ----
read -r -d '' RUNNER <<'PY' || true
import json, runpy, sys, time
script, result_path, threads, eval_episodes, algo = sys.argv[1:6]
import torch
torch.set_num_threads(int(threads))
sys.argv = [script] + sys.argv[6:]
g = runpy.run_path(script, run_name="__main__")
t_end = time.time()
args = g["args"]
steps = g["global_step"] if algo == "ppo" else g["global_step"] + 1
res = {"train_seconds": t_end - g["start_time"], "steps": steps, "torch": torch.__version__.split("+")[0]}
n = int(eval_episodes)
if n > 0:
    gym = g["gym"]  # gym for ppo/sac, gymnasium for dqn: the module the script itself used
    net = {"ppo": "agent", "dqn": "q_network", "sac": "actor"}[algo]
    net = g[net]
    env = gym.make(args.env_id)
    returns = []
    t0 = time.time()
    for i in range(n):
        out = env.reset(seed=args.seed + 100000 + i)
        obs = out[0] if isinstance(out, tuple) else out
        total, done = 0.0, False
        while not done:
            with torch.no_grad():
                x = torch.Tensor(obs).unsqueeze(0)
                if algo == "ppo":
                    action = net.actor(x).argmax(dim=1).item()
                elif algo == "dqn":
                    action = net(x).argmax(dim=1).item()
                else:
                    action = net.get_action(x)[2][0].numpy()
            step = env.step(action)
            if len(step) == 5:
                obs, reward, terminated, truncated, _ = step
                done = terminated or truncated
            else:
                obs, reward, done, _ = step
            total += float(reward)
        returns.append(total)
    res["eval_mean"] = sum(returns) / n
    res["eval_episodes"] = n
    res["eval_seconds"] = time.time() - t0
json.dump(res, open(result_path, "w"))
PY

LOG=$CACHE/logs/${ALGO}_${STEPS}_${SEED}.log
WORK=$(mktemp -d "$CACHE/work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
export PYTHONPATH=$ENVDIR/sb3-$SB3:$ENVDIR/src PYTHONWARNINGS=ignore PYTHONUNBUFFERED=1
psi_some() { [ -r /proc/pressure/cpu ] && sed -n 's/^some .*total=\([0-9]*\).*/\1/p' /proc/pressure/cpu; }
psi0=$(psi_some || true) t0=$(date +%s.%N)
set +e
(cd "$WORK" && "$VENV/bin/python" -c "$RUNNER" "$ENVDIR/src/cleanrl/$SCRIPT" "$WORK/result.json" \
    "$THREADS" "$EVAL_EPISODES" "$ALGO" \
    --env-id "$ENV_ID" --total-timesteps "$STEPS" --seed "$SEED" --cuda False --track False \
    --capture-video False) >"$LOG" 2>&1
rc=$?
set -e
psi1=$(psi_some || true) t1=$(date +%s.%N)
if [ $rc -ne 0 ] || [ ! -s "$WORK/result.json" ]; then
    die "$SCRIPT exited $rc: $(grep -v '^\s*$' "$LOG" | tail -n 1) (log: $LOG)"
fi

"$VENV/bin/python" - "$WORK/result.json" "$LOG" "$ALGO" "$ENV_ID" "$THREADS" "$CLEANRL_VERSION" \
    "${psi0:-}" "${psi1:-}" "$t0" "$t1" <<'PY'
import json, re, sys
res = json.load(open(sys.argv[1]))
log, algo, env_id, threads, version, psi0, psi1, t0, t1 = sys.argv[2:]
returns, script_sps = [], None
for line in open(log, errors="replace"):
    m = re.search(r"episodic_return=\[?\s*(-?[0-9.]+(?:e[-+]?[0-9]+)?)", line)
    if m:
        returns.append(float(m.group(1)))
    m = re.match(r"SPS:\s*(\d+)", line)
    if m:
        script_sps = int(m.group(1))
last = returns[-100:]
mean = f"{sum(last) / len(last):.1f}" if last else "nan"
out = [f"cleanrl {algo}", f"steps={res['steps']}", f"seconds={res['train_seconds']:.1f}",
       f"sps={res['steps'] / res['train_seconds']:.0f}", f"script_sps={script_sps if script_sps is not None else 'na'}",
       f"final_mean_return_last100={mean}", f"episodes={len(returns)}"]
if "eval_mean" in res:
    out.append(f"eval_mean_return_{res['eval_episodes']}={res['eval_mean']:.1f}")
out += [f"env={env_id}", f"threads={threads}", f"cleanrl={version}", f"torch={res['torch']}"]
if psi0 and psi1:  # share of the run's wall time in which some task here waited for a CPU
    out.append(f"cpu_wait_pct={100 * (int(psi1) - int(psi0)) / 1e6 / (float(t1) - float(t0)):.0f}")
print(" ".join(out))
PY
