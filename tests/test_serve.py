"""`locus serve` over real HTTP on loopback: uvicorn in a thread of the test process (so the fake sentence
encoder of tests/test_embed_route.py applies), talked to with httpx."""

import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from test_embed_route import fake_encoder, run_dir  # noqa: E402,F401  (fixtures: the tiny run, the fake encoder)

from locus import inference, serve  # noqa: E402
from locus.cli import main  # noqa: E402
from locus.encoders import choose_precision  # noqa: E402
from locus.errors import DataError  # noqa: E402

TOKEN = "s3cret-token"


class Service:
    """`locus serve`'s application on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, run, pool_dir=None, token=None, settings=None, **load):
        self.pool = serve.load(run, pool_dir, **load)
        self.app = serve.create_app(self.pool, token, settings)
        self.server = serve.make_server(self.app, "127.0.0.1", 0, log_level="warning")
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def stop(self):
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


@pytest.fixture
def service(run_dir, fake_encoder, tmp_path):  # noqa: F811
    svc = Service(run_dir, tmp_path / "pool")
    yield svc
    svc.stop()


def evaluations(n=12, offset=0, seed=0):
    rng = np.random.default_rng(seed)
    return [{"prompt": f"scored prompt {i + offset}", "score": float(rng.random() < 0.7)} for i in range(n)]


def expected(run, queries, **kw):
    return [
        {"query": r.query, "ranking": [{"id": m, "name": n, "p_correct": p} for m, n, p in r.models]}
        for r in inference.route(run, queries, **kw)
    ]


def ranking_of(body):
    return [{"query": r["query"], "ranking": r["ranking"]} for r in body["results"]]


def same_routing(got, want):
    """The same models in the same order; probabilities equal up to float32 rounding (the service scores queries
    in fixed-size blocks, `locus route` all at once: a matrix product's last bits depend on its shape)."""
    assert [[(m["id"], m["name"]) for m in r["ranking"]] for r in got] == [
        [(m["id"], m["name"]) for m in r["ranking"]] for r in want
    ]
    assert [r["query"] for r in got] == [r["query"] for r in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(
            [m["p_correct"] for m in g["ranking"]], [m["p_correct"] for m in w["ranking"]], rtol=1e-6
        )


def test_health_models_and_route_equal_locus_route(service, run_dir):  # noqa: F811
    c = service.client
    health = c.get("/healthz").json()
    assert health["status"] == "ok" and health["models"] == 5 and health["run"] == run_dir.name
    assert str(run_dir.parent) not in str(health)  # no local paths for clients
    assert health["encoder_precision"] == choose_precision()  # auto: what this CPU does fast
    models = c.get("/v1/pool").json()["models"]
    assert [(m["id"], m["name"], m["added"]) for m in models] == [(i, f"org/model-{i}", False) for i in range(5)]

    queries = ["first query", "second query", "a third one"]
    r = c.post("/v1/route", json={"queries": queries, "top_k": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    same_routing(ranking_of(body), expected(run_dir, queries, top_k=5))
    for res in body["results"]:
        assert res["chosen"] == res["ranking"][0]
        assert all(0 < m["p_correct"] < 1 for m in res["ranking"])
    # a subset of models, by name, short name and id; default top_k = 3 as `locus route`
    r = c.post("/v1/route", json={"queries": queries, "models": ["org/model-3", "MODEL-1", 4, "0"]})
    same_routing(ranking_of(r.json()), expected(run_dir, queries, models=["org/model-3", "model-1", "4", "0"]))
    assert all(len(res["ranking"]) == 3 for res in r.json()["results"])


def test_add_route_delete_and_persist(run_dir, fake_encoder, tmp_path):  # noqa: F811
    pool_dir = tmp_path / "pool"
    svc = Service(run_dir, pool_dir)
    c = svc.client
    r = c.post("/v1/pool", json={"name": "new/model-a", "evaluations": evaluations()})
    assert r.status_code == 201, r.text
    added = r.json()
    assert added["id"] == 5 and added["persisted"] and added["n_evaluations"] == 12
    assert len(added["nearest"]) == 5 and all(-1 <= n["cosine"] <= 1 for n in added["nearest"])
    # the embedding is `locus embed`'s: one forward pass of the run's network
    z = svc.pool.added["new/model-a"].z
    from locus import checkpoint

    run = checkpoint.load_checkpoint(run_dir)
    ev = evaluations()
    vec = checkpoint.encode_queries("x", [e["prompt"] for e in ev])
    np.testing.assert_array_equal(z, run.method.embed(vec, np.asarray([e["score"] for e in ev], np.float32)))

    # routing with it
    queries = ["route me", "and me"]
    r = c.post("/v1/route", json={"queries": queries, "models": ["new/model-a", "org/model-2"], "top_k": 2})
    assert r.status_code == 200, r.text
    logits = run.method.logits_for_embeddings(
        checkpoint.encode_queries("x", queries), np.stack([z, run.method.model_embeddings()[1][2]])
    )
    for qi, res in enumerate(r.json()["results"]):
        assert res["chosen"]["id"] == [5, 2][int(np.argmax(logits[qi]))]
        assert {m["name"] for m in res["ranking"]} == {"new/model-a", "org/model-2"}
    all_models = c.post("/v1/route", json={"queries": queries, "top_k": 10}).json()
    assert all(len(res["ranking"]) == 6 for res in all_models["results"])
    assert [m["added"] for m in c.get("/v1/pool").json()["models"]] == [False] * 5 + [True]

    # duplicates: 409 unless replace; replace keeps the id
    r = c.post("/v1/pool", json={"name": "new/model-a", "evaluations": evaluations(seed=1)})
    assert r.status_code == 409 and "replace" in r.json()["error"]["message"]
    assert c.post("/v1/pool", json={"name": "org/model-1", "evaluations": evaluations()}).status_code == 409
    assert c.post("/v1/pool", json={"name": "NEW/MODEL-A", "evaluations": evaluations()}).status_code == 409
    r = c.post("/v1/pool", json={"name": "new/model-a", "evaluations": evaluations(seed=1), "replace": True})
    assert r.status_code == 201 and r.json()["replaced"] and r.json()["id"] == 5
    assert c.post("/v1/pool", json={"name": "new/model-b", "evaluations": evaluations(8, 3)}).json()["id"] == 6
    before = c.post("/v1/route", json={"queries": queries, "top_k": 7}).json()
    svc.stop()

    # a restart serves the same pool and the same routing
    svc = Service(run_dir, pool_dir)
    c = svc.client
    assert c.get("/healthz").json()["models"] == 7
    assert c.post("/v1/route", json={"queries": queries, "top_k": 7}).json() == before

    # delete: added models only
    r = c.delete("/v1/pool/new/model-a")
    assert r.status_code == 200 and r.json() == {"deleted": "new/model-a", "id": 5}
    assert c.delete("/v1/pool/new/model-a").status_code == 404
    r = c.delete("/v1/pool/org/model-0")
    assert r.status_code == 409 and "model of the run" in r.json()["error"]["message"]
    r = c.post("/v1/route", json={"queries": ["q"], "models": ["new/model-a"]})
    assert r.status_code == 422 and "not a model of the pool" in r.json()["error"]["message"]
    svc.stop()
    svc = Service(run_dir, pool_dir)
    names = [m["name"] for m in svc.client.get("/v1/pool").json()["models"] if m["added"]]
    assert names == ["new/model-b"]
    # a new model never reuses a deleted model's id
    assert svc.client.post("/v1/pool", json={"name": "x/c", "evaluations": evaluations()}).json()["id"] == 7
    svc.stop()
    assert sorted(p.name for p in pool_dir.iterdir()) == ["pool.json"]  # no temporaries left


def test_load_options(run_dir, tmp_path):  # noqa: F811
    assert serve.load(run_dir, None, "bfloat16").run.method.params.precision == "bfloat16"
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataError, match="not a directory"):
        serve.load(run_dir, tmp_path / "file")
    serve.load(run_dir, tmp_path / "new" / "pool")
    assert (tmp_path / "new" / "pool").is_dir()  # created at start, so a bad --pool-dir fails before serving


def test_pool_of_another_run_is_refused(run_dir, fake_encoder, tmp_path):  # noqa: F811
    pool_dir = tmp_path / "pool"
    pool_dir.mkdir()
    (pool_dir / "pool.json").write_text(
        '{"format": "locus-serve-pool", "version": 1, "run_weights_sha256": "abc", "next_id": 5, "models": []}'
    )
    with pytest.raises(DataError, match="another run"):
        serve.load(run_dir, pool_dir)
    (pool_dir / "pool.json").write_text("{not json")
    with pytest.raises(DataError, match="not a readable pool file"):
        serve.load(run_dir, pool_dir)


@pytest.mark.parametrize(
    "method,path,kw,status,message",
    [
        (
            "post",
            "/v1/route",
            {"content": b"{not json", "headers": {"content-type": "application/json"}},
            400,
            "malformed JSON",
        ),
        ("post", "/v1/route", {}, 400, "JSON body is required"),
        ("post", "/v1/route", {"content": b'{"queries": ["a"]}'}, 415, "Content-Type: application/json"),
        ("post", "/v1/route", {"json": ["a"]}, 422, "must be a JSON object"),
        ("post", "/v1/route", {"json": {"queries": "one text"}}, 422, "queries"),
        ("post", "/v1/route", {"json": {"queries": [1, 2]}}, 422, r"queries\[0\]"),
        ("post", "/v1/route", {"json": {"queries": []}}, 422, "empty list"),
        ("post", "/v1/route", {"json": {"queries": ["a", " "]}}, 422, r"queries\[1\]: blank"),
        ("post", "/v1/route", {"json": {"queries": ["q"] * (serve.MAX_QUERIES + 1)}}, 413, "the limit is 256"),
        ("post", "/v1/route", {"json": {"queries": ["q"], "top_k": 0}}, 422, "top_k"),
        ("post", "/v1/route", {"json": {"queries": ["q"], "top-k": 2}}, 422, "top-k"),
        ("post", "/v1/route", {"json": {"queries": ["q"], "models": ["nope/model"]}}, 422, "not a model of the pool"),
        ("post", "/v1/route", {"json": {"queries": ["q"], "models": [77]}}, 422, r"models\[0\]"),
        ("post", "/v1/route", {"json": {"queries": ["q"], "models": []}}, 422, "empty list"),
        (
            "post",
            "/v1/route",
            {"json": {"queries": ["q"], "models": [1.5]}},
            422,
            r"^models\[0\]: .*string or .*integer\.$",
        ),
        (
            "post",
            "/v1/pool",
            {"json": {"name": "m", "evaluations": [{"prompt": "p", "score": 1.5}]}},
            422,
            r"\[0, 1\]",
        ),
        (
            "post",
            "/v1/pool",
            {"json": {"name": "m", "evaluations": [{"prompt": "p", "score": -0.1}]}},
            422,
            r"\[0, 1\]",
        ),
        (
            "post",
            "/v1/pool",
            {"json": {"name": "m", "evaluations": [{"prompt": "p", "score": "1"}]}},
            422,
            r"^evaluations\[0\]\.score: Input should be a valid number\.$",
        ),
        (
            "post",
            "/v1/pool",
            {"json": {"name": "m", "evaluations": [{"prompt": "p", "score": 1}] * 3}},
            422,
            "1 distinct prompt",
        ),
        ("post", "/v1/pool", {"json": {"name": "m", "evaluations": []}}, 422, "empty list"),
        ("post", "/v1/pool", {"json": {"name": "a,b", "evaluations": evaluations()}}, 422, "commas"),
        ("post", "/v1/pool", {"json": {"name": "42", "evaluations": evaluations()}}, 422, "model id"),
        ("post", "/v1/pool", {"json": {"evaluations": evaluations()}}, 422, "name"),
        ("delete", "/v1/pool/never-added", {}, 404, "no added model"),
        ("get", "/v1/nothing", {}, 404, "no endpoint"),
        ("get", "/v1/route", {}, 405, "not allowed"),
    ],
)
def test_bad_input_is_one_json_line(service, method, path, kw, status, message):
    r = getattr(service.client, method)(path, **kw)
    assert r.status_code == status, r.text
    body = r.json()
    assert list(body) == ["error"] and sorted(body["error"]) == ["code", "message", "param", "type"]  # OpenAI's shape
    text = body["error"]["message"]
    assert "\n" not in text and "Traceback" not in text
    assert pytest.importorskip("re").search(message, text), text
    assert body["error"]["type"].endswith("_error")


def test_body_size_limit(service):
    service.app.state.settings.max_body_bytes = 1000
    r = service.client.post("/v1/route", json={"queries": ["x" * 2000]})
    assert r.status_code == 413 and "1000 bytes" in r.json()["error"]["message"]

    def chunks():  # no Content-Length: counted as it is read
        yield b'{"queries": ["'
        for _ in range(20):
            yield b"x" * 100
        yield b'"]}'

    r = service.client.post("/v1/route", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "limit of 1000 bytes" in r.json()["error"]["message"]
    small = service.client.post("/v1/route", content=iter([b'{"queries": ', b'["ok"]}']))
    assert small.status_code == 415  # read whole (no content type): under the limit, then judged as usual


def test_internal_error_has_no_traceback(service, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(service.pool.run.method, "predict_logits", boom)
    r = service.client.post("/v1/route", json={"queries": ["q"]})
    assert r.status_code == 500 and r.json() == {
        "error": {
            "message": "internal error; the server's log has the details.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
    # the same connection serves the next request (keep-alive survives a 500)
    assert 'locus_serve_errors_total{endpoint="/v1/route",status="500"} 1.0' in service.client.get("/metrics").text


def test_token_guards_admin_endpoints(run_dir, fake_encoder, tmp_path):  # noqa: F811
    svc = Service(run_dir, tmp_path / "pool", token=TOKEN)
    c = svc.client
    try:
        body = {"name": "tok/model", "evaluations": evaluations()}
        assert c.post("/v1/route", json={"queries": ["q"]}).status_code == 200  # routing needs no token
        r = c.post("/v1/pool", json=body)
        assert r.status_code == 401 and "Bearer" in r.json()["error"]["message"]
        assert r.headers["www-authenticate"] == "Bearer"
        assert c.post("/v1/pool", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.post("/v1/pool", json=body, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 201
        assert c.delete("/v1/pool/tok/model").status_code == 401
        assert c.delete("/v1/pool/tok/model", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    finally:
        svc.stop()


def test_command_refuses_open_non_loopback_bind(run_dir, monkeypatch, capsys):  # noqa: F811
    assert serve.is_loopback("127.0.0.1") and serve.is_loopback("::1") and serve.is_loopback("localhost")
    assert not serve.is_loopback("0.0.0.0") and not serve.is_loopback("example.org")
    assert main(["serve", "--run", str(run_dir), "--host", "0.0.0.0"]) == 2
    assert "--token-env" in capsys.readouterr().err
    monkeypatch.delenv("LOCUS_TEST_TOKEN", raising=False)
    assert main(["serve", "--run", str(run_dir), "--host", "0.0.0.0", "--token-env", "LOCUS_TEST_TOKEN"]) == 2
    assert "LOCUS_TEST_TOKEN is unset" in capsys.readouterr().err
    assert main(["serve", "--run", str(run_dir), "--port", "70000"]) == 2
    assert main(["serve", "--run", str(run_dir.parent / "missing")]) == 2


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_locus_serve_command_in_a_subprocess(run_dir, tmp_path, stop):  # noqa: F811
    """The real command: `python -m locus serve` answers over HTTP and stops cleanly (exit 0) on SIGINT / SIGTERM."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "LOCUS_SERVE_TEST_TOKEN": TOKEN}
    cmd = [sys.executable, "-m", "locus", "serve", "--run", str(run_dir), "--port", str(port)]
    cmd += ["--pool-dir", str(tmp_path / "pool"), "--token-env", "LOCUS_SERVE_TEST_TOKEN"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "locus serve did not answer within 60 s"
                time.sleep(0.2)
        assert health["models"] == 5 and health["added"] == 0
        r = httpx.delete(f"http://127.0.0.1:{port}/v1/pool/x", timeout=5)
        assert r.status_code == 401
    finally:
        proc.send_signal(getattr(signal, stop))
        out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, out
    assert f"on http://127.0.0.1:{port}" in out and "token required" in out and "locus serve: stopped" in out


def test_metrics(service):
    c = service.client
    assert c.post("/v1/route", json={"queries": ["m1", "m2", "m3"]}).status_code == 200
    assert c.post("/v1/route", json={"queries": []}).status_code == 422
    assert c.delete("/v1/pool/some/name").status_code == 404
    assert c.get("/nowhere").status_code == 404
    r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples = {}
    for line in r.text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    assert samples['locus_serve_requests_total{endpoint="/v1/route",method="POST",status="200"}'] == 1
    assert samples['locus_serve_errors_total{endpoint="/v1/route",status="422"}'] == 1
    assert samples['locus_serve_errors_total{endpoint="/v1/pool/{name:path}",status="404"}'] == 1
    assert samples['locus_serve_errors_total{endpoint="unmatched",status="404"}'] == 1
    assert samples["locus_serve_queries_total"] == 3
    routed = {k: v for k, v in samples.items() if k.startswith("locus_serve_routed_total")}
    assert sum(routed.values()) == 3 and all('model="org/model-' in k for k in routed)
    assert samples['locus_serve_models{added="false"}'] == 5 and samples['locus_serve_models{added="true"}'] == 0


def test_concurrent_routing_while_models_are_added(service):
    """Requests from several threads at once: every answer is whole (200, a full ranking), none is lost."""
    from concurrent.futures import ThreadPoolExecutor

    base = str(service.client.base_url)

    def route(i):
        with httpx.Client(base_url=base, timeout=60) as c:
            r = c.post("/v1/route", json={"queries": [f"concurrent {i}", f"other {i}"], "top_k": 50})
            return r.status_code, [len(res["ranking"]) for res in r.json()["results"]]

    def add(i):
        with httpx.Client(base_url=base, timeout=60) as c:
            return c.post("/v1/pool", json={"name": f"par/m{i}", "evaluations": evaluations(6, i)}).status_code

    with ThreadPoolExecutor(6) as ex:
        routes = [ex.submit(route, i) for i in range(12)]
        adds = [ex.submit(add, i) for i in range(4)]
        results = [f.result() for f in routes]
        assert [f.result() for f in adds] == [201] * 4
    assert all(code == 200 and n[0] == n[1] and 5 <= n[0] <= 9 for code, n in results)
    models = service.client.get("/v1/pool").json()["models"]
    assert sorted(m["id"] for m in models) == list(range(9))  # ids handed out once each


def test_a_calibrated_run_serves_calibrated_probabilities(run_dir, fake_encoder, tmp_path):  # noqa: F811
    """With RUN/calibration.json the service ranks and reports P(correct) from the map, as `locus route
    --calibrated`; without it, the sigmoid of the logit (the test above)."""
    import shutil

    from locus import calibration, run_artifacts

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    cal = calibration.Calibration("temperature", temperature=3.0, bias=-0.5)
    calibration.save(cal, run / run_artifacts.calibration_file, run_artifacts.run_identity(run))
    svc = Service(run)
    try:
        assert svc.client.get("/healthz").json()["calibration"] == "temperature"
        queries = ["first query", "second query"]
        body = svc.client.post("/v1/route", json={"queries": queries, "top_k": 5}).json()
        want = expected(run, queries, top_k=5, calibrated=True)
        same_routing(ranking_of(body), want)
        raw = expected(run, queries, top_k=5)
        assert not np.allclose(
            [m["p_correct"] for m in ranking_of(body)[0]["ranking"]], [m["p_correct"] for m in raw[0]["ranking"]]
        )
    finally:
        svc.stop()


def test_encoder_precision_is_the_services_and_said_in_healthz(run_dir):  # noqa: F811
    """--encoder-precision bfloat16 reaches the pool's encoder calls and /healthz; a bad value is refused."""
    svc = Service(run_dir, encoder_precision="bfloat16")
    try:
        assert svc.client.get("/healthz").json()["encoder_precision"] == "bfloat16"
        assert svc.pool.encoder_precision == "bfloat16"
    finally:
        svc.stop()
    assert main(["serve", "--run", str(run_dir), "--encoder-precision", "float16"]) == 2
    # int8 with --compile runs slower than int8 alone: refused before anything is served
    assert main(["serve", "--run", str(run_dir), "--encoder-precision", "int8", "--compile"]) == 2
    assert serve.load(run_dir, encoder_precision="auto").encoder_precision in ("float32", "bfloat16", "int8")


def test_a_failed_encoder_compile_is_one_line_and_exit_2(run_dir, monkeypatch, capsys):  # noqa: F811
    """--compile compiles before the port is bound: when torch.compile fails (no C++ compiler, say) the command
    exits 2 with the first line of why and the fix, and serves nothing; /healthz says whether it compiled."""
    from locus import encoders

    svc = Service(run_dir, compile_encoder=True)
    try:
        assert svc.client.get("/healthz").json()["encoder_compiled"] is True
    finally:
        svc.stop()
    minilm = encoders.load_encoder("all-MiniLM-L6-v2")
    monkeypatch.setattr(encoders, "load_encoder", lambda name: minilm)

    def broken_compile(model):
        def fail(*args, **kwargs):
            raise RuntimeError("C++ compile error: cannot find g++\n(a long inductor trace)")

        model[0].auto_model.forward = fail
        return model

    monkeypatch.setattr(encoders, "compile_encoder", broken_compile)
    assert main(["serve", "--run", str(run_dir), "--port", "0", "--compile"]) == 2
    err = capsys.readouterr().err
    assert "--compile: torch.compile of the encoder failed (RuntimeError: C++ compile error: cannot find g++)" in err
    assert "apt install g++" in err and "Traceback" not in err and "inductor trace" not in err
