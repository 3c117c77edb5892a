"""`locus route`: rank a run's models for query texts by predicted probability of a correct answer."""
from __future__ import annotations

from pathlib import Path

NAME = "route"
HELP = "rank the models of a trained run for one or more queries (predicted probability of a correct answer)"


def add_arguments(parser) -> None:
    parser.add_argument("--checkpoint", required=True, type=Path, help="a finished run directory")
    parser.add_argument("queries", nargs="*", help="query texts")
    parser.add_argument("--file", type=Path, default=None, help="text file with one query per line")
    parser.add_argument("--top-k", type=int, default=3, help="models shown per query")
    parser.add_argument("--models", default=None, help="comma list of candidate model ids or names (default: all)")
    parser.add_argument("--encoder", default=None, help="sentence encoder (default: the run's encoder)")


def read_queries(args) -> list[str]:
    from locus.errors import DataError
    queries = list(args.queries)
    if args.file is not None:
        if not args.file.is_file():
            raise DataError(f"{args.file}: file not found; give a text file with one query per line.")
        queries += [line.strip() for line in args.file.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [q for q in queries if q.strip()]
    if not queries:
        raise DataError("route: no query given; pass query texts or --file queries.txt (one per line).")
    return queries


def run(args) -> int:
    import numpy as np

    from locus import checkpoint as ckpt

    run_dir = ckpt.load_checkpoint(args.checkpoint)
    queries = read_queries(args)
    candidates = run_dir.resolve_models(args.models)
    vectors = ckpt.check_dim(ckpt.encode_queries(args.encoder or run_dir.encoder, queries), run_dir, "route")
    logits = run_dir.method.predict_logits(vectors, candidates)
    prob = 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -40, 40)))
    k = max(1, min(args.top_k, len(candidates)))
    for qi, text in enumerate(queries):
        order = np.argsort(-logits[qi], kind="stable")[:k]
        short = text if len(text) <= 70 else text[:67] + "..."
        print(f"query {qi + 1}: {short}")
        for rank, j in enumerate(order, 1):
            print(f"  {rank:>2}. p={prob[qi, j]:.3f}  {int(candidates[j]):>4}  {run_dir.name(candidates[j])}")
    return 0
