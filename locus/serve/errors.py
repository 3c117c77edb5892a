"""Errors of `locus serve` in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``, so that OpenAI
clients (SDKs, chat UIs, gateways) show the message; ``message`` is one line."""

import re

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


class ServiceError(Exception):
    """A request the service refuses: HTTP status and a one-line message for the client (`param`: the field at
    fault, by default read from the message's ``queries[2]:`` prefix; `code`: a short machine-readable tag)."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


# OpenAI's error types where it has one for the status; the rest in the same style
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    421: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable_error",
    504: "upstream_timeout_error",
}
_PARAM = re.compile(r"^([A-Za-z_]\w*(?:\[\d+\]|\.\w+)*):\s")  # "queries[1]: ...", "evaluations[3].prompt: ..."


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    message = " ".join(str(message).split())  # one line, whatever a library put in it
    if param is None and status < 500:
        match = _PARAM.match(message)
        param = match.group(1) if match else None
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_response(
    status: int, message: str, param: str | None = None, code: str | None = None, headers: dict | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, message, param, code), status_code=status, headers=headers)


def validation_message(exc: RequestValidationError, content_type: str = "") -> tuple[int, str]:
    """(status, one line) for a body pydantic refused: the first field at fault, with its location."""
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
