"""The pool `locus serve` routes over: one loaded run, with the models added to it live (kept in the pool
directory's ``pool.json``, written atomically and tied to the run by its weights' SHA-256), and the stored
encodings of the run's data set that hot-add reuses."""

import json
import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from locus import atomic, inference, weights
from locus.errors import ConfigError, DataError
from locus.provenance import native_bfloat16
from locus.serve.errors import ServiceError

log = logging.getLogger("locus.serve")

ENCODE_BATCH = 16  # texts per encoder forward pass: larger ones pad more and run slower per text on a CPU
PREDICT_BLOCK = 16  # queries per predictor pass (padded): a fixed shape, so batching does not change results
ADD_CHUNK = 4  # texts of an add per encoder pass, between which routing goes first
ADD_YIELD_S = 0.05  # the longest an add's pass waits for routing to pause (under constant load it goes on anyway)
NEAREST = 5  # nearest pool models reported for an added model
POOL_FILE = "pool.json"
POOL_FORMAT = "locus-serve-pool"
POOL_VERSION = 1


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
        self.encoder_precision = encoder_precision  # float32, bfloat16 or int8 (encoders.prepare_query_encoder)
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
        # who has the encoder: routing batches (any number at once) or one chunk of an add
        self.encoder_turn = threading.Condition()
        self.routing, self.waiting, self.adding = 0, 0, False
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
                    422, f"models[{i}]: {item!r} {why}; give ids or full names (GET /v1/pool lists them)."
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
        """The query encoder, loaded on first use (in its precision and compiled as asked) and kept. A compiled one
        runs its first passes here, under the lock, so no request meets a model halfway through compiling."""
        from locus import encoders

        with self.encoder_lock:
            if self.encoder is None:
                encoder = encoders.load_encoder(self.run.encoder)
                # eval mode once (encode_direct does not repeat it per call), weights in the resolved precision
                encoders.prepare_query_encoder(encoder, self.encoder_precision)
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
        raised. A request can fail only itself: a bad model list is its own error, and when a shared pass fails,
        its requests are retried one by one. The encoder runs outside the pool's lock, so the ``Batcher``'s
        workers encode their batches at the same time."""
        out: list = [None] * len(requests)
        candidates = {}
        with self.lock:
            for i, (_, models, _) in enumerate(requests):
                try:
                    candidates[i] = self.resolve(models)
                except ServiceError as exc:
                    out[i] = exc
        valid = [i for i in range(len(requests)) if out[i] is None]
        vectors = self._encode_requests([requests[i][0] for i in valid])
        groups: dict[tuple, list[int]] = {}
        for i, v in zip(valid, vectors):
            if isinstance(v, BaseException):
                out[i] = v
            else:
                groups.setdefault(tuple(candidates[i].tolist()), []).append(i)
        by_request = dict(zip(valid, vectors))
        with self.lock:
            view = self._view()
            for members in groups.values():
                parts = self._group_logits([by_request[i] for i in members], candidates[members[0]])
                for i, part in zip(members, parts):
                    if isinstance(part, BaseException):
                        out[i] = part
                        continue
                    queries, _, top_k = requests[i]
                    probs = None if self.calibration is None else self.calibration.probabilities(part)
                    out[i] = inference.rank(queries, part, candidates[i], view.name, top_k, probs)
        return out

    def _encode_requests(self, batches: list[list[str]]) -> list:
        """Per request its query vectors, from one encoder pass over all; if that pass fails, each request is
        encoded alone, so only the request the encoder cannot take gets the exception."""
        texts = [q for queries in batches for q in queries]
        if not texts:
            return []
        try:
            vectors = self._routing_encode(texts)
        except Exception as exc:
            if len(batches) == 1:
                return [exc]
            log.warning(
                "locus serve: a batch of %d requests failed to encode (%s); retrying them one by one",
                len(batches),
                type(exc).__name__,
            )
            out = []
            for queries in batches:
                try:
                    out.append(self._routing_encode(queries))
                except Exception as one:  # noqa: BLE001  (this request's own failure)
                    out.append(one)
            return out
        offsets = np.cumsum([0] + [len(queries) for queries in batches])
        return [vectors[offsets[k] : offsets[k + 1]] for k in range(len(batches))]

    def _group_logits(self, parts: list[np.ndarray], candidates: np.ndarray) -> list:
        """Logits of each request's vectors over `candidates`, in one predictor pass, else request by request."""
        try:
            logits = self._logits(np.concatenate(parts), candidates)
        except Exception:
            if len(parts) == 1:
                raise
            out = []
            for v in parts:
                try:
                    out.append(self._logits(v, candidates))
                except Exception as one:  # noqa: BLE001  (this request's own failure)
                    out.append(one)
            return out
        offsets = np.cumsum([0] + [len(v) for v in parts])
        return [logits[offsets[k] : offsets[k + 1]] for k in range(len(parts))]

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
        """Embed a new model from its scored prompts and add it to the pool. The encoder and the embedding run
        outside the pool's lock (routing goes on meanwhile); the new pool is checked again and swapped in under
        it, so two adds of one name cannot both land."""
        if not self.can_embed:
            raise ServiceError(
                422, f"the run's method {self.run.method.name!r} cannot embed new models; serve a LOCUS run."
            )
        with self.lock:
            old = self.added.get(name)
            self._check_new_name(name, old, replace_existing)
        vectors, reused = self._prompt_vectors(prompts)
        z = self.run.method.embed(vectors, scores)
        with self.lock:
            if self.added.get(name) is not old:  # another add or delete of this name landed meanwhile
                raise ServiceError(409, f"model {name!r} changed while it was being added; send the request again.")
            if old is None:
                self._check_new_name(name, None, replace_existing)
            model = Added(old.id if old else self.next_id, name, z, len(prompts), float(np.mean(scores)))
            added = {**self.added, name: model}
            next_id = max(self.next_id, model.id + 1)
            persisted = self._save(added, next_id)
            self.added, self.next_id = added, next_id  # one assignment each: readers see the old pool or the new
            view = self._view()
            ids = np.asarray([m for m in view.model_ids if m != model.id], dtype=np.int64)
            near = inference.nearest(z, ids, self._embeddings(ids), NEAREST) if len(ids) else []
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
        encoded = self._encode_behind_routing([prompts[i] for i in new])
        if len(new) == len(prompts):
            return encoded, 0
        vectors = np.empty((len(prompts), encoded.shape[1]), dtype=np.float32)
        vectors[new] = encoded
        old = [i for i, r in enumerate(rows) if r >= 0]
        vectors[old] = self.stored.vectors[[rows[i] for i in old]]
        return vectors, len(old)

    def _encode_behind_routing(self, texts: list[str]) -> np.ndarray:
        """An add's texts, encoded in chunks of ADD_CHUNK, each alone on the encoder: it waits (up to ADD_YIELD_S)
        for the routing batches in flight, and routing batches wait for it. Sharing the cores with an add would
        slow every query for the whole add; this way a query waits for one small chunk at most."""
        out = []
        for start in range(0, len(texts), ADD_CHUNK):
            with self.encoder_turn:
                self.encoder_turn.wait_for(lambda: self.routing == 0 and not self.waiting, timeout=ADD_YIELD_S)
                self.adding = True
            try:
                out.append(self.encode(texts[start : start + ADD_CHUNK], "evaluations"))
            finally:
                with self.encoder_turn:
                    self.adding = False
                    self.encoder_turn.notify_all()
        return np.concatenate(out)

    def _routing_encode(self, texts: list[str]) -> np.ndarray:
        with self.encoder_turn:
            self.waiting += 1  # an add's next chunk waits for it
            self.encoder_turn.wait_for(lambda: not self.adding)
            self.waiting -= 1
            self.routing += 1
        try:
            return self.encode(texts, "route")
        finally:
            with self.encoder_turn:
                self.routing -= 1
                self.encoder_turn.notify_all()

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
                raise ServiceError(404, f"no added model named {name!r} (GET /v1/pool lists the pool).")
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


def load(
    run: Path,
    pool_dir: Path | None = None,
    precision: str | None = None,
    data: Path | None = None,
    encodings: Path | None = None,
    encoder_precision: str = "auto",
    compile_encoder: bool = False,
) -> Pool:
    """The run directory `run` loaded once, with the models added earlier in `pool_dir` and the stored
    encodings of its data set (`data` + `encodings`; by default the run's own where both exist, else none);
    queries encoded in `encoder_precision` ("auto": what this CPU does fast, ``encoders.choose_precision``), by a
    compiled encoder if `compile_encoder`."""
    from locus import encoders
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
    encoder_precision = encoders.resolve_precision(encoder_precision)
    if compile_encoder and encoder_precision == "int8":
        raise ConfigError(
            "--compile with the int8 encoder (what --encoder-precision auto picks on this CPU) runs slower than "
            "without it; leave out --compile, or pass --encoder-precision bfloat16 or float32 with it."
        )
    if encoder_precision == "bfloat16" and not native_bfloat16():
        log.warning("locus serve: this CPU has no bfloat16 in hardware; --encoder-precision bfloat16 will be slow")
    calibration = ra.read_calibration(run)
    return Pool(checkpoint, pool_dir, stored, calibration, encoder_precision, compile_encoder)
