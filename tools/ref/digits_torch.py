#!/usr/bin/python3
"""digits_torch.py - the two models of examples/digits.c in PyTorch, for the record.

Run from the repository root with Debian's python3 (PyTorch 1.13) or /work/venv-torch/bin/python:
    /usr/bin/python3 tools/ref/digits_torch.py [--epochs-mlp 30] [--epochs-cnn 20] [--seeds 0,1,2]
    /usr/bin/python3 tools/ref/digits_torch.py --load-cnn cnn.safetensors
It prints the test accuracy PyTorch reaches with the same data, split, batch order, architecture
and optimizer as examples/digits.c. Only the initial weights differ (PyTorch draws them from its
own generator). With --load-cnn it instead evaluates, in PyTorch, the CNN state dict that
`digits --save PATH` wrote (the same test accuracy shows that the file means the same model).
It tests nothing and no test needs it.

Shared with examples/digits.c (keep the two in step):
  - data: ../shared/data/digits.csv, 1,797 rows of 64 pixels (0..16) then the label; pixels / 16.
  - split: indices 0..n-1 shuffled by Fisher-Yates (i from n-1 down to 1, j = next() % (i + 1),
    swap) with a SplitMix64 stream seeded with SPLIT_SEED; the first n*4//5 (1,437) train, the
    remaining 360 test. The split never depends on --seed.
  - batches: each epoch shuffles the training positions 0..n_train-1 the same way, with one stream
    per model seeded strix_seed_derive(seed, model) (model 0 = MLP, 1 = CNN) that continues across
    epochs; batches of 32 in that order, the last one short (drop_last=False).
  - MLP: Linear(64,128) ReLU Linear(128,64) ReLU Linear(64,10).
  - CNN: Conv2d(1,16,3,p=1) BN ReLU MaxPool2 -> Conv2d(16,32,3,p=1) BN ReLU MaxPool2 -> Flatten ->
    Linear(128,10), on 1x8x8 images; evaluated in eval mode (running statistics).
  - mean cross-entropy; AdamW lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on every
    parameter (torch.optim.AdamW's default), constant learning rate.
Written for strix.
"""
import argparse
import json
import os
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SPLIT_SEED = 1337
BATCH = 32


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class SplitMix64:
    """strix_rng of include/strix/core.h."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + GOLDEN) & MASK
        return mix64(self.state)


def seed_derive(seed, idx):
    return mix64((seed + GOLDEN * (idx + 1)) & MASK)


def shuffle(perm, rng):
    for i in range(len(perm) - 1, 0, -1):
        j = rng.next() % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]


def load(path):
    xs, ys = [], []
    for line in open(path):
        v = [int(t) for t in line.strip().split(",")]
        assert len(v) == 65
        xs.append([p / 16.0 for p in v[:64]])
        ys.append(v[64])
    return torch.tensor(xs, dtype=torch.float32), torch.tensor(ys, dtype=torch.long)


def split(n):
    perm = list(range(n))
    shuffle(perm, SplitMix64(SPLIT_SEED))
    n_train = n * 4 // 5
    return perm[:n_train], perm[n_train:]


def mlp():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def cnn():
    """Takes (N, 1, 8, 8); names "0.weight" ... "9.bias" as examples/digits.c writes them."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 2 * 2, 10))


def load_safetensors(path):
    """A state dict from a safetensors file (F32 and I64 only; no safetensors package needed)."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dtype = {"F32": torch.float32, "I64": torch.int64}[e["dtype"]]
        t = torch.frombuffer(bytearray(data[b:end]), dtype=dtype) if end > b else \
            torch.zeros(0, dtype=dtype)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def accuracy(model, x_te, y_te):
    model.eval()
    with torch.no_grad():
        return (model(x_te).argmax(1) == y_te).float().mean().item()


def train(name, model, model_idx, seed, epochs, x_tr, y_tr, x_te, y_te):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    rng = SplitMix64(seed_derive(seed, model_idx))
    n = x_tr.shape[0]
    t0 = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        order = list(range(n))
        shuffle(order, rng)
        total = 0.0
        for b in range(0, n, BATCH):
            idx = torch.tensor(order[b:b + BATCH])
            loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if epoch == epochs - 1 or epoch % 5 == 0:
            print(f"  {name} seed {seed} epoch {epoch + 1:3d} train loss {total / n:.4f}")
    acc = accuracy(model, x_te, y_te)
    print(f"  {name} seed {seed}: test accuracy {acc:.4f} ({time.perf_counter() - t0:.1f} s)")
    return acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/digits.csv")
    ap.add_argument("--epochs-mlp", type=int, default=30)
    ap.add_argument("--epochs-cnn", type=int, default=20)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--load-cnn", metavar="PATH",
                    help="evaluate the CNN state dict written by digits --save, then exit")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    x, y = load(args.data)
    tr, te = split(x.shape[0])
    x_tr, y_tr, x_te, y_te = x[tr], y[tr], x[te], y[te]
    if args.load_cnn:
        model = cnn()
        model.load_state_dict(load_safetensors(args.load_cnn), strict=True)
        acc = accuracy(model, x_te.reshape(-1, 1, 8, 8), y_te)
        print(f"torch {torch.__version__}: {args.load_cnn}: CNN test accuracy {acc:.4f} "
              f"({round(acc * len(te))}/{len(te)})")
        return
    print(f"torch {torch.__version__}: {len(tr)} train, {len(te)} test rows")
    res = {"mlp": [], "cnn": []}
    for seed in [int(s) for s in args.seeds.split(",")]:
        torch.manual_seed(seed)
        res["mlp"].append(train("mlp", mlp(), 0, seed, args.epochs_mlp, x_tr, y_tr, x_te, y_te))
        res["cnn"].append(train("cnn", cnn(), 1, seed, args.epochs_cnn,
                                x_tr.reshape(-1, 1, 8, 8), y_tr, x_te.reshape(-1, 1, 8, 8), y_te))
    for k, v in res.items():
        print(f"{k}: test accuracy " + " ".join(f"{a:.4f}" for a in v)
              + f"  (mean {sum(v) / len(v):.4f}, min {min(v):.4f})")


if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    main()
