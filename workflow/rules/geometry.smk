# Embedding geometry (paper §4.3-4.4, appendix E.2): embedding distance vs test disagreement (table and
# figure), model families, nearest-neighbour proxies and fallback routing. Inputs: the reference runs of
# geometry.methods (GEO_N evaluations per model, seed GEO_SEED: geometry_run_file below; their
# training pairs too, which `locus geometry` checks hold no test query) and the data set's test labels.
# Cheap (seconds): run on the submit host. `rule geometry` builds these and the portfolio and views outputs.
import shlex

# Every geometry analysis (here, portfolio.smk, views.smk, also regeneration.smk and timing.smk) reads
# the runs at the reference training size through these two helpers.
GEO = config["geometry"]
GEO_N = int(GEO["reference_train_size"])
GEO_SEED = int(GEO["seed"])


def geometry_run_file(method, name):
    """File `name` of `method`'s run at the geometry reference size and seed."""
    return run_file(DATASET, ENCODER, method, GEO_N, GEO_SEED, name)


def geometry_run_dir(method):
    return run_dir(DATASET, ENCODER, method, GEO_N, GEO_SEED)


NB = GEO["neighbours"]
GEO_METHODS = list(GEO["methods"])
for _m in GEO_METHODS:
    if _m not in config["methods"]:
        _config_error(f"geometry.methods: method {_m!r} has no entry under `methods`")
    if not _methods.info(_m).has_embeddings:
        _config_error(f"geometry.methods: {_m!r} has no model embeddings; list embedding methods only")
if NB["reference_method"] not in GEO_METHODS:
    _config_error(
        f"geometry.neighbours.reference_method {NB['reference_method']!r} is not among geometry.methods "
        f"{GEO_METHODS}"
    )
if NB["linkage"] in ("ward", "centroid", "median") and NB["cluster_metric"] != "euclidean":
    _config_error(
        f"geometry.neighbours.linkage {NB['linkage']} assumes Euclidean distances; set cluster_metric: "
        "euclidean or choose another linkage"
    )

GEO_DATA = f"results/data/{DATASET}"
GEO_RUN_FILES = ("embeddings.parquet", "train_pairs.parquet", "metrics.json")


def geometry_inputs(methods, *extra):
    """The reference runs' files a geometry analysis reads (+ `extra`) and the data set."""
    return {
        "runs": [geometry_run_file(m, f) for m in methods for f in GEO_RUN_FILES + extra],
        "data": data_files(DATASET),
    }


def geometry_runs(methods):
    return " ".join(shlex.quote(geometry_run_dir(m)) for m in methods)


GEO_COMMON = f"--data {shlex.quote(GEO_DATA)} --data-label {shlex.quote(dataset_label(DATASET))}"

GEOMETRY_TARGETS = [
    "results/tables/distance_correlation.tex",
    "results/figures/performance_distance_correlation.pdf",
    "results/figures/models_family_clustering.pdf",
    "results/figures/nearest_neighbor_proxies.pdf",
    "results/figures/fallback_routing.pdf",
]


localrules:
    distance_correlation_table,
    performance_distance_correlation_figure,
    models_family_clustering_figure,
    nearest_neighbor_proxies_figure,
    fallback_routing_figure,
    geometry,


rule distance_correlation_table:
    input:
        **geometry_inputs(GEO_METHODS),
    output:
        tex=report(
            "results/tables/distance_correlation.tex",
            caption="../report/distance_correlation.rst",
            category="Geometry",
        ),
        csv="results/tables/distance_correlation.csv",
    log:
        "results/logs/geometry/distance_correlation.log",
    benchmark:
        "results/benchmarks/geometry/distance_correlation.tsv"
    params:
        runs=geometry_runs(GEO_METHODS),
        common=GEO_COMMON,
        boot=(
            f"--n-boot {int(NB['bootstrap_resamples'])} --boot-seed {int(NB['bootstrap_seed'])} "
            f"--confidence {float(NB['confidence'])} --reference-method {NB['reference_method']}"
        ),
    shell:
        "{LOCUS} geometry distance-correlation --runs {params.runs} {params.common} {params.boot} "
        "--out {output.tex} > {log} 2>&1"


rule performance_distance_correlation_figure:
    input:
        **geometry_inputs(GEO_METHODS),
    output:
        pdf="results/figures/performance_distance_correlation.pdf",
        png=report(
            "results/figures/performance_distance_correlation.png",
            caption="../report/performance_distance_correlation.rst",
            category="Geometry",
        ),
        csv="results/figures/performance_distance_correlation.csv",
    log:
        "results/logs/geometry/performance_distance_correlation.log",
    benchmark:
        "results/benchmarks/geometry/performance_distance_correlation.tsv"
    params:
        runs=geometry_runs(GEO_METHODS),
        common=GEO_COMMON,
    shell:
        "{LOCUS} geometry distance-correlation --runs {params.runs} {params.common} --out {output.pdf} > {log} 2>&1"


rule models_family_clustering_figure:
    input:
        **geometry_inputs([NB["reference_method"]]),
    output:
        pdf="results/figures/models_family_clustering.pdf",
        png=report(
            "results/figures/models_family_clustering.png",
            caption="../report/models_family_clustering.rst",
            category="Geometry",
        ),
        csv="results/figures/models_family_clustering.csv",
        json="results/figures/models_family_clustering.json",
    log:
        "results/logs/geometry/models_family_clustering.log",
    benchmark:
        "results/benchmarks/geometry/models_family_clustering.tsv"
    params:
        runs=input_dir("runs", quote=True),  # the one run of the reference method
        common=GEO_COMMON,
        options=(
            f"--metric {NB['cluster_metric']} --linkage {NB['linkage']} --n-perm {int(NB['permutations'])} "
            f"--boot-seed {int(NB['bootstrap_seed'])} --highlight {shlex.quote(','.join(NB['highlight_tags']))}"
        ),
    shell:
        "{LOCUS} geometry families --runs {params.runs} {params.common} {params.options} --out {output.pdf} "
        "> {log} 2>&1"


rule nearest_neighbor_proxies_figure:
    input:
        **geometry_inputs(GEO_METHODS),
    output:
        pdf="results/figures/nearest_neighbor_proxies.pdf",
        png=report(
            "results/figures/nearest_neighbor_proxies.png",
            caption="../report/nearest_neighbor_proxies.rst",
            category="Geometry",
        ),
        csv="results/figures/nearest_neighbor_proxies.csv",
    log:
        "results/logs/geometry/nearest_neighbor_proxies.log",
    benchmark:
        "results/benchmarks/geometry/nearest_neighbor_proxies.tsv"
    params:
        runs=geometry_runs(GEO_METHODS),
        common=GEO_COMMON,
        options=f"--max-k {int(NB['max_k'])} --metric {NB['metric']}",
    shell:
        "{LOCUS} geometry neighbours --runs {params.runs} {params.common} {params.options} --out {output.pdf} "
        "> {log} 2>&1"


rule fallback_routing_figure:
    input:
        **geometry_inputs(GEO_METHODS, "scores_test.parquet"),
    output:
        pdf="results/figures/fallback_routing.pdf",
        png=report(
            "results/figures/fallback_routing.png", caption="../report/fallback_routing.rst", category="Geometry"
        ),
        csv="results/figures/fallback_routing.csv",
    log:
        "results/logs/geometry/fallback_routing.log",
    benchmark:
        "results/benchmarks/geometry/fallback_routing.tsv"
    params:
        runs=geometry_runs(GEO_METHODS),
        common=GEO_COMMON,
        options=f"--max-k {int(NB['max_k'])} --metric {NB['metric']}",
    shell:
        "{LOCUS} geometry fallback --runs {params.runs} {params.common} {params.options} --out {output.pdf} "
        "> {log} 2>&1"


def geometry_all(wildcards):
    """Everything `rule geometry` builds: these outputs, and those of portfolio.smk and views.smk (included
    after this file, so their target lists are read when the DAG is built)."""
    return GEOMETRY_TARGETS + PORTFOLIO_TARGETS + VIEWS_TARGETS


rule geometry:
    input:
        geometry_all,
