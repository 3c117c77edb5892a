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


BEST_SINGLE_STYLE, BEST_SINGLE_COLOR = "--", "0.15"  # the best single model's line on the regret panel


def active_onboarding_figure(cells: pd.DataFrame, title: str, best_single: dict | None = None):
    """Active onboarding (:mod:`locus.experiments.active_onboarding`): correctness accuracy (left) and routing
    regret (right) of the held-out models against the evaluations k each selector picks (log2 axis), mean
    over repeats with a 95% band. `best_single` (:func:`locus.experiments.onboarding.held_out_best_single`:
    the held-out model with the highest validation accuracy, its test ``regret`` and ``routing_acc`` on the
    routing queries) is drawn on the regret panel as a horizontal dashed line labelled "best single model":
    always routing to it, with no embedding at all; a selector's curve above it routes worse than that."""
    from matplotlib.lines import Line2D

    sns.set_theme(style="whitegrid", context="paper")
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
    single = ""
    if best_single is not None and np.isfinite(best_single.get("regret", np.nan)):
        level = 100 * float(best_single["regret"])
        axes[1].axhline(level, ls=BEST_SINGLE_STYLE, lw=1.2, color=BEST_SINGLE_COLOR, zorder=4)
        label = f"best single model ({best_single.get('name', 'highest val acc.')}): regret {level:.1f}"
        axes[1].legend(
            [Line2D([], [], ls=BEST_SINGLE_STYLE, lw=1.2, color=BEST_SINGLE_COLOR)], [label], fontsize=7, loc="best"
        )
        low, high = axes[1].get_ylim()
        axes[1].set_ylim(min(low, level - 0.05 * (high - low)), max(high, level + 0.05 * (high - low)))
        single = (
            f" Dashed (regret): the best single model, the held-out model with the highest validation accuracy, "
            f"routed every query (test routing accuracy {100 * float(best_single['routing_acc']):.1f}%)."
        )
    c = cells.iloc[0]
    fig.suptitle(title, fontsize=9)
    fig.text(
        0.01,
        -0.08,
        f"{int(c['models'])} held-out models embedded from k training-split queries chosen by each selector. "
        f"Accuracy: micro mean over their test pairs. Regret: on {int(c['routing_queries'])} test queries, the "
        "best held-out model's accuracy (oracle) minus that of routing to the held-out model with the highest "
        f"predicted probability. Points: mean over {int(c['repeats'])} repeats (seeds); bands: 95% bootstrap "
        "over repeats. Intervals over held-out models and paired differences: the CSV and the table." + single,
        fontsize=7,
        wrap=True,
    )
    fig.tight_layout()
    return fig
