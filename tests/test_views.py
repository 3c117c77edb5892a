"""Embedding views (locus.geometry.views / .hypothetical, `locus views KIND`): the pure functions on hand-made
cases with known answers, then every kind of the command on a tiny real LOCUS run, its errors, and the
workflow's rules (dry run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from locus.errors import ConfigError, DataError
from locus.geometry import views as v

torch = pytest.importorskip("torch")

from locus.cli import main  # noqa: E402
from locus.data.canonical import write_dataset  # noqa: E402
from locus.data.encodings import data_fingerprint, write_encodings  # noqa: E402
from locus.runs import execute  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PARAMS = {
    "dim": 8,
    "heads": 2,
    "layers": 1,
    "latents": 4,
    "decoder_hidden": 8,
    "max_steps": 6,
    "eval_every": 3,
    "threads": 1,
}
N_TRAIN, N_REF = 50, 30  # training queries; reference set (train size) -> 20 outside it


# --------------------------------------------------------------------------------------------------
# pure functions
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "n_ref, n_outside, alpha, expected",
    [
        (10, 100, 0.3, (3, 7)),  # enough outside queries: size n_ref
        (10, 100, 1.0, (10, 0)),  # the reference set itself
        (10, 4, 0.0, (0, 4)),  # capped: only 4 outside queries
        (10, 4, 0.5, (4, 4)),  # capped at 4 / (1 - 0.5) = 8, half shared
        (10, 4, 0.75, (8, 2)),  # 4 / 0.25 = 16 > 10: size n_ref again
        (4096, 2304, 0.0, (0, 2304)),  # the default data at alpha = 0
    ],
)
def test_overlap_sizes(n_ref, n_outside, alpha, expected):
    assert v.overlap_sizes(n_ref, n_outside, alpha) == expected


def test_overlap_sizes_refuses_fractions_outside_0_1():
    with pytest.raises(ConfigError, match="overlap fraction"):
        v.overlap_sizes(10, 10, 1.5)


def test_alternative_set_shares_exactly_the_fraction():
    ref, outside = np.arange(10), np.arange(100, 105)
    ids, shared = v.alternative_set(ref, outside, 0.5, v.rng_for(0, 1))
    assert shared == 5 and len(ids) == 10 and np.isin(ids, ref).sum() == 5 and np.isin(ids, outside).sum() == 5
    assert len(np.unique(ids)) == 10 and np.all(np.diff(ids) > 0)
    again, _ = v.alternative_set(ref, outside, 0.5, v.rng_for(0, 1))
    assert np.array_equal(ids, again)  # seeded
    full, shared = v.alternative_set(ref, outside, 1.0, v.rng_for(0, 2))
    assert np.array_equal(full, ref) and shared == 10
    with pytest.raises(DataError, match="overlap 0"):
        v.alternative_set(ref, np.array([], dtype=int), 0.0, v.rng_for(0, 3))
    with pytest.raises(ValueError, match="must not belong"):
        v.alternative_set(ref, np.array([3, 100]), 0.5, v.rng_for(0, 4))


def test_subsample_and_rng_for():
    ids = np.arange(100, 120)
    a = v.subsample(ids, 5, v.rng_for(3, 1, 5, 0))
    assert len(a) == 5 and len(set(a)) == 5 and np.isin(a, ids).all() and np.all(np.diff(a) > 0)
    assert np.array_equal(a, v.subsample(ids, 5, v.rng_for(3, 1, 5, 0)))
    assert not np.array_equal(a, v.subsample(ids, 5, v.rng_for(3, 1, 5, 1)))
    assert np.array_equal(v.subsample(ids, 20, v.rng_for(0)), ids)
    with pytest.raises(ValueError, match="cannot draw 21"):
        v.subsample(ids, 21, v.rng_for(0))
    assert v.rng_for(0, 0.5).random() == v.rng_for(0, 500000).random()  # floats keyed by 1e6 * value


def test_true_ranks_and_recall_at_k():
    dist = np.array([[0.1, 0.2, 0.3], [0.5, 0.4, 0.1], [0.2, 0.2, 0.9]])
    true = [0, 0, 1]
    assert v.true_ranks(dist, true).tolist() == [0, 2, 0]  # row 3: a tie counts for the true item
    assert v.recall_at_k(dist, true, [1, 2, 3]) == {1: pytest.approx(2 / 3), 2: pytest.approx(2 / 3), 3: 1.0}
    with pytest.raises(ValueError):
        v.true_ranks(dist, [0, 1])


def test_distances():
    a = np.array([[1.0, 0.0], [0.0, 3.0]])
    b = np.array([[2.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    assert np.allclose(v.cosine_distances(a, b), [[0, 1, 2], [1, 0, 1]])
    assert np.allclose(v.euclidean_distances(a, b), [[1, np.sqrt(2), 2], [np.sqrt(13), 2, np.sqrt(10)]])


def test_nearest_others_excludes_itself():
    z = np.array([[0.0], [1.0], [3.0], [10.0]])
    idx, dist = v.nearest_others(z, 1, 3)
    assert idx.tolist() == [0, 2, 3] and dist.tolist() == [1.0, 2.0, 9.0]
    assert v.nearest_others(z, 0, 10)[0].tolist() == [1, 2, 3]


def test_accuracy_profile_and_hypothetical_labels():
    scores = pd.DataFrame(
        {"prompt_id": [1, 2, 3, 1, 3], "model_id": [7, 7, 7, 8, 8], "score": [1.0, 0.0, 1.0, 0.0, 0.0]}
    )
    bench = pd.Series({1: "a", 2: "a", 3: "b"})
    table, overall = v.accuracy_profile(scores, bench)
    assert table.loc[7, "a"] == 0.5 and table.loc[7, "b"] == 1.0 and table.loc[8, "a"] == 0.0
    assert overall[7] == pytest.approx(2 / 3) and overall[8] == 0.0
    y = v.hypothetical_labels(["a", "b", "c", "a"], {"a": 1.0, "b": 0.0, "c": np.nan}, 1.0, v.rng_for(0))
    assert y.tolist() == [1.0, 0.0, 1.0, 1.0]  # c: missing -> fallback 1
    many = v.hypothetical_labels(["a"] * 20000 + ["b"] * 20000, {"a": 0.3, "b": 0.8}, 0.5, v.rng_for(1))
    assert abs(many[:20000].mean() - 0.3) < 0.015 and abs(many[20000:].mean() - 0.8) < 0.015
    with pytest.raises(DataError, match="without a benchmark"):
        v.accuracy_profile(scores, pd.Series({1: "a"}))


def test_farther_share_on_a_toy_embedding():
    """Three models on a line at 0, 1 and 3: nearest other distances 1, 1, 2. Model 0's re-embeddings at
    distances 0.5, 1.0 (a tie: not farther) and 1.5 -> 1 of 3 farther; model 2's at 1.9 and 2.5 -> 1 of 2."""
    z = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    idx, dist = v.nearest_other_distances(z)
    assert idx.tolist() == [1, 0, 1] and dist.tolist() == [1.0, 1.0, 2.0]
    draws = pd.DataFrame(
        {
            "panel": ["size"] * 5,
            "model_id": [0, 0, 0, 2, 2],
            "distance": [0.5, 1.0, 1.5, 1.9, 2.5],
            "nearest_other_distance": dist[[0, 0, 0, 2, 2]],
        }
    )
    shares = v.farther_shares(draws).set_index("model_id")
    assert shares["draws"].tolist() == [3, 2] and shares["farther"].tolist() == [1, 1]
    assert shares["share"].tolist() == pytest.approx([1 / 3, 1 / 2])
    overall = v.farther_shares(draws, ("panel",)).iloc[0]
    assert (overall["farther"], overall["draws"], overall["share"]) == (2, 5, pytest.approx(0.4))
    with pytest.raises(DataError, match="at least 2 models"):
        v.nearest_other_distances(z[:1])


def test_robustness_figure_prints_the_farther_shares_and_warns_about_tsne():
    from locus.render.figures import plt
    from locus.render.views import FARTHER_NOTE, robustness_figure

    base = pd.DataFrame(
        {
            "panel": "reference",
            "model_id": [0, 1, 2],
            "name": ["a", "b", "c"],
            "selected": [True, False, True],
            "setting": np.nan,
            "distance": 0.0,
            "nearest_other_distance": [1.0, 1.0, 2.0],
            "x": [0.0, 1.0, 3.0],
            "y": 0.0,
        }
    )
    draws = pd.DataFrame(
        {
            "panel": ["overlap"] * 3 + ["size"] * 4,
            "model_id": [0, 0, 2, 0, 0, 2, 2],
            "name": ["a", "a", "c", "a", "a", "c", "c"],
            "selected": True,
            "setting": [0.0, 1.0, 0.0, 8, 30, 8, 30],
            "distance": [1.5, 0.0, 2.5, 0.5, 0.0, 3.0, 0.0],
            "nearest_other_distance": [1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 2.0],
            "x": 0.5,
            "y": 0.5,
        }
    )
    frame = pd.concat([base, draws], ignore_index=True)
    fig = robustness_figure(frame, "t", space="the 2-d embedding space", shares=v.farther_shares(draws))
    top, bottom = fig.axes
    assert "a: 1/2 farther (50%)" in _legend(top) and "c: 1/1 farther (100%)" in _legend(top)
    assert "a: 0/2 farther (0%)" in _legend(bottom) and "c: 1/2 farther (50%)" in _legend(bottom)
    assert top.get_title().endswith("2/3 (67%; per model below)")
    assert bottom.get_title().endswith("1/4 (25%; per model below)")
    note = " ".join(t.get_text().replace("\n", " ") for t in fig.texts)
    assert "the 2-d embedding space" in note and FARTHER_NOTE.split(":")[0] in note
    plt.close(fig)
    fig = robustness_figure(frame, "t")  # without the shares: no claim about them
    assert "farther" not in " ".join(_legend(fig.axes[0]) + [fig.axes[0].get_title()])
    assert any(FARTHER_NOTE.split(":")[0] in t.get_text().replace("\n", " ") for t in fig.texts)
    plt.close(fig)


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_summarize_draws():
    draws = pd.DataFrame({"n": [8, 8, 8, 4], "distance": [1.0, 2.0, 3.0, 5.0]})
    s = v.summarize_draws(draws, "n")
    assert s["n"].tolist() == [4, 8] and s["mean"].tolist() == [5.0, 2.0]
    assert s["std"].tolist() == [0.0, 1.0] and s["draws"].tolist() == [1, 3]


def test_resolve_model_names_close_matches():
    names = {1: "codellama/CodeLlama-13b-Instruct-hf", 2: "codellama/CodeLlama-7b-hf", 3: "microsoft/phi-2"}
    assert v.resolve_model("microsoft/phi-2", names, "x") == 3
    assert v.resolve_model("PHI-2", names, "x") == 3  # case-insensitive, organisation optional
    with pytest.raises(ConfigError, match="close names: codellama/CodeLlama-13b-Instruct-hf"):
        v.resolve_model("codellama/CodeLlama-13b-Instruct", names, "--model")


def test_check_grid():
    assert v.check_grid([4, 2, 4], "s", 1, None, integer=True) == [2, 4]
    with pytest.raises(ConfigError, match="outside"):
        v.check_grid([0.5, 1.2], "--overlaps", 0.0, 1.0)


# --------------------------------------------------------------------------------------------------
# a tiny real LOCUS run
# --------------------------------------------------------------------------------------------------
def write_tiny(root: Path, n_models=6, seed=0, text="question"):
    """80 queries (50 train / 15 val / 15 test) of two benchmarks; models of different strengths."""
    rng = np.random.default_rng(seed)
    n_q = 80
    split = ["train"] * N_TRAIN + ["val"] * 15 + ["test"] * 15
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n_q),
            "prompt": [f"{text} {i}" for i in range(n_q)],
            "benchmark": np.where(np.arange(n_q) % 3 == 0, "math", "text"),
            "category": "c",
            "split": split,
        }
    )
    models = pd.DataFrame({"model_id": np.arange(n_models) * 10, "name": [f"org/model-{i}" for i in range(n_models)]})
    pid, mid = np.meshgrid(np.arange(n_q), models["model_id"], indexing="ij")
    p = (mid / 10 + 1) / (n_models + 1)
    scores = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(pid.size) < p.ravel()).astype(float)}
    )
    write_dataset(root / "data", queries, models, scores)
    vectors = rng.normal(size=(n_q, 8)).astype(np.float32)
    write_encodings(
        root / "enc.parquet",
        queries["prompt_id"],
        vectors,
        "toy",
        False,
        data_fingerprint(queries["prompt_id"], queries["prompt"]),
    )
    return root / "data", root / "enc.parquet"


def views(tiny, kind, out, *extra):
    return main(
        [
            "views",
            kind,
            "--run",
            str(tiny / "run"),
            "--data",
            str(tiny / "data"),
            "--encodings",
            str(tiny / "enc.parquet"),
            "--out",
            str(out),
            *extra,
        ]
    )


def test_reference_embeddings_are_one_forward_pass_of_the_reference_set(tiny):
    ref = v.load_reference(tiny / "run", tiny / "data", tiny / "enc.parquet")
    assert ref.model_ids.tolist() == [0, 10, 20, 30, 40, 50]
    for i, mid in enumerate(ref.model_ids):
        ids, scores = ref.reference_set(int(mid))
        assert len(ids) == N_REF and len(ref.outside_ids(int(mid))) == N_TRAIN - N_REF
        assert np.allclose(ref.embed(ids, scores), ref.z_ref[i], atol=1e-4)
    mid = 20
    ids = ref.outside_ids(mid)
    data = pd.read_parquet(tiny / "data" / "scores.parquet")
    truth = data[data["model_id"] == mid].set_index("prompt_id").loc[ids, "score"].to_numpy()
    assert np.array_equal(ref.scores_of(mid, ids), truth)


def test_test_queries_never_build_an_embedding(tiny, tmp_path, monkeypatch):
    seen = []
    original = v.Reference.embed

    def spy(self, prompt_ids, scores):
        seen.append(np.asarray(prompt_ids))
        return original(self, prompt_ids, scores)

    monkeypatch.setattr(v.Reference, "embed", spy)
    assert views(tiny, "hypothetical", tmp_path / "h.pdf", "--sizes", "8,50") == 0
    assert views(tiny, "overlap-convergence", tmp_path / "o.pdf", "--model", "org/model-2") == 0
    assert views(tiny, "size-convergence", tmp_path / "s.pdf", "--model", "org/model-2", "--sizes", "4,30") == 0
    used = np.unique(np.concatenate(seen))
    assert len(seen) > 20 and used.max() < N_TRAIN  # prompt ids >= 50 are val/test


def test_size_convergence_command(tiny, tmp_path, capsys):
    out = tmp_path / "anchor.pdf"
    assert (
        views(
            tiny,
            "size-convergence",
            out,
            "--model",
            "org/model-3",
            "--sizes",
            "4,8,16,30,64",
            "--repeats",
            "3",
            "--neighbours",
            "2",
        )
        == 0
    )
    for ext in ("pdf", "png", "csv"):
        assert out.with_suffix(f".{ext}").stat().st_size > 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    draws, means, near = (frame[frame["kind"] == k] for k in ("draw", "mean", "neighbour"))
    assert sorted(means["n"].astype(int)) == [4, 8, 16, 30]  # 64 > the 30 reference evaluations: left out
    assert len(draws) == 3 * 3 + 1  # the whole reference set is drawn once
    assert draws.loc[draws["n"] == 30, "distance"].max() < 1e-4  # the reference set gives z_ref
    assert (draws.loc[draws["n"] < 30, "distance"] > 0).all()
    assert len(near) == 2 and near["distance"].is_monotonic_increasing
    assert "org/model-3" not in near["neighbour"].tolist()
    assert "reference set 30, 20 training queries outside it" in capsys.readouterr().out


def test_overlap_convergence_command_caps_the_set_size(tiny, tmp_path):
    out = tmp_path / "overlap.pdf"
    assert (
        views(
            tiny, "overlap-convergence", out, "--model", "org/model-1", "--overlaps", "0,0.25,0.5,1", "--repeats", "2"
        )
        == 0
    )
    draws = pd.read_csv(out.with_suffix(".csv")).query("kind == 'draw'")
    sizes = draws.groupby("alpha")["set_size"].first().to_dict()
    # 30 reference queries, 20 outside: alpha 0 -> 20, 0.25 -> floor(20 / 0.75) = 26, then 30
    assert sizes == {0.0: 20, 0.25: 26, 0.5: 30, 1.0: 30}
    assert np.allclose(draws["realized_alpha"], draws["shared"] / draws["set_size"])
    assert draws.groupby("alpha")["shared"].first().to_dict() == {0.0: 0, 0.25: 6, 0.5: 15, 1.0: 30}
    assert draws.loc[draws["alpha"] == 1.0, "distance"].max() < 1e-4
    first = out.with_suffix(".csv").read_bytes()
    assert (
        views(
            tiny, "overlap-convergence", out, "--model", "org/model-1", "--overlaps", "0,0.25,0.5,1", "--repeats", "2"
        )
        == 0
    )
    assert out.with_suffix(".csv").read_bytes() == first  # seeded: same numbers again


def test_hypothetical_command(tiny, tmp_path, capsys):
    out = tmp_path / "hyp.pdf"
    assert views(tiny, "hypothetical", out, "--sizes", "8,16,500", "--ks", "1,3,6", "--repeats", "2") == 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert sorted(frame["size"].unique()) == [8, 16, N_TRAIN]  # 500 capped at the training split
    assert set(frame["k"]) == {1, 3, 6} and (frame["models"] == 6).all()
    assert (frame.loc[frame["k"] == 6, "recall"] == 1.0).all()  # k = the pool: every model found
    for _, part in frame.groupby("size"):
        assert part.sort_values("k")["recall"].is_monotonic_increasing
    text = capsys.readouterr().out
    assert "capped at the 50 training queries" in text and "recall@k" in text


def test_hypothetical_recall_finds_distinct_models(tiny):
    """With embeddings that are the models' accuracy, hypothetical sets of the right profile are found."""
    ref = v.load_reference(tiny / "run", tiny / "data", tiny / "enc.parquet")
    acc = ref.train_scores.groupby("model_id")["score"].mean().reindex(ref.model_ids).to_numpy()
    ref.z_ref = np.stack([acc, 1 - acc], axis=1)
    ref.method = type("Mean", (), {"embed": staticmethod(lambda x, y: np.array([y.mean(), 1 - y.mean()]))})()
    from locus.geometry.hypothetical import hypothetical_recall

    recall, per_model = hypothetical_recall(ref, [N_TRAIN], [1, 6], repeats=3, seed=0)
    assert recall.set_index("k")["recall"].to_dict()[6] == 1.0
    assert (per_model["rank"] <= 2).all()  # the cosine geometry of (a, 1 - a) keeps neighbours in order


def test_query_tsne_command(tiny, tmp_path):
    out = tmp_path / "q.pdf"
    assert (
        main(
            [
                "views",
                "query-tsne",
                "--data",
                str(tiny / "data"),
                "--encodings",
                str(tiny / "enc.parquet"),
                "--max-queries",
                "40",
                "--perplexity",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert len(frame) == 40 and frame["prompt_id"].is_unique and set(frame["benchmark"]) == {"math", "text"}
    assert frame[["x", "y"]].notna().all().all() and set(frame["encoder"]) == {"toy"}


def test_robustness_tsne_command(tiny, tmp_path):
    out = tmp_path / "r.pdf"
    assert (
        views(
            tiny,
            "robustness-tsne",
            out,
            "--models",
            "org/model-0,org/model-5",
            "--overlaps",
            "0,1",
            "--sizes",
            "8,30",
            "--repeats",
            "2",
            "--perplexity",
            "5",
        )
        == 0
    )
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert (frame["panel"] == "reference").sum() == 6
    new = frame[frame["panel"] != "reference"]
    assert set(new["name"]) == {"org/model-0", "org/model-5"}
    # per model: 2 overlaps x 2 draws + size 8 x 2 draws + the whole set once
    assert new.groupby("name").size().tolist() == [7, 7]
    assert frame[["x", "y"]].notna().all().all()
    # the distance check, in the embedding space: every row's reference-to-nearest-other distance
    from locus import run_artifacts

    ids, z = run_artifacts.read_embeddings(tiny / "run")
    z = z[np.argsort(ids)]
    ids = np.sort(ids)
    _, near = v.nearest_other_distances(z)
    expected = dict(zip(ids.tolist(), near.tolist()))
    np.testing.assert_allclose(frame["nearest_other_distance"], frame["model_id"].map(expected), rtol=1e-6)
    assert frame.loc[frame["panel"] == "reference", "farther_than_nearest"].isna().all()
    farther = new["farther_than_nearest"].map({True: True, False: False, "True": True, "False": False})
    assert (farther == (new["distance"] > new["nearest_other_distance"])).all()
    whole = new[(new["setting"] == 30) & (new["panel"] == "size")]
    assert not farther[whole.index].any()  # the reference set itself lands on its reference


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "org/model-9x"], "close names: org/model-"),
        (["--model", "org/model-1", "--sizes", "40,64"], "all exceed the 30 reference evaluations"),
    ],
)
def test_command_errors_exit_2(tiny, tmp_path, capsys, args, message):
    assert views(tiny, "size-convergence", tmp_path / "x.pdf", *args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and not (tmp_path / "x.pdf").exists()


def test_command_needs_a_locus_run_of_the_same_data(tiny, tmp_path, capsys):
    assert (
        main(
            [
                "views",
                "hypothetical",
                "--data",
                str(tiny / "data"),
                "--encodings",
                str(tiny / "enc.parquet"),
                "--out",
                str(tmp_path / "x.pdf"),
            ]
        )
        == 2
    )
    assert "needs --run" in capsys.readouterr().err
    execute("knn_router", {"k_grid": [3]}, tiny / "data", tiny / "enc.parquet", N_REF, 0, tmp_path / "knn")
    assert (
        main(
            [
                "views",
                "hypothetical",
                "--run",
                str(tmp_path / "knn"),
                "--data",
                str(tiny / "data"),
                "--encodings",
                str(tiny / "enc.parquet"),
                "--out",
                str(tmp_path / "x.pdf"),
            ]
        )
        == 2
    )
    assert "need a LOCUS run" in capsys.readouterr().err
    other, other_enc = write_tiny(tmp_path / "other", text="another question")
    assert (
        main(
            [
                "views",
                "hypothetical",
                "--run",
                str(tiny / "run"),
                "--data",
                str(other),
                "--encodings",
                str(other_enc),
                "--out",
                str(tmp_path / "x.pdf"),
            ]
        )
        == 2
    )
    assert "another data set" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# the workflow
# --------------------------------------------------------------------------------------------------
def test_rules_dry_run(tmp_path):
    names = [
        "hypothetical_model_embedding",
        "query_encodings_tsne",
        "embedding_robustness_tsne",
        "overlap_convergence",
        "anchor_size_convergence",
    ]
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
            *[f"results/figures/{n}.pdf" for n in names],
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    blocks = res.stdout.split("\nrule ")
    run = "results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s0"
    for name in names:
        block = next(b for b in blocks if b.startswith(f"{name}:"))
        assert f"results/logs/geometry/{name}.log" in block and f"results/benchmarks/geometry/{name}.tsv" in block
        assert f"results/figures/{name}.csv" in block
        assert (f"{run}/embeddings.parquet" in block) == (name != "query_encodings_tsne")
    assert "--model codellama/CodeLlama-13b-Instruct-hf" in res.stdout
