"""Comparison tables from runs' ``metrics.json`` (``locus table KIND``): which metric each kind shows,
its caption, and the LaTeX + CSV written (layouts in :mod:`locus.render.latex`).

Kinds (paper layouts):

- ``routing``: ``tab:concise_routing_correctness``; rows = methods + Oracle / Best single / Random,
  columns = routing then correctness accuracy at each training size;
- ``routing-by-dataset`` / ``correctness-by-dataset``: appendix B ``tab:routing_acc_by_dataset_full`` /
  ``tab:correctness_pred_by_dataset_full``; rows = approach × training size, columns = Overall + benchmarks.

The CSV beside the .tex holds every printed number (percentages) and its emphasis. Captions name the data
set by the label given, else by the name recorded in the runs. Every comparison carries a paired bootstrap
over test queries (:func:`significance`); with a generated data set's truth (``--truth``, routing kinds)
the tables add the expected routing accuracy, the Bayes ceiling and the best single model chosen on the
training split's true probabilities (:mod:`locus.experiments.expected`).
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
from locus.render import latex, write_csv
from locus.render.labels import escape
from locus.render.latex import MARK

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
        f"difference to {reference_label or latex.method_label(reference)} with its {level} paired bootstrap interval."
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
        f"\\texttt{{diff\\_to\\_best\\_single\\_pct}}). {latex.NEAR_CONSTANT_MARK}: near-constant router, "
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
            text += " " + routing_sentences(sig, settings, latex.method_label)
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

    The best approach is the one printed in bold (ranked on the printed means, :func:`latex.emphasis`;
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
    (the interval lies above 0; the condition for bold / underline, :func:`locus.render.latex.cell_emphasis`),
    and the cell's routing diversity (:data:`locus.render.latex.DIVERSITY_COLUMNS`)."""
    check_reference(coll, reference)
    agg = coll.method_agg
    rows = []
    for metric, size, bench in columns(kind, coll):
        sel = agg[(agg["metric"] == metric) & (agg["train_size"] == size) & (agg["benchmark"] == bench)]
        mean = dict(zip(sel["method"], sel["mean"]))
        emph = dict(zip(coll.methods, latex.emphasis([mean.get(m, math.nan) for m in coll.methods])))
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
            d = div.get((m, size), {}) if metric in latex.ROUTED else {}
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
                    **{c: d.get(c) for c in latex.DIVERSITY_COLUMNS},
                    "n_queries": res.n_queries,
                    "n_boot": res.n_resamples,
                    "confidence": res.confidence,
                }
            )
    return pd.DataFrame(rows, columns=latex.SIGNIFICANCE_COLUMNS)


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
        return latex.routing_table(
            coll.method_agg, coll.ref_agg, coll.methods, coll.sizes, cap, label, significance=sig, truth_refs=truth_refs
        )
    metric = METRIC[kind]
    refs = coll.ref_agg if metric == "routing_acc" else None
    return latex.by_dataset_table(
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
