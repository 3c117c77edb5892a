"""Input checks and error-message helpers for the canonical data format (:mod:`locus.data.canonical`).

The checks are the steps of :func:`locus.data.canonical.validate`: required columns, whole-number ids,
non-empty text columns, known split names, optional model metadata, scores in [0, 1], score rows
referring to known prompts and models, and every model and split having scores. Each raises
:class:`DataError` naming the file, the column, the rows / ids and the fix.

The message helpers format offending ids and cells, and say where raw rows came from using the optional
provenance columns :data:`ORIGIN` / :data:`ORIGIN_ROW` (``evals.csv row 7``); the duplicate and
split-overlap policies of :mod:`locus.data.canonical` use them too.

Typed parameters (:class:`Param`, :func:`check_params`) are the one declaration of every adapter's and
every method's parameters: type, default, allowed values and a one-line doc, checked before any work
(``locus data`` / ``locus train`` and the workflow's config check), each bad value a one-line
:class:`ConfigError` naming the parameter, the value and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from locus.errors import ConfigError, DataError

ORIGIN, ORIGIN_ROW = "origin", "origin_row"  # optional provenance columns of raw frames (messages only)
SHOW = 5  # offending ids shown in an error message


# ----------------------------------------------------------------------------------------------
# typed parameters (adapters and methods)
# ----------------------------------------------------------------------------------------------
PARAM_TYPES = ("int", "float", "bool", "str", "path", "int_list", "float_list")


@dataclass(frozen=True)
class Param:
    """One parameter: its default, one-line doc, type and allowed values.

    ``type``: int (a whole number, never a bool), float (a finite number), bool (true/false), str (one of
    ``choices``, or any non-empty text without them), path (non-empty text), int_list / float_list (a
    list of such numbers; ``length`` fixes its size, else it must be non-empty). Bounds apply to a number
    or to each item of a list; they are inclusive unless named ``above`` / ``below``. ``nullable``: null
    (None) is allowed too and means what the doc says."""

    default: Any
    doc: str
    type: str
    at_least: float | None = None
    above: float | None = None
    at_most: float | None = None
    below: float | None = None
    choices: tuple | None = None
    nullable: bool = False
    length: int | None = None

    def __post_init__(self):
        if self.type not in PARAM_TYPES:
            raise ValueError(f"Param type must be one of {PARAM_TYPES}, got {self.type!r}")

    def allowed(self) -> str:
        """What the parameter accepts, in words (``an integer >= 1``, ``one of ['a', 'b']``, ...)."""
        if self.type == "bool":
            text = "true or false"
        elif self.type == "str" and self.choices is not None:
            text = f"one of {list(self.choices)}"
        elif self.type in ("str", "path"):
            text = "a non-empty text" + (" (a file path)" if self.type == "path" else "")
        else:
            item = "an integer" if self.type.startswith("int") else "a number"
            bounds = [
                f">= {self.at_least}" if self.at_least is not None else "",
                f"> {self.above}" if self.above is not None else "",
                f"<= {self.at_most}" if self.at_most is not None else "",
                f"< {self.below}" if self.below is not None else "",
            ]
            item += "".join(f" {b}" if i == 0 else f" and {b}" for i, b in enumerate(b for b in bounds if b))
            if self.type.endswith("_list"):
                size = f"{self.length} " if self.length else "a non-empty list of "
                plural = item.replace("an integer", "integers").replace("a number", "numbers")
                text = f"a list of {size}{plural}" if self.length else f"{size}{plural}"
            else:
                text = item
        return text + (" or null" if self.nullable else "")

    def ok(self, value) -> bool:
        """Does `value` have this parameter's type and lie in its allowed values?"""
        if value is None:
            return self.nullable
        if self.type == "bool":
            return isinstance(value, bool)
        if self.type == "str":
            return isinstance(value, str) and (value in self.choices if self.choices is not None else bool(value))
        if self.type == "path":
            return isinstance(value, str) and bool(value.strip())
        if self.type.endswith("_list"):
            if not isinstance(value, (list, tuple)) or (len(value) != self.length if self.length else not value):
                return False
            return all(self._number_ok(v, self.type == "int_list") for v in value)
        return self._number_ok(value, self.type == "int")

    def _number_ok(self, value, integer: bool) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):  # bool is an int to Python
            return False
        if integer and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        return not (
            (self.at_least is not None and value < self.at_least)
            or (self.above is not None and value <= self.above)
            or (self.at_most is not None and value > self.at_most)
            or (self.below is not None and value >= self.below)
        )

    def check(self, owner: str, name: str, value) -> None:
        """:class:`ConfigError` ``OWNER: NAME must be ALLOWED, got VALUE (DOC)`` unless `value` is allowed."""
        if not self.ok(value):
            raise ConfigError(f"{owner}: {name} must be {self.allowed()}, got {value!r} ({self.doc})")


def defaults_of(spec: Mapping[str, Param]) -> dict[str, Any]:
    """Every parameter's default, by name (lists copied)."""
    return {name: list(p.default) if isinstance(p.default, list) else p.default for name, p in spec.items()}


def check_params(owner: str, spec: Mapping[str, Param], params: Mapping[str, Any]) -> None:
    """Check every value of `params` whose name `spec` declares (unknown names are the caller's to refuse,
    with its own hint); the first bad one is a one-line :class:`ConfigError` naming it."""
    for name, value in params.items():
        if name in spec:
            spec[name].check(owner, name, value)


# ----------------------------------------------------------------------------------------------
# checks used by validate: each raises DataError naming the file, the column, the rows/ids and the fix
# ----------------------------------------------------------------------------------------------
REBUILD = "rebuild the data set with `locus data` (adapters write valid files)"


def require_columns(df: pd.DataFrame, required, path: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {missing}; required: {list(required)}, found: "
            f"{list(df.columns)}. Add them, or {REBUILD}."
        )


def int_column(df: pd.DataFrame, col: str, path: str) -> pd.Series:
    """Whole-number ids (numbers, or text holding whole numbers) -> int64; anything else is refused."""
    raw = df[col]
    num = (
        pd.to_numeric(raw, errors="coerce")
        if not pd.api.types.is_bool_dtype(raw)
        else pd.Series(np.nan, index=raw.index)
    )
    values = num.to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) > 2**53)
    if bad.any():
        rows = np.flatnonzero(bad)
        shown = ", ".join(f"row {r}: {format_value(raw.iloc[r])}" for r in rows[:SHOW])
        raise DataError(
            f"{path}: column {col!r} must hold whole-number ids; {len(rows)} bad value(s) "
            f"(0-based rows): {shown}{rows_from(df, bad)}. Give every row an integer id, or {REBUILD}."
        )
    return pd.Series(values.astype(np.int64), index=raw.index)


def text_column(df: pd.DataFrame, col: str, path: str, id_col: str, strip: bool = False) -> pd.Series:
    """Non-empty strings (NaN/None, "" and whitespace are empty; numbers or bytes are not text)."""
    raw = df[col]
    objects = raw.to_numpy(dtype=object)
    missing = raw.isna().to_numpy()
    is_text = np.fromiter((isinstance(v, str) for v in objects), dtype=bool, count=len(objects))
    not_text = ~missing & ~is_text
    if not_text.any():
        kinds = sorted({type(v).__name__ for v in objects[not_text]})
        raise DataError(
            f"{path}: column {col!r} must hold text, found {'/'.join(kinds)} value(s) in {int(not_text.sum())} "
            f"row(s), {id_col} {format_ids(df.loc[not_text, id_col])}{rows_from(df, not_text)}; "
            f"store the column as strings, or {REBUILD}."
        )
    text = pd.Series(np.where(missing, "", objects), index=raw.index, dtype=object).astype(str)
    empty = (text.str.strip() == "").to_numpy()
    if empty.any():
        hint = " (use the benchmark name as category when there is no finer label)" if col == "category" else ""
        raise DataError(
            f"{path}: column {col!r} is empty in {int(empty.sum())} row(s), {id_col} "
            f"{format_ids(df.loc[empty, id_col])}{rows_from(df, empty)}; fill it in{hint}."
        )
    return text.str.strip() if strip else text


def known_splits(queries: pd.DataFrame, splits, path: str) -> None:
    unknown = ~queries["split"].isin(splits)
    if unknown.any():
        values = sorted(queries.loc[unknown, "split"].unique())
        cased = [v for v in values if v.strip().lower() in splits]
        hint = (
            f"write split names in lower case without spaces ({cased[0]!r} -> {cased[0].strip().lower()!r})"
            if cased
            else "rename e.g. 'dev'/'validation' to 'val'"
        )
        raise DataError(
            f"{path}: column 'split' has unknown value(s) {values[:SHOW]} in {int(unknown.sum())} row(s), "
            f"prompt_id {format_ids(queries.loc[unknown, 'prompt_id'])}{rows_from(queries, unknown.to_numpy())}; "
            f"allowed: {', '.join(splits)}; {hint}."
        )


def model_metadata(models: pd.DataFrame, path: str) -> None:
    """Optional columns: params_b a number >= 0 (or missing); cost a number >= 0 for every model (cost per
    query, any unit); family / tags text (or missing)."""
    if "params_b" in models.columns:
        num = pd.to_numeric(models["params_b"], errors="coerce")
        bad = (models["params_b"].notna() & num.isna()) | (num < 0) | np.isinf(num.to_numpy(np.float64, na_value=0))
        if bad.any():
            raise DataError(
                f"{path}: column 'params_b' (parameters in billions) must be a number >= 0 or empty; "
                f"bad for model_id {format_ids(models.loc[bad, 'model_id'])}: "
                f"{models.loc[bad, 'params_b'].tolist()[:SHOW]}."
            )
    if "cost" in models.columns:
        num = pd.to_numeric(models["cost"], errors="coerce") if not pd.api.types.is_bool_dtype(models["cost"]) else None
        values = np.full(len(models), np.nan) if num is None else num.to_numpy(np.float64, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            raise DataError(
                f"{path}: column 'cost' (cost per query, any unit) must be a finite number >= 0 for every model; "
                f"bad for model_id {format_ids(models.loc[bad, 'model_id'])}: "
                f"{[format_value(v) for v in models.loc[bad, 'cost'].tolist()[:SHOW]]}. Give every model its cost, "
                f"or drop the column (cost experiments then use params_b)."
            )
    for col in ("family", "tags"):
        if col in models.columns:
            values = models[col].to_numpy(dtype=object)
            bad = np.fromiter((not (isinstance(v, str) or pd.isna(v)) for v in values), dtype=bool, count=len(values))
            if bad.any():
                raise DataError(
                    f"{path}: column {col!r} must hold text (or be empty); bad for model_id "
                    f"{format_ids(models.loc[bad, 'model_id'])}."
                )


def score_column(scores: pd.DataFrame, path: str) -> pd.Series:
    raw = scores["score"]
    values = raw.astype(np.float64) if pd.api.types.is_bool_dtype(raw) else pd.to_numeric(raw, errors="coerce")
    v = values.to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(v) | (v < 0) | (v > 1)
    if bad.any():
        rows = np.flatnonzero(bad)
        examples = ", ".join(
            f"row {r} (prompt_id={scores['prompt_id'].iat[r]}, model_id={scores['model_id'].iat[r]}, "
            f"score={format_value(raw.iat[r])})"
            for r in rows[:SHOW]
        )
        raise DataError(
            f"{path}: column 'score' must be a number in [0, 1]; {len(rows)} row(s) are NaN, infinite, text or out "
            f"of range: {examples}{rows_from(scores, bad)}. Rescale scores to [0, 1] (1 = correct) and drop "
            f"unevaluated pairs instead of writing NaN."
        )
    return pd.Series(v, index=raw.index)


def known_ids(scores: pd.DataFrame, frame: pd.DataFrame, col: str, path: str, fname: str, what: str) -> None:
    unknown = ~scores[col].isin(frame[col])
    if unknown.any():
        raise DataError(
            f"{path}: {int(unknown.sum())} row(s) refer to {col}(s) not in {fname}: "
            f"{format_ids(scores.loc[unknown, col])}; add those {what} or drop the rows."
        )


def every_model_and_split_scored(queries, models, scores, splits, qf: str, mf: str) -> None:
    scored = models["model_id"].isin(scores["model_id"])
    if not scored.all():
        missing = models.loc[~scored]
        names = ", ".join(f"{i} ({n})" for i, n in zip(missing["model_id"][:SHOW], missing["name"][:SHOW]))
        raise DataError(
            f"{mf}: {len(missing)} model(s) have no scores in scores.parquet: {names}; "
            f"remove them from models.parquet or add their scores."
        )
    scored_ids = set(scores["prompt_id"].unique().tolist())
    for split in splits:
        ids = queries.loc[queries["split"] == split, "prompt_id"]
        if not ids.isin(scored_ids).any():
            raise DataError(
                f"{qf}: split {split!r} has {len(ids)} queries but none of them has a score in "
                f"scores.parquet; add scores for them (a split without scores cannot be trained or "
                f"evaluated on)."
            )


# ----------------------------------------------------------------------------------------------
# error-message helpers
# ----------------------------------------------------------------------------------------------
def format_ids(series: pd.Series) -> str:
    uniq = pd.unique(series)
    shown = ", ".join(str(v) for v in uniq[:SHOW])
    return shown + (f" (and {len(uniq) - SHOW} more)" if len(uniq) > SHOW else "")


def rows_from(frame: pd.DataFrame, mask) -> str:
    """' (from evals.csv rows 3, 9)' for the masked rows of a raw frame with origin columns, else ''."""
    where = where_rows(frame.loc[np.asarray(mask, dtype=bool)].head(SHOW))
    return f" (from {where})" if where else ""


def format_value(v) -> str:
    """A cell for a message: numbers plain (nan, inf, 5.5), text quoted."""
    v = v.item() if isinstance(v, np.generic) else v
    return repr(v) if isinstance(v, str) else str(v)


def short_text(text, width: int = 40) -> str:
    text = str(text)
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def origin_files(frame: pd.DataFrame) -> str:
    """The input file(s) named by an ``origin`` column ('' when there is none)."""
    if ORIGIN not in frame.columns:
        return ""
    files = sorted(str(f) for f in pd.unique(frame[ORIGIN]))
    return ", ".join(files[:3]) + (f" (and {len(files) - 3} more)" if len(files) > 3 else "")


def where_each(frame: pd.DataFrame) -> list[str]:
    """'<origin> row <origin_row>' for each row of `frame` (empty strings without origin columns)."""
    if ORIGIN not in frame.columns:
        return [""] * len(frame)
    files = frame[ORIGIN].astype(str).tolist()
    if ORIGIN_ROW not in frame.columns:
        return files
    return [f"{f} row {r}" for f, r in zip(files, frame[ORIGIN_ROW].tolist())]


def where_rows(frame: pd.DataFrame) -> str:
    """'<file> rows 3, 9' for the rows of `frame` ('' without origin columns), grouped by file."""
    if ORIGIN not in frame.columns:
        return ""
    if ORIGIN_ROW not in frame.columns:
        return ", ".join(sorted(set(frame[ORIGIN].astype(str))))
    groups: dict[str, list] = {}
    for f, r in zip(frame[ORIGIN].astype(str), frame[ORIGIN_ROW].tolist()):
        groups.setdefault(f, []).append(str(r))
    return "; ".join(f"{f} row{'s' if len(rs) > 1 else ''} {', '.join(rs[:SHOW])}" for f, rs in groups.items())


def describe_pair(scores, dup, prompt_id, model_id, queries, models) -> str:
    out = f"prompt_id {prompt_id}"
    if queries is not None:
        out += f" ({short_text(queries.loc[queries['prompt_id'] == prompt_id, 'prompt'].iat[0])})"
    out += f" x model_id {model_id}"
    if models is not None:
        out += f" ({short_text(models.loc[models['model_id'] == model_id, 'name'].iat[0])})"
    rows = scores.loc[dup & (scores["prompt_id"] == prompt_id) & (scores["model_id"] == model_id)]
    where = where_rows(rows)
    return out + f": {len(rows)} rows" + (f" ({where})" if where else "")


def describe_overlap(queries: pd.DataFrame, overlap: np.ndarray) -> str:
    parts = []
    for text, group in list(queries.loc[overlap].groupby("prompt", sort=False))[:3]:
        copies = ", ".join(
            f"{split} (prompt_id {pid}" + (f", {where}" if where else "") + ")"
            for split, pid, where in zip(group["split"], group["prompt_id"], where_each(group))
        )
        parts.append(f"{short_text(text)} in {copies}")
    return "; ".join(parts)
