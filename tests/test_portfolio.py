"""Model portfolio selection (locus.geometry.portfolio, `locus portfolio`): the kernel and its bandwidth,
k-center, PAM k-medoids, coverage-greedy, the seeded random baselines, portfolio routing against
locus.evaluation, and the command line on a tiny real LOCUS run (selections, figure, user errors)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from locus import run_artifacts as ra
from locus.cli import main
from locus.data.canonical import write_dataset
from locus.data.encodings import data_fingerprint, write_encodings
from locus.evaluation import choice_counts, routing_diversity, routing_metrics
from locus.geometry import portfolio as pf
from locus.runs import execute

TINY_LOCUS = {
    "dim": 8,
    "heads": 2,
    "layers": 1,
    "latents": 4,
    "decoder_hidden": 8,
    "max_steps": 6,
    "min_steps": 1,
    "patience": 6,
    "eval_every": 3,
    "threads": 1,
}
PARAMS_B = [7.0, 13.0, 70.0, 1.5, 34.0, 8.0, 2.0]


# ------------------------------------------------------------------------------------------------
# kernel
# ------------------------------------------------------------------------------------------------
def test_bandwidth_is_the_median_pairwise_distance_and_kernel_is_rbf():
    d = np.array([[0, 1, 2, 4], [1, 0, 3, 5], [2, 3, 0, 12], [4, 5, 12, 0]], dtype=float)
    assert pf.median_bandwidth(d) == 3.5  # median of 1, 2, 3, 4, 5, 12 (pairs i < j only; mean 4.5)
    K, sigma = pf.rbf_kernel(d)
    assert sigma == 3.5 and np.allclose(np.diag(K), 1.0)
    assert K[0, 3] == pytest.approx(np.exp(-((4 / 3.5) ** 2)))
    assert pf.median_bandwidth(np.zeros((3, 3))) == 1.0 and pf.median_bandwidth(np.zeros((1, 1))) == 1.0


def test_cosine_distance_ignores_scale_and_rejects_zero_rows():
    z = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0], [-1.0, 0.0]])
    d = pf.pairwise_distances(z, "cosine")
    assert d[0, 1] == pytest.approx(0.0) and d[0, 2] == pytest.approx(1.0) and d[0, 3] == pytest.approx(2.0)
    with pytest.raises(pf.DataError, match=r"rows \[1\]"):
        pf.pairwise_distances(np.array([[1.0, 0.0], [0.0, 0.0]]))


# ------------------------------------------------------------------------------------------------
# selection
# ------------------------------------------------------------------------------------------------
def collinear_kernel():
    x = np.array([[-3.0], [-1.0], [0.0], [1.0], [2.0], [8.0]])
    return pf.rbf_kernel(pf.pairwise_distances(x, "euclidean"))[0]


def test_k_center_on_collinear_points_starts_central_then_takes_the_extremes_in_order():
    K = collinear_kernel()
    assert pf.kernel_medoid(K) == 2  # x = 0: the largest mean similarity
    order = pf.k_center(K, 3)
    assert order.tolist() == [2, 5, 0]  # then x = 8 (farthest), then x = -3
    full = pf.k_center(K, 6)
    assert sorted(full.tolist()) == list(range(6)) and full[:3].tolist() == order.tolist()  # incremental


def test_k_center_rejects_k_outside_the_pool():
    with pytest.raises(pf.ConfigError, match="between 1 and the pool size 6"):
        pf.k_center(collinear_kernel(), 7)


def two_clusters():
    rng = np.random.default_rng(0)
    z = np.vstack([rng.normal(0, 0.1, (5, 2)) + [5, 0], rng.normal(0, 0.1, (5, 2)) + [0, 5]])
    return pf.rbf_kernel(pf.pairwise_distances(z, "euclidean"))[0]


def test_pam_never_lowers_the_coverage_of_its_initialisation():
    rng = np.random.default_rng(1)
    for trial in range(10):
        z = rng.normal(size=(15, 3))
        K = pf.embedding_kernel(z, "euclidean" if trial % 2 else "cosine")[0]
        for k in (1, 3, 6):
            for init in (pf.k_center(K, k), rng.choice(15, size=k, replace=False)):
                medoids = pf.k_medoids(K, k, init=init)
                assert len(set(medoids.tolist())) == k
                assert pf.coverage(K, medoids) >= pf.coverage(K, init) - 1e-12


def test_pam_swaps_a_bad_initialisation_to_the_optimum():
    K = two_clusters()
    bad = np.array([0, 1])  # both medoids in the first cluster
    medoids = pf.k_medoids(K, 2, init=bad)
    assert pf.coverage(K, medoids) > pf.coverage(K, bad) + 1.0
    best = max(pf.coverage(K, s) for s in itertools.combinations(range(10), 2))
    assert pf.coverage(K, medoids) == pytest.approx(best)
    assert {int(m) // 5 for m in medoids} == {0, 1}  # one per cluster
    assert sorted(pf.k_medoids(K, 10).tolist()) == list(range(10))


def test_coverage_greedy_takes_the_best_gain_per_parameter_and_respects_the_budget():
    # model 0 is similar to every model but costs 10; the others cover themselves (and a bit of 0) for 1 each
    K = np.array([[1, 0.9, 0.9, 0.9], [0.9, 1, 0.1, 0.1], [0.9, 0.1, 1, 0.1], [0.9, 0.1, 0.1, 1]])
    costs = np.array([10.0, 1.0, 1.0, 1.0])
    # first step: gain/cost 3.7/10 for model 0, 2.1/1 for 1-3 -> model 1 (lowest position on the tie)
    assert pf.coverage_greedy(K, costs, 1.0).tolist() == [1]
    assert pf.coverage_greedy(K, costs, 10.0).tolist() == [1, 2, 3]  # 0 no longer fits (7 left)
    assert pf.coverage_greedy(K, costs, 13.0).tolist() == [1, 2, 3, 0]
    assert pf.coverage_greedy(K, costs, 0.5).tolist() == []
    # no similarity: the order is by 1 / cost; the budget is filled while something fits
    assert pf.coverage_greedy(np.eye(4), np.array([4.0, 1.0, 2.0, 8.0]), 7.0).tolist() == [1, 2, 0]


def test_coverage_greedy_first_pick_and_budget_on_random_pools():
    rng = np.random.default_rng(2)
    for _ in range(20):
        K = pf.embedding_kernel(rng.normal(size=(12, 4)))[0]
        costs = rng.uniform(0.5, 20, 12)
        budget = rng.uniform(costs.min(), costs.sum())
        chosen = pf.coverage_greedy(K, costs, budget)
        assert costs[chosen].sum() <= budget + 1e-9
        left = np.setdiff1d(np.arange(12), chosen)
        assert (costs[left] > budget - costs[chosen].sum()).all()  # nothing else fits
        feasible = np.flatnonzero(costs <= budget)
        assert chosen[0] == feasible[np.argmax(K[:, feasible].sum(axis=0) / costs[feasible])]
    with pytest.raises(pf.ConfigError, match="cost > 0"):
        pf.coverage_greedy(np.eye(2), np.array([1.0, 0.0]), 3.0)


def test_random_baselines_are_seeded_and_valid():
    a, b, c = (pf.random_subsets(20, 5, 30, s) for s in (0, 0, 1))
    assert a.shape == (30, 5) and np.array_equal(a, b) and not np.array_equal(a, c)
    assert all(len(set(r)) == 5 and list(r) == sorted(r) and r.min() >= 0 and r.max() < 20 for r in a)
    assert len({tuple(r) for r in a}) > 1
    costs = np.array([5.0, 1.0, 3.0, 8.0, 2.0, 4.0])
    x, y, w = (pf.random_feasible_subsets(costs, 9.0, 25, s) for s in (3, 3, 4))
    assert all(np.array_equal(p, q) for p, q in zip(x, y)) and any(not np.array_equal(p, q) for p, q in zip(x, w))
    for s in x:
        assert costs[s].sum() <= 9.0 and len(s) >= 1
        assert (costs[np.setdiff1d(np.arange(6), s)] > 9.0 - costs[s].sum()).all()  # maximal


# ------------------------------------------------------------------------------------------------
# evaluation
# ------------------------------------------------------------------------------------------------
def test_portfolio_routing_equals_locus_evaluation_on_the_selected_columns():
    rng = np.random.default_rng(3)
    logits = rng.integers(0, 3, size=(60, 8)).astype(np.float32)  # many ties
    labels = rng.choice([0.0, 1.0, 0.5, np.nan], size=(60, 8), p=[0.4, 0.3, 0.1, 0.2])
    labels[:4, :] = np.nan  # queries without any label
    ranked = pf.rank(logits, labels)
    subsets = [rng.choice(8, size=k, replace=False) for k in (1, 2, 3, 5, 8) for _ in range(4)]
    acc, oracle, n = pf.routing_batch(ranked, subsets)
    for i, s in enumerate(subsets):
        cols = np.sort(s)
        want = routing_metrics(logits[:, cols], labels[:, cols], ks=(1,))
        assert n[i] == want["n_queries"]
        assert acc[i] == pytest.approx(want["routing_acc"]) and oracle[i] == pytest.approx(want["oracle"])
        got = pf.portfolio_routing(logits, labels, s[::-1])  # order of the selection does not matter
        assert got["routing_acc"] == pytest.approx(want["routing_acc"])
    # the routing diversity of each portfolio router: as locus.evaluation counts it on the selected columns
    *_, shares = pf.routing_batch(ranked, subsets, top_share=True)
    for i, s in enumerate(subsets):
        cols = np.sort(s)
        want = routing_diversity(choice_counts(logits[:, cols], labels[:, cols]))["top_share"]
        assert shares[i] == pytest.approx(want)
    assert (shares[:4] == 1.0).all()  # one-model portfolios send every query to it


# ------------------------------------------------------------------------------------------------
# the command line on a tiny LOCUS run
# ------------------------------------------------------------------------------------------------
def write_data(root, params_b=PARAMS_B, n_q=60, seed=0):
    rng = np.random.default_rng(seed)
    n_m = len(params_b)
    split = ["train"] * (n_q // 2) + ["val"] * (n_q // 4) + ["test"] * (n_q - n_q // 2 - n_q // 4)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(n_q),
            "prompt": [f"question {i}" for i in range(n_q)],
            "benchmark": "b",
            "category": "b",
            "split": split,
        }
    )
    models = pd.DataFrame(
        {"model_id": np.arange(n_m) * 10, "name": [f"org/model-{i}" for i in range(n_m)], "params_b": params_b}
    )
    pid, mid = np.meshgrid(np.arange(n_q), models["model_id"], indexing="ij")
    p = np.linspace(0.2, 0.8, n_m)[None, :].repeat(n_q, 0)
    scores = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(pid.size) < p.ravel()).astype(float)}
    )
    write_dataset(root, queries, models, scores)
    return queries


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("portfolio")
    queries = write_data(root / "data")
    vectors = np.random.default_rng(1).normal(size=(len(queries), 6)).astype(np.float32)
    write_encodings(
        root / "enc.parquet",
        queries["prompt_id"],
        vectors,
        "toy",
        False,
        data_fingerprint(queries["prompt_id"], queries["prompt"]),
    )
    execute("locus", TINY_LOCUS, root / "data", root / "enc.parquet", 16, 0, root / "run")
    params = list(PARAMS_B)
    params[1] = params[4] = float("nan")
    write_data(root / "data_no_params", params_b=params)  # same queries and scores, two counts missing
    return root


def cli(capsys, *argv):
    code = main(["portfolio", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_k_prints_the_k_medoids_portfolio_and_its_accuracy(tiny, capsys):
    code, out, err = cli(capsys, "--run", tiny / "run", "--data", tiny / "data", "--k", 3)
    assert code == 0, err
    ids, z = ra.read_embeddings(tiny / "run")
    K = pf.embedding_kernel(z[np.argsort(ids)])[0]
    want = [f"org/model-{i}" for i in pf.k_medoids(K, 3)]
    listed = [line.split(". ", 1)[1].split(" (")[0] for line in out.splitlines() if line.startswith("    ")]
    assert listed == want
    assert "k-medoids portfolio (k = 3): 3 of 7 models" in out and "test routing accuracy restricted" in out
    code, out, _ = cli(capsys, "--run", tiny / "run", "--k", 2, "--method", "k-center")
    assert code == 0 and "k-center portfolio" in out and "accuracy" not in out  # no --data: no accuracy
    assert [line.split(". ", 1)[1].split(" (")[0] for line in out.splitlines() if line.startswith("    ")] == [
        f"org/model-{i}" for i in pf.k_center(K, 2)
    ]


def test_cli_budget_prints_a_portfolio_within_the_budget(tiny, capsys):
    code, out, err = cli(capsys, "--run", tiny / "run", "--data", tiny / "data", "--budget-b", 20)
    assert code == 0, err
    sizes = [float(line.rsplit(", ", 1)[1].rstrip("B)")) for line in out.splitlines() if line.startswith("    ")]
    assert sizes and sum(sizes) <= 20 and "coverage-greedy portfolio (budget 20B)" in out
    assert f"total parameters: {sum(sizes):g}B of {sum(PARAMS_B):g}B" in out


def test_cli_figure_writes_pdf_png_csv_json_with_the_full_pool_accuracy(tiny, capsys):
    out_pdf = tiny / "fig" / "model_portfolio.pdf"
    code, out, err = cli(
        capsys,
        "--run",
        tiny / "run",
        "--data",
        tiny / "data",
        "--figure",
        out_pdf,
        "--trials",
        5,
        "--budget-points",
        4,
        "--data-label",
        "tiny",
    )
    assert code == 0, err
    for ext in ("pdf", "png", "csv", "json"):
        assert (tiny / "fig" / f"model_portfolio.{ext}").stat().st_size > 0
    frame = pd.read_csv(tiny / "fig" / "model_portfolio.csv")
    summary = json.loads((tiny / "fig" / "model_portfolio.json").read_text())
    assert set(frame["method"]) == {
        "k-center",
        "k-medoids",
        "random",
        "coverage-greedy",
        "random-feasible",
        "full-pool",
        "best-single",
    }
    assert sorted(frame.loc[frame["method"] == "k-center", "k"]) == list(range(1, 8))
    assert (frame.loc[frame["method"] == "random", "trials"] == 5).all()
    metrics = ra.read_metrics(tiny / "run")
    assert summary["full_pool_routing_acc"] == pytest.approx(100 * metrics["test"]["overall"]["routing_acc"])
    full_k = frame[(frame["method"] == "k-medoids") & (frame["k"] == 7)]["routing_acc"].iloc[0]
    assert full_k == pytest.approx(summary["full_pool_routing_acc"])
    # the best single model is the run's own reference: chosen on validation, scored on test
    single = frame[frame["method"] == "best-single"].iloc[0]
    assert single["routing_acc"] == pytest.approx(100 * metrics["reference"]["best_single"]["overall"])
    assert summary["best_single_routing_acc"] == pytest.approx(single["routing_acc"])
    assert summary["random_routing_acc"] == pytest.approx(100 * metrics["reference"]["random"]["overall"])
    greedy = frame[frame["method"] == "coverage-greedy"]
    assert (greedy["params_b"] <= greedy["budget_b"] + 1e-9).all() and summary["total_params_b"] == sum(PARAMS_B)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--k", 8], "--k 8 must be between 1 and the run's pool of 7 models"),
        (["--budget-b", -5], "--budget-b must be a number >= 0"),
        (["--budget-b", 1], "below the cheapest model (org/model-3, 1.5B)"),
        (["--budget-b", "nan"], "--budget-b must be a number >= 0"),
    ],
)
def test_cli_user_errors_exit_2_with_one_line(tiny, capsys, argv, message):
    code, out, err = cli(capsys, "--run", tiny / "run", "--data", tiny / "data", *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_missing_params_b_names_the_models(tiny, capsys):
    code, _, err = cli(capsys, "--run", tiny / "run", "--data", tiny / "data_no_params", "--budget-b", 50)
    assert code == 2 and "2 of 7 models (org/model-1, org/model-4)" in err
    code, _, err = cli(capsys, "--run", tiny / "run", "--budget-b", 50)
    assert code == 2 and "--budget-b needs --data" in err
    out_pdf = tiny / "fig2" / "p.pdf"  # the figure still draws the count panel and says why the budget one is empty
    code, out, err = cli(
        capsys, "--run", tiny / "run", "--data", tiny / "data_no_params", "--figure", out_pdf, "--trials", 2
    )
    assert code == 0, err
    assert "no budget panel" in out and "org/model-1, org/model-4" in out
    assert set(pd.read_csv(tiny / "fig2" / "p.csv")["panel"]) == {"count", "both"}
