"""Figure of new-model onboarding (:mod:`locus.experiments.onboarding`): a heat map of the held-out models'
correctness accuracy, rows = encoders trained on a number of models ("all" = the whole pool), columns =
evaluations each held-out model is embedded from."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from locus.render.figures import plt, sns

MIN_COLOUR_SPAN = 10.0  # points: the colour scale is never zoomed in further than this
# the paper's grid of fig:sample_eff_ood_test (its §4: "# models in {8, 16, ..., 92}", "# query evaluations
# in {16, 32, ..., 1024}"); config/paper.yaml `onboarding` runs these rows with 3 draws per cell (the paper
# states no draw count)
PAPER_MODEL_COUNTS = (8, 16, 32, 64, 92)
PAPER_SIZES = (16, 32, 64, 128, 256, 512, 1024)


def _set(values) -> str:
    return "{" + ", ".join(str(v) for v in values) + "}"


def grid_sentence(model_counts, sizes, draws: int, all_row: int | None = None) -> str:
    """The note's statement of the grid that ran (rows = models in training, `all_row` = the whole pool's
    row, columns = evaluation counts, draws per cell) against the paper's (:data:`PAPER_MODEL_COUNTS` x
    :data:`PAPER_SIZES`)."""
    counts = sorted({int(m) for m in model_counts})
    sizes = sorted({int(k) for k in sizes})
    rows = [str(m) for m in counts] + ([f"all ({all_row})"] if all_row is not None else [])
    in_counts = [m for m in counts if m in PAPER_MODEL_COUNTS]
    in_sizes = [k for k in sizes if k in PAPER_SIZES]
    text = (
        f"Grid run: models in training {_set(rows)} x evaluations {_set(sizes)}, {draws} "
        f"draw{'s' if draws != 1 else ''} per cell: {len(in_counts)} of the paper's {len(PAPER_MODEL_COUNTS)} "
        f"model counts {_set(PAPER_MODEL_COUNTS)} (its text: {{8, 16, ..., 92}}) and {len(in_sizes)} of its "
        f"{len(PAPER_SIZES)} evaluation counts {_set(PAPER_SIZES)}"
    )
    if len(in_counts) < len(PAPER_MODEL_COUNTS) or len(in_sizes) < len(PAPER_SIZES):
        text += "; the paper's grid (3 draws per cell): --configfile config/paper.yaml"
    return text + "."


def onboarding_figure(grid: pd.DataFrame, rows: list[str], sizes: list[int], title: str):
    """Heat map of ``grid`` (row, k, accuracy in [0, 1]) in the given row order; cells annotated in %.
    The colour scale spans at least :data:`MIN_COLOUR_SPAN` points (a 1-point spread is not painted as
    the full colour range); a note under the map gives the scale, the cells' own span, the draws and the grid
    that ran against the paper's (:func:`grid_sentence`)."""
    from locus.render.figures import reference_limits, span_note, spread_label

    sns.set_theme(style="white", context="paper")
    table = grid.pivot(index="row", columns="k", values="accuracy").reindex(index=rows, columns=sizes)
    values = 100 * table.to_numpy(float)
    vmin, vmax = reference_limits(values, (), MIN_COLOUR_SPAN, pad=0.0)
    fig, ax = plt.subplots(figsize=(1.1 + 0.75 * len(sizes), 1.2 + 0.45 * len(rows)))
    sns.heatmap(
        100 * table,
        annot=True,
        fmt=".1f",
        cmap="viridis",
        vmin=vmin,
        vmax=vmax,
        cbar_kws={"label": "correctness accuracy (%)"},
        ax=ax,
        annot_kws={"fontsize": 7},
    )
    ax.set_xlabel("# evaluations of each held-out model used to embed it")
    ax.set_ylabel("# models in training")
    ax.set_yticklabels(
        [f"all ({int(grid.loc[grid['row'] == r, 'n_train_models'].iloc[0])})" if r == "all" else r for r in rows],
        rotation=0,
    )
    ax.set_title(textwrap.fill(title, 70, break_on_hyphens=False), fontsize=9)
    draws = int(grid["draws"].max()) if "draws" in grid.columns and grid["draws"].notna().any() else 1
    note = (
        f"Colour scale {vmin:.1f}–{vmax:.1f}% (at least {MIN_COLOUR_SPAN:g} points wide); cells: "
        f"{span_note(values)}; each cell: {spread_label(draws)}."
    )
    if not np.isfinite(table.to_numpy(float)).all():
        note += " Blank: no value."
    if "n_train_models" in grid.columns:
        first = grid.drop_duplicates("row").set_index("row")["n_train_models"]
        counts = [int(first[r]) for r in rows if r != "all" and r in first.index]
        whole = int(first["all"]) if "all" in first.index else None
        note += " " + grid_sentence(counts, sizes, draws, whole)
    fig.tight_layout()
    fig.text(0.01, 0.0, textwrap.fill(note, 110), fontsize=7, ha="left", va="top")
    return fig
