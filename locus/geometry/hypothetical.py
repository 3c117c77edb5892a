"""Views that leave the reference sets alone (paper appendix E and the data-set appendix):

- **hypothetical embeddings** (``fig:hypothetical_model_embedding``): for every model of the run and every
  evaluation-set size s, s training-split queries drawn uniformly (without replacement) get synthetic
  correctness ~ Bernoulli(the model's per-benchmark training accuracy)
  (:func:`locus.geometry.views.hypothetical_labels`); the run's encoder embeds them (no training) and
  recall@k is the fraction of models whose own reference embedding is among the k nearest (cosine) of
  the pool's reference embeddings (:func:`locus.geometry.views.recall_at_k`). Sizes above the training
  split are capped at its size;
- **query encodings t-SNE** (``fig:query_encodings_tsne``): a seeded subsample of the data set's queries
  (all splits: no embedding is built from them), one panel per encodings file, coloured by benchmark.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locus.errors import ConfigError, DataError
from locus.geometry import views as v

# the columns of the recall figure's CSV (the report reads them by this list: locus.experiments.report)
CSV_COLUMNS = ["size", "k", "recall", "models", "repeats", "kind"]


def hypothetical_recall(ref: "v.Reference", sizes, ks, repeats: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(recall per size x k averaged over models and repeats; per model, size and repeat the true
    model's rank among the reference embeddings)."""
    profile, overall = v.accuracy_profile(ref.train_scores, ref.queries.set_index("prompt_id")["benchmark"])
    pool_ids = ref.queries["prompt_id"].to_numpy(np.int64)
    bench = ref.queries["benchmark"].to_numpy()
    ranks = []
    for s in sizes:
        for r in range(repeats):
            z_hyp = np.empty_like(ref.z_ref)
            for i, mid in enumerate(ref.model_ids):
                mid = int(mid)
                rng = v.rng_for(seed, v.DRAW_HYPOTHETICAL, mid, int(s), r)
                take = np.sort(rng.choice(len(pool_ids), size=int(s), replace=False))
                row = profile.loc[mid].to_dict() if mid in profile.index else {}
                y = v.hypothetical_labels(bench[take], row, float(overall.get(mid, 0.5)), rng)
                z_hyp[i] = ref.embed(pool_ids[take], y)
            dist = v.cosine_distances(z_hyp, ref.z_ref)
            rank = v.true_ranks(dist, np.arange(len(ref.model_ids)))
            ranks.append(pd.DataFrame({"size": int(s), "repeat": r, "model_id": ref.model_ids, "rank": rank}))
    per_model = pd.concat(ranks, ignore_index=True)
    rows = [
        {
            "size": int(s),
            "k": int(k),
            "recall": float((part["rank"] < k).mean()),
            "models": len(ref.model_ids),
            "repeats": repeats,
        }
        for s, part in per_model.groupby("size")
        for k in ks
    ]
    return pd.DataFrame(rows), per_model


def write_hypothetical(
    run,
    data,
    encodings,
    out,
    sizes,
    ks=(1, 2, 3, 5, 10),
    repeats: int = 1,
    seed: int = 0,
    data_label: str | None = None,
) -> dict:
    """Recall@k of hypothetical embeddings against evaluation-set size (figure + CSV). Returns a summary."""
    from locus.render.views import hypothetical_figure, write_figure

    ref = v.load_reference(run, data, encodings, data_label)
    n_train = len(ref.queries)
    wanted = v.check_grid(sizes, "--sizes", 1, None, integer=True)
    used = sorted({min(s, n_train) for s in wanted})
    ks = v.check_grid(ks, "--ks", 1, None, integer=True)
    dropped_ks = [k for k in ks if k > len(ref.model_ids)]
    ks = [k for k in ks if k <= len(ref.model_ids)]
    if not ks:
        raise ConfigError(
            f"--ks {dropped_ks}: every k exceeds the {len(ref.model_ids)} models of the run; use k <= "
            f"{len(ref.model_ids)}."
        )
    if repeats < 1:
        raise ConfigError(f"--repeats must be >= 1, got {repeats}")
    recall, per_model = hypothetical_recall(ref, used, ks, repeats, seed)
    frame = recall.assign(kind="recall").reindex(columns=CSV_COLUMNS)
    write_figure(hypothetical_figure(recall, f"LOCUS hypothetical embeddings, {ref.label}"), frame, out)
    capped = [s for s in wanted if s > n_train]
    return {
        "recall": recall,
        "capped": capped,
        "dropped_ks": dropped_ks,
        "n_train": n_train,
        "models": len(ref.model_ids),
        "median_rank": per_model.groupby("size")["rank"].median().to_dict(),
    }


def query_sample(prompt_ids, max_queries: int, seed: int) -> np.ndarray:
    """Positions of at most `max_queries` of the queries (seeded, sorted; all when there are fewer)."""
    n = len(prompt_ids)
    if max_queries < 1:
        raise ConfigError(f"--max-queries must be >= 1, got {max_queries}")
    if n <= max_queries:
        return np.arange(n)
    return np.sort(v.rng_for(seed, v.DRAW_TSNE).choice(n, size=max_queries, replace=False))


def query_tsne(queries: pd.DataFrame, encodings_list, max_queries: int, perplexity: float, seed: int) -> pd.DataFrame:
    """t-SNE coordinates of the same query subsample under each encodings object (one panel each)."""
    from locus.data.encodings import check_matches

    queries = queries.sort_values("prompt_id").reset_index(drop=True)
    pick = queries.iloc[query_sample(queries["prompt_id"].to_numpy(), max_queries, seed)]
    parts = []
    for enc in encodings_list:
        check_matches(enc, queries, "the data set")
        xy = v.tsne_2d(enc.take(pick["prompt_id"]), perplexity, seed)
        parts.append(
            pd.DataFrame(
                {
                    "encoder": enc.encoder,
                    "prompt_id": pick["prompt_id"].to_numpy(),
                    "benchmark": pick["benchmark"].to_numpy(),
                    "split": pick["split"].to_numpy(),
                    "x": xy[:, 0],
                    "y": xy[:, 1],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def write_query_tsne(
    data,
    encodings_paths,
    out,
    max_queries: int = 2000,
    perplexity: float = 30.0,
    seed: int = 0,
    data_label: str | None = None,
) -> pd.DataFrame:
    """t-SNE of query encodings coloured by benchmark, one panel per encodings file (figure + CSV)."""
    from locus.data.canonical import read_dataset
    from locus.data.encodings import read_encodings
    from locus.render.views import query_tsne_figure, write_figure

    if not encodings_paths:
        raise ConfigError("query-tsne needs --encodings (one file per panel)")
    dataset = read_dataset(data)
    encs = [read_encodings(p) for p in encodings_paths]
    names = [e.encoder for e in encs]
    if len(set(names)) != len(names):
        raise DataError(f"--encodings: two files of the same encoder ({', '.join(names)}); give one per encoder.")
    frame = query_tsne(dataset.queries, encs, max_queries, perplexity, seed)
    write_figure(query_tsne_figure(frame, f"Query encodings, {data_label or data}"), frame, out)
    return frame
