"""Pool statistics (`locus stats`): is routing worth it on this pool of evaluations, and how is it built?

Everything is computed on the **binary correctness matrix** ``C`` [queries x models] of *all* splits:
1 where the score is >= 0.5, 0 below, NaN where the pair was not evaluated; missing pairs are skipped by
every statistic, never read as 0 (:func:`binarize` makes one from scores). :func:`pool_statistics`
runs them all on an :class:`~locus.data.canonical.EvalData`, :func:`format_stats` renders Markdown:

1. disagreement of two models (:func:`pairwise_disagreement`, :func:`disagreement_summary`);
2. shared-difficulty share (:func:`shared_difficulty_share`);
3. PC1 share (:func:`pc1_share`);
4. accuracy spread over models (:func:`accuracy_sd`);
5. nearest-neighbour agreement (:func:`nn_agreement`);
6. routing references per split: oracle, best single model, headroom, random, contested (:func:`routing_references`);
7. per-benchmark spread (:func:`benchmark_spread`);
8. the closest model pairs (:func:`closest_pairs`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from locus.data.canonical import EvalData

THRESHOLD = 0.5
PARTS = ("val", "test", "all")
TOP_PAIRS = 10


# ----------------------------------------------------------------------------------------------
# matrices
# ----------------------------------------------------------------------------------------------
def binarize(scores: np.ndarray, threshold: float = THRESHOLD) -> np.ndarray:
    """Correctness matrix: 1.0 where score >= threshold, 0.0 below, NaN where not evaluated."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.where(np.isnan(scores), np.nan, (scores >= threshold).astype(np.float64))


def _parts(correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(evaluated mask as float, correctness with 0 where not evaluated)."""
    evaluated = ~np.isnan(correct)
    return evaluated.astype(np.float64), np.where(evaluated, correct, 0.0)


def _ratio(num, den):
    """num / den elementwise, NaN where den == 0 (no warning)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def pairwise_disagreement(correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distance [M x M], common [M x M]): normalised Hamming distance of every two models on the
    queries both were evaluated on, and the number of those queries. Vectorised with the evaluated
    masks: ``common = E^T E`` and ``differ = Y^T (E - Y) + (E - Y)^T Y`` (Y = correctness, 0 where not
    evaluated). The distance is NaN for pairs without a common query."""
    e, y = _parts(correct)
    wrong = e - y
    common = e.T @ e
    differ = y.T @ wrong
    differ = differ + differ.T
    return _ratio(differ, common), np.rint(common).astype(np.int64)


def _pair_values(distance: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(distance.shape[0], 1)
    return distance[iu]


def disagreement_summary(distance: np.ndarray) -> dict:
    """Mean and 5th / 95th percentiles of the distance over the ``M (M - 1) / 2`` unordered model
    pairs with a defined distance (``numpy.percentile``, linear interpolation)."""
    values = _pair_values(distance)
    defined = values[~np.isnan(values)]
    out = {
        "pairs": int(len(defined)),
        "pairs_without_common_queries": int(len(values) - len(defined)),
        "mean": math.nan,
        "p05": math.nan,
        "p95": math.nan,
        "reason": None,
    }
    if len(defined) == 0:
        out["reason"] = "fewer than two models" if len(values) == 0 else "no two models share an evaluated query"
        return out
    p05, p95 = np.percentile(defined, [5, 95])
    out.update(mean=float(defined.mean()), p05=float(p05), p95=float(p95))
    return out


def nn_agreement(distance: np.ndarray) -> dict:
    """Mean over models of 1 - (distance to the most similar other model); models without any
    defined distance are left out."""
    d = np.array(distance, dtype=np.float64)
    np.fill_diagonal(d, np.nan)
    has = ~np.all(np.isnan(d), axis=1)
    if not has.any():
        return {"value": math.nan, "models": 0, "reason": "no model shares an evaluated query with another"}
    nearest = np.nanmin(d[has], axis=1)
    return {"value": float(np.mean(1.0 - nearest)), "models": int(has.sum()), "reason": None}


def shared_difficulty_share(correct: np.ndarray) -> dict:
    """The share of the variance of correctness that is per-query difficulty common to all models:
    between-query sum of squares over the total sum of squares (eta squared of the query factor),
    ``sum_q n_q (m_q - g)^2 / sum_{evaluated (q, m)} (C[q, m] - g)^2`` (``n_q`` models evaluated on q,
    ``m_q`` their mean correctness on q, ``g`` the mean of all evaluated cells), over the queries evaluated
    by at least two models (a query answered by one model has no spread between models and would count as
    pure difficulty). On a complete matrix it equals ``Var(query means) / Var(all cells)``."""
    e, y = _parts(correct)
    n_q = e.sum(axis=1)
    rows = n_q >= 2
    out = {"value": math.nan, "queries": int(rows.sum()), "reason": None}
    if not rows.any():
        out["reason"] = "no query was evaluated by two or more models"
        return out
    e, y, n_q = e[rows], y[rows], n_q[rows]
    grand = y.sum() / e.sum()
    query_mean = y.sum(axis=1) / n_q
    between = float(np.sum(n_q * (query_mean - grand) ** 2))
    total = float(np.sum(e * (y - grand) ** 2))
    if total <= 0:
        out["reason"] = "every evaluated answer has the same correctness (no variance)"
        return out
    out["value"] = between / total
    return out


def pc1_share(correct: np.ndarray) -> dict:
    """Explained-variance ratio of PC1, ``lambda_1 / sum_k lambda_k`` for the eigenvalues of ``Xc^T Xc``,
    where ``Xc`` is the dense part (the queries evaluated by every model) with each model's column mean
    subtracted. NaN, with a reason, with fewer than two such queries, fewer than two models, or no variance."""
    dense = ~np.isnan(correct).any(axis=1)
    out = {"value": math.nan, "dense_queries": int(dense.sum()), "reason": None}
    if correct.shape[1] < 2:
        out["reason"] = "fewer than two models"
    elif dense.sum() < 2:
        n = int(dense.sum())
        out["reason"] = f"{'only one query was' if n else 'no query was'} evaluated by every model (needs 2)"
    if out["reason"]:
        return out
    x = correct[dense]
    x = x - x.mean(axis=0)
    eig = np.linalg.eigvalsh(x.T @ x)  # ascending; = squared singular values of x
    total = float(np.clip(eig, 0.0, None).sum())
    if total <= 0:
        out["reason"] = "no variance among the queries evaluated by every model"
        return out
    out["value"] = float(eig[-1] / total)
    return out


def model_accuracy(correct: np.ndarray) -> np.ndarray:
    """Per-model accuracy over the queries it was evaluated on (NaN for a model without any)."""
    e, y = _parts(correct)
    return _ratio(y.sum(axis=0), e.sum(axis=0))


def accuracy_sd(correct: np.ndarray) -> dict:
    """Population standard deviation (ddof = 0) of the per-model accuracies."""
    acc = model_accuracy(correct)
    acc = acc[~np.isnan(acc)]
    if len(acc) == 0:
        return {"value": math.nan, "models": 0, "reason": "no evaluated pair"}
    return {"value": float(acc.std()), "models": int(len(acc)), "reason": None}


def routing_references(correct: np.ndarray, names) -> dict:
    """Oracle, best single model (in-sample), headroom, random routing and contested share.

    ``oracle`` = mean over queries of the best correctness of any evaluated model; ``best_single`` = the
    highest per-model accuracy on that part (in-sample, ties to the first model; the routing tables choose
    it on validation instead), with its name; ``headroom`` = oracle - best_single; ``random`` = mean over
    queries of the mean correctness of the models evaluated on it; ``contested`` = share of queries on which
    at least one evaluated model is right and one is wrong. With missing pairs each model's accuracy is over
    its own queries, so a model evaluated only on easy queries can look best and the headroom can be
    negative; on a complete part it is >= 0. Queries without any evaluated model are left out."""
    e, y = _parts(correct)
    n_q = e.sum(axis=1)
    rows = n_q > 0
    out = {
        "queries": int(rows.sum()),
        "oracle": math.nan,
        "best_single": math.nan,
        "best_single_model": None,
        "headroom": math.nan,
        "random": math.nan,
        "contested": math.nan,
    }
    if not rows.any():
        return out
    e, y, n_q = e[rows], y[rows], n_q[rows]
    right = y.sum(axis=1)
    acc = _ratio(y.sum(axis=0), e.sum(axis=0))
    best = int(np.argmax(np.where(np.isnan(acc), -np.inf, acc)))  # ties: the first model
    out.update(
        oracle=float(np.mean(right > 0)),
        best_single=float(acc[best]),
        best_single_model=str(names[best]),
        random=float(np.mean(right / n_q)),
        contested=float(np.mean((right > 0) & (right < n_q))),
    )
    out["headroom"] = out["oracle"] - out["best_single"]
    return out


def benchmark_spread(correct: np.ndarray, benchmarks, names) -> pd.DataFrame:
    """Per benchmark: queries, models evaluated, mean / sd / min / max of the per-model accuracies."""
    benchmarks = np.asarray(benchmarks, dtype=object)
    names = np.asarray(names, dtype=object)
    labels, codes = np.unique(benchmarks, return_inverse=True)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(len(labels)))
    e, y = _parts(correct[order])
    acc = _ratio(np.add.reduceat(y, starts, axis=0), np.add.reduceat(e, starts, axis=0))  # [B x M]
    rows = []
    for b, label in enumerate(labels):
        a = acc[b]
        ok = ~np.isnan(a)
        row = {
            "benchmark": str(label),
            "queries": int(np.sum(codes == b)),
            "models": int(ok.sum()),
            "mean": math.nan,
            "sd": math.nan,
            "min": math.nan,
            "min_model": "",
            "max": math.nan,
            "max_model": "",
        }
        if ok.any():
            lo = int(np.argmin(np.where(ok, a, np.inf)))
            hi = int(np.argmax(np.where(ok, a, -np.inf)))
            row.update(
                mean=float(a[ok].mean()),
                sd=float(a[ok].std()),
                min=float(a[lo]),
                min_model=str(names[lo]),
                max=float(a[hi]),
                max_model=str(names[hi]),
            )
        rows.append(row)
    return pd.DataFrame(
        rows, columns=["benchmark", "queries", "models", "mean", "sd", "min", "min_model", "max", "max_model"]
    )


def closest_pairs(distance: np.ndarray, common: np.ndarray, names, k: int = TOP_PAIRS) -> pd.DataFrame:
    """The k model pairs with the smallest disagreement (ties: model order), NaN distances left out."""
    i, j = np.triu_indices(distance.shape[0], 1)
    d = distance[i, j]
    keep = ~np.isnan(d)
    i, j, d = i[keep], j[keep], d[keep]
    top = np.lexsort((j, i, d))[:k]
    names = np.asarray(names, dtype=object)
    return pd.DataFrame(
        {
            "model_a": names[i[top]].astype(str),
            "model_b": names[j[top]].astype(str),
            "disagreement": d[top].astype(float),
            "common_queries": common[i[top], j[top]].astype(int),
        }
    )


# ----------------------------------------------------------------------------------------------
# the whole report
# ----------------------------------------------------------------------------------------------
def pool_statistics(data: EvalData, threshold: float = THRESHOLD) -> dict:
    """Every statistic of the module's list for one data set, as a dict of plain Python values
    (NaN where a statistic is undefined, with its ``reason``)."""
    queries = data.queries.sort_values("prompt_id").reset_index(drop=True)
    names = data.models["name"].astype(str).to_numpy()
    correct = binarize(data.label_matrix(queries["prompt_id"]), threshold)
    evaluated = ~np.isnan(correct)
    distance, common = pairwise_disagreement(correct)
    split = queries["split"].to_numpy()
    routing = {}
    for part in PARTS:
        rows = np.ones(len(queries), bool) if part == "all" else split == part
        routing[part] = routing_references(correct[rows], names)
    return {
        "basis": {
            "correct_if_score_at_least": threshold,
            "splits": "all (train, val, test)",
            "queries": int(correct.shape[0]),
            "models": int(correct.shape[1]),
            "evaluated_pairs": int(evaluated.sum()),
            "coverage": float(evaluated.mean()) if evaluated.size else math.nan,
            "dense_queries": int(evaluated.all(axis=1).sum()),
        },
        "disagreement": disagreement_summary(distance),
        "shared_difficulty": shared_difficulty_share(correct),
        "pc1": pc1_share(correct),
        "accuracy_sd": accuracy_sd(correct),
        "nn_agreement": nn_agreement(distance),
        "routing": routing,
        "benchmarks": benchmark_spread(correct, queries["benchmark"].to_numpy(), names).to_dict("records"),
        "closest_pairs": closest_pairs(distance, common, names).to_dict("records"),
    }


def to_json(value):
    """The statistics with NaN as None and numpy values as Python values (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ----------------------------------------------------------------------------------------------
# Markdown
# ----------------------------------------------------------------------------------------------
def _fmt(v, digits: int = 3) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        return "n/a" if math.isnan(v) else f"{v:.{digits}f}"
    return str(v)


def _table(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def _value(entry: dict) -> str:
    v = entry["value"]
    return f"n/a ({entry['reason']})" if entry.get("reason") or math.isnan(v) else f"{v:.3f}"


def format_stats(stats: dict, heading: str = "##") -> str:
    """The statistics as Markdown (a section starting with ``{heading} Pool statistics``)."""
    b, dis = stats["basis"], stats["disagreement"]
    sub = heading + "#"
    dis_text = f"n/a ({dis['reason']})" if dis["reason"] else f"{dis['mean']:.3f} [{dis['p05']:.3f}, {dis['p95']:.3f}]"
    if dis["pairs_without_common_queries"]:
        dis_text += f" ({dis['pairs_without_common_queries']} pair(s) without a common query left out)"
    headline = [
        {
            "statistic": "disagreement [p5, p95]",
            "value": dis_text,
            "definition": "normalised Hamming distance of two models on the queries both were evaluated on: "
            f"mean [5th, 95th percentile] over the {dis['pairs']} model pairs",
        },
        {
            "statistic": "nearest-neighbour agreement",
            "value": _value(stats["nn_agreement"]),
            "definition": "mean over models of 1 - distance to the most similar other model",
        },
        {
            "statistic": "shared-difficulty share",
            "value": _value(stats["shared_difficulty"]),
            "definition": "between-query / total sum of squares of correctness (variance of per-query difficulty "
            f"common to all models), {stats['shared_difficulty']['queries']} queries with >= 2 models",
        },
        {
            "statistic": "PC1 share",
            "value": _value(stats["pc1"]),
            "definition": "explained-variance ratio of the first principal component after centring each model, "
            f"on the {stats['pc1']['dense_queries']} queries evaluated by every model",
        },
        {
            "statistic": "accuracy sd",
            "value": _value(stats["accuracy_sd"]),
            "definition": "standard deviation (ddof 0) over models of their accuracy",
        },
    ]
    parts = [
        f"{heading} Pool statistics",
        "",
        f"Binary correctness (score >= {b['correct_if_score_at_least']:g}) over all splits (train, val, test): "
        f"{b['queries']:,} queries x {b['models']} models, {b['evaluated_pairs']:,} evaluated pairs "
        f"({_fmt(100 * b['coverage'], 1)}% of all pairs); {b['dense_queries']:,} queries were evaluated by "
        "every model. Pairs that were not evaluated are skipped, never counted as wrong.",
        "",
        _table(headline, ["statistic", "value", "definition"]),
        "",
        f"{sub} Routing references",
        "",
        "`oracle`: best correctness of any model per query; `best_single`: the best model's accuracy on that "
        "part (chosen on the same part); `headroom` = oracle - best_single; `random`: mean over queries of the "
        "mean correctness of the evaluated models; `contested`: share of queries where some models are right "
        "and some wrong.",
        "",
        _table(
            [{"part": p, **r} for p, r in stats["routing"].items()],
            ["part", "queries", "oracle", "best_single", "best_single_model", "headroom", "random", "contested"],
        ),
        "",
        f"{sub} Accuracy per benchmark (all splits; mean, sd, min and max over models)",
        "",
        _table(
            stats["benchmarks"],
            ["benchmark", "queries", "models", "mean", "sd", "min", "min_model", "max", "max_model"],
        ),
        "",
        f"{sub} Closest model pairs (smallest disagreement)",
        "",
        _table(stats["closest_pairs"], ["model_a", "model_b", "disagreement", "common_queries"]),
        "",
    ]
    return "\n".join(parts)
