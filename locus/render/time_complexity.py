"""Figure of LOCUS's time complexity (paper appendix G, ``fig:time_complexity_locus``) from the frame of
:func:`locus.experiments.time_complexity.build_frame`.

Left: embedding time vs evaluations per model, one line per pool size; right: correctness-prediction time
vs unseen queries for the whole pool; float32 solid, bfloat16 (where measured) dashed. Log-log axes; markers at the median, bars from min to max. The
paper's V100 numbers (star) and this implementation's 2-core CPU targets (open triangle, an upper bound)
are drawn at their shape (112 models x 4,096) in both panels.
"""

from __future__ import annotations

import textwrap

import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from locus.render.figures import plt, sns

REFERENCE_STYLE = {
    "paper": {"marker": "*", "ms": 13, "color": "black", "mfc": "gold", "ls": "none", "zorder": 5},
    "target": {"marker": "v", "ms": 9, "color": "#d62728", "mfc": "none", "mew": 1.6, "ls": "none", "zorder": 5},
}


LINE_STYLES = {"float32": "-", "bfloat16": "--"}


def _measured(ax, part: pd.DataFrame, color, label: str) -> None:
    part = part.sort_values("n")
    x, y = part["n"].to_numpy(float), part["median_s"].to_numpy(float)
    yerr = [y - part["min_s"].to_numpy(float), part["max_s"].to_numpy(float) - y]
    style = LINE_STYLES.get(str(part["precision"].iloc[0]) if "precision" in part else "float32", ":")
    ax.errorbar(x, y, yerr=yerr, color=color, marker="o", ms=4, lw=1.5, capsize=2, label=label, ls=style)


def time_complexity_figure(frame: pd.DataFrame, title: str | None = None):
    """The two-panel figure (see the module docstring); `title` defaults to the device line of the frame."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 5.2))
    measured = frame[frame["source"] == "measured"]
    pools = sorted(measured.loc[measured["what"] == "embed", "n_models"].unique())
    palette = dict(zip(pools, sns.color_palette("viridis", max(len(pools), 1))))
    if "precision" not in measured:
        measured = measured.assign(precision="float32")
    for (m, _), part in measured[measured["what"] == "embed"].groupby(["n_models", "precision"], sort=False):
        _measured(left, part, palette[m], part["label"].iloc[0])
    for (m, _), part in measured[measured["what"] == "predict"].groupby(["n_models", "precision"], sort=False):
        _measured(right, part, palette.get(m, "#1f77b4"), part["label"].iloc[0])
    for ax, what in ((left, "embed"), (right, "predict")):
        refs = frame[(frame["what"] == what) & (frame["source"] != "measured")]
        for r in refs.itertuples():
            ax.plot(
                [r.n],
                [r.median_s],
                label=f"{r.label} ({r.n_models} models × {r.n:,})",
                **REFERENCE_STYLE.get(r.source, {"marker": "x", "ls": "none"}),
            )
        xs = sorted(set(frame.loc[frame["what"] == what, "n"].astype(int)))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:,}" for x in xs])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel("seconds (median; bars: min–max)")
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: (labels[i].startswith(("paper", "target")), i))
        ax.legend(
            [handles[i] for i in order],
            [labels[i] for i in order],
            fontsize=7,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.17),
            ncol=1,
            frameon=False,
        )
        ax.grid(alpha=0.3, which="both")
    left.set_xlabel("# evaluation queries per model (n)")
    left.set_title("(a) model embedding generation (encoder)", fontsize=9)
    right.set_xlabel("# unseen queries")
    right.set_title("(b) correctness prediction, whole pool (decoder)", fontsize=9)
    if title is None and not measured.empty:
        first = measured.iloc[0]
        where = first["device_name"]
        if str(first["device"]).startswith("cpu") and isinstance(first.get("cpu_model"), str) and first["cpu_model"]:
            where = first["cpu_model"]
        title = (
            f"LOCUS time complexity on {where} ({first['device']}, {int(first['threads'])} "
            f"thread(s), torch {first['torch']}); median of {int(measured['repeats'].max())} warm call(s) "
            "after a warm-up, random inputs (d_phi = 768)"
        )
        bf16 = str(first.get("bfloat16") or "")
        if bf16.startswith("not timed"):
            title += f"; bfloat16 {bf16}"
        elif bf16 and (measured["precision"] == "bfloat16").any():
            title += f"; bfloat16 {bf16} on this device"
    if title:
        fig.suptitle(textwrap.fill(title, 110, break_on_hyphens=False), fontsize=9)
    fig.tight_layout()
    return fig
