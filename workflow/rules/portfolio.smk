# Model portfolio selection (paper §4.4, appendix E.3): routing accuracy restricted to a portfolio chosen
# from LOCUS's model embeddings (k-center, k-medoids, coverage-greedy under a parameter budget) against
# random subsets. Inputs: LOCUS's reference run (GEO_N evaluations per model, seed GEO_SEED:
# geometry_run_file in geometry.smk) and the data set (test labels, params_b). Seconds: run on the submit host.
import shlex

PORTFOLIO_TARGETS = ["results/figures/model_portfolio.pdf"]

PF = GEO["portfolio"]
if "locus" not in config["methods"]:
    _config_error(
        "geometry.portfolio: the portfolio figure selects from LOCUS's embeddings; add locus under " "`methods`"
    )


localrules:
    model_portfolio_figure,


rule model_portfolio_figure:
    input:
        runs=[
            geometry_run_file("locus", f)
            for f in ("embeddings.parquet", "scores_test.parquet", "config.json", "metrics.json")
        ],
        data=data_files(DATASET),
    output:
        pdf="results/figures/model_portfolio.pdf",
        png=report("results/figures/model_portfolio.png", caption="../report/model_portfolio.rst", category="Geometry"),
        csv="results/figures/model_portfolio.csv",
        json="results/figures/model_portfolio.json",
    log:
        "results/logs/geometry/model_portfolio.log",
    benchmark:
        "results/benchmarks/geometry/model_portfolio.tsv"
    params:
        run=input_dir("runs", quote=True),
        data=input_dir("data", quote=True),
        label=shlex.quote(dataset_label(DATASET)),
        options=(
            ("" if PF["max_k"] is None else f"--max-k {int(PF['max_k'])} ")
            + f"--budget-points {int(PF['budget_points'])} --trials {int(PF['trials'])} "
            f"--seed {int(PF['seed'])} --distance {PF['distance']} --max-iter {int(PF['max_iter'])}"
        ),
    shell:
        "{LOCUS} portfolio --run {params.run} --data {params.data} --data-label {params.label} "
        "{params.options} --figure {output.pdf} > {log} 2>&1"
