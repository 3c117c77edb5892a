"""`locus serve` in front of clients that may be hostile, over real HTTP on loopback: one request can fail only
itself, hostile bodies are refused before any parsing, Host and Origin are checked, a public bind needs the token
for everything that changes state or spends money, a hot-add never stalls routing, and start-up errors are one
line and exit 2 before anything says "serving"."""

import asyncio
import json
import logging
import socket
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from test_embed_route import fake_encoder, run_dir  # noqa: E402,F401  (fixtures: the tiny run, the fake encoder)
from test_serve import TOKEN, Service, evaluations, service  # noqa: E402,F401
from test_serve_proxy import backend, chat_service  # noqa: E402,F401

from locus import checkpoint, serve  # noqa: E402
from locus.cli import main  # noqa: E402

CHAT = {"model": "locus-auto", "messages": [{"role": "user", "content": "What is 2+2?"}]}


def message(r) -> str:
    body = r.json()
    assert list(body) == ["error"] and sorted(body["error"]) == ["code", "message", "param", "type"], body
    return body["error"]["message"]


def fire(base: str, requests: list[tuple[str, bytes | dict]]):
    """All `requests` (path, JSON body or raw bytes) at once, each on its own connection."""

    async def go():
        async with httpx.AsyncClient(base_url=base, timeout=60) as c:
            return await asyncio.gather(
                *(
                    c.post(path, content=body, headers={"content-type": "application/json"})
                    if isinstance(body, bytes)
                    else c.post(path, json=body)
                    for path, body in requests
                )
            )

    return asyncio.run(go())


# --------------------------------------------------------------------------------------------------
# 1. isolation: a request can fail only itself
# --------------------------------------------------------------------------------------------------
def test_a_poison_query_fails_only_its_own_request(run_dir, fake_encoder, tmp_path, monkeypatch):  # noqa: F811
    """A text the encoder cannot take, batched with 31 valid requests: the batch is retried request by request,
    so the 31 succeed, with the answers they get alone, and only the poison fails (500, no details)."""
    inner = checkpoint.encode_queries

    def picky(encoder, texts, batch_size=64):
        if any("POISON" in t for t in texts):
            raise RuntimeError("the tokenizer cannot take this text")
        return inner(encoder, texts, batch_size)

    monkeypatch.setattr(checkpoint, "encode_queries", picky)
    settings = serve.Settings(batch_wait_ms=300, batch_queries=1000)  # a long wait: they all share one batch
    svc = Service(run_dir, tmp_path / "pool", settings=settings)
    try:
        valid = [{"queries": [f"valid query {i}"], "top_k": 2} for i in range(31)]
        requests = [("/v1/route", r) for r in valid[:15]] + [("/v1/route", {"queries": ["a POISON text"]})]
        requests += [("/v1/route", r) for r in valid[15:]]
        answers = fire(str(svc.client.base_url), requests)
        assert max(svc.app.state.batcher.sizes) > 1  # they were batched with the poison
        poison = answers.pop(15)
        assert poison.status_code == 500 and "secret" not in poison.text
        ok = [a for a in answers if a.status_code == 200]
        print(f"valid requests answered beside the poison: {len(ok)} of {len(valid)}")
        assert len(ok) == len(valid)
        for req, answer in zip(valid, answers):
            alone = svc.pool.route(req["queries"], None, req["top_k"])
            got = [[(m["id"], m["name"], m["p_correct"]) for m in res["ranking"]] for res in answer.json()["results"]]
            assert got == [r.models for r in alone]
    finally:
        svc.stop()


def test_invalid_unicode_is_refused_before_it_joins_a_batch(service):  # noqa: F811
    c = service.client
    raw = b'{"queries": ["fine", "half a pair \\ud800 here"]}'  # valid JSON, not Unicode text
    r = c.post("/v1/route", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert message(r).startswith("queries[1]: an unpaired surrogate (\\ud800) at character 12")
    assert r.json()["error"]["param"] == "queries[1]"
    raw = b'{"name": "x/y", "evaluations": [{"prompt": "\\udfff", "score": 1}]}'
    r = c.post("/v1/pool", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and message(r).startswith("evaluations[0].prompt: an unpaired surrogate")
    assert c.post("/v1/route", json={"queries": ["still fine"]}).status_code == 200


# --------------------------------------------------------------------------------------------------
# 2. hostile bodies
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/route", "/v1/pool", "/v1/chat/completions"])
def test_deep_json_and_invalid_utf8_are_400_without_a_traceback(service, path, caplog):  # noqa: F811
    c = service.client
    caplog.set_level(logging.WARNING, logger="locus.serve")
    deep = b'{"queries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    r = c.post(path, content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 400 and message(r) == "JSON nested 100001 levels deep; the limit is 32."
    ok_depth = b'{"queries": ["' + b"[" * 1000 + b'"]}'  # brackets inside a string do not count
    assert serve.security.body_problem(ok_depth, 32) is None
    r = c.post(path, content=b'{"queries": ["caf\xe9"]}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and message(r).startswith("the body is not valid UTF-8 (byte 17")
    refusals = [rec for rec in caplog.records if rec.name == "locus.serve"]
    assert len(refusals) == 2 and all(rec.levelno == logging.WARNING and not rec.exc_info for rec in refusals)
    assert "Traceback" not in caplog.text
    assert c.get("/healthz").status_code == 200


# --------------------------------------------------------------------------------------------------
# 3. Host and Origin
# --------------------------------------------------------------------------------------------------
def test_host_allow_list_stops_dns_rebinding(run_dir, fake_encoder, tmp_path):  # noqa: F811
    svc = Service(run_dir, tmp_path / "pool", settings=serve.Settings(allowed_hosts=("router.internal",)))
    c = svc.client
    port = c.base_url.port
    try:
        add = {"name": "evil/model", "evaluations": evaluations()}
        # a page at http://rebound.example:PORT whose name now resolves to 127.0.0.1
        for method, path, kw in [
            ("post", "/v1/pool", {"json": add}),
            ("get", "/v1/pool", {}),
            ("delete", "/v1/pool/x", {}),
        ]:
            r = getattr(c, method)(path, headers={"host": f"rebound.example:{port}"}, **kw)
            assert r.status_code == 421, r.text
            assert "Host 'rebound.example' is not served here" in message(r) and "--allow-host" in message(r)
        assert "evil/model" not in svc.pool.added
        for host in ["localhost", f"localhost:{port}", "127.0.0.1", f"[::1]:{port}", "router.internal:80", "LOCALHOST"]:
            assert c.get("/healthz", headers={"host": host}).status_code == 200, host
    finally:
        svc.stop()


def test_cross_origin_requests_are_refused_unless_allowed(run_dir, fake_encoder, tmp_path):  # noqa: F811
    allowed = "https://app.example.org"
    svc = Service(run_dir, tmp_path / "pool", settings=serve.Settings(allowed_origins=(allowed,)))
    c = svc.client
    try:
        add = {"name": "page/model", "evaluations": evaluations()}
        r = c.post("/v1/pool", json=add, headers={"origin": "https://evil.example"})
        assert r.status_code == 403 and "cross-origin request from 'https://evil.example' refused" in message(r)
        r = c.post(
            "/v1/chat/completions", content=json.dumps(CHAT), headers={"origin": "null", "content-type": "text/plain"}
        )
        assert r.status_code == 403  # a form post from a sandboxed page: no money spent
        assert c.delete("/v1/pool/x", headers={"origin": "https://evil.example"}).status_code == 403
        assert "page/model" not in svc.pool.added
        # the allowed origin: CORS headers, preflight included
        r = c.post("/v1/route", json={"queries": ["q"]}, headers={"origin": allowed})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == allowed
        pre = c.options(
            "/v1/pool",
            headers={
                "origin": allowed,
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type",
            },
        )
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == allowed
        assert c.post("/v1/pool", json=add, headers={"origin": allowed}).status_code == 201
    finally:
        svc.stop()


def test_cors_is_off_by_default(service):  # noqa: F811
    r = service.client.get("/healthz", headers={"origin": "https://app.example.org"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    pre = service.client.options(
        "/v1/route", headers={"origin": "https://app.example.org", "access-control-request-method": "POST"}
    )
    assert "access-control-allow-origin" not in pre.headers


# --------------------------------------------------------------------------------------------------
# 4. public bind: the token for everything that changes state or spends money
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("open_route", [False, True])
def test_public_bind_needs_the_token(run_dir, fake_encoder, backend, tmp_path, open_route):  # noqa: F811
    spec = {"org/model-0": {"base_url": f"{backend.url}/a/v1", "model": "m"}}
    svc = chat_service(run_dir, backend, tmp_path, spec)
    svc.stop()
    settings = svc.app.state.settings
    settings.token, settings.public, settings.open_route = TOKEN, True, open_route
    svc = Service(run_dir, tmp_path / "pool", settings=settings)
    c, auth = svc.client, {"Authorization": f"Bearer {TOKEN}"}
    try:
        n = len(backend.received)
        r = c.post("/v1/chat/completions", json=CHAT)
        assert r.status_code == 401 and "Bearer" in message(r) and len(backend.received) == n  # nothing spent
        assert c.post("/v1/chat/completions", json=CHAT, headers={"Authorization": "Bearer nope"}).status_code == 401
        assert c.post("/v1/chat/completions", json=CHAT, headers=auth).status_code == 200
        assert c.post("/v1/pool", json={"name": "a/b", "evaluations": evaluations()}).status_code == 401
        reads = [c.post("/v1/route", json={"queries": ["q"]}), c.get("/v1/models"), c.get("/v1/pool")]
        assert [r.status_code for r in reads] == ([200] * 3 if open_route else [401] * 3)
        assert c.post("/v1/route", json={"queries": ["q"]}, headers=auth).status_code == 200
        assert c.get("/healthz").status_code == 200
    finally:
        svc.stop()


def test_backend_errors_show_no_address_or_credentials(run_dir, fake_encoder, backend, tmp_path, caplog):  # noqa: F811
    from test_serve_proxy import closed_port

    url = f"http://admin:hunter2@127.0.0.1:{closed_port()}/v1"
    svc = chat_service(run_dir, backend, tmp_path, {"org/model-0": {"base_url": url, "model": "m"}})
    caplog.set_level(logging.WARNING, logger="locus.serve")
    try:
        r = svc.client.post("/v1/chat/completions", json=CHAT)
        assert r.status_code == 502
        text = message(r)
        assert "org/model-0" in text and "unreachable" in text
        assert all(s not in r.text for s in ("hunter2", "admin", "127.0.0.1", "http://"))
        assert "127.0.0.1" in caplog.text and "hunter2" not in caplog.text  # the log has the address, no password
        health = svc.client.get("/healthz").json()
        assert not health["run"].startswith("/") and str(tmp_path) not in json.dumps(health)
    finally:
        svc.stop()


# --------------------------------------------------------------------------------------------------
# 5. a hot-add never stalls routing
# --------------------------------------------------------------------------------------------------
def test_routing_goes_on_during_a_slow_add(run_dir, fake_encoder, tmp_path, monkeypatch):  # noqa: F811
    """An add whose encoder takes 0.1 s a text (40 texts: 4 s): routing requests during it wait for at most one of
    the add's small encoder chunks, never for the whole add, and the model is swapped in once it is done."""
    inner = checkpoint.encode_queries
    chunks = []

    def slow_for_adds(encoder, texts, batch_size=64):
        if any(t.startswith("slow add") for t in texts):
            chunks.append(len(texts))
            time.sleep(0.1 * len(texts))
        return inner(encoder, texts, batch_size)

    monkeypatch.setattr(checkpoint, "encode_queries", slow_for_adds)
    svc = Service(run_dir, tmp_path / "pool")
    base = str(svc.client.base_url)
    result = {}

    def add():
        ev = [{"prompt": f"slow add {i}", "score": float(i % 2)} for i in range(40)]
        with httpx.Client(base_url=base, timeout=60) as c:
            result["add"] = c.post("/v1/pool", json={"name": "slow/model", "evaluations": ev})

    try:
        thread = threading.Thread(target=add)
        t0 = time.monotonic()
        thread.start()
        time.sleep(0.3)
        took = []
        while thread.is_alive() and time.monotonic() - t0 < 3.5:
            s = time.monotonic()
            assert svc.client.post("/v1/route", json={"queries": ["routed meanwhile"]}).status_code == 200
            took.append(time.monotonic() - s)
        thread.join(30)
        assert result["add"].status_code == 201 and sum(chunks) == 40
        chunk_s = 0.1 * max(chunks)
        # one chunk (0.4 s) plus a loaded machine's slack, never the add's 4 s
        assert len(took) >= 5 and max(took) < chunk_s + 1.0, (took, chunks)
        body = svc.client.post("/v1/route", json={"queries": ["q"], "top_k": 6}).json()
        assert "slow/model" in [m["name"] for m in body["results"][0]["ranking"]]  # swapped in once done
    finally:
        svc.stop()


# --------------------------------------------------------------------------------------------------
# 6. start-up errors: one line, exit 2, before "serving"
# --------------------------------------------------------------------------------------------------
def test_startup_errors_exit_2_before_serving(run_dir, tmp_path, capsys, monkeypatch):  # noqa: F811
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert main(["serve", "--run", str(run_dir), "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert "serving" not in out and f"--port {port}: already in use on 127.0.0.1" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for f in run_dir.iterdir():
        (damaged / f.name).write_bytes(f.read_bytes())
    (damaged / "config.json").write_text("{not json")
    assert main(["serve", "--run", str(damaged), "--port", "0"]) == 2
    out, err = capsys.readouterr()
    assert "serving" not in out and "config.json" in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "backends.yaml"
    bad.write_text("org/model-0: [unclosed")
    assert main(["serve", "--run", str(run_dir), "--port", "0", "--backends", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert "serving" not in out and "not valid YAML" in err
    monkeypatch.setenv("SERVE_TOKEN", TOKEN)
    assert main(["serve", "--run", str(run_dir), "--host", "0.0.0.0", "--token-env", "SERVE_TOKEN"]) == 2
    assert "--allow-host" in capsys.readouterr().err
    assert main(["serve", "--run", str(run_dir), "--host", "0.0.0.0"]) == 2
    assert "chat completions" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# 8. OpenAI clients work unchanged: the official SDK as the client
# --------------------------------------------------------------------------------------------------
def test_the_openai_sdk_lists_chats_streams_and_reads_errors(run_dir, fake_encoder, backend, tmp_path):  # noqa: F811
    openai = pytest.importorskip("openai")
    spec = {
        "org/model-0": {"base_url": f"{backend.url}/a/v1", "model": "backend-zero"},
        "org/model-3": {"base_url": f"{backend.url}/b/v1", "model": "backend-three"},
    }
    svc = chat_service(run_dir, backend, tmp_path, spec)
    client = openai.OpenAI(base_url=f"{svc.client.base_url}/v1", api_key="unused-on-loopback", max_retries=0)
    try:
        models = client.models.list()
        assert [m.id for m in models.data] == ["locus-auto", "org/model-0", "org/model-3"]
        assert all(m.object == "model" and m.owned_by == "locus" for m in models.data)
        assert client.models.retrieve("org/model-3").id == "org/model-3"

        messages = [{"role": "user", "content": "What is 2+2?"}]
        raw = client.chat.completions.with_raw_response.create(model="locus-auto", messages=messages)
        chosen = raw.headers["x-locus-model"]
        assert chosen in spec
        completion = raw.parse()
        assert completion.choices[0].message.content == f"hello from {backend.received[-1]['mode']}"

        stream = client.chat.completions.create(model="org/model-0", messages=messages, stream=True)
        assert [chunk.choices[0].delta.content for chunk in stream] == [f"tok{i}" for i in range(5)]

        with pytest.raises(openai.NotFoundError) as err:
            client.chat.completions.create(model="gpt-unknown", messages=messages)
        assert err.value.status_code == 404 and err.value.code == "model_not_found" and err.value.param == "model"
        assert "'gpt-unknown': neither 'locus-auto'" in err.value.message
        with pytest.raises(openai.NotFoundError) as err:
            client.models.retrieve("org/model-1")  # a pool model without a backend
        assert "no such model" in err.value.message
        with pytest.raises(openai.UnprocessableEntityError) as err:
            client.chat.completions.create(model="locus-auto", messages=[{"role": "system", "content": "x"}])
        assert "no message with role 'user'" in err.value.message and err.value.type == "invalid_request_error"
    finally:
        client.close()
        svc.stop()


def test_the_openai_sdk_sends_the_token_as_its_api_key(run_dir, fake_encoder, backend, tmp_path):  # noqa: F811
    openai = pytest.importorskip("openai")
    svc = chat_service(run_dir, backend, tmp_path, {"org/model-0": {"base_url": f"{backend.url}/a/v1", "model": "m"}})
    svc.stop()
    settings = svc.app.state.settings
    settings.token, settings.public = TOKEN, True
    svc = Service(run_dir, tmp_path / "pool", settings=settings)
    base = f"{svc.client.base_url}/v1"
    try:
        with pytest.raises(openai.AuthenticationError) as err:
            openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
        assert "Bearer" in err.value.message
        good = openai.OpenAI(base_url=base, api_key=TOKEN, max_retries=0)
        assert [m.id for m in good.models.list().data] == ["locus-auto", "org/model-0"]
        assert good.chat.completions.create(model="locus-auto", messages=CHAT["messages"]).choices
    finally:
        svc.stop()


# --------------------------------------------------------------------------------------------------
# 9. session affinity
# --------------------------------------------------------------------------------------------------
def test_a_conversation_stays_on_its_first_model(run_dir, backend, tmp_path, monkeypatch):  # noqa: F811
    """Two added models with backends: a conversation's later turns, whose text alone would route to the other
    model, stay on the first turn's model (by header or OpenAI's `user`), until that model is deleted or the key
    expires."""
    import hashlib

    def stable(encoder, texts, batch_size=64):  # the fake encoder, but the same in every process (no hash seed)
        rows = []
        for t in texts:
            v = np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=8)
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32)

    monkeypatch.setattr(checkpoint, "encode_queries", stable)
    pool_dir = tmp_path / "pool"
    first = Service(run_dir, pool_dir)
    for name, seed in [("x/one", 1), ("x/two", 2)]:
        assert (
            first.client.post("/v1/pool", json={"name": name, "evaluations": evaluations(30, seed=seed)}).status_code
            == 201
        )
    first.stop()
    path = tmp_path / "backends.json"
    path.write_text(json.dumps({n: {"base_url": f"{backend.url}/{n[2:]}/v1", "model": n} for n in ("x/one", "x/two")}))
    settings = serve.Settings(backends=serve.read_backends(path, serve.load(run_dir, pool_dir)), affinity_seconds=3.0)
    svc = Service(run_dir, pool_dir, settings=settings)
    c = svc.client

    def routed_alone(text):
        body = {"queries": [text], "models": ["x/one", "x/two"], "top_k": 1}
        return c.post("/v1/route", json=body).json()["results"][0]["chosen"]["name"]

    def turn(text, **kw):
        r = c.post(
            "/v1/chat/completions",
            json={"model": "locus-auto", "messages": [{"role": "user", "content": text}], **kw.pop("body", {})},
            **kw,
        )
        assert r.status_code == 200, r.text
        return r.headers["x-locus-model"], r.json()["locus"]

    try:
        texts = [f"turn text {i}" for i in range(200)]
        by_model = {}
        for t in texts:
            by_model.setdefault(routed_alone(t), []).append(t)
        assert len(by_model) == 2, {m: len(t) for m, t in by_model.items()}
        start = texts[0]
        model = routed_alone(start)
        other = next(t for t in texts if routed_alone(t) != model)
        for key in [{"headers": {"x-locus-session": "conv-1"}}, {"body": {"user": "user-7"}}]:
            got, locus = turn(start, **dict(key))
            assert got == model and locus["session"] == "routed" and locus["p_correct"] is not None
            got, locus = turn(other, **dict(key))
            assert got == model and locus == {"model": model, "p_correct": None, "session": "kept"}
        assert turn(other)[0] != model  # no key: every turn routed
        assert turn(other, headers={"x-locus-session": "conv-2"})[0] != model  # another conversation
        time.sleep(3.3)  # the key expired
        assert turn(other, headers={"x-locus-session": "conv-1"})[0] != model
        # the conversation's model is deleted: it moves on to the one left, and stays there
        turn(start, headers={"x-locus-session": "conv-3"})
        assert c.delete(f"/v1/pool/{model}").status_code == 200
        got, locus = turn(start, headers={"x-locus-session": "conv-3"})
        assert got != model and locus["session"] == "routed"
        assert 'locus_serve_sessions_total{outcome="kept"} 2.0' in c.get("/metrics").text
    finally:
        svc.stop()
