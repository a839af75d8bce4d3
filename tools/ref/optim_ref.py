#!/usr/bin/python3
"""optim_ref.py - PyTorch goldens for the losses, optimizers, LR schedules and clipping of strix
(tests/test_loss.c, tests/test_optim.c).

Run from the repository root with Debian's python3 (PyTorch 1.13):
    /usr/bin/python3 tools/ref/optim_ref.py
It writes tests/golden/optim/<case>.bin (a few KB each) in the format of tools/ref/ops_ref.py
(write_golden; read by tests/testlib.h). Integer arrays (targets) are stored as exact floats.

Cases:
  loss_mse, loss_ce, loss_ce_edge, loss_bce, loss_kl   values and input gradients per reduction
  sgd_<variant>, adam_l2, adamw_groups                 parameter trajectories over 5 steps with
                                                       fixed per-step gradients and learning rates
  lr_schedules                                         learning rates of torch.optim.lr_scheduler
  clip                                                 clip_grad_value_ and clip_grad_norm_
This script does not test anything and is not needed to run the tests.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import ops_ref  # noqa: E402
from ops_ref import write_golden, randn  # noqa: E402

ops_ref.OUT_DIR = os.path.join("tests", "golden", "optim")
F = torch.nn.functional
STEPS = 5


def loss_and_grad(fn, x):
    x = x.clone().requires_grad_(True)
    loss = fn(x)
    loss.backward()
    return loss.detach(), x.grad.detach()


# ---- losses --------------------------------------------------------------------------------------

def loss_mse():
    x = randn(7, 5, 3)
    y = randn(7, 5, 3)
    arrays = [("input", x), ("target", y)]
    for red in ("mean", "sum"):
        loss, g = loss_and_grad(lambda t: F.mse_loss(t, y, reduction=red), x)
        arrays += [("loss_" + red, loss), ("grad_" + red, g)]
    return arrays


def ce_arrays(x, t, eps_list):
    arrays = [("logits", x), ("targets", t)]
    for eps in eps_list:
        for red in ("mean", "sum"):
            fn = lambda z: F.cross_entropy(z, t, ignore_index=-1, reduction=red,
                                           label_smoothing=eps)
            loss, g = loss_and_grad(fn, x)
            tag = f"{red}_ls{int(round(eps * 100))}"
            arrays += [("loss_" + tag, loss), ("grad_" + tag, g)]
    return arrays


def loss_ce():
    """17 rows, 11 classes; rows 3 and 9 ignored (target -1); smoothing 0, 0.1, 0.3."""
    x = randn(17, 11, scale=3.0)
    t = torch.randint(0, 11, (17,))
    t[3] = t[9] = -1
    arrays = ce_arrays(x, t, [0.0, 0.1, 0.3])
    # the same logits with every row counted (the smoothing path without gathering)
    t_all = t.clone()
    t_all[3], t_all[9] = 4, 0
    for name, value in ce_arrays(x, t_all, [0.0, 0.2]):
        arrays.append((name + "_all", value))
    return arrays


def loss_ce_edge():
    """Large logits (no overflow, no -inf), and -inf logits outside the target without smoothing:
    finite loss, zero gradient there (docs/SEMANTICS.md, edge cases)."""
    x = randn(6, 9, scale=2.0)
    x[0] += 1000.0                      # huge common offset
    x[1, 2] = 80.0                      # one dominant logit (the target: loss ~ 0)
    x[2, 5] = 80.0                      # one dominant logit (not the target: loss ~ 80)
    x[3] *= 1e4                         # huge spread
    t = torch.tensor([1, 2, 0, 4, 7, 3])
    arrays = ce_arrays(x, t, [0.0, 0.1])
    xi = x.clone()
    xi[4, 0] = xi[4, 8] = float("-inf")  # row 4 targets 7
    xi[5, 1] = float("-inf")             # row 5 targets 3
    for name, value in ce_arrays(xi, t, [0.0]):
        arrays.append((name + "_inf", value))
    return arrays


def loss_bce():
    x = torch.cat([randn(40, scale=3.0),
                   torch.tensor([50.0, -50.0, 100.0, -100.0, 1e4, -1e4, 30.0, -30.0, 0.0, 0.0])])
    y = torch.cat([torch.rand(40),
                   torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.3, 0.7, 0.0, 1.0])])
    arrays = [("logits", x), ("target", y)]
    for red in ("mean", "sum"):
        loss, g = loss_and_grad(lambda t: F.binary_cross_entropy_with_logits(t, y,
                                                                             reduction=red), x)
        arrays += [("loss_" + red, loss), ("grad_" + red, g)]
    return arrays


def loss_kl():
    """input = log_softmax (7, 13); target probabilities with exact zeros (their terms are 0).
    torch 1.13 gives NaN for a -inf input under a zero target (0·-inf); strix masks those terms
    to 0, tested exactly in tests/test_loss.c, so no -inf input here."""
    x = torch.log_softmax(randn(7, 13, scale=2.0), dim=1)
    q = torch.softmax(randn(7, 13, scale=2.0), dim=1)
    q[0, 3] = q[2, 0] = q[2, 12] = q[5, 7] = 0.0
    q = q / q.sum(dim=1, keepdim=True)
    arrays = [("input", x), ("target", q)]
    for red in ("batchmean", "mean", "sum"):
        loss, g = loss_and_grad(lambda t: F.kl_div(t, q, reduction=red), x)
        arrays += [("loss_" + red, loss), ("grad_" + red, g)]
    xl = torch.log_softmax(randn(7, 13), dim=1)
    lq = torch.log_softmax(randn(7, 13), dim=1)
    arrays += [("input_lt", xl), ("target_lt", lq)]
    for red in ("batchmean", "sum"):
        loss, g = loss_and_grad(lambda t: F.kl_div(t, lq, reduction=red, log_target=True), xl)
        arrays += [("loss_lt_" + red, loss), ("grad_lt_" + red, g)]
    return arrays


# ---- optimizers ---------------------------------------------------------------------------------

def trajectory(params, grads, make_opt, lrs):
    """params: list of (name, tensor); grads[s][i] the gradient of parameter i at step s. Returns
    the parameters after each step: arrays '<name>_s<k>'."""
    ps = [torch.nn.Parameter(p.clone()) for _, p in params]
    opt = make_opt(ps)
    out = []
    for s in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = lrs[s] * group.get("lr_scale", 1.0)
        for p, g in zip(ps, grads[s]):
            p.grad = g.clone()
        opt.step()
        out += [(f"{name}_s{s}", p.detach().clone()) for (name, _), p in zip(params, ps)]
    return out


def fixed_problem():
    params = [("w", randn(5, 3)), ("b", randn(7))]
    grads = [[randn(5, 3), randn(7)] for _ in range(STEPS)]
    lrs = [0.1, 0.05, 0.08, 0.02, 0.1]
    arrays = [(n, p) for n, p in params] + [("lrs", torch.tensor(lrs))]
    for s in range(STEPS):
        arrays += [(f"gw_s{s}", grads[s][0]), (f"gb_s{s}", grads[s][1])]
    return params, grads, lrs, arrays


SGD_VARIANTS = {
    "plain": dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False),
    "momentum": dict(momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False),
    "nesterov": dict(momentum=0.9, dampening=0.0, weight_decay=0.01, nesterov=True),
    "damp_wd": dict(momentum=0.8, dampening=0.3, weight_decay=0.05, nesterov=False),
}


def sgd(variant):
    def case():
        params, grads, lrs, arrays = fixed_problem()
        cfg = SGD_VARIANTS[variant]
        arrays += [(k, float(v)) for k, v in cfg.items()]
        arrays += trajectory(params, grads, lambda ps: torch.optim.SGD(ps, lr=lrs[0], **cfg), lrs)
        return arrays
    return case


def adam_l2():
    params, grads, lrs, arrays = fixed_problem()
    lrs = [0.01, 0.02, 0.005, 0.01, 0.03]
    arrays[2] = ("lrs", torch.tensor(lrs))
    make = lambda ps: torch.optim.Adam(ps, lr=lrs[0], betas=(0.9, 0.999), eps=1e-8,
                                       weight_decay=0.1)
    return arrays + trajectory(params, grads, make, lrs)


def adamw_groups():
    """Model: enc.weight (4,3), enc.bias (4), head.weight (2,4) frozen, bn.running_mean a buffer.
    Groups: enc.weight lr x1 wd 0.1; enc.bias lr x0.5 wd 0. The frozen parameter and the buffer
    get no gradient in torch and must not move."""
    names = ["enc.weight", "enc.bias", "head.weight", "bn.running_mean"]
    values = [randn(4, 3), randn(4), randn(2, 4), randn(4)]
    grads = [[randn(4, 3), randn(4)] for _ in range(STEPS)]
    lrs = [0.01, 0.02, 0.015, 0.005, 0.01]
    arrays = list(zip(names, values)) + [("lrs", torch.tensor(lrs))]
    for s in range(STEPS):
        arrays += [(f"g_enc.weight_s{s}", grads[s][0]), (f"g_enc.bias_s{s}", grads[s][1])]
    make = lambda ps: torch.optim.AdamW([
        {"params": [ps[0]], "weight_decay": 0.1, "lr_scale": 1.0},
        {"params": [ps[1]], "weight_decay": 0.0, "lr_scale": 0.5}], lr=lrs[0])
    arrays += trajectory(list(zip(names[:2], values[:2])), grads, make, lrs)
    return arrays


# ---- schedules ----------------------------------------------------------------------------------

def lrs_of(make, steps, base=0.1):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base)
    sched = make(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return torch.tensor(out, dtype=torch.float64)


def lr_schedules():
    S = torch.optim.lr_scheduler
    n = 25
    warm = lambda opt, w, f: S.LinearLR(opt, start_factor=f, end_factor=1.0, total_iters=w)
    cases = {
        "step": lambda o: S.StepLR(o, step_size=3, gamma=0.5),
        "linear": lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=10),
        "linear_up": lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=6),
        "cosine": lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=1e-3),
        "warm_cosine": lambda o: S.SequentialLR(o, [warm(o, 5, 0.1),
                                                    S.CosineAnnealingLR(o, T_max=12,
                                                                        eta_min=1e-3)], [5]),
        "warm_step": lambda o: S.SequentialLR(o, [warm(o, 4, 0.2),
                                                  S.StepLR(o, step_size=5, gamma=0.3)], [4]),
        "warm_linear": lambda o: S.SequentialLR(o, [warm(o, 3, 0.5),
                                                    S.LinearLR(o, 1.0, 0.0, total_iters=15)],
                                                [3]),
        "warm_const": lambda o: S.LambdaLR(o, lambda t: 0.1 + 0.9 * t / 6 if t < 6 else 1.0),
    }
    arrays = [("base_lr", 0.1), ("steps", n)]
    for name, make in cases.items():
        arrays.append(("lr_" + name, lrs_of(make, n)))
    # LambdaLR gives the same warmup + cosine as SequentialLR (closed form check)
    lam = lambda t: (0.1 + 0.9 * t / 5 if t < 5 else
                     (1e-2 + (1 - 1e-2) * (1 + math.cos(math.pi * (t - 5) / 12)) / 2))
    a = lrs_of(lambda o: S.LambdaLR(o, lam), n)
    b = dict(arrays)["lr_warm_cosine"]
    assert torch.allclose(a, b, rtol=1e-9, atol=1e-12), (a, b)
    return arrays


# ---- clipping -----------------------------------------------------------------------------------

def clip():
    gw, gb, gf = randn(5, 3), randn(7), randn(4) * 10.0
    arrays = [("gw", gw), ("gb", gb), ("gfrozen", gf)]
    ps = [torch.nn.Parameter(torch.zeros(5, 3)), torch.nn.Parameter(torch.zeros(7))]
    for p, g in zip(ps, (gw, gb)):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_value_(ps, 0.5)
    arrays += [("value", 0.5), ("gw_value", ps[0].grad), ("gb_value", ps[1].grad)]
    for p, g in zip(ps, (gw, gb)):
        p.grad = g.clone()
    norm = torch.nn.utils.clip_grad_norm_(ps, 1.0)  # the frozen parameter has no grad
    arrays += [("max_norm", 1.0), ("norm", norm), ("gw_norm", ps[0].grad),
               ("gb_norm", ps[1].grad)]
    return arrays


CASES = {
    "loss_mse": loss_mse,
    "loss_ce": loss_ce,
    "loss_ce_edge": loss_ce_edge,
    "loss_bce": loss_bce,
    "loss_kl": loss_kl,
    **{"sgd_" + v: sgd(v) for v in SGD_VARIANTS},
    "adam_l2": adam_l2,
    "adamw_groups": adamw_groups,
    "lr_schedules": lr_schedules,
    "clip": clip,
}


def main():
    os.makedirs(ops_ref.OUT_DIR, exist_ok=True)
    total = 0
    for name, fn in CASES.items():
        torch.manual_seed(ops_ref.SEED)
        total += write_golden(name, fn())
    print(f"total {total} bytes in {ops_ref.OUT_DIR} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
