"""Calibrated correctness probabilities (locus/calibration.py, run_artifacts.read_calibration): metrics on
predictors whose calibration is known, the fitted maps, the file and its refusals."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from locus import calibration, run_artifacts
from locus.calibration import Calibration, brier, ece, fit, log_loss, reliability
from locus.errors import DataError


def _logit(p):
    return np.log(p) - np.log1p(-p)


def calibrated_sample(n=40_000, seed=0):
    """Probabilities drawn U(0, 1) and outcomes drawn with exactly those probabilities."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.001, 0.999, n)
    return p, (rng.random(n) < p).astype(float)


def test_metrics_on_hand_made_cases():
    # two bins of two pairs: probabilities 0.2, 0.2 (one right) and 0.8, 0.8 (both right)
    p, y = np.array([0.8, 0.2, 0.2, 0.8]), np.array([1, 0, 1, 1])
    table = reliability(p, y, bins=2)
    assert table.columns.tolist() == ["bin", "mean_prob", "frac_correct", "count"]
    assert table["count"].tolist() == [2, 2]
    assert table["mean_prob"].tolist() == pytest.approx([0.2, 0.8])
    assert table["frac_correct"].tolist() == pytest.approx([0.5, 1.0])
    assert ece(p, y, bins=2) == pytest.approx(0.5 * 0.3 + 0.5 * 0.2)
    assert brier(p, y) == pytest.approx(np.mean([0.04, 0.04, 0.64, 0.04]))
    assert log_loss(p, y) == pytest.approx(-np.mean(np.log([0.8, 0.8, 0.2, 0.8])))
    # equal mass: 15 bins over 30 pairs hold two pairs each, even with every probability tied
    assert reliability(np.full(30, 0.5), np.r_[np.zeros(15), np.ones(15)])["count"].tolist() == [2] * 15
    with pytest.raises(ValueError, match="0 or 1"):
        ece(p, np.array([1, 0, 0.5, 1]))


def test_perfectly_calibrated_predictor_has_ece_near_zero_and_stays_close():
    p, y = calibrated_sample()
    assert ece(p, y) < 0.02
    cal, report = fit(_logit(p), y)
    q = cal.probabilities(_logit(p))
    assert ece(q, y) < 0.02
    assert np.mean(np.abs(q - p)) < 0.03
    assert log_loss(q, y) < log_loss(p, y) + 0.005
    assert set(report["cv_log_loss"]) == {"identity", "temperature", "isotonic"}
    assert report["chosen"] == cal.kind


def test_over_confident_predictor_is_improved_by_fitting():
    p, y = calibrated_sample(seed=1)
    logits = 3 * _logit(p)  # over-confident: true probability is sigmoid(logit / 3)
    raw = 1 / (1 + np.exp(-logits))
    cal, report = fit(logits, y)
    assert cal.kind in ("temperature", "isotonic")
    assert report["cv_log_loss"][cal.kind] < report["cv_log_loss"]["identity"]
    # judged on fresh pairs of the same predictor, not the fitting ones
    p2, y2 = calibrated_sample(seed=2)
    raw2, cal2 = 1 / (1 + np.exp(-3 * _logit(p2))), cal.probabilities(3 * _logit(p2))
    assert ece(raw, y) > 0.08 and ece(cal2, y2) < 0.02
    assert log_loss(cal2, y2) < log_loss(raw2, y2) - 0.05


@pytest.mark.parametrize("true_t", [0.5, 2.0, 4.0])
def test_temperature_recovers_a_known_temperature(true_t):
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 3, 50_000)
    y = (rng.random(logits.size) < 1 / (1 + np.exp(-logits / true_t))).astype(float)
    cal = calibration.fit_temperature(logits, y)
    assert cal.temperature == pytest.approx(true_t, rel=0.06)
    assert abs(cal.bias) < 0.05


def test_isotonic_knots_are_monotone_and_clipped():
    rng = np.random.default_rng(4)
    logits = rng.normal(0, 2, 2_000)
    y = (rng.random(logits.size) < 1 / (1 + np.exp(-logits))).astype(float)
    cal = calibration.fit_isotonic(logits, y)
    assert len(cal.knots_x) > 2
    assert (np.diff(cal.knots_x) >= 0).all() and (np.diff(cal.knots_y) >= 0).all()
    q = cal.probabilities(np.array([-1e6, 0.0, 1e6]))
    assert q[0] == calibration.EPS and q[2] == 1 - calibration.EPS and q[0] <= q[1] <= q[2]
    assert cal.probabilities(np.zeros((2, 3))).shape == (2, 3)


def test_choice_is_cross_validated_and_deterministic():
    # a calibrated predictor: in-sample isotonic would always beat the identity; the CV choice must not
    p, y = calibrated_sample(n=3_000, seed=5)
    groups = np.repeat(np.arange(300), 10)
    a = fit(_logit(p), y, groups=groups)
    b = fit(_logit(p), y, groups=groups)
    assert a == b
    in_sample = log_loss(calibration.fit_isotonic(_logit(p), y).probabilities(_logit(p)), y)
    assert in_sample < log_loss(p, y)  # the bias the cross-validation removes
    assert a[1]["cv_log_loss"]["isotonic"] > in_sample
    assert a[1]["n_groups"] == 300
    # too few pairs, or a single class: identity, said so
    cal, report = fit(np.array([0.1, 0.2]), np.array([1.0, 0.0]))
    assert cal == Calibration() and report["chosen"] == "identity"
    assert fit(np.arange(50.0), np.ones(50))[0] == Calibration()


def _identity(tag="a"):
    return {"weights_sha256": tag * 64, "metrics_sha256": "b" * 64}


def test_save_load_round_trip_and_refusals(tmp_path):
    p, y = calibrated_sample(n=2_000, seed=6)
    path = tmp_path / "run" / "calibration.json"
    for cal in (calibration.fit_temperature(3 * _logit(p), y), calibration.fit_isotonic(_logit(p), y), Calibration()):
        calibration.save(cal, path, _identity(), {"chosen": cal.kind})
        back = calibration.load(path, _identity())
        assert back == cal
        x = np.linspace(-8, 8, 33)
        assert np.array_equal(back.probabilities(x), cal.probabilities(x))
    fix = f"re-run `locus calibrate --run {tmp_path / 'run'}`."
    with pytest.raises(DataError) as err:
        calibration.load(path, _identity("c"))
    assert str(err.value) == f"{path}: fitted for another run (its run identity differs from this run's); {fix}"
    doc = json.loads(path.read_text())
    doc["map"] = {"kind": "temperature", "temperature": 2.0, "bias": 0.0}
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError) as err:
        calibration.load(path, _identity())
    assert str(err.value) == f"{path}: edited or damaged (its SHA-256 does not match its content); {fix}"
    path.write_text(path.read_text().replace("2.0", "NaN"))
    with pytest.raises(DataError, match=r"not a readable calibration file \(non-finite value NaN\)"):
        calibration.load(path, _identity())
    path.write_text("{")
    with pytest.raises(DataError, match="not a readable calibration file"):
        calibration.load(path, _identity())


def test_read_calibration_of_a_run(tiny, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny / "run", run)
    assert run_artifacts.read_calibration(run) is None
    identity = run_artifacts.run_identity(run)
    assert set(identity) == {"weights_sha256", "metrics_sha256"}
    cal = Calibration("temperature", temperature=1.5, bias=0.1)
    calibration.save(cal, run / run_artifacts.calibration_file, identity)
    assert run_artifacts.read_calibration(run) == cal
    # the same file beside a retrained run (other weights, other metrics.json) is refused
    (run / "metrics.json").write_text((run / "metrics.json").read_text() + " ")  # another file, same content
    with pytest.raises(DataError, match="fitted for another run"):
        run_artifacts.read_calibration(run)
