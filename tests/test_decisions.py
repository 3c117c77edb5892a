"""locus.decisions: Learn-then-Test thresholds, risk-coverage, cost-aware choices and AIQ on cases whose
answer is known."""

import math

import numpy as np
import pytest

from locus import decisions as d
from locus.errors import ConfigError


def draw(rng, n, low=0.5):
    """n queries x 3 models: model 1 is the top one with P(correct) = p ~ U(low, 1) (calibrated: its correctness
    is Bernoulli(p)); the others have lower probabilities. True risk among routed at tau: (1 - tau) / 2."""
    p = rng.uniform(low, 1.0, n)
    probs = np.column_stack([p - 0.2, p, p - 0.4])
    correct = np.column_stack([rng.random(n) < p - 0.2, rng.random(n) < p, rng.random(n) < p - 0.4]).astype(float)
    return probs, correct


def true_risk(tau):
    """E[1 - p | p >= tau] for p ~ U(0.5, 1) (tau inside [0.5, 1]; below 0.5 every query is routed)."""
    t = max(tau, 0.5)
    return (1 - t) / 2


def test_ltt_violation_frequency_is_at_most_delta_and_naive_threshold_violates_more():
    rng = np.random.default_rng(0)
    alpha, delta, sims = 0.1, 0.1, 400
    ltt_viol, naive_viol = 0, 0
    for _ in range(sims):
        probs, correct = draw(rng, 300)
        tau = d.learn_then_test_threshold(probs, correct, alpha, delta)
        ltt_viol += tau != d.NONE and true_risk(tau) > alpha
        # naive: the smallest threshold whose validation risk is <= alpha (no correction for the noise)
        curve = d.risk_coverage_curve(probs, correct, d.DEFAULT_GRID)
        ok = curve["tau"][curve["risk"] <= alpha]
        naive = ok.min() if len(ok) else d.NONE
        naive_viol += naive != d.NONE and true_risk(naive) > alpha
    # binomial noise of the frequency over 400 draws: sd <= sqrt(0.1 * 0.9 / 400) = 0.015
    assert ltt_viol / sims <= delta + 0.045
    assert naive_viol / sims > ltt_viol / sims + 0.15
    assert naive_viol / sims > 0.3


def test_ltt_certifies_a_useful_threshold_and_none_when_impossible():
    rng = np.random.default_rng(1)
    probs, correct = draw(rng, 2000)
    tau = d.learn_then_test_threshold(probs, correct, 0.1, 0.1)
    assert 0.8 <= tau <= 0.9  # true risk (1 - tau) / 2 <= 0.1 exactly from 0.8; LTT stays close above it
    # every model always wrong: nothing can be certified
    assert d.learn_then_test_threshold(probs, np.zeros_like(correct), 0.1, 0.1) == d.NONE
    # always right with enough queries: everything routed (tau = 0)
    assert d.learn_then_test_threshold(probs, np.ones_like(correct), 0.1, 0.1) == 0.0
    # too few queries to certify even without errors: (1 - 0.1)^n > 0.1 for n < 22
    assert d.min_routed(0.1, 0.1) == 22
    assert d.learn_then_test_threshold(probs[:21], np.ones_like(correct[:21]), 0.1, 0.1) == d.NONE


def test_binomial_p_value_by_hand():
    assert d.binomial_p_value(0, 2, 0.5) == pytest.approx(0.25)
    assert d.binomial_p_value(1, 3, 0.5) == pytest.approx(0.5)
    assert d.binomial_p_value(0, 0, 0.5) == 1.0


@pytest.mark.parametrize("alpha,delta", [(0, 0.1), (1, 0.1), (0.1, 0), (0.1, 1.5), ("x", 0.1), (0.1, math.nan)])
def test_bad_alpha_delta(alpha, delta):
    probs, correct = draw(np.random.default_rng(0), 20)
    with pytest.raises(ConfigError, match="must be a number in \\(0, 1\\)"):
        d.learn_then_test_threshold(probs, correct, alpha, delta)


def test_selective_choice_and_outcome():
    probs = np.array([[0.9, 0.2], [0.3, 0.6], [0.1, 0.95], [np.nan, 0.4]])
    correct = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
    cols, routed = d.selective_choice(probs, 0.6, fallback=0)
    assert cols.tolist() == [0, 1, 1, 0] and routed.tolist() == [True, True, True, False]
    out = d.selective_outcome(probs, correct, 0.6, fallback=0)
    assert out["coverage"] == 0.75 and out["risk"] == pytest.approx(1 / 3) and out["accuracy"] == 0.5
    cols, _ = d.selective_choice(probs, 0.6, "abstain")
    assert cols[3] == d.ABSTAIN and math.isnan(d.selective_outcome(probs, correct, 0.6, "abstain")["accuracy"])
    curve = d.risk_coverage_curve(probs, correct)
    assert curve["tau"].tolist() == [0.95, 0.9, 0.6, 0.4]
    assert curve["coverage"].tolist() == [0.25, 0.5, 0.75, 1.0]
    assert np.allclose(curve["risk"], [0, 0, 1 / 3, 1 / 4])


def test_cost_weighted_choice():
    probs = np.array([[0.9, 0.8, 0.3], [0.2, 0.5, 0.4], [0.6, np.nan, 0.55]])
    costs = np.array([10.0, 2.0, 1.0])
    assert d.choose_cost_weighted(probs, costs, 0).tolist() == np.nanargmax(probs, axis=1).tolist()
    assert d.choose_cost_weighted(probs, costs, 1e3).tolist() == [2, 2, 2]  # the cheapest
    # lam = 0.02: 0.9 - 0.2 = 0.7 < 0.8 - 0.04: model 1 wins the first query
    assert d.choose_cost_weighted(probs, costs, 0.02).tolist() == [1, 1, 2]
    assert d.choose_cheapest_above(probs, costs, 0.5).tolist() == [1, 1, 2]
    assert d.choose_cheapest_above(probs, costs, 0.95).tolist() == [0, 1, 0]  # none reaches it: argmax
    q, c = d.quality_and_cost([1, 1, 2], np.array([[1, 1, 0], [0, 0, 1], [1, 0, 1]], float), costs)
    assert q == pytest.approx(2 / 3) and c == pytest.approx(5 / 3)
    grid = d.lambda_grid(costs, 10)
    assert grid[0] == 0 and len(grid) == 10
    assert d.choose_cost_weighted(probs, costs, grid[-1]).tolist() == [2, 2, 2]


@pytest.mark.parametrize("lam", [-0.1, math.inf, "a"])
def test_bad_lambda(lam):
    with pytest.raises(ConfigError, match="lambda"):
        d.choose_cost_weighted(np.ones((1, 2)), [1, 2], lam)


@pytest.mark.parametrize("costs", [[-1.0, 2.0], [np.nan, 1.0], [1.0]])
def test_bad_costs(costs):
    with pytest.raises(ConfigError, match="costs"):
        d.choose_cost_weighted(np.ones((1, 2)), costs, 0.1)


def test_aiq_by_hand():
    # hull of (1, 0.5), (2, 0.7), (4, 0.6): (1, 0.5) -> (2, 0.7), then flat at 0.7 to cost 4;
    # area = (0.5 + 0.7) / 2 * 1 + 0.7 * 2 = 2.0; AIQ = 2.0 / 4 = 0.5
    assert d.aiq([1, 2, 4], [0.5, 0.7, 0.6]) == pytest.approx(0.5)
    assert d.nondecreasing_hull([1, 2, 4], [0.5, 0.7, 0.6]).tolist() == [[1, 0.5], [2, 0.7]]
    # a point under the chord is not on the hull: (1, 0.2), (2, 0.3), (3, 0.8) -> chord from 1 to 3
    # area = (0.2 + 0.8) / 2 * 2 = 1.0, / 3
    assert d.aiq([1, 2, 3], [0.2, 0.3, 0.8]) == pytest.approx(1 / 3)
    # one point, extended flat to a common max cost 4: 0.6 * (4 - 2) / 4
    assert d.aiq([2], [0.6], max_cost=4) == pytest.approx(0.3)
    with pytest.raises(ConfigError):
        d.aiq([1, -2], [0.5, 0.6])


def test_ties_of_calibrated_probabilities_go_to_the_larger_logit():
    """An isotonic map's flat steps give several models one probability; the model's own score (the logit)
    must still order them, never overturn a higher probability, and leave the lower column without logits."""
    probs = np.array([[0.7, 0.7, 0.2], [0.5, 0.5, 0.5]])
    logits = np.array([[0.1, 2.0, 5.0], [np.nan, -1.0, -3.0]])
    assert d.top_choice(probs, logits)[0].tolist() == [1, 1]
    assert d.top_choice(probs)[0].tolist() == [0, 0]
    assert d.choose_cost_weighted(probs, [1.0, 1.0, 1.0], 0.5, logits).tolist() == [1, 1]
    assert d.choose_cheapest_above(probs, [1.0, 1.0, 5.0], 0.6, logits).tolist() == [1, 1]
    cols, routed = d.selective_choice(probs, 0.6, "abstain", logits)
    assert cols.tolist() == [1, d.ABSTAIN] and routed.tolist() == [True, False]


def test_rankings_follow_the_logits_and_show_the_calibrated_probabilities():
    from locus.inference import rank

    logits = np.array([[0.1, 2.0, -1.0]])
    calibrated = np.array([[0.6, 0.6, 0.3]])  # a flat step ties the first two
    (ranking,) = rank(["q"], logits, np.array([10, 11, 12]), lambda m: f"m{m}", 3, calibrated)
    assert [(m, p) for m, _, p in ranking.models] == [(11, 0.6), (10, 0.6), (12, 0.3)]
    (plain,) = rank(["q"], logits, np.array([10, 11, 12]), lambda m: f"m{m}", 2)
    assert [m for m, _, _ in plain.models] == [11, 10] and plain.models[0][2] == 1 / (1 + np.exp(-2.0))


def sparse_top():
    """10 queries the top model gets wrong at probability 0.99, then 1000 it gets right at 0.8 (model 1 is never
    the most likely). With alpha's own skip count, alpha = 0.3 (7 queries) tests the 10 sparse queries, fails and
    stops, while alpha = 0.05 (45 queries) skips them and certifies everything: the old tau rose with alpha."""
    probs = np.vstack([np.tile([0.99, 0.1], (10, 1)), np.tile([0.8, 0.1], (1000, 1))])
    correct = np.vstack([np.tile([0.0, 0.0], (10, 1)), np.tile([1.0, 0.0], (1000, 1))])
    return probs, correct


def test_thresholds_are_monotone_in_alpha_where_one_alpha_at_a_time_is_not():
    probs, correct = sparse_top()
    alphas = [0.05, 0.1, 0.2, 0.3]
    assert [d.min_routed(a, 0.1) for a in alphas] == [45, 22, 11, 7]
    old = [d.learn_then_test_threshold(probs, correct, a, 0.1) for a in alphas]
    assert old[0] == 0.0 and old[-1] == d.NONE  # one alpha at a time: a looser level routes nothing
    new = d.learn_then_test_thresholds(probs, correct, alphas, 0.1)
    assert new.tolist() == [0.0, 0.0, 0.0, 0.0]
    # any order of the grid: tau never rises with alpha
    shuffled = [0.3, 0.05, 0.2, 0.1]
    taus = dict(zip(shuffled, d.learn_then_test_thresholds(probs, correct, shuffled, 0.1)))
    assert all(taus[a] >= taus[b] for a, b in zip(sorted(taus), sorted(taus)[1:]))
    # the common skip count is min_routed of the smallest alpha: the single-alpha call with it agrees
    for a, t in zip(alphas, new):
        assert d.learn_then_test_threshold(probs, correct, a, 0.1, min_count=45) == t


def test_thresholds_over_alphas_keep_the_guarantee_and_stay_monotone():
    rng = np.random.default_rng(5)
    alphas, delta, sims, viol = [0.05, 0.1, 0.15, 0.2], 0.1, 200, np.zeros(4)
    for _ in range(sims):
        probs, correct = draw(rng, 300)
        taus = d.learn_then_test_thresholds(probs, correct, alphas, delta)
        assert all(a >= b for a, b in zip(taus, taus[1:]))  # inf (none) first, then falling
        viol += [t != d.NONE and true_risk(t) > a for a, t in zip(alphas, taus)]
    assert (viol / sims <= delta + 0.06).all()  # sd of a frequency over 200 draws <= 0.021


def test_aiq_under_both_normalisations_by_hand():
    # frontier (2, 0.4) -> (4, 0.6) -> (8, 0.8), extended flat to c_max = 10; c_min = 2 (the cheapest point)
    # area = (0.4 + 0.6) / 2 * 2 + (0.6 + 0.8) / 2 * 4 + 0.8 * 2 = 1.0 + 2.8 + 1.6 = 5.4
    costs, quality = [2, 4, 8, 6], [0.4, 0.6, 0.8, 0.5]
    assert d.aiq(costs, quality, max_cost=10) == pytest.approx(5.4 / 10)  # RouterBench's code: / c_max
    assert d.aiq(costs, quality, max_cost=10, normalisation="range") == pytest.approx(5.4 / 8)  # paper: / range
    # a common c_min below the router's cheapest point: zero quality below it, the range is the compared one
    assert d.aiq(costs, quality, max_cost=10, min_cost=1, normalisation="range") == pytest.approx(5.4 / 9)
    assert d.aiq(costs, quality, 10, 0, "range") == pytest.approx(d.aiq(costs, quality, 10))  # c_min = 0: equal
    # a router of one point at c_max: 0 under both
    assert d.aiq([10], [0.9], max_cost=10) == 0 and d.aiq([10], [0.9], 10, 2, "range") == 0
    assert math.isnan(d.aiq([3], [0.9], normalisation="range"))  # an empty range
    with pytest.raises(ConfigError, match="min_cost"):
        d.aiq(costs, quality, 10, 3, "range")  # the router starts below the common cheapest cost
    with pytest.raises(ConfigError, match="normalisation"):
        d.aiq(costs, quality, normalisation="paper")


def test_aiqs_gives_each_normalisation_of_aiq_from_one_hull():
    costs, quality = [2, 4, 8, 6], [0.4, 0.6, 0.8, 0.5]
    both = d.aiqs(costs, quality, max_cost=10, min_cost=1)
    assert both == {norm: d.aiq(costs, quality, 10, 1, norm) for norm in d.AIQ_NORMALISATIONS}
    assert d.aiqs(costs, quality, 10, 3, ("max",)) == {"max": pytest.approx(5.4 / 10)}  # min_cost only for "range"
    with pytest.raises(ConfigError, match="min_cost"):
        d.aiqs(costs, quality, 10, 3)


def test_binomial_interval_and_expected_risk_by_hand():
    low, high = d.binomial_interval(0, 10, 0.95)
    assert low == 0 and high == pytest.approx(1 - 0.025 ** (1 / 10))  # Clopper-Pearson with no success
    low, high = d.binomial_interval(10, 10, 0.95)
    assert low == pytest.approx(0.025 ** (1 / 10)) and high == 1
    assert d.binomial_interval(0, 0) == (0.0, 1.0)
    probs = np.array([[0.9, 0.2], [0.3, 0.7], [0.5, 0.4], [np.nan, 0.95]])
    truth = np.array([[0.8, 0.1], [0.9, 0.6], [0.5, 0.5], [np.nan, 1.0]])
    # tau 0.6 routes queries 0, 1, 3 to models 0, 1, 1: true errors 0.2, 0.4, 0.0
    assert d.expected_risk(truth, probs, 0.6) == pytest.approx(0.2)
    assert d.expected_risk(truth, probs, 0.92) == pytest.approx(0.0)
    assert math.isnan(d.expected_risk(truth, probs, d.NONE))
