"""One run = one method x encoder x training size x dimension x seed: sample the training evaluations,
fit, score val/test, evaluate, and write every artefact of the run directory atomically.

Run directory (``results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}/``):

- ``config.json``        method name + parameters + run settings (written by the method's ``save``
                           together with its weights, ``model.safetensors``, where it has weights);
- ``train_pairs.parquet`` the exact (prompt_id, model_id, score) training evaluations;
- ``scores_val.parquet`` / ``scores_test.parquet``: long ``prompt_id, model_id, logit``;
- ``embeddings.parquet``  ``model_id, embedding`` (embedding methods only);
- ``metrics.json``       val and test metrics (overall + per benchmark) and reference rows;
- ``log.csv``            per-epoch log (methods with epochs; otherwise a one-line summary).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from locus import evaluation, methods
from locus.atomic import atomic_dir, write_json
from locus.data.canonical import EvalData, pairs_to_matrix, read_dataset
from locus.data.encodings import read_encodings, read_vectors, write_vectors
from locus.errors import ConfigError
from locus.methods.base import EmbeddingMethod, FitData

log = logging.getLogger(__name__)

SAMPLING = ("shared", "per_model")


def training_pairs(data: EvalData, train_size: int, seed: int, sampling: str = "shared") -> pd.DataFrame:
    """The training evaluations of a run: `train_size` training-split queries per model.

    ``shared`` (the authors' behaviour, default): one random set of `train_size` training queries,
    the same for every model; a model keeps the pairs it was evaluated on (fewer if its evaluations are
    partial). ``per_model``: each model draws `train_size` queries among its own evaluated training
    queries. If fewer are available, all are used.
    """
    if sampling not in SAMPLING:
        raise ConfigError(f"unknown sampling {sampling!r}; choose one of {', '.join(SAMPLING)}")
    if train_size < 1:
        raise ConfigError(f"train_size must be >= 1, got {train_size}")
    rng = np.random.default_rng(seed)
    train = data.split_scores("train")
    if sampling == "shared":
        ids = data.split_queries("train")["prompt_id"].to_numpy()
        chosen = np.sort(rng.choice(ids, size=min(train_size, len(ids)), replace=False))
        pairs = train[train["prompt_id"].isin(chosen)]
    else:
        parts = []
        for model_id, rows in train.groupby("model_id", sort=True):
            take = rng.choice(len(rows), size=min(train_size, len(rows)), replace=False)
            parts.append(rows.iloc[np.sort(take)])
        pairs = pd.concat(parts)
    return pairs.sort_values(["model_id", "prompt_id"]).reset_index(drop=True)


def score_frame(logits: np.ndarray, prompt_ids, model_ids) -> pd.DataFrame:
    """Long (prompt_id, model_id, logit) frame of a [prompts x models] logit matrix."""
    n_p, n_m = logits.shape
    return pd.DataFrame({
        "prompt_id": np.repeat(np.asarray(prompt_ids, dtype=np.int64), n_m),
        "model_id": np.tile(np.asarray(model_ids, dtype=np.int64), n_p),
        "logit": np.asarray(logits, dtype=np.float32).reshape(-1),
    })


def read_scores(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prompt_ids, model_ids, logits [prompts x models]) from a scores_*.parquet file."""
    df = pd.read_parquet(path)
    prompt_ids = np.sort(df["prompt_id"].unique())
    model_ids = np.sort(df["model_id"].unique())
    return prompt_ids, model_ids, pairs_to_matrix(df, prompt_ids, model_ids, value="logit")


def evaluate_split(data: EvalData, split: str, logits: np.ndarray, model_ids) -> dict:
    q = data.split_queries(split)
    labels = data.label_matrix(q["prompt_id"], model_ids)
    return evaluation.evaluate(logits, labels, q["benchmark"].to_numpy())


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
) -> dict:
    """Fit `method` on one run's training evaluations and write the run directory. Returns metrics."""
    data = read_dataset(dataset_dir, duplicates=duplicates)
    enc = read_encodings(encodings_path)
    train = training_pairs(data, train_size, seed, sampling)
    model_ids = np.sort(train["model_id"].unique())
    fit_data = FitData(train=train, val=data.split_scores("val"), encodings=enc, model_ids=model_ids)

    model = methods.create(method, params, seed=seed)
    log.info("%s: fitting on %d pairs (%d models, n=%d, sampling=%s, seed=%d)",
             method, len(train), len(model_ids), train_size, sampling, seed)
    t0 = time.perf_counter()
    model.fit(fit_data)
    fit_seconds = time.perf_counter() - t0

    outputs, metrics = {}, {"method": method, "params": model.params, "train_size": train_size, "seed": seed,
                            "sampling": sampling, "encoder": enc.encoder, "dataset": str(dataset_dir),
                            "n_train_pairs": int(len(train)), "n_models": int(len(model_ids)),
                            "fit_seconds": round(fit_seconds, 3)}
    for split in ("val", "test"):
        q = data.split_queries(split)
        t0 = time.perf_counter()
        logits = model.predict_logits(enc.take(q["prompt_id"]), model_ids)
        metrics[f"predict_seconds_{split}"] = round(time.perf_counter() - t0, 3)
        outputs[split] = score_frame(logits, q["prompt_id"], model_ids)
        metrics[split] = evaluate_split(data, split, logits, model_ids)
    val_q, test_q = data.split_queries("val"), data.split_queries("test")
    metrics["reference"] = evaluation.reference_rows(
        data.label_matrix(val_q["prompt_id"], model_ids), data.label_matrix(test_q["prompt_id"], model_ids),
        test_q["benchmark"].to_numpy())
    t = metrics["test"]["overall"]
    log.info("%s: test routing %.4f, correctness %.4f (fit %.1f s)", method, t["routing_acc"],
             t["correctness_acc"], fit_seconds)

    with atomic_dir(out_dir) as tmp:
        model.save(tmp)
        train.to_parquet(tmp / "train_pairs.parquet", index=False)
        for split, frame in outputs.items():
            frame.to_parquet(tmp / f"scores_{split}.parquet", index=False)
        if isinstance(model, EmbeddingMethod):
            ids, z = model.model_embeddings()
            write_embeddings(tmp / "embeddings.parquet", ids, z)
        history = model.history if model.history is not None else pd.DataFrame(
            [{"fit_seconds": fit_seconds, "val_routing_acc": metrics["val"]["overall"]["routing_acc"]}])
        history.to_csv(tmp / "log.csv", index=False)
        write_json(tmp / "metrics.json", metrics)
    return metrics


def write_embeddings(path: str | Path, model_ids, z: np.ndarray) -> None:
    """Model embeddings: `model_id` + fixed-size float32 `embedding` (same layout as encodings)."""
    write_vectors(path, "model_id", model_ids, z)


def read_embeddings(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    ids, z, _ = read_vectors(path, "model_id")
    return ids, z
