"""`locus figure KIND`: figures (PDF + PNG + CSV of the plotted data) from runs' metrics.json files.

Kinds and what each writes: :mod:`locus.experiments.figures`.
"""
from __future__ import annotations

from locus.cli import comma_list, int_at_least, output_file

NAME = "figure"
HELP = "render a figure (PDF + PNG + CSV) from runs' metrics.json files"
KINDS = ("sample-efficiency",)  # = locus.experiments.figures.KINDS


def add_arguments(p):
    p.add_argument("kind", choices=KINDS, help="figure")
    p.add_argument("--metrics", nargs="+", required=True, help="metrics.json files of the runs to plot")
    p.add_argument("--out", required=True, type=output_file((".pdf", ".png")),
                   help="output .pdf (.png, .csv and .json are written beside it)")
    p.add_argument("--methods", type=comma_list, default=None,
                   help="comma-separated methods to plot (default: all present)")
    p.add_argument("--reference-method", default="locus", help="method whose sample efficiency is measured")
    p.add_argument("--reference-point", type=int_at_least(1), default=None,
                   help="training size of the reference method at which to quote the factor "
                        "(default: its measured size nearest the geometric middle of its range)")
    p.add_argument("--metric", default="routing_acc", choices=["routing_acc", "correctness_acc", "hit@3", "hit@5"])
    p.add_argument("--split", default="test", choices=["test", "val"])
    p.add_argument("--data-label", default=None,
                   help="data set name for the title (default: the data set's name recorded in the runs)")


def run(args) -> int:
    from locus.experiments.figures import report_lines, sample_efficiency

    summary = sample_efficiency(args.metrics, args.out, methods=args.methods,
                                reference_method=args.reference_method, reference_point=args.reference_point,
                                metric=args.metric, split=args.split, data_label=args.data_label)
    print("\n".join(report_lines(summary)))
    return 0
