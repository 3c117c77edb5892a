"""The rule files' plain-Python helpers: data, encoding, run and output paths, option strings, params and input
functions. workflow/rules/common.smk validates the config, calls :func:`configure` and star-imports this module,
so every rule file sees these names (docs/architecture.md, "Rules")."""

import json
import os
import re
import shlex
from pathlib import Path

from snakemake.io import multiext, report

from locus import run_artifacts as _artifacts
from locus import workflow_config as _wc
from locus.data.truth import SOURCES_WITH_TRUTH as _TRUTH_SOURCES
from locus.data.truth import TRUTH_FILE
from locus.experiments import claims as _claims

RUN_DIR = "results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}"
# what re-embedding models with a run's encoder reads: its checkpoint, model embeddings and training pairs
EMBEDDER_FILES = ("model.safetensors", "config.json", "embeddings.parquet", "train_pairs.parquet")
GEO_RUN_FILES = ("embeddings.parquet", "train_pairs.parquet", "metrics.json")
GEOMETRY_TARGETS = [
    "results/tables/distance_correlation.tex",
    "results/figures/performance_distance_correlation.pdf",
    "results/figures/models_family_clustering.pdf",
    "results/figures/nearest_neighbor_proxies.pdf",
    "results/figures/fallback_routing.pdf",
]
PORTFOLIO_TARGETS = ["results/figures/model_portfolio.pdf"]
PORTFOLIO_FILES = ("embeddings.parquet", "scores_test.parquet", "config.json", "metrics.json")
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
# the encoder tables need every encoder of ablation.encoders installed (mpnet: `bash install.sh --mpnet`)
ABLATION_TARGETS = [
    f"results/tables/{b}_ablation_{m}.tex" for b in ("dim", "encoder") for m in ("routing", "correctness")
]
DECISIONS_TARGETS = ["results/tables/selective_routing.tex", "results/tables/aiq.tex"]
REG_DIR = "results/regeneration/{dataset}/{encoder}/h{layers}/d{dim}/n{n}/s{seed}"
REG_CELL = "h{layers}_d{dim}_n{n}_s{seed}"
REG_MEASURES = f"results/regeneration/{{dataset}}/{{encoder}}/measures/{REG_CELL}.csv"
REG_TARGETS = [
    f"results/figures/{name}.pdf"
    for name in (
        "relearn_embedllm_heatmap_cosine_distance",
        "relearn_embedllm_heatmap_test_disagreement",
        "relearning_embedllm_embeddings",
    )
]
ONB_DIR = "results/onboarding/{dataset}/{encoder}/m{models}/n{n}/s{seed}"
RIV_DIR = "results/onboarding_rivals/{dataset}/{encoder}/{method}/h{held}/n{n}/s{seed}"
TTA_DIR = "results/time_to_accuracy/{dataset}/{encoder}/n{n}/s{seed}/{recipe}"


def configure(cfg, schema, plan, pool):
    """Bind the validated config, its schema, the pool's plan and facts, and the settings read from them."""
    global config, SCHEMA, PLAN, POOL, DATASET, ENCODER, SE, TABLE_METHODS, BY_DATASET_METHODS, TRAIN_RULES
    global BOOTSTRAP, BOOTSTRAP_RESAMPLING, BOOTSTRAP_OPTIONS, ABL, GEO, GEO_N, GEO_SEED, NB
    global GEO_METHODS, GEO_COMMON, PF, VIEWS, TSNE_ENCODERS, VIEWS_CONVERGENCE_DRAWS, VIEWS_RUN, ONB, ONB_HOLD_OUT
    global AON, AON_RUN, RIV, REG, REG_TSNE, REG_LOCUS_MEASURES, REG_DRAWS, REG_DATA, TC, PE, CAL, CAL_N, DEC, DEC_N
    global DEC_COMMON, TTA, EXTRA_SEEDS, CLAIM_SEED_INPUTS
    config, SCHEMA, PLAN, POOL = cfg, schema, plan, pool
    DATASET = config["dataset"]
    ENCODER = config["encoder"]
    SE = config["sample_efficiency"]
    TABLE_METHODS = config["table_methods"]
    BY_DATASET_METHODS = config.get("by_dataset_methods", TABLE_METHODS)
    TRAIN_RULES = _wc.train_rules(config)  # {rule name: the methods it trains}
    # tables.smk: the bootstrap's options (also of the ablation tables and the calibration report), and with
    # the reference method every approach is compared to those of `locus table` (quoted for the shell)
    BOOTSTRAP = config["bootstrap"]
    BOOTSTRAP_RESAMPLING = (
        f"--bootstrap-resamples {int(BOOTSTRAP['n_resamples'])} --bootstrap-seed {int(BOOTSTRAP['seed'])} "
        f"--confidence {float(BOOTSTRAP['confidence'])}"
    )
    BOOTSTRAP_OPTIONS = f"--reference-method {shlex.quote(BOOTSTRAP['reference_method'])} {BOOTSTRAP_RESAMPLING}"
    ABL = config["ablation"]
    # geometry.smk: the reference runs of geometry.methods (GEO_N evaluations per model, seed GEO_SEED);
    # `geometry.extra_seeds` repeats them and the outputs the claims ledger reads (claims.SEEDED_FILES) at
    # further seeds, each written to seeded(...) (the `*_seed` rules); geometry.seed keeps the usual paths
    GEO = config["geometry"]
    GEO_N = int(GEO["reference_train_size"])
    GEO_SEED = int(GEO["seed"])
    NB = GEO["neighbours"]
    GEO_METHODS = list(GEO["methods"])
    GEO_COMMON = f"--data {shlex.quote(f'results/data/{DATASET}')} --data-label {shlex.quote(dataset_label(DATASET))}"
    PF = GEO["portfolio"]
    # views.smk: one t-SNE panel per encoder the run builds encodings for anyway: the configured one, the ablation's
    VIEWS = GEO["views"]
    TSNE_ENCODERS = list(dict.fromkeys([ENCODER, *ABL["encoders"]]))
    VIEWS_CONVERGENCE_DRAWS = f"--repeats {int(VIEWS['repeats'])} --neighbours {int(VIEWS['neighbours'])}"
    VIEWS_RUN = views_run()
    ONB = config["onboarding"]
    ONB_HOLD_OUT = "column" if ONB["held_out"] is None else ",".join(ONB["held_out"])
    AON = config["active_onboarding"]
    AON_RUN = onboarding_run_dir(0 if 0 in ONB["model_counts"] else max(ONB["model_counts"]))
    RIV = config["onboarding_rivals"]
    # regeneration.smk: the t-SNE cell defaults to the grid's first layer count and largest dimension
    REG = config["regeneration"]
    REG_TSNE = {"hidden_layers": REG["hidden_layers"][0], "dim": REG["dims"][-1], **REG["tsne"]}
    REG_LOCUS_MEASURES = f"results/regeneration/{DATASET}/{ENCODER}/measures/locus.csv"
    REG_DRAWS = (
        f"--overlaps {_reg_numbers(REG['overlaps'])} --sizes {_reg_numbers(REG['sizes'])} "
        f"--repeats {int(REG['repeats'])} --seed {int(REG['draw_seed'])}"
    )
    REG_DATA = f"--data results/data/{DATASET} --encodings {shlex.quote(encodings(DATASET, ENCODER))}"
    TC = config["time_complexity"]
    PE = config["precision_effect"]
    CAL = config["calibration"]
    CAL_N = _wc.train_size(config, "calibration")  # null: the tables' smallest
    DEC = config["decisions"]
    DEC_N = _wc.train_size(config, "decisions")
    DEC_COMMON = (
        f"--bootstrap-resamples {int(DEC['bootstrap_resamples'])} --bootstrap-seed {int(DEC['bootstrap_seed'])} "
        f"--confidence {float(DEC['confidence'])} --data-label {shlex.quote(dataset_label(DATASET))}"
    )
    TTA = config["time_to_accuracy"]
    # claims.smk: per section of claims.SEED_SECTIONS, its further seeds; the files of the claims judged on that
    # section's runs at each of them, where the plan keeps those files at the section's own seed
    EXTRA_SEEDS = {section: [int(s) for s in config[section]["extra_seeds"]] for section in _claims.SEED_SECTIONS}
    CLAIM_SEED_INPUTS = [
        f"results/{_claims.seed_path(f, s)}"
        for section, seeds in EXTRA_SEEDS.items()
        for s in seeds
        for f in _claims.SEEDED_FILES[section]
        if planned([f"results/{f}"])
    ]


def claim_seed_options():
    """The claims command's seeds of every section with further seeds (the section's seed first); '' if none."""
    return "".join(
        f" --{section}-seeds {joined([int(config[section]['seed']), *seeds])}"
        for section, seeds in EXTRA_SEEDS.items()
        if seeds
    )


# --- common.smk: the config, data and encoding paths, outputs and params shared by the rules ------------------
def check_data(wildcards, input):
    """A params function of the first rules that read the data set (evaluated when the job starts): the
    checks that need it, if it could not be read when the DAG was built. Adds nothing to the command."""
    checked = POOL is not None or wildcards.dataset != DATASET
    return _wc.check_data(config, DATASET, os.path.dirname(input[0]), SCHEMA, checked=checked)


def dataset_label(dataset):
    return _wc.dataset_label(config, dataset, PLAN)


def planned(targets):
    """`targets` (results/... paths) without the outputs the pool's plan skips."""
    flat = [t for group in targets for t in ([group] if isinstance(group, str) else group)]
    return [t for t in flat if PLAN is None or not PLAN.is_skipped(t.removeprefix("results/"))]


def one_of(names):
    """A wildcard constraint matching exactly these names (none: matches nothing)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def data_files(dataset):
    """The canonical data set: three Parquet files and the manifest that ties them together."""
    return multiext(f"results/data/{dataset}/", "queries.parquet", "models.parquet", "scores.parquet", "dataset.json")


def has_truth(dataset):
    """Whether the data set's source also writes the generator's truth (synthetic; locus.data.truth)."""
    return config["datasets"][dataset]["source"] in _TRUTH_SOURCES


def truth_file(dataset):
    """The generator's truth beside a data set whose source writes one (see has_truth), else None."""
    return f"results/data/{dataset}/{TRUTH_FILE}" if has_truth(dataset) else None


def data_summary(dataset):
    return f"results/data/{dataset}/summary.md"


def encodings(dataset, encoder):
    return f"results/encodings/{dataset}/{encoder}.parquet"


def figure(name, category=None, *extra):
    """A figure's outputs: PDF, PNG (in the report under `category`, with its caption), the plotted points
    (CSV) and files of the `extra` suffixes."""
    png = f"results/figures/{name}.png"
    return {
        "pdf": f"results/figures/{name}.pdf",
        "png": report(png, caption=f"../report/{name}.rst", category=category) if category else png,
        "points": f"results/figures/{name}.csv",
        **{e: f"results/figures/{name}.{e}" for e in extra},
    }


def table(name, category=None):
    """A table's outputs: LaTeX (in the report under `category`, with its caption) and CSV."""
    tex = f"results/tables/{name}.tex"
    tex = report(tex, caption=f"../report/{name}.rst", category=category) if category else tex
    return {"tex": tex, "csv": f"results/tables/{name}.csv"}


def input_dir(key, quote=False):
    """A params function: the directory of the rule's input `key` (of its first file), derived from the
    inputs rather than retyped; shell-quoted with `quote`."""

    def get(wildcards, input):
        files = getattr(input, key)
        path = os.path.dirname(files if isinstance(files, str) else files[0])
        return shlex.quote(path) if quote else path

    return get


def input_dirs(key):
    """A params function: the directories of the rule's input files `key` (one per file), shell-quoted."""
    return lambda wildcards, input: " ".join(shlex.quote(os.path.dirname(f)) for f in getattr(input, key))


def joined(values):
    """`values` as one command-line list: 16,32,64."""
    return ",".join(str(v) for v in values)


def quoted(paths):
    """`paths` as shell words."""
    return " ".join(shlex.quote(p) for p in paths)


def as_json(value):
    return json.dumps(value, sort_keys=True)


# --- data.smk, encode.smk -------------------------------------------------------------------------------------
def data_inputs(wildcards):
    """The csv source's input file is tracked by Snakemake (edits trigger a rebuild)."""
    entry = config["datasets"][wildcards.dataset]
    return [entry["params"]["path"]] if entry["source"] == "csv" and "path" in entry["params"] else []


def encode_scope(wildcards):
    """The `locus encode` options that restrict an ablation-only encoder to the queries its readers use."""
    if not config["encode_only_needed_queries"] or wildcards.encoder == ENCODER or wildcards.dataset != DATASET:
        return ""
    return (
        f"--for-train-sizes {','.join(map(str, ABL['encoder_train_sizes']))} "
        f"--for-seeds {','.join(map(str, config['seeds']))} --sampling {config['sampling']} "
        f"--duplicates {config['duplicates']} --for-query-sample {int(VIEWS['tsne_queries'])} "
        f"--sample-seed {int(VIEWS['seed'])}"
    )


# --- train.smk: run paths; a run directory holds one method x encoder x training size x embedding dimension x
# seed, and every file of it is a declared output (locus.run_artifacts) --------------------------------------
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


def embedder_inputs(directory):
    """What re-embedding models with a run's encoder reads (EMBEDDER_FILES), the data set and its encodings."""
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


# --- tables.smk, ablation.smk ---------------------------------------------------------------------------------
def table_inputs(methods, truth=False):
    """What a table reads: the runs' metrics and test scores, the data set, and with `truth` its truth.parquet
    where it has one."""
    inputs = {
        "metrics": run_metrics(methods, config["train_sizes"]),
        "scores": run_files_named(methods, config["train_sizes"], _artifacts.scores_file("test")),
        "data": data_files(DATASET),
    }
    return {**inputs, "truth": truth_file(DATASET)} if truth and truth_file(DATASET) else inputs


def truth_option(wildcards, input):
    """`--truth PATH` when the table rule's inputs hold the data set's truth, else nothing."""
    return f"--truth {shlex.quote(input.truth)}" if "truth" in input.keys() else ""


def ablation_runs(by, name):
    """File `name` of every LOCUS run of an ablation: each d of ablation.dims at the configured encoder (a
    RUN_DIR with an explicit d), or each encoder of ablation.encoders at the configured d."""
    if by == "encoder":
        return [
            f for e in ABL["encoders"] for f in run_files_named(["locus"], ABL["encoder_train_sizes"], name, encoder=e)
        ]
    return [
        f"{RUN_DIR.format(dataset=DATASET, encoder=ENCODER, method='locus', n=n, dim=d, seed=s)}/{name}"
        for d in ABL["dims"]
        for n in ABL["dim_train_sizes"]
        for s in config["seeds"]
    ]


def ablation_inputs(by):
    return {
        "metrics": ablation_runs(by, "metrics.json"),
        "scores": ablation_runs(by, _artifacts.scores_file("test")),
        "data": data_files(DATASET),
    }


# --- geometry.smk, portfolio.smk: every geometry analysis (also views, regeneration, timing) reads the runs at
# the reference training size through geometry_run_file / geometry_run_dir ------------------------------------
def geometry_run_file(method, name, seed=None):
    """File `name` of `method`'s run at the geometry reference size and seed."""
    return run_file(DATASET, ENCODER, method, GEO_N, GEO_SEED if seed is None else seed, name)


def geometry_run_dir(method, seed=None):
    return run_dir(DATASET, ENCODER, method, GEO_N, GEO_SEED if seed is None else seed)


def seeded(path):
    """`path` (results/figures/x.pdf, results/logs/geometry/x.log) of the reference run at seed {seed}."""
    return f"results/{_claims.seed_path(path.removeprefix('results/'), '{seed}')}"


def seed_figure(name, *extra):
    """A figure's outputs (:func:`figure`) from the reference run at seed {seed}, outside the report."""
    return {key: seeded(str(path)) for key, path in figure(name, None, *extra).items()}


def seed_log(kind, name, topic="geometry"):
    return seeded(f"results/{kind}/{topic}/{name}.{'log' if kind == 'logs' else 'tsv'}")


def geometry_inputs(methods, *extra, seed=None):
    """The reference runs' files a geometry analysis reads (+ `extra`) and the data set."""
    return {
        "runs": [geometry_run_file(m, f, seed) for m in methods for f in GEO_RUN_FILES + extra],
        "data": data_files(DATASET),
    }


def geometry_runs(methods, seed=None):
    return " ".join(shlex.quote(geometry_run_dir(m, seed)) for m in methods)


def seed_geometry_inputs(methods, *extra):
    """An input function: :func:`geometry_inputs` at the job's {seed}."""
    return lambda w: geometry_inputs(methods, *extra, seed=int(w.seed))


def seed_geometry_runs(methods):
    """A params function: :func:`geometry_runs` at the job's {seed}."""
    return lambda w: geometry_runs(methods, int(w.seed))


def distance_boot_options():
    return (
        f"--n-boot {int(NB['bootstrap_resamples'])} --boot-seed {int(NB['bootstrap_seed'])} "
        f"--confidence {float(NB['confidence'])} --reference-method {NB['reference_method']}"
    )


def families_options():
    return (
        f"--metric {NB['cluster_metric']} --linkage {NB['linkage']} --n-perm {int(NB['permutations'])} "
        f"--boot-seed {int(NB['bootstrap_seed'])} --highlight {shlex.quote(','.join(NB['highlight_tags']))}"
    )


def portfolio_options():
    return ("" if PF["max_k"] is None else f"--max-k {int(PF['max_k'])} ") + (
        f"--budget-points {int(PF['budget_points'])} --trials {int(PF['trials'])} "
        f"--seed {int(PF['seed'])} --distance {PF['distance']} --max-iter {int(PF['max_iter'])}"
    )


# --- views.smk: every draw and t-SNE is seeded by `geometry.views.seed` ---------------------------------------
def views_data(encoders=None):
    """The options every view passes: where the data and encodings are, the seed and the data set's label."""
    encoders = (ENCODER,) if encoders is None else encoders
    return (
        f"--data results/data/{DATASET} --encodings {' '.join(shlex.quote(encodings(DATASET, e)) for e in encoders)} "
        f"--seed {int(VIEWS['seed'])} --data-label {shlex.quote(dataset_label(DATASET))}"
    )


def views_run(seed=None):
    return f"--run {shlex.quote(geometry_run_dir('locus', seed))} {views_data()}"


# the options of the views that the claims ledger reads, given the reference run's seed
def hypothetical_options(seed=None):
    return (
        f"{views_run(seed)} --sizes {joined(VIEWS['hypothetical_sizes'])} --ks {joined(VIEWS['recall_at'])} "
        f"--repeats {int(VIEWS['hypothetical_repeats'])}"
    )


def evalset_options(seed=None):
    return (
        f"{views_run(seed)} --sizes {joined(VIEWS['evalset_sizes'])} "
        f"--overlaps {joined(VIEWS['evalset_overlaps'])} --repeats {int(VIEWS['evalset_repeats'])}"
    )


def convergence_options(setting, seed=None):
    """`setting`: overlaps or sizes."""
    return (
        f"{views_run(seed)} --model {shlex.quote(VIEWS['convergence_model'])} --{setting} "
        f"{joined(VIEWS[setting])} {VIEWS_CONVERGENCE_DRAWS}"
    )


def tsne_options():
    return (
        f"{views_data(TSNE_ENCODERS)} --max-queries {int(VIEWS['tsne_queries'])} "
        f"--perplexity {float(VIEWS['tsne_perplexity'])}"
    )


def robustness_options():
    return (
        f"{VIEWS_RUN} --models {shlex.quote(','.join(VIEWS['robustness_models']))} "
        f"--overlaps {joined(VIEWS['overlaps'])} --sizes {joined(VIEWS['sizes'])} "
        f"--repeats {int(VIEWS['robustness_repeats'])} --perplexity {float(VIEWS['tsne_perplexity'])}"
    )


def seed_run_inputs(w):
    return embedder_inputs(geometry_run_dir("locus", int(w.seed)))


# --- onboarding.smk, active_onboarding.smk --------------------------------------------------------------------
def onboarding_run_dir(count, seed=None):
    seed = ONB["seed"] if seed is None else seed
    return ONB_DIR.format(dataset=DATASET, encoder=ENCODER, models=count, n=ONB["train_size"], seed=seed)


def onboarding_runs(seed=None):
    """The run directories of the figure's rows at `seed` (onboarding.seed by default): one per model count, and
    the whole pool's run."""
    seed = ONB["seed"] if seed is None else seed
    runs = [onboarding_run_dir(c, seed) for c in ONB["model_counts"]]
    if ONB["all_models_row"]:
        runs.append(run_dir(DATASET, ENCODER, "locus", ONB["train_size"], seed))
    return runs


def onboarding_figure_inputs(seed=None):
    return [f"{d}/{name}" for d in onboarding_runs(seed) for name in ("model.safetensors", "config.json")]


def onboarding_options(seed=None):
    return (
        f"--sizes {','.join(str(int(k)) for k in ONB['sizes'])} --repeats {int(ONB['repeats'])} "
        f"--seed {int(ONB['seed'] if seed is None else seed)} --hold-out {shlex.quote(ONB_HOLD_OUT)} "
        f"--data-label {shlex.quote(dataset_label(DATASET))}"
    )


def rivals_run_dirs(method="locus"):
    """One run directory per repeat: repeat r holds out draw:HELD:(100 * seed + r) (locus.runs.draw_held_out)."""
    return [
        RIV_DIR.format(
            dataset=DATASET,
            encoder=ENCODER,
            method=method,
            held=RIV["held_out"],
            n=RIV["train_size"],
            seed=100 * RIV["seed"] + r,
        )
        for r in range(RIV["repeats"])
    ]


def rivals_fit_dirs():
    """The embedding-fit methods' runs (EmbedLLM, IRT-Net), one per method and repeat."""
    return [d for method in RIV["fit_methods"] for d in rivals_run_dirs(method)]


def rivals_options():
    return (
        f"--k {','.join(str(int(k)) for k in RIV['sizes'])} --seed {int(RIV['seed'])} --held-out untrained "
        f"--pool {RIV['pool']} "
        + (f"--selector {RIV['selector']} " if RIV["selector"] else "")
        + f"--data-label {shlex.quote(dataset_label(DATASET))}"
    )


def active_onboarding_options():
    return (
        f"--sizes {','.join(str(int(k)) for k in AON['sizes'])} --selectors {','.join(AON['selectors'])} "
        f"--repeats {int(AON['repeats'])} --seed {int(AON['seed'])} --hold-out {shlex.quote(ONB_HOLD_OUT)} "
        f"--data-label {shlex.quote(dataset_label(DATASET))}"
    )


# --- regeneration.smk -----------------------------------------------------------------------------------------
def _reg_numbers(values):
    return ",".join(f"{v:g}" if isinstance(v, float) else str(int(v)) for v in values)


def regeneration_run_dir(layers, dim, pattern=REG_DIR, seed=None):
    seed = REG["seed"] if seed is None else seed
    return pattern.format(dataset=DATASET, encoder=ENCODER, layers=layers, dim=dim, n=REG["train_size"], seed=seed)


def regeneration_measures(seed=None):
    """The measure CSVs of every grid cell at `seed` (regeneration.seed by default), and LOCUS's (at a further
    seed: on the geometry reference run of that seed)."""
    cells = [regeneration_run_dir(h, d, REG_MEASURES, seed) for h in REG["hidden_layers"] for d in REG["dims"]]
    locus = REG_LOCUS_MEASURES if seed is None else seeded(REG_LOCUS_MEASURES).format(seed=seed)
    return cells + ([locus] if REG["locus"] else [])


def regeneration_json(w):
    """A params function: EmbedLLM's configured params, the grid's hidden size and the cell's layer count."""
    return as_json(
        {
            **((config["methods"].get("embedllm") or {}).get("params") or {}),
            "hidden_dim": int(REG["hidden_dim"]),
            **(REG["params"] or {}),
            "hidden_layers": int(w.layers),
        }
    )


# --- timing.smk, calibration.smk, decisions.smk, figures.smk --------------------------------------------------
def time_complexity_params():
    return {
        "pools": ",".join(str(int(v)) for v in TC["pool_sizes"]),
        "evals": ",".join(str(int(v)) for v in TC["eval_sizes"]),
        "queries": ",".join(str(int(v)) for v in TC["query_sizes"]),
        "repeat": int(TC["repeat"]),
        "device": "" if TC["device"] == "auto" else f"--device {TC['device']}",
        "precisions": ",".join(TC["precisions"]),
        "bf16": TC["bfloat16_on_cpu"],
        "json": as_json({**(config["methods"]["locus"]["params"] or {}), "dim": config["methods"]["locus"]["dim"]}),
    }


def precision_effect_runs(name):
    """File `name` of the LOCUS runs re-scored: the tables' runs at precision_effect.train_sizes (every seed)
    and the geometry reference run."""
    runs = run_files_named(["locus"], PE["train_sizes"], name)
    return runs + [f for f in [geometry_run_file("locus", name)] if f not in runs]


def calibration_inputs():
    return {
        "data": data_files(DATASET),
        "calibration": run_files_named(BY_DATASET_METHODS, [CAL_N], _artifacts.calibration_file),
        "scores": run_files_named(BY_DATASET_METHODS, [CAL_N], _artifacts.scores_file("test")),
        "metrics": run_metrics(BY_DATASET_METHODS, [CAL_N]),
    }


def decisions_inputs():
    """The runs' calibration, scores and metrics at decisions.train_size (every seed), and the data set."""
    runs = lambda name: run_files_named(BY_DATASET_METHODS, [DEC_N], name)  # noqa: E731
    return {
        "data": data_files(DATASET),
        **({"truth": truth_file(DATASET)} if truth_file(DATASET) else {}),
        "calibration": runs(_artifacts.calibration_file),
        "scores": runs(_artifacts.scores_file("val")) + runs(_artifacts.scores_file("test")),
        "metrics": runs("metrics.json"),
    }


def selective_options():
    return (
        f"--alphas {','.join(str(float(a)) for a in DEC['alphas'])} --delta {float(DEC['delta'])} "
        f"--fallbacks {shlex.quote(','.join(DEC['fallbacks']))} {DEC_COMMON}"
    )


def tta_runs(name="metrics.json"):
    """Every (seed, recipe) run of the time-to-accuracy figure, seeds outer (the benchmarks follow this order)."""
    return [
        f"{TTA_DIR.format(dataset=DATASET, encoder=ENCODER, n=TTA['train_size'], seed=seed, recipe=r)}/{name}"
        for seed in TTA["seeds"]
        for r in TTA["recipes"]
    ]


def tta_benchmarks():
    return [f"results/benchmarks/{Path(m).parent.relative_to('results')}.tsv" for m in tta_runs()]
