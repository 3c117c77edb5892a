"""`locus serve`: routing with one trained run as an HTTP service (FastAPI on uvicorn).

The run is loaded once; its query encoder and model embeddings stay in memory. Endpoints:

- ``GET /healthz``: status, run, number of models;
- ``POST /v1/route`` ``{queries, models?, top_k?}``: per query the ranked models with P(correct) and the chosen
  one (one encoding pass per request; :func:`locus.inference.rank`, as ``locus route``);
- ``GET /v1/models``: the pool (the run's models and the models added live);
- ``POST /v1/models`` ``{name, evaluations: [{prompt, score}], replace?}``: embed a new model from its scored
  prompts in one forward pass (as ``locus embed``; LOCUS runs) and add it to the pool; ``DELETE
  /v1/models/{name}`` removes an added model. Added models are kept in ``POOL_FILE`` in the pool directory
  (atomic writes), tied to the run by its weights' SHA-256, so a restart serves the same pool;
- ``GET /metrics``: Prometheus text format (requests and errors per endpoint and status, latency, queries routed
  and the chosen model's count per model, pool size).

Admin endpoints (adding and deleting models) need ``Authorization: Bearer TOKEN`` whenever a token is set;
a non-loopback bind without a token is refused (:func:`check_bind`). Every error is a JSON body
``{"error": "<one line>"}`` with a 4xx status; an unexpected failure is a 500 with a one-line body and the
traceback in the server's log only.
"""

import hmac
import ipaddress
import logging
import math
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from locus import atomic, inference, weights
from locus.errors import ConfigError, DataError, LocusError

log = logging.getLogger(__name__)

MAX_QUERIES = 10_000  # queries in one /v1/route request (413 above)
MAX_EVALUATIONS = 100_000  # scored prompts in one /v1/models request (413 above)
MAX_BODY_BYTES = 64 * 2**20  # request body (413 above, by its Content-Length)
MAX_NAME = 200  # characters of an added model's name
NEAREST = 5  # nearest pool models reported for an added model
POOL_FILE = "pool.json"
POOL_FORMAT = "locus-serve-pool"
POOL_VERSION = 1


class ServiceError(Exception):
    """A request the service refuses: HTTP status and a one-line message for the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# --------------------------------------------------------------------------------------------------
# the pool: the run's models and the models added live
# --------------------------------------------------------------------------------------------------
@dataclass
class Added:
    id: int
    name: str
    z: np.ndarray  # float32 [dim]
    n_evaluations: int
    mean_score: float

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "z": [float(v) for v in self.z],
            "n_evaluations": self.n_evaluations,
            "mean_score": self.mean_score,
        }


class Pool:
    """A loaded run (:class:`locus.checkpoint.Checkpoint`) with the models added to it, persisted in
    `pool_dir` (None: kept in memory only). Thread-safe: one lock guards the pool and the forward passes."""

    def __init__(self, run, pool_dir: Path | None = None):
        self.run = run
        self.pool_dir = Path(pool_dir) if pool_dir is not None else None
        self.fingerprint = str(run.config.get(weights.CHECKSUM_KEY, ""))
        method = run.method
        self.can_embed = hasattr(method, "embed") and hasattr(method, "logits_for_embeddings")
        self.run_ids, self.run_z = method.model_embeddings() if self.can_embed else (run.model_ids, None)
        self.added: dict[str, Added] = {}
        self.next_id = int(np.max(run.model_ids)) + 1 if len(run.model_ids) else 0
        self.lock = threading.RLock()
        if self.pool_dir is not None:
            self._open_dir()
            self._load()

    @property
    def path(self) -> Path | None:
        return self.pool_dir / POOL_FILE if self.pool_dir is not None else None

    # ---- reading ---------------------------------------------------------------------------------
    def size(self) -> int:
        return len(self.run.model_ids) + len(self.added)

    def models(self) -> list[dict]:
        with self.lock:
            out = [{"id": int(m), "name": self.run.name(m), "added": False} for m in self.run.model_ids]
            for a in sorted(self.added.values(), key=lambda a: a.id):
                out.append(
                    {
                        "id": a.id,
                        "name": a.name,
                        "added": True,
                        "n_evaluations": a.n_evaluations,
                        "mean_score": a.mean_score,
                    }
                )
            return out

    def _view(self):
        """The run's checkpoint with the added models among its ids and names (for resolving names)."""
        ids = np.concatenate([self.run.model_ids, np.asarray([a.id for a in self.added.values()], np.int64)])
        names = {**self.run.names, **{a.id: a.name for a in self.added.values()}}
        return replace(self.run, model_ids=ids, names=names)

    def resolve(self, models) -> np.ndarray:
        """Candidate model ids from ids / names (as ``locus route --models``), in the order given, each once."""
        view = self._view()
        if models is None:
            return view.model_ids
        out: list[int] = []
        for i, item in enumerate(models):
            text = str(item).strip()
            if not text or "," in text:
                raise ServiceError(422, f"models[{i}]: {item!r} is not a model name or id (one per item, no commas).")
            try:
                (hit,) = view.resolve_models(text).tolist()
            except DataError as exc:
                why = "is ambiguous" if "ambiguous" in str(exc) else "is not a model of the pool"
                raise ServiceError(
                    422, f"models[{i}]: {item!r} {why}; give ids or full names (GET /v1/models lists them)."
                ) from None
            if hit not in out:
                out.append(hit)
        return np.asarray(out, dtype=np.int64)

    # ---- routing ---------------------------------------------------------------------------------
    def route(self, queries: list[str], models=None, top_k: int = 3) -> list[inference.Ranking]:
        with self.lock:
            candidates = self.resolve(models)
            view = self._view()
            vectors = inference.encode_checked(self.run, queries, None, "route")
            if self.can_embed and np.isin(candidates, self.run.model_ids).sum() < len(candidates):
                z = self._embeddings(candidates)
                logits = self.run.method.logits_for_embeddings(vectors, z)
            else:  # only the run's models: exactly `locus route`
                logits = self.run.method.predict_logits(vectors, candidates)
            return inference.rank(queries, logits, candidates, view.name, top_k)

    def _embeddings(self, ids) -> np.ndarray:
        by_id = {int(m): self.run_z[i] for i, m in enumerate(self.run_ids)}
        by_id.update({a.id: a.z for a in self.added.values()})
        return np.stack([by_id[int(m)] for m in ids]).astype(np.float32)

    # ---- adding and deleting ---------------------------------------------------------------------
    def add(self, name: str, prompts: list[str], scores: np.ndarray, replace_existing: bool = False) -> dict:
        if not self.can_embed:
            raise ServiceError(
                422, f"the run's method {self.run.method.name!r} cannot embed new models; serve a LOCUS run."
            )
        with self.lock:
            old = self.added.get(name)
            self._check_new_name(name, old, replace_existing)
            z = self.run.method.embed(inference.encode_checked(self.run, prompts, None, "evaluations"), scores)
            model = Added(old.id if old else self.next_id, name, z, len(prompts), float(np.mean(scores)))
            added = {**self.added, name: model}
            next_id = max(self.next_id, model.id + 1)
            persisted = self._save(added, next_id)
            self.added, self.next_id = added, next_id
            ids = np.asarray([m for m in self._view().model_ids if m != model.id], dtype=np.int64)
            near = inference.nearest(z, ids, self._embeddings(ids), NEAREST) if len(ids) else []
            view = self._view()
            return {
                "id": model.id,
                "name": name,
                "added": True,
                "replaced": old is not None,
                "n_evaluations": model.n_evaluations,
                "mean_score": model.mean_score,
                "persisted": persisted,
                "nearest": [{"id": m, "name": view.name(m), "cosine": s} for m, s in near],
            }

    def _check_new_name(self, name: str, old: Added | None, replace_existing: bool) -> None:
        if old is not None and not replace_existing:
            raise ServiceError(
                409, f"model {name!r} was already added (id {old.id}); send replace: true to replace it."
            )
        if old is not None:
            return
        low = name.lower()
        if name in self.run.names.values():
            raise ServiceError(409, f"{name!r} is a model of the run; choose another name.")
        clash = [n for n in [*self.run.names.values(), *self.added] if n.lower() == low]
        if clash:
            raise ServiceError(409, f"{name!r} differs from model {clash[0]!r} only in case; choose another name.")

    def delete(self, name: str) -> dict:
        with self.lock:
            if name not in self.added:
                if name in self.run.names.values():
                    raise ServiceError(409, f"{name!r} is a model of the run; only added models can be deleted.")
                raise ServiceError(404, f"no added model named {name!r} (GET /v1/models lists the pool).")
            model = self.added[name]
            added = {k: v for k, v in self.added.items() if k != name}
            self._save(added, self.next_id)
            self.added = added
            return {"deleted": name, "id": model.id}

    # ---- persistence -----------------------------------------------------------------------------
    def _save(self, added: dict, next_id: int) -> bool:
        if self.path is None:
            return False
        state = {
            "format": POOL_FORMAT,
            "version": POOL_VERSION,
            "run": str(self.run.directory),
            "run_weights_sha256": self.fingerprint,
            "next_id": next_id,
            "models": [a.to_json() for a in sorted(added.values(), key=lambda a: a.id)],
        }
        try:
            atomic.write_json(self.path, state)
        except OSError as exc:
            raise ServiceError(500, f"cannot write {self.path}: {exc.strerror or exc}; the pool is unchanged.") from exc
        return True

    def _open_dir(self) -> None:
        """Create the pool directory; refuse one that is not a writable directory (before serving)."""
        import os

        try:
            self.pool_dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise DataError(f"--pool-dir {self.pool_dir}: not a directory; give a directory for pool.json.") from None
        except OSError as exc:
            raise DataError(f"--pool-dir {self.pool_dir}: cannot be created ({exc.strerror or exc}).") from None
        if not os.access(self.pool_dir, os.W_OK | os.X_OK):
            raise DataError(f"--pool-dir {self.pool_dir}: not writable; give a directory this user can write.")

    def _load(self) -> None:
        import json

        path = self.path
        if not path.exists():
            return
        fix = f"remove {path} (its added models are lost) or give another --pool-dir"
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable pool file ({exc}); {fix}.") from None
        if not isinstance(state, dict) or state.get("format") != POOL_FORMAT or state.get("version") != POOL_VERSION:
            raise DataError(f"{path}: not a version-{POOL_VERSION} pool file of `locus serve`; {fix}.")
        if state.get("run_weights_sha256") != self.fingerprint:
            raise DataError(
                f"{path}: its models were embedded with another run ({state.get('run')}); serve that run, or {fix}."
            )
        dim = self.run_z.shape[1] if self.run_z is not None else None
        known = set(self.run.names.values()) | {str(m) for m in self.run.model_ids}
        added = {}
        try:
            for m in state["models"]:
                z = np.asarray(m["z"], dtype=np.float32)
                a = Added(int(m["id"]), str(m["name"]), z, int(m["n_evaluations"]), float(m["mean_score"]))
                if dim is None or z.shape != (dim,) or not np.isfinite(z).all():
                    raise ValueError(f"model {a.name!r}: embedding is not {dim} finite numbers")
                if a.name in known or a.name in added or a.id in self.run.model_ids:
                    raise ValueError(f"model {a.name!r} (id {a.id}) repeats a name or id of the pool")
                added[a.name] = a
            next_id = int(state["next_id"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: damaged pool file ({exc}); {fix}.") from None
        self.added = added
        self.next_id = max([self.next_id, next_id, *(a.id + 1 for a in added.values())])


# --------------------------------------------------------------------------------------------------
# requests
# --------------------------------------------------------------------------------------------------
class RouteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    queries: list[StrictStr]
    models: list[StrictStr | StrictInt] | None = None
    top_k: StrictInt = Field(default=3, ge=1)


class Evaluation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: StrictStr
    score: StrictFloat  # an integer 0 / 1 is accepted


class AddModelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: StrictStr
    evaluations: list[Evaluation]
    replace: StrictBool = False


def check_queries(queries: list[str]) -> list[str]:
    if not queries:
        raise ServiceError(422, "queries: empty list; give at least one query text.")
    if len(queries) > MAX_QUERIES:
        raise ServiceError(
            413, f"queries: {len(queries)} queries in one request; the limit is {MAX_QUERIES}, split the batch."
        )
    blank = [i for i, q in enumerate(queries) if not q.strip()]
    if blank:
        raise ServiceError(422, f"queries[{blank[0]}]: blank query text ({len(blank)} blank); give non-empty texts.")
    return queries


def check_name(name: str) -> str:
    if not name.strip() or name != name.strip():
        raise ServiceError(422, f"name: {name!r} is blank or has leading/trailing spaces.")
    if len(name) > MAX_NAME or "," in name or not name.isprintable():
        raise ServiceError(422, f"name: give at most {MAX_NAME} printable characters without commas.")
    if name.lstrip("-").isdigit():
        raise ServiceError(422, f"name: {name!r} looks like a model id; give a name (e.g. org/model).")
    return name


def check_evaluations(evaluations: list[Evaluation]) -> tuple[list[str], np.ndarray]:
    """(prompts, scores float32) of scored prompts: at least one, each prompt once, scores in [0, 1]."""
    if not evaluations:
        raise ServiceError(422, "evaluations: empty list; give at least one {prompt, score} (more is better).")
    if len(evaluations) > MAX_EVALUATIONS:
        raise ServiceError(
            413, f"evaluations: {len(evaluations)} scored prompts; the limit is {MAX_EVALUATIONS} per request."
        )
    prompts = [e.prompt for e in evaluations]
    scores = np.asarray([float(e.score) for e in evaluations], dtype=np.float64)
    for i, (p, s) in enumerate(zip(prompts, scores)):
        if not p.strip():
            raise ServiceError(422, f"evaluations[{i}].prompt: blank prompt.")
        if not (math.isfinite(s) and 0 <= s <= 1):
            raise ServiceError(422, f"evaluations[{i}].score: {s} is not in [0, 1] (1 = correct).")
    first: dict[str, int] = {}
    for i, p in enumerate(prompts):
        if p in first:
            distinct = len(set(prompts))
            raise ServiceError(
                422,
                f"evaluations[{i}].prompt repeats evaluations[{first[p]}] ({distinct} distinct prompt(s) in "
                f"{len(prompts)}); give each prompt once with one score.",
            )
        first[p] = i
    return prompts, scores.astype(np.float32)


def _ranked(model) -> dict:
    mid, name, p = model
    return {"id": mid, "name": name, "p_correct": p}


# --------------------------------------------------------------------------------------------------
# metrics (GET /metrics, Prometheus text format)
# --------------------------------------------------------------------------------------------------
class Metrics:
    """Counters of one application, in a registry of its own (several apps in one process stay apart)."""

    def __init__(self, pool: Pool):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = r = CollectorRegistry()
        self.requests = Counter(
            "locus_serve_requests",
            "HTTP requests by endpoint, method and status",
            ["endpoint", "method", "status"],
            registry=r,
        )
        self.errors = Counter(
            "locus_serve_errors", "HTTP requests answered 4xx or 5xx", ["endpoint", "status"], registry=r
        )
        self.seconds = Histogram("locus_serve_request_seconds", "time to answer a request", ["endpoint"], registry=r)
        self.queries = Counter("locus_serve_queries", "queries routed", registry=r)
        self.routed = Counter("locus_serve_routed", "queries whose chosen model is `model`", ["model"], registry=r)
        models = Gauge("locus_serve_models", "models in the pool (added: added over HTTP)", ["added"], registry=r)
        models.labels("false").set_function(lambda: len(pool.run.model_ids))
        models.labels("true").set_function(lambda: len(pool.added))

    def observe(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, method, str(status)).inc()
        if status >= 400:
            self.errors.labels(endpoint, str(status)).inc()
        self.seconds.labels(endpoint).observe(seconds)

    def render(self) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


def _endpoint(app: FastAPI, scope) -> str:
    """The route template a request matches (``/v1/models/{name:path}``), bounded for metric labels."""
    partial = None
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route.path
        if match == Match.PARTIAL and partial is None:
            partial = route.path
    return partial or "unmatched"


# --------------------------------------------------------------------------------------------------
# the application
# --------------------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it may resolve to any interface


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve the admin endpoints without a token on an address other machines can reach."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"--host {host} is not a loopback address: adding and deleting models would be open to the network; "
            "put a token in an environment variable and pass --token-env VAR (or bind to 127.0.0.1)."
        )


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError, content_type: str = "") -> tuple[int, str]:
    errors = exc.errors()
    if not errors:
        return 422, "invalid request body."
    err = errors[0]
    if err.get("type") == "json_invalid":
        return 400, f"malformed JSON: {err.get('ctx', {}).get('error', 'cannot be parsed')}."
    where = _location(err)
    if err.get("type") == "missing" and not where:
        return 400, "a JSON body is required."
    if not where and err.get("type") in ("model_attributes_type", "dict_type", "model_type"):
        if "json" not in content_type.lower():
            return (
                415,
                f"send the body as a JSON object with Content-Type: application/json (got {content_type or 'none'}).",
            )
        return 422, 'the body must be a JSON object, e.g. {"queries": ["..."]}.'
    same = [e.get("msg", "invalid") for e in errors if _location(e) == where]  # a union: one error per type
    more = f" (and {len(errors) - len(same)} more)" if len(errors) > len(same) else ""
    return 422, f"{where or 'body'}: {' or '.join(same) if len(same) > 1 else same[0]}{more}."


def _location(err: dict) -> str:
    """``evaluations[3].score`` from pydantic's location (without "body" and the type tags of unions)."""
    loc = [p for p in err.get("loc", ()) if p != "body" and p not in _TYPE_TAGS]
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


_TYPE_TAGS = {"str", "int", "float", "bool", "list", "dict"}


def create_app(pool: Pool, token: str | None = None) -> FastAPI:
    """The FastAPI application serving `pool`; `token` (None: none needed) guards the admin endpoints."""
    app = FastAPI(title="locus serve", docs_url=None, redoc_url=None, openapi_url=None)
    metrics = app.state.metrics = Metrics(pool)

    @app.middleware("http")  # added first: the innermost; a 500 here keeps the connection (no re-raise)
    async def internal_error(request: Request, call_next):
        try:
            return await call_next(request)
        except Exception:
            log.exception("locus serve: %s %s failed", request.method, request.url.path)
            return _error(500, "internal error; the server's log has the details.")

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            return _error(413, f"request body of {int(length)} bytes; the limit is {MAX_BODY_BYTES} bytes.")
        return await call_next(request)

    @app.middleware("http")  # added last: the outermost, so it also counts the 413s of limit_body
    async def count(request: Request, call_next):
        start = time.perf_counter()
        endpoint = _endpoint(app, request.scope)
        response = await call_next(request)
        metrics.observe(endpoint, request.method, response.status_code, time.perf_counter() - start)
        return response

    @app.exception_handler(ServiceError)
    async def service_error(request, exc: ServiceError):
        return _error(exc.status, exc.message)

    @app.exception_handler(LocusError)
    async def locus_error(request, exc: LocusError):
        return _error(422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request, exc: RequestValidationError):
        return _error(*_validation_message(exc, request.headers.get("content-type", "")))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, exc: StarletteHTTPException):
        if exc.status_code == 404 and exc.detail == "Not Found":
            return _error(404, f"no endpoint {request.method} {request.url.path}.")
        if exc.status_code == 405:
            return _error(405, f"{request.method} is not allowed on {request.url.path}.")
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    def admin(request: Request) -> None:
        if token is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise StarletteHTTPException(
                401, "this endpoint needs Authorization: Bearer <token>.", headers={"WWW-Authenticate": "Bearer"}
            )

    @app.get("/healthz")
    def healthz():
        return {
            "status": "ok",
            "run": str(pool.run.directory),
            "method": pool.run.method.name,
            "models": pool.size(),
            "added": len(pool.added),
        }

    @app.get("/metrics")
    def prometheus_metrics():
        return metrics.render()

    @app.get("/v1/models")
    def list_models():
        return {"models": pool.models()}

    @app.post("/v1/route")
    def route(body: RouteRequest):
        queries = check_queries(body.queries)
        if body.models is not None and not body.models:
            raise ServiceError(422, "models: empty list; name one or more models, or leave models out for all.")
        rankings = pool.route(queries, body.models, body.top_k)
        metrics.queries.inc(len(rankings))
        for r in rankings:
            metrics.routed.labels(r.models[0][1]).inc()
        return {
            "results": [
                {"query": r.query, "chosen": _ranked(r.models[0]), "ranking": [_ranked(m) for m in r.models]}
                for r in rankings
            ]
        }

    @app.post("/v1/models", status_code=201, dependencies=[Depends(admin)])
    def add_model(body: AddModelRequest):
        name = check_name(body.name)
        prompts, scores = check_evaluations(body.evaluations)
        return pool.add(name, prompts, scores, body.replace)

    @app.delete("/v1/models/{name:path}", dependencies=[Depends(admin)])
    def delete_model(name: str):
        return pool.delete(name)

    return app


def make_server(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info"):
    """A uvicorn server for `app` (``.run()`` serves until interrupted; tests run it in a thread)."""
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="off"))


def load(run: Path, pool_dir: Path | None = None, precision: str | None = None) -> Pool:
    """The run directory `run` loaded once, with the models added earlier in `pool_dir`."""
    from locus import run_artifacts as ra

    checkpoint = ra.load_checkpoint(run)
    inference.set_precision(checkpoint, precision, run)
    return Pool(checkpoint, pool_dir)
