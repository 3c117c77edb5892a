"""Routing decisions from probability matrices [queries x models] (P(correct) per pair; NaN = not a candidate).

- Selective routing: the most likely model when its probability reaches a threshold tau, else a fallback (a
  model column, or abstain). :func:`learn_then_test_threshold` certifies tau on validation data with
  Learn-then-Test (Angelopoulos et al., 2021): fixed-sequence testing from high to low thresholds, each with
  the exact binomial p-value of H0 "risk > alpha" (risk = error rate among routed queries), so that with
  probability >= 1 - delta the chosen tau has risk <= alpha on new queries from the same distribution;
  :func:`learn_then_test_thresholds` does it over a grid of alphas, non-increasing in alpha by construction.
- Cost-aware routing: maximise P - lambda * cost (:func:`choose_cost_weighted`), or the cheapest model with
  P >= p (:func:`choose_cheapest_above`); :func:`aiq` is RouterBench's Average Improvement in Quality, divided
  by the largest cost (its code) or by the cost range (its paper).
- Checks: :func:`binomial_interval` (Clopper-Pearson) and :func:`expected_risk` (the true error among routed
  queries, from a generator's true probabilities).

Pure functions over numpy arrays (no run, data set or calibration here); ties go to the lower column.
Bad alpha / delta / lambda / cost: one-line :class:`~locus.errors.ConfigError`.
"""

from __future__ import annotations

import math

import numpy as np

from locus.errors import ConfigError

ABSTAIN = -1  # the chosen column of an abstained query
NONE = math.inf  # the threshold "route nothing": LTT certified no threshold of the grid
DEFAULT_GRID = np.round(np.linspace(1.0, 0.0, 101), 2)  # fixed before seeing data: 1.00, 0.99, ..., 0.00


def check_level(name: str, value) -> float:
    """alpha / delta must lie in (0, 1)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not 0 < v < 1:
        raise ConfigError(f"{name} must be a number in (0, 1), got {value!r}; e.g. {name} 0.1.")
    return v


def check_costs(costs, n_models: int | None = None) -> np.ndarray:
    """Costs [models] (or [queries x models]): finite numbers >= 0."""
    c = np.asarray(costs, dtype=np.float64)
    if n_models is not None and c.shape[-1:] != (n_models,):
        raise ConfigError(f"costs: {c.shape[-1] if c.ndim else 0} values for {n_models} models; give one per model.")
    if not np.isfinite(c).all() or (c < 0).any():
        bad = c[~(np.isfinite(c) & (c >= 0))].ravel()[:5].tolist()
        raise ConfigError(f"costs must be finite numbers >= 0 (per query, any unit), got {bad}.")
    return c


def check_lambda(lam) -> float:
    try:
        v = float(lam)
    except (TypeError, ValueError):
        v = math.nan
    if not (math.isfinite(v) and v >= 0):
        raise ConfigError(f"the cost weight lambda must be a finite number >= 0, got {lam!r} (0 = ignore cost).")
    return v


def _probs(probs) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] == 0:
        raise ValueError(f"probabilities must be a [queries x models] matrix, got shape {p.shape}")
    return p


def best_column(value, logits=None) -> np.ndarray:
    """Per row the column of the largest `value`; among equal values the one with the largest logit (the
    scores behind calibrated probabilities: a monotone map's flat steps tie whole ranges of them, and their
    order must not be lost), then the lower column."""
    value = np.asarray(value, dtype=np.float64)
    if logits is None:
        return np.argmax(value, axis=1)
    tied = value == np.max(value, axis=1, keepdims=True)
    return np.argmax(np.where(tied, np.nan_to_num(np.asarray(logits, dtype=np.float64), nan=-np.inf), -np.inf), axis=1)


def top_choice(probs, logits=None) -> tuple[np.ndarray, np.ndarray]:
    """(column of the most likely model, its probability) per query; NaN columns never win (a row of NaN:
    column 0 with probability -inf); ties: the larger logit (when given), then the lower column."""
    p = np.nan_to_num(_probs(probs), nan=-np.inf)
    top = best_column(p, logits)
    return top, p[np.arange(len(p)), top]


# --------------------------------------------------------------------------------------------------
# selective routing
# --------------------------------------------------------------------------------------------------
def selective_choice(probs, tau: float, fallback: int | str = "abstain", logits=None) -> tuple[np.ndarray, np.ndarray]:
    """(chosen column per query, routed mask): the most likely model where its probability >= tau, else
    `fallback` (a column index, or ``"abstain"``: :data:`ABSTAIN`); ties as :func:`top_choice`."""
    top, p_top = top_choice(probs, logits)
    routed = p_top >= tau
    fb = ABSTAIN if fallback == "abstain" else int(fallback)
    return np.where(routed, top, fb), routed


def binary(correct) -> np.ndarray:
    """Correctness as 0/1 (scores >= 0.5 are correct, as the correctness metrics read them); NaN kept."""
    c = np.asarray(correct, dtype=np.float64)
    return np.where(np.isnan(c), np.nan, (c >= 0.5).astype(np.float64))


def _errors(correct, cols) -> np.ndarray:
    """1 - correctness of column `cols[q]` of each query (NaN where the chosen pair has no label)."""
    c = np.asarray(correct, dtype=np.float64)
    return 1.0 - c[np.arange(len(c)), cols]


def routed_counts(probs, correct, grid, logits=None) -> tuple[np.ndarray, np.ndarray]:
    """Per threshold of `grid`: (routed queries with a label, errors among them) of the top model."""
    top, p_top = top_choice(probs, logits)
    err = _errors(correct, top)
    ok = ~np.isnan(err)
    n = np.array([int(((p_top >= t) & ok).sum()) for t in grid])
    k = np.array([int(np.round(err[(p_top >= t) & ok].sum())) for t in grid])
    return n, k


def binomial_p_value(k: int, n: int, alpha: float) -> float:
    """Exact p-value of H0 "risk >= alpha" after k errors in n routed queries: P(Binomial(n, alpha) <= k)
    (the Clopper-Pearson tail; 1 without queries)."""
    from scipy.stats import binom

    return 1.0 if n == 0 else float(binom.cdf(k, n, alpha))


def min_routed(alpha: float, delta: float) -> int:
    """Fewest routed queries that can be certified at all (no error: (1 - alpha)^n <= delta)."""
    return int(math.ceil(math.log(delta) / math.log(1.0 - alpha)))


def _fixed_sequence(grid, n, k, alpha: float, delta: float, need: int) -> float:
    """The last threshold of `grid` (high to low) certified before the first failed test, or :data:`NONE`;
    thresholds routing fewer than `need` labelled queries are skipped (neither certified nor a failure)."""
    certified = NONE
    for t, n_t, k_t in zip(grid, n, k):
        if n_t < need:
            continue
        if binomial_p_value(int(k_t), int(n_t), alpha) > delta:
            break
        certified = float(t)
    return certified


def _grid(grid) -> np.ndarray:
    return np.sort(np.asarray(DEFAULT_GRID if grid is None else grid, dtype=np.float64))[::-1]


def learn_then_test_threshold(
    probs_val, correct_val, alpha, delta, fallback=None, grid=None, logits=None, min_count: int | None = None
) -> float:
    """The smallest threshold tau certified by Learn-then-Test on validation data, or :data:`NONE` (inf:
    route nothing) when none is.

    Thresholds of `grid` (default :data:`DEFAULT_GRID`) are tested from high to low with the p-value of
    :func:`binomial_p_value` and fixed-sequence testing: each is certified while p <= delta, and testing
    stops at the first that is not, so the family-wise error is <= delta and P(risk(tau) <= alpha) >= 1 - delta.
    Thresholds routing fewer than `min_count` labelled queries (default :func:`min_routed` of alpha, delta) are
    skipped: they cannot be certified even without an error, and the skip looks at counts, never at
    correctness, so any count fixed before seeing the labels keeps the guarantee. Correctness is binary
    (scores >= 0.5 count as correct). `fallback` does not enter the risk (only routed queries do); it is accepted
    so that a call names the whole policy. `logits`: the scores behind the probabilities (ties, :func:`top_choice`).
    Over a grid of alphas use :func:`learn_then_test_thresholds` (monotone in alpha)."""
    alpha, delta = check_level("alpha", alpha), check_level("delta", delta)
    grid = _grid(grid)
    n, k = routed_counts(probs_val, binary(correct_val), grid, logits)
    need = min_routed(alpha, delta) if min_count is None else int(min_count)
    return _fixed_sequence(grid, n, k, alpha, delta, need)


def learn_then_test_thresholds(probs_val, correct_val, alphas, delta, grid=None, logits=None) -> np.ndarray:
    """:func:`learn_then_test_threshold` for each alpha of `alphas` (in their order), non-increasing in alpha
    by construction, so a larger alpha never routes fewer queries.

    Why: with a skip count that depends on alpha (:func:`min_routed`), a larger alpha starts testing at higher,
    sparsely populated thresholds, and one failure there stops it before the thresholds a smaller alpha
    certifies (tau(0.3) = none while tau(0.05) = 0.8 is possible). Here every alpha skips the same thresholds:
    those routing fewer than :func:`min_routed` of the SMALLEST alpha (a count fixed before the labels are
    seen, so each alpha keeps its guarantee), and P(Binomial(n, alpha) <= k) falls as alpha grows, so a larger
    alpha passes every test a smaller one passes and stops no earlier. No running min is applied: a min over
    alphas would mix thresholds certified at other levels, which the guarantee does not cover."""
    alphas = [check_level("alpha", a) for a in alphas]
    delta = check_level("delta", delta)
    if not alphas:
        return np.zeros(0)
    grid = _grid(grid)
    n, k = routed_counts(probs_val, binary(correct_val), grid, logits)
    need = min_routed(min(alphas), delta)
    return np.array([_fixed_sequence(grid, n, k, a, delta, need) for a in alphas])


def selective_outcome(probs, correct, tau: float, fallback: int | str = "abstain", logits=None) -> dict:
    """Coverage (share of queries routed), risk (error rate among routed labelled queries; NaN when none)
    and accuracy over all queries with the fallback answering the others (NaN with abstain); correctness
    binary (:func:`binary`)."""
    cols, routed = selective_choice(probs, tau, fallback, logits)
    correct = binary(correct)
    err_routed = _errors(correct, np.where(routed, cols, 0))[routed]
    err_routed = err_routed[~np.isnan(err_routed)]
    out = {
        "coverage": float(routed.mean()) if len(routed) else math.nan,
        "risk": float(err_routed.mean()) if len(err_routed) else math.nan,
        "n_routed": int(len(err_routed)),
    }
    if fallback == "abstain":
        out["accuracy"] = math.nan
    else:
        acc = 1.0 - _errors(correct, cols)
        out["accuracy"] = float(np.nanmean(acc)) if (~np.isnan(acc)).any() else math.nan
    return out


def risk_coverage_curve(probs, correct, grid=None, logits=None) -> dict[str, np.ndarray]:
    """Per threshold (default grid: every distinct top probability, high to low): coverage and the error
    rate among routed labelled queries (NaN where nothing is routed)."""
    _, p_top = top_choice(probs)
    grid = np.unique(p_top[np.isfinite(p_top)])[::-1] if grid is None else np.sort(np.asarray(grid, float))[::-1]
    n, k = routed_counts(probs, binary(correct), grid, logits)
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    coverage = np.array([(p_top >= t).mean() if len(p_top) else math.nan for t in grid])
    return {"tau": grid, "coverage": coverage, "risk": risk}


# --------------------------------------------------------------------------------------------------
# cost-aware routing
# --------------------------------------------------------------------------------------------------
def choose_cost_weighted(probs, costs, lam, logits=None) -> np.ndarray:
    """Per query the column maximising P - lam * cost (costs [models] or [queries x models]; NaN
    probabilities never win; ties: the larger logit when given, then the lower column). lam = 0 is the
    argmax of P."""
    p = _probs(probs)
    lam = check_lambda(lam)
    c = check_costs(costs, p.shape[1])
    utility = np.nan_to_num(p, nan=-np.inf) - lam * c
    return best_column(utility, logits)


def choose_cheapest_above(probs, costs, p_min, logits=None) -> np.ndarray:
    """Per query the cheapest column with P >= p_min (ties: the more likely, then the larger logit when given,
    then the lower column); the most likely model where none reaches p_min."""
    p = _probs(probs)
    c = np.broadcast_to(check_costs(costs, p.shape[1]), p.shape)
    try:
        p_min = float(p_min)
    except (TypeError, ValueError):
        p_min = math.nan
    if not 0 <= p_min <= 1:
        raise ConfigError(f"the minimum probability must be a number in [0, 1], got {p_min!r}.")
    ok = np.nan_to_num(p, nan=-np.inf) >= p_min
    # lexicographic: cost ascending, then probability descending, then column (argmin takes the first)
    key = np.where(ok, c, np.inf)
    best = np.full(len(p), -1, dtype=np.int64)
    for q in np.flatnonzero(ok.any(axis=1)):
        cheapest = np.flatnonzero(key[q] == key[q].min())
        tie = None if logits is None else np.asarray(logits)[q, cheapest][None]
        best[q] = cheapest[best_column(p[q, cheapest][None], tie)[0]]
    top, _ = top_choice(p, logits)
    return np.where(best >= 0, best, top)


def quality_and_cost(choice, correct, costs) -> tuple[float, float]:
    """(mean correctness of the chosen models over queries with a label there, mean cost per query)."""
    choice = np.asarray(choice, dtype=np.int64)
    correct = np.asarray(correct, dtype=np.float64)
    rows = np.arange(len(choice))
    got = correct[rows, choice]
    c = np.asarray(costs, dtype=np.float64)
    spent = c[rows, choice] if c.ndim == 2 else c[choice]
    quality = float(np.nanmean(got)) if (~np.isnan(got)).any() else math.nan
    return quality, float(spent.mean()) if len(spent) else math.nan


def lambda_grid(costs, n: int = 30) -> np.ndarray:
    """0 and `n` - 1 weights spaced geometrically from "cost barely matters" (1e-3 / max cost) to "always
    the cheapest" (10 / the smallest gap between two costs; a probability gap is at most 1)."""
    c = np.unique(check_costs(costs).ravel())
    if len(c) < 2 or n < 2:
        return np.zeros(1)
    top = 1e-3 / max(c.max(), 1e-12)
    return np.concatenate([[0.0], np.geomspace(top, 10.0 / np.diff(c).min(), n - 1)])


def nondecreasing_hull(costs, qualities) -> np.ndarray:
    """The upper convex hull of the (cost, quality) points from the cheapest one up to the best quality,
    as [points x 2] sorted by cost (what random mixtures of the routers can reach, never worse for more)."""
    pts = np.column_stack([np.asarray(costs, float), np.asarray(qualities, float)])
    pts = pts[np.isfinite(pts).all(axis=1)]
    if len(pts) == 0:
        raise ValueError("no finite (cost, quality) point")
    pts = pts[np.lexsort((-pts[:, 1], pts[:, 0]))]  # cost ascending; at one cost the best quality first
    hull: list = []
    for x, y in pts.tolist():  # Python floats: a bootstrap builds thousands of small hulls
        if hull and x == hull[-1][0]:
            continue  # same cost, lower quality
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) >= 0:  # hull[-1] lies on or below the chord
                hull.pop()
            else:
                break
        hull.append((x, y))
    hull = np.array(hull)
    return hull[: int(np.argmax(hull[:, 1])) + 1]  # up to the first best quality: never decreasing


AIQ_NORMALISATIONS = ("max", "range")


def aiq(
    costs, qualities, max_cost: float | None = None, min_cost: float | None = None, normalisation: str = "max"
) -> float:
    """RouterBench's Average Improvement in Quality: the non-decreasing convex hull of a router's (cost, quality)
    points, extended flat to the largest cost of the compared routers (`max_cost`; default the largest of these
    costs) and integrated (trapezoids) from the router's cheapest point (zero quality below it), then divided by

    - ``"max"``: `max_cost`, as RouterBench's code does (evaluation/AIQ.py, ``calc_AIQ``): the cost axis from 0;
    - ``"range"``: `max_cost` - `min_cost`, as RouterBench's paper (Hu et al., 2024) writes it: the mean quality
      over [c_min, c_max]; `min_cost` (default: the smallest of these costs) is the compared routers' common
      cheapest cost and may not exceed the router's cheapest point. NaN when the range is empty.

    The two agree when `min_cost` is 0; otherwise "range" = "max" x c_max / (c_max - c_min) for a router whose
    curve starts at c_min."""
    return aiqs(costs, qualities, max_cost, min_cost, (normalisation,))[normalisation]


def aiqs(
    costs, qualities, max_cost: float | None = None, min_cost: float | None = None, normalisations=AIQ_NORMALISATIONS
) -> dict[str, float]:
    """:func:`aiq` under each of `normalisations`, from one hull (a bootstrap computes thousands)."""
    for normalisation in normalisations:
        if normalisation not in AIQ_NORMALISATIONS:
            raise ConfigError(f"AIQ normalisation must be one of {AIQ_NORMALISATIONS}, got {normalisation!r}.")
    costs = check_costs(costs)
    hull = nondecreasing_hull(costs, qualities)
    end = float(np.max(costs) if max_cost is None else max_cost)
    if end < hull[-1, 0] * (1 - 1e-9) or end <= 0:  # a mean of equal costs may exceed its value by a rounding
        raise ConfigError(f"max_cost {max_cost!r} must be > 0 and at least the largest cost on the hull.")
    end = max(end, float(hull[-1, 0]))
    hull = np.vstack([hull, [end, hull[-1, 1]]])
    area = float(np.sum(np.diff(hull[:, 0]) * (hull[1:, 1] + hull[:-1, 1]) / 2.0))
    out = {}
    for normalisation in normalisations:
        if normalisation == "max":
            out[normalisation] = area / end
            continue
        start = float(np.min(costs) if min_cost is None else min_cost)
        if start > hull[0, 0] * (1 + 1e-9) + 1e-12 or start < 0:
            raise ConfigError(
                f"min_cost {min_cost!r} must be >= 0 and at most the router's cheapest cost {hull[0, 0]:g}."
            )
        out[normalisation] = area / (end - start) if end > start else math.nan
    return out


# --------------------------------------------------------------------------------------------------
# checks against known answers
# --------------------------------------------------------------------------------------------------
def binomial_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact) interval of a proportion after k successes in n trials ((0, 1) without trials)."""
    from scipy.stats import binomtest

    if n == 0:
        return 0.0, 1.0
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=float(confidence), method="exact")
    return float(ci.low), float(ci.high)


def expected_risk(true_probs, probs, tau: float, logits=None) -> float:
    """The true expected error among routed queries: the mean of 1 - p_true of the chosen (most likely) model
    over the queries whose top probability reaches tau (`true_probs`: the generator's P(correct), same shape as
    `probs`); NaN when nothing is routed (or no routed pair has a true probability)."""
    cols, routed = selective_choice(probs, tau, "abstain", logits)
    t = np.asarray(true_probs, dtype=np.float64)
    if t.shape != np.shape(probs):
        raise ValueError(f"true probabilities {t.shape} and probabilities {np.shape(probs)} must have one shape")
    err = 1.0 - t[np.arange(len(t)), np.where(routed, cols, 0)][routed]
    err = err[~np.isnan(err)]
    return float(err.mean()) if len(err) else math.nan
