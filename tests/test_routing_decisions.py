"""`locus decisions selective|cost` on tiny calibrated runs: outputs written with the right columns and ranges,
and the refusal of an uncalibrated run."""

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
    # a looser alpha never certifies a higher threshold (fixed-sequence from high to low)
    by_alpha = frame[frame["fallback"] == "abstain"].set_index("alpha")
    assert by_alpha.loc[0.4, "coverage"] >= by_alpha.loc[0.2, "coverage"]
    text = table.read_text()
    assert "Learn-then-Test" in text and "must be $\\le$ $\\delta$" in text and "NN router" in text
    curve = pd.read_csv(tmp_path / "rc.csv")
    assert curve["coverage"].between(0, 1).all() and curve["risk"].dropna().between(0, 1).all()
    assert (tmp_path / "rc.png").stat().st_size > 0 and figure.stat().st_size > 0


def test_cost_outputs(runs, tmp_path):
    root, data, dirs, _ = runs
    table, figure = tmp_path / "aiq.tex", tmp_path / "cq.pdf"
    args = ["decisions", "cost", "--runs", *map(str, dirs), "--data", str(data), "--table", str(table)]
    assert main([*args, "--figure", str(figure), "--lambdas", "8", "--bootstrap-resamples", "40"]) == 0
    frame = pd.read_csv(tmp_path / "aiq.csv")
    assert frame["kind"].tolist() == ["method", "oracle", "best_single", "mix"]
    assert frame["aiq"].between(0, 1).all() and (frame["aiq_ci_low"] <= frame["aiq"] + 1e-12).all()
    assert (frame["aiq"] <= frame["aiq_ci_high"] + 1e-12).all() and (frame["cost_source"] == "cost").all()
    oracle = frame.set_index("kind").loc["oracle", "aiq"]
    assert oracle >= frame["aiq"].max() - 1e-12  # nothing beats the oracle
    points = pd.read_csv(tmp_path / "cq.csv")
    assert set(points["series"]) == {"method", "oracle", "single", "mix"}
    singles = points[points["series"] == "single"]
    assert sorted(singles["cost"]) == pytest.approx(COSTS) and singles["quality"].between(0, 1).all()
    method = points[points["series"] == "method"]
    assert method["cost"].iat[-1] == pytest.approx(min(COSTS))  # the largest lambda: always the cheapest
    assert "models' cost column" in table.read_text()


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
    assert route(dirs[0], "--calibrated", "--alpha", "0.3", "--delta", "0.1") == 0
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
    table, _ = selective([run], None, [0.2, 0.16], 0.1, ["abstain"], n_boot=100, seed=0)
    loose, tight = table.iloc[0], table.iloc[1]
    assert loose["coverage"] == 1.0 and loose["violation_freq"] == 0.0 and loose["n_checks"] == 100
    assert tight["violation_freq"] <= 0.1 + 0.05
