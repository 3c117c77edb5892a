"""`locus embed` / `locus route` on a tiny run directory written by `locus.runs.execute`."""

import json

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from locus import checkpoint  # noqa: E402
from locus.cli import main  # noqa: E402
from locus.data.canonical import write_dataset  # noqa: E402
from locus.data.encodings import data_fingerprint, read_vectors, write_encodings  # noqa: E402
from locus.runs import execute  # noqa: E402

D_PHI = 8
PARAMS = {
    "dim": 8,
    "heads": 2,
    "layers": 1,
    "latents": 4,
    "decoder_hidden": 8,
    "max_steps": 10,
    "eval_every": 5,
    "model_batch": 4,
    "max_tokens": 16,
    "threads": 1,
}


def write_tiny_dataset(directory, prompts: list[str], n_models: int, splits: tuple[int, int, int], rng):
    """A canonical data set of `prompts` (train/val/test counts `splits`) and `n_models` models org/model-i, every
    pair scored 0/1 by `rng` (a numpy Generator); returns its queries frame."""
    n_q = len(prompts)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n_q),
            "prompt": prompts,
            "benchmark": "b",
            "category": "b",
            "split": ["train"] * splits[0] + ["val"] * splits[1] + ["test"] * splits[2],
        }
    )
    models = pd.DataFrame({"model_id": np.arange(n_models), "name": [f"org/model-{i}" for i in range(n_models)]})
    pid, mid = np.meshgrid(np.arange(n_q), np.arange(n_models), indexing="ij")
    scores = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(pid.size) < 0.5).astype(float)}
    )
    write_dataset(directory, queries, models, scores)
    return queries


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tinyrun")
    rng = np.random.default_rng(0)
    n_q = 60
    queries = write_tiny_dataset(root / "data", [f"question {i}" for i in range(n_q)], 5, (40, 10, 10), rng)
    vectors = rng.normal(size=(n_q, D_PHI)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    write_encodings(
        root / "enc.parquet",
        np.arange(n_q),
        vectors,
        "fake-encoder",
        True,
        data_fingerprint(queries["prompt_id"], queries["prompt"]),
    )
    execute("locus", PARAMS, root / "data", root / "enc.parquet", 20, 0, root / "run")
    return root / "run"


@pytest.fixture
def fake_encoder(monkeypatch):
    """Deterministic stand-in for the sentence encoder: a hash of the text -> a unit vector."""

    def encode(encoder, texts, batch_size=64):
        out = []
        for t in texts:
            v = np.random.default_rng(abs(hash(t)) % (2**32)).normal(size=D_PHI)
            out.append(v / np.linalg.norm(v))
        return np.asarray(out, dtype=np.float32)

    monkeypatch.setattr(checkpoint, "encode_queries", encode)


def test_checkpoint_names_and_models(run_dir):
    ck = checkpoint.load_checkpoint(run_dir)
    assert ck.encoder == "fake-encoder"
    assert ck.name(3) == "org/model-3"
    assert ck.resolve_models("1,org/model-4,MODEL-2").tolist() == [1, 4, 2]
    with pytest.raises(checkpoint.DataError, match="not a model"):
        ck.resolve_models("gpt-9")


def test_embed_command(run_dir, fake_encoder, tmp_path, capsys):
    scores = tmp_path / "s.csv"
    pd.DataFrame({"prompt": ["question 1", "question 2", "something new"], "score": [1, 0, 0.5]}).to_csv(
        scores, index=False
    )
    out = tmp_path / "z.parquet"
    before = json.loads((run_dir / "config.json").read_text())
    assert main(["embed", "--checkpoint", str(run_dir), "--scores", str(scores), "--out", str(out), "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "nearest pool models" in text and "org/model-" in text
    ids, z, meta = read_vectors(out, "model_id")
    assert z.shape == (1, 8) and meta["n_evaluations"] == "3"
    assert json.loads((run_dir / "config.json").read_text()) == before  # the run is not modified


@pytest.mark.parametrize(
    "rows,message",
    [
        ({"prompt": [], "score": []}, "no rows"),
        ({"prompt": ["a", "b"], "score": [0.5, 1.2]}, r"row\(s\) \[3\]"),
        ({"prompt": ["a", "b"], "score": [0.5, "x"]}, r"\[0, 1\]"),
        ({"prompt": ["a"], "answer": [1]}, "missing column"),
    ],
)
def test_embed_rejects_bad_score_files(run_dir, fake_encoder, tmp_path, capsys, rows, message):
    path = tmp_path / "bad.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main(["embed", "--checkpoint", str(run_dir), "--scores", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err
    assert pytest.importorskip("re").search(message, err), err


def test_embed_wrong_encoder_dimension(run_dir, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(checkpoint, "encode_queries", lambda e, t, batch_size=64: np.ones((len(t), 5), np.float32))
    path = tmp_path / "s.csv"
    pd.DataFrame({"prompt": ["a"], "score": [1]}).to_csv(path, index=False)
    assert main(["embed", "--checkpoint", str(run_dir), "--scores", str(path)]) == 2
    assert "5-d vectors" in capsys.readouterr().err


def test_route_command(run_dir, fake_encoder, tmp_path, capsys):
    qfile = tmp_path / "q.txt"
    qfile.write_text("first query\n\nsecond query\n")
    assert (
        main(
            [
                "route",
                "--checkpoint",
                str(run_dir),
                "third query",
                "--file",
                str(qfile),
                "--top-k",
                "2",
                "--models",
                "0,org/model-3,4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("query ") == 3 and out.count("p=") == 6
    assert "org/model-1" not in out
    # ranking agrees with predict_logits
    ck = checkpoint.load_checkpoint(run_dir)
    vec = checkpoint.encode_queries("x", ["third query"])
    best = [0, 3, 4][int(np.argmax(ck.method.predict_logits(vec, [0, 3, 4])[0]))]
    first_line = [line for line in out.splitlines() if "1. p=" in line][0]
    assert first_line.endswith(f"org/model-{best}")
    assert main(["route", "--checkpoint", str(run_dir), "q", "--models", "77"]) == 2
    assert main(["route", "--checkpoint", str(run_dir)]) == 2
    assert main(["route", "--checkpoint", str(tmp_path / "nope"), "q"]) == 2


def test_route_with_real_minilm(tmp_path, capsys):
    """One run trained on real MiniLM encodings of a few texts, then routed with the real encoder."""
    encoders = pytest.importorskip("locus.encoders")
    try:
        model = encoders.load_encoder("all-MiniLM-L6-v2")
    except Exception as exc:  # package not installed in this environment
        pytest.skip(f"MiniLM not available: {exc}")
    texts = [f"What is {a} plus {b}?" for a in range(6) for b in range(3)] + [
        f"Name the capital of country number {i}." for i in range(18)
    ]
    vec = encoders.encode_texts(model, texts, batch_size=16, progress=False)
    n = len(texts)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n),
            "prompt": texts,
            "benchmark": "b",
            "category": "b",
            "split": (["train"] * 4 + ["val", "test"]) * (n // 6),
        }
    )
    models = pd.DataFrame({"model_id": [0, 1], "name": ["math/solver", "geo/atlas"]})
    is_math = np.arange(n) < 18
    scores = pd.DataFrame(
        {
            "prompt_id": np.tile(np.arange(n), 2),
            "model_id": np.repeat([0, 1], n),
            "score": np.concatenate([is_math, ~is_math]).astype(float),
        }
    )
    write_dataset(tmp_path / "data", queries, models, scores)
    write_encodings(
        tmp_path / "enc.parquet",
        np.arange(n),
        vec,
        "all-MiniLM-L6-v2",
        True,
        data_fingerprint(queries["prompt_id"], queries["prompt"]),
    )
    execute("locus", {**PARAMS, "max_steps": 5}, tmp_path / "data", tmp_path / "enc.parquet", 24, 0, tmp_path / "run")
    assert main(["route", "--checkpoint", str(tmp_path / "run"), "What is 7 plus 9?", "--top-k", "1"]) == 0
    assert "p=" in capsys.readouterr().out


def test_precision_option_of_embed_and_route(run_dir, fake_encoder, tmp_path, capsys):
    """--precision bfloat16 runs the forward pass in bfloat16: close to float32, the run unchanged; a run of
    a method without the option is refused with exit code 2."""
    scores = tmp_path / "s.csv"
    pd.DataFrame({"prompt": ["question 1", "question 2", "something new"], "score": [1, 0, 0.5]}).to_csv(
        scores, index=False
    )
    zs = {}
    for precision in ("float32", "bfloat16"):
        out = tmp_path / f"z-{precision}.parquet"
        assert (
            main(
                [
                    "embed",
                    "--checkpoint",
                    str(run_dir),
                    "--scores",
                    str(scores),
                    "--out",
                    str(out),
                    "--precision",
                    precision,
                ]
            )
            == 0
        )
        zs[precision] = read_vectors(out, "model_id")[1][0]
    assert not np.array_equal(zs["float32"], zs["bfloat16"])
    assert np.linalg.norm(zs["bfloat16"] - zs["float32"]) / np.linalg.norm(zs["float32"]) < 0.05
    assert main(["route", "--checkpoint", str(run_dir), "a query", "--precision", "bfloat16"]) == 0
    assert "1. p=" in capsys.readouterr().out
    assert main(["route", "--checkpoint", str(run_dir), "a query", "--precision", "float16"]) == 2
    knn = tmp_path / "knn"
    execute("knn_router", {}, run_dir.parent / "data", run_dir.parent / "enc.parquet", 20, 0, knn)
    capsys.readouterr()
    assert main(["route", "--checkpoint", str(knn), "a query", "--precision", "bfloat16"]) == 2
    assert "has no precision option" in capsys.readouterr().err
