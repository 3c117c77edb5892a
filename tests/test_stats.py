"""Pool statistics (`locus stats`, locus/data/stats.py) on hand-made matrices with values computed by hand.

Matrices are [queries x models]; NaN = not evaluated."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from locus.cli import main
from locus.data import stats as S
from locus.data.canonical import read_dataset, write_dataset
from locus.data.summary import render_summary

nan = np.nan

# three models A, B, C on four queries, complete:
# d(A,B) = 1/4 (q3), d(A,C) = 4/4, d(B,C) = 3/4 (q1, q2, q4)
ABC = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=float)
NAMES = ["A", "B", "C"]

# missing pairs: A = [1, 1, 0, -], B = [1, 0, -, 1], C = [-, 1, 0, 1]
# common queries: AB q1, q2 (differ q2) -> 1/2; AC q2, q3 (agree) -> 0; BC q2, q4 (differ q2) -> 1/2.
# Read as 0, the missing pairs would give 1/2 for every pair.
SPARSE = np.array([[1, 1, nan], [1, 0, 1], [0, nan, 0], [nan, 1, 1]], dtype=float)


def test_binarize_threshold_keeps_missing():
    out = S.binarize(np.array([[0.5, 0.49], [nan, 1.0]]))
    assert out[0].tolist() == [1.0, 0.0] and math.isnan(out[1, 0]) and out[1, 1] == 1.0


def test_hamming_distances_complete():
    d, common = S.pairwise_disagreement(ABC)
    assert d[0, 1] == pytest.approx(0.25) and d[0, 2] == pytest.approx(1.0) and d[1, 2] == pytest.approx(0.75)
    assert np.allclose(d, d.T) and np.all(np.diag(d) == 0) and np.all(common == 4)
    s = S.disagreement_summary(d)
    assert s["mean"] == pytest.approx(2 / 3) and s["pairs"] == 3
    # linear percentiles of [0.25, 0.75, 1.0]: position 0.1 -> 0.3, position 1.9 -> 0.975
    assert s["p05"] == pytest.approx(0.3) and s["p95"] == pytest.approx(0.975)
    # nearest neighbours: A-B 0.25, B-A 0.25, C-B 0.75 -> (0.75 + 0.75 + 0.25) / 3
    assert S.nn_agreement(d)["value"] == pytest.approx(1.75 / 3)


def test_hamming_distances_skip_missing_pairs():
    d, common = S.pairwise_disagreement(SPARSE)
    assert d[0, 1] == pytest.approx(0.5) and d[0, 2] == pytest.approx(0.0) and d[1, 2] == pytest.approx(0.5)
    assert common[0, 1] == common[0, 2] == common[1, 2] == 2
    # nearest: A-C 0, B 0.5, C-A 0
    assert S.nn_agreement(d)["value"] == pytest.approx(2.5 / 3)
    pairs = S.closest_pairs(d, common, NAMES)
    assert list(zip(pairs["model_a"], pairs["model_b"])) == [("A", "C"), ("A", "B"), ("B", "C")]


def test_pairs_without_common_queries_are_left_out():
    m = np.array([[1, nan, 1], [nan, 0, 0]], dtype=float)  # A and B share no query
    d, common = S.pairwise_disagreement(m)
    assert math.isnan(d[0, 1]) and common[0, 1] == 0
    s = S.disagreement_summary(d)
    assert s["pairs"] == 2 and s["pairs_without_common_queries"] == 1 and s["mean"] == pytest.approx(0.0)
    assert len(S.closest_pairs(d, common, NAMES)) == 2
    one = S.disagreement_summary(S.pairwise_disagreement(np.ones((3, 1)))[0])
    assert math.isnan(one["mean"]) and one["reason"] == "fewer than two models"


def test_pairwise_matches_a_loop_on_random_sparse_data():
    rng = np.random.default_rng(3)
    m = (rng.random((40, 7)) < 0.5).astype(float)
    m[rng.random(m.shape) < 0.3] = nan
    d, common = S.pairwise_disagreement(m)
    for i in range(7):
        for j in range(7):
            both = ~np.isnan(m[:, i]) & ~np.isnan(m[:, j])
            assert common[i, j] == both.sum()
            assert d[i, j] == pytest.approx(np.mean(m[both, i] != m[both, j]))


def test_closest_pairs_order_and_ties():
    d, common = S.pairwise_disagreement(ABC)
    pairs = S.closest_pairs(d, common, NAMES)
    assert pairs.to_dict("records") == [
        {"model_a": "A", "model_b": "B", "disagreement": 0.25, "common_queries": 4},
        {"model_a": "B", "model_b": "C", "disagreement": 0.75, "common_queries": 4},
        {"model_a": "A", "model_b": "C", "disagreement": 1.0, "common_queries": 4},
    ]
    same = np.tile(ABC[:, :1], (1, 4))  # four identical models: ties in model order
    d, common = S.pairwise_disagreement(same)
    pairs = S.closest_pairs(d, common, list("WXYZ"), k=4)
    assert list(zip(pairs["model_a"], pairs["model_b"])) == [("W", "X"), ("W", "Y"), ("W", "Z"), ("X", "Y")]


def test_shared_difficulty_and_pc1_complete():
    # query means 2/3, 2/3, 1/3, 1/3 around 1/2: variance 1/36; cells: variance 1/4 -> 1/9
    assert S.shared_difficulty_share(ABC)["value"] == pytest.approx(1 / 9)
    # centred columns: A, B and C = -A; the Gram matrix has eigenvalues 2, 0.5, 0 -> 2 / 2.5
    pc = S.pc1_share(ABC)
    assert pc["value"] == pytest.approx(0.8) and pc["dense_queries"] == 4
    # accuracies 3/4, 2/4, 1/4: population sd sqrt(1/24)
    assert S.accuracy_sd(ABC)["value"] == pytest.approx(math.sqrt(1 / 24))


def test_all_variance_is_query_difficulty():
    m = np.array([[1, 1, 1], [0, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=float)
    assert S.shared_difficulty_share(m)["value"] == pytest.approx(1.0)
    assert S.pc1_share(m)["value"] == pytest.approx(1.0)
    assert S.accuracy_sd(m)["value"] == 0.0
    assert S.disagreement_summary(S.pairwise_disagreement(m)[0])["mean"] == 0.0
    r = S.routing_references(m, NAMES)
    assert (r["oracle"], r["best_single"], r["headroom"], r["random"], r["contested"]) == (0.5, 0.5, 0.0, 0.5, 0.0)


def test_all_variance_is_model_skill():
    m = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=float)  # every query has the same mean
    assert S.shared_difficulty_share(m)["value"] == pytest.approx(0.0)
    flat = S.shared_difficulty_share(np.ones((3, 3)))
    assert math.isnan(flat["value"]) and "no variance" in flat["reason"]
    assert math.isnan(S.pc1_share(np.ones((3, 3)))["value"])


def test_shared_difficulty_and_pc1_with_missing_pairs():
    # per query (n_q, mean): (2, 1), (3, 2/3), (2, 0), (2, 1); grand mean 6/9 = 2/3
    # between: 2/9 + 0 + 8/9 + 2/9 = 4/3; total: 6 ones (1/9 each) + 3 zeros (4/9 each) = 2
    s = S.shared_difficulty_share(SPARSE)
    assert s["value"] == pytest.approx(2 / 3) and s["queries"] == 4
    pc = S.pc1_share(SPARSE)  # only q2 was evaluated by every model
    assert math.isnan(pc["value"]) and pc["dense_queries"] == 1 and "only one query" in pc["reason"]
    assert np.allclose(S.model_accuracy(SPARSE), [2 / 3, 2 / 3, 2 / 3])
    single = np.array([[1, nan], [nan, 0], [1, 0]], dtype=float)  # only q3 has two models
    assert S.shared_difficulty_share(single)["queries"] == 1


def test_routing_references_tiny():
    r = S.routing_references(ABC, NAMES)
    # every query has a right model; A is right on 3/4; per-query means 2/3, 2/3, 1/3, 1/3
    assert r["oracle"] == 1.0 and r["best_single"] == 0.75 and r["best_single_model"] == "A"
    assert r["headroom"] == pytest.approx(0.25) and r["random"] == pytest.approx(0.5) and r["contested"] == 1.0
    r = S.routing_references(SPARSE, NAMES)
    # oracle 1, 1, 0, 1; all accuracies 2/3 -> the first model; random (1 + 2/3 + 0 + 1) / 4
    assert r["oracle"] == 0.75 and r["best_single"] == pytest.approx(2 / 3) and r["best_single_model"] == "A"
    assert r["headroom"] == pytest.approx(0.75 - 2 / 3) and r["random"] == pytest.approx(2 / 3)
    assert r["contested"] == 0.25 and r["queries"] == 4
    empty = S.routing_references(np.full((2, 3), nan), NAMES)
    assert empty["queries"] == 0 and math.isnan(empty["oracle"])


def test_benchmark_spread():
    df = S.benchmark_spread(ABC, ["x", "x", "y", "y"], NAMES)
    x, y = df.to_dict("records")
    # x: A 1, B 1, C 0; y: A 1/2, B 0, C 1/2 (ties go to the first model)
    spread = [(r["min"], r["min_model"], r["max"], r["max_model"]) for r in (x, y)]
    assert spread == [(0, "C", 1, "A"), (0, "B", 0.5, "A")]
    assert x["mean"] == pytest.approx(2 / 3) and y["mean"] == pytest.approx(1 / 3)
    assert x["queries"] == 2 and x["models"] == 3


def test_to_json_is_strict():
    out = S.to_json({"a": nan, "b": [np.float64(1.5), np.int64(2)], "c": {"d": float("inf")}})
    assert json.loads(json.dumps(out, allow_nan=False)) == {"a": None, "b": [1.5, 2], "c": {"d": None}}


# ---------------------------------------------------------------------------------------------- data set + CLI
def _tiny_dataset(directory):
    """Three models, six queries (two per split, benchmarks x and y), one pair not evaluated, scores
    that are not 0/1 (>= 0.5 counts as right). Correctness (A, B, C):
    train q1 1 1 0, q2 1 - 0; val q3 1 0 0, q4 0 1 1; test q5 1 1 1, q6 0 1 0."""
    scores = {1: (1, 1, 0), 2: (0.7, None, 0.2), 3: (1, 0, 0), 4: (0, 1, 0.5), 5: (1, 1, 1), 6: (0, 0.9, 0)}
    q = pd.DataFrame(
        {
            "prompt_id": range(1, 7),
            "prompt": [f"question {i}" for i in range(1, 7)],
            "benchmark": ["x", "y"] * 3,
            "category": ["c"] * 6,
            "split": ["train", "train", "val", "val", "test", "test"],
        }
    )
    m = pd.DataFrame({"model_id": [10, 11, 12], "name": NAMES})
    rows = [(p, 10 + k, v) for p, vs in scores.items() for k, v in enumerate(vs) if v is not None]
    s = pd.DataFrame(rows, columns=["prompt_id", "model_id", "score"]).astype({"score": float})
    write_dataset(directory, q, m, s)
    return directory


def test_pool_statistics_on_a_data_set(tmp_path):
    st = S.pool_statistics(read_dataset(_tiny_dataset(tmp_path / "d")))
    assert st["basis"]["evaluated_pairs"] == 17 and st["basis"]["dense_queries"] == 5
    val, test, every = st["routing"]["val"], st["routing"]["test"], st["routing"]["all"]
    assert (val["oracle"], val["best_single"], val["best_single_model"], val["random"]) == (1.0, 0.5, "A", 0.5)
    assert (test["oracle"], test["best_single"], test["best_single_model"]) == (1.0, 1.0, "B")
    assert test["random"] == pytest.approx(2 / 3) and test["contested"] == 0.5
    # all: B is right on 4 of its 5 queries; random (2/3 + 1/2 + 1/3 + 2/3 + 1 + 1/3) / 6
    assert every["best_single"] == 0.8 and every["headroom"] == pytest.approx(0.2)
    assert every["random"] == pytest.approx(3.5 / 6)
    # AB: 3 of 5 common queries differ, AC: 4 of 6, BC: 2 of 5
    assert st["closest_pairs"][0] == {"model_a": "B", "model_b": "C", "disagreement": 0.4, "common_queries": 5}
    assert st["disagreement"]["mean"] == pytest.approx((0.6 + 4 / 6 + 0.4) / 3)


def test_stats_command(tmp_path, capsys):
    data = _tiny_dataset(tmp_path / "d")
    out = tmp_path / "stats.json"
    assert main(["stats", "--data", str(data), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "# Pool statistics" in text and "| B | C | 0.400 | 5 |" in text
    st = json.loads(out.read_text())
    assert st["routing"]["all"]["best_single_model"] == "B" and st["pc1"]["dense_queries"] == 5
    assert "Pool statistics" in render_summary(read_dataset(data), "tiny")


def test_stats_command_mistakes(tmp_path, capsys):
    assert main(["stats", "--data", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]
    data = _tiny_dataset(tmp_path / "d")
    assert main(["stats", "--data", str(data), "--json", str(tmp_path / "s.txt")]) == 2
    assert "expected a path ending in .json" in capsys.readouterr().err
    assert not (tmp_path / "s.txt").exists()
