# Saved run metrics -> LaTeX tables (+ CSV) and figures (+ CSV). Cheap: run on the submit host.


localrules:
    summary,
    routing_table,


rule routing_table:
    input:
        run_metrics(config["table_methods"], config["train_sizes"]),
    output:
        tex=report("results/tables/routing.tex", caption="../report/routing.rst", category="Tables"),
        csv="results/tables/routing.csv",
    params:
        methods=",".join(config["table_methods"]),
        label=config.get("data_label", DATASET),
    log:
        "results/logs/tables/routing.log",
    benchmark:
        "results/benchmarks/tables/routing.tsv"
    shell:
        "{LOCUS} table routing --metrics {input} --out {output.tex} --methods {params.methods} "
        "--data-label {params.label:q} > {log} 2>&1"
