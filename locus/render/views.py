"""Figures of the embedding views (:mod:`locus.geometry.views`, :mod:`locus.geometry.hypothetical`):
frames in, matplotlib figures out; :func:`write_figure` writes PDF + PNG + the CSV of the plotted numbers."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from locus.evaluation import NEAR_CONSTANT_SHARE
from locus.render.figures import output_paths, plt, save_figure, sns, write_csv

GREY = "0.78"


def write_figure(fig, frame: pd.DataFrame, out) -> dict:
    """`fig` as ``<stem>.pdf`` + ``.png`` and `frame` as ``<stem>.csv`` (each atomic)."""
    paths = save_figure(fig, out)
    write_csv(frame, output_paths(out)["csv"])
    return paths


def _title(ax_or_fig, text: str, suptitle: bool = False, width: int = 80):
    text = textwrap.fill(text, width, break_on_hyphens=False)
    if suptitle:
        ax_or_fig.suptitle(text, fontsize=9)
    else:
        ax_or_fig.set_title(text, fontsize=9)


def _log2_axis(ax, values):
    values = sorted(set(int(x) for x in values))
    ax.set_xscale("log", base=2)
    ax.set_xticks(values)
    ax.set_xticklabels([str(x) for x in values], rotation=45 if len(values) > 6 else 0)
    ax.minorticks_off()


def chance_recall(k: int, n_models: int) -> float:
    """Recall@k of a retrieval that ranks the models at random: k / number of models (capped at 1)."""
    return min(1.0, int(k) / int(n_models))


def hypothetical_figure(recall: pd.DataFrame, title: str):
    """Recall@k (%) of the true model among the nearest reference embeddings vs evaluation-set size, with
    each k's chance level k / models (:func:`chance_recall`; dotted, in the curve's colour) when `recall`
    has the ``models`` column."""
    from matplotlib.lines import Line2D

    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(5.0, 3.5))
    colors = sns.color_palette("viridis", recall["k"].nunique())
    n_models = int(recall["models"].max()) if "models" in recall.columns and recall["models"].notna().any() else None
    for color, (k, part) in zip(colors, recall.groupby("k")):
        part = part.sort_values("size")
        ax.plot(part["size"], 100 * part["recall"], marker="o", ms=4, lw=1.5, color=color, label=f"recall@{k}")
        if n_models:
            ax.axhline(100 * chance_recall(k, n_models), ls=":", lw=1.0, color=color)
    handles, names = ax.get_legend_handles_labels()
    if n_models:
        ks = sorted(int(k) for k in recall["k"].unique())
        handles.append(Line2D([], [], ls=":", lw=1.0, color="0.3"))
        names.append(
            f"chance: k/{n_models}\n(dotted, {100 * chance_recall(ks[0], n_models):.1f}–"
            f"{100 * chance_recall(ks[-1], n_models):.1f}%)"
        )
    _log2_axis(ax, recall["size"])
    ax.set_ylim(-2, 102)
    ax.set_xlabel("# queries in the hypothetical evaluation set")
    ax.set_ylabel("models retrieved (%)")
    ax.legend(handles, names, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    _title(ax, title, width=60)
    fig.tight_layout()
    return fig


def query_tsne_figure(frame: pd.DataFrame, title: str):
    """One t-SNE panel per encoder, queries coloured by benchmark (one shared legend)."""
    sns.set_theme(style="white", context="paper")
    encoders = list(dict.fromkeys(frame["encoder"]))
    benchmarks = sorted(frame["benchmark"].unique())
    palette = dict(zip(benchmarks, sns.color_palette("tab10" if len(benchmarks) <= 10 else "tab20", len(benchmarks))))
    fig, axes = plt.subplots(1, len(encoders), figsize=(4.2 * len(encoders) + 1.6, 4.2), squeeze=False)
    for ax, encoder in zip(axes[0], encoders):
        part = frame[frame["encoder"] == encoder]
        for b in benchmarks:
            sel = part[part["benchmark"] == b]
            ax.scatter(sel["x"], sel["y"], s=4, alpha=0.7, color=palette[b], label=b, lw=0)
        ax.set_title(encoder, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, markerscale=3, frameon=False)
    _title(fig, f"{title} ({len(frame) // max(len(encoders), 1)} queries, t-SNE)", suptitle=True)
    fig.tight_layout()
    return fig


FARTHER_NOTE = (
    "t-SNE keeps neighbourhoods, not distances: how far a dot is drawn from its star is not its distance in "
    "the embedding space."
)


def farther_label(name: str, farther: int, draws: int) -> str:
    """A legend entry: the model and how many of its draws lie farther from its reference embedding than
    the nearest other model does ("microsoft/phi-2: 15/22 farther (68%)")."""
    share = 100 * farther / draws if draws else float("nan")
    return f"{name}: {farther}/{draws} farther ({share:.0f}%)"


def robustness_figure(
    frame: pd.DataFrame, title: str, space: str = "the embedding space", shares: pd.DataFrame | None = None
):
    """Top: the selected models' embeddings recomputed from sets with overlap α with the reference set;
    bottom: from n evaluations subsampled from it. Stars: their reference embeddings; grey: other models.
    Shared t-SNE coordinates; lighter dots = smaller α / n. With `shares` (``panel, model_id, draws, farther``:
    :func:`locus.geometry.views.farther_shares` of the draws), each panel's title and legend give the share
    of its draws (all models, then per model) farther from their reference embedding than the reference's
    nearest other model, measured in `space`; a note always says that t-SNE distances are not embedding
    distances."""
    sns.set_theme(style="white", context="paper")
    selected = list(dict.fromkeys(frame.loc[frame["selected"], "model_id"]))
    colors = dict(zip(selected, sns.color_palette("tab10", len(selected))))
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 10.0), sharex=True, sharey=True)
    base = frame[frame["panel"] == "reference"]
    checked = shares is not None
    if checked:
        shares = shares.set_index(["panel", "model_id"])
    for ax, panel, what in (
        (axes[0], "overlap", "overlap α with the reference set"),
        (axes[1], "size", "n evaluations subsampled from the reference set"),
    ):
        others = base[~base["selected"]]
        ax.scatter(others["x"], others["y"], s=12, color=GREY, lw=0, label="other models")
        part = frame[frame["panel"] == panel]
        settings = np.sort(part["setting"].unique())
        shade = {s: 0.25 + 0.75 * i / max(len(settings) - 1, 1) for i, s in enumerate(settings)}
        for mid in selected:
            sel = part[part["model_id"] == mid]
            name = base.loc[base["model_id"] == mid, "name"].iloc[0]
            ax.scatter(sel["x"], sel["y"], s=16, color=colors[mid], alpha=[shade[s] for s in sel["setting"]], lw=0)
            r = base[base["model_id"] == mid]
            if checked and (panel, mid) in shares.index:
                row = shares.loc[(panel, mid)]
                name = farther_label(name, int(row["farther"]), int(row["draws"]))
            ax.scatter(r["x"], r["y"], s=110, marker="*", color=colors[mid], edgecolor="black", lw=0.6, label=name)
        if len(settings):
            low, high = settings[0], settings[-1]
            fmt = (lambda s: f"{s:g}") if panel == "overlap" else (lambda s: f"{int(s)}")
            what += f" (dots light → dark: {fmt(low)} → {fmt(high)})"
        if checked and panel in shares.index.get_level_values(0):
            total = shares.loc[panel]
            what += (
                f"\ndraws farther from their reference than its nearest other model: "
                f"{int(total['farther'].sum())}/{int(total['draws'].sum())} "
                f"({100 * total['farther'].sum() / total['draws'].sum():.0f}%; per model below)"
            )
        ax.set_title(what, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=2, markerscale=0.8, frameon=False)
    _title(fig, title + " (t-SNE; stars: reference embeddings)", suptitle=True)
    fig.tight_layout()
    note = FARTHER_NOTE
    if checked:
        note = (
            f"Farther: the draw's distance to its reference embedding exceeds the reference's distance to its "
            f"nearest other model, both Euclidean in {space} (CSV: distance, nearest_other_distance); counts "
            "include the draws from the reference set itself (α = 1, n = n_ref), at distance ≈ 0. " + note
        )
    fig.text(0.01, 0.0, textwrap.fill(note, 105), fontsize=7, ha="left", va="top")
    return fig


def convergence_figure(
    summary: pd.DataFrame,
    neighbours: pd.DataFrame,
    by: str,
    title: str,
    reference_size: int,
    set_sizes: pd.Series | None = None,
):
    """Mean of ‖z − z_ref‖ over draws with bars from the smallest to the largest draw (`summary` columns
    ``min`` / ``max``; without them ± std, the lower bar clipped at 0, which a distance cannot pass, and the
    legend says so) (one draw: the value, no error bar) vs overlap α (`by` = alpha) or set size n (`by` = n),
    with dashed lines at the reference embedding's distances to its
    nearest other models; `set_sizes` (α -> size of the overlap sets) notes where the sets had to be
    smaller than the reference set. When the distances reach far above the reference lines the y-axis is
    symmetric-log (linear below the nearest neighbour's distance), so the lines stay readable."""
    from locus.render.figures import spread_label

    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    x = summary[by].to_numpy(float)
    draws = int(summary["draws"].max()) if "draws" in summary.columns and len(summary) else 1
    mean = summary["mean"].to_numpy(float)
    std, spread = None, spread_label(draws)
    if draws > 1 and {"min", "max"} <= set(summary.columns):
        std = np.vstack([mean - summary["min"].to_numpy(float), summary["max"].to_numpy(float) - mean])
        spread = f"mean; bars: min–max over {draws} draws"
    elif draws > 1:
        sd = summary["std"].to_numpy(float)
        std = np.vstack([np.minimum(sd, mean), sd])
        if (sd > mean).any():
            spread += ", lower bars clipped at 0"
    single = ""
    if draws > 1 and "draws" in summary.columns and (summary["draws"] <= 1).any():
        fixed = summary.loc[summary["draws"] <= 1, by].to_numpy(float)
        single = f"; one draw at {'α' if by == 'alpha' else by} = {', '.join(f'{v:g}' for v in fixed)}"
    ax.errorbar(
        x,
        mean,
        yerr=std,
        marker="o",
        ms=4,
        lw=1.5,
        capsize=3,
        color="#d62728",
        label=r"$\|z - z^{\mathrm{ref}}\|$ (" + spread + single + ")",
    )
    greys = sns.color_palette("Greys_r", len(neighbours) + 2)
    for i, row in enumerate(neighbours.itertuples()):
        ax.axhline(row.distance, ls="--", lw=1.0, color=greys[i], label=f"to {row.neighbour} ({row.distance:.2f})")
    if by == "n":
        _log2_axis(ax, x)
        ax.set_xlabel(f"# evaluations subsampled from the reference set (n_ref = {reference_size})")
    else:
        label = f"overlap fraction α with the reference set (n_ref = {reference_size})"
        small = set_sizes[set_sizes < reference_size] if set_sizes is not None else []
        if len(small):
            label += (
                f"\nα ≤ {small.index.max():g}: sets of {int(small.min())}–{int(small.max())} queries "
                f"(too few training queries outside the reference set)"
            )
        ax.set_xlabel(label)
    top = float(np.nanmax(mean + (std[1] if std is not None else 0.0)))
    lines = neighbours["distance"].to_numpy(float)
    lines = lines[np.isfinite(lines) & (lines > 0)]
    ylabel = "‖z − z_ref‖ (Euclidean)"
    if len(lines) and top > 5 * lines.max():
        threshold = float(lines.min())
        ax.set_yscale("symlog", linthresh=threshold, linscale=0.6)
        ylabel += f"\nsymlog axis: linear below {threshold:.2f}"
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    _title(ax, title, width=70)
    fig.tight_layout()
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False)
    return fig


BEST_SINGLE_STYLE, BEST_SINGLE_COLOR = "--", "0.15"  # the best single model's line, on every routing axis here


def best_single_label(value: float) -> str:
    """Legend entry of the best single model's line (`value`: its test routing accuracy in [0, 1])."""
    return f"best single model (highest val acc.; test {100 * value:.1f})"


MIN_ACCURACY_SPAN = 5.0  # points: an accuracy axis is never zoomed in further than this


def diversity_lines(summary: pd.DataFrame, refs: dict) -> str:
    """The note's routing diversity: per panel the re-embedded routers' share of the test queries sent to
    their most-chosen model (:func:`locus.render.figures.diversity_text`, near-constant settings named), and
    the reference embeddings' share; "" without ``top_model_share``."""
    from locus.render.figures import diversity_note, diversity_text

    if "top_model_share" not in summary.columns:
        return ""
    parts = []
    for panel, name in (("size", "n"), ("overlap", "α")):
        part = summary[summary["panel"] == panel].sort_values("setting")
        if len(part):
            text = diversity_text(part["top_model_share"].to_numpy(float))
            near = part[part["top_model_share"] >= NEAR_CONSTANT_SHARE]["setting"]
            if 0 < len(near) < len(part):
                text = (
                    text.split(", near-constant")[0]
                    + f", near-constant at {name} = "
                    + ", ".join(f"{v:g}" for v in near)
                )
            parts.append(f"re-embedded, {panel} panel: {text}")
    share = refs.get("reference", {}).get("top_model_share")
    if share is not None:
        parts.append(f"reference embeddings: {diversity_text([share])}")
    return "Routing diversity: " + "; ".join(parts) + f".\n{diversity_note()}."


def perf_vs_evalset_figure(summary: pd.DataFrame, refs: dict, title: str):
    """Test correctness (top) and routing (bottom) accuracy of LOCUS with every model re-embedded from n
    evaluations subsampled from its reference set (left) or from sets with overlap α with it (right):
    mean ± std over draws (one draw: the value, no band); dotted: the run's own embeddings; dashed
    (routing): the best single model (highest validation accuracy), at its test routing accuracy. Each row's y-range covers its references and is
    at least :data:`MIN_ACCURACY_SPAN` points wide; a note under the panels gives the span of the plotted
    values and, with ``top_model_share`` in `summary`, the routers' diversity (:func:`diversity_lines`)."""
    from locus.render.figures import reference_limits, span_note, spread_label

    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(2, 2, figsize=(8.4, 6.0), sharey="row", squeeze=False)
    rows = (("correctness_acc", "correctness accuracy (%)"), ("routing_acc", "routing accuracy (%)"))
    draws = int(summary["draws"].max()) if "draws" in summary.columns and len(summary) else 1
    spread = spread_label(draws)
    overlap_label = "overlap fraction α with the reference set"
    small = summary[(summary["panel"] == "overlap") & (summary["set_size"] < refs["reference_size"])]
    if len(small):
        overlap_label += (
            f"\nα ≤ {small['setting'].max():g}: sets of ~{int(small['set_size'].min())}–"
            f"{int(small['set_size'].max())} queries"
        )
    plotted = {metric: [] for metric, _ in rows}
    for col, (panel, xlabel) in enumerate(
        (
            ("size", f"# evaluations subsampled from the reference set (n_ref = {refs['reference_size']})"),
            ("overlap", overlap_label),
        )
    ):
        part = summary[summary["panel"] == panel].sort_values("setting")
        for row, (metric, ylabel) in enumerate(rows):
            ax = axes[row][col]
            if len(part):
                x = part["setting"].to_numpy(float)
                y, sd = 100 * part[metric].to_numpy(float), 100 * part[f"{metric}_std"].to_numpy(float)
                plotted[metric].extend(y)
                ax.plot(x, y, marker="o", ms=4, lw=1.5, color="#d62728", label=f"re-embedded ({spread})")
                if draws > 1:
                    ax.fill_between(x, y - sd, y + sd, color="#d62728", alpha=0.18, lw=0)
                    plotted[metric].extend([*(y - sd), *(y + sd)])
                if panel == "size":
                    _log2_axis(ax, x)
            ax.axhline(
                100 * refs["reference"][metric],
                ls=":",
                lw=1.4,
                color="0.3",
                label=f"reference embeddings ({100 * refs['reference'][metric]:.1f})",
            )
            if metric == "routing_acc":
                ax.axhline(
                    100 * refs["best_single_routing_acc"],
                    ls=BEST_SINGLE_STYLE,
                    lw=1.2,
                    color=BEST_SINGLE_COLOR,
                    label=best_single_label(refs["best_single_routing_acc"]),
                )
            if row == 1:
                ax.set_xlabel(xlabel)
            if col == 0:
                ax.set_ylabel(ylabel)
            ax.legend(fontsize=7, loc="lower right")
    notes = []
    for row, (metric, ylabel) in enumerate(rows):
        references = [100 * refs["reference"][metric]]
        if metric == "routing_acc":
            references.append(100 * refs["best_single_routing_acc"])
        axes[row][0].set_ylim(*reference_limits(plotted[metric], references, MIN_ACCURACY_SPAN))
        means = summary[metric].to_numpy(float) * 100
        notes.append(f"{ylabel.split(' (')[0]}: {span_note(means)}")
    fig.text(
        0.01,
        0.0,
        f"y-axes cover the reference lines and span at least {MIN_ACCURACY_SPAN:g} points. "
        + "; ".join(notes)
        + "."
        + (f"\n{lines}" if (lines := diversity_lines(summary, refs)) else ""),
        fontsize=7,
        ha="left",
        va="top",
        wrap=True,
    )
    _title(fig, title, suptitle=True)
    fig.tight_layout()
    return fig
