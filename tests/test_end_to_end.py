"""The whole DAG on the tiny config, from raw synthetic data to tables, figures and the HTML report."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import skip_or_fail  # tests/ is on sys.path (see conftest.py)

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "configs" / "tiny.yaml"
TARGETS = [  # = rule all of the tiny config (the report needs every file marked for it)
    "results/data/synthetic/summary.md",
    "results/tables/routing.tex",
    "results/tables/routing_by_dataset.tex",
    "results/tables/correctness_by_dataset.tex",
    "results/figures/train_sample_eff.pdf",
    "results/tables/distance_correlation.tex",
    "results/tables/precision_effect.tex",
    *(
        f"results/tables/{name}.tex"
        for name in ("calibration", "selective_routing", "aiq", "active_onboarding", "onboarding_rivals", "claims")
    ),
    *(
        f"results/tables/{kind}_ablation_{metric}.tex"
        for kind in ("dim", "encoder")
        for metric in ("routing", "correctness")
    ),
    *(
        f"results/figures/{name}.pdf"
        for name in (
            "performance_distance_correlation",
            "models_family_clustering",
            "nearest_neighbor_proxies",
            "fallback_routing",
            "model_portfolio",
            "hypothetical_model_embedding",
            "query_encodings_tsne",
            "embedding_robustness_tsne",
            "overlap_convergence",
            "anchor_size_convergence",
            "perf_vs_size_and_overlap",
            "sample_eff_ood_test",
            "time_complexity",
            "relearn_embedllm_heatmap_cosine_distance",
            "relearn_embedllm_heatmap_test_disagreement",
            "relearning_embedllm_embeddings",
            "reliability",
            "risk_coverage",
            "cost_quality",
            "active_onboarding",
        )
    ),
]


def snakemake(workdir, *args, timeout=900):
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        *args,
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        "2",
        "--configfile",
        str(TINY),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny_workflow")
    res = snakemake(workdir, *TARGETS)
    assert res.returncode == 0, res.stderr[-6000:]
    return workdir


def test_tables_and_figure_exist(tiny_run):
    tex = (tiny_run / "results/tables/routing.tex").read_text()
    assert "\\toprule" in tex and "Oracle" in tex and "tiny synthetic test pool" in tex
    for name in ("routing_by_dataset", "correctness_by_dataset"):
        assert "\\toprule" in (tiny_run / f"results/tables/{name}.tex").read_text(), name
    table = (tiny_run / "results/tables/distance_correlation.tex").read_text()
    assert "Pearson" in table and "tiny synthetic test pool" in table


# --- every output checked by its content: columns, value ranges, model names and row counts that follow
# from the tiny config, not file sizes. A writer that drops a column or writes NaN / out-of-range values fails.


def _config() -> dict:
    """config/config.yaml with tests/configs/tiny.yaml merged over it, as Snakemake merges --configfile."""

    def merge(base, over):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
        return out

    return merge(yaml.safe_load((REPO / "config/config.yaml").read_text()), yaml.safe_load(TINY.read_text()))


CFG = _config()
GEO = CFG["geometry"]


@dataclass(frozen=True)
class Pool:
    """What the outputs are checked against: the tiny data set's models and test split."""

    names: frozenset
    ids: frozenset
    n_queries: int
    n_test: int

    @property
    def n_models(self) -> int:
        return len(self.names)


@pytest.fixture(scope="module")
def pool(tiny_run) -> Pool:
    import pandas as pd

    models = pd.read_parquet(tiny_run / "results/data/synthetic/models.parquet")
    queries = pd.read_parquet(tiny_run / "results/data/synthetic/queries.parquet")
    assert len(models) == CFG["datasets"]["synthetic"]["params"]["n_models"]
    return Pool(
        frozenset(models["name"]),
        frozenset(models["model_id"].astype(int)),
        len(queries),
        int((queries["split"] == "test").sum()),
    )


def read_csv(path: Path, columns):
    """The CSV with at least `columns` (a writer that drops one fails here)."""
    import pandas as pd

    frame = pd.read_csv(path, keep_default_na=True)
    missing = [c for c in columns if c not in frame.columns]
    assert not missing, f"{path.name}: columns {missing} missing (has {list(frame.columns)})"
    assert len(frame), f"{path.name}: no rows"
    return frame


def in_range(frame, columns, low, high, name=""):
    """Every value of `columns` is a number in [low, high] (NaN fails)."""
    for c in columns:
        values = frame[c].astype(float)
        assert values.notna().all(), f"{name}: NaN in {c}"
        assert values.between(low, high).all(), f"{name}: {c} outside [{low}, {high}]: {values.min()}..{values.max()}"


def check_distance_correlation(results: Path, pool: Pool):
    f = read_csv(
        results / "tables/distance_correlation.csv",
        [
            "method",
            "label",
            "correlation",
            "distance",
            "value",
            "n_models",
            "n_pairs",
            "n_queries",
            "train_size",
            "ci_low",
            "ci_high",
            "reference",
            "diff_to_reference",
            "diff_ci_low",
            "diff_ci_high",
            "interval",
            "diff_interval",
            "resampling_shift",
            "embedding_dim",
            "effective_dim",
            "n_influential",
            "value_without_influential",
            "influential_models",
        ],
    )
    assert set(f["method"]) == set(GEO["methods"])
    assert (f["n_influential"] == np.ceil(0.1 * f["n_models"])).all()
    assert (f["influential_models"].str.count(";") + 1 == f["n_influential"]).all()
    in_range(f, ["value_without_influential"], -1, 1, "distance_correlation")
    assert ((f["ci_low"] <= f["value"]) & (f["value"] <= f["ci_high"])).all()  # every interval holds its estimate
    assert ((f["diff_ci_low"] <= f["diff_to_reference"]) & (f["diff_to_reference"] <= f["diff_ci_high"])).all()
    assert set(f["interval"]) | set(f["diff_interval"]) <= {"percentile", "bca", "recentred"}
    assert (f["effective_dim"] >= 1).all() and (f["effective_dim"] <= f["embedding_dim"]).all()
    assert (f.groupby("method")["effective_dim"].nunique() == 1).all()
    assert set(f["correlation"]) == {"pearson", "spearman", "kendall"}
    assert set(f["distance"]) == {"cosine", "euclidean"}
    assert len(f) == len(GEO["methods"]) * 3 * 2 and not f.duplicated(["method", "correlation", "distance"]).any()
    in_range(f, ["value", "ci_low", "ci_high"], -1, 1, "distance_correlation")
    in_range(f, ["diff_to_reference", "diff_ci_low", "diff_ci_high"], -2, 2, "distance_correlation")
    assert (f["ci_low"] <= f["ci_high"]).all()
    assert (f["n_models"] == pool.n_models).all() and (f["n_pairs"] == pool.n_models * (pool.n_models - 1) // 2).all()
    assert (f["n_queries"] == pool.n_test).all() and (f["train_size"] == GEO["reference_train_size"]).all()
    ref = f[f["method"] == GEO["neighbours"]["reference_method"]]
    assert (ref["diff_to_reference"] == 0).all()


def check_performance_distance_correlation(results: Path, pool: Pool):
    f = read_csv(
        results / "figures/performance_distance_correlation.csv",
        ["method", "model_a", "model_b", "name_a", "name_b", "cosine", "euclidean", "disagreement", "common_queries"],
    )
    assert set(f["method"]) == set(GEO["methods"])
    for _, part in f.groupby("method"):  # every unordered pair of models once
        assert len(part) == pool.n_models * (pool.n_models - 1) // 2
        assert not part.duplicated(["model_a", "model_b"]).any()
    assert (f["model_a"] < f["model_b"]).all() and set(f["model_a"]) | set(f["model_b"]) <= pool.ids
    assert set(f["name_a"]) | set(f["name_b"]) <= pool.names
    in_range(f, ["cosine"], 0, 2, "cosine distance")
    in_range(f, ["euclidean"], 0, float("inf"), "euclidean distance")
    in_range(f, ["disagreement"], 0, 1, "disagreement")
    in_range(f, ["common_queries"], 1, pool.n_test, "common queries")


def check_models_family_clustering(results: Path, pool: Pool):
    f = read_csv(
        results / "figures/models_family_clustering.csv",
        [
            "row_position",
            "col_position",
            "row_model_id",
            "col_model_id",
            "row_name",
            "col_name",
            "row_highlight",
            "col_highlight",
            "distance",
        ],
    )
    assert len(f) == pool.n_models**2  # the whole heat map, in dendrogram order
    assert set(f["row_position"]) == set(range(pool.n_models)) == set(f["col_position"])
    assert set(f["row_name"]) == set(pool.names) == set(f["col_name"])
    in_range(f, ["distance"], 0, float("inf"), "family distances")
    square = f.pivot(index="row_model_id", columns="col_model_id", values="distance").to_numpy()
    np.testing.assert_allclose(square, square.T, atol=1e-12)
    assert np.all(np.diag(square) == 0)
    assert set(f["row_highlight"].dropna()) <= set(GEO["neighbours"]["highlight_tags"])


def check_nearest_neighbor_proxies(results: Path, pool: Pool):
    f = read_csv(
        results / "figures/nearest_neighbor_proxies.csv",
        ["method", "distance", "n_models", "n_queries", "train_size", "curve", "k", "agreement"],
    )
    assert set(f["method"]) <= set(GEO["methods"]) and GEO["neighbours"]["reference_method"] in set(f["method"])
    in_range(f, ["agreement"], 0, 1, "proxy agreement")
    neighbours = f[f["curve"] == "embedding_neighbour"]
    assert len(neighbours) and set(neighbours["k"].astype(int)) == set(
        range(1, min(GEO["neighbours"]["max_k"], pool.n_models - 1) + 1)
    )
    assert (f["n_models"] == pool.n_models).all() and (f["n_queries"] == pool.n_test).all()


def check_fallback_routing(results: Path, pool: Pool):
    f = read_csv(
        results / "figures/fallback_routing.csv",
        ["method", "distance", "n_models", "train_size", "curve", "k", "accuracy", "retention", "n_queries"],
    )
    assert {"embedding_neighbour", "router_choice", "original"} <= set(f["curve"])
    in_range(f, ["accuracy"], 0, 1, "fallback accuracy")
    in_range(f, ["retention"], 0, float("inf"), "retention")
    in_range(f, ["n_queries"], 1, pool.n_test, "fallback queries")
    original = f[f["curve"] == "original"]
    np.testing.assert_allclose(original["retention"], 1.0)


def check_model_portfolio(results: Path, pool: Pool):
    f = read_csv(
        results / "figures/model_portfolio.csv",
        [
            "panel",
            "method",
            "k",
            "budget_b",
            "n_models",
            "params_b",
            "routing_acc",
            "oracle",
            "coverage",
            "trials",
            "models",
        ],
    )
    assert {"k-center", "k-medoids", "coverage-greedy", "random", "random-feasible"} <= set(f["method"])
    in_range(f, ["routing_acc", "oracle"], 0, 100, "portfolio accuracy (%)")
    assert (f["routing_acc"] <= f["oracle"] + 1e-9).all()
    in_range(f, ["top_model_share"], 0, 1, "portfolio routers' top-model share")
    assert (f.loc[f["n_models"] == 1, "top_model_share"] == 1.0).all()  # a one-model portfolio routes all to it
    in_range(f, ["n_models"], 1, pool.n_models, "portfolio size")
    in_range(f, ["coverage"], 0, pool.n_models, "coverage")
    count = f[f["panel"] == "count"]
    assert set(count["k"].astype(int)) == set(range(1, pool.n_models + 1))
    assert (count["n_models"] == count["k"]).all()
    chosen = f[f["method"].isin(["k-center", "k-medoids", "coverage-greedy"])]
    assert {n for names in chosen["models"] for n in names.split(";")} <= pool.names
    budget = f[f["panel"] == "budget"]
    assert len(budget) and (budget["params_b"] <= budget["budget_b"] + 1e-9).all()


def check_hypothetical_model_embedding(results: Path, pool: Pool):
    f = read_csv(results / "figures/hypothetical_model_embedding.csv", ["size", "k", "recall", "models", "repeats"])
    in_range(f, ["recall"], 0, 1, "recall@k")
    assert set(f["size"]) == set(GEO["views"]["hypothetical_sizes"])
    assert set(f["k"]) <= set(GEO["views"]["recall_at"]) and (f["models"] == pool.n_models).all()


def check_relearn_heatmaps(results: Path, pool: Pool):
    reg = CFG["regeneration"]
    for metric in ("cosine_distance", "test_disagreement"):
        f = read_csv(
            results / f"figures/relearn_embedllm_heatmap_{metric}.csv",
            [
                "method",
                "kind",
                "setting",
                "cosine_distance",
                "test_disagreement",
                "set_size",
                "draws",
                "hidden_layers",
                "dim",
                "metric",
            ],
        )
        assert set(f["method"]) == {"embedllm", "locus"} and set(f["metric"]) == {metric}
        assert set(f["kind"]) == {"same", "overlap", "subsample"}
        in_range(f, ["cosine_distance"], 0, 2, metric)
        in_range(f, ["test_disagreement"], 0, 1, metric)
        embedllm = f[f["method"] == "embedllm"]
        assert set(embedllm["hidden_layers"].astype(int)) == set(reg["hidden_layers"])
        assert len(embedllm) == len(reg["hidden_layers"]) * len(reg["dims"]) * (
            1 + len(reg["overlaps"]) + len(reg["sizes"])
        )
        same = f[(f["method"] == "locus") & (f["kind"] == "same")]  # one forward pass: it reproduces itself
        assert len(same) == 1 and same["test_disagreement"].iloc[0] == 0 and same["cosine_distance"].iloc[0] < 1e-5


def check_relearning_embedllm_embeddings(results: Path, pool: Pool):
    f = read_csv(
        results / "figures/relearning_embedllm_embeddings.csv",
        ["panel", "kind", "model_id", "name", "cosine_distance", "x", "y"],
    )
    assert set(f["name"]) <= pool.names and set(f["model_id"]) <= pool.ids
    in_range(f, ["x", "y"], -np.inf, np.inf, "t-SNE coordinates")
    in_range(f, ["cosine_distance"], 0, 2, "cosine distance")
    assert set(f.loc[f["kind"] == "original", "name"]) == pool.names


def check_sample_eff_ood_test(results: Path, pool: Pool):
    ob = CFG["onboarding"]
    f = read_csv(
        results / "figures/sample_eff_ood_test.csv",
        ["row", "k", "accuracy", "kind", "model_id", "n_pairs", "correct", "name"],
    )
    cells, draws = f[f["kind"] == "cell"], f[f["kind"] == "draw"]
    assert set(f["kind"]) == {"cell", "draw"}
    in_range(cells, ["accuracy"], 0, 1, "onboarding accuracy")
    rows = len(ob["model_counts"]) + bool(ob["all_models_row"])
    assert len(cells) == rows * len(ob["sizes"]) and set(f["k"]) == set(ob["sizes"])
    assert set(draws["name"]) == set(ob["held_out"])
    assert len(draws) == rows * len(ob["sizes"]) * ob["repeats"] * len(ob["held_out"])
    assert (draws["correct"] <= draws["n_pairs"]).all() and (draws["n_pairs"] <= pool.n_test).all()


def check_onboarding_rivals(results: Path, pool: Pool):
    """Every onboarding method at every k of the plan, accuracies in [0, 1] with their intervals around them, and
    each rival's paired difference to LOCUS."""
    f = read_csv(results / "tables/onboarding_rivals.csv", ["method", "k", "metric", "value", "ci_low", "ci_high"])
    acc = f[f["metric"] == "correctness_acc"]
    assert {"locus", "cluster_shrinkage", "cluster_error_vector", "knn_agreement", "mean_accuracy"} <= set(
        acc["method"]
    )
    in_range(acc, ["value", "ci_low", "ci_high"], 0, 1, "onboarding accuracy")
    assert (acc["ci_low"] <= acc["value"]).all() and (acc["value"] <= acc["ci_high"]).all()
    assert set(acc["k"]) == set(CFG["onboarding_rivals"]["sizes"])
    diffs = f[f["metric"] == "correctness_acc_minus_locus"]
    assert set(diffs["method"]) == set(acc["method"]) - {"locus"}
    # the field's protocol: the plan caps 38 held-out models at the tiny pool's share (4 of 12), in each repeat
    assert (f["repeats"] == CFG["onboarding_rivals"]["repeats"]).all()
    assert (acc["n_models"] == 4 * CFG["onboarding_rivals"]["repeats"]).all()
    assert set(acc["draw"]) == {"random", "anchor"}
    assert {"routing_acc_all", "aiq_range", "aiq_max"} <= set(f["metric"])


def check_time_complexity(results: Path, pool: Pool):
    tc = CFG["time_complexity"]
    f = read_csv(
        results / "figures/time_complexity.csv",
        ["source", "what", "precision", "n_models", "n", "median_s", "min_s", "max_s", "cold_s", "gflop"],
    )
    measured = f[f["source"] == "measured"]
    in_range(measured, ["median_s", "min_s", "max_s", "cold_s"], 0, 600, "timings (s)")
    assert (measured["min_s"] <= measured["median_s"]).all() and (measured["median_s"] <= measured["max_s"]).all()
    in_range(measured, ["gflop"], 0, float("inf"), "FLOPs")
    embed = measured[measured["what"] == "embed"]
    assert len(embed) == len(tc["pool_sizes"]) * len(tc["eval_sizes"]) * len(set(measured["precision"]))
    assert set(measured.loc[measured["what"] == "predict", "n"]) == set(tc["query_sizes"])


def check_train_sample_eff(results: Path, pool: Pool):
    se = CFG["sample_efficiency"]
    f = read_csv(results / "figures/train_sample_eff.csv", ["kind", "method", "train_size", "mean", "std", "n_seeds"])
    curves = f[f["kind"] == "curve"]
    assert set(curves["method"]) == set(se["methods"]) and set(curves["train_size"]) == set(se["train_sizes"])
    assert len(curves) == len(se["methods"]) * len(se["train_sizes"])
    in_range(curves, ["mean"], 0, 1, "sample-efficiency curve")
    in_range(curves, ["std"], 0, 1, "sample-efficiency std")
    single = f[f["kind"] == "best_single"]  # the runs' best single model (chosen on val): the figure's line
    assert len(single) == 1
    in_range(single, ["mean"], 0, 1, "sample-efficiency best single")
    factors = f[f["kind"] == "factor"]
    assert set(factors["status"]) <= {"significant", "not_significant", "undefined"}
    in_range(factors, ["share_defined"], 0, 1, "sample-efficiency share_defined")
    undefined = factors[factors["status"] == "undefined"]
    assert (undefined["share_defined"] < 0.95).all() and undefined[["ci_low", "ci_high"]].isna().all().all()
    assert not undefined["annotated"].astype(bool).any()
    defined = factors[factors["status"] != "undefined"]
    assert (defined["share_defined"] >= 0.95).all() and defined["ci_low"].notna().all()


def check_method_tables(results: Path, pool: Pool):
    """routing, routing/correctness by data set, the ablations: percentages, the configured approaches."""
    for name, approaches in [
        ("routing", CFG["table_methods"]),
        ("routing_by_dataset", CFG["by_dataset_methods"]),
        ("correctness_by_dataset", CFG["by_dataset_methods"]),
    ]:
        f = read_csv(
            results / f"tables/{name}.csv",
            ["approach", "kind", "metric", "train_size", "benchmark", "mean_pct", "std_pct", "n_seeds", "emphasis"],
        )
        assert set(f.loc[f["kind"] == "method", "approach"]) == set(approaches), name
        assert set(f.loc[f["kind"] == "method", "train_size"]) == set(CFG["train_sizes"]), name
        in_range(f, ["mean_pct"], 0, 100, name)
        if name != "correctness_by_dataset":
            check_routing_diversity(f, pool, name)
        if name == "routing":  # cell - (cell - best single) = the best single model's own reference row
            single = f[(f["approach"] == "best_single") & (f["metric"] == "routing_acc")]
            single = dict(zip(single["train_size"], single["mean_pct"]))
            routed = f[(f["kind"] == "method") & (f["metric"] == "routing_acc")]
            implied = routed["mean_pct"] - routed["diff_to_best_single_pct"]
            assert np.allclose(implied, routed["train_size"].map(single), atol=1e-4), name
    for kind in ("dim", "encoder"):
        for metric in ("routing", "correctness"):
            f = read_csv(results / f"tables/{kind}_ablation_{metric}.csv", ["approach", "mean_pct", "benchmark"])
            in_range(f, ["mean_pct"], 0, 100, f"{kind}_ablation_{metric}")
            if metric == "routing":
                check_routing_diversity(f, pool, f"{kind}_ablation_{metric}")
    f = read_csv(results / "tables/precision_effect.csv", ["run", "method", "train_size", "n_models"])
    assert len(f) and set(f["train_size"]) >= set(CFG["precision_effect"]["train_sizes"])


DIVERSITY = ["top_model", "top_model_share", "n_models_used", "choice_entropy", "near_constant"]
BEST_SINGLE = ["diff_to_best_single_pct", "best_single_ci_low_pct", "best_single_ci_high_pct", "beats_best_single"]


def check_routing_diversity(f, pool: Pool, name: str):
    """Routing cells carry the router's diversity and its paired difference to the best single model; bold
    only where that difference is significantly above 0; the near-constant flag follows the share."""
    missing = [c for c in DIVERSITY + BEST_SINGLE if c not in f.columns]
    assert not missing, f"{name}: columns {missing} missing"
    routed = f[(f["kind"] == "method") & (f["metric"] == "routing_acc")]
    assert len(routed), name
    assert set(routed["top_model"]) <= pool.names, name
    in_range(routed, ["top_model_share"], 1 / pool.n_models, 1, f"{name} top_model_share")
    in_range(routed, ["n_models_used"], 1, pool.n_models, f"{name} n_models_used")
    in_range(routed, ["choice_entropy"], 0, 1, f"{name} choice_entropy")
    in_range(routed, BEST_SINGLE[:1], -100, 100, f"{name} difference to the best single model")
    undefined = routed["best_single_ci_low_pct"].isna()  # a benchmark column of one query: no interval
    assert (routed.loc[undefined, "n_queries"] < 2).all(), f"{name}: interval missing with >= 2 queries"
    defined = routed[~undefined]
    in_range(defined, BEST_SINGLE[1:3], -100, 100, f"{name} interval of the difference to the best single model")
    assert (routed["near_constant"].astype(bool) == (routed["top_model_share"] >= 0.9)).all(), name
    assert (routed["beats_best_single"].astype(bool) == (routed["best_single_ci_low_pct"] > 0)).all(), name
    assert routed.loc[routed["emphasis"] == "best", "beats_best_single"].astype(bool).all(), name
    assert defined["best_single_ci_low_pct"].le(defined["best_single_ci_high_pct"]).all(), name
    other = f[(f["kind"] == "method") & (f["metric"] == "correctness_acc")]
    assert other["top_model_share"].isna().all(), f"{name}: diversity on correctness rows"


def check_tsne_views(results: Path, pool: Pool):
    views = GEO["views"]
    f = read_csv(results / "figures/query_encodings_tsne.csv", ["encoder", "prompt_id", "benchmark", "split", "x", "y"])
    assert len(f) == min(views["tsne_queries"], pool.n_queries) and not f["prompt_id"].duplicated().any()
    assert set(f["split"]) <= {"train", "val", "test"}
    in_range(f, ["x", "y"], -np.inf, np.inf, "query t-SNE")
    f = read_csv(
        results / "figures/embedding_robustness_tsne.csv",
        ["panel", "model_id", "name", "selected", "setting", "set_size", "distance", "x", "y"],
    )
    assert set(f["panel"]) == {"reference", "overlap", "size"}
    reference = f[f["panel"] == "reference"]
    assert set(reference["name"]) == pool.names and len(reference) == pool.n_models
    assert set(f.loc[f["selected"].astype(bool), "name"]) == set(views["robustness_models"])
    in_range(f, ["x", "y"], -np.inf, np.inf, "robustness t-SNE")
    in_range(f, ["distance"], 0, np.inf, "robustness distance")
    in_range(f[f["panel"] == "overlap"], ["realized_alpha"], 0, 1, "realised overlap")


def check_convergence_views(results: Path, pool: Pool):
    """One model's ‖z − z_ref‖ against the overlap α / the set size; α = 1 and n = n_ref are its own set."""
    views = GEO["views"]
    for name, by, grid in [
        ("overlap_convergence", "alpha", views["overlaps"]),
        ("anchor_size_convergence", "n", views["sizes"]),
    ]:
        f = read_csv(results / f"figures/{name}.csv", ["kind", "name", "distance", "std", "draws", by, "neighbour"])
        assert set(f["name"]) == {views["convergence_model"]}, name
        in_range(f, ["distance"], 0, np.inf, name)
        mean = f[f["kind"] == "mean"]
        assert sorted(mean[by]) == sorted(g for g in grid if by == "alpha" or g <= GEO["reference_train_size"]), name
        own = mean[by] == (1.0 if by == "alpha" else GEO["reference_train_size"])
        assert own.sum() == 1 and mean.loc[own, "distance"].iloc[0] < 1e-5, (
            f"{name}: the reference set re-embedded moved"
        )
        # every other grid value is drawn `repeats` times (n = n_ref is the one set itself: one draw)
        assert (mean.loc[~own, "draws"] == views["repeats"]).all() and mean.loc[own, "draws"].iloc[0] in (
            1,
            views["repeats"],
        )
        assert len(f[f["kind"] == "draw"]) == mean["draws"].sum(), name
        near = f[f["kind"] == "neighbour"]
        assert len(near) == views["neighbours"] and set(near["neighbour"]) <= pool.names - {views["convergence_model"]}


def check_perf_vs_size_and_overlap(results: Path, pool: Pool):
    views = GEO["views"]
    f = read_csv(
        results / "figures/perf_vs_size_and_overlap.csv",
        ["panel", "setting", "set_size", "realized_alpha", "distance", "correctness_acc", "routing_acc", "kind"],
    )
    assert set(f["kind"]) == {"draw", "mean", "reference", "best_single"}
    in_range(f, ["routing_acc"], 0, 1, "perf_vs_evalset routing")
    in_range(f[f["kind"] != "best_single"], ["correctness_acc"], 0, 1, "perf_vs_evalset correctness")
    mean = f[f["kind"] == "mean"]
    assert sorted(mean.loc[mean["panel"] == "size", "setting"]) == sorted(views["evalset_sizes"])
    assert sorted(mean.loc[mean["panel"] == "overlap", "setting"]) == sorted(views["evalset_overlaps"])
    in_range(mean, ["realized_alpha"], 0, 1, "realised overlap")
    in_range(mean, ["distance"], 0, np.inf, "distance to z_ref")
    reference = f[f["kind"] == "reference"].iloc[0]
    own = mean[
        ((mean["panel"] == "size") & (mean["setting"] == GEO["reference_train_size"]))
        | ((mean["panel"] == "overlap") & (mean["setting"] == 1.0))
    ]
    assert len(own) == 2  # the reference set itself: the run's own accuracy (one borderline query may flip)
    for metric in ("routing_acc", "correctness_acc"):
        assert (abs(own[metric] - reference[metric]) <= 1 / pool.n_test + 1e-9).all(), metric


def check_claims(results: Path, pool: Pool):
    """The ledger the rule wrote: one row per claim with a verdict from the vocabulary and its rule, equal to
    what the library computes from the same outputs (the rule adds nothing of its own)."""
    import pandas as pd

    from locus.constants import CLAIM_VERDICTS
    from locus.experiments import claims
    from locus.experiments.report import Source

    written = pd.read_csv(results / "tables/claims.csv", keep_default_na=False)
    assert list(written["id"]) == [c.id for c in claims.CLAIMS]
    assert set(written["verdict"]) <= set(CLAIM_VERDICTS) and (written["rule"].str.len() > 20).all()
    again = claims.ledger(Source(results)).astype(str)
    assert written.astype(str).equals(again), (written, again)
    assert (results / "tables/claims.md").read_text().startswith("Claims of the paper on ")


CHECKS = [
    check_claims,
    check_distance_correlation,
    check_performance_distance_correlation,
    check_models_family_clustering,
    check_nearest_neighbor_proxies,
    check_fallback_routing,
    check_model_portfolio,
    check_hypothetical_model_embedding,
    check_relearn_heatmaps,
    check_relearning_embedllm_embeddings,
    check_sample_eff_ood_test,
    check_onboarding_rivals,
    check_time_complexity,
    check_train_sample_eff,
    check_method_tables,
    check_tsne_views,
    check_convergence_views,
    check_perf_vs_size_and_overlap,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
def test_output_contents(tiny_run, pool, check):
    check(tiny_run / "results", pool)


def test_figures_decode(tiny_run):
    """Every figure of rule all: a PDF, a PNG that decodes to a real picture (not blank), its plotted data."""
    from PIL import Image

    for target in TARGETS:
        path = tiny_run / target
        if "/figures/" not in target:
            continue
        assert path.read_bytes()[:5] == b"%PDF-", path
        with Image.open(path.with_suffix(".png")) as im:
            im.load()
            assert im.width >= 400 and im.height >= 300, (path.stem, im.size)
            low, high = im.convert("L").getextrema()
            assert low < high, f"{path.stem}.png is one flat colour"
        assert path.with_suffix(".csv").stat().st_size > 0


def test_run_directory_contents(tiny_run):
    runs = sorted((tiny_run / "results/runs").rglob("metrics.json"))
    assert runs, "no run directories"
    locus_run = next(p.parent for p in runs if "/locus/" in str(p))
    for name in (
        "config.json",
        "model.safetensors",
        "train_pairs.parquet",
        "scores_val.parquet",
        "scores_test.parquet",
        "embeddings.parquet",
        "log.csv",
    ):
        assert (locus_run / name).is_file(), name
    metrics = json.loads((locus_run / "metrics.json").read_text())
    overall = metrics["test"]["overall"]
    assert 0 <= overall["routing_acc"] <= overall["oracle"] <= 1
    assert metrics["reference"]["oracle"]["overall"] == pytest.approx(overall["oracle"])


def test_rerun_does_nothing(tiny_run):
    res = snakemake(tiny_run, *TARGETS)
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def test_html_report_renders_in_a_real_browser(tiny_run):
    """`snakemake --report` builds one self-contained HTML file; headless Chromium opens it, shows the
    result categories, and every embedded figure decodes to a real image (no broken images)."""
    report = tiny_run / "results" / "report.html"
    res = snakemake(tiny_run, "--report", str(report))
    assert res.returncode == 0, res.stderr[-3000:]
    html = report.read_text()
    assert "train_sample_eff.png" in html and "routing.tex" in html and "summary.md" in html
    assert "model_portfolio.png" in html and "distance_correlation.tex" in html and "Geometry" in html
    if not Path(CHROMIUM).exists():
        skip_or_fail(
            "browser",
            "REPORT BROWSER TEST NOT RUN: Debian's chromium is not installed (bash install.sh --test installs it)",
        )
    try:
        from playwright import sync_api
    except ImportError:
        skip_or_fail("browser", "REPORT BROWSER TEST NOT RUN: playwright is missing (bash install.sh --test)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(report.as_uri())
            page.get_by_text("Figures", exact=True).wait_for(timeout=30_000)
            assert page.get_by_text("Tables", exact=True).count() >= 1
            images = page.evaluate("""async () => {
              const out = {};
              for (const [name, r] of Object.entries(results)) {
                if (!r.mime_type.startsWith('image/')) continue;
                out[name] = await new Promise(done => {
                  const im = new Image();
                  im.onload = () => done([im.naturalWidth, im.naturalHeight]);
                  im.onerror = () => done(null);
                  im.src = r.data_uri;
                });
              }
              return out;
            }""")
            page.get_by_text("Figures", exact=True).click()
            page.get_by_text("train_sample_eff.png").first.wait_for(timeout=10_000)
            page.screenshot(path=str(tiny_run / "results" / "report.png"), full_page=True)
        finally:
            browser.close()
    assert images, "no figure embedded in the report"
    broken = [name for name, size in images.items() if not size or min(size) < 50]
    assert not broken, f"broken images in the report: {broken}"
    assert not errors, errors


def test_onboarding_through_locus_embed_matches_the_rule(tiny_run, tmp_path):
    """Training-free onboarding as a user does it: a held-out model's scored prompts (the same draw as the
    figure's cell) go through `locus embed` with a run trained without it; the embedding's test
    correctness accuracy equals the figure's."""
    import numpy as np
    import pandas as pd

    from locus import run_artifacts
    from locus.data.canonical import read_dataset
    from locus.data.encodings import read_encodings, read_vectors
    from locus.evaluation import correctness_metrics
    from locus.experiments.onboarding import draw_evaluations

    frame = pd.read_csv(tiny_run / "results/figures/sample_eff_ood_test.csv")
    draw = frame[(frame["kind"] == "draw") & (frame["row"].astype(str) == "4") & (frame["k"] == 32)].iloc[0]
    data = read_dataset(tiny_run / "results/data/synthetic")
    ids, scores = draw_evaluations(data.split_scores("train"), int(draw["model_id"]), 32, repeat=0, seed=0)
    prompts = data.queries.set_index("prompt_id").loc[ids, "prompt"]
    pd.DataFrame({"prompt": prompts.to_numpy(), "score": scores}).to_csv(tmp_path / "scores.csv", index=False)
    run = tiny_run / "results/onboarding/synthetic/all-MiniLM-L6-v2/m4/n64/s0"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "locus",
            "embed",
            "--checkpoint",
            str(run),
            "--scores",
            str(tmp_path / "scores.csv"),
            "--out",
            str(tmp_path / "z.parquet"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    assert "embedded 32 scored prompts" in res.stdout
    _, z, _ = read_vectors(tmp_path / "z.parquet", "model_id")
    method = run_artifacts.load_checkpoint(run).method
    test_ids = data.split_queries("test")["prompt_id"].to_numpy()
    enc = read_encodings(tiny_run / "results/encodings/synthetic/all-MiniLM-L6-v2.parquet")
    logits = method.logits_for_embeddings(enc.take(test_ids), z)
    labels = data.label_matrix(test_ids, np.array([int(draw["model_id"])]))
    metrics = correctness_metrics(logits, labels)
    assert metrics["n_pairs"] == draw["n_pairs"]
    # the prompts are re-encoded by the sentence encoder: identical up to float rounding, so at most one
    # borderline pair may flip
    assert abs(round(metrics["correctness_acc"] * metrics["n_pairs"]) - draw["correct"]) <= 1


def test_time_to_accuracy_rule(tiny_run):
    """Both recipes train in their own run directories (the tiny config's LOCUS settings apply to both) and
    the figure reads their logs and Snakemake benchmark files (peak memory)."""
    res = snakemake(tiny_run, "results/figures/time_to_accuracy.pdf")
    assert res.returncode == 0, res.stderr[-6000:]
    summary = json.loads((tiny_run / "results/figures/time_to_accuracy.json").read_text())
    assert set(summary["recipes"]) == {"paper", "fast"} and summary["train_size"] == 64
    assert all(s["peak_rss_mb"] > 0 for s in summary["recipes"].values())
    assert 0 < summary["constant_router_val_routing"] <= 1  # the rule passes the data set (--data)
    for recipe, s in summary["recipes"].items():  # the test hit@1 of the selected checkpoint, for context
        run = json.loads(
            (tiny_run / f"results/time_to_accuracy/synthetic/all-MiniLM-L6-v2/n64/s0/{recipe}/metrics.json").read_text()
        )
        assert s["test_routing"] == run["test"]["overall"]["routing_acc"]
    base = tiny_run / "results/time_to_accuracy/synthetic/all-MiniLM-L6-v2/n64/s0"
    paper = json.loads((base / "paper/metrics.json").read_text())["params"]
    assert (paper["recipe"], paper["model_batch"], paper["patience"], paper["max_steps"]) == ("paper", 0, 500, 40)
    for ext in ("png", "csv"):
        assert (tiny_run / f"results/figures/time_to_accuracy.{ext}").stat().st_size > 0
