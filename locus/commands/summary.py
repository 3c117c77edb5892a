"""`locus summary --data DIR --out FILE.md`: Markdown summary of a canonical data set."""
from __future__ import annotations

NAME = "summary"
HELP = "write a Markdown summary of a data set (sizes, accuracies, oracle, best single model)"


def add_arguments(p):
    p.add_argument("--data", required=True, help="canonical data set directory")
    p.add_argument("--out", required=True, help="output Markdown file")
    p.add_argument("--label", default=None, help="data set label shown in the title")
    p.add_argument("--duplicates", default="last", choices=["last", "max", "mean", "error"])


def run(args) -> int:
    from locus.atomic import write_text
    from locus.data.canonical import read_dataset
    from locus.data.summary import render_summary

    data = read_dataset(args.data, duplicates=args.duplicates)
    text = render_summary(data, args.label or args.data)
    write_text(args.out, text)
    print(text)
    return 0
