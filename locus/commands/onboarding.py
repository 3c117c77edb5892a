"""`locus onboarding`: new-model onboarding heat map (paper §4.2, figure sample_eff_ood_test): held-out models
embedded from k of their evaluations by LOCUS runs trained without them (and by a run of the whole pool),
correctness accuracy on their test queries. No training: :mod:`locus.experiments.onboarding`."""

from __future__ import annotations

from locus.cli import (
    add_data_argument,
    add_hold_out_argument,
    add_out_argument,
    add_seed_argument,
    add_threads_argument,
    existing_dir,
    existing_file,
    int_at_least,
    output_file,
    size_list,
)

NAME = "onboarding"
HELP = "held-out models embedded from k evaluations by LOCUS runs trained without them: heat map (PDF + PNG + CSV)"


def add_arguments(p) -> None:
    p.add_argument(
        "--runs",
        nargs="+",
        required=True,
        type=existing_dir("run directory"),
        help="LOCUS run directories: trained with --hold-out (one per number of training models) and "
        "optionally one run of the whole pool (the 'all' row)",
    )
    add_data_argument(p, "the canonical data set the runs were trained on", required=True)
    p.add_argument("--encodings", required=True, type=existing_file("encodings file"), help="the runs' query encodings")
    p.add_argument(
        "--sizes",
        type=size_list,
        default=[16, 32, 64, 128, 256, 512, 1024],
        help="evaluations each held-out model is embedded from (training-split queries)",
    )
    p.add_argument("--repeats", type=int_at_least(1), default=1, help="seeded draws per size")
    add_seed_argument(p, help="seed of the draws")
    add_hold_out_argument(p)
    add_out_argument(p, output_file((".pdf",)), "output .pdf (.png and .csv beside it)")
    add_threads_argument(p)
    p.add_argument("--data-label", default=None, help="data set name for the title")


def run(args) -> int:
    from locus.experiments.onboarding import write_onboarding
    from locus.params import set_threads

    set_threads(args.threads)
    s = write_onboarding(
        args.runs,
        args.data,
        args.encodings,
        args.out,
        args.sizes,
        repeats=args.repeats,
        seed=args.seed,
        held_out_names=args.hold_out,
        data_label=args.data_label,
    )
    table = s["grid"].pivot(index="row", columns="k", values="accuracy").reindex([r["row"] for r in s["rows"]])
    print(
        f"correctness accuracy (%) of {len(s['held_out'])} held-out models embedded from k evaluations "
        f"(rows: models in training):"
    )
    print((100 * table).round(2).to_string())
    print(f"wrote {args.out}")
    return 0
