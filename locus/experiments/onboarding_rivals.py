"""Onboarding a new model without retraining: LOCUS's one forward pass beside training-free rivals (issue 49;
the methods are :mod:`locus.onboarding_rivals`).

Protocol (the field's: UniRoute holds out 38 of EmbedLLM's 112 models; here any number of repeats):

- each **repeat** is one held-out set and the **pool** of the other models: a LOCUS run trained without the
  held-out models (``locus train --hold-out draw:COUNT:SEED``, a seeded random draw; or named models), its
  models with their training-split scores (``pool="split"``: every training-split score of those models in the
  data set) or exactly the run's training evaluations (``pool="run"``, what its LOCUS saw); every method is
  fitted once per repeat on it, and tunes what it tunes (λ, K, voters) on validation models *of the pool*;
  the embedding fits (EmbedLLM, IRT-Net) use their own runs trained without the same models;
- each **held-out model** and each k of the grid: the same seeded draw of k of its training-split
  evaluations as the onboarding figure (:func:`locus.experiments.onboarding.draw_evaluations`, repeat 0; all
  of them when it has fewer) and, with a selector, the k queries an active-onboarding selector picks from the
  pool's information alone (:class:`Draws`); every method onboards it from those k, nothing else of it;
- **metrics** on the **test** queries, every repeat's held-out models pooled: correctness accuracy and ROC-AUC
  over all their labelled test pairs, routing accuracy among the held-out models of a repeat (each test query
  to the new model with the highest predicted P(correct)) and among old plus new (the pool's models scored by
  the repeat's LOCUS run), the area under the accuracy-cost curve of that router (cost-weighted choices over
  a grid of λ, both AIQ normalisations of :func:`locus.decisions.aiq`) where the models have costs; each with
  a paired percentile bootstrap interval over test queries (the same resamples for every method at one k);
  the differences to LOCUS with their paired intervals; and the per-model correctness accuracy and ROC-AUC
  averaged over held-out models with a t-interval over models, their differences to LOCUS paired by model.

The held-out models' test queries never enter fitting, tuning or onboarding: the pool is built from the
training split, refuses the held-out models and the test queries (:class:`locus.onboarding_rivals.PoolContext`
raises :class:`~locus.onboarding_rivals.LeakageError`), and every draw is checked to hold training-split
queries only. Outputs: a tidy CSV, a LaTeX table, a figure.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from locus import onboarding_rivals as rivals
from locus.errors import ConfigError, DataError
from locus.experiments import bootstrap
from locus.experiments.onboarding import draw_evaluations

DEFAULT_SIZES = (8, 16, 32, 64, 128, 256)
REFERENCE = "locus"  # differences are to LOCUS (when it is compared)
RANDOM = "random"  # the draw of k evaluations at random (the onboarding figure's)
STATIC_SELECTORS = ("random", "stratified", "anchor")  # active selectors that need nothing of the new model
POOL_ONLY = "pool_only"  # routing among the pool's models alone (does adding the new ones help?)
POOLS = ("split", "run")
POOLED = ("correctness_acc", "roc_auc", "routing_acc", "routing_acc_all")  # bootstrap over test queries
PER_MODEL = ("correctness_acc_per_model", "roc_auc_per_model")  # mean over held-out models, t-interval
AIQ_NORMS = ("max", "range")  # locus.decisions.AIQ_NORMALISATIONS: the cost axis from 0, or over the cost range
AIQ = tuple(f"aiq_{n}" for n in AIQ_NORMS)  # area under the accuracy-cost curve, old + new models
REFERENCE_ROWS = ("oracle", "random")  # routing references among the held-out models
METRIC_LABELS = {
    "correctness_acc": "Correctness accuracy (%)",
    "roc_auc": "ROC-AUC, pooled pairs (%)",
    "roc_auc_per_model": "ROC-AUC, mean over models (%)",
    "correctness_acc_per_model": "Correctness accuracy, mean over models (%)",
    "routing_acc": "Routing accuracy among the new models (%)",
    "routing_acc_all": "Routing accuracy among old and new models (%)",
    "aiq_max": "Accuracy-cost area, old and new models (AIQ / max cost, %)",
    "aiq_range": "Accuracy-cost area, old and new models (AIQ / cost range, %)",
}
TABLE_METRICS = ("correctness_acc", "roc_auc_per_model", "routing_acc", "routing_acc_all", "aiq_range")
COLUMNS = (
    "method",
    "draw",
    "k",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n_models",
    "n_queries",
    "repeats",
    "seconds_per_model",
    "fit_seconds",
    "setting",
)
_AUC_KEY = 4901  # keys the ROC-AUC resampling apart from other seeded draws
_AIQ_KEY = 4902  # keys the accuracy-cost resampling
_CLIP = 1e-9


@dataclass
class Repeat:
    """One held-out set of the protocol: its models, the pool every method was fitted on, and what they gave."""

    held_out: np.ndarray
    pool: rivals.PoolContext
    probs: dict  # (method, draw, k) -> P(correct) [test queries x held-out models]
    labels: np.ndarray  # [test queries x held-out models]
    seconds: dict = field(default_factory=dict)  # (method, draw, k) -> CPU seconds per model
    fit_seconds: dict = field(default_factory=dict)  # method -> CPU seconds of the fit on the pool
    settings: dict = field(default_factory=dict)  # (method, draw, k) -> what the method chose (text)
    pool_probs: np.ndarray | None = None  # the pool run's P(correct) of its own models [test x pool models]
    pool_labels: np.ndarray | None = None  # [test x pool models]
    costs: np.ndarray | None = None  # cost of each pool model then each held-out model (column order)


@dataclass
class Comparison:
    """The result of :func:`compare`: the tidy frame and the repeats it was computed from."""

    frame: pd.DataFrame
    repeats: list
    sizes: list
    methods: list
    draws: list
    cost_column: str | None = None

    # the first repeat's view (one held-out set), kept for callers of a single comparison
    @property
    def probabilities(self) -> dict:
        return {(m, k): p for (m, d, k), p in self.repeats[0].probs.items() if d == RANDOM}

    @property
    def labels(self) -> np.ndarray:
        return self.repeats[0].labels

    @property
    def held_out(self) -> np.ndarray:
        return np.concatenate([r.held_out for r in self.repeats])

    @property
    def pool(self) -> rivals.PoolContext:
        return self.repeats[0].pool

    @property
    def settings(self) -> dict:
        return {(m, k): t for (m, d, k), t in self.repeats[0].settings.items() if d == RANDOM}


# --------------------------------------------------------------------------------------------------
# onboarding every held-out model with every method
# --------------------------------------------------------------------------------------------------
def build_pool(data, encodings, pool_pairs: pd.DataFrame, held_out, seed: int = 0) -> rivals.PoolContext:
    """The pool of the comparison: `pool_pairs` (the pool models' scores) restricted to the training split;
    candidate queries = the training split; the held-out models and the test queries forbidden."""
    train_ids = data.split_queries("train")["prompt_id"].to_numpy(np.int64)
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    pairs = pool_pairs[pool_pairs["prompt_id"].isin(train_ids)]
    if len(pairs) < len(pool_pairs):
        raise rivals.LeakageError(
            f"onboarding pool: {len(pool_pairs) - len(pairs)} pool scores are not of training-split queries; "
            "the pool is fitted on training-split scores only."
        )
    return rivals.pool_from_pairs(
        pairs,
        train_ids,
        encodings.take(train_ids),
        forbidden_prompt_ids=test_ids,
        forbidden_model_ids=held_out,
        seed=seed,
    )


def fit_methods(names, pool, locus_method=None, probabilities=None, params: dict | None = None, trained=None):
    """{name: fitted onboarding method} and {name: seconds the fit took}. `trained`: {onboarding name: the
    trained method an embedding fit needs} (e.g. ``{"embedllm_fit": <an EmbedLLM run's method>}``)."""
    fitted, seconds = {}, {}
    for name in names:
        extra = dict((params or {}).get(name, {}))
        if name == "locus":
            extra.update(method=locus_method, probabilities=probabilities)
        elif name in (trained or {}):
            extra.update(method=trained[name])
        start = time.process_time()
        fitted[name] = rivals.create(name, **extra).fit(pool)
        seconds[name] = time.process_time() - start
    return fitted, seconds


def check_selector(name: str | None) -> str | None:
    """An active-onboarding selector every method can share: one that needs nothing of the new model."""
    if name is None:
        return None
    from locus.onboard import check_selector as known

    known(name)
    if name not in STATIC_SELECTORS:
        raise ConfigError(
            f"--selector {name!r}: choose one of {', '.join(STATIC_SELECTORS)}; {name} picks each query from the "
            "embedding so far, which only LOCUS has (compare it in `locus active-onboarding`)."
        )
    return name


class Draws:
    """Which k training-split evaluations of a held-out model each method is given: ``random`` (the onboarding
    figure's seeded draw, repeat 0) and, with `selector`, the queries an active-onboarding selector picks from
    the pool's information alone (the same k queries for every method; the held-out model's answers enter
    only as the scores of the picked queries)."""

    def __init__(self, data, encodings, pool: rivals.PoolContext, seed: int, selector=None, locus_method=None):
        self.train = data.split_scores("train")
        self.seed, self.selector, self.pool = int(seed), check_selector(selector), pool
        self.names = [RANDOM] + ([self.selector] if self.selector else [])
        self._cache: dict = {}
        self._contexts: dict = {}
        if self.selector:
            queries = data.split_queries("train").set_index("prompt_id")
            self._benchmarks = queries["benchmark"].astype(str)
            self._vectors = encodings
            self._method = locus_method

    def __call__(self, draw: str, model_id: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        if draw == RANDOM:
            return draw_evaluations(self.train, int(model_id), int(k), 0, self.seed)
        rows = self.train[self.train["model_id"] == int(model_id)].sort_values("prompt_id")
        ids = rows["prompt_id"].to_numpy(np.int64)
        if len(ids) <= k:
            chosen = ids
        else:  # the choice depends on the candidates only: one per (k, candidate set)
            key = (int(k), ids.tobytes())
            if key not in self._cache:
                self._cache[key] = self._select(ids, int(k))
            chosen = self._cache[key]
        scores = rows.set_index("prompt_id")["score"].reindex(chosen).to_numpy(np.float32)
        return chosen, scores

    def _select(self, ids: np.ndarray, k: int) -> np.ndarray:
        from locus.onboard import select

        return select(self.selector, ids, k, self._context(ids))

    def _context(self, ids: np.ndarray):
        """What the selector sees of the candidates `ids`: one per candidate set, shared by every k."""
        from locus.onboard import Context, pool_patterns

        key = ids.tobytes()
        if key in self._contexts:
            return self._contexts[key]
        vectors = self.pool.vectors(ids)
        pos = np.minimum(np.searchsorted(self.pool.prompt_ids, ids), len(self.pool.prompt_ids) - 1)
        found = self.pool.prompt_ids[pos] == ids  # the pool's scores of the candidates, NaN where it has none
        scores = np.where(found[:, None], self.pool.scores[pos], np.nan)
        if self._method is not None:
            patterns = pool_patterns(self._method, vectors, scores)
        else:  # no run to predict the pool's unevaluated cells: each model's mean stands in
            patterns = np.where(np.isfinite(scores), scores, np.nanmean(scores, axis=0, keepdims=True))
        self._contexts[key] = Context(
            vectors=vectors,
            benchmarks=self._benchmarks.reindex(ids).to_numpy(),
            patterns=np.nan_to_num(patterns, nan=0.5),
            seed=self.seed,
        )
        return self._contexts[key]


def onboard_all(fitted: dict, data, encodings, held_out, sizes, draws: Draws, pool: rivals.PoolContext):
    """({(method, draw, k): P(correct) [test x held-out]}, {(method, draw, k): CPU seconds per model},
    {(method, draw, k): setting})."""
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    phi = encodings.take(test_ids)
    probs, seconds, chosen = {}, {}, {}
    for draw in draws.names:
        for k in sizes:
            for name in fitted:
                probs[(name, draw, k)] = np.empty((len(test_ids), len(held_out)))
                seconds[(name, draw, k)] = 0.0
            sets = []
            for m in held_out:
                ids, scores = draws(draw, int(m), int(k))
                if np.isin(ids, test_ids).any() or np.isin(ids, pool.forbidden_prompt_ids).any():
                    raise rivals.LeakageError(f"held-out model {int(m)}: its onboarding draw holds test queries.")
                sets.append((ids, scores))
            for name, method in fitted.items():
                start = time.process_time()
                for j, onboarded in enumerate(method.onboard_many(sets)):  # the embedding fits: all at once
                    probs[(name, draw, k)][:, j] = onboarded.predict(phi)
                    chosen[(name, draw, k)] = _setting_text(onboarded.details)
                seconds[(name, draw, k)] = (time.process_time() - start) / max(len(held_out), 1)
    return probs, seconds, chosen


def _setting_text(details: dict) -> str:
    keys = ("lambda", "clusters", "voters")
    return ";".join(f"{key}={details[key]:g}" for key in keys if key in details)


@dataclass
class Setup:
    """One repeat's inputs: the held-out models, the pool's scores, and the pool's LOCUS run (when compared)."""

    held_out: np.ndarray
    pool_pairs: pd.DataFrame
    locus_method: object | None = None
    probabilities: object | None = None
    trained: dict = field(default_factory=dict)  # embedding fits: {onboarding name: a run's method, same pool}


def onboard_repeat(
    data, encodings, setup: Setup, sizes, seed: int, methods, params=None, selector=None, costs=None
) -> Repeat:
    """Fit every method on the repeat's pool, onboard each held-out model from k of its training-split
    evaluations (every draw), and gather the test labels; the pool run's own P(correct) for routing among old
    plus new models (when a LOCUS run is given)."""
    held = np.unique(np.asarray(setup.held_out, dtype=np.int64))
    pool = build_pool(data, encodings, setup.pool_pairs, held, seed)
    fitted, fit_seconds = fit_methods(methods, pool, setup.locus_method, setup.probabilities, params, setup.trained)
    draws = Draws(data, encodings, pool, seed, selector, setup.locus_method)
    probs, seconds, chosen = onboard_all(fitted, data, encodings, held, sizes, draws, pool)
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    labels = data.label_matrix(test_ids, held)
    if np.isnan(labels).all():
        raise DataError("the held-out models have no test-split evaluation to score the onboarding on.")
    repeat = Repeat(held, pool, probs, labels, seconds, fit_seconds, chosen)
    if setup.locus_method is not None:
        to_p = setup.probabilities or rivals.sigmoid
        repeat.pool_probs = np.asarray(
            to_p(setup.locus_method.predict_logits(encodings.take(test_ids), pool.model_ids)), dtype=np.float64
        )
        repeat.pool_labels = data.label_matrix(test_ids, pool.model_ids)
        if costs is not None:
            by_id = dict(zip(np.asarray(data.model_ids, dtype=np.int64), np.asarray(costs, dtype=np.float64)))
            repeat.costs = np.array([by_id[int(m)] for m in np.concatenate([pool.model_ids, held])])
    return repeat


# --------------------------------------------------------------------------------------------------
# metrics and intervals
# --------------------------------------------------------------------------------------------------
def to_logits(p) -> np.ndarray:
    """log-odds of P(correct), clipped: the correctness and routing rules of :mod:`locus.evaluation` then
    read [p >= 0.5] and the order of p."""
    p = np.clip(np.asarray(p, dtype=np.float64), _CLIP, 1 - _CLIP)
    return np.log(p) - np.log1p(-p)


def auc_parts(p, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W [queries x queries], positives [queries], negatives [queries]) of the pooled ROC-AUC over the
    labelled pairs of `p` / `labels` [queries x models] (labels binarised at 0.5): W[q, q'] counts the
    (positive pair of q, negative pair of q') pairs ranked right, ties a half. With c the number of times
    each query is drawn, AUC = cᵀWc / ((c·positives)(c·negatives)); c = 1 gives the ordinary ROC-AUC."""
    from scipy import sparse

    p, labels = np.asarray(p, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    n = labels.shape[0]
    mask = ~np.isnan(labels)
    query = np.nonzero(mask)[0]
    s, pos = p[mask], labels[mask] >= 0.5
    order = np.argsort(s[pos], kind="stable")  # positive pairs by score
    pos_score, pos_query = s[pos][order], query[pos][order]
    # W = C D: C[q, P - i] counts q's positive pairs at sorted index >= i (of P); a negative pair of q' scored v
    # adds 1/2 at the first positive index scored >= v and 1/2 at the first scored > v (a tie counts a half)
    n_pos = len(pos_score)
    c = np.zeros((n, n_pos + 1), dtype=np.float32)
    c[pos_query, n_pos - np.arange(n_pos)] = 1.0
    np.cumsum(c, axis=1, out=c)
    neg_query, neg_score = query[~pos], s[~pos]
    at = n_pos - np.r_[np.searchsorted(pos_score, neg_score, "left"), np.searchsorted(pos_score, neg_score, "right")]
    d = sparse.csc_matrix(
        (np.full(len(at), 0.5, dtype=np.float32), (at, np.r_[neg_query, neg_query])), shape=(n_pos + 1, n)
    )
    w = np.asarray(c @ d, dtype=np.float32)
    return (
        w,
        np.bincount(query[pos], minlength=n).astype(np.float32),
        np.bincount(query[~pos], minlength=n).astype(np.float32),
    )


def auc_resamples(parts, counts: np.ndarray) -> np.ndarray:
    """Pooled ROC-AUC under each row of query draw counts [B x queries] (NaN without both classes)."""
    w, positives, negatives = parts
    c = np.asarray(counts, dtype=np.float32)
    num = np.einsum("bq,bq->b", c @ w, c, dtype=np.float64)
    den = (c @ positives).astype(np.float64) * (c @ negatives).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _percentile(values, confidence: float) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return math.nan, math.nan
    lo, hi = np.percentile(v, [50 * (1 - confidence), 50 * (1 + confidence)])
    return float(lo), float(hi)


def t_interval(values, confidence: float) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of the finite `values` with a Student-t interval (NaN bounds below 2 values)."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(v.mean())
    if len(v) < 2:
        return mean, math.nan, math.nan, 1
    half = float(stats.t.ppf((1 + confidence) / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return mean, mean - half, mean + half, len(v)


def _summed_parts(matrices) -> dict:
    """bootstrap.per_query's (num, den) per metric, summed over repeats: `matrices` holds one (logits, labels)
    per repeat; each repeat routes among its own models, and a query's numbers add up over the repeats (the
    test queries are the same in every repeat)."""
    total: dict = {}
    for logits, labels in matrices:
        for metric, (num, den) in bootstrap.per_query(logits, labels).items():
            if metric in total:
                total[metric] = (total[metric][0] + num, total[metric][1] + den)
            else:
                total[metric] = (num.astype(np.float64), den.astype(np.float64))
    return total


def _all_models(r: Repeat, p_new) -> tuple[np.ndarray, np.ndarray]:
    """(logits, labels) [test x (pool + held-out)] of routing among old and new models."""
    return to_logits(np.hstack([r.pool_probs, p_new])), np.hstack([r.pool_labels, r.labels])


def _aiq_parts(repeats, p_new, n_lambdas: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query x lambda: (score of the chosen model summed over repeats, labelled repeats, mean cost), the
    router over old and new models choosing argmax P - lambda * cost (:func:`locus.decisions.choose_cost_weighted`);
    `p_new`: each repeat's P(correct) of its new models."""
    from locus import decisions
    from locus.experiments.routing_decisions import choice_outcomes

    grid = decisions.lambda_grid(repeats[0].costs, n_lambdas)
    num = den = cost = 0.0
    for r, p in zip(repeats, p_new):
        probs = np.hstack([r.pool_probs, p])
        correct = np.hstack([r.pool_labels, r.labels])
        choices = [decisions.choose_cost_weighted(probs, r.costs, lam) for lam in grid]
        n, d, c = choice_outcomes(choices, correct, r.costs)
        num, den, cost = num + n, den + d, cost + c / len(repeats)
    return num, den, cost


def summarise(repeats, methods, sizes, boot: bootstrap.Settings, draws=(None,), n_lambdas: int = 30):
    """The tidy frame (:data:`COLUMNS`) of every (method, draw, k, metric) over the repeats (see the module
    docstring). `draws`: the draws of the repeats' probabilities (default: each repeat's ``random`` only)."""
    from locus import evaluation
    from locus.experiments.routing_decisions import aiq_resamples, paired_aiq_difference

    draws = [RANDOM if d is None else d for d in draws]
    labels_all = np.hstack([r.labels for r in repeats])
    labelled = ~np.isnan(labels_all)
    n_models = int(labelled.any(axis=0).sum())
    keep = labelled.any(axis=1)
    n_queries = int(keep.sum())
    n_rep = len(repeats)
    has_pool = all(r.pool_probs is not None for r in repeats)
    has_costs = has_pool and all(r.costs is not None for r in repeats)
    rows = []

    def mean_over(key, table) -> float:
        values = [getattr(r, table).get(key, math.nan) for r in repeats]
        return float(np.mean(values)) if values else math.nan

    def row(method, draw, k, metric, value, low, high, n_mod=n_models, n_q=n_queries):
        rows.append(
            {
                "method": method,
                "draw": draw,
                "k": int(k),
                "metric": metric,
                "value": value,
                "ci_low": low,
                "ci_high": high,
                "n_models": n_mod,
                "n_queries": n_q,
                "repeats": n_rep,
                "seconds_per_model": mean_over((method, draw, k), "seconds"),
                "fit_seconds": mean_over(method, "fit_seconds"),
                "setting": "|".join(sorted({r.settings.get((method, draw, k), "") for r in repeats})).strip("|"),
            }
        )

    ref = methods.index(REFERENCE) if REFERENCE in methods else None
    zero = len(methods)
    pairs = [(i, zero) for i in range(len(methods))]
    if ref is not None:
        pairs += [(i, ref) for i in range(len(methods)) if i != ref]
    for draw in draws:
        for k in sizes:
            p_of = {m: [r.probs[(m, draw, k)] for r in repeats] for m in methods}
            # correctness, routing among the new models and among old + new: scipy's paired bootstrap over test
            # queries (summed over repeats); a zero row turns differences into values
            parts = [_summed_parts((to_logits(p), r.labels) for r, p in zip(repeats, p_of[m])) for m in methods]
            blocks = [("correctness_acc", parts, "correctness_acc"), ("routing_acc", parts, "routing_acc")]
            if has_pool:
                every = [_summed_parts(_all_models(r, p) for r, p in zip(repeats, p_of[m])) for m in methods]
                blocks.append(("routing_acc_all", every, "routing_acc"))
            for name, source, key in blocks:
                num = np.vstack([np.stack([p[key][0] for p in source]), np.zeros(len(source[0][key][0]))])
                den = np.stack([p[key][1] for p in source])
                den = np.vstack([den, (den.sum(axis=0) > 0).astype(np.float64)])
                d = bootstrap.paired_differences(num, den, pairs, boot)
                for (a, b), value, low, high in zip(pairs, d.diff, d.low, d.high):
                    metric = name if b == zero else f"{name}_minus_{REFERENCE}"
                    row(methods[a], draw, k, metric, float(value), float(low), float(high), n_q=d.n_queries)
            # pooled ROC-AUC over every repeat's pairs: one resampling of queries for every method at this k
            rng = np.random.default_rng([int(boot.seed), _AUC_KEY, int(k)])
            counts = np.zeros((int(boot.n_resamples), labels_all.shape[0]), dtype=np.float32)
            counts[:, keep] = rng.multinomial(
                n_queries, np.full(n_queries, 1.0 / n_queries), size=int(boot.n_resamples)
            )
            stacked = {m: np.hstack(p_of[m]) for m in methods}
            auc = [auc_parts(stacked[m], labels_all) for m in methods]
            point = [float(auc_resamples(a, np.ones((1, labels_all.shape[0])))[0]) for a in auc]
            resampled = [auc_resamples(a, counts) for a in auc]
            for i, m in enumerate(methods):
                row(m, draw, k, "roc_auc", point[i], *_percentile(resampled[i], boot.confidence))
                if ref is not None and i != ref:
                    diff = resampled[i] - resampled[ref]
                    row(
                        m,
                        draw,
                        k,
                        f"roc_auc_minus_{REFERENCE}",
                        point[i] - point[ref],
                        *_percentile(diff, boot.confidence),
                    )
            # per held-out model (every repeat's), then the mean over models with a t-interval; differences to
            # LOCUS paired by model
            per_model = {}
            for m in methods:
                logits = to_logits(stacked[m])
                per = [
                    evaluation.correctness_metrics(logits[:, j : j + 1], labels_all[:, j : j + 1])
                    for j in range(labels_all.shape[1])
                ]
                for metric in PER_MODEL:
                    per_model[(m, metric)] = np.array([c.get(metric.removesuffix("_per_model"), math.nan) for c in per])
            for i, m in enumerate(methods):
                for metric in PER_MODEL:
                    mean, low, high, n = t_interval(per_model[(m, metric)], boot.confidence)
                    low, high = max(low, 0.0), min(high, 1.0)  # a rate: the t-interval cut to where it can lie
                    row(m, draw, k, metric, mean, low, high, n_mod=n)
                    if ref is not None and i != ref:
                        diff = per_model[(m, metric)] - per_model[(REFERENCE, metric)]
                        mean, low, high, n = t_interval(diff, boot.confidence)
                        row(m, draw, k, f"{metric}_minus_{REFERENCE}", mean, low, high, n_mod=n)
            # area under the accuracy-cost curve of routing among old + new, both normalisations, paired
            if has_costs:
                idx = np.random.default_rng([int(boot.seed), _AIQ_KEY, int(k)]).integers(
                    0, labels_all.shape[0], size=(int(boot.n_resamples), labels_all.shape[0])
                )
                all_costs = np.concatenate([r.costs for r in repeats])
                top, bottom = float(all_costs.max()), float(all_costs.min())
                curves = {m: aiq_resamples(*_aiq_parts(repeats, p_of[m], n_lambdas), idx, top, bottom) for m in methods}
                for m in methods:
                    for norm in AIQ_NORMS:
                        value, boots = curves[m][norm]
                        row(m, draw, k, f"aiq_{norm}", value, *_percentile(boots, boot.confidence))
                    if ref is not None and m != REFERENCE:
                        diffs = paired_aiq_difference(curves[m], curves[REFERENCE], boot.confidence, n_queries)
                        for norm in AIQ_NORMS:
                            d = diffs[norm]
                            row(
                                m,
                                draw,
                                k,
                                f"aiq_{norm}_minus_{REFERENCE}",
                                float(d.diff[0]),
                                float(d.low[0]),
                                float(d.high[0]),
                            )
    # references: routing among the new models (oracle, random), among old + new (oracle) and the pool alone
    for k in sizes:
        refs = [evaluation.routing_metrics(np.zeros_like(r.labels), r.labels) for r in repeats]
        weights = np.array([ref_["n_queries"] for ref_ in refs], dtype=np.float64)
        for name in ("oracle", "random"):
            value = float(np.average([ref_[name] for ref_ in refs], weights=weights))
            row(name, "", k, "routing_acc", value, math.nan, math.nan)
        if has_pool:
            old = _summed_parts((to_logits(r.pool_probs), r.pool_labels) for r in repeats)["routing_acc"]
            row(POOL_ONLY, "", k, "routing_acc_all", float(old[0].sum() / max(old[1].sum(), 1)), math.nan, math.nan)
            every = [evaluation.routing_metrics(*_all_models(r, np.zeros_like(r.labels))) for r in repeats]
            value = float(np.average([e["oracle"] for e in every], weights=[e["n_queries"] for e in every]))
            row("oracle", "", k, "routing_acc_all", value, math.nan, math.nan)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def compare_repeats(
    data,
    encodings,
    setups,
    sizes=DEFAULT_SIZES,
    seed: int = 0,
    methods=None,
    boot: bootstrap.Settings = bootstrap.Settings(),
    params: dict | None = None,
    selector: str | None = None,
    costs=None,
    cost_column: str | None = None,
    progress=None,
) -> Comparison:
    """Every repeat (:class:`Setup`: a held-out set, its pool, its LOCUS run) onboarded by every method (see
    :func:`onboard_repeat`) and summarised over the repeats (:func:`summarise`). In memory: `data` an EvalData,
    `encodings` an Encodings; `costs` (one per model of the data set, in its model order) enables the
    accuracy-cost area."""
    if not setups:
        raise ConfigError("onboarding rivals: give at least one held-out set (one run per repeat).")
    if methods is None:  # LOCUS, the embedding fits every repeat has a run for, and the training-free methods
        fits = set.intersection(*(set(s.trained) for s in setups))
        methods = [n for n in rivals.names() if n == REFERENCE or n in fits or n in rivals.training_free()]
    methods = list(methods)
    for name in methods:
        rivals.method_class(name)
    if len(set(methods)) != len(methods) or not methods:
        raise ConfigError(f"--methods: give distinct onboarding methods, got {methods}")
    sizes = sorted({int(k) for k in sizes})
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"--k: give evaluation counts >= 1, got {sizes}")
    selector = check_selector(selector)
    repeats = []
    for i, setup in enumerate(setups):
        repeats.append(onboard_repeat(data, encodings, setup, sizes, seed, methods, params, selector, costs))
        if progress:
            progress(f"repeat {i + 1}/{len(setups)}: {len(repeats[-1].held_out)} held-out models onboarded")
    draws = [RANDOM] + ([selector] if selector else [])
    frame = summarise(repeats, methods, sizes, boot, draws)
    return Comparison(frame, repeats, sizes, methods, draws, cost_column if costs is not None else None)


def compare(
    data,
    encodings,
    held_out,
    pool_pairs: pd.DataFrame,
    sizes=DEFAULT_SIZES,
    seed: int = 0,
    methods=None,
    locus_method=None,
    probabilities=None,
    boot: bootstrap.Settings = bootstrap.Settings(),
    params: dict | None = None,
    selector: str | None = None,
) -> Comparison:
    """:func:`compare_repeats` of one held-out set."""
    setup = Setup(held_out, pool_pairs, locus_method, probabilities)
    return compare_repeats(data, encodings, [setup], sizes, seed, methods, boot, params, selector)


# --------------------------------------------------------------------------------------------------
# table and figure
# --------------------------------------------------------------------------------------------------
def _cell(value, low, high, emphasis: str) -> str:
    from locus.render.latex import fmt

    text = fmt(value, emphasis=emphasis, decimals=1)
    if text != "--" and not (math.isnan(low) or math.isnan(high)):
        text += f"{{\\scriptsize\\,[{100 * low:.1f}, {100 * high:.1f}]}}"
    return text


def _row_label(method: str, draw: str) -> str:
    label = rivals.method_class(method).latex_label
    return label if draw == RANDOM else f"\\quad{{}}{label}, {draw} queries"


def latex_table(
    frame: pd.DataFrame, methods, sizes, caption: str, draws=(RANDOM,), label: str = "tab:onboarding_rivals"
) -> str:
    """Rows: methods (per draw) per metric block; columns: k; cells: % with the interval; the best of a column
    bold, the second underlined; last column: CPU milliseconds per model at the largest k. Metric blocks without
    rows (e.g. the accuracy-cost area of a pool without costs) are left out."""
    from locus.render.latex import emphasis, escape, wrap

    big = max(sizes)
    lines = [
        "\\begin{tabular}{l" + "c" * len(sizes) + "r}",
        "\\toprule",
        "Method & " + " & ".join(f"$k={k}$" for k in sizes) + f" & ms/model ($k={big}$) \\\\",
    ]
    for metric in TABLE_METRICS:
        block = frame[frame["metric"] == metric].set_index(["method", "draw", "k"])
        rows = [(m, d) for d in draws for m in methods if (m, d, sizes[0]) in block.index]
        if not rows:
            continue
        lines += [
            "\\midrule",
            f"\\multicolumn{{{len(sizes) + 2}}}{{l}}{{\\emph{{{escape(METRIC_LABELS[metric])}}}}} \\\\",
        ]
        marks = {k: emphasis([block.loc[(m, d, k), "value"] for m, d in rows], decimals=1) for k in sizes}
        for i, (m, d) in enumerate(rows):
            cells = [
                _cell(*block.loc[(m, d, k), ["value", "ci_low", "ci_high"]].astype(float), marks[k][i]) for k in sizes
            ]
            ms = 1000 * float(block.loc[(m, d, big), "seconds_per_model"])
            lines.append(f"{_row_label(m, d)} & " + " & ".join(cells) + f" & {ms:.1f} \\\\")
        refs = frame[(frame["metric"] == metric) & (frame["draw"].fillna("") == "") & (frame["k"] == big)]
        for name, value in zip(refs["method"], refs["value"]):
            text = {POOL_ONLY: "the pool alone (no new model)"}.get(name, name)
            lines.append(f"\\quad {escape(text)} & \\multicolumn{{{len(sizes)}}}{{c}}{{{100 * value:.1f}}} & \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    text = wrap(lines, caption, label, wide=True, size="\\footnotesize")
    return text.replace("% generated by `locus table`", "% generated by `locus onboarding-rivals`", 1)


FIELD_HELD_OUT, FIELD_MODELS = 38, 112  # UniRoute's protocol on EmbedLLM's pool


def caption(
    c: Comparison,
    boot: bootstrap.Settings,
    data_label: str,
    pool: str = "split",
    n_models: int | None = None,
    train_size: int | None = None,
) -> str:
    from locus.render.latex import escape

    f = c.frame
    n_q = int(f.loc[f["metric"] == "correctness_acc", "n_queries"].max())
    level = f"{100 * boot.confidence:g}\\%"
    scores = "their training-split scores" if pool == "split" else "the run's own training evaluations"
    held = sorted({len(r.held_out) for r in c.repeats})
    pools = sorted({len(r.pool.model_ids) for r in c.repeats})
    n_held = "/".join(str(h) for h in held)
    total = f" of {n_models}" if n_models else ""
    reps = len(c.repeats)
    field = ""
    if n_models and (held != [FIELD_HELD_OUT] or n_models != FIELD_MODELS):
        field = f" (the field's protocol holds out {FIELD_HELD_OUT} of {FIELD_MODELS}; this pool has {n_models})"
    protocol = (
        f"{n_held}{total} models held out in each of {reps} repeats, each a seeded random draw{field}"
        if reps > 1
        else f"{n_held}{total} models held out, one seeded random draw{field} (the field's protocol repeats it)"
    )
    size = f" at $n={train_size}$" if train_size else ""
    draws = ""
    if len(c.draws) > 1:
        draws = (
            f" Indented rows: the $k$ queries chosen by the {escape(c.draws[1])} selector of active onboarding from "
            "the pool's information alone, the same queries for every method."
        )
    cost = ""
    if c.cost_column:
        cost = (
            f" Accuracy-cost area: routing among old and new models by $\\arg\\max_m P_m - \\lambda\\,"
            f"\\mathrm{{cost}}_m$ over a grid of $\\lambda$ (cost: the {escape(c.cost_column)} column), the area under "
            "its non-decreasing hull divided by the cost range (RouterBench's paper; divided by the largest cost, as "
            "its code does, in the CSV)."
        )
    elif any(r.pool_probs is not None for r in c.repeats):
        cost = " No accuracy-cost area: the pool has neither a cost nor a params\\_b column."
    return (
        f"Onboarding a new model without retraining ({escape(data_label)}): {protocol}, each onboarded from $k$ of "
        f"its training-split evaluations (one seeded draw) and scored on the {n_q} test queries. Pool: the "
        f"{'/'.join(str(p) for p in pools)} other models, those of the \\textsc{{Locus}} run trained without the "
        f"held-out ones{size}, with {scores}; no method retrains, and $\\lambda$, $K$ and the voters are chosen per "
        f"$k$ on validation models of the pool. Cells: \\% with the {level} paired percentile bootstrap interval "
        f"over test queries ({boot.n_resamples} resamples, seed {boot.seed}), every repeat's held-out models "
        "pooled; the per-model ROC-AUC: mean over held-out models with a $t$-interval. Routing among the new models: "
        "each test query to the held-out model (of its repeat) with the highest predicted P(correct); among old and "
        "new: the pool's models scored by the \\textsc{Locus} run, the new ones by the method." + draws + cost + " "
        "Bold: best of its column, underlined: second. ms/model: CPU milliseconds to onboard one model and predict "
        "its test queries. Differences to \\textsc{Locus} with paired intervals are in the CSV."
    )


FIGURE_METRICS = ("correctness_acc", "roc_auc_per_model", "routing_acc_all", "aiq_range")


def rivals_figure(frame: pd.DataFrame, methods, sizes, title: str, draws=(RANDOM,)):
    """Accuracy vs k per method with interval bands (the mean-accuracy floor dashed); one panel per metric
    present; LOCUS with the selector's queries (when any) as a thin dotted line without band; reference rows as
    lines."""
    from locus.render.figures import plt, sns

    sns.set_theme(style="whitegrid", context="paper")
    metrics = [m for m in FIGURE_METRICS if (frame["metric"] == m).any()]
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics), 3.4))
    for ax, metric in zip(np.atleast_1d(axes), metrics):
        block = frame[frame["metric"] == metric]
        for draw in draws:
            for m in methods:
                cls = rivals.method_class(m)
                sub = block[(block["method"] == m) & (block["draw"] == draw)].sort_values("k")
                if sub.empty:
                    continue
                if draw == RANDOM:
                    ax.plot(
                        sub["k"],
                        100 * sub["value"],
                        marker="o",
                        ms=3,
                        color=cls.color,
                        ls=cls.linestyle,
                        label=cls.label,
                    )
                    ax.fill_between(
                        sub["k"], 100 * sub["ci_low"], 100 * sub["ci_high"], color=cls.color, alpha=0.08, lw=0
                    )
                elif m == REFERENCE:  # the selector's rows of the other methods are in the table and the CSV
                    label = f"{cls.label}, {draw} queries"
                    ax.plot(
                        sub["k"], 100 * sub["value"], marker="x", ms=3, color=cls.color, ls=":", lw=0.8, label=label
                    )
        refs = block[block["draw"].fillna("") == ""]
        styles = {"oracle": ":", "random": "-.", POOL_ONLY: "--"}
        for name in refs["method"].unique():
            value = refs.loc[refs["method"] == name, "value"].iloc[0]
            text = {POOL_ONLY: "pool alone", "oracle": "oracle", "random": "random model"}.get(name, name)
            ax.axhline(100 * value, color="black", ls=styles.get(name, "-"), lw=0.8, label=text)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(sizes), [str(k) for k in sizes])
        ax.minorticks_off()
        ax.set_xlabel("evaluations of the new model (k)")
        ax.set_ylabel(METRIC_LABELS[metric], fontsize=7)
    handles, names = {}, []
    for ax in np.atleast_1d(axes):
        for h, n in zip(*ax.get_legend_handles_labels()):
            if n not in handles:
                handles[n] = h
                names.append(n)
    fig.legend(
        [handles[n] for n in names],
        names,
        loc="lower center",
        ncol=min(len(names), 5),
        fontsize=7,
        bbox_to_anchor=(0.5, -0.12),
    )
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


# --------------------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------------------
UNTRAINED = "untrained"  # --held-out untrained: each run's held-out models are those it did not train on


def run_held_out(run, data, where: str) -> np.ndarray:
    """The models of the data set the run did not train on (its held-out set; metrics.json names them)."""
    from locus import run_artifacts

    ckpt = run_artifacts.load_checkpoint(run)
    held = np.setdiff1d(np.asarray(data.model_ids, dtype=np.int64), np.asarray(ckpt.model_ids, dtype=np.int64))
    if len(held) == 0:
        raise DataError(f"{run}: trained on every model of {where}; give a run trained without some (--hold-out).")
    return held


def _fit_runs_by_pool(fit_runs) -> dict:
    """{trained model ids: [(run, checkpoint)]} of the embedding-fit runs (EmbedLLM, IRT-Net), each matched to
    the repeat whose LOCUS run trained on the same models."""
    from locus import run_artifacts

    out: dict = {}
    for run in fit_runs or ():
        ckpt = run_artifacts.load_checkpoint(run)
        name = getattr(ckpt.method, "name", None)
        if name not in rivals.FIT_METHODS:
            raise DataError(
                f"{run}: a {name!r} run; --fit-runs takes runs of {', '.join(rivals.FIT_METHODS)} (their vectors are "
                "fitted to the new model's scores with the network frozen)."
            )
        out.setdefault(tuple(np.asarray(ckpt.model_ids, dtype=np.int64).tolist()), []).append((run, ckpt))
    return out


def write_onboarding_rivals(
    runs,
    data_dir,
    encodings_path,
    out,
    sizes=DEFAULT_SIZES,
    seed: int = 0,
    held_out_names=None,
    methods=None,
    figure=None,
    pool: str = "split",
    boot: bootstrap.Settings = bootstrap.Settings(),
    data_label: str | None = None,
    calibrated: bool = False,
    selector: str | None = None,
    progress=None,
    fit_runs=(),
) -> dict:
    """Read the runs (one per repeat), data set and encodings; :func:`compare_repeats`; write the LaTeX table
    `out`, its CSV beside it and (when given) the figure `figure` (.pdf + .png). `held_out_names`: None (the
    data set's held_out column), names, or :data:`UNTRAINED` (each run's own held-out models)."""
    from locus import run_artifacts
    from locus.atomic import write_text
    from locus.data.canonical import model_costs, read_dataset
    from locus.data.encodings import check_matches, read_encodings
    from locus.inference import probability_map
    from locus.render import write_csv
    from locus.runs import held_out_ids

    if pool not in POOLS:
        raise ConfigError(f"--pool {pool!r}: choose one of {', '.join(POOLS)}")
    runs = [runs] if isinstance(runs, (str, Path)) else list(runs)
    fits = _fit_runs_by_pool(fit_runs)
    cpu_start = time.process_time()
    data = read_dataset(data_dir)
    enc = read_encodings(encodings_path)
    fingerprint = check_matches(enc, data.queries, str(data_dir))
    setups, train_sizes = [], set()
    for run in runs:
        ckpt = run_artifacts.load_checkpoint(run)
        if getattr(ckpt.method, "name", None) != "locus":
            raise DataError(f"{run}: a {ckpt.method.name!r} run; onboarding rivals are compared with a LOCUS run.")
        run_artifacts.check_same_data(
            run, ckpt.config.get("data_fingerprint"), fingerprint, data_dir, "re-run its training rule."
        )
        if held_out_names == UNTRAINED or held_out_names == [UNTRAINED]:
            held = run_held_out(run, data, str(data_dir))
        else:
            held = held_out_ids(data.models, held_out_names, f"{data_dir}/models.parquet")
        trained = np.asarray(ckpt.model_ids, dtype=np.int64)
        seen = np.intersect1d(trained, held)
        if len(seen):
            raise DataError(
                f"{run}: trained on {len(seen)} of the {len(held)} held-out models; give a run trained without them "
                "(locus train --hold-out)."
            )
        if pool == "run":
            pairs = run_artifacts.read_train_pairs(run)
        else:
            train = data.split_scores("train")
            pairs = train[train["model_id"].isin(trained)]
        trained_here = {}
        for fit_run, fit_ckpt in fits.pop(tuple(trained.tolist()), []):
            run_artifacts.check_same_data(
                fit_run, fit_ckpt.config.get("data_fingerprint"), fingerprint, data_dir, "re-run its training rule."
            )
            trained_here[rivals.FIT_METHODS[fit_ckpt.method.name]] = fit_ckpt.method
        setups.append(Setup(held, pairs, ckpt.method, probability_map(run, calibrated), trained_here))
        train_sizes.add(ckpt.config.get("train_size"))
    for name in sorted({n for setup in setups for n in setup.trained}):
        have = sum(name in setup.trained for setup in setups)
        if have < len(setups):
            raise DataError(
                f"--fit-runs: {name} has a run for {have} of the {len(setups)} repeats; give one per --run (trained "
                "without the same held-out models), or none."
            )
    if fits:
        extra = [str(r) for group in fits.values() for r, _ in group]
        raise DataError(
            f"--fit-runs {' '.join(extra)}: trained on other models than every --run; give, per repeat, runs trained "
            "without the same held-out models (the same --hold-out)."
        )
    try:
        costs, cost_column = model_costs(data.models, data.model_ids, f"{data_dir}/models.parquet")
    except DataError:  # no cost for every model: the accuracy-cost area is left out, and the caption says so
        costs, cost_column = None, None
    result = compare_repeats(
        data,
        enc,
        setups,
        sizes,
        seed,
        methods,
        boot,
        selector=selector,
        costs=costs,
        cost_column=cost_column,
        progress=progress,
    )
    label = data_label or Path(str(data_dir)).name
    n_models = len(data.model_ids)
    size = train_sizes.pop() if len(train_sizes) == 1 else None
    write_csv(result.frame, Path(out).with_suffix(".csv"))
    text = caption(result, boot, label, pool, n_models, size)
    write_text(out, latex_table(result.frame, result.methods, result.sizes, text, result.draws))
    if figure is not None:
        from locus.render.figures import save_figure

        held = "/".join(str(n) for n in sorted({len(r.held_out) for r in result.repeats}))
        title = (
            f"Onboarding without retraining: {held} of {n_models} models held out, {len(runs)} "
            f"repeat{'s' if len(runs) > 1 else ''}, {label}"
        )
        save_figure(rivals_figure(result.frame, result.methods, result.sizes, title, result.draws), figure)
    names = dict(zip(data.models["model_id"].astype(int), data.models["name"].astype(str)))
    return {
        "comparison": result,
        "held_out": [names[int(m)] for m in result.held_out],
        "cpu_seconds": time.process_time() - cpu_start,
    }
