"""Blocks of the data set and the comparison tables: the data summary, routing and correctness accuracy by training
size (``locus table``: routing, by data set), with routing diversity, and the dimension and encoder ablations."""

from __future__ import annotations

import math
from pathlib import Path

# *_COLUMNS: each CSV's columns, from the module that writes it: a block needs every column its writer writes (a CSV
# without one was written by another version of locus), so a column renamed there is renamed here too
from locus.errors import DataError
from locus.experiments.report.markdown import fmt, md_table, number_of, unique
from locus.experiments.report.source import Source, dataset_label, dataset_name, provenance, read_rows
from locus.experiments.tables import CSV_COLUMNS as TABLE_COLUMNS

OVERALL = "Overall"


def block_data(src: Source) -> list[str]:
    """The data set's summary: its sizes and the split table (oracle, best single model, random)."""
    rel = f"data/{dataset_name(src)}/summary.md"
    path = src.path(rel)
    label = dataset_label(src)
    lines = path.read_text(encoding="utf-8").splitlines()
    bullets = [ln for ln in lines if ln.startswith(("- models:", "- total parameters", "- queries:"))]
    try:
        start = lines.index("## Splits")
    except ValueError:
        raise DataError(f"{path}: no '## Splits' section; rebuild it with locus summary") from None
    table = []
    for ln in lines[start + 1 :]:
        if ln.startswith("|"):
            table.append(ln)
        elif table:
            break
    if not table:
        raise DataError(f"{path}: the '## Splits' section has no table; rebuild it with locus summary")
    return [f"**{label}**", ""] + bullets + [""] + table + ["", provenance(src, [rel])]


ABLATION_HEADINGS = {
    "dim": "LOCUS's embedding dimension d · training queries per model",
    "encoder": "LOCUS's query encoder · training queries per model",
}
METRIC_TITLES = {
    "routing_acc": "Routing accuracy (%)",
    "expected_routing": "Expected routing accuracy (%)",
    "correctness_acc": "Correctness accuracy (%)",
}


def _cell(row: dict, path: Path) -> str:
    mean = number_of(row["mean_pct"], path, "mean_pct")
    std = number_of(row["std_pct"], path, "std_pct")
    n = int(number_of(row["n_seeds"], path, "n_seeds")) if row["n_seeds"] not in ("", None) else 0
    text = fmt(mean)
    if n > 1 and not math.isnan(std) and (row["kind"] != "reference" or std > 1e-12):
        text += f" ± {fmt(std)}"
    if row["emphasis"] == "best":
        text = f"**{text}**"
    if row["not_significant_vs_best"] in ("True", "true", "1"):
        text += " †"
    if row.get("near_constant") in ("True", "true", "1") and row["benchmark"] == OVERALL:
        text += " §"
    lo, hi = (
        number_of(row["ci_low_pct"], path, "ci_low_pct"),
        number_of(row["ci_high_pct"], path, "ci_high_pct"),
    )
    if row["approach"] != row["reference"] and not (math.isnan(lo) or math.isnan(hi)):
        text += f" [{fmt(lo, 1, signed=True)}, {fmt(hi, 1, signed=True)}]"
    return text


def comparison(src: Source, rel: str, benchmark: str = OVERALL, note: bool = True) -> list[str]:
    """One Markdown table per metric of a ``locus table`` CSV (routing, routing-by-dataset, ...):
    rows = approaches, columns = training sizes, at `benchmark`."""
    path = src.path(rel)
    rows = [r for r in read_rows(path, TABLE_COLUMNS) if r["benchmark"] == benchmark]
    if not rows:
        raise DataError(f"{path}: no rows for benchmark {benchmark!r}; rebuild it")
    sizes = unique(r["train_size"] for r in rows if r["train_size"] not in ("", None))
    out = []
    for metric in unique(r["metric"] for r in rows):
        mrows = [r for r in rows if r["metric"] == metric]
        table = []
        for approach in unique(r["approach"] for r in mrows):
            arows = [r for r in mrows if r["approach"] == approach]
            label = arows[0]["label"]
            if arows[0]["kind"] == "reference":
                label = f"*{label}*"
            by_size = {r["train_size"]: r for r in arows}
            if set(by_size) == {""}:  # a property of the data set: the same in every column
                cells = [_cell(by_size[""], path)] * len(sizes)
            else:
                cells = [_cell(by_size[s], path) if s in by_size else "–" for s in sizes]
            table.append([label] + cells)
        out += [f"{METRIC_TITLES.get(metric, metric)}:", ""]
        heading = ABLATION_HEADINGS.get(rows[0].get("ablation"), "training queries per model")
        out += md_table([heading] + [f"{int(s):,}" for s in sizes], table) + [""]
        if metric == "routing_acc":
            out += diversity_table(mrows, sizes, heading, path)
    sig = [r for r in rows if r["n_boot"] not in ("", None) and r["kind"] == "method"]
    if sig and note:
        r = sig[0]
        conf = number_of(r["confidence"], path, "confidence")
        out.append(
            f"In brackets: the paired-bootstrap {conf:.0%} interval of the difference to "
            f"{_label_of(rows, r['reference'])} ({int(float(r['n_boot'])):,} resamples of the "
            f"{int(float(r['n_queries'])):,} test queries); † = not significantly different from the "
            "column's best."
            + (
                " Routing cells are bold only when also significantly above the best single model (paired "
                "bootstrap against it); § = near-constant router (≥ 90% of the test queries to one model)."
                if any("beats_best_single" in row for row in sig)
                else ""
            )
        )
        out.append("")
    return out + [provenance(src, [rel])]


def diversity_table(rows: list[dict], sizes: list[str], heading: str, path: Path) -> list[str]:
    """Routing diversity of each approach (CSV ``top_model_share``, ``n_models_used``, ``top_model``): the
    share of test queries sent to its most-chosen model and how many models it uses; nothing for CSVs
    written before the columns existed."""
    method_rows = [r for r in rows if r["kind"] == "method" and r.get("top_model_share") not in (None, "")]
    if not method_rows:
        return []
    table = []
    for approach in unique(r["approach"] for r in method_rows):
        by_size = {r["train_size"]: r for r in method_rows if r["approach"] == approach}
        cells = []
        for s in sizes:
            r = by_size.get(s)
            if r is None:
                cells.append("–")
                continue
            share = number_of(r["top_model_share"], path, "top_model_share")
            used = number_of(r["n_models_used"], path, "n_models_used")
            cells.append(f"{fmt(100 * share, 1)}% {r['top_model']} ({fmt(used, 0)} models)")
        table.append([by_size[next(iter(by_size))]["label"]] + cells)
    return (
        ["Routing diversity (share of the test queries sent to the most-chosen model; models used):", ""]
        + md_table([heading] + [f"{int(s):,}" for s in sizes], table)
        + [""]
    )


def _label_of(rows: list[dict], approach: str) -> str:
    return next((r["label"] for r in rows if r["approach"] == approach), approach)


def block_routing(src):
    return comparison(src, "tables/routing.csv")


def block_routing_by_dataset(src):
    return comparison(src, "tables/routing_by_dataset.csv")


def block_correctness_by_dataset(src):
    return comparison(src, "tables/correctness_by_dataset.csv")


def _ablation(src, by: str) -> list[str]:
    """The routing and correctness tables of one ablation (overall column), one provenance line."""
    routing = comparison(src, f"tables/{by}_ablation_routing.csv", note=False)[:-1]
    correctness = comparison(src, f"tables/{by}_ablation_correctness.csv")[:-1]
    return (
        routing
        + correctness
        + [
            provenance(
                src,
                [
                    f"tables/{by}_ablation_routing.csv",
                    f"tables/{by}_ablation_correctness.csv",
                ],
            )
        ]
    )


def block_dim_ablation(src):
    return _ablation(src, "dim")


def block_encoder_ablation(src):
    return _ablation(src, "encoder")
