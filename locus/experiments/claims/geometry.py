"""Judges of the geometry claims: distance against disagreement, nearest-neighbour proxies and fallback routing,
model families, portfolios (by size and by parameter budget) and the recall of hypothetical models."""

from __future__ import annotations

import math

from locus.experiments import report
from locus.experiments.claims.rules import (
    EQUIVALENCE_PP,
    STRONG_CORRELATION,
    Outcome,
    _combine,
    _number,
    _points,
    wilson,
)
from locus.experiments.report import Source, fmt


def judge_correlation(src: Source) -> Outcome:
    """A strong positive distance–disagreement relation for LOCUS: `holds` when all six intervals (Pearson,
    Spearman, Kendall × cosine, Euclidean) lie at or above 0.5, `refuted` when one lies below it."""
    rel = "tables/distance_correlation.csv"
    path = src.path(rel)
    rows = [
        r
        for r in report.read_rows(path, ("method", "correlation", "distance", "value", "ci_low", "ci_high"))
        if r["method"] == "locus"
    ]
    if not rows:
        return Outcome("–", "untestable", "no LOCUS rows in the distance-correlation table")
    cells = [
        (r["correlation"], r["distance"], *(report.number_of(r[c], path, c) for c in ("value", "ci_low", "ci_high")))
        for r in rows
    ]
    ours = "; ".join(f"{c} {d} {fmt(v, 3)} [{fmt(lo, 3)}, {fmt(hi, 3)}]" for c, d, v, lo, hi in cells)
    if any(hi < STRONG_CORRELATION for *_, hi in cells):
        return Outcome(ours, "refuted", f"an interval lies below {STRONG_CORRELATION}")
    if all(lo >= STRONG_CORRELATION for _, _, _, lo, _ in cells):
        return Outcome(ours, "holds", f"every interval at or above {STRONG_CORRELATION}")
    return Outcome(ours, "inconclusive", f"an interval reaches below {STRONG_CORRELATION}")


def judge_neighbour_proxies(src: Source) -> Outcome:
    """A model's nearest neighbour in LOCUS's space is a proxy for it: `holds` when the k = 1 agreement's interval
    (±1.96 standard errors over models) lies above a random other model's agreement and agreement falls from
    k = 1 to the largest k, `refuted` when the k = 1 agreement is at or below random."""
    rel = "figures/nearest_neighbor_proxies.csv"
    path = src.path(rel)
    rows = [
        r for r in report.read_rows(path, ("method", "curve", "k", "agreement", "std", "n")) if r["method"] == "locus"
    ]
    curve = sorted(((int(r["k"]), r) for r in rows if r["curve"] == "embedding_neighbour"), key=lambda kr: kr[0])
    rand = next((r for r in rows if r["curve"] == "random_other"), None)
    if not curve or rand is None:
        return Outcome("–", "untestable", "no LOCUS neighbour curve (a pool needs at least 2 models)")
    first, last = curve[0][1], curve[-1][1]
    a1, sd, n = (report.number_of(first[c], path, c) for c in ("agreement", "std", "n"))
    half = 1.96 * sd / math.sqrt(n) if n > 0 else math.nan
    r = report.number_of(rand["agreement"], path, "agreement")
    ak = report.number_of(last["agreement"], path, "agreement")
    ours = (
        f"k=1 {fmt(100 * a1, 1)}% [{fmt(100 * (a1 - half), 1)}, {fmt(100 * (a1 + half), 1)}], "
        f"k={curve[-1][0]} {fmt(100 * ak, 1)}%, random other {fmt(100 * r, 1)}%"
    )
    if a1 <= r:
        return Outcome(ours, "refuted", "the nearest neighbour agrees no more than a random model")
    if a1 - half > r and a1 > ak:
        return Outcome(ours, "holds", "above random and falling with k (interval: standard error over models)")
    return Outcome(ours, "inconclusive", "not clearly above random, or not falling with k")


def judge_fallback(src: Source, keep: float = 0.85) -> Outcome:
    """Routing to a model's nearest neighbour when it is unavailable keeps ≥ `keep` of LOCUS's routing accuracy
    (Wilson 95% interval of the fallback accuracy over test queries, the original held fixed), more than a random
    other model keeps; inconclusive for a near-constant router."""
    rel = "figures/fallback_routing.csv"
    path = src.path(rel)
    need = ("method", "curve", "k", "accuracy", "retention", "n_queries", "top_model_share")
    rows = [r for r in report.read_rows(path, need) if r["method"] == "locus"]
    pick = lambda curve, k="": next((r for r in rows if r["curve"] == curve and r["k"] in (k, str(k))), None)  # noqa: E731
    first, original, rand = pick("embedding_neighbour", 1), pick("original"), pick("random_other")
    if first is None or original is None or rand is None:
        return Outcome("–", "untestable", "no LOCUS fallback curve (a pool needs at least 2 models)")
    ks = sorted(int(r["k"]) for r in rows if r["curve"] == "embedding_neighbour")
    last = pick("embedding_neighbour", ks[-1])
    orig = report.number_of(original["accuracy"], path, "accuracy")
    acc, n = report.number_of(first["accuracy"], path, "accuracy"), int(float(first["n_queries"]))
    lo, hi = wilson(acc, n)
    ret, r_rand = acc / orig, report.number_of(rand["retention"], path, "retention")
    r_last = report.number_of(last["retention"], path, "retention")
    ours = (
        f"nearest neighbour keeps {fmt(100 * ret, 1)}% [{fmt(100 * lo / orig, 1)}, {fmt(100 * hi / orig, 1)}], "
        f"k={ks[-1]} {fmt(100 * r_last, 1)}%, a random other {fmt(100 * r_rand, 1)}%"
    )
    if report.number_of(original["top_model_share"], path, "top_model_share") >= 0.9:
        return Outcome(ours, "inconclusive", "LOCUS's router is near-constant: its choice is nearly one model")
    if hi / orig < keep or ret <= r_rand:
        return Outcome(ours, "refuted", f"keeps less than {100 * keep:g}% or no more than a random model")
    if lo / orig >= keep and ret >= r_last:
        return Outcome(ours, "holds", f"keeps at least {100 * keep:g}%, more than a random model, less with k")
    return Outcome(ours, "inconclusive", f"the interval reaches below {100 * keep:g}%, or it does not fall with k")


def judge_families(src: Source, alpha: float = 0.05) -> Outcome:
    """Tagged model families sit together: for every highlighted family (two or more models) the mean distance
    within it is below that to the other models, with the figure's permutation p below `alpha` (Bonferroni over
    the families); refuted when a family's members are on average no closer to each other than to the rest."""
    summary = report.read_json(src, "figures/models_family_clustering.json", ("separation",))
    seps = {t: s for t, s in (summary["separation"] or {}).items() if s and _number(s.get("n_models")) >= 2}
    if not seps:
        return Outcome("–", "untestable", "no highlighted family has two models in this pool (geometry.neighbours)")
    level = alpha / len(seps)  # Bonferroni: one permutation test per family
    parts, verdicts = [], []
    for tag, s in seps.items():
        ratio, p = _number(s.get("ratio")), _number(s.get("p_value"))
        nn, chance = _number(s.get("nn_same_tag")), _number(s.get("nn_same_tag_chance"))
        parts.append(
            f"{tag} ({int(_number(s['n_models']))} models): within / to others {fmt(ratio, 2)}, permutation "
            f"p = {fmt(p, 3)}; nearest neighbour in the family {fmt(100 * nn, 0)}% (chance {fmt(100 * chance, 0)}%)"
        )
        if ratio >= 1:
            verdicts.append(("refuted", f"{tag}: no closer to each other than to the other models"))
        elif p < level:
            verdicts.append(("holds", ""))
        else:
            verdicts.append(("inconclusive", f"{tag}: closer, but p = {fmt(p, 3)} ≥ {level:.3g}"))
    perms = fmt(min(_number(s.get("n_perm")) for s in seps.values()), 0)
    how = f"{summary.get('distance', '?')} distance, {perms} permutations"
    out = _combine("; ".join(parts), verdicts, f"every family closer together with p < {level:.3g}")
    return Outcome(out.ours, out.verdict, f"{out.reason}; {how}")


def _portfolio(src: Source, keys: tuple[str, ...]) -> dict:
    return report.read_json(src, "figures/model_portfolio.json", ("n_models", "full_pool_routing_acc") + keys)


def _one_model_suffices(s: dict) -> str:
    """The reason a portfolio claim is vacuous: the best single model (on validation) routes as well as the pool."""
    single, full = _number(s.get("best_single_routing_acc")), _number(s.get("full_pool_routing_acc"))
    if single >= full:
        return (
            f"the best single model alone ({s.get('best_single_model')}, {fmt(single, 1)}%) routes as well as the "
            f"whole pool ({fmt(full, 1)}%): any portfolio that holds it matches"
        )
    return ""


def judge_portfolio_count(src: Source, share: float = 20 / 112, within: float = EQUIVALENCE_PP) -> Outcome:
    """A portfolio chosen in the embedding space (k-center or k-medoids) of at most `share` of the pool (the
    paper's 15–20 of 112) routes as accurately as the whole pool. No interval: one portfolio per k."""
    keys = tuple(f"{m}_k_{t}" for m in ("k-center", "k-medoids") for t in ("full", "within_1pt"))
    s = _portfolio(src, keys)
    n, full = int(_number(s["n_models"])), _number(s["full_pool_routing_acc"])
    cap = share * n
    # the smaller of the two selectors' k; None (never reached) reads NaN and is left out
    k_full = min(
        (v for m in ("k-center", "k-medoids") if not math.isnan(v := _number(s[f"{m}_k_full"]))), default=math.nan
    )
    k_near = min(
        (v for m in ("k-center", "k-medoids") if not math.isnan(v := _number(s[f"{m}_k_within_1pt"]))), default=math.nan
    )
    shown = lambda m, t: fmt(_number(s.get(f"{m}_k_{t}")), 0)  # noqa: E731
    ours = (
        f"of {n} models (pool {fmt(full, 1)}%): reached by k-center at {shown('k-center', 'full')}, k-medoids at "
        f"{shown('k-medoids', 'full')} (within 1 point: {shown('k-center', 'within_1pt')}, "
        f"{shown('k-medoids', 'within_1pt')}); by random subsets at {shown('random', 'full')}"
    )
    noise = f"no interval: one portfolio per k on {s.get('n_test_queries', '?')} test queries"
    if not k_near <= cap:  # NaN (never) fails too
        return Outcome(
            ours, "refuted", f"no embedding portfolio of ≤ {cap:.0f} models within {_points(within)}; {noise}"
        )
    if vacuous := _one_model_suffices(s):
        return Outcome(ours, "inconclusive", f"{vacuous}; {noise}")
    if k_full <= cap:
        return Outcome(ours, "holds", f"{fmt(k_full, 0)} models (≤ {cap:.0f}) reach the pool's accuracy; {noise}")
    return Outcome(ours, "inconclusive", f"≤ {cap:.0f} models come within {_points(within)} but not level; {noise}")


def judge_portfolio_budget(src: Source, share: float = 0.08, within: float = EQUIVALENCE_PP) -> Outcome:
    """A coverage-greedy portfolio within `share` of the pool's parameters (the paper's ≈150B of 1930B, "8%")
    comes within `within` points of the whole pool's routing accuracy. No interval: one portfolio per budget."""
    s = _portfolio(src, ("budget_panel",))
    if s["budget_panel"] != "ok":
        return Outcome("–", "untestable", str(s["budget_panel"]))
    full, total = _number(s["full_pool_routing_acc"]), _number(s.get("total_params_b"))
    near = _number(s.get("coverage-greedy_budget_b_within_1pt"))
    rand = _number(s.get("random-feasible_budget_b_within_1pt"))
    ours = (
        f"coverage-greedy within 1 point of the pool ({fmt(full, 1)}%) at {fmt(near, 0)}B of {fmt(total, 0)}B "
        f"({fmt(100 * near / total, 1)}%); random subsets at {fmt(rand, 0)}B"
    )
    noise = "no interval: one portfolio per budget, budgets ≈1.3× apart"
    if not near <= 2 * share * total:  # NaN: never within 1 point
        much = f"needs more than {100 * 2 * share:g}% of the parameters (twice the paper's share)"
        return Outcome(ours, "refuted", f"{'never within 1 point' if math.isnan(near) else much}; {noise}")
    if near > share * total:
        return Outcome(ours, "inconclusive", f"needs {100 * share:g}–{100 * 2 * share:g}% of the parameters; {noise}")
    if vacuous := _one_model_suffices(s):
        return Outcome(ours, "inconclusive", f"{vacuous}; {noise}")
    return Outcome(ours, "holds", f"within {_points(within)} at ≤ {100 * share:g}% of the parameters; {noise}")


def judge_hypothetical(
    src: Source, k: int = 10, target: float = 0.97, floor: float = 0.90, paper_size: int = 8192
) -> Outcome:
    """A model made up from one model's per-benchmark accuracies is embedded among that model's `k` nearest:
    recall@`k` at the largest set size (Wilson 95% interval over models) reaches `target` (the paper's "almost
    97%" at 8,192 queries) with its lower end at least `floor`."""
    rel = "figures/hypothetical_model_embedding.csv"
    path = src.path(rel)
    rows = [
        r
        for r in report.read_rows(path, ("size", "k", "recall", "models", "kind"))
        if r["kind"] == "recall" and int(float(r["k"])) == k
    ]
    if not rows:
        return Outcome("–", "untestable", f"no recall@{k} in the figure (a pool needs more than {k} models)")
    by_size = sorted(((int(float(r["size"])), r) for r in rows), key=lambda sr: sr[0])
    size, last = by_size[-1]
    recall, models = report.number_of(last["recall"], path, "recall"), int(float(last["models"]))
    lo, hi = wilson(recall, models)
    chance = k / models
    smaller = "/".join(str(x) for x, _ in by_size[:-1])
    ours = (
        f"recall@{k} at {size} queries {fmt(100 * recall, 1)}% [{fmt(100 * lo, 1)}, {fmt(100 * hi, 1)}] "
        f"({models} models, chance {fmt(100 * chance, 0)}%)"
    )
    if smaller:
        shown = "/".join(fmt(100 * report.number_of(r["recall"], path, "recall"), 1) for _, r in by_size[:-1])
        ours += f"; at {smaller}: {shown}%"
    if lo <= chance:
        return Outcome(ours, "refuted", "no better than chance at the largest set; Wilson interval over models")
    if hi < target and size >= paper_size:
        return Outcome(ours, "refuted", f"below {100 * target:g}% with as many queries as the paper; Wilson interval")
    if hi >= target and lo >= floor:
        return Outcome(ours, "holds", f"reaches {100 * target:g}%, above {100 * floor:g}%; Wilson interval over models")
    if hi < target:
        return Outcome(
            ours,
            "inconclusive",
            f"below {100 * target:g}%, but the largest set ({size}) is smaller than the paper's {paper_size}",
        )
    return Outcome(ours, "inconclusive", f"the interval reaches below {100 * floor:g}%; Wilson interval over models")
