"""`locus serve` over real HTTP on loopback: chat completions forwarded to small OpenAI-compatible backends that
the test starts (recording what they receive), micro-batched routing, hot-add from stored encodings, limits,
concurrent adds and a kill -9 during an add."""

import asyncio
import json
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
httpx = pytest.importorskip("httpx")
fastapi = pytest.importorskip("fastapi")

from test_embed_route import fake_encoder, run_dir  # noqa: E402,F401  (fixtures: the tiny run, the fake encoder)
from test_serve import Service, evaluations  # noqa: E402

from locus import checkpoint, serve  # noqa: E402
from locus.cli import main  # noqa: E402
from locus.errors import ConfigError, DataError  # noqa: E402

SSE_CHUNKS = 5


class Thread:
    """An ASGI app on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, app):
        self.server = serve.make_server(app, "127.0.0.1", 0, log_level="warning")
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the backend did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=30)


def backend_app(received: list):
    """An OpenAI-compatible chat backend; the first path segment picks its behaviour."""
    from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

    app = fastapi.FastAPI()

    @app.post("/{mode}/v1/chat/completions")
    async def chat(mode: str, request: fastapi.Request):
        body = await request.json()
        received.append({"mode": mode, "body": body, "authorization": request.headers.get("authorization")})
        if mode == "slow":
            await asyncio.sleep(3)
        if mode == "garbage":
            return PlainTextResponse("<html>upstream hiccup</html>")
        if mode == "fail":
            return JSONResponse({"error": {"message": "model overloaded"}}, status_code=500)
        if mode == "reject":
            return JSONResponse({"error": {"message": "temperature out of range"}}, status_code=400)
        if body.get("stream"):

            async def events():
                for i in range(SSE_CHUNKS):
                    yield f"data: {json.dumps({'model': body['model'], 'choices': [{'delta': {'content': f'tok{i}'}}]})}\n\n"
                    await asyncio.sleep(0.01)
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")
        reply = {"role": "assistant", "content": f"hello from {mode}"}
        return {"id": "c1", "object": "chat.completion", "model": body["model"], "choices": [{"message": reply}]}

    return app


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def backend():
    received = []
    srv = Thread(backend_app(received))
    srv.received = received
    yield srv
    srv.stop()


def chat_service(run_dir, backend, tmp_path, spec, timeout=30.0):  # noqa: F811
    path = tmp_path / "backends.json"
    path.write_text(json.dumps(spec))
    pool = serve.load(run_dir)
    settings = serve.Settings(backends=serve.read_backends(path, pool, {"KEY_A": "sk-a"}), backend_timeout=timeout)
    return Service(run_dir, tmp_path / "pool", settings=settings)


def test_chat_routes_the_last_user_message_and_forwards(run_dir, fake_encoder, backend, tmp_path):  # noqa: F811
    spec = {
        "org/model-0": {"base_url": f"{backend.url}/a/v1", "model": "backend-zero", "api_key_env": "KEY_A"},
        "org/model-3": {"base_url": f"{backend.url}/b/v1/", "model": "backend-three"},
    }
    svc = chat_service(run_dir, backend, tmp_path, spec)
    c = svc.client
    try:
        messages = [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "an earlier question"},
            {"role": "assistant", "content": "an answer"},
            {"role": "user", "content": [{"type": "text", "text": "route on"}, {"type": "text", "text": "this"}]},
        ]
        body = {"model": "locus-auto", "messages": messages, "temperature": 0.2, "max_tokens": 7}
        r = c.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        # the choice is /v1/route's for the text parts of the last user message, among models with a backend
        (route,) = c.post(
            "/v1/route", json={"queries": ["route on\nthis"], "models": ["org/model-0", "org/model-3"], "top_k": 1}
        ).json()["results"]
        chosen = route["chosen"]["name"]
        assert r.headers["x-locus-model"] == chosen
        assert r.json()["locus"] == {"model": chosen, "p_correct": route["chosen"]["p_correct"]}
        sent = backend.received[-1]
        assert sent["mode"] == {"org/model-0": "a", "org/model-3": "b"}[chosen]
        assert sent["body"] == {
            **body,
            "model": {"org/model-0": "backend-zero", "org/model-3": "backend-three"}[chosen],
        }
        assert sent["authorization"] == ("Bearer sk-a" if chosen == "org/model-0" else None)
        assert r.json()["choices"][0]["message"]["content"] == f"hello from {sent['mode']}"

        # a pool model with a backend by name: forwarded without routing
        r = c.post("/v1/chat/completions", json={**body, "model": "org/model-3"})
        assert r.status_code == 200 and r.headers["x-locus-model"] == "org/model-3"
        assert r.json()["locus"] == {"model": "org/model-3", "p_correct": None}
        assert backend.received[-1]["body"]["model"] == "backend-three"
        assert backend.received[-1]["body"]["messages"] == messages

        # streaming: the backend's SSE events, in order, with the header
        with c.stream("POST", "/v1/chat/completions", json={**body, "model": "org/model-0", "stream": True}) as s:
            assert s.status_code == 200 and s.headers["x-locus-model"] == "org/model-0"
            assert s.headers["content-type"].startswith("text/event-stream")
            text = "".join(s.iter_text())
        events = [e[len("data: ") :] for e in text.split("\n\n") if e]
        assert events[-1] == "[DONE]"
        assert [json.loads(e)["choices"][0]["delta"]["content"] for e in events[:-1]] == [
            f"tok{i}" for i in range(SSE_CHUNKS)
        ]
        assert json.loads(events[0])["model"] == "backend-zero"

        # requests refused before any forwarding
        n = len(backend.received)
        for payload, status, message in [
            ({**body, "model": "gpt-unknown"}, 404, "neither 'locus-auto'"),
            ({**body, "model": "org/model-1"}, 404, "neither"),  # a pool model without a backend
            ({"model": "locus-auto", "messages": [{"role": "system", "content": "x"}]}, 422, "no message with role"),
            ({"model": "locus-auto", "messages": []}, 422, "non-empty list"),
            ({"model": "locus-auto", "messages": [{"role": "user", "content": "x" * 100_001}]}, 413, "100000"),
            ({"messages": messages}, 422, "model:"),
        ]:
            r = c.post("/v1/chat/completions", json=payload)
            assert r.status_code == status and message in r.json()["error"]["message"], r.text
        assert len(backend.received) == n
        r = c.post("/v1/chat/completions", content=b"{oops", headers={"content-type": "application/json"})
        assert r.status_code == 400 and "malformed JSON" in r.json()["error"]["message"]
        metrics = c.get("/metrics").text
        assert f'locus_serve_forwarded_total{{model="{chosen}"}}' in metrics
        assert 'locus_serve_forwarded_total{model="org/model-3"} ' in metrics
    finally:
        svc.stop()


def test_backend_down_slow_garbage_failing(run_dir, fake_encoder, backend, tmp_path):  # noqa: F811
    spec = {
        "org/model-0": {"base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "m"},
        "org/model-1": {"base_url": f"{backend.url}/slow/v1", "model": "m"},
        "org/model-2": {"base_url": f"{backend.url}/garbage/v1", "model": "m"},
        "org/model-3": {"base_url": f"{backend.url}/fail/v1", "model": "m"},
        "org/model-4": {"base_url": f"{backend.url}/reject/v1", "model": "m"},
    }
    svc = chat_service(run_dir, backend, tmp_path, spec, timeout=0.5)
    c = svc.client
    try:
        body = {"messages": [{"role": "user", "content": "hi"}]}
        for model, status, message in [
            ("org/model-0", 502, "unreachable"),
            ("org/model-1", 504, "no answer within 0.5 s"),
            ("org/model-2", 502, "non-JSON (text/plain"),
            ("org/model-3", 502, "answered 500: model overloaded"),
        ]:
            for stream in (False, True):
                t0 = time.monotonic()
                r = c.post("/v1/chat/completions", json={**body, "model": model, "stream": stream})
                assert r.status_code == status, r.text
                err = r.json()["error"]["message"]
                assert list(r.json()) == ["error"] and message in err and model in err and "\n" not in err
                assert "127.0.0.1" not in err and "http" not in err  # never the backend's address
                assert time.monotonic() - t0 < 2.5  # the timeout, not the slow backend's 3 s
        r = c.post("/v1/chat/completions", json={**body, "model": "org/model-4"})  # the request's fault: passed on
        assert r.status_code == 400 and r.json()["error"]["message"] == "temperature out of range"
        assert r.headers["x-locus-model"] == "org/model-4"
        assert c.get("/healthz").status_code == 200  # the service stays up
        errors = {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in c.get("/metrics").text.splitlines()
            if line.startswith("locus_serve_backend_errors_total")
        }
        assert errors['locus_serve_backend_errors_total{kind="unreachable",model="org/model-0"}'] == 2
        assert errors['locus_serve_backend_errors_total{kind="timeout",model="org/model-1"}'] == 2
        assert errors['locus_serve_backend_errors_total{kind="bad_response",model="org/model-2"}'] == 2
        assert errors['locus_serve_backend_errors_total{kind="status",model="org/model-3"}'] == 2
    finally:
        svc.stop()


def test_backends_file_is_checked_at_start(run_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    pool = serve.load(run_dir)
    good = {"org/model-0": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
    yaml_file = tmp_path / "b.yaml"
    yaml_file.write_text("org/model-0:\n  base_url: https://example.org/v1\n  model: zero\n  api_key_env: K\n")
    assert serve.read_backends(yaml_file, pool, {"K": "k1"})["org/model-0"] == serve.Backend(
        "org/model-0", "https://example.org/v1", "zero", "k1"
    )
    for spec, message in [
        ({"org/no-such": good["org/model-0"]}, "'org/no-such' is not a model of the pool"),
        ({"org/model-0": {"base_url": "ftp://x/v1", "model": "m"}}, "not an http(s) URL"),
        ({"org/model-0": {"base_url": "127.0.0.1:8000", "model": "m"}}, "not an http(s) URL"),
        ({"org/model-0": {**good["org/model-0"], "api_key_env": "NOPE_KEY"}}, "NOPE_KEY: the environment variable"),
        ({"org/model-0": {**good["org/model-0"], "apikey": "x"}}, "unknown key(s) ['apikey']"),
        ([], "give a mapping"),
    ]:
        path = tmp_path / "b.json"
        path.write_text(json.dumps(spec))
        with pytest.raises(ConfigError) as err:
            serve.read_backends(path, pool, {})
        assert message in str(err.value) and "\n" not in str(err.value)
    # the command: exit 2, one line, before serving
    monkeypatch.delenv("NOPE_KEY", raising=False)
    assert main(["serve", "--run", str(run_dir), "--backends", str(path)]) == 2
    assert "--backends" in capsys.readouterr().err
    path.write_text("{not json")
    assert main(["serve", "--run", str(run_dir), "--backends", str(path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# micro-batching
# --------------------------------------------------------------------------------------------------
def test_batched_routing_equals_unbatched(run_dir, fake_encoder, tmp_path):  # noqa: F811
    settings = serve.Settings(batch_wait_ms=200, batch_queries=1000)  # a long wait: concurrent requests batch
    svc = Service(run_dir, tmp_path / "pool", settings=settings)
    try:
        assert svc.client.post("/v1/pool", json={"name": "x/added", "evaluations": evaluations()}).status_code == 201
        requests = [
            {"queries": [f"batched query {i}", f"and {i} again"], "top_k": 1 + i % 5}
            | ({"models": ["org/model-1", "x/added", 3]} if i % 3 == 0 else {})
            | ({"models": ["org/model-2", "org/model-4"]} if i % 3 == 1 else {})
            for i in range(12)
        ]
        requests.append({"queries": ["fails alone"], "models": ["org/nope"]})
        base = str(svc.client.base_url)

        async def fire():
            async with httpx.AsyncClient(base_url=base, timeout=60) as c:
                return await asyncio.gather(*(c.post("/v1/route", json=r) for r in requests))

        answers = asyncio.run(fire())
        assert max(svc.app.state.batcher.sizes) > 1  # they were batched
        assert answers[-1].status_code == 422 and "not a model of the pool" in answers[-1].json()["error"]["message"]
        for req, answer in zip(requests, answers[:-1]):
            assert answer.status_code == 200, answer.text
            # unbatched: the same request alone, through the pool directly
            alone = svc.pool.route(req["queries"], req.get("models"), req["top_k"])
            got = [[(m["id"], m["name"], m["p_correct"]) for m in res["ranking"]] for res in answer.json()["results"]]
            assert got == [r.models for r in alone]
    finally:
        svc.stop()


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_encode_that_many_batches_at_once(run_dir, fake_encoder, tmp_path, monkeypatch, workers):  # noqa: F811
    """--workers 2 (the default): while one batch is encoded the next is taken and encoded too (two cores busy
    under load); --workers 1: one encoder pass at a time. Either way every answer is the unbatched one."""
    inner, lock, state = checkpoint.encode_queries, threading.Lock(), {"active": 0, "most": 0}

    def slow(encoder, texts, batch_size=64):
        with lock:
            state["active"] += 1
            state["most"] = max(state["most"], state["active"])
        time.sleep(0.3)
        try:
            return inner(encoder, texts, batch_size)
        finally:
            with lock:
                state["active"] -= 1

    monkeypatch.setattr(checkpoint, "encode_queries", slow)
    svc = Service(run_dir, tmp_path / "pool", settings=serve.Settings(batch_queries=2, batch_workers=workers))
    try:
        requests = [{"queries": [f"query {i}"], "top_k": 2} for i in range(8)]
        base = str(svc.client.base_url)

        async def fire():
            async with httpx.AsyncClient(base_url=base, timeout=60) as c:
                return await asyncio.gather(*(c.post("/v1/route", json=r) for r in requests))

        answers = asyncio.run(fire())
        assert state["most"] == workers
        for req, answer in zip(requests, answers):
            assert answer.status_code == 200, answer.text
            alone = svc.pool.route(req["queries"], None, req["top_k"])
            got = [[(m["id"], m["name"], m["p_correct"]) for m in res["ranking"]] for res in answer.json()["results"]]
            assert got == [r.models for r in alone]
    finally:
        svc.stop()
    assert main(["serve", "--run", str(run_dir), "--workers", "0"]) == 2


# --------------------------------------------------------------------------------------------------
# hot-add from stored encodings
# --------------------------------------------------------------------------------------------------
def test_hot_add_reuses_stored_encodings(run_dir, fake_encoder, tmp_path, monkeypatch):  # noqa: F811
    from locus.data.encodings import read_encodings

    root = run_dir.parent  # the fixture's data set and its encodings (not what the fake encoder gives)
    svc = Service(run_dir, tmp_path / "pool", data=root / "data", encodings=root / "enc.parquet")
    encoded = []
    fake = checkpoint.encode_queries

    def counting(encoder, texts, batch_size=64):
        encoded.extend(texts)
        return fake(encoder, texts, batch_size)

    monkeypatch.setattr(checkpoint, "encode_queries", counting)
    try:
        known = [f"question {i}" for i in (3, 17, 42)]
        new = ["a prompt not in the data set", "another new one"]
        rng = np.random.default_rng(1)
        scores = (rng.random(5) < 0.5).astype(np.float32)
        ev = [{"prompt": p, "score": float(s)} for p, s in zip(known[:2] + new[:1] + known[2:] + new[1:], scores)]
        r = svc.client.post("/v1/pool", json={"name": "x/reuse", "evaluations": ev})
        assert r.status_code == 201 and r.json()["reused_encodings"] == 3
        assert encoded == [new[0], new[1]]  # only the new prompts went through the encoder, in one pass
        enc = read_encodings(root / "enc.parquet")
        stored = enc.take([3, 17, 42])
        fresh = fake("x", new)
        vectors = np.stack([stored[0], stored[1], fresh[0], stored[2], fresh[1]])
        np.testing.assert_array_equal(svc.pool.added["x/reuse"].z, svc.pool.run.method.embed(vectors, scores))
        encoded.clear()
        ev = [{"prompt": f"question {i}", "score": 1.0} for i in range(40)]
        r = svc.client.post("/v1/pool", json={"name": "x/all-stored", "evaluations": ev})
        assert r.status_code == 201 and r.json()["reused_encodings"] == 40 and encoded == []
    finally:
        svc.stop()
    # without stored encodings (the tiny run records a data set but no encodings beside it): all encoded
    assert serve.load(run_dir).stored is None
    with pytest.raises(DataError, match="made from another data set"):
        other = tmp_path / "other.parquet"
        from locus.data.encodings import write_encodings

        write_encodings(other, [0], np.ones((1, 8), np.float32), "fake-encoder", True, "0" * 64)
        serve.load(run_dir, data=root / "data", encodings=other)


# --------------------------------------------------------------------------------------------------
# limits and hostile input
# --------------------------------------------------------------------------------------------------
def test_limits(run_dir, fake_encoder, tmp_path):  # noqa: F811
    settings = serve.Settings(max_queries=4, max_prompt_chars=50)
    svc = Service(run_dir, tmp_path / "pool", settings=settings)
    c = svc.client
    try:
        r = c.post("/v1/route", json={"queries": ["q"] * 5})
        assert r.status_code == 413 and "the limit is 4" in r.json()["error"]["message"]
        assert c.post("/v1/route", json={"queries": ["q"] * 4}).status_code == 200
        r = c.post("/v1/route", json={"queries": ["ok", "y" * 51]})
        assert r.status_code == 413 and r.json()["error"]["message"].startswith(
            "queries[1]: 51 characters; the limit is 50"
        )
        ev = evaluations(3) + [{"prompt": "z" * 51, "score": 1}]
        r = c.post("/v1/pool", json={"name": "x/long", "evaluations": ev})
        assert r.status_code == 413 and r.json()["error"]["message"].startswith("evaluations[3].prompt: 51 characters")
    finally:
        svc.stop()


def test_concurrent_adds_of_one_name(run_dir, fake_encoder, tmp_path):  # noqa: F811
    from concurrent.futures import ThreadPoolExecutor

    svc = Service(run_dir, tmp_path / "pool")
    base = str(svc.client.base_url)

    def add(i):
        with httpx.Client(base_url=base, timeout=60) as c:
            return c.post("/v1/pool", json={"name": "same/name", "evaluations": evaluations(6, seed=i)}).status_code

    try:
        with ThreadPoolExecutor(8) as ex:
            codes = sorted(ex.map(add, range(8)))
        assert codes == [201] + [409] * 7
        state = json.loads((tmp_path / "pool" / "pool.json").read_text())
        assert [m["name"] for m in state["models"]] == ["same/name"]
    finally:
        svc.stop()


def test_kill_9_during_an_add_leaves_the_pool_before_or_after(run_dir, tmp_path):  # noqa: F811
    """The real server as a subprocess: an add in flight, SIGKILL after a random delay within about the time an
    add takes, restart: the pool file loads and holds either the models before or those plus the new one."""
    import os
    import signal
    import subprocess
    import sys

    root = run_dir.parent
    pool_dir = tmp_path / "pool"
    rng = np.random.default_rng(0)
    ev = [{"prompt": f"question {i}", "score": float(i % 2)} for i in range(40)]  # stored encodings: no encoder
    expected: set[str] = set()
    landed = []
    for it in range(3):
        port = closed_port()
        cmd = [sys.executable, "-m", "locus", "serve", "--run", str(run_dir), "--port", str(port)]
        cmd += ["--pool-dir", str(pool_dir), "--data", str(root / "data"), "--encodings", str(root / "enc.parquet")]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, "locus serve exited"
                try:
                    models = httpx.get(f"{base}/v1/pool", timeout=5).json()["models"]
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "locus serve did not answer"
                    time.sleep(0.1)
            names = {m["name"] for m in models if m["added"]}
            # the pool after the previous kill: before or after that add, never something else
            assert names in (expected, expected | {f"kill/m{it - 1}"}), names
            landed.append(names != expected)
            t0 = time.monotonic()  # an add that completes: how long one takes here
            r = httpx.post(f"{base}/v1/pool", json={"name": f"ok/m{it}", "evaluations": ev}, timeout=60)
            took = time.monotonic() - t0
            assert r.status_code == 201, r.text
            expected = names | {f"ok/m{it}"}
            body = {"name": f"kill/m{it}", "evaluations": ev}
            add = threading.Thread(target=_quiet_post, args=(f"{base}/v1/pool", body), daemon=True)
            add.start()
            time.sleep(float(rng.uniform(0.2, 1.5)) * took)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        add.join(30)
    names = set(serve.load(run_dir, pool_dir).added)  # loads: a whole pool file
    assert names in (expected, expected | {"kill/m2"}), names
    landed.append(names != expected)
    print("kills after the add was saved:", landed[1:])


def _quiet_post(url, body):
    try:
        httpx.post(url, json=body, timeout=10)
    except httpx.HTTPError:
        pass


def test_default_data_paths_follow_the_project_layout(tmp_path):
    """A run records its data set relative to the project (results/data/NAME); the encodings lie beside it."""
    from types import SimpleNamespace

    directory = tmp_path / "proj" / "results" / "runs" / "syn" / "enc" / "locus" / "n8" / "d4" / "s0"
    (tmp_path / "proj" / "results" / "data" / "syn").mkdir(parents=True)
    run = SimpleNamespace(config={"dataset": "results/data/syn"}, directory=directory, encoder="enc")
    data, enc = serve.default_data_paths(run)
    assert data == tmp_path / "proj" / "results" / "data" / "syn"
    assert enc == tmp_path / "proj" / "results" / "encodings" / "syn" / "enc.parquet"
    assert serve.default_data_paths(SimpleNamespace(config={"dataset": "results/data/gone"}, directory=directory)) == (
        None,
        None,
    )
