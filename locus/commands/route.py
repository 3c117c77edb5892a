"""`locus route`: rank a run's models for query texts by predicted probability of a correct answer."""

from __future__ import annotations

from pathlib import Path

from locus.cli import comma_list, existing_dir, positive_int
from locus.constants import PRECISIONS

NAME = "route"
HELP = "rank the models of a trained run for one or more queries (predicted probability of a correct answer)"


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


def run(args) -> int:
    from locus.inference import route

    rankings = route(
        args.checkpoint,
        args.queries,
        file=args.file,
        models=args.models,
        top_k=args.top_k,
        encoder=args.encoder,
        precision=args.precision,
    )
    for qi, r in enumerate(rankings, 1):
        short = r.query if len(r.query) <= 70 else r.query[:67] + "..."
        print(f"query {qi}: {short}")
        for rank, (mid, name, p) in enumerate(r.models, 1):
            print(f"  {rank:>2}. p={p:.3f}  {mid:>4}  {name}")
    return 0
