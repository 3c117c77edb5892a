# Routing decisions from calibrated probabilities (locus decisions): selective routing (Learn-then-Test) and
# cost-aware routing (AIQ), for every by_dataset_methods run at decisions.train_size (calibration.smk).


rule selective_routing:
    input:
        **decisions_inputs(),
    output:
        **table("selective_routing", "Decisions"),
        **figure("risk_coverage", "Decisions"),
    log:
        "results/logs/decisions/selective_routing.log",
    benchmark:
        "results/benchmarks/decisions/selective_routing.tsv"
    localrule: True
    params:
        kind="selective",
        runs=input_dirs("metrics"),
        data=input_dir("data", quote=True),
        options=selective_options(),
    shell:
        "{LOCUS} decisions {params.kind} --runs {params.runs} --data {params.data} --table {output.tex} "
        "--figure {output.pdf} {params.options} > {log} 2>&1"


use rule selective_routing as cost_quality with:
    output:
        **table("aiq", "Decisions"),
        **figure("cost_quality", "Decisions"),
    log:
        "results/logs/decisions/cost_quality.log",
    benchmark:
        "results/benchmarks/decisions/cost_quality.tsv"
    localrule: True
    params:
        kind="cost",
        options=f"--lambdas {int(DEC['lambdas'])} {DEC_COMMON}",
