"""`locus table KIND`: LaTeX tables (booktabs) + CSV of the numbers from runs' metrics.json files.

Kinds (paper layouts):
- ``routing``: ``tab:concise_routing_correctness``; rows = methods + Oracle / Best single / Random,
  columns = routing then correctness accuracy at each training size;
- ``routing-by-dataset`` / ``correctness-by-dataset``: appendix B ``tab:routing_acc_by_dataset_full`` /
  ``tab:correctness_pred_by_dataset_full``; rows = approach × training size, columns = Overall + benchmarks.

The CSV (same stem as --out, ``.csv``) holds every printed number (percentages) and its emphasis.
"""
from __future__ import annotations

from pathlib import Path

NAME = "table"
HELP = "render a comparison table (LaTeX + CSV) from runs' metrics.json files"
KINDS = ("routing", "routing-by-dataset", "correctness-by-dataset")
LABELS = {"routing": "tab:concise_routing_correctness", "routing-by-dataset": "tab:routing_acc_by_dataset_full",
          "correctness-by-dataset": "tab:correctness_pred_by_dataset_full"}


def add_arguments(p):
    p.add_argument("kind", choices=KINDS, help="table layout")
    p.add_argument("--metrics", nargs="+", required=True, help="metrics.json files of the runs to compare")
    p.add_argument("--out", required=True, help="output .tex (the CSV is written beside it)")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods, in row order (default: all present, LOCUS first)")
    p.add_argument("--data-label", default=None,
                   help="data set name for the caption (default: the runs' dataset path)")
    p.add_argument("--split", default="test", choices=["test", "val"], help="which split's metrics (default test)")
    p.add_argument("--label", default=None, help="LaTeX \\label (default: the paper's label for the kind)")


def split_methods(text: str | None):
    return [m.strip() for m in text.split(",") if m.strip()] if text else None


def caption(kind: str, coll, data_label: str | None, split: str) -> str:
    from locus.render.latex import escape

    data = escape(data_label or coll.dataset)
    what = {"routing": "Overall routing and correctness prediction accuracy (\\%)",
            "routing-by-dataset": "Overall and per-benchmark routing accuracy (\\%)",
            "correctness-by-dataset": "Overall and per-benchmark correctness prediction accuracy (\\%)"}[kind]
    lo, hi = coll.seeds
    seeds = (f"Mean{{\\scriptsize$\\pm$}}std over {lo}--{hi} seeds." if lo != hi else
             f"Mean{{\\scriptsize$\\pm$}}std over {hi} seeds." if hi > 1 else "One seed per cell.")
    emph = ("\\textbf{Best} and \\underline{second best} approach in each column"
            if kind == "routing" else "\\textbf{Best} and \\underline{second best} approach per training size")
    refs = " (reference rows excluded)" if kind != "correctness-by-dataset" else ""
    return (f"{what} on the {split} split of the data set {data} (query encoder: {escape(coll.encoder)}), by "
            f"approach and number of training evaluations per model. {emph}{refs}. {seeds}")


def run(args) -> int:
    from locus.atomic import write_text
    from locus.experiments.comparison import collect
    from locus.render import latex
    from locus.render import write_csv

    from locus.errors import ConfigError

    if Path(args.out).suffix.lower() != ".tex":
        raise ConfigError(f"--out {args.out}: expected a .tex path (the CSV is written beside it)")
    metric = "correctness_acc" if args.kind == "correctness-by-dataset" else "routing_acc"
    coll = collect(args.metrics, args.split, split_methods(args.methods))
    label = args.label or LABELS[args.kind]
    cap = caption(args.kind, coll, args.data_label, args.split)
    if args.kind == "routing":
        tex, numbers = latex.routing_table(coll.method_agg, coll.ref_agg, coll.methods, coll.sizes, cap, label)
    else:
        refs = coll.ref_agg if metric == "routing_acc" else None
        tex, numbers = latex.by_dataset_table(coll.method_agg, metric, coll.methods, coll.sizes, coll.benchmarks,
                                              cap, label, ref_agg=refs)
    out = Path(args.out)
    write_text(out, tex)
    write_csv(numbers, out.with_suffix(".csv"))
    return 0
