"""Onboarding a new model without retraining: LOCUS's one forward pass beside training-free rivals (issue 49;
the methods are :mod:`locus.onboarding_rivals`).

Protocol (the onboarding figure's, :mod:`locus.experiments.onboarding`, with other methods beside LOCUS):

- the **pool**: the models of a LOCUS run trained without the held-out models (``locus train --hold-out``),
  with their training-split scores (``pool="split"``, default: every training-split score of those models in
  the data set) or exactly the run's training evaluations (``pool="run"``, what its LOCUS saw); every method
  is fitted once on it, and tunes what it tunes (λ, K, voters) on validation models *of the pool*;
- each **held-out model** and each k of the grid: the same seeded draw of k of its training-split
  evaluations as the onboarding figure (:func:`locus.experiments.onboarding.draw_evaluations`, repeat 0; all
  of them when it has fewer); every method onboards it from those k, nothing else of it;
- **metrics** on the held-out models' **test** queries: correctness accuracy and ROC-AUC over all their
  labelled test pairs (pooled), routing accuracy among the held-out models (each test query to the new model
  with the highest predicted P(correct)), each with a paired percentile bootstrap interval over test queries
  (the same resamples for every method at one k; correctness and routing by
  :func:`locus.experiments.bootstrap.paired_differences`, ROC-AUC by the same resampling of queries); the
  differences to LOCUS with their paired intervals; and the per-model correctness accuracy and ROC-AUC
  averaged over held-out models with a t-interval over models.

The held-out models' test queries never enter fitting, tuning or onboarding: the pool is built from the
training split, refuses the held-out models and the test queries (:class:`locus.onboarding_rivals.PoolContext`
raises :class:`~locus.onboarding_rivals.LeakageError`), and every draw is checked to hold training-split
queries only. Outputs: a tidy CSV, a LaTeX table, a figure.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from locus import onboarding_rivals as rivals
from locus.errors import ConfigError, DataError
from locus.experiments import bootstrap
from locus.experiments.onboarding import draw_evaluations

DEFAULT_SIZES = (8, 16, 32, 64, 128, 256)
REFERENCE = "locus"  # differences are to LOCUS (when it is compared)
POOLS = ("split", "run")
POOLED = ("correctness_acc", "roc_auc", "routing_acc")  # bootstrap over test queries
PER_MODEL = ("correctness_acc_per_model", "roc_auc_per_model")  # mean over held-out models, t-interval
REFERENCE_ROWS = ("oracle", "random")  # routing references among the held-out models
METRIC_LABELS = {
    "correctness_acc": "Correctness accuracy (%)",
    "roc_auc": "ROC-AUC, pooled pairs (%)",
    "roc_auc_per_model": "ROC-AUC, mean over models (%)",
    "correctness_acc_per_model": "Correctness accuracy, mean over models (%)",
    "routing_acc": "Routing accuracy among the new models (%)",
}
TABLE_METRICS = ("correctness_acc", "roc_auc", "roc_auc_per_model", "routing_acc")
COLUMNS = (
    "method",
    "k",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n_models",
    "n_queries",
    "seconds_per_model",
    "fit_seconds",
    "setting",
)
_AUC_KEY = 4901  # keys the ROC-AUC resampling apart from other seeded draws
_CLIP = 1e-9


@dataclass
class Comparison:
    """The result of :func:`compare`: the tidy frame and what it was computed from."""

    frame: pd.DataFrame
    probabilities: dict  # (method, k) -> P(correct) [test queries x held-out models]
    labels: np.ndarray  # [test queries x held-out models]
    held_out: np.ndarray
    sizes: list
    methods: list
    pool: rivals.PoolContext
    settings: dict = field(default_factory=dict)  # (method, k) -> what the method chose (text)


# --------------------------------------------------------------------------------------------------
# onboarding every held-out model with every method
# --------------------------------------------------------------------------------------------------
def build_pool(data, encodings, pool_pairs: pd.DataFrame, held_out, seed: int = 0) -> rivals.PoolContext:
    """The pool of the comparison: `pool_pairs` (the pool models' scores) restricted to the training split;
    candidate queries = the training split; the held-out models and the test queries forbidden."""
    train_ids = data.split_queries("train")["prompt_id"].to_numpy(np.int64)
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    pairs = pool_pairs[pool_pairs["prompt_id"].isin(train_ids)]
    if len(pairs) < len(pool_pairs):
        raise rivals.LeakageError(
            f"onboarding pool: {len(pool_pairs) - len(pairs)} pool scores are not of training-split queries; "
            "the pool is fitted on training-split scores only."
        )
    return rivals.pool_from_pairs(
        pairs,
        train_ids,
        encodings.take(train_ids),
        forbidden_prompt_ids=test_ids,
        forbidden_model_ids=held_out,
        seed=seed,
    )


def fit_methods(names, pool, locus_method=None, probabilities=None, params: dict | None = None):
    """{name: fitted onboarding method} and {name: seconds the fit took}."""
    fitted, seconds = {}, {}
    for name in names:
        extra = dict((params or {}).get(name, {}))
        if name == "locus":
            extra.update(method=locus_method, probabilities=probabilities)
        start = time.process_time()
        fitted[name] = rivals.create(name, **extra).fit(pool)
        seconds[name] = time.process_time() - start
    return fitted, seconds


def onboard_all(fitted: dict, data, encodings, held_out, sizes, seed: int, pool: rivals.PoolContext):
    """({(method, k): P(correct) [test x held-out]}, {(method, k): CPU seconds per model}, {(method, k): setting})."""
    train = data.split_scores("train")
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    phi = encodings.take(test_ids)
    probs, seconds, chosen = {}, {}, {}
    for k in sizes:
        for name in fitted:
            probs[(name, k)] = np.empty((len(test_ids), len(held_out)))
            seconds[(name, k)] = 0.0
        for j, m in enumerate(held_out):
            ids, scores = draw_evaluations(train, int(m), int(k), 0, seed)
            if np.isin(ids, test_ids).any() or np.isin(ids, pool.forbidden_prompt_ids).any():
                raise rivals.LeakageError(f"held-out model {int(m)}: its onboarding draw holds test queries.")
            for name, method in fitted.items():
                start = time.process_time()
                onboarded = method.onboard(ids, scores)
                probs[(name, k)][:, j] = onboarded.predict(phi)
                seconds[(name, k)] += time.process_time() - start
                chosen[(name, k)] = _setting_text(onboarded.details)
        for name in fitted:
            seconds[(name, k)] /= max(len(held_out), 1)
    return probs, seconds, chosen


def _setting_text(details: dict) -> str:
    keys = ("lambda", "clusters", "voters")
    return ";".join(f"{key}={details[key]:g}" for key in keys if key in details)


# --------------------------------------------------------------------------------------------------
# metrics and intervals
# --------------------------------------------------------------------------------------------------
def to_logits(p) -> np.ndarray:
    """log-odds of P(correct), clipped: the correctness and routing rules of :mod:`locus.evaluation` then
    read [p >= 0.5] and the order of p."""
    p = np.clip(np.asarray(p, dtype=np.float64), _CLIP, 1 - _CLIP)
    return np.log(p) - np.log1p(-p)


def auc_parts(p, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W [queries x queries], positives [queries], negatives [queries]) of the pooled ROC-AUC over the
    labelled pairs of `p` / `labels` [queries x models] (labels binarised at 0.5): W[q, q'] counts the
    (positive pair of q, negative pair of q') pairs ranked right, ties a half. With c the number of times
    each query is drawn, AUC = cᵀWc / ((c·positives)(c·negatives)); c = 1 gives the ordinary ROC-AUC."""
    from scipy import sparse

    p, labels = np.asarray(p, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    n = labels.shape[0]
    mask = ~np.isnan(labels)
    query = np.nonzero(mask)[0]
    s, pos = p[mask], labels[mask] >= 0.5
    order = np.argsort(s, kind="stable")
    s, pos, query = s[order], pos[order], query[order]
    cum = np.zeros((len(s) + 1, n), dtype=np.float32)  # negatives per query among the first t sorted pairs
    neg = np.flatnonzero(~pos)
    cum[neg + 1, query[neg]] = 1.0
    np.cumsum(cum, axis=0, out=cum)
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    group = np.cumsum(np.r_[True, s[1:] != s[:-1]]) - 1
    pp = np.flatnonzero(pos)
    below = 0.5 * (cum[starts[group[pp]]] + cum[ends[group[pp]]])  # [positives x queries]
    onehot = sparse.csr_matrix(
        (np.ones(len(pp), dtype=np.float32), (query[pp], np.arange(len(pp)))), shape=(n, len(pp))
    )
    w = np.asarray(onehot @ below, dtype=np.float32)
    return (
        w,
        np.bincount(query[pos], minlength=n).astype(np.float32),
        np.bincount(query[~pos], minlength=n).astype(np.float32),
    )


def auc_resamples(parts, counts: np.ndarray) -> np.ndarray:
    """Pooled ROC-AUC under each row of query draw counts [B x queries] (NaN without both classes)."""
    w, positives, negatives = parts
    c = np.asarray(counts, dtype=np.float32)
    num = np.einsum("bq,bq->b", c @ w, c, dtype=np.float64)
    den = (c @ positives).astype(np.float64) * (c @ negatives).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _percentile(values, confidence: float) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return math.nan, math.nan
    lo, hi = np.percentile(v, [50 * (1 - confidence), 50 * (1 + confidence)])
    return float(lo), float(hi)


def t_interval(values, confidence: float) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of the finite `values` with a Student-t interval (NaN bounds below 2 values)."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(v.mean())
    if len(v) < 2:
        return mean, math.nan, math.nan, 1
    half = float(stats.t.ppf((1 + confidence) / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return mean, mean - half, mean + half, len(v)


def summarise(
    probs: dict, labels, methods, sizes, boot: bootstrap.Settings, seconds=None, fit_seconds=None, chosen=None
):
    """The tidy frame (:data:`COLUMNS`) of every (method, k, metric)."""
    from locus import evaluation

    labels = np.asarray(labels, dtype=np.float64)
    seconds, fit_seconds, chosen = seconds or {}, fit_seconds or {}, chosen or {}
    labelled = ~np.isnan(labels)
    n_models = int(labelled.any(axis=0).sum())
    keep = labelled.any(axis=1)
    n_queries = int(keep.sum())
    rows = []

    def row(method, k, metric, value, low, high, n_mod=n_models, n_q=n_queries):
        rows.append(
            {
                "method": method,
                "k": int(k),
                "metric": metric,
                "value": value,
                "ci_low": low,
                "ci_high": high,
                "n_models": n_mod,
                "n_queries": n_q,
                "seconds_per_model": seconds.get((method, k), math.nan),
                "fit_seconds": fit_seconds.get(method, math.nan),
                "setting": chosen.get((method, k), ""),
            }
        )

    refs = evaluation.routing_metrics(np.zeros_like(labels), labels)
    ref = methods.index(REFERENCE) if REFERENCE in methods else None
    for k in sizes:
        logits = [to_logits(probs[(m, k)]) for m in methods]
        # correctness and routing: scipy's paired bootstrap; a zero row turns differences into values
        parts = [bootstrap.per_query(lg, labels) for lg in logits]
        for metric in ("correctness_acc", "routing_acc"):
            num = np.stack([p[metric][0] for p in parts])
            den = np.stack([p[metric][1] for p in parts])
            zero = len(methods)
            num = np.vstack([num, np.zeros(num.shape[1])])
            den = np.vstack([den, (den.sum(axis=0) > 0).astype(np.float64)])
            pairs = [(i, zero) for i in range(len(methods))]
            if ref is not None:
                pairs += [(i, ref) for i in range(len(methods)) if i != ref]
            d = bootstrap.paired_differences(num, den, pairs, boot)
            for (a, b), value, low, high in zip(pairs, d.diff, d.low, d.high):
                name = metric if b == zero else f"{metric}_minus_{REFERENCE}"
                row(methods[a], k, name, float(value), float(low), float(high), n_q=d.n_queries)
        # pooled ROC-AUC: the same kind of resampling of queries, one draw for every method at this k
        rng = np.random.default_rng([int(boot.seed), _AUC_KEY, int(k)])
        counts = np.zeros((int(boot.n_resamples), labels.shape[0]), dtype=np.float32)
        counts[:, keep] = rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=int(boot.n_resamples))
        auc_parts_ = [auc_parts(probs[(m, k)], labels) for m in methods]
        point = [float(auc_resamples(p, np.ones((1, labels.shape[0])))[0]) for p in auc_parts_]
        resampled = [auc_resamples(p, counts) for p in auc_parts_]
        for i, m in enumerate(methods):
            row(m, k, "roc_auc", point[i], *_percentile(resampled[i], boot.confidence))
            if ref is not None and i != ref:
                diff = resampled[i] - resampled[ref]
                row(m, k, f"roc_auc_minus_{REFERENCE}", point[i] - point[ref], *_percentile(diff, boot.confidence))
        # per held-out model, then the mean over models with a t-interval
        for i, m in enumerate(methods):
            per = [
                evaluation.correctness_metrics(logits[i][:, j : j + 1], labels[:, j : j + 1])
                for j in range(labels.shape[1])
            ]
            for metric in PER_MODEL:
                key = metric.removesuffix("_per_model")
                mean, low, high, n = t_interval([c.get(key, math.nan) for c in per], boot.confidence)
                row(m, k, metric, mean, low, high, n_mod=n)
        for name in REFERENCE_ROWS:
            row(name, k, "routing_acc", float(refs[name]), math.nan, math.nan)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def compare(
    data,
    encodings,
    held_out,
    pool_pairs: pd.DataFrame,
    sizes=DEFAULT_SIZES,
    seed: int = 0,
    methods=None,
    locus_method=None,
    probabilities=None,
    boot: bootstrap.Settings = bootstrap.Settings(),
    params: dict | None = None,
) -> Comparison:
    """Fit every method on the pool, onboard each held-out model from k of its training-split evaluations
    for every k in `sizes`, and summarise (see the module docstring). In memory: `data` an EvalData,
    `encodings` an Encodings, `pool_pairs` the pool models' long training scores."""
    methods = rivals.names() if methods is None else list(methods)
    for name in methods:
        rivals.method_class(name)
    if len(set(methods)) != len(methods) or not methods:
        raise ConfigError(f"--methods: give distinct onboarding methods, got {methods}")
    held = np.unique(np.asarray(held_out, dtype=np.int64))
    sizes = sorted({int(k) for k in sizes})
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"--k: give evaluation counts >= 1, got {sizes}")
    pool = build_pool(data, encodings, pool_pairs, held, seed)
    fitted, fit_seconds = fit_methods(methods, pool, locus_method, probabilities, params)
    probs, seconds, chosen = onboard_all(fitted, data, encodings, held, sizes, seed, pool)
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    labels = data.label_matrix(test_ids, held)
    if np.isnan(labels).all():
        raise DataError("the held-out models have no test-split evaluation to score the onboarding on.")
    frame = summarise(probs, labels, methods, sizes, boot, seconds, fit_seconds, chosen)
    return Comparison(frame, probs, labels, held, sizes, methods, pool, chosen)


# --------------------------------------------------------------------------------------------------
# table and figure
# --------------------------------------------------------------------------------------------------
def _cell(value, low, high, emphasis: str) -> str:
    from locus.render.latex import fmt

    text = fmt(value, emphasis=emphasis, decimals=1)
    if text != "--" and not (math.isnan(low) or math.isnan(high)):
        text += f"{{\\scriptsize\\,[{100 * low:.1f}, {100 * high:.1f}]}}"
    return text


def latex_table(frame: pd.DataFrame, methods, sizes, caption: str, label: str = "tab:onboarding_rivals") -> str:
    """Rows: methods per metric block; columns: k; cells: % with the interval; the best of a column bold,
    the second underlined; last column: CPU milliseconds per model at the largest k."""
    from locus.render.latex import emphasis, escape, wrap

    big = max(sizes)
    lines = [
        "\\begin{tabular}{l" + "c" * len(sizes) + "r}",
        "\\toprule",
        "Method & " + " & ".join(f"$k={k}$" for k in sizes) + f" & ms/model ($k={big}$) \\\\",
    ]
    for metric in TABLE_METRICS:
        lines += [
            "\\midrule",
            f"\\multicolumn{{{len(sizes) + 2}}}{{l}}{{\\emph{{{escape(METRIC_LABELS[metric])}}}}} \\\\",
        ]
        block = frame[frame["metric"] == metric].set_index(["method", "k"])
        names = [m for m in methods if (m, sizes[0]) in block.index]
        marks = {k: emphasis([block.loc[(m, k), "value"] for m in names], decimals=1) for k in sizes}
        for i, m in enumerate(names):
            cells = [
                _cell(*block.loc[(m, k), ["value", "ci_low", "ci_high"]].astype(float), marks[k][i]) for k in sizes
            ]
            ms = 1000 * float(block.loc[(m, big), "seconds_per_model"])
            lines.append(f"{rivals.method_class(m).latex_label} & " + " & ".join(cells) + f" & {ms:.1f} \\\\")
        if metric == "routing_acc":
            refs = frame[(frame["metric"] == metric) & frame["method"].isin(REFERENCE_ROWS) & (frame["k"] == big)]
            for name, value in zip(refs["method"], refs["value"]):
                lines.append(f"\\quad {name} & \\multicolumn{{{len(sizes)}}}{{c}}{{{100 * value:.1f}}} & \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    text = wrap(lines, caption, label, wide=True, size="\\footnotesize")
    return text.replace("% generated by `locus table`", "% generated by `locus onboarding-rivals`", 1)


def caption(c: Comparison, boot: bootstrap.Settings, data_label: str, pool: str = "split") -> str:
    from locus.render.latex import escape

    f = c.frame
    n_q = int(f.loc[f["metric"] == "correctness_acc", "n_queries"].max())
    level = f"{100 * boot.confidence:g}\\%"
    scores = "their training-split scores" if pool == "split" else "the run's own training evaluations"
    return (
        f"Onboarding a new model without retraining ({escape(data_label)}): {len(c.held_out)} held-out models, each "
        f"from $k$ of its training-split evaluations (one seeded draw), scored on its {n_q} test queries. Pool: the "
        f"{len(c.pool.model_ids)} models of the \\textsc{{Locus}} run trained without them, with {scores} "
        f"({len(c.pool.prompt_ids)} queries); no method retrains, and $\\lambda$, $K$ and the voters are chosen per "
        f"$k$ on validation models of the pool. Cells: \\% with the {level} paired percentile bootstrap interval "
        f"over test queries ({boot.n_resamples} resamples, seed {boot.seed}); the per-model ROC-AUC: mean over "
        "held-out models with a $t$-interval. Routing: each test query to the held-out model with the highest "
        "predicted P(correct). Bold: best of its column, underlined: second. ms/model: CPU milliseconds to onboard "
        "one model and predict its test queries. Differences to \\textsc{Locus} with paired intervals are in the CSV."
    )


def rivals_figure(frame: pd.DataFrame, methods, sizes, title: str):
    """Accuracy vs k per method with interval bands (the mean-accuracy floor dashed); one panel per metric."""
    from locus.render.figures import plt, sns

    sns.set_theme(style="whitegrid", context="paper")
    metrics = ("correctness_acc", "roc_auc_per_model", "routing_acc")
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.0 * len(metrics), 3.4))
    for ax, metric in zip(np.atleast_1d(axes), metrics):
        block = frame[frame["metric"] == metric]
        for m in methods:
            cls = rivals.method_class(m)
            sub = block[block["method"] == m].sort_values("k")
            if sub.empty:
                continue
            ax.plot(sub["k"], 100 * sub["value"], marker="o", ms=3, color=cls.color, ls=cls.linestyle, label=cls.label)
            ax.fill_between(sub["k"], 100 * sub["ci_low"], 100 * sub["ci_high"], color=cls.color, alpha=0.15, lw=0)
        if metric == "routing_acc":
            for name, style in zip(REFERENCE_ROWS, (":", "-.")):
                ref = block[block["method"] == name]
                if len(ref):
                    ax.axhline(100 * ref["value"].iloc[0], color="black", ls=style, lw=0.8, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(sizes), [str(k) for k in sizes])
        ax.minorticks_off()
        ax.set_xlabel("evaluations of the new model (k)")
        ax.set_ylabel(METRIC_LABELS[metric])
    handles, names = np.atleast_1d(axes)[-1].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=7, bbox_to_anchor=(0.5, -0.06))
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


# --------------------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------------------
def write_onboarding_rivals(
    run,
    data_dir,
    encodings_path,
    out,
    sizes=DEFAULT_SIZES,
    seed: int = 0,
    held_out_names=None,
    methods=None,
    figure=None,
    pool: str = "split",
    boot: bootstrap.Settings = bootstrap.Settings(),
    data_label: str | None = None,
    calibrated: bool = False,
) -> dict:
    """Read the run, data set and encodings; :func:`compare`; write the LaTeX table `out`, its CSV beside it
    and (when given) the figure `figure` (.pdf + .png)."""
    from locus import run_artifacts
    from locus.atomic import write_text
    from locus.data.canonical import read_dataset
    from locus.data.encodings import check_matches, read_encodings
    from locus.inference import probability_map
    from locus.render import write_csv
    from locus.runs import held_out_ids

    if pool not in POOLS:
        raise ConfigError(f"--pool {pool!r}: choose one of {', '.join(POOLS)}")
    cpu_start = time.process_time()
    data = read_dataset(data_dir)
    enc = read_encodings(encodings_path)
    fingerprint = check_matches(enc, data.queries, str(data_dir))
    held = held_out_ids(data.models, held_out_names, f"{data_dir}/models.parquet")
    ckpt = run_artifacts.load_checkpoint(run)
    if getattr(ckpt.method, "name", None) != "locus":
        raise DataError(f"{run}: a {ckpt.method.name!r} run; onboarding rivals are compared with a LOCUS run.")
    run_artifacts.check_same_data(
        run, ckpt.config.get("data_fingerprint"), fingerprint, data_dir, "re-run its training rule."
    )
    trained = np.asarray(ckpt.model_ids, dtype=np.int64)
    seen = np.intersect1d(trained, held)
    if len(seen):
        raise DataError(
            f"{run}: trained on {len(seen)} of the {len(held)} held-out models; give a run trained without them "
            "(locus train --hold-out)."
        )
    if pool == "run":
        pairs = run_artifacts.read_train_pairs(run)
    else:
        train = data.split_scores("train")
        pairs = train[train["model_id"].isin(trained)]
    names = dict(zip(data.models["model_id"].astype(int), data.models["name"].astype(str)))
    result = compare(
        data,
        enc,
        held,
        pairs,
        sizes,
        seed,
        methods,
        locus_method=ckpt.method,
        probabilities=probability_map(run, calibrated),
        boot=boot,
    )
    label = data_label or Path(str(data_dir)).name
    write_csv(result.frame, Path(out).with_suffix(".csv"))
    write_text(out, latex_table(result.frame, result.methods, result.sizes, caption(result, boot, label, pool)))
    if figure is not None:
        from locus.render.figures import save_figure

        title = f"Onboarding without retraining: {len(held)} held-out models, {label}, pool of {len(trained)} models"
        save_figure(rivals_figure(result.frame, result.methods, result.sizes, title), figure)
    return {
        "comparison": result,
        "held_out": [names[int(m)] for m in held],
        "cpu_seconds": time.process_time() - cpu_start,
    }
