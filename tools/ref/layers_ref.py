#!/work/venv-torch/bin/python
"""layers_ref.py - PyTorch goldens of the layer zoo (strix/layers.h) for tests/test_layers.c.

Run from the repository root with the torch 2.x venv (nn.RMSNorm needs torch >= 2.4, Debian's
torch 1.13 lacks it):
    /work/venv-torch/bin/python tools/ref/layers_ref.py
It writes tests/golden/layers/<case>.bin (format: tools/ref/ops_ref.py's write_golden) and
tests/golden/layers/cnn_torch.st, the state dict of a real torch CNN as a safetensors file
(written by hand with struct/json: the `safetensors` package is not installed here; .st keeps
it clear of .gitignore's *.safetensors). In that file num_batches_tracked is a 0-dim I64, as
torch stores it.

Each per-layer case holds x, dy (the upstream gradient), y, dx and, for modules with
parameters, "param.<name>" and "grad.<name>" under strix's names (prefix "m"). Modes, momentum
and running statistics are in the case functions below.

    /work/venv-torch/bin/python tools/ref/layers_ref.py --check FILE
loads a safetensors state dict written by strix (strix_state_dict_save) into the same torch CNN
with load_state_dict(strict=True) and prints the result: the "a file we write loads into
PyTorch" half of the round trip. This script does not test anything else.
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
import ops_ref  # noqa: E402
from ops_ref import write_golden, randn, grad_of  # noqa: E402,F401

ops_ref.OUT_DIR = os.path.join("tests", "golden", "layers")
SEED = 4321
F32 = torch.float32


def module_case(module, x, prefix="m", train=True):
    """Forward/backward of `module` on x with a random dy; params and grads under prefix."""
    module.train(train)
    x = x.clone().requires_grad_(True)
    y = module(x)
    dy = randn(*y.shape)
    y.backward(dy)
    arrays = [("x", x.detach()), ("dy", dy), ("y", y.detach()), ("dx", x.grad.detach())]
    for name, p in module.named_parameters():
        arrays.append((f"param.{prefix}.{name}", p.detach()))
        arrays.append((f"grad.{prefix}.{name}", p.grad.detach()))
    return arrays


def conv_bias():
    conv = nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 1))
    return module_case(conv, randn(2, 3, 7, 5))


def conv_nobias():
    conv = nn.Conv2d(4, 5, 3, bias=False)
    return module_case(conv, randn(3, 4, 6, 7))


def maxpool():
    pool = nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 1))
    return module_case(pool, randn(2, 3, 7, 6))


def maxpool_ties():
    # values on a coarse grid: many windows hold several equal maxima (the first one wins)
    x = torch.round(torch.rand(2, 2, 7, 5) * 3.0)
    return module_case(nn.MaxPool2d(2), x)


def avgpool():
    return module_case(nn.AvgPool2d(3, stride=2, padding=1), randn(2, 3, 7, 6))


def avgpool_default():
    return module_case(nn.AvgPool2d(2), randn(2, 3, 7, 5))


def adaptive():
    return module_case(nn.AdaptiveAvgPool2d((2, 3)), randn(2, 3, 6, 9))


def randomize_bn(bn):
    with torch.no_grad():
        bn.weight.copy_(randn(bn.num_features) * 0.5 + 1.0)
        bn.bias.copy_(randn(bn.num_features) * 0.3)
        bn.running_mean.copy_(randn(bn.num_features) * 0.5)
        bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
        bn.num_batches_tracked.fill_(3)


def bn_case(bn, shape):
    """Train step on x (y, dx, grads, running stats after), then eval on x2."""
    randomize_bn(bn)
    arrays = [("param.m.running_mean", bn.running_mean.clone()),
              ("param.m.running_var", bn.running_var.clone())]
    arrays += module_case(bn, randn(*shape, scale=2.0) + 0.5)
    arrays += [("after.running_mean", bn.running_mean.clone()),
               ("after.running_var", bn.running_var.clone()),
               ("after.num_batches_tracked", bn.num_batches_tracked.clone())]
    bn.zero_grad()
    ev = module_case(bn, randn(*shape), train=False)
    arrays += [("eval." + name, value) for name, value in ev if not name.startswith("param.")]
    return arrays


def batchnorm2d():
    return bn_case(nn.BatchNorm2d(4), (3, 4, 5, 3))


def batchnorm1d():
    return bn_case(nn.BatchNorm1d(5), (7, 5))


def batchnorm1d_3d():
    return bn_case(nn.BatchNorm1d(3, momentum=0.25, eps=1e-3), (4, 3, 6))


def groupnorm():
    gn = nn.GroupNorm(3, 6)
    with torch.no_grad():
        gn.weight.copy_(randn(6) * 0.5 + 1.0)
        gn.bias.copy_(randn(6) * 0.3)
    return module_case(gn, randn(2, 6, 4, 3, scale=1.5) - 0.3)


def rmsnorm():
    rms = nn.RMSNorm(16)  # eps None: float32 machine epsilon
    with torch.no_grad():
        rms.weight.copy_(randn(16) * 0.5 + 1.0)
    return module_case(rms, randn(3, 5, 16))


def rmsnorm_eps():
    return module_case(nn.RMSNorm(11, eps=1e-3, elementwise_affine=False), randn(17, 11) * 0.1)


ACTS = [("relu", nn.ReLU()), ("tanh", nn.Tanh()), ("sigmoid", nn.Sigmoid()), ("silu", nn.SiLU()),
        ("gelu", nn.GELU()), ("gelu_tanh", nn.GELU(approximate="tanh"))]


def activations():
    x = randn(7, 5, 3, scale=2.0)
    x[0, 0, 0] = 0.0  # ReLU at 0: gradient 0
    dy = randn(7, 5, 3)
    arrays = [("x", x), ("dy", dy)]
    for name, act in ACTS:
        y, dx = grad_of(act, x, dy)
        arrays += [("y_" + name, y), ("dx_" + name, dx)]
    return arrays


def residual():
    f = nn.Sequential(nn.Linear(5, 6), nn.GELU(), nn.Linear(6, 5))
    x = randn(4, 5).requires_grad_(True)
    y = x + f(x)
    dy = randn(4, 5)
    y.backward(dy)
    arrays = [("x", x.detach()), ("dy", dy), ("y", y.detach()), ("dx", x.grad.detach())]
    for name, p in f.named_parameters():
        arrays += [(f"param.m.{name}", p.detach()), (f"grad.m.{name}", p.grad.detach())]
    return arrays


def cnn_model():
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, (3, 2), stride=(1, 2), padding=(1, 0)), nn.BatchNorm2d(6), nn.ReLU(),
        nn.AdaptiveAvgPool2d((2, 3)), nn.Flatten(), nn.Linear(36, 5))


def save_state_dict(model, path):
    """A safetensors file of model.state_dict() (torch's dtypes: F32, num_batches_tracked I64)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in model.state_dict().items():
        t = t.detach().contiguous()
        if t.dtype == torch.int64:
            dtype, blob = "I64", t.numpy().astype("<i8").tobytes()
        else:
            dtype, blob = "F32", t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_safetensors(path):
    """name -> torch tensor of a safetensors file with F32/I64 tensors."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dt = {"F32": "<f4", "I64": "<i8"}[e["dtype"]]
        arr = np.frombuffer(data[b:end], dtype=dt).reshape(e["shape"]).copy()
        out[name] = torch.from_numpy(arr)
    return out


def cnn():
    model = cnn_model()
    for m in model:
        if isinstance(m, nn.BatchNorm2d):
            randomize_bn(m)
            m.num_batches_tracked.fill_(7)
    save_state_dict(model, os.path.join(ops_ref.OUT_DIR, "cnn_torch.st"))
    arrays = [("param." + k, v.clone()) for k, v in model.state_dict().items()]
    x = randn(3, 3, 12, 12)
    model.train()
    xg = x.clone().requires_grad_(True)
    y = model(xg)
    dy = randn(*y.shape)
    y.backward(dy)
    arrays += [("x", x), ("dy", dy), ("y_train", y.detach()), ("dx_train", xg.grad.detach())]
    arrays += [("grad_train." + k, p.grad.detach()) for k, p in model.named_parameters()]
    arrays += [("after." + k, v.clone()) for k, v in model.state_dict().items()
               if "running" in k or "num_batches" in k]
    model.zero_grad()
    model.eval()
    xg = x.clone().requires_grad_(True)
    y = model(xg)
    y.backward(dy)
    arrays += [("y_eval", y.detach()), ("dx_eval", xg.grad.detach())]
    arrays += [("grad_eval." + k, p.grad.detach()) for k, p in model.named_parameters()]
    return arrays


CASES = [conv_bias, conv_nobias, maxpool, maxpool_ties, avgpool, avgpool_default, adaptive,
         batchnorm2d, batchnorm1d, batchnorm1d_3d, groupnorm, rmsnorm, rmsnorm_eps, activations,
         residual, cnn]


def check(path):
    model = cnn_model()
    result = model.load_state_dict(load_safetensors(path), strict=True)
    model.eval()
    print(f"{path}: loaded into torch {torch.__version__} with strict=True ({result}); "
          f"eval output of ones: {model(torch.ones(1, 3, 12, 12)).detach().numpy().round(5)}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
        return
    os.makedirs(ops_ref.OUT_DIR, exist_ok=True)
    total = 0
    for case in CASES:
        torch.manual_seed(SEED)
        total += write_golden(case.__name__, case())
    print(f"wrote {len(CASES)} golden files ({total} bytes) to {ops_ref.OUT_DIR}")


if __name__ == "__main__":
    main()
