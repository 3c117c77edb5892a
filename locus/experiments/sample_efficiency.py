"""Training-time sample efficiency (paper figure ``fig:train_sample_eff``).

Curves: per method and training size n (training evaluations per model), mean ± std over seeds of a
test metric (routing accuracy by default).

Sample-efficiency factor of a reference method R (LOCUS) over a method M at a target accuracy a:
``k(a) = n_M(a) / n_R(a)``, where ``n_X(a)`` is the smallest number of samples at which X's mean curve
reaches a. Curves are interpolated piecewise-linearly in (log n, accuracy), which is how they look on
the paper's log2 axis, and ``n_X(a)`` is the *first* crossing, so a noisy, non-monotone curve is not
credited with accuracies it only reaches later. "R reaches accuracy a with k× fewer samples than M."

A factor is ``exact`` only when both crossings lie inside the measured ranges. When M is already at or
above a at its smallest size the true factor is at most the computed one (``upper_bound``); when M never
reaches a it is larger than ``max n_M / n_R(a)`` (``lower_bound``, reported with n_M = NaN). Headline
numbers (the maximum factor and the factor at the reference point) use exact factors only. When both
curves start above the target the factor is ``indeterminate``; targets R never reaches do not occur
(they come from R's own curve) but would read ``not_reached_by_reference``.

Targets: the reference method's curve evaluated on a log-spaced grid of sizes over its measured range
(measured sizes included). The reference point (default: R's measured size nearest the geometric middle
of its range, 512 for 256/512/1024; the paper quotes its factors near 450 LOCUS samples) gives the
target ``a = R(n_ref)``.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from locus.errors import DataError


def curves(method_rows: pd.DataFrame, metric: str = "routing_acc", benchmark: str = "Overall") -> pd.DataFrame:
    """``method, train_size, mean, std, n_seeds`` from :func:`locus.experiments.comparison.method_frame` rows."""
    rows = method_rows[(method_rows["metric"] == metric) & (method_rows["benchmark"] == benchmark)]
    if rows.empty:
        raise DataError(f"no '{metric}' values ({benchmark}) in the metrics files")
    g = rows.groupby(["method", "train_size"], sort=True)["value"]
    out = g.agg(mean="mean", std=lambda v: float(v.std(ddof=1)) if v.count() > 1 else 0.0, n_seeds="count")
    return out.reset_index()


def first_crossing(sizes, accs, target: float) -> tuple[float, str]:
    """Smallest n at which the piecewise-linear curve (in log2 n) reaches `target`.

    Returns ``(n, status)``: ``("exact")`` inside the range, ``("at_start")`` if the curve starts at or
    above the target (n = smallest size), ``(nan, "not_reached")`` if it never gets there.
    """
    sizes = np.asarray(sizes, dtype=float)
    accs = np.asarray(accs, dtype=float)
    order = np.argsort(sizes)
    sizes, accs = sizes[order], accs[order]
    if sizes.size == 0:
        return math.nan, "not_reached"
    if accs[0] >= target:
        return float(sizes[0]), "at_start"
    logs = np.log2(sizes)
    for i in range(1, sizes.size):
        if accs[i] >= target:
            a0, a1 = accs[i - 1], accs[i]
            t = (target - a0) / (a1 - a0)
            return float(2.0 ** (logs[i - 1] + t * (logs[i] - logs[i - 1]))), "exact"
    return math.nan, "not_reached"


def interpolate(sizes, accs, n: float) -> float:
    """Curve value at `n` (piecewise-linear in log2 n); `n` must be inside the measured range."""
    sizes = np.asarray(sizes, dtype=float)
    order = np.argsort(sizes)
    return float(np.interp(math.log2(n), np.log2(sizes[order]), np.asarray(accs, dtype=float)[order]))


def factor(ref_sizes, ref_accs, sizes, accs, target: float) -> dict:
    """Sample-efficiency factor of the reference curve over another at one target accuracy."""
    n_ref, s_ref = first_crossing(ref_sizes, ref_accs, target)
    n_m, s_m = first_crossing(sizes, accs, target)
    if s_ref == "not_reached":
        status, k = "not_reached_by_reference", math.nan
    elif s_m == "not_reached":
        status, k = "lower_bound", float(np.max(sizes)) / n_ref
    else:
        k = n_m / n_ref
        # "at_start": the curve may reach the target with fewer samples than its smallest measured size,
        # so n is an upper bound there: M at start -> k is an upper bound, R at start -> a lower bound.
        status = {("exact", "exact"): "exact", ("exact", "at_start"): "upper_bound",
                  ("at_start", "exact"): "lower_bound"}.get((s_ref, s_m), "indeterminate")
    return {"target": float(target), "n_reference": n_ref, "n_method": n_m, "factor": k, "status": status}


def target_grid(ref_sizes, ref_accs, points: int = 65) -> pd.DataFrame:
    """``n, target`` along the reference curve: `points` log-spaced sizes plus the measured ones."""
    sizes = np.sort(np.asarray(ref_sizes, dtype=float))
    grid = np.unique(np.concatenate([np.exp2(np.linspace(np.log2(sizes[0]), np.log2(sizes[-1]), points)), sizes]))
    return pd.DataFrame({"n": grid, "target": [interpolate(ref_sizes, ref_accs, n) for n in grid]})


def default_reference_point(ref_sizes) -> int:
    """The measured size nearest (in log n) to the geometric middle of the range."""
    sizes = np.sort(np.asarray(ref_sizes, dtype=float))
    mid = 0.5 * (math.log2(sizes[0]) + math.log2(sizes[-1]))
    return int(sizes[np.argmin(np.abs(np.log2(sizes) - mid))])


def efficiency(curve: pd.DataFrame, reference: str, reference_point: int | None = None,
               points: int = 65) -> tuple[pd.DataFrame, dict]:
    """Factors of `reference` over every other method.

    Returns ``(table, summary)``: ``table`` has one row per (method, target) with ``method, n, target,
    n_reference, n_method, factor, status``; ``summary[method]`` has ``max`` (largest exact factor, with its
    target and sizes, or None) and ``at_reference_point``.
    """
    if reference not in set(curve["method"]):
        raise DataError(f"reference method {reference!r} has no runs (methods: "
                        f"{', '.join(sorted(set(curve['method'])))}); pass --reference-method or its metrics")
    ref = curve[curve["method"] == reference]
    if len(ref) < 2:
        raise DataError(f"reference method {reference!r} has runs at one training size only "
                        f"({ref['train_size'].tolist()}); sample efficiency needs a curve of >= 2 sizes")
    rs, ra = ref["train_size"].to_numpy(), ref["mean"].to_numpy()
    if reference_point is None:
        reference_point = default_reference_point(rs)
    if not rs.min() <= reference_point <= rs.max():
        raise DataError(f"reference point n={reference_point} is outside {reference!r}'s sizes "
                        f"{int(rs.min())}..{int(rs.max())}")
    grid = target_grid(rs, ra, points)
    ref_target = interpolate(rs, ra, reference_point)
    rows, summary = [], {}
    for method, part in curve[curve["method"] != reference].groupby("method", sort=True):
        ms, ma = part["train_size"].to_numpy(), part["mean"].to_numpy()
        for n, target in zip(grid["n"], grid["target"]):
            rows.append({"method": method, "n": float(n), **factor(rs, ra, ms, ma, target)})
        exact = [r for r in rows if r["method"] == method and r["status"] == "exact"]
        best = max(exact, key=lambda r: r["factor"]) if exact else None
        at_ref = factor(rs, ra, ms, ma, ref_target)
        summary[method] = {"max": best, "at_reference_point": {"n": int(reference_point), **at_ref}}
    table = pd.DataFrame(rows, columns=["method", "n", "target", "n_reference", "n_method", "factor", "status"])
    return table, {"reference_method": reference, "reference_point": int(reference_point), "methods": summary}
