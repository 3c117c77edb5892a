"""`locus embed --onboarding` and `locus serve --onboarding`: a new model joins a trained run's pool by a
training-free method (issue 49, "serve what wins"), on the tiny run of tests/test_embed_route.py; serve over real
HTTP on loopback (tests/test_serve.py's Service). Also `embed --scores` with a tab-separated file (issue 50)."""

import json

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from test_embed_route import fake_encoder, run_dir  # noqa: E402,F401  (fixtures: the tiny run, the fake encoder)
from test_serve import Service, expected  # noqa: E402

from locus import checkpoint, serve  # noqa: E402
from locus import onboarding_serving as onboarding  # noqa: E402
from locus.cli import main  # noqa: E402
from locus.commands import embed as embed_command  # noqa: E402
from locus.commands import serve as serve_command  # noqa: E402
from locus.data.canonical import read_dataset  # noqa: E402
from locus.data.encodings import read_vectors  # noqa: E402
from locus.errors import DataError  # noqa: E402
from locus.runs import execute  # noqa: E402


def files(run):
    """The tiny run's data set and its encodings (not at the workflow's default place: given explicitly)."""
    return run.parent / "data", run.parent / "enc.parquet"


def score_file(path, prompts, scores):
    pd.DataFrame({"prompt": prompts, "score": scores}).to_csv(
        path, index=False, sep="\t" if path.suffix == ".tsv" else ","
    )
    return path


def train_scores_of(run, model_id: int, n: int):
    """(prompts, scores) of pool model `model_id` on the first `n` training queries of the tiny data set."""
    data = read_dataset(files(run)[0])
    queries = data.split_queries("train").head(n)
    scores = data.scores[data.scores["model_id"] == model_id].set_index("prompt_id")["score"]
    return queries["prompt"].tolist(), scores.loc[queries["prompt_id"]].to_numpy()


def embed(run, scores, *extra):
    return main(["embed", "--checkpoint", str(run), "--scores", str(scores), *extra])


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_the_commands_offer_every_onboarding_method():
    # written out in the command modules, so building the parser imports no numeric library
    assert embed_command.ONBOARDING == serve_command.ONBOARDING == tuple(onboarding.names())


# --------------------------------------------------------------------------------------------------
# locus embed --onboarding
# --------------------------------------------------------------------------------------------------
def test_embed_with_cluster_shrinkage_writes_its_predictions(run_dir, fake_encoder, tmp_path, capsys):  # noqa: F811
    data, enc = files(run_dir)
    prompts = [f"question {i}" for i in range(12)] + ["a text the data set lacks"]
    scores = score_file(tmp_path / "s.csv", prompts, [1.0] * len(prompts))
    out = tmp_path / "p.parquet"
    before = (run_dir / "config.json").read_text()
    assert embed(run_dir, scores, "--onboarding", "cluster_shrinkage", "--encodings", str(enc), "--out", str(out)) == 0
    text = capsys.readouterr().out
    assert "from 13 scored prompts (mean score 1.000) with cluster_shrinkage (lambda = " in text
    assert "5 models, 40 training queries" in text
    # an all-correct model: P(correct) 1 everywhere, above every model of the run on every test query
    assert "on the 10 test queries of the data set: mean P(correct) 1.000; routed 100.0% of them" in text
    assert "no embedding" in text and f"wrote {out}" in text
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["prompt_id", "split", "p_correct"] and len(frame) == 60
    assert frame["p_correct"].eq(1.0).all() and frame["split"].value_counts()["test"] == 10
    import pyarrow.parquet as pq

    meta = pq.read_schema(out).metadata
    assert meta[b"locus.onboarding"] == b"cluster_shrinkage" and meta[b"locus.n_evaluations"] == b"13"
    assert (run_dir / "config.json").read_text() == before  # the run is not changed


def test_embed_with_knn_agreement_names_the_voters(run_dir, fake_encoder, tmp_path, capsys):  # noqa: F811
    """A model that copies pool model 2 on 20 training queries (and answers one unseen text): model 2 votes first."""
    data, enc = files(run_dir)
    prompts, values = train_scores_of(run_dir, 2, 20)
    scores = score_file(tmp_path / "s.csv", prompts + ["unseen text"], [*values, 1.0])
    assert embed(run_dir, scores, "--onboarding", "knn_agreement", "--data", str(data), "--encodings", str(enc)) == 0
    text = capsys.readouterr().out
    assert "with knn_agreement (voters = " in text and "pool models that vote" in text
    first = next(line for line in text.splitlines() if line.strip().startswith("1."))
    # agreement 1 on its 20 scores; on the unseen text it is compared with model 2's vote there
    assert first.split()[2:] == ["2", "org/model-2"] and float(first.split()[1]) > 20 / 21


def test_embed_onboarding_errors_are_one_line_exit_2_nothing_written(run_dir, fake_encoder, tmp_path, capsys):  # noqa: F811
    data, enc = files(run_dir)
    scores = score_file(tmp_path / "s.csv", ["question 1", "question 2"], [1, 0])
    out = tmp_path / "p.parquet"
    cases = [
        # the run records its data set, but its encodings are not at the default place
        ((), "give --encodings"),
        (("--encodings", str(tmp_path / "none.parquet")), "has none at"),
        (("--encodings", str(enc), "--precision", "bfloat16"), "leave --precision out"),
        (("--encodings", str(enc), "--encoder", "other-encoder"), "leave --encoder out"),
    ]
    for extra, message in cases:
        assert embed(run_dir, scores, "--onboarding", "mean_accuracy", "--out", str(out), *extra) == 2
        assert message in one_error_line(capsys)
        assert not out.exists()
    assert embed(run_dir, scores, "--encodings", str(enc), "--out", str(out)) == 2  # locus: no pool to fit
    assert "leave --encodings out" in one_error_line(capsys)
    assert embed(run_dir, scores, "--onboarding", "hiershrink") == 2
    assert "invalid choice" in capsys.readouterr().err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]


def test_embed_reads_a_tsv_file_as_tab_separated(run_dir, fake_encoder, tmp_path, capsys):  # noqa: F811
    prompts, values = ["question 1", "a prompt, with a comma", "question 3"], [1.0, 0.0, 0.5]
    zs = []
    for name in ("s.csv", "s.tsv"):
        out = tmp_path / f"{name}.parquet"
        assert embed(run_dir, score_file(tmp_path / name, prompts, values), "--out", str(out)) == 0
        zs.append(read_vectors(out, "model_id")[1])
    np.testing.assert_array_equal(zs[0], zs[1])
    # tab-separated under a .csv name: said as such, exit 2, nothing written
    wrong = tmp_path / "tabs.csv"
    wrong.write_text("prompt\tscore\nquestion 1\t1\n")
    out = tmp_path / "z.parquet"
    capsys.readouterr()
    assert embed(run_dir, wrong, "--out", str(out)) == 2
    line = one_error_line(capsys)
    assert str(wrong) in line and "tab-separated" in line and "name it .tsv" in line
    assert not out.exists()


# --------------------------------------------------------------------------------------------------
# locus serve --onboarding
# --------------------------------------------------------------------------------------------------
def add(client, name, prompts, scores):
    return client.post(
        "/v1/pool",
        json={"name": name, "evaluations": [{"prompt": p, "score": float(s)} for p, s in zip(prompts, scores)]},
    )


def test_serve_hot_adds_with_a_rival_routes_to_it_and_reloads_it(run_dir, fake_encoder, tmp_path):  # noqa: F811
    data, enc = files(run_dir)
    pool_dir = tmp_path / "pool"
    svc = Service(run_dir, pool_dir, data=data, encodings=enc, onboarding_method="cluster_shrinkage")
    c = svc.client
    assert c.get("/healthz").json()["onboarding"] == "cluster_shrinkage"
    prompts = [f"question {i}" for i in range(12)] + [f"never seen {i}" for i in range(4)]
    r = add(c, "new/ace", prompts, [1.0] * 16)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["onboarding"] == "cluster_shrinkage" and body["reused_encodings"] == 12 and body["persisted"]
    assert body["nearest"] is None and "no model embedding" in body["note"] and "lambda" in body["setting"]
    assert add(c, "new/dud", prompts, [0.0] * 16).status_code == 201

    queries = ["route me", "and me", "question 55"]
    r = c.post("/v1/route", json={"queries": queries, "top_k": 7})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    want = expected(run_dir, queries, top_k=5)  # the run's models keep the run's decoder
    for res, w in zip(results, want):
        assert res["chosen"] == {"id": 5, "name": "new/ace", "p_correct": 1.0}  # all-correct: clearly best
        assert res["ranking"][-1] == {"id": 6, "name": "new/dud", "p_correct": 0.0}
        run_part = res["ranking"][1:-1]
        assert [m["id"] for m in run_part] == [m["id"] for m in w["ranking"]]
        np.testing.assert_allclose(
            [m["p_correct"] for m in run_part], [m["p_correct"] for m in w["ranking"]], rtol=1e-6
        )
    models = c.get("/v1/pool").json()["models"]
    assert [m.get("onboarding") for m in models] == [None] * 5 + ["cluster_shrinkage"] * 2
    svc.stop()

    state = json.loads((pool_dir / "pool.json").read_text())
    assert state["version"] == 2 and [m["onboarding"] for m in state["models"]] == ["cluster_shrinkage"] * 2
    assert "z" not in state["models"][0] and state["models"][0]["dim"] == 8

    # a restart with LOCUS adding: the two keep their method (refitted on the pool) and route as before
    svc = Service(run_dir, pool_dir, data=data, encodings=enc)
    c = svc.client
    assert c.get("/healthz").json()["onboarding"] == "locus"
    assert c.post("/v1/route", json={"queries": queries, "top_k": 7}).json()["results"] == results
    r = add(c, "new/by-locus", prompts, [1.0, 0.0] * 8)
    assert r.status_code == 201 and r.json()["onboarding"] == "locus"
    assert {n["id"] for n in r.json()["nearest"]} == set(range(5))  # cosine among models with an embedding only
    ranked = c.post("/v1/route", json={"queries": queries, "top_k": 8}).json()["results"]
    assert all(len(res["ranking"]) == 8 and res["chosen"]["name"] == "new/ace" for res in ranked)
    svc.stop()

    # without the data set's encodings the method cannot be refitted: said at start, naming the file and the fix
    with pytest.raises(DataError, match="was added with --onboarding cluster_shrinkage.*give --encodings"):
        serve.load(run_dir, pool_dir)


def test_serve_knn_agreement_on_a_run_that_cannot_embed(run_dir, fake_encoder, tmp_path):  # noqa: F811
    """A kNN-router run has no embeddings: LOCUS cannot add to it (a JSON error that names --onboarding), kNN on
    agreement can; a copy of pool model 3 gets model 3 as its first voter and routes beside the run's models."""
    data, enc = files(run_dir)
    knn = tmp_path / "knn"
    execute("knn_router", {}, data, enc, 20, 0, knn)
    prompts, values = train_scores_of(run_dir, 3, 24)
    svc = Service(knn)
    try:
        r = add(svc.client, "new/copy", prompts, values)
        assert r.status_code == 422 and "--onboarding" in r.json()["error"]["message"]
    finally:
        svc.stop()
    svc = Service(knn, data=data, encodings=enc, onboarding_method="knn_agreement")
    try:
        r = add(svc.client, "new/copy", prompts, values)
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["voters"][0] == {"id": 3, "name": "org/model-3", "agreement": 1.0}
        assert body["setting"]["voters"] == len(body["voters"])
        # its P(correct) is the method's, onboarded from the same prompts by the library
        method = onboarding.fit_method("knn_agreement", onboarding.read_run_pool(svc.pool.run, data, enc))
        ids = onboarding.read_run_pool(svc.pool.run, data, enc).prompt_ids(prompts)
        vectors = svc.pool.stored.vectors[[svc.pool.stored.rows[p] for p in prompts]]
        model = onboarding.onboard_vectors(method, vectors, values, ids)
        queries = ["route me", "and me"]
        want = model.predict(checkpoint.encode_queries("x", queries))
        r = svc.client.post("/v1/route", json={"queries": queries, "top_k": 6})
        assert r.status_code == 200, r.text
        for res, p in zip(r.json()["results"], want):
            assert len(res["ranking"]) == 6
            got = next(m["p_correct"] for m in res["ranking"] if m["name"] == "new/copy")
            assert got == pytest.approx(p, abs=1e-12)
    finally:
        svc.stop()


def test_serve_onboarding_that_cannot_fit_is_one_line_exit_2(run_dir, tmp_path, capsys):  # noqa: F811
    """Refused before the port is bound: a pool without the data set's encodings, or an unknown method."""
    pool_dir = tmp_path / "pool"
    argv = ["serve", "--run", str(run_dir), "--port", "0", "--pool-dir", str(pool_dir)]
    assert main([*argv, "--onboarding", "mean_accuracy"]) == 2
    line = one_error_line(capsys)
    assert "--onboarding mean_accuracy" in line and "give --encodings" in line
    assert not (pool_dir / "pool.json").exists()
    assert main([*argv, "--onboarding", "hiershrink"]) == 2
    assert "invalid choice" in capsys.readouterr().err
