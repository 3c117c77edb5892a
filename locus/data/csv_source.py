"""Bring your own evaluations: one CSV or Parquet file of ``prompt, model, score`` rows -> canonical data set.

Columns (header names are matched exactly):

* required: ``prompt`` (the query text), ``model`` (a model name), ``score`` (a number in [0, 1];
  1 = correct; ``true``/``false`` are read as 1/0);
* optional: ``benchmark`` (default ``all``), ``category`` (default: the benchmark), ``split``
  (``train``/``val``/``test``; drawn when the column is absent).

Rules:

* A query is identified by its exact prompt text. prompt_ids are 0, 1, 2, ... in order of first
  appearance, so they are stable as long as the file's row order is. Benchmark, category and split of a
  query come from its first row; a later row that gives the same prompt a different split is an error.
* model_ids: ``model_order: sorted`` (default) numbers models by sorted name, so ids do not depend on row
  order; ``appearance`` numbers them in order of first appearance.
* Splits, when the column is absent, are drawn per query (never per row) with
  ``numpy.random.default_rng(seed)``: a random permutation of the queries is cut into val / test / train
  by ``split_fractions`` (train, val, test; rounded counts, at least one query in each split).
* A (prompt, model) pair listed more than once is resolved by ``duplicates`` (last / max / mean / error).
* Missing pairs are fine: a model need not be evaluated on every query.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from locus.data.canonical import DUPLICATE_POLICIES, SPLITS, resolve_duplicates
from locus.errors import ConfigError, DataError

log = logging.getLogger(__name__)

NAME = "csv"
REQUIRED = ("prompt", "model", "score")
OPTIONAL = ("benchmark", "category", "split")
DEFAULT_BENCHMARK = "all"
DEFAULTS = {
    "path": None,  # the CSV (.csv, .csv.gz, .tsv) or Parquet (.parquet, .pq) file; required
    "seed": 0,  # seed of the split draw (used only when there is no `split` column)
    "split_fractions": [0.8, 0.1, 0.1],  # train, val, test shares of the queries for the draw
    "model_order": "sorted",  # model_id by sorted name ("sorted") or by first appearance ("appearance")
    "duplicates": "last",  # repeated (prompt, model) rows: last / max / mean / error
}
_SHOW = 5


def build(params: dict) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return canonical ``(queries, models, scores)`` frames (see :mod:`locus.data.canonical`)."""
    p = _params(params)
    path = Path(p["path"]).expanduser()
    df, row_offset = _read(path)
    _check_columns(df, path)

    prompt = df["prompt"]
    _no_empty(df, "prompt", path, row_offset)
    _no_empty(df, "model", path, row_offset)
    score = _scores(df["score"], path, row_offset)
    model = df["model"].astype(str).str.strip()

    prompt_codes, prompt_uniques = pd.factorize(prompt.astype(str), sort=False)  # first-appearance order
    first_rows = np.unique(prompt_codes, return_index=True)[1]  # row of each prompt's first appearance
    queries = pd.DataFrame({"prompt_id": np.arange(len(prompt_uniques), dtype=np.int64),
                            "prompt": np.asarray(prompt_uniques, dtype=object)})
    benchmark = _text_column(df, "benchmark", path, row_offset, DEFAULT_BENCHMARK)
    queries["benchmark"] = benchmark.to_numpy()[first_rows]
    category = _text_column(df, "category", path, row_offset, None)
    queries["category"] = (category if category is not None else benchmark).to_numpy()[first_rows]
    if "split" in df.columns:
        queries["split"] = _given_splits(df, prompt_codes, first_rows, path, row_offset)
    else:
        queries["split"] = draw_splits(len(queries), p["split_fractions"], p["seed"])

    names = sorted(model.unique()) if p["model_order"] == "sorted" else list(pd.unique(model))
    models = pd.DataFrame({"model_id": np.arange(len(names), dtype=np.int64), "name": names})
    model_ids = pd.Index(names).get_indexer(model)
    scores = pd.DataFrame({"prompt_id": prompt_codes.astype(np.int64), "model_id": model_ids.astype(np.int64),
                           "score": score})
    scores = resolve_duplicates(scores, p["duplicates"], source=str(path)).reset_index(drop=True)
    return queries[["prompt_id", "prompt", "benchmark", "category", "split"]], models, scores


def draw_splits(n: int, fractions, seed: int) -> np.ndarray:
    """Assign `n` queries to train/val/test: a seeded permutation cut by the (train, val, test) fractions."""
    if n < 3:
        raise DataError(f"only {n} distinct prompt(s); at least 3 are needed to form train, val and test splits.")
    n_val = max(1, int(round(fractions[1] * n)))
    n_test = max(1, int(round(fractions[2] * n)))
    if n_val + n_test >= n:
        raise ConfigError(f"split_fractions {list(fractions)} leave no training query out of {n}.")
    order = np.random.default_rng(seed).permutation(n)
    out = np.full(n, "train", dtype=object)
    out[order[:n_val]] = "val"
    out[order[n_val:n_val + n_test]] = "test"
    return out


# ---------------------------------------------------------------------------------------------
def _params(params: dict | None) -> dict:
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"csv: unknown parameter(s) {unknown}; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    if not p["path"]:
        raise ConfigError("csv: parameter `path` (the CSV or Parquet file with prompt, model, score) is required.")
    fr = p["split_fractions"]
    if (not isinstance(fr, (list, tuple)) or len(fr) != 3 or any(not isinstance(f, (int, float)) or f < 0 for f in fr)
            or abs(sum(fr) - 1) > 1e-6):
        raise ConfigError(f"csv: split_fractions must be three non-negative numbers (train, val, test) summing to 1, got {fr!r}.")
    if p["model_order"] not in ("sorted", "appearance"):
        raise ConfigError(f"csv: model_order must be 'sorted' or 'appearance', got {p['model_order']!r}.")
    if p["duplicates"] not in DUPLICATE_POLICIES:
        raise ConfigError(f"csv: duplicates must be one of {DUPLICATE_POLICIES}, got {p['duplicates']!r}.")
    return p


def _read(path: Path) -> tuple[pd.DataFrame, int]:
    """Read the file; also return the offset from a 0-based row index to the row number shown in errors."""
    if not path.is_file():
        raise DataError(f"{path}: file not found; set the csv source's `path` to your evaluations file.")
    name = path.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            df, offset = pd.read_parquet(path), 0  # Parquet "row i" (0-based)
        elif name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")):
            sep = "\t" if ".tsv" in name else ","
            df, offset = pd.read_csv(path, sep=sep, keep_default_na=True), 2  # row 1 is the header
        else:
            raise DataError(f"{path}: unknown file type; use .csv, .csv.gz, .tsv or .parquet.")
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty; it needs a header line `prompt,model,score` and data rows.") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path}: cannot be read ({exc}).") from None
    if len(df) == 0:
        raise DataError(f"{path}: has no data rows (columns: {list(df.columns)}).")
    return df, offset


def _where(rows: np.ndarray, offset: int) -> str:
    shown = ", ".join(str(int(r) + offset) for r in rows[:_SHOW])
    more = f" and {len(rows) - _SHOW} more" if len(rows) > _SHOW else ""
    return f"CSV row(s) {shown}{more} (header = row 1)" if offset else f"row(s) {shown}{more} (0-based)"


def _check_columns(df: pd.DataFrame, path: Path) -> None:
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {missing}; required: {list(REQUIRED)}, optional: {list(OPTIONAL)}; "
            f"found: {list(df.columns)}. Rename your columns (e.g. question -> prompt, correct -> score)."
        )


def _no_empty(df: pd.DataFrame, col: str, path: Path, offset: int) -> None:
    bad = df[col].isna().to_numpy() | (df[col].astype(str).str.strip() == "").to_numpy()
    if bad.any():
        raise DataError(f"{path}: column {col!r} is empty in {_where(np.flatnonzero(bad), offset)}; fill it in or drop those rows.")


def _scores(values: pd.Series, path: Path, offset: int) -> np.ndarray:
    if values.dtype == bool:
        return values.to_numpy(np.float64)
    if values.dtype == object:
        values = values.replace({"true": 1, "false": 0, "True": 1, "False": 0, "TRUE": 1, "FALSE": 0})
    num = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = np.isnan(num) | (num < 0) | (num > 1)
    if bad.any():
        rows = np.flatnonzero(bad)
        examples = ", ".join(repr(values.iloc[r]) for r in rows[:_SHOW])
        raise DataError(
            f"{path}: column 'score' must be a number in [0, 1] (1 = correct); {len(rows)} bad value(s) in "
            f"{_where(rows, offset)}: {examples}. Rescale scores to [0, 1] and drop unevaluated pairs."
        )
    return num


def _text_column(df: pd.DataFrame, col: str, path: Path, offset: int, default: str | None) -> pd.Series | None:
    if col not in df.columns:
        return None if default is None else pd.Series(default, index=df.index, dtype=object)
    _no_empty(df, col, path, offset)
    return df[col].astype(str).str.strip()


def _given_splits(df: pd.DataFrame, codes: np.ndarray, first_rows: np.ndarray, path: Path, offset: int) -> np.ndarray:
    _no_empty(df, "split", path, offset)
    split = df["split"].astype(str).str.strip().str.lower()
    unknown = ~split.isin(SPLITS)
    if unknown.any():
        rows = np.flatnonzero(unknown.to_numpy())
        values = sorted(split[unknown].unique())[:_SHOW]
        raise DataError(f"{path}: column 'split' has unknown value(s) {values} in {_where(rows, offset)}; "
                        f"allowed: {', '.join(SPLITS)} (rename e.g. 'dev'/'validation' to 'val').")
    per_query = split.to_numpy()[first_rows]
    conflict = split.to_numpy() != per_query[codes]
    if conflict.any():
        rows = np.flatnonzero(conflict)
        raise DataError(f"{path}: the same prompt is given different splits ({_where(rows, offset)} disagree with "
                        f"the prompt's first row); a query belongs to exactly one split.")
    missing = [s for s in SPLITS if s not in set(per_query)]
    if missing:
        raise DataError(f"{path}: no query is in split(s) {missing}; every split needs at least one query "
                        f"(or drop the `split` column to have splits drawn).")
    return per_query
