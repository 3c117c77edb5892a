"""One run = one method x encoder x training size x dimension x seed: sample the training evaluations,
fit, score val/test, evaluate, and write every artefact of the run directory atomically.

The files of a run directory, their layout and their validating readers are in
:mod:`locus.run_artifacts` (:func:`~locus.run_artifacts.run_files` lists them per method); this module
only writes them, and checks that it wrote exactly that list.

Checks before any fitting: the method parameters, that the encodings were made from this data set
(fingerprint, :func:`locus.data.encodings.check_matches`) and that the training size fits the split.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from locus import evaluation, methods, provenance
from locus import run_artifacts as ra
from locus.atomic import atomic_dir, write_json
from locus.constants import SAMPLING
from locus.data.canonical import EvalData, read_dataset, resolve_model
from locus.data.encodings import check_matches, read_encodings, write_vectors
from locus.errors import ConfigError, DataError
from locus.methods.base import EmbeddingMethod, FitData

log = logging.getLogger(__name__)

DRAW_ONBOARD = 5  # kind of draw for locus.geometry.views.rng_for (fixed: other views' draws never shift)
DRAW_HELD_OUT = 6  # the held-out models of a draw:COUNT:SEED spec


# --------------------------------------------------------------------------------------------------
# which models a run trains on (onboarding runs, locus.experiments.onboarding)
# --------------------------------------------------------------------------------------------------
DRAW_PREFIX = "draw:"  # --hold-out draw:COUNT:SEED, the field's protocol (UniRoute: 38 of 112 models held out)


def parse_draw(text: str) -> tuple[int, int] | None:
    """(count, seed) of a ``draw:COUNT:SEED`` hold-out spec; None for anything else."""
    text = str(text).strip()
    if not text.startswith(DRAW_PREFIX):
        return None
    parts = text[len(DRAW_PREFIX) :].split(":")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ConfigError(f"hold-out {text!r}: write draw:COUNT:SEED (e.g. draw:38:0), two integers >= 0.")
    return int(parts[0]), int(parts[1])


def draw_held_out(model_ids, count: int, seed: int) -> np.ndarray:
    """Sorted ids of `count` models drawn at random (seeded) from `model_ids`; the same for one (count, seed)."""
    ids = np.sort(np.asarray(model_ids, dtype=np.int64))
    if not 1 <= count < len(ids):
        raise ConfigError(
            f"hold-out draw of {count} models from a pool of {len(ids)}: choose 1..{len(ids) - 1} (one model "
            "must stay to train on)."
        )
    return np.sort(np.random.default_rng([int(seed), DRAW_HELD_OUT]).choice(ids, size=int(count), replace=False))


def held_out_ids(models: pd.DataFrame, names=None, source: str = "models.parquet") -> np.ndarray:
    """Sorted ids of the held-out models: the models named in `names` (full names as in models.parquet),
    a seeded random draw when `names` is one ``draw:COUNT:SEED`` (:func:`draw_held_out`), or, when `names` is
    None, those with ``held_out`` = 1. No held-out model, or none left to train on, is a ConfigError."""
    by_id = dict(zip(models["model_id"].astype(int), models["name"].astype(str)))
    draws = [parse_draw(n) for n in (names or [])]
    if any(d is not None for d in draws):
        if len(draws) != 1:
            raise ConfigError(f"hold-out {','.join(names)}: a draw:COUNT:SEED stands alone, without model names.")
        return draw_held_out(list(by_id), *draws[0])
    if names is None:
        if "held_out" not in models.columns:
            raise ConfigError(
                f"{source} has no held_out column; name the held-out models (config "
                f"onboarding.held_out / --hold-out NAME,NAME,...)."
            )
        ids = models.loc[models["held_out"].fillna(0).astype(int) == 1, "model_id"].astype(int).tolist()
    else:
        ids = [resolve_model(n, by_id, "held-out model") for n in names]
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    if len(ids) == 0:
        raise ConfigError(
            f"{source}: no held-out model (the held_out column is 0 everywhere); name them with "
            f"onboarding.held_out / --hold-out."
        )
    if len(ids) >= len(by_id):
        raise ConfigError(f"all {len(by_id)} models are held out; keep at least one to train on.")
    return ids


def training_models(model_ids, held_out, count: int, seed: int) -> np.ndarray:
    """Sorted ids of the first `count` models (0 = all) of a seeded permutation of `model_ids` minus
    `held_out`; for one seed the sets of growing counts are nested."""
    rest = np.setdiff1d(np.asarray(model_ids, dtype=np.int64), np.asarray(held_out, dtype=np.int64))
    if count < 0 or count > len(rest):
        raise ConfigError(
            f"training models: {count} requested, {len(rest)} models are not held out; choose "
            f"1..{len(rest)} (0 = all of them)."
        )
    order = np.random.default_rng([int(seed), DRAW_ONBOARD]).permutation(rest)
    return np.sort(order[:count] if count else order)


def training_pairs(data: EvalData, train_size: int, seed: int, sampling: str = "shared") -> pd.DataFrame:
    """The training evaluations of a run: `train_size` training-split queries per model.

    ``shared`` (the authors' behaviour, default): one random set of `train_size` training queries, the
    same for every model; a model keeps the pairs it was evaluated on (fewer if its evaluations are
    partial). A `train_size` above the number of training queries is a DataError (the run would be
    recorded under a size it never had). ``per_model``: each model draws `train_size` queries among its
    own evaluated training queries, all of them if it has fewer (the counts are in metrics.json).
    """
    if sampling not in SAMPLING:
        raise ConfigError(f"unknown sampling {sampling!r}; choose one of {', '.join(SAMPLING)}")
    if train_size < 1:
        raise ConfigError(f"train_size must be >= 1, got {train_size}")
    rng = np.random.default_rng(seed)
    train = data.split_scores("train")
    if sampling == "shared":
        ids = data.split_queries("train")["prompt_id"].to_numpy()
        if train_size > len(ids):
            raise DataError(
                f"{data.source}: train_size {train_size} exceeds the {len(ids)} queries of the train "
                f"split; choose a training size <= {len(ids)} (config `train_sizes` / --train-size)."
            )
        chosen = np.sort(rng.choice(ids, size=train_size, replace=False))
        pairs = train[train["prompt_id"].isin(chosen)]
    else:
        parts = []
        for _model_id, rows in train.groupby("model_id", sort=True):
            take = rng.choice(len(rows), size=min(train_size, len(rows)), replace=False)
            parts.append(rows.iloc[np.sort(take)])
        pairs = pd.concat(parts) if parts else train.iloc[:0]
    if pairs.empty:
        raise DataError(f"{data.source}: no training evaluations (the train split has no scored queries).")
    return pairs.sort_values(["model_id", "prompt_id"]).reset_index(drop=True)


def training_counts(train: pd.DataFrame) -> dict:
    """What a run actually trained on: distinct queries, and training queries per model (min/median/max)."""
    per_model = train.groupby("model_id").size()
    return {
        "n_train_queries": int(train["prompt_id"].nunique()),
        "train_queries_per_model": {
            "min": int(per_model.min()),
            "median": float(per_model.median()),
            "max": int(per_model.max()),
        },
    }


def score_frame(logits: np.ndarray, prompt_ids, model_ids) -> pd.DataFrame:
    """Long (prompt_id, model_id, logit) frame of a [prompts x models] logit matrix."""
    n_p, n_m = logits.shape
    return pd.DataFrame(
        {
            "prompt_id": np.repeat(np.asarray(prompt_ids, dtype=np.int64), n_m),
            "model_id": np.tile(np.asarray(model_ids, dtype=np.int64), n_p),
            "logit": np.asarray(logits, dtype=np.float32).reshape(-1),
        }
    )


def evaluate_split(data: EvalData, split: str, logits: np.ndarray, model_ids) -> dict:
    q = data.split_queries(split)
    labels = data.label_matrix(q["prompt_id"], model_ids)
    return evaluation.evaluate(logits, labels, q["benchmark"].to_numpy())


def model_names(data: EvalData, model_ids) -> list[str]:
    """Names of `model_ids` (in that order) from the data set's models.parquet."""
    by_id = dict(zip(data.models["model_id"].astype(int), data.models["name"].astype(str)))
    return [by_id[int(i)] for i in model_ids]


def execute(
    method: str,
    params: dict,
    dataset_dir: str | Path,
    encodings_path: str | Path,
    train_size: int,
    seed: int,
    out_dir: str | Path,
    sampling: str = "shared",
    duplicates: str = "last",
    hold_out=False,
    train_models: int = 0,
    encoder: str | None = None,
) -> dict:
    """Fit `method` on one run's training evaluations and write the run directory. Returns metrics.

    `hold_out` (onboarding runs, :mod:`locus.experiments.onboarding`): False trains on every model; True
    leaves out the data set's ``held_out`` models, a list of names leaves out those; `train_models` > 0
    then keeps that many of the remaining models (a seeded, nested choice). The run scores only the models
    it trained on. `encoder`: the encoder the run is for; encodings made with another are refused."""
    model = methods.create(method, params, seed=seed)  # bad parameters fail before any data is read
    data = read_dataset(dataset_dir, duplicates=duplicates)
    enc = read_encodings(encodings_path)
    if encoder is not None and enc.encoder != encoder:
        raise DataError(
            f"{encodings_path}: encodings of {enc.encoder!r}, but this run is for {encoder!r}; re-encode with "
            f"`locus encode --encoder {encoder}` (in the workflow: delete the file and rerun)"
        )
    fingerprint = check_matches(enc, data.queries, str(dataset_dir))
    train = training_pairs(data, train_size, seed, sampling)
    selection = None
    if hold_out is not False or train_models:
        held = (
            held_out_ids(data.models, None if hold_out is True else list(hold_out), f"{dataset_dir}/models.parquet")
            if hold_out is not False
            else np.zeros(0, np.int64)
        )
        keep = training_models(data.model_ids, held, int(train_models), seed)
        train = train[train["model_id"].isin(keep)].reset_index(drop=True)
        selection = {"held_out_models": model_names(data, held), "train_models": int(len(keep))}
    model_ids = np.sort(train["model_id"].unique())
    # a model with no training evaluations in this run cannot be fitted: it is left out of the run (not
    # trained, not scored), said in the log and recorded in metrics.json, never silently
    wanted = np.asarray(data.model_ids, dtype=np.int64) if selection is None else keep
    left_out = model_names(data, np.setdiff1d(wanted, model_ids))
    if left_out:
        log.warning(
            "%s: %d model(s) have no training evaluations in this run (sampling=%s, n=%d) and are left out "
            "(not trained, not scored; metrics.json models_without_training_pairs): %s",
            method,
            len(left_out),
            sampling,
            train_size,
            ", ".join(left_out[:10]) + (" ..." if len(left_out) > 10 else ""),
        )
    fit_data = FitData(train=train, val=data.split_scores("val"), encodings=enc, model_ids=model_ids)

    log.info(
        "%s: fitting on %d pairs (%d models, n=%d, sampling=%s, seed=%d)",
        method,
        len(train),
        len(model_ids),
        train_size,
        sampling,
        seed,
    )
    t0 = time.perf_counter()
    model.fit(fit_data)
    fit_seconds = time.perf_counter() - t0

    outputs, metrics = (
        {},
        {
            "method": method,
            "params": model.params.as_dict(),
            "train_size": train_size,
            "seed": seed,
            "sampling": sampling,
            "encoder": enc.encoder,
            "dataset": str(dataset_dir),
            "data_fingerprint": fingerprint,
            "n_train_pairs": int(len(train)),
            **training_counts(train),
            "n_models": int(len(model_ids)),
            "fit_seconds": round(fit_seconds, 3),
            "model_selection": selection,
            "models_without_training_pairs": left_out,
            "provenance": provenance.record(getattr(model, "device", "cpu")),
        },
    )
    for split in ("val", "test"):
        q = data.split_queries(split)
        t0 = time.perf_counter()
        logits = model.predict_logits(enc.take(q["prompt_id"]), model_ids)
        metrics[f"predict_seconds_{split}"] = round(time.perf_counter() - t0, 3)
        outputs[split] = score_frame(logits, q["prompt_id"], model_ids)
        metrics[split] = evaluate_split(data, split, logits, model_ids)
    val_q, test_q = data.split_queries("val"), data.split_queries("test")
    metrics["reference"] = evaluation.reference_rows(
        data.label_matrix(val_q["prompt_id"], model_ids),
        data.label_matrix(test_q["prompt_id"], model_ids),
        test_q["benchmark"].to_numpy(),
    )
    t = metrics["test"]["overall"]
    log.info(
        "%s: test routing %.4f, correctness %.4f (fit %.1f s)",
        method,
        t["routing_acc"],
        t["correctness_acc"],
        fit_seconds,
    )

    run_info = {
        "model_names": model_names(data, model_ids),
        "encoder": enc.encoder,
        "dataset": str(dataset_dir),
        "data_fingerprint": fingerprint,
        "train_size": int(train_size),
        "sampling": sampling,
    }
    with atomic_dir(out_dir) as tmp:
        model.save(tmp, extra=run_info)
        train.to_parquet(tmp / ra.TRAIN_PAIRS, index=False)
        for split, frame in outputs.items():
            frame.to_parquet(tmp / ra.scores_file(split), index=False)
        if isinstance(model, EmbeddingMethod):
            ids, z = model.model_embeddings()
            write_vectors(tmp / ra.EMBEDDINGS, "model_id", ids, z)
        history = (
            model.history
            if model.history is not None
            else pd.DataFrame([{"fit_seconds": fit_seconds, "val_routing": metrics["val"]["overall"]["routing_acc"]}])
        )
        history.to_csv(tmp / ra.LOG, index=False)
        metrics[ra.DIGESTS] = ra.file_digests(tmp, method)  # every reader checks its file against these
        write_json(tmp / ra.METRICS, metrics)
        written = sorted(p.name for p in tmp.iterdir())
        if written != sorted(ra.run_files(method)):
            raise RuntimeError(
                f"run directory of {method!r} holds {written}, but locus.run_artifacts.run_files "
                f"declares {sorted(ra.run_files(method))}; update one of them."
            )
    return metrics
