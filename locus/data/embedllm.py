"""Adapter for the paper's data: the EmbedLLM correctness data (Hub data set ``RZ412/EmbedLLM``, Apache-2.0).

Input files (in ``dir``; fetched from the Hub with ``download: true`` by users with internet access):

* ``train.csv``, ``val.csv``, ``test.csv``: long format, one row per (prompt, task variant, model) with
  columns ``prompt_id, model_id, model_name, label, prompt, category_id, category``; the prompt text is
  repeated in every row (train.csv is 2.7 GB);
* ``model_order.csv``: ``model_id, model_name`` (sometimes with an unnamed index column), 112 models;
* ``question_order.csv``: ``prompt_id, prompt``; only used for prompt text when a split file lacks ``prompt``.

How the canonical data set is formed (mirroring the authors' ``make_concise_split.py`` where it is defined):

* **split** = the file a prompt_id appears in (a prompt_id found in several files keeps the first of
  train, val, test; this is logged, it should not happen in the released data);
* **benchmark** = the category merged to one of the 10 benchmarks (``mmlu_*`` -> MMLU, ``gpqa_*`` -> GPQA,
  ``TruthfulQA_MC1`` -> TruthfulQA, ...; matched case-insensitively ignoring ``_``/``-``/spaces); an
  unknown category is kept verbatim as its own benchmark (with a warning); **category** = the raw label;
* **meta** (prompt, category) of a prompt_id listed under several categories comes from its first row;
* **scores**: the same (prompt, model) pair can occur several times (e.g. a GPQA question in two GPQA
  variants); ``duplicates`` resolves them: ``last`` row in file order (the authors' choice, default),
  ``max`` (EmbedLLM's KNN), ``mean``, or ``error``;
* **models**: ids and names from ``model_order.csv``; rows that lack ``model_id`` are mapped by
  ``model_name`` (``org__name`` spellings are accepted for ``org/name``).

The CSVs are read in chunks with only the needed columns; prompt text is kept once per prompt.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from locus.data import download as dl
from locus.data.canonical import DUPLICATE_POLICIES, resolve_duplicates
from locus.errors import ConfigError, DataError

log = logging.getLogger(__name__)

NAME = "embedllm"
SPLIT_FILES = {"train": "train.csv", "val": "val.csv", "test": "test.csv"}
MODEL_ORDER = "model_order.csv"
QUESTION_ORDER = "question_order.csv"
COLUMNS = ("prompt_id", "model_id", "model_name", "label", "prompt", "category_id", "category")
DEFAULTS = {
    "dir": None,  # directory with the five CSVs; default: <cache>/embedllm/<revision> (see download.cache_dir)
    "download": False,  # fetch missing CSVs from the Hub (3.3 GB)
    "revision": dl.EMBEDLLM_REVISION,  # Hub revision to download (commit hash or "main")
    "duplicates": "last",  # policy for repeated (prompt, model) rows: last / max / mean / error
    "chunksize": 100_000,  # CSV rows read at a time (memory vs. speed)
}
# normalised category prefix -> benchmark name (order matters only for shared prefixes; there are none)
BENCHMARKS = {
    "mmlu": "MMLU", "gpqa": "GPQA", "mathqa": "MathQA", "logiqa": "LogiQA", "medmcqa": "MedMCQA",
    "piqa": "PIQA", "truthfulqa": "TruthfulQA", "gsm8k": "GSM8K", "asdiv": "ASDiv",
    "socialiqa": "SocialIQA", "siqa": "SocialIQA",
}


def benchmark_of(category: str) -> str | None:
    """The merged benchmark of a raw category label, or None when it is not one of the 10."""
    key = re.sub(r"[\s_\-]+", "", str(category).strip().lower())
    for prefix, name in BENCHMARKS.items():
        if key.startswith(prefix):
            return name
    return None


def build(params: dict) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return canonical ``(queries, models, scores)`` frames (see :mod:`locus.data.canonical`)."""
    p = _params(params)
    directory = _resolve_dir(p)
    models = read_model_order(directory / MODEL_ORDER)
    name_to_id = _name_lookup(models)
    fallback_text = None

    meta_parts, score_parts, seen = [], [], set()
    for split, fname in SPLIT_FILES.items():
        path = directory / fname
        header = _header(path)
        missing = [c for c in ("prompt_id", "label", "category") if c not in header]
        if "model_id" not in header and "model_name" not in header:
            missing.append("model_id or model_name")
        if missing:
            raise DataError(f"{path}: missing column(s) {missing}; expected {list(COLUMNS)}, found {header}.")
        if "prompt" not in header and fallback_text is None:
            fallback_text = _read_question_order(directory / QUESTION_ORDER, path)
        usecols = [c for c in ("prompt_id", "model_id", "model_name", "label", "prompt", "category") if c in header]
        n_rows, n_dups_across, file_seen = 0, 0, set()
        reader = pd.read_csv(path, usecols=usecols, chunksize=int(p["chunksize"]),
                             dtype={"model_name": "category", "category": "category", "prompt": object})
        for chunk in reader:
            first_row = n_rows + 2  # CSV row number of the chunk's first data row (the header is row 1)
            n_rows += len(chunk)
            pid = _int_array(chunk["prompt_id"], path, "prompt_id", first_row)
            mid = _model_ids(chunk, name_to_id, path, first_row)
            label = _labels(chunk["label"], path, first_row)
            score_parts.append(pd.DataFrame({"prompt_id": pid, "model_id": mid, "score": label}))
            # meta: first row of every prompt_id not seen before (in this or an earlier file)
            first = ~pd.Series(pid).duplicated().to_numpy()
            earlier = np.isin(pid, np.fromiter(seen, dtype=np.int64, count=len(seen)))
            new = first & ~earlier
            in_this_file = np.isin(pid, np.fromiter(file_seen, dtype=np.int64, count=len(file_seen)))
            n_dups_across += int((first & earlier & ~in_this_file).sum())
            file_seen.update(pid[first].tolist())
            rows = chunk.iloc[np.flatnonzero(new)]
            meta_parts.append(pd.DataFrame({
                "prompt_id": pid[new],
                "prompt": rows["prompt"].astype(str).to_numpy() if "prompt" in rows else None,
                "category": rows["category"].astype(str).to_numpy(),
                "split": split,
            }))
            seen.update(pid[new].tolist())
        if n_rows == 0:
            raise DataError(f"{path}: has a header but no rows; download it again.")
        if n_dups_across:
            log.warning("%s: %d prompt_id(s) already occur in an earlier split file; they keep their first split",
                        path, n_dups_across)
        log.info("embedllm: read %s (%d rows)", path, n_rows)

    queries = pd.concat(meta_parts, ignore_index=True)
    if fallback_text is not None:
        need = queries["prompt"].isna()
        queries.loc[need, "prompt"] = queries.loc[need, "prompt_id"].map(fallback_text)
        if queries["prompt"].isna().any():
            bad = queries.loc[queries["prompt"].isna(), "prompt_id"].head(5).tolist()
            raise DataError(f"{directory / QUESTION_ORDER}: no text for prompt_id(s) {bad}.")
    queries["benchmark"] = _benchmarks(queries["category"])
    queries = queries[["prompt_id", "prompt", "benchmark", "category", "split"]].astype(
        {"prompt_id": np.int64, "prompt": str, "benchmark": str, "category": str, "split": str})

    scores = pd.concat(score_parts, ignore_index=True)
    scores = resolve_duplicates(scores, p["duplicates"], source=f"{directory} (train/val/test.csv)")
    scores = scores.astype({"prompt_id": np.int64, "model_id": np.int64, "score": np.float64})
    used = models["model_id"].isin(scores["model_id"])
    if not used.all():
        log.warning("embedllm: %d model(s) of model_order.csv have no rows and are left out", int((~used).sum()))
        models = models[used]
    return queries.reset_index(drop=True), models.reset_index(drop=True), scores.reset_index(drop=True)


def read_model_order(path: Path) -> pd.DataFrame:
    """``model_order.csv`` -> canonical models frame (model_id, name), sorted by id; index columns dropped."""
    if not path.is_file():
        raise DataError(f"{path}: missing. It comes with the EmbedLLM CSVs (Hub data set RZ412/EmbedLLM).")
    df = pd.read_csv(path)
    df = df[[c for c in df.columns if not str(c).lower().startswith("unnamed")]]
    missing = [c for c in ("model_id", "model_name") if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(df.columns)}.")
    out = pd.DataFrame({"model_id": _int_array(df["model_id"], path, "model_id", 2),
                        "name": df["model_name"].astype(str).str.strip()})
    if out["model_id"].duplicated().any() or out["name"].duplicated().any():
        raise DataError(f"{path}: model_id and model_name must be unique.")
    return out.sort_values("model_id").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
def _params(params: dict | None) -> dict:
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"embedllm: unknown parameter(s) {unknown}; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    if p["duplicates"] not in DUPLICATE_POLICIES:
        raise ConfigError(f"embedllm: duplicates must be one of {DUPLICATE_POLICIES}, got {p['duplicates']!r}")
    if int(p["chunksize"]) < 1:
        raise ConfigError("embedllm: chunksize must be a positive number of rows")
    return p


def _resolve_dir(p: dict) -> Path:
    revision = str(p["revision"])
    directory = Path(p["dir"]).expanduser() if p["dir"] else dl.cache_dir("embedllm", revision[:12])
    needed = [MODEL_ORDER, *SPLIT_FILES.values()]
    missing = [f for f in needed if not (directory / f).is_file()]
    if missing and p["download"]:
        dl.download_files(dl.EMBEDLLM_URL.format(revision=revision), list(dl.EMBEDLLM_FILES), directory,
                          param_hint="the `dir` parameter of the embedllm source")
        missing = []
    if missing:
        raise DataError(
            f"{directory}: missing {', '.join(missing)}. These are the CSVs of the Hub data set RZ412/EmbedLLM "
            f"({', '.join(dl.EMBEDLLM_FILES)}, 3.3 GB). Set `download: true` on a machine with internet access, "
            f"or download them by hand from {dl.EMBEDLLM_URL.format(revision=revision)} into a directory and "
            f"set `dir` to it."
        )
    return directory


def _header(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"{path}: missing.")
    try:
        return [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({exc}); download it again.") from None


def _name_lookup(models: pd.DataFrame) -> dict[str, int]:
    """model name -> id, accepting ``org/name``, ``org__name`` and any letter case."""
    out = {}
    for mid, name in zip(models["model_id"], models["name"]):
        for key in (name, name.replace("/", "__"), name.replace("__", "/")):
            out[key] = int(mid)
            out[key.lower()] = int(mid)
    return out


def _model_ids(chunk: pd.DataFrame, name_to_id: dict, path: Path, first_row: int) -> np.ndarray:
    ids = pd.to_numeric(chunk["model_id"], errors="coerce") if "model_id" in chunk else \
        pd.Series(np.nan, index=chunk.index)
    need = ids.isna().to_numpy()
    if need.any():
        if "model_name" not in chunk:
            rows = np.flatnonzero(need)[:5] + first_row
            raise DataError(f"{path}: empty model_id in CSV row(s) {rows.tolist()} (header = row 1) and no model_name column to map from.")
        names = chunk["model_name"].astype(object).to_numpy()[need]
        mapped = pd.Series(names).map(lambda n: name_to_id.get(str(n).strip(), name_to_id.get(str(n).strip().lower())))
        if mapped.isna().any():
            unknown = sorted({str(n) for n in pd.Series(names)[mapped.isna().to_numpy()]})[:5]
            raise DataError(f"{path}: model_name(s) {unknown} are not in {MODEL_ORDER}; use the model_order.csv "
                            f"that belongs to these CSVs.")
        ids = ids.to_numpy(np.float64, copy=True)
        ids[need] = mapped.to_numpy(np.float64)
        return ids.astype(np.int64)
    return _int_array(ids, path, "model_id", first_row)


def _int_array(values: pd.Series, path: Path, column: str, first_row: int) -> np.ndarray:
    num = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = np.isnan(num) | (num != np.round(num))
    if bad.any():
        rows = (np.flatnonzero(bad)[:5] + first_row).tolist()
        raise DataError(f"{path}: column {column!r} must hold integers; bad value(s) in CSV row(s) {rows} (header = row 1).")
    return num.astype(np.int64)


def _labels(values: pd.Series, path: Path, first_row: int) -> np.ndarray:
    num = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = np.isnan(num) | (num < 0) | (num > 1)
    if bad.any():
        rows = (np.flatnonzero(bad)[:5] + first_row).tolist()
        raise DataError(f"{path}: column 'label' must be 0/1 (or in [0, 1]); bad value(s) in CSV row(s) {rows} (header = row 1).")
    return num.astype(np.float32)


def _benchmarks(categories: pd.Series) -> pd.Series:
    mapping = {c: benchmark_of(c) for c in categories.unique()}
    unknown = sorted(c for c, b in mapping.items() if b is None)
    if unknown:
        log.warning("embedllm: categories %s are not among the 10 benchmarks; each is kept as its own benchmark",
                    unknown[:10])
    return categories.map({c: (b if b is not None else c) for c, b in mapping.items()})


def _read_question_order(path: Path, needed_by: Path) -> dict[int, str]:
    if not path.is_file():
        raise DataError(f"{needed_by}: has no 'prompt' column, and {path} (which holds the prompt text) is missing.")
    df = pd.read_csv(path)
    if "prompt" not in df.columns:
        raise DataError(f"{path}: missing column 'prompt'; found {list(df.columns)}.")
    ids = df["prompt_id"] if "prompt_id" in df.columns else pd.Series(np.arange(len(df)))  # row i <-> prompt_id i
    return dict(zip(_int_array(ids, path, "prompt_id", 2).tolist(), df["prompt"].astype(str)))
