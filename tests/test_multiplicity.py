"""Multiple comparisons in the by-benchmark tables (locus.experiments.tables): Holm's correction over the
benchmark columns of one row, the bootstrap p-values it corrects, and the minimum number of test queries
below which a benchmark column marks nothing."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from locus.cli import main
from locus.experiments import bootstrap, tables
from locus.render.latex import MARK

NAN = math.nan


# ------------------------------------------------------------------------------------------------- Holm
def test_holm_on_a_hand_computed_family():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06)
    adjusted = tables.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # NaN is no member of the family (m = 2 here) and stays NaN; adjusted values are capped at 1
    out = tables.holm([0.02, NAN, 0.6])
    assert out[0] == pytest.approx(0.04) and math.isnan(out[1]) and out[2] == pytest.approx(0.6)
    assert tables.holm([0.5, 0.7]) == pytest.approx([1.0, 1.0])
    assert tables.holm([0.03]) == pytest.approx([0.03])  # a family of one: unchanged
    assert tables.holm([]).shape == (0,)


def _sig_row(method, bench, p_best, p_single, n=100, status=tables.RANKED, diff_single=0.1):
    row = {c: None for c in tables.SIGNIFICANCE_COLUMNS}
    row.update(
        method=method,
        metric="routing_acc",
        train_size=256,
        benchmark=bench,
        best="z",
        not_significant_vs_best=False,
        beats_best_single=False,
        diff_to_best_single=diff_single,
        p_vs_best=p_best,
        p_vs_best_single=p_single,
        comparison_status=status,
        n_queries=n,
        confidence=0.95,
    )
    return row


def test_holm_decides_the_benchmark_marks_of_a_toy_table():
    """Method a's four benchmark columns form one family per test (Overall and a small benchmark are no
    members); method b's single column is a family of its own."""
    rows = [
        _sig_row("a", "Overall", NAN, NAN, n=800),
        _sig_row("a", "b1", 0.01, 0.001),
        _sig_row("a", "b2", 0.04, 0.04),
        _sig_row("a", "b3", 0.03, 0.02),
        _sig_row("a", "b4", 0.005, 0.3),
        _sig_row("a", "tiny", 0.001, 0.001, n=20, status=tables.UNMARKED),
        _sig_row("b", "b1", 0.04, 0.04, diff_single=-0.1),
    ]
    sig = tables._benchmark_decisions(pd.DataFrame(rows, columns=tables.SIGNIFICANCE_COLUMNS), bootstrap.Settings())
    by = sig.set_index(["method", "benchmark"])
    a = by.loc["a"]
    assert a.loc[["b1", "b2", "b3", "b4"], "p_vs_best_holm"].tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # vs best single, sorted 0.001 (x4), 0.02 (x3), 0.04 (x2), 0.3 (x1 -> 0.3)
    assert a.loc[["b1", "b2", "b3", "b4"], "p_vs_best_single_holm"].tolist() == pytest.approx([0.004, 0.08, 0.06, 0.3])
    # dagger (not significantly below the best): adjusted p >= 0.05. Unadjusted, b2 (0.04) and b3 (0.03)
    # would have been significantly below; Holm keeps them within reach of the best
    assert a.loc[["b1", "b2", "b3", "b4"], "not_significant_vs_best"].tolist() == [False, True, True, False]
    # bold / underline of a routing cell: adjusted p vs the best single model below 0.05, difference above 0
    above = {b: tables.above_best_single({**a.loc[b].to_dict(), "benchmark": b}) for b in a.index}
    assert [above[b] for b in ("b1", "b2", "b3", "b4")] == [True, False, False, False]
    # the small benchmark is no member of the family and marks nothing, whatever its p-values
    assert math.isnan(a.loc["tiny", "p_vs_best_holm"]) and math.isnan(a.loc["tiny", "p_vs_best_single_holm"])
    assert not a.loc["tiny", "not_significant_vs_best"] and not above["tiny"]
    # Overall keeps its interval decision (here: none) and gets no adjusted p
    assert math.isnan(a.loc["Overall", "p_vs_best_holm"])
    # b: a family of one, p unchanged; a router below the best single model never beats it
    assert by.loc[("b", "b1"), "p_vs_best_holm"] == pytest.approx(0.04)
    assert not by.loc[("b", "b1"), "not_significant_vs_best"]
    assert not tables.above_best_single({**by.loc[("b", "b1")].to_dict(), "benchmark": "b1"})


def test_bootstrap_p_values():
    right, wrong = np.ones(50), np.zeros(50)
    num, den = np.vstack([right, wrong, right]), np.ones((3, 50))
    settings = bootstrap.Settings(n_resamples=500)
    p = tables.paired_p_values(num, den, [(0, 1), (0, 2), (1, 0)], settings)
    assert p.tolist() == [0.0, 1.0, 0.0]  # always right vs always wrong; identical methods
    assert np.isnan(tables.paired_p_values(num[:, :1], den[:, :1], [(0, 1)], settings)).all()  # one query
    coin = np.random.default_rng(0).random((2, 400)) < 0.5
    p = tables.paired_p_values(coin.astype(float), np.ones((2, 400)), [(0, 1)], settings)
    assert 0.05 < p[0] <= 1  # two fair coins: no difference
    assert (tables.paired_p_values(coin.astype(float), np.ones((2, 400)), [(0, 1)], settings) == p).all()  # seeded


# ------------------------------------------------------------------------------------ minimum of queries
SIZES = {"MMLU": 290, "GSM8K": 30, "TruthfulQA": 20}  # test queries per benchmark: the last below the minimum
RIGHT = {"locus": {"MMLU": 203, "GSM8K": 24, "TruthfulQA": 16}, "irt_net": {"MMLU": 174, "GSM8K": 6, "TruthfulQA": 4}}


def _data(directory):
    """Two models: 0 right on every test query, 1 wrong on every one; on validation the other way round, so
    the best single model chosen there is wrong on every test query (any router beats it)."""
    from locus.data.canonical import write_dataset

    benches = [b for b, n in SIZES.items() for _ in range(n)]
    test_ids = np.arange(1000, 1000 + len(benches))
    splits = [("train", i) for i in range(40)] + [("val", i) for i in range(40, 80)]
    queries = pd.DataFrame(
        [{"prompt_id": i, "prompt": f"q {i}", "benchmark": "MMLU", "category": "c", "split": s} for s, i in splits]
        + [
            {"prompt_id": int(i), "prompt": f"q {i}", "benchmark": b, "category": "c", "split": "test"}
            for i, b in zip(test_ids, benches)
        ]
    )
    models = pd.DataFrame({"model_id": [0, 1], "name": ["always/right", "always/wrong"]})
    val = set(range(40, 80))
    scores = pd.DataFrame(
        [(int(i), m, float(m) if i in val else 1.0 - m) for i in queries["prompt_id"] for m in (0, 1)],
        columns=["prompt_id", "model_id", "score"],
    )
    write_dataset(directory, queries, models, scores)
    return test_ids, np.array(benches)


def _run(root, method, correct, test_ids, benches):
    """A run routing to model 0 (right) exactly on the `correct` test queries."""

    def block(mask):
        return {
            "routing_acc": float(mask.mean()),
            "hit@1": float(mask.mean()),
            "correctness_acc": float(mask.mean()),
            "n_queries": int(mask.size),
        }

    test = {"overall": block(correct), "by_benchmark": {b: block(correct[benches == b]) for b in SIZES}}
    metrics = {
        "method": method,
        "params": {"dim": 8},
        "train_size": 256,
        "seed": 0,
        "sampling": "shared",
        "encoder": "enc",
        "dataset": "data/elsewhere",
        "val": test,
        "test": test,
        "reference": {"oracle": {"overall": 1.0}, "random": {"overall": 0.5}, "best_single": {"overall": 0.0}},
    }
    run = root / method
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps(metrics))
    logits = np.where(correct[:, None], [[1.0, -1.0]], [[-1.0, 1.0]])
    pd.DataFrame(
        {
            "prompt_id": np.repeat(test_ids, 2),
            "model_id": np.tile([0, 1], len(test_ids)),
            "logit": logits.reshape(-1).astype(np.float32),
        }
    ).to_parquet(run / "scores_test.parquet")
    return str(run / "metrics.json")


def test_a_benchmark_below_the_minimum_marks_nothing(tmp_path):
    """LOCUS is right on 80% of TruthfulQA's 20 queries and IRT-Net on 20%: a clear difference, yet below
    MIN_BENCHMARK_QUERIES (30) no cell of that column is bold or marked. GSM8K, with exactly 30 queries and the
    same split, is marked."""
    assert tables.MIN_BENCHMARK_QUERIES == 30
    test_ids, benches = _data(tmp_path / "data")
    runs = []
    for method, right in RIGHT.items():
        correct = np.zeros(len(test_ids), dtype=bool)
        for b, k in right.items():
            correct[np.flatnonzero(benches == b)[:k]] = True
        runs.append(_run(tmp_path / "runs", method, correct, test_ids, benches))
    out = tmp_path / "rbd.tex"
    args = ["table", "routing-by-dataset", "--metrics", *runs, "--data", str(tmp_path / "data")]
    assert main([*args, "--out", str(out), "--bootstrap-resamples", "500"]) == 0
    tex = out.read_text()
    # counts under the header (the paper's column order), the small one in italics; the caption names it
    assert "& & \\textbf{(\\%)} & \\textbf{Overall} & TruthfulQA & MMLU & GSM8K \\\\" in tex
    assert "\\multicolumn{3}{r}{\\textit{test queries}} & 340 & \\textit{20} & 290 & 30 \\\\" in tex
    assert "fewer than 30 test queries (counts under the header; TruthfulQA) marks no cell" in tex
    assert "Holm's correction over one family per row and test" in tex
    locus = next(line for line in tex.splitlines() if line.startswith("\\multirow{1}{*}{\\textsc{Locus}"))
    cells = locus.removesuffix(" \\\\").split(" & ")
    truthful, mmlu, gsm8k = cells[4:]
    assert truthful == "80.00" and gsm8k == "\\textbf{80.00}" and mmlu == "\\textbf{70.00}"
    irt = next(line for line in tex.splitlines() if line.startswith("\\multirow{1}{*}{IRT-Net"))
    assert irt.split(" & ")[4] == "20.00" and MARK not in irt
    csv = pd.read_csv(out.with_suffix(".csv"))
    small = csv[(csv.kind == "method") & (csv.benchmark == "TruthfulQA")]
    assert (small.comparison_status == tables.UNMARKED).all() and small.emphasis.isna().all()
    assert not small.not_significant_vs_best.any()
    assert small.p_vs_best_single.notna().all() and small.p_vs_best_single_holm.isna().all()  # tested, not used
    # beats_best_single stays the unadjusted interval's verdict; every bold routing cell has it
    routed = csv[(csv.kind == "method") & (csv.metric == "routing_acc")]
    assert (routed.beats_best_single == (routed.best_single_ci_low_pct > 0)).all()
    assert routed.loc[routed.emphasis == "best", "beats_best_single"].all()
    marked = csv[(csv.kind == "method") & (csv.benchmark == "GSM8K") & (csv.approach == "locus")].iloc[0]
    assert marked.comparison_status == "ranked" and marked.beats_best_single and marked.emphasis == "best"
    assert marked.p_vs_best_single_holm < 0.05
