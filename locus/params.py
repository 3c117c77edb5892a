"""Parameters given on the command line as a JSON object (``--params '{"dim": 64}'``).

Shared by every command that takes ``--params`` (``locus data``, ``locus train``), so no command
module imports another.
"""

from __future__ import annotations

import json

from locus.errors import ConfigError


def parse_params(text: str, what: str) -> dict:
    """The JSON object in `text`; :class:`ConfigError` naming `what` when it is not valid JSON or not
    an object."""
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{what}: --params is not valid JSON ({exc}); give a JSON object, e.g. --params '{{\"dim\": 64}}'"
        ) from exc
    if not isinstance(params, dict):
        raise ConfigError(
            f"{what}: --params must be a JSON object, got {type(params).__name__}; e.g. --params '{{\"dim\": 64}}'"
        )
    return params


def method_params(method: str, text: str, dim: int | None = None) -> dict:
    """Parameters of `method` from ``--params`` JSON, with ``--dim`` (when given) overriding ``dim`` for
    methods that have one. An unknown method, or a parameter the method refuses
    (:meth:`~locus.methods.base.Method.validate_params`), is a :class:`ConfigError`."""
    from locus.methods import method_class

    params = parse_params(text, f"train {method}")
    cls = method_class(method)
    if dim is not None and "dim" in cls.defaults:
        params["dim"] = dim
    cls.validate_params(params)
    return params


def set_threads(threads: int) -> None:
    """torch's number of CPU threads (0 = leave torch's default)."""
    if threads > 0:
        import torch

        torch.set_num_threads(threads)
