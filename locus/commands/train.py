"""`locus train`: one run (method x encoder x training size x dimension x seed) -> a run directory."""

from __future__ import annotations

from locus.cli import int_at_least, output_dir, positive_int, threads_arg
from locus.constants import DEFAULT_DUPLICATE_POLICY, DEFAULT_SAMPLING, DUPLICATE_POLICIES, SAMPLING

NAME = "train"
HELP = "fit one method on a run's training evaluations, score val/test and write the run directory"


def add_arguments(p):
    p.add_argument(
        "--method", required=True, help="a registered method (locus.methods.REGISTRY), e.g. locus or knn_router"
    )
    p.add_argument("--data", required=True, help="canonical data set directory")
    p.add_argument("--encodings", required=True, help="query encodings Parquet")
    p.add_argument(
        "--encoder",
        default=None,
        metavar="NAME",
        help="the encoder the run is for: encodings made with another encoder are refused (the workflow passes it)",
    )
    p.add_argument("--train-size", type=positive_int, required=True, help="training queries per model (n >= 1)")
    p.add_argument(
        "--dim",
        type=int_at_least(0, "0 = the method has no embedding"),
        default=None,
        help="embedding dimension (overrides params 'dim'; 0 = method has none)",
    )
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.add_argument("--params", default="{}", help="method parameters as a JSON object")
    p.add_argument(
        "--sampling",
        default=DEFAULT_SAMPLING,
        choices=SAMPLING,
        help="shared: one training query set for all models (authors); per_model: drawn per model",
    )
    p.add_argument("--duplicates", default=DEFAULT_DUPLICATE_POLICY, choices=DUPLICATE_POLICIES)
    p.add_argument("--threads", type=threads_arg, default=0, help="torch threads (0: torch default)")
    p.add_argument(
        "--hold-out",
        default=None,
        metavar="column|NAME,NAME,...",
        help="leave these models out of training (new-model onboarding): 'column' = the data set's "
        "held_out column, else comma-separated model names",
    )
    p.add_argument(
        "--train-models",
        type=int_at_least(0, "0 = all that are not held out"),
        default=0,
        help="train on this many of the models that are not held out (seeded, nested choice)",
    )
    p.add_argument("--out", type=output_dir(), required=True, help="run directory (an existing one is replaced)")


def run(args) -> int:
    from locus import runs
    from locus.params import method_params, set_threads

    set_threads(args.threads)
    hold_out = {None: False, "column": True}.get(args.hold_out)
    if hold_out is None:
        hold_out = [name.strip() for name in args.hold_out.split(",") if name.strip()]
    runs.execute(
        args.method,
        method_params(args.method, args.params, args.dim),
        args.data,
        args.encodings,
        args.train_size,
        args.seed,
        args.out,
        sampling=args.sampling,
        duplicates=args.duplicates,
        hold_out=hold_out,
        train_models=args.train_models,
        encoder=args.encoder,
    )
    return 0
