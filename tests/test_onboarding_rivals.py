"""Onboarding without retraining (locus.onboarding_rivals, locus.experiments.onboarding_rivals, `locus
onboarding-rivals`): each rival on hand-made score matrices whose answer is known, the guarantee that the
held-out models' test queries never enter fitting or tuning, the pooled ROC-AUC's resampling, and the
command end to end on the tiny pool of test_views with a LOCUS run trained without two of its models."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from locus import onboarding_rivals as rivals
from locus.data.canonical import validate
from locus.data.encodings import Encodings
from locus.errors import ConfigError, DataError
from locus.experiments import onboarding_rivals as exp
from locus.experiments.bootstrap import Settings

DIM = 16
RIVALS = ("cluster_shrinkage", "cluster_error_vector", "knn_agreement", "mean_accuracy")  # no checkpoint needed


# --------------------------------------------------------------------------------------------------
# hand-made pools
# --------------------------------------------------------------------------------------------------
def blobs(n_clusters: int, per_cluster: int, rng, noise: float = 0.05):
    """(cluster of each query, encodings): well separated blobs around orthogonal unit vectors."""
    cluster = np.repeat(np.arange(n_clusters), per_cluster)
    x = np.eye(DIM, dtype=np.float32)[cluster] + noise * rng.normal(size=(len(cluster), DIM)).astype(np.float32)
    return cluster, x


def pool_of(scores: np.ndarray, vectors: np.ndarray, **kw) -> rivals.PoolContext:
    """A pool of len(scores.T) models (ids 0..) scored on queries 0.. with the given encodings."""
    ids = np.arange(len(scores))
    return rivals.PoolContext(
        model_ids=np.arange(scores.shape[1]),
        prompt_ids=ids,
        scores=scores,
        query_ids=ids,
        query_vectors=vectors,
        **kw,
    )


def accuracy(p, y) -> float:
    return float(np.mean((np.asarray(p) >= 0.5) == (np.asarray(y) >= 0.5)))


def onboard_and_score(name, pool, new_train, new_test, test_vectors, k, seed=0, **params):
    """(correctness accuracy on the test queries, the onboarded model) of a new model drawn from k of its
    pool-query scores `new_train`."""
    method = rivals.create(name, **params).fit(pool)
    rows = np.sort(np.random.default_rng(seed).choice(len(new_train), k, replace=False))
    onboarded = method.onboard(pool.prompt_ids[rows], new_train[rows])
    return accuracy(onboarded.predict(test_vectors), new_test), onboarded


def test_registry_and_metadata():
    assert rivals.names() == [
        "locus",
        "cluster_shrinkage",
        "cluster_error_vector",
        "knn_agreement",
        "embedllm_fit",
        "irt_net_fit",
        "mean_accuracy",
    ]
    assert rivals.training_free() == ["cluster_shrinkage", "cluster_error_vector", "knn_agreement", "mean_accuracy"]
    for name in rivals.names():
        cls = rivals.method_class(name)
        assert cls.name == name and cls.label and cls.latex_label and cls.retrains is False
    with pytest.raises(ConfigError, match="unknown onboarding method"):
        rivals.create("nope")
    with pytest.raises(ConfigError, match="unknown parameter"):
        rivals.create("knn_agreement", voter=3)
    # one parameter system with the methods of locus.methods: typed, bounded, read by attribute
    with pytest.raises(ConfigError, match="method 'knn_agreement': voters must be"):
        rivals.create("knn_agreement", voters=[0, 4])
    with pytest.raises(ConfigError, match="method 'cluster_shrinkage': parents must be"):
        rivals.create("cluster_shrinkage", parents="20")
    assert rivals.create("knn_agreement", voters=[2, 4]).p.voters == (2, 4)


def test_command_vocabularies_match_the_library():
    from locus.commands import onboarding_rivals as command

    assert list(command.METHODS) == rivals.names()
    assert command.DEFAULT_SIZES == exp.DEFAULT_SIZES and command.POOLS == exp.POOLS
    assert command.SELECTORS == exp.STATIC_SELECTORS


def test_models_that_differ_only_by_query_cluster_the_cluster_rival_is_near_perfect():
    """Each model is right exactly on a subset of 4 query clusters: a few queries per cluster tell it all."""
    rng = np.random.default_rng(0)
    cluster, x = blobs(4, 32, rng)
    test_cluster, test_x = blobs(4, 25, rng)
    patterns = rng.random((24, 4)) < 0.5
    pool = pool_of(patterns[:, cluster].T.astype(float), x)
    new = np.array([True, False, True, False])
    y_train, y_test = new[cluster].astype(float), new[test_cluster].astype(float)
    acc, onboarded = onboard_and_score("cluster_shrinkage", pool, y_train, y_test, test_x, k=16)
    assert acc >= 0.97, onboarded.details
    floor, _ = onboard_and_score("mean_accuracy", pool, y_train, y_test, test_x, k=16)
    assert floor == pytest.approx(0.5)
    vector, _ = onboard_and_score("cluster_error_vector", pool, y_train, y_test, test_x, k=16)
    assert vector > floor + 0.2


def test_models_that_differ_only_by_one_ability_mean_accuracy_is_as_good_as_any():
    """P(correct) = the model's ability on every query: nothing beats its mean score."""
    rng = np.random.default_rng(1)
    _, x = blobs(8, 50, rng, noise=0.3)
    _, test_x = blobs(8, 50, rng, noise=0.3)
    ability = np.r_[rng.uniform(0.1, 0.35, 12), rng.uniform(0.65, 0.9, 12)]
    pool = pool_of((rng.random((len(x), 24)) < ability).astype(float), x)
    new_ability = np.array([0.2, 0.3, 0.7, 0.8, 0.25, 0.75])
    results = {name: [] for name in RIVALS}
    for j, a in enumerate(new_ability):
        y_train = (rng.random(len(x)) < a).astype(float)
        y_test = (rng.random(len(test_x)) < a).astype(float)
        for name in RIVALS:
            acc, onboarded = onboard_and_score(name, pool, y_train, y_test, test_x, k=64, seed=j)
            brier = float(np.mean((onboarded.predict(test_x) - y_test) ** 2))
            results[name].append((acc, brier))
    mean = {name: np.mean(v, axis=0) for name, v in results.items()}
    for name in RIVALS:
        assert mean["mean_accuracy"][0] >= mean[name][0] - 0.02, mean
        assert mean["mean_accuracy"][1] <= mean[name][1] + 0.01, mean


def test_a_held_out_model_that_copies_a_pool_model_knn_on_agreement_finds_it():
    rng = np.random.default_rng(2)
    cluster, x = blobs(8, 30, rng)
    test_cluster, test_x = blobs(8, 20, rng)
    patterns = rng.random((20, 8)) < 0.5
    noise = rng.random((len(x), 20)) < 0.1
    scores = np.where(noise, ~patterns[:, cluster].T, patterns[:, cluster].T).astype(float)
    pool = pool_of(scores, x)
    copied = 7
    y_test = patterns[copied, test_cluster].astype(float)
    acc, onboarded = onboard_and_score("knn_agreement", pool, scores[:, copied], y_test, test_x, k=32)
    assert onboarded.details["nearest"][0] == copied and onboarded.details["agreement"][0] == 1.0
    floor, _ = onboard_and_score("mean_accuracy", pool, scores[:, copied], y_test, test_x, k=32)
    assert acc >= 0.9 and acc > floor + 0.2


def test_onboard_checks_its_input():
    rng = np.random.default_rng(3)
    _, x = blobs(2, 10, rng)
    pool = pool_of((rng.random((20, 4)) < 0.5).astype(float), x)
    method = rivals.create("mean_accuracy")
    with pytest.raises(RuntimeError, match="fit"):
        method.onboard([0], [1.0])
    method.fit(pool)
    with pytest.raises(DataError, match="distinct"):
        method.onboard([1, 1], [1.0, 0.0])
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        method.onboard([1], [2.0])
    with pytest.raises(DataError, match="no encoding"):
        method.onboard([99], [1.0])
    assert method.onboard([0, 1], [1.0, 0.0]).predict(x[:3]).tolist() == [0.5, 0.5, 0.5]


# --------------------------------------------------------------------------------------------------
# the held-out models' test queries never enter fitting or the choice of λ
# --------------------------------------------------------------------------------------------------
def test_the_pool_refuses_held_out_models_and_test_queries():
    rng = np.random.default_rng(4)
    _, x = blobs(2, 10, rng)
    scores = (rng.random((20, 4)) < 0.5).astype(float)
    with pytest.raises(rivals.LeakageError, match="held-out test queries"):
        pool_of(scores, x, forbidden_prompt_ids=[3])
    with pytest.raises(rivals.LeakageError, match="held-out model"):
        pool_of(scores, x, forbidden_model_ids=[2])
    # the candidate queries may not hold a test query either, and onboarding from one is refused
    pool = pool_of(scores, x, forbidden_prompt_ids=[100])
    for name in RIVALS:
        method = rivals.create(name).fit(pool)
        with pytest.raises(rivals.LeakageError, match="test queries"):
            method.onboard([1, 100], [1.0, 0.0])

    class Checkpoint:  # a LOCUS method trained on a held-out model
        model_ids = np.array([0, 7])
        embed = logits_for_embeddings = None

    with pytest.raises(rivals.LeakageError, match="trained on held-out"):
        rivals.create("locus", method=Checkpoint()).fit(pool_of(scores, x, forbidden_model_ids=[7]))


def toy_dataset(seed: int = 5, flip_test_of=()):
    """EvalData + Encodings: 4 query clusters, 240 train / 40 val / 80 test queries, 16 cluster-pattern models
    (ids 0..15; 12..15 held out). `flip_test_of`: models whose test scores are flipped."""
    rng = np.random.default_rng(seed)
    cluster, x = blobs(4, 90, rng)
    split = np.array((["train"] * 60 + ["val"] * 10 + ["test"] * 20) * 4)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(len(cluster)),
            "prompt": [f"q{i}" for i in range(len(cluster))],
            "benchmark": [f"b{c}" for c in cluster],
            "category": "c",
            "split": split,
        }
    )
    patterns = rng.random((16, 4)) < 0.5
    scores = np.where(rng.random((len(cluster), 16)) < 0.1, ~patterns[:, cluster].T, patterns[:, cluster].T)
    scores = scores.astype(float)
    for m in flip_test_of:
        scores[split == "test", m] = 1 - scores[split == "test", m]
    pid, mid = np.meshgrid(np.arange(len(cluster)), np.arange(16), indexing="ij")
    models = pd.DataFrame({"model_id": np.arange(16), "name": [f"org/m{i}" for i in range(16)]})
    long = pd.DataFrame({"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": scores.ravel()})
    data = validate(queries, models, long)
    return data, Encodings(np.arange(len(cluster)), x)


def test_test_labels_of_the_held_out_models_change_nothing_but_the_metrics():
    held = np.arange(12, 16)
    boot = Settings(n_resamples=50)
    runs = []
    for flip in ((), tuple(held)):
        data, enc = toy_dataset(flip_test_of=flip)
        train = data.split_scores("train")
        pool_pairs = train[~train["model_id"].isin(held)]
        runs.append(exp.compare(data, enc, held, pool_pairs, sizes=[8, 32], methods=RIVALS, boot=boot))
    a, b = runs
    assert a.settings == b.settings and set(a.settings.values()) - {""}  # λ, K and voters: the same choices
    for key in a.probabilities:
        np.testing.assert_array_equal(a.probabilities[key], b.probabilities[key])
    acc = a.frame.query("metric == 'correctness_acc'")["value"].to_numpy()
    flipped = b.frame.query("metric == 'correctness_acc'")["value"].to_numpy()
    np.testing.assert_allclose(acc + flipped, 1.0)  # every prediction judged against flipped labels
    assert not np.isin(a.pool.prompt_ids, data.split_queries("test")["prompt_id"]).any()
    assert not np.isin(a.pool.model_ids, held).any()


def test_a_pool_with_test_scores_is_refused():
    data, enc = toy_dataset()
    held = np.arange(12, 16)
    pairs = data.scores[~data.scores["model_id"].isin(held)]  # every split: test scores of the pool models too
    with pytest.raises(rivals.LeakageError, match="training-split"):
        exp.compare(data, enc, held, pairs, sizes=[8], methods=["mean_accuracy"])


# --------------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------------
def test_pooled_auc_and_its_resampling_match_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(6)
    p = np.round(rng.random((30, 5)), 1)  # ties
    labels = (rng.random((30, 5)) < 0.5).astype(float)
    labels[rng.random((30, 5)) < 0.2] = np.nan
    parts = exp.auc_parts(p, labels)
    mask = ~np.isnan(labels)
    assert exp.auc_resamples(parts, np.ones((1, 30)))[0] == pytest.approx(roc_auc_score(labels[mask], p[mask]))
    counts = rng.multinomial(30, np.full(30, 1 / 30), size=3)
    for c, value in zip(counts, exp.auc_resamples(parts, counts)):
        rows = np.repeat(np.arange(30), c)
        m = mask[rows]
        assert value == pytest.approx(roc_auc_score(labels[rows][m], p[rows][m]), rel=1e-5)


def test_pooled_auc_of_one_class_or_many_ties_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(7)
    p = rng.choice([0.2, 0.5, 0.8], size=(40, 6))  # mostly ties, across and within queries
    labels = (rng.random((40, 6)) < 0.4).astype(float)
    parts = exp.auc_parts(p, labels)
    assert exp.auc_resamples(parts, np.ones((1, 40)))[0] == pytest.approx(roc_auc_score(labels.ravel(), p.ravel()))
    # one class only: no pair to rank
    assert np.isnan(exp.auc_resamples(exp.auc_parts(p, np.ones_like(p)), np.ones((1, 40)))[0])


def test_t_interval():
    mean, low, high, n = exp.t_interval([0.5, 0.7, np.nan, 0.6], 0.95)
    assert (mean, n) == (pytest.approx(0.6), 3) and low < 0.6 < high
    assert np.isnan(exp.t_interval([0.4], 0.95)[1])


# --------------------------------------------------------------------------------------------------
# end to end on the tiny pool with a real LOCUS run
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def held_run(tiny):
    from test_views import N_REF, PARAMS

    from locus.runs import execute

    out = tiny / "held-rivals"
    execute(
        "locus", PARAMS, tiny / "data", tiny / "enc.parquet", N_REF, 0, out, hold_out=["org/model-4", "org/model-5"]
    )
    return out


def command(tiny, run, out, *extra):
    from locus.cli import main

    return main(
        [
            "onboarding-rivals",
            "--run",
            str(run),
            "--data",
            str(tiny / "data"),
            "--encodings",
            str(tiny / "enc.parquet"),
            "--held-out",
            "org/model-4,org/model-5",
            "--k",
            "4,16",
            "--bootstrap-resamples",
            "100",
            "--threads",
            "1",
            "--out",
            str(out),
            *extra,
        ]
    )


def test_command_end_to_end(tiny, held_run, tmp_path, capsys):
    from locus import run_artifacts
    from locus.data.canonical import read_dataset
    from locus.data.encodings import read_encodings
    from locus.experiments.onboarding import onboarding_scores

    out = tmp_path / "rivals.tex"
    assert command(tiny, held_run, out, "--figure", str(tmp_path / "rivals.pdf")) == 0
    printed = capsys.readouterr().out
    assert "held-out models onboarded from k evaluations" in printed and "CPU time" in printed
    for path in (out, out.with_suffix(".csv"), tmp_path / "rivals.pdf", tmp_path / "rivals.png"):
        assert path.stat().st_size > 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert list(frame.columns) == list(exp.COLUMNS)
    compared = {"locus", *rivals.training_free()}  # no --fit-runs: no embedding fit
    assert set(frame["method"]) == compared | {"oracle", "random", exp.POOL_ONLY}
    assert set(frame["draw"].fillna("")) == {"random", ""} and (frame["repeats"] == 1).all()
    assert "one seeded random draw" in out.read_text()  # one repeat: the caption says the field repeats it
    assert not frame["metric"].str.startswith("aiq").any()  # the tiny pool has no costs: no accuracy-cost area
    assert sorted(frame["k"].unique()) == [4, 16]
    values = frame[frame["metric"].isin(exp.POOLED + exp.PER_MODEL)]["value"].dropna()
    assert values.between(0, 1).all()
    acc = frame[frame["metric"] == "correctness_acc"]
    assert (acc["n_models"] == 2).all() and (acc["n_queries"] == 15).all()
    assert (acc["ci_low"] <= acc["value"] + 1e-12).all() and (acc["value"] <= acc["ci_high"] + 1e-12).all()
    assert (acc["seconds_per_model"] >= 0).all()
    assert set(frame[frame["metric"].str.endswith("_minus_locus")]["method"]) == compared - {"locus"}
    # LOCUS's row is the onboarding figure's number: the same draws, the same embedding
    ckpt = run_artifacts.load_checkpoint(held_run)
    data = read_dataset(tiny / "data")
    scores = onboarding_scores(ckpt.method, data, read_encodings(tiny / "enc.parquet"), [40, 50], [4, 16], 1, 0)
    for k, cell in scores.groupby("k"):
        mine = acc[(acc["method"] == "locus") & (acc["k"] == k) & (acc["draw"] == "random")]["value"].item()
        # the same embeddings up to float rounding (fitted as a batch here, one by one there): at most one
        # borderline pair may flip on another CPU
        pairs = cell["n_pairs"].sum()
        assert mine == pytest.approx(cell["correct"].sum() / pairs, abs=1.01 / pairs)
    tex = out.read_text()
    assert "\\begin{table*}" in tex and "\\textsc{Locus}" in tex and "Mean accuracy (floor)" in tex
    assert tex.startswith("% generated by `locus onboarding-rivals`")
    body = tex.split("\n", 1)[1]
    assert not re.search(r"(?<!\\)%", body)  # every percent sign of the table escaped (else a LaTeX comment)


def test_command_errors_exit_2(tiny, held_run, tmp_path, capsys):
    out = tmp_path / "x.tex"
    assert command(tiny, tiny / "run", out) == 2  # a run of the whole pool saw the held-out models
    err = capsys.readouterr().err
    assert "trained on 2 of the 2 held-out models" in err and "Traceback" not in err
    assert command(tiny, held_run, out, "--methods", "locus,magic") == 2
    assert "unknown onboarding method 'magic'" in capsys.readouterr().err
    assert command(tiny, held_run, out, "--k", "0") == 2
    assert "must be >= 1" in capsys.readouterr().err
    assert command(tiny, held_run, tmp_path / "x.pdf") == 2
    assert "expected a path ending in .tex" in capsys.readouterr().err
    assert not out.exists()


def test_repeats_pool_their_own_held_out_sets(tiny, tmp_path, capsys):
    """Two runs, each trained without its own seeded draw of 2 models (--hold-out draw:2:R), compared together:
    each repeat onboards its own held-out models, the pooled numbers are the sums over repeats, the selector adds
    a second row per method, and a pool with costs gets the accuracy-cost area."""
    import shutil

    from test_views import N_REF, PARAMS

    from locus import run_artifacts
    from locus.cli import main
    from locus.data.canonical import read_dataset
    from locus.data.encodings import read_encodings
    from locus.experiments.onboarding import onboarding_scores
    from locus.runs import draw_held_out, execute

    data_dir = tmp_path / "data"
    shutil.copytree(tiny / "data", data_dir)
    models = pd.read_parquet(data_dir / "models.parquet")
    models["params_b"] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0][: len(models)]
    models.to_parquet(data_dir / "models.parquet", index=False)
    (data_dir / "dataset.json").unlink()  # edited on purpose: the manifest would refuse it
    data = read_dataset(data_dir)
    runs = []
    fits = []
    for r in (0, 1):
        runs.append(tmp_path / f"r{r}")
        execute("locus", PARAMS, data_dir, tiny / "enc.parquet", N_REF, 0, runs[-1], hold_out=[f"draw:2:{r}"])
        fits.append(tmp_path / f"e{r}")
        small = {"dim": 8, "max_epochs": 2, "embed_steps": 20}
        execute("embedllm", small, data_dir, tiny / "enc.parquet", N_REF, 0, fits[-1], hold_out=[f"draw:2:{r}"])
    held = [draw_held_out(data.model_ids, 2, r) for r in (0, 1)]
    for run, ids in zip(runs, held):
        trained = run_artifacts.load_checkpoint(run).model_ids
        assert not np.isin(ids, trained).any() and len(trained) == len(data.model_ids) - 2
    out = tmp_path / "rivals.tex"
    args = ["onboarding-rivals", "--run", *map(str, runs), "--data", str(data_dir)]
    args += ["--encodings", str(tiny / "enc.parquet"), "--held-out", "untrained", "--selector", "anchor"]
    args += ["--k", "4,16", "--bootstrap-resamples", "100", "--threads", "1", "--out", str(out)]
    assert main([*args, "--fit-runs", str(fits[0])]) == 2  # the second repeat has no EmbedLLM run ...
    assert "embedllm_fit has a run for 1 of the 2 repeats" in capsys.readouterr().err
    assert main([*args, "--fit-runs", str(fits[1]), str(runs[0])]) == 2  # ... and a LOCUS run is no fit run
    assert "--fit-runs takes runs of embedllm, irt_net" in capsys.readouterr().err
    args += ["--fit-runs", *map(str, fits)]
    assert main(args) == 0
    assert "repeat 2/2" in capsys.readouterr().out
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert (frame["repeats"] == 2).all()
    acc = frame[frame["metric"] == "correctness_acc"]
    assert (acc["n_models"] == 4).all()
    compared = {"locus", "embedllm_fit", *rivals.training_free()}
    assert set(acc[acc["draw"] == "anchor"]["method"]) == compared
    # the pooled LOCUS number is the sum over the repeats of the onboarding figure's counts
    enc = read_encodings(tiny / "enc.parquet")
    for k in (4, 16):
        correct = pairs = 0
        for run, ids in zip(runs, held):
            cell = onboarding_scores(run_artifacts.load_checkpoint(run).method, data, enc, ids, [k], 1, 0)
            correct, pairs = correct + cell["correct"].sum(), pairs + cell["n_pairs"].sum()
        mine = acc[(acc["method"] == "locus") & (acc["k"] == k) & (acc["draw"] == "random")]["value"].item()
        assert mine == pytest.approx(correct / pairs, abs=1.01 / pairs)  # one borderline pair may flip elsewhere
    aiq = frame[frame["metric"].isin(exp.AIQ)]
    assert set(aiq["method"]) == compared and aiq["value"].between(0, 1).all()
    assert (frame["metric"] == "aiq_range_minus_locus").sum() == 2 * 2 * (len(compared) - 1)
    tex = out.read_text()
    assert "2 of 6 models held out in each of 2 repeats" in tex and "anchor queries" in tex
    assert "the field's protocol holds out 38 of 112" in tex and "params\\_b column" in tex


def test_held_out_draws():
    from locus.errors import ConfigError
    from locus.runs import draw_held_out, held_out_ids, parse_draw

    models = pd.DataFrame({"model_id": np.arange(112), "name": [f"m{i}" for i in range(112)]})
    a = held_out_ids(models, ["draw:38:0"])
    assert len(a) == 38 and np.array_equal(a, held_out_ids(models, ["draw:38:0"]))
    assert not np.array_equal(a, held_out_ids(models, ["draw:38:1"]))
    assert np.array_equal(a, draw_held_out(np.arange(112)[::-1], 38, 0))  # the pool's order does not matter
    assert parse_draw("m1") is None
    for bad, message in (
        (["draw:38"], "draw:COUNT:SEED"),
        (["draw:112:0"], "choose 1..111"),
        (["draw:0:0"], "choose 1..111"),
        (["draw:2:0", "m1"], "stands alone"),
    ):
        with pytest.raises(ConfigError, match=message):
            held_out_ids(models, bad)
