# Time complexity of LOCUS (paper appendix G): embedding and prediction time on random inputs of the paper's
# shape (no data or runs); it takes `time_complexity.threads` cores, so on 2 cores nothing runs beside it.
# The precision effect: the tables' LOCUS runs re-scored in float32 and bfloat16.
TC = config["time_complexity"]
PE = config["precision_effect"]


rule time_complexity_figure:
    output:
        **figure("time_complexity", "Timing"),
    log:
        "results/logs/timing/time_complexity.log",
    benchmark:
        "results/benchmarks/timing/time_complexity.tsv"
    threads: int(TC["threads"])
    resources:
        mem_mb=4000,
        runtime=15,
    params:
        pools=",".join(str(int(v)) for v in TC["pool_sizes"]),
        evals=",".join(str(int(v)) for v in TC["eval_sizes"]),
        queries=",".join(str(int(v)) for v in TC["query_sizes"]),
        repeat=int(TC["repeat"]),
        device="" if TC["device"] == "auto" else f"--device {TC['device']}",
        precisions=",".join(TC["precisions"]),
        bf16=TC["bfloat16_on_cpu"],
        json=as_json({**(config["methods"]["locus"]["params"] or {}), "dim": config["methods"]["locus"]["dim"]}),
    shell:
        "{LOCUS} bench --time-complexity {output.pdf} --pool-sizes {params.pools} --eval-sizes {params.evals} "
        "--query-sizes {params.queries} --repeat {params.repeat} {params.device} --threads {threads} "
        "--precision {params.precisions} --bfloat16-on-cpu {params.bf16} --params {params.json:q} > {log} 2>&1"


def precision_effect_runs(name):
    """File `name` of the LOCUS runs re-scored: the tables' runs at precision_effect.train_sizes (every seed)
    and the geometry reference run."""
    runs = run_files_named(["locus"], PE["train_sizes"], name)
    return runs + [f for f in [geometry_run_file("locus", name)] if f not in runs]


# What bfloat16 costs: the runs' models re-embedded and the test split re-scored in float32 and bfloat16.
rule precision_effect_table:
    input:
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
        runs=[f for name in _artifacts.run_files("locus") for f in precision_effect_runs(name)],
        metrics=precision_effect_runs("metrics.json"),
    output:
        **table("precision_effect"),
    log:
        "results/logs/timing/precision_effect.log",
    benchmark:
        "results/benchmarks/timing/precision_effect.tsv"
    threads: int(PE["threads"])
    resources:
        mem_mb=4000,
        runtime=15,
    params:
        runs=input_dirs("metrics"),
        label=dataset_label(DATASET),
        data=input_dir("data"),
    shell:
        "{LOCUS} bench --precision-effect {output.tex} --runs {params.runs} --data {params.data} "
        "--encodings {input.encodings} --data-label {params.label:q} --threads {threads} > {log} 2>&1"
