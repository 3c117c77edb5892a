"""`locus calibration-report`: raw vs calibrated correctness probabilities of runs on the test split."""

from __future__ import annotations

from locus.cli import (
    add_bootstrap_arguments,
    add_data_argument,
    add_out_argument,
    comma_list,
    existing_dir,
    int_at_least,
    output_file,
)
from locus.constants import BOOTSTRAP_RESAMPLES

NAME = "calibration-report"
HELP = (
    "ECE, Brier and log-loss of calibrated runs (raw vs calibrated, paired bootstrap over test queries): "
    "a table (LaTeX + CSV) and a reliability diagram (PDF + PNG + CSV)"
)


def add_arguments(p) -> None:
    p.add_argument(
        "--runs",
        nargs="+",
        required=True,
        type=existing_dir("run directory"),
        help="run directories of one training size, each with its calibration.json (`locus calibrate`)",
    )
    add_data_argument(p, "the runs' canonical data set", required=True)
    add_out_argument(p, output_file((".tex",)), "output table .tex (the CSV beside it)")
    p.add_argument(
        "--figure", required=True, type=output_file((".pdf",)), help="reliability diagram .pdf (PNG and CSV beside it)"
    )
    p.add_argument("--methods", type=comma_list, default=None, help="methods in row order (default: all present)")
    p.add_argument("--data-label", default=None, help="data set name for the caption (default: the directory name)")
    p.add_argument("--bins", type=int_at_least(1), default=15, help="equal-mass bins of the ECE (default 15)")
    add_bootstrap_arguments(p, BOOTSTRAP_RESAMPLES)


def run(args) -> int:
    from locus.experiments import calibration
    from locus.experiments.bootstrap import Settings

    settings = Settings(n_resamples=args.bootstrap_resamples, seed=args.bootstrap_seed, confidence=args.confidence)
    calibration.write(args.runs, args.data, args.out, args.figure, args.methods, args.data_label, args.bins, settings)
    print(f"wrote {args.out} (.csv) and {args.figure} (.png, .csv)")
    return 0
