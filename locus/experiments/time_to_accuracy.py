"""Time to accuracy: LOCUS training recipes side by side (``locus figure time-to-accuracy``).

Input: run directories of the same data, training size and seed(s) trained with different ``recipe``s of
:class:`locus.methods.locus_method.LocusMethod`, read through :mod:`locus.run_artifacts` (``log.csv``:
validation hit@1 against steps and wall-clock seconds, validation passes included; ``metrics.json``), and
optionally each run's Snakemake benchmark file (peak resident memory, ``max_rss``).

The reference recipe (default ``paper``) sets the target: ``target_fraction`` of its best validation
hit@1. Per recipe the summary gives its best, the step and seconds at which it first reached it, the
seconds to the target, and the speed-up = reference seconds to its best / recipe seconds to the target;
over several seeds, each seed is compared on its own (:func:`compare_seeds`). Beside it, the same
comparison at matched validation looks (:func:`matched_looks`), and with the data set the level of a
constant router (:func:`constant_router`). Validation data only: test numbers are copied from
``metrics.json`` for context, never used to choose anything.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from locus import run_artifacts
from locus.errors import DataError
from locus.render import speedup_text

CSV_COLUMNS = ["kind", "recipe", "seed", "step", "seconds", "val_routing", "best_so_far", "value"]


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
        raise DataError(
            f"{run_dir / 'log.csv'}: columns {missing} missing (a run without a validation split "
            "cannot be timed to accuracy); re-run the training rule."
        )
    return {
        "path": str(run_dir),
        "fingerprint": metrics.get("data_fingerprint"),
        "recipe": params.get("recipe", "fast"),
        "train_size": int(metrics["train_size"]),
        "seed": int(metrics["seed"]),
        "dataset": metrics.get("dataset"),
        "encoder": metrics.get("encoder"),
        "log": log[["step", "seconds", "val_routing"]].astype(float),
        "test_routing": float((metrics["test"].get("overall") or {}).get("routing_acc", math.nan)),
    }


def peak_rss_mb(benchmark_tsv) -> float:
    """Peak resident memory (MB) of a Snakemake ``benchmark:`` file (its ``max_rss`` column)."""
    path = Path(benchmark_tsv)
    try:
        frame = pd.read_csv(path, sep="\t")
        return float(frame["max_rss"].max())
    except Exception as exc:
        raise DataError(f"{path}: not a Snakemake benchmark file with a max_rss column ({exc}).") from exc


def constant_router(dataset_dir, run: dict) -> tuple[float, int]:
    """(validation hit@1 of the best single model on validation among the run's models, validation queries)
    from the canonical data set the run was trained on (checked by its fingerprint and validation queries).

    The summary gives the level every router starts from: the validation hit@1 of the best single model on
    validation (a constant router, over the runs' models), and how many validation queries the target and each
    recipe's best lie above it. When the target is only a few queries above that level, a speed-up measures when a
    curve first crosses a few-query margin, and one seed says little about it; when the target is at or below that
    level (``target_met_by_constant_router``), the speed-up says nothing about learning and the report says so."""
    from locus import evaluation
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint

    data = read_dataset(dataset_dir)
    fingerprint = data_fingerprint(data.queries["prompt_id"], data.queries["prompt"])
    run_artifacts.check_same_data(
        run["path"],
        run["fingerprint"],
        fingerprint,
        dataset_dir,
        f"pass the data set the runs were trained on with --data (recorded in the run: {run['dataset']})",
    )
    prompt_ids, model_ids, _ = run_artifacts.read_scores(run["path"], "val")
    val_ids = data.split_queries("val")["prompt_id"].to_numpy(np.int64)
    if not np.array_equal(prompt_ids, np.sort(val_ids)) or not np.isin(model_ids, data.model_ids).all():
        raise DataError(
            f"{run['path']}: its validation scores do not cover the validation queries and models of "
            f"{dataset_dir}; pass the runs' own data set with --data, or re-run training"
        )
    labels = data.label_matrix(prompt_ids, model_ids)
    onehot = np.full(labels.shape, -1.0)
    onehot[:, evaluation.best_single_model(labels)] = 1.0
    return float(evaluation.validation_metrics(onehot, labels)["val_routing"]), int(len(prompt_ids))


def curve_summary(log: pd.DataFrame, target: float | None = None) -> dict:
    """Best value, where it was first reached, and when `target` was first reached (NaN: never)."""
    values = log["val_routing"].to_numpy()
    best_pos = int(values.argmax())
    out = {
        "best_val_routing": float(values[best_pos]),
        "step_to_best": int(log["step"].iloc[best_pos]),
        "seconds_to_best": float(log["seconds"].iloc[best_pos]),
        "steps": int(log["step"].iloc[-1]),
        "seconds": float(log["seconds"].iloc[-1]),
    }
    if target is not None:
        hit = values >= target - 1e-12
        out["seconds_to_target"] = float(log["seconds"].to_numpy()[hit.argmax()]) if hit.any() else math.nan
        out["step_to_target"] = int(log["step"].to_numpy()[hit.argmax()]) if hit.any() else -1
    return out


def validation_interval(log: pd.DataFrame) -> int:
    """Steps between a run's validation passes: the most common gap between its logged steps (the last
    pass, at the run's final step, may come sooner)."""
    gaps = np.diff(log["step"].to_numpy(np.int64))
    if len(gaps) == 0:
        return int(log["step"].iloc[0])
    values, counts = np.unique(gaps, return_counts=True)
    return int(values[counts.argmax()])


def matched_looks(ref_log: pd.DataFrame, log: pd.DataFrame, target_fraction: float) -> dict:
    """The reference curve as if it had been validated as rarely as the other recipe (`log`): read only at
    the multiples of the other recipe's validation interval k (and at its last step), over its whole length,
    and the other recipe's time to `target_fraction` of that best. A recipe validated at every step (the
    `paper` recipe) takes its best over k times as many noisy looks at the validation split as one validated
    every k steps (`fast`: 25), and the highest of more noisy looks is higher by selection alone.
    ``reference_best_mean_over_offsets`` is that best averaged over the k possible offsets of the looks
    (step mod k = 0 … k - 1): what the reference's best is worth at the other recipe's validation rate,
    whichever steps the looks fall on. (The reference's own early stopping is not replayed: counted on the
    rarer looks it could only have stopped it sooner.) With k = 1 the numbers equal the plain ones."""
    k = max(1, validation_interval(log))
    steps = ref_log["step"].to_numpy(np.int64)
    values = ref_log["val_routing"].to_numpy()
    at = (steps % k == 0) | (steps == steps.max())
    pos = np.flatnonzero(at)[int(values[at].argmax())]
    best, ref_seconds = float(values[pos]), float(ref_log["seconds"].iloc[pos])
    offsets = [values[steps % k == o].max() for o in range(k) if (steps % k == o).any()]
    seconds = curve_summary(log, target_fraction * best)["seconds_to_target"]
    return {
        "validation_interval": k,
        "reference_best_at_interval": best,
        "reference_seconds_to_best_at_interval": ref_seconds,
        "reference_best_mean_over_offsets": float(np.mean(offsets)),
        "seconds_to_matched_target": seconds,
        "speedup_to_matched_target": ref_seconds / seconds if seconds > 0 else math.nan,
    }


def compare(
    runs: list[dict], reference: str = "paper", target_fraction: float = 0.99, constant: tuple[float, int] | None = None
) -> tuple[pd.DataFrame, dict]:
    """(frame of the plotted curves, summary) for runs of one data set, training size and seed.
    `constant`: (validation hit@1 of the best single model, validation queries), from :func:`constant_router`."""
    recipes = [r["recipe"] for r in runs]
    if len(set(recipes)) != len(recipes):
        raise DataError(f"time to accuracy: one run per recipe expected, got recipes {recipes}.")
    if reference not in recipes:
        raise DataError(f"time to accuracy: no run of the reference recipe {reference!r} among {recipes}.")
    keys = {(r["train_size"], r["seed"], r["dataset"], r["encoder"]) for r in runs}
    if len(keys) != 1:
        raise DataError(
            "time to accuracy: the runs differ in training size, seed, data set or encoder "
            f"({sorted(map(str, keys))}); compare recipes on the same runs' settings."
        )
    ref = next(r for r in runs if r["recipe"] == reference)
    ref_summary = curve_summary(ref["log"])
    target = target_fraction * ref_summary["best_val_routing"]
    rows, per_recipe = [], {}
    for run in runs:
        log = run["log"]
        s = curve_summary(log, target)
        s["speedup_to_target"] = (
            ref_summary["seconds_to_best"] / s["seconds_to_target"] if s["seconds_to_target"] > 0 else math.nan
        )
        if run is not ref:
            s.update(matched_looks(ref["log"], log, target_fraction))
        s["test_routing"] = run["test_routing"]
        s["peak_rss_mb"] = run.get("peak_rss_mb", math.nan)
        if constant is not None:  # validation queries above the constant router (rounded: hit@1 counts queries)
            s["best_queries_above_constant"] = round((s["best_val_routing"] - constant[0]) * constant[1])
        per_recipe[run["recipe"]] = s
        best = log["val_routing"].cummax()
        rows.append(
            pd.DataFrame(
                {
                    "kind": "curve",
                    "recipe": run["recipe"],
                    "step": log["step"],
                    "seconds": log["seconds"],
                    "val_routing": log["val_routing"],
                    "best_so_far": best,
                    "value": math.nan,
                }
            )
        )
        for key, value in s.items():
            rows.append(pd.DataFrame([{"kind": key, "recipe": run["recipe"], "value": value}]))
    frame = pd.concat(rows, ignore_index=True).reindex(columns=CSV_COLUMNS)
    summary = {
        "reference": reference,
        "target_fraction": target_fraction,
        "target_val_routing": target,
        "train_size": ref["train_size"],
        "seed": ref["seed"],
        "dataset": ref["dataset"],
        "encoder": ref["encoder"],
        "recipes": per_recipe,
    }
    if constant is not None:
        value, n_val = constant
        above = math.ceil(round((target - value) * n_val, 9))
        # a target at or below the starting level is met by routing everything to one model: the speed-up
        # then times how soon a recipe routes like the best single model (often its first validation pass),
        # not learning
        summary.update(
            {
                "constant_router_val_routing": value,
                "n_val_queries": n_val,
                "target_queries_above_constant": above,
                "target_met_by_constant_router": above <= 0,
            }
        )
        frame = pd.concat(
            [frame, pd.DataFrame([{"kind": "constant_router_val_routing", "value": value}])], ignore_index=True
        ).reindex(columns=CSV_COLUMNS)
    return frame, summary


def compare_seeds(
    runs: list[dict], reference: str = "paper", target_fraction: float = 0.99, constant: tuple[float, int] | None = None
) -> tuple[pd.DataFrame, dict]:
    """:func:`compare` per seed, for runs of one data set and training size with one run per recipe and
    seed. One seed: that seed's summary (with ``seeds``). Several: ``per_seed`` holds each seed's summary
    and ``recipes`` the summary over seeds: per recipe the speed-ups of the seeds (a seed that never reached
    its target counts as 0, no speed-up), their median, minimum and maximum, and in how many seeds the
    target was reached. Each seed sets its own target from its own reference run."""
    keys = {(r["train_size"], r["dataset"], r["encoder"]) for r in runs}
    if len(keys) != 1:
        raise DataError(
            "time to accuracy: the runs differ in training size, data set or encoder "
            f"({sorted(map(str, keys))}); compare recipes on the same runs' settings."
        )
    seeds = sorted({r["seed"] for r in runs})
    recipes_of = {seed: sorted(r["recipe"] for r in runs if r["seed"] == seed) for seed in seeds}
    if len({tuple(v) for v in recipes_of.values()}) > 1:
        raise DataError(
            f"time to accuracy: every seed needs a run of each recipe; got {recipes_of} "
            "(seed: recipes). Train the missing runs or leave that seed out."
        )
    frames, per_seed = [], {}
    for seed in seeds:
        frame, summary = compare([r for r in runs if r["seed"] == seed], reference, target_fraction, constant)
        frames.append(frame.assign(seed=seed))
        per_seed[seed] = summary
    frame = pd.concat(frames, ignore_index=True).reindex(columns=CSV_COLUMNS)
    if len(seeds) == 1:
        return frame, {**per_seed[seeds[0]], "seeds": seeds}
    first = per_seed[seeds[0]]
    recipes = {}
    for recipe in first["recipes"]:
        rows = [per_seed[seed]["recipes"][recipe] for seed in seeds]
        speedups = speedups_over_seeds(rows, "speedup_to_target")
        recipes[recipe] = {
            "speedups_to_target": speedups,
            "speedup_to_target": float(np.median(speedups)),
            "speedup_min": min(speedups),
            "speedup_max": max(speedups),
            **matched_over_seeds(rows),
            "seeds_reaching_target": sum(not math.isnan(r["seconds_to_target"]) for r in rows),
            "best_val_routing_mean": float(np.mean([r["best_val_routing"] for r in rows])),
            "seconds_to_best_median": float(np.median([r["seconds_to_best"] for r in rows])),
            "seconds_median": float(np.median([r["seconds"] for r in rows])),
            "test_routing_mean": float(np.mean([r["test_routing"] for r in rows])),
            "peak_rss_mb_max": max(r["peak_rss_mb"] for r in rows),
        }
        extra = [
            {"kind": key, "recipe": recipe, "value": recipes[recipe][key]}
            for key in (
                "speedup_to_target",
                "speedup_min",
                "speedup_max",
                "seeds_reaching_target",
                "speedup_to_matched_target",
                "seeds_reaching_matched_target",
            )
            if key in recipes[recipe]
        ]
        frame = pd.concat([frame, pd.DataFrame(extra)], ignore_index=True).reindex(columns=CSV_COLUMNS)
    summary = {key: first[key] for key in ("reference", "target_fraction", "train_size", "dataset", "encoder")}
    summary.update({"seeds": seeds, "recipes": recipes, "per_seed": {str(seed): per_seed[seed] for seed in seeds}})
    for key in ("constant_router_val_routing", "n_val_queries"):
        if key in first:
            summary[key] = first[key]
    return frame, summary


def speedups_over_seeds(rows: list[dict], key: str) -> list[float]:
    """Each seed's speed-up `key`; a seed that never reached its target counts as 0 (no speed-up)."""
    return [0.0 if math.isnan(r[key]) else r[key] for r in rows]


def matched_over_seeds(rows: list[dict]) -> dict:
    """Speed-ups to the matched-looks target over seeds (0 = never reached), for a non-reference recipe."""
    if "speedup_to_matched_target" not in rows[0]:
        return {}
    speedups = speedups_over_seeds(rows, "speedup_to_matched_target")
    return {
        "speedups_to_matched_target": speedups,
        "speedup_to_matched_target": float(np.median(speedups)),
        "seeds_reaching_matched_target": sum(not math.isnan(r["seconds_to_matched_target"]) for r in rows),
    }


def seconds_text(value: float) -> str:
    """Seconds to a target for people: NaN (never reached) reads "never reached"."""
    return "never reached" if math.isnan(value) else f"at {value:.0f} s"


def relative_queries_text(queries: int, level: str, of: int | None = None) -> str:
    """How many validation queries a value lies above (or below) `level`, for people: "3 of 801 validation
    queries above it", "2 queries below the constant router"."""
    count = f"{abs(queries)} of {of} validation queries" if of is not None else f"{abs(queries)} queries"
    return f"{count} {'below' if queries < 0 else 'above'} {level}"


def memory_text(value: float) -> str:
    """Peak memory for people: NaN (no benchmark file was given for the run) reads "not recorded"."""
    return "not recorded" if math.isnan(value) else f"{value:.0f} MB"


def report_lines(summary: dict) -> list[str]:
    if "per_seed" in summary:  # several seeds: each seed's lines, then the summary over seeds
        lines = []
        for one in summary["per_seed"].values():
            lines += report_lines(one)
        for recipe, s in summary["recipes"].items():
            lines.append(
                f"over seeds {', '.join(map(str, summary['seeds']))}: {recipe}: speed-up median "
                f"{speedup_text(s['speedup_to_target'])} (min {speedup_text(s['speedup_min'])}, "
                f"max {speedup_text(s['speedup_max'])}; "
                f"target reached in {s['seeds_reaching_target']} of {len(summary['seeds'])} seeds); "
                f"mean best val hit@1 {100 * s['best_val_routing_mean']:.2f}%, mean test hit@1 "
                f"{100 * s['test_routing_mean']:.2f}%"
                + (
                    f"; with the reference validated as rarely: speed-up median "
                    f"{speedup_text(s['speedup_to_matched_target'])}, "
                    f"target reached in {s['seeds_reaching_matched_target']} of {len(summary['seeds'])} seeds"
                    if "speedup_to_matched_target" in s
                    else ""
                )
            )
        return lines
    lines = [
        f"time to accuracy at n = {summary['train_size']}, seed {summary['seed']}: target = "
        f"{summary['target_fraction']:.0%} of {summary['reference']}'s best validation hit@1 "
        f"= {100 * summary['target_val_routing']:.2f}%"
    ]
    if "constant_router_val_routing" in summary:
        lines.append(
            f"  best single model on validation (a constant router): "
            f"{100 * summary['constant_router_val_routing']:.2f}%; the target is "
            f"{relative_queries_text(summary['target_queries_above_constant'], 'it', summary['n_val_queries'])}"
        )
        if summary["target_met_by_constant_router"]:
            lines.append(
                "  WARNING: the constant router already meets the target, so a speed-up only times how soon "
                "a recipe routes like the best single model, not learning; compare the recipes' best values "
                "instead"
            )
    for recipe, s in summary["recipes"].items():
        lines.append(
            f"  {recipe}: best {100 * s['best_val_routing']:.2f}% at step {s['step_to_best']} "
            f"({s['seconds_to_best']:.0f} s); target {seconds_text(s['seconds_to_target'])}; "
            f"speed-up {speedup_text(s['speedup_to_target'])}; {s['steps']} steps, {s['seconds']:.0f} s; "
            f"peak memory {memory_text(s['peak_rss_mb'])}"
            + (
                f"; best {relative_queries_text(s['best_queries_above_constant'], 'the constant router')}"
                if "best_queries_above_constant" in s
                else ""
            )
            + matched_text(summary["reference"], s)
        )
    return lines


def matched_text(reference: str, s: dict) -> str:
    """The report's clause on the reference read as rarely as recipe `s` was validated (empty when the
    summary has no such reading; a recipe validated every step has no rarer reading to compare with)."""
    if "reference_best_at_interval" not in s:
        return ""
    if s["validation_interval"] == 1:
        return f"; validated every step, as often as {reference}: no rarer reading to compare"
    return (
        f"; {reference} validated every {s['validation_interval']} steps like it: best "
        f"{100 * s['reference_best_at_interval']:.2f}% ({s['reference_seconds_to_best_at_interval']:.0f} s; "
        f"{100 * s['reference_best_mean_over_offsets']:.2f}% averaged over the look offsets), "
        f"its target {seconds_text(s['seconds_to_matched_target'])}, speed-up "
        f"{speedup_text(s['speedup_to_matched_target'])}"
    )


def write(
    run_dirs,
    out,
    benchmarks=None,
    reference: str = "paper",
    target_fraction: float = 0.99,
    data_label: str | None = None,
    data=None,
) -> dict:
    """Read the runs (and their benchmark files, in the same order), write ``<stem>.pdf/.png/.csv/.json``.
    `data`: the canonical data set the runs were trained on, for the constant-router level (optional)."""
    from locus.atomic import write_json
    from locus.experiments.figures import json_safe
    from locus.outputs import check_outputs
    from locus.render import write_csv
    from locus.render.figures import output_paths, save_figure, time_to_accuracy_figure

    if benchmarks and len(benchmarks) != len(run_dirs):
        raise DataError(
            f"--benchmarks: {len(benchmarks)} files for {len(run_dirs)} runs; give one per run, in the same order."
        )
    paths = output_paths(out)
    check_outputs(paths.values())
    runs = [read_recipe_run(d) for d in run_dirs]
    for run, bench in zip(runs, benchmarks or []):
        run["peak_rss_mb"] = peak_rss_mb(bench)
    ref = next((r for r in runs if r["recipe"] == reference), runs[0])
    constant = constant_router(data, ref) if data is not None else None  # the same validation split for every seed
    frame, summary = compare_seeds(runs, reference, target_fraction, constant)
    label = data_label or Path(str(summary["dataset"])).name
    seeds = summary["seeds"]
    title = (
        f"{label} ({summary['encoder']}): LOCUS recipes, n = {summary['train_size']}, "
        f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
    )
    save_figure(time_to_accuracy_figure(frame, summary, title), paths["pdf"])
    write_csv(frame, paths["csv"])
    write_json(paths["json"], json_safe(summary))
    return summary


def train_and_write(
    out_dir,
    data_dir,
    encodings_path,
    train_size: int,
    seed: int,
    params_json: str = "{}",
    device: str | None = None,
    threads: int = 0,
    progress=print,
) -> dict:
    """`locus bench --time-to-accuracy DIR`: LOCUS trained once per recipe (paper, fast) on the same data,
    n and seed into DIR/<recipe>/, then the comparison of :func:`write` as
    DIR/time_to_accuracy.{pdf,png,csv,json}. Peak memory is not recorded here (both runs share one
    process); the workflow's rule records each run's from its own job."""
    from locus.errors import ConfigError
    from locus.params import method_params, set_threads
    from locus.runs import execute

    if data_dir is None or encodings_path is None:
        raise ConfigError("--time-to-accuracy needs --data (canonical data set) and --encodings (its encodings)")
    params = method_params("locus", params_json)
    if "recipe" in params:
        raise ConfigError("--params: leave out 'recipe'; --time-to-accuracy trains every recipe")
    if device is not None:
        params["device"] = device
    set_threads(threads)
    out_dir = Path(out_dir)
    run_dirs = []
    for recipe in ("paper", "fast"):
        progress(f"training LOCUS with recipe {recipe} (n = {train_size}, seed {seed})")
        run_dirs.append(out_dir / recipe)
        execute("locus", {**params, "recipe": recipe}, data_dir, encodings_path, train_size, seed, run_dirs[-1])
    summary = write(run_dirs, out_dir / "time_to_accuracy.pdf", data=data_dir)
    for line in report_lines(summary):
        progress(line)
    return summary
