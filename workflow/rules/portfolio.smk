# Model portfolio selection (paper §4.4, appendix E.3): routing accuracy of a portfolio chosen from LOCUS's
# model embeddings against random subsets. Settings: `geometry.portfolio`.


rule model_portfolio_figure:
    input:
        runs=[geometry_run_file("locus", f) for f in PORTFOLIO_FILES],
        data=data_files(DATASET),
    output:
        **figure("model_portfolio", "Geometry", "json"),
    log:
        "results/logs/geometry/model_portfolio.log",
    benchmark:
        "results/benchmarks/geometry/model_portfolio.tsv"
    localrule: True
    params:
        run=input_dir("runs", quote=True),
        data=input_dir("data", quote=True),
        label=shlex.quote(dataset_label(DATASET)),
        options=portfolio_options(),
    shell:
        "{LOCUS} portfolio --run {params.run} --data {params.data} --data-label {params.label} "
        "{params.options} --figure {output.pdf} > {log} 2>&1"


use rule model_portfolio_figure as model_portfolio_figure_seed with:
    input:
        runs=lambda w: [geometry_run_file("locus", f, int(w.seed)) for f in PORTFOLIO_FILES],
        data=data_files(DATASET),
    output:
        **seed_figure("model_portfolio", "json"),
    log:
        seed_log("logs", "model_portfolio"),
    benchmark:
        seed_log("benchmarks", "model_portfolio")
