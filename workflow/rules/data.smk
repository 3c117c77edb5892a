# Source adapters -> the canonical data set directory, plus its summary. `data` builds the data sets whose
# source also writes the generator's truth (synthetic: truth.parquet), `data_without_truth` the others.


rule data:
    input:
        data_inputs,
    output:
        data_files("{dataset}"),
        truth=f"results/data/{{dataset}}/{TRUTH_FILE}",
    log:
        "results/logs/data/{dataset}.log",
    benchmark:
        "results/benchmarks/data/{dataset}.tsv"
    wildcard_constraints:
        dataset=one_of([d for d in config["datasets"] if has_truth(d)]),
    params:
        source=lambda w: config["datasets"][w.dataset]["source"],
        json=lambda w: as_json(config["datasets"][w.dataset]["params"]),
        duplicates=config["duplicates"],
    shell:
        "{LOCUS} data {params.source} --out results/data/{wildcards.dataset} "
        "--params {params.json:q} --duplicates {params.duplicates} > {log} 2>&1"


use rule data as data_without_truth with:
    output:
        data_files("{dataset}"),
    wildcard_constraints:
        dataset=one_of([d for d in config["datasets"] if not has_truth(d)]),


rule summary:
    input:
        data_files("{dataset}"),
    output:
        report("results/data/{dataset}/summary.md", caption="../report/data_summary.rst", category="Data"),
    log:
        "results/logs/summary/{dataset}.log",
    benchmark:
        "results/benchmarks/summary/{dataset}.tsv"
    localrule: True
    params:
        label=lambda w: dataset_label(w.dataset),
        duplicates=config["duplicates"],
        checked=check_data,  # the config's checks that need the data set, if it was not there at DAG build
    shell:
        "{LOCUS} summary --data results/data/{wildcards.dataset} --out {output} "
        "--label {params.label:q} --duplicates {params.duplicates} > {log} 2>&1"
