"""The generator's truth beside a canonical data set: ``truth.parquet``.

A synthetic data set knows, for every evaluated (prompt, model) pair, the true probability that the
model answers correctly (its 0/1 score is a draw with that probability;
:func:`locus.data.synthetic.build_with_truth`). ``locus data synthetic`` writes it beside the canonical
files as ``truth.parquet`` (:data:`TRUTH_FILE`): ``prompt_id`` int64, ``model_id`` int64, ``p_correct``
float64 in [0, 1], exactly one row per row of ``scores.parquet``. It is part of the data set's file set:
the manifest (``dataset.json``) lists it with its size and SHA-256 under ``files`` like the other files
and records ``"truth": {"file": "truth.parquet", "rows": N}`` (``"truth": null`` for sources without
truth, :data:`SOURCES_WITH_TRUTH`). A ``truth.parquet`` that the manifest does not record (left over
from an earlier build, or copied in) or that differs from its recorded checksum is refused, never used.

Tables use it for the *expected* routing accuracy of a method (mean true probability of the routed
model), free of the sampling noise of the 0/1 labels (:mod:`locus.experiments.expected`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from locus.data.validation import SHOW, format_value, int_column, require_columns
from locus.errors import DataError

TRUTH_FILE = "truth.parquet"
TRUTH_COLUMNS = ("prompt_id", "model_id", "p_correct")
SOURCES_WITH_TRUTH = ("synthetic",)  # sources of `locus data` that write TRUTH_FILE (the workflow reads this)
REBUILD = "rebuild the data set with `locus data synthetic` (Snakemake: --forcerun data)"


def manifest_entry(truth: pd.DataFrame | None) -> dict | None:
    """What the manifest records about the truth file (None: the data set has none)."""
    return None if truth is None else {"file": TRUTH_FILE, "rows": int(len(truth))}


def check_truth(truth: pd.DataFrame, scores: pd.DataFrame, path: str, drop_unscored: bool = False) -> pd.DataFrame:
    """Validate a truth frame against the data set's (validated) `scores`; return it sorted, canonical dtypes.

    Columns :data:`TRUTH_COLUMNS`; whole-number ids; ``p_correct`` finite and in [0, 1]; one row per
    (prompt_id, model_id); the pairs are exactly the scored pairs. `drop_unscored` (the writer) first drops
    rows of pairs without a score (queries removed by the ``split_overlap`` policy). Errors name `path`,
    the column, the rows / ids and the fix.
    """
    require_columns(truth, TRUTH_COLUMNS, path)
    truth = truth.reset_index(drop=True)  # rows are named by position
    frame = pd.DataFrame(
        {"prompt_id": int_column(truth, "prompt_id", path), "model_id": int_column(truth, "model_id", path)}
    )
    raw = truth["p_correct"]
    p = (
        pd.to_numeric(raw, errors="coerce")
        if not pd.api.types.is_bool_dtype(raw)
        else pd.Series(np.nan, index=raw.index)
    ).to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if bad.any():
        rows = np.flatnonzero(bad)
        shown = ", ".join(f"row {r}: {format_value(raw.iloc[r])}" for r in rows[:SHOW])
        raise DataError(
            f"{path}: column 'p_correct' must be a probability in [0, 1] (finite); {len(rows)} bad "
            f"value(s) (0-based rows): {shown}. The truth file is written by the generator: {REBUILD}."
        )
    frame["p_correct"] = p
    scored = pd.MultiIndex.from_frame(scores[["prompt_id", "model_id"]].astype(np.int64))
    pairs = pd.MultiIndex.from_frame(frame[["prompt_id", "model_id"]])
    if drop_unscored:
        keep = pairs.isin(scored)
        frame, pairs = frame[keep], pairs[keep]
    dup = pairs.duplicated(keep=False)
    if dup.any():
        shown = "; ".join(f"prompt_id {a} x model_id {b}" for a, b in pairs[dup].unique()[:SHOW])
        raise DataError(
            f"{path}: {len(pairs[dup].unique())} (prompt_id, model_id) pair(s) have more than one "
            f"truth row, e.g. {shown}; the file must hold one row per evaluated pair: {REBUILD}."
        )
    extra = ~pairs.isin(scored)
    if extra.any():
        rows = np.flatnonzero(extra)
        shown = "; ".join(f"row {r}: prompt_id {pairs[r][0]} x model_id {pairs[r][1]}" for r in rows[:SHOW])
        raise DataError(
            f"{path}: {len(rows)} truth row(s) name pairs without a score in scores.parquet "
            f"(0-based {shown}); the truth file belongs to another data set: {REBUILD}."
        )
    missing = ~scored.isin(pairs)
    if missing.any():
        shown = "; ".join(f"prompt_id {a} x model_id {b}" for a, b in scored[missing][:SHOW])
        raise DataError(
            f"{path}: {int(missing.sum())} scored pair(s) of scores.parquet have no truth row, e.g. "
            f"{shown}; the truth file belongs to another data set: {REBUILD}."
        )
    return frame.sort_values(["prompt_id", "model_id"], kind="stable").reset_index(drop=True)


def remove_stale_truth(directory: str | Path) -> None:
    """Delete a truth file left by an earlier build in a data set written now without truth."""
    (Path(directory) / TRUTH_FILE).unlink(missing_ok=True)
