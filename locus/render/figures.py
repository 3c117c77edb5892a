"""Figures (matplotlib/seaborn on the non-interactive Agg backend) and their data files.

Every figure is written as ``<stem>.pdf`` + ``<stem>.png`` + ``<stem>.csv`` (exactly the numbers it
plots), each atomically. PDF/PNG metadata carry no dates, so re-running on the same inputs gives the
same files.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from locus.atomic import atomic_path  # noqa: E402
from locus.render import speedup_text, write_csv  # noqa: E402,F401  (write_csv re-exported)
from locus.render.labels import color as method_color  # noqa: E402
from locus.render.labels import plain_label  # noqa: E402

METRIC_AXIS_LABELS = {"routing_acc": "Routing accuracy (%)", "correctness_acc": "Correctness prediction accuracy (%)"}


def metric_axis_label(metric: str) -> str:
    return METRIC_AXIS_LABELS.get(metric, f"{metric} (%)")


def figure_title(data_label: str, encoder: str, split: str) -> str:
    """ "<data set> (<encoder>), <split>": the data set's own label, never a fixed name."""
    return f"{data_label} ({encoder}), {split}"


def output_paths(out: str | Path) -> dict[str, Path]:
    """``pdf``, ``png``, ``csv``, ``json`` paths sharing the stem of `out` (whatever its suffix)."""
    out = Path(out)
    stem = out.with_suffix("") if out.suffix.lower() in (".pdf", ".png", ".csv") else out
    return {ext: stem.with_name(stem.name + "." + ext) for ext in ("pdf", "png", "csv", "json")}


def save_figure(fig, out: str | Path, dpi: int = 200) -> dict[str, Path]:
    """Write `fig` as PDF and PNG next to each other (atomic); closes the figure."""
    paths = output_paths(out)
    try:
        with atomic_path(paths["pdf"]) as tmp:
            fig.savefig(tmp, format="pdf", bbox_inches="tight", metadata={"CreationDate": None, "ModDate": None})
        with atomic_path(paths["png"]) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    finally:
        plt.close(fig)
    return paths


def spread_label(n_draws: int, what: str = "draws") -> str:
    """How a plotted point summarises its draws: "one draw" (no band or error bar: there is no spread) or
    "mean ± std over k draws" (`what` names the draws: "draws", "seeds", "trials")."""
    n = int(n_draws)
    if n <= 1:
        return f"one {what[:-1] if what.endswith('s') else what}"
    return f"mean ± std over {n} {what}"


def reference_limits(values, references=(), min_span: float = 0.0, pad: float = 0.06) -> tuple[float, float]:
    """Axis limits covering every finite value of `values` and `references` (the reference lines the
    reader compares against: best single model, chance, oracle), padded by `pad` of the span and widened
    symmetrically to at least `min_span`, so that a flat result is not stretched into a trend."""
    import numpy as np

    finite = np.asarray([*np.ravel(np.asarray(values, float)), *map(float, references)], float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return (0.0, 1.0)
    low, high = float(finite.min()), float(finite.max())
    span = high - low
    low, high = low - pad * span, high + pad * span
    if high - low < min_span:
        mid = (low + high) / 2
        low, high = mid - min_span / 2, mid + min_span / 2
    if high == low:
        low, high = low - 0.5, high + 0.5
    return low, high


def span_note(values, unit: str = "points") -> str:
    """ "plotted values 67.79–68.20 (span 0.41 points)": the range a reader should compare the axis to."""
    import numpy as np

    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "no values"
    return f"plotted values {v.min():.2f}–{v.max():.2f} (span {v.max() - v.min():.2f} {unit})"


def diversity_text(shares) -> str:
    """The routing diversity of a curve for its legend label: the share of the test queries sent to the
    most-chosen model ("top model 89%", or "top model 52–89%" over several points), with
    "near-constant" where a point reaches :data:`locus.evaluation.NEAR_CONSTANT_SHARE` (all of them, or
    "near-constant at n = 1024" when `shares` maps the points' x values to shares); "" without shares."""
    import numpy as np

    from locus.evaluation import NEAR_CONSTANT_SHARE

    items = list(shares.items()) if isinstance(shares, dict) else list(enumerate(np.ravel(np.asarray(shares, float))))
    items = [(x, float(v)) for x, v in items if v is not None and np.isfinite(float(v))]
    if not items:
        return ""
    v = np.asarray([s for _, s in items])
    low, high = 100 * v.min(), 100 * v.max()
    text = f"top model {high:.0f}%" if round(low) == round(high) else f"top model {low:.0f}–{high:.0f}%"
    near = [x for x, s in items if s >= NEAR_CONSTANT_SHARE]
    if near:
        if len(near) == len(items):
            text += ", near-constant"
        elif isinstance(shares, dict):
            text += f", near-constant at n = {', '.join(str(x) for x in near)}"
        else:
            text += f", near-constant at {len(near)} of {len(items)} points"
    return text


def diversity_label(label: str, shares) -> str:
    """`label` with the curve's routing diversity (:func:`diversity_text`): "LOCUS (top model 89%)"."""
    text = diversity_text(shares)
    return f"{label} ({text})" if text else label


def diversity_note() -> str:
    """What the legends' "top model" shares mean (one line under a routing figure)."""
    from locus.evaluation import NEAR_CONSTANT_SHARE

    return (
        "top model x%: share of the test queries the router sends to its most-chosen model; "
        f'near-constant: >= {100 * NEAR_CONSTANT_SHARE:.0f}% (about "always pick that model")'
    )


def factor_label(k: float) -> str:
    """ "2.7× fewer" for k >= 1 (the reference needs k times fewer samples), "2.5× more" for k < 1."""
    return f"{k:.1f}× fewer" if k >= 1 else f"{1.0 / k:.1f}× more"


def interval_label(k: float, low: float, high: float) -> str:
    """The factor's label with its interval, in the label's direction: "2.7× fewer [1.8, 4.1]",
    "2.5× more [1.6, 4.0]" (an unbounded end reads ∞)."""

    def num(x):
        return "∞" if math.isinf(x) else f"{x:.1f}"

    if k >= 1:
        return f"{factor_label(k)} [{num(low)}, {num(high)}]"
    return f"{factor_label(k)} [{num(1.0 / high if high > 0 else math.inf)}, {num(1.0 / low if low > 0 else math.inf)}]"


def _factor_note(summary: dict) -> str:
    """The interval type and, per compared method, what its factor at the reference point is (the
    value with its interval and status, or "undefined" with the share of resamples where it is exact)."""
    ref = plain_label(summary["reference_method"])
    boot = summary.get("bootstrap")
    conf = f"{100 * summary.get('confidence', 0.95):.0f}%"
    need = f"{100 * summary.get('min_defined', 0.95):.0f}%"
    if boot:
        head = (
            f"Sample-efficiency factors of {ref}: {conf} percentile intervals, paired bootstrap over "
            f"{boot['n_queries']:,} test queries ({boot['n_boot']:,} resamples), conservative under censoring; "
            f"undefined where exact in < {need} of resamples. Arrows: significant factors only."
        )
    else:
        head = f"Sample-efficiency factors of {ref}: no bootstrap (no --data), so no interval and no arrow."
    lines = [head]
    point = summary.get("reference_point")
    for method, info in summary["methods"].items():
        at = info["at_reference_point"]
        if at.get("status") == "undefined":
            text = f"undefined (exact in {100 * at['share_defined']:.0f}% of resamples)"
        elif at.get("crossing") != "exact" or not math.isfinite(at.get("factor", math.nan)):
            text = f"{at.get('crossing', '?').replace('_', ' ')}, {at.get('status', '').replace('_', ' ')}"
        elif at.get("status") == "no_interval":
            text = factor_label(at["factor"])
        else:
            text = f"{interval_label(at['factor'], at['ci_low'], at['ci_high'])}, {at['status'].replace('_', ' ')}"
        lines.append(f"vs {plain_label(method)} at n = {point}: {text}")
    return "\n".join(textwrap.fill(line, 95, break_on_hyphens=False) for line in lines)


def _axis_note(curve: pd.DataFrame, summary: dict, diversity: bool) -> str:
    """The lines under the sample-efficiency figure after the factors: the plotted span and the references
    outside the axis, the grid that ran against the paper's, and what the legends' "top model" shares mean."""
    refs = summary.get("references") or {}
    text = "Zoomed axis: " + span_note(100 * curve["mean"].to_numpy(float))
    outside = [f"{name} {100 * v:.1f}" for name, v in refs.items()]
    if outside:
        text += "; not drawn: " + ", ".join(outside) + " (test routers of the same runs)"
    lines = [text]
    if summary.get("grid"):
        lines.append(summary["grid"][0].upper() + summary["grid"][1:] + ".")
    if diversity:
        lines.append(diversity_note() + ".")
    return "\n".join(textwrap.fill(line, 95, break_on_hyphens=False) for line in lines)


def sample_efficiency_figure(
    curve: pd.DataFrame,
    summary: dict,
    metric_label: str = "Routing accuracy (%)",
    title: str | None = None,
    fit: pd.DataFrame | None = None,
    points: pd.DataFrame | None = None,
    shares: dict | None = None,
):
    """Paper ``fig:train_sample_eff``: measured means (markers, thin line) ± std bands per method vs
    training evaluations per model (log2 axis), each seed's own point (`points`: ``method, train_size,
    value``; small hollow markers, drawn when a cell has several seeds), each method's isotonic fit
    (`fit`, dashed; the factors are read from it), the best single model chosen on validation
    (``summary["best_single"]``, grey horizontal line), and a horizontal arrow per baseline whose factor
    the summary marks as ``annotated`` (exact, defined in enough resamples, with a bootstrap interval that
    excludes 1): at the target accuracy, from the baseline's sample count to the reference method's,
    labelled "k× fewer" (or "1/k× more") with its interval. A note under the axes states the interval
    type and each baseline's factor at the reference point (or "undefined"), the plotted span against
    the random and oracle routers (``summary["references"]``, outside the zoomed axis), the grid that ran
    against the paper's (``summary["grid"]``) and, with the routing `shares` (method -> {n: share of the
    test queries sent to the most-chosen model}), each curve's legend names that share
    (:func:`diversity_label`)."""
    from matplotlib.lines import Line2D

    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(5.6, 4.6))
    methods = list(dict.fromkeys(curve["method"]))
    ref = summary["reference_method"]
    methods = [ref] + [m for m in methods if m != ref]
    fallback = iter(sns.color_palette("tab10", len(methods)))
    several = bool((curve["n_seeds"] > 1).any())
    for method in methods:
        part = curve[curve["method"] == method].sort_values("train_size")
        color = method_color(method) or next(fallback)
        x, y, s = part["train_size"], 100 * part["mean"], 100 * part["std"]
        label = plain_label(method)
        if shares is not None:
            label = diversity_label(label, shares.get(method) or {})
        ax.plot(x, y, marker="o", ms=4, lw=0.8, color=color, label=label)
        if several:
            ax.fill_between(x, y - s, y + s, color=color, alpha=0.18, lw=0)
            if points is not None:
                p = points[points["method"] == method]
                ax.scatter(p["train_size"], 100 * p["value"], s=9, facecolors="none", edgecolors=color, lw=0.6)
        if fit is not None:
            f = fit[fit["method"] == method].sort_values("train_size")
            ax.plot(f["train_size"], 100 * f["mean"], ls="--", lw=1.6, color=color, alpha=0.9)
    single = summary.get("best_single")
    if single is not None:
        # dash-dotted, not dashed: dashed lines are the isotonic fits here; labelled on the line itself
        ax.axhline(100 * single, color="0.35", ls="-.", lw=1.1)
        ax.annotate(
            f"best single model {100 * single:.1f}",
            (1.0, 100 * single),
            xycoords=("axes fraction", "data"),
            xytext=(-3, 2),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=7,
            color="0.25",
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.85, "lw": 0},
        )
    arrows = []
    for method, info in summary["methods"].items():
        which = info.get("annotated")
        if which:
            arrows.append((method, info[which]))
    # highest arrow labelled above it, the others below, so neighbouring labels do not collide
    for i, (method, at) in enumerate(sorted(arrows, key=lambda a: -a[1]["target"])):
        y, color = 100 * at["target"], method_color(method) or "black"
        ax.annotate(
            "",
            xy=(at["n_reference"], y),
            xytext=(at["n_method"], y),
            arrowprops={"arrowstyle": "->", "lw": 1.3, "color": color},
        )
        ax.annotate(
            interval_label(at["factor"], at["ci_low"], at["ci_high"]),
            (math.sqrt(at["n_reference"] * at["n_method"]), y),
            xytext=(0, 3 if i == 0 else -3),
            textcoords="offset points",
            ha="center",
            va="bottom" if i == 0 else "top",
            fontsize=7,
            color=color,
        )
    if single is not None:  # room above the line for its label
        low, high = ax.get_ylim()
        if 100 * single + 0.07 * (high - low) > high:
            ax.set_ylim(low, 100 * single + 0.08 * (high - low))
    ax.set_xscale("log", base=2)
    sizes = sorted(set(curve["train_size"]))
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("# training evaluations per model")
    ax.set_ylabel(metric_label)
    if title:
        ax.set_title(textwrap.fill(title, 70, break_on_hyphens=False), fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], ls="-", marker="o", ms=4, lw=0.8, color="0.3"))
    labels.append("measured" + (" (mean; hollow: seeds)" if several and points is not None else ""))
    if fit is not None:
        handles.append(Line2D([], [], ls="--", lw=1.6, color="0.3"))
        labels.append("isotonic fit")
    if single is not None:
        handles.append(Line2D([], [], ls="-.", lw=1.1, color="0.35"))
        labels.append(f"best single model (highest val acc.; test {100 * single:.2f})")
    ax.legend(handles, labels, frameon=True, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.text(
        0.01,
        0.0,
        _factor_note(summary) + "\n" + _axis_note(curve, summary, shares is not None),
        fontsize=6.5,
        ha="left",
        va="top",
        wrap=False,
    )
    fig.tight_layout()
    return fig


def time_to_accuracy_figure(frame: pd.DataFrame, summary: dict, title: str):
    """Validation hit@1 against wall-clock seconds (log scale) and against steps, one line per recipe (and
    seed: one line style per seed), with the target (a fraction of the reference recipe's best, per seed)
    and the best single model's validation level."""
    curves = frame[frame["kind"] == "curve"]
    palette = {"paper": "#1f77b4", "fast": "#d62728"}
    seeds = list(summary.get("seeds") or [summary.get("seed")])
    multi = "per_seed" in summary
    styles = ["-", "--", "-.", (0, (1, 1))]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for (recipe, seed), part in curves.groupby(["recipe", "seed"], sort=False, dropna=False):
        color, s = palette.get(recipe), summary["recipes"][recipe]
        style = styles[seeds.index(seed) % len(styles)] if multi else "-"
        if multi:
            label = (
                (
                    f"{recipe}: speed-up median {speedup_text(s['speedup_to_target'])} ({speedup_text(s['speedup_min'])}"
                    f" to {speedup_text(s['speedup_max'])})"
                )
                if seed == seeds[0]
                else None
            )
        else:
            label = f"{recipe}: best {100 * s['best_val_routing']:.1f}% at {s['seconds_to_best']:.0f} s"
            axes[0].plot(part["seconds"].clip(lower=1e-3), 100 * part["val_routing"], color=color, lw=1, alpha=0.45)
        if label and "speedup_to_matched_target" in s:  # the reference validated as rarely as this recipe
            label += f"\n  {summary['reference']} validated as rarely: {speedup_text(s['speedup_to_matched_target'])}"
        axes[0].plot(
            part["seconds"].clip(lower=1e-3), 100 * part["best_so_far"], color=color, lw=2, ls=style, label=label
        )
        axes[1].plot(
            part["step"],
            100 * part["best_so_far"],
            color=color,
            lw=2,
            ls=style,
            label=f"{recipe}, seed {int(seed)}" if multi else recipe,
        )
    constant = summary.get("constant_router_val_routing")
    targets = (
        [
            (summary["per_seed"][str(seed)]["target_val_routing"], styles[i % len(styles)])
            for i, seed in enumerate(seeds)
        ]
        if multi
        else [(summary["target_val_routing"], "--")]
    )
    for ax in axes:
        for target, style in targets:
            ax.axhline(100 * target, color="0.3", ls=style, lw=1)
        if constant is not None:
            ax.axhline(100 * constant, color="0.6", ls="-", lw=3, alpha=0.4)
        ax.grid(alpha=0.3)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("wall-clock seconds (training + validation)")
    axes[1].set_xlabel("optimiser steps")
    axes[0].set_ylabel("validation routing accuracy (%)")
    key = f"thin grey: {summary['target_fraction']:.0%} of {summary['reference']}'s best" + (
        " (line style = seed)" if multi else ""
    )
    if constant is not None:
        below = (
            [summary["per_seed"][str(seed)]["target_queries_above_constant"] for seed in seeds]
            if multi
            else [summary["target_queries_above_constant"]]
        )
        key += (
            f"\nthick grey: best single model (target minus it: {'/'.join(f'{b:+d}' for b in below)} of "
            f"{summary['n_val_queries']} queries)"
        )
    axes[0].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.24), title=key, title_fontsize=8)
    if multi:
        axes[1].legend(fontsize=7, loc="best", ncol=2)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
