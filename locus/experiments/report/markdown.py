"""Numbers and Markdown tables: a CSV cell read as a number, a number as a table cell, a table as Markdown lines,
and the small pickers the blocks share (a row by its columns, a long table pivoted)."""

from __future__ import annotations

import math
from pathlib import Path

from locus.errors import DataError


def fmt(value: float, decimals: int = 2, signed: bool = False) -> str:
    """A number for a table ('–' when undefined); `signed` writes + before positive values, − for minus."""
    if value is None or math.isnan(value):
        return "–"
    signed = signed and round(value, decimals) != 0
    text = f"{value:+,.{decimals}f}" if signed else f"{value:,.{decimals}f}"
    if text.lstrip("-").strip("0.,") == "":  # -0.0 reads 0.0
        text = text.lstrip("-")
    return text.replace("-", "−")


def number_of(text: str, path: Path, column: str) -> float:
    if text is None or str(text).strip() in ("", "nan", "NaN", "<NA>", "None"):
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise DataError(f"{path}: column {column} holds {text!r}, expected a number; rebuild the file") from None


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (the first column left-aligned, the others right-aligned)."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def unique(values) -> list:
    return list(dict.fromkeys(values))


def _pick(rows: list[dict], **conds) -> dict | None:
    """The first row whose columns equal `conds` (as text), or None."""
    return next((r for r in rows if all(r.get(k) == v for k, v in conds.items())), None)


def _pct_of(row: dict | None, column: str, path: Path, decimals: int = 1) -> str:
    return "–" if row is None else fmt(100 * number_of(row[column], path, column), decimals)


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
