"""K-Means router (LOCUS App. B; UniRoute / Avengers style): embedding-free, non-parametric.

The training queries' L2-normalised encodings are clustered by K-Means (scikit-learn, k-means++, seed =
the run's seed, ``n_init`` restarts). p_m(x) is m's mean training score over its evaluated training
queries in the cluster whose centre is nearest to x.

Decisions:
- Cosine geometry (as Avengers): encodings are L2-normalised before clustering and assignment
  (nearest centre in Euclidean distance, ties to the lower cluster index).
- A model with no training evaluation in a cluster gets its global mean training score there.
- K is tuned on validation over ``K_grid`` restricted to K <= n_train / ``min_cluster_size`` (so clusters
  are not tiny; the smallest grid value if none qualifies) by ``select_by`` (a tie keeps the smaller K);
  ``K`` > 0 fixes it. Logits and tie-breaking are the kNN router's (:mod:`locus.methods.knn_router`).
- scikit-learn runs under a thread limit of ``threads`` (threadpoolctl) for reproducibility.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from locus.methods.base import SELECT_BY, FitData, Method
from locus.methods.knn_router import choose, normalise, to_logits, training_matrix, validation_matrix
from locus.methods.params import MethodParams, param


@dataclass(frozen=True)
class KMeansRouterParams(MethodParams):
    """The K-Means router's parameters."""

    method = "kmeans_router"

    K_grid: tuple[int, ...] = param([4, 8, 16, 32, 64], "cluster counts tuned on validation", at_least=1)
    K: int = param(0, "> 0: use this K, no tuning; 0 = tune on K_grid", at_least=0)
    min_cluster_size: int = param(8, "only K <= n_train / min_cluster_size are tried", at_least=1)
    n_init: int = param(10, "k-means restarts per K", at_least=1)
    max_iter: int = param(300, "k-means iterations per restart", at_least=1)
    select_by: str = param("val_routing", "validation metric that chooses K", choices=SELECT_BY)
    clip: float = param(1e-4, "probabilities clipped to [clip, 1 - clip] before the log-odds", above=0, below=0.5)
    tie_eps: float = param(1e-4, "tie-breaker weight of a model's mean training score", at_least=0)
    threads: int = param(1, "BLAS threads while clustering (0 = the library's default)", at_least=0)


class KMeansRouter(Method):
    name = "kmeans_router"
    label = "K-Means router"
    latex_label = "$K$-Means router"
    color = "#7f7f7f"
    order = 60
    uses_torch = False
    Params = KMeansRouterParams
    params: KMeansRouterParams

    def __init__(self, params: KMeansRouterParams | dict | None = None, seed: int = 0):
        super().__init__(params, seed)
        self.K: int | None = None
        self.centres = self.cluster_means = self.cluster_counts = self.global_mean = None

    def fit(self, data: FitData) -> "KMeansRouter":
        from threadpoolctl import threadpool_limits

        p = self.params
        self.model_ids = np.asarray(data.model_ids, dtype=np.int64)
        _, x, scores = training_matrix(data, self.model_ids)
        self.global_mean = np.nanmean(scores, axis=0)
        n = len(x)
        if p.K > 0:
            candidates = [min(p.K, n)]
        else:
            grid = sorted(set(p.K_grid))
            candidates = [k for k in grid if k * p.min_cluster_size <= n] or [min(grid[0], n)]
        val_vectors, val_labels = validation_matrix(data, self.model_ids)
        fitted, logits = {}, {}
        with threadpool_limits(limits=p.threads or None):
            for k in candidates:
                fitted[k] = self._cluster(x, scores, k)
                logits[k] = self._logits(val_vectors, *fitted[k][:2])
        self.K, self.history = choose(candidates, logits, val_labels, p.select_by, "K")
        self.centres, self.cluster_means, self.cluster_counts = fitted[self.K]
        return self

    def _cluster(self, x: np.ndarray, scores: np.ndarray, k: int):
        """(centres [K x d], per-cluster mean score [K x models], evaluation counts [K x models])."""
        from sklearn.cluster import KMeans

        km = KMeans(
            n_clusters=k,
            init="k-means++",
            n_init=self.params.n_init,
            max_iter=self.params.max_iter,
            random_state=self.seed,
        ).fit(x)
        centres = km.cluster_centers_.astype(np.float64)
        assign = nearest(x, centres)
        evaluated = ~np.isnan(scores)
        onehot = np.eye(k)[assign]  # [n, K]
        counts = onehot.T @ evaluated
        sums = onehot.T @ np.where(evaluated, scores, 0.0)
        means = np.where(counts > 0, sums / np.maximum(counts, 1), self.global_mean[None, :])
        return centres, means, counts

    def _logits(self, queries: np.ndarray, centres: np.ndarray, means: np.ndarray) -> np.ndarray:
        return to_logits(means[nearest(queries, centres)], self.global_mean, self.params)

    def predict_logits(self, query_vectors: np.ndarray, model_ids=None) -> np.ndarray:
        pos = self._model_positions(model_ids)
        q = normalise(self._check_query_dim(query_vectors, self.centres.shape[1]))
        return self._logits(q, self.centres, self.cluster_means)[:, pos]

    def get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"K": self.K}, {
            "global_mean": self.global_mean,
            "centres": self.centres,
            "cluster_means": self.cluster_means,
            "cluster_counts": self.cluster_counts,
        }

    def set_state(self, config: dict, arrays: dict[str, np.ndarray]) -> None:
        self.K = int(config["K"])
        self.global_mean, self.centres = arrays["global_mean"], arrays["centres"]
        self.cluster_means, self.cluster_counts = arrays["cluster_means"], arrays["cluster_counts"]


def nearest(x: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of the nearest centre (squared Euclidean); ties go to the lower index."""
    d2 = (centres**2).sum(axis=1)[None, :] - 2.0 * x @ centres.T
    return np.argmin(d2, axis=1)
