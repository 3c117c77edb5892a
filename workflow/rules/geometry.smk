# Embedding geometry (paper §4.3-4.4, appendix E.2) from the reference runs of geometry.methods; `*_seed` rules:
# the same at each seed of geometry.extra_seeds. `rule geometry` also builds portfolio and views.


rule distance_correlation_table:
    input:
        **geometry_inputs(GEO_METHODS),
    output:
        **table("distance_correlation", "Geometry"),
    log:
        "results/logs/geometry/distance_correlation.log",
    benchmark:
        "results/benchmarks/geometry/distance_correlation.tsv"
    localrule: True
    params:
        runs=geometry_runs(GEO_METHODS),
        common=GEO_COMMON,
        boot=distance_boot_options(),
    shell:
        "{LOCUS} geometry distance-correlation --runs {params.runs} {params.common} {params.boot} "
        "--out {output.tex} > {log} 2>&1"


rule performance_distance_correlation_figure:
    input:
        **geometry_inputs(GEO_METHODS),
    output:
        **figure("performance_distance_correlation", "Geometry"),
    log:
        "results/logs/geometry/performance_distance_correlation.log",
    benchmark:
        "results/benchmarks/geometry/performance_distance_correlation.tsv"
    localrule: True
    params:
        runs=geometry_runs(GEO_METHODS),
        common=GEO_COMMON,
    shell:
        "{LOCUS} geometry distance-correlation --runs {params.runs} {params.common} --out {output.pdf} > {log} 2>&1"


rule nearest_neighbor_proxies_figure:
    input:
        **geometry_inputs(GEO_METHODS),
    output:
        **figure("nearest_neighbor_proxies", "Geometry"),
    log:
        "results/logs/geometry/nearest_neighbor_proxies.log",
    benchmark:
        "results/benchmarks/geometry/nearest_neighbor_proxies.tsv"
    localrule: True
    params:
        kind="neighbours",
        runs=geometry_runs(GEO_METHODS),
        common=GEO_COMMON,
        options=f"--max-k {int(NB['max_k'])} --metric {NB['metric']}",
    shell:
        "{LOCUS} geometry {params.kind} --runs {params.runs} {params.common} {params.options} --out {output.pdf} "
        "> {log} 2>&1"


use rule nearest_neighbor_proxies_figure as fallback_routing_figure with:
    input:
        **geometry_inputs(GEO_METHODS, "scores_test.parquet"),
    output:
        **figure("fallback_routing", "Geometry"),
    log:
        "results/logs/geometry/fallback_routing.log",
    benchmark:
        "results/benchmarks/geometry/fallback_routing.tsv"
    localrule: True
    params:
        kind="fallback",


use rule nearest_neighbor_proxies_figure as models_family_clustering_figure with:
    input:
        **geometry_inputs([NB["reference_method"]]),
    output:
        **figure("models_family_clustering", "Geometry", "json"),
    log:
        "results/logs/geometry/models_family_clustering.log",
    benchmark:
        "results/benchmarks/geometry/models_family_clustering.tsv"
    localrule: True
    params:
        kind="families",
        runs=input_dir("runs", quote=True),  # the one run of the reference method
        options=families_options(),


use rule distance_correlation_table as distance_correlation_table_seed with:
    input:
        unpack(seed_geometry_inputs(GEO_METHODS)),
    output:
        tex=seeded("results/tables/distance_correlation.tex"),
        csv=seeded("results/tables/distance_correlation.csv"),
    log:
        seed_log("logs", "distance_correlation"),
    benchmark:
        seed_log("benchmarks", "distance_correlation")
    params:
        runs=seed_geometry_runs(GEO_METHODS),


use rule nearest_neighbor_proxies_figure as nearest_neighbor_proxies_figure_seed with:
    input:
        unpack(seed_geometry_inputs(GEO_METHODS)),
    output:
        **seed_figure("nearest_neighbor_proxies"),
    log:
        seed_log("logs", "nearest_neighbor_proxies"),
    benchmark:
        seed_log("benchmarks", "nearest_neighbor_proxies")
    params:
        runs=seed_geometry_runs(GEO_METHODS),


use rule fallback_routing_figure as fallback_routing_figure_seed with:
    input:
        unpack(seed_geometry_inputs(GEO_METHODS, "scores_test.parquet")),
    output:
        **seed_figure("fallback_routing"),
    log:
        seed_log("logs", "fallback_routing"),
    benchmark:
        seed_log("benchmarks", "fallback_routing")
    params:
        runs=seed_geometry_runs(GEO_METHODS),


use rule models_family_clustering_figure as models_family_clustering_figure_seed with:
    input:
        unpack(seed_geometry_inputs([NB["reference_method"]])),
    output:
        **seed_figure("models_family_clustering", "json"),
    log:
        seed_log("logs", "models_family_clustering"),
    benchmark:
        seed_log("benchmarks", "models_family_clustering")


rule geometry:
    input:
        # included after this file, portfolio.smk and views.smk have set their targets when the DAG is built
        lambda w: GEOMETRY_TARGETS + PORTFOLIO_TARGETS + VIEWS_TARGETS,
    localrule: True
