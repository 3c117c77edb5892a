"""What keeps `locus serve` safe to put in front of clients: the bind and token rules, and the ASGI guards that run
before any endpoint — the Host allow-list (DNS rebinding), cross-origin browser requests, and the body's size,
encoding and JSON nesting. Each refusal is one OpenAI-shaped JSON error and one WARNING line in the log."""

import errno
import ipaddress
import logging
import re
import socket

import numpy as np

from locus.errors import ConfigError
from locus.serve.errors import error_response
from locus.serve.settings import LOOPBACK_HOSTS

log = logging.getLogger("locus.serve")

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it may resolve to any interface


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def check_bind(host: str, token: str | None, allowed_hosts=()) -> None:
    """Refuse an address other machines can reach without a token (adding and deleting models and chat
    completions would be open to the network), and a wildcard bind without the host names clients use."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"--host {host} is not a loopback address: adding and deleting models and chat completions (which spend "
            "the backends' keys) would be open to the network; put a token in an environment variable and pass "
            "--token-env VAR (or bind to 127.0.0.1)."
        )
    if is_wildcard(host) and not allowed_hosts:
        raise ConfigError(
            f"--host {host} listens on every address: name the host names or addresses clients use to reach it with "
            "--allow-host NAME (repeatable; '*' accepts any Host header)."
        )


def served_hosts(bind: str, allowed=()) -> frozenset | None:
    """The Host header names served (None: any): the bound address, loopback names and `allowed`."""
    if "*" in allowed:
        return None
    names = {h.lower() for h in LOOPBACK_HOSTS} | {h.strip().lower() for h in allowed if h.strip()}
    if not is_wildcard(bind):
        names.add(f"[{bind.strip('[]')}]" if ":" in bind else bind.lower())
    return frozenset(names)


def host_name(header: str) -> str:
    """The host of a Host header without its port (``[::1]`` keeps its brackets)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def bind_socket(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything says "serving": a port in use is an exit 2 with the fix."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: not an address of this machine ({exc.strerror}).") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"--port {port}: already in use on {host} (another locus serve?); choose another --port, or stop "
                "the process that holds it."
            ) from None
        raise ConfigError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}).") from None
    sock.set_inheritable(True)
    return sock


def _refuse(scope, status: int, message: str):
    client = scope.get("client") or ("?", 0)
    log.warning(
        "locus serve: %s %s from %s refused (%d): %s", scope["method"], scope["path"], client[0], status, message
    )
    return error_response(status, message)


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return value.decode("latin-1")
    return None


class HostGuard:
    """ASGI middleware: 421 for a Host header this service does not serve. A web page that rebinds its own
    host name to 127.0.0.1 still sends that name as Host, so it cannot reach a loopback service."""

    def __init__(self, app, hosts: frozenset | None):
        self.app, self.hosts = app, hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and self.hosts is not None:
            host = _header(scope, b"host")
            if host is not None and host_name(host) not in self.hosts:
                shown = host_name(host)[:100]
                message = (
                    f"Host {shown!r} is not served here (DNS rebinding protection); start locus serve with "
                    f"--allow-host {shown} if clients reach it by that name."
                )
                return await _refuse(scope, 421, message)(scope, receive, send)
        return await self.app(scope, receive, send)


class OriginGuard:
    """ASGI middleware: 403 for a browser request from another origin that could change state or spend money
    (any method but GET, HEAD and OPTIONS), unless the origin is allowed (--allow-origin)."""

    def __init__(self, app, origins):
        self.app, self.origins = app, {o.rstrip("/").lower() for o in origins}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            origin = _header(scope, b"origin")
            if origin is not None and origin.rstrip("/").lower() not in self.origins:
                shown = origin[:100]
                message = (
                    f"cross-origin request from {shown!r} refused; start locus serve with --allow-origin {shown} "
                    "to allow that web origin."
                )
                return await _refuse(scope, 403, message)(scope, receive, send)
        return await self.app(scope, receive, send)


class BodyGuard:
    """ASGI middleware: reads the body before the endpoint does, then hands it on whole. 413 for a body over
    `settings.max_body_bytes` (by its Content-Length, or as it is read); 400 for a body that is not UTF-8, or JSON
    nested deeper than `settings.max_json_depth` (Python's parser recurses: a deep body would be a RecursionError
    and a traceback per request)."""

    def __init__(self, app, settings):
        self.app, self.settings = app, settings

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.settings.max_body_bytes
        length = (_header(scope, b"content-length") or "").strip()
        if length.isdigit() and int(length) > limit:
            return await _refuse(scope, 413, f"request body of {int(length)} bytes; the limit is {limit} bytes.")(
                scope, receive, send
            )
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return None
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                return await _refuse(scope, 413, f"request body over the limit of {limit} bytes.")(scope, receive, send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = body_problem(body, self.settings.max_json_depth) if body else None
        if problem is not None:
            return await _refuse(scope, 400, problem)(scope, receive, send)
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)  # a JSON string, escapes included


def body_problem(body: bytes, max_depth: int) -> str | None:
    """Why a request body cannot be read as JSON text (None: no such reason): bytes that are not UTF-8, or
    nesting deeper than `max_depth` (brackets inside strings do not count)."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the body is not valid UTF-8 (byte {exc.start}: {body[exc.start : exc.start + 1]!r}); send UTF-8 JSON."
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return None
    depth = json_depth(body)
    if depth > max_depth:
        return f"JSON nested {depth} levels deep; the limit is {max_depth}."
    return None


def json_depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in `body` (no parse; strings skipped)."""
    plain = np.frombuffer(_STRING.sub(b'""', body), dtype=np.uint8)
    step = np.isin(plain, (ord("["), ord("{"))).astype(np.int32) - np.isin(plain, (ord("]"), ord("}")))
    return int(np.cumsum(step).max(initial=0))
