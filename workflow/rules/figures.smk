# Time to accuracy: LOCUS trained once per recipe (`paper`, `fast`) into its own run directories, then
# validation hit@1 against wall-clock seconds. Not in `rule all` (a `paper` run is long on a CPU).
TTA = config["time_to_accuracy"]
TTA_DIR = "results/time_to_accuracy/{dataset}/{encoder}/n{n}/s{seed}/{recipe}"


def tta_runs(name="metrics.json"):
    """Every (seed, recipe) run of the figure, seeds outer (the benchmarks follow this order)."""
    return [
        f'{TTA_DIR.format(dataset=DATASET, encoder=ENCODER, n=TTA["train_size"], seed=seed, recipe=r)}/{name}'
        for seed in TTA["seeds"]
        for r in TTA["recipes"]
    ]


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
        benchmarks=[f"results/benchmarks/{Path(m).parent.relative_to('results')}.tsv" for m in tta_runs()],
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
