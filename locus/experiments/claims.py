"""The claims ledger: the paper's claims, each with a verdict computed from the DAG's output files.

One :class:`Claim` per claim of the paper: its words and value (typed once, here, from the paper), the files that
test it, and a judge — a pure function of those files that gives our statistic with its interval, a verdict
(:data:`locus.constants.CLAIM_VERDICTS`) and the reason. The rule that decides is written in the row, so a
reader can check it. Verdicts test the claim's qualitative form on any pool; the paper's numbers are shown beside
ours as context, since they were measured on another pool unless the pool is the paper's (EmbedLLM).

Every comparison reads the intervals the tables already carry (a paired bootstrap over test queries). With one
seed they cover test-query noise only; the reason says so, and `config/seed-bands.yaml` (three seeds) decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from locus import atomic
from locus.constants import CLAIM_VERDICTS
from locus.errors import DataError
from locus.experiments import report
from locus.experiments.report import Source, fmt
from locus.render.labels import plain_label

EQUIVALENCE_PP = 1.0  # "comparable" accuracies: the paper's largest gap within a training size is 0.98 points
STRONG_CORRELATION = 0.5  # "strong positive relationship": every interval's lower end at or above this
ONE_SEED = "one seed: the intervals cover test queries only; config/seed-bands.yaml (3 seeds) decides"
COLUMNS = ["id", "claim", "paper_ref", "statistic", "paper_value", "ours", "dataset", "verdict", "rule", "reason"]


@dataclass(frozen=True)
class Outcome:
    ours: str  # our statistic, with its interval
    verdict: str  # one of CLAIM_VERDICTS
    reason: str  # what decided it


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    paper_ref: str  # the paper's label (tables and figures are numbered in source order)
    statistic: str
    paper_value: str
    files: tuple[str, ...]  # under the results directory
    rule: str
    judge: Callable[[Source], Outcome]


# --------------------------------------------------------------------------------------------------
# method comparisons: the tables' Overall rows (LOCUS is the bootstrap's reference method)
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """LOCUS minus one approach at one training size, in points, with its interval; and the LOCUS router's
    diversity there."""

    approach: str
    n: str
    diff: float
    low: float
    high: float
    n_seeds: int
    locus_near_constant: bool


def comparison_cells(
    src: Source, rel: str, metric: str, approaches: tuple[str, ...] | None, reference: str | None = "locus"
) -> list[Cell]:
    """The table's cells for `approaches` (None: every row but the reference's) against the reference (every
    training size): the reference minus each; a DataError when the table's reference is another than `reference`
    (None: whichever the table names, as the ablations' configured setting)."""
    path = src.path(rel)
    need = ("approach", "kind", "metric", "train_size", "benchmark", "n_seeds", "reference", "diff_to_reference_pct")
    rows = report.read_rows(path, need + ("ci_low_pct", "ci_high_pct", "near_constant"))
    overall = [r for r in rows if r["kind"] == "method" and r["metric"] == metric and r["benchmark"] == "Overall"]
    sizes = report.unique(r["train_size"] for r in overall)
    if reference is None:
        reference = next((r["reference"] for r in overall if r["reference"]), "")
    locus = {r["train_size"]: r for r in overall if r["approach"] == reference}
    if not locus:
        raise DataError(f"{path}: no {reference} rows for {metric}; the ledger compares with {reference}")
    if approaches is None:
        approaches = tuple(a for a in report.unique(r["approach"] for r in overall) if a != reference)
    cells = []
    for approach in approaches:
        for n in sizes:
            row = next((r for r in overall if r["approach"] == approach and r["train_size"] == n), None)
            if row is None:
                continue  # a method the table does not have: the claim says so
            if row["reference"] != reference:
                raise DataError(
                    f"{path}: differences are taken to {row['reference']!r}, not {reference!r}; set "
                    "bootstrap.reference_method: locus and rebuild the table"
                )
            d = report.number_of(row["diff_to_reference_pct"], path, "diff_to_reference_pct")
            lo = report.number_of(row["ci_low_pct"], path, "ci_low_pct")
            hi = report.number_of(row["ci_high_pct"], path, "ci_high_pct")
            near = locus[n].get("near_constant", "") in ("True", "true", "1")
            cells.append(Cell(approach, n, -d, -hi, -lo, int(float(row["n_seeds"] or 0)), near))
    return cells


def _shown(cells: list[Cell]) -> str:
    return "; ".join(
        f"{plain_label(c.approach)} n={c.n}: {fmt(c.diff, 1, signed=True)} [{fmt(c.low, 1, signed=True)}, "
        f"{fmt(c.high, 1, signed=True)}]"
        for c in cells
    )


def _seeds_note(cells: list[Cell]) -> str:
    return f"; {ONE_SEED}" if cells and min(c.n_seeds for c in cells) < 2 else ""


def judge_ahead(cells: list[Cell], missing: list[str]) -> Outcome:
    """LOCUS ahead of every approach at every size: `holds` when every interval of LOCUS minus it lies above 0,
    `refuted` when one lies below 0, `inconclusive` otherwise or where LOCUS's router is near-constant."""
    if missing:
        return Outcome(
            "–", "untestable", f"the tables have no {', '.join(missing)} rows; add the method(s) to the config"
        )
    ours = _shown(cells)
    behind = [c for c in cells if c.high < 0]
    flat = sorted({c.n for c in cells if c.locus_near_constant})
    if behind:
        who = ", ".join(f"{plain_label(c.approach)} at n={c.n}" for c in behind)
        return Outcome(ours, "refuted", f"significantly behind {who}{_seeds_note(cells)}")
    if flat:
        return Outcome(
            ours, "inconclusive", f"LOCUS's router is near-constant at n={', '.join(flat)}{_seeds_note(cells)}"
        )
    open_ = [c for c in cells if c.low <= 0]
    if open_:
        who = ", ".join(f"{plain_label(c.approach)} at n={c.n}" for c in open_)
        return Outcome(ours, "inconclusive", f"no significant difference from {who}{_seeds_note(cells)}")
    return Outcome(ours, "holds", f"ahead at every size{_seeds_note(cells)}")


def judge_comparable(cells: list[Cell], missing: list[str], margin: float = EQUIVALENCE_PP) -> Outcome:
    """Accuracies comparable: `holds` when every interval lies within ±margin, `refuted` when one lies wholly
    outside it, `inconclusive` otherwise."""
    if missing:
        return Outcome(
            "–", "untestable", f"the tables have no {', '.join(missing)} rows; add the method(s) to the config"
        )
    ours = _shown(cells)
    outside = [c for c in cells if c.low > margin or c.high < -margin]
    if outside:
        who = ", ".join(f"{plain_label(c.approach)} at n={c.n}" for c in outside)
        return Outcome(ours, "refuted", f"differs by more than {_points(margin)} from {who}{_seeds_note(cells)}")
    straddle = [c for c in cells if c.low < -margin or c.high > margin]
    if straddle:
        who = ", ".join(f"{plain_label(c.approach)} at n={c.n}" for c in straddle)
        return Outcome(ours, "inconclusive", f"intervals reach past ±{margin:g} for {who}{_seeds_note(cells)}")
    return Outcome(ours, "holds", f"every interval within ±{_points(margin)}{_seeds_note(cells)}")


def _table_claim(rel: str, metric: str, approaches: tuple[str, ...], judge) -> Callable[[Source], Outcome]:
    def run(src: Source) -> Outcome:
        cells = comparison_cells(src, rel, metric, approaches)
        missing = [plain_label(a) for a in approaches if not any(c.approach == a for c in cells)]
        return judge(cells, missing)

    return run


def judge_kmeans_strong(src: Source) -> Outcome:
    """K-Means a strong routing baseline at some size: `holds` when at some size it is the column's best or not
    significantly below it, `refuted` when at every size it is significantly below LOCUS."""
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
    strong = [
        n
        for n, r in km.items()
        if r["near_constant"] not in ("True", "true")
        and (r["best"] == "kmeans_router" or r["not_significant_vs_best"] in ("True", "true"))
    ]
    ours = _shown(cells)
    if strong:
        return Outcome(
            ours, "holds", f"best or not significantly below the best at n={', '.join(strong)}{_seeds_note(cells)}"
        )
    if all(c.low > 0 for c in cells):
        return Outcome(ours, "refuted", f"significantly below LOCUS at every size{_seeds_note(cells)}")
    return Outcome(
        ours, "inconclusive", f"never the best, not significantly below LOCUS everywhere{_seeds_note(cells)}"
    )


# --------------------------------------------------------------------------------------------------
# sample efficiency, geometry
# --------------------------------------------------------------------------------------------------
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
        return Outcome(ours, "refuted", f"an interval lies below {STRONG_CORRELATION}; one embedding run")
    if all(lo >= STRONG_CORRELATION for _, _, _, lo, _ in cells):
        return Outcome(ours, "holds", f"every interval at or above {STRONG_CORRELATION}; one embedding run")
    return Outcome(ours, "inconclusive", f"an interval reaches below {STRONG_CORRELATION}; one embedding run")


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
        return Outcome(ours, "refuted", "the nearest neighbour agrees no more than a random model; one embedding run")
    if a1 - half > r and a1 > ak:
        return Outcome(
            ours, "holds", "above random and falling with k (interval: standard error over models); one embedding run"
        )
    return Outcome(ours, "inconclusive", "not clearly above random, or not falling with k; one embedding run")


def judge_encoder_ablation(src: Source) -> Outcome:
    """Encoders comparable: every other encoder within ±1 point of the configured one in routing and correctness
    (routing inconclusive where either router is near-constant)."""
    parts, verdicts = [], []
    for metric, rel in (
        ("routing_acc", "tables/encoder_ablation_routing.csv"),
        ("correctness_acc", "tables/encoder_ablation_correctness.csv"),
    ):
        cells = comparison_cells(src, rel, metric, None, reference=None)
        if not cells:
            return Outcome("–", "untestable", "the encoder ablation has one encoder; list two in ablation.encoders")
        cells = [Cell(c.approach, c.n, -c.diff, -c.high, -c.low, c.n_seeds, c.locus_near_constant) for c in cells]
        out = judge_comparable(cells, [])
        near = metric == "routing_acc" and _near_constant_rows(src.path(rel), metric)
        verdict = "inconclusive" if near and out.verdict == "holds" else out.verdict
        why = "a near-constant router" if near and out.verdict == "holds" else out.reason
        parts.append(f"{metric.split('_')[0]}: {out.ours}")
        verdicts.append((verdict, f"{metric.split('_')[0]}: {why}" if verdict != "holds" else ""))
    return _combine("; ".join(parts), verdicts, "every encoder within ±1 point in both metrics")


def _near_constant_rows(path: Path, metric: str) -> bool:
    rows = report.read_rows(path, ("metric", "benchmark", "near_constant"))
    return any(
        r["metric"] == metric and r["benchmark"] == "Overall" and r["near_constant"] in ("True", "true") for r in rows
    )


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
        return Outcome(ours, "inconclusive", "LOCUS's router is near-constant: its choice is nearly one model; one run")
    if hi / orig < keep or ret <= r_rand:
        return Outcome(ours, "refuted", f"keeps less than {100 * keep:g}% or no more than a random model; one run")
    if lo / orig >= keep and ret >= r_last:
        return Outcome(ours, "holds", f"keeps at least {100 * keep:g}%, more than a random model, less with k; one run")
    return Outcome(
        ours, "inconclusive", f"the interval reaches below {100 * keep:g}%, or it does not fall with k; one run"
    )


def wilson(p: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson interval of a proportion `p` of `n` trials (scipy's binomial test)."""
    from scipy.stats import binomtest

    if n <= 0 or math.isnan(p):
        return math.nan, math.nan
    ci = binomtest(int(round(p * n)), n).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


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


def _points(value: float) -> str:
    return f"{value:g} point" + ("" if value == 1 else "s")


def _number(value) -> float:
    if value in (None, "", "inf"):
        return math.inf if value == "inf" else math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _combine(ours: str, verdicts: list[tuple[str, str]], when_holds: str) -> Outcome:
    kinds = [v for v, _ in verdicts]
    reasons = "; ".join(r for _, r in verdicts if r)
    if "refuted" in kinds:
        return Outcome(ours, "refuted", reasons)
    if all(k == "holds" for k in kinds):
        return Outcome(ours, "holds", when_holds)
    return Outcome(ours, "inconclusive", reasons)


# --------------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------------
EMBEDDERS = ("embedllm", "irt_net")
ALL_METHODS = ("embedllm", "embedllm_plus", "irt_net", "knn_router", "kmeans_router")
AHEAD_RULE = (
    "holds when LOCUS minus each baseline has its 95% paired-bootstrap interval above 0 at every training "
    "size; refuted when one lies below 0; inconclusive otherwise, or where LOCUS's router is near-constant "
    "(one model takes ≥ 90% of queries)"
)
COMPARABLE_RULE = (
    f"holds when every difference's 95% interval lies within ±{_points(EQUIVALENCE_PP)}; refuted when "
    "one lies wholly outside; inconclusive otherwise"
)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "routing-order",
        "LOCUS routes more accurately than EmbedLLM and IRT-Net",
        "tab:concise_routing_correctness",
        "LOCUS − baseline routing accuracy (points), Overall",
        "+3.1/+3.5/+5.1 (EmbedLLM), +2.3/+2.8/+1.3 (IRT-Net) at n = 256/512/1024",
        ("tables/routing.csv",),
        AHEAD_RULE,
        _table_claim("tables/routing.csv", "routing_acc", EMBEDDERS, judge_ahead),
    ),
    Claim(
        "correctness-comparable",
        "All approaches perform comparably on correctness prediction",
        "tab:concise_routing_correctness",
        "LOCUS − baseline correctness accuracy (points), Overall",
        "within 1 point (LOCUS 68.31/68.33/70.03; EmbedLLM 67.33/68.12/69.47; IRT-Net 67.38/69.07/70.12)",
        ("tables/routing.csv",),
        COMPARABLE_RULE,
        _table_claim("tables/routing.csv", "correctness_acc", EMBEDDERS, judge_comparable),
    ),
    Claim(
        "routing-best-embedding",
        "LOCUS has the highest routing accuracy of the model-embedding methods",
        "tab:routing_acc_by_dataset_full",
        "LOCUS − baseline routing accuracy (points), Overall",
        "ahead of EmbedLLM, EmbedLLM+ and IRT-Net at every n",
        ("tables/routing_by_dataset.csv",),
        AHEAD_RULE,
        _table_claim(
            "tables/routing_by_dataset.csv", "routing_acc", ("embedllm", "embedllm_plus", "irt_net"), judge_ahead
        ),
    ),
    Claim(
        "routing-beats-knn",
        "LOCUS beats the kNN router",
        "tab:routing_acc_by_dataset_full",
        "LOCUS − kNN routing accuracy (points), Overall",
        "+1.4/+1.6/+1.8 (kNN 60.50/61.37/62.90)",
        ("tables/routing_by_dataset.csv",),
        AHEAD_RULE,
        _table_claim("tables/routing_by_dataset.csv", "routing_acc", ("knn_router",), judge_ahead),
    ),
    Claim(
        "kmeans-strong",
        "K-Means is a strong routing baseline at some training sizes",
        "tab:routing_acc_by_dataset_full",
        "LOCUS − K-Means routing accuracy (points), Overall",
        "K-Means 64.47/66.20 above LOCUS 62.97/64.70 at n = 512/1024",
        ("tables/routing_by_dataset.csv",),
        "holds when at some size K-Means is the best router or not significantly below the best (not near-constant); "
        "refuted when it is significantly below LOCUS at every size; inconclusive otherwise",
        judge_kmeans_strong,
    ),
    Claim(
        "correctness-similar-all",
        "All approaches perform similarly on correctness prediction",
        "tab:correctness_pred_by_dataset_full",
        "LOCUS − baseline correctness accuracy (points), Overall",
        "similar overall (the paper's kNN at n = 256: 60.60 against LOCUS 68.31)",
        ("tables/correctness_by_dataset.csv",),
        COMPARABLE_RULE,
        _table_claim("tables/correctness_by_dataset.csv", "correctness_acc", ALL_METHODS, judge_comparable),
    ),
    Claim(
        "sample-efficiency",
        "Baselines need 2.3–4.8× LOCUS's training samples",
        "fig:train_sample_eff",
        "training samples a baseline needs for LOCUS's accuracy at the reference size, as a multiple (95% interval)",
        "2.3–4.8×",
        ("figures/train_sample_eff.json",),
        "holds when every baseline's factor is exact with an interval above 1 that meets [2.3, 4.8]; refuted when "
        "an interval lies below 2.3; inconclusive when a factor is only a bound or has no interval",
        judge_sample_efficiency,
    ),
    Claim(
        "distance-disagreement",
        "Embedding distance tracks disagreement in correctness (strong positive relation)",
        "tab:performance_distance_correlation",
        "LOCUS: correlation of pairwise distance and disagreement (95% CI)",
        "Pearson .845/.887, Spearman .886/.876, Kendall .714/.702 (cosine/Euclidean)",
        ("tables/distance_correlation.csv",),
        f"holds when all six intervals lie at or above {STRONG_CORRELATION}; refuted when one lies below it; "
        "inconclusive otherwise",
        judge_correlation,
    ),
    Claim(
        "neighbour-proxies",
        "A model's nearest neighbour agrees with it on correctness (79%), less so further away",
        "fig:nearest_neighbor_proxies",
        "LOCUS: agreement of the k-th nearest neighbour",
        "79% at k = 1",
        ("figures/nearest_neighbor_proxies.csv",),
        "holds when the k = 1 agreement's interval (±1.96 SE over models) lies above a random model's and agreement "
        "falls from k = 1 to the largest k; refuted when k = 1 is at or below random; inconclusive otherwise",
        judge_neighbour_proxies,
    ),
    Claim(
        "saturation",
        "Embeddings from about 128–256 evaluations match the accuracy of larger sets",
        "fig:perf_vs_size_and_overlap",
        "accuracy with every model re-embedded from n evaluations (%)",
        "saturates with 128–256 evaluations",
        ("figures/perf_vs_size_and_overlap.csv",),
        "holds when both accuracies come within 1 point of the run's own embeddings by n = 256; refuted when the "
        "best at n ≤ 256 is more than 2 points short; inconclusive otherwise or for a near-constant router",
        judge_saturation,
    ),
    Claim(
        "overlap-stability",
        "Accuracy is stable across overlap fractions of the evaluation set",
        "fig:perf_vs_size_and_overlap",
        "range of accuracy over overlap fractions (points)",
        "stable",
        ("figures/perf_vs_size_and_overlap.csv",),
        "holds when both accuracies vary by at most 1 point over the overlaps; refuted above 2 points; inconclusive "
        "otherwise or for a near-constant router",
        judge_overlap_stability,
    ),
    Claim(
        "fallback",
        "Falling back to the nearest neighbour keeps up to 85% of routing accuracy",
        "fig:fallback_routing",
        "LOCUS: routing accuracy kept when each chosen model is replaced by its nearest "
        "neighbour (Wilson 95% interval)",
        "up to 85%",
        ("figures/fallback_routing.csv",),
        "holds when the interval's lower end is at least 85%, above a random other model and falling with k; "
        "refuted when its upper end is below 85% or no better than random; inconclusive otherwise or for a "
        "near-constant router",
        judge_fallback,
    ),
    Claim(
        "regeneration",
        "EmbedLLM's re-learned embeddings disagree on test correctness (up to 8.1%); LOCUS's do not",
        "fig:relearn_embedllm_heatmap_test_disagreement",
        "test disagreement of a re-learned embedding with the original, same training data",
        "EmbedLLM up to 8.1%",
        ("figures/relearn_embedllm_heatmap_test_disagreement.csv",),
        "holds when EmbedLLM's largest is at least 1% and LOCUS's at most 0.1%; refuted when EmbedLLM is below 1% or "
        "LOCUS no more stable; inconclusive otherwise",
        judge_regeneration,
    ),
    Claim(
        "time-linear",
        "LOCUS's embedding time is linear in the evaluations per model",
        "fig:time_complexity_locus",
        "log-log slope of the float32 embedding time against n (n ≥ 256)",
        "linear (slope 1)",
        ("figures/time_complexity.csv",),
        "holds when every pool size's slope lies in [0.8, 1.25]; refuted at 1.6 or more; inconclusive otherwise",
        judge_time_complexity,
    ),
    Claim(
        "encoder-ablation",
        "Routing and correctness accuracy are comparable across sentence encoders",
        "app:encoder_ablation",
        "other encoder − the configured one (points), Overall, with 95% interval",
        "comparable (mpnet 61.90, MiniLM 61.60 routing at n = 256)",
        ("tables/encoder_ablation_routing.csv", "tables/encoder_ablation_correctness.csv"),
        COMPARABLE_RULE + " (routing inconclusive for a near-constant router)",
        judge_encoder_ablation,
    ),
)
FILES = tuple(sorted({f for c in CLAIMS for f in c.files}))  # what the `claims` rule reads


def ledger(src: Source) -> pd.DataFrame:
    """One row per claim (:data:`COLUMNS`), its verdict computed from the files under ``src.results``."""
    label = report.dataset_label(src)
    rows = []
    for c in CLAIMS:
        out = c.judge(src)
        rows.append(
            {
                "id": c.id,
                "claim": c.claim,
                "paper_ref": c.paper_ref,
                "statistic": c.statistic,
                "paper_value": c.paper_value,
                "ours": out.ours,
                "dataset": label,
                "verdict": out.verdict,
                "rule": c.rule,
                "reason": out.reason,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(frame: pd.DataFrame) -> str:
    counts = frame["verdict"].value_counts()
    head = ", ".join(f"{counts[v]} {v}" for v in CLAIM_VERDICTS if v in counts)
    lines = [f"Claims of the paper on {frame['dataset'].iloc[0]}: {head}.", ""]
    lines += report.md_table(
        ["claim", "paper", "ours", "verdict", "why"],
        [
            [f"{r.claim} (`{r.paper_ref}`)", r.paper_value, r.ours, f"**{r.verdict}**", f"{r.reason}. Rule: {r.rule}"]
            for r in frame.itertuples()
        ],
    )
    return "\n".join(lines) + "\n"


def latex(frame: pd.DataFrame) -> str:
    from locus.render.latex import wrap

    def esc(text: str) -> str:
        for a, b in (
            ("\\", r"\textbackslash{}"),
            ("&", r"\&"),
            ("%", r"\%"),
            ("$", r"\$"),
            ("#", r"\#"),
            ("_", r"\_"),
            ("{", r"\{"),
            ("}", r"\}"),
            ("~", r"\~{}"),
            ("^", r"\^{}"),
        ):
            text = text.replace(a, b)
        return text.replace("≥", r"$\geq$").replace("±", r"$\pm$").replace("×", r"$\times$").replace("−", "--")

    body = [
        "\\begin{tabular}{p{4.2cm}p{3.2cm}p{5.6cm}l}",
        "\\toprule",
        "Claim & Paper & Ours & Verdict \\\\",
        "\\midrule",
    ]
    body += [
        f"{esc(r.claim)} & {esc(r.paper_value)} & {esc(r.ours)} & {esc(r.verdict)} \\\\" for r in frame.itertuples()
    ]
    body += ["\\bottomrule", "\\end{tabular}"]
    caption = (
        f"The paper's claims on {esc(frame['dataset'].iloc[0])}, each verdict computed from the DAG's outputs by "
        "the rule in claims.csv (one seed: intervals over test queries only)."
    )
    return wrap(body, caption, "tab:claims", wide=True, size="\\scriptsize")


def write(src: Source, out_tex: Path) -> pd.DataFrame:
    """``claims.tex`` with ``claims.csv`` and ``claims.md`` beside it, each written atomically."""
    frame = ledger(src)
    out_tex = Path(out_tex)
    atomic.write_text(out_tex.with_suffix(".csv"), frame.to_csv(index=False))
    atomic.write_text(out_tex.with_suffix(".md"), markdown(frame))
    atomic.write_text(out_tex, latex(frame))
    return frame
