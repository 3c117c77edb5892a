"""The ledger's shared judging rules: what a claim and its outcome are, the margins, and the method comparisons
read from the tables' Overall rows (LOCUS is the bootstrap's reference method): LOCUS ahead of an approach
(:func:`judge_ahead`) or comparable with it (:func:`judge_comparable`), pooled over seeds and seed by seed
(:func:`by_seed`, :func:`combine_seed_verdicts`); and the small helpers every judge uses (:func:`wilson`,
mean intervals, combining verdicts of parts)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from locus.constants import CLAIM_VERDICTS, SEED_SECTIONS
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
# what one seed of each config section of SEED_SECTIONS (Claim.seeds) is
RUNS_OF_SECTION = dict(
    zip(SEED_SECTIONS, ("geometry reference run", "onboarding run", "set of regeneration runs"), strict=True)
)


def one_seed_note(section: str) -> str:
    """What a figure claim judged on one seed of `section`'s runs says (it points to the seed-band run)."""
    return (
        f"one seed: one {RUNS_OF_SECTION[section]}; config/seed-bands.yaml repeats it at 3 seeds "
        f"({section}.extra_seeds) and decides"
    )


def two_seeds_note(section: str) -> str:
    return (
        f"two seeds of the {RUNS_OF_SECTION[section].removeprefix('set of ')}: each is judged, but two are few; "
        "config/seed-bands.yaml (3 seeds) decides"
    )


ONE_GEOMETRY_SEED = one_seed_note("geometry")
TWO_GEOMETRY_SEEDS = two_seeds_note("geometry")


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
    # the config section (SEED_SECTIONS) whose `extra_seeds` write its files again at further seeds
    # (:func:`seed_path`), each seed judged alone (:func:`judge_over_seeds`); "": one run decides
    seeds: str = ""

    @property
    def seeded(self) -> bool:
        return bool(self.seeds)


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


def seed_path(rel: str, seed: int | str) -> str:
    """Where the runs at a further seed (``SECTION.extra_seeds``) write the output `rel` (a path under the results
    directory): ``figures/x.csv`` -> ``figures/seeds/s{seed}/x.csv``."""
    head, _, name = rel.rpartition("/")
    return f"{head}/seeds/s{seed}/{name}" if head else f"seeds/s{seed}/{name}"


@dataclass(frozen=True)
class SeedSource(Source):
    """The outputs of the runs at a further seed: ``path(rel)`` is :func:`seed_path`'s."""

    seed: int = 0

    def path(self, rel: str) -> Path:
        return self.results / seed_path(rel, self.seed)


def judge_over_seeds(
    judge: Callable[[Source], Outcome], src: Source, seeds: Sequence[int] = (), section: str = "geometry"
) -> Outcome:
    """A figure claim judged on each seed of `section`'s runs (:data:`SEED_SECTIONS`) alone, by the same `judge`:
    the first of `seeds` reads ``src``'s own files, each further one its :class:`SeedSource`. A verdict that
    differs between seeds is inconclusive, naming each seed's (:func:`combine_seed_verdicts`); ``ours`` gives
    every seed's own statistic. Fewer than two seeds: the judge's outcome, its reason saying one seed and pointing
    to config/seed-bands.yaml."""
    if len(seeds) < 2:
        out = judge(src)
        return Outcome(out.ours, out.verdict, f"{out.reason}; {one_seed_note(section)}")
    first, *rest = seeds
    outs = {first: judge(src)}
    outs |= {s: judge(SeedSource(src.results, src.dataset, src.others, src.configfile, seed=s)) for s in rest}
    verdict, why = combine_seed_verdicts({s: o.verdict for s, o in outs.items()})
    ours = (
        "–" if all(o.ours == "–" for o in outs.values()) else "; ".join(f"seed {s}: {o.ours}" for s, o in outs.items())
    )
    if len({o.verdict for o in outs.values()}) > 1:
        reason = f"{why} (" + "; ".join(f"seed {s}: {o.reason}" for s, o in outs.items()) + ")"
    else:
        reason = f"{outs[first].reason}; {why}"
    return Outcome(ours, verdict, reason + (f"; {two_seeds_note(section)}" if len(seeds) < MIN_SEEDS else ""))


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


def wilson(p: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson interval of a proportion `p` of `n` trials (scipy's binomial test)."""
    from scipy.stats import binomtest

    if n <= 0 or math.isnan(p):
        return math.nan, math.nan
    ci = binomtest(int(round(p * n)), n).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


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
