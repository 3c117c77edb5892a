# Routing decisions from calibrated probabilities (locus decisions): selective routing with a risk certified
# by Learn-then-Test, and cost-aware routing (accuracy vs cost, AIQ), for every by_dataset_methods run at
# decisions.train_size with its calibration.json (calibration.smk). Seconds: the submit host.
DEC = config["decisions"]
DEC_N = _wc.train_size(config, "decisions")
DECISIONS_TARGETS = ["results/tables/selective_routing.tex", "results/tables/aiq.tex"]
DEC_COMMON = (
    f"--bootstrap-resamples {int(DEC['bootstrap_resamples'])} --bootstrap-seed {int(DEC['bootstrap_seed'])} "
    f"--confidence {float(DEC['confidence'])} --data-label {shlex.quote(dataset_label(DATASET))}"
)


def decisions_inputs():
    """The runs' calibration, scores and metrics at decisions.train_size (every seed), and the data set."""
    runs = lambda name: run_files_named(BY_DATASET_METHODS, [DEC_N], name)
    return {
        "data": data_files(DATASET),
        **({"truth": truth_file(DATASET)} if truth_file(DATASET) else {}),
        "calibration": runs(_artifacts.calibration_file),
        "scores": runs(_artifacts.scores_file("val")) + runs(_artifacts.scores_file("test")),
        "metrics": runs("metrics.json"),
    }


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
        options=(
            f"--alphas {','.join(str(float(a)) for a in DEC['alphas'])} --delta {float(DEC['delta'])} "
            f"--fallbacks {shlex.quote(','.join(DEC['fallbacks']))} {DEC_COMMON}"
        ),
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
