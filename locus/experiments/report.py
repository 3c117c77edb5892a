"""Markdown tables of a finished run, pasted into a documentation page between markers.

A block of a Markdown file is a marker pair; everything between the two lines is generated, everything
outside them is left as written::

    <!-- locus-report:routing -->
    ...
    <!-- /locus-report:routing -->

:func:`render_block` renders one named block (:data:`BLOCKS`) from the CSVs of a results directory
(``tables/*.csv``, ``figures/*.csv``, ``data/{dataset}/summary.md``); :func:`update_text` rewrites every
block of a page; :func:`stale_blocks` names those that differ. Numbers are never typed here: each block
only formats what the workflow wrote.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from locus.errors import ConfigError, DataError

# each CSV's columns, from the module that writes it: a block needs every column its writer writes (a CSV without
# one was written by another version of locus), so a column renamed there is renamed here too
from locus.experiments.active_onboarding import FIGURE_COLUMNS as ACTIVE_FIGURE_COLUMNS
from locus.experiments.active_onboarding import TABLE_COLUMNS as ACTIVE_TABLE_COLUMNS
from locus.experiments.calibration import CSV_COLUMNS as CALIBRATION_COLUMNS
from locus.experiments.figures import CSV_COLUMNS as SAMPLE_EFFICIENCY_COLUMNS
from locus.experiments.onboarding import CSV_COLUMNS as ONBOARDING_COLUMNS
from locus.experiments.precision_effect import CSV_COLUMNS as PRECISION_COLUMNS
from locus.experiments.regeneration import HEATMAP_COLUMNS
from locus.experiments.routing_decisions import AIQ_COLUMNS, SELECTIVE_COLUMNS
from locus.experiments.tables import CSV_COLUMNS as TABLE_COLUMNS
from locus.experiments.time_complexity import CSV_COLUMNS as TIME_COLUMNS
from locus.geometry.evalset_robustness import CSV_COLUMNS as EVALSET_COLUMNS
from locus.geometry.hypothetical import CSV_COLUMNS as HYPOTHETICAL_COLUMNS
from locus.geometry.neighbours import FALLBACK_COLUMNS, PROXY_COLUMNS
from locus.geometry.portfolio import CURVE_COLUMNS as PORTFOLIO_COLUMNS
from locus.render.labels import plain_label

MARKER = re.compile(r"^<!-- locus-report:([A-Za-z0-9_-]+) -->[ \t]*$", re.MULTILINE)
END = "<!-- /locus-report:{name} -->"
OVERALL = "Overall"


# --------------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """Where a block reads from: the results directory and the data set the run was made on."""

    results: Path
    dataset: str | None = None
    others: tuple[Source, ...] = ()  # runs on other pools, set beside this one (`locus report --also`)

    def path(self, rel: str) -> Path:
        return self.results / rel

    def shown(self, rel: str) -> str:
        """`rel` as a reader sees it: under the results directory's own name (``results/tables/x.csv``)."""
        return f"{self.results.name}/{rel}"


def read_rows(path: Path, required: Sequence[str] = ()) -> list[dict[str, str]]:
    """The rows of a CSV written by the workflow, every cell as text; a missing file, a ragged row or a
    missing column is a :class:`DataError` that names the file and the fix."""
    if not path.is_file():
        raise DataError(
            f"{path}: not found; build it first (snakemake --cores 2 {_target(path)}) or point "
            "--results at a finished run"
        )
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header:
                raise DataError(f"{path}: empty file, expected a CSV with a header row; rebuild it")
            rows = []
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise DataError(
                        f"{path} line {reader.line_num}: {len(row)} fields, the header has "
                        f"{len(header)}; the file is damaged: rebuild it"
                    )
                rows.append(dict(zip(header, row)))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: not a readable CSV ({exc}); rebuild it") from None
    missing = [c for c in required if c not in header]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {', '.join(missing)}; it was written by another version of locus: rebuild it"
        )
    if not rows:
        raise DataError(f"{path}: no rows; rebuild it")
    return rows


def _target(path: Path) -> str:
    """The workflow target that writes `path` (a table's .tex, a figure's .pdf), from ``results/`` on."""
    parts = path.parts
    i = max((k for k, p in enumerate(parts) if p == "results"), default=-1)
    rel = "/".join(parts[i:]) if i >= 0 else str(path)
    if path.suffix in (".csv", ".json") and ("tables" in parts or "figures" in parts):
        return str(Path(rel).with_suffix(".tex" if "tables" in parts else ".pdf"))
    return rel


def number_of(text: str, path: Path, column: str) -> float:
    if text is None or str(text).strip() in ("", "nan", "NaN", "<NA>", "None"):
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise DataError(f"{path}: column {column} holds {text!r}, expected a number; rebuild the file") from None


def fmt(value: float, decimals: int = 2, signed: bool = False) -> str:
    """A number for a table ('–' when undefined); `signed` writes + before positive values, − for minus."""
    if value is None or math.isnan(value):
        return "–"
    signed = signed and round(value, decimals) != 0
    text = f"{value:+,.{decimals}f}" if signed else f"{value:,.{decimals}f}"
    if text.lstrip("-").strip("0.,") == "":  # -0.0 reads 0.0
        text = text.lstrip("-")
    return text.replace("-", "−")


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (the first column left-aligned, the others right-aligned)."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def unique(values) -> list:
    return list(dict.fromkeys(values))


# --------------------------------------------------------------------------------------------------
# the data set
# --------------------------------------------------------------------------------------------------
def dataset_name(src: Source) -> str:
    """The data set of the run: `src.dataset`, else the only one under ``data/``."""
    if src.dataset:
        return src.dataset
    data = src.path("data")
    names = sorted(p.name for p in data.glob("*") if (p / "summary.md").is_file()) if data.is_dir() else []
    if len(names) != 1:
        found = f"found {', '.join(names)}" if names else "found none"
        raise ConfigError(f"{data}: expected one data set with a summary.md ({found}); name it with --dataset")
    return names[0]


def dataset_label(src: Source) -> str:
    """The data set's label: the title of its ``summary.md`` (``# Data summary: LABEL``)."""
    path = src.path(f"data/{dataset_name(src)}/summary.md")
    if not path.is_file():
        raise DataError(f"{path}: not found; build it first (snakemake --cores 2 {_target(path)}) or pass --dataset")
    first = path.read_text(encoding="utf-8").splitlines()[:1]
    prefix = "# Data summary: "
    if not first or not first[0].startswith(prefix):
        raise DataError(f"{path}: the first line should be '{prefix}LABEL'; rebuild it with locus summary")
    return first[0][len(prefix) :].strip()


def made_on(src: Source) -> str:
    """Which machine(s) and code made the training runs under `src` (their ``metrics.json`` provenance):
    "CPU (device), locus VERSION", most runs first, with counts when they differ."""
    from locus import run_artifacts as ra

    found: dict[str, int] = {}
    for path in sorted(src.path("runs").glob("**/metrics.json")):
        record = ra.read_metrics(path, required=()).get("provenance") or {}
        where = record.get("device") if record.get("device", "cpu") != "cpu" else record.get("cpu")
        key = f"{where}, locus {record.get('code')}" if record else "an unrecorded machine (runs older than provenance)"
        found[key] = found.get(key, 0) + 1
    if not found:
        return ""
    if len(found) == 1:
        return f" Runs made on {next(iter(found))}."
    return (
        " Runs made on "
        + "; ".join(f"{k} ({n} run{'' if n == 1 else 's'})" for k, n in sorted(found.items(), key=lambda kv: -kv[1]))
        + "."
    )


def provenance(src: Source, files: list[str], extra: str = "") -> str:
    """The line under each block: what it was generated from, and on which machine by which code."""
    shown = ", ".join(f"`{src.shown(f)}`" for f in files)
    targets = " ".join(unique(_target(Path("results") / f) for f in files))
    return (
        f"*Data: {dataset_label(src)}. Generated by `locus report` from {shown}{extra}; rebuilt by "
        f"`snakemake --cores 2 {targets}`.{made_on(src)}*"
    )


# --------------------------------------------------------------------------------------------------
# blocks
# --------------------------------------------------------------------------------------------------
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


def columns_table(
    src: Source,
    rel: str,
    written: list[str],
    columns: list[tuple[str, str, int, float]],
    keep: Callable[[dict], bool] | None = None,
) -> list[str]:
    """A Markdown table of chosen CSV columns: (header, column, decimals, scale; decimals -1 = the text as
    written), from a CSV whose writer writes the columns `written`."""
    path = src.path(rel)
    rows = [r for r in read_rows(path, written) if keep is None or keep(r)]
    if not rows:
        raise DataError(f"{path}: no rows to show; rebuild it")
    body = [[r[c] if d < 0 else fmt(k * number_of(r[c], path, c), d) for _, c, d, k in columns] for r in rows]
    return md_table([h for h, _, _, _ in columns], body) + ["", provenance(src, [rel])]


def block_routing(src):
    return comparison(src, "tables/routing.csv")


def block_routing_by_dataset(src):
    return comparison(src, "tables/routing_by_dataset.csv")


def block_correctness_by_dataset(src):
    return comparison(src, "tables/correctness_by_dataset.csv")


def block_precision_effect(src):
    return columns_table(
        src,
        "tables/precision_effect.csv",
        PRECISION_COLUMNS,
        [
            ("LOCUS run, n", "train_size", 0, 1),
            ("seed", "seed", -1, 1),
            ("routing % fp32", "routing_acc_float32", 2, 100),
            ("routing % bf16", "routing_acc_bfloat16", 2, 100),
            ("correctness % fp32", "correctness_acc_float32", 2, 100),
            ("correctness % bf16", "correctness_acc_bfloat16", 2, 100),
            ("same routed model %", "routing_agreement", 1, 100),
            ("labels flipped %", "label_flips", 2, 100),
            ("max rel. ‖Δz‖ %", "max_rel_z_diff", 2, 100),
        ],
    )


def block_time_complexity(src):
    """Measured embedding and prediction times (seconds) by size, beside the paper's and the targets."""
    rel = "figures/time_complexity.csv"
    path = src.path(rel)
    rows = read_rows(path, TIME_COLUMNS)
    measured = [r for r in rows if r["source"] == "measured"]
    if not measured:
        raise DataError(f"{path}: no measured rows; rebuild it")
    sizes = sorted(unique(r["n"] for r in rows), key=lambda n: number_of(n, path, "n"))
    body = []
    for what, noun in (
        ("embed", "embed {m} models"),
        ("predict", "predict for {m} models"),
    ):
        for key in unique((r["n_models"], r["precision"]) for r in measured if r["what"] == what):
            part = {r["n"]: r for r in measured if r["what"] == what and (r["n_models"], r["precision"]) == key}
            body.append(
                [f"{noun.format(m=key[0])}, {key[1]}"]
                + [fmt(number_of(part[n]["median_s"], path, "median_s"), 3) if n in part else "–" for n in sizes]
            )
        for r in rows:
            if r["what"] == what and r["source"] in ("paper", "target"):
                label = (
                    f"{noun.format(m=r['n_models'])}: {'paper' if r['source'] == 'paper' else 'target'}, "
                    f"{r['device_name']}"
                )
                body.append(
                    [label] + [fmt(number_of(r["median_s"], path, "median_s"), 3) if n == r["n"] else "" for n in sizes]
                )
    machine = (
        f"; measured on {measured[0]['cpu_model'] or measured[0]['device_name']}, {measured[0]['threads']} threads"
    )
    return md_table(
        ["median seconds; n = evaluations per model (embed) or queries (predict)"] + [_num_label(n) for n in sizes],
        body,
    ) + ["", provenance(src, [rel], machine)]


def _pick(rows: list[dict], **conds) -> dict | None:
    """The first row whose columns equal `conds` (as text), or None."""
    return next((r for r in rows if all(r.get(k) == v for k, v in conds.items())), None)


def _pct_of(row: dict | None, column: str, path: Path, decimals: int = 1) -> str:
    return "–" if row is None else fmt(100 * number_of(row[column], path, column), decimals)


def block_neighbours(src):
    """Nearest-neighbour agreement at k = 1 per method, with the best possible neighbour and a random one."""
    rel = "figures/nearest_neighbor_proxies.csv"
    path = src.path(rel)
    rows = read_rows(path, PROXY_COLUMNS)
    body = []
    for method in unique(r["method"] for r in rows):
        own = [r for r in rows if r["method"] == method]
        body.append(
            [
                plain_label(method),
                _pct_of(_pick(own, curve="embedding_neighbour", k="1"), "agreement", path),
                _pct_of(_pick(own, curve="best_possible", k="1"), "agreement", path),
                _pct_of(_pick(own, curve="random_other"), "agreement", path),
            ]
        )
    n = rows[0]["train_size"]
    return md_table(
        [
            f"nearest-neighbour agreement on test, k = 1 (n = {n})",
            "embedding neighbour",
            "best possible (chosen with test labels)",
            "random other model",
        ],
        body,
    ) + ["", provenance(src, [rel])]


def block_fallback(src):
    """Routing accuracy kept when the routed model is replaced by its nearest neighbour (k = 1)."""
    rel = "figures/fallback_routing.csv"
    path = src.path(rel)
    rows = read_rows(path, FALLBACK_COLUMNS)
    body = []
    for method in unique(r["method"] for r in rows):
        own = [r for r in rows if r["method"] == method]
        nn, rnd = (
            _pick(own, curve="embedding_neighbour", k="1"),
            _pick(own, curve="random_other"),
        )
        body.append(
            [
                plain_label(method),
                _pct_of(_pick(own, curve="original"), "accuracy", path, 2),
                _pct_of(nn, "accuracy", path, 2),
                _pct_of(nn, "retention", path),
                _pct_of(rnd, "retention", path),
            ]
        )
    return md_table(
        [
            "fallback routing (test)",
            "routing accuracy %",
            "nearest neighbour instead, %",
            "kept, %",
            "kept by a random other model, %",
        ],
        body,
    ) + ["", provenance(src, [rel])]


def block_portfolio(src):
    """The smallest portfolio (models, or a parameter budget) that routes as well as the whole pool."""
    rel = "figures/model_portfolio.csv"
    path = src.path(rel)
    rows = read_rows(path, PORTFOLIO_COLUMNS)
    full_row = _pick(rows, method="full-pool")
    if full_row is None:
        raise DataError(f"{path}: no full-pool row; rebuild it")
    full = number_of(full_row["routing_acc"], path, "routing_acc")
    body = []
    for method, key, unit in (
        ("k-center", "k", "models"),
        ("k-medoids", "k", "models"),
        ("random", "k", "models"),
        ("coverage-greedy", "budget_b", "B parameters"),
        ("random-feasible", "budget_b", "B parameters"),
    ):
        part = sorted(
            (r for r in rows if r["method"] == method),
            key=lambda r: number_of(r[key], path, key),
        )
        if not part:
            continue
        cells = []
        for target in (full - 1e-9, full - 1.0):
            hit = next(
                (r for r in part if number_of(r["routing_acc"], path, "routing_acc") >= target),
                None,
            )
            cells.append("never" if hit is None else f"{fmt(number_of(hit[key], path, key), 0)} {unit}")
        body.append([method] + cells)
    total = number_of(full_row["params_b"], path, "params_b")
    pool = (
        f"The whole pool: {fmt(number_of(full_row['n_models'], path, 'n_models'), 0)} models, "
        f"{fmt(total, 0)}B parameters, routing accuracy {fmt(full)}% on test."
    )
    return md_table(
        [
            "portfolio selector",
            "reaches the whole pool's routing accuracy",
            "within 1 point",
        ],
        body,
    ) + ["", pool, "", provenance(src, [rel])]


def _pivot(
    rows: list[dict],
    row_key: str,
    col_key: str,
    value: str,
    path: Path,
    scale: float = 100.0,
    decimals: int = 1,
) -> tuple[list[str], list[str], dict]:
    """(row keys, column keys sorted as numbers, {(row, col): text}) of a long table."""
    cols = sorted(unique(r[col_key] for r in rows), key=lambda c: number_of(c, path, col_key))
    cells = {(r[row_key], r[col_key]): fmt(scale * number_of(r[value], path, value), decimals) for r in rows}
    return unique(r[row_key] for r in rows), cols, cells


def _num_label(text: str) -> str:
    value = float(text)
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def block_evalset_robustness(src):
    """Test accuracy with every model re-embedded from subsampled / partly overlapping evaluation sets."""
    rel = "figures/perf_vs_size_and_overlap.csv"
    path = src.path(rel)
    rows = read_rows(path, EVALSET_COLUMNS)
    means = [r for r in rows if r["kind"] == "mean"]
    ref, single = _pick(rows, kind="reference"), _pick(rows, kind="best_single")
    if not means or ref is None:
        raise DataError(f"{path}: no mean or reference rows; rebuild it")
    out = []
    for panel, title in (
        ("size", "evaluations per model"),
        ("overlap", "overlap α with the reference set"),
    ):
        part = [r for r in means if r["panel"] == panel]
        if not part:
            continue
        cols = sorted(
            unique(r["setting"] for r in part),
            key=lambda c: number_of(c, path, "setting"),
        )
        body = [
            [label] + [fmt(100 * number_of(_pick(part, setting=c)[metric], path, metric), 1) for c in cols]
            for label, metric in (
                ("routing %", "routing_acc"),
                ("correctness %", "correctness_acc"),
            )
        ]
        out += md_table([title] + [_num_label(c) for c in cols], body) + [""]
    line = (
        f"With the run's own embeddings: routing {fmt(100 * number_of(ref['routing_acc'], path, 'routing_acc'), 1)}%, "
        f"correctness {fmt(100 * number_of(ref['correctness_acc'], path, 'correctness_acc'), 1)}%"
    )
    if single is not None:
        line += f"; best single model (chosen on validation) {fmt(100 * number_of(single['routing_acc'], path, 'routing_acc'), 1)}%"
    return out + [line + ".", "", provenance(src, [rel])]


def block_onboarding(src):
    """Correctness accuracy on held-out models embedded from k of their evaluations, per encoder run."""
    rel = "figures/sample_eff_ood_test.csv"
    path = src.path(rel)
    rows = [r for r in read_rows(path, ONBOARDING_COLUMNS) if r["kind"] == "cell"]
    if not rows:
        raise DataError(f"{path}: no cell rows; rebuild it")
    keys, cols, cells = _pivot(rows, "row", "k", "accuracy", path, decimals=2)
    trained = {r["row"]: r["n_train_models"] for r in rows}
    keys = sorted(keys, key=lambda k: -number_of(trained[k], path, "n_train_models"))
    body = [
        [f"encoder trained on {_num_label(trained[k])} models" + (" (all)" if k == "all" else "")]
        + [cells.get((k, c), "–") for c in cols]
        for k in keys
    ]
    return md_table(
        ["held-out models' correctness %, embedded from k evaluations"] + [_num_label(c) for c in cols],
        body,
    ) + ["", provenance(src, [rel])]


def block_active_onboarding(src):
    """Held-out models' correctness by selector and number of evaluations k, and the k each selector needs
    to reach random selection's largest-k accuracy."""
    fig, tab = "figures/active_onboarding.csv", "tables/active_onboarding.csv"
    fpath, tpath = src.path(fig), src.path(tab)
    cells = [r for r in read_rows(fpath, ACTIVE_FIGURE_COLUMNS) if r["kind"] == "cell"]
    if not cells:
        raise DataError(f"{fpath}: no cell rows; rebuild it")
    keys, cols, grid = _pivot(cells, "selector", "k", "accuracy", fpath, decimals=2)
    out = md_table(
        ["held-out models' correctness %, k evaluations chosen by"] + [_num_label(c) for c in cols],
        [[k] + [grid.get((k, c), "–") for c in cols] for k in keys],
    )
    reach = read_rows(tpath, ACTIVE_TABLE_COLUMNS)
    if not reach:
        raise DataError(f"{tpath}: no rows; rebuild it")

    def k_and_diff(r, k_col, prefix):
        if r[k_col] == "":
            return "–", "–"
        diff = [number_of(r[f"{prefix}{c}"], tpath, f"{prefix}{c}") for c in ("", "_low", "_high")]
        return _num_label(
            r[k_col]
        ), f"{fmt(100 * diff[0], 2, True)} [{fmt(100 * diff[1], 2, True)}, {fmt(100 * diff[2], 2, True)}]"

    body = []
    for r in reach:
        body.append(
            [
                r["selector"],
                *k_and_diff(r, "k_reach", "k_reach_diff"),
                *k_and_diff(r, "k_not_below_onward", "k_not_below_onward_diff"),
            ]
        )
    ref = next((r for r in reach if r["selector"] == "random"), reach[0])  # the reference selector
    ref_k = _num_label(ref["reference_k"])
    target = fmt(100 * number_of(ref["reference_accuracy"], tpath, "reference_accuracy"), 2)
    fast = [
        r["selector"]
        for r in reach
        if r is not ref
        and r["k_reach"] != ""
        and number_of(r["k_reach"], tpath, "k_reach") <= number_of(ref["reference_k"], tpath, "reference_k") / 4
    ]
    verdict = (
        f"Reaching random's k = {ref_k} accuracy with at most a quarter of the evaluations: {', '.join(fast)}."
        if fast
        else f"No selector reaches random's k = {ref_k} accuracy (mean) with a quarter of the evaluations or fewer."
    )
    return (
        out
        + [
            "",
            f"Target: random selection at k = {ref_k}, {target}%. Differences to it in points, paired bootstrap over held-out models:",
            "",
        ]
        + md_table(
            [
                "selector",
                "k reaching it",
                "difference [95% CI]",
                "k onward not significantly below",
                "difference [95% CI]",
            ],
            body,
        )
        + ["", verdict, "", provenance(src, [fig, tab])]
    )


def _diff_ci(row: dict, path: Path, scale: float = 1.0, decimals: int = 3) -> str:
    vals = [number_of(row[c], path, c) * scale for c in ("diff", "ci_low", "ci_high")]
    return f"{fmt(vals[0], decimals, True)} [{fmt(vals[1], decimals, True)}, {fmt(vals[2], decimals, True)}]"


def block_calibration(src):
    """Raw vs calibrated test ECE, Brier score and log-loss per method, with paired bootstrap intervals."""
    rel = "tables/calibration.csv"
    path = src.path(rel)
    rows = read_rows(path, CALIBRATION_COLUMNS)
    if not rows:
        raise DataError(f"{path}: no rows; rebuild it")
    body, helped = [], []
    for method in unique(r["method"] for r in rows):
        by = {r["metric"]: r for r in rows if r["method"] == method}
        cells = []
        for metric in ("ece", "brier", "log_loss"):
            r = by.get(metric)
            if r is None:
                cells.append("–")
                continue
            raw, cal = (number_of(r[c], path, c) for c in ("raw", "calibrated"))
            cells.append(f"{fmt(raw, 3)} → {fmt(cal, 3)}, {_diff_ci(r, path)}")
        if "ece" in by and number_of(by["ece"]["ci_high"], path, "ci_high") < 0:
            helped.append(by["ece"]["label"])
        body.append([next(iter(by.values()))["label"], *cells, next(iter(by.values()))["maps"]])
    n = len(body)
    verdict = f"Calibration lowers the test ECE significantly for {len(helped)} of {n} methods" + (
        f" ({', '.join(helped)})." if helped and len(helped) < n else "."
    )
    return md_table(["method", "ECE raw → calibrated, Δ [95% CI]", "Brier", "log-loss", "map"], body) + [
        "",
        verdict,
        "",
        provenance(src, [rel]),
    ]


def block_selective(src):
    """Selective routing per method and alpha: the certified threshold, coverage, test risk, accuracy with
    the fallback and how often the guarantee failed."""
    rel = "tables/selective_routing.csv"
    path = src.path(rel)
    rows = read_rows(path, SELECTIVE_COLUMNS)
    rows = [r for r in rows if r["fallback"] == "best_single"] or [r for r in rows if r["fallback"] != "abstain"]
    if not rows:
        raise DataError(f"{path}: no rows with a model fallback; rebuild it")
    body, worst = [], 0.0
    for r in rows:
        viol = number_of(r["violation_freq"], path, "violation_freq")
        worst = max(worst, viol)
        none, seeds = int(number_of(r["n_none"], path, "n_none")), int(number_of(r["n_seeds"], path, "n_seeds"))
        tau = (
            "none"
            if none == seeds
            else fmt(number_of(r["tau_mean"], path, "tau_mean"), 2) + (f" ({none} none)" if none else "")
        )
        risk = "–" if r["test_risk"] == "" else fmt(100 * number_of(r["test_risk"], path, "test_risk"), 1)
        shown = fmt(viol, 3)
        if r.get("violation_ci_low", "") != "":  # its Clopper-Pearson interval; † above δ, ‡ the interval too
            low, high = (number_of(r[c], path, c) for c in ("violation_ci_low", "violation_ci_high"))
            mark = (
                "‡" if r["violation_ci_above_delta"] == "True" else "†" if r["violation_above_delta"] == "True" else ""
            )
            shown = f"{shown}{mark} [{fmt(low, 3)}, {fmt(high, 3)}]"
        true_risk = "–"
        if r.get("true_risk", "") != "":  # the generator's true risk of the routed test queries at τ
            true_risk = fmt(100 * number_of(r["true_risk"], path, "true_risk"), 1) + (
                "" if r["true_risk_ok"] == "True" else " *"
            )
        body.append(
            [
                plain_label(r["method"]),
                fmt(number_of(r["alpha"], path, "alpha"), 2),
                tau,
                fmt(100 * number_of(r["coverage"], path, "coverage"), 1),
                risk,
                true_risk,
                fmt(100 * number_of(r["accuracy"], path, "accuracy"), 1),
                shown,
            ]
        )
    delta = fmt(number_of(rows[0]["delta"], path, "delta"), 2)
    checks = int(number_of(rows[0]["n_checks"], path, "n_checks"))
    return md_table(
        [
            "method",
            "α",
            "τ (validation)",
            "coverage %",
            "test risk %",
            "true risk %",
            "accuracy % (fallback: best single)",
            "violations [95% CI]",
        ],
        body,
    ) + [
        "",
        f"δ = {delta}; violations: share of {checks} checks (seeds × random re-splits of validation and test; τ "
        f"certified on one part, risk on the other) whose risk exceeds α, with its Clopper–Pearson interval (†: above "
        f"δ, ‡: the interval too); the largest is {fmt(worst, 3)}. True risk: the generator's expected error of the "
        "routed test queries at τ, where the pool has its truth (*: above α).",
        "",
        provenance(src, [rel]),
    ]


def block_aiq(src):
    """AIQ (area under the cost-quality frontier over the largest cost) per router, with bootstrap intervals."""
    rel = "tables/aiq.csv"
    path = src.path(rel)
    rows = read_rows(path, AIQ_COLUMNS)
    if not rows:
        raise DataError(f"{path}: no rows; rebuild it")

    def interval(r, column):
        if r[column] == "":
            return "–"
        vals = [number_of(r[c], path, c) for c in (column, f"{column}_ci_low", f"{column}_ci_high")]
        return f"{fmt(vals[0], 3)} [{fmt(vals[1], 3)}, {fmt(vals[2], 3)}]"

    body = [
        [
            plain_label(r["router"]) if r["kind"] == "method" else r["router"],
            interval(r, "aiq"),
            interval(r, "aiq_range"),
            interval(r, "diff_vs_mix"),
        ]
        for r in rows
    ]
    methods = [r for r in rows if r["kind"] == "method"]
    best = max(methods, key=lambda r: number_of(r["aiq"], path, "aiq")) if methods else None
    note = f"Cost per query: `{rows[0]['cost_source']}` (largest {fmt(number_of(rows[0]['max_cost'], path, 'max_cost'), 2)})."
    if best is not None:
        overlap = [
            plain_label(r["router"])
            for r in methods
            if r is not best
            and number_of(r["aiq_ci_high"], path, "aiq_ci_high") >= number_of(best["aiq_ci_low"], path, "aiq_ci_low")
        ]
        note += f" Highest method AIQ: {plain_label(best['router'])}" + (
            f"; its interval overlaps those of {', '.join(overlap)}." if overlap else "."
        )
    note += (
        " AIQ / c_max divides by the largest cost (RouterBench's code), AIQ / range by the cost range (its paper); "
        "Δ vs mix: the router's AIQ / c_max minus the two-model-mix frontier's, on the same test resamples."
    )
    headers = ["router", "AIQ / c_max [95% CI]", "AIQ / range [95% CI]", "Δ vs mix, paired [95% CI]"]
    return md_table(headers, body) + ["", note, "", provenance(src, [rel])]


def block_regeneration(src):
    """EmbedLLM embeddings re-learned with the decoder frozen, against LOCUS's one-pass re-embedding."""
    rel = "figures/relearn_embedllm_heatmap_test_disagreement.csv"
    path = src.path(rel)
    rows = read_rows(path, HEATMAP_COLUMNS)

    def span(part, column, scale, decimals):
        values = [scale * number_of(r[column], path, column) for r in part]
        lo, hi = min(values), max(values)
        return fmt(lo, decimals) if lo == hi else f"{fmt(lo, decimals)}–{fmt(hi, decimals)}"

    body = []
    for kind, setting in unique((r["kind"], r["setting"]) for r in rows):
        emb = [r for r in rows if r["method"] == "embedllm" and (r["kind"], r["setting"]) == (kind, setting)]
        loc = [r for r in rows if r["method"] == "locus" and (r["kind"], r["setting"]) == (kind, setting)]
        label = {
            "same": "the same evaluations",
            "overlap": f"overlap α = {setting}",
            "subsample": f"{_num_label(setting) if setting else '?'} subsampled",
        }.get(kind, f"{kind} {setting}")
        body.append(
            [
                label,
                span(emb, "cosine_distance", 1, 2) if emb else "–",
                span(emb, "test_disagreement", 100, 1) if emb else "–",
                span(loc, "cosine_distance", 1, 4) if loc else "–",
                span(loc, "test_disagreement", 100, 2) if loc else "–",
            ]
        )
    cells = len(unique((r.get("hidden_layers"), r.get("dim")) for r in rows if r["method"] == "embedllm"))
    return md_table(
        [
            "re-learned from",
            f"EmbedLLM cosine distance ({cells} cells)",
            "EmbedLLM test disagreement %",
            "LOCUS distance",
            "LOCUS disagreement %",
        ],
        body,
    ) + ["", provenance(src, [rel])]


def block_distance_correlation(src):
    """Correlation between embedding distance and test disagreement over model pairs, per method."""
    rel = "tables/distance_correlation.csv"
    path = src.path(rel)
    # the columns every distance-correlation CSV has: its writer adds the interval columns only with a bootstrap
    rows = read_rows(path, ("method", "correlation", "distance", "value", "n_pairs", "train_size"))
    has_ci = "ci_low" in rows[0] and "ci_high" in rows[0]
    has_dim = "effective_dim" in rows[0] and "embedding_dim" in rows[0]
    columns = unique((r["correlation"], r["distance"]) for r in rows)
    body = []
    for method in unique(r["method"] for r in rows):
        cells = []
        for corr, dist in columns:
            r = _pick(rows, method=method, correlation=corr, distance=dist)
            if r is None:
                cells.append("–")
                continue
            text = fmt(number_of(r["value"], path, "value"), 3)
            if has_ci and r["ci_low"] not in ("", None):
                text += f" [{fmt(number_of(r['ci_low'], path, 'ci_low'), 2)}, {fmt(number_of(r['ci_high'], path, 'ci_high'), 2)}]"
                text += {"bca": "†", "recentred": "‡"}.get(r.get("interval") or "percentile", "")
            cells.append(text)
        dims = []
        if has_dim:
            r = _pick(rows, method=method)
            dims = [f"{fmt(number_of(r['effective_dim'], path, 'effective_dim'), 1)} of {r['embedding_dim']}"]
        body.append([plain_label(method)] + cells + dims)
    first = rows[0]
    head = [f"distance vs test disagreement ({first['n_pairs']} model pairs, n = {first['train_size']})"]
    note = "In brackets: the bootstrap interval over test queries." if has_ci else ""
    if has_ci and "interval" in first:
        note = (
            "In brackets: the bootstrap interval over test queries (percentile; † BCa, ‡ re-centred on the "
            "estimate, where the percentile interval excluded it)."
        )
    if has_dim:
        note += " Effective dim.: participation ratio of the centred embeddings' singular values, of the width."
    if "value_without_influential" in first and first.get("n_influential") not in ("", None, "0"):
        dist = columns[0][1]
        cells = ", ".join(
            f"{plain_label(r['method'])} {fmt(number_of(r['value'], path, 'value'), 3)} → "
            f"{fmt(number_of(r['value_without_influential'], path, 'value_without_influential'), 3)}"
            for r in rows
            if r["correlation"] == "pearson" and r["distance"] == dist
        )
        note += (
            f" Without the {first['n_influential']} models whose single removal lowers it most (lower by "
            f"construction; a check of how much a few models carry), Pearson ({dist}) reads: {cells}."
        )
    return (
        md_table(head + [f"{c.capitalize()}, {d}" for c, d in columns] + (["effective dim."] if has_dim else []), body)
        + [""]
        + ([note, ""] if note else [])
        + [provenance(src, [rel])]
    )


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


def _factors(src: Source, rel: str) -> list[str]:
    """The factor of each method at the figure's reference point, from the figure's JSON summary."""
    path = src.path(rel)
    summary = read_json(src, rel, ())
    try:
        point, methods, ref = (
            int(summary["reference_point"]),
            summary["methods"],
            summary["reference_method"],
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a sample-efficiency summary ({exc}); rebuild it") from None

    def num(value) -> float:
        return math.inf if value == "inf" else math.nan if value is None else float(value)

    body = []
    for method, entry in methods.items():
        f = (entry or {}).get("at_reference_point") or {}
        if not f:
            continue
        n_method = num(f.get("n_method"))
        body.append(
            [
                plain_label(method),
                fmt(100 * num(f.get("target")), 2),
                "never" if math.isnan(n_method) else fmt(n_method, 0),
                f"{fmt(num(f.get('factor')), 1)}×" + (" (a lower bound)" if f.get("crossing") == "lower_bound" else ""),
                f"undefined (exact in {fmt(100 * num(f.get('share_defined')), 0)}% of resamples)"
                if f.get("status") == "undefined"
                else f"[{fmt(num(f.get('ci_low')), 1)}, {fmt(num(f.get('ci_high')), 1)}]".replace("inf", "∞"),
                str(f.get("status", "")),
            ]
        )
    if not body:
        return []
    return md_table(
        [
            f"factor at n = {point:,} of {plain_label(ref)}",
            "target routing %",
            "samples the method needs",
            "factor",
            "95% interval",
            "status",
        ],
        body,
    ) + [""]


def block_sample_efficiency(src):
    """The routing curves (mean over seeds) and the sample-efficiency factors drawn on the figure."""
    rel = "figures/train_sample_eff.csv"
    path = src.path(rel)
    rows = read_rows(path, SAMPLE_EFFICIENCY_COLUMNS)
    curve = [r for r in rows if r["kind"] == "curve"]
    if not curve:
        raise DataError(f"{path}: no curve rows; rebuild it")
    methods, sizes, cells = _pivot(curve, "method", "train_size", "mean", path, decimals=2)
    body = [[plain_label(m)] + [cells.get((m, n), "–") for n in sizes] for m in methods]
    out = md_table(
        ["routing accuracy %, training queries per model"] + [_num_label(n) for n in sizes],
        body,
    ) + [""]
    out += _factors(src, "figures/train_sample_eff.json")
    return out + [provenance(src, [rel, "figures/train_sample_eff.json"])]


def block_hypothetical(src):
    """Recall@k of hypothetical embeddings (a model made up from per-benchmark accuracies) by set size."""
    rel = "figures/hypothetical_model_embedding.csv"
    path = src.path(rel)
    rows = [r for r in read_rows(path, HYPOTHETICAL_COLUMNS) if r["kind"] == "recall"]
    if not rows:
        raise DataError(f"{path}: no recall rows; rebuild it")
    ks, sizes, cells = _pivot(rows, "k", "size", "recall", path)
    body = [[f"recall@{k}, %"] + [cells.get((k, s), "–") for s in sizes] for k in ks]
    return md_table(
        [f"hypothetical embeddings ({rows[0]['models']} models), queries"] + [_num_label(s) for s in sizes],
        body,
    ) + ["", provenance(src, [rel])]


def read_json(src: Source, rel: str, keys: tuple[str, ...]) -> dict:
    """A figure's JSON summary, with `keys` present; else a DataError naming the file and the fix."""
    import json

    path = src.path(rel)
    if not path.is_file():
        raise DataError(f"{path}: not found; build it first (snakemake --cores 2 {_target(path)})")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); rebuild it") from None
    missing = [k for k in keys if not isinstance(summary, dict) or k not in summary]
    if missing:
        raise DataError(f"{path}: missing {', '.join(missing)}; it was written by another version of locus: rebuild it")
    return summary


def block_families(src):
    """How well the embedding separates tagged model families (math, code): distances and a permutation test."""
    rel = "figures/models_family_clustering.json"
    summary = read_json(src, rel, ("separation", "cophenetic_correlation", "method"))
    body = []
    for tag, sep in summary["separation"].items():
        sep = sep or {}

        def val(key, scale=1.0, decimals=2, sep=sep):
            v = sep.get(key)
            return fmt(scale * float(v), decimals) if v is not None else "–"

        body.append(
            [
                tag,
                str(sep.get("n_models", "–")),
                val("ratio"),
                val("p_value"),
                val("nn_same_tag", 100, 1),
                val("nn_same_tag_chance", 100, 1),
            ]
        )
    note = (
        f"{plain_label(summary['method'])} embeddings; cophenetic correlation of the clustering "
        f"{fmt(float(summary['cophenetic_correlation']), 2)}."
    )
    return md_table(
        [
            "model tag",
            "models",
            "within-tag / to-others distance",
            "permutation p",
            "nearest neighbour same tag, %",
            "by chance, %",
        ],
        body,
    ) + ["", note, "", provenance(src, [rel])]


def block_claims(src):
    rel = "tables/claims.csv"
    # its writer (locus.experiments.claims.COLUMNS) imports this module: naming the columns read avoids the cycle
    rows = read_rows(src.path(rel), ("claim", "paper_ref", "paper_value", "ours", "verdict", "rule", "reason"))
    from locus.constants import CLAIM_VERDICTS

    counts = {v: n for v in CLAIM_VERDICTS if (n := sum(r["verdict"] == v for r in rows))}
    lines = [", ".join(f"{n} {v}" for v, n in counts.items()) + f" of {len(rows)} claims.", ""]
    lines += md_table(
        ["claim", "paper", "ours", "verdict", "why (and the rule in claims.csv)"],
        [
            [f"{r['claim']} (`{r['paper_ref']}`)", r["paper_value"], r["ours"], f"**{r['verdict']}**", r["reason"]]
            for r in rows
        ],
    )
    return lines + ["", provenance(src, [rel])]


def _rival_verdict(diffs, k, path) -> str:
    """LOCUS against the rival with the largest (rival − LOCUS) difference at `k`, read from its paired interval."""
    here = [r for r in diffs if int(r["k"]) == k]
    best = max(here, key=lambda r: number_of(r["value"], path, "value"), default=None)
    if best is None:
        return "–"
    d, lo, hi = (100 * number_of(best[c], path, c) for c in ("value", "ci_low", "ci_high"))
    where = "behind" if lo > 0 else "ahead of" if hi < 0 else "level with"
    return f"LOCUS {where} {best['method']} ({fmt(-d, 1)} [{fmt(-hi, 1)}, {fmt(-lo, 1)}])"


def block_onboarding_rivals(src):
    """LOCUS's onboarding against the training-free rivals, by k: each method's correctness accuracy, and a plain
    verdict against the best rival (paired intervals of rival minus LOCUS over test queries), for correctness and,
    where the table has it, for routing among old and new models. Rows of queries picked at random only (the
    selector's rows are in the CSV and the LaTeX table)."""
    rel = "tables/onboarding_rivals.csv"
    path = src.path(rel)
    rows = read_rows(path, ("method", "k", "metric", "value", "ci_low", "ci_high", "n_models"))
    rows = [r for r in rows if r.get("draw", "random") in ("random", "")]
    acc = [r for r in rows if r["metric"] == "correctness_acc"]
    diffs = [r for r in rows if r["metric"] == "correctness_acc_minus_locus"]
    routing = [r for r in rows if r["metric"] == "routing_acc_all_minus_locus"]
    if not acc:
        raise DataError(f"{path}: no correctness_acc rows; rebuild it")
    methods = unique(r["method"] for r in acc)
    ks = sorted({int(r["k"]) for r in acc})
    value = {(r["method"], int(r["k"])): 100 * number_of(r["value"], path, "value") for r in acc}
    body = []
    for k in ks:
        verdicts = [_rival_verdict(diffs, k, path)] + ([_rival_verdict(routing, k, path)] if routing else [])
        body.append([str(k), *[fmt(value.get((m, k), float("nan")), 1) for m in methods], *verdicts])
    head = ["k", *methods, "correctness: LOCUS against the best rival (LOCUS − rival, paired 95% CI)"]
    if routing:
        head.append("routing among old + new: LOCUS against the best rival")
    n_models = int(number_of(acc[0]["n_models"], path, "n_models"))
    repeats = int(number_of(acc[0].get("repeats") or 1, path, "repeats"))
    held = f"{n_models} held-out models" + (
        f" ({n_models // repeats} in each of {repeats} repeats)" if repeats > 1 else ""
    )
    return md_table(head, body) + [
        "",
        f"Correctness accuracy (%) on the test queries of {held}, each onboarded from k of its training-split "
        "evaluations without retraining.",
        "",
        provenance(src, [rel]),
    ]


def block_claims_pools(src):
    """The verdicts of the claims ledgers of several runs side by side: this one's and each of ``src.others``
    (one column per pool, in the order given), with each run's machine and commit below."""
    rel = "tables/claims.csv"
    runs = [src, *src.others]
    ledgers = [{r["id"]: r for r in read_rows(s.path(rel), ("id", "claim", "verdict"))} for s in runs]
    ids = unique(i for ledger in ledgers for i in ledger)
    labels = [dataset_label(s) for s in runs]
    rows = []
    for i in ids:
        claim = next(ledger[i]["claim"] for ledger in ledgers if i in ledger)
        verdicts = [ledger[i]["verdict"] if i in ledger else "–" for ledger in ledgers]
        agree = "" if len(set(verdicts)) == 1 else " ≠"
        rows.append([claim + agree, *verdicts])
    lines = md_table(
        ["claim (≠: the pools' verdicts differ)", *[f"{k + 1}. {lab}" for k, lab in enumerate(labels)]], rows
    )
    lines.append("")
    for k, s in enumerate(runs):
        lines.append(f"{k + 1}. {provenance(s, [rel])}")
    return lines


BLOCKS: dict[str, tuple[Callable[[Source], list[str]], str]] = {
    "data": (
        block_data,
        "the data set: sizes, oracle / best single / random per split",
    ),
    "routing": (
        block_routing,
        "tables/routing.csv: routing, expected routing and correctness accuracy",
    ),
    "routing-by-dataset": (
        block_routing_by_dataset,
        "tables/routing_by_dataset.csv, overall column",
    ),
    "correctness-by-dataset": (
        block_correctness_by_dataset,
        "tables/correctness_by_dataset.csv, overall column",
    ),
    "precision-effect": (
        block_precision_effect,
        "tables/precision_effect.csv: fp32 vs bf16 scoring",
    ),
    "time-complexity": (
        block_time_complexity,
        "figures/time_complexity.csv: measured times",
    ),
    "neighbours": (
        block_neighbours,
        "figures/nearest_neighbor_proxies.csv: agreement with the nearest model",
    ),
    "portfolio": (
        block_portfolio,
        "figures/model_portfolio.csv: smallest portfolio matching the pool",
    ),
    "evalset-robustness": (
        block_evalset_robustness,
        "figures/perf_vs_size_and_overlap.csv: re-embedded models",
    ),
    "onboarding": (
        block_onboarding,
        "figures/sample_eff_ood_test.csv: held-out models embedded from k evaluations",
    ),
    "calibration": (
        block_calibration,
        "tables/calibration.csv: raw vs calibrated probabilities on test",
    ),
    "selective-routing": (
        block_selective,
        "tables/selective_routing.csv: certified thresholds and the guarantee",
    ),
    "aiq": (
        block_aiq,
        "tables/aiq.csv: area under the cost-quality frontier",
    ),
    "active-onboarding": (
        block_active_onboarding,
        "figures/active_onboarding.csv, tables/active_onboarding.csv: which queries to evaluate a new model on",
    ),
    "regeneration": (
        block_regeneration,
        "figures/relearn_embedllm_heatmap_test_disagreement.csv: re-learned",
    ),
    "distance-correlation": (
        block_distance_correlation,
        "tables/distance_correlation.csv: geometry vs behaviour",
    ),
    "dim-ablation": (
        block_dim_ablation,
        "tables/dim_ablation_{routing,correctness}.csv: LOCUS's dimension",
    ),
    "encoder-ablation": (
        block_encoder_ablation,
        "tables/encoder_ablation_{routing,correctness}.csv: encoders",
    ),
    "sample-efficiency": (
        block_sample_efficiency,
        "figures/train_sample_eff.csv: curves and factors",
    ),
    "hypothetical": (
        block_hypothetical,
        "figures/hypothetical_model_embedding.csv: recall@k by set size",
    ),
    "families": (
        block_families,
        "figures/models_family_clustering.json: tagged families in the embedding",
    ),
    "fallback": (
        block_fallback,
        "figures/fallback_routing.csv: accuracy kept by the nearest neighbour",
    ),
    "claims": (
        block_claims,
        "tables/claims.csv: the paper's claims with their verdicts",
    ),
    "onboarding-rivals": (
        block_onboarding_rivals,
        "tables/onboarding_rivals.csv: LOCUS's onboarding against training-free rivals, by k",
    ),
    "claims-pools": (
        block_claims_pools,
        "tables/claims.csv of this run and of each --also run: verdicts side by side",
    ),
}


# --------------------------------------------------------------------------------------------------
# pages
# --------------------------------------------------------------------------------------------------
def render_block(name: str, src: Source) -> str:
    """The generated text of block `name` (no markers), ending in a newline."""
    if name not in BLOCKS:
        raise ConfigError(f"unknown report block {name!r}; known blocks: {', '.join(BLOCKS)}")
    return "\n".join(BLOCKS[name][0](src)).rstrip("\n") + "\n"


def blocks_of(text: str, where: str = "the page") -> list[tuple[str, int, int]]:
    """(name, start, end) of the generated text of each marker pair of `text` (start/end exclude the marker
    lines); a marker without its closing line, a nested or an unknown name is a :class:`ConfigError`."""
    found = []
    pos = 0
    while True:
        m = MARKER.search(text, pos)
        if m is None:
            return found
        name = m.group(1)
        if name not in BLOCKS:
            raise ConfigError(
                f"{where}: unknown report block {name!r} (line {text.count(chr(10), 0, m.start()) + 1}); "
                f"known blocks: {', '.join(BLOCKS)}"
            )
        start = m.end() + 1 if text[m.end() : m.end() + 1] == "\n" else m.end()
        end = text.find(END.format(name=name), start)
        nxt = MARKER.search(text, start)
        if end < 0 or (nxt is not None and nxt.start() < end):
            raise ConfigError(
                f"{where}: the block {name!r} opened on line {text.count(chr(10), 0, m.start()) + 1} "
                f"has no closing line {END.format(name=name)} before the next block; add it"
            )
        found.append((name, start, end))
        pos = end + len(END.format(name=name))


def update_text(text: str, src: Source, where: str = "the page") -> str:
    """`text` with the generated part of every block replaced; the rest is kept as it is."""
    out, last = [], 0
    cache: dict[str, str] = {}
    for name, start, end in blocks_of(text, where):
        if name not in cache:
            cache[name] = render_block(name, src)
        out += [text[last:start], cache[name]]
        last = end
    out.append(text[last:])
    return "".join(out)


def stale_blocks(text: str, src: Source, where: str = "the page") -> list[str]:
    """The names of the blocks of `text` whose generated part differs from what :func:`update_text` writes."""
    stale = []
    for name, start, end in blocks_of(text, where):
        if text[start:end] != render_block(name, src) and name not in stale:
            stale.append(name)
    return stale
