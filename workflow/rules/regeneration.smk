# Regenerating EmbedLLM embeddings (paper App. H): EmbedLLM-style models G(e, x) = MLP_ψ(e ⊙ W x) trained over
# a grid of hidden-layer counts (width 64; 0 = the released EmbedLLM) x embedding dims, each into its own run
# directory under results/regeneration/ (`regeneration_run`, never shared with the tables' runs); then, per
# run, G_ψ frozen and every model's embedding re-learned from the same / overlap-α / subsampled training
# evaluations (`regeneration_measure`; the LOCUS geometry reference run measured beside them with the same
# draws), and the heat maps and t-SNE built from those. Settings: `regeneration` in the config.
import shlex

REG = config["regeneration"]
# the t-SNE cell defaults to the grid's first layer count and largest dimension
REG_TSNE = {"hidden_layers": REG["hidden_layers"][0], "dim": REG["dims"][-1], **REG["tsne"]}
REG_DIR = "results/regeneration/{dataset}/{encoder}/h{layers}/d{dim}/n{n}/s{seed}"
REG_MEASURES = "results/regeneration/{dataset}/{encoder}/measures/h{layers}_d{dim}_n{n}_s{seed}.csv"
REG_LOCUS_MEASURES = f"results/regeneration/{DATASET}/{ENCODER}/measures/locus.csv"
REG_TARGETS = [
    f"results/figures/{name}.pdf"
    for name in (
        "relearn_embedllm_heatmap_cosine_distance",
        "relearn_embedllm_heatmap_test_disagreement",
        "relearning_embedllm_embeddings",
    )
]

if "embedllm" not in _methods.names():
    _config_error("regeneration: method embedllm is not registered")
if REG["locus"] and "locus" not in config["methods"]:
    _config_error(
        "regeneration.locus: the LOCUS contrast needs locus under `methods` (or set regeneration.locus: false)"
    )
if int(REG_TSNE["hidden_layers"]) not in REG["hidden_layers"] or int(REG_TSNE["dim"]) not in REG["dims"]:
    _config_error(
        f"regeneration.tsne: the cell (hidden_layers {REG_TSNE['hidden_layers']}, dim {REG_TSNE['dim']}) "
        f"is not in the grid hidden_layers {REG['hidden_layers']} x dims {REG['dims']}"
    )
if [n for n in REG["sizes"] if n > int(REG["train_size"])] == list(REG["sizes"]) and REG["sizes"]:
    _config_error(f"regeneration.sizes {REG['sizes']}: all exceed regeneration.train_size {REG['train_size']}")


def _reg_numbers(values):
    return ",".join(f"{v:g}" if isinstance(v, float) else str(int(v)) for v in values)


def regeneration_run_dir(layers, dim):
    return REG_DIR.format(
        dataset=DATASET, encoder=ENCODER, layers=layers, dim=dim, n=REG["train_size"], seed=REG["seed"]
    )


def regeneration_measures():
    """The measure CSVs of every grid cell, and LOCUS's."""
    cells = [
        REG_MEASURES.format(dataset=DATASET, encoder=ENCODER, layers=h, dim=d, n=REG["train_size"], seed=REG["seed"])
        for h in REG["hidden_layers"]
        for d in REG["dims"]
    ]
    return cells + ([REG_LOCUS_MEASURES] if REG["locus"] else [])


REG_DRAWS = (
    f"--overlaps {_reg_numbers(REG['overlaps'])} --sizes {_reg_numbers(REG['sizes'])} "
    f"--repeats {int(REG['repeats'])} --seed {int(REG['draw_seed'])}"
)
REG_DATA = f"--data results/data/{DATASET} --encodings {shlex.quote(encodings(DATASET, ENCODER))}"


rule regeneration_run:
    input:
        data=data_files("{dataset}"),
        encodings=encodings("{dataset}", "{encoder}"),
    output:
        **{name.replace(".", "_"): f"{REG_DIR}/{name}" for name in _artifacts.run_files("embedllm")},
    log:
        f"results/logs/{REG_DIR.removeprefix('results/')}.log",
    benchmark:
        f"results/benchmarks/{REG_DIR.removeprefix('results/')}.tsv"
    wildcard_constraints:
        layers=r"\d+",
        n=r"\d+",
        seed=r"\d+",
    threads: config["threads"]
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        json=lambda w: as_json(
            {
                **((config["methods"].get("embedllm") or {}).get("params") or {}),
                "hidden_dim": int(REG["hidden_dim"]),
                **(REG["params"] or {}),
                "hidden_layers": int(w.layers),
            }
        ),
        sampling=config["sampling"],
        duplicates=config["duplicates"],
        out=lambda w: REG_DIR.format(**dict(w.items())),
    shell:
        "{LOCUS} train --method embedllm --data results/data/{wildcards.dataset} --encodings {input.encodings} "
        "--train-size {wildcards.n} --dim {wildcards.dim} --seed {wildcards.seed} --params {params.json:q} "
        "--sampling {params.sampling} --duplicates {params.duplicates} --threads {threads} --out {params.out} "
        "> {log} 2>&1"


def _reg_run_inputs(run):
    return {
        name.replace(".", "_"): f"{run}/{name}"
        for name in ("model.safetensors", "config.json", "embeddings.parquet", "train_pairs.parquet")
    }


rule regeneration_measure:
    input:
        unpack(lambda w: _reg_run_inputs(REG_DIR.format(**dict(w.items())))),
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        REG_MEASURES,
    log:
        "results/logs/regeneration/measures/{dataset}/{encoder}/h{layers}_d{dim}_n{n}_s{seed}.log",
    benchmark:
        "results/benchmarks/regeneration/measures/{dataset}/{encoder}/h{layers}_d{dim}_n{n}_s{seed}.tsv"
    wildcard_constraints:
        layers=r"\d+",
        n=r"\d+",
        seed=r"\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        run=lambda w: shlex.quote(REG_DIR.format(**dict(w.items()))),
        data=REG_DATA,
        draws=REG_DRAWS,
    shell:
        "{LOCUS} regenerate measure --runs {params.run} {params.data} {params.draws} --threads {threads} "
        "--out {output} > {log} 2>&1"


rule regeneration_measure_locus:
    input:
        **{
            name.replace(".", "_"): geometry_run_file("locus", name)
            for name in ("model.safetensors", "config.json", "embeddings.parquet", "train_pairs.parquet")
        },
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        REG_LOCUS_MEASURES,
    log:
        "results/logs/regeneration/measures/locus.log",
    benchmark:
        "results/benchmarks/regeneration/measures/locus.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        run=input_dir("config_json", quote=True),
        data=REG_DATA,
        draws=REG_DRAWS,
    shell:
        "{LOCUS} regenerate measure --locus-run {params.run} {params.data} {params.draws} --threads {threads} "
        "--out {output} > {log} 2>&1"


for _reg_metric in ("cosine_distance", "test_disagreement"):

    rule:
        name:
            f"relearn_embedllm_heatmap_{_reg_metric}"
        input:
            regeneration_measures(),
        output:
            pdf=f"results/figures/relearn_embedllm_heatmap_{_reg_metric}.pdf",
            png=report(
                f"results/figures/relearn_embedllm_heatmap_{_reg_metric}.png",
                caption=f"../report/relearn_embedllm_heatmap_{_reg_metric}.rst",
                category="Regeneration",
            ),
            csv=f"results/figures/relearn_embedllm_heatmap_{_reg_metric}.csv",
        log:
            f"results/logs/regeneration/relearn_embedllm_heatmap_{_reg_metric}.log",
        benchmark:
            f"results/benchmarks/regeneration/relearn_embedllm_heatmap_{_reg_metric}.tsv"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            metric=_reg_metric,
            measures=" ".join(shlex.quote(p) for p in regeneration_measures()),
            label=shlex.quote(dataset_label(DATASET)),
        shell:
            "{LOCUS} regenerate heatmap --measures {params.measures} --metric {params.metric} "
            "--data-label {params.label} --out {output.pdf} > {log} 2>&1"


rule relearning_embedllm_embeddings:
    input:
        **_reg_run_inputs(regeneration_run_dir(REG_TSNE["hidden_layers"], REG_TSNE["dim"])),
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        pdf="results/figures/relearning_embedllm_embeddings.pdf",
        png=report(
            "results/figures/relearning_embedllm_embeddings.png",
            caption="../report/relearning_embedllm_embeddings.rst",
            category="Regeneration",
        ),
        csv="results/figures/relearning_embedllm_embeddings.csv",
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
