# Time complexity of LOCUS (paper appendix G) on random inputs (`time_complexity.threads` cores), and the
# precision effect: the tables' LOCUS runs re-embedded and re-scored in float32 and bfloat16.


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
        **time_complexity_params(),
    shell:
        "{LOCUS} bench --time-complexity {output.pdf} --pool-sizes {params.pools} --eval-sizes {params.evals} "
        "--query-sizes {params.queries} --repeat {params.repeat} {params.device} --threads {threads} "
        "--precision {params.precisions} --bfloat16-on-cpu {params.bf16} --params {params.json:q} > {log} 2>&1"


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
