"""Embedding geometry (locus.geometry, `locus geometry KIND`, workflow/rules/geometry.smk): the pure functions
on hand-made cases with known answers, the command end to end on tiny real runs (EmbedLLM and LOCUS trained on
a two-family toy pool), its errors, and the rules in the DAG."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.spatial.distance import pdist, squareform

from locus import evaluation
from locus import run_artifacts as ra
from locus.cli import main
from locus.data.canonical import write_dataset
from locus.data.encodings import data_fingerprint, write_encodings
from locus.errors import ConfigError, DataError
from locus.geometry import distances as gd
from locus.geometry import families as gf
from locus.geometry import neighbours as gn
from locus.runs import execute

REPO = Path(__file__).resolve().parents[1]
NAN = np.nan


# ------------------------------------------------------------------------------------------------
# distances and correlations
# ------------------------------------------------------------------------------------------------
def test_correctness_binarises_at_one_half_and_keeps_missing():
    out = gd.correctness([[0.5, 0.49, NAN, 1.0]])
    np.testing.assert_array_equal(out, [[1.0, 0.0, NAN, 1.0]])


def test_disagreement_by_hand_on_common_queries():
    c = np.array([[1, 1, 0], [1, 0, 0], [0, 0, NAN], [NAN, 1, 1]], dtype=float)
    rate, common = gd.disagreement(c)
    np.testing.assert_allclose(rate, [[0, 1 / 3, 1], [1 / 3, 0, 1 / 3], [1, 1 / 3, 0]])
    np.testing.assert_array_equal(common, [[3, 3, 2], [3, 4, 3], [2, 3, 3]])
    # two models without a common query: undefined, not 0
    rate, common = gd.disagreement(np.array([[1, NAN], [NAN, 0]]))
    assert np.isnan(rate[0, 1]) and common[0, 1] == 0


def test_weighted_disagreement_equals_repeated_queries():
    rng = np.random.default_rng(3)
    c = (rng.random((30, 5)) < 0.5).astype(float)
    c[rng.random(c.shape) < 0.2] = NAN
    w = rng.integers(0, 4, 30)
    rate_w, common_w = gd.disagreement(c, w)
    rate_r, common_r = gd.disagreement(np.repeat(c, w, axis=0))
    np.testing.assert_allclose(rate_w, rate_r)
    np.testing.assert_allclose(common_w, common_r)


def test_correlations_of_identical_and_reversed_rankings():
    x = np.array([1.0, 2, 3, 4, 5])
    assert gd.correlations(x, 2 * x + 1) == pytest.approx({"pearson": 1, "spearman": 1, "kendall": 1})
    cubic = gd.correlations(x, x**3)
    assert cubic["spearman"] == pytest.approx(1) and cubic["kendall"] == pytest.approx(1)
    assert cubic["pearson"] < 0.99
    assert gd.correlations(x, -x) == pytest.approx({"pearson": -1, "spearman": -1, "kendall": -1})
    assert all(np.isnan(v) for v in gd.correlations(x, np.ones(5)).values())
    # undefined pairs are skipped, not read as 0
    assert gd.correlations([1, 2, 3, 4], [1, 2, 3, NAN]) == pytest.approx({"pearson": 1, "spearman": 1, "kendall": 1})


def test_embedding_distances_by_hand():
    z = np.array([[1.0, 0], [0, 1], [1, 1]])
    cos = gd.embedding_distances(z, "cosine")
    assert cos[0, 1] == pytest.approx(1) and cos[0, 2] == pytest.approx(1 - 1 / np.sqrt(2))
    assert gd.embedding_distances(z, "euclidean")[0, 1] == pytest.approx(np.sqrt(2))
    np.testing.assert_allclose(gd.upper(cos), [cos[0, 1], cos[0, 2], cos[1, 2]])
    with pytest.raises(DataError, match="all zeros"):
        gd.embedding_distances(np.array([[0.0, 0], [1, 1]]), "cosine")
    with pytest.raises(ConfigError, match="unknown distance"):
        gd.embedding_distances(z, "manhattan")


def test_bootstrap_is_seeded_and_paired():
    rng = np.random.default_rng(0)
    c = (rng.random((40, 6)) < 0.5).astype(float)
    d = gd.upper(gd.embedding_distances(rng.normal(size=(6, 3)), "euclidean"))
    args = ({"a": c, "b": c.copy()}, {("a", "euclidean"): d, ("b", "euclidean"): d})
    one, two = gd.bootstrap_correlations(*args, 30, 7), gd.bootstrap_correlations(*args, 30, 7)
    np.testing.assert_array_equal(one[("a", "euclidean")], two[("a", "euclidean")])
    # the same resamples for every key: identical inputs give identical resampled correlations
    np.testing.assert_array_equal(one[("a", "euclidean")], one[("b", "euclidean")])
    other = gd.bootstrap_correlations(*args, 30, 8)
    assert not np.array_equal(one[("a", "euclidean")], other[("a", "euclidean")])
    assert one[("a", "euclidean")].shape == (30, 3)
    assert gd.percentile_interval([1.0, 2, 3, NAN, 4, 5], 0.5) == pytest.approx((2.0, 4.0, 5))


# ------------------------------------------------------------------------------------------------
# neighbours, proxies, fallback
# ------------------------------------------------------------------------------------------------
COLLINEAR = np.array([[0.0], [1.0], [3.0], [7.0]])


def known_rank(n_models: int, singular_values, dim: int = 12, seed: int = 0) -> np.ndarray:
    """[n_models x dim] embeddings whose centred matrix has exactly `singular_values`, plus one offset
    shared by every model (centring removes it)."""
    rng = np.random.default_rng(seed)
    k = len(singular_values)
    left = rng.normal(size=(n_models, k))
    left, _ = np.linalg.qr(left - left.mean(axis=0))  # orthonormal, centred columns
    right, _ = np.linalg.qr(rng.normal(size=(dim, k)))  # orthonormal directions in the embedding space
    return left @ np.diag(singular_values) @ right.T + rng.normal(size=dim)


@pytest.mark.parametrize("rank", [1, 2, 5, 12])
def test_participation_ratio_of_equal_spectrum_is_its_rank(rank):
    assert gd.participation_ratio(known_rank(40, [3.0] * rank)) == pytest.approx(rank)


def test_participation_ratio_weighs_the_spectrum():
    assert gd.participation_ratio(known_rank(30, [3.0, 1.0])) == pytest.approx(100 / 82)  # (9+1)^2 / (81+1)
    z = known_rank(30, [5.0, 5.0, 0.01])
    assert 2.0 < gd.participation_ratio(z) < 2.001  # a nearly flat third direction barely counts
    assert np.isnan(gd.participation_ratio(np.tile([1.0, 2.0, 3.0], (6, 1))))  # every model equal
    assert gd.participation_ratio(10 * z) == pytest.approx(gd.participation_ratio(z))  # scale-free


def test_without_influential_finds_the_outlying_models():
    # 20 models with unrelated distance and disagreement, plus 2 far-out models that are far in both:
    # they alone make the correlation look strong, and the check leaves exactly them out
    rng = np.random.default_rng(0)
    points = np.vstack([rng.normal(size=(20, 2)), [[40.0, 40.0], [-40.0, 40.0]]])
    x = squareform(pdist(points))
    noise = squareform(rng.uniform(0.3, 0.5, size=22 * 21 // 2))
    y = noise + (x > 20) * 0.5
    np.fill_diagonal(y, 0)
    full = gd.correlations(gd.upper(x), gd.upper(y))["pearson"]
    result = gd.without_influential(x, y, share=2 / 22)
    value, left_out = result["pearson"]
    assert full > 0.8
    assert sorted(left_out) == [20, 21]
    sub = np.ix_(range(20), range(20))
    assert value == pytest.approx(gd.correlations(gd.upper(x[sub]), gd.upper(y[sub]))["pearson"])
    assert abs(value) < 0.3
    assert set(result) == set(gd.CORRELATIONS)


def test_without_influential_needs_three_models_left():
    x = squareform(pdist(np.arange(3.0)[:, None]))
    assert gd.without_influential(x, x, share=0.5) == {
        c: (pytest.approx(np.nan, nan_ok=True), []) for c in gd.CORRELATIONS
    }


def test_bca_interval_is_scipys():
    x = np.random.default_rng(0).lognormal(size=60)  # skewed: BCa differs from the percentile interval
    res = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=4000, rng=np.random.default_rng(1))
    jack = np.array([np.delete(x, i).mean() for i in range(x.size)])
    low, high = gd.bca_interval(res.bootstrap_distribution, x.mean(), jack, 0.95)
    assert (low, high) == pytest.approx(tuple(res.confidence_interval), rel=1e-3)
    p_low, p_high, _ = gd.percentile_interval(res.bootstrap_distribution, 0.95)
    assert abs(low - p_low) > 1e-3 and abs(high - p_high) > 1e-3  # the correction did something


def test_estimate_outside_its_percentile_interval_gets_an_interval_containing_it():
    rng = np.random.default_rng(0)
    estimate = 0.9
    values = estimate - 0.001 - rng.exponential(0.01, size=200)  # skewed: 99% of resamples below the estimate
    values[:2] = estimate + 0.02  # and two far above
    low, high, _ = gd.percentile_interval(values, 0.95)
    assert not low <= estimate <= high  # the percentile interval excludes its own estimate
    jack = estimate + rng.normal(0, 0.001, size=100)
    low, high, kind = gd.interval_with_estimate(values, estimate, 0.95, jack)
    assert low <= estimate <= high and kind in ("bca", "recentred")
    # here BCa's bias correction pushes the interval past the estimate, so the re-centred one is used
    b_low, b_high = gd.bca_interval(values, estimate, jack, 0.95)
    assert not b_low <= estimate <= b_high and kind == "recentred"
    p_low, p_high, _ = gd.percentile_interval(values, 0.95)
    assert high - low == pytest.approx(p_high - p_low)  # the resamples' spread, moved onto the estimate
    # an interval that already contains its estimate stays the percentile one, and no jackknife is run
    inside = rng.normal(estimate, 0.01, size=200)
    never = lambda: pytest.fail("jackknife computed for a percentile interval that contains the estimate")  # noqa: E731
    assert gd.interval_with_estimate(inside, estimate, 0.95, never)[2] == "percentile"


def test_neighbour_order_on_collinear_points():
    d = gd.embedding_distances(COLLINEAR, "euclidean")
    np.testing.assert_array_equal(gn.neighbour_order(d), [[1, 2, 3], [0, 2, 3], [1, 0, 3], [2, 1, 0]])
    np.testing.assert_array_equal(gn.kth_neighbour(d, 1), [1, 0, 1, 2])
    np.testing.assert_array_equal(gn.kth_neighbour(d, 2), [2, 2, 0, 1])
    # equidistant neighbours: the lower position first
    tie = gd.embedding_distances(np.array([[0.0], [1.0], [2.0]]), "euclidean")
    np.testing.assert_array_equal(gn.neighbour_order(tie)[1], [0, 2])
    with pytest.raises(ValueError, match="between 1 and 3"):
        gn.kth_neighbour(d, 4)


def test_proxy_agreement_and_its_references_by_hand():
    agreement = np.array([[1, 0.8, 0.4], [0.8, 1, 0.6], [0.4, 0.6, 1]])
    order = np.array([[2, 1], [0, 2], [0, 1]])  # a deliberately poor embedding
    prox = gn.proxy_agreement(order, agreement, [1, 2])
    assert prox["mean"].tolist() == pytest.approx([(0.4 + 0.8 + 0.4) / 3, (0.8 + 0.6 + 0.6) / 3])
    assert prox["n"].tolist() == [3, 3]
    assert gn.random_agreement(agreement) == pytest.approx((0.6 + 0.7 + 0.5) / 3)
    assert gn.best_agreement(agreement, [1, 2]) == pytest.approx([(0.8 + 0.8 + 0.6) / 3, (0.4 + 0.6 + 0.4) / 3])
    # a model without a defined agreement with its neighbour is skipped
    agreement[0, 2] = NAN
    assert gn.proxy_agreement(order, agreement, [1])["n"].tolist() == [2]


def test_fallback_routing_by_hand():
    dist = gd.embedding_distances(np.array([[0.0], [1.0], [5.0]]), "euclidean")
    order = gn.neighbour_order(dist)  # 0: [1, 2], 1: [0, 2], 2: [1, 0]
    labels = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [NAN, 1, 0]], dtype=float)
    logits = np.array([[3, 1, 0], [0, 2, 1], [0, 0, 5], [9, 1, 0]], dtype=float)
    rows, routed = gn.routed_models(logits, labels)
    assert rows.all() and routed.tolist() == [0, 1, 2, 1]  # query 3: model 0 is not evaluated, never routed to
    original = labels[np.arange(4), routed].mean()
    assert original == pytest.approx(evaluation.routing_metrics(logits, labels)["routing_acc"]) == pytest.approx(0.75)
    acc, n = gn.fallback_accuracy(routed, labels, order, [1, 2])
    # k = 1: q0 -> 1 (0), q1 -> 0 (0), q2 -> 1 (1), q3 -> 2 (0: model 0 unevaluated, skipped); k = 2: q3 has none
    assert acc.tolist() == pytest.approx([0.25, 1.0]) and n.tolist() == [4, 3]
    assert gn.random_fallback(routed, labels) == pytest.approx((0.5 + 0.5 + 1 + 0) / 4)
    acc, n = gn.router_fallback(logits, labels, [1, 2])
    # 2nd choice: q0 -> 1 (0), q1 -> 2 (1), q2 -> 0 (1, tie to the lower id), q3 -> 2 (0); 3rd: 2 (1), 0 (0), 1 (1)
    assert acc.tolist() == pytest.approx([0.5, 2 / 3]) and n.tolist() == [4, 3]


# ------------------------------------------------------------------------------------------------
# families
# ------------------------------------------------------------------------------------------------
def test_tags_and_highlight_groups():
    tags = gf.parse_tags(["math;chat_instruct", None, "Code ; base", "code;math", NAN])
    assert tags[0] == {"math", "chat_instruct"} and tags[1] == frozenset() and tags[2] == {"code", "base"}
    assert gf.highlight_groups(tags, ("math", "code")).tolist() == ["math", "", "code", "math", ""]


def test_clustering_and_tag_separation_find_a_tight_family():
    rng = np.random.default_rng(0)
    z = np.vstack([rng.normal(0, 0.05, (3, 2)), rng.uniform(5, 50, (9, 2))])
    link, leaves, dist = gf.cluster(z, "euclidean", "average")
    assert sorted(leaves.tolist()) == list(range(12))
    positions = [leaves.tolist().index(i) for i in range(3)]
    assert max(positions) - min(positions) == 2  # the family sits together in the dendrogram order
    members = np.arange(12) < 3
    sep = gf.tag_separation(dist, members, n_perm=500, seed=0)
    assert sep["nn_same_tag"] == 1 and sep["nn_same_tag_chance"] == pytest.approx(2 / 11)
    assert sep["within_mean"] < 0.1 * sep["to_others_mean"] and sep["p_value"] < 0.02
    spread = gf.tag_separation(dist, np.arange(12) >= 9, n_perm=200, seed=0)
    assert spread["p_value"] > 0.02
    with pytest.raises(ConfigError, match="assumes Euclidean"):
        gf.cluster(z, "cosine", "ward")


# ------------------------------------------------------------------------------------------------
# the command end to end on real tiny runs
# ------------------------------------------------------------------------------------------------
TAGS = ["math;chat_instruct", "math", "math", "chat_instruct", "code", "code;base", "code", "chat_instruct"]
RUN_PARAMS = {
    "embedllm": {"dim": 4, "max_epochs": 5, "patience": 2, "lr": 0.01, "threads": 1},
    "locus": {
        "dim": 8,
        "heads": 2,
        "layers": 1,
        "latents": 8,
        "decoder_hidden": 16,
        "max_steps": 40,
        "eval_every": 10,
        "threads": 1,
    },
}


def toy_pool(root: Path, text: str = "q") -> tuple[Path, Path]:
    """Two families of four models (good at math or at code queries), 200 queries (60 test)."""
    rng = np.random.default_rng(0)
    n_q, group = 200, np.array([0, 0, 0, 0, 1, 1, 1, 1])
    kind = rng.integers(0, 2, n_q)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n_q),
            "prompt": [f"{text} {i}" for i in range(n_q)],
            "benchmark": np.where(kind == 0, "math", "code"),
            "category": "c",
            "split": ["train"] * 100 + ["val"] * 40 + ["test"] * 60,
        }
    )
    models = pd.DataFrame({"model_id": np.arange(8) * 10, "name": [f"org/m{i}" for i in range(8)], "tags": TAGS})
    y = (rng.random((n_q, 8)) < np.where(kind[:, None] == group[None, :], 0.85, 0.2)).astype(float)
    pid, mid = np.meshgrid(np.arange(n_q), models["model_id"], indexing="ij")
    write_dataset(
        root / "data",
        queries,
        models,
        pd.DataFrame({"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": y.ravel()}),
    )
    vectors = np.c_[kind, 1 - kind, rng.normal(size=(n_q, 4))].astype(np.float32)
    write_encodings(
        root / "enc.parquet",
        queries["prompt_id"],
        vectors,
        "toy",
        False,
        data_fingerprint(queries["prompt_id"], queries["prompt"]),
    )
    return root / "data", root / "enc.parquet"


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    root = tmp_path_factory.mktemp("geometry")
    data, enc = toy_pool(root)
    for method, params in RUN_PARAMS.items():
        execute(method, params, data, enc, 64, 0, root / method)
    return root


def geometry(root: Path, kind: str, out: str, *extra, runs=("locus", "embedllm")) -> int:
    return main(
        [
            "geometry",
            kind,
            "--runs",
            *(str(root / r) for r in runs),
            "--data",
            str(root / "data"),
            "--out",
            str(root / "out" / out),
            *extra,
        ]
    )


def test_distance_correlation_table_and_figure(pool):
    assert geometry(pool, "distance-correlation", "pairs.pdf") == 0
    assert all((pool / "out" / f"pairs.{ext}").is_file() for ext in ("pdf", "png", "csv"))
    pairs = pd.read_csv(pool / "out" / "pairs.csv")
    assert len(pairs) == 2 * 28 and set(pairs["method"]) == {"locus", "embedllm"}
    # a disagreement by hand from the canonical data: binary test correctness of m0 and m4
    scores = pd.read_parquet(pool / "data" / "scores.parquet")
    test = scores[scores["prompt_id"] >= 140].pivot(index="prompt_id", columns="model_id", values="score") >= 0.5
    row = pairs[(pairs["method"] == "locus") & (pairs["model_a"] == 0) & (pairs["model_b"] == 40)].iloc[0]
    assert row["disagreement"] == pytest.approx((test[0] != test[40]).mean()) and row["common_queries"] == 60

    assert geometry(pool, "distance-correlation", "table.tex", "--n-boot", "50") == 0
    table = pd.read_csv(pool / "out" / "table.csv").set_index(["method", "correlation", "distance"])
    locus = pairs[pairs["method"] == "locus"]
    for corr, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
        for d in ("cosine", "euclidean"):
            cell = table.loc[("locus", corr, d)]
            assert cell["value"] == pytest.approx(fn(locus[d], locus["disagreement"])[0])
            assert cell["ci_low"] <= cell["value"] <= cell["ci_high"] and cell["n_boot"] == 50 and cell["n_pairs"] == 28
            assert cell["interval"] in gd.INTERVALS and 1 <= cell["effective_dim"] <= cell["embedding_dim"]
            assert cell["diff_to_reference"] == 0 and cell["diff_ci_low"] == cell["diff_ci_high"] == 0
    other = table.loc[("embedllm", "pearson", "cosine")]
    assert other["reference"] == "locus" and other["diff_ci_low"] <= other["diff_to_reference"] <= other["diff_ci_high"]
    assert set(table["diff_interval"]) <= set(gd.INTERVALS)
    tex = (pool / "out" / "table.tex").read_text()
    assert "\\label{tab:performance_distance_correlation}" in tex and "over 50 resamples" in tex
    assert "percentile intervals" in tex and "Effective dimensionality" in tex
    assert table["effective_dim"].groupby(level="method").nunique().eq(1).all()  # one value per method
    assert f"{table.loc[('locus', 'pearson', 'cosine'), 'value']:.3f}" in tex
    # seeded: the same command gives the same intervals
    first = (pool / "out" / "table.csv").read_bytes()
    assert geometry(pool, "distance-correlation", "table.tex", "--n-boot", "50") == 0
    assert (pool / "out" / "table.csv").read_bytes() == first


def test_nearest_neighbour_proxies(pool):
    assert geometry(pool, "neighbours", "prox.pdf", "--max-k", "10") == 0
    frame = pd.read_csv(pool / "out" / "prox.csv")
    curve = frame[(frame["method"] == "locus") & (frame["curve"] == "embedding_neighbour")]
    assert curve["k"].tolist() == list(range(1, 8))  # capped at the 7 other models
    # k = 1 by hand from the pairs' cosine distances and disagreements
    assert geometry(pool, "distance-correlation", "pairs.pdf") == 0
    pairs = pd.read_csv(pool / "out" / "pairs.csv")
    pairs = pairs[pairs["method"] == "locus"]
    both = pd.concat([pairs, pairs.rename(columns={"model_a": "model_b", "model_b": "model_a"})])
    nearest = both.sort_values(["model_a", "cosine", "model_b"]).groupby("model_a").first()
    assert curve["agreement"].iloc[0] == pytest.approx((1 - nearest["disagreement"]).mean())
    rand = frame[(frame["method"] == "locus") & (frame["curve"] == "random_other")]["agreement"].iloc[0]
    assert rand == pytest.approx((1 - both.groupby("model_a")["disagreement"].mean()).mean())


def test_fallback_routing(pool):
    assert geometry(pool, "fallback", "fb.pdf", "--max-k", "3") == 0
    frame = pd.read_csv(pool / "out" / "fb.csv")
    for method in ("locus", "embedllm"):
        part = frame[frame["method"] == method]
        refs = part[part["k"].isna()].set_index("curve")
        metrics = json.loads((pool / method / "metrics.json").read_text())
        assert refs.loc["original", "accuracy"] == pytest.approx(metrics["test"]["overall"]["routing_acc"])
        assert refs.loc["best_single", "accuracy"] == pytest.approx(metrics["reference"]["best_single"]["overall"])
        curve = part[part["curve"] == "embedding_neighbour"]
        assert curve["k"].tolist() == [1, 2, 3]
        np.testing.assert_allclose(curve["retention"], curve["accuracy"] / refs.loc["original", "accuracy"])
    # k = 1 for LOCUS by plain loops over the run's files
    from locus import run_artifacts as ra

    pids, mids, logits = ra.read_scores(pool / "locus", "test")
    ids, z = ra.read_embeddings(pool / "locus")
    z = z[np.argsort(ids)]
    y = (
        pd.read_parquet(pool / "data" / "scores.parquet")
        .pivot(index="prompt_id", columns="model_id", values="score")
        .loc[pids, mids]
        .to_numpy()
    )
    hits = []
    for q in range(len(pids)):
        routed = int(np.argmax(logits[q]))
        cos = [
            1 - z[routed] @ z[m] / np.linalg.norm(z[routed]) / np.linalg.norm(z[m]) if m != routed else np.inf
            for m in range(len(mids))
        ]
        hits.append(y[q, int(np.argmin(cos))])
    k1 = frame[(frame["method"] == "locus") & (frame["curve"] == "embedding_neighbour") & (frame["k"] == 1)]
    assert k1["accuracy"].iloc[0] == pytest.approx(np.mean(hits))


def test_families_figure_prints_each_tags_statistic_legibly_at_single_column_width():
    """Drawn at 3.3 in (its printed width) with every text >= 6 pt; each highlighted tag's ratio and
    permutation p-value (as the JSON carries them) in the legend; a 100-model pool draws no model names."""
    from locus.render.figures import plt
    from locus.render.geometry import FAMILY_FIGURE_WIDTH, FAMILY_MIN_FONT, SAVE_PAD, families_figure, p_text

    rng = np.random.default_rng(0)
    z = rng.normal(size=(100, 4))
    link, leaves, dist = gf.cluster(z)
    groups = np.array(["math"] * 10 + ["code"] * 9 + [""] * 81, dtype=object)
    names = [f"org/a-rather-long-model-name-{i}" for i in range(100)]
    sep = {
        "math": gf.tag_separation(dist, groups == "math", n_perm=99, seed=0),
        "code": {**gf.tag_separation(dist, groups == "code", n_perm=99, seed=0), "p_value": 0.01},
    }
    fig = families_figure(link, leaves, dist, names, groups, ("math", "code"), "title", "sub", sep, 0.87)
    fig.canvas.draw()
    texts = [t for t in fig.findobj(lambda o: hasattr(o, "get_text") and hasattr(o, "get_fontsize")) if t.get_text()]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0].startswith(
        f"math (10 models): within/others distance ratio {sep['math']['ratio']:.2f}, p = {sep['math']['p_value']:.3f}"
    )
    assert legend[1].startswith("code (9 models)") and "p ≤ 0.01" in legend[1]  # the test's floor, 1/(99+1)
    assert "nearest neighbour also math" in legend[0]
    assert min(t.get_fontsize() for t in texts) >= FAMILY_MIN_FONT
    assert not any(t.get_text().startswith("org/") for t in texts)  # no unreadable names
    assert any("cophenetic correlation 0.87" in t.get_text().replace("\n", " ") for t in texts)
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    assert box.width + 2 * SAVE_PAD <= FAMILY_FIGURE_WIDTH + 0.02  # printed at 1:1 in a single column
    plt.close(fig)
    assert p_text(float("nan")) == "p n/a" and p_text(0.2168) == "p = 0.217"


def test_families_figure(pool):
    assert geometry(pool, "families", "fam.pdf", "--n-perm", "99", runs=("locus",)) == 0
    summary = json.loads((pool / "out" / "fam.json").read_text())
    assert sorted(summary["leaves"]) == [0, 10, 20, 30, 40, 50, 60, 70]
    assert summary["distance"] == "euclidean" and summary["linkage"] == "average"
    assert summary["tag_counts"]["math"] == 3 and summary["separation"]["code"]["n_models"] == 3
    assert summary["separation"]["math"]["n_perm"] == 99
    heat = pd.read_csv(pool / "out" / "fam.csv")
    assert len(heat) == 64 and heat["row_model_id"].iloc[::8].tolist() == summary["leaves"]
    square = heat.pivot(index="row_position", columns="col_position", values="distance").to_numpy()
    np.testing.assert_allclose(square, square.T)
    assert np.allclose(np.diag(square), 0)
    assert heat.set_index("row_name")["row_highlight"].fillna("").to_dict()["org/m0"] == "math"
    assert (pool / "out" / "fam.png").stat().st_size > 0
    # the PDF is the printed size: single-column width (3.3 in = 237.6 pt, save_figure's padding included)
    box = re.search(rb"MediaBox\s*\[\s*0 0 ([0-9.]+) ([0-9.]+)", (pool / "out" / "fam.pdf").read_bytes())
    assert box and float(box.group(1)) <= 3.3 * 72 + 2


def copy_run(pool: Path, name: str, new: str) -> Path:
    dst = pool / new
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(pool / name, dst)
    return dst


@pytest.mark.parametrize(
    "case, message",
    [
        ("two runs for families", "draws one run's embeddings"),
        ("tex for a figure", "writes a figure"),
        ("the same method twice", "both runs of locus"),
        ("a method without embeddings", "has no model embeddings"),
        ("test queries in training", "training evaluations are on test queries"),
        ("another data set", "trained on another data set"),
    ],
)
def test_errors_exit_2_with_one_line(pool, capsys, case, message):
    kind, out, runs = "neighbours", "err.pdf", ["locus", "embedllm"]
    if case == "two runs for families":
        kind = "families"
    elif case == "tex for a figure":
        out = "err.tex"
    elif case == "the same method twice":
        runs = ["locus", "locus"]
    elif case == "a method without embeddings":
        run = copy_run(pool, "locus", "fake_knn")
        metrics = json.loads((run / "metrics.json").read_text())
        (run / "metrics.json").write_text(json.dumps({**metrics, "method": "knn_router"}))
        runs = ["fake_knn"]
    elif case == "test queries in training":
        run = copy_run(pool, "locus", "leaky")
        pairs = pd.read_parquet(run / "train_pairs.parquet")
        pairs.loc[0, "prompt_id"] = 150
        pairs.drop_duplicates(["prompt_id", "model_id"]).to_parquet(run / "train_pairs.parquet", index=False)
        # as a run that really trained on a test query would record it (else the digest check stops it first)
        metrics = json.loads((run / "metrics.json").read_text())
        metrics[ra.DIGESTS] = ra.file_digests(run, "locus")
        (run / "metrics.json").write_text(json.dumps(metrics))
        runs = ["leaky"]
    elif case == "another data set":
        toy_pool(pool / "other", text="another question")
        code = main(
            [
                "geometry",
                kind,
                "--runs",
                str(pool / "locus"),
                "--data",
                str(pool / "other" / "data"),
                "--out",
                str(pool / "out" / out),
            ]
        )
        runs = None
    if runs is not None:
        code = geometry(pool, kind, out, runs=tuple(runs))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not (pool / "out" / "err.pdf").exists()


# ------------------------------------------------------------------------------------------------
# workflow
# ------------------------------------------------------------------------------------------------
def snakemake_dry(tmp_path, *args):
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-n",
        "-p",
        "--directory",
        str(tmp_path),
        *args,
    ]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_rule_geometry_builds_every_geometry_output(tmp_path):
    res = snakemake_dry(tmp_path, "geometry")
    assert res.returncode == 0, res.stderr + res.stdout
    out = res.stdout
    for rule in (
        "distance_correlation_table",
        "performance_distance_correlation_figure",
        "models_family_clustering_figure",
        "nearest_neighbor_proxies_figure",
        "fallback_routing_figure",
    ):
        assert f"rule {rule}:" in out
    run = "results/runs/synthetic/all-MiniLM-L6-v2/{}/n4096/d{}/s0"
    for method, dim in (("locus", 128), ("embedllm", 232), ("irt_net", 232)):
        assert f"{run.format(method, dim)}/embeddings.parquet" in out
    assert f"locus geometry fallback --runs {run.format('locus', 128)} {run.format('embedllm', 232)}" in out
    assert "--n-boot 200 --boot-seed 0" in out and "--metric euclidean --linkage average" in out
    assert "results/logs/geometry/fallback_routing.log" in out


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("geometry: {neighbours: {max_kk: 3}}", "max_kk"),
        ("geometry: {neighbours: {reference_method: embedllm_plus}}", "not among geometry.methods"),
        ("geometry: {methods: [locus, knn_router]}", "has no model embeddings"),
    ],
)
def test_geometry_config_errors_at_dag_build_time(tmp_path, yaml_text, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml_text + "\n")
    res = snakemake_dry(tmp_path, "geometry", "--configfile", str(bad))
    assert res.returncode != 0 and message in res.stderr + res.stdout, (res.stderr + res.stdout)[-3000:]
