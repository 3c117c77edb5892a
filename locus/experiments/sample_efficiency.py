"""Training-time sample efficiency (paper figure ``fig:train_sample_eff``).

Curves: per method and training size n (training evaluations per model), mean ± std over seeds of a test
metric (routing accuracy by default), as measured (:func:`curves`). Factors are read off the isotonic fit
(increasing, on log2 n) of each seed-averaged curve (:func:`smooth`), so a single noisy peak cannot set
them; the figure plots the measured points with the fit as a thin dashed line.

Sample-efficiency factor of a reference method R (LOCUS) over M at a target accuracy a:
``k(a) = n_M(a) / n_R(a)``, ``n_X(a)`` = the first crossing of a by X's fit, interpolated piecewise-linearly
in (log n, accuracy) (:func:`factor`; when a crossing falls outside the measured range the factor is only
a bound). Targets are named by sizes on R's curve, ``a = R(n)`` (:func:`target_grid`); the headline
target is R at the reference point (:func:`default_reference_point`). Intervals: a paired bootstrap over
test queries (:mod:`locus.experiments.sample_efficiency_ci`), the targets re-read on each resampled
reference curve; the figure annotates a factor only when it is exact and significant (:func:`efficiency`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from locus.errors import DataError
from locus.experiments import sample_efficiency_ci as ci

STATUSES = ("significant", "not_significant", "undefined", "no_interval")
CONFIDENCE = 0.95
# A factor is read off a bootstrap only where both crossings fall inside the measured sizes; where fewer
# than this share of resamples give such an exact factor, its interval is mostly censoring and the factor
# is reported "undefined" (never significant, no interval).
MIN_DEFINED = 0.95
# The paper does not give the x-axis grid of fig:train_sample_eff (its figure file is not in its source; its
# tables use 256 / 512 / 1024); config/paper.yaml `sample_efficiency` runs these sizes and seeds for it
PAPER_CONFIG_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
PAPER_CONFIG_SEEDS = (0, 1, 2)
PAPER_TABLE_SIZES = (256, 512, 1024)


def grid_sentence(sizes, seeds) -> str:
    """The figure's statement of the grid that ran (training `sizes`, `seeds` of the runs read) against
    what the paper gives (no grid for this figure; its tables' sizes, :data:`PAPER_TABLE_SIZES`) and
    config/paper.yaml's grid (:data:`PAPER_CONFIG_SIZES` x :data:`PAPER_CONFIG_SEEDS`)."""

    def show(values):
        return "{" + ", ".join(map(str, values)) + "}"

    sizes = sorted({int(n) for n in sizes})
    seeds = sorted({int(s) for s in seeds})
    text = (
        f"grid run: n in {show(sizes)} x {len(seeds)} seed{'s' if len(seeds) != 1 else ''}. The paper does not "
        f"give this figure's sizes (its tables: {show(PAPER_TABLE_SIZES)}, "
        f"{sum(n in PAPER_TABLE_SIZES for n in sizes)} of them here); config/paper.yaml runs "
        f"{show(PAPER_CONFIG_SIZES)} x {len(PAPER_CONFIG_SEEDS)} seeds"
    )
    missing = [n for n in PAPER_CONFIG_SIZES if n not in sizes]
    if missing or len(seeds) < len(PAPER_CONFIG_SEEDS):
        text += f" ({len(PAPER_CONFIG_SIZES) - len(missing)} of its sizes here"
        text += f", without {', '.join(map(str, missing))})" if missing else ")"
    return text


def curves(method_rows: pd.DataFrame, metric: str = "routing_acc", benchmark: str = "Overall") -> pd.DataFrame:
    """``method, train_size, mean, std, n_seeds`` from :func:`locus.experiments.comparison.method_frame` rows."""
    rows = method_rows[(method_rows["metric"] == metric) & (method_rows["benchmark"] == benchmark)]
    if rows.empty:
        raise DataError(f"no '{metric}' values ({benchmark}) in the metrics files")
    g = rows.groupby(["method", "train_size"], sort=True)["value"]
    out = g.agg(mean="mean", std=lambda v: float(v.std(ddof=1)) if v.count() > 1 else 0.0, n_seeds="count")
    return out.reset_index()


def isotonic(sizes, accs) -> np.ndarray:
    """Increasing isotonic regression of `accs` on log2 `sizes` (distinct sizes, equal weights), in the
    order given; `accs` may be [rows x sizes] (one fit per row). Equals
    ``sklearn.isotonic.IsotonicRegression(increasing=True).fit_transform(np.log2(sizes), accs)`` (tested),
    through sklearn's function without the estimator's per-call overhead (resamples fit thousands)."""
    from sklearn import config_context
    from sklearn.isotonic import isotonic_regression

    sizes = np.asarray(sizes, dtype=np.float64)
    accs = np.asarray(accs, dtype=np.float64)
    if len(np.unique(sizes)) != sizes.size:
        raise ValueError(f"sizes must be distinct, got {sizes.tolist()}")
    order = np.argsort(sizes)
    rows = np.atleast_2d(accs)[:, order]
    fit = np.empty_like(rows)
    with config_context(assume_finite=False, skip_parameter_validation=True):  # the arguments are built here
        for i, row in enumerate(rows):
            fit[i] = isotonic_regression(row, increasing=True)
    out = np.empty_like(fit)
    out[:, order] = fit
    return out.reshape(accs.shape)


def smooth(curve: pd.DataFrame) -> pd.DataFrame:
    """``method, train_size, mean``: each method's isotonic fit of its seed-averaged curve."""
    parts = []
    for method, part in curve.groupby("method", sort=False):
        part = part.sort_values("train_size")
        parts.append(
            pd.DataFrame(
                {
                    "method": method,
                    "train_size": part["train_size"].to_numpy(),
                    "mean": isotonic(part["train_size"], part["mean"]),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


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
    """Sample-efficiency factor of the reference curve over another at one target accuracy.

    ``crossing`` is ``exact`` only when both crossings lie inside the measured ranges. When M is already at
    or above a at its smallest size the true factor is at most the computed one (``upper_bound``); when M
    never reaches a it is larger than ``max n_M / n_R(a)`` (``lower_bound``, with n_M = NaN). When both curves
    start above the target the factor is ``indeterminate``; targets R never reaches cannot occur (they come
    from R's own curve) but would read ``not_reached_by_reference``."""
    n_ref, s_ref = first_crossing(ref_sizes, ref_accs, target)
    n_m, s_m = first_crossing(sizes, accs, target)
    if s_ref == "not_reached":
        crossing, k = "not_reached_by_reference", math.nan
    elif s_m == "not_reached":
        crossing, k = "lower_bound", float(np.max(sizes)) / n_ref
    else:
        k = n_m / n_ref
        # "at_start": the curve may reach the target with fewer samples than its smallest measured size,
        # so n is an upper bound there: M at start -> k is an upper bound, R at start -> a lower bound.
        crossing = {
            ("exact", "exact"): "exact",
            ("exact", "at_start"): "upper_bound",
            ("at_start", "exact"): "lower_bound",
        }.get((s_ref, s_m), "indeterminate")
    return {"target": float(target), "n_reference": n_ref, "n_method": n_m, "factor": k, "crossing": crossing}


def target_sizes(ref_sizes, points: int = 65, extra=()) -> np.ndarray:
    """`points` log-spaced sizes over the reference's measured range, plus the measured ones and `extra`."""
    sizes = np.sort(np.asarray(ref_sizes, dtype=float))
    grid = np.exp2(np.linspace(np.log2(sizes[0]), np.log2(sizes[-1]), points))
    return np.unique(np.concatenate([grid, sizes, np.asarray(extra, dtype=float)]))


def target_grid(ref_sizes, ref_accs, points: int = 65) -> pd.DataFrame:
    """``n, target`` along the reference curve: `points` log-spaced sizes over R's measured range plus the
    measured ones (and the reference point)."""
    grid = target_sizes(ref_sizes, points)
    return pd.DataFrame({"n": grid, "target": [interpolate(ref_sizes, ref_accs, n) for n in grid]})


def default_reference_point(ref_sizes) -> int:
    """The measured size nearest (in log n) to the geometric middle of the range (512 for
    256/512/1024 and for 64..4096; the paper quotes its factors near 450 LOCUS samples)."""
    sizes = np.sort(np.asarray(ref_sizes, dtype=float))
    mid = 0.5 * (math.log2(sizes[0]) + math.log2(sizes[-1]))
    return int(sizes[np.argmin(np.abs(np.log2(sizes) - mid))])


def significance(low: float, high: float, share_defined: float = 1.0, min_defined: float = MIN_DEFINED) -> str:
    """``no_interval`` when there is no interval (NaN), ``undefined`` when the factor is exact in fewer
    than `min_defined` of the resamples (`share_defined`), else ``significant`` when the interval
    [low, high] excludes 1 and ``not_significant`` when it holds it."""
    if math.isnan(low) or math.isnan(high):
        return "no_interval"
    if not share_defined >= min_defined:
        return "undefined"
    return "significant" if low > 1 or high < 1 else "not_significant"


def _intervals(rs, ref_boot, sizes_t, ms, m_boot, confidence):
    """Per target size: (low, high, share_defined) of the factor over the resampled curves."""
    targets = np.array([np.interp(np.log2(sizes_t), np.log2(rs), row) for row in ref_boot])  # [B x T]
    lo, hi = ci.factor_bounds(rs, ref_boot, ms, m_boot, targets)
    return ci.interval(lo, hi, confidence)


def _headline(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("method", "annotated")}


def efficiency(
    curve: pd.DataFrame,
    reference: str,
    reference_point: int | None = None,
    points: int = 65,
    resampled: dict | None = None,
    confidence: float = CONFIDENCE,
    min_defined: float = MIN_DEFINED,
) -> tuple[pd.DataFrame, dict]:
    """Factors of `reference` over every other method, on the isotonic fits of the curves.

    `resampled`: per method its [resamples x sizes] curve points (sizes ascending) on paired resamples of
    the test queries (:func:`locus.experiments.sample_efficiency_ci.resampled_curves`), for the intervals;
    None: no intervals (``status = no_interval``).

    Returns ``(table, summary)``: ``table`` has one row per (method, target) with ``method, n, target,
    n_reference, n_method, factor, crossing, ci_low, ci_high, share_defined, status, annotated``;
    ``summary["methods"][method]`` has ``max`` (largest exact factor, with its target, sizes and interval,
    or None), ``at_reference_point`` and ``annotated`` (which of the two the figure draws, or None).

    Headline numbers (the maximum factor and the factor at the reference point) use exact factors only. On
    each resample every factor is recomputed at the *same target sizes* (the target is ``R(n)`` of the
    resampled reference curve): a fixed accuracy would not do, as the headline target often lies on the
    plateau the isotonic fit gives the top of R's curve, which many resampled curves never reach. ``status``
    is ``undefined`` when fewer than `min_defined` of the resamples give an exact factor (``share_defined``;
    the interval is then blank: mostly censoring, e.g. [1.3, inf]), else ``significant`` when the 95%
    interval excludes 1 and ``not_significant`` otherwise; ``no_interval`` without per-query values. The figure annotates the reference point's factor, or the largest exact one
    where the reference point has none; the interval of the largest factor is taken at the target chosen on
    the measured curves (it does not account for that choice)."""
    if reference not in set(curve["method"]):
        raise DataError(
            f"reference method {reference!r} has no runs (methods: "
            f"{', '.join(sorted(set(curve['method'])))}); pass --reference-method or its metrics"
        )
    ref = curve[curve["method"] == reference]
    if len(ref) < 2:
        raise DataError(
            f"reference method {reference!r} has runs at one training size only "
            f"({ref['train_size'].tolist()}); sample efficiency needs a curve of >= 2 sizes"
        )
    fits = {
        m: (p["train_size"].to_numpy(np.float64), p["mean"].to_numpy(np.float64))
        for m, p in smooth(curve).groupby("method", sort=True)
    }
    rs, ra = fits[reference]
    if reference_point is None:
        reference_point = default_reference_point(rs)
    if not rs.min() <= reference_point <= rs.max():
        raise DataError(
            f"reference point n={reference_point} is outside {reference!r}'s sizes {int(rs.min())}..{int(rs.max())}"
        )
    sizes_t = target_sizes(rs, points, [reference_point])
    targets = [interpolate(rs, ra, n) for n in sizes_t]
    boot = None if resampled is None else {m: isotonic(fits[m][0], resampled[m]) for m in fits}
    rows, summary = [], {}
    for method, (ms, ma) in fits.items():
        if method == reference:
            continue
        if boot is None:
            low = high = share = np.full(len(sizes_t), np.nan)
        else:
            low, high, share = _intervals(rs, boot[reference], sizes_t, ms, boot[method], confidence)
        part = []
        for j, (n, target) in enumerate(zip(sizes_t, targets)):
            f = factor(rs, ra, ms, ma, target)
            status = significance(low[j], high[j], share[j], min_defined)
            undefined = status == "undefined"
            part.append(
                {
                    "method": method,
                    "n": float(n),
                    **f,
                    "ci_low": math.nan if undefined else float(low[j]),
                    "ci_high": math.nan if undefined else float(high[j]),
                    "share_defined": float(share[j]),
                    "status": status,
                    "annotated": False,
                }
            )
        exact = [r for r in part if r["crossing"] == "exact"]
        best = max(exact, key=lambda r: r["factor"]) if exact else None
        at_ref = next(r for r in part if r["n"] == float(reference_point))
        chosen = "at_reference_point" if at_ref["crossing"] == "exact" else ("max" if best else None)
        pick = {"at_reference_point": at_ref, "max": best}.get(chosen)
        if pick is None or pick["status"] != "significant":
            chosen = None
        else:
            pick["annotated"] = True
        rows += part
        summary[method] = {
            "max": _headline(best) if best else None,
            "at_reference_point": {**_headline(at_ref), "n": int(reference_point)},
            "annotated": chosen,
        }
    table = pd.DataFrame(
        rows,
        columns=[
            "method",
            "n",
            "target",
            "n_reference",
            "n_method",
            "factor",
            "crossing",
            "ci_low",
            "ci_high",
            "share_defined",
            "status",
            "annotated",
        ],
    )
    return table, {
        "reference_method": reference,
        "reference_point": int(reference_point),
        "confidence": float(confidence),
        "min_defined": float(min_defined),
        "methods": summary,
    }
