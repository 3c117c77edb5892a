"""Run directories: the declared file list, the validating readers (locus.run_artifacts), the checksummed
checkpoint format (locus.weights), checkpoints that carry their model names, and the checks `runs.execute`
makes before fitting (encodings fingerprint, training size)."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from locus import run_artifacts as ra
from locus import weights
from locus.checkpoint import load_checkpoint
from locus.data.canonical import read_dataset, write_dataset
from locus.data.encodings import data_fingerprint, read_vectors, write_encodings, write_vectors
from locus.errors import DataError
from locus.runs import execute, training_pairs

D = 6
KNN = {"k_grid": [3, 5]}
EMBEDLLM = {"dim": 4, "max_epochs": 3, "patience": 2, "lr": 0.01, "threads": 1}


def frames(n_q=40, n_m=3, seed=0, text="question"):
    rng = np.random.default_rng(seed)
    split = ["train"] * (n_q // 2) + ["val"] * (n_q // 4) + ["test"] * (n_q - n_q // 2 - n_q // 4)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n_q),
            "prompt": [f"{text} {i}" for i in range(n_q)],
            "benchmark": "b",
            "category": "b",
            "split": split,
        }
    )
    models = pd.DataFrame({"model_id": np.arange(n_m) * 10, "name": [f"org/model-{i}" for i in range(n_m)]})
    pid, mid = np.meshgrid(np.arange(n_q), models["model_id"], indexing="ij")
    scores = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(pid.size) < 0.5).astype(float)}
    )
    return queries, models, scores


def write_inputs(root, text="question", fingerprint_text=None):
    """A data set and its encodings (fingerprint of the data set with prompts `fingerprint_text`)."""
    queries, models, scores = frames(text=text)
    write_dataset(root / "data", queries, models, scores)
    vectors = np.random.default_rng(1).normal(size=(len(queries), D)).astype(np.float32)
    texts = queries["prompt"] if fingerprint_text is None else [f"{fingerprint_text} {i}" for i in queries["prompt_id"]]
    write_encodings(
        root / "enc.parquet", queries["prompt_id"], vectors, "toy", False, data_fingerprint(queries["prompt_id"], texts)
    )
    return root / "data", root / "enc.parquet"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    data, enc = write_inputs(root)
    execute("knn_router", KNN, data, enc, 12, 0, root / "knn_router")
    execute("embedllm", EMBEDLLM, data, enc, 12, 0, root / "embedllm")
    return root


# ------------------------------------------------------------------------------------------------
# the declared files and their readers
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["knn_router", "embedllm"])
def test_run_directory_holds_exactly_the_declared_files(runs, method):
    assert sorted(p.name for p in (runs / method).iterdir()) == sorted(ra.run_files(method))


def test_run_files_per_method_kind():
    assert ra.run_files("knn_router") == ra.RUN_FILES_ALL
    assert ra.run_files("kmeans_router") == ra.RUN_FILES_ALL
    for method in ("locus", "embedllm", "embedllm_plus", "irt_net"):
        assert ra.run_files(method) == ra.RUN_FILES_EMBEDDING
    assert set(ra.RUN_FILES_EMBEDDING) - set(ra.RUN_FILES_ALL) == {"embeddings.parquet"}


def test_readers_on_a_real_run(runs):
    run = runs / "embedllm"
    prompt_ids, model_ids, logits = ra.read_scores(run, "test")
    assert prompt_ids.tolist() == list(range(30, 40)) and model_ids.tolist() == [0, 10, 20]
    assert logits.shape == (10, 3) and logits.dtype == np.float32
    ids, z = ra.read_embeddings(run)
    assert ids.tolist() == [0, 10, 20] and z.shape == (3, 4) and z.dtype == np.float32
    pairs = ra.read_train_pairs(run)
    assert len(pairs) == 12 * 3 and pairs["score"].between(0, 1).all()
    metrics = ra.read_metrics(run)
    assert metrics["method"] == "embedllm" and metrics["train_size"] == 12
    assert len(ra.read_log(run)) >= 1
    ck = ra.load_checkpoint(run)
    assert ck.name(20) == "org/model-2"
    np.testing.assert_array_equal(ck.method.model_embeddings()[1], z)


def test_metrics_record_what_was_trained_on(runs):
    metrics = ra.read_metrics(runs / "knn_router")
    assert metrics["n_train_queries"] == 12
    record = metrics["provenance"]  # the machine and code that made the run, for the documented numbers
    assert (
        record["device"] == "cpu"
        and record["cpu"]
        and record["torch"]
        and record["code"].startswith(("0.", "1.", "unknown"))
    )
    assert metrics["train_queries_per_model"] == {"min": 12, "median": 12.0, "max": 12}
    assert metrics["data_fingerprint"] == read_vectors(runs / "enc.parquet", "prompt_id")[2]["data_fingerprint"]


def _copy(runs, tmp_path, method="knn_router"):
    return shutil.copytree(runs / method, tmp_path / "run")


def test_missing_files_name_the_run_and_the_fix(runs, tmp_path):
    run = _copy(runs, tmp_path)
    for name in ra.RUN_FILES_ALL:
        (run / name).unlink()
    readers = [
        lambda: ra.read_scores(run, "val"),
        lambda: ra.read_embeddings(run),
        lambda: ra.read_train_pairs(run),
        lambda: ra.read_metrics(run),
        lambda: ra.read_log(run),
        lambda: ra.load_checkpoint(run),
    ]
    for read in readers:
        with pytest.raises(DataError, match=r"missing; .*re-run the training rule"):
            read()
    with pytest.raises(DataError, match="no score file for split 'train'"):
        ra.read_scores(run, "train")


def _scores(run, rows):
    pd.DataFrame(rows, columns=["prompt_id", "model_id", "logit"]).astype(
        {"prompt_id": "int64", "model_id": "int64", "logit": "float32"}
    ).to_parquet(run / "scores_val.parquet")


@pytest.mark.parametrize(
    "rows,message",
    [
        ([(1, 0, 0.5), (1, 0, 0.7)], "duplicate"),
        ([(1, 0, 0.5), (1, 1, 0.5), (2, 0, 0.1)], r"3 rows for 2 prompts x 2 models"),
        ([(1, 0, np.nan)], "NaN/Inf|without missing values"),
    ],
)
def test_read_scores_validates(tmp_path, rows, message):
    _scores(tmp_path, rows)
    with pytest.raises(DataError, match=message):
        ra.read_scores(tmp_path, "val")


def test_read_scores_hand_made(tmp_path):
    _scores(tmp_path, [(5, 1, 0.5), (2, 1, -1.0), (5, 0, 2.0), (2, 0, 3.0)])
    prompt_ids, model_ids, logits = ra.read_scores(tmp_path, "val")
    assert prompt_ids.tolist() == [2, 5] and model_ids.tolist() == [0, 1]
    np.testing.assert_array_equal(logits, np.array([[3.0, -1.0], [2.0, 0.5]], np.float32))


def test_other_readers_validate(tmp_path):
    (tmp_path / "scores_test.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match="not a readable Parquet"):
        ra.read_scores(tmp_path, "test")
    pd.DataFrame({"prompt_id": [1], "model_id": [0], "score": [1.5]}).to_parquet(tmp_path / "train_pairs.parquet")
    with pytest.raises(DataError, match=r"score in \[0, 1\]"):
        ra.read_train_pairs(tmp_path)
    pd.DataFrame({"prompt_id": [1], "score": [1.0]}).to_parquet(tmp_path / "train_pairs.parquet")
    with pytest.raises(DataError, match="missing column 'model_id'"):
        ra.read_train_pairs(tmp_path)
    write_vectors(tmp_path / "embeddings.parquet", "model_id", [0, 1], np.array([[1.0], [np.inf]]))
    with pytest.raises(DataError, match="NaN/Inf"):
        ra.read_embeddings(tmp_path)
    for text, message in (("{oops", "not valid JSON"), ("[1]", "JSON object"), ('{"method": "x"}', "missing entries")):
        (tmp_path / "metrics.json").write_text(text)
        with pytest.raises(DataError, match=message):
            ra.read_metrics(tmp_path)
    (tmp_path / "log.csv").write_text("")
    with pytest.raises(DataError, match="log.csv"):
        ra.read_log(tmp_path)


# ------------------------------------------------------------------------------------------------
# locus.weights: one checksummed format for every method
# ------------------------------------------------------------------------------------------------
ARRAYS = {
    "w": np.arange(6, dtype=np.float32).reshape(2, 3),
    "ids": np.array([3, 1], np.int64),
    "mask": np.array([True, False]),
}


def test_weights_round_trip_and_checksum(tmp_path):
    weights.save(tmp_path, ARRAYS, {"method": "x", "params": {"a": 1}})
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["weights_sha256"] == weights.sha256_file(tmp_path / "model.safetensors")
    loaded_config, arrays = weights.load(tmp_path)
    assert loaded_config["params"] == {"a": 1}
    for key, value in ARRAYS.items():
        np.testing.assert_array_equal(arrays[key], value)
        assert arrays[key].dtype == value.dtype


def test_weights_refuses_non_finite_on_save(tmp_path):
    with pytest.raises(DataError, match=r"'w' holds 1 NaN/Inf.*training diverged"):
        weights.save(tmp_path / "ckpt", {**ARRAYS, "w": np.array([1.0, np.nan])}, {})
    assert not (tmp_path / "ckpt").exists()


def _damage(directory, how):
    path, config_path = directory / "model.safetensors", directory / "config.json"
    if how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "flipped":
        data = bytearray(path.read_bytes())
        data[-1] ^= 0x01
        path.write_bytes(bytes(data))
    elif how == "nan":  # NaN weights with a matching checksum: only the finiteness check can catch it
        from safetensors.numpy import save_file

        save_file({**ARRAYS, "w": np.full((2, 3), np.nan, np.float32)}, str(path))
        config = json.loads(config_path.read_text())
        config["weights_sha256"] = weights.sha256_file(path)
        config_path.write_text(json.dumps(config))
    elif how == "garbage":  # not safetensors at all, checksum updated
        path.write_bytes(b"\x00" * 16)
        config = json.loads(config_path.read_text())
        config["weights_sha256"] = weights.sha256_file(path)
        config_path.write_text(json.dumps(config))
    elif how == "no-checksum":
        config = json.loads(config_path.read_text())
        del config["weights_sha256"]
        config_path.write_text(json.dumps(config))
    elif how == "bad-json":
        config_path.write_text('{"method": "x",')
    elif how == "list-json":
        config_path.write_text("[1, 2]")
    elif how == "no-config":
        config_path.unlink()
    elif how == "no-weights":
        path.unlink()


@pytest.mark.parametrize(
    "how,message",
    [
        ("truncated", r"model.safetensors: SHA-256 .* truncated or modified .*re-run the training rule"),
        ("flipped", r"does not match .* truncated or modified"),
        ("nan", r"array 'w' holds 6 NaN/Inf"),
        ("garbage", r"not a readable safetensors file"),
        ("no-checksum", r"no 'weights_sha256' entry"),
        ("bad-json", r"config.json: not valid JSON"),
        ("list-json", r"config.json: must hold a JSON object, found list"),
        ("no-config", r"config.json: missing"),
        ("no-weights", r"model.safetensors: missing"),
    ],
)
def test_weights_damage_is_a_data_error(tmp_path, how, message):
    weights.save(tmp_path, ARRAYS, {"method": "x"})
    _damage(tmp_path, how)
    with pytest.raises(DataError, match=message):
        weights.load(tmp_path)


def test_inconsistent_checkpoint_is_a_data_error(runs, tmp_path):
    run = _copy(runs, tmp_path, "embedllm")
    config = json.loads((run / "config.json").read_text())
    config["model_ids"] = config["model_ids"][:2]  # the weights hold 3 models
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(DataError, match=r"do not describe a fitted 'embedllm'.*re-run the training rule"):
        load_checkpoint(run)


# ------------------------------------------------------------------------------------------------
# checkpoints carry their model names
# ------------------------------------------------------------------------------------------------
def test_checkpoint_json_keys(runs):
    config = weights.read_config(runs / "embedllm")
    assert {
        "method",
        "params",
        "seed",
        "model_ids",
        "model_names",
        "encoder",
        "dataset",
        "data_fingerprint",
        "train_size",
        "sampling",
        "weights_sha256",
        "d_phi",
    } <= set(config)
    assert config["model_names"] == ["org/model-0", "org/model-1", "org/model-2"]


def test_names_come_from_the_run_itself(runs, tmp_path, monkeypatch):
    root = shutil.copytree(runs, tmp_path / "copy")
    shutil.rmtree(root / "data")  # the data set is gone, and we run from elsewhere
    monkeypatch.chdir(tmp_path)
    ck = load_checkpoint(root / "knn_router")
    assert [ck.name(i) for i in ck.model_ids] == ["org/model-0", "org/model-1", "org/model-2"]
    assert ck.encoder == "toy"
    config = json.loads((root / "knn_router" / "config.json").read_text())
    del config["model_names"]
    (root / "knn_router" / "config.json").write_text(json.dumps(config))
    with pytest.raises(DataError, match="no 'model_names'"):
        load_checkpoint(root / "knn_router")


def test_resolve_models(runs):
    ck = load_checkpoint(runs / "knn_router")
    assert ck.resolve_models(None).tolist() == [0, 10, 20]
    assert ck.resolve_models("20, org/model-0,MODEL-1,20").tolist() == [20, 0, 10]
    for spec in ("", ",", " , "):
        with pytest.raises(DataError, match="names no model"):
            ck.resolve_models(spec)
    with pytest.raises(DataError, match="'7' is not a model of this run"):
        ck.resolve_models("0,7")


# ------------------------------------------------------------------------------------------------
# checks before fitting
# ------------------------------------------------------------------------------------------------
def test_encodings_of_another_data_set_are_refused(tmp_path):
    data, enc = write_inputs(tmp_path, text="question", fingerprint_text="another question")
    with pytest.raises(DataError, match=r"were made for another data set .*cover 100% .*re-run `locus encode"):
        execute("knn_router", KNN, data, enc, 12, 0, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_encodings_without_fingerprint_are_refused(tmp_path):
    data, enc = write_inputs(tmp_path)
    ids, vectors, _ = read_vectors(enc, "prompt_id")
    write_vectors(enc, "prompt_id", ids, vectors, {"encoder": "toy"})  # an encodings file of an older locus
    with pytest.raises(DataError, match=r"record no data-set fingerprint.*re-run `locus encode"):
        execute("knn_router", KNN, data, enc, 12, 0, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_train_size_larger_than_the_split(tmp_path):
    data = read_dataset(write_inputs(tmp_path)[0])
    assert len(training_pairs(data, 20, 0)) == 20 * 3
    with pytest.raises(DataError, match=r"train_size 21 exceeds the 20 queries of the train split"):
        training_pairs(data, 21, 0)
    per_model = training_pairs(data, 500, 0, sampling="per_model")  # all available, counts in metrics.json
    assert len(per_model) == 20 * 3


def test_unknown_parameter_fails_before_reading_data(tmp_path):
    from locus.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown parameter"):
        execute("knn_router", {"kk": 3}, tmp_path / "nowhere", tmp_path / "nothing.parquet", 12, 0, tmp_path / "run")
    assert not os.listdir(tmp_path)


# ---------------------------------------------------------------------------------------------
# the files of a run belong together: every reader checks its file against metrics.json's digests
# ---------------------------------------------------------------------------------------------
def test_metrics_record_the_digest_of_every_other_file(runs):
    for method in ("knn_router", "embedllm"):
        run = runs / method
        digests = ra.read_metrics(run)[ra.DIGESTS]
        assert set(digests) == set(ra.run_files(method)) - {ra.METRICS}
        assert digests == ra.file_digests(run, method)


@pytest.mark.parametrize("name", [weights.CONFIG_FILE, weights.WEIGHTS_FILE, ra.EMBEDDINGS, ra.TRAIN_PAIRS, ra.LOG])
def test_a_file_from_another_run_is_refused_by_every_reader(runs, tmp_path, name):
    other = tmp_path / "other"
    execute("embedllm", EMBEDLLM, runs / "data", runs / "enc.parquet", 10, 1, other)  # another seed: other files
    run = tmp_path / "run"
    shutil.copytree(runs / "embedllm", run)
    together = {weights.CONFIG_FILE: weights.WEIGHTS_FILE, weights.WEIGHTS_FILE: weights.CONFIG_FILE}
    for copied in (name, together.get(name, name)):  # a checkpoint is config.json + model.safetensors together
        shutil.copy2(other / copied, run / copied)
    readers = {
        weights.CONFIG_FILE: ra.load_checkpoint,
        weights.WEIGHTS_FILE: ra.load_checkpoint,
        ra.EMBEDDINGS: ra.read_embeddings,
        ra.TRAIN_PAIRS: ra.read_train_pairs,
        ra.LOG: ra.read_log,
    }
    with pytest.raises(
        DataError, match=r"(config\.json|model\.safetensors|" + name + r"): not the file this run wrote"
    ):
        readers[name](run)


def test_a_checkpoint_of_an_older_run_without_digests_is_checked_by_its_settings(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs / "knn_router", run)
    metrics = json.loads((run / ra.METRICS).read_text())
    del metrics[ra.DIGESTS]
    metrics["data_fingerprint"] = "0" * 64  # the checkpoint records the real one: another data set's run
    (run / ra.METRICS).write_text(json.dumps(metrics))
    with pytest.raises(DataError, match=r"config.json: records data_fingerprint .* another run"):
        ra.load_checkpoint(run)


def test_a_model_without_training_evaluations_is_left_out_and_recorded(tmp_path, caplog):
    queries, models, scores = frames(n_m=3)
    train_ids = queries.loc[queries["split"] == "train", "prompt_id"]
    scores = scores[~((scores["model_id"] == 20) & scores["prompt_id"].isin(train_ids))]  # val/test only
    write_dataset(tmp_path / "data", queries, models, scores)
    vectors = np.random.default_rng(1).normal(size=(len(queries), D)).astype(np.float32)
    fp = data_fingerprint(queries["prompt_id"], queries["prompt"])
    write_encodings(tmp_path / "enc.parquet", queries["prompt_id"], vectors, "toy", False, fp)
    with caplog.at_level("WARNING", logger="locus.runs"):
        metrics = execute(
            "knn_router",
            KNN,
            tmp_path / "data",
            tmp_path / "enc.parquet",
            10,
            0,
            tmp_path / "run",
            sampling="per_model",
        )
    assert metrics["models_without_training_pairs"] == ["org/model-2"] and metrics["n_models"] == 2
    assert "org/model-2" in caplog.text and "left out" in caplog.text
