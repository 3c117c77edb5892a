# Ablation tables of LOCUS: rows = d of `ablation.dims` or encoder of `ablation.encoders` x training size, from
# ordinary run directories (train_run); the encoder tables need every encoder installed.


rule dim_ablation_routing_table:
    input:
        **ablation_inputs("dim"),
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
        **ablation_inputs("encoder"),
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
