"""Adapter for the paper's data: the EmbedLLM correctness data (Hub data set ``RZ412/EmbedLLM``, Apache-2.0).

Input files (in ``dir``; fetched from the Hub with ``download: true`` by users with internet access):

* ``train.csv``, ``val.csv``, ``test.csv``: long format, one row per (prompt, task variant, model) with
  columns ``prompt_id, model_id, model_name, label, prompt, category_id, category``; the prompt text is
  repeated in every row (train.csv is 2.7 GB);
* ``model_order.csv``: ``model_id, model_name`` (sometimes with an unnamed index column), 112 models;
* ``question_order.csv``: ``prompt_id, prompt``; only used for prompt text when a split file lacks ``prompt``.

How splits, benchmarks, scores and models are formed (mirroring the authors' ``make_concise_split.py``
where it is defined): :func:`build`.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from locus.data import download as dl
from locus.data.canonical import ORIGIN, ORIGIN_ROW, SPLIT_OVERLAP_POLICIES, pick_split
from locus.data.validation import Param, check_params, defaults_of
from locus.errors import ConfigError, DataError

log = logging.getLogger(__name__)

NAME = "embedllm"
SPLIT_FILES = {"train": "train.csv", "val": "val.csv", "test": "test.csv"}
MODEL_ORDER = "model_order.csv"
QUESTION_ORDER = "question_order.csv"
COLUMNS = ("prompt_id", "model_id", "model_name", "label", "prompt", "category_id", "category")
PARAMS = {
    "dir": Param(
        None,
        "directory with the five CSVs; null = <cache>/embedllm/<revision> (see download.cache_dir)",
        "path",
        nullable=True,
    ),
    "download": Param(False, "fetch missing CSVs from the Hub (3.3 GB)", "bool"),
    "revision": Param(dl.EMBEDLLM_REVISION, "Hub revision to download (commit hash or main)", "str"),
    "split_overlap": Param(
        "error",
        "data-set option (set by `locus data`): a prompt_id in several split files",
        "str",
        choices=SPLIT_OVERLAP_POLICIES,
    ),
    "chunksize": Param(100_000, "CSV rows read at a time (memory vs. speed)", "int", at_least=1),
}
DEFAULTS = defaults_of(PARAMS)
# normalised category prefix -> benchmark name (order matters only for shared prefixes; there are none)
BENCHMARKS = {
    "mmlu": "MMLU",
    "gpqa": "GPQA",
    "mathqa": "MathQA",
    "logiqa": "LogiQA",
    "medmcqa": "MedMCQA",
    "piqa": "PIQA",
    "truthfulqa": "TruthfulQA",
    "gsm8k": "GSM8K",
    "asdiv": "ASDiv",
    "socialiqa": "SocialIQA",
    "siqa": "SocialIQA",
}


def benchmark_of(category: str) -> str | None:
    """The merged benchmark of a raw category label, or None when it is not one of the 10."""
    key = re.sub(r"[\s_\-]+", "", str(category).strip().lower())
    for prefix, name in BENCHMARKS.items():
        if key.startswith(prefix):
            return name
    return None


def build(params: dict) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return raw canonical ``(queries, models, scores)`` frames (every score row, duplicates included).

    How the canonical data set is formed (mirroring the authors' ``make_concise_split.py`` where it is defined):

    * **split** = the file a prompt_id appears in. A prompt_id listed in more than one file is resolved by
      the data-set option ``split_overlap`` (default ``error``; ``keep_test`` keeps it in the most held-out
      file, ``keep_train`` in the least; its rows in the other files are dropped). The released data should
      not have any; the same *text* under different prompt_ids in different files is resolved by the same
      option when the data set is written (:func:`locus.data.canonical.resolve_split_overlap`);
    * **benchmark** = the category merged to one of the 10 benchmarks (``mmlu_*`` -> MMLU, ``gpqa_*`` -> GPQA,
      ``TruthfulQA_MC1`` -> TruthfulQA, ...; matched case-insensitively ignoring ``_``/``-``/spaces); an
      unknown category is kept verbatim as its own benchmark (with a warning); **category** = the raw label;
    * **meta** (prompt, category) of a prompt_id listed under several categories comes from its first row;
    * **scores**: the same (prompt, model) pair can occur several times (e.g. a GPQA question in two GPQA
      variants); the adapter returns every row and the data-set option ``duplicates`` resolves them when
      the data set is written: ``last`` row in file order (the authors' choice, default), ``max``
      (EmbedLLM's KNN), ``mean``, or ``error``;
    * **models**: ids and names from ``model_order.csv``; rows that lack ``model_id`` are mapped by
      ``model_name`` (``org__name`` spellings are accepted for ``org/name``).

    The CSVs are read in chunks (every column is parsed, so a row with extra fields is refused as a ragged
    row; only the needed columns are kept); prompt text is kept once per prompt. Text columns are read as
    written (``None`` / ``NA`` are text, not missing values). Score rows carry their file and CSV row
    (``origin`` / ``origin_row``) so that errors raised when the data set is written can point at them."""
    p = validate_params(params)
    directory = _resolve_dir(p)
    models = read_model_order(directory / MODEL_ORDER)
    name_to_id = _name_lookup(models)
    fallback_text = None

    meta_parts, score_parts = [], []
    for code, (split, fname) in enumerate(SPLIT_FILES.items()):
        path = directory / fname
        header = _header(path)
        missing = [c for c in ("prompt_id", "label", "category") if c not in header]
        if "model_id" not in header and "model_name" not in header:
            missing.append("model_id or model_name")
        if missing:
            raise DataError(f"{path}: missing column(s) {missing}; expected {list(COLUMNS)}, found {header}.")
        if "prompt" not in header and fallback_text is None:
            fallback_text = _read_question_order(directory / QUESTION_ORDER, path)
        n_rows, file_seen = 0, np.empty(0, dtype=np.int64)
        for first_row, chunk in _chunks(path, header, int(p["chunksize"])):
            n_rows += len(chunk)
            pid = _int_array(chunk["prompt_id"], path, "prompt_id", first_row)
            mid = _model_ids(chunk, name_to_id, path, first_row)
            label = _labels(chunk["label"], path, first_row)
            score_parts.append(
                pd.DataFrame(
                    {
                        "prompt_id": pid,
                        "model_id": mid,
                        "score": label,
                        "split_code": np.int8(code),
                        ORIGIN: pd.Categorical.from_codes(
                            np.full(len(pid), code, dtype=np.int8), _origin_categories(directory)
                        ),
                        ORIGIN_ROW: np.arange(first_row, first_row + len(pid), dtype=np.int64),
                    }
                )
            )
            # meta: first row of every prompt_id not seen before in this file
            new = ~pd.Series(pid).duplicated().to_numpy() & ~np.isin(pid, file_seen)
            file_seen = np.union1d(file_seen, pid[new])
            rows = chunk.iloc[np.flatnonzero(new)]
            meta_parts.append(
                pd.DataFrame(
                    {
                        "prompt_id": pid[new],
                        "prompt": rows["prompt"].astype(str).to_numpy() if "prompt" in rows else None,
                        "category": rows["category"].astype(str).to_numpy(),
                        "split": split,
                        ORIGIN: str(path),
                        ORIGIN_ROW: first_row + np.flatnonzero(new),
                    }
                )
            )
        if n_rows == 0:
            raise DataError(f"{path}: has a header but no rows; download it again.")
        log.info("embedllm: read %s (%d rows)", path, n_rows)

    queries = pd.concat(meta_parts, ignore_index=True)
    scores = pd.concat(score_parts, ignore_index=True)
    queries, scores = _one_split_per_prompt_id(queries, scores, p["split_overlap"], directory)
    if fallback_text is not None:
        need = queries["prompt"].isna()
        queries.loc[need, "prompt"] = queries.loc[need, "prompt_id"].map(fallback_text)
        if queries["prompt"].isna().any():
            bad = queries.loc[queries["prompt"].isna(), "prompt_id"].head(5).tolist()
            raise DataError(
                f"{directory / QUESTION_ORDER}: no text for prompt_id(s) {bad}; use the "
                f"question_order.csv that belongs to these CSVs."
            )
    queries["benchmark"] = _benchmarks(queries["category"])
    queries = queries[["prompt_id", "prompt", "benchmark", "category", "split", ORIGIN, ORIGIN_ROW]].astype(
        {"prompt_id": np.int64, "prompt": str, "benchmark": str, "category": str, "split": str}
    )
    scores = scores.drop(columns="split_code").astype(
        {"prompt_id": np.int64, "model_id": np.int64, "score": np.float64}
    )
    used = models["model_id"].isin(scores["model_id"])
    if not used.all():
        log.warning("embedllm: %d model(s) of model_order.csv have no rows and are left out", int((~used).sum()))
        models = models[used]
    return queries.reset_index(drop=True), models.reset_index(drop=True), scores.reset_index(drop=True)


def _origin_categories(directory: Path) -> list[str]:
    """Categories of the scores' origin column, indexed by split code."""
    return [str(directory / f) for f in SPLIT_FILES.values()]


def _chunks(path: Path, header: list[str], chunksize: int):
    """Yield ``(CSV row number of the chunk's first data row, chunk)``; text columns as written."""
    # all columns are parsed (with `usecols` pandas would silently accept rows with extra fields)
    usecols = [c for c in ("prompt_id", "model_id", "model_name", "label", "prompt", "category") if c in header]
    reader = pd.read_csv(
        path, chunksize=chunksize, keep_default_na=False, dtype={"model_name": str, "category": str, "prompt": str}
    )
    first_row = 2  # the header is row 1
    try:
        for chunk in reader:
            yield first_row, chunk[usecols]
            first_row += len(chunk)
    except pd.errors.ParserError as exc:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        detail = f"row {m.group(2)} has {m.group(3)} fields, the header {m.group(1)}" if m else str(exc)
        raise DataError(
            f"{path}: ragged row ({detail}); the file is damaged or not an EmbedLLM split file, download it again."
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: is not UTF-8 text ({exc.reason}); download it again.") from None


def _one_split_per_prompt_id(queries: pd.DataFrame, scores: pd.DataFrame, policy: str, directory: Path):
    """A prompt_id listed in several split files keeps one split, by the data-set option `split_overlap`."""
    n_splits = queries.groupby("prompt_id")["split"].transform("nunique").to_numpy()
    if not (n_splits > 1).any():
        return queries, scores
    several = queries.loc[n_splits > 1]
    ids = several["prompt_id"].unique()
    example = ", ".join(f"{pid} in {'/'.join(g['split'])}" for pid, g in list(several.groupby("prompt_id"))[:5])
    if policy in ("error", "keep_all"):
        why = "" if policy == "error" else " (keep_all cannot keep one prompt_id in two splits)"
        raise DataError(
            f"{directory}: {len(ids)} prompt_id(s) are listed in more than one of train.csv, val.csv, test.csv "
            f"({example}){why}. A query must be in one split only: set the data set parameter `split_overlap` "
            f"to keep_test (keep it in the most held-out file) or keep_train, or fix the files."
        )
    keep = {pid: pick_split(g, policy) for pid, g in several.groupby("prompt_id")["split"]}
    chosen = queries["prompt_id"].map(keep)
    queries = queries.loc[chosen.isna().to_numpy() | (chosen == queries["split"]).to_numpy()]
    codes = {s: i for i, s in enumerate(SPLIT_FILES)}
    keep_code = scores["prompt_id"].map({pid: codes[s] for pid, s in keep.items()})
    scores = scores.loc[keep_code.isna().to_numpy() | (keep_code == scores["split_code"]).to_numpy()]
    log.warning("embedllm: %d prompt_id(s) listed in several split files keep one split each (%s)", len(ids), policy)
    return queries, scores


def read_model_order(path: Path) -> pd.DataFrame:
    """``model_order.csv`` -> canonical models frame (model_id, name), sorted by id; index columns dropped."""
    if not path.is_file():
        raise DataError(f"{path}: missing. It comes with the EmbedLLM CSVs (Hub data set RZ412/EmbedLLM).")
    try:
        df = pd.read_csv(path, keep_default_na=False, dtype={"model_name": str})
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({exc}); download it again.") from None
    df = df[[c for c in df.columns if not str(c).lower().startswith("unnamed")]]
    missing = [c for c in ("model_id", "model_name") if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(df.columns)}.")
    out = pd.DataFrame(
        {"model_id": _int_array(df["model_id"], path, "model_id", 2), "name": df["model_name"].astype(str).str.strip()}
    )
    for col, what in (("model_id", "model_id"), ("name", "model_name")):
        dup = out[col].duplicated(keep=False)
        if dup.any():
            raise DataError(
                f"{path}: {what} not unique: {sorted(set(out.loc[dup, col].tolist()))[:5]} in CSV row(s) "
                f"{(np.flatnonzero(dup) + 2).tolist()[:5]} (header = row 1); one row per model."
            )
    return out.sort_values("model_id").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
def validate_params(params: dict | None) -> dict:
    """The defaults with `params` over them, every name and value checked (one-line ConfigError)."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"embedllm: unknown parameter(s) {unknown}; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    check_params("embedllm", PARAMS, p)
    return p


def _resolve_dir(p: dict) -> Path:
    revision = str(p["revision"])
    directory = Path(p["dir"]).expanduser() if p["dir"] else dl.cache_dir("embedllm", revision[:12])
    needed = [MODEL_ORDER, *SPLIT_FILES.values()]
    missing = [f for f in needed if not (directory / f).is_file()]
    if missing and p["download"]:
        dl.download_files(
            dl.EMBEDLLM_URL.format(revision=revision),
            list(dl.EMBEDLLM_FILES),
            directory,
            param_hint="the `dir` parameter of the embedllm source",
        )
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
    ids = (
        pd.to_numeric(chunk["model_id"], errors="coerce")
        if "model_id" in chunk
        else pd.Series(np.nan, index=chunk.index)
    )
    need = ids.isna().to_numpy()
    if need.any():
        if "model_name" not in chunk:
            rows = np.flatnonzero(need)[:5] + first_row
            raise DataError(
                f"{path}: empty model_id in CSV row(s) {rows.tolist()} (header = row 1) and no model_name column to map from."
            )
        names = chunk["model_name"].astype(object).to_numpy()[need]
        mapped = pd.Series(names).map(lambda n: name_to_id.get(str(n).strip(), name_to_id.get(str(n).strip().lower())))
        if mapped.isna().any():
            unknown = sorted({str(n) for n in pd.Series(names)[mapped.isna().to_numpy()]})[:5]
            raise DataError(
                f"{path}: model_name(s) {unknown} are not in {MODEL_ORDER}; use the model_order.csv "
                f"that belongs to these CSVs."
            )
        ids = ids.to_numpy(np.float64, copy=True)
        ids[need] = mapped.to_numpy(np.float64)
        return ids.astype(np.int64)
    return _int_array(ids, path, "model_id", first_row)


def _int_array(values: pd.Series, path: Path, column: str, first_row: int) -> np.ndarray:
    num = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = np.isnan(num) | (num != np.round(num))
    if bad.any():
        rows = (np.flatnonzero(bad)[:5] + first_row).tolist()
        raise DataError(
            f"{path}: column {column!r} must hold integers; bad value(s) in CSV row(s) {rows} (header = row 1)."
        )
    return num.astype(np.int64)


def _labels(values: pd.Series, path: Path, first_row: int) -> np.ndarray:
    num = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = np.isnan(num) | (num < 0) | (num > 1)
    if bad.any():
        rows = (np.flatnonzero(bad)[:5] + first_row).tolist()
        shown = [values.iloc[r] for r in np.flatnonzero(bad)[:5]]
        raise DataError(
            f"{path}: column 'label' must be 0/1 (or in [0, 1]); bad value(s) {shown} in CSV row(s) "
            f"{rows} (header = row 1; an empty label is a missing value or a ragged row)."
        )
    return num.astype(np.float32)


def _benchmarks(categories: pd.Series) -> pd.Series:
    mapping = {c: benchmark_of(c) for c in categories.unique()}
    unknown = sorted(c for c, b in mapping.items() if b is None)
    if unknown:
        log.warning(
            "embedllm: categories %s are not among the 10 benchmarks; each is kept as its own benchmark", unknown[:10]
        )
    return categories.map({c: (b if b is not None else c) for c, b in mapping.items()})


def _read_question_order(path: Path, needed_by: Path) -> dict[int, str]:
    if not path.is_file():
        raise DataError(f"{needed_by}: has no 'prompt' column, and {path} (which holds the prompt text) is missing.")
    try:
        df = pd.read_csv(path, keep_default_na=False, dtype={"prompt": str})
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({exc}); download it again.") from None
    if "prompt" not in df.columns:
        raise DataError(f"{path}: missing column 'prompt'; found {list(df.columns)}.")
    ids = df["prompt_id"] if "prompt_id" in df.columns else pd.Series(np.arange(len(df)))  # row i <-> prompt_id i
    return dict(zip(_int_array(ids, path, "prompt_id", 2).tolist(), df["prompt"].astype(str)))
