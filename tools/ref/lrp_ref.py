#!/work/venv-lrp/bin/python
"""lrp_ref.py - reference relevances from Zennit 1.0.0 for tests/test_lrp.c.

Run from the repository root with the LRP venv (Python 3.12, torch 2.15, zennit 1.0.0):
    /work/venv-lrp/bin/python tools/ref/lrp_ref.py
It writes tests/golden/lrp/<model>.bin (about 85 KB in all) for four small models with NONZERO
biases and mixed-sign inputs:
    mlp      Linear(6,9) ReLU Linear(9,7) ReLU Linear(7,5), x (5, 6)
    cnn_avg  Conv2d(2,4,3,pad 1) ReLU Conv2d(4,5,3) ReLU AvgPool2d(2) Flatten Linear(45,4),
             x (3, 2, 9, 8)
    cnn_max  the same with MaxPool2d(2)
    cnn_bn   Conv2d(2,4,3,pad 1) BatchNorm2d(4) ReLU ... (eval mode, random running stats)
Each file holds the weights under PyTorch's state-dict names ("0.weight", ...; BatchNorm buffers
too), the input "x", the logits "y", the explained classes "target" and, per case, the input
relevance "R_<case>" for the seed "seed_<case>" (batch, classes) given to autograd:
    eps, eps025, zplus, ab21, gamma      uniform rules on every Linear/Conv2d (Zennit: bias in
                                         the denominator), with Zennit's layer_map_base (Pass
                                         for activations, Norm for AvgPool, gradient for MaxPool)
    eps_biasout                          Epsilon(zero_params=['bias']): bias out of the
                                         denominator (strix's default)
    eps_plus, eps_ab21, eps_gamma_box    the composites EpsilonPlus, EpsilonAlpha2Beta1,
                                         EpsilonGammaBox(low=-3, high=3)
    onehot, contrast, pred               epsilon with a one-hot seed, with a contrastive seed
                                         (target minus class `contrast`), and on the predicted
                                         class
The BatchNorm model uses Zennit's SequentialMergeBatchNorm canonizer (BatchNorm merged into the
preceding Conv2d). Each case is computed in float64 and in float32 twice (torch's Conv2d/Linear,
and im2col + matmul / product + sum, another rounding); the seed is redrawn until all agree to
1e-5·max(1, |R|) (no denominator near 0 amplifies rounding), and the float64 result is stored.
Inputs lie in [-3, 3] (the z-box bounds). This script does not test anything and is not needed
to run the tests.
"""
import copy
import os
import sys

import torch
import zennit
from zennit.canonizers import SequentialMergeBatchNorm
from zennit.composites import (EpsilonAlpha2Beta1, EpsilonGammaBox, EpsilonPlus,
                               LayerMapComposite, layer_map_base)
from zennit.rules import AlphaBeta, Epsilon, Gamma, ZPlus
from zennit.types import Linear as AnyLinear

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "lrp")
ZENNIT_VERSION = getattr(zennit, "__version__", "1.0.0")
GENERATOR = f"tools/ref/lrp_ref.py (zennit {ZENNIT_VERSION})"
LOW, HIGH = -3.0, 3.0


def build(kind):
    """A model of the given kind with random weights and nonzero biases."""
    nn = torch.nn
    if kind == "mlp":
        layers = [nn.Linear(6, 9), nn.ReLU(), nn.Linear(9, 7), nn.ReLU(), nn.Linear(7, 5)]
    else:
        layers = [nn.Conv2d(2, 4, 3, padding=1)]
        if kind == "cnn_bn":
            layers.append(nn.BatchNorm2d(4))
        layers += [nn.ReLU(), nn.Conv2d(4, 5, 3), nn.ReLU(),
                   nn.MaxPool2d(2) if kind == "cnn_max" else nn.AvgPool2d(2),
                   nn.Flatten(), nn.Linear(45, 4)]
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                m.weight.normal_(0.0, 0.5)
                m.bias.normal_(0.0, 0.3)
            if isinstance(m, nn.BatchNorm2d):
                m.weight.normal_(1.0, 0.4)  # some gammas may come out negative
                m.weight[1] = -0.7
                m.bias.normal_(0.0, 0.3)
                m.running_mean.normal_(0.0, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return model.eval()


class UnfoldConv2d(torch.nn.Conv2d):
    """Conv2d computed as im2col + matmul: the same function with another float32 rounding."""

    def forward(self, x):
        n, _, h, w = x.shape
        kh, kw = self.kernel_size
        ph, pw = self.padding
        oh, ow = (h + 2 * ph - kh) // self.stride[0] + 1, (w + 2 * pw - kw) // self.stride[1] + 1
        col = torch.nn.functional.unfold(x, self.kernel_size, padding=self.padding,
                                         stride=self.stride)
        z = self.weight.reshape(self.out_channels, -1) @ col
        if self.bias is not None:
            z = z + self.bias.reshape(1, -1, 1)
        return z.reshape(n, self.out_channels, oh, ow)


class SumLinear(torch.nn.Linear):
    """Linear computed as an elementwise product and a sum: another float32 rounding."""

    def forward(self, x):
        z = (x.unsqueeze(-2) * self.weight).sum(-1)
        return z if self.bias is None else z + self.bias


def other_rounding(model):
    """A float32 copy of model whose Conv2d/Linear sum in another order."""
    alt = copy.deepcopy(model).float()
    for i, m in enumerate(alt):
        if type(m) is torch.nn.Conv2d:
            c = UnfoldConv2d(m.in_channels, m.out_channels, m.kernel_size, stride=m.stride,
                             padding=m.padding)
            c.load_state_dict(m.state_dict())
            alt[i] = c
        elif type(m) is torch.nn.Linear:
            lin = SumLinear(m.in_features, m.out_features)
            lin.load_state_dict(m.state_dict())
            alt[i] = lin
    return alt.eval()


def uniform(rule):
    return lambda: LayerMapComposite(layer_map=layer_map_base() + [(AnyLinear, rule())])


def composites():
    return {
        "eps": uniform(lambda: Epsilon(1e-6)),
        "eps_biasout": uniform(lambda: Epsilon(1e-6, zero_params=["bias"])),
        "eps025": uniform(lambda: Epsilon(0.25)),
        "zplus": uniform(lambda: ZPlus()),
        "ab21": uniform(lambda: AlphaBeta(2.0, 1.0)),
        "gamma": uniform(lambda: Gamma(0.25)),
        "eps_plus": lambda: EpsilonPlus(),
        "eps_ab21": lambda: EpsilonAlpha2Beta1(),
        "eps_gamma_box": lambda: EpsilonGammaBox(low=LOW, high=HIGH),
    }


def relevance(model, make_composite, x, seed, canonizers):
    composite = make_composite()
    if canonizers:
        composite.canonizers = canonizers()
    with composite.context(model) as modified:
        xi = x.clone().requires_grad_(True)
        y = modified(xi)
        (r,) = torch.autograd.grad(y, xi, grad_outputs=seed)
    return r.detach()


def seeds(y, target, contrast):
    batch, classes = y.shape
    rows = torch.arange(batch)
    onehot = torch.zeros_like(y)
    onehot[rows, target] = 1.0
    logit = onehot * y
    contra = logit.clone()
    contra[rows, contrast] = -y[rows, contrast]
    pred = torch.zeros_like(y)
    arg = y.argmax(dim=1)
    pred[rows, arg] = y[rows, arg]
    return {"logit": logit, "onehot": onehot, "contrast": contra, "pred": pred}


def cases(model, x, target, contrast, canonizers):
    """[(name, seed, relevance)] in the given dtype."""
    y = model(x).detach()
    s = seeds(y, target, contrast)
    out = []
    for name, make in composites().items():
        out.append((name, s["logit"], relevance(model, make, x, s["logit"], canonizers)))
    eps = composites()["eps"]
    for name in ("onehot", "contrast", "pred"):
        out.append((name, s[name], relevance(model, eps, x, s[name], canonizers)))
    return y, out


def well_conditioned(kind, seed):
    torch.manual_seed(seed)
    model = build(kind)
    if kind == "mlp":
        x = torch.randn(5, 6) * 1.2
        target = torch.tensor([2, 0, 3, 1, 2])
        contrast = 4
    else:
        x = torch.randn(3, 2, 9, 8) * 1.2
        target = torch.tensor([2, 0, 1])
        contrast = 3
    x = x.clamp(LOW, HIGH)
    canon = (lambda: [SequentialMergeBatchNorm()]) if kind == "cnn_bn" else None
    # fresh copies: the canonizer restores BatchNorm buffers as plain attributes, which would
    # survive a dtype conversion of the same module
    y64, c64 = cases(copy.deepcopy(model).double(), x.double(), target, contrast, canon)
    y32, c32 = cases(copy.deepcopy(model).float(), x.float(), target, contrast, canon)
    _, c32b = cases(other_rounding(model), x.float(), target, contrast, canon)
    worst = 0.0
    for (_, _, r64), (_, _, r32), (_, _, r32b) in zip(c64, c32, c32b):
        for r in (r32, r32b):
            err = ((r64 - r.double()).abs() / r64.abs().clamp(min=1.0)).max().item()
            worst = max(worst, err)
    return worst, model, x, target, contrast, y64, c64


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for kind in ("mlp", "cnn_avg", "cnn_max", "cnn_bn"):
        for seed in range(100, 200):
            worst, model, x, target, contrast, y, c = well_conditioned(kind, seed)
            if worst < 1e-5:
                break
        else:
            raise SystemExit(f"{kind}: no well-conditioned seed")
        arrays = [(k, v.float()) for k, v in model.float().state_dict().items()]
        arrays += [("x", x.float()), ("y", y.float()), ("target", target.float()),
                   ("contrast", torch.tensor(float(contrast)))]
        for name, s, r in c:
            arrays += [(f"seed_{name}", s.float()), (f"R_{name}", r.float())]
        size = write_golden(kind, arrays, generator=GENERATOR, seed=seed, out_dir=OUT_DIR)
        print(f"{kind}: seed {seed}, float32/float64 agreement {worst:.2e}, {size} bytes")


if __name__ == "__main__":
    main()
