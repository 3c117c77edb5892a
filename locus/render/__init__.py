"""Rendering: DataFrames -> LaTeX cells and tables (:mod:`locus.render.latex`) and figures
(:mod:`locus.render.figures`, matplotlib on Agg), each written with the CSV of its numbers."""

from __future__ import annotations

import math
from pathlib import Path

from locus.atomic import atomic_path


def write_csv(df, path: str | Path) -> None:
    """Write a DataFrame (index dropped) as CSV atomically."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def speedup_text(value: float) -> str:
    """A speed-up for people: 0 over seeds or NaN in one seed (a target never reached) reads "never"."""
    return "never" if value == 0 or math.isnan(value) else f"{value:.1f}x"
