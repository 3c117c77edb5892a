# Source adapters -> the canonical data set directory, plus its summary.


def _data_inputs(wildcards):
    """The csv source's input file is tracked by Snakemake (edits trigger a rebuild)."""
    entry = config["datasets"][wildcards.dataset]
    if entry["source"] == "csv" and "path" in entry.get("params", {}):
        return [entry["params"]["path"]]
    return []


rule data:
    input:
        _data_inputs,
    output:
        data_files("{dataset}"),
    params:
        source=lambda w: config["datasets"][w.dataset]["source"],
        json=lambda w: as_json(config["datasets"][w.dataset].get("params", {})),
        duplicates=config.get("duplicates", "last"),
    log:
        "results/logs/data/{dataset}.log",
    benchmark:
        "results/benchmarks/data/{dataset}.tsv"
    shell:
        "{LOCUS} data {params.source} --out results/data/{wildcards.dataset} "
        "--params {params.json:q} --duplicates {params.duplicates} > {log} 2>&1"


rule summary:
    input:
        data_files("{dataset}"),
    output:
        report(
            "results/data/{dataset}/summary.md",
            caption="../report/data_summary.rst",
            category="Data",
        ),
    params:
        label=lambda w: dataset_label(w.dataset),
        duplicates=config.get("duplicates", "last"),
    log:
        "results/logs/summary/{dataset}.log",
    benchmark:
        "results/benchmarks/summary/{dataset}.tsv"
    shell:
        "{LOCUS} summary --data results/data/{wildcards.dataset} --out {output} "
        "--label {params.label:q} --duplicates {params.duplicates} > {log} 2>&1"
