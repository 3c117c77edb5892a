"""Comparison tables from runs' ``metrics.json`` (``locus table KIND``): which metric each kind shows,
its caption, and the LaTeX + CSV written (layouts in :mod:`locus.render.latex`).

Kinds (paper layouts):

- ``routing``: ``tab:concise_routing_correctness``; rows = methods + Oracle / Best single / Random,
  columns = routing then correctness accuracy at each training size;
- ``routing-by-dataset`` / ``correctness-by-dataset``: appendix B ``tab:routing_acc_by_dataset_full`` /
  ``tab:correctness_pred_by_dataset_full``; rows = approach × training size, columns = Overall + benchmarks.

The CSV (same stem as the .tex, ``.csv``) holds every printed number (percentages) and its emphasis.
Captions name the data set by the label given (the workflow passes each data set's own label), else by
the data set's name recorded in the runs.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from locus.experiments.comparison import Collection, collect
from locus.outputs import check_outputs
from locus.render import latex, write_csv
from locus.render.labels import escape

KINDS = ("routing", "routing-by-dataset", "correctness-by-dataset")
LABELS = {"routing": "tab:concise_routing_correctness", "routing-by-dataset": "tab:routing_acc_by_dataset_full",
          "correctness-by-dataset": "tab:correctness_pred_by_dataset_full"}
METRIC = {"routing": "routing_acc", "routing-by-dataset": "routing_acc", "correctness-by-dataset": "correctness_acc"}
WHAT = {"routing": "Overall routing and correctness prediction accuracy (\\%)",
        "routing-by-dataset": "Overall and per-benchmark routing accuracy (\\%)",
        "correctness-by-dataset": "Overall and per-benchmark correctness prediction accuracy (\\%)"}


def seeds_sentence(seeds: tuple[int, int]) -> str:
    """How many seeds each cell averages, from (fewest, most)."""
    lo, hi = seeds
    if lo != hi:
        return f"Mean{{\\scriptsize$\\pm$}}std over {lo}--{hi} seeds."
    return f"Mean{{\\scriptsize$\\pm$}}std over {hi} seeds." if hi > 1 else "One seed per cell."


def caption(kind: str, data_label: str, encoder: str, split: str, seeds: tuple[int, int]) -> str:
    """The table caption (LaTeX); `data_label` and `encoder` are plain text (escaped here)."""
    emph = ("\\textbf{Best} and \\underline{second best} approach in each column"
            if kind == "routing" else "\\textbf{Best} and \\underline{second best} approach per training size")
    refs = " (reference rows excluded)" if kind != "correctness-by-dataset" else ""
    return (f"{WHAT[kind]} on the {split} split of the data set {escape(data_label)} (query encoder: "
            f"{escape(encoder)}), by approach and number of training evaluations per model. {emph}{refs}. "
            f"{seeds_sentence(seeds)}")


def render(kind: str, coll: Collection, data_label: str | None = None, split: str = "test",
           label: str | None = None) -> tuple[str, pd.DataFrame]:
    """(LaTeX, numbers) of one table kind from collected runs."""
    cap = caption(kind, coll.data_label(data_label), coll.encoder, split, coll.seeds)
    label = label or LABELS[kind]
    if kind == "routing":
        return latex.routing_table(coll.method_agg, coll.ref_agg, coll.methods, coll.sizes, cap, label)
    metric = METRIC[kind]
    refs = coll.ref_agg if metric == "routing_acc" else None
    return latex.by_dataset_table(coll.method_agg, metric, coll.methods, coll.sizes, coll.benchmarks, cap, label,
                                  ref_agg=refs)


def write_table(kind: str, metrics, out, methods=None, data_label: str | None = None, split: str = "test",
                label: str | None = None) -> dict[str, Path]:
    """Read the metrics files, render `kind` and write ``out`` (.tex) and the CSV beside it."""
    out = Path(out)
    paths = {"tex": out, "csv": out.with_suffix(".csv")}
    check_outputs(paths.values())
    coll = collect(metrics, split, methods)
    tex, numbers = render(kind, coll, data_label, split, label)
    from locus.atomic import write_text

    write_text(paths["tex"], tex)
    write_csv(numbers, paths["csv"])
    return paths
