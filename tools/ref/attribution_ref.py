#!/work/venv-lrp/bin/python
"""attribution_ref.py - Captum goldens of the gradient explainers (strix/attribution.h) for
tests/test_attribution.c.

Run from the repository root with the LRP venv (torch 2.x, captum 0.9):
    /work/venv-lrp/bin/python tools/ref/attribution_ref.py
It writes tests/golden/attribution/{mlp,cnn}.bin (format: tools/ref/ops_ref.py's write_golden),
a few KB each. Each file holds one small torch model with fixed random weights, under strix's
parameter names prefixed "p." (an nn.Sequential's state-dict names: "p.0.weight", ...), the
inputs, a non-zero baseline, the targets, and Captum's attributions:
    saliency, saliency_signed    Saliency (abs=True / abs=False)
    ixg                          InputXGradient
    ig_<m><n>_<zero|base>        IntegratedGradients, method gl = "gausslegendre",
                                 trap = "riemann_trapezoid", n steps, zero or non-zero baseline,
                                 with f(x)[t] and f(baseline)[t] (fx, fb_<zero|base>) and Captum's
                                 convergence delta (delta_<...>)
    sg_saliency, sg_ixg          NoiseTunnel(Saliency / InputXGradient), smoothgrad, with the
                                 noise (batch, nt_samples, ...) stored as "noise": Captum draws it
                                 with torch.normal, so it is patched to add ours instead (the
                                 repeat_interleave layout of NoiseTunnel._add_noise_to_input)
    pred_saliency, predicted     Saliency of the argmax class (strix's targets = NULL)
    cam<i>, cam<i>_relu          (CNN) LayerGradCam at child i's output, relu_attributions
                                 False / True
This script does not test anything and is not needed to run the tests.
"""
import os
import sys
import warnings

import torch
import torch.nn as nn
from captum.attr import (IntegratedGradients, InputXGradient, LayerGradCam, NoiseTunnel,
                         Saliency)

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402

warnings.filterwarnings("ignore", message="Input Tensor")  # Captum: x gets requires_grad

SEED = 2718
OUT_DIR = os.path.join("tests", "golden", "attribution")
GEN = "tools/ref/attribution_ref.py (captum 0.9)"


def set_noise(noise):
    """Makes NoiseTunnel add `noise` (batch, nt, ...) instead of drawing torch.normal noise."""
    def add(inp, stdev, nt):
        assert noise.shape[1] == nt
        return inp.repeat_interleave(nt, dim=0) + noise.reshape((-1,) + tuple(inp.shape[1:]))
    NoiseTunnel._add_noise_to_input = staticmethod(add)


def explain(model, x, baseline, targets, nt, stdev):
    """Arrays every model's golden has."""
    arrays = []
    for name, p in model.state_dict().items():
        arrays.append(("p." + name, p))
    with torch.no_grad():
        logits = model(x)
    predicted = logits.argmax(dim=1)
    arrays += [("x", x), ("baseline", baseline), ("targets", targets), ("logits", logits),
               ("predicted", predicted)]
    sal = Saliency(model)
    arrays += [("saliency", sal.attribute(x, target=targets)),
               ("saliency_signed", sal.attribute(x, target=targets, abs=False)),
               ("pred_saliency", sal.attribute(x, target=predicted)),
               ("ixg", InputXGradient(model).attribute(x, target=targets))]
    ig = IntegratedGradients(model)
    fx = logits.gather(1, targets[:, None])[:, 0]
    arrays.append(("fx", fx))
    for bname, b in (("zero", torch.zeros_like(x)), ("base", baseline)):
        with torch.no_grad():
            fb = model(b).gather(1, targets[:, None])[:, 0]
        arrays.append(("fb_" + bname, fb))
        for mname, method, n in (("gl", "gausslegendre", 16), ("gl", "gausslegendre", 64),
                                 ("trap", "riemann_trapezoid", 16)):
            a, delta = ig.attribute(x, baselines=b, target=targets, n_steps=n, method=method,
                                    return_convergence_delta=True)
            key = f"ig_{mname}{n}_{bname}"
            arrays += [(key, a), ("delta_" + key[3:], delta)]
            rel = (delta.abs() / (fx - fb).abs().clamp_min(1e-12)).max().item()
            print(f"  {key}: max |delta|/|f(x)-f(b)| = {rel:.2e}")
    noise = torch.randn((x.shape[0], nt) + tuple(x.shape[1:])) * stdev
    set_noise(noise)
    arrays.append(("noise", noise))
    arrays.append(("sg_saliency", NoiseTunnel(Saliency(model)).attribute(
        x, nt_type="smoothgrad", nt_samples=nt, stdevs=stdev, target=targets)))
    arrays.append(("sg_ixg", NoiseTunnel(InputXGradient(model)).attribute(
        x, nt_type="smoothgrad", nt_samples=nt, stdevs=stdev, target=targets)))
    return arrays


def mlp_case():
    # Smooth activations: Gauss-Legendre IG then converges fast (completeness to ~1e-6 at 64
    # steps). With a ReLU here, kinks along the path left per-example gaps of 1-3 % at 64 steps
    # for most seeds tried; the CNN below keeps ReLU and max pooling (gaps < 1 % at 64 steps).
    model = nn.Sequential(nn.Linear(7, 16), nn.Tanh(), nn.Linear(16, 12), nn.SiLU(),
                          nn.Linear(12, 5)).eval()
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.Linear):
                m.weight.mul_(1.5)
                m.bias.uniform_(-0.5, 0.5)
    x = torch.randn(4, 7) * 1.5
    baseline = torch.randn(4, 7) * 0.3
    targets = torch.tensor([3, 0, 4, 1])
    return explain(model, x, baseline, targets, nt=8, stdev=0.3)


def cnn_case():
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(6 * 4 * 3, 5)).eval()
    with torch.no_grad():
        for m in model:
            if hasattr(m, "bias") and m.bias is not None:
                m.bias.uniform_(-0.3, 0.3)
    x = torch.randn(3, 2, 8, 6)
    baseline = torch.randn(3, 2, 8, 6) * 0.2
    targets = torch.tensor([2, 4, 0])
    arrays = explain(model, x, baseline, targets, nt=5, stdev=0.25)
    for i in (0, 3, 4):
        cam = LayerGradCam(model, model[i])
        arrays += [(f"cam{i}", cam.attribute(x, target=targets)),
                   (f"cam{i}_relu", cam.attribute(x, target=targets, relu_attributions=True))]
    return arrays


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.manual_seed(SEED)
    for name, fn in (("mlp", mlp_case), ("cnn", cnn_case)):
        print(name)
        size = write_golden(name, fn(), generator=GEN, seed=SEED, out_dir=OUT_DIR)
        print(f"  wrote {OUT_DIR}/{name}.bin ({size} bytes)")


if __name__ == "__main__":
    main()
