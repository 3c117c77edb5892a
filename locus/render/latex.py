"""Aggregated run metrics -> booktabs LaTeX tables in the paper's layouts, plus the numbers as a DataFrame.

Conventions shared by every table (paper style):

- values are percentages with 2 decimals; with several seeds a cell reads ``mean ± std`` (sample std,
  ``{\\scriptsize$\\pm$0.12}``), with one seed just the mean;
- within each compared column the best method value is **bold** and the second best underlined; ranks
  are decided on the *printed* (rounded) means, so equal-looking numbers get equal emphasis; reference
  rows (oracle, best single model, random) are never emphasised;
- a missing cell prints ``--``;
- the output is a complete ``table``/``table*`` environment needing ``\\usepackage{booktabs,multirow}``.

Each ``*_table`` function returns ``(tex, numbers)``; ``numbers`` is the long DataFrame written beside the
.tex as CSV: ``approach, label, kind, metric, train_size, benchmark, mean_pct, std_pct, n_seeds, emphasis``
(``kind`` = method or reference; for reference rows ``n_seeds`` counts the runs they were pooled over,
and ``train_size`` is empty where they are pooled over all sizes).
"""
from __future__ import annotations

import math

import pandas as pd

from locus.experiments.comparison import OVERALL, display_benchmark

METHOD_LABELS = {
    "locus": "\\textsc{Locus} (ours)",
    "embedllm": "EmbedLLM",
    "embedllm_plus": "EmbedLLM+",
    "irt_net": "IRT-Net",
    "knn_router": "$k$NN router",
    "kmeans_router": "$K$-Means router",
}
EMBEDDING_FREE = ("knn_router", "kmeans_router")
REFERENCE_LABELS = {"oracle": "Oracle", "best_single": "Best single model (chosen on val)", "random": "Random"}
METRIC_LABELS = {"routing_acc": "Routing Accuracy (\\%)", "correctness_acc": "Corr. Pred Acc (\\%)"}
CSV_COLUMNS = ["approach", "label", "kind", "metric", "train_size", "benchmark", "mean_pct", "std_pct",
               "n_seeds", "emphasis"]
_SPECIAL = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
            "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}"}


def escape(text) -> str:
    """Escape LaTeX special characters in plain text (names, paths)."""
    return "".join(_SPECIAL.get(c, c) for c in str(text))


def method_label(method: str) -> str:
    return METHOD_LABELS.get(method, escape(method))


def fmt(mean: float | None, std: float | None = None, n: int = 1, emphasis: str = "", decimals: int = 2,
        show_std: bool | None = None) -> str:
    """One cell: ``mean`` (a fraction) as a percentage, ``± std`` when there are several seeds
    (or when `show_std` says so), bold for "best", underlined for "second", ``--`` when missing."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "--"
    text = f"{100 * mean:.{decimals}f}"
    if emphasis == "best":
        text = f"\\textbf{{{text}}}"
    elif emphasis == "second":
        text = f"\\underline{{{text}}}"
    if (n > 1 if show_std is None else show_std) and std is not None and not math.isnan(std):
        text += f"{{\\scriptsize$\\pm${100 * std:.{decimals}f}}}"
    return text


def emphasis(means, decimals: int = 2, higher_is_better: bool = True) -> list[str]:
    """"best" / "second" / "" per value, ranked on the rounded percentages (ties share a rank; NaN
    never ranks). Nothing is emphasised when fewer than two values are present."""
    rounded = [None if m is None or math.isnan(m) else round(100 * m, decimals) for m in means]
    distinct = sorted({r for r in rounded if r is not None}, reverse=higher_is_better)
    if sum(r is not None for r in rounded) < 2:
        return [""] * len(rounded)
    best = distinct[0]
    second = distinct[1] if len(distinct) > 1 else None
    return ["best" if r == best and r is not None else "second" if r is not None and r == second else ""
            for r in rounded]


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


def _record(approach, label, kind, metric, size, bench, stats, emph) -> dict:
    mean, std, n = stats
    return {"approach": approach, "label": label, "kind": kind, "metric": metric, "train_size": size,
            "benchmark": bench, "mean_pct": round(100 * mean, 6) if not math.isnan(mean) else math.nan,
            "std_pct": round(100 * std, 6) if n > 0 and not math.isnan(std) else math.nan,
            "n_seeds": n, "emphasis": emph}


def _plain(label: str) -> str:
    # labels from METHOD_LABELS are LaTeX already; CSV gets a plain version
    return label.replace("\\textsc{Locus}", "LOCUS").replace("$", "").replace("\\", "")


def _wrap(tabular: list[str], caption: str, label: str, wide: bool, size: str) -> str:
    env = "table*" if wide else "table"
    lines = ["% generated by `locus table`; needs \\usepackage{booktabs,multirow}",
             f"\\begin{{{env}}}[t]", "\\centering", f"\\caption{{{caption}}}", f"\\label{{{label}}}", size,
             "\\setlength{\\tabcolsep}{3pt}", "\\renewcommand{\\arraystretch}{1.15}"]
    return "\n".join(lines + tabular + [f"\\end{{{env}}}", ""])


def routing_table(method_agg: pd.DataFrame, ref_agg: pd.DataFrame, methods, sizes, caption: str,
                  label: str = "tab:routing") -> tuple[str, pd.DataFrame]:
    """Paper Table ``tab:concise_routing_correctness``: rows = methods (+ reference rows), columns =
    routing accuracy then correctness accuracy at each training size (overall, test).

    `method_agg`: :func:`aggregate` of method rows by ``method, train_size, benchmark, metric``;
    `ref_agg`: of reference rows by ``reference, train_size, benchmark``.
    """
    metrics = ["routing_acc", "correctness_acc"]
    columns = [(m, s) for m in metrics for s in sizes]
    stats = {(meth, m, s): _lookup(method_agg, {"method": meth, "metric": m, "train_size": s,
                                                "benchmark": OVERALL})
             for meth in methods for m, s in columns}
    emph = {}
    for m, s in columns:
        for meth, e in zip(methods, emphasis([stats[(meth, m, s)][0] for meth in methods])):
            emph[(meth, m, s)] = e
    k = len(sizes)
    out = [f"\\begin{{tabular}}{{@{{}}l {'c' * k} {'c' * k}@{{}}}}", "\\toprule",
           "Approach & " + " & ".join(f"\\multicolumn{{{k}}}{{c}}{{{METRIC_LABELS[m]}}}" for m in metrics) + " \\\\",
           f"\\cmidrule(lr){{2-{1 + k}}}\\cmidrule(lr){{{2 + k}-{1 + 2 * k}}}",
           "{\\scriptsize(\\# query evaluations)} & " + " & ".join(str(s) for _, s in columns) + " \\\\",
           "\\midrule"]
    records = []
    for meth in methods:
        cells = []
        for m, s in columns:
            st = stats[(meth, m, s)]
            cells.append(fmt(st[0], st[1], st[2], emph[(meth, m, s)]))
            records.append(_record(meth, _plain(method_label(meth)), "method", m, s, OVERALL, st,
                                   emph[(meth, m, s)]))
        out.append(f"{method_label(meth)} & " + " & ".join(cells) + " \\\\")
    if not ref_agg.empty:
        out.append("\\midrule")
        for ref, ref_label in REFERENCE_LABELS.items():
            cells = []
            for m, s in columns:
                st = _lookup(ref_agg, {"reference": ref, "train_size": s, "benchmark": OVERALL}) \
                    if m == "routing_acc" else (math.nan, math.nan, 0)
                cells.append(fmt(st[0], st[1], st[2], show_std=st[2] > 1 and st[1] > 1e-12))
                if m == "routing_acc":
                    records.append(_record(ref, ref_label, "reference", m, s, OVERALL, st, ""))
            out.append(f"\\textit{{{ref_label}}} & " + " & ".join(cells) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return _wrap(out, caption, label, wide=False, size="\\small"), pd.DataFrame(records, columns=CSV_COLUMNS)


def by_dataset_table(method_agg: pd.DataFrame, metric: str, methods, sizes, benchmarks, caption: str,
                     label: str, ref_agg: pd.DataFrame | None = None) -> tuple[str, pd.DataFrame]:
    """Paper appendix B layout (``tab:routing_acc_by_dataset_full`` / ``tab:correctness_pred_by_dataset_full``):
    rows = approach × training size, columns = Overall + each benchmark; best bold / second underlined
    among the approaches at the same training size. Embedding-free routers (kNN, K-Means) get their own
    block under a heading, as in the paper. `ref_agg` (routing only) adds Oracle / Best single / Random
    rows pooled over all runs."""
    cols = [OVERALL] + [b for b in benchmarks if b != OVERALL]
    stats = {(meth, s, b): _lookup(method_agg, {"method": meth, "metric": metric, "train_size": s, "benchmark": b})
             for meth in methods for s in sizes for b in cols}
    emph = {}
    for s in sizes:
        for b in cols:
            for meth, e in zip(methods, emphasis([stats[(meth, s, b)][0] for meth in methods])):
                emph[(meth, s, b)] = e
    n_cols = 2 + len(cols)
    heads = ["\\textbf{Overall}"] + [escape(display_benchmark(b)) for b in cols[1:]]
    out = [f"\\begin{{tabular}}{{@{{}}l c *{{{len(cols)}}}{{c}}@{{}}}}", "\\toprule",
           "\\multirow{2}{*}{\\textbf{Approach}} & \\multirow{2}{*}{\\textbf{Train samples}} & "
           f"\\multicolumn{{{len(cols)}}}{{c}}{{\\textbf{{{METRIC_LABELS.get(metric, escape(metric))}}}}} \\\\",
           f"\\cmidrule(lr){{3-{n_cols}}}", "& & " + " & ".join(heads) + " \\\\"]
    records = []
    embedding = [m for m in methods if m not in EMBEDDING_FREE]
    free = [m for m in methods if m in EMBEDDING_FREE]
    blocks = [(None, embedding), ("Embedding-free routers", free)] if embedding and free else [(None, methods)]
    for heading, block in blocks:
        if heading:
            out += ["\\midrule", f"& & \\multicolumn{{{len(cols)}}}{{c}}{{\\textbf{{{heading}}}}} \\\\"]
        for meth in block:
            out.append("\\midrule")
            for i, s in enumerate(sizes):
                name = f"\\multirow{{{len(sizes)}}}{{*}}{{{method_label(meth)}}}" if i == 0 else ""
                cells = []
                for b in cols:
                    st = stats[(meth, s, b)]
                    cells.append(fmt(st[0], st[1], st[2], emph[(meth, s, b)]))
                    records.append(_record(meth, _plain(method_label(meth)), "method", metric, s, b, st,
                                           emph[(meth, s, b)]))
                out.append(f"{name} & {s} & " + " & ".join(cells) + " \\\\")
    if ref_agg is not None and not ref_agg.empty:
        out.append("\\midrule")
        pooled = ref_agg.groupby(["reference", "benchmark"], sort=False).apply(
            _pool, include_groups=False).reset_index()
        for ref, ref_label in REFERENCE_LABELS.items():
            cells = []
            for b in cols:
                st = _lookup(pooled, {"reference": ref, "benchmark": b})
                cells.append(fmt(st[0], st[1], st[2], show_std=st[2] > 1 and st[1] > 1e-12))
                records.append(_record(ref, ref_label, "reference", metric, None, b, st, ""))  # pooled over sizes
            out.append(f"\\textit{{{ref_label}}} & all & " + " & ".join(cells) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return _wrap(out, caption, label, wide=True, size="\\scriptsize"), pd.DataFrame(records, columns=CSV_COLUMNS)


def _pool(group: pd.DataFrame) -> pd.Series:
    """Combine per-size (mean, std, n) groups into one, as if over all underlying values."""
    n = group["n_seeds"].sum()
    mean = (group["mean"] * group["n_seeds"]).sum() / n
    ss = ((group["n_seeds"] - 1) * group["std"] ** 2 + group["n_seeds"] * (group["mean"] - mean) ** 2).sum()
    return pd.Series({"mean": mean, "std": math.sqrt(ss / (n - 1)) if n > 1 else 0.0, "n_seeds": int(n)})
