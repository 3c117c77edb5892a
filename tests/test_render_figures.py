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
    assert "best single model (highest val acc.; test 75.1)" in _labels(routing)
    single = [line for line in routing.get_lines() if line.get_label().startswith("best single model")]
    assert len(single) == 1 and single[0].get_linestyle() == "--" and set(single[0].get_ydata()) == {75.1}
    assert not any(lab.startswith("best single") for lab in _labels(correctness))  # routing axes only
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


# --- routing diversity, grids against the paper's, chance lines, honest error bars --------------------------


def test_diversity_label_names_the_top_model_share_and_flags_near_constant_routers():
    from locus.evaluation import NEAR_CONSTANT_SHARE
    from locus.render.figures import diversity_label, diversity_text

    assert diversity_label("LOCUS", [0.896]) == "LOCUS (top model 90%)"  # rounds to 90, but is below 0.90
    assert diversity_label("LOCUS", [NEAR_CONSTANT_SHARE]) == "LOCUS (top model 90%, near-constant)"
    assert diversity_text([0.52, 0.89]) == "top model 52–89%"
    assert diversity_text({64: 0.84, 4096: 0.94}) == "top model 84–94%, near-constant at n = 4096"
    assert diversity_text([0.5, 0.95, 0.97]).endswith("near-constant at 2 of 3 points")
    assert diversity_label("LOCUS", []) == "LOCUS" and diversity_text([np.nan]) == ""


def se_inputs():
    from locus.experiments import sample_efficiency as se

    curve = pd.DataFrame(
        {
            "method": ["locus"] * 3 + ["irt_net"] * 3,
            "train_size": [64, 256, 1024] * 2,
            "mean": [0.748, 0.741, 0.752, 0.737, 0.712, 0.728],
            "std": 0.0,
            "n_seeds": 1,
        }
    )
    _, summary = se.efficiency(curve, "locus")
    summary.update(
        best_single=0.751,
        references={"random": 0.494, "oracle": 0.96},
        grid=se.grid_sentence([64, 256, 1024], [0]),
    )
    return curve, summary


def test_sample_efficiency_figure_names_span_references_grid_and_router_diversity():
    from locus.render.figures import sample_efficiency_figure

    curve, summary = se_inputs()
    shares = {"locus": {64: 0.84, 256: 0.91, 1024: 0.89}, "irt_net": {64: 0.26, 256: 0.4, 1024: 0.85}}
    fig = sample_efficiency_figure(curve, summary, shares=shares)
    labels = _labels(fig.axes[0])
    assert "LOCUS (top model 84–91%, near-constant at n = 256)" in labels
    assert "IRT-Net (top model 26–85%)" in labels
    note = " ".join(t.get_text() for t in fig.texts)
    assert "plotted values 71.20–75.20 (span 4.00 points)" in note
    assert "random 49.4, oracle 96.0" in note  # the references the zoomed axis leaves out
    assert "grid run: n in {64, 256, 1024} x 1 seed. the paper does not give" in note.replace("\n", " ").lower()
    assert "top model x%" in note
    plt.close(fig)
    fig = sample_efficiency_figure(curve, summary)  # no shares (no --data): plain labels
    assert "LOCUS" in _labels(fig.axes[0])
    plt.close(fig)


def test_sample_efficiency_figure_labels_the_best_single_line_and_its_csv_row():
    from locus.experiments.figures import plot_frame
    from locus.render.figures import sample_efficiency_figure

    curve, summary = se_inputs()
    fig = sample_efficiency_figure(curve, summary)
    ax = fig.axes[0]
    flat = [line for line in ax.get_lines() if len(set(line.get_ydata())) == 1 and line.get_linestyle() == "-."]
    assert len(flat) == 1 and set(flat[0].get_ydata()) == {75.1}
    assert any(t.get_text() == "best single model 75.1" for t in ax.texts)  # labelled on the line
    assert ax.get_ylim()[1] > 75.1 + 0.05 * (ax.get_ylim()[1] - ax.get_ylim()[0])  # room for the label
    assert "best single model (highest val acc.; test 75.10)" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)
    table = pd.DataFrame({"method": ["irt_net"], "n": [256], "factor": [2.0]})
    frame = plot_frame(curve, table, best_single=summary["best_single"])
    row = frame[frame["kind"] == "best_single"]
    assert len(row) == 1 and row["mean"].iloc[0] == pytest.approx(0.751) and row["method"].iloc[0] == "best_single"


def test_sample_efficiency_grid_sentence_and_paper_grid_match_config_paper_yaml():
    from pathlib import Path

    import yaml

    from locus.experiments import sample_efficiency as se

    cfg = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())["sample_efficiency"]
    assert list(se.PAPER_CONFIG_SIZES) == cfg["train_sizes"] and list(se.PAPER_CONFIG_SEEDS) == cfg["seeds"]
    paper = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())["train_sizes"]
    assert list(se.PAPER_TABLE_SIZES) == paper
    text = se.grid_sentence([4096, 64, 256, 512, 1024], [0])
    assert text.startswith("grid run: n in {64, 256, 512, 1024, 4096} x 1 seed. The paper does not give")
    assert "(its tables: {256, 512, 1024}, 3 of them here)" in text
    assert "(5 of its sizes here, without 128, 2048)" in text
    full = se.grid_sentence(se.PAPER_CONFIG_SIZES, se.PAPER_CONFIG_SEEDS)
    assert full.endswith("x 3 seeds") and "without" not in full


def test_sample_efficiency_figure_data_carries_the_top_model_shares():
    from locus.experiments.figures import plot_frame, reference_levels, top_shares

    curve, _ = se_inputs()
    shares = top_shares({("locus", 64): {"top_model_share": 0.84}, ("irt_net", 64): {"top_model_share": 0.26}})
    assert shares == {"irt_net": {64: 0.26}, "locus": {64: 0.84}}
    frame = plot_frame(curve, pd.DataFrame(columns=["method", "n"]), shares=shares)
    rows = frame[(frame["kind"] == "curve") & (frame["train_size"] == 64)].set_index("method")
    assert rows.loc["locus", "top_model_share"] == 0.84 and rows.loc["irt_net", "top_model_share"] == 0.26
    refs = pd.DataFrame(
        {"reference": ["random", "oracle", "random"], "benchmark": "Overall", "mean": [0.49, 0.96, 0.51]}
    )
    assert reference_levels(refs, "routing_acc") == pytest.approx({"random": 0.50, "oracle": 0.96})
    assert reference_levels(refs, "correctness_acc") == {}


def test_fallback_and_portfolio_legends_name_the_routers_top_model_share():
    from locus.render.geometry import fallback_figure
    from locus.render.portfolio import portfolio_figure

    frame = fallback_frame()
    frame["top_model_share"] = np.where(
        frame["curve"] == "original", np.where(frame["method"] == "locus", 0.93, 0.32), np.nan
    )
    fig = fallback_figure(frame, "t")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "LOCUS router (top model 93%, near-constant)" in legend and "EmbedLLM router (top model 32%)" in legend
    plt.close(fig)
    summary = {"n_models": 2, "full_pool_routing_acc": 75.2, "full_pool_top_model_share": 0.896, "budget_panel": "x"}
    part = pd.DataFrame({"panel": ["count"], "method": ["k-center"], "k": [1], "routing_acc": [58.0]})
    fig = portfolio_figure(part.assign(routing_acc_sd=np.nan, trials=1), summary)
    assert "full pool, routed (75.2%; top model 90%)" in _labels(fig.axes[0])
    plt.close(fig)


def test_perf_vs_evalset_note_gives_the_routers_diversity():
    from locus.render.views import perf_vs_evalset_figure

    summary, refs = perf_summary(draws=1)
    summary["top_model_share"] = [0.92, 0.85, 0.84, 0.83, 0.91, 0.95, 0.89]
    refs["reference"]["top_model_share"] = 0.89
    fig = perf_vs_evalset_figure(summary, refs, "t")
    note = " ".join(t.get_text() for t in fig.texts)
    assert "size panel: top model 83–92%, near-constant at n = 64" in note
    assert "overlap panel: top model 89–95%, near-constant at α = 0, 0.5" in note
    assert "reference embeddings: top model 89%" in note
    plt.close(fig)


def test_hypothetical_figure_draws_the_chance_level_of_recall_at_k():
    from locus.render.views import chance_recall, hypothetical_figure

    assert chance_recall(1, 112) == pytest.approx(1 / 112) and chance_recall(10, 4) == 1.0
    recall = pd.DataFrame(
        {"size": [64, 256] * 2, "k": [1, 1, 10, 10], "recall": [0.03, 0.09, 0.42, 0.52], "models": 112}
    )
    fig = hypothetical_figure(recall, "t")
    ax = fig.axes[0]
    levels = sorted(
        line.get_ydata()[0]
        for line in ax.get_lines()
        if line.get_linestyle() == ":" and len(set(line.get_ydata())) == 1
    )
    assert levels == pytest.approx([100 / 112, 1000 / 112])
    assert any(t.get_text().startswith("chance: k/112") for t in ax.get_legend().get_texts())
    plt.close(fig)


def test_convergence_bars_span_the_draws_and_never_pass_zero():
    from locus.render.views import convergence_figure

    near = pd.DataFrame({"neighbour": ["a", "b"], "distance": [0.04, 0.2]})
    summary = pd.DataFrame(
        {
            "n": [16, 256, 4096],
            "mean": [1.6, 0.28, 0.0],
            "std": [1.75, 0.33, 0.0],  # mean - std < 0: a ± std bar would reach below every draw
            "min": [0.08, 0.03, 0.0],
            "max": [4.4, 0.81, 0.0],
            "draws": [5, 5, 1],
        }
    )
    fig = convergence_figure(summary, near, "n", "title", 4096)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("mean; bars: min–max over 5 draws; one draw at n = 4096" in t for t in labels)
    bars = fig.axes[0].containers[0].lines[2][0].get_segments()
    assert [seg[0][1] for seg in bars] == pytest.approx([0.08, 0.03, 0.0])  # lower ends at the smallest draw
    plt.close(fig)
    fig = convergence_figure(summary.drop(columns=["min", "max"]), near, "n", "title", 4096)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("lower bars clipped at 0" in t for t in labels)
    assert min(seg[0][1] for seg in fig.axes[0].containers[0].lines[2][0].get_segments()) >= 0
    plt.close(fig)


def test_summarize_draws_keeps_the_smallest_and_largest_draw():
    from locus.geometry.views import summarize_draws

    draws = pd.DataFrame({"n": [16, 16, 16, 64], "distance": [0.2, 2.4, 5.8, 1.0]})
    out = summarize_draws(draws, "n").set_index("n")
    assert out.loc[16, "min"] == 0.2 and out.loc[16, "max"] == 5.8 and out.loc[64, "draws"] == 1


def test_onboarding_note_states_the_grid_against_the_papers():
    from pathlib import Path

    import yaml

    from locus.render.onboarding import PAPER_MODEL_COUNTS, PAPER_SIZES, grid_sentence

    cfg = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())["onboarding"]
    assert list(PAPER_MODEL_COUNTS) == cfg["model_counts"]
    default = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())["onboarding"]
    assert list(PAPER_SIZES) == default["sizes"]  # the paper's evaluation counts, already the default
    text = grid_sentence([96], [16, 32], 1, all_row=112)
    assert "models in training {96, all (112)} x evaluations {16, 32}, 1 draw per cell" in text
    assert "0 of the paper's 5 model counts" in text and "2 of its 7 evaluation counts" in text
    assert "config/paper.yaml" in text
    assert "paper.yaml" not in grid_sentence(PAPER_MODEL_COUNTS, PAPER_SIZES, 3)


def test_relearn_heatmap_note_states_the_grid_and_matches_config_paper_yaml():
    from pathlib import Path

    import yaml

    from locus.render.regeneration import PAPER_CONFIG_GRID, grid_sentence, heatmap_figure

    cfg = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())["regeneration"]
    assert list(PAPER_CONFIG_GRID["hidden_layers"]) == cfg["hidden_layers"]
    assert list(PAPER_CONFIG_GRID["dims"]) == cfg["dims"]
    grid = pd.DataFrame([[0.1, 0.2], [0.3, 0.4]], index=[0, 2], columns=[32, 128])
    fig = heatmap_figure(grid, "test_disagreement", 0.0)
    note = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "Grid run: hidden layers {0, 2} x d {32, 128}" in note and "not recoverable" in note
    assert "of which this grid has 2 x 2" in note
    plt.close(fig)
    assert "of which" not in grid_sentence(cfg["hidden_layers"], cfg["dims"])


def test_cost_figure_draws_the_best_single_model_as_a_line_in_both_panels():
    from locus.render.decisions import BEST_SINGLE_STYLE, cost_quality_figure

    # costs spanning more than a factor 20: a linear and a log panel
    rows = [("single", f"m{i}", c, q) for i, (c, q) in enumerate([(0.1, 0.5), (1.0, 0.6), (10.0, 0.7)])]
    rows += [("best_single", "m1", 1.0, 0.6), ("mix", "mix", 0.1, 0.5), ("mix", "mix", 10.0, 0.7)]
    rows += [("oracle", "oracle", 0.1, 0.8), ("oracle", "oracle", 10.0, 0.9)]
    rows += [("method", "locus", 0.5, 0.55), ("method", "locus", 5.0, 0.65)]
    points = pd.DataFrame(rows, columns=["series", "router", "cost", "quality"])
    fig = cost_quality_figure(points, "t", "cost")
    assert len(fig.axes) == 2 and fig.axes[1].get_xscale() == "log"
    for ax in fig.axes:
        single = [line for line in ax.get_lines() if line.get_label().startswith("best single model")]
        assert len(single) == 1 and single[0].get_linestyle() == BEST_SINGLE_STYLE
        assert set(single[0].get_ydata()) == {60.0} and tuple(single[0].get_xdata()) == (0, 1)  # across the axis
        assert any(len(c.get_offsets()) == 1 and tuple(c.get_offsets()[0]) == (1.0, 60.0) for c in ax.collections)
    assert "best single model, chosen on validation (m1): 60.0% (star: its cost)" in _labels(fig.axes[0])
    plt.close(fig)
