"""torch_seqlm.py - the reference side of bench/seqlm_train.sh: training steps of the same
character LM as bench/bench_seqlm.c in PyTorch (torch.nn.LSTM/GRU/RNN models: embedding ->
recurrent layers -> LayerNorm -> Linear) or transformers (MambaForCausalLM, RwkvForCausalLM on
their CPU paths), AdamW (lr 1e-3, weight decay 0.1), clip 1, random windows of tinyshakespeare.
Prints one line in bench_seqlm's format. A benchmark: it asserts nothing.

Usage: python3 bench/torch_seqlm.py --arch lstm|gru|rnn|mamba|rwkv [--threads 2] [--steps 20]
       [--batch 16] [--block 64] [--layers 2] [--d-model 128] [--hidden H] [--d-state 16]
       [--d-conv 4] [--expand 2] [--d-ff F] [--decode 500]
"""
import argparse
import resource
import statistics
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--arch", default="lstm")
p.add_argument("--data", default="../shared/data/tinyshakespeare.txt")
p.add_argument("--threads", type=int, default=2)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--warmup-steps", type=int, default=3)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--block", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--d-model", type=int, default=128)
p.add_argument("--hidden", type=int, default=0)
p.add_argument("--d-state", type=int, default=16)
p.add_argument("--d-conv", type=int, default=4)
p.add_argument("--expand", type=int, default=2)
p.add_argument("--d-ff", type=int, default=0)
p.add_argument("--decode", type=int, default=500)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1337)

text = open(a.data, "rb").read()
vocab = sorted(set(text))
ids = torch.tensor([vocab.index(b) for b in text[: len(text) * 9 // 10]], dtype=torch.long)
V, T, B, C = len(vocab), a.block, a.batch, a.d_model
H = a.hidden or C


class RecurrentLM(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[kind]
        self.encoder = torch.nn.Embedding(V, C)
        self.rnn = cls(C, H, a.layers, batch_first=True)
        self.norm = torch.nn.LayerNorm(H)
        self.decoder = torch.nn.Linear(H, V)

    def forward(self, x, state=None):
        y, state = self.rnn(self.encoder(x), state)
        return self.decoder(self.norm(y)), state


if a.arch in ("lstm", "gru", "rnn"):
    model = RecurrentLM(a.arch)
    step_logits = lambda x: model(x)[0]
elif a.arch == "mamba":
    from transformers import MambaConfig, MambaForCausalLM
    model = MambaForCausalLM(MambaConfig(vocab_size=V, hidden_size=C, state_size=a.d_state,
                                         num_hidden_layers=a.layers, conv_kernel=a.d_conv,
                                         expand=a.expand, use_cache=False))
    step_logits = lambda x: model(x).logits
elif a.arch == "rwkv":
    from transformers import RwkvConfig, RwkvForCausalLM
    model = RwkvForCausalLM(RwkvConfig(vocab_size=V, hidden_size=C, num_hidden_layers=a.layers,
                                       attention_hidden_size=C,
                                       intermediate_size=a.d_ff or 4 * C, rescale_every=0,
                                       context_length=T, use_cache=False))
    step_logits = lambda x: model(x).logits
else:
    raise SystemExit(f"torch_seqlm: no reference for --arch {a.arch}")

opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
g = torch.Generator().manual_seed(1337)
times, loss = [], float("nan")
model.train()
for step in range(a.warmup_steps + a.steps):
    t0 = time.perf_counter()
    ix = torch.randint(0, len(ids) - T - 1, (B,), generator=g)
    x = torch.stack([ids[i:i + T] for i in ix])
    y = torch.stack([ids[i + 1:i + T + 1] for i in ix])
    logits = step_logits(x)
    loss_t = torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss_t.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    loss = loss_t.item()
    if step >= a.warmup_steps:
        times.append(time.perf_counter() - t0)
ms = 1e3 * statistics.median(times)

# decoding, one token per step with the model's own state (the RNN's h/c; transformers' cache)
model.eval()
t0 = time.perf_counter()
with torch.no_grad():
    if a.arch in ("lstm", "gru", "rnn"):
        state = None
        for i in range(a.decode):
            _, state = model(ids[i:i + 1].view(1, 1), state)
    else:
        out = model(ids[0:1].view(1, 1), use_cache=True)
        for i in range(1, a.decode):
            if a.arch == "mamba":
                out = model(ids[i:i + 1].view(1, 1), cache_params=out.cache_params, use_cache=True)
            else:
                out = model(ids[i:i + 1].view(1, 1), state=out.state, use_cache=True)
dec = a.decode / (time.perf_counter() - t0)
n_params = sum(q.numel() for q in model.parameters())
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"torch {a.arch}/{torch.__version__} threads {a.threads} params {n_params} ms/step {ms:.1f} "
      f"tok/s {B * T / (ms / 1e3):.0f} decode_chars/s {dec:.0f} maxrss_mb {rss:.0f} loss {loss:.4f}")
