"""Where a block reads from (:class:`Source`: a results directory and its data set), the CSV and JSON readers that
name the file and the fix when something is missing, and the provenance line under each block (what it was
generated from, on which machine by which code)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from locus.errors import ConfigError, DataError
from locus.experiments.report.markdown import fmt, md_table, number_of, unique


@dataclass(frozen=True)
class Source:
    """Where a block reads from: the results directory and the data set the run was made on."""

    results: Path
    dataset: str | None = None
    others: tuple[Source, ...] = ()  # runs on other pools, set beside this one (`locus report --also`)
    configfile: str | None = None  # the config file the run was made with, named in each rebuild command

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
    config = f" --configfile {src.configfile}" if src.configfile else ""
    return (
        f"*Data: {dataset_label(src)}. Generated by `locus report` from {shown}{extra}; rebuilt by "
        f"`snakemake --cores 2 {targets}{config}`.{made_on(src)}*"
    )


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
