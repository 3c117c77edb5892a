"""The canonical on-disk format of evaluation data, and its validating reader and atomic writer.

A data set is a directory of ``queries.parquet`` (``prompt_id``, ``prompt``, ``benchmark``, ``category``,
``split`` ∈ train/val/test), ``models.parquet`` (``model_id``, ``name``, optional ``params_b``, ``cost`` per
query, ``family``, ``tags`` joined by ``;``), ``scores.parquet`` (long ``prompt_id, model_id, score`` in [0, 1]), for synthetic
data ``truth.parquet`` (:mod:`locus.data.truth`), and ``dataset.json`` (:data:`MANIFEST`: sizes and SHA-256
of the files, a fingerprint of the set, its options). They are written as one set
(:func:`locus.atomic.write_file_set`); :func:`read_dataset` refuses files that do not match their manifest
(a directory without one, written by hand, is read without that check) and is the only reader downstream.
A missing (prompt, model) pair means "not evaluated", never "wrong".

Adapters hand :func:`write_dataset` *raw* frames and the data-set options are applied here, once for every
source: ``duplicates`` (:data:`DUPLICATE_POLICIES`) and ``split_overlap`` (:data:`SPLIT_OVERLAP_POLICIES`).
Optional provenance columns ``origin`` / ``origin_row`` let errors name the input row (``evals.csv row 7``);
they are never written. The individual checks of :func:`validate` are in :mod:`locus.data.validation`.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from locus import atomic
from locus.constants import (
    DEFAULT_DUPLICATE_POLICY,
    DEFAULT_SPLIT_OVERLAP,
    DUPLICATE_POLICIES,
    SPLIT_OVERLAP_POLICIES,
    SPLITS,
)
from locus.data.truth import REBUILD, TRUTH_FILE, check_truth, remove_stale_truth
from locus.data.truth import manifest_entry as truth_entry
from locus.data.validation import (
    ORIGIN,
    ORIGIN_ROW,
    SHOW,
    describe_overlap,
    describe_pair,
    every_model_and_split_scored,
    format_ids,
    int_column,
    known_ids,
    known_splits,
    model_metadata,
    origin_files,
    require_columns,
    score_column,
    text_column,
)
from locus.errors import ConfigError, DataError

log = logging.getLogger(__name__)

DATASET_OPTIONS = {"duplicates": DUPLICATE_POLICIES, "split_overlap": SPLIT_OVERLAP_POLICIES}

QUERY_COLUMNS = ("prompt_id", "prompt", "benchmark", "category", "split")
MODEL_COLUMNS = ("model_id", "name")
SCORE_COLUMNS = ("prompt_id", "model_id", "score")
FILES = {"queries": "queries.parquet", "models": "models.parquet", "scores": "scores.parquet"}
MANIFEST = "dataset.json"
FORMAT = "locus-canonical-data"
FORMAT_VERSION = 1


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


def check_option(name: str, value, where: str = "data set") -> str:
    """A data-set option (`duplicates` / `split_overlap`) checked against its allowed values."""
    allowed = DATASET_OPTIONS[name]
    if value not in allowed:
        raise ConfigError(f"{where}: {name} must be one of {', '.join(allowed)}, got {value!r}.")
    return value


# ----------------------------------------------------------------------------------------------
# reading and validation
# ----------------------------------------------------------------------------------------------
def read_dataset(directory: str | Path, duplicates: str = DEFAULT_DUPLICATE_POLICY) -> EvalData:
    """Read and validate a canonical data set directory; raise :class:`DataError` on bad input."""
    directory = Path(directory)
    if not directory.is_dir():
        what = "is a file, not a data set directory" if directory.exists() else "data set directory does not exist"
        raise DataError(
            f"{directory}: {what}. Create it with an adapter rule "
            f"(e.g. `snakemake results/data/synthetic/queries.parquet`) or `locus data --help`."
        )
    for name in FILES.values():
        if not (directory / name).is_file():
            present = sorted(p.name for p in directory.iterdir())
            raise DataError(
                f"{directory / name}: file missing. A data set directory needs {', '.join(FILES.values())} "
                f"(found: {', '.join(present) or 'nothing'}). Rebuild it with `locus data` (or the `data` rule)."
            )
    try:
        atomic.verify_file_set(directory, MANIFEST)
    except atomic.FileSetError as exc:
        raise DataError(
            f"{directory}: {exc}: the files are not one consistent data set (an interrupted write, or files "
            f"copied from different builds). Rebuild the data set with `locus data` (Snakemake: "
            f"--forcerun data, or data_without_truth for sources without truth); if you edited the files on "
            f"purpose, delete {MANIFEST}."
        ) from None
    frames = {}
    for key, name in FILES.items():
        path = directory / name
        try:
            frames[key] = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types
            raise DataError(f"{path}: not a readable Parquet file ({exc}). Re-create it with `locus data`.") from None
    return validate(frames["queries"], frames["models"], frames["scores"], source=str(directory), duplicates=duplicates)


def validate(
    queries: pd.DataFrame,
    models: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    source: str = "<memory>",
    duplicates: str = DEFAULT_DUPLICATE_POLICY,
    split_overlap: str | None = None,
) -> EvalData:
    """Check every invariant of the canonical format and return a clean :class:`EvalData`.

    Duplicate (prompt_id, model_id) score rows are resolved by ``duplicates``: ``last`` (keep the last
    row in file order, the authors' behaviour and the default), ``max``, ``mean``, or ``error``.
    ``split_overlap`` (None = not checked, the reader's choice) resolves a prompt text found in
    several splits; see :func:`resolve_split_overlap`.
    """
    check_option("duplicates", duplicates)
    if split_overlap is not None:
        check_option("split_overlap", split_overlap)
    qf, mf, sf = (f"{source}/{FILES[k]}" for k in ("queries", "models", "scores"))
    require_columns(queries, QUERY_COLUMNS, qf)
    require_columns(models, MODEL_COLUMNS, mf)
    require_columns(scores, SCORE_COLUMNS, sf)

    queries = queries.copy()
    queries["prompt_id"] = int_column(queries, "prompt_id", qf)
    for col in ("prompt", "benchmark", "category", "split"):
        queries[col] = text_column(queries, col, qf, "prompt_id")
    dup_q = queries["prompt_id"].duplicated(keep=False)
    if dup_q.any():
        raise DataError(
            f"{qf}: prompt_id not unique: {format_ids(queries.loc[dup_q, 'prompt_id'])}; give every query its own id."
        )
    known_splits(queries, SPLITS, qf)

    scores = scores.copy()
    if split_overlap is not None:
        queries, scores = resolve_split_overlap(queries, scores, split_overlap)
    for split in SPLITS:
        if not (queries["split"] == split).any():
            raise DataError(
                f"{qf}: split {split!r} has no queries; every split needs at least one "
                f"(the csv adapter draws splits for you when the column is absent)."
            )

    models = models.copy()
    models["model_id"] = int_column(models, "model_id", mf)
    models["name"] = text_column(models, "name", mf, "model_id", strip=True)
    model_metadata(models, mf)
    dup_m = models["model_id"].duplicated(keep=False)
    if dup_m.any():
        raise DataError(
            f"{mf}: model_id not unique: {format_ids(models.loc[dup_m, 'model_id'])}; give every model its own id."
        )
    dup_n = models["name"].duplicated(keep=False)
    if dup_n.any():
        shown = sorted(models.loc[dup_n, "name"].unique())[:SHOW]
        raise DataError(
            f"{mf}: model name(s) not unique: {shown} (model_id "
            f"{format_ids(models.loc[dup_n, 'model_id'])}); give each model one row and one name."
        )

    scores["prompt_id"] = int_column(scores, "prompt_id", sf)
    scores["model_id"] = int_column(scores, "model_id", sf)
    scores["score"] = score_column(scores, sf)
    known_ids(scores, queries, "prompt_id", sf, "queries.parquet", "queries")
    known_ids(scores, models, "model_id", sf, "models.parquet", "models")
    scores = resolve_duplicates(scores, duplicates, sf, queries=queries, models=models)
    every_model_and_split_scored(queries, models, scores, SPLITS, qf, mf)

    queries = queries[list(QUERY_COLUMNS)].sort_values("prompt_id").reset_index(drop=True)
    models = models.drop(columns=[ORIGIN, ORIGIN_ROW], errors="ignore").sort_values("model_id").reset_index(drop=True)
    scores = scores[list(SCORE_COLUMNS)].sort_values(["prompt_id", "model_id"], kind="stable").reset_index(drop=True)
    return EvalData(queries=queries, models=models, scores=scores, source=source)


def resolve_duplicates(
    scores: pd.DataFrame,
    policy: str,
    source: str = "scores",
    *,
    queries: pd.DataFrame | None = None,
    models: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Collapse duplicate (prompt_id, model_id) rows by `policy` (last / max / mean / error).

    `queries` / `models` (optional) let the ``error`` message show prompt text and model names;
    ``origin`` / ``origin_row`` columns on `scores` let it say where the rows came from.
    """
    check_option("duplicates", policy)
    dup = scores.duplicated(["prompt_id", "model_id"], keep=False)
    if not dup.any():
        return scores
    pairs = scores.loc[dup, ["prompt_id", "model_id"]].drop_duplicates()
    if policy == "error":
        where = origin_files(scores.loc[dup]) or source
        shown = "; ".join(
            describe_pair(scores, dup, p, m, queries, models) for p, m in pairs.head(2).itertuples(index=False)
        )
        raise DataError(
            f"{where}: {len(pairs)} (prompt, model) pair(s) have more than one score, e.g. {shown}. Keep one row "
            f"per pair, or choose how to combine them: duplicates last, max or mean (`locus data --duplicates`, "
            f"or the data set parameter `duplicates`)."
        )
    log.warning("%s: %d duplicate (prompt, model) pairs resolved by policy %r", source, len(pairs), policy)
    if policy == "last":
        return scores.drop_duplicates(["prompt_id", "model_id"], keep="last")
    agg = "max" if policy == "max" else "mean"
    return scores.groupby(["prompt_id", "model_id"], as_index=False, sort=False)["score"].agg(agg)


def pick_split(splits, policy: str) -> str | None:
    """The split a prompt found in several `splits` keeps under `policy` (None: keep all copies).

    ``keep_test``: the most held-out one (test, else val); ``keep_train``: the least (train, else val).
    ``error`` is the caller's to report.
    """
    present = [s for s in SPLITS if s in set(splits)]
    if policy == "keep_test":
        return present[-1]
    if policy == "keep_train":
        return present[0]
    return None


def resolve_split_overlap(queries: pd.DataFrame, scores: pd.DataFrame, policy: str):
    """Resolve prompt texts that occur in more than one split; return ``(queries, scores)``.

    ``error`` (default) refuses them; ``keep_test`` keeps each such prompt only in its most held-out
    split (test, else val) and drops its other copies with their scores; ``keep_train`` keeps only the
    training copy (what LLMRouter's ``drop_test_overlap`` does); ``keep_all`` keeps every copy (the
    model is then tested on text it was trained on; logged).
    """
    check_option("split_overlap", policy)
    n_splits = queries.groupby("prompt", sort=False)["split"].transform("nunique")
    overlap = (n_splits > 1).to_numpy()
    if not overlap.any():
        return queries, scores
    texts = queries.loc[overlap, "prompt"].unique()
    if policy == "error":
        raise DataError(
            f"{origin_files(queries.loc[overlap]) or 'the data set'}: {len(texts)} prompt text(s) occur in "
            f"more than one split, e.g. {describe_overlap(queries, overlap)}. A query must be in one split "
            f"only. Remove the copies, or set the data set parameter `split_overlap` (or `locus data "
            f"--split-overlap`): keep_test (keep it in test/val, drop the training copy), keep_train or keep_all."
        )
    if policy == "keep_all":
        log.warning(
            "%d prompt text(s) occur in more than one split; all copies kept (split_overlap: keep_all)", len(texts)
        )
        return queries, scores
    keep = {t: pick_split(g, policy) for t, g in queries.loc[overlap].groupby("prompt", sort=False)["split"]}
    drop = overlap & (queries["prompt"].map(keep).to_numpy() != queries["split"].to_numpy())
    dropped = queries.loc[drop, "prompt_id"]
    log.info(
        "%d prompt text(s) occur in more than one split: kept one copy each (%s), dropped %d querie(s)",
        len(texts),
        policy,
        int(drop.sum()),
    )
    return queries.loc[~drop], scores.loc[~scores["prompt_id"].isin(dropped)]


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")


# ----------------------------------------------------------------------------------------------
# writing
# ----------------------------------------------------------------------------------------------
def write_dataset(
    directory: str | Path,
    queries: pd.DataFrame,
    models: pd.DataFrame,
    scores: pd.DataFrame,
    duplicates: str = DEFAULT_DUPLICATE_POLICY,
    split_overlap: str = DEFAULT_SPLIT_OVERLAP,
    truth: pd.DataFrame | None = None,
) -> EvalData:
    """Apply the data-set options, validate, then write the three files and the manifest as one set.

    Nothing is written when validation fails. The files are written to a temporary directory and
    swapped in together with :data:`MANIFEST` (see :func:`locus.atomic.write_file_set`): a reader sees
    the old set, the new set, or a refusal naming the fix, never a mix. Other files in `directory`
    (such as a summary) are kept. `truth` (the synthetic generator's ``prompt_id, model_id, p_correct``)
    is written as :data:`locus.data.truth.TRUTH_FILE` in the same set, restricted to the scored pairs
    and recorded in the manifest (``truth``); without it a truth file of an earlier build is removed.
    """
    directory = Path(directory)
    data = validate(queries, models, scores, source=str(directory), duplicates=duplicates, split_overlap=split_overlap)
    if truth is not None:
        truth = check_truth(truth, data.scores, f"{directory}/{TRUTH_FILE} (generator truth)", drop_unscored=True)
    writers = {
        FILES["queries"]: lambda p: data.queries.to_parquet(p, index=False),
        FILES["models"]: lambda p: data.models.to_parquet(p, index=False),
        FILES["scores"]: lambda p: data.scores.to_parquet(p, index=False),
    }
    if truth is not None:
        writers[TRUTH_FILE] = lambda p: truth.to_parquet(p, index=False)
    info = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "options": {"duplicates": duplicates, "split_overlap": split_overlap},
        "counts": {
            "queries": len(data.queries),
            "models": len(data.models),
            "scores": len(data.scores),
            **{f"{s}_queries": int((data.queries["split"] == s).sum()) for s in SPLITS},
        },
        "truth": truth_entry(truth),
    }
    atomic.write_file_set(directory, writers, MANIFEST, info)
    if truth is None:  # after the swap: until then the old manifest still lists it; a reader refuses a stray one
        remove_stale_truth(directory)
    return data


def resolve_model(name: str, names: dict, what: str) -> int:
    """The model id of `name` (exact, else a unique case-insensitive match of the full name or of the part
    after the organisation); otherwise a ConfigError listing close names."""
    by_name = {v: k for k, v in names.items()}
    if name in by_name:
        return int(by_name[name])
    low = str(name).lower()
    hits = [k for k, v in names.items() if v.lower() == low or v.lower().split("/")[-1] == low.split("/")[-1]]
    if len(hits) == 1:
        return int(hits[0])
    close = difflib.get_close_matches(str(name), list(by_name), n=5, cutoff=0.4)
    if not close:
        close = difflib.get_close_matches(low.split("/")[-1], [v.lower().split("/")[-1] for v in by_name], n=5)
        close = [v for v in by_name if v.lower().split("/")[-1] in close]
    why = f"matches {len(hits)} models" if hits else f"is not among the {len(names)} models"
    raise ConfigError(
        f"{what}: {name!r} {why}; close names: "
        f"{', '.join(close) if close else 'none'} — use a full name from the data set's models.parquet."
    )


def read_truth(data_dir: str | Path, data=None) -> pd.DataFrame | None:
    """The validated truth of the canonical data set `data_dir` (columns :data:`TRUTH_COLUMNS`, sorted by
    prompt_id, model_id), or None when the data set has none.

    With a manifest, the truth file must be the one it records (checksum and row count); a truth file
    the manifest does not record is refused (stale, or copied in). Without a manifest (a directory written
    by hand) a present truth file is checked against the scores only. `data`: the data set already read
    with :func:`read_dataset` (read here when None).
    """
    directory = Path(data_dir)
    path = directory / TRUTH_FILE
    data = read_dataset(directory) if data is None else data  # also checks every file the manifest lists
    try:
        manifest = atomic.read_manifest(directory, MANIFEST)
    except atomic.FileSetError as exc:
        raise DataError(f"{directory}: {exc}; {REBUILD}.") from None
    if manifest is not None:
        recorded = manifest.get("truth")
        if recorded is None:
            if path.exists():
                raise DataError(
                    f"{path}: not part of this data set: {directory / MANIFEST} records no truth file "
                    f"(left over from an earlier build, or copied in). Delete it, or {REBUILD} to write "
                    f"its own truth."
                )
            return None
        if TRUTH_FILE not in manifest["files"] or not isinstance(recorded, dict):
            raise DataError(
                f"{directory / MANIFEST}: records truth but does not list {TRUTH_FILE} with its checksum; {REBUILD}."
            )
        try:
            atomic.verify_file_set(directory, MANIFEST)
        except atomic.FileSetError as exc:
            raise DataError(
                f"{path}: {exc}: the truth file does not match the data set; {REBUILD} (delete "
                f"{TRUTH_FILE} and {MANIFEST} only if you edited the files on purpose)."
            ) from None
    elif not path.exists():
        return None
    if not path.is_file():
        raise DataError(f"{path}: is not a file; delete it, or {REBUILD}.")
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types
        raise DataError(f"{path}: not a readable Parquet file ({exc}); {REBUILD}.") from None
    truth = check_truth(frame, data.scores, str(path))
    if manifest is not None and int(manifest["truth"].get("rows", -1)) != len(truth):
        raise DataError(
            f"{path}: {len(truth)} rows, but {directory / MANIFEST} records {manifest['truth'].get('rows')}; {REBUILD}."
        )
    return truth


def model_costs(models: pd.DataFrame, model_ids, where: str) -> tuple[np.ndarray, str]:
    """(cost per query of each of `model_ids`, which column gave it): the models' ``cost`` column when the data
    set has one, else the documented proxy ``params_b`` (parameters in billions); neither, or a model
    without a usable value, is a DataError naming `where` and the fix."""
    ids = pd.Index(models["model_id"].to_numpy(np.int64))
    pos = ids.get_indexer(np.asarray(model_ids, dtype=np.int64))
    if (pos < 0).any():
        raise DataError(f"{where}: model ids {np.asarray(model_ids)[pos < 0][:5].tolist()} are not in the data set.")
    for column in ("cost", "params_b"):
        if column in models.columns:
            values = pd.to_numeric(models[column], errors="coerce").to_numpy(np.float64, na_value=np.nan)[pos]
            bad = ~(np.isfinite(values) & (values >= 0))
            if bad.any():
                names = models["name"].astype(str).to_numpy()[pos][bad][:5].tolist()
                raise DataError(
                    f"{where}: column {column!r} has no usable value (a number >= 0) for {int(bad.sum())} model(s), "
                    f"e.g. {names}; cost-aware routing needs a cost for every model: fill in the {column!r} column "
                    f"of models.parquet (or a `cost` column in the csv source)."
                )
            return values, column
    raise DataError(
        f"{where}: models.parquet has neither a 'cost' nor a 'params_b' column; cost-aware routing needs one: add "
        f"a `cost` column (cost per query, constant per model) to your evaluations file and rebuild the data set."
    )


def truth_matrix(truth: pd.DataFrame, prompt_ids, model_ids) -> np.ndarray:
    """Dense [prompts x models] matrix of ``p_correct`` (NaN where the pair was not evaluated)."""
    return pairs_to_matrix(truth, prompt_ids, model_ids, value="p_correct")
