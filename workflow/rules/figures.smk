# Figures that are not built from the tables' runs.
# Time to accuracy: LOCUS trained once per recipe (`paper`, `fast`) on the same data, training size and
# seed, into its own run directories (so the timed runs are never shared with the tables' runs), then
# validation hit@1 against wall-clock seconds. Not in `rule all` (a `paper` run is long on a CPU).

TTA = config["time_to_accuracy"]
if TTA["reference"] not in TTA["recipes"]:
    _config_error(
        f"time_to_accuracy.reference {TTA['reference']!r} is not among "
        f"time_to_accuracy.recipes {TTA['recipes']}; add it to the recipes"
    )
TTA_SEEDS = TTA["seeds"]
TTA_DIR = "results/time_to_accuracy/{dataset}/{encoder}/n{n}/s{seed}/{recipe}"


def tta_runs(name="metrics.json"):
    """Every (seed, recipe) run of the time-to-accuracy figure, seeds outer (the benchmarks follow this order)."""
    return [
        f'{TTA_DIR.format(dataset=DATASET, encoder=ENCODER, n=TTA["train_size"], seed=seed, recipe=r)}/{name}'
        for seed in TTA_SEEDS
        for r in TTA["recipes"]
    ]


def tta_benchmarks():
    return [f"results/benchmarks/{Path(d).parent.relative_to('results')}.tsv" for d in tta_runs()]


rule time_to_accuracy_run:
    input:
        data=data_files("{dataset}"),
        encodings=encodings("{dataset}", "{encoder}"),
    output:
        **{name.replace(".", "_"): f"{TTA_DIR}/{name}" for name in _artifacts.run_files("locus")},
    log:
        f"results/logs/{TTA_DIR.removeprefix('results/')}.log",
    benchmark:
        f"results/benchmarks/{TTA_DIR.removeprefix('results/')}.tsv"
    wildcard_constraints:
        recipe="|".join(_RECIPES),
        n=r"\d+",
        seed=r"\d+",
    threads: TTA["threads"]
    resources:
        mem_mb=8000,
        runtime=240,
    params:
        json=lambda w: as_json({**(config["methods"]["locus"]["params"] or {}), "recipe": w.recipe}),
        dim=config["methods"]["locus"]["dim"],
        sampling=config["sampling"],
        duplicates=config["duplicates"],
        out=lambda w: TTA_DIR.format(**dict(w.items())),
    shell:
        "{LOCUS} train --method locus --data results/data/{wildcards.dataset} --encodings {input.encodings} "
        "--train-size {wildcards.n} --dim {params.dim} --seed {wildcards.seed} --params {params.json:q} "
        "--sampling {params.sampling} --duplicates {params.duplicates} --threads {threads} "
        "--out {params.out} > {log} 2>&1"


rule time_to_accuracy_figure:
    input:
        data=data_files(DATASET),
        metrics=tta_runs(),
        logs=tta_runs("log.csv"),
        benchmarks=tta_benchmarks(),
    output:
        pdf="results/figures/time_to_accuracy.pdf",
        png=report("results/figures/time_to_accuracy.png", caption="../report/time_to_accuracy.rst", category="Figures"),
        csv="results/figures/time_to_accuracy.csv",
        json="results/figures/time_to_accuracy.json",
    log:
        "results/logs/figures/time_to_accuracy.log",
    benchmark:
        "results/benchmarks/figures/time_to_accuracy.tsv"
    params:
        runs=lambda w, input: " ".join(str(Path(m).parent) for m in input.metrics),
        reference=TTA["reference"],
        fraction=TTA["target_fraction"],
        label=dataset_label(DATASET),
        data=input_dir("data"),
    shell:
        "{LOCUS} figure time-to-accuracy --runs {params.runs} --benchmarks {input.benchmarks} "
        "--reference-recipe {params.reference} --target-fraction {params.fraction} --out {output.pdf} "
        "--data {params.data} --data-label {params.label:q} > {log} 2>&1"
