"""Calibrated correctness probabilities (locus/calibration.py, run_artifacts.read_calibration): metrics on
predictors whose calibration is known, the fitted maps, the file and its refusals."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
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


def test_weighted_ece_is_the_ece_of_the_weighted_pairs():
    p, y = calibrated_sample(n=997, seed=7)
    p = 0.5 + 0.8 * (p - 0.5) ** 3 * 4  # some miscalibration, so the ECE is not ~0
    keep = np.random.default_rng(8).random(p.size) < 0.6
    w = np.stack([np.ones(p.size), keep.astype(float)])
    got = calibration.ece_weighted(p, y, w, bins=7)
    assert got[0] == pytest.approx(ece(p, y, bins=7))
    assert got[1] == pytest.approx(ece(p[keep], y[keep], bins=7))
    assert got[1] != pytest.approx(got[0])


@pytest.fixture(scope="module")
def calibrated_runs(tiny, tmp_path_factory):
    """The tiny LOCUS run and a kNN run of seeds 0 and 1, each calibrated by `locus calibrate`."""
    from locus.cli import main
    from locus.runs import execute

    root = tmp_path_factory.mktemp("calibrated")
    runs = [root / "locus_s0"]
    shutil.copytree(tiny / "run", runs[0])
    for seed in (0, 1):
        runs.append(root / f"knn_s{seed}")
        execute("knn_router", {}, tiny / "data", tiny / "enc.parquet", 30, seed, runs[-1])
    for run in runs:
        assert main(["calibrate", "--run", str(run), "--data", str(tiny / "data")]) == 0
    return tiny, runs


def test_calibrate_command_writes_the_runs_map(calibrated_runs, capsys):
    tiny, runs = calibrated_runs
    for run in runs:
        doc = json.loads((run / "calibration.json").read_text())
        cal = run_artifacts.read_calibration(run)
        assert cal is not None and cal.kind == doc["fit"]["chosen"] == doc["map"]["kind"]
        assert doc["run"] == run_artifacts.run_identity(run)
        # fitted on validation only: 15 val queries x 6 models, folds over the 15 queries
        assert doc["fit"]["n_pairs"] == 90 and doc["fit"]["n_groups"] == 15
        assert set(doc["fit"]["cv_log_loss"]) == set(calibration.KINDS)
    # a map copied from another run is refused, with the one-line fix
    other = runs[1] / "calibration.json"
    shutil.copy(other, runs[2] / "calibration.json")
    with pytest.raises(DataError, match=rf"fitted for another run .*re-run `locus calibrate --run {runs[2]}`\.$"):
        run_artifacts.read_calibration(runs[2])
    from locus.cli import main

    assert main(["calibrate", "--run", str(runs[2]), "--data", str(tiny / "data")]) == 0
    assert run_artifacts.read_calibration(runs[2]) is not None
    # the data set is the run's own: a missing directory is named before any work
    assert main(["calibrate", "--run", str(runs[0]), "--data", str(tiny / "absent")]) == 2
    assert "absent" in capsys.readouterr().err


def test_calibration_report_writes_table_and_reliability_figure(calibrated_runs, tmp_path):
    from locus.cli import main
    from locus.experiments.calibration import CSV_COLUMNS, POINT_COLUMNS

    tiny, runs = calibrated_runs
    out, fig = tmp_path / "tables" / "calibration.tex", tmp_path / "figures" / "reliability.pdf"
    common = ["calibration-report", "--runs", *map(str, runs), "--data", str(tiny / "data")]
    common += ["--bootstrap-resamples", "200", "--data-label", "tiny set"]
    assert main([*common, "--out", str(out), "--figure", str(fig)]) == 0
    for path in (out, out.with_suffix(".csv"), fig, fig.with_suffix(".png"), fig.with_suffix(".csv")):
        assert path.is_file() and path.stat().st_size > 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert frame.columns.tolist() == CSV_COLUMNS
    assert frame["method"].tolist() == ["locus"] * 3 + ["knn_router"] * 3
    assert frame["metric"].tolist() == ["ece", "brier", "log_loss"] * 2
    assert frame["n_seeds"].tolist() == [1] * 3 + [2] * 3
    assert (frame["n_test_queries"] == 15).all() and (frame["n_test_pairs"] == 90).all()
    assert (frame["train_size"] == 30).all() and (frame["bins"] == 15).all()
    ece_rows = frame[frame["metric"] == "ece"]
    assert ece_rows[["raw", "calibrated"]].stack().between(0, 1).all()
    assert frame[frame["metric"] == "brier"][["raw", "calibrated"]].stack().between(0, 1).all()
    assert (frame[["raw", "calibrated"]] >= 0).all().all()
    np.testing.assert_allclose(frame["diff"], frame["calibrated"] - frame["raw"])
    assert (frame["ci_low"] <= frame["ci_high"]).all()
    means = frame[frame["metric"] != "ece"]  # percentile intervals of mean differences hold the estimate
    assert ((means["ci_low"] <= means["diff"] + 1e-12) & (means["diff"] <= means["ci_high"] + 1e-12)).all()
    # the numbers are the runs' own: the locus row's raw Brier recomputed from its test scores and labels
    from locus.data.canonical import read_dataset

    data = read_dataset(tiny / "data")
    ids, mids, logits = run_artifacts.read_scores(runs[0], "test")
    y = (data.label_matrix(ids, mids) >= 0.5).astype(float)
    assert frame.loc[1, "raw"] == pytest.approx(brier(1 / (1 + np.exp(-logits.astype(float))), y))
    points = pd.read_csv(fig.with_suffix(".csv"))
    assert points.columns.tolist() == POINT_COLUMNS
    assert set(points["kind"]) == {"raw", "calibrated"}
    assert points.groupby(["method", "kind"])["count"].sum().to_dict() == {
        ("knn_router", "calibrated"): 180,
        ("knn_router", "raw"): 180,
        ("locus", "calibrated"): 90,
        ("locus", "raw"): 90,
    }
    tex = out.read_text()
    assert "fitted on its validation pairs only" in tex and "200 resamples" in tex and "15 equal-mass" in tex
    assert "tiny set" in tex and "seed(s) 0, 1" in tex
    # the same inputs give the same numbers (seeded resampling)
    again = tmp_path / "again.tex"
    assert main([*common, "--out", str(again), "--figure", str(tmp_path / "again.pdf")]) == 2  # one CSV for both
    assert main([*common, "--out", str(again), "--figure", str(tmp_path / "again_fig.pdf")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(again.with_suffix(".csv")), frame)


def test_calibration_report_needs_calibrated_runs(tiny, tmp_path, capsys):
    from locus.cli import main

    run = tmp_path / "run"
    shutil.copytree(tiny / "run", run)
    argv = ["calibration-report", "--runs", str(run), "--data", str(tiny / "data")]
    argv += ["--out", str(tmp_path / "t.tex"), "--figure", str(tmp_path / "f.pdf")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"missing; run `locus calibrate --run {run}` first" in err and err.count("\n") == 1
    assert not (tmp_path / "t.tex").exists()


def _snakemake(tmp_path, *args):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-n", "--directory", str(tmp_path)]
    return subprocess.run([*cmd, *args], cwd=repo, capture_output=True, text=True, timeout=600)


def test_workflow_calibrates_the_runs_of_the_report(tmp_path):
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[1]
    schema = yaml.safe_load((repo / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert schema["properties"]["calibration"]["properties"]["bins"]["default"] == calibration.BINS
    tiny = repo / "tests" / "configs" / "tiny.yaml"  # train_sizes [32, 64]: the report takes the smallest
    res = _snakemake(tmp_path, "results/tables/calibration.tex", "--configfile", str(tiny))
    assert res.returncode == 0, res.stderr[-3000:] + res.stdout[-3000:]
    out = res.stdout
    for method, dim in (("locus", 16), ("embedllm", 16), ("knn_router", 0), ("kmeans_router", 0)):
        run = f"results/runs/synthetic/all-MiniLM-L6-v2/{method}/n32/d{dim}/s0"
        assert f"{run}/calibration.json" in out and f"locus calibrate --run {run} --data results/data/synthetic" in out
    assert "/n64/" not in out.split("rule calibration_report:")[1].split("\n\n")[0]
    assert "--bins 15 --bootstrap-resamples 2000" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("calibration: {train_size: 999}\n")
    res = _snakemake(tmp_path, "--configfile", str(bad))
    assert res.returncode != 0
    assert "calibration.train_size 999 must be one of train_sizes [256, 512, 1024]" in res.stderr + res.stdout
    assert "Traceback" not in res.stderr + res.stdout


@pytest.mark.parametrize("block", [None, 1, 4, 10_000])
@pytest.mark.parametrize("bins", [1, 3, 15])
def test_resampled_ece_equals_the_weighted_one(block, bins):
    rng = np.random.default_rng(9)
    groups = np.repeat(np.arange(40), 6)
    p = np.round(rng.random(groups.size) ** 2, 2)  # many ties
    y = (rng.random(p.size) < np.sqrt(p)).astype(float)
    counts = rng.multinomial(40, np.full(40, 1 / 40), size=30).astype(float)
    counts[0] = 0  # an empty resample: undefined
    counts[1, :39], counts[1, 39] = 0, 40  # one query drawn 40 times
    got = calibration.ece_resampled(p, y, groups, counts, bins, block)
    want = calibration.ece_weighted(p, y, counts[:, groups], bins)
    assert np.isnan(got[0]) and np.isnan(want[0])
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-12, atol=1e-14)
    assert calibration.ece_resampled(p, y, groups, np.ones((1, 40)), bins, block)[0] == pytest.approx(ece(p, y, bins))
