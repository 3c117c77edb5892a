"""Sample-efficiency factors on isotonic fits of the curves, with paired bootstrap intervals over test
queries (locus.experiments.sample_efficiency, locus.experiments.sample_efficiency_ci, `locus figure
sample-efficiency --runs/--metrics --data`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.isotonic import IsotonicRegression

from locus.cli import main
from locus.experiments import figures
from locus.experiments import sample_efficiency as se
from locus.experiments import sample_efficiency_ci as ci

GRID = [64, 128, 256, 512, 1024, 2048, 4096]
NOISY_LOCUS = [0.673, 0.680, 0.695, 0.740, 0.720, 0.727, 0.713]  # one seed, a single noisy peak at 512
STEADY = [0.62, 0.64, 0.66, 0.68, 0.70, 0.72, 0.74]  # +2 points per doubling


def curve_frame(curves: dict, std=0.0, n_seeds=1) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"method": m, "train_size": n, "mean": a, "std": std, "n_seeds": n_seeds}
            for m, (sizes, accs) in curves.items()
            for n, a in zip(sizes, accs)
        ]
    )


# ---------------------------------------------------------------------------------------------- isotonic
def test_isotonic_fit_known_by_hand_and_equal_to_sklearn():
    fit = se.isotonic(GRID, NOISY_LOCUS)
    # the peak and everything after it pool into one block: mean(0.740, 0.720, 0.727, 0.713) = 0.725
    np.testing.assert_allclose(fit, [0.673, 0.680, 0.695, 0.725, 0.725, 0.725, 0.725], atol=1e-12)
    assert len(set(fit[3:].tolist())) == 1  # the plateau is exactly flat (first crossings depend on it)
    # input order is kept; the fit is that of sklearn's IsotonicRegression on log2 n
    perm = np.random.default_rng(0).permutation(len(GRID))
    np.testing.assert_array_equal(se.isotonic(np.array(GRID)[perm], np.array(NOISY_LOCUS)[perm]), fit[perm])
    rows = np.random.default_rng(1).random((50, len(GRID)))
    expected = np.array([IsotonicRegression(increasing=True).fit_transform(np.log2(GRID), r) for r in rows])
    np.testing.assert_array_equal(se.isotonic(GRID, rows), expected)
    with pytest.raises(ValueError, match="distinct"):
        se.isotonic([64, 64], [0.5, 0.6])


def test_factor_comes_from_the_fit_not_from_a_noisy_peak():
    curve = curve_frame({"locus": (GRID, NOISY_LOCUS), "m": (GRID, STEADY)})
    table, summary = se.efficiency(curve, "locus")
    at = summary["methods"]["m"]["at_reference_point"]
    # reference point 512 (middle of 64..4096); target = fit(512) = 0.725, reached by LOCUS at 512 and by
    # the steady curve a quarter of the way from 2048 to 4096 in log2: 2**11.25 / 2**9 = 2**2.25
    assert summary["reference_point"] == 512 and at["target"] == pytest.approx(0.725)
    assert at["crossing"] == "exact" and at["n_reference"] == pytest.approx(512)
    assert at["n_method"] == pytest.approx(2**11.25) and at["factor"] == pytest.approx(2**2.25)
    # on the raw curve the peak (0.740 at 512) would give 4096 / 512 = 8x
    assert se.factor(GRID, NOISY_LOCUS, GRID, STEADY, 0.740)["factor"] == pytest.approx(8.0)
    # no per-query values: no interval, nothing annotated
    assert at["status"] == "no_interval" and summary["methods"]["m"]["annotated"] is None
    assert set(table.status) == {"no_interval"} and not table.annotated.any()
    assert math.isnan(at["ci_low"]) and math.isnan(at["ci_high"])
    assert (table["n"] == 512).sum() == 1  # the reference point is one of the targets


def test_unmeasured_reference_point_becomes_a_target():
    curve = curve_frame({"locus": (GRID, STEADY), "m": (GRID, [a - 0.04 for a in STEADY])})
    table, summary = se.efficiency(curve, "locus", reference_point=450)
    assert (table["n"] == 450).sum() == 1
    assert summary["methods"]["m"]["at_reference_point"]["factor"] == pytest.approx(4.0)  # 2 doublings


# ---------------------------------------------------------------------------------------------- vectorised
def test_vectorised_crossings_and_bounds_match_the_scalar_rules():
    rng = np.random.default_rng(3)
    accs = rng.random((40, len(GRID)))  # non-monotone on purpose
    targets = rng.random((40, 9))
    n, code = ci.crossings(GRID, accs, targets)
    names = {ci.EXACT: "exact", ci.AT_START: "at_start", ci.NOT_REACHED: "not_reached"}
    for b in range(40):
        for t in range(9):
            n1, status = se.first_crossing(GRID, accs[b], targets[b, t])
            assert names[code[b, t]] == status
            assert (math.isnan(n1) and math.isnan(n[b, t])) or n[b, t] == pytest.approx(n1, rel=1e-12)
    ref = np.sort(rng.random((40, len(GRID))), axis=1)
    lo, hi = ci.factor_bounds(GRID, ref, GRID, accs, targets)
    for b in range(40):
        for t in range(9):
            f = se.factor(GRID, ref[b], GRID, accs[b], targets[b, t])
            if f["crossing"] == "exact":
                assert lo[b, t] == hi[b, t] == pytest.approx(f["factor"], rel=1e-12)
            else:
                assert lo[b, t] < hi[b, t]


def test_censored_resamples_are_bounded_on_the_side_they_are_known():
    sizes = [64, 128, 256]
    ref = np.array([[0.5, 0.6, 0.7]])

    def bounds(m_accs, target):
        lo, hi = ci.factor_bounds(sizes, ref, sizes, np.array([m_accs]), np.array([[target]]))
        return lo.item(), hi.item()

    assert bounds([0.40, 0.50, 0.55], 0.6) == (pytest.approx(256 / 128), math.inf)  # M never: k > 256/128
    assert bounds([0.65, 0.70, 0.75], 0.6) == (0.0, pytest.approx(64 / 128))  # M at start: k <= 1/2
    assert bounds([0.40, 0.45, 0.50], 0.5) == (pytest.approx(256 / 64), math.inf)  # R at start, M at 256
    assert bounds([0.60, 0.70, 0.80], 0.5) == (0.0, math.inf)  # both at start
    # interval: lower end from the lower bounds, upper end from the upper bounds
    lo = np.r_[np.full(97, 2.0), [3.0, 3.0, 3.0]]
    hi = np.r_[np.full(97, 2.0), [math.inf] * 3]
    low, high, share = ci.interval(lo[:, None], hi[:, None])
    assert low.item() == 2.0 and high.item() == math.inf and share.item() == pytest.approx(0.97)
    low, high, _ = ci.interval(lo[:, None], np.r_[np.full(98, 2.0), [math.inf] * 2][:, None])
    assert high.item() == 2.0  # 2 of 100 censored above: within the 2.5% tail


# ---------------------------------------------------------------------------------------------- bootstrap
Q = 1500


def skills(sizes, shift):
    """P(correct) at each size: +0.1 per doubling, `shift` doublings behind the reference."""
    return {n: 0.3 + 0.1 * (math.log2(n / 64) - shift) for n in sizes}


def cells_from(correct: dict) -> tuple[dict, pd.DataFrame]:
    """(method, n) -> 0/1 per query  ->  QueryValues-like cells and the curve of their means."""
    cells = {k: {"routing_acc": (v.astype(float), np.ones(Q))} for k, v in correct.items()}
    curve = pd.DataFrame(
        [{"method": m, "train_size": n, "mean": v.mean(), "std": 0.0, "n_seeds": 1} for (m, n), v in correct.items()]
    )
    return cells, curve


def draws(seed, methods: dict) -> dict:
    rng = np.random.default_rng(seed)
    return {(m, n): rng.random(Q) < p for m, ps in methods.items() for n, p in ps.items()}


def test_identical_methods_interval_holds_one_and_nothing_is_annotated():
    sizes = [64, 128, 256, 512, 1024]
    correct = draws(0, {"locus": skills(sizes, 0)})
    correct.update({("twin", n): v.copy() for (_, n), v in list(correct.items())})
    cells, curve = cells_from(correct)
    boot = ci.resampled_curves(cells, curve, "routing_acc", n_boot=300, seed=0)
    assert boot["locus"].shape == (300, len(sizes))
    np.testing.assert_array_equal(boot["locus"], boot["twin"])  # one resample for every method
    table, summary = se.efficiency(curve, "locus", resampled=boot)
    at = summary["methods"]["twin"]["at_reference_point"]
    assert at["factor"] == pytest.approx(1.0) and at["ci_low"] <= 1 <= at["ci_high"]
    assert at["status"] == "not_significant" and summary["methods"]["twin"]["annotated"] is None
    assert not table.annotated.any() and "significant" not in set(table.status)


def test_separated_methods_interval_excludes_one_and_is_annotated():
    sizes = [64, 128, 256, 512, 1024, 2048, 4096]
    correct = draws(1, {"locus": skills(sizes[:5], 0), "slow": skills(sizes, 2)})  # slow: 4x the samples
    cells, curve = cells_from(correct)
    boot = ci.resampled_curves(cells, curve, "routing_acc", n_boot=300, seed=0)
    table, summary = se.efficiency(curve, "locus", resampled=boot)
    info = summary["methods"]["slow"]
    at = info["at_reference_point"]
    assert summary["reference_point"] == 256 and at["crossing"] == "exact"
    assert 2.5 < at["factor"] < 6 and 1 < at["ci_low"] < at["factor"] < at["ci_high"] < 10
    assert at["status"] == "significant" and info["annotated"] == "at_reference_point"
    assert at["share_defined"] == 1.0
    drawn = table[table.annotated]
    assert len(drawn) == 1 and drawn["n"].item() == 256 and drawn["method"].item() == "slow"


def test_same_seed_same_interval_other_seed_other_interval():
    sizes = [64, 128, 256, 512, 1024]
    correct = draws(2, {"locus": skills(sizes, 0), "m": skills(sizes, 1)})
    cells, curve = cells_from(correct)

    def run(seed):
        boot = ci.resampled_curves(cells, curve, "routing_acc", n_boot=200, seed=seed)
        return se.efficiency(curve, "locus", resampled=boot)[0][["ci_low", "ci_high", "share_defined"]]

    pd.testing.assert_frame_equal(run(0), run(0))
    assert not run(0).equals(run(1))
    # the stream does not depend on how many resamples are drawn at once
    a = ci.resampled_accuracies(cells[("m", 64)]["routing_acc"][0][None], np.ones((1, Q)), 250, 5)
    b = ci.resampled_accuracies(cells[("m", 64)]["routing_acc"][0][None], np.ones((1, Q)), 130, 5)
    np.testing.assert_array_equal(a[:130], b)


def test_metrics_and_scores_must_agree():
    correct = draws(3, {"locus": skills([64, 128], 0)})
    cells, curve = cells_from(correct)
    curve.loc[0, "mean"] += 0.01
    with pytest.raises(Exception, match="pass the data set the runs were trained on"):
        ci.resampled_curves(cells, curve, "routing_acc", n_boot=10)


# ---------------------------------------------------------------------------------------------- CLI
N_TEST = 400
TEST_IDS = np.arange(100, 100 + N_TEST)


@pytest.fixture
def data(tmp_path):
    """Two models: model 0 right on every query, model 1 wrong on every one (hit@1 = routed to model 0)."""
    from locus.data.canonical import write_dataset

    split_ids = {"train": np.arange(0, 60), "val": np.arange(60, 100), "test": TEST_IDS}
    queries = pd.DataFrame(
        [
            {"prompt_id": int(i), "prompt": f"query {i}", "benchmark": "b", "category": "c", "split": split}
            for split, ids in split_ids.items()
            for i in ids
        ]
    )
    models = pd.DataFrame({"model_id": [0, 1], "name": ["always/right", "always/wrong"]})
    scores = pd.DataFrame(
        [(int(i), m, 1.0 - m) for i in queries["prompt_id"] for m in (0, 1)], columns=["prompt_id", "model_id", "score"]
    )
    write_dataset(tmp_path / "data", queries, models, scores)
    return tmp_path / "data"


def write_run(root, method, n, seed, correct) -> str:
    """A run directory: metrics.json (routing = share of `correct`) and scores_test.parquet routing test
    query i to model 0 exactly where correct[i]."""
    run = root / "runs" / method / f"n{n}" / f"s{seed}"
    run.mkdir(parents=True)
    acc = float(np.mean(correct))
    block = {"overall": {"routing_acc": acc, "correctness_acc": acc}}
    run.joinpath("metrics.json").write_text(
        json.dumps(
            {
                "method": method,
                "params": {},
                "train_size": n,
                "seed": seed,
                "sampling": "shared",
                "encoder": "enc",
                "dataset": "data",
                "val": block,
                "test": block,
            }
        )
    )
    logits = np.where(np.asarray(correct)[:, None], [[1.0, -1.0]], [[-1.0, 1.0]]).astype(np.float32)
    pd.DataFrame(
        {"prompt_id": np.repeat(TEST_IDS, 2), "model_id": np.tile([0, 1], N_TEST), "logit": logits.reshape(-1)}
    ).to_parquet(run / "scores_test.parquet")
    return str(run)


@pytest.fixture
def runs(tmp_path):
    """LOCUS at 64..1024, a twin of it (same scores), a baseline needing 8x the samples (64..8192); two seeds."""
    rng = np.random.default_rng(7)
    dirs = []
    for seed in (0, 1):
        for n in [64, 128, 256, 512, 1024, 2048, 4096, 8192]:
            steps = math.log2(n / 64)
            if n <= 1024:
                correct = rng.random(N_TEST) < 0.25 + 0.12 * steps
                dirs += [write_run(tmp_path, "locus", n, seed, correct), write_run(tmp_path, "twin", n, seed, correct)]
            dirs.append(write_run(tmp_path, "embedllm", n, seed, rng.random(N_TEST) < 0.25 + 0.12 * (steps - 3)))
    return dirs


def test_cli_runs_and_data_give_intervals_and_annotate_only_significant(tmp_path, data, runs, capsys):
    out = tmp_path / "fig" / "se.pdf"
    assert (
        main(
            [
                "figure",
                "sample-efficiency",
                "--runs",
                *runs,
                "--data",
                str(data),
                "--out",
                str(out),
                "--n-boot",
                "200",
                "--boot-seed",
                "3",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "locus vs twin" in printed and "annotated: none" in printed
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["bootstrap"] == {"n_boot": 200, "seed": 3, "n_queries": N_TEST}
    twin, base = summary["methods"]["twin"], summary["methods"]["embedllm"]
    assert twin["at_reference_point"]["status"] == "not_significant" and twin["annotated"] is None
    assert base["at_reference_point"]["status"] == "significant" and base["annotated"] == "at_reference_point"
    assert 4 < base["at_reference_point"]["factor"] < 16 and base["at_reference_point"]["ci_low"] > 1
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert list(frame.columns) == figures.CSV_COLUMNS
    assert set(frame.kind) == {"curve", "seed", "isotonic", "factor"}  # these runs record no best_single
    assert (frame.kind == "seed").sum() == len(runs) and frame[frame.kind == "seed"].seed.notna().all()
    fit = frame[(frame.kind == "isotonic")].groupby("method")["mean"]
    assert all(np.all(np.diff(v.to_numpy()) >= 0) for _, v in fit)  # the fits are monotone
    assert frame[frame.annotated == True].method.tolist() == ["embedllm"]  # noqa: E712
    # censored above: targets beyond the baseline's reach have an unbounded interval, written "inf" in JSON
    assert np.isinf(frame[frame.kind == "factor"].ci_high).any()
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    # --metrics (the runs' metrics.json) gives the very same numbers
    out2 = tmp_path / "fig2" / "se.pdf"
    metrics = [f"{r}/metrics.json" for r in runs]
    assert (
        main(
            [
                "figure",
                "sample-efficiency",
                "--metrics",
                *metrics,
                "--data",
                str(data),
                "--out",
                str(out2),
                "--bootstrap-resamples",
                "200",
                "--bootstrap-seed",
                "3",
            ]
        )
        == 0
    )
    assert json.loads(out2.with_suffix(".json").read_text()) == summary


def test_cli_without_data_has_no_intervals(tmp_path, runs, capsys):
    out = tmp_path / "se.pdf"
    assert main(["figure", "sample-efficiency", "--runs", *runs, "--out", str(out)]) == 0
    assert "no --data" in capsys.readouterr().out
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["bootstrap"] is None
    assert {i["at_reference_point"]["status"] for i in summary["methods"].values()} == {"no_interval"}
    assert all(i["annotated"] is None for i in summary["methods"].values())


def test_cli_input_errors(tmp_path, data, runs, capsys):
    out = str(tmp_path / "se.pdf")
    metrics = [f"{r}/metrics.json" for r in runs]
    assert main(["figure", "sample-efficiency", "--runs", *runs, "--metrics", *metrics, "--out", out]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["figure", "sample-efficiency", "--out", out]) == 2
    assert "--runs (run directories) or --metrics" in capsys.readouterr().err
    assert (
        main(["figure", "sample-efficiency", "--runs", *runs, "--data", str(data), "--out", out, "--metric", "hit@3"])
        == 2
    )
    assert "not hit@3" in capsys.readouterr().err
    # a metrics.json that disagrees with its scores file
    path = tmp_path / "runs" / "twin" / "n64" / "s0" / "metrics.json"
    m = json.loads(path.read_text())
    m["test"]["overall"]["routing_acc"] += 0.05
    path.write_text(json.dumps(m))
    assert (
        main(["figure", "sample-efficiency", "--runs", *runs, "--data", str(data), "--out", out, "--n-boot", "20"]) == 2
    )
    assert "twin at n=64" in capsys.readouterr().err
    assert not (tmp_path / "se.json").exists()


def test_significance_needs_the_factor_defined_in_enough_resamples():
    assert se.significance(1.3, math.inf, share_defined=0.47) == "undefined"
    assert se.significance(1.3, math.inf, share_defined=0.95) == "significant"
    assert se.significance(0.8, 1.2, share_defined=0.2) == "undefined"
    assert se.significance(math.nan, math.nan, share_defined=0.0) == "no_interval"


def censored_case(share_exact: float, n_boot: int = 200):
    """Hand-made curves and resamples: LOCUS 4 points above a baseline that needs 4x its samples; on a
    `share_exact` part of the resamples the curves are the measured ones (factor exactly 4), on the rest
    the baseline never reaches LOCUS's level (a factor censored above: [8, inf])."""
    locus = [a + 0.04 for a in STEADY]
    curve = curve_frame({"locus": (GRID, locus), "slow": (GRID, STEADY)})
    exact = int(round(share_exact * n_boot))
    slow = np.array([STEADY] * exact + [[a - 0.1 for a in STEADY]] * (n_boot - exact))
    return curve, {"locus": np.array([locus] * n_boot), "slow": slow}


def test_factor_defined_in_too_few_resamples_is_undefined_not_significant():
    curve, boot = censored_case(0.6)
    table, summary = se.efficiency(curve, "locus", resampled=boot)
    info = summary["methods"]["slow"]
    at = info["at_reference_point"]
    assert summary["reference_point"] == 512 and at["crossing"] == "exact" and at["factor"] == pytest.approx(4.0)
    assert at["share_defined"] == pytest.approx(0.6)
    assert at["status"] == "undefined" and math.isnan(at["ci_low"]) and math.isnan(at["ci_high"])
    assert info["annotated"] is None and not table.annotated.any()
    assert "significant" not in set(table.status)
    line = figures.report_lines({"reference_method": "locus", **summary})[0]
    assert "undefined: exact in only 60% of resamples" in line and "significant" not in line
    # the very same resamples read with a lower bar: the interval [4, inf] excludes 1 (the test can fail)
    _, lenient = se.efficiency(curve, "locus", resampled=boot, min_defined=0.5)
    assert lenient["methods"]["slow"]["at_reference_point"]["status"] == "significant"
    assert lenient["methods"]["slow"]["annotated"] == "at_reference_point"


def test_factor_defined_in_every_resample_is_significant():
    curve, boot = censored_case(1.0)
    _, summary = se.efficiency(curve, "locus", resampled=boot)
    at = summary["methods"]["slow"]["at_reference_point"]
    assert at["status"] == "significant" and at["ci_low"] == pytest.approx(4.0) == at["ci_high"]


def test_figure_draws_best_single_line_raw_points_and_says_undefined():
    from locus.render.figures import _factor_note, sample_efficiency_figure

    curve, boot = censored_case(0.6)
    _, summary = se.efficiency(curve, "locus", resampled=boot)
    summary.update(best_single=0.7, bootstrap={"n_boot": 200, "seed": 0, "n_queries": 500})
    note = _factor_note(summary)
    assert "percentile intervals" in note and "vs slow at n = 512: undefined (exact in 60% of resamples)" in note
    fig = sample_efficiency_figure(curve, summary, fit=se.smooth(curve))
    ax = fig.axes[0]
    flat = [ln for ln in ax.lines if np.allclose(ln.get_ydata(), 70.0)]
    assert len(flat) == 1  # the best single model's level, in percent
    measured = [ln for ln in ax.lines if ln.get_marker() == "o" and len(ln.get_xdata()) == len(GRID)]
    assert len(measured) == 2  # the raw per-n points of both methods beside their fits
    assert any("best single model" in t.get_text() for t in ax.get_legend().get_texts())
    assert not any("×" in t.get_text() for t in ax.texts)  # no factor arrow for an undefined factor
