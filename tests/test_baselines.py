"""Every registered baseline behind the common Method interface, on tiny generated data (seconds each).

The method lists come from the registry (:func:`locus.methods.names`) and the classes, so a new method is
tested here as soon as it is registered (it needs an entry in ``FAST``; a test says so)."""

from __future__ import annotations

import dataclasses
import json
import platform
import re

import numpy as np
import pandas as pd
import pytest
import torch

from locus import evaluation, methods
from locus.data.canonical import validate, write_dataset
from locus.data.encodings import Encodings, data_fingerprint, write_encodings
from locus.errors import ConfigError, DataError
from locus.methods import base
from locus.methods.base import EmbeddingMethod, FitData

torch.set_num_threads(1)

# small, fast settings; everything else is each method's default
FAST = {
    "embedllm": {"dim": 8, "lr": 0.02, "max_epochs": 150, "patience": 30, "threads": 1},
    "embedllm_plus": {"dim": 8, "hidden_dim": 16, "lr": 0.02, "max_epochs": 150, "patience": 30, "threads": 1},
    "irt_net": {
        "dim": 4,
        "n_experts": 3,
        "top_k": 3,
        "expert_hidden": 16,
        "expert_out": 8,
        "lr": 0.01,
        "max_epochs": 60,
        "patience": 20,
        "threads": 1,
    },
    "knn_router": {"k_grid": [3, 5, 10]},
    "kmeans_router": {"K_grid": [2, 4], "n_init": 2},
}
ALL = [name for name in methods.names() if name != "locus"]  # every baseline (LOCUS: test_locus_method.py)
EMBEDDING = [name for name in ALL if methods.info(name).has_embeddings]
TORCH = [name for name in ALL if methods.info(name).uses_torch]
D = 16


def make_data(seed: int = 0, n_models: int = 4, n_per_split=(80, 30, 30)):
    """Two query clusters; model 0 is right on cluster 0 only, model 1 on cluster 1 only, the other
    models are coin flips. Routing must learn which cluster a query is in."""
    rng = np.random.default_rng(seed)
    n = sum(n_per_split)
    cluster = rng.integers(0, 2, n)
    x = 0.3 * rng.normal(size=(n, D))
    x[np.arange(n), cluster] += 1.0
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    p = np.full((n, n_models), 0.5)
    p[:, 0] = np.where(cluster == 0, 0.95, 0.05)
    p[:, 1] = np.where(cluster == 1, 0.95, 0.05)
    y = (rng.random((n, n_models)) < p).astype(float)
    split = np.repeat(["train", "val", "test"], n_per_split)
    ids = np.arange(n) + 100
    queries = pd.DataFrame(
        {
            "prompt_id": ids,
            "prompt": [f"q{i}" for i in ids],
            "benchmark": np.where(cluster, "b", "a"),
            "category": "c",
            "split": split,
        }
    )
    models = pd.DataFrame({"model_id": np.arange(n_models) * 10, "name": [f"m{i}" for i in range(n_models)]})
    scores = pd.DataFrame(
        {"prompt_id": np.repeat(ids, n_models), "model_id": np.tile(models["model_id"], n), "score": y.reshape(-1)}
    )
    return queries, models, scores, Encodings(ids, x.astype(np.float32), "toy")


def fit_data(queries, models, scores, enc, train=None):
    data = validate(queries, models, scores)
    train = data.split_scores("train") if train is None else train
    return data, FitData(
        train=train, val=data.split_scores("val"), encodings=enc, model_ids=np.sort(train["model_id"].unique())
    )


@pytest.fixture(scope="module")
def toy():
    q, m, s, enc = make_data()
    data, fd = fit_data(q, m, s, enc)
    return data, fd, enc


@pytest.fixture(scope="module")
def fitted(toy):
    _, fd, _ = toy
    return {name: methods.create(name, FAST[name], seed=3).fit(fd) for name in ALL}


def test_logits(toy, fitted):
    data, fd, enc = toy
    test_q = data.split_queries("test")
    for name, method in fitted.items():
        logits = method.predict_logits(enc.take(test_q["prompt_id"]))
        assert logits.shape == (len(test_q), 4) and logits.dtype == np.float32 and np.isfinite(logits).all(), name
        sub = method.predict_logits(enc.take(test_q["prompt_id"]), [30, 0])
        np.testing.assert_allclose(sub, logits[:, [3, 0]], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", ALL)
def test_beats_random_routing(toy, fitted, name):
    data, _, enc = toy
    test_q = data.split_queries("test")
    labels = data.label_matrix(test_q["prompt_id"])
    r = evaluation.routing_metrics(fitted[name].predict_logits(enc.take(test_q["prompt_id"])), labels)
    assert r["routing_acc"] >= r["random"] + 0.25, (name, r)
    c = evaluation.correctness_metrics(fitted[name].predict_logits(enc.take(test_q["prompt_id"])), labels)
    assert c["correctness_acc"] > 0.6, (name, c)


@pytest.mark.parametrize("name", ALL)
def test_deterministic_for_a_seed(toy, fitted, name):
    data, fd, enc = toy
    x = enc.take(data.split_queries("test")["prompt_id"])
    again = methods.create(name, FAST[name], seed=3).fit(fd)
    np.testing.assert_array_equal(again.predict_logits(x), fitted[name].predict_logits(x))


@pytest.mark.parametrize("name", ALL)
def test_save_load_round_trip(toy, fitted, name, tmp_path):
    data, _, enc = toy
    x = enc.take(data.split_queries("test")["prompt_id"])
    fitted[name].save(tmp_path)
    assert (tmp_path / "config.json").is_file() and (tmp_path / "model.safetensors").is_file()
    assert not list(tmp_path.glob("*.pkl"))
    loaded = methods.method_class(name).load(tmp_path)
    np.testing.assert_array_equal(loaded.predict_logits(x), fitted[name].predict_logits(x))
    if isinstance(loaded, EmbeddingMethod):
        ids, z = loaded.model_embeddings()
        ids0, z0 = fitted[name].model_embeddings()
        np.testing.assert_array_equal(ids, ids0)
        np.testing.assert_array_equal(z, z0)
        assert z.shape == (4, FAST[name]["dim"]) and z.dtype == np.float32


@pytest.mark.parametrize("name", ALL)
def test_missing_encodings_is_a_data_error(toy, name):
    _, fd, enc = toy
    keep = enc.prompt_ids != fd.train["prompt_id"].iloc[0]
    partial = Encodings(enc.prompt_ids[keep], enc.vectors[keep], "toy", source="enc.parquet")
    bad = FitData(fd.train, fd.val, partial, fd.model_ids)
    with pytest.raises(DataError, match="no encoding"):
        methods.create(name, FAST[name]).fit(bad)


@pytest.mark.parametrize("name", ALL)
def test_dimension_mismatch_is_a_data_error(toy, fitted, name):
    with pytest.raises(DataError, match="expected"):
        fitted[name].predict_logits(np.zeros((3, D + 1), dtype=np.float32))


@pytest.mark.parametrize("name", ALL)
def test_bad_params_are_config_errors(name):
    with pytest.raises(ConfigError, match=re.escape("select_by must be one of ['val_routing', 'val_bce', 'val_acc']")):
        methods.create(name, {"select_by": "nonsense"})
    with pytest.raises(ConfigError, match="unknown parameter"):
        methods.create(name, {"select": "val_bce"})


def test_every_baseline_has_fast_settings():
    assert set(FAST) == set(ALL), "give every registered baseline small, fast settings in FAST"


def test_registry_metadata():
    names = methods.names()
    assert sorted(names) == sorted(methods.REGISTRY) and names[0] == "locus"
    assert [methods.info(n).order for n in names] == sorted(methods.info(n).order for n in names)
    for name in names:
        cls, info = methods.method_class(name), methods.info(name)
        assert cls.name == info.name == name
        assert info.label and info.latex_label and isinstance(info.order, int)
        assert info.has_embeddings == issubclass(cls, EmbeddingMethod) == cls.has_embeddings
        assert isinstance(info.uses_torch, bool)
        # one checkpoint-selection vocabulary for every method
        assert cls.defaults["select_by"] in ("val_routing", "val_bce", "val_acc")
    assert len({methods.info(n).order for n in names}) == len(names)
    assert methods.info("locus").latex_label == "\\textsc{Locus} (ours)"
    assert methods.info("knn_router").label == "kNN router"
    with pytest.raises(dataclasses.FrozenInstanceError):
        methods.info("locus").order = 3
    with pytest.raises(ConfigError, match="known: " + ", ".join(sorted(methods.REGISTRY))):
        methods.method_class("gpt")


@pytest.mark.parametrize("name", ALL)
def test_uses_torch_says_whether_the_fitted_method_holds_a_torch_network(fitted, name):
    """``uses_torch`` decides whether the workflow asks for a GPU: it must match what the method trains."""
    holds_net = any(isinstance(v, torch.nn.Module) for v in vars(fitted[name]).values())
    assert methods.info(name).uses_torch == holds_net


@pytest.mark.parametrize("name", EMBEDDING)
@pytest.mark.parametrize(
    "vectors,scores,message",
    [
        (np.zeros((2, D)), [0.5, 2.0], r"\[0, 1\]"),
        (np.zeros((2, D)), [0.5], "one score per query"),
        (np.zeros((0, D)), [], "at least one"),
        (np.zeros((2, D)), [[0.5], [1.0]], "one model"),
        (np.full((2, D), np.nan), [0.5, 1.0], "NaN/Inf"),
        (np.zeros((2, D + 1)), [0.5, 1.0], "shape"),
    ],
)
def test_embed_refuses_bad_input(fitted, name, vectors, scores, message):
    with pytest.raises(DataError, match=message):
        fitted[name].embed(np.asarray(vectors, np.float32), np.asarray(scores, np.float32))


@pytest.mark.parametrize("name", EMBEDDING)
def test_embed_many_gives_each_set_what_embed_gives_it(toy, fitted, name, monkeypatch):
    """Fitting several new models in one optimisation, in one block or split across blocks, gives each
    its own embed() up to float rounding (the batched matrix products may sum in another order): every
    row's loss, gradient and Adam update depend on its own set only."""
    _, fd, enc = toy
    method = fitted[name]
    sets = []
    for model_id, rows in zip(fd.model_ids[:3], [None, 5, 1]):
        own = fd.train[fd.train["model_id"] == model_id].iloc[:rows]
        sets.append((enc.take(own["prompt_id"]), own["score"].to_numpy(np.float32)))
    sets.append((sets[0][0], 1.0 - sets[0][1]))  # the same queries as set 0 (their features computed once)
    alone = np.stack([method.embed(vectors, scores) for vectors, scores in sets])
    np.testing.assert_allclose(method.embed_many(sets), alone, rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(base, "EMBED_BLOCK_ROWS", 6)  # blocks: [set 0], [set 1, set 2], [set 3]
    np.testing.assert_allclose(method.embed_many(sets), alone, rtol=1e-5, atol=1e-5)
    with pytest.raises(DataError, match="at least one evaluation set"):
        method.embed_many([])
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        method.embed_many([sets[0], (sets[1][0], sets[1][1] + 2.0)])


def test_distinct_rows_index_every_row():
    import torch

    from locus.methods.torch_utils import distinct_rows

    rows = torch.tensor([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [-0.0, 1.0], [0.0, 1.0]])
    unique, index = distinct_rows(rows)
    assert len(unique) == 3  # -0.0 and 0.0 differ byte for byte: kept apart, never wrongly merged
    assert torch.equal(unique[index], rows)


@pytest.mark.parametrize("name", EMBEDDING)
def test_embed_recovers_a_pool_model(toy, fitted, name):
    """Re-fitting model 0's embedding from its own training data (decoder frozen) predicts like the
    trained embedding (the App. H regeneration protocol)."""
    data, fd, enc = toy
    method = fitted[name]
    rows = fd.train[fd.train["model_id"] == 0]
    z = method.embed(enc.take(rows["prompt_id"]), rows["score"].to_numpy())
    assert z.shape == (FAST[name]["dim"],) and z.dtype == np.float32
    x = torch.from_numpy(enc.take(data.split_queries("test")["prompt_id"]))
    _, trained = method.model_embeddings()
    with torch.no_grad():
        new = method.net.matrix_logits(x, torch.from_numpy(z)[None]).numpy()[:, 0]
        old = method.net.matrix_logits(x, torch.from_numpy(trained[:1])).numpy()[:, 0]
    assert np.mean((new >= 0) == (old >= 0)) >= 0.9, name
    with pytest.raises(DataError):
        method.embed(enc.take(rows["prompt_id"]), rows["score"].to_numpy()[:-1])


def test_knn_uses_only_each_models_own_evaluations():
    q, m, s, enc = make_data(seed=1)
    data = validate(q, m, s)
    train = data.split_scores("train")
    train = train[~((train["model_id"] == 10) & (train["prompt_id"] % 2 == 0))]  # model 10: odd prompts only
    _, fd = fit_data(q, m, s, enc, train=train)
    knn = methods.create("knn_router", {"k": 3, "tie_eps": 0.0}, seed=0).fit(fd)
    x = enc.take(data.split_queries("test")["prompt_id"][:5])
    p = 1 / (1 + np.exp(-knn.predict_logits(x, [10])[:, 0].astype(np.float64)))
    own = train[train["model_id"] == 10].sort_values("prompt_id")
    v = enc.take(own["prompt_id"]).astype(np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    nearest = np.argsort(-(xn @ v.T), axis=1, kind="stable")[:, :3]
    expected = np.clip(own["score"].to_numpy()[nearest].mean(axis=1), 1e-4, 1 - 1e-4)
    np.testing.assert_allclose(p, expected, rtol=1e-5)


def tie_data():
    """Models 0 and 10 answer cluster 0 perfectly; model 10 is better on cluster 1 (higher global mean).
    Models 20 and 30 have identical scores everywhere."""
    q, m, s, enc = make_data(seed=2)
    cluster = (q.set_index("prompt_id")["benchmark"] == "b").astype(int)
    c = cluster.loc[s["prompt_id"]].to_numpy()
    s = s.copy()
    s.loc[s["model_id"] == 0, "score"] = np.where(c[s["model_id"] == 0] == 0, 1.0, 0.0)
    s.loc[s["model_id"] == 10, "score"] = np.where(c[s["model_id"] == 10] == 0, 1.0, 0.5)
    s.loc[s["model_id"] == 30, "score"] = s.loc[s["model_id"] == 20, "score"].to_numpy()
    return q, m, s, enc, cluster


@pytest.mark.parametrize("name", ["knn_router", "kmeans_router"])
def test_ties_are_broken_deterministically(name):
    q, m, s, enc, cluster = tie_data()
    data, fd = fit_data(q, m, s, enc)
    method = methods.create(name, {**FAST[name], "k": 5} if name == "knn_router" else {**FAST[name], "K": 2}).fit(fd)
    test_q = data.split_queries("test")
    in0 = cluster.loc[test_q["prompt_id"]].to_numpy() == 0
    logits = method.predict_logits(enc.take(test_q["prompt_id"]))
    # equal neighbour means (1.0) -> the model with the higher global training mean (10) wins
    assert np.all(logits[in0, 1] > logits[in0, 0])
    tied = in0 & (logits[:, 0] > 9.0)  # p clipped at 1 - 1e-4 for model 0: a genuine tie before the breaker
    assert tied.sum() >= 0.7 * in0.sum()
    assert np.all(logits[tied, 1] - logits[tied, 0] <= 1e-4 + 1e-6)
    # identical models tie exactly, and the common evaluation ranks the lower model id first
    np.testing.assert_array_equal(logits[:, 2], logits[:, 3])
    order = evaluation.ranking(logits[:, 2:], np.zeros_like(logits[:, 2:]))
    assert np.all(order[:, 0] == 0)


def test_execute_end_to_end(tmp_path):
    from locus.runs import execute

    q, m, s, enc = make_data(seed=4)
    write_dataset(tmp_path / "data", q, m, s)
    write_encodings(
        tmp_path / "enc.parquet",
        enc.prompt_ids,
        enc.vectors,
        "toy",
        normalized=True,
        data_fingerprint=data_fingerprint(q["prompt_id"], q["prompt"]),
    )
    for name in ("knn_router", "embedllm"):
        out = tmp_path / "runs" / name
        metrics = execute(
            name, FAST[name], tmp_path / "data", tmp_path / "enc.parquet", train_size=60, seed=0, out_dir=out
        )
        assert metrics["test"]["overall"]["routing_acc"] > metrics["test"]["overall"]["random"]
        for f in (
            "config.json",
            "model.safetensors",
            "train_pairs.parquet",
            "scores_val.parquet",
            "scores_test.parquet",
            "metrics.json",
            "log.csv",
        ):
            assert (out / f).is_file(), (name, f)
        assert json.loads((out / "config.json").read_text())["method"] == name
    assert (tmp_path / "runs" / "embedllm" / "embeddings.parquet").is_file()
    assert not (tmp_path / "runs" / "knn_router" / "embeddings.parquet").exists()


def test_irt_net_top_k_gating_and_balance_bias(toy):
    _, fd, enc = toy
    method = methods.create("irt_net", {**FAST["irt_net"], "top_k": 2, "max_epochs": 3}, seed=0).fit(fd)
    moe = method.net.query
    with torch.no_grad():
        weights, _ = moe.gate_weights(torch.from_numpy(enc.vectors[:10]))
    assert np.all((weights > 0).sum(dim=1).numpy() == 2)
    np.testing.assert_allclose(weights.sum(dim=1).numpy(), 1.0, rtol=1e-6)
    assert torch.any(moe.balance_bias != 0)  # updated after every step


def subnormals_flushed() -> bool:
    """Whether CPU arithmetic on this thread treats subnormal float32 values (below 1.18e-38) as 0."""
    return (torch.tensor([1e-39]) * 1.0).item() == 0.0


def flushing_off() -> bool:
    """Switch flushing off; return whether this CPU can flush at all (every x86 CPU torch runs on can)."""
    supported = torch.set_flush_denormal(True)
    torch.set_flush_denormal(False)
    assert supported or platform.machine().lower() not in ("x86_64", "amd64")
    assert not subnormals_flushed()
    return supported


@pytest.mark.parametrize("name", TORCH)
def test_training_flushes_subnormal_floats(toy, name):
    # weight decay drives unused weights into subnormals, which x86 CPUs compute on many times slower;
    # every torch method trains with them flushed
    _, fd, _ = toy
    supported = flushing_off()
    methods.create(name, {**FAST[name], "max_epochs": 1}, seed=0).fit(fd)
    assert subnormals_flushed() == supported


# ---------------------------------------------------------------------------------------------
# typed parameters: every baseline declares each parameter once (type, range, doc) and checks it first
# ---------------------------------------------------------------------------------------------
def test_every_method_declares_each_parameter_with_type_and_doc():
    from locus.methods import method_class, names

    for name in names():
        cls = method_class(name)
        assert cls.Params.method == name and set(cls.Params.specs()) == set(cls.defaults), name
        for key, spec in cls.Params.specs().items():
            assert spec.doc and spec.ok(spec.default), (name, key)
            assert cls.validate_params({key: spec.default}).as_dict()[key] == spec.default


@pytest.mark.parametrize(
    "method, params, message",
    [
        ("knn_router", {"k_grid": ["a"]}, "k_grid must be a non-empty list of integers >= 1, got ['a']"),
        ("knn_router", {"k": None}, "k must be an integer >= 0, got None"),
        ("knn_router", {"k_grid": []}, "k_grid must be a non-empty list of integers >= 1, got []"),
        ("knn_router", {"k": 2.5}, "k must be an integer >= 0, got 2.5"),
        ("knn_router", {"clip": "x"}, "clip must be a number > 0 and < 0.5, got 'x'"),
        ("knn_router", {"tie_eps": float("inf")}, "tie_eps must be a number >= 0, got inf"),
        ("kmeans_router", {"K_grid": [4, True]}, "K_grid must be a non-empty list of integers >= 1, got [4, True]"),
        ("kmeans_router", {"n_init": 0}, "n_init must be an integer >= 1, got 0"),
        ("embedllm", {"lr": -0.001}, "lr must be a number > 0, got -0.001"),
        ("embedllm", {"dim": 8.5}, "dim must be an integer >= 1, got 8.5"),
        ("embedllm_plus", {"hidden_layers": "two"}, "hidden_layers must be an integer >= 0, got 'two'"),
        ("irt_net", {"dropout": 1.0}, "dropout must be a number >= 0 and < 1, got 1.0"),
        ("irt_net", {"top_k": 50}, "top_k must be <= n_experts (39), got 50"),
        ("irt_net", {"select_by": "loss"}, "select_by must be one of"),
    ],
)
def test_bad_baseline_parameter_is_one_line_naming_key_value_and_allowed(method, params, message):
    from locus.methods import method_class

    with pytest.raises(ConfigError) as info:
        method_class(method).validate_params(params)
    assert message in str(info.value) and f"method {method!r}" in str(info.value) and "\n" not in str(info.value)


def test_embedllm_plus_differs_from_embedllm_only_in_its_hidden_layers():
    from locus.methods.embedllm import EmbedLLM, EmbedLLMPlus

    assert {k for k in EmbedLLM.defaults if EmbedLLM.defaults[k] != EmbedLLMPlus.defaults[k]} == {"hidden_layers"}
    assert EmbedLLMPlus.defaults["hidden_layers"] == 2
