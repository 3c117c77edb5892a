"""Uncertainty of sample-efficiency factors: paired bootstrap over test queries.

The factors of :mod:`locus.experiments.sample_efficiency` are read off curves measured on one finite test
set, so their uncertainty is that of the test set. The test *queries* are resampled with replacement
(``n_boot`` times, seeded; the very same resample for every method, training size and seed), every curve
point is recomputed on each resample and the resampled curves are smoothed and read exactly like the
measured ones, then summarised by percentile intervals:

- :func:`resampled_curves`: the runs' per-query values (:func:`locus.experiments.comparison.query_values`)
  -> per method the [resamples x sizes] curve points, checked against the metrics.json means so that
  the intervals belong to the plotted points;
- :func:`crossings`, :func:`factor_bounds`: the first crossings and factors of ``sample_efficiency``,
  vectorised over resamples and targets, each resample's factor an interval ``[lo, hi]`` (censoring);
- :func:`interval`: the percentile interval of censored values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locus.errors import DataError

EXACT, AT_START, NOT_REACHED = 0, 1, 2  # crossing codes
CHUNK = 100  # resamples drawn at once: fixed, so the random stream never depends on memory
TOLERANCE = 1e-6  # |metrics.json mean - sum(num) / sum(den)| allowed per curve point


def resampled_accuracies(num, den, n_boot: int, seed: int) -> np.ndarray:
    """[cells x queries] per-query numerators / denominators -> [n_boot x cells] accuracies
    ``sum(num) / sum(den)`` on `n_boot` resamples of the queries (with replacement; one resample shared
    by all cells). Queries labelled in no cell are dropped first (they count in no accuracy)."""
    num = np.atleast_2d(np.asarray(num, dtype=np.float64))
    den = np.atleast_2d(np.asarray(den, dtype=np.float64))
    if num.shape != den.shape:
        raise ValueError(f"num {num.shape} and den {den.shape} must have one shape")
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    keep = (den > 0).any(axis=0)
    num, den = num[:, keep], den[:, keep]
    q = num.shape[1]
    if q == 0:
        raise DataError("no labelled test query: the sample-efficiency bootstrap has nothing to resample")
    rng = np.random.default_rng(int(seed))
    out = np.empty((int(n_boot), num.shape[0]))
    for start in range(0, int(n_boot), CHUNK):
        b = min(CHUNK, int(n_boot) - start)
        idx = rng.integers(0, q, size=(b, q))
        counts = np.stack([np.bincount(row, minlength=q) for row in idx]).astype(np.float64)  # [b x q]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + b] = (counts @ num.T) / (counts @ den.T)
    return out


def resampled_curves(
    cells: dict, curve: pd.DataFrame, metric: str, n_boot: int = 1000, seed: int = 0
) -> dict[str, np.ndarray]:
    """Per method of `curve` (``method, train_size, mean``), its [n_boot x sizes] curve points (sizes
    ascending) on paired resamples of the queries. `cells`: ``(method, train_size) -> {metric: (num,
    den)}`` over one list of queries (:attr:`locus.experiments.comparison.QueryValues.cells`)."""
    curve = curve.sort_values(["method", "train_size"])
    keys = list(zip(curve["method"], curve["train_size"].astype(int)))
    missing = [k for k in keys if k not in cells or metric not in cells[k]]
    if missing:
        raise DataError(f"no per-query {metric} values for {missing[:3]}; every run needs its scores file")
    num = np.array([cells[k][metric][0] for k in keys])
    den = np.array([cells[k][metric][1] for k in keys])
    with np.errstate(invalid="ignore", divide="ignore"):
        full = num.sum(axis=1) / den.sum(axis=1)
    off = np.abs(full - curve["mean"].to_numpy(np.float64))
    if not (off <= TOLERANCE).all():
        i = int(np.nanargmax(np.where(np.isnan(off), np.inf, off)))
        raise DataError(
            f"{keys[i][0]} at n={keys[i][1]}: the runs' metrics.json give {metric} "
            f"{curve['mean'].iloc[i]:.6f} but their scores files with the data set's labels give "
            f"{full[i]:.6f}; pass the data set the runs were trained on with --data (or re-run them)"
        )
    acc = resampled_accuracies(num, den, n_boot, seed)
    methods = curve["method"].to_numpy()
    return {m: acc[:, methods == m] for m in dict.fromkeys(methods)}


def crossings(sizes, accs, targets) -> tuple[np.ndarray, np.ndarray]:
    """First crossing, vectorised: `sizes` [S] ascending, `accs` [B x S], `targets` [B x T] ->
    ``(n, code)`` [B x T] with code :data:`EXACT` (n interpolated in log2 n), :data:`AT_START` (n = the
    smallest size) or :data:`NOT_REACHED` (n = NaN); the rules of ``sample_efficiency.first_crossing``."""
    sizes = np.asarray(sizes, dtype=np.float64)
    accs = np.atleast_2d(np.asarray(accs, dtype=np.float64))
    targets = np.atleast_2d(np.asarray(targets, dtype=np.float64))
    reach = accs[:, None, :] >= targets[:, :, None]  # [B x T x S]
    first = reach.argmax(axis=2)
    code = np.where(~reach.any(axis=2), NOT_REACHED, np.where(first == 0, AT_START, EXACT))
    n = np.where(code == AT_START, sizes[0], np.nan)
    if sizes.size > 1:
        logs = np.log2(sizes)
        i1 = np.clip(first, 1, sizes.size - 1)
        i0 = i1 - 1
        a0 = np.take_along_axis(accs, i0, axis=1)
        a1 = np.take_along_axis(accs, i1, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (targets - a0) / (a1 - a0)
            n_exact = 2.0 ** (logs[i0] + t * (logs[i1] - logs[i0]))
        n = np.where(code == EXACT, n_exact, n)
    return n, code


def factor_bounds(ref_sizes, ref_accs, sizes, accs, targets) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` [B x T]: the bounds of each resample's factor ``n_M(a) / n_R(a)`` (equal where both
    crossings are exact; censored cases below).

    Censoring. In a resample a crossing may fall outside the measured sizes, and the factor is then only
    bounded: the baseline never reaches the target (``k > max n_M / n_R``: ``[that, +inf]``), the reference
    is already there at its smallest size (``n_R`` is an upper bound: ``[k, +inf]``), the baseline is already
    there at its smallest size (``[0, k]``), both are (``[0, +inf]``). The interval takes its lower end from
    the lower ends and its upper end from the upper ends (``lo`` at the ``(1 - confidence) / 2`` quantile,
    lower order statistic; ``hi`` at ``(1 + confidence) / 2``, higher order statistic): a conservative
    percentile interval that contains the one the uncensored factors would give, and treats "censored
    above" as +inf exactly where that matters. ``share_defined`` is the share of resamples where both
    crossings fall inside the measured ranges (an exact factor)."""
    n_r, c_r = crossings(ref_sizes, ref_accs, targets)
    n_m, c_m = crossings(sizes, accs, targets)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = n_m / n_r
        lo, hi = k.copy(), k.copy()
        m_never = (c_m == NOT_REACHED) & (c_r != NOT_REACHED)
        lo[m_never] = float(np.max(sizes)) / n_r[m_never]
    hi[m_never] = np.inf
    hi[(c_r == AT_START) & (c_m == EXACT)] = np.inf
    lo[(c_r == EXACT) & (c_m == AT_START)] = 0.0
    unknown = ((c_r == AT_START) & (c_m == AT_START)) | (c_r == NOT_REACHED)
    lo[unknown], hi[unknown] = 0.0, np.inf
    return lo, hi


def interval(lo, hi, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(low, high, share_defined)`` per column of the [B x T] bounds: conservative percentile
    interval (lower order statistic of `lo`, higher of `hi`) and the share of exact resamples."""
    lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
    alpha = (1.0 - float(confidence)) / 2.0
    low = np.quantile(lo, alpha, axis=0, method="lower")
    high = np.quantile(hi, 1.0 - alpha, axis=0, method="higher")
    return low, high, np.mean(lo == hi, axis=0)
