"""`locus serve`: routing with one trained run as an HTTP service (FastAPI on uvicorn).

The package reads top to bottom: ``settings`` (every default) -> ``errors`` (OpenAI-shaped errors) ->
``requests`` (bodies and their checks) -> ``pool`` (the run and the models added live) -> ``batching`` (concurrent
routing requests share a pass) -> ``proxy`` (chat completions forwarded to backends) and ``affinity`` (a
conversation stays on its model) -> ``security`` (bind, token, Host, Origin and body guards) -> ``metrics`` ->
``app`` (the endpoints). README's "Serving" section is the user's guide.
"""

from locus.serve.app import create_app, make_server, run_label
from locus.serve.errors import ServiceError, error_body
from locus.serve.pool import Pool, default_data_paths, load, load_stored
from locus.serve.proxy import Backend, read_backends
from locus.serve.security import bind_socket, check_bind, is_loopback, served_hosts
from locus.serve.settings import MAX_QUERIES, Settings

__all__ = [
    "MAX_QUERIES",
    "Backend",
    "Pool",
    "ServiceError",
    "Settings",
    "bind_socket",
    "check_bind",
    "create_app",
    "default_data_paths",
    "error_body",
    "is_loopback",
    "load",
    "load_stored",
    "make_server",
    "read_backends",
    "run_label",
    "served_hosts",
]
