"""``POST /v1/chat/completions``: the backends file, and forwarding a request to the chosen model's
OpenAI-compatible backend (streamed or not). Clients never see a backend's address or credentials."""

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from fastapi.responses import JSONResponse

from locus.errors import ConfigError
from locus.serve.errors import ServiceError, error_body
from locus.serve.requests import check_unicode

log = logging.getLogger("locus.serve")


@dataclass(frozen=True)
class Backend:
    name: str  # the pool model it serves
    base_url: str  # e.g. http://127.0.0.1:8001/v1 (POST {base_url}/chat/completions)
    model: str  # the model name the backend expects
    api_key: str | None = None


BACKEND_KEYS = {"base_url", "model", "api_key_env"}


def read_backends(path: Path, pool, environ=None) -> dict[str, Backend]:
    """``{pool model name: Backend}`` from a JSON or YAML file ``{name: {base_url, model, api_key_env?}}``;
    every problem is a one-line ConfigError naming the file and the entry."""
    import os
    from urllib.parse import urlsplit

    environ = os.environ if environ is None else environ
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--backends {path}: cannot be read ({getattr(exc, 'strerror', None) or exc}).") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            spec = yaml.safe_load(text)
        else:
            spec = json.loads(text)
    except Exception as exc:  # json / yaml parse errors
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"--backends {path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'JSON'} ({first})."
        ) from None
    if not isinstance(spec, dict) or not spec:
        raise ConfigError(f"--backends {path}: give a mapping {{model name: {{base_url, model, api_key_env?}}}}.")
    names = {m["name"] for m in pool.models()}
    out = {}
    for name, entry in spec.items():
        where = f"--backends {path}: {name!r}"
        if name not in names:
            shown = ", ".join(sorted(names)[:3])
            raise ConfigError(f"{where} is not a model of the pool (e.g. {shown}; GET /v1/pool lists them).")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: give a mapping {{base_url, model, api_key_env?}}.")
        unknown = sorted(set(entry) - BACKEND_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}; the keys are {sorted(BACKEND_KEYS)}.")
        url = entry.get("base_url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise ConfigError(f"{where}: base_url {url!r} is not an http(s) URL such as http://127.0.0.1:8001/v1.")
        model = entry.get("model", name)
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{where}: model {model!r} must be the backend's model name (text).")
        key = None
        var = entry.get("api_key_env")
        if var is not None:
            if not isinstance(var, str) or not environ.get(var, "").strip():
                raise ConfigError(f"{where}: api_key_env {var}: the environment variable is unset or empty.")
            key = environ[var].strip()
        out[name] = Backend(name, url.rstrip("/"), model, key)
    return out


def last_user_text(messages) -> str:
    """The text of the last user message (string content, or the text parts of a list of parts)."""
    if not isinstance(messages, list) or not messages:
        raise ServiceError(422, "messages: give a non-empty list of {role, content} messages.")
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if not isinstance(m, dict):
            raise ServiceError(422, f"messages[{i}]: each message must be an object {{role, content}}.")
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "\n".join(
                p["text"]
                for p in content
                if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            )
        else:
            raise ServiceError(422, f"messages[{i}].content: give text or a list of {{type: text, text}} parts.")
        if not text.strip():
            raise ServiceError(422, f"messages[{i}]: the last user message has no text to route on.")
        check_unicode([text], "messages", ".content", first=i)
        return text
    raise ServiceError(422, "messages: no message with role 'user' to route on.")


class Proxy:
    """Forwards chat completions to the backends (one httpx.AsyncClient, made in the serving loop)."""

    def __init__(self, backends: dict[str, Backend], timeout: float, metrics):
        self.backends = backends
        self.timeout = float(timeout)
        self.metrics = metrics
        self.client = None

    def _client(self):
        import httpx

        if self.client is None:
            self.client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
                trust_env=False,  # loopback / configured backends only: no proxy from the environment
            )
        return self.client

    def _fail(self, backend: Backend, kind: str, status: int, message: str) -> ServiceError:
        """The client's error names the model only; the log has the backend's address (without credentials)."""
        self.metrics.backend_errors.labels(backend.name, kind).inc()
        log.warning("locus serve: backend of %r at %s: %s", backend.name, redact(backend.base_url), message)
        return ServiceError(status, f"backend of {backend.name!r}: {scrub(message, backend)}")

    async def forward(self, backend: Backend, body: dict, locus: dict):
        import httpx
        from fastapi.responses import StreamingResponse

        payload = {**body, "model": backend.model}
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if backend.api_key:
            headers["authorization"] = f"Bearer {backend.api_key}"
        client = self._client()
        request = client.build_request("POST", f"{backend.base_url}/chat/completions", json=payload, headers=headers)
        self.metrics.forwarded.labels(backend.name).inc()
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException:
            raise self._fail(backend, "timeout", 504, f"no answer within {self.timeout:g} s.") from None
        except httpx.HTTPError as exc:
            raise self._fail(backend, "unreachable", 502, f"unreachable ({type(exc).__name__}).") from None
        tag = {"x-locus-model": backend.name}
        streaming = "text/event-stream" in response.headers.get("content-type", "")
        if body.get("stream") is True and response.status_code == 200 and streaming:
            return StreamingResponse(self._relay(backend, response), media_type="text/event-stream", headers=tag)
        try:
            raw = await response.aread()
        except httpx.TimeoutException:
            raise self._fail(backend, "timeout", 504, f"no complete answer within {self.timeout:g} s.") from None
        except httpx.HTTPError as exc:
            raise self._fail(backend, "unreachable", 502, f"broke off its answer ({type(exc).__name__}).") from None
        finally:
            await response.aclose()
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            kind = response.headers.get("content-type", "no content type")
            raise self._fail(backend, "bad_response", 502, f"answered {response.status_code} with non-JSON ({kind}).")
        if response.status_code >= 500:
            raise self._fail(backend, "status", 502, f"answered {response.status_code}: {_backend_message(data)}")
        if response.status_code >= 400:  # the request's fault: the backend's own error, passed on in OpenAI's shape
            self.metrics.backend_errors.labels(backend.name, "status").inc()
            err = data.get("error") if isinstance(data.get("error"), dict) else {}
            body = error_body(response.status_code, scrub(_backend_message(data), backend))
            for key in ("type", "param", "code"):
                if isinstance(err.get(key), (str, int)) and not isinstance(err.get(key), bool):
                    body["error"][key] = scrub(str(err[key]), backend)
            return JSONResponse(body, status_code=response.status_code, headers=tag)
        if body.get("stream") is True:
            raise self._fail(backend, "bad_response", 502, "stream: true was asked but it did not stream (SSE).")
        data["locus"] = locus
        return JSONResponse(data, headers=tag)

    async def _relay(self, backend: Backend, response):
        """The backend's SSE bytes in order; a failure mid-stream ends it with an SSE error event."""

        import httpx

        try:
            async for chunk in response.aiter_raw():
                yield chunk
        except httpx.TimeoutException:
            err = self._fail(backend, "timeout", 504, f"stopped streaming for {self.timeout:g} s.")
            yield f"data: {json.dumps(error_body(err.status, err.message))}\n\n".encode()
        except httpx.HTTPError as exc:
            err = self._fail(backend, "unreachable", 502, f"broke off its stream ({type(exc).__name__}).")
            yield f"data: {json.dumps(error_body(err.status, err.message))}\n\n".encode()
        finally:
            await response.aclose()

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None


def _backend_message(data: dict) -> str:
    err = data.get("error")
    text = err.get("message") if isinstance(err, dict) else err
    return " ".join(str(text or data)[:200].split())


_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def redact(url: str) -> str:
    """`url` without the password of its ``user:password@`` part (for the log)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def scrub(text: str, backend: Backend) -> str:
    """A backend's text for a client: without URLs (its own address, credentials in one, any other)."""
    text = text.replace(backend.base_url, "<backend>")
    return _URL.sub("<url>", text)
