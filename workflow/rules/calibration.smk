# Calibrated correctness probabilities: `calibrate_run` fits a run's map on its validation pairs;
# `calibration_report` compares raw and calibrated probabilities on test (table + reliability diagram).


rule calibrate_run:
    input:
        data=data_files("{dataset}"),
        run=[f"{RUN_DIR}/{name}" for name in ("config.json", "model.safetensors", "scores_val.parquet", "metrics.json")],
    output:
        f"{RUN_DIR}/{_artifacts.calibration_file}",
    log:
        f"results/logs/calibrate/{RUN_DIR.removeprefix('results/runs/')}.log",
    benchmark:
        f"results/benchmarks/calibrate/{RUN_DIR.removeprefix('results/runs/')}.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        data=input_dir("data"),
        run=input_dir("run"),
    shell:
        "{LOCUS} calibrate --run {params.run:q} --data {params.data:q} > {log} 2>&1"


rule calibration_report:
    input:
        **calibration_inputs(),
    output:
        **table("calibration"),
        **figure("reliability"),
    log:
        "results/logs/calibration/report.log",
    benchmark:
        "results/benchmarks/calibration/report.tsv"
    localrule: True
    params:
        runs=input_dirs("metrics"),
        methods=",".join(BY_DATASET_METHODS),
        label=dataset_label(DATASET),
        data=input_dir("data", quote=True),
        bins=int(CAL["bins"]),
        bootstrap=BOOTSTRAP_RESAMPLING,
    shell:
        "{LOCUS} calibration-report --runs {params.runs} --data {params.data} --methods {params.methods} "
        "--data-label {params.label:q} --bins {params.bins} {params.bootstrap} --out {output.tex} "
        "--figure {output.pdf} > {log} 2>&1"
