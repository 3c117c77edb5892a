"""`locus embed`: embed a new model from its scored prompts with a trained LOCUS run (one forward pass)."""

from __future__ import annotations

from pathlib import Path

from locus.cli import existing_dir, int_at_least, output_file
from locus.constants import DUPLICATE_POLICIES, PRECISIONS

NAME = "embed"
HELP = "embed a new model from its scored prompts (CSV/Parquet with prompt,score) and list its nearest models"


def add_arguments(parser) -> None:
    parser.add_argument(
        "--checkpoint", required=True, type=existing_dir("run directory"), help="a finished LOCUS run directory"
    )
    parser.add_argument(
        "--scores",
        required=True,
        type=Path,
        help="CSV or Parquet with columns prompt, score in [0, 1] (and optionally model)",
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
    parser.add_argument("--out", type=output_file(), default=None, help="write the embedding to this Parquet file")
    parser.add_argument(
        "--top",
        type=int_at_least(0, "0 = print none"),
        default=5,
        help="number of nearest pool models to print (cosine)",
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
