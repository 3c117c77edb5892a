# Saved runs -> LaTeX tables (+ CSV) and the sample-efficiency figure, on the submit host (paired bootstrap:
# config `bootstrap`; a routing table also reads the data set's truth.parquet where it has one).


rule routing_table:
    input:
        **table_inputs(TABLE_METHODS, truth=True),
    output:
        **table("routing", "Tables"),
    log:
        "results/logs/tables/routing.log",
    benchmark:
        "results/benchmarks/tables/routing.tsv"
    localrule: True
    params:
        kind="routing",
        methods=",".join(TABLE_METHODS),
        label=dataset_label(DATASET),
        data=input_dir("data"),
        bootstrap=BOOTSTRAP_OPTIONS,
        truth=truth_option,
    shell:
        "{LOCUS} table {params.kind} --metrics {input.metrics} --data {params.data:q} --out {output.tex} "
        "--methods {params.methods} --data-label {params.label:q} {params.bootstrap} {params.truth} > {log} 2>&1"


use rule routing_table as routing_by_dataset_table with:
    input:
        **table_inputs(BY_DATASET_METHODS, truth=True),
    output:
        **table("routing_by_dataset", "Tables"),
    log:
        "results/logs/tables/routing_by_dataset.log",
    benchmark:
        "results/benchmarks/tables/routing_by_dataset.tsv"
    localrule: True
    params:
        kind="routing-by-dataset",
        methods=",".join(BY_DATASET_METHODS),


use rule routing_by_dataset_table as correctness_by_dataset_table with:
    input:
        **table_inputs(BY_DATASET_METHODS),
    output:
        **table("correctness_by_dataset", "Tables"),
    log:
        "results/logs/tables/correctness_by_dataset.log",
    benchmark:
        "results/benchmarks/tables/correctness_by_dataset.tsv"
    localrule: True
    params:
        kind="correctness-by-dataset",


rule sample_efficiency_figure:
    input:
        metrics=run_metrics(SE["methods"], SE["train_sizes"], seeds=SE.get("seeds")),
        scores=run_files_named(SE["methods"], SE["train_sizes"], "scores_test.parquet", seeds=SE.get("seeds")),
        data=data_files(DATASET),
    output:
        **figure("train_sample_eff", "Figures", "json"),
    log:
        "results/logs/figures/train_sample_eff.log",
    benchmark:
        "results/benchmarks/figures/train_sample_eff.tsv"
    localrule: True
    params:
        reference=SE["reference_method"],
        label=dataset_label(DATASET),
        data=input_dir("data"),
        resamples=int(BOOTSTRAP["n_resamples"]),
        seed=int(BOOTSTRAP["seed"]),
    shell:
        "{LOCUS} figure sample-efficiency --metrics {input.metrics} --data {params.data:q} --out {output.pdf} "
        "--reference-method {params.reference} --data-label {params.label:q} "
        "--bootstrap-resamples {params.resamples} --bootstrap-seed {params.seed} > {log} 2>&1"
