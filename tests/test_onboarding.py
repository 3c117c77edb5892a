"""New-model onboarding (locus.experiments.onboarding, `locus train --hold-out`, `locus onboarding`, rule
onboarding_figure): the pure functions on hand-made cases, then runs trained without held-out models on the
tiny pool of test_views. The end-to-end check through `locus embed` is in test_end_to_end."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from locus.errors import ConfigError
from locus.experiments import onboarding as ob

torch = pytest.importorskip("torch")

from test_views import N_REF, PARAMS, REPO  # noqa: E402

from locus.cli import main  # noqa: E402
from locus.runs import execute, held_out_ids, training_models  # noqa: E402

MODELS = pd.DataFrame(
    {"model_id": [0, 10, 20, 30, 40, 50], "name": [f"org/model-{i}" for i in range(6)], "held_out": [0, 0, 0, 0, 1, 1]}
)


def test_held_out_ids_from_the_column_or_names():
    assert held_out_ids(MODELS).tolist() == [40, 50]
    assert held_out_ids(MODELS, ["org/model-3", "model-1"]).tolist() == [10, 30]
    with pytest.raises(ConfigError, match="no held_out column"):
        held_out_ids(MODELS.drop(columns="held_out"))
    with pytest.raises(ConfigError, match="no held-out model"):
        held_out_ids(MODELS.assign(held_out=0))
    with pytest.raises(ConfigError, match="keep at least one"):
        held_out_ids(MODELS.assign(held_out=1))
    with pytest.raises(ConfigError, match="close names"):
        held_out_ids(MODELS, ["org/model-9x"])


def test_training_models_are_nested_seeded_and_exclude_the_held_out():
    ids, held = np.arange(20), [3, 7]
    sets = [training_models(ids, held, k, seed=1) for k in (2, 5, 10, 0)]
    assert [len(s) for s in sets] == [2, 5, 10, 18]
    for small, large in zip(sets, sets[1:]):
        assert set(small) <= set(large)  # nested
    assert not set(sets[-1]) & {3, 7}
    assert np.array_equal(sets[1], training_models(ids, held, 5, seed=1))
    assert not np.array_equal(sets[1], training_models(ids, held, 5, seed=2))
    with pytest.raises(ConfigError, match="19 requested, 18 models"):
        training_models(ids, held, 19, seed=0)


def test_accuracy_grid_is_a_micro_mean_per_draw_then_a_mean_over_draws():
    scores = pd.DataFrame(
        {
            "row": "all",
            "k": 8,
            "repeat": [0, 0, 1, 1],
            "model_id": [1, 2, 1, 2],
            "correct": [3, 1, 4, 4],
            "n_pairs": [4, 4, 4, 4],
        }
    )
    grid = ob.accuracy_grid(scores)
    assert grid["accuracy"].iloc[0] == pytest.approx((4 / 8 + 8 / 8) / 2)
    assert grid["std"].iloc[0] == pytest.approx(np.std([0.5, 1.0], ddof=1)) and grid["draws"].iloc[0] == 2


def test_draw_evaluations_uses_the_models_training_rows_only():
    train = pd.DataFrame({"prompt_id": [5, 1, 9, 3], "model_id": [7, 7, 7, 8], "score": [1.0, 0.0, 1.0, 1.0]})
    ids, scores = ob.draw_evaluations(train, 7, 2, repeat=0, seed=0)
    assert len(ids) == 2 and set(ids) <= {1, 5, 9}
    assert scores.tolist() == [{1: 0.0, 5: 1.0, 9: 1.0}[i] for i in ids]
    all_ids, _ = ob.draw_evaluations(train, 7, 10, repeat=0, seed=0)  # more than it has: all of them
    assert all_ids.tolist() == [1, 5, 9]


class ToyData:
    """The two calls of a data set that held_out_best_single makes: split queries and label matrices."""

    def __init__(self, labels: dict):
        self.labels = labels  # split -> {prompt_id: {model_id: score}}

    def split_queries(self, split):
        return pd.DataFrame({"prompt_id": sorted(self.labels[split])})

    def label_matrix(self, prompt_ids, model_ids):
        rows = {p: row for split in self.labels.values() for p, row in split.items()}
        return np.array([[rows[p].get(m, np.nan) for m in model_ids] for p in prompt_ids], dtype=float)


def test_best_single_held_out_model_is_chosen_on_validation_and_scored_on_the_routing_queries():
    """Model 40 is best on validation (2/2 vs 1/2), model 50 on test. On the routing queries (test queries
    both answered: 100, 101, 102; 103 lacks model 40) model 40 is right once, the oracle (either) twice."""
    data = ToyData(
        {
            "val": {1: {40: 1.0, 50: 0.0}, 2: {40: 1.0, 50: 1.0}},
            "test": {
                100: {40: 1.0, 50: 1.0},
                101: {40: 0.0, 50: 1.0},
                102: {40: 0.0, 50: 0.0},
                103: {50: 1.0},
            },
        }
    )
    best = ob.held_out_best_single(data, [40, 50])
    assert best["model_id"] == 40 and best["val_acc"] == 1.0 and best["routing_queries"] == 3
    assert best["routing_acc"] == pytest.approx(1 / 3) and best["oracle"] == pytest.approx(2 / 3)
    assert best["regret"] == pytest.approx(1 / 3)
    row = ob.best_single_row(best, "org/model-4")
    assert row[["kind", "selector", "name"]].iloc[0].tolist() == ["best_single", "best_single", "org/model-4"]
    assert row["regret"].iloc[0] == pytest.approx(1 / 3)


def test_active_onboarding_regret_panel_draws_the_best_single_model():
    from locus.render.figures import plt
    from locus.render.onboarding import BEST_SINGLE_STYLE, active_onboarding_figure

    cells = pd.DataFrame(
        {
            "selector": ["random"] * 2 + ["anchor"] * 2,
            "k": [8, 16] * 2,
            "accuracy": [0.66, 0.68, 0.67, 0.69],
            "regret": [0.25, 0.24, 0.26, 0.22],
            "models": 16,
            "routing_queries": 799,
            "repeats": 5,
        }
    )
    for col in ("accuracy", "regret"):
        cells[f"{col}_low"], cells[f"{col}_high"] = cells[col] - 0.01, cells[col] + 0.01
    best = {"name": "org/model-4", "regret": 0.30, "routing_acc": 0.651}
    fig = active_onboarding_figure(cells, "t", best)
    acc_ax, regret_ax = fig.axes
    flat = [line for line in regret_ax.get_lines() if line.get_linestyle() == BEST_SINGLE_STYLE]
    assert len(flat) == 1 and list(flat[0].get_ydata()) == pytest.approx([30.0, 30.0])
    legend = [t.get_text() for t in regret_ax.get_legend().get_texts()]
    assert legend == ["best single model (org/model-4): regret 30.0"]
    assert regret_ax.get_ylim()[1] > 30.0  # on the axis
    assert not [line for line in acc_ax.get_lines() if line.get_linestyle() == BEST_SINGLE_STYLE]
    assert any("test routing accuracy 65.1%" in t.get_text() for t in fig.texts)
    plt.close(fig)
    fig = active_onboarding_figure(cells, "t")  # without it: the selectors only
    assert fig.axes[1].get_legend() is None
    plt.close(fig)


@pytest.fixture(scope="module")
def held_runs(tiny):
    """Runs of the tiny pool trained without models 4 and 5: on 2 of the others, and on all 4."""
    runs = {}
    for count in (2, 0):
        out = tiny / f"held-{count}"
        execute(
            "locus",
            PARAMS,
            tiny / "data",
            tiny / "enc.parquet",
            N_REF,
            0,
            out,
            hold_out=["org/model-4", "org/model-5"],
            train_models=count,
        )
        runs[count] = out
    return runs


def test_runs_without_held_out_models(held_runs):
    for count, n in ((2, 2), (0, 4)):
        metrics = json.loads((held_runs[count] / "metrics.json").read_text())
        assert metrics["n_models"] == n
        assert metrics["model_selection"] == {"held_out_models": ["org/model-4", "org/model-5"], "train_models": n}
        pairs = pd.read_parquet(held_runs[count] / "train_pairs.parquet")
        assert not pairs["model_id"].isin([40, 50]).any()
        scored = pd.read_parquet(held_runs[count] / "scores_test.parquet")["model_id"].unique()
        assert sorted(scored) == sorted(pairs["model_id"].unique())


def test_onboarding_command(tiny, held_runs, tmp_path, capsys):
    out = tmp_path / "onb.pdf"
    code = main(
        [
            "onboarding",
            "--runs",
            str(held_runs[2]),
            str(held_runs[0]),
            str(tiny / "run"),
            "--data",
            str(tiny / "data"),
            "--encodings",
            str(tiny / "enc.parquet"),
            "--sizes",
            "4,16",
            "--repeats",
            "2",
            "--hold-out",
            "org/model-4,org/model-5",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    for ext in ("pdf", "png", "csv"):
        assert out.with_suffix(f".{ext}").stat().st_size > 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    cells = frame[frame["kind"] == "cell"]
    assert sorted(cells["row"].astype(str).unique()) == ["2", "4", "all"] and len(cells) == 6
    assert cells["accuracy"].between(0, 1).all() and (cells["draws"] == 2).all()
    draws = frame[frame["kind"] == "draw"]
    assert set(draws["name"]) == {"org/model-4", "org/model-5"} and (draws["n_pairs"] == 15).all()
    assert "held-out models embedded from k evaluations" in capsys.readouterr().out


def test_onboarding_refuses_a_run_that_saw_some_held_out_models(tiny, held_runs, tmp_path, capsys):
    code = main(
        [
            "onboarding",
            "--runs",
            str(held_runs[0]),
            "--data",
            str(tiny / "data"),
            "--encodings",
            str(tiny / "enc.parquet"),
            "--hold-out",
            "org/model-1,org/model-4",
            "--out",
            str(tmp_path / "x.pdf"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "trained on 1 of the 2 held-out models" in err and "Traceback" not in err


def test_train_hold_out_errors_exit_2(tiny, tmp_path, capsys):
    base = [
        "train",
        "--method",
        "locus",
        "--data",
        str(tiny / "data"),
        "--encodings",
        str(tiny / "enc.parquet"),
        "--train-size",
        "8",
        "--params",
        json.dumps(PARAMS),
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*base, "--hold-out", "column"]) == 2
    assert "no held_out column" in capsys.readouterr().err
    assert main([*base, "--hold-out", "org/model-1", "--train-models", "9"]) == 2
    assert "9 requested, 5 models are not held out" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_rules_dry_run(tmp_path):
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
            "results/figures/sample_eff_ood_test.pdf",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    blocks = res.stdout.split("\nrule ")
    run = next(b for b in blocks if b.startswith("onboarding_run:"))
    assert "--hold-out column --train-models 0" in run and "--train-size 1024" in run
    fig = next(b for b in blocks if b.startswith("onboarding_figure:"))
    assert "results/onboarding/synthetic/all-MiniLM-L6-v2/m0/n1024/s0" in fig
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n1024/d128/s0" in fig  # the whole pool's row
    assert "results/benchmarks/onboarding/sample_eff_ood_test.tsv" in fig
