"""Paired bootstrap over test queries: how sure is the difference between two methods' accuracies?

Two methods compared on one test set share their queries, so the question is answered by resampling
*queries* (with replacement) and recomputing both methods' accuracies on the same resample each time:

- :func:`per_query`: one run's logits and labels -> per query the numerator and denominator of routing
  and correctness accuracy, so that ``sum(num) / sum(den)`` over any set of queries is the metric of
  :func:`locus.evaluation.evaluate` on that set;
- :func:`paired_differences`: per pair of methods (a, b) the difference acc(a) - acc(b) and its percentile
  interval from :func:`scipy.stats.bootstrap` with ``paired=True`` (every pair sees the same resamples).

Percentile rather than BCa intervals: a difference of two means over hundreds of queries has a nearly
symmetric, unbiased bootstrap distribution, so BCa would barely move the bounds, while it is undefined
for degenerate distributions (identical methods, a method always right) and needs a jackknife per column.
Resampling is seeded (:class:`Settings`): the same inputs give the same intervals. Values are fractions.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from locus import evaluation
from locus.constants import BOOTSTRAP_RESAMPLES
from locus.evaluation import EXPECTED

METRICS = ("routing_acc", "correctness_acc")
_MAX_ELEMENTS = 4_000_000  # resampled values per array held at once (2 arrays x 8 bytes: 64 MB)


@dataclass(frozen=True)
class Settings:
    """Bootstrap settings (config ``bootstrap``): resamples, seed of the resampling, interval level."""

    n_resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = 0
    confidence: float = 0.95

    def __post_init__(self):
        if int(self.n_resamples) < 1:
            raise ValueError(f"n_resamples must be >= 1, got {self.n_resamples}")
        if not 0 < float(self.confidence) < 1:
            raise ValueError(f"confidence must be between 0 and 1, got {self.confidence}")


@dataclass(frozen=True)
class Differences:
    """acc(a) - acc(b) for each compared pair, with its confidence interval (fractions; NaN where the
    interval cannot be computed: fewer than two queries, or a method with no labelled query)."""

    diff: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_queries: int
    n_resamples: int
    confidence: float

    def includes_zero(self) -> np.ndarray:
        """Per pair: the interval contains 0 (no significant difference); True where it is undefined."""
        with np.errstate(invalid="ignore"):
            return ~((self.low > 0) | (self.high < 0))


def per_query(logits, labels, truth=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per query (numerator, denominator) of each of :data:`METRICS` for one run (and of
    :data:`EXPECTED` when the true probabilities `truth` [same shape as `labels`] are given).

    routing_acc: (score of the routed model, 1), or (0, 0) for a query without any label;
    correctness_acc: (right predictions, labelled pairs) of the query's row;
    expected_routing: (true probability that the routed model -- the very model of routing_acc -- is
    right, 1), or (0, 0) for a query without any label.

    The rules are exactly those of :mod:`locus.evaluation`: routing only among the models labelled on the
    query, ties to the lower model_id (:func:`locus.evaluation.ranking`); correctness = [sigmoid(logit) >= 0.5]
    == [label >= 0.5] over labelled pairs. With several seeds the caller averages each method's ``num`` and
    ``den`` over seeds per query first (the ratio is then the mean of the seeds' metrics whenever the seeds
    label the same pairs, as runs of one data set and model set do)."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if logits.shape != labels.shape or logits.ndim != 2:
        raise ValueError(f"logits {logits.shape} and labels {labels.shape} must be matrices of one shape")
    if truth is not None:
        truth = np.asarray(truth, dtype=np.float64)
        if truth.shape != labels.shape:
            raise ValueError(f"truth {truth.shape} and labels {labels.shape} must be matrices of one shape")
    labelled = ~np.isnan(labels)
    has_label = labelled.any(axis=1)
    rows = np.arange(len(labels))
    routed, expected = np.zeros(len(labels)), np.zeros(len(labels))
    if labels.shape[1]:
        top = evaluation.ranking(logits, labels)[:, 0]  # unlabelled models rank last; ties: lower model_id
        routed[has_label] = labels[rows, top][has_label]
        if truth is not None:
            expected[has_label] = truth[rows, top][has_label]
    right = (evaluation._sigmoid(logits) >= 0.5) == (labels >= 0.5)  # the rule of correctness_metrics
    out = {
        "routing_acc": (routed, has_label.astype(np.float64)),
        "correctness_acc": ((right & labelled).sum(axis=1).astype(np.float64), labelled.sum(axis=1).astype(np.float64)),
    }
    if truth is not None:
        if np.isnan(expected).any():
            raise ValueError("truth has no value for a routed (labelled) pair; it must cover every labelled pair")
        out[EXPECTED] = (expected, has_label.astype(np.float64))
    return out


def _ratios(num, den, axis=-1):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(num, axis=axis) / np.sum(den, axis=axis)


def paired_differences(num, den, pairs, settings: Settings = Settings()) -> Differences:
    """Paired bootstrap of acc(a) - acc(b) for each (a, b) in `pairs` (row indices of `num` / `den`).

    `num`, `den`: [methods x queries] per-query numerators / denominators (:func:`per_query`, averaged
    over seeds), one column of the same queries for every method; acc(m) = sum(num[m]) / sum(den[m]).
    Queries labelled for no method are dropped. Queries are resampled with replacement
    (``settings.n_resamples`` times, generator seeded with ``settings.seed``); the interval is the
    percentile interval at ``settings.confidence``.
    """
    num = np.atleast_2d(np.asarray(num, dtype=np.float64))
    den = np.atleast_2d(np.asarray(den, dtype=np.float64))
    if num.shape != den.shape:
        raise ValueError(f"num {num.shape} and den {den.shape} must have one shape")
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= num.shape[0]):
        raise ValueError(f"pairs {pairs.tolist()} name rows outside the {num.shape[0]} methods")
    keep = (den > 0).any(axis=0)
    num, den = num[:, keep], den[:, keep]
    n = int(keep.sum())
    a, b = pairs[:, 0], pairs[:, 1]
    ratios = _ratios(num, den)
    diff = ratios[a] - ratios[b]
    nan = np.full(len(pairs), np.nan)
    if n < 2 or not len(pairs):
        return Differences(diff, nan, nan.copy(), n, settings.n_resamples, settings.confidence)

    def statistic(n_, d_, axis=-1):  # n_, d_: [methods x resamples x queries]
        r = _ratios(n_, d_, axis=axis)
        return r[a] - r[b]

    rng = np.random.default_rng(settings.seed)
    seeding = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    with warnings.catch_warnings():  # NaN bounds (a resample without labels) are reported as NaN
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            (num, den),
            statistic,
            n_resamples=int(settings.n_resamples),
            paired=True,
            vectorized=True,
            axis=-1,
            confidence_level=float(settings.confidence),
            method="percentile",
            batch=max(1, _MAX_ELEMENTS // (num.size or 1)),
            **seeding,
        )
    ci = res.confidence_interval
    return Differences(
        diff,
        np.asarray(ci.low, dtype=np.float64).reshape(-1),
        np.asarray(ci.high, dtype=np.float64).reshape(-1),
        n,
        int(settings.n_resamples),
        float(settings.confidence),
    )
