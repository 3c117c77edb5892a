"""`locus bench`: time LOCUS on this machine (random inputs of the paper's shape, d_phi = 768).

Rows: a training step at n in {256, 1024} evaluations per model for 112 models (our default step and the
authors' full-batch step), embedding 112 models x 4,096 evaluations, predicting 4,096 queries x 112
models; with the FLOPs of the two forward passes and the achieved GFLOP/s against this CPU's fp32 peak
measured by a square matmul. Reference points (performance-anchors.md, 2-core Xeon, 2 threads): the
authors' code takes 15.0 s to embed and 0.76 s to predict; the paper reports ~100 ms / ~20 ms on a V100.
"""
from __future__ import annotations

import time
from pathlib import Path

NAME = "bench"
HELP = "measure LOCUS training, embedding and prediction speed on this machine"

D_PHI = 768
N_MODELS = 112
AUTHORS = {"embed": 15.0, "predict": 0.76}
PAPER = {"embed": 0.100, "predict": 0.020}


def add_arguments(parser) -> None:
    parser.add_argument("--threads", type=int, default=2, help="torch threads (0 = torch default)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, skip the authors' full-batch step")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per measurement (best is reported)")


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def matmul_peak(torch, size: int, repeat: int) -> float:
    """fp32 GFLOP/s of a square matmul (best of `repeat`)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    return 2.0 * size ** 3 / _best(lambda: a @ b, repeat) / 1e9


def run(args) -> int:
    import numpy as np
    import pandas as pd
    import torch

    from locus.methods.locus_method import LocusMethod, ModelSets
    from locus.methods.locus_net import forward_flops, predict_flops

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    repeat = 1 if args.quick else args.repeat
    method = LocusMethod({"threads": 0})
    p = method.params
    net = method._build(D_PHI)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    rows = []
    peak = matmul_peak(torch, 1024 if args.quick else 2048, repeat + 1)
    print(f"threads {torch.get_num_threads()}, fp32 square-matmul peak {peak:.1f} GFLOP/s")

    def sets_for(n_eval: int):
        phi = torch.from_numpy(rng.normal(size=(n_eval, D_PHI)).astype(np.float32))
        phi /= phi.norm(dim=1, keepdim=True)
        pid, mid = np.meshgrid(np.arange(n_eval), np.arange(N_MODELS), indexing="ij")
        pairs = pd.DataFrame({"prompt_id": pid.ravel(), "model_id": mid.ravel(),
                              "score": (rng.random(pid.size) < 0.5).astype(np.float32)})
        return phi, ModelSets(pairs, np.arange(N_MODELS))

    for n in (256, 1024):
        phi, sets = sets_for(n)
        batch = torch.arange(int(p["model_batch"]))
        method._train_step(net, opt, phi, sets, batch, 0.1, gen)  # warm-up
        step = _best(lambda: method._train_step(net, opt, phi, sets, batch, 0.1, gen), repeat + 1)
        steps_per_pass = int(np.ceil(N_MODELS / int(p["model_batch"])))
        rows.append({"what": f"train step, n={n}: {p['model_batch']} models x <= {p['max_tokens']} tokens (locus default)",
                     "seconds": step, "note": f"{steps_per_pass} steps = one pass over {N_MODELS} models: "
                                              f"{steps_per_pass * step:.2f} s"})
        val = _best(lambda: method._embed_sets(phi, sets), repeat)
        rows.append({"what": f"embed all {N_MODELS} models from n={n} (validation)", "seconds": val, "note": ""})
        if not args.quick:
            method.params = {**p, "max_tokens": 0}
            full = torch.arange(N_MODELS)
            t = _best(lambda: method._train_step(net, opt, phi, sets, full, 0.1, gen), 1)
            method.params = p
            rows.append({"what": f"train step, n={n}: all {N_MODELS} models x {n} tokens (authors' epoch)",
                         "seconds": t, "note": "authors' full epoch here: 5.4 s (n=256) / 18.2 s (n=1024)"})

    phi, sets = sets_for(4096)
    flops_e = N_MODELS * forward_flops(4096, p["dim"], p["heads"], p["layers"], p["latents"], D_PHI, p["encoder_kind"])
    t_embed = _best(lambda: method._embed_sets(phi, sets), repeat)
    rows.append({"what": f"embed {N_MODELS} models x 4,096 evaluations", "seconds": t_embed,
                 "gflop": flops_e / 1e9, "note": f"authors' code {AUTHORS['embed']} s; paper ~0.1 s (V100)"})
    z = method._embed_sets(phi, sets)
    queries = phi[:4096]
    flops_p = predict_flops(4096, N_MODELS, p["dim"], p["decoder_hidden"], D_PHI)
    t_pred = _best(lambda: method._grid_logits(z, queries), repeat + 1)
    rows.append({"what": f"predict 4,096 queries x {N_MODELS} models", "seconds": t_pred,
                 "gflop": flops_p / 1e9, "note": f"authors' code {AUTHORS['predict']} s; paper ~0.02 s (V100)"})
    one, ones = phi[:1024][None], torch.ones(1, 1024)
    net.eval()

    @torch.no_grad()
    def embed_one():
        return net.embed(one, ones)
    t_one = _best(embed_one, repeat + 1)
    rows.append({"what": "embed one new model from 1,024 evaluations", "seconds": t_one,
                 "gflop": forward_flops(1024, p["dim"], p["heads"], p["layers"], p["latents"], D_PHI) / 1e9,
                 "note": "authors' code 21.9 ms"})

    for r in rows:
        if "gflop" in r:
            r["gflop_s"] = r["gflop"] / r["seconds"]
            r["peak_fraction"] = r["gflop_s"] / peak
    width = max(len(r["what"]) for r in rows)
    print(f"{'what':<{width}}  {'seconds':>9}  {'GFLOP':>7}  {'GFLOP/s':>8}  {'% peak':>6}  note")
    for r in rows:
        g = f"{r['gflop']:7.2f}  {r['gflop_s']:8.1f}  {100 * r['peak_fraction']:5.1f}%" if "gflop" in r else f"{'':7}  {'':8}  {'':6}"
        print(f"{r['what']:<{width}}  {r['seconds']:9.4f}  {g}  {r['note']}")
    if args.json:
        from locus.atomic import write_json
        write_json(args.json, {"threads": torch.get_num_threads(), "peak_gflop_s": peak, "params": p,
                               "rows": rows, "torch": torch.__version__})
        print(f"wrote {args.json}")
    return 0
