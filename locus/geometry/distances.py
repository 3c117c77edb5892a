"""Embedding distance against correctness disagreement (paper §4.3, ``tab:performance_distance_correlation``
and ``fig:performance_distance_correlation``), and the reading of the geometry inputs shared by
:mod:`locus.geometry.families` and :mod:`locus.geometry.neighbours`.

- correctness of a (query, model) pair: the score binarised at 0.5 (:func:`correctness`; NaN = not
  evaluated, never "wrong");
- disagreement of two models: the normalised Hamming distance of their correctness on the test queries
  both were evaluated on (:func:`disagreement`; pairs without a common query are NaN and skipped);
- embedding distances: :func:`scipy.spatial.distance.pdist` (``cosine``, ``euclidean``) over the run's model
  embeddings, built from training evaluations only (the reader refuses a run whose training pairs touch a
  test query);
- correlations over all model pairs: Pearson, Spearman and Kendall's tau-b (:mod:`scipy.stats`), with 95%
  intervals from a paired bootstrap over test queries (:func:`bootstrap_correlations`): percentile where it
  contains the estimate, else BCa where that does, else the percentile interval re-centred on the estimate
  (:func:`interval_with_estimate`);
- the effective dimensionality of each method's model embeddings (:func:`participation_ratio`): a high
  correlation over a nearly one-dimensional embedding says less than it seems;
- the correlation without its most influential models (:func:`without_influential`): a correlation over
  all pairs can rest on a few outlying models, each of which enters M - 1 pairs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.spatial.distance import pdist, squareform

from locus.errors import ConfigError, DataError

CORRELATIONS = ("pearson", "spearman", "kendall")
DISTANCES = ("cosine", "euclidean")
_BATCH = 64  # bootstrap resamples whose query weights are held at once
JACKKNIFE_GROUPS = 200  # groups of test queries left out in turn for BCa's acceleration (cost: one pass each)
INTERVALS = ("percentile", "bca", "recentred")  # the interval types of the correlation table, in order of use
INFLUENTIAL_SHARE = 0.10  # share of models left out by the influence check of the correlation table


# ----------------------------------------------------------------------------------------------
# pure functions over arrays
# ----------------------------------------------------------------------------------------------
def correctness(scores) -> np.ndarray:
    """1.0 where score >= 0.5, 0.0 where < 0.5, NaN where not evaluated."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.where(np.isnan(scores), np.nan, (scores >= 0.5).astype(np.float64))


def disagreement(correct, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """(rate, common) for every model pair of `correct` [queries x models] (1/0/NaN): the (weighted)
    share of the common queries on which the two models' correctness differs, and the (weighted) number
    of common queries. ``rate`` is NaN where two models share no query; its diagonal is 0 where a model
    has any query. `weights` [queries] (e.g. bootstrap counts) default to 1."""
    correct = np.asarray(correct, dtype=np.float64)
    labelled = ~np.isnan(correct)
    right = np.where(labelled, correct, 0.0)
    wrong = labelled - right
    w = np.ones(correct.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    rw = right * w[:, None]
    cross = rw.T @ wrong
    common = (labelled * w[:, None]).T @ labelled
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(common > 0, (cross + cross.T) / np.where(common > 0, common, 1.0), np.nan)
    return rate, common


def participation_ratio(z) -> float:
    """Effective dimensionality of the rows of `z` [models x dim]: the participation ratio
    ``(sum s^2)^2 / sum s^4`` of the singular values s of the column-centred matrix (1 when every model
    lies on one line, the rank when the variance spreads evenly over the rank's directions; NaN when all
    rows are equal)."""
    z = np.asarray(z, dtype=np.float64)
    power = np.linalg.svd(z - z.mean(axis=0), compute_uv=False) ** 2
    total = power.sum()
    if not total > 0:
        return float("nan")
    return float(total**2 / np.sum(power**2))


def embedding_distances(z, metric: str) -> np.ndarray:
    """Square [models x models] distance matrix of the rows of `z` (``cosine`` or ``euclidean``)."""
    if metric not in DISTANCES:
        raise ConfigError(f"unknown distance {metric!r}; choose one of {', '.join(DISTANCES)}")
    z = np.asarray(z, dtype=np.float64)
    if metric == "cosine" and (np.linalg.norm(z, axis=1) == 0).any():
        zero = np.flatnonzero(np.linalg.norm(z, axis=1) == 0)[:5].tolist()
        raise DataError(
            f"embedding row(s) {zero} are all zeros: their cosine distance is undefined; use the "
            "euclidean distance or re-run the training rule"
        )
    return squareform(pdist(z, metric=metric), checks=False)


def upper(square) -> np.ndarray:
    """The pairs i < j of a square matrix, in :func:`scipy.spatial.distance.pdist` order."""
    square = np.asarray(square)
    i, j = np.triu_indices(square.shape[0], 1)
    return square[i, j]


def correlations(x, y) -> dict[str, float]:
    """Pearson, Spearman and Kendall (tau-b) correlation of `x` and `y` over the pairs where both are
    finite; NaN with fewer than 3 such pairs or a constant side."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {c: float("nan") for c in CORRELATIONS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "pearson": float(stats.pearsonr(x, y)[0]),
            "spearman": float(stats.spearmanr(x, y)[0]),
            "kendall": float(stats.kendalltau(x, y)[0]),
        }


def without_influential(x_square, y_square, share: float = INFLUENTIAL_SHARE) -> dict[str, tuple[float, list[int]]]:
    """Per correlation of :data:`CORRELATIONS`: its value over the pairs i < j of two square
    [models x models] matrices after leaving out the ``ceil(share * M)`` models whose single removal lowers
    it most (a model's influence: the full correlation minus the correlation over the pairs without it),
    and the left-out rows' positions, most influential first. NaN and no rows when fewer than 3 would stay."""
    x_square, y_square = np.asarray(x_square, dtype=np.float64), np.asarray(y_square, dtype=np.float64)
    m = x_square.shape[0]
    k = int(np.ceil(share * m))
    if m - k < 3:
        return {c: (float("nan"), []) for c in CORRELATIONS}

    def over(rows):
        sub = np.ix_(rows, rows)
        return correlations(upper(x_square[sub]), upper(y_square[sub]))

    full = over(np.arange(m))
    loo = [over(np.delete(np.arange(m), i)) for i in range(m)]
    result = {}
    for c in CORRELATIONS:
        drop = np.nan_to_num(np.array([full[c] - r[c] for r in loo]), nan=-np.inf)
        left_out = np.argsort(-drop, kind="stable")[:k]
        result[c] = (over(np.setdiff1d(np.arange(m), left_out))[c], [int(i) for i in left_out])
    return result


def bootstrap_weights(n_queries: int, n_resamples: int, seed: int):
    """Batches of [resamples x queries] counts of queries drawn with replacement (seeded)."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_resamples:
        b = min(_BATCH, n_resamples - done)
        draws = rng.integers(0, n_queries, size=(b, n_queries))
        yield np.stack([np.bincount(row, minlength=n_queries) for row in draws]).astype(np.float64)
        done += b


def bootstrap_correlations(correct: dict, distances: dict, n_resamples: int, seed: int) -> dict:
    """{(key, distance): [resamples x len(CORRELATIONS)]} correlations of resampled test queries.

    `correct`: {key: [queries x models] correctness}, every key on the same queries (rows);
    `distances`: {(key, distance): condensed distances of key's models}. Every key sees the very same
    resampled queries (paired).

    The disagreements are recomputed on each resample (the embeddings stay fixed: they never saw a test
    query), and the same resamples serve every method, so a method's difference to the reference method's
    correlation gets a paired interval too. The interval covers the sampling of test queries only, not the
    training randomness of the single reference run (one seed). Resampling adds noise to every pair's
    disagreement, which pulls the resampled correlations slightly towards 0: on a small test set the interval
    can sit a little below the estimate."""
    n_queries = {c.shape[0] for c in correct.values()}
    if len(n_queries) != 1:
        raise DataError("the correctness matrices of the bootstrap must share their test queries")
    n = n_queries.pop()
    out = {key: [] for key in distances}
    for batch in bootstrap_weights(n, n_resamples, seed):
        for w in batch:
            rates = {k: upper(disagreement(c, w)[0]) for k, c in correct.items()}
            for key, d in distances.items():
                r = correlations(d, rates[key[0]])
                out[key].append([r[c] for c in CORRELATIONS])
    return {key: np.asarray(v, dtype=np.float64).reshape(-1, len(CORRELATIONS)) for key, v in out.items()}


def percentile_interval(values, confidence: float) -> tuple[float, float, int]:
    """(low, high, number of finite values) of the percentile interval of `values` (NaN dropped)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan"), 0
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return float(low), float(high), int(values.size)


def jackknife_correlations(correct, distances, max_groups: int = JACKKNIFE_GROUPS) -> np.ndarray:
    """[groups x len(CORRELATIONS)] correlations of `distances` (condensed) with the disagreements of
    `correct` [queries x models] with one group of test queries left out each time: every query its own
    group up to `max_groups` queries, else `max_groups` contiguous groups (a delete-group jackknife)."""
    correct = np.asarray(correct, dtype=np.float64)
    groups = np.array_split(np.arange(correct.shape[0]), min(int(max_groups), correct.shape[0]))
    out = np.empty((len(groups), len(CORRELATIONS)))
    for g, rows in enumerate(groups):
        w = np.ones(correct.shape[0])
        w[rows] = 0.0
        r = correlations(distances, upper(disagreement(correct, w)[0]))
        out[g] = [r[c] for c in CORRELATIONS]
    return out


def bca_levels(values, estimate: float, jackknife, confidence: float) -> tuple[float, float]:
    """The BCa quantile levels of the bootstrap `values` around `estimate` (Efron 1987; the formula of
    ``scipy.stats.bootstrap(method="BCa")``): bias correction ``z0`` from the share of resamples below the
    estimate, acceleration ``a`` from the `jackknife` values. NaN where undefined (no finite value, every
    resample on one side of the estimate, or a constant jackknife)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    jack = np.asarray(jackknife, dtype=np.float64)
    jack = jack[np.isfinite(jack)]
    if values.size == 0 or jack.size < 2 or not np.isfinite(estimate):
        return float("nan"), float("nan")
    below = (np.sum(values < estimate) + 0.5 * np.sum(values == estimate)) / values.size
    dev = jack.mean() - jack
    spread = np.sum(dev**2)
    if not 0 < below < 1 or spread == 0:
        return float("nan"), float("nan")
    z0 = stats.norm.ppf(below)
    a = np.sum(dev**3) / (6.0 * spread**1.5)
    z = stats.norm.ppf([(1 - confidence) / 2, (1 + confidence) / 2])
    low, high = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
    return float(low), float(high)


def bca_interval(values, estimate: float, jackknife, confidence: float) -> tuple[float, float]:
    """The BCa interval: the bootstrap `values` at :func:`bca_levels` (NaN where those are undefined)."""
    low, high = bca_levels(values, estimate, jackknife, confidence)
    if not (np.isfinite(low) and np.isfinite(high)):
        return float("nan"), float("nan")
    values = np.asarray(values, dtype=np.float64)
    low, high = np.quantile(values[np.isfinite(values)], [low, high])
    return float(low), float(high)


def recentred_interval(values, estimate: float, confidence: float) -> tuple[float, float]:
    """The percentile interval of `values` shifted by ``estimate - median(values)``: the resamples'
    spread around the estimate, with the shift the resampling itself adds (its median bias) removed.
    Contains `estimate` by construction."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0 or not np.isfinite(estimate):
        return float("nan"), float("nan")
    alpha = (1 - confidence) / 2
    low, mid, high = np.quantile(values, [alpha, 0.5, 1 - alpha])
    return float(low + estimate - mid), float(high + estimate - mid)


def contains(low: float, high: float, estimate: float) -> bool:
    return bool(np.isfinite(low) and np.isfinite(high) and low <= estimate <= high)


def interval_with_estimate(values, estimate: float, confidence: float, jackknife=None) -> tuple[float, float, str]:
    """``(low, high, kind)``: the percentile interval of the bootstrap `values` where it contains
    `estimate`; else the BCa interval (:func:`bca_interval`, acceleration from `jackknife`: the values or a
    callable giving them, evaluated only here) where that contains it and its levels span at least half
    of `confidence` (not collapsed into one tail); else :func:`recentred_interval`.
    BCa need not help: when nearly every resample lies on one side of the estimate its bias correction
    moves the interval further away (``z0`` beyond the normal quantile), so the last step is needed."""
    low, high, _ = percentile_interval(values, confidence)
    if contains(low, high, estimate) or not np.isfinite(estimate) or not np.isfinite(low):
        return low, high, "percentile"
    if jackknife is not None:
        jack = jackknife() if callable(jackknife) else jackknife
        lo_level, hi_level = bca_levels(values, estimate, jack, confidence)
        low, high = bca_interval(values, estimate, jack, confidence)
        # with a strong bias correction BCa's levels collapse into one tail (an interval a few resamples wide,
        # far narrower than the resamples' spread): used only while it spans half the percentile interval's mass
        if contains(low, high, estimate) and hi_level - lo_level >= confidence / 2:
            return low, high, "bca"
    low, high = recentred_interval(values, estimate, confidence)
    return low, high, "recentred"


# ----------------------------------------------------------------------------------------------
# reading the reference runs and the data set
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeometryRun:
    """One method's reference run: its models (ascending ids) and their embeddings in that order."""

    method: str
    run_dir: Path
    model_ids: np.ndarray
    embeddings: np.ndarray
    metrics: dict


@dataclass(frozen=True)
class Inputs:
    """The data set, its test queries and the reference runs (one per method, in the order given)."""

    data: object  # locus.data.canonical.EvalData
    data_dir: Path
    test_ids: np.ndarray
    runs: list

    def correctness(self, model_ids) -> np.ndarray:
        """Test correctness [test queries x models] (1/0/NaN) of `model_ids`."""
        return correctness(self.data.label_matrix(self.test_ids, model_ids))

    def names(self, model_ids) -> list[str]:
        by_id = dict(zip(self.data.models["model_id"].astype(int), self.data.models["name"].astype(str)))
        return [by_id[int(i)] for i in model_ids]

    def title(self, label: str | None, split: str = ", test split") -> str:
        from locus.render.figures import figure_title
        from locus.render.labels import dataset_name

        m = self.runs[0].metrics
        return figure_title(
            label or dataset_name(m.get("dataset", self.data_dir)),
            str(m.get("encoder", "?")),
            f"n = {m.get('train_size', '?')} evaluations per model{split}",
        )


def load(run_dirs, data_dir) -> Inputs:
    """Read the canonical data set and the reference runs, checking that each run was trained on this
    data set (fingerprint), that its models are the data set's, that no training pair is a test query,
    and that every method appears once."""
    from locus import run_artifacts as ra
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint
    from locus.render.labels import has_embeddings

    if not run_dirs:
        raise ConfigError("no runs given; pass the reference run directories with --runs")
    data = read_dataset(data_dir)
    fingerprint = data_fingerprint(data.queries["prompt_id"], data.queries["prompt"])
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    runs, seen = [], {}
    for run_dir in map(Path, run_dirs):
        metrics = ra.read_metrics(run_dir)
        method = str(metrics["method"])
        if method in seen:
            raise ConfigError(
                f"{seen[method]} and {run_dir} are both runs of {method}; give one reference run per method"
            )
        if not has_embeddings(method):
            raise ConfigError(
                f"{run_dir}: {method} has no model embeddings; give runs of embedding methods "
                "(e.g. locus, embedllm, irt_net)"
            )
        ra.check_same_data(
            run_dir,
            metrics.get("data_fingerprint"),
            fingerprint,
            data_dir,
            f"pass the data set the runs were trained on with --data (recorded: {metrics.get('dataset')})",
        )
        ids, z = ra.read_embeddings(run_dir)
        unknown = ~np.isin(ids, data.model_ids)
        if unknown.any():
            raise DataError(
                f"{run_dir}/{ra.EMBEDDINGS}: model ids {ids[unknown][:5].tolist()} are not in "
                f"{data_dir}; pass the runs' own data set with --data"
            )
        leaked = ra.read_train_pairs(run_dir)["prompt_id"].isin(test_ids)
        if leaked.any():
            raise DataError(
                f"{run_dir}/{ra.TRAIN_PAIRS}: {int(leaked.sum())} training evaluations are on test "
                f"queries of {data_dir}; test queries must never build an embedding — re-run the "
                "training rule on this data set"
            )
        order = np.argsort(ids, kind="stable")
        seen[method] = run_dir
        runs.append(GeometryRun(method, run_dir, ids[order], z[order].astype(np.float64), metrics))
    return Inputs(data, Path(data_dir), test_ids, runs)


def require_models(run: GeometryRun, minimum: int, what: str) -> None:
    if len(run.model_ids) < minimum:
        raise DataError(f"{run.run_dir}: {len(run.model_ids)} model(s); {what} needs at least {minimum}")


# ----------------------------------------------------------------------------------------------
# the table and the figure
# ----------------------------------------------------------------------------------------------
def pair_frame(inputs: Inputs) -> pd.DataFrame:
    """Every model pair of every run: ids, names, cosine and Euclidean distance, test disagreement and
    the number of common test queries (the figure's data)."""
    frames = []
    for run in inputs.runs:
        require_models(run, 3, "a correlation over model pairs")
        rate, common = disagreement(inputs.correctness(run.model_ids))
        i, j = np.triu_indices(len(run.model_ids), 1)
        names = np.asarray(inputs.names(run.model_ids), dtype=object)
        frame = pd.DataFrame(
            {
                "method": run.method,
                "model_a": run.model_ids[i],
                "model_b": run.model_ids[j],
                "name_a": names[i],
                "name_b": names[j],
            }
        )
        for metric in DISTANCES:
            frame[metric] = upper(embedding_distances(run.embeddings, metric))
        frame["disagreement"], frame["common_queries"] = rate[i, j], common[i, j].astype(np.int64)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def correlation_frame(
    inputs: Inputs,
    pairs: pd.DataFrame,
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    reference_method: str | None = "locus",
) -> pd.DataFrame:
    """One row per (method, correlation, distance): the correlation over model pairs, the embeddings'
    width (``embedding_dim``) and effective dimensionality (``effective_dim``, :func:`participation_ratio`),
    and with `n_boot` resamples its interval (``interval``: which one, :func:`interval_with_estimate`; it
    always contains the estimate), ``resampling_shift`` (median resampled correlation minus the estimate)
    and the paired difference to `reference_method` with its interval chosen the same way (``diff_interval``)."""
    part = {r.method: pairs[pairs["method"] == r.method] for r in inputs.runs}
    point = {(m, d): correlations(p[d], p["disagreement"]) for m, p in part.items() for d in DISTANCES}
    boot = {}
    if n_boot:
        correct = {r.method: inputs.correctness(r.model_ids) for r in inputs.runs}
        dists = {(m, d): part[m][d].to_numpy() for m, d in point}
        boot = bootstrap_correlations(correct, dists, n_boot, seed)
    ref = reference_method if any(r.method == reference_method for r in inputs.runs) else None
    dims = {r.method: participation_ratio(r.embeddings) for r in inputs.runs}
    influence = {}
    for run in inputs.runs:
        rate, _ = disagreement(inputs.correctness(run.model_ids))
        for metric in DISTANCES:
            influence[(run.method, metric)] = without_influential(embedding_distances(run.embeddings, metric), rate)
    jackknives = {}

    def jack(method, metric):  # leave-group-out correlations, computed once and only where BCa is tried
        if (method, metric) not in jackknives:
            jackknives[(method, metric)] = jackknife_correlations(correct[method], part[method][metric].to_numpy())
        return jackknives[(method, metric)]

    rows = []
    for run in inputs.runs:
        n_pairs = int(np.isfinite(part[run.method]["disagreement"]).sum())
        for c_pos, corr in enumerate(CORRELATIONS):
            for metric in DISTANCES:
                row = {
                    "method": run.method,
                    "correlation": corr,
                    "distance": metric,
                    "value": point[(run.method, metric)][corr],
                    "n_models": len(run.model_ids),
                    "n_pairs": n_pairs,
                    "n_queries": len(inputs.test_ids),
                    "train_size": run.metrics.get("train_size"),
                    "seed": run.metrics.get("seed"),
                    "embedding_dim": int(run.embeddings.shape[1]),
                    "effective_dim": dims[run.method],
                }
                value, left_out = influence[(run.method, metric)][corr]
                row["n_influential"] = len(left_out)
                row["value_without_influential"] = value
                row["influential_models"] = ";".join(inputs.names(run.model_ids[left_out]))
                if boot:
                    values = boot[(run.method, metric)][:, c_pos]
                    low, high, kind = interval_with_estimate(
                        values, row["value"], confidence, lambda m=run.method, d=metric, k=c_pos: jack(m, d)[:, k]
                    )
                    defined = int(np.isfinite(values).sum())
                    shift = float(np.nanmedian(values) - row["value"]) if defined else np.nan
                    row.update(ci_low=low, ci_high=high, n_defined=defined, interval=kind, resampling_shift=shift)
                    row.update(n_boot=n_boot, confidence=confidence, reference=ref)
                    if ref is not None:
                        diff = values - boot[(ref, metric)][:, c_pos]
                        row["diff_to_reference"] = row["value"] - point[(ref, metric)][corr]
                        row["diff_ci_low"], row["diff_ci_high"], row["diff_interval"] = interval_with_estimate(
                            diff,
                            row["diff_to_reference"],
                            confidence,
                            lambda m=run.method, d=metric, k=c_pos: jack(m, d)[:, k] - jack(ref, d)[:, k],
                        )
                rows.append(row)
    return pd.DataFrame(rows)


def write(
    run_dirs,
    data_dir,
    out,
    n_boot: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    reference_method: str = "locus",
    data_label: str | None = None,
) -> pd.DataFrame:
    """``.tex`` `out`: the correlation table (+ CSV) with bootstrap intervals; ``.pdf``/``.png``: the
    scatter figure (+ PNG/PDF + CSV of every pair). Returns the correlation frame."""
    from locus.atomic import write_text
    from locus.outputs import check_outputs
    from locus.render import geometry as render
    from locus.render import write_csv
    from locus.render.figures import output_paths, save_figure

    if not 0 < confidence < 1:
        raise ConfigError(f"--confidence must be between 0 and 1, got {confidence}")
    out = Path(out)
    table = out.suffix.lower() == ".tex"
    paths = {"tex": out, "csv": out.with_suffix(".csv")} if table else output_paths(out)
    check_outputs([paths[k] for k in (("tex", "csv") if table else ("pdf", "png", "csv"))])
    inputs = load(run_dirs, data_dir)
    pairs = pair_frame(inputs)
    frame = correlation_frame(inputs, pairs, n_boot if table else 0, seed, confidence, reference_method)
    title = inputs.title(data_label)
    if table:
        write_text(paths["tex"], render.correlation_table(frame, title))
        write_csv(render.with_emphasis(frame), paths["csv"])
    else:
        save_figure(render.distance_figure(pairs, frame, title), paths["pdf"])
        write_csv(pairs, paths["csv"])
    return frame


def report_lines(frame: pd.DataFrame) -> list[str]:
    lines = []
    for (method, corr), part in frame.groupby(["method", "correlation"], sort=False):
        cells = []
        for r in part.itertuples():
            ci = f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if "ci_low" in part and np.isfinite(r.ci_low) else ""
            cells.append(f"{r.distance} {r.value:.3f}{ci}")
        lines.append(f"{method} {corr}: " + ", ".join(cells))
    return lines
