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

import logging

from locus.cli import add_out_argument, output_dir
from locus.constants import DUPLICATE_POLICIES, SPLIT_OVERLAP_POLICIES
from locus.params import OPTION_DEFAULTS, SOURCES, adapter, parse_params, source_params

NAME = "data"
HELP = "build a canonical data set (queries/models/scores Parquet + dataset.json) from a source adapter"

# SOURCES (source name -> adapter module) and OPTION_DEFAULTS live in locus.params, shared with the
# workflow's config check
OPTION_CHOICES = {"duplicates": DUPLICATE_POLICIES, "split_overlap": SPLIT_OVERLAP_POLICIES}
__all__ = ["SOURCES", "OPTION_DEFAULTS", "OPTION_CHOICES", "adapter"]

log = logging.getLogger(__name__)


def add_arguments(p):
    p.add_argument("source", choices=sorted(SOURCES), help="which adapter to run")
    add_out_argument(p, output_dir(), "output data set directory")
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


def run(args) -> int:
    from locus.data.canonical import write_dataset
    from locus.data.truth import SOURCES_WITH_TRUTH

    module = adapter(args.source)
    params, options = source_params(args.source, parse_params(args.params, f"data source {args.source!r}"), vars(args))
    if args.source in SOURCES_WITH_TRUTH:  # the generator's true P(correct), written beside the scores
        queries, models, scores, truth = module.build_with_truth(params)
    else:
        (queries, models, scores), truth = module.build(params), None
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
