"""The closed vocabularies and shared defaults of the command line, the package and the workflow.

One source for each: the package modules that give these values their meaning import them from
here (``locus.data.canonical``, ``locus.runs``, ``locus.experiments``), the commands use them as
argparse choices and defaults, and ``tests/test_workflow.py`` checks the workflow's schema
against them. No imports, so building the command-line parser (``locus --help``) stays fast.
"""

from __future__ import annotations

# canonical data sets (locus.data.canonical)
SPLITS = ("train", "val", "test")
SCORED_SPLITS = ("test", "val")  # the splits a run scores and its metrics report
DUPLICATE_POLICIES = ("last", "max", "mean", "error")
DEFAULT_DUPLICATE_POLICY = "last"  # the authors' code keeps the last row per (prompt, model)
SPLIT_OVERLAP_POLICIES = ("error", "keep_test", "keep_train", "keep_all")
DEFAULT_SPLIT_OVERLAP = "error"

# training runs (locus.runs) and LOCUS's options (locus.methods.locus_method)
SAMPLING = ("shared", "per_model")
DEFAULT_SAMPLING = "shared"  # one random set of training queries for all models, as the authors' code
PRECISIONS = ("float32", "bfloat16")
# the query encoder of `locus serve`: "auto" picks one of the others from the CPU (locus.encoders.choose_precision)
ENCODER_PRECISIONS = ("auto", "float32", "bfloat16", "int8")
RECIPES = ("fast", "paper")

# config sections whose `seed` and `extra_seeds` repeat runs behind figure claims (locus.experiments.claims,
# locus.workflow_config, `locus claims --SECTION-seeds`)
SEED_SECTIONS = ("geometry", "onboarding", "regeneration")

# kinds of `locus table` (locus.experiments.tables, locus.experiments.ablation) and `locus figure`
TABLE_KINDS = ("routing", "routing-by-dataset", "correctness-by-dataset")
ABLATION_KINDS = (
    "dim-ablation-routing",
    "dim-ablation-correctness",
    "encoder-ablation-routing",
    "encoder-ablation-correctness",
)
FIGURE_KINDS = ("sample-efficiency", "time-to-accuracy")

# the paired bootstrap over test queries behind every table comparison (locus.experiments.bootstrap)
BOOTSTRAP_RESAMPLES = 2000

# selectors of active onboarding (locus.onboard, `locus onboard`, config active_onboarding.selectors)
ONBOARD_SELECTORS = ("random", "stratified", "anchor", "disagreement", "uncertainty")

# verdicts of the claims ledger (locus.experiments.claims)
CLAIM_VERDICTS = ("holds", "refuted", "inconclusive", "untestable")
