# Embedding geometry (paper §4.3-4.4, appendix E.2): distance vs test disagreement, model families,
# nearest-neighbour proxies and fallback routing, from the reference runs of geometry.methods (GEO_N evaluations
# per model, seed GEO_SEED). Seconds: the submit host. `rule geometry` also builds portfolio and views.

# Every geometry analysis (here, portfolio.smk, views.smk, also regeneration.smk and timing.smk) reads
# the runs at the reference training size through these two helpers.
from locus.experiments import claims as _claims

GEO = config["geometry"]
GEO_N = int(GEO["reference_train_size"])
GEO_SEED = int(GEO["seed"])
# `geometry.extra_seeds` repeats the reference runs and the outputs the claims ledger reads (claims.SEEDED_FILES)
# at further seeds, each written to seed_path(...) (results/figures/seeds/s{seed}/..., the `*_seed` rules);
# geometry.seed keeps the usual paths
GEO_EXTRA_SEEDS = [int(s) for s in GEO["extra_seeds"]]


def geometry_run_file(method, name, seed=GEO_SEED):
    """File `name` of `method`'s run at the geometry reference size and seed."""
    return run_file(DATASET, ENCODER, method, GEO_N, seed, name)


def geometry_run_dir(method, seed=GEO_SEED):
    return run_dir(DATASET, ENCODER, method, GEO_N, seed)


def seeded(path):
    """`path` (results/figures/x.pdf, results/logs/geometry/x.log) of the reference run at seed {seed}."""
    return f"results/{_claims.seed_path(path.removeprefix('results/'), '{seed}')}"


def seed_figure(name, *extra):
    """A figure's outputs (:func:`figure`) from the reference run at seed {seed}, outside the report."""
    return {key: seeded(str(path)) for key, path in figure(name, None, *extra).items()}


def seed_log(kind, name):
    return seeded(f"results/{kind}/geometry/{name}.{'log' if kind == 'logs' else 'tsv'}")


NB = GEO["neighbours"]
GEO_METHODS = list(GEO["methods"])
GEO_RUN_FILES = ("embeddings.parquet", "train_pairs.parquet", "metrics.json")
GEO_COMMON = f"--data {shlex.quote(f'results/data/{DATASET}')} --data-label {shlex.quote(dataset_label(DATASET))}"
GEOMETRY_TARGETS = [
    "results/tables/distance_correlation.tex",
    "results/figures/performance_distance_correlation.pdf",
    "results/figures/models_family_clustering.pdf",
    "results/figures/nearest_neighbor_proxies.pdf",
    "results/figures/fallback_routing.pdf",
]


def geometry_inputs(methods, *extra, seed=GEO_SEED):
    """The reference runs' files a geometry analysis reads (+ `extra`) and the data set."""
    return {
        "runs": [geometry_run_file(m, f, seed) for m in methods for f in GEO_RUN_FILES + extra],
        "data": data_files(DATASET),
    }


def geometry_runs(methods, seed=GEO_SEED):
    return " ".join(shlex.quote(geometry_run_dir(m, seed)) for m in methods)


def seed_geometry_inputs(methods, *extra):
    """An input function: :func:`geometry_inputs` at the job's {seed}."""
    return lambda w: geometry_inputs(methods, *extra, seed=int(w.seed))


def seed_geometry_runs(methods):
    """A params function: :func:`geometry_runs` at the job's {seed}."""
    return lambda w: geometry_runs(methods, int(w.seed))


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
        options=(
            f"--metric {NB['cluster_metric']} --linkage {NB['linkage']} --n-perm {int(NB['permutations'])} "
            f"--boot-seed {int(NB['bootstrap_seed'])} --highlight {shlex.quote(','.join(NB['highlight_tags']))}"
        ),


# --- the same at each seed of geometry.extra_seeds (outputs under results/{figures,tables}/seeds/s{seed}/) ---
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
