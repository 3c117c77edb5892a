"""Figure of model portfolio selection (paper ``fig:model_portfolio_joint``): the curves of
:func:`locus.geometry.portfolio.curves` -> PDF + PNG + CSV (+ JSON summary), each written atomically.

Left: test routing accuracy restricted to the portfolio vs portfolio size k for k-center, k-medoids and
random subsets (mean ± sd band over the trials). Right: the same vs the total-parameter budget
(billions, log axis) for coverage-greedy and random feasible subsets. The full pool's accuracy is a
dashed line in both panels, the best single model (chosen on validation, scored on test) a dash-dotted
one and the full pool's oracle a dotted one.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from locus.atomic import atomic_path
from locus.render import write_csv
from locus.render.figures import diversity_text, output_paths, plt, save_figure, sns

STYLE = {
    "k-center": ("#1f77b4", "o"),
    "k-medoids": ("#2ca02c", "s"),
    "random": ("0.45", None),
    "coverage-greedy": ("#d62728", "o"),
    "random-feasible": ("0.45", None),
}


def _curve(ax, part: pd.DataFrame, x: str, method: str) -> None:
    color, marker = STYLE[method]
    part = part.sort_values(x)
    xs, ys, sd = part[x].to_numpy(float), part["routing_acc"].to_numpy(float), part["routing_acc_sd"].to_numpy(float)
    notes = [f"mean ± sd, {int(part['trials'].iloc[0])} trials"] if part["trials"].max() > 1 else []
    if "top_model_share" in part.columns:  # the portfolio routers' routing diversity over the curve's points
        notes += [t for t in [diversity_text(part["top_model_share"].to_numpy(float))] if t]
    label = method + (f" ({'; '.join(notes)})" if notes else "")
    ax.plot(xs, ys, color=color, marker=marker, ms=3, lw=1.4, label=label)
    if np.isfinite(sd).any():
        ax.fill_between(xs, ys - sd, ys + sd, color=color, alpha=0.18, lw=0)


def portfolio_figure(frame: pd.DataFrame, summary: dict, title: str | None = None):
    """The two-panel figure (see the module docstring)."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.4), sharey=True)
    full = summary["full_pool_routing_acc"]
    share = summary.get("full_pool_top_model_share")  # the full-pool router's routing diversity
    routed = "" if share is None else f"; {diversity_text([share])}"
    for method in ("random", "k-center", "k-medoids"):
        part = frame[frame["method"] == method]
        if not part.empty:
            _curve(left, part, "k", method)
    left.set_xlabel("portfolio size k (models)")
    left.set_ylabel("Routing accuracy (%)")
    left.set_title(f"count-constrained (pool of {summary['n_models']} models)", fontsize=9)
    budget = frame[frame["panel"] == "budget"]
    if budget.empty:
        right.text(
            0.5,
            0.5,
            textwrap.fill("no parameter-budget panel: " + str(summary["budget_panel"]), 50),
            ha="center",
            va="center",
            fontsize=7,
            transform=right.transAxes,
        )
    else:
        for method in ("random-feasible", "coverage-greedy"):
            _curve(right, budget[budget["method"] == method], "budget_b", method)
        right.set_xscale("log")
        right.set_title(f"parameter budget (pool total {summary['total_params_b']:,.0f}B)", fontsize=9)
    right.set_xlabel("total-parameter budget (billions)")
    single = summary.get("best_single_routing_acc")
    oracle = summary.get("full_pool_oracle")
    for ax in (left, right):
        ax.axhline(full, color="black", ls="--", lw=1, label=f"full pool, routed ({full:.1f}%{routed})")
        if single is not None:
            ax.axhline(
                single,
                color="#9467bd",
                ls="-.",
                lw=1.4,
                label=f"best single model, chosen on val ({single:.1f}%)",
            )
        if oracle is not None:
            ax.axhline(oracle, color="0.3", ls=":", lw=1.1, label=f"full-pool oracle ({oracle:.1f}%)")
        # below the panel: the labels carry each curve's routing diversity and would cover the curves
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    if title:
        fig.suptitle(textwrap.fill(title, 110, break_on_hyphens=False), fontsize=10)
    fig.tight_layout()
    return fig


def _json_safe(obj):
    """NaN / inf -> None, numpy scalars -> Python (JSON has neither)."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (np.integer, np.floating)):
        obj = obj.item()
    return None if isinstance(obj, float) and not np.isfinite(obj) else obj


def write(frame: pd.DataFrame, summary: dict, out, title: str | None = None) -> dict[str, Path]:
    """PDF + PNG + CSV (the plotted numbers, accuracies in %) + JSON (the summary) beside `out`."""
    paths = output_paths(out)
    write_csv(frame, paths["csv"])
    with atomic_path(paths["json"]) as tmp:
        Path(tmp).write_text(json.dumps(_json_safe(summary), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    save_figure(portfolio_figure(frame, summary, title), out)
    return paths
