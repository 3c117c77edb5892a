"""Judges of the stability claims: accuracy with every model re-embedded from other evaluation sets (saturation,
overlap), EmbedLLM regeneration against LOCUS, and convergence to the reference embedding over overlap and size."""

from __future__ import annotations

import math

from locus.errors import DataError
from locus.experiments import report
from locus.experiments.claims.rules import Outcome, _combine, _mean_interval, _points
from locus.experiments.report import Source, fmt


def _evalset_means(src: Source):
    rel = "figures/perf_vs_size_and_overlap.csv"
    path = src.path(rel)
    rows = report.read_rows(path, ("kind", "panel", "setting", "routing_acc", "correctness_acc", "top_model_share"))
    ref = next((r for r in rows if r["kind"] == "reference"), None)
    if ref is None:
        raise DataError(f"{path}: no reference row (the run's own embeddings); rebuild it")
    return path, rows, ref


def judge_saturation(src: Source, within: float = 1.0, upto: int = 256) -> Outcome:
    """Re-embedding every model from n evaluations: the accuracy reaches the run's own (within `within` points) by
    n = `upto` for both metrics."""
    path, rows, ref = _evalset_means(src)
    means = sorted(
        ((int(float(r["setting"])), r) for r in rows if r["kind"] == "mean" and r["panel"] == "size"),
        key=lambda x: x[0],
    )
    if not means:
        return Outcome("–", "untestable", "no evaluation-set sizes in the figure")
    parts, verdicts = [], []
    for metric in ("routing_acc", "correctness_acc"):
        full = 100 * report.number_of(ref[metric], path, metric)
        acc = [(n, 100 * report.number_of(r[metric], path, metric)) for n, r in means]
        sat = next((n for n, a in acc if a >= full - within), None)
        upto_acc = [a for n, a in acc if n <= upto]
        name = metric.split("_")[0]
        parts.append(f"{name}: {', '.join(f'n={n} {fmt(a, 1)}' for n, a in acc)} (own {fmt(full, 1)})")
        near = metric == "routing_acc" and report.number_of(ref["top_model_share"], path, "top_model_share") >= 0.9
        if near:
            verdicts.append(("inconclusive", f"{name}: the run's router is near-constant"))
        elif sat is not None and sat <= upto:
            verdicts.append(("holds", ""))
        elif upto_acc and max(upto_acc) < full - 2 * within:
            verdicts.append(("refuted", f"{name}: more than {2 * within:g} points short at n ≤ {upto}"))
        else:
            verdicts.append(
                ("inconclusive", f"{name}: within {_points(2 * within)} but not {_points(within)} by n = {upto}")
            )
    return _combine(
        "; ".join(parts),
        verdicts,
        f"both within {within:g} point of the run's own by n = {upto}; one draw "
        "per size unless views.evalset_repeats is larger",
    )


def judge_overlap_stability(src: Source, stable: float = 1.0) -> Outcome:
    """Re-embedding from sets that overlap the training set by α: both accuracies vary by at most `stable` points
    over α (routing inconclusive when the run's router is near-constant)."""
    path, rows, ref = _evalset_means(src)
    means = [r for r in rows if r["kind"] == "mean" and r["panel"] == "overlap"]
    if len(means) < 2:
        return Outcome("–", "untestable", "fewer than two overlap fractions in the figure")
    parts, verdicts = [], []
    for metric in ("routing_acc", "correctness_acc"):
        acc = [100 * report.number_of(r[metric], path, metric) for r in means]
        spread = max(acc) - min(acc)
        name = metric.split("_")[0]
        parts.append(f"{name}: {fmt(min(acc), 1)}–{fmt(max(acc), 1)} over {len(acc)} overlaps (range {fmt(spread, 2)})")
        near = metric == "routing_acc" and report.number_of(ref["top_model_share"], path, "top_model_share") >= 0.9
        if near:
            verdicts.append(("inconclusive", f"{name}: the run's router is near-constant"))
        elif spread <= stable:
            verdicts.append(("holds", ""))
        elif spread > 2 * stable:
            verdicts.append(("refuted", f"{name} varies by {fmt(spread, 1)} points"))
        else:
            verdicts.append(("inconclusive", f"{name} varies by {fmt(spread, 1)} points"))
    return _combine("; ".join(parts), verdicts, f"both vary by at most {stable:g} point over the overlaps")


def judge_regeneration(src: Source) -> Outcome:
    """EmbedLLM re-learned on its own data disagrees with itself on test correctness (the paper: up to 8.1%) while
    LOCUS reproduces its embeddings: holds when EmbedLLM's largest same-data disagreement is ≥ 1% and LOCUS's
    ≤ 0.1%."""
    rel = "figures/relearn_embedllm_heatmap_test_disagreement.csv"
    path = src.path(rel)
    rows = [r for r in report.read_rows(path, ("method", "kind", "test_disagreement")) if r["kind"] == "same"]
    emb = [
        report.number_of(r["test_disagreement"], path, "test_disagreement") for r in rows if r["method"] == "embedllm"
    ]
    loc = [report.number_of(r["test_disagreement"], path, "test_disagreement") for r in rows if r["method"] == "locus"]
    if not emb or not loc:
        return Outcome("–", "untestable", "the regeneration figure lacks EmbedLLM or LOCUS on the same data")
    e, l_ = max(emb), max(loc)
    ours = f"EmbedLLM up to {fmt(100 * e, 1)}% over {len(emb)} settings; LOCUS {fmt(100 * l_, 2)}%"
    if e < 0.01 or l_ >= e:
        return Outcome(ours, "refuted", "EmbedLLM below 1%, or LOCUS no more stable; one draw per setting")
    if l_ <= 0.001:
        return Outcome(ours, "holds", "EmbedLLM ≥ 1% while LOCUS ≤ 0.1%; one draw per setting")
    return Outcome(ours, "inconclusive", "LOCUS disagrees with itself by more than 0.1%; one draw per setting")


def _convergence(src: Source, rel: str, by: str):
    """Per model of a convergence figure: ({setting: [distances of its draws]}, the nearest other model's
    distance). Settings whose every draw reproduces the reference embedding are the reference set itself
    (overlap 1, the whole set): they are 0 by construction and left out."""
    path = src.path(rel)
    rows = report.read_rows(path, ("kind", "name", by, "distance"))
    out = {}
    for name in report.unique(r["name"] for r in rows):
        draws: dict[float, list[float]] = {}
        for r in rows:
            if r["name"] == name and r["kind"] == "draw":
                draws.setdefault(float(r[by]), []).append(report.number_of(r["distance"], path, "distance"))
        draws = {x: d for x, d in sorted(draws.items()) if max(d) >= 1e-4}
        near = [
            report.number_of(r["distance"], path, "distance")
            for r in rows
            if r["name"] == name and r["kind"] == "neighbour"
        ]
        out[name] = (draws, min(near, default=math.nan))
    return out


def _trend(draws: dict[float, list[float]]) -> tuple[float, float, int]:
    """Spearman's ρ of distance against the setting over all draws, its two-sided p and the number of draws."""
    from scipy import stats

    x = [s for s, d in draws.items() for _ in d]
    y = [v for d in draws.values() for v in d]
    if len(set(x)) < 2:
        return math.nan, math.nan, len(y)
    rho, p = stats.spearmanr(x, y)
    return float(rho), float(p), len(y)


def judge_overlap_convergence(src: Source, alpha: float = 0.05) -> Outcome:
    """Re-embeddings from sets overlapping the reference set by α stay closer to the reference embedding than the
    nearest other model is (every α's mean distance, t interval over draws), and the distance falls as α grows
    (Spearman's ρ over draws < 0 with p < `alpha`)."""
    models = _convergence(src, "figures/overlap_convergence.csv", "alpha")
    parts, verdicts = [], []
    for name, (draws, near) in models.items():
        if len(draws) < 2 or math.isnan(near):
            continue
        rho, p, n = _trend(draws)
        stats_ = {a: _mean_interval(d) for a, d in draws.items()}
        far = [a for a, (m, lo, hi) in stats_.items() if (lo if not math.isnan(lo) else m) > near]
        parts.append(
            f"{name}: "
            + ", ".join(f"α={a:g} {fmt(m, 3)}" for a, (m, _, _) in stats_.items())
            + f"; nearest other model {fmt(near, 3)}; ρ = {fmt(rho, 2)} (p = {p:.1g}, {n} draws)"
        )
        if (rho > 0 and p < alpha) or far:
            where = f"at α = {', '.join(f'{a:g}' for a in far)} farther than the nearest other model" if far else ""
            verdicts.append(("refuted", f"{name}: " + (where or "the distance grows with the overlap")))
        elif rho < 0 and p < alpha and all(hi < near for _, _, hi in stats_.values()):
            verdicts.append(("holds", ""))
        else:
            verdicts.append(
                ("inconclusive", f"{name}: not clearly closer than the nearest other model, or no clear fall")
            )
    if not parts:
        return Outcome("–", "untestable", "fewer than two overlaps below 1, or no neighbour distances, in the figure")
    out = _combine("; ".join(parts), verdicts, "closer than the nearest other model at every α, falling with α")
    return Outcome(out.ours, out.verdict, f"{out.reason}; Euclidean distances")


def judge_size_convergence(src: Source, alpha: float = 0.05) -> Outcome:
    """Re-embeddings from n evaluations subsampled from the reference set approach the reference embedding as n
    grows: Spearman's ρ of distance against n over draws < 0 with p < `alpha`; refuted when > 0 with p < `alpha`."""
    models = _convergence(src, "figures/anchor_size_convergence.csv", "n")
    parts, verdicts = [], []
    for name, (draws, near) in models.items():
        if len(draws) < 2:
            continue
        rho, p, n = _trend(draws)
        means = {x: sum(d) / len(d) for x, d in draws.items()}
        parts.append(
            f"{name}: "
            + ", ".join(f"n={x:g} {fmt(m, 2)}" for x, m in means.items())
            + f"; nearest other model {fmt(near, 3)}; ρ = {fmt(rho, 2)} (p = {p:.1g}, {n} draws)"
        )
        if rho < 0 and p < alpha:
            verdicts.append(("holds", ""))
        elif rho > 0 and p < alpha:
            verdicts.append(("refuted", f"{name}: the distance grows with n"))
        else:
            verdicts.append(("inconclusive", f"{name}: no significant fall with n (p = {p:.2g})"))
    if not parts:
        return Outcome("–", "untestable", "fewer than two subsampled sizes below the reference set in the figure")
    out = _combine("; ".join(parts), verdicts, f"the distance falls with n (p < {alpha:g})")
    return Outcome(out.ours, out.verdict, f"{out.reason}; Euclidean distances")
