"""`locus data SOURCE --out DIR`: build a canonical data set directory from one source adapter.

The adapter returns raw frames; the two data-set options are applied once, when the data set is written
(:func:`locus.data.canonical.write_dataset`), whatever the source:

- ``duplicates`` (last / max / mean / error): several scores for one (prompt, model);
- ``split_overlap`` (error / keep_test / keep_train / keep_all): one prompt text in several splits.

Each is taken from, in this order: the data set's ``--params`` (``{"duplicates": "error"}``), the
command-line flag (``--duplicates`` / ``--split-overlap``), the source's own default
(``DATASET_DEFAULTS`` of the adapter module, e.g. ``keep_train`` for llmrouter), the canonical default
(``last`` / ``error``). An adapter that needs an option while reading (embedllm: a prompt_id in several
split files) lists it in its ``DEFAULTS`` and receives the value chosen here.

Sources in :data:`locus.data.truth.SOURCES_WITH_TRUTH` (synthetic) also return the generator's true
P(correct) of every scored pair (``build_with_truth``); it is written as ``truth.parquet`` in the same
file set. Other sources write none (and a truth file of an earlier build in ``--out`` is removed).
"""

from __future__ import annotations

import importlib
import logging

from locus.cli import output_dir
from locus.constants import DEFAULT_DUPLICATE_POLICY, DEFAULT_SPLIT_OVERLAP, DUPLICATE_POLICIES, SPLIT_OVERLAP_POLICIES
from locus.errors import ConfigError
from locus.params import parse_params

NAME = "data"
HELP = "build a canonical data set (queries/models/scores Parquet + dataset.json) from a source adapter"

# source name -> adapter module; each module has DEFAULTS (dict) and build(params) -> (queries, models, scores);
# those of locus.data.truth.SOURCES_WITH_TRUTH also build_with_truth(params) -> (..., truth)
SOURCES = {
    "synthetic": "locus.data.synthetic",
    "embedllm": "locus.data.embedllm",
    "llmrouter": "locus.data.llmrouter",
    "csv": "locus.data.csv_source",
}
# the data-set options and their canonical defaults (as locus.data.canonical.DATASET_OPTIONS)
OPTION_CHOICES = {"duplicates": DUPLICATE_POLICIES, "split_overlap": SPLIT_OVERLAP_POLICIES}
OPTION_DEFAULTS = {"duplicates": DEFAULT_DUPLICATE_POLICY, "split_overlap": DEFAULT_SPLIT_OVERLAP}

log = logging.getLogger(__name__)


def add_arguments(p):
    p.add_argument("source", choices=sorted(SOURCES), help="which adapter to run")
    p.add_argument("--out", required=True, type=output_dir(), help="output data set directory")
    p.add_argument(
        "--params",
        default="{}",
        help="adapter parameters as a JSON object (may also hold the data-set options duplicates and split_overlap)",
    )
    p.add_argument(
        "--duplicates",
        default=None,
        choices=OPTION_CHOICES["duplicates"],
        help="policy for several scores of one (prompt, model) (default: last, as the authors)",
    )
    p.add_argument(
        "--split-overlap",
        dest="split_overlap",
        default=None,
        choices=OPTION_CHOICES["split_overlap"],
        help="one prompt text in several splits: error (the default; llmrouter: keep_train), "
        "keep_test (drop its train/val copies), keep_train (drop its val/test copies), keep_all",
    )


def adapter(source: str):
    if source not in SOURCES:
        raise ConfigError(f"unknown data source {source!r}; known: {', '.join(sorted(SOURCES))}")
    return importlib.import_module(SOURCES[source])


def dataset_options(module, params: dict, flags: dict, what: str) -> dict:
    """The data-set options for one build (see the module docstring for the order); pops them from `params`."""
    from locus.data.canonical import check_option

    source_defaults = getattr(module, "DATASET_DEFAULTS", {})
    options = {}
    for name, default in OPTION_DEFAULTS.items():
        if name in params:
            value = params.pop(name)
        elif flags.get(name) is not None:
            value = flags[name]
        else:
            value = source_defaults.get(name, default)
        options[name] = check_option(name, value, what)
    return options


def run(args) -> int:
    from locus.data.canonical import write_dataset
    from locus.data.truth import SOURCES_WITH_TRUTH

    module = adapter(args.source)
    what = f"data source {args.source!r}"
    params = parse_params(args.params, what)
    options = dataset_options(module, params, vars(args), what)
    unknown = sorted(set(params) - set(module.DEFAULTS))
    if unknown:
        renamed = getattr(module, "RENAMED_PARAMS", {})
        hint = "".join(f"; {k} is now {renamed[k]}" for k in unknown if k in renamed)
        raise ConfigError(
            f"{what}: unknown parameter(s) {unknown}; known: {sorted(module.DEFAULTS)} "
            f"and the data-set options {sorted(OPTION_DEFAULTS)}{hint}"
        )
    params.update({k: v for k, v in options.items() if k in module.DEFAULTS})
    if args.source in SOURCES_WITH_TRUTH:  # the generator's true P(correct), written beside the scores
        queries, models, scores, truth = module.build_with_truth({**module.DEFAULTS, **params})
    else:
        (queries, models, scores), truth = module.build({**module.DEFAULTS, **params}), None
    data = write_dataset(args.out, queries, models, scores, **options, truth=truth)
    log.info(
        "wrote %s: %d queries, %d models, %d scores%s (duplicates: %s, split_overlap: %s)",
        args.out,
        len(data.queries),
        len(data.models),
        len(data.scores),
        " + truth" if truth is not None else "",
        options["duplicates"],
        options["split_overlap"],
    )
    return 0
