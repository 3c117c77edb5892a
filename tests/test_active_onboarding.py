"""Active onboarding (locus.onboard selectors and stopping rule, `locus onboard`, `locus active-onboarding`,
rule active_onboarding): hand-made cases whose answer is known, then the tiny pool of test_views."""

from __future__ import annotations

import subprocess
import sys
import zlib

import numpy as np
import pandas as pd
import pytest

from locus import onboard as ob
from locus.errors import ConfigError, DataError

torch = pytest.importorskip("torch")

from test_views import N_REF, PARAMS, REPO  # noqa: E402

from locus import checkpoint  # noqa: E402
from locus.cli import main  # noqa: E402
from locus.runs import execute  # noqa: E402


class LinearMethod:
    """A stand-in LOCUS: logits = query vector . model embedding; embed = the score-weighted mean vector."""

    name = "locus"

    def __init__(self, pool_z):
        self.pool_z = np.asarray(pool_z, np.float32)

    def model_embeddings(self):
        return np.arange(len(self.pool_z)), self.pool_z.copy()

    def predict_logits(self, v, model_ids=None):
        return (np.asarray(v) @ self.pool_z.T).astype(np.float32)

    def logits_for_embeddings(self, v, z):
        return (np.asarray(v) @ np.asarray(z).T).astype(np.float32)

    def embed(self, v, s):
        return ((2 * np.asarray(s)[:, None] - 1) * np.asarray(v)).mean(axis=0).astype(np.float32)


def toy_context(seed=0, n=60, oracle=None):
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(n, 4)).astype(np.float32)
    pool = rng.normal(size=(6, 4)).astype(np.float32)
    method = LinearMethod(pool)
    patterns = (method.predict_logits(vectors) > 0).astype(float)
    benchmarks = np.array(["a", "b", "c"])[np.arange(n) % 3]
    return ob.Context(vectors, benchmarks, patterns, method, seed=seed, oracle=oracle, warm=4, batch=3)


def truth_oracle(truth, asked=None):
    def oracle(pos):
        if asked is not None:
            asked.extend(int(p) for p in pos)
        return truth[pos]

    return oracle


TRUTH = (np.random.default_rng(5).random(60) < 0.5).astype(np.float32)


@pytest.mark.parametrize("name", ob.SELECTORS)
def test_selectors_return_k_distinct_candidates_deterministically(name):
    ids = np.arange(100, 160)
    a = ob.select(name, ids, 10, toy_context(0, oracle=truth_oracle(TRUTH)))
    b = ob.select(name, ids, 10, toy_context(0, oracle=truth_oracle(TRUTH)))
    assert len(a) == 10 and len(set(a.tolist())) == 10 and set(a.tolist()) <= set(ids.tolist())
    assert a.tolist() == b.tolist()
    if name == "random":
        assert a.tolist() != ob.select(name, ids, 10, toy_context(1)).tolist()


@pytest.mark.parametrize("name", ob.SELECTORS)
def test_selectors_never_see_answers_they_did_not_ask_for(name):
    asked = []
    chosen = ob.select(name, np.arange(60), 12, toy_context(0, oracle=truth_oracle(TRUTH, asked)))
    assert set(asked) <= set(chosen.tolist())
    if name not in ob.SEQUENTIAL:
        assert asked == []  # static selectors never evaluate the new model
    poisoned = 1 - TRUTH  # every answer the selector did not ask for is flipped
    poisoned[chosen] = TRUTH[chosen]
    again = ob.select(name, np.arange(60), 12, toy_context(0, oracle=truth_oracle(poisoned)))
    assert again.tolist() == chosen.tolist()


def test_sequential_selectors_follow_the_answers():
    """Different answers on the warm start lead to different next picks (the loop re-embeds)."""
    a = ob.select("uncertainty", np.arange(60), 12, toy_context(0, oracle=truth_oracle(TRUTH)))
    b = ob.select("uncertainty", np.arange(60), 12, toy_context(0, oracle=truth_oracle(np.ones(60, np.float32))))
    assert a[:4].tolist() == b[:4].tolist() and a.tolist() != b.tolist()


def test_stratified_covers_every_benchmark():
    bench = np.array(["big"] * 10 + ["one"] + ["mid"] * 5)
    ctx = ob.Context(benchmarks=bench)
    for k in (3, 5, 16):
        got = ob.select("stratified", np.arange(16), k, ctx)
        assert set(bench[got]) == {"big", "one", "mid"}
    assert sorted(ob.select("stratified", np.arange(16), 16, ctx).tolist()) == list(range(16))


def test_anchor_points_pick_one_query_per_cluster_largest_first():
    centres = np.array([[1, 1, 0, 0, 1, 0], [0, 0, 1, 1, 0, 1], [1, 0, 1, 0, 1, 1]], float)
    sizes = [12, 3, 7]
    cluster = np.repeat(np.arange(3), sizes)
    noise = np.random.default_rng(0).normal(scale=0.05, size=(len(cluster), 6))
    ctx = ob.Context(patterns=centres[cluster] + noise)
    got = ob.select("anchor", np.arange(len(cluster)), 3, ctx)
    assert sorted(cluster[got].tolist()) == [0, 1, 2]
    assert cluster[got].tolist() == [0, 2, 1]  # clusters by size
    with pytest.raises(DataError, match="correctness patterns"):
        ob.select("anchor", np.arange(5), 2, ob.Context())


def test_budget_and_selector_checks():
    with pytest.raises(ConfigError, match="larger than the 5"):
        ob.select("random", np.arange(5), 6, ob.Context())
    with pytest.raises(ConfigError, match="at least 1"):
        ob.select("random", np.arange(5), 0, ob.Context())
    with pytest.raises(ConfigError, match="unknown selector"):
        ob.select("best", np.arange(5), 2, ob.Context())


def test_stopping_rule_fires_on_identical_embeddings_only():
    method = LinearMethod(np.array([[1.0, 0.0], [0.0, 1.0]]))
    ref = np.array([[1.0, 0.2], [0.2, 1.0], [1.0, 1.0], [-1.0, 2.0]], np.float32)
    z = np.array([0.1, 0.1], np.float32)
    assert ob.stopping_check(method, ref, z, z, epsilon=0.0) == (0.0, True)
    frac, stop = ob.stopping_check(method, ref, z, np.array([5.0, 5.0], np.float32), epsilon=0.2)
    assert frac == pytest.approx(1.0) and not stop  # the new model now wins every query
    assert ob.routing_changes(np.eye(3), np.eye(3)[[0, 2, 1]]) == pytest.approx(2 / 3)


# --------------------------------------------------------------------------------------------------
# the tiny pool: `locus onboard` and the experiment
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def fake_encoder(monkeypatch):
    def encode(encoder, texts, batch_size=64):
        return np.stack(
            [np.random.default_rng(zlib.crc32(t.encode())).normal(size=8).astype(np.float32) for t in texts]
        )

    monkeypatch.setattr(checkpoint, "encode_queries", encode)


def onboard(tiny, *extra):
    return main(["onboard", "--run", str(tiny / "run"), *extra])


def data_args(tiny):
    return ["--data", str(tiny / "data"), "--encodings", str(tiny / "enc.parquet")]


def printed_prompts(out: str) -> list[str]:
    return [line for line in out.splitlines() if "\t" in line]


@pytest.mark.parametrize("selector", ["random", "stratified", "anchor"])
def test_onboard_prints_k_training_prompts(tiny, selector, capsys):
    assert onboard(tiny, "--budget", "7", "--selector", selector, *data_args(tiny)) == 0
    lines = printed_prompts(capsys.readouterr().out)
    assert len(lines) == 7 and len(set(lines)) == 7
    ids = [int(line.split("\t")[0]) for line in lines]
    assert all(0 <= i < 50 for i in ids)  # the tiny set's training split: prompt ids 0..49
    assert all(line.split("\t")[1] == f"question {i}" for i, line in zip(ids, lines))


def test_onboard_candidates_file_and_sequential_answers(tiny, fake_encoder, tmp_path, capsys):
    cands = tmp_path / "cands.txt"
    cands.write_text("\n".join(f"candidate prompt {i}" for i in range(30)) + "\n")
    assert onboard(tiny, "--budget", "5", "--candidates", str(cands)) == 0
    assert len(printed_prompts(capsys.readouterr().out)) == 5
    assert onboard(tiny, "--budget", "20", "--candidates", str(cands), "--selector", "disagreement") == 0
    out = capsys.readouterr().out
    first = printed_prompts(out)
    assert len(first) == 8 and "rerun with --answers" in out  # the warm start
    answered = [line.split("\t")[1] for line in first] + ["a prompt outside the candidates"]
    answers = tmp_path / "answers.csv"
    pd.DataFrame({"prompt": answered, "score": [1, 0, 1, 1, 0, 0, 1, 0, 1]}).to_csv(answers, index=False)
    args = ["--budget", "20", "--candidates", str(cands), "--selector", "disagreement", "--answers", str(answers)]
    assert onboard(tiny, *args, "--batch", "4") == 0
    out = capsys.readouterr().out
    nxt = [line.split("\t")[1] for line in printed_prompts(out)]
    assert len(nxt) == 4 and not set(nxt) & set(answered)
    assert "stopping rule: routing changed on" in out and "of 30 reference queries" in out
    assert out.strip().endswith((": stop", ": continue"))
    assert onboard(tiny, *args, "--batch", "4", "--epsilon", "1") == 0
    assert capsys.readouterr().out.strip().endswith(": stop")  # epsilon 1: always fires


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--budget", "0"], "--budget 0: give at least 1"),
        (["--budget", "51"], "larger than the 50 training-split queries"),
        (["--budget", "4", "--selector", "oracle"], "--selector 'oracle': unknown selector"),
    ],
)
def test_onboard_bad_input_exits_2_with_one_line(tiny, extra, message, capsys):
    assert onboard(tiny, *extra, *data_args(tiny)) == 2
    cap = capsys.readouterr()
    assert message in cap.err and len(cap.err.strip().splitlines()) == 1 and "Traceback" not in cap.err
    assert cap.out == ""


def test_onboard_bad_files_exit_2(tiny, fake_encoder, tmp_path, capsys):
    bad = tmp_path / "cands.csv"
    bad.write_text("prompt,note\nfirst,1\n,2\nthird,3\n")
    assert onboard(tiny, "--budget", "1", "--candidates", str(bad)) == 2
    assert "empty prompt in row(s)" in capsys.readouterr().err
    good = tmp_path / "cands.txt"
    good.write_text("a\nb\nc\n")
    answers = tmp_path / "answers.csv"
    answers.write_text("prompt,score\na,1\nb,7\n")
    assert onboard(tiny, "--budget", "3", "--candidates", str(good), "--answers", str(answers)) == 2
    err = capsys.readouterr().err
    assert "score must be a number in [0, 1]" in err and len(err.strip().splitlines()) == 1
    assert onboard(tiny, "--budget", "4", "--candidates", str(good)) == 2
    assert "larger than the 3 candidates" in capsys.readouterr().err


@pytest.fixture(scope="module")
def held_run(tiny):
    out = tiny / "held-active"
    execute(
        "locus", PARAMS, tiny / "data", tiny / "enc.parquet", N_REF, 0, out, hold_out=["org/model-4", "org/model-5"]
    )
    return out


def test_experiment_writes_figure_and_table(tiny, held_run, tmp_path, capsys):
    out, table = tmp_path / "fig" / "active.pdf", tmp_path / "tab" / "active.tex"
    args = ["--run", str(held_run), "--data", str(tiny / "data"), "--encodings", str(tiny / "enc.parquet")]
    code = main(
        ["active-onboarding", *args, "--sizes", "4,8,16", "--repeats", "2", "--hold-out", "org/model-4,org/model-5"]
        + ["--out", str(out), "--table", str(table)]
    )
    assert code == 0, capsys.readouterr().err
    for path in (out, out.with_suffix(".png"), out.with_suffix(".csv"), table, table.with_suffix(".csv")):
        assert path.stat().st_size > 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    cells = frame[frame["kind"] == "cell"]
    assert set(cells["selector"]) == set(ob.SELECTORS) and sorted(cells["k"].unique()) == [4, 8, 16]
    assert len(cells) == 15 and (cells["repeats"] == 2).all() and (cells["models"] == 2).all()
    for col in ("accuracy", "regret"):
        assert cells[col].between(0, 1).all()
        assert (cells[f"{col}_low"] <= cells[col] + 1e-12).all() and (cells[col] <= cells[f"{col}_high"] + 1e-12).all()
    assert (frame["kind"] == "draw").sum() == 30
    assert (cells["accuracy_models_low"] <= cells["accuracy"] + 1e-12).all()
    assert (cells["vs_reference_low"] <= cells["vs_reference"] + 1e-12).all()
    tab = pd.read_csv(table.with_suffix(".csv"))
    assert list(tab["selector"]) == list(ob.SELECTORS) and (tab["reference_k"] == 16).all()
    ref = cells[(cells["selector"] == "random") & (cells["k"] == 16)]["accuracy"].iloc[0]
    assert tab["reference_accuracy"].iloc[0] == pytest.approx(ref)
    assert tab.loc[tab["selector"] == "random", "k_reach"].iloc[0] <= 16  # random reaches itself
    # k_not_below_onward: every k from it on is not significantly below, the k before it is
    for _, r in tab.iterrows():
        g = cells[cells["selector"] == r["selector"]].sort_values("k")
        ok = (g["vs_reference_high"] >= 0).to_numpy()
        if np.isnan(r["k_not_below_onward"]):
            assert not ok[-1]
        else:
            at = list(g["k"]).index(r["k_not_below_onward"])
            assert ok[at:].all() and (at == 0 or not ok[at - 1])
    assert "Smallest number of evaluations" in table.read_text()


def test_experiment_refuses_a_run_that_saw_the_held_out_models(tiny, tmp_path, capsys):
    args = ["--run", str(tiny / "run"), "--data", str(tiny / "data"), "--encodings", str(tiny / "enc.parquet")]
    code = main(
        ["active-onboarding", *args, "--hold-out", "org/model-4", "--out", str(tmp_path / "a.pdf")]
        + ["--table", str(tmp_path / "t" / "a.tex")]
    )
    assert code == 2 and "trained on 1 of the 1 held-out models" in capsys.readouterr().err
    assert not (tmp_path / "a.pdf").exists()
    code = main(["active-onboarding", *args, "--out", str(tmp_path / "a.pdf"), "--table", str(tmp_path / "a.tex")])
    assert code == 2 and "both would write the same CSV" in capsys.readouterr().err


def test_experiment_regret_on_hand_made_logits():
    from locus.experiments.active_onboarding import regret

    labels = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    logits = np.array([[2.0, -1.0], [3.0, 0.0], [0.0, 1.0]])  # routes to 0, 0, 1: correct, wrong, correct
    assert regret(logits, labels) == pytest.approx(1.0 - 2 / 3)
    assert regret(labels, labels) == 0.0


def test_experiment_summary_and_table_on_hand_made_cells():
    """Two held-out models, 4 test queries; selector b matches random's largest-k accuracy at k = 2."""
    from locus.experiments.active_onboarding import reach_table, summarise

    labels = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    right = np.where(labels >= 0.5, 1.0, -1.0)  # logits predicting every label
    wrong_one = right.copy()
    wrong_one[0, 0] *= -1  # one of the 8 pairs wrong
    cells = {
        ("random", 2, 0): wrong_one,
        ("random", 8, 0): wrong_one,
        ("b", 2, 0): right,
        ("b", 8, 0): right,
        ("c", 2, 0): -right,
        ("c", 8, 0): -right,
    }
    grid, draws = summarise(cells, labels, 200, 0)
    acc = grid.set_index(["selector", "k"])["accuracy"]
    assert acc[("random", 8)] == pytest.approx(7 / 8) and acc[("b", 2)] == 1.0 and acc[("c", 8)] == 0.0
    assert grid.set_index(["selector", "k"])["regret"][("b", 2)] == 0.0 and len(draws) == 6
    table = reach_table(grid).set_index("selector")
    assert table.loc["b", "k_reach"] == 2 and table.loc["random", "k_reach"] == 2
    assert np.isnan(table.loc["c", "k_reach"]) and np.isnan(table.loc["c", "k_not_below_onward"])
    assert table.loc["b", "k_reach_diff"] == pytest.approx(1 / 8)


def test_not_below_onward_is_monotone_where_the_first_k_not_below_is_not():
    """Selector a is not significantly below the target at k = 16, below at k = 32, and not below again from
    k = 64 on: the old rule ("first k not significantly below") said 16; the monotone one says 64. Selector b
    is below at the largest k: none. Random (the reference) is not below from k = 32 on."""
    from locus.experiments.active_onboarding import latex_table, onward, reach_table

    assert onward([True, False, True, True]).tolist() == [False, False, True, True]
    assert onward([]).tolist() == [] and onward([False]).tolist() == [False]
    ks = [8, 16, 32, 64, 128]
    high = {
        "random": [-0.02, -0.01, 0.001, 0.002, 0.0],
        "a": [-0.03, 0.004, -0.002, 0.003, 0.008],
        "b": [-0.05, 0.012, 0.02, 0.01, -0.001],
    }  # upper ends of the paired intervals; differences 1 point below, intervals 2 points wide
    rows = [
        {
            "selector": name,
            "k": k,
            "accuracy": 0.7 + h - 0.01,
            "accuracy_models_low": 0.65,
            "accuracy_models_high": 0.75,
            "vs_reference": h - 0.01,
            "vs_reference_low": h - 0.02,
            "vs_reference_high": h,
        }
        for name, hs in high.items()
        for k, h in zip(ks, hs)
    ]
    rows[4].update(vs_reference=0.0, vs_reference_low=0.0, vs_reference_high=0.0)  # random at k = 128: itself
    table = reach_table(pd.DataFrame(rows)).set_index("selector")
    assert (
        table.loc["random", "k_reach"] == 128
        and np.isnan(table.loc["a", "k_reach"])
        and table.loc["b", "k_reach"] == 16
    )
    old_rule = {name: next(k for k, h in zip(ks, hs) if h >= 0) for name, hs in high.items()}
    assert old_rule == {"random": 32, "a": 16, "b": 16}
    assert table.loc["a", "k_not_below_onward"] == 64 and table.loc["random", "k_not_below_onward"] == 32
    assert np.isnan(table.loc["b", "k_not_below_onward"]) and not table.loc["b", "k_not_below_onward_within_quarter"]
    assert table.loc["a", "k_not_below_onward_diff_high"] == pytest.approx(0.003)  # the interval at k = 64
    assert table.loc["random", "k_not_below_onward_within_quarter"]  # 32 <= 128 / 4
    assert not table.loc["a", "k_not_below_onward_within_quarter"]
    assert "k_not_worse" not in table.columns
    tex = latex_table(table.reset_index(), "toy")
    assert "$k$ onward not below" in tex and "every larger $k$ tried is not significantly below it" in tex
    assert "None stays not significantly below it from 32 or fewer evaluations on." in tex
    assert "a & -- & -- & 64 & -0.70 [-1.70, +0.30] \\\\" in tex


def test_rule_dry_run(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-n", "--directory", str(tmp_path)]
        + ["results/figures/active_onboarding.pdf"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    block = next(b for b in res.stdout.split("\nrule ") if b.startswith("active_onboarding:"))
    assert "--run results/onboarding/synthetic/all-MiniLM-L6-v2/m0/n1024/s0" in block
    assert "--sizes 8,16,32,64,128" in block and "results/tables/active_onboarding.tex" in block


def test_schema_selectors_are_the_packages():
    import yaml

    from locus import constants

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    block = schema["properties"]["active_onboarding"]["properties"]
    assert tuple(block["selectors"]["items"]["enum"]) == constants.ONBOARD_SELECTORS == ob.SELECTORS
    assert tuple(block["selectors"]["default"]) == constants.ONBOARD_SELECTORS


def test_onboard_static_plan_continues_after_the_answers(tiny, fake_encoder, tmp_path, capsys):
    assert onboard(tiny, "--budget", "10", "--selector", "anchor", *data_args(tiny)) == 0
    plan = [line.split("\t")[1] for line in printed_prompts(capsys.readouterr().out)]
    answers = tmp_path / "answers.csv"
    pd.DataFrame({"prompt": plan[:3], "score": [1, 0, 1]}).to_csv(answers, index=False)
    assert onboard(tiny, "--budget", "10", "--answers", str(answers), "--batch", "4", *data_args(tiny)) == 0
    out = capsys.readouterr().out
    assert [line.split("\t")[1] for line in printed_prompts(out)] == plan[3:7]
    assert "needs more than 4 answers" in out


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("active_onboarding: {selectors: [anchor, stratified]}\n", r"config error: active_onboarding.selectors"),
    ],
)
def test_config_errors_at_dag_build_time(tmp_path, yaml_text, message):
    import re

    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml_text)
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-n", "--directory", str(tmp_path)]
        + ["--configfile", str(bad)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = res.stderr + res.stdout
    assert res.returncode != 0 and re.search(message, out), out[-3000:]
    assert len(re.findall(r"^config error: ", out, re.M)) == 1 and "Traceback" not in out, out[-3000:]


def test_onboard_multiline_prompts_and_out_csv(tiny, fake_encoder, tmp_path, capsys):
    cands = tmp_path / "cands.csv"
    prompts = ["line one\nline two", "tab\there", "plain"]
    pd.DataFrame({"prompt": prompts}).to_csv(cands, index=False)
    out = tmp_path / "next.csv"
    assert onboard(tiny, "--budget", "3", "--candidates", str(cands), "--selector", "random", "--out", str(out)) == 0
    lines = printed_prompts(capsys.readouterr().out)
    assert sorted(line.split("\t", 1)[1] for line in lines) == ["line one\\nline two", "plain", "tab\\there"]
    written = pd.read_csv(out)
    assert list(written.columns) == ["prompt_id", "prompt", "score"] and sorted(written["prompt"]) == sorted(prompts)
    assert [int(line.split("\t")[0]) for line in lines] == written["prompt_id"].tolist()
    bad_out = tmp_path / "bad.csv"
    assert onboard(tiny, "--budget", "4", "--candidates", str(cands), "--out", str(bad_out)) == 2
    assert not bad_out.exists()
