"""Export a canonical data set to one CSV in the format of the ``csv`` source (:mod:`locus.data.csv_source`).

The reverse of bringing your own data: :func:`to_csv_frame` turns an :class:`~locus.data.canonical.EvalData`
into one row per scored (prompt, model) pair with the columns ``prompt, model, score, benchmark, category,
split`` and the model columns the csv source reads (:data:`MODEL_COLUMNS`, taken from
:data:`~locus.data.csv_source.OPTIONAL`: ``cost`` and whichever others it declares) where every model has a
value, in the csv source's order, rows sorted by prompt_id then model_id, so that ``locus data csv --params
'{"path": FILE}'`` rebuilds the same pool: the same prompt texts, model names, scores (written in the shortest
form that reads back to the same float), split of every query, benchmark, category and model columns.
:func:`write_csv` writes it atomically (UTF-8, ``,``-separated, ``.tsv`` tab-separated, ``.gz``
gzip-compressed; lines end in ``\\n``; fields are quoted where needed, every field when a text cell holds a
carriage return, which an unquoted field would turn into a line break). What the format cannot carry is
listed by :func:`limits` and reported, never dropped silently: other model columns (e.g. ``tags``,
``size_bucket``), a model column some model has no value in, the synthetic generator's ``truth.parquet``,
queries without any score, several queries with one prompt text in one split (the csv source makes them one
query), spaces around a benchmark, category or text model value (stripped when read), and the ids: prompt_ids
are renumbered 0, 1, 2, ... in their order and model_ids by sorted name (or, where that keeps them, by first
appearance: the rebuild parameters say which). A prompt text in several splits is carried (one query per
split) and needs the data-set option ``split_overlap: keep_all`` to be rebuilt as it is.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from locus import atomic
from locus.data.canonical import EvalData, read_dataset
from locus.data.csv_source import OPTIONAL, REQUIRED
from locus.data.truth import TRUTH_FILE
from locus.errors import ConfigError

SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz")
QUERY_COLUMNS = ("benchmark", "category", "split")  # the csv source's optional columns of a query
MODEL_COLUMNS = tuple(c for c in OPTIONAL if c not in QUERY_COLUMNS)  # ... and of a model (cost, ...)


@dataclass(frozen=True)
class Export:
    """What :func:`write_csv` wrote and how to rebuild the pool from it."""

    path: Path
    rows: int
    queries: int
    models: int
    columns: tuple[str, ...]
    params: dict = field(default_factory=dict)  # the csv source's parameters that rebuild the pool
    split_overlap: str | None = None  # the data-set option the rebuild needs, None = the default
    notes: tuple[str, ...] = ()  # what the CSV does not carry

    def rebuild_command(self, out: str = "DIR") -> str:
        """The ``locus data csv`` command line that rebuilds the pool into `out`."""
        overlap = f" --split-overlap {self.split_overlap}" if self.split_overlap else ""
        return f"locus data csv --out {out} --params {shlex.quote(json.dumps(self.params))}{overlap}"


def carried_model_columns(models: pd.DataFrame) -> list[str]:
    """The columns of `models` the CSV carries: those of :data:`MODEL_COLUMNS` with a value for every model
    (the csv source refuses a model without one)."""
    return [c for c in MODEL_COLUMNS if c in models.columns and not _blank(models[c]).any()]


def to_csv_frame(data: EvalData) -> pd.DataFrame:
    """One row per score: ``prompt, model, score, benchmark, category, split`` and the models' columns the csv
    source reads (:func:`carried_model_columns`: ``cost``, ...; each repeated on every row of its model), sorted
    by prompt_id then model_id (so the csv source numbers the queries in their original order)."""
    q = data.queries.set_index("prompt_id")
    m = data.models.set_index("model_id")
    s = data.scores.sort_values(["prompt_id", "model_id"], kind="stable")
    pid, mid = s["prompt_id"].to_numpy(np.int64), s["model_id"].to_numpy(np.int64)
    frame = pd.DataFrame(
        {
            "prompt": q["prompt"].reindex(pid).to_numpy(dtype=object),
            "model": m["name"].reindex(mid).to_numpy(dtype=object),
            "score": s["score"].to_numpy(np.float64),
            "benchmark": q["benchmark"].reindex(pid).to_numpy(dtype=object),
            "category": q["category"].reindex(pid).to_numpy(dtype=object),
            "split": q["split"].reindex(pid).to_numpy(dtype=object),
        }
    )
    for column in carried_model_columns(data.models):
        frame[column] = m[column].reindex(mid).to_numpy()
    order = [c for c in (*REQUIRED, *OPTIONAL) if c in frame.columns]
    return frame[order].reset_index(drop=True)


def limits(data: EvalData, frame: pd.DataFrame | None = None) -> tuple[dict, str | None, list[str]]:
    """``(params, split_overlap, notes)``: the csv source's parameters (besides ``path``) and the data-set
    option that rebuild `data` from its CSV, and one line for each thing of `data` the CSV does not carry."""
    frame = to_csv_frame(data) if frame is None else frame
    notes, params, overlap = [], {}, None
    q = data.queries
    scored = q[q["prompt_id"].isin(data.scores["prompt_id"])]

    carried = carried_model_columns(data.models)
    extra = [c for c in data.models.columns if c not in ("model_id", "name", *MODEL_COLUMNS)]
    if extra:
        notes.append(
            f"model column(s) {extra} of models.parquet (the csv source reads a model's name and "
            f"{', '.join(MODEL_COLUMNS)})"
        )
    for column in (c for c in MODEL_COLUMNS if c in data.models.columns and c not in carried):
        missing = data.models.loc[_blank(data.models[column]), "name"].tolist()
        notes.append(
            f"model column {column!r}: {len(missing)} model(s) have no value (e.g. {missing[:3]}), and the csv "
            f"source needs one for every model"
        )
    unscored = len(q) - len(scored)
    if unscored:
        notes.append(f"{unscored} querie(s) without any score (a CSV row is a scored (prompt, model) pair)")
    merged = scored.duplicated(["prompt", "split"], keep="first")
    if merged.any():
        texts = scored.loc[merged, "prompt"].unique()
        notes.append(
            f"{int(merged.sum())} querie(s) repeat the prompt text of another query in the same split "
            f"(e.g. {_short(texts[0])}): the csv source makes each such text one query, its scores combined by "
            f"the data-set option `duplicates`"
        )
    if (scored.groupby("prompt")["split"].nunique() > 1).any():
        overlap = "keep_all"  # carried (one query per split), but refused by the default `error`
    text_columns = [(scored, "benchmark"), (scored, "category")]
    text_columns += [(data.models, c) for c in carried if _is_text(data.models[c])]
    for table, col in text_columns:
        values = table[col].astype(str)
        spaced = values != values.str.strip()
        if spaced.any():
            notes.append(f"spaces around {int(spaced.sum())} {col} value(s) (the csv source strips them)")

    ids = np.sort(scored["prompt_id"].to_numpy(np.int64))
    if not np.array_equal(ids, np.arange(len(ids))):
        notes.append(f"prompt_ids (renumbered 0..{len(ids) - 1} in their order; the data set's go up to {ids.max()})")
    models = data.models.sort_values("model_id")
    names, model_ids = models["name"].tolist(), models["model_id"].to_numpy(np.int64)
    order_kept = names == sorted(names)
    if not order_kept and list(pd.unique(frame["model"])) == names:
        params["model_order"] = "appearance"  # first appearance follows model_id: the order is kept
        order_kept = True
    if not np.array_equal(model_ids, np.arange(len(names))) or not order_kept:
        how = "in their order" if order_kept else "by sorted model name"
        notes.append(f"model_ids (renumbered 0..{len(names) - 1} {how}; the data set's go up to {model_ids.max()})")
    return params, overlap, notes


def write_csv(data_dir: str | Path, out_path: str | Path) -> Export:
    """Read the canonical data set `data_dir` and write it to `out_path` (.csv, .csv.gz, .tsv or .tsv.gz) in
    the csv source's format, atomically; return what was written, how to rebuild it and what it leaves out."""
    out = Path(out_path)
    name = out.name.lower()
    if not name.endswith(SUFFIXES):
        raise ConfigError(f"{out}: the csv source reads {', '.join(SUFFIXES)}; name the file accordingly")
    data = read_dataset(data_dir)
    frame = to_csv_frame(data)
    params, overlap, notes = limits(data, frame)
    if (Path(data_dir) / TRUTH_FILE).is_file():
        notes.append(f"{TRUTH_FILE} (the synthetic generator's true P(correct) of every pair)")
    text = _csv_text(frame, "\t" if ".tsv" in name else ",")
    with atomic.atomic_path(out) as tmp:
        if name.endswith(".gz"):
            with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                gz.write(text.encode("utf-8"))  # mtime 0: the same data set gives the same bytes
        else:
            tmp.write_bytes(text.encode("utf-8"))
    return Export(
        path=out,
        rows=len(frame),
        queries=int(frame.groupby(["prompt", "split"]).ngroups),
        models=int(frame["model"].nunique()),
        columns=tuple(frame.columns),
        params={"path": str(out), **params},
        split_overlap=overlap,
        notes=tuple(notes),
    )


def _csv_text(frame: pd.DataFrame, sep: str) -> str:
    texts = [c for c in frame.columns if _is_text(frame[c])]
    carriage_return = any(frame[c].astype(str).str.contains("\r", regex=False).any() for c in texts)
    buf = io.StringIO(newline="")
    writer = csv.writer(
        buf, delimiter=sep, lineterminator="\n", quoting=csv.QUOTE_ALL if carriage_return else csv.QUOTE_MINIMAL
    )
    writer.writerow(frame.columns)
    writer.writerows(zip(*(_cells(frame[c]) for c in frame.columns)))
    return buf.getvalue()


def _cells(values: pd.Series) -> list[str]:
    """A column's cells as text: numbers by :func:`_number`, whole numbers and flags as integers."""
    if _is_text(values):
        return values.astype(str).tolist()
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_integer_dtype(values):
        return [str(int(v)) for v in values.tolist()]
    return [_number(v) for v in values.to_numpy(np.float64).tolist()]


def _is_text(values: pd.Series) -> bool:
    return values.dtype == object or pd.api.types.is_string_dtype(values)


def _blank(values: pd.Series) -> np.ndarray:
    """Missing cells, and text cells of spaces only (the csv source reads them as empty)."""
    blank = values.isna().to_numpy()
    if _is_text(values):
        blank = blank | values.astype(str).str.strip().eq("").to_numpy()
    return blank


def _number(value: float) -> str:
    """The shortest text that reads back as the same float (``1`` and ``0`` for whole numbers)."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _short(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 1] + "…")
