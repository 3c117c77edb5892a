"""Ablation tables (locus.experiments.ablation, `locus table {dim,encoder}-ablation-*`, workflow/rules/ablation.smk)
from hand-made run directories whose answers are known, and the rules' DAG and config checks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from locus.cli import main
from locus.errors import DataError
from locus.experiments import ablation, comparison
from locus.render.latex import MARK

REPO = Path(__file__).resolve().parents[1]
BENCHES = ("MathQA", "mmlu")
N_TEST = 400  # prompt ids 1000..1399, benchmarks alternating
TEST_IDS = np.arange(1000, 1000 + N_TEST)
PARAMS = {"heads": 4, "layers": 2, "recipe": "fast"}


@pytest.fixture
def data(tmp_path):
    """Two models: model 0 right on every query, model 1 wrong on every one (a run's hit@1 on a query is 1
    exactly where it routes to model 0). On validation it is the other way round, so the best single model
    chosen there (model 1) is wrong on every test query and any router beats it (bold stays with the best)."""
    from locus.data.canonical import write_dataset

    split_ids = {"train": np.arange(0, 40), "val": np.arange(40, 80), "test": TEST_IDS}
    queries = pd.DataFrame(
        [
            {
                "prompt_id": int(i),
                "prompt": f"query {i}",
                "benchmark": BENCHES[int(i) % 2],
                "category": "c",
                "split": split,
            }
            for split, ids in split_ids.items()
            for i in ids
        ]
    )
    models = pd.DataFrame({"model_id": [0, 1], "name": ["always/right", "always/wrong"]})
    val = set(split_ids["val"].tolist())
    scores = pd.DataFrame(
        [(int(i), m, float(m) if i in val else 1.0 - m) for i in queries["prompt_id"] for m in (0, 1)],
        columns=["prompt_id", "model_id", "score"],
    )
    write_dataset(tmp_path / "data", queries, models, scores)
    return str(tmp_path / "data")


def write_run(tmp_path, n_right, n=256, seed=0, dim=128, encoder="enc-a", method="locus", params=None):
    """A run directory (metrics.json + scores_test.parquet) right on the first `n_right` test queries:
    better settings are right on a superset of the queries of worse ones."""
    correct = np.arange(N_TEST) < n_right
    acc = n_right / N_TEST

    def block(mask):
        v = float(mask.mean())
        return {"routing_acc": v, "hit@1": v, "correctness_acc": v, "n_queries": int(mask.size)}

    by_bench = {b: block(correct[TEST_IDS % 2 == i]) for i, b in enumerate(BENCHES)}
    test = {"overall": block(correct), "by_benchmark": by_bench}
    ref = {"oracle": {"overall": 1.0}, "random": {"overall": 0.5}, "best_single": {"overall": 1.0}}
    metrics = {
        "method": method,
        "params": {**(PARAMS if params is None else params), "dim": dim},
        "train_size": n,
        "seed": seed,
        "sampling": "shared",
        "encoder": encoder,
        "dataset": "data/elsewhere",
        "val": test,
        "test": test,
        "reference": ref,
    }
    assert test["overall"]["routing_acc"] == acc
    run = tmp_path / "runs" / encoder / method / f"n{n}" / f"d{dim}" / f"s{seed}"
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.json").write_text(json.dumps(metrics))
    logits = np.where(correct[:, None], [[1.0, -1.0]], [[-1.0, 1.0]])
    pd.DataFrame(
        {
            "prompt_id": np.repeat(TEST_IDS, 2),
            "model_id": np.tile([0, 1], N_TEST),
            "logit": logits.reshape(-1).astype(np.float32),
        }
    ).to_parquet(run / "scores_test.parquet")
    return str(run / "metrics.json")


def row(tex, start):
    return next(line for line in tex.splitlines() if line.startswith(start))


@pytest.fixture
def dim_runs(tmp_path):
    """d = 16: 200 right; d = 32: 240; d = 128 (the reference): 280 and 284 over two seeds; all at n = 256
    and (d = 128 only) n = 512."""
    return [
        write_run(tmp_path, 200, dim=16),
        write_run(tmp_path, 240, dim=32),
        write_run(tmp_path, 280, dim=128),
        write_run(tmp_path, 284, dim=128, seed=1),
        write_run(tmp_path, 300, n=512, dim=128),
    ]


def test_dim_ablation_rows_labels_and_reference(dim_runs, data, tmp_path):
    out = tmp_path / "dim.tex"
    # rows given in an order other than the default one; the table keeps it
    assert (
        main(
            [
                "table",
                "dim-ablation-routing",
                "--metrics",
                *dim_runs,
                "--out",
                str(out),
                "--data",
                data,
                "--reference-setting",
                "128",
                "--settings",
                "32,16,128",
                "--bootstrap-resamples",
                "300",
            ]
        )
        == 0
    )
    tex = out.read_text()
    assert "\\label{tab:routing_acc_by_dataset_full_embed_dim_ablation}" in tex
    assert "\\multirow{2}{*}{\\textbf{Model Embedding Dimension}}" in tex and "Approach" not in tex
    assert "Oracle" not in tex and "Embedding-free" not in tex  # the paper's ablation tables have neither
    lines = tex.splitlines()
    d32, d16, d128 = (row(tex, f"\\multirow{{2}}{{*}}{{{lab}}}") for lab in ("32", "16", "128 (default)"))
    assert lines.index(d32) < lines.index(d16) < lines.index(d128)
    # n = 256: d128 mean (70.00, 71.00) = 70.50 ± 0.71 is best; d32 60.00 second; d16 50.00; each row's
    # top-model share (the routed share to the always-right model) before its cells
    assert d128.split(" & ")[2:4] == ["70.5", "\\textbf{70.50}{\\scriptsize$\\pm$0.71}"]
    assert d32.split(" & ")[3] == "\\underline{60.00}" and d16.split(" & ")[3] == "50.00"
    assert d32.split(" & ")[2] == "60.0"
    # n = 512: only d128 has a run; the others print --
    assert lines[lines.index(d16) + 1].split(" & ")[1:4] == ["512", "--", "--"]
    assert "difference to model embedding dimension 128 (default) with its" in tex
    assert "query encoder: enc-a" in tex
    # the grid read from the runs, against the paper's
    assert "Grid run: $d$ $\\in$ \\{16, 32, 128\\} $\\times$ $n$ $\\in$ \\{256, 512\\}" in tex
    assert "3 of the paper's 6 embedding dimensions" in tex

    csv = pd.read_csv(out.with_suffix(".csv"))
    assert set(csv.kind) == {"method"} and set(csv.ablation) == {"dim"} and set(csv.method) == {"locus"}
    overall = csv[(csv.benchmark == "Overall") & (csv.train_size == 256)].set_index("approach")
    assert list(overall.index) == ["d32", "d16", "d128"]
    assert overall.loc["d128", "label"] == "128 (default)" and overall.loc["d16", "label"] == "16"
    assert overall.setting.to_dict() == {"d32": 32, "d16": 16, "d128": 128}
    assert overall.is_reference_setting.to_dict() == {"d32": False, "d16": False, "d128": True}
    assert set(csv.reference.dropna()) == {"d128"}  # empty only for the missing cells (--)
    assert csv[csv.reference.isna()].mean_pct.isna().all()
    # each row's paired difference to d = 128 (the per-query mean over its two seeds: 282 right of 400)
    assert overall.loc["d128", ["diff_to_reference_pct", "ci_low_pct", "ci_high_pct"]].tolist() == [0, 0, 0]
    assert overall.loc["d16", "diff_to_reference_pct"] == pytest.approx(100 * (200 - 282) / N_TEST)
    assert overall.loc["d16", "ci_high_pct"] < 0 < overall.loc["d128", "mean_pct"]
    assert overall.loc["d16", "n_seeds"] == 1 and overall.loc["d128", "n_seeds"] == 2


def test_close_settings_get_the_dagger(tmp_path, data):
    # d = 64 right on 279 of 400, d = 128 on 280 (a superset): not significantly different -> dagger
    runs = [write_run(tmp_path, 279, dim=64), write_run(tmp_path, 280, dim=128), write_run(tmp_path, 100, dim=8)]
    out = tmp_path / "close.tex"
    assert (
        main(
            [
                "table",
                "dim-ablation-correctness",
                "--metrics",
                *runs,
                "--out",
                str(out),
                "--data",
                data,
                "--reference-setting",
                "128",
                "--bootstrap-resamples",
                "300",
            ]
        )
        == 0
    )
    tex = out.read_text()
    assert "Corr. Pred Acc" in tex and "tab:correctness_pred_by_dataset_full_emb_dim_ablation" in tex
    assert row(tex, "\\multirow{1}{*}{64}").split(" & ")[2] == "\\underline{69.75}" + MARK
    assert row(tex, "\\multirow{1}{*}{8}").split(" & ")[2] == "25.00"
    # default order: dimensions ascending
    lines = tex.splitlines()
    assert lines.index(row(tex, "\\multirow{1}{*}{8}")) < lines.index(row(tex, "\\multirow{1}{*}{64}"))
    csv = pd.read_csv(out.with_suffix(".csv"))
    methods = csv[csv.benchmark == "Overall"].set_index("approach")
    assert methods.loc["d64", "not_significant_vs_best"] and not methods.loc["d8", "not_significant_vs_best"]


def test_near_constant_settings_read_inconclusive(tmp_path, data):
    """d = 32 routes 380 of the 400 test queries to the always-right model (95%: near-constant), d = 64 and
    d = 128 route 60% and 70% there. The d = 32 row is not ranked although its mean is the highest: it reads
    "inconclusive (near-constant)" and d = 128 is the best; with only near-constant settings nothing is."""
    from locus.experiments.tables import INCONCLUSIVE
    from locus.render.latex import NEAR_CONSTANT_MARK

    runs = [write_run(tmp_path, 380, dim=32), write_run(tmp_path, 240, dim=64), write_run(tmp_path, 280, dim=128)]
    out = tmp_path / "near.tex"
    args = ["table", "dim-ablation-routing", "--data", data, "--reference-setting", "128"]
    assert main([*args, "--metrics", *runs, "--out", str(out), "--bootstrap-resamples", "300"]) == 0
    tex = out.read_text()
    d32 = row(tex, "\\multirow{1}{*}{32}")
    assert d32.split(" & ")[2:4] == ["95.0" + NEAR_CONSTANT_MARK, "95.00" + NEAR_CONSTANT_MARK]  # no bold
    assert d32.split(" & ")[4] == (
        "\\multicolumn{2}{c}{\\textit{inconclusive (near-constant): 95.0\\% of the test queries to always/right; "
        "values in the CSV}} \\\\"
    )
    assert row(tex, "\\multirow{1}{*}{128 (default)}").split(" & ")[3] == "\\textbf{70.00}"
    assert "inconclusive (near-constant), not ranked" in tex and "$d$ = 32 at $n$ = 256" in tex
    csv = pd.read_csv(out.with_suffix(".csv"))
    d32_rows = csv[csv.approach == "d32"]
    assert len(d32_rows) == 3 and (d32_rows.comparison_status == INCONCLUSIVE).all()
    assert d32_rows.emphasis.isna().all() and not d32_rows.not_significant_vs_best.any()
    assert (d32_rows.mean_pct == 95.0).all()  # the values stay in the CSV
    assert (csv[csv.approach != "d32"].comparison_status == "ranked").all()
    assert set(csv.best.dropna()) == {"d128"}

    # only near-constant settings: the comparison is inconclusive, nothing ranked or marked
    runs = [write_run(tmp_path, 380, dim=32), write_run(tmp_path, 395, dim=16)]
    assert main([*args, "--metrics", *runs, "--out", str(out), "--reference-setting", "16"]) == 0
    tex = out.read_text()
    assert "\\textbf{" not in tex.split("\\midrule", 1)[1] and MARK not in tex.split("\\begin{tabular}")[1]
    assert tex.count("\\textit{inconclusive (near-constant):") == 2
    csv = pd.read_csv(out.with_suffix(".csv"))
    assert (csv.comparison_status == INCONCLUSIVE).all() and csv.best.isna().all() and csv.emphasis.isna().all()
    # correctness prediction is no routing: the same runs are ranked there
    out = tmp_path / "near-correctness.tex"
    args[1] = "dim-ablation-correctness"
    assert main([*args, "--metrics", *runs, "--out", str(out), "--reference-setting", "16"]) == 0
    csv = pd.read_csv(out.with_suffix(".csv"))
    assert (csv.comparison_status == "ranked").all() and "inconclusive" not in out.read_text()


@pytest.fixture
def encoder_runs(tmp_path):
    return [
        write_run(tmp_path, 280, encoder="enc-a"),
        write_run(tmp_path, 300, encoder="enc_b"),
        write_run(tmp_path, 200, encoder="enc-c"),
    ]


def test_encoder_ablation_mixes_encoders_other_tables_refuse(encoder_runs, data, tmp_path, capsys):
    out = tmp_path / "enc.tex"
    assert (
        main(
            [
                "table",
                "encoder-ablation-routing",
                "--metrics",
                *encoder_runs,
                "--out",
                str(out),
                "--data",
                data,
                "--reference-setting",
                "enc-c",
                "--bootstrap-resamples",
                "300",
            ]
        )
        == 0
    )
    tex = out.read_text()
    assert "\\multirow{2}{*}{\\textbf{Sentence Encoder}}" in tex
    assert "tab:routing_acc_by_dataset_full_encoder_ablation" in tex
    lines = tex.splitlines()
    # the reference encoder first, then the others by name; names escaped in \texttt
    order = [
        row(tex, f"\\multirow{{1}}{{*}}{{{lab}}}")
        for lab in ("\\texttt{enc-c} (default)", "\\texttt{enc-a}", "\\texttt{enc\\_b}")
    ]
    assert [lines.index(r) for r in order] == sorted(lines.index(r) for r in order)
    assert order[2].split(" & ")[3] == "\\textbf{75.00}"
    assert "by sentence encoder of the queries" in tex and "$d$ = 128" in tex
    csv = pd.read_csv(out.with_suffix(".csv"))
    overall = csv[csv.benchmark == "Overall"].set_index("approach")
    assert overall.setting.to_dict() == {"enc-c": "enc-c", "enc-a": "enc-a", "enc_b": "enc_b"}
    assert overall.loc["enc_b", "diff_to_reference_pct"] == pytest.approx(25.0)
    assert overall.loc["enc-c", "label"] == "enc-c (default)"

    # the same runs in a normal table, or in the dimension ablation: still one encoder per table
    for args in (["routing-by-dataset"], ["dim-ablation-routing", "--reference-setting", "128"]):
        assert main(["table", *args, "--metrics", *encoder_runs, "--out", str(out), "--data", data]) == 2
        assert "metrics mix several values of 'encoder'" in capsys.readouterr().err
    with pytest.raises(DataError, match="several values of 'encoder'"):
        comparison.collect(encoder_runs)
    with pytest.raises(ValueError, match="only the encoder may vary"):
        comparison.collect_runs(comparison.load_metrics(encoder_runs), vary=("dataset",))


def test_ablation_refusals(tmp_path, data, dim_runs, capsys):
    out = str(tmp_path / "t.tex")
    base = ["table", "dim-ablation-routing", "--out", out, "--data", data]

    def refused(args, message):
        assert main([*base, *args]) == 2
        err = capsys.readouterr().err
        assert re.search(message, err), err

    refused(["--metrics", *dim_runs], r"needs --reference-setting")
    refused(["--metrics", *dim_runs, "--reference-setting", "64"], r"reference dim 64 has no runs")
    ref = ["--metrics", *dim_runs, "--reference-setting", "128"]
    refused([*ref, "--settings", "16,32"], r"reference dim 128 has no runs")
    refused([*ref, "--settings", "16,48"], r"no runs for the dim setting\(s\) d48")
    refused(["--metrics", *dim_runs, "--reference-setting", "abc"], r"'abc' is not an integer")
    refused(
        ["--metrics", *dim_runs, "--reference-setting", "128", "--reference-method", "locus"],
        r"--reference-method do not apply",
    )
    refused(["--metrics", *dim_runs, "--reference-setting", "128", "--methods", "locus,irt_net"], r"one method")
    other = write_run(tmp_path, 250, dim=232, method="irt_net")
    refused(["--metrics", *dim_runs, other, "--reference-setting", "128"], r"compares settings of one method")
    # choosing the method drops the others
    assert main([*base, "--metrics", *dim_runs, other, "--reference-setting", "128", "--methods", "locus"]) == 0
    assert "232" not in Path(out).read_text()
    changed = write_run(tmp_path / "x", 250, dim=64, params={**PARAMS, "layers": 3})
    refused(["--metrics", *dim_runs, changed, "--reference-setting", "128"], r"differ in parameters other than dim")
    no_dim = write_run(tmp_path / "y", 250, dim=0)
    refused(["--metrics", no_dim, "--reference-setting", "128"], r"no embedding dimension recorded")
    # settings and reference setting belong to the ablation kinds only
    assert (
        main(
            [
                "table",
                "routing-by-dataset",
                "--metrics",
                *dim_runs,
                "--out",
                out,
                "--data",
                data,
                "--reference-setting",
                "128",
            ]
        )
        == 2
    )
    assert "apply to the ablation kinds only" in capsys.readouterr().err


def test_encoder_ablation_needs_one_dimension(tmp_path, data, capsys):
    runs = [write_run(tmp_path, 280, encoder="enc-a"), write_run(tmp_path, 290, encoder="enc-b", dim=64)]
    assert (
        main(
            [
                "table",
                "encoder-ablation-correctness",
                "--metrics",
                *runs,
                "--out",
                str(tmp_path / "t.tex"),
                "--data",
                data,
                "--reference-setting",
                "enc-a",
            ]
        )
        == 2
    )
    assert "differ in parameters (the dimension included)" in capsys.readouterr().err


def test_kinds_and_labels_are_consistent():
    from locus.commands import table

    assert table.ABLATION_KINDS == ablation.KINDS
    assert not set(table.TABLE_KINDS) & set(table.ABLATION_KINDS)
    assert {(ablation.BY[k], ablation.METRIC[k]) for k in ablation.KINDS} == {
        (b, m) for b in ("dim", "encoder") for m in ("routing_acc", "correctness_acc")
    }
    assert ablation.setting_labels("dim", 128, 128) == ("128 (default)", "128 (default)")
    assert ablation.setting_labels("encoder", "all-mpnet-base-v2", "x") == (
        "\\texttt{all-mpnet-base-v2}",
        "all-mpnet-base-v2",
    )


# ---------------------------------------------------------------------------------------------- workflow
def snakemake(tmp_path, *args):
    """A dry run from `tmp_path` with the real Snakefile when it includes ablation.smk, else a wrapper with
    the rule files the ablation tables need."""
    snakefile = REPO / "Snakefile"
    if "ablation.smk" not in snakefile.read_text():
        snakefile = tmp_path / "Snakefile"
        rules = REPO / "workflow" / "rules"
        snakefile.write_text(
            f'configfile: "{REPO / "config" / "config.yaml"}"\n'
            + "".join(
                f'include: "{rules / name}.smk"\n'
                for name in ("common", "data", "encode", "train", "tables", "ablation")
            )
        )
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-n", "-p", "--directory", str(tmp_path), *args]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    return res, res.stdout + res.stderr


def test_dry_run_schedules_the_ablation_runs(tmp_path):
    res, out = snakemake(
        tmp_path, "results/tables/dim_ablation_routing.tex", "results/tables/encoder_ablation_routing.tex"
    )
    assert res.returncode == 0, out[-3000:]
    blocks = out.split("\nrule ")
    train = [b for b in blocks if b.startswith("train_run:")]
    assert any(
        "results/runs/synthetic/all-MiniLM-L6-v2/locus/n256/d32/s0/metrics.json" in b and "--dim 32" in b for b in train
    )
    assert any("results/runs/synthetic/all-mpnet-base-v2/locus/n256/d128/s0/metrics.json" in b for b in train)
    assert any(b.startswith("encode:") and "results/encodings/synthetic/all-mpnet-base-v2.parquet" in b for b in blocks)
    dim = next(b for b in blocks if b.startswith("dim_ablation_routing_table:"))
    assert "--reference-setting 128 --settings 32,128" in dim and "results/logs/ablation/" in dim
    enc = next(b for b in blocks if b.startswith("encoder_ablation_routing_table:"))
    assert "--reference-setting all-MiniLM-L6-v2 --settings all-MiniLM-L6-v2,all-mpnet-base-v2" in enc
    assert "results/runs/synthetic/all-mpnet-base-v2/locus/n256/d128/s0/scores_test.parquet" in enc


SCHEMA_HAS_ABLATION = "ablation:" in (REPO / "workflow" / "schemas" / "config.schema.yaml").read_text()
needs_schema = pytest.mark.skipif(not SCHEMA_HAS_ABLATION, reason="the config schema has no `ablation` block yet")


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        # the defaults of ablation.smk (dims [32, 128], encoders MiniLM + mpnet) against the configured d / encoder
        ("methods:\n  locus: {dim: 64, params: {}}\n", r"methods.locus.dim 64 is not among ablation.dims \[32, 128\]"),
        (
            "encoder: paraphrase-albert-small-v2\n",
            r"encoder 'paraphrase-albert-small-v2' is not among ablation.encoders",
        ),
        pytest.param(
            "ablation: {dims: [32, 64]}\n",
            r"methods.locus.dim 128 is not among ablation.dims \[32, 64\]",
            marks=needs_schema,
        ),
        pytest.param(
            "ablation: {encoders: [all-MiniLM-L6-v2, all-MiniLM-L7-v2]}\n",
            r"ablation.encoders: 'all-MiniLM-L7-v2' is unknown",
            marks=needs_schema,
        ),
        pytest.param("ablation: {dims: [128, 30]}\n", r"ablation.dims: d = 30 does not fit", marks=needs_schema),
    ],
)
def test_ablation_config_errors_at_dag_build_time(tmp_path, yaml_text, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml_text)
    res, out = snakemake(tmp_path, "results/tables/dim_ablation_routing.tex", "--configfile", str(bad))
    assert res.returncode != 0, out[-3000:]
    assert re.search(message, out), out[-3000:]
    assert not (tmp_path / "results").exists()
