# Embedding views (paper sections 4.3-4.4, appendix E) from the LOCUS geometry reference run, no training;
# settings `geometry.views`. `*_seed`: the views the claims ledger reads, at each seed of geometry.extra_seeds.


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
        options=tsne_options(),


use rule hypothetical_model_embedding as embedding_robustness_tsne with:
    output:
        **figure("embedding_robustness_tsne", "Geometry"),
    log:
        "results/logs/geometry/embedding_robustness_tsne.log",
    benchmark:
        "results/benchmarks/geometry/embedding_robustness_tsne.tsv"
    params:
        kind="robustness-tsne",
        options=robustness_options(),


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
