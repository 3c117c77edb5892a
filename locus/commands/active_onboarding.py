"""`locus active-onboarding`: held-out models embedded by a LOCUS run trained without them from k queries
chosen by each selector of :mod:`locus.onboard`; accuracy and routing regret vs k (figure) and the k at which
each selector reaches random selection's accuracy at the largest k, and the k from which it stays not
significantly below it (table).
:mod:`locus.experiments.active_onboarding`."""

from __future__ import annotations

from locus.cli import (
    add_data_argument,
    add_hold_out_argument,
    add_out_argument,
    add_seed_argument,
    add_threads_argument,
    comma_list,
    existing_dir,
    existing_file,
    int_at_least,
    output_file,
    size_list,
)

NAME = "active-onboarding"
HELP = "which queries to onboard a new model with: selectors vs k, accuracy and regret (figure + table)"


def add_arguments(p) -> None:
    p.add_argument(
        "--run",
        required=True,
        type=existing_dir("run directory"),
        help="a LOCUS run trained without the held-out models",
    )
    add_data_argument(p, "the run's data set", required=True)
    p.add_argument("--encodings", required=True, type=existing_file("encodings file"), help="the run's query encodings")
    p.add_argument("--sizes", type=size_list, default=[8, 16, 32, 64, 128], help="evaluations per held-out model")
    p.add_argument(
        "--selectors",
        type=comma_list,
        default=["random", "stratified", "anchor", "disagreement", "uncertainty"],
        help="comma list of selectors (random is the reference and must be among them)",
    )
    p.add_argument("--repeats", type=int_at_least(1), default=3, help="seeds per selector and k")
    add_seed_argument(p, help="seed of the selectors and the bootstrap")
    add_hold_out_argument(p)
    add_out_argument(p, output_file((".pdf",)), "figure .pdf (.png and .csv beside it)")
    p.add_argument("--table", required=True, type=output_file((".tex",)), help="table .tex (.csv beside it)")
    add_threads_argument(p)
    p.add_argument("--data-label", default=None, help="data set name for the title")


def run(args) -> int:
    from locus.experiments.active_onboarding import write_active_onboarding
    from locus.params import set_threads

    set_threads(args.threads)
    s = write_active_onboarding(
        args.run,
        args.data,
        args.encodings,
        args.out,
        args.table,
        args.sizes,
        args.selectors,
        repeats=args.repeats,
        seed=args.seed,
        held_out_names=args.hold_out,
        data_label=args.data_label,
    )
    grid = s["grid"].pivot(index="selector", columns="k", values="accuracy")
    print(f"correctness accuracy (%) of {s['held_out']} held-out models embedded from k chosen evaluations:")
    print((100 * grid).round(2).to_string())
    print(s["table"][["selector", "k_reach", "k_not_below_onward"]].to_string(index=False))
    print(f"wrote {args.out} and {args.table}")
    return 0
