# Embedding views (paper sections 4.3-4.4, appendix E): hypothetical embeddings, t-SNE of query encodings and
# of re-embedded models, convergence of one model's embedding, from the LOCUS geometry reference run; no
# training. Settings: `geometry.views`; every draw and t-SNE is seeded by `geometry.views.seed`.
VIEWS = GEO["views"]
VIEWS_TARGETS = [
    f"results/figures/{name}.pdf"
    for name in (
        "hypothetical_model_embedding",
        "query_encodings_tsne",
        "embedding_robustness_tsne",
        "overlap_convergence",
        "anchor_size_convergence",
        "perf_vs_size_and_overlap",
    )
]
# one t-SNE panel per encoder the run builds encodings for anyway: the configured one, then the ablation's
TSNE_ENCODERS = list(dict.fromkeys([ENCODER, *ABL["encoders"]]))


def views_data(encoders=(ENCODER,)):
    """The options every view passes: where the data and encodings are, the seed and the data set's label."""
    return (
        f"--data results/data/{DATASET} --encodings {' '.join(shlex.quote(encodings(DATASET, e)) for e in encoders)} "
        f"--seed {int(VIEWS['seed'])} --data-label {shlex.quote(dataset_label(DATASET))}"
    )


VIEWS_RUN = f"--run {shlex.quote(geometry_run_dir('locus'))} {views_data()}"
VIEWS_CONVERGENCE = f"{VIEWS_RUN} --model {shlex.quote(VIEWS['convergence_model'])}"
VIEWS_CONVERGENCE_DRAWS = f"--repeats {int(VIEWS['repeats'])} --neighbours {int(VIEWS['neighbours'])}"


rule hypothetical_model_embedding:
    input:
        **embedder_inputs(geometry_run_dir("locus")),
    output:
        **figure("hypothetical_model_embedding", "Geometry"),
    log:
        "results/logs/geometry/hypothetical_model_embedding.log",
    benchmark:
        "results/benchmarks/geometry/hypothetical_model_embedding.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        kind="hypothetical",
        options=f"{VIEWS_RUN} --sizes {joined(VIEWS['hypothetical_sizes'])} --ks {joined(VIEWS['recall_at'])} "
        f"--repeats {int(VIEWS['hypothetical_repeats'])}",
    shell:
        "{LOCUS} views {params.kind} {params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"


use rule hypothetical_model_embedding as query_encodings_tsne with:
    input:
        data=data_files(DATASET),
        encodings=[encodings(DATASET, e) for e in TSNE_ENCODERS],
    output:
        **figure("query_encodings_tsne", "Geometry"),
    log:
        "results/logs/geometry/query_encodings_tsne.log",
    benchmark:
        "results/benchmarks/geometry/query_encodings_tsne.tsv"
    params:
        kind="query-tsne",
        options=f"{views_data(TSNE_ENCODERS)} --max-queries {int(VIEWS['tsne_queries'])} "
        f"--perplexity {float(VIEWS['tsne_perplexity'])}",


use rule hypothetical_model_embedding as embedding_robustness_tsne with:
    output:
        **figure("embedding_robustness_tsne", "Geometry"),
    log:
        "results/logs/geometry/embedding_robustness_tsne.log",
    benchmark:
        "results/benchmarks/geometry/embedding_robustness_tsne.tsv"
    params:
        kind="robustness-tsne",
        options=f"{VIEWS_RUN} --models {shlex.quote(','.join(VIEWS['robustness_models']))} "
        f"--overlaps {joined(VIEWS['overlaps'])} --sizes {joined(VIEWS['sizes'])} "
        f"--repeats {int(VIEWS['robustness_repeats'])} --perplexity {float(VIEWS['tsne_perplexity'])}",


use rule hypothetical_model_embedding as perf_vs_size_and_overlap with:
    output:
        **figure("perf_vs_size_and_overlap", "Geometry"),
    log:
        "results/logs/geometry/perf_vs_size_and_overlap.log",
    benchmark:
        "results/benchmarks/geometry/perf_vs_size_and_overlap.tsv"
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        kind="perf-vs-evalset",
        options=f"{VIEWS_RUN} --sizes {joined(VIEWS['evalset_sizes'])} "
        f"--overlaps {joined(VIEWS['evalset_overlaps'])} --repeats {int(VIEWS['evalset_repeats'])}",


use rule hypothetical_model_embedding as overlap_convergence with:
    output:
        **figure("overlap_convergence", "Geometry"),
    log:
        "results/logs/geometry/overlap_convergence.log",
    benchmark:
        "results/benchmarks/geometry/overlap_convergence.tsv"
    params:
        kind="overlap-convergence",
        options=f"{VIEWS_CONVERGENCE} --overlaps {joined(VIEWS['overlaps'])} {VIEWS_CONVERGENCE_DRAWS}",


use rule hypothetical_model_embedding as anchor_size_convergence with:
    output:
        **figure("anchor_size_convergence", "Geometry"),
    log:
        "results/logs/geometry/anchor_size_convergence.log",
    benchmark:
        "results/benchmarks/geometry/anchor_size_convergence.tsv"
    params:
        kind="size-convergence",
        options=f"{VIEWS_CONVERGENCE} --sizes {joined(VIEWS['sizes'])} {VIEWS_CONVERGENCE_DRAWS}",
