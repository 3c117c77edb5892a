# Training runs: `train_run` is the one `locus train` rule; its variants (`use rule train_run as ... with:`) give
# another run directory and the options that differ. Run paths: rule_helpers.py (docs/architecture.md).


rule train_run:
    input:
        data=data_files("{dataset}"),
        encodings=encodings("{dataset}", "{encoder}"),
    output:
        **run_outputs(RUN_DIR, TRAIN_RULES["train_run"][0]),
    log:
        f"results/logs/train/{RUN_DIR.removeprefix('results/runs/')}.log",
    benchmark:
        f"results/benchmarks/train/{RUN_DIR.removeprefix('results/runs/')}.tsv"
    wildcard_constraints:
        method=one_of(TRAIN_RULES["train_run"]),
    # the longest runs first (n = 4,096: priority 4), so none is left to the end alone on one core
    priority: lambda w: int(w.n) // 1024
    threads: config["threads"]
    resources:
        mem_mb=8000,
        runtime=120,
    params:  # an option a variant may leave out ends with its space
        method=lambda w: w.method,
        data=input_dir("data"),
        encoder=lambda w: f"--encoder {w.encoder} ",
        dim=lambda w: w.dim,
        seed=lambda w: w.seed,
        json=lambda w: as_json(config["methods"][w.method]["params"] or {}),
        hold_out="",
        sampling=config["sampling"],
        duplicates=config["duplicates"],
        out=output_dir,
    shell:
        "{LOCUS} train --method {params.method} --data {params.data} --encodings {input.encodings} "
        "{params.encoder}--train-size {wildcards.n} --dim {params.dim} --seed {params.seed} "
        "--params {params.json:q} {params.hold_out}--sampling {params.sampling} "
        "--duplicates {params.duplicates} --threads {threads} --out {params.out} > {log} 2>&1"


if TRAIN_RULES["train_run_cpu"]:

    use rule train_run as train_run_cpu with:
        output:
            **run_outputs(RUN_DIR, TRAIN_RULES["train_run_cpu"][0]),
        wildcard_constraints:
            method=one_of(TRAIN_RULES["train_run_cpu"]),
