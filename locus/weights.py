"""The one way a method's state goes to disk: ``model.safetensors`` (arrays) + ``config.json`` (the rest).

Every method, torch-based or not, saves through :func:`save` and loads through :func:`load`
(:meth:`locus.methods.base.Method.save` / ``load`` call them). Arrays are numpy arrays
(``safetensors.numpy``; torch methods convert their state dict), never pickles.

Integrity, checked on every load so a damaged checkpoint is a clear :class:`~locus.errors.DataError`
(naming the file and the fix: re-run the training rule), never a traceback or silent garbage:

- ``config.json`` must be a JSON object; it records the SHA-256 of ``model.safetensors`` under
  :data:`CHECKSUM_KEY`, written last, so a present config means the weights file was complete;
- the weights file must exist and match that checksum (a truncated or modified file does not);
- every floating-point array must be finite: NaN/Inf is refused on save (training diverged) and on load.
  An array that legitimately has gaps (kNN's score matrix) is stored filled plus a boolean mask.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np

from locus.atomic import atomic_path, sha256_file, write_json
from locus.errors import DataError

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CHECKSUM_KEY = "weights_sha256"
_RERUN = "re-run the training rule (or `locus train ... --out` this directory)"


def check_finite(arrays: Mapping[str, np.ndarray], where: str, fix: str) -> None:
    """DataError naming the first floating-point array holding NaN or Inf."""
    for key, value in arrays.items():
        value = np.asarray(value)
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            bad = int((~np.isfinite(value)).sum())
            raise DataError(f"{where}: array {key!r} holds {bad} NaN/Inf value(s); {fix}.")


def save(directory: str | Path, arrays: Mapping[str, np.ndarray], config: dict) -> None:
    """Write ``model.safetensors`` (the arrays) then ``config.json`` (`config` + the weights' SHA-256)."""
    from safetensors.numpy import save_file

    directory = Path(directory)
    arrays = {str(k): np.ascontiguousarray(v) for k, v in arrays.items()}
    check_finite(
        arrays,
        f"{directory / WEIGHTS_FILE}",
        "training diverged — nothing was saved; lower the learning rate or change the seed",
    )
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / WEIGHTS_FILE) as tmp:
        save_file(arrays, str(tmp))
        checksum = sha256_file(tmp)
    write_json(directory / CONFIG_FILE, {**config, CHECKSUM_KEY: checksum})


def read_config(directory: str | Path) -> dict:
    """The JSON object in ``config.json``; DataError when it is missing, unreadable or not an object."""
    directory = Path(directory)
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise DataError(f"{path}: missing; {directory} is not a finished run directory — {_RERUN}.")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); the checkpoint is damaged — {_RERUN}.") from exc
    if not isinstance(config, dict):
        raise DataError(
            f"{path}: must hold a JSON object, found {type(config).__name__}; the checkpoint is damaged — {_RERUN}."
        )
    return config


def load(directory: str | Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(config, arrays) of a directory written by :func:`save`, after checking checksum and finiteness."""
    from safetensors.numpy import load_file

    directory = Path(directory)
    config = read_config(directory)
    path = directory / WEIGHTS_FILE
    if not path.is_file():
        raise DataError(f"{path}: missing; {directory} is not a finished run directory — {_RERUN}.")
    expected = config.get(CHECKSUM_KEY)
    if not isinstance(expected, str):
        raise DataError(
            f"{directory / CONFIG_FILE}: no {CHECKSUM_KEY!r} entry (written by an older locus, or "
            f"edited); the weights cannot be verified — {_RERUN}."
        )
    actual = sha256_file(path)
    if actual != expected:
        raise DataError(
            f"{path}: SHA-256 {actual[:12]}... does not match {expected[:12]}... recorded in "
            f"{CONFIG_FILE}; the file was truncated or modified after training — {_RERUN}."
        )
    try:
        arrays = load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types
        detail = " ".join(str(exc).split())
        raise DataError(f"{path}: not a readable safetensors file ({detail}); {_RERUN}.") from exc
    check_finite(arrays, str(path), f"the checkpoint is damaged — {_RERUN}")
    return config, arrays
