#!/usr/bin/python3
"""ops_extra_ref.py - golden files of the "extra" backend primitives for tests/ops/cases_extra.c.

Run from the repository root with Debian's python3 (PyTorch 1.13, NumPy):
    /usr/bin/python3 tools/ref/ops_extra_ref.py
It writes tests/golden/ops/{accumulate_rows,copy_2d,bce_with_logits,rms_norm,attention_mask_fill,
tanh_gaussian,rl_rows,rope_rotate_half}.bin (about 40 KB in all), in the format of ops_ref.py (write_golden).

References: BCE is torch.nn.functional.binary_cross_entropy_with_logits (reduction='none') and
its autograd gradient. The rest have no single PyTorch op, so each is a direct transcription of
its formula (docs/SEMANTICS.md, include/strix/backend.h, include/strix/ops/rl.h), written
independently of the C code, with torch.autograd on the transcribed forward for every gradient:
RMSNorm x·rsqrt(mean(x²)+eps)·gamma; attention masks as boolean masks; the tanh-Gaussian policy;
DQN / REINFORCE / PPO-Clip losses; the (Double) DQN target; Polyak averaging. accumulate_rows and
copy_2d are plain float32 NumPy loops (the accumulation order is the op's contract, so its
golden is exact). rope_rotate_half is the Hugging Face Llama formula, transcribed (transformers is
not installed here): q·cos + rotate_half(q)·sin with rotate_half(x) = cat(−x2, x1) and the
(max_pos, head_dim/2) tables repeated over both halves, as LlamaRotaryEmbedding's cat((freqs,
freqs)). This script does not test anything and is not needed to run the tests.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden, randn, grad_of  # noqa: E402

SEED = 4321
F32 = torch.float32
F64 = torch.float64
NEG_INF = float("-inf")


def accumulate_rows():
    """out[j] += in[i][j], i ascending, each row straight into out (float32, exact order)."""
    x = randn(13, 150, scale=3.0)
    out0 = randn(150, scale=100.0)
    acc = out0.numpy().astype(np.float32).copy()
    for row in x.numpy().astype(np.float32):
        acc = (acc + row).astype(np.float32)
    return [("x", x), ("out0", out0), ("out", torch.from_numpy(acc))]


def copy_2d():
    """rows x cols block from src + src_off (row stride src_stride) to dst + dst_off."""
    rows, cols, src_stride, dst_stride, src_off, dst_off = 9, 6, 13, 10, 2, 3
    src = randn(rows * src_stride + 5)
    dst0 = randn(rows * dst_stride + 4)
    dst = dst0.clone()
    for r in range(rows):
        s = src_off + r * src_stride
        d = dst_off + r * dst_stride
        dst[d:d + cols] = src[s:s + cols]
    return [("src", src), ("dst0", dst0), ("dst", dst), ("rows", rows), ("cols", cols),
            ("src_stride", src_stride), ("dst_stride", dst_stride), ("src_off", src_off),
            ("dst_off", dst_off)]


def bce_with_logits():
    x = torch.cat([randn(7 * 5 * 3, scale=4.0),
                   torch.tensor([1000.0, -1000.0, 1000.0, -1000.0, 0.0, 20.0, -20.0, 88.0,
                                 -88.0, 90.0, -90.0, 1e-3], dtype=F32)])
    y = torch.rand(x.numel(), dtype=F32)
    y[-12:] = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.3, 0.7, 1.0, 0.0, 0.25])
    y[:10] = torch.tensor([0.0, 1.0] * 5)  # hard labels too
    scale = 1.0 / x.numel()

    def fn(t):
        return torch.nn.functional.binary_cross_entropy_with_logits(t, y, reduction="none")

    out, grad = grad_of(fn, x, torch.full_like(x, scale))
    return [("x", x), ("y", y), ("scale", scale), ("out", out), ("grad", grad)]


def rms_norm():
    rows, cols, eps = 17, 23, 1e-5
    x = randn(rows, cols, scale=2.0) + 0.3
    gamma = randn(cols) * 0.5 + 1.0
    dout = randn(rows, cols)

    def forward(t, g):
        rms = torch.sqrt((t * t).mean(dim=1, keepdim=True) + eps)
        y = t * torch.rsqrt((t * t).mean(dim=1, keepdim=True) + eps)
        return (y * g if g is not None else y), rms.reshape(rows)

    xv = x.clone().requires_grad_(True)
    gv = gamma.clone().requires_grad_(True)
    out, row_rms = forward(xv, gv)
    out.backward(dout)
    gamma_terms = dout * x / row_rms[:, None]
    out_plain, dx_plain = grad_of(lambda t: forward(t, None)[0], x, dout)
    return [("x", x), ("gamma", gamma), ("eps", eps), ("dout", dout), ("out", out.detach()),
            ("row_rms", row_rms.detach()), ("dx", xv.grad), ("gamma_terms", gamma_terms),
            ("dgamma", gv.grad), ("out_plain", out_plain), ("dx_plain", dx_plain)]


def mask_transcription(scores, keep, causal, q_off, window, value):
    B, H, Lq, Lk = scores.shape
    i = torch.arange(Lq)[:, None] + q_off
    j = torch.arange(Lk)[None, :]
    masked = torch.zeros(B, H, Lq, Lk, dtype=torch.bool)
    if causal:
        rule = j > i
        if window > 0:
            rule = rule | (j + window <= i)
        masked = masked | rule[None, None]
    if keep is not None:
        masked = masked | (keep == 0)[:, None, None, :]
    return scores.masked_fill(masked, value)


MASK_CONFIGS = [  # (tag, causal, q_off, window, use keep, value)
    ("causal", True, 0, 0, False, NEG_INF),
    ("window_keep", True, 2, 3, True, NEG_INF),
    ("keep_only", False, 0, 0, True, -3.4028234663852886e38),  # lowest finite float
    ("offset", True, 2, 0, False, -1e9),
]


def attention_mask_fill():
    B, H, Lq, Lk = 2, 3, 5, 7
    scores = randn(B, H, Lq, Lk)
    keep = torch.ones(B, Lk)
    keep[0, 6] = 0.0
    keep[1, 0] = keep[1, 3] = 0.0
    arrays = [("scores", scores), ("keep", keep)]
    for tag, causal, q_off, window, use_keep, value in MASK_CONFIGS:
        out = mask_transcription(scores, keep if use_keep else None, causal, q_off, window, value)
        arrays.append(("out_" + tag, out))
    return arrays


def tanh_gaussian():
    rows, cols, stabilizer = 7, 5, 1e-6
    mean = randn(rows, cols, scale=0.8)
    log_std = torch.rand(rows, cols, dtype=F32) * 2.0 - 1.5
    eps = randn(rows, cols)
    grad_action = randn(rows, cols)
    grad_log_prob = randn(rows)
    # forward in float32 as the op does; the log-probability in double from the float32 action
    std = torch.exp(log_std)
    action = torch.tanh(mean + std * eps)
    e, a = eps.to(F64), action.to(F64)
    terms = -0.5 * e * e - log_std.to(F64) - 0.5 * math.log(2.0 * math.pi) \
        - torch.log(1.0 - a * a + stabilizer)
    log_prob = terms.sum(dim=1)
    # gradients: autograd through the transcribed forward (in double), eps held constant
    m64 = mean.to(F64).requires_grad_(True)
    s64 = log_std.to(F64).requires_grad_(True)
    act = torch.tanh(m64 + torch.exp(s64) * e)
    lp = (-0.5 * e * e - s64 - 0.5 * math.log(2.0 * math.pi)
          - torch.log(1.0 - act * act + stabilizer)).sum(dim=1)
    torch.autograd.backward([act, lp], [grad_action.to(F64), grad_log_prob.to(F64)])
    return [("mean", mean), ("log_std", log_std), ("eps", eps), ("stabilizer", stabilizer),
            ("grad_action", grad_action), ("grad_log_prob", grad_log_prob), ("action", action),
            ("std", std), ("log_prob", log_prob), ("grad_mean", m64.grad),
            ("grad_log_std", s64.grad)]


def rl_rows():
    rows, cols = 13, 5
    actions = torch.randint(0, cols, (rows,))
    actions[:3] = torch.tensor([0, cols - 1, 2])
    onehot = torch.nn.functional.one_hot(actions, cols).to(F32)
    arrays = [("actions", actions.to(F32))]

    # DQN: loss (Q[a] - target)^2 per row; grad of the mean loss (scale = 2/rows)
    q = randn(rows, cols, scale=2.0)
    targets = randn(rows, scale=2.0)
    qv = q.clone().requires_grad_(True)
    dqn_loss = ((qv * onehot).sum(dim=1) - targets) ** 2
    dqn_loss.mean().backward()
    arrays += [("q", q), ("targets", targets), ("dqn_scale", 2.0 / rows),
               ("dqn_loss", dqn_loss.detach()), ("dqn_grad", qv.grad)]

    # REINFORCE: -log softmax(logits)[a] * R per row; grad of the mean (scale = 1/rows)
    logits = randn(rows, cols, scale=2.0)
    logits[3, 1] = NEG_INF  # a masked (never taken) action: probability 0, gradient 0
    actions_pg = actions.clone()
    actions_pg[3] = 0
    returns = randn(rows, scale=3.0)
    lv = logits.clone().requires_grad_(True)
    logp = torch.log_softmax(lv, dim=1).gather(1, actions_pg[:, None]).squeeze(1)
    pg_loss = -logp * returns
    pg_loss.mean().backward()
    arrays += [("pg_logits", logits), ("pg_actions", actions_pg.to(F32)), ("returns", returns),
               ("pg_scale", 1.0 / rows), ("pg_probs", torch.softmax(logits, dim=1)),
               ("pg_loss", pg_loss.detach()), ("pg_grad", lv.grad)]

    # PPO-Clip: ratios chosen on every side of the clip range, both advantage signs
    lower, upper = 0.8, 1.2
    ppo_logits = randn(rows, cols)
    new_logp = torch.log_softmax(ppo_logits, dim=1).gather(1, actions[:, None]).squeeze(1)
    want_ratio = torch.tensor([1.5, 0.5, 0.6, 1.4, 1.0, 1.1, 0.9, 1.3, 0.7, 1.25, 0.75, 1.05,
                               2.0], dtype=F32)
    old_logp = new_logp - torch.log(want_ratio)
    adv = torch.tensor([1.0, -1.0, 0.7, -0.4, 2.0, -1.5, 0.3, -0.8, -2.0, 0.0, 1.2, -0.6,
                        0.9], dtype=F32)
    pv = ppo_logits.clone().requires_grad_(True)
    logp_now = torch.log_softmax(pv, dim=1).gather(1, actions[:, None]).squeeze(1)
    ratio = torch.exp(logp_now - old_logp)
    ppo_loss = -torch.min(ratio * adv, torch.clamp(ratio, lower, upper) * adv)
    ppo_loss.mean().backward()
    r = ratio.detach()
    mask = torch.where(((adv >= 0) & (r > upper)) | ((adv < 0) & (r < lower)), 0.0, 1.0)
    assert 0.0 < mask.sum() < rows and min(abs(r - lower).min(), abs(r - upper).min()) > 1e-3
    arrays += [("ppo_logits", ppo_logits), ("old_logp", old_logp), ("adv", adv),
               ("lower", lower), ("upper", upper), ("ppo_scale", 1.0 / rows),
               ("ppo_probs", torch.softmax(ppo_logits, dim=1)), ("ppo_loss", ppo_loss.detach()),
               ("ppo_ratio", r), ("ppo_mask", mask), ("ppo_grad", pv.grad)]

    # (Double) DQN target: argmax of the select row (first maximum), read in the eval row
    gamma = 0.99
    select = randn(rows, cols)
    select[0, :] = 0.5                  # all tied: column 0
    select[1, :] = torch.tensor([0.1, 2.0, -1.0, 2.0, 0.3])  # tie between 1 and 3: column 1
    evalq = randn(rows, cols, scale=2.0)
    rewards = randn(rows)
    done = (torch.rand(rows) < 0.3).to(F32)
    done[0], done[1] = 0.0, 1.0

    def target_of(sel, ev):
        best = np.argmax(sel.numpy(), axis=1)  # NumPy: the first maximum
        picked = ev[torch.arange(rows), torch.from_numpy(best)]
        return rewards + (gamma * (1.0 - done)) * picked

    arrays += [("select", select), ("evalq", evalq), ("rewards", rewards), ("done", done),
               ("gamma", gamma), ("target_double", target_of(select, evalq)),
               ("target_plain", target_of(evalq, evalq))]

    # Polyak: tau·src + (1 − tau)·dst, over rows·cols elements
    tau = 0.005
    src, dst = randn(rows, cols), randn(rows, cols)
    arrays += [("src", src), ("dst", dst), ("tau", tau),
               ("polyak", tau * src + (1.0 - tau) * dst)]
    return arrays


def rope_rotate_half():
    """Hugging Face rotate-half RoPE (Llama): out = x·cos + rotate_half(x)·sin over rows at
    position pos0 + r mod seq_len; the inverse (the transpose, backward) uses −sin."""
    rows, seq_len, head_dim, pos0, max_pos = 5 * 7, 7, 12, 2, 10
    x = randn(rows, head_dim)
    half = head_dim // 2
    inv_freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64) * 2.0 / head_dim)
    freqs = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos, sin = torch.cos(freqs).to(F32), torch.sin(freqs).to(F32)

    def rotate_half(t):
        return torch.cat((-t[..., half:], t[..., :half]), dim=-1)

    def apply(t, sign):
        pos = pos0 + torch.arange(rows) % seq_len
        c = torch.cat((cos[pos], cos[pos]), dim=-1)
        s = torch.cat((sin[pos], sin[pos]), dim=-1) * sign
        return t * c + rotate_half(t) * s

    return [("x", x), ("cos", cos), ("sin", sin), ("seq_len", seq_len), ("pos0", pos0),
            ("out", apply(x, 1.0)), ("inv", apply(x, -1.0))]


CASES = [accumulate_rows, copy_2d, bce_with_logits, rms_norm, attention_mask_fill, tanh_gaussian,
         rl_rows, rope_rotate_half]


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    total = 0
    for case in CASES:
        size = write_golden(case.__name__, case(), generator="tools/ref/ops_extra_ref.py",
                            seed=SEED)
        total += size
        print(f"{case.__name__:22s} {size:8d} bytes")
    print(f"total {total} bytes (torch {torch.__version__})")


if __name__ == "__main__":
    main()
