"""The paired bootstrap over test queries (locus.experiments.bootstrap) on hand-made score/label matrices
whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from locus import evaluation
from locus.experiments.bootstrap import Settings, paired_differences, per_query

NAN = np.nan


def routed_to(correct):
    """Logits and labels of two models (model 0 always right, model 1 always wrong) for a method that
    routes query q to model 0 exactly where ``correct[q]``: its hit@1 per query is ``correct``."""
    correct = np.asarray(correct, dtype=bool)
    logits = np.where(correct[:, None], [[2.0, -2.0]], [[-2.0, 2.0]])
    labels = np.tile([1.0, 0.0], (len(correct), 1))
    return logits, labels


def stacked(*runs):
    """[methods x queries] numerators / denominators of each metric for several runs."""
    values = [per_query(*r) for r in runs]
    return {m: (np.array([v[m][0] for v in values]), np.array([v[m][1] for v in values])) for m in values[0]}


def test_per_query_values_add_up_to_the_evaluation_metrics():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(60, 7)).round(1)  # rounded: many ties, broken towards the lower model_id
    labels = rng.random((60, 7)).round(1)
    labels[rng.random((60, 7)) < 0.3] = NAN
    labels[5] = NAN  # a query without any label
    v = per_query(logits, labels)
    routing = evaluation.routing_metrics(logits, labels)
    correct = evaluation.correctness_metrics(logits, labels)
    num, den = v["routing_acc"]
    assert num.sum() / den.sum() == pytest.approx(routing["routing_acc"]) and den.sum() == routing["n_queries"]
    num, den = v["correctness_acc"]
    assert num.sum() / den.sum() == pytest.approx(correct["correctness_acc"]) and den.sum() == correct["n_pairs"]


def test_missing_labels_are_skipped():
    # query 0: the top logit (model 0) is unlabelled -> routed to model 1 (labelled, second logit)
    # query 1: models 1 and 2 tie -> the lower model_id (1); query 2: no label at all -> not counted
    logits = np.array([[5.0, 1.0, -1.0], [0.0, 1.0, 1.0], [1.0, 2.0, 3.0]])
    labels = np.array([[NAN, 1.0, 0.0], [0.0, 0.0, 1.0], [NAN, NAN, NAN]])
    v = per_query(logits, labels)
    assert v["routing_acc"][0].tolist() == [1.0, 0.0, 0.0] and v["routing_acc"][1].tolist() == [1.0, 1.0, 0.0]
    # correctness: query 0 pairs (1: p>.5 vs 1 ok, 2: p<.5 vs 0 ok) = 2/2; query 1: (0: p=.5 -> 1 vs 0 wrong,
    # 1: 1 vs 0 wrong, 2: 1 vs 1 ok) = 1/3; query 2: 0/0
    assert v["correctness_acc"][0].tolist() == [2.0, 1.0, 0.0] and v["correctness_acc"][1].tolist() == [2.0, 3.0, 0.0]
    # the unlabelled query is dropped from the bootstrap
    d = stacked((logits, labels), (logits, labels))
    res = paired_differences(*d["routing_acc"], [(0, 1)], Settings(n_resamples=200))
    assert res.n_queries == 2 and res.diff.tolist() == [0.0]


def test_identical_methods_differ_by_zero_with_interval_zero():
    rng = np.random.default_rng(0)
    run = routed_to(rng.random(300) < 0.6)
    for metric, (num, den) in stacked(run, run).items():
        res = paired_differences(num, den, [(0, 1), (1, 0)], Settings(n_resamples=500))
        assert res.diff.tolist() == [0.0, 0.0], metric
        assert res.low.tolist() == [0.0, 0.0] and res.high.tolist() == [0.0, 0.0], metric
        assert res.includes_zero().all() and res.n_queries == 300 and res.n_resamples == 500


def test_always_right_against_always_wrong_is_one_hundred_points():
    n = 250
    d = stacked(routed_to(np.ones(n)), routed_to(np.zeros(n)))
    for metric in ("routing_acc", "correctness_acc"):
        res = paired_differences(*d[metric], [(0, 1), (1, 0)])
        assert res.diff.tolist() == [1.0, -1.0]
        assert res.low.tolist() == [1.0, -1.0] and res.high.tolist() == [1.0, -1.0]
        assert not res.includes_zero().any()


def test_fifty_fifty_covers_zero():
    # A is right on one half of the queries, B on the other half: equally good, the interval covers 0
    n = 400
    a = np.arange(n) % 2 == 0
    d = stacked(routed_to(a), routed_to(~a))
    res = paired_differences(*d["routing_acc"], [(0, 1)], Settings(n_resamples=2000, seed=1))
    assert res.diff[0] == 0.0
    assert res.low[0] < 0 < res.high[0] and res.includes_zero()[0]
    # the interval is about +-2 standard errors of a difference of +-1 per query: 2 * 1/sqrt(400) = 0.1
    assert res.high[0] == pytest.approx(0.1, abs=0.03) and res.low[0] == pytest.approx(-0.1, abs=0.03)


def test_pairing_keeps_a_consistent_small_difference_significant():
    # B equals A except on 30 of 600 queries, where only A is right: +5 points, tight and clear of 0;
    # an unpaired comparison of two 60% accuracies on 600 queries could not tell 5 points apart
    n = 600
    a = np.arange(n) < 360
    b = a & (np.arange(n) >= 30)
    d = stacked(routed_to(a), routed_to(b))
    res = paired_differences(*d["routing_acc"], [(0, 1)], Settings(n_resamples=2000))
    assert res.diff[0] == pytest.approx(0.05)
    assert 0.02 < res.low[0] < 0.05 < res.high[0] < 0.08 and not res.includes_zero()[0]


def test_seeded_and_deterministic():
    rng = np.random.default_rng(5)
    d = stacked(routed_to(rng.random(200) < 0.6), routed_to(rng.random(200) < 0.55), routed_to(rng.random(200) < 0.5))
    pairs = [(0, 1), (0, 2), (1, 2)]
    first = paired_differences(*d["routing_acc"], pairs, Settings(n_resamples=1000, seed=7))
    again = paired_differences(*d["routing_acc"], pairs, Settings(n_resamples=1000, seed=7))
    other = paired_differences(*d["routing_acc"], pairs, Settings(n_resamples=1000, seed=8))
    assert np.array_equal(first.low, again.low) and np.array_equal(first.high, again.high)
    assert not np.array_equal(first.low, other.low) or not np.array_equal(first.high, other.high)
    # a pair's interval does not depend on the other pairs asked for in the same call
    alone = paired_differences(*d["routing_acc"], [(1, 2)], Settings(n_resamples=1000, seed=7))
    assert alone.low[0] == first.low[2] and alone.high[0] == first.high[2]


def test_correctness_is_pooled_over_labelled_pairs():
    # query 0 has 3 labelled pairs, query 1 has 1: micro accuracy weighs pairs, not queries
    labels = np.array([[1.0, 1.0, 0.0], [1.0, NAN, NAN]])
    a = np.array([[1.0, 1.0, -1.0], [-1.0, 0.0, 0.0]])  # query 0: 3/3 right, query 1: 0/1
    b = np.array([[-1.0, -1.0, 1.0], [1.0, 0.0, 0.0]])  # query 0: 0/3, query 1: 1/1
    d = stacked((a, labels), (b, labels))
    res = paired_differences(*d["correctness_acc"], [(0, 1)], Settings(n_resamples=200))
    assert res.diff[0] == pytest.approx(3 / 4 - 1 / 4)


def test_seed_averaged_values_give_the_mean_over_seeds():
    n = 100
    seeds_a = [routed_to(np.arange(n) < k) for k in (60, 70)]  # 60% and 70%: mean 65%
    values = [per_query(*r)["routing_acc"] for r in seeds_a]
    num = np.mean([v[0] for v in values], axis=0)
    den = np.mean([v[1] for v in values], axis=0)
    ref = per_query(*routed_to(np.arange(n) < 50))["routing_acc"]
    res = paired_differences(np.stack([num, ref[0]]), np.stack([den, ref[1]]), [(0, 1)], Settings(n_resamples=300))
    assert res.diff[0] == pytest.approx(0.15)


def test_too_few_queries_and_bad_settings():
    d = stacked(routed_to([True]), routed_to([False]))
    res = paired_differences(*d["routing_acc"], [(0, 1)])
    assert res.n_queries == 1 and res.diff[0] == 1.0 and np.isnan(res.low[0]) and res.includes_zero()[0]
    with pytest.raises(ValueError, match="confidence"):
        Settings(confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        Settings(n_resamples=0)
    with pytest.raises(ValueError, match="outside"):
        paired_differences(*d["routing_acc"], [(0, 2)])


def test_a_table_sized_column_is_fast():
    import time

    rng = np.random.default_rng(0)
    runs = [routed_to(rng.random(800) < p) for p in (0.5, 0.55, 0.6, 0.62, 0.64, 0.66)]
    d = stacked(*runs)
    pairs = [(m, 0) for m in range(6)] + [(5, m) for m in range(6)]
    t0 = time.perf_counter()
    res = paired_differences(*d["routing_acc"], pairs, Settings(n_resamples=2000))
    assert time.perf_counter() - t0 < 10  # about 0.2 s on a loaded 2-core machine
    assert res.low.shape == (12,) and np.all(res.low <= res.diff) and np.all(res.diff <= res.high)
