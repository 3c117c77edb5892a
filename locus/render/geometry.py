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
def families_figure(link, leaves, dist, names, groups, highlight, title: str, subtitle: str):
    """Paper ``fig:models_family_heirarchical_clustering``: dendrogram (left) and the distance heat map in
    dendrogram order (right); models of the highlighted tags coloured in both."""
    from matplotlib.patches import Patch
    from scipy.cluster import hierarchy

    sns.set_theme(style="white", context="paper")
    n = len(leaves)
    extra = iter(sns.color_palette("tab10", 10)[4:])
    tag_color = {h: TAG_COLORS.get(h) or next(extra) for h in highlight}
    size = max(6.0, min(16.0, 0.11 * n + 3))
    fontsize = max(2.5, min(8.0, 300 / max(n, 1)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(size * 1.55, size), gridspec_kw={"width_ratios": [0.34, 0.64]})
    ordered = np.asarray(names, dtype=object)[leaves]
    hierarchy.dendrogram(
        link,
        orientation="left",
        labels=list(np.asarray(names, dtype=object)),
        ax=left,
        color_threshold=0,
        above_threshold_color="0.35",
        leaf_font_size=fontsize,
    )
    # dendrogram draws leaves bottom-up: match the heat map's top-down order
    left.invert_yaxis()
    left.set_xlabel("linkage distance")
    by_name = dict(zip(names, groups))
    for label in left.get_yticklabels():
        g = by_name.get(label.get_text(), "")
        if g:
            label.set_color(tag_color[g])
            label.set_fontweight("bold")
    sub = np.asarray(dist)[np.ix_(leaves, leaves)]
    im = right.imshow(sub, cmap="viridis", interpolation="nearest", aspect="auto")
    right.set_xticks(range(n))
    right.set_yticks(range(n))
    right.set_xticklabels(ordered, rotation=90, fontsize=fontsize)
    right.set_yticklabels(ordered, fontsize=fontsize)
    ordered_groups = np.asarray(groups, dtype=object)[leaves]
    for ticks in (right.get_xticklabels(), right.get_yticklabels()):
        for label, g in zip(ticks, ordered_groups):
            if g:
                label.set_color(tag_color[g])
                label.set_fontweight("bold")
    fig.colorbar(im, ax=right, fraction=0.04, pad=0.02, label="embedding distance")
    handles = [Patch(color=c, label=f"{h} ({int(np.sum(np.asarray(groups) == h))})") for h, c in tag_color.items()]
    if handles:
        right.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.12, 1.0), fontsize=8, title="tag")
    _title(fig, f"{title}\n{subtitle}", size=10)
    fig.tight_layout()
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
