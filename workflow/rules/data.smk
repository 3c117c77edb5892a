# Source adapters -> the canonical data set directory, plus its summary.
import re


def _data_inputs(wildcards):
    """The csv source's input file is tracked by Snakemake (edits trigger a rebuild)."""
    entry = config["datasets"][wildcards.dataset]
    if entry["source"] == "csv" and "path" in entry["params"]:
        return [entry["params"]["path"]]
    return []


# One definition, two rules: `data` for the data sets whose source also writes the generator's truth
# (synthetic: truth.parquet, used by the routing tables), `data_without_truth` for the others
# (embedllm, llmrouter, csv). Snakemake outputs cannot depend on a wildcard's value, so the wildcard
# constraints split the data sets between the two.
def _one_of(names):
    """A wildcard constraint matching exactly these names (none: matches nothing)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


for _name, _with_truth in (("data", True), ("data_without_truth", False)):

    rule:
        name:
            _name
        input:
            _data_inputs,
        output:
            data_files("{dataset}"),
            **({"truth": f"results/data/{{dataset}}/{_TRUTH_FILE}"} if _with_truth else {}),
        log:
            "results/logs/data/{dataset}.log",
        benchmark:
            "results/benchmarks/data/{dataset}.tsv"
        wildcard_constraints:
            dataset=_one_of([d for d in config["datasets"] if has_truth(d) == _with_truth]),
        params:
            source=lambda w: config["datasets"][w.dataset]["source"],
            json=lambda w: as_json(config["datasets"][w.dataset]["params"]),
            duplicates=config["duplicates"],
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
    log:
        "results/logs/summary/{dataset}.log",
    benchmark:
        "results/benchmarks/summary/{dataset}.tsv"
    params:
        label=lambda w: dataset_label(w.dataset),
        duplicates=config["duplicates"],
    shell:
        "{LOCUS} summary --data results/data/{wildcards.dataset} --out {output} "
        "--label {params.label:q} --duplicates {params.duplicates} > {log} 2>&1"
