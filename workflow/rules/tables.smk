# Saved runs -> LaTeX tables (+ CSV) and the sample-efficiency figure, on the submit host. A table reads its
# methods' runs at every training size and seed and the data set's labels (the paired bootstrap behind every
# comparison, config `bootstrap`); a routing table also the data set's truth.parquet where it has one.


BOOTSTRAP = config["bootstrap"]
# the bootstrap's options (also of the ablation tables and the calibration report), and with the reference
# method every approach is compared to those of `locus table` (quoted for the shell)
BOOTSTRAP_RESAMPLING = (
    f"--bootstrap-resamples {int(BOOTSTRAP['n_resamples'])} --bootstrap-seed {int(BOOTSTRAP['seed'])} "
    f"--confidence {float(BOOTSTRAP['confidence'])}"
)
BOOTSTRAP_OPTIONS = f"--reference-method {shlex.quote(BOOTSTRAP['reference_method'])} {BOOTSTRAP_RESAMPLING}"


def table_inputs(methods, truth=False):
    """What a table reads: the runs' metrics and test scores, the data set, and with `truth` its truth.parquet
    where it has one."""
    inputs = {
        "metrics": run_metrics(methods, config["train_sizes"]),
        "scores": run_files_named(methods, config["train_sizes"], _artifacts.scores_file("test")),
        "data": data_files(DATASET),
    }
    return {**inputs, "truth": truth_file(DATASET)} if truth and truth_file(DATASET) else inputs


def truth_option(wildcards, input):
    """`--truth PATH` when the table rule's inputs hold the data set's truth, else nothing."""
    return f"--truth {shlex.quote(input.truth)}" if "truth" in input.keys() else ""


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
