"""Regenerating EmbedLLM embeddings (paper App. H, figures ``relearning_embedllm_embeddings``,
``relear_embedllm_heatmap_cosine_distance`` (sic), ``relearn_embedllm_heatmap_test_disagreement``).

An EmbedLLM-style model G(e, x) = MLP_ψ(e ⊙ W x) (method ``embedllm``, ``hidden_layers`` ReLU layers) is
trained with its model embeddings; then G_ψ is frozen and every embedding is **re-learned**
(:meth:`EmbedLLM.embed`) from ``same`` (exactly the run's training evaluations of the model, the paper's
main case), ``overlap`` α (a set sharing the fraction α with them, :func:`locus.geometry.views.alternative_set`)
or ``subsample`` n (:func:`locus.geometry.views.subsample`). Per setting: the mean over models of the cosine
distance between original and re-learned embedding (:func:`row_cosine_distances`) and the **test
disagreement**, the share of evaluated test pairs whose thresholded prediction differs between the two
under the same G_ψ (:func:`prediction_disagreement`; paper: up to 8.1%).

For contrast LOCUS (the geometry reference run) is measured on the same settings: its embedding is one
forward pass, so on the same evaluations it reproduces itself. Draws are seeded per (kind, model,
setting, repeat) (:func:`locus.geometry.views.rng_for`), so EmbedLLM and LOCUS see the same perturbed sets;
validation and test queries never build an embedding. Figures: :mod:`locus.render.regeneration`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from locus.errors import ConfigError, DataError

# kinds of draws for locus.geometry.views.rng_for (fixed codes, distinct from the views' and onboarding's)
DRAW_REGEN_OVERLAP, DRAW_REGEN_SUBSAMPLE, DRAW_REGEN_TSNE = 6, 7, 8
METRICS = ("cosine_distance", "test_disagreement")
KINDS = ("same", "overlap", "subsample")
# the heat map's CSV: every summarised cell (:func:`summarize`) with its EmbedLLM setting and the metric drawn
# (the report reads it by this list)
HEATMAP_COLUMNS = [
    "method",
    "kind",
    "setting",
    *METRICS,
    "set_size",
    *(f"{m}_std" for m in METRICS),
    "draws",
    "hidden_layers",
    "dim",
    "metric",
]


# --------------------------------------------------------------------------------------------------
# pure functions
# --------------------------------------------------------------------------------------------------
def row_cosine_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 − cos(a_i, b_i) for each row pair of `a` and `b` (same shape [n, d]) -> [n]. A zero row has
    distance 1 to anything (cosine similarity 0)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"row_cosine_distances: shapes {a.shape} and {b.shape} differ or are not 2-d")
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    denom = na * nb
    sim = np.divide((a * b).sum(axis=1), denom, out=np.zeros(len(a)), where=denom > 0)
    return 1.0 - np.clip(sim, -1.0, 1.0)


def prediction_disagreement(logits_a: np.ndarray, logits_b: np.ndarray, mask=None) -> tuple[float, int]:
    """(share of pairs whose thresholded predictions (logit > 0 = correct) differ, number of pairs compared)
    between two logit matrices of the same shape; `mask` (bool, same shape) keeps only those pairs (e.g. the
    evaluated ones). No pair to compare is a DataError."""
    a, b = np.asarray(logits_a), np.asarray(logits_b)
    if a.shape != b.shape:
        raise ValueError(f"prediction_disagreement: shapes {a.shape} and {b.shape} differ")
    keep = np.ones(a.shape, bool) if mask is None else np.asarray(mask, bool)
    if keep.shape != a.shape:
        raise ValueError(f"prediction_disagreement: mask shape {keep.shape} != {a.shape}")
    n = int(keep.sum())
    if n == 0:
        raise DataError("prediction_disagreement: no (query, model) pair to compare")
    return float(((a > 0) != (b > 0))[keep].mean()), n


def settings_grid(n_ref: int, overlaps, sizes) -> list[tuple[str, float]]:
    """The (kind, setting) grid: ``same``, then the overlap fractions (in [0, 1]), then the subsample sizes
    that do not exceed `n_ref` (at least one size must fit, unless none is asked for)."""
    overlaps = sorted({float(a) for a in overlaps})
    bad = [a for a in overlaps if not 0.0 <= a <= 1.0]
    if bad:
        raise ConfigError(f"overlaps {bad} outside [0, 1]")
    sizes = sorted({int(n) for n in sizes})
    if sizes and sizes[0] < 1:
        raise ConfigError(f"subsample sizes must be >= 1, got {sizes}")
    kept = [n for n in sizes if n <= n_ref]
    if sizes and not kept:
        raise ConfigError(
            f"subsample sizes {sizes}: all exceed the {n_ref} training evaluations per model; use sizes <= {n_ref}."
        )
    return [("same", float("nan"))] + [("overlap", a) for a in overlaps] + [("subsample", float(n)) for n in kept]


def summarize(draws: pd.DataFrame) -> pd.DataFrame:
    """Mean (and std over repeats, 0 for one) of each metric per (method, kind, setting)."""
    keys = ["method", "kind", "setting"]
    g = draws.fillna({"setting": -1.0}).groupby(keys, sort=False)
    out = g[[*METRICS, "set_size"]].mean().join(g[list(METRICS)].std(ddof=1).fillna(0.0).add_suffix("_std"))
    out = out.assign(draws=g.size()).reset_index()
    out["setting"] = out["setting"].where(out["setting"] >= 0)
    return out


# --------------------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------------------
def embedllm_logits(method, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Logits [queries x len(z)] of EmbedLLM's frozen G_ψ for query encodings `phi` and model embeddings `z`."""
    import torch

    method.net.eval()
    with torch.no_grad():
        x = torch.from_numpy(np.ascontiguousarray(phi, dtype=np.float32))
        return method.net.matrix_logits(x, torch.from_numpy(np.array(z, dtype=np.float32))).numpy()


def load_embedllm(run, data, encodings, data_label: str | None = None):
    """An EmbedLLM run as a :class:`locus.geometry.views.Reference` (its embeddings, training sets, data)."""
    from locus.geometry.views import load_reference

    return load_reference(
        run,
        data,
        encodings,
        data_label,
        methods=("embedllm", "embedllm_plus"),
        why="regeneration re-learns EmbedLLM embeddings — give a run of method embedllm (results/regeneration/...).",
    )


def draw_set(ref, model_id: int, kind: str, setting: float, repeat: int, seed: int):
    """(prompt ids, scores) of one model's evaluation set for (kind, setting, repeat)."""
    from locus.geometry.views import alternative_set, rng_for, subsample

    ref_ids, ref_scores = ref.reference_set(model_id)
    if kind == "same":
        return ref_ids, ref_scores
    if kind == "subsample":
        ids = subsample(ref_ids, int(setting), rng_for(seed, DRAW_REGEN_SUBSAMPLE, model_id, int(setting), repeat))
        score_of = dict(zip(ref_ids.tolist(), ref_scores.tolist()))
        return ids, np.array([score_of[i] for i in ids.tolist()], np.float32)
    if kind == "overlap":
        ids, _ = alternative_set(
            ref_ids,
            ref.outside_ids(model_id),
            float(setting),
            rng_for(seed, DRAW_REGEN_OVERLAP, model_id, float(setting), repeat),
        )
        return ids, ref.scores_of(model_id, ids)
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def regenerate(
    ref, logits_fn, overlaps, sizes, repeats: int, seed: int, method_label: str, keep_embeddings: bool = False
) -> tuple[pd.DataFrame, list]:
    """(one row per (kind, setting, repeat): mean cosine distance original ↔ re-learned embedding over
    models, its std over models, test disagreement, mean set size; and, with `keep_embeddings`, a list of
    (kind, setting, repeat, z [M, dim]) of every re-learned matrix). `logits_fn(phi, z)` scores test queries
    with the run's frozen predictor."""
    test_ids = ref.dataset.split_queries("test")["prompt_id"].to_numpy(np.int64)
    phi = ref.encodings.take(test_ids)
    evaluated = ~np.isnan(ref.dataset.label_matrix(test_ids, ref.model_ids))
    original = logits_fn(phi, ref.z_ref)
    n_ref = min(len(ref.reference_set(int(m))[0]) for m in ref.model_ids)
    rows, kept = [], []
    for kind, setting in settings_grid(n_ref, overlaps, sizes):
        single = kind == "same" or (kind == "subsample" and int(setting) >= n_ref)
        for r in range(1 if single else int(repeats)):
            sets = [draw_set(ref, int(mid), kind, setting, r, seed) for mid in ref.model_ids]
            z = ref.embed_many(sets).astype(ref.z_ref.dtype, copy=False)
            sizes_ = [len(ids) for ids, _ in sets]
            dist = row_cosine_distances(ref.z_ref, z)
            dis, n_pairs = prediction_disagreement(original, logits_fn(phi, z), evaluated)
            rows.append(
                {
                    "method": method_label,
                    "kind": kind,
                    "setting": setting,
                    "repeat": r,
                    "cosine_distance": float(dist.mean()),
                    "cosine_distance_models_std": float(dist.std()),
                    "test_disagreement": dis,
                    "test_pairs": n_pairs,
                    "set_size": float(np.mean(sizes_)),
                    "n_models": int(len(ref.model_ids)),
                    "reference_size": int(n_ref),
                }
            )
            if keep_embeddings:
                kept.append((kind, setting, r, z))
    return pd.DataFrame(rows), kept


def measure_embedllm(run, data, encodings, overlaps, sizes, repeats: int = 1, seed: int = 0) -> pd.DataFrame:
    """Every draw of one EmbedLLM run, with its hidden layers and dimension."""
    ref = load_embedllm(run, data, encodings)
    draws, _ = regenerate(
        ref, lambda phi, z: embedllm_logits(ref.method, phi, z), overlaps, sizes, repeats, seed, "embedllm"
    )
    p = ref.method.params
    return draws.assign(hidden_layers=p.hidden_layers, dim=p.dim, embed_steps=p.embed_steps, run=str(run))


def measure_locus(run, data, encodings, overlaps, sizes, repeats: int = 1, seed: int = 0) -> pd.DataFrame:
    """Every draw of the LOCUS reference run (its embeddings are one forward pass: no optimisation)."""
    from locus.geometry.views import load_reference

    ref = load_reference(run, data, encodings)
    draws, _ = regenerate(ref, ref.method.logits_for_embeddings, overlaps, sizes, repeats, seed, "locus")
    return draws.assign(hidden_layers=pd.NA, dim=int(ref.z_ref.shape[1]), embed_steps=0, run=str(run))


def write_measures(
    runs, locus_run, data, encodings, out, overlaps, sizes, repeats: int = 1, seed: int = 0
) -> pd.DataFrame:
    """The CSV of every draw of the EmbedLLM `runs` and (when given) of the LOCUS run `locus_run`."""
    from locus.render.figures import write_csv

    parts = [measure_embedllm(r, data, encodings, overlaps, sizes, repeats, seed) for r in runs]
    if locus_run is not None:
        parts.append(measure_locus(locus_run, data, encodings, overlaps, sizes, repeats, seed))
    if not parts:
        raise ConfigError("regenerate measure: give --runs and/or --locus-run")
    frame = pd.concat(parts, ignore_index=True)
    write_csv(frame, Path(out))
    return frame


# --------------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------------
def read_measures(paths) -> pd.DataFrame:
    """The draws of several measure CSVs (written by :func:`write_measures`)."""
    frames = []
    for p in map(Path, paths):
        if not p.is_file():
            raise DataError(
                f"{p}: measures file not found; run `locus regenerate measure` (rule regeneration_measure)."
            )
        frame = pd.read_csv(p)
        missing = {"method", "kind", "setting", "repeat", *METRICS, "dim", "hidden_layers"} - set(frame.columns)
        if missing:
            raise DataError(f"{p}: not a regeneration measures file (missing columns {sorted(missing)}).")
        frames.append(frame)
    if not frames:
        raise ConfigError("give at least one measures file")
    return pd.concat(frames, ignore_index=True)


def heatmap_frame(draws: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(EmbedLLM cells of the same-data regeneration: hidden_layers x dim -> mean `metric`; the summary of
    every method, kind and setting: EmbedLLM per cell, LOCUS beside it)."""
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {METRICS}, got {metric!r}")
    emb = draws[draws["method"] == "embedllm"]
    if emb.empty:
        raise DataError("no EmbedLLM draws in the measures: nothing to put in the heat map")
    parts = []
    for (layers, dim), part in emb.groupby(["hidden_layers", "dim"], sort=True):
        parts.append(summarize(part).assign(hidden_layers=int(layers), dim=int(dim)))
    loc = draws[draws["method"] == "locus"]
    if not loc.empty:
        parts.append(summarize(loc).assign(hidden_layers=pd.NA, dim=int(loc["dim"].iloc[0])))
    summary = pd.concat(parts, ignore_index=True)
    same = summary[(summary["method"] == "embedllm") & (summary["kind"] == "same")]
    grid = same.pivot(index="hidden_layers", columns="dim", values=metric).sort_index().sort_index(axis=1)
    return grid, summary


def write_heatmap(measure_files, out, metric: str, data_label: str | None = None) -> dict:
    """The heat map of `metric` (hidden layers x dim, same-data regeneration) + CSV of every summarised
    cell, LOCUS's rows beside EmbedLLM's."""
    from locus.render.regeneration import heatmap_figure
    from locus.render.views import write_figure

    draws = read_measures(measure_files)
    grid, summary = heatmap_frame(draws, metric)
    loc = summary[(summary["method"] == "locus") & (summary["kind"] == "same")]
    locus_value = float(loc[metric].iloc[0]) if not loc.empty else None
    frame = summary.assign(metric=metric).reindex(columns=HEATMAP_COLUMNS)
    write_figure(heatmap_figure(grid, metric, locus_value, data_label), frame, out)
    return {"grid": grid, "summary": summary, "locus": locus_value}


def write_tsne(
    run,
    data,
    encodings,
    out,
    overlaps,
    sizes,
    repeats: int = 1,
    seed: int = 0,
    perplexity: float = 30.0,
    data_label: str | None = None,
) -> pd.DataFrame:
    """t-SNE of the original and re-learned embeddings of one EmbedLLM run: (a) overlap sets, (b) subsampled
    sets; one joint t-SNE so the panels share coordinates. CSV: every point with its distance."""
    from locus.geometry.views import tsne_2d
    from locus.render.regeneration import tsne_figure
    from locus.render.views import write_figure

    ref = load_embedllm(run, data, encodings, data_label)
    draws, kept = regenerate(
        ref,
        lambda phi, z: embedllm_logits(ref.method, phi, z),
        overlaps,
        sizes,
        repeats,
        seed,
        "embedllm",
        keep_embeddings=True,
    )
    kept = [k for k in kept if k[0] != "same"]
    if not kept:
        raise ConfigError("t-SNE: give at least one overlap or subsample setting")
    m = len(ref.model_ids)
    names = [ref.names.get(int(i), str(i)) for i in ref.model_ids]
    base = pd.DataFrame(
        {
            "panel": "original",
            "kind": "original",
            "setting": np.nan,
            "repeat": -1,
            "model_id": ref.model_ids,
            "name": names,
            "cosine_distance": 0.0,
        }
    )
    parts = [base]
    for kind, setting, r, z in kept:
        parts.append(
            pd.DataFrame(
                {
                    "panel": kind,
                    "kind": kind,
                    "setting": setting,
                    "repeat": r,
                    "model_id": ref.model_ids,
                    "name": names,
                    "cosine_distance": row_cosine_distances(ref.z_ref, z),
                }
            )
        )
    xy = tsne_2d(np.vstack([ref.z_ref, *[k[3] for k in kept]]), perplexity, seed)
    frame = pd.concat(parts, ignore_index=True)
    frame["x"], frame["y"] = xy[:, 0], xy[:, 1]
    p = ref.method.params
    frame = frame.assign(hidden_layers=p.hidden_layers, dim=p.dim, n_models=m)
    title = f"EmbedLLM ({p.hidden_layers} hidden layers, d = {p.dim}): original vs re-learned embeddings, {ref.label}"
    write_figure(tsne_figure(frame, title), frame, out)
    return frame
