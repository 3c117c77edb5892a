"""The claims ledger on hand-made output files whose verdicts are known: a claim that holds, one refuted, one
inconclusive and one untestable; the ledger's files and `locus claims`."""

import csv
import json

import pytest

from locus.cli import main
from locus.constants import CLAIM_VERDICTS
from locus.experiments import claims
from locus.experiments.report import Source

TABLE_COLUMNS = [
    "approach", "label", "kind", "metric", "train_size", "benchmark", "mean_pct", "n_seeds", "reference",
    "diff_to_reference_pct", "ci_low_pct", "ci_high_pct", "best", "not_significant_vs_best", "near_constant",
]  # fmt: skip


def table(path, metric, cells, near=(), best=None, seeds=3, reference="locus"):
    """A table CSV: LOCUS and, per (approach, n), LOCUS minus the approach `d` with interval [lo, hi] (so the
    CSV's approach-minus-LOCUS columns are their negatives); LOCUS near-constant at the sizes in `near`."""
    rows = []
    sizes = sorted({n for _, n, *_ in cells})
    for n in sizes:
        rows.append([reference, reference, "method", metric, n, "Overall", 70, seeds, reference, 0, 0, 0,
                     best or reference, False, n in near])  # fmt: skip
    for approach, n, d, lo, hi in cells:
        rows.append([approach, approach, "method", metric, n, "Overall", 70 - d, seeds, reference, -d, -hi, -lo,
                     best or reference, approach == best, False])  # fmt: skip
    rows.append(["oracle", "Oracle", "reference", metric, "", "Overall", 90, seeds, "", "", "", "", "", "", ""])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(TABLE_COLUMNS)
        w.writerows(rows)


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    (root / "data/hand").mkdir(parents=True)
    (root / "data/hand/summary.md").write_text("# Data summary: a hand-made pool\n")
    # LOCUS ahead of both embedders everywhere: holds
    table(root / "tables/routing.csv", "routing_acc",
          [(m, n, 3.0, 1.0, 5.0) for m in ("embedllm", "irt_net") for n in (256, 512)])  # fmt: skip
    # correctness: EmbedLLM 2 points apart with [1.5, 2.5]: refuted
    with open(root / "tables/routing.csv", "a", newline="") as fh:
        w = csv.writer(fh)
        for m, d, lo, hi in (("embedllm", 2.0, 1.5, 2.5), ("irt_net", 0.2, -0.4, 0.8)):
            w.writerow([m, m, "method", "correctness_acc", 256, "Overall", 68, 3, "locus", -d, -hi, -lo, "", "", ""])
        w.writerow(["locus", "LOCUS", "method", "correctness_acc", 256, "Overall", 70, 3, "locus", 0, 0, 0, "", "", ""])
    # by data set: no EmbedLLM+ rows (untestable), kNN not significant (inconclusive), K-Means best at 512
    cells = [("embedllm", 256, 2.0, 0.5, 3.5), ("irt_net", 256, 1.0, 0.2, 1.8), ("knn_router", 256, 0.5, -1.0, 2.0)]
    cells += [("kmeans_router", 256, 1.0, 0.1, 1.9), ("kmeans_router", 512, -0.5, -1.5, 0.5)]
    table(root / "tables/routing_by_dataset.csv", "routing_acc", cells)
    rows = list(csv.reader(open(root / "tables/routing_by_dataset.csv")))
    for r in rows[1:]:
        if r[0] == "kmeans_router" and r[4] == "512":
            r[12] = "kmeans_router"
    with open(root / "tables/routing_by_dataset.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    table(root / "tables/correctness_by_dataset.csv", "correctness_acc",
          [(m, 256, 0.1, -0.5, 0.7) for m in claims.ALL_METHODS])  # fmt: skip
    (root / "figures").mkdir()
    factor = {"factor": 3.1, "crossing": "exact", "ci_low": 2.0, "ci_high": 4.0, "status": "significant"}
    bound = {"factor": 30.0, "crossing": "lower_bound", "ci_low": None, "ci_high": None, "status": "undefined"}
    (root / "figures/train_sample_eff.json").write_text(json.dumps({
        "reference_method": "locus",
        "methods": {"embedllm": {"at_reference_point": factor}, "irt_net": {"at_reference_point": bound}},
    }))  # fmt: skip
    with open(root / "tables/distance_correlation.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "correlation", "distance", "value", "ci_low", "ci_high"])
        for c in ("pearson", "spearman", "kendall"):
            for d in ("cosine", "euclidean"):
                w.writerow(["locus", c, d, 0.8, 0.7, 0.9])
                w.writerow(["embedllm", c, d, 0.2, 0.1, 0.3])
    with open(root / "figures/nearest_neighbor_proxies.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "curve", "k", "agreement", "std", "n"])
        w.writerow(["locus", "embedding_neighbour", 1, 0.70, 0.05, 100])
        w.writerow(["locus", "embedding_neighbour", 2, 0.68, 0.05, 100])
        w.writerow(["locus", "random_other", "", 0.71, "", ""])  # the neighbour is no better than random
    write_rows(root / "figures/perf_vs_size_and_overlap.csv",
               ["kind", "panel", "setting", "routing_acc", "correctness_acc", "top_model_share"],
               [["reference", "all", "", 0.75, 0.68, 0.5],
                ["mean", "size", 64, 0.70, 0.675, 0.5], ["mean", "size", 256, 0.745, 0.679, 0.5],
                ["mean", "size", 1024, 0.75, 0.68, 0.5],
                ["mean", "overlap", 0.0, 0.735, 0.68, 0.5], ["mean", "overlap", 1.0, 0.75, 0.681, 0.5]])  # fmt: skip
    write_rows(root / "figures/fallback_routing.csv",
               ["method", "curve", "k", "accuracy", "retention", "n_queries", "top_model_share"],
               [["locus", "original", "", 0.75, 1.0, 800, 0.95], ["locus", "embedding_neighbour", 1, 0.70, 0.93, 800, ""],
                ["locus", "embedding_neighbour", 2, 0.68, 0.91, 800, ""], ["locus", "random_other", "", 0.5, 0.67, 800, ""]])  # fmt: skip
    write_rows(root / "figures/relearn_embedllm_heatmap_test_disagreement.csv", ["method", "kind", "test_disagreement"],
               [["embedllm", "same", 0.12], ["embedllm", "same", 0.08], ["embedllm", "overlap", 0.2], ["locus", "same", 0.0]])  # fmt: skip
    write_rows(root / "figures/time_complexity.csv",
               ["source", "what", "precision", "n_models", "n", "median_s", "cpu_model", "threads"],
               [["measured", "embed", "float32", 112, n, t, "Test CPU", 2] for n, t in ((64, 0.1), (256, 0.2), (1024, 0.8), (4096, 3.2))]
               + [["paper", "embed", "", 112, 4096, 0.1, "", ""]])  # fmt: skip
    mini, mpnet = "all-MiniLM-L6-v2", "all-mpnet-base-v2"
    table(root / "tables/encoder_ablation_routing.csv", "routing_acc", [(mpnet, 256, -0.2, -0.9, 0.5)], reference=mini)
    table(root / "tables/encoder_ablation_correctness.csv", "correctness_acc", [(mpnet, 256, -2.0, -2.5, -1.5)],
          reference=mini)  # fmt: skip
    return root


def write_rows(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def test_verdict_rules_on_known_cells():
    c = lambda a, n, d, lo, hi, near=False, seeds=3: claims.Cell(a, n, d, lo, hi, seeds, near)  # noqa: E731
    ahead = [c("x", "256", 2, 1, 3), c("y", "256", 1, 0.5, 1.5)]
    assert claims.judge_ahead(ahead, []).verdict == "holds"
    assert claims.judge_ahead([*ahead, c("z", "512", -2, -3, -1)], []).verdict == "refuted"
    assert claims.judge_ahead([*ahead, c("z", "512", 1, -1, 3)], []).verdict == "inconclusive"
    flat = claims.judge_ahead([c("x", "256", 2, 1, 3, near=True)], [])
    assert flat.verdict == "inconclusive" and "near-constant" in flat.reason
    one = claims.judge_ahead([c("x", "256", 2, 1, 3, seeds=1)], [])
    assert one.verdict == "holds" and "one seed" in one.reason
    assert claims.judge_ahead([], ["EmbedLLM+"]).verdict == "untestable"
    assert claims.judge_comparable([c("x", "256", 0.2, -0.5, 0.9)], []).verdict == "holds"
    assert claims.judge_comparable([c("x", "256", 2, 1.2, 2.8)], []).verdict == "refuted"
    assert claims.judge_comparable([c("x", "256", 0.5, -0.5, 1.5)], []).verdict == "inconclusive"


def test_ledger_of_a_hand_made_run(results):
    frame = claims.ledger(Source(results))
    assert list(frame.columns) == claims.COLUMNS and len(frame) == len(claims.CLAIMS)
    assert set(frame["verdict"]) <= set(CLAIM_VERDICTS)
    assert (frame["rule"].str.len() > 20).all() and (frame["dataset"] == "a hand-made pool").all()
    got = dict(zip(frame["id"], frame["verdict"]))
    assert got == {
        "routing-order": "holds",
        "correctness-comparable": "refuted",
        "routing-best-embedding": "untestable",  # no EmbedLLM+ rows
        "routing-beats-knn": "inconclusive",
        "kmeans-strong": "holds",  # the best at n = 512
        "correctness-similar-all": "holds",
        "sample-efficiency": "inconclusive",  # IRT-Net's factor is only a lower bound
        "distance-disagreement": "holds",
        "neighbour-proxies": "refuted",
        "saturation": "holds",  # within 1 point by n = 256
        "overlap-stability": "inconclusive",  # routing varies by 1.5 points
        "fallback": "inconclusive",  # a near-constant router
        "regeneration": "holds",
        "time-linear": "holds",  # slope 1
        "encoder-ablation": "refuted",  # correctness 2 points apart
    }
    row = frame.set_index("id").loc["routing-order"]
    assert "EmbedLLM n=256: +3.0 [+1.0, +5.0]" in row["ours"] and row["paper_value"].startswith("+3.1")


def test_claims_command_writes_the_three_files(results, tmp_path, capsys):
    out = tmp_path / "tables" / "claims.tex"
    out.parent.mkdir()
    assert main(["claims", "--results", str(results), "--out", str(out)]) == 0
    assert f"{len(claims.CLAIMS)} claims" in capsys.readouterr().out
    rows = list(csv.DictReader(open(out.with_suffix(".csv"))))
    assert [r["verdict"] for r in rows].count("holds") == 7
    md = out.with_suffix(".md").read_text()
    assert md.startswith("Claims of the paper on a hand-made pool: 7 holds, 3 refuted, 4 inconclusive, 1 untestable.")
    tex = out.read_text()
    assert "\\label{tab:claims}" in tex and "\\begin{tabular}" in tex and "&" in tex
    assert main(["claims", "--results", str(results)]) == 0
    assert "| claim | paper | ours | verdict | why |" in capsys.readouterr().out
    # the results page's block reads the ledger the rule wrote
    (results / "tables/claims.csv").write_bytes(out.with_suffix(".csv").read_bytes())
    from locus.experiments.report import render_block

    block = render_block("claims", Source(results))
    assert block.startswith("7 holds, 3 refuted, 4 inconclusive, 1 untestable of 15 claims.")
    assert "**refuted**" in block and "results/tables/claims.csv" in block


def test_a_missing_output_is_one_line_naming_its_target(results, capsys):
    (results / "tables/distance_correlation.csv").unlink()
    assert main(["claims", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "distance_correlation.csv: not found" in err and "snakemake --cores 2" in err and "Traceback" not in err
