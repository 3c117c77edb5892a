r"""Comparison tables from runs' ``metrics.json`` (``locus table KIND``): which metric each kind shows, its
caption, its layout and the LaTeX + CSV written (cells formatted by :mod:`locus.render.latex`).

Kinds (paper layouts): ``routing`` (``tab:concise_routing_correctness``; rows = methods + Oracle / Best
single / Random, columns = routing then correctness accuracy at each training size: :func:`routing_table`);
``routing-by-dataset`` / ``correctness-by-dataset`` (appendix B; rows = approach × training size, columns =
Overall + benchmarks: :func:`by_dataset_table`, also the layout of :mod:`locus.experiments.ablation`).

Every comparison carries a paired bootstrap over test queries (:func:`significance`): a dagger marks a cell
not significantly below the best of its column; a routing cell is bold / underlined only when also
significantly above the best single model chosen on validation (:func:`cell_emphasis`); reference rows are
never emphasised. Benchmark columns (the by-dataset layouts) decide those marks on bootstrap p-values with
Holm's correction over the benchmark columns of one row (:func:`holm`), and mark nothing in a benchmark of
fewer than :data:`MIN_BENCHMARK_QUERIES` test queries. A near-constant router (most test queries to one
model; with several seeds, in any seed) is not ranked: its cells read "inconclusive (near-constant)"
(:data:`INCONCLUSIVE`). Every routing table prints each router's top-model share. The CSV beside the .tex
holds every printed number (columns: :func:`_frame`), and with several seeds each seed's own difference to the
reference and its interval (:func:`seed_differences`) and top-model share (:data:`SEED_SHARE_COLUMN`). With a
generated data set's truth (``--truth``, routing kinds) the tables add the expected routing accuracy, the
Bayes ceiling and the best single model chosen on the training split's true probabilities
(:mod:`locus.experiments.expected`). Captions name the data set by the label given, else the runs' one.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from locus.constants import TABLE_KINDS
from locus.errors import DataError
from locus.evaluation import NEAR_CONSTANT_SHARE
from locus.experiments import bootstrap, expected
from locus.experiments.bootstrap import EXPECTED
from locus.experiments.comparison import OVERALL, Collection, QueryValues, collect, query_values
from locus.outputs import check_outputs
from locus.render import labels, write_csv
from locus.render.labels import display_benchmark, escape
from locus.render.latex import MARK, NEAR_CONSTANT_MARK, emphasis, fmt, method_label, wrap

KINDS = TABLE_KINDS
LABELS = {
    "routing": "tab:concise_routing_correctness",
    "routing-by-dataset": "tab:routing_acc_by_dataset_full",
    "correctness-by-dataset": "tab:correctness_pred_by_dataset_full",
}
METRIC = {"routing": "routing_acc", "routing-by-dataset": "routing_acc", "correctness-by-dataset": "correctness_acc"}
WHAT = {
    "routing": "Overall routing and correctness prediction accuracy (\\%)",
    "routing-by-dataset": "Overall and per-benchmark routing accuracy (\\%)",
    "correctness-by-dataset": "Overall and per-benchmark correctness prediction accuracy (\\%)",
}

# the layouts' row and column labels, and the columns of the CSV beside each table (:func:`_frame`)
REFERENCE_LABELS = {"oracle": "Oracle", "best_single": "Best single model (chosen on val)", "random": "Random"}
METRIC_LABELS = {"routing_acc": "Routing Accuracy (\\%)", "correctness_acc": "Corr. Pred Acc (\\%)"}
EXPECTED_HEADING = "Expected routing accuracy (\\%): true $p$ of the routed model"
SHARE_HEADING = "Top-model share (\\%): test queries sent to the router's most-chosen model"
TRUTH_REFERENCE_LABELS = {
    "bayes_ceiling": "Bayes ceiling (max true $p$)",
    "best_single_train": "Best single model (chosen on train)",
}
TRUTH_REFERENCE_PLAIN = {
    "bayes_ceiling": "Bayes ceiling (max true p)",
    "best_single_train": "Best single model (chosen on train, true p)",
}
ROUTED = ("routing_acc", EXPECTED)  # metrics of the routed model: diversity and the best-single rule apply
DIVERSITY_COLUMNS = ["top_model", "top_model_share", "n_models_used", "choice_entropy", "near_constant"]
# a benchmark column marks nothing (bold, underline, dagger) below this many test queries: there one query
# moves the accuracy by more than 3 points, and a bootstrap over so few queries understates the uncertainty
MIN_BENCHMARK_QUERIES = 30
# how each method cell was compared (CSV ``comparison_status``)
RANKED = "ranked"
INCONCLUSIVE = "inconclusive (near-constant)"  # a near-constant router: not ranked, no mark
UNMARKED = f"unmarked (fewer than {MIN_BENCHMARK_QUERIES} test queries)"  # a small benchmark column
P_COLUMNS = ["p_vs_best", "p_vs_best_holm", "p_vs_best_single", "p_vs_best_single_holm"]
# each seed's own comparisons of a cell sharing at least two seeds with the other method (CSV, points): this approach
# minus the reference, and the column's best minus this approach, each seed's difference and its own paired
# bootstrap interval over the same test queries (:func:`seed_differences`, written by :func:`seed_strings`)
SEED_COLUMNS = ["seed_diffs_pct", "seed_ci_pct", "seed_best_diffs_pct", "seed_best_ci_pct"]
# each seed's top-model share (%) of a routing cell's router, "0:92.2403;1:85.0100" (:func:`share_strings`): a cell
# is near-constant when any seed's router is. Written only by tables with a cell of two or more seeds, so that a
# one-seed table keeps its columns (its only seed's share is ``top_model_share``)
SEED_SHARE_COLUMN = "seed_top_share_pct"
SIGNIFICANCE_COLUMNS = (
    [
        "method",
        "metric",
        "train_size",
        "benchmark",
        "reference",
        "diff_to_reference",
        "ci_low",
        "ci_high",
        "best",
        "diff_to_best",
        "best_ci_low",
        "best_ci_high",
        "not_significant_vs_best",
        "diff_to_best_single",
        "best_single_ci_low",
        "best_single_ci_high",
        "beats_best_single",
        "n_queries",
        "n_boot",
        "confidence",
    ]
    + DIVERSITY_COLUMNS
    + P_COLUMNS
    + ["comparison_status", "seed_diffs", "seed_best_diffs"]  # {seed: (diff, low, high)}, fractions
    + ["seed_top_share"]  # {seed: top-model share}, fractions (routing metrics)
)
_BOOT_PCT = {
    "diff_to_reference": "diff_to_reference_pct",
    "ci_low": "ci_low_pct",
    "ci_high": "ci_high_pct",
    "diff_to_best": "diff_to_best_pct",
    "best_ci_low": "best_ci_low_pct",
    "best_ci_high": "best_ci_high_pct",
    "diff_to_best_single": "diff_to_best_single_pct",
    "best_single_ci_low": "best_single_ci_low_pct",
    "best_single_ci_high": "best_single_ci_high_pct",
}
# the CSV's names of the bootstrap columns: SIGNIFICANCE_COLUMNS after the cell's key, differences in points
BOOT_COLUMNS = [
    _BOOT_PCT.get(c, c)
    for c in SIGNIFICANCE_COLUMNS[4:]
    if c not in ("seed_diffs", "seed_best_diffs", "seed_top_share")
] + SEED_COLUMNS
CSV_COLUMNS = [
    "approach",
    "label",
    "kind",
    "metric",
    "train_size",
    "benchmark",
    "mean_pct",
    "std_pct",
    "n_seeds",
    "emphasis",
] + BOOT_COLUMNS


# the training sizes of the paper's routing and correctness tables (tab:concise_routing_correctness and the
# by-benchmark tables of its appendix; config/paper.yaml runs exactly these); its tables give one value
# per cell and state no number of seeds (config/paper.yaml runs 3)
PAPER_TRAIN_SIZES = (256, 512, 1024)
PAPER_SEEDS = (0, 1, 2)


def grid_sentence(sizes, seeds) -> str:
    """The caption's statement of the grid that ran (training `sizes`, `seeds` of the runs read) against the
    paper's (:data:`PAPER_TRAIN_SIZES`; LaTeX)."""
    sizes = sorted({int(n) for n in sizes})
    seeds = sorted({int(s) for s in seeds})
    inside = [n for n in sizes if n in PAPER_TRAIN_SIZES]
    extra = len(sizes) - len(inside)
    text = (
        f"Grid run: $n$ $\\in$ \\{{{', '.join(map(str, sizes))}\\}} training evaluations per model, "
        f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))}): {len(inside)} of the "
        f"paper's {len(PAPER_TRAIN_SIZES)} training sizes \\{{{', '.join(map(str, PAPER_TRAIN_SIZES))}\\}}"
        + (f" and {extra} outside them" if extra else "")
        + f"; the paper's tables state no number of seeds (config/paper.yaml runs {len(PAPER_SEEDS)})"
    )
    if len(inside) < len(PAPER_TRAIN_SIZES) or len(seeds) < len(PAPER_SEEDS):
        text += "; the paper's grid: \\texttt{--configfile config/paper.yaml}"
    return text + "."


def seeds_sentence(seeds: tuple[int, int]) -> str:
    """How many seeds each cell averages, from (fewest, most)."""
    lo, hi = seeds
    if lo != hi:
        return f"Mean{{\\scriptsize$\\pm$}}std over {lo}--{hi} seeds."
    return f"Mean{{\\scriptsize$\\pm$}}std over {hi} seeds." if hi > 1 else "One seed per cell."


def bootstrap_sentence(
    kind: str,
    settings: bootstrap.Settings,
    reference: str,
    n_queries: int,
    split: str = "test",
    reference_label: str | None = None,
) -> str:
    """What the dagger marks and where the intervals are (LaTeX); the reference is named by
    `reference_label` (LaTeX) when given, else by the method's label. By-dataset layouts decide the dagger
    of benchmark columns on Holm-adjusted p-values (:func:`benchmark_sentence`)."""
    level = f"{100 * settings.confidence:g}\\%"
    how = f"{settings.n_resamples} resamples, seed {settings.seed}, percentile"
    if kind == "routing":
        where, queries, rule = "its column", f"the {n_queries} {split} queries ({how})", ""
    else:
        where = "its column at the same training size"
        queries = f"the {split} queries (all {n_queries} for Overall, the benchmark's own in its column; {how})"
        rule = " (Overall; benchmark columns: Holm-adjusted p-values, below)"
    return (
        f"{MARK}: not significantly different from the best approach of {where}: the paired bootstrap "
        f"{level} interval of (best $-$ value) over {queries} includes 0{rule}. The CSV gives every approach's "
        f"difference to {reference_label or method_label(reference)} with its {level} paired bootstrap interval."
    )


def small_benchmarks(sig: pd.DataFrame | None) -> list[str]:
    """The benchmark columns of fewer than :data:`MIN_BENCHMARK_QUERIES` test queries (no marks there)."""
    if sig is None or sig.empty:
        return []
    bench = sig[sig["benchmark"] != OVERALL]
    counts = bench.groupby("benchmark", sort=False)["n_queries"].max()
    return [b for b, n in counts.items() if n < MIN_BENCHMARK_QUERIES]


def benchmark_sentence(sig: pd.DataFrame | None, settings: bootstrap.Settings, routed: bool) -> str:
    """The caption's rule for the marks of benchmark columns (by-dataset layouts; LaTeX): Holm's correction
    and its family, and the minimum number of test queries; empty without bootstrap comparisons."""
    if sig is None or sig.empty:
        return ""
    alpha = f"{1 - settings.confidence:.2g}"
    tests = (
        "the dagger's test against the column's best and the bold / underline's test against the best single model"
        if routed
        else "the dagger's test against the column's best"
    )
    small = small_benchmarks(sig)
    named = ", ".join(escape(display_benchmark(b)) for b in small) if small else "none here"
    return (
        f"Benchmark columns (multiple comparisons): {tests} use the two-sided paired bootstrap p-value (same "
        f"resamples), with Holm's correction over one family per row and test: the benchmark columns of one "
        f"approach at one training size (Overall excluded); significant: adjusted $p < {alpha}$ (CSV "
        f"\\texttt{{p\\_vs\\_best\\_holm}}, \\texttt{{p\\_vs\\_best\\_single\\_holm}}; the CSV's intervals "
        f"are unadjusted). A benchmark of fewer than {MIN_BENCHMARK_QUERIES} test queries (counts under the header; "
        f"{named}) marks no cell: no bold, underline or dagger."
    )


def routing_sentences(sig: pd.DataFrame | None, settings: bootstrap.Settings, label_of, layout: str = "routing") -> str:
    """The caption's rule for bold routing cells, the near-constant mark and the top-model share (LaTeX),
    naming the marked cells (`label_of`: row key -> LaTeX label); `layout`: "routing" (the share in a block
    of rows) or a by-dataset one (a column); empty without bootstrap comparisons."""
    if sig is None or sig.empty:
        return ""
    level = f"{100 * settings.confidence:g}\\%"
    share = f"{100 * NEAR_CONSTANT_SHARE:g}\\%"
    routed = sig[(sig["metric"] == "routing_acc") & (sig["benchmark"] == OVERALL)]
    flagged = routed[routed["near_constant"].eq(True)]

    def size(cell) -> str:  # with several seeds, the seeds whose router is near-constant
        seeds = near_constant_seeds(cell)
        return f"{int(cell['train_size'])}" + (f" (seed {', '.join(map(str, seeds))})" if seeds else "")

    where = "; ".join(
        f"{label_of(m)} at $n$ = {', '.join(size(c) for c in g.to_dict('records'))}"
        for m, g in flagged.groupby("method", sort=False)
    )
    per_seed = any(isinstance(v, dict) and len(v) > 1 for v in routed.get("seed_top_share", pd.Series(dtype=object)))
    if not where:  # say how close the most concentrated router comes
        top = routed.dropna(subset=["top_model_share"])
        top = top.loc[top["top_model_share"].idxmax()] if len(top) else None
        where = "none here" + (
            f"; highest share: {100 * top['top_model_share']:.1f}\\%, {label_of(top['method'])} at "
            f"$n$ = {int(top['train_size'])}"
            if top is not None
            else ""
        )
    if layout == "routing":
        shown, replaced = "the block \\textit{Top-model share}", ""
    else:
        shown = "the column \\textit{Top model (\\%)}"
        replaced = "; its row's benchmark cells are replaced by that verdict"
    return (
        f"Routing cells are \\textbf{{bold}} (best) or \\underline{{underlined}} (second) only when also "
        f"significantly above the best single model chosen on validation (a router like any other: the paired "
        f"bootstrap {level} interval of (cell $-$ best single) lies above 0; CSV "
        f"\\texttt{{diff\\_to\\_best\\_single\\_pct}}). Top-model share: the share (\\%) of the test queries "
        f"each router sends to its most-chosen model ({shown}; CSV \\texttt{{top\\_model\\_share}}). "
        f"{NEAR_CONSTANT_MARK}: near-constant router, sending at least {share} of the test queries to one model "
        f"({where}): inconclusive (near-constant), not ranked (no bold, underline or dagger; the column's "
        f"best is chosen among the other routers){replaced} (CSV \\texttt{{comparison\\_status}}); the CSV gives "
        f"each cell's most-chosen model, the number of models it uses and the normalised entropy of its choices."
        + (
            f" With several seeds the share is the mean over seeds, and a router is near-constant when any seed's "
            f"reaches {share} (CSV \\texttt{{seed\\_top\\_share\\_pct}}: each seed's share; the claims ledger "
            f"judges each seed with its own seed's flag)."
            if per_seed
            else ""
        )
    )


def caption(
    kind: str,
    data_label: str,
    encoder: str,
    split: str,
    seeds: tuple[int, int],
    settings: bootstrap.Settings | None = None,
    reference: str | None = None,
    n_queries: int = 0,
    truth_refs: pd.DataFrame | None = None,
    sig: pd.DataFrame | None = None,
    grid: str = "",
) -> str:
    """The table caption (LaTeX); `data_label` and `encoder` are plain text (escaped here). With the
    bootstrap `settings` (and the `reference` method) it explains the dagger and the intervals; with the
    truth references (:func:`locus.experiments.expected.references`) the expected rows; with the
    comparisons `sig` of a routing kind the bold rule and the near-constant routers
    (:func:`routing_sentences`); `grid`: the grid sentence (:func:`grid_sentence`), after the seeds."""
    emph = (
        "\\textbf{Best} and \\underline{second best} approach in each column"
        if kind == "routing"
        else "\\textbf{Best} and \\underline{second best} approach per training size"
    )
    refs = " (reference rows excluded)" if kind != "correctness-by-dataset" else ""
    text = (
        f"{WHAT[kind]} on the {split} split of the data set {escape(data_label)} (query encoder: "
        f"{escape(encoder)}), by approach and number of training evaluations per model. {emph}{refs}. "
        f"{seeds_sentence(seeds)}" + (f" {grid}" if grid else "")
    )
    if settings is not None:
        text += " " + bootstrap_sentence(kind, settings, reference or "locus", n_queries, split)
        if kind != "routing":
            text += " " + benchmark_sentence(sig, settings, METRIC[kind] == "routing_acc")
        if METRIC[kind] == "routing_acc":
            text += " " + routing_sentences(sig, settings, method_label, kind)
    if truth_refs is not None:
        text += " " + expected.caption_sentence(truth_refs, split)
    return text


def columns(kind: str, coll: Collection) -> list[tuple[str, int, str]]:
    """The compared columns of a table kind: (metric, train_size, benchmark) groups whose approaches are
    ranked against each other (bold / underline / dagger)."""
    metrics = ["routing_acc", "correctness_acc"] if kind == "routing" else [METRIC[kind]]
    if METRIC[kind] == "routing_acc" and (coll.method_agg["metric"] == EXPECTED).any():
        metrics.append(EXPECTED)  # the expected routing accuracy (data sets with truth)
    if kind == "routing":
        return [(m, s, OVERALL) for m in metrics for s in coll.sizes]
    return [
        (m, s, b) for m in metrics for s in coll.sizes for b in [OVERALL] + [b for b in coll.benchmarks if b != OVERALL]
    ]


def check_reference(coll: Collection, reference: str) -> None:
    """The reference method of the bootstrap differences must be one of the table's methods."""
    if reference not in coll.methods:
        raise DataError(
            f"reference method {reference!r} is not among the table's methods "
            f"({', '.join(coll.methods)}); choose one of them with --reference-method (config: "
            f"bootstrap.reference_method) or add its runs"
        )


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family: with the m p-values sorted ascending, the i-th
    (from 1) becomes max over j <= i of min(1, (m - j + 1) p_(j)); rejecting where the adjusted value is below
    alpha controls the family-wise error rate at alpha. NaN entries are no member of the family (m counts the
    others) and stay NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    members = np.flatnonzero(~np.isnan(p))
    order = members[np.argsort(p[members], kind="stable")]
    m = len(order)
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out


def paired_p_values(num, den, pairs, settings: bootstrap.Settings) -> np.ndarray:
    """Two-sided paired bootstrap p-value of acc(a) - acc(b) for each (a, b) in `pairs` (rows of `num` /
    `den`, as :func:`locus.experiments.bootstrap.paired_differences`): 2 min(P*(d <= 0), P*(d >= 0)), capped
    at 1, over ``settings.n_resamples`` resamples of the queries, drawn as the intervals' (generator seeded
    with ``settings.seed``, same batches), so that p < 1 - confidence where the percentile interval excludes
    0. NaN with fewer than two labelled queries; resamples without a value are left out."""
    num = np.atleast_2d(np.asarray(num, dtype=np.float64))
    den = np.atleast_2d(np.asarray(den, dtype=np.float64))
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    keep = (den > 0).any(axis=0)
    num, den = num[:, keep], den[:, keep]
    n = int(keep.sum())
    if n < 2 or not len(pairs):
        return np.full(len(pairs), np.nan)
    a, b = pairs[:, 0], pairs[:, 1]
    rng = np.random.default_rng(settings.seed)
    total = int(settings.n_resamples)
    batch = max(1, bootstrap._MAX_ELEMENTS // (num.size or 1))
    below, above, valid = (np.zeros(len(pairs)) for _ in range(3))
    for start in range(0, total, batch):
        idx = rng.integers(0, n, size=(min(batch, total - start), n))
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios = num[:, idx].sum(axis=-1) / den[:, idx].sum(axis=-1)  # [methods x resamples]
        d = ratios[a] - ratios[b]
        finite = np.isfinite(d)
        below += (finite & (d <= 0)).sum(axis=1)
        above += (finite & (d >= 0)).sum(axis=1)
        valid += finite.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.minimum(1.0, 2 * np.minimum(below, above) / valid)


def _status(metric: str, bench: str, near_constant: bool, n_queries: int) -> str:
    """How a method cell is compared (:data:`RANKED`, :data:`INCONCLUSIVE`, :data:`UNMARKED`)."""
    if metric in ROUTED and near_constant:
        return INCONCLUSIVE
    if bench != OVERALL and n_queries < MIN_BENCHMARK_QUERIES:
        return UNMARKED
    return RANKED


def significance(
    kind: str, coll: Collection, values: QueryValues, settings: bootstrap.Settings, reference: str = "locus"
) -> pd.DataFrame:
    """Per method cell of the table: the paired bootstrap difference to `reference` and to the best
    approach of its column (fractions), and whether (best - cell) is not significant.

    The best approach is the one printed in bold (ranked on the printed means, :func:`emphasis`;
    the first of tied ones) among the ranked routers: a near-constant router (routing metrics) is not ranked
    (``comparison_status`` :data:`INCONCLUSIVE`: no best, no dagger, no bold); a cell sharing the best printed
    mean is never marked.

    Uncertainty of every comparison (:func:`significance`): with several seeds a cell shows mean ± std over
    seeds; always, the runs' per-query test scores and the data set's labels give a paired bootstrap over
    test queries (:mod:`locus.experiments.bootstrap`) of each approach's difference to the reference method
    (LOCUS by default; CSV ``diff_to_reference_pct``, ``ci_low_pct``, ``ci_high_pct``) and of the difference
    between the best approach of each compared column and every other approach: a cell whose interval of
    (best - cell) includes 0 is marked with a dagger (:data:`locus.render.latex.MARK`).

    For the routing metrics the best single model chosen on validation is resampled too, as one more router
    (:attr:`QueryValues.best_single`): every cell's difference to it with its interval
    (``diff_to_best_single``, ``best_single_ci_low``, ``best_single_ci_high``) and ``beats_best_single``
    (the interval lies above 0; the condition for bold / underline, :func:`cell_emphasis`),
    and the cell's routing diversity (:data:`locus.render.DIVERSITY_COLUMNS`).

    Benchmark columns (by-dataset kinds) decide both tests on two-sided bootstrap p-values
    (:func:`paired_p_values`; ``p_vs_best``, ``p_vs_best_single``) with Holm's correction (:func:`holm`;
    ``*_holm``) over each family of the benchmark columns of one (method, metric, training size), and mark
    nothing in a benchmark of fewer than :data:`MIN_BENCHMARK_QUERIES` test queries (:data:`UNMARKED`).
    ``not_significant_vs_best`` is the decision behind the dagger (False for a cell that is not ranked);
    ``beats_best_single`` stays the unadjusted interval's verdict, the bold's decision being
    :func:`above_best_single`.

    With several seeds, each seed is also compared on its own (:func:`seed_differences`; ``seed_diffs``,
    ``seed_best_diffs``): a difference that holds for the mean over seeds but changes sign between seeds is
    then visible (the claims ledger judges each seed separately: :mod:`locus.experiments.claims`)."""
    check_reference(coll, reference)
    agg = coll.method_agg
    div = values.diversity
    rows = []
    for metric, size, bench in columns(kind, coll):
        sel = agg[(agg["metric"] == metric) & (agg["train_size"] == size) & (agg["benchmark"] == bench)]
        mean = dict(zip(sel["method"], sel["mean"]))
        near = {m: metric in ROUTED and bool(div.get((m, size), {}).get("near_constant")) for m in coll.methods}
        ranked = [math.nan if near[m] else mean.get(m, math.nan) for m in coll.methods]
        emph = dict(zip(coll.methods, emphasis(ranked)))
        best = next((m for m in coll.methods if emph[m] == "best"), None)
        present, num, den = values.column(coll.methods, size, metric, bench)
        index = {m: i for i, m in enumerate(present)}
        single = values.best_single_column(size, metric, bench)
        if single is not None:  # the best single model on validation: one more router in the resample
            num, den = np.vstack([num, single[0]]), np.vstack([den, single[1]])
        pairs = [(index[m], index[reference]) for m in present if reference in index]
        pairs += [(index[best], index[m]) for m in present if best in index]
        pairs += [(index[m], len(present)) for m in present if single is not None]
        res = bootstrap.paired_differences(num, den, pairs, settings)
        seed_ref, seed_best = seed_differences(
            values,
            present,
            reference if reference in index else None,
            best if best in index else None,
            size,
            metric,
            bench,
            settings,
        )
        p = paired_p_values(num, den, pairs, settings) if bench != OVERALL else np.full(len(pairs), np.nan)
        n_ref = len(present) if reference in index else 0
        n_best = len(present) if best in index else 0
        vs_best = res.includes_zero()
        for i, m in enumerate(present):
            to_ref = (res.diff[i], res.low[i], res.high[i]) if n_ref else (math.nan,) * 3
            j = n_ref + i
            to_best = (res.diff[j], res.low[j], res.high[j]) if best in index else (math.nan,) * 3
            k = n_ref + n_best + i
            to_single = (res.diff[k], res.low[k], res.high[k]) if single is not None else (math.nan,) * 3
            d = div.get((m, size), {}) if metric in ROUTED else {}
            status = _status(metric, bench, near[m], res.n_queries)
            rows.append(
                {
                    "method": m,
                    "metric": metric,
                    "train_size": size,
                    "benchmark": bench,
                    "reference": reference,
                    "diff_to_reference": to_ref[0],
                    "ci_low": to_ref[1],
                    "ci_high": to_ref[2],
                    "best": best if best in index else None,
                    "diff_to_best": to_best[0],
                    "best_ci_low": to_best[1],
                    "best_ci_high": to_best[2],
                    "not_significant_vs_best": bool(
                        status == RANKED and best in index and emph[m] != "best" and vs_best[j]
                    ),
                    "diff_to_best_single": to_single[0],
                    "best_single_ci_low": to_single[1],
                    "best_single_ci_high": to_single[2],
                    "beats_best_single": bool(single is not None and to_single[1] > 0),
                    **{c: d.get(c) for c in DIVERSITY_COLUMNS},
                    "p_vs_best": p[j] if best in index and emph[m] != "best" else math.nan,
                    "p_vs_best_holm": math.nan,
                    "p_vs_best_single": p[k] if single is not None else math.nan,
                    "p_vs_best_single_holm": math.nan,
                    "comparison_status": status,
                    "seed_diffs": seed_ref.get(m, {}),
                    "seed_best_diffs": seed_best.get(m, {}),
                    "seed_top_share": d.get("seed_top_share") or {},
                    "n_queries": res.n_queries,
                    "n_boot": res.n_resamples,
                    "confidence": res.confidence,
                }
            )
    return _benchmark_decisions(pd.DataFrame(rows, columns=SIGNIFICANCE_COLUMNS), settings)


def seed_differences(
    values: QueryValues,
    methods,
    reference: str | None,
    best: str | None,
    size: int,
    metric: str,
    bench: str,
    settings: bootstrap.Settings,
) -> tuple[dict, dict]:
    """Each seed's own comparisons in one table column: ({method: {seed: (diff, low, high)}} of method minus
    `reference`, {method: {seed: (diff, low, high)}} of `best` minus method; fractions), each seed's run
    against the same seed's run of the other method, with its paired bootstrap interval over the column's test
    queries (:func:`locus.experiments.bootstrap.paired_differences`, one resampling for all seeds and methods).
    `best` is the column's best on the means over seeds (:func:`significance`). A method is compared only on the
    seeds it shares with the other method, and only when they are at least two; both dicts are empty when no
    method is (every single-seed table), so such tables cost no more resampling."""
    seeds = {m: set(values.seeds(m, size)) for m in dict.fromkeys([*methods, reference, best]) if m is not None}
    wanted = []  # (to, method, seeds)
    for to, other in (("reference", reference), ("best", best)):
        if other is None:
            continue
        for m in methods:
            shared = sorted(seeds[m] & seeds[other])
            if len(shared) >= 2:
                wanted.append((to, m, shared))
    if not wanted:
        return {}, {}
    index, num, den = {}, [], []

    def row(m: str, seed: int) -> int:
        if (m, seed) not in index:
            index[(m, seed)] = len(num)
            n, d = values.seed_column(m, size, seed, metric, bench)
            num.append(n)
            den.append(d)
        return index[(m, seed)]

    pairs, keys = [], []
    for to, m, shared in wanted:
        for seed in shared:
            pairs.append((row(m, seed), row(reference, seed)) if to == "reference" else (row(best, seed), row(m, seed)))
            keys.append((to, m, seed))
    res = bootstrap.paired_differences(np.vstack(num), np.vstack(den), pairs, settings)
    out = {"reference": {}, "best": {}}
    for i, (to, m, seed) in enumerate(keys):
        out[to].setdefault(m, {})[seed] = (float(res.diff[i]), float(res.low[i]), float(res.high[i]))
    return out["reference"], out["best"]


def _signed(value: float) -> str:
    """Points with two decimals and a sign; "nan" where undefined."""
    if value is None or math.isnan(value):
        return "nan"
    return f"{value:+.2f}" if round(value, 2) != 0 else "+0.00"


def seed_strings(per_seed: dict | None) -> tuple[str, str]:
    """The CSV's per-seed text of one cell from {seed: (diff, low, high)} (fractions): ("0:+1.23;1:-0.40",
    "0:[-1.10,+3.50];1:[-2.00,+1.20]") in points; ("", "") without per-seed comparisons."""
    if not per_seed or not isinstance(per_seed, dict):
        return "", ""
    items = sorted(per_seed.items())
    diffs = ";".join(f"{int(s)}:{_signed(100 * d)}" for s, (d, _, _) in items)
    cis = ";".join(f"{int(s)}:[{_signed(100 * lo)},{_signed(100 * hi)}]" for s, (_, lo, hi) in items)
    return diffs, cis


def share_strings(per_seed: dict | None) -> str:
    """The CSV's per-seed top-model shares of one cell from {seed: share} (fractions): "0:92.2403;1:85.0100" in
    percent, four decimals (a share rounds onto the 90% line only with millions of test queries); "" below two
    seeds, as the other per-seed columns."""
    if not isinstance(per_seed, dict) or len(per_seed) < 2:
        return ""
    return ";".join(f"{int(s)}:{100 * float(v):.4f}" for s, v in sorted(per_seed.items()))


def near_constant_seeds(cell: dict | None) -> list[int]:
    """The seeds whose router is near-constant in a routing cell with per-seed shares (``seed_top_share``); []
    with one seed."""
    per_seed = (cell or {}).get("seed_top_share")
    if not isinstance(per_seed, dict) or len(per_seed) < 2:
        return []
    return [int(s) for s, v in sorted(per_seed.items()) if float(v) >= NEAR_CONSTANT_SHARE]


def parse_seed_strings(diffs: str | None, cis: str | None = None) -> dict[int, tuple[float, float, float]]:
    """{seed: (diff, low, high)} in points from the CSV's text (:func:`seed_strings`); NaN bounds where the
    interval text is absent; {} for empty text. A ValueError for text not of that form."""

    def entries(text: str | None) -> dict[int, str]:
        text = "" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text).strip()
        out = {}
        for part in filter(None, text.split(";")):
            seed, sep, value = part.partition(":")
            if not sep:
                raise ValueError(f"per-seed entry {part!r} is not SEED:VALUE")
            out[int(seed)] = value.strip()
        return out

    values, intervals = entries(diffs), entries(cis)
    out = {}
    for seed, value in values.items():
        lo = hi = math.nan
        if seed in intervals:
            bounds = intervals[seed].strip()
            if not (bounds.startswith("[") and bounds.endswith("]") and bounds.count(",") == 1):
                raise ValueError(f"per-seed interval {bounds!r} of seed {seed} is not [LOW,HIGH]")
            lo, hi = (float(b) for b in bounds[1:-1].split(","))
        out[seed] = (float(value), lo, hi)
    return out


def _benchmark_decisions(sig: pd.DataFrame, settings: bootstrap.Settings) -> pd.DataFrame:
    """Holm's correction of the benchmark columns' p-values and the decisions it gives (:func:`significance`):
    one family per (method, metric, training size) and test, of its ranked benchmark cells."""
    if sig.empty:
        return sig
    alpha = 1 - float(settings.confidence)
    bench = (sig["benchmark"] != OVERALL) & (sig["comparison_status"] == RANKED)
    for col in ("p_vs_best", "p_vs_best_single"):
        adjusted = pd.Series(np.nan, index=sig.index)
        for _, idx in sig[bench].groupby(["method", "metric", "train_size"], sort=False).groups.items():
            adjusted[idx] = holm(sig.loc[idx, col].to_numpy(np.float64))
        sig[f"{col}_holm"] = adjusted
    rows = sig["benchmark"] != OVERALL
    sig.loc[rows, "not_significant_vs_best"] = (bench & (sig["p_vs_best_holm"] >= alpha))[rows]
    sig["not_significant_vs_best"] = sig["not_significant_vs_best"].astype(bool)
    return sig


# --- layouts: the numbers of a table kind -> booktabs LaTeX and the long CSV frame ----------------


def _lookup(agg: pd.DataFrame, keys: dict):
    """(mean, std, n) of the single row of `agg` matching `keys`, or (nan, nan, 0)."""
    mask = pd.Series(True, index=agg.index)
    for k, v in keys.items():
        mask &= agg[k] == v
    rows = agg[mask]
    if rows.empty:
        return math.nan, math.nan, 0
    r = rows.iloc[0]
    return float(r["mean"]), float(r["std"]), int(r["n_seeds"])


def _significance(significance: pd.DataFrame | None) -> dict:
    """{(method, metric, train_size, benchmark): row} of :func:`significance`."""
    if significance is None or significance.empty:
        return {}
    return {
        (r["method"], r["metric"], int(r["train_size"]), str(r["benchmark"])): r
        for r in significance.to_dict("records")
    }


def _pct(x) -> float:
    return round(100 * float(x), 6) if x is not None and not math.isnan(float(x)) else math.nan


def above_best_single(cell: dict) -> bool:
    """Whether a routing cell's bootstrap row puts it significantly above the best single model: Overall,
    its interval lies above 0 (``beats_best_single``); a benchmark column, its Holm-adjusted p-value
    (``p_vs_best_single_holm``) is below 1 - confidence with a positive difference."""
    if cell.get("benchmark", OVERALL) == OVERALL:
        return bool(cell.get("beats_best_single"))
    p = cell.get("p_vs_best_single_holm")
    diff = cell.get("diff_to_best_single")
    if p is None or diff is None or math.isnan(float(p)) or math.isnan(float(diff)):
        return False
    return float(p) < 1 - float(cell["confidence"]) and float(diff) > 0


def cell_emphasis(emph: str, metric: str, cell: dict | None) -> str:
    """The emphasis a cell is printed with: for the routing metrics "best" (bold) and "second" (underline)
    only where the cell is also significantly above the best single model (:func:`above_best_single`), so
    that no emphasis goes to a router that always picking one model would match; otherwise (correctness,
    or no bootstrap) as ranked. A cell that is not ranked (``comparison_status``) has none."""
    if cell is not None and cell.get("comparison_status", RANKED) != RANKED:
        return ""
    if emph and metric in ROUTED and cell is not None and not above_best_single(cell):
        return ""
    return emph


def is_near_constant(metric: str, bench: str, cell: dict | None) -> bool:
    """Mark a routing cell (the Overall column) whose router sends most queries to one model."""
    return metric in ROUTED and bench == OVERALL and cell is not None and bool(cell.get("near_constant"))


def is_inconclusive(metric: str, cell: dict | None) -> bool:
    """A near-constant router's cell: not ranked, read "inconclusive (near-constant)"."""
    return metric in ROUTED and cell is not None and cell.get("comparison_status") == INCONCLUSIVE


def share_cell(metric: str, cell: dict | None) -> str:
    """The top-model share (%) of a routing cell's router, one decimal, with the near-constant mark; ``--``
    without one."""
    share = None if cell is None or metric not in ROUTED else cell.get("top_model_share")
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "--"
    return f"{100 * float(share):.1f}" + (NEAR_CONSTANT_MARK if bool(cell.get("near_constant")) else "")


def _record(approach, label, kind, metric, size, bench, stats, emph, sig: dict | None = None) -> dict:
    mean, std, n = stats
    row = {
        "approach": approach,
        "label": label,
        "kind": kind,
        "metric": metric,
        "train_size": size,
        "benchmark": bench,
        "mean_pct": round(100 * mean, 6) if not math.isnan(mean) else math.nan,
        "std_pct": round(100 * std, 6) if n > 0 and not math.isnan(std) else math.nan,
        "n_seeds": n,
        "emphasis": emph,
    }
    row.update({c: None for c in BOOT_COLUMNS})
    row.update({c: "" for c in SEED_COLUMNS})
    if sig is not None:
        kept = (
            "reference",
            "best",
            "not_significant_vs_best",
            "beats_best_single",
            "n_queries",
            "n_boot",
            "confidence",
        )
        row.update({c: sig[c] for c in kept + tuple(DIVERSITY_COLUMNS) + tuple(P_COLUMNS) + ("comparison_status",)})
        row.update({pct: _pct(sig[c]) for c, pct in _BOOT_PCT.items()})
        row["seed_diffs_pct"], row["seed_ci_pct"] = seed_strings(sig.get("seed_diffs"))
        row["seed_best_diffs_pct"], row["seed_best_ci_pct"] = seed_strings(sig.get("seed_best_diffs"))
        if share_strings(sig.get("seed_top_share")):
            row[SEED_SHARE_COLUMN] = share_strings(sig.get("seed_top_share"))
    return row


def _frame(records: list[dict]) -> pd.DataFrame:
    """The CSV frame; counts stay integers where reference rows leave them empty.

    Columns: ``approach, label, kind, metric, train_size, benchmark, mean_pct, std_pct, n_seeds, emphasis``
    (``kind`` = method or reference; for reference rows ``n_seeds`` counts the runs they were pooled over,
    and ``train_size`` is empty where they are pooled over all sizes), then the bootstrap columns of method
    rows (empty for reference rows): ``reference, diff_to_reference_pct, ci_low_pct, ci_high_pct`` (this
    approach minus the reference method and its interval), ``best, diff_to_best_pct, best_ci_low_pct,
    best_ci_high_pct`` (the column's best ranked approach minus this one), ``not_significant_vs_best`` (the
    dagger), ``diff_to_best_single_pct, best_single_ci_low_pct, best_single_ci_high_pct`` (this approach minus
    the best single model chosen on validation, routed to as a router, and its interval; routing metrics
    only), ``beats_best_single`` (that interval lies above 0: the condition for bold / underline of a routing
    cell in the Overall column; benchmark columns: ``p_vs_best_single_holm``), ``n_queries`` (test queries resampled), ``n_boot`` (resamples), ``confidence`` (interval level),
    the routing diversity of the cell's router over the test queries (routing metrics only; means over
    seeds): ``top_model`` (its most-chosen model), ``top_model_share``, ``n_models_used``, ``choice_entropy``
    (normalised to [0, 1]) and ``near_constant`` (share >= :data:`locus.evaluation.NEAR_CONSTANT_SHARE`);
    benchmark columns only: ``p_vs_best``, ``p_vs_best_single`` (two-sided paired bootstrap p-values of the
    two tests) and their Holm-adjusted values ``p_vs_best_holm``, ``p_vs_best_single_holm`` (family: the
    benchmark columns of one approach, metric and training size), which decide the dagger
    (``not_significant_vs_best``) and the bold / underline there; and ``comparison_status``: ``ranked``,
    ``inconclusive (near-constant)`` (a near-constant router: not ranked, no mark; routing metrics) or
    ``unmarked (fewer than 30 test queries)`` (a small benchmark column: no mark). ``not_significant_vs_best``
    is False for a cell that is not ranked. Last, each seed's own comparisons (:data:`SEED_COLUMNS`; empty
    unless the cell shares at least two seeds with the other method): ``seed_diffs_pct`` (this approach minus
    the reference, each seed's run against the same seed's: ``0:+1.23;1:-0.40;2:+0.88``) with ``seed_ci_pct``
    (each seed's own paired bootstrap interval: ``0:[-1.10,+3.50];...``), and ``seed_best_diffs_pct`` /
    ``seed_best_ci_pct`` (the column's best approach minus this one, seed by seed); the pooled columns above
    compare the means over seeds. Tables with a routing cell of two or more seeds add :data:`SEED_SHARE_COLUMN`
    (``seed_top_share_pct``: each seed's top-model share, ``0:92.2403;1:85.0100``); ``near_constant`` is then
    True when any seed's share reaches the threshold, ``top_model_share`` staying the mean over seeds.

    Routing tables of a data set with the generator's truth add rows of metric ``expected_routing`` (the mean
    true P(correct) of the routed model, with the same bootstrap columns), and the reference rows
    ``bayes_ceiling`` and ``best_single_train`` (metric ``expected_routing``, ``train_size`` empty, ``n_seeds``
    0: properties of the data set, not of runs)."""
    columns = CSV_COLUMNS
    if any(r.get(SEED_SHARE_COLUMN) for r in records):  # before the other per-seed columns, which stay last
        at = CSV_COLUMNS.index(SEED_COLUMNS[0])
        columns = CSV_COLUMNS[:at] + [SEED_SHARE_COLUMN] + CSV_COLUMNS[at:]
    frame = pd.DataFrame(records, columns=columns)
    for c in ("train_size", "n_queries", "n_boot"):
        frame[c] = frame[c].astype("Int64")
    return frame


def _rank(means: list, cells: list) -> list[str]:
    """Emphasis ("best" / "second" / "") of one compared column: `means` of the approaches, ranked among
    those whose bootstrap row (`cells`, None without one) says they are ranked."""
    ranked = [
        m if c is None or c.get("comparison_status", RANKED) == RANKED else math.nan for m, c in zip(means, cells)
    ]
    return emphasis(ranked)


def routing_table(
    method_agg: pd.DataFrame,
    ref_agg: pd.DataFrame,
    methods,
    sizes,
    caption: str,
    label: str = "tab:routing",
    significance: pd.DataFrame | None = None,
    truth_refs: pd.DataFrame | None = None,
) -> tuple[str, pd.DataFrame]:
    """Paper Table ``tab:concise_routing_correctness``: rows = methods (+ reference rows), columns =
    routing accuracy then correctness accuracy at each training size (overall, test).

    `method_agg`: :func:`aggregate` of method rows by ``method, train_size, benchmark, metric``;
    `ref_agg`: of reference rows by ``reference, train_size, benchmark``; `significance`: the bootstrap
    comparisons of the method cells (:func:`significance`; None: none). Rows of
    metric ``expected_routing`` in `method_agg` and the `truth_refs` (Bayes ceiling, best single model
    chosen on train: :func:`locus.experiments.expected.references`) add a block of expected routing
    accuracies under the routing columns (correctness columns left empty). With `significance`, a block
    *Top-model share* gives each routing cell's share of test queries sent to its most-chosen model.
    """
    sig = _significance(significance)
    metrics = ["routing_acc", "correctness_acc"]
    columns = [(m, s) for m in metrics for s in sizes]
    stats = {
        (meth, m, s): _lookup(method_agg, {"method": meth, "metric": m, "train_size": s, "benchmark": OVERALL})
        for meth in methods
        for m, s in columns
    }
    emph = {}
    for m, s in columns:
        ranks = _rank(
            [stats[(meth, m, s)][0] for meth in methods], [sig.get((meth, m, s, OVERALL)) for meth in methods]
        )
        for meth, e in zip(methods, ranks):
            emph[(meth, m, s)] = e
    k = len(sizes)
    out = [
        f"\\begin{{tabular}}{{@{{}}l {'c' * k} {'c' * k}@{{}}}}",
        "\\toprule",
        "Approach & " + " & ".join(f"\\multicolumn{{{k}}}{{c}}{{{METRIC_LABELS[m]}}}" for m in metrics) + " \\\\",
        f"\\cmidrule(lr){{2-{1 + k}}}\\cmidrule(lr){{{2 + k}-{1 + 2 * k}}}",
        "{\\scriptsize(\\# query evaluations)} & " + " & ".join(str(s) for _, s in columns) + " \\\\",
        "\\midrule",
    ]
    records = []
    for meth in methods:
        cells = []
        for m, s in columns:
            st = stats[(meth, m, s)]
            cell = sig.get((meth, m, s, OVERALL))
            e = cell_emphasis(emph[(meth, m, s)], m, cell)
            cells.append(
                fmt(
                    st[0],
                    st[1],
                    st[2],
                    e,
                    mark=cell is not None and bool(cell["not_significant_vs_best"]),
                    near_constant=is_near_constant(m, OVERALL, cell),
                )
            )
            records.append(_record(meth, labels.plain_label(meth), "method", m, s, OVERALL, st, e, cell))
        out.append(f"{method_label(meth)} & " + " & ".join(cells) + " \\\\")
    if not ref_agg.empty:
        out.append("\\midrule")
        for ref, ref_label in REFERENCE_LABELS.items():
            cells = []
            for m, s in columns:
                st = (
                    _lookup(ref_agg, {"reference": ref, "train_size": s, "benchmark": OVERALL})
                    if m == "routing_acc"
                    else (math.nan, math.nan, 0)
                )
                cells.append(fmt(st[0], st[1], st[2], show_std=st[2] > 1 and st[1] > 1e-12))
                if m == "routing_acc":
                    records.append(_record(ref, ref_label, "reference", m, s, OVERALL, st, ""))
            out.append(f"\\textit{{{ref_label}}} & " + " & ".join(cells) + " \\\\")
    if sig:  # the top-model share of every routing cell, under its routing column
        out += ["\\midrule", f"\\multicolumn{{{1 + 2 * k}}}{{@{{}}l}}{{\\textit{{{SHARE_HEADING}}}}} \\\\"]
        for meth in methods:
            shares = [share_cell("routing_acc", sig.get((meth, "routing_acc", s, OVERALL))) for s in sizes]
            out.append(f"{method_label(meth)} & " + " & ".join(shares + [""] * k) + " \\\\")
    if (method_agg["metric"] == EXPECTED).any():  # data sets with truth: expected under the routing columns
        out += ["\\midrule", f"\\multicolumn{{{1 + 2 * k}}}{{@{{}}l}}{{\\textit{{{EXPECTED_HEADING}}}}} \\\\"]
        stats, emph = _cells(method_agg, EXPECTED, methods, [(s, OVERALL) for s in sizes], sig)
        for meth in methods:
            cells = [_method_cell(meth, EXPECTED, s, OVERALL, stats, emph, sig, records) for s in sizes]
            out.append(f"{method_label(meth)} & " + " & ".join(cells + [""] * k) + " \\\\")
        for _ref, ref_label, values in _truth_references(truth_refs, [OVERALL], records):
            out.append(f"\\textit{{{ref_label}}} & " + " & ".join([fmt(values[0])] * k + [""] * k) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return wrap(out, caption, label, wide=False, size="\\small"), _frame(records)


def _cells(method_agg: pd.DataFrame, metric: str, methods, columns, sig: dict | None = None) -> tuple[dict, dict]:
    """(stats, emphasis) of one metric keyed by (method, train_size, benchmark), for `columns`
    [(train_size, benchmark)]; emphasis ranks the methods within each column, those ranked in `sig`
    (:func:`_significance`) only."""
    sig = sig or {}
    stats = {
        (meth, s, b): _lookup(method_agg, {"method": meth, "metric": metric, "train_size": s, "benchmark": b})
        for meth in methods
        for s, b in columns
    }
    emph = {}
    for s, b in columns:
        ranks = _rank([stats[(meth, s, b)][0] for meth in methods], [sig.get((meth, metric, s, b)) for meth in methods])
        for meth, e in zip(methods, ranks):
            emph[(meth, s, b)] = e
    return stats, emph


def _method_cell(meth, metric, size, bench, stats, emph, sig: dict, records: list, plain: str | None = None) -> str:
    """One method cell (with its dagger); its CSV record (label `plain`, default the method's) is appended
    to `records`."""
    st = stats[(meth, size, bench)]
    cell = sig.get((meth, metric, size, bench))
    e = cell_emphasis(emph[(meth, size, bench)], metric, cell)
    records.append(_record(meth, plain or labels.plain_label(meth), "method", metric, size, bench, st, e, cell))
    return fmt(
        st[0],
        st[1],
        st[2],
        e,
        mark=cell is not None and bool(cell["not_significant_vs_best"]),
        near_constant=is_near_constant(metric, bench, cell),
    )


def _truth_references(truth_refs: pd.DataFrame | None, benchmarks, records: list):
    """(reference, LaTeX label, values per benchmark) of the Bayes ceiling and the best single model chosen
    on train (:func:`locus.experiments.expected.references`); their CSV records (metric
    ``expected_routing``, no training size: properties of the data set) are appended to `records`."""
    if truth_refs is None:
        return []
    values = {(r, b): v for r, b, v in truth_refs[["reference", "benchmark", "value"]].itertuples(index=False)}
    models = dict(zip(truth_refs["reference"], truth_refs["model"]))
    rows = []
    for ref, ref_label in TRUTH_REFERENCE_LABELS.items():
        plain = TRUTH_REFERENCE_PLAIN[ref] + (f": {models[ref]}" if isinstance(models.get(ref), str) else "")
        per_bench = [values.get((ref, b), math.nan) for b in benchmarks]
        for b, v in zip(benchmarks, per_bench):
            records.append(_record(ref, plain, "reference", EXPECTED, None, b, (v, math.nan, 0), ""))
        rows.append((ref, ref_label, per_bench))
    return rows


def by_dataset_table(
    method_agg: pd.DataFrame,
    metric: str,
    methods,
    sizes,
    benchmarks,
    caption: str,
    label: str,
    ref_agg: pd.DataFrame | None = None,
    significance: pd.DataFrame | None = None,
    truth_refs: pd.DataFrame | None = None,
    row_labels: dict | None = None,
    row_heading: str = "Approach",
) -> tuple[str, pd.DataFrame]:
    """Paper appendix B layout (``tab:routing_acc_by_dataset_full`` / ``tab:correctness_pred_by_dataset_full``):
    rows = approach × training size, columns = Overall + each benchmark; best bold / second underlined
    among the approaches at the same training size. Embedding-free routers (kNN, K-Means) get their own
    block under a heading, as in the paper. `ref_agg` (routing only) adds Oracle / Best single / Random
    rows pooled over all runs; `significance` as for :func:`routing_table`. For the routing metric, rows
    of metric ``expected_routing`` in `method_agg` and the `truth_refs` add a second block of the same
    layout with the expected routing accuracy (as in :func:`routing_table`).

    With `significance`, a header row gives each column's number of test queries; for the routing metric a
    column *Top model (%)* gives each row's top-model share, and the benchmark cells of a near-constant
    router's row are one cell reading "inconclusive (near-constant)" (their values: the CSV).

    `row_labels` ({row key: (LaTeX label, plain label)}) makes the row groups settings instead of methods
    (the ablation tables of :mod:`locus.experiments.ablation`: one block, these labels, `row_heading`
    over them); default: the methods' own labels under "Approach"."""
    sig = _significance(significance)
    cols = [OVERALL] + [b for b in benchmarks if b != OVERALL]
    share = metric in ROUTED and bool(sig)
    lead = 3 if share else 2  # row label, training size (, top-model share)
    n_cols = lead + len(cols)
    heads = ["\\textbf{Overall}"] + [escape(display_benchmark(b)) for b in cols[1:]]
    out = [
        f"\\begin{{tabular}}{{@{{}}l c {'c ' if share else ''}*{{{len(cols)}}}{{c}}@{{}}}}",
        "\\toprule",
        f"\\multirow{{2}}{{*}}{{\\textbf{{{row_heading}}}}} & \\multirow{{2}}{{*}}{{\\textbf{{Train samples}}}} & "
        + ("\\textbf{Top model} & " if share else "")
        + f"\\multicolumn{{{len(cols)}}}{{c}}{{\\textbf{{{METRIC_LABELS.get(metric, escape(metric))}}}}} \\\\",
        f"\\cmidrule(lr){{{lead + 1}-{n_cols}}}",
        "& & " + ("\\textbf{(\\%)} & " if share else "") + " & ".join(heads) + " \\\\",
    ]
    counts = _column_counts(significance, cols)
    if counts:
        out.append(f"\\multicolumn{{{lead}}}{{r}}{{\\textit{{test queries}}}} & " + " & ".join(counts) + " \\\\")
    records = []
    out += _by_dataset_rows(method_agg, metric, methods, sizes, cols, sig, records, row_labels, share)
    if ref_agg is not None and not ref_agg.empty:
        out.append("\\midrule")
        pooled = (
            ref_agg.groupby(["reference", "benchmark"], sort=False).apply(_pool, include_groups=False).reset_index()
        )
        for ref, ref_label in REFERENCE_LABELS.items():
            cells = []
            for b in cols:
                st = _lookup(pooled, {"reference": ref, "benchmark": b})
                cells.append(fmt(st[0], st[1], st[2], show_std=st[2] > 1 and st[1] > 1e-12))
                records.append(_record(ref, ref_label, "reference", metric, None, b, st, ""))  # pooled over sizes
            out.append(f"\\textit{{{ref_label}}} & all & " + ("& " if share else "") + " & ".join(cells) + " \\\\")
    if metric == "routing_acc" and (method_agg["metric"] == EXPECTED).any():
        out += ["\\midrule", f"\\multicolumn{{{n_cols}}}{{@{{}}l}}{{\\textit{{{EXPECTED_HEADING}}}}} \\\\"]
        out += _by_dataset_rows(method_agg, EXPECTED, methods, sizes, cols, sig, records, row_labels, share)
        truth_rows = _truth_references(truth_refs, cols, records)
        if truth_rows:
            out.append("\\midrule")
        for _ref, ref_label, values in truth_rows:
            out.append(
                f"\\textit{{{ref_label}}} & all & "
                + ("& " if share else "")
                + " & ".join(fmt(v) for v in values)
                + " \\\\"
            )
    out += ["\\bottomrule", "\\end{tabular}"]
    return wrap(out, caption, label, wide=True, size="\\scriptsize"), _frame(records)


def _column_counts(significance: pd.DataFrame | None, cols) -> list[str]:
    """The header row's number of test queries per column (italic below :data:`MIN_BENCHMARK_QUERIES`: no
    marks there); empty without bootstrap comparisons."""
    if significance is None or significance.empty:
        return []
    n = significance.groupby("benchmark")["n_queries"].max()
    out = []
    for b in cols:
        count = int(n[b]) if b in n.index and not pd.isna(n[b]) else None
        if count is None:
            out.append("--")
        else:
            out.append(f"\\textit{{{count}}}" if b != OVERALL and count < MIN_BENCHMARK_QUERIES else str(count))
    return out


def _by_dataset_rows(
    method_agg,
    metric,
    methods,
    sizes,
    cols,
    sig: dict,
    records: list,
    row_labels: dict | None = None,
    share: bool = False,
) -> list[str]:
    """The method rows (approach × training size) of one metric in the by-dataset layout, embedding-free
    routers in their own block (with `row_labels`: settings, one block, those labels); their CSV records
    are appended to `records`. With `share`, the top-model share column; a near-constant router's
    benchmark cells read "inconclusive (near-constant)" (:data:`INCONCLUSIVE`)."""
    stats, emph = _cells(method_agg, metric, methods, [(s, b) for s in sizes for b in cols], sig)
    embedding = [m for m in methods if labels.has_embeddings(m)]
    free = [m for m in methods if not labels.has_embeddings(m)]
    blocks = (
        [(None, embedding), ("Embedding-free routers", free)]
        if embedding and free and row_labels is None
        else [(None, methods)]
    )
    tex_label, plain = (
        ((lambda m: row_labels[m][0]), (lambda m: row_labels[m][1]))
        if row_labels is not None
        else (method_label, labels.plain_label)
    )
    lead = "& & & " if share else "& & "
    out = []
    for heading, block in blocks:
        if heading:
            out += ["\\midrule", f"{lead}\\multicolumn{{{len(cols)}}}{{c}}{{\\textbf{{{heading}}}}} \\\\"]
        for meth in block:
            out.append("\\midrule")
            for i, s in enumerate(sizes):
                name = f"\\multirow{{{len(sizes)}}}{{*}}{{{tex_label(meth)}}}" if i == 0 else ""
                cells = [_method_cell(meth, metric, s, b, stats, emph, sig, records, plain(meth)) for b in cols]
                overall = sig.get((meth, metric, s, OVERALL))
                if is_inconclusive(metric, overall) and len(cols) > 1:
                    top = escape(str(overall.get("top_model") or "one model"))
                    seeds = near_constant_seeds(overall)
                    what = (
                        f"{100 * float(overall['top_model_share']):.1f}\\% of the test queries to {top}"
                        if not seeds  # one seed: its share; several: the seeds that send most queries to one model
                        else f"seed {', '.join(map(str, seeds))} at $\\geq$ {100 * NEAR_CONSTANT_SHARE:g}\\% to one model"
                    )
                    cells[1:] = [
                        f"\\multicolumn{{{len(cols) - 1}}}{{c}}{{\\textit{{{INCONCLUSIVE}: {what}; values in the CSV}}}}"
                    ]
                lead_cells = [name, str(s)] + ([share_cell(metric, overall)] if share else [])
                out.append(" & ".join(lead_cells + cells) + " \\\\")
    return out


def _pool(group: pd.DataFrame) -> pd.Series:
    """Combine per-size (mean, std, n) groups into one, as if over all underlying values."""
    n = group["n_seeds"].sum()
    mean = (group["mean"] * group["n_seeds"]).sum() / n
    ss = ((group["n_seeds"] - 1) * group["std"] ** 2 + group["n_seeds"] * (group["mean"] - mean) ** 2).sum()
    return pd.Series({"mean": mean, "std": math.sqrt(ss / (n - 1)) if n > 1 else 0.0, "n_seeds": int(n)})


def render(
    kind: str,
    coll: Collection,
    data_label: str | None = None,
    split: str = "test",
    label: str | None = None,
    values: QueryValues | None = None,
    settings: bootstrap.Settings = bootstrap.Settings(),
    reference: str = "locus",
    truth_refs: pd.DataFrame | None = None,
) -> tuple[str, pd.DataFrame]:
    """(LaTeX, numbers) of one table kind from collected runs; with the runs' per-query `values` the
    paired bootstrap comparisons (:func:`significance`) are added to the cells, CSV and caption. Expected
    routing accuracies in `coll` (:func:`locus.experiments.expected.with_expected`) and the `truth_refs`
    add the expected rows (routing kinds)."""
    sig = significance(kind, coll, values, settings, reference) if values is not None else None
    n_queries = int(sig.loc[sig["benchmark"] == OVERALL, "n_queries"].max()) if sig is not None and len(sig) else 0
    cap = caption(
        kind,
        coll.data_label(data_label),
        coll.encoder,
        split,
        coll.seeds,
        settings if sig is not None else None,
        reference,
        n_queries,
        truth_refs,
        sig,
        grid_sentence(coll.sizes, {r.seed for r in coll.runs}),
    )
    label = label or LABELS[kind]
    if kind == "routing":
        return routing_table(
            coll.method_agg, coll.ref_agg, coll.methods, coll.sizes, cap, label, significance=sig, truth_refs=truth_refs
        )
    metric = METRIC[kind]
    refs = coll.ref_agg if metric == "routing_acc" else None
    return by_dataset_table(
        coll.method_agg,
        metric,
        coll.methods,
        coll.sizes,
        coll.benchmarks,
        cap,
        label,
        ref_agg=refs,
        significance=sig,
        truth_refs=truth_refs,
    )


def write_table(
    kind: str,
    metrics,
    out,
    methods=None,
    data_label: str | None = None,
    split: str = "test",
    label: str | None = None,
    data=None,
    settings: bootstrap.Settings = bootstrap.Settings(),
    reference: str = "locus",
    truth=None,
) -> dict[str, Path]:
    """Read the metrics files and the runs' per-query scores (labels from the data set `data`, default the
    one recorded in the runs), render `kind` with its bootstrap comparisons and write ``out`` (.tex) and
    the CSV beside it. `truth` (routing kinds): the data set's ``truth.parquet``, for the expected rows
    (:mod:`locus.experiments.expected`)."""
    from locus.data.canonical import read_dataset

    out = Path(out)
    paths = {"tex": out, "csv": out.with_suffix(".csv")}
    check_outputs(paths.values())
    if truth is not None and METRIC[kind] != "routing_acc":
        raise DataError(
            f"--truth gives expected routing accuracies: it applies to the routing tables "
            f"(routing, routing-by-dataset), not to {kind}; drop it"
        )
    coll = collect(metrics, split, methods)
    check_reference(coll, reference)
    if data is None and not Path(coll.dataset).is_dir():
        raise DataError(
            f"the runs record the data set {coll.dataset}, which is not a directory here; the table's "
            f"bootstrap needs the labels of the data set the runs were trained on: pass it with --data"
        )
    data_dir = Path(data if data is not None else coll.dataset)
    dataset = read_dataset(data_dir) if truth is not None else None  # else read by query_values
    truth_frame = expected.table_truth(truth, data_dir, dataset) if truth is not None else None
    values = query_values(coll.runs, data_dir, split, truth=truth_frame, data=dataset)
    truth_refs = None
    if truth_frame is not None:
        coll = expected.with_expected(coll, values.expected_rows)
        truth_refs = expected.references(dataset, truth_frame, split)
    tex, numbers = render(kind, coll, data_label, split, label, values, settings, reference, truth_refs)
    from locus.atomic import write_text

    write_text(paths["tex"], tex)
    write_csv(numbers, paths["csv"])
    return paths
