"""`locus train`: one run (method x encoder x training size x dimension x seed) -> a run directory."""
from __future__ import annotations

NAME = "train"
HELP = "fit one method on a run's training evaluations, score val/test and write the run directory"


def add_arguments(p):
    p.add_argument("--method", required=True, help="locus, embedllm, embedllm_plus, irt_net, knn_router, kmeans_router")
    p.add_argument("--data", required=True, help="canonical data set directory")
    p.add_argument("--encodings", required=True, help="query encodings Parquet")
    p.add_argument("--train-size", type=int, required=True, help="training queries per model (n)")
    p.add_argument("--dim", type=int, default=None, help="embedding dimension (overrides params 'dim'; 0 = method has none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--params", default="{}", help="method parameters as a JSON object")
    p.add_argument("--sampling", default="shared", choices=["shared", "per_model"],
                   help="shared: one training query set for all models (authors); per_model: drawn per model")
    p.add_argument("--duplicates", default="last", choices=["last", "max", "mean", "error"])
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    p.add_argument("--out", required=True, help="run directory")


def run(args) -> int:
    import torch

    from locus import runs
    from locus.commands.data import parse_params
    from locus.methods import method_class

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    params = parse_params(args.params, f"train {args.method}")
    cls = method_class(args.method)
    if args.dim is not None and "dim" in cls.defaults:
        params["dim"] = args.dim
    runs.execute(args.method, params, args.data, args.encodings, args.train_size, args.seed, args.out,
                 sampling=args.sampling, duplicates=args.duplicates)
    return 0
