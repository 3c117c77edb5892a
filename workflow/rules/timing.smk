# Time complexity of LOCUS (paper appendix G, fig:time_complexity_locus): embedding time vs evaluations per
# model for several pool sizes, and correctness-prediction time vs unseen queries for the largest pool.
# Random inputs of the paper's shape (d_phi = 768) and the network of the configured LOCUS parameters: no
# data, encodings or runs are needed. `locus bench --time-complexity` does the same without Snakemake.
# It asks for `time_complexity.threads` cores: on the default 2-core run that is the whole machine, so
# Snakemake runs nothing beside it and the timings are clean; with more cores give it more threads.

TC = config["time_complexity"]
PE = config["precision_effect"]
if not set(PE["train_sizes"]) <= set(config["train_sizes"]):
    _config_error(
        f"precision_effect.train_sizes {PE['train_sizes']} must be among train_sizes {config['train_sizes']} "
        "(the runs of the tables are re-scored); drop the others or add them to train_sizes"
    )
if "locus" not in config["methods"]:
    _config_error("precision_effect: re-scores LOCUS's runs; add locus under `methods`")


def _tc_sizes(key):
    return ",".join(str(int(v)) for v in TC[key])


rule time_complexity_figure:
    output:
        pdf="results/figures/time_complexity.pdf",
        png=report("results/figures/time_complexity.png", caption="../report/time_complexity.rst", category="Timing"),
        csv="results/figures/time_complexity.csv",
    log:
        "results/logs/timing/time_complexity.log",
    benchmark:
        "results/benchmarks/timing/time_complexity.tsv"
    threads: int(TC["threads"])
    resources:
        mem_mb=4000,
        runtime=15,
    params:
        pools=_tc_sizes("pool_sizes"),
        evals=_tc_sizes("eval_sizes"),
        queries=_tc_sizes("query_sizes"),
        repeat=int(TC["repeat"]),
        device="" if TC["device"] == "auto" else f"--device {TC['device']}",
        precisions=",".join(TC["precisions"]),
        bf16=TC["bfloat16_on_cpu"],
        json=as_json({**(config["methods"]["locus"]["params"] or {}), "dim": config["methods"]["locus"]["dim"]}),
    shell:
        "{LOCUS} bench --time-complexity {output.pdf} --pool-sizes {params.pools} --eval-sizes {params.evals} "
        "--query-sizes {params.queries} --repeat {params.repeat} {params.device} --threads {threads} "
        "--precision {params.precisions} --bfloat16-on-cpu {params.bf16} --params {params.json:q} > {log} 2>&1"


def _precision_effect_runs(name):
    """File `name` of the LOCUS runs re-scored: the table runs at precision_effect.train_sizes (every seed)
    and the geometry reference run."""
    runs = run_files_named(["locus"], PE["train_sizes"], name)
    return runs + [f for f in [geometry_run_file("locus", name)] if f not in runs]


# What bfloat16 costs: the runs' models re-embedded and the test split re-scored in float32 and bfloat16.
rule precision_effect_table:
    input:
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
        runs=[f for name in _artifacts.run_files("locus") for f in _precision_effect_runs(name)],
        metrics=_precision_effect_runs("metrics.json"),
    output:
        tex="results/tables/precision_effect.tex",
        csv="results/tables/precision_effect.csv",
    log:
        "results/logs/timing/precision_effect.log",
    benchmark:
        "results/benchmarks/timing/precision_effect.tsv"
    threads: int(PE["threads"])
    resources:
        mem_mb=4000,
        runtime=15,
    params:
        runs=lambda w, input: " ".join(str(Path(m).parent) for m in input.metrics),
        label=dataset_label(DATASET),
        data=input_dir("data"),
    shell:
        "{LOCUS} bench --precision-effect {output.tex} --runs {params.runs} --data {params.data} "
        "--encodings {input.encodings} --data-label {params.label:q} --threads {threads} > {log} 2>&1"
