"""Parameters given on the command line as a JSON object (``--params '{"dim": 64}'``).

Shared by every command that takes ``--params`` (``locus data``, ``locus train``), so no command
module imports another.
"""

from __future__ import annotations

import importlib
import json

from locus.constants import DEFAULT_DUPLICATE_POLICY, DEFAULT_SPLIT_OVERLAP
from locus.errors import ConfigError

# data source name -> adapter module; each module has PARAMS (the typed declaration), DEFAULTS,
# validate_params(params) and build(params) -> (queries, models, scores); those of
# locus.data.truth.SOURCES_WITH_TRUTH also build_with_truth(params) -> (..., truth)
SOURCES = {
    "synthetic": "locus.data.synthetic",
    "embedllm": "locus.data.embedllm",
    "llmrouter": "locus.data.llmrouter",
    "csv": "locus.data.csv_source",
}
# the data-set options and their canonical defaults (as locus.data.canonical.DATASET_OPTIONS)
OPTION_DEFAULTS = {"duplicates": DEFAULT_DUPLICATE_POLICY, "split_overlap": DEFAULT_SPLIT_OVERLAP}


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


def adapter(source: str):
    """The adapter module of data source `source` (ConfigError listing the known ones)."""
    if source not in SOURCES:
        raise ConfigError(f"unknown data source {source!r}; known: {', '.join(sorted(SOURCES))}")
    return importlib.import_module(SOURCES[source])


def source_params(source: str, params: dict, flags: dict | None = None) -> tuple[dict, dict]:
    """(adapter parameters with their defaults, data-set options) of one build, every name and value checked
    before any work: the same check for ``locus data --params`` and a config file's ``datasets.X.params``.

    The data-set options (``duplicates``, ``split_overlap``) come from `params`, else `flags` (the command
    line), else the source's ``DATASET_DEFAULTS``, else the canonical default. An adapter that reads an
    option itself (embedllm: ``split_overlap``) gets it among its parameters."""
    from locus.data.canonical import check_option

    module = adapter(source)
    what = f"data source {source!r}"
    if not isinstance(params, dict):
        raise ConfigError(f"{what}: parameters must be a mapping of names to values, got {params!r}")
    params = dict(params)
    source_defaults = getattr(module, "DATASET_DEFAULTS", {})
    options = {}
    for name, default in OPTION_DEFAULTS.items():
        if name in params:
            value = params.pop(name)
        elif (flags or {}).get(name) is not None:
            value = flags[name]
        else:
            value = source_defaults.get(name, default)
        options[name] = check_option(name, value, what)
    unknown = sorted(set(params) - set(module.DEFAULTS))
    if unknown:
        renamed = getattr(module, "RENAMED_PARAMS", {})
        hint = "".join(f"; {k} is now {renamed[k]}" for k in unknown if k in renamed)
        raise ConfigError(
            f"{what}: unknown parameter(s) {unknown}; known: {sorted(module.DEFAULTS)} "
            f"and the data-set options {sorted(OPTION_DEFAULTS)}{hint}"
        )
    params.update({k: v for k, v in options.items() if k in module.DEFAULTS})
    return module.validate_params(params), options


def run_params(method: str, text: str, dim: int | None = None):
    """The parameters of one run of `method`: ``--params`` JSON, with ``--dim`` (when given) over ``dim`` for
    methods that have one, as the method's ``Params`` object (:class:`~locus.methods.params.MethodParams`:
    defaults, the user's values over them, checked once). An unknown method, or a parameter the method
    refuses, is a :class:`ConfigError`."""
    from locus.methods import method_class

    return method_class(method).Params.from_dict(method_params(method, text, dim, check=False))


def method_params(method: str, text: str, dim: int | None = None, *, check: bool = True) -> dict:
    """Only the parameters given (``--params`` JSON, ``--dim`` as :func:`run_params`), checked as
    :func:`run_params` checks them (`check`): for commands that look at which ones were given."""
    from locus.methods import method_class

    params = parse_params(text, f"train {method}")
    cls = method_class(method)
    if dim is not None and "dim" in cls.defaults:
        params["dim"] = dim
    if check:
        cls.Params.from_dict(params)
    return params


def set_threads(threads: int) -> None:
    """torch's number of CPU threads (0 = leave torch's default)."""
    if threads > 0:
        import torch

        torch.set_num_threads(threads)
