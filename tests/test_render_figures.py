"""What the figures show: reference lines, axis ranges that cover them, legends that say how many draws
a point summarises, captions that state the grid that ran. Figures are built from small frames, no runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from locus.experiments import ablation
from locus.render.figures import plt, reference_limits, span_note, spread_label


def test_spread_label_says_one_draw_without_a_spread():
    assert spread_label(1) == "one draw"
    assert spread_label(1, "seeds") == "one seed"
    assert spread_label(3) == "mean ± std over 3 draws"
    assert "±" not in spread_label(1)


def test_reference_limits_cover_the_references_and_a_minimum_span():
    low, high = reference_limits([67.8, 68.2], [68.1], min_span=5)
    assert high - low == pytest.approx(5) and low < 67.8 and high > 68.2
    low, high = reference_limits([64.2, 75.2], [75.1, 49.4])
    assert low < 49.4 and high > 75.2
    assert "span 0.40 points" in span_note([67.8, 68.2])


def _labels(ax):
    return ax.get_legend_handles_labels()[1]


def perf_summary(draws: int) -> tuple[pd.DataFrame, dict]:
    rows = []
    for panel, settings in (("size", [64, 256, 1024, 4096]), ("overlap", [0.0, 0.5, 1.0])):
        for i, s in enumerate(settings):
            rows.append(
                {
                    "panel": panel,
                    "setting": s,
                    "set_size": 4096 if panel == "overlap" else s,
                    "correctness_acc": 0.678 + 0.001 * i,
                    "routing_acc": 0.64 + 0.03 * i,
                    "correctness_acc_std": 0.001 if draws > 1 else 0.0,
                    "routing_acc_std": 0.01 if draws > 1 else 0.0,
                    "draws": draws,
                }
            )
    refs = {
        "reference": {"correctness_acc": 0.681, "routing_acc": 0.752},
        "best_single_routing_acc": 0.751,
        "reference_size": 4096,
    }
    return pd.DataFrame(rows), refs


def test_perf_vs_evalset_axes_are_not_zoomed_onto_a_flat_result_and_name_the_draws():
    from locus.render.views import MIN_ACCURACY_SPAN, perf_vs_evalset_figure

    summary, refs = perf_summary(draws=1)
    fig = perf_vs_evalset_figure(summary, refs, "t")
    correctness, routing = fig.axes[0], fig.axes[2]
    low, high = correctness.get_ylim()
    assert high - low >= MIN_ACCURACY_SPAN - 1e-9  # the 0.3-point spread is not stretched over the axis
    low, high = routing.get_ylim()
    assert low < 75.1 < high and low < 64  # the best single model is on the axis
    assert any(label.startswith("best single model, chosen on val (75.1)") for label in _labels(routing))
    labels = [lab for ax in fig.axes for lab in _labels(ax)]
    assert "re-embedded (one draw)" in labels and not any("±" in lab for lab in labels)
    assert any("span" in t.get_text() for t in fig.texts)
    plt.close(fig)
    summary, refs = perf_summary(draws=3)
    fig = perf_vs_evalset_figure(summary, refs, "t")
    assert "re-embedded (mean ± std over 3 draws)" in _labels(fig.axes[0])
    plt.close(fig)


def test_convergence_figure_uses_a_log_axis_when_the_distances_dwarf_the_reference_lines():
    from locus.render.views import convergence_figure

    summary = pd.DataFrame({"n": [16, 256, 4096], "mean": [2.7, 0.5, 0.0], "std": [2.5, 0.3, 0.0], "draws": [5, 5, 1]})
    near = pd.DataFrame({"neighbour": ["a", "b"], "distance": [0.04, 0.2]})
    fig = convergence_figure(summary, near, "n", "title", 4096)
    ax = fig.axes[0]
    assert ax.get_yscale() == "symlog"
    labels = fig.legends[0].get_texts()
    assert any("mean ± std over 5 draws; one draw at n = 4096" in t.get_text() for t in labels)
    plt.close(fig)
    flat = summary.assign(mean=[0.3, 0.2, 0.0], std=0.05)
    fig = convergence_figure(flat, near, "n", "title", 4096)
    assert fig.axes[0].get_yscale() == "linear"
    plt.close(fig)


def fallback_frame() -> pd.DataFrame:
    rows = []
    for method in ("locus", "embedllm"):
        for k in range(1, 4):
            rows.append({"method": method, "curve": "embedding_neighbour", "k": k, "accuracy": 0.687, "retention": 0.9})
            rows.append({"method": method, "curve": "router_choice", "k": k, "accuracy": 0.72, "retention": 0.95})
        for curve, acc in (
            ("original", 0.752),
            ("random_other", 0.49),
            ("best_single", 0.751),
            ("random", 0.494),
            ("oracle", 0.96),
        ):
            rows.append({"method": method, "curve": curve, "k": np.nan, "accuracy": acc, "retention": acc / 0.752})
    return pd.DataFrame(rows)


def test_fallback_figure_shows_the_best_single_model_and_the_oracle():
    from locus.render.geometry import fallback_figure

    fig = fallback_figure(fallback_frame(), "t")
    acc_ax = fig.axes[0]
    low, high = acc_ax.get_ylim()
    assert low < 49.4 and high > 96.0  # random, the fallback (68.7), best single (75.1) and oracle on the axis
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "best single model, chosen on val, on test (75.1)" in legend
    assert any(t.startswith("oracle") and "(96.0)" in t for t in legend)
    in_plot = [t.get_text() for t in acc_ax.texts]
    assert "best single model (val) 75.1" in in_plot
    plt.close(fig)


def test_portfolio_figure_draws_the_best_single_model():
    from locus.render.portfolio import portfolio_figure

    frame = pd.DataFrame(
        {
            "panel": ["count"] * 2,
            "method": ["k-center"] * 2,
            "k": [1, 2],
            "routing_acc": [58.0, 75.2],
            "routing_acc_sd": [np.nan, np.nan],
            "trials": [1, 1],
        }
    )
    summary = {
        "n_models": 2,
        "full_pool_routing_acc": 75.2,
        "full_pool_oracle": 96.0,
        "best_single_routing_acc": 75.1,
        "budget_panel": "no params_b",
    }
    fig = portfolio_figure(frame, summary)
    labels = _labels(fig.axes[0])
    assert "best single model, chosen on val (75.1%)" in labels and "full-pool oracle (96.0%)" in labels
    plt.close(fig)


def test_onboarding_colour_scale_is_not_stretched_over_a_one_point_spread():
    from locus.render.onboarding import MIN_COLOUR_SPAN, onboarding_figure

    grid = pd.DataFrame(
        {
            "row": ["all", "all", "96", "96"],
            "k": [16, 32, 16, 32],
            "accuracy": [0.691, 0.701, 0.687, 0.697],
            "draws": [1, 1, 1, 1],
            "n_train_models": [112, 112, 96, 96],
        }
    )
    fig = onboarding_figure(grid, ["all", "96"], [16, 32], "t")
    mesh = fig.axes[0].collections[0]
    low, high = mesh.get_clim()
    assert high - low >= MIN_COLOUR_SPAN - 1e-9
    note = " ".join(t.get_text() for t in fig.texts)
    assert "span 1.40 points" in note and "one draw" in note
    plt.close(fig)


def test_ablation_caption_states_the_grid_that_ran_against_the_papers():
    text = ablation.grid_sentence("dim", [128, 32], [256])
    assert "\\{32, 128\\}" in text and "\\{256\\}" in text
    assert "2 of the paper's 6 embedding dimensions" in text and "1 of its 3 training sizes" in text
    text = ablation.grid_sentence("encoder", ["all-MiniLM-L6-v2", "all-mpnet-base-v2"], [256, 512])
    assert "2 of the paper's 4 encoders" in text and "2 of its 3 training sizes" in text
    full = ablation.grid_sentence("dim", ablation.PAPER_GRID["dim"]["settings"], [256, 512, 1024])
    assert "6 of the paper's 6" in full and "paper.yaml" not in full


def test_paper_grid_matches_config_paper_yaml():
    from pathlib import Path

    import yaml

    cfg = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())["ablation"]
    assert ablation.PAPER_GRID["dim"] == {"settings": cfg["dims"], "sizes": cfg["dim_train_sizes"]}
    assert ablation.PAPER_GRID["encoder"] == {"settings": cfg["encoders"], "sizes": cfg["encoder_train_sizes"]}
