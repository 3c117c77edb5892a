"""`locus data SOURCE --out DIR`: build a canonical data set directory from one source adapter."""
from __future__ import annotations

import importlib
import json
import logging

from locus.errors import ConfigError

NAME = "data"
HELP = "build a canonical data set (queries/models/scores Parquet) from a source adapter"

# source name -> adapter module; each module has DEFAULTS (dict) and build(params) -> (queries, models, scores)
SOURCES = {
    "synthetic": "locus.data.synthetic",
    "embedllm": "locus.data.embedllm",
    "llmrouter": "locus.data.llmrouter",
    "csv": "locus.data.csv_source",
}

log = logging.getLogger(__name__)


def add_arguments(p):
    p.add_argument("source", choices=sorted(SOURCES), help="which adapter to run")
    p.add_argument("--out", required=True, help="output data set directory")
    p.add_argument("--params", default="{}", help="adapter parameters as a JSON object")
    p.add_argument("--duplicates", default="last", choices=["last", "max", "mean", "error"],
                   help="policy for duplicate (prompt, model) scores (default: last, as the authors)")


def adapter(source: str):
    if source not in SOURCES:
        raise ConfigError(f"unknown data source {source!r}; known: {', '.join(sorted(SOURCES))}")
    return importlib.import_module(SOURCES[source])


def parse_params(text: str, what: str) -> dict:
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{what}: --params is not valid JSON ({exc})") from exc
    if not isinstance(params, dict):
        raise ConfigError(f"{what}: --params must be a JSON object, got {type(params).__name__}")
    return params


def run(args) -> int:
    from locus.data.canonical import write_dataset

    module = adapter(args.source)
    params = parse_params(args.params, f"data {args.source}")
    unknown = sorted(set(params) - set(module.DEFAULTS))
    if unknown:
        raise ConfigError(f"data source {args.source!r}: unknown parameter(s) {unknown}; known: {sorted(module.DEFAULTS)}")
    queries, models, scores = module.build({**module.DEFAULTS, **params})
    data = write_dataset(args.out, queries, models, scores, duplicates=args.duplicates)
    log.info("wrote %s: %d queries, %d models, %d scores", args.out, len(data.queries), len(data.models), len(data.scores))
    return 0
