"""Open a finished run directory for use by people: the fitted method, its encoder and its model names.

A run directory is written by :func:`locus.runs.execute` (``config.json``, ``model.safetensors``,
``metrics.json`` ...). ``metrics.json`` records the short encoder name (``encoder``) and the data set
directory (``dataset``) whose ``models.parquet`` gives the model names; when that directory is gone the
models are named by their ids.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from locus import methods
from locus.errors import DataError


@dataclass
class Checkpoint:
    directory: Path
    method: object  # a fitted locus.methods.base.Method
    encoder: str
    model_ids: np.ndarray
    names: dict  # model_id -> name

    def name(self, model_id: int) -> str:
        return self.names.get(int(model_id), str(int(model_id)))

    def resolve_models(self, spec: str | None) -> np.ndarray:
        """Model ids from a comma list of ids and/or names (exact, else unique case-insensitive suffix
        after the organisation, e.g. ``Yi-34B-Chat``). None / empty -> all models of the run."""
        if not spec:
            return self.model_ids
        by_name = {v: k for k, v in self.names.items()}
        out = []
        for item in (s.strip() for s in spec.split(",")):
            if not item:
                continue
            if item.lstrip("-").isdigit() and int(item) in set(self.model_ids.tolist()):
                out.append(int(item))
                continue
            if item in by_name:
                out.append(by_name[item])
                continue
            low = item.lower()
            hits = [k for k, v in self.names.items() if v.lower() == low or v.lower().split("/")[-1] == low]
            if len(hits) != 1:
                known = ", ".join(f"{k}={v}" for k, v in list(self.names.items())[:5])
                why = "is ambiguous" if hits else "is not a model of this run"
                raise DataError(f"--models: {item!r} {why} ({self.directory}); give model ids or full names, "
                                f"e.g. {known} ...")
            out.append(hits[0])
        ids = np.asarray(out, dtype=np.int64)
        unknown = ~np.isin(ids, self.model_ids)
        if unknown.any():
            raise DataError(f"--models: id(s) {ids[unknown].tolist()} are not models of the run {self.directory}.")
        return ids


def load_checkpoint(directory: str | Path) -> Checkpoint:
    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise DataError(f"{config_path}: missing; --checkpoint must be a finished run directory "
                        f"(results/runs/.../s<seed>/) containing config.json and model.safetensors.")
    config = json.loads(config_path.read_text())
    metrics_path = directory / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.is_file() else {}
    name = config.get("method") or metrics.get("method")
    if not name:
        raise DataError(f"{config_path}: no 'method' entry; re-run the training rule.")
    method = methods.method_class(name).load(directory)
    encoder = metrics.get("encoder") or config.get("encoder") or "unknown"
    model_ids = np.asarray(method.model_ids, dtype=np.int64)
    names = {int(i): str(int(i)) for i in model_ids}
    dataset = metrics.get("dataset")
    models_file = Path(dataset) / "models.parquet" if dataset else None
    if models_file is not None and models_file.is_file():
        models = pd.read_parquet(models_file, columns=["model_id", "name"])
        names.update({int(i): str(n) for i, n in zip(models["model_id"], models["name"]) if int(i) in names})
    return Checkpoint(directory=directory, method=method, encoder=encoder, model_ids=model_ids, names=names)


def encode_queries(encoder: str, texts, batch_size: int = 64) -> np.ndarray:
    """Encode query texts with the run's sentence encoder (imported lazily; tests may replace this)."""
    from locus.encoders import encode_texts, load_encoder
    return encode_texts(load_encoder(encoder), list(texts), batch_size=batch_size, progress=False)


def check_dim(vectors: np.ndarray, checkpoint: Checkpoint, what: str) -> np.ndarray:
    expected = getattr(checkpoint.method, "d_phi", None)
    if expected is not None and vectors.shape[1] != expected:
        raise DataError(f"{what}: the encoder gives {vectors.shape[1]}-d vectors but the run {checkpoint.directory} "
                        f"was trained on {expected}-d encodings ({checkpoint.encoder}); pass --encoder "
                        f"{checkpoint.encoder} (or leave --encoder out).")
    return vectors
