"""Open a finished run directory for use by people: the fitted method, its encoder and its model names.

A run directory is written by :func:`locus.runs.execute`; its checkpoint is ``config.json`` +
``model.safetensors`` (:mod:`locus.weights`, checksummed). ``config.json`` records everything needed here:
the method, the model ids and their names (``model_ids``, ``model_names``, from the data set's
models.parquet at training time) and the short encoder name (``encoder``), so a checkpoint opens the same
from any directory, even when the data set is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from locus import methods, weights
from locus.errors import ConfigError, DataError


@dataclass
class Checkpoint:
    directory: Path
    method: object  # a fitted locus.methods.base.Method
    encoder: str
    model_ids: np.ndarray
    names: dict  # model_id -> name
    config: dict = field(default_factory=dict)  # the run's config.json

    def name(self, model_id: int) -> str:
        return self.names.get(int(model_id), str(int(model_id)))

    def resolve_models(self, spec: str | None) -> np.ndarray:
        """Model ids from a comma list of ids and/or names (exact, else unique case-insensitive match of the
        full name or of the part after the organisation, e.g. ``Yi-34B-Chat``), in the order given, each
        once. None -> all models of the run; a list naming no model (``""``, ``","``) is a DataError."""
        if spec is None:
            return self.model_ids
        items = [s.strip() for s in str(spec).split(",") if s.strip()]
        example = ", ".join(f"{k}={v}" for k, v in list(self.names.items())[:3])
        if not items:
            raise DataError(
                f"--models {spec!r}: names no model; give a comma list of model ids or names "
                f"(e.g. {example}), or leave --models out for all models of the run."
            )
        known = set(self.model_ids.tolist())
        by_name = {v: k for k, v in self.names.items()}
        out = []
        for item in items:
            if item.lstrip("-").isdigit() and int(item) in known:
                hit = int(item)
            elif item in by_name:
                hit = by_name[item]
            else:
                low = item.lower()
                hits = [k for k, v in self.names.items() if v.lower() == low or v.lower().split("/")[-1] == low]
                if len(hits) != 1:
                    why = "is ambiguous" if hits else "is not a model of this run"
                    raise DataError(
                        f"--models: {item!r} {why} ({self.directory}, {len(known)} models); give model "
                        f"ids or full names, e.g. {example} ..."
                    )
                hit = hits[0]
            if hit not in out:
                out.append(hit)
        return np.asarray(out, dtype=np.int64)


def load_checkpoint(directory: str | Path) -> Checkpoint:
    """The checkpoint of a finished run directory; a missing, damaged or foreign one is a DataError."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(
            f"{directory}: not a directory; --checkpoint must be a finished run directory "
            f"(results/runs/.../s<seed>/) containing config.json and model.safetensors."
        )
    config = weights.read_config(directory)
    where = directory / weights.CONFIG_FILE
    name = config.get("method")
    try:
        cls = methods.method_class(name) if isinstance(name, str) else None
    except ConfigError as exc:
        raise DataError(f"{where}: {exc}; re-run the training rule.") from exc
    if cls is None:
        raise DataError(f"{where}: no 'method' entry; re-run the training rule.")
    method = cls.load(directory)
    model_ids = np.asarray(method.model_ids, dtype=np.int64)
    names = config.get("model_names")
    if not isinstance(names, list) or len(names) != len(model_ids) or not all(isinstance(n, str) for n in names):
        raise DataError(
            f"{where}: no 'model_names' matching its {len(model_ids)} 'model_ids' (not written by "
            f"`locus train`, or by an older version); re-run the training rule."
        )
    encoder = config.get("encoder")
    if not isinstance(encoder, str) or not encoder:
        raise DataError(f"{where}: no 'encoder' entry; re-run the training rule.")
    return Checkpoint(
        directory=directory,
        method=method,
        encoder=encoder,
        model_ids=model_ids,
        names=dict(zip(model_ids.tolist(), names)),
        config=config,
    )


def encode_queries(encoder: str, texts, batch_size: int = 64) -> np.ndarray:
    """Encode query texts with the run's sentence encoder (imported lazily; tests may replace this)."""
    from locus.encoders import encode_texts, load_encoder

    return encode_texts(load_encoder(encoder), list(texts), batch_size=batch_size, progress=False)


def check_dim(vectors: np.ndarray, checkpoint: Checkpoint, what: str) -> np.ndarray:
    expected = getattr(checkpoint.method, "d_phi", None)
    if expected is not None and vectors.shape[1] != expected:
        raise DataError(
            f"{what}: the encoder gives {vectors.shape[1]}-d vectors but the run {checkpoint.directory} "
            f"was trained on {expected}-d encodings ({checkpoint.encoder}); pass --encoder "
            f"{checkpoint.encoder} (or leave --encoder out)."
        )
    return vectors
