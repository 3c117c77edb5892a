"""The synthetic generator's truth: written beside the canonical files (and only for synthetic data),
checked against the manifest and the scores, and turned into expected routing accuracies, the Bayes
ceiling and the best single model (chosen on train) in the routing tables and the workflow."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from locus.cli import main
from locus.data import synthetic
from locus.data.canonical import MANIFEST, read_truth, write_dataset
from locus.data.truth import SOURCES_WITH_TRUTH, TRUTH_FILE
from locus.errors import DataError
from locus.experiments.bootstrap import EXPECTED, per_query
from locus.render.latex import method_label

REPO = Path(__file__).resolve().parents[1]
SMALL = {"n_queries": 120, "n_models": 3}


def manifest(directory) -> dict:
    return json.loads((Path(directory) / MANIFEST).read_text())


def build_synthetic(out) -> Path:
    assert main(["data", "synthetic", "--out", str(out), "--params", json.dumps(SMALL)]) == 0
    return Path(out)


def write_csv_source(tmp_path, out) -> None:
    rows = ["prompt,model,score,split"] + [
        f"What is {i} plus {i + 1}?,org/{m},{(i + j) % 2},{'train' if i < 8 else 'val' if i < 10 else 'test'}"
        for i in range(12)
        for j, m in enumerate("ab")
    ]
    (tmp_path / "evals.csv").write_text("\n".join(rows) + "\n")
    assert main(["data", "csv", "--out", str(out), "--params", json.dumps({"path": str(tmp_path / "evals.csv")})]) == 0


# ------------------------------------------------------------------------------------------------
# writing and reading
# ------------------------------------------------------------------------------------------------
def test_synthetic_data_writes_its_truth_in_the_manifest(tmp_path):
    out = build_synthetic(tmp_path / "syn")
    truth = pd.read_parquet(out / TRUTH_FILE)
    assert list(truth.columns) == ["prompt_id", "model_id", "p_correct"]
    assert [str(t) for t in truth.dtypes] == ["int64", "int64", "float64"]
    scores = pd.read_parquet(out / "scores.parquet")
    assert truth[["prompt_id", "model_id"]].equals(scores[["prompt_id", "model_id"]])  # one row per scored pair
    # the generator's own probabilities, not something else of the right shape
    _, _, raw_scores, raw_truth = synthetic.build_with_truth({**synthetic.DEFAULTS, **SMALL})
    np.testing.assert_array_equal(truth["p_correct"].to_numpy(), raw_truth["p_correct"].to_numpy(np.float64))
    assert truth["p_correct"].between(0, 1).all() and truth["p_correct"].std() > 0.05
    man = manifest(out)
    assert man["truth"] == {"file": TRUTH_FILE, "rows": len(scores)}
    assert TRUTH_FILE in man["files"] and man["files"][TRUTH_FILE]["bytes"] == (out / TRUTH_FILE).stat().st_size
    read = read_truth(out)
    pd.testing.assert_frame_equal(read, truth)


def test_sources_without_truth_write_none_and_remove_a_stale_one(tmp_path):
    out = build_synthetic(tmp_path / "d")
    assert (out / TRUTH_FILE).is_file()
    write_csv_source(tmp_path, out)  # the same directory, rebuilt from a source without truth
    assert not (out / TRUTH_FILE).exists()
    assert manifest(out)["truth"] is None and TRUTH_FILE not in manifest(out)["files"]
    assert read_truth(out) is None
    write_csv_source(tmp_path, tmp_path / "fresh")
    assert sorted(p.name for p in (tmp_path / "fresh").iterdir()) == [
        MANIFEST,
        "models.parquet",
        "queries.parquet",
        "scores.parquet",
    ]


def test_only_synthetic_has_truth_and_it_can_build_it():
    from locus.commands.data import SOURCES

    assert SOURCES_WITH_TRUTH == ("synthetic",)
    for source in SOURCES_WITH_TRUTH:
        assert hasattr(__import__(SOURCES[source], fromlist=["x"]), "build_with_truth")


def test_a_stray_truth_file_is_refused(tmp_path):
    out = tmp_path / "d"
    write_csv_source(tmp_path, out)
    other = build_synthetic(tmp_path / "syn")
    shutil.copy(other / TRUTH_FILE, out / TRUTH_FILE)  # left over, or copied in
    with pytest.raises(
        DataError,
        match=r"truth\.parquet: not part of this data set: .*dataset\.json records no "
        r"truth file.*Delete it, or rebuild",
    ):
        read_truth(out)


def test_a_tampered_truth_file_is_refused_with_exit_code_2(tmp_path, capsys):
    out = build_synthetic(tmp_path / "syn")
    truth = pd.read_parquet(out / TRUTH_FILE)
    truth.assign(p_correct=truth["p_correct"] * 0.5).to_parquet(out / TRUTH_FILE, index=False)
    with pytest.raises(DataError, match=r"truth\.parquet differs from the version recorded in dataset\.json"):
        read_truth(out)
    assert main(["summary", "--data", str(out), "--out", str(tmp_path / "s.md")]) == 2
    err = capsys.readouterr().err
    assert "truth.parquet differs from the version recorded in dataset.json" in err and "Rebuild" in err
    # a truth file of another build of the same data set (same rows, other probabilities, other checksum)
    build_synthetic(tmp_path / "syn2")
    shutil.copy(tmp_path / "syn2" / TRUTH_FILE, tmp_path / "syn2.truth")
    assert (
        main(["data", "synthetic", "--out", str(tmp_path / "syn2"), "--params", json.dumps({**SMALL, "seed": 1})]) == 0
    )
    shutil.copy(tmp_path / "syn2.truth", tmp_path / "syn2" / TRUTH_FILE)
    with pytest.raises(DataError, match="differs from the version recorded"):
        read_truth(tmp_path / "syn2")


def hand_made(tmp_path, truth: pd.DataFrame) -> Path:
    """A data set directory without a manifest (written by hand) holding `truth`."""
    q, m, s, _ = tiny_case()
    out = tmp_path / "hand"
    out.mkdir()
    for name, frame in (("queries", q), ("models", m), ("scores", s)):
        frame.to_parquet(out / f"{name}.parquet", index=False)
    truth.to_parquet(out / TRUTH_FILE, index=False)
    return out


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda t: t.assign(p_correct=t["p_correct"].where(t.index != 2, 1.5)),
            r"column 'p_correct' must be a probability in \[0, 1\].*row 2: 1\.5",
        ),
        (lambda t: t.assign(p_correct=t["p_correct"].where(t.index != 3, np.nan)), r"p_correct.*row 3: nan"),
        (lambda t: t.drop(columns="p_correct"), r"missing column\(s\) \['p_correct'\]"),
        (
            lambda t: pd.concat([t, t.iloc[[0]]]),
            r"1 \(prompt_id, model_id\) pair\(s\) have more than one truth row, "
            r"e\.g\. prompt_id 0 x model_id 0",
        ),
        (
            lambda t: pd.concat(
                [t, pd.DataFrame({"prompt_id": [9], "model_id": [0], "p_correct": [0.5]})], ignore_index=True
            ),
            r"1 truth row\(s\) name pairs without a score in scores\.parquet \(0-based row 19: prompt_id 9 x model_id 0\)",
        ),
        (
            lambda t: t.iloc[1:],
            r"1 scored pair\(s\) of scores\.parquet have no truth row, e\.g\. prompt_id 0 x model_id 0",
        ),
    ],
)
def test_truth_checks_name_the_file_the_rows_and_the_fix(tmp_path, edit, message):
    out = hand_made(tmp_path, edit(tiny_case()[3]))
    with pytest.raises(DataError, match=message) as err:
        read_truth(out)
    assert str(out / TRUTH_FILE) in str(err.value) and "rebuild the data set" in str(err.value)


def test_writer_keeps_truth_of_the_queries_the_overlap_policy_keeps(tmp_path):
    q, m, s, t = tiny_case()
    q.loc[q.prompt_id == 7, "prompt"] = q.loc[q.prompt_id == 0, "prompt"].item()  # a training text again in test
    data = write_dataset(tmp_path / "d", q, m, s, split_overlap="keep_test", truth=t)
    truth = read_truth(tmp_path / "d")
    assert 0 not in set(truth.prompt_id) and len(truth) == len(data.scores) == len(s) - 2
    with pytest.raises(DataError, match="scored pair"):  # and refuses a truth that misses scored pairs
        write_dataset(tmp_path / "e", *tiny_case()[:3], truth=t.iloc[:-1])
    assert not (tmp_path / "e").exists()


# ------------------------------------------------------------------------------------------------
# expected accuracy on a hand-made case with known values
# ------------------------------------------------------------------------------------------------
# queries 0-3 train, 4-5 val, 6-9 test (6, 7: benchmark A; 8, 9: B); models 0 and 1; model 0 is not
# evaluated on query 9. True probabilities (model 0, model 1):
TRAIN_P = (0.3, 0.6)  # on every training / validation query: model 1 is the best single model on train
TEST_P = {6: (0.9, 0.2), 7: (0.5, 0.6), 8: (0.6, 0.7), 9: (None, 0.8)}  # on test, model 0 has the higher mean
TEST_Y = {6: (1, 0), 7: (0, 1), 8: (0, 1), 9: (None, 1)}
BAYES = (0.9 + 0.6 + 0.7 + 0.8) / 4  # 0.75
BEST_SINGLE_TRAIN = (0.2 + 0.6 + 0.7 + 0.8) / 4  # model 1: 0.575 (model 0, chosen on test, would give 0.70)
# runs: test logits per query (model 0, model 1)
LOCUS_S0 = {6: (1, -1), 7: (1, -1), 8: (0, 0), 9: (1, -1)}  # 8: tie -> model 0; 9: model 0 unlabelled -> 1
LOCUS_S1 = {6: (1, -1), 7: (1, -1), 8: (-1, 1), 9: (1, -1)}
KNN = {q: (-1, 1) for q in TEST_P}  # always model 1
EXP_LOCUS = ((0.9 + 0.5 + 0.6 + 0.8) / 4, (0.9 + 0.5 + 0.7 + 0.8) / 4)  # 0.70, 0.725 by seed
EXP_KNN = BEST_SINGLE_TRAIN


def tiny_case():
    split = {**{i: "train" for i in range(4)}, 4: "val", 5: "val", **{i: "test" for i in range(6, 10)}}
    queries = pd.DataFrame(
        {
            "prompt_id": list(split),
            "prompt": [f"question {i}" for i in split],
            "benchmark": ["A" if i < 8 else "B" for i in split],
            "category": "c",
            "split": list(split.values()),
        }
    )
    models = pd.DataFrame({"model_id": [0, 1], "name": ["org/zero", "org/one"]})
    rows, truth = [], []
    for q in split:
        ps = TEST_P.get(q, TRAIN_P)
        ys = TEST_Y.get(q, (q % 2, 1 - q % 2))
        for m in (0, 1):
            if ps[m] is not None:
                rows.append((q, m, float(ys[m])))
                truth.append((q, m, ps[m]))
    scores = pd.DataFrame(rows, columns=["prompt_id", "model_id", "score"])
    return queries, models, scores, pd.DataFrame(truth, columns=["prompt_id", "model_id", "p_correct"])


def test_expected_routing_and_the_references_by_hand(tmp_path):
    q, m, s, t = tiny_case()
    data = write_dataset(tmp_path / "d", q, m, s, truth=t)
    ids = data.split_queries("test")["prompt_id"].to_numpy()
    labels = data.label_matrix(ids)
    p = t.pivot(index="prompt_id", columns="model_id", values="p_correct").loc[ids].to_numpy()
    for logits, want in ((LOCUS_S0, EXP_LOCUS[0]), (LOCUS_S1, EXP_LOCUS[1]), (KNN, EXP_KNN)):
        num, den = per_query(np.array([logits[i] for i in ids], float), labels, p)[EXPECTED]
        assert num.sum() / den.sum() == pytest.approx(want)
    from locus.experiments.expected import references

    refs = references(data, read_truth(tmp_path / "d"), "test").set_index(["reference", "benchmark"])
    assert refs.loc[("bayes_ceiling", "Overall"), "value"] == pytest.approx(BAYES)
    assert refs.loc[("best_single_train", "Overall"), "value"] == pytest.approx(BEST_SINGLE_TRAIN)
    assert refs.loc[("best_single_train", "Overall"), "model"] == "org/one"
    assert refs.loc[("bayes_ceiling", "A"), "value"] == pytest.approx((0.9 + 0.6) / 2)


def write_run(root: Path, method: str, seed: int, logits: dict, ys: dict) -> str:
    """metrics.json (observed routing from the labels) and scores_test.parquet of one fake run."""
    run = root / "runs" / method / f"s{seed}"
    run.mkdir(parents=True)
    ids = sorted(logits)
    pd.DataFrame(
        {
            "prompt_id": np.repeat(ids, 2),
            "model_id": np.tile([0, 1], len(ids)),
            "logit": np.array([logits[i] for i in ids], np.float32).reshape(-1),
        }
    ).to_parquet(run / "scores_test.parquet")
    routed = [ys[i][int(np.argmax(logits[i]))] if ys[i][0] is not None else ys[i][1] for i in ids]
    block = {
        "overall": {"routing_acc": float(np.mean(routed)), "correctness_acc": 0.5},
        "by_benchmark": {
            "A": {"routing_acc": float(np.mean(routed[:2]))},
            "B": {"routing_acc": float(np.mean(routed[2:]))},
        },
    }
    metrics = {
        "method": method,
        "params": {},
        "train_size": 4,
        "seed": seed,
        "sampling": "shared",
        "encoder": "enc",
        "dataset": str(root / "d"),
        "test": block,
        "val": block,
        "reference": {"oracle": {"overall": 1.0}, "random": {"overall": 0.5}, "best_single": {"overall": 0.5}},
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    return str(run / "metrics.json")


@pytest.fixture
def table_case(tmp_path):
    q, m, s, t = tiny_case()
    write_dataset(tmp_path / "d", q, m, s, truth=t)
    runs = [
        write_run(tmp_path, "locus", 0, LOCUS_S0, TEST_Y),
        write_run(tmp_path, "locus", 1, LOCUS_S1, TEST_Y),
        write_run(tmp_path, "knn_router", 0, KNN, TEST_Y),
    ]
    return tmp_path, runs


def test_routing_table_gets_expected_rows_only_with_truth(table_case):
    root, runs = table_case
    base = ["table", "routing", "--metrics", *runs, "--data", str(root / "d"), "--bootstrap-resamples", "200"]
    assert main([*base, "--out", str(root / "plain.tex")]) == 0
    assert main([*base, "--out", str(root / "truth.tex"), "--truth", str(root / "d" / TRUTH_FILE)]) == 0
    plain, truth = pd.read_csv(root / "plain.csv"), pd.read_csv(root / "truth.csv")
    assert EXPECTED not in set(plain.metric) and not {"bayes_ceiling", "best_single_train"} & set(plain.approach)
    assert "Expected" not in (root / "plain.tex").read_text()
    # the observed rows are the same with and without truth
    pd.testing.assert_frame_equal(truth[truth.metric != EXPECTED].reset_index(drop=True), plain, check_dtype=False)
    exp = truth[(truth.metric == EXPECTED) & (truth.kind == "method")].set_index("approach")
    assert exp.loc["locus", "mean_pct"] == pytest.approx(100 * np.mean(EXP_LOCUS))
    assert exp.loc["locus", "std_pct"] == pytest.approx(100 * np.std(EXP_LOCUS, ddof=1))
    assert exp.loc["locus", "n_seeds"] == 2 and exp.loc["locus", "train_size"] == 4
    assert exp.loc["knn_router", "mean_pct"] == pytest.approx(100 * EXP_KNN)
    # paired bootstrap of the difference to the reference method, like the observed rows
    diff = 100 * (EXP_KNN - np.mean(EXP_LOCUS))
    assert exp.loc["knn_router", "diff_to_reference_pct"] == pytest.approx(diff)
    assert exp.loc["knn_router", "ci_low_pct"] <= diff <= exp.loc["knn_router", "ci_high_pct"]
    assert exp.loc["knn_router", "reference"] == "locus" and exp.loc["knn_router", "n_queries"] == 4
    assert exp.loc["locus", "diff_to_reference_pct"] == 0
    refs = truth[truth.kind == "reference"].set_index("approach")
    assert refs.loc["bayes_ceiling", "mean_pct"] == pytest.approx(100 * BAYES)
    assert refs.loc["best_single_train", "mean_pct"] == pytest.approx(100 * BEST_SINGLE_TRAIN)
    assert "org/one" in refs.loc["best_single_train", "label"]
    assert refs.loc["bayes_ceiling", "metric"] == EXPECTED and pd.isna(refs.loc["bayes_ceiling", "train_size"])
    tex = (root / "truth.tex").read_text()
    assert "Expected routing accuracy" in tex and "Bayes ceiling (75.00)" in tex
    assert re.search(r"\\textit\{Bayes ceiling \(max true \$p\$\)\} & 75\.00 & {2}\\\\", tex)
    lines = tex.splitlines()
    block = lines[next(i for i, line in enumerate(lines) if "Expected routing accuracy" in line) :]
    # the best expected cell, but 4 test queries cannot show it above the best single model: not bold
    assert any(line.startswith(method_label("locus")) and " & 71.25{\\scriptsize$\\pm$1.77}" in line for line in block)
    assert not exp.loc["locus", "beats_best_single"] and pd.isna(exp.loc["locus", "emphasis"])
    assert exp.loc["locus", "best_single_ci_low_pct"] <= 0


def test_by_dataset_tables_and_truth(table_case, capsys):
    root, runs = table_case
    args = [
        "--metrics",
        *runs,
        "--data",
        str(root / "d"),
        "--truth",
        str(root / "d" / TRUTH_FILE),
        "--bootstrap-resamples",
        "100",
    ]
    assert main(["table", "routing-by-dataset", *args, "--out", str(root / "rbd.tex")]) == 0
    csv = pd.read_csv(root / "rbd.csv")
    exp = csv[(csv.metric == EXPECTED) & (csv.kind == "method")].set_index(["approach", "benchmark"])
    assert exp.loc[("knn_router", "A"), "mean_pct"] == pytest.approx(100 * (0.2 + 0.6) / 2)
    ref = csv[(csv.metric == EXPECTED) & (csv.kind == "reference")].set_index(["approach", "benchmark"])
    assert ref.loc[("bayes_ceiling", "B"), "mean_pct"] == pytest.approx(100 * (0.7 + 0.8) / 2)
    assert "Expected routing accuracy" in (root / "rbd.tex").read_text()
    assert main(["table", "correctness-by-dataset", *args, "--out", str(root / "cbd.tex")]) == 2
    assert "applies to the routing tables" in capsys.readouterr().err


def test_table_refuses_truth_of_another_data_set(table_case, capsys):
    root, runs = table_case
    other = build_synthetic(root / "syn")
    base = ["table", "routing", "--metrics", *runs, "--data", str(root / "d"), "--out", str(root / "t.tex")]
    assert main([*base, "--truth", str(other / TRUTH_FILE)]) == 2
    assert "not the truth file of the table's data set" in capsys.readouterr().err
    assert not (root / "t.tex").exists()


# ------------------------------------------------------------------------------------------------
# workflow
# ------------------------------------------------------------------------------------------------
def dry_run(tmp_path, *args) -> str:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-n",
        "-p",
        "--directory",
        str(tmp_path),
        *args,
    ]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr + res.stdout
    return res.stdout


def job(out: str, rule: str) -> str:
    """The dry-run block of the first job of `rule`."""
    m = re.search(rf"^rule {rule}:\n(.*?)(?=\n\n|\Z)", out, flags=re.M | re.S)
    assert m, f"no job of rule {rule} in:\n{out}"
    return m.group(1)


def test_dry_run_declares_truth_for_synthetic_data_only(tmp_path):
    out = dry_run(tmp_path, "--configfile", str(REPO / "tests" / "configs" / "tiny.yaml"))
    data = job(out, "data")
    outputs = re.search(r"output: (.*)", data).group(1).split(", ")
    assert "results/data/synthetic/truth.parquet" in outputs and "results/data/synthetic/dataset.json" in outputs
    assert "--truth results/data/synthetic/truth.parquet" in job(out, "routing_table")
    assert "truth.parquet" in re.search(r"input: (.*)", job(out, "routing_table")).group(1)
    assert "--truth" in job(out, "routing_by_dataset_table")
    assert "truth" not in job(out, "correctness_by_dataset_table")
    other = dry_run(tmp_path, "--config", "dataset=embedllm")  # a source without truth: nothing asks for one
    assert "truth.parquet" not in other and "--truth" not in other
    assert "rule data_without_truth:" in other and "rule data:" not in other
