"""The pool `locus serve` routes over: one loaded run, with the models added to it live (kept in the pool
directory's ``pool.json``, written atomically and tied to the run by its weights' SHA-256), and the stored
encodings of the run's data set that hot-add reuses.

A model is added by the run's onboarding method (``--onboarding``): LOCUS's one forward pass (an embedding the
run's decoder scores), or a training-free method of :mod:`locus.onboarding_rivals`, fitted once on the run's pool
(:mod:`locus.onboarding_serving`), whose model gives P(correct) itself. ``pool.json`` keeps each added model's
method and what re-onboards it, so a restart serves it the same way whatever the new ``--onboarding``."""

import base64
import json
import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from locus import atomic, inference, weights
from locus import onboarding_serving as onboarding
from locus.errors import ConfigError, DataError, LocusError
from locus.onboarding_rivals import OnboardedModel, sigmoid
from locus.onboarding_serving import default_data_paths
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
# version 2 holds models of a training-free method; a pool of LOCUS-added models alone stays version 1, which
# an older locus reads too
POOL_VERSIONS = (1, 2)


@dataclass
class Added:
    id: int
    name: str
    z: np.ndarray | None  # float32 [dim]: LOCUS's embedding; None for a training-free method's model
    n_evaluations: int
    mean_score: float
    onboarding: str = onboarding.DEFAULT
    model: OnboardedModel | None = None  # a training-free method's model: P(correct) for any query
    # what re-onboards a training-free method's model: its prompts' data set ids (NO_ID: other texts), their
    # scores and encodings (float32 [n, d]; kept, so a restart needs neither the texts nor the encoder)
    prompt_ids: np.ndarray | None = None
    scores: np.ndarray | None = None
    vectors: np.ndarray | None = None

    def to_json(self) -> dict:
        out = {
            "id": self.id,
            "name": self.name,
            "onboarding": self.onboarding,
            "n_evaluations": self.n_evaluations,
            "mean_score": self.mean_score,
        }
        if self.z is not None:
            out["z"] = [float(v) for v in self.z]
            return out
        vectors = np.ascontiguousarray(self.vectors, dtype="<f4")
        return {
            **out,
            "setting": setting(self.model),
            "prompt_ids": [int(v) for v in self.prompt_ids],
            "scores": [float(v) for v in self.scores],
            "dim": int(vectors.shape[1]),
            "vectors_float32_base64": base64.b64encode(vectors.tobytes()).decode("ascii"),
        }


def setting(model: OnboardedModel | None) -> dict:
    """What a training-free method chose for a model (λ, K, the number of voters)."""
    details = model.details if model is not None else {}
    return {k: details[k] for k in ("lambda", "clusters", "voters") if k in details}


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
        onboarding_method: str = onboarding.DEFAULT,
        run_pool: "onboarding.RunPool | None" = None,
        data_paths: tuple = (None, None),
    ):
        self.run = run
        # how a model is added (locus: the run's forward pass; else a training-free method, fitted on the run's
        # pool once); models reloaded from pool.json keep the method they were added with
        self.onboarding = onboarding.check_method(onboarding_method)
        self._run_pool = run_pool
        self.data_paths = data_paths  # --data, --encodings (None: the run's own) for a pool read when first needed
        self.methods: dict = {}  # fitted training-free methods by name
        self.fit_lock = threading.Lock()
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
                        "onboarding": a.onboarding,
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
                parts = self._group_scores([by_request[i] for i in members], candidates[members[0]])
                for i, part in zip(members, parts):
                    if isinstance(part, BaseException):
                        out[i] = part
                        continue
                    queries, _, top_k = requests[i]
                    key, probs = part
                    out[i] = inference.rank(queries, key, candidates[i], view.name, top_k, probs)
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

    def _group_scores(self, parts: list[np.ndarray], candidates: np.ndarray) -> list:
        """:meth:`_scores` of each request's vectors over `candidates`, in one predictor pass, else request by
        request."""
        try:
            key, probs = self._scores(np.concatenate(parts), candidates)
        except Exception:
            if len(parts) == 1:
                raise
            out = []
            for v in parts:
                try:
                    out.append(self._scores(v, candidates))
                except Exception as one:  # noqa: BLE001  (this request's own failure)
                    out.append(one)
            return out
        offsets = np.cumsum([0] + [len(v) for v in parts])
        cut = [slice(offsets[k], offsets[k + 1]) for k in range(len(parts))]
        return [(key[c], None if probs is None else probs[c]) for c in cut]

    def _scores(self, vectors: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(ranking key, P(correct)) [queries x candidates]. Without a training-free method's model among the
        candidates the key is the logits (P: the run's calibration map, or None: the sigmoid of the key), as
        before such models existed. With one, P(correct) ranks all alike, the run's decoder's for the run's and
        LOCUS-added models and the method's for its models; ties go to the higher logit (a method's: the logit
        of its P), then to the candidate order; the key is then each candidate's place in that order."""
        free = {a.id: a.model for a in self.added.values() if a.model is not None}
        is_free = np.asarray([int(m) in free for m in candidates], dtype=bool)
        if not is_free.any():
            logits = self._logits(vectors, candidates)
            return logits, (None if self.calibration is None else self.calibration.probabilities(logits))
        probs = np.empty((len(vectors), len(candidates)))
        tie = np.empty_like(probs)
        if not is_free.all():
            logits = self._logits(vectors, candidates[~is_free]).astype(np.float64)
            tie[:, ~is_free] = logits
            probs[:, ~is_free] = sigmoid(logits) if self.calibration is None else self.calibration.probabilities(logits)
        for j in np.flatnonzero(is_free):
            p = self._blocks(vectors, free[int(candidates[j])].predict)
            probs[:, j] = p
            clipped = np.clip(p, 1e-12, 1 - 1e-12)
            tie[:, j] = np.log(clipped) - np.log1p(-clipped)
        order = np.lexsort((-tie, -probs))  # per query: by P, then by the logit; stable, so then candidate order
        places = np.broadcast_to(np.arange(len(candidates), 0, -1, dtype=np.float64), probs.shape)
        key = np.empty_like(probs)
        np.put_along_axis(key, order, places, axis=1)
        return key, probs

    def _logits(self, vectors: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Logits [queries x candidates] in blocks of PREDICT_BLOCK queries (the last one padded): a matrix
        product's last bits depend on its shape, so a fixed shape makes a query's logits the same alone or
        batched with others, at any position."""
        if self.can_embed and np.isin(candidates, self.run.model_ids).sum() < len(candidates):
            z = self._embeddings(candidates)
            predict = lambda v: self.run.method.logits_for_embeddings(v, z)  # noqa: E731
        else:  # only the run's models: as `locus route`
            predict = lambda v: self.run.method.predict_logits(v, candidates)  # noqa: E731
        return self._blocks(vectors, predict)

    @staticmethod
    def _blocks(vectors: np.ndarray, predict) -> np.ndarray:
        """`predict` of `vectors` in blocks of PREDICT_BLOCK rows, the last one padded with zeros."""
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
        by_id.update({a.id: a.z for a in self.added.values() if a.z is not None})
        return np.stack([by_id[int(m)] for m in ids]).astype(np.float32)

    # ---- training-free onboarding ----------------------------------------------------------------
    def run_pool(self, method: str) -> "onboarding.RunPool":
        """The run's pool (its data set's training scores and encodings), read on first use."""
        if self._run_pool is None:
            data, encodings = onboarding.data_paths(self.run, method, *self.data_paths)
            self._run_pool = onboarding.read_run_pool(self.run, data, encodings)
        return self._run_pool

    def method(self, name: str):
        """The training-free onboarding method `name`, fitted on the run's pool on first use and kept."""
        with self.fit_lock:
            if name not in self.methods:
                self.methods[name] = onboarding.fit_method(name, self.run_pool(name))
            return self.methods[name]

    # ---- adding and deleting ---------------------------------------------------------------------
    def add(self, name: str, prompts: list[str], scores: np.ndarray, replace_existing: bool = False) -> dict:
        """Onboard a new model from its scored prompts by the pool's method and add it. The encoder and the onboarding
        run outside the pool's lock (routing goes on meanwhile); the new pool is checked again and swapped in under
        it, so two adds of one name cannot both land."""
        method = self.onboarding
        if method == onboarding.DEFAULT and not self.can_embed:
            raise ServiceError(
                422,
                f"the run's method {self.run.method.name!r} cannot embed new models; serve a LOCUS run, or start "
                f"locus serve with --onboarding METHOD (a training-free one: {', '.join(onboarding.names()[1:])}).",
            )
        with self.lock:
            old = self.added.get(name)
            self._check_new_name(name, old, replace_existing)
        vectors, reused, prompt_ids = self._prompt_vectors(prompts)
        mean = float(np.mean(scores))
        if method == onboarding.DEFAULT:
            made = dict(z=self.run.method.embed(vectors, scores))
        else:  # fitted at start (load), so this is the onboarding alone
            model = onboarding.onboard_vectors(self.method(method), vectors, scores, prompt_ids)
            made = dict(z=None, model=model, prompt_ids=prompt_ids, scores=np.asarray(scores), vectors=vectors)
        with self.lock:
            if self.added.get(name) is not old:  # another add or delete of this name landed meanwhile
                raise ServiceError(409, f"model {name!r} changed while it was being added; send the request again.")
            if old is None:
                self._check_new_name(name, None, replace_existing)
            model_id = old.id if old else self.next_id
            model = Added(model_id, name, n_evaluations=len(prompts), mean_score=mean, onboarding=method, **made)
            added = {**self.added, name: model}
            next_id = max(self.next_id, model.id + 1)
            persisted = self._save(added, next_id)
            self.added, self.next_id = added, next_id  # one assignment each: readers see the old pool or the new
            return {
                "id": model.id,
                "name": name,
                "added": True,
                "replaced": old is not None,
                "onboarding": method,
                "n_evaluations": model.n_evaluations,
                "reused_encodings": reused,
                "mean_score": model.mean_score,
                "persisted": persisted,
                **self._neighbours(model),
            }

    def _neighbours(self, model: Added) -> dict:
        """What an add answers about the pool models near the new one: LOCUS's nearest by cosine; a
        training-free method has no embedding (``nearest`` is null and ``note`` says so), and kNN on agreement
        names the models that vote for it."""
        view = self._view()
        if model.z is not None:
            embedded = {int(m) for m in self.run_ids} | {a.id for a in self.added.values() if a.z is not None}
            ids = np.asarray([m for m in view.model_ids if m != model.id and int(m) in embedded], dtype=np.int64)
            near = inference.nearest(model.z, ids, self._embeddings(ids), NEAREST) if len(ids) else []
            return {"nearest": [{"id": m, "name": view.name(m), "cosine": s} for m, s in near]}
        out = {
            "nearest": None,
            "note": f"{model.onboarding} gives no model embedding: nearest models by cosine need --onboarding locus",
            "setting": setting(model.model),
        }
        voters = onboarding.voters(model.model, view)
        if voters:
            out["voters"] = [{"id": m, "name": n, "agreement": a} for m, n, a in voters]
        return out

    def _prompt_vectors(self, prompts: list[str]) -> tuple[np.ndarray, int, np.ndarray]:
        """Encodings of `prompts`: the data set's stored ones where the prompt is in it, the encoder's for the
        rest (one pass); how many were reused; and each prompt's data set id (NO_ID for the rest)."""
        rows = [self.stored.rows.get(p, -1) for p in prompts] if self.stored is not None else [-1] * len(prompts)
        ids = np.asarray([self.stored.prompt_ids[r] if r >= 0 else onboarding.NO_ID for r in rows], dtype=np.int64)
        new = [i for i, r in enumerate(rows) if r < 0]
        if not new:
            return self.stored.vectors[rows], len(prompts), ids
        encoded = self._encode_behind_routing([prompts[i] for i in new])
        if len(new) == len(prompts):
            return encoded, 0, ids
        vectors = np.empty((len(prompts), encoded.shape[1]), dtype=np.float32)
        vectors[new] = encoded
        old = [i for i, r in enumerate(rows) if r >= 0]
        vectors[old] = self.stored.vectors[[rows[i] for i in old]]
        return vectors, len(old), ids

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
            "version": 2 if any(a.z is None for a in added.values()) else 1,
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
        if (
            not isinstance(state, dict)
            or state.get("format") != POOL_FORMAT
            or state.get("version") not in POOL_VERSIONS
        ):
            raise DataError(
                f"{path}: not a pool file of `locus serve` (versions {', '.join(map(str, POOL_VERSIONS))}); {fix}."
            )
        if state.get("run_weights_sha256") != self.fingerprint:
            raise DataError(
                f"{path}: its models were embedded with another run ({state.get('run')}); serve that run, or {fix}."
            )
        dim = self.run_z.shape[1] if self.run_z is not None else None
        known = set(self.run.names.values()) | {str(m) for m in self.run.model_ids}
        added = {}
        try:
            for m in state["models"]:
                a = Added(int(m["id"]), str(m["name"]), None, int(m["n_evaluations"]), float(m["mean_score"]))
                a.onboarding = str(m.get("onboarding", onboarding.DEFAULT))  # version 1: LOCUS's
                if a.onboarding not in onboarding.names():
                    raise ValueError(f"model {a.name!r}: unknown onboarding method {a.onboarding!r}")
                if a.onboarding == onboarding.DEFAULT:
                    a.z = np.asarray(m["z"], dtype=np.float32)
                    if dim is None or a.z.shape != (dim,) or not np.isfinite(a.z).all():
                        raise ValueError(f"model {a.name!r}: embedding is not {dim} finite numbers")
                else:
                    a.prompt_ids = np.asarray(m["prompt_ids"], dtype=np.int64)
                    a.scores = np.asarray(m["scores"], dtype=np.float32)
                    raw = base64.b64decode(m["vectors_float32_base64"], validate=True)
                    a.vectors = np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(-1, int(m["dim"]))
                    if not len(a.prompt_ids) == len(a.scores) == len(a.vectors) == a.n_evaluations:
                        raise ValueError(f"model {a.name!r}: its scored prompts do not add up to {a.n_evaluations}")
                if a.name in known or a.name in added or a.id in self.run.model_ids:
                    raise ValueError(f"model {a.name!r} (id {a.id}) repeats a name or id of the pool")
                added[a.name] = a
            next_id = int(state["next_id"])
        except (KeyError, TypeError, ValueError) as exc:  # binascii.Error is a ValueError
            raise DataError(f"{path}: damaged pool file ({exc}); {fix}.") from None
        for a in added.values():
            if a.z is None:
                a.model = self._reonboard(a, path, fix)
        self.added = added
        self.next_id = max([self.next_id, next_id, *(a.id + 1 for a in added.values())])

    def _reonboard(self, a: Added, path: Path, fix: str) -> OnboardedModel:
        """A training-free method's model again from what pool.json kept of it: the method refitted on the run's
        pool (seeded as before) onboards it from the same scored prompts, so it predicts as before."""
        try:
            method = self.method(a.onboarding)
        except LocusError as exc:
            raise DataError(
                f"{path}: model {a.name!r} was added with --onboarding {a.onboarding}, refitted on the run's pool to "
                f"reload it: {exc}"
            ) from None
        try:
            return onboarding.onboard_vectors(method, a.vectors, a.scores, a.prompt_ids)
        except DataError as exc:
            raise DataError(f"{path}: damaged pool file (model {a.name!r}: {exc}); {fix}.") from None


@dataclass
class StoredEncodings:
    rows: dict  # prompt text -> row of `vectors`
    vectors: np.ndarray  # float32 [n, d_phi]
    source: str
    prompt_ids: np.ndarray  # int64 [n]: each row's prompt id in the data set


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
    return stored_encodings(queries, enc, str(encodings))


def stored_encodings(queries, enc, source: str) -> StoredEncodings:
    """Prompt text -> stored encoding, for the `queries` (``prompt_id, prompt``) that `enc` encodes."""
    import pandas as pd

    ids = queries["prompt_id"].to_numpy(np.int64)
    pos = pd.Index(enc.prompt_ids).get_indexer(ids)  # a subset file (--for-train-sizes) lacks some prompts
    have = pos >= 0
    rows: dict[str, int] = {}
    for row, text in enumerate(queries["prompt"].to_numpy()[have]):
        rows.setdefault(str(text), row)
    return StoredEncodings(rows, np.ascontiguousarray(enc.vectors[pos[have]]), source, ids[have])


def load(
    run: Path,
    pool_dir: Path | None = None,
    precision: str | None = None,
    data: Path | None = None,
    encodings: Path | None = None,
    encoder_precision: str = "auto",
    compile_encoder: bool = False,
    onboarding_method: str = onboarding.DEFAULT,
) -> Pool:
    """The run directory `run` loaded once, with the models added earlier in `pool_dir` and the stored
    encodings of its data set (`data` + `encodings`; by default the run's own where both exist, else none);
    queries encoded in `encoder_precision` ("auto": what this CPU does fast, ``encoders.choose_precision``), by a
    compiled encoder if `compile_encoder`. Models are added by `onboarding_method`: LOCUS's forward pass, or a
    training-free method fitted here on the run's pool (which then needs the data set and its encodings)."""
    from locus import encoders
    from locus import run_artifacts as ra

    onboarding.check_method(onboarding_method)
    checkpoint = ra.load_checkpoint(run)
    inference.set_precision(checkpoint, precision, run)
    encoder_precision = encoders.resolve_precision(encoder_precision)
    if compile_encoder and encoder_precision == "int8":
        raise ConfigError(
            "--compile with the int8 encoder (what --encoder-precision auto picks on this CPU) runs slower than "
            "without it; leave out --compile, or pass --encoder-precision bfloat16 or float32 with it."
        )
    if encoder_precision == "bfloat16" and not native_bfloat16():
        log.warning("locus serve: this CPU has no bfloat16 in hardware; --encoder-precision bfloat16 will be slow")
    given = (data, encodings)  # a pool.json model of a training-free method reads the pool from these when needed
    stored = run_pool = None
    if onboarding_method != onboarding.DEFAULT:  # its stored encodings are the pool's
        data, encodings = onboarding.data_paths(checkpoint, onboarding_method, data, encodings)
        run_pool = onboarding.read_run_pool(checkpoint, data, encodings)
        stored = stored_encodings(run_pool.queries, run_pool.encodings, str(encodings))
    elif not hasattr(checkpoint.method, "embed"):
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
    calibration = ra.read_calibration(run)
    pool = Pool(
        checkpoint,
        pool_dir,
        stored,
        calibration,
        encoder_precision,
        compile_encoder,
        onboarding_method,
        run_pool,
        given,
    )
    if onboarding_method != onboarding.DEFAULT:
        pool.method(onboarding_method)  # fitted before serving: a pool it cannot fit on fails here, not on an add
    return pool
