"""Model portfolio selection from the embedding geometry (paper section 4.4, appendix E.3).

Selection sees only the model embeddings ``z_m`` (and, for budgets, each model's parameter count ``c_m`` =
``params_b`` of models.parquet, in billions); test labels enter only the evaluation.

- **Kernel** (eq. ``rbf_kernel``, :func:`rbf_kernel`): ``K(z_i, z_j) = exp(-d(z_i, z_j)^2 / sigma^2)``, ``d``
  the cosine distance (``euclidean`` too), ``sigma`` the median pairwise distance (:func:`median_bandwidth`);
- **Coverage** (eq. ``sum_similarity_objective``, :func:`coverage`): ``J(S) = sum_i max_{s in S} K(z_i, z_s)``;
- **k-center** (:func:`k_center`), **k-medoids** (:func:`k_medoids`, PAM of the ``kmedoids`` package),
  **coverage-greedy** under a parameter budget (:func:`coverage_greedy`), and the random baselines
  (:func:`random_subsets`, :func:`random_feasible_subsets`; seeded);
- :func:`portfolio_routing`: the portfolio routing accuracy of appendix E.3, each test query routed to the
  argmax of the method's predicted scores among the portfolio's models only.

Ties are broken towards the lower position (= lower model id: models are in ascending id order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from locus.errors import ConfigError, DataError

DISTANCES = ("cosine", "euclidean")


# --- kernel and objective ----------------------------------------------------------------------
def pairwise_distances(z: np.ndarray, metric: str = "cosine") -> np.ndarray:
    """[models x models] distances between the rows of `z` (cosine: ``1 - cos``, clipped to [0, 2])."""
    from scipy.spatial.distance import pdist, squareform

    if metric not in DISTANCES:
        raise ConfigError(f"distance {metric!r} is not one of {', '.join(DISTANCES)}")
    z = np.asarray(z, dtype=np.float64)
    zero = np.flatnonzero(~z.any(axis=1))
    if metric == "cosine" and zero.size:
        raise DataError(
            f"model embeddings at rows {zero.tolist()} are all zero: the cosine distance is undefined; "
            "use distance: euclidean or re-train the run"
        )
    return squareform(np.clip(pdist(z, metric), 0.0, 2.0 if metric == "cosine" else None), checks=False)


def median_bandwidth(d: np.ndarray) -> float:
    """The paper's bandwidth: the median of the pairwise distances ``d[i, j]``, ``i < j``. When that median
    is 0 (most embeddings identical) the largest pairwise distance is used, and 1 when every distance is 0
    or the pool has a single model."""
    upper = np.asarray(d, dtype=np.float64)[np.triu_indices(len(d), k=1)]
    if upper.size == 0 or upper.max() <= 0:
        return 1.0
    sigma = float(np.median(upper))
    return sigma if sigma > 0 else float(upper.max())


def rbf_kernel(d: np.ndarray, sigma: float | None = None) -> tuple[np.ndarray, float]:
    """(K = exp(-d^2 / sigma^2), sigma); `sigma` defaults to :func:`median_bandwidth` of `d`."""
    sigma = median_bandwidth(d) if sigma is None else float(sigma)
    if not sigma > 0:
        raise ConfigError(f"kernel bandwidth must be > 0, got {sigma}")
    d = np.asarray(d, dtype=np.float64)
    return np.exp(-((d / sigma) ** 2)), sigma


def embedding_kernel(z: np.ndarray, metric: str = "cosine") -> tuple[np.ndarray, float]:
    """The RBF kernel of the pool's embeddings with the median-distance bandwidth: (K, sigma)."""
    return rbf_kernel(pairwise_distances(z, metric))


def coverage(K: np.ndarray, selected) -> float:
    """``J(S) = sum_i max_{s in S} K[i, s]`` (0 for the empty set), summed over the whole pool (selected
    models included, each covering itself with ``K = 1``)."""
    cols = np.asarray(list(selected), dtype=np.int64)
    return float(np.asarray(K)[:, cols].max(axis=1).sum()) if cols.size else 0.0


def _check_k(k: int, n: int) -> None:
    if not 1 <= int(k) <= n:
        raise ConfigError(f"portfolio size k = {k} must be between 1 and the pool size {n}")


# --- selection ---------------------------------------------------------------------------------
def kernel_medoid(K: np.ndarray) -> int:
    """``argmax_m mean_i K[i, m]`` (lowest position on ties)."""
    return int(np.argmax(np.asarray(K, dtype=np.float64).mean(axis=0)))


def k_center(K: np.ndarray, k: int) -> np.ndarray:
    """Farthest-first in similarity space from the global kernel medoid: k positions in pick order.

    Start from ``argmax_m mean_i K(z_i, z_m)``, then repeatedly add the least-covered model
    ``argmin_m max_{s in S} K(z_m, z_s)``. Incremental: the first k picks are the k-center portfolio."""
    K = np.asarray(K, dtype=np.float64)
    _check_k(k, len(K))
    order = [kernel_medoid(K)]
    best = K[:, order[0]].copy()  # each model's best similarity to the selection
    for _ in range(int(k) - 1):
        masked = best.copy()
        masked[order] = np.inf
        nxt = int(np.argmin(masked))
        order.append(nxt)
        best = np.maximum(best, K[:, nxt])
    return np.asarray(order, dtype=np.int64)


def k_medoids(K: np.ndarray, k: int, init=None, max_iter: int = 100) -> np.ndarray:
    """PAM (``kmedoids.pam``) on ``1 - K`` from `init` (default: the k-center portfolio); k positions.

    Minimising ``sum_i min_s (1 - K)`` maximises ``J``; swaps are made while one improves the objective (at
    most ``max_iter`` rounds), so the result never ends below its initialisation."""
    import kmedoids

    K = np.asarray(K, dtype=np.float64)
    _check_k(k, len(K))
    init = k_center(K, k) if init is None else np.asarray(init, dtype=np.int64)
    if len(init) != k or len(np.unique(init)) != k:
        raise ConfigError(f"k-medoids needs {k} distinct initial medoids, got {list(init)}")
    if k == len(K):
        return np.arange(k, dtype=np.int64)
    diss = np.clip(1.0 - K, 0.0, None)
    np.fill_diagonal(diss, 0.0)
    result = kmedoids.pam(diss, init.copy(), max_iter=int(max_iter))
    return np.asarray(result.medoids, dtype=np.int64)


def coverage_greedy(K: np.ndarray, costs, budget: float) -> np.ndarray:
    """Greedy marginal coverage gain per parameter under ``sum(costs[S]) <= budget``: positions in pick
    order (empty when no model fits). Costs must be > 0.

    Each step adds the affordable model with the largest ``Delta(m | S) / c_m``, ``Delta(m | S) = sum_i
    max(0, K(z_i, z_m) - b_i)``, ``b_i`` = the best similarity of model i to ``S`` (0 for the empty set); it stops
    when no model fits the remaining budget."""
    K = np.asarray(K, dtype=np.float64)
    costs = np.asarray(costs, dtype=np.float64)
    if costs.shape != (len(K),) or not (np.isfinite(costs) & (costs > 0)).all():
        raise ConfigError(f"coverage-greedy needs one cost > 0 per model ({len(K)}), got {costs.tolist()}")
    if budget < 0:
        raise ConfigError(f"parameter budget must be >= 0, got {budget}")
    tol = 1e-9 * max(1.0, float(budget))
    chosen: list[int] = []
    best = np.zeros(len(K))
    remaining = float(budget)
    free = np.ones(len(K), dtype=bool)
    while True:
        feasible = free & (costs <= remaining + tol)
        if not feasible.any():
            break
        gain = np.maximum(K - best[:, None], 0.0).sum(axis=0)  # Delta(m | S) for every m
        ratio = np.where(feasible, gain / costs, -np.inf)
        m = int(np.argmax(ratio))
        chosen.append(m)
        free[m] = False
        remaining -= costs[m]
        best = np.maximum(best, K[:, m])
    return np.asarray(chosen, dtype=np.int64)


def random_subsets(n: int, k: int, trials: int, seed: int) -> np.ndarray:
    """[trials x k] uniform random k-subsets of range(n) (each row sorted), seeded."""
    _check_k(k, n)
    rng = np.random.default_rng(seed)
    return np.stack([np.sort(rng.choice(n, size=int(k), replace=False)) for _ in range(int(trials))])


def random_feasible_subsets(costs, budget: float, trials: int, seed: int) -> list[np.ndarray]:
    """`trials` random maximal subsets under the budget (random order, keep each model that still fits),
    as the greedy also fills its budget."""
    costs = np.asarray(costs, dtype=np.float64)
    rng = np.random.default_rng(seed)
    tol = 1e-9 * max(1.0, float(budget))
    out = []
    for _ in range(int(trials)):
        total, keep = 0.0, []
        for m in rng.permutation(len(costs)):
            if total + costs[m] <= budget + tol:
                keep.append(int(m))
                total += costs[m]
        out.append(np.sort(np.asarray(keep, dtype=np.int64)))
    return out


# --- evaluation --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ranked:
    """Per test query, the position of every model in the order of :func:`locus.evaluation.ranking`
    (descending predicted score, unlabelled models last, ties to the lower position) and in the order of
    descending label (for the oracle), with the labels in each order. A portfolio routes a query to its
    model of smallest position. One extra column (position = number of models, label NaN) pads
    portfolios of unequal sizes."""

    pos_logit: np.ndarray  # [queries x models + 1]
    pos_label: np.ndarray
    label_at_logit: np.ndarray  # [queries x models + 1]: label of the model at each position (NaN: none)
    label_at_label: np.ndarray


def rank(logits: np.ndarray, labels: np.ndarray) -> Ranked:
    from locus.evaluation import ranking

    labels = np.asarray(labels, dtype=np.float64)
    n_q, n_m = labels.shape
    dtype = np.uint16 if n_m < 2**16 - 1 else np.int64
    rows, pad = np.arange(n_q)[:, None], np.full((n_q, 1), np.nan)
    out = []
    for order in (
        ranking(logits, labels),
        np.argsort(np.where(np.isnan(labels), np.inf, -labels), axis=1, kind="stable"),
    ):
        pos = np.full((n_q, n_m + 1), n_m, dtype=dtype)
        pos[rows, order] = np.arange(n_m, dtype=dtype)[None, :]
        out.append((pos, np.hstack([np.take_along_axis(labels, order, 1), pad])))
    return Ranked(out[0][0], out[1][0], out[0][1], out[1][1])


def routing_batch(ranked: Ranked, subsets, top_share: bool = False):
    """Portfolio routing accuracy, oracle (fractions) and routed queries of each portfolio in `subsets`
    (sequences of positions, any sizes); NaN for a portfolio without a labelled test query. Queries
    with no labelled portfolio model are left out (as :func:`locus.evaluation.routing_metrics` does).
    With `top_share`, a fourth array: the share of those queries sent to each portfolio's most-chosen model."""
    n_q, n_m = ranked.pos_logit.shape[0], ranked.pos_logit.shape[1] - 1
    width = max([len(s) for s in subsets] + [1])
    padded = np.full((len(subsets), width), n_m, dtype=np.int64)
    for t, s in enumerate(subsets):
        padded[t, : len(s)] = np.asarray(s, dtype=np.int64)
    step = max(1, int(2e7 // (n_q * width)))  # portfolios per chunk (~20M cells)
    rows = np.arange(n_q)[:, None]
    acc, oracle, count, shares = [], [], [], []
    for i in range(0, len(padded), step):
        cols = padded[i : i + step]
        first = ranked.pos_logit[:, cols]  # [queries x T x width]: each member's position in the query's order
        routed = ranked.label_at_logit[rows, first.min(axis=2)]  # [queries x T]
        best = ranked.label_at_label[rows, ranked.pos_label[:, cols].min(axis=2)]
        has = ~np.isnan(routed)
        n = has.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            acc.append(np.where(has, np.maximum(routed, 0.0), 0.0).sum(axis=0) / n)
            oracle.append(np.where(has, best, 0.0).sum(axis=0) / n)
        count.append(n)
        if top_share:
            chosen = np.take_along_axis(cols[None, :, :], first.argmin(axis=2)[:, :, None], axis=2)[:, :, 0]
            for t in range(cols.shape[0]):
                picks = chosen[has[:, t], t]
                shares.append(np.bincount(picks).max() / picks.size if picks.size else np.nan)
    out = np.concatenate(acc), np.concatenate(oracle), np.concatenate(count)
    return (*out, np.asarray(shares, dtype=np.float64)) if top_share else out


def portfolio_routing(logits: np.ndarray, labels: np.ndarray, selected, ranked: Ranked | None = None) -> dict:
    """Routing restricted to the `selected` positions: {routing_acc, oracle, n_queries} (fractions); the
    same numbers as :func:`locus.evaluation.routing_metrics` on those columns (a test checks it).
    Models without a label for a query are not routed to, and a query with no labelled portfolio model is
    left out, as everywhere in locus."""
    ranked = rank(logits, labels) if ranked is None else ranked
    acc, oracle, n = routing_batch(ranked, [list(selected)])
    return {"routing_acc": float(acc[0]), "oracle": float(oracle[0]), "n_queries": int(n[0])}


# --- inputs: one run directory (+ its canonical data set) --------------------------------------
@dataclass
class PortfolioInputs:
    run_dir: Path
    model_ids: np.ndarray  # ascending
    names: list[str]
    z: np.ndarray  # [models x dim], rows in model_ids order
    logits: np.ndarray | None = None  # [test queries x models] (with data)
    labels: np.ndarray | None = None  # same shape, NaN = not evaluated (with data)
    params_b: np.ndarray | None = None  # [models], NaN = missing (with data and a params_b column)
    val_labels: np.ndarray | None = None  # [validation queries x models] (with data): picks the best single
    _ranked: Ranked | None = None

    def ranked(self) -> Ranked:
        """The test queries' model orders (:func:`rank`), computed once."""
        if self._ranked is None:
            self._ranked = rank(self.logits, self.labels)
        return self._ranked

    def costs(self) -> np.ndarray:
        """params_b as budget costs; DataError naming the models without a usable (> 0) count."""
        where = "models.parquet of the data set"
        if self.params_b is None:
            raise DataError(
                f"{where} has no params_b column (parameters in billions): a parameter budget needs "
                "one per model; add it to the data set (locus data) or select by --k"
            )
        bad = ~(np.isfinite(self.params_b) & (self.params_b > 0))
        if bad.any():
            named = ", ".join(self.names[i] for i in np.flatnonzero(bad)[:10]) + (" ..." if bad.sum() > 10 else "")
            raise DataError(
                f"{where}: params_b is missing or not > 0 for {int(bad.sum())} of {len(bad)} models "
                f"({named}); give every model its parameter count in billions, or select by --k"
            )
        return self.params_b.astype(np.float64)


def load_inputs(run_dir, data_dir=None, split: str = "test") -> PortfolioInputs:
    """Embeddings and model names of an embedding method's run; with `data_dir` (the data set the run was
    trained on: checked by fingerprint and the split's prompt ids) also its `split` scores, the labels and
    params_b."""
    from locus import run_artifacts as ra

    run_dir = Path(run_dir)
    ids, z = ra.read_embeddings(run_dir)
    order = np.argsort(ids)
    ids, z = ids[order].astype(np.int64), z[order]
    config = ra.read_config(run_dir)  # checked to belong to the same run as the embeddings
    names = {int(i): str(n) for i, n in zip(config.get("model_ids") or [], config.get("model_names") or [])}
    out = PortfolioInputs(run_dir=run_dir, model_ids=ids, names=[names.get(int(i), str(i)) for i in ids], z=z)
    if data_dir is None:
        return out
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint

    data = read_dataset(data_dir)
    fingerprint = data_fingerprint(data.queries["prompt_id"], data.queries["prompt"])
    ra.check_same_data(
        run_dir,
        ra.read_metrics(run_dir).get("data_fingerprint"),
        fingerprint,
        data_dir,
        "pass the run's own data set with --data",
    )
    prompt_ids, score_ids, logits = ra.read_scores(run_dir, split)
    split_ids = data.split_queries(split)["prompt_id"].to_numpy(np.int64)
    if not np.array_equal(prompt_ids, split_ids):
        raise DataError(
            f"{run_dir / ra.scores_file(split)}: its {len(prompt_ids)} scored queries are not the "
            f"{len(split_ids)} {split} queries of {data_dir}; pass the run's own data set with --data"
        )
    if not np.array_equal(score_ids, ids):
        raise DataError(
            f"{run_dir}: embeddings.parquet and {ra.scores_file(split)} hold different models "
            f"({len(ids)} vs {len(score_ids)}); re-run the training rule"
        )
    unknown = ids[~np.isin(ids, data.model_ids)]
    if unknown.size:
        raise DataError(
            f"{run_dir}: models {unknown[:10].tolist()} are not in {data_dir}/models.parquet; pass the "
            f"run's own data set with --data"
        )
    models = data.models.set_index("model_id").loc[ids]
    out.logits, out.labels = logits, data.label_matrix(prompt_ids, ids)
    out.val_labels = data.label_matrix(data.split_queries("val")["prompt_id"].to_numpy(np.int64), ids)
    out.params_b = models["params_b"].to_numpy(np.float64) if "params_b" in models.columns else None
    out.names = [names.get(int(i), str(name)) for i, name in zip(ids, models["name"])]  # the run's names first
    return out


# --- the figure's curves -----------------------------------------------------------------------
CURVE_COLUMNS = [
    "panel",
    "method",
    "k",
    "budget_b",
    "n_models",
    "params_b",
    "routing_acc",
    "routing_acc_sd",
    "oracle",
    "oracle_sd",
    "coverage",
    "top_model_share",
    "trials",
    "models",
]


def budget_grid(costs, points: int) -> np.ndarray:
    """`points` budgets (billions) spaced geometrically from the cheapest model to the whole pool."""
    costs = np.asarray(costs, dtype=np.float64)
    return np.unique(np.geomspace(costs.min(), costs.sum(), int(points)))


def _row(inp, K, panel, method, subsets, k=None, budget=None, costs=None, names=True) -> dict:
    """One curve point: mean (± sd over the subsets) routing accuracy and oracle in %."""
    acc, ora, _, shares = routing_batch(inp.ranked(), subsets, top_share=True)
    acc, ora = acc * 100, ora * 100

    def sd(a):
        return float(np.std(a, ddof=1)) if len(a) > 1 else float("nan")

    return {
        "panel": panel,
        "method": method,
        "k": k,
        "budget_b": budget,
        "n_models": float(np.mean([len(s) for s in subsets])),
        "params_b": float(np.mean([costs[s].sum() for s in subsets])) if costs is not None else float("nan"),
        "routing_acc": float(np.mean(acc)),
        "routing_acc_sd": sd(acc),
        "oracle": float(np.mean(ora)),
        "oracle_sd": sd(ora),
        "coverage": float(np.mean([coverage(K, s) for s in subsets])),
        "top_model_share": float(np.nanmean(shares)) if np.isfinite(shares).any() else float("nan"),
        "trials": len(subsets),
        "models": ";".join(inp.names[i] for i in subsets[0]) if names else "",
    }


def _top_share(inp) -> float:
    """Share of the test queries the full-pool router sends to its most-chosen model."""
    from locus import evaluation

    return evaluation.routing_diversity(evaluation.choice_counts(inp.logits, inp.labels))["top_share"]


def curves(
    inp: PortfolioInputs,
    max_k: int | None = None,
    budget_points: int = 30,
    trials: int = 100,
    seed: int = 0,
    metric: str = "cosine",
    max_iter: int = 100,
):
    """(frame of :data:`CURVE_COLUMNS`, summary dict) of the figure: accuracy (%) vs k for k-center,
    k-medoids and random subsets (k = 1..max_k, default the pool); vs budget for coverage-greedy and
    random feasible subsets (skipped, with the reason in the summary, when params_b is incomplete).
    Random trials of point k (budget index b) are seeded with ``[seed, k]`` (``[seed, b]``)."""
    import pandas as pd

    if inp.logits is None:
        raise ConfigError("the portfolio curves need the run's data set (--data) for the test labels")
    n = len(inp.model_ids)
    K, sigma = embedding_kernel(inp.z, metric)
    full = portfolio_routing(inp.logits, inp.labels, range(n), inp.ranked())
    rows = []
    order = k_center(K, n)
    for k in range(1, min(max_k or n, n) + 1):
        rows.append(_row(inp, K, "count", "k-center", [order[:k]], k=k))
        rows.append(_row(inp, K, "count", "k-medoids", [k_medoids(K, k, order[:k], max_iter)], k=k))
        rows.append(_row(inp, K, "count", "random", list(random_subsets(n, k, trials, [seed, k])), k=k, names=False))
    summary = {
        "n_models": n,
        "distance": metric,
        "bandwidth": sigma,
        "trials": trials,
        "seed": seed,
        "full_pool_routing_acc": full["routing_acc"] * 100,
        "full_pool_oracle": full["oracle"] * 100,
        "full_pool_top_model_share": _top_share(inp),
        "n_test_queries": full["n_queries"],
        "budget_panel": "ok",
    }
    if inp.val_labels is not None and inp.val_labels.shape[0]:
        from locus import evaluation

        refs = evaluation.reference_rows(inp.val_labels, inp.labels)
        summary["best_single_routing_acc"] = refs["best_single"]["overall"] * 100  # chosen on val, scored on test
        summary["best_single_model"] = inp.names[int(refs["best_single_position"])]
        summary["best_single_coverage"] = coverage(K, [int(refs["best_single_position"])])
        summary["random_routing_acc"] = refs["random"]["overall"] * 100
    try:
        costs = inp.costs()
    except DataError as exc:
        costs, summary["budget_panel"] = None, str(exc)
    if costs is not None:
        summary["total_params_b"] = float(costs.sum())
        for b, budget in enumerate(budget_grid(costs, budget_points)):
            budget = float(budget)
            greedy = coverage_greedy(K, costs, budget)
            rows.append(_row(inp, K, "budget", "coverage-greedy", [greedy], budget=budget, costs=costs))
            rows.append(
                _row(
                    inp,
                    K,
                    "budget",
                    "random-feasible",
                    random_feasible_subsets(costs, budget, trials, [seed, b]),
                    budget=budget,
                    costs=costs,
                    names=False,
                )
            )
    frame = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    full_row = {
        **{c: None for c in CURVE_COLUMNS},
        "panel": "both",
        "method": "full-pool",
        "n_models": n,
        "params_b": summary.get("total_params_b", float("nan")),
        "routing_acc": summary["full_pool_routing_acc"],
        "oracle": summary["full_pool_oracle"],
        "coverage": float(n),
        "top_model_share": summary["full_pool_top_model_share"],
        "trials": 1,
    }
    extra = [full_row]
    if "best_single_routing_acc" in summary:
        extra.append(
            {
                **{c: None for c in CURVE_COLUMNS},
                "panel": "both",
                "method": "best-single",
                "n_models": 1,
                "routing_acc": summary["best_single_routing_acc"],
                "oracle": summary["best_single_routing_acc"],  # one model: the oracle can only pick it
                "coverage": summary["best_single_coverage"],
                "top_model_share": 1.0,  # every query to the one model
                "trials": 1,
                "models": summary["best_single_model"],
            }
        )
    frame = pd.concat([frame, pd.DataFrame(extra)], ignore_index=True)
    summary.update(_reach(frame, summary["full_pool_routing_acc"]))
    return frame, summary


def _reach(frame, full: float) -> dict:
    """Smallest k / budget at which each selector reaches the full-pool accuracy (and within 1 point)."""
    out = {}
    for method, key in (
        ("k-center", "k"),
        ("k-medoids", "k"),
        ("random", "k"),
        ("coverage-greedy", "budget_b"),
        ("random-feasible", "budget_b"),
    ):
        part = frame[frame["method"] == method].sort_values(key)
        for label, target in (("full", full - 1e-9), ("within_1pt", full - 1.0)):
            hit = part[part["routing_acc"] >= target]
            out[f"{method}_{key}_{label}"] = None if hit.empty else float(hit[key].iloc[0])
    return out


def selection(
    inp: PortfolioInputs,
    method: str,
    k: int | None = None,
    budget_b: float | None = None,
    metric: str = "cosine",
    max_iter: int = 100,
) -> dict:
    """One portfolio (the command line's `--k` / `--budget-b`): positions, names, params and accuracy."""
    n = len(inp.model_ids)
    K, sigma = embedding_kernel(inp.z, metric)
    costs = None
    if budget_b is not None:
        if not np.isfinite(budget_b) or budget_b < 0:
            raise ConfigError(f"--budget-b must be a number >= 0 (billions of parameters), got {budget_b}")
        costs = inp.costs()
        if budget_b < costs.min():
            cheapest = int(np.argmin(costs))
            raise ConfigError(
                f"--budget-b {budget_b:g} is below the cheapest model ({inp.names[cheapest]}, "
                f"{costs[cheapest]:g}B): no model fits; give at least {costs[cheapest]:g}"
            )
        chosen, method = coverage_greedy(K, costs, budget_b), "coverage-greedy"
    else:
        if k is None or not 1 <= k <= n:
            raise ConfigError(f"--k {k} must be between 1 and the run's pool of {n} models; give a smaller --k")
        chosen = k_center(K, k) if method == "k-center" else k_medoids(K, k, max_iter=max_iter)
    out = {
        "method": method,
        "positions": chosen.tolist(),
        "model_ids": inp.model_ids[chosen].tolist(),
        "names": [inp.names[i] for i in chosen],
        "coverage": coverage(K, chosen),
        "bandwidth": sigma,
        "n_pool": n,
    }
    if inp.params_b is not None:
        out["params_b"] = inp.params_b[chosen].tolist()
        out["total_params_b"] = float(np.nansum(inp.params_b[chosen]))
        out["pool_params_b"] = float(np.nansum(inp.params_b))
    if inp.logits is not None:
        out["accuracy"] = portfolio_routing(inp.logits, inp.labels, chosen, inp.ranked())
        out["full_pool"] = portfolio_routing(inp.logits, inp.labels, range(n), inp.ranked())
    return out
