"""`locus summary --data DIR --out FILE.md [--label TEXT]`: Markdown summary of a canonical data set.

The title shows ``--label`` (default: the data set directory's name)."""

from __future__ import annotations

from pathlib import Path

from locus.cli import add_data_argument, add_out_argument, output_file
from locus.constants import DEFAULT_DUPLICATE_POLICY, DUPLICATE_POLICIES

NAME = "summary"
HELP = "write a Markdown summary of a data set (sizes, accuracies, oracle, best single model)"


def add_arguments(p):
    add_data_argument(p, required=True, checked=False)  # the reader's message says how to build one
    add_out_argument(p, output_file(), "output Markdown file")
    p.add_argument("--label", default=None, help="data set label shown in the title (default: the directory name)")
    p.add_argument(
        "--duplicates",
        default=DEFAULT_DUPLICATE_POLICY,
        choices=DUPLICATE_POLICIES,
        help="policy for several scores of one (prompt, model) in a data set written by hand",
    )


def run(args) -> int:
    from locus.atomic import write_text
    from locus.data.canonical import read_dataset
    from locus.data.summary import render_summary

    data = read_dataset(args.data, duplicates=args.duplicates)
    label = args.label if args.label and args.label.strip() else Path(args.data).resolve().name
    text = render_summary(data, label)
    write_text(args.out, text)
    print(text)
    return 0
