"""`locus figure KIND`: figures (PDF + PNG + CSV of the plotted data) from runs' metrics.json files.

Kinds:
- ``sample-efficiency``: paper ``fig:train_sample_eff``: test routing accuracy (mean ± std over seeds)
  vs training evaluations per model, with "k× fewer samples" arrows for the reference method; also writes
  ``<stem>.json`` with the sample-efficiency factors (see :mod:`locus.experiments.sample_efficiency`).
"""
from __future__ import annotations

NAME = "figure"
HELP = "render a figure (PDF + PNG + CSV) from runs' metrics.json files"
KINDS = ("sample-efficiency",)


def add_arguments(p):
    p.add_argument("kind", choices=KINDS, help="figure")
    p.add_argument("--metrics", nargs="+", required=True, help="metrics.json files of the runs to plot")
    p.add_argument("--out", required=True, help="output .pdf (.png, .csv and .json are written beside it)")
    p.add_argument("--methods", default=None, help="comma-separated methods to plot (default: all present)")
    p.add_argument("--reference-method", default="locus", help="method whose sample efficiency is measured")
    p.add_argument("--reference-point", type=int, default=None,
                   help="training size of the reference method at which to quote the factor "
                        "(default: its measured size nearest the geometric middle of its range)")
    p.add_argument("--metric", default="routing_acc", choices=["routing_acc", "correctness_acc", "hit@3", "hit@5"])
    p.add_argument("--split", default="test", choices=["test", "val"])
    p.add_argument("--data-label", default=None, help="data set name for the figure title")


def run(args) -> int:
    import pandas as pd

    from locus.atomic import write_json
    from locus.commands.table import split_methods
    from locus.errors import ConfigError
    from locus.experiments import sample_efficiency as se
    from locus.experiments.comparison import collect
    from locus.render import write_csv
    from locus.render.figures import output_paths, sample_efficiency_figure, save_figure

    methods = split_methods(args.methods)
    if methods and args.reference_method not in methods:
        raise ConfigError(f"--reference-method {args.reference_method} is not among --methods {args.methods}")
    coll = collect(args.metrics, args.split, methods, metrics=(args.metric,))
    curve = se.curves(coll.method_rows, args.metric)
    table, summary = se.efficiency(curve, args.reference_method, args.reference_point)
    summary.update({"metric": args.metric, "split": args.split, "dataset": args.data_label or coll.dataset,
                    "encoder": coll.encoder})

    paths = output_paths(args.out)
    label = {"routing_acc": "Routing accuracy (%)", "correctness_acc": "Correctness prediction accuracy (%)"}
    fig = sample_efficiency_figure(curve, summary, label.get(args.metric, f"{args.metric} (%)"),
                                   title=f"{args.data_label or coll.dataset} ({coll.encoder}), {args.split}")
    save_figure(fig, paths["pdf"])
    data = pd.concat([curve.assign(kind="curve"),
                      table.rename(columns={"n": "reference_curve_n"}).assign(kind="factor")], ignore_index=True)
    cols = ["kind", "method", "train_size", "mean", "std", "n_seeds", "reference_curve_n", "target",
            "n_reference", "n_method", "factor", "status"]
    data = data[cols].astype({"train_size": "Int64", "n_seeds": "Int64"})
    write_csv(data, paths["csv"])
    write_json(paths["json"], _finite(summary))
    for method, info in summary["methods"].items():
        at, best = info["at_reference_point"], info["max"]
        print(f"{args.reference_method} vs {method}: at n={at['n']} ({100 * at['target']:.2f}%) "
              f"factor {at['factor']:.2f} ({at['status']}); max exact factor "
              + (f"{best['factor']:.2f} at {100 * best['target']:.2f}%" if best else "n/a"))
    return 0


def _finite(obj):
    """JSON-safe copy: NaN/inf -> None."""
    import math

    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
