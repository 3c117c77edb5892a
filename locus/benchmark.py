"""Speed of LOCUS on this machine (``locus bench``): random inputs of the paper's shape (d_phi = 768,
112 models), timed honestly.

- Everything runs on one device (``cpu`` or ``cuda``): the network, the query encodings, the per-model
  index tensors and the step's random generator live there, exactly as in training.
  On CUDA every timing is bracketed by ``torch.cuda.synchronize()``.
- Each measurement is a cold first call, reported apart (allocation, kernel selection, caches), then
  ``repeat`` warm calls: the **median** is the headline, with min and max.
- FLOPs are those of this implementation (matmuls only, 2 per multiply-add): the tokenizer's query
  projection W·phi is computed once per distinct query and shared by all models
  (:func:`embed_flops`), the decoder is split into per-model / per-query / per-pair parts
  (:func:`locus.methods.locus_net.predict_flops`). The paper-shaped embedding of 112 models × 4,096
  evaluations is ~336 GFLOP here (the 515 GFLOP of a per-model projection is not what runs).
- "% of peak" compares GFLOP/s with a square matmul of the same dtype on the same device (median).
``quick`` uses smaller shapes and says so in every row.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np

D_PHI = 768
AUTHORS = {"embed": 15.0, "predict": 0.76, "embed_one": 0.0219, "epoch": {256: 5.4, 1024: 18.2}}
PAPER = {"embed": 0.100, "predict": 0.020}


@dataclass(frozen=True)
class Shapes:
    """Sizes of one benchmark: the paper's (default) or small ones (``quick``)."""

    n_models: int = 112
    train_sizes: tuple = (256, 1024)
    embed_n: int = 4096  # evaluations per model when embedding all models
    predict_queries: int = 4096
    one_n: int = 1024  # evaluations of one new model
    val_queries: int = 801  # validation queries scored per validation pass (the default pool's val split)
    peak_size: int = 2048  # square matmul for the peak
    authors_epoch: bool = True  # also time the authors' full-batch step (all models x all tokens)

    @property
    def paper(self) -> bool:
        return self == Shapes()


QUICK = Shapes(
    n_models=16,
    train_sizes=(128,),
    embed_n=512,
    predict_queries=512,
    one_n=256,
    peak_size=1024,
    authors_epoch=False,
    val_queries=128,
)


# --------------------------------------------------------------------------------------------------
# FLOPs of this implementation
# --------------------------------------------------------------------------------------------------
def embed_flops(n_models: int, n_tokens: int, n_queries: int, p: dict, d_phi: int = D_PHI) -> float:
    """FLOPs of embedding `n_models` models from `n_tokens` evaluations each over `n_queries` distinct
    queries, as :meth:`LocusMethod._embed_sets` runs it: the query projection [W_a; W_b]·phi once per
    query, everything after it per model."""
    from locus.methods.locus_net import forward_flops

    per_model = forward_flops(n_tokens, p["dim"], p["heads"], p["layers"], p["latents"], 0, p["encoder_kind"])
    projection = 2.0 * n_queries * d_phi * 2 * p["dim"]
    return n_models * per_model + projection


def one_model_flops(n_tokens: int, p: dict, d_phi: int = D_PHI) -> float:
    """FLOPs of embedding one new model from `n_tokens` evaluations (its queries projected once each)."""
    return embed_flops(1, n_tokens, n_tokens, p, d_phi)


def predict_grid_flops(n_queries: int, n_models: int, p: dict, d_phi: int = D_PHI) -> float:
    from locus.methods.locus_net import predict_flops

    return predict_flops(n_queries, n_models, p["dim"], p["decoder_hidden"], d_phi)


# --------------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------------
def _sync(device) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def measure(fn, repeat: int, device="cpu", cold: bool = True) -> dict:
    """Seconds of `fn()`: ``cold_s`` (first call, when `cold`), then ``repeat`` warm calls:
    ``median_s``, ``min_s``, ``max_s``, ``repeats``."""

    def once() -> float:
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        return time.perf_counter() - t0

    out = {"cold_s": once() if cold else None}
    times = [once() for _ in range(max(1, int(repeat)))]
    out.update({"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": len(times)})
    return out


def matmul_peak(device="cpu", size: int = 2048, repeat: int = 3, dtype: str = "float32") -> float:
    """GFLOP/s of a square `dtype` matmul on `device` (median of `repeat` warm calls)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(size, size, generator=gen, dtype=getattr(torch, dtype)).to(device)
    b = torch.randn(size, size, generator=gen, dtype=getattr(torch, dtype)).to(device)
    t = measure(lambda: a @ b, max(repeat, 3), device)
    return 2.0 * size**3 / t["median_s"] / 1e9


# --------------------------------------------------------------------------------------------------
# the LOCUS pieces timed (the one place that touches LocusMethod's internals)
# --------------------------------------------------------------------------------------------------
class _Locus:
    """A LocusMethod with a fresh network on `device`, and the internal calls that are timed."""

    def __init__(self, device, params: dict | None = None):
        import torch

        from locus.methods.locus_method import LocusMethod

        self.torch = torch
        self.method = LocusMethod({"threads": 0, **(params or {})})
        self.p = self.method.params.as_dict()
        self.net = self.method._build(D_PHI).to(device)  # _build picks CUDA when present: move it
        self.method.net = self.net
        self.device = torch.device(device)
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-4)
        self.gen = torch.Generator(device=self.device).manual_seed(0)  # on the device, as in training

    def sets(self, pairs, n_models: int):
        from locus.methods.locus_method import ModelSets

        return ModelSets(pairs, np.arange(n_models)).to(self.device)

    def train_step(self, phi, sets, models, all_tokens: bool = False):
        saved = self.method.params
        if all_tokens:  # the authors' step: every token of every model, every target
            self.method.params = saved.replace(max_tokens=0, max_targets=0)
        try:
            with self.method._arithmetic(self.device, autocast=False):  # as in fit: TF32 on CUDA when `tf32`
                return self.method._train_step(self.net, self.opt, phi, sets, models, 0.1, self.gen)
        finally:
            self.method.params = saved

    def embed_all(self, phi, sets):
        return self.method._embed_sets(phi, sets)

    def validate(self, phi, sets, queries):  # as in training: float32 whatever the precision
        return self.method._grid_logits(self.method._embed_sets(phi, sets, exact=True), queries, exact=True)

    def predict(self, z, queries):
        return self.method._grid_logits(z, queries)

    def embed_one(self, phi, y):
        self.net.eval()
        with self.torch.no_grad():
            return self.net.embed(phi, y)


# --------------------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------------------
def random_inputs(torch, n_eval: int, n_models: int, device, rng):
    """Unit-norm query encodings [n_eval, D_PHI] on `device` and every model scored on every query."""
    import pandas as pd

    phi = torch.from_numpy(rng.normal(size=(n_eval, D_PHI)).astype(np.float32)).to(device)
    phi /= phi.norm(dim=1, keepdim=True)
    pid, mid = np.meshgrid(np.arange(n_eval), np.arange(n_models), indexing="ij")
    pairs = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(pid.size) < 0.5).astype(np.float32)}
    )
    return phi, pairs


def run_benchmark(
    device: str = "cpu",
    threads: int = 0,
    quick: bool = False,
    repeat: int = 3,
    progress=None,
    precision: str = "float32",
    params: dict | None = None,
) -> dict:
    """Time training steps, embedding all models, predicting a query x model grid and embedding one new
    model on `device`; embedding and prediction in `precision` (LOCUS's parameter; training steps are
    always float32), the peak in that dtype; `params`: other LOCUS parameters (e.g. ``tf32``). Returns ``{"rows": [...], "peak_gflop_s": ..., ...}`` (see
    :func:`format_table`)."""
    import torch

    if threads > 0:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    shapes = QUICK if quick else Shapes()
    repeat = max(1, int(repeat))
    rng = np.random.default_rng(0)
    say = progress or (lambda text: None)
    dtype = precision
    lm = _Locus(device, {**(params or {}), "precision": precision})  # refuses bad values before any timing
    peak = matmul_peak(device, shapes.peak_size, repeat, dtype)
    say(f"device {device}, {torch.get_num_threads()} CPU thread(s), {dtype} square-matmul peak {peak:.1f} GFLOP/s")
    p, m = lm.p, shapes.n_models
    batch = torch.arange(min(int(p["model_batch"]) or m, m), device=device)
    paper = shapes.paper
    rows = []

    def add(what, timing, gflop=None, note=""):
        row = {"what": what, **timing, "note": note}
        if gflop is not None:
            row.update({"gflop": gflop / 1e9, "gflop_s": gflop / 1e9 / timing["median_s"]})
            row["peak_fraction"] = row["gflop_s"] / peak
        rows.append(row)
        say(f"  {what}: median {timing['median_s']:.4f} s")

    for n in shapes.train_sizes:
        phi, pairs = random_inputs(torch, n, m, device, rng)
        sets = lm.sets(pairs, m)
        t = measure(partial(lm.train_step, phi, sets, batch), repeat, device)
        passes = int(np.ceil(m / len(batch)))
        add(
            f"train step, n={n}: {len(batch)} models x <= {p['max_tokens']} tokens (locus default)",
            t,
            note=f"{passes} step(s) = one pass over {m} models: {passes * t['median_s']:.2f} s",
        )
        val_q = torch.from_numpy(rng.normal(size=(shapes.val_queries, D_PHI)).astype(np.float32)).to(device)
        add(
            f"validation pass, n={n}: embed {m} models + score {shapes.val_queries} queries",
            measure(partial(lm.validate, phi, sets, val_q), repeat, device),
            embed_flops(m, n, n, p) + predict_grid_flops(shapes.val_queries, m, p),
        )
        if shapes.authors_epoch:
            full = torch.arange(m, device=device)
            t = measure(partial(lm.train_step, phi, sets, full, all_tokens=True), repeat, device)
            add(
                f"train step, n={n}: all {m} models x {n} tokens (authors' epoch)",
                t,
                note=f"authors' code: {AUTHORS['epoch'][n]} s" if paper and n in AUTHORS["epoch"] else "",
            )

    n = shapes.embed_n
    phi, pairs = random_inputs(torch, n, m, device, rng)
    sets = lm.sets(pairs, m)
    add(
        f"embed {m} models x {n:,} evaluations",
        measure(lambda: lm.embed_all(phi, sets), repeat, device),
        embed_flops(m, n, n, p),
        f"authors' code {AUTHORS['embed']} s; paper ~{PAPER['embed']} s (V100)" if paper else "",
    )
    z = lm.embed_all(phi, sets)
    q = shapes.predict_queries
    queries = torch.from_numpy(rng.normal(size=(q, D_PHI)).astype(np.float32)).to(device)
    add(
        f"predict {q:,} queries x {m} models",
        measure(lambda: lm.predict(z, queries), repeat, device),
        predict_grid_flops(q, m, p),
        f"authors' code {AUTHORS['predict']} s; paper ~{PAPER['predict']} s (V100)" if paper else "",
    )
    k = shapes.one_n
    one, ones = phi[:k][None], torch.ones(1, k, device=device)
    add(
        f"embed one new model from {k:,} evaluations",
        measure(lambda: lm.embed_one(one, ones), repeat, device),
        one_model_flops(k, p),
        f"authors' code {1000 * AUTHORS['embed_one']:.1f} ms" if paper else "",
    )

    return {
        "device": str(device),
        "device_name": device_name(torch, device),
        "threads": torch.get_num_threads(),
        "dtype": dtype,
        "matmul_precision": torch.get_float32_matmul_precision(),
        "peak_gflop_s": peak,
        "quick": bool(quick),
        "paper_shapes": paper,
        "repeat": repeat,
        "shapes": asdict(shapes),
        "params": p,
        "rows": rows,
        "torch": torch.__version__,
    }


def device_name(torch, device) -> str:
    if str(device).startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    import platform

    return platform.processor() or platform.machine()


def default_device() -> str:
    """Where training runs (:attr:`LocusMethod.device`): CUDA when available, else the CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def format_table(result: dict) -> str:
    """The rows as a fixed-width text table (seconds: cold first call, then median [min-max] of the rest)."""
    rows = result["rows"]
    width = max(len(r["what"]) for r in rows)
    head = (
        f"{'what':<{width}}  {'cold s':>8}  {'median s':>9}  {'min-max s':>17}  {'GFLOP':>7}  {'GFLOP/s':>8}  "
        f"{'% peak':>6}  note"
    )
    lines = [head]
    for r in rows:
        g = (
            f"{r['gflop']:7.2f}  {r['gflop_s']:8.1f}  {100 * r['peak_fraction']:5.1f}%"
            if "gflop" in r
            else f"{'':7}  {'':8}  {'':6}"
        )
        cold = f"{r['cold_s']:8.4f}" if r.get("cold_s") is not None else f"{'':8}"
        spread = f"{r['min_s']:.4f}-{r['max_s']:.4f}"
        lines.append(f"{r['what']:<{width}}  {cold}  {r['median_s']:9.4f}  {spread:>17}  {g}  {r['note']}".rstrip())
    return "\n".join(lines)
