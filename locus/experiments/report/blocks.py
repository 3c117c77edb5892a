"""The registry of blocks (:data:`BLOCKS`: name -> the function that renders it, and what it shows) and the pages:
render one block, rewrite every block of a page, name the stale ones."""

from __future__ import annotations

import re
from collections.abc import Callable

from locus.errors import ConfigError
from locus.experiments.report.claims import block_claims, block_claims_pools
from locus.experiments.report.decisions import block_aiq, block_calibration, block_selective
from locus.experiments.report.efficiency import block_precision_effect, block_sample_efficiency, block_time_complexity
from locus.experiments.report.geometry import (
    block_distance_correlation,
    block_evalset_robustness,
    block_fallback,
    block_families,
    block_hypothetical,
    block_neighbours,
    block_portfolio,
    block_regeneration,
)
from locus.experiments.report.onboarding import block_active_onboarding, block_onboarding, block_onboarding_rivals
from locus.experiments.report.routing import (
    block_correctness_by_dataset,
    block_data,
    block_dim_ablation,
    block_encoder_ablation,
    block_routing,
    block_routing_by_dataset,
)
from locus.experiments.report.source import Source

MARKER = re.compile(r"^<!-- locus-report:([A-Za-z0-9_-]+) -->[ \t]*$", re.MULTILINE)
END = "<!-- /locus-report:{name} -->"
BLOCKS: dict[str, tuple[Callable[[Source], list[str]], str]] = {
    "data": (
        block_data,
        "the data set: sizes, oracle / best single / random per split",
    ),
    "routing": (
        block_routing,
        "tables/routing.csv: routing, expected routing and correctness accuracy",
    ),
    "routing-by-dataset": (
        block_routing_by_dataset,
        "tables/routing_by_dataset.csv, overall column",
    ),
    "correctness-by-dataset": (
        block_correctness_by_dataset,
        "tables/correctness_by_dataset.csv, overall column",
    ),
    "precision-effect": (
        block_precision_effect,
        "tables/precision_effect.csv: fp32 vs bf16 scoring",
    ),
    "time-complexity": (
        block_time_complexity,
        "figures/time_complexity.csv: measured times",
    ),
    "neighbours": (
        block_neighbours,
        "figures/nearest_neighbor_proxies.csv: agreement with the nearest model",
    ),
    "portfolio": (
        block_portfolio,
        "figures/model_portfolio.csv: smallest portfolio matching the pool",
    ),
    "evalset-robustness": (
        block_evalset_robustness,
        "figures/perf_vs_size_and_overlap.csv: re-embedded models",
    ),
    "onboarding": (
        block_onboarding,
        "figures/sample_eff_ood_test.csv: held-out models embedded from k evaluations",
    ),
    "calibration": (
        block_calibration,
        "tables/calibration.csv: raw vs calibrated probabilities on test",
    ),
    "selective-routing": (
        block_selective,
        "tables/selective_routing.csv: certified thresholds and the guarantee",
    ),
    "aiq": (
        block_aiq,
        "tables/aiq.csv: area under the cost-quality frontier",
    ),
    "active-onboarding": (
        block_active_onboarding,
        "figures/active_onboarding.csv, tables/active_onboarding.csv: which queries to evaluate a new model on",
    ),
    "regeneration": (
        block_regeneration,
        "figures/relearn_embedllm_heatmap_test_disagreement.csv: re-learned",
    ),
    "distance-correlation": (
        block_distance_correlation,
        "tables/distance_correlation.csv: geometry vs behaviour",
    ),
    "dim-ablation": (
        block_dim_ablation,
        "tables/dim_ablation_{routing,correctness}.csv: LOCUS's dimension",
    ),
    "encoder-ablation": (
        block_encoder_ablation,
        "tables/encoder_ablation_{routing,correctness}.csv: encoders",
    ),
    "sample-efficiency": (
        block_sample_efficiency,
        "figures/train_sample_eff.csv: curves and factors",
    ),
    "hypothetical": (
        block_hypothetical,
        "figures/hypothetical_model_embedding.csv: recall@k by set size",
    ),
    "families": (
        block_families,
        "figures/models_family_clustering.json: tagged families in the embedding",
    ),
    "fallback": (
        block_fallback,
        "figures/fallback_routing.csv: accuracy kept by the nearest neighbour",
    ),
    "claims": (
        block_claims,
        "tables/claims.csv: the paper's claims with their verdicts",
    ),
    "onboarding-rivals": (
        block_onboarding_rivals,
        "tables/onboarding_rivals.csv: LOCUS's onboarding against training-free rivals, by k",
    ),
    "claims-pools": (
        block_claims_pools,
        "tables/claims.csv of this run and of each --also run: verdicts side by side",
    ),
}


def render_block(name: str, src: Source) -> str:
    """The generated text of block `name` (no markers), ending in a newline."""
    if name not in BLOCKS:
        raise ConfigError(f"unknown report block {name!r}; known blocks: {', '.join(BLOCKS)}")
    return "\n".join(BLOCKS[name][0](src)).rstrip("\n") + "\n"


def blocks_of(text: str, where: str = "the page") -> list[tuple[str, int, int]]:
    """(name, start, end) of the generated text of each marker pair of `text` (start/end exclude the marker
    lines); a marker without its closing line, a nested or an unknown name is a :class:`ConfigError`."""
    found = []
    pos = 0
    while True:
        m = MARKER.search(text, pos)
        if m is None:
            return found
        name = m.group(1)
        if name not in BLOCKS:
            raise ConfigError(
                f"{where}: unknown report block {name!r} (line {text.count(chr(10), 0, m.start()) + 1}); "
                f"known blocks: {', '.join(BLOCKS)}"
            )
        start = m.end() + 1 if text[m.end() : m.end() + 1] == "\n" else m.end()
        end = text.find(END.format(name=name), start)
        nxt = MARKER.search(text, start)
        if end < 0 or (nxt is not None and nxt.start() < end):
            raise ConfigError(
                f"{where}: the block {name!r} opened on line {text.count(chr(10), 0, m.start()) + 1} "
                f"has no closing line {END.format(name=name)} before the next block; add it"
            )
        found.append((name, start, end))
        pos = end + len(END.format(name=name))


def update_text(text: str, src: Source, where: str = "the page") -> str:
    """`text` with the generated part of every block replaced; the rest is kept as it is."""
    out, last = [], 0
    cache: dict[str, str] = {}
    for name, start, end in blocks_of(text, where):
        if name not in cache:
            cache[name] = render_block(name, src)
        out += [text[last:start], cache[name]]
        last = end
    out.append(text[last:])
    return "".join(out)


def stale_blocks(text: str, src: Source, where: str = "the page") -> list[str]:
    """The names of the blocks of `text` whose generated part differs from what :func:`update_text` writes."""
    stale = []
    for name, start, end in blocks_of(text, where):
        if text[start:end] != render_block(name, src) and name not in stale:
            stale.append(name)
    return stale
