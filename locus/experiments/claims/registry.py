"""The registry: one :class:`~locus.experiments.claims.rules.Claim` per claim of the paper, in the paper's order, with
its words and value (typed once, here), the files that test it, the rule written in the row and its judge; and
:data:`FILES`, what the workflow's ``claims`` rule reads."""

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
from locus.experiments.claims.onboarding import judge_onboarding_k, judge_onboarding_partial
from locus.experiments.claims.routing import (
    judge_dim_ablation,
    judge_encoder_ablation,
    judge_kmeans_strong,
    judge_sample_efficiency,
    judge_time_complexity,
)
from locus.experiments.claims.rules import (
    EQUIVALENCE_PP,
    SEED_SECTIONS,
    STRONG_CORRELATION,
    Claim,
    _points,
    _table_claim,
    judge_ahead,
    judge_comparable,
)
from locus.experiments.claims.stability import (
    judge_overlap_convergence,
    judge_overlap_stability,
    judge_regeneration,
    judge_saturation,
    judge_size_convergence,
)

EMBEDDERS = ("embedllm", "irt_net")
ALL_METHODS = ("embedllm", "embedllm_plus", "irt_net", "knn_router", "kmeans_router")
SEED_RULE = (
    "; with several seeds, each seed is judged alone by the same rule (its own runs, its own paired-bootstrap "
    "intervals): a verdict that differs between seeds is inconclusive, and the verdict on the means over seeds "
    "stands only where every seed gives it too; with fewer than 3 seeds, config/seed-bands.yaml decides"
)
AHEAD_RULE = (
    "holds when LOCUS minus each baseline has its 95% paired-bootstrap interval above 0 at every training "
    "size; refuted when one lies below 0; inconclusive otherwise, or where LOCUS's router is near-constant "
    "(one model takes ≥ 90% of queries)" + SEED_RULE
)
_COMPARABLE = (
    f"holds when every difference's 95% interval lies within ±{_points(EQUIVALENCE_PP)}; refuted when "
    "one lies wholly outside; inconclusive otherwise"
)
COMPARABLE_RULE = _COMPARABLE + SEED_RULE
ABLATION_RULE = _COMPARABLE + " (routing inconclusive for a near-constant router)" + SEED_RULE
KMEANS_RULE = (
    "holds when at some size K-Means is the best router or not significantly below the best (not near-constant); "
    "refuted when it is significantly below LOCUS at every size; inconclusive otherwise" + SEED_RULE
)
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "routing-order",
        "LOCUS routes more accurately than EmbedLLM and IRT-Net",
        "tab:concise_routing_correctness",
        "LOCUS − baseline routing accuracy (points), Overall",
        "+3.1/+3.5/+5.1 (EmbedLLM), +2.3/+2.8/+1.3 (IRT-Net) at n = 256/512/1024",
        ("tables/routing.csv",),
        AHEAD_RULE,
        _table_claim("tables/routing.csv", "routing_acc", EMBEDDERS, judge_ahead),
    ),
    Claim(
        "correctness-comparable",
        "All approaches perform comparably on correctness prediction",
        "tab:concise_routing_correctness",
        "LOCUS − baseline correctness accuracy (points), Overall",
        "within 1 point (LOCUS 68.31/68.33/70.03; EmbedLLM 67.33/68.12/69.47; IRT-Net 67.38/69.07/70.12)",
        ("tables/routing.csv",),
        COMPARABLE_RULE,
        _table_claim("tables/routing.csv", "correctness_acc", EMBEDDERS, judge_comparable),
    ),
    Claim(
        "routing-best-embedding",
        "LOCUS has the highest routing accuracy of the model-embedding methods",
        "tab:routing_acc_by_dataset_full",
        "LOCUS − baseline routing accuracy (points), Overall",
        "ahead of EmbedLLM, EmbedLLM+ and IRT-Net at every n",
        ("tables/routing_by_dataset.csv",),
        AHEAD_RULE,
        _table_claim(
            "tables/routing_by_dataset.csv", "routing_acc", ("embedllm", "embedllm_plus", "irt_net"), judge_ahead
        ),
    ),
    Claim(
        "routing-beats-knn",
        "LOCUS beats the kNN router",
        "tab:routing_acc_by_dataset_full",
        "LOCUS − kNN routing accuracy (points), Overall",
        "+1.4/+1.6/+1.8 (kNN 60.50/61.37/62.90)",
        ("tables/routing_by_dataset.csv",),
        AHEAD_RULE,
        _table_claim("tables/routing_by_dataset.csv", "routing_acc", ("knn_router",), judge_ahead),
    ),
    Claim(
        "kmeans-strong",
        "K-Means is a strong routing baseline at some training sizes",
        "tab:routing_acc_by_dataset_full",
        "LOCUS − K-Means routing accuracy (points), Overall",
        "K-Means 64.47/66.20 above LOCUS 62.97/64.70 at n = 512/1024",
        ("tables/routing_by_dataset.csv",),
        KMEANS_RULE,
        judge_kmeans_strong,
    ),
    Claim(
        "correctness-similar-all",
        "All approaches perform similarly on correctness prediction",
        "tab:correctness_pred_by_dataset_full",
        "LOCUS − baseline correctness accuracy (points), Overall",
        "similar overall (the paper's kNN at n = 256: 60.60 against LOCUS 68.31)",
        ("tables/correctness_by_dataset.csv",),
        COMPARABLE_RULE,
        _table_claim("tables/correctness_by_dataset.csv", "correctness_acc", ALL_METHODS, judge_comparable),
    ),
    Claim(
        "sample-efficiency",
        "Baselines need 2.3–4.8× LOCUS's training samples",
        "fig:train_sample_eff",
        "training samples a baseline needs for LOCUS's accuracy at the reference size, as a multiple (95% interval)",
        "2.3–4.8×",
        ("figures/train_sample_eff.json",),
        "holds when every baseline's factor is exact with an interval above 1 that meets [2.3, 4.8]; refuted when "
        "an interval lies below 2.3; inconclusive when a factor is only a bound or has no interval",
        judge_sample_efficiency,
    ),
    Claim(
        "onboarding-128",
        "About 128 evaluations suffice to embed an unseen model",
        "fig:sample_eff_ood_test",
        "held-out models' correctness at the largest k minus at k = 128 (points, t interval over held-out models)",
        "≈128 evaluations suffice (k = 16…1024, 16 held-out models)",
        ("figures/sample_eff_ood_test.csv",),
        "holds when, for every encoder in the figure, the shortfall of k = 128 against the largest k has its "
        "interval's upper end within 1 point (the paper gives no margin; the ledger's 1 point); refuted when one "
        "interval lies wholly above 1 point; inconclusive otherwise",
        judge_onboarding_k,
        seeds="onboarding",
    ),
    Claim(
        "onboarding-partial",
        "An encoder trained on a subset of the models embeds unseen models as well as one trained on all (< 1% gap)",
        "fig:sample_eff_ood_test",
        "held-out models' correctness, all-models encoder minus partial encoder, per k (points, t interval over "
        "held-out models)",
        "negligible (< 1%) gap",
        ("figures/sample_eff_ood_test.csv",),
        "holds when every k's interval lies within ±1 point (the paper's 1%, read as points); refuted when one "
        "lies wholly outside; inconclusive otherwise",
        judge_onboarding_partial,
        seeds="onboarding",
    ),
    Claim(
        "distance-disagreement",
        "Embedding distance tracks disagreement in correctness (strong positive relation)",
        "tab:performance_distance_correlation",
        "LOCUS: correlation of pairwise distance and disagreement (95% CI)",
        "Pearson .845/.887, Spearman .886/.876, Kendall .714/.702 (cosine/Euclidean)",
        ("tables/distance_correlation.csv",),
        f"holds when all six intervals lie at or above {STRONG_CORRELATION}; refuted when one lies below it; "
        "inconclusive otherwise",
        judge_correlation,
        seeds="geometry",
    ),
    Claim(
        "neighbour-proxies",
        "A model's nearest neighbour agrees with it on correctness (79%), less so further away",
        "fig:nearest_neighbor_proxies",
        "LOCUS: agreement of the k-th nearest neighbour",
        "79% at k = 1",
        ("figures/nearest_neighbor_proxies.csv",),
        "holds when the k = 1 agreement's interval (±1.96 SE over models) lies above a random model's and agreement "
        "falls from k = 1 to the largest k; refuted when k = 1 is at or below random; inconclusive otherwise",
        judge_neighbour_proxies,
        seeds="geometry",
    ),
    Claim(
        "families",
        "Hierarchical clustering of the embeddings separates model families (math, code)",
        "fig:models_family_heirarchical_clustering",
        "per highlighted family: mean distance within / to the other models, with a permutation p",
        "coherent math and code groupings",
        ("figures/models_family_clustering.json",),
        "holds when every highlighted family (≥ 2 models) has ratio < 1 with permutation p below 0.05 divided by "
        "the number of families; refuted when a family's ratio is ≥ 1; inconclusive otherwise",
        judge_families,
        seeds="geometry",
    ),
    Claim(
        "portfolio-count",
        "A 15-model portfolio chosen in the embedding space captures the full pool's routing accuracy",
        "fig:model_portfolio_joint",
        "smallest k-center / k-medoids portfolio reaching the full pool's routing accuracy (no interval)",
        "15 of 112 models (15–20 in the appendix)",
        ("figures/model_portfolio.json",),
        "holds when k-center or k-medoids reaches the full pool's accuracy with at most 20/112 of the pool; "
        "refuted when neither comes within 1 point with that many; inconclusive otherwise, or when the best single "
        "model alone routes as well as the pool",
        judge_portfolio_count,
        seeds="geometry",
    ),
    Claim(
        "portfolio-budget",
        "A coverage-greedy portfolio of ≈150B parameters comes very close to the full pool's routing accuracy",
        "fig:model_portfolio_joint",
        "smallest coverage-greedy budget within 1 point of the full pool, as a share of its parameters (no interval)",
        "≈150B of 1930B parameters (8%)",
        ("figures/model_portfolio.json",),
        "holds when within 1 point at ≤ 8% of the pool's parameters; refuted above 16% (twice the paper's) or "
        "never; inconclusive in between, or when the best single model alone routes as well as the pool",
        judge_portfolio_budget,
        seeds="geometry",
    ),
    Claim(
        "saturation",
        "Embeddings from about 128–256 evaluations match the accuracy of larger sets",
        "fig:perf_vs_size_and_overlap",
        "accuracy with every model re-embedded from n evaluations (%)",
        "saturates with 128–256 evaluations",
        ("figures/perf_vs_size_and_overlap.csv",),
        "holds when both accuracies come within 1 point of the run's own embeddings by n = 256; refuted when the "
        "best at n ≤ 256 is more than 2 points short; inconclusive otherwise or for a near-constant router",
        judge_saturation,
        seeds="geometry",
    ),
    Claim(
        "overlap-stability",
        "Accuracy is stable across overlap fractions of the evaluation set",
        "fig:perf_vs_size_and_overlap",
        "range of accuracy over overlap fractions (points)",
        "stable",
        ("figures/perf_vs_size_and_overlap.csv",),
        "holds when both accuracies vary by at most 1 point over the overlaps; refuted above 2 points; inconclusive "
        "otherwise or for a near-constant router",
        judge_overlap_stability,
        seeds="geometry",
    ),
    Claim(
        "fallback",
        "Falling back to the nearest neighbour keeps up to 85% of routing accuracy",
        "fig:fallback_routing",
        "LOCUS: routing accuracy kept when each chosen model is replaced by its nearest "
        "neighbour (Wilson 95% interval)",
        "up to 85%",
        ("figures/fallback_routing.csv",),
        "holds when the interval's lower end is at least 85%, above a random other model and falling with k; "
        "refuted when its upper end is below 85% or no better than random; inconclusive otherwise or for a "
        "near-constant router",
        judge_fallback,
        seeds="geometry",
    ),
    Claim(
        "regeneration",
        "EmbedLLM's re-learned embeddings disagree on test correctness (up to 8.1%); LOCUS's do not",
        "fig:relearn_embedllm_heatmap_test_disagreement",
        "test disagreement of a re-learned embedding with the original, same training data",
        "EmbedLLM up to 8.1%",
        ("figures/relearn_embedllm_heatmap_test_disagreement.csv",),
        "holds when EmbedLLM's largest is at least 1% and LOCUS's at most 0.1%; refuted when EmbedLLM is below 1% or "
        "LOCUS no more stable; inconclusive otherwise",
        judge_regeneration,
        seeds="regeneration",
    ),
    Claim(
        "time-linear",
        "LOCUS's embedding time is linear in the evaluations per model",
        "fig:time_complexity_locus",
        "log-log slope of the float32 embedding time against n (n ≥ 256)",
        "linear (slope 1)",
        ("figures/time_complexity.csv",),
        "holds when every pool size's slope lies in [0.8, 1.25]; refuted at 1.6 or more; inconclusive otherwise",
        judge_time_complexity,
    ),
    Claim(
        "encoder-ablation",
        "Routing and correctness accuracy are comparable across sentence encoders",
        "app:encoder_ablation",
        "other encoder − the configured one (points), Overall, with 95% interval",
        "comparable (mpnet 61.90, MiniLM 61.60 routing at n = 256)",
        ("tables/encoder_ablation_routing.csv", "tables/encoder_ablation_correctness.csv"),
        ABLATION_RULE,
        judge_encoder_ablation,
    ),
    Claim(
        "dim-ablation",
        "Routing and correctness accuracy change little with the embedding dimension",
        "app:embedding_dim_ablation",
        "other dimension − the configured one (points), Overall, with 95% interval",
        "routing 60.97–62.13, correctness 67.75–68.42 over d = 16…512 at n = 256 (128/256 called best)",
        ("tables/dim_ablation_routing.csv", "tables/dim_ablation_correctness.csv"),
        ABLATION_RULE,
        judge_dim_ablation,
    ),
    Claim(
        "hypothetical-recall",
        "A model made up from a real model's per-benchmark accuracies is embedded near it (recall@10 almost 97%)",
        "fig:hypothetical_model_embedding",
        "recall@10 at the largest evaluation set (Wilson 95% interval over models)",
        "almost 97% at 8,192 queries",
        ("figures/hypothetical_model_embedding.csv",),
        "holds when the interval reaches 97% with its lower end ≥ 90%; refuted when it is no better than chance "
        "(10 / models) or below 97% with ≥ 8,192 queries; inconclusive otherwise",
        judge_hypothetical,
        seeds="geometry",
    ),
    Claim(
        "convergence-overlap",
        "Re-embeddings stay close to the reference embedding compared with other models, closer as the overlap grows",
        "fig:overlap_convergence",
        "‖z − z_ref‖ per overlap α (t interval over draws) against the nearest other model; Spearman ρ over draws",
        "close relative to other models; decays with the overlap",
        ("figures/overlap_convergence.csv",),
        "holds when every α < 1 has its interval below the nearest other model's distance and ρ < 0 with p < 0.05; "
        "refuted when an α's interval lies wholly above that distance or ρ > 0 with p < 0.05; inconclusive otherwise",
        judge_overlap_convergence,
        seeds="geometry",
    ),
    Claim(
        "convergence-size",
        "Re-embeddings from fewer evaluations converge to the reference embedding as the number grows",
        "fig:anchor_size_convergence",
        "‖z − z_ref‖ per subsample size n; Spearman ρ of distance against n over draws",
        "a similar trend (decays with n)",
        ("figures/anchor_size_convergence.csv",),
        "holds when ρ < 0 with p < 0.05 (the whole reference set left out); refuted when ρ > 0 with p < 0.05; "
        "inconclusive otherwise",
        judge_size_convergence,
        seeds="geometry",
    ),
)
FILES = tuple(sorted({f for c in CLAIMS for f in c.files}))  # what the `claims` rule reads, less what the plan skips
# per config section (rules.SEED_SECTIONS), the files of the claims judged on each of its seeds: the workflow
# writes them again for every further seed of `SECTION.extra_seeds` (rules.seed_path), and the `claims` rule reads
# those too
SEEDED_FILES: dict[str, tuple[str, ...]] = {
    section: tuple(sorted({f for c in CLAIMS if c.seeds == section for f in c.files})) for section in SEED_SECTIONS
}
