"""`locus serve`: routing with one trained run as an HTTP service (FastAPI on uvicorn).

The run, its encoder and model embeddings are loaded once. ``GET /healthz``; ``POST /v1/route`` ``{queries,
models?, top_k?}`` ranks models per query as ``locus route`` (concurrent requests micro-batched: :class:`Batcher`);
``GET /v1/models``; ``POST /v1/models`` ``{name, evaluations: [{prompt, score}], replace?}`` embeds a new model in
one forward pass (LOCUS runs; prompts of the run's data set reuse their stored encodings) and ``DELETE
/v1/models/{name}`` removes one, both kept in ``POOL_FILE`` in the pool directory (atomic writes, tied to the run
by its weights' SHA-256); ``POST /v1/chat/completions`` (OpenAI-compatible) routes the last user message of model
``locus-auto`` and forwards the request to the chosen model's backend (:class:`Proxy`); ``GET /metrics``
(Prometheus text).

Admin endpoints need ``Authorization: Bearer TOKEN`` whenever a token is set; a non-loopback bind without one
is refused (:func:`check_bind`). Every error is a JSON body ``{"error": "<one line>"}``; an unexpected failure
is a 500 whose traceback stays in the server's log.
"""

import asyncio
import concurrent.futures
import hmac
import ipaddress
import json
import logging
import math
import threading
import time
from dataclasses import dataclass, field, replace
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
from locus.provenance import native_bfloat16

log = logging.getLogger(__name__)

MAX_QUERIES = 256  # queries in one /v1/route request (413 above; --max-queries)
MAX_PROMPT_CHARS = 100_000  # characters of one query, prompt or chat message (413 above; --max-prompt-chars)
MAX_EVALUATIONS = 100_000  # scored prompts in one /v1/models request (413 above)
MAX_BODY_BYTES = 10 * 2**20  # request body (413 above, by its Content-Length or as it is read)
BATCH_QUERIES = 32  # queries of concurrent /v1/route requests encoded and scored in one pass
BATCH_WORKERS = 2  # batches in flight: both encode at once, and the event loop answers one while the other encodes
ENCODE_BATCH = 16  # texts per encoder forward pass: larger ones pad more and run slower per text on a CPU
PREDICT_BLOCK = 16  # queries per predictor pass (padded): a fixed shape, so batching does not change results
BATCH_WAIT_MS = 2.0  # under load, how long the batcher waits for more requests
CHAT_ALIAS = "locus-auto"  # the chat-completions model name that routes
BACKEND_TIMEOUT = 60.0  # seconds a backend may take to connect / between two chunks
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

    def __init__(
        self,
        run,
        pool_dir: Path | None = None,
        stored: "StoredEncodings | None" = None,
        calibration=None,
        encoder_precision: str = "float32",
        compile_encoder: bool = False,
    ):
        self.run = run
        self.compile_encoder = compile_encoder  # torch.compile the query encoder (encoders.compile_encoder)
        self.encoder_precision = encoder_precision  # float32, or bfloat16 (encoders.in_bfloat16) for the query encoder
        self.stored = stored
        # the run's calibration map (locus.calibration.Calibration) or None: P(correct) = sigmoid(logit)
        self.calibration = calibration
        self.encoder = None  # the sentence encoder, loaded on first use
        self.encoder_lock = threading.Lock()
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

    # ---- encoding --------------------------------------------------------------------------------
    def encode(self, texts: list[str], what: str) -> np.ndarray:
        """Texts encoded with the run's sentence encoder, loaded once and kept (``locus route`` loads it per
        call); a stand-in put in place of :func:`locus.checkpoint.encode_queries` (tests) is used as is."""
        from locus import checkpoint as ckpt

        if getattr(ckpt.encode_queries, "__module__", None) != ckpt.__name__:
            return inference.encode_checked(self.run, texts, None, what)
        from locus.encoders import encode_direct

        vectors = encode_direct(self.load_encoder(), list(texts), ENCODE_BATCH)
        return ckpt.check_dim(vectors, self.run, what)

    def load_encoder(self):
        """The query encoder, loaded on first use (in bfloat16 and compiled as asked) and kept. A compiled one
        runs its first passes here, under the lock, so no request meets a model halfway through compiling."""
        from locus import encoders

        with self.encoder_lock:
            if self.encoder is None:
                encoder = encoders.load_encoder(self.run.encoder)
                encoder.eval()  # once: encode_direct does not repeat it per call
                if self.encoder_precision == "bfloat16":
                    encoders.in_bfloat16(encoder)
                if self.compile_encoder:
                    encoders.compile_encoder(encoder)
                    try:  # one text, then several: the two shape families a compiled model specialises on
                        for texts in (["warm-up"], ["warm-up", "a second and longer warm-up text"]):
                            encoders.encode_direct(encoder, texts, ENCODE_BATCH)
                    except Exception as exc:  # noqa: BLE001  (inductor raises many types; its first line says why)
                        why = (str(exc).strip().splitlines() or [""])[0][:300]
                        raise ConfigError(
                            f"--compile: torch.compile of the encoder failed ({type(exc).__name__}: {why}); it "
                            "needs a C++ compiler (apt install g++), or leave out --compile."
                        ) from None
                self.encoder = encoder
            return self.encoder

    def warm_up(self) -> threading.Thread:
        """Load the encoder (and run it once) in a background thread."""

        def warm():
            try:
                self.encode(["warm-up"], "warm-up")
            except Exception as exc:  # noqa: BLE001  (requests that need the encoder will say why)
                log.warning("locus serve: the encoder %r cannot be loaded: %s", self.run.encoder, exc)

        thread = threading.Thread(target=warm, name="locus-serve-warm-up", daemon=True)
        thread.start()
        return thread

    # ---- routing ---------------------------------------------------------------------------------
    def route(self, queries: list[str], models=None, top_k: int = 3) -> list[inference.Ranking]:
        (result,) = self.route_batch([(queries, models, top_k)])
        if isinstance(result, BaseException):
            raise result
        return result

    def route_batch(self, requests: list[tuple]) -> list:
        """Rankings of several requests ``(queries, models, top_k)`` with one encoder pass over all their
        queries and one predictor pass per candidate set; per request its rankings or the exception it
        raised (a bad model list fails its own request only). The encoder runs outside the pool's lock, so the
        ``Batcher``'s workers encode their batches at the same time."""
        offsets = np.cumsum([0] + [len(queries) for queries, _, _ in requests])
        texts = [q for queries, _, _ in requests for q in queries]
        try:
            vectors, failed = (self.encode(texts, "route") if texts else None), None
        except Exception as exc:  # the encoder's failure is every request's with a valid model list
            vectors, failed = None, exc
        with self.lock:
            out: list = [None] * len(requests)
            groups: dict[tuple, list[int]] = {}
            candidates = {}
            for i, (_, models, _) in enumerate(requests):
                try:
                    candidates[i] = self.resolve(models)
                    groups.setdefault(tuple(candidates[i].tolist()), []).append(i)
                except ServiceError as exc:
                    out[i] = exc
            if failed is not None:
                return [failed if o is None else o for o in out]
            view = self._view()
            for members in groups.values():
                rows = np.concatenate([np.arange(offsets[i], offsets[i] + len(requests[i][0])) for i in members])
                try:
                    logits = self._logits(vectors[rows], candidates[members[0]])
                except Exception as exc:
                    for i in members:
                        out[i] = exc
                    continue
                at = 0
                for i in members:
                    queries, _, top_k = requests[i]
                    part = logits[at : at + len(queries)]
                    at += len(queries)
                    probs = None if self.calibration is None else self.calibration.probabilities(part)
                    out[i] = inference.rank(queries, part, candidates[i], view.name, top_k, probs)
            return out

    def _logits(self, vectors: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Logits [queries x candidates] in blocks of PREDICT_BLOCK queries (the last one padded): a matrix
        product's last bits depend on its shape, so a fixed shape makes a query's logits the same alone or
        batched with others, at any position."""
        if self.can_embed and np.isin(candidates, self.run.model_ids).sum() < len(candidates):
            z = self._embeddings(candidates)
            predict = lambda v: self.run.method.logits_for_embeddings(v, z)  # noqa: E731
        else:  # only the run's models: as `locus route`
            predict = lambda v: self.run.method.predict_logits(v, candidates)  # noqa: E731
        out = []
        for start in range(0, len(vectors), PREDICT_BLOCK):
            block = vectors[start : start + PREDICT_BLOCK]
            n = len(block)
            if n < PREDICT_BLOCK:
                block = np.concatenate([block, np.zeros((PREDICT_BLOCK - n, block.shape[1]), block.dtype)])
            out.append(predict(block)[:n])
        return np.concatenate(out)

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
            vectors, reused = self._prompt_vectors(prompts)
            z = self.run.method.embed(vectors, scores)
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
                "reused_encodings": reused,
                "mean_score": model.mean_score,
                "persisted": persisted,
                "nearest": [{"id": m, "name": view.name(m), "cosine": s} for m, s in near],
            }

    def _prompt_vectors(self, prompts: list[str]) -> tuple[np.ndarray, int]:
        """Encodings of `prompts`: the data set's stored ones where the prompt is in it, the encoder's for the
        rest (one pass); and how many were reused."""
        rows = [self.stored.rows.get(p, -1) for p in prompts] if self.stored is not None else [-1] * len(prompts)
        new = [i for i, r in enumerate(rows) if r < 0]
        if not new:
            return self.stored.vectors[rows], len(prompts)
        encoded = self.encode([prompts[i] for i in new], "evaluations")
        if len(new) == len(prompts):
            return encoded, 0
        vectors = np.empty((len(prompts), encoded.shape[1]), dtype=np.float32)
        vectors[new] = encoded
        old = [i for i, r in enumerate(rows) if r >= 0]
        vectors[old] = self.stored.vectors[[rows[i] for i in old]]
        return vectors, len(old)

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
# the data set's stored encodings (hot-add reuses them for the prompts of the data set)
# --------------------------------------------------------------------------------------------------
@dataclass
class StoredEncodings:
    rows: dict  # prompt text -> row of `vectors`
    vectors: np.ndarray  # float32 [n, d_phi]
    source: str


def default_data_paths(run) -> tuple[Path | None, Path | None]:
    """The run's data set directory (its config's ``dataset``: as given, else under the project holding the
    run's ``results/``) and its encodings ``results/encodings/{dataset}/{encoder}.parquet`` beside it."""
    recorded = run.config.get("dataset")
    if not isinstance(recorded, str) or not recorded:
        return None, None
    data = Path(recorded)
    if not data.is_absolute() and not data.is_dir():
        parts = Path(run.directory).resolve().parts
        if "results" in parts:  # results/runs/...: the project root is above results/
            root = Path(*parts[: len(parts) - parts[::-1].index("results") - 1])
            data = root / recorded
    if not data.is_dir():
        return None, None
    return data, data.parent.parent / "encodings" / data.name / f"{run.encoder}.parquet"


def load_stored(run, data: Path, encodings: Path) -> StoredEncodings:
    """Prompt text -> stored encoding of the data set `data`, from `encodings` (``locus encode``'s file),
    checked to be of this data set, with the run's encoder and dimension."""
    import pandas as pd

    from locus.data.encodings import data_fingerprint, read_encodings
    from locus.errors import require_file

    enc = read_encodings(encodings)
    path = Path(data) / "queries.parquet"
    require_file(path, "give --data the run's data set directory (with queries.parquet).")
    try:
        queries = pd.read_parquet(path, columns=["prompt_id", "prompt"])
    except Exception as exc:  # pyarrow raises many types
        raise DataError(f"{path}: not readable with columns prompt_id, prompt ({exc}).") from None
    fingerprint = data_fingerprint(queries["prompt_id"], queries["prompt"])
    recorded = run.config.get("data_fingerprint")
    if recorded and fingerprint != recorded:
        raise DataError(f"--data {data}: not the data set the run {run.directory} was trained on; give that one.")
    if enc.data_fingerprint and enc.data_fingerprint != fingerprint:
        raise DataError(f"--encodings {encodings}: made from another data set than {data}; give the run's encodings.")
    if enc.encoder != run.encoder or enc.dim != getattr(run.method, "d_phi", enc.dim):
        raise DataError(
            f"--encodings {encodings}: encoder {enc.encoder} ({enc.dim}-d), but the run uses {run.encoder}; "
            "give the encodings of the run's encoder."
        )
    ids = queries["prompt_id"].to_numpy(np.int64)
    pos = pd.Index(enc.prompt_ids).get_indexer(ids)  # a subset file (--for-train-sizes) lacks some prompts
    have = pos >= 0
    rows: dict[str, int] = {}
    for row, text in enumerate(queries["prompt"].to_numpy()[have]):
        rows.setdefault(str(text), row)
    return StoredEncodings(rows, np.ascontiguousarray(enc.vectors[pos[have]]), str(encodings))


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
    return queries


def check_lengths(texts: list[str], where: str, max_chars: int, suffix: str = "") -> None:
    long = [i for i, t in enumerate(texts) if len(t) > max_chars]
    if long:
        i = long[0]
        raise ServiceError(
            413, f"{where}[{i}]{suffix}: {len(texts[i])} characters; the limit is {max_chars} per text, shorten it."
        )


def check_name(name: str) -> str:
    if not name.strip() or name != name.strip():
        raise ServiceError(422, f"name: {name!r} is blank or has leading/trailing spaces.")
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
        self.forwarded = Counter(
            "locus_serve_forwarded", "chat completions forwarded to the backend of `model`", ["model"], registry=r
        )
        self.backend_errors = Counter(
            "locus_serve_backend_errors",
            "failed forwards by model and kind (unreachable, timeout, bad_response, status)",
            ["model", "kind"],
            registry=r,
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
    """The route template a request matches (``/v1/models/{name:path}``), bounded for metric labels."""
    partial = None
    for route in router.routes:
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route.path
        if match == Match.PARTIAL and partial is None:
            partial = route.path
    return partial or "unmatched"


# --------------------------------------------------------------------------------------------------
# micro-batching of /v1/route
# --------------------------------------------------------------------------------------------------
class Batcher:
    """Concurrent routing requests go through one queue; `workers` workers each take what is waiting (up to
    `max_queries` queries; under load they wait `wait_s` for more) and answer it with one
    :meth:`Pool.route_batch` in a thread, so the event loop keeps accepting requests meanwhile. With two
    workers (the default) two batches encode at once and the event loop answers one while the other encodes:
    on two cores that keeps both busy under load, where one worker left a third of them idle."""

    def __init__(
        self,
        pool: Pool,
        max_queries: int = BATCH_QUERIES,
        wait_s: float = BATCH_WAIT_MS / 1000,
        observe=None,
        workers: int = BATCH_WORKERS,
    ):
        self.pool = pool
        self.observe = observe
        self.max_queries = max(1, int(max_queries))
        self.wait_s = max(0.0, float(wait_s))
        self.n_workers = max(1, int(workers))
        self.queue: asyncio.Queue | None = None
        self.workers: list[asyncio.Task] = []
        # the batches' own threads, as many as workers: the same few threads keep their torch thread pools and
        # memory arenas (the event loop's default executor rotates up to cpu + 4 threads, and memory grew with it)
        self.threads = concurrent.futures.ThreadPoolExecutor(self.n_workers, thread_name_prefix="locus-route")
        self.sizes: list[int] = []  # requests per batch, the latest few (tests and metrics look)

    async def route(self, queries: list[str], models, top_k: int) -> list[inference.Ranking]:
        if not self.workers or any(w.done() for w in self.workers):  # started in the serving loop, on first use
            for w in self.workers:
                w.cancel()
            self.queue = asyncio.Queue()
            loop = asyncio.get_running_loop()
            self.workers = [loop.create_task(self._work()) for _ in range(self.n_workers)]
        future = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((queries, models, top_k, future))
        return await future

    def _drain(self, batch: list, count: int) -> int:
        while count < self.max_queries and not self.queue.empty():
            item = self.queue.get_nowait()
            batch.append(item)
            count += len(item[0])
        return count

    async def _work(self) -> None:
        busy = False
        while True:
            batch = [await self.queue.get()]
            count = self._drain(batch, len(batch[0][0]))
            if self.wait_s and (busy or len(batch) > 1) and count < self.max_queries:
                await asyncio.sleep(self.wait_s)  # only under load: a lone request is not delayed
                count = self._drain(batch, count)
            busy = len(batch) > 1
            self.sizes = [*self.sizes[-99:], len(batch)]
            if self.observe is not None:
                self.observe(len(batch))
            try:
                results = await asyncio.get_running_loop().run_in_executor(
                    self.threads, self.pool.route_batch, [item[:3] for item in batch]
                )
            except Exception as exc:  # noqa: BLE001  (handed to every waiting request)
                results = [exc] * len(batch)
            for item, result in zip(batch, results):
                future = item[3]
                if future.done():  # the client went away
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)


# --------------------------------------------------------------------------------------------------
# POST /v1/chat/completions: route, then forward to the chosen model's OpenAI-compatible backend
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backend:
    name: str  # the pool model it serves
    base_url: str  # e.g. http://127.0.0.1:8001/v1 (POST {base_url}/chat/completions)
    model: str  # the model name the backend expects
    api_key: str | None = None


BACKEND_KEYS = {"base_url", "model", "api_key_env"}


def read_backends(path: Path, pool: Pool, environ=None) -> dict[str, Backend]:
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
            raise ConfigError(f"{where} is not a model of the pool (e.g. {shown}; GET /v1/models lists them).")
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
        return text
    raise ServiceError(422, "messages: no message with role 'user' to route on.")


class Proxy:
    """Forwards chat completions to the backends (one httpx.AsyncClient, made in the serving loop)."""

    def __init__(self, backends: dict[str, Backend], timeout: float, metrics: "Metrics"):
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
        self.metrics.backend_errors.labels(backend.name, kind).inc()
        return ServiceError(status, f"backend of {backend.name!r} ({backend.base_url}): {message}")

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
        if response.status_code >= 400:  # the request's fault: the backend's own error, passed on
            self.metrics.backend_errors.labels(backend.name, "status").inc()
            return JSONResponse(data, status_code=response.status_code, headers=tag)
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
            yield f"data: {json.dumps({'error': err.message})}\n\n".encode()
        except httpx.HTTPError as exc:
            err = self._fail(backend, "unreachable", 502, f"broke off its stream ({type(exc).__name__}).")
            yield f"data: {json.dumps({'error': err.message})}\n\n".encode()
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


@dataclass
class Settings:
    """What `locus serve`'s options set beyond the pool (the defaults are the module's constants)."""

    max_queries: int = MAX_QUERIES
    max_prompt_chars: int = MAX_PROMPT_CHARS
    max_body_bytes: int = MAX_BODY_BYTES
    batch_queries: int = BATCH_QUERIES
    batch_wait_ms: float = BATCH_WAIT_MS
    batch_workers: int = BATCH_WORKERS
    backends: dict = field(default_factory=dict)  # {pool model name: Backend}
    chat_alias: str = CHAT_ALIAS
    backend_timeout: float = BACKEND_TIMEOUT


class BodyLimit:
    """ASGI middleware: 413 for a body over `limit()` bytes, by its Content-Length or, without one
    (chunked), as it is read: then the 413 is sent at once and the application sees a disconnect (an
    exception raised here would reach it wrapped by the other middlewares' task groups)."""

    def __init__(self, app, limit):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limit()
        length = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            message = f"request body of {int(length)} bytes; the limit is {limit} bytes."
            return await _error(413, message)(scope, receive, send)
        seen, answered = 0, False

        async def limited():
            nonlocal seen, answered
            if answered:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    answered = True
                    await _error(413, f"request body over the limit of {limit} bytes.")(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message):
            if not answered:  # the application's own answer to the disconnect is dropped
                await send(message)

        return await self.app(scope, limited, guarded)


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
            await _error(500, "internal error; the server's log has the details.")(scope, receive, send)


class CountRequests:
    """ASGI middleware: every HTTP answer counted in `metrics` by route template, method and status, with the
    time to its start."""

    def __init__(self, app, routes, metrics: "Metrics"):
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


def create_app(pool: Pool, token: str | None = None, settings: Settings | None = None) -> FastAPI:
    """The FastAPI application serving `pool`; `token` (None: none needed) guards the admin endpoints."""
    settings = settings or Settings()
    app = FastAPI(title="locus serve", docs_url=None, redoc_url=None, openapi_url=None)
    metrics = app.state.metrics = Metrics(pool)
    batcher = app.state.batcher = Batcher(
        pool, settings.batch_queries, settings.batch_wait_ms / 1000, metrics.batch.observe, settings.batch_workers
    )
    proxy = app.state.proxy = Proxy(settings.backends, settings.backend_timeout, metrics)
    app.state.settings = settings

    # plain ASGI middlewares (BaseHTTPMiddleware's task group and streams per request cost more than routing)
    app.add_middleware(InternalErrors)  # added first: the innermost
    app.add_middleware(BodyLimit, limit=lambda: settings.max_body_bytes)
    app.add_middleware(CountRequests, routes=app.router, metrics=metrics)  # the outermost: counts the 413s too

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
            "calibration": pool.calibration.kind if pool.calibration is not None else None,
            "encoder_precision": pool.encoder_precision,
            "encoder_compiled": pool.compile_encoder,
        }

    @app.get("/metrics")
    def prometheus_metrics():
        return metrics.render()

    @app.get("/v1/models")
    def list_models():
        return {"models": pool.models()}

    async def routed(queries, models, top_k):
        rankings = await batcher.route(queries, models, top_k)
        metrics.queries.inc(len(rankings))
        for r in rankings:
            metrics.routed.labels(r.models[0][1]).inc()
        return rankings

    @app.post("/v1/route")
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

    @app.post("/v1/models", status_code=201, dependencies=[Depends(admin)])
    def add_model(body: AddModelRequest):
        name = check_name(body.name)
        prompts, scores = check_evaluations(body.evaluations, settings.max_prompt_chars)
        return pool.add(name, prompts, scores, body.replace)

    @app.post("/v1/chat/completions")
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
        if model == settings.chat_alias:
            text = last_user_text(body.get("messages"))
            check_lengths([text], "messages", settings.max_prompt_chars, " (the last user message)")
            present = {m["name"] for m in pool.models()}
            served = [n for n in settings.backends if n in present]
            if not served:
                raise ServiceError(503, "no model of the pool has a backend; start locus serve with --backends FILE.")
            (ranking,) = await routed([text], served, 1)
            _, name, p = ranking.models[0]
            locus = {"model": name, "p_correct": p}
        elif model in settings.backends and any(m["name"] == model for m in pool.models()):
            last_user_text(body.get("messages"))  # the same checks as a routed request
            name, locus = model, {"model": model, "p_correct": None}
        else:
            raise ServiceError(
                404,
                f"model {model[:200]!r}: neither {settings.chat_alias!r} (routed) nor a model with a backend "
                f"({len(settings.backends)} configured: --backends).",
            )
        return await proxy.forward(settings.backends[name], body, locus)

    @app.delete("/v1/models/{name:path}", dependencies=[Depends(admin)])
    def delete_model(name: str):
        return pool.delete(name)

    return app


def make_server(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info"):
    """A uvicorn server for `app` (``.run()`` serves until interrupted; tests run it in a thread)."""
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="off"))


def load(
    run: Path,
    pool_dir: Path | None = None,
    precision: str | None = None,
    data: Path | None = None,
    encodings: Path | None = None,
    encoder_precision: str = "float32",
    compile_encoder: bool = False,
) -> Pool:
    """The run directory `run` loaded once, with the models added earlier in `pool_dir` and the stored
    encodings of its data set (`data` + `encodings`; by default the run's own where both exist, else none);
    queries encoded in `encoder_precision`, by a compiled encoder if `compile_encoder`."""
    from locus import run_artifacts as ra

    checkpoint = ra.load_checkpoint(run)
    inference.set_precision(checkpoint, precision, run)
    stored = None
    if not hasattr(checkpoint.method, "embed"):
        pass  # only adding a model uses them
    elif data is not None or encodings is not None:
        default_data, default_enc = default_data_paths(checkpoint)
        data, encodings = data or default_data, encodings or default_enc
        if data is None or encodings is None:
            missing = "--data" if data is None else "--encodings"
            raise DataError(f"{missing}: the run {run} records none that exists here; give {missing} as well.")
        stored = load_stored(checkpoint, data, encodings)
    else:
        data, encodings = default_data_paths(checkpoint)
        if data is not None and encodings is not None and encodings.is_file():
            stored = load_stored(checkpoint, data, encodings)
    if encoder_precision == "bfloat16" and not native_bfloat16():
        log.warning("locus serve: this CPU has no bfloat16 in hardware; --encoder-precision bfloat16 will be slow")
    calibration = ra.read_calibration(run)
    return Pool(checkpoint, pool_dir, stored, calibration, encoder_precision, compile_encoder)
