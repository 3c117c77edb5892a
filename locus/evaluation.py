"""Metrics over score matrices, written once for every method.

Inputs are dense matrices over [queries x models]: ``logits`` (float; sigmoid = predicted probability
of a correct answer) and ``labels`` (scores in [0, 1], NaN where the model was not evaluated on the
query). Missing labels are never treated as 0: pairs without a label are left out of correctness
metrics, and routing ranks only the models that have a label for the query.

Definitions (as in the authors' code):
- correctness accuracy: micro mean over labelled pairs of [p >= 0.5] == [y >= 0.5];
- BCE (stable, with soft labels), Brier score, ROC-AUC over labelled pairs (labels binarised at 0.5);
- routing accuracy = hit@1: mean over queries of the score of the top-ranked model;
  hit@k: mean over queries of the best score among the top-k models (for 0/1 labels: "at least one
  of the top k is correct");
- oracle: mean over queries of the best score of any labelled model (the ceiling of hit@k);
- ties in the ranking are broken towards the lower model position (= lower model_id, since columns
  are in ascending model_id order): sorting is stable.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

KS = (1, 3, 5)
EXPECTED = "expected_routing"  # with the generator's truth: mean true P(correct) of the routed model
VALIDATION_METRICS = ("val_routing", "val_acc", "val_bce")  # what `select_by` may name (validation_metrics)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40.0, 40.0)))


def correctness_metrics(logits: np.ndarray, labels: np.ndarray) -> dict:
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    mask = ~np.isnan(labels)
    x, y = logits[mask], labels[mask]
    if x.size == 0:
        return {"n_pairs": 0}
    p = _sigmoid(x)
    y_bin = y >= 0.5
    bce = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))
    try:
        auc = float(roc_auc_score(y_bin, p)) if 0 < y_bin.sum() < y_bin.size else float("nan")
    except ValueError:
        auc = float("nan")
    return {
        "correctness_acc": float(np.mean((p >= 0.5) == y_bin)),
        "bce": float(np.mean(bce)),
        "brier": float(np.mean((p - y) ** 2)),
        "roc_auc": auc,
        "mean_pred": float(np.mean(p)),
        "mean_label": float(np.mean(y)),
        "majority_acc": float(max(np.mean(y_bin), 1 - np.mean(y_bin))),
        "n_pairs": int(x.size),
    }


def ranking(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per query, model positions by descending logit; unlabelled models are ranked last.

    Stable sort: ties go to the lower model position.
    """
    keyed = np.where(np.isnan(labels), np.inf, -np.asarray(logits, dtype=np.float64))
    return np.argsort(keyed, axis=1, kind="stable")


def routing_metrics(logits: np.ndarray, labels: np.ndarray, ks=KS) -> dict:
    labels = np.asarray(labels, dtype=np.float64)
    has_label = (~np.isnan(labels)).any(axis=1)
    logits, labels = np.asarray(logits)[has_label], labels[has_label]
    if labels.shape[0] == 0:
        return {"n_queries": 0}
    order = ranking(logits, labels)
    ranked = np.take_along_axis(np.nan_to_num(labels, nan=-np.inf), order, axis=1)
    out = {}
    for k in ks:
        top = ranked[:, : min(k, ranked.shape[1])]
        out[f"hit@{k}"] = float(np.mean(np.maximum(np.max(top, axis=1), 0.0)))
    out["routing_acc"] = out["hit@1"]
    out["oracle"] = float(np.mean(np.nanmax(labels, axis=1)))
    out["random"] = float(np.mean(np.nanmean(labels, axis=1)))
    out["avg_positive_models"] = float(np.mean(np.nansum(labels >= 0.5, axis=1)))
    out["n_queries"] = int(labels.shape[0])
    return out


def evaluate(logits: np.ndarray, labels: np.ndarray, benchmarks=None) -> dict:
    """All metrics overall and (when `benchmarks` [n_queries] is given) per benchmark."""
    result = {"overall": {**correctness_metrics(logits, labels), **routing_metrics(logits, labels)}}
    if benchmarks is not None:
        benchmarks = np.asarray(benchmarks)
        per = {}
        for b in sorted(set(benchmarks.tolist())):
            rows = benchmarks == b
            per[b] = {**correctness_metrics(logits[rows], labels[rows]), **routing_metrics(logits[rows], labels[rows])}
        result["by_benchmark"] = per
    return result


def validation_metrics(logits: np.ndarray, labels: np.ndarray) -> dict:
    """The values every method selects checkpoints / hyper-parameters by (``select_by``):
    ``val_routing`` (hit@1), ``val_acc`` (correctness accuracy) and ``val_bce``; NaN without labels.

    The same numbers as :func:`correctness_metrics` and :func:`routing_metrics` (tested), without what
    selection does not use (ROC-AUC, a full ranking): LOCUS's `paper` recipe calls it after every step,
    where those would cost more than the training step itself on a GPU."""
    nan = float("nan")
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    mask = ~np.isnan(labels)
    out = {"val_routing": nan, "val_acc": nan, "val_bce": nan}
    if not mask.any():
        return out
    x, y = logits[mask], labels[mask]
    out["val_acc"] = float(np.mean((_sigmoid(x) >= 0.5) == (y >= 0.5)))
    out["val_bce"] = float(np.mean(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))))
    rows = mask.any(axis=1)
    keyed = np.where(mask[rows], -logits[rows], np.inf)  # unlabelled models last, as in `ranking`
    if np.isnan(keyed).any():  # NaN logits: `ranking`'s sort order, not argmin's
        out["val_routing"] = routing_metrics(logits, labels, ks=(1,))["routing_acc"]
    else:  # argmin = the first of the stable sort: ties go to the lower model position
        top = np.argmin(keyed, axis=1)
        out["val_routing"] = float(np.mean(np.maximum(labels[rows][np.arange(len(top)), top], 0.0)))
    return out


def best_single_model(val_labels: np.ndarray) -> int:
    """Position of the model with the highest mean validation score (ties: lower position)."""
    means = np.nanmean(np.where(np.isnan(val_labels), np.nan, val_labels), axis=0)
    means = np.nan_to_num(means, nan=-np.inf)
    return int(np.argmax(means))


def reference_rows(val_labels: np.ndarray, test_labels: np.ndarray, benchmarks=None) -> dict:
    """Routing references on the test split: oracle, random (expected score of a uniform pick) and the
    best single model chosen on validation (never on test)."""
    best = best_single_model(val_labels)
    n_q, n_m = test_labels.shape
    onehot = np.full((n_q, n_m), -1.0)
    onehot[:, best] = 1.0
    single = evaluate(onehot, test_labels, benchmarks)
    constant = evaluate(np.zeros((n_q, n_m)), test_labels, benchmarks)

    def pick(res, key):
        out = {"overall": res["overall"][key]}
        for b, m in res.get("by_benchmark", {}).items():
            out[b] = m[key]
        return out

    return {
        "oracle": pick(single, "oracle"),
        "random": pick(constant, "random"),
        "best_single": pick(single, "routing_acc"),
        "best_single_position": best,
    }


NEAR_CONSTANT_SHARE = 0.90  # a router sending >= 90% of queries to one model is ~ "always pick that model"


def routed_models(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per query, the position of the routed (top-ranked) model, -1 for a query without any label; the
    rules of :func:`ranking` (only labelled models, ties to the lower position)."""
    labels = np.asarray(labels, dtype=np.float64)
    if labels.ndim != 2 or np.shape(logits) != labels.shape:
        raise ValueError(f"logits {np.shape(logits)} and labels {labels.shape} must be matrices of one shape")
    has_label = (~np.isnan(labels)).any(axis=1)
    if labels.shape[1] == 0:
        return np.full(labels.shape[0], -1, dtype=np.int64)
    top = ranking(logits, labels)[:, 0]
    return np.where(has_label, top, -1).astype(np.int64)


def choice_counts(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """How many queries are routed to each model position ([models]; queries without labels left out)."""
    top = routed_models(logits, labels)
    return np.bincount(top[top >= 0], minlength=np.shape(labels)[1]).astype(np.int64)


def routing_diversity(counts) -> dict:
    """Routing diversity of a router from its choice counts per model (:func:`choice_counts`; counts of
    several seeds may be summed): ``top_model`` (position of the most-chosen model, ties to the lower
    position; -1 without queries), ``top_share`` (its share of the routed queries), ``n_models_used``
    (models chosen at least once) and ``entropy`` (Shannon entropy of the choice distribution divided by
    log(number of models): 0 for a constant router, 1 for a uniform one; 0 with a single model).
    RouterEval calls a concentrated choice distribution "classification bias"."""
    counts = np.asarray(counts, dtype=np.float64).reshape(-1)
    total = counts.sum()
    if total <= 0:
        return {"top_model": -1, "top_share": float("nan"), "n_models_used": 0, "entropy": float("nan")}
    p = counts[counts > 0] / total
    h = float(-(p * np.log(p)).sum()) + 0.0  # + 0.0: no -0.0 for a constant router
    return {
        "top_model": int(np.argmax(counts)),
        "top_share": float(counts.max() / total),
        "n_models_used": int((counts > 0).sum()),
        "entropy": h / float(np.log(len(counts))) if len(counts) > 1 else 0.0,
    }
