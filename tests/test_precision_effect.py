"""LOCUS's `precision` option (bfloat16 autocast for embedding and prediction outside training) and its
accuracy effect (locus.experiments.precision_effect, `locus bench --precision-effect`, rule
precision_effect_table): hand-made comparisons, the option's validation and closeness to float32, and the
CLI on the tiny real LOCUS run of test_views."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from locus.errors import ConfigError, DataError
from locus.experiments import precision_effect as pe

torch = pytest.importorskip("torch")

from locus.cli import main  # noqa: E402
from locus.geometry import views as v  # noqa: E402
from locus.methods.locus_method import LocusMethod  # noqa: E402


def test_compare_hand_made():
    labels = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    l32 = np.array([[2.0, -1.0], [-1.0, 3.0], [0.5, 0.4], [-1.0, -2.0]])  # routes 0, 1, 0, 0
    low = np.array([[2.0, -1.0], [-1.0, 3.0], [0.4, 0.5], [1.0, -2.0]])  # routes 0, 1, 1, 0; one label flips
    z32, zlow = np.array([[3.0, 4.0], [1.0, 0.0]]), np.array([[3.0, 4.5], [1.0, 0.0]])
    out = pe.compare(z32, zlow, l32, low, labels)
    assert out["routing_acc_float32"] == pytest.approx(3 / 4) and out["routing_acc_bfloat16"] == pytest.approx(3 / 4)
    assert out["routing_diff"] == 0.0
    assert out["correctness_acc_float32"] == pytest.approx(8 / 8)
    assert out["correctness_acc_bfloat16"] == pytest.approx(7 / 8) and out["correctness_diff"] == pytest.approx(-1 / 8)
    assert out["routing_agreement"] == pytest.approx(3 / 4)
    assert out["label_flips"] == pytest.approx(1 / 8)
    assert out["max_abs_logit_diff"] == pytest.approx(2.0)
    assert out["max_rel_z_diff"] == pytest.approx(0.5 / 5)
    assert (out["n_models"], out["n_test_queries"]) == (2, 4)
    # float32 sends 3 of the 4 labelled queries to model 0, bfloat16 2 of 4
    assert out["top_model_share_float32"] == pytest.approx(3 / 4) and out["top_model_share_bfloat16"] == 0.5
    row = {"train_size": 256, "seed": 0, **out}
    assert "75.0\\% / 50.0\\%" in pe.latex_table(pd.DataFrame([row]), "data")
    constant = pe.compare(z32, zlow, np.tile([1.0, 0.0], (4, 1)), np.tile([1.0, 0.0], (4, 1)), labels)
    tex = pe.latex_table(pd.DataFrame([{"train_size": 256, "seed": 0, **constant}]), "data")
    assert "100.0\\%\\S{} / 100.0\\%\\S{}" in tex and "a near-constant router" in tex
    with pytest.raises(DataError, match="shapes disagree"):
        pe.compare(z32, zlow[:1], l32, low, labels)


def test_differences_give_a_paired_bootstrap_interval_and_the_caption_says_one_pass():
    from locus.experiments.bootstrap import Settings

    rng = np.random.default_rng(0)
    labels = (rng.random((200, 3)) < 0.5).astype(float)
    l32 = rng.normal(size=(200, 3))
    low = l32.copy()
    low[:20] = -low[:20]  # bf16 routes 20 queries elsewhere and flips their labels
    out = pe.differences(l32, low, labels, Settings(n_resamples=300, seed=1))
    stats = pe.compare(np.eye(3), np.eye(3), l32, low, labels)
    for name in ("routing_diff", "correctness_diff"):
        assert out[f"{name}_ci_low"] <= stats[name] <= out[f"{name}_ci_high"]
        assert out[f"{name}_ci_low"] < out[f"{name}_ci_high"]
    assert (out["n_boot"], out["boot_seed"], out["confidence"]) == (300, 1, 0.95)
    same = pe.differences(l32, l32, labels, Settings(n_resamples=50))
    assert same["routing_diff_ci_low"] == same["routing_diff_ci_high"] == 0.0
    row = {"train_size": 256, "seed": 0, **stats, **out}
    tex = pe.latex_table(pd.DataFrame([row]), "data")
    assert "One pass per run and precision" in tex and "paired percentile bootstrap interval over the 200" in tex
    assert f"{100 * stats['routing_diff']:+.2f} [{100 * out['routing_diff_ci_low']:+.2f}, " in tex
    plain = pe.latex_table(pd.DataFrame([{"train_size": 256, "seed": 0, **stats}]), "data")
    assert "No interval" in plain and "One pass per run and precision" in plain


def test_precision_is_validated():
    assert LocusMethod().params.precision == "float32"
    with pytest.raises(ConfigError, match=r"precision must be one of \[.float32., .bfloat16.\]"):
        LocusMethod({"precision": "float16"})


def test_bfloat16_is_close_to_float32_and_training_validation_stays_exact(tiny):
    ref = v.load_reference(tiny / "run", tiny / "data", tiny / "enc.parquet")
    m = ref.method
    ids, scores = ref.reference_set(int(ref.model_ids[0]))
    phi = ref.encodings.take(ids)
    z32 = m.embed(phi, scores)
    m.params = m.params.replace(precision="bfloat16")
    try:
        zlow = m.embed(phi, scores)
        logits_low = m.logits_for_embeddings(phi, ref.z_ref)
        sets_phi = torch.from_numpy(np.ascontiguousarray(phi))
        exact = m._grid_logits(torch.from_numpy(ref.z_ref), sets_phi, exact=True).numpy()
    finally:
        m.params = m.params.replace(precision="float32")
    logits32 = m.logits_for_embeddings(phi, ref.z_ref)
    assert zlow.dtype == np.float32 and logits_low.dtype == np.float32
    assert not np.array_equal(zlow, z32)  # bfloat16 arithmetic did run
    assert np.linalg.norm(zlow - z32) / np.linalg.norm(z32) < 0.05
    assert np.abs(logits_low - logits32).max() < 0.1
    assert np.array_equal(exact, logits32)  # exact=True ignores the precision (training's validation)


def test_cli_writes_the_table_and_csv(tiny, tmp_path, capsys):
    out = tmp_path / "precision_effect.tex"
    assert (
        main(
            [
                "bench",
                "--precision-effect",
                str(out),
                "--runs",
                str(tiny / "run"),
                "--data",
                str(tiny / "data"),
                "--encodings",
                str(tiny / "enc.parquet"),
                "--threads",
                "1",
            ]
        )
        == 0
    )
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert list(frame.columns) == pe.CSV_COLUMNS and len(frame) == 1
    row = frame.iloc[0]
    metrics = pd.read_json(tiny / "run" / "metrics.json", typ="series")["test"]["overall"]
    # float32 re-embedding from the reference sets = the run's own test metrics
    assert row["routing_acc_float32"] == pytest.approx(metrics["routing_acc"])
    assert row["correctness_acc_float32"] == pytest.approx(metrics["correctness_acc"])
    assert 0.0 <= row["label_flips"] <= 1.0 and 0.0 <= row["routing_agreement"] <= 1.0
    assert row["routing_diff"] == pytest.approx(row["routing_acc_bfloat16"] - row["routing_acc_float32"])
    tex = out.read_text()
    assert "tab:precision_effect" in tex and "bfloat16" in tex
    assert "agreement" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--precision-effect", "x.tex"], "needs --runs"),
        (["--precision", "float16"], "expected float32, bfloat16"),
        (["--precision", "float32,float32"], "expected float32, bfloat16"),
        (["--precision", "float32,bfloat16", "--quick"], "one precision at a time"),
    ],
)
def test_cli_refuses_bad_combinations(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["bench", *argv]) == 2
    assert message in capsys.readouterr().err


def _gpu_checks():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "gpu_checks.py"
    spec = importlib.util.spec_from_file_location("gpu_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_checks_val_precision_recomputes_the_selected_validation_value(tiny, tmp_path):
    """scripts/gpu_checks.py val-precision: its float32 row is the validation hit@1 the run selected its
    checkpoint by (the same pass, re-run from the saved weights)."""
    import json

    out = tmp_path / "val.txt"
    assert (
        _gpu_checks().main(
            [
                "val-precision",
                str(tiny / "run"),
                "--data",
                str(tiny / "data"),
                "--encodings",
                str(tiny / "enc.parquet"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = out.read_text()
    best = json.loads((tiny / "run" / "config.json").read_text())["summary"]["best_val_routing"]
    assert f"float32 {100 * best:.2f} (+0.00)" in text and "tf32" in text and "bfloat16" in text


def test_gpu_checks_profile_runs_on_a_cpu(tmp_path):
    out = tmp_path / "profile.txt"
    assert (
        _gpu_checks().main(
            [
                "profile",
                "--device",
                "cpu",
                "--train-size",
                "16",
                "--models",
                "3",
                "--val-queries",
                "8",
                "--steps",
                "1",
                "--repeat",
                "1",
                "--rows",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = out.read_text()
    assert "training step (paper recipe)" in text and "validation pass" in text and "aten::" in text
