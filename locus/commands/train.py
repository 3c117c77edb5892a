"""`locus train`: one run (method x encoder x training size x dimension x seed) -> a run directory."""

from __future__ import annotations

from locus.cli import (
    add_data_argument,
    add_out_argument,
    add_seed_argument,
    add_threads_argument,
    int_at_least,
    output_dir,
    positive_int,
)
from locus.constants import DEFAULT_DUPLICATE_POLICY, DEFAULT_SAMPLING, DUPLICATE_POLICIES, SAMPLING

NAME = "train"
HELP = "fit one method on a run's training evaluations, score val/test and write the run directory"


def add_arguments(p):
    p.add_argument(
        "--method", required=True, help="a registered method (locus.methods.REGISTRY), e.g. locus or knn_router"
    )
    add_data_argument(p, required=True, checked=False)
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
    add_seed_argument(p)
    p.add_argument("--params", default="{}", help="method parameters as a JSON object")
    p.add_argument(
        "--sampling",
        default=DEFAULT_SAMPLING,
        choices=SAMPLING,
        help="shared: one training query set for all models (authors); per_model: drawn per model",
    )
    p.add_argument("--duplicates", default=DEFAULT_DUPLICATE_POLICY, choices=DUPLICATE_POLICIES)
    add_threads_argument(p, "torch threads (0: torch default)")
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
    add_out_argument(p, output_dir(), "run directory (an existing one is replaced)")


def run(args) -> int:
    from locus import runs
    from locus.params import run_params, set_threads

    set_threads(args.threads)
    hold_out = {None: False, "column": True}.get(args.hold_out)
    if hold_out is None:
        hold_out = [name.strip() for name in args.hold_out.split(",") if name.strip()]
    runs.execute(
        args.method,
        run_params(args.method, args.params, args.dim),  # checked once; training reads it by attribute
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
