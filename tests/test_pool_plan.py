"""The pool's plan (locus.capacity, applied by locus.workflow_config): experiment sizes fitted to a pool smaller
than the settings ask for, and outputs the pool cannot carry skipped with the reason, in a real dry run of the
whole DAG."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from locus import capacity

REPO = Path(__file__).resolve().parents[1]


def test_sizes_are_capped_in_order_and_recorded():
    plan = capacity.PoolPlan("mine", capacity.PoolFacts(models=12, train_queries=480, val_queries=60, test_queries=60))
    assert plan.sizes("train_sizes", [256, 512, 1024], 480, "the pool's training queries") == [256, 480]
    assert plan.sizes("ablation.dim_train_sizes", [256], 480, "the pool's training queries") == [256]  # unchanged
    assert plan.size("onboarding.train_size", 1024, 480, "the pool's training queries") == 480
    assert [a["setting"] for a in plan.adapted] == ["train_sizes", "onboarding.train_size"]
    assert plan.adapted[1]["asked"] == 1024 and plan.adapted[1]["used"] == 480
    assert plan.adapted[0] == {
        "setting": "train_sizes",
        "asked": [256, 512, 1024],
        "used": [256, 480],
        "why": "the pool's training queries (480)",
    }
    plan.skip(["figures/b.csv", "figures/a.pdf"], "no model families in this pool")
    assert plan.is_skipped("figures/a.pdf") and not plan.is_skipped("figures/c.pdf")
    assert plan.lines()[-1] == "skipped figures/a.pdf, figures/b.csv: no model families in this pool"
    saved = json.loads(plan.to_json())
    assert saved["train_queries"] == 480 and saved["skipped"][0]["outputs"] == ["figures/a.pdf", "figures/b.csv"]


def test_models_the_pool_lacks_are_replaced_by_its_own():
    facts = capacity.PoolFacts(models=3, train_queries=9, val_queries=1, test_queries=1, names=("c", "a", "b"))
    plan = capacity.PoolPlan("mine", facts)
    assert plan.models("views", ["x", "b", "y"], ["b"], "not in the pool") == ["b", "a", "c"]
    assert plan.models("views", ["b"], ["b"], "not in the pool") == ["b"]  # nothing to replace
    assert plan.models("views", ["w", "x", "y", "z"], [], "not in the pool") == ["a", "b", "c"]  # all it has
    assert [a["used"] for a in plan.adapted] == [["b", "a", "c"], ["a", "b", "c"]]


def test_facts_of_frames_and_missing_data(tmp_path):
    queries = pd.DataFrame({"split": ["train"] * 5 + ["val", "test", "test"]})
    models = pd.DataFrame({"model_id": [0, 1, 2], "name": list("abc"), "params_b": [np.nan] * 3, "held_out": [0, 1, 1]})
    facts = capacity.facts_of(queries, models)
    assert (facts.models, facts.train_queries, facts.val_queries, facts.test_queries) == (3, 5, 1, 2)
    assert facts.held_out_models == 2
    assert not facts.has("params_b")  # an all-empty column carries nothing
    assert capacity.read_facts(tmp_path / "nowhere") is None


def _pool_csv(path: Path, models: int = 12, queries: int = 600, metadata: bool = False) -> Path:
    """A small bring-your-own pool: every model scored on every query; with `metadata`, also the model columns."""
    rng = np.random.default_rng(0)
    skill = rng.uniform(0.3, 0.8, models)
    rows = {
        "prompt": [f"question {q}: what is {q} plus {q % 7}?" for q in range(queries) for _ in range(models)],
        "model": [f"org/model-{m:02d}" for _ in range(queries) for m in range(models)],
        "score": (rng.random(queries * models) < np.tile(skill, queries)).astype(int),
        "benchmark": [f"bench{q % 3}" for q in range(queries) for _ in range(models)],
    }
    if metadata:
        rows["params_b"] = [7 * (1 + m % 4) for _ in range(queries) for m in range(models)]
        rows["family"] = [f"fam{m % 3}" for _ in range(queries) for m in range(models)]
        rows["held_out"] = [int(m >= models - 2) for _ in range(queries) for m in range(models)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _dry_run(tmp_path: Path, csv: Path):
    config = tmp_path / "mine.yaml"
    config.write_text(f"dataset: mine\ndatasets:\n  mine:\n    source: csv\n    params: {{path: {csv}}}\n")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-n", "--directory", str(tmp_path)]
    res = subprocess.run([*cmd, "--configfile", str(config)], capture_output=True, text=True, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    planned = set(re.findall(r"^rule (\w+):", res.stdout, re.M))
    plan_lines = [line.removeprefix("locus: pool mine: ") for line in out.splitlines() if "locus: pool mine:" in line]
    return planned, plan_lines, out


def test_a_small_csv_pool_plans_what_it_can_carry_and_skips_the_rest(tmp_path):
    """12 models x 600 queries, no model metadata: sizes fit the 480 training queries; the outputs that need
    families, held-out models or parameter counts are skipped with the reason; everything else is planned."""
    planned, lines, out = _dry_run(tmp_path, _pool_csv(tmp_path / "evals.csv"))
    assert "train_sizes: [256, 512, 1024] -> [256, 480]: the pool's training queries (480)" in lines
    assert "geometry.reference_train_size: 4096 -> 480: the pool's training queries (480)" in lines
    assert "geometry.neighbours.max_k" not in "\n".join(lines)  # 11 other models: no change
    assert (
        "geometry.views.convergence_model: ['codellama/CodeLlama-13b-Instruct-hf'] -> ['org/model-00']: "
        "the paper's models that this pool lacks replaced by its own"
    ) in lines
    reasons = {line.split(": ", 1)[1] for line in lines if line.startswith("skipped ")}
    assert reasons == {
        "no model families in this pool (models `family`)",
        "no held-out models in this pool (no `held_out` column): name them in onboarding.held_out",
        "no model costs or parameter counts in this pool (models `cost` or `params_b`)",
        "no parameter counts in this pool (models `params_b`)",
    }
    for rule in ("train_run", "routing_table", "sample_efficiency_figure", "regeneration_run", "claims_table"):
        assert rule in planned, rule
    for rule in ("models_family_clustering_figure", "onboarding_figure", "active_onboarding", "cost_quality"):
        assert rule not in planned, rule
    assert "results/runs/mine/all-MiniLM-L6-v2/locus/n480/d128/s0/metrics.json" in out
    # on the planned jobs' outputs, not the whole text (which holds the checkout's path)
    outputs = [f for line in re.findall(r"^\s+output: (.*)$", out, re.M) for f in line.split(", ")]
    assert "results/runs/mine/all-MiniLM-L6-v2/locus/n480/d128/s0/metrics.json" in outputs
    assert not [f for f in outputs if "/n1024/" in f or "/n4096/" in f] and "Traceback" not in out


def test_the_same_pool_with_model_metadata_plans_every_output(tmp_path):
    planned, lines, _ = _dry_run(tmp_path, _pool_csv(tmp_path / "evals.csv", metadata=True))
    assert not [line for line in lines if line.startswith("skipped ")]
    for rule in ("models_family_clustering_figure", "onboarding_figure", "active_onboarding", "model_portfolio_figure"):
        assert rule in planned, rule
