"""Judges of the onboarding claims: a held-out model embedded from about 128 evaluations, and by an encoder trained
on a subset of the models."""

from __future__ import annotations

import math

from locus.errors import DataError
from locus.experiments import report
from locus.experiments.claims.rules import (
    EQUIVALENCE_PP,
    Outcome,
    _combine,
    _interval,
    _mean_interval,
    _points,
)
from locus.experiments.report import Source, fmt


def _onboarding(src: Source):
    """({(row, k): {model: accuracy in points}}, {row: models the encoder was trained on}) of the onboarding
    figure: each held-out model's correctness over its draws (repeats pooled)."""
    rel = "figures/sample_eff_ood_test.csv"
    path = src.path(rel)
    rows = report.read_rows(path, ("row", "k", "kind", "n_train_models", "model_id", "n_pairs", "correct"))
    trained = {
        r["row"]: report.number_of(r["n_train_models"], path, "n_train_models") for r in rows if r["kind"] == "cell"
    }
    sums: dict[tuple[str, int], dict[str, list[float]]] = {}
    for r in rows:
        if r["kind"] == "draw":
            cell = sums.setdefault((r["row"], int(float(r["k"]))), {})
            pair = cell.setdefault(r["model_id"], [0.0, 0.0])
            pair[0] += report.number_of(r["correct"], path, "correct")
            pair[1] += report.number_of(r["n_pairs"], path, "n_pairs")
    if not sums or not trained:
        raise DataError(
            f"{path}: no per-model draw rows or no cell rows; it was written by another version: rebuild it"
        )
    acc = {key: {m: 100 * c / n for m, (c, n) in cell.items() if n > 0} for key, cell in sums.items()}
    return acc, trained


def _encoder(row: str, trained: dict[str, float]) -> str:
    n = fmt(trained.get(row, math.nan), 0)
    return f"all {n} models" if row == "all" else f"{n} models"


def _paired(a: dict[str, float], b: dict[str, float]) -> tuple[float, float, float, int]:
    """Mean of a − b over the models both hold, with its t interval, and the number of models."""
    models = sorted(set(a) & set(b))
    return (*_mean_interval([a[m] - b[m] for m in models]), len(models))


def judge_onboarding_k(src: Source, k: int = 128, within: float = EQUIVALENCE_PP) -> Outcome:
    """A held-out model embedded from `k` evaluations is as accurate as from the figure's largest k: for every
    encoder, the shortfall (largest k minus `k`, points, t interval over held-out models) at most `within`."""
    acc, trained = _onboarding(src)
    parts, verdicts, counts = [], [], set()
    for row in sorted(trained, key=lambda r: -trained[r]):
        ks = sorted(n for r, n in acc if r == row)
        if k not in ks or ks[-1] <= k:
            continue
        top = ks[-1]
        d, lo, hi, n = _paired(acc[(row, top)], acc[(row, k)])
        counts.add(n)
        name = _encoder(row, trained)
        parts.append(f"encoder on {name}: k={k} short of k={top} by {_interval(d, lo, hi)}")
        if hi <= within:
            verdicts.append(("holds", ""))
        elif lo > within:
            verdicts.append(("refuted", f"encoder on {name}: more than {_points(within)} short"))
        else:
            verdicts.append(("inconclusive", f"encoder on {name}: the interval reaches past {_points(within)}"))
    if not parts:
        ks = sorted({n for _, n in acc})
        return Outcome("–", "untestable", f"no k = {k} below a larger k in the figure (k: {', '.join(map(str, ks))})")
    note = f"t interval over {'/'.join(map(str, sorted(counts)))} held-out models"
    out = _combine("; ".join(parts), verdicts, f"within {_points(within)} for every encoder")
    return Outcome(out.ours, out.verdict, f"{out.reason}; {note}")


def judge_onboarding_partial(src: Source, margin: float = EQUIVALENCE_PP) -> Outcome:
    """The encoder trained on every model and one trained on a subset embed held-out models alike: at every k,
    the difference in their correctness (points, t interval over held-out models) within ±`margin`."""
    acc, trained = _onboarding(src)
    partial = [r for r in sorted(trained, key=lambda r: -trained[r]) if r != "all"]
    if "all" not in trained or not partial:
        return Outcome(
            "–", "untestable", "the figure lacks the all-models row or a partial one (onboarding.all_models_row)"
        )
    parts, verdicts, counts = [], [], set()
    for row in partial:
        cells, outside, straddle = [], [], []
        for k in sorted(n for r, n in acc if r == row and ("all", n) in acc):
            d, lo, hi, n = _paired(acc[("all", k)], acc[(row, k)])
            counts.add(n)
            cells.append(f"k={k} {_interval(d, lo, hi)}")
            if lo > margin or hi < -margin:
                outside.append(str(k))
            elif lo < -margin or hi > margin:
                straddle.append(str(k))
        name = f"encoder on {_encoder(row, trained)}"
        parts.append(f"{name}: {', '.join(cells)}")
        if outside:
            verdicts.append(("refuted", f"{name}: more than {_points(margin)} apart at k = {', '.join(outside)}"))
        elif straddle:
            verdicts.append(("inconclusive", f"{name}: intervals reach past ±{margin:g} at k = {', '.join(straddle)}"))
        else:
            verdicts.append(("holds", ""))
    note = f"all-models encoder minus the partial one; t interval over {'/'.join(map(str, sorted(counts)))} held-out models"
    out = _combine("; ".join(parts), verdicts, f"every interval within ±{_points(margin)}")
    return Outcome(out.ours, out.verdict, f"{out.reason}; {note}")
