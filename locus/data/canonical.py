"""The canonical on-disk format of evaluation data, and its validating reader and atomic writer.

A data set is a directory with three Parquet files:

- ``queries.parquet``: ``prompt_id`` (int), ``prompt`` (str), ``benchmark`` (str), ``category`` (str),
  ``split`` (``train`` / ``val`` / ``test``);
- ``models.parquet``: ``model_id`` (int), ``name`` (str), optional metadata columns
  (``params_b`` float, ``family`` str, ``tags`` str joined by ``;``);
- ``scores.parquet``: long table ``prompt_id, model_id, score`` with score in [0, 1].

Models may be evaluated on different query subsets: a missing (prompt, model) pair means "not
evaluated", never "wrong". Everything downstream reads data sets only through :func:`read_dataset`.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from locus.errors import DataError

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
DUPLICATE_POLICIES = ("last", "max", "mean", "error")
DEFAULT_DUPLICATE_POLICY = "last"  # the authors' code keeps the last row per (prompt, model)

QUERY_COLUMNS = ("prompt_id", "prompt", "benchmark", "category", "split")
MODEL_COLUMNS = ("model_id", "name")
SCORE_COLUMNS = ("prompt_id", "model_id", "score")
FILES = {"queries": "queries.parquet", "models": "models.parquet", "scores": "scores.parquet"}

_SHOW = 5  # offending ids shown in an error message


@dataclass(frozen=True)
class EvalData:
    """A validated evaluation data set (see the module docstring for the columns)."""

    queries: pd.DataFrame
    models: pd.DataFrame
    scores: pd.DataFrame
    source: str = "<memory>"

    @property
    def model_ids(self) -> np.ndarray:
        return self.models["model_id"].to_numpy(np.int64)

    def split_queries(self, split: str) -> pd.DataFrame:
        """Queries of one split, sorted by prompt_id."""
        _check_split(split)
        q = self.queries[self.queries["split"] == split]
        return q.sort_values("prompt_id").reset_index(drop=True)

    def split_scores(self, split: str) -> pd.DataFrame:
        """Long (prompt_id, model_id, score) rows of one split."""
        ids = self.split_queries(split)["prompt_id"]
        return self.scores[self.scores["prompt_id"].isin(ids)].reset_index(drop=True)

    def label_matrix(self, prompt_ids, model_ids=None) -> np.ndarray:
        """Dense float matrix [len(prompt_ids), len(model_ids)] of scores, NaN where not evaluated."""
        return pairs_to_matrix(self.scores, prompt_ids, self.model_ids if model_ids is None else model_ids)


def pairs_to_matrix(pairs: pd.DataFrame, prompt_ids, model_ids, value: str = "score") -> np.ndarray:
    """Scatter long (prompt_id, model_id, value) rows into a [prompts x models] matrix (NaN = missing).

    Rows whose prompt or model is not among the requested ids are ignored.
    """
    prompt_ids = np.asarray(prompt_ids, dtype=np.int64)
    model_ids = np.asarray(model_ids, dtype=np.int64)
    out = np.full((len(prompt_ids), len(model_ids)), np.nan, dtype=np.float64)
    p_pos = pd.Index(prompt_ids).get_indexer(pairs["prompt_id"].to_numpy())
    m_pos = pd.Index(model_ids).get_indexer(pairs["model_id"].to_numpy())
    keep = (p_pos >= 0) & (m_pos >= 0)
    out[p_pos[keep], m_pos[keep]] = pairs[value].to_numpy(np.float64)[keep]
    return out


# ----------------------------------------------------------------------------------------------
# reading and validation
# ----------------------------------------------------------------------------------------------
def read_dataset(directory: str | Path, duplicates: str = DEFAULT_DUPLICATE_POLICY) -> EvalData:
    """Read and validate a canonical data set directory; raise :class:`DataError` on bad input."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(
            f"{directory}: data set directory does not exist. Create it with an adapter rule "
            f"(e.g. `snakemake results/data/synthetic/queries.parquet`) or `locus data --help`."
        )
    frames = {}
    for key, name in FILES.items():
        path = directory / name
        if not path.is_file():
            present = sorted(p.name for p in directory.iterdir())
            raise DataError(
                f"{path}: file missing. A data set directory needs {', '.join(FILES.values())} "
                f"(found: {', '.join(present) or 'nothing'}). See README, 'Bring your own data'."
            )
        try:
            frames[key] = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types
            raise DataError(f"{path}: not a readable Parquet file ({exc}). Re-create it.") from exc
    return validate(
        frames["queries"], frames["models"], frames["scores"], source=str(directory), duplicates=duplicates
    )


def validate(
    queries: pd.DataFrame,
    models: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    source: str = "<memory>",
    duplicates: str = DEFAULT_DUPLICATE_POLICY,
) -> EvalData:
    """Check every invariant of the canonical format and return a clean :class:`EvalData`.

    Duplicate (prompt_id, model_id) score rows are resolved by ``duplicates``: ``last`` (keep the last
    row in file order, the authors' behaviour and the default), ``max``, ``mean``, or ``error``.
    """
    if duplicates not in DUPLICATE_POLICIES:
        raise DataError(f"unknown duplicate policy {duplicates!r}; choose one of {', '.join(DUPLICATE_POLICIES)}")
    qf, mf, sf = (f"{source}/{FILES[k]}" for k in ("queries", "models", "scores"))
    _require_columns(queries, QUERY_COLUMNS, qf)
    _require_columns(models, MODEL_COLUMNS, mf)
    _require_columns(scores, SCORE_COLUMNS, sf)

    queries = queries.copy()
    queries["prompt_id"] = _int_column(queries, "prompt_id", qf)
    for col in ("prompt", "benchmark", "category", "split"):
        bad = queries[col].isna()
        if bad.any():
            raise DataError(
                f"{qf}: column {col!r} is empty in {int(bad.sum())} row(s), prompt_id {_ids(queries.loc[bad, 'prompt_id'])}; "
                f"fill it in (use the benchmark name as category when there is no finer label)."
            )
        queries[col] = queries[col].astype(str)
    dup_q = queries["prompt_id"].duplicated(keep=False)
    if dup_q.any():
        raise DataError(f"{qf}: prompt_id not unique: {_ids(queries.loc[dup_q, 'prompt_id'])}; give every query one id.")
    unknown = ~queries["split"].isin(SPLITS)
    if unknown.any():
        values = sorted(queries.loc[unknown, "split"].unique())
        raise DataError(
            f"{qf}: column 'split' has unknown value(s) {values} in {int(unknown.sum())} row(s), "
            f"prompt_id {_ids(queries.loc[unknown, 'prompt_id'])}; allowed: {', '.join(SPLITS)} "
            f"(rename e.g. 'dev'/'validation' to 'val')."
        )
    for split in SPLITS:
        if not (queries["split"] == split).any():
            raise DataError(
                f"{qf}: split {split!r} has no queries; every split needs at least one "
                f"(the csv adapter draws splits for you when the column is absent)."
            )

    models = models.copy()
    models["model_id"] = _int_column(models, "model_id", mf)
    models["name"] = models["name"].astype(str)
    dup_m = models["model_id"].duplicated(keep=False)
    if dup_m.any():
        raise DataError(f"{mf}: model_id not unique: {_ids(models.loc[dup_m, 'model_id'])}.")
    dup_n = models["name"].duplicated(keep=False)
    if dup_n.any():
        raise DataError(f"{mf}: model name not unique: {sorted(models.loc[dup_n, 'name'].unique())[:_SHOW]}.")

    scores = scores[list(SCORE_COLUMNS)].copy()
    scores["prompt_id"] = _int_column(scores, "prompt_id", sf)
    scores["model_id"] = _int_column(scores, "model_id", sf)
    values = pd.to_numeric(scores["score"], errors="coerce")
    bad = values.isna() | (values < 0) | (values > 1)
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())
        examples = ", ".join(
            f"row {r} (prompt_id={scores['prompt_id'].iat[r]}, model_id={scores['model_id'].iat[r]}, score={scores['score'].iat[r]})"
            for r in rows[:_SHOW]
        )
        raise DataError(
            f"{sf}: column 'score' must be a number in [0, 1]; {len(rows)} row(s) are NaN or out of range: "
            f"{examples}. Rescale scores to [0, 1] (1 = correct) and drop unevaluated pairs instead of writing NaN."
        )
    scores["score"] = values.astype(np.float64)

    unknown_p = ~scores["prompt_id"].isin(queries["prompt_id"])
    if unknown_p.any():
        raise DataError(
            f"{sf}: {int(unknown_p.sum())} row(s) refer to prompt_id(s) not in queries.parquet: "
            f"{_ids(scores.loc[unknown_p, 'prompt_id'])}; add those queries or drop the rows."
        )
    unknown_m = ~scores["model_id"].isin(models["model_id"])
    if unknown_m.any():
        raise DataError(
            f"{sf}: {int(unknown_m.sum())} row(s) refer to model_id(s) not in models.parquet: "
            f"{_ids(scores.loc[unknown_m, 'model_id'])}; add those models or drop the rows."
        )
    scores = resolve_duplicates(scores, duplicates, sf)
    scored = models["model_id"].isin(scores["model_id"])
    if not scored.all():
        missing = models.loc[~scored]
        names = ", ".join(f"{i} ({n})" for i, n in zip(missing["model_id"][:_SHOW], missing["name"][:_SHOW]))
        raise DataError(
            f"{mf}: {len(missing)} model(s) have no scores in scores.parquet: {names}; "
            f"remove them from models.parquet or add their scores."
        )
    queries = queries.sort_values("prompt_id").reset_index(drop=True)
    models = models.sort_values("model_id").reset_index(drop=True)
    scores = scores.sort_values(["prompt_id", "model_id"], kind="stable").reset_index(drop=True)
    return EvalData(queries=queries, models=models, scores=scores, source=source)


def resolve_duplicates(scores: pd.DataFrame, policy: str, source: str = "scores") -> pd.DataFrame:
    """Collapse duplicate (prompt_id, model_id) rows by `policy` (last / max / mean / error)."""
    dup = scores.duplicated(["prompt_id", "model_id"], keep=False)
    if not dup.any():
        return scores
    n_pairs = int(scores.loc[dup, ["prompt_id", "model_id"]].drop_duplicates().shape[0])
    if policy == "error":
        ex = scores.loc[dup, ["prompt_id", "model_id"]].drop_duplicates().head(_SHOW)
        pairs = ", ".join(f"(prompt_id={p}, model_id={m})" for p, m in ex.itertuples(index=False))
        raise DataError(
            f"{source}: {n_pairs} duplicate (prompt_id, model_id) pair(s), e.g. {pairs}; keep one row per pair "
            f"or set data.duplicates to last, max or mean."
        )
    log.warning("%s: %d duplicate (prompt, model) pairs resolved by policy %r", source, n_pairs, policy)
    if policy == "last":
        return scores.drop_duplicates(["prompt_id", "model_id"], keep="last")
    agg = "max" if policy == "max" else "mean"
    return scores.groupby(["prompt_id", "model_id"], as_index=False, sort=False)["score"].agg(agg)


def _require_columns(df: pd.DataFrame, required, path: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {missing}; required: {list(required)}, found: {list(df.columns)}."
        )


def _int_column(df: pd.DataFrame, col: str, path: str) -> pd.Series:
    values = pd.to_numeric(df[col], errors="coerce")
    bad = values.isna() | (values != values.round())
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())[:_SHOW].tolist()
        raise DataError(f"{path}: column {col!r} must hold integers; bad value(s) in row(s) {rows}: "
                        f"{df[col].iloc[rows].tolist()}.")
    return values.astype(np.int64)


def _ids(series: pd.Series) -> str:
    uniq = pd.unique(series)
    shown = ", ".join(str(v) for v in uniq[:_SHOW])
    return shown + (f" (and {len(uniq) - _SHOW} more)" if len(uniq) > _SHOW else "")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")


# ----------------------------------------------------------------------------------------------
# writing
# ----------------------------------------------------------------------------------------------
def write_dataset(directory: str | Path, queries: pd.DataFrame, models: pd.DataFrame, scores: pd.DataFrame,
                  duplicates: str = DEFAULT_DUPLICATE_POLICY) -> EvalData:
    """Validate, then write the three files of a data set directory.

    All three are written to a temporary folder first and only then renamed into place, so a failure
    leaves no half-written file behind (other files in `directory`, such as a summary, are kept).
    """
    directory = Path(directory)
    data = validate(queries, models, scores, source=str(directory), duplicates=duplicates)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=directory))
    try:
        data.queries[list(QUERY_COLUMNS)].to_parquet(tmp / FILES["queries"], index=False)
        data.models.to_parquet(tmp / FILES["models"], index=False)
        data.scores.to_parquet(tmp / FILES["scores"], index=False)
        for name in FILES.values():
            os.replace(tmp / name, directory / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return data
