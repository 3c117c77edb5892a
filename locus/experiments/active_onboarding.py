"""Active onboarding: which k queries to evaluate a new model on (selectors of :mod:`locus.onboard`).

One LOCUS run trained without the held-out models (the onboarding experiment's run with the most training
models) embeds each held-out model from the k training-split queries a selector picks (the model's own
training-split scores answer them, only those), and predicts its test queries:

- **correctness accuracy**: correct test pairs of the held-out models over all their labelled test pairs
  (micro mean, as the onboarding heat map), pooled over the repeats (seeds);
- **routing regret**: on test queries every held-out model answered, the oracle's accuracy (best held-out
  model per query) minus the accuracy of routing each query to the held-out model with the highest predicted
  probability, averaged over repeats.

Figure bands: percentile bootstrap over repeats. Table: the smallest k at which each selector's accuracy
reaches random selection's at the largest k, and the smallest k from which every larger k tried is not
significantly below it (paired percentile bootstrap over the held-out models, the same resamples for every
cell; monotone by construction, unlike "the first k not significantly below", which a selector can pass at
k = 16 and fail at k = 32); and whether either is <= a quarter of it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locus.errors import ConfigError, DataError

CI_LEVEL = 0.95
# the CSVs (the report reads them by these lists): the figure's cells (kind = cell), draws (kind = draw) and the
# best single model's line (kind = best_single); the table's row per selector (:func:`reach_table`)
FIGURE_COLUMNS = [
    "selector",
    "k",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "accuracy_models_low",
    "accuracy_models_high",
    "regret",
    "regret_low",
    "regret_high",
    "repeats",
    "models",
    "routing_queries",
    "vs_reference",
    "vs_reference_low",
    "vs_reference_high",
    "kind",
    "repeat",
    "model_id",
    "val_acc",
    "routing_acc",
    "oracle",
    "name",
]
TABLE_COLUMNS = [
    "selector",
    "reference_k",
    "reference_accuracy",
    "reference_low",
    "reference_high",
    *(
        f"{col}{part}"
        for col in ("k_reach", "k_not_below_onward")
        for part in ("", "_diff", "_diff_low", "_diff_high", "_within_quarter")
    ),
]


def _logits_cells(ckpt, data, enc, held, sizes, selectors, repeats: int, seed: int, progress=None):
    """{(selector, k, repeat): test logits [test queries x held-out models]} and the test labels."""
    from locus.data.canonical import pairs_to_matrix
    from locus.onboard import Context, pool_patterns, select

    method = ckpt.method
    train = data.split_queries("train").sort_values("prompt_id")
    cand = train["prompt_id"].to_numpy(np.int64)
    vectors = enc.take(cand)
    patterns = pool_patterns(method, vectors, pairs_to_matrix(data.scores, cand, ckpt.model_ids))
    answers = pairs_to_matrix(data.scores, cand, held)  # the held-out models' training-split scores
    test = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    phi = enc.take(test)
    labels = data.label_matrix(test, held)
    benchmarks = train["benchmark"].astype(str).to_numpy()
    cells, static = {}, {}
    for name in selectors:
        for r in range(repeats):
            for k in sizes:
                z = []
                for j in range(len(held)):
                    mask = np.isfinite(answers[:, j])
                    if mask.sum() < k:
                        raise DataError(
                            f"held-out model {int(held[j])} has {int(mask.sum())} training-split evaluations, "
                            f"fewer than k = {k}; lower the sizes."
                        )
                    pos = np.flatnonzero(mask)
                    context = Context(
                        vectors=vectors[pos],
                        benchmarks=benchmarks[pos],
                        patterns=patterns[pos],
                        method=method,
                        seed=int(seed) * 1000 + r,
                        oracle=lambda p, j=j, pos=pos: answers[pos[p], j],
                    )
                    key = (name, r, k, pos.tobytes()) if name not in ("disagreement", "uncertainty") else None
                    if key is None or key not in static:
                        chosen = select(name, np.arange(len(pos)), k, context)
                        if key is not None:
                            static[key] = chosen
                    chosen = chosen if key is None else static[key]
                    z.append(method.embed(vectors[pos[chosen]], answers[pos[chosen], j].astype(np.float32)))
                cells[(name, int(k), r)] = method.logits_for_embeddings(phi, np.stack(z))
            if progress:
                progress(f"{name}: repeat {r + 1}/{repeats} done")
    return cells, labels


def _resamples(n: int, n_resamples: int, seed: int, key: int) -> np.ndarray:
    """[n_resamples, n] indices drawn with replacement (seeded; the same for every cell)."""
    return np.random.default_rng([int(seed), key]).integers(0, n, size=(n_resamples, n))


def regret(logits: np.ndarray, labels: np.ndarray) -> float:
    """Oracle accuracy minus the accuracy of routing each row (query) to its argmax column (model)."""
    routed = labels[np.arange(len(labels)), np.argmax(logits, axis=1)]
    return float(np.mean(labels.max(axis=1) - routed)) if len(labels) else float("nan")


def summarise(cells: dict, labels: np.ndarray, n_resamples: int, seed: int, reference: str = "random"):
    """(one row per selector and k, one row per draw). Columns of a row: accuracy and regret with a 95% band
    over repeats (bootstrap of the mean over repeats); the accuracy's interval over held-out models; and
    the paired difference to `reference` at the largest k with its interval (both resampling held-out
    models, the same resamples for every cell)."""
    from locus.constants import BOOTSTRAP_RESAMPLES

    n_resamples = int(n_resamples or BOOTSTRAP_RESAMPLES)
    h = labels.shape[1]
    full = np.isfinite(labels).all(axis=1)
    labelled = np.isfinite(labels)
    y = labels >= 0.5
    n_pairs = labelled.sum(axis=0).astype(float)
    lo, hi = 100 * (1 - CI_LEVEL) / 2, 100 * (1 + CI_LEVEL) / 2
    by_model = _resamples(h, n_resamples, seed, 7)
    draws, rows, boot = [], [], {}
    for name, k in dict.fromkeys((n, k) for n, k, _ in cells):
        reps = sorted(r for n, kk, r in cells if (n, kk) == (name, k))
        correct = np.stack([(((cells[(name, k, r)] >= 0) == y) & labelled).sum(axis=0) for r in reps])  # [R, h]
        regrets = np.array([regret(cells[(name, k, r)][full], labels[full]) for r in reps])
        acc_r = correct.sum(axis=1) / n_pairs.sum()
        draws += [
            {"selector": name, "k": k, "repeat": r, "accuracy": a, "regret": g} for r, a, g in zip(reps, acc_r, regrets)
        ]
        by_rep = _resamples(len(reps), n_resamples, seed, 8)
        boot[(name, k)] = correct.sum(axis=0)[by_model].sum(axis=1) / (len(reps) * n_pairs[by_model].sum(axis=1))
        rows.append(
            {
                "selector": name,
                "k": k,
                "accuracy": correct.sum() / (len(reps) * n_pairs.sum()),
                "accuracy_low": np.percentile(acc_r[by_rep].mean(axis=1), lo),
                "accuracy_high": np.percentile(acc_r[by_rep].mean(axis=1), hi),
                "accuracy_models_low": np.percentile(boot[(name, k)], lo),
                "accuracy_models_high": np.percentile(boot[(name, k)], hi),
                "regret": float(np.mean(regrets)),
                "regret_low": np.percentile(regrets[by_rep].mean(axis=1), lo),
                "regret_high": np.percentile(regrets[by_rep].mean(axis=1), hi),
                "repeats": len(reps),
                "models": h,
                "routing_queries": int(full.sum()),
            }
        )
    grid = pd.DataFrame(rows)
    k_max = int(grid["k"].max())
    if (reference, k_max) not in boot:
        raise ConfigError(f"active onboarding: the table needs the {reference!r} selector at k = {k_max}.")
    ref = grid[(grid["selector"] == reference) & (grid["k"] == k_max)]["accuracy"].iloc[0]
    diffs = [boot[(n, k)] - boot[(reference, k_max)] for n, k in zip(grid["selector"], grid["k"])]
    grid["vs_reference"] = grid["accuracy"] - ref
    grid["vs_reference_low"] = [np.percentile(d, lo) for d in diffs]
    grid["vs_reference_high"] = [np.percentile(d, hi) for d in diffs]
    return grid, pd.DataFrame(draws)


def onward(passes) -> np.ndarray:
    """Per position of a k-sorted sequence of tests (`passes`: bools): whether it and every later one pass;
    the first True is the smallest k from which every larger k passes."""
    ok = np.asarray(passes, dtype=bool)
    return np.logical_and.accumulate(ok[::-1])[::-1]


def reach_table(cells: pd.DataFrame, reference: str = "random") -> pd.DataFrame:
    """Per selector: the smallest k whose accuracy reaches `reference`'s at the largest k (mean >= it:
    `k_reach`), and the smallest k from which every larger k tried is not significantly below it (upper end
    of the paired interval >= 0 at that k and all larger ones: `k_not_below_onward`, :func:`onward`; NaN when
    the largest k is significantly below), each with the paired difference and its interval at that k."""
    k_max = int(cells["k"].max())
    ref = cells[(cells["selector"] == reference) & (cells["k"] == k_max)].iloc[0]
    rows = []
    for name, g in cells.groupby("selector", sort=False):
        g = g.sort_values("k")
        row = {
            "selector": name,
            "reference_k": k_max,
            "reference_accuracy": ref["accuracy"],
            "reference_low": ref["accuracy_models_low"],
            "reference_high": ref["accuracy_models_high"],
        }
        stays = onward(g["vs_reference_high"].to_numpy(np.float64) >= 0)
        for col, hit in (("k_reach", g[g["vs_reference"] >= 0]), ("k_not_below_onward", g[stays])):
            first = hit.iloc[0] if len(hit) else None
            row[col] = int(first["k"]) if first is not None else np.nan
            for part in ("", "_low", "_high"):
                row[f"{col}_diff{part}"] = first[f"vs_reference{part}"] if first is not None else np.nan
            row[f"{col}_within_quarter"] = bool(first is not None and first["k"] <= k_max / 4)
        rows.append(row)
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _pct(x) -> str:
    return "--" if pd.isna(x) else f"{100 * x:.2f}"


def _diff(r, col: str) -> str:
    if pd.isna(r[col]):
        return "--"
    return f"{int(r[col])} & {100 * r[col + '_diff']:+.2f} [{100 * r[col + '_diff_low']:+.2f}, {100 * r[col + '_diff_high']:+.2f}]"


def latex_table(table: pd.DataFrame, title: str) -> str:
    from locus.render.labels import escape

    k_max = int(table["reference_k"].iloc[0])
    q = k_max // 4
    ref = table.iloc[0]
    others = table[table["selector"] != "random"]
    reach = others[others["k_reach_within_quarter"]]["selector"].tolist()
    close = others[others["k_not_below_onward_within_quarter"]]["selector"].tolist()
    verdict = (
        f"Reaching it (mean) with at most {q} evaluations: {', '.join(reach)}."
        if reach
        else f"No selector reaches it (mean) with {q} evaluations or fewer."
    )
    verdict += (
        f" Not significantly below it from at most {q} evaluations on: {', '.join(close)}."
        if close
        else f" None stays not significantly below it from {q} or fewer evaluations on."
    )
    caption = (
        f"{escape(title)}. Smallest number of evaluations $k$ at which each selector's correctness accuracy of the "
        f"held-out models reaches random selection's at $k={k_max}$ "
        f"({_pct(ref['reference_accuracy'])}\\%, 95\\% CI {_pct(ref['reference_low'])}--"
        f"{_pct(ref['reference_high'])}, bootstrap over held-out models): first $k$ whose mean is at least it, and "
        "the smallest $k$ from which every larger $k$ tried is not significantly below it (the paired 95\\% "
        "bootstrap interval of the difference, resampling held-out models, reaches 0 at that $k$ and at every "
        "larger one; monotone: a selector not below at one $k$ but below at a larger one counts only from "
        "beyond it); differences in points, at the $k$ given; -- = not within the $k$ tried. "
        f"{escape(verdict)}"
    )
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\caption{{{caption}}}",
        "\\label{tab:active_onboarding}",
        "\\begin{tabular}{@{}lrcrc@{}}",
        "\\toprule",
        "Selector & $k$ reaching & Difference [95\\% CI] & $k$ onward not below & Difference [95\\% CI] \\\\",
        "\\midrule",
    ]
    for _, r in table.iterrows():
        cells = [_diff(r, "k_reach"), _diff(r, "k_not_below_onward")]
        lines.append(f"{escape(r['selector'])} & " + " & ".join(c if c != "--" else "-- & --" for c in cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)


def write_active_onboarding(
    run,
    data_dir,
    encodings_path,
    out,
    table_out,
    sizes,
    selectors,
    repeats: int = 3,
    seed: int = 0,
    held_out_names=None,
    data_label: str | None = None,
    n_resamples: int | None = None,
    progress=print,
) -> dict:
    """Figure (PDF + PNG + CSV) and table (LaTeX + CSV) of the selectors on `run`'s held-out models."""
    from pathlib import Path

    from locus import run_artifacts
    from locus.atomic import write_text
    from locus.data.canonical import read_dataset
    from locus.data.encodings import check_matches, read_encodings
    from locus.onboard import check_selector
    from locus.render import write_csv
    from locus.render.figures import output_paths
    from locus.render.views import write_figure
    from locus.runs import held_out_ids

    if output_paths(out)["csv"].resolve() == Path(table_out).with_suffix(".csv").resolve():
        raise ConfigError(f"--out {out} and --table {table_out}: both would write the same CSV; use two directories.")
    sizes = sorted({int(k) for k in sizes})
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"--sizes: give evaluation counts >= 1, got {sizes}")
    selectors = list(dict.fromkeys(check_selector(s) for s in selectors))
    if "random" not in selectors:
        raise ConfigError("--selectors: include random (the table's reference).")
    data = read_dataset(data_dir)
    enc = read_encodings(encodings_path)
    fingerprint = check_matches(enc, data.queries, str(data_dir))
    ckpt = run_artifacts.load_checkpoint(run)
    if getattr(ckpt.method, "name", None) != "locus":
        raise DataError(f"{run}: a {ckpt.method.name!r} run; onboarding embeds with a LOCUS run.")
    run_artifacts.check_same_data(
        run, ckpt.config.get("data_fingerprint"), fingerprint, data_dir, "re-run its training rule."
    )
    held = held_out_ids(data.models, held_out_names, f"{data_dir}/models.parquet")
    seen = np.intersect1d(np.asarray(ckpt.model_ids, dtype=np.int64), held)
    if len(seen):
        raise DataError(
            f"{run}: trained on {len(seen)} of the {len(held)} held-out models; give a run trained without "
            "them (locus train --hold-out)."
        )
    n_train = len(data.split_queries("train"))
    if sizes[-1] > n_train:
        raise ConfigError(f"--sizes: {sizes[-1]} exceeds the {n_train} training-split queries of {data_dir}.")
    cells, labels = _logits_cells(ckpt, data, enc, held, sizes, selectors, int(repeats), int(seed), progress)
    grid, draws = summarise(cells, labels, n_resamples, seed)
    table = reach_table(grid)
    title = (
        f"Active onboarding: {len(held)} held-out models, LOCUS trained on {len(ckpt.model_ids)} others, "
        f"{data_label or data_dir}"
    )
    from locus.experiments.onboarding import best_single_row, held_out_best_single
    from locus.render.onboarding import active_onboarding_figure

    best = held_out_best_single(data, held)
    best["name"] = str(data.models.set_index("model_id").loc[best["model_id"], "name"])
    frame = pd.concat([grid.assign(kind="cell"), draws.assign(kind="draw"), best_single_row(best)], ignore_index=True)
    frame = frame.reindex(columns=FIGURE_COLUMNS)
    write_figure(active_onboarding_figure(grid, title, best), frame, out)
    write_text(table_out, latex_table(table, title))
    write_csv(table, Path(table_out).with_suffix(".csv"))
    return {"grid": grid, "table": table, "held_out": len(held)}
