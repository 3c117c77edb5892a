"""The claims ledger: the paper's claims, each with a verdict computed from the DAG's output files.

One :class:`Claim` per claim of the paper: its words and value (typed once, here, from the paper), the files that
test it, and a judge — a pure function of those files that gives our statistic with its interval, a verdict
(:data:`locus.constants.CLAIM_VERDICTS`) and the reason. The rule that decides is written in the row, so a
reader can check it. Verdicts test the claim's qualitative form on any pool; the paper's numbers are shown beside
ours as context, since they were measured on another pool unless the pool is the paper's (EmbedLLM).

Every comparison reads the intervals the tables already carry (a paired bootstrap over test queries). With one
seed they cover test-query noise only; the reason says so, and `config/seed-bands.yaml` (three seeds) decides.
With several seeds the tables also compare each seed alone (``seed_diffs_pct``, ``seed_ci_pct``), and the method
comparisons judge every seed by the same rule (:func:`by_seed`): a statement whose verdict differs between seeds
is inconclusive, the reason naming each seed's (:func:`combine_seed_verdicts`), and ``ours`` gives the range of
the seeds' own differences beside the pooled one; the verdict on the means over seeds stands only where every seed
gives it too. With two seeds the reason still points to `config/seed-bands.yaml`. A near-constant router is judged
seed by seed as well: the tables give each seed's top-model share (``seed_top_share_pct``), and each seed's verdict
uses its own seed's flag (:func:`near_constant_of`; tables without the column: the pooled flag for every seed).
Figures without such intervals get one from their own draws (over held-out models, over models, over re-embedding
draws), named in the reason; a statistic with none (portfolios) is judged with a margin. The figure claims are
judged on each seed of the runs behind them (``Claim.seeds`` names the config section: ``geometry`` for
correlation, neighbours, fallback, families, portfolios, hypothetical models, re-embedding and convergence;
``onboarding``; ``regeneration``): ``SECTION.seed`` and ``SECTION.extra_seeds``, whose outputs lie at
:func:`seed_path` (:func:`judge_over_seeds`), a verdict that differs between seeds inconclusive; with one seed the
reason says so and points to `config/seed-bands.yaml`.

The pool's plan (:data:`PLAN`, written by the workflow) is read once: a claim reading an output the plan skipped
is untestable with the plan's reason, and sizes the plan fitted to the pool are noted on the claims they shape.

One module a concern, each importing only those above it in this list:

- ``rules``: :class:`Claim`, :class:`Outcome` and the shared judging rules (:func:`judge_ahead`,
  :func:`judge_comparable`, :func:`by_seed`, :func:`combine_seed_verdicts`, :func:`wilson`, ...);
- the judges by the paper's topic: ``routing`` (K-Means, the ablations, sample efficiency, embedding time),
  ``geometry`` (distance correlation, neighbours, fallback, families, portfolios, hypothetical models),
  ``stability`` (re-embedding, regeneration, convergence) and ``onboarding``;
- ``registry``: :data:`CLAIMS`, the paper's claims in its order, and :data:`FILES`;
- ``pool_plan``: :data:`PLAN` and how a claim is judged under it (:func:`judged`);
- ``writer``: :func:`ledger` and ``claims.{csv,md,tex}`` (:func:`write`).
"""

from __future__ import annotations

from locus.experiments.claims.geometry import (
    judge_correlation,
    judge_fallback,
    judge_families,
    judge_hypothetical,
    judge_neighbour_proxies,
    judge_portfolio_budget,
    judge_portfolio_count,
)
from locus.experiments.claims.onboarding import (
    judge_onboarding_k,
    judge_onboarding_partial,
)
from locus.experiments.claims.pool_plan import (
    ADAPTS,
    GEOMETRY_FILES,
    PLAN,
    adaptation_note,
    judged,
    plan,
    skipped_reason,
)
from locus.experiments.claims.registry import (
    ABLATION_RULE,
    AHEAD_RULE,
    ALL_METHODS,
    CLAIMS,
    COMPARABLE_RULE,
    EMBEDDERS,
    FILES,
    KMEANS_RULE,
    SEED_RULE,
    SEEDED_FILES,
)
from locus.experiments.claims.routing import (
    judge_dim_ablation,
    judge_encoder_ablation,
    judge_kmeans_strong,
    judge_sample_efficiency,
    judge_time_complexity,
)
from locus.experiments.claims.rules import (
    EQUIVALENCE_PP,
    MIN_SEEDS,
    ONE_GEOMETRY_SEED,
    ONE_SEED,
    SEED_SECTIONS,
    STRONG_CORRELATION,
    TWO_GEOMETRY_SEEDS,
    TWO_SEEDS,
    Cell,
    Claim,
    Outcome,
    SeedSource,
    by_seed,
    combine_seed_verdicts,
    comparison_cells,
    judge_ahead,
    judge_comparable,
    judge_over_seeds,
    near_constant_of,
    one_seed_note,
    seed_path,
    seeds_note,
    two_seeds_note,
    wilson,
)
from locus.experiments.claims.stability import (
    judge_overlap_convergence,
    judge_overlap_stability,
    judge_regeneration,
    judge_saturation,
    judge_size_convergence,
)
from locus.experiments.claims.writer import (
    COLUMNS,
    latex,
    ledger,
    markdown,
    write,
)

__all__ = [
    # rules
    "EQUIVALENCE_PP",
    "MIN_SEEDS",
    "ONE_GEOMETRY_SEED",
    "ONE_SEED",
    "SEED_SECTIONS",
    "STRONG_CORRELATION",
    "TWO_GEOMETRY_SEEDS",
    "TWO_SEEDS",
    "Cell",
    "Claim",
    "Outcome",
    "SeedSource",
    "by_seed",
    "combine_seed_verdicts",
    "comparison_cells",
    "judge_ahead",
    "judge_comparable",
    "judge_over_seeds",
    "one_seed_note",
    "two_seeds_note",
    "near_constant_of",
    "seed_path",
    "seeds_note",
    "wilson",
    # routing
    "judge_dim_ablation",
    "judge_encoder_ablation",
    "judge_kmeans_strong",
    "judge_sample_efficiency",
    "judge_time_complexity",
    # geometry
    "judge_correlation",
    "judge_fallback",
    "judge_families",
    "judge_hypothetical",
    "judge_neighbour_proxies",
    "judge_portfolio_budget",
    "judge_portfolio_count",
    # stability
    "judge_overlap_convergence",
    "judge_overlap_stability",
    "judge_regeneration",
    "judge_saturation",
    "judge_size_convergence",
    # onboarding
    "judge_onboarding_k",
    "judge_onboarding_partial",
    # registry
    "ABLATION_RULE",
    "AHEAD_RULE",
    "ALL_METHODS",
    "CLAIMS",
    "COMPARABLE_RULE",
    "EMBEDDERS",
    "FILES",
    "KMEANS_RULE",
    "SEED_RULE",
    "SEEDED_FILES",
    # pool_plan
    "ADAPTS",
    "GEOMETRY_FILES",
    "PLAN",
    "adaptation_note",
    "judged",
    "plan",
    "skipped_reason",
    # writer
    "COLUMNS",
    "latex",
    "ledger",
    "markdown",
    "write",
]
