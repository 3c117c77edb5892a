# Saved run metrics -> LaTeX tables (+ CSV) and figures (+ CSV). Cheap: run on the submit host.


localrules:
    summary,
    routing_table,
    routing_by_dataset_table,
    correctness_by_dataset_table,
    sample_efficiency_figure,


rule routing_table:
    input:
        run_metrics(TABLE_METHODS, config["train_sizes"]),
    output:
        tex=report("results/tables/routing.tex", caption="../report/routing.rst", category="Tables"),
        csv="results/tables/routing.csv",
    params:
        methods=",".join(TABLE_METHODS),
        label=dataset_label(DATASET),
    log:
        "results/logs/tables/routing.log",
    benchmark:
        "results/benchmarks/tables/routing.tsv"
    shell:
        "{LOCUS} table routing --metrics {input} --out {output.tex} --methods {params.methods} "
        "--data-label {params.label:q} > {log} 2>&1"


for _kind in ("routing", "correctness"):

    rule:
        name:
            f"{_kind}_by_dataset_table"
        input:
            run_metrics(BY_DATASET_METHODS, config["train_sizes"]),
        output:
            tex=report(
                f"results/tables/{_kind}_by_dataset.tex",
                caption=f"../report/{_kind}_by_dataset.rst",
                category="Tables",
            ),
            csv=f"results/tables/{_kind}_by_dataset.csv",
        params:
            kind=_kind,
            methods=",".join(BY_DATASET_METHODS),
            label=dataset_label(DATASET),
        log:
            f"results/logs/tables/{_kind}_by_dataset.log",
        benchmark:
            f"results/benchmarks/tables/{_kind}_by_dataset.tsv"
        shell:
            "{LOCUS} table {params.kind}-by-dataset --metrics {input} --out {output.tex} "
            "--methods {params.methods} --data-label {params.label:q} > {log} 2>&1"


rule sample_efficiency_figure:
    input:
        run_metrics(
            SE["methods"],
            SE["train_sizes"],
            seeds=SE.get("seeds"),
        ),
    output:
        pdf="results/figures/train_sample_eff.pdf",
        png=report(
            "results/figures/train_sample_eff.png",
            caption="../report/train_sample_eff.rst",
            category="Figures",
        ),
        csv="results/figures/train_sample_eff.csv",
        json="results/figures/train_sample_eff.json",
    params:
        reference=SE.get("reference_method", "locus"),
        label=dataset_label(DATASET),
    log:
        "results/logs/figures/train_sample_eff.log",
    benchmark:
        "results/benchmarks/figures/train_sample_eff.tsv"
    shell:
        "{LOCUS} figure sample-efficiency --metrics {input} --out {output.pdf} "
        "--reference-method {params.reference} --data-label {params.label:q} > {log} 2>&1"
