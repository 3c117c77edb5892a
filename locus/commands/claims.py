"""`locus claims --results DIR [--dataset NAME] [--out results/tables/claims.tex]`: the paper's claims, each with
a verdict computed from a finished run's tables and figures (:mod:`locus.experiments.claims`). Without ``--out``
the ledger is printed as Markdown; with it, ``claims.tex`` and the ``.csv`` and ``.md`` beside it are written."""

from __future__ import annotations

from pathlib import Path

from locus.cli import add_out_argument, add_results_arguments, output_file

NAME = "claims"
HELP = "the paper's claims with verdicts computed from a finished run (holds, refuted, inconclusive, untestable)"


def add_arguments(p):
    add_results_arguments(p)
    add_out_argument(
        p,
        output_file((".tex",)),
        required=False,
        help="write this claims.tex, with claims.csv and claims.md beside it",
    )


def run(args) -> int:
    from locus.experiments import claims
    from locus.experiments.report import Source
    from locus.outputs import check_outputs

    src = Source(Path(args.results), args.dataset)
    if args.out is None:
        print(claims.markdown(claims.ledger(src)), end="")
        return 0
    out = Path(args.out)
    check_outputs([out.with_suffix(".csv"), out.with_suffix(".md")])
    frame = claims.write(src, out)
    print(f"{out}: {len(frame)} claims, " + ", ".join(f"{k} {v}" for k, v in frame["verdict"].value_counts().items()))
    return 0
