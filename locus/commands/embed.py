"""`locus embed`: onboard a new model from its scored prompts into a trained run's pool: LOCUS's embedding (one
forward pass), or a training-free method fitted on the run's pool (``--onboarding``, issue 49)."""

from __future__ import annotations

from pathlib import Path

from locus.cli import existing_dir, int_at_least, output_file
from locus.constants import DUPLICATE_POLICIES, PRECISIONS
from locus.errors import ConfigError

NAME = "embed"
# locus.onboarding_rivals.names(), written out: building the parser imports no numeric library (a test checks they match)
ONBOARDING = ("locus", "cluster_shrinkage", "cluster_error_vector", "knn_agreement", "mean_accuracy")
HELP = (
    "embed a new model from its scored prompts (CSV/TSV/Parquet with prompt,score) and list its nearest models; "
    "--onboarding onboards it with a training-free method instead"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        type=existing_dir("run directory"),
        help="a finished run directory (a LOCUS run for --onboarding locus; any run for the others)",
    )
    parser.add_argument(
        "--scores",
        required=True,
        type=Path,
        help="CSV (.tsv/.tab: tab-separated) or Parquet with columns prompt, score in [0, 1] (and optionally model)",
    )
    parser.add_argument(
        "--onboarding",
        choices=ONBOARDING,
        default="locus",
        help="how the model joins the pool: locus (default: the run's encoder, one forward pass, an embedding and "
        "its nearest models by cosine), or a training-free method fitted on the run's pool (its models' "
        "training-split scores in the run's data set; results/tables/onboarding_rivals.csv compares them): it prints the setting the "
        "method chose, the model's mean P(correct) on the data set's test queries and the share of them it would "
        "be routed (P(correct) above every model of the run's); knn_agreement lists the pool models that vote",
    )
    parser.add_argument(
        "--data",
        type=existing_dir("data set directory"),
        default=None,
        help="with a training-free --onboarding: the run's data set (default: the one the run records)",
    )
    parser.add_argument(
        "--encodings",
        type=Path,
        default=None,
        help="with a training-free --onboarding: that data set's encodings (default: "
        "results/encodings/{dataset}/{encoder}.parquet beside it)",
    )
    parser.add_argument(
        "--model",
        default=None,
        metavar="NAME",
        help="the model to embed when the score file has a 'model' column with several models",
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
        "--out",
        type=output_file(),
        default=None,
        help="Parquet file: locus writes the embedding (model_id, embedding); a training-free method the model's "
        "P(correct) on every query of the data set (prompt_id, split, p_correct)",
    )
    parser.add_argument(
        "--top",
        type=int_at_least(0, "0 = print none"),
        default=5,
        help="number of nearest pool models to print (locus: by cosine; knn_agreement: the voters)",
    )
    parser.add_argument(
        "--name", default=None, help="name stored with --out (default: --model, the file's model, or new-model)"
    )
    parser.add_argument(
        "--duplicates",
        default="error",
        choices=DUPLICATE_POLICIES,
        help="a prompt scored more than once: error (default: refuse), or keep the last / max / mean score",
    )


def run(args) -> int:
    if args.onboarding != "locus":
        return run_training_free(args)
    for option, value in (("--data", args.data), ("--encodings", args.encodings)):
        if value is not None:  # said, not silently ignored
            raise ConfigError(
                f"{option} is the pool a training-free --onboarding method is fitted on; --onboarding locus uses "
                f"the run alone: leave {option} out."
            )
    from locus.inference import embed_new_model

    r = embed_new_model(
        args.checkpoint,
        args.scores,
        encoder=args.encoder,
        model=args.model,
        top=args.top,
        out=args.out,
        name=args.name,
        precision=args.precision,
        duplicates=args.duplicates,
    )
    print(
        f"embedded {r.n_evaluations} scored prompts of {r.name} (mean score {r.mean_score:.3f}) into a "
        f"{len(r.z)}-d model embedding with {args.checkpoint}"
    )
    if r.nearest:
        print("nearest pool models (cosine similarity):")
        for rank, (mid, name, sim) in enumerate(r.nearest, 1):
            print(f"  {rank:>2}. {sim:+.4f}  {mid:>4}  {name}")
    if args.out:
        print(f"wrote {args.out}")
    return 0


def run_training_free(args) -> int:
    from locus.onboarding_serving import onboard_score_file, setting_text

    if args.precision is not None:
        raise ConfigError(
            f"--precision is the arithmetic of LOCUS's forward pass; --onboarding {args.onboarding} runs none: "
            "leave --precision out."
        )
    r = onboard_score_file(
        args.checkpoint,
        args.scores,
        args.onboarding,
        data=args.data,
        encodings=args.encodings,
        encoder=args.encoder,
        model=args.model,
        name=args.name,
        duplicates=args.duplicates,
        out=args.out,
    )
    context = r.pool.context
    chose = setting_text(r.model.details)
    print(
        f"onboarded {r.name} from {r.n_evaluations} scored prompts (mean score {r.mean_score:.3f}) with "
        f"{r.method}{f' ({chose})' if chose else ''}, fitted on the pool of {args.checkpoint}: "
        f"{len(context.model_ids)} models, {len(context.prompt_ids)} training queries of {r.pool.data_dir}"
    )
    if r.n_test:
        print(
            f"on the {r.n_test} test queries of the data set: mean P(correct) {r.mean_p_test:.3f}; routed "
            f"{r.wins_test:.1%} of them (its P(correct) above every model of the run's)"
        )
    if r.voters and args.top:
        print("pool models that vote (agreement with it on its scored prompts):")
        for rank, (mid, name, agreement) in enumerate(r.voters[: args.top], 1):
            print(f"  {rank:>2}. {agreement:.4f}  {mid:>4}  {name}")
    elif args.top:
        print(f"{r.method} gives the model no embedding: nearest pool models by cosine are --onboarding locus's")
    if args.out:
        print(f"wrote {args.out}")
    return 0
