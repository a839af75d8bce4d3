#!/usr/bin/env python3
"""rl_env_ref.py - Gymnasium episodes of CartPole-v1, the continuous CartPole and Pendulum-v1 for
tests/test_rl_env.c.

Run from the repository root with Gymnasium 1.4 from PyPI:
    python3 -m venv /work/venv-rl && /work/venv-rl/bin/pip install "gymnasium==1.4.*" numpy
    /work/venv-rl/bin/python tools/ref/rl_env_ref.py
It writes tests/golden/rl/{cartpole,cartpole-continuous,pendulum}.txt (about 280 KB in all): each
episode starts from env.reset(seed=...) and is driven by recorded actions (random ones from a
numpy Generator, or a simple controller with random actions mixed in) until it terminates or is
truncated. Pendulum's "powf" episode takes only torques whose float32 u**2 (libm's powf) differs
from the rounded u*u. The continuous CartPole is not in Gymnasium: ContinuousCartPole below runs
CartPoleEnv.step with force = clip(a, -1, 1)·force_mag, under TimeLimit(500).

Text format (one record per line, fields separated by one space; '#' lines are comments):
    env NAME                                  once, after the comments
    episode SEED POLICY STEPS                 STEPS = the number of step lines that follow
    init STATE[state_dim] OBS[obs_dim]        env.unwrapped.state after reset, and its observation
    step ACTION STATE[state_dim] OBS[obs_dim] REWARD TERMINATED TRUNCATED
STATE and REWARD are float64 in Python's repr (shortest text that reads back to the same double);
OBS and a continuous ACTION are float32 in numpy's shortest float32 text (reads back exactly with
strtof); a discrete ACTION is 0 or 1; the flags are 0 or 1. Pendulum's actions are float32 arrays,
as its action space gives them (NumPy then computes the torque terms in float32, see pendulum).
This script does not test anything and is not needed to run the tests.
"""
import os

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from gymnasium.wrappers import TimeLimit

OUT_DIR = os.path.join("tests", "golden", "rl")


class ContinuousCartPole(CartPoleEnv):
    """CartPole-v1 with one action in [-1, 1]: force = clip(a, -1, 1)·force_mag. Runs Gymnasium's
    own step (force_mag set to the force for one call, action 1), so the physics is its code."""

    def step(self, action):
        a = np.asarray(action, dtype=np.float32).reshape(-1)[0]
        saved = self.force_mag
        self.force_mag = float(np.clip(a, -1.0, 1.0)) * saved  # double, as strix computes it
        try:
            return super().step(1)
        finally:
            self.force_mag = saved


def f64(x):
    return repr(float(x))


def f32(x):
    return str(np.float32(x))


def record(env, seed, policy_name, policy, lines):
    """Runs one episode from reset(seed) with policy(state, rng) and appends its records."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(1000 + seed)
    base = env.unwrapped
    body = ["init " + " ".join([f64(v) for v in base.state] + [f32(v) for v in obs])]
    while True:
        action = policy(np.array(base.state, dtype=np.float64), rng)
        obs, reward, terminated, truncated, _ = env.step(action)
        text = str(action) if isinstance(action, int) else f32(action[0])
        fields = [text] + [f64(v) for v in base.state] + [f32(v) for v in obs]
        fields += [f64(reward), str(int(terminated)), str(int(truncated))]
        body.append("step " + " ".join(fields))
        if terminated or truncated:
            break
    steps = len(body) - 1
    lines.append(f"episode {seed} {policy_name} {steps}")
    lines += body
    end = ("terminated" if terminated else "") + (" truncated" if truncated else "")
    return f"seed {seed} {policy_name}: {steps} steps, {end.strip()}"


# ---- policies (state, rng) -> action ---------------------------------------------------------

def random_discrete(s, rng):
    return int(rng.integers(0, 2))


def balance(s, rng):
    """Pushes towards the pole's lean and the cart's centre; one action in ten random."""
    if rng.random() < 0.1:
        return int(rng.integers(0, 2))
    return int(10 * s[2] + s[3] + 0.1 * s[0] + 0.5 * s[1] > 0)


def drift(s, rng):
    """Balances the pole with a bias, so the cart runs off the track (|x| > 2.4)."""
    return int(s[2] + 0.5 * s[3] + 0.05 > 0)


def random_force(s, rng):
    """U(-1.5, 1.5): a third of the actions are clamped."""
    return np.array([rng.uniform(-1.5, 1.5)], dtype=np.float32)


def balance_force(s, rng):
    """A proportional force (often past ±1, so clamped) plus noise."""
    a = 3.0 * (10 * s[2] + s[3] + 0.1 * s[0] + 0.5 * s[1]) + rng.normal(0.0, 0.3)
    return np.array([a], dtype=np.float32)


def random_torque(s, rng):
    """U(-3, 3): a third of the torques are clipped to ±2."""
    return np.array([rng.uniform(-3.0, 3.0)], dtype=np.float32)


def pow_quirk(s, rng):
    """Torques in (-2, 2) whose float32 u**2 (libm's powf, which NumPy calls for a scalar)
    differs from the rounded product u*u: Pendulum's cost keeps that last bit."""
    while True:
        u = np.float32(rng.uniform(-2.0, 2.0))
        if u**2 != u * u:
            return np.array([u], dtype=np.float32)


def pump(s, rng):
    """Torque along the velocity (past the ±2 clip): the pendulum spins up to the ±8 speed clip
    and its angle runs over many turns (angle_normalize)."""
    a = 2.5 if s[1] >= 0 else -2.5
    return np.array([a + rng.uniform(-0.2, 0.2)], dtype=np.float32)


def write(name, lines, summary):
    head = [f"# tests/golden/rl/{name}.txt: written by tools/ref/rl_env_ref.py (format there);",
            f"# gymnasium {gym.__version__}, numpy {np.__version__}", f"env {name}"]
    path = os.path.join(OUT_DIR, name + ".txt")
    with open(path, "w") as f:
        f.write("\n".join(head + lines) + "\n")
    print(f"{path}: {os.path.getsize(path)} bytes")
    for line in summary:
        print("  " + line)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)

    env = gym.make("CartPole-v1")
    lines, summary = [], []
    for seed, name, policy in [(0, "random", random_discrete), (1, "random", random_discrete),
                               (2, "random", random_discrete), (3, "balance", balance),
                               (6, "drift", drift)]:
        summary.append(record(env, seed, name, policy, lines))
    write("cartpole", lines, summary)

    env = TimeLimit(ContinuousCartPole(), max_episode_steps=500)
    lines, summary = [], []
    for seed, name, policy in [(10, "random", random_force), (11, "random", random_force),
                               (12, "balance", balance_force)]:
        summary.append(record(env, seed, name, policy, lines))
    write("cartpole-continuous", lines, summary)

    env = gym.make("Pendulum-v1")
    lines, summary = [], []
    for seed, name, policy in [(20, "random", random_torque), (21, "random", random_torque),
                               (22, "pump", pump), (23, "powf", pow_quirk)]:
        summary.append(record(env, seed, name, policy, lines))
    write("pendulum", lines, summary)


if __name__ == "__main__":
    main()
