"""Metric definitions on hand-checked matrices: missing labels, ties, hit@k, references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from locus import evaluation
from locus.data.canonical import validate
from locus.runs import training_pairs

NAN = np.nan


def test_routing_hit_at_k_and_oracle():
    labels = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0], [NAN, 1, 0]], dtype=float)
    logits = np.array([[3, 2, 1], [0, 5, 1], [1, 2, 3], [9, 1, 0]], dtype=float)
    r = evaluation.routing_metrics(logits, labels, ks=(1, 2))
    # q0 routes to model 0 (wrong), hit@2 right; q1 routes to 1 (wrong), top2 = {1, 2} wrong;
    # q2 nobody right; q3 model 0 unlabelled -> ranked last, routes to model 1 (right)
    assert r["hit@1"] == pytest.approx(1 / 4)
    assert r["hit@2"] == pytest.approx(2 / 4)
    assert r["oracle"] == pytest.approx(3 / 4)
    assert r["random"] == pytest.approx((1 / 3 + 1 / 3 + 0 + 1 / 2) / 4)


def test_ties_go_to_lower_model_position():
    labels = np.array([[0, 1], [1, 0]], dtype=float)
    logits = np.zeros((2, 2))
    r = evaluation.routing_metrics(logits, labels, ks=(1,))
    assert r["hit@1"] == 0.5  # both queries route to model 0


def test_correctness_ignores_missing_pairs():
    labels = np.array([[1, NAN], [0, 1]], dtype=float)
    logits = np.array([[2.0, -50.0], [-1.0, -1.0]])
    c = evaluation.correctness_metrics(logits, labels)
    assert c["n_pairs"] == 3
    assert c["correctness_acc"] == pytest.approx(2 / 3)
    assert c["mean_label"] == pytest.approx(2 / 3)
    assert 0 < c["bce"] < 2 and 0 <= c["brier"] <= 1


def test_reference_rows_pick_best_single_on_validation():
    val = np.array([[1, 0], [1, 0], [0, 1]], dtype=float)  # model 0 best on val
    test = np.array([[0, 1], [0, 1], [1, 1]], dtype=float)  # but model 1 best on test
    ref = evaluation.reference_rows(val, test, np.array(["A", "A", "B"]))
    assert ref["best_single_position"] == 0
    assert ref["best_single"]["overall"] == pytest.approx(1 / 3)
    assert ref["oracle"]["overall"] == 1.0
    assert ref["best_single"]["B"] == 1.0


def _pool():
    q = pd.DataFrame(
        {
            "prompt_id": range(10),
            "prompt": [f"p{i}" for i in range(10)],
            "benchmark": "A",
            "category": "A",
            "split": ["train"] * 8 + ["val", "test"],
        }
    )
    m = pd.DataFrame({"model_id": [0, 1], "name": ["a", "b"]})
    s = pd.DataFrame({"prompt_id": list(range(10)) + [0, 1, 2, 8, 9], "model_id": [0] * 10 + [1] * 5, "score": 1.0})
    return validate(q, m, s)


def test_training_pairs_shared_and_per_model():
    data = _pool()
    shared = training_pairs(data, 4, seed=1, sampling="shared")
    a = set(shared[shared.model_id == 0].prompt_id)
    b = set(shared[shared.model_id == 1].prompt_id)
    assert len(a) == 4 and b <= a  # one query set; model 1 keeps only the pairs it was evaluated on
    assert shared.equals(training_pairs(data, 4, seed=1, sampling="shared"))
    per = training_pairs(data, 4, seed=1, sampling="per_model")
    assert len(per[per.model_id == 0]) == 4 and len(per[per.model_id == 1]) == 3  # only 3 train evals
    assert set(per.prompt_id) <= set(range(8))  # never val/test


def test_training_size_above_the_split_is_refused():
    from locus.errors import DataError

    with pytest.raises(DataError, match="train_size 9 exceeds the 8 queries of the train split"):
        training_pairs(_pool(), 9, seed=1, sampling="shared")


def test_validation_metrics_name_the_select_by_values():
    labels = np.array([[1, 0], [0, 1], [NAN, 1]], dtype=float)
    logits = np.array([[2.0, -2.0], [3.0, -1.0], [0.0, 1.0]])
    v = evaluation.validation_metrics(logits, labels)
    assert tuple(v) == evaluation.VALIDATION_METRICS
    assert v["val_routing"] == pytest.approx(2 / 3)
    assert v["val_acc"] == pytest.approx(evaluation.correctness_metrics(logits, labels)["correctness_acc"])
    assert v["val_bce"] == pytest.approx(evaluation.correctness_metrics(logits, labels)["bce"])
    empty = evaluation.validation_metrics(logits, np.full_like(labels, np.nan))
    assert all(np.isnan(x) for x in empty.values())


@pytest.mark.parametrize("seed", range(6))
def test_validation_metrics_equal_the_full_metrics(seed):
    """The fast selection values are exactly those of correctness_metrics / routing_metrics: missing labels,
    rows without any label, tied logits (ties to the lower model position), soft labels, NaN logits."""
    rng = np.random.default_rng(seed)
    logits = np.round(rng.normal(size=(60, 9)), 1)  # rounding makes ties
    labels = (rng.random((60, 9)) < 0.5).astype(float)
    if seed % 2:
        labels = rng.random((60, 9)).round(2)  # soft labels
    labels[rng.random((60, 9)) < 0.3] = NAN
    labels[:3] = NAN  # queries nobody was evaluated on
    if seed == 5:
        logits[rng.random((60, 9)) < 0.05] = NAN
    v = evaluation.validation_metrics(logits, labels)
    c = evaluation.correctness_metrics(logits, labels)
    assert v["val_routing"] == evaluation.routing_metrics(logits, labels, ks=(1,))["routing_acc"]
    if seed != 5:  # NaN logits make correctness NaN-ish in both; routing above is what selection reads
        assert v["val_acc"] == c["correctness_acc"]
        assert v["val_bce"] == c["bce"]


def test_routing_diversity_of_a_constant_router():
    labels = np.ones((6, 4))
    logits = np.tile([0.0, 3.0, 1.0, 2.0], (6, 1))  # always model 1
    counts = evaluation.choice_counts(logits, labels)
    assert counts.tolist() == [0, 6, 0, 0]
    d = evaluation.routing_diversity(counts)
    assert d == {"top_model": 1, "top_share": 1.0, "n_models_used": 1, "entropy": 0.0}


def test_routing_diversity_of_a_uniform_router():
    labels = np.ones((8, 4))
    logits = np.tile(np.eye(4), (2, 1))  # query i -> model i % 4
    d = evaluation.routing_diversity(evaluation.choice_counts(logits, labels))
    assert d["top_share"] == pytest.approx(0.25) and d["n_models_used"] == 4
    assert d["entropy"] == pytest.approx(1.0)
    assert d["top_model"] == 0  # four models tie: the lower position
    # two of four models, half each: entropy log 2 / log 4
    half = evaluation.routing_diversity([3, 0, 3, 0])
    assert half["entropy"] == pytest.approx(0.5) and half["n_models_used"] == 2 and half["top_model"] == 0


def test_routing_diversity_ties_and_missing_pairs():
    # q0: logits tie between models 0 and 2 -> model 0; q1: model 1 has the top logit but is not
    # evaluated -> never routed there, goes to model 2; q2: no label at all -> left out
    labels = np.array([[1, 0, 1], [0, NAN, 1], [NAN, NAN, NAN]], dtype=float)
    logits = np.array([[5, 1, 5], [0, 9, 1], [9, 0, 0]], dtype=float)
    assert evaluation.routed_models(logits, labels).tolist() == [0, 2, -1]
    counts = evaluation.choice_counts(logits, labels)
    assert counts.tolist() == [1, 0, 1]
    d = evaluation.routing_diversity(counts)
    assert d["top_share"] == 0.5 and d["n_models_used"] == 2 and d["top_model"] == 0
    assert d["entropy"] == pytest.approx(np.log(2) / np.log(3))
    empty = evaluation.routing_diversity([0, 0, 0])
    assert empty["n_models_used"] == 0 and np.isnan(empty["top_share"])
