"""sampling_ref.py - goldens for strix's sampler rules against transformers' own logits processors.

Writes tests/golden/sampling/warpers.txt: for random logit rows (V = 50, some ties, some -inf) and
a grid of settings, the probabilities transformers 4.57 assigns after RepetitionPenaltyLogits-
Processor, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper and MinPLogitsWarper, in
the order generate() applies them, then softmax. tests/test_sample.c reads it (no Python needed).

Needs: torch, transformers 4.57 (pip install "transformers<5" torch).
Format, one case per block:
  case <temperature> <top_k> <top_p> <min_p> <penalty>
  history <n> <ids...>
  logits <V> <values...>          (%.9g, -inf allowed)
  probs <V> <values...>           (%.17g, 0 for removed ids)
"""
import math
import pathlib

import torch
from transformers.generation.logits_process import (MinPLogitsWarper,
                                                    RepetitionPenaltyLogitsProcessor,
                                                    TemperatureLogitsWarper, TopKLogitsWarper,
                                                    TopPLogitsWarper)

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden" / "sampling" / "warpers.txt"
V = 50
gen = torch.Generator().manual_seed(20261205)
settings = [  # temperature, top_k, top_p, min_p, penalty
    (1.0, 0, 1.0, 0.0, 1.0), (0.7, 0, 1.0, 0.0, 1.0), (1.3, 10, 1.0, 0.0, 1.0),
    (1.0, 0, 0.9, 0.0, 1.0), (0.8, 20, 0.8, 0.0, 1.0), (1.0, 0, 1.0, 0.05, 1.0),
    (0.6, 40, 0.95, 0.1, 1.0), (1.0, 0, 1.0, 0.0, 1.3), (0.9, 15, 0.9, 0.02, 1.1),
    (1.0, 5, 1.0, 0.3, 0.8), (2.0, 0, 0.5, 0.0, 1.5), (1.0, 0, 1.0, 1.0, 1.0),
]
lines = []
for case, (t, k, p, mp, pen) in enumerate(settings * 2):
    x = torch.randn(1, V, generator=gen, dtype=torch.float32) * 3
    if case % 3 == 0:  # ties
        x[0, 7] = x[0, 3]
        x[0, 11] = x[0, 3]
    if case % 4 == 1:
        x[0, 5] = -math.inf
    hist = torch.randint(0, V, (1, 12), generator=gen)
    s = x.clone()
    if pen != 1.0:
        s = RepetitionPenaltyLogitsProcessor(penalty=pen)(hist, s)
    if t != 1.0:
        s = TemperatureLogitsWarper(t)(hist, s)
    if k > 0:
        s = TopKLogitsWarper(top_k=k)(hist, s)
    if p < 1.0:
        s = TopPLogitsWarper(top_p=p)(hist, s)
    if mp > 0.0:
        s = MinPLogitsWarper(min_p=mp)(hist, s)
    probs = torch.softmax(s.double(), dim=-1)[0]
    lines.append(f"case {t!r} {k} {p!r} {mp!r} {pen!r}")
    lines.append("history 12 " + " ".join(str(int(i)) for i in hist[0]))
    lines.append(f"logits {V} " + " ".join("%.9g" % float(v) for v in x[0]))
    lines.append(f"probs {V} " + " ".join("%.17g" % float(v) for v in probs))
OUT.write_text("\n".join(lines) + "\n")
print(f"wrote {OUT} ({len(settings) * 2} cases)")
