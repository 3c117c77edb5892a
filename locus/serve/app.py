"""The `locus serve` application: its endpoints, over a pool, behind the guards of ``security``.

``GET /healthz``, ``GET /metrics`` (Prometheus); ``POST /v1/route`` ranks models per query; ``GET /v1/models`` and
``GET /v1/models/{id}`` list what chat completions accept, in OpenAI's shape; ``POST /v1/chat/completions`` routes
model ``locus-auto`` (with session affinity) and forwards to the chosen model's backend; the pool's admin:
``GET /v1/pool``, ``POST /v1/pool`` (add a model from its scored prompts), ``DELETE /v1/pool/{name}``.
"""

import hmac
import json
import logging
import time
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from locus.errors import LocusError
from locus.serve.affinity import SESSION_HEADER, Sessions, session_key
from locus.serve.batching import Batcher
from locus.serve.errors import ServiceError, error_response, validation_message
from locus.serve.metrics import CountRequests, Metrics
from locus.serve.proxy import Proxy, last_user_text
from locus.serve.requests import (
    AddModelRequest,
    RouteRequest,
    check_evaluations,
    check_lengths,
    check_name,
    check_queries,
)
from locus.serve.security import BodyGuard, HostGuard, OriginGuard, served_hosts
from locus.serve.settings import MAX_SESSIONS, Settings

log = logging.getLogger("locus.serve")


class InternalErrors:
    """ASGI middleware: an unexpected exception is logged with its traceback and answered with a one-line 500
    (not re-raised, so the connection stays open); once the answer has started it can only be re-raised."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("locus serve: %s %s failed", scope["method"], scope["path"])
            if started:
                raise
            await error_response(500, "internal error; the server's log has the details.")(scope, receive, send)


def run_label(directory) -> str:
    """A run's name for clients: its path below ``runs/`` (``synthetic/.../s0``), never the absolute path."""
    parts = Path(directory).parts
    if "runs" in parts:
        return "/".join(parts[len(parts) - parts[::-1].index("runs") :])
    return Path(directory).name


def create_app(pool, token: str | None = None, settings: Settings | None = None) -> FastAPI:
    """The FastAPI application serving `pool` (`token`, when given, is `settings.token`)."""
    settings = settings or Settings()
    if token is not None:
        settings.token = token
    app = FastAPI(title="locus serve", docs_url=None, redoc_url=None, openapi_url=None)
    metrics = app.state.metrics = Metrics(pool)
    batcher = app.state.batcher = Batcher(
        pool, settings.batch_queries, settings.batch_wait_ms / 1000, metrics.batch.observe, settings.batch_workers
    )
    proxy = app.state.proxy = Proxy(settings.backends, settings.backend_timeout, metrics)
    sessions = app.state.sessions = Sessions(settings.affinity_seconds, MAX_SESSIONS)
    app.state.settings = settings
    started = int(time.time())

    # plain ASGI middlewares (BaseHTTPMiddleware's task group and streams per request cost more than routing);
    # each add_middleware wraps the ones before it: the last added runs first
    app.add_middleware(InternalErrors)
    app.add_middleware(BodyGuard, settings=settings)
    app.add_middleware(OriginGuard, origins=settings.allowed_origins)
    if settings.allowed_origins:  # CORS only for origins the operator names
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.allowed_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", SESSION_HEADER],
            expose_headers=["x-locus-model", "x-locus-session"],
        )
    app.add_middleware(HostGuard, hosts=served_hosts(settings.bind_host, settings.allowed_hosts))
    app.add_middleware(CountRequests, routes=app.router, metrics=metrics)  # the outermost: counts every refusal

    @app.exception_handler(ServiceError)
    async def service_error(request, exc: ServiceError):
        return error_response(exc.status, exc.message, exc.param, exc.code)

    @app.exception_handler(LocusError)
    async def locus_error(request, exc: LocusError):
        return error_response(422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request, exc: RequestValidationError):
        return error_response(*validation_message(exc, request.headers.get("content-type", "")))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, exc: StarletteHTTPException):
        if exc.status_code == 404 and exc.detail == "Not Found":
            return error_response(404, f"no endpoint {request.method} {request.url.path}.")
        if exc.status_code == 405:
            return error_response(405, f"{request.method} is not allowed on {request.url.path}.")
        return error_response(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    def needs_token(request: Request) -> None:
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), settings.token.encode()):
            raise StarletteHTTPException(
                401, "this endpoint needs Authorization: Bearer <token>.", headers={"WWW-Authenticate": "Bearer"}
            )

    def admin(request: Request) -> None:  # adding and deleting models, chat completions (backend keys)
        if settings.token is not None:
            needs_token(request)

    def reader(request: Request) -> None:  # routing and listing: open on loopback; off it, with --open-route
        if settings.public and not settings.open_route:
            needs_token(request)

    @app.get("/healthz")
    def healthz():
        return {
            "status": "ok",
            "run": run_label(pool.run.directory),
            "method": pool.run.method.name,
            "onboarding": pool.onboarding,
            "models": pool.size(),
            "added": len(pool.added),
            "calibration": pool.calibration.kind if pool.calibration is not None else None,
            "encoder_precision": pool.encoder_precision,
            "encoder_compiled": pool.compile_encoder,
        }

    @app.get("/metrics")
    def prometheus_metrics():
        return metrics.render()

    def served() -> list[str]:
        """Pool models with a chat backend, in the backends file's order."""
        present = {m["name"] for m in pool.models()}
        return [n for n in settings.backends if n in present]

    def openai_models() -> list[dict]:
        names = served()
        ids = ([settings.chat_alias] if names else []) + names
        return [{"id": n, "object": "model", "created": started, "owned_by": "locus"} for n in ids]

    @app.get("/v1/models", dependencies=[Depends(reader)])
    def list_models():  # OpenAI's list: what chat completions accept
        return {"object": "list", "data": openai_models()}

    @app.get("/v1/models/{model:path}", dependencies=[Depends(reader)])
    def get_model(model: str):
        for m in openai_models():
            if m["id"] == model:
                return m
        raise ServiceError(
            404, f"model {model[:200]!r}: no such model for chat completions.", "model", "model_not_found"
        )

    @app.get("/v1/pool", dependencies=[Depends(reader)])
    def list_pool():
        return {"models": pool.models()}

    async def routed(queries, models, top_k):
        rankings = await batcher.route(queries, models, top_k)
        metrics.queries.inc(len(rankings))
        for r in rankings:
            metrics.routed.labels(r.models[0][1]).inc()
        return rankings

    @app.post("/v1/route", dependencies=[Depends(reader)])
    async def route(body: RouteRequest):
        queries = check_queries(body.queries, settings.max_queries, settings.max_prompt_chars)
        if body.models is not None and not body.models:
            raise ServiceError(422, "models: empty list; name one or more models, or leave models out for all.")
        rankings = await routed(queries, body.models, body.top_k)
        results = [
            {"query": r.query, "chosen": _ranked(r.models[0]), "ranking": [_ranked(m) for m in r.models]}
            for r in rankings
        ]
        return JSONResponse({"results": results})  # plain JSON types already: no jsonable_encoder walk

    @app.post("/v1/pool", status_code=201, dependencies=[Depends(admin)])
    def add_model(body: AddModelRequest):
        name = check_name(body.name)
        prompts, scores = check_evaluations(body.evaluations, settings.max_prompt_chars)
        return pool.add(name, prompts, scores, body.replace)

    @app.delete("/v1/pool/{name:path}", dependencies=[Depends(admin)])
    def delete_model(name: str):
        return pool.delete(name)

    @app.post("/v1/chat/completions", dependencies=[Depends(admin)])
    async def chat_completions(request: Request):
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            raise ServiceError(400, f"malformed JSON: {exc}.") from None
        if not isinstance(body, dict):
            raise ServiceError(422, 'the body must be a JSON object {"model": ..., "messages": [...]}.')
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ServiceError(
                422, f"model: give {settings.chat_alias!r} (routed) or a model of the pool with a backend."
            )
        names = served()
        if model == settings.chat_alias:
            text = last_user_text(body.get("messages"))
            check_lengths([text], "messages", settings.max_prompt_chars, " (the last user message)")
            if not names:
                raise ServiceError(503, "no model of the pool has a backend; start locus serve with --backends FILE.")
            key = session_key(request.headers, body)
            name = sessions.get(key, names)
            if name is not None:
                locus = {"model": name, "p_correct": None, "session": "kept"}
            else:
                (ranking,) = await routed([text], names, 1)
                _, name, p = ranking.models[0]
                locus = {"model": name, "p_correct": p}
                if key is not None and sessions.enabled:
                    sessions.put(key, name)
                    locus["session"] = "routed"
            if "session" in locus:
                metrics.sessions.labels(locus["session"]).inc()
        elif model in names:
            last_user_text(body.get("messages"))  # the same checks as a routed request
            name, locus = model, {"model": model, "p_correct": None}
        else:
            raise ServiceError(
                404,
                f"model {model[:200]!r}: neither {settings.chat_alias!r} (routed) nor a model with a backend "
                f"({len(settings.backends)} configured: --backends; GET /v1/models lists them).",
                "model",
                "model_not_found",
            )
        return await proxy.forward(settings.backends[name], body, locus)

    return app


def _ranked(model) -> dict:
    mid, name, p = model
    return {"id": mid, "name": name, "p_correct": p}


def make_server(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info"):
    """A uvicorn server for `app` (``.run()`` serves until interrupted, ``.run(sockets=[s])`` on a bound
    socket; tests run it in a thread)."""
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="off"))
