"""`locus decisions selective|cost` on tiny calibrated runs: outputs written with the right columns and ranges,
and the refusal of an uncalibrated run."""

import math

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from locus import run_artifacts  # noqa: E402
from locus.cli import main  # noqa: E402
from locus.data.canonical import write_dataset  # noqa: E402
from locus.data.encodings import data_fingerprint, write_encodings  # noqa: E402
from locus.runs import execute  # noqa: E402

COSTS = [0.1, 0.5, 2.0, 8.0]


def write_data(root, seed=0):
    """150 queries (90 train / 30 val / 30 test), 4 models of rising strength and cost; query vectors that
    carry the per-query difficulty, so a kNN router learns something."""
    rng = np.random.default_rng(seed)
    n_q, n_m = 150, 4
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n_q),
            "prompt": [f"question {i}" for i in range(n_q)],
            "benchmark": "b",
            "category": "b",
            "split": ["train"] * 90 + ["val"] * 30 + ["test"] * 30,
        }
    )
    models = pd.DataFrame({"model_id": np.arange(n_m), "name": [f"org/m{i}" for i in range(n_m)], "cost": COSTS})
    ease = rng.uniform(-2, 2, n_q)
    pid, mid = np.meshgrid(np.arange(n_q), np.arange(n_m), indexing="ij")
    p = 1 / (1 + np.exp(-(ease[pid] + 0.8 * mid - 1.0)))
    scores = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(p.size) < p.ravel()).astype(float)}
    )
    write_dataset(root / "data", queries, models, scores)
    vectors = np.column_stack([ease, rng.normal(size=(n_q, 7))]).astype(np.float32)
    write_encodings(
        root / "enc.parquet",
        np.arange(n_q),
        vectors,
        "toy",
        False,
        data_fingerprint(queries["prompt_id"], queries["prompt"]),
    )
    return root / "data", root / "enc.parquet"


def calibrate(run, data):
    """`locus calibrate --run RUN`: the map fitted on the run's validation pairs -> RUN/calibration.json."""
    assert main(["calibrate", "--run", str(run), "--data", str(data)]) == 0
    assert run_artifacts.read_calibration(run) is not None


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("decisions")
    data, enc = write_data(root)
    out = []
    for seed in (0, 1):
        run = root / f"knn_s{seed}"
        execute("knn_router", {}, data, enc, 60, seed, run)
        calibrate(run, data)
        out.append(run)
    bare = root / "bare"
    execute("knn_router", {}, data, enc, 60, 0, bare)
    return root, data, out, bare


def test_selective_outputs(runs, tmp_path, capsys):
    root, data, dirs, _ = runs
    table, figure = tmp_path / "sel.tex", tmp_path / "rc.pdf"
    args = ["decisions", "selective", "--runs", *map(str, dirs), "--data", str(data), "--table", str(table)]
    assert main([*args, "--figure", str(figure), "--alphas", "0.2,0.4", "--bootstrap-resamples", "50"]) == 0
    frame = pd.read_csv(tmp_path / "sel.csv")
    assert len(frame) == 2 * 2  # alphas x fallbacks, one method
    assert set(frame["fallback"]) == {"best_single", "abstain"} and (frame["n_seeds"] == 2).all()
    assert frame["coverage"].between(0, 1).all() and frame["violation_freq"].between(0, 1).all()
    assert (frame["n_checks"] == 100).all() and (frame["n_test_queries"] == 30).all()
    assert frame.loc[frame["fallback"] == "abstain", "accuracy"].isna().all()
    certified = frame.dropna(subset=["tau_mean"])
    assert certified["tau_mean"].between(0, 1).all()
    # a looser alpha never certifies a higher threshold (one skip count for the whole alpha grid)
    by_alpha = frame[frame["fallback"] == "abstain"].set_index("alpha")
    assert by_alpha.loc[0.4, "coverage"] >= by_alpha.loc[0.2, "coverage"]
    assert by_alpha.loc[0.4, "tau_max"] <= by_alpha.loc[0.2, "tau_min"] or by_alpha.loc[0.2, "n_none"] > 0
    # violations: a Clopper-Pearson interval around the frequency, flagged above delta
    assert (frame["violation_ci_low"] <= frame["violation_freq"]).all()
    assert (frame["violation_freq"] <= frame["violation_ci_high"]).all()
    assert (frame["violation_above_delta"] == (frame["violation_freq"] > 0.1)).all()
    assert (frame["n_violations"] == (frame["violation_freq"] * frame["n_checks"]).round()).all()
    assert (frame["truth"] == "no generator truth").all() and frame["true_risk"].isna().all()
    text = table.read_text()
    assert "Learn-then-Test" in text and "Clopper--Pearson" in text and "NN router" in text
    assert "no generator truth" in text and "Difficulty, validation $\\to$ test" in text
    curve = pd.read_csv(tmp_path / "rc.csv")
    assert curve["coverage"].between(0, 1).all() and curve["risk"].dropna().between(0, 1).all()
    best = curve[curve["series"] == "best_single"]
    assert len(best) == 20 and best["risk"].nunique() == 1 and "chosen on validation" in best["method"].iat[0]
    assert (tmp_path / "rc.png").stat().st_size > 0 and figure.stat().st_size > 0


def test_cost_outputs(runs, tmp_path):
    root, data, dirs, _ = runs
    table, figure = tmp_path / "aiq.tex", tmp_path / "cq.pdf"
    args = ["decisions", "cost", "--runs", *map(str, dirs), "--data", str(data), "--table", str(table)]
    assert main([*args, "--figure", str(figure), "--lambdas", "8", "--bootstrap-resamples", "40"]) == 0
    frame = pd.read_csv(tmp_path / "aiq.csv")
    assert frame["kind"].tolist() == ["method", "oracle", "mix"]  # the best single model: a point, not a row
    for col in ("aiq", "aiq_range"):
        assert frame[col].between(0, 1).all() and (frame[f"{col}_ci_low"] <= frame[col] + 1e-12).all()
        assert (frame[col] <= frame[f"{col}_ci_high"] + 1e-12).all()
        oracle = frame.set_index("kind").loc["oracle", col]
        assert oracle >= frame[col].max() - 1e-12  # nothing beats the oracle
    assert (frame["cost_source"] == "cost").all()
    assert (frame["min_cost"] == min(COSTS)).all() and (frame["max_cost"] == max(COSTS)).all()
    # every router starts at the cheapest model: / range = / max x c_max / (c_max - c_min)
    scale = max(COSTS) / (max(COSTS) - min(COSTS))
    assert frame["aiq_range"].to_numpy() == pytest.approx(frame["aiq"].to_numpy() * scale)
    mix = frame.set_index("kind").loc["mix"]
    assert mix["diff_vs_mix"] == 0 and mix["diff_vs_mix_ci_low"] == 0 and mix["diff_vs_mix_ci_high"] == 0
    assert frame["diff_vs_mix"].to_numpy() == pytest.approx((frame["aiq"] - mix["aiq"]).to_numpy())
    assert (frame["diff_vs_mix_ci_low"] <= frame["diff_vs_mix"] + 1e-12).all()
    points = pd.read_csv(tmp_path / "cq.csv")
    assert set(points["series"]) == {"method", "oracle", "single", "mix", "best_single"}
    singles = points[points["series"] == "single"]
    assert sorted(singles["cost"]) == pytest.approx(COSTS) and singles["quality"].between(0, 1).all()
    method = points[points["series"] == "method"]
    assert method["cost"].iat[-1] == pytest.approx(min(COSTS))  # the largest lambda: always the cheapest
    text = table.read_text()
    assert "models' cost column" in text and "RouterBench's code" in text and "RouterBench's paper" in text
    assert "is not a row" in text and "paired bootstrap" in text


def test_uncalibrated_run_is_refused(runs, tmp_path, capsys):
    _, data, _, bare = runs
    args = ["decisions", "cost", "--runs", str(bare), "--data", str(data), "--table", str(tmp_path / "t.tex")]
    assert main([*args, "--figure", str(tmp_path / "f.pdf")]) == 2
    err = capsys.readouterr().err
    assert "locus calibrate --run" in err and str(bare) in err and not list(tmp_path.iterdir())
    sel = [
        "decisions",
        "selective",
        "--runs",
        *map(str, runs[2]),
        "--data",
        str(data),
        "--table",
        str(tmp_path / "t.tex"),
    ]
    assert main([*sel, "--figure", str(tmp_path / "f.pdf"), "--delta", "1.5"]) == 2
    assert "delta must be a number in (0, 1)" in capsys.readouterr().err


@pytest.fixture
def fake_encoder(monkeypatch):
    """Deterministic 8-d stand-in for the run's encoder (the kNN runs were trained on 8-d toy vectors)."""
    from locus import checkpoint

    def encode(encoder, texts, batch_size=64):
        return np.array([np.random.default_rng(len(t)).normal(size=8) for t in texts], dtype=np.float32)

    monkeypatch.setattr(checkpoint, "encode_queries", encode)


def route(run, *extra):
    return main(["route", "--checkpoint", str(run), "a short query", "a much longer query text here", *extra])


def test_route_selective_on_a_calibrated_run(runs, fake_encoder, capsys):
    from locus import decisions
    from locus.data.canonical import read_dataset

    _, data, dirs, _ = runs
    assert route(dirs[0], "--calibrated", "--alpha", "0.3", "--delta", "0.1", "--alphas", "0.3") == 0
    out = capsys.readouterr().out
    # the threshold printed is the one Learn-then-Test certifies from the run's validation split
    ids, model_ids, logits = run_artifacts.read_scores(dirs[0], "val")
    labels = read_dataset(data).label_matrix(ids, model_ids)
    probs = run_artifacts.read_calibration(dirs[0]).probabilities(logits)
    tau = decisions.learn_then_test_threshold(probs, labels, 0.3, 0.1)
    assert f"tau = {tau:.2f}" in out and "alpha = 0.3" in out and "fallback: org/m" in out
    assert sum(line.startswith("query ") for line in out.splitlines()) == 2 and out.count("  -> ") == 2
    assert out.count("[routed]") + out.count("[fell back]") == 2
    # a level nothing can meet: no threshold, every query abstains
    assert route(dirs[0], "--calibrated", "--alpha", "0.001", "--fallback", "abstain") == 0
    out = capsys.readouterr().out
    assert "none certified" in out and out.count("-> abstain [abstained]") == 2


def test_route_tau_is_the_selective_tables(runs, fake_encoder, tmp_path, capsys):
    """`locus route --alpha` certifies tau as the selective-routing table does for the same run: the same
    validation pairs, threshold grid and rule, and the skip count of the table's smallest alpha."""
    _, data, dirs, _ = runs
    table = ["decisions", "selective", "--runs", str(dirs[0]), "--data", str(data), "--table", str(tmp_path / "s.tex")]
    table += ["--figure", str(tmp_path / "rc.pdf"), "--bootstrap-resamples", "5"]
    certified = {}
    for alphas in ("0.2,0.4", "0.05,0.1,0.2,0.3"):  # a grid some level passes; the default grid (the table's)
        assert main([*table, "--alphas", alphas]) == 0
        taus = pd.read_csv(tmp_path / "s.csv").drop_duplicates("alpha").set_index("alpha")["tau_mean"]
        capsys.readouterr()
        for alpha, tau in taus.items():
            grid = [] if alphas.startswith("0.05") else ["--alphas", alphas]  # the default grid is the table's
            assert route(dirs[0], "--calibrated", "--alpha", f"{alpha:g}", *grid) == 0
            out = capsys.readouterr().out
            assert (f"tau = {tau:.2f}" if np.isfinite(tau) else "none certified") in out, (alphas, alpha, out)
            certified[(alphas, alpha)] = np.isfinite(tau)
    assert certified[("0.2,0.4", 0.4)]  # a real threshold compared, not only "none" against "none"
    # 30 validation queries: the default grid's 0.05 needs 45 routed ones, so no level is certified; alone,
    # alpha = 0.3 would skip only the thresholds routing fewer than 7
    assert not any(certified[("0.05,0.1,0.2,0.3", a)] for a in (0.05, 0.1, 0.2, 0.3))


def test_route_cost_aware(runs, fake_encoder, capsys):
    _, data, dirs, _ = runs
    assert route(dirs[0], "--calibrated", "--cost-weight", "1000") == 0
    out = capsys.readouterr().out
    assert out.count("-> org/m0 (id 0") == 2 and f"column 'cost' of {data}/models.parquet" in out
    assert route(dirs[0], "--min-prob", "0") == 0  # every model qualifies: the cheapest
    assert capsys.readouterr().out.count("-> org/m0 (id 0") == 2
    assert route(dirs[0], "--cost-weight", "0") == 0  # lambda 0: the most likely model, as the ranking says
    out = capsys.readouterr().out
    firsts = [line.split()[-1] for line in out.splitlines() if line.startswith("   1. ")]
    chosen = [line.split()[1] for line in out.splitlines() if line.startswith("  -> ")]
    assert firsts == chosen


def test_route_option_errors(runs, fake_encoder, capsys):
    _, _, dirs, bare = runs
    assert route(bare, "--calibrated") == 2
    err = capsys.readouterr().err
    assert f"locus calibrate --run {bare}" in err and err.count("\n") == 1
    assert route(dirs[0], "--alpha", "0.2", "--cost-weight", "1") == 2
    assert "one routing policy" in capsys.readouterr().err
    for bad in (["--alpha", "1.5"], ["--delta", "0"], ["--cost-weight", "-1"], ["--min-prob", "2"]):
        assert route(dirs[0], *bad) == 2
        assert "error: argument" in capsys.readouterr().err
    assert route(dirs[0], "--alpha", "0.2", "--fallback", "gpt-9") == 2
    assert "gpt-9" in capsys.readouterr().err


@pytest.mark.parametrize(
    "yaml_text,message",
    [
        ("decisions: {train_size: 999}\n", r"decisions.train_size 999 must be one of train_sizes"),
        ("decisions: {alphas: [0.1, 1.5]}\n", r"decisions.alphas\[1\]: 1.5 is greater than or equal to the maximum"),
        ("decisions: {delta: 0}\n", r"decisions.delta: 0 is less than or equal to the minimum"),
    ],
)
def test_decisions_config_errors_at_dag_build_time(tmp_path, yaml_text, message):
    import re
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml_text)
    cmd = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-n", "--directory", str(tmp_path)]
    res = subprocess.run([*cmd, "--configfile", str(bad)], cwd=repo, capture_output=True, text=True, timeout=600)
    out = res.stderr + res.stdout
    assert res.returncode != 0 and re.search(message, out), out[-3000:]
    assert len(re.findall(r"^config error: ", out, re.M)) == 1 and "Traceback" not in out, out[-3000:]


def test_violation_check_keeps_delta_where_the_risk_is_known():
    """Queries drawn i.i.d. with a known error of the top model (0.15): the checks re-split validation and test
    at random, certify tau on one part and read the risk on the other. At alpha = 0.2 tau is certified and the
    risk stays below alpha; at alpha = 0.16, just above the true risk, a naive threshold (empirical risk <= alpha)
    would fail about half the time, Learn-then-Test at most delta of the time."""
    from locus.experiments.routing_decisions import RunProbs, selective

    rng = np.random.default_rng(3)

    def split(n):
        probs = np.tile([0.9, 0.1], (n, 1))
        correct = np.column_stack([(rng.random(n) >= 0.15).astype(float), np.zeros(n)])
        return probs, correct

    (vp, vc), (tp, tc) = split(1000), split(1000)
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    run = RunProbs("r", "knn_router", 0, 32, np.arange(2), vp, vc, tp, tc, "identity", logit(vp), logit(tp))
    table, _, _ = selective([run], None, [0.2, 0.16], 0.1, ["abstain"], n_boot=100, seed=0)
    loose, tight = table.iloc[0], table.iloc[1]
    assert loose["coverage"] == 1.0 and loose["violation_freq"] == 0.0 and loose["n_checks"] == 100
    assert tight["violation_freq"] <= 0.1 + 0.05


def toy_run(n=400, truth_p=None, seed=0):
    """A run whose top model (column 0, probability 0.9) is right on every labelled query; `truth_p`: the
    generator's P(correct) of column 0 (None: no truth)."""
    from locus.experiments.routing_decisions import RunProbs

    probs = np.tile([0.9, 0.2], (n, 1))
    correct = np.tile([1.0, 0.0], (n, 1))
    truth = None if truth_p is None else np.tile([truth_p, 0.1], (n, 1))
    logits = np.log(probs / (1 - probs))
    return RunProbs(
        "r",
        "knn_router",
        seed,
        32,
        np.arange(2),
        probs,
        correct,
        probs,
        correct,
        "identity",
        logits,
        logits,
        truth,
        truth,
    )


def test_truth_check_flags_a_certified_level_the_generator_contradicts():
    """The labels say the top model is always right, so tau is certified and the labelled checks never fail; the
    generator's truth says it errs half the time: the exact check (true risk 0.5 > alpha) and every truth-based
    check fail, flagged above delta with the exact interval of 100 failures in 100 checks."""
    from locus.experiments.routing_decisions import selective
    from locus.render.decisions import selective_table

    table, _, gap = selective([toy_run(truth_p=0.5)], None, [0.1, 0.2], 0.1, ["abstain", "best_single"], 100, 0)
    r = table.iloc[0]
    assert r["tau_mean"] == 0.0 and r["coverage"] == 1.0 and r["test_risk"] == 0.0
    assert r["violation_freq"] == 0.0 and not r["violation_above_delta"] and r["violation_ci_low"] == 0.0
    assert r["violation_ci_high"] == pytest.approx(1 - 0.025 ** (1 / 100))
    assert r["truth"] == "generator" and r["true_risk"] == pytest.approx(0.5) and not r["true_risk_ok"]
    assert r["violation_freq_truth"] == 1.0 and r["violation_truth_above_delta"]
    assert r["violation_truth_ci_low"] == pytest.approx(0.025 ** (1 / 100)) and r["violation_truth_ci_high"] == 1.0
    assert gap["truth"] and gap["best_single_expected_test"] == pytest.approx(0.5) and gap["oracle_test"] == 1.0
    tex = selective_table(table, "cap")
    assert "50.0$^{\\ast}$" in tex and "100.0 [96.4, 100.0]$^{\\ddagger}$" in tex
    assert tex.count("NN router &") == 2  # one row per method and alpha (the fallback changes only the accuracy)
    # where the truth agrees with the labels the exact check passes
    ok, _, _ = selective([toy_run(truth_p=0.97)], None, [0.1], 0.1, ["abstain"], 20, 0)
    assert ok["true_risk"].iat[0] == pytest.approx(0.03) and ok["true_risk_ok"].iat[0]
    assert ok["violation_freq_truth"].iat[0] == 0.0 and not ok["violation_truth_above_delta"].iat[0]


def test_violation_flag_and_interval_above_delta():
    from locus.experiments.routing_decisions import _share
    from locus.render.decisions import _flag

    above = _share([True] * 3 + [False] * 7, 0.1, 0.95)
    assert above["freq"] == 0.3 and above["above"] and not above["ci_above"] and above["k"] == 3
    assert (above["low"], above["high"]) == pytest.approx((0.0667395, 0.6524529), abs=1e-6)
    sure = _share([True] * 50 + [False] * 50, 0.1, 0.95)
    assert sure["above"] and sure["ci_above"] and sure["low"] > 0.1
    within = _share([True] * 1 + [False] * 19, 0.1, 0.95)
    assert not within["above"] and within["high"] > 0.1
    # the table's marks: dagger above delta, double dagger where the interval is above it too
    assert _flag({"f": above["freq"], "lo": above["low"], "delta": 0.1}, "f", "lo") == "$^{\\dagger}$"
    assert _flag({"f": sure["freq"], "lo": sure["low"], "delta": 0.1}, "f", "lo") == "$^{\\ddagger}$"
    assert _flag({"f": within["freq"], "lo": within["low"], "delta": 0.1}, "f", "lo") == ""
    assert _flag({"f": math.nan, "lo": math.nan, "delta": 0.1}, "f", "lo") == ""


def test_resampled_curves_are_those_of_the_resampled_queries():
    """The curve of each bootstrap resample, computed from draw counts, equals the curve of the resampled rows."""
    from locus.experiments.routing_decisions import _bootstrap_indices, _curve

    rng = np.random.default_rng(3)
    num = rng.random((50, 7))
    den = (rng.random((50, 7)) < 0.9).astype(float)
    cost = rng.choice([1.0, 2.5, 10.0], size=(50, 7))
    idx = _bootstrap_indices(50, 40, 2)
    costs, qualities = _curve(num, den, cost, idx)
    for b, rows in enumerate(idx):
        c, q = _curve(num[rows], den[rows], cost[rows])
        np.testing.assert_allclose(costs[b], c, rtol=1e-12)
        np.testing.assert_allclose(qualities[b], q, rtol=1e-12)


def test_paired_aiq_interval_of_the_frontier_against_itself_is_zero():
    """A router whose points are the single models' has the mix frontier's AIQ on every resample: the paired
    difference is 0 with an interval of width 0, while the unpaired intervals are wide."""
    from locus.experiments.routing_decisions import (
        _bootstrap_indices,
        aiq_resamples,
        choice_outcomes,
        paired_aiq_difference,
    )

    rng = np.random.default_rng(0)
    n, costs = 300, np.array([1.0, 3.0, 10.0])
    correct = (rng.random((n, 3)) < [0.5, 0.7, 0.8]).astype(float)
    parts = choice_outcomes([np.full(n, m) for m in range(3)], correct, costs)
    idx = _bootstrap_indices(n, 200, 1)
    mix = aiq_resamples(*parts, idx, costs.max(), costs.min())
    same = aiq_resamples(*(p.copy() for p in parts), idx, costs.max(), costs.min())
    diff = paired_aiq_difference(same, mix, 0.95, n)
    for norm in ("max", "range"):
        d = diff[norm]
        assert d.diff[0] == 0 and d.low[0] <= 0 <= d.high[0] and d.high[0] - d.low[0] < 1e-12
        assert bool(d.includes_zero()[0]) and d.n_resamples == 200
        lo, hi = np.quantile(mix[norm][1], [0.025, 0.975])
        assert hi - lo > 0.02  # the AIQ itself is uncertain; the difference is not
    # the cheapest model only (one point at c_min): clearly below the frontier, and the paired interval says so
    cheap = aiq_resamples(*(p[:, [0]] for p in parts), idx, costs.max(), costs.min())
    below = paired_aiq_difference(cheap, mix, 0.95, n)["max"]
    assert below.high[0] < 0 and not below.includes_zero()[0]
