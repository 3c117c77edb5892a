"""Regenerating EmbedLLM embeddings (locus.experiments.regeneration, `locus regenerate`, workflow/rules/
regeneration.smk): the pure functions on hand-made cases, then a tiny real EmbedLLM run and the tiny LOCUS run
of test_views regenerated on the same and on perturbed evaluations, the command's errors, and the rules
(dry run from a temporary directory)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from locus.errors import ConfigError, DataError
from locus.experiments import regeneration as rg

torch = pytest.importorskip("torch")

from test_views import N_REF, REPO  # noqa: E402

from locus.cli import main  # noqa: E402
from locus.runs import execute  # noqa: E402

EMB_PARAMS = {
    "dim": 8,
    "hidden_layers": 0,
    "max_epochs": 3,
    "patience": 3,
    "embed_steps": 60,
    "embed_lr": 0.2,
    "threads": 1,
}


# --------------------------------------------------------------------------------------------------
# pure functions
# --------------------------------------------------------------------------------------------------
def test_row_cosine_distances():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [3.0, 4.0], [0.0, 0.0]])
    b = np.array([[2.0, 0.0], [-1.0, -1.0], [1.0, 0.0], [3.0, 4.0], [1.0, 0.0]])
    np.testing.assert_allclose(rg.row_cosine_distances(a, b), [0.0, 2.0, 1.0, 0.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="differ"):
        rg.row_cosine_distances(a, b[:3])


def test_prediction_disagreement_thresholds_at_zero_and_masks():
    a = np.array([[1.0, -1.0], [0.5, -0.2], [2.0, 3.0]])
    b = np.array([[0.1, 0.3], [-0.5, -0.1], [2.0, 0.0]])  # differs at (0,1), (1,0), (2,1): 0.0 is "incorrect"
    share, n = rg.prediction_disagreement(a, b)
    assert (share, n) == (pytest.approx(3 / 6), 6)
    mask = np.array([[True, False], [True, True], [False, False]])
    assert rg.prediction_disagreement(a, b, mask) == (pytest.approx(1 / 3), 3)
    assert rg.prediction_disagreement(a, a) == (0.0, 6)
    with pytest.raises(DataError, match="no \\(query, model\\) pair"):
        rg.prediction_disagreement(a, b, np.zeros_like(mask))


def test_settings_grid():
    grid = rg.settings_grid(100, [0.75, 0.25, 0.25], [256, 50, 100])
    assert grid[0][0] == "same" and np.isnan(grid[0][1])
    assert grid[1:] == [("overlap", 0.25), ("overlap", 0.75), ("subsample", 50.0), ("subsample", 100.0)]
    with pytest.raises(ConfigError, match="outside \\[0, 1\\]"):
        rg.settings_grid(100, [1.5], [])
    with pytest.raises(ConfigError, match="all exceed the 100"):
        rg.settings_grid(100, [], [200])


def test_summarize_means_over_repeats():
    draws = pd.DataFrame(
        {
            "method": "embedllm",
            "kind": ["same", "overlap", "overlap"],
            "setting": [np.nan, 0.5, 0.5],
            "repeat": [0, 0, 1],
            "cosine_distance": [0.2, 0.4, 0.6],
            "test_disagreement": [0.01, 0.02, 0.04],
            "set_size": [10, 10, 10],
        }
    )
    s = rg.summarize(draws).set_index("kind")
    assert s.loc["overlap", "cosine_distance"] == pytest.approx(0.5)
    assert s.loc["overlap", "test_disagreement_std"] == pytest.approx(np.std([0.02, 0.04], ddof=1))
    assert s.loc["same", "draws"] == 1 and np.isnan(s.loc["same", "setting"])


# --------------------------------------------------------------------------------------------------
# tiny real runs
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def emb_run(tiny):
    out = tiny / "embedllm-h0"
    execute("embedllm", EMB_PARAMS, tiny / "data", tiny / "enc.parquet", N_REF, 0, out)
    return out


def args(tiny, *extra):
    return ["--data", str(tiny / "data"), "--encodings", str(tiny / "enc.parquet"), *extra]


def test_embedllm_regenerated_on_the_same_data_moves(tiny, emb_run):
    draws = rg.measure_embedllm(emb_run, tiny / "data", tiny / "enc.parquet", [0.5], [10], repeats=2, seed=0)
    same = draws[draws["kind"] == "same"].iloc[0]
    assert same["cosine_distance"] > 1e-3  # a fresh optimisation does not find the original embedding
    assert draws["test_disagreement"].between(0, 1).all()
    assert (same["set_size"], same["test_pairs"]) == (N_REF, 15 * 6)  # every model x test query evaluated
    assert list(draws["kind"]) == ["same", "overlap", "overlap", "subsample", "subsample"]
    # seeded: the same call gives the same numbers
    again = rg.measure_embedllm(emb_run, tiny / "data", tiny / "enc.parquet", [0.5], [10], repeats=2, seed=0)
    np.testing.assert_allclose(draws["cosine_distance"], again["cosine_distance"])


def test_measure_heatmap_and_tsne_commands(tiny, emb_run, tmp_path, capsys):
    measures = tmp_path / "m.csv"
    code = main(
        [
            "regenerate",
            "measure",
            "--runs",
            str(emb_run),
            "--locus-run",
            str(tiny / "run"),
            *args(tiny, "--overlaps", "0.5,1", "--sizes", "10,30", "--out", str(measures)),
        ]
    )
    assert code == 0, capsys.readouterr().err
    frame = pd.read_csv(measures)
    assert set(frame["method"]) == {"embedllm", "locus"}
    loc = frame[frame["method"] == "locus"].set_index("kind")
    assert loc.loc["same", "cosine_distance"] < 1e-3 and loc.loc["same", "test_disagreement"] == 0.0
    emb = frame[frame["method"] == "embedllm"].set_index("kind")
    assert emb.loc["same", "cosine_distance"] > loc.loc["same", "cosine_distance"]

    out = tmp_path / "heat.pdf"
    code = main(
        ["regenerate", "heatmap", "--measures", str(measures), "--metric", "test_disagreement", "--out", str(out)]
    )
    assert code == 0, capsys.readouterr().err
    for ext in ("pdf", "png", "csv"):
        assert out.with_suffix(f".{ext}").stat().st_size > 0
    summary = pd.read_csv(out.with_suffix(".csv"))
    cell = summary[(summary["method"] == "embedllm") & (summary["kind"] == "same")]
    assert len(cell) == 1 and cell["hidden_layers"].iloc[0] == 0 and cell["dim"].iloc[0] == 8
    assert cell["test_disagreement"].iloc[0] == pytest.approx(emb.loc["same", "test_disagreement"])
    assert "LOCUS on the same evaluations" in capsys.readouterr().out

    out = tmp_path / "tsne.pdf"
    code = main(
        [
            "regenerate",
            "tsne",
            "--runs",
            str(emb_run),
            *args(tiny, "--overlaps", "0.5", "--sizes", "10", "--perplexity", "2", "--out", str(out)),
        ]
    )
    assert code == 0, capsys.readouterr().err
    pts = pd.read_csv(out.with_suffix(".csv"))
    assert sorted(pts["panel"].unique()) == ["original", "overlap", "subsample"]
    assert (pts.groupby("panel").size() == 6).all() and np.isfinite(pts[["x", "y"]]).all().all()


def test_bad_arguments_exit_2_with_one_line(tiny, emb_run, tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert (
        main(["regenerate", "measure", "--runs", str(emb_run), *args(tiny, "--overlaps", "0.5,1.5", "--out", str(out))])
        == 2
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]  # argparse: usage, then one error line
    assert len(lines) == 1 and "--overlaps: values [1.5] outside [0.0, 1.0]" in lines[0]
    assert "Traceback" not in err and not out.exists()
    # a LOCUS run given as an EmbedLLM run: a user error, one line
    assert main(["regenerate", "measure", "--runs", str(tiny / "run"), *args(tiny, "--out", str(out))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "regeneration re-learns EmbedLLM embeddings" in err[0] and "Traceback" not in err[0]
    assert not out.exists()


def test_rules_dry_run(tmp_path):
    snakefile = tmp_path / "Snakefile"
    rules = REPO / "workflow" / "rules"
    snakefile.write_text(
        f'configfile: "{REPO / "config" / "config.yaml"}"\n'
        + "".join(
            f'include: "{rules / f}.smk"\n' for f in ("common", "data", "encode", "train", "geometry", "regeneration")
        )
        + "\nrule reg_all:\n    default_target: True\n    input: REG_TARGETS\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-n", "--directory", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    blocks = res.stdout.split("\nrule ")
    runs = [b for b in blocks if b.startswith("regeneration_run:")]
    assert len(runs) == 4  # hidden layers {0, 2} x dims {32, 128}
    for b in runs:
        params = json.loads(b.split("--params ")[1].split(" --sampling")[0].strip("'"))
        assert params["hidden_layers"] in (0, 2) and params["hidden_dim"] == 64 and "embed_steps" in params
        assert "--method embedllm" in b and "--train-size 512" in b
    assert any("results/regeneration/synthetic/all-MiniLM-L6-v2/h2/d32/n512/s0" in b for b in runs)
    locus = next(b for b in blocks if b.startswith("regeneration_measure_locus:"))
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s0" in locus
    heat = next(b for b in blocks if b.startswith("relearn_embedllm_heatmap_test_disagreement:"))
    assert "results/benchmarks/regeneration/relearn_embedllm_heatmap_test_disagreement.tsv" in heat
    assert "measures/locus.csv" in heat
