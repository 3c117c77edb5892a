# One training run per method x encoder x training size x dimension x seed. The run paths are spelled
# here and nowhere else: every later rule file names runs through RUN_DIR, run_dir, run_file,
# run_files_named and run_metrics. Every file of the run directory is a declared output
# (locus.run_artifacts lists them per kind of method), so experiments can depend on embeddings, score
# matrices and checkpoints. Methods that use torch run as `train_run` (a GPU job in the SLURM profile);
# the others (kNN, K-Means) as `train_run_cpu`. Include after common.smk, before every file that reads runs.

# A run directory: one method x encoder x training size x embedding dimension x seed.
RUN_DIR = "results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}"


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


def _train_groups():
    """{rule name: methods} for the configured methods, grouped by whether they use torch."""
    groups = {}
    for m in config["methods"]:
        groups.setdefault("train_run" if _methods.method_class(m).uses_torch else "train_run_cpu", []).append(m)
    return groups


for _rule_name, _group in _train_groups().items():
    _files = _artifacts.run_files(_group[0])
    # every method of one group writes the same files (same kind); checked here, not assumed
    for _m in _group:
        if _artifacts.run_files(_m) != _files:
            _config_error(f"methods {_group[0]!r} and {_m!r} write different run files; give them their own rule")

    rule:
        name:
            _rule_name
        input:
            data=data_files("{dataset}"),
            encodings=encodings("{dataset}", "{encoder}"),
        output:
            **{name.replace(".", "_"): f"{RUN_DIR}/{name}" for name in _files},
        log:
            f"results/logs/train/{RUN_DIR.removeprefix('results/runs/')}.log",
        benchmark:
            f"results/benchmarks/train/{RUN_DIR.removeprefix('results/runs/')}.tsv"
        wildcard_constraints:
            method="|".join(_group),
        # the longest runs first (n = 4,096: priority 4, n = 1,024: 1), so no long run is left to the
        # end alone on one core while the jobs that need both cores wait
        priority: lambda w: int(w.n) // 1024
        threads: config["threads"]
        resources:
            mem_mb=8000,
            runtime=120,
        params:
            json=lambda w: as_json(config["methods"][w.method]["params"] or {}),
            sampling=config["sampling"],
            duplicates=config["duplicates"],
            out=lambda w: RUN_DIR.format(**dict(w.items())),
        shell:
            "{LOCUS} train --method {wildcards.method} --data results/data/{wildcards.dataset} "
            "--encodings {input.encodings} --encoder {wildcards.encoder} --train-size {wildcards.n} --dim {wildcards.dim} "
            "--seed {wildcards.seed} --params {params.json:q} --sampling {params.sampling} "
            "--duplicates {params.duplicates} --threads {threads} --out {params.out} > {log} 2>&1"
