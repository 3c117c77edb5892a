"""Figure of new-model onboarding (:mod:`locus.experiments.onboarding`): a heat map of the held-out models'
correctness accuracy, rows = encoders trained on a number of models ("all" = the whole pool), columns =
evaluations each held-out model is embedded from."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from locus.render.figures import plt, sns


def onboarding_figure(grid: pd.DataFrame, rows: list[str], sizes: list[int], title: str):
    """Heat map of ``grid`` (row, k, accuracy in [0, 1]) in the given row order; cells annotated in %."""
    sns.set_theme(style="white", context="paper")
    table = grid.pivot(index="row", columns="k", values="accuracy").reindex(index=rows, columns=sizes)
    fig, ax = plt.subplots(figsize=(1.1 + 0.75 * len(sizes), 1.2 + 0.45 * len(rows)))
    sns.heatmap(
        100 * table,
        annot=True,
        fmt=".1f",
        cmap="viridis",
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
    if not np.isfinite(table.to_numpy(float)).all():
        ax.text(0.0, -0.25, "blank: no value", transform=ax.transAxes, fontsize=7)
    fig.tight_layout()
    return fig
