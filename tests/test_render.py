"""Tables, figures and sample-efficiency factors rendered from fixture metrics.json files."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from locus.cli import main
from locus.errors import DataError
from locus.experiments import comparison
from locus.experiments import sample_efficiency as se
from locus.render.latex import MARK, emphasis, fmt, method_label

BENCHES = ("mmlu", "GSM8K", "zeta", "MathQA")  # stored out of paper order on purpose
N_TEST = 1000  # test queries of the fixture data set; prompt ids 1000..1999, benchmarks cycling BENCHES
TEST_IDS = np.arange(1000, 1000 + N_TEST)


@pytest.fixture
def data(tmp_path):
    """A canonical data set with two models: model 0 is right on every test query, model 1 wrong on every
    one (so a run's hit@1 on a query is 1 exactly where it routes to model 0). On validation it is the
    other way round, so the best single model chosen there (model 1) is wrong on every test query and any
    router beats it (bold stays with the best)."""
    return make_data(tmp_path / "data", val_flipped=True)


def make_data(directory, val_flipped: bool) -> str:
    """The data set of :func:`data`; with `val_flipped` False model 0 is also right on validation, so the
    best single model is model 0, right on every test query: no router can beat it."""
    from locus.data.canonical import write_dataset

    split_ids = {"train": np.arange(0, 40), "val": np.arange(40, 80), "test": TEST_IDS}
    queries = pd.DataFrame(
        [
            {
                "prompt_id": int(i),
                "prompt": f"query {i}",
                "benchmark": BENCHES[int(i) % len(BENCHES)],
                "category": "c",
                "split": split,
            }
            for split, ids in split_ids.items()
            for i in ids
        ]
    )
    models = pd.DataFrame({"model_id": [0, 1], "name": ["always/right", "always/wrong"]})
    flipped = set(split_ids["val"].tolist()) if val_flipped else set()
    scores = pd.DataFrame(
        [(int(i), m, float(m) if i in flipped else 1.0 - m) for i in queries["prompt_id"] for m in (0, 1)],
        columns=["prompt_id", "model_id", "score"],
    )
    write_dataset(directory, queries, models, scores)
    return str(directory)


def write_scores(run_dir, correct) -> None:
    """scores_test.parquet of a run that routes test query i to model 0 (right) exactly where correct[i];
    its correctness predictions are then all right on those queries and all wrong on the others."""
    correct = np.asarray(correct, dtype=bool)
    logits = np.where(correct[:, None], [[1.0, -1.0]], [[-1.0, 1.0]])
    pd.DataFrame(
        {
            "prompt_id": np.repeat(TEST_IDS, 2),
            "model_id": np.tile([0, 1], N_TEST),
            "logit": logits.reshape(-1).astype(np.float32),
        }
    ).to_parquet(run_dir / "scores_test.parquet")


def metrics_dict(method, n, seed, routing, corr, encoder="enc", dataset="data/synthetic", bench_offset=None):
    """A metrics.json like locus.runs.execute writes, with controlled routing/correctness values."""

    def block(r, c):
        return {"routing_acc": r, "hit@1": r, "correctness_acc": c, "n_queries": 10}

    offsets = bench_offset or {b: 0.01 * i for i, b in enumerate(BENCHES)}
    test = {
        "overall": block(routing, corr),
        "by_benchmark": {b: block(routing + o, corr - o) for b, o in offsets.items()},
    }
    ref = {
        "oracle": {"overall": 0.95, **{b: 0.95 for b in offsets}},
        "random": {"overall": 0.30, **{b: 0.30 for b in offsets}},
        "best_single": {"overall": 0.50, **{b: 0.50 for b in offsets}},
        "best_single_position": 0,
    }
    return {
        "method": method,
        "params": {"dim": 8},
        "train_size": n,
        "seed": seed,
        "sampling": "shared",
        "encoder": encoder,
        "dataset": dataset,
        "n_train_pairs": 10,
        "n_models": 3,
        "fit_seconds": 0.1,
        "val": test,
        "test": test,
        "reference": ref,
    }


def write(tmp_path, m, correct=None):
    """metrics.json `m` and its run's test scores: right on the queries `correct` (default: the first
    routing_acc x N_TEST queries of a permutation shared by every method of the same seed, so that a better
    method is right on a superset of the queries of a worse one)."""
    path = tmp_path / "runs" / m["encoder"] / m["method"] / f"n{m['train_size']}" / f"s{m['seed']}" / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(m))
    if correct is None and "test" not in m:
        return str(path)
    if correct is None:
        order = np.random.default_rng(m["seed"]).permutation(N_TEST)
        correct = np.isin(np.arange(N_TEST), order[: round(m["test"]["overall"]["routing_acc"] * N_TEST)])
    write_scores(path.parent, correct)
    return str(path)


# routing at (256, 512) per method, two seeds each; correctness = routing + 0.1
VALUES = {
    "locus": {256: (0.618, 0.620), 512: (0.630, 0.630)},
    "embedllm": {256: (0.580, 0.590), 512: (0.600, 0.600)},
    "irt_net": {256: (0.600, 0.600), 512: (0.640, 0.640)},
}


@pytest.fixture
def runs(tmp_path):
    paths = []
    for method, sizes in VALUES.items():
        for n, vals in sizes.items():
            for seed, v in enumerate(vals):
                paths.append(write(tmp_path, metrics_dict(method, n, seed, v, v + 0.1)))
    return paths


def row(tex, start):
    return next(line for line in tex.splitlines() if line.startswith(start))


def test_fmt_and_emphasis():
    assert fmt(0.619, 0.0014142, 2, "best") == "\\textbf{61.90}{\\scriptsize$\\pm$0.14}"
    assert fmt(0.6, 0.0, 1, "second") == "\\underline{60.00}"
    assert fmt(float("nan")) == "--"
    # ranks on printed values: 0.61901 and 0.61899 both print 61.90 -> both best
    assert emphasis([0.61901, 0.61899, 0.5, float("nan")]) == ["best", "best", "second", ""]
    assert emphasis([0.3]) == [""]


def test_routing_table(runs, data, tmp_path):
    out = tmp_path / "tables" / "routing.tex"
    assert (
        main(
            [
                "table",
                "routing",
                "--metrics",
                *runs,
                "--out",
                str(out),
                "--methods",
                "locus,irt_net,embedllm",
                "--data-label",
                "synthetic (embedded default)",
                "--data",
                data,
            ]
        )
        == 0
    )
    tex = out.read_text()
    assert "synthetic (embedded default)" in tex and "\\label{tab:concise_routing_correctness}" in tex
    locus = row(tex, method_label("locus"))
    # 256: mean 61.90 ± std(0.618, 0.620) = 0.14, best; 512: irt_net 64.00 best, locus 63.00 second (std 0)
    assert locus.split(" & ")[1] == "\\textbf{61.90}{\\scriptsize$\\pm$0.14}"
    assert locus.split(" & ")[2] == "\\underline{63.00}{\\scriptsize$\\pm$0.00}"
    assert row(tex, "IRT-Net").split(" & ")[2].startswith("\\textbf{64.00}")
    assert row(tex, "EmbedLLM").split(" & ")[1] == "58.50{\\scriptsize$\\pm$0.71}"
    # row order follows --methods; reference rows are never bold and have no correctness
    lines = tex.splitlines()
    assert lines.index(locus) < lines.index(row(tex, "IRT-Net")) < lines.index(row(tex, "EmbedLLM"))
    oracle = row(tex, "\\textit{Oracle}")
    assert oracle == "\\textit{Oracle} & 95.00 & 95.00 & -- & -- \\\\"
    assert "\\textit{Best single model (chosen on val)} & 50.00" in tex
    csv = pd.read_csv(out.with_suffix(".csv"))
    cell = csv[(csv.approach == "locus") & (csv.metric == "correctness_acc") & (csv.train_size == 256)]
    assert cell.mean_pct.item() == pytest.approx(71.9) and cell.n_seeds.item() == 2
    assert cell.emphasis.item() == "best"
    assert set(csv.kind) == {"method", "reference"}


def test_by_dataset_tables(runs, data, tmp_path):
    extra = [write(tmp_path, metrics_dict("knn_router", n, 0, 0.7, 0.5)) for n in (256, 512)]
    out = tmp_path / "rbd.tex"
    assert main(["table", "routing-by-dataset", "--metrics", *runs, *extra, "--out", str(out), "--data", data]) == 0
    tex = out.read_text()
    # paper column order for known benchmarks, unknown ones after; the top-model share's column first
    assert "& & \\textbf{(\\%)} & \\textbf{Overall} & MathQA & MMLU & GSM8K & zeta \\\\" in tex
    assert "\\multicolumn{3}{r}{\\textit{test queries}} & 1000 & 250 & 250 & 250 & 250 \\\\" in tex
    assert "Embedding-free routers" in tex
    # knn is best everywhere (70.00), LOCUS second in the 256 block; each row's top-model share after its size
    knn = row(tex, "\\multirow{2}{*}{$k$NN router}")
    assert knn.split(" & ")[2] == "70.0" and knn.split(" & ")[3] == "\\textbf{70.00}"
    locus = row(tex, f"\\multirow{{2}}{{*}}{{{method_label('locus')}}}")
    assert locus.split(" & ")[2] == "61.9" and locus.split(" & ")[3].startswith("\\underline{61.90}")
    assert "\\textit{Oracle} & all & & 95.00" in tex  # reference rows: no share
    csv = pd.read_csv(out.with_suffix(".csv"))
    mmlu = csv[(csv.approach == "locus") & (csv.benchmark == "mmlu") & (csv.train_size == 256)]
    assert mmlu.mean_pct.item() == pytest.approx(61.9)  # mmlu offset 0
    assert (csv[csv.kind == "reference"].emphasis.isna()).all()

    out = tmp_path / "cbd.tex"
    assert (
        main(
            [
                "table",
                "correctness-by-dataset",
                "--metrics",
                *runs,
                "--out",
                str(out),
                "--methods",
                "embedllm,locus",
                "--data",
                data,
            ]
        )
        == 0
    )
    tex = out.read_text()
    assert "IRT-Net" not in tex and "Oracle" not in tex
    assert "Corr. Pred Acc" in tex
    csv = pd.read_csv(out.with_suffix(".csv"))
    assert set(csv.approach) == {"embedllm", "locus"}


# ---------------------------------------------------------------------------------------------- bootstrap
def close_runs(tmp_path, n=256):
    """One seed at `n`: LOCUS right on 700 of the 1000 test queries, IRT-Net on 695 (10 fewer, 5 others:
    within noise of LOCUS), EmbedLLM on 500 (a subset of LOCUS's: clearly worse)."""
    order = np.random.default_rng(11).permutation(N_TEST)
    masks = {"locus": order[:700], "irt_net": order[10:705], "embedllm": order[:500]}
    paths = []
    for method, idx in masks.items():
        acc = len(idx) / N_TEST
        paths.append(write(tmp_path, metrics_dict(method, n, 0, acc, acc), correct=np.isin(np.arange(N_TEST), idx)))
    return paths


def test_dagger_marks_cells_not_significantly_worse_than_the_best(tmp_path, data):
    out = tmp_path / "routing.tex"
    assert (
        main(
            [
                "table",
                "routing",
                "--metrics",
                *close_runs(tmp_path),
                "--out",
                str(out),
                "--data",
                data,
                "--bootstrap-resamples",
                "1000",
            ]
        )
        == 0
    )
    tex = out.read_text()
    assert row(tex, method_label("locus")).split(" & ")[1] == "\\textbf{70.00}"
    assert row(tex, "IRT-Net").split(" & ")[1] == "\\underline{69.50}" + MARK
    assert row(tex, "EmbedLLM").split(" & ")[1] == "50.00"
    assert row(tex, "IRT-Net").split(" & ")[2] == "\\underline{69.50}" + MARK + " \\\\"  # correctness: same
    assert "\\textit{Oracle} & 95.00 & -- \\\\" in tex  # reference rows never carry the mark
    assert (
        "paired bootstrap 95\\% interval of (best $-$ value) over the 1000 test queries (1000 resamples, seed 0, "
        "percentile) includes 0"
    ) in tex
    assert "Mean{\\scriptsize$\\pm$}std" not in tex and "One seed per cell." in tex
    # no router sends 90% of the queries to one model; the caption names the most concentrated one
    assert f"(none here; highest share: 70.0\\%, {method_label('locus')} at $n$ = 256)" in tex
    csv = pd.read_csv(out.with_suffix(".csv")).set_index(["approach", "metric"])
    irt, emb, loc = (csv.loc[(m, "routing_acc")] for m in ("irt_net", "embedllm", "locus"))
    assert irt.diff_to_reference_pct == pytest.approx(-0.5) and irt.ci_low_pct < 0 < irt.ci_high_pct
    assert irt.best == "locus" and irt.diff_to_best_pct == pytest.approx(0.5) and irt.not_significant_vs_best
    assert irt.best_ci_low_pct == pytest.approx(-irt.ci_high_pct)  # the same resamples, seen from the best
    assert irt.best_ci_high_pct == pytest.approx(-irt.ci_low_pct)
    assert emb.diff_to_reference_pct == pytest.approx(-20) and emb.ci_high_pct < 0 and not emb.not_significant_vs_best
    assert -25 < emb.ci_low_pct < -20 < emb.ci_high_pct < -15
    assert (loc.diff_to_reference_pct, loc.ci_low_pct, loc.ci_high_pct) == (0, 0, 0) and not loc.not_significant_vs_best
    assert set(csv.n_queries.dropna()) == {1000} and set(csv.n_boot.dropna()) == {1000}
    assert set(csv.confidence.dropna()) == {0.95} and set(csv.reference.dropna()) == {"locus"}
    assert csv[csv.kind == "reference"][["diff_to_reference_pct", "n_queries"]].isna().all().all()

    # another reference method and level; the same seed gives the same numbers, another seed other intervals
    again = tmp_path / "again.tex"
    args = ["table", "routing", "--metrics", *close_runs(tmp_path), "--data", data, "--bootstrap-resamples", "1000"]
    assert main([*args, "--out", str(again)]) == 0
    assert again.with_suffix(".csv").read_text() == out.with_suffix(".csv").read_text()
    assert main([*args, "--out", str(again), "--bootstrap-seed", "3"]) == 0
    assert again.with_suffix(".csv").read_text() != out.with_suffix(".csv").read_text()
    assert main([*args, "--out", str(again), "--reference-method", "irt_net", "--confidence", "0.9"]) == 0
    other = pd.read_csv(again.with_suffix(".csv")).set_index(["approach", "metric"])
    assert other.loc[("locus", "routing_acc")].diff_to_reference_pct == pytest.approx(0.5)
    assert "90\\% paired bootstrap interval" in again.read_text() and "difference to IRT-Net" in again.read_text()


# routing at n = 256 per seed: EmbedLLM is 2 points behind LOCUS with seed 0, 1 point ahead with seed 1 and 4 points
# behind with seed 2 (each seed's runs share one permutation: the better run is right on a superset of queries)
SEEDED = {"locus": (0.62, 0.60, 0.64), "embedllm": (0.60, 0.61, 0.60)}


def test_per_seed_comparisons_of_a_three_seed_table(tmp_path, data):
    from locus.experiments import tables

    paths = [write(tmp_path, metrics_dict(m, 256, s, v, v)) for m, vals in SEEDED.items() for s, v in enumerate(vals)]
    paths.append(write(tmp_path, metrics_dict("knn_router", 256, 0, 0.5, 0.5)))  # one seed: no per-seed columns
    out = tmp_path / "results" / "tables" / "routing.tex"
    out.parent.mkdir(parents=True)
    assert main(["table", "routing", "--metrics", *paths, "--out", str(out), "--data", data]) == 0
    frame = pd.read_csv(out.with_suffix(".csv"), keep_default_na=False)
    assert list(frame.columns[-4:]) == tables.SEED_COLUMNS  # after the existing columns, which keep their meaning
    cells = frame[frame.kind == "method"].set_index(["approach", "metric"])
    emb = cells.loc[("embedllm", "routing_acc")]
    assert float(emb.diff_to_reference_pct) == pytest.approx(100 * (0.6033333 - 0.62), abs=1e-4)  # pooled: means
    assert emb.seed_diffs_pct == "0:-2.00;1:+1.00;2:-4.00"
    per_seed = tables.parse_seed_strings(emb.seed_diffs_pct, emb.seed_ci_pct)
    assert sorted(per_seed) == [0, 1, 2]
    for d, lo, hi in per_seed.values():
        assert lo <= d <= hi and (hi < 0 if d < 0 else lo > 0)  # 10–40 queries apart of 1000: each significant
    assert emb.best == "locus" and emb.seed_best_diffs_pct == "0:+2.00;1:-1.00;2:+4.00"  # LOCUS, the best, minus it
    assert cells.loc[("embedllm", "correctness_acc")].seed_diffs_pct == "0:-2.00;1:+1.00;2:-4.00"
    loc = cells.loc[("locus", "routing_acc")]
    assert loc.seed_diffs_pct == "0:+0.00;1:+0.00;2:+0.00" and loc.seed_ci_pct.startswith("0:[+0.00,+0.00];")
    knn = cells.loc[("knn_router", "routing_acc")]
    assert knn.n_seeds == 1 and (knn[tables.SEED_COLUMNS] == "").all()
    assert (frame.loc[frame.kind == "reference", tables.SEED_COLUMNS] == "").all().all()
    # the claims ledger reads them: LOCUS ahead of EmbedLLM on the means and with seeds 0 and 2, behind with seed 1
    from locus.experiments import claims
    from locus.experiments.report import Source

    cells = claims.comparison_cells(Source(tmp_path / "results"), "tables/routing.csv", "routing_acc", ("embedllm",))
    judged = claims.judge_ahead(cells, [])
    assert judged.verdict == "inconclusive"
    assert judged.reason.startswith("differs between seeds: seed 0 holds, seed 1 refuted, seed 2 holds")
    assert judged.ours.startswith("EmbedLLM n=256: +1.7 [") and judged.ours.endswith("(seeds −1.0 to +4.0)")
    # one seed per cell (the default config): the columns stay empty
    single = tmp_path / "single.tex"
    args = ["table", "routing", "--metrics", *[p for p in paths if "/s0/" in p], "--data", data, "--out", str(single)]
    assert main(args) == 0
    assert (pd.read_csv(single.with_suffix(".csv"), keep_default_na=False)[tables.SEED_COLUMNS] == "").all().all()


def test_seed_strings_round_trip():
    from locus.experiments import tables

    per_seed = {2: (0.0088, -0.001, 0.02), 0: (0.0123, -0.011, 0.035), 1: (-0.004, float("nan"), float("nan"))}
    diffs, cis = tables.seed_strings(per_seed)
    assert diffs == "0:+1.23;1:-0.40;2:+0.88" and cis == "0:[-1.10,+3.50];1:[nan,nan];2:[-0.10,+2.00]"
    back = tables.parse_seed_strings(diffs, cis)
    assert back[0] == (1.23, -1.1, 3.5) and back[2] == (0.88, -0.1, 2.0) and math.isnan(back[1][1])
    assert tables.seed_strings({}) == ("", "") and tables.parse_seed_strings("", "") == {}
    no_ci = tables.parse_seed_strings("0:+1.00;1:-2.00")  # no interval text: NaN bounds
    assert [d for d, _, _ in no_ci.values()] == [1.0, -2.0] and all(math.isnan(lo) for _, lo, _ in no_ci.values())
    with pytest.raises(ValueError):
        tables.parse_seed_strings("0+1.00")


def test_by_dataset_marks_follow_the_intervals(runs, data, tmp_path):
    from locus.experiments import tables

    out = tmp_path / "rbd.tex"
    assert (
        main(
            [
                "table",
                "routing-by-dataset",
                "--metrics",
                *runs,
                *close_runs(tmp_path, 1024),
                "--out",
                str(out),
                "--data",
                data,
            ]
        )
        == 0
    )
    csv = pd.read_csv(out.with_suffix(".csv"))
    methods = csv[csv.kind == "method"]
    # every benchmark column resamples its own queries (a quarter each), Overall all of them
    assert set(methods[methods.benchmark == "Overall"].n_queries) == {N_TEST}
    assert set(methods[methods.benchmark != "Overall"].n_queries) == {N_TEST // len(BENCHES)}
    # Overall: the mark is exactly "not the bold cell and the interval of (best - cell) includes 0"
    overall = methods[methods.benchmark == "Overall"]
    includes = (overall.best_ci_low_pct <= 0) & (overall.best_ci_high_pct >= 0)
    assert (overall.not_significant_vs_best == (includes & (overall.emphasis != "best"))).all()
    assert overall.p_vs_best.isna().all() and overall.p_vs_best_holm.isna().all()
    # benchmark columns: "Holm-adjusted p (over the row's benchmark columns) >= 0.05", the adjusted values
    # being Holm's of the row's p-values
    bench = methods[methods.benchmark != "Overall"]
    assert (bench.not_significant_vs_best == (bench.p_vs_best_holm >= 0.05)).all()
    assert (bench.comparison_status == "ranked").all()
    for _, family in bench.groupby(["approach", "train_size"]):
        assert np.allclose(tables.holm(family.p_vs_best), family.p_vs_best_holm, equal_nan=True)
        assert np.allclose(tables.holm(family.p_vs_best_single), family.p_vs_best_single_holm, equal_nan=True)
    # the same resamples as the intervals: an unadjusted p below 0.05 where the interval excludes 0
    tested = bench.dropna(subset=["p_vs_best"])
    excludes = (tested.best_ci_low_pct > 0) | (tested.best_ci_high_pct < 0)
    assert ((tested.p_vs_best < 0.05) == excludes).all() and len(tested) > 10
    assert methods.not_significant_vs_best.any() and not methods.not_significant_vs_best.all()
    tex = out.read_text()
    assert tex.count(MARK) == int(methods.not_significant_vs_best.sum()) + 1  # + the caption's
    assert "over the test queries (all 1000 for Overall, the benchmark's own in its column; 2000 resamples" in tex


def test_near_constant_router_is_flagged_and_bold_needs_beating_the_best_single(tmp_path):
    """LOCUS routes 96% of the test queries to model 0 (near-constant), IRT-Net 70%, EmbedLLM 60%. LOCUS is
    not ranked (inconclusive): the column's best is IRT-Net. Where model 0 (right on every test query) is also best on
    validation, IRT-Net does not beat the best single model and is not bold; where validation picks model 1
    (always wrong on test), it beats it and is bold, while LOCUS, though above it, stays unranked."""
    from locus.experiments.tables import INCONCLUSIVE
    from locus.render.latex import NEAR_CONSTANT_MARK

    order = np.random.default_rng(5).permutation(N_TEST)
    runs = [
        write(tmp_path, metrics_dict(m, 256, 0, k / N_TEST, k / N_TEST), correct=np.isin(np.arange(N_TEST), order[:k]))
        for m, k in (("locus", 960), ("irt_net", 700), ("embedllm", 600))
    ]
    tables = {}
    for name, flipped in (("strong", False), ("weak", True)):
        data = make_data(tmp_path / f"data-{name}", val_flipped=flipped)
        out = tmp_path / f"{name}.tex"
        args = ["table", "routing", "--metrics", *runs, "--data", data, "--bootstrap-resamples", "500"]
        assert main([*args, "--out", str(out)]) == 0
        tables[name] = (out.read_text(), pd.read_csv(out.with_suffix(".csv")).set_index(["approach", "metric"]))
    tex, csv = tables["strong"]
    loc, irt = csv.loc[("locus", "routing_acc")], csv.loc[("irt_net", "routing_acc")]
    # diversity: LOCUS sends 960 of 1000 queries to model 0 -> near-constant; IRT-Net 70% -> not
    assert loc.top_model == "always/right" and loc.top_model_share == pytest.approx(0.96)
    assert loc.n_models_used == 2 and 0 < loc.choice_entropy < 0.3 and loc.near_constant
    assert irt.top_model_share == pytest.approx(0.70) and not irt.near_constant
    # LOCUS is inconclusive: not ranked, no mark; the column's best is IRT-Net, ranked with EmbedLLM
    assert loc.comparison_status == INCONCLUSIVE and irt.comparison_status == "ranked"
    assert irt.best == "irt_net" and loc.best == "irt_net" and not loc.not_significant_vs_best
    # best single = 100% on test: both below it, significantly; nothing bold
    assert loc.diff_to_best_single_pct == pytest.approx(-4.0) and loc.best_single_ci_high_pct < 0
    assert not loc.beats_best_single and pd.isna(loc.emphasis) and pd.isna(irt.emphasis)
    assert row(tex, method_label("locus")).split(" & ")[1] == "96.00" + NEAR_CONSTANT_MARK
    assert row(tex, "IRT-Net").split(" & ")[1] == "70.00"  # the best ranked, but below the best single model
    # every routing cell's top-model share, printed in a block under the routing columns (the mark kept)
    assert "\\textit{Top-model share (\\%)" in tex
    shares = [line for line in tex.splitlines() if line.startswith(method_label("locus"))]
    assert len(shares) == 2 and shares[1] == f"{method_label('locus')} & 96.0{NEAR_CONSTANT_MARK} &  \\\\"
    assert [line for line in tex.splitlines() if line.startswith("IRT-Net")][1] == "IRT-Net & 70.0 &  \\\\"
    # correctness columns keep the plain ranking (the best single model predicts no correctness)
    assert csv.loc[("locus", "correctness_acc")].emphasis == "best"
    assert csv.loc[("locus", "correctness_acc")].comparison_status == "ranked"
    assert pd.isna(csv.loc[("locus", "correctness_acc")].top_model_share)
    assert "significantly above the best single model" in tex and f"{method_label('locus')} at $n$ = 256)" in tex
    assert "inconclusive (near-constant), not ranked" in tex
    # the same runs against a best single model that is always wrong: IRT-Net beats it and is bold; LOCUS,
    # 96 points above it, is still not ranked (a near-constant router is "always pick model 0")
    tex, csv = tables["weak"]
    loc, irt = csv.loc[("locus", "routing_acc")], csv.loc[("irt_net", "routing_acc")]
    assert loc.diff_to_best_single_pct == pytest.approx(96.0) and loc.best_single_ci_low_pct > 0
    assert loc.beats_best_single and pd.isna(loc.emphasis) and loc.comparison_status == INCONCLUSIVE
    assert irt.beats_best_single and irt.emphasis == "best"
    assert row(tex, method_label("locus")).split(" & ")[1] == "96.00" + NEAR_CONSTANT_MARK
    assert row(tex, "IRT-Net").split(" & ")[1] == "\\textbf{70.00}"


def test_bootstrap_refuses_mismatched_inputs(runs, data, tmp_path, capsys):
    out = str(tmp_path / "t.tex")
    assert (
        main(["table", "routing", "--metrics", *runs, "--out", out, "--data", data, "--reference-method", "knn_router"])
        == 2
    )
    assert "reference method 'knn_router' is not among the table's methods" in capsys.readouterr().err
    # a data set with other test queries than the runs were scored on
    from locus.data.canonical import read_dataset, write_dataset

    d = read_dataset(data)
    write_dataset(
        tmp_path / "other", d.queries[d.queries.prompt_id != 1999], d.models, d.scores[d.scores.prompt_id != 1999]
    )
    assert main(["table", "routing", "--metrics", *runs, "--out", out, "--data", str(tmp_path / "other")]) == 2
    assert "are not the 999 test queries of" in capsys.readouterr().err
    # a run whose scores are missing
    from pathlib import Path

    (Path(runs[0]).parent / "scores_test.parquet").unlink()
    assert main(["table", "routing", "--metrics", *runs, "--out", out, "--data", data]) == 2
    assert "scores_test.parquet: missing" in capsys.readouterr().err
    # the default data set is the one recorded in the runs (here a path that does not exist)
    assert main(["table", "routing", "--metrics", *runs[1:], "--out", out]) == 2
    assert "data/synthetic" in capsys.readouterr().err
    assert main(["table", "routing", "--metrics", *runs, "--out", out, "--confidence", "1"]) == 2


def test_first_crossing_and_factor_on_known_curve():
    sizes = [64, 128, 256, 512, 1024]
    ref = [0.50 + 0.05 * math.log2(n / 64) for n in sizes]  # R reaches a at n_R(a)
    slow = [0.50 + 0.05 * math.log2(n / 256) for n in sizes]  # M needs exactly 4x as many samples
    n, status = se.first_crossing(sizes, slow, 0.575)  # halfway between 512 and 1024 in log2
    assert status == "exact" and n == pytest.approx(512 * math.sqrt(2))
    f = se.factor(sizes, ref, sizes, slow, 0.575)
    assert f["crossing"] == "exact" and f["factor"] == pytest.approx(4.0)
    assert se.factor(sizes, ref, sizes, slow, 0.68)["crossing"] == "lower_bound"  # M never gets there
    # non-monotone curve: the first crossing counts, not a later one
    n, status = se.first_crossing([64, 128, 256], [0.5, 0.7, 0.6], 0.6)
    assert status == "exact" and n == pytest.approx(64 * 2**0.5)
    curve = pd.DataFrame(
        {"method": ["locus"] * 5 + ["m"] * 5, "train_size": sizes * 2, "mean": ref + slow, "std": 0.0, "n_seeds": 1}
    )
    table, summary = se.efficiency(curve, "locus")
    assert summary["reference_point"] == 256
    at = summary["methods"]["m"]["at_reference_point"]
    assert at["crossing"] == "exact" and at["factor"] == pytest.approx(4.0)
    assert summary["methods"]["m"]["max"]["factor"] == pytest.approx(4.0)
    assert set(table.crossing) >= {"exact", "lower_bound"} and set(table.status) == {"no_interval"}


def test_sample_efficiency_figure(tmp_path):
    sizes = [64, 128, 256, 512, 1024]
    paths = []
    for seed in (0, 1):
        for n in sizes:
            jitter = 0.002 * seed
            paths.append(write(tmp_path, metrics_dict("locus", n, seed, 0.5 + 0.05 * math.log2(n / 64) + jitter, 0.6)))
            paths.append(
                write(tmp_path, metrics_dict("embedllm", n, seed, 0.5 + 0.05 * math.log2(n / 256) + jitter, 0.6))
            )
    out = tmp_path / "figures" / "train_sample_eff.pdf"
    assert main(["figure", "sample-efficiency", "--metrics", *paths, "--out", str(out)]) == 0
    png = out.with_suffix(".png").read_bytes()
    assert out.stat().st_size > 1000 and png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    data = pd.read_csv(out.with_suffix(".csv"))
    curve = data[(data.kind == "curve") & (data.method == "locus") & (data.train_size == 256)]
    assert curve["mean"].item() == pytest.approx(0.601) and curve.n_seeds.item() == 2
    factors = json.loads(out.with_suffix(".json").read_text())
    assert factors["methods"]["embedllm"]["at_reference_point"]["factor"] == pytest.approx(4.0)
    assert factors["reference_method"] == "locus"


def test_bad_inputs(tmp_path, runs, capsys):
    no_test = metrics_dict("locus", 256, 5, 0.6, 0.7)
    del no_test["test"]
    bad = write(tmp_path, no_test)
    with pytest.raises(DataError, match="no 'test' metrics"):
        comparison.load_metrics([bad])
    assert main(["table", "routing", "--metrics", bad, "--out", str(tmp_path / "t.tex")]) == 2
    assert bad in capsys.readouterr().err

    other = write(tmp_path, metrics_dict("locus", 256, 9, 0.6, 0.7, encoder="other"))
    with pytest.raises(DataError, match="mix several values of 'encoder'"):
        comparison.collect(runs + [other])
    with pytest.raises(DataError, match="pass each run once"):
        comparison.collect(runs + [runs[0]])
    with pytest.raises(DataError, match="no metrics for method"):
        comparison.collect(runs, methods=["locus", "nope"])
    with pytest.raises(DataError, match="not found"):
        comparison.load_metrics([str(tmp_path / "missing.json")])
    bad_params = metrics_dict("locus", 256, 7, 0.6, 0.7)
    bad_params["params"] = [16]
    with pytest.raises(DataError, match="'params' must be a JSON object"):
        comparison.load_metrics([write(tmp_path, bad_params)])
    with pytest.raises(DataError, match="one training size only"):
        se.efficiency(
            pd.DataFrame({"method": ["locus"], "train_size": [64], "mean": [0.5], "std": [0.0], "n_seeds": [1]}),
            "locus",
        )


def test_a_run_that_predates_a_parameter_compares_at_its_default(tmp_path):
    """A LOCUS run written before `ema_decay` existed (its params lack the key) and a new run with the same
    settings are one cell; a new run that sets the parameter to something else is refused."""
    from locus.methods import method_class

    defaults = dict(method_class("locus").defaults)
    old_params = {k: v for k, v in defaults.items() if k != "ema_decay"}
    runs = []
    for seed, params in ((0, old_params), (1, defaults)):
        m = metrics_dict("locus", 256, seed, 0.6, 0.7)
        m["params"] = params
        runs.append(write(tmp_path, m))
    assert len(comparison.collect(runs).runs) == 2
    m = metrics_dict("locus", 256, 2, 0.6, 0.7)
    m["params"] = {**defaults, "ema_decay": 0.9}
    with pytest.raises(DataError, match="different params"):
        comparison.collect(runs + [write(tmp_path, m)])
    assert comparison.with_predated_defaults("not_registered", {"a": 1}) == {"a": 1}


def test_factor_labels_read_in_the_right_direction():
    from locus.render.figures import factor_label

    assert factor_label(2.7) == "2.7× fewer"
    assert factor_label(1.0) == "1.0× fewer"
    assert factor_label(0.4) == "2.5× more"


# ---------------------------------------------------------------------------------------------- labels
def test_method_labels_come_from_the_method_classes(monkeypatch, tmp_path, data):
    from locus.methods import method_class
    from locus.render import labels

    cls = method_class("irt_net")
    assert labels.latex_label("irt_net") == getattr(cls, "latex_label", "irt\\_net")
    monkeypatch.setattr(cls, "latex_label", "IRT-\\textsc{Net}", raising=False)
    monkeypatch.setattr(cls, "label", "IRT Net (plain)", raising=False)
    # a method no longer registered: its escaped name, after the registered ones
    paths = [
        write(tmp_path, metrics_dict(m, n, 0, 0.6, 0.7)) for m in ("old_method", "irt_net", "locus") for n in (256, 512)
    ]
    out = tmp_path / "t.tex"
    assert main(["table", "routing", "--metrics", *paths, "--out", str(out), "--data", data]) == 0
    body = [line.split(" & ")[0] for line in out.read_text().splitlines() if " & " in line][2:5]
    assert body == [method_label("locus"), "IRT-\\textsc{Net}", "old\\_method"]
    csv = pd.read_csv(out.with_suffix(".csv"))
    assert set(csv[csv.approach == "irt_net"].label) == {"IRT Net (plain)"}
    assert set(csv[csv.approach == "old_method"].label) == {"old_method"}


def test_embedding_free_block_follows_the_classes():
    from locus.render import labels

    assert not labels.has_embeddings("knn_router") and not labels.has_embeddings("kmeans_router")
    assert labels.has_embeddings("locus") and labels.has_embeddings("not_registered")


# ---------------------------------------------------------------------------------------------- data labels
def test_captions_name_the_data_set_given_or_recorded(tmp_path, data):
    from locus.experiments import tables

    paths = [
        write(tmp_path, metrics_dict(m, 256, 0, 0.6, 0.7, dataset="results/data/llm_router"))
        for m in ("locus", "irt_net")
    ]
    out = tmp_path / "t.tex"
    assert main(["table", "routing-by-dataset", "--metrics", *paths, "--out", str(out), "--data", data]) == 0
    tex = out.read_text()
    assert "data set llm\\_router (query encoder: enc)" in tex and "results/data" not in tex
    assert (
        main(
            ["table", "routing", "--metrics", *paths, "--out", str(out), "--data-label", "EmbedLLM 10%", "--data", data]
        )
        == 0
    )
    assert "data set EmbedLLM 10\\% (query encoder" in out.read_text()
    cap = tables.caption("correctness-by-dataset", "my_data", "mpnet", "val", (1, 1))
    assert cap.startswith(
        "Overall and per-benchmark correctness prediction accuracy (\\%) on the val split of the data set my\\_data"
    ) and cap.endswith("One seed per cell.")
    assert "(reference rows excluded)" not in cap
    assert tables.seeds_sentence((2, 3)) == "Mean{\\scriptsize$\\pm$}std over 2--3 seeds."
    assert comparison.dataset_name("results/data/embedllm/") == "embedllm"


def test_no_hard_coded_data_set_in_render_or_experiments():
    from pathlib import Path

    import locus

    root = Path(locus.__file__).parent
    for path in [*root.glob("render/*.py"), *root.glob("experiments/*.py")]:
        assert "synthetic" not in path.read_text().lower(), path


def test_figure_title_data_and_summary(tmp_path):
    from locus.experiments import figures
    from locus.render.figures import figure_title

    assert figure_title("EmbedLLM", "all-mpnet-base-v2", "test") == "EmbedLLM (all-mpnet-base-v2), test"
    paths = []
    for n in (64, 128, 256):
        for method, shift in (("locus", 0.0), ("embedllm", -0.05)):
            paths.append(
                write(
                    tmp_path,
                    metrics_dict(
                        method, n, 0, 0.5 + 0.05 * math.log2(n / 64) + shift, 0.6, dataset="results/data/embedllm"
                    ),
                )
            )
    out = tmp_path / "fig" / "se.pdf"
    summary = figures.sample_efficiency(paths, out)
    assert summary["dataset"] == "embedllm" and summary["encoder"] == "enc"
    assert json.loads(out.with_suffix(".json").read_text())["dataset"] == "embedllm"
    lines = figures.report_lines(summary)
    assert len(lines) == 1 and lines[0].startswith("locus vs embedllm: at n=128")
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert list(frame.columns) == figures.CSV_COLUMNS
    assert set(frame.kind) == {"curve", "isotonic", "best_single", "factor"}
    assert frame.loc[frame.kind == "best_single", "mean"].tolist() == [0.5]  # the runs' val-chosen best single
    assert summary["best_single"] == 0.5
    assert figures.json_safe({"a": [float("nan"), 1.0], "b": float("inf")}) == {"a": [None, 1.0], "b": None}
    with pytest.raises(Exception, match="not among --methods"):
        figures.sample_efficiency(paths, out, methods=["embedllm"])


def test_table_caption_states_the_grid_that_ran_against_the_papers():
    from pathlib import Path

    import yaml

    from locus.experiments import tables

    cfg = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())
    assert list(tables.PAPER_TRAIN_SIZES) == cfg["train_sizes"] and list(tables.PAPER_SEEDS) == cfg["seeds"]
    text = tables.grid_sentence([1024, 256], [0])
    assert "$n$ $\\in$ \\{256, 1024\\}" in text and "1 seed (0)" in text
    assert "2 of the paper's 3 training sizes \\{256, 512, 1024\\}" in text and "config/paper.yaml" in text
    assert "state no number of seeds" in text
    assert "and 1 outside them" in tables.grid_sentence([64, 256, 512, 1024], [0, 1, 2])
    assert "--configfile" not in tables.grid_sentence([256, 512, 1024], [0, 1, 2])
    cap = tables.caption("routing", "d", "e", "test", (1, 1), grid=text)
    assert text in cap
