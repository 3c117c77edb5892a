# Training runs. A run directory holds one method x encoder x training size x embedding dimension x seed; its
# paths are spelled here and nowhere else (RUN_DIR, run_dir, run_file, run_files_named, run_metrics), and
# every file of it is a declared output (locus.run_artifacts), so rules can depend on any of them.
# `train_run` is the one `locus train` rule (methods that use torch: a GPU job in the SLURM profile). Its
# variants, `use rule train_run as ... with:`, give another run directory and the options that differ:
# `train_run_cpu` (kNN, K-Means) here, the experiments' own runs in figures.smk, onboarding.smk and
# regeneration.smk (locus_train: LOCUS at its configured parameters).
RUN_DIR = "results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}"
TRAIN_RULES = _wc.train_rules(config)  # {rule name: the methods it trains}


def run_dir(dataset, encoder, method, n, seed):
    return RUN_DIR.format(
        dataset=dataset, encoder=encoder, method=method, n=n, dim=config["methods"][method]["dim"], seed=seed
    )


def run_file(dataset, encoder, method, n, seed, name):
    """One artefact of a run (see locus.run_artifacts for the files of each kind of method)."""
    return f"{run_dir(dataset, encoder, method, n, seed)}/{name}"


def run_files_named(methods, sizes, name, seeds=None, dataset=None, encoder=None):
    """The file `name` (e.g. scores_test.parquet) of every run of `methods` x training `sizes` x `seeds`
    (default: the top-level `seeds`), at the configured data set and encoder unless given."""
    return [
        run_file(dataset or DATASET, encoder or ENCODER, m, n, s, name)
        for m in methods
        for n in sizes
        for s in (config["seeds"] if seeds is None else seeds)
    ]


def run_metrics(methods, sizes, seeds=None, dataset=None, encoder=None):
    """The metrics.json of the same runs as run_files_named(methods, sizes, ..., seeds)."""
    return run_files_named(methods, sizes, "metrics.json", seeds, dataset, encoder)


def run_named(directory, names):
    """Files `names` of the run `directory`, keyed as rule inputs or outputs (metrics.json: metrics_json)."""
    return {name.replace(".", "_"): f"{directory}/{name}" for name in names}


def run_outputs(directory, method):
    """Every file a run of `method` writes under `directory` (locus.run_artifacts)."""
    return run_named(directory, _artifacts.run_files(method))


# what re-embedding models with a run's encoder reads: its checkpoint, model embeddings and training pairs,
# the data set and its encodings (views.smk, regeneration.smk)
EMBEDDER_FILES = ("model.safetensors", "config.json", "embeddings.parquet", "train_pairs.parquet")


def embedder_inputs(directory):
    return {
        **run_named(directory, EMBEDDER_FILES),
        "data": data_files(DATASET),
        "encodings": encodings(DATASET, ENCODER),
    }


def output_dir(wildcards, output):
    """A params function: the run directory, that of the rule's first output."""
    return os.path.dirname(output[0])


def locus_train(**params):
    """The params of a `train_run` variant that trains LOCUS at its configured parameters, with `params`."""
    locus = config["methods"]["locus"]
    return {"method": "locus", "encoder": "", "dim": locus["dim"], "json": as_json(locus["params"] or {}), **params}


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
