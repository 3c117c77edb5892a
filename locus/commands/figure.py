"""`locus figure KIND`: figures (PDF + PNG + CSV of the plotted data) from runs' metrics.json files.

Kinds and what each writes: :mod:`locus.experiments.figures`. ``sample-efficiency`` takes the runs as
``--runs`` (run directories) or ``--metrics`` (their metrics.json files), and ``--data`` (the canonical
data set the runs were trained on) for the paired bootstrap intervals of its factors; without ``--data``
the factors have no interval and none is annotated.
"""

from __future__ import annotations

from locus.cli import (
    add_data_argument,
    add_out_argument,
    add_seed_argument,
    comma_list,
    int_at_least,
    only_with,
    output_file,
)
from locus.constants import FIGURE_KINDS, SCORED_SPLITS

NAME = "figure"
HELP = "render a figure (PDF + PNG + CSV) from runs' metrics.json files"


def add_arguments(p):
    p.add_argument("kind", choices=FIGURE_KINDS, help="figure")
    p.add_argument(
        "--metrics", nargs="+", default=None, help="sample-efficiency: metrics.json files of the runs to plot"
    )
    p.add_argument(
        "--runs",
        nargs="+",
        default=None,
        help="time-to-accuracy: LOCUS run directories, one per recipe (same data, n and seed); "
        "sample-efficiency: the run directories to plot (instead of --metrics)",
    )
    add_data_argument(
        p,
        help="the canonical data set the runs were trained on. sample-efficiency: test labels of the "
        "paired bootstrap over test queries (without it the factors get no interval and no arrow); "
        "time-to-accuracy: validation labels of the best single model's level (a constant router)",
    )
    p.add_argument(
        "--n-boot",
        "--bootstrap-resamples",
        dest="n_boot",
        type=int_at_least(1),
        default=1000,
        help="sample-efficiency: bootstrap resamples of the test queries (default 1000)",
    )
    add_seed_argument(
        p,
        "--boot-seed",
        "--bootstrap-seed",
        dest="boot_seed",
        help="sample-efficiency: seed of the resampling (default 0)",
    )
    p.add_argument(
        "--benchmarks",
        nargs="+",
        default=None,
        help="time-to-accuracy: the runs' Snakemake benchmark files (peak memory), in --runs order",
    )
    p.add_argument("--reference-recipe", default="paper", help="time-to-accuracy: the recipe that sets the target")
    p.add_argument(
        "--target-fraction",
        type=float,
        default=0.99,
        help="time-to-accuracy: target = this fraction of the reference recipe's best validation hit@1",
    )
    add_out_argument(p, output_file((".pdf", ".png")), "output .pdf (.png, .csv and .json are written beside it)")
    p.add_argument(
        "--methods", type=comma_list, default=None, help="comma-separated methods to plot (default: all present)"
    )
    p.add_argument("--reference-method", default="locus", help="method whose sample efficiency is measured")
    p.add_argument(
        "--reference-point",
        type=int_at_least(1),
        default=None,
        help="training size of the reference method at which to quote the factor "
        "(default: its measured size nearest the geometric middle of its range)",
    )
    p.add_argument("--metric", default="routing_acc", choices=["routing_acc", "correctness_acc", "hit@3", "hit@5"])
    p.add_argument("--split", default="test", choices=SCORED_SPLITS)
    p.add_argument(
        "--data-label",
        default=None,
        help="data set name for the title (default: the data set's name recorded in the runs)",
    )


def run(args) -> int:
    from locus.errors import ConfigError

    # one figure's options, given to the other, would be ignored silently
    timing = args.kind == "time-to-accuracy"
    only_with(args, ("benchmarks", "reference_recipe", "target_fraction"), timing, "to time-to-accuracy")
    sample_efficiency = ("metrics", "n_boot", "boot_seed", "methods", "reference_method", "reference_point")
    only_with(args, (*sample_efficiency, "metric", "split"), not timing, "to sample-efficiency")
    if args.kind == "time-to-accuracy":
        from locus.experiments import time_to_accuracy as tta

        if not args.runs:
            raise ConfigError("locus figure time-to-accuracy needs --runs (one LOCUS run directory per recipe)")
        if not 0 < args.target_fraction <= 1:
            raise ConfigError(f"--target-fraction must be in (0, 1], got {args.target_fraction}")
        summary = tta.write(
            args.runs,
            args.out,
            benchmarks=args.benchmarks,
            reference=args.reference_recipe,
            target_fraction=args.target_fraction,
            data_label=args.data_label,
            data=args.data,
        )
        print("\n".join(tta.report_lines(summary)))
        return 0
    if not args.metrics and not args.runs:
        raise ConfigError(
            "locus figure sample-efficiency needs the runs: --runs (run directories) or --metrics "
            "(their metrics.json files)"
        )
    from locus.experiments.figures import report_lines, sample_efficiency

    summary = sample_efficiency(
        args.metrics,
        args.out,
        methods=args.methods,
        reference_method=args.reference_method,
        reference_point=args.reference_point,
        metric=args.metric,
        split=args.split,
        data_label=args.data_label,
        runs=args.runs,
        data=args.data,
        n_boot=args.n_boot,
        boot_seed=args.boot_seed,
    )
    if args.data is None:
        print("no --data: factors without bootstrap intervals (status no_interval), none annotated")
    print("\n".join(report_lines(summary)))
    return 0
