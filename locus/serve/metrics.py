"""``GET /metrics``: the service's Prometheus counters, and the middleware that counts every answer."""

import time

from fastapi.responses import Response
from starlette.routing import Match


class Metrics:
    """Counters of one application, in a registry of its own (several apps in one process stay apart)."""

    def __init__(self, pool):
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
        self.forwarded = Counter(
            "locus_serve_forwarded", "chat completions forwarded to the backend of `model`", ["model"], registry=r
        )
        self.backend_errors = Counter(
            "locus_serve_backend_errors",
            "failed forwards by model and kind (unreachable, timeout, bad_response, status)",
            ["model", "kind"],
            registry=r,
        )
        self.sessions = Counter(
            "locus_serve_sessions", "chat turns by session affinity (new, kept, rerouted)", ["outcome"], registry=r
        )
        self.batch = Histogram(
            "locus_serve_batch_requests",
            "/v1/route requests answered by one encoder and predictor pass",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128),
            registry=r,
        )
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


def _endpoint(router, scope) -> str:
    """The route template a request matches (``/v1/pool/{name:path}``), bounded for metric labels."""
    partial = None
    for route in router.routes:
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route.path
        if match == Match.PARTIAL and partial is None:
            partial = route.path
    return partial or "unmatched"


class CountRequests:
    """ASGI middleware: every HTTP answer counted in `metrics` by route template, method and status, with the
    time to its start."""

    def __init__(self, app, routes, metrics: Metrics):
        self.app, self.routes, self.metrics = app, routes, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        endpoint = _endpoint(self.routes, scope)

        async def observed(message):
            if message["type"] == "http.response.start":
                seconds = time.perf_counter() - start
                self.metrics.observe(endpoint, scope["method"], message["status"], seconds)
            await send(message)

        await self.app(scope, receive, observed)
