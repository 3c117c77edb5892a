"""The claims ledger: the paper's claims, each with a verdict computed from the DAG's output files.

One :class:`Claim` per claim of the paper: its words and value (typed once, here, from the paper), the files that
test it, and a judge — a pure function of those files that gives our statistic with its interval, a verdict
(:data:`locus.constants.CLAIM_VERDICTS`) and the reason. The rule that decides is written in the row, so a
reader can check it. Verdicts test the claim's qualitative form on any pool; the paper's numbers are shown beside
ours as context, since they were measured on another pool unless the pool is the paper's (EmbedLLM).

Every comparison reads the intervals the tables already carry (a paired bootstrap over test queries). With one
seed they cover test-query noise only; the reason says so, and `config/seed-bands.yaml` (three seeds) decides.
With several seeds the tables also compare each seed alone (``seed_diffs_pct``, ``seed_ci_pct``), and the method
comparisons judge every seed by the same rule (:func:`by_seed`): a statement whose verdict differs between seeds
is inconclusive, the reason naming each seed's (:func:`combine_seed_verdicts`), and ``ours`` gives the range of
the seeds' own differences beside the pooled one; the verdict on the means over seeds stands only where every seed
gives it too. With two seeds the reason still points to `config/seed-bands.yaml`. A near-constant router is judged
seed by seed as well: the tables give each seed's top-model share (``seed_top_share_pct``), and each seed's verdict
uses its own seed's flag (:func:`near_constant_of`; tables without the column: the pooled flag for every seed).
Figures without such intervals get one from their own draws (over held-out models, over models, over re-embedding
draws), named in the reason; a statistic with none (portfolios) is judged with a margin.

The pool's plan (:data:`PLAN`, written by the workflow) is read once: a claim reading an output the plan skipped
is untestable with the plan's reason, and sizes the plan fitted to the pool are noted on the claims they shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from locus import atomic
from locus.capacity import PLAN_FILE
from locus.constants import CLAIM_VERDICTS
from locus.errors import DataError
from locus.evaluation import NEAR_CONSTANT_SHARE
from locus.experiments import report
from locus.experiments.report import Source, fmt
from locus.experiments.tables import SEED_SHARE_COLUMN, parse_seed_strings
from locus.render.labels import plain_label

EQUIVALENCE_PP = 1.0  # "comparable" accuracies: the paper's largest gap within a training size is 0.98 points
STRONG_CORRELATION = 0.5  # "strong positive relationship": every interval's lower end at or above this
ONE_SEED = "one seed: the intervals cover test queries only; config/seed-bands.yaml (3 seeds) decides"
TWO_SEEDS = "two seeds: each seed is judged, but two are few; config/seed-bands.yaml (3 seeds) decides"
MIN_SEEDS = 3  # seeds a comparison's verdict needs to stand without a note
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
    diversity there. `per_seed`: each seed's own (seed, difference, low, high), the same way round, where the
    table compares the cell seed by seed (at least two seeds; empty otherwise). `near_seeds`: the seeds whose
    LOCUS router is near-constant, where the table gives each seed's top-model share (None: it does not, and
    every seed takes the pooled flag); `other_near_constant` / `other_near_seeds`: the same of the approach's
    router (the ablations, where either router being near-constant makes a comparison inconclusive)."""

    approach: str
    n: str
    diff: float
    low: float
    high: float
    n_seeds: int
    locus_near_constant: bool
    per_seed: tuple[tuple[int, float, float, float], ...] = ()
    near_seeds: tuple[int, ...] | None = None
    other_near_constant: bool = False
    other_near_seeds: tuple[int, ...] | None = None

    def seeds(self) -> list[int]:
        return [s for s, *_ in self.per_seed]

    def at_seed(self, seed: int) -> "Cell":
        """The cell of one seed alone (its own difference and interval, its own routers' near-constant flags)."""
        _, d, lo, hi = next(p for p in self.per_seed if p[0] == seed)
        near = self.locus_near_constant if self.near_seeds is None else seed in self.near_seeds
        other = self.other_near_constant if self.other_near_seeds is None else seed in self.other_near_seeds
        return Cell(self.approach, self.n, d, lo, hi, 1, near, other_near_constant=other)

    def negated(self) -> "Cell":
        """The approach minus the reference instead (the ablations' other setting minus the configured one)."""
        flipped = tuple((s, -d, -hi, -lo) for s, d, lo, hi in self.per_seed)
        return Cell(
            self.approach,
            self.n,
            -self.diff,
            -self.high,
            -self.low,
            self.n_seeds,
            self.locus_near_constant,
            flipped,
            self.near_seeds,
            self.other_near_constant,
            self.other_near_seeds,
        )

    def flat_seeds(self) -> tuple[int, ...]:
        """The seeds at which either router of the comparison is near-constant (() without per-seed shares)."""
        return tuple(sorted(set(self.near_seeds or ()) | set(self.other_near_seeds or ())))


def _seed_columns(row: dict, diffs: str, cis: str, path: Path) -> dict[int, tuple[float, float, float]]:
    """A table row's per-seed {seed: (difference, low, high)} in points, as the table writes them (columns
    `diffs`, `cis`: :func:`locus.experiments.tables.seed_strings`); {} when the row has none (one seed, or a
    table written before the columns were)."""
    try:
        return parse_seed_strings(row.get(diffs), row.get(cis))
    except ValueError as e:
        raise DataError(f"{path}: columns {diffs}, {cis}: {e}; rebuild the table (locus table)") from None


def near_constant_of(row: dict, path: Path) -> tuple[bool, tuple[int, ...] | None]:
    """(the table's near-constant flag, the seeds whose router is near-constant) of one routing row: the seeds
    from its per-seed top-model shares (:data:`locus.experiments.tables.SEED_SHARE_COLUMN`), None where the table
    has none (one seed, or written before the column was)."""
    pooled = row.get("near_constant", "") in ("True", "true", "1")
    try:
        shares = parse_seed_strings(row.get(SEED_SHARE_COLUMN))
    except ValueError as e:
        raise DataError(f"{path}: column {SEED_SHARE_COLUMN}: {e}; rebuild the table (locus table)") from None
    if not shares:
        return pooled, None
    return pooled, tuple(s for s, (v, _, _) in sorted(shares.items()) if v / 100 >= NEAR_CONSTANT_SHARE)


def _seed_values(row: dict, path: Path) -> tuple[tuple[int, float, float, float], ...]:
    """A table row's per-seed differences to the reference, negated into the reference-minus-approach
    direction of :class:`Cell`."""
    parsed = _seed_columns(row, "seed_diffs_pct", "seed_ci_pct", path)
    return tuple((s, -d, -hi, -lo) for s, (d, lo, hi) in sorted(parsed.items()))


def comparison_cells(
    src: Source, rel: str, metric: str, approaches: tuple[str, ...] | None, reference: str | None = "locus"
) -> list[Cell]:
    """The table's cells for `approaches` (None: every row but the reference's) against the reference (every
    training size): the reference minus each, with each seed's own where the table gives them; a DataError when
    the table's reference is another than `reference` (None: whichever the table names, as the ablations'
    configured setting)."""
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
            near, near_seeds = near_constant_of(locus[n], path)
            other, other_seeds = near_constant_of(row, path)
            seeds = _seed_values(row, path)
            n_seeds = int(float(row["n_seeds"] or 0))
            cells.append(Cell(approach, n, -d, -hi, -lo, n_seeds, near, seeds, near_seeds, other, other_seeds))
    return cells


def _shown(cells: list[Cell]) -> str:
    """Each cell's difference with its interval, and with several seeds the range of the seeds' own differences."""

    def spread(c: Cell) -> str:
        ds = [d for _, d, _, _ in c.per_seed]
        if len(ds) < 2:
            return ""
        return f" (seeds {fmt(min(ds), 1, signed=True)} to {fmt(max(ds), 1, signed=True)})"

    return "; ".join(
        f"{plain_label(c.approach)} n={c.n}: {fmt(c.diff, 1, signed=True)} [{fmt(c.low, 1, signed=True)}, "
        f"{fmt(c.high, 1, signed=True)}]{spread(c)}"
        for c in cells
    )


def seeds_note(n_seeds: int) -> str:
    """The note a comparison over `n_seeds` seeds carries ('' from :data:`MIN_SEEDS` on)."""
    if n_seeds >= MIN_SEEDS:
        return ""
    return f"; {ONE_SEED}" if n_seeds < 2 else f"; {TWO_SEEDS}"


def _seeds_note(cells: list[Cell]) -> str:
    return seeds_note(min(c.n_seeds for c in cells)) if cells else ""


def combine_seed_verdicts(verdicts: dict[int, str]) -> tuple[str, str]:
    """(verdict, reason) of a statement judged on each seed alone ({seed: verdict}): the seeds' verdict when
    they all give the same, else inconclusive, the reason naming each seed's ("differs between seeds: seed 0
    holds, seed 1 refuted"). No seed: inconclusive."""
    unknown = sorted({v for v in verdicts.values() if v not in CLAIM_VERDICTS})
    if unknown:
        raise ValueError(f"not verdicts: {unknown}; one of {', '.join(CLAIM_VERDICTS)}")
    if not verdicts:
        return "inconclusive", "no seed to judge"
    listing = ", ".join(f"seed {s} {v}" for s, v in sorted(verdicts.items()))
    kinds = set(verdicts.values())
    if len(kinds) > 1:
        return "inconclusive", f"differs between seeds: {listing}"
    seeds = ", ".join(str(s) for s in sorted(verdicts))
    return kinds.pop(), f"every seed agrees ({len(verdicts)} seeds: {seeds})"


def by_seed(rule: Callable, pooled, n_seeds: int, seeds: list[int], at_seed: Callable) -> tuple[str, str, int]:
    """(verdict, reason, seeds judged) of a comparison: `rule` (input -> (verdict, reason)) on the means over
    `n_seeds` seeds (`pooled`) and, with two or more, on each of `seeds` alone (``at_seed(seed)``: that seed's
    input). A verdict that differs between seeds is inconclusive (:func:`combine_seed_verdicts`); the pooled
    verdict stands only where every seed gives it too. Several seeds but no per-seed values: a holds or refuted
    cannot be checked, and is inconclusive. The caller adds the note on how many seeds (:func:`seeds_note`)."""
    verdict, reason = rule(pooled)
    if n_seeds < 2:
        return verdict, reason, n_seeds
    if len(seeds) < 2:
        if verdict in ("holds", "refuted"):
            return (
                "inconclusive",
                f"{verdict} on the means over {n_seeds} seeds ({reason}), but the table gives no per-seed "
                "differences to check each seed: rebuild it (locus table) from runs whose seeds match LOCUS's",
                n_seeds,
            )
        return verdict, reason, n_seeds
    each = {s: rule(at_seed(s)) for s in seeds}
    agreed, why = combine_seed_verdicts({s: v for s, (v, _) in each.items()})
    if len({v for v, _ in each.values()}) > 1:
        detail = "; ".join(f"seed {s}: {r}" for s, (v, r) in each.items() if v != verdict)
        return "inconclusive", f"{why} ({detail}); on the means over seeds: {verdict}, {reason}", len(seeds)
    if agreed != verdict:
        return "inconclusive", f"every seed {agreed}, but on the means over seeds {verdict}: {reason}", len(seeds)
    return verdict, f"{reason}; {why}", len(seeds)


def _shared_seeds(cells: list[Cell]) -> list[int]:
    """The seeds every cell is compared on seed by seed ([] when one has none)."""
    if not cells:
        return []
    common = set(cells[0].seeds())
    for c in cells[1:]:
        common &= set(c.seeds())
    return sorted(common)


def _judge_cells(rule: Callable, cells: list[Cell]) -> tuple[str, str, int]:
    """:func:`by_seed` of a rule over cells: pooled, then each seed shared by every cell."""
    n = min((c.n_seeds for c in cells), default=0)
    return by_seed(rule, cells, n, _shared_seeds(cells), lambda s: [c.at_seed(s) for c in cells])


def _ahead(cells: list[Cell]) -> tuple[str, str]:
    """The rule of :func:`judge_ahead` on one set of cells (pooled, or one seed's)."""
    behind = [c for c in cells if c.high < 0]
    flat = {c.n: c.near_seeds for c in cells if c.locus_near_constant}  # pooled cells name the seeds, where known
    if behind:
        return "refuted", f"significantly behind {', '.join(f'{plain_label(c.approach)} at n={c.n}' for c in behind)}"
    if flat:
        where = ", ".join(n + (f" (seed {', '.join(map(str, s))})" if s else "") for n, s in sorted(flat.items()))
        return "inconclusive", f"LOCUS's router is near-constant at n={where}"
    open_ = [c for c in cells if c.low <= 0]
    if open_:
        who = ", ".join(f"{plain_label(c.approach)} at n={c.n}" for c in open_)
        return "inconclusive", f"no significant difference from {who}"
    return "holds", "ahead at every size"


def judge_ahead(cells: list[Cell], missing: list[str]) -> Outcome:
    """LOCUS ahead of every approach at every size: `holds` when every interval of LOCUS minus it lies above 0,
    `refuted` when one lies below 0, `inconclusive` otherwise or where LOCUS's router is near-constant; with
    several seeds, judged on each seed too (:func:`by_seed`)."""
    if missing:
        return Outcome(
            "–", "untestable", f"the tables have no {', '.join(missing)} rows; add the method(s) to the config"
        )
    verdict, reason, n = _judge_cells(_ahead, cells)
    return Outcome(_shown(cells), verdict, reason + (seeds_note(n) if cells else ""))


def _comparable(cells: list[Cell], margin: float = EQUIVALENCE_PP) -> tuple[str, str]:
    """The rule of :func:`judge_comparable` on one set of cells (pooled, or one seed's)."""
    outside = [c for c in cells if c.low > margin or c.high < -margin]
    if outside:
        who = ", ".join(f"{plain_label(c.approach)} at n={c.n}" for c in outside)
        return "refuted", f"differs by more than {_points(margin)} from {who}"
    straddle = [c for c in cells if c.low < -margin or c.high > margin]
    if straddle:
        who = ", ".join(f"{plain_label(c.approach)} at n={c.n}" for c in straddle)
        return "inconclusive", f"intervals reach past ±{margin:g} for {who}"
    return "holds", f"every interval within ±{_points(margin)}"


def judge_comparable(cells: list[Cell], missing: list[str], margin: float = EQUIVALENCE_PP) -> Outcome:
    """Accuracies comparable: `holds` when every interval lies within ±margin, `refuted` when one lies wholly
    outside it, `inconclusive` otherwise; with several seeds, judged on each seed too (:func:`by_seed`)."""
    if missing:
        return Outcome(
            "–", "untestable", f"the tables have no {', '.join(missing)} rows; add the method(s) to the config"
        )
    verdict, reason, n = _judge_cells(lambda cs: _comparable(cs, margin), cells)
    return Outcome(_shown(cells), verdict, reason + (seeds_note(n) if cells else ""))


def _table_claim(rel: str, metric: str, approaches: tuple[str, ...], judge) -> Callable[[Source], Outcome]:
    def run(src: Source) -> Outcome:
        cells = comparison_cells(src, rel, metric, approaches)
        missing = [plain_label(a) for a in approaches if not any(c.approach == a for c in cells)]
        return judge(cells, missing)

    return run


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
# onboarding, families, portfolios, hypothetical recall, convergence
# --------------------------------------------------------------------------------------------------
def _mean_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """The mean of `values` with its t interval (NaN bounds for fewer than two values)."""
    import numpy as np
    from scipy import stats

    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf((1 + confidence) / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return mean, mean - half, mean + half


def _interval(d: float, lo: float, hi: float, decimals: int = 1) -> str:
    return f"{fmt(d, decimals, signed=True)} [{fmt(lo, decimals, signed=True)}, {fmt(hi, decimals, signed=True)}]"


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
    return Outcome(out.ours, out.verdict, f"{out.reason}; one embedding run, {how}")


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
    return Outcome(out.ours, out.verdict, f"{out.reason}; Euclidean distances, one embedding run")


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
    return Outcome(out.ours, out.verdict, f"{out.reason}; Euclidean distances, one embedding run")


# --------------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------------
EMBEDDERS = ("embedllm", "irt_net")
ALL_METHODS = ("embedllm", "embedllm_plus", "irt_net", "knn_router", "kmeans_router")
SEED_RULE = (
    "; with several seeds, each seed is judged alone by the same rule (its own runs, its own paired-bootstrap "
    "intervals): a verdict that differs between seeds is inconclusive, and the verdict on the means over seeds "
    "stands only where every seed gives it too; with fewer than 3 seeds, config/seed-bands.yaml decides"
)
AHEAD_RULE = (
    "holds when LOCUS minus each baseline has its 95% paired-bootstrap interval above 0 at every training "
    "size; refuted when one lies below 0; inconclusive otherwise, or where LOCUS's router is near-constant "
    "(one model takes ≥ 90% of queries)" + SEED_RULE
)
_COMPARABLE = (
    f"holds when every difference's 95% interval lies within ±{_points(EQUIVALENCE_PP)}; refuted when "
    "one lies wholly outside; inconclusive otherwise"
)
COMPARABLE_RULE = _COMPARABLE + SEED_RULE
ABLATION_RULE = _COMPARABLE + " (routing inconclusive for a near-constant router)" + SEED_RULE
KMEANS_RULE = (
    "holds when at some size K-Means is the best router or not significantly below the best (not near-constant); "
    "refuted when it is significantly below LOCUS at every size; inconclusive otherwise" + SEED_RULE
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
        KMEANS_RULE,
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
        "onboarding-128",
        "About 128 evaluations suffice to embed an unseen model",
        "fig:sample_eff_ood_test",
        "held-out models' correctness at the largest k minus at k = 128 (points, t interval over held-out models)",
        "≈128 evaluations suffice (k = 16…1024, 16 held-out models)",
        ("figures/sample_eff_ood_test.csv",),
        "holds when, for every encoder in the figure, the shortfall of k = 128 against the largest k has its "
        "interval's upper end within 1 point (the paper gives no margin; the ledger's 1 point); refuted when one "
        "interval lies wholly above 1 point; inconclusive otherwise",
        judge_onboarding_k,
    ),
    Claim(
        "onboarding-partial",
        "An encoder trained on a subset of the models embeds unseen models as well as one trained on all (< 1% gap)",
        "fig:sample_eff_ood_test",
        "held-out models' correctness, all-models encoder minus partial encoder, per k (points, t interval over "
        "held-out models)",
        "negligible (< 1%) gap",
        ("figures/sample_eff_ood_test.csv",),
        "holds when every k's interval lies within ±1 point (the paper's 1%, read as points); refuted when one "
        "lies wholly outside; inconclusive otherwise",
        judge_onboarding_partial,
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
        "families",
        "Hierarchical clustering of the embeddings separates model families (math, code)",
        "fig:models_family_heirarchical_clustering",
        "per highlighted family: mean distance within / to the other models, with a permutation p",
        "coherent math and code groupings",
        ("figures/models_family_clustering.json",),
        "holds when every highlighted family (≥ 2 models) has ratio < 1 with permutation p below 0.05 divided by "
        "the number of families; refuted when a family's ratio is ≥ 1; inconclusive otherwise",
        judge_families,
    ),
    Claim(
        "portfolio-count",
        "A 15-model portfolio chosen in the embedding space captures the full pool's routing accuracy",
        "fig:model_portfolio_joint",
        "smallest k-center / k-medoids portfolio reaching the full pool's routing accuracy (no interval)",
        "15 of 112 models (15–20 in the appendix)",
        ("figures/model_portfolio.json",),
        "holds when k-center or k-medoids reaches the full pool's accuracy with at most 20/112 of the pool; "
        "refuted when neither comes within 1 point with that many; inconclusive otherwise, or when the best single "
        "model alone routes as well as the pool",
        judge_portfolio_count,
    ),
    Claim(
        "portfolio-budget",
        "A coverage-greedy portfolio of ≈150B parameters comes very close to the full pool's routing accuracy",
        "fig:model_portfolio_joint",
        "smallest coverage-greedy budget within 1 point of the full pool, as a share of its parameters (no interval)",
        "≈150B of 1930B parameters (8%)",
        ("figures/model_portfolio.json",),
        "holds when within 1 point at ≤ 8% of the pool's parameters; refuted above 16% (twice the paper's) or "
        "never; inconclusive in between, or when the best single model alone routes as well as the pool",
        judge_portfolio_budget,
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
        ABLATION_RULE,
        judge_encoder_ablation,
    ),
    Claim(
        "dim-ablation",
        "Routing and correctness accuracy change little with the embedding dimension",
        "app:embedding_dim_ablation",
        "other dimension − the configured one (points), Overall, with 95% interval",
        "routing 60.97–62.13, correctness 67.75–68.42 over d = 16…512 at n = 256 (128/256 called best)",
        ("tables/dim_ablation_routing.csv", "tables/dim_ablation_correctness.csv"),
        ABLATION_RULE,
        judge_dim_ablation,
    ),
    Claim(
        "hypothetical-recall",
        "A model made up from a real model's per-benchmark accuracies is embedded near it (recall@10 almost 97%)",
        "fig:hypothetical_model_embedding",
        "recall@10 at the largest evaluation set (Wilson 95% interval over models)",
        "almost 97% at 8,192 queries",
        ("figures/hypothetical_model_embedding.csv",),
        "holds when the interval reaches 97% with its lower end ≥ 90%; refuted when it is no better than chance "
        "(10 / models) or below 97% with ≥ 8,192 queries; inconclusive otherwise",
        judge_hypothetical,
    ),
    Claim(
        "convergence-overlap",
        "Re-embeddings stay close to the reference embedding compared with other models, closer as the overlap grows",
        "fig:overlap_convergence",
        "‖z − z_ref‖ per overlap α (t interval over draws) against the nearest other model; Spearman ρ over draws",
        "close relative to other models; decays with the overlap",
        ("figures/overlap_convergence.csv",),
        "holds when every α < 1 has its interval below the nearest other model's distance and ρ < 0 with p < 0.05; "
        "refuted when an α's interval lies wholly above that distance or ρ > 0 with p < 0.05; inconclusive otherwise",
        judge_overlap_convergence,
    ),
    Claim(
        "convergence-size",
        "Re-embeddings from fewer evaluations converge to the reference embedding as the number grows",
        "fig:anchor_size_convergence",
        "‖z − z_ref‖ per subsample size n; Spearman ρ of distance against n over draws",
        "a similar trend (decays with n)",
        ("figures/anchor_size_convergence.csv",),
        "holds when ρ < 0 with p < 0.05 (the whole reference set left out); refuted when ρ > 0 with p < 0.05; "
        "inconclusive otherwise",
        judge_size_convergence,
    ),
)
FILES = tuple(sorted({f for c in CLAIMS for f in c.files}))  # what the `claims` rule reads, less what the plan skips


# --------------------------------------------------------------------------------------------------
# the pool's plan: outputs it skipped make their claims untestable; sizes it adapted are noted
# --------------------------------------------------------------------------------------------------
PLAN = PLAN_FILE  # the workflow's plan for the pool
GEOMETRY_FILES = (
    "tables/distance_correlation.csv",
    "figures/nearest_neighbor_proxies.csv",
    "figures/fallback_routing.csv",
    "figures/perf_vs_size_and_overlap.csv",
    "figures/models_family_clustering.json",
    "figures/model_portfolio.json",
    "figures/hypothetical_model_embedding.csv",
    "figures/overlap_convergence.csv",
    "figures/anchor_size_convergence.csv",
)
ADAPTS: dict[str, tuple[str, ...]] = {  # a setting of the plan (fnmatch pattern) -> the files its sizes shape
    "train_sizes": ("tables/routing.csv", "tables/routing_by_dataset.csv", "tables/correctness_by_dataset.csv"),
    "sample_efficiency.train_sizes": ("figures/train_sample_eff.json", "figures/train_sample_eff.csv"),
    "ablation.dim_train_sizes": ("tables/dim_ablation_routing.csv", "tables/dim_ablation_correctness.csv"),
    "ablation.encoder_train_sizes": ("tables/encoder_ablation_routing.csv", "tables/encoder_ablation_correctness.csv"),
    "regeneration.*": ("figures/relearn_embedllm_heatmap_test_disagreement.csv",),
    "onboarding.*": ("figures/sample_eff_ood_test.csv",),
    "geometry.reference_train_size": GEOMETRY_FILES,
    "geometry.views.hypothetical_sizes": ("figures/hypothetical_model_embedding.csv",),
    "geometry.views.sizes": ("figures/anchor_size_convergence.csv",),
    "geometry.views.evalset_sizes": ("figures/perf_vs_size_and_overlap.csv",),
    "geometry.neighbours.max_k": ("figures/nearest_neighbor_proxies.csv", "figures/fallback_routing.csv"),
    "geometry.portfolio.max_k": ("figures/model_portfolio.json",),
}


def plan(src: Source) -> dict | None:
    """The pool's plan under ``src.results`` (:data:`PLAN`), or None for results without one; a DataError when
    it is not of the plan's shape."""
    path = src.path(PLAN)
    if not path.is_file():
        return None
    found = report.read_json(src, PLAN, ("adapted", "skipped"))
    ok = isinstance(found["adapted"], list) and isinstance(found["skipped"], list)
    ok = ok and all(isinstance(s, dict) and isinstance(s.get("outputs"), list) and "why" in s for s in found["skipped"])
    ok = ok and all(isinstance(a, dict) and {"setting", "asked", "used"} <= set(a) for a in found["adapted"])
    if not ok:
        raise DataError(f"{path}: adapted or skipped is not of the plan's shape; rebuild it (snakemake --cores 2)")
    return found


def _skipped(the_plan: dict | None, rel: str) -> str | None:
    return next((s["why"] for s in (the_plan or {}).get("skipped", []) if rel in s["outputs"]), None)


def skipped_reason(src: Source, rel: str) -> str | None:
    """Why the pool's plan left `rel` (a path under the results directory) out, or None when it did not."""
    return _skipped(plan(src), rel)


def adaptation_note(the_plan: dict | None, files: tuple[str, ...]) -> str:
    """ "sizes adapted to the pool: SETTING ASKED→USED, ..." for the plan's settings that shape `files` ('' when
    none does); settings :data:`ADAPTS` does not name shape nothing."""
    import fnmatch

    def change(a: dict) -> str:
        asked, used = (v if isinstance(v, list) else [v] for v in (a["asked"], a["used"]))
        if len(asked) == len(used):
            return ", ".join(f"{x}→{y}" for x, y in zip(asked, used) if x != y)
        return f"{', '.join(map(str, asked))}→{', '.join(map(str, used))}"

    parts = [
        f"{a['setting']} {change(a)}"
        for a in (the_plan or {}).get("adapted", [])
        if any(fnmatch.fnmatchcase(a["setting"], pat) and set(fs) & set(files) for pat, fs in ADAPTS.items())
    ]
    return f"sizes adapted to the pool: {', '.join(parts)}" if parts else ""


def judged(claim: Claim, src: Source, the_plan: dict | None) -> Outcome:
    """The claim's outcome: untestable, with the plan's reason, when the plan skipped a file it reads; a
    DataError naming a file that is missing otherwise; else its judge's, noting the sizes the plan adapted."""
    whys = report.unique(why for f in claim.files if (why := _skipped(the_plan, f)))
    if whys:
        return Outcome("–", "untestable", "; ".join(whys))
    for rel in claim.files:
        path = src.path(rel)
        if not path.is_file():
            raise DataError(
                f"{path}: not found; build it first (snakemake --cores 2 {report._target(path)}) or point "
                "--results at a finished run"
            )
    out = claim.judge(src)
    note = adaptation_note(the_plan, claim.files)
    return Outcome(out.ours, out.verdict, f"{out.reason}; {note}") if note else out


def ledger(src: Source) -> pd.DataFrame:
    """One row per claim (:data:`COLUMNS`), its verdict computed from the files under ``src.results`` (untestable
    where the pool's plan skipped a file the claim reads: :func:`judged`)."""
    label = report.dataset_label(src)
    the_plan = plan(src)
    rows = []
    for c in CLAIMS:
        out = judged(c, src, the_plan)
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
        symbols = {"≥": r"$\geq$", "≤": r"$\leq$", "≈": r"$\approx$", "±": r"$\pm$", "×": r"$\times$"}
        symbols |= {"α": r"$\alpha$", "ρ": r"$\rho$", "→": r"$\to$", "‖": r"$\|$", "…": r"\ldots{}"}
        for a, b in symbols.items():  # outside what pdflatex's utf8 reads
            text = text.replace(a, b)
        return text.replace("−", "--")

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
        "the rule in claims.csv, whose reasons say what each interval covers (one seed: method comparisons cover "
        "test queries only; several seeds: each seed is judged too, and a verdict that differs between seeds is "
        "inconclusive)."
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
