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


def views_run(seed=GEO_SEED):
    return f"--run {shlex.quote(geometry_run_dir('locus', seed))} {views_data()}"


VIEWS_CONVERGENCE_DRAWS = f"--repeats {int(VIEWS['repeats'])} --neighbours {int(VIEWS['neighbours'])}"


# the options of the views that the claims ledger reads, given the reference run's seed
def hypothetical_options(seed=GEO_SEED):
    return (
        f"{views_run(seed)} --sizes {joined(VIEWS['hypothetical_sizes'])} --ks {joined(VIEWS['recall_at'])} "
        f"--repeats {int(VIEWS['hypothetical_repeats'])}"
    )


def evalset_options(seed=GEO_SEED):
    return (
        f"{views_run(seed)} --sizes {joined(VIEWS['evalset_sizes'])} "
        f"--overlaps {joined(VIEWS['evalset_overlaps'])} --repeats {int(VIEWS['evalset_repeats'])}"
    )


def convergence_options(setting, seed=GEO_SEED):
    """`setting`: overlaps or sizes."""
    return (
        f"{views_run(seed)} --model {shlex.quote(VIEWS['convergence_model'])} --{setting} "
        f"{joined(VIEWS[setting])} {VIEWS_CONVERGENCE_DRAWS}"
    )


VIEWS_RUN = views_run()


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
        options=hypothetical_options(),
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
        options=evalset_options(),


use rule hypothetical_model_embedding as overlap_convergence with:
    output:
        **figure("overlap_convergence", "Geometry"),
    log:
        "results/logs/geometry/overlap_convergence.log",
    benchmark:
        "results/benchmarks/geometry/overlap_convergence.tsv"
    params:
        kind="overlap-convergence",
        options=convergence_options("overlaps"),


use rule hypothetical_model_embedding as anchor_size_convergence with:
    output:
        **figure("anchor_size_convergence", "Geometry"),
    log:
        "results/logs/geometry/anchor_size_convergence.log",
    benchmark:
        "results/benchmarks/geometry/anchor_size_convergence.tsv"
    params:
        kind="size-convergence",
        options=convergence_options("sizes"),


# --- the views the claims ledger reads, at each seed of geometry.extra_seeds (geometry.smk) ---
def seed_run_inputs(w):
    return embedder_inputs(geometry_run_dir("locus", int(w.seed)))


use rule hypothetical_model_embedding as hypothetical_model_embedding_seed with:
    input:
        unpack(seed_run_inputs),
    output:
        **seed_figure("hypothetical_model_embedding"),
    log:
        seed_log("logs", "hypothetical_model_embedding"),
    benchmark:
        seed_log("benchmarks", "hypothetical_model_embedding")
    params:
        options=lambda w: hypothetical_options(int(w.seed)),


use rule perf_vs_size_and_overlap as perf_vs_size_and_overlap_seed with:
    input:
        unpack(seed_run_inputs),
    output:
        **seed_figure("perf_vs_size_and_overlap"),
    log:
        seed_log("logs", "perf_vs_size_and_overlap"),
    benchmark:
        seed_log("benchmarks", "perf_vs_size_and_overlap")
    params:
        options=lambda w: evalset_options(int(w.seed)),


use rule overlap_convergence as overlap_convergence_seed with:
    input:
        unpack(seed_run_inputs),
    output:
        **seed_figure("overlap_convergence"),
    log:
        seed_log("logs", "overlap_convergence"),
    benchmark:
        seed_log("benchmarks", "overlap_convergence")
    params:
        options=lambda w: convergence_options("overlaps", int(w.seed)),


use rule anchor_size_convergence as anchor_size_convergence_seed with:
    input:
        unpack(seed_run_inputs),
    output:
        **seed_figure("anchor_size_convergence"),
    log:
        seed_log("logs", "anchor_size_convergence"),
    benchmark:
        seed_log("benchmarks", "anchor_size_convergence")
    params:
        options=lambda w: convergence_options("sizes", int(w.seed)),
