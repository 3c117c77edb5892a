"""Collect the ``metrics.json`` of many runs into tidy DataFrames and aggregate them over seeds.

A run's ``metrics.json`` (written by :func:`locus.runs.execute`) holds the run settings, the val/test
metrics overall and per benchmark, and the reference rows (oracle / random / best single model chosen on
val). This module is the one place that

- checks the files (:func:`load_metrics`, read by :func:`locus.run_artifacts.read_metrics`): every problem
  names the file and the fix;
- refuses comparisons that make no sense (:func:`check_comparable`): one table = one data set, one
  encoder, one sampling scheme; one (method, train_size) cell = one parameter setting, each seed once;
- flattens them (:func:`method_frame`, :func:`reference_frame`) into long rows
  ``method, train_size, seed, benchmark, metric, value`` (``benchmark``: ``"Overall"`` or a name);
- aggregates over seeds (:func:`aggregate`): mean, sample std (ddof = 1; 0 for one seed), seeds;
- reads the runs' per-query test scores with the data set's labels (:func:`query_values`), the values
  the paired bootstrap of :mod:`locus.experiments.bootstrap` resamples.

Values stay fractions here; rendering turns them into percentages.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from locus import evaluation
from locus.errors import DataError
from locus.render.labels import OVERALL, dataset_name, order_benchmarks

REFERENCES = ("oracle", "best_single", "random")
REQUIRED = ("method", "train_size", "seed", "encoder", "dataset")
METHOD_COLUMNS = ["method", "train_size", "seed", "benchmark", "metric", "value", "path"]  # of method_frame


@dataclass(frozen=True)
class Run:
    """One run's metrics.json with the file it came from (kept for error messages)."""

    path: str
    metrics: dict

    @property
    def method(self) -> str:
        return str(self.metrics["method"])

    @property
    def train_size(self) -> int:
        return int(self.metrics["train_size"])

    @property
    def seed(self) -> int:
        return int(self.metrics["seed"])


def load_metrics(paths, split: str = "test") -> list[Run]:
    """Read and check ``metrics.json`` files. Each needs the run settings and ``split`` metrics with an
    ``overall`` block; a missing or malformed file raises :class:`DataError` naming it."""
    paths = [str(p) for p in paths]
    if not paths:
        raise DataError("no metrics files given: pass --metrics results/runs/.../metrics.json ...")
    from locus import run_artifacts

    return [Run(path, check_metrics(run_artifacts.read_metrics(path, REQUIRED), path, split)) for path in paths]


def check_metrics(metrics, path: str, split: str = "test") -> dict:
    """Return `metrics` (as read by :func:`locus.run_artifacts.read_metrics`) if it has what tables need,
    else raise :class:`DataError` naming `path`."""
    block = metrics.get(split)
    if not isinstance(block, dict) or not isinstance(block.get("overall"), dict):
        raise DataError(
            f"{path}: no '{split}' metrics (expected '{split}': {{'overall': {{...}}, "
            "'by_benchmark': {...}}); the run did not finish scoring: re-run `locus train`"
        )
    try:
        int(metrics["train_size"]), int(metrics["seed"])
    except (TypeError, ValueError):
        raise DataError(
            f"{path}: train_size and seed must be integers, got {metrics['train_size']!r} and {metrics['seed']!r}"
        ) from None
    if not isinstance(metrics.get("params", {}), dict):
        raise DataError(
            f"{path}: 'params' must be a JSON object of the method's parameters, got "
            f"{type(metrics['params']).__name__}; this is not a metrics.json written by `locus train` "
            "(re-run it)"
        )
    return metrics


def with_predated_defaults(method: str, params: dict) -> dict:
    """A run's recorded parameters, with every parameter of the method that the run does not record set to
    the method's default. A run written before a parameter existed does not record it, and ran as its
    default does: a parameter is only ever added with a default that keeps the old behaviour
    (docs/architecture.md, "Method interface"). So a run of last month and a run of today with the same settings
    compare as equal, while a run that set the new parameter to anything else still differs."""
    from locus.errors import ConfigError
    from locus.methods import method_class

    try:
        defaults = method_class(method).defaults
    except ConfigError:  # not a registered method: its recorded parameters are all there is
        return dict(params)
    return {**defaults, **params}


def check_comparable(runs: list[Run], vary=()) -> None:
    """One table or figure compares runs on one data set, encoder and sampling scheme, with each
    (method, train_size, seed) once and one parameter setting per (method, train_size). `vary` names
    the settings a table compares on purpose (the encoder ablation: ``("encoder",)``), exempt from the
    one-value rule; nothing else does."""
    unknown = set(vary) - {"encoder"}
    if unknown:
        raise ValueError(f"only the encoder may vary within a table, not {sorted(unknown)}")
    for key in ("dataset", "encoder", "sampling"):
        if key in vary:
            continue
        values = {}
        for r in runs:
            values.setdefault(str(r.metrics.get(key)), r.path)
        if len(values) > 1:
            listing = "; ".join(f"{v!r} (e.g. {p})" for v, p in sorted(values.items()))
            raise DataError(
                f"metrics mix several values of '{key}': {listing}. A table compares runs on one "
                f"{key}: pass only the metrics files of one {key}"
            )
    seen, params = {}, {}
    for r in runs:
        key = (r.method, r.train_size, r.seed)
        if key in seen:
            raise DataError(
                f"{r.path} and {seen[key]} are both {r.method} with train_size={r.train_size}, "
                f"seed={r.seed}; pass each run once"
            )
        seen[key] = r.path
        recorded = r.metrics.get("params", {})
        first, first_path = params.setdefault((r.method, r.train_size), (recorded, r.path))
        if with_predated_defaults(r.method, recorded) != with_predated_defaults(r.method, first):
            raise DataError(
                f"{r.path} and {first_path}: {r.method} at train_size={r.train_size} was run with "
                f"different params ({json.dumps(recorded, sort_keys=True)} vs "
                f"{json.dumps(first, sort_keys=True)}); seeds of one cell must share parameters: "
                "pass the runs of one setting only"
            )


def order_methods(runs: list[Run], methods=None) -> list[str]:
    """Methods to show, in order. With `methods` given: exactly those (each must have runs); otherwise the
    order of the method classes (``order``: LOCUS first, then the baselines), names that are not registered
    sorted at the end."""
    present = {r.method for r in runs}
    if methods:
        absent = [m for m in methods if m not in present]
        if absent:
            raise DataError(
                f"no metrics for method(s) {', '.join(absent)} among the {len(runs)} metrics files "
                f"(present: {', '.join(sorted(present))}); fix --methods or add their metrics files"
            )
        return list(dict.fromkeys(methods))
    from locus.render.labels import sort_key

    return sorted(present, key=sort_key)


def _value(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def method_frame(runs: list[Run], split: str = "test", metrics=("routing_acc", "correctness_acc")) -> pd.DataFrame:
    """Long rows ``method, train_size, seed, benchmark, metric, value, path`` of the chosen metrics."""
    rows = []
    for r in runs:
        block = r.metrics[split]
        parts = [(OVERALL, block["overall"])] + sorted((block.get("by_benchmark") or {}).items())
        for bench, values in parts:
            for m in metrics:
                if m in values:
                    rows.append((r.method, r.train_size, r.seed, str(bench), m, _value(values[m]), r.path))
    return pd.DataFrame(rows, columns=METHOD_COLUMNS)


def reference_frame(runs: list[Run]) -> pd.DataFrame:
    """Long rows ``reference, train_size, seed, benchmark, value, path`` of the test reference rows
    (routing accuracy of oracle, best single model chosen on val, random). Runs without a ``reference``
    block contribute nothing."""
    rows = []
    for r in runs:
        ref = r.metrics.get("reference") or {}
        for name in REFERENCES:
            for bench, value in (ref.get(name) or {}).items():
                bench = OVERALL if bench == "overall" else str(bench)
                rows.append((name, r.train_size, r.seed, bench, _value(value), r.path))
    return pd.DataFrame(rows, columns=["reference", "train_size", "seed", "benchmark", "value", "path"])


def aggregate(frame: pd.DataFrame, by) -> pd.DataFrame:
    """Mean, sample std (ddof = 1, 0 for a single seed) and number of seeds of ``value`` per group."""
    by = list(by)
    if frame.empty:
        return pd.DataFrame(columns=by + ["mean", "std", "n_seeds"])
    g = frame.groupby(by, sort=False, dropna=False)["value"]
    out = g.agg(mean="mean", std=lambda v: float(v.std(ddof=1)) if v.count() > 1 else 0.0, n_seeds="count")
    return out.reset_index()


def describe_data(runs: list[Run]) -> tuple[str, str]:
    """(dataset, encoder) of comparable runs, for captions."""
    m = runs[0].metrics
    return str(m["dataset"]), str(m["encoder"])


@dataclass
class Collection:
    """Everything a comparison table or figure needs, from one list of metrics files."""

    runs: list
    methods: list
    sizes: list
    benchmarks: list
    method_rows: pd.DataFrame
    method_agg: pd.DataFrame
    ref_agg: pd.DataFrame
    dataset: str
    encoder: str
    seeds: tuple  # (fewest, most) seeds of any method cell

    def data_label(self, label: str | None = None) -> str:
        """`label` when given (the workflow passes each data set's own), else the data set's name."""
        return label if label else dataset_name(self.dataset)


def collect(paths, split: str = "test", methods=None, metrics=("routing_acc", "correctness_acc")) -> Collection:
    """Load, select (`methods`, in that order; default all, canonical order), check and aggregate."""
    return collect_runs(load_metrics(paths, split), split, methods, metrics)


def collect_runs(
    runs: list[Run], split: str = "test", methods=None, metrics=("routing_acc", "correctness_acc"), vary=()
) -> Collection:
    """:func:`collect` of runs already loaded (:func:`load_metrics`); `vary` as for
    :func:`check_comparable` (the ablation tables, :mod:`locus.experiments.ablation`)."""
    chosen = order_methods(runs, methods)
    runs = [r for r in runs if r.method in chosen]
    check_comparable(runs, vary)
    rows = method_frame(runs, split, metrics)
    agg = aggregate(rows, ["method", "train_size", "benchmark", "metric"])
    refs = aggregate(reference_frame(runs), ["reference", "train_size", "benchmark"])
    benchmarks = order_benchmarks(b for b in rows["benchmark"] if b != OVERALL)
    sizes = sorted({r.train_size for r in runs})
    counts = agg["n_seeds"] if not agg.empty else pd.Series([0])
    dataset, encoder = describe_data(runs)
    return Collection(
        runs, chosen, sizes, benchmarks, rows, agg, refs, dataset, encoder, (int(counts.min()), int(counts.max()))
    )


@dataclass
class QueryValues:
    """Per-query values of every (method, train_size) cell, averaged over the cell's seeds: for each
    metric of :data:`locus.experiments.bootstrap.METRICS` a (numerator, denominator) pair of arrays over
    the split's queries (``prompt_ids`` ascending, their ``benchmarks`` alongside)."""

    prompt_ids: np.ndarray
    benchmarks: np.ndarray
    cells: dict  # (method, train_size) -> {metric: (num, den)}
    # with the data set's truth: per run, the expected routing accuracy overall and per benchmark, as
    # long rows like method_frame's (metric "expected_routing"); None without truth
    expected_rows: pd.DataFrame | None = None
    # train_size -> {metric: (num, den)} of the best single model chosen on validation, routed to as a
    # router of its own (averaged over the runs of that size): what the bold cells must beat
    best_single: dict = field(default_factory=dict)
    # (method, train_size) -> routing diversity of the cell (:func:`diversity_of`)
    diversity: dict = field(default_factory=dict)
    # (method, train_size) -> {seed: {metric: (num, den)}}: each run's own values, before the average over
    # seeds (the per-seed comparisons of the tables: :func:`locus.experiments.tables.seed_differences`)
    seed_cells: dict = field(default_factory=dict)

    def seeds(self, method: str, train_size: int) -> list[int]:
        """The seeds of one (method, train_size) cell, ascending (empty without runs)."""
        return sorted(self.seed_cells.get((method, int(train_size)), {}))

    def seed_column(self, method: str, train_size: int, seed: int, metric: str, benchmark: str = OVERALL):
        """(num, den) [queries of `benchmark`] of one seed's run of a cell."""
        rows = np.ones(len(self.prompt_ids), dtype=bool) if benchmark == OVERALL else self.benchmarks == benchmark
        num, den = self.seed_cells[(method, int(train_size))][int(seed)][metric]
        return num[rows], den[rows]

    def best_single_column(self, train_size: int, metric: str, benchmark: str = OVERALL):
        """(num, den) [queries] of the best single model in one table column, or None (no runs of that
        size, or a metric the best single model has no value of)."""
        cell = self.best_single.get(int(train_size), {})
        if metric not in cell:
            return None
        rows = np.ones(len(self.prompt_ids), dtype=bool) if benchmark == OVERALL else self.benchmarks == benchmark
        return cell[metric][0][rows], cell[metric][1][rows]

    def column(self, methods, train_size: int, metric: str, benchmark: str = OVERALL):
        """(methods that have runs, num [methods x queries], den [methods x queries]) of one table column:
        the queries of `benchmark` (all of them for ``Overall``)."""
        rows = np.ones(len(self.prompt_ids), dtype=bool) if benchmark == OVERALL else self.benchmarks == benchmark
        present = [m for m in methods if (m, int(train_size)) in self.cells]
        shape = (len(present), int(rows.sum()))
        num = np.array([self.cells[(m, int(train_size))][metric][0][rows] for m in present]).reshape(shape)
        den = np.array([self.cells[(m, int(train_size))][metric][1][rows] for m in present]).reshape(shape)
        return present, num, den


def query_values(
    runs: list[Run], dataset_dir, split: str = "test", truth: pd.DataFrame | None = None, data=None
) -> QueryValues:
    """Per-query values of the runs (their ``scores_{split}.parquet``, read through
    :mod:`locus.run_artifacts`, beside each metrics.json) against the labels of the canonical data set
    `dataset_dir` (the one the runs were trained on: checked by its fingerprint and the split's prompt
    ids), averaged over the seeds of each (method, train_size), and each run's own (``seed_cells``). With
    the data set's `truth` (:func:`locus.data.canonical.read_truth`) also the expected routing accuracy,
    per query and per run.
    `data`: the data set already read from `dataset_dir` (read here when None)."""
    from locus import run_artifacts
    from locus.data.canonical import read_dataset, truth_matrix
    from locus.data.encodings import data_fingerprint
    from locus.experiments.bootstrap import EXPECTED, per_query

    data = read_dataset(dataset_dir) if data is None else data
    fingerprint = data_fingerprint(data.queries["prompt_id"], data.queries["prompt"])
    queries = data.split_queries(split)
    ids = queries["prompt_id"].to_numpy(np.int64)
    benchmarks = queries["benchmark"].astype(str).to_numpy()
    labels = data.label_matrix(ids)  # [split queries x all models of the data set], NaN = not evaluated
    true_p = truth_matrix(truth, ids, data.model_ids) if truth is not None else None
    val_ids = data.split_queries("val")["prompt_id"].to_numpy(np.int64)
    val_labels = data.label_matrix(val_ids)
    names = data.models["name"].astype(str).to_numpy()
    sums, counts, expected_rows = {}, {}, []
    single_sums, single_counts, choices, seed_cells = {}, {}, {}, {}
    for r in runs:
        run_artifacts.check_same_data(
            r.path,
            r.metrics.get("data_fingerprint"),
            fingerprint,
            dataset_dir,
            f"pass the data set the runs were trained on with --data (recorded in the run: {r.metrics['dataset']})",
        )
        run_dir = Path(r.path).parent
        prompt_ids, model_ids, logits = run_artifacts.read_scores(run_dir, split)
        scores = run_dir / run_artifacts.scores_file(split)
        if not np.array_equal(prompt_ids, ids):
            raise DataError(
                f"{scores}: its {len(prompt_ids)} scored queries are not the {len(ids)} {split} queries "
                f"of {dataset_dir}; the run belongs to another data set: pass the runs' own data set "
                f"with --data, or re-run training"
            )
        unknown = ~np.isin(model_ids, data.model_ids)
        if unknown.any():
            raise DataError(
                f"{scores}: model ids {model_ids[unknown][:5].tolist()} are not in {dataset_dir}; pass "
                f"the runs' own data set with --data"
            )
        cols = np.searchsorted(data.model_ids, model_ids)
        run_truth = None if true_p is None else true_p[:, cols]
        values = per_query(logits, labels[:, cols], run_truth)
        chosen = np.zeros(len(data.model_ids), dtype=np.int64)
        chosen[cols] = evaluation.choice_counts(logits, labels[:, cols])
        choices.setdefault((r.method, r.train_size), {})[r.seed] = chosen
        if len(val_ids):  # the best single model on validation, routed to as reference_rows does
            onehot = np.full(logits.shape, -1.0)
            onehot[:, evaluation.best_single_model(val_labels[:, cols])] = 1.0
            single = per_query(onehot, labels[:, cols], run_truth)
            acc = single_sums.setdefault(r.train_size, {m: (np.zeros(len(ids)), np.zeros(len(ids))) for m in single})
            for m, (num, den) in single.items():
                if m != "correctness_acc":  # a one-hot "prediction" is no correctness predictor
                    acc[m][0][:] += num
                    acc[m][1][:] += den
            single_counts[r.train_size] = single_counts.get(r.train_size, 0) + 1
        if EXPECTED in values:
            expected_rows += _run_rows(r, EXPECTED, *values[EXPECTED], benchmarks)
        key = (r.method, r.train_size)
        seed_cells.setdefault(key, {})[r.seed] = values
        if key not in sums:
            sums[key] = {m: (np.zeros(len(ids)), np.zeros(len(ids))) for m in values}
            counts[key] = 0
        for m, (num, den) in values.items():
            sums[key][m][0][:] += num
            sums[key][m][1][:] += den
        counts[key] += 1
    cells = {key: {m: (num / counts[key], den / counts[key]) for m, (num, den) in v.items()} for key, v in sums.items()}
    frame = pd.DataFrame(expected_rows, columns=METHOD_COLUMNS) if true_p is not None else None
    best_single = {
        size: {
            m: (num / single_counts[size], den / single_counts[size])
            for m, (num, den) in v.items()
            if m != "correctness_acc"
        }
        for size, v in single_sums.items()
    }
    diversity = {key: diversity_of(per_seed, names) for key, per_seed in choices.items()}
    return QueryValues(ids, benchmarks, cells, frame, best_single, diversity, seed_cells)


def diversity_of(per_seed_counts: dict, names) -> dict:
    """Routing diversity of one (method, train_size) cell from each seed's choice counts over the data set's
    models ({seed: :func:`locus.evaluation.choice_counts`}): ``top_model_share``, ``n_models_used`` and
    ``choice_entropy`` (:func:`locus.evaluation.routing_diversity`) are means over seeds; ``top_model`` names the
    most-chosen model over all seeds together; ``seed_top_share``: {seed: that seed's share};
    ``near_constant``: some seed's share reaches :data:`locus.evaluation.NEAR_CONSTANT_SHARE` (a mean over seeds
    would hide one seed's constant router behind another's varied one)."""
    per_seed = {s: evaluation.routing_diversity(c) for s, c in sorted(per_seed_counts.items())}
    pooled = evaluation.routing_diversity(np.sum(list(per_seed_counts.values()), axis=0))
    shares = {s: float(d["top_share"]) for s, d in per_seed.items()}
    return {
        "top_model": str(names[pooled["top_model"]]) if pooled["top_model"] >= 0 else "",
        "top_model_share": float(np.mean(list(shares.values()))),
        "n_models_used": float(np.mean([d["n_models_used"] for d in per_seed.values()])),
        "choice_entropy": float(np.mean([d["entropy"] for d in per_seed.values()])),
        "near_constant": any(v >= evaluation.NEAR_CONSTANT_SHARE for v in shares.values()),
        "seed_top_share": shares,
    }


def _run_rows(run: Run, metric: str, num: np.ndarray, den: np.ndarray, benchmarks: np.ndarray) -> list[tuple]:
    """One run's ``metric`` = sum(num) / sum(den) overall and per benchmark, as rows of method_frame."""
    rows = []
    for bench in [OVERALL] + sorted(set(benchmarks.tolist())):
        sel = slice(None) if bench == OVERALL else benchmarks == bench
        d = float(np.sum(den[sel]))
        rows.append(
            (
                run.method,
                run.train_size,
                run.seed,
                bench,
                metric,
                float(np.sum(num[sel])) / d if d > 0 else math.nan,
                run.path,
            )
        )
    return rows
