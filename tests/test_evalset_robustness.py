"""Robustness to the evaluation set (locus.geometry.evalset_robustness, `locus views perf-vs-evalset`,
rule perf_vs_size_and_overlap): every model re-embedded from subsampled / overlap-α sets, test accuracy
with the run's decoder. On the tiny real LOCUS run of test_views."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from locus.geometry import evalset_robustness as er
from locus.geometry import views as v

torch = pytest.importorskip("torch")

from test_views import N_REF, N_TRAIN, REPO, views  # noqa: E402


def test_summarize_means_and_stds():
    draws = pd.DataFrame(
        {
            "panel": ["size"] * 3 + ["overlap"],
            "setting": [4.0, 4.0, 8.0, 0.5],
            "correctness_acc": [0.5, 0.7, 0.6, 0.4],
            "routing_acc": [0.2, 0.4, 0.3, 0.1],
            "set_size": [4, 4, 8, 6],
            "realized_alpha": [1, 1, 1, 0.5],
            "distance": [1, 3, 2, 5],
        }
    )
    s = er.summarize(draws).set_index(["panel", "setting"])
    assert s.loc[("size", 4.0), "correctness_acc"] == pytest.approx(0.6)
    assert s.loc[("size", 4.0), "routing_acc_std"] == pytest.approx(np.std([0.2, 0.4], ddof=1))
    assert s.loc[("size", 8.0), "correctness_acc_std"] == 0.0 and s.loc[("size", 8.0), "draws"] == 1
    assert s.loc[("overlap", 0.5), "distance"] == 5


def test_accuracies_of_a_hand_made_matrix():
    labels = np.array([[1.0, 0.0], [0.0, 1.0], [np.nan, 1.0]])
    logits = np.array([[2.0, -1.0], [1.0, -3.0], [5.0, 0.5]])  # routes 0, 0, 1 (model 0 unlabelled on q2)
    acc = er.accuracies(logits, labels)
    assert acc["routing_acc"] == pytest.approx(2 / 3)
    assert acc["correctness_acc"] == pytest.approx(3 / 5)  # [1,0],[1,0],[-,1] vs [1,0],[0,1],[-,1]


def test_logits_for_embeddings_equal_predict_logits_with_the_stored_embeddings(tiny):
    ref = v.load_reference(tiny / "run", tiny / "data", tiny / "enc.parquet")
    phi = ref.encodings.take(np.arange(N_TRAIN, 80))
    assert np.array_equal(ref.method.logits_for_embeddings(phi, ref.z_ref), ref.method.predict_logits(phi))
    swapped = ref.method.logits_for_embeddings(phi, ref.z_ref[::-1])
    # another row order may take other matmul kernel paths: equal up to float rounding
    assert np.allclose(swapped, ref.method.predict_logits(phi)[:, ::-1], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="embeddings must be"):
        ref.method.logits_for_embeddings(phi, ref.z_ref[:, :3])


def test_the_whole_reference_set_reproduces_the_runs_test_metrics(tiny):
    """n = n_ref and α = 1 re-embed every model from its reference set: the run's own accuracy, distance ~0;
    smaller sets move the embeddings."""
    ref = v.load_reference(tiny / "run", tiny / "data", tiny / "enc.parquet")
    draws, refs = er.curves(ref, sizes=[4, N_REF], overlaps=[0.0, 1.0], repeats=2, seed=0)
    metrics = pd.read_json(tiny / "run" / "metrics.json", typ="series")["test"]["overall"]
    assert refs["reference"]["routing_acc"] == pytest.approx(metrics["routing_acc"])
    assert refs["reference"]["correctness_acc"] == pytest.approx(metrics["correctness_acc"])
    assert refs["reference_size"] == N_REF and refs["n_test_queries"] == 15 and refs["n_models"] == 6
    whole = draws[
        ((draws["panel"] == "size") & (draws["setting"] == N_REF))
        | ((draws["panel"] == "overlap") & (draws["setting"] == 1.0))
    ]
    assert len(whole) == 1 + 2  # the whole reference set is one draw in the size panel
    assert (whole["distance"] < 1e-3).all()
    assert np.allclose(whole["routing_acc"], refs["reference"]["routing_acc"])
    small = draws[(draws["panel"] == "size") & (draws["setting"] == 4)]
    assert len(small) == 2 and (small["distance"] > 1e-3).all() and (small["set_size"] == 4).all()
    disjoint = draws[(draws["panel"] == "overlap") & (draws["setting"] == 0.0)]
    assert (disjoint["realized_alpha"] == 0).all() and (disjoint["set_size"] == N_TRAIN - N_REF).all()
    again, _ = er.curves(ref, sizes=[4, N_REF], overlaps=[0.0, 1.0], repeats=2, seed=0)
    pd.testing.assert_frame_equal(draws, again)  # seeded


def test_test_queries_never_build_an_embedding(tiny, monkeypatch):
    seen = []
    original = v.Reference.embed
    monkeypatch.setattr(
        v.Reference, "embed", lambda self, ids, s: seen.append(np.asarray(ids)) or original(self, ids, s)
    )
    ref = v.load_reference(tiny / "run", tiny / "data", tiny / "enc.parquet")
    er.curves(ref, sizes=[8], overlaps=[0.0, 0.5], repeats=1, seed=1)
    assert len(seen) == 3 * 6 and np.concatenate(seen).max() < N_TRAIN


def test_command_writes_figure_and_csv(tiny, tmp_path, capsys):
    out = tmp_path / "perf.pdf"
    assert views(tiny, "perf-vs-evalset", out, "--sizes", "4,8,30", "--overlaps", "0,0.5,1", "--repeats", "2") == 0
    for ext in ("pdf", "png", "csv"):
        assert out.with_suffix(f".{ext}").stat().st_size > 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert set(frame["kind"]) == {"draw", "mean", "reference", "best_single"}
    means = frame[frame["kind"] == "mean"]
    assert sorted(means.loc[means["panel"] == "size", "setting"]) == [4, 8, 30]
    assert sorted(means.loc[means["panel"] == "overlap", "setting"]) == [0, 0.5, 1]
    assert "6 models re-embedded" in capsys.readouterr().out


def test_command_errors_exit_2(tiny, tmp_path, capsys):
    assert views(tiny, "perf-vs-evalset", tmp_path / "x.pdf", "--sizes", "40,64") == 2
    err = capsys.readouterr().err
    assert "all exceed the 30 reference evaluations" in err and "Traceback" not in err
    assert not (tmp_path / "x.pdf").exists()
    assert views(tiny, "perf-vs-evalset", tmp_path / "x.pdf", "--overlaps", "0.5,1.5") == 2
    assert "--overlaps: [1.5] outside [0.0, 1.0]" in capsys.readouterr().err


def test_rule_dry_run(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(REPO / "Snakefile"),
            "-n",
            "--directory",
            str(tmp_path),
            "results/figures/perf_vs_size_and_overlap.pdf",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    block = next(b for b in res.stdout.split("\nrule ") if b.startswith("perf_vs_size_and_overlap:"))
    assert "views perf-vs-evalset" in block and "--sizes 64,256,1024,4096" in block
    assert "--overlaps 0.0,0.25,0.5,0.75,1.0" in block and "--repeats 1" in block
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s0/model.safetensors" in block
    assert "results/benchmarks/geometry/perf_vs_size_and_overlap.tsv" in block
