#!/work/venv/bin/python
"""ltn_ref.py - golden files for strix's Logic Tensor Network layer, with LTNtorch 1.0.2 as oracle.

Run from the repository root with the LTN venv:
    /work/venv/bin/python tools/ref/ltn_ref.py
The venv (Debian 12 with python3-torch, i.e. torch 1.13):
    python3 -m venv --system-site-packages venv && venv/bin/pip install --no-deps ltntorch==1.0.2
It writes tests/golden/logic/ (about 28 KB in all), in the STRXGLD1 format of tools/ref/ops_ref.py:
    connectives.bin  a, b, g (64,) and for each fuzzy connective NAME: NAME.y, NAME.da, NAME.db
                     (autograd of sum(g*y); unary ops only .da), NAME.smooth (1 where the element
                     is >= 1e-4 from every kink/tie of NAME); eps = ltn.fuzzy_ops.eps.
                     implies_goguen.da/.db are NaN where a == 0 (autograd of b/a in the branch
                     torch.where drops); smooth is 0 there
    quantifiers.bin  x, mask (7,5), g (5,); pMean (exists) / pMeanError (forall) over dim 0 for
                     p in {1,2,6}, stable or not, guarded or not: <name>.y (5,), <name>.dx (7,5);
                     sat_p2.y, sat_p2.dx: SatAgg over forall_p2_stable.y as 5 closed formulas
    formula.bin      F = Forall x: Exists y: (P(x) And Q(x,y)) Implies R(y) and the guarded
                     G = Forall x [guard]: P(x) Implies Not R2(x): values, autograd gradients and
                     relevances from a plain-tensor transcription of strix's LTN-LRP rules
    toy_kb.bin       200 SGD steps on Forall x: A(x) Implies Not B(x), A and B Linear(1,1)+sigmoid
Everything is computed in float64 on inputs already rounded to float32, then stored as float32.
ltn.Predicate and ltn.Variable cast their values to float32, so truth tables enter LTN as
ltn.LTNObject(value, free_vars); Variables only name the quantified axes and feed guards.
This script does not test anything and is not needed to run the tests.
"""
import os
import struct
import sys

import torch
import ltn
from ltn import fuzzy_ops as fo

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402

SEED = 1234
GEN = "tools/ref/ltn_ref.py"
OUT_DIR = os.path.join("tests", "golden", "logic")
F64 = torch.float64
TIE = 1e-4  # an element this close to a kink is not "smooth"
LRP_EPS = 1e-6  # strix's relevance stabiliser


def f32(t):
    """Rounded to float32 (what the file stores), computed on in float64."""
    return torch.as_tensor(t, dtype=F64).float().double()


def uniform(*shape, lo=0.0, hi=1.0):
    return f32(torch.rand(*shape, dtype=F64) * (hi - lo) + lo)


def obj(value, free_vars):
    return ltn.LTNObject(value, list(free_vars))


# ---------------------------------------------------------------- connectives

CONNECTIVES = [  # name, operator, kind of kink
    ("not", fo.NotStandard(), None),
    ("and_min", fo.AndMin(), "tie"),
    ("and_prod", fo.AndProd(stable=False), None),
    ("and_prod_stable", fo.AndProd(stable=True), None),
    ("and_luk", fo.AndLuk(), "sum1"),
    ("or_max", fo.OrMax(), "tie"),
    ("or_prob", fo.OrProbSum(stable=False), None),
    ("or_prob_stable", fo.OrProbSum(stable=True), None),
    ("or_luk", fo.OrLuk(), "sum1"),
    ("implies_kd", fo.ImpliesKleeneDienes(), "sum1"),  # max(1-a, b): 1-a == b
    ("implies_godel", fo.ImpliesGodel(), "tie"),
    ("implies_reichenbach", fo.ImpliesReichenbach(stable=False), None),
    ("implies_reichenbach_stable", fo.ImpliesReichenbach(stable=True), None),
    ("implies_goguen", fo.ImpliesGoguen(stable=False), "goguen"),
    ("implies_goguen_stable", fo.ImpliesGoguen(stable=True), "goguen_stable"),
    ("implies_luk", fo.ImpliesLuk(), "tie"),  # min(1-a+b, 1): a == b
    ("equiv", fo.Equiv(fo.AndProd(stable=True), fo.ImpliesReichenbach(stable=True)), None),
]


def smooth_mask(kind, a, b):
    if kind is None:
        ok = torch.ones_like(a, dtype=torch.bool)
    elif kind == "tie":
        ok = (a - b).abs() >= TIE
    elif kind == "sum1":
        ok = (a + b - 1).abs() >= TIE
    elif kind == "goguen":  # where(a <= b, 1, b/a): the tie, and the division near a == 0
        ok = ((a - b).abs() >= TIE) & (a >= TIE)
    else:  # goguen_stable: the tie is pi_0(a) == b
        ok = (fo.pi_0(a) - b).abs() >= TIE
    return ok.to(F64)


def connectives():
    eps, one = 1e-6, 1 - 1e-6
    special = [(0, 0), (0, 1), (1, 0), (1, 1), (0.5, 0.5), (0.25, 0.75), (0.75, 0.25),
               (eps, 0.3), (0.7, eps), (one, 0.2), (0.4, one), (eps, one), (one, eps),
               (eps, eps), (one, one), (eps, 0), (0, eps), (one, 1), (1, one)]
    n, k = 64, len(special)
    a, b = uniform(n), uniform(n)
    a[:k] = f32([s[0] for s in special])
    b[:k] = f32([s[1] for s in special])
    for i in (k, k + 5, k + 11, k + 20):  # exact ties at random values
        b[i] = a[i]
    g = uniform(n, lo=-1.0, hi=1.0)
    arrays = [("a", a), ("b", b), ("g", g), ("eps", fo.eps)]
    for name, op, kind in CONNECTIVES:
        conn = ltn.Connective(op)
        ta, tb = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
        unary = isinstance(op, fo.UnaryConnectiveOperator)
        args = [obj(ta, "i")] if unary else [obj(ta, "i"), obj(tb, "i")]
        y = conn(*args).value
        (y * g).sum().backward()
        grad = lambda t: torch.zeros_like(a) if t.grad is None else t.grad  # noqa: E731
        arrays += [(name + ".y", y.detach()), (name + ".da", grad(ta))]  # Godel: a only compared
        if not unary:
            arrays.append((name + ".db", grad(tb)))
        arrays.append((name + ".smooth", smooth_mask(kind, a, b)))
    return arrays


# ---------------------------------------------------------------- quantifiers

def quantifiers():
    rows, cols = 7, 5
    x = uniform(rows, cols)
    for r, c, v in [(0, 0, 0.0), (3, 0, 1.0), (1, 1, 0.0), (4, 2, 1.0), (2, 3, 0.0), (6, 4, 1.0)]:
        x[r, c] = v
    mask = torch.rand(rows, cols) < 0.6
    for c in range(cols - 1):  # at least two kept rows per column
        mask[c, c] = mask[c + 2, c] = True
    mask[:, cols - 1] = False  # column 4: an empty guard
    g = uniform(cols, lo=-1.0, hi=1.0)
    arrays = [("x", x), ("mask", mask.to(F64)), ("g", g)]

    vr = ltn.Variable("r", torch.arange(rows, dtype=torch.float32))
    vc = ltn.Variable("c", torch.arange(cols, dtype=torch.float32))
    guard = lambda r, c: mask[r.value[:, 0].long(), c.value[:, 0].long()]  # noqa: E731
    for qname, agg, tag in [("forall", fo.AggregPMeanError, "f"), ("exists", fo.AggregPMean, "e")]:
        for p in (1, 2, 6):
            for stable in (False, True):
                for masked in (False, True):
                    name = f"{qname}_p{p}" + ("_stable" if stable else "") + ("_masked" if masked else "")
                    Q = ltn.Quantifier(agg(p=p, stable=stable), quantifier=tag)
                    tx = x.clone().requires_grad_(True)
                    formula = obj(tx, ["r", "c"])
                    if masked:  # LTN turns the empty column's NaN into 1 (forall) / 0 (exists)
                        y = Q(vr, formula, cond_vars=[vr, vc], cond_fn=guard).value
                    else:
                        y = Q(vr, formula).value
                    (y * g).sum().backward()
                    assert torch.isfinite(tx.grad).all(), name
                    arrays += [(name + ".y", y.detach()), (name + ".dx", tx.grad)]

    closed = dict(arrays)["forall_p2_stable.y"].clone().requires_grad_(True)
    sat = fo.SatAgg()(*[closed[i] for i in range(cols)])  # default AggregPMeanError(p=2), stable
    sat.backward()
    arrays += [("sat_p2.y", sat.detach()), ("sat_p2.dx", closed.grad)]
    return arrays


# ---------------------------------------------------------------- formula, LTN side

AND = ltn.Connective(fo.AndProd(stable=True))
IMPLIES = ltn.Connective(fo.ImpliesReichenbach(stable=True))
NOT = ltn.Connective(fo.NotStandard())
FORALL = ltn.Quantifier(fo.AggregPMeanError(p=2, stable=True), quantifier="f")
EXISTS = ltn.Quantifier(fo.AggregPMean(p=2, stable=True), quantifier="e")


def ltn_F(P, Q, R):
    x = ltn.Variable("x", torch.arange(P.shape[0], dtype=torch.float32))
    y = ltn.Variable("y", torch.arange(R.shape[0], dtype=torch.float32))
    # P broadcast over y and R over x by LTN itself (process_ltn_objects)
    body = IMPLIES(AND(obj(P, "x"), obj(Q, "xy")), obj(R, "y"))
    return FORALL(x, EXISTS(y, body)).value


def ltn_G(P, R2, guard):
    x = ltn.Variable("x", torch.arange(P.shape[0], dtype=torch.float32))
    body = IMPLIES(obj(P, "x"), NOT(obj(R2, "x")))
    return FORALL(x, body, cond_vars=[x], cond_fn=lambda v: guard[v.value[:, 0].long()]).value


# ---------------------------------------------------------------- formula, relevance transcription
# Plain float64 tensors, no LTN, no autograd: strix's rules, seeded with the formula's value.

E = fo.eps


def pi0(t):
    return (1 - E) * t + E


def pi1(t):
    return (1 - E) * t


def stab(z):
    return z + LRP_EPS * torch.where(z >= 0, 1.0, -1.0)  # sign(0) = +1


def lrp_and(a, b, r):
    """a, b after pi_0; both operands get a*b / stab(2y) * r."""
    y = a * b
    share = y / stab(2 * y) * r
    return share, share


def lrp_or(a, b, r):
    """Probabilistic sum y = a + b - ab split as a(2-b)/2 and b(2-a)/2."""
    y = a + b - a * b
    return a * (2 - b) / 2 / stab(y) * r, b * (2 - a) / 2 / stab(y) * r


def lrp_implies(a, b, r):
    """Reichenbach, stable: Or(1 - pi_0(a), pi_1(b)); Not and pi pass relevance unchanged."""
    return lrp_or(1 - pi0(a), pi1(b), r)


def lrp_exists(t, r, dim, p=2):
    """p-mean of pi_0(t) over dim: r_i = t'_i^p / stab(n * mean(t'^p)) * r."""
    tp = pi0(t) ** p
    return tp / stab(tp.sum(dim, keepdim=True)) * r.unsqueeze(dim)


def lrp_forall(t, r, keep):
    """Epsilon rule of the plain mean of pi_1(t) over the kept groundings (1-D)."""
    tp = pi1(t) * keep
    return tp / stab(tp.sum()) * r


def relevance_F(P, Q, R, value):
    a, b = pi0(P)[:, None].expand_as(Q), pi0(Q)
    y_and = a * b
    y_imp = 1 - pi0(y_and) + pi0(y_and) * pi1(R)[None, :]
    e = (pi0(y_imp) ** 2).mean(1).sqrt()
    r_e = lrp_forall(e, value, torch.ones_like(e))
    r_imp = lrp_exists(y_imp, r_e, dim=1)
    r_and, r_Rb = lrp_implies(y_and, R[None, :].expand_as(Q), r_imp)
    r_Pb, r_Q = lrp_and(a, b, r_and)
    return r_Pb.sum(1), r_Q, r_Rb.sum(0)  # broadcast children sum over the broadcast axis


def relevance_G(P, R2, keep, value):
    y = 1 - pi0(P) + pi0(P) * pi1(1 - R2)
    r_y = lrp_forall(y, value, keep)
    r_P, r_R2 = lrp_implies(P, 1 - R2, r_y)
    return r_P * keep, r_R2 * keep


def formula():
    P, Q, R = uniform(4, lo=0.05, hi=0.95), uniform(4, 3, lo=0.05, hi=0.95), uniform(3, lo=0.05, hi=0.95)
    R2 = uniform(4, lo=0.05, hi=0.95)
    guard = torch.tensor([True, False, True, True])
    arrays = [("P", P), ("Q", Q), ("R", R), ("R2", R2), ("guard", guard.to(F64))]

    tP, tQ, tR = (t.clone().requires_grad_(True) for t in (P, Q, R))
    F = ltn_F(tP, tQ, tR)
    F.backward()
    rP, rQ, rR = relevance_F(P, Q, R, F.detach())
    arrays += [("F.value", F.detach()), ("F.dP", tP.grad), ("F.dQ", tQ.grad), ("F.dR", tR.grad),
               ("F.rP", rP), ("F.rQ", rQ), ("F.rR", rR),
               ("F.rsum", rP.sum() + rQ.sum() + rR.sum())]

    tP, tR2 = P.clone().requires_grad_(True), R2.clone().requires_grad_(True)
    G = ltn_G(tP, tR2, guard)
    G.backward()
    gP, gR2 = relevance_G(P, R2, guard.to(F64), G.detach())
    arrays += [("G.value", G.detach()), ("G.dP", tP.grad), ("G.dR2", tR2.grad),
               ("G.rP", gP), ("G.rR2", gR2)]
    return arrays


# ---------------------------------------------------------------- toy knowledge base

def toy_kb(steps=200, lr=0.1):
    x = torch.tensor([[-1.5], [-0.5], [0.5], [1.5]], dtype=F64)
    lin_a, lin_b = torch.nn.Linear(1, 1).double(), torch.nn.Linear(1, 1).double()
    with torch.no_grad():
        for lin in (lin_a, lin_b):
            lin.weight.fill_(1.0)
            lin.bias.fill_(0.0)
    params = [lin_a.weight, lin_a.bias, lin_b.weight, lin_b.bias]
    flat = lambda ts: torch.cat([t.detach().reshape(-1) for t in ts])  # noqa: E731
    init = flat(params)
    sat_agg = fo.SatAgg(fo.AggregPMeanError(p=2, stable=True))
    vx = ltn.Variable("x", torch.arange(4, dtype=torch.float32))
    opt = torch.optim.SGD(params, lr=lr)

    def loss_fn():
        A = obj(torch.sigmoid(lin_a(x)).reshape(-1), "x")  # the predicates' truth tables over x
        B = obj(torch.sigmoid(lin_b(x)).reshape(-1), "x")
        return 1 - sat_agg(FORALL(vx, IMPLIES(A, NOT(B))))

    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        if step == 0:
            dparams0 = flat([p.grad for p in params])
        losses.append(loss.detach())
        opt.step()
    with torch.no_grad():
        losses.append(loss_fn())
    return [("x", x), ("init", init), ("loss", torch.stack(losses)), ("final", flat(params)),
            ("dparams0", dparams0)]


# ---------------------------------------------------------------- check and summary

def read_golden(path):
    """name -> float32 tensor, the format of ops_ref.write_golden."""
    data = open(path, "rb").read()
    assert data[:8] == b"STRXGLD1"
    pos = 8
    (n,) = struct.unpack_from("<I", data, pos)
    pos += 4 + n
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    out = {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        (ndim,) = struct.unpack_from("<I", data, pos)
        shape = struct.unpack_from(f"<{ndim}q", data, pos + 4)
        pos += 4 + 8 * ndim
        size = int(torch.tensor(shape).prod()) if ndim else 1
        vals = struct.unpack_from(f"<{size}f", data, pos)
        pos += 4 * size
        out[name] = torch.tensor(vals, dtype=torch.float32).reshape(shape)
    assert pos == len(data)
    return out


def main():
    torch.manual_seed(SEED)
    os.makedirs(OUT_DIR, exist_ok=True)
    total = 0
    for case in (connectives, quantifiers, formula, toy_kb):
        total += write_golden(case.__name__, case(), generator=GEN, seed=SEED, out_dir=OUT_DIR)
    gold = {c: read_golden(os.path.join(OUT_DIR, c + ".bin"))
            for c in ("connectives", "quantifiers", "formula", "toy_kb")}
    c, q, f, t = gold["connectives"], gold["quantifiers"], gold["formula"], gold["toy_kb"]
    nan = [k for g in gold.values() for k, v in g.items() if not torch.isfinite(v).all()]
    print(f"wrote {OUT_DIR}: {total} bytes, {sum(len(g) for g in gold.values())} arrays")
    print(f"arrays with non-finite values: {nan or 'none'}")
    rough = {k[:-7]: int((v == 0).sum()) for k, v in c.items() if k.endswith(".smooth")}
    print("connectives: non-smooth elements per op:", rough)
    print(f"quantifiers: forall_p2_stable.y = {q['forall_p2_stable.y'].tolist()}")
    print(f"             empty guard: forall {q['forall_p2_masked.y'][4].item()}, "
          f"exists {q['exists_p2_masked.y'][4].item()}; sat_p2.y = {q['sat_p2.y'].item():.6f}")
    print(f"formula: F.value = {f['F.value'].item():.6f}, F.rsum = {f['F.rsum'].item():.6f}; "
          f"G.value = {f['G.value'].item():.6f}, G r-sum = {(f['G.rP'].sum() + f['G.rR2'].sum()).item():.6f}")
    print(f"toy_kb: loss {t['loss'][0].item():.6f} -> {t['loss'][-1].item():.6f}, "
          f"final = {t['final'].tolist()}, dparams0 = {t['dparams0'].tolist()}")


if __name__ == "__main__":
    main()
