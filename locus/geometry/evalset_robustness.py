"""Robustness of LOCUS to the evaluation set (paper §4.3, figure ``perf_vs_size_and_overlap``): with the
encoder and decoder of one trained run fixed, every model of the pool is re-embedded from another
evaluation set, and the test correctness and routing accuracy of the decoder with those embeddings are
compared with the accuracy of the run's own (reference) embeddings. No training.

Evaluation sets (drawn per model with :mod:`locus.geometry.views`, training-split queries only): panel
``size``, ``n`` evaluations subsampled from the model's reference set (its ``n_ref`` training evaluations in
the run; ``n = n_ref`` is the reference set itself); panel ``overlap``, sets sharing the fraction α with
the reference set, the rest from the model's evaluated training queries outside it
(:func:`locus.geometry.views.alternative_set`; smaller than ``n_ref`` when too few lie outside).
Each (panel, setting, repeat) re-embeds every model with its own seeded draw
(:func:`locus.geometry.views.rng_for`: the same draws as the convergence views), then scores the test
split. The curves are the mean ± std over repeats (:func:`curves`); the reference line is the accuracy of
the run's own embeddings, with the best single model (chosen on validation) beside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locus import evaluation
from locus.errors import ConfigError
from locus.geometry.views import (
    DRAW_OVERLAP,
    DRAW_SUBSAMPLE,
    Reference,
    alternative_set,
    check_grid,
    load_reference,
    rng_for,
    subsample,
)

METRICS = ("correctness_acc", "routing_acc")
# the figure's CSV: every draw, the means (kind = mean) and the reference lines (the report reads it by this list)
CSV_COLUMNS = [
    "panel",
    "setting",
    "repeat",
    "set_size",
    "min_set_size",
    "realized_alpha",
    "distance",
    *METRICS,
    "top_model_share",
    "kind",
    *(f"{m}_std" for m in METRICS),
    "draws",
    "name",
]


def draw_set(ref: Reference, model_id: int, panel: str, setting, repeat: int, seed: int):
    """(prompt ids, scores, shared with the reference set) of one model's evaluation set."""
    ref_ids, ref_scores = ref.reference_set(model_id)
    if panel == "size":
        ids = subsample(ref_ids, int(setting), rng_for(seed, DRAW_SUBSAMPLE, model_id, int(setting), repeat))
        score_of = dict(zip(ref_ids.tolist(), ref_scores.tolist()))
        return ids, np.array([score_of[i] for i in ids.tolist()], np.float32), len(ids)
    if panel == "overlap":
        ids, shared = alternative_set(
            ref_ids,
            ref.outside_ids(model_id),
            float(setting),
            rng_for(seed, DRAW_OVERLAP, model_id, float(setting), repeat),
        )
        return ids, ref.scores_of(model_id, ids), shared
    raise ValueError(f"panel must be size or overlap, got {panel!r}")


def test_split(ref: Reference):
    """(test query encodings [Q, d_phi], test labels [Q, M] in the order of ``ref.model_ids``)."""
    ids = ref.dataset.split_queries("test")["prompt_id"].to_numpy(np.int64)
    return ref.encodings.take(ids), ref.dataset.label_matrix(ids, ref.model_ids)


def accuracies(logits: np.ndarray, labels: np.ndarray) -> dict:
    """Test correctness accuracy, routing accuracy (hit@1) and the router's ``top_model_share`` (share of the
    test queries routed to its most-chosen model) of a logit matrix."""
    c = evaluation.correctness_metrics(logits, labels)
    r = evaluation.routing_metrics(logits, labels, ks=(1,))
    share = evaluation.routing_diversity(evaluation.choice_counts(logits, labels))["top_share"]
    return {"correctness_acc": c["correctness_acc"], "routing_acc": r["routing_acc"], "top_model_share": share}


def settings_of(ref: Reference, sizes, overlaps) -> list[tuple[str, float]]:
    """The (panel, setting) grid: sizes up to the smallest reference set, then the overlap fractions."""
    n_ref = min(len(ref.reference_set(m)[0]) for m in ref.model_ids)
    kept = [n for n in sizes if n <= n_ref]
    if not kept:
        raise ConfigError(
            f"sizes {list(sizes)}: all exceed the {n_ref} reference evaluations per model; use sizes <= {n_ref}."
        )
    return [("size", float(n)) for n in kept] + [("overlap", float(a)) for a in overlaps]


def curves(ref: Reference, sizes, overlaps, repeats: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """(one row per panel, setting and repeat: mean set size, mean realised overlap, mean ‖z − z_ref‖
    and the test accuracies; the references: accuracies of the run's own embeddings and of the best single
    model chosen on validation)."""
    phi, labels = test_split(ref)
    method = ref.method
    n_ref = min(len(ref.reference_set(m)[0]) for m in ref.model_ids)
    rows = []
    for panel, setting in settings_of(ref, sizes, overlaps):
        draws = 1 if panel == "size" and int(setting) >= n_ref else repeats  # the whole set: one draw
        for r in range(draws):
            z = np.empty_like(ref.z_ref)
            sizes_, shared_ = [], []
            for i, mid in enumerate(ref.model_ids):
                ids, scores, shared = draw_set(ref, int(mid), panel, setting, r, seed)
                z[i] = ref.embed(ids, scores)
                sizes_.append(len(ids))
                shared_.append(shared / len(ids))
            acc = accuracies(method.logits_for_embeddings(phi, z), labels)
            rows.append(
                {
                    "panel": panel,
                    "setting": setting,
                    "repeat": r,
                    "set_size": float(np.mean(sizes_)),
                    "min_set_size": int(np.min(sizes_)),
                    "realized_alpha": float(np.mean(shared_)),
                    "distance": float(np.linalg.norm(z - ref.z_ref, axis=1).mean()),
                    **acc,
                }
            )
    own = accuracies(method.logits_for_embeddings(phi, ref.z_ref), labels)
    val_ids = ref.dataset.split_queries("val")["prompt_id"].to_numpy(np.int64)
    single = evaluation.reference_rows(ref.dataset.label_matrix(val_ids, ref.model_ids), labels)
    refs = {
        "reference": own,
        "best_single_routing_acc": single["best_single"]["overall"],
        "best_single_model": ref.names[int(ref.model_ids[single["best_single_position"]])],
        "reference_size": int(n_ref),
        "n_test_queries": int(labels.shape[0]),
        "n_models": int(len(ref.model_ids)),
    }
    return pd.DataFrame(rows), refs


def summarize(draws: pd.DataFrame) -> pd.DataFrame:
    """Mean and std (0 for one draw) of each metric, the set size and the distance per panel and setting."""
    g = draws.groupby(["panel", "setting"], sort=True)
    cols = [
        *METRICS,
        *(["top_model_share"] if "top_model_share" in draws else []),
        "set_size",
        "realized_alpha",
        "distance",
    ]
    out = g[cols].mean()
    std = g[list(METRICS)].std(ddof=1).fillna(0.0).add_suffix("_std")
    return out.join(std).assign(draws=g.size()).reset_index()


def write_perf_vs_evalset(
    run, data, encodings, out, sizes, overlaps, repeats: int = 1, seed: int = 0, data_label: str | None = None
) -> dict:
    """The figure (PDF + PNG) and the CSV of every draw, every mean and the reference lines. Returns a
    summary (the means and the references)."""
    from locus.render.views import perf_vs_evalset_figure, write_figure

    sizes = check_grid(sizes, "--sizes", 1, None, integer=True)
    overlaps = check_grid(overlaps, "--overlaps", 0.0, 1.0)
    ref = load_reference(run, data, encodings, data_label)
    draws, refs = curves(ref, sizes, overlaps, int(repeats), int(seed))
    summary = summarize(draws)
    lines = pd.DataFrame(
        [
            {"kind": "reference", "panel": "all", **refs["reference"]},
            {
                "kind": "best_single",
                "panel": "all",
                "routing_acc": refs["best_single_routing_acc"],
                "name": refs["best_single_model"],
            },
        ]
    )
    frame = pd.concat([draws.assign(kind="draw"), summary.assign(kind="mean"), lines], ignore_index=True)
    frame = frame.reindex(columns=CSV_COLUMNS)
    title = (
        f"LOCUS with re-embedded models, {ref.label} ({refs['n_models']} models, {refs['n_test_queries']} test queries)"
    )
    write_figure(perf_vs_evalset_figure(summary, refs, title), frame, out)
    return {"summary": summary, **refs}
