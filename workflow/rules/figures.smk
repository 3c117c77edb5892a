# Time to accuracy: LOCUS trained once per recipe (`paper`, `fast`), then validation hit@1 against wall-clock
# seconds. Not in `rule all` (a `paper` run is long on a CPU).


use rule train_run as time_to_accuracy_run with:
    output:
        **run_outputs(TTA_DIR, "locus"),
    log:
        f"results/logs/{TTA_DIR.removeprefix('results/')}.log",
    benchmark:
        f"results/benchmarks/{TTA_DIR.removeprefix('results/')}.tsv"
    wildcard_constraints:
        recipe="|".join(_RECIPES),
    priority: 0
    threads: TTA["threads"]
    resources:
        mem_mb=8000,
        runtime=240,
    params:
        **locus_train(json=lambda w: as_json({**(config["methods"]["locus"]["params"] or {}), "recipe": w.recipe})),


rule time_to_accuracy_figure:
    input:
        data=data_files(DATASET),
        metrics=tta_runs(),
        logs=tta_runs("log.csv"),
        benchmarks=tta_benchmarks(),
    output:
        **figure("time_to_accuracy", "Figures", "json"),
    log:
        "results/logs/figures/time_to_accuracy.log",
    benchmark:
        "results/benchmarks/figures/time_to_accuracy.tsv"
    params:
        runs=input_dirs("metrics"),
        reference=TTA["reference"],
        fraction=TTA["target_fraction"],
        label=dataset_label(DATASET),
        data=input_dir("data"),
    shell:
        "{LOCUS} figure time-to-accuracy --runs {params.runs} --benchmarks {input.benchmarks} "
        "--reference-recipe {params.reference} --target-fraction {params.fraction} --out {output.pdf} "
        "--data {params.data} --data-label {params.label:q} > {log} 2>&1"
