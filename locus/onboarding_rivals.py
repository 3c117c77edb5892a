"""Training-free ways to onboard a new model into a pool, set beside LOCUS's one forward pass (issue 49).

Every method has one interface: :meth:`OnboardingMethod.fit` once on the pool (:class:`PoolContext`: the
pool models' training-split scores and the query encodings), then :meth:`OnboardingMethod.onboard` a new
model from its ``k`` scored queries, giving an :class:`OnboardedModel` whose ``predict(query_encodings)`` is
P(correct) of the new model on any query (:meth:`OnboardingMethod.onboard_vectors` from any texts' encodings, as
a served model's). No pool network is retrained (``retrains`` is False for all of them):

- ``mean_accuracy``: the new model's mean score on its k queries, for every query (the floor);
- ``cluster_shrinkage`` (the HierShrink of vLLM's semantic router): a two-level K-means tree of the pool's
  training queries (about 20 parents with about 5 children each, fewer for small pools); a leaf's accuracy
  of the new model is shrunk toward its parent's, the parent's toward the model's mean, with strength λ as
  a Beta prior does: ``(hits + λ·prior) / (n + λ)``;
- ``cluster_error_vector`` (UniRoute): the model as its vector of accuracies over K representative query
  clusters (K-means of the pool's training queries); P(correct | query) = its accuracy in the query's
  cluster, its mean where it answered no query of the cluster;
- ``knn_agreement``: the pool models that agree most with the new model on its k queries vote, weighted by
  their agreement, on each query; a pool model's vote is its mean score on the ``neighbours`` pool queries
  nearest the query (so it works for queries no pool model was evaluated on);
- ``locus``: LOCUS's one-pass embedding with a trained checkpoint's encoder (``method.embed``, as
  ``locus embed`` does, :func:`locus.inference.embed_new_model`) and its decoder's P(correct);
- ``embedllm_fit`` / ``irt_net_fit``: an EmbedLLM / IRT-Net run's network frozen, the new model's vector fitted
  to its k scores by gradient descent (their ``embed``); they need a run of that method trained on the pool.

What is tuned (λ, K, the number of voters) is chosen per k on **validation models**: up to
``val_models`` pool models, each onboarded (as if new) from k of its own pool queries and scored on other
pool queries it answered; for the agreement vote the validation model itself never votes. The Brier score
decides (lower is better; ties keep the earlier candidate). Only the pool enters fitting and tuning: a
:class:`PoolContext` refuses to hold any of its ``forbidden_prompt_ids`` (the held-out models' test queries)
or ``forbidden_model_ids`` (the held-out models), and never hands out their encodings, so no method can
fit or tune on them (:class:`LeakageError`).

Pure numpy / scikit-learn, no file IO; the protocol over held-out models is
:mod:`locus.experiments.onboarding_rivals`.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np
import pandas as pd

from locus.errors import ConfigError, DataError
from locus.methods.params import MethodParams, param

CHUNK = 512  # queries scored at a time by the agreement vote's neighbour search
KMEANS_SAMPLE = 4096  # pool queries K-means centres are fitted on (all queries are then assigned)
_EMPTY = np.zeros(0, dtype=np.int64)
NEW_QUERY = -1  # onboard_vectors: a scored prompt that is none of the pool's queries
_SEED_KEY = 49  # keeps these draws apart from the rest of the package's seeded draws (issue 49)


@dataclass(frozen=True)
class NoParams(MethodParams):
    """The settings of a method without any (LOCUS and the embedding fits take their trained method instead)."""

    method = "onboarding"


@dataclass(frozen=True)
class TunedParams(MethodParams):
    method = "onboarding"
    val_models: int = param(16, "pool models the setting is chosen on (at most a quarter of the pool)", at_least=1)
    val_repeats: int = param(2, "draws of k queries per validation model", at_least=1)
    val_queries: int = param(1024, "pool queries each validation model is scored on", at_least=1)


@dataclass(frozen=True)
class ClusterShrinkageParams(TunedParams):
    method = "cluster_shrinkage"
    parents: int = param(20, "K-means clusters of the pool's queries (at most one per 32 queries)", at_least=1)
    leaves: int = param(100, "leaves in all, each parent split evenly (at most one per 8 queries)", at_least=1)
    lambdas: tuple[float, ...] = param(
        (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 1e9), "shrinkage strengths tried", at_least=0
    )


@dataclass(frozen=True)
class ClusterErrorVectorParams(TunedParams):
    method = "cluster_error_vector"
    clusters: tuple[int, ...] = param((10, 20, 50, 100), "K tried (at most one cluster per 4 pool queries)", at_least=1)


@dataclass(frozen=True)
class KnnAgreementParams(TunedParams):
    method = "knn_agreement"
    neighbours: int = param(32, "pool queries behind a pool model's vote on a query", at_least=1)
    voters: tuple[int, ...] = param(
        (1, 2, 4, 8, 16, 32, 64), "pool models that vote (at most the pool - 1)", at_least=1
    )


class LeakageError(DataError):
    """A held-out model or one of its test queries would enter fitting or tuning."""


# --------------------------------------------------------------------------------------------------
# the pool
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolContext:
    """What the onboarding methods may see.

    model_ids [M]: the pool models; prompt_ids [P] (ascending): the pool's training queries; scores [P, M]:
    their scores (NaN = not evaluated); query_ids [Q] (ascending) / query_vectors [Q, d]: encodings of every
    query a model may be onboarded from (the training split; includes `prompt_ids`). `forbidden_prompt_ids`
    (the held-out models' test queries) and `forbidden_model_ids` (the held-out models) may appear nowhere.
    """

    model_ids: np.ndarray
    prompt_ids: np.ndarray
    scores: np.ndarray
    query_ids: np.ndarray
    query_vectors: np.ndarray
    forbidden_prompt_ids: np.ndarray = field(default_factory=lambda: _EMPTY)
    forbidden_model_ids: np.ndarray = field(default_factory=lambda: _EMPTY)
    seed: int = 0
    _index: pd.Index = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        for name, dtype in (
            ("model_ids", np.int64),
            ("prompt_ids", np.int64),
            ("query_ids", np.int64),
            ("forbidden_prompt_ids", np.int64),
            ("forbidden_model_ids", np.int64),
            ("scores", np.float64),
            ("query_vectors", np.float32),
        ):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))
        m, p, q = len(self.model_ids), len(self.prompt_ids), len(self.query_ids)
        if m < 1 or p < 1:
            raise DataError(f"onboarding pool: needs at least one model and one scored query, got {m} and {p}.")
        if self.scores.shape != (p, m):
            raise DataError(f"onboarding pool: scores must be [{p} queries x {m} models], got {self.scores.shape}.")
        if self.query_vectors.ndim != 2 or len(self.query_vectors) != q:
            raise DataError(f"onboarding pool: query_vectors must be [{q}, dim], got {self.query_vectors.shape}.")
        for name in ("model_ids", "prompt_ids", "query_ids"):
            ids = getattr(self, name)
            if len(np.unique(ids)) != len(ids) or np.any(np.diff(ids) < 0):
                raise DataError(f"onboarding pool: {name} must be distinct and ascending.")
        scored = self.scores[~np.isnan(self.scores)]
        if np.any((scored < 0) | (scored > 1)):
            raise DataError("onboarding pool: scores must lie in [0, 1] (NaN = not evaluated).")
        if not np.isin(self.prompt_ids, self.query_ids).all():
            raise DataError("onboarding pool: every scored pool query needs an encoding (query_ids).")
        if not np.isfinite(self.query_vectors).all():
            raise DataError("onboarding pool: query encodings hold NaN/Inf.")
        leaked = np.intersect1d(self.model_ids, self.forbidden_model_ids)
        if len(leaked):
            raise LeakageError(
                f"onboarding pool: held-out model(s) {leaked[:5].tolist()} are in the pool; a pool must not "
                "contain the models it onboards."
            )
        leaked = np.intersect1d(self.query_ids, self.forbidden_prompt_ids)
        if len(leaked):
            raise LeakageError(
                f"onboarding pool: {len(leaked)} held-out test queries (e.g. {leaked[:5].tolist()}) are among the "
                "pool's queries; test queries must never enter fitting or tuning."
            )
        object.__setattr__(self, "_index", pd.Index(self.query_ids))

    @property
    def pool_vectors(self) -> np.ndarray:
        """Encodings of the pool's scored queries [P, d]."""
        return self.vectors(self.prompt_ids)

    def vectors(self, prompt_ids) -> np.ndarray:
        """Encodings of `prompt_ids` (float32 [n, d]); a held-out test query or an unknown one is refused."""
        ids = np.asarray(prompt_ids, dtype=np.int64)
        bad = np.intersect1d(ids, self.forbidden_prompt_ids)
        if len(bad):
            raise LeakageError(
                f"onboarding: {len(bad)} held-out test queries (e.g. {bad[:5].tolist()}) asked for; a model is "
                "onboarded from training-split queries only."
            )
        pos = self._index.get_indexer(ids)
        if (pos < 0).any():
            raise DataError(
                f"onboarding: no encoding for prompt id(s) {ids[pos < 0][:5].tolist()}; a model is onboarded "
                "from the pool's candidate (training-split) queries."
            )
        return self.query_vectors[pos]


def pool_from_pairs(
    pairs: pd.DataFrame,
    query_ids,
    query_vectors,
    forbidden_prompt_ids=(),
    forbidden_model_ids=(),
    seed: int = 0,
) -> PoolContext:
    """A :class:`PoolContext` from long ``prompt_id, model_id, score`` rows (the pool's training scores)."""
    pairs = pairs[["prompt_id", "model_id", "score"]]
    if pairs.empty:
        raise DataError("onboarding pool: no scored pair.")
    model_ids = np.sort(pairs["model_id"].unique()).astype(np.int64)
    prompt_ids = np.sort(pairs["prompt_id"].unique()).astype(np.int64)
    scores = np.full((len(prompt_ids), len(model_ids)), np.nan)
    scores[np.searchsorted(prompt_ids, pairs["prompt_id"]), np.searchsorted(model_ids, pairs["model_id"])] = pairs[
        "score"
    ].to_numpy(np.float64)
    order = np.argsort(np.asarray(query_ids, dtype=np.int64), kind="stable")
    return PoolContext(
        model_ids=model_ids,
        prompt_ids=prompt_ids,
        scores=scores,
        query_ids=np.asarray(query_ids, dtype=np.int64)[order],
        query_vectors=np.asarray(query_vectors, dtype=np.float32)[order],
        forbidden_prompt_ids=np.unique(np.asarray(forbidden_prompt_ids, dtype=np.int64)),
        forbidden_model_ids=np.unique(np.asarray(forbidden_model_ids, dtype=np.int64)),
        seed=int(seed),
    )


# --------------------------------------------------------------------------------------------------
# the interface
# --------------------------------------------------------------------------------------------------
@dataclass
class OnboardedModel:
    """A new model onboarded from `n_queries` scored queries; `predict` gives P(correct) for any queries."""

    method: str
    n_queries: int
    mean: float
    predictor: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    details: dict = field(default_factory=dict)  # what was chosen (λ, K, voters, ...)

    def predict(self, query_encodings) -> np.ndarray:
        """P(correct) float64 [n] of the new model on queries given by their encodings [n, d]."""
        x = np.asarray(query_encodings, dtype=np.float32)
        if x.ndim != 2:
            raise DataError(f"{self.method}: query encodings must be [n, dim], got shape {x.shape}.")
        return np.clip(np.asarray(self.predictor(x), dtype=np.float64).reshape(-1), 0.0, 1.0)


class OnboardingMethod:
    """Base class: metadata on the class (as :mod:`locus.methods` do), ``fit`` once, ``onboard`` per model."""

    name: ClassVar[str]
    label: ClassVar[str]
    latex_label: ClassVar[str]
    order: ClassVar[int]
    color: ClassVar[str | None] = None
    linestyle: ClassVar[str] = "-"
    retrains: ClassVar[bool] = False  # True would mean: the pool's model is retrained to take a new model in
    Params: ClassVar[type[MethodParams]] = NoParams  # the method's settings, as every method of locus.methods

    def __init__(self, **params):
        self.p = self.Params.from_dict(params)  # checked once; read by attribute
        self.pool: PoolContext | None = None

    def fit(self, pool: PoolContext) -> OnboardingMethod:
        if not isinstance(pool, PoolContext):
            raise TypeError(f"{self.name}: fit() takes a PoolContext, got {type(pool).__name__}")
        self.pool = pool
        self._fit(pool)
        return self

    def _fit(self, pool: PoolContext) -> None:
        return None

    def onboard(self, query_ids, scores) -> OnboardedModel:
        """The new model from its scores on `query_ids` (distinct training-split queries of the pool's)."""
        return self._onboard(*self._checked(query_ids, scores))

    def onboard_many(self, sets) -> list[OnboardedModel]:
        """:meth:`onboard` of several new models, each from its own (query_ids, scores); methods that fit a vector
        by gradient descent fit them together (each as if alone, far fewer steps)."""
        return self._onboard_many([self._checked(ids, scores) for ids, scores in sets])

    def _onboard_many(self, checked: list) -> list[OnboardedModel]:
        return [self._onboard(*c) for c in checked]

    def _checked(self, query_ids, scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.pool is None:
            raise RuntimeError(f"{self.name}: fit() first")
        ids = np.asarray(query_ids, dtype=np.int64).reshape(-1)
        y = np.asarray(scores, dtype=np.float64).reshape(-1)
        if len(ids) == 0 or len(ids) != len(y):
            raise DataError(
                f"{self.name}: onboard() needs one score per query and at least one, got {len(y)} for {len(ids)}."
            )
        if len(np.unique(ids)) != len(ids):
            raise DataError(f"{self.name}: onboard() needs distinct queries.")
        if not np.all((y >= 0) & (y <= 1)):
            raise DataError(f"{self.name}: scores must lie in [0, 1] (no NaN).")
        vectors = self.pool.vectors(ids)  # refuses held-out test queries
        return ids, vectors, y

    def onboard_vectors(self, vectors, scores, query_ids=None) -> OnboardedModel:
        """The new model from the encodings `vectors` [k, d] of its scored prompts (any texts: a served model's),
        with the checks of :meth:`onboard`. `query_ids`: each prompt's id among the pool's queries, or
        :data:`NEW_QUERY` for a text the pool lacks (the default for all)."""
        if self.pool is None:
            raise RuntimeError(f"{self.name}: fit() first")
        x = np.asarray(vectors, dtype=np.float32)
        y = np.asarray(scores, dtype=np.float64).reshape(-1)
        if len(y) == 0 or x.ndim != 2 or len(x) != len(y):
            raise DataError(
                f"{self.name}: needs one score per scored prompt and at least one, got {len(y)} for {len(x)}."
            )
        if x.shape[1] != self.pool.query_vectors.shape[1]:
            raise DataError(
                f"{self.name}: the prompts are {x.shape[1]}-d encodings, the pool's "
                f"{self.pool.query_vectors.shape[1]}-d; encode them with the run's encoder."
            )
        if not np.all((y >= 0) & (y <= 1)):
            raise DataError(f"{self.name}: scores must lie in [0, 1] (no NaN).")
        if not np.isfinite(x).all():
            raise DataError(f"{self.name}: the prompts' encodings hold NaN/Inf.")
        ids = np.full(len(y), NEW_QUERY, np.int64) if query_ids is None else np.asarray(query_ids, np.int64).copy()
        known = ids != NEW_QUERY
        if len(np.unique(ids[known])) != known.sum():
            raise DataError(f"{self.name}: a prompt of the data set is given twice; give each prompt once.")
        bad = np.intersect1d(ids[known], self.pool.forbidden_prompt_ids)
        if len(bad):
            raise LeakageError(f"{self.name}: {len(bad)} held-out test queries given; onboard from other queries.")
        # ids below every pool query's, so no method mistakes a new text for a pool query
        start = min(int(self.pool.prompt_ids.min()), int(ids.min()), 0) - 1
        ids[~known] = start - np.arange(int((~known).sum()))
        return self._onboard(ids, x, y)

    def _onboard(self, ids: np.ndarray, vectors: np.ndarray, y: np.ndarray) -> OnboardedModel:
        raise NotImplementedError


def normalise(vectors) -> np.ndarray:
    """Rows scaled to unit L2 norm (float32; a zero row stays zero)."""
    x = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def brier(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Brier score over the last axis of `pred` [..., n] against `y` [n]."""
    return np.mean((pred - y) ** 2, axis=-1)


# --------------------------------------------------------------------------------------------------
# the floor
# --------------------------------------------------------------------------------------------------
class MeanAccuracy(OnboardingMethod):
    name = "mean_accuracy"
    label = "mean accuracy (floor)"
    latex_label = "Mean accuracy (floor)"
    order = 90
    color = "#7f7f7f"
    linestyle = "--"

    def _onboard(self, ids, vectors, y):
        mean = float(np.mean(y))
        return OnboardedModel(self.name, len(y), mean, lambda x: np.full(len(x), mean))


# --------------------------------------------------------------------------------------------------
# methods tuned on validation models
# --------------------------------------------------------------------------------------------------
class Tuned(OnboardingMethod):
    """A method with a setting chosen per k on validation models of the pool (see the module docstring)."""

    Params = TunedParams

    def _fit(self, pool):
        scored = (~np.isnan(pool.scores)).sum(axis=0)
        eligible = np.flatnonzero(scored >= 2)
        rng = np.random.default_rng([pool.seed, _SEED_KEY, 0])
        n_val = min(self.p.val_models, max(1, len(pool.model_ids) // 4), len(eligible))
        self.val_positions = np.sort(rng.choice(eligible, n_val, replace=False)) if n_val else _EMPTY
        n_eval = min(self.p.val_queries, len(pool.prompt_ids))
        rows = np.random.default_rng([pool.seed, _SEED_KEY, 1]).choice(len(pool.prompt_ids), n_eval, replace=False)
        self.eval_rows = np.sort(rows)
        self._settings: dict[int, Any] = {}
        self.validation: dict[int, pd.DataFrame] = {}  # per k: each candidate's validation Brier score
        self._fit_features(pool)

    def _fit_features(self, pool) -> None:
        raise NotImplementedError

    def candidates(self) -> list:
        raise NotImplementedError

    def _val_losses(self, v: int, drawn: np.ndarray, y: np.ndarray, eval_pos: np.ndarray, y_eval) -> np.ndarray:
        """Brier score of every candidate for validation model position `v` onboarded from pool rows `drawn`
        (scores `y`), on the rows ``self.eval_rows[eval_pos]`` (scores `y_eval`)."""
        raise NotImplementedError

    def setting_for(self, k: int):
        """The candidate with the lowest validation Brier score at k queries (cached per k)."""
        k = int(k)
        if k in self._settings:
            return self._settings[k]
        cands = self.candidates()
        total, count = np.zeros(len(cands)), 0
        scores = self.pool.scores
        for v in self.val_positions:
            answered = np.flatnonzero(~np.isnan(scores[:, v]))
            for r in range(self.p.val_repeats):
                rng = np.random.default_rng([self.pool.seed, _SEED_KEY, 2, int(v), r, k])
                drawn = np.sort(rng.choice(answered, min(k, len(answered) - 1), replace=False))
                eval_pos = np.flatnonzero(
                    ~np.isnan(scores[self.eval_rows, v]) & ~np.isin(self.eval_rows, drawn, assume_unique=True)
                )
                if len(eval_pos) == 0:
                    continue
                y_eval = scores[self.eval_rows[eval_pos], v]
                total += self._val_losses(int(v), drawn, scores[drawn, v], eval_pos, y_eval)
                count += 1
        losses = total / max(count, 1)
        best = int(np.argmin(losses)) if count else 0
        self.validation[k] = pd.DataFrame({"setting": [str(c) for c in cands], "brier": losses if count else np.nan})
        self._settings[k] = cands[best]
        return cands[best]


def _kmeans(x: np.ndarray, n: int, seed: int):
    """(labels, centres) of K-means of rows `x` into min(n, rows) clusters (seeded, one k-means++ start, one
    BLAS thread); on more than :data:`KMEANS_SAMPLE` rows the centres are fitted on a seeded sample of them
    and every row goes to its nearest centre."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    n = max(1, min(int(n), len(x)))
    if n == 1:
        return np.zeros(len(x), dtype=np.int64), x.mean(axis=0, keepdims=True).astype(np.float32)
    rng = np.random.default_rng([int(seed), _SEED_KEY, 3])
    fit_rows = np.sort(rng.choice(len(x), KMEANS_SAMPLE, replace=False)) if len(x) > KMEANS_SAMPLE else slice(None)
    with warnings.catch_warnings(), threadpool_limits(limits=1):  # fewer distinct points than clusters: repeats
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(n_clusters=n, n_init=1, random_state=int(seed)).fit(x[fit_rows])
    centres = km.cluster_centers_.astype(np.float32)
    return _nearest(x, centres), centres


def _nearest(x: np.ndarray, centres: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """Index of the nearest centre (Euclidean) of each row; `allowed` [n, C] masks centres out."""
    score = x @ centres.T - 0.5 * np.sum(centres**2, axis=1)[None, :]
    if allowed is not None:
        score = np.where(allowed, score, -np.inf)
    return np.argmax(score, axis=1)


class ClusterShrinkage(Tuned):
    name = "cluster_shrinkage"
    label = "cluster shrinkage (HierShrink)"
    latex_label = "Cluster shrinkage (HierShrink)"
    order = 20
    color = "#1f77b4"
    Params = ClusterShrinkageParams

    def _fit_features(self, pool):
        x = normalise(pool.pool_vectors)
        p = len(x)
        n_parents = min(self.p.parents, max(1, p // 32))
        n_leaves = min(self.p.leaves, max(n_parents, p // 8))
        parent, self.parent_centres = _kmeans(x, n_parents, pool.seed)
        per_parent = max(1, int(np.ceil(n_leaves / len(self.parent_centres))))
        centres, leaf_parent, leaf = [], [], np.zeros(p, dtype=np.int64)
        for c in range(len(self.parent_centres)):
            members = np.flatnonzero(parent == c)
            if len(members) == 0:
                continue
            labels, sub = _kmeans(x[members], per_parent, pool.seed + 1 + c)
            leaf[members] = labels + len(centres)
            centres.extend(sub)
            leaf_parent.extend([c] * len(sub))
        self.leaf_centres = np.asarray(centres, dtype=np.float32)
        self.leaf_parent = np.asarray(leaf_parent, dtype=np.int64)
        self.has_leaves = np.isin(np.arange(len(self.parent_centres)), self.leaf_parent)  # no empty parent
        self.row_parent, self.row_leaf = parent, leaf

    def assign(self, vectors) -> tuple[np.ndarray, np.ndarray]:
        """(parent, leaf) of each query: the nearest parent centre, then its nearest child."""
        x = normalise(vectors)
        parent = _nearest(x, self.parent_centres, self.has_leaves[None, :])
        leaf = _nearest(x, self.leaf_centres, self.leaf_parent[None, :] == parent[:, None])
        return parent, leaf

    def candidates(self):
        return [float(v) for v in self.p.lambdas]

    def leaf_estimates(self, parent, leaf, y, lambdas) -> np.ndarray:
        """P(correct) per leaf [len(lambdas), leaves]: leaf shrunk toward parent, parent toward the mean."""
        lam = np.asarray(lambdas, dtype=np.float64)[:, None]
        mean = float(np.mean(y))
        n_par, n_leaf = len(self.parent_centres), len(self.leaf_centres)
        hp, np_ = np.bincount(parent, y, n_par), np.bincount(parent, minlength=n_par)
        hl, nl = np.bincount(leaf, y, n_leaf), np.bincount(leaf, minlength=n_leaf)
        with np.errstate(invalid="ignore", divide="ignore"):
            pp = np.where(np_ + lam > 0, (hp + lam * mean) / (np_ + lam), mean)  # [L, parents]
            prior = pp[:, self.leaf_parent]
            return np.where(nl + lam > 0, (hl + lam * prior) / (nl + lam), prior)

    def _val_losses(self, v, drawn, y, eval_pos, y_eval):
        est = self.leaf_estimates(self.row_parent[drawn], self.row_leaf[drawn], y, self.candidates())
        return brier(est[:, self.row_leaf[self.eval_rows[eval_pos]]], y_eval)

    def _onboard(self, ids, vectors, y):
        lam = self.setting_for(len(y))
        parent, leaf = self.assign(vectors)
        est = self.leaf_estimates(parent, leaf, y, [lam])[0]

        def predict(x):
            return est[self.assign(x)[1]]

        return OnboardedModel(self.name, len(y), float(np.mean(y)), predict, {"lambda": lam})


class ClusterErrorVector(Tuned):
    name = "cluster_error_vector"
    label = "cluster error vector (UniRoute)"
    latex_label = "Cluster error vector (UniRoute)"
    order = 30
    color = "#2ca02c"
    Params = ClusterErrorVectorParams

    def _fit_features(self, pool):
        x = normalise(pool.pool_vectors)
        cap = max(1, len(x) // 4)
        ks = sorted({min(int(k), cap) for k in self.p.clusters})
        self.centres, self.row_cluster = {}, {}
        for k in ks:
            labels, centres = _kmeans(x, k, pool.seed)
            self.centres[k], self.row_cluster[k] = centres, labels

    def candidates(self):
        return sorted(self.centres)

    @staticmethod
    def cluster_accuracy(cluster, y, n_clusters: int) -> np.ndarray:
        """The model's accuracy per cluster [n_clusters]; its mean where it answered none of the cluster."""
        hits, n = np.bincount(cluster, y, n_clusters), np.bincount(cluster, minlength=n_clusters)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, hits / np.maximum(n, 1), float(np.mean(y)))

    def _val_losses(self, v, drawn, y, eval_pos, y_eval):
        out = []
        for k in self.candidates():
            acc = self.cluster_accuracy(self.row_cluster[k][drawn], y, len(self.centres[k]))
            out.append(brier(acc[self.row_cluster[k][self.eval_rows[eval_pos]]], y_eval))
        return np.asarray(out)

    def _onboard(self, ids, vectors, y):
        k = self.setting_for(len(y))
        centres = self.centres[k]
        acc = self.cluster_accuracy(_nearest(normalise(vectors), centres), y, len(centres))

        def predict(x):
            return acc[_nearest(normalise(x), centres)]

        return OnboardedModel(self.name, len(y), float(np.mean(y)), predict, {"clusters": len(centres)})


class KnnAgreement(Tuned):
    name = "knn_agreement"
    label = "kNN on agreement"
    latex_label = "$k$NN on agreement"
    order = 40
    color = "#8c564b"
    Params = KnnAgreementParams

    def _fit_features(self, pool):
        self.x = normalise(pool.pool_vectors)
        self.scored = ~np.isnan(pool.scores)
        self.filled = np.where(self.scored, pool.scores, 0.0)
        self.model_mean = np.array(
            [
                np.mean(pool.scores[self.scored[:, j], j]) if self.scored[:, j].any() else 0.5
                for j in range(len(pool.model_ids))
            ]
        )
        self._cache: tuple[str, np.ndarray] | None = None
        # each validation query's votes, leave-one-out: its own row is not among its neighbours
        self.eval_votes = self.votes(self.x[self.eval_rows], exclude=self.eval_rows)

    def votes(self, vectors, exclude: np.ndarray | None = None) -> np.ndarray:
        """Every pool model's vote on each query [n, M]: its mean score on the `neighbours` nearest pool
        queries it answered among the nearest (its overall mean where it answered none of them); `exclude`
        [n]: a pool row to leave out per query (validation)."""
        x = normalise(vectors)
        n_nb = max(1, min(self.p.neighbours, len(self.x) - (exclude is not None)))
        out = np.empty((len(x), self.filled.shape[1]))
        for start in range(0, len(x), CHUNK):
            sims = x[start : start + CHUNK] @ self.x.T
            if exclude is not None:
                sims[np.arange(len(sims)), exclude[start : start + CHUNK]] = -np.inf
            nb = np.argpartition(-sims, n_nb - 1, axis=1)[:, :n_nb]
            hits, count = self.filled[nb].sum(axis=1), self.scored[nb].sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start : start + CHUNK] = np.where(count > 0, hits / np.maximum(count, 1), self.model_mean)
        return out

    def _votes_cached(self, vectors) -> np.ndarray:
        """:meth:`votes` of `vectors`, kept for the last set asked for (every new model is scored on one set)."""
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        key = hashlib.sha1(x.tobytes()).hexdigest() + str(x.shape)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self.votes(x))
        return self._cache[1]

    def candidates(self):
        cap = max(1, len(self.pool.model_ids) - 1)
        return sorted({min(int(v), cap) for v in self.p.voters})

    @staticmethod
    def agreement(y, pool_scores) -> np.ndarray:
        """Mean agreement 1 - |y - s| of the new model with each pool model over the k queries [M]."""
        return 1.0 - np.mean(np.abs(pool_scores - y[:, None]), axis=0)

    @staticmethod
    def voters(agreement, n_voters: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, weights summing to 1) of the `n_voters` pool models agreeing most (ties: the lower
        position first), weighted by their agreement."""
        order = np.argsort(-agreement, kind="stable")[:n_voters]
        w = np.maximum(agreement[order], 0.0)
        return order, (w / w.sum() if w.sum() > 0 else np.full(len(order), 1.0 / len(order)))

    def _k_scores(self, rows: np.ndarray, found: np.ndarray, vectors) -> np.ndarray:
        """Pool scores on the new model's k queries [k, M]: the real ones where a pool model answered the
        query, else its vote."""
        real = np.zeros((len(rows), len(self.pool.model_ids)), dtype=bool)
        real[found] = self.scored[rows[found]]
        return np.where(real, self.filled[rows], self.votes(vectors))

    def _val_losses(self, v, drawn, y, eval_pos, y_eval):
        k_scores = np.where(self.scored[drawn], self.filled[drawn], self.model_mean[None, :])
        agree = self.agreement(y, k_scores)
        agree[v] = -np.inf  # the validation model never votes on itself
        votes = self.eval_votes[eval_pos]
        out = []
        for n in self.candidates():
            order, w = self.voters(agree, n)
            out.append(brier(votes[:, order] @ w, y_eval))
        return np.asarray(out)

    def _onboard(self, ids, vectors, y):
        n_voters = min(self.setting_for(len(y)), len(self.pool.model_ids))
        pos = np.searchsorted(self.pool.prompt_ids, ids)
        pos = np.minimum(pos, len(self.pool.prompt_ids) - 1)
        found = self.pool.prompt_ids[pos] == ids
        agree = self.agreement(y, self._k_scores(pos, found, vectors))
        order, w = self.voters(agree, n_voters)

        def predict(x):
            return self._votes_cached(x)[:, order] @ w

        details = {
            "voters": n_voters,
            "nearest": self.pool.model_ids[order].tolist(),
            "agreement": agree[order].round(4).tolist(),
        }
        return OnboardedModel(self.name, len(y), float(np.mean(y)), predict, details)


# --------------------------------------------------------------------------------------------------
# LOCUS
# --------------------------------------------------------------------------------------------------
def sigmoid(logits) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(np.asarray(logits, dtype=np.float64), -40, 40)))


class EmbeddingOnboarding(OnboardingMethod):
    """A new model as a vector of a trained embedding method's space (``method``: a fitted method with ``embed``
    and ``logits_for_embeddings``, e.g. ``locus.run_artifacts.load_checkpoint(run).method`` of a run trained
    without the held-out models), scored by that method's own decoder (``probabilities``: logits -> P, default
    the sigmoid). The pool's network is never retrained; how the vector is found is the method's."""

    method_name: ClassVar[str]  # the name of the trained method this onboarding needs

    def __init__(self, method=None, probabilities=None, **params):
        super().__init__(**params)
        self.method, self.probabilities = method, probabilities

    def _fit(self, pool):
        method = self.method
        if method is None or not (hasattr(method, "embed") and hasattr(method, "logits_for_embeddings")):
            raise ConfigError(
                f"onboarding method {self.name!r} needs a fitted {self.method_name} method (method=...: a "
                "checkpoint loaded with locus.run_artifacts.load_checkpoint)."
            )
        given = getattr(method, "name", self.method_name)
        if given != self.method_name:
            raise ConfigError(f"onboarding method {self.name!r} needs a {self.method_name} run, got a {given} run.")
        trained = getattr(method, "model_ids", None)
        trained = _EMPTY if trained is None else np.asarray(trained, dtype=np.int64)
        leaked = np.intersect1d(trained, pool.forbidden_model_ids)
        if len(leaked):
            raise LeakageError(
                f"{self.name}: the checkpoint was trained on held-out model(s) {leaked[:5].tolist()}; give a run "
                "trained without them (locus train --hold-out)."
            )
        self.to_probability = self.probabilities or sigmoid

    def _onboard(self, ids, vectors, y):
        return self._onboard_many([(ids, vectors, y)])[0]

    def _onboard_many(self, checked):
        method = self.method
        if len(checked) == 1:  # one model: the method's own embed (embed_many agrees with it up to rounding)
            _, vectors, y = checked[0]
            zs = np.asarray(method.embed(vectors, y.astype(np.float32)), dtype=np.float32)[None, :]
        else:
            zs = np.asarray(method.embed_many([(v, y.astype(np.float32)) for _, v, y in checked]), dtype=np.float32)
        # the models of one batch score the same queries: one pass of the network for all of them (its query
        # features are the cost), kept for the last query array asked about
        shared: dict = {}

        def logits(x) -> np.ndarray:
            if shared.get("x") is not x:
                shared["x"], shared["logits"] = x, method.logits_for_embeddings(x, zs)
            return shared["logits"]

        return [self._model(i, logits, y, zs.shape[-1]) for i, (_, _, y) in enumerate(checked)]

    def _model(self, i: int, logits, y: np.ndarray, dim: int) -> OnboardedModel:
        def predict(x):
            return self.to_probability(logits(x)[:, i])

        return OnboardedModel(self.name, len(y), float(np.mean(y)), predict, {"embedding_dim": int(dim)})


class LocusOnboarding(EmbeddingOnboarding):
    """LOCUS: the new model embedded by one forward pass of a trained run's encoder, its decoder's P(correct)
    (``probabilities``: :func:`locus.inference.probability_map` gives the run's calibrated map)."""

    name = "locus"
    method_name = "locus"
    label = "LOCUS (one forward pass)"
    latex_label = "\\textsc{Locus} (ours)"
    order = 10
    color = "#d62728"


class EmbedLLMFit(EmbeddingOnboarding):
    """EmbedLLM: the new model's vector fitted by gradient descent on its k scores with the trained network
    frozen (``EmbedLLM.embed``: ``embed_steps`` Adam steps from the seed's start)."""

    name = "embedllm_fit"
    method_name = "embedllm"
    label = "EmbedLLM (vector fitted, net frozen)"
    latex_label = "EmbedLLM (vector fitted)"
    order = 50
    color = "#17becf"
    linestyle = "-."


class IRTNetFit(EmbeddingOnboarding):
    """IRT-Net: the new model's ability vector fitted on its k scores with the trained network frozen."""

    name = "irt_net_fit"
    method_name = "irt_net"
    label = "IRT-Net (vector fitted, net frozen)"
    latex_label = "IRT-Net (vector fitted)"
    order = 55
    color = "#9467bd"
    linestyle = "-."


FIT_METHODS = {cls.method_name: cls.name for cls in (EmbedLLMFit, IRTNetFit)}  # trained method -> onboarding


# --------------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------------
METHODS: dict[str, type[OnboardingMethod]] = {
    cls.name: cls
    for cls in (
        LocusOnboarding,
        EmbedLLMFit,
        IRTNetFit,
        ClusterShrinkage,
        ClusterErrorVector,
        KnnAgreement,
        MeanAccuracy,
    )
}


def names() -> list[str]:
    """Registered onboarding methods in table order."""
    return sorted(METHODS, key=lambda n: (METHODS[n].order, n))


def training_free() -> list[str]:
    """The methods that need no trained network of their own (only the pool's scores and encodings)."""
    return [n for n in names() if not issubclass(METHODS[n], EmbeddingOnboarding)]


def method_class(name: str) -> type[OnboardingMethod]:
    if name not in METHODS:
        raise ConfigError(f"unknown onboarding method {name!r}; known: {', '.join(names())}")
    return METHODS[name]


def create(name: str, **params) -> OnboardingMethod:
    return method_class(name)(**params)
