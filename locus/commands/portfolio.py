"""`locus portfolio`: choose a model portfolio from a run's model embeddings (paper section 4.4, appendix E.3).

Three modes (exactly one):

- ``--k K``: the k-medoids (default) or k-center (``--method``) portfolio of K models;
- ``--budget-b B``: the coverage-greedy portfolio under a total of B billion parameters (``params_b``
  of the data set's models.parquet, so it needs ``--data``);
- ``--figure OUT.pdf``: the figure of the paper (accuracy vs k and vs budget, against random subsets)
  with ``.png``, ``.csv`` (plotted numbers) and ``.json`` (summary) beside it; needs ``--data``.

Selection uses only the run's ``embeddings.parquet``; with ``--data`` (the data set the run was trained
on) the command also prints the test routing accuracy restricted to the portfolio (the run's predicted
scores, argmax among the portfolio's models). Definitions: :mod:`locus.geometry.portfolio`.
"""

from __future__ import annotations

from locus.cli import add_data_argument, add_seed_argument, existing_dir, int_at_least, only_with, output_file

NAME = "portfolio"
HELP = "choose a model portfolio (k-center / k-medoids / coverage-greedy) from a run's model embeddings"


def add_arguments(p):
    p.epilog = (
        "Examples: `locus portfolio --run RUN --data DATA --k 15` (k-medoids; --method k-center), "
        "`locus portfolio --run RUN --data DATA --budget-b 150` (coverage-greedy under 150B parameters), "
        "`locus portfolio --run RUN --data DATA --figure results/figures/model_portfolio.pdf`. Selection "
        "sees only the run's embeddings.parquet; --data adds the test routing accuracy restricted to the "
        "portfolio and the params_b of models.parquet."
    )
    p.add_argument(
        "--run",
        required=True,
        type=existing_dir("run directory"),
        help="run directory of an embedding method (results/runs/.../s<seed>/) with embeddings.parquet",
    )
    add_data_argument(p, help="canonical data set the run was trained on: test labels (accuracy) and params_b (budget)")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--k", type=int_at_least(1), default=None, help="portfolio of this many models")
    mode.add_argument(
        "--budget-b",
        type=float,
        default=None,
        help="portfolio under this total-parameter budget in billions (coverage-greedy; needs --data)",
    )
    mode.add_argument(
        "--figure",
        type=output_file((".pdf",)),
        default=None,
        help="write the portfolio figure OUT.pdf (+ .png, .csv, .json beside it; needs --data)",
    )
    p.add_argument(
        "--method",
        choices=("k-medoids", "k-center"),
        default="k-medoids",
        help="selector for --k (default k-medoids: PAM initialised with k-center)",
    )
    p.add_argument(
        "--distance",
        choices=("cosine", "euclidean"),
        default="cosine",
        help="distance inside the RBF kernel exp(-d^2/sigma^2), sigma = median pairwise distance "
        "(default cosine, as in the paper)",
    )
    p.add_argument("--max-iter", type=int_at_least(1), default=100, help="PAM swap rounds at most (default 100)")
    p.add_argument(
        "--max-k", type=int_at_least(1), default=None, help="--figure: k = 1..MAX_K (default: the whole pool)"
    )
    p.add_argument(
        "--budget-points",
        type=int_at_least(2),
        default=30,
        help="--figure: budgets spaced geometrically from the cheapest model to the pool (default 30)",
    )
    p.add_argument(
        "--trials",
        type=int_at_least(1),
        default=100,
        help="--figure: random subsets per point (mean ± sd; default 100)",
    )
    add_seed_argument(p, help="--figure: seed of the random subsets")
    p.add_argument("--data-label", default=None, help="--figure: data set name for the title")


def _no_params_b(data) -> str:
    """Why a budget needs params_b, and how a pool gets it: through the csv source, which carries it as a
    column of the evaluations file (models.parquet itself is covered by the data set's digests)."""
    return (
        f"{data}/models.parquet has no params_b column (parameters in billions), which a parameter budget needs "
        "for every model: add a params_b column to the pool's evaluations file (the same number on every row of "
        "a model; `locus export-csv` writes that file for a pool from another source) and rebuild the pool with "
        "`locus data csv`; or select by --k"
    )


def _pct(x) -> str:
    return f"{100 * x:.2f}%"


def run(args) -> int:
    from locus.errors import ConfigError, DataError
    from locus.geometry import portfolio as pf

    if args.data is None and (args.figure is not None or args.budget_b is not None):
        raise ConfigError(
            f"--{'figure' if args.figure is not None else 'budget-b'} needs --data (the data set the "
            f"run was trained on: {'test labels' if args.figure is not None else 'params_b'})"
        )
    # the options of one mode, given in another, would be ignored silently
    figure, k_medoids = args.figure is not None, args.k is not None and args.method == "k-medoids"
    only_with(args, ("method",), args.k is not None, "with --k (the k-center or k-medoids portfolio)")
    only_with(args, ("max_iter",), figure or k_medoids, "with --figure or --k (k-medoids: PAM's swap rounds)")
    only_with(args, ("max_k", "budget_points", "trials", "seed", "data_label"), figure, "with --figure")
    inp = pf.load_inputs(args.run, args.data)
    if args.budget_b is not None and inp.params_b is None:
        raise DataError(_no_params_b(args.data))
    if args.figure is not None:
        from locus.render.portfolio import write

        frame, summary = pf.curves(
            inp,
            max_k=args.max_k,
            budget_points=args.budget_points,
            trials=args.trials,
            seed=args.seed,
            metric=args.distance,
            max_iter=args.max_iter,
        )
        label = args.data_label or args.data.name
        paths = write(frame, summary, args.figure, title=f"Model portfolio selection: {label}, test split ({args.run})")
        print(
            f"full pool ({summary['n_models']} models): routing accuracy {summary['full_pool_routing_acc']:.2f}% "
            f"(oracle {summary['full_pool_oracle']:.2f}%), kernel bandwidth {summary['bandwidth']:.4g}"
        )
        for key in (
            "k-center_k_full",
            "k-medoids_k_full",
            "random_k_full",
            "coverage-greedy_budget_b_full",
            "coverage-greedy_budget_b_within_1pt",
        ):
            print(f"{key}: {summary.get(key)}")
        if summary["budget_panel"] != "ok":
            print(f"no budget panel: {summary['budget_panel']}")
        print("wrote " + ", ".join(str(p) for p in paths.values()))
        return 0
    res = pf.selection(inp, args.method, k=args.k, budget_b=args.budget_b, metric=args.distance, max_iter=args.max_iter)
    what = f"budget {args.budget_b:g}B" if args.budget_b is not None else f"k = {args.k}"
    print(
        f"{res['method']} portfolio ({what}): {len(res['names'])} of {res['n_pool']} models of {args.run} "
        f"({args.distance} RBF kernel, bandwidth {res['bandwidth']:.4g}; coverage {res['coverage']:.2f} "
        f"of {res['n_pool']})"
    )
    for i, (mid, name) in enumerate(zip(res["model_ids"], res["names"]), 1):
        size = f", {res['params_b'][i - 1]:g}B" if "params_b" in res else ""
        print(f"  {i:3d}. {name} (model_id {mid}{size})")
    if "total_params_b" in res:
        print(f"total parameters: {res['total_params_b']:g}B of {res['pool_params_b']:g}B in the pool")
    if "accuracy" in res:
        acc, full = res["accuracy"], res["full_pool"]
        print(
            f"test routing accuracy restricted to the portfolio: {_pct(acc['routing_acc'])} (full pool "
            f"{_pct(full['routing_acc'])}); oracle {_pct(acc['oracle'])} (full pool {_pct(full['oracle'])}); "
            f"{acc['n_queries']} queries"
        )
    return 0
