"""`locus onboarding-rivals`: held-out models onboarded from k of their evaluations, without retraining, by
LOCUS's one forward pass (a run trained without them) and by training-free rivals (mean accuracy, cluster
shrinkage, cluster error vector, kNN on agreement); metrics on their test queries with bootstrap intervals.
:mod:`locus.experiments.onboarding_rivals` (methods: :mod:`locus.onboarding_rivals`)."""

from __future__ import annotations

from locus.cli import (
    add_bootstrap_arguments,
    add_seed_argument,
    add_threads_argument,
    comma_list,
    existing_dir,
    existing_file,
    output_file,
    size_list,
)
from locus.constants import BOOTSTRAP_RESAMPLES

NAME = "onboarding-rivals"
HELP = "LOCUS's one-pass onboarding of held-out models vs training-free rivals, by k (LaTeX table + CSV, figure)"
# the library's vocabularies, written out: building the parser imports no numeric library (tests check they match
# locus.onboarding_rivals.names(), locus.experiments.onboarding_rivals.DEFAULT_SIZES and .POOLS)
METHODS = (
    "locus",
    "cluster_shrinkage",
    "cluster_error_vector",
    "knn_agreement",
    "embedllm_fit",
    "irt_net_fit",
    "mean_accuracy",
)
DEFAULT_SIZES = (8, 16, 32, 64, 128, 256)
POOLS = ("split", "run")
SELECTORS = ("random", "stratified", "anchor")  # locus.experiments.onboarding_rivals.STATIC_SELECTORS


def add_arguments(p) -> None:
    p.add_argument(
        "--run",
        required=True,
        nargs="+",
        type=existing_dir("run directory"),
        help="LOCUS run(s) trained without the held-out models (locus train --hold-out), one per repeat; each "
        "run's models are that repeat's pool",
    )
    p.add_argument("--data", required=True, type=existing_dir("data set directory"), help="the run's data set")
    p.add_argument("--encodings", required=True, type=existing_file("encodings file"), help="the run's query encodings")
    p.add_argument(
        "--held-out",
        "--hold-out",
        dest="hold_out",
        type=lambda text: None if text.strip() == "column" else comma_list(text),
        default=None,
        metavar="column|untrained|NAME,NAME,...",
        help="the held-out models: 'column' = the data set's held_out column (default), 'untrained' = each run's "
        "own (the models it did not train on: one held-out set per repeat), else names",
    )
    p.add_argument(
        "--selector",
        choices=SELECTORS,
        default=None,
        help="also onboard every method from the k queries this active-onboarding selector picks from the pool's "
        "information (a second row per method)",
    )
    p.add_argument(
        "--k",
        type=size_list,
        default=list(DEFAULT_SIZES),
        help="evaluations each held-out model is onboarded from (training-split queries; all it has when fewer)",
    )
    add_seed_argument(p, help="seed of the draws, clusters and validation models")
    p.add_argument(
        "--methods",
        type=comma_list,
        default=None,
        help=f"comma list of onboarding methods (of {','.join(METHODS)}; default: LOCUS, the training-free ones and "
        "the embedding fits given --fit-runs)",
    )
    p.add_argument(
        "--fit-runs",
        nargs="+",
        default=[],
        type=existing_dir("run directory"),
        help="EmbedLLM / IRT-Net runs trained without the same held-out models as a --run (one per method and "
        "repeat): their network frozen, a new model's vector is fitted to its k scores (embedllm_fit, irt_net_fit)",
    )
    p.add_argument(
        "--pool",
        choices=POOLS,
        default="split",
        help="the pool's scores: every training-split score of the run's models (split, default) or exactly the "
        "run's training evaluations (run)",
    )
    p.add_argument(
        "--calibrated",
        action="store_true",
        help="LOCUS's P(correct) through the run's calibration.json (locus calibrate) instead of the sigmoid",
    )
    add_bootstrap_arguments(p, BOOTSTRAP_RESAMPLES)
    p.add_argument(
        "--out", required=True, type=output_file((".tex",)), help="LaTeX table .tex (the tidy .csv beside it)"
    )
    p.add_argument("--figure", default=None, type=output_file((".pdf",)), help="figure .pdf (.png beside it)")
    add_threads_argument(p)
    p.add_argument("--data-label", default=None, help="data set name for the caption and title")


def run(args) -> int:
    from locus.experiments.bootstrap import Settings
    from locus.experiments.onboarding_rivals import write_onboarding_rivals
    from locus.onboarding_rivals import method_class
    from locus.params import set_threads

    for name in args.methods or ():
        method_class(name)  # an unknown name: one line before any work
    set_threads(args.threads)
    s = write_onboarding_rivals(
        args.run,
        args.data,
        args.encodings,
        args.out,
        args.k,
        seed=args.seed,
        held_out_names=args.hold_out,
        methods=args.methods,
        figure=args.figure,
        pool=args.pool,
        boot=Settings(args.bootstrap_resamples, args.bootstrap_seed, args.confidence),
        data_label=args.data_label,
        calibrated=args.calibrated,
        selector=args.selector,
        progress=lambda line: print(line, flush=True),
        fit_runs=args.fit_runs,
    )
    frame = s["comparison"].frame
    cells = frame[(frame["metric"] == "correctness_acc") & (frame["draw"] == "random")].copy()
    cells["cell"] = [
        f"{100 * v:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
        for v, lo, hi in cells[["value", "ci_low", "ci_high"]].to_numpy()
    ]
    order = {m: i for i, m in enumerate(s["comparison"].methods)}
    table = cells.pivot(index="method", columns="k", values="cell")
    table = table.loc[sorted(table.index, key=lambda m: order.get(m, len(order)))]
    print(f"correctness accuracy (%) of {len(s['held_out'])} held-out models onboarded from k evaluations:")
    print(table.to_string())
    print(f"CPU time: {s['cpu_seconds']:.1f} s")
    print(f"wrote {args.out} and {args.out.with_suffix('.csv')}" + (f" and {args.figure}" if args.figure else ""))
    return 0
