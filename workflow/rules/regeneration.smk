# Regenerating EmbedLLM embeddings (paper App. H): EmbedLLM over a grid of hidden-layer counts x dims, G_ψ frozen
# and every model's embedding re-learned from perturbed evaluations (LOCUS beside them); heat maps and a t-SNE.


use rule train_run as regeneration_run with:
    output:
        **run_outputs(REG_DIR, "embedllm"),
    log:
        f"results/logs/{REG_DIR.removeprefix('results/')}.log",
    benchmark:
        f"results/benchmarks/{REG_DIR.removeprefix('results/')}.tsv"
    wildcard_constraints:
        layers=r"\d+",
    priority: 0
    params:
        method="embedllm",
        encoder="",
        json=regeneration_json,


rule regeneration_measure:
    input:
        unpack(lambda w: embedder_inputs(REG_DIR.format(**dict(w.items())))),
    output:
        REG_MEASURES,
    log:
        f"results/logs/regeneration/measures/{{dataset}}/{{encoder}}/{REG_CELL}.log",
    benchmark:
        f"results/benchmarks/regeneration/measures/{{dataset}}/{{encoder}}/{REG_CELL}.tsv"
    wildcard_constraints:
        layers=r"\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        run_option="--runs",
        run=input_dir("config_json", quote=True),
        data=REG_DATA,
        draws=REG_DRAWS,
    shell:
        "{LOCUS} regenerate measure {params.run_option} {params.run} {params.data} {params.draws} "
        "--threads {threads} --out {output} > {log} 2>&1"


use rule regeneration_measure as regeneration_measure_locus with:
    input:
        **embedder_inputs(geometry_run_dir("locus")),  # the LOCUS geometry reference run, the same draws
    output:
        REG_LOCUS_MEASURES,
    log:
        "results/logs/regeneration/measures/locus.log",
    benchmark:
        "results/benchmarks/regeneration/measures/locus.tsv"
    params:
        run_option="--locus-run",


rule relearn_embedllm_heatmap_cosine_distance:
    input:
        regeneration_measures(),
    output:
        **figure("relearn_embedllm_heatmap_cosine_distance", "Regeneration"),
    log:
        "results/logs/regeneration/relearn_embedllm_heatmap_cosine_distance.log",
    benchmark:
        "results/benchmarks/regeneration/relearn_embedllm_heatmap_cosine_distance.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        metric="cosine_distance",
        measures=quoted(regeneration_measures()),
        label=shlex.quote(dataset_label(DATASET)),
    shell:
        "{LOCUS} regenerate heatmap --measures {params.measures} --metric {params.metric} "
        "--data-label {params.label} --out {output.pdf} > {log} 2>&1"


use rule relearn_embedllm_heatmap_cosine_distance as relearn_embedllm_heatmap_test_disagreement with:
    output:
        **figure("relearn_embedllm_heatmap_test_disagreement", "Regeneration"),
    log:
        "results/logs/regeneration/relearn_embedllm_heatmap_test_disagreement.log",
    benchmark:
        "results/benchmarks/regeneration/relearn_embedllm_heatmap_test_disagreement.tsv"
    params:
        metric="test_disagreement",


# regeneration.extra_seeds: the claims ledger's heat map again at each further seed (the runs retrained, LOCUS's
# measures on that seed's geometry reference run)
use rule regeneration_measure_locus as regeneration_measure_locus_seed with:
    input:
        unpack(seed_run_inputs),
    output:
        seeded(REG_LOCUS_MEASURES),
    log:
        seed_log("logs", "measures_locus", "regeneration"),
    benchmark:
        seed_log("benchmarks", "measures_locus", "regeneration")
    wildcard_constraints:
        seed=r"\d+",


use rule relearn_embedllm_heatmap_test_disagreement as relearn_embedllm_heatmap_test_disagreement_seed with:
    input:
        lambda w: regeneration_measures(int(w.seed)),
    output:
        **seed_figure("relearn_embedllm_heatmap_test_disagreement"),
    log:
        seed_log("logs", "relearn_embedllm_heatmap_test_disagreement", "regeneration"),
    benchmark:
        seed_log("benchmarks", "relearn_embedllm_heatmap_test_disagreement", "regeneration")
    wildcard_constraints:
        seed=r"\d+",
    params:
        measures=lambda w: quoted(regeneration_measures(int(w.seed))),


rule relearning_embedllm_embeddings:
    input:
        **embedder_inputs(regeneration_run_dir(REG_TSNE["hidden_layers"], REG_TSNE["dim"])),
    output:
        **figure("relearning_embedllm_embeddings", "Regeneration"),
    log:
        "results/logs/regeneration/relearning_embedllm_embeddings.log",
    benchmark:
        "results/benchmarks/regeneration/relearning_embedllm_embeddings.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        run=input_dir("config_json", quote=True),
        data=REG_DATA,
        draws=REG_DRAWS,
        options=f"--perplexity {float(REG_TSNE['perplexity']):g} --data-label {shlex.quote(dataset_label(DATASET))}",
    shell:
        "{LOCUS} regenerate tsne --runs {params.run} {params.data} {params.draws} {params.options} --threads {threads} "
        "--out {output.pdf} > {log} 2>&1"
