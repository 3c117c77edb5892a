"""The one interface every method (LOCUS and each baseline) implements.

A method is fitted on the training evaluations of one run (plus validation evaluations, used only
for early stopping / tuning, never test labels) and then scores any queries against any of its
models: ``predict_logits`` returns a [queries x models] matrix of logits, sigmoid(logit) being the
predicted probability that the model answers the query correctly. Embedding methods also expose
one vector per model and can embed a new model from its scored queries.

Each method class is the one home of its metadata: ``name`` (registry key), ``label`` (plain display
label), ``latex_label`` (tables), ``order`` (table order), ``uses_torch`` (the workflow requests a GPU
only for these), ``has_embeddings`` (True exactly for :class:`EmbeddingMethod` subclasses) and ``Params``,
its parameters: a frozen dataclass (:class:`locus.methods.params.MethodParams`) declaring each parameter's
type, default, allowed values and doc once. ``self.params`` is an instance of it, read by attribute
(``self.params.dim``); :meth:`Method.validate_params` (``Params.from_dict``) is the one check of a method's
parameters, run by ``locus train`` and by the workflow's config check before any work. ``defaults`` (every
parameter's default, by name) is derived from ``Params``.

Persistence is shared: :meth:`Method.save` / :meth:`Method.load` write and read ``model.safetensors`` +
``config.json`` through :mod:`locus.weights` (checksum, finiteness); a method only says what its state
is (:meth:`Method.get_state`) and how to restore it (:meth:`Method.set_state`).

Checkpoint selection / tuning on the validation split uses one vocabulary for every method:
``select_by`` ∈ :data:`SELECT_BY` (``val_routing`` = hit@1, ``val_bce``, ``val_acc`` = correctness
accuracy; :func:`locus.evaluation.validation_metrics`).

Everything after training (metrics, tables, figures, analyses) reads the saved score matrices and
embeddings written by :mod:`locus.runs`, so it is written once for all methods.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from locus import weights
from locus.data.encodings import Encodings
from locus.errors import DataError, LocusError
from locus.methods.params import MethodParams

SELECT_BY = ("val_routing", "val_bce", "val_acc")  # keys of locus.evaluation.validation_metrics
EMBED_BLOCK_ROWS = 1 << 16  # evaluations fitted in one block by embed_many: bounds its memory


def better(select_by: str, new: float, best: float | None) -> bool:
    """Is `new` a better validation value than `best`? BCE is minimised, accuracies maximised; a tie keeps
    the earlier (shorter-trained / smaller) candidate; None (no candidate yet) and NaN (no validation
    labels) always count as better, so the latest candidate is kept when nothing can be measured."""
    if best is None or not math.isfinite(new):
        return True
    return new < best if select_by == "val_bce" else new > best


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
    """Base class. Subclasses set the metadata below and implement fit / predict_logits / get_state /
    set_state."""

    name: ClassVar[str]
    label: ClassVar[str]  # plain text, e.g. "kNN router"
    latex_label: ClassVar[str]  # LaTeX, e.g. "$k$NN router"
    order: ClassVar[int]  # position in tables (ascending)
    color: ClassVar[str | None] = None  # line colour in figures (None: the next colour of a palette)
    uses_torch: ClassVar[bool] = True  # False: numpy/scikit-learn only (no GPU requested)
    has_embeddings: ClassVar[bool] = False  # derived: True exactly for EmbeddingMethod subclasses
    Params: ClassVar[type[MethodParams]] = MethodParams  # the method's parameters (a frozen dataclass)
    defaults: ClassVar[dict[str, Any]] = {}  # derived from Params: every parameter's default, by name
    params: MethodParams  # this instance's parameters, read by attribute

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "Params" in cls.__dict__:  # derived, never set by hand
            if cls.Params.method != cls.name:
                raise TypeError(f"{cls.__qualname__}.Params is for method {cls.Params.method!r}, not {cls.name!r}")
            cls.defaults = cls.Params().as_dict()
        # derived, never set by hand: True exactly for EmbeddingMethod and its subclasses
        is_base = cls.__module__ == __name__ and cls.__qualname__ == "EmbeddingMethod"
        cls.has_embeddings = is_base or issubclass(cls, EmbeddingMethod)

    @classmethod
    def validate_params(cls, params: Mapping[str, Any] | None):
        """The method's parameters from user input (:meth:`MethodParams.from_dict
        <locus.methods.params.MethodParams.from_dict>`): ``defaults`` (LOCUS: its recipe's) with `params` over
        them. An unknown name, a value outside its declaration or a bad combination is a one-line
        :class:`ConfigError` naming the parameter, the value and what is allowed."""
        return cls.Params.from_dict(params)

    def __init__(self, params: MethodParams | Mapping[str, Any] | None = None, seed: int = 0):
        """`params`: the method's ``Params`` (used as they are: already checked) or a mapping (checked here)."""
        self.params = params if type(params) is self.Params else self.validate_params(params)
        self.seed = int(seed)
        self.history: pd.DataFrame | None = None  # per-epoch log, when the method has epochs
        self.model_ids: np.ndarray | None = None

    @abstractmethod
    def fit(self, data: FitData) -> "Method": ...

    @abstractmethod
    def predict_logits(self, query_vectors: np.ndarray, model_ids=None) -> np.ndarray:
        """float32 logits [len(query_vectors), len(model_ids)] (default: all fitted models, ascending)."""

    # persistence ------------------------------------------------------------------------------
    @abstractmethod
    def get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-able settings beyond name/params/seed/model_ids, numpy arrays) of the fitted method."""

    @abstractmethod
    def set_state(self, config: dict, arrays: dict[str, np.ndarray]) -> None:
        """Restore what :meth:`get_state` returned (``self.params``, ``seed`` and ``model_ids`` are set)."""

    def save(self, directory: Path, extra: dict | None = None) -> None:
        """``model.safetensors`` + ``config.json`` (method, params, seed, model_ids, the method's settings,
        `extra` — e.g. the run's model names — and the weights' SHA-256). Never pickles."""
        self._resolve_model_ids(None)
        config, arrays = self.get_state()
        weights.save(
            directory,
            arrays,
            {
                "method": self.name,
                "params": self.params.as_dict(),
                "seed": self.seed,
                "model_ids": self.model_ids.tolist(),
                **config,
                **(extra or {}),
            },
        )

    @classmethod
    def load(cls, directory: Path) -> "Method":
        """The fitted method saved in `directory`; any damage is a DataError naming the directory."""
        directory = Path(directory)
        config, arrays = weights.load(directory)
        if config.get("method") != cls.name:
            raise DataError(
                f"{directory / weights.CONFIG_FILE}: written by method {config.get('method')!r}, not {cls.name!r}."
            )
        try:
            method = cls(config["params"], seed=config["seed"])
            method.model_ids = np.asarray(config["model_ids"], dtype=np.int64).reshape(-1)
            method.set_state(config, arrays)
        except LocusError as exc:
            raise DataError(f"{directory}: the checkpoint does not load ({exc}); re-run the training rule.") from exc
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:  # missing entries, wrong shapes
            detail = " ".join(str(exc).split())  # one line (torch's messages span several)
            raise DataError(
                f"{directory}: config.json / model.safetensors do not describe a fitted {cls.name!r} "
                f"({type(exc).__name__}: {detail[:300]}); re-run the training rule."
            ) from exc
        return method

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
    """A method that represents each model by a vector (``d_phi``: the query encoding size it was fitted on)."""

    d_phi: int | None = None

    @abstractmethod
    def model_embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        """(model_ids [m], embeddings float32 [m, dim]) of the fitted models."""

    def embed(self, query_vectors: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Embedding float32 [dim] of one (new) model from its scored queries: vectors [n, d_phi] and
        scores [n] in [0, 1] (n >= 1). Bad input is a DataError; the fitted method is not modified."""
        self._resolve_model_ids(None)
        vectors, scores = self._check_embed_inputs(query_vectors, scores)
        return np.asarray(self._embed(vectors, scores), dtype=np.float32)

    @abstractmethod
    def _embed(self, query_vectors: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """:meth:`embed` on validated inputs (float32 [n, d_phi], float32 [n])."""

    def embed_many(self, sets) -> np.ndarray:
        """Embeddings float32 [k, dim] of k (new) models, each from its own scored queries: `sets` is a list
        of (query_vectors [n_i, d_phi], scores [n_i]). Each row is what :meth:`embed` gives for its set (up to
        float rounding);
        methods that fit embeddings by gradient descent fit a block of sets at once (far fewer steps)."""
        self._resolve_model_ids(None)
        checked = [self._check_embed_inputs(vectors, scores) for vectors, scores in sets]
        if not checked:
            raise DataError(f"{self.name}: embed_many() needs at least one evaluation set.")
        blocks, block, rows = [], [], 0
        for pair in checked:  # consecutive sets up to EMBED_BLOCK_ROWS rows (a larger set alone)
            if block and rows + len(pair[1]) > EMBED_BLOCK_ROWS:
                blocks.append(block)
                block, rows = [], 0
            block.append(pair)
            rows += len(pair[1])
        blocks.append(block)
        return np.concatenate([np.asarray(self._embed_many(b), dtype=np.float32) for b in blocks])

    def _embed_many(self, sets: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """:meth:`embed_many` of one block of validated sets; by default one :meth:`_embed` per set."""
        return np.stack([self._embed(vectors, scores) for vectors, scores in sets])

    def _check_embed_inputs(self, query_vectors, scores) -> tuple[np.ndarray, np.ndarray]:
        what = f"{self.name}: embed()"
        vectors = self._check_query_dim(query_vectors, self.d_phi)
        scores = np.asarray(scores, dtype=np.float32)
        if scores.ndim != 1:
            raise DataError(f"{what} embeds one model: scores must be 1-D [n], got shape {scores.shape}.")
        if len(scores) != len(vectors):
            raise DataError(
                f"{what} needs one score per query vector, got {len(scores)} scores for {len(vectors)} vectors."
            )
        if len(scores) == 0:
            raise DataError(f"{what} needs at least one scored query.")
        bad = ~((scores >= 0) & (scores <= 1))
        if bad.any():
            raise DataError(
                f"{what}: scores must lie in [0, 1] (no NaN; drop unevaluated queries); row(s) "
                f"{np.flatnonzero(bad)[:5].tolist()} do not."
            )
        rows = ~np.isfinite(vectors).all(axis=1)
        if rows.any():
            raise DataError(f"{what}: query encodings of row(s) {np.flatnonzero(rows)[:5].tolist()} hold NaN/Inf.")
        return np.ascontiguousarray(vectors), scores
