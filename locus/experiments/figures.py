"""Figures from runs' ``metrics.json`` (``locus figure KIND``): the data behind each figure, its title
and the files written (plotting in :mod:`locus.render.figures`).

Kinds:

- ``sample-efficiency``: paper ``fig:train_sample_eff``: test routing accuracy (mean ± std over seeds)
  vs training evaluations per model, with "k× fewer samples" arrows for the reference method. Writes
  ``<stem>.pdf``, ``<stem>.png``, ``<stem>.csv`` (curves and factors, :func:`plot_frame`) and
  ``<stem>.json`` (the factors, :mod:`locus.experiments.sample_efficiency`).

Titles name the data set by the label given (the workflow passes each data set's own label), else by
the data set's name recorded in the runs.
"""
from __future__ import annotations

import math

import pandas as pd

from locus.errors import ConfigError
from locus.experiments import sample_efficiency as se
from locus.experiments.comparison import collect
from locus.outputs import check_outputs

KINDS = ("sample-efficiency",)
METRICS = ("routing_acc", "correctness_acc", "hit@3", "hit@5")
CSV_COLUMNS = ["kind", "method", "train_size", "mean", "std", "n_seeds", "reference_curve_n", "target",
               "n_reference", "n_method", "factor", "status"]


def plot_frame(curve: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The CSV written beside the figure: the plotted curves (``kind = curve``) and every factor
    (``kind = factor``; ``reference_curve_n`` = the reference curve's size of that target)."""
    data = pd.concat([curve.assign(kind="curve"),
                      table.rename(columns={"n": "reference_curve_n"}).assign(kind="factor")], ignore_index=True)
    data = data.reindex(columns=CSV_COLUMNS)
    return data.astype({"train_size": "Int64", "n_seeds": "Int64"})


def json_safe(obj):
    """JSON-safe copy: NaN/inf -> None (JSON has neither)."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def report_lines(summary: dict) -> list[str]:
    """One line per compared method: the factor at the reference point and the largest exact one."""
    ref = summary["reference_method"]
    lines = []
    for method, info in summary["methods"].items():
        at, best = info["at_reference_point"], info["max"]
        lines.append(f"{ref} vs {method}: at n={at['n']} ({100 * at['target']:.2f}%) factor {at['factor']:.2f} "
                     f"({at['status']}); max exact factor "
                     + (f"{best['factor']:.2f} at {100 * best['target']:.2f}%" if best else "n/a"))
    return lines


def sample_efficiency(metrics, out, methods=None, reference_method: str = "locus",
                      reference_point: int | None = None, metric: str = "routing_acc", split: str = "test",
                      data_label: str | None = None) -> dict:
    """Read the metrics files, compute curves and factors, write the figure and its data; returns the
    summary written as JSON."""
    from locus.atomic import write_json
    from locus.render import write_csv
    from locus.render.figures import (figure_title, metric_axis_label, output_paths, sample_efficiency_figure,
                                      save_figure)

    if methods and reference_method not in methods:
        raise ConfigError(f"--reference-method {reference_method} is not among --methods {','.join(methods)}; "
                          "add it to --methods")
    paths = output_paths(out)
    check_outputs(paths.values())
    coll = collect(metrics, split, methods, metrics=(metric,))
    curve = se.curves(coll.method_rows, metric)
    table, summary = se.efficiency(curve, reference_method, reference_point)
    label = coll.data_label(data_label)
    summary.update({"metric": metric, "split": split, "dataset": label, "encoder": coll.encoder})
    fig = sample_efficiency_figure(curve, summary, metric_axis_label(metric),
                                   title=figure_title(label, coll.encoder, split))
    save_figure(fig, paths["pdf"])
    write_csv(plot_frame(curve, table), paths["csv"])
    write_json(paths["json"], json_safe(summary))
    return summary
