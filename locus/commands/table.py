"""`locus table KIND`: LaTeX tables (booktabs) + CSV of the numbers from runs' metrics.json files.

Kinds, captions and layouts: :mod:`locus.experiments.tables`.
"""
from __future__ import annotations

from locus.cli import comma_list, output_file

NAME = "table"
HELP = "render a comparison table (LaTeX + CSV) from runs' metrics.json files"
KINDS = ("routing", "routing-by-dataset", "correctness-by-dataset")  # = locus.experiments.tables.KINDS


def add_arguments(p):
    p.add_argument("kind", choices=KINDS, help="table layout")
    p.add_argument("--metrics", nargs="+", required=True, help="metrics.json files of the runs to compare")
    p.add_argument("--out", required=True, type=output_file((".tex",)),
                   help="output .tex (the CSV is written beside it)")
    p.add_argument("--methods", type=comma_list, default=None,
                   help="comma-separated methods, in row order (default: all present, LOCUS first)")
    p.add_argument("--data-label", default=None,
                   help="data set name for the caption (default: the data set's name recorded in the runs)")
    p.add_argument("--split", default="test", choices=["test", "val"], help="which split's metrics (default test)")
    p.add_argument("--label", default=None, help="LaTeX \\label (default: the paper's label for the kind)")


def run(args) -> int:
    from locus.experiments.tables import write_table

    paths = write_table(args.kind, args.metrics, args.out, methods=args.methods, data_label=args.data_label,
                        split=args.split, label=args.label)
    print(f"wrote {paths['tex']} and {paths['csv']}")
    return 0
