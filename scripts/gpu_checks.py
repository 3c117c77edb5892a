"""Two developer measurements of LOCUS on a device (run them on a GPU machine; they also run on a CPU):

    python scripts/gpu_checks.py profile --device cuda --train-size 1024 --out profile.txt
        Where the time of the `paper` recipe's training step (all 112 models x all n evaluations, as
        targets and encoder tokens, noise on) and of its validation pass (embed every model, score the
        validation grid) goes: torch.profiler's operator table (self device time first), with the step's
        and the pass's wall time measured outside the profiler. Random inputs of the default pool's shape.

    python scripts/gpu_checks.py val-precision RUN [RUN ...] --data DATA --encodings ENC
        Validation hit@1 of trained LOCUS runs when their validation pass (every model re-embedded from
        its training evaluations, then the validation grid scored; exactly what training selects on) runs
        in float32, in TF32 matmuls and under bfloat16 autocast. Training selects on float32; this says
        whether a faster validation arithmetic would change the selection value by more than 0.1 point.

Results of the runs on a GPU machine are in docs/results.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _timed(torch, fn, device, repeat: int) -> float:
    """Median wall seconds of `repeat` warm calls (one warm-up), CUDA synchronised around each."""

    def once():
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    once()
    return statistics.median(once() for _ in range(repeat))


def profile(args) -> str:
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from locus.benchmark import D_PHI, _Locus, random_inputs

    device = torch.device(args.device)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    import json

    lm = _Locus(device, {"recipe": "paper", "threads": args.threads, **json.loads(args.params)})
    phi, pairs = random_inputs(torch, args.train_size, args.models, device, rng)
    sets = lm.sets(pairs, args.models)
    models = torch.arange(args.models, device=device)
    val_q = torch.from_numpy(rng.normal(size=(args.val_queries, D_PHI)).astype(np.float32)).to(device)
    parts = {
        "training step (paper recipe)": lambda: lm.train_step(phi, sets, models),
        "validation pass": lambda: lm.validate(phi, sets, val_q),
    }
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    lines = [
        f"# LOCUS on {name}, torch {torch.__version__}: {args.models} models x n = {args.train_size}, "
        f"{args.val_queries} validation queries, d_phi = {D_PHI}, parameters {args.params}"
    ]
    for what, fn in parts.items():
        wall = _timed(torch, fn, device, args.repeat)
        with torch_profile(activities=activities) as prof:
            for _ in range(args.steps):
                fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
        lines += [
            "",
            f"## {what}: median {1000 * wall:.2f} ms wall (of {args.repeat}, outside the profiler); "
            f"operators over {args.steps} calls, by self device time:",
            prof.key_averages().table(sort_by=sort, row_limit=args.rows, max_name_column_width=60),
        ]
    return "\n".join(lines)


def val_precision(args) -> str:
    import torch

    from locus import evaluation
    from locus.geometry.views import load_reference
    from locus.methods.locus_method import ModelSets

    lines = []
    for run in args.runs:
        ref = load_reference(run, args.data, args.encodings)
        method = ref.method
        device = torch.device(method.device)
        sets = ModelSets(ref.pairs, ref.model_ids).to(device)
        phi = torch.from_numpy(np.ascontiguousarray(ref.encodings.take(sets.prompt_ids))).to(device)
        val_ids = ref.dataset.split_queries("val")["prompt_id"].to_numpy(np.int64)
        labels = ref.dataset.label_matrix(val_ids, ref.model_ids)
        val_phi = torch.from_numpy(np.ascontiguousarray(ref.encodings.take(val_ids))).to(device)
        saved = method.params
        hit = {}
        try:  # the method's own arithmetic switches (not exact: those force float32)
            for setting, precision, tf32 in (
                ("float32", "float32", False),
                ("tf32", "float32", True),
                ("bfloat16", "bfloat16", False),
            ):
                method.params = saved.replace(precision=precision, tf32=tf32)
                logits = method._grid_logits(method._embed_sets(phi, sets), val_phi).cpu().numpy()
                hit[setting] = 100 * evaluation.routing_metrics(logits, labels, ks=(1,))["routing_acc"]
        finally:
            method.params = saved
        diffs = ", ".join(f"{k} {v:.2f} ({v - hit['float32']:+.2f})" for k, v in hit.items())
        lines.append(f"{run}: {len(val_ids)} validation queries on {device}: val hit@1 {diffs} points")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("profile")
    p.add_argument("--device", default="cuda")
    p.add_argument("--train-size", type=int, default=1024)
    p.add_argument("--models", type=int, default=112)
    p.add_argument("--val-queries", type=int, default=801)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--rows", type=int, default=15)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--params", default="{}", help="LOCUS parameters over the paper recipe (JSON), e.g. tf32")
    p.add_argument("--out")
    v = sub.add_parser("val-precision")
    v.add_argument("runs", nargs="+")
    v.add_argument("--data", required=True)
    v.add_argument("--encodings", required=True)
    v.add_argument("--out")
    args = ap.parse_args(argv)
    text = profile(args) if args.command == "profile" else val_precision(args)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
