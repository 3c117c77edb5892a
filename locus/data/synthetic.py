"""A seeded synthetic EmbedLLM-like evaluation pool: the embedded default data set.

**The data are synthetic.** No question text, score or ability here comes from a real evaluation; they
imitate the *shape* of EmbedLLM (112 models x ~36k questions from 10 benchmarks, 0/1 correctness) so that
the whole pipeline runs offline. Real data come through the other adapters.

Queries: the paper's 10 benchmarks, mixed in proportion to EmbedLLM's test split; each query has a *topic*
(an MMLU subject, a GPQA sub-domain, ...) and its text comes from a benchmark-specific template filled with
the topic's vocabulary, names and numbers, so benchmarks and topics are separable by a sentence encoder.
Correctness (parameter ``generator``; the queries are the same for a seed): version 1 is a low-rank
multidimensional IRT model with guessing (:func:`_correctness_v1`); version 2 (:mod:`locus.data.synthetic_v2`)
adds what real pools show and version 1 lacks, calibrated on real pool statistics (docs/data-realism.md).
:func:`build_with_truth` also returns every evaluated pair's true P(correct). Everything is drawn for the
full 112-model pool (``n_models=n`` gives the first ``n`` columns) from independent streams spawned from
``seed``: same seed => identical frames.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locus.data import synthetic_v2
from locus.data import synthetic_vocab as V
from locus.data.canonical import SPLITS
from locus.data.model_pool import load_model_pool
from locus.data.validation import Param, check_params, defaults_of
from locus.errors import ConfigError

PARAMS = {
    "seed": Param(0, "Random seed; the same seed gives identical frames, another seed new draws.", "int", at_least=0),
    "n_queries": Param(
        8000,
        "Total number of queries over all splits (EmbedLLM has ~36k; 8000 is the embedded default); "
        "every split must get at least MIN_SPLIT_QUERIES (see split_sizes).",
        "int",
        at_least=1,
    ),
    "split_fractions": Param(
        [0.8, 0.1, 0.1],
        "Train/val/test fractions (three numbers summing to 1), applied within each benchmark.",
        "float_list",
        above=0,
        length=3,
    ),
    "partial_fraction": Param(
        1.0,
        "Fraction of queries each model is scored on; 1.0 = dense, <1 = a random subset per "
        "model (at least one query in every split), for models evaluated on different queries.",
        "float",
        above=0,
        at_most=1,
    ),
    "n_models": Param(
        112,
        "Number of models, the first n of the 112-model pool (smaller pools for tests).",
        "int",
        at_least=1,
        at_most=112,
    ),
    "specialization": Param(
        1.0,
        "Multiplier of the skill-specific part of every model's ability (tags, family vector, "
        "per-skill noise) relative to its general strength: larger = more specialised models, "
        "more to gain from routing; 1.0 = the generator's base setting.",
        "float",
        at_least=0,
        at_most=10,
    ),
    "generator": Param(
        1,
        "Correctness model: 1 = low-rank multidimensional IRT (the original); 2 = the realistic pool of "
        "locus.data.synthetic_v2 (size/recency trend, lineage and family item effects, idiosyncratic "
        "model x item effects, hidden topics), calibrated on real pool statistics (docs/data-realism.md). "
        "Queries, splits and partial masks are the same in both for a seed.",
        "int",
        at_least=1,
        at_most=2,
    ),
}
DEFAULTS = defaults_of(PARAMS)
PARAM_DOCS = {name: p.doc for name, p in PARAMS.items()}

SKILLS = V.SKILLS

# (share in EmbedLLM's test split, #options or 0 for free-form, target mean accuracy of the pool)
BENCHMARKS = {
    "MMLU": (1178, 4, 0.55),
    "GPQA": (500, 4, 0.28),
    "MedMCQA": (354, 4, 0.45),
    "MathQA": (237, 5, 0.33),
    "ASDiv": (198, 0, 0.75),
    "SocialIQA": (162, 3, 0.55),
    "PIQA": (134, 2, 0.78),
    "GSM8K": (112, 0, 0.33),
    "TruthfulQA": (74, 4, 0.33),
    "LogiQA": (51, 4, 0.32),
}
TARGET_ACCURACY = {b: v[2] for b, v in BENCHMARKS.items()}
NEAR_DUPLICATES = ((5, 39), (62, 71), (6, 87))
MIN_SPLIT_QUERIES = 3  # fewest queries a split may get (see split_sizes)
GENERATORS = (1, 2)  # correctness models (parameter `generator`; 2 = locus.data.synthetic_v2)

# latent-model constants (logit units)
SIZE_SLOPE = 0.2  # per doubling of params_b
GENERAL_SD = 0.25  # per-model general-strength noise
FAMILY_SD = 0.6  # per-family skill vector (families cluster in embedding space)
SKILL_SD = 1.0  # idiosyncratic per-model, per-skill noise (what routing exploits)
DUPLICATE_SD = 0.08  # noise between near-duplicate models
TOPIC_DIFFICULTY_SD = 0.5
ITEM_DIFFICULTY_SD = 2.6  # wide: some items defeat the whole pool, some are solved by all
DISCRIMINATION = 2.0  # median item discrimination
DISCRIMINATION_SD = 0.3  # log-normal
LOADING_JITTER = 0.35  # multiplicative, log-normal, per query and skill
STEP_DIFFICULTY = 0.35  # per visible step of a word problem
GUESS_CONCENTRATION = 0.5  # Beta(a+b): small = many items with a strong shared distractor

FAMILY_QUALITY = {
    "llama_3": 0.8,
    "qwen_1_5": 0.3,
    "yi": 0.6,
    "solar": 0.6,
    "mistral": 0.3,
    "starling": 0.6,
    "openchat": 0.6,
    "zephyr_mistral_based": 0.4,
    "biomistral": 0.2,
    "typhoon_mistral_based": 0.3,
    "mixtral_moe": 0.5,
    "metamath": 0.1,
    "gemma": 0.0,
    "phi": 0.3,
    "deepseek_llm": 0.4,
    "deepseek_math": 0.0,
    "deepseek_coder": -0.3,
    "llama_2": 0.0,
    "vicuna": -0.1,
    "koala": -0.4,
    "nous_hermes": -0.1,
    "tulu": 0.0,
    "wizardlm": 0.0,
    "orca_2": 0.2,
    "code_llama": -0.3,
    "llemma": -0.3,
    "bigcode_octocoder": -0.6,
    "mpt": -0.4,
    "falcon": -0.3,
    "pythia": -1.0,
    "bloom": -1.2,
    "palmyra": -0.8,
    "roleplay_pygmalion": -0.6,
    "llama_guard": -2.0,
}
# family "other_unknown": quality guessed from the base architecture its exact size implies
UNKNOWN_BY_PARAMS = {7.24: 0.6, 34.39: 0.6, 6.74: -0.1, 13.02: -0.1}
TAG_EFFECTS = V.TAG_EFFECTS


# ----------------------------------------------------------------------------------------------
# parameters
# ----------------------------------------------------------------------------------------------
def resolve_params(params: dict | None) -> dict:
    """Defaults overlaid with `params`, type- and range-checked against :data:`PARAMS` (one-line ConfigError
    naming the parameter, the value and what is allowed)."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"synthetic data: unknown parameter(s) {unknown}; allowed: {sorted(DEFAULTS)}.")
    p = {**DEFAULTS, **params}
    check_params("synthetic data", PARAMS, p)
    fr = [float(x) for x in p["split_fractions"]]
    if abs(sum(fr) - 1) > 1e-6:
        raise ConfigError(
            f"synthetic data: split_fractions must be 3 positive numbers (train, val, test) "
            f"summing to 1, got {p['split_fractions']!r}."
        )
    p["split_fractions"] = fr
    p["partial_fraction"] = float(p["partial_fraction"])
    p["specialization"] = float(p["specialization"])
    _check_split_sizes(p)
    return p


validate_params = resolve_params  # the name every adapter module gives its parameter check


def split_sizes(params: dict | None) -> dict:
    """Queries per split, ``{"train": n, "val": n, "test": n}``, for generator `params` (merged with DEFAULTS).

    Cheap (no data is generated) and exactly what :func:`build` produces: each benchmark's share of
    ``n_queries`` is cut by ``split_fractions`` (largest remainders). Raises :class:`ConfigError` when a
    parameter is invalid or a split would get fewer than :data:`MIN_SPLIT_QUERIES` queries.
    """
    p = resolve_params(params)
    return _split_sizes(p["n_queries"], p["split_fractions"])


def _split_counts(n_queries: int, fractions) -> np.ndarray:
    """[benchmarks x splits] query counts: benchmark shares of n_queries, each cut by the split fractions."""
    per_benchmark = _largest_remainder(n_queries, [v[0] for v in BENCHMARKS.values()])
    return np.array([_largest_remainder(int(c), fractions) for c in per_benchmark], dtype=np.int64)


def _split_sizes(n_queries: int, fractions) -> dict:
    return dict(zip(SPLITS, (int(c) for c in _split_counts(n_queries, fractions).sum(axis=0))))


def _check_split_sizes(p: dict) -> None:
    sizes = _split_sizes(p["n_queries"], p["split_fractions"])
    small = [s for s in SPLITS if sizes[s] < MIN_SPLIT_QUERIES]
    if not small:
        return
    need = next(
        (
            n
            for n in range(p["n_queries"] + 1, p["n_queries"] + 200_000)
            if min(_split_sizes(n, p["split_fractions"]).values()) >= MIN_SPLIT_QUERIES
        ),
        None,
    )
    got = ", ".join(f"{s} {n}" for s, n in sizes.items())
    fix = f"raise n_queries to at least {need}" if need else "raise n_queries"
    raise ConfigError(
        f"synthetic data: n_queries={p['n_queries']} with split_fractions {p['split_fractions']} gives {got} "
        f"queries; every split needs at least {MIN_SPLIT_QUERIES} (too small: {', '.join(small)}). "
        f"{fix[0].upper() + fix[1:]}, or raise the fraction of {', '.join(small)}."
    )


def _largest_remainder(total: int, weights) -> np.ndarray:
    """Integer counts summing to `total`, proportional to `weights` (Hamilton's method)."""
    w = np.asarray(weights, dtype=float)
    raw = total * w / w.sum()
    counts = np.floor(raw).astype(int)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts


# ----------------------------------------------------------------------------------------------
# generation
# ----------------------------------------------------------------------------------------------
def build(params: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Generate ``(queries, models, scores)`` in the canonical format (see locus.data.canonical):
    :func:`build_with_truth` without the truth. ``category`` is the finer label EmbedLLM uses:
    ``mmlu_<subject>``, ``gpqa_<subset>_<format>``, else the benchmark name."""
    queries, models, scores, _ = build_with_truth(params)
    return queries, models, scores


def build_with_truth(
    params: dict | None = None, *, constants: dict | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(queries, models, scores, truth)``: the data set of :func:`build` and the generator's truth.

    ``truth`` is a long frame ``prompt_id`` (int64), ``model_id`` (int64), ``p_correct`` (float32): the
    true probability that the model answers the query correctly (its score is a 0/1 draw with it),
    with exactly one row per row of ``scores``, in the same order: only evaluated pairs (with
    ``partial_fraction`` < 1 the pairs masked out have no score and no truth row). Both versions.
    `constants` overrides :data:`locus.data.synthetic_v2.CONSTANTS` (generator 2 only; for
    scripts/calibrate_synthetic.py, never for data sets).
    """
    p = resolve_params(params)
    seq = np.random.SeedSequence(p["seed"])
    streams = [np.random.default_rng(s) for s in seq.spawn(7)]
    r_layout, r_text, r_items, r_models, r_outcomes, r_split, r_partial = streams

    names = list(BENCHMARKS)
    counts = _largest_remainder(p["n_queries"], [BENCHMARKS[b][0] for b in names])
    bench_idx = r_layout.permutation(np.repeat(np.arange(len(names)), counts))
    texts, categories, topic_keys, steps, guess_scale = V.generate_texts([names[i] for i in bench_idx], r_text)

    pool = load_model_pool()
    if p["generator"] == 2:
        n_options = np.array([BENCHMARKS[names[i]][1] for i in bench_idx])
        targets = np.array([TARGET_ACCURACY[nm] for nm in names])
        r_effects = np.random.default_rng(seq.spawn(1)[0])  # child 7: version 2's item-effect stream
        prob, correct = synthetic_v2.correctness(
            bench_idx,
            names,
            topic_keys,
            steps,
            guess_scale,
            n_options,
            targets,
            pool,
            p["specialization"],
            (r_items, r_models, r_outcomes, r_effects),
            constants,
        )
    else:
        prob, correct = _correctness_v1(
            p, bench_idx, names, topic_keys, steps, guess_scale, pool, r_items, r_models, r_outcomes
        )

    split = _assign_splits(bench_idx, p["split_fractions"], r_split)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(len(texts), dtype=np.int64),
            "prompt": texts,
            "benchmark": [names[i] for i in bench_idx],
            "category": categories,
            "split": split,
        }
    )
    n_m = p["n_models"]
    models = pool.iloc[:n_m].reset_index(drop=True)
    evaluated = _evaluation_mask(split, p["partial_fraction"], prob.shape[1], r_partial)[:, :n_m]
    q_idx, m_idx = np.nonzero(evaluated)
    scores = pd.DataFrame(
        {
            "prompt_id": q_idx.astype(np.int64),
            "model_id": models["model_id"].to_numpy()[m_idx],
            "score": correct[q_idx, m_idx].astype(np.float64),
        }
    )
    truth = pd.DataFrame(
        {
            "prompt_id": scores["prompt_id"].to_numpy(),
            "model_id": scores["model_id"].to_numpy(),
            "p_correct": prob[q_idx, m_idx].astype(np.float32),
        }
    )
    return queries, models, scores, truth


def _correctness_v1(p, bench_idx, names, topic_keys, steps, guess_scale, pool, r_items, r_models, r_outcomes):
    """Version 1: ``(p_correct, correct)`` [queries x 112] of the multidimensional IRT model with guessing:
    ``P(correct) = c_q + (1 - c_q) * sigmoid(D_q * (w_q . theta_m - b_q))`` and a Bernoulli draw.

    - ``w_q`` (11 skills: knowledge, stem, math, arithmetic, code, biomed, logic, social, physical,
      truthful, expert) is the query's *topic* loading, jittered per query. Because the topic is
      written into the text, the model-query interaction is visible to an encoder-based router.
    - ``b_q`` = benchmark offset + topic offset + item noise (+ a visible complexity term: more
      numbers / steps in a math word problem make it harder). The benchmark offsets are calibrated
      by bisection so that the pool's mean accuracy hits a plausible target per benchmark
      (:data:`TARGET_ACCURACY`: GPQA near chance, PIQA/ASDiv high, MMLU ~0.55).
    - ``c_q``: guessing floor, Beta-distributed around 1/#options (0 for free-form GSM8K/ASDiv, lower
      for GPQA's generative/chain-of-thought formats). It is shared by all models on the query
      (models that do not know an answer are drawn to the same distractor), so hard items can
      defeat the whole pool and the oracle stays well below 1.
    - ``theta_m`` = general strength (log2 params, family quality, noise) + specialisation-tag
      effects (math/code/biomed/science models better on their skills; safety, roleplay, base
      worse on some) + a family vector shared by a family + idiosyncratic per-skill noise. The
      near-duplicate pairs of the pool (5-39, 62-71, 6-87) share abilities up to small noise and
      the same uniform draws for their Bernoulli outcomes, so they answer almost identically."""
    theta = _abilities(pool, r_models, p["specialization"])  # [112, K]
    W, D, b, c = _items(bench_idx, names, topic_keys, steps, guess_scale, r_items)
    skill = _skill(theta, W)  # [n, 112]
    offsets = _calibrate(skill, D, b, c, bench_idx, names)
    prob = _probability(skill, D, b + offsets[bench_idx], c)
    draws = r_outcomes.random(prob.shape)
    for a, dup in NEAR_DUPLICATES:  # near-duplicates also share their "luck": they answer alike
        draws[:, dup] = draws[:, a]
    return prob, draws < prob


def _abilities(pool: pd.DataFrame, rng: np.random.Generator, specialization: float = 1.0) -> np.ndarray:
    """theta [n_models, K]: general strength + specialization * (tag effects + family vector + per-skill noise)."""
    n, k = len(pool), len(SKILLS)
    quality = np.array(
        [
            FAMILY_QUALITY.get(f, UNKNOWN_BY_PARAMS.get(round(s, 2), 0.0) if f == "other_unknown" else 0.0)
            for f, s in zip(pool["family"], pool["params_b"])
        ]
    )
    general = SIZE_SLOPE * np.log2(pool["params_b"].to_numpy() / 7.0) + quality + rng.normal(0, GENERAL_SD, n)
    tags = np.array(
        [
            sum((V.skill_vector(TAG_EFFECTS[t]) for t in ts.split(";") if t in TAG_EFFECTS), np.zeros(k))
            for ts in pool["tags"]
        ]
    )
    # every "other_unknown" model is its own family
    fam_keys = [f if f != "other_unknown" else f"other_{i}" for i, f in zip(pool["model_id"], pool["family"])]
    uniq = sorted(set(fam_keys))
    fam_vec = rng.normal(0, FAMILY_SD, (len(uniq), k))[[uniq.index(f) for f in fam_keys]]
    theta = general[:, None] + specialization * (tags + fam_vec + rng.normal(0, SKILL_SD, (n, k)))
    for a, dup in NEAR_DUPLICATES:
        theta[dup] = theta[a] + rng.normal(0, DUPLICATE_SD, k)
    return theta


def _items(bench_idx, names, topic_keys, steps, guess_scale, rng):
    """Per-query loadings W [n, K], discrimination D, difficulty b (without benchmark offset), guessing c."""
    n = len(bench_idx)
    keys = V.TOPIC_KEYS  # all topics, so a topic's draws do not depend on n_queries
    index = {key: i for i, key in enumerate(keys)}
    topic_pos = np.array([index[t] for t in topic_keys])
    topic_w = np.array([V.topic_loading(key) for key in keys])
    topic_b = rng.normal(0, TOPIC_DIFFICULTY_SD, len(keys))
    W = topic_w[topic_pos] * np.exp(rng.normal(0, LOADING_JITTER, (n, len(SKILLS))))
    W /= W.sum(axis=1, keepdims=True)
    D = DISCRIMINATION * np.exp(rng.normal(0, DISCRIMINATION_SD, n))
    b = topic_b[topic_pos] + STEP_DIFFICULTY * np.asarray(steps) + rng.normal(0, ITEM_DIFFICULTY_SD, n)
    n_opt = np.array([BENCHMARKS[names[i]][1] for i in bench_idx], dtype=float)
    mean = np.where(n_opt > 0, 1.0 / np.maximum(n_opt, 1), 0.5) * np.asarray(guess_scale)
    draw = rng.beta(np.maximum(mean, 1e-3) * GUESS_CONCENTRATION, np.maximum(1 - mean, 1e-3) * GUESS_CONCENTRATION)
    c = np.where(n_opt > 0, draw, 0.0)
    return W, D, b, c


def _skill(theta, W) -> np.ndarray:
    """w_q . theta_m for all pairs [queries, models]. Summed explicitly over the K skills rather than by
    BLAS matmul: as fast for K = 11, bit-identical across machines and thread counts, and free of the
    multi-threaded BLAS slow-down seen on busy 2-core machines."""
    skill = np.zeros((W.shape[0], theta.shape[0]))
    for j in range(W.shape[1]):
        skill += W[:, j, None] * theta[None, :, j]
    return skill


def _probability(skill, D, b, c) -> np.ndarray:
    """c + (1 - c) * sigmoid(D * (skill - b)), row-wise item parameters."""
    logit = D[:, None] * (skill - b[:, None])
    return c[:, None] + (1 - c[:, None]) / (1 + np.exp(-logit))


def _calibrate(skill, D, b, c, bench_idx, names, per_benchmark: int = 1000, iters: int = 30) -> np.ndarray:
    """Benchmark difficulty offsets (bisection) so the pool's mean accuracy meets TARGET_ACCURACY.

    Uses at most `per_benchmark` queries of each benchmark (the first ones, deterministic). When a
    target is below the guessing floor the offset ends at the interval's edge (accuracy ~ floor).
    """
    sel = np.concatenate([np.flatnonzero(bench_idx == i)[:per_benchmark] for i in range(len(names))])
    bi, skill, D, b, c = bench_idx[sel], skill[sel], D[sel], b[sel], c[sel]
    target = np.array([TARGET_ACCURACY[nm] for nm in names])
    lo, hi = np.full(len(names), -12.0), np.full(len(names), 12.0)
    counts = np.maximum(np.bincount(bi, minlength=len(names)), 1)
    for _ in range(iters):
        mid = (lo + hi) / 2
        acc = _probability(skill, D, b + mid[bi], c).mean(axis=1)
        mean = np.bincount(bi, weights=acc, minlength=len(names)) / counts
        too_easy = mean > target  # raise the difficulty
        lo = np.where(too_easy, mid, lo)
        hi = np.where(too_easy, hi, mid)
    return (lo + hi) / 2


def _assign_splits(bench_idx, fractions, rng) -> np.ndarray:
    """Split labels, stratified by benchmark: benchmark i's queries, in random order, are cut by
    ``_split_counts(n, fractions)[i]`` (the counts :func:`split_sizes` reports)."""
    split = np.empty(len(bench_idx), dtype=object)
    counts = _split_counts(len(bench_idx), fractions)
    for i in np.unique(bench_idx):
        rows = rng.permutation(np.flatnonzero(bench_idx == i))
        split[rows] = np.repeat(np.array(SPLITS, dtype=object), counts[i])
    for s in SPLITS:
        if not (split == s).any():
            raise ConfigError(f"synthetic data: split {s!r} got no queries; raise n_queries or that split's fraction.")
    return split


def _evaluation_mask(split, fraction: float, n_models: int, rng) -> np.ndarray:
    """Boolean [n_queries, n_models]: which pairs are scored (all when fraction == 1).

    Each model gets round(fraction * n_split) (at least 1) random queries of every split.
    """
    n = len(split)
    if fraction >= 1:
        return np.ones((n, n_models), dtype=bool)
    mask = np.zeros((n, n_models), dtype=bool)
    noise = rng.random((n, n_models))
    for s in SPLITS:
        rows = np.flatnonzero(split == s)
        k = max(1, int(round(fraction * len(rows))))
        chosen = np.argpartition(noise[rows], k - 1, axis=0)[:k]  # [k, n_models]
        mask[rows[chosen], np.arange(n_models)[None, :]] = True
    return mask
