# Routing decisions from calibrated probabilities (locus decisions): selective routing with a risk certified
# on validation by Learn-then-Test, and cost-aware routing (accuracy vs cost, AIQ). Inputs: every
# by_dataset_methods run (every seed) at decisions.train_size (null: the smallest of train_sizes) with its calibration.json (calibrate_run in
# calibration.smk) and the data set (labels; the models' cost column, else params_b; the generator's truth.parquet where
# the source writes one: the exact check of the certified risk). Seconds: submit host.
import shlex

DEC = config["decisions"]
DEC_N = min(config["train_sizes"]) if DEC["train_size"] is None else int(DEC["train_size"])
if DEC_N not in config["train_sizes"]:
    _config_error(
        f"decisions.train_size {DEC_N} must be one of train_sizes {config['train_sizes']} "
        "(the runs of the tables are used); change one of them"
    )
DECISIONS_TARGETS = ["results/tables/selective_routing.tex", "results/tables/aiq.tex"]


localrules:
    selective_routing,
    cost_quality,


def decisions_inputs():
    """The runs' calibration, scores and metrics at decisions.train_size (every seed), and the data set."""
    sizes = [DEC_N]
    truth = {"truth": truth_file(DATASET)} if truth_file(DATASET) else {}
    return {
        "data": data_files(DATASET),
        **truth,
        "calibration": run_files_named(BY_DATASET_METHODS, sizes, _artifacts.calibration_file),
        "scores": [
            f for s in ("val", "test") for f in run_files_named(BY_DATASET_METHODS, sizes, _artifacts.scores_file(s))
        ],
        "metrics": run_metrics(BY_DATASET_METHODS, sizes),
    }


def decisions_runs(wildcards, input):
    return " ".join(shlex.quote(os.path.dirname(m)) for m in input.metrics)


DEC_COMMON = (
    f"--bootstrap-resamples {int(DEC['bootstrap_resamples'])} --bootstrap-seed {int(DEC['bootstrap_seed'])} "
    f"--confidence {float(DEC['confidence'])} --data-label {shlex.quote(dataset_label(DATASET))}"
)


rule selective_routing:
    input:
        **decisions_inputs(),
    output:
        tex=report(
            "results/tables/selective_routing.tex", caption="../report/selective_routing.rst", category="Decisions"
        ),
        csv="results/tables/selective_routing.csv",
        pdf="results/figures/risk_coverage.pdf",
        png=report("results/figures/risk_coverage.png", caption="../report/risk_coverage.rst", category="Decisions"),
        points="results/figures/risk_coverage.csv",
    log:
        "results/logs/decisions/selective_routing.log",
    benchmark:
        "results/benchmarks/decisions/selective_routing.tsv"
    params:
        runs=decisions_runs,
        data=input_dir("data", quote=True),
        options=(
            f"--alphas {','.join(str(float(a)) for a in DEC['alphas'])} --delta {float(DEC['delta'])} "
            f"--fallbacks {shlex.quote(','.join(DEC['fallbacks']))} {DEC_COMMON}"
        ),
    shell:
        "{LOCUS} decisions selective --runs {params.runs} --data {params.data} --table {output.tex} "
        "--figure {output.pdf} {params.options} > {log} 2>&1"


rule cost_quality:
    input:
        **decisions_inputs(),
    output:
        tex=report("results/tables/aiq.tex", caption="../report/aiq.rst", category="Decisions"),
        csv="results/tables/aiq.csv",
        pdf="results/figures/cost_quality.pdf",
        png=report("results/figures/cost_quality.png", caption="../report/cost_quality.rst", category="Decisions"),
        points="results/figures/cost_quality.csv",
    log:
        "results/logs/decisions/cost_quality.log",
    benchmark:
        "results/benchmarks/decisions/cost_quality.tsv"
    params:
        runs=decisions_runs,
        data=input_dir("data", quote=True),
        options=f"--lambdas {int(DEC['lambdas'])} {DEC_COMMON}",
    shell:
        "{LOCUS} decisions cost --runs {params.runs} --data {params.data} --table {output.tex} "
        "--figure {output.pdf} {params.options} > {log} 2>&1"
