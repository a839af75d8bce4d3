#!/usr/bin/env bash
# rl_train.sh - the full-budget reinforcement-learning runs of docs/RL.md, one after another on
# this machine: strix's DQN, PPO, A2C and REINFORCE on CartPole-v1 (500,000 steps) and SAC on
# Pendulum-v1 (50,000 steps), each with CleanRL's hyper-parameters (strix rl train's defaults),
# then CleanRL's own ppo.py and dqn.py (bench/cleanrl.sh) with the same budget and seed. Prints
# one table: environment steps per second of training, the step at which the mean return of the
# last 100 training episodes first reached the task's threshold, that mean at the end, and the
# mean return of 100 greedy evaluation episodes of the trained agent. Both run with THREADS
# threads (CleanRL: torch.set_num_threads).
#
#   bench/rl_train.sh                      everything (CleanRL's setup needs PyPI once)
#   STEPS=100000 bench/rl_train.sh         shorter CartPole runs
#   CLEANRL=0 bench/rl_train.sh            strix only
# Environment: STRIX (default build/strix), SEED (1), STEPS (500000), SAC_STEPS (50000),
# ALGOS ("dqn ppo a2c reinforce sac"; CleanRL runs ppo, dqn and sac of them), CLEANRL (1),
# THREADS (1: one agent uses one core).
set -u
STRIX=${STRIX:-build/strix}
SEED=${SEED:-1}
STEPS=${STEPS:-500000}
SAC_STEPS=${SAC_STEPS:-50000}
ALGOS=${ALGOS:-"dqn ppo a2c reinforce sac"}
CLEANRL=${CLEANRL:-1}
THREADS=${THREADS:-1}
[ -x "$STRIX" ] || { echo "rl_train.sh: $STRIX is not built (make, or set STRIX)" >&2; exit 2; }
work=$(mktemp -d /tmp/strix_rl_bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
echo "machine: ${cpu:-unknown CPU}, $(nproc) cores; strix threads $THREADS; seed $SEED"
rows=()
for algo in $ALGOS; do
    env=cartpole steps=$STEPS
    [ "$algo" = sac ] && env=pendulum steps=$SAC_STEPS
    out=$("$STRIX" rl train --env "$env" --algo "$algo" --steps "$steps" --seed "$SEED" \
          --threads "$THREADS" --quiet --out "$work/$algo.st" --curve "$work/$algo.svg" 2>&1)
    done_line=$(grep '^done:' <<<"$out")
    if [ -z "$done_line" ]; then
        echo "strix $algo failed: $out" >&2
        continue
    fi
    n=$(sed -E 's/^done: ([0-9]+) steps.*/\1/' <<<"$done_line")
    secs=$(sed -E 's/.*\), ([0-9.]+) s;.*/\1/' <<<"$done_line")
    train=$(sed -E 's/.*of the last 100: ([-0-9.na]+)\).*/\1/' <<<"$done_line")
    ret=$(sed -E 's/.*episodes: ([-0-9.]+ \+- [0-9.]+);.*/\1/' <<<"$done_line")
    solved=$(sed -nE 's/^return\(100\) first reached .* at step ([0-9]+)$/\1/p' <<<"$out")
    sps=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0) ? n / s : 0 }')
    rows+=("strix|$algo|$env|$n|$secs|$sps|${solved:--}|$train|$ret")
done
if [ "$CLEANRL" = 1 ]; then
    logs=${STRIX_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strix-bench}/cleanrl/logs
    for algo in $ALGOS; do
        case $algo in ppo | dqn) steps=$STEPS env=cartpole bar=475 ;;
                      sac) steps=$SAC_STEPS env=pendulum bar=-250 ;; *) continue ;; esac
        line=$(CLEANRL_THREADS=$THREADS bash "$(dirname "$0")/cleanrl.sh" "$algo" "$steps" "$SEED" \
               2>"$work/cleanrl.err" | tail -1)
        if ! grep -q "^cleanrl $algo " <<<"$line"; then
            echo "cleanrl $algo failed: $(tail -3 "$work/cleanrl.err")" >&2
            continue
        fi
        get() { sed -nE "s/.* $1=([^ ]+).*/\\1/p" <<<"$line"; }
        # the first step where the mean of the last 100 training episodes reached the bar
        solved=$(awk -F'[=,]' -v bar="$bar" '/^global_step=.*episodic_return=/ {
                     v = $4; gsub(/[][ ]/, "", v)  # dqn.py prints the return as [29.]
                     n++; i = n % 100; if (n > 100) s -= buf[i]; buf[i] = v; s += v
                     if (n >= 100 && s / 100 >= bar) { print $2; exit } }' \
                 "$logs/${algo}_${steps}_${SEED}.log" 2>/dev/null)
        rows+=("cleanrl|$algo|$env|$(get steps)|$(get seconds)|$(get sps)|${solved:--}|$(get final_mean_return_last100)|$(get eval_mean_return_100)")
    done
fi
printf '\n%-8s %-10s %-9s %8s %8s %8s %10s %11s  %s\n' who algo env steps seconds "steps/s" \
    "solved at" "train(100)" "evaluation (100 greedy episodes)"
for r in "${rows[@]}"; do
    IFS='|' read -r who algo env n secs sps solved train ret <<<"$r"
    printf '%-8s %-10s %-9s %8s %8s %8s %10s %11s  %s\n' "$who" "$algo" "$env" "$n" "$secs" \
        "$sps" "$solved" "$train" "$ret"
done
echo "(solved at: the first step where the mean return of the last 100 training episodes reached"
echo " 475 on CartPole-v1 or -250 on Pendulum-v1; train(100): that mean at the end of the run)"
