"""Tests of the synthetic EmbedLLM-like data set and the packaged model pool."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from locus.data import synthetic
from locus.data.canonical import SPLITS, validate
from locus.data.model_pool import TOTAL_PARAMS_PAPER_B, load_model_pool
from locus.errors import ConfigError

SMALL = {"n_queries": 600, "seed": 3}


@pytest.fixture(scope="module")
def small():
    return synthetic.build(SMALL)


def test_model_pool_ids_names_and_total_params():
    pool = load_model_pool()
    assert len(pool) == 112 and pool["model_id"].tolist() == list(range(112))
    names = dict(zip(pool["model_id"], pool["name"]))
    assert names[0] == "Qwen/Qwen1.5-7B-Chat"
    assert names[1] == "ConvexAI/Luminex-34B-v0.1"
    assert names[111] == "Q-bert/Optimus-7B"
    total = pool["params_b"].sum()
    print(f"total params_b = {total:.1f} B (paper: {TOTAL_PARAMS_PAPER_B} B)")
    assert abs(total - 2022.2) < 0.5
    assert abs(total / TOTAL_PARAMS_PAPER_B - 1) < 0.06
    assert pool["held_out"].sum() == 16 and pool.loc[pool["held_out"] == 1, "model_id"].tolist() == list(range(96, 112))
    assert pool["tags"].map(type).eq(str).all() and (pool["tags"] == "").sum() == 34


def test_deterministic_for_a_seed_and_different_for_another(small):
    again = synthetic.build(SMALL)
    for a, b in zip(small, again):
        pd.testing.assert_frame_equal(a, b)
    other = synthetic.build({**SMALL, "seed": 4})
    assert not other[0]["prompt"].equals(small[0]["prompt"])
    assert not np.array_equal(other[2]["score"].to_numpy(), small[2]["score"].to_numpy())


def test_shapes_dtypes_and_canonical_validation(small):
    queries, models, scores = small
    assert len(queries) == 600 and len(models) == 112 and len(scores) == 600 * 112
    assert list(queries.columns) == ["prompt_id", "prompt", "benchmark", "category", "split"]
    assert queries["prompt_id"].dtype == np.int64 and scores["model_id"].dtype == np.int64
    assert scores["score"].dtype == np.float64 and set(np.unique(scores["score"])) == {0.0, 1.0}
    assert queries["prompt"].is_unique
    lengths = queries["prompt"].str.len()
    assert lengths.min() >= 60 and lengths.mean() < 250
    data = validate(queries, models, scores)
    assert set(data.queries["split"]) == set(SPLITS)
    assert {"params_b", "family", "tags"} <= set(data.models.columns)


def test_benchmark_proportions_categories_and_splits(small):
    queries = small[0]
    shares = {b: v[0] / 3000 for b, v in synthetic.BENCHMARKS.items()}
    counts = queries["benchmark"].value_counts()
    assert set(counts.index) == set(shares)
    for bench, share in shares.items():
        assert abs(counts[bench] - 600 * share) <= 1, bench
    mmlu = queries.loc[queries["benchmark"] == "MMLU", "category"]
    gpqa = queries.loc[queries["benchmark"] == "GPQA", "category"]
    assert mmlu.str.startswith("mmlu_").all() and mmlu.nunique() > 20
    assert gpqa.str.match(r"gpqa_(main|diamond|extended)_").all()
    other = queries[~queries["benchmark"].isin(["MMLU", "GPQA"])]
    assert (other["category"] == other["benchmark"]).all()
    fractions = queries["split"].value_counts(normalize=True)
    assert abs(fractions["train"] - 0.8) < 0.02 and abs(fractions["test"] - 0.1) < 0.02


def test_accuracy_ordering_and_routing_headroom(small):
    queries, models, scores = small
    y = scores["score"].to_numpy().reshape(len(queries), len(models))
    by_bench = pd.Series(y.mean(axis=1)).groupby(queries["benchmark"].to_numpy()).mean()
    assert by_bench["GPQA"] < by_bench["MMLU"] < by_bench["PIQA"]
    assert by_bench["GPQA"] < 0.4 and by_bench["PIQA"] > 0.65
    oracle, best_single = y.max(axis=1).mean(), y.mean(axis=0).max()
    assert 0.8 < oracle < 0.97 and best_single < oracle - 0.15


def test_near_duplicate_models_agree_more_than_random_pairs(small):
    queries, models, scores = small
    y = scores["score"].to_numpy().reshape(len(queries), len(models))

    def agree(a, b):
        return (y[:, a] == y[:, b]).mean()

    typical = np.mean([agree(a, b) for a, b in [(0, 2), (3, 4), (10, 20), (30, 40)]])
    for a, b in synthetic.NEAR_DUPLICATES:
        assert agree(a, b) > typical + 0.05


def test_smaller_pool_is_a_prefix_of_the_full_pool(small):
    q, m, s = synthetic.build({**SMALL, "n_models": 7})
    assert m["model_id"].tolist() == list(range(7))
    full = small[2]
    pd.testing.assert_frame_equal(s.reset_index(drop=True), full[full["model_id"] < 7].reset_index(drop=True))


def test_partial_evaluation_mode():
    queries, models, scores = synthetic.build({**SMALL, "partial_fraction": 0.3, "n_models": 12})
    validate(queries, models, scores)
    per_model = scores.groupby("model_id")["prompt_id"].apply(frozenset)
    assert len(set(per_model)) == 12  # different query subsets
    assert abs(len(scores) / (len(queries) * 12) - 0.3) < 0.02
    split_of = dict(zip(queries["prompt_id"], queries["split"]))
    for subset in per_model:
        assert {split_of[p] for p in subset} == set(SPLITS)  # every model, every split
    tiny = synthetic.build({**SMALL, "partial_fraction": 0.001, "n_models": 5})[2]
    assert tiny.groupby("model_id").size().min() >= 3


@pytest.mark.parametrize(
    "bad",
    [
        {"n_queries": 10},
        {"partial_fraction": 0},
        {"split_fractions": [0.5, 0.5]},
        {"n_models": 113},
        {"colour": 1},
        {"seed": 1.5},
        {"n_queries": "many"},
        {"split_fractions": 0.8},
        {"partial_fraction": "half"},
        {"generator": 3},
        {"generator": 0},
        {"generator": 1.5},
        {"generator": "two"},
        {"generator": True},
    ],
)
def test_bad_parameters_raise_config_error(bad):
    with pytest.raises(ConfigError):
        synthetic.build(bad)


def test_defaults_are_documented():
    assert set(synthetic.PARAM_DOCS) == set(synthetic.DEFAULTS)
    assert synthetic.DEFAULTS["n_queries"] == 8000 and synthetic.DEFAULTS["n_models"] == 112
    assert synthetic.DEFAULTS["generator"] == 1 and synthetic.GENERATORS == (1, 2)


@pytest.mark.parametrize("params", [{}, SMALL, {"n_queries": 437, "split_fractions": [0.6, 0.25, 0.15]}])
def test_split_sizes_match_the_generated_splits(params):
    sizes = synthetic.split_sizes(params)
    assert set(sizes) == set(SPLITS) and sum(sizes.values()) == {**synthetic.DEFAULTS, **params}["n_queries"]
    if params:  # the 8000-query default is too slow to generate here
        queries = synthetic.build({**params, "n_models": 2})[0]
        assert queries["split"].value_counts().to_dict() == sizes


def test_split_sizes_is_cheap_and_refuses_small_splits():
    import time

    start = time.perf_counter()
    assert synthetic.split_sizes({"n_queries": 36_000})["train"] > 28_000
    assert time.perf_counter() - start < 0.5
    with pytest.raises(
        ConfigError,
        match=r"n_queries=40 .* gives train 34, val 4, test 2 queries; every split needs "
        r"at least 3 \(too small: test\)\. Raise n_queries to at least 43",
    ):
        synthetic.split_sizes({"n_queries": 40})
    with pytest.raises(ConfigError, match="too small: val"):
        synthetic.split_sizes({"n_queries": 600, "split_fractions": [0.995, 0.002, 0.003]})
    with pytest.raises(ConfigError, match="too small"):
        synthetic.build({"n_queries": 40})  # the adapter uses the same rule
    with pytest.raises(ConfigError, match="unknown parameter"):
        synthetic.split_sizes({"n_query": 10})


# ----------------------------------------------------------------------------------------------
# generator version 2 (locus.data.synthetic_v2) and the truth
# ----------------------------------------------------------------------------------------------
V2 = {**SMALL, "generator": 2}
STATS_PARAMS = {"generator": 2, "seed": 0, "n_queries": 2000}  # 112 models x 2,000 queries (docs/data-realism.md)


@pytest.fixture(scope="module")
def small_v2():
    return synthetic.build_with_truth(V2)


@pytest.fixture(scope="module")
def pool_v2():
    """(queries, models, scores, truth, binary correctness [queries x models] in prompt_id order)."""
    queries, models, scores, truth = synthetic.build_with_truth(STATS_PARAMS)
    correct = scores["score"].to_numpy().reshape(len(queries), len(models))
    return queries, models, scores, truth, correct


def test_v2_deterministic_for_a_seed_and_different_for_another(small_v2):
    again = synthetic.build_with_truth(V2)
    for a, b in zip(small_v2, again):
        pd.testing.assert_frame_equal(a, b)
    other = synthetic.build_with_truth({**V2, "seed": 4})
    assert not np.array_equal(other[2]["score"].to_numpy(), small_v2[2]["score"].to_numpy())
    assert not np.array_equal(other[3]["p_correct"].to_numpy(), small_v2[3]["p_correct"].to_numpy())


def test_v2_keeps_the_queries_models_and_layout_of_v1(small, small_v2):
    queries, models, scores, _ = small_v2
    pd.testing.assert_frame_equal(queries, small[0])  # same texts, benchmarks, splits
    pd.testing.assert_frame_equal(models, small[1])
    pd.testing.assert_frame_equal(scores[["prompt_id", "model_id"]], small[2][["prompt_id", "model_id"]])
    assert not np.array_equal(scores["score"].to_numpy(), small[2]["score"].to_numpy())
    validate(queries, models, scores)
    assert set(np.unique(scores["score"])) == {0.0, 1.0} and scores["score"].dtype == np.float64


def test_v2_partial_evaluations_and_prefix_pool_behave_as_in_v1():
    params = {**SMALL, "partial_fraction": 0.3, "n_models": 12}
    v1 = synthetic.build(params)
    queries, models, scores, truth = synthetic.build_with_truth({**params, "generator": 2})
    validate(queries, models, scores)
    pd.testing.assert_frame_equal(scores[["prompt_id", "model_id"]], v1[2][["prompt_id", "model_id"]])  # same mask
    split_of = dict(zip(queries["prompt_id"], queries["split"]))
    for subset in scores.groupby("model_id")["prompt_id"].apply(frozenset):
        assert {split_of[p] for p in subset} == set(SPLITS)
    assert len(truth) == len(scores) and abs(len(scores) / (len(queries) * 12) - 0.3) < 0.02
    full = synthetic.build_with_truth(V2)
    q7, m7, s7, t7 = synthetic.build_with_truth({**V2, "n_models": 7})
    pd.testing.assert_frame_equal(s7, full[2][full[2]["model_id"] < 7].reset_index(drop=True))
    pd.testing.assert_frame_equal(t7, full[3][full[3]["model_id"] < 7].reset_index(drop=True))
    assert synthetic.split_sizes({**SMALL, "generator": 2}) == queries["split"].value_counts().to_dict()


@pytest.mark.parametrize("generator", [1, 2])
def test_truth_has_one_row_per_evaluated_pair_and_matches_the_scores(generator):
    params = {**SMALL, "generator": generator, "partial_fraction": 0.5}
    queries, models, scores, truth = synthetic.build_with_truth(params)
    assert list(truth.columns) == ["prompt_id", "model_id", "p_correct"]
    assert truth["p_correct"].dtype == np.float32 and truth["prompt_id"].dtype == np.int64
    pd.testing.assert_frame_equal(truth[["prompt_id", "model_id"]], scores[["prompt_id", "model_id"]])
    assert not truth.duplicated(["prompt_id", "model_id"]).any()
    p = truth["p_correct"].to_numpy(dtype=float)
    assert np.isfinite(p).all() and p.min() >= 0 and p.max() <= 1
    assert abs(scores["score"].mean() - p.mean()) < 0.01
    for a, b in zip(synthetic.build(params), (queries, models, scores)):  # build = build_with_truth minus truth
        pd.testing.assert_frame_equal(a, b)


def test_v2_truth_is_calibrated_despite_the_shared_luck(pool_v2):
    """Within deciles of p_correct the share of correct answers is p_correct (2,000 x 112 pairs)."""
    _, _, big_scores, big_truth, _ = pool_v2
    bins = pd.qcut(big_truth["p_correct"].astype(float), 10, duplicates="drop")
    by_bin = pd.DataFrame({"y": big_scores["score"], "p": big_truth["p_correct"].astype(float), "bin": bins})
    means = by_bin.groupby("bin", observed=True)[["y", "p"]].mean()
    assert (means["y"] - means["p"]).abs().max() < 0.03, means


def _headline(queries, models, scores) -> dict:
    from locus.data import stats as S

    st = S.pool_statistics(validate(queries, models, scores))
    d = st["disagreement"]
    return {
        "disagreement": d["mean"],
        "disagreement_p05": d["p05"],
        "disagreement_p95": d["p95"],
        "shared_difficulty": st["shared_difficulty"]["value"],
        "pc1": st["pc1"]["value"],
        "accuracy_sd": st["accuracy_sd"]["value"],
        "nn_agreement": st["nn_agreement"]["value"],
    }


def test_v2_pool_statistics_are_inside_the_real_range(pool_v2):
    from locus.data import synthetic_v2

    queries, models, scores, _, _ = pool_v2
    values = _headline(queries, models, scores)
    print({k: round(v, 3) for k, v in values.items()})
    outside = {
        k: (round(values[k], 3), target, tol)
        for k, (target, tol) in synthetic_v2.CALIBRATION_TARGETS.items()
        if not abs(values[k] - target) <= tol
    }
    assert not outside, f"outside the documented tolerance (value, target, tolerance): {outside}"
    v1 = _headline(*synthetic.build({"seed": 0, "n_queries": 2000}))  # version 1 is far outside (the reason for 2)
    assert v1["shared_difficulty"] > 0.5 and v1["accuracy_sd"] < 0.1 and v1["nn_agreement"] > 0.83


def test_v2_near_duplicates_stay_near_duplicates(pool_v2):
    from locus.data import stats as S
    from locus.data import synthetic_v2

    correct = pool_v2[4]
    distance, _ = S.pairwise_disagreement(correct)
    np.fill_diagonal(distance, np.nan)
    for group in synthetic_v2.NEAR_DUPLICATES:
        for a in group:
            assert int(np.nanargmin(distance[a])) in group, (a, group)
            for b in group:
                if a != b:
                    assert distance[a, b] < 0.05, (a, b, distance[a, b])
    typical = np.nanmedian(distance)
    assert typical > 0.25


def test_v2_benchmark_levels_gpqa_near_chance_and_size_recency_ordering(pool_v2):
    queries, models, _, _, correct = pool_v2
    bench = queries["benchmark"].to_numpy()
    for name, target in synthetic.TARGET_ACCURACY.items():
        assert abs(correct[bench == name].mean() - target) < 0.03, name
    gpqa = correct[bench == "GPQA"].mean(axis=0)
    assert gpqa.mean() < 0.32 and gpqa.max() < 0.5  # chance is 0.25 with 4 options
    acc = pd.Series(correct.mean(axis=0), index=models["name"])
    assert (
        acc["meta-llama/Meta-Llama-3-70B-Instruct"]
        > acc["meta-llama/Llama-2-70b-chat-hf"]
        > acc["meta-llama/Llama-2-7b-chat-hf"]
    )
    assert acc.idxmax().startswith("meta-llama/Meta-Llama-3-70B")
    assert acc["meta-llama/LlamaGuard-7b"] < 0.05  # a safety classifier barely answers
