"""A human-readable summary of a canonical data set (Markdown): sizes, accuracies, oracle and best single model,
and the pool statistics of :mod:`locus.data.stats`.

The title carries the label the caller gives (``locus summary --label``); nothing here assumes a
particular source.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from locus import atomic
from locus.data.canonical import MANIFEST, SPLITS, EvalData
from locus.data.stats import format_stats, pool_statistics


def split_stats(data: EvalData) -> pd.DataFrame:
    rows = []
    for split in SPLITS:
        q = data.split_queries(split)
        labels = data.label_matrix(q["prompt_id"])
        evaluated = ~np.isnan(labels)
        with warnings.catch_warnings():  # a model without scores in this split has no mean (NaN)
            warnings.simplefilter("ignore", RuntimeWarning)
            per_model = np.nanmean(labels, axis=0)
        best = int(np.nanargmax(per_model))
        rows.append(
            {
                "split": split,
                "queries": len(q),
                "pairs": int(evaluated.sum()),
                "coverage": float(evaluated.mean()),
                "mean_score": float(np.nanmean(labels)),
                "oracle": float(np.nanmean(np.nanmax(np.where(evaluated, labels, -np.inf), axis=1))),
                "best_single": float(per_model[best]),
                "best_single_model": data.models["name"].iat[best],
            }
        )
    return pd.DataFrame(rows)


def benchmark_stats(data: EvalData) -> pd.DataFrame:
    merged = data.scores.merge(data.queries[["prompt_id", "benchmark", "split"]], on="prompt_id")
    counts = data.queries.pivot_table(
        index="benchmark", columns="split", values="prompt_id", aggfunc="count", fill_value=0
    ).reindex(columns=list(SPLITS), fill_value=0)
    acc = merged.groupby("benchmark")["score"].mean().rename("mean_score")
    out = counts.join(acc).reset_index()
    return out.sort_values("test", ascending=False).reset_index(drop=True)


def _md_table(df: pd.DataFrame, floatfmt: str = "{:.4f}") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = [floatfmt.format(v) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_summary(data: EvalData, label: str) -> str:
    models = data.models
    parts = [f"# Data summary: {label}", "", f"Source directory: `{data.source}`", ""]
    parts.append(f"- models: {len(models)}")
    if "params_b" in models.columns:
        total = float(models["params_b"].sum())
        parts.append(f"- total parameters of the pool: {total:,.1f} B (the paper's 112-model pool: about 1,930 B)")
    parts.append(
        f"- queries: {len(data.queries)}; benchmarks: {data.queries['benchmark'].nunique()}; "
        f"categories: {data.queries['category'].nunique()}"
    )
    parts.append(
        f"- scored (query, model) pairs: {len(data.scores)} "
        f"({len(data.scores) / (len(data.queries) * len(models)):.1%} of all pairs)"
    )
    binary = np.isin(data.scores["score"].to_numpy(), (0.0, 1.0)).mean()
    parts.append(f"- binary scores: {binary:.1%}")
    overlap = data.queries.groupby("prompt")["split"].nunique().gt(1).sum()
    parts.append(f"- prompt texts found in more than one split: {int(overlap)}")
    options = _written_with(data.source)
    if options:
        parts.append(f"- written with: {options}")
    parts += [
        "",
        "## Splits",
        "",
        "`oracle`: mean over queries of the best score of any model; `best_single`: the best model's mean "
        "score on that split.",
        "",
        _md_table(split_stats(data)),
        "",
        "## Benchmarks (query counts per split, mean score over all pairs)",
        "",
        _md_table(benchmark_stats(data)),
        "",
        format_stats(pool_statistics(data)),
    ]
    return "\n".join(parts)


def _written_with(directory: str) -> str:
    """The data-set options recorded in the manifest ('' when there is none)."""
    try:
        manifest = atomic.read_manifest(directory, MANIFEST)
    except atomic.FileSetError:
        return ""
    options = (manifest or {}).get("options") or {}
    return ", ".join(f"{k}: {v}" for k, v in sorted(options.items()))
