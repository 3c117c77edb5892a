# locus: raw evaluations -> canonical data -> query encodings -> training runs -> tables and figures.
# Rules live in workflow/rules/*.smk and only call `python -m locus ...`; all logic is in the package.
from snakemake.utils import min_version

min_version("9.0")


configfile: workflow.source_path("config/config.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/encode.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/ablation.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/geometry.smk"
include: "workflow/rules/portfolio.smk"
include: "workflow/rules/views.smk"
include: "workflow/rules/onboarding.smk"
include: "workflow/rules/active_onboarding.smk"
include: "workflow/rules/regeneration.smk"
include: "workflow/rules/timing.smk"
include: "workflow/rules/calibration.smk"
include: "workflow/rules/decisions.smk"
include: "workflow/rules/claims.smk"


rule all:
    default_target: True
    input:
        # every output the pool can carry (rule_helpers.py: `planned` drops what the pool's plan skips)
        planned(
            [
                data_summary(DATASET),
                encodings(DATASET, ENCODER),
                "results/tables/routing.tex",
                "results/tables/routing_by_dataset.tex",
                "results/tables/correctness_by_dataset.tex",
                "results/figures/train_sample_eff.pdf",
                # ablation tables of LOCUS: embedding dimension and query encoder (ablation.smk)
                ABLATION_TARGETS,
                # embedding geometry, portfolio selection and views (geometry.smk, portfolio.smk, views.smk)
                GEOMETRY_TARGETS,
                PORTFOLIO_TARGETS,
                VIEWS_TARGETS,
                # new-model onboarding (onboarding.smk)
                "results/figures/sample_eff_ood_test.pdf",
                # LOCUS's onboarding against training-free rivals (onboarding.smk)
                "results/tables/onboarding_rivals.tex",
                # active onboarding: which queries to evaluate a new model on (active_onboarding.smk)
                "results/figures/active_onboarding.pdf",
                "results/tables/active_onboarding.tex",
                # EmbedLLM embeddings re-learned with G_psi frozen, LOCUS beside them (regeneration.smk)
                REG_TARGETS,
                # time complexity (timing.smk)
                "results/figures/time_complexity.pdf",
                "results/tables/precision_effect.tex",
                # calibrated correctness probabilities, raw vs calibrated on test (calibration.smk)
                "results/tables/calibration.tex",
                "results/figures/reliability.pdf",
                # routing decisions from calibrated probabilities: selective routing and cost-quality (decisions.smk)
                DECISIONS_TARGETS,
                # the paper's claims with verdicts computed from the outputs above (claims.smk)
                "results/tables/claims.tex",
            ]
        ),
