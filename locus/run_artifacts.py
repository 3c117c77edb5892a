"""The files of a run directory and their one validating reader each (for experiments, analyses, tests).

A run directory (``results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}/``, written atomically
by :func:`locus.runs.execute`) holds exactly :func:`run_files` of its method:

- ``config.json`` + ``model.safetensors``: the checkpoint (:mod:`locus.weights`; method, params, seed,
  model ids *and names*, encoder, data set and its fingerprint, the weights' SHA-256);
- ``train_pairs.parquet``: the exact ``prompt_id, model_id, score`` training evaluations;
- ``scores_val.parquet`` / ``scores_test.parquet``: long ``prompt_id, model_id, logit``, every
  (query of the split) x (model of the run) pair;
- ``embeddings.parquet``: ``model_id, embedding`` (embedding methods only);
- ``metrics.json``: val and test metrics, reference rows, the run settings and training counts;
- ``log.csv``: per-epoch / per-step / per-candidate log (one summary row for methods without one).

Beside them, written later by ``locus calibrate``: ``calibration.json`` (:data:`calibration_file`, not one
of :func:`run_files`), read by :func:`read_calibration` and tied to the run by :func:`run_identity`.

Every reader raises :class:`~locus.errors.DataError` naming the run directory and the fix (re-run the
training rule) for a missing or malformed file.

The files of a run belong together: ``metrics.json`` records the SHA-256 of every other file of the run
(``run_files_sha256``, :func:`file_digests`), and every reader here checks the file it reads against it
(:func:`check_belongs`), so a file copied in from another run (a checkpoint, embeddings, scores) is refused
instead of being read beside files it does not match. Runs written before the digests existed are checked
by what both ``config.json`` and ``metrics.json`` record (method, seed, training size, data fingerprint).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from locus.atomic import sha256_file
from locus.errors import DataError
from locus.weights import CONFIG_FILE, WEIGHTS_FILE

TRAIN_PAIRS = "train_pairs.parquet"
EMBEDDINGS = "embeddings.parquet"
METRICS = "metrics.json"
LOG = "log.csv"
SPLITS = ("val", "test")
METRICS_REQUIRED = ("method", "train_size", "seed", "val", "test")  # entries every metrics.json has
DIGESTS = "run_files_sha256"  # metrics.json entry: {file name: SHA-256} of every other file of the run
_SHARED_ENTRIES = ("method", "seed", "train_size", "data_fingerprint", "encoder")  # in config.json and metrics.json

RUN_FILES_ALL = (CONFIG_FILE, WEIGHTS_FILE, TRAIN_PAIRS, "scores_val.parquet", "scores_test.parquet", METRICS, LOG)
RUN_FILES_EMBEDDING = RUN_FILES_ALL + (EMBEDDINGS,)


def scores_file(split: str) -> str:
    if split not in SPLITS:
        raise DataError(f"no score file for split {split!r}; runs score {', '.join(SPLITS)}.")
    return f"scores_{split}.parquet"


def check_same_data(run, recorded, fingerprint: str, data_dir, fix: str) -> None:
    """Refuse a run whose recorded data-set fingerprint (``metrics.json`` / ``config.json``; None for runs
    that record none) is not `fingerprint`, the one of the data set `data_dir` it is being read against."""
    if recorded is not None and recorded != fingerprint:
        raise DataError(
            f"{run}: trained on another data set than {data_dir} (data fingerprint {str(recorded)[:12]}... "
            f"vs {fingerprint[:12]}...); {fix}"
        )


def run_files(method: str) -> tuple[str, ...]:
    """Every file of a run directory of `method` (what the training rule declares as outputs)."""
    from locus import methods

    return RUN_FILES_EMBEDDING if methods.info(method).has_embeddings else RUN_FILES_ALL


def file_digests(run_dir, method: str) -> dict[str, str]:
    """{name: SHA-256} of every file of the run except metrics.json (which records them; written last)."""
    return {name: sha256_file(Path(run_dir) / name) for name in sorted(run_files(method)) if name != METRICS}


_checked: dict[tuple, None] = {}  # (path, size, mtime_ns, digest) already verified in this process


def check_belongs(run_dir, name: str) -> None:
    """Refuse file `name` of `run_dir` (already read and found well-formed by its reader) unless it is the
    file the run wrote: its SHA-256 is the one recorded
    in the run's metrics.json (runs without digests: config.json and metrics.json agree on the settings
    both record). A missing metrics.json is left to the reader that needs it."""
    run_dir = Path(run_dir)
    metrics_path = run_dir / METRICS
    if name == METRICS or not metrics_path.is_file():
        return
    try:
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return  # read_metrics names the damage when a caller reads it
    if not isinstance(metrics, dict):
        return
    fix = (
        "the files of a run directory must all come from one `locus train`; re-run the training rule "
        f"(or `locus train ... --out {run_dir}`) instead of copying files between runs."
    )
    digests = metrics.get(DIGESTS)
    path = run_dir / name
    if isinstance(digests, dict) and name in digests:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns, digests[name])
        if key in _checked:
            return
        if sha256_file(path) != digests[name]:
            raise DataError(
                f"{path}: not the file this run wrote (its SHA-256 differs from the one in {METRICS}, {DIGESTS}); {fix}"
            )
        _checked[key] = None
        return
    if name in (CONFIG_FILE, WEIGHTS_FILE) and (run_dir / CONFIG_FILE).is_file():
        try:
            config = json.loads((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return  # the checkpoint loader names the damage
        if not isinstance(config, dict):
            return
        for key in _SHARED_ENTRIES:
            if key in config and key in metrics and config[key] != metrics[key]:
                raise DataError(
                    f"{run_dir / CONFIG_FILE}: records {key} {config[key]!r} but the run's {METRICS} records "
                    f"{metrics[key]!r}: the checkpoint comes from another run; {fix}"
                )


def _file(run_dir, name: str) -> Path:
    path = Path(run_dir) / name
    if not path.is_file():
        raise DataError(
            f"{path}: missing; {run_dir} is not a finished run directory — re-run the training rule "
            f"(snakemake deletes incomplete outputs; or `locus train ... --out {run_dir}`)."
        )
    return path


def _parquet(run_dir, name: str, columns: dict[str, str]) -> pd.DataFrame:
    """The file's frame with `columns` ({name: "int"|"float"}) checked: present, no nulls, right kind."""
    path = _file(run_dir, name)
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types
        detail = " ".join(str(exc).split())
        raise DataError(f"{path}: not a readable Parquet file ({detail}); re-run the training rule.") from exc
    for col, kind in columns.items():
        if col not in df.columns:
            raise DataError(f"{path}: missing column {col!r} (found {list(df.columns)}); re-run the training rule.")
        ok = pd.api.types.is_integer_dtype(df[col]) if kind == "int" else pd.api.types.is_numeric_dtype(df[col])
        if not ok or df[col].isna().any():
            raise DataError(f"{path}: column {col!r} must be {kind} without missing values; re-run the training rule.")
    return df


def read_scores(run_dir, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prompt_ids ascending, model_ids ascending, float32 logits [prompts x models]) of one split."""
    name = scores_file(split)
    df = _parquet(run_dir, name, {"prompt_id": "int", "model_id": "int", "logit": "float"})
    path = Path(run_dir) / name
    if df.duplicated(["prompt_id", "model_id"]).any():
        raise DataError(f"{path}: duplicate (prompt_id, model_id) rows; re-run the training rule.")
    if not np.isfinite(df["logit"].to_numpy(np.float64)).all():
        raise DataError(f"{path}: logits hold NaN/Inf; re-run the training rule.")
    prompt_ids = np.sort(df["prompt_id"].unique()).astype(np.int64)
    model_ids = np.sort(df["model_id"].unique()).astype(np.int64)
    if len(df) != len(prompt_ids) * len(model_ids):
        raise DataError(
            f"{path}: {len(df)} rows for {len(prompt_ids)} prompts x {len(model_ids)} models; every pair "
            f"must be scored — re-run the training rule."
        )
    logits = np.empty((len(prompt_ids), len(model_ids)), dtype=np.float32)
    rows, cols = np.searchsorted(prompt_ids, df["prompt_id"]), np.searchsorted(model_ids, df["model_id"])
    logits[rows, cols] = df["logit"].to_numpy()
    check_belongs(run_dir, name)  # after the file's own checks: damage is named as damage
    return prompt_ids, model_ids, logits


def read_embeddings(run_dir) -> tuple[np.ndarray, np.ndarray]:
    """(model_ids, float32 embeddings [models x dim]) of an embedding method's run."""
    from locus.data.encodings import read_vectors

    if not (Path(run_dir) / EMBEDDINGS).exists():
        _refuse_method_without_embeddings(run_dir)
    path = _file(run_dir, EMBEDDINGS)
    ids, z, _ = read_vectors(path, "model_id")
    if len(np.unique(ids)) != len(ids) or len(ids) == 0:
        raise DataError(f"{path}: model ids must be unique and non-empty; re-run the training rule.")
    if not np.isfinite(z).all():
        raise DataError(f"{path}: embeddings hold NaN/Inf; re-run the training rule.")
    check_belongs(run_dir, EMBEDDINGS)
    return ids, z


def _refuse_method_without_embeddings(run_dir) -> None:
    """DataError when the run's config.json / metrics.json name a method that has no model embeddings."""
    from locus import methods

    for name in (CONFIG_FILE, METRICS):
        try:
            method = json.loads((Path(run_dir) / name).read_text(encoding="utf-8")).get("method")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            continue
        if isinstance(method, str) and method in methods.REGISTRY and not methods.info(method).has_embeddings:
            with_embeddings = [m for m in methods.names() if methods.info(m).has_embeddings]
            raise DataError(
                f"{run_dir}: a {method} run has no model embeddings (embeddings.parquet); give a run of an "
                f"embedding method ({', '.join(with_embeddings)})."
            )


def read_train_pairs(run_dir) -> pd.DataFrame:
    """The run's training evaluations: ``prompt_id, model_id, score`` (score in [0, 1])."""
    df = _parquet(run_dir, TRAIN_PAIRS, {"prompt_id": "int", "model_id": "int", "score": "float"})
    path = Path(run_dir) / TRAIN_PAIRS
    if df.empty or df.duplicated(["prompt_id", "model_id"]).any() or not df["score"].between(0, 1).all():
        raise DataError(
            f"{path}: needs unique (prompt_id, model_id) rows with score in [0, 1]; re-run the training rule."
        )
    check_belongs(run_dir, TRAIN_PAIRS)
    return df[["prompt_id", "model_id", "score"]].reset_index(drop=True)


def read_metrics(run, required=METRICS_REQUIRED) -> dict:
    """metrics.json of the run directory `run`, or the metrics file `run` itself (``*.json``: tables and
    figures are given the files): a JSON object with at least the entries `required`."""
    run = Path(run)
    path = run if run.suffix == ".json" or run.is_file() else _file(run, METRICS)
    try:
        metrics = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: metrics file not found; run `locus train` for this run first.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(
            f"{path}: not a readable JSON metrics file, not valid JSON ({exc}); re-run the training "
            f"rule (`locus train`)."
        ) from None
    if not isinstance(metrics, dict):
        raise DataError(
            f"{path}: must hold a JSON object written by `locus train`, got {type(metrics).__name__}; "
            f"re-run the training rule."
        )
    missing = [k for k in required if k not in metrics]
    if missing:
        raise DataError(
            f"{path}: missing entries {', '.join(missing)}; this is not a metrics.json written by "
            f"`locus train` (re-run the training rule)."
        )
    return metrics


def read_log(run_dir) -> pd.DataFrame:
    """log.csv: the training log (at least one row)."""
    path = _file(run_dir, LOG)
    try:
        df = pd.read_csv(path)
    except Exception as exc:
        detail = " ".join(str(exc).split())
        raise DataError(f"{path}: not a readable CSV file ({detail}); re-run the training rule.") from exc
    if df.empty:
        raise DataError(f"{path}: no rows; re-run the training rule.")
    check_belongs(run_dir, LOG)
    return df


def read_config(run_dir) -> dict:
    """The run's config.json (method, params, model ids and names, encoder, data set), checked to belong to
    the run (:func:`check_belongs`)."""
    from locus.weights import read_config as read

    _file(run_dir, CONFIG_FILE)
    config = read(run_dir)
    check_belongs(run_dir, CONFIG_FILE)
    return config


def load_checkpoint(run_dir):
    """The fitted method with the run's encoder and model names (:class:`locus.checkpoint.Checkpoint`)."""
    from locus.checkpoint import load_checkpoint as load

    checkpoint = load(run_dir)  # first: a damaged checkpoint is named as damaged
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        check_belongs(run_dir, name)
    return checkpoint


calibration_file = "calibration.json"  # written beside a finished run by `locus calibrate` (not a run file)


def run_identity(run_dir) -> dict:
    """What ties a file written after training to this run: the SHA-256 of its weights (config.json) and
    of its metrics.json (which records the SHA-256 of every other file of the run)."""
    from locus.weights import CHECKSUM_KEY

    config = read_config(run_dir)
    read_metrics(run_dir)
    weights_sha = config.get(CHECKSUM_KEY)
    if not isinstance(weights_sha, str):
        raise DataError(f"{Path(run_dir) / CONFIG_FILE}: no {CHECKSUM_KEY!r} entry; re-run the training rule.")
    return {"weights_sha256": weights_sha, "metrics_sha256": sha256_file(Path(run_dir) / METRICS)}


def read_calibration(run_dir, path=None):
    """The run's calibration map (:class:`locus.calibration.Calibration`) from `path` (default the run
    directory's ``calibration.json``), or None when that file does not exist; a file of another run, an
    edited or damaged one is a DataError."""
    from locus import calibration

    path = Path(run_dir) / calibration_file if path is None else Path(path)
    if not path.exists():
        return None
    return calibration.load(path, run_identity(run_dir), run=run_dir)
