# Saved run metrics -> LaTeX tables (+ CSV) and figures (+ CSV). Cheap: run on the submit host.
# Tables also read each run's per-query test scores and the data set's labels: the paired bootstrap
# over test queries (config `bootstrap`) that gives every comparison its confidence interval. The routing
# tables of a synthetic data set also read its truth.parquet (`--truth`): expected routing accuracies.
import os


localrules:
    summary,
    routing_table,
    routing_by_dataset_table,
    correctness_by_dataset_table,
    sample_efficiency_figure,


BOOTSTRAP = config["bootstrap"]
for _where, _list in (("table_methods", TABLE_METHODS), ("by_dataset_methods", BY_DATASET_METHODS)):
    if BOOTSTRAP["reference_method"] not in _list:
        _config_error(
            f"bootstrap.reference_method {BOOTSTRAP['reference_method']!r} is not among {_where} "
            f"{_list}: every table compares its methods to it"
        )
# the options of `locus table` that set the bootstrap (quoted for the shell)
BOOTSTRAP_OPTIONS = (
    f"--reference-method {shlex.quote(BOOTSTRAP['reference_method'])} "
    f"--bootstrap-resamples {int(BOOTSTRAP['n_resamples'])} --bootstrap-seed {int(BOOTSTRAP['seed'])} "
    f"--confidence {float(BOOTSTRAP['confidence'])}"
)


def table_inputs(methods, truth=False):
    """What a table reads: the runs' metrics and test scores, and the data set (labels of the bootstrap);
    with `truth` (routing tables) also the data set's truth.parquet where it has one (synthetic)."""
    inputs = {
        "metrics": run_metrics(methods, config["train_sizes"]),
        "scores": run_files_named(methods, config["train_sizes"], _artifacts.scores_file("test")),
        "data": data_files(DATASET),
    }
    if truth and truth_file(DATASET):
        inputs["truth"] = truth_file(DATASET)
    return inputs


def truth_option(wildcards, input):
    """`--truth PATH` when the table rule's inputs hold the data set's truth, else nothing."""
    return f"--truth {shlex.quote(input.truth)}" if "truth" in input.keys() else ""


def table_data_dir(wildcards, input):
    """The data set directory of a table rule's `data` input."""
    return os.path.dirname(input.data[0])


rule routing_table:
    input:
        **table_inputs(TABLE_METHODS, truth=True),
    output:
        tex=report("results/tables/routing.tex", caption="../report/routing.rst", category="Tables"),
        csv="results/tables/routing.csv",
    log:
        "results/logs/tables/routing.log",
    benchmark:
        "results/benchmarks/tables/routing.tsv"
    params:
        methods=",".join(TABLE_METHODS),
        label=dataset_label(DATASET),
        data=table_data_dir,
        bootstrap=BOOTSTRAP_OPTIONS,
        truth=truth_option,
    shell:
        "{LOCUS} table routing --metrics {input.metrics} --data {params.data:q} --out {output.tex} "
        "--methods {params.methods} --data-label {params.label:q} {params.bootstrap} {params.truth} > {log} 2>&1"


for _kind in ("routing", "correctness"):

    rule:
        name:
            f"{_kind}_by_dataset_table"
        input:
            **table_inputs(BY_DATASET_METHODS, truth=_kind == "routing"),
        output:
            tex=report(
                f"results/tables/{_kind}_by_dataset.tex",
                caption=f"../report/{_kind}_by_dataset.rst",
                category="Tables",
            ),
            csv=f"results/tables/{_kind}_by_dataset.csv",
        log:
            f"results/logs/tables/{_kind}_by_dataset.log",
        benchmark:
            f"results/benchmarks/tables/{_kind}_by_dataset.tsv"
        params:
            kind=_kind,
            methods=",".join(BY_DATASET_METHODS),
            label=dataset_label(DATASET),
            data=table_data_dir,
            bootstrap=BOOTSTRAP_OPTIONS,
            truth=truth_option,
        shell:
            "{LOCUS} table {params.kind}-by-dataset --metrics {input.metrics} --data {params.data:q} "
            "--out {output.tex} --methods {params.methods} --data-label {params.label:q} {params.bootstrap} "
            "{params.truth} > {log} 2>&1"


rule sample_efficiency_figure:
    input:
        metrics=run_metrics(SE["methods"], SE["train_sizes"], seeds=SE.get("seeds")),
        scores=run_files_named(SE["methods"], SE["train_sizes"], "scores_test.parquet", seeds=SE.get("seeds")),
        data=data_files(DATASET),
    output:
        pdf="results/figures/train_sample_eff.pdf",
        png=report(
            "results/figures/train_sample_eff.png",
            caption="../report/train_sample_eff.rst",
            category="Figures",
        ),
        csv="results/figures/train_sample_eff.csv",
        json="results/figures/train_sample_eff.json",
    log:
        "results/logs/figures/train_sample_eff.log",
    benchmark:
        "results/benchmarks/figures/train_sample_eff.tsv"
    params:
        reference=SE["reference_method"],
        label=dataset_label(DATASET),
        data=table_data_dir,
        resamples=int(BOOTSTRAP["n_resamples"]),
        seed=int(BOOTSTRAP["seed"]),
    shell:
        "{LOCUS} figure sample-efficiency --metrics {input.metrics} --data {params.data:q} --out {output.pdf} "
        "--reference-method {params.reference} --data-label {params.label:q} "
        "--bootstrap-resamples {params.resamples} --bootstrap-seed {params.seed} > {log} 2>&1"
