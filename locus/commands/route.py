"""`locus route`: rank a run's models for query texts by predicted probability of a correct answer, and say
which model each query goes to: the most likely one (default), selective routing (``--alpha``: a threshold
certified on the run's validation split, else ``--fallback``), or cost-aware routing (``--cost-weight`` /
``--min-prob``, costs from the data set's models). ``--calibrated`` uses the run's calibration.json.
Selective routing certifies tau as the selective-routing table does (`locus decisions selective`, the same
``--alphas`` grid): with ``--calibrated`` its tau is the table's for the same run."""

from __future__ import annotations

import argparse
from pathlib import Path

from locus.cli import add_alphas_argument, add_data_argument, comma_list, existing_dir, only_with, positive_int
from locus.constants import PRECISIONS

NAME = "route"
HELP = "rank the models of a trained run for one or more queries (predicted probability of a correct answer)"


def _level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {value}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {value}")
    return value


def _probability(text: str) -> float:
    value = _non_negative(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def add_arguments(parser) -> None:
    parser.add_argument(
        "--checkpoint", required=True, type=existing_dir("run directory"), help="a finished run directory"
    )
    parser.add_argument("queries", nargs="*", help="query texts")
    parser.add_argument("--file", type=Path, default=None, help="UTF-8 text file with one query per line")
    parser.add_argument("--top-k", type=positive_int, default=3, help="models shown per query (>= 1)")
    parser.add_argument(
        "--models", type=comma_list, default=None, help="comma list of candidate model ids or names (default: all)"
    )
    parser.add_argument("--encoder", default=None, help="sentence encoder (default: the run's encoder)")
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=None,
        help="arithmetic of the forward pass (LOCUS runs; default: the run's precision parameter, "
        "float32 unless trained otherwise); bfloat16 is faster on CPUs with AVX512-BF16/AMX",
    )
    parser.add_argument(
        "--calibrated",
        action="store_true",
        help="probabilities from the run's calibration.json (written by `locus calibrate --run RUN`)",
    )
    parser.add_argument(
        "--alpha",
        type=_level,
        default=None,
        help="selective routing: the most likely model answers when its probability reaches a threshold "
        "certified now on the run's validation split (Learn-then-Test) to keep its error rate <= ALPHA",
    )
    parser.add_argument("--delta", type=_level, default=0.1, help="selective: allowed failure probability (0.1)")
    add_alphas_argument(
        parser,
        "selective: the risk levels of the selective-routing table (`locus decisions selective --alphas`, "
        "config decisions.alphas); thresholds routing fewer validation queries than the smallest of them and "
        "ALPHA can certify are skipped, so tau is the table's (default 0.05,0.1,0.2,0.3)",
    )
    parser.add_argument(
        "--fallback",
        default="best_single",
        help="selective: where the other queries go: best_single (best on validation), abstain or a model name",
    )
    parser.add_argument(
        "--cost-weight", type=_non_negative, default=None, help="cost-aware: the model maximising P - LAMBDA x cost"
    )
    parser.add_argument(
        "--min-prob", type=_probability, default=None, help="cost-aware: the cheapest model with P >= p"
    )
    add_data_argument(
        parser,
        help="the run's data set (validation labels for --alpha, model costs for --cost-weight / --min-prob: its "
        "`cost` column, else params_b); default: the directory recorded in the run's config.json",
    )


def run(args) -> int:
    from locus.inference import Policy, decide, route

    # options of one policy, given without it, would be ignored silently
    only_with(args, ("delta", "fallback", "alphas"), args.alpha is not None, "with --alpha", "give --alpha ALPHA")
    chosen = args.alpha is not None or args.cost_weight is not None or args.min_prob is not None
    only_with(args, ("data",), chosen, "with a routing policy (--alpha, --cost-weight or --min-prob)")
    policy = Policy(
        args.alpha, args.delta, args.fallback, args.cost_weight, args.min_prob, args.data, tuple(args.alphas)
    )
    common = dict(
        file=args.file,
        models=args.models,
        top_k=args.top_k,
        encoder=args.encoder,
        precision=args.precision,
        calibrated=args.calibrated,
    )
    if policy.kind() == "argmax":  # the ranking alone: the first model is the one routed to
        if args.calibrated:
            print(f"probabilities: calibrated ({args.checkpoint}/calibration.json)")
        for qi, r in enumerate(route(args.checkpoint, args.queries, **common), 1):
            _print_ranking(qi, r.query, r.models)
        return 0
    decisions, note = decide(args.checkpoint, args.queries, policy, **common)
    print(note)
    for qi, d in enumerate(decisions, 1):
        _print_ranking(qi, d.query, d.ranking.models)
        chosen = "abstain" if d.chosen is None else f"{d.chosen[1]} (id {d.chosen[0]}, P(correct) {d.chosen[2]:.3f})"
        print(f"  -> {chosen} [{d.reason}]")
    return 0


def _print_ranking(qi: int, query: str, models) -> None:
    short = query if len(query) <= 70 else query[:67] + "..."
    print(f"query {qi}: {short}")
    for rank, (mid, name, p) in enumerate(models, 1):
        print(f"  {rank:>2}. p={p:.3f}  {mid:>4}  {name}")
