"""Active onboarding: which k queries to evaluate a new model on (selectors of :mod:`locus.onboard`).

One LOCUS run trained without the held-out models (the onboarding experiment's run with the most training
models) embeds each held-out model from the k training-split queries a selector picks (the model's own
training-split scores answer them, only those), and predicts its test queries:

- **correctness accuracy**: correct test pairs of the held-out models over all their labelled test pairs
  (micro mean, as the onboarding heat map), pooled over the repeats (seeds);
- **routing regret**: on test queries every held-out model answered, the oracle's accuracy (best held-out
  model per query) minus the accuracy of routing each query to the held-out model with the highest predicted
  probability, averaged over repeats.

Intervals: percentile bootstrap over the held-out models (resampled with replacement; regret re-routes among
the resampled models), the same resamples for every cell. The table: the smallest k at which each selector's
accuracy reaches random selection's accuracy at the largest k, and whether it does within a quarter of it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locus.errors import ConfigError, DataError

CI_LEVEL = 0.95


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


def _bootstrap_models(n_models: int, n_resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng([int(seed), 7]).integers(0, n_models, size=(n_resamples, n_models))


def _regret(logits: np.ndarray, labels: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Regret of routing among models `idx` ([B, h] resamples, or [h]) on rows where every model is labelled."""
    idx = np.atleast_2d(idx)
    out = np.empty(len(idx))
    for s in range(0, len(idx), 200):  # chunks keep the [queries x resamples x models] arrays small
        b = idx[s : s + 200]
        lg, lb = logits[:, b], labels[:, b]  # [Q, B, h]
        routed = np.take_along_axis(lb, np.argmax(lg, axis=2)[..., None], axis=2)[..., 0]
        out[s : s + 200] = (lb.max(axis=2) - routed).mean(axis=0)
    return out


def summarise(cells: dict, labels: np.ndarray, n_resamples: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per selector and k with accuracy, regret and their intervals; one row per draw)."""
    from locus.constants import BOOTSTRAP_RESAMPLES

    n_resamples = int(n_resamples or BOOTSTRAP_RESAMPLES)
    h = labels.shape[1]
    full = np.isfinite(labels).all(axis=1)
    labelled = np.isfinite(labels)
    y = labels >= 0.5
    idx = _bootstrap_models(h, n_resamples, seed)
    lo, hi = 100 * (1 - CI_LEVEL) / 2, 100 * (1 + CI_LEVEL) / 2
    draws, rows = [], []
    for name, k in dict.fromkeys((n, k) for n, k, _ in cells):
        reps = sorted(r for n, kk, r in cells if (n, kk) == (name, k))
        correct = np.zeros(h)
        pairs = labelled.sum(axis=0).astype(float) * len(reps)
        regrets, boot_regret = [], np.zeros(n_resamples)
        for r in reps:
            lg = cells[(name, k, r)]
            c = (((lg >= 0) == y) & labelled).sum(axis=0)
            correct += c
            reg = float(_regret(lg[full], labels[full], np.arange(h))[0]) if full.any() else np.nan
            regrets.append(reg)
            draws.append(
                {
                    "selector": name,
                    "k": k,
                    "repeat": r,
                    "accuracy": c.sum() / labelled.sum(),
                    "regret": reg,
                }
            )
            if full.any():
                boot_regret += _regret(lg[full], labels[full], idx) / len(reps)
        boot_acc = correct[idx].sum(axis=1) / pairs[idx].sum(axis=1)
        rows.append(
            {
                "selector": name,
                "k": k,
                "accuracy": correct.sum() / pairs.sum(),
                "accuracy_low": np.percentile(boot_acc, lo),
                "accuracy_high": np.percentile(boot_acc, hi),
                "regret": float(np.mean(regrets)),
                "regret_low": np.percentile(boot_regret, lo) if full.any() else np.nan,
                "regret_high": np.percentile(boot_regret, hi) if full.any() else np.nan,
                "repeats": len(reps),
                "models": h,
                "routing_queries": int(full.sum()),
            }
        )
    return pd.DataFrame(rows), pd.DataFrame(draws)


def reach_table(cells: pd.DataFrame, reference: str = "random") -> pd.DataFrame:
    """Per selector: the smallest k whose accuracy reaches `reference`'s accuracy at the largest k."""
    k_max = int(cells["k"].max())
    ref = cells[(cells["selector"] == reference) & (cells["k"] == k_max)]
    if ref.empty:
        raise ConfigError(f"active onboarding: the table needs the {reference!r} selector at k = {k_max}.")
    ref = ref.iloc[0]
    rows = []
    for name, g in cells.groupby("selector", sort=False):
        hit = g[g["accuracy"] >= ref["accuracy"]].sort_values("k")
        row = {
            "selector": name,
            "reference_k": k_max,
            "reference_accuracy": ref["accuracy"],
            "reference_low": ref["accuracy_low"],
            "reference_high": ref["accuracy_high"],
            "k_reach": int(hit["k"].iloc[0]) if len(hit) else np.nan,
        }
        first = hit.iloc[0] if len(hit) else None
        row["accuracy_at_k_reach"] = first["accuracy"] if first is not None else np.nan
        row["low_at_k_reach"] = first["accuracy_low"] if first is not None else np.nan
        row["high_at_k_reach"] = first["accuracy_high"] if first is not None else np.nan
        row["within_quarter"] = bool(len(hit) and hit["k"].iloc[0] <= k_max / 4)
        rows.append(row)
    return pd.DataFrame(rows)


def _pct(x) -> str:
    return "--" if pd.isna(x) else f"{100 * x:.2f}"


def latex_table(table: pd.DataFrame, title: str) -> str:
    from locus.render.labels import escape

    k_max = int(table["reference_k"].iloc[0])
    ref = table.iloc[0]
    winners = table[(table["selector"] != "random") & table["within_quarter"]]["selector"].tolist()
    verdict = (
        f"{', '.join(winners)} reach{'es' if len(winners) == 1 else ''} it with at most {k_max // 4} evaluations."
        if winners
        else f"No selector other than random reaches it with {k_max // 4} evaluations or fewer."
    )
    caption = (
        f"{escape(title)}. Smallest number of evaluations $k$ at which each selector's correctness accuracy of the "
        f"held-out models reaches random selection's at $k={k_max}$ "
        f"({_pct(ref['reference_accuracy'])}\\%, 95\\% CI {_pct(ref['reference_low'])}--"
        f"{_pct(ref['reference_high'])}; bootstrap over held-out models); -- = not within the $k$ tried. "
        f"{escape(verdict)}"
    )
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\caption{{{caption}}}",
        "\\label{tab:active_onboarding}",
        "\\begin{tabular}{@{}lrcc@{}}",
        "\\toprule",
        f"Selector & $k$ reaching & Accuracy at that $k$ (\\%) [95\\% CI] & $k \\le {k_max // 4}$ \\\\",
        "\\midrule",
    ]
    for _, r in table.iterrows():
        k = "--" if pd.isna(r["k_reach"]) else str(int(r["k_reach"]))
        acc = (
            "--"
            if pd.isna(r["k_reach"])
            else f"{_pct(r['accuracy_at_k_reach'])} [{_pct(r['low_at_k_reach'])}, {_pct(r['high_at_k_reach'])}]"
        )
        lines.append(f"{escape(r['selector'])} & {k} & {acc} & {'yes' if r['within_quarter'] else 'no'} \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)


def figure(cells: pd.DataFrame, title: str):
    from locus.render.figures import plt

    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8))
    for name, g in cells.groupby("selector", sort=False):
        g = g.sort_values("k")
        for ax, col in zip(axes, ("accuracy", "regret")):
            (line,) = ax.plot(g["k"], 100 * g[col], marker="o", label=name)
            ax.fill_between(g["k"], 100 * g[f"{col}_low"], 100 * g[f"{col}_high"], color=line.get_color(), alpha=0.15)
    ks = sorted(cells["k"].unique())
    for ax, what in zip(axes, ("correctness accuracy (%)", "routing regret (points)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.minorticks_off()
        ax.set_xlabel("evaluations per held-out model (k)")
        ax.set_ylabel(what)
    axes[0].legend(fontsize=7)
    c = cells.iloc[0]
    fig.suptitle(title, fontsize=9)
    fig.text(
        0.01,
        -0.08,
        f"{int(c['models'])} held-out models embedded from k training-split queries chosen by each selector; "
        f"accuracy: micro mean over their test pairs, {int(c['repeats'])} repeats pooled. Regret: on "
        f"{int(c['routing_queries'])} test queries, the best held-out model's accuracy (oracle) minus that of "
        "routing to the held-out model with the highest predicted probability. Bands: 95% percentile bootstrap "
        "over held-out models.",
        fontsize=7,
        wrap=True,
    )
    fig.tight_layout()
    return fig


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
    from locus.render.views import write_figure
    from locus.runs import held_out_ids

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
    frame = pd.concat([grid.assign(kind="cell"), draws.assign(kind="draw")], ignore_index=True)
    write_figure(figure(grid, title), frame, out)
    write_text(table_out, latex_table(table, title))
    write_csv(table, Path(table_out).with_suffix(".csv"))
    return {"grid": grid, "table": table, "held_out": len(held)}
