"""`locus embed`: embed a new model from its scored prompts with a trained LOCUS run (one forward pass)."""
from __future__ import annotations

from pathlib import Path

NAME = "embed"
HELP = "embed a new model from its scored prompts (CSV/Parquet with prompt,score) and list its nearest models"


def add_arguments(parser) -> None:
    parser.add_argument("--checkpoint", required=True, type=Path, help="a finished LOCUS run directory")
    parser.add_argument("--scores", required=True, type=Path, help="CSV or Parquet with columns prompt, score in [0, 1]")
    parser.add_argument("--encoder", default=None, help="sentence encoder (default: the run's encoder)")
    parser.add_argument("--out", type=Path, default=None, help="write the embedding to this Parquet file")
    parser.add_argument("--top", type=int, default=5, help="number of nearest pool models to print (cosine)")
    parser.add_argument("--name", default="new-model", help="name stored with --out")


def read_score_file(path: Path):
    """(prompts list, scores float32) from a CSV/Parquet file; DataError names the file and rows."""
    import numpy as np
    import pandas as pd

    from locus.errors import DataError

    if not path.is_file():
        raise DataError(f"{path}: file not found; give a CSV or Parquet file with columns prompt, score.")
    try:
        df = pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else pd.read_csv(path)
    except Exception as exc:  # pandas/pyarrow raise many types
        raise DataError(f"{path}: not a readable CSV/Parquet file ({exc}).") from exc
    missing = [c for c in ("prompt", "score") if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(df.columns)}. Needed: prompt, score.")
    if len(df) == 0:
        raise DataError(f"{path}: no rows; give at least one scored prompt (more gives a better embedding).")
    empty = df["prompt"].isna() | (df["prompt"].astype(str).str.strip() == "")
    if empty.any():
        rows = (np.flatnonzero(empty.to_numpy()) + 2).tolist()[:5]
        raise DataError(f"{path}: empty prompt in row(s) {rows} (1 = header); fill them in or drop them.")
    score = pd.to_numeric(df["score"], errors="coerce").to_numpy(np.float64)
    bad = ~((score >= 0) & (score <= 1))
    if bad.any():
        rows = (np.flatnonzero(bad) + 2).tolist()[:5]
        raise DataError(f"{path}: score must be a number in [0, 1] (1 = correct); row(s) {rows} (1 = header) "
                        f"have {df['score'].to_numpy()[bad][:5].tolist()}.")
    return df["prompt"].astype(str).tolist(), score.astype(np.float32)


def nearest(z, pool_ids, pool_z, top: int):
    """[(model_id, cosine similarity)] of the `top` pool models closest to z."""
    import numpy as np
    zn = z / max(float(np.linalg.norm(z)), 1e-12)
    pn = pool_z / np.maximum(np.linalg.norm(pool_z, axis=1, keepdims=True), 1e-12)
    sim = pn @ zn
    order = np.argsort(-sim, kind="stable")[:max(0, top)]
    return [(int(pool_ids[i]), float(sim[i])) for i in order]


def run(args) -> int:
    import numpy as np

    from locus import checkpoint as ckpt
    from locus.data.encodings import write_vectors
    from locus.errors import DataError

    run_dir = ckpt.load_checkpoint(args.checkpoint)
    if not hasattr(run_dir.method, "embed"):
        raise DataError(f"{args.checkpoint}: method {run_dir.method.name!r} cannot embed new models.")
    prompts, scores = read_score_file(args.scores)
    encoder = args.encoder or run_dir.encoder
    vectors = ckpt.check_dim(ckpt.encode_queries(encoder, prompts), run_dir, str(args.scores))
    z = run_dir.method.embed(vectors, scores)
    pool_ids, pool_z = run_dir.method.model_embeddings()
    print(f"embedded {len(prompts)} scored prompts (mean score {float(np.mean(scores)):.3f}) into a "
          f"{len(z)}-d model embedding with {args.checkpoint}")
    if args.top > 0:
        print(f"nearest pool models (cosine similarity):")
        for rank, (mid, sim) in enumerate(nearest(z, pool_ids, pool_z, args.top), 1):
            print(f"  {rank:>2}. {sim:+.4f}  {mid:>4}  {run_dir.name(mid)}")
    if args.out:
        write_vectors(args.out, "model_id", [-1], z[None, :],
                      {"name": args.name, "checkpoint": str(args.checkpoint), "encoder": encoder,
                       "n_evaluations": len(prompts)})
        print(f"wrote {args.out}")
    return 0
