"""Active onboarding (``locus onboard``): which queries to evaluate a new model on before embedding it.

A selector is ``select(candidates, k, context) -> k distinct prompt ids, in evaluation order``, deterministic
for ``context.seed``. It sees the candidates' encodings, benchmarks and POOL information only (the run's
models' correctness on the candidates, or their predicted probabilities where not evaluated); the new
model's answers enter only through ``context.answers`` (already evaluated) and ``context.oracle`` (the
simulated evaluation of the experiment, asked only about the queries a selector has chosen):

- ``random``: a seeded draw (the onboarding experiment's behaviour);
- ``stratified``: round-robin over the benchmarks (seeded order), random within each;
- ``anchor``: tinyBenchmarks' anchor points: KMeans of the pool's correctness patterns into k clusters, the
  member nearest each centroid, largest clusters first;
- ``disagreement`` / ``uncertainty`` (sequential): a stratified warm start, then batches of the queries on
  which the pool models nearest the current embedding disagree most / whose predicted probability for the
  new model is closest to 0.5, the model re-embedded after each batch.

The stopping rule (:func:`stopping_check`): the routing decisions (argmax over the pool + the new model) on a
reference set changed for at most ε of its queries between the last two embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from locus.constants import ONBOARD_SELECTORS as SELECTORS
from locus.errors import ConfigError, DataError

SEQUENTIAL = ("disagreement", "uncertainty")
_KEY = {name: i for i, name in enumerate(SELECTORS)}  # keeps the selectors' seeded draws independent


@dataclass
class Context:
    """What a selector may see; rows of the arrays follow the candidates."""

    vectors: np.ndarray | None = None  # [n, d_phi] candidate encodings
    benchmarks: np.ndarray | None = None  # [n] benchmark names (None: one group)
    patterns: np.ndarray | None = None  # [n, M] pool correctness (or predicted p) on the candidates
    method: object | None = None  # a fitted LOCUS method (embed, logits_for_embeddings, model_embeddings)
    seed: int = 0
    answer_vectors: np.ndarray | None = None  # [a, d_phi] queries the new model was evaluated on so far
    answer_scores: np.ndarray | None = None  # [a]
    oracle: Callable[[np.ndarray], np.ndarray] | None = None  # candidate positions -> the new model's scores
    warm: int = 8
    batch: int = 8
    neighbours: int = 8
    trace: list = field(default_factory=list)  # sequential selectors: the embedding after each batch


def check_selector(name: str) -> str:
    if name not in SELECTORS:
        raise ConfigError(f"--selector {name!r}: unknown selector; choose one of {', '.join(SELECTORS)}.")
    return name


def check_budget(k: int, n: int, where: str = "candidates") -> int:
    if int(k) < 1:
        raise ConfigError(f"--budget {k}: give at least 1 evaluation.")
    if int(k) > n:
        raise ConfigError(f"--budget {k}: larger than the {n} {where}; lower it or give more candidates.")
    return int(k)


def select(name: str, candidates, k: int, context: Context) -> np.ndarray:
    """`k` distinct prompt ids of `candidates` chosen by selector `name`, in evaluation order."""
    candidates = np.asarray(candidates, dtype=np.int64)
    if len(np.unique(candidates)) != len(candidates):
        raise DataError("onboard: candidate prompt ids must be distinct.")
    check_budget(k, len(candidates))
    positions = {
        "random": _random,
        "stratified": _stratified,
        "anchor": _anchor,
        "disagreement": _sequential,
        "uncertainty": _sequential,
    }[check_selector(name)](name, len(candidates), int(k), context)
    positions = np.asarray(positions, dtype=np.int64)
    assert len(positions) == k and len(np.unique(positions)) == k
    return candidates[positions]


def _rng(context: Context, name: str, *keys) -> np.random.Generator:
    return np.random.default_rng([int(context.seed), _KEY[name], *map(int, keys)])


def _random(name, n, k, context):
    return _rng(context, name).permutation(n)[:k]


def _stratified(name, n, k, context):
    rng = _rng(context, "stratified")
    groups = np.zeros(n, dtype=object) if context.benchmarks is None else np.asarray(context.benchmarks, dtype=object)
    names = sorted({str(g) for g in groups})
    queues = [list(rng.permutation(np.flatnonzero(groups.astype(str) == g))) for g in names]
    queues = [queues[i] for i in rng.permutation(len(queues))]  # which benchmarks come first for k < #benchmarks
    out = []
    while len(out) < k:
        for q in queues:
            if q and len(out) < k:
                out.append(q.pop(0))
    return out


def _anchor(name, n, k, context):
    from sklearn.cluster import KMeans

    if context.patterns is None:
        raise DataError("onboard: the anchor selector needs the pool's correctness patterns of the candidates.")
    x = np.asarray(context.patterns, dtype=np.float64)
    if k == n:
        return np.arange(n)
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # fewer distinct patterns than k: handled below
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = KMeans(n_clusters=k, n_init=3, random_state=int(context.seed)).fit_predict(x)
    anchors = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        centre = x[members].mean(axis=0)
        anchors.append((-len(members), int(members[np.argmin(((x[members] - centre) ** 2).sum(axis=1))])))
    out = [pos for _, pos in sorted(anchors)]
    if len(out) < k:  # fewer distinct patterns than k: fill from a seeded draw of the rest
        rest = [int(i) for i in _rng(context, "anchor", 1).permutation(n) if i not in set(out)]
        out += rest[: k - len(out)]
    return out


def embedding_of(context: Context, vectors: list, scores: list) -> np.ndarray:
    """The new model's embedding from its answers so far; with none, the mean of the pool's embeddings."""
    if not scores:
        return context.method.model_embeddings()[1].mean(axis=0)
    return context.method.embed(np.concatenate(vectors).astype(np.float32), np.concatenate(scores).astype(np.float32))


def _scores(name, context: Context, z: np.ndarray) -> np.ndarray:
    """Per candidate, how much evaluating it should tell (higher first)."""
    if name == "uncertainty":
        logits = context.method.logits_for_embeddings(context.vectors, z[None])[:, 0].astype(np.float64)
        return -np.abs(logits)  # p closest to 0.5
    if context.patterns is None:
        raise DataError("onboard: the disagreement selector needs the pool's correctness patterns of the candidates.")
    _, pool_z = context.method.model_embeddings()
    zn = z / max(float(np.linalg.norm(z)), 1e-12)
    pn = pool_z / np.maximum(np.linalg.norm(pool_z, axis=1, keepdims=True), 1e-12)
    near = np.argsort(-(pn @ zn), kind="stable")[: max(2, int(context.neighbours))]
    return np.asarray(context.patterns, dtype=np.float64)[:, near].var(axis=1)


def _sequential(name, n, k, context: Context):
    if context.method is None or context.vectors is None:
        raise DataError(f"onboard: the {name} selector needs a LOCUS run and the candidates' encodings.")
    vectors, scores = [], []
    if context.answer_scores is not None and len(context.answer_scores):
        vectors.append(np.asarray(context.answer_vectors, np.float32))
        scores.append(np.asarray(context.answer_scores, np.float32))
    tiebreak = np.empty(n, dtype=np.int64)
    tiebreak[_rng(context, name).permutation(n)] = np.arange(n)
    out: list[int] = []

    def evaluate(batch):
        out.extend(int(i) for i in batch)
        if context.oracle is not None:
            vectors.append(np.asarray(context.vectors, np.float32)[batch])
            scores.append(np.asarray(context.oracle(np.asarray(batch)), np.float32))

    if not scores:
        evaluate(np.asarray(_stratified("stratified", n, min(k, max(1, int(context.warm))), context), np.int64))
    while len(out) < k:
        z = embedding_of(context, vectors, scores)
        context.trace.append((len(out), z))
        value = _scores(name, context, z)
        value[out] = -np.inf
        order = np.lexsort((tiebreak, -value))
        evaluate(order[: min(max(1, int(context.batch)), k - len(out))])
    return out


# --------------------------------------------------------------------------------------------------
# pool information and the stopping rule
# --------------------------------------------------------------------------------------------------
def pool_patterns(method, vectors: np.ndarray, pool_scores: np.ndarray | None = None) -> np.ndarray:
    """[n, M] the run's models' correctness on the candidates (columns: the run's model order): the pool's
    evaluations where given (`pool_scores`, NaN = not evaluated), else the run's predicted probability."""
    logits = method.predict_logits(np.asarray(vectors, np.float32)).astype(np.float64)
    p = 1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))
    if pool_scores is not None:
        known = np.isfinite(pool_scores)
        p[known] = pool_scores[known]
    return p


def routing_changes(logits_prev: np.ndarray, logits_now: np.ndarray) -> float:
    """Fraction of reference queries (rows) whose routed model (argmax column) differs."""
    a = np.argmax(logits_prev, axis=1)
    b = np.argmax(logits_now, axis=1)
    return float(np.mean(a != b)) if len(a) else 0.0


def stopping_check(method, ref_vectors: np.ndarray, z_prev, z_now, epsilon: float) -> tuple[float, bool]:
    """(fraction of reference queries whose routing among the pool + the new model changed between the
    embeddings `z_prev` and `z_now`, whether it is <= `epsilon`)."""
    pool = method.predict_logits(np.asarray(ref_vectors, np.float32))
    both = method.logits_for_embeddings(np.asarray(ref_vectors, np.float32), np.stack([z_prev, z_now]))
    frac = routing_changes(np.hstack([pool, both[:, :1]]), np.hstack([pool, both[:, 1:]]))
    return frac, frac <= float(epsilon)


# --------------------------------------------------------------------------------------------------
# `locus onboard`: candidates from a data set or a file, the next prompts, the stopping rule
# --------------------------------------------------------------------------------------------------
def read_candidates(path: Path) -> list[str]:
    """Prompts of a candidate file: a CSV with a ``prompt`` column, else one prompt per line."""
    from locus.errors import require_file
    from locus.inference import read_query_file

    path = Path(path)
    require_file(path, "give a text file with one prompt per line or a CSV with a prompt column.")
    if path.suffix.lower() != ".csv":
        prompts = read_query_file(path)
    else:
        import pandas as pd

        try:
            df = pd.read_csv(path)
        except Exception as exc:  # pandas raises many types
            raise DataError(f"{path}: not a readable CSV file ({exc}).") from exc
        if "prompt" not in df.columns:
            raise DataError(f"{path}: no 'prompt' column; found {list(df.columns)}.")
        empty = df["prompt"].isna() | (df["prompt"].astype(str).str.strip() == "")
        if empty.any():
            rows = (df.index[empty].to_numpy() + 2).tolist()[:5]
            raise DataError(f"{path}: empty prompt in row(s) {rows} (1 = header); fill them in or drop them.")
        prompts = df["prompt"].astype(str).str.strip().tolist()
    if not prompts:
        raise DataError(f"{path}: no prompt; give one prompt per line or a CSV with a prompt column.")
    seen: dict[str, int] = {}
    for i, p in enumerate(prompts):
        if p in seen:
            raise DataError(f"{path}: prompt {p[:60]!r} given twice (entries {seen[p] + 1} and {i + 1}); keep one.")
        seen[p] = i
    return prompts


@dataclass
class Plan:
    prompts: list  # [(prompt id, text)] to evaluate next
    n_answers: int
    budget: int
    changed: float | None = None  # stopping rule: fraction of reference queries re-routed
    stop: bool = False
    reference: int = 0


def plan(
    run,
    budget: int,
    selector: str = "anchor",
    data=None,
    encodings=None,
    candidates=None,
    answers=None,
    batch: int = 8,
    epsilon: float = 0.02,
    seed: int = 0,
) -> Plan:
    """The prompts to evaluate a new model on next with the LOCUS run `run`: from the data set's train split
    (`data`, its `encodings` or the texts encoded with the run's encoder) or a candidate file."""
    from locus import run_artifacts as ra
    from locus.inference import encode_checked, read_score_file

    check_selector(selector)
    if int(budget) < 1:
        raise ConfigError(f"--budget {budget}: give at least 1 evaluation.")
    if int(batch) < 1:
        raise ConfigError(f"--batch {batch}: give at least 1.")
    if not 0 <= float(epsilon) <= 1:
        raise ConfigError(f"--epsilon {epsilon}: a fraction in [0, 1].")
    if (data is None) == (candidates is None):
        raise ConfigError("give exactly one of --data DATA_DIR and --candidates FILE.")
    ckpt = ra.load_checkpoint(run)
    if getattr(ckpt.method, "name", None) != "locus":
        raise DataError(f"{run}: a {ckpt.method.name!r} run; onboarding embeds with a LOCUS run.")
    if candidates is not None:
        texts = read_candidates(candidates)
        ids = np.arange(1, len(texts) + 1, dtype=np.int64)  # line / entry number in the file
        check_budget(budget, len(texts))
        vectors = encode_checked(ckpt, texts, None, str(candidates))
        benchmarks, pool_scores, ref = None, None, vectors
    else:
        texts, ids, vectors, benchmarks, pool_scores, ref = _from_data(ckpt, data, encodings, budget)
    a_prompts, a_scores = ([], np.zeros(0, np.float32)) if answers is None else read_score_file(answers)[:2]
    a_vectors = _answer_vectors(ckpt, a_prompts, texts, vectors, answers) if a_prompts else None
    done = np.isin(np.asarray(texts, dtype=object), np.asarray(a_prompts, dtype=object))
    remaining = max(0, int(budget) - len(a_prompts))
    sequential = selector in SEQUENTIAL
    # static selectors follow one plan of `budget` prompts over all candidates; sequential ones pick among
    # the prompts not yet evaluated, from the answers so far
    keep = ~done if sequential else np.ones(len(ids), bool)
    context = Context(
        vectors=vectors[keep],
        benchmarks=None if benchmarks is None else benchmarks[keep],
        patterns=pool_patterns(ckpt.method, vectors[keep], None if pool_scores is None else pool_scores[keep]),
        method=ckpt.method,
        seed=int(seed),
        answer_vectors=a_vectors if sequential else None,
        answer_scores=a_scores if sequential else None,
        batch=int(batch),
    )
    take = min(remaining, int(batch)) if len(a_prompts) else int(budget)
    if sequential:
        if not len(a_prompts):
            take = min(int(budget), max(1, context.warm))  # the warm start; the rest follows the answers
        take = min(take, int(keep.sum()))
        chosen = select(selector, ids[keep], take, context) if take > 0 else np.zeros(0, np.int64)
    else:
        answered = set(ids[done].tolist())
        chosen = [i for i in select(selector, ids, int(budget), context) if int(i) not in answered][:take]
    text_of = dict(zip(ids.tolist(), texts))
    result = Plan([(int(i), text_of[int(i)]) for i in chosen], len(a_prompts), int(budget), reference=len(ref))
    if len(a_prompts) > int(batch):
        z_prev = ckpt.method.embed(a_vectors[: -int(batch)], a_scores[: -int(batch)])
        z_now = ckpt.method.embed(a_vectors, a_scores)
        result.changed, result.stop = stopping_check(ckpt.method, ref, z_prev, z_now, epsilon)
    return result


def _answer_vectors(ckpt, prompts, texts, vectors, where) -> np.ndarray:
    """Encodings of the answered prompts: the candidates' own where the texts match, the rest encoded."""
    from locus.inference import encode_checked

    row = {t: i for i, t in enumerate(texts)}
    out = np.zeros((len(prompts), vectors.shape[1]), np.float32)
    known = np.array([p in row for p in prompts])
    out[known] = vectors[[row[p] for p in np.asarray(prompts, dtype=object)[known]]]
    if (~known).any():
        out[~known] = encode_checked(ckpt, [p for p, k in zip(prompts, known) if not k], None, str(where))
    return out


def _from_data(ckpt, data_dir, encodings, budget):
    """Train-split candidates of a data set: (texts, ids, vectors, benchmarks, pool scores, reference
    vectors = the val split's)."""
    from locus import run_artifacts as ra
    from locus.data.canonical import pairs_to_matrix, read_dataset
    from locus.inference import encode_checked

    data = read_dataset(data_dir)
    train = data.split_queries("train").sort_values("prompt_id")
    check_budget(budget, len(train), f"training-split queries of {data_dir}")
    val = data.split_queries("val").sort_values("prompt_id")
    if encodings is not None:
        from locus.data.encodings import check_matches, read_encodings

        enc = read_encodings(encodings)
        fingerprint = check_matches(enc, data.queries, str(data_dir))
        ra.check_same_data(
            ckpt.directory,
            ckpt.config.get("data_fingerprint"),
            fingerprint,
            data_dir,
            "give the data set the run was trained on.",
        )
        vectors, ref = enc.take(train["prompt_id"]), enc.take(val["prompt_id"])
    else:
        vectors = encode_checked(ckpt, train["prompt"].tolist(), None, str(data_dir))
        ref = encode_checked(ckpt, val["prompt"].tolist(), None, str(data_dir)) if len(val) else vectors
    if not len(ref):
        ref = vectors
    pool = pairs_to_matrix(data.scores, train["prompt_id"].to_numpy(), ckpt.model_ids)
    ids = train["prompt_id"].to_numpy(np.int64)
    return train["prompt"].astype(str).tolist(), ids, vectors, train["benchmark"].astype(str).to_numpy(), pool, ref
