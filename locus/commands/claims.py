"""`locus claims --results DIR [--dataset NAME] [--out results/tables/claims.tex]`: the paper's claims, each with
a verdict computed from a finished run's tables and figures (:mod:`locus.experiments.claims`). Without ``--out``
the ledger is printed as Markdown; with it, ``claims.tex`` and the ``.csv`` and ``.md`` beside it are written."""

from __future__ import annotations

from pathlib import Path

from locus.cli import add_out_argument, add_results_arguments, output_file
from locus.constants import SEED_SECTIONS

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
    for section in SEED_SECTIONS:
        p.add_argument(
            f"--{section}-seeds",
            type=seed_list,
            default=(),
            help=f"seeds of the {section} runs, comma-separated ({section}.seed, then {section}.extra_seeds): the first's "
            "outputs at the usual paths, each other's under figures/seeds/sSEED/ (and tables/seeds/sSEED/); the "
            "claims on them are judged on each (default: one seed)",
        )


def seed_list(text: str) -> tuple[int, ...]:
    import argparse

    try:
        seeds = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: seeds are non-negative integers, comma-separated") from None
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: seeds are distinct non-negative integers")
    return seeds


def run(args) -> int:
    from locus.experiments import claims
    from locus.experiments.report import Source
    from locus.outputs import check_outputs

    src = Source(Path(args.results), args.dataset)
    seeds = {section: getattr(args, f"{section}_seeds") for section in claims.SEED_SECTIONS}
    if args.out is None:
        print(claims.markdown(claims.ledger(src, seeds)), end="")
        return 0
    out = Path(args.out)
    check_outputs([out.with_suffix(".csv"), out.with_suffix(".md")])
    frame = claims.write(src, out, seeds)
    print(f"{out}: {len(frame)} claims, " + ", ".join(f"{k} {v}" for k, v in frame["verdict"].value_counts().items()))
    return 0
