"""Time to accuracy (locus.experiments.time_to_accuracy): the summary on hand-made training logs with known
answers, the figure files, refusals, and two real (tiny) LOCUS runs with the `paper` and `fast` recipes."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from locus.errors import DataError
from locus.experiments import time_to_accuracy as tta


def fake_run(root, recipe, steps, seconds, val, seed=0, n=256, test=0.5):
    d = root / recipe
    d.mkdir(parents=True)
    metrics = {
        "method": "locus",
        "params": {"recipe": recipe},
        "train_size": n,
        "seed": seed,
        "dataset": "results/data/toy",
        "encoder": "enc",
        "val": {},
        "test": {"overall": {"routing_acc": test}},
    }
    (d / "metrics.json").write_text(json.dumps(metrics))
    pd.DataFrame({"step": steps, "seconds": seconds, "val_routing": val, "train_loss": 0.5}).to_csv(
        d / "log.csv", index=False
    )
    return d


@pytest.fixture
def two_runs(tmp_path):
    # paper: best 0.80 first at step 3 (30 s); fast reaches 0.792 (= 0.99 * 0.80) at step 20 (2 s), best 0.795
    paper = fake_run(tmp_path, "paper", [1, 2, 3, 4], [10.0, 20.0, 30.0, 40.0], [0.5, 0.7, 0.8, 0.8])
    fast = fake_run(tmp_path, "fast", [10, 20, 30], [1.0, 2.0, 3.0], [0.6, 0.792, 0.795], test=0.6)
    return paper, fast


def test_summary_of_hand_made_curves(two_runs):
    runs = [tta.read_recipe_run(d) for d in two_runs]
    frame, s = tta.compare(runs, "paper", 0.99)
    assert s["target_val_routing"] == pytest.approx(0.792)
    p, f = s["recipes"]["paper"], s["recipes"]["fast"]
    assert (p["best_val_routing"], p["step_to_best"], p["seconds_to_best"]) == (0.8, 3, 30.0)
    assert (p["seconds_to_target"], p["steps"], p["seconds"]) == (30.0, 4, 40.0)
    assert (f["best_val_routing"], f["step_to_best"], f["seconds_to_target"], f["step_to_target"]) == (
        0.795,
        30,
        2.0,
        20,
    )
    assert f["speedup_to_target"] == pytest.approx(15.0) and p["speedup_to_target"] == pytest.approx(1.0)
    assert f["test_routing"] == 0.6 and math.isnan(f["peak_rss_mb"])
    curve = frame[(frame["kind"] == "curve") & (frame["recipe"] == "paper")]
    assert curve["best_so_far"].tolist() == [0.5, 0.7, 0.8, 0.8]


def test_constant_router_level_in_validation_queries(two_runs):
    """With the best single model's validation level (0.78 over 1,000 queries): the target 0.792 lies 12 queries
    above it, paper's best 0.80 20 and fast's 0.795 15; the CSV gets the level as a row."""
    runs = [tta.read_recipe_run(d) for d in two_runs]
    frame, s = tta.compare(runs, "paper", 0.99, constant=(0.78, 1000))
    assert (s["constant_router_val_routing"], s["n_val_queries"], s["target_queries_above_constant"]) == (
        0.78,
        1000,
        12,
    )
    assert s["recipes"]["paper"]["best_queries_above_constant"] == 20
    assert s["recipes"]["fast"]["best_queries_above_constant"] == 15
    assert frame.loc[frame["kind"] == "constant_router_val_routing", "value"].tolist() == [0.78]
    assert "12 of 1000 validation queries above it" in "\n".join(tta.report_lines(s))
    _, plain = tta.compare(runs, "paper", 0.99)
    assert "constant_router_val_routing" not in plain and "best_queries_above_constant" not in plain["recipes"]["fast"]
    assert s["target_met_by_constant_router"] is False and "WARNING" not in "\n".join(tta.report_lines(s))


def test_a_target_the_constant_router_already_meets_is_flagged(two_runs):
    """paper's best 0.80 makes the target 0.792; a best single model at 0.7925 on 1,000 queries already routes
    it, 0 queries short: the summary flags it and the report warns that the speed-up times no learning."""
    runs = [tta.read_recipe_run(d) for d in two_runs]
    _, s = tta.compare(runs, "paper", 0.99, constant=(0.7925, 1000))
    assert s["target_queries_above_constant"] == 0 and s["target_met_by_constant_router"] is True
    assert "WARNING: the constant router already meets the target" in "\n".join(tta.report_lines(s))


def test_values_below_the_constant_router_read_as_below(two_runs):
    """A best single model at 0.81 on 1,000 queries: the target 0.792 lies 18 queries below it, paper's best
    0.80 10 and fast's 0.795 15; the report says "below", never "-18 ... above"."""
    runs = [tta.read_recipe_run(d) for d in two_runs]
    _, s = tta.compare(runs, "paper", 0.99, constant=(0.81, 1000))
    assert s["target_queries_above_constant"] == -18 and s["recipes"]["fast"]["best_queries_above_constant"] == -15
    text = "\n".join(tta.report_lines(s))
    assert "the target is 18 of 1000 validation queries below it" in text
    assert "best 10 queries below the constant router" in text and "best 15 queries below the constant router" in text
    assert "-1" not in text
    _, s = tta.compare(runs, "paper", 0.99, constant=(0.7915, 1000))  # one query below the target
    assert s["target_queries_above_constant"] == 1 and s["target_met_by_constant_router"] is False


def test_several_seeds_each_against_its_own_target(tmp_path):
    """Seed 0: fast 15x (as two_runs); seed 1: paper's best 0.8 at 40 s, fast at its target after 8 s: 5x;
    seed 2: fast never reaches its target: counted as 0. Median 5x, range 0-15x, target in 2 of 3 seeds."""
    dirs = []
    for seed, paper, fast in [
        (
            0,
            ([1, 2, 3, 4], [10.0, 20.0, 30.0, 40.0], [0.5, 0.7, 0.8, 0.8]),
            ([10, 20, 30], [1.0, 2.0, 3.0], [0.6, 0.792, 0.795]),
        ),
        (1, ([1, 2], [20.0, 40.0], [0.7, 0.8]), ([10, 20], [4.0, 8.0], [0.6, 0.80])),
        (2, ([1, 2], [5.0, 10.0], [0.7, 0.9]), ([10], [1.0], [0.6])),
    ]:
        dirs.append(fake_run(tmp_path / f"s{seed}", "paper", *paper, seed=seed))
        dirs.append(fake_run(tmp_path / f"s{seed}", "fast", *fast, seed=seed, test=0.6 + 0.1 * seed))
    runs = [tta.read_recipe_run(d) for d in dirs]
    frame, s = tta.compare_seeds(runs, "paper", 0.99, constant=(0.5, 100))
    assert s["seeds"] == [0, 1, 2] and set(s["per_seed"]) == {"0", "1", "2"}
    f = s["recipes"]["fast"]
    assert f["speedups_to_target"] == pytest.approx([15.0, 5.0, 0.0])
    assert (f["speedup_to_target"], f["speedup_min"], f["speedup_max"], f["seeds_reaching_target"]) == pytest.approx(
        (5.0, 0.0, 15.0, 2)
    )
    assert f["test_routing_mean"] == pytest.approx(0.7)
    assert s["per_seed"]["2"]["target_val_routing"] == pytest.approx(0.891)  # each seed's own reference
    assert set(frame.loc[frame["kind"] == "curve", "seed"]) == {0, 1, 2}
    assert frame.loc[(frame["kind"] == "speedup_to_target") & frame["seed"].isna(), "value"].tolist() == [1.0, 5.0]
    assert "speed-up median 5.0x (min never, max 15.0x; target reached in 2 of 3 seeds)" in "\n".join(
        tta.report_lines(s)
    )
    out = tmp_path / "fig" / "tta.pdf"
    out.parent.mkdir()
    written = tta.write(dirs, out)
    assert written["recipes"]["fast"]["speedup_to_target"] == pytest.approx(5.0)
    assert (tmp_path / "fig" / "tta.png").stat().st_size > 0
    _, one = tta.compare_seeds(runs[:2], "paper", 0.99)  # one seed: that seed's summary, as compare gives it
    assert one["seeds"] == [0] and one["recipes"]["fast"]["speedup_to_target"] == pytest.approx(15.0)
    with pytest.raises(
        DataError, match=r"every seed needs a run of each recipe; got \{0: \['fast', 'paper'\], 1: \['paper'\]\}"
    ):
        tta.compare_seeds(runs[:3], "paper", 0.99)  # seed 1 has no fast run
    with pytest.raises(DataError, match="no run of the reference recipe 'paper'"):
        tta.compare_seeds([runs[1], runs[3]], "paper", 0.99)


def test_reference_validated_as_rarely_as_the_other_recipe(tmp_path):
    """Paper validated at steps 1-6 peaks at 0.90 on step 3 (a lucky look); fast validates every 2 steps (2, 4;
    interval 2). Paper read at its even steps and its last (2, 4, 6: 0.80, 0.78, 0.79): best 0.80 at 20 s;
    averaged over the two offsets (odd steps: best 0.90; even: 0.80): 0.85. Matched target 0.792, reached by
    fast at step 4 (4 s): 5x, while the plain target 0.891 is never reached."""
    paper = fake_run(
        tmp_path / "s0",
        "paper",
        [1, 2, 3, 4, 5, 6],
        [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        [0.5, 0.8, 0.9, 0.78, 0.6, 0.79],
    )
    fast = fake_run(tmp_path / "s0", "fast", [2, 4], [2.0, 4.0], [0.7, 0.795])
    _, s = tta.compare([tta.read_recipe_run(paper), tta.read_recipe_run(fast)], "paper", 0.99)
    f = s["recipes"]["fast"]
    assert math.isnan(f["speedup_to_target"])
    assert (f["validation_interval"], f["reference_best_at_interval"], f["reference_seconds_to_best_at_interval"]) == (
        2,
        0.8,
        20.0,
    )
    assert f["reference_best_mean_over_offsets"] == pytest.approx(0.85)
    assert (f["seconds_to_matched_target"], f["speedup_to_matched_target"]) == (4.0, pytest.approx(5.0))
    assert "reference_best_at_interval" not in s["recipes"]["paper"]
    assert (
        "paper validated every 2 steps like it: best 80.00% (20 s; 85.00% averaged over the look offsets), "
        "its target at 4 s, speed-up 5.0x"
    ) in "\n".join(tta.report_lines(s))
    # seed 1: the reference's last step counts as a look (3: 0.6, not 1: 0.5); fast never reaches 0.594
    paper1 = fake_run(tmp_path / "s1", "paper", [1, 2, 3], [1.0, 2.0, 3.0], [0.5, 0.9, 0.6], seed=1)
    fast1 = fake_run(tmp_path / "s1", "fast", [3, 6], [1.0, 2.0], [0.5, 0.55], seed=1)
    runs = [tta.read_recipe_run(d) for d in (paper, fast, paper1, fast1)]
    frame, over = tta.compare_seeds(runs, "paper", 0.99)
    one = over["per_seed"]["1"]["recipes"]["fast"]
    assert (one["validation_interval"], one["reference_best_at_interval"]) == (3, 0.6)
    assert math.isnan(one["speedup_to_matched_target"])
    m = over["recipes"]["fast"]
    assert m["speedups_to_matched_target"] == pytest.approx([5.0, 0.0]) and m["seeds_reaching_matched_target"] == 1
    assert frame.loc[(frame["kind"] == "speedup_to_matched_target") & frame["seed"].isna(), "value"].tolist() == [
        pytest.approx(2.5)
    ]
    assert "validated as rarely: speed-up median 2.5x, target reached in 1 of 2 seeds" in "\n".join(
        tta.report_lines(over)
    )


def test_a_recipe_validated_every_step_has_no_rarer_reading_to_report(tmp_path):
    """fast validated at every step, like paper: the matched numbers equal the plain ones, and the report
    says so instead of repeating them as a comparison "every 1 steps"."""
    paper = fake_run(tmp_path, "paper", [1, 2, 3], [10.0, 20.0, 30.0], [0.5, 0.8, 0.7])
    fast = fake_run(tmp_path, "fast", [1, 2, 3], [1.0, 2.0, 3.0], [0.6, 0.795, 0.7])
    _, s = tta.compare([tta.read_recipe_run(paper), tta.read_recipe_run(fast)], "paper", 0.99)
    f = s["recipes"]["fast"]
    assert (f["validation_interval"], f["speedup_to_target"], f["speedup_to_matched_target"]) == (
        1,
        pytest.approx(10.0),
        pytest.approx(10.0),
    )
    text = "\n".join(tta.report_lines(s))
    assert "validated every step, as often as paper: no rarer reading to compare" in text
    assert "every 1 steps" not in text


def test_figure_draws_raw_curves_for_one_seed_only(two_runs, tmp_path):
    """One seed: each recipe's raw validation curve (thin) and its best so far; several seeds: the best so far
    alone (one line style per seed), and the legend names the matched-looks speed-up."""
    from locus.render.figures import time_to_accuracy_figure

    def thin_lines(frame, summary):
        fig = time_to_accuracy_figure(frame, summary, "t")
        return sum(line.get_alpha() == 0.45 for line in fig.axes[0].lines), fig.axes[0].get_legend()

    runs = [tta.read_recipe_run(d) for d in two_runs]
    thin, _ = thin_lines(*tta.compare_seeds(runs, "paper", 0.99))
    assert thin == 2
    other = [
        tta.read_recipe_run(fake_run(tmp_path / "s1", r, [1, 2], [1.0, 2.0], [0.6, 0.7], seed=1))
        for r in ("paper", "fast")
    ]
    thin, legend = thin_lines(*tta.compare_seeds(runs + other, "paper", 0.99))
    assert thin == 0
    assert any("paper validated as rarely" in t.get_text() for t in legend.get_texts())


def test_validation_interval_is_the_most_common_gap():
    assert tta.validation_interval(pd.DataFrame({"step": [25, 50, 75, 80]})) == 25
    assert tta.validation_interval(pd.DataFrame({"step": [1, 2, 3]})) == 1
    assert tta.validation_interval(pd.DataFrame({"step": [7]})) == 7


def test_a_recipe_that_never_reaches_the_target(tmp_path):
    paper = fake_run(tmp_path, "paper", [1, 2], [1.0, 2.0], [0.6, 0.9])
    fast = fake_run(tmp_path, "fast", [5], [0.5], [0.7])
    _, s = tta.compare([tta.read_recipe_run(paper), tta.read_recipe_run(fast)])
    assert math.isnan(s["recipes"]["fast"]["seconds_to_target"]) and s["recipes"]["fast"]["step_to_target"] == -1
    assert math.isnan(s["recipes"]["fast"]["speedup_to_target"])
    text = "\n".join(tta.report_lines(s))  # people read words, not NaN
    assert "fast: best 70.00% at step 5 (0 s); target never reached; speed-up never;" in text
    assert "peak memory not recorded" in text and "nan" not in text.lower()


def test_writes_figure_csv_and_json_with_peak_memory(two_runs, tmp_path):
    benches = []
    for name, rss in (("paper", 3000.5), ("fast", 900.0)):
        path = tmp_path / f"{name}.tsv"
        path.write_text(f"s\th:m:s\tmax_rss\tmax_vms\n12.0\t0:00:12\t{rss}\t5000\n")
        benches.append(path)
    out = tmp_path / "fig" / "tta.pdf"
    out.parent.mkdir()
    s = tta.write(two_runs, out, benchmarks=benches)
    for ext in ("pdf", "png", "csv", "json"):
        assert (tmp_path / "fig" / f"tta.{ext}").stat().st_size > 0
    assert s["recipes"]["paper"]["peak_rss_mb"] == 3000.5
    csv = pd.read_csv(tmp_path / "fig" / "tta.csv")
    row = csv[(csv["kind"] == "peak_rss_mb") & (csv["recipe"] == "fast")]
    assert row["value"].iloc[0] == 900.0
    assert json.loads((tmp_path / "fig" / "tta.json").read_text())["recipes"]["fast"]["seconds_to_target"] == 2.0


def test_refusals(tmp_path):
    a = fake_run(tmp_path / "a", "paper", [1], [1.0], [0.5], seed=0)
    b = fake_run(tmp_path / "b", "fast", [1], [1.0], [0.5], seed=1)
    with pytest.raises(DataError, match="differ in training size, seed"):
        tta.compare([tta.read_recipe_run(a), tta.read_recipe_run(b)])
    c = fake_run(tmp_path / "c", "fast", [1], [1.0], [0.5], seed=0)
    with pytest.raises(DataError, match="no run of the reference recipe 'paper'"):
        tta.compare([tta.read_recipe_run(c)])
    with pytest.raises(DataError, match="one run per recipe"):
        tta.compare([tta.read_recipe_run(a), tta.read_recipe_run(a)])
    (a / "log.csv").write_text("step,seconds,train_loss\n1,1.0,0.5\n")
    with pytest.raises(DataError, match=r"log.csv: columns \['val_routing'\] missing"):
        tta.read_recipe_run(a)
    bad = tmp_path / "bench.tsv"
    bad.write_text("s\n1.0\n")
    with pytest.raises(DataError, match="max_rss"):
        tta.peak_rss_mb(bad)


def tiny_data(tmp_path, prompt="q"):
    """A 60-query, 4-model canonical data set and its (random) encodings."""
    from locus.data.canonical import write_dataset
    from locus.data.encodings import data_fingerprint, write_encodings

    rng = np.random.default_rng(0)
    n_q = 60
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n_q),
            "prompt": [f"{prompt} {i}" for i in range(n_q)],
            "benchmark": "b",
            "category": "b",
            "split": ["train"] * 30 + ["val"] * 15 + ["test"] * 15,
        }
    )
    models = pd.DataFrame({"model_id": np.arange(4), "name": [f"org/m{i}" for i in range(4)]})
    pid, mid = np.meshgrid(np.arange(n_q), np.arange(4), indexing="ij")
    scores = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(pid.size) < 0.5).astype(float)}
    )
    write_dataset(tmp_path / "data", queries, models, scores)
    write_encodings(
        tmp_path / "enc.parquet",
        queries["prompt_id"],
        rng.normal(size=(n_q, 8)).astype(np.float32),
        "toy",
        False,
        data_fingerprint(queries["prompt_id"], queries["prompt"]),
    )
    return tmp_path / "data", tmp_path / "enc.parquet"


SMALL = {"dim": 8, "heads": 2, "layers": 1, "latents": 4, "decoder_hidden": 8, "max_steps": 6, "threads": 1}


def test_real_runs_of_both_recipes(tmp_path):
    """Both recipes train a tiny LOCUS through `locus.runs.execute`; the paper recipe validates every step."""
    pytest.importorskip("torch")
    from locus.runs import execute

    data, enc = tiny_data(tmp_path)
    dirs = []
    for recipe in ("paper", "fast"):
        extra = {} if recipe == "paper" else {"eval_every": 3}
        dirs.append(tmp_path / recipe)
        execute("locus", {**SMALL, **extra, "recipe": recipe}, data, enc, 20, 0, dirs[-1])
    s = tta.write(dirs, tmp_path / "tta.pdf", data=data)
    assert s["recipes"]["paper"]["steps"] == 6 and s["recipes"]["fast"]["steps"] == 6
    # the constant router's level: the best validation mean of the 4 models, from the data set's own scores
    from locus.data.canonical import read_dataset

    d = read_dataset(data)
    val = d.scores[d.scores["prompt_id"].isin(d.split_queries("val")["prompt_id"])]
    assert s["constant_router_val_routing"] == pytest.approx(val.groupby("model_id")["score"].mean().max())
    assert s["n_val_queries"] == 15
    other, _ = tiny_data(tmp_path / "other", prompt="another")
    with pytest.raises(DataError, match="trained on another data set"):
        tta.write(dirs, tmp_path / "tta2.pdf", data=other)
    log = pd.read_csv(tmp_path / "paper" / "log.csv")
    assert log["step"].tolist() == [1, 2, 3, 4, 5, 6]  # validation after every step
    assert pd.read_csv(tmp_path / "fast" / "log.csv")["step"].tolist() == [3, 6]


def test_bench_time_to_accuracy_mode(tmp_path, capsys):
    """`locus bench --time-to-accuracy DIR` trains both recipes and writes the comparison without Snakemake."""
    pytest.importorskip("torch")
    from locus.cli import main

    data, enc = tiny_data(tmp_path)
    out = tmp_path / "tta"
    argv = [
        "bench",
        "--time-to-accuracy",
        str(out),
        "--data",
        str(data),
        "--encodings",
        str(enc),
        "--train-size",
        "20",
        "--threads",
        "1",
        "--params",
        json.dumps({**SMALL, "eval_every": 2}),
    ]
    assert main(argv) == 0
    summary = json.loads((out / "time_to_accuracy.json").read_text())
    assert set(summary["recipes"]) == {"paper", "fast"} and summary["train_size"] == 20
    assert 0 < summary["constant_router_val_routing"] <= 1 and summary["n_val_queries"] == 15
    assert (out / "paper" / "metrics.json").is_file() and (out / "time_to_accuracy.png").stat().st_size > 0
    assert "time to accuracy at n = 20" in capsys.readouterr().out
    assert main(["bench", "--time-to-accuracy", str(tmp_path / "x"), "--encodings", str(enc)]) == 2
    assert "needs --data" in capsys.readouterr().err
    assert main(argv[:-2] + ["--params", '{"recipe": "paper"}']) == 2
    assert "leave out 'recipe'" in capsys.readouterr().err
