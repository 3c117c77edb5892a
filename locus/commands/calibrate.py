"""`locus calibrate`: fit a run's map from logits to calibrated P(correct) on its validation pairs."""

from __future__ import annotations

from locus.cli import add_data_argument, add_out_argument, existing_dir, output_file

NAME = "calibrate"
HELP = (
    "fit a trained run's calibration (identity, temperature or isotonic, chosen by cross-validated "
    "log-loss on validation pairs only) and write it to RUN/calibration.json"
)


def add_arguments(parser) -> None:
    parser.add_argument("--run", required=True, type=existing_dir("run directory"), help="a finished run directory")
    add_data_argument(
        parser,
        help="canonical data set the run was trained on, for the validation labels (default: the one the run records)",
    )
    add_out_argument(
        parser,
        output_file((".json",)),
        required=False,
        help="output JSON (default RUN/calibration.json, where readers of the run look for it)",
    )


def run(args) -> int:
    from locus.experiments.calibration import calibrate_run

    cal, report, out = calibrate_run(args.run, args.data, args.out)
    print(f"wrote {out} ({cal.kind}; {report['n_pairs']} validation pairs, {report['n_groups']} queries)")
    return 0
