"""Embedding-geometry tables and figures (:mod:`locus.geometry`): the distance-disagreement table and
scatter, the family dendrogram + heat map, the nearest-neighbour proxy curve and the fallback-routing
curves. Frames in, LaTeX text or a matplotlib figure out (written by the callers with their CSV)."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd

from locus.render import labels
from locus.render.figures import diversity_label, plt, reference_limits, sns
from locus.render.latex import emphasis

CORRELATION_LABELS = {"pearson": "Pearson $\\rho$", "spearman": "Spearman $r_s$", "kendall": "Kendall $\\tau$"}
PLAIN_CORRELATIONS = {"pearson": "Pearson", "spearman": "Spearman", "kendall": "Kendall"}
DISTANCE_LABELS = {"cosine": "Cosine distance", "euclidean": "Euclidean distance"}
INTERVAL_MARKS = {"bca": "$^\\dagger$", "recentred": "$^\\ddagger$"}  # percentile intervals carry no mark
TAG_COLORS = {"math": "#ff7f0e", "code": "#2ca02c"}  # the paper's figure: math orange, code green


def _methods(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["method"]))


def _palette(methods) -> dict:
    fallback = iter(sns.color_palette("tab10", max(len(methods), 1)))
    return {m: labels.color(m) or next(fallback) for m in methods}


def _title(ax_or_fig, title: str, size: int = 9) -> None:
    text = "\n".join(textwrap.fill(line, 90, break_on_hyphens=False) for line in title.split("\n"))
    if hasattr(ax_or_fig, "suptitle"):
        ax_or_fig.suptitle(text, fontsize=size)
    else:
        ax_or_fig.set_title(text, fontsize=size)


# ----------------------------------------------------------------------------------------------
# distance vs disagreement
# ----------------------------------------------------------------------------------------------
def with_emphasis(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with ``emphasis`` (best / second among the methods of each correlation and distance, on
    the printed three decimals) and the method's plain ``label``."""
    out = frame.copy()
    out.insert(1, "label", [labels.plain_label(m) for m in out["method"]])
    out["emphasis"] = ""
    for _, idx in out.groupby(["correlation", "distance"], sort=False).groups.items():
        out.loc[idx, "emphasis"] = emphasis(out.loc[idx, "value"].tolist(), decimals=1)
    return out


def _cell(row) -> str:
    value = row["value"]
    if value is None or math.isnan(value):
        return "--"
    text = f"{value:.3f}"
    if row.get("emphasis") == "best":
        text = f"\\textbf{{{text}}}"
    elif row.get("emphasis") == "second":
        text = f"\\underline{{{text}}}"
    low, high = row.get("ci_low", math.nan), row.get("ci_high", math.nan)
    if low is not None and not math.isnan(low):
        mark = INTERVAL_MARKS.get(row.get("interval"), "")
        text += f" {{\\scriptsize[{low:.3f}, {high:.3f}]{mark}}}"
    return text


def _interval_note(frame: pd.DataFrame) -> str:
    """Which interval each bracket is (percentile unless marked), for the caption."""
    first = frame.iloc[0]
    kinds = set(frame["interval"]) if "interval" in frame.columns else {"percentile"}
    note = (
        f" In brackets: {100 * first['confidence']:.0f}\\% bootstrap intervals over {int(first['n_boot'])} "
        f"resamples of the {int(first['n_queries'])} test queries (disagreements recomputed, embeddings fixed): "
        "percentile intervals"
    )
    if kinds - {"percentile"}:
        shifted = frame[frame["interval"] != "percentile"]
        note += (
            f"; where the percentile interval excludes its estimate ({len(shifted)} of {len(frame)} cells: "
            "resampling duplicates queries, adds noise to every disagreement and pulls the resampled "
            "correlations towards 0, here by up to "
            f"{abs(shifted['resampling_shift']).max():.3f}), the BCa interval$^\\dagger$ where it contains the "
            "estimate and spans at least half the percentile interval's resample mass, else the percentile interval re-centred on the estimate$^\\ddagger$ (shifted by the "
            "resamples' median minus the estimate)"
        )
    return note + "."


def _dimension_note(frame: pd.DataFrame) -> str:
    """Each method's effective dimensionality, for the caption."""
    if "effective_dim" not in frame.columns:
        return ""
    dims = frame.drop_duplicates("method")
    cells = ", ".join(
        f"{labels.escape(labels.plain_label(r['method']))} {r['effective_dim']:.1f} of {int(r['embedding_dim'])}"
        for r in dims.to_dict("records")
    )
    return (
        " Effective dimensionality of the model embeddings (participation ratio $(\\sum\\sigma^2)^2/\\sum\\sigma^4$ "
        f"of the singular values of the centred embedding matrix; 1 = all models on one line): {cells}."
    )


def _influence_note(frame: pd.DataFrame) -> str:
    """Pearson (first distance) per method without its most influential models, for the caption."""
    if "value_without_influential" not in frame.columns:
        return ""
    first = frame[(frame["correlation"] == "pearson") & (frame["distance"] == frame["distance"].iloc[0])]
    if first.empty or not (first["n_influential"] > 0).any():
        return ""
    cells = ", ".join(
        f"{labels.escape(labels.plain_label(r['method']))} {r['value']:.3f} $\\to$ {r['value_without_influential']:.3f}"
        for r in first.to_dict("records")
    )
    k, m = int(first["n_influential"].max()), int(first["n_models"].max())
    return (
        f" Without the {k} of {m} models whose single removal lowers it most, Pearson $\\rho$ "
        f"({DISTANCE_LABELS.get(first['distance'].iloc[0], first['distance'].iloc[0]).lower()}) reads: {cells} "
        "(lower by construction: it shows how much a few models carry; every cell and the left-out models in the CSV)."
    )


def correlation_table(frame: pd.DataFrame, title: str) -> str:
    """Paper ``tab:performance_distance_correlation``, one block of rows per embedding method."""
    frame = with_emphasis(frame)
    distances = list(dict.fromkeys(frame["distance"]))
    cells = {(r["method"], r["correlation"], r["distance"]): r for r in frame.to_dict("records")}
    note = (_interval_note(frame) if "ci_low" in frame.columns else "") + _dimension_note(frame)
    note += _influence_note(frame)
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{\\textbf{{Correlation between embedding distance and correctness disagreement}} "
        f"(normalized Hamming distance between test correctness labels) across all model pairs; "
        f"{labels.escape(title)}.{note} Best method per column in bold, second underlined.}}",
        "\\label{tab:performance_distance_correlation}",
        "\\small",
        "\\setlength{\\tabcolsep}{4.0pt}",
        "\\begin{tabular}{@{}ll" + "c" * len(distances) + "@{}}",
        "\\toprule",
        "Embeddings & Correlation & " + " & ".join(DISTANCE_LABELS.get(d, d) for d in distances) + " \\\\",
    ]
    methods = _methods(frame)
    correlations_ = list(dict.fromkeys(frame["correlation"]))
    for method in methods:
        lines.append("\\midrule")
        for i, corr in enumerate(correlations_):
            head = f"\\multirow{{{len(correlations_)}}}{{*}}{{{labels.latex_label(method)}}}" if i == 0 else ""
            row = [_cell(cells[(method, corr, d)]) if (method, corr, d) in cells else "--" for d in distances]
            lines.append(f"{head} & {CORRELATION_LABELS.get(corr, corr)} & " + " & ".join(row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)


def distance_figure(pairs: pd.DataFrame, frame: pd.DataFrame, title: str):
    """Paper ``fig:performance_distance_correlation``: disagreement (%) against cosine and Euclidean
    distance for every model pair, one row of panels per method, the correlations in each panel."""
    sns.set_theme(style="whitegrid", context="paper")
    methods = _methods(pairs)
    colors = _palette(methods)
    distances = [d for d in DISTANCE_LABELS if d in pairs.columns]
    fig, axes = plt.subplots(
        len(methods), len(distances), figsize=(4.2 * len(distances), 3.2 * len(methods)), squeeze=False
    )
    for row, method in enumerate(methods):
        part = pairs[pairs["method"] == method]
        for col, d in enumerate(distances):
            ax = axes[row][col]
            ax.scatter(part[d], 100 * part["disagreement"], s=4, alpha=0.35, color=colors[method], lw=0)
            stats = frame[(frame["method"] == method) & (frame["distance"] == d)].set_index("correlation")["value"]
            text = "\n".join(f"{PLAIN_CORRELATIONS.get(c, c)} {v:.3f}" for c, v in stats.items())
            ax.text(
                0.03,
                0.97,
                text,
                transform=ax.transAxes,
                va="top",
                fontsize=7,
                bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8, "lw": 0},
            )
            ax.set_xlabel(f"{DISTANCE_LABELS.get(d, d)} ({labels.plain_label(method)} embeddings)")
            ax.set_ylabel("test disagreement (%)")
    _title(fig, title)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------
# families
# ----------------------------------------------------------------------------------------------
FAMILY_FIGURE_WIDTH = 3.3  # inches: the paper prints this figure at single-column width
FAMILY_MIN_FONT = 6.0  # points at that width (every text of the figure is at least this size)
SAVE_PAD = 0.1  # inches: save_figure's tight bounding box pads the content by this on each side


def p_text(p: float, n_perm: int | None = None) -> str:
    """ "p = 0.217", "p < 0.001" at the permutation test's floor 1 / (n_perm + 1), "p n/a" without a test."""
    if p is None or not np.isfinite(p):
        return "p n/a"
    if n_perm and p <= 1.0 / (int(n_perm) + 1) + 1e-12:
        return f"p ≤ {1.0 / (int(n_perm) + 1):.3g}"
    return f"p = {p:.3f}"


def separation_text(tag: str, sep: dict | None) -> str:
    """One tag's statistics for the families figure (:func:`locus.geometry.families.tag_separation`): its
    models, the within/others mean distance ratio with the permutation p-value, and the share of its models
    whose nearest neighbour carries the tag (against chance)."""
    if not sep or not np.isfinite(sep.get("ratio", np.nan)):
        n = int(sep.get("n_models", 0)) if sep else 0
        return f"{tag} ({n} models): too few models for a statistic"
    text = (
        f"{tag} ({int(sep['n_models'])} models): within/others distance ratio {sep['ratio']:.2f}, "
        f"{p_text(sep.get('p_value', np.nan), sep.get('n_perm'))}"
    )
    if np.isfinite(sep.get("nn_same_tag", np.nan)):
        text += (
            f"\nnearest neighbour also {tag}: {100 * sep['nn_same_tag']:.0f}% "
            f"(chance {100 * sep['nn_same_tag_chance']:.0f}%)"
        )
    return text


def families_figure(
    link,
    leaves,
    dist,
    names,
    groups,
    highlight,
    title: str,
    subtitle: str,
    separation: dict | None = None,
    cophenetic: float | None = None,
):
    """Paper ``fig:models_family_heirarchical_clustering`` at its printed size (single column,
    :data:`FAMILY_FIGURE_WIDTH` inches; every text at least :data:`FAMILY_MIN_FONT` pt): dendrogram (left) and
    the distance heat map in dendrogram order (right). Models are not named (a pool of a hundred names
    cannot be read at that size; the CSV lists them in dendrogram order): the highlighted tags' models are
    marked by coloured strips along the heat map, and the legend gives each tag's statistic from
    `separation` (tag -> :func:`locus.geometry.families.tag_separation`): within/others distance ratio,
    permutation p-value, nearest neighbour of the same tag."""
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch
    from scipy.cluster import hierarchy

    sns.set_theme(style="white", context="paper")
    n = len(leaves)
    extra = iter(sns.color_palette("tab10", 10)[4:])
    tag_color = {h: TAG_COLORS.get(h) or next(extra) for h in highlight}
    groups = np.asarray(groups, dtype=object)
    ordered_groups = groups[np.asarray(leaves)]
    separation = separation or {}
    font = FAMILY_MIN_FONT
    # layout in inches, then as figure fractions
    # content width = the printed width less the padding save_figure adds, so the PDF is printed at 1:1
    width, heat, top_band = FAMILY_FIGURE_WIDTH - 2 * SAVE_PAD, 1.7, 0.55
    legend_band = 0.3 * len(highlight)
    bottom_band = 0.36 + legend_band + 0.32  # tick labels + axis label, the tags' statistics, the note
    height = top_band + 0.1 + heat + bottom_band
    fig = plt.figure(figsize=(width, height))

    def box(x0, y0, w, h):  # inches from the bottom left
        return fig.add_axes([x0 / width, y0 / height, w / width, h / height])

    y0, strip = bottom_band, 0.07
    x = 0.72  # the dendrogram's width; then the strip, the heat map, the colour bar and its labels (0.45)
    left = box(0.02, y0, x - 0.04, heat)
    side = box(x, y0, strip, heat)
    right = box(x + strip + 0.03, y0, heat, heat)
    top = box(x + strip + 0.03, y0 + heat + 0.03, heat, strip)
    cbar = box(x + strip + 0.03 + heat + 0.06, y0, 0.07, heat)
    hierarchy.dendrogram(
        link, orientation="left", no_labels=True, ax=left, color_threshold=0, above_threshold_color="0.3"
    )
    for line in left.collections:
        line.set_linewidth(0.5)
    left.set_ylim(10 * n, 0)  # leaf i at 10 i + 5: rows top-down, as the heat map
    left.set_yticks([])
    left.set_xlabel("linkage distance", fontsize=font)
    left.tick_params(axis="x", labelsize=font, pad=1, length=2)
    for spine in ("top", "right", "left"):
        left.spines[spine].set_visible(False)
    left.spines["bottom"].set_linewidth(0.5)
    sub = np.asarray(dist)[np.ix_(leaves, leaves)]
    im = right.imshow(sub, cmap="viridis", interpolation="nearest", aspect="auto")
    right.set_xticks([])
    right.set_yticks([])
    colours = np.array([to_rgb(tag_color[g]) if g else (1.0, 1.0, 1.0) for g in ordered_groups])
    side.imshow(colours[:, None, :], aspect="auto", interpolation="nearest")
    top.imshow(colours[None, :, :], aspect="auto", interpolation="nearest")
    for ax in (side, top):
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_linewidth(0.4)
    bar = fig.colorbar(im, cax=cbar)
    bar.set_label("embedding distance", fontsize=font, labelpad=2)
    bar.ax.tick_params(labelsize=font, length=2, pad=1)
    bar.outline.set_linewidth(0.4)
    handles = [Patch(color=tag_color[h], label=separation_text(h, separation.get(h))) for h in highlight]
    if handles:
        fig.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(0.02, (bottom_band - 0.36) / height),
            fontsize=font,
            frameon=False,
            handlelength=1.0,
            handletextpad=0.4,
            borderaxespad=0.0,
            labelspacing=0.3,
        )
    n_perm = next((int(s["n_perm"]) for s in separation.values() if s and s.get("n_perm")), 0)
    note = (
        f"{n} models, not named (CSV: dendrogram order). Strips: tagged models. Ratio < 1: a tag's models "
        "lie closer to each other than to the rest"
    )
    note += f"; p: one-sided, {n_perm} random sets of as many models" if n_perm else ""
    if cophenetic is not None and np.isfinite(cophenetic):
        note += f"; cophenetic correlation {cophenetic:.2f}"
    fig.text(
        0.02,
        0.02 / height,
        textwrap.fill(note + ".", 72),
        fontsize=font,
        ha="left",
        va="bottom",
        color="0.25",
    )
    head = "\n".join(textwrap.fill(line, 58, break_on_hyphens=False) for line in f"{title}\n{subtitle}".split("\n"))
    fig.text(0.5, 1 - 0.04 / height, head, fontsize=font + 1, ha="center", va="top")
    return fig


# ----------------------------------------------------------------------------------------------
# nearest neighbours
# ----------------------------------------------------------------------------------------------
def proxies_figure(frame: pd.DataFrame, title: str):
    """Paper ``fig:nearest_neighor_proxies``: mean test correctness agreement with the k-th nearest
    neighbour vs k, per method; dotted: the best possible proxy; dashed: a random other model."""
    from matplotlib.lines import Line2D

    sns.set_theme(style="whitegrid", context="paper")
    methods = _methods(frame)
    colors = _palette(methods)
    fig, ax = plt.subplots(figsize=(8.4, 3.8))
    for method in methods:
        part = frame[frame["method"] == method]
        curve = part[part["curve"] == "embedding_neighbour"]
        best = part[part["curve"] == "best_possible"]
        rand = part.loc[part["curve"] == "random_other", "agreement"]
        ax.plot(
            curve["k"],
            100 * curve["agreement"],
            marker="o",
            ms=4,
            color=colors[method],
            label=labels.plain_label(method),
        )
        ax.plot(best["k"], 100 * best["agreement"], ls=":", lw=1, color=colors[method])
        if len(rand):
            ax.axhline(100 * rand.iloc[0], ls="--", lw=1, color=colors[method], alpha=0.7)
    ks = sorted(frame["k"].dropna().astype(int).unique())
    ax.set_xticks(ks)
    ax.set_xlabel("k (k-th nearest neighbour in embedding space)")
    ax.set_ylabel("correctness agreement (%)")
    handles, names = ax.get_legend_handles_labels()
    handles += [Line2D([], [], ls=":", color="0.3"), Line2D([], [], ls="--", color="0.3")]
    names += ["best possible proxy (k-th most agreeing)", "random other model"]
    ax.legend(handles, names, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    _title(ax, title)
    fig.tight_layout()
    return fig


# the pool-wide reference lines of the fallback figure: line style, width, in-plot label
SHARED_LINES = {
    "oracle": ((0, (4, 1, 1, 1, 1, 1)), 1.0, "oracle"),
    "best_single": ("-.", 1.8, "best single model (val)"),
    "random": ((0, (1, 3)), 1.0, "random model"),
}
SHARED_LEGEND = {
    "oracle": "oracle (a correct model whenever one exists)",
    "best_single": "best single model, chosen on val, on test",
    "random": "random model",
}


def fallback_figure(frame: pd.DataFrame, title: str):
    """Paper ``fig:fallback_routing``: routing accuracy (left) and retention of the router's accuracy
    (right) when the routed model is replaced by its k-th nearest neighbour in embedding space."""
    from matplotlib.lines import Line2D

    sns.set_theme(style="whitegrid", context="paper")
    methods = _methods(frame)
    colors = _palette(methods)
    fig, (acc_ax, ret_ax) = plt.subplots(1, 2, figsize=(10, 3.8))
    for method in methods:
        part = frame[frame["method"] == method]
        curve = part[part["curve"] == "embedding_neighbour"]
        router = part[part["curve"] == "router_choice"]
        refs = part[part["k"].isna()].set_index("curve")
        color, label = colors[method], labels.plain_label(method)
        if "top_model_share" in refs.columns and "original" in refs.index:  # the router's routing diversity
            label = diversity_label(label + " router", [refs.loc["original", "top_model_share"]])
        acc_ax.plot(curve["k"], 100 * curve["accuracy"], marker="o", ms=4, color=color, label=label)
        acc_ax.plot(router["k"], 100 * router["accuracy"], ls=":", lw=1, color=color)
        ret_ax.plot(curve["k"], 100 * curve["retention"], marker="o", ms=4, color=color, label=label)
        for name, style in (("original", "-"), ("random_other", "--")):
            if name in refs.index:
                acc_ax.axhline(100 * refs.loc[name, "accuracy"], ls=style, lw=0.8, color=color, alpha=0.6)
        if "random_other" in refs.index:
            ret_ax.axhline(100 * refs.loc["random_other", "retention"], ls="--", lw=0.8, color=color, alpha=0.6)
    shared = frame[frame["k"].isna()].drop_duplicates("curve").set_index("curve")
    level = {name: 100 * float(shared.loc[name, "accuracy"]) for name in SHARED_LINES if name in shared.index}
    for name, (style, width, text) in SHARED_LINES.items():
        if name in level:
            acc_ax.axhline(level[name], ls=style, lw=width, color="black", zorder=4)
            acc_ax.annotate(
                f"{text} {level[name]:.1f}",
                (1.0, level[name]),
                xycoords=("axes fraction", "data"),
                xytext=(-2, -2 if name == "random" else 2),
                textcoords="offset points",
                ha="right",
                va="top" if name == "random" else "bottom",
                fontsize=7,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.85, "lw": 0},
                zorder=5,
            )
    ks = sorted(frame["k"].dropna().astype(int).unique())
    for ax in (acc_ax, ret_ax):
        ax.set_xticks(ks)
        ax.set_xlabel("k (fallback = k-th nearest neighbour of the routed model)")
    acc_ax.set_ylabel("test routing accuracy (%)")
    ret_ax.set_ylabel("retention of the router's accuracy (%)")
    handles, names = acc_ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], ls="-", lw=0.8, color="0.4"),
        Line2D([], [], ls=":", lw=1, color="0.4"),
        Line2D([], [], ls="--", lw=0.8, color="0.4"),
    ]
    names += ["router (no fallback)", "router's own (k+1)-th choice", "random other model"]
    for name, (style, width, _text) in SHARED_LINES.items():
        if name in level:
            handles.append(Line2D([], [], ls=style, lw=width, color="black"))
            names.append(f"{SHARED_LEGEND[name]} ({level[name]:.1f})")
    acc_ax.set_ylim(*reference_limits(100 * frame["accuracy"].to_numpy(float), level.values()))
    _title(fig, title)
    fig.tight_layout()
    fig.legend(handles, names, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False)
    return fig
