"""kNN router (LOCUS App. B; RouterBench / RouterEval style): embedding-free, non-parametric.

For a query x and model m, p_m(x) is m's mean training score over the k training queries nearest to x
*among the queries m was evaluated on* (cosine similarity on L2-normalised encodings, which ranks like
Euclidean distance; ties to the lower prompt_id), so partial evaluations work.

Decisions:
- k is tuned on validation over ``k_grid`` (capped at a model's training queries) by ``select_by``
  (a tie keeps the smaller k); ``k`` > 0 fixes it.
- logit = log(p / (1 - p)), p clipped to [``clip``, 1 - ``clip``], plus ``tie_eps`` x (the model's mean
  training score): averaged 0/1 labels tie often, and a tie then goes to the model better overall. The
  shift is far below the smallest gap between distinct neighbour means (>= 4/k) and never crosses 0, so
  correctness decisions are unchanged; remaining ties go to the lower model_id.

The helpers at the bottom are shared with the K-Means router. The checkpoint stores the training
encodings and scores (gaps as a boolean mask ``train_evaluated``: saved arrays must be finite).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from locus import evaluation
from locus.data.canonical import pairs_to_matrix
from locus.errors import DataError
from locus.methods.base import SELECT_BY, FitData, Method, better
from locus.methods.params import MethodParams, param

CHUNK = 256  # queries scored at a time (bounds the [chunk x k x models] gather)


@dataclass(frozen=True)
class KNNRouterParams(MethodParams):
    """The kNN router's parameters."""

    method = "knn_router"

    k_grid: tuple[int, ...] = param([5, 10, 20, 50, 100, 131, 200], "neighbour counts tuned on validation", at_least=1)
    k: int = param(0, "> 0: use this k, no tuning; 0 = tune on k_grid", at_least=0)
    select_by: str = param("val_routing", "validation metric that chooses k", choices=SELECT_BY)
    clip: float = param(1e-4, "probabilities clipped to [clip, 1 - clip] before the log-odds", above=0, below=0.5)
    tie_eps: float = param(1e-4, "tie-breaker weight of a model's mean training score", at_least=0)


class KNNRouter(Method):
    name = "knn_router"
    label = "kNN router"
    latex_label = "$k$NN router"
    color = "#8c564b"
    order = 50
    uses_torch = False
    Params = KNNRouterParams
    params: KNNRouterParams

    def __init__(self, params: KNNRouterParams | dict | None = None, seed: int = 0):
        super().__init__(params, seed)
        self.k: int | None = None
        self.train_prompt_ids = self.train_vectors = self.train_scores = self.global_mean = None

    def fit(self, data: FitData) -> "KNNRouter":
        self.model_ids = np.asarray(data.model_ids, dtype=np.int64)
        self.train_prompt_ids, self.train_vectors, self.train_scores = training_matrix(data, self.model_ids)
        self.global_mean = np.nanmean(self.train_scores, axis=0)
        n_max = int((~np.isnan(self.train_scores)).sum(axis=0).max())
        grid = [self.params.k] if self.params.k > 0 else self.params.k_grid
        candidates = sorted({min(int(k), n_max) for k in grid})
        val_vectors, val_labels = validation_matrix(data, self.model_ids)
        means = self._neighbour_means(val_vectors, candidates)
        logits = {k: to_logits(means[k], self.global_mean, self.params) for k in candidates}
        self.k, self.history = choose(candidates, logits, val_labels, self.params.select_by, "k")
        return self

    def predict_logits(self, query_vectors: np.ndarray, model_ids=None) -> np.ndarray:
        pos = self._model_positions(model_ids)
        q = normalise(self._check_query_dim(query_vectors, self.train_vectors.shape[1]))
        p = self._neighbour_means(q, [self.k])[self.k]
        return to_logits(p, self.global_mean, self.params)[:, pos]

    def _neighbour_means(self, queries: np.ndarray, ks: list[int]) -> dict[int, np.ndarray]:
        """{k: [queries x models] mean training score over each model's k nearest evaluated queries}."""
        evaluated = ~np.isnan(self.train_scores)
        patterns, group = np.unique(evaluated.T, axis=0, return_inverse=True)
        group = np.asarray(group).reshape(-1)
        out = {k: np.empty((len(queries), len(self.model_ids))) for k in ks}
        for g, pattern in enumerate(patterns):  # models evaluated on the same training queries
            cols = np.flatnonzero(pattern)
            models = np.flatnonzero(group == g)
            sub = self.train_scores[np.ix_(cols, models)]
            k_max = min(max(ks), len(cols))
            for start in range(0, len(queries), CHUNK):
                sims = queries[start : start + CHUNK] @ self.train_vectors[cols].T
                order = np.argsort(-sims, axis=1, kind="stable")[:, :k_max]  # ties: lower prompt_id first
                csum = np.cumsum(sub[order], axis=1)  # [q, k_max, models]
                for k in ks:
                    k_eff = min(k, len(cols))
                    out[k][start : start + CHUNK, models] = csum[:, k_eff - 1, :] / k_eff
        return out

    def get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        evaluated = ~np.isnan(self.train_scores)
        return {"k": self.k}, {
            "global_mean": self.global_mean,
            "train_prompt_ids": self.train_prompt_ids,
            "train_vectors": self.train_vectors,
            "train_evaluated": evaluated,
            "train_scores": np.where(evaluated, self.train_scores, 0.0),
        }

    def set_state(self, config: dict, arrays: dict[str, np.ndarray]) -> None:
        self.k = int(config["k"])
        self.global_mean, self.train_prompt_ids, self.train_vectors = (
            arrays["global_mean"],
            arrays["train_prompt_ids"],
            arrays["train_vectors"],
        )
        self.train_scores = np.where(arrays["train_evaluated"], arrays["train_scores"], np.nan)


# ---------------------------------------------------------------------------------------------
# shared with the K-Means router
# ---------------------------------------------------------------------------------------------
def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (float64; a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def training_matrix(data: FitData, model_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(training prompt ids ascending, their normalised encodings, scores [prompts x models], NaN = missing)."""
    train = data.train[data.train["model_id"].isin(model_ids)]
    if train.empty:
        raise DataError("no training evaluations for the requested models.")
    prompt_ids = np.sort(train["prompt_id"].unique())
    vectors = normalise(data.encodings.take(prompt_ids)).astype(np.float32)  # float32: what is saved
    return prompt_ids, vectors, pairs_to_matrix(train, prompt_ids, model_ids)


def validation_matrix(data: FitData, model_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    val = data.val[data.val["model_id"].isin(model_ids)]
    if val.empty:
        raise DataError("validation split has no evaluations of the fitted models; tuning needs some.")
    prompt_ids = np.sort(val["prompt_id"].unique())
    return normalise(data.encodings.take(prompt_ids)), pairs_to_matrix(val, prompt_ids, model_ids)


def to_logits(p: np.ndarray, global_mean: np.ndarray, params) -> np.ndarray:
    """Clipped log-odds plus the deterministic tie-breaker tie_eps x (model's mean training score); `params`
    has ``clip`` and ``tie_eps`` (the kNN or K-Means router's parameters)."""
    clip = float(params.clip)
    p = np.clip(p, clip, 1.0 - clip)
    return (np.log(p / (1.0 - p)) + float(params.tie_eps) * global_mean[None, :]).astype(np.float32)


def choose(candidates: list[int], logits: dict, labels: np.ndarray, select_by: str, key: str):
    """Pick the candidate with the best validation metric (BCE minimised, accuracies maximised,
    :func:`locus.methods.base.better`); ties keep the smaller candidate. Returns (choice, per-candidate
    history DataFrame)."""
    rows = [{key: c, **evaluation.validation_metrics(logits[c], labels)} for c in sorted(candidates)]
    best, best_value = 0, None
    for i, row in enumerate(rows):
        if better(select_by, row[select_by], best_value):
            best, best_value = i, row[select_by]
    for i, row in enumerate(rows):
        row["chosen"] = i == best
    return rows[best][key], pd.DataFrame(rows)
