"""Time to accuracy: LOCUS training recipes side by side (``locus figure time-to-accuracy``).

Input: run directories of the same data, training size and seed trained with different recipes (the
``recipe`` parameter of :class:`locus.methods.locus_method.LocusMethod`), read through
:mod:`locus.run_artifacts` (``log.csv``: validation hit@1 against steps and wall-clock seconds, measured
by the training loop and including its validation passes; ``metrics.json``: the recipe among the params), and
optionally each run's Snakemake benchmark file (peak resident memory, ``max_rss``).

The reference recipe (default ``paper``) sets the target: ``target_fraction`` (default 0.99) of its best
validation hit@1. Per recipe the summary gives its best validation hit@1, the step and seconds at which it
first reached its best, the seconds at which it first reached the target, and the speed-up = reference
seconds to its best / recipe seconds to the target. Validation data only: test numbers are copied from
``metrics.json`` for context, never used to choose anything.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from locus.errors import DataError
from locus import run_artifacts

CSV_COLUMNS = ["kind", "recipe", "step", "seconds", "val_routing", "best_so_far", "value"]


def read_recipe_run(run_dir) -> dict:
    """{recipe, train_size, seed, dataset, encoder, log, test_routing} of one LOCUS run directory."""
    run_dir = Path(run_dir)
    metrics = run_artifacts.read_metrics(run_dir)
    if metrics["method"] != "locus":
        raise DataError(f"{run_dir}: a {metrics['method']!r} run; time to accuracy compares LOCUS recipes.")
    params = metrics.get("params") or {}
    log = run_artifacts.read_log(run_dir)
    missing = [c for c in ("step", "seconds", "val_routing") if c not in log]
    if missing:
        raise DataError(f"{run_dir / 'log.csv'}: columns {missing} missing (a run without a validation split "
                        "cannot be timed to accuracy); re-run the training rule.")
    return {"recipe": params.get("recipe", "fast"), "train_size": int(metrics["train_size"]),
            "seed": int(metrics["seed"]), "dataset": metrics.get("dataset"), "encoder": metrics.get("encoder"),
            "log": log[["step", "seconds", "val_routing"]].astype(float),
            "test_routing": float((metrics["test"].get("overall") or {}).get("routing_acc", math.nan))}


def peak_rss_mb(benchmark_tsv) -> float:
    """Peak resident memory (MB) of a Snakemake ``benchmark:`` file (its ``max_rss`` column)."""
    path = Path(benchmark_tsv)
    try:
        frame = pd.read_csv(path, sep="\t")
        return float(frame["max_rss"].max())
    except Exception as exc:
        raise DataError(f"{path}: not a Snakemake benchmark file with a max_rss column ({exc}).") from exc


def curve_summary(log: pd.DataFrame, target: float | None = None) -> dict:
    """Best value, where it was first reached, and when `target` was first reached (NaN: never)."""
    values = log["val_routing"].to_numpy()
    best_pos = int(values.argmax())
    out = {"best_val_routing": float(values[best_pos]), "step_to_best": int(log["step"].iloc[best_pos]),
           "seconds_to_best": float(log["seconds"].iloc[best_pos]), "steps": int(log["step"].iloc[-1]),
           "seconds": float(log["seconds"].iloc[-1])}
    if target is not None:
        hit = values >= target - 1e-12
        out["seconds_to_target"] = float(log["seconds"].to_numpy()[hit.argmax()]) if hit.any() else math.nan
        out["step_to_target"] = int(log["step"].to_numpy()[hit.argmax()]) if hit.any() else -1
    return out


def compare(runs: list[dict], reference: str = "paper", target_fraction: float = 0.99) -> tuple[pd.DataFrame, dict]:
    """(frame of the plotted curves, summary) for runs of one data set, training size and seed."""
    recipes = [r["recipe"] for r in runs]
    if len(set(recipes)) != len(recipes):
        raise DataError(f"time to accuracy: one run per recipe expected, got recipes {recipes}.")
    if reference not in recipes:
        raise DataError(f"time to accuracy: no run of the reference recipe {reference!r} among {recipes}.")
    keys = {(r["train_size"], r["seed"], r["dataset"], r["encoder"]) for r in runs}
    if len(keys) != 1:
        raise DataError("time to accuracy: the runs differ in training size, seed, data set or encoder "
                        f"({sorted(map(str, keys))}); compare recipes on the same runs' settings.")
    ref = next(r for r in runs if r["recipe"] == reference)
    ref_summary = curve_summary(ref["log"])
    target = target_fraction * ref_summary["best_val_routing"]
    rows, per_recipe = [], {}
    for run in runs:
        log = run["log"]
        s = curve_summary(log, target)
        s["speedup_to_target"] = (ref_summary["seconds_to_best"] / s["seconds_to_target"]
                                  if s["seconds_to_target"] > 0 else math.nan)
        s["test_routing"] = run["test_routing"]
        s["peak_rss_mb"] = run.get("peak_rss_mb", math.nan)
        per_recipe[run["recipe"]] = s
        best = log["val_routing"].cummax()
        rows.append(pd.DataFrame({"kind": "curve", "recipe": run["recipe"], "step": log["step"],
                                  "seconds": log["seconds"], "val_routing": log["val_routing"],
                                  "best_so_far": best, "value": math.nan}))
        for key, value in s.items():
            rows.append(pd.DataFrame([{"kind": key, "recipe": run["recipe"], "value": value}]))
    frame = pd.concat(rows, ignore_index=True).reindex(columns=CSV_COLUMNS)
    summary = {"reference": reference, "target_fraction": target_fraction, "target_val_routing": target,
               "train_size": ref["train_size"], "seed": ref["seed"], "dataset": ref["dataset"],
               "encoder": ref["encoder"], "recipes": per_recipe}
    return frame, summary


def report_lines(summary: dict) -> list[str]:
    lines = [f"time to accuracy at n = {summary['train_size']}, seed {summary['seed']}: target = "
             f"{summary['target_fraction']:.0%} of {summary['reference']}'s best validation hit@1 "
             f"= {100 * summary['target_val_routing']:.2f}%"]
    for recipe, s in summary["recipes"].items():
        lines.append(f"  {recipe}: best {100 * s['best_val_routing']:.2f}% at step {s['step_to_best']} "
                     f"({s['seconds_to_best']:.0f} s); target at {s['seconds_to_target']:.0f} s; "
                     f"speed-up {s['speedup_to_target']:.1f}x; {s['steps']} steps, {s['seconds']:.0f} s; "
                     f"peak memory {s['peak_rss_mb']:.0f} MB")
    return lines


def write(run_dirs, out, benchmarks=None, reference: str = "paper", target_fraction: float = 0.99,
          data_label: str | None = None) -> dict:
    """Read the runs (and their benchmark files, in the same order), write ``<stem>.pdf/.png/.csv/.json``."""
    from locus.atomic import write_json
    from locus.experiments.figures import json_safe
    from locus.outputs import check_outputs
    from locus.render import write_csv
    from locus.render.figures import output_paths, save_figure, time_to_accuracy_figure

    if benchmarks and len(benchmarks) != len(run_dirs):
        raise DataError(f"--benchmarks: {len(benchmarks)} files for {len(run_dirs)} runs; give one per run, "
                        "in the same order.")
    paths = output_paths(out)
    check_outputs(paths.values())
    runs = [read_recipe_run(d) for d in run_dirs]
    for run, bench in zip(runs, benchmarks or []):
        run["peak_rss_mb"] = peak_rss_mb(bench)
    frame, summary = compare(runs, reference, target_fraction)
    label = data_label or Path(str(summary["dataset"])).name
    title = (f"{label} ({summary['encoder']}): LOCUS recipes, n = {summary['train_size']}, "
             f"seed {summary['seed']}")
    save_figure(time_to_accuracy_figure(frame, summary, title), paths["pdf"])
    write_csv(frame, paths["csv"])
    write_json(paths["json"], json_safe(summary))
    return summary
