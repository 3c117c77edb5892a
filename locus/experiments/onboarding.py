"""New-model onboarding (paper §4.2, figure ``sample_eff_ood_test``): how well LOCUS embeds models it has
never seen, from a few of their evaluations, without retraining.

- **held-out models** (:func:`held_out_ids`): never in training; the data set's ``held_out`` column (the
  paper's 16 hold-outs in the embedded pool) or a list of names;
- **training models** (:func:`training_models`): the first ``count`` of one seeded permutation of the
  others, so growing counts are nested (0 = all). Such a run (``locus train --hold-out ... --train-models``)
  sees nothing of the held-out models; the "all models" row is an ordinary run of the whole pool (its
  encoder saw the held-out models' training evaluations, as the paper's top row);
- **onboarding** (:func:`onboarding_scores`): each held-out model is embedded by one forward pass of a
  run's encoder from ``k`` of its **training-split** evaluations (the same seeded draw for every run, so
  rows differ only by the encoder) and the decoder predicts its test queries. A cell is the correctness
  accuracy over all test pairs of the held-out models (micro mean), averaged over ``repeats`` draws.

Runs are read through :mod:`locus.run_artifacts`; the figure is :func:`locus.render.onboarding.onboarding_figure`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from locus.errors import ConfigError, DataError
from locus.runs import DRAW_ONBOARD, held_out_ids

# the figure's CSV: the grid's cells (kind = cell) and every draw (kind = draw); the report reads it by this list
CSV_COLUMNS = [
    "row",
    "k",
    "accuracy",
    "std",
    "draws",
    "n_train_models",
    "run",
    "kind",
    "repeat",
    "model_id",
    "n_pairs",
    "correct",
    "name",
]


# --------------------------------------------------------------------------------------------------
# onboarding accuracy of one run
# --------------------------------------------------------------------------------------------------
def draw_evaluations(train_scores: pd.DataFrame, model_id: int, k: int, repeat: int, seed: int):
    """(prompt ids, scores) of `k` of the model's training-split evaluations (all if it has fewer)."""
    from locus.geometry.views import rng_for, subsample

    rows = train_scores[train_scores["model_id"] == model_id].sort_values("prompt_id")
    if rows.empty:
        raise DataError(f"held-out model {model_id} has no training-split evaluation to embed it from.")
    ids = rows["prompt_id"].to_numpy(np.int64)
    chosen = subsample(ids, min(int(k), len(ids)), rng_for(seed, DRAW_ONBOARD, model_id, int(k), repeat))
    scores = rows.set_index("prompt_id")["score"].reindex(chosen).to_numpy(np.float32)
    return chosen, scores


def onboarding_scores(method, data, encodings, held_out, sizes, repeats: int, seed: int) -> pd.DataFrame:
    """One row per (k, repeat, held-out model): correct and labelled test pairs of the model embedded from
    k evaluations by `method` (a fitted LOCUS method)."""
    from locus.evaluation import correctness_metrics

    train = data.split_scores("train")
    test_ids = data.split_queries("test")["prompt_id"].to_numpy(np.int64)
    phi = encodings.take(test_ids)
    labels = data.label_matrix(test_ids, np.asarray(held_out, dtype=np.int64))
    rows = []
    for k in sizes:
        for r in range(repeats):
            z = np.stack(
                [
                    method.embed(encodings.take(ids), scores)
                    for ids, scores in (draw_evaluations(train, int(m), k, r, seed) for m in held_out)
                ]
            )
            logits = method.logits_for_embeddings(phi, z)
            for j, m in enumerate(held_out):
                c = correctness_metrics(logits[:, j : j + 1], labels[:, j : j + 1])
                n = int(c["n_pairs"])
                rows.append(
                    {
                        "k": int(k),
                        "repeat": r,
                        "model_id": int(m),
                        "n_pairs": n,
                        "correct": int(round(c.get("correctness_acc", 0.0) * n)),
                    }
                )
    return pd.DataFrame(rows)


def accuracy_grid(scores: pd.DataFrame) -> pd.DataFrame:
    """Correctness accuracy per (row, k): micro mean over the held-out models' test pairs of each draw,
    then the mean (and std) over draws."""
    per_draw = scores.groupby(["row", "k", "repeat"], sort=False)[["correct", "n_pairs"]].sum()
    per_draw["accuracy"] = per_draw["correct"] / per_draw["n_pairs"]
    g = per_draw.groupby(["row", "k"], sort=False)["accuracy"]
    return pd.DataFrame({"accuracy": g.mean(), "std": g.std(ddof=1).fillna(0.0), "draws": g.size()}).reset_index()


def held_out_best_single(data, held) -> dict:
    """The best single model among the held-out models: the one with the highest validation accuracy (mean
    score over its labelled validation queries; :func:`locus.evaluation.best_single_model`, never test), and,
    on the routing queries of the active-onboarding regret (test queries every held-out model answered), its
    test ``routing_acc`` (routing every query to it), the ``oracle`` (best held-out model per query) and its
    ``regret`` = oracle − routing_acc (the regret panel's reference line)."""
    from locus.evaluation import best_single_model

    held = np.asarray(held, dtype=np.int64)
    val = data.label_matrix(data.split_queries("val")["prompt_id"].to_numpy(np.int64), held)
    if not np.isfinite(val).any():
        raise DataError("the held-out models have no validation label: no best single model to choose.")
    pos = best_single_model(val)
    test = data.label_matrix(data.split_queries("test")["prompt_id"].to_numpy(np.int64), held)
    full = test[np.isfinite(test).all(axis=1)]
    acc = float(np.mean(full[:, pos])) if len(full) else float("nan")
    oracle = float(np.mean(full.max(axis=1))) if len(full) else float("nan")
    return {
        "model_id": int(held[pos]),
        "val_acc": float(np.nanmean(val[:, pos])),
        "routing_acc": acc,
        "oracle": oracle,
        "regret": oracle - acc,
        "routing_queries": int(len(full)),
    }


def best_single_row(best: dict, name: str | None = None) -> pd.DataFrame:
    """The CSV row of the best single model's reference line (``kind = selector = best_single``)."""
    row = {"kind": "best_single", "selector": "best_single", **best}
    if name is not None:
        row["name"] = name
    return pd.DataFrame([row])


def write_onboarding(
    runs,
    data_dir,
    encodings_path,
    out,
    sizes,
    repeats: int = 1,
    seed: int = 0,
    held_out_names=None,
    data_label: str | None = None,
) -> dict:
    """The heat map (rows: the runs, by number of training models; columns: k) + CSV of every draw and
    cell. `runs` are LOCUS run directories: those trained without the held-out models and the run of the
    whole pool (its row is labelled "all")."""
    from locus import run_artifacts
    from locus.data.canonical import read_dataset
    from locus.data.encodings import check_matches, read_encodings
    from locus.render.onboarding import onboarding_figure
    from locus.render.views import write_figure

    data = read_dataset(data_dir)
    enc = read_encodings(encodings_path)
    fingerprint = check_matches(enc, data.queries, str(data_dir))
    held = held_out_ids(data.models, held_out_names, f"{data_dir}/models.parquet")
    sizes = sorted({int(k) for k in sizes})
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"--sizes: give evaluation counts >= 1, got {sizes}")
    parts, rows = [], []
    for run in map(Path, runs):
        ckpt = run_artifacts.load_checkpoint(run)
        if getattr(ckpt.method, "name", None) != "locus":
            raise DataError(f"{run}: a {ckpt.method.name!r} run; onboarding embeds with a LOCUS run.")
        run_artifacts.check_same_data(
            run, ckpt.config.get("data_fingerprint"), fingerprint, data_dir, "re-run its training rule."
        )
        trained = np.asarray(ckpt.model_ids, dtype=np.int64)
        seen = np.intersect1d(trained, held)
        if len(seen) and len(seen) < len(held):
            raise DataError(
                f"{run}: trained on {len(seen)} of the {len(held)} held-out models; give runs trained "
                f"without them (locus train --hold-out) or on the whole pool."
            )
        label = "all" if len(seen) else str(len(trained))
        if label in {r["row"] for r in rows}:
            raise DataError(f"{run}: two runs for the row {label!r}; give one run per number of training models.")
        rows.append({"row": label, "n_train_models": len(trained), "run": str(run)})
        parts.append(onboarding_scores(ckpt.method, data, enc, held, sizes, int(repeats), int(seed)).assign(row=label))
    scores = pd.concat(parts, ignore_index=True)
    grid = accuracy_grid(scores).merge(pd.DataFrame(rows), on="row")
    order = sorted(rows, key=lambda r: (r["row"] != "all", -r["n_train_models"]))
    names = dict(zip(data.models["model_id"].astype(int), data.models["name"].astype(str)))
    frame = pd.concat(
        [grid.assign(kind="cell"), scores.assign(kind="draw", name=scores["model_id"].map(names))], ignore_index=True
    ).reindex(columns=CSV_COLUMNS)
    title = f"New-model onboarding: {len(held)} held-out models, {data_label or data_dir}"
    write_figure(onboarding_figure(grid, [r["row"] for r in order], sizes, title), frame, out)
    return {"grid": grid, "held_out": [names[int(m)] for m in held], "rows": order}
