"""Nearest neighbours in embedding space as proxies of a model (paper §4.4, ``fig:nearest_neighbor_proxies``)
and as fallbacks of a router (appendix E.2, ``fig:fallback_routing``).

- Neighbour order (:func:`neighbour_order`): every other model by ascending embedding distance (cosine by
  default, as in the paper's text); ties go to the lower model_id, like the ranking ties of
  :mod:`locus.evaluation`.
- Proxies (:func:`proxy_agreement`): the test correctness agreement (1 - disagreement, on common queries)
  of each model with its k-th nearest neighbour, averaged over models; references: a random other model
  (:func:`random_agreement`) and the best possible proxy found with the test labels (:func:`best_agreement`).
- Fallback routing (:func:`fallback_accuracy`): the router's choice for a test query is made unavailable
  and the query goes to that model's k-th nearest neighbour among the models evaluated on it; retention =
  fallback accuracy / the router's own. References: a random other model (:func:`random_fallback`), the
  router's own (k+1)-th choice (:func:`router_fallback`), the best single model chosen on validation and
  a random model (:func:`locus.evaluation.reference_rows`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from locus import evaluation
from locus.errors import ConfigError, DataError
from locus.geometry.distances import disagreement, embedding_distances, load, require_models

# the columns of the two figures' CSVs (the report reads them by these lists: locus.experiments.report)
PROXY_COLUMNS = ["method", "distance", "n_models", "n_queries", "train_size", "curve", "k", "agreement", "std", "n"]
FALLBACK_COLUMNS = [
    "method",
    "distance",
    "n_models",
    "train_size",
    "curve",
    "k",
    "accuracy",
    "retention",
    "n_queries",
    "top_model_share",
]


# ----------------------------------------------------------------------------------------------
# pure functions over arrays
# ----------------------------------------------------------------------------------------------
def neighbour_order(dist) -> np.ndarray:
    """[models x models-1]: per model, the other models' positions by ascending distance (ties: lower
    position first)."""
    d = np.array(dist, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"expected a square distance matrix, got shape {d.shape}")
    if np.isnan(d).any():
        raise DataError("the embedding distances hold NaN; re-run the training rule")
    np.fill_diagonal(d, np.inf)
    order = np.argsort(d, axis=1, kind="stable")
    # the model itself sorts last unless another distance is infinite too: drop it explicitly
    return np.array([row[row != i][: d.shape[0] - 1] for i, row in enumerate(order)], dtype=np.int64)


def kth_neighbour(dist, k: int) -> np.ndarray:
    """Position of each model's k-th nearest other model (k = 1: the nearest)."""
    n = np.asarray(dist).shape[0]
    if not 1 <= k <= n - 1:
        raise ValueError(f"k must be between 1 and {n - 1} for {n} models, got {k}")
    return neighbour_order(dist)[:, k - 1]


def proxy_agreement(order, agreement, ks) -> pd.DataFrame:
    """Per k: mean and std over models of the agreement with the k-th neighbour of `order`, and the
    number of models with a defined agreement.

    Agreement = 1 - :func:`locus.geometry.distances.disagreement` on common queries; models without a common
    query with that neighbour are skipped."""
    agreement = np.asarray(agreement, dtype=np.float64)
    rows = []
    for k in ks:
        values = agreement[np.arange(len(order)), order[:, k - 1]]
        values = values[np.isfinite(values)]
        rows.append(
            {
                "k": int(k),
                "mean": float(values.mean()) if values.size else float("nan"),
                "std": float(values.std(ddof=1)) if values.size > 1 else float("nan"),
                "n": int(values.size),
            }
        )
    return pd.DataFrame(rows)


def random_agreement(agreement) -> float:
    """Expected agreement with a uniformly random other model: the mean over models of each model's
    mean agreement with the others (undefined pairs skipped)."""
    a = np.array(agreement, dtype=np.float64)
    np.fill_diagonal(a, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model without any defined pair: NaN, skipped
        per_model = np.nanmean(a, axis=1)
    return float(np.nanmean(per_model))


def best_agreement(agreement, ks) -> np.ndarray:
    """Per k: the mean over models of the k-th highest agreement with another model (NaN last).
    Found with the test labels: a ceiling, not a method."""
    a = np.array(agreement, dtype=np.float64)
    np.fill_diagonal(a, -np.inf)
    ranked = -np.sort(-np.nan_to_num(a, nan=-np.inf), axis=1)
    out = []
    for k in ks:
        v = ranked[:, k - 1]
        v = v[np.isfinite(v)]
        out.append(float(v.mean()) if v.size else float("nan"))
    return np.asarray(out)


def routed_models(logits, labels) -> tuple[np.ndarray, np.ndarray]:
    """(queries with any label, the top-ranked model of each of them) by :func:`locus.evaluation.ranking`."""
    labels = np.asarray(labels, dtype=np.float64)
    rows = (~np.isnan(labels)).any(axis=1)
    order = evaluation.ranking(np.asarray(logits)[rows], labels[rows])
    return rows, order[:, 0]


def fallback_accuracy(routed, labels, order, ks) -> tuple[np.ndarray, np.ndarray]:
    """(accuracy per k, queries per k): each query of `labels` [queries x models] goes to the k-th nearest
    neighbour (`order`, of :func:`neighbour_order`) of its routed model among the models labelled on it.

    The routed model is the top-scored one (:func:`locus.evaluation.ranking`, the ranking of ``routing_metrics``:
    only models evaluated on the query, ties to the lower model_id). Queries with fewer than k such neighbours
    are left out of that k. Accuracy is the mean score of the chosen model, as routing accuracy is."""
    labels = np.asarray(labels, dtype=np.float64)
    cand = np.asarray(order)[np.asarray(routed)]  # [queries x models-1]
    lab = np.take_along_axis(labels, cand, axis=1)
    valid = ~np.isnan(lab)
    rank = np.cumsum(valid, axis=1)
    acc, n = [], []
    for k in ks:
        hit = valid & (rank == k)
        has = hit.any(axis=1)
        pos = np.argmax(hit, axis=1)
        values = lab[np.arange(len(lab)), pos][has]
        acc.append(float(values.mean()) if values.size else float("nan"))
        n.append(int(has.sum()))
    return np.asarray(acc), np.asarray(n)


def random_fallback(routed, labels) -> float:
    """Expected accuracy when a uniformly random other model (among those labelled on the query) replaces
    the routed one; queries with no other labelled model are skipped."""
    labels = np.array(labels, dtype=np.float64)
    labels[np.arange(len(labels)), np.asarray(routed)] = np.nan
    has = (~np.isnan(labels)).any(axis=1)
    return float(np.mean(np.nanmean(labels[has], axis=1))) if has.any() else float("nan")


def router_fallback(logits, labels, ks) -> tuple[np.ndarray, np.ndarray]:
    """(accuracy per k, queries per k) of the router's own (k+1)-th choice among the labelled models:
    what a router whose scores are available would do instead."""
    labels = np.asarray(labels, dtype=np.float64)
    order = evaluation.ranking(logits, labels)
    ranked = np.take_along_axis(labels, order, axis=1)
    acc, n = [], []
    for k in ks:
        if k >= ranked.shape[1]:
            acc.append(float("nan")), n.append(0)
            continue
        v = ranked[:, k]
        v = v[~np.isnan(v)]
        acc.append(float(v.mean()) if v.size else float("nan"))
        n.append(int(v.size))
    return np.asarray(acc), np.asarray(n)


def neighbour_ks(n_models: int, max_k: int) -> list[int]:
    if max_k < 1:
        raise ConfigError(f"--max-k must be >= 1, got {max_k}")
    return list(range(1, min(max_k, n_models - 1) + 1))


# ----------------------------------------------------------------------------------------------
# the two figures
# ----------------------------------------------------------------------------------------------
def proxies_frame(inputs, max_k: int = 10, metric: str = "cosine") -> pd.DataFrame:
    """Long rows: per method, ``embedding_neighbour`` and ``best_possible`` per k, ``random_other``."""
    rows = []
    for run in inputs.runs:
        require_models(run, 2, "a nearest neighbour")
        ks = neighbour_ks(len(run.model_ids), max_k)
        agreement = 1.0 - disagreement(inputs.correctness(run.model_ids))[0]
        order = neighbour_order(embedding_distances(run.embeddings, metric))
        base = {
            "method": run.method,
            "distance": metric,
            "n_models": len(run.model_ids),
            "n_queries": len(inputs.test_ids),
            "train_size": run.metrics.get("train_size"),
        }
        prox = proxy_agreement(order, agreement, ks)
        for r in prox.itertuples():
            rows.append({**base, "curve": "embedding_neighbour", "k": r.k, "agreement": r.mean, "std": r.std, "n": r.n})
        for k, v in zip(ks, best_agreement(agreement, ks)):
            rows.append({**base, "curve": "best_possible", "k": k, "agreement": v})
        rows.append({**base, "curve": "random_other", "agreement": random_agreement(agreement)})
    frame = pd.DataFrame(rows, columns=PROXY_COLUMNS)
    frame[["k", "n"]] = frame[["k", "n"]].astype("Int64")
    return frame


def fallback_frame(inputs, max_k: int = 10, metric: str = "cosine") -> pd.DataFrame:
    """Long rows: per method, ``embedding_neighbour`` and ``router_choice`` per k; references
    ``original``, ``random_other``, ``best_single``, ``random`` and ``oracle``; each with its retention.
    The ``original`` row (the router itself) carries ``top_model_share``: the share of the test queries it
    routes to its most-chosen model (:func:`locus.evaluation.routing_diversity`)."""
    from locus import run_artifacts as ra

    val_ids = inputs.data.split_queries("val")["prompt_id"].to_numpy(np.int64)
    rows = []
    for run in inputs.runs:
        require_models(run, 2, "a fallback model")
        prompt_ids, model_ids, logits = ra.read_scores(run.run_dir, "test")
        where = Path(run.run_dir) / ra.scores_file("test")
        if not np.array_equal(prompt_ids, inputs.test_ids) or not np.array_equal(model_ids, run.model_ids):
            raise DataError(
                f"{where}: its {len(prompt_ids)} queries x {len(model_ids)} models are not the "
                f"{len(inputs.test_ids)} test queries of {inputs.data_dir} x the run's "
                f"{len(run.model_ids)} embedded models; re-run the training rule"
            )
        labels = inputs.data.label_matrix(inputs.test_ids, model_ids)
        rows_with_label, routed = routed_models(logits, labels)
        labels, logits = labels[rows_with_label], logits[rows_with_label]
        original = float(np.mean(labels[np.arange(len(labels)), routed]))
        recorded = run.metrics["test"].get("overall", {}).get("routing_acc")
        if recorded is not None and abs(float(recorded) - original) > 1e-6:
            raise DataError(
                f"{where}: routing accuracy {original:.6f} on {inputs.data_dir} differs from the "
                f"{float(recorded):.6f} in its metrics.json; the run belongs to another data set or "
                "was altered — re-run the training rule"
            )
        ks = neighbour_ks(len(model_ids), max_k)
        order = neighbour_order(embedding_distances(run.embeddings, metric))
        base = {
            "method": run.method,
            "distance": metric,
            "n_models": len(model_ids),
            "train_size": run.metrics.get("train_size"),
        }

        n_all = len(labels)

        def add(curve, value, k=None, n=n_all, base=base, original=original):
            rows.append(
                {
                    **base,
                    "curve": curve,
                    "k": k,
                    "accuracy": value,
                    "retention": value / original if original > 0 else float("nan"),
                    "n_queries": int(n),
                }
            )

        for k, a, n in zip(ks, *fallback_accuracy(routed, labels, order, ks)):
            add("embedding_neighbour", a, k, n)
        for k, a, n in zip(ks, *router_fallback(logits, labels, ks)):
            add("router_choice", a, k, n)
        refs = evaluation.reference_rows(inputs.data.label_matrix(val_ids, model_ids), labels)
        add("original", original)
        rows[-1]["top_model_share"] = evaluation.routing_diversity(np.bincount(routed, minlength=len(model_ids)))[
            "top_share"
        ]  # the router's routing diversity (legend)
        add("random_other", random_fallback(routed, labels))
        for name in ("best_single", "random", "oracle"):
            add(name, float(refs[name]["overall"]))
    frame = pd.DataFrame(rows, columns=FALLBACK_COLUMNS)
    frame["k"] = frame["k"].astype("Int64")
    return frame


def write(
    kind: str, run_dirs, data_dir, out, max_k: int = 10, metric: str = "cosine", data_label: str | None = None
) -> pd.DataFrame:
    """`kind` ``neighbours`` (proxies) or ``fallback``: the figure (PDF + PNG) and its CSV."""
    from locus.outputs import check_outputs
    from locus.render import geometry as render
    from locus.render import write_csv
    from locus.render.figures import output_paths, save_figure

    paths = output_paths(out)
    check_outputs([paths[k] for k in ("pdf", "png", "csv")])
    inputs = load(run_dirs, data_dir)
    if kind == "neighbours":
        frame = proxies_frame(inputs, max_k, metric)
        fig = render.proxies_figure(frame, inputs.title(data_label))
    elif kind == "fallback":
        frame = fallback_frame(inputs, max_k, metric)
        fig = render.fallback_figure(frame, inputs.title(data_label))
    else:
        raise ConfigError(f"unknown neighbour analysis {kind!r}; choose neighbours or fallback")
    save_figure(fig, paths["pdf"])
    write_csv(frame, paths["csv"])
    return frame


def report_lines(kind: str, frame: pd.DataFrame) -> list[str]:
    lines = []
    for method, part in frame.groupby("method", sort=False):
        curve = part[part["curve"] == "embedding_neighbour"].set_index("k")
        value = "agreement" if kind == "neighbours" else "accuracy"
        first = curve.iloc[0] if len(curve) else None
        text = f"{method}: k=1 {value} {100 * first[value]:.2f}%" if first is not None else f"{method}: no k"
        if kind == "fallback" and first is not None:
            text += f", retention {100 * first['retention']:.1f}%"
        refs = part[part["k"].isna()]
        text += "; " + ", ".join(f"{r.curve} {100 * getattr(r, value):.2f}%" for r in refs.itertuples())
        lines.append(text)
    return lines
