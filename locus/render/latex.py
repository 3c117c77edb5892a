r"""Aggregated run metrics -> booktabs LaTeX tables in the paper's layouts, plus the numbers as a DataFrame.

Conventions shared by every table (paper style):

- values are percentages with 2 decimals; with several seeds a cell reads ``mean ± std`` (sample std,
  ``{\scriptsize$\pm$0.12}``), with one seed just the mean; a missing cell prints ``--``;
- within each compared column the best method value is **bold** and the second best underlined, ranked
  on the *printed* (rounded) means; reference rows (oracle, best single model, random) are never emphasised;
  a routing cell keeps its emphasis only when it is significantly above the best single model chosen on
  validation (paired bootstrap, :func:`cell_emphasis`), and a near-constant router carries
  :data:`NEAR_CONSTANT_MARK` (:func:`locus.evaluation.routing_diversity`);
- with the paired bootstrap of :func:`locus.experiments.tables.significance`, a method cell whose
  difference to the best of its column is not significant carries :data:`MARK` (a dagger);
- the output is a complete ``table``/``table*`` environment needing ``\usepackage{booktabs,multirow}``.

Each ``*_table`` function returns ``(tex, numbers)``; ``numbers`` is the long DataFrame written beside the
.tex as CSV (columns: :func:`_frame`). Routing tables of a data set with the generator's truth add a block
of metric ``expected_routing`` under :data:`EXPECTED_HEADING` and the reference rows ``bayes_ceiling``
and ``best_single_train``.
"""

from __future__ import annotations

import math

import pandas as pd

from locus.evaluation import EXPECTED
from locus.render import labels
from locus.render.labels import (
    OVERALL,
    display_benchmark,
    escape,  # noqa: F401  (re-exported)
)

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
MARK = "$^{\\dagger}$"  # not significantly different from the best of its column
NEAR_CONSTANT_MARK = "$^{\\S}$"  # a near-constant router (evaluation.NEAR_CONSTANT_SHARE of queries to one model)
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


def method_label(method: str) -> str:
    """LaTeX row label of a method: its class's ``latex_label`` (escaped name when not registered)."""
    return labels.latex_label(method)


def fmt(
    mean: float | None,
    std: float | None = None,
    n: int = 1,
    emphasis: str = "",
    decimals: int = 2,
    show_std: bool | None = None,
    mark: bool = False,
    near_constant: bool = False,
) -> str:
    """One cell: ``mean`` (a fraction) as a percentage, ``± std`` when there are several seeds
    (or when `show_std` says so), bold for "best", underlined for "second", :data:`MARK` after the number
    when `mark` (not significantly different from the best), :data:`NEAR_CONSTANT_MARK` when `near_constant`,
    ``--`` when missing."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "--"
    text = f"{100 * mean:.{decimals}f}"
    if emphasis == "best":
        text = f"\\textbf{{{text}}}"
    elif emphasis == "second":
        text = f"\\underline{{{text}}}"
    if mark:
        text += MARK
    if near_constant:
        text += NEAR_CONSTANT_MARK
    if (n > 1 if show_std is None else show_std) and std is not None and not math.isnan(std):
        text += f"{{\\scriptsize$\\pm${100 * std:.{decimals}f}}}"
    return text


def emphasis(means, decimals: int = 2, higher_is_better: bool = True) -> list[str]:
    """ "best" / "second" / "" per value, ranked on the rounded percentages (ties share a rank; NaN
    never ranks). Nothing is emphasised when fewer than two values are present."""
    rounded = [None if m is None or math.isnan(m) else round(100 * m, decimals) for m in means]
    distinct = sorted({r for r in rounded if r is not None}, reverse=higher_is_better)
    if sum(r is not None for r in rounded) < 2:
        return [""] * len(rounded)
    best = distinct[0]
    second = distinct[1] if len(distinct) > 1 else None
    return [
        "best" if r == best and r is not None else "second" if r is not None and r == second else "" for r in rounded
    ]


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
    """{(method, metric, train_size, benchmark): row} of :func:`locus.experiments.tables.significance`."""
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


def _wrap(tabular: list[str], caption: str, label: str, wide: bool, size: str) -> str:
    env = "table*" if wide else "table"
    lines = [
        "% generated by `locus table`; needs \\usepackage{booktabs,multirow}",
        f"\\begin{{{env}}}[t]",
        "\\centering",
        f"\\caption{{{caption}}}",
        f"\\label{{{label}}}",
        size,
        "\\setlength{\\tabcolsep}{3pt}",
        "\\renewcommand{\\arraystretch}{1.15}",
    ]
    return "\n".join(lines + tabular + [f"\\end{{{env}}}", ""])


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
    comparisons of the method cells (:func:`locus.experiments.tables.significance`; None: none). Rows of
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
    return _wrap(out, caption, label, wide=False, size="\\small"), _frame(records)


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
    return _wrap(out, caption, label, wide=True, size="\\scriptsize"), _frame(records)


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
