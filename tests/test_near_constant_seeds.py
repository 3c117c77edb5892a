"""Near-constant routers decided seed by seed (issue 51): with several seeds a routing cell is flagged when any
seed's router sends >= 90% of the test queries to one model, the CSV gives each seed's share, and the claims
ledger judges each seed with its own seed's flag."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from test_render import data, metrics_dict, write  # noqa: E402,F401  (data: the two-model fixture data set)

from locus.cli import main  # noqa: E402
from locus.experiments import claims, tables  # noqa: E402
from locus.experiments.comparison import diversity_of  # noqa: E402
from locus.experiments.report import Source  # noqa: E402


def test_diversity_flags_a_cell_when_any_seed_is_near_constant():
    names = ["a", "b"]
    varied, constant = [60, 40], [95, 5]
    d = diversity_of({0: constant, 1: varied}, names)
    assert abs(d["top_model_share"] - 0.775) < 1e-12  # the mean over seeds alone would not flag it
    assert d["near_constant"] and d["seed_top_share"] == {0: 0.95, 1: 0.6}
    assert not diversity_of({0: varied, 1: varied}, names)["near_constant"]
    one = diversity_of({3: constant}, names)  # one seed: as before, its own share
    assert one["near_constant"] and one["top_model_share"] == 0.95
    assert tables.share_strings(d["seed_top_share"]) == "0:95.0000;1:60.0000"
    assert tables.share_strings(one["seed_top_share"]) == ""  # below two seeds, like the other per-seed columns


def test_two_seeds_one_near_constant_is_flagged_and_its_claim_is_inconclusive(tmp_path, data):  # noqa: F811
    # LOCUS routes 95% of the test queries to one model with seed 0, 70% with seed 1 (mean 82.5%: under the line);
    # it is ahead of EmbedLLM with both seeds
    runs = {"locus": (0.95, 0.70), "embedllm": (0.60, 0.60)}
    paths = [write(tmp_path, metrics_dict(m, 256, s, v, v)) for m, vals in runs.items() for s, v in enumerate(vals)]
    out = tmp_path / "results" / "tables" / "routing.tex"
    out.parent.mkdir(parents=True)
    assert main(["table", "routing", "--metrics", *paths, "--out", str(out), "--data", data]) == 0
    frame = pd.read_csv(out.with_suffix(".csv"), keep_default_na=False)
    assert list(frame.columns[-5:]) == [tables.SEED_SHARE_COLUMN, *tables.SEED_COLUMNS]
    locus = frame[(frame.approach == "locus") & (frame.metric == "routing_acc")].iloc[0]
    assert locus[tables.SEED_SHARE_COLUMN] == "0:95.0000;1:70.0000"
    assert abs(float(locus.top_model_share) - 0.825) < 1e-9  # the printed share stays the mean over seeds
    assert locus.near_constant == "True" and locus.comparison_status == tables.INCONCLUSIVE
    emb = frame[(frame.approach == "embedllm") & (frame.metric == "routing_acc")].iloc[0]
    assert emb[tables.SEED_SHARE_COLUMN] == "0:60.0000;1:60.0000" and emb.near_constant == "False"
    assert (frame.loc[frame.metric == "correctness_acc", tables.SEED_SHARE_COLUMN] == "").all()
    tex = out.read_text()
    assert "\\textsc{Locus} (ours) at $n$ = 256 (seed 0)" in tex and "seed\\_top\\_share\\_pct" in tex

    cells = claims.comparison_cells(Source(tmp_path / "results"), "tables/routing.csv", "routing_acc", ("embedllm",))
    assert [(c.near_seeds, c.at_seed(0).locus_near_constant, c.at_seed(1).locus_near_constant) for c in cells] == [
        ((0,), True, False)
    ]
    judged = claims.judge_ahead(cells, [])
    assert judged.verdict == "inconclusive"
    assert judged.reason.startswith("differs between seeds: seed 0 inconclusive, seed 1 holds")
    assert "LOCUS's router is near-constant at n=256 (seed 0)" in judged.reason

    # the by-benchmark layout: the near-constant row's benchmark cells name the seed
    by_bench = tmp_path / "results" / "tables" / "routing_by_dataset.tex"
    assert main(["table", "routing-by-dataset", "--metrics", *paths, "--out", str(by_bench), "--data", data]) == 0
    assert f"{tables.INCONCLUSIVE}: seed 0 at $\\geq$ 90\\% to one model; values in the CSV" in by_bench.read_text()

    # one seed per cell: the share column is not written, and the table reads as before
    single = tmp_path / "single.tex"
    assert main(["table", "routing", "--metrics", *[p for p in paths if "/s1/" in p], "--data", data,
                 "--out", str(single)]) == 0  # fmt: skip
    one = pd.read_csv(single.with_suffix(".csv"), keep_default_na=False)
    assert tables.SEED_SHARE_COLUMN not in one.columns and list(one.columns) == tables.CSV_COLUMNS
    assert "seed\\_top\\_share" not in single.read_text()
