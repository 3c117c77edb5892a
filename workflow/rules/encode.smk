# Query texts -> sentence encodings (Parquet: prompt_id + float32 vector). An encoder only the encoder ablation
# uses encodes only the queries its readers use (config `encode_only_needed_queries`).


rule encode:
    input:
        data_files("{dataset}"),
    output:
        "results/encodings/{dataset}/{encoder}.parquet",
    log:
        "results/logs/encode/{dataset}/{encoder}.log",
    benchmark:
        "results/benchmarks/encode/{dataset}/{encoder}.tsv"
    # an ablation-only encoder feeds one training run and two tables; started early, it is not left last
    priority: lambda w: 0 if w.encoder == ENCODER else 4
    threads: config["encode_threads"]
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        batch_size=config["encode_batch_size"],
        scope=encode_scope,
        checked=check_data,  # the config's checks that need the data set, if it was not there at DAG build
    shell:
        "{LOCUS} encode --data results/data/{wildcards.dataset} --encoder {wildcards.encoder} "
        "--out {output} --batch-size {params.batch_size} --threads {threads} {params.scope} > {log} 2>&1"
