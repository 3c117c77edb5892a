"""Judges of the routing claims beyond the shared rules: K-Means a strong baseline (appendix B), the encoder and
dimension ablations, the sample-efficiency factors and the shape of LOCUS's embedding time."""

from __future__ import annotations

import math

from locus.experiments import report
from locus.experiments.claims.rules import (
    Cell,
    Outcome,
    _combine,
    _comparable,
    _judge_cells,
    _number,
    _seed_columns,
    _shared_seeds,
    _shown,
    by_seed,
    comparison_cells,
    near_constant_of,
    seeds_note,
)
from locus.experiments.report import Source, fmt
from locus.render.labels import plain_label


def _kmeans(cells: list[Cell], strong: list[str]) -> tuple[str, str]:
    """The rule of :func:`judge_kmeans_strong` on LOCUS minus K-Means per size (`cells`) and the sizes where
    K-Means is the best or not significantly below it (`strong`), pooled or one seed's."""
    if strong:
        return "holds", f"best or not significantly below the best at n={', '.join(strong)}"
    if all(c.low > 0 for c in cells):
        return "refuted", "significantly below LOCUS at every size"
    return "inconclusive", "never the best, not significantly below LOCUS everywhere"


def judge_kmeans_strong(src: Source) -> Outcome:
    """K-Means a strong routing baseline at some size: `holds` when at some size it is the column's best or not
    significantly below it, `refuted` when at every size it is significantly below LOCUS; with several seeds,
    judged on each seed too (:func:`by_seed`): a seed's K-Means is strong where the interval of (the column's
    best − K-Means) of that seed alone does not lie above 0."""
    rel = "tables/routing_by_dataset.csv"
    path = src.path(rel)
    rows = report.read_rows(
        path,
        ("approach", "kind", "metric", "train_size", "benchmark", "best", "not_significant_vs_best", "near_constant"),
    )
    cells = comparison_cells(src, rel, "routing_acc", ("kmeans_router",))
    if not cells:
        return Outcome(
            "–", "untestable", "the table has no K-Means router rows; add kmeans_router to by_dataset_methods"
        )
    km = {
        r["train_size"]: r
        for r in rows
        if r["approach"] == "kmeans_router"
        and r["kind"] == "method"
        and r["metric"] == "routing_acc"
        and r["benchmark"] == "Overall"
    }
    ranked = {n: r["near_constant"] not in ("True", "true") for n, r in km.items()}
    flat_seeds = {n: near_constant_of(r, path)[1] for n, r in km.items()}  # K-Means near-constant, seed by seed
    strong = [
        n
        for n, r in km.items()
        if ranked[n] and (r["best"] == "kmeans_router" or r["not_significant_vs_best"] in ("True", "true"))
    ]
    # each seed's (the column's best − K-Means) with its interval, size by size
    to_best = {n: _seed_columns(r, "seed_best_diffs_pct", "seed_best_ci_pct", path) for n, r in km.items()}
    seeds = [s for s in _shared_seeds(cells) if all(s in to_best[n] for n in km)]

    def at_seed(seed: int):
        # ranked with this seed's own flag; strong where not significantly below the best
        ranked_s = {n: ranked[n] if flat_seeds[n] is None else seed not in flat_seeds[n] for n in km}
        strong_s = [n for n in km if ranked_s[n] and not to_best[n][seed][1] > 0]
        return [c.at_seed(seed) for c in cells], strong_s

    verdict, reason, n = by_seed(lambda x: _kmeans(*x), (cells, strong), min(c.n_seeds for c in cells), seeds, at_seed)
    return Outcome(_shown(cells), verdict, reason + seeds_note(n))


def judge_encoder_ablation(src: Source) -> Outcome:
    """Encoders comparable: every other encoder within ±1 point of the configured one in routing and correctness
    (routing inconclusive where either router is near-constant)."""
    return _ablation_comparable(
        src,
        ("tables/encoder_ablation_routing.csv", "tables/encoder_ablation_correctness.csv"),
        "the encoder ablation has one encoder; list two in ablation.encoders",
        "every encoder within ±1 point in both metrics",
    )


def judge_dim_ablation(src: Source) -> Outcome:
    """Embedding dimensions comparable: every other dimension within ±1 point of the configured one in routing
    and correctness (routing inconclusive where either router is near-constant)."""
    return _ablation_comparable(
        src,
        ("tables/dim_ablation_routing.csv", "tables/dim_ablation_correctness.csv"),
        "the dimension ablation has one dimension; list two in ablation.dims",
        "every dimension within ±1 point in both metrics",
    )


def _ablation_comparable(src: Source, rels: tuple[str, str], one: str, when_holds: str) -> Outcome:
    """An ablation's settings against its configured one (the tables' reference), routing then correctness, by
    the rule of :func:`judge_comparable` (each seed too, :func:`by_seed`); `one` is the reason when the table has
    a single setting."""
    parts, verdicts, seeds = [], [], []
    for metric, rel in zip(("routing_acc", "correctness_acc"), rels):
        cells = comparison_cells(src, rel, metric, None, reference=None)
        if not cells:
            return Outcome("–", "untestable", one)
        cells = [c.negated() for c in cells]
        rule = _comparable_routers if metric == "routing_acc" else _comparable
        verdict, reason, n = _judge_cells(rule, cells)
        seeds.append(n)
        parts.append(f"{metric.split('_')[0]}: {_shown(cells)}")
        verdicts.append((verdict, f"{metric.split('_')[0]}: {reason}" if verdict != "holds" else ""))
    agree = f"; every seed agrees ({min(seeds)} seeds)" if min(seeds) >= 2 else ""
    out = _combine("; ".join(parts), verdicts, when_holds + agree)
    return Outcome(out.ours, out.verdict, out.reason + seeds_note(min(seeds)))


def _comparable_routers(cells: list[Cell]) -> tuple[str, str]:
    """:func:`_comparable` of routing cells, where a comparable verdict needs both routers of every cell to
    route: one near-constant router (LOCUS's or the other setting's; pooled, or the seed's own) makes a holds
    inconclusive, naming the seeds where the table gives them."""
    verdict, reason = _comparable(cells)
    flat = [c for c in cells if c.locus_near_constant or c.other_near_constant]
    if verdict != "holds" or not flat:
        return verdict, reason
    seeds = sorted({s for c in flat for s in c.flat_seeds()})
    return "inconclusive", "a near-constant router" + (f" (seed {', '.join(map(str, seeds))})" if seeds else "")


def judge_sample_efficiency(src: Source, low: float = 2.3, high: float = 4.8) -> Outcome:
    """Baselines need `low`–`high`× LOCUS's training samples at the reference point: `holds` when every baseline's
    factor is exact with an interval above 1 that meets [low, high], `refuted` when an interval lies below `low`,
    `inconclusive` otherwise (a factor that is only a bound, or no interval)."""
    summary = report.read_json(src, "figures/train_sample_eff.json", ("methods", "reference_method"))
    parts, verdicts = [], []
    for method, info in sorted(summary["methods"].items()):
        f = (info or {}).get("at_reference_point") or {}
        factor, lo, hi = (_number(f.get(k)) for k in ("factor", "ci_low", "ci_high"))
        crossing, status = f.get("crossing"), f.get("status")
        parts.append(f"{plain_label(method)} {fmt(factor, 1)}× [{fmt(lo, 1)}, {fmt(hi, 1)}] ({crossing}, {status})")
        if status in (None, "undefined", "no_interval") or crossing != "exact" or math.isnan(lo):
            verdicts.append(("inconclusive", f"{plain_label(method)}'s factor has no interval ({crossing}, {status})"))
        elif hi < low:
            verdicts.append(("refuted", f"{plain_label(method)}'s interval lies below {low:g}×"))
        elif lo > 1 and hi >= low and lo <= high:
            verdicts.append(("holds", ""))
        else:
            verdicts.append(("inconclusive", f"{plain_label(method)}'s interval misses [{low:g}, {high:g}]"))
    if not parts:
        return Outcome("–", "untestable", "no baseline in the sample-efficiency figure")
    return _combine("; ".join(parts), verdicts, "every baseline's factor meets the paper's range")


def judge_time_complexity(src: Source, low: float = 0.8, high: float = 1.25, superlinear: float = 1.6) -> Outcome:
    """Embedding time linear in the evaluations per model: the log-log slope of the measured float32 embedding
    time against n (n ≥ 256, per pool size) lies in [`low`, `high`]; refuted at ≥ `superlinear`."""
    import numpy as np

    rel = "figures/time_complexity.csv"
    path = src.path(rel)
    rows = report.read_rows(path, ("source", "what", "precision", "n_models", "n", "median_s", "cpu_model", "threads"))
    rows = [r for r in rows if r["source"] == "measured" and r["what"] == "embed" and r["precision"] == "float32"]
    slopes = {}
    for pool in report.unique(r["n_models"] for r in rows):
        pts = [
            (float(r["n"]), report.number_of(r["median_s"], path, "median_s")) for r in rows if r["n_models"] == pool
        ]
        pts = [(n, t) for n, t in pts if n >= 256 and t > 0]
        if len(pts) >= 2:
            x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            slopes[pool] = float(np.polyfit(x, y, 1)[0])
    if not slopes:
        return Outcome("–", "untestable", "fewer than two measured sizes n ≥ 256")
    where = f"measured on {rows[0]['cpu_model']}, {rows[0]['threads']} threads"
    ours = "; ".join(f"{p} models: slope {fmt(v, 2)}" for p, v in slopes.items())
    if any(v >= superlinear for v in slopes.values()):
        return Outcome(ours, "refuted", f"a slope ≥ {superlinear:g} (superlinear); {where}")
    if all(low <= v <= high for v in slopes.values()):
        return Outcome(ours, "holds", f"every slope in [{low:g}, {high:g}]; {where}")
    return Outcome(ours, "inconclusive", f"a slope outside [{low:g}, {high:g}]; {where}")
