"""Figures from runs' ``metrics.json`` (``locus figure KIND``): the data behind each figure, its title
and the files written (plotting in :mod:`locus.render.figures`).

Kinds:

- ``sample-efficiency``: paper ``fig:train_sample_eff``: test routing accuracy (mean ± std over seeds, and
  each seed's own point) vs training evaluations per model, with each curve's isotonic fit (dashed), the
  best single model chosen on validation (horizontal line) and "k× fewer samples" arrows for the
  reference method where the factor is exact, defined in >= 95% of the resamples and its bootstrap
  interval excludes 1 (:func:`sample_efficiency`). Writes ``<stem>.pdf``, ``.png``, ``.csv``
  (:func:`plot_frame`) and ``.json`` (the headline factors; an interval end censored above is written
  ``"inf"``; an undefined factor's interval ``null``).

Titles name the data set by the label given (the workflow passes each data set's own label), else by
the data set's name recorded in the runs.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from locus.constants import FIGURE_KINDS
from locus.errors import ConfigError
from locus.experiments import sample_efficiency as se
from locus.experiments.comparison import collect
from locus.outputs import check_outputs

KINDS = FIGURE_KINDS  # time-to-accuracy: locus.experiments.time_to_accuracy
METRICS = ("routing_acc", "correctness_acc", "hit@3", "hit@5")
CSV_COLUMNS = [
    "kind",
    "method",
    "train_size",
    "mean",
    "std",
    "n_seeds",
    "reference_curve_n",
    "target",
    "n_reference",
    "n_method",
    "factor",
    "crossing",
    "ci_low",
    "ci_high",
    "share_defined",
    "status",
    "annotated",
    "seed",
    "top_model_share",
]


def plot_frame(
    curve: pd.DataFrame,
    table: pd.DataFrame,
    fit: pd.DataFrame | None = None,
    points: pd.DataFrame | None = None,
    best_single: float | None = None,
    shares: dict | None = None,
) -> pd.DataFrame:
    """The CSV written beside the figure: the measured curves (``kind = curve``: mean ± std over seeds),
    each seed's point (``kind = seed``: ``mean`` = that run's value, ``seed``), their isotonic fits that
    the factors are read from (``kind = isotonic``: ``mean`` = fitted value), the best single model chosen
    on validation (``kind = best_single``: ``mean`` = its test value) and every factor (``kind = factor``;
    ``reference_curve_n`` = the reference curve's size of that target; interval ``ci_low..ci_high``,
    ``status``, ``annotated`` = drawn on the figure). With the routing `shares` (:func:`top_shares`) the
    curve rows carry ``top_model_share`` (mean over seeds of the share of test queries sent to the
    most-chosen model)."""
    if shares is not None:
        curve = curve.assign(
            top_model_share=[shares.get(m, {}).get(int(n)) for m, n in zip(curve["method"], curve["train_size"])]
        )
    parts = [curve.assign(kind="curve")]
    if points is not None:
        parts.append(points.rename(columns={"value": "mean"}).assign(kind="seed"))
    if fit is not None:
        parts.append(fit.assign(kind="isotonic"))
    if best_single is not None:
        parts.append(pd.DataFrame({"kind": ["best_single"], "method": ["best_single"], "mean": [best_single]}))
    parts.append(table.rename(columns={"n": "reference_curve_n"}).assign(kind="factor"))
    data = pd.concat(parts, ignore_index=True).reindex(columns=CSV_COLUMNS)
    return data.astype({"train_size": "Int64", "n_seeds": "Int64", "seed": "Int64"})


def seed_points(method_rows: pd.DataFrame, metric: str, benchmark: str = "Overall") -> pd.DataFrame:
    """``method, train_size, seed, value``: every run's own value of `metric` (the raw points)."""
    rows = method_rows[(method_rows["metric"] == metric) & (method_rows["benchmark"] == benchmark)]
    return rows[["method", "train_size", "seed", "value"]].sort_values(["method", "train_size", "seed"])


def best_single_level(ref_agg: pd.DataFrame, metric: str, benchmark: str = "Overall") -> float | None:
    """Test routing accuracy of the best single model chosen on validation (the runs' ``best_single``
    reference rows, one value per data set: the mean over the runs' records), or None for another
    metric or runs without reference rows."""
    if metric != "routing_acc" or ref_agg.empty:
        return None
    rows = ref_agg[(ref_agg["reference"] == "best_single") & (ref_agg["benchmark"] == benchmark)]
    values = rows["mean"].dropna()
    return float(values.mean()) if len(values) else None


def reference_levels(ref_agg: pd.DataFrame, metric: str, benchmark: str = "Overall") -> dict:
    """Test routing accuracy of the ``random`` and ``oracle`` reference rows of the runs (mean over the
    runs' records), for the note that names the references outside the plotted axis; {} for another
    metric."""
    if metric != "routing_acc" or ref_agg.empty:
        return {}
    out = {}
    for name in ("random", "oracle"):
        values = ref_agg[(ref_agg["reference"] == name) & (ref_agg["benchmark"] == benchmark)]["mean"].dropna()
        if len(values):
            out[name] = float(values.mean())
    return out


def top_shares(diversity: dict) -> dict:
    """method -> {train_size: share of the test queries sent to the most-chosen model} from the per-cell
    routing diversity of :func:`locus.experiments.comparison.query_values` (mean over seeds)."""
    out: dict = {}
    for (method, size), d in sorted(diversity.items()):
        share = d.get("top_model_share")
        if share is not None and math.isfinite(float(share)):
            out.setdefault(method, {})[int(size)] = float(share)
    return out


def json_safe(obj):
    """JSON-safe copy: NaN/inf -> None (JSON has neither)."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def inf_as_text(obj):
    """Copy with +/-inf written "inf" / "-inf" (an interval end censored above is unbounded, not missing)."""
    if isinstance(obj, dict):
        return {k: inf_as_text(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [inf_as_text(v) for v in obj]
    if isinstance(obj, float) and math.isinf(obj):
        return "inf" if obj > 0 else "-inf"
    return obj


def _interval_text(f: dict) -> str:
    if f.get("status", "no_interval") == "no_interval":
        return "no interval"
    if f["status"] == "undefined":
        return f"undefined: exact in only {100 * f['share_defined']:.0f}% of resamples"
    return f"95% CI {f['ci_low']:.2f}..{f['ci_high']:.2f}, {f['status']}, {100 * f['share_defined']:.0f}% defined"


def report_lines(summary: dict) -> list[str]:
    """One line per compared method: the factor at the reference point and the largest exact one, each
    with its interval, and what the figure annotates."""
    ref = summary["reference_method"]
    lines = []
    for method, info in summary["methods"].items():
        at, best = info["at_reference_point"], info["max"]
        lines.append(
            f"{ref} vs {method}: at n={at['n']} ({100 * at['target']:.2f}%) factor {at['factor']:.2f} "
            f"({at['crossing']}; {_interval_text(at)}); max exact factor "
            + (f"{best['factor']:.2f} at {100 * best['target']:.2f}% ({_interval_text(best)})" if best else "n/a")
            + f"; annotated: {info['annotated'] or 'none'}"
        )
    return lines


def run_metrics_paths(metrics=None, runs=None) -> list[str]:
    """The metrics.json files: `metrics` as given, or ``<run dir>/metrics.json`` of each of `runs`."""
    from locus.run_artifacts import METRICS

    if bool(metrics) == bool(runs):
        raise ConfigError(
            "locus figure sample-efficiency needs the runs: either --runs (run directories) or "
            "--metrics (their metrics.json files), not both"
        )
    return [str(p) for p in metrics] if metrics else [str(Path(d) / METRICS) for d in runs]


def sample_efficiency(
    metrics=None,
    out=None,
    methods=None,
    reference_method: str = "locus",
    reference_point: int | None = None,
    metric: str = "routing_acc",
    split: str = "test",
    data_label: str | None = None,
    runs=None,
    data=None,
    n_boot: int = 1000,
    boot_seed: int = 0,
) -> dict:
    """Read the runs (`metrics` files or `runs` directories), compute curves, fits and factors (with
    their paired bootstrap intervals when the data set `data` is given), write the figure and its data;
    returns the summary written as JSON.

    Inputs: the runs (``--runs`` directories or their ``--metrics`` files) and, for the intervals, the
    canonical data set (``--data``: labels of the per-query paired bootstrap over the runs'
    ``scores_{split}.parquet``; without it no intervals: every factor ``no_interval``, no arrow)."""
    from locus.atomic import write_json
    from locus.experiments.bootstrap import METRICS as BOOT_METRICS
    from locus.experiments.comparison import query_values
    from locus.experiments.sample_efficiency_ci import resampled_curves
    from locus.render import write_csv
    from locus.render.figures import (
        figure_title,
        metric_axis_label,
        output_paths,
        sample_efficiency_figure,
        save_figure,
    )

    if methods and reference_method not in methods:
        raise ConfigError(
            f"--reference-method {reference_method} is not among --methods {','.join(methods)}; add it to --methods"
        )
    if data is not None and metric not in BOOT_METRICS:
        raise ConfigError(
            f"the bootstrap intervals (--data) cover {', '.join(BOOT_METRICS)}, not {metric}; "
            "drop --data or choose one of those with --metric"
        )
    paths = output_paths(out)
    check_outputs(paths.values())
    coll = collect(run_metrics_paths(metrics, runs), split, methods, metrics=(metric,))
    curve = se.curves(coll.method_rows, metric)
    resampled, shares = None, None
    if data is not None:
        values = query_values(coll.runs, data, split)
        resampled = resampled_curves(values.cells, curve, metric, n_boot, boot_seed)
        if metric in ("routing_acc", "hit@3", "hit@5"):  # a router's choices: its routing diversity
            shares = top_shares(values.diversity)
    table, summary = se.efficiency(curve, reference_method, reference_point, resampled=resampled)
    fit = se.smooth(curve)
    points = seed_points(coll.method_rows, metric) if (curve["n_seeds"] > 1).any() else None  # else = the means
    best_single = best_single_level(coll.ref_agg, metric)
    label = coll.data_label(data_label)
    summary.update(
        {
            "best_single": best_single,
            "references": reference_levels(coll.ref_agg, metric),
            "top_model_share": {m: {str(n): v for n, v in d.items()} for m, d in (shares or {}).items()},
            "grid": se.grid_sentence(curve["train_size"], {r.seed for r in coll.runs}),
            "interval": "percentile (conservative under censoring), paired bootstrap over test queries",
            "metric": metric,
            "split": split,
            "dataset": label,
            "encoder": coll.encoder,
            "bootstrap": None
            if data is None
            else {"n_boot": int(n_boot), "seed": int(boot_seed), "n_queries": int(len(values.prompt_ids))},
        }
    )
    fig = sample_efficiency_figure(
        curve,
        summary,
        metric_axis_label(metric),
        title=figure_title(label, coll.encoder, split),
        fit=fit,
        points=points,
        shares=shares,
    )
    save_figure(fig, paths["pdf"])
    write_csv(plot_frame(curve, table, fit, points, best_single, shares), paths["csv"])
    write_json(paths["json"], json_safe(inf_as_text(summary)))
    return summary
