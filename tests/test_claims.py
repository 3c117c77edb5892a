"""The claims ledger on hand-made output files whose verdicts are known: a claim that holds, one refuted, one
inconclusive and one untestable; the pool's plan (skipped outputs, adapted sizes); the ledger's files and
`locus claims`."""

import csv
import json

import pytest

from locus.cli import main
from locus.constants import CLAIM_VERDICTS
from locus.errors import DataError
from locus.experiments import claims, tables
from locus.experiments.report import Source

TABLE_COLUMNS = [
    "approach", "label", "kind", "metric", "train_size", "benchmark", "mean_pct", "n_seeds", "reference",
    "diff_to_reference_pct", "ci_low_pct", "ci_high_pct", "best", "not_significant_vs_best", "near_constant",
    *tables.SEED_COLUMNS,
]  # fmt: skip


def seed_text(values, seeds=3):
    """The per-seed columns (difference, interval) of one comparison from its seeds' (d, lo, hi) in points (one
    value: the same for every seed); empty below two seeds, as the tables write them."""
    if seeds < 2 or values is None:
        return ["", ""]
    values = values if isinstance(values, list) else [values] * seeds
    return list(tables.seed_strings({s: (d / 100, lo / 100, hi / 100) for s, (d, lo, hi) in enumerate(values)}))


def table(path, metric, cells, near=(), best=None, seeds=3, reference="locus", per_seed=None, shares=None):
    """A table CSV: LOCUS and, per (approach, n), LOCUS minus the approach `d` with interval [lo, hi] (so the
    CSV's approach-minus-LOCUS columns are their negatives); LOCUS near-constant at the sizes in `near`. With
    two or more `seeds`, the per-seed columns: each seed's LOCUS minus the approach from `per_seed` {(approach,
    n): [(d, lo, hi) per seed]}, by default the pooled difference for every seed. `shares` {(approach, n): [top-model
    share per seed]} adds the per-seed share column, a row being near-constant where any seed's share is."""
    per_seed = per_seed or {}
    rows = []
    sizes = sorted({n for _, n, *_ in cells})
    zero = (0.0, 0.0, 0.0)
    for n in sizes:
        rows.append([reference, reference, "method", metric, n, "Overall", 70, seeds, reference, 0, 0, 0,
                     best or reference, False, n in near, *seed_text(zero, seeds),
                     *seed_text(zero if (best or reference) == reference else None, seeds)])  # fmt: skip
    for approach, n, d, lo, hi in cells:
        own = per_seed.get((approach, n), [(d, lo, hi)] * seeds)
        to_ref = [(-x, -h, -low) for x, low, h in own]  # the table's approach minus the reference
        to_best = own if (best or reference) == reference else [zero] * seeds if approach == best else None
        rows.append([approach, approach, "method", metric, n, "Overall", 70 - d, seeds, reference, -d, -hi, -lo,
                     best or reference, approach == best, False, *seed_text(to_ref, seeds),
                     *seed_text(to_best, seeds)])  # fmt: skip
    rows.append(["oracle", "Oracle", "reference", metric, "", "Overall", 90, seeds, "", "", "", "", "", "", "",
                 "", "", "", ""])  # fmt: skip
    header = TABLE_COLUMNS
    if shares is not None:
        header = TABLE_COLUMNS + [tables.SEED_SHARE_COLUMN]
        for r in rows:
            own = shares.get((r[0], r[4]))
            r.append(tables.share_strings(dict(enumerate(own))) if own and r[2] == "method" else "")
            if own and r[2] == "method":
                r[14] = any(v >= 0.9 for v in own)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
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
            w.writerow([m, m, "method", "correctness_acc", 256, "Overall", 68, 3, "locus", -d, -hi, -lo, "", "", "",
                        *seed_text((-d, -hi, -lo)), "", ""])  # fmt: skip
        w.writerow(["locus", "LOCUS", "method", "correctness_acc", 256, "Overall", 70, 3, "locus", 0, 0, 0, "", "", "",
                    *seed_text((0, 0, 0)), "", ""])  # fmt: skip
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
    onboarding(root, shift=0.0, gap=3.0)  # 128 evaluations suffice; the partial encoder 3 points behind
    families(root, {"math": (0.5, 0.001), "code": (0.6, 0.002)})
    portfolio(root, budget_panel="no parameter counts in this pool")
    hypothetical(root, size=8192, recall=0.80)
    table(root / "tables/dim_ablation_routing.csv", "routing_acc", [("d32", 256, 0.2, -0.5, 0.6)], reference="d128")
    table(root / "tables/dim_ablation_correctness.csv", "correctness_acc", [("d32", 256, -0.1, -0.6, 0.4)],
          reference="d128")  # fmt: skip
    convergence(root, "overlap", FALLING, near=1.0)
    convergence(root, "size", {16: [0.5, 0.1], 64: [0.2, 0.6], 256: [0.4, 0.3], 4096: [1e-6]}, near=1.0)
    return root


FALLING = {0.0: [0.5, 0.45, 0.55], 0.3: [0.35, 0.4, 0.3], 0.6: [0.2, 0.25, 0.15], 1.0: [1e-6]}  # 1: the set itself
JITTER = (0.001, -0.001, 0.002, -0.002)  # per held-out model, so the intervals over models have a width


def onboarding(root, shift, gap, ks=(64, 128, 1024)):
    """The onboarding figure: 4 held-out models, an all-models encoder (20 models) and a partial one (16); at
    k = 128 the all-models encoder is `shift` points below its largest k, the partial one `gap` points below it."""
    base = (0.60, 0.65, 0.70, 0.75)
    header = ["row", "k", "accuracy", "std", "draws", "n_train_models", "run", "kind", "repeat", "model_id",
              "n_pairs", "correct", "name"]  # fmt: skip
    rows = []
    for row, trained in (("all", 20), ("16", 16)):
        for k in ks:
            accs = []
            for m, (b, e) in enumerate(zip(base, JITTER)):
                a = b - (shift / 100 - e if k == 128 else 0.0)
                a = a - gap / 100 + e if row == "16" else a
                accs.append(a)
                rows.append([row, k, "", "", "", "", "", "draw", 0, m, 1000, round(1000 * a), f"model {m}"])
            rows.append([row, k, sum(accs) / 4, 0, 1, trained, "run", "cell", "", "", "", "", ""])
    write_rows(root / "figures/sample_eff_ood_test.csv", header, rows)


def families(root, tags):
    """The families summary: per tag (within / to-others ratio, permutation p)."""
    sep = {t: {"n_models": 5, "ratio": r, "p_value": p, "n_perm": 1000, "nn_same_tag": 0.4,
               "nn_same_tag_chance": 0.04} for t, (r, p) in tags.items()}  # fmt: skip
    summary = {"method": "locus", "distance": "euclidean", "cophenetic_correlation": 0.8, "separation": sep}
    (root / "figures/models_family_clustering.json").write_text(json.dumps(summary))


def portfolio(root, k=15.0, k_near=12.0, single=65.0, budget_panel="ok", budget_near=100.0):
    """The portfolio summary of a 112-model pool routing at 70%, 2000B parameters."""
    summary = {
        "n_models": 112, "full_pool_routing_acc": 70.0, "n_test_queries": 800, "best_single_routing_acc": single,
        "best_single_model": "big/model", "k-center_k_full": k, "k-center_k_within_1pt": k_near,
        "k-medoids_k_full": None, "k-medoids_k_within_1pt": None, "random_k_full": 100.0,
        "budget_panel": budget_panel,
    }  # fmt: skip
    if budget_panel == "ok":
        summary |= {"total_params_b": 2000.0, "coverage-greedy_budget_b_within_1pt": budget_near,
                    "random-feasible_budget_b_within_1pt": 1500.0}  # fmt: skip
    (root / "figures/model_portfolio.json").write_text(json.dumps(summary))


def hypothetical(root, size, recall, models=112):
    rows = [[s, k, r * min(1.0, k / 10), models, 1, "recall"] for s, r in ((64, 0.3), (size, recall)) for k in (1, 10)]
    write_rows(root / "figures/hypothetical_model_embedding.csv", ["size", "k", "recall", "models", "repeats", "kind"],
               rows)  # fmt: skip


def convergence(root, kind, draws, near):
    """A convergence figure of one model: the distances of its draws per setting, and its nearest other models."""
    by, rel = ("alpha", "overlap_convergence") if kind == "overlap" else ("n", "anchor_size_convergence")
    rows = [["draw", "codellama", x, d, ""] for x, ds in draws.items() for d in ds]
    rows += [["neighbour", "codellama", "", dist, f"other {i}"] for i, dist in enumerate((near, near + 0.5))]
    write_rows(root / f"figures/{rel}.csv", ["kind", "name", by, "distance", "neighbour"], rows)


def write_rows(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def test_verdict_rules_on_known_cells():
    def c(a, n, d, lo, hi, near=False, seeds=3):  # every seed as the pooled cell
        return claims.Cell(a, n, d, lo, hi, seeds, near, tuple((s, d, lo, hi) for s in range(seeds) if seeds > 1))

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


def test_combine_seed_verdicts():
    assert claims.combine_seed_verdicts({0: "holds", 1: "holds", 2: "holds"}) == (
        "holds",
        "every seed agrees (3 seeds: 0, 1, 2)",
    )
    assert claims.combine_seed_verdicts({1: "refuted", 0: "refuted"})[0] == "refuted"
    assert claims.combine_seed_verdicts({2: "holds", 0: "holds", 1: "refuted"}) == (
        "inconclusive",
        "differs between seeds: seed 0 holds, seed 1 refuted, seed 2 holds",
    )
    assert claims.combine_seed_verdicts({0: "inconclusive", 1: "holds"})[1].startswith("differs between seeds: seed 0")
    assert claims.combine_seed_verdicts({0: "inconclusive", 1: "inconclusive"})[0] == "inconclusive"
    assert claims.combine_seed_verdicts({}) == ("inconclusive", "no seed to judge")
    with pytest.raises(ValueError, match="not verdicts"):
        claims.combine_seed_verdicts({0: "maybe"})


def judge_of(claim_id):
    return next(c for c in claims.CLAIMS if c.id == claim_id).judge


AHEAD = [(m, n, 1.3, 0.3, 2.3) for m in claims.EMBEDDERS for n in (256, 512)]  # LOCUS ahead on the means


def test_a_statement_that_flips_between_seeds_is_inconclusive(results):
    # LOCUS ahead of EmbedLLM at n = 256 with seeds 0 and 2, significantly behind it with seed 1
    flip = {("embedllm", 256): [(3.0, 1.0, 5.0), (-2.0, -3.0, -1.0), (3.0, 1.0, 5.0)]}
    table(results / "tables/routing.csv", "routing_acc", AHEAD, per_seed=flip)
    out = verdict(judge_of("routing-order"), results)
    assert out.verdict == "inconclusive"
    assert out.reason.startswith("differs between seeds: seed 0 holds, seed 1 refuted, seed 2 holds")
    assert "seed 1: significantly behind EmbedLLM at n=256" in out.reason
    assert "on the means over seeds: holds, ahead at every size" in out.reason and "seed-bands" not in out.reason
    assert "EmbedLLM n=256: +1.3 [+0.3, +2.3] (seeds −2.0 to +3.0)" in out.ours  # the seeds' spread by the pool's
    assert "IRT-Net n=512: +1.3 [+0.3, +2.3] (seeds +1.3 to +1.3)" in out.ours
    for rule in (claims.AHEAD_RULE, claims.COMPARABLE_RULE, claims.KMEANS_RULE, claims.ABLATION_RULE):
        assert "each seed is judged alone by the same rule" in rule and "differs between seeds is inconclusive" in rule
    # comparable: within ±1 point with seeds 0 and 1, 2 points apart (significantly) with seed 2
    flip = {("embedllm", 256): [(0.1, -0.5, 0.7), (0.1, -0.5, 0.7), (2.0, 1.5, 2.5)]}
    table(results / "tables/correctness_by_dataset.csv", "correctness_acc",
          [(m, 256, 0.1, -0.5, 0.7) for m in claims.ALL_METHODS], per_seed=flip)  # fmt: skip
    out = verdict(judge_of("correctness-similar-all"), results)
    assert out.verdict == "inconclusive"
    assert out.reason.startswith("differs between seeds: seed 0 holds, seed 1 holds, seed 2 refuted")
    assert "seed 2: differs by more than 1 point from EmbedLLM at n=256" in out.reason


def test_seeds_that_agree_keep_the_pooled_verdict_only_where_it_agrees(results):
    table(results / "tables/routing.csv", "routing_acc", AHEAD)  # every seed as the means: ahead
    out = verdict(judge_of("routing-order"), results)
    assert (out.verdict, out.reason) == ("holds", "ahead at every size; every seed agrees (3 seeds: 0, 1, 2)")
    behind = {(m, n): [(-2.0, -3.0, -1.0)] * 3 for m, n, *_ in AHEAD}
    table(results / "tables/routing.csv", "routing_acc", [(m, n, -2.0, -3.0, -1.0) for m, n, *_ in AHEAD],
          per_seed=behind)  # fmt: skip
    out = verdict(judge_of("routing-order"), results)
    assert out.verdict == "refuted" and out.reason.endswith("every seed agrees (3 seeds: 0, 1, 2)")
    # every seed ahead, but not significantly on the means over seeds: the pooled verdict does not agree
    ahead = {(m, n): [(2.0, 1.0, 3.0)] * 3 for m, n, *_ in AHEAD}
    table(results / "tables/routing.csv", "routing_acc", [(m, n, 1.0, -0.5, 2.5) for m, n, *_ in AHEAD],
          per_seed=ahead)  # fmt: skip
    out = verdict(judge_of("routing-order"), results)
    assert out.verdict == "inconclusive"
    assert out.reason.startswith("every seed holds, but on the means over seeds inconclusive: no significant")


def test_fewer_than_three_seeds_keep_their_note(results):
    table(results / "tables/routing.csv", "routing_acc", AHEAD, seeds=1)  # the default config: one seed
    out = verdict(judge_of("routing-order"), results)
    assert (out.verdict, out.reason) == ("holds", f"ahead at every size; {claims.ONE_SEED}")
    assert "(seeds" not in out.ours
    table(results / "tables/routing.csv", "routing_acc", [(m, n, -2.0, -3.0, -1.0) for m, n, *_ in AHEAD], seeds=1)
    out = verdict(judge_of("routing-order"), results)
    assert out.verdict == "refuted" and out.reason.endswith(claims.ONE_SEED)
    table(results / "tables/routing.csv", "routing_acc", AHEAD, seeds=2)
    out = verdict(judge_of("routing-order"), results)
    assert out.verdict == "holds" and "every seed agrees (2 seeds: 0, 1)" in out.reason
    assert out.reason.endswith(claims.TWO_SEEDS) and "config/seed-bands.yaml (3 seeds) decides" in out.reason
    # several seeds but a table without per-seed columns (written before them): a holds cannot be checked
    rows = list(csv.reader(open(results / "tables/routing.csv")))
    keep = [i for i, c in enumerate(rows[0]) if c not in tables.SEED_COLUMNS]
    write_rows(results / "tables/routing.csv", [rows[0][i] for i in keep], [[r[i] for i in keep] for r in rows[1:]])
    out = verdict(judge_of("routing-order"), results)
    assert out.verdict == "inconclusive" and "no per-seed differences" in out.reason and "locus table" in out.reason


def test_kmeans_and_ablation_judges_per_seed(results):
    # K-Means significantly below LOCUS (the best) at both sizes, except with seed 1 at n = 512
    cells = [("kmeans_router", n, 1.0, 0.1, 1.9) for n in (256, 512)]
    flip = {("kmeans_router", 512): [(1.0, 0.1, 1.9), (-0.5, -1.5, 0.5), (1.0, 0.1, 1.9)]}
    table(results / "tables/routing_by_dataset.csv", "routing_acc", cells)
    out = claims.judge_kmeans_strong(Source(results))
    assert out.verdict == "refuted" and out.reason.endswith("every seed agrees (3 seeds: 0, 1, 2)")
    table(results / "tables/routing_by_dataset.csv", "routing_acc", cells, per_seed=flip)
    out = claims.judge_kmeans_strong(Source(results))
    assert out.verdict == "inconclusive"
    assert out.reason.startswith("differs between seeds: seed 0 refuted, seed 1 holds, seed 2 refuted")
    assert "seed 1: best or not significantly below the best at n=512" in out.reason
    # the dimension ablation: correctness within ±1 point on the means and with seeds 0 and 2, not with seed 1
    flip = {("d32", 256): [(0.1, -0.5, 0.6), (-2.0, -2.5, -1.5), (0.1, -0.5, 0.6)]}
    table(results / "tables/dim_ablation_correctness.csv", "correctness_acc", [("d32", 256, 0.1, -0.5, 0.6)],
          reference="d128", per_seed=flip)  # fmt: skip
    out = claims.judge_dim_ablation(Source(results))
    assert out.verdict == "inconclusive"
    assert "correctness: differs between seeds: seed 0 holds, seed 1 refuted, seed 2 holds" in out.reason
    assert "d32 n=256: −0.1 [−0.6, +0.5] (seeds −0.1 to +2.0)" in out.ours  # d32 minus d128, seed by seed too
    table(results / "tables/dim_ablation_correctness.csv", "correctness_acc", [("d32", 256, 0.1, -0.5, 0.6)],
          reference="d128", seeds=1)  # fmt: skip
    table(results / "tables/dim_ablation_routing.csv", "routing_acc", [("d32", 256, 0.2, -0.5, 0.6)], reference="d128",
          seeds=1)  # fmt: skip
    out = claims.judge_dim_ablation(Source(results))
    assert out.verdict == "holds" and out.reason.endswith(claims.ONE_SEED)


def test_near_constant_seed_by_seed(results):
    # LOCUS ahead at every size with both seeds, its router near-constant with seed 1 at n = 512 only
    shares = {("locus", 512): [0.6, 0.93], ("locus", 256): [0.6, 0.6]}
    table(results / "tables/routing.csv", "routing_acc", AHEAD, seeds=2, shares=shares)
    out = verdict(judge_of("routing-order"), results)
    assert out.verdict == "inconclusive"
    assert out.reason.startswith("differs between seeds: seed 0 holds, seed 1 inconclusive")
    assert "on the means over seeds: inconclusive, LOCUS's router is near-constant at n=512 (seed 1)" in out.reason
    table(results / "tables/routing.csv", "routing_acc", AHEAD, seeds=2, shares={("locus", 512): [0.95, 0.93]})
    out = verdict(judge_of("routing-order"), results)  # every seed near-constant: they agree, still inconclusive
    assert out.verdict == "inconclusive" and "near-constant at n=512 (seed 0, 1)" in out.reason
    assert "every seed agrees (2 seeds: 0, 1)" in out.reason
    # the dimension ablation: within ±1 point with both seeds, the other setting's router near-constant with seed 0
    table(results / "tables/dim_ablation_routing.csv", "routing_acc", [("d32", 256, 0.2, -0.5, 0.6)],
          reference="d128", seeds=2, shares={("d32", 256): [0.91, 0.5], ("d128", 256): [0.5, 0.5]})  # fmt: skip
    table(results / "tables/dim_ablation_correctness.csv", "correctness_acc", [("d32", 256, 0.1, -0.5, 0.6)],
          reference="d128", seeds=2)  # fmt: skip
    out = claims.judge_dim_ablation(Source(results))
    assert out.verdict == "inconclusive"
    assert "routing: differs between seeds: seed 0 inconclusive, seed 1 holds" in out.reason
    assert "on the means over seeds: inconclusive, a near-constant router (seed 0)" in out.reason
    # K-Means strong (not significantly below the best) at n = 512 with seed 1 only; where its router is
    # near-constant with that seed, it is not ranked there: seed 1 no longer holds
    cells = [("kmeans_router", n, 1.0, 0.1, 1.9) for n in (256, 512)]
    flip = {("kmeans_router", 512): [(1.0, 0.1, 1.9), (-0.5, -1.5, 0.5)]}
    table(results / "tables/routing_by_dataset.csv", "routing_acc", cells, seeds=2, per_seed=flip)
    assert claims.judge_kmeans_strong(Source(results)).reason.startswith(
        "differs between seeds: seed 0 refuted, seed 1 holds"
    )
    table(results / "tables/routing_by_dataset.csv", "routing_acc", cells, seeds=2, per_seed=flip,
          shares={("kmeans_router", 512): [0.5, 0.95], ("kmeans_router", 256): [0.5, 0.5]})  # fmt: skip
    out = claims.judge_kmeans_strong(Source(results))
    assert out.reason.startswith("differs between seeds: seed 0 refuted, seed 1 inconclusive")


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
        "onboarding-128": "holds",
        "onboarding-partial": "refuted",  # 3 points behind
        "families": "holds",
        "portfolio-count": "holds",  # 15 of 112 models
        "portfolio-budget": "untestable",  # the figure had no parameter counts
        "dim-ablation": "holds",
        "hypothetical-recall": "refuted",  # 80% with 8,192 queries
        "convergence-overlap": "holds",
        "convergence-size": "inconclusive",  # no trend with n
    }
    row = frame.set_index("id").loc["routing-order"]
    assert "EmbedLLM n=256: +3.0 [+1.0, +5.0]" in row["ours"] and row["paper_value"].startswith("+3.1")


def test_claims_command_writes_the_three_files(results, tmp_path, capsys):
    out = tmp_path / "tables" / "claims.tex"
    out.parent.mkdir()
    assert main(["claims", "--results", str(results), "--out", str(out)]) == 0
    assert f"{len(claims.CLAIMS)} claims" in capsys.readouterr().out
    rows = list(csv.DictReader(open(out.with_suffix(".csv"))))
    assert [r["verdict"] for r in rows].count("holds") == 12
    md = out.with_suffix(".md").read_text()
    assert md.startswith("Claims of the paper on a hand-made pool: 12 holds, 5 refuted, 5 inconclusive, 2 untestable.")
    tex = out.read_text()
    assert "\\label{tab:claims}" in tex and "\\begin{tabular}" in tex and "&" in tex
    assert main(["claims", "--results", str(results)]) == 0
    assert "| claim | paper | ours | verdict | why |" in capsys.readouterr().out
    # the results page's block reads the ledger the rule wrote
    (results / "tables/claims.csv").write_bytes(out.with_suffix(".csv").read_bytes())
    from locus.experiments.report import render_block

    block = render_block("claims", Source(results))
    assert block.startswith("12 holds, 5 refuted, 5 inconclusive, 2 untestable of 24 claims.")
    assert "**refuted**" in block and "results/tables/claims.csv" in block


def test_a_missing_output_is_one_line_naming_its_target(results, capsys):
    (results / "tables/distance_correlation.csv").unlink()
    assert main(["claims", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "distance_correlation.csv: not found" in err and "snakemake --cores 2" in err and "Traceback" not in err


def verdict(judge, root):
    return judge(Source(root))


def test_onboarding_judges(tmp_path):
    (tmp_path / "figures").mkdir()
    onboarding(tmp_path, shift=0.0, gap=0.2)
    assert verdict(claims.judge_onboarding_k, tmp_path).verdict == "holds"
    out = verdict(claims.judge_onboarding_partial, tmp_path)
    assert out.verdict == "holds" and "over 4 held-out models" in out.reason
    onboarding(tmp_path, shift=3.0, gap=1.0)  # k = 128 3 points short; the partial encoder's gap straddles 1
    out = verdict(claims.judge_onboarding_k, tmp_path)
    assert out.verdict == "refuted" and "k=128 short of k=1024 by +3.0" in out.ours
    assert verdict(claims.judge_onboarding_partial, tmp_path).verdict == "inconclusive"
    onboarding(tmp_path, shift=0.0, gap=0.0, ks=(16, 64))
    assert verdict(claims.judge_onboarding_k, tmp_path).verdict == "untestable"  # no k = 128


def test_families_judge(tmp_path):
    (tmp_path / "figures").mkdir()
    families(tmp_path, {"math": (0.5, 0.001), "code": (0.9, 0.04)})  # 0.04 above 0.05 / 2 families
    out = verdict(claims.judge_families, tmp_path)
    assert out.verdict == "inconclusive" and "code: closer" in out.reason
    families(tmp_path, {"math": (0.5, 0.001), "code": (1.1, 0.7)})
    assert verdict(claims.judge_families, tmp_path).verdict == "refuted"
    (tmp_path / "figures/models_family_clustering.json").write_text(
        json.dumps({"separation": {"math": {"n_models": 1}}})
    )
    assert verdict(claims.judge_families, tmp_path).verdict == "untestable"  # no family of two models


def test_portfolio_judges(tmp_path):
    (tmp_path / "figures").mkdir()
    portfolio(tmp_path, budget_near=100.0)  # 15 models; 5% of the parameters
    assert verdict(claims.judge_portfolio_count, tmp_path).verdict == "holds"
    assert verdict(claims.judge_portfolio_budget, tmp_path).verdict == "holds"
    portfolio(tmp_path, k=60.0, k_near=40.0, budget_near=800.0)  # 40 models, 40% of the parameters
    assert verdict(claims.judge_portfolio_count, tmp_path).verdict == "refuted"
    out = verdict(claims.judge_portfolio_budget, tmp_path)
    assert out.verdict == "refuted" and "800B of 2,000B (40.0%)" in out.ours
    portfolio(tmp_path, single=71.0, budget_near=240.0)  # one model routes as well as the pool; 12% of the budget
    out = verdict(claims.judge_portfolio_count, tmp_path)
    assert out.verdict == "inconclusive" and "best single model alone" in out.reason
    assert verdict(claims.judge_portfolio_budget, tmp_path).verdict == "inconclusive"


def test_hypothetical_judge(tmp_path):
    (tmp_path / "figures").mkdir()
    hypothetical(tmp_path, size=8192, recall=0.99)
    out = verdict(claims.judge_hypothetical, tmp_path)
    assert out.verdict == "holds" and out.ours.startswith("recall@10 at 8192 queries 99.0% [")
    hypothetical(tmp_path, size=4096, recall=0.80)  # short of 97%, with fewer queries than the paper
    out = verdict(claims.judge_hypothetical, tmp_path)
    assert out.verdict == "inconclusive" and "smaller than the paper's 8192" in out.reason
    hypothetical(tmp_path, size=4096, recall=0.05)  # chance is 10 / 112
    assert verdict(claims.judge_hypothetical, tmp_path).verdict == "refuted"


def test_dim_ablation_judge(results):
    table(results / "tables/dim_ablation_correctness.csv", "correctness_acc", [("d32", 256, 2.0, 1.5, 2.5)],
          reference="d128")  # fmt: skip
    out = verdict(claims.judge_dim_ablation, results)
    assert out.verdict == "refuted" and "d32 n=256: −2.0 [−2.5, −1.5]" in out.ours  # d32 minus d128
    table(results / "tables/dim_ablation_correctness.csv", "correctness_acc", [("d32", 256, 0.1, -0.5, 0.6)],
          reference="d128", near=(256,))  # fmt: skip
    table(results / "tables/dim_ablation_routing.csv", "routing_acc", [("d32", 256, 0.2, -0.5, 0.6)], reference="d128",
          near=(256,))  # fmt: skip
    out = verdict(claims.judge_dim_ablation, results)
    assert out.verdict == "inconclusive" and "near-constant" in out.reason


def test_convergence_judges(tmp_path):
    (tmp_path / "figures").mkdir()
    convergence(tmp_path, "overlap", FALLING, near=0.3)  # α = 0 lies wholly above the nearest other model
    out = verdict(claims.judge_overlap_convergence, tmp_path)
    assert out.verdict == "refuted" and "at α = 0 farther" in out.reason and "α=1" not in out.ours
    convergence(tmp_path, "size", {16: [0.9, 1.0, 1.1], 64: [0.5, 0.6, 0.4], 256: [0.1, 0.2, 0.15]}, near=1.0)
    assert verdict(claims.judge_size_convergence, tmp_path).verdict == "holds"
    convergence(tmp_path, "size", {16: [0.1, 0.2, 0.15], 64: [0.5, 0.6, 0.4], 256: [0.9, 1.0, 1.1]}, near=1.0)
    assert verdict(claims.judge_size_convergence, tmp_path).verdict == "refuted"


def write_plan(root, adapted=(), skipped=()):
    plan = {"dataset": "hand", "models": 9, "train_queries": 2000, "val_queries": 300, "test_queries": 381,
            "adapted": list(adapted), "skipped": list(skipped)}  # fmt: skip
    (root / claims.PLAN).write_text(json.dumps(plan))


def test_a_claim_whose_file_the_plan_skipped_is_untestable(results):
    why = "no parameter counts in this pool (models `params_b`)"
    write_plan(results, skipped=[{"outputs": ["figures/model_portfolio.csv", "figures/model_portfolio.json"],
                                  "why": why}])  # fmt: skip
    (results / "figures/model_portfolio.json").unlink()  # the workflow did not build it
    src = Source(results)
    assert claims.skipped_reason(src, "figures/model_portfolio.json") == why
    assert claims.skipped_reason(src, "tables/routing.csv") is None
    frame = claims.ledger(src).set_index("id")
    for cid in ("portfolio-count", "portfolio-budget"):
        assert tuple(frame.loc[cid, ["ours", "verdict", "reason"]]) == ("–", "untestable", why)
    assert frame.loc["routing-order", "verdict"] == "holds"
    assert "figures/model_portfolio.json" in claims.FILES  # the rule's inputs: the workflow subtracts the skipped


def test_adapted_sizes_are_noted_on_the_claims_they_shape(results):
    write_plan(results, adapted=[
        {"setting": "train_sizes", "asked": [256, 512, 1024, 4096], "used": [256, 512, 1024, 2000],
         "why": "the pool's training queries (2000)"},
        {"setting": "onboarding.sizes", "asked": [64, 128, 1024, 4096], "used": [64, 128, 1024, 2000], "why": "x"},
        {"setting": "unknown.setting", "asked": [1], "used": [0], "why": "x"},
    ])  # fmt: skip
    frame = claims.ledger(Source(results)).set_index("id")
    note = "sizes adapted to the pool: train_sizes 4096→2000"
    assert frame.loc["routing-order", "reason"].endswith(note) and frame.loc["routing-order", "verdict"] == "holds"
    assert frame.loc["onboarding-128", "reason"].endswith("sizes adapted to the pool: onboarding.sizes 4096→2000")
    assert not frame.loc[["time-linear", "families", "regeneration"], "reason"].str.contains("adapted").any()
    assert claims.plan(Source(results / "data")) is None  # results without a plan


def test_a_missing_file_the_plan_did_not_skip_is_a_data_error(results):
    write_plan(results, skipped=[{"outputs": ["figures/model_portfolio.json"], "why": "no parameter counts"}])
    (results / "figures/hypothetical_model_embedding.csv").unlink()
    with pytest.raises(DataError, match=r"hypothetical_model_embedding\.csv: not found; build it first"):
        claims.ledger(Source(results))
    (results / claims.PLAN).write_text(json.dumps({"adapted": [], "skipped": [{"why": "no outputs"}]}))
    with pytest.raises(DataError, match="pool_plan.json: adapted or skipped is not of the plan's shape"):
        claims.ledger(Source(results))


# --- the figure claims judged on each seed of their runs (geometry/onboarding/regeneration.extra_seeds) ---------
ALL_SEEDS = {section: (0, 1, 2) for section in claims.SEED_SECTIONS}


def copy_to_seeds(root, seeds=(1, 2)):
    """The figure claims' files of `root` copied to where the runs at each further seed write them."""
    for s in seeds:
        for rel in [f for files in claims.SEEDED_FILES.values() for f in files]:
            dest = root / claims.seed_path(rel, s)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes((root / rel).read_bytes())


def test_seed_paths_are_the_figure_claims_files():
    # what the `*_seed` rules write again, per config section
    assert set(claims.SEEDED_FILES["geometry"]) == set(claims.GEOMETRY_FILES)
    assert claims.SEEDED_FILES["onboarding"] == ("figures/sample_eff_ood_test.csv",)
    assert claims.SEEDED_FILES["regeneration"] == ("figures/relearn_embedllm_heatmap_test_disagreement.csv",)
    unseeded = {c.id for c in claims.CLAIMS if not c.seeded}
    assert {c.id for c in claims.CLAIMS if c.seeds == "onboarding"} == {"onboarding-128", "onboarding-partial"}
    assert "regeneration" not in unseeded and "time-linear" in unseeded
    assert claims.seed_path("figures/fallback_routing.csv", 2) == "figures/seeds/s2/fallback_routing.csv"
    assert (
        claims.seed_path("tables/distance_correlation.csv", "{seed}") == "tables/seeds/s{seed}/distance_correlation.csv"
    )


def test_one_seed_says_so_and_points_to_the_seed_band_run(results):
    frame = claims.ledger(Source(results)).set_index("id")
    for c in claims.CLAIMS:
        reason = frame.loc[c.id, "reason"]
        if c.seeded and frame.loc[c.id, "verdict"] != "untestable":
            assert claims.one_seed_note(c.seeds) in reason and "config/seed-bands.yaml" in reason, c.id
            assert f"({c.seeds}.extra_seeds)" in reason, c.id
            assert "one embedding run" not in reason, c.id
    assert claims.one_seed_note("geometry") == claims.ONE_GEOMETRY_SEED
    assert "one onboarding run;" in frame.loc["onboarding-128", "reason"]
    assert "one set of regeneration runs;" in frame.loc["regeneration", "reason"]


def test_a_figure_claim_whose_seeds_disagree_is_inconclusive(results):
    one = claims.ledger(Source(results)).set_index("id")
    copy_to_seeds(results)
    write_rows(results / "tables/seeds/s2/distance_correlation.csv",
               ["method", "correlation", "distance", "value", "ci_low", "ci_high"],
               [["locus", c, d, 0.3, 0.2, 0.4] for c in ("pearson", "spearman", "kendall")
                for d in ("cosine", "euclidean")])  # fmt: skip  # seed 2: weak, refuted
    frame = claims.ledger(Source(results), ALL_SEEDS).set_index("id")
    row = frame.loc["distance-disagreement"]
    assert row["verdict"] == "inconclusive"
    assert row["reason"].startswith("differs between seeds: seed 0 holds, seed 1 holds, seed 2 refuted")
    assert "seed 2: an interval lies below 0.5" in row["reason"]
    assert row["ours"].startswith("seed 0: pearson cosine 0.800") and "seed 2: pearson cosine 0.300" in row["ours"]
    for c in claims.CLAIMS:  # the others: every seed agrees with the one-seed verdict, no one-seed note
        if c.seeded and c.id != "distance-disagreement" and one.loc[c.id, "verdict"] != "untestable":
            assert frame.loc[c.id, "verdict"] == one.loc[c.id, "verdict"], c.id
            assert "every seed agrees (3 seeds: 0, 1, 2)" in frame.loc[c.id, "reason"], c.id
            assert "one seed" not in frame.loc[c.id, "reason"], c.id
    assert frame.loc["routing-order", "reason"] == one.loc["routing-order", "reason"]  # tables: their own seeds
    # two seeds: judged on each, and still pointed to the seed-band run
    two = claims.ledger(Source(results), {"geometry": (0, 1)}).set_index("id")
    assert two.loc["distance-disagreement", "verdict"] == "holds"
    assert two.loc["distance-disagreement", "reason"].endswith(claims.TWO_GEOMETRY_SEEDS)


def test_a_missing_seed_file_is_a_data_error_naming_it(results, capsys):
    copy_to_seeds(results, seeds=(1,))
    with pytest.raises(DataError, match=r"seeds/s2/.*not found"):
        claims.ledger(Source(results), {"geometry": (0, 1, 2)})
    copy_to_seeds(results, seeds=(2,))
    out = results / "tables/claims.tex"
    assert main(["claims", "--results", str(results), "--geometry-seeds", "0,1,2", "--out", str(out)]) == 0
    assert "every seed agrees (3 seeds: 0, 1, 2)" in (results / "tables/claims.md").read_text()
    assert main(["claims", "--results", str(results), "--geometry-seeds", "0,0"]) == 2
    assert "distinct" in capsys.readouterr().err


def test_onboarding_and_regeneration_claims_are_judged_on_each_of_their_seeds(results, capsys):
    one = claims.ledger(Source(results)).set_index("id")
    assert one.loc["regeneration", "verdict"] == "holds"
    copy_to_seeds(results)
    # seed 2 of the regeneration runs: LOCUS's re-learned embeddings disagree as much as EmbedLLM's (refuted)
    write_rows(results / "figures/seeds/s2/relearn_embedllm_heatmap_test_disagreement.csv",
               ["method", "kind", "test_disagreement"],
               [["embedllm", "same", 0.05], ["locus", "same", 0.06]])  # fmt: skip
    frame = claims.ledger(Source(results), ALL_SEEDS).set_index("id")
    row = frame.loc["regeneration"]
    assert row["verdict"] == "inconclusive"
    assert row["reason"].startswith("differs between seeds: seed 0 holds, seed 1 holds, seed 2 refuted")
    assert "seed 2: EmbedLLM up to 5.0%" in row["ours"]
    for cid in ("onboarding-128", "onboarding-partial"):  # identical seeds: the one-seed verdict, no one-seed note
        assert frame.loc[cid, "verdict"] == one.loc[cid, "verdict"], cid
        assert "every seed agrees (3 seeds: 0, 1, 2)" in frame.loc[cid, "reason"], cid
        assert "one seed" not in frame.loc[cid, "reason"], cid
    # a section's seeds judge only its own claims: the regeneration seeds alone leave onboarding at one seed
    only = claims.ledger(Source(results), {"regeneration": (0, 1)}).set_index("id")
    assert only.loc["regeneration", "verdict"] == "holds"
    assert only.loc["regeneration", "reason"].endswith(claims.two_seeds_note("regeneration"))
    assert claims.one_seed_note("onboarding") in only.loc["onboarding-128", "reason"]
    out = results / "tables/claims.tex"
    argv = ["claims", "--results", str(results), "--out", str(out), "--onboarding-seeds", "0,1,2"]
    assert main([*argv, "--regeneration-seeds", "0,1,2"]) == 0
    assert "seed 2 refuted" in (results / "tables/claims.md").read_text()
    (results / "figures/seeds/s1/sample_eff_ood_test.csv").unlink()
    assert main(argv) == 2
    assert "seeds/s1/sample_eff_ood_test.csv: not found" in capsys.readouterr().err
