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
    agree = lambda a, b: (y[:, a] == y[:, b]).mean()
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
    assert len(set(per_model)) == 12                                     # different query subsets
    assert abs(len(scores) / (len(queries) * 12) - 0.3) < 0.02
    split_of = dict(zip(queries["prompt_id"], queries["split"]))
    for subset in per_model:
        assert {split_of[p] for p in subset} == set(SPLITS)                # every model, every split
    tiny = synthetic.build({**SMALL, "partial_fraction": 0.001, "n_models": 5})[2]
    assert tiny.groupby("model_id").size().min() >= 3


@pytest.mark.parametrize("bad", [{"n_queries": 10}, {"partial_fraction": 0}, {"split_fractions": [0.5, 0.5]},
                                 {"n_models": 113}, {"colour": 1}, {"seed": 1.5},
                                 {"n_queries": "many"}, {"split_fractions": 0.8}, {"partial_fraction": "half"}])
def test_bad_parameters_raise_config_error(bad):
    with pytest.raises(ConfigError):
        synthetic.build(bad)


def test_defaults_are_documented():
    assert set(synthetic.PARAM_DOCS) == set(synthetic.DEFAULTS)
    assert synthetic.DEFAULTS["n_queries"] == 8000 and synthetic.DEFAULTS["n_models"] == 112


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
    with pytest.raises(ConfigError, match=r"n_queries=40 .* gives train 34, val 4, test 2 queries; every split needs "
                                          r"at least 3 \(too small: test\)\. Raise n_queries to at least 43"):
        synthetic.split_sizes({"n_queries": 40})
    with pytest.raises(ConfigError, match="too small: val"):
        synthetic.split_sizes({"n_queries": 600, "split_fractions": [0.995, 0.002, 0.003]})
    with pytest.raises(ConfigError, match="too small"):
        synthetic.build({"n_queries": 40})  # the adapter uses the same rule
    with pytest.raises(ConfigError, match="unknown parameter"):
        synthetic.split_sizes({"n_query": 10})
