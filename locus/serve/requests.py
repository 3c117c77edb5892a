"""The bodies `locus serve` accepts and their checks: each failure a ServiceError naming the field (``queries[2]``)."""

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from locus.serve.errors import ServiceError
from locus.serve.settings import MAX_EVALUATIONS, MAX_PROMPT_CHARS, MAX_QUERIES

MAX_NAME = 200  # characters of an added model's name


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


def check_queries(queries: list[str], max_queries: int = MAX_QUERIES, max_chars: int = MAX_PROMPT_CHARS) -> list[str]:
    if not queries:
        raise ServiceError(422, "queries: empty list; give at least one query text.")
    if len(queries) > max_queries:
        raise ServiceError(
            413, f"queries: {len(queries)} queries in one request; the limit is {max_queries}, split the batch."
        )
    blank = [i for i, q in enumerate(queries) if not q.strip()]
    if blank:
        raise ServiceError(422, f"queries[{blank[0]}]: blank query text ({len(blank)} blank); give non-empty texts.")
    check_lengths(queries, "queries", max_chars)
    check_unicode(queries, "queries")
    return queries


def check_lengths(texts: list[str], where: str, max_chars: int, suffix: str = "") -> None:
    long = [i for i, t in enumerate(texts) if len(t) > max_chars]
    if long:
        i = long[0]
        raise ServiceError(
            413, f"{where}[{i}]{suffix}: {len(texts[i])} characters; the limit is {max_chars} per text, shorten it."
        )


def check_unicode(texts: list[str], where: str, suffix: str = "", first: int = 0) -> None:
    """Refuse text the encoder's tokenizer cannot take: a JSON escape of half a surrogate pair (``"\\ud800"``)
    is valid JSON but not Unicode text. Checked before a query joins a batch, so it fails only its request."""
    for i, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ServiceError(
                422,
                f"{where}[{first + i}]{suffix}: an unpaired surrogate (\\u{ord(text[exc.start]):04x}) at character "
                f"{exc.start} is not Unicode text; send the text as valid UTF-8.",
            ) from None


def check_name(name: str) -> str:
    if not name.strip() or name != name.strip():
        raise ServiceError(422, f"name: {name!r} is blank or has leading/trailing spaces.")
    check_unicode([name], "name")
    if len(name) > MAX_NAME or "," in name or not name.isprintable():
        raise ServiceError(422, f"name: give at most {MAX_NAME} printable characters without commas.")
    if name.lstrip("-").isdigit():
        raise ServiceError(422, f"name: {name!r} looks like a model id; give a name (e.g. org/model).")
    return name


def check_evaluations(evaluations: list[Evaluation], max_chars: int = MAX_PROMPT_CHARS) -> tuple[list[str], np.ndarray]:
    """(prompts, scores float32) of scored prompts: at least one, each prompt once, scores in [0, 1]."""
    if not evaluations:
        raise ServiceError(422, "evaluations: empty list; give at least one {prompt, score} (more is better).")
    if len(evaluations) > MAX_EVALUATIONS:
        raise ServiceError(
            413, f"evaluations: {len(evaluations)} scored prompts; the limit is {MAX_EVALUATIONS} per request."
        )
    prompts = [e.prompt for e in evaluations]
    check_lengths(prompts, "evaluations", max_chars, ".prompt")
    check_unicode(prompts, "evaluations", ".prompt")
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
