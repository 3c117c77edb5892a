# Embedding views (paper sections 4.3-4.4, appendix E): hypothetical embeddings, t-SNE of query encodings
# and of re-embedded models, convergence of one model's embedding. Each reads the LOCUS run at the geometry
# reference size (geometry_run_file), the data set and its encodings, and writes PDF + PNG + CSV; no
# training (one forward pass of the run's encoder per evaluation set; training-split queries only).
# Settings: `geometry.views` in config/config.yaml; every draw and t-SNE is seeded by `geometry.views.seed`.

VIEWS_NAMES = (
    "hypothetical_model_embedding",
    "query_encodings_tsne",
    "embedding_robustness_tsne",
    "overlap_convergence",
    "anchor_size_convergence",
    "perf_vs_size_and_overlap",
)
VIEWS_TARGETS = [f"results/figures/{name}.pdf" for name in VIEWS_NAMES]

VIEWS = GEO["views"]
for _key in ("sizes", "evalset_sizes"):
    if not [n for n in VIEWS[_key] if n <= GEO_N]:
        _config_error(
            f"geometry.views.{_key} {VIEWS[_key]}: all exceed geometry.reference_train_size {GEO_N}; "
            f"the subsampled sets are drawn from the reference set"
        )

_models_file = Path(f"results/data/{DATASET}/models.parquet")
if _models_file.is_file():  # names are checked when the data set exists (else by the command, exit 2)
    import pyarrow.parquet as _pq
    from locus.geometry.views import resolve_model as _resolve_model

    try:
        _names = dict(enumerate(map(str, _pq.read_table(_models_file, columns=["name"]).column(0).to_pylist())))
    except Exception:  # an unreadable file is rebuilt by the data rule and refused by the loader
        _names = None
    for _where, _list in (
        ("robustness_models", VIEWS["robustness_models"]),
        ("convergence_model", [VIEWS["convergence_model"]]),
    ):
        for _m in _list if _names else []:
            try:
                _resolve_model(_m, _names, f"geometry.views.{_where}")
            except LocusError as _exc:
                _config_error(f"{_exc} ({_models_file})")


def _numbers(values):
    return ",".join(str(v) for v in values)


def views_inputs(run=True):
    """What a view reads: the LOCUS reference run (checkpoint, embeddings, reference sets), the data set and
    its encodings."""
    inputs = {"data": data_files(DATASET), "encodings": encodings(DATASET, ENCODER)}
    if run:
        inputs.update(
            {
                name.replace(".", "_"): geometry_run_file("locus", name)
                for name in ("model.safetensors", "config.json", "embeddings.parquet", "train_pairs.parquet")
            }
        )
    return inputs


def views_outputs(name):
    return {
        "pdf": report(f"results/figures/{name}.pdf", caption=f"../report/{name}.rst", category="Geometry"),
        "png": f"results/figures/{name}.png",
        "csv": f"results/figures/{name}.csv",
    }


# the options every view passes: where the run and data are, the seed and the data set's label
VIEWS_COMMON = (
    f"--data results/data/{DATASET} --encodings {shlex.quote(encodings(DATASET, ENCODER))} "
    f"--seed {int(VIEWS['seed'])} --data-label {shlex.quote(dataset_label(DATASET))}"
)
VIEWS_RUN = f"--run {shlex.quote(geometry_run_dir('locus'))}"


rule hypothetical_model_embedding:
    input:
        **views_inputs(),
    output:
        **views_outputs("hypothetical_model_embedding"),
    log:
        "results/logs/geometry/hypothetical_model_embedding.log",
    benchmark:
        "results/benchmarks/geometry/hypothetical_model_embedding.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        options=f"{VIEWS_RUN} {VIEWS_COMMON} --sizes {_numbers(VIEWS['hypothetical_sizes'])} "
        f"--ks {_numbers(VIEWS['recall_at'])} --repeats {int(VIEWS['hypothetical_repeats'])}",
    shell:
        "{LOCUS} views hypothetical {params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"


# one panel per encoder the run builds encodings for anyway: the configured one, then the encoder ablation's
TSNE_ENCODERS = list(dict.fromkeys([ENCODER, *ABL["encoders"]]))


rule query_encodings_tsne:
    input:
        data=data_files(DATASET),
        encodings=[encodings(DATASET, e) for e in TSNE_ENCODERS],
    output:
        **views_outputs("query_encodings_tsne"),
    log:
        "results/logs/geometry/query_encodings_tsne.log",
    benchmark:
        "results/benchmarks/geometry/query_encodings_tsne.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        options=(
            f"--data results/data/{DATASET} --encodings "
            f"{' '.join(shlex.quote(encodings(DATASET, e)) for e in TSNE_ENCODERS)} "
            f"--seed {int(VIEWS['seed'])} --data-label {shlex.quote(dataset_label(DATASET))} "
            f"--max-queries {int(VIEWS['tsne_queries'])} --perplexity {float(VIEWS['tsne_perplexity'])}"
        ),
    shell:
        "{LOCUS} views query-tsne {params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"


rule embedding_robustness_tsne:
    input:
        **views_inputs(),
    output:
        **views_outputs("embedding_robustness_tsne"),
    log:
        "results/logs/geometry/embedding_robustness_tsne.log",
    benchmark:
        "results/benchmarks/geometry/embedding_robustness_tsne.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        options=f"{VIEWS_RUN} {VIEWS_COMMON} --models {shlex.quote(','.join(VIEWS['robustness_models']))} "
        f"--overlaps {_numbers(VIEWS['overlaps'])} --sizes {_numbers(VIEWS['sizes'])} "
        f"--repeats {int(VIEWS['robustness_repeats'])} --perplexity {float(VIEWS['tsne_perplexity'])}",
    shell:
        "{LOCUS} views robustness-tsne {params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"


rule perf_vs_size_and_overlap:
    input:
        **views_inputs(),
    output:
        **views_outputs("perf_vs_size_and_overlap"),
    log:
        "results/logs/geometry/perf_vs_size_and_overlap.log",
    benchmark:
        "results/benchmarks/geometry/perf_vs_size_and_overlap.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        options=f"{VIEWS_RUN} {VIEWS_COMMON} --sizes {_numbers(VIEWS['evalset_sizes'])} "
        f"--overlaps {_numbers(VIEWS['evalset_overlaps'])} --repeats {int(VIEWS['evalset_repeats'])}",
    shell:
        "{LOCUS} views perf-vs-evalset {params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"


for _name, _kind, _grid in (
    ("overlap_convergence", "overlap", f"--overlaps {_numbers(VIEWS['overlaps'])}"),
    ("anchor_size_convergence", "size", f"--sizes {_numbers(VIEWS['sizes'])}"),
):

    rule:
        name:
            _name
        input:
            **views_inputs(),
        output:
            **views_outputs(_name),
        log:
            f"results/logs/geometry/{_name}.log",
        benchmark:
            f"results/benchmarks/geometry/{_name}.tsv"
        threads: 2
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            options=f"{VIEWS_RUN} {VIEWS_COMMON} --model {shlex.quote(VIEWS['convergence_model'])} {_grid} "
            f"--repeats {int(VIEWS['repeats'])} --neighbours {int(VIEWS['neighbours'])}",
            kind=f"{_kind}-convergence",
        shell:
            "{LOCUS} views {params.kind} {params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"
