"""The one interface every method (LOCUS and each baseline) implements.

A method is fitted on the training evaluations of one run (plus validation evaluations, used only
for early stopping / tuning, never test labels) and then scores any queries against any of its
models: ``predict_logits`` returns a [queries x models] matrix of logits, sigmoid(logit) being the
predicted probability that the model answers the query correctly. Embedding methods also expose
one vector per model and can embed a new model from its scored queries.

Everything after training (metrics, tables, figures, analyses) reads the saved score matrices and
embeddings written by :mod:`locus.runs`, so it is written once for all methods.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from locus.data.encodings import Encodings
from locus.errors import ConfigError, DataError


@dataclass(frozen=True)
class FitData:
    """What a method may see while fitting.

    train: long (prompt_id, model_id, score) rows: the training evaluations of this run.
    val:   long rows of the validation split (early stopping / hyper-parameter choice only).
    encodings: query encodings covering at least every prompt in train and val.
    model_ids: the models to fit, sorted ascending (every one has at least one training row).
    """

    train: pd.DataFrame
    val: pd.DataFrame
    encodings: Encodings
    model_ids: np.ndarray


class Method(ABC):
    """Base class. Subclasses set `name`, `defaults` and implement fit / predict_logits / save / load."""

    name: ClassVar[str]
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, params: dict | None = None, seed: int = 0):
        params = dict(params or {})
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ConfigError(
                f"method {self.name!r}: unknown parameter(s) {unknown}; known: {sorted(self.defaults)}"
            )
        self.params = {**self.defaults, **params}
        self.seed = int(seed)
        self.history: pd.DataFrame | None = None  # per-epoch log, when the method has epochs
        self.model_ids: np.ndarray | None = None

    @abstractmethod
    def fit(self, data: FitData) -> "Method":
        ...

    @abstractmethod
    def predict_logits(self, query_vectors: np.ndarray, model_ids=None) -> np.ndarray:
        """float32 logits [len(query_vectors), len(model_ids)] (default: all fitted models, ascending)."""

    @abstractmethod
    def save(self, directory: Path) -> None:
        """Write weights as safetensors and everything else as JSON into `directory` (never pickles)."""

    @classmethod
    @abstractmethod
    def load(cls, directory: Path) -> "Method":
        ...

    # helpers for subclasses -------------------------------------------------------------------
    def _resolve_model_ids(self, model_ids) -> np.ndarray:
        if self.model_ids is None:
            raise RuntimeError(f"{self.name}: fit() or load() first")
        if model_ids is None:
            return self.model_ids
        model_ids = np.asarray(model_ids, dtype=np.int64)
        unknown = ~np.isin(model_ids, self.model_ids)
        if unknown.any():
            raise DataError(
                f"{self.name}: unknown model id(s) {model_ids[unknown][:5].tolist()}; this run knows "
                f"{len(self.model_ids)} models (ids {int(self.model_ids.min())}..{int(self.model_ids.max())})."
            )
        return model_ids

    def _model_positions(self, model_ids) -> np.ndarray:
        ids = self._resolve_model_ids(model_ids)
        return np.searchsorted(self.model_ids, ids)

    def _check_query_dim(self, query_vectors: np.ndarray, expected: int) -> np.ndarray:
        query_vectors = np.asarray(query_vectors, dtype=np.float32)
        if query_vectors.ndim != 2 or query_vectors.shape[1] != expected:
            raise DataError(
                f"{self.name}: query encodings have shape {query_vectors.shape}, expected [n, {expected}]; "
                f"use the same encoder as in training."
            )
        return query_vectors


class EmbeddingMethod(Method):
    """A method that represents each model by a vector."""

    @abstractmethod
    def model_embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        """(model_ids [m], embeddings float32 [m, dim]) of the fitted models."""

    @abstractmethod
    def embed(self, query_vectors: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Embedding of a (new) model from its scored queries: vectors [n, d_phi], scores [n] in [0, 1]."""


def read_params(directory: Path, filename: str = "config.json") -> dict:
    path = Path(directory) / filename
    if not path.is_file():
        raise DataError(f"{path}: missing; {directory} is not a finished run directory.")
    return json.loads(path.read_text())
