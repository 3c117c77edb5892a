"""Expected routing accuracy from a generated data set's truth (``truth.parquet``, :mod:`locus.data.truth`).

A routing table's observed accuracy is a mean of 0/1 labels over a few hundred test queries, so two
methods that route alike can differ by a point from the label noise alone. With the generator's true
probability ``p[q, m]`` that model ``m`` answers query ``q`` correctly, the tables also report:

- per run, the **expected routing accuracy** (``expected_routing``): the mean over queries of ``p`` of
  the very model the method routes to (:func:`locus.experiments.bootstrap.per_query`), aggregated and
  bootstrapped like the observed metrics;
- the **Bayes ceiling** (``bayes_ceiling``): the mean over queries of ``max_m p[q, m]`` over the models
  evaluated on the query: no router choosing among them can expect more;
- the **best single model** (``best_single_train``): the model with the highest mean true probability
  on the *training* split, routed like the observed "best single" row (where it was not evaluated on a
  query, the ranking falls back to the lowest model_id evaluated there).

Values are fractions here; rendering turns them into percentages.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from locus.errors import DataError
from locus.experiments.bootstrap import EXPECTED, per_query
from locus.experiments.comparison import OVERALL, Collection, aggregate

REFERENCE_COLUMNS = ["reference", "benchmark", "value", "model"]


def table_truth(truth_path, data_dir, data) -> pd.DataFrame:
    """The validated truth for a table: `truth_path` must be the truth file of the table's data set
    `data_dir` (already read as `data`), and that data set must have one."""
    from locus.data.canonical import read_truth
    from locus.data.truth import TRUTH_FILE

    truth_path, data_dir = Path(truth_path), Path(data_dir)
    if truth_path.resolve() != (data_dir / TRUTH_FILE).resolve():
        raise DataError(
            f"--truth {truth_path}: not the truth file of the table's data set {data_dir}; pass "
            f"{data_dir / TRUTH_FILE} (the truth must belong to the data set the runs were trained on)"
        )
    truth = read_truth(data_dir, data)
    if truth is None:
        raise DataError(
            f"--truth {truth_path}: the data set {data_dir} has no truth file (only data sets made by "
            f"a generator have one, see `locus data --help`); drop --truth"
        )
    return truth


def references(data, truth: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    """Rows ``reference, benchmark, value, model`` of the Bayes ceiling and the best single model (chosen
    on the training split's true probabilities) on `split`, overall and per benchmark."""
    from locus.data.canonical import truth_matrix

    train_ids = data.split_queries("train")["prompt_id"].to_numpy(np.int64)
    train_p = truth_matrix(truth, train_ids, data.model_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model without training pairs: mean of nothing
        means = np.nan_to_num(np.nanmean(train_p, axis=0), nan=-np.inf)
    best = int(np.argmax(means))  # ties: the lower model_id (columns ascend by model_id)
    queries = data.split_queries(split)
    ids = queries["prompt_id"].to_numpy(np.int64)
    benchmarks = queries["benchmark"].astype(str).to_numpy()
    labels, p = data.label_matrix(ids), truth_matrix(truth, ids, data.model_ids)
    onehot = np.full(labels.shape, -1.0)
    onehot[:, best] = 1.0
    single, den = per_query(onehot, labels, p)[EXPECTED]
    has = ~np.isnan(p).all(axis=1)
    ceiling = np.where(has, np.nanmax(np.where(has[:, None], p, 0.0), axis=1), 0.0)
    name = str(data.models["name"].iloc[best])
    rows = []
    for bench in [OVERALL] + sorted(set(benchmarks.tolist())):
        sel = np.ones(len(ids), bool) if bench == OVERALL else benchmarks == bench
        d = float(den[sel].sum())
        rows.append(("bayes_ceiling", bench, float(ceiling[sel].sum()) / d if d else np.nan, None))
        rows.append(("best_single_train", bench, float(single[sel].sum()) / d if d else np.nan, name))
    return pd.DataFrame(rows, columns=REFERENCE_COLUMNS)


def with_expected(coll: Collection, expected_rows: pd.DataFrame) -> Collection:
    """`coll` with the runs' expected routing accuracy (:func:`locus.experiments.comparison.query_values`)
    added to its method rows and seed aggregates (metric ``expected_routing``)."""
    rows = pd.concat([coll.method_rows, expected_rows], ignore_index=True)
    agg = aggregate(rows, ["method", "train_size", "benchmark", "metric"])
    return dataclasses.replace(coll, method_rows=rows, method_agg=agg)


def caption_sentence(refs: pd.DataFrame, split: str = "test") -> str:
    """What the expected rows mean, with the Bayes ceiling (LaTeX)."""
    overall = refs[refs["benchmark"] == OVERALL].set_index("reference")
    ceiling = 100 * float(overall.loc["bayes_ceiling", "value"])
    return (
        f"Expected rows: mean over the {split} queries of the generator's true probability that the routed "
        f"model answers correctly (the data set's generator truth; free of the 0/1 label noise), intervals as above; Bayes "
        f"ceiling ({ceiling:.2f}): mean of the highest true probability per query; best single model: the "
        f"highest mean true probability on the training split."
    )
