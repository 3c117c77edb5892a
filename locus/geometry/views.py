"""Embedding views (paper sections 4.3-4.4, appendix E): how LOCUS model embeddings move when the
evaluation set behind them changes, computed with a trained LOCUS run and no further training.

Every embedding here is one forward pass of the run's encoder (:meth:`LocusMethod.embed`) over (query
encoding, score) pairs of **training-split** queries; validation and test queries never build one. The
run's ``embeddings.parquet`` holds the *reference embeddings* ``z_ref``, each model embedded from its
*reference set* (its training evaluations in the run, ``train_pairs.parquet``). Evaluation sets (pure
functions): **subsampled** (:func:`subsample`), **overlap α** (:func:`overlap_sizes`, :func:`alternative_set`:
sharing the fraction α with the reference set, the rest from the model's evaluated training queries
outside it) and **hypothetical** (:func:`accuracy_profile`, :func:`hypothetical_labels`).

Every draw takes its own generator seeded from (``seed``, kind, model id, setting, repeat) (:func:`rng_for`),
so one setting does not shift another. This module writes the views that perturb the reference sets
(convergence curves, robustness t-SNE); :mod:`locus.geometry.hypothetical` those that do not. Figures:
:mod:`locus.render.views`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from locus.data.canonical import resolve_model
from locus.errors import ConfigError, DataError

# kinds of draws, for rng_for (fixed codes: changing one view's grid never changes another's draws)
DRAW_SUBSAMPLE, DRAW_OVERLAP, DRAW_HYPOTHETICAL, DRAW_TSNE = 1, 2, 3, 4


# --------------------------------------------------------------------------------------------------
# pure functions
# --------------------------------------------------------------------------------------------------
def rng_for(seed: int, *keys) -> np.random.Generator:
    """An independent generator for one draw: seeded from `seed` and the integer `keys`
    (floats such as α are keyed by round(1e6 * value))."""
    ints = [int(seed)] + [int(round(k * 1_000_000)) if isinstance(k, float) else int(k) for k in keys]
    if any(k < 0 for k in ints):
        raise ValueError(f"rng_for: keys must be >= 0, got {ints}")
    return np.random.default_rng(ints)


def subsample(ids, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` of `ids` drawn without replacement, sorted (n > len(ids) is a ValueError)."""
    ids = np.asarray(ids)
    if not 1 <= n <= len(ids):
        raise ValueError(f"cannot draw {n} of {len(ids)} items (need 1 <= n <= {len(ids)})")
    return np.sort(rng.choice(ids, size=int(n), replace=False))


def overlap_sizes(n_ref: int, n_outside: int, alpha: float) -> tuple[int, int]:
    """(queries from the reference set, queries from outside it) of an alternative set with overlap
    fraction `alpha` with a reference set of `n_ref` queries, `n_outside` queries being available outside.

    The set has ``n_ref`` queries when enough outside queries exist, else ``⌊n_outside / (1 − α)⌋`` (the
    largest size with overlap exactly α up to rounding); ``n_in = round(α · size)``.
    The paper keeps the size at ``n_ref``; with too few outside queries (the default data: 6,400 training
    queries, ``n_ref`` = 4,096, so 2,304 outside) the cap keeps the overlap exactly α, and the CSVs record
    every set's size."""
    if not 0.0 <= alpha <= 1.0 or math.isnan(alpha):
        raise ConfigError(f"overlap fraction must be in [0, 1], got {alpha}")
    if n_ref < 1 or n_outside < 0:
        raise ValueError(f"overlap_sizes: n_ref {n_ref} must be >= 1 and n_outside {n_outside} >= 0")
    size = n_ref if alpha >= 1.0 else min(n_ref, int(math.floor(n_outside / (1.0 - alpha) + 1e-9)))
    n_in = int(round(alpha * size))
    n_out = min(size - n_in, n_outside)
    return n_in, n_out


def alternative_set(reference_ids, outside_ids, alpha: float, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """(sorted ids of an evaluation set sharing the fraction `alpha` with `reference_ids`, the rest from
    `outside_ids`; number of shared ids). An empty result (alpha < 1 with no outside ids, or alpha so
    small that nothing is shared and nothing is outside) is a DataError."""
    reference_ids, outside_ids = np.asarray(reference_ids), np.asarray(outside_ids)
    if np.isin(outside_ids, reference_ids).any():
        raise ValueError("alternative_set: outside ids must not belong to the reference set")
    n_in, n_out = overlap_sizes(len(reference_ids), len(outside_ids), alpha)
    if n_in + n_out == 0:
        raise DataError(
            f"no evaluation set with overlap {alpha:g}: {len(outside_ids)} training queries outside the "
            f"reference set of {len(reference_ids)}; use overlaps closer to 1 or a smaller reference size."
        )
    parts = [rng.choice(reference_ids, n_in, replace=False), rng.choice(outside_ids, n_out, replace=False)]
    return np.sort(np.concatenate(parts)), n_in


def cosine_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 − cosine similarity between the rows of `a` [p, d] and of `b` [q, d] -> [p, q]."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return 1.0 - a @ b.T


def euclidean_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """‖a_i − b_j‖ between the rows of `a` [p, d] and `b` [q, d] -> [p, q]."""
    diff = np.asarray(a, np.float64)[:, None, :] - np.asarray(b, np.float64)[None, :, :]
    return np.sqrt((diff**2).sum(-1))


def true_ranks(dist: np.ndarray, true_index) -> np.ndarray:
    """0-based rank of each probe's true pool item: the number of pool items strictly closer
    (ties count in the true item's favour)."""
    dist = np.asarray(dist, np.float64)
    true_index = np.asarray(true_index, np.int64)
    if dist.ndim != 2 or len(true_index) != dist.shape[0]:
        raise ValueError(f"true_ranks: {dist.shape} distances for {len(true_index)} probes")
    own = dist[np.arange(len(true_index)), true_index]
    return (dist < own[:, None]).sum(axis=1)


def recall_at_k(dist: np.ndarray, true_index, ks) -> dict[int, float]:
    """{k: fraction of probes (rows of `dist` [probes x pool]) whose true pool item `true_index[i]` is
    among their k nearest pool items}."""
    ranks = true_ranks(dist, true_index)
    return {int(k): float(np.mean(ranks < int(k))) for k in ks}


def accuracy_profile(scores: pd.DataFrame, benchmark_of: pd.Series) -> tuple[pd.DataFrame, pd.Series]:
    """(mean score per model x benchmark, NaN where a model has no evaluation of a benchmark; mean score
    per model) of long ``prompt_id, model_id, score`` rows; `benchmark_of` maps prompt_id -> benchmark."""
    frame = scores[["prompt_id", "model_id", "score"]].copy()
    frame["benchmark"] = frame["prompt_id"].map(benchmark_of)
    if frame["benchmark"].isna().any():
        missing = frame.loc[frame["benchmark"].isna(), "prompt_id"].unique()[:5].tolist()
        raise DataError(f"accuracy_profile: prompt ids without a benchmark, e.g. {missing}")
    table = frame.pivot_table(index="model_id", columns="benchmark", values="score", aggfunc="mean")
    return table, frame.groupby("model_id")["score"].mean()


def hypothetical_labels(benchmarks, profile: dict, fallback: float, rng: np.random.Generator) -> np.ndarray:
    """Synthetic 0/1 correctness (float32) of queries with the given benchmarks: Bernoulli(profile
    [benchmark]), `fallback` for a benchmark missing (or NaN) in the profile.
    Queries are drawn uniformly from the training split; the profile is the model's accuracy per benchmark on
    all its training-split evaluations, its overall training accuracy for a benchmark it was never evaluated on."""
    p = np.array([profile.get(b, np.nan) for b in benchmarks], dtype=np.float64)
    p = np.where(np.isnan(p), fallback, p)
    if ((p < 0) | (p > 1)).any():
        raise ValueError("hypothetical_labels: accuracies must lie in [0, 1]")
    return (rng.random(len(p)) < p).astype(np.float32)


def nearest_others(z_ref: np.ndarray, index: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices, Euclidean distances) of the `count` rows of `z_ref` nearest to row `index`, itself excluded,
    nearest first."""
    d = euclidean_distances(z_ref[index : index + 1], z_ref)[0]
    d[index] = np.inf
    order = np.argsort(d, kind="stable")[: max(0, min(count, len(d) - 1))]
    return order, d[order]


def nearest_other_distances(z_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `z_ref` [M, dim]: (index, Euclidean distance) of its nearest other row (M >= 2), in the
    embedding space itself."""
    z_ref = np.asarray(z_ref, np.float64)
    if len(z_ref) < 2:
        raise DataError(f"a nearest other model needs at least 2 models, got {len(z_ref)}")
    d = euclidean_distances(z_ref, z_ref)
    np.fill_diagonal(d, np.inf)
    idx = np.argmin(d, axis=1)
    return idx, d[np.arange(len(d)), idx]


def farther_shares(draws: pd.DataFrame, by=("panel", "model_id")) -> pd.DataFrame:
    """Per group (`by`) of re-embedding draws (columns ``distance``: ‖z − z_ref‖, ``nearest_other_distance``:
    the reference embedding's distance to its nearest other model, both in the embedding space): the number
    of ``draws``, how many lie ``farther`` from their reference than that nearest other model (strictly),
    and their ``share``."""
    by = list(by)
    frame = draws.assign(farther=draws["distance"].to_numpy(float) > draws["nearest_other_distance"].to_numpy(float))
    g = frame.groupby(by, sort=False)["farther"]
    out = pd.DataFrame({"draws": g.size(), "farther": g.sum().astype(int)}).reset_index()
    out["share"] = out["farther"] / out["draws"]
    return out


def summarize_draws(draws: pd.DataFrame, by: str) -> pd.DataFrame:
    """Mean, std (0 for one draw), min, max and count of `distance` per value of `by`, sorted by it."""
    g = draws.groupby(by)["distance"]
    out = pd.DataFrame(
        {"mean": g.mean(), "std": g.std(ddof=1).fillna(0.0), "min": g.min(), "max": g.max(), "draws": g.size()}
    ).reset_index()
    return out.sort_values(by).reset_index(drop=True)


# --------------------------------------------------------------------------------------------------
# the reference run and its data
# --------------------------------------------------------------------------------------------------
@dataclass
class Reference:
    """A LOCUS run with its reference embeddings, reference sets and the data set and encodings behind it."""

    run: Path
    method: object  # fitted LocusMethod
    model_ids: np.ndarray  # [M] ascending, rows of z_ref
    names: dict  # model_id -> name
    z_ref: np.ndarray  # [M, dim] embeddings.parquet
    pairs: pd.DataFrame  # train_pairs.parquet: the reference sets
    train_scores: pd.DataFrame  # every training-split evaluation of the data set
    queries: pd.DataFrame  # training-split queries (prompt_id, benchmark)
    encodings: object  # locus.data.encodings.Encodings
    label: str
    dataset: object = None  # locus.data.canonical.EvalData: every split (test labels for accuracies)

    def index_of(self, model_id: int) -> int:
        return int(np.searchsorted(self.model_ids, model_id))

    def reference_set(self, model_id: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.pairs[self.pairs["model_id"] == model_id]
        return rows["prompt_id"].to_numpy(np.int64), rows["score"].to_numpy(np.float32)

    def outside_ids(self, model_id: int) -> np.ndarray:
        """The model's evaluated training queries outside its reference set."""
        own = self.train_scores.loc[self.train_scores["model_id"] == model_id, "prompt_id"].to_numpy(np.int64)
        return np.setdiff1d(own, self.reference_set(model_id)[0])

    def scores_of(self, model_id: int, prompt_ids) -> np.ndarray:
        rows = self.train_scores[self.train_scores["model_id"] == model_id].set_index("prompt_id")["score"]
        return rows.reindex(np.asarray(prompt_ids, np.int64)).to_numpy(np.float32)

    def embed(self, prompt_ids, scores) -> np.ndarray:
        """One forward pass of the run's encoder over these (training-split) evaluations."""
        return self.method.embed(self.encodings.take(prompt_ids), np.asarray(scores, np.float32))

    def embed_many(self, sets) -> np.ndarray:
        """[k, dim]: :meth:`embed` of each (prompt ids, scores) of `sets`, fitted together where the method can."""
        return self.method.embed_many([(self.encodings.take(ids), np.asarray(y, np.float32)) for ids, y in sets])

    def resolve(self, name: str, what: str) -> int:
        return resolve_model(name, self.names, what)


LOCUS_ONLY = (
    "the embedding views need a LOCUS run (one forward pass per evaluation set) — give the geometry "
    "reference run of method locus."
)


def load_reference(
    run, data, encodings, data_label: str | None = None, methods=("locus",), why: str = LOCUS_ONLY
) -> Reference:
    """Read and cross-check a run directory of one of `methods` (default LOCUS; `why` says what else to
    give), the data set it was trained on and its encodings."""
    from locus import run_artifacts
    from locus.data.canonical import read_dataset
    from locus.data.encodings import check_matches, read_encodings

    run = Path(run)
    ckpt = run_artifacts.load_checkpoint(run)
    if getattr(ckpt.method, "name", None) not in methods:
        raise DataError(f"{run}: a {ckpt.method.name!r} run; {why}")
    dataset = read_dataset(data)
    enc = read_encodings(encodings)
    fingerprint = check_matches(enc, dataset.queries, str(data))
    run_artifacts.check_same_data(
        run,
        ckpt.config.get("data_fingerprint"),
        fingerprint,
        data,
        "give the data set the run was trained on, or re-run the training rule.",
    )
    if enc.encoder != ckpt.encoder:
        raise DataError(
            f"{encodings}: encodings of {enc.encoder!r} but the run {run} was trained on "
            f"{ckpt.encoder!r} encodings; give results/encodings/<dataset>/{ckpt.encoder}.parquet."
        )
    ids, z = run_artifacts.read_embeddings(run)
    order = np.argsort(ids)
    ids, z = ids[order], z[order]
    if not np.array_equal(ids, np.sort(ckpt.model_ids)):
        raise DataError(
            f"{run}: embeddings.parquet and the checkpoint list different models; re-run the training rule."
        )
    pairs = run_artifacts.read_train_pairs(run)
    train_q = dataset.split_queries("train")[["prompt_id", "benchmark"]]
    foreign = ~pairs["prompt_id"].isin(train_q["prompt_id"])
    if foreign.any():
        raise DataError(
            f"{run}: {int(foreign.sum())} training pairs are not training-split queries of {data} "
            f"(e.g. prompt {int(pairs.loc[foreign, 'prompt_id'].iloc[0])}); re-run the training rule."
        )
    names = {int(k): v for k, v in ckpt.names.items()}
    return Reference(
        run=run,
        method=ckpt.method,
        model_ids=ids,
        names=names,
        z_ref=z,
        pairs=pairs,
        train_scores=dataset.split_scores("train"),
        queries=train_q.reset_index(drop=True),
        encodings=enc,
        label=data_label or str(ckpt.config.get("dataset", data)),
        dataset=dataset,
    )


def check_grid(values, what: str, low=None, high=None, integer: bool = False) -> list:
    """A non-empty, sorted, de-duplicated grid within [low, high]; ConfigError naming `what` otherwise."""
    values = sorted({int(v) if integer else float(v) for v in values})
    if not values:
        raise ConfigError(f"{what}: give at least one value")
    bad = [v for v in values if (low is not None and v < low) or (high is not None and v > high)]
    if bad:
        raise ConfigError(f"{what}: {bad} outside [{low}, {high}]")
    return values


# --------------------------------------------------------------------------------------------------
# convergence: ‖z − z_ref‖ of one model against overlap α / set size n
# --------------------------------------------------------------------------------------------------
def overlap_draws(ref: Reference, model_id: int, overlaps, repeats: int, seed: int) -> pd.DataFrame:
    """One row per (α, repeat): the alternative set's size and overlap, and ‖z − z_ref‖."""
    ref_ids, _ = ref.reference_set(model_id)
    outside = ref.outside_ids(model_id)
    z_ref = ref.z_ref[ref.index_of(model_id)]
    rows = []
    for alpha in overlaps:
        for r in range(repeats):
            ids, n_in = alternative_set(
                ref_ids, outside, float(alpha), rng_for(seed, DRAW_OVERLAP, model_id, float(alpha), r)
            )
            z = ref.embed(ids, ref.scores_of(model_id, ids))
            rows.append(
                {
                    "model_id": model_id,
                    "alpha": float(alpha),
                    "repeat": r,
                    "set_size": len(ids),
                    "shared": n_in,
                    "realized_alpha": n_in / len(ids),
                    "distance": float(np.linalg.norm(z - z_ref)),
                    "z": z,
                }
            )
    return pd.DataFrame(rows)


def size_draws(ref: Reference, model_id: int, sizes, repeats: int, seed: int) -> pd.DataFrame:
    """One row per (n, repeat): ‖z − z_ref‖ with z from n evaluations subsampled from the reference set
    (sizes above the reference set's are left out)."""
    ref_ids, ref_scores = ref.reference_set(model_id)
    z_ref = ref.z_ref[ref.index_of(model_id)]
    score_of = dict(zip(ref_ids.tolist(), ref_scores.tolist()))
    rows = []
    for n in sizes:
        if n > len(ref_ids):
            continue
        for r in range(repeats if n < len(ref_ids) else 1):  # the whole set has one draw
            ids = subsample(ref_ids, int(n), rng_for(seed, DRAW_SUBSAMPLE, model_id, int(n), r))
            z = ref.embed(ids, [score_of[i] for i in ids.tolist()])
            rows.append(
                {
                    "model_id": model_id,
                    "n": int(n),
                    "repeat": r,
                    "set_size": int(n),
                    "distance": float(np.linalg.norm(z - z_ref)),
                    "z": z,
                }
            )
    if not rows:
        raise ConfigError(
            f"sizes {list(sizes)}: all exceed the {len(ref_ids)} reference evaluations of model "
            f"{ref.names.get(model_id, model_id)}; use sizes <= {len(ref_ids)}."
        )
    return pd.DataFrame(rows)


def neighbour_frame(ref: Reference, model_id: int, count: int) -> pd.DataFrame:
    """The model's `count` nearest other models by Euclidean distance between reference embeddings."""
    idx, dist = nearest_others(ref.z_ref, ref.index_of(model_id), count)
    return pd.DataFrame(
        {
            "neighbour": [ref.names.get(int(ref.model_ids[i]), str(ref.model_ids[i])) for i in idx],
            "neighbour_id": ref.model_ids[idx],
            "distance": dist,
        }
    )


def write_convergence(
    kind: str,
    run,
    data,
    encodings,
    out,
    model: str,
    grid,
    repeats: int = 5,
    neighbours: int = 3,
    seed: int = 0,
    data_label: str | None = None,
) -> dict:
    """``overlap`` (grid = overlap fractions α) or ``size`` (grid = set sizes n): ‖z − z_ref‖ of `model`
    per draw, their mean ± std per grid value, and the distances to its `neighbours` nearest other models
    (figure + CSV of the plotted numbers). Returns a summary."""
    from locus.render.views import convergence_figure, write_figure

    if kind not in ("overlap", "size"):
        raise ConfigError(f"convergence kind must be overlap or size, got {kind!r}")
    ref = load_reference(run, data, encodings, data_label)
    model_id = ref.resolve(model, "--model")
    if kind == "overlap":
        grid = check_grid(grid, "--overlaps", 0.0, 1.0)
        draws = overlap_draws(ref, model_id, grid, repeats, seed)
        by = "alpha"
    else:
        grid = check_grid(grid, "--sizes", 1, None, integer=True)
        draws = size_draws(ref, model_id, grid, repeats, seed)
        by = "n"
    near = neighbour_frame(ref, model_id, neighbours)
    summary = summarize_draws(draws, by)
    name = ref.names[model_id]
    frame = pd.concat(
        [
            draws.drop(columns="z").assign(kind="draw", name=name),
            summary.rename(columns={"mean": "distance"}).assign(kind="mean", name=name),
            near.assign(kind="neighbour", name=name),
        ],
        ignore_index=True,
    )
    ints = [c for c in ("model_id", "repeat", "set_size", "shared", "n", "draws", "neighbour_id") if c in frame]
    frame[ints] = frame[ints].astype("Int64")
    title = f"{name}, {ref.label}"
    sizes = draws.groupby(by)["set_size"].min()
    write_figure(convergence_figure(summary, near, by, title, len(ref.reference_set(model_id)[0]), sizes), frame, out)
    return {
        "model": name,
        "by": by,
        "summary": summary,
        "neighbours": near,
        "reference_size": len(ref.reference_set(model_id)[0]),
        "outside": len(ref.outside_ids(model_id)),
    }


def tsne_2d(x: np.ndarray, perplexity: float, seed: int) -> np.ndarray:
    """2-d t-SNE of the rows of `x` (scikit-learn; PCA to 50 dimensions first when wider; perplexity capped
    below the number of points)."""
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    x = np.asarray(x, np.float64)
    if len(x) < 3:
        raise DataError(f"t-SNE needs at least 3 points, got {len(x)}")
    if x.shape[1] > 50 and len(x) > 50:
        x = PCA(n_components=50, random_state=seed).fit_transform(x)
    perplexity = float(min(perplexity, (len(x) - 1) / 3.0))
    return TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(x)


def robustness_points(
    ref: Reference, model_ids, overlaps, sizes, repeats: int, seed: int, perplexity: float
) -> pd.DataFrame:
    """One joint t-SNE of every reference embedding and of the selected models' embeddings recomputed from
    overlap-α sets (panel ``overlap``) and subsampled sets (panel ``size``)."""
    parts = []
    for mid in model_ids:
        parts.append(
            overlap_draws(ref, mid, overlaps, repeats, seed)
            .rename(columns={"alpha": "setting"})
            .assign(panel="overlap")
        )
        parts.append(size_draws(ref, mid, sizes, repeats, seed).rename(columns={"n": "setting"}).assign(panel="size"))
    new = pd.concat(parts, ignore_index=True)
    base = pd.DataFrame(
        {
            "model_id": ref.model_ids,
            "panel": "reference",
            "setting": np.nan,
            "repeat": -1,
            "set_size": [len(ref.reference_set(m)[0]) for m in ref.model_ids],
            "distance": 0.0,
        }
    )
    xy = tsne_2d(np.vstack([ref.z_ref, np.stack(new["z"].to_list())]), perplexity, seed)
    frame = pd.concat([base, new.drop(columns="z")], ignore_index=True)
    frame["x"], frame["y"] = xy[:, 0], xy[:, 1]
    frame["name"] = [ref.names.get(int(m), str(m)) for m in frame["model_id"]]
    frame["selected"] = frame["model_id"].isin(list(model_ids))
    # the check the t-SNE cannot show: is a re-embedding farther from its reference than the nearest other
    # model is (both distances in the embedding space, Euclidean like `distance`)
    near_idx, near_dist = nearest_other_distances(ref.z_ref)
    pos = np.searchsorted(ref.model_ids, frame["model_id"].to_numpy(np.int64))
    frame["nearest_other_id"] = ref.model_ids[near_idx[pos]]
    frame["nearest_other"] = [ref.names.get(int(m), str(m)) for m in frame["nearest_other_id"]]
    frame["nearest_other_distance"] = near_dist[pos]
    is_draw = (frame["panel"] != "reference").to_numpy()
    farther = pd.array([pd.NA] * len(frame), dtype="boolean")
    farther[is_draw] = frame.loc[is_draw, "distance"].to_numpy(float) > near_dist[pos][is_draw]
    frame["farther_than_nearest"] = farther
    cols = [
        "panel",
        "model_id",
        "name",
        "selected",
        "setting",
        "repeat",
        "set_size",
        "distance",
        "nearest_other_distance",
        "farther_than_nearest",
        "nearest_other",
        "nearest_other_id",
        "x",
        "y",
    ]
    return frame[cols + [c for c in frame.columns if c not in cols]]


def write_robustness(
    run,
    data,
    encodings,
    out,
    models,
    overlaps,
    sizes,
    repeats: int = 2,
    seed: int = 0,
    perplexity: float = 30.0,
    data_label: str | None = None,
) -> pd.DataFrame:
    """t-SNE of the selected models' recomputed embeddings among all reference embeddings (figure + CSV).
    Every re-embedding draw's row carries its distance to its reference embedding (``distance``) and the
    reference's distance to its nearest other model (``nearest_other_distance``), both Euclidean in the
    embedding space, not in the t-SNE plane; the figure prints per panel and model the share of draws
    farther from their reference than that nearest other model (:func:`farther_shares`)."""
    from locus.render.views import robustness_figure, write_figure

    ref = load_reference(run, data, encodings, data_label)
    ids = list(dict.fromkeys(ref.resolve(m, "--models") for m in models))
    frame = robustness_points(
        ref,
        ids,
        check_grid(overlaps, "--overlaps", 0.0, 1.0),
        check_grid(sizes, "--sizes", 1, None, integer=True),
        repeats,
        seed,
        perplexity,
    )
    space = f"the {ref.z_ref.shape[1]}-d embedding space"
    shares = farther_shares(frame[frame["panel"] != "reference"])
    write_figure(robustness_figure(frame, f"LOCUS embeddings, {ref.label}", space=space, shares=shares), frame, out)
    return frame
