"""Markdown tables of a finished run, pasted into a documentation page between markers.

A block of a Markdown file is a marker pair; everything between the two lines is generated, everything
outside them is left as written::

    <!-- locus-report:routing -->
    ...
    <!-- /locus-report:routing -->

:func:`render_block` renders one named block (:data:`BLOCKS`) from the CSVs of a results directory
(``tables/*.csv``, ``figures/*.csv``, ``data/{dataset}/summary.md``); :func:`update_text` rewrites every
block of a page; :func:`stale_blocks` names those that differ. Numbers are never typed here: each block
only formats what the workflow wrote.

One module a concern, each importing only those above it in this list:

- ``markdown``: numbers and Markdown tables (:func:`fmt`, :func:`number_of`, :func:`md_table`, ...);
- ``source``: :class:`Source`, the CSV and JSON readers, the provenance line under each block;
- the blocks by topic: ``routing`` (the data set, the routing and correctness tables, the ablations),
  ``efficiency`` (precision, time complexity, sample efficiency), ``geometry`` (neighbours, fallback,
  portfolios, re-embedding, regeneration, distance correlation, hypothetical models, families),
  ``onboarding`` (onboarding, active onboarding, the training-free rivals), ``decisions`` (calibration,
  selective routing, AIQ) and ``claims`` (the claims ledger, of one run or several);
- ``blocks``: the registry :data:`BLOCKS` and the pages (:func:`render_block`, :func:`update_text`,
  :func:`stale_blocks`).
"""

from __future__ import annotations

from locus.experiments.report.blocks import BLOCKS, END, MARKER, blocks_of, render_block, stale_blocks, update_text
from locus.experiments.report.claims import block_claims, block_claims_pools
from locus.experiments.report.decisions import (
    AIQ_COLUMNS,
    CALIBRATION_COLUMNS,
    SELECTIVE_COLUMNS,
    block_aiq,
    block_calibration,
    block_selective,
)
from locus.experiments.report.efficiency import (
    PRECISION_COLUMNS,
    SAMPLE_EFFICIENCY_COLUMNS,
    TIME_COLUMNS,
    block_precision_effect,
    block_sample_efficiency,
    block_time_complexity,
)
from locus.experiments.report.geometry import (
    EVALSET_COLUMNS,
    FALLBACK_COLUMNS,
    HEATMAP_COLUMNS,
    HYPOTHETICAL_COLUMNS,
    PORTFOLIO_COLUMNS,
    PROXY_COLUMNS,
    block_distance_correlation,
    block_evalset_robustness,
    block_fallback,
    block_families,
    block_hypothetical,
    block_neighbours,
    block_portfolio,
    block_regeneration,
)
from locus.experiments.report.markdown import fmt, md_table, number_of, unique
from locus.experiments.report.onboarding import (
    ACTIVE_FIGURE_COLUMNS,
    ACTIVE_TABLE_COLUMNS,
    ONBOARDING_COLUMNS,
    block_active_onboarding,
    block_onboarding,
    block_onboarding_rivals,
)
from locus.experiments.report.routing import (
    ABLATION_HEADINGS,
    METRIC_TITLES,
    OVERALL,
    TABLE_COLUMNS,
    block_correctness_by_dataset,
    block_data,
    block_dim_ablation,
    block_encoder_ablation,
    block_routing,
    block_routing_by_dataset,
    comparison,
    diversity_table,
)
from locus.experiments.report.source import (
    Source,
    columns_table,
    dataset_label,
    dataset_name,
    made_on,
    provenance,
    read_json,
    read_rows,
)

__all__ = [
    # the pages and the registry
    "BLOCKS",
    "END",
    "MARKER",
    "blocks_of",
    "render_block",
    "stale_blocks",
    "update_text",
    # reading, formatting, provenance
    "Source",
    "columns_table",
    "dataset_label",
    "dataset_name",
    "fmt",
    "made_on",
    "md_table",
    "number_of",
    "provenance",
    "read_json",
    "read_rows",
    "unique",
    # the blocks
    "ABLATION_HEADINGS",
    "METRIC_TITLES",
    "OVERALL",
    "block_active_onboarding",
    "block_aiq",
    "block_calibration",
    "block_claims",
    "block_claims_pools",
    "block_correctness_by_dataset",
    "block_data",
    "block_dim_ablation",
    "block_distance_correlation",
    "block_encoder_ablation",
    "block_evalset_robustness",
    "block_fallback",
    "block_families",
    "block_hypothetical",
    "block_neighbours",
    "block_onboarding",
    "block_onboarding_rivals",
    "block_portfolio",
    "block_precision_effect",
    "block_regeneration",
    "block_routing",
    "block_routing_by_dataset",
    "block_sample_efficiency",
    "block_selective",
    "block_time_complexity",
    "comparison",
    "diversity_table",
    # each CSV's columns, from the module that writes it
    "ACTIVE_FIGURE_COLUMNS",
    "ACTIVE_TABLE_COLUMNS",
    "AIQ_COLUMNS",
    "CALIBRATION_COLUMNS",
    "EVALSET_COLUMNS",
    "FALLBACK_COLUMNS",
    "HEATMAP_COLUMNS",
    "HYPOTHETICAL_COLUMNS",
    "ONBOARDING_COLUMNS",
    "PORTFOLIO_COLUMNS",
    "PRECISION_COLUMNS",
    "PROXY_COLUMNS",
    "SAMPLE_EFFICIENCY_COLUMNS",
    "SELECTIVE_COLUMNS",
    "TABLE_COLUMNS",
    "TIME_COLUMNS",
]
