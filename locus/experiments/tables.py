r"""Comparison tables from runs' ``metrics.json`` (``locus table KIND``): which metric each kind shows, its
caption, its layout and the LaTeX + CSV written (cells formatted by :mod:`locus.render.latex`).

Kinds (paper layouts): ``routing`` (``tab:concise_routing_correctness``; rows = methods + Oracle / Best
single / Random, columns = routing then correctness accuracy at each training size: :func:`routing_table`);
``routing-by-dataset`` / ``correctness-by-dataset`` (appendix B; rows = approach × training size, columns =
Overall + benchmarks: :func:`by_dataset_table`, also the layout of :mod:`locus.experiments.ablation`).

Every comparison carries a paired bootstrap over test queries (:func:`significance`): a dagger marks a cell
not significantly below the best of its column; a routing cell is bold / underlined only when also
significantly above the best single model chosen on validation (:func:`cell_emphasis`); reference rows are
never emphasised. The CSV beside the .tex holds every printed number (columns: :func:`_frame`). With a
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
SIGNIFICANCE_COLUMNS = [
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
] + DIVERSITY_COLUMNS
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
BOOT_COLUMNS = [
    "reference",
    "diff_to_reference_pct",
    "ci_low_pct",
    "ci_high_pct",
    "best",
    "diff_to_best_pct",
    "best_ci_low_pct",
    "best_ci_high_pct",
    "not_significant_vs_best",
    "diff_to_best_single_pct",
    "best_single_ci_low_pct",
    "best_single_ci_high_pct",
    "beats_best_single",
    "n_queries",
    "n_boot",
    "confidence",
] + DIVERSITY_COLUMNS
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
# by-benchmark tables of its appendix; config/paper.yaml `train_sizes` runs them); its tables give one value
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
    `reference_label` (LaTeX) when given, else by the method's label."""
    level = f"{100 * settings.confidence:g}\\%"
    how = f"{settings.n_resamples} resamples, seed {settings.seed}, percentile"
    if kind == "routing":
        where, queries = "its column", f"the {n_queries} {split} queries ({how})"
    else:
        where = "its column at the same training size"
        queries = f"the {split} queries (all {n_queries} for Overall, the benchmark's own in its column; {how})"
    return (
        f"{MARK}: not significantly different from the best approach of {where}: the paired bootstrap "
        f"{level} interval of (best $-$ value) over {queries} includes 0. The CSV gives every approach's "
        f"difference to {reference_label or method_label(reference)} with its {level} paired bootstrap interval."
    )


def routing_sentences(sig: pd.DataFrame | None, settings: bootstrap.Settings, label_of) -> str:
    """The caption's rule for bold routing cells and the near-constant mark (LaTeX), naming the marked
    cells (`label_of`: row key -> LaTeX label); empty without bootstrap comparisons."""
    if sig is None or sig.empty:
        return ""
    level = f"{100 * settings.confidence:g}\\%"
    share = f"{100 * NEAR_CONSTANT_SHARE:g}\\%"
    routed = sig[(sig["metric"] == "routing_acc") & (sig["benchmark"] == OVERALL)]
    flagged = routed[routed["near_constant"].eq(True)]
    where = "; ".join(
        f"{label_of(m)} at $n$ = {', '.join(str(int(n)) for n in g['train_size'])}"
        for m, g in flagged.groupby("method", sort=False)
    )
    if not where:  # say how close the most concentrated router comes
        top = routed.dropna(subset=["top_model_share"])
        top = top.loc[top["top_model_share"].idxmax()] if len(top) else None
        where = "none here" + (
            f"; highest share: {100 * top['top_model_share']:.1f}\\%, {label_of(top['method'])} at "
            f"$n$ = {int(top['train_size'])}"
            if top is not None
            else ""
        )
    return (
        f"Routing cells are \\textbf{{bold}} (best) or \\underline{{underlined}} (second) only when also "
        f"significantly above the best single model chosen on validation (a router like any other: the paired "
        f"bootstrap {level} interval of (cell $-$ best single) lies above 0; CSV "
        f"\\texttt{{diff\\_to\\_best\\_single\\_pct}}). {NEAR_CONSTANT_MARK}: near-constant router, "
        f"sending at least {share} of the test queries to one model ({where}); the CSV gives each cell's share "
        f"of its most-chosen model, the number of models it uses and the normalised entropy of its choices."
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
        if METRIC[kind] == "routing_acc":
            text += " " + routing_sentences(sig, settings, method_label)
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


def significance(
    kind: str, coll: Collection, values: QueryValues, settings: bootstrap.Settings, reference: str = "locus"
) -> pd.DataFrame:
    """Per method cell of the table: the paired bootstrap difference to `reference` and to the best
    approach of its column (fractions), and whether (best - cell) is not significant.

    The best approach is the one printed in bold (ranked on the printed means, :func:`emphasis`;
    the first of tied ones); a cell sharing the best printed mean is never marked.

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
    and the cell's routing diversity (:data:`locus.render.DIVERSITY_COLUMNS`)."""
    check_reference(coll, reference)
    agg = coll.method_agg
    rows = []
    for metric, size, bench in columns(kind, coll):
        sel = agg[(agg["metric"] == metric) & (agg["train_size"] == size) & (agg["benchmark"] == bench)]
        mean = dict(zip(sel["method"], sel["mean"]))
        emph = dict(zip(coll.methods, emphasis([mean.get(m, math.nan) for m in coll.methods])))
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
        n_ref = len(present) if reference in index else 0
        n_best = len(present) if best in index else 0
        vs_best = res.includes_zero()
        div = values.diversity
        for i, m in enumerate(present):
            to_ref = (res.diff[i], res.low[i], res.high[i]) if n_ref else (math.nan,) * 3
            j = n_ref + i
            to_best = (res.diff[j], res.low[j], res.high[j]) if best in index else (math.nan,) * 3
            k = n_ref + n_best + i
            to_single = (res.diff[k], res.low[k], res.high[k]) if single is not None else (math.nan,) * 3
            d = div.get((m, size), {}) if metric in ROUTED else {}
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
                    "not_significant_vs_best": bool(best in index and emph[m] != "best" and vs_best[j]),
                    "diff_to_best_single": to_single[0],
                    "best_single_ci_low": to_single[1],
                    "best_single_ci_high": to_single[2],
                    "beats_best_single": bool(single is not None and to_single[1] > 0),
                    **{c: d.get(c) for c in DIVERSITY_COLUMNS},
                    "n_queries": res.n_queries,
                    "n_boot": res.n_resamples,
                    "confidence": res.confidence,
                }
            )
    return pd.DataFrame(rows, columns=SIGNIFICANCE_COLUMNS)


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


def cell_emphasis(emph: str, metric: str, cell: dict | None) -> str:
    """The emphasis a cell is printed with: for the routing metrics "best" (bold) and "second" (underline)
    only where the cell also beats the best single model significantly (``beats_best_single`` of its
    bootstrap row), so that no emphasis goes to a router that always picking one model would match;
    otherwise (correctness, or no bootstrap) as ranked."""
    if emph and metric in ROUTED and cell is not None and not bool(cell.get("beats_best_single")):
        return ""
    return emph


def is_near_constant(metric: str, bench: str, cell: dict | None) -> bool:
    """Mark a routing cell (the Overall column) whose router sends most queries to one model."""
    return metric in ROUTED and bench == OVERALL and cell is not None and bool(cell.get("near_constant"))


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
        row.update({c: sig[c] for c in kept + tuple(DIVERSITY_COLUMNS)})
        row.update({pct: _pct(sig[c]) for c, pct in _BOOT_PCT.items()})
    return row


def _frame(records: list[dict]) -> pd.DataFrame:
    """The CSV frame; counts stay integers where reference rows leave them empty.

    Columns: ``approach, label, kind, metric, train_size, benchmark, mean_pct, std_pct, n_seeds, emphasis``
    (``kind`` = method or reference; for reference rows ``n_seeds`` counts the runs they were pooled over,
    and ``train_size`` is empty where they are pooled over all sizes), then the bootstrap columns of method
    rows (empty for reference rows): ``reference, diff_to_reference_pct, ci_low_pct, ci_high_pct`` (this
    approach minus the reference method and its interval), ``best, diff_to_best_pct, best_ci_low_pct,
    best_ci_high_pct`` (the column's best approach minus this one), ``not_significant_vs_best`` (the dagger),
    ``diff_to_best_single_pct, best_single_ci_low_pct, best_single_ci_high_pct`` (this approach minus the
    best single model chosen on validation, routed to as a router, and its interval; routing metrics only),
    ``beats_best_single`` (that interval lies above 0: the condition for bold / underline of a routing cell),
    ``n_queries`` (test queries resampled), ``n_boot`` (resamples), ``confidence`` (interval level), and the
    routing diversity of the cell's router over the test queries (routing metrics only; means over seeds):
    ``top_model`` (its most-chosen model), ``top_model_share``, ``n_models_used``, ``choice_entropy``
    (normalised to [0, 1]) and ``near_constant`` (share >= :data:`locus.evaluation.NEAR_CONSTANT_SHARE`).

    Routing tables of a data set with the generator's truth add rows of metric ``expected_routing`` (the mean
    true P(correct) of the routed model, with the same bootstrap columns), and the reference rows
    ``bayes_ceiling`` and ``best_single_train`` (metric ``expected_routing``, ``train_size`` empty, ``n_seeds``
    0: properties of the data set, not of runs)."""
    frame = pd.DataFrame(records, columns=CSV_COLUMNS)
    for c in ("train_size", "n_queries", "n_boot"):
        frame[c] = frame[c].astype("Int64")
    return frame


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
    accuracies under the routing columns (correctness columns left empty).
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
        for meth, e in zip(methods, emphasis([stats[(meth, m, s)][0] for meth in methods])):
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
    if (method_agg["metric"] == EXPECTED).any():  # data sets with truth: expected under the routing columns
        out += ["\\midrule", f"\\multicolumn{{{1 + 2 * k}}}{{@{{}}l}}{{\\textit{{{EXPECTED_HEADING}}}}} \\\\"]
        stats, emph = _cells(method_agg, EXPECTED, methods, [(s, OVERALL) for s in sizes])
        for meth in methods:
            cells = [_method_cell(meth, EXPECTED, s, OVERALL, stats, emph, sig, records) for s in sizes]
            out.append(f"{method_label(meth)} & " + " & ".join(cells + [""] * k) + " \\\\")
        for _ref, ref_label, values in _truth_references(truth_refs, [OVERALL], records):
            out.append(f"\\textit{{{ref_label}}} & " + " & ".join([fmt(values[0])] * k + [""] * k) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return wrap(out, caption, label, wide=False, size="\\small"), _frame(records)


def _cells(method_agg: pd.DataFrame, metric: str, methods, columns) -> tuple[dict, dict]:
    """(stats, emphasis) of one metric keyed by (method, train_size, benchmark), for `columns`
    [(train_size, benchmark)]; emphasis ranks the methods within each column."""
    stats = {
        (meth, s, b): _lookup(method_agg, {"method": meth, "metric": metric, "train_size": s, "benchmark": b})
        for meth in methods
        for s, b in columns
    }
    emph = {}
    for s, b in columns:
        for meth, e in zip(methods, emphasis([stats[(meth, s, b)][0] for meth in methods])):
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

    `row_labels` ({row key: (LaTeX label, plain label)}) makes the row groups settings instead of methods
    (the ablation tables of :mod:`locus.experiments.ablation`: one block, these labels, `row_heading`
    over them); default: the methods' own labels under "Approach"."""
    sig = _significance(significance)
    cols = [OVERALL] + [b for b in benchmarks if b != OVERALL]
    n_cols = 2 + len(cols)
    heads = ["\\textbf{Overall}"] + [escape(display_benchmark(b)) for b in cols[1:]]
    out = [
        f"\\begin{{tabular}}{{@{{}}l c *{{{len(cols)}}}{{c}}@{{}}}}",
        "\\toprule",
        f"\\multirow{{2}}{{*}}{{\\textbf{{{row_heading}}}}} & \\multirow{{2}}{{*}}{{\\textbf{{Train samples}}}} & "
        f"\\multicolumn{{{len(cols)}}}{{c}}{{\\textbf{{{METRIC_LABELS.get(metric, escape(metric))}}}}} \\\\",
        f"\\cmidrule(lr){{3-{n_cols}}}",
        "& & " + " & ".join(heads) + " \\\\",
    ]
    records = []
    out += _by_dataset_rows(method_agg, metric, methods, sizes, cols, sig, records, row_labels)
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
            out.append(f"\\textit{{{ref_label}}} & all & " + " & ".join(cells) + " \\\\")
    if metric == "routing_acc" and (method_agg["metric"] == EXPECTED).any():
        out += ["\\midrule", f"\\multicolumn{{{n_cols}}}{{@{{}}l}}{{\\textit{{{EXPECTED_HEADING}}}}} \\\\"]
        out += _by_dataset_rows(method_agg, EXPECTED, methods, sizes, cols, sig, records, row_labels)
        truth_rows = _truth_references(truth_refs, cols, records)
        if truth_rows:
            out.append("\\midrule")
        for _ref, ref_label, values in truth_rows:
            out.append(f"\\textit{{{ref_label}}} & all & " + " & ".join(fmt(v) for v in values) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return wrap(out, caption, label, wide=True, size="\\scriptsize"), _frame(records)


def _by_dataset_rows(
    method_agg, metric, methods, sizes, cols, sig: dict, records: list, row_labels: dict | None = None
) -> list[str]:
    """The method rows (approach × training size) of one metric in the by-dataset layout, embedding-free
    routers in their own block (with `row_labels`: settings, one block, those labels); their CSV records
    are appended to `records`."""
    stats, emph = _cells(method_agg, metric, methods, [(s, b) for s in sizes for b in cols])
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
    out = []
    for heading, block in blocks:
        if heading:
            out += ["\\midrule", f"& & \\multicolumn{{{len(cols)}}}{{c}}{{\\textbf{{{heading}}}}} \\\\"]
        for meth in block:
            out.append("\\midrule")
            for i, s in enumerate(sizes):
                name = f"\\multirow{{{len(sizes)}}}{{*}}{{{tex_label(meth)}}}" if i == 0 else ""
                cells = [_method_cell(meth, metric, s, b, stats, emph, sig, records, plain(meth)) for b in cols]
                out.append(f"{name} & {s} & " + " & ".join(cells) + " \\\\")
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
